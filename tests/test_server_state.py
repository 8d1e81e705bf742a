"""`hopforge server`'s bookkeeping without a real Prefect server: the state file, stale and damaged states, which
API a command uses, and the bad inputs of `start` (already up, port taken, a configured PREFECT_API_URL).

A small HTTP server on loopback stands in for Prefect's ``/api/health``; the state file names this test process,
which is alive. The real server is started in tests/test_hopforge_server.py (``make test-prefect-server``).
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows import prefect_server as ps
from schemas.errors import InputError
from gateway import children


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        self.send_response(200 if self.path == "/api/health" else 404)
        self.end_headers()
        self.wfile.write(b"true")

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def health() -> Iterator[int]:
    """A port where ``GET /api/health`` answers 200."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A PREFECT_HOME of the test's own, no configured API, and no patching of the test process's Prefect."""
    home = tmp_path / "prefect"
    home.mkdir()
    monkeypatch.setenv("PREFECT_HOME", str(home))
    monkeypatch.setenv("PREFECT_API_URL", "placeholder")
    monkeypatch.delenv("PREFECT_API_URL")  # restored (to whatever it was) after the test
    monkeypatch.delenv("PREFECT_PROFILE", raising=False)
    monkeypatch.delenv("PREFECT_PROFILES_PATH", raising=False)
    monkeypatch.setattr(ps, "_our_api_url", None)
    monkeypatch.setattr(children, "tie_prefect_temporary_server", lambda: None)
    monkeypatch.setattr(children, "after_import", lambda name, patch: None)
    return home


def _state(port: int, pid: int | None = None, started: int | None = None) -> ps.ServerState:
    pid = pid or os.getpid()
    return ps.ServerState(pid=pid, started=started if started is not None else children.process_started(pid),
                          host="127.0.0.1", port=port, api_url=f"http://127.0.0.1:{port}/api",
                          ui_url=f"http://127.0.0.1:{port}", log="server.log", since="now")  # fmt: skip


def test_a_state_naming_a_live_answering_server_points_commands_at_it(home, health):
    _state(health).write(home / ps.STATE_FILE)
    try:
        assert ps.use_running_server() == "ours"
        assert os.environ["PREFECT_API_URL"] == f"http://127.0.0.1:{health}/api"
        assert ps.configured_api_url() is None  # set by us, for our server: not a person's choice
        assert ps.server_url() == f"http://127.0.0.1:{health}"
        st = ps.status()
        assert st.up and st.lines[0] == f"up: http://127.0.0.1:{health} (UI), http://127.0.0.1:{health}/api (API)"
    finally:
        os.environ.pop("PREFECT_API_URL", None)


def test_a_stale_state_is_removed_and_commands_use_the_temporary_server(home, tmp_path):
    dead = __import__("subprocess").Popen(["true"])
    dead.wait()
    _state(4200, pid=dead.pid, started=1).write(home / ps.STATE_FILE)
    assert ps.use_running_server() == "temporary"
    assert "PREFECT_API_URL" not in os.environ
    assert not (home / ps.STATE_FILE).exists()
    assert ps.server_url() is None


def test_a_reused_pid_is_not_our_server(home, health):
    # the pid is alive (this process) but started at another time: a later process given the dead server's pid
    _state(health, started=(children.process_started(os.getpid()) or 0) + 1).write(home / ps.STATE_FILE)
    assert ps.current() is None and not (home / ps.STATE_FILE).exists()


def test_a_damaged_state_file_is_removed(home):
    (home / ps.STATE_FILE).write_text("{not json")
    assert ps.current() is None and not (home / ps.STATE_FILE).exists()
    (home / ps.STATE_FILE).write_text(json.dumps({"pid": 1}))
    assert ps.current() is None and not (home / ps.STATE_FILE).exists()


def test_a_live_server_that_does_not_answer_is_not_used(home):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _state(port).write(home / ps.STATE_FILE)
    assert ps.use_running_server() == "temporary"
    assert "PREFECT_API_URL" not in os.environ
    st = ps.status()
    assert not st.up and "does not answer" in st.lines[0]
    assert (home / ps.STATE_FILE).exists()  # alive: it may still be starting


def test_start_refuses_a_second_server_and_accepts_it_with_if_needed(home, health):
    _state(health).write(home / ps.STATE_FILE)
    already = rf"already up at http://127.0.0.1:{health} \(pid {os.getpid()}\).*--if-needed"
    with pytest.raises(InputError, match=already):
        ps.start(port=health + 1 if health < 65535 else 1024)
    state, line = ps.start(port=12345, if_needed=True, timeout_s=5)
    assert state is not None and state.port == health and line.startswith("already up at")


def test_start_names_a_taken_port(home, health):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(InputError, match=rf"^port {port} on 127.0.0.1 is taken by another process; pick another "
                                             r"with --port$"):  # fmt: skip
            ps.start(port=port)
    # a Prefect server someone else started: say how to use it
    with pytest.raises(InputError, match=rf"a Prefect server answers there: set "
                                         rf"PREFECT_API_URL=http://127.0.0.1:{health}/api"):  # fmt: skip
        ps.start(port=health)
    assert not (home / ps.STATE_FILE).exists()


def test_start_checks_its_host_and_port(home, monkeypatch):
    with pytest.raises(InputError, match="--port must be between 1 and 65535, got 70000"):
        ps.start(port=70000)

    def unknown(host, *args, **kwargs):  # a resolver's answer for a name it does not know (tests have no DNS)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", unknown)
    with pytest.raises(InputError, match="--host 'no-such-host' is not an address or a name this machine can resolve"):
        ps.start(host="no-such-host")


def test_a_configured_api_is_used_as_it_is(home, monkeypatch, health):
    monkeypatch.setenv("PREFECT_API_URL", "http://prefect.example:4200/api")
    _state(health).write(home / ps.STATE_FILE)  # ours is up too: the person's choice wins
    assert ps.use_running_server() == "configured"
    assert os.environ["PREFECT_API_URL"] == "http://prefect.example:4200/api"
    with pytest.raises(InputError, match=r"PREFECT_API_URL is set \(http://prefect.example:4200/api\): hopforge uses "
                                         "that server and starts none of its own"):  # fmt: skip
        ps.start()
    state, line = ps.start(if_needed=True)
    assert state is None and line.startswith("using PREFECT_API_URL=http://prefect.example:4200/api")


def test_a_profile_api_url_counts_as_configured(home, monkeypatch):
    (home / "profiles.toml").write_text('active = "cloud"\n[profiles.cloud]\n'
                                        'PREFECT_API_URL = "https://api.prefect.example/api/accounts/a/workspaces/w"\n'
                                        '[profiles.ephemeral]\n'
                                        'PREFECT_SERVER_ALLOW_EPHEMERAL_MODE = "true"\n')  # fmt: skip
    assert ps.configured_api_url() == "https://api.prefect.example/api/accounts/a/workspaces/w"
    assert ps.use_running_server() == "configured"
    monkeypatch.setenv("PREFECT_PROFILE", "ephemeral")
    assert ps.configured_api_url() is None


def test_stop_and_status_with_no_server(home):
    assert ps.stop() == "no hopforge Prefect server is running"
    st = ps.status()
    assert not st.up and st.lines[0].startswith("no hopforge Prefect server is running")


def test_cli_server_commands(home, health):
    from flows.cli import app

    runner = CliRunner()
    down = runner.invoke(app, ["server", "status"])
    assert down.exit_code == 1 and "no hopforge Prefect server is running" in down.output
    taken = runner.invoke(app, ["server", "start", "--port", str(health)])
    assert taken.exit_code == 2 and f"port {health} on 127.0.0.1 is taken" in " ".join(taken.output.split())
    _state(health).write(home / ps.STATE_FILE)
    up = runner.invoke(app, ["server", "status"])
    assert up.exit_code == 0 and f"up: http://127.0.0.1:{health} (UI)" in up.output
    again = runner.invoke(app, ["server", "start", "--port", str(health)])
    assert again.exit_code == 2 and "already up" in again.output
