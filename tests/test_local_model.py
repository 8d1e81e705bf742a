"""Embedded model lifecycle: free port, health wait, clean stop, clear errors. A tiny stand-in server replaces
llama.cpp here (the real one needs the `local` extra; README command 1 runs it)."""

from __future__ import annotations

import sys
import textwrap

import httpx
import pytest

from gateway.client import EndpointUnavailable, LLMGateway
from gateway.local import LocalModelServer, local_resolver_for
from schemas.config import load_settings

STANDIN = textwrap.dedent("""
    import sys, uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route
    async def models(request):
        return JSONResponse({"object": "list", "data": [{"id": "standin", "object": "model"}]})
    async def chat(request):
        return JSONResponse({"id": "c", "object": "chat.completion", "created": 0, "model": "standin",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": '{"status": "ok", "colour": "blue"}'}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}})
    app = Starlette(routes=[Route("/v1/models", models), Route("/v1/chat/completions", chat, methods=["POST"])])
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="error")
""")


@pytest.fixture
def standin(tmp_path):
    script = tmp_path / "standin.py"
    script.write_text(STANDIN)
    return [sys.executable, str(script), "{port}"]


def test_server_starts_answers_and_stops(standin, tmp_path):
    srv = LocalModelServer(command=standin, startup_timeout_s=30, log_path=tmp_path / "log")
    with srv:
        assert srv.running
        assert httpx.get(f"{srv.base_url}/models").status_code == 200
        pid = srv.proc.pid
    assert not srv.running
    import os

    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_server_that_dies_gives_clear_error(tmp_path):
    srv = LocalModelServer(command=[sys.executable, "-c", "import sys; print('bad model file'); sys.exit(3)"],
                           startup_timeout_s=10, log_path=tmp_path / "log")
    with pytest.raises(EndpointUnavailable, match="exited with code 3: bad model file"):
        srv.start()


def test_missing_gguf_is_clear(tmp_path):
    srv = LocalModelServer(tmp_path / "missing.gguf", startup_timeout_s=5)
    with pytest.raises(EndpointUnavailable, match="does not exist|llama-cpp-python"):
        srv.start()


async def test_gateway_uses_local_server_for_unconfigured_roles(standin, tmp_path, capsys):
    from tasks.ops.doctor import DoctorReply

    settings = load_settings(data_dir=tmp_path)
    with LocalModelServer(command=standin, startup_timeout_s=30) as srv:
        gw = LLMGateway(settings, local_resolver=local_resolver_for(settings, server=srv))
        r = await gw.structured("generator", [{"role": "user", "content": "hi"}], DoctorReply)
        assert r.ok and r.value.colour == "blue"
        ep = gw.resolve("generator")
        assert ep.is_local and ep.structured == "json_object_schema" and ep.base_url == srv.base_url
        await gw.aclose()
    assert "demo-quality" in capsys.readouterr().err


async def test_local_start_failure_is_a_typed_failure(tmp_path):
    from tasks.ops.doctor import DoctorReply

    def broken(role, ep):
        raise EndpointUnavailable("the embedded model server exited with code 1")

    gw = LLMGateway(load_settings(data_dir=tmp_path), local_resolver=broken)
    r = await gw.structured("generator", [{"role": "user", "content": "hi"}], DoctorReply)
    assert not r.ok and r.failure.kind == "endpoint_unavailable" and "role generator" in r.failure.message
