"""The `refresh` deployment through the real components: `prefect server start` on loopback, a process work pool,
`prefect deploy --all` from prefect.yaml, `prefect worker start`, `prefect deployment run`, the LLM roles on the
loopback fake. Checks through the Prefect REST API that the run completed with its task runs and artifacts, and in
the warehouse that the version landed; then runs the deployment again and sees nothing new (0 LLM calls).

Run with ``make test-prefect-server`` (marker ``prefect_server``; excluded from ``make test``). With
``REFRESH_SCREENSHOT=<file.png>`` and Chromium installed, it also saves a screenshot of the UI's flow-run page.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests import refresh_world as world
from warehouse.db import Warehouse

pytestmark = pytest.mark.prefect_server

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
PARAMS = {"n_seeds": 6, "min_ball": 5, "n_rollouts": 1, "solver_k": 2, "max_rounds": 3, "max_tokens_per_round": 200}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Stack:
    """The Prefect server and worker this test starts, with the environment every CLI call gets."""

    def __init__(self, tmp: Path, fake_url: str):
        self.port = _free_port()
        self.api = f"http://127.0.0.1:{self.port}/api"
        self.data = tmp / "data"
        config = tmp / "hopforge.yaml"
        # the meaning check off, as tests/conftest.py sets it for in-process flows: the loopback fake is not the
        # embedded model, so "auto" would ask the verifier about fact sheets the scripted fake does not read
        config.write_text(yaml.safe_dump({"data_dir": str(self.data), "roles": world.roles(fake_url),
                                          "quality": {"meaning_check": "off"},
                                          "embeddings": {"base_url": fake_url, "model": "e", "dim": 16}}))  # fmt: skip
        keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV")
        self.env = {k: v for k, v in os.environ.items() if k in keep}
        self.env.update({
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "PREFECT_HOME": str(tmp / "prefect"), "PREFECT_API_URL": self.api,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
            "PREFECT_SERVER_API_HOST": "127.0.0.1", "PREFECT_SERVER_API_PORT": str(self.port),
            "PREFECT_UI_API_URL": self.api,
            "HOPFORGE_HOME": str(ROOT), "HOPFORGE_CONFIG": str(config),
            "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
        })  # fmt: skip
        self.logs = tmp
        self.procs: list[subprocess.Popen] = []

    def start(self, name: str, *args: str) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen([str(BIN / "prefect"), *args], cwd=ROOT, env=self.env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
        self.procs.append(proc)
        return proc

    def cli(self, *args: str, timeout: float = 180) -> str:
        done = subprocess.run([str(BIN / "prefect"), "--no-prompt", *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=timeout)  # fmt: skip
        assert done.returncode == 0, f"prefect {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def get(self, path: str) -> Any:
        return httpx.get(self.api + path, timeout=10).json()

    def post(self, path: str, body: dict[str, Any]) -> Any:
        r = httpx.post(self.api + path, json=body, timeout=10)
        r.raise_for_status()
        return r.json()

    def wait_healthy(self, timeout: float = 180) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if httpx.get(self.api + "/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert self.procs[0].poll() is None, (self.logs / "server.log").read_text()[-3000:]
            time.sleep(1)
        raise AssertionError("the Prefect server did not become healthy in time")

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()


@pytest.fixture
def stack(fake_llm, tmp_path) -> Iterator[Stack]:
    s = Stack(tmp_path, fake_llm.base_url)
    try:
        s.start("server", "server", "start", "--host", "127.0.0.1", "--port", str(s.port))
        s.wait_healthy()
        yield s
    finally:
        s.stop()


def run_deployment(stack: Stack, params: dict[str, Any], timeout: float = 400) -> dict[str, Any]:
    args = [a for k, v in params.items() for a in ("-p", f"{k}={json.dumps(v)}")]
    out = stack.cli("deployment", "run", "refresh/refresh", *args)
    flow_run_id = re.search(r"UUID:\s*([0-9a-f-]{36})", out).group(1)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        run = stack.get(f"/flow_runs/{flow_run_id}")
        if run["state_type"] in FINAL:
            return run
        time.sleep(2)
    raise AssertionError(f"flow run {flow_run_id} did not finish in {timeout} s: {run['state_type']}")


def screenshot(stack: Stack, flow_run_id: str, target: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no Chromium for the screenshot (the run itself was checked)")
    url = f"http://127.0.0.1:{stack.port}/runs/flow-run/{flow_run_id}"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1440,1100", "--virtual-time-budget=15000", f"--screenshot={target}", url],
                   env=stack.env, capture_output=True, timeout=120, check=True)  # fmt: skip
    assert target.is_file() and target.stat().st_size > 10_000


def test_refresh_deployment_through_server_and_worker(stack, fake_llm, tmp_path):
    world.install(fake_llm)
    world.store_profiles(stack.data / "warehouse.duckdb")
    corpus = tmp_path / "corpus"
    world.write_corpus(corpus)

    stack.cli("work-pool", "create", "hopforge", "--type", "process")
    stack.cli("work-pool", "create", "gpu", "--type", "process")  # prefect.yaml also deploys the training flows
    stack.cli("deploy", "--all")
    deployments = {d["name"]: d for d in stack.post("/deployments/filter", {})}
    refresh = deployments["refresh"]
    assert refresh["schedules"] and refresh["schedules"][0]["schedule"]["cron"] == "0 4 * * 1"
    form = refresh["parameter_openapi_schema"]["properties"]
    # the UI builds its form from this schema: typed fields, enums for the closed choices
    assert form["solver_k"]["type"] == "integer" and form["measure_difficulty"]["type"] == "boolean"
    assert "trivial" in json.dumps(form["drop_labels"]) and "candidates" in json.dumps(form["modes"])
    stack.start("worker", "worker", "start", "--pool", "hopforge", "--type", "process")

    started = time.monotonic()
    run = run_deployment(stack, {"sources": [str(corpus)], **PARAMS})
    first_s = time.monotonic() - started
    assert run["state_type"] == "COMPLETED", (tmp_path / "worker.log").read_text()[-4000:]
    runs = stack.post("/flow_runs/filter", {})
    names = {r["name"]: r for r in runs}
    assert len(runs) >= 7  # the refresh and its stage subflows
    tasks = stack.post("/task_runs/filter", {})
    done = {t["name"].rsplit("-", 1)[0] for t in tasks if t["state_type"] == "COMPLETED"}
    assert {"build-domain-graph", "generate-batch", "verify-batch", "distill-batch", "difficulty-batch"} <= done
    arts = stack.post("/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [run["id"]]}}})
    keys = {a["key"] for a in arts}
    assert {"refresh-diff", "dataset-pictures"} <= keys
    diff_md = next(a["data"] for a in arts if a["key"] == "refresh-diff")
    assert "## Rows added per config and split" in diff_md and "| qa | train |" in diff_md
    assert "data:image/svg+xml;base64," in next(a["data"] for a in arts if a["key"] == "dataset-pictures")

    with Warehouse(stack.data / "warehouse.duckdb", read_only=True) as wh:
        versions = wh.query("SELECT version, path FROM dataset_versions")
        assert len(versions) == 1 and Path(versions[0]["path"], "manifest.json").is_file()
    calls = fake_llm.calls()

    # again, with the sources the previous refresh recorded: nothing new, no LLM call, no new version
    again = run_deployment(stack, PARAMS)
    assert again["state_type"] == "COMPLETED", (tmp_path / "worker.log").read_text()[-4000:]
    assert fake_llm.calls() == calls
    with Warehouse(stack.data / "warehouse.duckdb", read_only=True) as wh:
        assert wh.scalar("SELECT count(*) FROM dataset_versions") == 1
        last = wh.query("SELECT llm_calls, status FROM runs WHERE flow = 'refresh' ORDER BY started_at DESC LIMIT 1")[0]
    assert last == {"llm_calls": 0, "status": "completed"}
    arts = stack.post("/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [again["id"]]}}})
    assert any(a["key"] == "refresh-diff" and "No new dataset version" in a["data"] for a in arts)
    print(f"first refresh through the worker: {first_s:.1f} s; second: 0 LLM calls; runs: {sorted(names)[:3]}...")

    target = os.environ.get("REFRESH_SCREENSHOT")
    if target:
        screenshot(stack, run["id"], Path(target).resolve())
