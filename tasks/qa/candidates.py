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
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from schemas.qa import CandidatePath
from tasks.qa.checks import relation_chain, singles_out
from tasks.qa.context import keyword_text, path_edges, truncate_text
from tasks.meaning.names import name_carries, question_name
from tasks.meaning.profiles import ProfileBook, book_for_graph
from tasks.qa.template_writer import hop_refusals
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
    book: ProfileBook | None = None,
) -> list[CandidatePath]:
    """Up to ``count`` distinct shortcut-free simple paths of ``n_nodes`` nodes starting at ``start``, each
    singling out its nodes (``tasks.qa.checks.singles_out``), none with a hop its relation's profile refuses
    (``tasks.qa.template_writer.hop_refusals``: no words, no surface forms, or one of many in the direction
    walked). ``book`` holds the profiles (default: the graph's, from the lexicon and its statistics).

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

    layers, dist = _layers(kg, start, hops, undirected)
    if layers is None:
        return []
    steps = _live_steps(kg, layers, dist, allowed, undirected)
    if start not in steps:
        return []

    book = book if book is not None else book_for_graph(kg)
    rng = random.Random(f"candidates\x00{seed}\x00{start}\x00{n_nodes}")
    walks = 50 * count if max_walks is None else max_walks
    found = _walk(kg, start, hops, steps, rng, walks, count, undirected, book)
    return [
        CandidatePath(id=f"P{i}", nodes=list(p), edges=path_edges(kg, p, undirected=undirected))
        for i, p in enumerate(found, start=1)
    ]


def _layers(kg: KnowledgeGraph, start: str, hops: int, undirected: bool
            ) -> tuple[list[list[str]] | None, dict[str, int]]:
    """The layers of the breadth-first search from ``start`` over the whole graph (distances must be true graph
    distances), each sorted, and every node's distance; None for the layers when some layer up to ``hops`` is
    empty."""
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
            return None, dist
        layers.append(sorted(nxt))
    return layers, dist


def _live_steps(kg: KnowledgeGraph, layers: list[list[str]], dist: dict[str, int], allowed: set[str] | None,
                undirected: bool) -> dict[str, tuple[list[str], list[float]]]:
    """Backwards over ``layers``: for each node (allowed ones only) from which the last layer is reachable layer by
    layer, the next-layer steps that keep that possible, with their cumulative weights."""
    hops = len(layers) - 1
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
    return steps


def _walk(kg: KnowledgeGraph, start: str, hops: int, steps: dict[str, tuple[list[str], list[float]]],
          rng: random.Random, walks: int, count: int, undirected: bool, book: ProfileBook) -> list[tuple[str, ...]]:
    """Up to ``count`` distinct paths drawn by ``walks`` weighted walks over ``steps``, each kept only where it
    passes the checks below."""
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
        if not singles_out(kg, path, undirected=undirected, book=book):
            continue
        # Nor a hop its relation's profile refuses: no words, no surface forms, or one of many in the world in the
        # direction walked ("the person who worked in France": the graph holds one such person, the world many).
        if hop_refusals(path_edges(kg, path, undirected=undirected), book) is not None:
            continue
        # Nor a start whose name says a node the question asks the reader to find ("Longhorn cattle" -> cattle).
        if start_gives_away(kg, path):
            continue
        found.append(key)
        if len(found) >= count:
            break
    return found


def start_gives_away(kg: KnowledgeGraph, path: Sequence[str]) -> bool:
    """Whether the start's name, as a question writes it, says another node of ``path`` (``name_carries``:
    "Arlington (Texas)" says Texas, "einkorn wheat" says wheat): the question would give that node away."""
    shown = question_name(kg, path[0])
    return any(name_carries(shown, question_name(kg, n)) for n in path[1:])


def opens_a_path(kg: KnowledgeGraph, start: str, *, undirected: bool = True, book: ProfileBook | None = None) -> bool:
    """Whether some relation out of ``start`` can be asked (``hop_refusals``): a seed whose every hop is refused
    ("IBM built ...", "... worked at IBM", an opaque code) can start no candidate path, so a job on it could only be
    noted, never asked."""
    book = book if book is not None else book_for_graph(kg)
    for name in kg.neighbor_names(start, undirected=undirected):
        if hop_refusals(path_edges(kg, [start, name], undirected=undirected), book) is None:
            return True
    return False


def opening_refusals(kg: KnowledgeGraph, starts: Collection[str], *, undirected: bool = True,
                     book: ProfileBook | None = None) -> Counter[str]:
    """Why the relations out of ``starts`` cannot be asked: each refusal (``hop_refusal``'s sentence, which names
    the label and the source that decided) with how many hops it refused."""
    book = book if book is not None else book_for_graph(kg)
    out: Counter[str] = Counter()
    for start in starts:
        for name in kg.neighbor_names(start, undirected=undirected):
            found = hop_refusals(path_edges(kg, [start, name], undirected=undirected), book)
            if found is not None:
                out[found[1].split(": ", 1)[-1]] += 1
    return out


def describe_refusals(refusals: Counter[str], limit: int = 3) -> str:
    """The most common refusals as one line: "<reason> (n hops); ..."."""
    top = refusals.most_common(limit)
    more = len(refusals) - len(top)
    return "; ".join(f"{why} ({n} hop{'s' if n != 1 else ''})" for why, n in top) + (
        f"; and {more} other reason{'s' if more != 1 else ''}" if more > 0 else "")


#: Why a start gives no candidate path of a length (``explain_no_candidates``), in the order the refusals apply: the
#: reason a job without candidates is noted under, and counted under at the ``seeds`` stage of the yields.
NO_PATH_REASONS: tuple[str, ...] = (
    "no_path_too_short",  # no simple path of that many nodes starts at the seed: the graph is too shallow there
    "no_path_shortcut",  # paths of that many nodes start there, but each ends nearer the seed than its hop count
    "no_path_outside_context",  # shortcut-free paths exist, but each leaves the job's rendered subgraph
    "no_path_ambiguous",  # a relation along every path also leads to other nodes: several right answers
    "no_path_one_of_many",  # the sampler refuses a hop of every path (it names its node only as one of many, ...)
    "no_path_not_found",  # acceptable paths exist, but the sampler's walks did not come upon one
)

_PATH_LIMIT = 100  # paths examined per explanation
_STEP_LIMIT = 20_000  # search steps per explanation


@dataclass(frozen=True)
class NoCandidates:
    """Why ``start`` gives no candidate path of ``n_nodes`` nodes: ``reason`` (one of ``NO_PATH_REASONS``, the
    refusal met most often), the paths examined per refusal (``counts``; none for the two structural reasons when
    no path of that length exists at all) and ``detail``, the why in words."""

    start: str
    n_nodes: int
    reason: str
    counts: dict[str, int]
    detail: str

    def note(self, hop_class: str) -> str:
        """The job note: ``no 3+-hop candidate path from 'X': <detail>``."""
        return f"no {hop_class}-hop candidate path from {self.start!r}: {self.detail}"


def explain_no_candidates(
    kg: KnowledgeGraph,
    start: str,
    n_nodes: int,
    *,
    allowed_nodes: Collection[str] | None = None,
    undirected: bool = True,
    limit: int = _PATH_LIMIT,
    book: ProfileBook | None = None,
    **sampler_args: Any,
) -> NoCandidates:
    """Why ``sample_candidate_paths(kg, start, n_nodes, allowed_nodes=..., book=..., **sampler_args)`` finds
    nothing (``book``: the job's relation profiles, also for the ambiguity check).

    With no node ``n_nodes - 1`` hops from the start, every path of ``n_nodes`` nodes is a shortcut
    (``no_path_shortcut``), or there is none (``no_path_too_short``). Otherwise the shortcut-free paths (those the
    sampler walks; the first ``limit`` in name order) are each refused for the first of: a node outside
    ``allowed_nodes`` (``no_path_outside_context``), a relation that also leads elsewhere (``singles_out``:
    ``no_path_ambiguous``), the sampler's own per-path refusal, asked of the sampler on that path alone
    (``no_path_one_of_many``), or none, the walks simply missing it (``no_path_not_found``). Deterministic.
    """
    if n_nodes < 2:
        raise ValueError(f"a path needs at least 2 nodes, got n_nodes={n_nodes}")
    kg.entity(start)
    hops = n_nodes - 1
    dist = {start: 0}
    frontier = [start]
    for level in range(1, hops + 1):
        nxt = sorted({v for u in frontier for v in kg.neighbor_names(u, undirected=undirected) if v not in dist})
        if not nxt:
            break
        dist.update((v, level) for v in nxt)
        frontier = nxt
    farthest = max(dist.values())
    if farthest < hops:
        found, longest = _simple_paths(kg, start, hops, undirected, limit)
        if found:
            return NoCandidates(start, n_nodes, "no_path_shortcut", {"no_path_shortcut": found}, (
                f"every path of {n_nodes} nodes from it is a shortcut: no node is more than {farthest} hop(s) from "
                f"{start!r}, so each path's end is nearer than its {hops} hops"))  # fmt: skip
        return NoCandidates(start, n_nodes, "no_path_too_short", {}, (
            f"no path of {n_nodes} nodes starts there, the graph is too shallow (the longest path from it has "
            f"{longest + 1} node(s))"))  # fmt: skip

    allowed = None if allowed_nodes is None else set(allowed_nodes)
    counts: Counter = Counter()
    example: dict[str, str] = {}
    for path in _layered_paths(kg, start, hops, dist, undirected, limit):
        if allowed is not None and not allowed.issuperset(path):
            why = "no_path_outside_context"
        elif not singles_out(kg, path, undirected=undirected, book=book):
            why = "no_path_ambiguous"
            example.setdefault(why, _ambiguity(kg, path, undirected, book))
        elif not sample_candidate_paths(kg, start, n_nodes, count=1, max_walks=1, allowed_nodes=path,
                                        undirected=undirected, book=book, **sampler_args):  # fmt: skip
            why = "no_path_one_of_many"
        else:
            why = "no_path_not_found"
        counts[why] += 1
    total = sum(counts.values())
    if not total:  # the search budget ran out before a whole path
        return NoCandidates(start, n_nodes, "no_path_not_found", {}, (
            f"the search for a shortcut-free path of {n_nodes} nodes from it gave up after {_STEP_LIMIT} steps"))
    reason = max(counts, key=lambda r: (counts[r], -NO_PATH_REASONS.index(r)))
    detail = _no_path_detail(reason, counts, total >= limit, n_nodes, example.get("no_path_ambiguous", ""))
    return NoCandidates(start, n_nodes, reason, dict(counts), detail)


def _no_path_detail(reason: str, counts: Counter, capped: bool, n_nodes: int, ambiguous: str) -> str:
    """The sentence ``explain_no_candidates`` gives for its refusal counts (``capped``: the paths counted are the
    first of more)."""
    total = sum(counts.values())
    paths = f"{'the first ' if capped else ''}{total} path{'s' if total != 1 else ''} of {n_nodes} nodes"
    if len(counts) == 1:
        detail = {
            "no_path_outside_context": f"every shortcut-free path of {n_nodes} nodes from it leaves its rendered "
                                       f"subgraph, the part of the graph the prompt shows ({paths})",
            "no_path_ambiguous": f"every path's answer is ambiguous: {ambiguous} ({paths})",
            "no_path_one_of_many": f"every path has a hop that names its node only as one of many, which the "
                                   f"sampler refuses ({paths})",
            "no_path_not_found": f"the sampler's walks missed the {paths} it would accept",
        }[reason]
    else:
        said = {
            "no_path_outside_context": "leave its rendered subgraph",
            "no_path_ambiguous": f"have an ambiguous answer ({ambiguous})",
            "no_path_one_of_many": "have a hop that names its node only as one of many",
            "no_path_not_found": "would pass but were missed by the sampler's walks",
        }
        detail = f"of {paths}, " + "; ".join(f"{counts[r]} {said[r]}" for r in NO_PATH_REASONS if counts.get(r))
    return detail


def _simple_paths(kg: KnowledgeGraph, start: str, hops: int, undirected: bool, limit: int) -> tuple[int, int]:
    """``(simple paths of hops hops from start, at most limit; the most hops of any simple path found)``, by a
    depth-first search bounded by ``_STEP_LIMIT`` steps."""
    found = longest = steps = 0
    path = [start]
    on_path = {start}
    stack: list[Iterator[str]] = [iter(sorted(kg.neighbor_names(start, undirected=undirected)))]
    while stack and found < limit and steps < _STEP_LIMIT:
        v = next(stack[-1], None)
        if v is None:
            stack.pop()
            on_path.discard(path.pop())
            continue
        if v in on_path:
            continue
        steps += 1
        path.append(v)
        on_path.add(v)
        longest = max(longest, len(path) - 1)
        if len(path) - 1 == hops:
            found += 1
            on_path.discard(path.pop())
            continue
        stack.append(iter(sorted(kg.neighbor_names(v, undirected=undirected))))
    return found, longest


def _layered_paths(kg: KnowledgeGraph, start: str, hops: int, dist: dict[str, int], undirected: bool,
                   limit: int) -> Iterator[list[str]]:  # fmt: skip
    """The shortcut-free paths of ``hops`` hops from ``start`` (each hop one BFS layer further out, ``dist``), at
    most ``limit`` of them, in name order, within ``_STEP_LIMIT`` search steps."""
    found = steps = 0
    path = [start]

    def out(u: str) -> Iterator[str]:
        level = dist[u] + 1
        return iter(sorted(v for v in kg.neighbor_names(u, undirected=undirected) if dist.get(v) == level))

    stack = [out(start)]
    while stack and found < limit and steps < _STEP_LIMIT:
        v = next(stack[-1], None)
        if v is None:
            stack.pop()
            path.pop()
            continue
        steps += 1
        path.append(v)
        if len(path) - 1 == hops:
            found += 1
            yield list(path)
            path.pop()
            continue
        stack.append(out(v))


def _ambiguity(kg: KnowledgeGraph, path: list[str], undirected: bool, book: ProfileBook | None) -> str:
    """Where the path's relation chain stops singling out one node, in words."""
    for i, fits in enumerate(relation_chain(kg, path, undirected=undirected, book=book)):
        others = sorted(fits - {path[i + 1]})
        if others:
            d = kg.edge(path[i], path[i + 1], undirected=undirected)
            label = repr(d.relation) if d is not None and d.relation else "the relation"
            shown = ", ".join(repr(o) for o in others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
            return f"in {' -> '.join(path)}, {label} from {path[i]!r} also leads to {shown}"
    return "a relation of the path also leads to other nodes"


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


__all__ = ["GENERIC_KEYWORDS", "NO_PATH_REASONS", "NoCandidates", "edge_score", "describe_refusals", "explain_no_candidates", "opening_refusals",
           "opens_a_path",
           "relation_score", "render_candidates", "sample_candidate_paths"]
