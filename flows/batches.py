"""One way for every flow to run its batch tasks: ``run_batches``.

A flow cuts its work into batches, and ``run_batches`` submits them to the configured task runner (a thread pool by
default, Ray through prefect-ray with ``runner.kind = "ray"``), keeps ``runner.window`` batches in flight, and hands
the results back **in batch order**, so the flow (the single writer) writes each one in its own transaction in the
same order whatever ran it. That order is what makes a Ray run's exports byte-identical to a thread-pool run's.

A batch task takes picklable inputs only (records, a graph, a config, a ``GatewaySpec``) and returns a
``BatchResult``: its records plus the LLM usage it spent, which the flow adds to the run's ledger.

A batch whose worker died is submitted again (a new task run), up to ``resubmits`` times: its LLM answers are in the
shared cache already, so the second try repeats no answered call, and since results are written by the flow only
once per batch, nothing is duplicated.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence, Sized
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from gateway.endpoints import limit_name
from gateway.spec import GatewaySpec, spec_for
from gateway.usage import RoleUsage
from schemas.config import RunnerConfig
from tasks.graph.kg import KnowledgeGraph, cached_graph, share_graphs

B = TypeVar("B")
R = TypeVar("R")


@dataclass
class BatchResult(Generic[R]):
    """What a batch task returns: its records and the LLM usage spent making them."""

    records: list[R] = field(default_factory=list)
    usage: list[RoleUsage] = field(default_factory=list)
    pid: int = field(default_factory=os.getpid)  # the process that ran the batch (the flow's own, for threads)
    node: str = field(default_factory=lambda: _ray_node())  # the Ray node that ran it ("" outside a Ray worker)


def _ray_node() -> str:
    """The id of the Ray node this process is a worker of ("" in the flow's own process or without Ray)."""
    import sys

    ray = sys.modules.get("ray")  # a Ray worker has imported it; nothing else needs to
    if ray is None or not ray.is_initialized() or ray.get_runtime_context().worker.mode != 1:  # 1: WORKER_MODE
        return ""
    return ray.get_runtime_context().get_node_id()


def task_runner(cfg: RunnerConfig):
    """The Prefect task runner ``cfg`` asks for."""
    if cfg.kind == "ray":
        try:
            from prefect_ray import RayTaskRunner
        except ImportError:
            from schemas.errors import ConfigError

            raise ConfigError("runner.kind = ray needs prefect-ray and ray: pip install -e '.[ray]'") from None
        if not cfg.address:
            import ray

            from flows.ray_cluster import leave

            leave()  # a cluster an earlier flow of this process joined is not the local Ray this one asks for
            # A local Ray is started once per process and kept: the runner would shut down a Ray it started at the
            # end of each flow, and a factory run is six flows (about 10 s of start-up each here).
            if not ray.is_initialized():
                from gateway import children

                # Ray ties its raylet and GCS to the thread that starts them (the spawner thread lives as long as
                # the process); the watchdog ends the raylet's workers and agents when the process is killed.
                children.watch_descendants()
                children.on_spawner_thread(ray.init, num_cpus=cfg.max_workers, include_dashboard=False)
        else:
            from flows.ray_cluster import join

            join(cfg)  # connected once per process, hopforge's code in the job's runtime_env, every node checked
        return RayTaskRunner(address=cfg.address)
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner(max_workers=cfg.max_workers)


class RayGraphs:
    """Graphs in Ray's object store for the length of a flow: each snapshot's records are put once (before the first
    batch that carries the graph is submitted), a batch carries only the reference, and a worker builds the graph
    once per snapshot (``cached_graph``). Without it every batch would carry the whole graph."""

    def __init__(self) -> None:
        self.refs: dict[str, Any] = {}
        self._lock = threading.Lock()

    def put(self, parameters: dict[str, Any]) -> None:
        """Put the graphs among a batch's ``parameters`` that are not in the store yet."""
        for value in parameters.values():
            if isinstance(value, KnowledgeGraph) and value.snapshot_id is not None:
                with self._lock:
                    if value.snapshot_id not in self.refs:
                        import ray

                        records = (value.domain, value.entities(), value.relations(), value.directed)
                        self.refs[value.snapshot_id] = ray.put(records)

    def reduce(self, kg: KnowledgeGraph) -> tuple | None:
        ref = self.refs.get(kg.snapshot_id)  # type: ignore[arg-type]
        return None if ref is None else (_graph_from_store, (kg.snapshot_id, ref))


def _graph_from_store(snapshot_id: str, ref: Any) -> KnowledgeGraph:
    def build() -> KnowledgeGraph:
        import ray

        domain, entities, relations, directed = ray.get(ref)
        return KnowledgeGraph(domain, entities, relations, directed=directed, snapshot_id=snapshot_id)

    return cached_graph(snapshot_id, build)


class _Runner:
    """An entered task runner and the flow's gateway spec; see ``batch_runner``."""

    def __init__(self, runner: Any, cfg: RunnerConfig, gateway: Any, resubmits: int,
                 graphs: RayGraphs | None = None):  # fmt: skip
        self.runner = runner
        self.cfg = cfg
        self.gateway = gateway
        self.resubmits = resubmits
        self.graphs = graphs
        self._specs: dict[tuple[str, ...], GatewaySpec] = {}

    def submit(self, task: Any, parameters: dict[str, Any]) -> Any:
        from prefect.utilities.annotations import quote

        if self.graphs is not None:
            self.graphs.put(parameters)
            return self.runner.submit(task, parameters)
        # Quoted on the thread pool: a batch's parameters hold no futures, and Prefect would otherwise walk every
        # record in them (a graph, hundreds of jobs) twice per task run looking for some, 10-15 ms of the flow's
        # CPU a batch; the task gets the values themselves. (prefect-ray would hand a Ray task the quote itself.)
        return self.runner.submit(task, {name: quote(value) for name, value in parameters.items()})

    def spec(self, *roles: str) -> GatewaySpec:
        """The picklable gateway for tasks that call ``roles`` (resolved once per run)."""
        key = tuple(sorted(roles))
        if key not in self._specs:
            spec = spec_for(self.gateway, key, global_limits=self.cfg.kind != "threads" and self.cfg.global_limits)
            if spec.global_limits:
                _ensure_limits(spec)
            self._specs[key] = spec
        return self._specs[key]

    def in_flight(self, batch_size: int, concurrency: int) -> int:
        """Batches to keep in flight so that an endpoint with ``concurrency`` slots never idles while a batch drains
        its last jobs: enough batches to hold twice the endpoint's concurrency in jobs, plus one (a configured
        ``runner.in_flight`` wins; the thread pool runs at most ``max_workers`` at once). The flow still writes the
        results in batch order, so what lands in the warehouse does not depend on it."""
        if self.cfg.in_flight is not None:
            return self.cfg.in_flight
        want = -(-2 * max(concurrency, 1) // max(batch_size, 1)) + 1
        if self.cfg.kind == "threads":
            want = min(want, self.cfg.max_workers)
        return max(self.cfg.window, want)

    def run(self, task: Any, batches: Sequence[B], parameters: Callable[[B], dict[str, Any]],
            errors: Literal["raise", "return"] = "raise", one_per_process: bool = False,
            in_flight: int | None = None) -> Iterator[tuple[B, Any]]:
        """Run ``task(**parameters(batch))`` for every batch; yield ``(batch, result)`` in batch order. A
        ``BatchResult``'s usage is added to the flow's ledger before it is yielded. With ``errors="return"`` a
        batch whose task failed yields its exception instead (for flows that record a failed domain and go on).
        ``one_per_process``: the task keeps process-wide state that two concurrent runs would share (LightRAG's
        storage locks belong to one event loop), so the thread pool runs one batch at a time; Ray still runs one per
        worker process at once. ``in_flight``: batches submitted ahead (default ``runner.window``; see
        ``in_flight``)."""
        window = 1 if one_per_process and self.cfg.kind == "threads" else (in_flight or self.cfg.window)
        pending: deque[tuple[B, Any, int]] = deque()
        todo = iter(batches)

        def running() -> list[concurrent.futures.Future]:
            return [w for _, f, _ in pending if (w := _wrapped(f)) is None or not w.done()]

        def fill() -> None:
            # ``window`` batches run at once. A finished batch waits (at most ``window`` of them) behind an older
            # one still running, since results go out in batch order, but it no longer holds a place: one batch's
            # slow last job (a question on its third attempt) does not keep the next batches from starting.
            while len(pending) < 2 * window and len(running()) < window:
                batch = next(todo, _END)
                if batch is _END:
                    return
                pending.append((batch, self.submit(task, parameters(batch)), 0))

        fill()
        elsewhere: set[int] = set()
        nodes: set[str] = set()
        down = DownEndpoints(self.gateway)
        n = 0
        while pending:
            head = _wrapped(pending[0][1])
            if head is not None and not head.done():
                busy = running()
                if all(w is not None for w in busy):  # futures this loop can wait on (the thread pool's)
                    concurrent.futures.wait(busy, return_when=concurrent.futures.FIRST_COMPLETED)
                    fill()
                    continue
            batch, future, tries = pending.popleft()
            try:
                result = future.result()
            except Exception as exc:
                if not _worker_lost(exc) or tries >= self.resubmits:
                    if errors == "raise":
                        raise
                    fill()
                    yield batch, exc
                    continue
                print(f"{task.name}: a worker was lost ({type(exc).__name__}); submitting the batch again")
                pending.appendleft((batch, self.submit(task, parameters(batch)), tries + 1))
                continue
            if isinstance(result, BatchResult):
                if self.gateway is not None:
                    self.gateway.ledger.merge(result.usage)
                if result.pid != os.getpid():
                    elsewhere.add(result.pid)
                if result.node:
                    nodes.add(result.node)
                down.see(result.usage)
            n += 1
            fill()
            yield batch, result
            down.check(task.name, final=not pending)
        if elsewhere:
            on = f" on {len(nodes)} Ray node(s)" if nodes else ""
            print(f"{task.name}: {n} batch(es) ran in {len(elsewhere)} worker process(es){on} besides the flow's")


_END = object()


def _wrapped(future: Any) -> concurrent.futures.Future | None:
    """The ``concurrent.futures.Future`` under a task runner's future (the thread pool's), or None (Ray's)."""
    wrapped = getattr(future, "wrapped_future", None)
    return wrapped if isinstance(wrapped, concurrent.futures.Future) else None


class DownEndpoints:
    """Tells a down endpoint from a bad answer, batch by batch. A batch in which every request of a role failed to
    connect (after its retries) and none reached the endpoint counts against the role; one that reached it resets
    the count. Two such batches in a row, or the run's last batch when the role never reached its endpoint, mean
    the endpoint is down: the flow stops with an ``EndpointError`` naming it, rather than going through every job
    and recording each as lost. What landed before stays; attempts lost to the endpoint are not verdicts, so the
    same command resumes once the server is back."""

    streak_limit = 2

    def __init__(self, gateway: Any = None) -> None:
        self.gateway = gateway
        self.streak: dict[str, int] = {}
        self.reached: set[str] = set()
        self.refused: dict[str, int] = {}

    def see(self, usage: Sequence[RoleUsage]) -> None:
        for u in usage:
            refused = u.failures.get("connection", 0)
            if u.calls > 0:
                self.reached.add(u.role)
                self.streak[u.role] = 0
            elif refused:
                self.streak[u.role] = self.streak.get(u.role, 0) + 1
                self.refused[u.role] = self.refused.get(u.role, 0) + refused

    def check(self, stage: str, *, final: bool) -> None:
        for role, streak in sorted(self.streak.items()):
            if streak >= self.streak_limit or (final and streak and role not in self.reached):
                from schemas.errors import EndpointError

                ep = self.gateway.settings.endpoint(role) if self.gateway is not None else None
                where = f" at {ep.base_url} (model {ep.model})" if ep is not None and ep.base_url else ""
                raise EndpointError(
                    f"{stage}: the {role} endpoint{where} cannot be reached: {self.refused[role]} request(s) in "
                    f"{streak} batch(es) in a row failed to connect and none got through. Start the server or fix "
                    f"roles.{role}.base_url, then run the same command again: what finished is kept, and the jobs "
                    "lost to the endpoint are tried again."
                )


def _worker_lost(exc: BaseException) -> bool:
    """A failure of the machinery (a Ray worker or node died), not of the task's own code."""
    try:
        import ray.exceptions as rex
    except ImportError:
        return False
    lost = (rex.WorkerCrashedError, rex.NodeDiedError, rex.TaskCancelledError, rex.ObjectLostError)
    seen: BaseException | None = exc
    while seen is not None:  # Prefect may wrap the Ray error
        if isinstance(seen, lost):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


@contextmanager
def batch_runner(cfg: RunnerConfig, gateway: Any = None, *, resubmits: int = 2) -> Iterator[_Runner]:
    """Enter the configured task runner for the body of a flow."""
    runner = task_runner(cfg)
    graphs = RayGraphs() if cfg.kind == "ray" else None
    previous = share_graphs(graphs.reduce) if graphs is not None else None
    try:
        with runner:
            yield _Runner(runner, cfg, gateway, resubmits, graphs)
    finally:
        if graphs is not None:
            share_graphs(previous)
            graphs.refs.clear()  # the store frees them once no task holds them


def run_batches(task: Any, batches: Sequence[B], parameters: Callable[[B], dict[str, Any]], *, runner: _Runner,
                errors: Literal["raise", "return"] = "raise", one_per_process: bool = False,
                in_flight: int | None = None) -> Iterator[tuple[B, Any]]:
    """``runner.run`` as a function: the one batch loop of every flow."""
    return runner.run(task, batches, parameters, errors, one_per_process, in_flight)


def endpoint_concurrency(spec: GatewaySpec, *roles: str) -> int:
    """The largest ``max_concurrency`` among the endpoints of ``roles`` in ``spec`` (1 if none resolved)."""
    return max((spec.endpoints[r].max_concurrency for r in roles if r in spec.endpoints), default=1)


def typical_size(batches: Sequence[Sized], default: int) -> int:
    """The mean length of ``batches`` (``default`` for none), for ``_Runner.in_flight``: a flow cuts batches per
    domain, so they are often shorter than ``batch_size`` (20-40 questions a domain where ``batch_size`` is 64), and
    a window sized from ``batch_size`` would hold fewer jobs than the endpoint can run."""
    return max(1, round(sum(len(b) for b in batches) / len(batches))) if batches else default


def chunks(items: Sequence[B], size: int) -> list[Sequence[B]]:
    """``items`` cut into batches of ``size`` (the last may be shorter)."""
    if size < 1:
        from schemas.errors import InputError

        raise InputError(f"batch_size must be >= 1, got {size}")
    return [items[i : i + size] for i in range(0, len(items), size)]


def _ensure_limits(spec: GatewaySpec) -> None:
    """Create or update the Prefect global concurrency limit of every endpoint in ``spec`` to the endpoint's
    ``max_concurrency``, so that workers anywhere share it."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate, GlobalConcurrencyLimitUpdate
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        for ep in {(e.base_url, e.model): e for e in spec.endpoints.values()}.values():
            name = limit_name(ep)
            try:
                found = client.read_global_concurrency_limit_by_name(name)
            except ObjectNotFound:
                found = None
            if found is None:
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=ep.max_concurrency))
            elif found.limit != ep.max_concurrency or not found.active:
                client.update_global_concurrency_limit(
                    name, GlobalConcurrencyLimitUpdate(limit=ep.max_concurrency, active=True))
