"""Teacher rollouts (rejection sampling) of the tool loop.

``tasks.env.agent_loop.run_agent`` with the teacher, ``n`` samples per question with distinct sampling seeds (so
the samples differ and the response cache, keyed on the parameters, does not hand back the same one).
Kept when the run ended with an answer that matches the gold answer (``answer_matches``), needed no protocol
reminder, and every tool call was well formed and ran.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from schemas.ids import content_digest
from schemas.qa import QA, GoldPath
from schemas.tools import OMNE_TOOLS, AgentRun
from schemas.trajectories import Trajectory, TrajectoryRejectReason
from tasks.distill.common import (
    DistillContext,
    DistillJob,
    LoopSafeTools,
    _base,
    _call_id,
    _reject,
    answer_matches,
    best_path_coverage,
    choose_gold_paths,
    thought_gate_problem,
)
from tasks.env.agent_loop import run_agent
from tasks.qa.text_gates import tool_argument_problem


# -- rollouts ----------------------------------------------------------------------------------------------------------


def rollout_seed(base_seed: int, qa_id: str, sample: int) -> int:
    """The sampling seed of one rollout: distinct per question and sample, stable across runs (a resumed run
    sends the same request, so the cache answers it)."""
    return int(content_digest(str(base_seed), qa_id, str(sample))[:8], 16)


def rollout_gate_problem(
    messages: Sequence[Mapping[str, Any]], reasoning: Sequence[str | None], qa: QA, language: str
) -> tuple[TrajectoryRejectReason, str] | None:
    """The first problem of a correct rollout's form: a tool call's arguments (``tool_argument_gate``), or its
    thoughts (``thought_gate_problem``, with the path's names and the tool replies as what the thoughts may cite)."""
    names = list(dict.fromkeys([*qa.path, qa.answer]))
    observations = [str(m.get("content") or "") for m in messages if m.get("role") == "tool"]
    return tool_argument_gate(messages) or thought_gate_problem(
        reasoning, language=language, names=names, observations=observations)


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


# -- one question --------------------------------------------------------------------------------------------------


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


__all__ = [
    "distill_rollout",
    "judge_rollout",
    "rollout_gate_problem",
    "rollout_messages",
    "rollout_seed",
    "tool_argument_gate",
]
