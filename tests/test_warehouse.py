"""Warehouse: migrations, batch writes in one transaction, Parquet export, the lock error."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import duckdb
import pyarrow.parquet as pq
import pytest

from warehouse.db import Warehouse, WarehouseError, WarehouseLockedError
from warehouse.migrations import MIGRATIONS, Migration, check_ordered

EXPECTED = {
    "runs": ["run_id", "flow", "parameters", "config", "config_hash", "code_version", "started_at", "ended_at",
             "status", "error", "llm_calls", "llm_cache_hits", "prompt_tokens", "completion_tokens", "llm_failures"],
    "llm_usage": ["run_id", "role", "model", "calls", "cache_hits", "prompt_tokens", "completion_tokens",
                  "latency_s_total", "latency_s_max", "retries", "reasks", "failures"],
}


def test_migrations_create_expected_columns():
    wh = Warehouse()
    for table, cols in EXPECTED.items():
        assert wh.columns(table) == cols
    assert wh.schema_version() == MIGRATIONS[-1].number


def test_migrate_is_idempotent_and_resumes(tmp_path):
    path = tmp_path / "w.duckdb"
    wh = Warehouse(path, migrate=False)
    assert wh.migrate(MIGRATIONS[:1]) == [1]
    wh.close()
    wh = Warehouse(path)  # brings an old warehouse up to date
    assert wh.schema_version() == MIGRATIONS[-1].number
    assert wh.migrate() == []


def test_failed_migration_rolls_back():
    wh = Warehouse(migrate=False)
    bad = [*MIGRATIONS[:1], Migration(2, "broken", "CREATE TABLE ok_part (x INT); CREATE TABLE broken (")]
    with pytest.raises(duckdb.Error):
        wh.migrate(bad)
    assert wh.schema_version() == 1
    assert "ok_part" not in wh.tables()


def test_migrations_must_be_unique_and_ordered():
    check_ordered([Migration(1, "a", ""), Migration(3, "c", "")])
    with pytest.raises(RuntimeError, match="unique increasing"):
        check_ordered([Migration(1, "a", ""), Migration(1, "b", "")])
    with pytest.raises(RuntimeError, match="unique increasing"):
        check_ordered([Migration(2, "a", ""), Migration(1, "b", "")])


def _run_row(run_id="r1", **kw):
    return {"run_id": run_id, "flow": "t", "started_at": "2026-01-01 00:00:00", "status": "running", **kw}


def test_write_batch_is_one_transaction():
    wh = Warehouse()
    wh.write_batch("runs", [_run_row("a"), _run_row("b", parameters={"k": 1})])
    assert wh.scalar("SELECT count(*) FROM runs") == 2
    assert wh.scalar("SELECT parameters->>'k' FROM runs WHERE run_id='b'") == "1"
    with pytest.raises(duckdb.ConstraintException):  # duplicate primary key mid-batch: nothing lands
        wh.write_batch("runs", [_run_row("c"), _run_row("a")])
    assert wh.scalar("SELECT count(*) FROM runs") == 2


def test_write_batch_rejects_unknown_columns_and_tables():
    wh = Warehouse()
    with pytest.raises(WarehouseError, match="no column"):
        wh.write_batch("runs", [_run_row(nope=1)])
    with pytest.raises(WarehouseError, match="no table"):
        wh.write_batch("nope", [{"a": 1}])


def test_transaction_groups_tables():
    wh = Warehouse()
    with pytest.raises(RuntimeError):
        with wh.transaction() as con:
            wh.write_batch("runs", [_run_row("x")], con=con)
            raise RuntimeError("crash between two writes")
    assert wh.scalar("SELECT count(*) FROM runs") == 0


def test_export_table_and_query(tmp_path):
    wh = Warehouse()
    wh.write_batch("runs", [_run_row("a"), _run_row("b")])
    t = pq.read_table(wh.export_parquet("runs", tmp_path / "runs.parquet"))
    assert t.num_rows == 2 and "config_hash" in t.column_names
    q = pq.read_table(wh.export_parquet("SELECT run_id FROM runs WHERE run_id = ?", tmp_path / "q.parquet", params=["b"]))
    assert q.to_pylist() == [{"run_id": "b"}]
    with pytest.raises(WarehouseError, match="no table"):
        wh.export_parquet("missing_table", tmp_path / "m.parquet")


def test_second_writer_gets_a_clear_lock_error(tmp_path):
    path = tmp_path / "locked.duckdb"
    holder = Warehouse(path)
    code = textwrap.dedent(f"""
        from warehouse.db import Warehouse, WarehouseLockedError
        try:
            Warehouse({str(path)!r})
        except WarehouseLockedError as exc:
            print("LOCKED:", exc)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    holder.close()
    assert "LOCKED:" in proc.stdout, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    import os
    assert f"process {os.getpid()}" in proc.stdout  # names the lock holder


def test_read_only_missing_file_is_clear(tmp_path):
    with pytest.raises(WarehouseError, match="no warehouse"):
        Warehouse(tmp_path / "none.duckdb", read_only=True)


def test_lock_error_type_is_warehouse_error():
    assert issubclass(WarehouseLockedError, WarehouseError)


def test_a_batch_lands_as_row_by_row_inserts_would_put_it():
    """write_batch inserts one Arrow frame per batch; the rows and their values are what row-by-row INSERT (OR
    REPLACE) leaves, a key given twice in one batch included, and mixed-kind columns still land."""
    from datetime import datetime

    from schemas.qa import GoldPath

    rows = [
        {"run_id": "b", "flow": "f", "parameters": {"k": [1, 2], "s": "x"}, "started_at": datetime(2024, 5, 1, 12),
         "status": "running", "llm_calls": 3},
        {"run_id": "a", "flow": "f", "parameters": {}, "started_at": datetime(2024, 4, 1), "status": "done",
         "llm_calls": None},
        {"run_id": "b", "flow": "g", "parameters": {"k": 2}, "started_at": datetime(2024, 5, 2), "status": "done",
         "llm_calls": 4},
        {"run_id": "c", "flow": "f", "config_hash": "h", "llm_calls": 0, "started_at": datetime(2024, 4, 2),
         "status": "x"},
    ]
    fast, slow = Warehouse(), Warehouse()
    fast.write_batch("runs", rows[:1])
    fast.write_batch("runs", rows, replace=True)
    cols = ["run_id", "flow", "parameters", "started_at", "status", "llm_calls", "config_hash"]
    assert all(r.get("status") for r in rows)
    sql = f"INSERT OR REPLACE INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})"
    from warehouse.db import _to_cell

    slow.con.executemany(sql, [[_to_cell(r.get(c)) for c in cols] for r in rows[:1]])
    slow.con.executemany(sql, [[_to_cell(r.get(c)) for c in cols] for r in rows])
    assert fast.query("SELECT * FROM runs ORDER BY run_id") == slow.query("SELECT * FROM runs ORDER BY run_id")
    # a replaced row follows the earlier rows, the batch's rows in the batch's order
    assert [r["run_id"] for r in fast.query("SELECT run_id FROM runs ORDER BY rowid")] == ["b", "a", "c"]
    assert fast.scalar("SELECT flow FROM runs WHERE run_id = 'b'") == "g"
    # a column Arrow cannot type (numbers and strings) is inserted row by row, as before
    t = datetime(2024, 1, 1)
    fast.write_batch("runs", [{"run_id": "m1", "flow": "f", "started_at": t, "status": "s", "error": "text"},
                              {"run_id": "m2", "flow": "f", "started_at": t, "status": "s", "error": 5}])
    mixed = fast.query("SELECT error FROM runs WHERE run_id LIKE 'm%' ORDER BY run_id")
    assert mixed == [{"error": "text"}, {"error": "5"}]
    # models round-trip through read
    gp = GoldPath(qa_id="q", rank=0, path=["A", "B"], triples=[("A", "r", "B")], verdict="valid", reason="r")
    fast.write_batch("gold_paths", [gp, gp.model_copy(update={"rank": 1})], replace=True)
    assert fast.read("gold_paths", GoldPath, order_by="rank") == [gp, gp.model_copy(update={"rank": 1})]
