"""Shared pieces of the reliability suite: warehouse digests, the figures table printed at the end of the session."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def warehouse_digest(path: Path) -> dict[str, Any]:
    """A digest of every table of the warehouse at ``path`` (its rows in a stable order), and the ``runs`` rows by id.

    ``runs`` is kept apart so a caller can allow a failed run's own record."""
    import duckdb

    if not path.is_file():
        return {}
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY table_name").fetchall()]
        digest: dict[str, Any] = {}
        for t in tables:
            rows = con.execute(f'SELECT * FROM "{t}"').fetchall()
            if t == "runs":
                cols = [d[0] for d in con.execute('SELECT * FROM "runs" LIMIT 0').description]
                digest["runs"] = {r[cols.index("run_id")]: dict(zip(cols, r)) for r in rows}
                continue
            h = hashlib.sha256()
            for line in sorted(repr(r) for r in rows):
                h.update(line.encode())
            digest[t] = (len(rows), h.hexdigest()[:16])
        return digest
    finally:
        con.close()


def warehouse_changes(before: dict[str, Any], after: dict[str, Any], *, allow_own_run: bool) -> list[str]:
    """What changed between two digests; with ``allow_own_run``, new ``runs`` rows that ended (failed or completed)
    and their usage rows are allowed, nothing else."""
    changes: list[str] = []
    new_runs = set(after.get("runs", {})) - set(before.get("runs", {}))
    for rid, row in before.get("runs", {}).items():
        if after.get("runs", {}).get(rid) != row:
            changes.append(f"runs row {rid} changed")
    if new_runs and not allow_own_run:
        changes.append(f"new runs rows {sorted(new_runs)}")
    for rid in new_runs:
        if after["runs"][rid]["status"] == "running":
            changes.append(f"run {rid} left 'running'")
    for t in sorted(set(before) | set(after)):
        if t == "runs":
            continue
        if t == "llm_usage" and allow_own_run:
            continue
        if before.get(t) != after.get(t):
            changes.append(f"table {t}: {before.get(t)} -> {after.get(t)}")
    return changes


@dataclass
class Outcome:
    group: str
    kind: str
    via: str
    exit_code: int | None
    expected_code: int | None
    clear: bool
    traceback: bool
    warehouse_changes: int
    upfront: bool | None
    seconds: float
    notes: list[str] = field(default_factory=list)

    @property
    def handled(self) -> bool:
        return (self.exit_code == self.expected_code and self.clear and not self.traceback
                and self.warehouse_changes == 0 and self.upfront is not False)


OUTCOMES: list[Outcome] = []
KILL_OUTCOMES: list[dict[str, Any]] = []


def figures_table() -> list[str]:
    """The bad-input figures as text lines (one row per group plus the total), then the exit codes seen."""
    if not OUTCOMES:
        return []
    lines = ["bad input: kinds tried, handled, clear errors, tracebacks, warehouse changes, refused up front",
             f"{'group':<11} {'kinds':>5} {'handled':>7} {'clear':>5} {'tracebacks':>10} {'wh changes':>10} "
             f"{'up front':>8} {'seconds':>7}"]
    groups: dict[str, list[Outcome]] = {}
    for o in OUTCOMES:
        groups.setdefault(o.group, []).append(o)
    groups["total"] = list(OUTCOMES)
    for g, items in groups.items():
        upfront = [o for o in items if o.upfront is not None]
        lines.append(f"{g:<11} {len(items):>5} {sum(o.handled for o in items):>7} {sum(o.clear for o in items):>5} "
                     f"{sum(o.traceback for o in items):>10} {sum(o.warehouse_changes for o in items):>10} "
                     f"{sum(bool(o.upfront) for o in upfront):>3}/{len(upfront):<4} {sum(o.seconds for o in items):>7.1f}")
    codes: dict[Any, int] = {}
    for o in OUTCOMES:
        codes[o.exit_code] = codes.get(o.exit_code, 0) + 1
    lines.append("exit codes: " + ", ".join(f"{k}: {v}" for k, v in sorted(codes.items(), key=lambda kv: str(kv[0]))))
    bad = [o for o in OUTCOMES if not o.handled]
    for o in bad:
        lines.append(f"NOT HANDLED {o.group}/{o.kind} via {o.via}: exit {o.exit_code} (expected {o.expected_code}) "
                     f"clear={o.clear} traceback={o.traceback} changes={o.warehouse_changes} upfront={o.upfront} "
                     + "; ".join(o.notes))
    return lines


def kill_table() -> list[str]:
    if not KILL_OUTCOMES:
        return []
    lines = ["kill -9 and resume: stage, LLM calls of the stage, kills, export rows and eval items equal to the "
             "uninterrupted run's, export files byte-identical (fewest over the kills), LLM calls "
             "repeated on resume (<= in flight at the kill), processes left, crashed runs marked, seconds",
             f"{'stage':<14} {'calls':>5} {'kills':>5} {'rows equal':>10} {'bytes equal':>11} {'repeated':>8} "
             f"{'in flight':>9} {'left':>4} {'crashed':>7} {'seconds':>7}"]
    for k in KILL_OUTCOMES:
        files = f"{k.get('bytes_equal', '-')}/{k.get('files', '-')}"
        lines.append(f"{k['stage']:<14} {k.get('llm_calls', 0):>5} {k['kills']:>5} {str(k['identical']):>10} "
                     f"{files:>11} {k['repeated']:>8} {k['in_flight']:>9} {k['left']:>4} {k['crashed']:>7} "
                     f"{k['seconds']:>7.1f}")
        if "seed" in k:
            drawn = ", ".join(f"{st} {'/'.join(map(str, pts))}" for st, pts in k["points"].items() if pts)
            lines.append(f"LLM kill points (share of the stage's requests), drawn with RELIABILITY_KILL_SEED="
                         f"{k['seed']}: {drawn}")
    return lines
