"""The DuckDB warehouse: one file, one writer (the flow process), numbered migrations.

Stages never hold a connection: they return records, and the flow writes them here in one transaction per
batch, so a crash leaves either the whole batch or nothing.

This is the only place that turns records into rows and back: ``write(table, records)`` stores pydantic models
(lists and nested models go to JSON columns) and ``read(table, Model, where=...)`` gives them back as models. Flows
use those two for ordinary reads and writes and keep SQL for aggregates and the few set-based updates.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import duckdb
from pydantic import BaseModel

from schemas.errors import WarehouseError  # re-exported: callers import it from here
from warehouse.migrations import MIGRATIONS, Migration, check_ordered

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

M = TypeVar("M", bound=BaseModel)


class WarehouseLockedError(WarehouseError):
    """Another process holds the DuckDB file's write lock."""


def _lock_holder(exc: Exception) -> str:
    holder = re.search(r"Conflicting lock is held in (.+?) \(PID (\d+)\)", str(exc))
    return f"process {holder.group(2)} ({holder.group(1)})" if holder else "another process"


def _lock_message(path: Path, exc: Exception, waited_s: float = 0.0) -> str:
    waited = (f" after waiting {waited_s:g} s (lock_wait_s)" if waited_s else "")
    return (
        f"the warehouse {path} is locked by {_lock_holder(exc)}{waited}. DuckDB allows one writing process: wait "
        f"for that flow to finish or stop it, let commands wait for it (HOPFORGE_LOCK_WAIT_S=600), or point this "
        f"command at another file with HOPFORGE_WAREHOUSE."
    )


def is_damage(exc: BaseException) -> bool:
    """Whether DuckDB's error means the file itself is damaged or is not a DuckDB database: cut short
    (``IOException``: could not read enough bytes), not a database (``IOException``: not a valid DuckDB database
    file), or a block whose checksum fails (DuckDB raises its base ``duckdb.Error`` for it: corrupt database file).
    Other errors (a lock, a missing folder, a bad query, a bug) are not damage and keep their own handling.
    These three are what DuckDB (2.0) raised in a sweep that overwrote each 4 KiB of a warehouse in turn and then
    checked, read and wrote it (``tests/test_warehouse_damage.py`` sweeps each block); no ``InternalException`` or
    ``FatalException`` came of damage there, so neither is mapped: they stay a bug's traceback."""
    text = str(exc).lower()
    if isinstance(exc, duckdb.IOException):
        return "could not read enough bytes" in text or "not a valid duckdb database file" in text
    return type(exc) is duckdb.Error and "corrupt database file" in text


def damaged_message(path: Path | str, exc: BaseException) -> str:
    """The one line for a damaged warehouse file: what is wrong and the two ways on."""
    return (f"the warehouse file {path} is damaged or not a DuckDB warehouse ({_first_line(exc)}): restore a "
            "backup with `hopforge warehouse restore <backup>` (`hopforge warehouse backup` writes them to "
            "<data_dir>/backups), or move the file aside to start anew")


class WarehouseDamagedError(WarehouseError):
    """The warehouse file is cut short, not a DuckDB file, or has a block that fails its checksum."""


@contextmanager
def damage_is_an_error(path: Path | str) -> Iterator[None]:
    """Inside: DuckDB's damage errors (``is_damage``) become a ``WarehouseDamagedError`` naming ``path``."""
    try:
        yield
    except duckdb.Error as exc:
        if not is_damage(exc):
            raise
        raise WarehouseDamagedError(damaged_message(path, exc)) from None


def _connect(target: str, read_only: bool, lock_wait_s: float) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect``, retried while another process holds the file's lock, for up to ``lock_wait_s``."""
    deadline = time.monotonic() + lock_wait_s
    delay, told = 0.05, False
    while True:
        try:
            return duckdb.connect(target, read_only=read_only)
        except duckdb.IOException as exc:
            left = deadline - time.monotonic()
            if "lock" not in str(exc).lower() or left <= 0:
                raise
            if not told:
                print(f"the warehouse {target} is locked by {_lock_holder(exc)}; waiting up to {lock_wait_s:g} s",
                      file=sys.stderr, flush=True)  # fmt: skip
                told = True
            time.sleep(min(delay, left))
            delay = min(delay * 2, 1.0)


def _quote(name: str) -> str:
    if not _IDENT.match(name):
        raise WarehouseError(f"not a valid table or column name: {name!r}")
    return f'"{name}"'


def _to_cell(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, default=str)
    if isinstance(value, Path):
        return str(value)
    return value


def _last_per_key(values: list[list[Any]], keys: list[int] | None) -> list[list[Any]]:
    """Rows with a key given more than once in one batch collapsed to one: at the first one's position, with the
    last one's values (what row-by-row INSERT OR REPLACE leaves)."""
    if keys is None:
        return values
    where: dict[tuple, int] = {}
    out: list[list[Any]] = []
    for row in values:
        key = tuple(row[i] for i in keys)
        at = where.get(key)
        if at is None:
            where[key] = len(out)
            out.append(row)
        else:
            out[at] = row
    return out


def _arrow_frame(cols: list[str], values: list[list[Any]]) -> Any:
    """``values`` as an Arrow table with one column per name, or None when a column's values have no one Arrow
    type (e.g. strings and numbers mixed): the caller then inserts row by row."""
    import pyarrow as pa

    arrays = []
    for i in range(len(cols)):
        column = [row[i] for row in values]
        kinds = {type(v) for v in column if v is not None}
        if bool in kinds and len(kinds) > 1:  # Arrow would read True as 1.0 next to floats
            return None
        try:
            arrays.append(pa.array(column))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError, TypeError):
            return None
    return pa.Table.from_arrays(arrays, names=cols)


class Warehouse:
    """A DuckDB warehouse file (or ``:memory:``), migrated to the latest schema on open."""

    def __init__(self, path: str | Path = ":memory:", *, read_only: bool = False, migrate: bool = True,
                 lock_wait_s: float = 0.0):  # fmt: skip
        self.path = Path(path) if str(path) != ":memory:" else None
        self.read_only = read_only
        self._lock = threading.RLock()
        target = str(self.path) if self.path is not None else ":memory:"
        if self.path is not None and not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        if read_only and self.path is not None and not self.path.exists():
            raise WarehouseError(f"no warehouse at {self.path}: run a flow first (e.g. `hopforge doctor`)")
        try:
            with damage_is_an_error(target):
                self.con = _connect(target, read_only, lock_wait_s)
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise WarehouseLockedError(_lock_message(Path(target), exc, lock_wait_s)) from None
            raise WarehouseError(f"cannot open the warehouse {target}: {_first_line(exc)} Point HOPFORGE_WAREHOUSE "
                                 "(or data_dir) at a DuckDB file, or move this file away so a new one is made.") from None
        self._json_columns: dict[str, frozenset[str]] = {}
        self._primary_keys: dict[str, list[str]] = {}
        self._columns: dict[str, tuple[str, ...]] = {}
        if migrate and not read_only:
            try:  # a file cut short opens, and fails at the first read of a lost block: here, reading _migrations
                with damage_is_an_error(target):
                    self.migrate()
            except BaseException:
                self.con.close()
                raise

    # -- lifecycle --------------------------------------------------------------------------------
    @property
    def _where(self) -> str:
        return str(self.path) if self.path is not None else ":memory:"

    def close(self) -> None:
        with self._lock, damage_is_an_error(self._where):  # closing checkpoints: it writes what was committed
            self.con.close()

    def __enter__(self) -> "Warehouse":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- migrations -------------------------------------------------------------------------------
    def migrate(self, migrations: Sequence[Migration] = MIGRATIONS) -> list[int]:
        """Apply every migration not yet applied, each in its own transaction. Returns the numbers applied."""
        check_ordered(list(migrations))
        with self._lock:
            self.con.execute(
                "CREATE TABLE IF NOT EXISTS _migrations (number INTEGER PRIMARY KEY, name VARCHAR, "
                "applied_at TIMESTAMP DEFAULT current_timestamp)"
            )
            done = {r[0] for r in self.con.execute("SELECT number FROM _migrations").fetchall()}
            applied = []
            for m in migrations:
                if m.number in done:
                    continue
                self.con.execute("BEGIN TRANSACTION")
                try:
                    self.con.execute(m.sql)
                    self.con.execute("INSERT INTO _migrations (number, name) VALUES (?, ?)", [m.number, m.name])
                    self.con.execute("COMMIT")
                except Exception:
                    self.con.execute("ROLLBACK")
                    raise
                applied.append(m.number)
            if applied:  # tables and columns may have changed
                self._columns.clear()
                self._json_columns.clear()
                self._primary_keys.clear()
            return applied

    def schema_version(self) -> int:
        row = self.con.execute("SELECT coalesce(max(number), 0) FROM _migrations").fetchone()
        return int(row[0])

    def columns(self, table: str) -> list[str]:
        """The table's columns in order; empty for no such table. Remembered per table once found (a lookup in
        ``information_schema`` costs about a millisecond, and every batch write asks); migrations forget them."""
        found = self._columns.get(table)
        if found is None:
            rows = self.con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
                [table],
            ).fetchall()
            found = tuple(r[0] for r in rows)
            if found:
                self._columns[table] = found
        return list(found)

    def json_columns(self, table: str) -> frozenset[str]:
        """The table's JSON columns (DuckDB returns them as text; ``read`` decodes them)."""
        found = self._json_columns.get(table)
        if found is None:
            rows = self.con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? AND data_type = 'JSON'",
                [table],
            ).fetchall()
            found = self._json_columns[table] = frozenset(r[0] for r in rows)
        return found

    def tables(self) -> list[str]:
        rows = self.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY table_name"
        ).fetchall()
        return [r[0] for r in rows]

    # -- reads ------------------------------------------------------------------------------------
    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        with self._lock, damage_is_an_error(self._where):
            cur = self.con.execute(sql, params or [])
            names = [d[0] for d in cur.description] if cur.description else []
            return [dict(zip(names, row)) for row in cur.fetchall()]

    def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        with self._lock, damage_is_an_error(self._where):
            row = self.con.execute(sql, params or []).fetchone()
            return row[0] if row else None

    def read(
        self,
        table: str,
        model: type[M],
        where: str = "TRUE",
        params: Sequence[Any] | None = None,
        *,
        order_by: str | None = None,
    ) -> list[M]:
        """The rows of ``table`` matching the SQL condition ``where`` as ``model`` records, ordered by ``order_by``
        (default: the table's first column, so reads are deterministic). Columns the model does not know are left
        out; JSON columns are decoded."""
        if not self.columns(table):
            raise WarehouseError(f"no table {table!r} in the warehouse")
        order = order_by or _quote(self.columns(table)[0])
        rows = self.query(f"SELECT * FROM {_quote(table)} WHERE {where} ORDER BY {order}", params)
        return [model.model_validate(r) for r in self.rows_for(table, model, rows)]

    def rows_for(self, table: str, model: type[BaseModel], rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """Rows of ``table`` (from ``query``) reduced to ``model``'s fields with JSON columns decoded."""
        fields = model.model_fields
        json_cols = self.json_columns(table)
        for r in rows:
            yield {k: (json.loads(v) if k in json_cols and isinstance(v, str) else v) for k, v in r.items() if k in fields}

    def polars(self, sql: str, params: Sequence[Any] | None = None):
        with self._lock, damage_is_an_error(self._where):
            return self.con.execute(sql, params or []).pl()

    # -- writes -----------------------------------------------------------------------------------
    @contextmanager
    def transaction(self):
        """All statements inside either land together or not at all. Every write goes through here (``write``,
        ``write_batch``, ``delete``, and flows' own transactions), so DuckDB's damage errors in a write (a block or
        an index block failing its checksum, a file cut short) become the one-line ``WarehouseDamagedError`` here."""
        with self._lock, damage_is_an_error(self._where):
            self.con.execute("BEGIN TRANSACTION")
            try:
                yield self.con
            except BaseException:
                self.con.execute("ROLLBACK")
                raise
            else:
                self.con.execute("COMMIT")

    def write_batch(
        self,
        table: str,
        records: Iterable[BaseModel | Mapping[str, Any]],
        *,
        replace: bool = False,
        con: duckdb.DuckDBPyConnection | None = None,
    ) -> int:
        """Insert records (pydantic models or mappings) in one transaction; return how many.

        Columns are the union of the records' keys, checked against the table. ``replace`` turns the insert
        into INSERT OR REPLACE (upsert on the primary key). Pass ``con`` from ``transaction()`` to group
        several tables in one transaction.
        """
        rows = [r.model_dump(mode="json") if isinstance(r, BaseModel) else dict(r) for r in records]
        if not rows:
            return 0
        known = self.columns(table)
        if not known:
            raise WarehouseError(f"no table {table!r} in the warehouse")
        cols: list[str] = []
        for r in rows:
            for k in r:
                if k not in cols:
                    cols.append(k)
        unknown = [c for c in cols if c not in known]
        if unknown:
            raise WarehouseError(f"table {table!r} has no column(s) {unknown}; its columns are {known}")
        verb = "INSERT OR REPLACE" if replace else "INSERT"
        sql = (
            f"{verb} INTO {_quote(table)} ({', '.join(_quote(c) for c in cols)}) "
            f"VALUES ({', '.join('?' for _ in cols)})"
        )
        values = [[_to_cell(r.get(c)) for c in cols] for r in rows]
        if con is not None:
            self._insert(con, table, cols, sql, values, replace)
            return len(rows)
        with self.transaction() as tx:
            self._insert(tx, table, cols, sql, values, replace)
        return len(rows)

    def _insert(self, con: duckdb.DuckDBPyConnection, table: str, cols: list[str], sql: str,
                values: list[list[Any]], replace: bool) -> None:
        """Insert ``values`` (rows of ``cols``) as one Arrow frame (DuckDB's ``executemany`` runs a statement per
        row, milliseconds each: seconds for a batch of a flow). The same rows and values land as with
        ``executemany``: for ``replace``, a key given twice in the batch keeps its last values. Replacing is
        delete-then-insert, so the batch's rows follow the earlier rows in the batch's order (DuckDB's INSERT OR
        REPLACE from a query does not keep the order of its rows). A column Arrow cannot type (mixed kinds of
        values), or a replace without the whole key, goes row by row as before."""
        keys = self._key_positions(table, cols) if replace else None
        frame = _arrow_frame(cols, _last_per_key(values, keys)) if not replace or keys is not None else None
        if frame is None:
            con.executemany(sql, values)
            return
        view = f"_hopforge_rows_{threading.get_ident()}"
        names = ", ".join(_quote(c) for c in cols)
        con.register(view, frame)
        try:
            if keys is not None:
                match = " AND ".join(f"{_quote(table)}.{_quote(cols[i])} = {view}.{_quote(cols[i])}" for i in keys)
                con.execute(f"DELETE FROM {_quote(table)} USING {view} WHERE {match}")
            con.execute(f"INSERT INTO {_quote(table)} ({names}) SELECT {names} FROM {view}")
        finally:
            try:
                con.unregister(view)
            except duckdb.Error:  # an aborted transaction refuses it; the next register replaces the view
                pass

    def _key_positions(self, table: str, cols: list[str]) -> list[int] | None:
        """Where the table's primary key columns are in ``cols`` (None: no key, or a key column not given)."""
        keys = self._primary_keys.get(table)
        if keys is None:
            rows = self.con.execute(
                "SELECT constraint_column_names FROM duckdb_constraints() WHERE table_name = ? "
                "AND constraint_type = 'PRIMARY KEY'", [table]).fetchall()  # fmt: skip
            keys = self._primary_keys[table] = list(rows[0][0]) if rows else []
        if not keys or any(k not in cols for k in keys):
            return None
        return [cols.index(k) for k in keys]

    def write(
        self,
        table: str,
        records: Iterable[BaseModel | Mapping[str, Any]],
        *,
        replace: bool = False,
        con: duckdb.DuckDBPyConnection | None = None,
    ) -> int:
        """Store records in ``table`` in one transaction (see ``write_batch``); the counterpart of ``read``."""
        return self.write_batch(table, records, replace=replace, con=con)

    def delete(self, table: str, column: str, values: Sequence[Any], *,
               con: duckdb.DuckDBPyConnection | None = None) -> None:
        """Delete the rows whose ``column`` is one of ``values``."""
        if not values:
            return
        sql = f"DELETE FROM {_quote(table)} WHERE {_quote(column)} IN (SELECT unnest(?))"
        if con is not None:
            con.execute(sql, [list(values)])
            return
        with self.transaction() as tx:
            tx.execute(sql, [list(values)])

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        with self._lock, damage_is_an_error(self._where):
            self.con.execute(sql, params or [])

    # -- export -----------------------------------------------------------------------------------
    def export_parquet(self, table_or_query: str, dest: str | Path, *, params: Sequence[Any] | None = None) -> Path:
        """Write a table (by name) or a SELECT query to one Parquet file; return its path."""
        dest = Path(dest)
        source = table_or_query.strip().rstrip(";").strip()
        if _IDENT.match(source):
            if source not in self.tables():
                raise WarehouseError(f"no table {source!r}; tables: {', '.join(self.tables())}")
            source = f"SELECT * FROM {_quote(source)}"
        else:
            check_select(source)
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WarehouseError(f"cannot write {dest}: {exc.strerror or exc} ({exc.filename}); choose a destination "
                                 "in a folder you can write") from None
        tmp = dest.with_suffix(dest.suffix + ".tmp")
        with self._lock:
            try:
                self.con.execute(
                    f"COPY ({source}) TO '{_sql_string(tmp)}' (FORMAT parquet, COMPRESSION zstd)", params or []
                )
            except (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException) as exc:
                raise WarehouseError(f"the query {table_or_query!r} cannot run: {_first_line(exc)}") from None
            except duckdb.IOException as exc:
                raise WarehouseError(f"cannot write {dest}: {_first_line(exc)}") from None
        tmp.replace(dest)  # a reader never sees a half-written file
        return dest


def _first_line(exc: Exception) -> str:
    return " ".join(str(exc).split("\n\n")[0].split())


def check_select(sql: str) -> None:
    """``sql`` must be one read-only query (SELECT, WITH ... SELECT, VALUES); anything else is a ``WarehouseError``
    that says so, before it runs."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise WarehouseError(f"the query {sql!r} is not valid SQL: {_first_line(exc)}. Give a table name or one "
                             "SELECT query, e.g. \"SELECT * FROM qa WHERE split = 'test'\"") from None
    kinds = [s.type.name for s in statements]
    if kinds != ["SELECT"]:
        what = "no statement" if not kinds else (f"{len(kinds)} statements" if len(kinds) > 1 else f"a {kinds[0]}")
        raise WarehouseError(f"the query {sql!r} is {what}; export takes a table name or one SELECT query "
                             "(it never changes the warehouse)")


def _sql_string(path: Path) -> str:
    return str(path).replace("'", "''")

