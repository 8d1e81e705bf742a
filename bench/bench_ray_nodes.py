"""The factory's LLM stages on a Ray cluster joined by address: one node, then two (the cost curve).

A Ray head and a second Ray node are started with ``ray start`` as separate processes on this machine, each with
``--num-cpus`` CPUs (one by default), and the flows join them through ``runner.address``, hopforge's code shipped
in the job's runtime_env. The same workload runs with the head alone and with both nodes: ``--domains`` seeded
graphs (``--nodes`` each) imported once, then ``generate-qa`` (``--seeds`` seeds a domain), ``verify-paths`` and
``distill-trajectories`` from a copy of that warehouse with a cold cache, against the fake endpoint in a child process
(``--latency`` s a call, ``max_concurrency`` ``--concurrency``). The sides alternate (the node is added and
removed between them), so that background load hits both alike; both must store the same rows.

On one machine two nodes share its cores: the second node adds batches running at once (each node runs
``--num-cpus`` at a time) and the cost of a second raylet and its workers, not cores of its own. On a real cluster
each node brings its own cores, and the CPU-bound parts of the stages (generation's checks) scale with them as far as
the endpoint's concurrency allows. The result records the machine's cores and load.

    python bench/bench_ray_nodes.py [--domains 4] [--nodes 300] [--seeds 12] [--latency 0.1] [--repeat 2] \
        [--json bench/results/ray_nodes.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # runnable as a plain script from any directory
    sys.path.insert(0, str(ROOT))
# Prefect's settings for a benchmark (no analytics, a patient server start) are bench_pipeline's, set on import.
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from bench.bench_pipeline import FakeProcess  # noqa: E402
from bench.bench_scale import write_triples  # noqa: E402
from bench.results_file import save_report  # noqa: E402
from schemas.config import load_settings  # noqa: E402
from tests import ray_cluster as rc  # noqa: E402

ROLES = ("generator", "verifier", "teacher", "judge", "policy")
NODE_IP = "127.0.0.3"


def _settings(base_url: str, data_dir: Path, address: str, concurrency: int):
    ep = {"base_url": base_url, "model": "fake-model", "max_concurrency": concurrency, "max_retries": 1,
          "timeout_s": 60}
    return load_settings(data_dir=data_dir, roles={r: ep for r in ROLES},
                         runner={"kind": "ray", "address": address, "max_workers": 2},
                         embeddings={"base_url": base_url, "model": "fake-embed", "dim": 16})  # fmt: skip


def _world(tmp: Path, base_url: str, args: argparse.Namespace) -> Path:
    """The imported graphs, once, in a data dir the sides copy (no LLM call: import only)."""
    from flows.graphs import import_graphs

    files = {}
    for i in range(args.domains):
        files[f"dom{i:02d}"] = str(tmp / f"dom{i:02d}.jsonl")
        write_triples(Path(files[f"dom{i:02d}"]), args.nodes, 0.5, i, readable=True)
    world = tmp / "world"
    # the threads runner: importing runs no batch task, and needs no cluster
    settings = load_settings(data_dir=world, embeddings={"base_url": base_url, "model": "fake-embed", "dim": 16})
    domains = sorted(import_graphs(files=files, settings=settings)["imported"])
    # As in bench_pipeline: the generated graphs' labels name many things, so the shipped lexicon would refuse
    # nearly every hop; the profiles a user's file would give let every relation be asked.
    from testing.permissive_profiles import store_one_each_way
    from warehouse.db import Warehouse
    from warehouse.graphs import load_graph

    with Warehouse(settings.warehouse_path) as wh:
        store_one_each_way(wh, [load_graph(wh, d) for d in domains], run_id="bench-profiles")
    return world


def run_side(fake: FakeProcess, world: Path, address: str, args: argparse.Namespace) -> dict:
    from flows.distill import distill_trajectories
    from flows.qa import generate_qa, verify_paths
    from warehouse.db import Warehouse

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        shutil.copytree(world, data)
        settings = _settings(fake.base_url, data, address, args.concurrency)
        doms = [f"dom{i:02d}" for i in range(args.domains)]
        walls: dict[str, float] = {}
        calls: dict[str, int] = {}
        started = time.perf_counter()
        for stage, run in (
            ("generation", lambda: generate_qa(domains=doms, n_seeds=args.seeds, modes=["candidates"],
                                               batch_size=args.batch_size, settings=settings)),
            ("gold_paths", lambda: verify_paths(domains=doms, batch_size=args.batch_size, settings=settings)),
            ("distillation", lambda: distill_trajectories(domains=doms, n_rollouts=2, settings=settings,
                                                          batch_size=max(1, args.batch_size // 4), cot_max_tokens=300,
                                                          max_rounds=3, max_tokens_per_round=300)),
        ):  # fmt: skip
            before, t0 = fake.calls(), time.perf_counter()
            run()
            walls[stage], calls[stage] = time.perf_counter() - t0, fake.calls() - before
        total = time.perf_counter() - started
        with Warehouse(settings.warehouse_path, read_only=True) as wh:
            rows = {t: wh.scalar(f"SELECT count(*) FROM {t}") for t in ("qa", "gold_paths", "trajectories")}
    return {"wall_s": total, "stages_s": walls, "calls": calls, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--domains", type=int, default=4)
    ap.add_argument("--nodes", type=int, default=300, help="entities per domain graph")
    ap.add_argument("--seeds", type=int, default=12, help="seeds per domain")
    ap.add_argument("--latency", type=float, default=0.1, help="seconds per fake LLM call")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=8,
                    help="jobs per generation and gold-path batch (a quarter of it per distillation batch): several "
                         "batches per domain, so that there is something to spread over the nodes")
    ap.add_argument("--num-cpus", type=int, default=1, help="CPUs each Ray node offers")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    from prefect.testing.utilities import prefect_test_harness

    load_before = os.getloadavg()
    sides: dict[str, list[dict]] = {"one_node": [], "two_nodes": []}
    fake = FakeProcess(args.latency)
    cluster = rc.new_cluster(ROOT / ".venv" / "bin" / "ray", Path(tempfile.mkdtemp(prefix="bench-ray-nodes-")))
    try:
        with tempfile.TemporaryDirectory() as tmp, prefect_test_harness(server_startup_timeout=120):
            world = _world(Path(tmp), fake.base_url, args)
            cluster.start_head(num_cpus=args.num_cpus)
            cluster.wait_alive([rc.HEAD_IP])
            run_side(fake, world, cluster.address, args)  # warm-up: imports, the job's first workers
            for _ in range(args.repeat):
                sides["one_node"].append(run_side(fake, world, cluster.address, args))
                node = cluster.add_node("node2", NODE_IP, num_cpus=args.num_cpus)
                cluster.wait_alive([rc.HEAD_IP, NODE_IP])
                sides["two_nodes"].append(run_side(fake, world, cluster.address, args))
                cluster.remove_node(node)
                cluster.nodes.remove(node)
                cluster.wait_alive([rc.HEAD_IP])
        shutil.rmtree(cluster.logs, ignore_errors=True)  # the nodes' logs are kept only when the run failed
    finally:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        rc.remove(cluster)
        fake.close()
    load_after = os.getloadavg()
    rows = {tuple(sorted(r["rows"].items())) for v in sides.values() for r in v}
    assert len(rows) == 1, f"every run must store the same rows: {rows}"
    assert all(n > 0 for _, n in next(iter(rows))), f"the workload made nothing: {rows}"
    med = {k: statistics.median(r["wall_s"] for r in v) for k, v in sides.items()}
    stages = {k: {s: round(statistics.median(r["stages_s"][s] for r in v), 2) for s in v[0]["stages_s"]}
              for k, v in sides.items()}  # fmt: skip
    report = {
        "workload": {"domains": args.domains, "nodes": args.nodes, "seeds_per_domain": args.seeds,
                     "batch_size": args.batch_size,
                     "latency_s": args.latency, "concurrency": args.concurrency, "stages": list(stages["one_node"]),
                     "rows": dict(sides["one_node"][0]["rows"]), "llm_calls": sides["one_node"][0]["calls"]},
        "cpus_per_node": args.num_cpus, "repeat": args.repeat,
        "machine": {"cores": os.cpu_count(), "load_before": [round(x, 2) for x in load_before],
                    "load_after": [round(x, 2) for x in load_after]},
        "one_node_median_s": round(med["one_node"], 2), "two_nodes_median_s": round(med["two_nodes"], 2),
        "two_nodes_over_one": round(med["two_nodes"] / med["one_node"], 2),
        "stages_median_s": stages,
        "walls_s": {k: [round(r["wall_s"], 2) for r in v] for k, v in sides.items()},
        "note": "both nodes run on this one machine, each offering --num-cpus logical CPUs (batches at once), and "
                "share its cores with the driver, the fake endpoint, the Prefect server and other users' work: the "
                "gain is more batches at once on the machine's cores, net of a second raylet's overhead, not a "
                "second machine's cores",
    }  # fmt: skip
    print(json.dumps(report, indent=2))
    save_report(report, args.json)


if __name__ == "__main__":
    main()
