"""The LLM gateway: every LLM call in hopforge goes through ``LLMGateway``.

What it guarantees to callers:
- ``chat`` and ``structured`` never raise for endpoint or output problems: they return a result whose
  ``failure`` says what went wrong (typed ``kind``, one-line message naming the role and URL, last raw text).
  Programming errors (bad arguments) still raise.
- transient errors (429, 5xx, timeouts, connection errors) are retried with exponential backoff and jitter,
  honouring ``Retry-After``; errors a retry cannot fix (401, 403, 404, 400) fail at once;
- a structured answer that fails validation is re-asked with the validation errors, a bounded number of times;
- at most ``max_concurrency`` requests per endpoint are in flight across the whole process (all threads and
  event loops);
- a response is cached only after it parsed and validated; a cached request makes no endpoint call;
- usage (calls, cache hits, tokens, latency, retries, failures by kind) is counted per role in ``ledger``.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import functools
import importlib
import json
import os
import random
import socket
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

import openai
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, ValidationError

from gateway.cache import ResponseCache, cache_key
from gateway.endpoints import EndpointUnavailable, ResolvedEndpoint, limit_name
from gateway.limiter import SharedLimiter
from gateway.loop import is_shared
from gateway.structured import (
    check_schema,
    extract_json,
    model_schema,
    response_format,
    schema_instruction,
    split_reasoning,
)
from gateway.usage import UsageLedger
from schemas.config import ROLES, Endpoint, Settings

T = TypeVar("T", bound=BaseModel)

FailureKind = Literal[
    "validation",
    "truncated",
    "empty",
    "timeout",
    "rate_limit",
    "server_error",
    "connection",
    "auth",
    "not_found",
    "bad_request",
    "endpoint_unavailable",
]


class LLMFailure(BaseModel):
    """Why a call produced no usable answer."""

    role: str
    kind: FailureKind
    message: str
    last_raw_text: str | None = None
    attempts: int = 0

    def __str__(self) -> str:
        return self.message


@dataclass
class ChatResult:
    """A chat completion with reasoning separated from the answer."""

    role: str
    text: str = ""
    reasoning: str | None = None
    raw: str = ""
    finish_reason: str | None = None
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    failure: LLMFailure | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


@dataclass
class Structured(Generic[T]):
    """A validated structured answer, or a typed failure carrying the last raw text."""

    role: str
    value: T | None = None
    reasoning: str | None = None
    raw: str = ""
    cached: bool = False
    reasks: int = 0
    failure: LLMFailure | None = None
    prompt_tokens: int = 0  # summed over every attempt, re-asks included (0 for a cache hit)
    completion_tokens: int = 0

    @property
    def ok(self) -> bool:
        return self.failure is None and self.value is not None


LocalResolver = Callable[[str, Endpoint], ResolvedEndpoint]

# Process-wide limiters: one per endpoint, shared by every gateway instance and thread.
_LIMITERS: dict[tuple[str, str], SharedLimiter] = {}
_LIMITERS_LOCK = threading.Lock()

# HTTP clients of the process's shared loop (``gateway.loop``), one per endpoint, shared by every gateway instance.
# The shared loop's clients, by process (a forked child starts a shared loop of its own: gateway.loop) and endpoint.
_SHARED_CLIENTS: dict[tuple[int, str, str, float, int], openai.AsyncOpenAI] = {}
_SHARED_CLIENTS_LOCK = threading.Lock()
_CLOSE_AT_EXIT = False


def _close_shared_clients(timeout_s: float = 5.0) -> None:
    """Close this process's shared-loop clients on that loop (an exit hook): their connections end cleanly and
    aiohttp has no open session to report at exit."""
    from gateway.loop import running_shared_loop

    loop = running_shared_loop()
    with _SHARED_CLIENTS_LOCK:
        mine = [k for k in _SHARED_CLIENTS if k[0] == os.getpid()]
        clients = [_SHARED_CLIENTS.pop(k) for k in mine]
    if loop is None or not clients:
        return

    async def close_all() -> None:
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)

    try:
        asyncio.run_coroutine_threadsafe(close_all(), loop).result(timeout=timeout_s)
    except (concurrent.futures.TimeoutError, RuntimeError):
        pass  # the loop is stopping, or a close hangs: exit anyway


def endpoint_limiter(base_url: str, model: str, limit: int) -> SharedLimiter:
    with _LIMITERS_LOCK:
        key = (base_url, model)
        lim = _LIMITERS.get(key)
        if lim is None or lim.limit != limit and lim.in_use == 0:
            lim = _LIMITERS[key] = SharedLimiter(limit)
        return lim


class _Transient(Exception):
    def __init__(self, kind: FailureKind, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after


class _Permanent(Exception):
    def __init__(self, kind: FailureKind, message: str):
        super().__init__(message)
        self.kind = kind


def _retry_after(exc: openai.APIStatusError) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None


def _classify(exc: Exception, ep: ResolvedEndpoint) -> _Transient | _Permanent:
    where = f"role {ep.role} at {ep.base_url} (model {ep.model})"
    if isinstance(exc, openai.APITimeoutError):
        return _Transient("timeout", f"{where}: no reply within {ep.timeout_s:g} s; raise timeout_s or check the server load")
    if isinstance(exc, openai.APIConnectionError):
        return _Transient("connection", f"{where}: cannot connect; check that the server is running and base_url is right")
    if isinstance(exc, openai.RateLimitError):
        return _Transient("rate_limit", f"{where}: rate limited (429); lower max_concurrency", _retry_after(exc))
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        env = ep.api_key_env or "api_key_env (no variable is configured)"
        return _Permanent("auth", f"{where}: the API key was refused ({exc.status_code}); check the variable {env}")
    if isinstance(exc, openai.NotFoundError):
        return _Permanent("not_found", f"{where}: not found (404); check the model name and that base_url ends in /v1")
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code >= 500:
            return _Transient("server_error", f"{where}: server error {exc.status_code}", _retry_after(exc))
        return _Permanent("bad_request", f"{where}: request rejected ({exc.status_code}): {_short(str(exc))}")
    return _Permanent("bad_request", f"{where}: {type(exc).__name__}: {_short(str(exc))}")


def _short(text: str, n: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _http_client(ep: ResolvedEndpoint, *, aio: bool = False):
    """The SDK's HTTP client with TCP_NODELAY and a pool as large as the endpoint's concurrency. With ``aio`` (the
    process's shared loop, which runs every batch's calls) over aiohttp's connection pool, the SDK's own
    ``DefaultAioHttpClient`` transport, where the SDK ships it; otherwise over the SDK's default httpx transport.

    Why aiohttp on the hot path: with its HTTP parser in C a call costs the client 0.5 ms of CPU against 1.1 ms
    through httpcore, and the flow's process, which also builds prompts and checks answers, is what paces the
    endpoint (``bench/bench_pipeline.py``). It is kept to the shared loop, whose clients are closed at exit
    (``_close_shared_clients``): aiohttp reports a session that is collected unclosed, as a client on a loop that
    ends without ``aclose`` would be. Without TCP_NODELAY (aiohttp sets it on every connection) a request written
    in two segments (headers, then body) waits for the peer's delayed ACK, about 40 ms per request; with a
    keep-alive pool smaller than the concurrency, connections are closed and reopened on every request.
    """
    base = openai.DefaultAsyncHttpxClient
    httpmod = importlib.import_module(base.__mro__[1].__module__.split(".")[0])  # httpx or httpx2
    size = max(ep.max_concurrency, 1) + 4
    limits = httpmod.Limits(max_connections=size, max_keepalive_connections=size, keepalive_expiry=30.0)
    transport_cls = _aiohttp_transport(httpmod.__name__) if aio else None
    if transport_cls is not None:
        transport = transport_cls(verify=_ssl_context(httpmod.__name__), limits=limits)
        return openai.DefaultAioHttpClient(transport=transport, timeout=ep.timeout_s)
    transport = httpmod.AsyncHTTPTransport(
        verify=_ssl_context(httpmod.__name__),
        limits=limits,
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
    )
    return base(transport=transport, timeout=ep.timeout_s)


def _aiohttp_transport(httpmod_name: str) -> Any:
    """The aiohttp transport the SDK ships for its HTTP library (``httpx2``), or None: an SDK without it, a
    different HTTP library, or aiohttp not installed."""
    if httpmod_name != "httpx2":
        return None
    try:
        import aiohttp  # noqa: F401
        from openai._vendor.httpx_aiohttp import AiohttpTransport
    except ImportError:
        return None
    return AiohttpTransport


@functools.lru_cache(maxsize=None)
def _ssl_context(httpmod_name: str) -> Any:
    """The HTTP library's default SSL context, made once per process: every batch task opens a gateway with its
    own client, and loading the CA bundle for each took longer than the calls it then made on loopback."""
    make = getattr(importlib.import_module(f"{httpmod_name}._config"), "create_ssl_context", None)
    return make() if make is not None else True


class _ChatPoster:
    """``client.post("/chat/completions", cast_to=ChatCompletion, body=...)`` in three steps, with the SDK's own
    pieces: ``build`` (the request: the SDK's URL and headers, computed once per client, and the SDK's JSON
    encoding of the body), ``send`` (the HTTP round trip; transport errors and error statuses become the
    exceptions the SDK raises: ``APITimeoutError``, ``APIConnectionError``, the ``APIStatusError`` subclass of the
    status) and ``parse`` (the SDK's ``ChatCompletion`` construction). The gateway holds an endpoint slot for
    ``send`` only. It also skips the SDK's per-request option copying, header merging and retry bookkeeping
    (retries are off; the gateway retries itself). Where the SDK's internals are not as expected, ``build``
    returns None and the gateway calls ``client.post``."""

    def __init__(self, client: openai.AsyncOpenAI) -> None:
        self.client = client
        self._template: tuple[Any, list[tuple[str, str]], dict[str, Any], Any, Any, Any, Any] | None | bool = None

    async def _make_template(self) -> Any:
        try:
            from openai._models import FinalRequestOptions
            from openai._utils._json import openapi_dumps

            sdk_http = importlib.import_module("openai._httpx2")
            client = self.client
            options = FinalRequestOptions.construct(method="post", url="/chat/completions", json_data={})
            options = await client._prepare_options(options)
            template = client._build_request(options)
            await client._prepare_request(template)
            headers = [(k, v) for k, v in template.headers.multi_items() if k.lower() != "content-length"]
            httpmod = importlib.import_module(type(template).__module__.split(".")[0])
            return (template.url, headers, dict(template.extensions), openapi_dumps, httpmod,
                    sdk_http.timeout_exceptions(), sdk_http.request_exceptions())
        except Exception:  # another SDK version: the plain client.post path
            return False

    async def build(self, body: dict[str, Any]) -> Any:
        if self._template is None:
            self._template = await self._make_template()
        if self._template is False:
            return None
        url, headers, extensions, dumps, httpmod, _, _ = self._template  # type: ignore[misc]
        return httpmod.Request("POST", url, headers=list(headers), content=dumps(body), extensions=extensions)

    async def send(self, request: Any) -> Any:
        *_, timeouts, request_errors = self._template  # type: ignore[misc]
        try:
            response = await self.client._client.send(request)
        except timeouts as err:
            if not _timed_out(err):
                raise openai.APIConnectionError(request=request) from err
            raise openai.APITimeoutError(request=request) from err
        except openai.OpenAIError:
            raise
        except request_errors as err:
            raise openai.APIConnectionError(request=request) from err
        if not response.is_success:  # as the SDK's raise_for_status: any status but 2xx is an APIStatusError
            if not response.is_closed:
                await response.aread()
            raise self.client._make_status_error_from_response(response) from None
        return response

    def parse(self, response: Any) -> Any:
        content_type = response.headers.get("content-type", "*").split(";")[0]
        if not content_type.endswith("json"):
            try:
                data = response.json()
            except Exception:
                return response.text
        else:
            data = response.json()
        return self.client._process_response_data(data=data, cast_to=ChatCompletion, response=response)


def _timed_out(err: BaseException) -> bool:
    """Whether a timeout exception of the HTTP library stands for a timeout. The aiohttp transport the SDK ships
    reports every aiohttp connection error (a refused connection, a server that hung up) as a connect timeout;
    the gateway tells a down endpoint from a slow one by that difference."""
    try:
        import aiohttp
    except ImportError:
        return True
    cause = err.__cause__
    return not (isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(cause, TimeoutError))


_POSTERS: weakref.WeakKeyDictionary[openai.AsyncOpenAI, _ChatPoster] = weakref.WeakKeyDictionary()
_POSTERS_LOCK = threading.Lock()


def _poster(client: openai.AsyncOpenAI) -> _ChatPoster:
    with _POSTERS_LOCK:
        poster = _POSTERS.get(client)
        if poster is None:
            poster = _POSTERS[client] = _ChatPoster(client)
        return poster


class LLMGateway:
    """Typed, cached, rate-limited access to every role's OpenAI-compatible endpoint."""

    def __init__(
        self,
        settings: Settings,
        *,
        cache: ResponseCache | None = None,
        ledger: UsageLedger | None = None,
        local_resolver: LocalResolver | None = None,
        backoff_base_s: float = 0.5,
        backoff_cap_s: float = 30.0,
        max_retry_after_s: float = 300.0,
        schema_in_prompt: bool = True,
        rng: random.Random | None = None,
        resolved: dict[str, ResolvedEndpoint] | None = None,
        global_limits: bool = False,
    ):
        """``resolved`` pre-resolves roles (a task's gateway gets the flow's endpoints, embedded server included);
        ``global_limits`` makes every request also hold a slot of the endpoint's Prefect global concurrency limit,
        so the limit holds across worker processes (``gateway.spec``)."""
        self.settings = settings
        self.cache = cache if cache is not None else ResponseCache(
            settings.cache_path, mode=settings.cache.mode, scope=settings.cache.scope
        )
        self.ledger = ledger or UsageLedger()
        self._local_resolver = local_resolver
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s
        self.max_retry_after_s = max_retry_after_s
        self.schema_in_prompt = schema_in_prompt
        self._rng = rng or random.Random()
        self._resolved: dict[str, ResolvedEndpoint] = dict(resolved or {})
        self.global_limits = global_limits
        self._resolve_lock = threading.Lock()
        # One HTTP client per (event loop, endpoint): httpx connection pools belong to the loop that made them.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str, float, int], openai.AsyncOpenAI]] = (
            weakref.WeakKeyDictionary()
        )
        self._clients_lock = threading.Lock()

    # -- endpoints --------------------------------------------------------------------------------
    def resolve(self, role: str) -> ResolvedEndpoint:
        """The concrete endpoint for a role; starts the embedded model the first time a local role is used."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; the roles are: {', '.join(ROLES)}")
        with self._resolve_lock:
            if role in self._resolved:
                return self._resolved[role]
            ep = self.settings.endpoint(role)
            if ep.is_local:
                resolver = self._local_resolver
                if resolver is None:
                    from gateway.local import local_resolver_for

                    resolver = self._local_resolver = local_resolver_for(self.settings)
                resolved = resolver(role, ep)
            else:
                resolved = ResolvedEndpoint(
                    role=role,
                    base_url=ep.base_url or "",
                    model=ep.model or "",
                    api_key=ep.api_key() or "not-needed",
                    structured=ep.structured,
                    sampling=ep.sampling.as_params(),
                    max_concurrency=ep.max_concurrency,
                    timeout_s=ep.timeout_s,
                    max_retries=ep.max_retries,
                    extra_body=dict(ep.extra_body),
                    is_local=False,
                    api_key_env=ep.api_key_env,
                )
            self._resolved[role] = resolved
            return resolved

    def _client(self, ep: ResolvedEndpoint) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        # The process's shared loop (``gateway.loop``) keeps one client per endpoint for every gateway, so its
        # connections outlive the batch task that opened them; any other loop keeps its own, for this gateway.
        global _CLOSE_AT_EXIT
        shared = is_shared(loop)
        key = (ep.base_url, ep.api_key, ep.timeout_s, ep.max_concurrency)
        with _SHARED_CLIENTS_LOCK if shared else self._clients_lock:
            store = _SHARED_CLIENTS if shared else self._clients.setdefault(loop, {})
            if shared:
                key = (os.getpid(), *key)  # type: ignore[assignment]
            client = store.get(key)  # type: ignore[call-overload]
            if client is None:
                client = store[key] = openai.AsyncOpenAI(  # type: ignore[index]
                    base_url=ep.base_url, api_key=ep.api_key, max_retries=0, timeout=ep.timeout_s,
                    http_client=_http_client(ep, aio=shared),
                )
                if shared and not _CLOSE_AT_EXIT:
                    atexit.register(_close_shared_clients)
                    _CLOSE_AT_EXIT = True
            return client

    # -- raw call with retries --------------------------------------------------------------------
    async def _complete_once(self, ep: ResolvedEndpoint, messages: list[dict[str, Any]], params: dict[str, Any],
                             fmt: dict[str, Any] | None, tools: list[dict[str, Any]] | None) -> ChatResult:
        client = self._client(ep)
        body: dict[str, Any] = {**ep.extra_body, "model": ep.model, "messages": messages, **params}
        if fmt is not None:
            body["response_format"] = fmt
        if tools:
            body["tools"] = tools
        limiter = endpoint_limiter(ep.base_url, ep.model, ep.max_concurrency)
        poster = _poster(client)
        # The request is built before taking a slot and the response parsed after giving it back: a slot stands for
        # a request the endpoint is working on, and the client's own CPU time in it would idle the endpoint. The
        # answer is parsed, validated and stored in the same loop step that gives the slot back, before the waiter
        # handed the slot can send: a kill -9 then repeats only the requests in flight on resume
        # (tests/reliability/test_kill_resume.py). Parsing a loop turn later would break that; what comes after the
        # store waits instead (``_let_senders_go``), so a burst of answers still refills every slot first.
        request = await poster.build(body)
        async with limiter.slot(), _global_slot(ep, self.global_limits):
            started = time.perf_counter()
            if request is None:
                # The SDK's documented raw `post` sends the body as given: `chat.completions.create` would first
                # walk every message and the whole schema to transform them, which costs more CPU than the HTTP
                # round trip at high concurrency (bench/bench_gateway.py, bench/bench_generation.py). Errors,
                # retries off, and the typed ChatCompletion result are the same.
                resp = await client.post("/chat/completions", cast_to=ChatCompletion, body=body)
            else:
                response = await poster.send(request)
            latency = time.perf_counter() - started
        if request is not None:
            resp = poster.parse(response)
        choice = resp.choices[0] if resp.choices else None
        msg = choice.message if choice else None
        content = (msg.content if msg else None) or ""
        extra = (msg.model_extra or {}) if msg is not None else {}
        reasoning_field = extra.get("reasoning_content") or extra.get("reasoning")
        text, reasoning = split_reasoning(content, reasoning_field if isinstance(reasoning_field, str) else None)
        usage = resp.usage
        pt = int(getattr(usage, "prompt_tokens", 0) or 0)
        ct = int(getattr(usage, "completion_tokens", 0) or 0)
        self.ledger.record_call(ep.role, ep.model, latency_s=latency, prompt_tokens=pt, completion_tokens=ct)
        tool_calls = []
        for tc in (msg.tool_calls or []) if msg else []:
            fn = getattr(tc, "function", None)
            if fn is not None:
                tool_calls.append({"id": tc.id, "name": fn.name, "arguments": fn.arguments})
        return ChatResult(
            role=ep.role,
            text=text,
            reasoning=reasoning,
            raw=content,
            finish_reason=choice.finish_reason if choice else None,
            prompt_tokens=pt,
            completion_tokens=ct,
            tool_calls=tool_calls,
        )

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            # The server said when to come back; only a clearly broken value is capped.
            return min(retry_after, self.max_retry_after_s)
        ceiling = min(self.backoff_cap_s, self.backoff_base_s * (2**attempt))
        return ceiling * (0.5 + 0.5 * self._rng.random())  # jitter keeps parallel retries from marching in step

    async def _complete(self, ep: ResolvedEndpoint, messages: list[dict[str, Any]], params: dict[str, Any],
                        fmt: dict[str, Any] | None, tools: list[dict[str, Any]] | None) -> ChatResult:
        attempt = 0
        while True:
            try:
                return await self._complete_once(ep, messages, params, fmt, tools)
            except (openai.APIError, openai.APITimeoutError) as exc:
                err = _classify(exc, ep)
            if isinstance(err, _Permanent) or attempt >= ep.max_retries:
                self.ledger.record_failure(ep.role, err.kind)
                return ChatResult(
                    role=ep.role,
                    failure=LLMFailure(role=ep.role, kind=err.kind, message=str(err), attempts=attempt + 1),
                )
            self.ledger.record_retry(ep.role, err.kind)
            await asyncio.sleep(self._backoff(attempt, err.retry_after))
            attempt += 1

    def _params(self, ep: ResolvedEndpoint, overrides: dict[str, Any] | None) -> dict[str, Any]:
        params = dict(ep.sampling)
        params.update({k: v for k, v in (overrides or {}).items() if v is not None})
        return params

    def _resolve_or_fail(self, role: str) -> ResolvedEndpoint | LLMFailure:
        try:
            return self.resolve(role)
        except EndpointUnavailable as exc:
            self.ledger.record_failure(role, "endpoint_unavailable")
            return LLMFailure(role=role, kind="endpoint_unavailable", message=f"role {role}: {exc}")

    # -- public API -------------------------------------------------------------------------------
    async def chat(
        self,
        role: str,
        messages: Sequence[dict[str, Any]],
        *,
        params: dict[str, Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
        validate: Callable[[ChatResult], str | None] | None = None,
        use_cache: bool = True,
        allow_truncated: bool = False,
    ) -> ChatResult:
        """One chat completion. Cached only when it finished normally, is non-empty and ``validate`` accepts it.

        ``allow_truncated`` accepts (and caches) an answer cut off at ``max_tokens``, for callers that can use a
        partial answer, such as graph extraction, whose rows before the cut are still good.
        """
        ep = self._resolve_or_fail(role)
        if isinstance(ep, LLMFailure):
            return ChatResult(role=role, failure=ep)
        messages = [dict(m) for m in messages]
        p = self._params(ep, params)
        key = cache_key(model=ep.model, messages=messages, params=p, tools=tools)
        if use_cache:
            hit = self.cache.get(key)
            if hit is not None:
                self.ledger.record_cache_hit(role, ep.model)
                return ChatResult(role=role, cached=True, **hit)
        result = await self._complete(ep, messages, p, None, tools)
        if result.failure is not None:
            return result
        problem = None
        if result.finish_reason == "length" and not allow_truncated:
            problem = ("truncated", f"role {role}: output cut off at max_tokens={p.get('max_tokens')}")
        elif not result.text and not result.tool_calls:
            problem = ("empty", f"role {role}: the model returned no answer text")
        elif validate is not None and (why := validate(result)):
            problem = ("validation", f"role {role}: {why}")
        if problem is not None:
            self.ledger.record_failure(role, problem[0])
            result.failure = LLMFailure(role=role, kind=problem[0], message=problem[1], last_raw_text=result.raw, attempts=1)
            return result
        if use_cache:
            self.cache.put(key, _chat_payload(result), model=ep.model, role=role)
        await _let_senders_go()
        return result

    async def structured(
        self,
        role: str,
        messages: Sequence[dict[str, Any]],
        output: type[T],
        *,
        schema: dict[str, Any] | None = None,
        enums: dict[str, list[Any]] | None = None,
        name: str | None = None,
        params: dict[str, Any] | None = None,
        max_reasks: int | None = None,
        validate: Callable[[T], str | None] | None = None,
        use_cache: bool = True,
    ) -> Structured[T]:
        """Ask for a JSON answer matching ``output`` (optionally narrowed by ``schema``/``enums``).

        The answer is checked with pydantic, against every constraint of the schema sent (``check_schema``:
        enums, lengths, patterns, required fields... whatever the endpoint enforced), and by ``validate`` (return
        a reason to reject). A rejected answer is re-asked with the reasons up to ``max_reasks`` times; then a typed failure
        with the last raw text is returned.
        """
        ep = self._resolve_or_fail(role)
        if isinstance(ep, LLMFailure):
            return Structured(role=role, failure=ep)
        schema = schema if schema is not None else (model_schema(output, enums=enums) if enums else _plain_schema(output))
        name = name or output.__name__
        reasks_allowed = self.settings.max_reasks if max_reasks is None else max_reasks
        messages = [dict(m) for m in messages]
        if self.schema_in_prompt:
            messages = _with_instruction(messages, schema_instruction(name, schema))
        p = self._params(ep, params)
        fmt = response_format(ep.structured, name, schema)
        key = cache_key(model=ep.model, messages=messages, params=p, schema=schema)

        if use_cache:
            hit = self._structured_hit(key, ep, role, output, schema, validate)
            if hit is not None:
                return hit
        return await self._ask_until_valid(ep, role, messages, p, fmt, key, output, schema, name=name,
                                           validate=validate, reasks_allowed=reasks_allowed, use_cache=use_cache)

    def _structured_hit(
        self,
        key: str,
        ep: ResolvedEndpoint,
        role: str,
        output: type[T],
        schema: dict[str, Any],
        validate: Callable[[T], str | None] | None,
    ) -> Structured[T] | None:
        """The cached answer under ``key`` when there is one and it still passes every check, else ``None``."""
        hit = self.cache.get(key)
        if hit is not None:
            value, _ = _parse(hit["text"], output, schema, validate)
            if value is not None:
                self.ledger.record_cache_hit(role, ep.model)
                return Structured(role=role, value=value, reasoning=hit.get("reasoning"), raw=hit["raw"], cached=True)
        return None

    async def _ask_until_valid(
        self,
        ep: ResolvedEndpoint,
        role: str,
        messages: list[dict[str, Any]],
        p: dict[str, Any],
        fmt: dict[str, Any] | None,
        key: str,
        output: type[T],
        schema: dict[str, Any],
        *,
        name: str,
        validate: Callable[[T], str | None] | None,
        reasks_allowed: int,
        use_cache: bool,
    ) -> Structured[T]:
        """Asks, and re-asks with the reasons for each rejected answer, until an answer passes (cached when
        ``use_cache``), the endpoint fails, or ``reasks_allowed`` re-asks are spent (a typed failure)."""
        convo = list(messages)
        last: ChatResult | None = None
        problems: list[str] = []
        tokens = [0, 0]
        for attempt in range(reasks_allowed + 1):
            if attempt:
                self.ledger.record_reask(role)
            result = await self._complete(ep, convo, p, fmt, None)
            tokens[0] += result.prompt_tokens
            tokens[1] += result.completion_tokens
            if result.failure is not None:
                return Structured(role=role, raw=result.raw, reasks=attempt, failure=result.failure,
                                  prompt_tokens=tokens[0], completion_tokens=tokens[1])
            last = result
            if result.finish_reason == "length":
                problems = [f"the answer was cut off at max_tokens={p.get('max_tokens')}; answer more briefly"]
                kind: FailureKind = "truncated"
                value = None
            else:
                value, problems = _parse(result.text, output, schema, validate)
                kind = "validation"
            if value is not None:
                if use_cache:
                    self.cache.put(key, _chat_payload(result), model=ep.model, role=role)
                await _let_senders_go()
                return Structured(role=role, value=value, reasoning=result.reasoning, raw=result.raw, reasks=attempt,
                                  prompt_tokens=tokens[0], completion_tokens=tokens[1])
            convo = [
                *convo,
                {"role": "assistant", "content": result.raw},
                {"role": "user", "content": _reask_text(name, problems)},
            ]
        self.ledger.record_failure(role, kind)
        return Structured(
            role=role,
            raw=last.raw if last else "",
            reasoning=last.reasoning if last else None,
            reasks=reasks_allowed,
            prompt_tokens=tokens[0],
            completion_tokens=tokens[1],
            failure=LLMFailure(
                role=role,
                kind=kind,
                message=f"role {role}: no valid {name} after {reasks_allowed + 1} attempt(s): " + "; ".join(problems)[:500],
                last_raw_text=last.raw if last else None,
                attempts=reasks_allowed + 1,
            ),
        )

    async def gather(
        self,
        calls: Iterable[Awaitable[Any]],
        *,
        progress: Callable[[int, int], None] | None = None,
        limit: int | None = None,
    ) -> list[Any]:
        """Await many gateway calls concurrently (the per-endpoint limiter paces them), keeping input order.

        ``limit`` bounds how many of the awaitables run at once. Use it for multi-step jobs whose synchronous
        work before their first call would otherwise all run up front, delaying every response behind it.
        """
        if limit is not None:
            sem = asyncio.Semaphore(limit)

            async def bounded(aw: Awaitable[Any]) -> Any:
                async with sem:
                    return await aw

            calls = [bounded(c) for c in calls]
        tasks = [asyncio.ensure_future(c) for c in calls]
        total = len(tasks)
        done = 0
        if progress is not None:
            for t in tasks:
                t.add_done_callback(lambda _t: _tick())

        def _tick() -> None:
            nonlocal done
            done += 1
            progress(done, total)  # type: ignore[misc]

        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            # The calls still running are cancelled, as leaving ``asyncio.run`` would: on the process's shared loop
            # (``gateway.loop``) they would otherwise run on after their batch has failed.
            for t in tasks:
                t.cancel()
            raise

    async def aclose(self) -> None:
        """Close this gateway's HTTP clients on the running loop (the shared loop's clients stay open for the next
        batch)."""
        loop = asyncio.get_running_loop()
        with self._clients_lock:
            clients = list(self._clients.pop(loop, {}).values())
        for c in clients:
            await c.close()


async def _let_senders_go() -> None:
    """Called once an answer is stored, before the caller's code after the call runs (its checks, its next
    prompt): two loop turns, so that every request granted a slot by the answers of one burst is sent first.

    Answers come in bursts (requests sent together come back together), and the slot each gives back passes to a
    waiting request that runs on the next loop turn. Without these turns, the caller code of every answer in the
    burst ran before any of those requests went out, holding their slots idle: generation's endpoint saturation
    0.80-0.82 -> 0.85 at 40 seeds in ``bench/bench_pipeline.py``. The answer is already stored, so a kill -9
    still repeats only the requests in flight."""
    await asyncio.sleep(0)  # the waiters granted in this turn run first...
    await asyncio.sleep(0)  # ...and get through to their send before the callers of the burst resume


def _global_slot(ep: ResolvedEndpoint, enabled: bool):
    """A slot of the endpoint's Prefect global concurrency limit (created by the flow, ``flows.batches``), or
    nothing when the limit only has to hold inside this process."""
    if not enabled:
        return contextlib.nullcontext()
    from prefect.concurrency.asyncio import concurrency

    # strict: a missing limit is an error rather than silently unlimited requests from every worker.
    return concurrency(limit_name(ep), occupy=1, strict=True)


@functools.lru_cache(maxsize=256)
def _plain_schema_json(output: type[BaseModel]) -> str:
    return json.dumps(model_schema(output))


def _plain_schema(output: type[BaseModel]) -> dict[str, Any]:
    """The schema of a model without per-request enums, built once per model (callers get their own copy)."""
    return json.loads(_plain_schema_json(output))


def _chat_payload(result: ChatResult) -> dict[str, Any]:
    return {
        "text": result.text,
        "reasoning": result.reasoning,
        "raw": result.raw,
        "finish_reason": result.finish_reason,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "tool_calls": result.tool_calls,
    }


def _with_instruction(messages: list[dict[str, Any]], instruction: str) -> list[dict[str, Any]]:
    """Append the schema instruction to the last user message (small models follow it best there)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user" and isinstance(messages[i].get("content"), str):
            out = list(messages)
            out[i] = {**messages[i], "content": messages[i]["content"].rstrip() + "\n\n" + instruction}
            return out
    return [*messages, {"role": "user", "content": instruction}]


def _parse(text: str, output: type[T], schema: dict[str, Any], validate: Callable[[T], str | None] | None) -> tuple[T | None, list[str]]:
    try:
        data = extract_json(text)
    except ValueError as exc:
        return None, [str(exc)]
    try:
        value = output.model_validate(data)
    except ValidationError as exc:
        return None, [
            f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors(include_url=False)[:8]
        ]
    # The schema as sent, every constraint of it: an endpoint that ignored part of it is caught here.
    problems = check_schema(data, schema)
    if not problems and validate is not None:
        why = validate(value)
        if why:
            problems = [why]
    return (None, problems) if problems else (value, [])


def _reask_text(name: str, problems: list[str]) -> str:
    listed = "\n".join(f"- {p}" for p in problems[:8])
    return (
        f"Your previous reply was not a valid {name}:\n{listed}\n"
        "Reply again with one corrected JSON object only."
    )


def run_sync(coro: Awaitable[Any]) -> Any:
    """Run a coroutine from synchronous code (a Prefect task on a worker thread, the CLI)."""
    return asyncio.run(coro)  # type: ignore[arg-type]
