"""The row formats of an export and their checks: what one row of each config holds.

- ``qa``: a plain question with its gold paths and provenance (``qa_row``; the gold paths it carries:
  ``export_gold_paths``).
- ``sft`` / ``sft_nothink``: a LLaMA-Factory ShareGPT-with-tools row (``sharegpt_row``, its conversation
  ``sharegpt_conversations``), checked against LLaMA-Factory's rules (``validate_sharegpt``); ``SHAREGPT_COLUMNS``
  and ``SHAREGPT_TAGS`` are its ``dataset_info.json`` mapping.
- ``rl``: a verl RL row (``rl_row``, its rule reward ground truth ``rl_ground_truth``).
- ``messages``: OpenAI/Qwen messages with tool calls (``messages_row``, ``openai_messages``), checked for complete
  tool exchanges (``validate_messages``).

The system prompt of a tool-use row is ``tool_system_prompt``. ``EXPORT_CONFIGS`` names the configs and
``data_file`` the path of a config's split inside an export. Building, writing and verifying an export is
``tasks.export.datasets``; its dataset card, ``tasks.export.card``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from schemas.qa import QA, GoldPath
from schemas.export import EXPORT_CONFIGS, ExportConfig
from schemas.tools import tool_schemas
from schemas.trajectories import Trajectory
from tasks.env.agent_loop import AgentConfig, build_system_prompt
from tasks.env.ikg import IKGView, setting_fields
from tasks.qa.programs import program_sparql


#: The LLaMA-Factory column and tag mapping of a ShareGPT-with-tools dataset (REFERENCE: LLaMA-Factory 0.9.5).
SHAREGPT_COLUMNS = {"messages": "conversations", "system": "system", "tools": "tools"}
SHAREGPT_TAGS = {
    "role_tag": "from",
    "content_tag": "value",
    "user_tag": "human",
    "assistant_tag": "gpt",
    "observation_tag": "observation",
    "function_tag": "function_call",
    "system_tag": "system",
}

DATA_SOURCE = "hopforge_kgqa"
ABILITY = "kg_multi_hop_qa"


def data_file(config: str, split: str) -> str:
    """The path of a config's split inside an export (Hugging Face's single-shard naming)."""
    return f"{config}/{split}-00000-of-00001.parquet"


def _dumps(value: Any) -> str:
    """JSON for a string column: compact, keys sorted, non-ASCII kept (entity names read as written)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


# -- gold paths -------------------------------------------------------------------------------------------------------


def export_gold_paths(qa: QA, gold: Sequence[GoldPath]) -> list[GoldPath]:
    """The gold paths exported with a question: those judged valid (search rank order); when the verifier gave no
    verdict at all, the question's own path as an unverified one; when it rejected every path, none."""
    ranked = sorted(gold, key=lambda g: g.rank)
    valid = [g for g in ranked if g.verdict == "valid"]
    if valid or any(g.verdict == "invalid" for g in ranked):
        return valid
    return [GoldPath(qa_id=qa.qa_id, rank=0, path=list(qa.path), triples=[e.triple() for e in qa.path_edges],
                     verdict="unverified", is_generator_path=True, run_id=qa.run_id)]  # fmt: skip


# -- system prompts ---------------------------------------------------------------------------------------------------


class _ToolSchemasOnly:
    """Enough of a tool runner for ``build_system_prompt``: the prompt needs the tool schemas, not the graph."""

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> Any:  # pragma: no cover - never called
        raise NotImplementedError

    def schemas(self, tools: Sequence[str] | None = None) -> list[dict[str, Any]]:
        return tool_schemas(tuple(tools or ()))


def tool_system_prompt(graph_type: str, tools: Sequence[str], *, think: bool) -> str:
    """The system prompt of a tool-use sample. Function-calling style: the trainer's chat template renders the
    ``tools`` column (LLaMA-Factory, TRL and verl all do), so the prompt does not list the tools itself."""
    cfg = AgentConfig(style="api", tools=tuple(tools), ask_for_think=think)
    return build_system_prompt(_ToolSchemasOnly(), graph_type, cfg)


# -- ShareGPT (LLaMA-Factory) ----------------------------------------------------------------------------------------


def _think_block(thought: str | None) -> str:
    # Qwen3 writes an empty block as "<think>\n\n</think>\n\n"; an empty thought keeps that shape.
    return f"<think>\n{(thought or '').strip()}\n</think>\n\n"


def _function_call_value(tool_calls: Sequence[Mapping[str, Any]]) -> str:
    calls = []
    for tc in tool_calls:
        fn = tc.get("function", {})
        args = fn.get("arguments", "{}")
        try:
            parsed = json.loads(args) if isinstance(args, str) else args
        except ValueError:
            parsed = args  # left as a string: the validator reports it
        calls.append({"name": fn.get("name", ""), "arguments": parsed})
    # LLaMA-Factory reads a JSON list as parallel calls; one call is one object, as in its own examples.
    return json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)


def sharegpt_conversations(traj: Trajectory, *, think: bool) -> list[dict[str, str]]:
    """A trajectory's conversation in ShareGPT roles (system message left out; it has its own column).

    user -> human, assistant with tool calls -> function_call (the JSON call), tool -> observation (consecutive
    tool messages of one turn joined), assistant -> gpt. With ``think`` each assistant value starts with
    ``<think>…</think>`` holding its reasoning plus any prose written around a tool call (which a function_call
    value cannot carry); without it, reasoning and that prose are left out."""
    out: list[dict[str, str]] = []
    ai = 0
    for m in traj.messages:
        role = m.get("role")
        if role == "system":
            continue
        if role == "user":
            out.append({"from": "human", "value": m.get("content") or ""})
        elif role == "tool":
            if out and out[-1]["from"] == "observation":
                out[-1]["value"] += "\n" + (m.get("content") or "")
            else:
                out.append({"from": "observation", "value": m.get("content") or ""})
        elif role == "assistant":
            thought = traj.reasoning[ai] if ai < len(traj.reasoning) else None
            ai += 1
            content = (m.get("content") or "").strip()
            if m.get("tool_calls"):
                prose = "\n\n".join(p for p in ((thought or "").strip(), content) if p)
                prefix = _think_block(prose) if think else ""
                out.append({"from": "function_call", "value": prefix + _function_call_value(m["tool_calls"])})
            else:
                out.append({"from": "gpt", "value": (_think_block(thought) if think else "") + content})
    return out


def sharegpt_row(traj: Trajectory, qa: QA, *, think: bool, view: IKGView | None = None) -> dict[str, Any]:
    """One LLaMA-Factory ShareGPT row (Omne-R1 appendix A fields plus provenance and the graph setting: ``view``
    for an IKG variant's trajectory)."""
    if traj.tools:
        system = tool_system_prompt(traj.domain, traj.tools, think=think)
        tools = json.dumps(tool_schemas(tuple(traj.tools)), ensure_ascii=False)
    else:
        system = next((m.get("content") or "" for m in traj.messages if m.get("role") == "system"), "")
        tools = ""
    return {
        "id": traj.trajectory_id,
        "qa_id": traj.qa_id,
        "kind": traj.kind,
        "graph_type": traj.domain,
        "hop_class": qa.hop_class,
        "question": qa.question,
        "golden_answer": qa.answer,
        "conversations": sharegpt_conversations(traj, think=think),
        "system": system,
        "tools": tools,
        **setting_fields(view),
    }


_LEADING_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.S)


def validate_sharegpt(row: Mapping[str, Any]) -> list[str]:
    """Problems that would make LLaMA-Factory drop or misread a ShareGPT row; ``[]`` when it is fine.

    LLaMA-Factory's rule: human or observation at odd positions (1st, 3rd, ...), gpt or function_call at even
    positions, an even number of turns. On top: the first turn is a human turn, an observation follows a
    function_call, the last turn is gpt (a training sample ends with the answer), every value is a non-empty
    string, a function_call value (after an optional leading ``<think>…</think>``) is a JSON object
    ``{"name": str, "arguments": {...}}`` or a list of them, and ``tools`` is "" or a JSON list."""
    problems: list[str] = []
    conv = row.get("conversations")
    if not isinstance(conv, list) or not conv:
        return ["conversations is empty"]
    for i, turn in enumerate(conv):
        pos = i + 1
        who = turn.get("from") if isinstance(turn, Mapping) else None
        value = turn.get("value") if isinstance(turn, Mapping) else None
        allowed = ("human", "observation") if pos % 2 == 1 else ("gpt", "function_call")
        if who not in allowed:
            problems.append(f"turn {pos} is {who!r}; position {pos} must be {' or '.join(allowed)}")
            continue
        if not isinstance(value, str) or not value.strip():
            problems.append(f"turn {pos} ({who}) has an empty value")
            continue
        if who == "observation" and (i == 0 or conv[i - 1].get("from") != "function_call"):
            problems.append(f"turn {pos} is an observation that does not follow a function_call")
        if who == "function_call":
            why = _function_call_problem(_LEADING_THINK.sub("", value, count=1))
            if why:
                problems.append(f"turn {pos} (function_call): {why}")
    if conv[0].get("from") != "human":
        problems.append("the first turn must be human")
    if conv[-1].get("from") != "gpt":
        problems.append(f"the last turn is {conv[-1].get('from')!r}; it must be gpt")
    tools = row.get("tools", "")
    if tools:
        try:
            if not isinstance(json.loads(tools), list):
                problems.append("tools must be a JSON list")
        except (TypeError, ValueError):
            problems.append("tools is not valid JSON")
    if not isinstance(row.get("system", ""), str):
        problems.append("system must be a string")
    return problems


def _function_call_problem(text: str) -> str | None:
    try:
        value = json.loads(text)
    except ValueError:
        return "the value is not JSON"
    calls = value if isinstance(value, list) else [value]
    if not calls:
        return "an empty list of calls"
    for c in calls:
        if not isinstance(c, dict) or set(c) != {"name", "arguments"}:
            return 'each call must be {"name": ..., "arguments": {...}}'
        if not isinstance(c["name"], str) or not c["name"]:
            return "a call has no tool name"
        if not isinstance(c["arguments"], dict):
            return "a call's arguments must be a JSON object"
    return None


# -- OpenAI / Qwen messages -------------------------------------------------------------------------------------------


def openai_messages(traj: Trajectory, *, system: str | None = None) -> list[dict[str, Any]]:
    """The trajectory as OpenAI messages with a fixed key set (Parquet needs one struct type): ``role``,
    ``content``, ``reasoning_content`` (Qwen3 templates render it as the think block), ``tool_calls``,
    ``tool_call_id``, ``name``; absent values are ``None``. ``system`` replaces the stored system prompt."""
    out: list[dict[str, Any]] = []
    ai = 0
    for m in traj.messages:
        role = m.get("role")
        msg: dict[str, Any] = {"role": role, "content": m.get("content") or "", "reasoning_content": None,
                               "tool_calls": None, "tool_call_id": None, "name": None}  # fmt: skip
        if role == "system" and system is not None:
            msg["content"] = system
        elif role == "assistant":
            msg["reasoning_content"] = traj.reasoning[ai] if ai < len(traj.reasoning) else None
            ai += 1
            if m.get("tool_calls"):
                msg["tool_calls"] = [
                    {"id": tc.get("id"), "type": "function",
                     "function": {"name": tc["function"]["name"], "arguments": tc["function"]["arguments"]}}
                    for tc in m["tool_calls"]
                ]  # fmt: skip
        elif role == "tool":
            msg["tool_call_id"] = m.get("tool_call_id")
            msg["name"] = m.get("name")
        out.append(msg)
    return out


def validate_messages(row: Mapping[str, Any]) -> list[str]:
    """Problems with an OpenAI ``messages`` row; ``[]`` when it is a complete tool-use sample: a user turn before
    the first assistant turn, every tool message answering a call of the assistant turn before it (by id), every
    call answered, and an assistant turn without calls at the end."""
    msgs = row.get("messages") or []
    problems: list[str] = []
    if not any(m.get("role") == "user" for m in msgs):
        problems.append("no user message")
    pending: list[str] = []
    for i, m in enumerate(msgs, 1):
        role = m.get("role")
        if role == "tool":
            if m.get("tool_call_id") not in pending:
                problems.append(f"message {i} answers no open tool call")
            else:
                pending.remove(m["tool_call_id"])
            continue
        if pending:
            problems.append(f"message {i} comes before the tool call(s) {pending} were answered")
            pending = []
        if role == "assistant" and m.get("tool_calls"):
            pending = [tc.get("id") for tc in m["tool_calls"]]
    if pending:
        problems.append(f"the tool call(s) {pending} are never answered")
    last = msgs[-1] if msgs else {}
    if last.get("role") != "assistant" or last.get("tool_calls"):
        problems.append("the last message must be an assistant answer (no tool call)")
    return problems


def messages_row(traj: Trajectory, qa: QA, view: IKGView | None = None) -> dict[str, Any]:
    """One row of the ``messages`` config: the conversation, and the tools both as schemas (TRL's ``tools``
    column) and as a JSON string (``tools_json``, for readers that cannot take nested structs), and the graph
    setting (``view`` for an IKG variant's trajectory)."""
    system = tool_system_prompt(traj.domain, traj.tools, think=True) if traj.tools else None
    schemas = tool_schemas(tuple(traj.tools)) if traj.tools else []
    return {
        "id": traj.trajectory_id,
        "qa_id": traj.qa_id,
        "kind": traj.kind,
        "graph_type": traj.domain,
        "question": qa.question,
        "golden_answer": qa.answer,
        "messages": openai_messages(traj, system=system),
        "tools": schemas,
        "tools_json": json.dumps(schemas, ensure_ascii=False) if schemas else "",
        **setting_fields(view),
    }


# -- verl RL rows ----------------------------------------------------------------------------------------------------


def rl_ground_truth(qa: QA, gold: Sequence[GoldPath]) -> str:
    """The ``reward_model.ground_truth`` JSON string (one shape in every row): answers, gold path triples, graph."""
    return _dumps({
        "answers": [qa.answer],
        "gold_paths": [[list(t) for t in g.triples] for g in gold],
        "graph_type": qa.domain,
    })  # fmt: skip


def rl_row(qa: QA, gold: Sequence[GoldPath], index: int, tools: Sequence[str]) -> dict[str, Any]:
    """One verl RL row. ``tools_kwargs`` gives each tool's ``create_kwargs`` (the graph to query), as verl's
    tool agent loop passes them to ``BaseTool.create``."""
    return {
        "data_source": DATA_SOURCE,
        "prompt": [
            {"role": "system", "content": tool_system_prompt(qa.domain, tools, think=True)},
            {"role": "user", "content": qa.question},
        ],
        "ability": ABILITY,
        "reward_model": {"style": "rule", "ground_truth": rl_ground_truth(qa, gold)},
        "extra_info": {
            "split": qa.split,
            "index": index,
            "qa_id": qa.qa_id,
            "graph_type": qa.domain,
            "hop_class": qa.hop_class,
            "question": qa.question,
            "tools_kwargs": {t: {"create_kwargs": {"graph_type": qa.domain}} for t in tools},
            "need_tools_kwargs": True,
        },
        "agent_name": "tool_agent",
    }


# -- plain QA rows ---------------------------------------------------------------------------------------------------


def qa_row(qa: QA, gold: Sequence[GoldPath], view: IKGView | None = None) -> dict[str, Any]:
    """One plain question with its gold paths and provenance (snapshot, seed, source chunks, writer). The run and
    the attempt that made it stay in the warehouse, under the same ``qa_id``: an export holds what the data is, not
    which process made it, so a run resumed after a crash exports the same bytes as one that never stopped.
    ``view``: the IKG view of a variant row (its setting fields; ``None``: the complete graph)."""
    return {
        "qa_id": qa.qa_id,
        "domain": qa.domain,
        "hop_class": qa.hop_class,
        "question": qa.question,
        "answer": qa.answer,
        "path": list(qa.path),
        "path_edges": [
            {"head": e.head, "tail": e.tail, "relation": e.relation, "keywords": list(e.keywords),
             "description": e.description, "directed": e.directed, "forward": e.forward,
             "source_chunk_ids": list(e.source_chunk_ids)}
            for e in qa.path_edges
        ],  # fmt: skip
        "gold_paths": [
            {"rank": g.rank, "path": list(g.path), "triples": [list(t) for t in g.triples], "verdict": g.verdict,
             "is_generator_path": g.is_generator_path}
            for g in gold
        ],  # fmt: skip
        "split": qa.split,
        "snapshot_id": qa.snapshot_id,
        "seed": qa.seed,
        "source_chunk_ids": list(qa.source_chunk_ids),
        "writer": qa.writer,
        "kind": qa.kind,
        "program": qa.program.model_dump_json() if qa.program is not None else None,
        "sparql": program_sparql(qa.program, qa.domain) if qa.program is not None else None,
        **setting_fields(view),
    }


__all__ = [
    "ABILITY",
    "DATA_SOURCE",
    "EXPORT_CONFIGS",
    "SHAREGPT_COLUMNS",
    "SHAREGPT_TAGS",
    "ExportConfig",
    "data_file",
    "export_gold_paths",
    "messages_row",
    "openai_messages",
    "qa_row",
    "rl_ground_truth",
    "rl_row",
    "sharegpt_conversations",
    "sharegpt_row",
    "tool_system_prompt",
    "validate_messages",
    "validate_sharegpt",
]
