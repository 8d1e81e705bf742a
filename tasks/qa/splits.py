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

Refreshes (``stable_splits``): questions that already have a split never move. A new question joins the split
of the old questions it is linked to; one that would link entities already held by two different splits is not
placed by any tie-break: it comes back as a ``SplitConflict`` (reject code ``split_conflict``) and gets no split.
New groups linked to nothing old are assigned like ``assign_splits``, against targets over all questions (old
ones included), so each refresh steers the totals back toward the shares. ``split_leaks`` is the property itself
(no linking entity in two splits); the export refuses to write when it finds any.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from schemas.errors import InputError
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
        raise InputError(f"unknown split name(s) {unknown}; splits are {list(SPLITS)}")
    bad = {k: v for k, v in proportions.items() if not v >= 0}
    if bad:
        raise InputError(f"split shares must be >= 0, got {bad}")
    total = sum(proportions.values())
    if abs(total - 1.0) > 1e-6:
        raise InputError(f"split shares must sum to 1, got {total:g} from {dict(proportions)}")
    return {s: float(proportions[s]) for s in SPLITS if s in proportions}


def link_entities(qa: QA, link: LinkMode) -> set[tuple[str, str]]:
    """The ``(domain, normalised name)`` keys that link ``qa`` to other questions under ``link``."""
    names = [qa.seed, qa.answer]
    if link == "all_path_entities":
        names.extend(qa.path)
    elif link != "answer+seed":
        raise InputError(f"link must be 'answer+seed' or 'all_path_entities', got {link!r}")
    return {(qa.domain, normalize_name(n)) for n in names if normalize_name(n)}


def _tie(seed: int, qa_id: str) -> bytes:
    return hashlib.sha256(f"{seed}\x00{qa_id}".encode()).digest()


def assign_splits(
    qas: Sequence[QA],
    *,
    proportions: Mapping[str, float] = DEFAULT_PROPORTIONS,
    link: LinkMode = "answer+seed",
    seed: int = 0,
    existing: Mapping[str, int] | None = None,
) -> SplitResult:
    """Assign every question to a split so that no linking entity is shared across splits (module docstring).
    Deterministic: the same questions (in any order), shares, link mode and seed give the same assignment.
    ``existing`` counts questions already in each split (a refresh): targets are then shares of those plus
    ``qas``, and ``achieved``/``counts`` cover both. ``ValueError`` for bad shares, an unknown link mode, or two
    questions with one ``qa_id``."""
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

    base = {s: int((existing or {}).get(s, 0)) for s in targets}
    n = len(qas) + sum(base.values())
    counts = dict(base)
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
    leak-safe). Questions missing from ``assignment`` are left out."""
    seen: dict[tuple[str, str], set[str]] = {}
    for q in qas:
        if q.qa_id in assignment:
            for key in link_entities(q, link):
                seen.setdefault(key, set()).add(assignment[q.qa_id])
    return {k: v for k, v in seen.items() if len(v) > 1}


def split_leaks(qas: Sequence[QA], link: LinkMode = "answer+seed") -> dict[tuple[str, str], set[str]]:
    """``shared_entities`` over the splits the questions carry (questions without one are left out): what the
    export checks before it writes anything."""
    return shared_entities(qas, {q.qa_id: q.split for q in qas if q.split}, link)


def describe_leaks(leaks: Mapping[tuple[str, str], set[str]], limit: int = 5) -> str:
    """One line naming the first ``limit`` leaking entities and their splits."""
    shown = "; ".join(f"{d}/{name!r} in {', '.join(sorted(splits))}" for (d, name), splits in sorted(leaks.items())[:limit])
    more = f" and {len(leaks) - limit} more" if len(leaks) > limit else ""
    return f"{len(leaks)} entit{'y' if len(leaks) == 1 else 'ies'} in more than one split: {shown}{more}"


@dataclass(frozen=True)
class SplitConflict:
    """A new question that would link entities already held by different splits (``splits``, via ``entities``).
    It gets no split; the flow stores it as a ``qa_rejects`` row with reason ``split_conflict``."""

    qa_id: str
    entities: tuple[tuple[str, str], ...]
    splits: tuple[str, ...]

    @property
    def reason(self) -> str:
        return "split_conflict"

    @property
    def detail(self) -> str:
        names = ", ".join(f"{n!r}" for _, n in self.entities[:4])
        return (f"links entities already in different splits ({', '.join(self.splits)}) through {names}; "
                "placing it in either would leak, and earlier questions never move")  # fmt: skip


@dataclass
class RefreshResult:
    """``assignment``: a split for each new question placed; ``conflicts``: new questions left without one;
    ``joined``: how many new questions joined the split of an earlier group; ``counts``/``achieved``/``targets``:
    all questions with a split after the refresh, old and new; ``legacy_leaks``: entities the earlier questions
    already shared across splits before this refresh (data from before this rule, never produced by it)."""

    assignment: dict[str, Split]
    conflicts: list[SplitConflict]
    joined: int
    targets: dict[str, float]
    counts: dict[str, int]
    achieved: dict[str, float]
    legacy_leaks: dict[tuple[str, str], set[str]]
    max_deviation: float = field(init=False)

    def __post_init__(self) -> None:
        self.max_deviation = max((abs(self.achieved[s] - self.targets[s]) for s in self.targets), default=0.0)

    def summary(self) -> str:
        parts = ", ".join(f"{s} {self.counts[s]} ({self.achieved[s]:.1%} vs {self.targets[s]:.0%})" for s in self.targets)
        return (f"{len(self.assignment)} new question(s) placed ({self.joined} with earlier groups), "
                f"{len(self.conflicts)} split conflict(s); totals: {parts}")  # fmt: skip


class _Forest:
    """A union-find over entity keys whose roots remember the splits of the old questions in their component."""

    def __init__(self) -> None:
        self.parent: dict[tuple[str, str], tuple[str, str]] = {}
        self.held: dict[tuple[str, str], set[str]] = {}  # root -> splits of the old questions in its component

    def find(self, x: tuple[str, str]) -> tuple[str, str]:
        parent = self.parent
        parent.setdefault(x, x)
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def union(self, keys: Sequence[tuple[str, str]]) -> None:
        roots = {self.find(k) for k in keys}
        top = min(roots)  # any fixed choice; min keeps it independent of input order
        for r in roots - {top}:
            self.parent[r] = top
            self.held.setdefault(top, set()).update(self.held.pop(r, set()))

    def splits(self, key: tuple[str, str]) -> set[str]:
        return self.held.get(self.find(key), set())


def stable_splits(
    qas: Sequence[QA],
    *,
    proportions: Mapping[str, float] = DEFAULT_PROPORTIONS,
    link: LinkMode = "answer+seed",
    seed: int = 0,
) -> RefreshResult:
    """Splits for the questions without one; questions that have one keep it (module docstring).

    Entities of earlier questions carry their split. New questions are taken in ``qa_id`` order and merged into
    a union-find over entities whose roots remember the splits they hold: a question whose entities reach two
    different splits is a ``SplitConflict`` and is not merged (so it cannot pull later questions across either).
    Every other new question ends in a component holding at most one split: it takes that split, or, when the
    component holds none, its component is a fresh group for ``assign_splits`` with the old counts as
    ``existing``. Deterministic for the same questions, shares, link mode and seed, whatever their order."""
    targets = check_proportions(proportions)
    ids = [q.qa_id for q in qas]
    if len(set(ids)) != len(ids):
        dup = next(i for i in sorted(ids) if ids.count(i) > 1)
        raise ValueError(f"qa_id {dup!r} appears more than once")
    old = sorted((q for q in qas if q.split), key=lambda q: q.qa_id)
    new = sorted((q for q in qas if not q.split), key=lambda q: q.qa_id)
    forest = _Forest()
    for q in old:
        keys = sorted(link_entities(q, link))
        if keys:
            forest.union(keys)
            forest.held.setdefault(forest.find(keys[0]), set()).add(q.split)  # type: ignore[arg-type]
    legacy = shared_entities(old, {q.qa_id: q.split for q in old}, link)  # type: ignore[misc]
    conflicts, placed = _place(new, forest, link)

    assignment: dict[str, Split] = {}
    fresh: list[QA] = []
    for q, keys in placed:
        have = forest.splits(keys[0]) if keys else set()
        if have:
            assignment[q.qa_id] = next(iter(have))  # type: ignore[assignment]
        else:
            fresh.append(q)
    joined = len(assignment)
    existing = Counter(q.split for q in old)
    existing.update(assignment.values())
    if fresh:
        res = assign_splits(fresh, proportions=targets, link=link, seed=seed, existing=existing)
        assignment.update(res.assignment)
    counts = {s: 0 for s in targets}
    for s in [q.split for q in old] + list(assignment.values()):
        if s in counts:
            counts[s] += 1
    n = sum(counts.values())
    return RefreshResult(
        assignment=dict(sorted(assignment.items())), conflicts=conflicts, joined=joined, targets=targets,
        counts=counts, achieved={s: (c / n if n else 0.0) for s, c in counts.items()}, legacy_leaks=legacy,
    )  # fmt: skip


def _place(new: Sequence[QA], forest: _Forest, link: LinkMode
           ) -> tuple[list[SplitConflict], list[tuple[QA, list[tuple[str, str]]]]]:
    """The new questions merged into ``forest`` in order: those whose entities reach two splits are conflicts (and
    are not merged), the others placed with their keys."""
    conflicts: list[SplitConflict] = []
    placed: list[tuple[QA, list[tuple[str, str]]]] = []
    for q in new:
        keys = sorted(link_entities(q, link))
        reach: set[str] = set()
        for k in keys:
            reach |= forest.splits(k)
        if len(reach) > 1:
            mine = tuple(k for k in keys if forest.splits(k))
            conflicts.append(SplitConflict(q.qa_id, mine, tuple(sorted(reach))))
            continue
        if keys:
            forest.union(keys)
        placed.append((q, keys))
    return conflicts, placed


__all__ = [
    "DEFAULT_PROPORTIONS",
    "LinkMode",
    "RefreshResult",
    "SplitConflict",
    "SplitResult",
    "apply_splits",
    "assign_splits",
    "check_proportions",
    "describe_leaks",
    "link_entities",
    "shared_entities",
    "split_leaks",
    "stable_splits",
]
