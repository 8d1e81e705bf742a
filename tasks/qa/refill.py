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
  1-2. Their ``sample_rank`` follows the planned seeds' (``n_seeds`` and up): a re-run finds its planned seeds as
  the ranks below ``n_seeds`` and the refill seeds above, and takes the same refill seeds again (the choice is
  deterministic), running only the jobs that have no final verdict;
- **falling back**: where the mix asks for both classes (``fall_back``), the 3+ seeds the scan could not find (a
  graph of rows and their columns has no three-step program anywhere) are given to the 1-2 class instead: one seed
  per 3+ question still missing (so a run never asks more than it was asked for), taken where a two-step program
  stands (a 1-2 job tries two hops before one), after the 1-2 class's own refill; the run summary shows them as 1-2
  refill seeds beside a 3+ shortfall.

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
                 run_id: str | None, used: Iterable[str], fall_back: bool = False) -> list[tuple[Seed, str]]:
    """``(seed, hop class)`` for each refill seed (module docstring), 3+ first; empty with ``factor`` 0. With
    ``fall_back``, one more 1-2 seed, where two steps stand, for each 3+ question the found 3+ seeds leave missing."""
    if factor <= 0:
        return []
    taken = set(used)
    out: list[tuple[Seed, str]] = []

    def take(hop_class: str, want: int, steps: int) -> int:
        """Up to ``want`` seeds for ``hop_class`` where ``steps`` steps of a program stand; how many were found."""
        if rule.programs and steps > 1:
            def keep(node: str) -> bool:
                return rule.keep(node) and rule.depth(node) >= steps
        else:
            keep = rule.keep
        found = sample_seeds(eligible, want, sampling_seed, domain=domain, snapshot_id=snapshot_id, exclude=taken,
                             run_id=run_id, keep=_bounded(keep, SCAN_PER_SEED * want),
                             prefer=rule.prefer if rule.programs else None, window=PREFER_WINDOW)
        for s in found:
            taken.add(s.node)
            out.append((s.model_copy(update={"sample_rank": n_seeds + len(out)}), hop_class))
        return len(found)

    carried = 0  # 3+ questions no found seed stands for, given to 1-2 when falling back
    for hop_class in REFILL_ORDER:
        short = missing.get(hop_class, 0)
        if short > 0:
            want = min(n_seeds, math.ceil(factor * short / max(1, n_modes)))
            found = take(hop_class, want, 3 if hop_class == "3+" else 1)
            if hop_class == "3+" and fall_back:  # one seed per 3+ question still missing: never more than asked
                carried = max(0, math.ceil(short / max(1, n_modes) - found / factor))
    if carried > 0:  # where two steps stand, so the 1-2 job asks two hops
        take("1-2", min(n_seeds, carried), 2)
    return out


__all__ = ["REFILL_ORDER", "SCAN_PER_SEED", "missing_jobs", "refill_seeds"]
