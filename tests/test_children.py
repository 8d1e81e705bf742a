"""Children die with their parent: a hopforge process killed with SIGKILL leaves nothing running below it.

Each test starts a real process that starts children the way hopforge does (Prefect's temporary server, the tool
server's forked workers, the embedded model server from a pool thread), kills it with SIGKILL (no exit handler
runs) and reads the process table for what it had below it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gateway import children
from tests.process_table import assert_none_alive, descendants, wait_for_descendants

pytestmark = pytest.mark.skipif(not children.supported() or not Path("/proc/self/task").exists(),
                                reason="PR_SET_PDEATHSIG and /proc are Linux's")  # fmt: skip

ROOT = Path(__file__).resolve().parent.parent
GRAPHS = ROOT / "flows" / "demo" / "graphs"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a command under test: its own data dir and PREFECT_HOME, no configured Prefect API."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOPFORGE_", "PREFECT_"))}
    env.update({"PYTHONPATH": str(ROOT), "HOPFORGE_DATA_DIR": str(tmp_path / "data"),
                "PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "HOPFORGE_QUALITY__MEANING_CHECK": "off", "RAY_USAGE_STATS_ENABLED": "0",
                "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", **extra})  # fmt: skip
    return env


def _kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)


def _python(code: str, tmp_path: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=_env(tmp_path),
                            stdout=subprocess.PIPE, text=True)  # fmt: skip


def test_a_child_spawned_from_a_finished_thread_lives_until_its_parent_is_killed(tmp_path):
    # The death signal follows the thread that forked: spawned from a pool thread that then ended, a plain
    # preexec child dies at once; children.popen's child lives on until the process dies.
    proc = _python("""
        import subprocess, threading, time
        from gateway import children
        out = {}
        def spawn():
            out["tied"] = children.popen(["sleep", "300"])
            out["naive"] = subprocess.Popen(["sleep", "301"], preexec_fn=children.die_with_parent)
        t = threading.Thread(target=spawn); t.start(); t.join()
        time.sleep(0.5)
        print(out["tied"].poll(), out["naive"].poll(), flush=True)
        time.sleep(300)
    """, tmp_path)
    try:
        tied, naive = proc.stdout.readline().split()
        assert tied == "None"  # still running after its spawning thread ended
        assert naive == str(-signal.SIGKILL)  # killed when its spawning thread ended
        below = descendants(proc.pid)
        assert [p.command for p in below] == ["sleep 300"]
    finally:
        _kill(proc)
    assert_none_alive(below)


def test_a_killed_command_leaves_no_temporary_prefect_server(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli", "graph", "report"], cwd=tmp_path,
                            env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        below = wait_for_descendants(proc.pid, lambda ps: any("uvicorn" in p.command for p in ps), timeout_s=90,
                                     running=lambda: proc.poll() is None)  # fmt: skip
    finally:
        _kill(proc)
    assert any("prefect.server.api.server:create_app" in p.command for p in below)
    assert_none_alive(below)
    # with no server up, the command said once how to avoid the temporary one
    assert proc.stderr.read().count("`hopforge server start` keeps one up") == 1


def test_a_killed_tool_server_leaves_no_worker(tmp_path):
    from schemas.config import load_settings
    from tasks.graph.importers import read_triples
    from warehouse.db import Warehouse
    from warehouse.graphs import write_import

    settings = load_settings(data_dir=tmp_path / "data")
    settings.data_dir.mkdir(parents=True)
    with Warehouse(settings.warehouse_path) as wh:
        write_import(wh, read_triples(GRAPHS / "cs.jsonl", "cs"), build_run_id="test")
    from gateway.local import free_port

    argv = [sys.executable, "-m", "flows.cli", "serve-tools", "--embedder", "hashing", "--workers", "2",
            "--port", str(free_port())]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        below = wait_for_descendants(proc.pid, lambda ps: len(ps) >= 2, timeout_s=90,
                                     running=lambda: proc.poll() is None)  # fmt: skip
        time.sleep(0.5)  # the workers are past their prctl
    finally:
        _kill(proc)
    assert len(below) == 2
    assert_none_alive(below)


def test_a_killed_command_leaves_no_embedded_model_server(tmp_path):
    from tests.test_local_model import STANDIN

    script = tmp_path / "standin.py"
    script.write_text(STANDIN)
    # started from a pool thread, as a flow's task starts the shared embedded server
    proc = _python(f"""
        import sys, time
        from concurrent.futures import ThreadPoolExecutor
        from gateway.local import LocalModelServer
        with ThreadPoolExecutor(1) as pool:
            srv = pool.submit(LocalModelServer(command=[sys.executable, {str(script)!r}, "{{port}}"],
                                               startup_timeout_s=60).start).result()
        print(srv.proc.pid, flush=True)
        time.sleep(300)
    """, tmp_path)
    try:
        server_pid = int(proc.stdout.readline())
        below = descendants(proc.pid)
        assert [p.pid for p in below] == [server_pid]
    finally:
        _kill(proc)
    assert_none_alive(below)


def test_after_import_patches_a_module_when_it_is_first_imported(tmp_path, monkeypatch):
    pkg = tmp_path / "lateimport_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "late.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []
    children.after_import("lateimport_pkg.late", lambda m: seen.append(m.VALUE))
    assert seen == []  # not imported yet: nothing imported on our account
    import lateimport_pkg.late  # noqa: F401

    assert seen == [1]
    children.after_import("lateimport_pkg.late", lambda m: seen.append(m.VALUE + 1))  # imported: at once
    assert seen == [1, 2]
    assert not any(isinstance(f, children._PatchAfterImport) and f.name == "lateimport_pkg.late"
                   for f in sys.meta_path)  # fmt: skip


@pytest.mark.ray
def test_a_killed_command_leaves_no_local_ray(tmp_path):
    pytest.importorskip("ray")
    # the runner a flow gets with runner.kind = ray and no address, from a pool thread as a task would ask for it
    proc = _python("""
        import os, time
        from concurrent.futures import ThreadPoolExecutor
        import ray
        from flows.batches import task_runner
        from schemas.config import RunnerConfig
        with ThreadPoolExecutor(1) as pool:
            pool.submit(task_runner, RunnerConfig(kind="ray", max_workers=1)).result()
        @ray.remote
        def pid():
            return os.getpid()
        print(ray.get(pid.remote()), flush=True)
        time.sleep(300)
    """, tmp_path)
    try:
        worker = int(proc.stdout.readline())
        time.sleep(1)
        below = descendants(proc.pid)
        assert worker in {p.pid for p in below}  # a Ray worker, below the raylet
        assert any("raylet" in p.command for p in below) and any("gcs_server" in p.command for p in below)
    finally:
        _kill(proc)
    assert_none_alive(below)
