"""Datasets for trainers: deterministic, split-aware, versioned exports of questions and trajectories.

One export is one directory ``<data_dir>/exports/<version>/`` in the Hugging Face dataset layout:

```
README.md                                   dataset card; YAML ``configs:`` lists data_files per split
manifest.json                               rows per config and split, sha256 and size of every other file, and
                                            the warehouse backup the export can be rebuilt from
dataset_info.json                           LLaMA-Factory dataset registry (ShareGPT with tools)
qa/<split>-00000-of-00001.parquet           plain questions with gold paths and provenance
sft/<split>-00000-of-00001.parquet          LLaMA-Factory ShareGPT + tools, <think> before each reply
sft_nothink/<split>-00000-of-00001.parquet  the same conversations without reasoning (template qwen3_nothink)
rl/<split>-00000-of-00001.parquet           verl RL rows (prompt, rule reward ground truth, tools kwargs)
messages/<split>-00000-of-00001.parquet     OpenAI/Qwen messages with tool_calls (TRL and other trainers)
```

Rules:

- Splits are the questions' (``qa.split``): leak-safe by construction, and checked here: an answer or seed
  entity in two splits fails the export with ``ExportError`` before anything is written. A trajectory goes
  where its question goes. Questions without a split and trajectories whose question is gone are counted, not
  exported.
- Deterministic: rows are sorted by id, every Parquet file has an explicit Arrow schema, JSON is written with
  sorted keys, nothing holds a timestamp. The same warehouse gives byte-identical files.
- The version, unless given, is a content hash of the inputs (question, gold path and accepted trajectory
  records) and of ``FORMAT_VERSION`` and the configs included, so a new version appears exactly when the data
  or the format changes.
- IKG variants (Graph-RFT's incomplete-graph setting, ``tasks.env.ikg``; ``ExportInputs.ikg``) are rows of their
  question with the view's setting: a qa row and an rl row per variant (the rl row's ground truth carries
  ``kg_setting``, its tools' ``create_kwargs`` the ``view_id`` the tool server serves), and sft/messages rows from
  the variant's template trajectory. A variant keeps its question's split. Every row of every config says its
  setting: ``kg_setting`` ("complete" / "incomplete"), ``ikg_level`` (null when complete), ``hidden_triples``
  (empty when complete) and ``view_id`` (null when complete). With variants, the rl rows offer ``web_search`` too
  (Graph-RFT offers the web tool in both settings).
- ShareGPT rows are checked against LLaMA-Factory's rules (``validate_sharegpt``) and OpenAI rows for complete
  tool exchanges (``validate_messages``) before writing; a row that breaks them is reported in the manifest and
  the result, and not written.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from schemas.errors import InputError
from schemas.qa import QA, SPLITS, GoldPath
from schemas.tools import OMNE_TOOLS, tool_schemas
from schemas.trajectories import Trajectory
from tasks.env.agent_loop import AgentConfig, build_system_prompt
from tasks.env.ikg import IKGView, setting_fields, with_setting
from tasks.qa.splits import describe_leaks, split_leaks
from tasks.qa.programs import program_sparql
from tasks.qa.mix import hop_kind_counts, hop_kind_markdown

#: Bump when a row layout changes: it is part of the default version hash. 2: the QA rows no longer carry the run
#: and attempt that made them. 3: the tools are the tool contract (``schemas.tools.tool_schema``: no per-question enum).
#: 4: every qa, rl, sft and messages row carries its graph setting (``kg_setting``, ``ikg_level``, ``hidden_triples``,
#: ``view_id``; ``tasks.env.ikg.setting_fields``), and IKG variants are exported next to their questions.
FORMAT_VERSION = 4

#: Fields that name the process that made a record, not what it is: left out of the fingerprint, so a run resumed
#: after a crash (other run ids, same content) exports the same version.
RUN_PROVENANCE = frozenset({"run_id", "attempt_id"})

#: Every config an export can hold, in the order they are written and listed.
ExportConfig = Literal["qa", "sft", "sft_nothink", "rl", "messages"]
EXPORT_CONFIGS: tuple[str, ...] = get_args(ExportConfig)

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
_VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class ExportError(InputError):
    """An export that cannot be made or used, worded for a person."""


def check_version(version: str) -> str:
    """``version`` if it is a safe directory name (letters, digits, ``._-``, not starting with a dot)."""
    if not _VERSION_RE.match(version):
        raise ExportError(
            f"version {version!r} is not usable as a directory name: use letters, digits, '.', '_' or '-' "
            "(at most 128 characters, starting with a letter or digit)"
        )
    return version


def check_include(include: Iterable[str]) -> tuple[str, ...]:
    """The configs to export, in canonical order; ``ExportError`` naming any unknown one."""
    wanted = list(dict.fromkeys(include))
    unknown = [c for c in wanted if c not in EXPORT_CONFIGS]
    if unknown or not wanted:
        choices = ", ".join(EXPORT_CONFIGS)
        raise ExportError(f"unknown or no export config(s) {unknown or wanted}; choose from {choices}")
    return tuple(c for c in EXPORT_CONFIGS if c in wanted)


def data_file(config: str, split: str) -> str:
    """The path of a config's split inside an export (Hugging Face's single-shard naming)."""
    return f"{config}/{split}-00000-of-00001.parquet"


# -- inputs -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IKGItem:
    """One IKG variant to export: its question, its view, and its template trajectory (``None``, or a rejected one,
    when none could be made: the variant then has qa and rl rows only)."""

    qa: QA
    view: IKGView
    trajectory: Trajectory | None = None


@dataclass
class ExportInputs:
    """What an export is made from: the questions, their gold paths (by ``qa_id``), the accepted trajectories, and
    the IKG variants of the questions (``ikg``, empty unless the export was asked for levels)."""

    qas: list[QA]
    gold_paths: dict[str, list[GoldPath]] = field(default_factory=dict)
    trajectories: list[Trajectory] = field(default_factory=list)
    ikg: list[IKGItem] = field(default_factory=list)

    def fingerprint(self, include: Sequence[str]) -> str:
        """sha256 over the inputs in canonical JSON (sorted by id, without ``RUN_PROVENANCE``), the format version
        and the configs."""
        h = hashlib.sha256()
        h.update(json.dumps({"format": FORMAT_VERSION, "include": list(include)}, sort_keys=True).encode())
        for q in sorted(self.qas, key=lambda q: q.qa_id):
            h.update(b"\nqa:" + _canonical(q.model_dump(mode="json", exclude=set(RUN_PROVENANCE))))
        for qa_id in sorted(self.gold_paths):
            for g in sorted(self.gold_paths[qa_id], key=lambda g: g.rank):
                h.update(b"\ngold:" + _canonical(g.model_dump(mode="json", exclude=set(RUN_PROVENANCE))))
        for t in sorted(self.trajectories, key=lambda t: t.trajectory_id):
            h.update(b"\ntraj:" + _canonical(t.model_dump(mode="json", exclude=set(RUN_PROVENANCE))))
        for item in sorted(self.ikg, key=lambda i: i.view.view_id):
            h.update(b"\nikg:" + _canonical(setting_fields(item.view)))
            if item.trajectory is not None:
                h.update(b"\nikg-traj:" + _canonical(item.trajectory.model_dump(mode="json",
                                                                                 exclude=set(RUN_PROVENANCE))))
        return h.hexdigest()


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


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


# -- Arrow schemas ----------------------------------------------------------------------------------------------

_S = pa.string()
_STRS = pa.list_(pa.string())
#: The graph setting every row carries (``tasks.env.ikg.setting_fields``).
_SETTING = [("kg_setting", _S), ("ikg_level", pa.float64()), ("hidden_triples", pa.list_(_STRS)), ("view_id", _S)]
_SHAREGPT = pa.schema([
    ("id", _S), ("qa_id", _S), ("kind", _S), ("graph_type", _S), ("hop_class", _S), ("question", _S),
    ("golden_answer", _S), ("conversations", pa.list_(pa.struct([("from", _S), ("value", _S)]))), ("system", _S),
    ("tools", _S), *_SETTING,
])  # fmt: skip
_TOOL_CALL = pa.struct([("id", _S), ("type", _S), ("function", pa.struct([("name", _S), ("arguments", _S)]))])
_MESSAGE = pa.struct([
    ("role", _S), ("content", _S), ("reasoning_content", _S), ("tool_calls", pa.list_(_TOOL_CALL)),
    ("tool_call_id", _S), ("name", _S),
])  # fmt: skip
_QA = pa.schema([
    ("qa_id", _S), ("domain", _S), ("hop_class", _S), ("question", _S), ("answer", _S), ("path", _STRS),
    ("path_edges", pa.list_(pa.struct([
        ("head", _S), ("tail", _S), ("relation", _S), ("keywords", _STRS), ("description", _S),
        ("directed", pa.bool_()), ("forward", pa.bool_()), ("source_chunk_ids", _STRS)]))),
    ("gold_paths", pa.list_(pa.struct([
        ("rank", pa.int64()), ("path", _STRS), ("triples", pa.list_(_STRS)), ("verdict", _S),
        ("is_generator_path", pa.bool_())]))),
    ("split", _S), ("snapshot_id", _S), ("seed", _S), ("source_chunk_ids", _STRS),
    ("writer", _S), ("kind", _S), ("program", _S), ("sparql", _S), *_SETTING,
])  # fmt: skip


def _rl_schema(tools: Sequence[str]) -> pa.Schema:
    # tools_kwargs holds one struct field per offered tool, so the schema is built per export.
    # create_kwargs.view_id: the IKG view the tool server serves the row (null on the complete graph).
    create = pa.struct([("graph_type", _S), ("view_id", _S)])
    tool_kwargs = pa.struct([(t, pa.struct([("create_kwargs", create)])) for t in tools])
    extra = pa.struct([
        ("split", _S), ("index", pa.int64()), ("qa_id", _S), ("graph_type", _S), ("hop_class", _S), ("question", _S),
        ("tools_kwargs", tool_kwargs), ("need_tools_kwargs", pa.bool_()), *_SETTING,
    ])  # fmt: skip
    return pa.schema([
        ("data_source", _S), ("prompt", pa.list_(pa.struct([("role", _S), ("content", _S)]))), ("ability", _S),
        ("reward_model", pa.struct([("style", _S), ("ground_truth", _S)])), ("extra_info", extra), ("agent_name", _S),
    ])  # fmt: skip


def _messages_schema(rows: Sequence[Mapping[str, Any]]) -> pa.Schema:
    # The tool schemas are nested JSON whose keys depend on the tools offered: their Arrow type is inferred
    # from the rows (deterministic for the same rows), everything else is fixed.
    tools_type = pa.array([r["tools"] for r in rows]).type if rows else pa.list_(pa.null())
    return pa.schema([
        ("id", _S), ("qa_id", _S), ("kind", _S), ("graph_type", _S), ("question", _S), ("golden_answer", _S),
        ("messages", pa.list_(_MESSAGE)), ("tools", tools_type), ("tools_json", _S), *_SETTING,
    ])  # fmt: skip


# -- building and writing -------------------------------------------------------------------------------------------


@dataclass
class InvalidRow:
    """A row left out because it breaks a format rule."""

    config: str
    id: str
    problems: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"config": self.config, "id": self.id, "problems": self.problems}


@dataclass
class BuiltExport:
    """Rows per config and split, the Arrow schema of each config, and what was left out and why."""

    tables: dict[str, dict[str, list[dict[str, Any]]]]
    schemas: dict[str, pa.Schema]
    invalid: list[InvalidRow] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)


def build_export(
    inputs: ExportInputs, include: Sequence[str], *, tools: Sequence[str] = OMNE_TOOLS
) -> BuiltExport:
    """Every row of every included config, grouped by split and sorted by id; ShareGPT rows validated.

    ``tools`` are the tools an RL row offers (the Omne-R1 pair by default; ``web_search`` joins them when the
    export holds IKG variants). A question's IKG variants follow its own row, by level."""
    include = check_include(include)
    leaks = split_leaks(inputs.qas)
    if leaks:
        # A split is leak-safe or it is not exported: a model tested on an answer it was trained to reach (or
        # on a seed whose neighbourhood it was trained on) scores what it memorised.
        raise ExportError(f"splits are not leak-safe, nothing was written: {describe_leaks(leaks)}; "
                          "move or drop the questions that share these entities, then export again")
    by_id = {q.qa_id: q for q in inputs.qas}
    with_split = sorted((q for q in inputs.qas if q.split in SPLITS), key=lambda q: q.qa_id)
    skipped = {"questions_without_split": sum(q.split not in SPLITS for q in inputs.qas)}
    trajs = sorted((t for t in inputs.trajectories if t.status == "accepted"), key=lambda t: t.trajectory_id)
    usable = [t for t in trajs if t.qa_id in by_id and by_id[t.qa_id].split in SPLITS]
    skipped["trajectories_without_question_or_split"] = len(trajs) - len(usable)
    gold = {q.qa_id: export_gold_paths(q, inputs.gold_paths.get(q.qa_id, [])) for q in with_split}
    # Each question, then its IKG variants by level: (question, view or None for the complete graph).
    variants: dict[str, list[IKGItem]] = {}
    for item in inputs.ikg:
        if item.qa.qa_id in gold:  # a variant of a question without a split is not exported, like its question
            variants.setdefault(item.qa.qa_id, []).append(item)
    question_views: list[tuple[QA, IKGView | None]] = []
    for q in with_split:
        question_views.append((q, None))
        question_views += [(q, i.view) for i in sorted(variants.get(q.qa_id, []), key=lambda i: i.view.level)]
    if inputs.ikg:
        skipped["ikg_variants_without_question_or_split"] = len(inputs.ikg) - sum(len(v) for v in variants.values())
    if variants and "web_search" not in tools:
        tools = (*tools, "web_search")
    ikg_trajs = sorted(((i.trajectory, i.view) for v in variants.values() for i in v
                        if i.trajectory is not None and i.trajectory.status == "accepted"),
                       key=lambda tv: tv[0].trajectory_id)  # fmt: skip
    with_views: list[tuple[Trajectory, IKGView | None]] = sorted(
        [(t, None) for t in usable] + ikg_trajs, key=lambda tv: tv[0].trajectory_id)  # type: ignore[arg-type]

    tables: dict[str, dict[str, list[dict[str, Any]]]] = {}
    schemas: dict[str, pa.Schema] = {}
    invalid: list[InvalidRow] = []

    def split_rows(rows: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
        for split, row in rows:
            out[split].append(row)
        return {s: rs for s, rs in out.items() if rs}

    if "qa" in include:
        tables["qa"] = split_rows((q.split, qa_row(q, gold[q.qa_id], v)) for q, v in question_views)  # type: ignore[misc]
        schemas["qa"] = _QA
    for config, think in (("sft", True), ("sft_nothink", False)):
        if config not in include:
            continue
        rows = []
        for t, view in with_views:
            if not think and not t.tools:
                continue  # a long-CoT sample without its reasoning teaches nothing the QA config does not
            row = sharegpt_row(t, by_id[t.qa_id], think=think, view=view)
            problems = validate_sharegpt(row)
            if problems:
                invalid.append(InvalidRow(config, t.trajectory_id, problems))
                continue
            rows.append((by_id[t.qa_id].split, row))
        tables[config] = split_rows(rows)  # type: ignore[arg-type]
        schemas[config] = _SHAREGPT
    if "rl" in include:
        rl: dict[str, list[dict[str, Any]]] = {}
        for q, view in question_views:
            part = rl.setdefault(q.split, [])  # type: ignore[arg-type]
            part.append(with_setting(rl_row(q, gold[q.qa_id], len(part), tools), view))
        tables["rl"] = {s: rl[s] for s in SPLITS if s in rl}
        schemas["rl"] = _rl_schema(tools)
    if "messages" in include:
        rows_m = []
        for t, view in with_views:
            row = messages_row(t, by_id[t.qa_id], view)
            problems = validate_messages(row)
            if problems:
                invalid.append(InvalidRow("messages", t.trajectory_id, problems))
                continue
            rows_m.append((by_id[t.qa_id].split, row))
        tables["messages"] = split_rows(rows_m)  # type: ignore[arg-type]
        schemas["messages"] = _messages_schema([r for _, r in rows_m])
    return BuiltExport(tables=tables, schemas=schemas, invalid=invalid, skipped=skipped)


def parquet_bytes(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> bytes:
    """One Parquet file's bytes. Fixed writer options, so equal rows give equal bytes."""
    table = pa.Table.from_pylist(list(rows), schema=schema)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", compression_level=3, use_dictionary=True,
                   write_statistics=True, row_group_size=50_000)  # fmt: skip
    return buf.getvalue()


def dataset_info(tables: Mapping[str, Mapping[str, Sequence[Any]]], prefix: str = "hopforge") -> dict[str, Any]:
    """LLaMA-Factory's ``dataset_info.json``: one ShareGPT-with-tools entry per (sft variant, split), named
    ``<prefix>_<config>_<split>``; ``file_name`` is relative to the export directory (use it as
    ``dataset_dir``)."""
    info: dict[str, Any] = {}
    for config in ("sft", "sft_nothink"):
        for split in SPLITS:
            if tables.get(config, {}).get(split):
                info[f"{prefix}_{config}_{split}"] = {
                    "file_name": data_file(config, split),
                    "formatting": "sharegpt",
                    "columns": dict(SHAREGPT_COLUMNS),
                    "tags": dict(SHAREGPT_TAGS),
                }
    return info


_CONFIG_NOTES = {
    "qa": "questions with answer, path, hop class, verified gold paths and provenance ids",
    "sft": "LLaMA-Factory ShareGPT with tools, `<think>` before each reply (template `qwen3`)",
    "sft_nothink": "the tool-use conversations without reasoning (template `qwen3_nothink`)",
    "rl": "verl RL rows: prompt, rule reward ground truth (answers, gold triples), tools kwargs, `tool_agent`",
    "messages": "OpenAI/Qwen messages with `tool_calls` and `reasoning_content`, plus `tools` (TRL)",
}


def dataset_card(version: str, tables: Mapping[str, Mapping[str, Sequence[Any]]], extra: str = "") -> str:
    """The ``README.md`` dataset card: YAML ``configs`` (data_files per split), a short guide, then ``extra``
    (markdown: e.g. the difficulty table and the pictures a refresh adds)."""
    configs = [
        {"config_name": c, "data_files": [{"split": s, "path": data_file(c, s)} for s in SPLITS if tables[c].get(s)]}
        for c in EXPORT_CONFIGS
        if c in tables and any(tables[c].values())
    ]
    front = yaml.safe_dump(
        {"pretty_name": "hopforge KG multi-hop QA and tool-use trajectories", "task_categories": ["question-answering"],
         "tags": ["knowledge-graph", "multi-hop", "tool-use", "hopforge"], "configs": configs},
        sort_keys=False, allow_unicode=True, width=120,
    )  # fmt: skip
    lines = [
        "---", front.rstrip(), "---", "", f"# hopforge dataset {version}", "",
        "Grounded multi-hop questions over knowledge graphs and reasoning trajectories distilled from a teacher "
        "model, made by hopforge. Splits are leak-safe: questions that share an answer or seed entity are in the "
        "same split, and every trajectory is in its question's split.", "",
        "| config | contents | " + " | ".join(SPLITS) + " |", "|---|---|" + "---|" * len(SPLITS),
    ]  # fmt: skip
    for c in EXPORT_CONFIGS:
        if c in tables:
            counts = " | ".join(str(len(tables[c].get(s, []))) for s in SPLITS)
            lines.append(f"| `{c}` | {_CONFIG_NOTES[c]} | {counts} |")
    writers = Counter(r.get("writer") or "llm" for rows in tables.get("qa", {}).values() for r in rows)
    if writers:
        # Who wrote the questions: the LLM, the deterministic template writer, or the LLM rewording a template.
        lines += ["", "| question writer | questions |", "|---|---|"]
        lines += [f"| {w} | {n} |" for w, n in sorted(writers.items())]
    complete = [r for rows in tables.get("qa", {}).values() for r in rows if r.get("kg_setting") != "incomplete"]
    if complete:
        # Questions by hops and kind (an IKG variant is its question again, so only the complete graph's rows).
        lines += ["", "Questions by hops (path edges) and kind (`chain`: a composition; `conjunction`: a node "
                  "pinned by another fact; a question without a program is a chain):", ""]
        lines.append(hop_kind_markdown(hop_kind_counts((len(r["path"]) - 1, r.get("kind")) for r in complete)))
    settings = Counter((r.get("kg_setting"), r.get("ikg_level")) for rows in tables.get("qa", {}).values() for r in rows)
    if any(kg == "incomplete" for kg, _ in settings):
        # Graph-RFT's settings: the complete graph, and IKG-x% views hiding that share of each gold path's triples.
        lines += ["", "| graph setting | questions |", "|---|---|"]
        lines += [f"| {'complete' if level is None else f'IKG-{round(level * 100):g}%'} | {n} |"
                  for (_, level), n in sorted(settings.items(), key=lambda kv: kv[0][1] or 0.0)]
    lines += [
        "", "Load a config with `datasets.load_dataset(\"<this directory or repo>\", \"<config>\")`. For "
        "LLaMA-Factory, point `dataset_dir` at this directory and use the entries of `dataset_info.json`. "
        "`manifest.json` holds the sha256 of every file.", "",
    ]  # fmt: skip
    if extra:
        lines += [extra.rstrip(), ""]
    return "\n".join(lines)


def settings_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """An evaluation's per-setting rows (``eval.ikg.setting_table``) as a markdown table, in percent like
    Graph-RFT's tables: Hits@1, EM, F1, the share of questions that used the text search, text searches per
    question."""
    lines = ["| mode | setting | n | Hits@1 | EM | F1 | used text search | text searches per question |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        lines.append(f"| {r['mode']} | {r['setting']} | {r['n']} | {100 * r['hit1_any']:.1f} | {100 * r['em']:.1f} "
                     f"| {100 * r['f1']:.1f} | {100 * r['text_search_share']:.1f}% | {r['mean_text_calls']:.2f} |")
    return "\n".join(lines)


def evaluation_section(rows: Sequence[Mapping[str, Any]], pictures: Sequence[str], *, run_id: str,
                       model: str | None) -> str:
    """Markdown for the card (``card_extra``): an evaluation of the policy per graph setting (the complete graph
    and the IKG levels, ``eval.ikg``), its table and its pictures by relative path (``pictures/settings.svg``)."""
    lines = ["## Evaluation by graph setting", "",
             f"The policy{f' `{model}`' if model else ''} (evaluation run `{run_id}`) on the complete graph and on "
             "IKG views that hide that share of each question's gold-path triples (Graph-RFT's CKG / IKG-x%). "
             "Hits@1 is Graph-RFT's metric; `used text search` is the share of questions whose tool loop called "
             "`web_search` (Graph-RFT's web-search frequency). `no_tools` and `gold_context` are the closed-book "
             "baseline and the upper bound (in an IKG view: the visible facts and the passages that state the hidden "
             "ones).", "", settings_markdown(rows), ""]  # fmt: skip
    lines += [f"![Hits@1 and text-search share by graph setting]({p})" for p in pictures]
    return "\n".join(lines) + "\n"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class ExportResult:
    """Where an export went and what it holds."""

    version: str
    path: Path
    rows: dict[str, dict[str, int]]
    files: dict[str, dict[str, Any]]
    invalid: list[InvalidRow]
    skipped: dict[str, int]


def write_export(built: BuiltExport, exports_dir: Path, version: str, *, fingerprint: str,
                 extra_files: Mapping[str, bytes] | None = None, card_extra: str = "",
                 warehouse_backup: Mapping[str, Any] | None = None) -> ExportResult:
    """Write ``built`` to ``exports_dir/version`` (replacing an earlier export of that version), with
    ``dataset_info.json``, the dataset card and ``manifest.json``. Files are written to a temporary directory
    first, then swapped in, so a reader never sees a half-written export. ``extra_files`` (relative path ->
    bytes, e.g. pictures) are written and listed in the manifest like the rest; ``card_extra`` ends the card.
    ``warehouse_backup`` (the warehouse backup the export can be rebuilt from, or ``{"id": None, "reason": ...}``:
    ``warehouse.backup.backup_for_export``) goes into the manifest as it is; the data files do not depend on it."""
    check_version(version)
    contents: dict[str, bytes] = {}
    rows: dict[str, dict[str, int]] = {}
    for config, by_split in built.tables.items():
        rows[config] = {s: len(r) for s, r in by_split.items()}
        for split, split_rows in by_split.items():
            contents[data_file(config, split)] = parquet_bytes(split_rows, built.schemas[config])
    info = dataset_info(built.tables)
    if info:
        contents["dataset_info.json"] = (json.dumps(info, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
    for name, data in (extra_files or {}).items():
        if name in contents or name in ("README.md", "manifest.json") or name.startswith((".", "/")) or ".." in name:
            raise ExportError(f"extra export file {name!r} would replace a file of the export or leave it")
        contents[name] = data
    contents["README.md"] = dataset_card(version, built.tables, card_extra).encode()
    files: dict[str, dict[str, Any]] = {}
    for name, data in sorted(contents.items()):
        files[name] = {"sha256": _sha256(data), "bytes": len(data)}
        if name.endswith(".parquet"):
            files[name]["rows"] = _rows_of(name, rows)
    manifest = {
        "name": "hopforge",
        "version": version,
        "format_version": FORMAT_VERSION,
        "inputs_sha256": fingerprint,
        "rows": rows,
        "files": files,
        "invalid_rows": [r.as_dict() for r in built.invalid],
        "skipped": built.skipped,
    }
    if warehouse_backup is not None:
        manifest["warehouse_backup"] = dict(warehouse_backup)
    contents["manifest.json"] = (json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()

    final = exports_dir / version
    tmp = exports_dir / f".{version}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        exports_dir.mkdir(parents=True, exist_ok=True)
        for name, data in contents.items():
            target = tmp / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    except OSError as exc:  # a read-only or full disk: nothing half-written stays visible
        shutil.rmtree(tmp, ignore_errors=True)
        raise ExportError(f"cannot write the export {version} under {exports_dir}: {exc.strerror or exc} "
                          f"({exc.filename}); free space or fix the folder's permissions, or choose another "
                          "data_dir") from None
    old = None
    if final.exists():
        old = exports_dir / f".{version}.old-{uuid.uuid4().hex[:8]}"
        final.rename(old)
    tmp.rename(final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return ExportResult(version, final, rows, files, built.invalid, built.skipped)


def _rows_of(name: str, rows: Mapping[str, Mapping[str, int]]) -> int:
    config, fname = name.split("/", 1)
    return rows[config][fname.split("-00000-", 1)[0]]


def export(
    inputs: ExportInputs, exports_dir: Path, *, version: str | None = None, include: Sequence[str] = EXPORT_CONFIGS,
    warehouse_backup: Mapping[str, Any] | None = None, extra_files: Mapping[str, bytes] | None = None,
    card_extra: str = "",
) -> ExportResult:
    """Build and write one export (module docstring); the version defaults to the inputs' content hash.
    ``warehouse_backup``, ``extra_files`` and ``card_extra`` (e.g. ``evaluation_section`` and its pictures): see
    ``write_export``."""
    include = check_include(include)
    if version is not None:
        check_version(version)
    fingerprint = inputs.fingerprint(include)
    built = build_export(inputs, include)
    return write_export(built, exports_dir, version or f"v-{fingerprint[:16]}", fingerprint=fingerprint,
                        warehouse_backup=warehouse_backup, extra_files=extra_files, card_extra=card_extra)


def verify_export(export_dir: str | Path) -> list[str]:
    """Problems with an export directory: a missing manifest, a file listed there that is missing or whose
    sha256 differs, a data file the manifest does not list. ``[]`` when it is intact."""
    root = Path(export_dir)
    path = root / "manifest.json"
    if not path.is_file():
        return [f"no manifest.json in {root}"]
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        return [f"manifest.json is not valid JSON: {exc}"]
    problems = []
    listed = manifest.get("files", {})
    for name, meta in sorted(listed.items()):
        f = root / name
        if not f.is_file():
            problems.append(f"{name}: listed in the manifest but missing")
        elif _sha256(f.read_bytes()) != meta.get("sha256"):
            problems.append(f"{name}: sha256 differs from the manifest")
    for f in sorted(root.rglob("*")):
        rel = f.relative_to(root).as_posix()
        if f.is_file() and rel != "manifest.json" and rel not in listed and not rel.startswith("."):
            problems.append(f"{rel}: not listed in the manifest")
    return problems


__all__ = [
    "ABILITY",
    "DATA_SOURCE",
    "EXPORT_CONFIGS",
    "FORMAT_VERSION",
    "SHAREGPT_COLUMNS",
    "SHAREGPT_TAGS",
    "BuiltExport",
    "ExportError",
    "ExportInputs",
    "ExportResult",
    "IKGItem",
    "InvalidRow",
    "build_export",
    "check_include",
    "check_version",
    "data_file",
    "dataset_card",
    "dataset_info",
    "evaluation_section",
    "export",
    "export_gold_paths",
    "messages_row",
    "openai_messages",
    "parquet_bytes",
    "qa_row",
    "rl_ground_truth",
    "rl_row",
    "settings_markdown",
    "sharegpt_conversations",
    "sharegpt_row",
    "tool_system_prompt",
    "validate_messages",
    "validate_sharegpt",
    "verify_export",
    "write_export",
]
