"""A warehouse you can trust and restore: a damaged file is one line saying so and what to do; `warehouse check`
finds what is wrong; `warehouse backup` copies it while nothing writes, with a manifest; `warehouse restore` puts a
backup back (refusing anything that is not one, and a warehouse in use) and moves the current file aside; an export
names the backup it can be rebuilt from."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from schemas.config import load_settings
from tests.test_export import records, run_export, settings, warehouse  # noqa: F401 - fixtures: an export's rows
from tests.test_warehouse_lock import held
from warehouse.backup import backup, check, list_backups, manifest_path, restore
from warehouse.db import Warehouse, WarehouseDamagedError
from warehouse.migrations import MIGRATIONS

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _runs(n: int, tag: str) -> list[dict]:
    return [{"run_id": f"{tag}-{i}", "flow": "test", "status": "completed", "started_at": "2026-01-01 00:00:00",
             "parameters": json.dumps({"i": i, "tag": tag})} for i in range(n)]  # fmt: skip


@pytest.fixture
def filled():
    """Settings whose warehouse has rows in a plain table and in a JSON one."""
    s = load_settings()  # the data dir tests/conftest.py gives each test, as the CLI finds it
    with Warehouse(s.warehouse_path) as wh:
        wh.write_batch("runs", _runs(30, "a"))
        wh.write_batch("smoke_items", [{"run_id": "a-0", "item_id": f"i{i}", "text": "t", "ok": i % 2 == 0,
                                        "entities": [{"name": f"e{i}"}]} for i in range(5)])  # fmt: skip
    return s


def rows(path: Path) -> dict[str, list]:
    with Warehouse(path, read_only=True) as wh:
        return {t: wh.query(f'SELECT * FROM "{t}" ORDER BY ALL') for t in ("runs", "smoke_items", "_migrations")}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _flat(text: str) -> str:
    return " ".join(text.split())


# -- a damaged file --------------------------------------------------------------------------------------------------
def test_a_warehouse_cut_in_half_is_one_line_that_says_what_to_do(filled):
    path = filled.warehouse_path
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(WarehouseDamagedError, match="is damaged or not a DuckDB warehouse"):
        Warehouse(path)
    # a flow opens it for writing; check and backup read every table (a read-only command that reads only the
    # half that is left, e.g. `warehouse runs` here, still works)
    for argv in (["qa", "generate"], ["warehouse", "check"], ["warehouse", "backup"]):
        result = runner.invoke(app, argv)
        text = _flat(result.output)
        assert result.exit_code == 2, (argv, result.output)
        assert f"the warehouse file {path} is damaged or not a DuckDB warehouse" in text, (argv, text)
        assert "hopforge warehouse restore" in text and "move the file aside" in text and "Traceback" not in text
    done = subprocess.run([sys.executable, "-m", "flows.cli", "warehouse", "check"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "is damaged or not a DuckDB warehouse" in _flat(done.stderr)


def test_garbage_bytes_are_the_same_one_line(filled):
    filled.warehouse_path.write_bytes(b"\x00not a database\xff" * 500)
    result = runner.invoke(app, ["warehouse", "tables"])
    assert result.exit_code == 2 and "is damaged or not a DuckDB warehouse" in _flat(result.output)


# -- check -----------------------------------------------------------------------------------------------------------
def test_check_passes_on_a_sound_warehouse_and_counts_every_table(filled):
    report = check(filled.warehouse_path)
    assert report.ok, report.problems
    assert report.rows["runs"] == 30 and report.rows["smoke_items"] == 5
    assert report.migration == report.expected_migration == MIGRATIONS[-1].number
    assert report.blocks["total_blocks"] >= report.blocks["used_blocks"] > 0
    result = runner.invoke(app, ["warehouse", "check"])
    assert result.exit_code == 0 and "check: ok" in result.output, result.output


def test_check_names_the_first_problem(filled):
    with Warehouse(filled.warehouse_path) as wh:
        wh.execute("DROP TABLE smoke_items")
        wh.execute("ALTER TABLE runs DROP COLUMN config")
    result = runner.invoke(app, ["warehouse", "check"])
    text = _flat(result.output)
    assert result.exit_code == 2 and "fails its check: column runs.config is missing" in text, text
    assert "more problem(s)" in text
    assert check(filled.warehouse_path).problems == ["column runs.config is missing", "table smoke_items is missing"]


def test_check_tells_an_old_warehouse_from_a_damaged_one(filled):
    with Warehouse(filled.warehouse_path) as wh:
        wh.execute("DELETE FROM _migrations WHERE number = ?", [MIGRATIONS[-1].number])
    problems = check(filled.warehouse_path).problems
    assert problems == [f"it is at migration {MIGRATIONS[-2].number}, this hopforge expects {MIGRATIONS[-1].number}: "
                        "any flow that writes it migrates it (e.g. `hopforge doctor`)"]  # fmt: skip


# -- backup and restore ----------------------------------------------------------------------------------------------
def test_backup_then_restore_gives_back_every_row(filled):
    path = filled.warehouse_path
    before = rows(path)
    result = runner.invoke(app, ["warehouse", "backup"])
    assert result.exit_code == 0, result.output
    [made] = list_backups(filled.data_dir / "backups")
    assert made.path.parent == filled.data_dir / "backups" and made.path.name.startswith("warehouse-")
    m = made.manifest
    assert m["sha256"] == sha256(made.path) and m["bytes"] == made.path.stat().st_size
    assert m["migration"] == MIGRATIONS[-1].number and m["tables"]["runs"]["rows"] == 30
    assert m["tables"]["smoke_items"]["rows"] == 5 and m["created_at"] and made.id in result.output
    assert not [p for p in made.path.parent.iterdir() if p.name.startswith(".")]  # no temporary file left
    with Warehouse(path) as wh:  # the warehouse moves on after the backup
        wh.execute("DELETE FROM runs WHERE run_id LIKE 'a-1%'")
        wh.write_batch("runs", _runs(4, "later"))
    changed = rows(path)
    assert changed != before
    result = runner.invoke(app, ["warehouse", "restore", str(made.path)])
    assert result.exit_code == 0 and "check: ok" in result.output, result.output
    assert rows(path) == before
    [aside] = [p for p in path.parent.iterdir() if p.name.startswith("warehouse.replaced-")]
    assert rows(aside) == changed and str(aside) in _flat(result.output)  # moved aside, never deleted
    assert check(path).ok


def test_backup_to_a_given_file_never_replaces_one(filled, tmp_path):
    target = tmp_path / "elsewhere" / "mine.duckdb"
    made = backup(filled.warehouse_path, target, data_dir=filled.data_dir)
    assert made.path == target and manifest_path(target).is_file()
    result = runner.invoke(app, ["warehouse", "backup", "--out", str(target)])
    assert result.exit_code == 2 and "already exists" in _flat(result.output)
    result = runner.invoke(app, ["warehouse", "backup", "--out", str(tmp_path / "elsewhere")])  # a folder
    assert result.exit_code == 0 and len(list((tmp_path / "elsewhere").glob("warehouse-*.duckdb"))) == 1


def test_a_damaged_warehouse_is_restored_from_its_backup(filled):
    made = backup(filled.warehouse_path, data_dir=filled.data_dir)
    before = rows(filled.warehouse_path)
    data = filled.warehouse_path.read_bytes()
    filled.warehouse_path.write_bytes(data[: len(data) // 2])
    restore(made.path, filled.warehouse_path)
    assert rows(filled.warehouse_path) == before and check(filled.warehouse_path).ok


def test_a_backup_from_an_older_hopforge_is_restored_and_migrated(tmp_path):
    old = tmp_path / "old.duckdb"
    with Warehouse(old, migrate=False) as wh:
        wh.migrate(MIGRATIONS[:-1])
        wh.write_batch("runs", _runs(3, "old"))
    made = backup(old, data_dir=tmp_path)
    assert made.manifest["migration"] == MIGRATIONS[-2].number
    target = tmp_path / "restored" / "warehouse.duckdb"
    done = restore(made.path, target)
    assert done.migrated_from == MIGRATIONS[-2].number and done.moved_aside is None
    assert check(target).ok and rows(target)["runs"] == rows(old)["runs"]


def _unchanged(filled, digest: str) -> None:
    assert sha256(filled.warehouse_path) == digest
    assert not [p for p in filled.warehouse_path.parent.iterdir() if ".replaced-" in p.name or ".restore-" in p.name]


def test_restore_refuses_what_is_not_a_backup(filled, tmp_path):
    digest = sha256(filled.warehouse_path)
    plain = tmp_path / "plain.duckdb"  # a DuckDB warehouse, but no backup: no manifest
    plain.write_bytes(filled.warehouse_path.read_bytes())
    made = backup(filled.warehouse_path, data_dir=filled.data_dir)
    changed = tmp_path / "changed.duckdb"  # a backup's manifest beside other bytes
    data = bytearray(made.path.read_bytes())
    data[5000:5008] = bytes(b ^ 0xFF for b in data[5000:5008])
    changed.write_bytes(bytes(data))
    manifest_path(changed).write_text(manifest_path(made.path).read_text())
    forged = tmp_path / "forged.duckdb"  # a manifest that matches, over a file that is not DuckDB
    forged.write_bytes(b"hello, not a database\n" * 300)
    manifest_path(forged).write_text(json.dumps({**made.manifest, "sha256": sha256(forged), "bytes": 6600}))
    cases = [(plain, "is not a hopforge backup: there is no manifest plain.duckdb.json beside it"),
             (changed, "is not the backup its manifest describes (its size or sha256 differs"),
             (forged, "cannot be opened as a DuckDB warehouse"),
             (tmp_path / "none.duckdb", "no backup file at")]  # fmt: skip
    for path, says in cases:
        result = runner.invoke(app, ["warehouse", "restore", str(path)])
        text = _flat(result.output)
        assert result.exit_code == 2 and says in text and "Traceback" not in text, (path, text)
        assert text.startswith("warehouse error:")
        _unchanged(filled, digest)


def test_restore_refuses_while_a_writer_holds_the_warehouse(filled):
    made = backup(filled.warehouse_path, data_dir=filled.data_dir)
    digest = sha256(filled.warehouse_path)
    with held(filled.warehouse_path, 60) as proc:
        result = runner.invoke(app, ["warehouse", "restore", str(made.path)])
        text = _flat(result.output)
        assert result.exit_code == 2 and f"is in use by process {proc.pid}" in text, text
        assert "restore replaces the file" in text
        backing = runner.invoke(app, ["warehouse", "backup"])  # a backup waits for nothing to write, too
        assert backing.exit_code == 2 and f"locked by process {proc.pid}" in _flat(backing.output)
    _unchanged(filled, digest)
    assert len(list_backups(filled.data_dir / "backups")) == 1


# -- exports name their backup ---------------------------------------------------------------------------------------
def test_an_export_names_the_backup_it_can_be_rebuilt_from(warehouse):
    es = warehouse  # settings whose warehouse holds questions, gold paths and trajectories
    first = json.loads((Path(run_export(es)["path"]) / "manifest.json").read_text())
    assert first["warehouse_backup"]["id"] is None
    assert first["warehouse_backup"]["reason"].startswith("no backup in <data_dir>/backups")
    made = backup(es.warehouse_path, data_dir=es.data_dir)
    out = run_export(es)
    second = json.loads((Path(out["path"]) / "manifest.json").read_text())
    assert second["warehouse_backup"] == out["warehouse_backup"] == {
        "id": made.id, "sha256": made.sha256, "created_at": made.manifest["created_at"],
        "migration": made.manifest["migration"], "tables": ["gold_paths", "qa", "trajectories"]}
    assert str(es.data_dir) not in json.dumps(second)  # exports are published: no machine paths
    with Warehouse(es.warehouse_path) as wh:  # the questions change after the backup
        wh.execute("UPDATE qa SET question = question || ' (edited)' WHERE split = 'train'")
    third = json.loads((Path(run_export(es)["path"]) / "manifest.json").read_text())
    assert third["warehouse_backup"]["id"] is None
    assert f"the newest, {made.id}, differs in qa" in third["warehouse_backup"]["reason"]
    restore(made.path, es.warehouse_path)  # the backup rebuilds the second export
    rebuilt = run_export(es)
    assert rebuilt["version"] == out["version"] and rebuilt["warehouse_backup"]["id"] == made.id
