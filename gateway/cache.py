"""Content-addressed LLM response cache.

Key = sha256 over (model, messages, sampling parameters, response schema, tools) in canonical JSON. The gateway
stores a response only after it parsed and validated, so a failure is never replayed. Storage is one SQLite file
in WAL mode: many threads (one connection per thread) and several processes on one machine may read and write
at once; an identical concurrent write is harmless (same key, same meaning).

``scope`` namespaces entries: the default ``global`` scope shares answers across runs (re-running a finished
flow makes zero calls); a run id as scope gives a cache that only that run sees.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Literal

CacheMode = Literal["on", "off", "read_only", "refresh"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    scope      TEXT NOT NULL,
    key        TEXT NOT NULL,
    model      TEXT,
    role       TEXT,
    payload    TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (scope, key)
) WITHOUT ROWID;
"""


def cache_key(
    *,
    model: str,
    messages: list[dict[str, Any]],
    params: dict[str, Any],
    schema: dict[str, Any] | None = None,
    tools: list[dict[str, Any]] | None = None,
) -> str:
    """The content address of one request. Any change to what the model sees or how it samples changes it."""
    blob = json.dumps(
        {"model": model, "messages": messages, "params": params, "schema": schema, "tools": tools},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """A SQLite-backed response store, safe across threads and processes."""

    def __init__(self, path: str | Path, *, mode: CacheMode = "on", scope: str = "global"):
        self.path = Path(path)
        self.mode: CacheMode = mode
        self.scope = scope
        self.errors = 0  # reads and writes that failed (and were skipped)
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        if mode != "off":
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn()  # create the file and table now, so errors surface at construction

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout=30000")
            # Switching to WAL needs an exclusive lock and SQLite may answer BUSY at once, without waiting, when
            # several processes open a new file together: retry briefly.
            for attempt in range(100):
                try:
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.execute(_SCHEMA)
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or attempt == 99:
                        raise
                    time.sleep(0.05)
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    @property
    def readable(self) -> bool:
        return self.mode in ("on", "read_only")

    @property
    def writable(self) -> bool:
        return self.mode in ("on", "refresh")

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored payload, or None (also when the cache cannot be read: a miss costs a call, not the batch)."""
        if not self.readable:
            return None
        try:
            row = self._conn().execute(
                "SELECT payload FROM responses WHERE scope = ? AND key = ?", (self.scope, key)
            ).fetchone()
        except sqlite3.Error:
            self.errors += 1
            return None
        return json.loads(row[0]) if row else None

    def put(self, key: str, payload: dict[str, Any], *, model: str | None = None, role: str | None = None) -> None:
        """Store a validated response. Callers must not pass failures (the gateway guarantees this)."""
        if not self.writable:
            return
        try:
            self._conn().execute(
                "INSERT OR REPLACE INTO responses (scope, key, model, role, payload, created_at) VALUES (?,?,?,?,?,?)",
                (self.scope, key, model, role, json.dumps(payload, ensure_ascii=False), time.time()),
            )
        except sqlite3.Error:
            # Locked past the timeout, disk full...: the answer is still returned; only its reuse is lost.
            self.errors += 1

    def __len__(self) -> int:
        if self.mode == "off":
            return 0
        return int(self._conn().execute("SELECT count(*) FROM responses WHERE scope = ?", (self.scope,)).fetchone()[0])

    def stats(self) -> dict[str, Any]:
        if self.mode == "off":
            return {"mode": "off"}
        rows = self._conn().execute("SELECT scope, role, count(*) FROM responses GROUP BY scope, role").fetchall()
        return {
            "mode": self.mode,
            "path": str(self.path),
            "entries": [{"scope": s, "role": r, "count": n} for s, r, n in rows],
        }

    def clear(self, scope: str | None = None) -> int:
        cur = self._conn().execute("DELETE FROM responses WHERE scope = ?", (scope or self.scope,))
        return cur.rowcount

    def close(self) -> None:
        with self._conns_lock:
            for conn in self._conns:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._conns.clear()
        self._local = threading.local()
