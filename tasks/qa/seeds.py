"""Seed selection: nodes whose depth-3 ball has a workable size, sampled deterministically.

A node is *eligible* when the breadth-first ball of radius ``depth`` around it (undirected, centre included)
holds between ``min_ball`` and ``max_ball`` nodes (Omne-R1: depth 3, 20 to 400). Too small a ball leaves no
room for a 3+ hop question; too large a one does not fit in the generator's prompt.

Cost. On a power-law graph the ball of almost any node near a hub reaches a large share of the graph in three
hops, so a full BFS per node would cost O(n * |graph|). Every search here is capped: it stops following a start
once that start's ball holds more than ``max_ball`` nodes, so the work per node is bounded by the cap, not by the
graph. ``BallScanner`` works on integer ids (the graph's adjacency as compressed sparse rows, read straight from
networkx by ``KnowledgeGraph.adjacency_csr``) in three array passes:

1. a bound: the ball holds the closed neighbourhood of every node within ``depth - 1`` hops, so a node that near
   a hub of more than ``max_ball`` neighbours is capped without a search;
2. an order: nodes sorted by their chain of highest-degree neighbours, so that nodes next to each other in the
   order have overlapping balls (and renumbered in that order, so that they lie together in memory);
3. a bit-parallel breadth-first search of the rest, 64 starts to a machine word and batches of up to 16 words:
   a node reached by several starts of a word is expanded once for all of them, each level is one sort of the
   expanded entries, and each start's count comes from the words' bits.

On the 1M-node graph of ``bench/bench_scale.py`` ``eligible_seeds`` takes about 9 s on a busy two-core machine
(reading the adjacency out of networkx about a third of it, the search about a third), against about 40 s for one
Python BFS per node on the same graph and load; its arrays (a few of the edge count, and a "seen" bitmap of at
most 64 MiB) add about 150 MB to the graph's memory. ``BallScanner.size`` and ``KnowledgeGraph.bfs_ball`` compute
the same sizes and serve single lookups.

Sampling. ``sample_seeds`` orders eligible nodes by a keyed hash of ``(seed, node)`` rather than shuffling a
list: the order of a node does not depend on which other nodes are eligible, so a small change to the graph
changes the sample only where it must, and the same seed gives the same sample on every machine.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from functools import cached_property
from itertools import chain, islice
from typing import Generic, TypeVar

import numpy as np

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schemas.config import DEFAULT_MAX_BALL, DEFAULT_MIN_BALL
from schemas.errors import InputError
from schemas.qa import Seed
from tasks.graph.store import gc_paused
from tasks.graph.kg import KnowledgeGraph

N = TypeVar("N", bound=Hashable)


class SeedConfig(BaseModel):
    """How seeds are chosen; checked when built."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    depth: int = Field(3, ge=1, le=10, description="Radius of the ball, in hops.")
    min_ball: int = Field(DEFAULT_MIN_BALL, ge=1, description="Smallest acceptable ball (centre included).")
    max_ball: int = Field(DEFAULT_MAX_BALL, ge=1, description="Largest acceptable ball (centre included).")
    undirected: bool = Field(True, description="Follow relations either way (what a schema-free graph wants).")

    @model_validator(mode="after")
    def _bounds(self) -> "SeedConfig":
        if self.min_ball > self.max_ball:
            raise InputError(f"min_ball ({self.min_ball}) must not exceed max_ball ({self.max_ball})")
        return self


# -- capped ball sizes over integer arrays ---------------------------------------------------------------------------
_WORD = 64  # starts sharing one 64-bit word: a node reached by several of them is expanded once for all
_SEEN_BYTES = 1 << 26  # the per-batch "seen" bitmap is groups * nodes words: 64 MiB at most
_MAX_GROUPS = 16  # words per batch: enough to amortise numpy's per-call cost, few enough to stay in cache


def _dedupe_rows(n: int, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR ``(indptr, indices)`` of the distinct ``(row, col)`` pairs, each row sorted by column."""
    keys = rows * max(n, 1) + cols
    keys.sort()
    if len(keys):
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    row_of, indices = np.divmod(keys, max(n, 1))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(row_of, minlength=n), out=indptr[1:])
    return indptr, indices


def _row_max(values: np.ndarray, indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Per row, the largest ``values`` over the row's neighbours (``-1`` for a row without neighbours)."""
    out = np.full(len(indptr) - 1, -1, dtype=np.int64)
    full = np.flatnonzero(indptr[1:] > indptr[:-1])
    if len(full):
        out[full] = np.maximum.reduceat(values[indices], indptr[full])
    return out


def _group_bit_counts(groups: np.ndarray, words: np.ndarray, n_groups: int) -> np.ndarray:
    """``(n_groups, 64)``: how many of ``words`` in each group have each bit set; ``groups`` is non-decreasing.

    The bits are unpacked to bytes and summed 255 rows at a time in uint8 (no carry out of a byte), over long
    contiguous rows: numpy sums a wide array fast and a narrow one slowly.
    """
    lengths = np.bincount(groups, minlength=n_groups)
    first = np.cumsum(lengths) - lengths
    chunks = -(-int(lengths.max()) // 255)
    padded = np.zeros((n_groups, chunks * 255), dtype="<u8")
    padded[groups, np.arange(len(words)) - first[groups]] = words
    bits = np.unpackbits(padded.view(np.uint8), axis=-1, bitorder="little").reshape(n_groups, 255, chunks * _WORD)
    return bits.sum(axis=1, dtype=np.uint8).reshape(n_groups, chunks, _WORD).sum(axis=1, dtype=np.int64)


def _search_order(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Nodes ordered so that neighbours in the order have overlapping balls: by the chain of pivots (each
    node's pivot is its neighbour of highest degree), three links deep. Leaves of one hub come together, then
    their cousins, so the 64 starts that share a word mostly reach the same nodes."""
    n = len(indptr) - 1
    degree = np.diff(indptr)
    ids = np.arange(n, dtype=np.int64)
    # Highest degree first, then lowest id: one key per neighbour, its row maximum names the pivot.
    key = _row_max(degree * (n + 1) + (n - ids), indptr, indices)
    pivot = np.where(key >= 0, n - key % (n + 1), ids)
    pivot2 = pivot[pivot]
    return np.lexsort((ids, pivot, pivot2, pivot2[pivot]))


def _capped_ball_sizes(
    indptr: np.ndarray, indices: np.ndarray, starts: np.ndarray, depth: int, cap: int, groups: int
) -> np.ndarray:
    """Capped ball sizes of ``starts`` (see ``BallScanner``) by bit-parallel breadth-first search.

    ``indptr``/``indices`` hold distinct neighbours without self-loops. Starts go through in batches of
    ``groups`` words of 64; a search entry is ``(word, node)`` with the word's bits saying which of its 64
    starts have reached the node, so a node that several starts reach is expanded once per level for all of
    them. Each level sorts the expanded entries once (a packed ``(word, node, source)`` key) and ORs the bits
    of repeats together; a start whose ball passed ``cap`` stops expanding. Starts that are near each other in
    the graph should be near each other in ``starts`` (``_search_order``): that is what makes the words share.
    """
    n = len(indptr) - 1
    degree = np.diff(indptr)
    out = np.empty(len(starts), dtype=np.int64)
    seen = np.zeros(groups * n, dtype=np.uint64)  # bit b of seen[g * n + v]: start 64g + b has reached v
    bit = np.left_shift(np.uint64(1), np.arange(_WORD, dtype=np.uint64))
    per_batch = groups * _WORD
    for lo in range(0, len(starts), per_batch):
        batch = starts[lo : lo + per_batch]
        slot = np.arange(len(batch), dtype=np.int64)
        keys = (slot // _WORD) * n + batch  # entries sorted by key, so grouped by word
        words = bit[slot % _WORD]
        seen[keys] = words
        touched = [keys]
        counts = np.zeros((groups, _WORD), dtype=np.int64)
        counts.reshape(-1)[: len(batch)] = 1
        for level in range(depth):
            nodes = keys % n
            fan = degree[nodes]
            total = int(fan.sum())
            if total == 0:
                break
            # Key of an expanded entry: (word * n + neighbour) << shift | index of the entry it came from.
            shift = max(1, len(keys).bit_length())
            offsets = np.cumsum(fan) - fan
            packed = np.repeat(((keys - nodes) << shift) + np.arange(len(keys), dtype=np.int64), fan)
            packed += indices[np.repeat(indptr[nodes] - offsets, fan) + np.arange(total, dtype=np.int64)] << shift
            packed.sort()
            reached = packed >> shift
            heads = np.flatnonzero(np.concatenate(([True], reached[1:] != reached[:-1])))
            keys = reached[heads]
            merged = np.bitwise_or.reduceat(words[packed & ((1 << shift) - 1)], heads)
            words = merged & ~seen[keys]
            fresh = words != 0
            keys, words = keys[fresh], words[fresh]
            if not len(keys):
                break
            word_of = keys // n
            counts += _group_bit_counts(word_of, words, groups)
            if level == depth - 1:
                break
            seen[keys] |= words
            touched.append(keys)
            over = counts > cap
            if over.any():  # those starts are capped: drop them from the frontier
                stop = np.bitwise_or.reduce(np.where(over, bit, np.uint64(0)), axis=1)
                words = words & ~stop[word_of]
                alive = words != 0
                keys, words = keys[alive], words[alive]
        out[lo : lo + len(batch)] = np.minimum(counts.reshape(-1)[: len(batch)], cap + 1)
        for entries in touched:
            seen[entries] = 0
    return out


class BallScanner(Generic[N]):
    """Capped ball sizes over a fixed graph, on integer ids.

    The size of a ball is the exact number of nodes within ``depth`` hops (centre included) when it is at most
    ``cap``, and ``cap + 1`` ("more than cap") otherwise.

    ``scan`` serves whole-graph scans with array code: a bound first (a ball holds the closed neighbourhood of
    every node within ``depth - 1`` hops, so a node near a hub of more than ``cap`` neighbours is capped without
    a search), then a bit-parallel breadth-first search of the rest, 64 starts to a machine word, nodes ordered
    so that the starts sharing a word are near each other (``_capped_ball_sizes``). ``size`` answers one node
    by a plain capped BFS that stops at the first frontier node taking the ball past ``cap`` and never reads a
    neighbour list longer than ``cap``.
    """

    def __init__(self, adjacency: Mapping[N, Iterable[N]]) -> None:
        """``adjacency`` maps every node to its neighbours (repeats are dropped); a neighbour missing from the
        keys is an error. Pass a symmetric mapping for undirected balls (``from_graph`` does)."""
        names: list[N] = list(adjacency)
        index: dict[N, int] = {n: i for i, n in enumerate(names)}
        lookup = index.__getitem__
        try:
            with gc_paused():
                rows = [adjacency[n] for n in names]
                ids = [list(map(lookup, nbrs)) for nbrs in rows]
        except KeyError as exc:
            raise ValueError(f"neighbour {exc.args[0]!r} is not a key of the adjacency mapping") from None
        counts = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        cols = np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(counts.sum()))
        indptr, indices = _dedupe_rows(len(names), np.repeat(np.arange(len(names), dtype=np.int64), counts), cols)
        self._setup(names, indptr, indices)
        self.index = index

    def _setup(self, names: list[N], indptr: np.ndarray, indices: np.ndarray) -> None:
        self.names = names
        # Distinct neighbours of node i, sorted by id: indices[indptr[i]:indptr[i + 1]].
        self.indptr = indptr
        self.indices = indices

    @classmethod
    def from_graph(cls, kg: KnowledgeGraph, *, undirected: bool = True) -> "BallScanner[str]":
        """A scanner over ``kg``'s nodes (sorted by name) and its adjacency (``KnowledgeGraph.adjacency_csr``)."""
        scanner: BallScanner[str] = cls.__new__(cls)
        scanner._setup(*kg.adjacency_csr(undirected=undirected))
        return scanner

    @cached_property
    def index(self) -> dict[N, int]:
        """Node -> id (its position in ``names``)."""
        return {n: i for i, n in enumerate(self.names)}

    @cached_property
    def adj(self) -> list[tuple[int, ...]]:
        """Distinct neighbour ids per node, as tuples (what the single-node search reads)."""
        indptr = self.indptr.tolist()
        flat = self.indices.tolist()
        with gc_paused():
            return [tuple(flat[a:b]) for a, b in zip(indptr, indptr[1:])]

    @cached_property
    def _search_graph(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(rank, indptr, indices, closed_degree)`` for the array search: the adjacency without self-loops
        (a node is in its own ball anyway), its nodes renumbered in ``_search_order`` (``rank[i]`` is the new id
        of node ``i``) so that the starts of a batch, and the nodes they reach, lie close in memory."""
        n = len(self.names)
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(self.indptr))
        loop_free = self.indices != rows
        rows, cols = rows[loop_free], self.indices[loop_free]
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        order = _search_order(indptr, cols)
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n, dtype=np.int64)
        degree = np.diff(indptr)[order]
        new_indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(degree, out=new_indptr[1:])
        moved = np.repeat(indptr[order] - new_indptr[:-1], degree) + np.arange(len(cols), dtype=np.int64)
        return rank, new_indptr, rank[cols[moved]], degree + 1

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
                # set.update runs in C: one call per frontier node instead of one Python step per neighbour.
                # Checking after each node keeps the work bounded by the cap.
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

    def sizes(self, depth: int, cap: int, ids: np.ndarray | None = None) -> np.ndarray:
        """Capped ball sizes of the nodes with ids ``ids`` (default: all, in the scanner's order), as an array.

        ``ValueError`` for ``depth < 0`` or ``cap < 1``.
        """
        if depth < 0:
            raise ValueError(f"depth must be >= 0, got {depth}")
        if cap < 1:
            raise ValueError(f"cap must be >= 1, got {cap}")
        if ids is None:
            return self._sizes(depth, cap, np.arange(len(self.names), dtype=np.int64))
        # Each distinct node is searched once (a start twice in one word would lose a bit), then copied back.
        wanted = np.asarray(ids, dtype=np.int64)
        if not len(wanted):
            return np.zeros(0, dtype=np.int64)
        order = np.argsort(wanted, kind="stable")
        ordered = wanted[order]
        heads = np.concatenate(([True], ordered[1:] != ordered[:-1]))
        back = np.empty(len(wanted), dtype=np.int64)
        back[order] = np.cumsum(heads) - 1
        return self._sizes(depth, cap, ordered[heads])[back]

    def _sizes(self, depth: int, cap: int, wanted: np.ndarray) -> np.ndarray:
        """``sizes`` for distinct ids."""
        n = len(self.names)
        if depth == 0 or not len(wanted):
            return np.ones(len(wanted), dtype=np.int64)
        rank, indptr, indices, closed = self._search_graph
        starts = rank[wanted]
        if depth == 1:
            return np.minimum(closed[starts], cap + 1)
        # The ball holds the closed neighbourhood of every node within depth - 1 hops: one of more than cap
        # nodes caps the ball without a search (a hub's leaves, and most nodes within two hops of a hub).
        bound = closed
        for _ in range(depth - 1):
            bound = np.maximum(bound, _row_max(bound, indptr, indices))
        out = np.full(len(starts), cap + 1, dtype=np.int64)
        todo = np.flatnonzero(bound[starts] <= cap)
        todo = todo[np.argsort(starts[todo], kind="stable")]  # search order, so that batches share
        groups = max(1, min(_MAX_GROUPS, _SEEN_BYTES // (8 * max(n, 1)), -(-len(todo) // _WORD)))
        if len(todo):
            out[todo] = _capped_ball_sizes(indptr, indices, starts[todo], depth, cap, groups)
        return out

    def scan(self, depth: int, cap: int, nodes: Iterable[N] | None = None) -> list[tuple[N, int]]:
        """``(node, capped ball size)`` for ``nodes`` (default: all, in the scanner's order); ``ValueError`` for
        ``depth < 0`` or ``cap < 1``, ``KeyError`` for an unknown node."""
        if depth < 0:
            raise ValueError(f"depth must be >= 0, got {depth}")
        if cap < 1:
            raise ValueError(f"cap must be >= 1, got {cap}")
        # One tuple per node: pausing the cyclic collector keeps it from walking the whole heap meanwhile.
        with gc_paused():
            if nodes is None:
                return list(zip(self.names, self.sizes(depth, cap).tolist()))
            wanted = list(nodes)
            ids = np.fromiter(map(self.index.__getitem__, wanted), dtype=np.int64, count=len(wanted))
            return list(zip(wanted, self.sizes(depth, cap, ids).tolist()))


def eligible_seeds(
    kg: KnowledgeGraph,
    *,
    depth: int = 3,
    min_ball: int = DEFAULT_MIN_BALL,
    max_ball: int = DEFAULT_MAX_BALL,
    undirected: bool = True,
    nodes: Iterable[str] | None = None,
    keep_large: bool = False,
) -> list[tuple[str, int]]:
    """``(node, ball_size)`` for every node of ``kg`` (or of ``nodes``) whose ``depth``-hop ball, centre
    included, holds between ``min_ball`` and ``max_ball`` nodes; sorted by node name.

    ``keep_large`` keeps the nodes whose ball holds more than ``max_ball`` too, their size given as ``max_ball + 1``
    (the capped search stops there). The bound sizes the ball an LLM writer is shown; where
    the questions are programs sampled from a seed's whole neighbourhood (the template writer), a seed next to a hub
    (a weather station in a country of hundreds of stations) is as good a start as any, and the search stays capped.

    ``ValueError`` on inconsistent bounds (``SeedConfig`` rules); ``KeyError`` for a node of ``nodes`` not in the
    graph. The work per node is bounded by ``max_ball``, not by the graph (see the module docstring).
    """
    cfg = SeedConfig(depth=depth, min_ball=min_ball, max_ball=max_ball, undirected=undirected)
    scanner = BallScanner.from_graph(kg, undirected=cfg.undirected)
    wanted = sorted(set(nodes)) if nodes is not None else None
    if wanted is not None:
        for n in wanted:
            if n not in kg:
                kg.entity(n)  # raises KeyError with a lookup hint
    # Many small tuples: with the collector running, their allocation sets off full collections that walk the
    # whole graph's records.
    with gc_paused():
        if wanted is None:
            sizes = scanner.sizes(cfg.depth, cfg.max_ball)
            keep = np.flatnonzero((sizes >= cfg.min_ball) & ((sizes <= cfg.max_ball) | keep_large))
            out = list(zip(map(scanner.names.__getitem__, keep.tolist()), sizes[keep].tolist()))
        else:
            sizes_of = scanner.scan(cfg.depth, cfg.max_ball, wanted)
            out = [(n, s) for n, s in sizes_of if cfg.min_ball <= s and (keep_large or s <= cfg.max_ball)]
        out.sort(key=lambda t: t[0])  # already in name order: a linear pass
    return out


#: How far ``no_seed_reason`` raises the cap to measure the smallest ball when every ball overflows: at most this
#: many times ``max_ball`` (each search stays bounded by its cap, as in ``eligible_seeds``).
_OVERFLOW_SEARCH = 64


def no_seed_reason(
    kg: KnowledgeGraph,
    *,
    domain: str | None = None,
    depth: int = 3,
    min_ball: int = DEFAULT_MIN_BALL,
    max_ball: int = DEFAULT_MAX_BALL,
    undirected: bool = True,
) -> str | None:
    """Why no node of ``kg`` is an eligible seed (``eligible_seeds`` gives nothing), as one sentence that names
    the limit, the ball that came nearest and the setting that would admit it; None when some node is eligible.

    Scans the graph again (the work per node bounded by ``max_ball``, as ``eligible_seeds``); a flow calls it only
    when a domain has no eligible seed. When balls overflow ``max_ball``, the smallest of them is measured with a
    cap raised step by step up to ``64 * max_ball``; past that, the sentence says "more than" that cap.
    """
    cfg = SeedConfig(depth=depth, min_ball=min_ball, max_ball=max_ball, undirected=undirected)
    where = f" in domain {domain}" if domain else ""
    n = kg.n_nodes
    if n == 0:
        return f"0 nodes qualify as seeds{where}: the graph is empty"
    scanner = BallScanner.from_graph(kg, undirected=cfg.undirected)
    with gc_paused():
        sizes = scanner.sizes(cfg.depth, cfg.max_ball)
    small = sizes[sizes < cfg.min_ball]
    large = np.flatnonzero(sizes > cfg.max_ball)
    if len(small) + len(large) < n:
        return None
    head = f"0 of {n} nodes qualify as seeds{where}"
    ball = f"depth-{cfg.depth} neighbourhood"
    largest = int(small.max()) if len(small) else 0
    if len(large):
        smallest, measured = _smallest_overflow(scanner, large, cfg.depth, cfg.max_ball,
                                                min(n, _OVERFLOW_SEARCH * cfg.max_ball))  # fmt: skip
        biggest = f"has {smallest}" if measured else f"has more than {smallest}"
        hint_max = f"--max-ball {smallest} or higher" if measured else f"--max-ball above {smallest}"
    if not len(large):
        return (f"{head}: the largest {ball} has {largest} nodes, below the minimum of {cfg.min_ball} "
                f"(set --min-ball {largest} or lower, or seeds.min_ball in the configuration)")
    if not len(small):
        return (f"{head}: every {ball} has more than the maximum of {cfg.max_ball} nodes, the smallest {biggest} "
                f"(set {hint_max}, or seeds.max_ball in the configuration)")
    return (f"{head}: {len(small)} {ball}s are below the minimum of {cfg.min_ball} nodes (the largest of them has "
            f"{largest}) and {len(large)} above the maximum of {cfg.max_ball} (the smallest of them {biggest}) "
            f"(set --min-ball {largest} or lower or {hint_max}, or seeds.min_ball / seeds.max_ball in the "
            "configuration)")


def _smallest_overflow(scanner: BallScanner, ids: np.ndarray, depth: int, cap: int, limit: int) -> tuple[int, bool]:
    """``(size, True)``: the smallest ball among ``ids``, whose balls all hold more than ``cap`` nodes; or
    ``(limit, False)`` when every one of them holds more than ``limit``. The cap grows fourfold per scan."""
    while cap < limit:
        cap = min(4 * cap, limit)
        with gc_paused():
            sizes = scanner.sizes(depth, cap, ids)
        fits = sizes[sizes <= cap]
        if len(fits):
            return int(fits.min()), True
    return limit, False


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
    keep: Callable[[str], bool] | None = None,
    prefer: Callable[[str], int] | None = None,
    window: int = 1,
) -> list[Seed]:
    """Up to ``n`` seeds from ``eligible`` (``eligible_seeds`` output), deterministic by ``seed``.

    Nodes are ranked by ``sha256(seed, node)``; the first ``n`` not in ``exclude`` (e.g. seeds an earlier run
    used) and, with ``keep``, for which ``keep(node)`` holds, are returned with ``sample_rank`` 0, 1, ... ``keep``
    is asked in rank order and only until ``n`` are found. With ``prefer``, the first ``n × window`` kept nodes are
    taken and the ``n`` that ``prefer`` scores highest returned, highest first (ties in rank order). The result does
    not depend on the order of ``eligible``, and a node's rank does not depend on the other nodes. Repeated nodes
    in ``eligible`` count once.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    skip = set(exclude)
    sizes: dict[str, int] = {}
    for node, size in eligible:
        sizes.setdefault(node, size)
    ranked = sorted((node for node in sizes if node not in skip), key=lambda node: (_rank_key(seed, node), node))
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    pool = n * window if prefer is not None else n
    if keep is not None:
        ranked = list(islice((node for node in ranked if keep(node)), pool))
    if prefer is not None:
        order = {node: i for i, node in enumerate(ranked[:pool])}
        ranked = sorted(order, key=lambda node: (-prefer(node), order[node]))
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


__all__ = ["BallScanner", "SeedConfig", "domain_quotas", "eligible_seeds", "no_seed_reason", "sample_seeds"]
