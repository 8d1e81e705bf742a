"""A run left "running" by a process that died is marked "crashed" by the next run on the same warehouse; runs this
process has open are left alone."""

from __future__ import annotations

from datetime import datetime


def test_a_run_left_running_is_marked_crashed_by_the_next(tmp_path):
    from flows.runtime import open_run
    from schemas.config import load_settings
    from warehouse.db import Warehouse

    settings = load_settings(data_dir=tmp_path)
    with Warehouse(settings.warehouse_path) as wh:
        wh.write_batch("runs", [{"run_id": "dead-run", "flow": "generate-qa", "started_at": datetime(2026, 1, 1),
                                 "status": "running"},
                                {"run_id": "done-run", "flow": "doctor", "started_at": datetime(2026, 1, 1),
                                 "status": "completed"}])
    with open_run("outer", {}, settings) as outer:
        outer_id = outer.run_id
        with Warehouse(settings.warehouse_path) as wh:
            states = {r["run_id"]: (r["status"], r["error"]) for r in wh.query("SELECT run_id, status, error FROM runs")}
        assert states["dead-run"][0] == "crashed" and "killed or crashed" in states["dead-run"][1]
        assert states["done-run"] == ("completed", None) and states[outer_id][0] == "running"
        # a second run opened by this process while the first is open does not mark the first
        with open_run("inner", {}, settings, wh=outer.wh):
            assert outer.wh.scalar("SELECT status FROM runs WHERE run_id = ?", [outer_id]) == "running"
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        assert wh.scalar("SELECT status FROM runs WHERE run_id = ?", [outer_id]) == "completed"
        assert wh.scalar("SELECT count(*) FROM runs WHERE status = 'running'") == 0
