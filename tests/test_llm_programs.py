"""The LLM writer works with programs too: candidates show their pins, a free-mode path is read back as a program with
the pins the model names, every program is executed, and a question must state its pins."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import re

from gateway.client import LLMGateway
from testing.fake import FakeOpenAI
from schemas.config import load_settings
from schemas.programs import QueryProgram
from schemas.qa import Seed
from tasks.graph.kg import KnowledgeGraph
from tasks.meaning.profiles import book_for_graph
from tasks.qa.checks import run_checks
from tasks.qa.generate import GenConfig, candidate_messages, run_job
from tasks.qa.llm_programs import Pin, program_for_path, render_program_candidates
from tasks.qa.programs import PinRefusal, relation_index
from tests.test_programs import EUROPE, TYPES, graph

# EUROPE, the program tests' graph: "capital" one per subject; "continent", "currency" one per subject and many per
# object in the world; "borders" symmetric, many.


# -- free mode: a path and the model's pins, read back as a program -------------------------------------------------


def test_a_hop_into_a_hub_without_a_pin_is_refused_with_the_fact_that_would_pin_it():
    kg = graph(EUROPE, TYPES)
    book = book_for_graph(kg)
    refused = program_for_path(kg, ["France", "Europe", "Germany"], [], book=book)
    assert isinstance(refused, PinRefusal) and refused.code == "no_pin"
    # Germany is one of three countries of Europe here; "borders Austria" leaves it alone (Italy borders Austria
    # too, but is not in Europe in this graph), "capital Berlin" is a lookup, "borders France" names the chain.
    assert "Germany -borders-> Austria" in refused.detail
    program = program_for_path(kg, ["France", "Europe", "Germany"], [Pin("Germany", "Austria")], book=book)
    assert isinstance(program, QueryProgram) and program.kind == "conjunction"
    assert [(c.node, c.label, c.value) for c in program.constraints] == [(2, "borders", "Austria")]
    assert [(s.label, s.forward) for s in program.steps] == [("continent", True), ("continent", False)]


def test_a_forward_one_to_one_path_needs_no_pin():
    kg = graph(EUROPE, TYPES)
    program = program_for_path(kg, ["Germany", "Berlin"], [], book=book_for_graph(kg))
    assert isinstance(program, QueryProgram) and program.kind == "chain" and program.answer == "Berlin"


def test_pins_that_are_no_fact_on_the_path_or_a_shortcut_are_refused_with_their_reason():
    kg = graph(EUROPE, TYPES)
    book = book_for_graph(kg)
    path = ["France", "Europe", "Germany"]
    on_path = program_for_path(kg, path, [Pin("Germany", "France")], book=book)
    assert isinstance(on_path, PinRefusal) and "is on the path" in on_path.detail
    no_fact = program_for_path(kg, path, [Pin("Germany", "Madrid")], book=book)
    assert isinstance(no_fact, PinRefusal) and "share no relation" in no_fact.detail
    at_start = program_for_path(kg, path, [Pin("France", "Spain")], book=book)
    assert isinstance(at_start, PinRefusal) and "no node after the start" in at_start.detail
    # Ava -> Bly -> Cobb -> Dax by "capital"; Bly also reaches Dax through Xan in two hops: a pin "Bly currency Xan"
    # would reach the answer more directly than the chain. (Names, not letters: a one-letter name is a code.)
    short = graph([("Ava", "capital", "Bly"), ("Bly", "capital", "Cobb"), ("Cobb", "capital", "Dax"),
                   ("Bly", "currency", "Xan"), ("Eve", "currency", "Xan"), ("Xan", "capital", "Dax")])
    refused = program_for_path(short, ["Ava", "Bly", "Cobb", "Dax"], [Pin("Bly", "Xan")], book=book_for_graph(short))
    assert isinstance(refused, PinRefusal) and "shortcut" in refused.detail


def _brute_force_unique(kg: KnowledgeGraph, program: QueryProgram) -> bool:
    """Every step's set is one node, found by testing every node of the graph against every fact the step and its
    pins name (no index, no reach): the reference for ``program_for_path``'s execution."""
    facts = {(r.source, r.relation, r.target) for r in kg.relations()}
    names = {e.name for e in kg.entities()}
    book = book_for_graph(kg)

    def holds(x: str, label: str, y: str, forward: bool, sym: bool) -> bool:
        """``x`` reaches ``y`` over ``label``: x is the subject when ``forward``; either way when symmetric."""
        return ((x, label, y) if forward else (y, label, x)) in facts or (sym and (
            (y, label, x) if forward else (x, label, y)) in facts)

    frontier = {program.start}
    for i, step in enumerate(program.steps, start=1):
        assert step.kind is None  # the random graphs have no types
        sym = book.profile(step.label).symmetric
        nxt = {n for n in names for u in frontier if holds(u, step.label, n, step.forward, sym)}
        for c in program.constraints_on(i):
            nxt = {n for n in nxt if holds(n, c.label, c.value, c.forward, book.profile(c.label).symmetric)}
        if nxt != {program.nodes[i]}:
            return False
        frontier = nxt
    return True


def test_free_programs_stand_exactly_when_a_brute_force_reference_finds_one_node_a_step():
    rng = random.Random(7)
    labels = ("capital", "currency", "continent", "borders")
    names = ("Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Ginkgo", "Hazel")
    checked = stood = 0
    for _ in range(40):
        triples = set()
        while len(triples) < 16:
            s, o = rng.sample(names, 2)
            triples.add((s, rng.choice(labels), o))
        kg = graph(sorted(triples))
        book = book_for_graph(kg)
        for start in names[:4]:
            if start not in kg:
                continue
            for a in kg.neighbor_names(start):
                for b in kg.neighbor_names(a):
                    if b in (start, a):
                        continue
                    offs = [v for v in kg.neighbor_names(b) if v not in (start, a)]
                    for pins in ([], *([Pin(b, v)] for v in offs[:2])):
                        built = program_for_path(kg, [start, a, b], pins, book=book)
                        checked += 1
                        if isinstance(built, QueryProgram):
                            stood += 1
                            assert _brute_force_unique(kg, built), built
    assert checked > 100 and stood > 5


# -- candidates mode: programs shown with their pins ----------------------------------------------------------------


def _seed(node: str) -> Seed:
    return Seed(domain="geo", node=node, ball_size=8, depth=3, sample_rank=0, sampling_seed=0)


def test_candidates_show_each_pin_as_a_fact_to_state():
    kg = graph(EUROPE, TYPES)
    book = book_for_graph(kg)
    program = program_for_path(kg, ["France", "Europe", "Germany"], [Pin("Germany", "Austria")], book=book)
    from schemas.qa import CandidatePath
    from tasks.qa.programs import program_edges

    cand = CandidatePath(id="P1", nodes=program.nodes, edges=program_edges(kg, program, book), program=program)
    text = render_program_candidates(kg, [cand], book=book)
    assert text.splitlines()[0] == "P1: France -> Europe -> Germany"
    assert "  pin (state it, naming Austria): Germany -borders-> Austria" in text.splitlines()
    prompt = candidate_messages([cand], "France", "1-2", 160, [], kg, book)[1]["content"]
    assert "The question must state every pin" in prompt and "Scope:" not in prompt
    # a domain with a scope: the writer is told what the graph covers and how to open a question that needs it
    scoped = candidate_messages([cand], "France", "1-2", 160, [], kg, book, "in the 1995 atlas")[1]["content"]
    assert "the graph covers only what is in the 1995 atlas" in scoped and "open it with 'In the 1995 atlas, '" in scoped


def _settings(fake, tmp_path):
    ep = {"base_url": fake.base_url, "model": "fake-model", "max_retries": 1, "timeout_s": 10}
    return load_settings(data_dir=tmp_path, roles={"generator": ep, "verifier": ep}, cache={"mode": "off"})


def _prompt(body) -> str:
    return "\n".join(str(m.get("content")) for m in body["messages"])


def _pinned_candidate(body) -> tuple[str, list[str], list[str]]:
    """The first candidate of the prompt that has a pin: its id, nodes and pin values."""
    blocks = re.split(r"\n(?=P\d+: )", _prompt(body).split("Candidate paths starting at", 1)[1])
    for block in blocks:
        head = re.search(r"^(P\d+): (.+)$", block, re.M)
        pins = re.findall(r"pin \(state it, naming (.+?)\):", block)
        if head and pins:
            return head.group(1), head.group(2).split(" -> "), pins
    raise AssertionError("no candidate with a pin was offered")


def test_a_candidates_job_takes_a_pinned_program_and_refuses_a_question_that_leaves_the_pin_out(tmp_path):
    kg = graph(EUROPE, TYPES)
    seen_judge: list[str] = []

    def pick(body):
        pid, nodes, pins = _pinned_candidate(body)
        if "earlier attempts were rejected" not in _prompt(body):
            return {"path_id": pid, "question": f"Which country on the continent of {nodes[0]} is meant here?"}
        return {"path_id": pid, "question": f"Which country shares the continent of {nodes[0]} and borders "
                                            f"{pins[0]}?"}

    def judge(body):
        seen_judge.append(_prompt(body))
        return {"valid": True, "reason": "ok"}

    with FakeOpenAI() as fake:
        fake.add(schema_name="qa_pick_path", reply=pick)
        fake.add(schema_name="qa_judgement", reply=judge)
        gw = LLMGateway(_settings(fake, tmp_path))
        cfg = GenConfig(meaning_check="off", candidates=4)
        result = asyncio.run(run_job(gw, kg, _seed("France"), "1-2", "candidates", run_id="r", cfg=cfg))
    first, second = result.attempts[0], result.attempts[1]
    assert first.reject_reason == "pin_not_stated" and first.program is not None
    assert second.status == "accepted" and result.qa is not None
    assert result.qa.program is not None and result.qa.program.constraints
    pin = result.qa.program.constraints[0]
    # the judge read the pin as a fact of the question
    assert any(f"pin on {result.qa.program.nodes[pin.node]}:" in p for p in seen_judge)


def test_a_question_whose_answer_holds_only_within_the_graph_must_state_the_scope(tmp_path):
    """With ``[quality] scopes``, an LLM question over a pinned program (one answer only among the graph's countries)
    that leaves the scope out is refused as ``scope_not_stated`` with the opener to use; the retry that opens with
    it is accepted. The template writer opens such questions with it itself."""
    kg = graph(EUROPE, TYPES)
    scope = "among the European countries of 1995"

    def pick(body):
        pid, nodes, pins = _pinned_candidate(body)
        q = f"Which country shares the continent of {nodes[0]} and borders {pins[0]}?"
        if "earlier attempts were rejected" not in _prompt(body):
            return {"path_id": pid, "question": q}
        assert "Among the European countries of 1995, " in _prompt(body)  # the feedback says how to open it
        return {"path_id": pid, "question": f"Among the European countries of 1995, {q[0].lower()}{q[1:]}"}

    with FakeOpenAI() as fake:
        fake.add(schema_name="qa_pick_path", reply=pick)
        fake.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
        gw = LLMGateway(_settings(fake, tmp_path))
        cfg = GenConfig(meaning_check="off", candidates=4, scopes={"geo": scope})
        result = asyncio.run(run_job(gw, kg, _seed("France"), "1-2", "candidates", run_id="r", cfg=cfg))
    first, second = result.attempts[0], result.attempts[1]
    assert first.reject_reason == "scope_not_stated" and first.program is not None and first.program.constraints
    assert second.status == "accepted" and result.qa is not None and result.qa.question.startswith("Among the")


# -- free mode: the model names its pins -----------------------------------------------------------------------------


def test_a_free_job_without_the_pin_it_needs_is_told_which_fact_pins_the_node_and_the_retry_is_accepted(tmp_path):
    kg = graph(EUROPE, TYPES)
    prompts: list[str] = []

    def free(body):
        prompts.append(_prompt(body))
        # Spain is two hops from Germany whichever way: no shortcut
        reply = {"path": ["Spain", "Europe", "Germany"], "answer": "Germany",
                 "question": "Which country lies on the continent of Spain and borders Austria?"}
        if "earlier attempts were rejected" in _prompt(body):
            reply["pins"] = [{"node": "Germany", "value": "Austria"}]
        return reply

    with FakeOpenAI() as fake:
        fake.add(schema_name="qa_generation", reply=free)
        fake.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
        gw = LLMGateway(_settings(fake, tmp_path))
        cfg = GenConfig(meaning_check="off")
        result = asyncio.run(run_job(gw, kg, _seed("Spain"), "1-2", "free", run_id="r", cfg=cfg))
    first, second = result.attempts[0], result.attempts[1]
    assert first.reject_reason == "ambiguous_answer"
    # the retry prompt names the fact that pins Germany
    assert "Germany -borders-> Austria" in prompts[1]
    assert second.status == "accepted" and second.program is not None
    assert [(c.node, c.value) for c in second.program.constraints] == [(2, "Austria")]
    assert result.qa is not None and result.qa.program == second.program


def test_a_stated_pin_passes_the_pin_check_and_a_missing_one_fails_it():
    kg = graph(EUROPE, TYPES)
    program = program_for_path(kg, ["France", "Europe", "Germany"], [Pin("Germany", "Austria")],
                               book=book_for_graph(kg))
    said = run_checks(kg, program.nodes, "Which country on the continent of France borders Austria?", "Germany",
                      "1-2", program=program)
    left_out = run_checks(kg, program.nodes, "Which country shares a continent with France?", "Germany", "1-2",
                          program=program)
    assert next(v for v in said if v.check == "pins_named").ok
    assert not next(v for v in left_out if v.check == "pins_named").ok
    # a chain has no pins and no pin check
    chain = program_for_path(kg, ["Germany", "Berlin"], [], book=book_for_graph(kg))
    assert all(v.check != "pins_named" for v in run_checks(kg, chain.nodes, "What is the capital of Germany?",
                                                            "Berlin", "1-2", program=chain))


def test_the_free_schema_offers_pins_and_the_prompt_asks_for_them():
    from tasks.qa.generate import free_schema

    schema = free_schema(["France", "Europe", "Germany"], "1-2", 5)
    assert schema["properties"]["pins"]["items"]["required"] == ["node", "value"]
    assert "pins" not in schema["required"]
    json.dumps(schema)  # serialisable as a response format
    assert list(itertools.islice(schema["properties"], 4)) == ["path", "question", "answer", "pins"]
