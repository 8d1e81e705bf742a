"""The meaning check: the verifier answers a question from the path's facts alone, before the judge.

The endpoint is the loopback fake; its careful reader (``FakeOpenAI.add_fact_reader``) is the reference the check
is tested against: a reversed or an ambiguous question is caught, a correctly worded one passes."""

from __future__ import annotations

import pytest

from gateway.client import LLMGateway
from testing.fake import Fault, read_fact_sheet
from schemas.config import load_settings
from schemas.qa import PathEdge
from tasks.graph.kg import KnowledgeGraph
from tasks.qa import meaning_check as mc
from tasks.qa.generate import GenConfig, _attempt_feedback, _finish

# lipid is an ingredient of the clinical drug; glycerol is an ingredient of lipid (so the reversed question
# "What is the ingredient of lipid?" has an answer: glycerol); aspirin and insulin are other drugs.
TRIPLES = [
    ("lipid", "ingredient_of", "clinical drug"),
    ("glycerol", "ingredient_of", "lipid"),
    ("enzyme", "produces", "lipid"),
    ("clinical drug", "treats", "fever"),
    ("protein", "ingredient_of", "aspirin"),
]
PATH = ["lipid", "clinical drug"]


def plain(edge: PathEdge) -> str:
    """A fact in its stored direction, the label in brackets: says no more than the graph does."""
    s, rel, o = edge.triple()
    return f"{s} [{rel}] {o}"


def graph(*extra: tuple[str, str, str]) -> KnowledgeGraph:
    return KnowledgeGraph.from_triples("pharma", [*TRIPLES, *extra])


def gateway_for(fake, tmp_path, *, verifier_local: bool = False) -> LLMGateway:
    role = {"base_url": fake.base_url, "model": "fake-model", "max_retries": 1, "timeout_s": 10}
    roles = {"generator": role, "verifier": {} if verifier_local else role}
    return LLMGateway(load_settings(data_dir=tmp_path, roles=roles), backoff_base_s=0.01, backoff_cap_s=0.02)


BASE = dict(attempt_id="att-1", run_id="run-1", domain="pharma", snapshot_id=None, seed="lipid", hop_class="1-2",
            mode="candidates", attempt=1, candidate_id="P1", writer="llm")


async def finish(gw, kg, question, *, path=PATH, **cfg):
    cfg.setdefault("meaning_check", "on")
    return await _finish(gw, kg, dict(BASE), list(path), question, path[-1], [], None, GenConfig(**cfg))


def requests_named(fake, name):
    return [r for r in fake.requests if r.json and (r.json.get("response_format") or {}).get("json_schema", {})
            .get("name") == name]


@pytest.fixture(autouse=True)
def plain_facts(monkeypatch):
    """The sheet in the plain stored-direction form above, whatever the template writer's sentences are."""
    monkeypatch.setattr(mc, "_default_state", lambda: plain)


# -- the fact sheet -----------------------------------------------------------------------------------------------------
def test_the_sheet_holds_every_path_fact_and_the_path_nodes_other_facts():
    kg = graph()
    lines, edges, n_path = mc.fact_sheet(kg, ["enzyme", "lipid", "clinical drug"], "q?", state=plain)
    assert n_path == 2
    assert {"enzyme [produces] lipid", "lipid [ingredient_of] clinical drug"} <= set(lines)
    # distractors: the other facts of the path's nodes, in their stored direction; none of a node off the path
    assert {"glycerol [ingredient_of] lipid", "clinical drug [treats] fever"} <= set(lines)
    assert "protein [ingredient_of] aspirin" not in lines
    assert len(lines) == len(set(lines)) == len(edges) == 4


def test_the_cap_keeps_the_path_facts_and_prefers_distractors_with_a_path_label():
    extra = [(f"drug {i}", "treats", "fever") for i in range(10)]
    extra += [("lipid", "studied_in", f"paper {i}") for i in range(40)]
    extra += [("lipid", "ingredient_of", "ointment")]
    kg = graph(*extra)
    for cap in (1, 2, 5):
        lines, _, n_path = mc.fact_sheet(kg, PATH, "What is lipid an ingredient of?", state=plain, max_facts=cap)
        assert "lipid [ingredient_of] clinical drug" in lines and n_path == 1
        assert len(lines) == max(cap, 1)
        if cap >= 3:  # the same-label facts come before the other distractors
            assert {"lipid [ingredient_of] ointment", "glycerol [ingredient_of] lipid"} <= set(lines)


def test_the_sheet_is_shuffled_deterministically_by_question_and_path():
    kg = graph(*[("lipid", "studied_in", f"paper {i}") for i in range(12)])
    one = mc.fact_sheet(kg, PATH, "What is lipid an ingredient of?", state=plain)[0]
    assert one == mc.fact_sheet(kg, PATH, "What is lipid an ingredient of?", state=plain)[0]
    others = [mc.fact_sheet(kg, PATH, f"What is lipid an ingredient of, case {i}?", state=plain)[0] for i in range(5)]
    assert all(sorted(o) == sorted(one) for o in others)
    assert any(o != one for o in others)
    assert one.index("lipid [ingredient_of] clinical drug") != 0 or others[0].index(
        "lipid [ingredient_of] clinical drug") != 0  # the path's fact is not pinned to the top


def test_the_prompt_shows_the_facts_and_question_but_never_the_answer():
    kg = graph()
    rec = mc.build_record(kg, PATH, "What is lipid an ingredient of?", "clinical drug", state=plain)
    text = "\n".join(m["content"] for m in mc.build_messages(rec))
    assert all(f"- {f}" in text for f in rec.facts) and "Question: What is lipid an ingredient of?" in text
    assert "Intended answer" not in text and "answer: clinical drug" not in text.lower()
    enum = mc.answer_schema(rec)["properties"]["answer"]["enum"]
    assert set(enum) == {*rec.names, "unknown", "several"} and "clinical drug" in enum


# -- parsing ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("raw", [None, "", "   ", "I think it is lipid", "{", '{"answer": ', "[1, 2]", '"lipid"',
                                 '{"reason": "no answer"}', '{"answer": 3}', '{"answer": "  "}'])
def test_garbage_empty_and_malformed_replies_parse_to_nothing(raw):
    assert mc.parse(raw) is None


def test_replies_in_fences_or_prose_parse():
    assert mc.parse('```json\n{"answer": "lipid", "reason": "fact 2"}\n```').answer == "lipid"
    assert mc.parse('Sure: {"answer": "several"} done').answer == "several"


def test_verdicts_name_what_the_reader_answered():
    rec = mc.build_record(graph(), PATH, "What is lipid an ingredient of?", "clinical drug", state=plain)
    assert mc.verdict_for(mc.MeaningOutput(answer=" Clinical Drug."), rec).ok  # the shared answer normaliser
    wrong = mc.verdict_for(mc.MeaningOutput(answer="glycerol", reason="glycerol is an ingredient of lipid"), rec)
    assert not wrong.ok and wrong.code == "not_answerable_from_facts" and "'glycerol'" in wrong.reason
    assert "several" in mc.verdict_for(mc.MeaningOutput(answer="Several"), rec).reason
    assert "could not answer" in mc.verdict_for(mc.MeaningOutput(answer="unknown"), rec).reason


# -- the careful reader of the fake ----------------------------------------------------------------------------------
def test_the_reader_follows_each_fact_in_its_stored_direction():
    names = ["lipid", "clinical drug", "glycerol", "enzyme", "fever"]
    facts = ["lipid [ingredient_of] clinical drug", "glycerol is an ingredient of lipid", "enzyme produces lipid",
             "clinical drug treats fever"]
    assert read_fact_sheet(facts, "What is lipid an ingredient of?", names)[0] == "clinical drug"
    assert read_fact_sheet(facts, "What is the ingredient of lipid?", names)[0] == "glycerol"
    assert read_fact_sheet(facts, "What does enzyme produce?", names)[0] == "lipid"
    assert read_fact_sheet(facts, "What treats fever?", names)[0] == "clinical drug"
    assert read_fact_sheet(facts, "Which drug cures fever?", names)[0] == "unknown"  # no such relation words
    assert read_fact_sheet(facts, "What does the thing that enzyme produces treat?", names)[0] == "unknown"
    two_hops = "What is the thing that enzyme produces an ingredient of?"
    assert read_fact_sheet(facts, two_hops, names)[0] == "clinical drug"
    assert read_fact_sheet(facts + ["lipid [ingredient_of] ointment"], "What is lipid an ingredient of?",
                           [*names, "ointment"])[0] == "several"


# -- wired into generation: before the judge ---------------------------------------------------------------------------
async def test_a_reversed_question_is_rejected_with_the_readers_answer_in_the_feedback(fake_llm, tmp_path):
    fake_llm.add_fact_reader()
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    gw = gateway_for(fake_llm, tmp_path)
    a = await finish(gw, graph(), "What is the ingredient of lipid?")
    assert a.status == "rejected" and a.reject_reason == "not_answerable_from_facts"
    assert a.verdicts[-1].check == "answerable_from_facts" and not a.verdicts[-1].ok
    assert "'glycerol'" in _attempt_feedback(a)  # what the question was read as goes back to the generator
    assert not requests_named(fake_llm, "qa_judgement")  # the judge is not asked after a meaning reject


async def test_a_reversed_question_with_nothing_to_find_is_unknown(fake_llm, tmp_path):
    fake_llm.add_fact_reader()
    kg = KnowledgeGraph.from_triples("pharma", [("lipid", "ingredient_of", "clinical drug")])
    a = await finish(gateway_for(fake_llm, tmp_path), kg, "What is the ingredient of lipid?", use_judge=False)
    assert a.reject_reason == "not_answerable_from_facts" and "could not answer" in _attempt_feedback(a)


async def test_an_ambiguous_question_is_rejected(fake_llm, tmp_path):
    fake_llm.add_fact_reader()
    kg = graph(("lipid", "ingredient_of", "ointment"))
    a = await finish(gateway_for(fake_llm, tmp_path), kg, "What is lipid an ingredient of?", use_judge=False)
    assert a.reject_reason == "not_answerable_from_facts" and "several" in _attempt_feedback(a)


async def test_a_correctly_worded_question_passes_on_to_the_judge(fake_llm, tmp_path):
    fake_llm.add_fact_reader()
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    a = await finish(gateway_for(fake_llm, tmp_path), graph(), "What is lipid an ingredient of?")
    assert a.status == "accepted" and a.judge_valid is True
    assert a.verdicts[-1].check == "answerable_from_facts" and a.verdicts[-1].ok
    assert len(requests_named(fake_llm, "qa_meaning_check")) == 1 == len(requests_named(fake_llm, "qa_judgement"))


def test_the_template_writers_sentences_are_the_default_sheet(monkeypatch):
    from tasks.qa.template_writer import fact_sentence

    monkeypatch.undo()  # the real default, not the plain form of the other tests
    assert mc._default_state() is fact_sentence


async def test_auto_runs_the_check_unless_the_verifier_is_the_embedded_model(fake_llm, tmp_path):
    remote = gateway_for(fake_llm, tmp_path)
    local = gateway_for(fake_llm, tmp_path / "local", verifier_local=True)
    assert mc.enabled("auto", remote) and not mc.enabled("auto", local)
    assert mc.enabled("on", local) and not mc.enabled("off", remote)
    with pytest.raises(ValueError):
        mc.enabled("sometimes", remote)
    # auto with the embedded verifier: no request at all (the embedded model is never started for it)
    a = await finish(local, graph(), "What is the ingredient of lipid?", meaning_check="auto", use_judge=False)
    b = await finish(remote, graph(), "What is the ingredient of lipid?", meaning_check="off", use_judge=False)
    assert a.status == b.status == "accepted" and fake_llm.calls() == 0
    fake_llm.add_fact_reader()
    c = await finish(remote, graph(), "What is the ingredient of lipid?", meaning_check="auto", use_judge=False)
    assert c.reject_reason == "not_answerable_from_facts"


async def test_an_endpoint_failure_is_llm_error_not_a_verdict(fake_llm, tmp_path):
    fake_llm.add(schema_name="qa_meaning_check", fault=Fault(status=500))
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    a = await finish(gateway_for(fake_llm, tmp_path), graph(), "What is lipid an ingredient of?")
    assert a.status == "rejected" and a.reject_reason == "llm_error" and a.failure_kind == "server_error"
    assert a.judge_reason.startswith("meaning check unavailable")
    assert all(v.check != "answerable_from_facts" for v in a.verdicts)
    assert not requests_named(fake_llm, "qa_judgement")


async def test_a_garbage_reply_is_llm_error_after_the_reask(fake_llm, tmp_path):
    fake_llm.add(schema_name="qa_meaning_check", reply="I cannot tell")
    a = await finish(gateway_for(fake_llm, tmp_path), graph(), "What is lipid an ingredient of?", use_judge=False)
    assert a.reject_reason == "llm_error" and a.judge_reason.startswith("meaning check failed")
    assert len(requests_named(fake_llm, "qa_meaning_check")) == 2  # the first reply and one re-ask
