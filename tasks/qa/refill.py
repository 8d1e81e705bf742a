"""Filling the requested mix: after a run's planned jobs, a hop class whose jobs gave fewer questions than it was
given jobs gets jobs on further seeds.

``qa generate`` gives each sampled seed one hop class (``assign_hop_classes``, by ``hop_mix``). A job can end
without a question: its seed offers no program of that length, every attempt failed a check, the judge refused.
The 3+ class loses most (a seed where a three-step program stands is rarer), and the sets this factory feeds are
mostly of two hops or more. So, once the planned jobs have a final verdict, each class short of questions is
given further seeds:

- **how many**: ``factor`` seeds per missing question (``missing_jobs``: planned jobs of the class that ended
  without a question; a job an endpoint failure touched is not missing, a re-run resumes it), at most ``n_seeds``
  a class;
- **which**: the next seeds in the run's own hash-rank order (``sample_seeds`` with the planned seeds excluded),
  kept by the run's seed rule and, for the 3+ class with the template writer, only where a three-step program
  stands (``SeedRule.depth``). The scan for them stops after ``SCAN_PER_SEED`` × the seeds wanted, so a graph
  with few deep seeds is not searched node by node;
- **in what order**: the 3+ class first (its seeds are the rarer, and a node taken for it is not offered again), then
  1-2. Their ``sample_rank`` follows the planned seeds' (``n_seeds`` and up): a re-run finds its planned seeds
  as the ranks below ``n_seeds`` and the refill seeds above, and takes the same refill seeds again (the choice is
  deterministic), running only the jobs that have no final verdict.

One round: refill jobs that give no question are not replaced in turn.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

from schemas.qa import Seed
from tasks.qa.seed_rule import PREFER_WINDOW, SeedRule
from tasks.qa.seeds import sample_seeds

#: Nodes the refill may ask the seed rule about, per seed wanted.
SCAN_PER_SEED = 20
#: The order classes are refilled in.
REFILL_ORDER: tuple[str, ...] = ("3+", "1-2")


def missing_jobs(planned: Iterable[tuple[str, str, str]], unanswered: set[tuple[str, str, str]]) -> dict[str, int]:
    """Per hop class, the planned jobs ``(seed, hop class, mode)`` that ended without a question
    (``unanswered``: a job with records, none accepted, none lost to an endpoint)."""
    out: dict[str, int] = {}
    for key in planned:
        if key in unanswered:
            out[key[1]] = out.get(key[1], 0) + 1
    return out


def _bounded(keep: Callable[[str], bool], limit: int) -> Callable[[str], bool]:
    """``keep``, answering False once it has been asked ``limit`` times."""
    asked = 0

    def bounded(node: str) -> bool:
        nonlocal asked
        asked += 1
        return asked <= limit and keep(node)

    return bounded


def refill_seeds(eligible: Sequence[tuple[str, int]], rule: SeedRule, missing: Mapping[str, int], *, n_seeds: int,
                 n_modes: int, factor: float, sampling_seed: int, domain: str, snapshot_id: str | None,
                 run_id: str | None, used: Iterable[str]) -> list[tuple[Seed, str]]:
    """``(seed, hop class)`` for each refill seed (module docstring), 3+ first; empty with ``factor`` 0."""
    if factor <= 0:
        return []
    taken = set(used)
    out: list[tuple[Seed, str]] = []
    for hop_class in REFILL_ORDER:
        short = missing.get(hop_class, 0)
        if short <= 0:
            continue
        want = min(n_seeds, math.ceil(factor * short / max(1, n_modes)))
        if hop_class == "3+" and rule.programs:
            def keep(node: str) -> bool:
                return rule.keep(node) and rule.depth(node) >= 3
        else:
            keep = rule.keep
        found = sample_seeds(eligible, want, sampling_seed, domain=domain, snapshot_id=snapshot_id, exclude=taken,
                             run_id=run_id, keep=_bounded(keep, SCAN_PER_SEED * want),
                             prefer=rule.prefer if rule.programs else None, window=PREFER_WINDOW)
        for s in found:
            taken.add(s.node)
            out.append((s.model_copy(update={"sample_rank": n_seeds + len(out)}), hop_class))
    return out


__all__ = ["REFILL_ORDER", "SCAN_PER_SEED", "missing_jobs", "refill_seeds"]
