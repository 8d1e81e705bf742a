"""Benchmark: the pipeline over many generated domains against the fake endpoint with a fixed latency: how close
each LLM stage runs to the endpoint's floor, and what a rerun costs.

``--domains`` seeded power-law graphs (``--nodes`` each: a preferential-attachment tree plus ``--extra * n`` random
relations, every entity named and described, every relation labelled) are imported with the ``import-graphs`` flow;
then the stages run through their real flows, as a factory run would: ``generate-qa`` (candidates mode, ``--seeds``
seeds per domain, generator + judge), ``verify-paths``, ``distill-trajectories`` (template, rollouts, CoT) and
``evaluate-policy`` (tools and no-tools; every question by default, ``--eval-split test`` for the factory's share).
Every role points at one fake endpoint in a child process (so serving HTTP costs this process nothing) that answers
every chat call after ``--latency`` seconds, with ``max_concurrency = --concurrency`` for every role (one endpoint:
one limit).

For each stage: the endpoint calls it made (counted by the fake), its wall time, its saturation = floor / wall with
floor = calls x latency / concurrency (1.0: the endpoint never idled; ``bound`` is the most a stage can reach when
its calls take whole rounds of ``latency``, every slot busy in every round but the last), and the CPU time the flow's process spent
(CPU near wall x cores means the stage waits on the machine, not on the endpoint). Then every stage runs again on
the same warehouse and cache (a rerun: nothing left to do) and ``rerun/first`` is the rerun's wall over the first
run's, per stage and for the four stages together (goal < 0.05). A flow run with nothing to do costs ~0.1-0.25 s
here: Prefect's flow-run bookkeeping (``flows.runtime`` lets the engine end a run without joining its heartbeat
thread, which sleeps in one-second steps; before, every run was rounded up to the next whole second of that
clock, and a rerun took ~1.08 s). At 0.5 s latency the calls themselves come in 0.5 s rounds.

Where a stage's wall goes is printed with it: the CPU seconds of this process (GIL-bound: near 1 s per wall second
means the flow's own Python work paces it), of the fake and of the Prefect test server (both on the same cores),
the machine's busy share (all cores, every process, other users included), the time before the stage's first
endpoint call and after its last one, and the mean share of the endpoint's slots held between them. A slot is
held from sending a request to reading its answer, so slots held x latency above calls x latency is time the
answers waited for this process.

    python bench/bench_pipeline.py                              # 20 domains x 3000 nodes, 0.5 s, concurrency 64
    python bench/bench_pipeline.py --domains 4 --nodes 500 --seeds 10 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # runnable as a plain script from any directory
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("DO_NOT_TRACK", "1")


from bench.bench_scale import write_triples  # noqa: E402
from bench.results_file import save_report  # noqa: E402

STAGES = ("generation", "gold_paths", "distillation", "evaluation")


# -- the fake endpoint (child process) -------------------------------------------------------------------------------
def _prompt(body: dict) -> str:
    return "\n".join(str(m.get("content")) for m in body["messages"])


def _pick(body: dict) -> dict:
    text = _prompt(body)
    seed = re.search(r"Candidate paths starting at (['\"])(.+?)\1;", text).group(2)
    pid = sorted(re.findall(r"^(P\d+): ", text, re.M))[0]
    return {"path_id": pid, "question": f"Starting from {seed}, which entity does this chain of relations lead to?"}


def _verdicts(body: dict) -> dict:
    ids = body["response_format"]["json_schema"]["schema"]["properties"]["verdicts"]["items"]["properties"][
        "path_id"]["enum"]
    return {"verdicts": [{"path_id": i, "valid": True, "reason": "each hop is stated"} for i in ids]}


def answer_every_stage(fake: Any) -> None:
    """The fake's replies for every LLM stage of the factory: a path pick, a valid judgement, verdicts on gold
    paths, and a short answer to every free-text call (rollouts, long CoT, evaluation)."""
    fake.add(schema_name="qa_pick_path", reply=_pick)
    fake.add(schema_name="qa_judgement", reply={"valid": True, "reason": "clear and multi-hop"})
    fake.add(schema_name="gold_path_verdicts", reply=_verdicts)
    fake.add(predicate=lambda b: "response_format" not in b,
             reply="<think>The relations lead there.</think>\n<answer>unknown</answer>")


def serve_fake(latency: float) -> None:
    """Child process: the fake endpoint. Each line on stdin asks for the number of chat calls so far; EOF stops."""
    from testing.fake import FakeOpenAI, Fault

    with FakeOpenAI(default_fault=Fault(latency_s=latency)) as fake:
        answer_every_stage(fake)
        print(fake.base_url, flush=True)
        for _ in sys.stdin:
            print(fake.calls(), time.process_time(), flush=True)


class FakeProcess:
    def __init__(self, latency: float) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve-fake", str(latency)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.base_url = self.proc.stdout.readline().strip()

    def calls(self) -> int:
        return self.poll()[0]

    def poll(self) -> tuple[int, float]:
        """The fake's chat calls so far and the CPU seconds its process has spent."""
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        calls, cpu = self.proc.stdout.readline().split()
        return int(calls), float(cpu)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


# -- the run ----------------------------------------------------------------------------------------------------------
def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has spent, from /proc (0 where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    """Every descendant process of ``pid`` (Linux /proc; empty elsewhere)."""
    parents: dict[int, list[int]] = {}
    for d in Path("/proc").glob("[0-9]*"):
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def _machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, every core, from /proc/stat."""
    try:
        ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return 0.0, 0.0
    hz = os.sysconf("SC_CLK_TCK")
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    return (sum(ticks) - idle) / hz, sum(ticks) / hz


class Occupancy:
    """Samples, every ``period`` s, how many endpoint slots this process holds (the gateway's limiters): where a
    stage's wall goes. ``head_s``: before its first request; ``tail_s``: after its last one ends; ``mid``: mean
    share of the concurrency in use between them (1.0: the endpoint never idled while the stage ran)."""

    def __init__(self, concurrency: int, period: float = 0.02) -> None:
        import threading

        self.concurrency, self.period = concurrency, period
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> tuple:
        """One sample: the time and the endpoint slots this process holds."""
        from gateway.client import _LIMITERS

        return time.perf_counter(), sum(lim.in_use for lim in list(_LIMITERS.values()))

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(self._sample())
            self._stop.wait(self.period)

    def __enter__(self) -> "Occupancy":
        self.started = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.ended = time.perf_counter()

    def report(self) -> dict[str, float]:
        busy = [(t, n) for t, n in self.samples if n > 0]
        if not busy:
            return {"head_s": round(self.ended - self.started, 2), "tail_s": 0.0, "mid": 0.0}
        first, last = busy[0][0], busy[-1][0]
        mid = [n for t, n in self.samples if first <= t <= last]
        return {"head_s": round(first - self.started, 2), "tail_s": round(self.ended - last, 2),
                "mid": round(sum(mid) / len(mid) / self.concurrency, 3)}


def run_stages(settings: Any, domains: list[str], args: argparse.Namespace, fake: FakeProcess) -> dict[str, dict]:
    """Each LLM stage once through its flow: wall time and endpoint calls."""
    from flows.distill import distill_trajectories
    from flows.evaluate import evaluate_policy
    from flows.qa import generate_qa, verify_paths

    limits = {"max_rounds": 3, "max_tokens_per_round": 300}
    stages = {
        "generation": lambda: generate_qa(domains=domains, n_seeds=args.seeds, modes=["candidates"],
                                          settings=settings),
        "gold_paths": lambda: verify_paths(domains=domains, settings=settings),
        "distillation": lambda: distill_trajectories(domains=domains, n_rollouts=args.rollouts, settings=settings,
                                                     cot_max_tokens=300, **limits),
        "evaluation": lambda: evaluate_policy(split=args.eval_split, domains=domains, settings=settings, **limits),
    }
    out: dict[str, dict] = {}
    for name in STAGES:
        before, fake_cpu = fake.poll()
        others = [p for p in _children(os.getpid()) if p != fake.proc.pid]  # the Prefect test server
        others_cpu = sum(_proc_cpu(p) for p in others)
        busy0, total0 = _machine_busy()
        cpu = time.process_time()
        started = time.perf_counter()
        with Occupancy(args.concurrency) as occ:
            result = stages[name]()
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu
        after, fake_after = fake.poll()
        others_cpu = sum(_proc_cpu(p) for p in others) - others_cpu
        busy1, total1 = _machine_busy()
        machine = (busy1 - busy0) / (total1 - total0) if total1 > total0 else None
        calls, fake_cpu = after - before, fake_after - fake_cpu
        floor = calls * args.latency / args.concurrency
        rounds = -(-calls // args.concurrency) * args.latency  # every slot busy in every round but the last
        out[name] = {"wall_s": round(wall, 2), "calls": calls, "floor_s": round(floor, 2),
                     "saturation": round(floor / wall, 3) if wall > 0 else None,
                     "bound": round(floor / rounds, 3) if rounds > 0 else None,
                     "cpu_s": round(cpu, 2), "fake_cpu_s": round(fake_cpu, 2), "server_cpu_s": round(others_cpu, 2),
                     "machine_busy": round(machine, 3) if machine is not None else None,
                     "cache_hits": result.get("llm_cache_hits", 0), **occ.report()}
        print(f"  {name:<13} {calls:>6} calls  wall {wall:8.2f} s  floor {floor:7.2f} s  "
              f"saturation {out[name]['saturation']} (at most {out[name]['bound']} in whole rounds)  (CPU: this process {cpu:.1f} s, the fake {fake_cpu:.1f} s, "
              f"the Prefect server {others_cpu:.1f} s; machine busy {out[name]['machine_busy']}; "
              f"before the first call {out[name]['head_s']} s, after the last {out[name]['tail_s']} s, "
              f"slots in use between them {out[name]['mid']})", flush=True)
        if name == args.until:
            break
    return out


def import_domains(tmp: str, args: argparse.Namespace, fake: Any, embeddings: dict[str, Any] | None = None,
                   runner: dict[str, Any] | None = None) -> tuple[Any, list[str], float]:
    """``args.domains`` generated graphs of ``args.nodes`` nodes imported into a warehouse under ``tmp``, every
    LLM role (and the embeddings, plus ``embeddings``) on ``fake``; the settings, the domains and the import's
    seconds. The meaning check (a verifier call before each judge call) is off: the fake answers every call
    alike, and the figures compare with runs from before the check existed. The generated graphs' labels ("part
    of", "member of", ...) name many things in the world, so the shipped lexicon would refuse nearly every hop: a
    benchmark of endpoint saturation needs the jobs, not their meaning, so it stores the profiles a user's file
    would give to say every label names one thing each way."""
    from testing.permissive_profiles import store_one_each_way
    from flows.graphs import import_graphs
    from schemas.config import load_settings
    from warehouse.db import Warehouse
    from warehouse.graphs import load_graph

    files = {}
    for i in range(args.domains):
        name = f"dom{i:02d}"
        files[name] = str(Path(tmp) / f"{name}.jsonl")
        write_triples(Path(files[name]), args.nodes, args.extra, args.seed + i, readable=True)
    ep = {"base_url": fake.base_url, "model": "fake-model", "max_concurrency": args.concurrency,
          "max_retries": 1, "timeout_s": 60}
    roles = {r: ep for r in ("generator", "verifier", "teacher", "judge", "policy")}
    settings = load_settings(data_dir=Path(tmp) / "data", roles=roles, runner=runner or {},
                             embeddings={"base_url": fake.base_url, "model": "fake-embed", "dim": 16, **(embeddings or {})},
                             quality={"meaning_check": "off"})  # fmt: skip
    started = time.perf_counter()
    imported = import_graphs(files=files, settings=settings)
    import_s = round(time.perf_counter() - started, 2)
    if imported["failures"]:
        raise SystemExit(f"import failed: {imported['failures']}")
    domains = sorted(imported["imported"])
    with Warehouse(settings.warehouse_path) as wh:
        store_one_each_way(wh, [load_graph(wh, d) for d in domains], run_id="bench-profiles")
    return settings, domains, import_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--domains", type=int, default=20)
    ap.add_argument("--nodes", type=int, default=3000, help="nodes per domain")
    ap.add_argument("--extra", type=float, default=0.5, help="random relations per node beyond the tree")
    ap.add_argument("--seeds", type=int, default=40, help="seeds per domain for generate-qa")
    ap.add_argument("--rollouts", type=int, default=2)
    ap.add_argument("--eval-split", default="none", help="split to evaluate (none: every question)")
    ap.add_argument("--latency", type=float, default=0.5, help="seconds per fake chat call")
    ap.add_argument("--concurrency", type=int, default=64, help="max_concurrency of the endpoint")
    ap.add_argument("--workers", type=int, default=None, help="runner.max_workers (default: the runner's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--until", choices=STAGES, help="stop after this stage's first run (no rerun, no summary): "
                    "for profiling one stage, e.g. under py-spy")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    args.eval_split = None if args.eval_split == "none" else args.eval_split

    from prefect.testing.utilities import prefect_test_harness

    report: dict[str, Any] = {"cpus": os.cpu_count(), "load_avg_before": round(os.getloadavg()[0], 2),
                              **{k: v for k, v in vars(args).items() if k != "json"}}
    fake = FakeProcess(args.latency)
    try:
        with tempfile.TemporaryDirectory() as tmp, prefect_test_harness(server_startup_timeout=120):
            runner = {"max_workers": args.workers} if args.workers else {}
            settings, domains, report["import_s"] = import_domains(tmp, args, fake, runner=runner)
            print(f"{len(domains)} domains of {args.nodes} nodes imported in {report['import_s']} s; "
                  f"latency {args.latency} s, concurrency {args.concurrency}")
            print("first run:", flush=True)
            first = run_stages(settings, domains, args, fake)
            if args.until:
                return
            print("rerun (same warehouse and cache):", flush=True)
            again = run_stages(settings, domains, args, fake)
    finally:
        fake.close()
    report["first"] = first
    report["rerun"] = again
    report["rerun_over_first"] = {s: round(again[s]["wall_s"] / first[s]["wall_s"], 3) for s in STAGES}
    llm = ("generation", "gold_paths", "distillation")
    total_first = sum(first[s]["wall_s"] for s in STAGES)
    total_again = sum(again[s]["wall_s"] for s in STAGES)
    report["rerun_over_first"]["all"] = round(total_again / total_first, 3)
    report["rerun_calls"] = sum(again[s]["calls"] for s in STAGES)
    report["load_avg_after"] = round(os.getloadavg()[0], 2)
    print()
    print(f"{'stage':<13} {'calls':>6} {'floor_s':>8} {'wall_s':>8} {'saturation':>10} {'bound':>6} {'cpu_s':>7} {'fake_cpu':>8} "
          f"{'rerun_s':>8} "
          f"{'rerun/first':>11}")
    for s in STAGES:
        f, a = first[s], again[s]
        print(f"{s:<13} {f['calls']:>6} {f['floor_s']:>8.2f} {f['wall_s']:>8.2f} {f['saturation']:>10.3f} {f['bound']:>6.3f} "
              f"{f['cpu_s']:>7.1f} {f['fake_cpu_s']:>8.1f} {a['wall_s']:>8.2f} {report['rerun_over_first'][s]:>11.3f}")
    print(f"{'all':<13} {sum(first[s]['calls'] for s in STAGES):>6} "
          f"{sum(first[s]['floor_s'] for s in STAGES):>8.2f} {total_first:>8.2f} "
          f"{sum(first[s]['floor_s'] for s in STAGES) / total_first:>10.3f} {'':>6} "
          f"{sum(first[s]['cpu_s'] for s in STAGES):>7.1f} {sum(first[s]['fake_cpu_s'] for s in STAGES):>8.1f} "
          f"{total_again:>8.2f} "
          f"{report['rerun_over_first']['all']:>11.3f}")
    print(f"targets: saturation >= 0.9 for {', '.join(llm)}; rerun/first < 0.05 "
          f"(rerun made {report['rerun_calls']} endpoint calls)")
    print(json.dumps(report))
    save_report(report, args.json)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve-fake":
        serve_fake(float(sys.argv[2]))
    else:
        main()
