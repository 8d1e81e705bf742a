"""Benchmark: the KG tools on a synthetic 50k-entity graph, in process and over HTTP.

Builds a seeded power-law graph (preferential attachment; labelled, directed relations with keywords and
descriptions; entity descriptions of about 100 characters), indexes it with ``HashingEmbedder(384)`` (the
dimension of all-MiniLM-L6-v2, so the matrix work is the real model's; the query embedding itself costs
~20 us instead of the model's ~3 ms) and measures:

- ``index``: building the entity matrix, loading it back from the on-disk cache, and top-k throughput of
  ``GraphIndex.top_k`` on pre-embedded query vectors (query embedding excluded), one query per call and in
  batches, plus ``match_many`` end to end (hashing query embedding included);
- ``server``: the FastAPI tool server (``flows.tool_server.serve``) in a child process on loopback, driven by an
  httpx async load generator with bounded concurrency and a bounded number of requests per tool: requests/s,
  p50 and p99 latency for each endpoint (the two Omne-R1 endpoints, the generic endpoint for the Graph-RFT
  and KG-Hopper tools, and ``/batch``). Client and server share the machine's cores.

Prints one line per measurement and one JSON object (also written to ``--json PATH``).

    python bench/bench_tools.py                                  # 50k entities, 2000 requests per tool, C=32
    python bench/bench_tools.py --entities 20000 --requests 500 --concurrency 16
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import random
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # runnable as a plain script from any directory
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import numpy as np  # noqa: E402

from schemas.graph import Entity, Relation  # noqa: E402
from tasks.graph.kg import KnowledgeGraph  # noqa: E402
from tasks.env.index import GraphIndex, HashingEmbedder  # noqa: E402
from tasks.env.tools import ToolEnvironment  # noqa: E402

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
    return KnowledgeGraph.from_records(DOMAIN, entities, relations, directed=True)


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


def serve_child(env: ToolEnvironment, port: int, coalesce: bool, blas_threads: int | None) -> None:
    from flows.tool_server import serve

    serve(env, "127.0.0.1", port, log_level="warning", access_log=False, blas_threads=blas_threads,
          batch_entity_matcher=coalesce)  # fmt: skip


async def wait_ready(base: str, timeout_s: float = 60.0) -> None:
    deadline = time.perf_counter() + timeout_s
    async with httpx.AsyncClient(base_url=base, timeout=2.0) as c:
        while time.perf_counter() < deadline:
            try:
                if (await c.get("/health")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"the tool server at {base} did not come up in {timeout_s:.0f} s")


async def load(client: httpx.AsyncClient, requests: list[tuple[str, Any]], concurrency: int) -> dict[str, Any]:
    """Send every request with at most ``concurrency`` in flight; latency per request, wall time overall."""
    sem = asyncio.Semaphore(concurrency)
    latencies: list[float] = []
    errors = 0
    failures: list[str] = []

    async def one(path: str, body: Any) -> None:
        nonlocal errors
        async with sem:
            t = time.perf_counter()
            try:
                r = await client.post(path, json=body)
            except httpx.TransportError as exc:  # counted and reported, not fatal: one dropped connection
                failures.append(f"{type(exc).__name__}: {exc}")
                return
            latencies.append(time.perf_counter() - t)
            if r.status_code != 200:
                errors += 1

    t = time.perf_counter()
    await asyncio.gather(*(one(p, b) for p, b in requests))
    wall = time.perf_counter() - t
    lat = sorted(latencies) or [float("nan")]
    return {
        "requests": len(requests), "http_errors": errors, "transport_errors": len(failures),
        "first_transport_error": failures[0] if failures else None, "rps": round(len(latencies) / wall, 1),
        "p50_ms": round(pct(lat, 0.5) * 1000, 2), "p99_ms": round(pct(lat, 0.99) * 1000, 2),
    }  # fmt: skip


async def drive(base: str, names: list[str], n: int, concurrency: int, batch_size: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    pick = [rng.choice(names) for _ in range(n)]
    typo = [p.lower()[:-1] + "x" for p in pick]
    workloads: dict[str, list[tuple[str, Any]]] = {
        "entity_matcher (POST /{g}/get_precise_entity_names)": [
            (f"/{DOMAIN}/get_precise_entity_names", {"node_name": q}) for q in typo
        ],
        "node_info (POST /{g}/get_node)": [(f"/{DOMAIN}/get_node", {"node_name": q}) for q in pick],
        "relation_search (POST /tools/relation_search)": [
            ("/tools/relation_search", {"entity": q, "relation": rng.choice(LABELS), "graph_type": DOMAIN}) for q in pick
        ],
        "neighbor_search (POST /tools/neighbor_search)": [
            ("/tools/neighbor_search", {"entity": q, "relation": rng.choice(LABELS), "graph_type": DOMAIN}) for q in pick
        ],
        "search (POST /tools/search)": [("/tools/search", {"entity": q, "graph_type": DOMAIN}) for q in pick],
    }
    n_batches = max(1, n // batch_size)
    workloads[f"batch of {batch_size} mixed calls (POST /batch)"] = [
        ("/batch", {"calls": [
            {"name": "entity_matcher", "arguments": {"node_name": typo[(b * batch_size + j) % n], "graph_type": DOMAIN}}
            if j % 2 == 0 else
            {"name": "node_info", "arguments": {"node_name": pick[(b * batch_size + j) % n], "graph_type": DOMAIN}}
            for j in range(batch_size)
        ]})
        for b in range(n_batches)
    ]  # fmt: skip
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    out: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60.0) as client:
        for label, reqs in workloads.items():
            await load(client, reqs[: max(1, len(reqs) // 20)], concurrency)  # warm-up: connections, caches
            out[label] = await load(client, reqs, concurrency)
        try:
            stats = (await client.get("/stats")).json()
            out["server /stats"] = {**stats["tools"], "entity_matcher_batches": stats["entity_matcher_batches"]}
        except httpx.TransportError as exc:
            out["server /stats"] = f"unavailable: {type(exc).__name__}"
    return out


def bench_server(
    env: ToolEnvironment, n: int, concurrency: int, batch_size: int, coalesce: bool, blas_threads: int | None, seed: int
) -> dict[str, Any]:
    port = free_port()
    # fork: the child inherits the built graph and the loaded matrix instead of rebuilding them.
    proc = mp.get_context("fork").Process(target=serve_child, args=(env, port, coalesce, blas_threads), daemon=True)
    proc.start()
    try:
        base = f"http://127.0.0.1:{port}"
        asyncio.run(wait_ready(base))
        names = list(next(iter(env.indexes.values())).names)
        result = asyncio.run(drive(base, names, n, concurrency, batch_size, seed))
        result["server_alive_after"] = proc.is_alive()
        return result
    finally:
        proc.terminate()
        proc.join(10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entities", type=int, default=50_000)
    ap.add_argument("--relations", type=int, default=150_000)
    ap.add_argument("--queries", type=int, default=4096, help="top-k queries for the in-process index benchmark")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--requests", type=int, default=2000, help="HTTP requests per tool")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--no-coalesce", action="store_true", help="run entity_matcher requests one by one")
    ap.add_argument("--blas-threads", type=int, default=None, help="cap the server's BLAS threads (threadpoolctl)")
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
        idx = bench_index(graph, Path(tmp), args.queries, args.k, args.seed)
        report["index"] = idx
        print(
            f"index: build {idx['build_s']} s, cache load {idx['cache_load_s']} s; top-{args.k} over "
            f"{idx['entities']} x {idx['dim']}: {idx['topk_single_qps']} q/s one at a time, "
            f"{idx['topk_batched_qps']} q/s batched (query embedding excluded); match(): {idx['match_single_qps']} q/s, "
            f"match_many(): {idx['match_many_qps']} q/s (hashing query embedding included)"
        )
        if not args.skip_server:
            env = ToolEnvironment.from_graphs([graph], HashingEmbedder(384), cache_dir=tmp)  # warm: matrix from cache
            server = bench_server(
                env, args.requests, args.concurrency, args.batch_size, not args.no_coalesce, args.blas_threads, args.seed
            )
            report["server"] = {
                "concurrency": args.concurrency, "coalesce_entity_matcher": not args.no_coalesce,
                "blas_threads": args.blas_threads, "load_avg_after": os.getloadavg()[0], **server,
            }  # fmt: skip
            for label, r in server.items():
                if isinstance(r, dict) and "rps" in r:
                    print(f"server {label}: {r['rps']} req/s, p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms "
                          f"({r['requests']} requests, C={args.concurrency}, {r['http_errors']} non-200, "
                          f"{r['transport_errors']} dropped)")  # fmt: skip
    print(json.dumps(report))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
