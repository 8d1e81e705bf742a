"""The pieces the kill -9 tests rest on, checked fast: a frozen child's descendants and what outlives it, the fake's
answered stamps, the gateway's cache key as the harness computes it, and how a killed process's calls are split."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
import threading
import time

import openai
import pytest
from pydantic import BaseModel

from testing.fake import Fault, RecordedRequest
from tests.reliability.harness import (
    Watched,
    calls_at_kill,
    request_digest,
    response_cache_key,
    still_running,
    stored_keys,
)

# A child that starts `sleep 60` (tied to it with PR_SET_PDEATHSIG, or not), says so once the sleep's command line
# reads back, and freezes itself as the stage children do at a kill point (tests/reliability/stage_child.py).
CHILD = textwrap.dedent("""
    import ctypes, os, signal, subprocess, sys

    def tie():
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG

    sleep = subprocess.Popen(["sleep", "60"], preexec_fn=tie if sys.argv[1] == "tied" else None)
    # Popen returns once exec has begun; the new command line is readable a moment later
    while not open(f"/proc/{sleep.pid}/cmdline", "rb").read():
        os.sched_yield()
    print("started", flush=True)
    os.write(int(os.environ["RELIABILITY_STOP_FD"]), b"s")
    os.kill(os.getpid(), signal.SIGSTOP)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and uses PR_SET_PDEATHSIG")
@pytest.mark.parametrize("tie, survivors", [("untied", 1), ("tied", 0)])
def test_a_frozen_child_is_killed_and_what_outlives_it_is_found(tmp_path, tie, survivors):
    child = Watched([sys.executable, "-c", CHILD, tie], cwd=tmp_path, env=dict(os.environ))
    done = child.wait(60)
    assert done.returncode == -signal.SIGKILL and "started" in done.stdout
    kill = child.kill
    assert kill is not None and [p.command for p in kill.descendants] == ["sleep 60"]
    left = still_running(kill.descendants, grace_s=1.0)
    for p in left:  # ours to end: the child started it
        os.kill(p.pid, signal.SIGKILL)
    assert len(left) == survivors


def test_a_child_that_ends_on_its_own_is_not_a_kill(tmp_path):
    child = Watched([sys.executable, "-c", "print('done')"], cwd=tmp_path, env=dict(os.environ))
    done = child.wait(60)
    assert done.returncode == 0 and child.kill is None


def test_the_fake_stamps_an_answer_once_it_is_handed_out(fake_llm):
    fake_llm.set_fault(Fault(latency_s=0.5))
    client = openai.OpenAI(base_url=fake_llm.base_url, api_key="x", max_retries=0)
    asked = threading.Thread(target=lambda: client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "hi"}]))
    asked.start()
    deadline = time.monotonic() + 5
    while not fake_llm.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fake_llm.requests and fake_llm.requests[0].answered is None  # recorded, still in flight
    asked.join(10)
    r = fake_llm.requests[0]
    while r.answered is None and time.monotonic() < deadline + 5:  # stamped just after the client could read it
        time.sleep(0.01)
    assert r.answered is not None and r.answered - r.time >= 0.5


class Pick(BaseModel):
    path_id: str
    question: str


async def test_response_cache_key_is_the_gateways(fake_llm, tmp_path):
    from gateway.client import LLMGateway
    from schemas.config import load_settings

    settings = load_settings(data_dir=tmp_path, roles={
        "generator": {"base_url": fake_llm.base_url, "model": "fake-model", "max_concurrency": 4}})
    gw = LLMGateway(settings)
    msgs = [[{"role": "user", "content": f"question {i}"}] for i in range(3)]
    await asyncio.gather(*(gw.structured("generator", m, Pick) for m in msgs),
                         gw.chat("generator", msgs[0], params={"max_tokens": 50}))
    bodies = [r.json for r in fake_llm.requests if r.path.endswith("/chat/completions")]
    assert len(bodies) == 4
    assert stored_keys(settings.cache_path) == {response_cache_key(b) for b in bodies}


def _request(text: str, answered: float | None) -> RecordedRequest:
    body = {"model": "m", "messages": [{"role": "user", "content": text}], "temperature": 0.0}
    return RecordedRequest(method="POST", path="/v1/chat/completions", json=body, headers={}, time=0.0,
                           responder=None, status=200, answered=answered)


def test_calls_at_kill_splits_by_answer_and_store():
    stored_early, lost_early, late, never = (_request("a", 1.0), _request("b", 2.0), _request("c", 11.0),
                                             _request("d", None))
    seen = calls_at_kill([stored_early, lost_early, late, never], at=10.0,
                         stored={response_cache_key(stored_early.json)})
    digest = lambda r: request_digest(r.json)  # noqa: E731 - a short local name
    assert seen.sent == {digest(r) for r in (stored_early, lost_early, late, never)}
    assert seen.in_flight == {digest(late), digest(never)}
    assert seen.unstored == {digest(lost_early)}
