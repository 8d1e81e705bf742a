"""Benchmark: approximate nearest-neighbour (ANN) libraries against exact search, for the entity matcher and the
meaning half of text search (issue 37, "ANN on a maintained library").

Two data sets at each ``--rows`` size, 384 dimensions (``HashingEmbedder``'s default and all-MiniLM-L6-v2's):

- ``clustered``: random unit vectors around ``rows / 100`` random centres (noise as large as the centre, so a row's
  cosine to its centre is about 0.7), queried by rows moved by the same amount of noise again;
- ``names``: the entity texts of ``bench.bench_tools.synthetic_records`` (``"Name Name i: description"``) embedded
  by the project's ``HashingEmbedder(384)``, queried by misspelt names (the last letter replaced, as
  ``bench/bench_tools.py`` asks ``entity_matcher``);
- ``chunks`` (asked with ``--sets chunks``): the text-search corpus of ``bench/bench_text_search.py``
  (``testing.text_corpus.synthetic_chunks``, ``"title: text"`` embedded as ``TextIndex`` embeds it), queried by its
  fact queries ("<head entity> <relation>"): the data on which the inverted lists found 74% of the exact top 10.

Each method is built single-threaded unless ``--build-threads`` asks for more (a multi-threaded HNSW build inserts in
a racy order: two builds of the same rows give different files; ``--rebuild`` builds each usearch setting twice and
records whether the files and the answers agree), saved to a file, loaded back the way a server would (usearch
``view()``, faiss ``IO_FLAG_MMAP``), and searched one query at a time on one thread, as a tool call searches. Per
method: recall@10 against the exact ranking (float64 scores of every row), p50 / p99 per query in process, build time,
file size, load time, and whether the loaded index answers exactly as the built one, and the resident memory the
loaded index adds to the process: ``anon`` (private to each process) and ``file`` (pages of the mapped file, shared by
every process that maps it). Methods:

- ``exact``: one float32 product over every row, then argpartition (what ``GraphIndex.top_k`` scanned);
- ``lists``: the home-made spherical k-means inverted lists of ``tasks/env/text_search.py`` at their default
  probes (only while that code exists: it was replaced after this benchmark, see docs/benchmarks.md);
- ``usearch-hnsw-<dtype>-ef<e>``: usearch HNSW (M=16, expansion_add=128, one thread) in float32, float16,
  bfloat16 and int8 storage; ``usearch-hnsw-<dtype>-a<A>-t<T>-ef<e>`` where ``--ef-add`` / ``--build-threads``
  ask for other insertion depths ``A`` or ``T`` threads (usearch ``Index.add(..., threads=T)``);
- ``faiss-hnsw-ef<e>``: faiss ``IndexHNSWFlat`` (M=16, efConstruction=128), inner product;
- ``faiss-ivf-p<n>``: faiss ``IndexIVFFlat`` with 4·sqrt(rows) lists (the home-made lists' count), ``n`` probed.

usearch is the project's dependency; faiss-cpu is only this benchmark's (``pip install 'faiss-cpu==1.15.*'``; its
methods are left out without it). The figures depend on the machine and on what else runs on it: the JSON records the core count and the load
average before and after each size.

    python bench/bench_ann.py --rows 50000 200000 --json bench/results/ann.json
    python bench/bench_ann.py --rows 20000 --queries 200          # a quick look
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # runnable as a plain script from any directory
    sys.path.insert(0, str(ROOT))

from bench.results_file import save_report  # noqa: E402

DIM = 384
K = 10
M = 16
EF_ADD = 128


def unit(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def clustered(rows: int, queries: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = unit(rng.standard_normal((max(1, rows // 100), DIM)))
    noise = 1.0 / np.sqrt(DIM)
    data = np.empty((rows, DIM), dtype=np.float32)
    step = 65536
    for i in range(0, rows, step):
        part = centres[rng.integers(0, len(centres), min(step, rows - i))]
        data[i : i + step] = unit(part + noise * rng.standard_normal(part.shape).astype(np.float32))
    picks = data[rng.integers(0, rows, queries)]
    return data, unit(picks + noise * rng.standard_normal(picks.shape).astype(np.float32))


def names(rows: int, queries: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    import random

    from bench.bench_tools import synthetic_records
    from tasks.env.index import HashingEmbedder, entity_text

    entities, _ = synthetic_records(rows, 0, seed)
    emb = HashingEmbedder(DIM)
    data = emb.embed([entity_text(e.name, e.description) for e in entities])
    rng = random.Random(seed + 1)
    typos = [entities[rng.randrange(rows)].name.lower()[:-1] + "x" for _ in range(queries)]
    return data, emb.embed(typos)


def chunks(rows: int, queries: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    from testing.text_corpus import synthetic_chunks
    from tasks.env.index import HashingEmbedder
    from tasks.env.text_search import MAX_EMBED_CHARS

    found, facts = synthetic_chunks(rows, seed=seed)
    emb = HashingEmbedder(DIM)
    data = np.concatenate([emb.embed([" ".join(f"{c.title}: {c.text}".split())[:MAX_EMBED_CHARS]
                                      for c in found[i : i + 4096]]) for i in range(0, rows, 4096)])
    step = max(1, len(facts) // queries)
    return data, emb.embed([f.query for f in facts[::step][:queries]])


def exact_top(data: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """The true top ``k`` rows of each query by float64 scores (ties by row), from a float32 pre-selection wide
    enough (4k rows) that rounding cannot drop a true top-k row of these data."""
    out = np.empty((len(queries), k), dtype=np.int64)
    for i in range(0, len(queries), 64):
        block = queries[i : i + 64]
        scores = block @ data.T
        for j, row in enumerate(scores):
            cand = np.argpartition(row, len(row) - 4 * k)[len(row) - 4 * k :]
            s = (data[cand].astype(np.float64) * block[j].astype(np.float64)).sum(axis=1)
            out[i + j] = cand[np.lexsort((cand, -s))[:k]]
    return out


def recall(got: list[np.ndarray], want: np.ndarray) -> float:
    return round(float(np.mean([len(set(g[:K].tolist()) & set(w.tolist())) / K for g, w in zip(got, want)])), 4)


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


def timed(search: Callable[[np.ndarray], np.ndarray], queries: np.ndarray) -> tuple[list[np.ndarray], dict[str, float]]:
    for q in queries[:20]:  # page in the index and warm the caches
        search(q)
    got, times = [], []
    for q in queries:
        started = time.perf_counter()
        got.append(np.asarray(search(q)))
        times.append(time.perf_counter() - started)
    return got, {"p50_ms": round(pct(times, 0.5) * 1000, 3), "p99_ms": round(pct(times, 0.99) * 1000, 3)}


def block_cost(data: np.ndarray, queries: np.ndarray, block: int = 32) -> float:
    """Milliseconds per query of the exact product when queries come in blocks of ``block`` (median block)."""
    n = len(data)
    times = []
    for i in range(0, len(queries) - block + 1, block):
        started = time.perf_counter()
        scores = queries[i : i + block] @ data.T
        for row in scores:
            np.argpartition(row, n - K)[n - K :]
        times.append((time.perf_counter() - started) / block)
    return round(pct(times, 0.5) * 1000, 3)


def rss() -> dict[str, float]:
    """This process's resident memory in MiB: ``anon`` (private to it) and ``file`` (pages of mapped files, which
    every process mapping the same file shares)."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("RssAnon:", "RssFile:")):
                out[line.split(":")[0][3:].lower()] = round(int(line.split()[1]) / 1024, 1)
    return out


def load_avg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# -- methods: each returns (search of the loaded index, facts) ------------------------------------------------------


def m_exact(data: np.ndarray, where: Path) -> tuple[Callable, dict[str, Any]]:
    path = where / "exact.npy"
    started = time.perf_counter()
    np.save(path, data)
    build = time.perf_counter() - started
    started = time.perf_counter()
    mapped = np.asarray(np.load(path, mmap_mode="r"))
    load = time.perf_counter() - started
    n = len(mapped)

    def search(q: np.ndarray) -> np.ndarray:
        s = mapped @ q
        top = np.argpartition(s, n - K)[n - K :]
        return top[np.argsort(-s[top], kind="stable")]

    return search, {"build_s": round(build, 3), "file_mib": round(path.stat().st_size / 2**20, 1),
                    "load_s": round(load, 4)}


def m_lists(data: np.ndarray, where: Path) -> tuple[Callable, dict[str, Any]] | None:
    ts = importlib.import_module("tasks.env.text_search")
    lists_cls = getattr(ts, "_InvertedLists", None)
    if lists_cls is None:
        return None
    lists = lists_cls.list_count(len(data))
    probes = max(1, round(ts.IVF_PROBE_SHARE * lists))
    started = time.perf_counter()
    built = lists_cls.build(data, lists)
    build = time.perf_counter() - started
    stem = where / "lists"
    for part in ("rows", "centroids", "order", "offsets"):
        np.save(f"{stem}.{part}.npy", getattr(built, part))
    size = sum(Path(f"{stem}.{p}.npy").stat().st_size for p in ("rows", "centroids", "order", "offsets"))
    started = time.perf_counter()
    loaded = lists_cls._load(stem, data.shape, lists)
    load = time.perf_counter() - started
    return (lambda q: loaded.top(q, K, probes)), {"build_s": round(build, 2), "file_mib": round(size / 2**20, 1),
                                                  "load_s": round(load, 4), "lists": lists, "probes": probes}


def rescore(data: np.ndarray, cand: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The ``K`` best of ``cand`` by float64 scores, as the project ranks the candidates an index finds."""
    cand = cand[cand >= 0]
    s = (data[cand].astype(np.float64) * q.astype(np.float64)).sum(axis=1)
    return cand[np.lexsort((cand, -s))[:K]]


def setting_name(ef: int, count: int) -> str:
    """``ef<e>`` (``K`` results straight from the index) or ``ef<e>-c<n>`` (``n`` candidates ranked exactly)."""
    return f"ef{ef}" if count == K else f"ef{ef}-c{count}"


def m_usearch(data: np.ndarray, where: Path, dtype: str, efs: list[tuple[int, int]], ef_add: int = EF_ADD,
              threads: int = 1, rebuild: bool = False,
              queries: np.ndarray | None = None) -> list[tuple[str, Callable, dict[str, Any]]]:
    from usearch.index import Index

    def build_once(path: Path) -> float:
        idx = Index(ndim=DIM, metric="ip", dtype=dtype, connectivity=M, expansion_add=ef_add,
                    expansion_search=efs[0][0])
        started = time.perf_counter()
        idx.add(np.arange(len(data), dtype=np.uint64), data, threads=threads)
        took = time.perf_counter() - started
        idx.save(str(path))
        return took

    variant = "" if (ef_add, threads) == (EF_ADD, 1) else f"-a{ef_add}-t{threads}"
    path = where / f"usearch-{dtype}{variant}.usearch"
    build = build_once(path)
    probe = data[:50]
    idx = Index.restore(str(path))
    built_keys = idx.search(probe, K, threads=1).keys
    del idx
    again: dict[str, Any] = {}
    if rebuild:  # the same rows built again: the same file? the same answers?
        other = where / f"usearch-{dtype}{variant}-again.usearch"
        again["rebuild_s"] = round(build_once(other), 2)
        again["rebuild_same_file"] = path.read_bytes() == other.read_bytes()
        if queries is not None:
            a = Index.restore(str(path), view=True, expansion_search=efs[0][0])
            b = Index.restore(str(other), view=True, expansion_search=efs[0][0])
            same = [np.array_equal(a.search(q, K, threads=1).keys, b.search(q, K, threads=1).keys) for q in queries]
            again["rebuild_same_top10_share"] = round(float(np.mean(same)), 4)
            del a, b
        other.unlink()
    before = rss()
    started = time.perf_counter()
    viewed = Index.restore(str(path), view=True, expansion_search=efs[0][0])  # the depth ``built_keys`` had
    load = time.perf_counter() - started
    same = bool(np.array_equal(built_keys, viewed.search(probe, K, threads=1).keys))
    viewed.search(data[::97], K, threads=1)  # touch the graph as searches do
    after = rss()
    memory = {f"loaded_{k}_mib": round(after[k] - before[k], 1) for k in before}
    out = []
    for ef, count in efs:
        def search(q: np.ndarray, ef: int = ef, count: int = count) -> np.ndarray:
            viewed.expansion_search = max(ef, count)
            keys = viewed.search(q, count, threads=1).keys.astype(np.int64)
            return keys if count == K else rescore(data, keys, q)
        out.append((f"usearch-hnsw-{dtype}{variant}-{setting_name(ef, count)}", search,
                    {"build_s": round(build, 2), "expansion_add": ef_add, "build_threads": threads,
                     "file_mib": round(path.stat().st_size / 2**20, 1),
                     "load_s": round(load, 4), "loaded_equals_built": same, **memory, **again}))
    return out


def m_faiss_hnsw(data: np.ndarray, where: Path, efs: list[tuple[int, int]]) -> list[tuple[str, Callable, dict[str, Any]]]:
    import faiss

    idx = faiss.IndexHNSWFlat(DIM, M, faiss.METRIC_INNER_PRODUCT)
    idx.hnsw.efConstruction = EF_ADD
    started = time.perf_counter()
    idx.add(data)
    build = time.perf_counter() - started
    path = where / "faiss-hnsw.index"
    faiss.write_index(idx, str(path))
    settings = [(f"faiss-hnsw-{setting_name(ef, count)}",
                 lambda ix, ef=ef, count=count: setattr(ix.hnsw, "efSearch", max(ef, count)), count) for ef, count in efs]
    return _faiss_loaded(data, idx, path, build, settings)


def m_faiss_ivf(data: np.ndarray, where: Path, shares: list[float]) -> list[tuple[str, Callable, dict[str, Any]]]:
    import faiss

    lists = max(1, round(4 * len(data) ** 0.5))
    quantizer = faiss.IndexFlatIP(DIM)
    idx = faiss.IndexIVFFlat(quantizer, DIM, lists, faiss.METRIC_INNER_PRODUCT)
    idx.cp.seed = 1234
    started = time.perf_counter()
    rng = np.random.default_rng(5)
    idx.train(data[np.sort(rng.choice(len(data), min(len(data), 40 * lists), replace=False))])
    idx.add(data)
    build = time.perf_counter() - started
    path = where / "faiss-ivf.index"
    faiss.write_index(idx, str(path))
    settings = [(f"faiss-ivf-p{max(1, round(s * lists))}",
                 lambda ix, p=max(1, round(s * lists)): setattr(ix, "nprobe", p), K) for s in shares]
    return _faiss_loaded(data, idx, path, build, settings, lists=lists)


def _faiss_loaded(data: np.ndarray, idx, path: Path, build: float, settings, **extra) -> list[tuple[str, Callable, dict[str, Any]]]:
    import faiss

    before = rss()
    started = time.perf_counter()
    try:
        loaded = faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
        how = "mmap"
    except RuntimeError:  # this index type cannot be mapped: read into memory
        loaded = faiss.read_index(str(path))
        how = "read"
    load = time.perf_counter() - started
    settings[0][1](idx)
    settings[0][1](loaded)
    probe = np.ascontiguousarray(idx.reconstruct_n(0, 50)) if hasattr(idx, "reconstruct_n") else None
    same = bool(np.array_equal(idx.search(probe, K)[1], loaded.search(probe, K)[1])) if probe is not None else None
    loaded.search(np.ascontiguousarray(idx.reconstruct_n(0, min(idx.ntotal, 2000))[::20]), K)  # touch the index
    after = rss()
    extra = {**extra, **{f"loaded_{k}_mib": round(after[k] - before[k], 1) for k in before}}
    out = []
    for name, apply, count in settings:
        def search(q: np.ndarray, count: int = count) -> np.ndarray:
            keys = loaded.search(q[None], count)[1][0]
            return keys if count == K else rescore(data, keys, q)
        apply(loaded)
        out.append((name, _with_setting(search, apply, loaded),
                    {"build_s": round(build, 2), "file_mib": round(path.stat().st_size / 2**20, 1),
                     "load_s": round(load, 4), "load": how, "loaded_equals_built": same, **extra}))
    return out


def _with_setting(search: Callable, apply: Callable, index) -> Callable:
    def run(q: np.ndarray) -> np.ndarray:
        return search(q)
    run.prepare = lambda: apply(index)  # type: ignore[attr-defined]
    return run


# -- driver ----------------------------------------------------------------------------------------------------------


def bench_set(kind: str, rows: int, n_queries: int, seed: int, methods: set[str],
              efs: list[tuple[int, int]], ef_adds: list[int] = [EF_ADD], build_threads: list[int] = [1],
              rebuild: bool = False) -> dict[str, Any]:
    started = time.perf_counter()
    data, queries = {"clustered": clustered, "names": names, "chunks": chunks}[kind](rows, n_queries, seed)
    made = time.perf_counter() - started
    want = exact_top(data, queries, K)
    report: dict[str, Any] = {"rows": rows, "dim": DIM, "queries": n_queries, "data_s": round(made, 1),
                              "load_avg_before": load_avg(), "methods": {}}
    with tempfile.TemporaryDirectory(prefix="bench-ann-") as tmp:
        where = Path(tmp)
        runs: list[tuple[str, Callable, dict[str, Any]]] = []

        def add(name: str, made_fn: Callable[[], Any]) -> None:
            family = name.split("-")[0]
            chosen = name in methods or (family in methods and not any(m.startswith(family + "-") for m in methods))
            if not chosen:
                return
            got = made_fn()
            if got is None:
                report["methods"][name] = {"skipped": "not in this version of the code"}
                return
            for entry in (got if isinstance(got, list) else [(name, *got)]):
                label, search, facts = entry
                if hasattr(search, "prepare"):
                    search.prepare()
                found, lat = timed(search, queries)
                report["methods"][label] = {"recall_at_10": recall(found, want), **lat, **facts}
                if label == "exact":  # a server coalesces concurrent queries: one product per block of 32
                    report["methods"][label]["block32_ms_per_query"] = block_cost(data, queries)
                print(f"{kind:9} {rows:>8} {label:26} {report['methods'][label]}", flush=True)

        add("exact", lambda: m_exact(data, where))
        add("lists", lambda: m_lists(data, where))
        for dtype in ("f32", "f16", "bf16", "i8"):
            for ef_add in ef_adds:
                for threads in build_threads:
                    add(f"usearch-{dtype}", lambda dtype=dtype, a=ef_add, t=threads: m_usearch(
                        data, where, dtype, efs, a, t, rebuild, queries))
        add("faiss-hnsw", lambda: m_faiss_hnsw(data, where, efs))
        add("faiss-ivf", lambda: m_faiss_ivf(data, where, [1 / 64, 1 / 16]))
    report["load_avg_after"] = load_avg()
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[50_000, 200_000])
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--sets", nargs="+", default=["clustered", "names"], choices=["clustered", "names", "chunks"])
    ap.add_argument("--methods", nargs="+", default=["exact", "lists", "usearch", "faiss"],
                    help="exact, lists, usearch (or usearch-f32 / -f16 / -bf16 / -i8), faiss (or faiss-hnsw / faiss-ivf)")
    ap.add_argument("--ef", nargs="+", default=["64", "128"],
                    help="HNSW settings at search time: <expansion> (the index's top 10) or <expansion>:<candidates> "
                         "(that many candidates ranked by exact float64 scores, as the project ranks them)")
    ap.add_argument("--ef-add", type=int, nargs="+", default=[EF_ADD],
                    help="usearch: search depths while inserting (expansion_add), each built in turn")
    ap.add_argument("--build-threads", type=int, nargs="+", default=[1],
                    help="usearch: threads of Index.add (more than one: not reproducible)")
    ap.add_argument("--rebuild", action="store_true",
                    help="usearch: build each setting twice; record whether the files and top 10s are the same")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--append", action="store_true", help="add this run's sizes to those already in --json")
    ap.add_argument("--note", default="", help="recorded with this run's sizes (e.g. which tree's code ran)")
    args = ap.parse_args()

    from threadpoolctl import threadpool_limits

    methods = set(args.methods)
    try:
        import faiss
    except ImportError:  # the project does not depend on faiss: only this comparison uses it
        print("faiss-cpu is not installed (pip install 'faiss-cpu==1.15.*'): its methods are left out", flush=True)
        methods = {m for m in methods if not m.startswith("faiss")}
    else:
        faiss.omp_set_num_threads(1)  # one query on one thread, as a tool call runs; and a reproducible build
    report: dict[str, Any] = {"cpus": os.cpu_count(), "load_avg_before": load_avg(), "k": K, "hnsw_m": M,
                              "hnsw_ef_add": EF_ADD, "single_thread": args.build_threads == [1], "sizes": []}
    if args.append and args.json is not None and args.json.exists():
        report = json.loads(args.json.read_text())
        report.setdefault("runs", []).append({"args": sys.argv[1:], "load_avg_before": load_avg()})
    with threadpool_limits(1):  # the exact product on one thread too: what one tool server worker has
        for rows in args.rows:
            for kind in args.sets:
                efs = [(int(e.split(":")[0]), int(e.split(":")[1]) if ":" in e else K) for e in args.ef]
                entry = bench_set(kind, rows, args.queries, args.seed, methods, efs, args.ef_add,
                                  args.build_threads, args.rebuild)
                entry["set"] = kind
                if args.note:
                    entry["note"] = args.note
                report["sizes"].append(entry)
                save_report(report, args.json)
    report["load_avg_after"] = load_avg()
    save_report(report, args.json)


if __name__ == "__main__":
    main()
