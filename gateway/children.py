"""Child processes die with their parent.

A hopforge command starts servers as child processes: Prefect's temporary API server (a uvicorn subprocess that
Prefect itself spawns), the llama.cpp server of the embedded model, the tool server's forked workers, trainers and
serving processes. When the command ends normally its exit handlers stop them; when it is killed with SIGKILL no
handler runs, and each child would live on with parent 1 (a temporary Prefect server holds ~200 MB).

Linux ends them for us: ``prctl(PR_SET_PDEATHSIG, sig)`` in the child asks the kernel to send ``sig`` when the
parent dies. The kernel's "parent" is the *thread* that forked, not the process: a child spawned from a pool
worker thread would be killed as soon as that thread finished. So every spawn here runs on the main thread or on
one long-lived daemon thread (``on_spawner_thread``), both of which live exactly as long as the process.

- ``popen(argv, ...)`` is ``subprocess.Popen`` with the death signal set in the child, from the spawner thread.
- ``die_with_parent()`` sets it in a process that ``os.fork()`` made (the tool server's workers).
- ``tie_prefect_temporary_server()`` does the same for the uvicorn process Prefect spawns for its temporary
  server, by patching that one spawn point when Prefect's server module is imported (so commands that talk to a
  running server never pay for importing it).
- ``watch_descendants()`` starts a watchdog process for trees the death signal cannot reach: a local Ray's
  raylet is tied to this process by Ray itself, but the raylet's own workers and agents outlive it for a minute.
- ``descendants(pid)`` and ``alive(procs)`` read the process table (``/proc``), for tests that kill a command and
  look for what it left behind (``tests/process_table.py`` adds ``assert_none_alive``).

The persistent server of ``hopforge server start`` (flows.prefect_server) is the one child meant to outlive its
command, and is started without any of this.

Elsewhere than Linux these do nothing: children there end through the exit handlers only.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import importlib.abc
import importlib.machinery
import importlib.util
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

T = TypeVar("T")

PR_SET_PDEATHSIG = 1
LINUX = sys.platform.startswith("linux")


def _load_prctl() -> Callable[..., int] | None:
    """libc's ``prctl``, loaded once in the parent: the child runs only this call between fork and exec."""
    if not LINUX:
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.restype = ctypes.c_int
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return prctl


_PRCTL = _load_prctl()


def supported() -> bool:
    """Whether the kernel can tie a child's life to its parent here."""
    return _PRCTL is not None


def die_with_parent(sig: int = signal.SIGKILL, parent_pid: int | None = None) -> None:
    """In a child process: ask the kernel to send ``sig`` when the parent dies. ``parent_pid`` (read before the
    fork) closes the race where the parent died before this call: the child then sends ``sig`` to itself."""
    if _PRCTL is None:
        return
    if _PRCTL(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if parent_pid is not None and os.getppid() != parent_pid:
        os.kill(os.getpid(), sig)


# --- the spawner thread -------------------------------------------------------------------------------------------

_jobs: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = queue.SimpleQueue()
_spawner: threading.Thread | None = None
_spawner_lock = threading.Lock()


def _serve_jobs() -> None:
    while True:
        job, future = _jobs.get()
        if not future.set_running_or_notify_cancel():
            continue
        try:
            future.set_result(job())
        except BaseException as exc:  # handed to the caller, who re-raises it in its own thread
            future.set_exception(exc)


def _reset_after_fork() -> None:
    """A forked child has no spawner thread (only the forking thread survives a fork): start afresh on demand."""
    global _jobs, _spawner, _spawner_lock
    _jobs = queue.SimpleQueue()
    _spawner = None
    _spawner_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def on_spawner_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn(*args, **kwargs)`` on a thread that lives as long as the process and return its result (or raise
    its error): the calling thread when it is the main thread, else the process's spawner thread.

    A child started there receives its death signal when the process dies, not when the caller's thread ends."""
    global _spawner
    here = threading.current_thread()
    if here is threading.main_thread() or here is _spawner:
        return fn(*args, **kwargs)
    with _spawner_lock:
        if _spawner is None or not _spawner.is_alive():
            _spawner = threading.Thread(target=_serve_jobs, name="hopforge-spawner", daemon=True)
            _spawner.start()
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    _jobs.put((lambda: fn(*args, **kwargs), future))
    return future.result()


def _with_death_signal(preexec_fn: Callable[[], Any] | None, sig: int) -> Callable[[], None]:
    parent_pid = os.getpid()

    def preexec() -> None:
        die_with_parent(sig, parent_pid)
        if preexec_fn is not None:
            preexec_fn()

    return preexec


def popen(argv: Sequence[str], *, death_signal: int = signal.SIGKILL, **kwargs: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(argv, **kwargs)`` whose child gets ``death_signal`` when this process dies, however it
    dies. SIGKILL (the default) suits servers that keep no state of their own; a process that must stop its own
    children (a trainer's launcher) should get SIGTERM."""
    if _PRCTL is not None:
        kwargs["preexec_fn"] = _with_death_signal(kwargs.get("preexec_fn"), death_signal)
    return on_spawner_thread(subprocess.Popen, list(argv), **kwargs)


# --- library spawns -----------------------------------------------------------------------------------------------


class _PatchAfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs ``patch(module)`` right after ``name`` is first imported, so patching costs no import of its own."""

    def __init__(self, name: str, patch: Callable[[ModuleType], None]) -> None:
        self.name = name
        self.patch = patch
        self.loader: importlib.abc.Loader | None = None

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        self.loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        assert self.loader is not None
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        assert self.loader is not None
        module.__spec__.loader = self.loader  # what the module would have had without us
        self.loader.exec_module(module)
        self.patch(module)


def after_import(name: str, patch: Callable[[ModuleType], None]) -> None:
    """``patch(module)`` now if ``name`` is imported, else right after its first import."""
    if name in sys.modules:
        patch(sys.modules[name])
        return
    if not any(isinstance(f, _PatchAfterImport) and f.name == name and f.patch is patch for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchAfterImport(name, patch))


class _TiedSubprocess:
    """``subprocess`` as seen from one library module: its ``Popen`` children get the death signal and are started
    from a long-lived thread (as ``popen`` above); the rest is the real module. Replacing the module's global (not
    ``subprocess.Popen`` itself) keeps the patch to that one module."""

    def __init__(self, death_signal: int) -> None:
        self._death_signal = death_signal

    def Popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen[Any]:  # noqa: N802 - the name it stands for
        if _PRCTL is not None:
            kwargs["preexec_fn"] = _with_death_signal(kwargs.get("preexec_fn"), self._death_signal)
        return on_spawner_thread(subprocess.Popen, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)


PREFECT_SERVER_MODULE = "prefect.server.api.server"


def _tie_module(module: ModuleType) -> None:
    if isinstance(getattr(module, "subprocess", None), _TiedSubprocess):
        return
    if getattr(module, "subprocess", None) is not subprocess:
        # A Prefect that spawns its server some other way: leave it as it is (the exit handlers still stop it).
        return
    module.subprocess = _TiedSubprocess(signal.SIGKILL)  # type: ignore[attr-defined]


def tie_prefect_temporary_server() -> None:
    """Prefect's temporary server (``SubprocessASGIServer``: ``python -m uvicorn`` with a SQLite database) dies
    with this process. It keeps no state a kill could break beyond what SQLite's journal protects."""
    if supported():
        after_import(PREFECT_SERVER_MODULE, _tie_module)


# --- a watchdog for what libraries start below their own children ------------------------------------------------

_watchdog: subprocess.Popen[bytes] | None = None


def watch_descendants(interval_s: float = 0.25) -> None:
    """Start (once per process) a watchdog that outlives this process and, when it dies, kills every process that
    was below it at the watchdog's last look (at most ``interval_s`` before).

    For trees whose grandchildren the death signal cannot reach: a local Ray ties its raylet to this process, but
    when the raylet is killed its own workers and agents notice only after 15-80 s. The watchdog keeps the list
    while the links between processes still hold. A process started in the last ``interval_s`` before the death
    can escape it (and then ends on its own checks). Not tied itself (it must outlive this process), in its own
    session so a Ctrl-C meant for the command does not stop it first; it reads a few ``/proc`` files per look."""
    global _watchdog
    if not LINUX or (_watchdog is not None and _watchdog.poll() is None):
        return
    argv = [sys.executable, "-m", "gateway.children", "watch", str(os.getpid()), str(interval_s)]
    _watchdog = on_spawner_thread(subprocess.Popen, argv, stdin=subprocess.DEVNULL, start_new_session=True,
                                  cwd=str(Path(__file__).resolve().parents[2]))  # fmt: skip


def _watch(parent: int, interval_s: float) -> None:
    me = os.getpid()
    last: list[Proc] = []
    while os.getppid() == parent:  # a dead parent's children are handed to init (or a subreaper)
        last = [p for p in descendants(parent) if p.pid != me]
        time.sleep(interval_s)
    for p in alive(last):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p.pid, signal.SIGKILL)


# --- the process table --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proc:
    """One process as the table showed it; ``started`` (clock ticks after boot) tells a reused pid apart."""

    pid: int
    ppid: int
    started: int
    command: str


def _read_proc(pid: int) -> Proc | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # the command name (field 2) is in parentheses and may hold spaces or parentheses itself
    fields = stat[stat.rindex(")") + 2 :].split()
    state, ppid, started = fields[0], int(fields[1]), int(fields[19])
    if state in ("Z", "X"):  # a zombie has ended: it only waits for its parent to read its status
        return None
    command = raw.replace(b"\0", b" ").decode(errors="replace").strip() or stat[stat.index("(") + 1 : stat.rindex(")")]
    return Proc(pid, ppid, started, command)


def process_table() -> dict[int, Proc]:
    """Every live process (Linux ``/proc``; empty elsewhere)."""
    table: dict[int, Proc] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return table
    for entry in proc.iterdir():
        if entry.name.isdigit() and (p := _read_proc(int(entry.name))) is not None:
            table[p.pid] = p
    return table


def _child_pids(pid: int) -> list[int] | None:
    """The children of ``pid`` from ``/proc/<pid>/task/<tid>/children`` (one file per thread: a child belongs to
    the thread that forked it); None where the kernel has no such files."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
        return []
    pids: list[int] = []
    for task in tasks:
        try:
            pids.extend(int(c) for c in (task / "children").read_text().split())
        except FileNotFoundError:
            if not task.exists():
                continue  # the thread ended meanwhile
            return None
        except ProcessLookupError:
            continue
    return pids


def descendants(pid: int) -> list[Proc]:
    """The live processes below ``pid`` (children, their children...), as they are now. Follows the children
    files down from ``pid`` (a few reads), or scans the whole table where the kernel lacks them."""
    found: list[Proc] = []
    todo = [pid]
    while todo:
        kids = _child_pids(todo.pop())
        if kids is None:
            return _descendants_by_scan(pid)
        for kid in kids:
            if (p := _read_proc(kid)) is not None:
                found.append(p)
                todo.append(kid)
    return found


def _descendants_by_scan(pid: int) -> list[Proc]:
    children: dict[int, list[Proc]] = {}
    for p in process_table().values():
        children.setdefault(p.ppid, []).append(p)
    found: list[Proc] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child.pid)
    return found


def alive(procs: Sequence[Proc]) -> list[Proc]:
    """Those of ``procs`` still running (the same process, not a later one given the same pid)."""
    still = []
    for p in procs:
        now = _read_proc(p.pid)
        if now is not None and now.started == p.started:
            still.append(p)
    return still


def process(pid: int) -> Proc | None:
    """``pid`` as the process table holds it now (None if it is gone or has ended)."""
    return _read_proc(pid)


def process_started(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot), or None if no such live process: with the pid, it names one
    process for good."""
    p = _read_proc(pid)
    return p.started if p is not None else None


__all__ = [
    "Proc", "after_import", "alive", "descendants", "die_with_parent", "on_spawner_thread", "popen", "process",
    "process_started", "process_table", "supported", "tie_prefect_temporary_server", "watch_descendants",
]  # fmt: skip


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "watch":
    _watch(int(sys.argv[2]), float(sys.argv[3]))
