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

A flow whose batches wait on work that can only be planned once an earlier batch has landed (generate-qa's refill of
a domain reads what its first jobs wrote) yields ``LATER`` from its batches while that work is not ready: nothing is
submitted until the next batch lands, then the batches are asked again. ``Ahead`` runs a flow's pure Python work on
the items of a batch (generate-qa's job preparation) in forked processes, ahead of the batch that needs it.
"""

from __future__ import annotations

import concurrent.futures
import gc
import os
import pickle
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence, Sized
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, NoReturn, TypeVar

from gateway.endpoints import limit_name
from gateway.spec import GatewaySpec, spec_for
from gateway.usage import RoleUsage
from schemas.config import RunnerConfig
from tasks.graph.kg import KnowledgeGraph, cached_graph, share_graphs

B = TypeVar("B")
R = TypeVar("R")
T = TypeVar("T")


class _Later:
    def __repr__(self) -> str:
        return "LATER"


#: What a flow's batches yield when their next batch can only be planned after another one has landed: the batch loop
#: submits nothing more until the next batch lands, then asks again (see the module docstring).
LATER: Any = _Later()


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

    # Room for the small batches the window lets run beside the full ones (``_Runner.run``).
    return ThreadPoolTaskRunner(max_workers=SMALL_BATCH_THREADS * cfg.max_workers)


#: On the thread pool, a batch takes the share of a window place that its items are of the largest batch's so far
#: (a domain's refill of 6 jobs beside batches of 60: a tenth), up to this many times ``max_workers`` batches at once.
#: A window of whole places let a few small batches hold every place while the endpoint idled (the last domains of
#: generate-qa, whose refills ran 6 to 12 jobs a batch, with the next domains' 60 waiting for a place).
SMALL_BATCH_THREADS = 2


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
            in_flight: int | None = None, ahead: Callable[[], bool] | None = None) -> Iterator[tuple[B, Any]]:
        """Run ``task(**parameters(batch))`` for every batch; yield ``(batch, result)`` in batch order. A
        ``BatchResult``'s usage is added to the flow's ledger before it is yielded. With ``errors="return"`` a
        batch whose task failed yields its exception instead (for flows that record a failed domain and go on).
        ``one_per_process``: the task keeps process-wide state that two concurrent runs would share (LightRAG's
        storage locks belong to one event loop), so the thread pool runs one batch at a time; Ray still runs one per
        worker process at once. ``in_flight``: batches submitted ahead (default ``runner.window``; see
        ``in_flight``). ``ahead``: the flow's work ahead of its next batches (planning them), called whenever the loop
        would wait for a batch to finish: one piece per call, ``True`` while it did any (the loop then looks at its
        batches again before the next piece), ``False`` when nothing is left to do ahead."""
        window = 1 if one_per_process and self.cfg.kind == "threads" else (in_flight or self.cfg.window)
        pending: deque[tuple[B, Any, int]] = deque()
        todo = iter(batches)
        # On the thread pool (not one batch a process) a small batch takes its share of a place (``_places``).
        largest = [1] if self.cfg.kind == "threads" and not one_per_process else None

        def running() -> list[concurrent.futures.Future]:
            return [w for _, f, _ in pending if (w := _wrapped(f)) is None or not w.done()]

        def fill() -> None:
            # ``window`` batches run at once. A finished batch waits (at most ``window`` of them) behind an older
            # one still running, since results go out in batch order, but it no longer holds a place: one batch's
            # slow last job (a question on its third attempt) does not keep the next batches from starting.
            while len(pending) < 2 * window and _places(pending, largest, self.cfg.max_workers) < window:
                batch = next(todo, _END)
                if batch is _END or batch is LATER:  # LATER: nothing to submit until the next batch lands
                    waiting[0] = batch is LATER
                    return
                waiting[0] = False
                pending.append((batch, self.submit(task, parameters(batch)), 0))

        waiting = [False]
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
                    if ahead is None or not ahead():  # the flow's work ahead comes before the wait
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
                    fill()  # the batch is settled now: what waited for it (LATER) may be planned
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
            fill()  # the batch has landed now: what waited for it (LATER) may be planned
            down.check(task.name, final=not pending)
        if waiting[0]:
            raise RuntimeError(f"{task.name}: the batches wait for one to land, and none is in flight")
        if elsewhere:
            on = f" on {len(nodes)} Ray node(s)" if nodes else ""
            print(f"{task.name}: {n} batch(es) ran in {len(elsewhere)} worker process(es){on} besides the flow's")


_END = object()


def _places(pending: deque[tuple[Any, Any, int]], largest: list[int] | None, max_workers: int) -> float:
    """The window places the running batches among ``pending`` take: one each; with ``largest`` (the thread pool:
    the most items a batch has held so far, updated here) each batch its items' share of it (a ``Unit``'s items; a
    batch that says nothing of its items takes a whole place), until ``SMALL_BATCH_THREADS`` x ``max_workers``
    batches run, which fill the window whatever their size."""
    live = [b for b, f, _ in pending if (w := _wrapped(f)) is None or not w.done()]
    if largest is None or len(live) >= SMALL_BATCH_THREADS * max_workers:
        return len(live)
    sizes = [len(items) if isinstance(items := getattr(b, "items", None), Sized) else None for b in live]
    largest[0] = max([largest[0], *(n for n in sizes if n is not None)])
    return sum(1.0 if n is None else n / largest[0] for n in sizes)


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


class Ahead:
    """Pure Python work on a batch's items, run ahead of the batch in forked child processes: ``submit(fn, items)``
    forks a child that computes ``fn(item)`` for each item in order and sends each result back as soon as it stands,
    and returns one future an item, set when its result arrives. The batch that needs the results is submitted at
    once and awaits each item's future, so the flow's process spends no GIL time on the work while the batches in
    flight wait for their answers. At most ``workers`` children run at once, at a lower priority than the parent
    (whose answers in flight come first); the others wait their turn, in order.

    A fork shares the parent's memory as it is (the graph, its indexes, the configuration), so nothing is pickled on
    the way in; ``fn`` must be pure (what it computes depends on its arguments, not on state it changes). A child that
    dies before it sent every result sets the futures it left to ``None`` (the batch then does that work itself, and
    ``lost`` counts the child), and so does one that sent nothing for ``stall_s`` seconds (it is ended: a lock another
    thread of the parent held when it forked would keep it waiting forever). Only where ``os.fork`` exists
    (``available``)."""

    def __init__(self, workers: int, stall_s: float = 120.0) -> None:
        self.workers = max(1, workers)
        self.stall_s = stall_s
        self.lost = 0
        self._queue: deque[tuple[Callable[[Any], Any], list[Any], list[concurrent.futures.Future]]] = deque()
        self._children: dict[int, threading.Thread] = {}
        self._closed = False
        self._lock = threading.Lock()

    @staticmethod
    def available() -> bool:
        return hasattr(os, "fork")

    def submit(self, fn: Callable[[T], R], items: Sequence[T]) -> list[concurrent.futures.Future]:
        futures: list[concurrent.futures.Future] = [concurrent.futures.Future() for _ in items]
        if items:
            with self._lock:
                self._queue.append((fn, list(items), futures))
            self._start()
        return futures

    def _start(self) -> None:
        """Fork the next child in line if a place is free."""
        with self._lock:
            if self._closed or len(self._children) >= self.workers or not self._queue:
                return
            fn, items, futures = self._queue.popleft()
            read_fd, write_fd = _wide_pipe()
            pid = os.fork()
            if pid == 0:
                _ahead_child(fn, items, read_fd, write_fd)
            os.close(write_fd)
            reader = threading.Thread(target=self._read, args=(pid, read_fd, futures), name="ahead-reader",
                                      daemon=True)
            self._children[pid] = reader
        reader.start()

    def _read(self, pid: int, read_fd: int, futures: list[concurrent.futures.Future]) -> None:
        """Set each future as its result arrives; ``None`` for those a lost child left; then the next child."""
        got = 0
        progress = threading.Event()  # set at every result: the watchdog ends a child that stalls
        done = threading.Event()
        threading.Thread(target=self._watch, args=(pid, progress, done), name="ahead-watchdog", daemon=True).start()
        with os.fdopen(read_fd, "rb", buffering=PIPE_BYTES) as pipe:  # what the child sent, in few reads
            for future in futures:
                try:
                    value = pickle.load(pipe)
                except (EOFError, pickle.UnpicklingError):
                    break
                future.set_result(value)
                progress.set()
                got += 1
        done.set()
        progress.set()
        for future in futures[got:]:
            future.set_result(None)
        _, status = os.waitpid(pid, 0)
        with self._lock:
            del self._children[pid]
            if got < len(futures) and not self._closed:
                self.lost += 1
                print(f"preparing ahead: a child process was lost ({_exit_reason(status)}) after {got} of "
                      f"{len(futures)} results; the batch prepares the rest itself")
        self._start()

    def _watch(self, pid: int, progress: threading.Event, done: threading.Event) -> None:
        """End the child ``pid`` if no result came for ``stall_s`` seconds (until ``done``)."""
        while not done.is_set():
            if not progress.wait(self.stall_s) and not done.is_set():
                try:
                    os.kill(pid, signal.SIGKILL)  # not reaped: its reader reaps it only after ``done``
                except ProcessLookupError:
                    pass
                return
            progress.clear()

    def close(self) -> None:
        """Stop: the children still running are ended (the run is over: nothing waits for them), the queue dropped
        (its futures set to ``None``)."""
        with self._lock:
            self._closed = True
            queued, self._queue = list(self._queue), deque()
            children = dict(self._children)
        for _, _, futures in queued:
            for future in futures:
                future.set_result(None)
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # ended between the look and the kill: its reader reaps it
        for reader in children.values():
            reader.join()


#: The pipe from a child, as wide as Linux allows by default (``/proc/sys/fs/pipe-max-size``): a child does not wait
#: for the parent's reader, which takes the GIL in turns with the calls in flight, before it goes on to its next item.
PIPE_BYTES = 1 << 20


def _wide_pipe() -> tuple[int, int]:
    import fcntl  # where os.fork is, fcntl is

    read_fd, write_fd = os.pipe()
    try:
        fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (AttributeError, OSError):
        pass  # another system, or a lower limit: the default pipe, the child waits on it now and then
    return read_fd, write_fd


def _ahead_child(fn: Callable[[Any], Any], items: list[Any], read_fd: int, write_fd: int) -> NoReturn:
    """In the forked child: ``fn`` on each item, each result pickled down the pipe as soon as it stands; then exit
    without running the parent's exit handlers (``os._exit``), whatever happened."""
    code = 1
    try:
        os.close(read_fd)
        os.nice(5)  # the parent's calls in flight come first
        gc.disable()  # a short life: no collection walks (and copies) the parent's pages
        with os.fdopen(write_fd, "wb") as pipe:
            for item in items:
                pickle.dump(fn(item), pipe, protocol=pickle.HIGHEST_PROTOCOL)
                pipe.flush()
        code = 0
    finally:
        os._exit(code)


def _exit_reason(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit code {os.WEXITSTATUS(status)}" if os.WIFEXITED(status) else f"status {status}"


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
                in_flight: int | None = None, ahead: Callable[[], bool] | None = None) -> Iterator[tuple[B, Any]]:
    """``runner.run`` as a function: the one batch loop of every flow."""
    return runner.run(task, batches, parameters, errors, one_per_process, in_flight, ahead)


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
