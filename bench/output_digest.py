"""Output digests: the four LLM stages (generate-qa, verify-paths, distill-trajectories, evaluate-policy) on a small
seeded world against the fake endpoint (0.05 s latency, concurrency 16), then a digest of every output table with
run ids, timestamps, latencies, ids derived from the run id and the search's time-budget flag left out. A
performance change must leave every digest and the endpoint call count as they were: run it on both checkouts.

    python bench/output_digest.py            # this checkout
    python bench/output_digest.py /path/to/other/checkout
"""
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent).resolve()
sys.path.insert(0, str(root))
os.chdir(root)
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")


SKIP = {"run_id", "created_at", "started_at", "finished_at", "latency_s", "elapsed_s", "attempt_id", "trajectory_id",
        "item_id", "search_stopped", "item_key"}
TABLES = [("qa", "qa_id"), ("qa_attempts", "domain, seed, hop_class, attempt"), ("gold_paths", "qa_id, rank"),
          ("gold_path_summary", "qa_id"), ("trajectories", "qa_id, kind, sample"), ("eval_items", "qa_id, mode, view_id")]


def main() -> None:
    from prefect.testing.utilities import prefect_test_harness

    from bench.bench_pipeline import FakeProcess
    from bench.bench_scale import write_triples
    from flows.distill import distill_trajectories
    from flows.evaluate import evaluate_policy
    from flows.graphs import import_graphs
    from flows.qa import generate_qa, verify_paths
    from schemas.config import load_settings
    from warehouse.db import Warehouse

    fake = FakeProcess(0.05)
    try:
        with tempfile.TemporaryDirectory() as tmp, prefect_test_harness(server_startup_timeout=120):
            files = {}
            for i in range(3):
                files[f"dom{i:02d}"] = str(Path(tmp) / f"dom{i:02d}.jsonl")
                write_triples(Path(files[f"dom{i:02d}"]), 800, 0.5, i, readable=True)
            ep = {"base_url": fake.base_url, "model": "fake-model", "max_concurrency": 16, "max_retries": 1,
                  "timeout_s": 60}
            settings = load_settings(data_dir=Path(tmp) / "data",
                                     roles={r: ep for r in ("generator", "verifier", "teacher", "judge", "policy")},
                                     embeddings={"base_url": fake.base_url, "model": "fake-embed", "dim": 16})
            doms = sorted(import_graphs(files=files, settings=settings)["imported"])
            limits = {"max_rounds": 3, "max_tokens_per_round": 300}
            generate_qa(domains=doms, n_seeds=15, modes=["candidates"], settings=settings)
            verify_paths(domains=doms, settings=settings)
            distill_trajectories(domains=doms, n_rollouts=2, settings=settings, cot_max_tokens=300, **limits)
            evaluate_policy(split=None, domains=doms, settings=settings, **limits)
            calls = fake.calls()
            wh = Warehouse(settings.warehouse_path, read_only=True)
            digests = []
            for table, order in TABLES:
                rows = wh.query(f"SELECT * FROM {table} ORDER BY {order}")
                clean = [{k: v for k, v in r.items() if k not in SKIP} for r in rows]
                blob = json.dumps(clean, sort_keys=True, default=str).encode()
                digests.append(f"{table:18s} {len(rows):5d} rows  {hashlib.sha256(blob).hexdigest()[:16]}")
    finally:
        fake.close()
    print("\n".join(digests))
    print(f"endpoint calls {calls} (an identical request answered from the cache while its twin is in flight "
          "counts as a call: this may differ by a few between runs)")


if __name__ == "__main__":
    main()
