"""Teacher rollouts and long CoT in an IKG view (``tasks.distill.ikg_rollouts``), on the cs demo graph with the
fake endpoint scripting the teacher: a rollout that switches to the text is kept and shows the switch; a correct
answer that never read the hidden fact is rejected with its reason; the teacher runs only when configured."""

from __future__ import annotations

import json
from typing import Any

import pytest

from schemas.config import load_settings
from schemas.trajectories import make_trajectory_id
from tasks.distill.ikg_rollouts import (
    IKGTeacher,
    fetched_facts,
    ikg_cot,
    ikg_rollout,
    ikg_teacher_kinds,
    ikg_trajectories,
)
from tasks.distill.ikg_template import IKG_TEMPLATE_TOOLS, ikg_trajectory_id, shows_the_switch
from tasks.distill.common import DistillConfig
from tasks.env.ikg import IKGVariant, make_view, viewed_environment
from tasks.env.tools import ToolEnvironment
from tests.test_agent_loop import make_gateway
from tests.test_ikg_agent import call, cs_environment, two_hop_walks

@pytest.fixture(scope="module")
def env() -> ToolEnvironment:
    return cs_environment(IKG_TEMPLATE_TOOLS)


@pytest.fixture(scope="module")
def variant(env) -> IKGVariant:
    """A 2-hop question whose IKG-20% view hides its first hop, and whose text search for that hop shows a passage
    naming both of its entities (the tool's passages are cut, so not every hidden fact is readable there)."""
    graph = env.indexes["cs"].graph
    for qa in two_hop_walks(graph):
        if len(graph.neighbor_names(qa.path[1])) > 5:
            continue
        view = make_view(graph, qa.qa_id, qa.path_edges, 0.2)
        fact = view.facts[0]
        said = env.call("web_search", {"query": fact.query()}).text
        if fact.triple == qa.path_edges[0].triple() and fetched_facts(said, [fact]):
            return IKGVariant(qa, view, "text")
    raise AssertionError("no suitable 2-hop question in the cs demo graph")


def switching_teacher(variant: IKGVariant):
    """Asks the graph for the first hop; on "No information" searches the text and takes the hop's tail only when a
    passage names it; then the graph again for the second hop, and the answer its reply lists."""
    first, second = variant.qa.path_edges

    def reply(body: dict[str, Any]) -> str:
        msgs = body["messages"]
        n = sum(1 for m in msgs if m.get("role") == "assistant")
        last = str(msgs[-1]["content"]) if n else ""
        if n == 0:
            return call("neighbor_search", entity=first.head, relation=first.relation)
        if n == 1:
            return call("web_search", query=f"{first.head} {first.relation}") if "No information" in last else "?"
        if n == 2:
            mid = first.tail if first.tail in last else "unknown"
            return call("neighbor_search", entity=mid, relation=second.relation)
        return f"<answer>{second.tail if second.tail in last else 'unknown'}</answer>"

    return reply


def teacher(fake, tmp_path, **cfg: Any) -> IKGTeacher:
    return IKGTeacher(make_gateway(fake, tmp_path), DistillConfig(**{"n_rollouts": 1, **cfg}), run_id="run-t")


async def test_a_rollout_that_reads_the_hidden_fact_in_the_text_is_kept_and_shows_the_switch(
        fake_llm, tmp_path, env, variant):
    fake_llm.add(reply=switching_teacher(variant))
    seen = viewed_environment(env, variant.view, "cs")
    traj = await ikg_rollout(variant, seen, teacher(fake_llm, tmp_path))
    assert traj.status == "accepted", traj.detail
    assert traj.kind == "rollouts" and traj.final_answer == variant.qa.answer and traj.qa_id == variant.qa.qa_id
    assert "returned the hidden fact" in traj.detail and str(variant.view.facts[0].triple) in traj.detail
    # Its own id: neither the question's complete-graph rollout nor the variant's template.
    assert traj.trajectory_id == make_trajectory_id(variant.view.view_id, "rollouts", 0)
    assert traj.trajectory_id not in (make_trajectory_id(variant.qa.qa_id, "rollouts", 0), ikg_trajectory_id(variant.view))
    assert shows_the_switch(traj)
    calls = [c["function"]["name"] for m in traj.messages for c in m.get("tool_calls") or []]
    assert calls == ["neighbor_search", "web_search", "neighbor_search"] and traj.tools == list(IKG_TEMPLATE_TOOLS)
    # The teacher was offered the text tool next to the KG tools.
    system = fake_llm.requests[0].json["messages"][0]["content"]
    assert '"name": "web_search"' in system and '"name": "neighbor_search"' in system


def scripted(fake, replies: list[str]) -> None:
    fake.add(reply=lambda body: replies[min(sum(m.get("role") == "assistant" for m in body["messages"]),
                                            len(replies) - 1)])


async def test_a_right_answer_that_never_read_the_hidden_fact_is_rejected_with_its_reason(
        fake_llm, tmp_path, env, variant):
    qa, seen = variant.qa, viewed_environment(env, variant.view, "cs")
    first, second = qa.path_edges
    no_info = call("neighbor_search", entity=first.head, relation=first.relation)
    runs = {
        # straight from memory
        "memory": [f"<answer>{qa.answer}</answer>"],
        # the graph says it has no information; the teacher walks on from the hidden hop's tail it knew
        "guessed hop": [no_info, call("neighbor_search", entity=first.tail, relation=second.relation),
                        f"<answer>{qa.answer}</answer>"],
    }
    for name, replies in runs.items():
        fake_llm.reset()
        scripted(fake_llm, replies)
        traj = await ikg_rollout(variant, seen, teacher(fake_llm, tmp_path))
        assert traj.status == "rejected", name
        assert traj.reject_reason == "hidden_fact_not_fetched", (name, traj.reject_reason, traj.detail)
        assert traj.detail.startswith(f"answered {qa.answer!r} without reading a hidden fact"), traj.detail
    # The complete-graph rules still come first.
    fake_llm.reset()
    scripted(fake_llm, [no_info, "<answer>Somewhere else</answer>"])
    wrong = await ikg_rollout(variant, seen, teacher(fake_llm, tmp_path))
    assert wrong.reject_reason == "wrong_answer"


def test_fetched_facts_reads_provenance_or_both_names(variant):
    fact = variant.view.facts[0]
    line = f"1. Doc [chunk-9]: {fact.head} and then {fact.tail}."
    assert fetched_facts(f'Passages for "q", best first (1):\n{line}', [fact]) == [fact]
    assert fetched_facts(f"Passages for \"{fact.head} {fact.tail}\" (1):\n1. Doc [chunk-9]: {fact.head} only.", [fact]) == []
    # a title naming the other end is not the fact stated (the passage's text is what the model reads)
    assert fetched_facts(f"1. All about {fact.tail} [chunk-9]: {fact.head} only.", [fact]) == []
    with_source = type(fact)(fact.head, fact.relation, fact.tail, fact.triple, ("chunk-7",))
    assert fetched_facts(line, [with_source]) == []  # names alone do not count when the fact has provenance
    assert fetched_facts(line.replace("chunk-9", "chunk-7"), [with_source]) == [with_source]


def cot_reply(think: str, answer: str):
    return lambda body: f"<think>\n{think}\n</think>\n<answer>[{json.dumps(answer)}]</answer>"


async def test_long_cot_in_the_view_shows_passages_and_must_use_the_fact_read_there(fake_llm, tmp_path, env, variant):
    qa, seen = variant.qa, viewed_environment(env, variant.view, "cs")
    first, second = qa.path_edges
    hidden = " ".join(first.triple())
    visible = f"The triple ({second.triple()[0]}, {second.triple()[1]}, {second.triple()[2]}) gives the answer."
    fake_llm.add(reply=cot_reply(f"No triple leads on from {qa.path[0]}. The passage says {hidden}. {visible}",
                                 qa.answer), times=1)
    traj = await ikg_cot(variant, env.indexes["cs"].graph, seen, teacher(fake_llm, tmp_path))
    assert traj.status == "accepted", traj.detail
    context = traj.messages[1]["content"]
    assert "Text passages:" in context and "Passages for" in context
    triples = context.split("Triples:\n")[1].split("Text passages:")[0]
    assert f"({', '.join(first.triple())})" not in triples  # the hidden triple is not shown as a triple
    assert f"({', '.join(second.triple())})" in triples
    assert "Correct answer" not in context and traj.messages[-1]["content"] == f"<answer>{json.dumps([qa.answer])}</answer>"
    # The same answer and coverage of the visible hop, without a word of the fact read in the text: rejected.
    fake_llm.add(reply=cot_reply(f"I start at {qa.path[0]}. {visible}", qa.answer), times=1)
    bad = await ikg_cot(variant, env.indexes["cs"].graph, seen, teacher(fake_llm, tmp_path, min_path_coverage=0.5))
    assert bad.reject_reason == "hidden_fact_not_fetched" and "does not use the fact" in bad.detail


def test_teacher_trajectories_run_only_when_configured_and_the_teacher_writes(fake_llm, tmp_path, env, variant):
    remote = {"base_url": fake_llm.base_url, "model": "fake-model", "max_retries": 0, "timeout_s": 5.0}
    assert ikg_teacher_kinds(load_settings(data_dir=tmp_path)) == ((), None)
    kinds, note = ikg_teacher_kinds(load_settings(data_dir=tmp_path, ikg={"teacher": ["cot", "rollouts"]}))
    assert kinds == () and "template writer" in note  # the embedded teacher: templates only
    settings = load_settings(data_dir=tmp_path, ikg={"teacher": ["rollouts"], "n_rollouts": 1},
                             roles={"teacher": remote}, cache={"mode": "off"})
    assert ikg_teacher_kinds(settings) == (("rollouts",), None)

    graph = env.indexes["cs"].graph
    fake_llm.add(reply=switching_teacher(variant))
    made = ikg_trajectories([variant], env, graph, settings, run_id="run-e")
    [item] = made.items
    assert item.trajectory.kind == "rollouts" and item.trajectory.accepted and item.view == variant.view
    assert made.lines == ["IKG cs IKG-20% teacher rollouts: 1/1 accepted"]
    # The export's per-level line names the exported trajectory's kind, not "template".
    from tasks.distill.ikg_rollouts import summary_lines
    from tasks.env.ikg import IKGBuild

    build = IKGBuild("cs", (variant,), levels=(variant.view.level,))
    assert summary_lines(build, made.items)[0].endswith("; 1 trajectories (rollouts 1)")
    fake_llm.reset()
    scripted(fake_llm, [f"<answer>{variant.qa.answer}</answer>"])
    fallback = ikg_trajectories([variant], env, graph, settings.model_copy(update={"seed": 1}), run_id="run-e")
    assert fallback.items[0].trajectory.kind == "template" and fallback.items[0].trajectory.accepted
    assert fallback.lines == ["IKG cs IKG-20% teacher rollouts: 0/1 accepted (rejected: hidden_fact_not_fetched 1)"]
    assert summary_lines(build, fallback.items)[0].endswith("; 1 template trajectories")
    off = ikg_trajectories([variant], env, graph, load_settings(data_dir=tmp_path))
    assert off.lines == [] and off.items[0].trajectory.kind == "template"
