"""QA generation throughput against the loopback fake endpoint with a fixed latency.

Runs candidates-mode jobs (generator + judge per attempt, code checks in between) on the demo reference graphs.
The floor on wall time is calls·L/C; the benchmark reports achieved/ideal (target >= 0.9).

The demo graphs' labels ("part of", "member of", ...) name many things in the world, so the shipped lexicon would
refuse most hops and most jobs would end before their first call. The jobs read the profiles of
``testing.permissive_profiles`` instead (every label one thing each way) and run with the meaning check off (the fake
answers every call alike), and the run stops when fewer than ``CALL_FLOOR`` calls a job were made or fewer than
``ACCEPT_FLOOR`` of the jobs were accepted: the ratio would then measure refusals, not saturation.

    python bench/bench_generation.py [--jobs 400] [--latency 0.2] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from testing.permissive_profiles import one_each_way  # noqa: E402
from bench.results_file import save_report  # noqa: E402
from gateway.client import LLMGateway  # noqa: E402
from testing.fake import FakeOpenAI, Fault  # noqa: E402
from schemas.config import load_settings  # noqa: E402
from tasks.graph.importers import read_triples  # noqa: E402
from tasks.graph.kg import KnowledgeGraph  # noqa: E402
from tasks.qa.generate import GenConfig, run_job  # noqa: E402
from tasks.qa.seeds import eligible_seeds, sample_seeds  # noqa: E402

DEMO = Path(__file__).resolve().parent.parent / "flows" / "demo" / "graphs"
CALL_FLOOR = 1.5  # endpoint calls a job, at least (a candidates job that reaches the model asks generator and judge)
ACCEPT_FLOOR = 0.5  # share of jobs accepted, at least


def pick(body):
    text = "\n".join(str(m.get("content")) for m in body["messages"])
    seed = re.search(r"Candidate paths starting at (['\"])(.+?)\1;", text).group(2)
    return {"path_id": "P1", "question": f"Starting from {seed}, where does this chain of relations lead?"}


def add_replies(fake: FakeOpenAI) -> None:
    """The fake's answers: the generator picks the first candidate path, the judge accepts."""
    fake.add(schema_name="qa_pick_path", reply=pick)
    fake.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})


def demo_jobs(n_jobs: int) -> list[tuple[KnowledgeGraph, Any, str]]:
    """``n_jobs`` (graph, seed, hop class) jobs over the demo graphs, cycling through their eligible seeds."""
    graphs = [read_triples(p, p.stem).to_graph(snapshot_id=p.stem) for p in sorted(DEMO.glob("*.jsonl"))]
    jobs = []
    for kg in graphs:
        seeds = sample_seeds(eligible_seeds(kg), 10_000, 0, domain=kg.domain)
        jobs += [(kg, s, hop) for s in seeds for hop in ("1-2", "3+")]
    return (jobs * (n_jobs // len(jobs) + 1))[:n_jobs]


def bench_config(graphs: list[KnowledgeGraph]) -> GenConfig:
    """Candidates-mode settings whose jobs reach the model: one-each-way profiles for every label, no meaning check."""
    profiles: dict[str, dict[str, str]] = {}
    for kg in graphs:
        profiles.update(one_each_way(kg.relations()))
    return GenConfig(profiles=profiles, meaning_check="off")


async def run_jobs(gw: LLMGateway, jobs: list[tuple[KnowledgeGraph, Any, str]], cfg: GenConfig,
                   concurrency: int) -> tuple[float, list[Any]]:
    """Every job through ``gw``; returns the wall time and the jobs' results."""
    started = time.perf_counter()
    results = await gw.gather(
        (run_job(gw, kg, seed, hop, "candidates", run_id=f"bench-{i}", cfg=cfg)
         for i, (kg, seed, hop) in enumerate(jobs)),
        limit=2 * concurrency,
    )
    await gw.aclose()
    return time.perf_counter() - started, results


def too_few(jobs: int, calls: int, accepted: int) -> str | None:
    """Why the run measures refusals rather than saturation (below ``CALL_FLOOR`` or ``ACCEPT_FLOOR``), or None."""
    if calls < CALL_FLOOR * jobs:
        return (f"{jobs} jobs made {calls} endpoint calls (floor {CALL_FLOOR:g} a job): most jobs ended before the "
                "model, so achieved/ideal does not measure saturation")
    if accepted < ACCEPT_FLOOR * jobs:
        return f"{accepted} of {jobs} jobs accepted (floor {ACCEPT_FLOOR:.0%}): the checks refuse the fake's questions"
    return None


def serve_fake(latency: float) -> None:
    """Child process: the fake endpoint, so its CPU does not share the benchmark's interpreter lock."""
    with FakeOpenAI(default_fault=Fault(latency_s=latency)) as fake:
        add_replies(fake)
        print(fake.base_url, flush=True)
        sys.stdin.read()  # until the parent closes the pipe
        print(fake.calls(), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=400)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--json", type=Path, help="also write the report here")
    args = ap.parse_args()

    jobs = demo_jobs(args.jobs)
    cfg = bench_config(list({id(kg): kg for kg, _, _ in jobs}.values()))

    child = subprocess.Popen(
        [sys.executable, __file__, "--serve-fake", str(args.latency)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True,
    )
    base_url = child.stdout.readline().strip()
    with tempfile.TemporaryDirectory() as tmp:
        ep = {"base_url": base_url, "model": "fake-model", "max_concurrency": args.concurrency}
        settings = load_settings(data_dir=Path(tmp), roles={"generator": ep, "verifier": ep}, cache={"mode": "off"})
        gw = LLMGateway(settings)
        wall, results = asyncio.run(run_jobs(gw, jobs, cfg, args.concurrency))
    child.stdin.close()
    calls = int(child.stdout.readline())
    child.wait(timeout=30)
    ideal = calls * args.latency / args.concurrency
    accepted = sum(r.qa is not None for r in results)
    usage = gw.ledger.role("generator")
    busy = usage.latency_s_total / wall  # mean requests in flight (client-side latency includes queueing at the server)
    report = {"mean_call_latency_s": round(usage.latency_s_total / max(usage.calls, 1), 4),
              "mean_in_flight": round(busy, 1), "jobs": len(jobs), "accepted": accepted, "endpoint_calls": calls, "latency_s": args.latency,
              "concurrency": args.concurrency, "wall_s": round(wall, 2), "ideal_wall_s": round(ideal, 2),
              "achieved_over_ideal": round(ideal / wall, 3), "jobs_per_s": round(len(jobs) / wall, 1)}
    print(f"generation: {len(jobs)} jobs, {calls} calls, L={args.latency * 1000:.0f} ms, C={args.concurrency}: "
          f"{wall:.2f} s (ideal {ideal:.2f} s) -> achieved/ideal = {report['achieved_over_ideal']:.3f}; "
          f"{accepted} accepted")
    print(json.dumps(report))
    save_report(report, args.json)
    why = too_few(len(jobs), calls, accepted)
    if why:
        raise SystemExit(why)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve-fake":
        serve_fake(float(sys.argv[2]))
    else:
        main()
