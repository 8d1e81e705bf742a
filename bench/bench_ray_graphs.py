"""Graph building over 4 domains: the `build-graphs` flow with 2 Ray workers against the thread pool.

Both sides run the same flow on the same corpus (4 domains of synthetic documents) against the same loopback fake
extractor with a fixed latency per call, each from a cold data directory (no cached answers). The thread pool
(``runner.kind = threads``, the default) builds one domain at a time: LightRAG keeps process-wide storage locks bound
to one event loop, so two builds cannot share a process. Ray (``runner.kind = ray``) builds two domains at once, one
in each of its 2 worker processes.

The Ray side runs twice: with the endpoint limit held cluster-wide through Prefect's global concurrency limit (the
default: two Prefect API calls per LLM call) and with ``runner.global_limits = false`` (each worker process keeps
only its own limiter), which shows what the global limit costs.

Ray's start-up (about 10 s here) is paid once per cluster, not per flow: the Ray side joins a cluster started
before the timer, as a real one would be. The ratio is thread-pool wall time / Ray wall time (> 1: Ray is faster).

    python bench/bench_ray_graphs.py [--docs 12] [--latency 0.05] [--repeat 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from bench_graph_build import FakeServerProcess, synthetic_documents  # noqa: E402
from results_file import save_report  # noqa: E402

from schemas.config import load_settings  # noqa: E402

DOMAINS = ("agriculture", "biology", "cs", "history")


def write_corpus(root: Path, n_docs: int) -> Path:
    """One folder per domain, one text file per document (the ingest step's folder layout)."""
    for i, domain in enumerate(DOMAINS):
        folder = root / domain
        folder.mkdir(parents=True)
        for j, doc in enumerate(synthetic_documents(n_docs, seed=i)):
            (folder / f"doc{j:03d}.txt").write_text(doc.text, encoding="utf-8")
    return root


def run_side(base_url: str, corpus: Path, runner: dict) -> dict:
    from flows.graphs import build_graphs

    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(
            data_dir=Path(tmp), runner=runner,
            roles={"extractor": {"base_url": base_url, "model": "fake-model", "max_concurrency": 8}},
            embeddings={"base_url": base_url, "model": "fake-embed", "dim": 16},
        )  # fmt: skip
        started = time.perf_counter()
        out = build_graphs(source=str(corpus), settings=settings, chunk_token_size=120, chunk_overlap_token_size=10,
                           llm_max_async=8, max_parallel_insert=2)
        wall = time.perf_counter() - started
    if out["failures"]:
        raise SystemExit(f"build failed: {out['failures']}")
    return {"wall_s": wall, "domains": len(out["built"]),
            "entities": sum(b["entities"] for b in out["built"].values())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=12, help="documents per domain")
    ap.add_argument("--latency", type=float, default=0.05, help="seconds per fake LLM call")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    import ray
    from prefect.testing.utilities import prefect_test_harness

    with tempfile.TemporaryDirectory() as tmp, FakeServerProcess(args.latency) as fake, \
            prefect_test_harness(server_startup_timeout=120):
        base_url = fake.base_url
        corpus = write_corpus(Path(tmp) / "corpus", args.docs)
        ray.init(num_cpus=2, include_dashboard=False)  # the cluster the Ray side joins (already running)
        try:
            threads = {"kind": "threads", "max_workers": 2}
            on_ray = {"kind": "ray", "max_workers": 2}
            local_limits = {**on_ray, "global_limits": False}
            run_side(base_url, corpus, threads)  # warm-up: imports, Prefect's first flow run
            run_side(base_url, corpus, on_ray)
            sides: dict[str, list[dict]] = {"threads": [], "ray": [], "ray_local_limits": []}
            for _ in range(args.repeat):  # alternate, so background load hits every side alike
                sides["threads"].append(run_side(base_url, corpus, threads))
                sides["ray"].append(run_side(base_url, corpus, on_ray))
                sides["ray_local_limits"].append(run_side(base_url, corpus, local_limits))
        finally:
            ray.shutdown()
    med = {k: statistics.median(r["wall_s"] for r in v) for k, v in sides.items()}
    best = {k: min(r["wall_s"] for r in v) for k, v in sides.items()}
    assert sides["threads"][0]["entities"] == sides["ray"][0]["entities"], "both sides must build the same graphs"
    report = {
        "domains": len(DOMAINS), "docs_per_domain": args.docs, "latency_s": args.latency, "repeat": args.repeat,
        "entities": sides["ray"][0]["entities"],
        "threads_median_s": round(med["threads"], 2), "ray_median_s": round(med["ray"], 2),
        "threads_best_s": round(best["threads"], 2), "ray_best_s": round(best["ray"], 2),
        "speedup_median": round(med["threads"] / med["ray"], 2), "speedup_best": round(best["threads"] / best["ray"], 2),
        "ray_local_limits_median_s": round(med["ray_local_limits"], 2),
        "speedup_local_limits_median": round(med["threads"] / med["ray_local_limits"], 2),
        "speedup_local_limits_best": round(best["threads"] / best["ray_local_limits"], 2),
    }  # fmt: skip
    print(json.dumps(report, indent=2))
    save_report(report, args.json)


if __name__ == "__main__":
    main()
