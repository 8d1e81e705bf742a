"""Joining a Ray cluster by address (``runner.kind = "ray"`` with ``runner.address``).

The flow process is the Ray driver and stays the only writer of the warehouse: batch tasks on any node return
records, the flow writes them. What a node needs is therefore Python with hopforge's dependencies (Ray and Python
of the same versions as the driver's, prefect, prefect-ray...) and, for the LLM answers cache, the data directory
at the same path; hopforge's own packages travel with the job in Ray's ``runtime_env`` (``py_modules``), so no
node needs a checkout (``runner.ship_code = false``: every node has hopforge installed).

``join`` connects once per process, like the local Ray, and keeps the connection for the following flows (a factory
run is several flows; prefect-ray would connect and disconnect around each). Before the first batch of every flow
it asks each live node to import what a batch task imports, so a node that cannot run one is named in one line
before any work is lost to it, rather than failing each batch sent there with a traceback.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from schemas.config import RunnerConfig
from schemas.errors import ConfigError

#: hopforge's own packages: what a batch task's code needs beyond the installed dependencies.
PACKAGES = ("flows", "gateway", "schemas", "tasks", "warehouse")
#: Modules a batch task imports on its worker: prefect-ray's task wrapper and the batch machinery (which imports
#: hopforge's gateway, schemas and graph code and their dependencies).
PROBE_MODULES = ("prefect_ray.task_runners", "flows.batches")
_EXCLUDES = ["__pycache__", "*.pyc", "demo/corpus"]

_joined: tuple[str, str] | None = None  # (address, runtime_env key) this process is connected with


def runtime_env(cfg: RunnerConfig) -> dict[str, Any]:
    """The job's runtime_env: the configured one, plus hopforge's packages unless ``ship_code`` is off."""
    env = dict(cfg.runtime_env)
    if cfg.ship_code:
        root = Path(__file__).resolve().parent.parent
        env["py_modules"] = [str(root / p) for p in PACKAGES] + list(env.get("py_modules", []))
        env["excludes"] = _EXCLUDES + list(env.get("excludes", []))
    return env


def join(cfg: RunnerConfig) -> None:
    """Connect this process to the cluster at ``cfg.address`` (once; again if the address or runtime_env changed)
    and check that every live node can run a batch task. Raises ``ConfigError`` in one line otherwise."""
    global _joined
    import json

    import ray

    address = str(cfg.address)
    env = runtime_env(cfg)
    key = (address, json.dumps(env, sort_keys=True, default=str))
    if _joined != key or not ray.is_initialized():
        if ray.is_initialized():  # a local Ray or another cluster: this flow asked for this one
            ray.shutdown()
        _joined = None
        _answers(address, cfg.connect_timeout_s)
        try:
            ray.init(address=address, runtime_env=env, namespace="prefect")
        except ConnectionError as exc:
            raise ConfigError(f"runner.address {address}: cannot join the Ray cluster there: "
                              f"{' '.join(str(exc).split())[:300]}") from None  # fmt: skip
        _joined = key
    check_nodes(cfg)


def leave() -> None:
    """Disconnect from the cluster ``join`` connected to, if any (a local Ray is left alone)."""
    global _joined
    if _joined is not None:
        import ray

        ray.shutdown()
        _joined = None


def silent(address: str, timeout_s: float, option: str) -> str | None:
    """Why nothing answers at the Ray address ``address`` within ``timeout_s`` ("timed out", "connection refused"),
    or None when something does (Ray itself would retry for a minute or more before saying so); ``auto`` is left to
    Ray. ``ConfigError`` naming ``option`` (the setting or flag it came from) when it is no ``host:port`` or
    ``ray://host:port``."""
    if address == "auto":
        return None
    parts = urlsplit(address if "://" in address else f"//{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if not host or not port:
        raise ConfigError(f"{option} {address!r} is not host:port, ray://host:port or auto")
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as exc:
        return "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or type(exc).__name__).lower()
    return None


def _answers(address: str, timeout_s: float) -> None:
    """Fail in one line, within ``timeout_s``, when nothing listens at ``runner.address`` (``silent``)."""
    reason = silent(address, timeout_s, "runner.address")
    if reason is not None:
        raise ConfigError(
            f"runner.address {address}: nothing answers there ({reason} after at most {timeout_s:g} s, "
            "runner.connect_timeout_s): start the cluster's head (ray start --head) or fix runner.address, then run "
            "the same command again; what finished is kept")  # fmt: skip


def check_nodes(cfg: RunnerConfig) -> list[dict[str, Any]]:
    """Ask every live node, by a task pinned there, to import what a batch task imports; return what each said
    (node id, address, Python, where hopforge's ``flows`` came from). A node that cannot raises ``ConfigError``
    naming it and the missing module."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    # Defined here so that it is pickled by value: a node without hopforge can still run it and say so.
    def probe(modules: tuple[str, ...]) -> dict[str, Any]:
        import importlib
        import sys

        import ray as ray_

        said: dict[str, Any] = {"python": sys.executable, "missing": None, "flows": None,
                                "node_id": ray_.get_runtime_context().get_node_id()}  # fmt: skip
        for name in modules:
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as exc:
                said["missing"] = exc.name or name
                break
        flows = sys.modules.get("flows")
        said["flows"] = getattr(flows, "__file__", None)
        return said

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    remote = ray.remote(num_cpus=0, max_retries=0)(probe)
    refs = {n["NodeID"]: remote.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
            .remote(PROBE_MODULES) for n in nodes}  # fmt: skip
    ips = {n["NodeID"]: n["NodeManagerAddress"] for n in nodes}
    deadline = time.monotonic() + cfg.connect_timeout_s + 60  # a fresh worker imports prefect (seconds)
    found: list[dict[str, Any]] = []
    for node_id, ref in refs.items():
        try:
            said = ray.get(ref, timeout=max(1.0, deadline - time.monotonic()))
        except ray.exceptions.GetTimeoutError:
            raise ConfigError(f"runner.address {cfg.address}: the Ray node at {ips[node_id]} did not start a task "
                              "within the time allowed; see its raylet log") from None  # fmt: skip
        except ray.exceptions.RuntimeEnvSetupError as exc:
            raise ConfigError(f"runner.address {cfg.address}: the Ray node at {ips[node_id]} could not set up the "
                              f"job's runtime_env (runner.runtime_env): {_first_line(exc)}") from None  # fmt: skip
        except (ray.exceptions.NodeDiedError, ray.exceptions.WorkerCrashedError, ray.exceptions.TaskUnschedulableError):
            continue  # a node that left while asked: no batch will go there
        said["ip"] = ips[node_id]
        if said["missing"]:
            raise ConfigError(_missing_line(cfg, said))
        found.append(said)
    return found


def _missing_line(cfg: RunnerConfig, said: dict[str, Any]) -> str:
    missing = said["missing"]
    where = f"runner.address {cfg.address}: the Ray node at {said['ip']} ({said['python']})"
    if missing.split(".")[0] in PACKAGES:
        return (f"{where} has no hopforge (no module {missing!r}) and runner.ship_code is off: install hopforge "
                "there or set runner.ship_code = true, then run the same command again; what finished is kept")
    return (f"{where} cannot run hopforge's tasks: no module {missing!r}. Install hopforge's dependencies there "
            "(pip install 'hopforge[ray]' in a Python and Ray of the driver's versions), then run the same command "
            "again; what finished is kept")


def _first_line(exc: BaseException) -> str:
    lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
    return (lines[-1] if lines else type(exc).__name__)[:300]
