"""A domain's seeds and jobs for ``qa generate``, from the run's seed count down: the one place ``n_seeds`` goes.

The flow checks its parameters (``flows.params.GenerateQA``), resolves the ball bounds from the configuration and
hands ``n_seeds`` here once, in a ``SeedPlan``; from then on the plan carries it. A plan says:

- which earlier sample this run would repeat (``same_sample``: the same ``n_seeds`` and ball bounds as a recorded
  run's parameters, on the same snapshot and sampling seed), and whether a domain is settled by it (``settled``:
  the planned seeds rank below ``n_seeds``, the refill seeds from ``n_seeds`` up, ``tasks.qa.refill``);
- the sample itself (``eligible``: the nodes within the ball bounds; ``sample``: the ``n_seeds`` first of them in
  hash-rank order the seed rule keeps, arranged for their hop classes with the template writer) and why it fell
  short (``shortfall``);
- the jobs ``(seed, hop class, mode)`` of the sampled seeds (``jobs``), their batch sizes (``batch_sizes``) and
  the refill's seeds and jobs (``refill``, ``refill_jobs``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from schemas.qa import Seed
from tasks.graph.kg import KnowledgeGraph
from tasks.qa.candidates import describe_refusals, opening_refusals
from tasks.qa.generate import assign_hop_classes
from tasks.qa.refill import refill_seeds
from tasks.qa.seed_rule import PREFER_WINDOW, SeedRule, arrange
from tasks.qa.seeds import eligible_seeds, no_seed_reason, sample_seeds

#: A unit of generation work: a seed, its hop class and the mode it is asked in.
Job = tuple[Seed, str, str]


def job_key(job: Job) -> tuple[str, str, str]:
    seed, hop, mode = job
    return seed.node, hop, mode


def _chunk_sizes(n: int, size: int) -> list[int]:
    """The sizes of ``range(n)`` cut into pieces of ``size`` (``flows.batches.chunks``)."""
    return [min(size, n - start) for start in range(0, n, size)]


@dataclass(frozen=True)
class SeedPlan:
    """How a ``generate-qa`` run samples each domain's seeds and plans its jobs (module docstring). ``refill``: the
    configuration's refill factor (``seeds.refill``; 0 turns the refill off)."""

    n_seeds: int
    min_ball: int
    max_ball: int
    hop_mix: Mapping[str, float]
    modes: tuple[str, ...]
    sampling_seed: int
    refill_factor: float = 0.0

    def same_sample(self, parameters: Mapping[str, Any]) -> bool:
        """Whether a recorded run with these parameters sampled the seeds this plan would (same snapshot and sampling
        seed assumed)."""
        return (parameters.get("n_seeds"), parameters.get("min_ball"), parameters.get("max_ball")) == (
            self.n_seeds, self.min_ball, self.max_ball)

    def batch_sizes(self, batch_size: int) -> list[int]:
        """A domain's first jobs cut into batches (75 into 64 and 11): batches never span two domains."""
        return _chunk_sizes(self.n_seeds * len(self.modes), batch_size)

    def jobs(self, seeds: Sequence[Seed]) -> list[Job]:
        """The jobs ``(seed, hop class, mode)`` of a domain's seeds, in plan order."""
        hops = assign_hop_classes(seeds, dict(self.hop_mix))
        return [(s, h, m) for s, h in zip(seeds, hops) for m in self.modes]

    def settled(self, earlier: Sequence[Seed], done: set[tuple[str, str, str]]) -> bool:
        """Whether every job on the seeds an earlier run sampled (``earlier``) has a final verdict (``done``): the
        planned seeds' jobs, and every mode of each refill seed."""
        main = [s for s in earlier if s.sample_rank < self.n_seeds]
        refilled = [s for s in earlier if s.sample_rank >= self.n_seeds]
        done_seeds = {(seed, mode) for seed, _, mode in done}
        return all(job_key(j) in done for j in self.jobs(main)) and all(
            (s.node, m) in done_seeds for s in refilled for m in self.modes)

    def eligible(self, kg: KnowledgeGraph, *, keep_large: bool) -> list[tuple[str, int]]:
        """The nodes of ``kg`` whose depth-3 ball holds ``min_ball`` to ``max_ball`` nodes, with their ball sizes.
        With the template writer a program is sampled from the seed's whole neighbourhood: a ball past the bound (a
        node next to a hub) is kept (``keep_large``)."""
        return eligible_seeds(kg, min_ball=self.min_ball, max_ball=self.max_ball, keep_large=keep_large)

    def sample(self, eligible: Sequence[tuple[str, int]], rule: SeedRule, *, domain: str, snapshot_id: str | None,
               run_id: str | None, arranged: bool | None = None) -> list[Seed]:
        """The ``n_seeds`` first of ``eligible`` in hash-rank order that ``rule`` keeps: seeds from which every
        relation names one of many ("IBM built ...") are passed over, as no job on them could be asked (with the
        template writer, unless a program pins such a hop). With the template writer they are ranked by how deep a
        program stands and ``arranged`` (default: so) for their hop classes (``tasks.qa.seed_rule.arrange``)."""
        seeds = sample_seeds(eligible, self.n_seeds, self.sampling_seed, domain=domain, snapshot_id=snapshot_id,
                             run_id=run_id, keep=rule.keep, prefer=rule.prefer if rule.programs else None,
                             window=PREFER_WINDOW)  # fmt: skip
        if rule.programs if arranged is None else arranged:
            seeds = arrange(seeds, dict(self.hop_mix), rule.depth)
        return seeds

    def shortfall(self, kg: KnowledgeGraph, domain: str, eligible: Sequence[tuple[str, int]], seeds: Sequence[Seed],
                  rule: SeedRule) -> str | None:
        """Why a domain gave no seed, or fewer than asked; ``None`` when it gave what was asked (or all it had)."""
        if not eligible:
            return no_seed_reason(kg, domain=domain, min_ball=self.min_ball, max_ball=self.max_ball)
        if not seeds:
            refused = opening_refusals(kg, [n for n, _ in eligible], book=rule.book)
            return (f"none of the {len(eligible)} eligible seeds in domain {domain} can start a candidate path: "
                    f"no relation out of them can be asked: {describe_refusals(refused)}")
        if len(seeds) < self.n_seeds and len(eligible) > len(seeds):
            passed = [n for n, _ in eligible if n not in {s.node for s in seeds}]
            return (f"sampled {len(seeds)} of the {self.n_seeds} seeds asked in domain {domain}: only they of the "
                    f"{len(eligible)} eligible start a path or a program; the others, e.g.: "
                    f"{describe_refusals(opening_refusals(kg, passed[:50], book=rule.book), limit=2)}")
        return None

    @property
    def refills(self) -> bool:
        """Whether the plan refills a short hop class at all (``seeds.refill`` above 0)."""
        return self.refill_factor > 0

    def refill(self, eligible: Sequence[tuple[str, int]], rule: SeedRule, missing: Mapping[str, int], *,
               domain: str, snapshot_id: str | None, run_id: str | None,
               used: Iterable[str]) -> list[tuple[Seed, str]]:
        """The refill's ``(seed, hop class)`` for the classes ``missing`` questions (``tasks.qa.refill``), ranked from
        ``n_seeds`` up; falling back to 1-2 seeds where the mix asks for 1-2 questions too."""
        return refill_seeds(eligible, rule, missing, n_seeds=self.n_seeds, n_modes=len(self.modes),
                            factor=self.refill_factor, sampling_seed=self.sampling_seed, domain=domain,
                            snapshot_id=snapshot_id, run_id=run_id, used=used,
                            fall_back=self.hop_mix.get("1-2", 0) > 0)  # fmt: skip

    def refill_jobs(self, extra: Sequence[tuple[Seed, str]], done: set[tuple[str, str, str]]) -> list[Job]:
        """The jobs of the refill seeds ``extra`` in every mode, but those with a final verdict (``done``)."""
        return [(s, h, m) for s, h in extra for m in self.modes if (s.node, h, m) not in done]


__all__ = ["Job", "SeedPlan", "job_key"]
