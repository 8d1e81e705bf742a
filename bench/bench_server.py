"""A command that does little, against a running `hopforge server` and with Prefect's temporary server.

The command is ``hopforge ingest <corpus>`` on a one-document corpus already in the warehouse: it runs the
``ingest-corpus`` flow, finds the document present and writes nothing else, so its time is the command's fixed
cost (Python and Prefect imports, the API, the flow run's bookkeeping). Each run is a fresh ``hopforge`` process,
as a person would type it, timed from start to exit.

- temporary: no server up; every run starts Prefect's temporary server (a uvicorn subprocess) and stops it.
- server: after ``hopforge server start`` (its own start is timed once, apart); every run uses it.

Both sides share one PREFECT_HOME whose database is migrated by a warm-up run first (a first start on a fresh
database adds its migration, 10-20 s, once). Every run's output is checked for Prefect's "Error logging to API"
message, which must not appear. Writes the median and minimum seconds of each side and their ratio (temporary /
server: how many times quicker a command is with the server up).

    python bench/bench_server.py [--runs 5] [--port 4299] [--json bench/results/server.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ERROR_LOGGING = "Error logging to API"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOPFORGE_", "PREFECT_"))}
    env.update({"PREFECT_HOME": str(tmp / "prefect"), "HOPFORGE_DATA_DIR": str(tmp / "data"),
                "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PYTHONPATH": str(ROOT)})  # fmt: skip
    return env


def hopforge(env: dict[str, str], *args: str, timeout: float = 300) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "flows.cli", *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"hopforge {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return elapsed, done


def side(env: dict[str, str], corpus: Path, runs: int) -> dict:
    times, errors = [], 0
    for _ in range(runs):
        elapsed, done = hopforge(env, "ingest", str(corpus), "--allow-new-domains")
        assert "1 already present" in done.stdout, done.stdout
        errors += (done.stdout + done.stderr).count(ERROR_LOGGING)
        times.append(round(elapsed, 2))
    return {"median_s": round(statistics.median(times), 2), "min_s": min(times), "runs_s": times,
            "error_logging_messages": errors}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--port", type=int, default=0, help="the server's port (default: a free one)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        corpus = tmp / "corpus" / "science"
        corpus.mkdir(parents=True)
        (corpus / "curie.txt").write_text("Marie Curie was born in Warsaw. She shared the 1903 Nobel Prize in "
                                          "Physics with Pierre Curie and Henri Becquerel.\n")  # fmt: skip
        env = _env(tmp)
        warm_s, _ = hopforge(env, "ingest", str(corpus.parent), "--allow-new-domains")  # migrates the database
        temporary = side(env, corpus.parent, args.runs)
        port = args.port or _free_port()
        start_s, _ = hopforge(env, "server", "start", "--port", str(port))
        try:
            server = side(env, corpus.parent, args.runs)
        finally:
            hopforge(env, "server", "stop")
    result = {
        "command": "hopforge ingest <one-document corpus already in the warehouse>",
        "runs": args.runs,
        "temporary": temporary,
        "server": server,
        "ratio_median": round(temporary["median_s"] / server["median_s"], 2),
        "server_start_s": round(start_s, 2),
        "first_run_fresh_database_s": round(warm_s, 2),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    # other work on the machine stretches both sides' wall times (the ratio less so)
                    "load_1min_before": round(load_before, 2), "load_1min_after": round(os.getloadavg()[0], 2)},
        "prefect": _prefect_version(),
        "date": datetime.now(timezone.utc).date().isoformat(),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")


def _prefect_version() -> str:
    from importlib.metadata import version

    return version("prefect")


if __name__ == "__main__":
    main()
