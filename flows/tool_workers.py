"""The tool server's processes: ``serve`` starts the app (``flows.tool_server.create_app``) with uvicorn, in this
process or in ``serve_workers``' forked workers on one listening socket, after the graphs, indexes and node_info
replies are loaded (so the workers share their pages); stops on SIGINT/SIGTERM. The app and its endpoints live in
``flows.tool_server``; this module owns only starting, forking and stopping."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any, Callable

from flows.tool_server import ASGIApp, NodeInfoReplies, create_app
from gateway.children import die_with_parent
from schemas.errors import InputError
from tasks.env.index import GraphIndex
from tasks.env.served import ServedGraph
from tasks.env.tools import ToolEnvironment
from training.tool_auth import TOKEN_ENV, is_loopback_host

log = logging.getLogger(__name__)


def limit_blas(blas_threads: int | None) -> None:
    """Cap this process's BLAS thread pool at ``blas_threads`` (None: leave it), through ``threadpoolctl``; without
    it, one warning and no cap."""
    if blas_threads is None:
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        log.warning("blas_threads=%d ignored: threadpoolctl is not installed", blas_threads)
    else:
        threadpool_limits(limits=blas_threads, user_api="blas")


def serve(
    env: ToolEnvironment,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    workers: int = 1,
    log_level: str = "info",
    access_log: bool = False,
    blas_threads: int | None = None,
    prerender_entities: int = 250_000,
    token: str | None = None,
    **app_options: Any,
) -> None:
    """Serve ``env`` with uvicorn until interrupted. Loopback by default. ``token`` (``hopforge serve-tools``
    passes ``$HOPFORGE_TOOL_TOKEN``): every request must carry it; listening beyond loopback without one is refused
    (``InputError``), since rollout workers of other nodes then reach the server over the network. Entity
    embeddings are loaded (or built and cached)
    before the port opens, so the first request does not pay for them. A missing HNSW graph of an index set to
    build it in the background (``GraphIndex.ann_background``, what ``hopforge serve-tools`` uses) is not waited
    for: the workers answer by the exact scan and switch to the graph when its file is written (``GET /health``
    says which search serves, per worker). The per-request access log is off by
    default: RL rollouts send thousands of requests a second, and ``GET /stats`` summarises them instead.
    ``app_options`` go to ``create_app``.

    node_info replies of ``ServedGraph`` graphs (``served_graphs``, what ``hopforge serve-tools`` loads) are the
    ones rendered into their cache, memory-mapped. For other graphs they are rendered before the port opens
    (``NodeInfoReplies``: ~75 us per entity, about 4 s for 50k entities) when the graphs hold at most
    ``prerender_entities`` entities in all; above that, node_info renders on demand into each worker's result
    cache. 0 turns pre-rendering off.

    ``workers > 1`` forks that many server processes after the index is loaded, all accepting on one socket
    (``serve_workers``); one per core is the usual choice on a rollout node. ``GET /stats`` then describes the
    worker that answers it.

    ``blas_threads`` caps the BLAS thread pool of this process (needs ``threadpoolctl``; ignored with a warning
    without it). On a small machine where the HTTP stack and the load share the cores, one BLAS thread leaves
    a core to the event loop: on 2 busy cores it raised entity_matcher requests/s 1.3-2.3x in
    ``bench/bench_tools.py``. With several workers it defaults to 1: each worker's matrix products would
    otherwise start a thread per core, and N workers would run N times as many threads as there are cores.
    """
    import uvicorn

    if workers < 1:
        raise InputError(f"workers must be >= 1, got {workers}")
    if not token and not is_loopback_host(host):
        raise InputError(f"serving the tools on {host} (beyond loopback) needs a shared token: set {TOKEN_ENV} in "
                         "the server's environment and the same value where the clients run")  # fmt: skip
    if token:
        app_options = {**app_options, "token": token}
    if blas_threads is None and workers > 1:
        blas_threads = 1
    limit_blas(blas_threads)
    env.warm()
    _share_search(env)
    app_options = _with_node_info_replies(env, app_options, prerender_entities)
    log.info("serving %s on http://%s:%d", ", ".join(env.domains), host, port)

    def worker_app() -> ASGIApp:
        # In the serving process itself (after the fork with several workers): each worker sets up its own
        # search (PyTorch's threads, the bfloat16 copy of the matrix) before it takes requests.
        precisions = env.prepare_search(threads=blas_threads)
        log.info("entity search: %s", ", ".join(f"{d} {p}" for d, p in precisions.items()) or "no graphs")
        return create_app(env, **app_options)

    if workers == 1:
        uvicorn.run(worker_app(), host=host, port=port, log_level=log_level, access_log=access_log, **_fast_stack())
        return
    serve_workers(worker_app, host, port, workers, log_level=log_level, access_log=access_log)


def _share_search(env: ToolEnvironment) -> None:
    """Before the fork: the workers share the bfloat16 copy of each matrix, and PyTorch's modules (imported, no
    operation run: no thread pool crosses the fork), instead of each worker importing its own copy."""
    if any([index.share_search(_bits_file(index)) for index in env.indexes.values()]):
        with contextlib.suppress(ImportError):
            import torch  # noqa: F401


def _with_node_info_replies(env: ToolEnvironment, app_options: dict[str, Any],
                            prerender_entities: int) -> dict[str, Any]:
    """``app_options`` with the node_info replies the app answers from, unless they name some already: those of a
    served graph's cache (memory-mapped), else rendered now when the graphs hold at most ``prerender_entities``
    entities in all (see ``serve``); otherwise ``app_options`` as they are."""
    entities = sum(len(index) for index in env.indexes.values())
    if "node_info_replies" in app_options:
        return app_options
    served = NodeInfoReplies.from_served(env)
    if served is not None:  # memory-mapped from the snapshot's served cache: nothing to render
        return {**app_options, "node_info_replies": served}
    if "node_info" in env.tool_names and 0 < entities <= prerender_entities:
        started = time.perf_counter()
        replies = NodeInfoReplies.render(env)
        log.info("rendered node_info for %d entities (%.1f MB) in %.1f s", len(replies), replies.nbytes / 1e6,
                 time.perf_counter() - started)  # fmt: skip
        return {**app_options, "node_info_replies": replies}
    return app_options


def _bits_file(index: GraphIndex) -> Path | None:
    """Where the bfloat16 copy of a served graph's matrix is cached: in the graph's served cache directory, named
    after the matrix's own cache file (so a rebuilt matrix gets a new copy); ``None`` outside a served cache."""
    graph = index.graph
    folder = getattr(graph, "path", None) if isinstance(graph, ServedGraph) else None
    # The file the loaded matrix is mapped from (its memory map's own record): asking ``cache_path`` would
    # re-make every entity text to hash them.
    matrix = getattr(index.embeddings.base, "filename", None) if folder is not None else None
    return folder / f"bf16-{Path(matrix).stem}.npy" if folder is not None and matrix else None


def _fast_stack() -> dict[str, str]:
    """uvicorn's event loop and HTTP parser: uvloop and httptools (C) when installed, which took a bare
    endpoint from 0.39 to 0.08 ms of CPU per request here; otherwise uvicorn's pure-Python defaults."""
    out: dict[str, str] = {}
    try:
        import uvloop  # noqa: F401

        out["loop"] = "uvloop"
    except ImportError:
        log.warning("uvloop is not installed: serving on the slower asyncio loop")
    try:
        import httptools  # noqa: F401

        out["http"] = "httptools"
    except ImportError:
        log.warning("httptools is not installed: parsing HTTP in pure Python")
    return out


def serve_workers(
    make_app: Callable[[], ASGIApp],
    host: str,
    port: int,
    workers: int,
    *,
    log_level: str = "info",
    access_log: bool = False,
    backlog: int = 2048,
) -> None:
    """Serve the app built by ``make_app`` from ``workers`` forked processes listening on one port,
    until SIGINT or SIGTERM; a worker that dies is replaced, unless it died within a second of its start
    (a broken app would only crash again), which stops the server with ``RuntimeError``.

    Everything loaded before the call (the graphs, the memory-mapped entity matrix) is shared with the workers
    instead of copied: ``gc.freeze`` keeps the collector from writing into those objects' headers, which would
    copy their pages into each worker one by one. POSIX only (``os.fork``).
    """
    import uvicorn

    if workers < 1:
        raise InputError(f"workers must be >= 1, got {workers}")
    listener = _Listener(host, port, backlog)
    gc.collect()
    gc.freeze()

    def serve_one() -> None:
        own = listener.own()
        config = uvicorn.Config(make_app(), log_level=log_level, access_log=access_log, **_fast_stack())
        uvicorn.Server(config).run(sockets=[own])

    pool = _WorkerPool(serve_one)
    previous = {sig: signal.signal(sig, pool.stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for _ in range(workers):
            pool.start()
        log.info("%d workers: %s", workers, ", ".join(map(str, pool.children)))
        failure = pool.supervise()
        if failure is not None:
            raise RuntimeError(failure)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        listener.sock.close()
        gc.unfreeze()


class _Listener:
    """The port ``serve_workers``' workers accept on; ``InputError`` when it cannot be had.

    With SO_REUSEPORT (Linux) every worker listens on a socket of its own and the kernel spreads new connections
    evenly over them; on one shared socket whichever worker wakes first accepts, and at 256 connections one busy
    worker held most of them while the other idled. The supervisor's socket is bound, never listening: it holds
    the port and reports a taken port at once, but is never handed connections."""

    def __init__(self, host: str, port: int, backlog: int) -> None:
        self.host, self.port, self.backlog = host, port, backlog
        self.family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.reuse_port = hasattr(socket, "SO_REUSEPORT")
        try:
            # A plain bind first: a port other sockets listen on with SO_REUSEPORT (another server's workers) would
            # otherwise be shared with them silently.
            with socket.socket(self.family, socket.SOCK_STREAM) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind((host, port))
            self.sock = self._bound()
        except OSError as exc:
            raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        if not self.reuse_port:
            self.sock.listen(backlog)
            self.sock.set_inheritable(True)

    def _bound(self) -> socket.socket:
        s = socket.socket(self.family, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if self.reuse_port:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        s.bind((self.host, self.port))
        return s

    def own(self) -> socket.socket:
        """In a forked worker: the socket it accepts on, a listening one of its own with SO_REUSEPORT (the
        supervisor's copy closed), else the shared one."""
        if not self.reuse_port:
            return self.sock
        self.sock.close()
        own = self._bound()
        own.listen(self.backlog)
        return own


class _WorkerPool:
    """The forked workers of ``serve_workers``: each runs ``serve_one``; one that dies is replaced, and a signal
    (``stop``) sends every worker SIGTERM."""

    def __init__(self, serve_one: Callable[[], None]) -> None:
        self.serve_one = serve_one
        self.children: dict[int, float] = {}  # pid -> when it started (monotonic)
        self.stopping = False
        self.supervisor = os.getpid()

    def start(self) -> None:
        """Fork one worker; the child serves, then exits (never returning into the parent's code)."""
        pid = os.fork()
        if pid:
            self.children[pid] = time.monotonic()
            return
        code = 1
        try:
            die_with_parent(signal.SIGKILL, self.supervisor)  # a supervisor killed with SIGKILL leaves no worker behind
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            self.serve_one()
            code = 0
        except BaseException:
            log.exception("tool server worker %d failed", os.getpid())
            raise
        finally:
            os._exit(code)  # never return into the parent's code (its loop, its exit handlers)

    def stop(self, signum: int, _frame: Any) -> None:
        self.stopping = True
        for pid in list(self.children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def supervise(self) -> str | None:
        """Reap the workers until none is left, starting another for one that dies (after a stop, only reaping
        them as they finish); the failure, when a worker died right after starting (the rest are then stopped)."""
        failure: str | None = None
        while self.children:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            started = self.children.pop(pid, None)
            if started is None or self.stopping:
                continue
            code = os.waitstatus_to_exitcode(status)
            if time.monotonic() - started < 1.0:
                failure = f"tool server worker {pid} exited with status {code} right after starting"
                self.stop(signal.SIGTERM, None)
                continue
            log.warning("tool server worker %d exited with status %d; starting another", pid, code)
            self.start()
        return failure


__all__ = ["serve", "serve_workers"]
