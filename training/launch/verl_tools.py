"""verl tools that call hopforge's KG tool server (``hopforge serve-tools``) over HTTP.

verl (0.9.1, ``tools/tool_registry.py``) builds one ``HopforgeKGTool`` per entry of the run's tool config
(``training.rl_verl.verl_tool_config``): ``config`` holds ``server_url`` and ``timeout_s``, ``tool_schema`` the tool's
OpenAI schema (its name picks the server endpoint ``POST /tools/{name}``). Per rollout, verl's tool agent loop
calls ``create(create_kwargs=<row's extra_info.tools_kwargs[name].create_kwargs>)``, then
``execute(instance_id, arguments)``, then ``release(instance_id)``.

The graph is the row's: ``create_kwargs["graph_type"]`` (written by hopforge's export) replaces whatever graph the
model named, so a rollout always explores the graph its question was generated on; a call that names another
graph is counted in the tool metrics (``graph_type_replaced``). An IKG row (Graph-RFT's incomplete graph) also
carries ``create_kwargs["view_id"]``: every call of that rollout is answered on that view of the graph
(``POST /tools/{name}?view_id=...``), so the tools hide the facts the row's question was made incomplete by.

What the model sees: the server's ``rendered_content`` (the same text the SFT data shows), also for calls the
server rejects (unknown entity, bad arguments: the text says what was wrong). When the server cannot be reached,
fails (5xx) after one retry, or refuses the token (401/403), ``execute`` raises ``ToolServerError``; verl 0.9.1's
tool agent loop catches every exception of ``execute`` and answers that one call with the error text, so the run
itself must stop when that happens often: every outcome is counted here (``calls``, ``failures``) and reported to
the run's control actor (``training/launch/verl_cluster.py``), whose guard stops the launcher when more than
``max_tool_failure_rate`` of the last ``tool_failure_window`` calls failed. The launcher's checks refuse to start
against a server that is down or unreachable from any node.

The token (``Authorization: Bearer``): ``$HOPFORGE_TOOL_TOKEN`` of the worker's environment, else the one the
launcher handed the control actor (``training.tool_auth``). Loopback servers need none.

Runs inside the verl environment: imports verl, httpx and ray, and hopforge's ``training`` package (shipped to
every node with the job).
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

from training.tool_auth import auth_headers, tool_token


class ToolServerError(RuntimeError):
    """The tool server could not answer a call (down, timing out, failing with a 5xx, or refusing the token)."""


_UNSET = object()


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
        self._views: dict[str, str] = {}
        # One connection pool per event loop: an httpx.AsyncClient is bound to the loop it first ran on, and verl
        # may drive a tool from more than one loop (agent-loop workers, tests).
        self._clients: dict[int, httpx.AsyncClient] = {}
        self._token: Any = _UNSET
        self._control: Any = _UNSET
        self.calls = 0
        self.failures = 0

    async def _auth(self) -> dict[str, str]:
        """The token headers, resolved once: the environment's token, else the control actor's."""
        if self._token is _UNSET:
            token = tool_token()
            control = self._control_actor()
            if token is None and control is not None:
                token = await control.token.remote()
            self._token = token
        return auth_headers(self._token)

    def _control_actor(self) -> Any:
        if self._control is _UNSET:
            from training.launch.verl_cluster import control_handle

            self._control = control_handle()
        return self._control

    def _count(self, failed: bool, error: str | None = None) -> None:
        """One call's outcome: counted here and reported to the run's control actor (fire and forget)."""
        self.calls += 1
        self.failures += int(failed)
        control = self._control_actor()
        if control is not None:
            control.record.remote(failed, error)

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
        view = create_kwargs.get("view_id")
        if view:
            self._views[instance_id] = str(view)
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
        try:
            reply = await self.call(arguments, view_id=self._views.get(instance_id))
        except ToolServerError as exc:
            self._count(True, str(exc))
            raise
        self._count(False)
        metrics.update(ok=bool(reply.get("ok", False)), error_kind=reply.get("error_kind"),
                       latency_s=round(time.perf_counter() - started, 4))  # fmt: skip
        return ToolResponse(text=reply["rendered_content"]), 0.0, metrics

    async def call(self, arguments: dict[str, Any], *, view_id: str | None = None) -> dict[str, Any]:
        """``POST /tools/{name}`` with ``arguments`` (on IKG view ``view_id`` when given): the server's reply, or
        for a refused call (404/422) a reply whose text carries the server's reason. ``ToolServerError`` when the
        server is unreachable, failing or refusing the token."""
        path = f"/tools/{self.name}"
        params = {"view_id": view_id} if view_id else None
        last: str = ""
        headers = await self._auth()
        for attempt in range(self.retries + 1):
            try:
                response = await self._client().post(path, json=arguments, headers=headers, params=params)
            except httpx.TimeoutException:
                last = f"no answer within {self.timeout_s:.0f} s"
            except httpx.TransportError as exc:
                last = f"cannot connect ({type(exc).__name__}: {exc})"
            else:
                if response.status_code in (401, 403):
                    raise ToolServerError(f"tool server {self.server_url}{path} refused "
                                          f"{'the' if headers else 'a missing'} token (HTTP {response.status_code}): "
                                          "set HOPFORGE_TOOL_TOKEN to the server's value where the launcher runs")  # fmt: skip
                if response.status_code < 500:
                    return _reply(response)
                last = f"HTTP {response.status_code}: {response.text[:200]}"
            if attempt < self.retries:
                await asyncio.sleep(0.5 * (attempt + 1))
        raise ToolServerError(f"tool server {self.server_url}{path} failed: {last}; check that `hopforge "
                              f"serve-tools` is running there and serves this graph")  # fmt: skip

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        self._graphs.pop(instance_id, None)
        self._views.pop(instance_id, None)

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
