"""Benchmark: the KG tools on a synthetic 50k-entity graph, in process and over HTTP.

Builds a seeded power-law graph (preferential attachment; labelled, directed relations with keywords and
descriptions; entity descriptions of about 100 characters), indexes it with ``HashingEmbedder(384)`` (the
dimension of all-MiniLM-L6-v2, so the matrix work is the real model's; the query embedding itself costs
~20 us instead of the model's ~3 ms) and measures:

- ``index``: building the entity matrix, loading it back from the on-disk cache, and top-k throughput of
  ``GraphIndex.top_k`` on pre-embedded query vectors (query embedding excluded), one query per call and in
  batches, plus ``match_many`` end to end (hashing query embedding included);
- ``server``: ``hopforge serve-tools --embedder hashing --workers N`` started as a user starts it, over a
  temporary warehouse holding the graph, loaded from a separate process (``bench/http_load.py``: keep-alive
  connections, a bounded number of requests) at each ``--concurrency``: requests/s, p50 and p99 per endpoint
  (the two Omne-R1 endpoints at every concurrency; the generic tools and ``/batch`` at the first), beside a
  bare ASGI endpoint returning a constant string on the same stack and worker count (``bench/bare_asgi.py``,
  the stack's ceiling) measured in the same run, and the resident memory of each worker (RSS, PSS, private).
  Client and server share the machine's cores; on a busy machine read the ratios to the bare endpoint.

Prints one line per measurement and one JSON object (also written to ``--json PATH``).

    python bench/bench_tools.py                          # 50k entities, 4000 requests per run, C=32 and 256
    python bench/bench_tools.py --entities 20000 --requests 1000 --concurrency 16 --workers 1
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # runnable as a plain script from any directory
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench.http_load import post, run_in_process  # noqa: E402
from bench.results_file import save_report  # noqa: E402

from schemas.graph import Entity, Relation  # noqa: E402
from tasks.graph.kg import KnowledgeGraph  # noqa: E402
from tasks.env.index import GraphIndex, HashingEmbedder  # noqa: E402

DOMAIN = "bench"
WORDS = (
    "river valley harvest engine network theory protein market empire treaty reactor algorithm signal "
    "glacier orchard sonata compiler vaccine frontier dynasty circuit lattice monsoon parliament enzyme "
    "telescope archive canal festival mineral satellite"
).split()
TYPES = ("person", "organization", "concept", "location", "event", "technology")
LABELS = ("part of", "located in", "founded by", "influenced", "produces", "member of", "studied at", "uses",
          "depends on", "named after", "succeeded", "borders")  # fmt: skip


def synthetic_graph(n_entities: int, n_relations: int, seed: int) -> KnowledgeGraph:
    """A reproducible power-law graph: each new relation attaches to an endpoint drawn from earlier endpoints
    (preferential attachment), so a few hubs have thousands of relations and most nodes a handful."""
    entities, relations = synthetic_records(n_entities, n_relations, seed)
    return KnowledgeGraph.from_records(DOMAIN, entities, relations, directed=True)


def synthetic_records(n_entities: int, n_relations: int, seed: int) -> tuple[list[Entity], list[Relation]]:
    """The records of ``synthetic_graph`` (for writing a snapshot without building the graph here)."""
    rng = random.Random(seed)
    names = [f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()} {i}" for i in range(n_entities)]
    entities = [
        Entity(
            domain=DOMAIN, name=n, type=rng.choice(TYPES),
            description=" ".join(rng.choice(WORDS) for _ in range(14)).capitalize() + ".",
        )  # fmt: skip
        for n in names
    ]
    ends: list[int] = list(range(min(n_entities, 64)))
    seen: set[tuple[int, int, str]] = set()
    relations: list[Relation] = []
    while len(relations) < n_relations:
        a = rng.randrange(n_entities) if rng.random() < 0.5 else rng.choice(ends)
        b = rng.choice(ends) if rng.random() < 0.8 else rng.randrange(n_entities)
        label = rng.choice(LABELS)
        if a == b or (a, b, label) in seen:
            continue
        seen.add((a, b, label))
        ends += (a, b)
        relations.append(
            Relation(
                domain=DOMAIN, source=names[a], target=names[b], relation=label, directed=True,
                keywords=[rng.choice(WORDS), rng.choice(WORDS)],
                description=f"{names[a]} {label} {names[b]} in the {rng.choice(WORDS)} record.",
            )  # fmt: skip
        )
    return entities, relations


def pct(sorted_values: list[float], p: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(p * len(sorted_values)))]


# -- in-process index ---------------------------------------------------------------------------------------------


def bench_index(graph: KnowledgeGraph, cache_dir: Path, n_queries: int, k: int, seed: int) -> dict[str, Any]:
    emb = HashingEmbedder(384)
    t = time.perf_counter()
    index = GraphIndex(graph, emb, cache_dir=cache_dir).warm()
    build_s = time.perf_counter() - t
    t = time.perf_counter()
    GraphIndex(graph, emb, cache_dir=cache_dir).warm()
    load_s = time.perf_counter() - t

    rng = np.random.default_rng(seed)
    rows = rng.integers(0, len(index), n_queries)
    # Queries near real entities (an entity vector plus noise), so top-k work is what a real query costs.
    vecs = index.embeddings[rows] + 0.5 * rng.standard_normal((n_queries, emb.dim)).astype(np.float32) / np.sqrt(emb.dim)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)

    single_n = min(n_queries, 500)
    t = time.perf_counter()
    for i in range(single_n):
        index.top_k(vecs[i : i + 1], k)
    single_qps = single_n / (time.perf_counter() - t)
    t = time.perf_counter()
    index.top_k(vecs, k)
    batched_qps = n_queries / (time.perf_counter() - t)

    names = [index.names[r] for r in rows]
    typos = [n.lower()[:-1] + "x" for n in names]  # no exact or normalised hit: always the embedding path
    t = time.perf_counter()
    index.match_many(typos, k)
    match_many_qps = n_queries / (time.perf_counter() - t)
    t = time.perf_counter()
    for q in typos[:single_n]:
        index.match(q, k)
    match_qps = single_n / (time.perf_counter() - t)
    return {
        "entities": len(index), "dim": emb.dim, "k": k, "queries": n_queries,
        "build_s": round(build_s, 3), "cache_load_s": round(load_s, 3),
        "topk_single_qps": round(single_qps, 1), "topk_batched_qps": round(batched_qps, 1),
        "match_single_qps": round(match_qps, 1), "match_many_qps": round(match_many_qps, 1),
    }  # fmt: skip


# -- the server ---------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hopforge_command() -> list[str]:
    """``hopforge``, the console script of this environment (as a user runs it), else the same entry point."""
    script = Path(sys.executable).with_name("hopforge")
    return [str(script)] if script.exists() else [sys.executable, "-c", "from flows.cli import main; main()"]


def start_process(cmd: list[str], env: dict[str, str], port: int, timeout_s: float = 300.0) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in its own process group and wait until ``GET /health`` answers on ``port``."""
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}:\n{log.read().decode()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.2)
    stop_process(proc)
    raise RuntimeError(f"{' '.join(cmd)} did not answer on port {port} in {timeout_s:.0f} s")


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def memory(pid: int) -> dict[str, float]:
    """Resident memory of one process in MiB: ``rss`` (every page it maps, shared ones included), ``pss``
    (shared pages divided among the processes sharing them) and ``private`` (its own pages only)."""
    kb: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
            key, _, rest = line.partition(":")
            kb[key] = int(rest.split()[0])
    except OSError:
        return {}
    return {
        "rss": round(kb.get("Rss", 0) / 1024, 1), "pss": round(kb.get("Pss", 0) / 1024, 1),
        "private": round((kb.get("Private_Clean", 0) + kb.get("Private_Dirty", 0)) / 1024, 1),
    }  # fmt: skip


def server_memory(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    """The serving processes' memory: the worker processes when the server forked some, else the server."""
    workers = _children(proc.pid)
    pids = workers or [proc.pid]
    return {"processes": len(pids), "per_process_mib": [memory(p) for p in pids],
            "supervisor_mib": memory(proc.pid) if workers else None}  # fmt: skip


def workloads(names: list[str], n: int, batch_size: int, seed: int) -> dict[str, list[bytes]]:
    """Pre-encoded requests per endpoint: node_info on real names, entity_matcher on misspelt names (always the
    embedding path), the generic tools, and /batch of mixed calls."""
    rng = random.Random(seed)
    pick = [rng.choice(names) for _ in range(n)]
    typo = [p.lower()[:-1] + "x" for p in pick]
    out = {
        "node_info": [post(f"/{DOMAIN}/get_node", {"node_name": q}) for q in pick],
        "entity_matcher": [post(f"/{DOMAIN}/get_precise_entity_names", {"node_name": q}) for q in typo],
        "relation_search": [
            post("/tools/relation_search", {"entity": q, "relation": rng.choice(LABELS), "graph_type": DOMAIN}) for q in pick
        ],
        "neighbor_search": [
            post("/tools/neighbor_search", {"entity": q, "relation": rng.choice(LABELS), "graph_type": DOMAIN}) for q in pick
        ],
        "search": [post("/tools/search", {"entity": q, "graph_type": DOMAIN}) for q in pick],
    }
    out[f"batch_{batch_size}"] = [
        post("/batch", {"calls": [
            {"name": "entity_matcher", "arguments": {"node_name": typo[(b * batch_size + j) % n], "graph_type": DOMAIN}}
            if j % 2 == 0 else
            {"name": "node_info", "arguments": {"node_name": pick[(b * batch_size + j) % n], "graph_type": DOMAIN}}
            for j in range(batch_size)
        ]})
        for b in range(max(1, n // batch_size))
    ]  # fmt: skip
    return out


def measure(port: int, warm_up: list[bytes], requests: list[bytes], concurrency: int) -> dict[str, Any]:
    """One timed run after a short warm-up (connections, lazy imports). The warm-up and each timed run draw
    their own names, so the server's result cache holds only what a run itself asked before."""
    run_in_process("127.0.0.1", port, warm_up[: max(1, len(warm_up) // 10)], concurrency)
    return run_in_process("127.0.0.1", port, requests, concurrency)


def _shown(path: Path) -> str:
    """``path`` as a result file records it: relative to the repository when inside it (no machine's own paths)."""
    root = Path(__file__).resolve().parent.parent
    return str(path.relative_to(root)) if path.is_relative_to(root) else path.name


def bench_server(
    graph: KnowledgeGraph, data_dir: Path, n: int, concurrencies: list[int], batch_size: int, workers: int,
    code_root: Path, seed: int,
) -> dict[str, Any]:
    """``hopforge serve-tools`` and the bare endpoint, each started as its own process with ``workers`` workers,
    loaded from another process; ratios are tool server / bare endpoint at the same concurrency."""
    from warehouse.graphs import write_snapshot
    from warehouse.db import Warehouse

    with Warehouse(data_dir / "warehouse.duckdb") as wh:
        write_snapshot(wh, DOMAIN, graph.entities(), graph.relations(), source="triples", build_run_id=None,
                       directed=graph.directed)  # fmt: skip
    base_env = {**os.environ, "HOPFORGE_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1"}
    env = {**base_env, "PYTHONPATH": os.pathsep.join([str(code_root), os.environ.get("PYTHONPATH", "")])}
    out: dict[str, Any] = {"workers": workers, "requests_per_run": n, "code_root": _shown(code_root)}

    port = free_port()
    # The bare endpoint always runs on this checkout's serving code: it is the ceiling of the stack.
    bare = start_process([sys.executable, str(ROOT / "bench" / "bare_asgi.py"), "--port", str(port),
                          "--workers", str(workers)], base_env, port)  # fmt: skip
    try:
        constant = [post(f"/{DOMAIN}/get_node", {"node_name": "x"})] * n
        out["bare"] = {f"c{c}": measure(port, constant, constant, c) for c in concurrencies}
    finally:
        stop_process(bare)

    port = free_port()
    cmd = [*hopforge_command(), "serve-tools", "--embedder", "hashing", "--port", str(port)]
    if workers > 1:
        cmd += ["--workers", str(workers)]
    t = time.perf_counter()
    server = start_process(cmd, env, port)
    out["startup_s"] = round(time.perf_counter() - t, 2)
    try:
        names = list(graph.nodes())
        warm = workloads(names, n, batch_size, seed + 1000)
        runs = {c: workloads(names, n, batch_size, seed + i) for i, c in enumerate(concurrencies)}
        for tool in ("node_info", "entity_matcher"):
            out[tool] = {f"c{c}": measure(port, warm[tool], runs[c][tool], c) for c in concurrencies}
        c0 = concurrencies[0]
        for tool in ("relation_search", "neighbor_search", "search", f"batch_{batch_size}"):
            out[tool] = {f"c{c0}": measure(port, warm[tool], runs[c0][tool], c0)}
        out["memory"] = server_memory(server)
        with contextlib.suppress(OSError, ValueError):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=5) as r:
                stats = json.loads(r.read())
            out["one_worker_stats"] = {k: stats.get(k) for k in ("entity_matcher_batches", "result_cache")}
    finally:
        stop_process(server)
    for tool in ("node_info", "entity_matcher"):
        for c in concurrencies:
            r, b = out[tool][f"c{c}"], out["bare"][f"c{c}"]
            r["ratio_to_bare"] = round(r["rps"] / b["rps"], 3) if b["rps"] else None
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entities", type=int, default=50_000)
    ap.add_argument("--relations", type=int, default=150_000)
    ap.add_argument("--queries", type=int, default=4096, help="top-k queries for the in-process index benchmark")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--requests", type=int, default=4000, help="HTTP requests per endpoint and concurrency")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[32, 256])
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="server worker processes")
    ap.add_argument("--code-root", type=Path, default=ROOT,
                    help="serve another checkout's code (before/after comparisons); default this one")
    ap.add_argument("--skip-index", action="store_true")
    ap.add_argument("--skip-server", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    t = time.perf_counter()
    graph = synthetic_graph(args.entities, args.relations, args.seed)
    report: dict[str, Any] = {
        "cpus": os.cpu_count(), "load_avg_before": os.getloadavg()[0],
        "graph": {"entities": graph.n_nodes, "relations": graph.n_edges, "build_s": round(time.perf_counter() - t, 2),
                  "max_degree": max(graph.degree(n) for n in graph.nodes())},
    }  # fmt: skip
    print(f"graph: {graph.n_nodes} entities, {graph.n_edges} relations, max degree {report['graph']['max_degree']}")
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_index:
            idx = bench_index(graph, Path(tmp) / "index", args.queries, args.k, args.seed)
            report["index"] = idx
            print(
                f"index: build {idx['build_s']} s, cache load {idx['cache_load_s']} s; top-{args.k} over "
                f"{idx['entities']} x {idx['dim']}: {idx['topk_single_qps']} q/s one at a time, "
                f"{idx['topk_batched_qps']} q/s batched (query embedding excluded); match(): {idx['match_single_qps']} "
                f"q/s, match_many(): {idx['match_many_qps']} q/s (hashing query embedding included)"
            )
        if not args.skip_server:
            server = bench_server(graph, Path(tmp) / "data", args.requests, args.concurrency, args.batch_size,
                                  args.workers, args.code_root.resolve(), args.seed)  # fmt: skip
            report["server"] = {**server, "load_avg_after": os.getloadavg()[0]}
            if "index" in report:  # entity_matcher's other ceiling: the same searches in process, no HTTP
                for r in server["entity_matcher"].values():
                    r["ratio_to_match_many"] = round(r["rps"] / report["index"]["match_many_qps"], 3)
            print(f"server: `hopforge serve-tools --workers {args.workers}` up in {server['startup_s']} s")
            for label, runs in server.items():
                if not isinstance(runs, dict) or label in ("memory", "one_worker_stats"):
                    continue
                for r in runs.values():
                    ratio = f", {r['ratio_to_bare']} of bare" if "ratio_to_bare" in r else ""
                    if "ratio_to_match_many" in r:
                        ratio += f", {r['ratio_to_match_many']} of in-process match_many"
                    print(f"  {label:<16} C={r['concurrency']:<4} {r['rps']:>8} req/s  p50 {r['p50_ms']:>7} ms  "
                          f"p99 {r['p99_ms']:>8} ms{ratio}  ({r['answered']}/{r['requests']} answered, "
                          f"{r['non_200']} non-200, {r['dropped_connections']} dropped)")  # fmt: skip
            mem = server["memory"]
            print(f"  memory: {mem['processes']} serving process(es), MiB each (rss/pss/private): "
                  + "; ".join(f"{m.get('rss')}/{m.get('pss')}/{m.get('private')}" for m in mem["per_process_mib"]))
    print(json.dumps(report))
    save_report(report, args.json)


if __name__ == "__main__":
    main()
