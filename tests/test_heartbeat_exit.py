"""A flow run ends when its body does: Prefect's synchronous engine no longer joins its heartbeat thread (which
sleeps in one-second steps), and heartbeats are still sent while the run is alive and never after it."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any

from prefect import flow, flow_engine

from flows import runtime


def test_the_sync_engine_hands_heartbeats_to_prefect_without_a_join(monkeypatch):
    calls: list[bool] = []

    @contextmanager
    def recorder(engine: Any, join_on_exit: bool = True):
        calls.append(join_on_exit)
        yield

    monkeypatch.setattr(flow_engine, "_send_heartbeats", recorder)
    runtime._prompt_heartbeat_exit()
    assert flow_engine._send_heartbeats is not recorder
    with flow_engine._send_heartbeats(object()):  # the engine's own call passes no flag
        pass
    with flow_engine._send_heartbeats(object(), join_on_exit=True):
        pass
    assert calls == [False, False]
    wrapped = flow_engine._send_heartbeats
    runtime._prompt_heartbeat_exit()  # idempotent: not wrapped twice
    assert flow_engine._send_heartbeats is wrapped


def test_heartbeats_are_sent_during_the_run_and_never_after_it(monkeypatch):
    assert getattr(flow_engine._send_heartbeats, "_hopforge_no_join", False), "flows.runtime did not install"
    sent: list[float] = []
    original_emit = flow_engine.FlowRunEngine._emit_flow_run_heartbeat

    def emit(self: Any, resource: Any, related: Any) -> None:
        sent.append(time.monotonic())

    monkeypatch.setattr(flow_engine.FlowRunEngine, "_emit_flow_run_heartbeat", emit)
    assert original_emit is not emit

    @flow
    def body() -> str:
        time.sleep(0.2)
        return "done"

    assert body() == "done"
    returned = time.monotonic()
    assert sent and min(sent) < returned  # the first heartbeat goes out when the run starts
    time.sleep(1.5)  # the heartbeat thread looks at its stop signal once a second
    assert all(s < returned for s in sent)  # nothing after the run ended
