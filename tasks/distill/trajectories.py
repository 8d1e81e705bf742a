"""Trajectory distillation: template-filled tool traces, teacher rollouts, single-pass long CoT.

Each kind is a build-messages / call / judge pipeline whose parts are plain functions, tested on their own; the
``distill_*`` coroutines string them together for one question and always return a ``Trajectory`` (accepted,
or rejected with a reason code), never raise for model or endpoint problems.

``template`` (Omne-R1, section 3.3 and appendix A)
    The canonical tool sequence along a gold path, with real tool outputs, and the teacher's thoughts written in
    one structured call (``tasks.distill.template``).

``rollouts`` (rejection sampling)
    Teacher runs of the tool loop, kept when they answer right with well-formed calls (``tasks.distill.rollout``).

``cot`` (Explore-on-Graph, section 3.1 and figure 9)
    The teacher's long reasoning over a shuffled subgraph, kept when it answers right and covers a gold path
    (``tasks.distill.cot``).

What the kinds share (the config, gold paths, a job and its context) is in ``tasks.distill.common``. This module
lists the jobs for a set of questions and hands each to its kind's coroutine.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence

from schemas.qa import QA, GoldPath
from schemas.trajectories import Trajectory
from tasks.distill.common import DistillContext, DistillJob
from tasks.distill.cot import distill_cot
from tasks.distill.rollout import distill_rollout
from tasks.distill.template import distill_template


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
    "DISTILLERS",
    "distill_one",
    "jobs_for",
]
