"""A local Prefect server that stays up between commands (``hopforge server start|stop|status``).

Without a server every flow command starts Prefect's temporary one (a uvicorn subprocess and a SQLite database):
10-30 s before the first task, and the run history is out of sight once the command ends. ``start`` runs
``prefect server start`` from the project's environment, detached (its own session, so it outlives the command
and a Ctrl-C in the terminal), on loopback unless ``--host`` says otherwise, logging to a file, and writes a state
file beside Prefect's database in PREFECT_HOME. Each ``hopforge`` command then reads that file before Prefect is
imported and, when the server answers, points PREFECT_API_URL at it (``use_running_server``).

A server the person chose is used as it is: when PREFECT_API_URL is set (in the environment or in the active
Prefect profile, which is where ``prefect cloud login`` puts it) hopforge neither starts nor replaces anything.

Files in PREFECT_HOME (the Makefile sets it to the repository's ``.prefect``; Prefect's default is
``~/.prefect``): ``hopforge-server.json`` (pid, process start time, address), ``hopforge-server.log`` and
``hopforge-server.lock`` (held while a start or stop runs, so two at once cannot both start a server).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from schemas.errors import HopforgeError, InputError
from gateway import children

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 4200
STATE_FILE = "hopforge-server.json"
LOG_FILE = "hopforge-server.log"
LOCK_FILE = "hopforge-server.lock"

HINT = ("hopforge: no Prefect server is up, so this command starts a temporary one (10-30 s). "
        "`hopforge server start` keeps one up: commands then start in seconds and their runs stay in its UI.\n")


class ServerError(HopforgeError):
    """The Prefect server could not be started or stopped; its log says why, and the same command may work later."""

    exit_code = 3
    label = "prefect server error"


@dataclass(frozen=True)
class ServerState:
    """What ``hopforge-server.json`` records about the server a ``start`` left running."""

    pid: int
    started: int | None  # the process's start time (clock ticks after boot): with the pid, names it for good
    host: str
    port: int
    api_url: str
    ui_url: str
    log: str
    since: str

    @classmethod
    def read(cls, path: Path) -> "ServerState | None":
        """The state in ``path``; None when absent or not a state file (a damaged file holds no live server)."""
        try:
            data = json.loads(path.read_text())
            return cls(**data)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError):
            return None

    def write(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        tmp.replace(path)


# --- where things are ---------------------------------------------------------------------------------------------


def prefect_home() -> Path:
    """PREFECT_HOME as Prefect reads it (the environment, else ``~/.prefect``)."""
    return Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser()


def state_path(home: Path | None = None) -> Path:
    return (home or prefect_home()) / STATE_FILE


_our_api_url: str | None = None  # PREFECT_API_URL as use_running_server set it in this process


def configured_api_url() -> str | None:
    """The Prefect API a person configured: PREFECT_API_URL in the environment (unless this process set it to
    our own server), else in the active profile of ``profiles.toml``. Read without importing Prefect."""
    env = os.environ.get("PREFECT_API_URL", "").strip()
    if env and env != _our_api_url:
        return env
    profiles = Path(os.environ.get("PREFECT_PROFILES_PATH") or prefect_home() / "profiles.toml").expanduser()
    try:
        data = tomllib.loads(profiles.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return None
    active = os.environ.get("PREFECT_PROFILE") or data.get("active")
    profile = data.get("profiles", {}).get(active, {}) if isinstance(active, str) else {}
    url = profile.get("PREFECT_API_URL") if isinstance(profile, dict) else None
    return url.strip() if isinstance(url, str) and url.strip() else None


def _client_host(host: str) -> str:
    """The address a client on this machine uses for a server bound to ``host``."""
    if host in ("0.0.0.0", "", "*"):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


# --- probes -------------------------------------------------------------------------------------------------------

# Loopback probes must not go through an HTTP proxy the environment names.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def healthy(api_url: str, timeout_s: float = 2.0) -> bool:
    """Whether a Prefect API answers ``GET /health`` at ``api_url``."""
    try:
        with _opener.open(api_url.rstrip("/") + "/health", timeout=timeout_s) as reply:
            return reply.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _pid_alive(pid: int, started: int | None) -> bool:
    """The process the state names still runs (not a later one given the same pid)."""
    if Path("/proc").is_dir():
        now = children.process_started(pid)
        return now is not None and (started is None or now == started)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _port_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT does not count
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


@contextlib.contextmanager
def _locked(home: Path) -> Iterator[None]:
    """Serialise starts and stops on one PREFECT_HOME (POSIX advisory lock; no lock elsewhere)."""
    home.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(home / LOCK_FILE, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# --- the state ----------------------------------------------------------------------------------------------------


def current(home: Path | None = None) -> ServerState | None:
    """The server a ``start`` left running, if its process is alive; a state file naming a dead process (or no
    readable state) is removed."""
    path = state_path(home)
    if not path.exists():
        return None
    state = ServerState.read(path)
    if state is None or not _pid_alive(state.pid, state.started):
        path.unlink(missing_ok=True)
        return None
    return state


def running(home: Path | None = None, timeout_s: float = 5.0) -> ServerState | None:
    """Our server, if it is alive and answers."""
    state = current(home)
    return state if state is not None and healthy(state.api_url, timeout_s) else None


def server_url() -> str | None:
    """The UI address of the Prefect server this process's commands record runs in: the configured one
    (PREFECT_API_URL, Prefect Cloud included) or ours; None when commands use a temporary server."""
    if configured_api_url():
        from prefect.settings import PREFECT_UI_URL  # the UI address Prefect derives (Cloud's differs from its API)

        return PREFECT_UI_URL.value() or None
    state = running()
    return state.ui_url if state is not None else None


Mode = Literal["configured", "ours", "temporary"]


def use_running_server() -> Mode:
    """Choose the Prefect API for this process, before Prefect is imported: the configured one, else our server
    when it answers (PREFECT_API_URL is set to it), else Prefect's temporary server, tied to this process (it dies
    with it) and announced once on stderr with how to avoid it."""
    global _our_api_url
    if configured_api_url():
        return "configured"
    state = running()
    if state is not None:
        os.environ["PREFECT_API_URL"] = _our_api_url = state.api_url
        return "ours"
    children.tie_prefect_temporary_server()
    children.after_import(children.PREFECT_SERVER_MODULE, _announce_temporary_server)
    return "temporary"


_hinted = False  # HINT was printed in this process


def _announce_temporary_server(module: ModuleType) -> None:
    """Print HINT when Prefect actually starts its temporary server (commands that need no Prefect say nothing)."""
    cls = getattr(module, "SubprocessASGIServer", None)
    original = getattr(cls, "start", None)
    if cls is None or original is None or getattr(original, "_hopforge_hint", False):
        return

    def start(self: Any, *args: Any, **kwargs: Any) -> Any:
        global _hinted
        if not self.running and not _hinted:
            _hinted = True
            sys.stderr.write(HINT)
            sys.stderr.flush()
        return original(self, *args, **kwargs)

    start._hopforge_hint = True  # type: ignore[attr-defined]
    cls.start = start


def flush_prefect(timeout_s: float = 10.0) -> None:
    """Send the logs and events Prefect still holds to its API, and wait for them.

    Prefect queues a run's logs and events for background workers that send them in batches, and drains those
    workers from ``threading``'s shutdown hook, which runs before ``atexit``. ``hopforge`` leaves through
    ``os._exit`` after running the ``atexit`` handlers (``flows.cli.main``), so that hook never ran: the temporary
    server was stopped by its ``atexit`` handler first, and logging's own flush (the last handler) then sent the
    queued logs to a server that was gone: "--- Error logging to API --- All connection attempts failed". This
    drains them while the server is still up. A no-op in a process that never logged to Prefect's API."""
    if "prefect.logging.handlers" not in sys.modules and "prefect.events.worker" not in sys.modules:
        return
    from prefect._internal.concurrency.services import QueueService

    # Every log and event worker is a QueueService; drain_all stops each one once its queue is sent.
    QueueService.drain_all(timeout=timeout_s)


# --- start, stop, status ------------------------------------------------------------------------------------------


def _tail(path: Path, n: int = 600) -> str:
    try:
        return " ".join(path.read_text(errors="replace")[-n:].split())
    except OSError:
        return "(no log)"


def _refuse_configured(what: str) -> None:
    url = configured_api_url()
    if url:
        raise InputError(f"PREFECT_API_URL is set ({url}): hopforge uses that server and {what}; unset it (or "
                         "`prefect profile use ephemeral`) for hopforge's own")


def start(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, if_needed: bool = False,
          timeout_s: float = 180.0, home: Path | None = None) -> tuple[ServerState | None, str]:
    """Start our server, or with ``if_needed`` accept one that is up already. Returns the server (None when a
    configured PREFECT_API_URL is in use) and a line saying what happened."""
    if configured_api_url():
        if if_needed:
            return None, f"using PREFECT_API_URL={configured_api_url()} (hopforge starts no server of its own)"
        _refuse_configured("starts none of its own")
    if not 0 < port < 65536:
        raise InputError(f"--port must be between 1 and 65535, got {port}")
    home = home or prefect_home()
    with _locked(home):
        state = current(home)
        if state is not None:
            if not if_needed:
                raise InputError(f"hopforge's Prefect server is already up at {state.ui_url} (pid {state.pid}); "
                                 "`hopforge server stop` stops it, `--if-needed` accepts it")
            _wait_healthy(state, None, timeout_s)
            return state, f"already up at {state.ui_url} (pid {state.pid})"
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror:
            raise InputError(f"--host {host!r} is not an address or a name this machine can resolve") from None
        if not _port_free(host, port):
            other = f"http://{_client_host(host)}:{port}/api"
            why = (f"; a Prefect server answers there: set PREFECT_API_URL={other} to use it"
                   if healthy(other, 2.0) else "")
            raise InputError(f"port {port} on {host} is taken by another process; pick another with --port{why}")
        state = _spawn(home, host, port)
        try:
            _wait_healthy(state, home / LOG_FILE, timeout_s)
        except BaseException:
            _terminate(state)
            state_path(home).unlink(missing_ok=True)
            raise
        return state, f"started at {state.ui_url} (pid {state.pid})"


def _spawn(home: Path, host: str, port: int) -> ServerState:
    """``prefect server start`` in its own session (not tied to this process: it is meant to outlive it)."""
    log = home / LOG_FILE
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    argv = [sys.executable, "-m", "prefect", "server", "start", "--host", host, "--port", str(port)]
    with open(log, "ab") as out:
        out.write(f"\n--- {datetime.now(timezone.utc).isoformat()} {' '.join(argv[1:])}\n".encode())
        out.flush()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                cwd=home, start_new_session=True)  # fmt: skip
    client = f"http://{_client_host(host)}:{port}"
    state = ServerState(pid=proc.pid, started=children.process_started(proc.pid), host=host, port=port,
                        api_url=f"{client}/api", ui_url=client, log=str(log),
                        since=datetime.now(timezone.utc).isoformat(timespec="seconds"))  # fmt: skip
    state.write(state_path(home))
    return state


def _wait_healthy(state: ServerState, log: Path | None, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if healthy(state.api_url, 2.0):
            return
        if not _pid_alive(state.pid, state.started):
            raise ServerError(f"the Prefect server exited before it answered; log {state.log}: "
                              f"{_tail(Path(state.log))}")
        time.sleep(0.5)
    raise ServerError(f"the Prefect server did not answer {state.api_url}/health within {timeout_s:g} s "
                      f"(log {state.log})")


def _terminate(state: ServerState, grace_s: float = 20.0) -> None:
    """SIGTERM to the server's process group (its session: the server and anything it started), SIGKILL to what
    is left after ``grace_s``."""
    below = children.descendants(state.pid)
    if _pid_alive(state.pid, state.started):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(state.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and _pid_alive(state.pid, state.started):
            time.sleep(0.2)
        if _pid_alive(state.pid, state.started):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(state.pid, signal.SIGKILL)
    for p in children.alive(below):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p.pid, signal.SIGKILL)


def stop(home: Path | None = None) -> str:
    """Stop our server and remove its state file; a line saying what happened."""
    home = home or prefect_home()
    with _locked(home):
        state = current(home)
        if state is None:
            return "no hopforge Prefect server is running"
        _terminate(state)
        state_path(home).unlink(missing_ok=True)
        return f"stopped the Prefect server at {state.ui_url} (pid {state.pid})"


@dataclass(frozen=True)
class Status:
    up: bool
    lines: list[str]


def status(home: Path | None = None) -> Status:
    """Whether the server commands use is up, and where."""
    configured = configured_api_url()
    if configured:
        ok = healthy(configured, 5.0)
        return Status(ok, [f"commands use PREFECT_API_URL={configured} ({'answering' if ok else 'not answering'})"])
    state = current(home)
    if state is None:
        return Status(False, ["no hopforge Prefect server is running; commands start a temporary one "
                              "(`hopforge server start` keeps one up)"])  # fmt: skip
    if not healthy(state.api_url):
        return Status(False, [f"the Prefect server (pid {state.pid}) runs but does not answer {state.api_url} "
                              f"(still starting, or see {state.log})"])  # fmt: skip
    return Status(True, [f"up: {state.ui_url} (UI), {state.api_url} (API)", f"pid {state.pid}, since {state.since}",
                         f"log {state.log}"])


__all__ = [
    "HINT", "ServerError", "ServerState", "Status", "configured_api_url", "current", "flush_prefect", "healthy",
    "prefect_home", "running", "server_url", "start", "status", "stop", "use_running_server",
]  # fmt: skip
