"""Trajectory distillation against the loopback fake: every kind's accept and reject rules, then the flow."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gateway.client import LLMGateway
from testing.fake import last_user_text, request_schema
from schemas.config import load_settings
from schemas.qa import QA, GoldPath, make_qa_id
from schemas.tools import AgentRun, ToolCallRecord
from tasks.qa.context import path_edges
from tasks.graph.importers import read_triples
from tasks.env.index import HashingEmbedder
from tasks.env.tools import ToolEnvironment
from schemas.answers import answer_set_matches, path_coverage, triple_mentioned
from schemas.answers import lenient_key as normalize_answer
from tasks.distill.common import (
    DistillConfig,
    DistillContext,
    DistillJob,
    GoldChoice,
    answer_matches,
    choose_gold_paths,
)
from tasks.distill.cot import cot_subgraph, distill_cot
from tasks.distill.rollout import distill_rollout, rollout_messages
from tasks.distill.template import distill_template, excerpt, lists_entity, run_template_tools, thought_problems
from tasks.distill.trajectories import jobs_for

GRAPHS = Path(__file__).resolve().parent.parent / "flows" / "demo" / "graphs"

TWO_HOP = (["On Computable Numbers", "Alan Turing", "King's College, Cambridge"],
           "Which college did the author of On Computable Numbers study at?")
THREE_HOP = (["David Hilbert", "Entscheidungsproblem", "On Computable Numbers", "Alan Turing"],
             "Who wrote the paper that settled the decision problem posed by David Hilbert?")


@pytest.fixture(scope="module")
def kg():
    return read_triples(GRAPHS / "cs.jsonl", "cs").to_graph()


@pytest.fixture(scope="module")
def env(kg) -> ToolEnvironment:
    return ToolEnvironment.from_graphs([kg], HashingEmbedder(), tools=("entity_matcher", "node_info"))


def make_qa(kg, path: list[str], question: str, *, edges: bool = True, split: str = "train") -> QA:
    pe = path_edges(kg, path) if edges else []
    return QA(qa_id=make_qa_id("cs", kg.snapshot_id, question, path[-1], path), domain="cs", snapshot_id=kg.snapshot_id,
              seed=path[0], hop_class="1-2" if len(path) <= 3 else "3+", path=path, path_edges=pe, question=question,
              answer=path[-1], split=split, run_id="qa-run", attempt_id="att-1",
              source_chunk_ids=[])  # fmt: skip


def gold_for(qa: QA, verdict: str = "valid") -> list[GoldPath]:
    return [GoldPath(qa_id=qa.qa_id, rank=0, path=qa.path, triples=[e.triple() for e in qa.path_edges], verdict=verdict,
                     is_generator_path=True)]  # fmt: skip


def gateway(fake, tmp_path, cache: str = "off") -> LLMGateway:
    role = {"base_url": fake.base_url, "model": "fake-model", "max_retries": 0, "timeout_s": 10}
    settings = load_settings(data_dir=tmp_path, roles={"teacher": role}, cache={"mode": cache}, max_reasks=1)
    return LLMGateway(settings, backoff_base_s=0.01, backoff_cap_s=0.02)


def n_thoughts(body: dict[str, Any]) -> int:
    return request_schema(body)[1]["properties"]["thoughts"]["minItems"]


def good_thoughts(body: dict[str, Any]) -> dict[str, Any]:
    n = n_thoughts(body)
    return {"thoughts": [f"Step {i + 1}: I check what the last result tells me and decide the next move." for i in range(n)]}


# -- answers, gold paths, small helpers --------------------------------------------------------------------------------


def test_answer_matching_is_normalised_exact_match():
    gold = "King's College, Cambridge"
    assert normalize_answer("  '  King's   COLLEGE, Cambridge. ' ") == normalize_answer(gold)
    assert answer_matches("**King's College, Cambridge**", gold)
    assert answer_matches('["King\'s College, Cambridge"]', gold)
    assert not answer_matches('["King\'s College, Cambridge", "Bletchley Park"]', gold)  # a hedge is not an answer
    assert answer_matches('["King\'s College, Cambridge", "Bletchley Park"]', gold, allow_extra=True)
    assert not answer_matches("King's College", gold)
    assert not answer_matches("", gold) and not answer_matches(None, gold) and not answer_matches("x", "")
    assert answer_matches("C++", "c++") and not answer_matches("C", "C++")
    assert answer_set_matches('["b", "A"]', ["a", "B"]) and not answer_set_matches('["a"]', ["a", "b"])


def test_gold_path_preference(kg):
    qa = make_qa(kg, *TWO_HOP)
    own = gold_for(qa)[0]
    alt = GoldPath(qa_id=qa.qa_id, rank=0, path=["x", "y"], triples=[("x", "r", "y")], verdict="valid")
    confirmed = own.model_copy(update={"rank": 1})
    choices = choose_gold_paths(qa, [alt, confirmed])
    assert [c.source for c in choices] == ["generator_confirmed", "verified_alternative"]
    assert choices[0].path == tuple(qa.path)
    refuted = own.model_copy(update={"verdict": "invalid"})
    assert [c.source for c in choose_gold_paths(qa, [refuted, alt])] == ["verified_alternative"]
    assert choose_gold_paths(qa, [refuted]) == []  # the verifier refused every path
    fallback = choose_gold_paths(qa, [own.model_copy(update={"verdict": "unverified"})])
    assert [c.source for c in fallback] == ["question_path"] and fallback[0].triples[1][1] == "studied at"
    assert choose_gold_paths(qa, [])[0].source == "question_path"


def test_lists_entity_and_excerpt():
    obs = "Entity: A\nNeighbours (3 relations with 3 entities):\n1. Bob | A -[knows]-> Bob\n2. Bobby [person]: x\n3. C"
    assert lists_entity(obs, "Bob") and lists_entity(obs, "Bobby") and lists_entity(obs, "C")
    assert not lists_entity(obs, "Bo") and not lists_entity(obs, "A") and not lists_entity(obs, "knows")
    long = "Entity: A\nDescription: d\n" + "\n".join(f"{i}. N{i} | {'x' * 80}" for i in range(1, 60))
    cut = excerpt(long, ["N57"], 800)
    assert len(cut) < 1100 and "Entity: A" in cut and "57. N57 |" in cut and "more lines not shown" in cut
    assert excerpt("short", ["x"], 800) == "short"


def test_path_coverage_follows_explore_on_graph():
    triples = [("Alan Turing", "studied at", "King's College, Cambridge"),
               ("Alan Turing", "paper, 1936, computability", "On Computable Numbers")]
    think = "alan turing studied at KING'S COLLEGE, CAMBRIDGE; he also wrote On Computable Numbers."
    assert triple_mentioned(think, triples[0])
    assert not triple_mentioned(think, triples[1])  # no keyword of the unlabelled relation is named
    assert path_coverage(think + " It was his 1936 paper.", triples) == 1.0  # one keyword suffices
    assert path_coverage(think, triples) == 0.5 and path_coverage("", triples) == 0.0 and path_coverage("x", []) == 0.0


def test_thought_problems_count_empty_and_leaks(kg, env):
    qa = make_qa(kg, *TWO_HOP)
    steps, problem = run_template_tools(env, qa.path, "cs")
    assert problem is None and len(steps) == 3
    ok = ["Find the paper.", "Look at the paper's author.", "Check the author's college.", "Answer it."]
    assert thought_problems(ok, qa.question, qa.path, steps) is None
    assert thought_problems(ok[:3], qa.question, qa.path, steps)[0] == "count"
    assert thought_problems([*ok[:3], "  "], qa.question, qa.path, steps)[0] == "empty"
    # Turn 2 has seen the matcher's output only: Alan Turing appears in the paper's description there, so naming
    # him is fine; the college first appears in node_info(Alan Turing), the output of turn 3.
    early = ["Find the paper.", "Its author is Alan Turing.", "He studied at King's College, Cambridge.", "Done."]
    kind, message = thought_problems(early, qa.question, qa.path, steps)
    assert kind == "leak" and "thought 3" in message and "King's College" in message


# -- template ----------------------------------------------------------------------------------------------------


async def test_template_accepted_with_real_tool_outputs(fake_llm, tmp_path, kg, env):
    fake_llm.add(schema_name="template_thoughts", reply=good_thoughts)
    qa = make_qa(kg, *THREE_HOP)
    ctx = DistillContext(gateway(fake_llm, tmp_path), env, kg, run_id="r1", model="fake-model")
    t = await distill_template(DistillJob(qa, "template"), gold_for(qa), ctx)

    assert t.status == "accepted" and t.reject_reason is None and t.gold_source == "generator_confirmed"
    assert t.n_rounds == 4 and t.final_answer == "Alan Turing" and t.end_reason == "answer"
    roles = [m["role"] for m in t.messages]
    assert roles == ["system", "user"] + ["assistant", "tool"] * 4 + ["assistant"]
    calls = [json.loads(m["tool_calls"][0]["function"]["arguments"]) | {"tool": m["tool_calls"][0]["function"]["name"]}
             for m in t.messages if m.get("tool_calls")]  # fmt: skip
    assert [(c["tool"], c["node_name"]) for c in calls] == [
        ("entity_matcher", "David Hilbert"), ("node_info", "David Hilbert"), ("node_info", "Entscheidungsproblem"),
        ("node_info", "On Computable Numbers")]  # fmt: skip
    assert t.messages[-2]["content"] == env.call("node_info", {"node_name": "On Computable Numbers", "graph_type": "cs"}).text
    assert t.messages[-1]["content"] == "<answer>Alan Turing</answer>"
    assert len(t.reasoning) == 5 and all(t.reasoning) and t.model == "fake-model" and t.run_id == "r1"
    # one teacher call for the whole trajectory, asking for exactly five thoughts, with the outputs in the prompt
    (req,) = fake_llm.requests
    assert n_thoughts(req.json) == 5 and "Result of step 4:" in last_user_text(req.json)


async def test_template_rejects_a_path_the_tools_cannot_walk(fake_llm, tmp_path, kg, env):
    broken = make_qa(kg, ["Alan Turing", "Entscheidungsproblem"], "What did Alan Turing's paper settle?", edges=False)
    ctx = DistillContext(gateway(fake_llm, tmp_path), env, kg)
    t = await distill_template(DistillJob(broken, "template"), gold_for(broken), ctx)
    assert (t.status, t.reject_reason) == ("rejected", "next_hop_missing")
    assert "Entscheidungsproblem" in t.detail and fake_llm.calls() == 0  # no teacher call for an unwalkable path
    refused = await distill_template(DistillJob(broken, "template"), gold_for(broken, "invalid"), ctx)
    assert refused.reject_reason == "no_gold_path"
    # the verifier refused the question's own path but confirmed another: the thoughts would describe relations the
    # question does not ask about, so no template trajectory
    qa = make_qa(kg, *THREE_HOP)
    other = GoldPath(qa_id=qa.qa_id, rank=0, path=["x", "y"], triples=[("x", "r", "y")], verdict="valid")
    elsewhere = await distill_template(DistillJob(qa, "template"), [*gold_for(qa, "invalid"), other], ctx)
    assert elsewhere.reject_reason == "no_gold_path" and "question's own path" in elsewhere.detail
    assert fake_llm.calls() == 0
    too_long = await distill_template(DistillJob(make_qa(kg, *THREE_HOP), "template"), [],
                                      DistillContext(ctx.gateway, env, kg, DistillConfig(max_rounds=3)))
    assert too_long.reject_reason == "too_many_rounds"


async def test_template_teacher_failures_are_rejects_with_reasons(fake_llm, tmp_path, kg, env):
    qa = make_qa(kg, *TWO_HOP)
    ctx = DistillContext(gateway(fake_llm, tmp_path), env, kg)

    fake_llm.add(schema_name="template_thoughts", reply="no JSON here", times=2)
    t = await distill_template(DistillJob(qa, "template"), gold_for(qa), ctx)
    assert (t.status, t.reject_reason) == ("rejected", "llm_error") and t.reasoning == [None] * 4

    def wrong_count(body):
        return {"thoughts": ["only one"]}

    fake_llm.add(schema_name="template_thoughts", reply=wrong_count, times=2)
    t = await distill_template(DistillJob(qa, "template"), gold_for(qa), ctx)
    # the schema's minItems is held to the reply by the gateway before the thoughts' own check runs
    assert t.reject_reason == "llm_error" and "thoughts: 1 items, fewer than the minimum 4" in t.detail

    def leaky(body):
        return {"thoughts": ["Find the paper.", "It leads to King's College, Cambridge.", "Check.", "Answer."]}

    fake_llm.add(schema_name="template_thoughts", reply=leaky)
    t = await distill_template(DistillJob(qa, "template"), gold_for(qa), ctx)
    assert t.reject_reason == "thoughts_leak"
    reask = fake_llm.requests[-1].json["messages"][-1]["content"]
    assert "no earlier tool result has shown yet" in reask  # the re-ask told the teacher what was wrong


# -- rollouts ----------------------------------------------------------------------------------------------------


def walker(paths: dict[str, list[str]], final: dict[str, str] | None = None):
    """A teacher that walks each question's path in the text style, then answers (``final`` overrides)."""

    def reply(body: dict[str, Any]) -> str:
        msgs = body["messages"]
        question = next(m["content"] for m in msgs if m["role"] == "user")
        path = paths[question]
        n = sum(1 for m in msgs if m["role"] == "assistant")
        if n == 0:
            return f'Let me find the start.\n<tool_call>\nentity_matcher(node_name={json.dumps(path[0])}, graph_type="cs")\n</tool_call>'
        if n < len(path):
            return f'<tool_call>\n{{"name": "node_info", "arguments": {{"node_name": {json.dumps(path[n - 1])}, "graph_type": "cs"}}}}\n</tool_call>'
        return f"<answer>{(final or {}).get(question, path[-1])}</answer>"

    return reply


async def test_rollouts_keep_right_answers_and_samples_differ(fake_llm, tmp_path, kg, env):
    qa = make_qa(kg, *TWO_HOP)
    fake_llm.add(reply=walker({qa.question: qa.path}), reasoning="Thinking about the next step.")
    ctx = DistillContext(gateway(fake_llm, tmp_path, cache="on"), env, kg, run_id="r")
    first = await distill_rollout(DistillJob(qa, "rollouts", 0), gold_for(qa), ctx)
    second = await distill_rollout(DistillJob(qa, "rollouts", 1), gold_for(qa), ctx)

    assert first.status == second.status == "accepted" and first.final_answer == qa.answer
    assert first.n_rounds == 3 and first.end_reason == "answer" and first.trajectory_id != second.trajectory_id
    assert first.params["seed"] != second.params["seed"] and first.params["temperature"] == 0.8
    assert fake_llm.calls() == 8  # the second sample was not served from the cache
    roles = [m["role"] for m in first.messages]
    assert roles == ["system", "user"] + ["assistant", "tool"] * 3 + ["assistant"]
    assert first.messages[2]["content"] == "Let me find the start."  # prose kept, the <tool_call> text turned into a call
    assert json.loads(first.messages[2]["tool_calls"][0]["function"]["arguments"]) == {"node_name": qa.path[0], "graph_type": "cs"}
    assert first.messages[3]["content"].startswith('Entities matching "On Computable Numbers"')
    assert first.reasoning == ["Thinking about the next step."] * 4 and first.path_coverage is not None


async def test_rollout_rejects(fake_llm, tmp_path, kg, env):
    qa = make_qa(kg, *TWO_HOP)
    ctx = DistillContext(gateway(fake_llm, tmp_path), env, kg)
    fake_llm.add(reply=walker({qa.question: qa.path}, {qa.question: "Bletchley Park"}), times=4)
    wrong = await distill_rollout(DistillJob(qa, "rollouts", 0), gold_for(qa), ctx)
    assert (wrong.status, wrong.reject_reason) == ("rejected", "wrong_answer") and "Bletchley Park" in wrong.detail

    fake_llm.add(reply="I am not sure.")
    silent = await distill_rollout(DistillJob(qa, "rollouts", 1), gold_for(qa), ctx)
    assert silent.reject_reason == "no_answer" and "no_tool_call" in silent.detail


def test_rollout_messages_and_judging_of_malformed_calls():
    run = AgentRun(
        question="q?", graph_type="cs", style="text", role="teacher",
        messages=[{"role": "system", "content": "s"}, {"role": "user", "content": "q?"},
                  {"role": "assistant", "content": "<tool_call>node_info(node='A')</tool_call>"},
                  {"role": "user", "content": "<tool_response>\nBad arguments\n</tool_response>"},
                  {"role": "assistant", "content": "<answer>B</answer>"}],
        reasoning=[None, "done"], rounds=1, generations=2, end_reason="answer", final_answer="B",
        tool_calls=[ToolCallRecord(round=1, name="node_info", arguments={"node": "A"}, ok=False,
                                   error_kind="bad_arguments", observation="Bad arguments")],
    )  # fmt: skip
    messages, reasoning = rollout_messages(run)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert messages[3] == {"role": "tool", "tool_call_id": "call_0", "name": "node_info", "content": "Bad arguments"}
    assert reasoning == [None, "done"]
    from tasks.distill.rollout import judge_rollout

    assert judge_rollout(run, "B")[0] == "malformed_call"
    assert judge_rollout(run.model_copy(update={"nudges": 1}), "b")[0] == "nudged"
    assert judge_rollout(run.model_copy(update={"end_reason": "error", "error": "down"}), "B") == ("llm_error", "down")


# -- long CoT ----------------------------------------------------------------------------------------------------------


def cot_reply(think: str, answer: str):
    return lambda body: f"<think>\n{think}\n</think>\n<answer>{answer}</answer>"


async def test_cot_accept_and_reject_rules(fake_llm, tmp_path, kg):
    qa = make_qa(kg, *TWO_HOP)
    ctx = DistillContext(gateway(fake_llm, tmp_path), None, kg, DistillConfig(max_distractors=6))
    good_think = ("Start at On Computable Numbers. The triple (Alan Turing, wrote, On Computable Numbers) gives its "
                  "author, Alan Turing. Then (Alan Turing, studied at, King's College, Cambridge) gives the college.")
    fake_llm.add(reply=cot_reply(good_think, '["King\'s College, Cambridge"]'), times=1)
    t = await distill_cot(DistillJob(qa, "cot"), gold_for(qa), ctx)
    assert t.status == "accepted" and t.path_coverage == 1.0 and t.reasoning == [good_think]
    assert [m["role"] for m in t.messages] == ["system", "user", "assistant"]
    assert t.messages[-1]["content"] == '<answer>["King\'s College, Cambridge"]</answer>'
    student = t.messages[1]["content"]
    assert "Correct answer" not in student and "Start entity: On Computable Numbers" in student
    teacher_prompt = last_user_text(fake_llm.requests[0].json)
    assert 'Correct answer: ["King\'s College, Cambridge"]' in teacher_prompt
    shown = re.findall(r"^\((.+)\)$", student, re.M)
    assert len(shown) == 8  # two gold triples plus six distractors
    assert "Alan Turing, studied at, King's College, Cambridge" in shown

    fake_llm.add(reply=cot_reply(good_think, '["Bletchley Park"]'), times=1)
    assert (await distill_cot(DistillJob(qa, "cot"), gold_for(qa), ctx)).reject_reason == "answer_mismatch"
    fake_llm.add(reply=cot_reply("Turing studied at King's College, Cambridge.", '["King\'s College, Cambridge"]'), times=1)
    low = await distill_cot(DistillJob(qa, "cot"), gold_for(qa), ctx)
    assert low.reject_reason == "low_path_coverage" and low.path_coverage == 0.0
    strict = DistillContext(ctx.gateway, None, kg, DistillConfig(min_path_coverage=1.0))
    fake_llm.add(reply=cot_reply(good_think.split(" Then")[0] + " then the college.", '["King\'s College, Cambridge"]'), times=1)
    half = await distill_cot(DistillJob(qa, "cot"), gold_for(qa), strict)
    assert half.reject_reason == "low_path_coverage" and half.path_coverage == 0.5
    fake_llm.add(reply="<answer>[\"King's College, Cambridge\"]</answer>", times=1)
    assert (await distill_cot(DistillJob(qa, "cot"), gold_for(qa), ctx)).reject_reason == "bad_format"


def test_cot_subgraph_is_deterministic_and_holds_the_gold_triples(kg):
    qa = make_qa(kg, *THREE_HOP)
    choice = [GoldChoice(tuple(qa.path), tuple(e.triple() for e in qa.path_edges), "generator_confirmed")]
    a = cot_subgraph(kg, choice, qa.qa_id, max_distractors=10, seed=0)
    assert a == cot_subgraph(kg, choice, qa.qa_id, max_distractors=10, seed=0)
    assert a != cot_subgraph(kg, choice, qa.qa_id, max_distractors=10, seed=1)
    assert set(choice[0].triples) <= set(a) and len(a) == 13 and len(set(a)) == 13


def test_jobs_skip_what_is_stored(kg):
    qa = make_qa(kg, *TWO_HOP)
    jobs = jobs_for([qa], ["template", "rollouts", "cot"], 3, {(qa.qa_id, "rollouts", 1)})
    assert [(j.kind, j.sample) for j in jobs] == [("template", 0), ("rollouts", 0), ("rollouts", 2), ("cot", 0)]


def test_config_is_checked():
    with pytest.raises(ValueError, match="min_path_coverage"):
        DistillConfig(min_path_coverage=1.5)
    with pytest.raises(ValueError, match="n_rollouts"):
        DistillConfig(n_rollouts=0)
    from flows.params import DistillTrajectories

    with pytest.raises(ValueError, match=r"kinds \(--kind\) must be template, rollouts or cot, got 'rollout'"):
        DistillTrajectories.check({"kinds": ["template", "rollout"]})
    with pytest.raises(ValueError, match=r"split \(--split\) must be train, validation or test, got 'dev'"):
        DistillTrajectories.check({"kinds": ["cot"], "split": "dev"})
    with pytest.raises(ValueError, match="needs at least 1"):
        DistillTrajectories.check({"kinds": []})
    assert DistillTrajectories.check({"kinds": ["cot", "template"], "split": "test"}).kinds == ("cot", "template")


# -- the flow ------------------------------------------------------------------------------------------------------


def build_warehouse(settings) -> list[QA]:
    """The demo cs graph as the current snapshot, two questions, their gold paths."""
    from warehouse.graphs import write_snapshot
    from warehouse.db import Warehouse

    imported = read_triples(GRAPHS / "cs.jsonl", "cs")
    with Warehouse(settings.warehouse_path) as wh:
        snap = write_snapshot(wh, "cs", imported.entities, imported.relations, source="triples", build_run_id=None,
                              directed=imported.directed)  # fmt: skip
        kg = imported.to_graph(snapshot_id=snap.snapshot_id)
        qas = [make_qa(kg, *TWO_HOP), make_qa(kg, *THREE_HOP, split="test")]
        wh.write_batch("qa", qas)
        wh.write_batch("gold_paths", [g for q in qas for g in gold_for(q)])
    return qas


def teacher(paths: dict[str, list[str]]):
    """One fake teacher for every kind: thoughts for templates, a CoT for CoT prompts, a path walker otherwise."""
    walk = walker(paths)

    def reply(body: dict[str, Any]):
        name, _ = request_schema(body)
        if name == "template_thoughts":
            return good_thoughts(body)
        if "Correct answer:" in last_user_text(body):
            question = re.search(r"^Question: (.+)$", last_user_text(body), re.M).group(1)
            p = paths[question]
            return cot_reply(f"From {p[0]} I follow the triples to {p[-1]}.", json.dumps([p[-1]]))(body)
        return walk(body)

    return reply


def test_distill_flow_writes_resumes_and_reports(prefect_harness, fake_llm, tmp_path):
    from flows.distill import distill_trajectories, load_trajectories
    from warehouse.db import Warehouse

    role = {"base_url": fake_llm.base_url, "model": "fake-model", "max_retries": 0, "timeout_s": 10}
    settings = load_settings(data_dir=tmp_path, roles={"teacher": role},
                             embeddings={"base_url": fake_llm.base_url, "model": "fake-embed", "dim": 16})
    qas = build_warehouse(settings)
    fake_llm.add(reply=teacher({q.question: q.path for q in qas}))

    out = distill_trajectories(domains=["cs"], n_rollouts=2, settings=settings)
    by_kind = {r["kind"]: r for r in out["by_kind"]}
    assert out["made"] == 8 and by_kind["template"]["accepted"] == 2 and by_kind["rollouts"]["accepted"] == 4
    # the CoT reasoning names the ends but no relation: below the path-coverage bar
    assert by_kind["cot"]["rejected"] == 2 and by_kind["cot"]["reject_reasons"] == "low_path_coverage: 2"
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        stored = load_trajectories(wh)
        runs = wh.query("SELECT status, llm_calls FROM runs WHERE flow = 'distill-trajectories'")
    assert len(stored) == 8 and {t.split for t in stored} == {"train", "test"}
    assert all(t.model == "fake-model" and t.run_id == out["run_id"] for t in stored)
    assert runs[0]["status"] == "completed" and runs[0]["llm_calls"] == fake_llm.calls()

    calls = fake_llm.calls()
    again = distill_trajectories(domains=["cs"], n_rollouts=3, kinds=["rollouts"], settings=settings)
    assert again["made"] == 2 and fake_llm.calls() > calls  # only the third sample of each question is new
    calls = fake_llm.calls()
    assert distill_trajectories(domains=["cs"], n_rollouts=3, settings=settings)["made"] == 0
    assert fake_llm.calls() == calls


async def test_endpoint_losses_are_retried_on_resume_but_bad_output_is_final(fake_llm, tmp_path, kg):
    from testing.fake import Fault

    from flows.distill import stored_jobs
    from warehouse.db import Warehouse

    qa = make_qa(kg, *TWO_HOP)
    ctx = DistillContext(gateway(fake_llm, tmp_path), None, kg)
    fake_llm.add(reply="x", fault=Fault(status=503), times=1)
    lost = await distill_cot(DistillJob(qa, "cot"), gold_for(qa), ctx)
    fake_llm.add(reply="no tags at all", times=1)
    bad = await distill_cot(DistillJob(qa, "cot", 1), gold_for(qa), ctx)
    assert (lost.reject_reason, lost.end_reason) == ("llm_error", "error")
    assert (bad.reject_reason, bad.end_reason) == ("bad_format", None)
    with Warehouse(tmp_path / "wh.duckdb") as wh:
        wh.write_batch("trajectories", [lost, bad])
        assert stored_jobs(wh, ["cot"]) == {(qa.qa_id, "cot", 1)}


def _pinned_programs(kg):
    """Programs of the demo cs graph, each writable as a question, with a pin on the answer, and with a pin on a
    node before it."""
    from tasks.meaning.names import node_type_noun
    from tasks.meaning.profiles import book_for_graph
    from tasks.qa.program_writer import can_pin_with, write_program_question
    from tasks.qa.programs import sample_programs
    from tasks.qa.template_writer import TemplateError

    def writable(p) -> bool:
        try:
            write_program_question(p, [node_type_noun(kg, n) for n in p.nodes], book=book, name_of=lambda n: n)
        except TemplateError:
            return False
        return True

    book = book_for_graph(kg)
    on_answer = before = None
    for start in sorted(kg.nodes()):
        for p in sample_programs(kg, start, 2, count=4, book=book, max_walks=20, clause_ok=can_pin_with).programs:
            if not writable(p):
                continue
            nodes = {c.node for c in p.constraints}
            if on_answer is None and p.hops in nodes:
                on_answer = p
            if before is None and any(0 < n < p.hops for n in nodes):
                before = p
        if on_answer is not None and before is not None:
            return on_answer, before
    raise AssertionError("the demo cs graph has no pinned programs")


def test_a_conjunctions_template_trajectory_checks_every_pin_with_the_tools(kg, env):
    from tasks.distill.template import pin_facts, program_pins
    from tasks.meaning.names import node_type_noun
    from tasks.meaning.profiles import book_for_graph
    from tasks.qa.program_writer import write_program_question
    from tasks.qa.template_writer import write_thoughts

    book = book_for_graph(kg)
    for program in _pinned_programs(kg):
        path, pins = list(program.nodes), program_pins(program)
        steps, problem = run_template_tools(env, path, "cs", pins)
        assert problem is None
        extra = 1 if pins.get(program.hops) else 0  # a pinned answer is inspected before it is given
        assert len(steps) == len(path) + extra
        if extra:
            assert steps[-1].name == "node_info" and steps[-1].arguments["node_name"] == program.answer
        for k, values in pins.items():  # every pin is listed by the pinned node's own relations
            shown = next(s.observation for s in steps if s.name == "node_info" and s.arguments["node_name"] == path[k])
            assert all(lists_entity(shown, v) for v in values)
        facts = pin_facts(kg, program, book)
        types = [node_type_noun(kg, n) for n in path]
        question = write_program_question(program, types, book=book, name_of=lambda n: n)
        thoughts = write_thoughts(question, path, path_edges(kg, path), types, graph="cs", book=book, pins=facts)
        assert len(thoughts) == len(steps) + 1
        assert thought_problems(thoughts, question, path, steps) is None  # no node named before a tool showed it
        said = " ".join(thoughts)
        assert all(f in said for fs in facts.values() for f in fs)
        # a pin the graph does not hold is caught by the tools, not taken on trust
        wrong = {k: ["Nowhere Land"] for k in pins}
        _, problem = run_template_tools(env, path, "cs", wrong)
        assert problem is not None and problem[0] == "pin_missing" and "Nowhere Land" in problem[1]
