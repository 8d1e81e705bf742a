"""Benchmark: BM25 libraries for the text-search tool's lexical half, on the same synthetic chunks.

Compared: ``bm25s`` (what ``tasks.env.text_search`` uses: ``TextIndex.lexical_scores`` and its top-n), ``tantivy``
(Rust, an in-memory index; only when the ``tantivy`` package is installed: it is no dependency of hopforge) and
DuckDB's full-text search extension (only when ``LOAD fts`` works offline: DuckDB downloads extensions from
extensions.duckdb.org, so on a machine without that network the result says so). Every library indexes the
same tokens (``tasks.env.text_search.tokenize``: lower-cased words, English stop words out), so differences in
ranking come from the scoring (bm25s: Lucene's BM25 with k1=1.5, b=0.75; tantivy: k1=1.2, b=0.75; DuckDB:
k1=1.2, b=0.75) and not from tokenising.

Each library runs in a process of its own (so its memory is measured alone) over ``testing/text_corpus.py``'s
chunks and reports: index build time and resident memory growth (at the end of the build, and after a garbage
collection: bm25s's build holds every chunk's token list for a while); top-10 retrieval latency one query at a time
and at ``--concurrency`` threads (raw BM25 retrieve, no fusion); ranking agreement with bm25s (mean overlap of
the top 10); recall of the chunk stating each synthetic fact (top 3 and top 10, query "<head> <relation>"); and
on the demo corpus, for the hidden facts of the demo graphs' IKG variants (Graph-RFT's 20/40/60% levels over
walk questions, as ``tests/test_ikg.py`` makes them), the share whose top 3 holds a chunk naming both entities
(``tasks.env.ikg.fact_found``: the demo graphs carry no chunk provenance).

    python bench/bench_bm25_libs.py --json bench/results/bm25_libs.json
    python bench/bench_bm25_libs.py --chunks 20000 --queries 500     # a quick look
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing as mp
import os
import random
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # runnable as a plain script from any directory
    sys.path.insert(0, str(ROOT))

from bench.bench_tools import memory, pct  # noqa: E402
from bench.results_file import save_report  # noqa: E402
from testing.text_corpus import synthetic_chunks  # noqa: E402
from tasks.env.text_search import TextChunk, TextIndex, _top_positive, tokenize  # noqa: E402

LIBS = ("bm25s", "tantivy", "duckdb_fts")
TOP = 10


class Unavailable(Exception):
    """A library that cannot run here (not installed, an extension that cannot be loaded offline)."""


Search = Callable[[str, int], list[int]]


def bm25s_engine(chunks: list[TextChunk]) -> Search:
    index = TextIndex(chunks, None, name="bm25s")
    index._lexical()

    def search(query: str, k: int) -> list[int]:
        return [int(r) for r in _top_positive(index.lexical_scores(query), k)]

    return search


def tantivy_engine(chunks: list[TextChunk]) -> Search:
    try:
        import tantivy
    except ImportError:
        raise Unavailable("the tantivy package is not installed (pip install tantivy)") from None
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", stored=False)
    builder.add_integer_field("row", stored=True, indexed=False)
    schema = builder.build()
    index = tantivy.Index(schema)  # in memory
    writer = index.writer(heap_size=256_000_000, num_threads=1)
    for i, c in enumerate(chunks):
        writer.add_document(tantivy.Document(body=" ".join(tokenize(f"{c.title}\n{c.text}")), row=i))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()

    def search(query: str, k: int) -> list[int]:
        terms = list(dict.fromkeys(tokenize(query)))
        if not terms:
            return []
        q = tantivy.Query.boolean_query([(tantivy.Occur.Should, tantivy.Query.term_query(schema, "body", t)) for t in terms])
        return [searcher.doc(addr)["row"][0] for _, addr in searcher.search(q, k).hits]

    return search


def duckdb_fts_engine(chunks: list[TextChunk]) -> Search:
    import duckdb

    con = duckdb.connect()
    try:
        con.execute("LOAD fts")
    except duckdb.Error:
        try:
            con.execute("INSTALL fts")
            con.execute("LOAD fts")
        except duckdb.Error:
            raise Unavailable(f"DuckDB {duckdb.__version__}'s fts extension is not installed, and INSTALL fts could not "
                              "download it (it needs extensions.duckdb.org)") from None
    con.execute("CREATE TABLE chunks (row INTEGER, body VARCHAR)")
    con.executemany("INSERT INTO chunks VALUES (?, ?)",
                    [(i, " ".join(tokenize(f"{c.title}\n{c.text}"))) for i, c in enumerate(chunks)])
    con.execute("PRAGMA create_fts_index('chunks', 'row', 'body', stemmer='none', stopwords='none', lower=0)")
    sql = ("SELECT row FROM (SELECT row, fts_main_chunks.match_bm25(row, ?) AS score FROM chunks) "
           "WHERE score IS NOT NULL ORDER BY score DESC, row LIMIT ?")
    local = __import__("threading").local()

    def search(query: str, k: int) -> list[int]:
        cur = getattr(local, "cur", None)
        if cur is None:
            cur = local.cur = con.cursor()
        return [r[0] for r in cur.execute(sql, [" ".join(tokenize(query)), k]).fetchall()]

    return search


ENGINES: dict[str, Callable[[list[TextChunk]], Search]] = {
    "bm25s": bm25s_engine, "tantivy": tantivy_engine, "duckdb_fts": duckdb_fts_engine,
}  # fmt: skip


def demo_ikg_facts() -> tuple[list[TextChunk], list[tuple[str, str, str]]]:
    """The demo corpus's chunks, and ``(query, head, tail)`` of every hidden fact of the demo graphs' IKG
    variants at 20/40/60% over walk questions of 1 to 5 hops (6 per length per domain)."""
    from schemas.qa import QA
    from tasks.corpus.ingest import ingest_text_folders
    from tasks.env.ikg import make_view
    from tasks.env.text_search import chunks_from_ingest
    from tasks.graph.importers import read_triples
    from tasks.qa.context import path_edges

    demo = ROOT / "flows" / "demo"
    chunks = chunks_from_ingest(ingest_text_folders(demo / "corpus"), "demo")
    facts: dict[tuple[str, str, str], None] = {}
    for path in sorted((demo / "graphs").glob("*.jsonl")):
        graph = read_triples(path, path.stem).to_graph()
        for hops in range(1, 6):
            found = 0
            for start in graph.nodes():
                walk = [start]
                while len(walk) <= hops:
                    nxt = [n for n in graph.neighbor_names(walk[-1]) if n not in walk]
                    if not nxt:
                        break
                    walk.append(nxt[0])
                if len(walk) <= hops:
                    continue
                qa = QA(qa_id=f"{graph.domain}-{hops}-{found}", domain=graph.domain, seed=start, path=walk,
                        hop_class="1-2" if hops <= 2 else "3+", path_edges=path_edges(graph, walk),
                        question="?", answer=walk[-1])  # fmt: skip
                for level in (0.2, 0.4, 0.6):
                    for f in make_view(graph, qa.qa_id, qa.path_edges, level).facts:
                        facts[(f.query(), f.head, f.tail)] = None
                found += 1
                if found == 6:
                    break
    return chunks, list(facts)


def names_both(chunk: TextChunk, head: str, tail: str) -> bool:
    from schemas.answers import name_key

    text = name_key(f"{chunk.title}\n{chunk.text}")
    return name_key(head) in text and name_key(tail) in text


def timed(search: Search, queries: list[str], concurrency: int) -> dict[str, Any]:
    lat: list[float] = []

    def one(q: str) -> None:
        started = time.perf_counter()
        search(q, TOP)
        lat.append(time.perf_counter() - started)

    started = time.perf_counter()
    if concurrency == 1:
        for q in queries:
            one(q)
    else:
        with ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(one, queries))
    wall = time.perf_counter() - started
    lat.sort()
    return {"queries": len(lat), "qps": round(len(lat) / wall, 1), "p50_ms": round(pct(lat, 0.5) * 1000, 3),
            "p99_ms": round(pct(lat, 0.99) * 1000, 3)}  # fmt: skip


def run_library(lib: str, n: int, seed: int, n_queries: int, concurrency: int) -> dict[str, Any]:
    """One library's figures (module docstring), in this process."""
    chunks, facts = synthetic_chunks(n, seed)
    picked = random.Random(seed + 7).sample(range(len(facts)), 3 * n_queries)
    queries = [facts[i].query for i in picked]
    rss0 = memory(os.getpid()).get("rss", 0.0)
    started = time.perf_counter()
    try:
        search = ENGINES[lib](chunks)
    except Unavailable as exc:
        return {"available": False, "reason": str(exc)}
    out: dict[str, Any] = {"available": True, "build_s": round(time.perf_counter() - started, 2),
                           "rss_growth_mib": round(memory(os.getpid()).get("rss", 0.0) - rss0, 1)}  # fmt: skip
    gc.collect()  # what the index holds once the build's temporaries are gone (freed pages the allocator returned)
    out["rss_growth_after_gc_mib"] = round(memory(os.getpid()).get("rss", 0.0) - rss0, 1)
    search(queries[0], TOP)
    out["single_thread"] = timed(search, queries[:n_queries], 1)
    out[f"c{concurrency}_threads"] = timed(search, queries[n_queries : 2 * n_queries], concurrency)
    ranked = [search(facts[i].query, TOP) for i in picked[2 * n_queries :]]
    out["rankings"] = ranked
    out["fact_recall_at_3"] = round(sum(facts[i].chunk in r[:3] for i, r in zip(picked[2 * n_queries :], ranked)) / len(ranked), 4)
    out["fact_recall_at_10"] = round(sum(facts[i].chunk in r for i, r in zip(picked[2 * n_queries :], ranked)) / len(ranked), 4)
    demo_chunks, demo_facts = demo_ikg_facts()
    demo = ENGINES[lib](demo_chunks)
    hits = [any(names_both(demo_chunks[r], head, tail) for r in demo(q, 3)) for q, head, tail in demo_facts]
    out["demo_ikg_facts"] = len(demo_facts)
    out["demo_ikg_found_at_3"] = round(sum(hits) / len(hits), 4)
    return out


def _child(lib: str, args: tuple[Any, ...], q: Any) -> None:
    q.put(run_library(lib, *args))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=1000, help="queries per measurement (latency, C, agreement)")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--libs", nargs="+", default=list(LIBS), choices=LIBS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    report: dict[str, Any] = {"cpus": os.cpu_count(), "load_avg_before": [round(x, 2) for x in os.getloadavg()],
                              "chunks": args.chunks, "top": TOP, "libraries": {}}  # fmt: skip
    ctx = mp.get_context("spawn")
    for lib in args.libs:
        q = ctx.Queue()
        proc = ctx.Process(target=_child, args=(lib, (args.chunks, args.seed, args.queries, args.concurrency), q))
        proc.start()
        result = q.get()
        proc.join()
        report["libraries"][lib] = result
    base = report["libraries"].get("bm25s", {}).get("rankings")
    for lib, r in report["libraries"].items():
        ranked = r.pop("rankings", None)
        if base is not None and ranked is not None:
            r["overlap_at_10_with_bm25s"] = round(sum(len(set(a) & set(b)) for a, b in zip(ranked, base)) / (TOP * len(base)), 4)
            r["top1_same_as_bm25s"] = round(sum(a[:1] == b[:1] for a, b in zip(ranked, base)) / len(base), 4)
        if not r.get("available"):
            print(f"{lib:<11} not run: {r['reason']}")
            continue
        c = r[f"c{args.concurrency}_threads"]
        print(f"{lib:<11} build {r['build_s']:>6} s, +{r['rss_growth_mib']} MiB; top-{TOP} one at a time p50 "
              f"{r['single_thread']['p50_ms']} ms p99 {r['single_thread']['p99_ms']} ms; C={args.concurrency} "
              f"{c['qps']} q/s p99 {c['p99_ms']} ms; overlap@10 with bm25s {r.get('overlap_at_10_with_bm25s')}; "
              f"fact recall@3 {r['fact_recall_at_3']}, @10 {r['fact_recall_at_10']}; demo IKG found@3 "
              f"{r['demo_ikg_found_at_3']} of {r['demo_ikg_facts']}")  # fmt: skip
    report["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report))
    save_report(report, args.json)


if __name__ == "__main__":
    main()
