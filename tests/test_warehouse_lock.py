"""A second writer: DuckDB admits one writing process. By default a command refuses at once and names the process
holding the warehouse; with ``lock_wait_s`` it waits for that process to finish, then runs."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from schemas.config import load_settings
from warehouse.db import Warehouse, WarehouseLockedError


@contextmanager
def held(path: Path, seconds: float) -> Iterator[subprocess.Popen]:
    """Another process that opens ``path`` for writing, says so, and holds it for ``seconds`` (killed at the end)."""
    code = ("import duckdb, sys, time; con = duckdb.connect(sys.argv[1]); con.execute('CREATE TABLE IF NOT EXISTS "
            "held (x INT)'); print('ready', flush=True); time.sleep(float(sys.argv[2])); con.close()")
    proc = subprocess.Popen([sys.executable, "-c", code, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_without_waiting_a_locked_warehouse_is_refused_at_once_naming_the_holder(tmp_path):
    with held(tmp_path / "w.duckdb", 60) as proc:
        with pytest.raises(WarehouseLockedError, match=rf"locked by process {proc.pid}.*HOPFORGE_LOCK_WAIT_S"):
            Warehouse(tmp_path / "w.duckdb")
        assert proc.poll() is None  # refused while the holder still held it: it did not wait for it to let go


def test_with_lock_wait_a_second_writer_waits_for_the_first_then_runs(tmp_path, capfd):
    with held(tmp_path / "w.duckdb", 1.5) as proc, Warehouse(tmp_path / "w.duckdb", lock_wait_s=60) as wh:
        assert proc.poll() is not None  # it got the file only once the holder had let go
        assert "held" in wh.tables()
    err = capfd.readouterr().err
    assert f"locked by process {proc.pid} (" in err and "; waiting up to 60 s" in err


def test_a_wait_that_runs_out_says_how_long_it_waited(tmp_path):
    with held(tmp_path / "w.duckdb", 60):
        t0 = time.monotonic()
        with pytest.raises(WarehouseLockedError, match=r"after waiting 0.8 s \(lock_wait_s\)"):
            Warehouse(tmp_path / "w.duckdb", read_only=True, lock_wait_s=0.8)
        assert time.monotonic() - t0 >= 0.8


def test_a_flow_run_waits_when_configured(tmp_path, monkeypatch):
    """The setting reaches every run: ``open_run`` opens the warehouse with it (here from the environment)."""
    from flows.runtime import open_run

    monkeypatch.setenv("HOPFORGE_LOCK_WAIT_S", "60")
    settings = load_settings(data_dir=tmp_path)
    assert settings.lock_wait_s == 60
    Warehouse(settings.warehouse_path).close()  # migrated, so the holder only holds it
    with held(settings.warehouse_path, 1.5) as proc, open_run("lock-wait-test", {}, settings) as rt:
        assert proc.poll() is not None
        run_id = rt.run_id
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        assert wh.scalar("SELECT status FROM runs WHERE run_id = ?", [run_id]) == "completed"
