"""The HTTP tool server: Omne-R1-compatible endpoints, generic tool calls, batches, validation, stats."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from flows.tool_server import create_app
from flows.tool_workers import serve
from schemas.tools import tool_schemas
from tasks.graph.importers import read_triples
from tasks.env.index import HashingEmbedder
from tasks.env.tools import ToolEnvironment

GRAPHS = Path(__file__).resolve().parent.parent / "flows" / "demo" / "graphs"


@pytest.fixture(scope="module")
def env() -> ToolEnvironment:
    graphs = [read_triples(GRAPHS / f"{d}.jsonl", d).to_graph() for d in ("cs", "history")]
    return ToolEnvironment.from_graphs(graphs, HashingEmbedder())


@pytest.fixture
def client(env):
    with TestClient(create_app(env)) as c:  # the context manager runs the lifespan (the matcher batcher)
        yield c


def test_health_and_tool_listing(client):
    health = client.get("/health").json()
    assert health == {
        "status": "ok",
        "graph_types": ["cs", "history"],
        "tools": ["entity_matcher", "node_info", "relation_search", "neighbor_search", "search"],
        # which search answers the entity matcher (exact below ANN_MIN_ROWS; "hnsw" once a graph serves)
        "search": {"cs": {"serving": "exact", "hnsw": "off"}, "history": {"serving": "exact", "hnsw": "off"}},
        "worker": health["worker"],
    }
    tools = client.get("/tools", params={"graph_type": "cs"}).json()["tools"]
    assert tools == tool_schemas(["entity_matcher", "node_info", "relation_search", "neighbor_search", "search"])
    assert client.get("/tools", params={"graph_type": "bio"}).status_code == 404


def test_omne_endpoints_render_exactly_what_the_environment_renders(client, env):
    r = client.post("/cs/get_precise_entity_names", json={"node_name": "Alan Turnig"})
    assert r.status_code == 200
    assert r.json() == {"rendered_content": env.call("entity_matcher", {"node_name": "Alan Turnig", "graph_type": "cs"}).text}
    assert r.json()["rendered_content"].splitlines()[1].startswith("1. Alan Turing [person]")

    r = client.post("/cs/get_node", json={"node_name": "Alan Turing"})
    assert r.json() == {"rendered_content": env.call("node_info", {"node_name": "Alan Turing", "graph_type": "cs"}).text}
    assert r.json()["rendered_content"].startswith("Entity: Alan Turing\n")

    # An unknown entity is a normal reply: the observation is for the model.
    r = client.post("/history/get_node", json={"node_name": "Julius Ceasar", "extra": "ignored"})
    assert r.status_code == 200
    assert r.json()["rendered_content"].startswith('No entity named "Julius Ceasar" in the history graph. Closest entities: Julius Caesar')


def test_omne_endpoints_validate_input(client):
    r = client.post("/bio/get_node", json={"node_name": "x"})
    assert r.status_code == 404
    assert r.json() == {"detail": "Unknown graph_type 'bio'. Loaded graph types: cs, history."}
    r = client.post("/cs/get_precise_entity_names", json={"node_name": "x" * 201})
    assert r.status_code == 422
    assert r.json()["detail"][0]["msg"] == "String should have at most 200 characters"
    assert "x" * 201 not in r.text  # the rejected input is not echoed back
    for bad in ({}, {"node_name": ""}, {"node_name": 3}):
        assert client.post("/cs/get_node", json=bad).status_code == 422
    assert client.post("/cs/get_node", content=b"not json", headers={"content-type": "application/json"}).status_code == 422


def test_generic_tool_endpoint(client, env):
    args = {"entity": "Alan Turing", "relation": "studied at", "graph_type": "cs"}
    r = client.post("/tools/neighbor_search", json=args)
    assert r.status_code == 200
    assert r.json() == {"rendered_content": env.call("neighbor_search", args).text, "ok": True, "error_kind": None}

    r = client.post("/tools/search", json={"entity": "Nobody", "graph_type": "cs"})
    assert r.status_code == 200 and r.json()["ok"] is False and r.json()["error_kind"] == "unknown_entity"

    r = client.post("/tools/node_info", json={"node": "Alan Turing", "graph_type": "cs"})
    assert r.status_code == 422 and r.json()["error_kind"] == "bad_arguments"
    assert r.json()["detail"].startswith("Bad arguments for node_info:")

    r = client.post("/tools/node_info", json={"node_name": "Alan Turing", "graph_type": "bio"})
    assert r.status_code == 404 and r.json()["error_kind"] == "unknown_graph"

    r = client.post("/tools/teleport", json={})
    assert r.status_code == 404 and r.json()["detail"].startswith("Unknown tool 'teleport'.")

    r = client.post("/tools/search", json={"entity": "y" * 500, "graph_type": "cs"})
    assert r.status_code == 422 and "the limit is 200" in r.json()["detail"]
    r = client.post("/tools/search", json={f"a{i}": "x" for i in range(9)})
    assert r.status_code == 422 and "at most 8 arguments" in r.json()["detail"]
    assert client.post("/tools/search", json=["Alan Turing"]).status_code == 422


def test_batch_keeps_order_and_per_call_errors(client, env):
    calls = [
        {"name": "entity_matcher", "arguments": {"node_name": "codebreaking", "graph_type": "cs"}},
        {"name": "node_info", "arguments": {"node_name": "Julius Caesar", "graph_type": "history"}},
        {"name": "entity_matcher", "arguments": {"node_name": "Rome", "graph_type": "history"}},
        {"name": "teleport", "arguments": {}},
        {"name": "search", "arguments": {"entity": "Nobody", "graph_type": "cs"}},
    ]
    r = client.post("/batch", json={"calls": calls})
    assert r.status_code == 200
    results = r.json()["results"]
    assert [x["rendered_content"] for x in results] == [env.call(c["name"], c["arguments"]).text for c in calls]
    assert [x["ok"] for x in results] == [True, True, True, False, False]
    assert results[3]["error_kind"] == "unknown_tool"

    assert client.post("/batch", json={"calls": []}).status_code == 422
    assert client.post("/batch", json={"calls": calls * 13}).status_code == 422  # 65 > max_batch
    long = [{"name": "search", "arguments": {"entity": "z" * 300, "graph_type": "cs"}}]
    r = client.post("/batch", json={"calls": long})
    assert r.status_code == 422 and r.json()["detail"].startswith("calls[0] (search)")


def test_stats_count_calls_errors_and_latency(env):
    with TestClient(create_app(env)) as c:
        c.post("/cs/get_node", json={"node_name": "Alan Turing"})
        c.post("/cs/get_node", json={"node_name": "Nobody at all"})
        c.post("/cs/get_precise_entity_names", json={"node_name": "turing"})
        stats = c.get("/stats").json()
    assert set(stats["tools"]) == {"entity_matcher", "node_info"}
    node = stats["tools"]["node_info"]
    assert node["calls"] == 2 and node["errors"] == {"unknown_entity": 1}
    assert set(node["latency_ms"]) == {"mean", "p50", "p99", "max"}
    assert 0 < node["latency_ms"]["p50"] <= node["latency_ms"]["max"]
    assert stats["entity_matcher_batches"] == {"batches": 1, "mean_size": 1.0, "max_size": 1}


def test_works_without_lifespan(env):
    c = TestClient(create_app(env))  # no context manager: no batcher, calls run one by one
    r = c.post("/cs/get_precise_entity_names", json={"node_name": "Alan Turing"})
    assert r.status_code == 200 and r.json()["rendered_content"].splitlines()[1].startswith("1. Alan Turing")


async def test_concurrent_matcher_calls_are_coalesced(env, monkeypatch):
    batch_sizes: list[int] = []
    real = env.call_many

    def slow_call_many(calls):
        batch_sizes.append(len(calls))
        time.sleep(0.02)  # keep one batch busy so the next requests queue behind it
        return real(calls)

    monkeypatch.setattr(env, "call_many", slow_call_many)
    app = create_app(env, max_batch=16)
    queries = [f"query {i} turing" for i in range(40)]
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://tools.test") as c:
            replies = await asyncio.gather(
                *(c.post("/cs/get_precise_entity_names", json={"node_name": q}) for q in queries)
            )
    assert [r.json()["rendered_content"] for r in replies] == [
        env.call("entity_matcher", {"node_name": q, "graph_type": "cs"}).text for q in queries
    ]
    assert sum(batch_sizes) == 40 and max(batch_sizes) > 1 and max(batch_sizes) <= 16


def test_create_app_rejects_bad_limits(env):
    with pytest.raises(ValueError):
        create_app(env, max_batch=0)


def test_serve_binds_loopback_by_default(env, monkeypatch):
    seen = {}

    def fake_run(app, **kwargs):
        seen.update(kwargs, app=app)

    import uvicorn

    monkeypatch.setattr(uvicorn, "run", fake_run)
    serve(env, max_name_len=50)
    assert seen["host"] == "127.0.0.1" and seen["port"] == 8765 and seen["access_log"] is False
    assert seen["app"].state.env is env


def test_serve_can_cap_blas_threads(env, monkeypatch, caplog):
    import sys
    import types

    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: None)
    calls: list[tuple[int, str]] = []
    fake = types.ModuleType("threadpoolctl")
    fake.threadpool_limits = lambda limits, user_api: calls.append((limits, user_api))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "threadpoolctl", fake)
    serve(env, blas_threads=1)
    assert calls == [(1, "blas")]
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # not installed: a warning, no failure
    serve(env, blas_threads=1)
    assert "threadpoolctl is not installed" in caplog.text


def test_tool_environment_from_the_warehouse(tmp_path):
    """`hopforge serve-tools` builds its environment from the current snapshots in the warehouse."""
    from pathlib import Path

    from flows.tools_env import tool_environment
    from schemas.config import load_settings
    from tasks.graph.importers import read_triples
    from warehouse.db import Warehouse
    from warehouse.graphs import write_import

    demo = Path(__file__).resolve().parent.parent / "flows" / "demo" / "graphs"
    settings = load_settings(data_dir=tmp_path)
    wh = Warehouse(settings.warehouse_path)
    write_import(wh, read_triples(demo / "cs.jsonl", "cs"), build_run_id=None)
    env = tool_environment(settings, wh, embedder="hashing")
    assert env.domains == ("cs",)
    obs = env.call("node_info", {"node_name": "alan turing", "graph_type": "cs"})
    assert obs.ok and "Bletchley Park" in obs.text
    import pytest

    with pytest.raises(ValueError, match="no graph for domain"):
        tool_environment(settings, wh, ["history"], embedder="hashing")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_SERVE_TWO_WORKERS = """
import sys
from pathlib import Path
from flows.tool_workers import serve
from tasks.graph.importers import read_triples
from tasks.env.index import HashingEmbedder
from tasks.env.tools import ToolEnvironment
graphs = Path(sys.argv[1])
env = ToolEnvironment.from_graphs([read_triples(graphs / "cs.jsonl", "cs").to_graph()], HashingEmbedder())
serve(env, port=int(sys.argv[2]), workers=2, log_level="warning")
"""


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="counts the worker processes in /proc")
def test_serve_with_workers_answers_from_forked_workers_and_stops_on_sigterm(env):
    import signal
    import subprocess
    import sys

    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-c", _SERVE_TWO_WORKERS, str(GRAPHS), str(port)])
    try:
        deadline = time.monotonic() + 60
        replies = []
        while time.monotonic() < deadline and len(replies) < 20:
            try:
                r = httpx.post(f"http://127.0.0.1:{port}/cs/get_node", json={"node_name": "Alan Turing"}, timeout=5)
            except httpx.TransportError:
                time.sleep(0.2)
                continue
            replies.append(r)
        assert len(replies) == 20
        expected = env.call("node_info", {"node_name": "Alan Turing", "graph_type": "cs"}).text
        assert all(r.status_code == 200 and r.json() == {"rendered_content": expected} for r in replies)
        workers = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        assert len(workers) == 2
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
    assert code == 0
    assert not any(Path(f"/proc/{w}").exists() for w in workers)  # the supervisor reaped its workers


def test_serve_workers_refuses_a_taken_port_and_bad_worker_counts():
    import socket

    from flows.tool_workers import serve_workers
    from schemas.errors import InputError

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(InputError, match=f"cannot listen on 127.0.0.1:{port}"):
            serve_workers(lambda: None, "127.0.0.1", port, 2)  # type: ignore[arg-type, return-value]
    with pytest.raises(InputError, match="workers must be >= 1"):
        serve_workers(lambda: None, "127.0.0.1", _free_port(), 0)  # type: ignore[arg-type, return-value]


def test_serve_workers_stops_when_workers_die_right_after_starting():
    from flows.tool_workers import serve_workers

    def broken_app():
        raise KeyError("a bug in building the app")

    with pytest.raises(RuntimeError, match="right after starting"):
        serve_workers(broken_app, "127.0.0.1", _free_port(), 2, log_level="warning")


# -- the shared token -----------------------------------------------------------------------------------------------

TOKEN = "t0ken-for-tests"


def test_token_guards_every_route_including_the_fast_path(env):
    open_app = TestClient(create_app(env))
    with TestClient(create_app(env, token=TOKEN)) as guarded:
        for method, path, body in (("get", "/health", None), ("get", "/tools", None), ("get", "/stats", None),
                                   ("post", "/cs/get_node", {"node_name": "Alan Turing"}),
                                   ("post", "/tools/node_info", {"node_name": "Alan Turing", "graph_type": "cs"})):
            call = getattr(guarded, method)
            kwargs = {"json": body} if body is not None else {}
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
                refused = call(path, headers=headers, **kwargs)
                assert refused.status_code == 401, (path, headers)
                assert refused.headers["www-authenticate"] == "Bearer"
                assert "HOPFORGE_TOOL_TOKEN" in refused.json()["detail"] and TOKEN not in refused.text
            ok = call(path, headers={"Authorization": f"Bearer {TOKEN}"}, **kwargs)
            assert ok.status_code == 200, path
        # with the token, the Omne-R1 fast path answers the same bytes as a server without one
        body = {"node_name": "Alan Turing"}
        assert guarded.post("/cs/get_node", json=body, headers={"Authorization": f"Bearer {TOKEN}"}).content == \
            open_app.post("/cs/get_node", json=body).content  # fmt: skip


def test_serve_refuses_to_listen_beyond_loopback_without_a_token(env, monkeypatch):
    from schemas.errors import InputError

    seen = {}
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(kw, app=app))
    with pytest.raises(InputError, match=r"^serving the tools on 0.0.0.0 \(beyond loopback\) needs a shared token: "
                                         r"set HOPFORGE_TOOL_TOKEN"):
        serve(env, host="0.0.0.0")
    assert not seen  # refused before anything listens
    serve(env, host="0.0.0.0", token=TOKEN, prerender_entities=0)
    assert seen["host"] == "0.0.0.0"
    app = TestClient(seen["app"])
    assert app.get("/health").status_code == 401
    assert app.get("/health", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    serve(env, host="localhost", prerender_entities=0)  # loopback needs none
    assert TestClient(seen["app"]).get("/health").status_code == 200


def test_serve_tools_cli_refuses_a_public_host_without_a_token(monkeypatch):
    from typer.testing import CliRunner

    from flows.cli import app

    monkeypatch.delenv("HOPFORGE_TOOL_TOKEN", raising=False)
    result = CliRunner().invoke(app, ["serve-tools", "--host", "0.0.0.0", "--embedder", "hashing"])
    assert result.exit_code != 0
    assert "--host 0.0.0.0 listens beyond loopback: set HOPFORGE_TOOL_TOKEN" in result.output


class _SlowMatcher:
    """An environment whose batched matcher takes ``cost_s`` whatever the batch size (as a full-matrix search
    does) and records the size of every batch."""

    def __init__(self, cost_s: float) -> None:
        self.cost_s = cost_s
        self.sizes: list[int] = []

    def call_many(self, calls):
        from schemas.tools import Observation

        self.sizes.append(len(calls))
        time.sleep(self.cost_s)
        return [Observation(text=args["node_name"]) for _, args in calls]


async def test_a_busy_batcher_gathers_the_next_batch_and_an_idle_one_does_not_wait():
    from flows.tool_server import ToolStats, _MatcherBatcher

    fake = _SlowMatcher(0.12)
    batcher = _MatcherBatcher(fake, max_batch=64, stats=ToolStats(), gather=0.5)  # type: ignore[arg-type]
    gathered: list[int] = []  # how many calls each gathering wait waited for
    gather = batcher._gather

    async def counted_gather(want: int, until: float) -> None:
        gathered.append(want)
        await gather(want, until)

    batcher._gather = counted_gather  # type: ignore[method-assign]
    batcher.start()
    try:
        assert (await batcher.submit({"node_name": "lone"})).text == "lone"
        assert gathered == []  # idle: the lone call's batch started without a gathering wait

        async def client(i: int, delay: float) -> str:
            await asyncio.sleep(delay)
            return (await batcher.submit({"node_name": f"q{i}"})).text

        # A busy round of 8 calls, then the same 8 callers sending again a few milliseconds apart, as clients do
        # once their replies arrive: the second round is one batch, not a batch of the first arrival and another.
        assert await asyncio.gather(*(client(i, 0) for i in range(8))) == [f"q{i}" for i in range(8)]
        again = await asyncio.gather(*(client(i, 0.004 * i) for i in range(8)))
        assert again == [f"q{i}" for i in range(8)]
    finally:
        await batcher.stop()
    assert fake.sizes[0] == 1 and sum(fake.sizes) == 17
    assert fake.sizes[-1] == 8, fake.sizes


async def test_the_fast_path_answers_generic_tool_calls_as_the_fastapi_route_does(env):
    """``POST /tools/<name>`` is answered by the plain ASGI layer (FastAPI never sees a well-formed call) with the
    bytes and status the FastAPI route writes; a body the route would refuse, and a call on a view, go to it."""
    from flows.tool_server import ToolStats, _CallRunner, _MatcherBatcher, _OmneFastPath, _ResultCache

    reached: list[bytes] = []

    async def fastapi_stand_in(scope, receive, send):
        reached.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b"route"})

    async def call(layer, path, body, query=b""):
        sent = []

        async def receive():
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "method": "POST", "path": path, "query_string": query,
                 "headers": [(b"content-type", b"application/json")]}
        await layer(scope, receive, send)
        return sent[0]["status"], sent[1]["body"]

    stats = ToolStats()
    runner = _CallRunner(env, _MatcherBatcher(env, 64, stats), stats, _ResultCache(0), 64)
    layer = _OmneFastPath(fastapi_stand_in, runner, {}, 200, None, tool_routes={"/tools/node_info": "node_info"},
                          max_args=8)
    with TestClient(create_app(env)) as client:
        for arguments in ({"node_name": "Alan Turing", "graph_type": "cs"}, {"node_name": "Nobody At All"},
                          {"node_name": "Alan Turing", "graph_type": "no-such-graph"}):
            body = json.dumps(arguments).encode()
            status, payload = await call(layer, "/tools/node_info", body)
            slow = client.post("/tools/node_info?view_id=", content=body, headers={"content-type": "application/json"})
            assert (status, payload) == (slow.status_code, slow.content), arguments
        assert reached == []
        for bad in (b"[1, 2]", b"{", json.dumps({"node_name": "x" * 201}).encode(),
                    json.dumps({f"a{i}": 1 for i in range(9)}).encode()):
            assert await call(layer, "/tools/node_info", bad) == (299, b"route")
        assert await call(layer, "/tools/node_info", b"{}", query=b"view_id=v1") == (299, b"route")
        assert len(reached) == 5
