"""Benchmark: import a large LightRAG GraphML and store it as a warehouse snapshot.

Generates a synthetic power-law graph (preferential attachment) in LightRAG's GraphML format inside a temporary
directory, then times, each on its own:

- ``import``: ``tasks.graph.importers.read_lightrag_graphml`` (GraphML -> records),
- ``write``: ``warehouse.graphs.write_snapshot`` into a DuckDB file (one transaction),
- ``rewrite``: the same write again (idempotent: finds the snapshot, adds no rows),
- ``load``: ``warehouse.graphs.load_graph`` from that file (then, apart, the first traversal's adjacency cache),
- ``ball_scan``: ``ball_size(n, 3, cap=400)`` for a seeded sample of nodes (what seed eligibility does).

Prints one summary line and one JSON object (also written to ``--json PATH`` when given). Stage times are wall
clock (``*_s``) and process CPU (``*_cpu_s``; DuckDB's threads count too): on a busy machine the CPU figures
move less. Peak RSS is the process maximum from ``resource.getrusage`` (it includes generating the file).

    python bench/bench_graph_load.py                 # 100k nodes, 500k edges
    python bench/bench_graph_load.py --nodes 20000 --edges 100000
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # runnable as a plain script from any directory
    sys.path.insert(0, str(ROOT))

from warehouse.graphs import write_snapshot  # noqa: E402
from tasks.graph.importers import read_lightrag_graphml  # noqa: E402
from warehouse.db import Warehouse  # noqa: E402
from warehouse.graphs import load_graph

TYPES = ("person", "organization", "concept", "location", "event", "technology")
KEYWORDS = ("causes", "part of", "used by", "located in", "founded", "influences", "related")


def power_law_edges(n_nodes: int, n_edges: int, seed: int) -> list[tuple[int, int]]:
    """Distinct undirected edges by preferential attachment: each new node links to ``~n_edges/n_nodes``
    earlier nodes picked in proportion to their degree, which gives a power-law degree distribution with hubs."""
    rng = random.Random(seed)
    per_node = max(1, n_edges // max(1, n_nodes - 1))
    ends: list[int] = []  # every edge end once: sampling from it is sampling by degree
    seen: set[tuple[int, int]] = set()
    edges: list[tuple[int, int]] = []
    for v in range(1, n_nodes):
        targets: set[int] = set()
        want = min(per_node, v)
        while len(targets) < want:
            targets.add(rng.choice(ends) if ends and rng.random() < 0.9 else rng.randrange(v))
        for u in sorted(targets):
            seen.add((u, v))
            edges.append((u, v))
            ends.extend((u, v))
    while len(edges) < n_edges and n_nodes > 1:  # top up to the exact edge count, still by degree
        a, b = rng.choice(ends), rng.choice(ends)
        key = (min(a, b), max(a, b))
        if a != b and key not in seen:
            seen.add(key)
            edges.append(key)
            ends.extend(key)
    return edges[:n_edges]


def write_lightrag_graphml(path: Path, n_nodes: int, edges: list[tuple[int, int]], seed: int) -> None:
    """Write the graph as LightRAG 1.5 does (same keys, ``<SEP>``-merged fields), streaming to disk."""
    rng = random.Random(seed)
    name = [f"Entity {i:06d}" for i in range(n_nodes)]
    node_keys = ["entity_id", "entity_type", "description", "source_id", "file_path", "created_at"]
    edge_keys = ["weight", "description", "keywords", "source_id", "file_path", "created_at"]
    types = {"created_at": "long", "weight": "double"}
    with path.open("w", encoding="utf-8") as out:
        out.write(
            "<?xml version='1.0' encoding='utf-8'?>\n<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\" "
            'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
        )
        for i, k in enumerate(node_keys):
            out.write(f'  <key id="n{i}" for="node" attr.name="{k}" attr.type="{types.get(k, "string")}" />\n')
        for i, k in enumerate(edge_keys):
            out.write(f'  <key id="e{i}" for="edge" attr.name="{k}" attr.type="{types.get(k, "string")}" />\n')
        out.write('  <graph edgedefault="undirected">\n')
        for i in range(n_nodes):
            chunks = "<SEP>".join(f"chunk-{rng.randrange(50_000):08x}" for _ in range(rng.randint(1, 3)))
            desc = f"{name[i]} is a {TYPES[i % len(TYPES)]} & appears in the corpus.<SEP>It is mentioned again."
            values = [name[i], TYPES[i % len(TYPES)], desc, chunks, "corpus.txt", "1700000000"]
            out.write(f"    <node id={quoteattr(name[i])}>\n")
            for j, v in enumerate(values):
                out.write(f'      <data key="n{j}">{escape(v)}</data>\n')
            out.write("    </node>\n")
        for u, v in edges:
            kw = ", ".join(rng.sample(KEYWORDS, 2))
            values = [
                f"{rng.randint(1, 5)}.0", f"{name[u]} and {name[v]} are linked <by> the corpus.", kw,
                f"chunk-{rng.randrange(50_000):08x}", "corpus.txt", "1700000000",
            ]  # fmt: skip
            out.write(f"    <edge source={quoteattr(name[u])} target={quoteattr(name[v])}>\n")
            for j, val in enumerate(values):
                out.write(f'      <data key="e{j}">{escape(val)}</data>\n')
            out.write("    </edge>\n")
        out.write("  </graph>\n</graphml>\n")


def peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(n_nodes: int, n_edges: int, seed: int, sample: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="hopforge-bench-") as tmp:
        tmpdir = Path(tmp)
        graphml = tmpdir / "graph_chunk_entity_relation.graphml"
        t0 = time.perf_counter()
        edges = power_law_edges(n_nodes, n_edges, seed)
        write_lightrag_graphml(graphml, n_nodes, edges, seed)
        del edges  # only the file is measured from here on
        gen_s = time.perf_counter() - t0

        t0, c0 = time.perf_counter(), time.process_time()
        imported = read_lightrag_graphml(graphml, "bench")
        import_s, import_cpu_s = time.perf_counter() - t0, time.process_time() - c0

        wh = Warehouse(tmpdir / "bench.duckdb")
        t0, c0 = time.perf_counter(), time.process_time()
        snap = write_snapshot(
            wh, "bench", imported.entities, imported.relations, source="lightrag", build_run_id="bench",
            directed=imported.directed,
        )  # fmt: skip
        write_s, write_cpu_s = time.perf_counter() - t0, time.process_time() - c0

        t0 = time.perf_counter()
        again = write_snapshot(
            wh, "bench", imported.entities, imported.relations, source="lightrag", build_run_id="bench",
            directed=imported.directed,
        )  # fmt: skip
        rewrite_s = time.perf_counter() - t0
        rows = wh.scalar("SELECT count(*) FROM relations WHERE snapshot_id = ?", [snap.snapshot_id])

        del imported
        t0, c0 = time.perf_counter(), time.process_time()
        kg = load_graph(wh, "bench")
        load_s, load_cpu_s = time.perf_counter() - t0, time.process_time() - c0

        rng = random.Random(seed)
        names = rng.sample(kg.nodes(), min(sample, kg.n_nodes))
        t0 = time.perf_counter()
        kg.ball_size(names[0], 1, 1)  # the first traversal builds the sorted adjacency cache
        adjacency_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        sizes = [kg.ball_size(n, 3, 400) for n in names]
        ball_s = time.perf_counter() - t0
        eligible = sum(20 <= s <= 400 for s in sizes)
        wh.close()
        return {
            "nodes": snap.n_nodes,
            "edges": snap.n_edges,
            "graphml_mb": round(graphml.stat().st_size / 2**20, 1),
            "generate_s": round(gen_s, 2),
            "import_s": round(import_s, 2),
            "import_cpu_s": round(import_cpu_s, 2),
            "write_s": round(write_s, 2),
            "write_cpu_s": round(write_cpu_s, 2),
            "import_plus_write_s": round(import_s + write_s, 2),
            "rewrite_s": round(rewrite_s, 2),
            "rewrite_same_snapshot": again.snapshot_id == snap.snapshot_id and rows == snap.n_edges,
            "load_s": round(load_s, 2),
            "load_cpu_s": round(load_cpu_s, 2),
            "adjacency_build_s": round(adjacency_s, 2),
            "ball_scan_nodes": len(names),
            "ball_scan_s": round(ball_s, 3),
            "ball_scan_ms_per_node": round(1000 * ball_s / max(1, len(names)), 3),
            "ball_eligible_share": round(eligible / max(1, len(names)), 3),
            "peak_rss_mb": round(peak_rss_mb(), 1),
        }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--edges", type=int, default=500_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--sample", type=int, default=2000, help="nodes whose 3-hop ball size is measured")
    ap.add_argument("--json", type=Path, default=None, help="also write the JSON result to this file")
    args = ap.parse_args(argv)
    if args.nodes < 2 or args.edges < 1:
        ap.error("--nodes must be at least 2 and --edges at least 1")
    result = run(args.nodes, args.edges, args.seed, args.sample)
    print(
        f"graph load: {result['nodes']} nodes, {result['edges']} edges ({result['graphml_mb']} MB GraphML): "
        f"import {result['import_s']} s + write {result['write_s']} s = {result['import_plus_write_s']} s "
        f"(CPU {result['import_cpu_s']} + {result['write_cpu_s']} s); "
        f"rewrite {result['rewrite_s']} s; load {result['load_s']} s; "
        f"3-hop ball (cap 400) {result['ball_scan_ms_per_node']} ms/node; peak RSS {result['peak_rss_mb']} MB"
    )
    text = json.dumps(result, sort_keys=True)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
