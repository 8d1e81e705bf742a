"""Per-domain graph report: can this graph carry multi-hop questions?

The figures a user needs at a glance: size, connectivity, degree distribution, isolated nodes, the share of nodes
eligible as QA seeds (depth-3 ball of 20-400 nodes by default), entity types, and what the build cost. The
verdict is "usable" when enough seeds exist inside a dominant component, otherwise "sparse" or "too_small" with
the reason.
"""

from __future__ import annotations

import statistics
from collections import Counter
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from tasks.graph.kg import KnowledgeGraph

Verdict = Literal["usable", "sparse", "too_small"]


class GraphReport(BaseModel):
    run_id: str
    domain: str
    snapshot_id: str
    source: str | None = None
    n_nodes: int
    n_edges: int
    directed: bool
    components: int
    largest_component: int
    isolated_nodes: int
    degree_mean: float
    degree_median: float
    degree_max: int
    degree_histogram: dict[str, int] = Field(description="degree bucket -> nodes (buckets 0,1,2,3,4,5-9,10-19,20-49,50+)")
    seed_eligible: int
    seed_eligible_share: float
    seed_min_ball: int
    seed_max_ball: int
    entity_types: dict[str, int]
    llm_calls: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    verdict: Verdict
    verdict_reason: str
    created_at: datetime = Field(default_factory=datetime.now)


_BUCKETS = [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 9), (10, 19), (20, 49), (50, None)]


def bucket_degrees(hist: list[int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for lo, hi in _BUCKETS:
        label = str(lo) if hi == lo else (f"{lo}+" if hi is None else f"{lo}-{hi}")
        out[label] = sum(n for d, n in enumerate(hist) if d >= lo and (hi is None or d <= hi))
    return out


def count_seed_eligible(kg: KnowledgeGraph, *, depth: int = 3, min_ball: int = 20, max_ball: int = 400) -> int:
    """Nodes whose depth-``depth`` ball holds ``min_ball``..``max_ball`` nodes (early-stopping BFS per node)."""
    return sum(1 for n in kg.nodes() if min_ball <= kg.ball_size(n, depth, max_ball) <= max_ball)


def judge_graph(n_nodes: int, largest_component: int, seed_eligible: int, *, min_seeds: int = 10) -> tuple[Verdict, str]:
    if n_nodes < 20:
        return "too_small", f"{n_nodes} nodes: a depth-3 ball of 20+ nodes cannot exist"
    if seed_eligible < min_seeds:
        return "sparse", (
            f"only {seed_eligible} nodes have a depth-3 ball of the required size (need {min_seeds}); "
            "the graph is too fragmented for multi-hop questions"
        )
    share = largest_component / n_nodes
    if share < 0.3:
        return "sparse", f"the largest component holds {share:.0%} of the nodes; paths rarely span the graph"
    return "usable", f"{seed_eligible} seed-eligible nodes; largest component {share:.0%} of nodes"


def graph_report(
    kg: KnowledgeGraph,
    *,
    run_id: str,
    source: str | None = None,
    usage: dict[str, Any] | None = None,
    depth: int = 3,
    min_ball: int = 20,
    max_ball: int = 400,
    min_seeds: int = 10,
) -> GraphReport:
    """Compute the report of one domain graph. ``usage`` may carry the build's llm_calls, tokens and cost."""
    n = kg.n_nodes
    comps = kg.components()
    hist = kg.degree_histogram()
    degrees = [d for d, count in enumerate(hist) for _ in range(count)]
    eligible = count_seed_eligible(kg, depth=depth, min_ball=min_ball, max_ball=max_ball) if n else 0
    largest = len(comps[0]) if comps else 0
    verdict, reason = judge_graph(n, largest, eligible, min_seeds=min_seeds)
    types = Counter(e.type for e in kg.entities())
    usage = usage or {}
    return GraphReport(
        run_id=run_id,
        domain=kg.domain,
        snapshot_id=kg.snapshot_id or "",
        source=source,
        n_nodes=n,
        n_edges=kg.n_edges,
        directed=kg.directed,
        components=len(comps),
        largest_component=largest,
        isolated_nodes=hist[0] if hist else 0,
        degree_mean=round(statistics.fmean(degrees), 3) if degrees else 0.0,
        degree_median=float(statistics.median(degrees)) if degrees else 0.0,
        degree_max=len(hist) - 1 if hist else 0,
        degree_histogram=bucket_degrees(hist),
        seed_eligible=eligible,
        seed_eligible_share=round(eligible / n, 4) if n else 0.0,
        seed_min_ball=min_ball,
        seed_max_ball=max_ball,
        entity_types=dict(types.most_common(12)),
        llm_calls=usage.get("llm_calls"),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        cost_usd=usage.get("cost_usd"),
        verdict=verdict,
        verdict_reason=reason,
    )


def report_rows(reports: list[GraphReport]) -> list[dict[str, Any]]:
    """Compact rows for a Prefect table artifact or a terminal table."""
    return [
        {
            "domain": r.domain,
            "source": r.source or "",
            "nodes": r.n_nodes,
            "edges": r.n_edges,
            "components": r.components,
            "largest": r.largest_component,
            "isolated": r.isolated_nodes,
            "mean degree": r.degree_mean,
            "max degree": r.degree_max,
            "seed-eligible": f"{r.seed_eligible} ({r.seed_eligible_share:.0%})",
            "top types": ", ".join(f"{t} {c}" for t, c in list(r.entity_types.items())[:4]),
            "LLM calls": r.llm_calls if r.llm_calls is not None else "",
            "cost USD": f"{r.cost_usd:.4f}" if r.cost_usd is not None else "",
            "verdict": r.verdict,
            "why": r.verdict_reason,
        }
        for r in reports
    ]


def report_markdown(reports: list[GraphReport]) -> str:
    rows = report_rows(reports)
    if not rows:
        return "No graphs."
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def report_text(r: GraphReport) -> str:
    """A few lines per domain for a terminal."""
    types = ", ".join(f"{t} {c}" for t, c in list(r.entity_types.items())[:5])
    cost = ""
    if r.llm_calls is not None:
        cost = f"; build: {r.llm_calls} LLM calls, {r.prompt_tokens or 0}+{r.completion_tokens or 0} tokens"
        if r.cost_usd:
            cost += f", ${r.cost_usd:.4f}"
    return (
        f"{r.domain} ({r.source or '?'} snapshot {r.snapshot_id}): {r.n_nodes} nodes, {r.n_edges} edges, "
        f"{r.components} component(s) (largest {r.largest_component}), {r.isolated_nodes} isolated; "
        f"degree mean {r.degree_mean:g}, max {r.degree_max}\n"
        f"  seed-eligible (depth-3 ball {r.seed_min_ball}-{r.seed_max_ball}): {r.seed_eligible} "
        f"({r.seed_eligible_share:.0%}); types: {types}{cost}\n"
        f"  verdict: {r.verdict.upper()}: {r.verdict_reason}"
    )
