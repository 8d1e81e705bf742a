"""Gateway throughput against the loopback fake endpoint.

N structured calls with a fixed endpoint latency L at concurrency C cannot finish faster than N·L/C; the
benchmark reports achieved/ideal throughput (target >= 0.9 for N=2000, L=200 ms, C=32), then repeats the same
calls with a warm cache (target: 0 endpoint calls, under 5% of the first run's wall time).

    python bench/bench_gateway.py [--n 2000] [--latency 0.2] [--concurrency 32] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic import BaseModel  # noqa: E402

from gateway.client import LLMGateway  # noqa: E402
from testing.fake import Fault, FakeOpenAI  # noqa: E402
from bench.results_file import save_report  # noqa: E402
from schemas.config import load_settings  # noqa: E402


class Answer(BaseModel):
    path: list[str]
    question: str
    answer: str


async def run_batch(gw: LLMGateway, n: int) -> tuple[float, int]:
    started = time.perf_counter()
    results = await gw.gather(
        gw.structured("generator", [{"role": "user", "content": f"question {i}"}], Answer) for i in range(n)
    )
    await gw.aclose()
    return time.perf_counter() - started, sum(r.ok for r in results)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI(default_fault=Fault(latency_s=args.latency)) as fake:
        settings = load_settings(
            data_dir=Path(tmp),
            roles={"generator": {"base_url": fake.base_url, "model": "fake-model", "max_concurrency": args.concurrency}},
        )
        gw = LLMGateway(settings)
        wall, ok = asyncio.run(run_batch(gw, args.n))
        calls_first = fake.calls()
        ideal = args.n * args.latency / args.concurrency
        gw2 = LLMGateway(settings)  # a new gateway: only the on-disk cache is shared
        wall_cached, ok_cached = asyncio.run(run_batch(gw2, args.n))
        calls_cached = fake.calls() - calls_first

    report = {
        "n": args.n, "latency_s": args.latency, "concurrency": args.concurrency,
        "ideal_wall_s": round(ideal, 3), "wall_s": round(wall, 3), "valid": ok, "endpoint_calls": calls_first,
        "throughput_per_s": round(args.n / wall, 1), "achieved_over_ideal": round(ideal / wall, 3),
        "cached_wall_s": round(wall_cached, 3), "cached_valid": ok_cached, "cached_endpoint_calls": calls_cached,
        "cached_wall_share": round(wall_cached / wall, 4),
    }
    print(
        f"gateway: {args.n} calls, L={args.latency * 1000:.0f} ms, C={args.concurrency}: {wall:.2f} s "
        f"(ideal {ideal:.2f} s) -> achieved/ideal = {report['achieved_over_ideal']:.3f}; "
        f"cached rerun: {wall_cached:.3f} s = {100 * report['cached_wall_share']:.2f}% of first run, "
        f"{calls_cached} endpoint calls"
    )
    print(json.dumps(report))
    save_report(report, args.json)


if __name__ == "__main__":
    main()
