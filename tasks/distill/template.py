"""Template trajectories (Omne-R1, section 3.3 and appendix A): template-filled tool traces.

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
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from schemas.programs import QueryProgram
from schemas.qa import QA, GoldPath
from schemas.tools import OMNE_TOOLS
from schemas.trajectories import Trajectory, TrajectoryRejectReason
from tasks.distill.common import (
    DistillContext,
    DistillJob,
    GoldChoice,
    LoopSafeTools,
    _base,
    _call_id,
    _failure_end,
    _reject,
    best_path_coverage,
    choose_gold_paths,
    thought_gate_problem,
)
from tasks.env.agent_loop import ToolRunner, build_system_prompt
from tasks.graph.kg import KnowledgeGraph
from tasks.qa.context import path_edges
from tasks.meaning.profiles import ProfileBook, book_for_graph
from tasks.qa.programs import constraint_edges
from tasks.qa.template_writer import TemplateError, fact_sentence, write_thoughts
from schemas.answers import flat_text as _flat


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


# -- one question --------------------------------------------------------------------------------------------------


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
    chosen, failures = await _walk_first_path(job, choices, ctx.env, ctx)
    system = build_system_prompt(ctx.env, qa.domain, cfg.agent_config(style="api"))
    if chosen is None:
        reason, detail, choice, steps = failures[0]  # the preferred path's problem is the one worth reporting
        return _reject(job, ctx, reason, detail, tools=tools, gold_path=list(choice.path), gold_source=choice.source,
                       messages=template_messages(system, qa.question, qa.answer, steps)[:-1], n_rounds=len(steps))
    choice, steps = chosen
    messages = template_messages(system, qa.question, qa.answer, steps)
    common = dict(messages=messages, tools=tools, gold_path=list(choice.path), gold_source=choice.source,
                  n_rounds=len(steps), final_answer=qa.answer)
    if cfg.thought_writer == "template":
        return _with_written_thoughts(job, ctx, choice, steps, common)
    return await _with_teacher_thoughts(job, ctx, choice, steps, common)


_PathFailure = tuple[TrajectoryRejectReason, str, GoldChoice, list[ToolStep]]


async def _walk_first_path(
    job: DistillJob, choices: Sequence[GoldChoice], env: ToolRunner, ctx: DistillContext
) -> tuple[tuple[GoldChoice, list[ToolStep]] | None, list[_PathFailure]]:
    """The first of ``choices`` whose template tool calls all run (with its steps), and each earlier path's problem:
    too many rounds for ``max_rounds``, or a tool call that failed."""
    qa, cfg = job.qa, ctx.cfg
    failures: list[_PathFailure] = []
    for choice in choices:
        calls = len(template_calls(choice.path, qa.domain, program_pins(qa.program)))
        if calls > cfg.max_rounds:  # one matcher call, one node_info per hop, and one for a pinned answer
            hops = len(choice.path) - 1
            problem: tuple[TrajectoryRejectReason, str] | None = (
                "too_many_rounds", f"walking {hops} hops takes {calls} tool calls; the limit is {cfg.max_rounds}")
            steps: list[ToolStep] = []
        else:
            # The tool calls on a worker thread, off the event loop that drives the other jobs' LLM calls.
            steps, problem = await asyncio.to_thread(run_template_tools, LoopSafeTools(env), choice.path,
                                                     qa.domain, program_pins(qa.program))
        if problem is None:
            return (choice, steps), failures
        failures.append((problem[0], problem[1], choice, steps))
    return None, failures


def _with_written_thoughts(
    job: DistillJob, ctx: DistillContext, choice: GoldChoice, steps: list[ToolStep], common: dict[str, Any]
) -> Trajectory:
    """The trajectory with thoughts from the template writer (``thought_writer="template"``), checked as the
    teacher's are: accepted, or rejected as unphrasable, leaking or failing the text gate."""
    qa, cfg = job.qa, ctx.cfg
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
    gate = thought_gate_problem(thoughts, language=cfg.language, names=_path_names(qa, choice),
                                observations=[s_.observation for s_ in steps])
    if problem is not None or gate is not None:
        reason: TrajectoryRejectReason = "thoughts_leak" if problem is not None else gate[0]  # type: ignore[index]
        detail = problem[1] if problem is not None else gate[1]  # type: ignore[index]
        return _reject(job, ctx, reason, detail, reasoning=list(thoughts), writer="template", **common)
    return Trajectory(
        **_base(job, ctx, status="accepted", reasoning=thoughts, end_reason="answer", writer="template",
                path_coverage=best_path_coverage("\n".join(thoughts), [choice]), **common)
    )  # fmt: skip


async def _with_teacher_thoughts(
    job: DistillJob, ctx: DistillContext, choice: GoldChoice, steps: list[ToolStep], common: dict[str, Any]
) -> Trajectory:
    """The trajectory with thoughts the teacher writes (``template_teacher_messages``), each reply checked for
    leaks and by the text gate (a failed check is retried by the gateway): accepted, or rejected with the last
    check's kind."""
    qa, cfg = job.qa, ctx.cfg
    names = _path_names(qa, choice)
    observations = [s_.observation for s_ in steps]
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


def _path_names(qa: QA, choice: GoldChoice) -> list[str]:
    """The names a thought may use: the path's nodes and the answer, each once."""
    return list(dict.fromkeys([*choice.path, qa.answer]))


__all__ = [
    "StepThoughts",
    "ToolStep",
    "distill_template",
    "excerpt",
    "lists_entity",
    "pin_facts",
    "program_pins",
    "run_template_tools",
    "template_calls",
    "template_messages",
    "template_teacher_messages",
    "thought_problems",
    "thoughts_schema",
]
