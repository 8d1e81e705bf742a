"""``KnowledgeGraph``: one domain's graph, a small read-only class over networkx with stated invariants.

Invariants (checked at construction, ``GraphRecordsError`` otherwise):

1. One domain per graph; every entity and relation carries it.
2. Entity names are unique: the name is the node key.
3. The graph is directed or undirected, stated at construction. An undirected graph holds only undirected
   relations. A directed graph may also hold undirected relations (a triple file can mark a row
   ``"directed": false``); they are traversable both ways.
4. Every relation endpoint is an entity, and no two relations share ``Relation.key()``. Different relations
   between the same pair (different labels, or both directions) are all kept: the networkx graph has one edge
   per adjacent pair, and that edge holds the list of every relation between the pair (see ``relations_between``).
5. Once built, the graph does not change. Caches (sorted adjacency, the name index) rely on it; a changed graph
   is a new ``KnowledgeGraph`` (``subgraph``, ``tasks.graph.entity_resolution``). Reading from several threads is
   safe: a cache two threads build at once is built twice, identically.

Traversal: every method that walks edges takes ``undirected``. ``undirected=True`` (the default) follows a
relation either way, which is what seed balls, question paths and gold paths over a schema-free graph want;
``undirected=False`` follows directed relations only from source to target. On an undirected graph the flag
changes nothing.

Determinism: neighbours are sorted by name, then direction (out, undirected, in), label and description; node
lists by name. Prompts and tool output built from this class are stable from run to run.
"""

from __future__ import annotations

import gc
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from itertools import chain
from typing import Literal

import networkx as nx
import numpy as np

from schemas.answers import name_key
from schemas.graph import UNKNOWN_TYPE, Entity, Relation
from tasks.graph.store import (
    SEP,
    GraphRecordsError,
    check_records,
    gc_paused,
    records_from_networkx,
)

Direction = Literal["out", "in", "undirected"]
# Relations a node states come first, relations stated about it last.
_DIRECTION_ORDER = {"out": 0, "undirected": 1, "in": 2}

# -- names --------------------------------------------------------------------------------------------------------
# The graph's lookup key is the name key of the one answer normaliser (schemas.answers), so a name the graph
# treats as one entity is one answer for checks, rewards and evaluation too.
normalize_name = name_key

# -- result types --------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class EdgeData:
    """One relation as seen from one of its ends.

    ``source``/``target`` are the relation's stored ends. ``direction`` is relative to the node the question was
    asked about (the first argument of ``neighbors``/``relations_between``/``edge``): ``"out"`` when the relation
    points from it, ``"in"`` when it points to it, ``"undirected"`` for a relation without direction.
    """

    source: str
    target: str
    relation: str
    keywords: tuple[str, ...]
    description: str
    weight: float
    directed: bool
    source_chunk_ids: tuple[str, ...]
    direction: Direction

    def to_relation(self, domain: str) -> Relation:
        """The relation record this view was made from."""
        return Relation(
            domain=domain, source=self.source, target=self.target, relation=self.relation,
            keywords=list(self.keywords), description=self.description, weight=self.weight,
            source_chunk_ids=list(self.source_chunk_ids), directed=self.directed,
        )  # fmt: skip

    def _sort_key(self) -> tuple[int, str, str, str]:
        return (_DIRECTION_ORDER[self.direction], self.relation, self.description, self.source)


class Ball(frozenset):
    """The nodes within some hops of a centre (centre included), as a frozenset with an ``overflow`` flag.

    ``overflow`` is true when the search stopped early because the ball grew past its limit: the set then
    holds exactly ``limit + 1`` nodes, chosen deterministically (breadth-first, neighbours by name).
    """

    __slots__ = ("overflow",)
    overflow: bool

    def __new__(cls, nodes: Iterable[str] = (), overflow: bool = False) -> Ball:
        ball = super().__new__(cls, nodes)
        ball.overflow = overflow
        return ball

    def __repr__(self) -> str:
        return f"Ball({len(self)} nodes, overflow={self.overflow})"

    def __reduce__(self) -> tuple[type[Ball], tuple[list[str], bool]]:
        # frozenset's own pickling would drop the flag (results may cross process boundaries in task runners).
        return (Ball, (sorted(self), self.overflow))


@dataclass(frozen=True)
class PathSearch:
    """Simple paths found between two nodes: shortest first, then in name order.

    ``stopped`` says why the search ended early (``"max_paths"`` or ``"time_budget"``), ``None`` when every
    path within the hop bound was found. Iterating gives the paths (tuples of node names, ends included).
    """

    paths: tuple[tuple[str, ...], ...]
    stopped: Literal["max_paths", "time_budget"] | None = None
    elapsed_s: float = field(default=0.0, compare=False)

    @property
    def complete(self) -> bool:
        return self.stopped is None

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> tuple[str, ...]:
        return self.paths[i]


#: How many nodes' ``neighbors`` lists a graph keeps worked out (cleared whole when full).
NEIGHBOR_MEMO_SIZE = 65_536


# -- the graph -----------------------------------------------------------------------------------------------------
class KnowledgeGraph:
    """One domain's knowledge graph (see the module docstring for its invariants)."""

    def __init__(
        self,
        domain: str,
        entities: Iterable[Entity],
        relations: Iterable[Relation],
        *,
        directed: bool,
        snapshot_id: str | None = None,
    ) -> None:
        with gc_paused():
            self._build(domain, list(entities), list(relations), directed=directed, snapshot_id=snapshot_id)

    def _build(
        self, domain: str, entities: list[Entity], relations: list[Relation], *, directed: bool, snapshot_id: str | None
    ) -> None:
        check_records(domain, entities, relations, directed=directed)
        self.domain = domain
        self.directed = directed
        self.snapshot_id = snapshot_id
        self._entities: dict[str, Entity] = {e.name: e for e in entities}
        # Relations grouped per adjacent pair first (an undirected pair under whichever orientation came first),
        # then handed to networkx in one call: much cheaper than add_edge per relation on 500k relations.
        pairs: dict[tuple[str, str], list[EdgeData]] = {}
        for r in relations:
            key = (r.source, r.target)
            if not directed and key not in pairs and (r.target, r.source) in pairs:
                key = (r.target, r.source)
            pairs.setdefault(key, []).append(
                EdgeData(
                    r.source,
                    r.target,
                    r.relation,
                    tuple(r.keywords),
                    r.description,
                    float(r.weight),
                    r.directed,
                    tuple(r.source_chunk_ids),
                    "out" if r.directed else "undirected",
                )
            )
        g: nx.Graph = nx.DiGraph() if directed else nx.Graph()
        g.add_nodes_from(sorted(self._entities))
        g.add_edges_from((u, v, {"rels": rels}) for (u, v), rels in pairs.items())
        self._g = g
        self._n_relations = len(relations)
        self._neighbor_memo: dict[tuple[str, bool], tuple[tuple[str, EdgeData], ...]] = {}

    # -- constructors ---------------------------------------------------------------------------------------------
    @classmethod
    def from_records(
        cls,
        domain: str,
        entities: Iterable[Entity],
        relations: Iterable[Relation],
        *,
        directed: bool | None = None,
        add_missing_entities: bool = False,
        snapshot_id: str | None = None,
    ) -> KnowledgeGraph:
        """A graph from records. ``directed=None`` means directed exactly when some relation is.

        ``add_missing_entities`` creates an untyped, undescribed entity for every relation endpoint that has no
        record (convenient for hand-written relations); otherwise such an endpoint is an error.
        """
        entities = list(entities)
        relations = list(relations)
        if directed is None:
            directed = any(r.directed for r in relations)
        if add_missing_entities:
            known = {e.name for e in entities}
            for r in relations:
                for end in (r.source, r.target):
                    if end not in known:
                        known.add(end)
                        entities.append(Entity(domain=domain, name=end))
        return cls(domain, entities, relations, directed=directed, snapshot_id=snapshot_id)

    @classmethod
    def from_triples(
        cls, domain: str, triples: Iterable[tuple[str, str, str]], *, directed: bool = True
    ) -> KnowledgeGraph:
        """A graph from ``(head, relation, tail)`` tuples (tests, small examples): entities are created as
        needed, the label is also the only keyword, the description is ``"head relation tail"``."""
        relations = [
            Relation(domain=domain, source=h, target=t, relation=r, keywords=[r] if r else [],
                     description=f"{h} {r} {t}" if r else "", directed=directed)
            for h, r, t in triples
        ]  # fmt: skip
        return cls.from_records(domain, [], relations, directed=directed, add_missing_entities=True)

    @classmethod
    def from_networkx(cls, G: nx.Graph, domain: str, *, snapshot_id: str | None = None) -> KnowledgeGraph:
        """A graph from networkx in LightRAG's attribute format (``graph_store.records_from_networkx``);
        directed exactly when ``G`` is."""
        entities, relations = records_from_networkx(G, domain)
        return cls(domain, entities, relations, directed=G.is_directed(), snapshot_id=snapshot_id)

    def __reduce__(self):
        # Sent to another process (a Ray worker) as its records, or as a reference into a store shared with that
        # process (``share_graphs``); there it is built once per snapshot and reused.
        if _SHARED is not None and self.snapshot_id is not None:
            shared = _SHARED(self)
            if shared is not None:
                return shared
        return (_graph_from_records, (self.domain, self.entities(), self.relations(), self.directed, self.snapshot_id))

    # -- size and membership ---------------------------------------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        return len(self._entities)

    @property
    def n_edges(self) -> int:
        """Number of relations (parallel relations between one pair count separately)."""
        return self._n_relations

    @property
    def n_pairs(self) -> int:
        """Number of adjacent node pairs (ordered pairs in a directed graph)."""
        return self._g.number_of_edges()

    def __len__(self) -> int:
        return len(self._entities)

    def __contains__(self, name: object) -> bool:
        return name in self._entities

    def __repr__(self) -> str:
        kind = "directed" if self.directed else "undirected"
        return f"KnowledgeGraph({self.domain!r}, {self.n_nodes} nodes, {self.n_edges} relations, {kind})"

    def nodes(self) -> list[str]:
        """Every entity name, sorted."""
        return sorted(self._entities)

    def entity(self, name: str) -> Entity:
        """The entity called exactly ``name``; ``KeyError`` (with a lookup hint) when there is none."""
        try:
            return self._entities[name]
        except KeyError:
            hint = self.lookup(name)
            extra = f"; did you mean {hint!r}?" if hint else ""
            raise KeyError(f"no entity {name!r} in the {self.domain!r} graph{extra}") from None

    def entities(self) -> list[Entity]:
        """Every entity record, sorted by name."""
        return [self._entities[n] for n in sorted(self._entities)]

    def relations(self) -> list[Relation]:
        """Every relation record, sorted by (source, target, label, directed)."""
        with gc_paused():
            return [d.to_relation(self.domain) for d in self.sorted_views()]

    def sorted_views(self) -> list[EdgeData]:
        """Every relation once, as stored, in ``relations``' order: for code that reads a relation's fields
        (``source``, ``target``, ``relation``, ``keywords``, ``description``, ``directed``) and needs no record
        (building a record per relation was most of a relation profile's cost on a large graph)."""
        with gc_paused():
            views = [d for _, _, rels in self._g.edges(data="rels") for d in rels]
            views.sort(key=lambda d: (d.source, d.target, d.relation, d.directed))
            return views

    def relation_views(self) -> list[EdgeData]:
        """Every relation once, as stored (direction ``"out"`` or ``"undirected"``), grouped by the adjacent pair
        that holds it, each pair's relations in the order they were given. For array code over every relation
        (the served graph's build)."""
        with gc_paused():
            return [d for _, _, rels in self._g.edges(data="rels") for d in rels]

    # -- adjacency -------------------------------------------------------------------------------------------------
    def _require(self, name: str) -> None:
        if name not in self._entities:
            self.entity(name)  # raises the KeyError with a hint

    @cached_property
    def _adj_any(self) -> dict[str, tuple[str, ...]]:
        """Neighbours by any relation, either way, sorted."""
        g = self._g
        with gc_paused():
            if not self.directed:
                return {n: tuple(sorted(g.adj[n])) for n in g}
            return {n: tuple(sorted(set(g.succ[n]) | set(g.pred[n]))) for n in g}

    @cached_property
    def _adj_out(self) -> dict[str, tuple[str, ...]]:
        """Nodes reachable in one step following directions (undirected relations both ways), sorted."""
        if not self.directed:
            return self._adj_any
        g = self._g
        out: dict[str, set[str]] = {n: set(g.succ[n]) for n in g}
        for u, v, rels in g.edges(data="rels"):
            if any(not d.directed for d in rels):
                out[v].add(u)
        return {n: tuple(sorted(s)) for n, s in out.items()}

    @cached_property
    def _adj_in(self) -> dict[str, tuple[str, ...]]:
        """Nodes from which one step following directions arrives here, sorted."""
        if not self.directed:
            return self._adj_any
        inc: dict[str, set[str]] = {n: set() for n in self._g}
        for u, vs in self._adj_out.items():
            for v in vs:
                inc[v].add(u)
        return {n: tuple(sorted(s)) for n, s in inc.items()}

    def _adjacency(self, undirected: bool) -> dict[str, tuple[str, ...]]:
        return self._adj_any if undirected or not self.directed else self._adj_out

    def _reverse_adjacency(self, undirected: bool) -> dict[str, tuple[str, ...]]:
        return self._adj_any if undirected or not self.directed else self._adj_in

    def relations_between(self, a: str, b: str, *, undirected: bool = True) -> list[EdgeData]:
        """Every relation joining ``a`` and ``b``, with ``direction`` relative to ``a``; sorted.

        With ``undirected=False`` only relations that lead from ``a`` to ``b`` (``"out"`` or ``"undirected"``).
        """
        self._require(a)
        self._require(b)
        return self._between(a, b, undirected)

    def _between(self, a: str, b: str, undirected: bool) -> list[EdgeData]:
        """``relations_between`` for two known names."""
        g = self._g
        # Relations stored on the a -> b edge already carry their direction as seen from a ("out" or
        # "undirected"); in a directed graph the b -> a edge holds the rest.
        fwd = g._adj[a].get(b)
        found: list[EdgeData] = list(fwd["rels"]) if fwd is not None else []
        if self.directed and a != b:
            back = g._adj[b].get(a)
            if back is not None:
                for d in back["rels"]:
                    if not d.directed:
                        found.append(d)
                    elif undirected:
                        found.append(EdgeData(d.source, d.target, d.relation, d.keywords, d.description, d.weight,
                                              d.directed, d.source_chunk_ids, "in"))
        if len(found) > 1:
            found.sort(key=EdgeData._sort_key)
        return found

    def has_edge(self, a: str, b: str, *, undirected: bool = True) -> bool:
        """Whether some relation joins ``a`` and ``b`` (leading from ``a`` to ``b`` when ``undirected=False``).
        Unknown names give ``False``."""
        if a not in self._entities or b not in self._entities:
            return False
        g = self._g
        if g.has_edge(a, b):
            return True
        if not self.directed or a == b or not g.has_edge(b, a):
            return False
        return undirected or any(not d.directed for d in g[b][a]["rels"])

    def edge(self, a: str, b: str, *, undirected: bool = True) -> EdgeData | None:
        """The strongest relation joining ``a`` and ``b``, or ``None``: highest weight, then sort order (out,
        undirected, in; label). ``relations_between`` gives all of them."""
        if a not in self._entities or b not in self._entities:
            return None
        rels = self.relations_between(a, b, undirected=undirected)
        if not rels:
            return None
        return min(rels, key=lambda d: (-d.weight, d._sort_key()))

    def neighbors(self, name: str, *, undirected: bool = True) -> list[tuple[str, EdgeData]]:
        """``(neighbour, relation)`` for every relation at ``name``: a neighbour joined by several relations
        appears once per relation. Sorted by neighbour name, then direction (out, undirected, in), label,
        description.

        With ``undirected=False`` only relations leaving ``name`` (``"out"`` and ``"undirected"``).
        """
        key = (name, undirected)
        found = self._neighbor_memo.get(key)
        if found is None:
            self._require(name)
            between = self._between
            found = tuple((nb, d) for nb in self._adjacency(undirected)[name] for d in between(name, nb, undirected))
            # The graph never changes once built, so a node's relations are worked out once: path sampling,
            # context rendering, answer checks and the tools ask for the same few hundred nodes again and
            # again. Bounded, so a walk over a huge graph cannot keep every node's list alive.
            if len(self._neighbor_memo) >= NEIGHBOR_MEMO_SIZE:
                self._neighbor_memo.clear()
            self._neighbor_memo[key] = found
        return list(found)

    def neighbor_names(self, name: str, *, undirected: bool = True) -> list[str]:
        """Distinct neighbours of ``name``, sorted."""
        self._require(name)
        return list(self._adjacency(undirected)[name])

    def adjacency_csr(self, *, undirected: bool = True) -> tuple[list[str], np.ndarray, np.ndarray]:
        """The adjacency over integer ids, as compressed sparse rows: ``(names, indptr, indices)``.

        ``names`` is ``nodes()`` (id ``i`` is ``names[i]``); the neighbours of node ``i`` are
        ``indices[indptr[i]:indptr[i + 1]]`` (int64), exactly ``neighbor_names(names[i], undirected=...)`` as ids in
        the same order (ids follow name order; a self-loop included). For array code over large graphs (the seed
        scan): the undirected adjacency is read straight from networkx, without building the sorted name tuples
        of ``neighbor_names``, which cost several seconds on a million nodes.
        """
        g = self._g
        # The nodes were added sorted (``_build``) and the graph never changes, so its order is ``nodes()``.
        names: list[str] = list(g)
        index = {n: i for i, n in enumerate(names)}
        lookup = index.__getitem__
        if undirected or not self.directed:
            # An undirected graph lists each edge in both rows; a directed one needs successors and predecessors.
            tables = [g._adj] if not self.directed else [g._succ, g._pred]  # noqa: SLF001 (networkx's own dicts)
        else:
            tables = [self._adj_out]
        rows: list[np.ndarray] = []
        cols: list[np.ndarray] = []
        n = len(names)
        with gc_paused():
            for table in tables:
                rows_nbrs = [table[name] for name in names]
                counts = np.fromiter(map(len, rows_nbrs), dtype=np.int64, count=n)
                total = int(counts.sum())
                ids = chain.from_iterable(map(partial(map, lookup), rows_nbrs))  # C-level loops only
                cols.append(np.fromiter(ids, dtype=np.int64, count=total))
                rows.append(np.repeat(np.arange(n, dtype=np.int64), counts))
        # One sort of (row, column) keys orders every row by id and exposes repeats (an edge seen from both ends).
        keys = np.concatenate(rows) * max(n, 1) + np.concatenate(cols) if rows else np.zeros(0, np.int64)
        keys.sort()
        if len(tables) > 1 and len(keys):
            keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
        row_of, indices = np.divmod(keys, max(n, 1))
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(row_of, minlength=n), out=indptr[1:])
        return names, indptr, indices

    def degree(self, name: str) -> int:
        """Number of distinct neighbours, either direction."""
        self._require(name)
        return len(self._adj_any[name])

    # -- traversal -------------------------------------------------------------------------------------------------
    def bfs_ball(self, name: str, depth: int, *, limit: int | None = None, undirected: bool = True) -> Ball:
        """Nodes within ``depth`` hops of ``name`` (``name`` included).

        With ``limit``, the search stops as soon as more than ``limit`` nodes are found and returns those
        ``limit + 1`` nodes with ``overflow=True``. That bounds the work by the limit rather than by the graph,
        which is what makes "is this node's 3-hop ball between 20 and 400 nodes" cheap on a power-law graph
        whose hubs reach everything in three hops.
        """
        self._require(name)
        if depth < 0:
            raise ValueError(f"depth must be >= 0, got {depth}")
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        adj = self._adjacency(undirected)
        seen = {name}
        if limit is not None and len(seen) > limit:
            return Ball(seen, overflow=True)
        frontier = [name]
        for _ in range(depth):
            nxt: list[str] = []
            for u in frontier:
                for v in adj[u]:
                    if v not in seen:
                        seen.add(v)
                        if limit is not None and len(seen) > limit:
                            return Ball(seen, overflow=True)
                        nxt.append(v)
            if not nxt:
                break
            frontier = nxt
        return Ball(seen, overflow=False)

    def ball_size(self, name: str, depth: int, cap: int, *, undirected: bool = True) -> int:
        """Size of the ``depth``-hop ball around ``name`` (centre included) when it is at most ``cap``;
        ``cap + 1`` means "more than ``cap``" (the search stopped there)."""
        return len(self.bfs_ball(name, depth, limit=cap, undirected=undirected))

    def shortest_path_length(self, a: str, b: str, cutoff: int | None = None, *, undirected: bool = True) -> int | None:
        """Hops on a shortest path from ``a`` to ``b``, or ``None`` when there is none within ``cutoff`` hops.

        Bidirectional breadth-first search, always growing the smaller frontier: on a power-law graph a
        one-sided search from a hub would visit most of the graph.
        """
        self._require(a)
        self._require(b)
        if a == b:
            return 0
        fwd_adj, bwd_adj = self._adjacency(undirected), self._reverse_adjacency(undirected)
        dist_f, dist_b = {a: 0}, {b: 0}
        front_f, front_b = [a], [b]
        depth_f = depth_b = 0
        while front_f and front_b:
            if cutoff is not None and depth_f + depth_b >= cutoff:
                return None
            grow_forward = len(front_f) <= len(front_b)
            adj, dist, other = (fwd_adj, dist_f, dist_b) if grow_forward else (bwd_adj, dist_b, dist_f)
            frontier = front_f if grow_forward else front_b
            level = (depth_f if grow_forward else depth_b) + 1
            best: int | None = None
            nxt: list[str] = []
            for u in frontier:
                for v in adj[u]:
                    if v in dist:
                        continue
                    dist[v] = level
                    if v in other:
                        total = level + other[v]
                        best = total if best is None else min(best, total)
                    nxt.append(v)
            if best is not None:
                return best if cutoff is None or best <= cutoff else None
            if grow_forward:
                front_f, depth_f = nxt, level
            else:
                front_b, depth_b = nxt, level
        return None

    def simple_paths(
        self,
        a: str,
        b: str,
        max_hops: int,
        *,
        max_paths: int = 100,
        time_budget_s: float = 1.0,
        undirected: bool = True,
        clock: Callable[[], float] = time.perf_counter,
    ) -> PathSearch:
        """Simple paths from ``a`` to ``b`` with at most ``max_hops`` edges, shortest first, then by node names.

        Bounded two ways: at most ``max_paths`` paths, and about ``time_budget_s`` seconds of search; the
        result says which bound stopped it. Paths are node sequences: several relations between two
        consecutive nodes make one path (``relations_between`` lists them). The search deepens one length at a
        time and only steps onto nodes that can still reach ``b`` in the hops left (distances from one reverse
        breadth-first search), so dead branches of hubs are never walked. ``clock`` reads the time (seconds).
        """
        self._require(a)
        self._require(b)
        if max_hops < 1:
            raise ValueError(f"max_hops must be >= 1, got {max_hops}")
        if max_paths < 1:
            raise ValueError(f"max_paths must be >= 1, got {max_paths}")
        start = clock()
        deadline = start + time_budget_s
        if a == b:
            return PathSearch(paths=(), stopped=None, elapsed_s=0.0)
        adj, radj = self._adjacency(undirected), self._reverse_adjacency(undirected)
        to_b, steps = _distances_to(b, radj, max_hops, deadline, clock)
        if to_b is None:
            return PathSearch((), "time_budget", clock() - start)
        if a not in to_b:
            return PathSearch((), None, clock() - start)

        found: list[tuple[str, ...]] = []
        for length in range(to_b[a], max_hops + 1):
            path = [a]
            on_path = {a}
            # Explicit stack of (node, hops left after it, neighbour iterator): no recursion, easy to abandon.
            stack: list[tuple[str, int, Iterator[str]]] = [(a, length, iter(adj[a]))]
            while stack:
                steps += 1
                if steps % 256 == 0 and clock() > deadline:
                    return PathSearch(tuple(found), "time_budget", clock() - start)
                u, left, it = stack[-1]
                advanced = False
                for v in it:
                    if v in on_path:
                        continue
                    dv = to_b.get(v)
                    if dv is None or dv > left - 1:
                        continue
                    if v == b:
                        if left - 1 == 0:
                            found.append(tuple(path) + (b,))
                            if len(found) >= max_paths:
                                return PathSearch(tuple(found), "max_paths", clock() - start)
                        continue
                    if left - 1 == 0:
                        continue
                    path.append(v)
                    on_path.add(v)
                    stack.append((v, left - 1, iter(adj[v])))
                    advanced = True
                    break
                if not advanced:
                    stack.pop()
                    done = path.pop()
                    on_path.discard(done)
        return PathSearch(tuple(found), None, clock() - start)

    # -- derived graphs and summaries ------------------------------------------------------------------------------
    def subgraph(self, names: Iterable[str]) -> KnowledgeGraph:
        """The graph induced by ``names`` (every relation between two of them); ``KeyError`` for unknown names."""
        keep = set(names)
        unknown = sorted(n for n in keep if n not in self._entities)
        if unknown:
            raise KeyError(f"not entities of the {self.domain!r} graph: {unknown[:10]}")
        entities = [self._entities[n] for n in sorted(keep)]
        relations = [
            d.to_relation(self.domain) for u, v, rels in self._g.subgraph(keep).edges(data="rels") for d in rels
        ]
        relations.sort(key=lambda r: (r.source, r.target, r.relation, r.directed))
        return KnowledgeGraph(self.domain, entities, relations, directed=self.directed, snapshot_id=self.snapshot_id)

    def components(self) -> list[list[str]]:
        """Connected components (weakly connected in a directed graph): each a sorted name list, largest
        first, ties by first name."""
        comps_iter = nx.weakly_connected_components(self._g) if self.directed else nx.connected_components(self._g)
        comps = [sorted(c) for c in comps_iter]
        comps.sort(key=lambda c: (-len(c), c[0]))
        return comps

    def degree_histogram(self) -> list[int]:
        """``hist[d]`` = number of nodes with ``d`` distinct neighbours (either direction)."""
        hist: list[int] = []
        for nbrs in self._adj_any.values():
            d = len(nbrs)
            if d >= len(hist):
                hist.extend([0] * (d + 1 - len(hist)))
            hist[d] += 1
        return hist

    # -- names -----------------------------------------------------------------------------------------------------
    @cached_property
    def _name_index(self) -> dict[str, list[str]]:
        """normalize_name key -> entity names with that key, best first (more neighbours, then name order)."""
        index: dict[str, list[str]] = {}
        for name in self._entities:
            key = normalize_name(name)
            if key:
                index.setdefault(key, []).append(name)
        for names in index.values():
            names.sort(key=lambda n: (-len(self._adj_any[n]), n))
        return index

    def lookup(self, name: str) -> str | None:
        """The canonical entity name for ``name``: itself when it is an entity, else the entity whose
        ``normalize_name`` key matches (the one with most neighbours if several do), else ``None``."""
        if name in self._entities:
            return name
        names = self._name_index.get(normalize_name(name))
        return names[0] if names else None

    def lookup_all(self, name: str) -> list[str]:
        """Every entity whose ``normalize_name`` key equals that of ``name``, best first."""
        return list(self._name_index.get(normalize_name(name), ()))

    # -- export ----------------------------------------------------------------------------------------------------
    def to_networkx(self) -> nx.MultiGraph:
        """A networkx multigraph in LightRAG's attribute format (``MultiDiGraph`` when directed): node attributes
        ``entity_id, entity_type, description, source_id, file_path``; one edge per relation with ``weight,
        description, keywords`` (comma-joined), ``source_id``, plus ``relation`` and ``directed``. Lists are
        joined with ``<SEP>``. ``nx.write_graphml`` writes it, and ``records_from_networkx`` reads it back."""
        G: nx.MultiGraph = nx.MultiDiGraph() if self.directed else nx.MultiGraph()
        for e in self.entities():
            G.add_node(
                e.name, entity_id=e.name, entity_type=e.type or UNKNOWN_TYPE, description=e.description,
                source_id=SEP.join(e.source_chunk_ids), file_path=SEP.join(e.file_paths),
            )  # fmt: skip
        for r in self.relations():
            G.add_edge(
                r.source, r.target, weight=float(r.weight), description=r.description,
                keywords=", ".join(r.keywords), source_id=SEP.join(r.source_chunk_ids), relation=r.relation,
                directed=r.directed,
            )  # fmt: skip
        return G


def _distances_to(
    b: str, radj: dict[str, tuple[str, ...]], max_hops: int, deadline: float, clock: Callable[[], float]
) -> tuple[dict[str, int] | None, int]:
    """Distance to ``b`` of every node within ``max_hops`` hops of it against the edges' direction (one
    breadth-first search; ``simple_paths`` allows its start at ``max_hops``), or ``None`` once ``clock`` passes
    ``deadline`` (read every 1024 nodes); and the nodes expanded, which the path search goes on counting from."""
    to_b: dict[str, int] = {b: 0}
    frontier = [b]
    steps = 0
    for level in range(1, max_hops + 1):
        nxt = []
        for u in frontier:
            for v in radj[u]:
                if v not in to_b:
                    to_b[v] = level
                    nxt.append(v)
            steps += 1
            if steps % 1024 == 0 and clock() > deadline:
                return None, steps
        frontier = nxt
    return to_b, steps


__all__ = [
    "Ball",
    "EdgeData",
    "GraphRecordsError",
    "KnowledgeGraph",
    "PathSearch",
    "normalize_name",
]


# -- one graph per snapshot per process ---------------------------------------------------------------------------
_GRAPHS: OrderedDict[str, KnowledgeGraph] = OrderedDict()
_GRAPHS_LOCK = threading.Lock()
#: How much graph the cache keeps, in entities + relations over every graph it holds (about 1 KB of memory each,
#: memo included): the least recently used graphs are dropped first, and the newest one is always kept. A factory run
#: goes through every domain in turn in each of its flows, so a cache that holds fewer graphs than there are
#: domains (the reference set has 20) would drop each graph just before the next flow asks for it again.
GRAPH_CACHE_ELEMENTS = 2_000_000
#: A cached graph at least this large (entities + relations) is frozen out of the cyclic collector's walks.
FREEZE_MIN_ELEMENTS = 5_000


#: How a graph with a snapshot id is sent to another process when a task runner shares graphs through its own
#: object store: returns the ``__reduce__`` tuple, or None to send the records (``share_graphs``).
_SHARED: Callable[[KnowledgeGraph], tuple | None] | None = None


def share_graphs(reducer: Callable[[KnowledgeGraph], tuple | None] | None) -> Callable[[KnowledgeGraph], tuple | None] | None:
    """Send graphs to other processes with ``reducer`` from now on (None: as their records); returns the one
    before, to put back. Set by a task runner whose workers share an object store (Ray's)."""
    global _SHARED
    previous, _SHARED = _SHARED, reducer
    return previous


def cached_graph(snapshot_id: str | None, build: Callable[[], KnowledgeGraph]) -> KnowledgeGraph:
    """The graph of ``snapshot_id`` built by ``build`` the first time this process asks for it (graphs without a
    snapshot id are not cached). Two threads asking at once may both build it; the graphs are identical."""
    if snapshot_id is None:
        return build()
    with _GRAPHS_LOCK:
        kg = _GRAPHS.get(snapshot_id)
        if kg is not None:
            _GRAPHS.move_to_end(snapshot_id)
            return kg
    kg = build()
    with _GRAPHS_LOCK:
        _GRAPHS[snapshot_id] = kg
        _GRAPHS.move_to_end(snapshot_id)
        held = sum(g.n_nodes + g.n_edges for g in _GRAPHS.values())
        dropped = False
        while len(_GRAPHS) > 1 and held > GRAPH_CACHE_ELEMENTS:
            _, old = _GRAPHS.popitem(last=False)
            held -= old.n_nodes + old.n_edges
            dropped = True
        # Cached graphs live as long as the process: a large one goes out of the cyclic collector's sight, so that
        # each full collection does not walk its objects again (a full collection takes 0.45 s with twenty
        # 3,000-node graphs held). ``gc.freeze`` takes every object alive now, so it is kept for graphs worth it,
        # and a dropped graph hands everything back to the collector.
        if dropped:
            gc.unfreeze()
        if kg.n_nodes + kg.n_edges >= FREEZE_MIN_ELEMENTS:
            _freeze()
    return kg


_UNFREEZE_AT_EXIT = False


def _freeze() -> None:
    """``gc.freeze``, and once per process an exit hook that hands everything back to the collector: the
    interpreter's last collection at exit skips frozen objects, and extension types (DuckDB's) report those as
    leaked."""
    global _UNFREEZE_AT_EXIT
    if not _UNFREEZE_AT_EXIT:
        import atexit

        atexit.register(gc.unfreeze)
        _UNFREEZE_AT_EXIT = True
    gc.freeze()


def _graph_from_records(domain: str, entities: list[Entity], relations: list[Relation], directed: bool,
                        snapshot_id: str | None) -> KnowledgeGraph:
    return cached_graph(snapshot_id, lambda: KnowledgeGraph(domain, entities, relations, directed=directed,
                                                            snapshot_id=snapshot_id))
