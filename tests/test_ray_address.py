"""``runner.address``: what the job ships to a cluster, and an address where nothing answers refused in one line
before Ray is asked (fast; the cluster itself is in ``tests/test_ray_nodes.py``, marker ``ray``)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from flows import ray_cluster
from schemas.config import RunnerConfig, load_settings
from schemas.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]


def test_the_job_ships_hopforge_packages_and_keeps_the_users_runtime_env():
    cfg = RunnerConfig(kind="ray", address="127.0.0.1:6379",
                       runtime_env={"env_vars": {"TZ": "UTC"}, "py_modules": ["/opt/extra"], "excludes": ["*.bin"]})
    env = ray_cluster.runtime_env(cfg)
    assert env["env_vars"] == {"TZ": "UTC"}
    assert env["py_modules"] == [str(REPO / p) for p in ray_cluster.PACKAGES] + ["/opt/extra"]
    assert all((REPO / p / "__init__.py").is_file() for p in ray_cluster.PACKAGES)
    assert "__pycache__" in env["excludes"] and env["excludes"][-1] == "*.bin"
    off = ray_cluster.runtime_env(cfg.model_copy(update={"ship_code": False}))
    assert off == {"env_vars": {"TZ": "UTC"}, "py_modules": ["/opt/extra"], "excludes": ["*.bin"]}


def test_the_settings_take_the_cluster_from_the_environment(monkeypatch):
    monkeypatch.setenv("HOPFORGE_RUNNER__KIND", "ray")
    monkeypatch.setenv("HOPFORGE_RUNNER__ADDRESS", "ray://head:10001")
    monkeypatch.setenv("HOPFORGE_RUNNER__CONNECT_TIMEOUT_S", "2.5")
    runner = load_settings().runner
    assert (runner.kind, runner.address, runner.connect_timeout_s, runner.ship_code) == ("ray", "ray://head:10001",
                                                                                         2.5, True)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _connects(monkeypatch) -> list[tuple[tuple[str, int], float | None]]:
    """The (address, timeout) of every connection attempt made from here on; each is still made."""
    made: list[tuple[tuple[str, int], float | None]] = []
    real = socket.create_connection

    def create_connection(address, timeout=None, *args, **kwargs):
        made.append((tuple(address), timeout))
        return real(address, timeout, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", create_connection)
    return made


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_an_address_where_nothing_listens_is_one_line(scheme, monkeypatch):
    port = _closed_port()
    address = f"{scheme}127.0.0.1:{port}"
    made = _connects(monkeypatch)
    with pytest.raises(ConfigError) as err:
        ray_cluster._answers(address, 2.0)
    line = str(err.value)
    assert line.startswith(f"runner.address {address}: nothing answers there (connection refused after at most 2 s")
    assert "\n" not in line and "ray start --head" in line
    assert made == [(("127.0.0.1", port), 2.0)]  # one attempt, bounded by the setting


def test_an_address_that_never_accepts_times_out_within_the_setting(monkeypatch):
    # a listening socket whose backlog is full: the handshake is never completed, as behind a dropping firewall
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(0)
        port = srv.getsockname()[1]
        fillers = []
        try:
            for _ in range(8):  # fill the backlog (its size is rounded up by the kernel)
                c = socket.socket()
                c.setblocking(False)
                c.connect_ex(("127.0.0.1", port))
                fillers.append(c)
            time.sleep(0.2)
            made = _connects(monkeypatch)
            try:
                ray_cluster._answers(f"127.0.0.1:{port}", 1.0)
            except ConfigError as exc:
                assert "timed out after at most 1 s" in str(exc)
                assert made == [(("127.0.0.1", port), 1.0)]  # the one attempt gave up at the setting's timeout
            else:
                pytest.skip("this kernel completed the handshake despite the full backlog")
        finally:
            for c in fillers:
                c.close()


def test_an_address_that_is_not_one_is_named():
    with pytest.raises(ConfigError, match=r"runner.address 'head-without-port' is not host:port, ray://host:port or "
                                          r"auto"):  # fmt: skip
        ray_cluster._answers("head-without-port", 1.0)


@pytest.mark.ray  # needs the ray extra: runs in make test-ray
def test_the_task_runner_refuses_before_ray_is_asked(monkeypatch):
    pytest.importorskip("prefect_ray")
    ray = pytest.importorskip("ray")
    from flows.batches import task_runner

    monkeypatch.setattr(ray, "init", lambda *a, **k: pytest.fail("ray.init was called"))
    monkeypatch.setattr(ray_cluster, "_joined", None)
    with pytest.raises(ConfigError, match="nothing answers there"):
        task_runner(RunnerConfig(kind="ray", address=f"127.0.0.1:{_closed_port()}", connect_timeout_s=1))


@pytest.mark.parametrize(("missing", "says"), [
    ("flows", "has no hopforge (no module 'flows') and runner.ship_code is off: install hopforge there or set "
              "runner.ship_code = true"),
    ("prefect_ray", "cannot run hopforge's tasks: no module 'prefect_ray'. Install hopforge's dependencies there"),
])  # fmt: skip
def test_a_node_that_cannot_import_a_batch_is_named_with_the_fix(missing, says):
    cfg = RunnerConfig(kind="ray", address="10.0.0.1:6379", ship_code=missing != "flows")
    line = ray_cluster._missing_line(cfg, {"missing": missing, "ip": "10.0.0.7", "python": "/usr/bin/python3"})
    assert line.startswith("runner.address 10.0.0.1:6379: the Ray node at 10.0.0.7 (/usr/bin/python3) ")
    assert says in line and "\n" not in line and line.endswith("run the same command again; what finished is kept")
