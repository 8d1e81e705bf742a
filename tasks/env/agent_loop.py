"""The multi-turn tool loop: a model answers a question by calling KG tools through the gateway.

One run (``run_agent``):

1. The conversation starts with a system prompt that describes the tools and the protocol, and the question.
2. Each generation is one gateway call (role ``teacher`` by default) capped at ``max_tokens_per_round`` tokens
   (Omne-R1: 3000, reasoning included).
3. A reply with an ``<answer>`` ends the run (``answer``), also when it contains a tool call too: the model
   has committed to an answer. A reply with tool calls makes a tool round: the calls run in the
   ``ToolEnvironment`` and their observations are appended; at most ``max_rounds`` tool rounds (Omne-R1: 7),
   and a call asked for after that ends the run unexecuted (``round_limit``).
4. A reply with neither is nudged once (``max_nudges``) with a reminder of the protocol; the next such reply
   ends the run (``no_tool_call``). A reply cut off by the token cap, or longer than it when the endpoint
   ignores ``max_tokens``, ends it (``token_limit``). An endpoint failure ends it (``error``).

So a run makes at most ``max_rounds + max_nudges + 1`` generations.

Two tool-call styles:

- ``text``: tools are listed in the system prompt and the model writes ``<tool_call>`` blocks (Python-call or
  hermes JSON); observations come back as a user message of ``<tool_response>`` blocks. This is what small
  and open models served without a tool parser do, and what the SFT data looks like.
- ``api``: tools are sent with the request and calls come back in ``tool_calls``; observations go back as
  ``tool`` messages with the call ids. A model in this style that still writes ``<tool_call>`` text is read
  as in the text style.

Identical calls (same tool and arguments, after positional arguments are bound) are executed again but
counted in ``AgentRun.repeated_calls`` (the Omne-R1 repetition penalty counts them).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from gateway.client import ChatResult
from schemas.tools import (
    OMNE_TOOLS,
    TOOL_SPECS,
    AgentRun,
    CallError,
    EndReason,
    Observation,
    TokenCounts,
    ToolCall,
    ToolCallRecord,
)
from tasks.env.tool_calls import (
    extract_answer,
    format_tool_response,
    parse_api_tool_calls,
    parse_tool_calls,
)


class ChatGateway(Protocol):
    """What the loop needs from ``gateway.client.LLMGateway``."""

    async def chat(
        self,
        role: str,
        messages: Sequence[dict[str, Any]],
        *,
        params: dict[str, Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
        use_cache: bool = True,
    ) -> ChatResult: ...


class ToolRunner(Protocol):
    """What the loop needs from ``tasks.env.tools.ToolEnvironment`` (or a client of the tool server)."""

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> Observation: ...

    def schemas(self, tools: Sequence[str] | None = None) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class AgentConfig:
    """How a run is driven. Defaults follow Omne-R1 (two tools, 7 rounds, 3000 tokens per round)."""

    role: str = "teacher"
    style: Literal["text", "api"] = "text"
    tools: tuple[str, ...] = OMNE_TOOLS
    max_rounds: int = 7
    max_tokens_per_round: int = 3000
    max_nudges: int = 1
    max_calls_per_round: int = 1
    #: How the system prompt shows a text-style call: Python-call (Omne-R1) or hermes JSON (Qwen templates).
    call_format: Literal["python", "json"] = "python"
    #: Ask the model to reason inside <think> before each step (leave off for models that think natively).
    ask_for_think: bool = True
    #: Send each assistant turn back with its reasoning as a leading ``<think>`` block, the way SFT rows and RL
    #: rollouts hold earlier turns (a checkpoint trained on think rows is evaluated in that context). Off, the
    #: endpoint's separated reasoning stays out of the conversation (it is kept in ``AgentRun.reasoning``).
    keep_reasoning: bool = False
    #: Extra sampling parameters for every generation (temperature, seed, ...); max_tokens is set per round.
    params: Mapping[str, Any] = field(default_factory=dict)
    #: Rejection sampling wants fresh samples for the same conversation: turn the gateway cache off there.
    use_cache: bool = True
    #: Replaces the built-in system prompt entirely when set.
    system_prompt: str | None = None

    def __post_init__(self) -> None:
        if self.max_rounds < 0:
            raise ValueError(f"max_rounds must be >= 0, got {self.max_rounds}")
        if self.max_tokens_per_round < 1:
            raise ValueError(f"max_tokens_per_round must be >= 1, got {self.max_tokens_per_round}")
        if self.max_nudges < 0:
            raise ValueError(f"max_nudges must be >= 0, got {self.max_nudges}")
        if self.max_calls_per_round < 1:
            raise ValueError(f"max_calls_per_round must be >= 1, got {self.max_calls_per_round}")
        unknown = [t for t in self.tools if t not in TOOL_SPECS]
        if unknown or not self.tools:
            raise ValueError(f"tools must be a non-empty subset of {list(TOOL_SPECS)}, got {list(self.tools)}")


# -- prompts ----------------------------------------------------------------------------------------------------------


def _example_call(tool: str, graph_type: str, call_format: str) -> str:
    spec = TOOL_SPECS[tool]
    args = {p: (graph_type if p == "graph_type" else "...") for p in spec.required}
    if call_format == "json":
        return json.dumps({"name": tool, "arguments": args}, ensure_ascii=False)
    return f"{tool}(" + ", ".join(f'{k}="{v}"' for k, v in args.items()) + ")"


def build_system_prompt(env: ToolRunner, graph_type: str, config: AgentConfig = AgentConfig()) -> str:
    """The system prompt for a run on ``graph_type`` (``config.system_prompt`` when set)."""
    if config.system_prompt is not None:
        return config.system_prompt
    think = (
        "First think about what you know and what you still need, inside <think> and </think>. Then "
        if config.ask_for_think
        else ""
    )
    act = "either call one tool or give the final answer." if config.ask_for_think else "Either call one tool or give the final answer."
    lines = [
        f'Answer the question by exploring the "{graph_type}" knowledge graph with the tools below. '
        "Proceed step by step.",
        "",
        f"In every step: {think}{act}",
    ]
    if config.style == "text":
        lines += [
            "- A tool call goes inside <tool_call> and </tool_call>. Make one call per step; its result comes "
            "back inside <tool_response> and </tool_response>.",
        ]
    else:
        lines += ["- Call tools through the function-calling interface, one call per step, and wait for the result."]
    lines += [
        "- Read each result, decide what is still missing, and continue until you can answer.",
        "- The final answer goes inside <answer> and </answer>: the entity's exact name as the graph writes it, "
        "and nothing else.",
        f"You may call tools at most {config.max_rounds} times. A call you already made returns the same result "
        "again, so do not repeat it.",
    ]
    if config.style == "text":
        schemas = env.schemas(list(config.tools))
        lines += [
            "",
            "# Tools",
            "The tools are described as JSON function signatures inside <tools></tools>:",
            "<tools>",
            *(json.dumps(s, ensure_ascii=False) for s in schemas),
            "</tools>",
            "",
            "Write a call in "
            + ("Python function-call style" if config.call_format == "python" else "JSON")
            + ", for example:",
            "<tool_call>",
            _example_call(config.tools[-1], graph_type, config.call_format),
            "</tool_call>",
        ]
    return "\n".join(lines)


def _nudge(config: AgentConfig) -> str:
    how = "inside <tool_call> and </tool_call>" if config.style == "text" else "through the function-calling interface"
    return (
        "Your last reply had neither a tool call nor a final answer. Call a tool "
        f"{how}, or give the final answer inside <answer> and </answer>."
    )


def initial_messages(env: ToolRunner, question: str, graph_type: str, config: AgentConfig = AgentConfig()) -> list[dict[str, Any]]:
    """The system prompt and the question: the conversation every run starts from."""
    return [
        {"role": "system", "content": build_system_prompt(env, graph_type, config)},
        {"role": "user", "content": question},
    ]


# -- the loop -----------------------------------------------------------------------------------------------------------


def _pin_graph(call: ToolCall, graph_type: str) -> ToolCall | Observation:
    """Fill a left-out optional ``graph_type`` with the run's graph, and refuse another graph: the schema the
    model saw allowed only this one, and answering from another graph would make a run ungrounded."""
    if "graph_type" not in TOOL_SPECS[call.name].parameters:
        return call
    given = call.arguments.get("graph_type")
    if given is None:
        return call.model_copy(update={"arguments": {**call.arguments, "graph_type": graph_type}})
    if given != graph_type:
        return Observation(
            text=f'This question uses the "{graph_type}" graph: call {call.name} again with graph_type="{graph_type}".',
            ok=False,
            error_kind="bad_arguments",
        )
    return call


def _with_reasoning(text: str, reasoning: str | None) -> str:
    """``text`` behind its reasoning in the block SFT rows write (``<think>\\n...\\n</think>\\n\\n``); Qwen3-style chat
    templates read that block back as the turn's reasoning."""
    thought = (reasoning or "").strip()
    return f"<think>\n{thought}\n</think>\n\n{text}" if thought else text


def _api_message(text: str, calls: list[ToolCall | CallError], raw_calls: list[dict[str, Any]]) -> dict[str, Any]:
    tool_calls = []
    for i, (call, raw) in enumerate(zip(calls, raw_calls)):
        args = raw.get("arguments")
        tool_calls.append(
            {
                "id": call.id or f"call_{i}",
                "type": "function",
                "function": {
                    "name": raw.get("name") or "",
                    "arguments": args if isinstance(args, str) else json.dumps(args or {}, ensure_ascii=False),
                },
            }
        )
    return {"role": "assistant", "content": text or None, "tool_calls": tool_calls}


async def run_agent(
    gateway: ChatGateway,
    env: ToolRunner,
    question: str,
    graph_type: str,
    config: AgentConfig = AgentConfig(),
) -> AgentRun:
    """Run the tool loop for one question (see the module docstring); never raises for endpoint or model
    problems, which end the run with ``end_reason`` ``error``/``token_limit``/``no_tool_call``."""
    messages = initial_messages(env, question, graph_type, config)
    schemas = env.schemas(list(config.tools)) if config.style == "api" else None
    params = {**config.params, "max_tokens": config.max_tokens_per_round}
    reasoning: list[str | None] = []
    records: list[ToolCallRecord] = []
    seen: set[str] = set()
    tokens = TokenCounts()
    rounds = generations = nudges = 0
    end: EndReason
    final_answer: str | None = None
    error: str | None = None

    while True:
        result = await gateway.chat(config.role, messages, params=params, tools=schemas, use_cache=config.use_cache)
        generations += 1
        tokens.prompt += result.prompt_tokens
        tokens.completion += result.completion_tokens
        tokens.per_round.append(result.completion_tokens)
        failure = result.failure
        if failure is not None and failure.kind != "truncated":
            end, error = "error", failure.message
            break
        text = result.text
        api_calls = list(result.tool_calls)
        calls: list[ToolCall | CallError] = (
            parse_api_tool_calls(api_calls, config.tools) if api_calls else parse_tool_calls(text, config.tools)
        )
        sent = _with_reasoning(text, result.reasoning) if config.keep_reasoning else text
        messages.append(_api_message(sent, calls, api_calls) if api_calls else {"role": "assistant", "content": sent})
        reasoning.append(result.reasoning)
        if failure is not None or result.completion_tokens > config.max_tokens_per_round:
            # Cut off by max_tokens, or longer than the budget on an endpoint that ignores max_tokens.
            end = "token_limit"
            error = failure.message if failure is not None else (
                f"the reply used {result.completion_tokens} tokens, over the budget of {config.max_tokens_per_round}"
            )
            break
        answer = extract_answer(text)
        if answer is not None:
            end, final_answer = "answer", answer
            break
        if not calls:
            if nudges < config.max_nudges:
                nudges += 1
                messages.append({"role": "user", "content": _nudge(config)})
                continue
            end = "no_tool_call"
            break
        if rounds >= config.max_rounds:
            end = "round_limit"
            break
        rounds += 1
        observations = await _run_round(env, calls, graph_type, config, rounds, seen, records)
        _append_observations(messages, bool(api_calls), observations)

    return AgentRun(
        question=question, graph_type=graph_type, style=config.style, role=config.role, messages=messages,
        reasoning=reasoning, tool_calls=records, rounds=rounds, generations=generations, nudges=nudges,
        end_reason=end, final_answer=final_answer, repeated_calls=sum(r.repeated for r in records), tokens=tokens,
        error=error,
    )  # fmt: skip


async def _run_round(
    env: ToolRunner,
    calls: list[ToolCall | CallError],
    graph_type: str,
    config: AgentConfig,
    round_: int,
    seen: set[str],
    records: list[ToolCallRecord],
) -> list[tuple[ToolCall | CallError, Observation]]:
    """One round's calls in order, each observed and appended to ``records`` (a call already in ``seen`` is
    marked repeated; beyond ``max_calls_per_round`` a call is skipped): each call with its observation."""
    observations: list[tuple[ToolCall | CallError, Observation]] = []
    for i, call in enumerate(calls):
        call, obs = await _observe(env, call, i, graph_type, config)
        is_repeat = False
        if isinstance(call, ToolCall) and i < config.max_calls_per_round:
            key = call.key()
            is_repeat = key in seen
            seen.add(key)
        records.append(
            ToolCallRecord(
                round=round_,
                name=call.name,
                arguments=call.arguments if isinstance(call, ToolCall) else {},
                style=call.style,
                call_id=call.id,
                ok=obs.ok,
                error_kind=obs.error_kind,
                observation=obs.text,
                repeated=is_repeat,
            )
        )
        observations.append((call, obs))
    return observations


async def _observe(
    env: ToolRunner, call: ToolCall | CallError, i: int, graph_type: str, config: AgentConfig
) -> tuple[ToolCall | CallError, Observation]:
    """The ``i``-th call of a round (its graph pinned) and what it returned: skipped past ``max_calls_per_round``,
    a parse error's observation, a refusal of another graph, or the tool's reply."""
    if i >= config.max_calls_per_round:
        obs = Observation(
            text=f"Skipped: only {config.max_calls_per_round} tool call(s) per step are run. Make one call at a time.",
            ok=False,
            error_kind="skipped",
        )
    elif isinstance(call, CallError):
        obs = call.observation()
    else:
        pinned = _pin_graph(call, graph_type)
        if isinstance(pinned, Observation):
            obs = pinned
        else:
            call = pinned
            # On a worker thread: a tool call (a graph lookup, maybe an embedding request) must not hold
            # up the event loop, which drives every other run's LLM calls too.
            obs = await asyncio.to_thread(env.call, call.name, call.arguments)
    return call, obs


def _append_observations(
    messages: list[dict[str, Any]], api: bool, observations: list[tuple[ToolCall | CallError, Observation]]
) -> None:
    """The round's observations as the next messages: one ``tool`` message a call for function-calling replies
    (matched to the assistant message's call ids), else one user message of ``<tool_response>`` blocks."""
    if api:
        tool_ids = [m["id"] for m in messages[-1]["tool_calls"]]
        for tool_id, (_, obs) in zip(tool_ids, observations):
            messages.append({"role": "tool", "tool_call_id": tool_id, "content": obs.text})
    else:
        messages.append({"role": "user", "content": "\n".join(format_tool_response(o.text) for _, o in observations)})


async def run_agents(
    gateway: ChatGateway,
    env: ToolRunner,
    questions: Sequence[tuple[str, str]],
    config: AgentConfig = AgentConfig(),
) -> list[AgentRun]:
    """``run_agent`` for each ``(question, graph_type)``, concurrently, results in input order. The gateway's
    per-endpoint limiter bounds how many generations are in flight at once."""
    return list(await asyncio.gather(*(run_agent(gateway, env, q, g, config) for q, g in questions)))


__all__ = [
    "AgentConfig",
    "ChatGateway",
    "ToolRunner",
    "build_system_prompt",
    "initial_messages",
    "run_agent",
    "run_agents",
]
