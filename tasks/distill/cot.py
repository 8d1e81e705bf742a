"""Single-pass long chain of thought (Explore-on-Graph, section 3.1 and figure 9).

The question, its start entity, a shuffled subgraph (the gold paths' triples plus neighbouring distractor
triples) and the answer go to the teacher, which writes ``<think>…</think><answer>[…]</answer>``. Kept when
the answer set equals the gold set and the reasoning mentions at least ``min_path_coverage`` of a gold
path's triples (``path_coverage``, the Explore-on-Graph path reward). The stored conversation is the
student's: the same context WITHOUT the answer, and the teacher's reasoning as the assistant's thought.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

from gateway.client import ChatResult
from schemas.ids import content_digest
from schemas.qa import QA, GoldPath
from schemas.trajectories import Trajectory, TrajectoryRejectReason
from tasks.distill.common import (
    DistillContext,
    DistillJob,
    GoldChoice,
    _base,
    _failure_end,
    _reject,
    best_path_coverage,
    choose_gold_paths,
)
from tasks.graph.kg import KnowledgeGraph
from tasks.env.tool_calls import extract_answer, parse_answer_list
from tasks.qa.text_gates import thought_problem
from schemas.answers import answer_set_matches


# -- long CoT --------------------------------------------------------------------------------------------------------


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


__all__ = [
    "COT_SYSTEM",
    "cot_context",
    "cot_format_problem",
    "cot_student_messages",
    "cot_subgraph",
    "cot_teacher_messages",
    "distill_cot",
    "judge_cot",
]
