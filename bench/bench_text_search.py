"""Benchmark: the text-search tool (``web_search``) on 100k synthetic chunks, in process and over HTTP.

The corpus is ``testing/text_corpus.py``'s (sentences of the demo corpus with words swapped by frequency, one
generated fact per chunk), written to a temporary warehouse as the ``bench`` domain's chunks beside a small graph
of the facts' entities. It measures:

- ``index``: building the BM25 half and the embedding half (``HashingEmbedder(384)``: the dimension of
  all-MiniLM-L6-v2, so the matrix work is the real model's, while the query embedding costs ~20 us instead of a
  model's few ms), loading both back from the on-disk cache, the memory they hold, and single-thread latency
  of ``TextIndex.search`` (k=3) on distinct fact queries ("<head entity> <relation>");
- ``servers``: ``hopforge serve-tools --embedder hashing --workers N`` for each N of ``--workers`` (default: 1,
  whose one process coalesces every concurrent search, and the core count), started as a user starts it, loaded from a
  separate process (``bench/http_load.py``) with ``POST /tools/web_search`` at each ``--concurrency``: requests/s,
  p50 and p99, every request a query no earlier request asked (so the server's result cache never answers),
  beside a bare ASGI endpoint on the same stack (``bench/bare_asgi.py``, the stack's ceiling), and the serving
  processes' memory. Client and server share the machine's cores.

Prints one line per measurement and one JSON object (also written to ``--json PATH``); ``target`` says whether
the best p99 at C=32 is under 20 ms. The figures depend on the cores and on what else runs: the JSON records the
core count and the load average before and after.

    python bench/bench_text_search.py                                  # 100k chunks, C=32
    python bench/bench_text_search.py --chunks 20000 --requests 500    # a quick look
"""

from __future__ import annotations

import argparse
import json
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

from bench.bench_tools import free_port, hopforge_command, memory, pct, server_memory, start_process, stop_process  # noqa: E402
from bench.results_file import save_report  # noqa: E402
from bench.http_load import post, run_in_process  # noqa: E402
from testing.text_corpus import Fact, synthetic_chunks  # noqa: E402
from tasks.env.index import HashingEmbedder  # noqa: E402
from tasks.env.text_search import ANN_DEPTH_EXPANSION, TextChunk, TextIndex  # noqa: E402

DOMAIN = "bench"
TARGET_P99_MS = 20.0


def write_warehouse(data_dir: Path, chunks: list[TextChunk], facts: list[Fact], graph_facts: int) -> None:
    """The chunks as the ``bench`` domain's corpus (one document per chunk) and a graph of the first
    ``graph_facts`` facts, so ``serve-tools`` loads a graph and offers ``web_search`` over its domain's chunks."""
    from schemas.corpus import Chunk, Document, content_hash
    from schemas.graph import Entity, Relation
    from warehouse.db import Warehouse
    from warehouse.graphs import write_snapshot

    docs = [Document(doc_id=f"doc-{c.chunk_id}", domain=DOMAIN, source="synthetic", title=c.title, text=c.text,
                     content_hash=content_hash(c.text), n_tokens=len(c.text.split())) for c in chunks]  # fmt: skip
    rows = [Chunk(chunk_id=c.chunk_id, doc_id=f"doc-{c.chunk_id}", domain=DOMAIN, chunk_index=0, text=c.text,
                  n_tokens=len(c.text.split())) for c in chunks]  # fmt: skip
    names = sorted({n for f in facts[:graph_facts] for n in (f.head, f.tail)})
    entities = [Entity(domain=DOMAIN, name=n, type="person", description=f"{n}, named in the bench corpus.") for n in names]
    relations = {(f.head, f.tail): Relation(domain=DOMAIN, source=f.head, target=f.tail, relation=f.relation,
                                            directed=True, description=f"{f.head} {f.relation} {f.tail}.")
                 for f in facts[:graph_facts] if f.head != f.tail}  # fmt: skip
    with Warehouse(data_dir / "warehouse.duckdb") as wh:
        wh.write_batch("documents", docs)
        wh.write_batch("chunks", rows)
        write_snapshot(wh, DOMAIN, entities, list(relations.values()), source="triples", build_run_id=None,
                       directed=True)  # fmt: skip


def stored_chunks(data_dir: Path) -> list[TextChunk]:
    """The chunks as the tool server reads them (``warehouse.text_chunks.domain_chunks``), so the index built here
    is the one the server finds in the cache."""
    from warehouse.db import Warehouse
    from warehouse.text_chunks import domain_chunks

    with Warehouse(data_dir / "warehouse.duckdb", read_only=True) as wh:
        return domain_chunks(wh, DOMAIN)


def index_bytes(index: TextIndex) -> dict[str, float]:
    """MiB held by each half: the BM25 sparse matrix (bm25s's arrays) and the float32 chunk matrix."""
    bm25 = index._lexical()
    sparse = sum(getattr(a, "nbytes", 0) for a in bm25.scores.values()) if isinstance(bm25.scores, dict) else 0
    matrix = index._dense()
    return {"bm25_mib": round(sparse / 2**20, 1), "matrix_mib": round(matrix.nbytes / 2**20, 1) if matrix is not None else 0.0}


def latencies(fn: Any, items: list[Any]) -> dict[str, float]:
    times = []
    for item in items:
        started = time.perf_counter()
        fn(item)
        times.append(time.perf_counter() - started)
    times.sort()
    return {"n": len(times), "p50_ms": round(pct(times, 0.5) * 1000, 3), "p99_ms": round(pct(times, 0.99) * 1000, 3),
            "qps": round(len(times) / sum(times), 1)}  # fmt: skip


def bench_index(chunks: list[TextChunk], cache_dir: Path, queries: list[str]) -> dict[str, Any]:
    emb = HashingEmbedder(384)
    rss0 = memory(os.getpid()).get("rss", 0.0)
    index = TextIndex(chunks, emb, name=DOMAIN, cache_dir=cache_dir)
    started = time.perf_counter()
    index._lexical()
    bm25_s = time.perf_counter() - started
    started = time.perf_counter()
    index._dense()
    dense_s = time.perf_counter() - started
    started = time.perf_counter()
    index._graph()  # None below the size where the meaning half takes its candidates from the HNSW graph
    graph_s = time.perf_counter() - started
    rss1 = memory(os.getpid()).get("rss", 0.0)
    started = time.perf_counter()
    TextIndex(chunks, emb, name=DOMAIN, cache_dir=cache_dir).warm()
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    precision = index.prepare_search()
    prepare_s = time.perf_counter() - started
    index.search(queries[0], 3)
    half = len(queries) // 2
    return {
        "chunks": len(chunks), "dim": emb.dim, "bm25_build_s": round(bm25_s, 2), "embed_build_s": round(dense_s, 2),
        "graph_build_s": round(graph_s, 2),
        "cache_load_s": round(load_s, 2), "candidate_product": precision, "prepare_search_s": round(prepare_s, 2),
        "rss_growth_mib": round(rss1 - rss0, 1), **index_bytes(index),
        "search_k3": latencies(lambda q: index.search(q, 3), queries[:half]),
        "lexical_only": latencies(index.lexical_scores, queries[half:]),
        "max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }  # fmt: skip


def bench_recall(chunks: list[TextChunk], cache_dir: Path, queries: list[str], targets: list[str],
                 depths: list[int]) -> dict[str, Any]:
    """The HNSW graph against the exact ranking, on the same queries (``facts``): the meaning half's recall of the
    exact top ``depth`` and top 10, the share of fused top-3 lists that are identical, and the share of queries
    whose fact chunk (``targets``, chunk ids) is in the fused top 3, for the exact index and for each search depth
    of the graph. The exact index shares the cache (its matrix), so both rank the same vectors."""
    emb = HashingEmbedder(384)
    exact = TextIndex(chunks, emb, name=DOMAIN, cache_dir=cache_dir, dense="exact")
    started = time.perf_counter()
    want = exact.dense_top(queries)
    exact_s = time.perf_counter() - started
    assert want is not None
    fused = exact.search_many(queries, 3)

    def fact_at_3(results: list[list[Any]]) -> float:
        return round(sum(any(h.chunk.chunk_id == t for h in r) for r, t in zip(results, targets)) / len(targets), 3)

    out: dict[str, Any] = {"queries": len(queries), "depth": exact.depth, "exact": {"fact_at_3": fact_at_3(fused),
                           "dense_ms_per_query_in_blocks": round(exact_s / len(queries) * 1000, 3)}, "graph": {}}  # fmt: skip
    for search_depth in depths:
        index = TextIndex(chunks, emb, name=DOMAIN, cache_dir=cache_dir, dense="hnsw", nprobe=search_depth)
        started = time.perf_counter()
        index.warm()
        warm_s = time.perf_counter() - started
        started = time.perf_counter()
        got = [index.dense_top([q])[0] for q in queries]
        dense_s = time.perf_counter() - started
        found = index.search_many(queries, 3)
        depth = exact.depth
        out["graph"][str(search_depth)] = {
            "search_depth": index.expansion, "build_or_load_s": round(warm_s, 2),
            "dense_ms_per_query": round(dense_s / len(queries) * 1000, 3),
            "recall_at_depth": round(sum(len(set(g[:depth]) & set(w[:depth])) for g, w in zip(got, want)) / (depth * len(queries)), 3),
            "recall_at_10": round(sum(len(set(g[:10]) & set(w[:10])) for g, w in zip(got, want)) / (10 * len(queries)), 3),
            "fused_top3_identical": round(sum([h.chunk.chunk_id for h in a] == [h.chunk.chunk_id for h in b]
                                              for a, b in zip(found, fused)) / len(queries), 3),
            "fact_at_3": fact_at_3(found),
        }  # fmt: skip
    return out


def bench_server(data_dir: Path, queries: list[str], n: int, concurrencies: list[int], workers: int) -> dict[str, Any]:
    """``hopforge serve-tools`` and the bare endpoint, each started as its own process with ``workers`` workers."""
    env = {**os.environ, "HOPFORGE_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}  # fmt: skip
    out: dict[str, Any] = {"workers": workers, "requests_per_run": n}
    port = free_port()
    bare = start_process([sys.executable, str(ROOT / "bench" / "bare_asgi.py"), "--port", str(port),
                          "--workers", str(workers)], env, port)  # fmt: skip
    try:
        constant = [post(f"/{DOMAIN}/get_node", {"node_name": "x"})] * n
        out["bare"] = {f"c{c}": run_in_process("127.0.0.1", port, constant, c) for c in concurrencies}
    finally:
        stop_process(bare)
    port = free_port()
    cmd = [*hopforge_command(), "serve-tools", "--embedder", "hashing", "--port", str(port), "--domain", DOMAIN]
    if workers > 1:
        cmd += ["--workers", str(workers)]
    started = time.perf_counter()
    server = start_process(cmd, env, port)
    out["startup_s"] = round(time.perf_counter() - started, 2)

    def requests(lo: int, hi: int) -> list[bytes]:
        return [post("/tools/web_search", {"query": q, "graph_type": DOMAIN}) for q in queries[lo:hi]]

    try:
        warm = max(2 * max(concurrencies), n // 10)  # each worker builds its candidate product on first use
        run_in_process("127.0.0.1", port, requests(0, warm), max(concurrencies))
        out["web_search"] = {}
        at = warm
        for c in concurrencies:
            out["web_search"][f"c{c}"] = run_in_process("127.0.0.1", port, requests(at, at + n), c)
            at += n
        out["memory"] = server_memory(server)
    finally:
        stop_process(server)
    for c in concurrencies:
        r, b = out["web_search"][f"c{c}"], out["bare"][f"c{c}"]
        r["ratio_to_bare"] = round(r["rps"] / b["rps"], 3) if b["rps"] else None
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--requests", type=int, default=3000, help="HTTP requests per concurrency")
    ap.add_argument("--queries", type=int, default=1000, help="in-process queries (half fused, half lexical only)")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[32])
    ap.add_argument("--workers", type=int, nargs="+", default=sorted({1, os.cpu_count() or 1}),
                    help="server worker processes, one server per value (one worker coalesces the most searches)")
    ap.add_argument("--graph-facts", type=int, default=2000, help="facts of the small graph the server loads")
    ap.add_argument("--skip-server", action="store_true")
    ap.add_argument("--recall-queries", type=int, default=500, help="fact queries ranked exactly and by the graph")
    ap.add_argument("--search-depths", type=int, nargs="+", default=sorted({200, 400, ANN_DEPTH_EXPANSION * 50, 1600}),
                    help="the graph's search depths in the recall measurement (the default one included)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    report: dict[str, Any] = {"cpus": os.cpu_count(), "load_avg_before": [round(x, 2) for x in os.getloadavg()],
                              "target_p99_ms_at_c32": TARGET_P99_MS}  # fmt: skip
    started = time.perf_counter()
    chunks, facts = synthetic_chunks(args.chunks, args.seed)
    report["corpus"] = {"chunks": len(chunks), "words_per_chunk": round(sum(len(c.text.split()) for c in chunks) / len(chunks), 1),
                        "synthesis_s": round(time.perf_counter() - started, 2)}  # fmt: skip
    # Distinct queries, in a seeded order: the in-process ones first, then each HTTP run's own.
    order = random.Random(args.seed + 1).sample(range(len(facts)), len(facts))
    queries = list(dict.fromkeys(facts[i].query for i in order))
    print(f"corpus: {len(chunks)} chunks of ~{report['corpus']['words_per_chunk']} words, {len(queries)} distinct queries")
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        started = time.perf_counter()
        write_warehouse(data_dir, chunks, facts, args.graph_facts)
        report["corpus"]["warehouse_write_s"] = round(time.perf_counter() - started, 2)
        idx = bench_index(stored_chunks(data_dir), data_dir / "indexes", queries[: args.queries])
        report["index"] = idx
        print(f"index: BM25 {idx['bm25_build_s']} s + embeddings {idx['embed_build_s']} s + graph {idx['graph_build_s']} s "
              f"to build, {idx['cache_load_s']} s "
              f"from cache; BM25 {idx['bm25_mib']} MiB, matrix {idx['matrix_mib']} MiB (process RSS +{idx['rss_growth_mib']} "
              f"MiB); candidate product {idx['candidate_product']}")  # fmt: skip
        print(f"  search(k=3) one at a time: p50 {idx['search_k3']['p50_ms']} ms, p99 {idx['search_k3']['p99_ms']} ms; "
              f"BM25 scores alone p50 {idx['lexical_only']['p50_ms']} ms")  # fmt: skip
        if args.recall_queries:
            picked = [facts[i] for i in order[: args.recall_queries]]
            rec = bench_recall(stored_chunks(data_dir), data_dir / "indexes", [f.query for f in picked],
                               [chunks[f.chunk].chunk_id for f in picked], args.search_depths)  # fmt: skip
            report["recall"] = rec
            print(f"  exact: fact in fused top 3 for {rec['exact']['fact_at_3']} of {rec['queries']} queries")
            for r in rec["graph"].values():
                print(f"  HNSW graph, search depth {r['search_depth']}: dense {r['dense_ms_per_query']} ms/query, "
                      f"recall@{rec['depth']} {r['recall_at_depth']}, recall@10 {r['recall_at_10']}, fused top 3 identical "
                      f"{r['fused_top3_identical']}, fact in fused top 3 {r['fact_at_3']}")  # fmt: skip
        if not args.skip_server:
            report["servers"] = []
            rest = queries[args.queries :]
            per_run = args.requests * (len(args.concurrency) + 1)
            for i, workers in enumerate(args.workers):  # each server gets queries no other run asked
                server = bench_server(data_dir, rest[i * per_run : (i + 1) * per_run], args.requests, args.concurrency, workers)
                report["servers"].append(server)
                print(f"  serve-tools --workers {workers}: up in {server['startup_s']} s")
                for label in ("web_search", "bare"):
                    for r in server[label].values():
                        ratio = f", {r['ratio_to_bare']} of bare" if "ratio_to_bare" in r else ""
                        print(f"    {label:<10} C={r['concurrency']:<4} {r['rps']:>8} req/s  p50 {r['p50_ms']:>7} ms  "
                              f"p99 {r['p99_ms']:>8} ms{ratio}  ({r['answered']}/{r['requests']} answered, {r['non_200']} non-200)")
                mem = server["memory"]
                print("    memory per serving process, MiB (rss/pss/private): "
                      + "; ".join(f"{m.get('rss')}/{m.get('pss')}/{m.get('private')}" for m in mem["per_process_mib"]))
            c32 = sorted((s["web_search"]["c32"]["p99_ms"], s["workers"]) for s in report["servers"] if "c32" in s["web_search"])
            if c32:
                report["target"] = {"p99_ms": c32[0][0], "workers": c32[0][1], "met": c32[0][0] < TARGET_P99_MS}
    report["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report))
    save_report(report, args.json)


if __name__ == "__main__":
    main()
