"""`hopforge demo` from a fresh data dir, timed from the command's start to its exit.

The demo writes ``demo-summary.json`` beside its warehouse (per-stage wall times, questions per split, trajectories
and their reject reasons, scores); this keeps it with the whole command's wall time, the CPU seconds it and its
children (the embedded llama.cpp server, Prefect's temporary server when none is up) spent, and the machine's
load. Other work on the machine stretches the wall times; the CPU seconds say what the demo itself costs. The
command uses whatever Prefect server the environment names or ``hopforge server start`` left up (`make demo`
starts one first), else Prefect's temporary one.

    python bench/bench_demo.py [--json bench/results/demo.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_demo(data_dir: Path) -> dict:
    """Run the demo once in ``data_dir``; its record plus the command's wall and CPU seconds and exit status."""
    env = {**os.environ, "HOPFORGE_DATA_DIR": str(data_dir)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run([str(Path(sys.executable).parent / "hopforge"), "demo"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"hopforge demo exited with status {proc.returncode}")
    record = json.loads((data_dir / "demo-summary.json").read_text())
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"command_wall_s": round(wall, 1), "cpu_s": round(cpu, 1), **record}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="Write the result here (e.g. bench/results/demo.json).")
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="hopforge-demo-") as tmp:
        result = run_demo(Path(tmp) / "data")
    result = {
        "command": "hopforge demo (fresh data dir; llama.cpp already built)",
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **result,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    # other work on the machine stretches the wall times (the CPU seconds less so)
                    "load_1min_before": round(load_before, 2), "load_1min_after": round(os.getloadavg()[0], 2)},
    }
    text = json.dumps(result, indent=2, sort_keys=True).replace(str(ROOT), "<repo>")  # no machine paths in the record
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
