"""verl tools that call hopforge's KG tool server (``hopforge serve-tools``) over HTTP.

verl (0.9.1, ``tools/tool_registry.py``) builds one ``HopforgeKGTool`` per entry of the run's tool config
(``training.rl.verl_tool_config``): ``config`` holds ``server_url`` and ``timeout_s``, ``tool_schema`` the tool's
OpenAI schema (its name picks the server endpoint ``POST /tools/{name}``). Per rollout, verl's tool agent loop
calls ``create(create_kwargs=<row's extra_info.tools_kwargs[name].create_kwargs>)``, then
``execute(instance_id, arguments)``, then ``release(instance_id)``.

The graph is the row's: ``create_kwargs["graph_type"]`` (written by hopforge's export) replaces whatever graph the
model named, so a rollout always explores the graph its question was generated on; a call that names another
graph is counted in the tool metrics (``graph_type_replaced``).

What the model sees: the server's ``rendered_content`` (the same text the SFT data shows), also for calls the
server rejects (unknown entity, bad arguments: the text says what was wrong). What it never sees: an outage. When
the server cannot be reached or fails (5xx) after one retry, ``execute`` raises ``ToolServerError``; verl's agent
loop logs it and answers that one call with the error text, and the launcher's health check
(``training/launch/verl_ppo.py``) refuses to start against a server that is down.

Runs inside the verl environment: imports verl and httpx, not hopforge.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any
from uuid import uuid4

import httpx
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse
from verl.utils.rollout_trace import rollout_trace_op


class ToolServerError(RuntimeError):
    """The tool server could not answer a call (down, timing out, or failing with a 5xx)."""


class HopforgeKGTool(BaseTool):
    """One hopforge KG tool (``entity_matcher``, ``node_info``, ...) served by ``hopforge serve-tools``."""

    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema):
        super().__init__(config, tool_schema)
        url = str(config.get("server_url") or "").rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"tool {self.name}: config.server_url must be the URL of `hopforge serve-tools`, "
                             f"got {url!r}")  # fmt: skip
        self.server_url = url
        self.timeout_s = float(config.get("timeout_s", 30.0))
        self.retries = int(config.get("retries", 1))
        self._graphs: dict[str, str | None] = {}
        # One connection pool per event loop: an httpx.AsyncClient is bound to the loop it first ran on, and verl
        # may drive a tool from more than one loop (agent-loop workers, tests).
        self._clients: dict[int, httpx.AsyncClient] = {}

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(id(loop))
        if client is None or client.is_closed:
            client = httpx.AsyncClient(
                base_url=self.server_url,
                timeout=httpx.Timeout(self.timeout_s, connect=min(self.timeout_s, 10.0)),
                limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
            )
            self._clients[id(loop)] = client
        return client

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, ToolResponse]:
        # verl 0.9.1 passes the row's create_kwargs nested (`create_kwargs={...}`); accept them flat as well.
        create_kwargs = kwargs.get("create_kwargs", kwargs) or {}
        instance_id = instance_id or uuid4().hex
        graph = create_kwargs.get("graph_type")
        self._graphs[instance_id] = str(graph) if graph else None
        return instance_id, ToolResponse()

    @rollout_trace_op
    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any) -> tuple[ToolResponse, float, dict]:
        arguments = dict(parameters or {})
        metrics: dict[str, Any] = {"graph_type_replaced": 0}
        graph = self._graphs.get(instance_id)
        if graph is not None:
            if arguments.get("graph_type") not in (None, graph):
                metrics["graph_type_replaced"] = 1
            arguments["graph_type"] = graph
        started = time.perf_counter()
        reply = await self.call(arguments)
        metrics.update(ok=bool(reply.get("ok", False)), error_kind=reply.get("error_kind"),
                       latency_s=round(time.perf_counter() - started, 4))  # fmt: skip
        return ToolResponse(text=reply["rendered_content"]), 0.0, metrics

    async def call(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """``POST /tools/{name}`` with ``arguments``: the server's reply, or for a refused call (404/422) a reply
        whose text carries the server's reason. ``ToolServerError`` when the server is unreachable or failing."""
        path = f"/tools/{self.name}"
        last: str = ""
        for attempt in range(self.retries + 1):
            try:
                response = await self._client().post(path, json=arguments)
            except httpx.TimeoutException:
                last = f"no answer within {self.timeout_s:.0f} s"
            except httpx.TransportError as exc:
                last = f"cannot connect ({type(exc).__name__}: {exc})"
            else:
                if response.status_code < 500:
                    return _reply(response)
                last = f"HTTP {response.status_code}: {response.text[:200]}"
            if attempt < self.retries:
                await asyncio.sleep(0.5 * (attempt + 1))
        raise ToolServerError(f"tool server {self.server_url}{path} failed: {last}; check that `hopforge "
                              f"serve-tools` is running there and serves this graph")  # fmt: skip

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        self._graphs.pop(instance_id, None)

    async def aclose(self) -> None:
        """Close this loop's connection pool (tests; verl keeps tools for the life of the worker)."""
        client = self._clients.pop(id(asyncio.get_running_loop()), None)
        if client is not None:
            await client.aclose()


def _reply(response: httpx.Response) -> dict[str, Any]:
    """The tool reply of a non-5xx response. The server answers refused generic calls with
    ``{"detail", "rendered_content", "ok": false, "error_kind"}`` and malformed requests with ``{"detail": [...]}``;
    both become an observation the model can act on."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    if isinstance(body.get("rendered_content"), str):
        return {"rendered_content": body["rendered_content"], "ok": bool(body.get("ok", response.is_success)),
                "error_kind": body.get("error_kind")}  # fmt: skip
    detail = body.get("detail", response.text[:500])
    if isinstance(detail, list):
        detail = "; ".join(f"{'.'.join(map(str, d.get('loc', [])[1:])) or 'arguments'}: {d.get('msg', '')}"
                           for d in detail if isinstance(d, dict))  # fmt: skip
    return {"rendered_content": f"Error: {detail}", "ok": False,
            "error_kind": "bad_arguments" if response.status_code == 422 else "unknown_tool"}  # fmt: skip


__all__ = ["HopforgeKGTool", "ToolServerError"]
