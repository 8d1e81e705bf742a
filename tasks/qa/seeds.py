"""Seed selection: nodes whose depth-3 ball has a workable size, sampled deterministically.

A node is *eligible* when the breadth-first ball of radius ``depth`` around it (undirected, centre included)
holds between ``min_ball`` and ``max_ball`` nodes (Omne-R1: depth 3, 20 to 400). Too small a ball leaves no
room for a 3+ hop question; too large a one does not fit in the generator's prompt.

Cost. On a power-law graph the ball of almost any node near a hub reaches a large share of the graph in three
hops, so a full BFS per node would cost O(n * |graph|). ``BallScanner`` stops a BFS as soon as it has found
``max_ball + 1`` nodes and never reads an adjacency list longer than ``max_ball``, so the work per node is
bounded by the cap, not by the graph.
It works on integer ids over adjacency tuples built once per graph and grows each ball with
``set.update`` (one C call per frontier node rather than one Python step per neighbour); a frontier node with
more than ``max_ball`` neighbours ends the search at once. On a 100k-node power-law graph a full scan takes
about two seconds, roughly twice as fast as calling ``KnowledgeGraph.ball_size`` per node
(``bench/bench_seeds.py``). ``KnowledgeGraph.bfs_ball`` computes the same sizes and serves single lookups.

Sampling. ``sample_seeds`` orders eligible nodes by a keyed hash of ``(seed, node)`` rather than shuffling a
list: the order of a node does not depend on which other nodes are eligible, so a small change to the graph
changes the sample only where it must, and the same seed gives the same sample on every machine.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schemas.errors import InputError
from schemas.qa import Seed
from tasks.graph.store import gc_paused
from tasks.graph.kg import KnowledgeGraph

N = TypeVar("N", bound=Hashable)


class SeedConfig(BaseModel):
    """How seeds are chosen; checked when built."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    depth: int = Field(3, ge=1, le=10, description="Radius of the ball, in hops.")
    min_ball: int = Field(20, ge=1, description="Smallest acceptable ball (centre included).")
    max_ball: int = Field(400, ge=1, description="Largest acceptable ball (centre included).")
    undirected: bool = Field(True, description="Follow relations either way (what a schema-free graph wants).")

    @model_validator(mode="after")
    def _bounds(self) -> "SeedConfig":
        if self.min_ball > self.max_ball:
            raise InputError(f"min_ball ({self.min_ball}) must not exceed max_ball ({self.max_ball})")
        return self


class BallScanner(Generic[N]):
    """Capped ball sizes over a fixed graph, by integer-id breadth-first search.

    ``size(node)`` is the exact ball size when it is at most ``cap``, and ``cap + 1`` ("more than cap")
    otherwise. The search stops at the first frontier node that takes the ball past ``cap``, and never reads a
    neighbour list longer than ``cap``, so its work is bounded by the cap whatever the graph.
    """

    def __init__(self, adjacency: Mapping[N, Iterable[N]]) -> None:
        """``adjacency`` maps every node to its neighbours (repeats are dropped); a neighbour missing from the
        keys is an error. Pass a symmetric mapping for undirected balls (``from_graph`` does)."""
        self.names: list[N] = list(adjacency)
        self.index: dict[N, int] = {n: i for i, n in enumerate(self.names)}
        try:
            # Distinct neighbours only: the hub test below compares a list's length with the cap.
            # One tuple per node: with the collector running, these allocations set off full collections that
            # walk the whole graph's records, which doubled the time to build a scanner over 100k nodes.
            lookup = self.index.__getitem__
            with gc_paused():
                self.adj: list[tuple[int, ...]] = [tuple(dict.fromkeys(map(lookup, adjacency[n]))) for n in self.names]
        except KeyError as exc:
            raise ValueError(f"neighbour {exc.args[0]!r} is not a key of the adjacency mapping") from None

    @classmethod
    def from_graph(cls, kg: KnowledgeGraph, *, undirected: bool = True) -> "BallScanner[str]":
        """A scanner over ``kg``'s nodes (sorted by name) and its adjacency."""
        with gc_paused():
            adjacency = {n: kg.neighbor_names(n, undirected=undirected) for n in kg.nodes()}
        return cls(adjacency)

    def __len__(self) -> int:
        return len(self.names)

    def size_of_index(self, start: int, depth: int, cap: int) -> int:
        """Capped ball size of the node with id ``start`` (see the class docstring)."""
        adj = self.adj
        if cap < 1:
            return cap + 1
        seen = {start}
        frontier: Iterable[int] = (start,)
        for level in range(depth):
            before = seen.copy() if level < depth - 1 else None
            for u in frontier:
                nbrs = adj[u]
                # Every neighbour of a frontier node is in the ball, so a node with more than ``cap``
                # neighbours overflows it: a hub ends the search without its list being read.
                if len(nbrs) > cap:
                    return cap + 1
                # set.update runs in C: one call per frontier node instead of one Python step per neighbour
                # is what makes the scan fast. Checking after each node keeps the work bounded by the cap.
                seen.update(nbrs)
                if len(seen) > cap:
                    return cap + 1
            if before is None:
                break
            if len(seen) == len(before):  # nothing new: the ball is complete before ``depth``
                break
            frontier = seen - before
        return len(seen)

    def size(self, node: N, depth: int, cap: int) -> int:
        """Capped ball size of ``node``; ``KeyError`` for an unknown node."""
        return self.size_of_index(self.index[node], depth, cap)

    def scan(self, depth: int, cap: int, nodes: Iterable[N] | None = None) -> list[tuple[N, int]]:
        """``(node, capped ball size)`` for ``nodes`` (default: all, in the scanner's order)."""
        if depth < 0:
            raise ValueError(f"depth must be >= 0, got {depth}")
        if cap < 1:
            raise ValueError(f"cap must be >= 1, got {cap}")
        names = self.names
        # Each search allocates a few sets; pausing the cyclic collector keeps it from walking the whole heap
        # (the graph's records) every few hundred searches.
        with gc_paused():
            if nodes is None:
                return [(names[i], self.size_of_index(i, depth, cap)) for i in range(len(names))]
            index = self.index
            return [(n, self.size_of_index(index[n], depth, cap)) for n in nodes]


def eligible_seeds(
    kg: KnowledgeGraph,
    *,
    depth: int = 3,
    min_ball: int = 20,
    max_ball: int = 400,
    undirected: bool = True,
    nodes: Iterable[str] | None = None,
) -> list[tuple[str, int]]:
    """``(node, ball_size)`` for every node of ``kg`` (or of ``nodes``) whose ``depth``-hop ball, centre
    included, holds between ``min_ball`` and ``max_ball`` nodes; sorted by node name.

    ``ValueError`` on inconsistent bounds (``SeedConfig`` rules). Each node costs at most about ``max_ball``
    discovered nodes (see the module docstring).
    """
    cfg = SeedConfig(depth=depth, min_ball=min_ball, max_ball=max_ball, undirected=undirected)
    scanner = BallScanner.from_graph(kg, undirected=cfg.undirected)
    wanted = sorted(set(nodes)) if nodes is not None else None
    if wanted is not None:
        for n in wanted:
            if n not in kg:
                kg.entity(n)  # raises KeyError with a lookup hint
    sizes = scanner.scan(cfg.depth, cfg.max_ball, wanted)
    out = [(n, s) for n, s in sizes if cfg.min_ball <= s <= cfg.max_ball]
    out.sort(key=lambda t: t[0])
    return out


def _rank_key(seed: int, node: str) -> bytes:
    return hashlib.sha256(f"{seed}\x00{node}".encode("utf-8", "surrogatepass")).digest()


def sample_seeds(
    eligible: Sequence[tuple[str, int]],
    n: int,
    seed: int,
    *,
    domain: str,
    snapshot_id: str | None = None,
    depth: int = 3,
    exclude: Iterable[str] = (),
    run_id: str | None = None,
) -> list[Seed]:
    """Up to ``n`` seeds from ``eligible`` (``eligible_seeds`` output), deterministic by ``seed``.

    Nodes are ranked by ``sha256(seed, node)``; the first ``n`` not in ``exclude`` (e.g. seeds an earlier run
    used) are returned with ``sample_rank`` 0, 1, ... The result does not depend on the order of ``eligible``,
    and a node's rank does not depend on the other nodes. Repeated nodes in ``eligible`` count once.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    skip = set(exclude)
    sizes: dict[str, int] = {}
    for node, size in eligible:
        sizes.setdefault(node, size)
    ranked = sorted((node for node in sizes if node not in skip), key=lambda node: (_rank_key(seed, node), node))
    return [
        Seed(
            domain=domain, snapshot_id=snapshot_id, node=node, ball_size=sizes[node], depth=depth, sample_rank=i,
            sampling_seed=seed, run_id=run_id,
        )  # fmt: skip
        for i, node in enumerate(ranked[:n])
    ]


def domain_quotas(
    total: int,
    available: Mapping[str, int],
    *,
    weights: Mapping[str, float] | None = None,
    min_per_domain: int = 0,
) -> dict[str, int]:
    """Split ``total`` seeds across domains.

    Each domain first gets ``min(min_per_domain, available)``; the rest is shared in proportion to ``weights``
    (default: equal weights, so small domains are not drowned by big ones), largest remainder first, and never
    more than a domain has available: what a full domain cannot take goes to the others. The quotas sum to
    ``min(total, sum(available))``. Ties are broken by domain name, so the result is deterministic.
    """
    if total < 0:
        raise ValueError(f"total must be >= 0, got {total}")
    if min_per_domain < 0:
        raise ValueError(f"min_per_domain must be >= 0, got {min_per_domain}")
    bad = {d: a for d, a in available.items() if a < 0}
    if bad:
        raise ValueError(f"available counts must be >= 0, got {bad}")
    domains = sorted(available)
    w = {d: 1.0 for d in domains} if weights is None else {d: float(weights.get(d, 0.0)) for d in domains}
    if any(v < 0 or math.isnan(v) for v in w.values()):
        raise ValueError(f"weights must be >= 0, got {dict(w)}")
    quota = {d: min(min_per_domain, available[d]) for d in domains}
    left = min(total, sum(available.values())) - sum(quota.values())
    if left < 0:  # the minimums alone exceed the total: trim them, smallest-named domains keep theirs
        for d in reversed(domains):
            take = min(quota[d], -left)
            quota[d] -= take
            left += take
        return quota
    while left > 0:
        open_ = [d for d in domains if quota[d] < available[d]]
        if not open_:
            break
        weight_sum = sum(w[d] for d in open_)
        if weight_sum <= 0:  # only zero-weight domains have room: share equally among them
            shares = {d: left / len(open_) for d in open_}
        else:
            shares = {d: left * w[d] / weight_sum for d in open_}
        give = {d: min(math.floor(shares[d]), available[d] - quota[d]) for d in open_}
        given = sum(give.values())
        if given == 0:
            # Remainders only: one seed each to the largest fractional shares, which always makes progress.
            order = sorted(open_, key=lambda d: (-(shares[d] - math.floor(shares[d])), -w[d], d))
            for d in order[:left]:
                give[d] = 1
            given = sum(give.values())
        for d, g in give.items():
            quota[d] += g
        left -= given
    return quota


__all__ = ["BallScanner", "SeedConfig", "domain_quotas", "eligible_seeds", "sample_seeds"]
