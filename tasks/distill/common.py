"""What the trajectory distillers share: their configuration, answer matching, the choice of gold paths, a job and
its context, the fields of a stored trajectory and of a rejected one, a tool runner that works inside the event loop,
and the checks and scores more than one kind applies (the thought gates, the path coverage).

The kinds themselves are in ``tasks.distill.template``, ``tasks.distill.rollout`` and ``tasks.distill.cot``;
``tasks.distill.trajectories`` lists the jobs and hands each to its kind.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from gateway.client import LLMFailure, LLMGateway
from schemas.errors import InputError
from schemas.qa import QA, GoldPath
from schemas.tools import OMNE_TOOLS, Observation
from schemas.trajectories import (
    GoldSource,
    Trajectory,
    TrajectoryRejectReason,
    make_trajectory_id,
)
from tasks.env.agent_loop import AgentConfig, ToolRunner
from tasks.graph.kg import KnowledgeGraph
from tasks.env.tool_calls import parse_answer_list
from tasks.qa.text_gates import thought_problem
from schemas.answers import path_coverage
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


# -- tools and conversations -------------------------------------------------------------------------------------


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


# -- checks and scores shared by the kinds -------------------------------------------------------------------------


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


def best_path_coverage(think: str, choices: Sequence[GoldChoice]) -> float:
    """The path reward against the best-covered gold path: any verified path is a valid way to the answer."""
    return max((path_coverage(think, c.triples) for c in choices), default=0.0)


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


__all__ = [
    "DistillConfig",
    "DistillContext",
    "DistillJob",
    "GoldChoice",
    "LoopSafeTools",
    "answer_matches",
    "best_path_coverage",
    "choose_gold_paths",
    "thought_gate_problem",
]
