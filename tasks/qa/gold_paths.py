"""Candidate gold paths: every simple path from a question's start node to its answer, bounded, as triples.

This is the search half of Explore-on-Graph's "search and verify" (appendix O): a breadth-first enumeration of
start-to-answer paths within a hop bound gives high recall; an LLM verifier (elsewhere) then keeps the paths
that match the question's meaning.

- The search is ``KnowledgeGraph.simple_paths``: shortest first, then in name order, stopped by a path count
  (``max_paths``) and a time budget (``time_budget_s``); the result says which bound stopped it, if any.
  Adjacency is undirected by default, like the question paths.
- ``max_hops`` defaults to the question path's hop count plus one: equally short alternatives and one-hop
  detours are what a verifier should see; longer ones are almost always spurious.
- Parallel relations: a path is a node sequence, and each hop is rendered with one relation, chosen as
  ``tasks.qa.context.hop_edge`` chooses it (highest weight, then a relation leading forward, then sort order).
  Keeping every parallel relation would multiply paths without changing which nodes the reasoning visits,
  and the verifier judges node paths.
- Triples are ``(subject, relation text, object)`` in the relation's stored direction; relation text is the
  label, else the keywords, else the description (``PathEdge.relation_text``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from schemas.qa import QA, GoldPath
from tasks.qa.context import path_edges
from tasks.graph.kg import KnowledgeGraph


@dataclass(frozen=True)
class GoldPathCandidate:
    """One found path: its nodes and one triple per hop."""

    nodes: tuple[str, ...]
    triples: tuple[tuple[str, str, str], ...]

    @property
    def hops(self) -> int:
        return len(self.nodes) - 1


@dataclass(frozen=True)
class GoldPathSearch:
    """Paths found from ``start`` to ``answer`` within ``max_hops``; ``stopped`` is ``"max_paths"`` or
    ``"time_budget"`` when a bound ended the search early, ``None`` when the search was complete."""

    start: str
    answer: str
    max_hops: int
    paths: tuple[GoldPathCandidate, ...]
    stopped: Literal["max_paths", "time_budget"] | None
    elapsed_s: float

    @property
    def complete(self) -> bool:
        return self.stopped is None


def default_max_hops(path: Sequence[str]) -> int:
    """The question path's hop count plus one (at least 1)."""
    return max(1, len(path) - 1 + 1)


def candidate_gold_paths(
    kg: KnowledgeGraph,
    start: str,
    answer: str,
    max_hops: int,
    *,
    max_paths: int = 50,
    time_budget_s: float = 2.0,
    undirected: bool = True,
    clock: Callable[[], float] = time.perf_counter,
) -> GoldPathSearch:
    """Every simple path ``start`` -> ``answer`` with at most ``max_hops`` hops, bounded by ``max_paths`` and
    about ``time_budget_s`` seconds, ordered shortest first then lexicographically by node names (module
    docstring). ``KeyError`` for an unknown node; ``ValueError`` for ``max_hops < 1`` or ``max_paths < 1``."""
    found = kg.simple_paths(
        start, answer, max_hops, max_paths=max_paths, time_budget_s=time_budget_s, undirected=undirected, clock=clock
    )
    nodes = sorted(found.paths, key=lambda p: (len(p), p))
    paths = tuple(
        GoldPathCandidate(p, tuple(e.triple() for e in path_edges(kg, p, undirected=undirected))) for p in nodes
    )
    return GoldPathSearch(start, answer, max_hops, paths, found.stopped, found.elapsed_s)


def gold_path_records(
    qa: QA,
    search: GoldPathSearch,
    *,
    kg: KnowledgeGraph | None = None,
    include_generator_path: bool = True,
    run_id: str | None = None,
) -> list[GoldPath]:
    """``GoldPath`` rows (verdict "unverified") for the search's paths, ranked in search order.

    ``is_generator_path`` marks the question's own path. With ``include_generator_path`` and a ``kg``, the
    generator's path is appended (last rank) when a search bound cut it off, so the verifier always sees it.
    """
    own = tuple(qa.path)
    rows = [
        GoldPath(qa_id=qa.qa_id, rank=i, path=list(p.nodes), triples=list(p.triples), is_generator_path=p.nodes == own,
                 run_id=run_id)
        for i, p in enumerate(search.paths)
    ]  # fmt: skip
    if include_generator_path and kg is not None and not any(r.is_generator_path for r in rows):
        triples = [e.triple() for e in path_edges(kg, own)]
        rows.append(GoldPath(qa_id=qa.qa_id, rank=len(rows), path=list(own), triples=triples, is_generator_path=True,
                             run_id=run_id))  # fmt: skip
    return rows


@dataclass(frozen=True)
class GoldPathReport:
    """Per-question summary of the search: how many paths, whether it finished, whether the generator's path
    was among them and at which rank, and the shortest hop count found."""

    qa_id: str
    n_paths: int
    stopped: Literal["max_paths", "time_budget"] | None
    generator_path_found: bool
    generator_rank: int | None
    shortest_hops: int | None
    question_hops: int
    elapsed_s: float


def gold_path_report(
    kg: KnowledgeGraph,
    qa: QA,
    *,
    max_hops: int | None = None,
    max_paths: int = 50,
    time_budget_s: float = 2.0,
    undirected: bool = True,
) -> tuple[GoldPathSearch, GoldPathReport]:
    """Search one question's gold paths (``max_hops`` default: ``default_max_hops(qa.path)``) and summarise."""
    hops = default_max_hops(qa.path) if max_hops is None else max_hops
    search = candidate_gold_paths(
        kg, qa.path[0], qa.path[-1], hops, max_paths=max_paths, time_budget_s=time_budget_s, undirected=undirected
    )
    own = tuple(qa.path)
    rank = next((i for i, p in enumerate(search.paths) if p.nodes == own), None)
    report = GoldPathReport(
        qa_id=qa.qa_id, n_paths=len(search.paths), stopped=search.stopped, generator_path_found=rank is not None,
        generator_rank=rank, shortest_hops=search.paths[0].hops if search.paths else None, question_hops=qa.hops,
        elapsed_s=search.elapsed_s,
    )  # fmt: skip
    return search, report


def summarize_reports(reports: Sequence[GoldPathReport]) -> dict[str, float]:
    """Aggregate figures over questions: count, mean paths per question, share whose search finished, share
    whose generator path was found, share with a path shorter than the question's (a shortcut)."""
    n = len(reports)
    if n == 0:
        return {"questions": 0, "mean_paths": 0.0, "complete_share": 0.0, "generator_found_share": 0.0,
                "shorter_path_share": 0.0}  # fmt: skip
    return {
        "questions": n,
        "mean_paths": sum(r.n_paths for r in reports) / n,
        "complete_share": sum(r.stopped is None for r in reports) / n,
        "generator_found_share": sum(r.generator_path_found for r in reports) / n,
        "shorter_path_share": sum(r.shortest_hops is not None and r.shortest_hops < r.question_hops for r in reports) / n,
    }


__all__ = [
    "GoldPathCandidate",
    "GoldPathReport",
    "GoldPathSearch",
    "candidate_gold_paths",
    "default_max_hops",
    "gold_path_records",
    "gold_path_report",
    "summarize_reports",
]
