"""The IKG setting end to end on the demo graph: the KG tools on a view, the agent loop switching to text search on
the fake endpoint, and Graph-RFT's reward scoring the exported IKG row in verl's calling convention."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from schemas.qa import QA, GoldPath
from schemas.tools import KG_TOOLS, tool_schema
from tasks.corpus.ingest import ingest_text_folders
from tasks.env.agent_loop import AgentConfig, run_agent
from tasks.env.ikg import IKGView, make_view, viewed_environment, with_setting
from tasks.env.index import HashingEmbedder
from tasks.env.text_search import MAX_QUERY_CHARS, TextIndex, chunks_from_ingest
from tasks.env.tools import ToolEnvironment
from tasks.export.rows import rl_row
from tasks.graph.importers import read_triples
from tasks.graph.kg import KnowledgeGraph
from tasks.qa.context import path_edges
from tests.test_agent_loop import make_gateway
from training.verl_reward import compute_score

DEMO = Path(__file__).resolve().parent.parent / "flows" / "demo"
TOOLS = ("relation_search", "neighbor_search", "web_search")


def cs_environment(tools: Sequence[str]) -> ToolEnvironment:
    """The cs demo graph with the cs demo corpus as its text, offering ``tools``."""
    graph = read_triples(DEMO / "graphs" / "cs.jsonl", "cs").to_graph()
    text = TextIndex(chunks_from_ingest(ingest_text_folders(DEMO / "corpus" / "cs"), "cs"), HashingEmbedder(), name="cs")
    return ToolEnvironment.from_graphs([graph], HashingEmbedder(), tools=tools, texts={"cs": text})


@pytest.fixture(scope="module")
def env() -> ToolEnvironment:
    return cs_environment(TOOLS)


def two_hop_walks(graph: KnowledgeGraph) -> Iterator[QA]:
    """A question over every walk start -> mid -> end of ``graph`` with no relation between start and end, in
    the graph's node order."""
    for start in graph.nodes():
        for mid in graph.neighbor_names(start):
            for end in graph.neighbor_names(mid):
                if end == start or graph.has_edge(start, end):
                    continue
                path = [start, mid, end]
                yield QA(qa_id=f"qa-{start}-{end}", domain=graph.domain, seed=start, hop_class="1-2", path=path,
                         path_edges=path_edges(graph, path), question=f"What is reached from {start}?", answer=end)


def two_hop_question(env: ToolEnvironment) -> tuple[QA, IKGView]:
    """A 2-hop question whose IKG-20% view hides its first hop, and whose hidden fact the cs texts state."""
    graph = env.indexes["cs"].graph
    for qa in two_hop_walks(graph):
        start, mid = qa.path[0], qa.path[1]
        view = make_view(graph, qa.qa_id, qa.path_edges, 0.2)
        first = qa.path_edges[0]
        said = env.call("web_search", {"query": f"{start} {first.relation}"}).text
        if view.facts[0].triple == first.triple() and mid in said and len(graph.neighbor_names(mid)) < 6:
            return qa, view
    raise AssertionError("no suitable 2-hop question in the cs demo graph")


def call(name: str, **arguments: str) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def test_kg_tools_on_a_view_answer_as_graph_rft_does(env):
    qa, view = two_hop_question(env)
    first = qa.path_edges[0]
    seen = viewed_environment(env, view, "cs")
    complete = env.call("neighbor_search", {"entity": first.head, "relation": first.relation})
    assert complete.ok and first.tail in complete.text
    missing = seen.call("neighbor_search", {"entity": first.head, "relation": first.relation})
    assert not missing.ok and missing.error_kind == "no_match"
    assert missing.text.startswith(f'No information in the KG about {first.head} by "{first.relation}".')
    assert missing.text.endswith("use the web_search tool.") and first.tail not in missing.text
    # The kept hop is untouched, and the underlying environment still shows the hidden fact.
    second = qa.path_edges[1]
    assert seen.call("neighbor_search", {"entity": second.head, "relation": second.relation}).ok
    assert env.call("neighbor_search", {"entity": first.head, "relation": first.relation}) == complete


def test_text_tool_contract_and_bad_queries(env):
    assert set(tool_schema("web_search")["function"]["parameters"]["required"]) == {"query"}
    assert tool_schema("text_search")["function"]["parameters"] == tool_schema("web_search")["function"]["parameters"]
    assert "web_search" not in KG_TOOLS and "web_search" not in ToolEnvironment(env.indexes).tool_names
    alias = ToolEnvironment(env.indexes, tools=("text_search",), texts=env.texts)
    assert alias.call("text_search", {"query": "Unix Bell Labs"}) == env.call("web_search", {"query": "Unix Bell Labs"})
    for query, message in (("", "the query is empty"), ("q" * 100_000, f"the limit is {MAX_QUERY_CHARS}")):
        obs = env.call("web_search", {"query": query})
        assert not obs.ok and obs.error_kind == "bad_arguments" and message in obs.text and "\n" not in obs.text
    no_text = ToolEnvironment(env.indexes, tools=("web_search",))
    obs = no_text.call("web_search", {"query": "Unix"})
    assert not obs.ok and obs.text == 'No texts are loaded for the "cs" graph; use the graph tools.'


def scripted_agent(qa: QA):
    """A policy that reads its observations: graph first; on "No information" it searches the text for the head
    and relation, takes the hop's tail only if a passage names it, then goes on in the graph."""
    first, second = qa.path_edges

    def reply(body: dict[str, Any]) -> str:
        msgs = body["messages"]
        n = sum(1 for m in msgs if m.get("role") == "assistant")
        last = msgs[-1]["content"] if n else ""
        if n == 0:
            return call("neighbor_search", entity=first.head, relation=first.relation)
        if n == 1:
            if "No information in the KG" not in last:
                return "<answer>the graph was complete</answer>"
            return call("web_search", query=f"{first.head} {first.relation}")
        if n == 2:
            mid = first.tail if re.search(re.escape(first.tail), last) else "unknown"
            return call("neighbor_search", entity=mid, relation=second.relation)
        answer = second.tail if second.tail in last else "unknown"
        return f"<answer>{answer}</answer>"

    return reply


async def test_the_agent_switches_to_text_search_on_an_ikg_question(fake_llm, tmp_path, env):
    qa, view = two_hop_question(env)
    fake_llm.add(reply=scripted_agent(qa))
    seen = viewed_environment(env, view, "cs")
    run = await run_agent(make_gateway(fake_llm, tmp_path), seen, qa.question, "cs", AgentConfig(tools=TOOLS))
    assert run.end_reason == "answer" and run.final_answer == qa.answer
    assert [r.name for r in run.tool_calls] == ["neighbor_search", "web_search", "neighbor_search"]
    no_info, passages, graph_again = run.tool_calls
    assert no_info.observation.startswith("No information in the KG") and not no_info.ok
    assert passages.ok and qa.path[1] in passages.observation and passages.arguments["graph_type"] == "cs"
    assert graph_again.ok and qa.answer in graph_again.observation
    # On the complete graph the same policy never needs the text.
    fake_llm.add(reply=scripted_agent(qa))
    full = await run_agent(make_gateway(fake_llm, tmp_path), env, qa.question, "cs", AgentConfig(tools=TOOLS))
    assert [r.name for r in full.tool_calls] == ["neighbor_search"] and full.final_answer == "the graph was complete"


def transcript(run) -> str:
    """The rollout as verl hands it to the reward: assistant turns and tool responses in one string."""
    return "\n".join(m["content"] for m in run.messages[2:])


async def test_graph_rft_reward_scores_an_exported_ikg_row_in_verls_convention(fake_llm, tmp_path, env):
    qa, view = two_hop_question(env)
    gold = [GoldPath(qa_id=qa.qa_id, rank=0, path=qa.path, triples=[e.triple() for e in qa.path_edges])]
    row = with_setting(rl_row(qa, gold, 0, TOOLS), view)
    extra = {**row["extra_info"], "reward": "graph_rft"}
    truth = row["reward_model"]["ground_truth"]
    assert json.loads(truth)["kg_setting"] == "incomplete" and extra["ikg_level"] == 0.2
    assert extra["hidden_triples"] == [list(qa.path_edges[0].triple())]
    assert {kw["create_kwargs"]["view_id"] for kw in extra["tools_kwargs"].values()} == {view.view_id}

    fake_llm.add(reply=scripted_agent(qa))
    run = await run_agent(make_gateway(fake_llm, tmp_path), viewed_environment(env, view, "cs"), qa.question, "cs",
                          AgentConfig(tools=TOOLS))
    solution = "<think>The graph lacks the first hop, so I read it in the text.</think>\n" + transcript(run)
    scored = compute_score(row["data_source"], solution, truth, extra)
    assert scored["score"] >= 0.1 and scored["format_ok"] == 1
    # Malformed (no <think>): eq. 8's retrieval credit and penalty decide. An answer-free web search on an
    # incomplete graph is penalised; the same response on the complete graph is not.
    bare = "\n".join(m["content"] for m in run.messages[2:5])  # the no-information reply and the search, no answer
    complete_truth = json.dumps({**json.loads(truth), "kg_setting": "complete"})
    assert compute_score(row["data_source"], bare, truth, extra)["score"] == pytest.approx(-0.1)
    assert compute_score(row["data_source"], bare, complete_truth, extra)["score"] == 0.0
    assert compute_score(row["data_source"], bare + f"\n<web_information>{qa.answer}</web_information>", truth,
                         extra)["score"] == pytest.approx(0.1)
