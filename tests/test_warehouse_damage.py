"""Damage is always caught: each block of a small warehouse overwritten in turn is either reported by `warehouse
check` (naming the table or index, with the restore hint) or harmless (every table and index reads back as before
and a write succeeds); and a command that writes a damaged warehouse ends in the one-line `warehouse error:` with
the restore hint and exit 2, never a traceback."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from flows.cli import app
from schemas.config import load_settings
from tasks.graph.importers import read_triples
from warehouse.backup import base_tables, check, check_indexes, key_indexes
from warehouse.db import Warehouse, WarehouseDamagedError
from warehouse.graphs import write_import

ROOT = Path(__file__).resolve().parents[1]
GRAPHS = ROOT / "flows" / "demo" / "graphs"
runner = CliRunner()
#: DuckDB's file starts with three 4 KiB headers (the main header, then two database headers written in turn at
#: checkpoints); its blocks follow them. The headers are damaged as cases of their own, 4 KiB each.
HEADER_BYTES = 4096
HEADERS = 3
HINT = "hopforge warehouse restore"


def _runs(n: int) -> list[dict]:
    return [{"run_id": f"run-{i}", "flow": "test", "status": "completed", "started_at": "2026-01-01 00:00:00"}
            for i in range(n)]  # fmt: skip


def _build(path: Path) -> None:
    """A small warehouse as the project writes it: made (migrated) by a first command, then two imported graphs
    and some runs."""
    Warehouse(path).close()
    with Warehouse(path) as wh:
        for domain in ("cs", "biology"):
            write_import(wh, read_triples(GRAPHS / f"{domain}.jsonl", domain), build_run_id="build")
        wh.write_batch("runs", _runs(40))


@pytest.fixture(scope="module")
def sound(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sound") / "warehouse.duckdb"
    _build(path)
    return path


def _layout(path: Path) -> tuple[int, int, set[int], set[int]]:
    """Block size, block count, the blocks of table columns and of DuckDB's metadata."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        size = con.execute("PRAGMA database_size").fetchone()
        block_size, total = int(size[2]), int(size[3])
        meta = {int(r[0]) for r in con.execute("PRAGMA metadata_info").fetchall()}
        data: set[int] = set()
        for table in base_tables(con, con.execute("SELECT current_database()").fetchone()[0]):
            for block, more in con.execute("SELECT block_id, additional_block_ids FROM pragma_storage_info(?) "
                                           "WHERE block_id >= 0", [table]).fetchall():  # fmt: skip
                data |= {int(block), *(int(b) for b in more or [])}
        return block_size, total, data, meta
    finally:
        con.close()


def _contents(path: Path) -> dict:
    """Every table's rows in order, and for every key index the rows a lookup of each of its keys finds."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        catalog = con.execute("SELECT current_database()").fetchone()[0]
        found: dict = {t: con.execute(f'SELECT * FROM "{t}" ORDER BY ALL').fetchall()
                       for t in base_tables(con, catalog)}
        for index in key_indexes(con, catalog):
            cols = ", ".join(f'"{c}"' for c in index.columns)
            found[str(index)] = con.execute(f'SELECT {cols}, count(*) FROM "{index.table}" GROUP BY ALL ORDER BY ALL'
                                            ).fetchall()  # fmt: skip
        return found
    finally:
        con.close()


def _damage(src: Path, dest: Path, offset: int, length: int, rng: random.Random) -> None:
    shutil.copyfile(src, dest)
    with open(dest, "r+b") as f:
        f.seek(offset)
        f.write(rng.randbytes(length))


def _write(path: Path) -> None:
    with Warehouse(path) as wh:
        wh.write_batch("runs", _runs(41)[40:])
        write_import(wh, read_triples(GRAPHS / "history.jsonl", "history"), build_run_id="after")


def test_every_damaged_block_is_reported_by_check_or_harmless(sound, tmp_path):
    """Each 4 KiB header and each block of the file, overwritten with random bytes in a copy. The figures on this
    warehouse (DuckDB 2.0, 256 KiB blocks): 3 headers and every block (tables, key indexes, metadata; none free)
    are reported by `check`, none is left to the second branch. Before key indexes were read, 5 of its blocks
    (every key index) passed `check`, and the next write that reached one failed with DuckDB's own error."""
    block_size, total, data, meta = _layout(sound)
    size = sound.stat().st_size
    assert size == HEADERS * HEADER_BYTES + total * block_size
    indexes = set(range(total)) - data - meta
    assert indexes, "the warehouse should hold blocks of key indexes"
    before = _contents(sound)
    rng = random.Random(38)
    cases = [(i * HEADER_BYTES, HEADER_BYTES, f"header {i}") for i in range(HEADERS)]
    cases += [(HEADERS * HEADER_BYTES + b * block_size, block_size,
               f"block {b} ({'metadata' if b in meta else 'table data' if b in data else 'index'})")
              for b in range(total)]  # fmt: skip
    reported, harmless = [], []
    for n, (offset, length, what) in enumerate(cases):
        copy = tmp_path / f"damaged-{n}.duckdb"
        _damage(sound, copy, offset, length, rng)
        try:
            problems = check(copy).problems
        except WarehouseDamagedError as exc:  # it does not open: the line names the file and the way on
            problems = [str(exc)]
        if problems:
            assert HINT in problems[0], (what, problems)
            reported.append(what)
            continue
        assert _contents(copy) == before, f"{what}: check passed but the warehouse reads back differently"
        _write(copy)
        harmless.append(what)
    assert len(reported) + len(harmless) == len(cases)
    assert sorted(w for w in reported if "index" in w) == sorted(w for w in (c[2] for c in cases) if "index" in w)
    assert harmless == [], harmless  # the warehouse has no free block: every block holds something check reads


def test_check_names_the_damaged_index(sound, tmp_path):
    block_size, total, data, meta = _layout(sound)
    names = []
    for b in sorted(set(range(total)) - data - meta):
        copy = tmp_path / f"index-{b}.duckdb"
        _damage(sound, copy, HEADERS * HEADER_BYTES + b * block_size, 4096, random.Random(b))
        problems = check_indexes(copy)  # a block may hold nodes of more than one index: each is named
        assert problems and all(p.startswith("index ") and HINT in p for p in problems), problems
        names += [p.split(" cannot be read")[0] for p in problems]
    assert "index PRIMARY KEY (snapshot_id, name) of table entities" in names
    assert "index UNIQUE (domain, content_hash) of table graph_snapshots" in names
    assert check_indexes(sound) == []  # and the sound file is left as it was
    assert check(sound).ok


def _damage_indexes(path: Path) -> None:
    """Overwrite 4 KiB in the middle of every block of a key index (blocks neither table data nor metadata): an
    open and the tables still read, the first write that reaches an index fails."""
    block_size, total, data, meta = _layout(path)
    rng = random.Random(7)
    with open(path, "r+b") as f:
        for b in sorted(set(range(total)) - data - meta):
            f.seek(HEADERS * HEADER_BYTES + b * block_size + block_size // 2)
            f.write(rng.randbytes(4096))


def _one_line_warehouse_error(result, path: Path) -> None:
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "warehouse error:" in text and f"the warehouse file {path} is damaged" in text, text
    assert HINT in text and "Traceback" not in result.output, text
    assert isinstance(result.exception, SystemExit), result.exception


def _hopforge(*argv: str) -> subprocess.CompletedProcess:
    """``hopforge ARGV`` as a person runs it, in its own process, using the test session's Prefect server."""
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value()}
    return subprocess.run([sys.executable, "-m", "flows.cli", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


def _one_line_from_the_process(done: subprocess.CompletedProcess, path: Path) -> None:
    text = " ".join(done.stderr.split())
    assert done.returncode == 2, done.stdout + done.stderr[-3000:]
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
    assert "warehouse error:" in text and f"the warehouse file {path} is damaged" in text, text
    assert HINT in text, text


def test_graph_import_on_a_damaged_warehouse_is_one_line(prefect_harness):
    settings = load_settings()
    _build(settings.warehouse_path)
    _damage_indexes(settings.warehouse_path)
    Warehouse(settings.warehouse_path).close()  # it opens as a writer: the damage is found by the write itself
    result = runner.invoke(app, ["warehouse", "check"])
    _one_line_warehouse_error(result, settings.warehouse_path)
    assert "fails its check: index PRIMARY KEY" in " ".join(result.output.split())
    done = _hopforge("graph", "import", "-d", "cs", str(GRAPHS / "cs.jsonl"))
    _one_line_from_the_process(done, settings.warehouse_path)


def test_ingest_on_a_truncated_warehouse_is_one_line(prefect_harness, tmp_path):
    settings = load_settings()
    _build(settings.warehouse_path)
    # cut short after the last block of table data or metadata, so only key index blocks are lost: the warehouse
    # opens and its tables read (`mark_crashed` reads runs), and the run's first write, which looks its key up in
    # the runs index, meets the cut: DuckDB's IOException "Could not read enough bytes", in a write
    block_size, total, data, meta = _layout(settings.warehouse_path)
    keep = max(data | meta) + 1
    assert keep < total
    whole = settings.warehouse_path.read_bytes()
    settings.warehouse_path.write_bytes(whole[: HEADERS * HEADER_BYTES + keep * block_size])
    with Warehouse(settings.warehouse_path) as wh:
        assert len(wh.query("SELECT * FROM runs")) == 40
    corpus = tmp_path / "corpus" / "agriculture"
    corpus.mkdir(parents=True)
    (corpus / "01_maize.md").write_text("# Maize\n\nMaize was domesticated in Mexico from teosinte.\n",
                                        encoding="utf-8")
    done = _hopforge("ingest", str(tmp_path / "corpus"), "--kind", "folder")
    _one_line_from_the_process(done, settings.warehouse_path)
