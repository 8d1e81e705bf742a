"""Trajectory distillation: template-filled tool traces, teacher rollouts, single-pass long CoT.

Each kind is a build-messages / call / judge pipeline whose parts are plain functions, tested on their own; the
``distill_*`` coroutines string them together for one question and always return a ``Trajectory`` (accepted,
or rejected with a reason code), never raise for model or endpoint problems.

``template`` (Omne-R1, section 3.3 and appendix A)
    The canonical tool sequence along a gold path ``[n0, n1, ..., nk]``: ``entity_matcher(n0)``, then
    ``node_info(n0) ... node_info(n(k-1))``, then the answer ``nk``. Tool outputs are real
    (``ToolEnvironment.call``), and each one must list the node the next step needs (the matcher lists ``n0``,
    ``node_info(ni)`` lists ``n(i+1)``), otherwise the path cannot be walked with what the model is shown and the
    trajectory is rejected (``start_not_found``, ``next_hop_missing``). The teacher then writes one thought per
    assistant turn in ONE structured call that sees the whole trace: one call per trajectory costs one prompt
    (the tool outputs are sent once, not re-sent at every step) and lets the thoughts read as one line of
    reasoning. Its risk, thoughts that know what later tool outputs reveal, is checked in code
    (``check_thoughts``: a thought may not name a path node that neither the question nor an earlier output
    shows) and re-asked through the gateway with the problem stated.

``rollouts`` (rejection sampling)
    ``tasks.env.agent_loop.run_agent`` with the teacher, ``n`` samples per question with distinct sampling seeds (so
    the samples differ and the response cache, keyed on the parameters, does not hand back the same one).
    Kept when the run ended with an answer that matches the gold answer (``answer_matches``), needed no protocol
    reminder, and every tool call was well formed and ran.

``cot`` (Explore-on-Graph, section 3.1 and figure 9)
    The question, its start entity, a shuffled subgraph (the gold paths' triples plus neighbouring distractor
    triples) and the answer go to the teacher, which writes ``<think>…</think><answer>[…]</answer>``. Kept when
    the answer set equals the gold set and the reasoning mentions at least ``min_path_coverage`` of a gold
    path's triples (``path_coverage``, the Explore-on-Graph path reward). The stored conversation is the
    student's: the same context WITHOUT the answer, and the teacher's reasoning as the assistant's thought.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import threading
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel

from gateway.client import ChatResult, LLMFailure, LLMGateway
from schemas.errors import InputError
from schemas.ids import content_digest
from schemas.programs import QueryProgram
from schemas.qa import QA, GoldPath
from schemas.tools import OMNE_TOOLS, AgentRun, Observation
from schemas.trajectories import (
    GoldSource,
    Trajectory,
    TrajectoryRejectReason,
    make_trajectory_id,
)
from tasks.env.agent_loop import AgentConfig, ToolRunner, build_system_prompt, run_agent
from tasks.graph.kg import KnowledgeGraph
from tasks.env.tool_calls import extract_answer, parse_answer_list
from tasks.qa.context import path_edges
from tasks.meaning.profiles import ProfileBook, book_for_graph
from tasks.qa.programs import constraint_edges
from tasks.qa.template_writer import TemplateError, fact_sentence, write_thoughts
from tasks.qa.text_gates import thought_problem, tool_argument_problem
from schemas.answers import (
    answer_set_matches,
    path_coverage,
    relation_terms,
    triple_mentioned,
)
from schemas.answers import flat_text as _flat
from schemas.answers import lenient_key as normalize_answer

# -- configuration --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DistillConfig:
    """How trajectories are made. Defaults follow the papers: 7 tool rounds of at most 3000 tokens (Omne-R1),
    a path-coverage bar of one half for long CoT, two rollouts per question."""

    role: str = "teacher"
    n_rollouts: int = 2
    rollout_temperature: float = 0.8
    rollout_style: Literal["text", "api"] = "text"
    max_rounds: int = 7
    max_tokens_per_round: int = 3000
    min_path_coverage: float = 0.5
    max_distractors: int = 40
    cot_max_tokens: int = 4096
    #: Each tool output shown to the teacher in the template prompt is cut to about this many characters (the
    #: lines naming path nodes are always kept): a hub's node_info can run to thousands of characters.
    teacher_observation_chars: int = 4000
    #: Accept a list answer holding the gold answer next to other entities. Off: a hedged list of guesses is
    #: not a correct single answer, and rejection sampling should not teach hedging.
    allow_extra_answers: bool = False
    seed: int = 0
    #: Who writes a template trajectory's thoughts: the teacher ("llm") or the template writer (for the embedded
    #: demo-quality teacher, whose thoughts are word salad).
    thought_writer: Literal["llm", "template"] = "llm"
    #: The language every thought (and CoT reasoning) must be in (``tasks.qa.text_gates``).
    language: str = "en"

    def __post_init__(self) -> None:
        if self.n_rollouts < 1:
            raise InputError(f"n_rollouts must be >= 1, got {self.n_rollouts}")
        if not 0.0 <= self.min_path_coverage <= 1.0:
            raise InputError(f"min_path_coverage must be between 0 and 1, got {self.min_path_coverage}")
        if self.max_rounds < 1:
            raise InputError(f"max_rounds must be >= 1, got {self.max_rounds}")
        if self.max_tokens_per_round < 1 or self.cot_max_tokens < 1:
            raise InputError("max_tokens_per_round and cot_max_tokens must be >= 1")
        if self.max_distractors < 0:
            raise InputError(f"max_distractors must be >= 0, got {self.max_distractors}")
        if self.rollout_temperature < 0:
            raise InputError(f"rollout_temperature must be >= 0, got {self.rollout_temperature}")
        if self.rollout_style not in ("text", "api"):
            raise InputError(f"rollout_style must be 'text' or 'api', got {self.rollout_style!r}")
        if self.thought_writer not in ("llm", "template"):
            raise InputError(f"thought_writer must be 'llm' or 'template', got {self.thought_writer!r}")

    def agent_config(
        self, *, style: Literal["text", "api"] | None = None, params: dict[str, Any] | None = None
    ) -> AgentConfig:
        return AgentConfig(
            role=self.role, style=style or self.rollout_style, tools=OMNE_TOOLS, max_rounds=self.max_rounds,
            max_tokens_per_round=self.max_tokens_per_round, params=dict(params or {}),
        )  # fmt: skip




# -- answers --------------------------------------------------------------------------------------------------------

def answer_matches(predicted: str | None, gold: str, *, allow_extra: bool = False) -> bool:
    """Normalised exact match of ``predicted`` with ``gold``; a list answer (``["X"]``) matches when its items
    are the gold answer (``allow_extra``: when they include it). An empty answer never matches."""
    key = normalize_answer(gold)
    items = {normalize_answer(i) for i in parse_answer_list(predicted)} - {""}
    if not key or not items:
        return False
    return key in items if allow_extra else items == {key}


# -- gold paths -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GoldChoice:
    """A path a trajectory may follow, its triples (stored direction), and where it came from."""

    path: tuple[str, ...]
    triples: tuple[tuple[str, str, str], ...]
    source: GoldSource


def choose_gold_paths(qa: QA, gold_paths: Sequence[GoldPath]) -> list[GoldChoice]:
    """The paths usable as ground truth for ``qa``, preferred first.

    - Paths the verifier judged valid: the generator's own path first (``generator_confirmed``), then the others
      in search rank (``verified_alternative``).
    - None valid but some verdicts given (the verifier rejected every path it saw): ``[]``. The question
      should not be taught from a path the verifier refused.
    - No verdict at all (verification not run, or it failed): the question's own path
      (``question_path``), which passed the generation checks (connected, answer last).
    """
    ranked = sorted(gold_paths, key=lambda g: g.rank)
    valid = [g for g in ranked if g.verdict == "valid"]
    if valid:
        valid.sort(key=lambda g: (not g.is_generator_path, g.rank))
        return [
            GoldChoice(tuple(g.path), tuple(tuple(t) for t in g.triples),  # type: ignore[misc]
                       "generator_confirmed" if g.is_generator_path else "verified_alternative")
            for g in valid
        ]  # fmt: skip
    if any(g.verdict == "invalid" for g in ranked):
        return []
    return [GoldChoice(tuple(qa.path), tuple(e.triple() for e in qa.path_edges), "question_path")]


# -- template: tool steps -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolStep:
    """One canonical tool call, its real output, and the path node that output must list (``expects``)."""

    name: str
    arguments: dict[str, Any]
    observation: str
    ok: bool
    expects: str


def lists_entity(observation: str, name: str) -> bool:
    """Whether a tool output lists ``name`` as one of its numbered entries (``"3. Name"`` followed by the end
    of the line, a type in brackets, ``:`` or `` | ``), the form every entity_matcher and node_info entry takes.
    A mention inside some description does not count: the model could not call ``node_info`` on it with
    confidence."""
    pattern = rf"^\d+\. {re.escape(name)}(?=$| \[|:| \|)"
    return re.search(pattern, observation, re.M) is not None


def template_calls(path: Sequence[str], graph_type: str,
                   pins: Mapping[int, Sequence[str]] | None = None) -> list[tuple[str, dict[str, Any], str]]:
    """``(tool, arguments, expected entry)`` for the walk along ``path``: match the start, then inspect every
    node before the answer; each output must list the next node. ``pins`` (node index -> the values a program's
    constraints say it holds): a pinned answer is inspected too, its output listing the first value; a pinned node
    before it is checked on the output already fetched (``run_template_tools``)."""
    calls: list[tuple[str, dict[str, Any], str]] = [
        ("entity_matcher", {"node_name": path[0], "graph_type": graph_type}, path[0])
    ]
    for here, nxt in zip(path, path[1:]):
        calls.append(("node_info", {"node_name": here, "graph_type": graph_type}, nxt))
    last = len(path) - 1
    if pins and pins.get(last):
        calls.append(("node_info", {"node_name": path[last], "graph_type": graph_type}, pins[last][0]))
    return calls


def program_pins(program: QueryProgram | None) -> dict[int, list[str]]:
    """Node index -> the values the program's constraints pin it by (empty for a question without a program)."""
    pins: dict[int, list[str]] = {}
    for c in program.constraints if program is not None else ():
        pins.setdefault(c.node, []).append(c.value)
    return pins


def pin_facts(kg: KnowledgeGraph, program: QueryProgram | None, book: ProfileBook) -> dict[int, list[str]]:
    """Node index -> each of its pins as a plain statement ("the Rockefeller Foundation founded X"), for the
    thoughts of a trajectory that checks them."""
    out: dict[int, list[str]] = {}
    if program is None:
        return out
    for c, edge in zip(program.constraints, constraint_edges(kg, program, book)):
        out.setdefault(c.node, []).append(fact_sentence(edge, book))
    return out


def run_template_tools(
    env: ToolRunner, path: Sequence[str], graph_type: str, pins: Mapping[int, Sequence[str]] | None = None
) -> tuple[list[ToolStep], tuple[TrajectoryRejectReason, str] | None]:
    """Run the canonical calls for ``path``; stop at the first output that is an error, lacks the next node, or
    (with ``pins``) lacks a value a pinned node must hold: a conjunction's trajectory checks every constraint with
    the tools. Returns the steps run and ``None``, or the steps up to the failing one and ``(reason, detail)``."""
    steps: list[ToolStep] = []
    pins = pins or {}
    for name, args, expects in template_calls(path, graph_type, pins):
        obs = env.call(name, args)
        steps.append(ToolStep(name, args, obs.text, obs.ok, expects))
        if not obs.ok:
            return steps, ("tool_error", f"{name}({args['node_name']!r}) failed ({obs.error_kind}): {obs.text[:200]}")
        if not lists_entity(obs.text, expects):
            if name == "entity_matcher":
                return steps, ("start_not_found", f"entity_matcher({expects!r}) does not list the start entity")
            where = f"node_info({args['node_name']!r})"
            if len(steps) == len(path) + 1:  # the pinned answer's own call
                return steps, ("pin_missing", f"{where} does not list {expects!r}, which the question pins it by")
            return steps, ("next_hop_missing", f"{where} does not list the next path node {expects!r}")
        if name == "node_info":
            k = path.index(args["node_name"]) if args["node_name"] in path else -1
            for value in pins.get(k, ()):
                if not lists_entity(obs.text, value):
                    return steps, ("pin_missing", f"node_info({args['node_name']!r}) does not list {value!r}, which "
                                                  "the question pins it by")
    return steps, None


def rollout_gate_problem(
    messages: Sequence[Mapping[str, Any]], reasoning: Sequence[str | None], qa: QA, language: str
) -> tuple[TrajectoryRejectReason, str] | None:
    """The first problem of a correct rollout's form: a tool call's arguments (``tool_argument_gate``), or its
    thoughts (``thought_gate_problem``, with the path's names and the tool replies as what the thoughts may cite)."""
    names = list(dict.fromkeys([*qa.path, qa.answer]))
    observations = [str(m.get("content") or "") for m in messages if m.get("role") == "tool"]
    return tool_argument_gate(messages) or thought_gate_problem(
        reasoning, language=language, names=names, observations=observations)


class LoopSafeTools:
    """A tool runner whose ``call`` also works from inside a running event loop.

    ``ToolEnvironment.call`` is synchronous, and an entity search embeds the query with the embedder's
    synchronous ``embed``; an endpoint embedder implements that with ``asyncio.run``, which fails inside the
    loop that drives the distillation coroutines (and the agent loop calls tools from that loop). Each call runs
    on a worker thread instead, which has no loop of its own. The calling loop waits for it: a tool call is a
    local lookup plus at most one embedding request, short next to a teacher generation.
    """

    _pool: ClassVar[ThreadPoolExecutor | None] = None
    _pool_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, env: ToolRunner) -> None:
        self.env = env

    @classmethod
    def _executor(cls) -> ThreadPoolExecutor:
        with cls._pool_lock:
            if cls._pool is None:
                cls._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kg-tools")
            return cls._pool

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> Observation:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self.env.call(name, arguments)
        return self._executor().submit(self.env.call, name, arguments).result()

    def schemas(self, tools: Sequence[str] | None = None) -> list[dict[str, Any]]:
        return self.env.schemas(tools)


def _call_id(k: int) -> str:
    return f"call_{k}"


def template_messages(system: str, question: str, answer: str, steps: Sequence[ToolStep]) -> list[dict[str, Any]]:
    """The canonical OpenAI conversation of a template trajectory: one assistant turn per tool call, each
    followed by its tool message, then the answer turn. Thoughts are not in it (``Trajectory.reasoning``)."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    for k, s in enumerate(steps):
        msgs.append({
            "role": "assistant", "content": "",
            "tool_calls": [{"id": _call_id(k), "type": "function",
                            "function": {"name": s.name, "arguments": json.dumps(s.arguments, ensure_ascii=False)}}],
        })  # fmt: skip
        msgs.append({"role": "tool", "tool_call_id": _call_id(k), "name": s.name, "content": s.observation})
    msgs.append({"role": "assistant", "content": f"<answer>{answer}</answer>"})
    return msgs


# -- template: the teacher's thoughts --------------------------------------------------------------------------------


class StepThoughts(BaseModel):
    """The teacher's reply for a template: one thought per assistant turn, in order."""

    thoughts: list[str]


def thoughts_schema(n: int) -> dict[str, Any]:
    """The per-request schema: exactly ``n`` non-empty strings."""
    return {
        "type": "object",
        "properties": {
            "thoughts": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": n, "maxItems": n}
        },
        "required": ["thoughts"],
        "additionalProperties": False,
    }


def excerpt(observation: str, keep: Sequence[str], limit: int) -> str:
    """``observation`` cut to about ``limit`` characters for the teacher's prompt: the header lines (before the
    first numbered entry) and every line naming one of ``keep`` always stay; other lines fill the budget in order;
    what is left out is announced."""
    if len(observation) <= limit:
        return observation
    lines = observation.split("\n")
    first_entry = next((i for i, line in enumerate(lines) if re.match(r"^\d+\. ", line)), len(lines))
    must = set(range(first_entry)) | {i for i, line in enumerate(lines) if any(lists_entity(line, k) for k in keep)}
    budget = limit - sum(len(lines[i]) + 1 for i in must)
    chosen = set(must)
    for i, line in enumerate(lines):
        if i not in chosen and len(line) + 1 <= budget:
            chosen.add(i)
            budget -= len(line) + 1
    out = [lines[i] for i in sorted(chosen)]
    if len(chosen) < len(lines):
        out.append(f"(... {len(lines) - len(chosen)} more lines not shown here)")
    return "\n".join(out)


_TEMPLATE_SYSTEM = (
    "You write the inner reasoning of an assistant that answers questions by exploring a knowledge graph with "
    "tools. You are shown the question, its answer, and the exact sequence of tool calls the assistant made with "
    "the results it got. Your job is to supply the thought the assistant has just before each of its actions, "
    "so that the whole trace reads as a careful, natural search that arrives at the answer."
)


def _call_text(step: ToolStep) -> str:
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in step.arguments.items())
    return f"{step.name}({args})"


def template_teacher_messages(
    qa: QA, path: Sequence[str], steps: Sequence[ToolStep], *, observation_chars: int = 4000
) -> list[dict[str, str]]:
    """The teacher prompt for a template's thoughts: the question, the answer, every step with its (excerpted)
    output, and the rules a thought must follow. Asks for ``len(steps) + 1`` thoughts."""
    n = len(steps) + 1
    blocks = []
    for k, s in enumerate(steps, 1):
        shown = excerpt(s.observation, list(path), observation_chars)
        blocks.append(f"Step {k} - action: {_call_text(s)}\nResult of step {k}:\n{shown}")
    blocks.append(f"Step {n} - action: give the final answer {qa.answer!r}.")
    rules = (
        f"Write exactly {n} thoughts, one per step, in order. Each thought:\n"
        "- comes BEFORE its step's action: it may use the question and the results of earlier steps only, and must "
        "not name an entity that first appears in the result of its own or a later step;\n"
        "- says what is known so far, what is still missing, and why this action is the sensible next one (for a "
        "node_info step: which entity to inspect and which relation led to it);\n"
        "- is written in the first person, in 1 to 4 plain sentences, without tags or tool-call syntax.\n"
        f"The last thought explains how the result of step {n - 1} answers the question."
    )
    user = (
        f"Question: {qa.question}\nAnswer: {qa.answer}\nKnowledge graph: {qa.domain}\n\n"
        + "\n\n".join(blocks)
        + "\n\n"
        + rules
        + '\n\nReply with one JSON object: {"thoughts": ["thought for step 1", ...]}.'
    )
    return [{"role": "system", "content": _TEMPLATE_SYSTEM}, {"role": "user", "content": user}]


def thought_problems(
    thoughts: Sequence[str], question: str, path: Sequence[str], steps: Sequence[ToolStep]
) -> tuple[str, str] | None:
    """``(kind, message)`` for the first problem in a teacher's thoughts, ``None`` when they are fine.

    kind ``count``/``empty``: not one non-empty thought per assistant turn. kind ``leak``: the thought of turn
    ``t`` (before the final turn) names a path node that neither the question nor the outputs of turns before
    ``t`` show, i.e. it knows what a later tool call reveals. Names compare case-insensitively, whitespace
    collapsed."""
    n = len(steps) + 1
    if len(thoughts) != n:
        return "count", f"expected {n} thoughts (one per step), got {len(thoughts)}"
    for i, t in enumerate(thoughts, 1):
        if not t.strip():
            return "empty", f"thought {i} is empty"
    seen = _flat(question)
    for t in range(n - 1):
        text = _flat(thoughts[t])
        for node in path[1:]:
            key = _flat(node)
            if key and key not in seen and key in text:
                return "leak", (
                    f"thought {t + 1} names {node!r}, which no earlier tool result has shown yet; describe what "
                    "the assistant is looking for instead of naming it"
                )
        seen += "\n" + _flat(steps[t].observation)
    return None


def thought_gate_problem(
    thoughts: Sequence[str | None], *, language: str, names: Sequence[str], observations: Sequence[str] = ()
) -> tuple[TrajectoryRejectReason, str] | None:
    """``(code, detail)`` for the first thought that fails a text gate (``tasks.qa.text_gates.thought_problem``:
    markup, a pasted tool result, a loop, another language), ``None`` when every thought reads as one. Thought
    ``i`` is compared with the observations before it (``observations[:i]``)."""
    for i, t in enumerate(thoughts):
        if not t or not t.strip():
            continue
        found = thought_problem(t, language=language, names=names, observations=observations[:i])
        if found is not None:
            return found[0], f"thought {i + 1}: {found[1]}"  # type: ignore[return-value]
    return None


def tool_argument_gate(messages: Sequence[Mapping[str, Any]]) -> tuple[TrajectoryRejectReason, str] | None:
    """``("bad_tool_argument", detail)`` for the first tool call whose ``node_name`` is not entity-like."""
    for m in messages:
        for call in m.get("tool_calls") or []:
            try:
                args = json.loads(call.get("function", {}).get("arguments") or "{}")
            except json.JSONDecodeError:
                continue  # a call that does not parse is judged by the rollout's own checks (malformed_call)
            value = args.get("node_name") if isinstance(args, dict) else None
            if isinstance(value, str):
                problem = tool_argument_problem(value)
                if problem is not None:
                    return "bad_tool_argument", f"node_name {value[:80]!r}: {problem}"
    return None


# -- rollouts ----------------------------------------------------------------------------------------------------------


def rollout_seed(base_seed: int, qa_id: str, sample: int) -> int:
    """The sampling seed of one rollout: distinct per question and sample, stable across runs (a resumed run
    sends the same request, so the cache answers it)."""
    return int(content_digest(str(base_seed), qa_id, str(sample))[:8], 16)


_TOOL_BLOCK = re.compile(r"<tool_call>.*?(?:</tool_call>|$)", re.S | re.I)
_BAD_CALLS = {"parse_error", "unknown_tool", "bad_arguments", "skipped"}


def _is_tool_response(message: Mapping[str, Any]) -> bool:
    """A text-style observation message (a user turn of ``<tool_response>`` blocks)."""
    return message.get("role") == "user" and str(message.get("content") or "").lstrip().startswith("<tool_response>")


def rollout_messages(run: AgentRun) -> tuple[list[dict[str, Any]], list[str | None]]:
    """A run's conversation in the canonical OpenAI form (see ``schemas.trajectories``) and its per-assistant-turn
    reasoning.

    Text-style runs carry calls as ``<tool_call>`` text and observations as ``<tool_response>`` user messages;
    here each call becomes a ``tool_calls`` entry (arguments as bound by the parser) and each observation a
    ``tool`` message, from the run's ``ToolCallRecord``s. Prose around a call stays in ``content``. Other user
    messages (protocol reminders) are kept as they are.
    """
    src = run.messages
    out: list[dict[str, Any]] = [dict(m) for m in src[:2]]
    by_round: dict[int, list[Any]] = {}
    for rec in run.tool_calls:
        by_round.setdefault(rec.round, []).append(rec)
    reasoning: list[str | None] = []
    rnd = 0
    ai = 0
    i = 2
    n_calls = 0
    while i < len(src):
        m = src[i]
        if m.get("role") != "assistant":
            out.append({"role": m.get("role", "user"), "content": m.get("content") or ""})
            i += 1
            continue
        reasoning.append(run.reasoning[ai] if ai < len(run.reasoning) else None)
        ai += 1
        nxt = src[i + 1] if i + 1 < len(src) else None
        is_round = nxt is not None and (nxt.get("role") == "tool" or _is_tool_response(nxt))
        content = _TOOL_BLOCK.sub("", m.get("content") or "").strip()
        if not is_round:
            out.append({"role": "assistant", "content": content})
            i += 1
            continue
        rnd += 1
        recs = by_round.get(rnd, [])
        calls = []
        for rec in recs:
            args = json.dumps(rec.arguments, ensure_ascii=False)
            fn = {"name": rec.name or "", "arguments": args}
            calls.append({"id": _call_id(n_calls), "type": "function", "function": fn})
            n_calls += 1
        out.append({"role": "assistant", "content": content, "tool_calls": calls})
        for call, rec in zip(calls, recs):
            out.append({"role": "tool", "tool_call_id": call["id"], "name": rec.name or "", "content": rec.observation})
        # Skip the run's own observation message(s): one user message in the text style, one per call in the API one.
        i += 1
        while i < len(src) and src[i].get("role") == "tool":
            i += 1
        if i < len(src) and _is_tool_response(src[i]):
            i += 1
    return out, reasoning


def judge_rollout(run: AgentRun, gold: str, *, allow_extra: bool = False) -> tuple[TrajectoryRejectReason | None, str]:
    """``(None, "")`` when the rollout is kept, else ``(reason, detail)``; see the module docstring."""
    if run.end_reason == "error":
        return "llm_error", run.error or "the endpoint gave no answer"
    if run.end_reason != "answer":
        return "no_answer", f"the run ended by {run.end_reason}" + (f": {run.error}" if run.error else "")
    if not answer_matches(run.final_answer, gold, allow_extra=allow_extra):
        return "wrong_answer", f"answered {run.final_answer!r}; the gold answer is {gold!r}"
    if run.nudges:
        return "nudged", f"needed {run.nudges} protocol reminder(s)"
    broken = [r for r in run.tool_calls if r.error_kind == "internal"]
    if broken:
        return "tool_error", f"round {broken[0].round}: the tool {broken[0].name} failed: {broken[0].observation[:160]}"
    bad = [r for r in run.tool_calls if r.error_kind in _BAD_CALLS]
    if bad:
        return "malformed_call", f"round {bad[0].round}: {bad[0].error_kind}: {bad[0].observation[:160]}"
    return None, ""


# -- long CoT --------------------------------------------------------------------------------------------------------


def best_path_coverage(think: str, choices: Sequence[GoldChoice]) -> float:
    """The path reward against the best-covered gold path: any verified path is a valid way to the answer."""
    return max((path_coverage(think, c.triples) for c in choices), default=0.0)


def _edge_triple(d: Any) -> tuple[str, str, str]:
    rel = d.relation or (", ".join(d.keywords) if d.keywords else d.description)
    return (d.source, rel, d.target)


def cot_subgraph(
    kg: KnowledgeGraph, choices: Sequence[GoldChoice], qa_id: str, *, max_distractors: int, seed: int
) -> list[tuple[str, str, str]]:
    """The triples shown for a CoT question: every gold path's triples plus up to ``max_distractors`` other
    relations touching a gold-path node, shuffled. Deterministic in ``(seed, qa_id)``, so a re-run builds the
    same prompt (and hits the cache)."""
    gold: list[tuple[str, str, str]] = list(dict.fromkeys(t for c in choices for t in c.triples))
    gold_set = set(gold)
    nodes = sorted({n for c in choices for n in c.path if n in kg})
    distractors = sorted({
        t for n in nodes for _, d in kg.neighbors(n) if (t := _edge_triple(d)) not in gold_set
    })  # fmt: skip
    rng = random.Random(content_digest("cot-subgraph", str(seed), qa_id))
    rng.shuffle(distractors)
    triples = gold + distractors[:max_distractors]
    rng.shuffle(triples)
    return triples


def _triple_lines(triples: Sequence[tuple[str, str, str]]) -> str:
    return "\n".join(f"({s}, {r}, {o})" for s, r, o in triples)


#: The student's instructions in a CoT sample (what the SFT model is trained to follow).
COT_SYSTEM = (
    "Answer the question using the knowledge-graph triples you are given. Begin at the start entity and follow "
    "the triples step by step. Think inside <think> and </think>, naming the entities and relations you use. Then "
    "give the answer entities as a JSON list inside <answer> and </answer>, for example <answer>[\"Entity\"]</answer>, "
    "writing each name exactly as the triples do."
)

_COT_TEACHER_SYSTEM = (
    "You write training examples of careful reasoning over a knowledge graph. Each example has a question, the "
    "entity to start from, the correct answer, and a set of (subject, relation, object) triples, some relevant and "
    "some not. Write the reasoning a strong solver would produce without knowing the answer in advance: start from "
    "the start entity, say which triples you use and why, quoting each used triple's subject, relation and object "
    "as written, set aside triples that do not help, and reach the answer through the graph."
)


def cot_context(question: str, start: str, triples: Sequence[tuple[str, str, str]]) -> str:
    """The user message of a CoT sample: question, start entity, triples (one ``(s, r, o)`` per line)."""
    return f"Question: {question}\nStart entity: {start}\nTriples:\n{_triple_lines(triples)}"


def cot_student_messages(qa: QA, triples: Sequence[tuple[str, str, str]]) -> list[dict[str, str]]:
    """The training conversation's prompt: no answer in it."""
    return [
        {"role": "system", "content": COT_SYSTEM},
        {"role": "user", "content": cot_context(qa.question, qa.path[0], triples)},
    ]


def cot_teacher_messages(
    qa: QA, triples: Sequence[tuple[str, str, str]], answers: Sequence[str]
) -> list[dict[str, str]]:
    """The teacher's prompt: the student's context plus the correct answer and the output format."""
    user = (
        cot_context(qa.question, qa.path[0], triples)
        + f"\nCorrect answer: {json.dumps(list(answers), ensure_ascii=False)}\n\n"
        "Reply in exactly this form:\n<think>\nyour step-by-step reasoning, from the start entity to the answer\n"
        "</think>\n<answer>[\"answer entity\"]</answer>\n"
        "The answer list must hold the correct answer exactly as written above and only entities named in the "
        "triples. Do not say that the answer was given to you."
    )
    return [{"role": "system", "content": _COT_TEACHER_SYSTEM}, {"role": "user", "content": user}]


def cot_format_problem(result: ChatResult) -> str | None:
    """Gateway validator for a CoT reply: reasoning and an <answer> must both be there (a reply without them is
    not cached, so a retry asks again)."""
    if not (result.reasoning or "").strip():
        return "the reply has no <think> reasoning"
    if extract_answer(result.text) is None:
        return "the reply has no <answer>...</answer>"
    return None


def judge_cot(
    text: str, reasoning: str | None, answers: Sequence[str], choices: Sequence[GoldChoice], min_coverage: float
) -> tuple[TrajectoryRejectReason | None, str, float]:
    """``(reason or None, detail, coverage)`` for a teacher's CoT reply (``text`` without reasoning)."""
    think = reasoning or ""
    coverage = best_path_coverage(think, choices)
    if not think.strip():
        return "bad_format", "no <think> reasoning", coverage
    answer = extract_answer(text)
    if answer is None:
        return "bad_format", "no <answer>...</answer>", coverage
    if not answer_set_matches(answer, answers):
        return "answer_mismatch", f"answered {answer!r}; the gold answers are {list(answers)!r}", coverage
    if coverage < min_coverage:
        why = f"the reasoning mentions {coverage:.0%} of the gold path's triples (needs {min_coverage:.0%})"
        return "low_path_coverage", why, coverage
    return None, "", coverage


# -- one question --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DistillJob:
    """One trajectory to make: a question, a kind, a sample number."""

    qa: QA
    kind: str
    sample: int = 0


@dataclass
class DistillContext:
    """What the coroutines need besides the job and its gold paths: the gateway, the tool environment and graph of
    the question's snapshot (``env`` may be ``None`` when only CoT runs), the config, and provenance (``run_id``,
    the teacher's ``model`` name)."""

    gateway: LLMGateway
    env: ToolRunner | None
    kg: KnowledgeGraph | None
    cfg: DistillConfig = field(default_factory=DistillConfig)
    run_id: str | None = None
    model: str | None = None


def _base(job: DistillJob, ctx: DistillContext, **kw: Any) -> dict[str, Any]:
    qa = job.qa
    return {
        "trajectory_id": make_trajectory_id(qa.qa_id, job.kind, job.sample), "qa_id": qa.qa_id, "kind": job.kind,
        "sample": job.sample, "domain": qa.domain, "snapshot_id": qa.snapshot_id, "split": qa.split,
        "question": qa.question, "golden_answer": qa.answer, "run_id": ctx.run_id, "model": ctx.model, **kw,
    }  # fmt: skip


def _failure_end(failure: LLMFailure | None) -> str:
    """``end_reason`` of a teacher failure: ``"error"`` when the endpoint gave no answer (down, timed out, refused:
    a re-run should try again, as for a rollout that ended in ``error``), ``"invalid_output"`` when the teacher
    answered but the answer was unusable (a final verdict)."""
    if failure is not None and failure.kind not in ("validation", "truncated"):
        return "error"
    return "invalid_output"


def _reject(job: DistillJob, ctx: DistillContext, reason: TrajectoryRejectReason, detail: str, **kw: Any) -> Trajectory:
    return Trajectory(**_base(job, ctx, status="rejected", reject_reason=reason, detail=detail, **kw))


async def distill_template(job: DistillJob, gold_paths: Sequence[GoldPath], ctx: DistillContext) -> Trajectory:
    """A template trajectory for ``job.qa`` (module docstring). It walks the question's own path, confirmed by
    the verifier (or not verified at all): its thoughts say what each step looks for, and the question describes
    that path's relations. A verified alternative path reaches the same answer through other relations ("the
    person who sailed on HMS Beagle" where the question asks for "the place reached by HMS Beagle"), so reasoning
    along it would contradict the question; rollouts and long CoT may still use it."""
    qa, cfg = job.qa, ctx.cfg
    if ctx.env is None:
        raise ValueError("template trajectories need a tool environment")
    tools = list(OMNE_TOOLS)
    every = choose_gold_paths(qa, gold_paths)
    choices = [c for c in every if list(c.path) == list(qa.path)]
    if not every:
        return _reject(job, ctx, "no_gold_path", "the verifier judged every candidate path invalid", tools=tools)
    if not choices:
        return _reject(job, ctx, "no_gold_path", "the verifier did not confirm the question's own path (it confirmed "
                       f"{len(every)} other path(s), whose relations the question does not describe)", tools=tools)
    failures: list[tuple[TrajectoryRejectReason, str, GoldChoice, list[ToolStep]]] = []
    chosen: tuple[GoldChoice, list[ToolStep]] | None = None
    for choice in choices:
        calls = len(template_calls(choice.path, qa.domain, program_pins(qa.program)))
        if calls > cfg.max_rounds:  # one matcher call, one node_info per hop, and one for a pinned answer
            hops = len(choice.path) - 1
            problem: tuple[TrajectoryRejectReason, str] | None = (
                "too_many_rounds", f"walking {hops} hops takes {calls} tool calls; the limit is {cfg.max_rounds}")
            steps: list[ToolStep] = []
        else:
            # The tool calls on a worker thread, off the event loop that drives the other jobs' LLM calls.
            steps, problem = await asyncio.to_thread(run_template_tools, LoopSafeTools(ctx.env), choice.path,
                                                     qa.domain, program_pins(qa.program))
        if problem is None:
            chosen = (choice, steps)
            break
        failures.append((problem[0], problem[1], choice, steps))
    system = build_system_prompt(ctx.env, qa.domain, cfg.agent_config(style="api"))
    if chosen is None:
        reason, detail, choice, steps = failures[0]  # the preferred path's problem is the one worth reporting
        return _reject(job, ctx, reason, detail, tools=tools, gold_path=list(choice.path), gold_source=choice.source,
                       messages=template_messages(system, qa.question, qa.answer, steps)[:-1], n_rounds=len(steps))
    choice, steps = chosen
    messages = template_messages(system, qa.question, qa.answer, steps)
    common = dict(messages=messages, tools=tools, gold_path=list(choice.path), gold_source=choice.source,
                  n_rounds=len(steps), final_answer=qa.answer)
    names = list(dict.fromkeys([*choice.path, qa.answer]))
    observations = [s_.observation for s_ in steps]
    if cfg.thought_writer == "template":
        if ctx.kg is None:
            raise ValueError("template-written thoughts need the question's graph")
        try:
            edges = path_edges(ctx.kg, choice.path)
            types = [ctx.kg.entity(n).type if n in ctx.kg else None for n in choice.path]
            book = book_for_graph(ctx.kg)
            thoughts = write_thoughts(qa.question, choice.path, edges, types, graph=qa.domain, seed=cfg.seed,
                                      book=book, pins=pin_facts(ctx.kg, qa.program, book) if qa.program else None)
        except TemplateError as exc:
            return _reject(job, ctx, "template_unphrasable", str(exc), reasoning=[None] * (len(steps) + 1),
                           writer="template", **common)
        # The writer vouches for nothing by itself: its thoughts pass the same checks as the teacher's.
        problem = thought_problems(thoughts, qa.question, choice.path, steps)
        gate = thought_gate_problem(thoughts, language=cfg.language, names=names, observations=observations)
        if problem is not None or gate is not None:
            reason: TrajectoryRejectReason = "thoughts_leak" if problem is not None else gate[0]  # type: ignore[index]
            detail = problem[1] if problem is not None else gate[1]  # type: ignore[index]
            return _reject(job, ctx, reason, detail, reasoning=list(thoughts), writer="template", **common)
        return Trajectory(
            **_base(job, ctx, status="accepted", reasoning=thoughts, end_reason="answer", writer="template",
                    path_coverage=best_path_coverage("\n".join(thoughts), [choice]), **common)
        )  # fmt: skip
    kinds: list[str] = []

    def check(value: StepThoughts) -> str | None:
        found = thought_problems(value.thoughts, qa.question, choice.path, steps)
        if found is None:
            gate = thought_gate_problem(value.thoughts, language=cfg.language, names=names, observations=observations)
            if gate is None:
                return None
            kinds.append(gate[0])
            return gate[1]
        kinds.append(found[0])
        return found[1]

    result = await ctx.gateway.structured(
        cfg.role, template_teacher_messages(qa, choice.path, steps, observation_chars=cfg.teacher_observation_chars),
        StepThoughts, schema=thoughts_schema(len(steps) + 1), name="template_thoughts", validate=check,
    )  # fmt: skip
    if not result.ok or result.value is None:
        last = kinds[-1] if kinds else ""
        reason = "thoughts_leak" if last == "leak" else (last if last.startswith("thought_") else "llm_error")
        detail = result.failure.message if result.failure is not None else "no thoughts"
        return _reject(job, ctx, reason, detail, reasoning=[None] * (len(steps) + 1),  # type: ignore[arg-type]
                       end_reason=_failure_end(result.failure), **common)
    thoughts = [t.strip() for t in result.value.thoughts]
    return Trajectory(
        **_base(job, ctx, status="accepted", reasoning=thoughts, end_reason="answer",
                path_coverage=best_path_coverage("\n".join(thoughts), [choice]), **common)
    )  # fmt: skip


async def distill_rollout(job: DistillJob, gold_paths: Sequence[GoldPath], ctx: DistillContext) -> Trajectory:
    """One teacher rollout of the tool loop for ``job.qa``, judged against the gold answer."""
    qa, cfg = job.qa, ctx.cfg
    if ctx.env is None:
        raise ValueError("rollouts need a tool environment")
    params = {"temperature": cfg.rollout_temperature, "seed": rollout_seed(cfg.seed, qa.qa_id, job.sample)}
    run = await run_agent(ctx.gateway, LoopSafeTools(ctx.env), qa.question, qa.domain, cfg.agent_config(params=params))
    reason, detail = judge_rollout(run, qa.answer, allow_extra=cfg.allow_extra_answers)
    messages, reasoning = rollout_messages(run)
    choices = choose_gold_paths(qa, gold_paths)
    think = "\n".join(r for r in reasoning if r)
    fields = dict(
        messages=messages, reasoning=reasoning, final_answer=run.final_answer, n_rounds=run.rounds,
        repeated_calls=run.repeated_calls, end_reason=run.end_reason, tools=list(OMNE_TOOLS), params=params,
        prompt_tokens=run.tokens.prompt, completion_tokens=run.tokens.completion,
        path_coverage=best_path_coverage(think, choices) if choices else None,
        gold_path=list(choices[0].path) if choices else [], gold_source=choices[0].source if choices else None,
    )  # fmt: skip
    if reason is None:
        found = rollout_gate_problem(messages, reasoning, qa, cfg.language)
        if found is not None:
            reason, detail = found
    if reason is not None:
        return _reject(job, ctx, reason, detail, **fields)
    return Trajectory(**_base(job, ctx, status="accepted", **fields))


async def distill_cot(job: DistillJob, gold_paths: Sequence[GoldPath], ctx: DistillContext) -> Trajectory:
    """One single-pass long-CoT trajectory for ``job.qa`` over its subgraph."""
    qa, cfg = job.qa, ctx.cfg
    if ctx.kg is None:
        raise ValueError("CoT trajectories need the question's graph")
    choices = choose_gold_paths(qa, gold_paths)
    if not choices:
        return _reject(job, ctx, "no_gold_path", "the verifier judged every candidate path invalid")
    answers = [qa.answer]
    triples = cot_subgraph(ctx.kg, choices, qa.qa_id, max_distractors=cfg.max_distractors, seed=cfg.seed)
    student = cot_student_messages(qa, triples)
    params = {"max_tokens": cfg.cot_max_tokens}
    result = await ctx.gateway.chat(cfg.role, cot_teacher_messages(qa, triples, answers), params=params,
                                    validate=cot_format_problem)
    common = dict(gold_path=list(choices[0].path), gold_source=choices[0].source, params=params,
                  prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens)
    failure = result.failure
    if failure is not None and failure.kind != "validation":
        return _reject(job, ctx, "llm_error", failure.message, messages=student, end_reason=_failure_end(failure),
                       **common)
    reason, detail, coverage = judge_cot(result.text, result.reasoning, answers, choices, cfg.min_path_coverage)
    if reason is None:
        # The reasoning quotes triples, so only the language and loop gates apply (not the paste or markup ones).
        names = list(dict.fromkeys(n for t in triples for n in (t[0], t[2])))
        found = thought_problem(result.reasoning or "", language=cfg.language, names=names)
        if found is not None and found[0] in ("thought_repetitive", "thought_wrong_language"):
            reason, detail = found[0], f"the reasoning: {found[1]}"  # type: ignore[assignment]
    answer = extract_answer(result.text)
    # A kept sample answers with the gold names as written (the match allowed case and quote differences).
    items = list(answers) if reason is None else parse_answer_list(answer)
    final = f"<answer>{json.dumps(items, ensure_ascii=False)}</answer>" if answer is not None else result.text
    messages = [*student, {"role": "assistant", "content": final}]
    fields = dict(messages=messages, reasoning=[result.reasoning], final_answer=answer, path_coverage=coverage,
                  **common)
    if reason is not None:
        return _reject(job, ctx, reason, detail, **fields)
    return Trajectory(**_base(job, ctx, status="accepted", end_reason="answer", **fields))


Distiller = Callable[[DistillJob, Sequence[GoldPath], DistillContext], Awaitable[Trajectory]]

#: One coroutine per kind (a registry, so a new kind is one entry).
DISTILLERS: dict[str, Distiller] = {"template": distill_template, "rollouts": distill_rollout, "cot": distill_cot}


async def distill_one(job: DistillJob, gold_paths: Sequence[GoldPath], ctx: DistillContext) -> Trajectory:
    """The trajectory for one job, by its kind. ``KeyError`` for an unknown kind (a programming error)."""
    return await DISTILLERS[job.kind](job, gold_paths, ctx)


def jobs_for(
    qas: Sequence[QA], kinds: Sequence[str], n_rollouts: int, done: Collection[tuple[str, str, int]] = ()
) -> list[DistillJob]:
    """Every job for ``qas`` and ``kinds`` not in ``done`` (``(qa_id, kind, sample)`` already stored), ordered by
    question, then kind, then sample."""
    jobs = []
    for qa in sorted(qas, key=lambda q: q.qa_id):
        for kind in kinds:
            for sample in range(n_rollouts if kind == "rollouts" else 1):
                if (qa.qa_id, kind, sample) not in done:
                    jobs.append(DistillJob(qa, kind, sample))
    return jobs


__all__ = [
    "COT_SYSTEM",
    "DISTILLERS",
    "DistillConfig",
    "DistillContext",
    "DistillJob",
    "GoldChoice",
    "LoopSafeTools",
    "StepThoughts",
    "ToolStep",
    "answer_matches",
    "answer_set_matches",
    "best_path_coverage",
    "choose_gold_paths",
    "cot_context",
    "cot_format_problem",
    "cot_student_messages",
    "cot_subgraph",
    "cot_teacher_messages",
    "distill_cot",
    "distill_one",
    "distill_rollout",
    "distill_template",
    "excerpt",
    "jobs_for",
    "judge_cot",
    "judge_rollout",
    "lists_entity",
    "normalize_answer",
    "path_coverage",
    "relation_terms",
    "rollout_gate_problem",
    "rollout_messages",
    "rollout_seed",
    "pin_facts",
    "program_pins",
    "run_template_tools",
    "template_calls",
    "template_messages",
    "template_teacher_messages",
    "thought_gate_problem",
    "thought_problems",
    "thoughts_schema",
    "tool_argument_gate",
    "triple_mentioned",
]
