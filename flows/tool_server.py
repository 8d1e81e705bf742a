"""The KG tools over HTTP (FastAPI), for RL rollouts and for any client that cannot import hopforge.

Endpoints (``create_app``):

- ``POST /{graph_type}/get_precise_entity_names`` and ``POST /{graph_type}/get_node``: the two endpoints the
  Omne-R1 RL code calls (entity_matcher and node_info), body ``{"node_name": ...}``, reply
  ``{"rendered_content": ...}``.
- ``POST /tools/{tool_name}``: any offered tool, the body is its JSON arguments; reply
  ``{"rendered_content", "ok", "error_kind"}``.
- ``POST /batch``: ``{"calls": [{"name": ..., "arguments": {...}}, ...]}``; reply ``{"results": [...]}`` in
  order, one reply object per call (a failed call is a result with ``ok: false``, not a failed batch).
- ``GET /health``, ``GET /tools`` (the OpenAI tool schemas), ``GET /stats`` (calls, errors and latency per tool).

Status codes: a request the server cannot take is refused with a clear ``detail``: an unknown graph type or
tool is 404, a malformed body, an over-long string or an oversized batch is 422, and generic-tool arguments
the tool rejects are 422 too. A well-formed call about something the graph lacks (unknown entity, no
matching relation) is 200 with ``ok: false``: that observation is meant for the model.

The rendered text is ``ToolEnvironment.call``'s, so a rollout sees exactly what the SFT data shows.

Concurrency: tool calls run in the worker thread pool, so the event loop keeps accepting requests. Concurrent
entity_matcher requests are coalesced: while one batch is being searched, new ones queue, and the next batch
takes all of them (up to ``max_batch``) in one embedding call and one matrix product. On a 50k-entity graph
one search streams the whole 77 MB matrix from memory, so a batch of 32 costs about as much as five single
searches (``match_many`` vs ``match`` in ``bench/bench_tools.py``). It costs nothing when idle: a lone
request starts a batch of one at once. ``GET /stats`` reports the batch sizes reached.
The batcher lives in the app's lifespan; without it (an ASGI client that skips lifespan) calls run one by one.

This module avoids ``from __future__ import annotations`` on purpose: FastAPI reads the request models
defined inside ``create_app`` from the endpoint annotations at runtime.
"""

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import Annotated, Any

from fastapi import Body, FastAPI, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from schemas.tools import Observation
from tasks.env.tools import ToolEnvironment

log = logging.getLogger(__name__)

#: error_kind -> HTTP status on the generic endpoint (everything else is 200 with ok=false).
_STATUS_FOR = {"unknown_tool": 404, "unknown_graph": 404, "bad_arguments": 422}


class ToolReply(BaseModel):
    rendered_content: str
    ok: bool = True
    error_kind: str | None = None

    @classmethod
    def of(cls, obs: Observation) -> "ToolReply":
        return cls(rendered_content=obs.text, ok=obs.ok, error_kind=obs.error_kind)


class ToolStats:
    """Per-tool call counts, error counts by kind, and latency over the most recent ``window`` calls.
    Thread-safe (calls finish on worker threads and on the event loop)."""

    def __init__(self, window: int = 10_000) -> None:
        self.window = window
        self.started = time.time()
        self._lock = threading.Lock()
        self._calls: dict[str, int] = {}
        self._errors: dict[str, dict[str, int]] = {}
        self._lat: dict[str, deque[float]] = {}
        self._batches = 0
        self._batched_calls = 0
        self._largest_batch = 0

    def record(self, tool: str, seconds: float, obs: Observation) -> None:
        with self._lock:
            self._calls[tool] = self._calls.get(tool, 0) + 1
            if not obs.ok:
                kinds = self._errors.setdefault(tool, {})
                kind = obs.error_kind or "unknown"
                kinds[kind] = kinds.get(kind, 0) + 1
            self._lat.setdefault(tool, deque(maxlen=self.window)).append(seconds)

    def record_batch(self, size: int) -> None:
        """One coalesced entity_matcher batch of ``size`` calls (how well coalescing works under load)."""
        with self._lock:
            self._batches += 1
            self._batched_calls += size
            self._largest_batch = max(self._largest_batch, size)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            coalesced = {
                "batches": self._batches,
                "mean_size": round(self._batched_calls / self._batches, 2) if self._batches else 0.0,
                "max_size": self._largest_batch,
            }
            tools = {}
            for tool, n in sorted(self._calls.items()):
                lat = sorted(self._lat.get(tool, ()))
                tools[tool] = {
                    "calls": n,
                    "errors": dict(sorted(self._errors.get(tool, {}).items())),
                    "latency_ms": _latency_summary(lat),
                }
        return {
            "uptime_s": round(time.time() - self.started, 3),
            "latency_window": self.window,
            "tools": tools,
            "entity_matcher_batches": coalesced,
        }


def _latency_summary(sorted_s: list[float]) -> dict[str, float]:
    if not sorted_s:
        return {}

    def pct(p: float) -> float:
        return round(sorted_s[min(len(sorted_s) - 1, int(p * len(sorted_s)))] * 1000, 3)

    return {
        "mean": round(sum(sorted_s) / len(sorted_s) * 1000, 3),
        "p50": pct(0.50),
        "p99": pct(0.99),
        "max": round(sorted_s[-1] * 1000, 3),
    }


class _MatcherBatcher:
    """Coalesces concurrent entity_matcher calls into ``ToolEnvironment.call_many`` batches (see module doc)."""

    def __init__(self, env: ToolEnvironment, max_batch: int, stats: ToolStats) -> None:
        self.env = env
        self.max_batch = max_batch
        self.stats = stats
        self._queue: asyncio.Queue[tuple[dict[str, Any], asyncio.Future[Observation]]] | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def running(self) -> bool:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        return self._task is not None and not self._task.done() and self._loop is loop

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        self._task = self._loop.create_task(self._work(), name="entity-matcher-batcher")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._task = None

    async def submit(self, arguments: dict[str, Any]) -> Observation:
        if self._queue is None or self._loop is None:
            raise RuntimeError("the entity_matcher batcher is not running; check ``running`` first")
        fut: asyncio.Future[Observation] = self._loop.create_future()
        self._queue.put_nowait((arguments, fut))
        return await fut

    async def _work(self) -> None:
        queue = self._queue
        if queue is None:
            raise RuntimeError("start() sets up the queue before the worker runs")
        while True:
            batch = [await queue.get()]
            while len(batch) < self.max_batch and not queue.empty():
                batch.append(queue.get_nowait())
            calls = [("entity_matcher", args) for args, _ in batch]
            self.stats.record_batch(len(batch))
            try:
                results = await run_in_threadpool(self.env.call_many, calls)
            except Exception as exc:  # call_many does not raise for bad input; this is a bug, keep serving
                log.exception("entity_matcher batch failed")
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(exc)
                continue
            for (_, fut), obs in zip(batch, results):
                if not fut.done():  # the client may have gone away
                    fut.set_result(obs)


def create_app(
    env: ToolEnvironment,
    *,
    max_name_len: int = 200,
    max_batch: int = 64,
    max_args: int = 8,
    stats_window: int = 10_000,
    batch_entity_matcher: bool = True,
) -> FastAPI:
    """The tool server app over ``env`` (see the module docstring).

    ``max_name_len`` bounds every string argument (node names, relations, queries); ``max_batch`` bounds the
    calls of one ``/batch`` request and the size of a coalesced entity_matcher batch; ``max_args`` bounds the
    number of arguments of a generic call. ``batch_entity_matcher=False`` runs entity_matcher calls one by one.
    """
    if max_name_len < 1 or max_batch < 1 or max_args < 1:
        raise ValueError("max_name_len, max_batch and max_args must be >= 1")
    stats = ToolStats(stats_window)
    batcher = _MatcherBatcher(env, max_batch, stats)
    domains = set(env.domains)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if batch_entity_matcher:
            batcher.start()
        try:
            yield
        finally:
            await batcher.stop()

    app = FastAPI(title="hopforge KG tool server", lifespan=lifespan)
    app.state.env = env
    app.state.stats = stats

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's default echoes each rejected input back; an over-long name would be sent back whole.
        problems = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")} for e in exc.errors()
        ]
        return JSONResponse({"detail": problems}, status_code=422)

    Name = Annotated[str, StringConstraints(min_length=1, max_length=max_name_len)]

    class NodeRequest(BaseModel):
        model_config = ConfigDict(extra="ignore")
        node_name: Name

    class Call(BaseModel):
        model_config = ConfigDict(extra="forbid")
        name: Annotated[str, StringConstraints(min_length=1, max_length=64)]
        arguments: dict[str, Any] = Field(default_factory=dict)

    class BatchRequest(BaseModel):
        model_config = ConfigDict(extra="forbid")
        calls: list[Call] = Field(min_length=1, max_length=max_batch)

    def check_arguments(arguments: Mapping[str, Any], where: str) -> None:
        if len(arguments) > max_args:
            raise HTTPException(422, f"{where}: at most {max_args} arguments, got {len(arguments)}")
        for key, value in arguments.items():
            if isinstance(value, str) and len(value) > max_name_len:
                raise HTTPException(
                    422, f"{where}: argument {key!r} is {len(value)} characters long; the limit is {max_name_len}"
                )

    def check_graph(graph_type: str) -> None:
        if graph_type not in domains:
            raise HTTPException(
                404, f"Unknown graph_type {graph_type!r}. Loaded graph types: {', '.join(sorted(domains)) or 'none'}."
            )

    async def run_call(name: str, arguments: dict[str, Any]) -> Observation:
        started = time.perf_counter()
        if name == "entity_matcher" and batcher.running:
            obs = await batcher.submit(arguments)
        else:
            obs = await run_in_threadpool(env.call, name, arguments)
        stats.record(name, time.perf_counter() - started, obs)
        return obs

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "graph_types": sorted(domains), "tools": list(env.tool_names)}

    @app.get("/tools")
    async def tools(graph_type: str | None = None) -> dict[str, Any]:
        if graph_type is not None:
            check_graph(graph_type)
        return {"tools": env.schemas(graph_type)}

    @app.get("/stats")
    async def get_stats() -> dict[str, Any]:
        return stats.snapshot()

    def omne_tool_offered(tool: str) -> None:
        if tool not in env.tool_names:
            raise HTTPException(404, f"The tool {tool} is not offered by this server.")

    @app.post("/{graph_type}/get_precise_entity_names")
    async def get_precise_entity_names(graph_type: str, body: NodeRequest) -> dict[str, str]:
        check_graph(graph_type)
        omne_tool_offered("entity_matcher")
        obs = await run_call("entity_matcher", {"node_name": body.node_name, "graph_type": graph_type})
        return {"rendered_content": obs.text}

    @app.post("/{graph_type}/get_node")
    async def get_node(graph_type: str, body: NodeRequest) -> dict[str, str]:
        check_graph(graph_type)
        omne_tool_offered("node_info")
        obs = await run_call("node_info", {"node_name": body.node_name, "graph_type": graph_type})
        return {"rendered_content": obs.text}

    @app.post("/tools/{tool_name}", response_model=ToolReply)
    async def call_tool(tool_name: str, arguments: Annotated[dict[str, Any], Body()]) -> Any:
        if tool_name not in env.tool_names:
            raise HTTPException(404, f"Unknown tool {tool_name!r}. Tools: {', '.join(env.tool_names)}.")
        check_arguments(arguments, tool_name)
        obs = await run_call(tool_name, arguments)
        status = _STATUS_FOR.get(obs.error_kind or "", 200)
        if status != 200:
            return JSONResponse({"detail": obs.text, **ToolReply.of(obs).model_dump()}, status_code=status)
        return ToolReply.of(obs)

    @app.post("/batch")
    async def batch(body: BatchRequest) -> dict[str, list[ToolReply]]:
        for i, call in enumerate(body.calls):
            check_arguments(call.arguments, f"calls[{i}] ({call.name})")
        # Matcher calls of one batch share an embedding call and a matrix product (call_many); the rest
        # run in the same worker thread.
        started = time.perf_counter()
        results = await run_in_threadpool(env.call_many, [(c.name, c.arguments) for c in body.calls])
        per_call = (time.perf_counter() - started) / len(body.calls)
        for call, obs in zip(body.calls, results):
            stats.record(call.name, per_call, obs)
        return {"results": [ToolReply.of(o) for o in results]}

    return app


def serve(
    env: ToolEnvironment,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    log_level: str = "info",
    access_log: bool = False,
    blas_threads: int | None = None,
    **app_options: Any,
) -> None:
    """Serve ``env`` with uvicorn until interrupted. Loopback by default: the server has no authentication,
    so bind another interface only on a trusted network. Entity embeddings are loaded (or built and cached)
    before the port opens, so the first request does not pay for them. The per-request access log is off by
    default: RL rollouts send thousands of requests a second, and ``GET /stats`` summarises them instead.
    ``app_options`` go to ``create_app``.

    ``blas_threads`` caps the BLAS thread pool of this process (needs ``threadpoolctl``; ignored with a warning
    without it). On a small machine where the HTTP stack and the load share the cores, one BLAS thread leaves
    a core to the event loop: on 2 busy cores it raised entity_matcher requests/s 1.3-2.3x in
    ``bench/bench_tools.py``. On a many-core rollout node leave it unset.
    """
    import uvicorn

    if blas_threads is not None:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            log.warning("blas_threads=%d ignored: threadpoolctl is not installed", blas_threads)
        else:
            threadpool_limits(limits=blas_threads, user_api="blas")
    env.warm()
    app = create_app(env, **app_options)
    log.info("serving %s on http://%s:%d", ", ".join(env.domains), host, port)
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=access_log)


__all__ = ["ToolReply", "ToolStats", "create_app", "serve"]
