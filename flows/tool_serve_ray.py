"""The tool service on Ray Serve: N replicas of the tool server app behind one address.

``hopforge serve-tools --ray-address HOST:PORT --replicas N`` (``serve_on_ray``) joins the Ray cluster at that address,
starts Ray Serve there with a single HTTP proxy on the head node (``proxy_location="HeadOnly"``, listening on
``--host``/``--port``: one address for every client), and deploys the application ``hopforge-tools`` (route prefix
``/``) of ``replicas`` copies of the app ``flows.tool_server.create_app`` builds: the same routes, the same replies
(byte for byte: the Omne-R1 fast path, the result cache, the pre-rendered node_info replies of the served cache), the
same token rule. Ray Serve spreads the requests over the replicas and replaces one that dies.

Snapshot files: every replica opens the warehouse read-only and memory-maps the snapshot's served files (the served
graph arrays, the entity matrix, the text index) from the data directory at ``shared_data_dir``: a path every node of
the cluster can read at the same place (a shared file system; on the local two-node rehearsal all nodes are processes
of one machine and share its disk). Nothing is copied into Ray's object store. Before deploying, this process opens
the same snapshot once (``tool_environment(..., served=True)``, what ``hopforge serve-tools`` loads): a missing
warehouse or snapshot is refused in one line before the cluster is touched, and a cold snapshot's served files are
written once here instead of by every replica at once.

Token: as with the single server, listening beyond loopback without ``$HOPFORGE_TOOL_TOKEN`` is refused; with it, every
request to the app (``/health`` included) must carry ``Authorization: Bearer <token>``. The token reaches the replicas
as an argument of their constructor (pickled inside the cluster's own store, never in a command line, the deployment's
displayed config or a log). Ray Serve's own proxy routes (``/-/healthz``, ``/-/routes``) answer without it: they say
that the proxy is up and which route prefixes exist, nothing of the graphs.

Code: hopforge's packages travel to the nodes in the job's runtime_env as the factory's batch tasks do
(``flows.ray_cluster.runtime_env``, plus ``training``, which the app imports); ``ship_code=False`` when every node has
hopforge installed. Stop: ``RayToolService.stop`` (or SIGINT/SIGTERM to ``hopforge serve-tools``) deletes the
application, shuts Serve down when no other application is left on the cluster, and disconnects.

Each replica is one process with one event loop (``replica_cpus`` CPUs reserved for it, 1 by default): the
``--workers`` forking of the single server is replaced by replicas, which Ray may place on any node.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator
from typing import Any

from schemas.config import RunnerConfig, Settings
from schemas.errors import ConfigError, InputError
from training.tool_auth import TOKEN_ENV, is_loopback_host

log = logging.getLogger(__name__)

APP_NAME = "hopforge-tools"
DEPLOYMENT_NAME = "ToolServer"
#: The Serve namespace's replica actors are named ``SERVE_REPLICA::<app>#<deployment>#<id>``.
REPLICA_PREFIX = f"SERVE_REPLICA::{APP_NAME}#{DEPLOYMENT_NAME}#"


#: Serve's proxy sends each request to a replica on its own node while one is there and not full, which with one proxy
#: on the head would leave the other nodes' replicas idle under any load below ``max_ongoing_requests`` per head
#: replica: off, so the proxy picks among all replicas by their queues (power of two choices). Set in the controller's
#: environment, which the proxy it starts inherits; a Serve already running on the cluster keeps its own.
SPREAD_ENV = {"RAY_SERVE_PROXY_PREFER_LOCAL_NODE_ROUTING": "0", "RAY_SERVE_PROXY_PREFER_LOCAL_AZ_ROUTING": "0"}


def check_address(address: str, timeout_s: float = 10.0) -> None:
    """Fail in one line, within ``timeout_s``, when nothing answers at the Ray address (``host:port`` of the head's
    GCS, or ``ray://host:port``); ``auto`` is left to Ray."""
    from flows.ray_cluster import silent

    reason = silent(address, timeout_s, "--ray-address")
    if reason is not None:
        raise ConfigError(f"--ray-address {address}: nothing answers there ({reason}): start the cluster's head "
                          "(ray start --head) or fix the address")  # fmt: skip


def _runtime_env(address: str, ship_code: bool) -> dict[str, Any]:
    from flows.ray_cluster import runtime_env

    env = runtime_env(RunnerConfig(kind="ray", address=address, ship_code=ship_code))
    if ship_code:  # the app imports training.tool_auth; the factory's batch tasks do not
        root = Path(__file__).resolve().parent.parent
        env["py_modules"] = [*env["py_modules"], str(root / "training")]
    return env


def load_app(settings: Settings, domains: list[str] | None, embedder: str, token: str | None,
             views: str | None = None, blas_threads: int | None = 1, **app_options: Any) -> Any:
    """The tool server app of one replica (or of the single server, for comparison): the environment
    ``hopforge serve-tools`` serves (the snapshot's served files from ``settings.data_dir``, the warehouse's IKG
    views, an export's views), its indexes warmed and its search set up in this process, and the node_info replies
    of the served cache; ``app_options`` go to ``create_app``."""
    from flows.tool_server import NodeInfoReplies, create_app
    from flows.tools_env import export_qa_rows, export_views, tool_environment, warehouse_views
    from warehouse.db import Warehouse

    from flows.tool_workers import limit_blas

    limit_blas(blas_threads)
    with Warehouse(settings.warehouse_path, read_only=True, lock_wait_s=settings.lock_wait_s) as wh:
        env = tool_environment(settings, wh, domains, embedder, served=True)  # type: ignore[arg-type]
        registry = warehouse_views(wh, env)
    if views is not None:
        export_views(export_qa_rows(views), {d: env.indexes[d].graph for d in env.domains}, registry)
    env.warm()
    replies = NodeInfoReplies.from_served(env)
    if replies is None and "node_info" in env.tool_names:
        replies = NodeInfoReplies.render(env)
    env.prepare_search(threads=blas_threads)
    return create_app(env, token=token, views=registry, node_info_replies=replies, **app_options)


class ToolReplica:
    """One replica of the deployment: loads the app in its constructor (on the node Ray placed it on) and hands it
    to Serve (``__serve_build_asgi_app__``, Serve's late-bound ASGI ingress)."""

    def __init__(self, settings: Settings, domains: list[str] | None, embedder: str, token: str | None,
                 views: str | None, app_options: dict[str, Any]) -> None:
        started = time.perf_counter()
        self._app = load_app(settings, domains, embedder, token, views, **app_options)
        log.info("tool replica %d ready in %.1f s", os.getpid(), time.perf_counter() - started)

    def __serve_build_asgi_app__(self) -> Any:
        return self._app


@dataclass
class RayToolService:
    """A running deployment: ``url`` is the one address of its replicas."""

    address: str
    url: str
    replicas: int
    _joined: bool = True

    def replica_actors(self) -> list[str]:
        """The names of the deployment's live replica actors (in Ray's ``serve`` namespace)."""
        import ray

        return sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                      if a["name"].startswith(REPLICA_PREFIX))  # fmt: skip

    def running_replicas(self) -> int:
        """Replicas Serve reports RUNNING now."""
        from ray import serve

        app = serve.status().applications.get(APP_NAME)
        if app is None or DEPLOYMENT_NAME not in app.deployments:
            return 0
        return int(app.deployments[DEPLOYMENT_NAME].replica_states.get("RUNNING", 0))

    def stop(self) -> None:
        """Delete the application; shut Serve down when no other application is left; disconnect."""
        import ray
        from ray import serve

        if not self._joined:
            return
        try:
            serve.delete(APP_NAME)
            if not serve.status().applications:
                serve.shutdown()
        finally:
            ray.shutdown()
            self._joined = False


def serve_on_ray(settings: Settings, address: str, *, replicas: int = 2, host: str = "127.0.0.1",
                 port: int = 8765, domains: list[str] | None = None, embedder: str = "configured",
                 token: str | None = None, shared_data_dir: Path | None = None, views: Path | None = None,
                 replica_cpus: float = 1.0, ship_code: bool = True, max_ongoing_requests: int = 64,
                 connect_timeout_s: float = 10.0, ready_timeout_s: float = 300.0,
                 app_options: dict[str, Any] | None = None) -> RayToolService:
    """Deploy ``replicas`` tool server replicas on the Ray cluster at ``address``, behind Serve's proxy on the head
    node at ``host:port``; return once every replica answers (see the module docstring). ``shared_data_dir``: the
    data directory as the nodes see it (default: ``settings.data_dir``). ``InputError``/``ConfigError`` in one line
    for a public host without a token, an address where nothing answers, a missing warehouse or snapshot, or a port
    Serve already serves elsewhere on the cluster."""
    if replicas < 1:
        raise InputError(f"replicas must be >= 1, got {replicas}")
    if not token and not is_loopback_host(host):
        raise InputError(f"serving the tools on {host} (beyond loopback) needs a shared token: set {TOKEN_ENV} in "
                         "the server's environment and the same value where the clients run")  # fmt: skip
    check_address(address, connect_timeout_s)
    node_settings = settings.model_copy(update={"data_dir": Path(shared_data_dir)}) if shared_data_dir else settings
    _prepare(node_settings, domains, embedder)

    import ray
    from ray import serve

    env = _runtime_env(address, ship_code)
    if ray.is_initialized():
        ray.shutdown()
    try:
        ray.init(address=address, runtime_env=env, namespace=APP_NAME, log_to_driver=False)
    except ConnectionError as exc:
        raise ConfigError(f"--ray-address {address}: cannot join the Ray cluster there: "
                          f"{' '.join(str(exc).split())[:300]}") from None  # fmt: skip
    service = RayToolService(address, f"http://{host}:{port}", replicas)
    try:
        with _interruptible():
            _deploy(service, node_settings, host, port, domains, embedder, token, views, replica_cpus,
                    max_ongoing_requests, ready_timeout_s, app_options)
    except BaseException:
        service.stop()
        raise
    return service


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """While the service starts, SIGTERM interrupts it like Ctrl-C (so the deployment is deleted on the way out):
    Ray's driver otherwise answers SIGTERM by aborting the process, leaving the application running."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt("SIGTERM")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _deploy(service: RayToolService, node_settings: Settings, host: str, port: int, domains: list[str] | None,
            embedder: str, token: str | None, views: Path | None, replica_cpus: float, max_ongoing_requests: int,
            ready_timeout_s: float, app_options: dict[str, Any] | None) -> None:
    from ray import serve

    serve.start(proxy_location="HeadOnly", http_options={"host": host, "port": port},
                controller_options={"runtime_env": {"env_vars": SPREAD_ENV}})
    _check_proxy_config(host, port)
    deployment = serve.deployment(
        serve.ingress()(ToolReplica), name=DEPLOYMENT_NAME, num_replicas=service.replicas,
        ray_actor_options={"num_cpus": replica_cpus}, max_ongoing_requests=max_ongoing_requests)
    app = deployment.bind(node_settings, domains, embedder, token, str(views) if views else None,
                          dict(app_options or {}))
    serve.run(app, name=APP_NAME, route_prefix="/")  # returns once every replica has started
    _wait_ready(service, token, ready_timeout_s)


def _prepare(settings: Settings, domains: list[str] | None, embedder: str) -> None:
    """Open the snapshot once here, as a replica will: refuse a missing warehouse or snapshot before the cluster is
    touched, and write a cold snapshot's served files once."""
    from flows.tools_env import tool_environment
    from warehouse.db import Warehouse

    if not settings.warehouse_path.is_file():
        raise InputError(f"no warehouse at {settings.warehouse_path}: the replicas read the snapshot from there "
                         "(give the data directory every node sees, --shared-data-dir)")  # fmt: skip
    with Warehouse(settings.warehouse_path, read_only=True, lock_wait_s=settings.lock_wait_s) as wh:
        env = tool_environment(settings, wh, domains, embedder, served=True)  # type: ignore[arg-type]
    env.warm()
    del env


def _check_proxy_config(host: str, port: int) -> None:
    """Serve already running on the cluster keeps its own HTTP options: refuse other ones instead of serving at an
    address the caller did not ask for."""
    try:
        from ray.serve.context import _get_global_client

        config = _get_global_client().http_config
    except Exception:  # a private API: no check rather than no service
        return
    if (config.host, config.port) != (host, port):
        raise InputError(f"Ray Serve already runs on this cluster with its proxy on {config.host}:{config.port}, "
                         f"not {host}:{port}: serve there, or stop it first (serve shutdown)")  # fmt: skip


def _wait_ready(service: RayToolService, token: str | None, timeout_s: float) -> None:
    """Until Serve reports every replica RUNNING and the proxy answers the app's ``/health``."""
    from ray import serve

    deadline = time.monotonic() + timeout_s
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    last = ""
    while time.monotonic() < deadline:
        app = serve.status().applications.get(APP_NAME)
        status = str(getattr(app, "status", ""))
        if app is not None and "DEPLOY_FAILED" in status:
            raise RuntimeError(f"the tool deployment failed: {' '.join(str(app.message).split())[:600]}")
        if service.running_replicas() >= service.replicas:
            try:
                with urllib.request.urlopen(urllib.request.Request(f"{service.url}/health", headers=headers),
                                            timeout=5) as reply:  # fmt: skip
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
        time.sleep(0.5)
    raise RuntimeError(f"the tool deployment was not ready within {timeout_s:.0f} s {last}".strip())


def run_until_stopped(service: RayToolService, on_ready: Any = None) -> None:
    """Block until SIGINT or SIGTERM, then stop the service; ``on_ready()`` is called once the signals are taken
    (a line printed there is the sign that a signal now stops the service cleanly)."""
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if on_ready is not None:
            on_ready()
        while not stop.wait(1.0):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        service.stop()


__all__ = ["APP_NAME", "DEPLOYMENT_NAME", "RayToolService", "ToolReplica", "check_address", "load_app",
           "run_until_stopped", "serve_on_ray"]
