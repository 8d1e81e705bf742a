"""Benchmark: the whole wait a user sees for each LLM stage, from the flow call to its last write, against the
endpoint's floor, and where the rest of the wait went.

``bench_pipeline`` measures how close each stage's calls come to the endpoint's floor inside a process that has
its graphs and indexes at hand. A user's command starts from the warehouse: here every stage runs as a fresh
command would, its graphs read from the warehouse (the process's graph cache and tool environments are emptied
before each stage), its seeds scanned, the distillation's tool index embedded through an OpenAI-compatible
embeddings endpoint (the fake's, with a latency of its own), and its results written.

Setup: ``--domains`` seeded power-law graphs of ``--nodes`` readable entities (``bench.bench_scale.write_triples``)
imported with ``import-graphs``; one fake endpoint in a child process answers every chat call after ``--latency``
seconds and every embeddings request (``--embed-batch`` texts) after ``--embed-latency`` seconds; every role has
``max_concurrency = --concurrency`` and the embedder ``--embed-concurrency``. The stages run through their flows:
``generate-qa`` (candidates mode, ``--seeds`` seeds a domain, generator + judge), ``verify-paths``,
``distill-trajectories`` (template, rollouts, CoT). Then every stage runs again on the same warehouse, LLM cache
and index cache (the rerun). The relation profiles are ``testing.permissive_profiles``' (every label one thing each
way), so walks find paths; the meaning check is off (the fake answers every call alike).

**The floor** of a stage is the least wall time its endpoint calls allow:
``max(calls x latency / concurrency, embed_calls x embed_latency / embed_concurrency)``: the time the chat
endpoint needs if none of its slots ever idles, or the embeddings endpoint's, whichever is longer. The two do not
add: nothing makes a chat call wait for the whole index (CoT jobs need no tools, and one domain's index is built
while other domains' calls run), so the index build can hide entirely behind the chat calls. Graph loads, seed
scans, writes and the flow's own work are not in the floor: they are what the benchmark looks for.
``saturation = floor / wall``; target >= 0.9 for every stage. ``bound`` is the most a stage can reach when its calls
come in whole rounds of ``latency`` (``calls / (ceil(calls / concurrency) x concurrency)``).

**Where the rest went.** Each stage's wall is ``floor`` plus a remainder. A sampler (every 20 ms) reads how many
chat slots this process holds (the gateway's limiters) and which of these are under way, timed by wrappers:
``graph_load`` (a snapshot read from the warehouse and built into a graph), ``seed_scan`` (eligible seeds and the
sample), ``job_prep`` (generation jobs being prepared: their rendered subgraphs and candidates, in the batch on this
process's event loop, or ahead in forked processes, ``flows.batches.Ahead``), ``index_build`` (an entity index
loaded or embedded, including a wait for another thread's build of the same one), ``writes`` (warehouse
transactions and batch writes). Each tick's idle share of the chat endpoint
(``1 - slots in use / concurrency``) is charged to the activities under way then (split evenly), to
``partial_rounds`` when calls are in flight and none of them is (a round of calls that does not fill every slot:
dependent rounds, a domain's last jobs), or to ``other`` when no call is in flight and none is under way (the
flow's bookkeeping, Prefect, planning). ``slot_overhead`` is the time slots were held beyond the fake's latency
(the answers waited for this process). Each activity's own wall time (``busy_s``: ticks in which it was under way,
idle endpoint or not) is reported beside it. ``cpu_s`` is this process's CPU, ``children_cpu_s`` that of the
processes it forked and reaped during the stage (jobs prepared ahead), ``fake_cpu_s`` the fake endpoint's.

    python bench/bench_whole_wait.py                    # 20 domains x 3000 nodes, 60 seeds, 0.5 s, concurrency 64
    python bench/bench_whole_wait.py --small            # 4 domains x 500 nodes, 10 seeds
    python bench/bench_whole_wait.py --json bench/results/whole_wait.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # runnable as a plain script from any directory
    sys.path.insert(0, str(ROOT))

# Prefect's settings for a benchmark (no analytics, a patient server start) are bench_pipeline's, set on import.

from bench.bench_pipeline import Occupancy, _machine_busy, answer_every_stage, import_domains  # noqa: E402
from bench.results_file import save_report  # noqa: E402

STAGES = ("generation", "gold_paths", "distillation")
ACTIVITIES = ("graph_load", "seed_scan", "job_prep", "index_build", "writes")
TARGET = 0.9


# -- the fake endpoint (child process) -------------------------------------------------------------------------------
def serve_fake(latency: float, embed_latency: float) -> None:
    """Child process: the fake endpoint. Each stdin line asks for (chat calls, embeddings calls, CPU s); EOF stops."""
    from testing.fake import FakeOpenAI, Fault

    with FakeOpenAI(default_fault=Fault(latency_s=latency), embedding_fault=Fault(latency_s=embed_latency)) as fake:
        answer_every_stage(fake)
        print(fake.base_url, flush=True)
        for _ in sys.stdin:
            print(fake.calls(), fake.calls("/embeddings"), time.process_time(), flush=True)


class FakeProcess:
    def __init__(self, latency: float, embed_latency: float) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve-fake", str(latency), str(embed_latency)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.base_url = self.proc.stdout.readline().strip()

    def poll(self) -> tuple[int, int, float]:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        chat, embed, cpu = self.proc.stdout.readline().split()
        return int(chat), int(embed), float(cpu)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


# -- timing what a stage does besides calling the endpoint -----------------------------------------------------------
class Activities:
    """How many of each activity are under way right now (wrappers count in and out)."""

    def __init__(self) -> None:
        self.active: Counter = Counter()
        self._lock = threading.Lock()

    def wrap(self, name: str, fn: Callable) -> Callable:
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.active[name] += 1
            try:
                return fn(*args, **kwargs)
            finally:
                with self._lock:
                    self.active[name] -= 1

        timed.__wrapped__ = fn  # type: ignore[attr-defined]
        return timed

    def now(self) -> list[str]:
        with self._lock:
            return [a for a in ACTIVITIES if self.active[a] > 0]


def instrument(acts: Activities) -> None:
    """Wrap the functions that load graphs, scan seeds, build indexes and write, where the flows look them up."""
    from contextlib import contextmanager

    import tasks.qa.generate
    import tasks.qa.seed_plan
    import warehouse.graphs
    from flows.batches import Ahead
    from tasks.env.index import GraphIndex
    from warehouse.db import Warehouse

    real_cached = warehouse.graphs.cached_graph

    def cached_graph(snapshot_id, build):  # only a real read (a cache miss) is a graph load
        return real_cached(snapshot_id, acts.wrap("graph_load", build))

    warehouse.graphs.cached_graph = cached_graph
    tasks.qa.seed_plan.eligible_seeds = acts.wrap("seed_scan", tasks.qa.seed_plan.eligible_seeds)
    tasks.qa.seed_plan.sample_seeds = acts.wrap("seed_scan", tasks.qa.seed_plan.sample_seeds)
    prepared = tasks.qa.generate._prepared  # a job prepared in its batch, on the event loop

    async def prepared_here(*args: Any) -> Any:
        with acts._lock:
            acts.active["job_prep"] += 1
        try:
            return await prepared(*args)
        finally:
            with acts._lock:
                acts.active["job_prep"] -= 1

    tasks.qa.generate._prepared = prepared_here
    Ahead._read = acts.wrap("job_prep", Ahead._read)  # a forked process preparing jobs ahead, until it is reaped
    GraphIndex._load_or_build = acts.wrap("index_build", GraphIndex._load_or_build)
    Warehouse.write_batch = acts.wrap("writes", Warehouse.write_batch)
    Warehouse.write = acts.wrap("writes", Warehouse.write)
    real_tx = Warehouse.transaction

    @contextmanager
    def transaction(self):
        with acts._lock:
            acts.active["writes"] += 1
        try:
            with real_tx(self) as con:
                yield con
        finally:
            with acts._lock:
                acts.active["writes"] -= 1

    Warehouse.transaction = transaction


class Sampler(Occupancy):
    """Every ``period`` s: chat slots this process holds (``Occupancy``) and the activities under way; see the
    module docstring."""

    def __init__(self, acts: Activities, concurrency: int, period: float = 0.02) -> None:
        super().__init__(concurrency, period)
        self.acts = acts

    def _sample(self) -> tuple:
        return (*super()._sample(), self.acts.now())

    def report(self) -> dict[str, Any]:
        idle: Counter = Counter()
        busy: Counter = Counter()
        slot_s = 0.0
        points = [*self.samples, (self.ended, 0, [])]
        first_call = next((t for t, n, _ in self.samples if n > 0), None)
        last_call = next((t for t, n, _ in reversed(self.samples) if n > 0), None)
        for (t, n, acts), (t_next, _, _) in zip(points, points[1:]):
            dt = t_next - t
            used = min(n, self.concurrency) / self.concurrency
            slot_s += used * dt
            for a in acts:
                busy[a] += dt
            gap = (1.0 - used) * dt
            if acts:
                for a in acts:
                    idle[a] += gap / len(acts)
            else:
                idle["partial_rounds" if n > 0 else "other"] += gap
        return {"slots_full_s": round(slot_s, 2),
                "idle_s": {k: round(idle[k], 2) for k in (*ACTIVITIES, "partial_rounds", "other")},
                "busy_s": {a: round(busy[a], 2) for a in ACTIVITIES},
                "head_s": round((first_call or self.ended) - self.started, 2),
                "tail_s": round(self.ended - (last_call or self.ended), 2)}


# -- the run ----------------------------------------------------------------------------------------------------------
def fresh_process_caches() -> None:
    """Forget what an earlier stage left in this process (graphs, tool environments): a command starts empty."""
    import gc

    import flows.tools_env
    import tasks.graph.kg

    with tasks.graph.kg._GRAPHS_LOCK:
        tasks.graph.kg._GRAPHS.clear()
    with flows.tools_env._ENVS_LOCK:
        flows.tools_env._ENVS.clear()
    gc.unfreeze()
    gc.collect()


def _children_cpu() -> float:
    """CPU seconds of this process's reaped children (the fake's child process is reaped only at the end)."""
    t = os.times()
    return t.children_user + t.children_system


def run_stages(settings: Any, domains: list[str], args: argparse.Namespace, fake: FakeProcess,
               acts: Activities) -> dict[str, dict]:
    from flows.distill import distill_trajectories
    from flows.qa import generate_qa, verify_paths

    stages = {
        "generation": lambda: generate_qa(domains=domains, n_seeds=args.seeds, modes=["candidates"],
                                          settings=settings),
        "gold_paths": lambda: verify_paths(domains=domains, settings=settings),
        "distillation": lambda: distill_trajectories(domains=domains, n_rollouts=args.rollouts, settings=settings,
                                                     cot_max_tokens=300, max_rounds=3, max_tokens_per_round=300),
    }
    out: dict[str, dict] = {}
    for name in STAGES:
        fresh_process_caches()
        chat0, embed0, fake_cpu0 = fake.poll()
        busy0, total0 = _machine_busy()
        cpu, children = time.process_time(), _children_cpu()
        started = time.perf_counter()
        with Sampler(acts, args.concurrency) as sampler:
            stages[name]()
        wall = time.perf_counter() - started
        cpu, children = time.process_time() - cpu, _children_cpu() - children
        chat1, embed1, fake_cpu1 = fake.poll()
        busy1, total1 = _machine_busy()
        calls, embeds = chat1 - chat0, embed1 - embed0
        chat_floor = calls * args.latency / args.concurrency
        embed_floor = embeds * args.embed_latency / args.embed_concurrency
        floor = max(chat_floor, embed_floor)
        rounds = -(-calls // args.concurrency) * args.concurrency
        where = sampler.report()
        where["slot_overhead_s"] = round(max(0.0, where["slots_full_s"] - chat_floor), 2)
        out[name] = {"wall_s": round(wall, 2), "calls": calls, "embed_calls": embeds,
                     "chat_floor_s": round(chat_floor, 2), "embed_floor_s": round(embed_floor, 2),
                     "floor_s": round(floor, 2), "saturation": round(floor / wall, 3) if wall > 0 else None,
                     "bound": round(calls / rounds, 3) if rounds else None, "cpu_s": round(cpu, 2),
                     "children_cpu_s": round(children, 2), "fake_cpu_s": round(fake_cpu1 - fake_cpu0, 2),
                     "machine_busy": round((busy1 - busy0) / (total1 - total0), 3) if total1 > total0 else None,
                     **where}
        idle = ", ".join(f"{k} {v}" for k, v in where["idle_s"].items() if v)
        print(f"  {name:<13} {calls:>6} calls {embeds:>5} embed calls  wall {wall:8.2f} s  floor {floor:7.2f} s  "
              f"saturation {out[name]['saturation']}  (rest: {idle}; slot overhead {where['slot_overhead_s']} s; "
              f"head {where['head_s']} s, tail {where['tail_s']} s; CPU {cpu:.1f} s, children {children:.1f} s; "
              f"machine busy "
              f"{out[name]['machine_busy']})", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--domains", type=int, default=20)
    ap.add_argument("--nodes", type=int, default=3000, help="nodes per domain")
    ap.add_argument("--extra", type=float, default=0.5, help="random relations per node beyond the tree")
    ap.add_argument("--seeds", type=int, default=60, help="seeds per domain for generate-qa")
    ap.add_argument("--small", action="store_true", help="4 domains x 500 nodes, 10 seeds (a quick check)")
    ap.add_argument("--rollouts", type=int, default=2)
    ap.add_argument("--latency", type=float, default=0.5, help="seconds per fake chat call")
    ap.add_argument("--concurrency", type=int, default=64, help="max_concurrency of every chat role")
    ap.add_argument("--embed-latency", type=float, default=0.2, help="seconds per fake embeddings request")
    ap.add_argument("--embed-concurrency", type=int, default=16, help="max_concurrency of the embeddings endpoint")
    ap.add_argument("--embed-batch", type=int, default=64, help="texts per embeddings request")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.small:
        args.domains, args.nodes, args.seeds = 4, 500, 10

    from prefect.testing.utilities import prefect_test_harness

    report: dict[str, Any] = {"cpus": os.cpu_count(), "load_avg_before": [round(x, 2) for x in os.getloadavg()],
                              **{k.replace("-", "_"): v for k, v in vars(args).items() if k != "json"}}
    acts = Activities()
    fake = FakeProcess(args.latency, args.embed_latency)
    try:
        with tempfile.TemporaryDirectory() as tmp, prefect_test_harness(server_startup_timeout=120):
            settings, domains, report["import_s"] = import_domains(
                tmp, args, fake, embeddings={"max_concurrency": args.embed_concurrency, "batch_size": args.embed_batch})
            instrument(acts)
            print(f"{len(domains)} domains of {args.nodes} nodes imported in {report['import_s']} s; chat latency "
                  f"{args.latency} s at concurrency {args.concurrency}, embeddings {args.embed_latency} s at "
                  f"{args.embed_concurrency} ({args.embed_batch} texts a request)", flush=True)
            print("first run:", flush=True)
            first = run_stages(settings, domains, args, fake, acts)
            print("rerun (same warehouse, LLM cache and index cache):", flush=True)
            again = run_stages(settings, domains, args, fake, acts)
    finally:
        fake.close()
    report["first"], report["rerun"] = first, again
    report["rerun_over_first"] = {s: round(again[s]["wall_s"] / first[s]["wall_s"], 3) for s in STAGES}
    report["rerun_calls"] = sum(again[s]["calls"] + again[s]["embed_calls"] for s in STAGES)
    report["target"] = TARGET
    report["met"] = {s: first[s]["saturation"] is not None and first[s]["saturation"] >= TARGET for s in STAGES}
    report["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    print()
    head = (f"{'stage':<13} {'calls':>6} {'embeds':>6} {'floor_s':>8} {'wall_s':>8} {'satur.':>7} {'bound':>6} "
            + " ".join(f"{a:>14}" for a in (*ACTIVITIES, "partial_rounds", "other")) + f" {'rerun_s':>8}")
    print(head)
    for s in STAGES:
        f = first[s]
        print(f"{s:<13} {f['calls']:>6} {f['embed_calls']:>6} {f['floor_s']:>8.2f} {f['wall_s']:>8.2f} "
              f"{f['saturation']:>7.3f} {f['bound']:>6.3f} "
              + " ".join(f"{f['idle_s'][a]:>14.2f}" for a in (*ACTIVITIES, "partial_rounds", "other"))
              + f" {again[s]['wall_s']:>8.2f}")
    print(f"target: saturation >= {TARGET} for every stage: "
          + ", ".join(f"{s} {'met' if ok else 'missed'}" for s, ok in report["met"].items())
          + f"; the rerun made {report['rerun_calls']} endpoint calls")
    save_report(report, args.json)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--serve-fake":
        serve_fake(float(sys.argv[2]), float(sys.argv[3]))
    else:
        main()
