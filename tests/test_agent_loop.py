"""The multi-turn tool loop against the loopback fake endpoint: every way a run can end, both call styles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.client import ChatResult, LLMGateway
from testing.fake import Fault
from schemas.config import load_settings
from schemas.tools import tool_schema, tool_schemas
from tasks.env.agent_loop import AgentConfig, build_system_prompt, run_agent, run_agents
from tasks.graph.importers import read_triples
from tasks.env.index import HashingEmbedder
from tasks.env.tools import ToolEnvironment

GRAPHS = Path(__file__).resolve().parent.parent / "flows" / "demo" / "graphs"
QUESTION = "Which college did the author of On Computable Numbers study at?"

MATCH = '<tool_call>\nentity_matcher(node_name="On Computable Numbers", graph_type="cs")\n</tool_call>'
NODE = '<tool_call>\n{"name": "node_info", "arguments": {"node_name": "Alan Turing", "graph_type": "cs"}}\n</tool_call>'
ANSWER = "The author is Alan Turing.\n<answer>King's College, Cambridge</answer>"


@pytest.fixture(scope="module")
def env() -> ToolEnvironment:
    graphs = [read_triples(GRAPHS / f"{d}.jsonl", d).to_graph() for d in ("cs", "history")]
    return ToolEnvironment.from_graphs(graphs, HashingEmbedder())


def make_gateway(fake, tmp_path, max_retries: int = 0) -> LLMGateway:
    role = {"base_url": fake.base_url, "model": "fake-model", "max_retries": max_retries, "timeout_s": 5.0}
    settings = load_settings(data_dir=tmp_path, roles={"teacher": role, "policy": role}, cache={"mode": "off"})
    return LLMGateway(settings, backoff_base_s=0.01, backoff_cap_s=0.02)


def script(fake, replies: list[str], **responder: Any) -> None:
    """Reply ``replies[n]`` to a request holding ``n`` assistant messages (the last reply repeats)."""

    def reply(body: dict[str, Any]) -> str:
        n = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        return replies[min(n, len(replies) - 1)]

    fake.add(reply=reply, **responder)


def sent_messages(fake, i: int) -> list[dict[str, Any]]:
    return fake.requests[i].json["messages"]


async def test_answer_on_round_two(fake_llm, tmp_path, env):
    script(fake_llm, [MATCH, ANSWER], reasoning="I should look the paper up first.")
    run = await run_agent(make_gateway(fake_llm, tmp_path), env, QUESTION, "cs")

    assert run.end_reason == "answer" and run.final_answer == "King's College, Cambridge"
    assert run.rounds == 1 and run.generations == 2 and run.repeated_calls == 0 and run.error is None
    assert [m["role"] for m in run.messages] == ["system", "user", "assistant", "user", "assistant"]
    expected_obs = env.call("entity_matcher", {"node_name": "On Computable Numbers", "graph_type": "cs"}).text
    assert run.messages[3]["content"] == f"<tool_response>\n{expected_obs}\n</tool_response>"
    assert run.messages[2]["content"] == MATCH  # reasoning is not in the messages...
    assert run.reasoning == ["I should look the paper up first."] * 2  # ...it is kept beside them
    (rec,) = run.tool_calls
    assert (rec.round, rec.name, rec.style, rec.ok) == (1, "entity_matcher", "python", True)
    assert rec.arguments == {"node_name": "On Computable Numbers", "graph_type": "cs"}
    assert rec.observation == expected_obs
    # What the endpoint saw: the per-round token cap, no API tools in the text style, the observation.
    body = fake_llm.requests[1].json
    assert body["max_tokens"] == 3000 and "tools" not in body
    assert sent_messages(fake_llm, 1)[-1]["content"].startswith("<tool_response>\nEntities matching")
    assert run.tokens.completion == sum(run.tokens.per_round) and len(run.tokens.per_round) == 2
    assert run.tokens.prompt > 0


async def test_multi_hop_with_both_text_styles(fake_llm, tmp_path, env):
    script(fake_llm, [MATCH, NODE, ANSWER])
    run = await run_agent(make_gateway(fake_llm, tmp_path), env, QUESTION, "cs")
    assert run.end_reason == "answer" and run.rounds == 2
    assert [(r.name, r.style) for r in run.tool_calls] == [("entity_matcher", "python"), ("node_info", "json")]
    assert run.tool_calls[1].observation.startswith("Entity: Alan Turing\n")
    assert "King's College, Cambridge" in run.messages[5]["content"]


async def test_round_limit(fake_llm, tmp_path, env):
    calls = [f'<tool_call>entity_matcher(node_name="paper {i}", graph_type="cs")</tool_call>' for i in range(10)]
    script(fake_llm, calls)
    run = await run_agent(make_gateway(fake_llm, tmp_path), env, QUESTION, "cs", AgentConfig(max_rounds=3))
    assert run.end_reason == "round_limit" and run.final_answer is None
    assert run.rounds == 3 and run.generations == 4 and len(run.tool_calls) == 3
    assert run.messages[-1] == {"role": "assistant", "content": calls[3]}  # the 4th call is recorded, not run
    assert fake_llm.calls() == 4


async def test_default_limits_are_seven_rounds(fake_llm, tmp_path, env):
    script(fake_llm, [f'<tool_call>search(entity="x{i}")</tool_call>' for i in range(20)])
    run = await run_agent(make_gateway(fake_llm, tmp_path), env, QUESTION, "cs", AgentConfig(tools=("search",)))
    assert run.end_reason == "round_limit" and run.rounds == 7 and run.generations == 8
    # graph_type left out of a Graph-RFT/KG-Hopper call is filled with the run's graph.
    assert run.tool_calls[0].arguments == {"entity": "x0", "graph_type": "cs"}
    assert run.tool_calls[0].error_kind == "unknown_entity"


async def test_token_limit_on_truncated_output(fake_llm, tmp_path, env):
    fake_llm.add(reply=MATCH, times=1)
    fake_llm.add(reply="Let me reason about this at length. " * 20 + ANSWER, fault=Fault(truncated=True))
    run = await run_agent(make_gateway(fake_llm, tmp_path), env, QUESTION, "cs")
    assert run.end_reason == "token_limit" and run.final_answer is None
    assert run.rounds == 1 and "cut off" in (run.error or "")
    last = run.messages[-1]
    assert last["role"] == "assistant" and last["content"].startswith("Let me reason")  # the partial reply is kept
    assert "<answer>" not in last["content"]


async def test_token_limit_on_over_budget_reply(fake_llm, tmp_path, env):
    # The fake ignores max_tokens (as some servers do): the loop enforces the budget itself.
    script(fake_llm, ["word " * 50 + ANSWER])
    run = await run_agent(
        make_gateway(fake_llm, tmp_path), env, QUESTION, "cs", AgentConfig(max_tokens_per_round=20)
    )
    assert run.end_reason == "token_limit" and run.final_answer is None
    assert "over the budget of 20" in (run.error or "")
    assert fake_llm.requests[0].json["max_tokens"] == 20


async def test_endpoint_error_ends_the_run(fake_llm, tmp_path, env):
    script(fake_llm, [MATCH, ANSWER])
    fake_llm.set_fault(Fault(status=500, times=None))
    run = await run_agent(make_gateway(fake_llm, tmp_path, max_retries=1), env, QUESTION, "cs")
    assert run.end_reason == "error" and run.generations == 1 and run.rounds == 0
    assert "server error 500" in (run.error or "")
    assert [m["role"] for m in run.messages] == ["system", "user"]


async def test_error_after_a_tool_round_keeps_the_conversation(fake_llm, tmp_path, env):
    fake_llm.add(reply=MATCH, times=1)
    fake_llm.add(reply="x", fault=Fault(status=400))
    run = await run_agent(make_gateway(fake_llm, tmp_path), env, QUESTION, "cs")
    assert run.end_reason == "error" and run.rounds == 1 and len(run.tool_calls) == 1
    assert run.messages[-1]["content"].startswith("<tool_response>")


async def test_repeated_calls_are_counted(fake_llm, tmp_path, env):
    same_python = '<tool_call>node_info(node_name="Alan Turing", graph_type="cs")</tool_call>'
    same_positional = "<tool_call>node_info('Alan Turing', 'cs')</tool_call>"
    script(fake_llm, [same_python, NODE, same_positional, MATCH, ANSWER])
    run = await run_agent(make_gateway(fake_llm, tmp_path), env, QUESTION, "cs")
    assert run.end_reason == "answer" and run.rounds == 4
    assert run.repeated_calls == 2
    assert [r.repeated for r in run.tool_calls] == [False, True, True, False]
    assert run.tool_calls[1].observation == run.tool_calls[0].observation  # repeats still run


async def test_no_tool_call_is_nudged_once(fake_llm, tmp_path, env):
    script(fake_llm, ["I am not sure.", "Still thinking."])
    run = await run_agent(make_gateway(fake_llm, tmp_path), env, QUESTION, "cs")
    assert run.end_reason == "no_tool_call" and run.nudges == 1 and run.generations == 2 and run.rounds == 0
    nudge = run.messages[3]
    assert nudge["role"] == "user" and "neither a tool call nor a final answer" in nudge["content"]


async def test_nudge_then_answer(fake_llm, tmp_path, env):
    script(fake_llm, ["Let me think.", ANSWER])
    run = await run_agent(make_gateway(fake_llm, tmp_path), env, QUESTION, "cs")
    assert run.end_reason == "answer" and run.nudges == 1 and run.final_answer == "King's College, Cambridge"
    no_nudge = await run_agent(make_gateway(fake_llm, tmp_path), env, QUESTION, "cs", AgentConfig(max_nudges=0))
    assert no_nudge.end_reason == "no_tool_call" and no_nudge.generations == 1


async def test_bad_calls_become_observations_and_the_run_goes_on(fake_llm, tmp_path, env):
    script(
        fake_llm,
        [
            '<tool_call>node_info(node_name="Alan Turing"</tool_call>',  # malformed
            '<tool_call>search(entity="Alan Turing")</tool_call>',  # not offered in this run
            '<tool_call>node_info(node_name="Julius Caesar", graph_type="history")</tool_call>',  # other graph
            '<tool_call>node_info(node_name="Alan Turnig", graph_type="cs")</tool_call>',  # misspelled
            ANSWER,
        ],
    )
    run = await run_agent(make_gateway(fake_llm, tmp_path), env, QUESTION, "cs")
    assert run.end_reason == "answer" and run.rounds == 4
    assert [r.error_kind for r in run.tool_calls] == ["parse_error", "unknown_tool", "bad_arguments", "unknown_entity"]
    assert 'This question uses the "cs" graph' in run.tool_calls[2].observation
    assert "Closest entities: Alan Turing" in run.tool_calls[3].observation


async def test_answer_wins_over_a_tool_call_in_the_same_reply(fake_llm, tmp_path, env):
    script(fake_llm, [MATCH + "\n<answer>Bletchley Park</answer>"])
    run = await run_agent(make_gateway(fake_llm, tmp_path), env, QUESTION, "cs")
    assert run.end_reason == "answer" and run.final_answer == "Bletchley Park" and run.tool_calls == []


async def test_only_one_call_per_round_runs(fake_llm, tmp_path, env):
    script(fake_llm, [MATCH + NODE, ANSWER])
    run = await run_agent(make_gateway(fake_llm, tmp_path), env, QUESTION, "cs")
    assert [r.error_kind for r in run.tool_calls] == [None, "skipped"]
    assert run.messages[3]["content"].count("<tool_response>") == 2


async def test_api_style_sends_tools_and_reads_text_fallback(fake_llm, tmp_path, env):
    script(fake_llm, [MATCH, ANSWER])
    run = await run_agent(make_gateway(fake_llm, tmp_path), env, QUESTION, "cs", AgentConfig(style="api"))
    body = fake_llm.requests[0].json
    assert [t["function"]["name"] for t in body["tools"]] == ["entity_matcher", "node_info"]
    assert body["tools"] == tool_schemas(["entity_matcher", "node_info"])  # the tool contract, as every path shows it
    assert "<tools>" not in body["messages"][0]["content"]
    # A model that writes <tool_call> text anyway is still understood.
    assert run.end_reason == "answer" and run.rounds == 1 and run.style == "api"


class StubGateway:
    """Returns scripted ChatResults, including API tool_calls (the loopback fake only produces content)."""

    def __init__(self, results: list[ChatResult]) -> None:
        self.results = results
        self.requests: list[dict[str, Any]] = []

    async def chat(self, role, messages, *, params=None, tools=None, use_cache=True):
        self.requests.append({"role": role, "messages": [dict(m) for m in messages], "tools": tools, "params": params})
        return self.results[len(self.requests) - 1]


async def test_api_tool_calls_get_tool_messages_with_ids(env):
    args = json.dumps({"node_name": "Alan Turing", "graph_type": "cs"})
    gw = StubGateway(
        [
            ChatResult(role="policy", text="", reasoning="Look him up.", completion_tokens=12, tool_calls=[
                {"id": "call_a", "name": "node_info", "arguments": args},
                {"id": "call_b", "name": "teleport", "arguments": "{}"},
            ]),
            ChatResult(role="policy", text="<answer>King's College, Cambridge</answer>", completion_tokens=8),
        ]
    )  # fmt: skip
    config = AgentConfig(role="policy", style="api", max_calls_per_round=2, params={"temperature": 0.6})
    run = await run_agent(gw, env, QUESTION, "cs", config)
    assert run.end_reason == "answer" and run.rounds == 1 and run.role == "policy"
    assistant, tool_a, tool_b = run.messages[2:5]
    assert assistant["content"] is None
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_a", "call_b"]
    assert assistant["tool_calls"][0]["function"] == {"name": "node_info", "arguments": args}
    assert tool_a == {"role": "tool", "tool_call_id": "call_a", "content": env.call("node_info", json.loads(args)).text}
    assert tool_b["tool_call_id"] == "call_b" and tool_b["content"].startswith("Unknown tool 'teleport'.")
    assert [r.style for r in run.tool_calls] == ["api", "api"]
    assert run.reasoning == ["Look him up.", None]
    assert gw.requests[0]["params"] == {"temperature": 0.6, "max_tokens": 3000}
    assert gw.requests[0]["tools"] is not None and gw.requests[1]["messages"][-1]["role"] == "tool"
    assert run.tokens.per_round == [12, 8]


async def test_earlier_turns_go_back_with_their_reasoning_when_asked(fake_llm, tmp_path, env):
    """keep_reasoning: each assistant turn is sent back behind its <think> block, as SFT rows and RL rollouts hold
    earlier turns; the gateway had separated the reasoning from the content."""
    script(fake_llm, [MATCH, ANSWER], reasoning="I should look the paper up first.")
    run = await run_agent(make_gateway(fake_llm, tmp_path), env, QUESTION, "cs", AgentConfig(keep_reasoning=True))
    assert run.end_reason == "answer"
    sent = sent_messages(fake_llm, 1)[2]
    assert sent == {"role": "assistant", "content": "<think>\nI should look the paper up first.\n</think>\n\n" + MATCH}
    assert run.reasoning == ["I should look the paper up first."] * 2


async def test_api_turns_keep_their_reasoning_beside_the_calls(env):
    args = json.dumps({"node_name": "Alan Turing", "graph_type": "cs"})
    gw = StubGateway([
        ChatResult(role="policy", text="", reasoning="  Look him up.\n", completion_tokens=5,
                   tool_calls=[{"id": "call_a", "name": "node_info", "arguments": args}]),
        ChatResult(role="policy", text="<answer>King's College, Cambridge</answer>", completion_tokens=3),
    ])  # fmt: skip
    run = await run_agent(gw, env, QUESTION, "cs", AgentConfig(role="policy", style="api", keep_reasoning=True))
    assistant = gw.requests[1]["messages"][2]
    # What Qwen3's chat template reads back as this turn's reasoning, before its <tool_call>: the SFT rows' layout.
    assert assistant["content"] == "<think>\nLook him up.\n</think>\n\n"
    assert assistant["tool_calls"][0]["function"] == {"name": "node_info", "arguments": args}
    assert run.end_reason == "answer"
    # A turn without reasoning goes back as it came.
    gw = StubGateway([ChatResult(role="policy", text="", completion_tokens=5,
                                 tool_calls=[{"id": "c", "name": "node_info", "arguments": args}]),
                      ChatResult(role="policy", text="<answer>x</answer>", completion_tokens=3)])  # fmt: skip
    await run_agent(gw, env, QUESTION, "cs", AgentConfig(role="policy", style="api", keep_reasoning=True))
    assert gw.requests[1]["messages"][2]["content"] is None


async def test_run_agents_keeps_input_order(fake_llm, tmp_path, env):
    def reply(body):
        question = body["messages"][1]["content"]
        return f"<answer>{question.upper()}</answer>"

    fake_llm.add(reply=reply)
    runs = await run_agents(make_gateway(fake_llm, tmp_path), env, [(f"q{i}", "cs") for i in range(6)])
    assert [r.final_answer for r in runs] == [f"Q{i}" for i in range(6)]


def test_system_prompt_describes_tools_in_the_text_style(env):
    prompt = build_system_prompt(env, "cs")
    assert '"cs" knowledge graph' in prompt and "<tools>" in prompt and "at most 7 times" in prompt
    assert 'node_info(node_name="...", graph_type="cs")' in prompt
    assert json.dumps(tool_schema("node_info"), ensure_ascii=False) in prompt
    assert "<answer>" in prompt and "<think>" in prompt and "<tool_response>" in prompt
    json_prompt = build_system_prompt(env, "cs", AgentConfig(call_format="json", ask_for_think=False))
    assert '{"name": "node_info", "arguments": {"node_name": "...", "graph_type": "cs"}}' in json_prompt
    assert "<think>" not in json_prompt
    assert build_system_prompt(env, "cs", AgentConfig(system_prompt="custom")) == "custom"


@pytest.mark.parametrize(
    "kwargs",
    [{"max_rounds": -1}, {"max_tokens_per_round": 0}, {"max_nudges": -1}, {"max_calls_per_round": 0},
     {"tools": ()}, {"tools": ("teleport",)}],
)  # fmt: skip
def test_config_is_checked(kwargs):
    with pytest.raises(ValueError):
        AgentConfig(**kwargs)
