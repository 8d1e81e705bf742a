"""What a verl run needs from Ray beyond verl itself: joining a cluster, checks from every node, and a guard on tool
failures.

``training/launch/verl_ppo.py`` calls, in order:

1. ``connect``: ``ray.init`` with the plan's ``ray_kwargs.ray_init`` (the cluster's ``address``), and the runtime_env
   verl would build (its defaults merged with the plan's) plus a ``working_dir`` holding the run's tool config. verl
   reads ``multi_turn.tool_config_path`` in every rollout worker, so the path becomes relative to that directory,
   which Ray unpacks on each node. hopforge's packages arrive the same way (the plan's ``py_modules``). verl skips
   its own ``ray.init`` (and its print of the init arguments) once Ray is up.
2. ``start_control``: ``RunControl``, a named actor on the launching node. It holds the tool server's token, which
   the tool class and the probes fetch from it (``worker_token``): a token in the runtime_env's ``env_vars`` would be
   written, in clear, into every node's ``runtime_env_agent.log`` by Ray. It also counts tool-call outcomes over a
   window (``FailureWindow``), reported by every tool instance on every node.
3. ``preflight``: one task pinned to each alive node (``NodeAffinitySchedulingStrategy``, no CPU reserved) imports
   the tool class and the reward from the shipped packages, calls the tool server's ``/health`` with the token, reads
   a marker the launcher wrote into ``shared_dir``, and checks the tool config and the model path; then the GPUs
   the plan asks for must exist. Any problem is one ``LaunchError`` naming the node.
4. ``pinned_here``: verl's driver task (``TaskRunner``) is pinned to the launching node, so the export's parquet
   files, the file logger's metrics and the tokenizer it loads for the dataset are read and written there.
5. ``FailureGuard``: polls the control actor; when more than ``max_tool_failure_rate`` of the last
   ``tool_failure_window`` calls failed, it interrupts the launcher's main thread (blocked in verl's ``ray.get``),
   which stops the run instead of training on error replies.

Runs in the verl environment (Ray is imported where it is used, so ``FailureWindow`` loads anywhere: the TRL
launcher counts its tool calls with it too, one window per process). Ray workers
import it as ``training.launch.verl_cluster`` from their py_modules copy, which is why the launcher imports it under
that name.
"""

from __future__ import annotations

import _thread
import os
import secrets
import shutil
import socket
import sys
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training.tool_auth import TOKEN_ENV, auth_headers, tool_token

CONTROL_ACTOR = "hopforge_run_control"
#: The run's tool config inside the job's working_dir (relative: Ray workers start in their copy of that directory).
TOOL_CONFIG_NAME = "tool_config.yaml"
#: Prefix of a run's Ray namespace (``hopforge-<run id>``): named actors are looked up in the job's namespace, so
#: two runs on one cluster each find their own control actor.
NAMESPACE = "hopforge"


class LaunchError(RuntimeError):
    """A problem found before or while training that the user fixes (one line naming the setting or node)."""


# -- tool failures --------------------------------------------------------------------------------------------------


@dataclass
class FailureWindow:
    """Outcomes of the last ``window`` tool calls. ``tripped`` once more than ``max_rate × window`` of them failed:
    from then on even a window of successes could not bring the rate back under the bound, and a server that is down
    trips it after ``max_rate × window`` calls instead of a whole window."""

    max_rate: float
    window: int
    calls: int = 0
    failures: int = 0
    first_error: str | None = None
    recent: deque[bool] = field(default_factory=deque)

    def record(self, failed: bool, error: str | None = None) -> None:
        self.calls += 1
        self.failures += int(failed)
        if failed and self.first_error is None and error:
            self.first_error = error[:300]
        self.recent.append(failed)
        while len(self.recent) > self.window:
            self.recent.popleft()

    @property
    def window_failures(self) -> int:
        return sum(self.recent)

    @property
    def tripped(self) -> bool:
        return self.window_failures > self.max_rate * self.window

    def snapshot(self) -> dict[str, Any]:
        n = len(self.recent)
        return {"calls": self.calls, "failures": self.failures, "window_calls": n,
                "window_failures": self.window_failures,
                "window_failure_rate": round(self.window_failures / n, 6) if n else 0.0,
                "max_rate": self.max_rate, "window": self.window, "tripped": self.tripped,
                "first_error": self.first_error}  # fmt: skip


class RunControl:
    """The run's named actor (module docstring): the tool token and the tool-call failure window."""

    def __init__(self, max_rate: float, window: int) -> None:
        self.failures = FailureWindow(max_rate, window)
        self._token: str | None = None

    def set_token(self, token: str | None) -> None:
        self._token = token

    def token(self) -> str | None:
        return self._token

    def record(self, failed: bool, error: str | None = None) -> None:
        self.failures.record(failed, error)

    def snapshot(self) -> dict[str, Any]:
        return self.failures.snapshot()


def start_control(token: str | None, max_rate: float, window: int) -> Any:
    """The run's ``RunControl`` actor, on this node, holding ``token`` (sent as a method argument: it reaches the
    actor's memory and nowhere else)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.get_runtime_context().get_node_id()
    handle = ray.remote(RunControl).options(
        name=CONTROL_ACTOR, num_cpus=0, max_concurrency=64,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False),
    ).remote(max_rate, window)  # fmt: skip
    ray.get(handle.set_token.remote(token))
    return handle


def control_handle() -> Any | None:
    """This job's control actor, or ``None`` outside Ray or when the launcher started none (``--check``, tests)."""
    import ray

    if not ray.is_initialized():
        return None
    try:
        return ray.get_actor(CONTROL_ACTOR)
    except ValueError:
        return None


def worker_token() -> tuple[str | None, str]:
    """The tool server's token for a Ray worker and where it came from: this process's environment, else the
    control actor (blocking: for tasks, not for async tool code)."""
    import ray

    token = tool_token()
    if token:
        return token, "environment"
    handle = control_handle()
    if handle is None:
        return None, "none"
    token = ray.get(handle.token.remote(), timeout=60)
    return token, "control actor" if token else "none"


class FailureGuard(threading.Thread):
    """Polls the control actor every ``interval_s``; keeps the last snapshot (for the metrics rows) and, when the
    window trips, interrupts the main thread once (``_thread.interrupt_main``: ``KeyboardInterrupt`` there)."""

    def __init__(self, control: Any, interval_s: float = 2.0) -> None:
        super().__init__(name="tool-failure-guard", daemon=True)
        self.control, self.interval_s = control, interval_s
        self.last: dict[str, Any] = {}
        self.tripped: dict[str, Any] | None = None
        self.stopped = threading.Event()
        self._warned = False

    def poll(self) -> dict[str, Any]:
        import ray

        try:
            self.last = ray.get(self.control.snapshot.remote(), timeout=30)
        except (ray.exceptions.RayError, TimeoutError) as exc:
            if not self._warned:  # once: the run goes on, unguarded until the actor answers again
                print(f"warning: the tool-failure counter did not answer ({type(exc).__name__})", file=sys.stderr)
                self._warned = True
        return self.last

    def run(self) -> None:
        while not self.stopped.wait(self.interval_s):
            if self.poll().get("tripped"):
                self.tripped = dict(self.last)
                _thread.interrupt_main()
                return

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=10)

    def metrics(self) -> dict[str, float]:
        """The counters as ``metrics.jsonl`` columns."""
        return failure_metrics(self.last)

    def reason(self) -> str:
        return failure_reason(self.tripped or self.last)


def failure_metrics(s: Mapping[str, Any]) -> dict[str, float]:
    """A ``FailureWindow.snapshot`` as ``metrics.jsonl`` columns (empty before the first snapshot)."""
    if not s:
        return {}
    return {"tool/calls": float(s["calls"]), "tool/failures": float(s["failures"]),
            "tool/window_failure_rate": float(s["window_failure_rate"])}  # fmt: skip


def failure_reason(s: Mapping[str, Any]) -> str:
    """The one line a run stopped by a tripped ``FailureWindow`` (its ``snapshot``) ends with."""
    return (f"tool calls are failing: {s['window_failures']} of the last {s['window_calls']} failed, more than "
            f"max_tool_failure_rate {s['max_rate']:g} of tool_failure_window {s['window']} (first error: "
            f"{s['first_error']}); the run stopped instead of training on error replies")  # fmt: skip


def run_guarded(run: Any, guard: FailureGuard) -> None:
    """``run()`` with ``guard`` watching: ``LaunchError`` with the guard's reason when it stopped the run (the
    interrupt it sent), any other interrupt or error as it came."""
    try:
        run()
    except KeyboardInterrupt:
        if guard.tripped is None:
            raise
        raise LaunchError(guard.reason()) from None


# -- joining the cluster --------------------------------------------------------------------------------------------


def job_dir_with_tool_config(run_dir: Path, tool_config: Path) -> Path:
    """``<run_dir>/ray_job``, holding a copy of the tool config: the job's runtime_env ``working_dir``."""
    job = run_dir / "ray_job"
    if job.exists():
        shutil.rmtree(job)
    job.mkdir(parents=True)
    shutil.copyfile(tool_config, job / TOOL_CONFIG_NAME)
    return job


def job_runtime_env(config: Any, job_dir: Path) -> dict[str, Any]:
    """The runtime_env verl would pass to ``ray.init`` (its defaults merged with the config's
    ``ray_kwargs.ray_init.runtime_env``), with ``job_dir`` as the working_dir."""
    from omegaconf import OmegaConf
    from verl.trainer.constants_ppo import get_ppo_ray_runtime_env

    ray_init = config.ray_kwargs.get("ray_init", {})
    merged = OmegaConf.merge(get_ppo_ray_runtime_env(config), ray_init.get("runtime_env", {}))
    env = OmegaConf.to_container(merged, resolve=True)
    env["working_dir"] = str(job_dir)
    return {k: v for k, v in env.items() if v is not None}


def connect(config: Any, job_dir: Path, run_id: str) -> dict[str, Any]:
    """``ray.init`` for run ``run_id`` (module docstring; namespace ``hopforge-<run_id>`` unless the config names
    one); returns what was passed, for the log. ``LaunchError`` when the cluster does not answer."""
    import ray

    from omegaconf import OmegaConf

    kwargs = OmegaConf.to_container(config.ray_kwargs.get("ray_init", {}), resolve=True) or {}
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    kwargs["runtime_env"] = job_runtime_env(config, job_dir)
    kwargs.setdefault("namespace", f"{NAMESPACE}-{run_id}")
    address = kwargs.get("address")
    try:
        ray.init(**kwargs)
    except (ConnectionError, ray.exceptions.RaySystemError, RuntimeError) as exc:
        where = f"the Ray cluster at {address}" if address else "a local Ray"
        raise LaunchError(f"ray_address: {where} could not be joined ({str(exc).splitlines()[0]})") from None
    return {"address": address or "local", "namespace": kwargs["namespace"],
            "py_modules": kwargs["runtime_env"].get("py_modules", []), "working_dir": str(job_dir),
            "env_vars": sorted(kwargs["runtime_env"].get("env_vars", {}))}  # fmt: skip


def pinned_here(actor_cls: Any) -> Any:
    """``actor_cls`` with its actors placed on the node this process runs on."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.get_runtime_context().get_node_id()
    return actor_cls.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False))


# -- checks from every node ------------------------------------------------------------------------------------------


def probe(request: Mapping[str, Any]) -> dict[str, Any]:
    """What one node sees (runs there, in a Ray task). ``request``: ``tool_urls``, ``graphs``, ``shared_marker``
    (path and expected content), ``model`` (a local path to check, or ``None``)."""
    import ray

    import importlib

    import httpx

    out: dict[str, Any] = {"hostname": socket.gethostname(), "node_ip": ray.util.get_node_ip_address(),
                           "cwd": os.getcwd(), "modules": {}, "problems": []}  # fmt: skip
    for name in ("training.launch.verl_tools", "training.verl_reward"):
        try:
            out["modules"][name] = importlib.import_module(name).__file__
        except ImportError as exc:
            out["problems"].append(f"cannot import {name} from the shipped packages ({exc})")
    token, source = worker_token()
    out["token"] = source
    for url in request.get("tool_urls", []):
        try:
            response = httpx.get(f"{url}/health", headers=auth_headers(token), timeout=10.0)
        except httpx.HTTPError as exc:
            out["problems"].append(f"the KG tool server {url} does not answer /health from here ({exc})")
            continue
        if response.status_code in (401, 403):
            out["problems"].append(f"the KG tool server {url} refused {'the' if token else 'a missing'} token "
                                   f"(HTTP {response.status_code}): set {TOKEN_ENV} where the launcher runs to the "
                                   "server's value")  # fmt: skip
            continue
        if response.status_code != 200:
            out["problems"].append(f"the KG tool server {url} answers /health with HTTP {response.status_code}")
            continue
        served = set(response.json().get("graph_types", []))
        missing = sorted(set(request.get("graphs", [])) - served)
        if missing:
            out["problems"].append(f"the KG tool server {url} does not serve the graph(s) {missing} of the train rows")
        out.setdefault("health", {})[url] = response.status_code
    marker = request.get("shared_marker")
    if marker:
        path = Path(marker["path"])
        seen = path.read_text(encoding="utf-8") if path.is_file() else None
        if seen != marker["content"]:
            out["problems"].append(f"shared_dir {path.parent} is not the launching node's directory here (its marker "
                                   f"{'differs' if seen is not None else 'is missing'}): mount the same shared file "
                                   "system at that path on every node")  # fmt: skip
        else:
            out["shared_dir"] = "ok"
    if not Path(TOOL_CONFIG_NAME).is_file():
        out["problems"].append(f"the job's working_dir ({os.getcwd()}) holds no {TOOL_CONFIG_NAME}")
    model = request.get("model")
    if model and not (Path(model) / "config.json").is_file():
        out["problems"].append(f"model {model} is not on this node: copy it to the same path on every node, or use "
                               "a shared file system or a hub id")  # fmt: skip
    return out


def alive_nodes() -> list[dict[str, Any]]:
    import ray

    return [n for n in ray.nodes() if n.get("Alive")]


def preflight(*, tool_urls: Sequence[str], graphs: Sequence[str], shared_dir: str | None, model: str,
              device: str, nnodes: int, n_gpus_per_node: int, timeout_s: float = 300) -> dict[str, Any]:  # fmt: skip
    """Run ``probe`` on every alive node and check the GPUs the plan asks for; returns the report (one entry per
    node), ``LaunchError`` naming the node at the first problem."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = alive_nodes()
    request: dict[str, Any] = {"tool_urls": list(tool_urls), "graphs": sorted(graphs),
                               "model": model if model.startswith("/") else None}  # fmt: skip
    marker_path = None
    if shared_dir:
        marker_path = Path(shared_dir) / f".hopforge-preflight-{secrets.token_hex(8)}"
        content = secrets.token_hex(16)
        marker_path.write_text(content, encoding="utf-8")
        request["shared_marker"] = {"path": str(marker_path), "content": content}
    try:
        probe_task = ray.remote(num_cpus=0)(probe)
        refs = [probe_task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False),
                                    name=f"hopforge-probe-{n['NodeManagerAddress']}").remote(request) for n in nodes]
        results = ray.get(refs, timeout=timeout_s)
    except (ray.exceptions.GetTimeoutError, TimeoutError):
        raise LaunchError(f"the checks on the cluster's {len(nodes)} node(s) did not finish within {timeout_s:.0f} s "
                          "(a node cannot set up the job's runtime_env?)") from None
    finally:
        if marker_path is not None:
            marker_path.unlink(missing_ok=True)
    report = []
    for node, result in zip(nodes, results):
        result = {"node_id": node["NodeID"], **result}
        report.append(result)
        if result["problems"]:
            raise LaunchError(f"node {result['node_ip']} ({node['NodeID'][:8]}): {result['problems'][0]}")
    check_gpus(nodes, device=device, nnodes=nnodes, n_gpus_per_node=n_gpus_per_node)
    return {"nodes": report}


def check_gpus(nodes: Sequence[Mapping[str, Any]], *, device: str, nnodes: int, n_gpus_per_node: int) -> None:
    """``LaunchError`` when fewer than ``nnodes`` of the alive ``nodes`` (``ray.nodes()`` entries) hold
    ``n_gpus_per_node`` GPUs each: verl would start more processes than there are GPUs and wait for resources that
    never come. A CPU run (``device`` other than ``cuda``) asks for none."""
    if device != "cuda":
        return
    gpu_nodes = [n for n in nodes if n.get("Resources", {}).get("GPU", 0) >= n_gpus_per_node]
    if len(gpu_nodes) < nnodes:
        raise LaunchError(f"trainer.nnodes={nnodes} x n_gpus_per_node={n_gpus_per_node}: the cluster has "
                          f"{len(gpu_nodes)} node(s) with at least {n_gpus_per_node} GPUs "
                          f"({', '.join(str(int(n.get('Resources', {}).get('GPU', 0))) for n in nodes)} GPUs "
                          "per node)")  # fmt: skip


__all__ = ["CONTROL_ACTOR", "FailureGuard", "FailureWindow", "LaunchError", "RunControl", "check_gpus", "connect",
           "control_handle", "failure_metrics", "failure_reason", "job_dir_with_tool_config", "job_runtime_env",
           "pinned_here", "preflight", "probe", "run_guarded", "start_control", "worker_token"]  # fmt: skip
