"""Shared pieces of the reliability suite: warehouse digests, the figures table printed at the end of the session,
and for the kill -9 tests a child process the test freezes, looks at and kills (``Watched``), the process table
below it (``descendants``, ``still_running``) and what its LLM calls left stored (``request_digest``,
``response_cache_key``, ``stored_keys``)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.children import Proc, alive, descendants, process

if TYPE_CHECKING:
    from testing.fake import RecordedRequest


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
    """The kill -9 figures: one row per stage (sums over its kills), then the LLM calls of every kill."""
    if not KILL_OUTCOMES:
        return []
    lines = ["kill -9 and resume: stage, LLM calls of the stage, kills, export rows and eval items equal to the "
             "uninterrupted run's, export files byte-identical (fewest over the kills), LLM calls in flight at the "
             "kill (sent, no answer yet), answered but not stored, repeated on resume (each a subset of the two), "
             "descendants of the killed process at the kill, processes left, crashed runs marked, seconds",
             f"{'stage':<14} {'calls':>5} {'kills':>5} {'rows equal':>10} {'bytes equal':>11} {'in flight':>9} "
             f"{'unstored':>8} {'repeated':>8} {'children':>8} {'left':>4} {'crashed':>7} {'seconds':>7}"]
    for k in KILL_OUTCOMES:
        files = f"{k.get('bytes_equal', '-')}/{k.get('files', '-')}"
        lines.append(f"{k['stage']:<14} {k.get('llm_calls', 0):>5} {k['kills']:>5} {str(k['identical']):>10} "
                     f"{files:>11} {k['in_flight']:>9} {k.get('unstored', 0):>8} {k['repeated']:>8} "
                     f"{k.get('children', 0):>8} {k['left']:>4} {k['crashed']:>7} {k['seconds']:>7.1f}")
        if "seed" in k:
            drawn = ", ".join(f"{st} {'/'.join(map(str, pts))}" for st, pts in k["points"].items() if pts)
            lines.append(f"LLM kill points (share of the stage's requests), drawn with RELIABILITY_KILL_SEED="
                         f"{k['seed']}: {drawn}")
    per_kill = [d for k in KILL_OUTCOMES for d in k.get("per_kill", [])]
    if per_kill:
        lines.append("per kill: LLM calls sent by the killed process / in flight at the kill / answered, not stored "
                     "/ repeated on resume")
        lines.extend(f"  {d['where']:<32} {d['sent']:>4} {d['in_flight']:>4} {d['unstored']:>4} {d['repeated']:>4}"
                     for d in per_kill)
    return lines


# --- the process table (Linux /proc): processes from ``gateway.children``; thread states here -----------------


def _stat(path: str) -> tuple[str, int, int] | None:
    """(state, parent pid, start time) of the process or thread at ``path`` (``/proc/<pid>[/task/<tid>]``), or None
    if it is gone."""
    try:
        stat = Path(path, "stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # the command name (field 2) may hold spaces and parentheses
    return fields[0], int(fields[1]), int(fields[19])


def still_running(procs: Sequence[Proc], grace_s: float = 5.0) -> list[Proc]:
    """Those of ``procs`` still running after up to ``grace_s`` seconds: a process its parent's death told to end
    may take a moment to go."""
    deadline = time.monotonic() + grace_s
    while True:
        left = alive(procs)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


def marked_processes(marker: str) -> list[int]:
    """Live processes (not zombies) whose environment holds ``marker``: what a killed child started, even one that
    left its parent's tree (a daemon that forked twice)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() not in (entry / "environ").read_bytes():
                continue
        except OSError:
            continue
        st = _stat(str(entry))
        if st is not None and st[0] not in "ZX":
            found.append(int(entry.name))
    return found


def _all_stopped(pid: int) -> bool | None:
    """Whether every thread of ``pid`` is stopped (None: the process is gone or has ended)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    states = [st[0] for t in tids if (st := _stat(f"/proc/{pid}/task/{t}")) is not None]
    if not states or all(s in "ZX" for s in states):
        return None
    return all(s in "Tt" for s in states)


@dataclass
class Kill:
    """What the test saw when it killed a child: the moment every thread of it was stopped (``time.time()``, the
    clock of the fake's request stamps) and the child's descendants then."""

    at: float
    descendants: list[Proc]


STOP_FD = "RELIABILITY_STOP_FD"  # a child about to stop itself writes a byte to this descriptor first


class Watched:
    """A child process the kill tests kill at a chosen point.

    The point freezes the child (SIGSTOP): the child stops itself inside a write, after writing a byte to the
    descriptor named by ``STOP_FD`` (which wakes the watcher thread), or the fake stops it on receiving the K-th
    request (``freeze``). Once every thread is stopped the test notes the moment and the child's descendants, then
    sends SIGKILL. A frozen process does nothing more, so it leaves what a SIGKILL at that point leaves, and the
    test gets to look at it first."""

    def __init__(self, argv: Sequence[str], *, cwd: Path, env: dict[str, str]) -> None:
        # Output goes to a file, not a pipe: a descendant that outlives the child would hold a pipe open, and
        # reading it to the end would wait for that descendant.
        self._out = tempfile.TemporaryFile()
        self._stop_r, stop_w = os.pipe()
        try:
            self.proc = subprocess.Popen(list(argv), cwd=cwd, env={**env, STOP_FD: str(stop_w)}, stdout=self._out,
                                         stderr=subprocess.STDOUT, pass_fds=(stop_w,))
        finally:
            os.close(stop_w)
        self.kill: Kill | None = None
        self._lock = threading.Lock()
        self._watcher = threading.Thread(target=self._watch, name=f"watch-{self.proc.pid}", daemon=True)
        self._watcher.start()

    def freeze(self) -> None:
        """Stop the child now and kill it. Called from the fake's request handler, it also holds the fake's answers
        back until the child is stopped, so the answers' stamps split exactly at the kill."""
        try:
            os.kill(self.proc.pid, signal.SIGSTOP)
        except ProcessLookupError:
            return
        self._kill()

    def _kill(self) -> None:
        with self._lock:
            if self.kill is not None:
                return
            deadline = time.monotonic() + 5.0
            while (stopped := _all_stopped(self.proc.pid)) is False and time.monotonic() < deadline:
                time.sleep(0.0005)
            if stopped is None:  # it ended on its own first
                return
            self.kill = Kill(time.time(), descendants(self.proc.pid))
            os.kill(self.proc.pid, signal.SIGKILL)

    def _watch(self) -> None:
        try:
            said = os.read(self._stop_r, 1)  # a byte: the child is stopping itself; none: it has ended
        finally:
            os.close(self._stop_r)
        if said:
            self._kill()

    def wait(self, timeout: float = 600) -> subprocess.CompletedProcess:
        """Wait for the child to end; its status and output (stdout and stderr together)."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        finally:
            self._watcher.join(1.0)
            self._out.seek(0)
            out = self._out.read().decode(errors="replace")
            self._out.close()
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, out)


# --- LLM calls: which were sent again, which the killed process had stored ---------------------------------------


def request_digest(body: dict[str, Any]) -> str:
    """A chat request's identity across runs: what the model is asked (model, messages, output format, tools).
    Sampling parameters are left out, so a question asked again counts as repeated whatever they were."""
    blob = json.dumps([body.get("model"), body.get("messages"), body.get("response_format"), body.get("tools")],
                      sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def response_cache_key(body: dict[str, Any]) -> str:
    """The gateway's response-cache key of a chat request, from the body it sent (``GatewayClient.chat`` and
    ``structured`` send ``{model, messages, **params, response_format?, tools?}`` and key on the same pieces, the
    schema of a ``json_schema`` format standing for the format). A re-ask's key is its question's, which this does
    not give; the uninterrupted run checks that every stored key is found this way (``test_kill_resume``)."""
    from gateway.cache import cache_key

    fmt = body.get("response_format") or {}
    schema = fmt.get("json_schema", {}).get("schema") if fmt.get("type") == "json_schema" else None
    params = {k: v for k, v in body.items() if k not in ("model", "messages", "response_format", "tools")}
    return cache_key(model=body["model"], messages=body["messages"], params=params, schema=schema,
                     tools=body.get("tools"))


def stored_keys(cache: Path) -> set[str]:
    """The keys of every answer in the response cache at ``cache`` (none if there is no cache yet)."""
    if not cache.is_file():
        return set()
    con = sqlite3.connect(f"file:{cache}?mode=ro", uri=True)
    try:
        return {r[0] for r in con.execute("SELECT key FROM responses")}
    finally:
        con.close()


@dataclass
class CallsAtKill:
    """The LLM calls of a killed process, by ``request_digest``, split at the kill."""

    sent: set[str]
    in_flight: set[str]
    unstored: set[str]


def calls_at_kill(requests: Sequence[RecordedRequest], at: float, stored: set[str]) -> CallsAtKill:
    """Split the chat requests a killed process sent at the moment ``at`` it was frozen, by what the fake observed
    and what the process left in its response cache (``stored``: the cache's keys after the kill).

    - in flight: the fake had not handed the answer to the connection before ``at``. The process never had it, so
      the resume must ask again.
    - answered, not stored: the fake had handed the answer out before ``at``, but its key is not in the response
      cache. The gateway stores an answer once it has parsed and validated it, before its caller sees it (in the
      loop step that gives the request's slot back). An answer handed out just before the kill may still have been
      in the socket or in the parse when the process froze; an answer the gateway rejected is never stored (its
      question is asked again unless its failure reached the warehouse). The resume may send these again too. A
      re-ask's answer is stored under its question's key, so an answered re-ask always counts here: the set is
      never smaller than the calls the resume may rightly repeat.
    - every other call was answered and stored: the resume finds it in the cache and must not send it.
    """
    sent = {request_digest(r.json) for r in requests}
    in_flight = {request_digest(r.json) for r in requests if r.answered is None or r.answered >= at}
    unstored = {request_digest(r.json) for r in requests
                if r.answered is not None and r.answered < at and response_cache_key(r.json) not in stored}
    return CallsAtKill(sent, in_flight, unstored - in_flight)
