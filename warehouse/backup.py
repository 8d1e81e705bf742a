"""Backups of the warehouse: an integrity check, a consistent copy with a manifest, and a restore.

How a backup is made, and why so: the copy is DuckDB's own ``ATTACH '<new file>'`` + ``COPY FROM DATABASE``, run
by a connection that holds the warehouse's writer lock (DuckDB's lock on the file, the one every flow holds for its
whole run: ``open_run``), so nothing writes while it runs, and the copy reads one transaction's snapshot. The result
is a DuckDB file with the same tables, columns, types, keys, defaults and views, that opens as a warehouse as it is;
restoring it is putting the file in place. The other two ways were weighed:

- a file copy under the lock after a ``CHECKPOINT`` would read the warehouse through a second descriptor of this
  process, and DuckDB's lock is a POSIX record lock (``fcntl``), which the kernel drops for the whole process when
  any descriptor of that file is closed: the copy would end the lock it relies on, silently. It would also copy
  free blocks.
- ``EXPORT DATABASE`` writes CSV or Parquet and SQL to replay: a restore would be a re-import (slow on a large
  graph), not a file a person can check by its sha256 and put back.

Every backup file has a manifest beside it (``<file>.json``): its id, sha256, size, creation time, migration level,
DuckDB version, and per table the row count and a digest of the rows (the sum of the md5 of each row's JSON, so it
does not depend on row order). Restore refuses a file without one, or whose sha256 differs. The digests let an
export name the backup it can be rebuilt from (``backup_for_export``): the newest backup whose tables read by the
export hold the same rows as the warehouse at export time.

Restore never deletes: the current warehouse (and its ``.wal``, which belongs to it) is moved aside as
``<name>.replaced-<time>.duckdb`` while restore holds the same kind of lock on it, so a running flow (which holds
it) makes restore refuse, and no flow can open it mid-swap.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from warehouse.db import (
    Warehouse,
    WarehouseError,
    WarehouseLockedError,
    _first_line,
    _lock_holder,
    damage_is_an_error,
    is_damage,
)
from warehouse.migrations import MIGRATIONS

BACKUP_KIND = "hopforge-warehouse-backup"
BACKUP_FORMAT = 1
_ATTACHED = "hopforge_backup"


def _q(name: str) -> str:
    """An SQL identifier, quoted (catalog names come from file names and may hold any character)."""
    return '"' + name.replace('"', '""') + '"'


def _sql_string(path: Path) -> str:
    return str(path).replace("'", "''")


def manifest_path(backup_file: Path) -> Path:
    """Where a backup file's manifest is: beside it, ``<file>.json``."""
    return backup_file.with_name(backup_file.name + ".json")


def backups_dir(data_dir: Path) -> Path:
    """The default folder of backups: ``<data_dir>/backups``."""
    return data_dir / "backups"


# -- what a database holds ----------------------------------------------------------------------------------------
def base_tables(con: duckdb.DuckDBPyConnection, catalog: str) -> list[str]:
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_catalog = ? AND table_schema = 'main' "
        "AND table_type = 'BASE TABLE' ORDER BY table_name", [catalog]).fetchall()  # fmt: skip
    return [r[0] for r in rows]


def table_state(con: duckdb.DuckDBPyConnection, catalog: str, table: str) -> dict[str, Any]:
    """Rows and digest of one table, reading every row and column (so a block that cannot be read fails here)."""
    n, digest = con.execute(
        f"SELECT count(*), coalesce(sum(md5_number_lower(to_json(t)::VARCHAR)::HUGEINT), 0)::VARCHAR "
        f"FROM {_q(catalog)}.main.{_q(table)} AS t").fetchone()  # fmt: skip
    return {"rows": int(n), "digest": digest}


def table_states(con: duckdb.DuckDBPyConnection, catalog: str, tables: Sequence[str] | None = None
                 ) -> dict[str, dict[str, Any] | None]:  # fmt: skip
    """``table_state`` of ``tables`` (default: every base table); None for a table the database does not have."""
    present = set(base_tables(con, catalog))
    names = list(tables) if tables is not None else sorted(present)
    return {t: (table_state(con, catalog, t) if t in present else None) for t in names}


def migration_level(con: duckdb.DuckDBPyConnection, catalog: str) -> int | None:
    """The highest migration applied, or None for a database without ``_migrations`` (not a warehouse)."""
    if "_migrations" not in base_tables(con, catalog):
        return None
    return int(con.execute(f"SELECT coalesce(max(number), 0) FROM {_q(catalog)}.main._migrations").fetchone()[0])


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- check --------------------------------------------------------------------------------------------------------
@dataclass
class CheckReport:
    """What ``check`` found: the migration level, rows per table, the file's blocks, and problems (first first)."""

    path: Path
    migration: int | None = None
    expected_migration: int = field(default_factory=lambda: MIGRATIONS[-1].number)
    rows: dict[str, int] = field(default_factory=dict)
    blocks: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def raise_first(self) -> None:
        """A ``WarehouseError`` naming the first problem (and how many more there are)."""
        if self.problems:
            more = f" ({len(self.problems) - 1} more problem(s) after it)" if len(self.problems) > 1 else ""
            raise WarehouseError(f"the warehouse {self.path} fails its check: {self.problems[0]}{more}")


def expected_schema(level: int) -> dict[str, dict[str, str]]:
    """Tables and views (name -> column -> type) that the migrations up to ``level`` create."""
    with Warehouse(":memory:", migrate=False) as mem:
        mem.migrate([m for m in MIGRATIONS if m.number <= level])
        return _schema(mem.con, mem.scalar("SELECT current_database()"))


def _schema(con: duckdb.DuckDBPyConnection, catalog: str) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for table, column, kind in con.execute(
        "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_catalog = ? "
        "AND table_schema = 'main' ORDER BY table_name, ordinal_position", [catalog]).fetchall():  # fmt: skip
        out.setdefault(table, {})[column] = kind
    return out


def check(path: Path, *, lock_wait_s: float = 0.0) -> CheckReport:
    """Check the warehouse at ``path``: it opens (read-only, so a running flow makes this wait or refuse, like any
    reader); ``_migrations`` holds every migration up to its level and that level is this hopforge's; every table
    and column those migrations make is there with its type; ``PRAGMA database_size`` answers; every table is
    read whole (every row and column: a block cut off or failing its checksum is found here, which opening alone
    does not find); and every key index is read through for every row (``check_indexes``: DuckDB keeps a table's
    PRIMARY KEY and UNIQUE indexes in blocks of their own, which no read of the table touches, and the first
    write that reaches a damaged one fails). Problems are collected in order, each naming the table or index;
    a file that cannot be opened raises its one-line error."""
    report = CheckReport(path)
    if not path.is_file():
        raise WarehouseError(f"no warehouse at {path}: nothing to check (run a flow first, or restore a backup "
                             "with `hopforge warehouse restore <backup>`)")
    with Warehouse(path, read_only=True, lock_wait_s=lock_wait_s) as wh:
        catalog = wh.scalar("SELECT current_database()")
        try:
            with damage_is_an_error(path):
                size = wh.query("PRAGMA database_size")
                report.blocks = {k: size[0][k] for k in ("block_size", "total_blocks", "used_blocks", "free_blocks")
                                 if size and k in size[0]}  # fmt: skip
                report.migration = level = migration_level(wh.con, catalog)
                if level is None:
                    report.problems.append("it has no _migrations table: it is a DuckDB file but not a hopforge "
                                           "warehouse")
                    return report
                applied = {r[0] for r in wh.con.execute("SELECT number FROM _migrations").fetchall()}
        except WarehouseError as exc:
            report.problems.append(str(exc))
            return report
        missing = sorted({m.number for m in MIGRATIONS if m.number <= level} - applied)
        if missing:
            report.problems.append(f"migrations {missing} are not recorded in _migrations although it is at "
                                   f"migration {level}: the file was changed by hand or is damaged")
        if level > report.expected_migration:
            report.problems.append(f"it is at migration {level}, newer than this hopforge knows "
                                   f"({report.expected_migration}): use the hopforge that wrote it")
        elif level < report.expected_migration:
            report.problems.append(f"it is at migration {level}, this hopforge expects {report.expected_migration}: "
                                   "any flow that writes it migrates it (e.g. `hopforge doctor`)")
        actual = _schema(wh.con, catalog)
        for table, columns in expected_schema(min(level, report.expected_migration)).items():
            if table not in actual:
                report.problems.append(f"table {table} is missing")
                continue
            for column, kind in columns.items():
                found = actual[table].get(column)
                if found is None:
                    report.problems.append(f"column {table}.{column} is missing")
                elif found != kind:
                    report.problems.append(f"column {table}.{column} is {found}, expected {kind}")
        for table in base_tables(wh.con, catalog):
            try:
                with damage_is_an_error(path):
                    report.rows[table] = table_state(wh.con, catalog, table)["rows"]
            except WarehouseError as exc:
                report.problems.append(f"table {table} cannot be read whole: {exc}")
    report.problems.extend(check_indexes(path, lock_wait_s=lock_wait_s))
    return report


#: Rows per probe of an index: DuckDB's vector size. A table's row ids are stored in vectors of this many rows
#: (aligned, row groups are whole vectors), so one probe is one vector of the scan, and DuckDB looks every key of
#: an appended vector up in the table's indexes before it reports the first duplicate.
INDEX_PROBE_ROWS = 2048


@dataclass(frozen=True)
class KeyIndex:
    """A PRIMARY KEY or UNIQUE constraint of a table: DuckDB keeps an index (an ART) for each."""

    table: str
    kind: str
    columns: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.kind} ({', '.join(self.columns)}) of table {self.table}"


def key_indexes(con: duckdb.DuckDBPyConnection, catalog: str) -> list[KeyIndex]:
    """Every PRIMARY KEY and UNIQUE constraint of the base tables of ``catalog``, in table order."""
    rows = con.execute(
        "SELECT table_name, constraint_type, constraint_column_names FROM duckdb_constraints() "
        "WHERE database_name = ? AND schema_name = 'main' AND constraint_type IN ('PRIMARY KEY', 'UNIQUE') "
        "ORDER BY table_name, constraint_index", [catalog]).fetchall()  # fmt: skip
    return [KeyIndex(t, kind, tuple(cols)) for t, kind, cols in rows]


def check_indexes(path: Path, *, lock_wait_s: float = 0.0) -> list[str]:
    """Read every key index of the warehouse at ``path`` through for every row; the problems found, each naming
    the index and its table.

    DuckDB has no statement that verifies an index, and a query reads one only for a point lookup on a single
    column, so this asks the index about every key the way a write does: in a transaction that is always rolled
    back, each vector of a table's rows is inserted again. DuckDB looks each key up in the index (reading every
    block on its path) and refuses the vector as a duplicate, which is the expected answer; a block that fails
    its checksum is damage; a vector that is not refused means the index lacks keys its table holds. For a table
    with more than one key, the other keys' text columns get a suffix no key has, so the index under test is the
    one that refuses. Nothing is written: the file is opened for writing (DuckDB refuses inserts otherwise, so a
    running flow or reader makes this wait or refuse, like a flow), without migrating, and closes without a
    checkpoint."""
    problems: list[str] = []
    with Warehouse(path, migrate=False, lock_wait_s=lock_wait_s) as wh:
        con = wh.con
        con.execute("PRAGMA disable_checkpoint_on_shutdown")
        catalog = con.execute("SELECT current_database()").fetchone()[0]
        indexes = key_indexes(con, catalog)
        types = {(t, c): k for t, c, k in con.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_catalog = ? "
            "AND table_schema = 'main'", [catalog]).fetchall()}  # fmt: skip
        for index in indexes:
            others = {c for i in indexes if i.table == index.table and i != index for c in i.columns}
            fresh = sorted(c for c in others - set(index.columns) if types.get((index.table, c)) == "VARCHAR")
            replace = (" REPLACE (" + ", ".join(f"{_q(c)} || chr(1) || 'hopforge check' AS {_q(c)}" for c in fresh)
                       + ")") if fresh else ""
            where = " AND ".join(f"{_q(c)} IS NOT NULL" for c in index.columns)  # NULLs are never duplicates
            table = f"{_q(catalog)}.main.{_q(index.table)}"
            try:
                with damage_is_an_error(path):
                    last = con.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0]
                    for start in range(0, -1 if last is None else int(last) + 1, INDEX_PROBE_ROWS):
                        missing = _probe(con, table, replace, where, start)
                        if missing:
                            problems.append(f"index {index} lacks the keys of rows {start}-"
                                            f"{start + INDEX_PROBE_ROWS - 1} that its table holds: the index is "
                                            "damaged; restore a backup with `hopforge warehouse restore <backup>`")
                            break
            except WarehouseError as exc:
                problems.append(f"index {index} cannot be read: {exc}")
    return problems


def _probe(con: duckdb.DuckDBPyConnection, table: str, replace: str, where: str, start: int) -> bool:
    """Insert the rows ``start``..``start + INDEX_PROBE_ROWS - 1`` of ``table`` again in a transaction rolled
    back: whether any of them was not refused as a duplicate (DuckDB's damage errors pass through)."""
    con.execute("BEGIN TRANSACTION")
    try:
        added = con.execute(f"INSERT INTO {table} SELECT *{replace} FROM {table} WHERE rowid >= ? AND rowid < ? "
                            f"AND {where}", [start, start + INDEX_PROBE_ROWS]).fetchone()[0]  # fmt: skip
    except duckdb.ConstraintException:
        return False
    finally:
        con.execute("ROLLBACK")
    return bool(added)


# -- backup -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Backup:
    """A backup file and its manifest."""

    path: Path
    manifest: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.manifest["id"])

    @property
    def sha256(self) -> str:
        return str(self.manifest["sha256"])


def backup(warehouse: Path, out: Path | None = None, *, data_dir: Path, lock_wait_s: float = 0.0) -> Backup:
    """Copy the warehouse to ``out`` (a file, or a folder to put it in; default ``<data_dir>/backups``) as
    ``warehouse-<UTC time>-<6 hex>.duckdb`` with its manifest beside it (module docstring: how and why). Written
    to a temporary file, checked against the warehouse (the same rows in every table), then renamed into place,
    manifest last: a backup file that has a manifest is whole."""
    if not warehouse.is_file():
        raise WarehouseError(f"no warehouse at {warehouse}: nothing to back up")
    stamp = datetime.now(timezone.utc)
    backup_id = f"warehouse-{stamp:%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    target = out if out is not None else backups_dir(data_dir)
    if target.is_dir() or out is None:
        target = target / f"{backup_id}.duckdb"
    if target.exists() or manifest_path(target).exists():
        raise WarehouseError(f"{target} already exists: a backup never replaces a file; give another --out")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WarehouseError(f"cannot make the backup folder {target.parent}: {exc.strerror or exc}; give --out "
                             "in a folder you can write") from None
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp.duckdb")
    try:
        manifest = _copy(warehouse, tmp, lock_wait_s)
        manifest.update({"kind": BACKUP_KIND, "format": BACKUP_FORMAT, "id": backup_id, "file": target.name,
                         "created_at": stamp.isoformat(timespec="seconds"), "sha256": _sha256(tmp),
                         "bytes": tmp.stat().st_size, "duckdb": duckdb.__version__})  # fmt: skip
        _fsync(tmp)
        mtmp = tmp.with_name(tmp.name + ".json")
        mtmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        _fsync(mtmp)
        os.replace(tmp, target)
        os.replace(mtmp, manifest_path(target))
        _fsync(target.parent)
    except OSError as exc:
        raise WarehouseError(f"cannot write the backup {target}: {exc.strerror or exc}; free space or give --out "
                             "in another folder") from None
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal"), tmp.with_name(tmp.name + ".json")):
            leftover.unlink(missing_ok=True)
    return Backup(target, manifest)


def _copy(warehouse: Path, dest: Path, lock_wait_s: float) -> dict[str, Any]:
    """``COPY FROM DATABASE`` of ``warehouse`` into the new file ``dest`` under the writer lock; the manifest's
    migration level and tables, from the copy, after checking they are the warehouse's."""
    with Warehouse(warehouse, migrate=False, lock_wait_s=lock_wait_s) as wh, damage_is_an_error(warehouse):
        source = wh.scalar("SELECT current_database()")
        try:
            wh.con.execute(f"ATTACH '{_sql_string(dest)}' AS {_ATTACHED}")
        except duckdb.IOException as exc:
            raise WarehouseError(f"cannot write the backup {dest}: {_first_line(exc)}; give --out in a folder you "
                                 "can write") from None
        try:
            wh.con.execute(f"COPY FROM DATABASE {_q(source)} TO {_ATTACHED}")
            copied = table_states(wh.con, _ATTACHED)
            level = migration_level(wh.con, _ATTACHED)
        finally:
            wh.con.execute(f"DETACH {_ATTACHED}")
        original = table_states(wh.con, source)
    if copied != original:
        differ = sorted(t for t in set(copied) | set(original) if copied.get(t) != original.get(t))
        raise WarehouseError(f"the copy of {warehouse} differs from it in {', '.join(differ)}: no backup was "
                             "written (report this as a bug, with the DuckDB version)")
    if level is None:
        raise WarehouseError(f"{warehouse} has no _migrations table: it is not a hopforge warehouse")
    return {"migration": level, "tables": copied}


# -- what backups there are ---------------------------------------------------------------------------------------
def read_manifest(backup_file: Path) -> dict[str, Any]:
    """The manifest beside ``backup_file``; a ``WarehouseError`` when there is none or it is not a backup's."""
    where = manifest_path(backup_file)
    if not where.is_file():
        raise WarehouseError(f"{backup_file} is not a hopforge backup: there is no manifest {where.name} beside it "
                             "(`hopforge warehouse backup` writes one with every backup)")
    try:
        manifest = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise WarehouseError(f"{backup_file} is not a hopforge backup: its manifest {where.name} cannot be read "
                             f"({exc})") from None
    keys = {"kind", "id", "sha256", "bytes", "migration", "tables"}
    if not isinstance(manifest, dict) or manifest.get("kind") != BACKUP_KIND or not keys <= set(manifest):
        raise WarehouseError(f"{backup_file} is not a hopforge backup: {where.name} is not a backup manifest "
                             f"(kind {BACKUP_KIND!r} with {', '.join(sorted(keys))})")
    return manifest


def list_backups(folder: Path) -> list[Backup]:
    """The backups in ``folder`` with a readable manifest, newest first (files are not hashed here)."""
    found = []
    for where in folder.glob("*.duckdb.json") if folder.is_dir() else []:
        file = where.with_name(where.name[: -len(".json")])
        try:
            found.append(Backup(file, read_manifest(file)))
        except WarehouseError:
            continue
    return sorted(found, key=lambda b: (str(b.manifest.get("created_at", "")), b.id), reverse=True)


def verify_backup(backup_file: Path) -> dict[str, Any]:
    """The manifest of ``backup_file`` once the file is checked to be the backup it describes: the size and
    sha256 the manifest gives, a DuckDB file at the manifest's migration level, one this hopforge can use. Any
    failure is a ``WarehouseError`` of one line."""
    if not backup_file.is_file():
        raise WarehouseError(f"no backup file at {backup_file}")
    manifest = read_manifest(backup_file)
    size = backup_file.stat().st_size
    if size != manifest["bytes"] or _sha256(backup_file) != manifest["sha256"]:
        raise WarehouseError(f"{backup_file} is not the backup its manifest describes (its size or sha256 differs: "
                             "changed or cut short after the backup): restore another backup")
    try:
        con = duckdb.connect(str(backup_file), read_only=True)
    except duckdb.Error as exc:
        if not is_damage(exc) and "lock" not in str(exc).lower():
            raise
        raise WarehouseError(f"{backup_file} cannot be opened as a DuckDB warehouse: {_first_line(exc)}") from None
    try:
        level = migration_level(con, con.execute("SELECT current_database()").fetchone()[0])
    finally:
        con.close()
    if level != manifest["migration"]:
        raise WarehouseError(f"{backup_file} is at migration {level}, its manifest says {manifest['migration']}: "
                             "it is not the backup its manifest describes")
    latest = MIGRATIONS[-1].number
    if level > latest:
        raise WarehouseError(f"{backup_file} is at migration {level}, newer than this hopforge knows ({latest}): "
                             "restore it with the hopforge that wrote it")
    return manifest


# -- restore ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Restored:
    backup: Backup
    warehouse: Path
    moved_aside: Path | None
    migrated_from: int | None = None  # the backup's migration level, when it was older than this hopforge's


@contextmanager
def _writer_lock(path: Path, lock_wait_s: float) -> Iterator[None]:
    """Hold the lock DuckDB takes on a warehouse it opens (an exclusive ``fcntl`` lock on the whole file) for the
    time of the block, waiting up to ``lock_wait_s`` for a holder: a flow that has the warehouse open makes this
    refuse, and no flow can open it meanwhile. No DuckDB connection to ``path`` may be open in this process (a
    descriptor closed here would end its lock: POSIX locks belong to the process)."""
    if not path.exists():
        yield
        return
    fd = os.open(path, os.O_RDWR)
    try:
        deadline = time.monotonic() + lock_wait_s
        while True:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EACCES, errno.EAGAIN):
                    raise
                if time.monotonic() >= deadline:
                    raise WarehouseLockedError(_in_use_message(path, lock_wait_s)) from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


def _in_use_message(path: Path, waited_s: float) -> str:
    holder = "another process"
    try:  # DuckDB's own refusal names the process that holds the file
        duckdb.connect(str(path), read_only=True).close()
    except duckdb.IOException as exc:
        holder = _lock_holder(exc)
    except duckdb.Error:
        pass
    waited = f" after waiting {waited_s:g} s (lock_wait_s)" if waited_s else ""
    return (f"the warehouse {path} is in use by {holder}{waited}: restore replaces the file, so let that process "
            "finish or stop it first (or let restore wait for it: HOPFORGE_LOCK_WAIT_S=600)")


def restore(backup_file: Path, warehouse: Path, *, lock_wait_s: float = 0.0) -> Restored:
    """Put the backup ``backup_file`` in place of ``warehouse``: verified first (``verify_backup``), refused while
    any process has the warehouse open, the current file (and its ``.wal``) moved aside, never deleted, and the
    backup copied in through a temporary file checked against the manifest's sha256, then renamed. A backup made
    by an older hopforge is then migrated, as the next flow would do, so ``check`` passes on it."""
    manifest = verify_backup(backup_file)
    if warehouse.exists() and backup_file.resolve() == warehouse.resolve():
        raise WarehouseError(f"{backup_file} is the warehouse itself: give a backup file")
    try:
        warehouse.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WarehouseError(f"cannot make the folder {warehouse.parent}: {exc.strerror or exc}") from None
    wal = warehouse.with_name(warehouse.name + ".wal")
    stamp = f"{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
    aside = warehouse.with_name(f"{warehouse.stem}.replaced-{stamp}{warehouse.suffix}")
    tmp = warehouse.with_name(f".{warehouse.name}.restore-{stamp}")
    moved = None
    try:
        shutil.copyfile(backup_file, tmp)
        _fsync(tmp)
        if _sha256(tmp) != manifest["sha256"]:
            raise WarehouseError(f"the copy of {backup_file} next to the warehouse differs from the backup: the "
                                 f"disk may be failing; nothing was replaced")
        with _writer_lock(warehouse, lock_wait_s):
            if warehouse.exists():
                os.rename(warehouse, aside)
                moved = aside
            if wal.exists():  # a WAL belongs to its database: left here, DuckDB would replay it onto the backup
                os.rename(wal, aside.with_name(aside.name + ".wal"))
                moved = moved or aside.with_name(aside.name + ".wal")
            os.rename(tmp, warehouse)
        _fsync(warehouse.parent)
    except OSError as exc:
        raise WarehouseError(f"cannot restore into {warehouse}: {exc.strerror or exc} ({exc.filename}); "
                             + (f"the previous warehouse is at {moved}" if moved else "nothing was replaced")) from None
    finally:
        tmp.unlink(missing_ok=True)
    migrated_from = None
    if manifest["migration"] < MIGRATIONS[-1].number:
        Warehouse(warehouse, lock_wait_s=lock_wait_s).close()
        migrated_from = int(manifest["migration"])
    return Restored(Backup(backup_file, manifest), warehouse, moved, migrated_from)


# -- exports ------------------------------------------------------------------------------------------------------
def backup_for_export(wh: Warehouse, data_dir: Path, tables: Sequence[str]) -> dict[str, Any]:
    """Which backup an export made now can be rebuilt from: the newest backup in ``<data_dir>/backups`` whose
    ``tables`` (those the export reads) hold the same rows as the warehouse now (same counts and digests). Its id,
    sha256, creation time and migration level; or ``{"id": None, "reason": ...}`` when none does. Taking a backup
    at each export would copy the whole warehouse (graphs included) for every export, so the export names one
    instead and says when there is none, with the command that makes one. No machine paths: exports are
    published."""
    tables = sorted(tables)
    now = table_states(wh.con, wh.scalar("SELECT current_database()"), tables)
    candidates = list_backups(backups_dir(data_dir))
    for b in candidates:
        if all(b.manifest["tables"].get(t) == now[t] for t in tables):
            return {"id": b.id, "sha256": b.sha256, "created_at": b.manifest.get("created_at"),
                    "migration": b.manifest["migration"], "tables": tables}  # fmt: skip
    if not candidates:
        reason = "no backup in <data_dir>/backups"
    else:
        newest = candidates[0]
        changed = [t for t in tables if newest.manifest["tables"].get(t) != now[t]]
        reason = (f"none of the {len(candidates)} backup(s) in <data_dir>/backups holds these rows (the newest, "
                  f"{newest.id}, differs in {', '.join(changed)})")
    return {"id": None, "reason": reason + ": run `hopforge warehouse backup` to make one", "tables": tables}
