"""Leak-safe train / validation / test splits: questions that share an entity never land in different splits.

Questions are linked (union-find) when they share a linking entity of the same domain; each connected group
goes to one split whole. Linking entities, by ``link``:

- ``"answer+seed"`` (default): the answer node and the seed node. Both go into one entity namespace, so a
  question answered by X and another one grown from seed X are linked too: a model trained on questions
  starting at X has been shown X's neighbourhood, which is where the other question's answer sits.
- ``"all_path_entities"`` (strict): every node of the path, plus the seed and the answer. On a small, dense
  graph this can merge most questions into one group; the achieved proportions then say so.

Entities are compared by ``tasks.graph.kg.normalize_name`` within their domain.

Assignment: groups are ordered by size (largest first), ties by a hash of ``(seed, the group's smallest id)``
so the seed decides among equals; each group goes to the split whose count is furthest below its target
(``target share * total - assigned``), ties to the split with the larger target, then the earlier split.
Largest-first makes the small groups that come last fill the remaining gaps, so proportions land within a few
percent whenever no single group is larger than that.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from schemas.qa import QA, SPLITS, Split
from tasks.graph.kg import normalize_name

LinkMode = Literal["answer+seed", "all_path_entities"]
DEFAULT_PROPORTIONS: dict[str, float] = {"train": 0.8, "validation": 0.1, "test": 0.1}


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))
        self.size = [1] * n

    def find(self, x: int) -> int:
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:  # path compression
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]


@dataclass
class SplitResult:
    """``assignment`` maps each ``qa_id`` to its split. ``achieved``/``targets`` are shares of all questions per
    split; ``max_deviation`` is the largest ``|achieved - target|``; ``groups`` the number of linked groups
    and ``largest_group`` the size of the biggest one (a group larger than a split's share makes that split's
    target unreachable)."""

    assignment: dict[str, Split]
    targets: dict[str, float]
    achieved: dict[str, float]
    counts: dict[str, int]
    groups: int
    largest_group: int
    link: LinkMode
    max_deviation: float = field(init=False)

    def __post_init__(self) -> None:
        self.max_deviation = max((abs(self.achieved[s] - self.targets[s]) for s in self.targets), default=0.0)

    def summary(self) -> str:
        parts = ", ".join(f"{s} {self.counts[s]} ({self.achieved[s]:.1%} vs {self.targets[s]:.0%})" for s in self.targets)
        return f"{len(self.assignment)} questions in {self.groups} groups (largest {self.largest_group}): {parts}"


def check_proportions(proportions: Mapping[str, float]) -> dict[str, float]:
    """Validate split shares: known split names, each >= 0, summing to 1 (within 1e-6). Returns them in
    train / validation / test order; ``ValueError`` with the reason otherwise."""
    unknown = sorted(set(proportions) - set(SPLITS))
    if unknown:
        raise ValueError(f"unknown split name(s) {unknown}; splits are {list(SPLITS)}")
    bad = {k: v for k, v in proportions.items() if not v >= 0}
    if bad:
        raise ValueError(f"split shares must be >= 0, got {bad}")
    total = sum(proportions.values())
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"split shares must sum to 1, got {total:g} from {dict(proportions)}")
    return {s: float(proportions[s]) for s in SPLITS if s in proportions}


def link_entities(qa: QA, link: LinkMode) -> set[tuple[str, str]]:
    """The ``(domain, normalised name)`` keys that link ``qa`` to other questions under ``link``."""
    names = [qa.seed, qa.answer]
    if link == "all_path_entities":
        names.extend(qa.path)
    elif link != "answer+seed":
        raise ValueError(f"link must be 'answer+seed' or 'all_path_entities', got {link!r}")
    return {(qa.domain, normalize_name(n)) for n in names if normalize_name(n)}


def _tie(seed: int, qa_id: str) -> bytes:
    return hashlib.sha256(f"{seed}\x00{qa_id}".encode()).digest()


def assign_splits(
    qas: Sequence[QA],
    *,
    proportions: Mapping[str, float] = DEFAULT_PROPORTIONS,
    link: LinkMode = "answer+seed",
    seed: int = 0,
) -> SplitResult:
    """Assign every question to a split so that no linking entity is shared across splits (module docstring).
    Deterministic: the same questions (in any order), shares, link mode and seed give the same assignment.
    ``ValueError`` for bad shares, an unknown link mode, or two questions with one ``qa_id``."""
    targets = check_proportions(proportions)
    ids = [q.qa_id for q in qas]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"qa_id {dup!r} appears more than once")
    order = sorted(range(len(qas)), key=lambda i: ids[i])  # input order must not matter
    uf = _UnionFind(len(qas))
    owner: dict[tuple[str, str], int] = {}
    for i in order:
        for key in sorted(link_entities(qas[i], link)):
            j = owner.setdefault(key, i)
            if j != i:
                uf.union(i, j)

    groups: dict[int, list[int]] = {}
    for i in order:
        groups.setdefault(uf.find(i), []).append(i)
    members = [sorted(ids[i] for i in g) for g in groups.values()]
    members.sort(key=lambda g: (-len(g), _tie(seed, g[0]), g[0]))

    n = len(qas)
    counts = {s: 0 for s in targets}
    rank = {s: k for k, s in enumerate(targets)}
    assignment: dict[str, Split] = {}
    for g in members:
        split = min(targets, key=lambda s: (-(targets[s] * n - counts[s]), -targets[s], rank[s]))
        counts[split] += len(g)
        for qa_id in g:
            assignment[qa_id] = split  # type: ignore[assignment]
    achieved = {s: (counts[s] / n if n else 0.0) for s in targets}
    return SplitResult(
        assignment=dict(sorted(assignment.items())), targets=targets, achieved=achieved, counts=counts,
        groups=len(members), largest_group=len(members[0]) if members else 0, link=link,
    )  # fmt: skip


def apply_splits(qas: Iterable[QA], result: SplitResult) -> list[QA]:
    """Copies of ``qas`` with ``split`` set from ``result``; ``KeyError`` for a question it did not assign."""
    return [q.model_copy(update={"split": result.assignment[q.qa_id]}) for q in qas]


def shared_entities(qas: Sequence[QA], assignment: Mapping[str, str], link: LinkMode) -> dict[tuple[str, str], set[str]]:
    """Linking entities that appear in more than one split, with those splits (empty when the split is
    leak-safe). Used by tests and by export to assert the property on the final data."""
    seen: dict[tuple[str, str], set[str]] = {}
    for q in qas:
        for key in link_entities(q, link):
            seen.setdefault(key, set()).add(assignment[q.qa_id])
    return {k: v for k, v in seen.items() if len(v) > 1}


__all__ = [
    "DEFAULT_PROPORTIONS",
    "LinkMode",
    "SplitResult",
    "apply_splits",
    "assign_splits",
    "check_proportions",
    "link_entities",
    "shared_entities",
]
