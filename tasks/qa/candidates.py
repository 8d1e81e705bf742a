"""Candidate paths for the ``candidates`` generation mode: valid, shortcut-free paths sampled in code.

A path of ``n_nodes`` nodes from the seed is *shortcut-free* when the shortest distance from its start to its
end equals its hop count. Such a path must step from BFS layer ``i`` to layer ``i + 1`` (distances from the
seed) at every hop, because one hop changes the distance by at most one. The sampler therefore walks layer by
layer: it only steps to neighbours one layer further out that can still reach the last layer in the hops left
(computed once, backwards from the last layer), so every walk succeeds, every path is simple and
shortcut-free by construction, and each path is still checked with ``shortest_path_length`` before it is
returned.

Which neighbour a walk takes is a weighted random choice (``random.Random`` seeded from ``seed``, the start
node and ``n_nodes``), weight = ``edge_score``:

    score(u -> v) = (1 + description_bonus + keyword_bonus) / sqrt(1 + degree(v))

- ``description_bonus`` = min(len(description), 240) / 80, in [0, 3]: a described relation gives the question
  writer something to paraphrase; a bare edge does not.
- ``keyword_bonus`` = 1 when the relation has a label or keyword that is not generic ("related to", "associated
  with", ...): such relations make vague questions.
- The degree penalty prefers specific next nodes: a hub (a country, "data") makes an ambiguous bridge and is
  where unintended short paths come from.

The best of several parallel relations between ``u`` and ``v`` gives the score. Distinct paths are collected
until ``count`` are found or ``max_walks`` walks were tried; ids are "P1".."PC" in the order found.
"""

from __future__ import annotations

import math
import random
from collections.abc import Collection
from itertools import accumulate

from schemas.qa import CandidatePath
from tasks.qa.checks import singles_out
from tasks.qa.context import keyword_text, path_edges, truncate_text
from tasks.qa.template_writer import one_of_many_hop
from tasks.graph.kg import EdgeData, KnowledgeGraph

#: Relation labels/keywords that say nothing about how two nodes relate (compared case-insensitively).
GENERIC_KEYWORDS: frozenset[str] = frozenset(
    {
        "related", "related to", "relation", "relationship", "associated", "associated with", "association",
        "connected", "connected to", "connection", "linked", "linked to", "link", "is", "has", "have", "part of",
        "involves", "involved", "involved in", "mentions", "mentioned", "about", "with", "and", "other",
    }
)  # fmt: skip


def relation_score(d: EdgeData) -> float:
    """How informative one relation is: ``1 + description_bonus + keyword_bonus`` (module docstring)."""
    desc_bonus = min(len(d.description.strip()), 240) / 80.0
    words = [w.strip().casefold() for w in (d.relation, *d.keywords)]
    keyword_bonus = 1.0 if any(w and w not in GENERIC_KEYWORDS for w in words) else 0.0
    return 1.0 + desc_bonus + keyword_bonus


def edge_score(kg: KnowledgeGraph, u: str, v: str, *, undirected: bool = True) -> float:
    """Weight of stepping from ``u`` to ``v`` (module docstring); 0 when they are not adjacent."""
    rels = kg.relations_between(u, v, undirected=undirected)
    if not rels:
        return 0.0
    return max(relation_score(d) for d in rels) / math.sqrt(1 + kg.degree(v))


def sample_candidate_paths(
    kg: KnowledgeGraph,
    start: str,
    n_nodes: int,
    *,
    count: int = 8,
    seed: int = 0,
    max_walks: int | None = None,
    allowed_nodes: Collection[str] | None = None,
    undirected: bool = True,
) -> list[CandidatePath]:
    """Up to ``count`` distinct shortcut-free simple paths of ``n_nodes`` nodes starting at ``start``, each
    singling out its nodes (``tasks.qa.checks.singles_out``), none with a hop that names a node only as one of the
    many things in, at or of the one before (``tasks.qa.template_writer.one_of_many_hop``).

    ``allowed_nodes`` restricts the path to those nodes (pass the rendered context's nodes so every candidate
    is visible to the generator); distances are still those of the whole graph, so "shortcut-free" holds in
    the graph the questions are asked on. Deterministic: the same graph and arguments give the same paths
    in the same order. Fewer than ``count`` paths come back when fewer exist or ``max_walks`` (default
    ``50 * count``) walks did not find them. ``ValueError`` for ``n_nodes < 2`` or ``count < 1``; ``KeyError``
    for an unknown start.
    """
    if n_nodes < 2:
        raise ValueError(f"a path needs at least 2 nodes, got n_nodes={n_nodes}")
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    kg.entity(start)
    hops = n_nodes - 1
    allowed = None if allowed_nodes is None else set(allowed_nodes)
    if allowed is not None and start not in allowed:
        return []

    # Layers of the BFS from the start, over the whole graph (distances must be true graph distances).
    layers: list[list[str]] = [[start]]
    dist = {start: 0}
    for level in range(1, hops + 1):
        nxt: list[str] = []
        for u in layers[-1]:
            for v in kg.neighbor_names(u, undirected=undirected):
                if v not in dist:
                    dist[v] = level
                    nxt.append(v)
        if not nxt:
            return []
        layers.append(sorted(nxt))

    # Backwards: nodes of layer i (allowed ones only) from which the last layer is reachable layer by layer,
    # and for each the next-layer steps that keep that possible.
    alive: set[str] = {v for v in layers[hops] if allowed is None or v in allowed}
    steps: dict[str, tuple[list[str], list[float]]] = {}
    for level in range(hops - 1, -1, -1):
        keep: set[str] = set()
        for u in layers[level]:
            if allowed is not None and u not in allowed:
                continue
            nbrs = [v for v in kg.neighbor_names(u, undirected=undirected) if v in alive and dist[v] == level + 1]
            if nbrs:
                # Cumulative weights, summed as ``Random.choices`` sums ``weights``: the same draws, once per node.
                steps[u] = (nbrs, list(accumulate(edge_score(kg, u, v, undirected=undirected) for v in nbrs)))
                keep.add(u)
        alive = keep
    if start not in alive:
        return []

    rng = random.Random(f"candidates\x00{seed}\x00{start}\x00{n_nodes}")
    walks = 50 * count if max_walks is None else max_walks
    found: list[tuple[str, ...]] = []
    seen: set[tuple[str, ...]] = set()
    for _ in range(walks):
        path = [start]
        for _ in range(hops):
            names, cum_weights = steps[path[-1]]
            path.append(rng.choices(names, cum_weights=cum_weights)[0] if len(names) > 1 else names[0])
        key = tuple(path)
        if key in seen:
            continue
        seen.add(key)
        # The layer construction guarantees this; the check guards the contract against graph-class changes.
        if kg.shortest_path_length(start, path[-1], cutoff=hops, undirected=undirected) != hops:
            continue
        # Offered paths must pass the answer-uniqueness check too: a question over a path whose relations also
        # lead elsewhere has several right answers, whatever its wording.
        if not singles_out(kg, path, undirected=undirected):
            continue
        # Nor a hop that names its node only as one of the many things in, at or of the node before ("the person
        # who worked in France", "the machine built by IBM"): the graph holds one such thing, the world many.
        types = [kg.entity(n).type for n in path]
        if one_of_many_hop(path_edges(kg, path, undirected=undirected), types) is not None:
            continue
        found.append(key)
        if len(found) >= count:
            break
    return [
        CandidatePath(id=f"P{i}", nodes=list(p), edges=path_edges(kg, p, undirected=undirected))
        for i, p in enumerate(found, start=1)
    ]


def opens_a_path(kg: KnowledgeGraph, start: str, *, undirected: bool = True) -> bool:
    """Whether some relation out of ``start`` names the node it leads to as more than one of many
    (``one_of_many_hop``): a seed whose every hop is vague ("IBM built ...", "... worked at IBM") can start no
    candidate path, so a job on it could only be noted, never asked."""
    typ = kg.entity(start).type
    for name in kg.neighbor_names(start, undirected=undirected):
        edges = path_edges(kg, [start, name], undirected=undirected)
        if one_of_many_hop(edges, [typ, kg.entity(name).type]) is None:
            return True
    return False


def render_candidates(candidates: list[CandidatePath], *, max_description_chars: int = 160) -> str:
    """Candidate paths as prompt text, one block per path::

        P1: Alan Turing -> On Computable Numbers -> Turing machine
          Alan Turing - On Computable Numbers: wrote, paper, 1936; Alan Turing wrote the 1936 paper ...
    """
    blocks: list[str] = []
    for c in candidates:
        lines = [f"{c.id}: " + " -> ".join(c.nodes)]
        for e in c.edges:
            subject, _, obj = e.triple()
            kw = keyword_text(e.relation, e.keywords)
            desc = truncate_text(e.description, max_description_chars)
            lines.append(f"  {subject} - {obj}: {kw}; {desc}" if kw and desc else f"  {subject} - {obj}: {kw or desc}")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


__all__ = ["GENERIC_KEYWORDS", "edge_score", "opens_a_path", "relation_score", "render_candidates",
           "sample_candidate_paths"]
