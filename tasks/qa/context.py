"""The generator's view of a seed: its ball rendered as relation lines, and the relation used for each hop.

Rendering (Omne-R1 appendix C shows the subgraph as ``entity_1 - entity_2: the relation`` lines):

    Alan Turing - King's College, Cambridge: studied at, education, mathematics; Alan Turing studied ...

- One line per relation between two nodes of the ball (the induced subgraph: every relation whose two ends are
  within ``depth`` hops of the seed). Parallel relations get a line each.
- ``keywords`` = the relation label (if any) followed by its keywords, repeats dropped; the description is cut to
  ``max_description_chars`` (on a word boundary, with an ellipsis) and newlines in it become spaces, so one
  relation is exactly one line.
- Which end comes first: the source of a directed relation (so the line reads in the fact's direction);
  for an undirected relation the end nearer the seed, then the smaller name.
- Order: by the BFS distance of the nearer end, then of the farther end, then by the two names, label and
  description. Lines near the seed come first, so a token budget cuts the far rim of the ball, not the centre.
- Budget: lines are added in that order while the running token count (``tasks.corpus.text.count_tokens`` of the text
  joined with newlines) stays within ``token_budget``; the first line that does not fit ends the rendering
  (later lines are farther from the seed). ``truncated`` says whether that happened.

``RenderedContext.nodes`` is exactly the set of names appearing in the rendered lines (plus the seed), in
(distance, name) order: the generator's ``enum`` of allowed path nodes, so a constrained model can only name
nodes it was shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from schemas.qa import PathEdge
from tasks.graph.kg import EdgeData, KnowledgeGraph
from tasks.corpus.text import count_tokens


@dataclass(frozen=True)
class RenderedContext:
    """A rendered ball: ``text`` (relation lines joined by newlines), ``nodes`` (the names in it, seed first,
    then by distance and name), ``distances`` (BFS distance of each of those nodes from the seed),
    ``n_relations`` (lines rendered), ``n_relations_total`` (lines the ball had), ``tokens`` (of ``text``),
    ``truncated`` (the budget cut some lines)."""

    seed: str
    text: str
    nodes: tuple[str, ...]
    distances: dict[str, int]
    n_relations: int
    n_relations_total: int
    tokens: int
    truncated: bool


def truncate_text(text: str, max_chars: int) -> str:
    """``text`` on one line (whitespace runs become one space), cut to at most ``max_chars`` characters at a
    word boundary when possible, with "…" marking the cut. ``max_chars <= 0`` gives ""."""
    flat = " ".join(text.split())
    if max_chars <= 0:
        return ""
    if len(flat) <= max_chars:
        return flat
    cut = flat[: max_chars - 1]
    space = cut.rfind(" ")
    if space >= max_chars // 2:  # cut at a word end unless that would throw away more than half
        cut = cut[:space]
    return cut.rstrip(" ,;:.") + "…"


def keyword_text(relation: str, keywords: Iterable[str]) -> str:
    """A relation's label followed by its keywords, repeats (case-insensitive) dropped, joined with ", "."""
    seen: set[str] = set()
    parts: list[str] = []
    for k in (relation, *keywords):
        k = " ".join(k.split())
        if k and k.casefold() not in seen:
            seen.add(k.casefold())
            parts.append(k)
    return ", ".join(parts)


def relation_keywords(d: EdgeData) -> str:
    """``keyword_text`` of one relation."""
    return keyword_text(d.relation, d.keywords)


def render_relation(a: str, b: str, d: EdgeData, *, max_description_chars: int = 200) -> str:
    """One relation line ``a - b: keywords; description`` (either part may be empty; no ";" then)."""
    keywords = relation_keywords(d)
    desc = truncate_text(d.description, max_description_chars)
    if keywords and desc:
        body = f"{keywords}; {desc}"
    else:
        body = keywords or desc
    return f"{a} - {b}: {body}"


def ball_distances(kg: KnowledgeGraph, seed: str, depth: int, *, undirected: bool = True) -> dict[str, int]:
    """BFS distance from ``seed`` of every node within ``depth`` hops (seed: 0)."""
    dist = {seed: 0}
    frontier = [seed]
    for level in range(1, depth + 1):
        nxt: list[str] = []
        for u in frontier:
            for v in kg.neighbor_names(u, undirected=undirected):
                if v not in dist:
                    dist[v] = level
                    nxt.append(v)
        if not nxt:
            break
        frontier = nxt
    return dist


def render_subgraph(
    kg: KnowledgeGraph,
    seed: str,
    *,
    depth: int = 3,
    token_budget: int = 6000,
    max_description_chars: int = 200,
    undirected: bool = True,
) -> RenderedContext:
    """Render the ``depth``-hop ball of ``seed`` as relation lines within ``token_budget`` tokens (see the
    module docstring for the line format and order). Deterministic: the same graph and arguments give the
    same text. ``KeyError`` for an unknown seed; ``ValueError`` for a negative depth or budget."""
    if depth < 0:
        raise ValueError(f"depth must be >= 0, got {depth}")
    if token_budget < 0:
        raise ValueError(f"token_budget must be >= 0, got {token_budget}")
    kg.entity(seed)
    dist = ball_distances(kg, seed, depth, undirected=undirected)

    # Collect each relation once: from its smaller-named end (for a self-relation, once).
    rows: list[tuple[tuple, str, str, EdgeData]] = []
    for u in dist:
        for v, d in kg.neighbors(u, undirected=True):
            if v not in dist or v < u:
                continue
            if v == u and d.direction == "in":
                continue
            if d.directed:
                a, b = d.source, d.target
            else:
                a, b = (u, v) if (dist[u], u) <= (dist[v], v) else (v, u)
            near, far = sorted((dist[a], dist[b]))
            rows.append(((near, far, min(a, b), max(a, b), d.relation, d.description, a), a, b, d))
    rows.sort(key=lambda r: r[0])

    lines: list[str] = []
    names: set[str] = {seed}
    tokens = 0
    truncated = False
    for _, a, b, d in rows:  # rendered in order, up to the budget: the rest is only counted
        line = render_relation(a, b, d, max_description_chars=max_description_chars)
        cost = count_tokens(line) + (1 if lines else 0)  # the newline joining it to the text so far
        if tokens + cost > token_budget:
            truncated = True
            break
        lines.append(line)
        tokens += cost
        names.update((a, b))
    ordered = tuple(sorted(names, key=lambda n: (dist[n], n)))
    text = "\n".join(lines)
    return RenderedContext(
        seed=seed, text=text, nodes=ordered, distances={n: dist[n] for n in ordered}, n_relations=len(lines),
        n_relations_total=len(rows), tokens=count_tokens(text), truncated=truncated,
    )  # fmt: skip


def hop_edge(kg: KnowledgeGraph, head: str, tail: str, *, undirected: bool = True) -> PathEdge:
    """The relation used for the hop ``head -> tail``: ``KnowledgeGraph.edge`` (highest weight, then one leading
    from ``head``, then sort order), so parallel relations resolve to one deterministic choice. ``forward``: the
    relation reads from ``head``: it points from it, or it has no direction and was stored from it (a label reads
    from its stored source either way: an undirected "was born in" from Abram to Ur does not make "Ur was born in
    Abram").
    ``ValueError`` when the two nodes are not adjacent."""
    d = kg.edge(head, tail, undirected=undirected)
    if d is None:
        raise ValueError(f"{head!r} and {tail!r} are not adjacent in the {kg.domain!r} graph")
    return edge_as_hop(d, head, tail)


def edge_as_hop(d: EdgeData, head: str, tail: str) -> PathEdge:
    """One relation between ``head`` and ``tail`` (seen from ``head``) as the path edge of the hop ``head -> tail``
    (``hop_edge`` says what ``forward`` means)."""
    return PathEdge(
        head=head, tail=tail, relation=d.relation, keywords=list(d.keywords), description=d.description,
        directed=d.directed, forward=d.direction == "out" or (d.direction == "undirected" and d.source == head),
        source_chunk_ids=list(d.source_chunk_ids),
    )  # fmt: skip


def path_edges(kg: KnowledgeGraph, path: Sequence[str], *, undirected: bool = True) -> list[PathEdge]:
    """``hop_edge`` for every consecutive pair of ``path``; ``ValueError`` at the first non-adjacent pair."""
    return [hop_edge(kg, a, b, undirected=undirected) for a, b in zip(path, path[1:])]


def path_source_chunks(edges: Sequence[PathEdge]) -> list[str]:
    """The chunk ids supporting a path's relations: first-seen order, no repeats."""
    return list(dict.fromkeys(c for e in edges for c in e.source_chunk_ids))


__all__ = [
    "RenderedContext",
    "ball_distances",
    "edge_as_hop",
    "hop_edge",
    "keyword_text",
    "path_edges",
    "path_source_chunks",
    "relation_keywords",
    "render_relation",
    "render_subgraph",
    "truncate_text",
]
