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
  ``/health`` also says which search answers each domain's entity matcher in the worker that answered it
  (``"search": {"<domain>": {"serving": "exact" | "hnsw", "hnsw": "off" | "building" | "ready" | "failed"}}``,
  ``"worker": <pid>``): a new snapshot's server answers by the exact scan until its HNSW graph is built.

IKG views (Graph-RFT's incomplete graphs, ``tasks.env.ikg``): ``POST /tools/{tool_name}?view_id=<qa_id>@ikg-40``
answers the call on that question's view of the one loaded graph (the relations it hides are not there, and a
``neighbor_search`` that finds nothing says "No information in the KG ..., use the web_search tool"). Views come
from ``create_app(views=...)``: registered from an export's rows or made on first use from the question id and
level (``flows.tools_env``). An unknown or malformed view id is answered 200 with ``ok: false`` and
``error_kind: "unknown_view"``, its text saying what a view id looks like: the model (or the caller) reads it.
``web_search`` is offered when the environment holds texts (``hopforge serve-tools`` loads each domain's corpus
chunks).

Authentication: with a shared token (``create_app(token=...)``; ``serve`` and ``hopforge serve-tools`` read
``$HOPFORGE_TOOL_TOKEN``) every request, ``/health`` included, must carry ``Authorization: Bearer <token>``, else
it is answered 401 before any routing. ``serve`` refuses to listen beyond loopback without a token: RL rollout
workers on other nodes reach the server over the network (``training.tool_auth``).

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

Hot path (what a profile of one request showed, see ``bench/bench_tools.py``): with the tool itself at ~1.5% of
a request's CPU, the time went to HTTP parsing, FastAPI's routing and validation, and handing the call to a
worker thread. So:

- the two Omne-R1 endpoints and ``/tools/<name>`` (without ``view_id``: the route trainers' tool calls take,
  ``web_search`` included) are answered by ``_OmneFastPath``, a plain ASGI layer in front of FastAPI: it
  parses the body with orjson, checks it exactly as the FastAPI route would, and writes the reply bytes
  itself. Anything it does not recognise as a well-formed call (a bad body, another content type, an unknown
  graph) is replayed to the FastAPI route, so error replies are FastAPI's own; the reply bytes of a good call
  are identical (``tests/test_tool_server.py`` compares them);
- every tool result is cached per server (the environment is one read-only snapshot, and every tool is a
  deterministic function of its arguments), bounded in characters (``cache_chars``), so RL samples asking for
  the same entity cost a dictionary lookup;
- calls that cost microseconds run on the event loop instead of a worker thread: ``node_info`` of an entity
  found by name with at most ``inline_degree`` neighbours, and ``entity_matcher`` when name matches alone fill
  the answer (exact and normalised names are looked up before any embedding work);
- ``serve(workers=N)`` forks N uvicorn workers (uvloop and httptools when installed) on one listening socket
  after the index is loaded: the entity matrix is a read-only memory map of the cached ``.npy`` file and the
  graph is shared copy-on-write, so workers do not each hold a copy.

Memory and start (``hopforge serve-tools``): each graph is served as a ``tasks.env.served.ServedGraph``, flat
arrays memory-mapped from a cache in the data dir's index folder, written once per snapshot, embedder and format
(``served_graphs``): interned strings, relations as columns, each entity's neighbour relations as compressed
sparse rows, and every node_info reply body pre-rendered. A warm start opens those files and the cached matrix
without reading the graph from the warehouse: the snapshot's row in the warehouse's snapshot table names the
cache and is checked against its metadata (a cache of other content is rebuilt), and the hash of the entity texts
recorded there names the matrix's file, so no entity text is made (2.4 s at 1M entities, from 34 s:
``bench/results/tool_memory_1m.json``). The workers share every page of them, and of the bfloat16 copy
of the matrix (``GraphIndex.share_search``, cached beside the served graph). A cold start reads the snapshot's
records as columns (``tasks.env.served.GraphColumns``: DuckDB's Arrow tables, no pydantic record nor
``KnowledgeGraph``), writes the served arrays in a forked process (half the node_info replies in a second one)
while it embeds the matrix, and does not wait for the HNSW graph (``_build_served``): that is built in a
background process while the workers answer by the exact scan, and each worker switches to it once its file is
written (``tasks.env.index.AnnBuild``; ``GET /health`` says which serves). At 1M entities the first answer came at
52.7 s at load 3.1-4.4 (target 60 s; 75 s when records and a ``KnowledgeGraph`` were built first, 184 s when the
server waited for the graph: columns take 4-6 s, the served arrays about 40 s beside the matrix), every worker
read the graph from 241 s, and ``entity_matcher`` p99 at C=32 was 1.1 s while the exact scan served.
Relations and entities become Python objects only for the entities a call touches. ``bench/bench_tool_memory.py``
measures it.

This module avoids ``from __future__ import annotations`` on purpose: FastAPI reads the request models
defined inside ``create_app`` from the endpoint annotations at runtime.
"""

import asyncio
import contextlib
import gc
import hmac
import logging
import os
import threading
import time
from collections import OrderedDict, deque
from pathlib import Path
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Annotated, Any

import numpy as np
import orjson

from fastapi import Body, FastAPI, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from schemas.errors import InputError
from schemas.tools import Observation
from tasks.env.ikg import IKGError, ViewRegistry, viewed_environment
from tasks.env.index import GraphIndex
from tasks.env.served import GraphColumns, ServedGraph, limits_key
from tasks.env.served import cache_dir as served_cache_dir
from tasks.env.tools import RenderLimits, ToolEnvironment
from tasks.graph.kg import KnowledgeGraph
from tasks.graph.store import gc_paused
from training.tool_auth import TOKEN_ENV

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

    def record_ok(self, tool: str, seconds: float) -> None:
        """A successful call answered without an ``Observation`` (a pre-rendered reply)."""
        with self._lock:
            self._calls[tool] = self._calls.get(tool, 0) + 1
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
    """Coalesces concurrent entity_matcher calls into ``ToolEnvironment.call_many`` batches (see module doc).

    Gathering: one search streams the whole matrix, so a batch of one costs nearly what a batch of sixteen does.
    Right after a batch is answered, its callers' next requests are still on their way; a batch started at once
    would hold the first one or two, and the rest would wait for it to finish. So while the server is busy (the
    previous batch ended less than its own duration ago), a new batch waits for as many calls as the previous one
    held, at most ``gather`` times that batch's duration. An idle server starts a lone call's batch at once."""

    def __init__(self, env: ToolEnvironment, max_batch: int, stats: ToolStats, gather: float = 0.25) -> None:
        self.env = env
        self.max_batch = max_batch
        self.stats = stats
        self.gather = gather
        self._queue: asyncio.Queue[tuple[dict[str, Any], asyncio.Future[Observation]]] | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._arrived: asyncio.Event | None = None

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
        self._arrived = asyncio.Event()
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
        if self._arrived is not None:
            self._arrived.set()
        return await fut

    async def _gather(self, want: int, until: float) -> None:
        """Wait until ``want`` calls are queued or the loop's clock passes ``until``."""
        queue, arrived, loop = self._queue, self._arrived, self._loop
        if queue is None or arrived is None or loop is None:
            return
        while queue.qsize() < want:
            left = until - loop.time()
            if left <= 0:
                return
            arrived.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(arrived.wait(), left)

    async def _work(self) -> None:
        queue = self._queue
        if queue is None:
            raise RuntimeError("start() sets up the queue before the worker runs")
        loop = asyncio.get_running_loop()
        last_size, last_end, last_cost = 0, float("-inf"), 0.0
        while True:
            batch = [await queue.get()]
            now = loop.time()
            if last_size > 1 and now - last_end < last_cost:  # busy: the last batch's callers are sending again
                await self._gather(min(last_size, self.max_batch) - 1, now + self.gather * last_cost)
            while len(batch) < self.max_batch and not queue.empty():
                batch.append(queue.get_nowait())
            calls = [("entity_matcher", args) for args, _ in batch]
            self.stats.record_batch(len(batch))
            started = loop.time()
            try:
                results = await run_in_threadpool(self.env.call_many, calls)
            except Exception as exc:  # call_many does not raise for bad input; this is a bug, keep serving
                log.exception("entity_matcher batch failed")
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(exc)
                continue
            finally:
                last_end = loop.time()
                last_size, last_cost = len(batch), last_end - started
            for (_, fut), obs in zip(batch, results):
                if not fut.done():  # the client may have gone away
                    fut.set_result(obs)


class _ResultCache:
    """Rendered tool results by ``(tool, canonical arguments)``, least recently used out first, bounded by the
    total characters of the texts held. Used from the event loop only, so it needs no lock."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self.hits = 0
        self.misses = 0
        self._items: OrderedDict[tuple[str, bytes], Observation] = OrderedDict()

    @staticmethod
    def key(name: str, arguments: Mapping[str, Any]) -> tuple[str, bytes] | None:
        try:
            return name, orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # arguments that are not plain JSON values: not cached
            return None

    def get(self, key: tuple[str, bytes]) -> Observation | None:
        obs = self._items.get(key)
        if obs is None:
            self.misses += 1
            return None
        self.hits += 1
        self._items.move_to_end(key)
        return obs

    def put(self, key: tuple[str, bytes], obs: Observation) -> None:
        # An internal error is a bug of this server, not a property of the input: the next call tries again.
        if self.max_chars <= 0 or obs.error_kind == "internal" or key in self._items:
            return
        size = len(obs.text) + len(key[1])
        if size > self.max_chars:
            return
        self._items[key] = obs
        self.chars += size
        while self.chars > self.max_chars:
            old_key, old = self._items.popitem(last=False)
            self.chars -= len(old.text) + len(old_key[1])

    def snapshot(self) -> dict[str, Any]:
        return {"entries": len(self._items), "chars": self.chars, "hits": self.hits, "misses": self.misses}


class NodeInfoReplies:
    """The node_info reply body (``{"rendered_content": ...}`` as JSON bytes) of every entity, rendered once per
    snapshot before the server forks its workers.

    A miss in the result cache costs ~75 us of rendering (a profile of the 50k-entity benchmark graph: the
    neighbour lists and their descriptions), a hit ~10 us, and each worker's cache warms on its own. Rendered
    ahead, every exact or normalised name is a hit in every worker from the first request. Each domain's replies
    are one ``bytes`` blob and one offsets array, so the forked workers share their pages instead of copying
    them (a blob is one object: reading a reply writes only the blob's header, never its pages). The texts are
    ``ToolEnvironment.call``'s own, rendered through it. For ``ServedGraph`` graphs (``from_served``) they are
    the replies the graph's cache holds, memory-mapped: nothing is rendered or copied at start.
    """

    def __init__(self, replies: dict[str, tuple[dict[str, int], bytes, np.ndarray]],
                 served: Mapping[str, ServedGraph] | None = None) -> None:
        self._replies = replies
        self._served: dict[str, ServedGraph] = dict(served or {})

    @classmethod
    def from_served(cls, env: ToolEnvironment) -> "NodeInfoReplies | None":
        """The replies every domain's ``ServedGraph`` already holds (memory-mapped from its cache, rendered with
        the environment's limits), or ``None`` when some domain is not served that way."""
        served: dict[str, ServedGraph] = {}
        key = limits_key(env.limits)
        for domain, index in env.indexes.items():
            graph = index.graph
            if not isinstance(graph, ServedGraph) or graph.limits_key != key:
                return None
            served[domain] = graph
        return cls({}, served)

    @classmethod
    def render(cls, env: ToolEnvironment) -> "NodeInfoReplies":
        replies: dict[str, tuple[dict[str, int], bytes, np.ndarray]] = {}
        for domain, index in env.indexes.items():
            parts: list[bytes] = []
            offsets = np.zeros(len(index.names) + 1, dtype=np.int64)
            with gc_paused():
                for i, name in enumerate(index.names):
                    obs = env.call("node_info", {"node_name": name, "graph_type": domain})
                    parts.append(orjson.dumps({"rendered_content": obs.text}))
                    offsets[i + 1] = offsets[i] + len(parts[-1])
                rows = {name: i for i, name in enumerate(index.names)}
            replies[domain] = (rows, b"".join(parts), offsets)
        return cls(replies)

    def __len__(self) -> int:
        return sum(len(rows) for rows, _, _ in self._replies.values()) + sum(map(len, self._served.values()))

    @property
    def nbytes(self) -> int:
        return sum(len(blob) + offsets.nbytes for _, blob, offsets in self._replies.values())

    def get(self, index: GraphIndex, node_name: str) -> bytes | None:
        """The reply for ``node_name`` as ``ToolEnvironment.call`` resolves it (arguments are whitespace-stripped,
        then the exact name, else the normalised one), or ``None`` when it names no entity."""
        served = self._served.get(index.domain)
        if served is not None:
            found = index.resolve(node_name.strip())
            return served.node_info_reply(found) if found is not None else None
        entry = self._replies.get(index.domain)
        if entry is None:
            return None
        found = index.resolve(node_name.strip())
        if found is None:
            return None
        rows, blob, offsets = entry
        row = rows.get(found)
        if row is None:
            return None
        return blob[offsets[row] : offsets[row + 1]]


class _CallRunner:
    """Runs one tool call for an endpoint: from the cache, inline on the event loop when it costs microseconds,
    through the entity_matcher batcher, or in the worker thread pool (see the module docstring)."""

    def __init__(
        self, env: ToolEnvironment, batcher: "_MatcherBatcher", stats: ToolStats, cache: _ResultCache, inline_degree: int
    ) -> None:
        self.env = env
        self.batcher = batcher
        self.stats = stats
        self.cache = cache
        self.inline_degree = inline_degree

    def _cheap(self, name: str, arguments: Mapping[str, Any]) -> bool:
        """Whether the call is answered by name lookups and rendering alone (no embedding, no big hub)."""
        if name not in ("node_info", "entity_matcher"):
            return False
        index = self.env.indexes.get(arguments.get("graph_type"))  # type: ignore[arg-type]
        node_name = arguments.get("node_name")
        if index is None or not isinstance(node_name, str) or len(arguments) != 2:
            return False  # an error observation or an unusual call: the thread pool, as before
        if name == "entity_matcher":
            return len(index.name_matches(node_name)) >= self.env.limits.matches
        found = index.resolve(node_name)  # an unknown name is answered with an embedding search: not cheap
        return found is not None and index.graph.degree(found) <= self.inline_degree

    async def run(self, name: str, arguments: dict[str, Any]) -> Observation:
        started = time.perf_counter()
        key = self.cache.key(name, arguments)
        obs = self.cache.get(key) if key is not None else None
        if obs is None:
            if self._cheap(name, arguments):
                obs = self.env.call(name, arguments)
            elif name == "entity_matcher" and self.batcher.running:
                obs = await self.batcher.submit(arguments)
            else:
                obs = await run_in_threadpool(self.env.call, name, arguments)
            if key is not None:
                self.cache.put(key, obs)
        self.stats.record(name, time.perf_counter() - started, obs)
        return obs


#: The reply headers of FastAPI's JSON response (same names, order and content type), for the fast path.
_JSON = b"application/json"

ASGIApp = Callable[[dict[str, Any], Callable[[], Awaitable[dict[str, Any]]], Callable[[dict[str, Any]], Awaitable[None]]], Awaitable[None]]


class _OmneFastPath:
    """Plain ASGI layer answering well-formed calls of the two Omne-R1 endpoints and of ``/tools/<name>`` (the
    generic route every trainer's tool calls take: ``web_search``, ``neighbor_search`` ...) without FastAPI's routing
    and validation (see the module docstring); everything else, a malformed call included, goes to ``app``
    unchanged, with the body replayed, so FastAPI writes the same error replies."""

    def __init__(
        self,
        app: ASGIApp,
        runner: _CallRunner,
        routes: dict[str, tuple[str, str]],
        max_name_len: int,
        node_info_replies: NodeInfoReplies | None,
        tool_routes: dict[str, str] | None = None,
        max_args: int = 0,
    ) -> None:
        self.app = app
        self.runner = runner
        self.replies = node_info_replies
        self.routes = routes  # "/cs/get_node" -> ("node_info", "cs"), offered tools and loaded graphs only
        self.tool_routes = tool_routes or {}  # "/tools/web_search" -> "web_search", offered tools only
        self.max_name_len = max_name_len
        self.max_args = max_args

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        post = scope["type"] == "http" and scope["method"] == "POST"
        route = self.routes.get(scope["path"]) if post else None
        tool = self.tool_routes.get(scope["path"]) if post and route is None and not scope.get("query_string") \
            else None
        if route is None and tool is None:
            return await self.app(scope, receive, send)
        content_type = next((v for k, v in scope["headers"] if k == b"content-type"), None)
        if content_type != _JSON:
            return await self.app(scope, receive, send)
        chunks = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before sending its body
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if tool is not None:
            return await self._tool_call(tool, body, scope, receive, send)
        node_name = None
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            data = None
        if type(data) is dict:
            node_name = data.get("node_name")
        if type(node_name) is not str or not 1 <= len(node_name) <= self.max_name_len:
            return await self.app(scope, _replay(body, receive), send)  # FastAPI writes the error reply
        tool, graph_type = route
        payload = None
        if tool == "node_info" and self.replies is not None:
            started = time.perf_counter()
            payload = self.replies.get(self.runner.env.indexes[graph_type], node_name)
            if payload is not None:
                self.runner.stats.record_ok(tool, time.perf_counter() - started)
        if payload is None:
            obs = await self.runner.run(tool, {"node_name": node_name, "graph_type": graph_type})
            payload = orjson.dumps({"rendered_content": obs.text})
        await _send_json(send, 200, payload)

    async def _tool_call(self, tool: str, body: bytes, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """``POST /tools/<tool>`` with a JSON object of arguments, as ``call_tool`` answers it; a body that
        ``call_tool`` would refuse (not an object, too many arguments, a string over the name limit) goes to it."""
        try:
            arguments = orjson.loads(body)
        except orjson.JSONDecodeError:
            arguments = None
        if type(arguments) is not dict or len(arguments) > self.max_args or any(
                isinstance(v, str) and len(v) > self.max_name_len for v in arguments.values()):
            return await self.app(scope, _replay(body, receive), send)
        obs = await self.runner.run(tool, arguments)
        reply = {"rendered_content": obs.text, "ok": obs.ok, "error_kind": obs.error_kind}
        status = _STATUS_FOR.get(obs.error_kind or "", 200)
        await _send_json(send, status, orjson.dumps(reply if status == 200 else {"detail": obs.text, **reply}))


async def _send_json(send: Any, status: int, payload: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", str(len(payload)).encode()), (b"content-type", _JSON)]})
    await send({"type": "http.response.body", "body": payload})


class _TokenGuard:
    """Plain ASGI layer in front of everything else: an HTTP request without ``Authorization: Bearer <token>`` is
    answered 401 before it reaches routing, the fast path or a tool (constant-time comparison). Lifespan events
    pass through."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            return await self.app(scope, receive, send)
        given = next((v for k, v in scope.get("headers", ()) if k == b"authorization"), b"")
        if hmac.compare_digest(given, self.expected):
            return await self.app(scope, receive, send)
        if scope["type"] != "http":
            return  # no other protocol is served
        body = orjson.dumps({"detail": f"missing or wrong token: send Authorization: Bearer ${TOKEN_ENV}"})
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-length", str(len(body)).encode()), (b"content-type", _JSON),
                                (b"www-authenticate", b"Bearer")]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})


def _replay(body: bytes, receive: Any) -> Any:
    """A ``receive`` that hands ``body`` (already read) to the next app first, then the connection's own."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> dict[str, Any]:
        if pending:
            return pending.pop()
        return await receive()

    return replay


def create_app(
    env: ToolEnvironment,
    *,
    max_name_len: int = 200,
    max_batch: int = 64,
    max_args: int = 8,
    stats_window: int = 10_000,
    batch_entity_matcher: bool = True,
    cache_chars: int = 32_000_000,
    inline_degree: int = 256,
    node_info_replies: NodeInfoReplies | None = None,
    token: str | None = None,
    views: ViewRegistry | None = None,
) -> FastAPI:
    """The tool server app over ``env`` (see the module docstring).

    ``max_name_len`` bounds every string argument (node names, relations, queries); ``max_batch`` bounds the
    calls of one ``/batch`` request and the size of a coalesced entity_matcher batch; ``max_args`` bounds the
    number of arguments of a generic call. ``batch_entity_matcher=False`` runs entity_matcher calls one by one.
    ``cache_chars`` bounds the result cache (characters of rendered text, per worker; 0 turns it off);
    ``inline_degree`` is the most neighbours a node_info entity may have to be rendered on the event loop.
    ``node_info_replies`` (``NodeInfoReplies.render(env)``) answers node_info on the Omne-R1 endpoint from
    pre-rendered replies; ``serve`` renders them before forking its workers. ``token``: every request must carry
    it (``Authorization: Bearer``), else 401. ``views``: the IKG views served by ``view_id`` (module docstring).
    """
    if max_name_len < 1 or max_batch < 1 or max_args < 1:
        raise ValueError("max_name_len, max_batch and max_args must be >= 1")
    if cache_chars < 0 or inline_degree < 0:
        raise InputError("cache_chars and inline_degree must be >= 0")
    stats = ToolStats(stats_window)
    batcher = _MatcherBatcher(env, max_batch, stats)
    cache = _ResultCache(cache_chars)
    runner = _CallRunner(env, batcher, stats, cache, inline_degree)
    checks = _RequestChecks(env, max_name_len, max_args)

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
    app.exception_handler(RequestValidationError)(_invalid_request)
    _add_info_routes(app, env, stats, cache, checks)
    _add_omne_routes(app, runner, checks, max_name_len)
    _add_tool_routes(app, env, runner, checks, _ViewCalls(env, views, stats, cache), max_name_len, max_batch)
    routes = {
        f"/{graph_type}/{endpoint}": (tool, graph_type)
        for graph_type in checks.domains
        for endpoint, tool in (("get_precise_entity_names", "entity_matcher"), ("get_node", "node_info"))
        if tool in env.tool_names
    }
    app.add_middleware(
        _OmneFastPath, runner=runner, routes=routes, max_name_len=max_name_len, node_info_replies=node_info_replies,
        tool_routes={f"/tools/{name}": name for name in env.tool_names}, max_args=max_args,
    )
    if token:
        app.add_middleware(_TokenGuard, token=token)  # added last: the outermost layer, before the fast path
    return app


async def _invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
    """A request FastAPI's validation refused: 422 with each problem's place, message and type. FastAPI's default
    echoes each rejected input back; an over-long name would be sent back whole."""
    problems = [
        {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")} for e in exc.errors()
    ]
    return JSONResponse({"detail": problems}, status_code=422)


class _RequestChecks:
    """The refusals the FastAPI routes share, as ``HTTPException``: an unknown graph type or tool (404), too many
    arguments or an over-long one (422)."""

    def __init__(self, env: ToolEnvironment, max_name_len: int, max_args: int) -> None:
        self.env = env
        self.domains = set(env.domains)
        self.max_name_len = max_name_len
        self.max_args = max_args

    def arguments(self, arguments: Mapping[str, Any], where: str) -> None:
        if len(arguments) > self.max_args:
            raise HTTPException(422, f"{where}: at most {self.max_args} arguments, got {len(arguments)}")
        for key, value in arguments.items():
            if isinstance(value, str) and len(value) > self.max_name_len:
                raise HTTPException(
                    422, f"{where}: argument {key!r} is {len(value)} characters long; the limit is {self.max_name_len}"
                )

    def graph(self, graph_type: str) -> None:
        if graph_type not in self.domains:
            raise HTTPException(
                404,
                f"Unknown graph_type {graph_type!r}. Loaded graph types: {', '.join(sorted(self.domains)) or 'none'}.",
            )

    def omne_tool_offered(self, tool: str) -> None:
        if tool not in self.env.tool_names:
            raise HTTPException(404, f"The tool {tool} is not offered by this server.")


def _add_info_routes(app: FastAPI, env: ToolEnvironment, stats: ToolStats, cache: _ResultCache,
                     checks: _RequestChecks) -> None:
    """``GET /health``, ``GET /tools`` and ``GET /stats``."""
    domains = checks.domains

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "graph_types": sorted(domains), "tools": list(env.tool_names),
                "search": env.index_status(), "worker": os.getpid()}

    @app.get("/tools")
    async def tools(graph_type: str | None = None) -> dict[str, Any]:
        if graph_type is not None:
            checks.graph(graph_type)
        return {"tools": env.schemas()}

    @app.get("/stats")
    async def get_stats() -> dict[str, Any]:
        return {**stats.snapshot(), "result_cache": cache.snapshot()}


def _add_omne_routes(app: FastAPI, runner: _CallRunner, checks: _RequestChecks, max_name_len: int) -> None:
    """The two endpoints the Omne-R1 RL code calls: ``POST /{graph_type}/get_precise_entity_names`` and
    ``POST /{graph_type}/get_node`` (what ``_OmneFastPath`` does not answer itself)."""
    Name = Annotated[str, StringConstraints(min_length=1, max_length=max_name_len)]

    class NodeRequest(BaseModel):
        model_config = ConfigDict(extra="ignore")
        node_name: Name

    run_call = runner.run

    @app.post("/{graph_type}/get_precise_entity_names")
    async def get_precise_entity_names(graph_type: str, body: NodeRequest) -> dict[str, str]:
        checks.graph(graph_type)
        checks.omne_tool_offered("entity_matcher")
        obs = await run_call("entity_matcher", {"node_name": body.node_name, "graph_type": graph_type})
        return {"rendered_content": obs.text}

    @app.post("/{graph_type}/get_node")
    async def get_node(graph_type: str, body: NodeRequest) -> dict[str, str]:
        checks.graph(graph_type)
        checks.omne_tool_offered("node_info")
        obs = await run_call("node_info", {"node_name": body.node_name, "graph_type": graph_type})
        return {"rendered_content": obs.text}


class _ViewCalls:
    """Tool calls on an IKG view (``POST /tools/{tool_name}?view_id=...``), cached and counted like the rest."""

    def __init__(self, env: ToolEnvironment, views: ViewRegistry | None, stats: ToolStats,
                 cache: _ResultCache) -> None:
        self.env, self.views, self.stats, self.cache = env, views, stats, cache

    async def run(self, tool_name: str, arguments: dict[str, Any], view_id: str) -> Observation:
        """The call on IKG view ``view_id``; an unknown view is an observation the model reads."""
        env, views, stats, cache = self.env, self.views, self.stats, self.cache
        started = time.perf_counter()
        try:
            if views is None:
                raise IKGError(f"unknown IKG view {view_id!r}: this server serves no IKG views")
            view = views.get(view_id)
            domain = views.domain(view_id) or str(arguments.get("graph_type") or env.default_domain or "")
            viewed = viewed_environment(env, view, domain)
        except IKGError as exc:
            obs = Observation(text=str(exc), ok=False, error_kind="unknown_view")
            stats.record(tool_name, time.perf_counter() - started, obs)
            return obs
        key = cache.key(f"{tool_name}@{view_id}", arguments)
        found = cache.get(key) if key is not None else None
        if found is None:
            found = await run_in_threadpool(viewed.call, tool_name, arguments)
            if key is not None:
                cache.put(key, found)
        stats.record(tool_name, time.perf_counter() - started, found)
        return found


def _add_tool_routes(app: FastAPI, env: ToolEnvironment, runner: _CallRunner, checks: _RequestChecks,
                     view_calls: _ViewCalls, max_name_len: int, max_batch: int) -> None:
    """``POST /tools/{tool_name}`` (any offered tool, on an IKG view with ``view_id``) and ``POST /batch``."""

    class Call(BaseModel):
        model_config = ConfigDict(extra="forbid")
        name: Annotated[str, StringConstraints(min_length=1, max_length=64)]
        arguments: dict[str, Any] = Field(default_factory=dict)

    class BatchRequest(BaseModel):
        model_config = ConfigDict(extra="forbid")
        calls: list[Call] = Field(min_length=1, max_length=max_batch)

    run_call = runner.run
    stats = runner.stats

    @app.post("/tools/{tool_name}", response_model=ToolReply)
    async def call_tool(tool_name: str, arguments: Annotated[dict[str, Any], Body()],
                        view_id: Annotated[str | None, StringConstraints(max_length=max_name_len)] = None) -> Any:
        if tool_name not in env.tool_names:
            raise HTTPException(404, f"Unknown tool {tool_name!r}. Tools: {', '.join(env.tool_names)}.")
        checks.arguments(arguments, tool_name)
        if view_id:
            obs = await view_calls.run(tool_name, arguments, view_id)
        else:
            obs = await run_call(tool_name, arguments)
        status = _STATUS_FOR.get(obs.error_kind or "", 200)
        if status != 200:
            return JSONResponse({"detail": obs.text, **ToolReply.of(obs).model_dump()}, status_code=status)
        return ToolReply.of(obs)

    @app.post("/batch")
    async def batch(body: BatchRequest) -> dict[str, list[ToolReply]]:
        for i, call in enumerate(body.calls):
            checks.arguments(call.arguments, f"calls[{i}] ({call.name})")
        # Matcher calls of one batch share an embedding call and a matrix product (call_many); the rest
        # run in the same worker thread.
        started = time.perf_counter()
        results = await run_in_threadpool(env.call_many, [(c.name, c.arguments) for c in body.calls])
        per_call = (time.perf_counter() - started) / len(body.calls)
        for call, obs in zip(body.calls, results):
            stats.record(call.name, per_call, obs)
        return {"results": [ToolReply.of(o) for o in results]}


def served_graphs(wh: Any, domains: list[str] | None, root: Path, embedder: Any,
                  limits: RenderLimits | None = None) -> list[ServedGraph]:
    """The current graph of each domain (all, or ``domains``) as a ``ServedGraph`` memory-mapped from its cache
    under ``root`` (the data dir's index folder), keyed by snapshot, embedder and format (``served.cache_dir``).

    A warm cache is opened without reading the graph from the warehouse at all: the snapshot's row of the
    warehouse's snapshot table (id, content hash, entity count) names the cache and is checked against its
    metadata, and a cache of other content is rebuilt. A missing one is built from the snapshot's records, read
    as columns (``GraphColumns``: DuckDB's Arrow tables, no pydantic record nor ``KnowledgeGraph`` made; dropped
    once the arrays are written), and then opened the same way."""
    from warehouse.graphs import current_snapshots, read_snapshot

    limits = limits or RenderLimits()
    out: list[ServedGraph] = []
    for snap in current_snapshots(wh, domains):
        path = served_cache_dir(root, snap.snapshot_id, embedder.name, embedder.dim, limits)
        started = time.perf_counter()
        graph = ServedGraph.load(path, snap)
        if graph is not None:
            log.info("%s: opened the served graph cache %s (%d entities) in %.2f s", snap.domain, path.name,
                     len(graph), time.perf_counter() - started)  # fmt: skip
        else:
            found, entities, relations = read_snapshot(wh, snap.domain, snap.snapshot_id, tables=True)
            read_s = time.perf_counter() - started
            cols = GraphColumns.from_tables(snap.domain, found.directed, found.snapshot_id, entities, relations)
            del entities, relations
            graph_s = time.perf_counter() - started - read_s
            graph = _build_served(path, cols, limits, snap, root, embedder)
            del cols
            gc.collect()
            _return_freed_memory()  # else the workers forked next would inherit the freed columns' heap
            log.info("%s: wrote the served graph cache %s in %.1f s (tables read in %.1f s, columns made in %.1f s)",
                     snap.domain, path.name, time.perf_counter() - started, read_s, graph_s)  # fmt: skip
        out.append(graph)
    return out


#: From this many entities a cold start writes the served arrays in a forked process while this one embeds the
#: entity matrix (``_build_served``); below it the fork costs more than the overlap saves.
FORK_ARRAYS_MIN_ENTITIES = 50_000


def _build_served(path: Path, kg: KnowledgeGraph | GraphColumns, limits: RenderLimits, snap: Any, root: Path,
                  embedder: Any) -> ServedGraph:
    """A snapshot's served cache written from ``kg`` (its records as ``GraphColumns``, or a graph), with its entity
    matrix cached in ``root`` on the way (the files ``ToolEnvironment.from_graphs`` then opens over the served
    graph: the same snapshot id and entity texts name them).

    The two are made side by side from ``FORK_ARRAYS_MIN_ENTITIES`` entities: the served arrays in a forked process
    (its own GIL: both jobs are mostly Python, and a thread beside the matrix slowed both), the entity matrix here.
    Once the matrix is written, where the graph is searched through an HNSW graph, its build starts in another
    process (``tasks.env.index.AnnBuild``: usearch on every core at a lower priority, written beside the matrix
    atomically), and the server answers by the exact scan until the graph's file is there: on a million entities
    the build takes minutes, the rest about a minute. The server's own index joins this build (its lock is held)
    instead of starting another."""
    import multiprocessing

    started = time.perf_counter()
    writer = None
    if len(kg) >= FORK_ARRAYS_MIN_ENTITIES and ServedGraph.load(path, snap) is None:
        gc.freeze()  # the child's collections would otherwise write into (and copy) every page of the graph
        try:
            writer = multiprocessing.get_context("fork").Process(
                target=_write_served, args=(path, kg, limits, snap), name="served-arrays", daemon=True)
            writer.start()
        finally:
            gc.unfreeze()
    try:
        index = GraphIndex(kg, embedder, cache_dir=root, ann_background=True)
        _ = index.embeddings
        log.info("%s: entity matrix of %d rows ready in %.1f s", kg.domain, len(index), time.perf_counter() - started)
        index.ann()  # starts the background build (or finds the graph cached)
    finally:
        if writer is not None:
            writer.join()
    if writer is not None and writer.exitcode != 0:
        log.warning("%s: writing the served arrays in a separate process failed (status %s); writing them here",
                    kg.domain, writer.exitcode)  # fmt: skip
    graph = ServedGraph.cached(path, kg, limits, snap)  # opened from the files the child wrote, or written now
    log.info("%s: served arrays ready %.1f s after the start of the build", kg.domain, time.perf_counter() - started)
    return graph


def _write_served(path: Path, kg: KnowledgeGraph | GraphColumns, limits: RenderLimits, snap: Any) -> None:
    """In the forked child of ``_build_served``: write the served arrays, half the node_info replies rendered in a
    process of their own (``build_arrays(processes=2)``)."""
    started = time.perf_counter()
    ServedGraph.cached(path, kg, limits, snap, processes=2)
    log.info("%s: served arrays written in %.1f s (separate process)", kg.domain, time.perf_counter() - started)


def _return_freed_memory() -> None:
    """Hand the C heap's free pages back to the operating system (glibc's ``malloc_trim``): the records and
    graph of a cold build leave hundreds of MB freed but still resident (500 MB at 50k entities, 90 MB after).
    Does nothing where the C library has no such call."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        ctypes.CDLL(name).malloc_trim(0)
    except (OSError, AttributeError, TypeError):
        return


__all__ = ["NodeInfoReplies", "ToolReply", "ToolStats", "create_app", "served_graphs"]
