"""Benchmark: cost against graph size (1k, 10k, 100k, 1M nodes) for import, seed scan, candidate walks and
index build, with the growth class of each.

Each size is a seeded sparse power-law graph (a preferential-attachment tree, so a few hubs, plus
``--extra * n`` random relations; every node described in about 60 characters, every relation labelled),
written as a triples JSONL file and measured in a fresh child process, one stage after the other:

- ``import``: ``tasks.graph.importers.read_triples`` (file -> checked records),
- ``build``: ``KnowledgeGraph`` from those records (what every flow does after loading a snapshot),
- ``seed_scan``: ``tasks.qa.seeds.eligible_seeds`` over every node (depth 3, balls of 20-400 nodes),
- ``adjacency``: the graph's name adjacency lists, built on first use (by the walks, the tools, context rendering;
  the seed scan reads integer arrays from the graph instead), measured apart so ``walks`` is the cost per seed,
- ``walks``: ``tasks.qa.candidates.sample_candidate_paths`` (4-node paths, 8 per seed) from ``--walk-seeds``
  eligible seeds; the cost per seed is what matters, so it is reported per 100 seeds. The generated labels name
  many things in the world, so the shipped lexicon would refuse nearly every hop: the walks read the profiles of
  ``testing.permissive_profiles`` (every label one thing each way; built before the clock starts, ``profiles_s``),
  and the run stops when they find fewer than ``WALK_FLOOR`` paths a walked seed (the walks measured nothing),
- ``index``: ``GraphIndex.warm`` with ``HashingEmbedder(384)`` (every entity text embedded, the matrix
  written to the on-disk cache), then ``index_load``: the same index opened again from that cache.

The growth class is the least-squares slope of log(time) against log(nodes) over the sizes from 10k up (the
smallest sizes are dominated by fixed costs): ~0 is constant, ~1 linear, ~2 quadratic. Peak RSS is the child
process's maximum. The target for ``seed_scan`` at 1M nodes is < 30 s.

    python bench/bench_scale.py                          # 1k, 10k, 100k, 1M
    python bench/bench_scale.py --sizes 1000 10000 100000
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # runnable as a plain script from any directory
    sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from bench.results_file import save_report  # noqa: E402

STAGES = ("import", "build", "seed_scan", "adjacency", "walks", "index", "index_load")
WALK_FLOOR = 1.0  # paths a walked seed, at least: below it the walks were refused rather than timed
WORDS = ("river valley harvest engine network theory protein market empire treaty reactor algorithm signal "
         "garden bridge castle orbit glacier canyon lantern meadow quartz falcon harbor").split()
LABELS = ("part of", "located in", "founded by", "influenced", "produces", "member of", "uses", "borders")


def write_triples(path: Path, n: int, extra: float, seed: int, *, readable: bool = False) -> int:
    """The graph as triples JSONL (entity rows, then relation rows); returns the number of relations. Entities are
    ``n0000042`` with a string of words for description, or with ``readable`` "Harvest Engine 42" described by a
    sentence (what the question writer and the prompts need)."""
    rng = random.Random(seed)
    ends = [0]
    pairs: set[tuple[int, int]] = set()
    for v in range(1, n):
        u = rng.choice(ends)  # preferential attachment: endpoints are drawn in proportion to their degree
        pairs.add((u, v))
        ends += (u, v)
    for _ in range(int(extra * n)):
        a, b = rng.randrange(n), rng.randrange(n)
        if a != b and (b, a) not in pairs:
            pairs.add((a, b))
    if readable:
        names = [f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()} {v}" for v in range(n)]
    else:
        names = [f"n{v:07d}" for v in range(n)]
    with path.open("wb") as fh:
        for v in range(n):
            desc = " ".join(rng.choice(WORDS) for _ in range(8))
            if readable:
                desc = f"A {desc}."
            fh.write(orjson.dumps({"entity": names[v], "type": "concept", "description": desc}) + b"\n")
        for a, b in sorted(pairs):
            fh.write(orjson.dumps({"head": names[a], "relation": rng.choice(LABELS), "tail": names[b]}) + b"\n")
    return len(pairs)


def measure_size(path: str, walk_seeds: int, seed: int) -> dict[str, Any]:
    """Every stage on one graph file (run in a child process; see the module docstring)."""
    from testing.permissive_profiles import permissive_book
    from tasks.env.index import GraphIndex, HashingEmbedder
    from tasks.graph.importers import read_triples
    from tasks.qa.candidates import sample_candidate_paths
    from tasks.qa.seeds import eligible_seeds

    out: dict[str, Any] = {}
    t = time.perf_counter()
    imported = read_triples(path, "scale")
    out["import"] = time.perf_counter() - t
    t = time.perf_counter()
    kg = imported.to_graph()
    out["build"] = time.perf_counter() - t
    del imported
    t = time.perf_counter()
    seeds = eligible_seeds(kg)
    out["seed_scan"] = time.perf_counter() - t
    out["eligible"] = len(seeds)
    picks = random.Random(seed).sample([s for s, _ in seeds], min(walk_seeds, len(seeds)))
    t = time.perf_counter()
    if kg.n_nodes:
        kg.neighbor_names(kg.nodes()[0])  # the name adjacency lists, built once on first use
    out["adjacency"] = time.perf_counter() - t
    t = time.perf_counter()
    book = permissive_book(kg)
    out["profiles_s"] = time.perf_counter() - t
    t = time.perf_counter()
    paths = sum(len(sample_candidate_paths(kg, s, 4, count=8, seed=seed, book=book)) for s in picks)
    out["walks"] = (time.perf_counter() - t) / max(1, len(picks)) * 100  # per 100 seeds
    out["walk_seeds"] = len(picks)
    out["walk_paths"] = paths
    with tempfile.TemporaryDirectory() as cache:
        t = time.perf_counter()
        GraphIndex(kg, HashingEmbedder(384), cache_dir=cache).warm()
        out["index"] = time.perf_counter() - t
        t = time.perf_counter()
        GraphIndex(kg, HashingEmbedder(384), cache_dir=cache).warm()
        out["index_load"] = time.perf_counter() - t
    out["nodes"] = kg.n_nodes
    out["relations"] = kg.n_edges
    out["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


def _child(path: str, walk_seeds: int, seed: int, queue: Any) -> None:
    queue.put(measure_size(path, walk_seeds, seed))


def walks_too_few(row: dict[str, Any]) -> str | None:
    """Why a size's walk timing measures nothing (fewer than ``WALK_FLOOR`` paths a walked seed), or None."""
    seeds, paths = row["walk_seeds"], row["walk_paths"]
    if seeds and paths < WALK_FLOOR * seeds:
        return (f"walks at {row['nodes']} nodes found {paths} paths from {seeds} seeds (floor {WALK_FLOOR:g} a seed): "
                "the profiles refuse the hops, so walks_s times refusals, not walks")
    return None


def growth(sizes: list[int], times: list[float]) -> tuple[float | None, str]:
    """Least-squares slope of log(time) on log(size) and its name."""
    pts = [(math.log(n), math.log(t)) for n, t in zip(sizes, times) if n >= 10_000 and t > 0]
    if len(pts) < 2:
        return None, "n/a (needs two sizes >= 10k)"
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    b = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    if b < 0.3:
        name = "O(1)"
    elif b < 1.25:
        name = "O(n)" if b > 0.75 else "sublinear"
    elif b < 1.75:
        name = "O(n^1.5)"
    else:
        name = "O(n^2) or worse"
    return round(b, 2), name


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    ap.add_argument("--extra", type=float, default=0.5, help="random relations per node beyond the tree")
    ap.add_argument("--walk-seeds", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    report: dict[str, Any] = {"cpus": os.cpu_count(), "load_avg_before": os.getloadavg()[0], "sizes": []}
    print(f"{'nodes':>9} {'relations':>10} " + " ".join(f"{s + '_s':>12}" for s in STAGES) + f" {'eligible':>9} {'peak_MiB':>9}")
    ctx = mp.get_context("fork")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            path = Path(tmp) / f"graph_{n}.jsonl"
            t = time.perf_counter()
            write_triples(path, n, args.extra, args.seed)
            generate_s = time.perf_counter() - t
            queue = ctx.Queue()
            proc = ctx.Process(target=_child, args=(str(path), args.walk_seeds, args.seed, queue))
            proc.start()
            row = queue.get()
            proc.join()
            path.unlink()
            row["generate_s"] = generate_s
            report["sizes"].append(row)
            print(f"{row['nodes']:>9} {row['relations']:>10} " + " ".join(f"{row[s]:>12.3f}" for s in STAGES)
                  + f" {row['eligible']:>9} {row['peak_rss_mib']:>9}", flush=True)  # fmt: skip
            why = walks_too_few(row)
            if why:
                raise SystemExit(why)
    sizes = [r["nodes"] for r in report["sizes"]]
    report["growth"] = {}
    for stage in STAGES:
        slope, name = growth(sizes, [r[stage] for r in report["sizes"]])
        report["growth"][stage] = {"slope": slope, "class": name}
    print("growth (slope of log time on log nodes, sizes >= 10k): " + ", ".join(
        f"{s} {g['slope']} {g['class']}" for s, g in report["growth"].items()))  # fmt: skip
    print("walks_s is per 100 seeds (the cost per seed should not grow with the graph); paths found: " + ", ".join(
        f"{r['walk_paths']} from {r['walk_seeds']} seeds at {r['nodes']}" for r in report["sizes"]))  # fmt: skip
    biggest = max(report["sizes"], key=lambda r: r["nodes"])
    if biggest["nodes"] >= 1_000_000:
        verdict = "met" if biggest["seed_scan"] < 30 else "missed"
        print(f"seed scan of {biggest['nodes']} nodes: {biggest['seed_scan']:.1f} s (target < 30 s: {verdict})")
    report["load_avg_after"] = os.getloadavg()[0]
    print(json.dumps(report))
    save_report(report, args.json)


if __name__ == "__main__":
    main()
