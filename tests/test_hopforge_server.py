"""`hopforge server start|status|stop` with a real Prefect server, and commands against it and without it.

- The server starts on a free loopback port in a PREFECT_HOME of the test's own, `status` names it, a command run
  against it records its flow run in that server's API (and says nothing about a temporary server), a command
  that fails after its flow completes and one whose flow run fails print no "Error logging to API", a second
  `start` is refused (`--if-needed` accepts it), a start on its port from elsewhere is told the port is taken, and
  `stop` leaves no process of it running.
- Without a server, a command that succeeds, one whose flow completes before the command fails, and one whose
  flow run fails all end without Prefect's "Error logging to API" (its log workers are drained before the
  temporary server stops).

Slow (a server start, three temporary-server starts: ~1-2 min on 2 cores): ``make test-prefect-server``
(marker ``prefect_server``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from flows.prefect_server import HINT, STATE_FILE
from gateway.local import free_port
from gateway import children
from tests import refresh_world as world
from tests.process_table import assert_none_alive, descendants

pytestmark = pytest.mark.prefect_server

ROOT = Path(__file__).resolve().parent.parent
ERROR_LOGGING = "Error logging to API"


def _env(tmp: Path, prefect_home: Path | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOPFORGE_", "PREFECT_"))}
    env.update({"PYTHONPATH": str(ROOT), "HOPFORGE_DATA_DIR": str(tmp / "data"),
                "PREFECT_HOME": str(prefect_home or tmp / "prefect"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "HOPFORGE_QUALITY__MEANING_CHECK": "off", **extra})  # fmt: skip
    return env


def hopforge(env: dict[str, str], *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


def _flat(done: subprocess.CompletedProcess) -> str:
    return " ".join((done.stdout + done.stderr).split())


def _corpus(tmp: Path) -> Path:
    folder = tmp / "corpus" / "science"
    folder.mkdir(parents=True)
    (folder / "curie.txt").write_text("Marie Curie was born in Warsaw. She won the Nobel Prize in Physics.\n")
    return folder.parent


def _config(tmp: Path, base_url: str) -> Path:
    """Roles and embeddings on the fake LLM server, so commands get as far as their flows."""
    config = tmp / "hopforge.yaml"
    config.write_text(yaml.safe_dump({"roles": world.roles(base_url),
                                      "embeddings": {"base_url": base_url, "model": "e", "dim": 16}}))
    return config


def test_server_start_status_a_command_against_it_refusals_and_stop(tmp_path, fake_llm):
    env = _env(tmp_path, HOPFORGE_CONFIG=str(_config(tmp_path, fake_llm.base_url)))
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    started = hopforge(env, "server", "start", "--port", str(port))
    state_file = tmp_path / "prefect" / STATE_FILE
    pid = json.loads(state_file.read_text())["pid"] if state_file.exists() else None
    try:
        assert started.returncode == 0, _flat(started)
        assert f"UI: http://127.0.0.1:{port}" in started.stdout
        assert httpx.get(f"{api}/health", timeout=5).status_code == 200

        status = hopforge(env, "server", "status")
        assert status.returncode == 0 and f"up: http://127.0.0.1:{port} (UI)" in status.stdout
        assert f"pid {pid}," in status.stdout

        t0 = time.monotonic()
        ingest = hopforge(env, "ingest", str(_corpus(tmp_path)), "--allow-new-domains")
        took = time.monotonic() - t0
        assert ingest.returncode == 0, _flat(ingest)
        assert HINT.strip() not in _flat(ingest) and "Starting temporary server" not in ingest.stderr
        assert ERROR_LOGGING not in ingest.stdout + ingest.stderr
        flows = {f["id"]: f["name"] for f in httpx.post(f"{api}/flows/filter", json={}, timeout=10).json()}
        runs = httpx.post(f"{api}/flow_runs/filter", json={}, timeout=10).json()
        assert [(flows[r["flow_id"]], r["state_type"]) for r in runs] == [("ingest-corpus", "COMPLETED")]
        logs = httpx.post(f"{api}/logs/filter", json={}, timeout=10).json()
        assert any("Finished in state Completed" in log["message"] for log in logs)  # its logs reached the API

        # failures against the running server: the flow completes, then the command finds nothing to report; and
        # the flow run itself fails (no graphs to ask questions about)
        report = hopforge(env, "graph", "report")
        assert report.returncode == 2 and "no graphs yet" in _flat(report), _flat(report)
        failed = hopforge(env, "qa", "generate")
        assert failed.returncode == 2 and "Finished in state Failed" in failed.stderr, _flat(failed)
        for done in (report, failed):
            assert HINT.strip() not in _flat(done) and "Starting temporary server" not in done.stderr
            assert ERROR_LOGGING not in done.stdout + done.stderr, done.stderr[-2000:]
        runs = httpx.post(f"{api}/flow_runs/filter", json={}, timeout=10).json()
        assert "FAILED" in [r["state_type"] for r in runs]  # the failed run is recorded in this server

        again = hopforge(env, "server", "start", "--port", str(port))
        assert again.returncode == 2
        assert (f"hopforge's Prefect server is already up at http://127.0.0.1:{port} (pid {pid})"
                in _flat(again))  # fmt: skip
        assert hopforge(env, "server", "start", "--if-needed").returncode == 0

        elsewhere = hopforge(_env(tmp_path, tmp_path / "other-home"), "server", "start", "--port", str(port))
        assert elsewhere.returncode == 2
        assert (f"port {port} on 127.0.0.1 is taken by another process; pick another with --port; a Prefect "
                f"server answers there: set PREFECT_API_URL={api} to use it") in _flat(elsewhere)  # fmt: skip

        server = [children.process_table()[pid], *descendants(pid)]
        stopped = hopforge(env, "server", "stop")
        assert stopped.returncode == 0 and f"stopped the Prefect server at http://127.0.0.1:{port}" in stopped.stdout
        assert_none_alive(server)
        assert not state_file.exists()
        down = hopforge(env, "server", "status")
        assert down.returncode == 1 and "no hopforge Prefect server is running" in down.stdout
        print(f"a command against the running server: {took:.1f} s")
    finally:
        if pid is not None and children.process_started(pid) is not None:
            hopforge(env, "server", "stop")


def test_no_error_logging_to_api_after_commands_with_the_temporary_server(tmp_path, fake_llm):
    env = _env(tmp_path, HOPFORGE_CONFIG=str(_config(tmp_path, fake_llm.base_url)))

    success = hopforge(env, "ingest", str(_corpus(tmp_path)), "--allow-new-domains")
    assert success.returncode == 0, _flat(success)
    # the flow completes, then the command finds nothing to report
    report = hopforge(env, "graph", "report")
    assert report.returncode == 2 and "no graphs yet" in _flat(report)
    # the flow run itself fails (no graphs to ask questions about)
    failed = hopforge(env, "qa", "generate")
    assert failed.returncode == 2 and "Finished in state Failed" in failed.stderr, _flat(failed)

    for done in (success, report, failed):
        assert "Starting temporary server" in done.stderr  # each ran with Prefect's temporary server
        assert _flat(done).count(HINT.split(";")[0].split(",")[0]) == 1  # the hint, once
        assert ERROR_LOGGING not in done.stdout + done.stderr, done.stderr[-2000:]
