"""`hopforge demo` from a fresh data dir, timed from the command's start to its exit.

The demo writes ``demo-summary.json`` beside its warehouse (per-stage wall times, questions per split, trajectories
and their reject reasons, scores); this keeps it with the whole command's wall time, the CPU seconds it and its
children (the embedded llama.cpp server, Prefect's temporary server when none is up) spent, and the machine's
load. Other work on the machine stretches the wall times; the CPU seconds say what the demo itself costs. The
command uses whatever Prefect server the environment names or ``hopforge server start`` left up (`make demo`
starts one first), else Prefect's temporary one.

    python bench/bench_demo.py [--json bench/results/demo.json]

``--fresh-clone`` times what a new user runs instead: ``git clone`` of this checkout's HEAD into a temporary
directory, ``make .venv/.installed-local`` there (set-up: pip, with pip's own cache) and then ``make demo`` (its
Prefect server start included), each timed, with the commit, the machine and its load; the clone's server is
stopped at the end.

    python bench/bench_demo.py --fresh-clone --json bench/results/demo_fresh_clone.json

``--empty-pip-cache`` (with ``--fresh-clone``) gives pip a new, empty cache directory, as on a machine that never
installed anything: every wheel is downloaded and llama.cpp is built from source. The machine's load is sampled
every 15 s while it runs (mean and max in the record).

    python bench/bench_demo.py --fresh-clone --empty-pip-cache --json bench/results/demo_empty_cache.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import threading
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


def _timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Run ``cmd``; its wall seconds and the CPU seconds it and its children spent. Exits on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"{' '.join(cmd)} exited with status {proc.returncode}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_fresh_clone(where: Path, pip_cache: Path | None = None) -> dict:
    """Clone HEAD into ``where``, set it up and run ``make demo`` there, as a new user would; with ``pip_cache``,
    pip's cache is that (new, empty) directory."""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(where)], check=True)
    # the clone's own settings only: nothing of this shell's hopforge or Prefect configuration
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOPFORGE_", "PREFECT_", "VIRTUAL_ENV"))}
    if pip_cache is not None:
        pip_cache.mkdir(parents=True, exist_ok=False)
        env["PIP_CACHE_DIR"] = str(pip_cache)
    try:
        setup_wall, setup_cpu = _timed(["make", ".venv/.installed-local"], where, env)
        demo_wall, demo_cpu = _timed(["make", "demo"], where, env)
        record = json.loads((where / ".hopforge" / "demo-summary.json").read_text())
    finally:
        subprocess.run(["make", "server-stop"], cwd=where, env=env, capture_output=True)
    return {"commit": commit, "setup_wall_s": round(setup_wall, 1), "setup_cpu_s": round(setup_cpu, 1),
            "make_demo_wall_s": round(demo_wall, 1), "make_demo_cpu_s": round(demo_cpu, 1), "demo_summary": record}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="Write the result here (e.g. bench/results/demo.json).")
    ap.add_argument("--fresh-clone", action="store_true", help="Time set-up and `make demo` in a fresh clone of HEAD.")
    ap.add_argument("--empty-pip-cache", action="store_true",
                    help="With --fresh-clone: pip starts from an empty cache.")
    args = ap.parse_args()
    if args.empty_pip_cache and not args.fresh_clone:
        ap.error("--empty-pip-cache needs --fresh-clone")
    load_before = os.getloadavg()[0]
    samples: list[float] = []
    stop = threading.Event()

    def sample_load() -> None:
        while not stop.wait(15.0):
            samples.append(os.getloadavg()[0])

    sampler = threading.Thread(target=sample_load, daemon=True)
    sampler.start()
    with tempfile.TemporaryDirectory(prefix="hopforge-demo-") as tmp:
        if args.fresh_clone and args.empty_pip_cache:
            result = run_fresh_clone(Path(tmp) / "clone", pip_cache=Path(tmp) / "pip-cache")
            command = "git clone, make .venv/.installed-local (pip's cache empty: every wheel downloaded, llama.cpp " \
                      "built), make demo"
        elif args.fresh_clone:
            result = run_fresh_clone(Path(tmp) / "clone")
            command = "git clone, make .venv/.installed-local (pip's cache warm), make demo"
        else:
            result = run_demo(Path(tmp) / "data")
            command = "hopforge demo (fresh data dir; llama.cpp already built)"
    stop.set()
    result = {
        "command": command,
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **result,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    # other work on the machine stretches the wall times (the CPU seconds less so)
                    "load_1min_before": round(load_before, 2), "load_1min_after": round(os.getloadavg()[0], 2),
                    "load_1min_during_mean": round(sum(samples) / len(samples), 2) if samples else None,
                    "load_1min_during_max": round(max(samples), 2) if samples else None},
    }
    text = json.dumps(result, indent=2, sort_keys=True).replace(str(ROOT), "<repo>")  # no machine paths in the record
    text = re.sub(re.escape(tempfile.gettempdir()) + r"/hopforge-demo-\w+/clone", "<clone>", text)
    text = text.replace(tempfile.gettempdir(), "<tmp>")
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
