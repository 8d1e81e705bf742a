"""Benchmark: seed eligibility scan (depth-3 ball size in [20, 400]) on synthetic power-law graphs.

Two graphs of ``--nodes`` nodes, both with hubs:

- ``ba``: Barabási-Albert preferential attachment with ``--m`` links per new node (networkx). With m >= 2
  almost every depth-3 ball passes 400 nodes, so this exercises the early stop.
- ``sparse``: a preferential-attachment tree (m = 1) plus ``--extra`` random edges per node. Balls range from a
  handful of nodes to overflow, so this exercises full balls as well.

For each graph it times:

- ``build``: ``KnowledgeGraph`` construction (not part of the scan; reported for scale),
- ``scanner``: ``tasks.qa.seeds.eligible_seeds`` over every node (builds the integer adjacency, then capped
  bit-parallel searches of 64 starts at once),
- ``kg_bfs_ball``: the same scan with ``KnowledgeGraph.ball_size`` per node (the class's capped BFS),
- ``uncapped``: a full depth-3 BFS (``networkx.single_source_shortest_path_length(cutoff=3)``) on a seeded
  sample of ``--sample`` nodes, extrapolated to all nodes: what the cap saves.

Prints one line per graph and a JSON object (also written to ``--json PATH``).

    python bench/bench_seeds.py                  # 100k nodes
    python bench/bench_seeds.py --nodes 20000
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # runnable as a plain script from any directory
    sys.path.insert(0, str(ROOT))

from schemas.graph import Entity, Relation  # noqa: E402
from tasks.graph.kg import KnowledgeGraph  # noqa: E402
from tasks.qa.seeds import eligible_seeds  # noqa: E402

DEPTH, MIN_BALL, MAX_BALL = 3, 20, 400


def sparse_power_law(n: int, extra: float, seed: int) -> nx.Graph:
    """A preferential-attachment tree plus ``extra * n`` random edges between distinct nodes."""
    g = nx.barabasi_albert_graph(n, 1, seed=seed)
    rng = random.Random(seed)
    for _ in range(int(extra * n)):
        a, b = rng.randrange(n), rng.randrange(n)
        if a != b:
            g.add_edge(a, b)
    return g


def to_kg(g: nx.Graph, domain: str) -> KnowledgeGraph:
    names = {v: f"n{v:06d}" for v in g}
    entities = [Entity.model_construct(domain=domain, name=names[v], type="concept", description="",
                                       source_chunk_ids=[], file_paths=[]) for v in g]  # fmt: skip
    relations = [
        Relation.model_construct(domain=domain, source=names[a], target=names[b], relation="", keywords=["related"],
                                 description="", weight=1.0, source_chunk_ids=[], directed=False)
        for a, b in g.edges()
    ]  # fmt: skip
    return KnowledgeGraph(domain, entities, relations, directed=False)


def bench_graph(label: str, g: nx.Graph, sample: int, seed: int) -> dict:
    t0 = time.perf_counter()
    kg = to_kg(g, "bench")
    build_s = time.perf_counter() - t0
    n = kg.n_nodes

    t0 = time.perf_counter()
    eligible = eligible_seeds(kg, depth=DEPTH, min_ball=MIN_BALL, max_ball=MAX_BALL)
    scan_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    kg_sizes = {name: kg.ball_size(name, DEPTH, MAX_BALL) for name in kg.nodes()}
    kg_s = time.perf_counter() - t0
    kg_eligible = sorted((name, s) for name, s in kg_sizes.items() if MIN_BALL <= s <= MAX_BALL)
    if kg_eligible != eligible:
        raise SystemExit(f"{label}: scanner and KnowledgeGraph.ball_size disagree")
    overflow = sum(1 for s in kg_sizes.values() if s > MAX_BALL)
    too_small = sum(1 for s in kg_sizes.values() if s < MIN_BALL)

    rng = random.Random(seed)
    picks = rng.sample(list(g), min(sample, n))
    t0 = time.perf_counter()
    full_sizes = [len(nx.single_source_shortest_path_length(g, v, cutoff=DEPTH)) for v in picks]
    full_s = (time.perf_counter() - t0) / max(1, len(picks)) * n

    return {
        "graph": label,
        "nodes": n,
        "edges": kg.n_edges,
        "max_degree": max(d for _, d in g.degree()),
        "build_s": round(build_s, 2),
        "scanner_s": round(scan_s, 2),
        "scanner_nodes_per_s": round(n / scan_s),
        "kg_bfs_ball_s": round(kg_s, 2),
        "kg_bfs_ball_nodes_per_s": round(n / kg_s),
        "uncapped_s_extrapolated": round(full_s, 1),
        "uncapped_mean_ball": round(sum(full_sizes) / len(full_sizes), 1),
        "eligible": len(eligible),
        "eligible_share": round(len(eligible) / n, 4),
        "overflow_share": round(overflow / n, 4),
        "too_small_share": round(too_small / n, 4),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--m", type=int, default=2, help="BA links per new node")
    ap.add_argument("--extra", type=float, default=0.1, help="random extra edges per node in the sparse graph")
    ap.add_argument("--sample", type=int, default=300, help="nodes for the uncapped BFS estimate")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    results = []
    for label, g in (
        (f"ba_m{args.m}", nx.barabasi_albert_graph(args.nodes, args.m, seed=args.seed)),
        (f"sparse_tree+{args.extra:g}", sparse_power_law(args.nodes, args.extra, args.seed)),
    ):
        r = bench_graph(label, g, args.sample, args.seed)
        results.append(r)
        print(
            f"{r['graph']}: {r['nodes']} nodes / {r['edges']} edges (max degree {r['max_degree']}); scan "
            f"{r['scanner_s']} s ({r['scanner_nodes_per_s']:,} nodes/s), KnowledgeGraph.ball_size "
            f"{r['kg_bfs_ball_s']} s, uncapped BFS ~{r['uncapped_s_extrapolated']} s; eligible "
            f"{r['eligible_share']:.1%}, overflow {r['overflow_share']:.1%}, too small {r['too_small_share']:.1%}"
        )
    out = {"depth": DEPTH, "min_ball": MIN_BALL, "max_ball": MAX_BALL, "results": results}
    print(json.dumps(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
