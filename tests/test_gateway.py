"""The LLM gateway against the loopback fake: structured output, re-asks, faults, cache, usage, limits."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest
from pydantic import BaseModel, Field

from gateway.cache import ResponseCache
from gateway.client import LLMGateway
from testing.fake import Fault
from schemas.config import load_settings


class QA(BaseModel):
    path: list[str] = Field(min_length=2)
    question: str
    answer: str


class Verdict(BaseModel):
    valid: bool
    reason: str


def make_gateway(fake, tmp_path, *, max_retries=3, timeout_s=5.0, concurrency=8, cache_mode="on", structured="json_schema", **kw):
    roles = {r: {"base_url": fake.base_url, "model": "fake-model", "max_retries": max_retries, "timeout_s": timeout_s,
                 "max_concurrency": concurrency, "structured": structured} for r in ("generator", "verifier", "teacher")}
    settings = load_settings(data_dir=tmp_path, roles=roles, cache={"mode": cache_mode})
    return LLMGateway(settings, backoff_base_s=0.01, backoff_cap_s=0.05, **kw)


MSG = [{"role": "user", "content": "Make a question from Paris to France."}]


async def test_structured_valid_reply_and_cache(fake_llm, tmp_path):
    fake_llm.add(schema_name="QA", reply={"path": ["Paris", "France"], "question": "Where is Paris?", "answer": "France"})
    gw = make_gateway(fake_llm, tmp_path)
    r = await gw.structured("generator", MSG, QA)
    assert r.ok and r.value.answer == "France" and not r.cached
    r2 = await gw.structured("generator", MSG, QA)
    assert r2.ok and r2.cached and r2.value == r.value
    assert fake_llm.calls() == 1
    u = gw.ledger.role("generator")
    assert (u.calls, u.cache_hits) == (1, 1) and u.prompt_tokens > 0
    body = fake_llm.requests[0].json
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "QA"


async def test_llama_cpp_style_response_format(fake_llm, tmp_path):
    fake_llm.add(schema_name="QA", reply={"path": ["a", "b"], "question": "q", "answer": "b"})
    gw = make_gateway(fake_llm, tmp_path, structured="json_object_schema")
    r = await gw.structured("generator", MSG, QA)
    assert r.ok
    fmt = fake_llm.requests[0].json["response_format"]
    assert fmt["type"] == "json_object" and fmt["schema"]["title"] == "QA"


async def test_per_request_enum_schema_is_sent_and_enforced(fake_llm, tmp_path):
    names = ["Paris", "France", "Europe"]
    # First reply uses a name outside the enum (a server that ignores the schema); the re-ask fixes it.
    fake_llm.add(schema_name="QA", times=1, reply={"path": ["Paris", "Germany"], "question": "q?", "answer": "Germany"})
    fake_llm.add(schema_name="QA", reply={"path": ["Paris", "France"], "question": "q?", "answer": "France"})
    gw = make_gateway(fake_llm, tmp_path)
    r = await gw.structured("generator", MSG, QA, enums={"answer": names, "path[]": names})
    assert r.ok and r.value.answer == "France" and r.reasks == 1
    schema = fake_llm.requests[0].json["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["answer"]["enum"] == names
    assert schema["properties"]["path"]["items"]["enum"] == names
    reask = fake_llm.requests[1].json["messages"][-1]["content"]
    assert "Germany" in reask and "not one of the allowed values" in reask


async def test_every_schema_constraint_is_enforced_whatever_the_endpoint_did(fake_llm, tmp_path):
    """The fake, like most endpoints, does not honour ``pattern`` or ``minLength``: the gateway holds the reply
    to them anyway, says which constraint failed, and re-asks with that reason."""
    schema = {"type": "object", "required": ["path", "question", "answer"], "properties": {
        "path": {"type": "array", "items": {"type": "string"}, "minItems": 2},
        "question": {"type": "string", "minLength": 12, "pattern": "Paris"},
        "answer": {"type": "string"}}}  # fmt: skip
    fake_llm.add(schema_name="QA", times=1, reply={"path": ["Paris", "France"], "question": "Where?", "answer": "France"})
    fake_llm.add(schema_name="QA", times=1, reply={"path": ["Paris", "France"], "question": "Which country is it in?",
                                                  "answer": "France"})  # fmt: skip
    fake_llm.add(schema_name="QA", reply={"path": ["Paris", "France"], "question": "Which country is Paris in?",
                                         "answer": "France"})  # fmt: skip
    gw = make_gateway(fake_llm, tmp_path, cache_mode="off")
    bad = await gw.structured("generator", MSG, QA, schema=schema, max_reasks=1)
    assert not bad.ok and bad.failure.kind == "validation"
    first = fake_llm.requests[1].json["messages"][-1]["content"]
    assert "question: 6 characters, fewer than the minimum 12" in first and "does not match the required pattern 'Paris'" in first
    assert "question: 'Which country is it in?' does not match the required pattern 'Paris'" in str(bad.failure)
    # the same schema is what the endpoint was sent
    assert fake_llm.requests[0].json["response_format"]["json_schema"]["schema"] == schema
    good = await gw.structured("generator", MSG, QA, schema=schema, max_reasks=0)
    assert good.ok and good.value.question == "Which country is Paris in?"


async def test_validation_failure_reasks_then_returns_typed_failure(fake_llm, tmp_path):
    fake_llm.add(schema_name="QA", reply="I think the answer is France.")
    gw = make_gateway(fake_llm, tmp_path)
    r = await gw.structured("generator", MSG, QA, max_reasks=2)
    assert not r.ok and r.failure.kind == "validation"
    assert r.failure.last_raw_text == "I think the answer is France."
    assert r.failure.attempts == 3 and fake_llm.calls() == 3
    assert len(gw.cache) == 0  # a failure is never stored
    assert gw.ledger.role("generator").failures["validation"] == 1


async def test_malformed_json_then_good(fake_llm, tmp_path):
    fake_llm.add(schema_name="Verdict", times=1, fault=Fault(malformed=True), reply={"valid": True, "reason": "fine"})
    fake_llm.add(schema_name="Verdict", reply={"valid": True, "reason": "fine"})
    gw = make_gateway(fake_llm, tmp_path)
    r = await gw.structured("verifier", MSG, Verdict)
    assert r.ok and r.reasks == 1


async def test_truncated_output_is_a_typed_failure(fake_llm, tmp_path):
    fake_llm.add(schema_name="Verdict", fault=Fault(truncated=True), reply={"valid": True, "reason": "x" * 50})
    gw = make_gateway(fake_llm, tmp_path)
    r = await gw.structured("verifier", MSG, Verdict, max_reasks=1)
    assert not r.ok and r.failure.kind == "truncated"
    assert r.failure.last_raw_text  # the cut text is kept for inspection


@pytest.mark.parametrize("style", ["field", "think_tag"])
async def test_reasoning_is_separated_and_kept(fake_llm, tmp_path, style):
    fake_llm.add(schema_name="Verdict", reasoning="First hop is fine. Second hop too.", reasoning_style=style,
                 reply={"valid": True, "reason": "ok"})
    gw = make_gateway(fake_llm, tmp_path)
    r = await gw.structured("verifier", MSG, Verdict)
    assert r.ok and r.value.valid
    assert r.reasoning == "First hop is fine. Second hop too."
    chat = await gw.chat("verifier", [{"role": "user", "content": "explain"}])
    assert chat.ok and "<think>" not in chat.text


async def test_429_with_retry_after_is_honoured(fake_llm, tmp_path):
    fake_llm.add(schema_name="Verdict", times=1, fault=Fault(status=429, retry_after=0.3))
    fake_llm.add(schema_name="Verdict", reply={"valid": False, "reason": "leaks"})
    gw = make_gateway(fake_llm, tmp_path)
    started = time.perf_counter()
    r = await gw.structured("verifier", MSG, Verdict)
    assert r.ok and not r.value.valid
    assert time.perf_counter() - started >= 0.3  # waited as the server asked, not the 0.01 s backoff
    assert gw.ledger.role("verifier").failures["retried_rate_limit"] == 1


async def test_500_is_retried_then_gives_up(fake_llm, tmp_path):
    fake_llm.set_fault(Fault(status=500))
    gw = make_gateway(fake_llm, tmp_path, max_retries=2)
    r = await gw.structured("verifier", MSG, Verdict)
    assert not r.ok and r.failure.kind == "server_error"
    assert fake_llm.calls() == 3
    assert "role verifier" in r.failure.message and fake_llm.base_url in r.failure.message


async def test_hang_past_timeout_is_retried(fake_llm, tmp_path):
    # The first reply hangs a minute (the server's stop ends it); 2 s is past it for certain and far more than a
    # plain reply takes on a loaded machine, so the one retry is answered.
    fake_llm.add(schema_name="Verdict", times=1, fault=Fault(hang_s=60.0))
    fake_llm.add(schema_name="Verdict", reply={"valid": True, "reason": "ok"})
    gw = make_gateway(fake_llm, tmp_path, timeout_s=2.0)
    r = await gw.structured("verifier", MSG, Verdict)
    assert r.ok
    assert gw.ledger.role("verifier").failures["retried_timeout"] == 1


async def test_unreachable_endpoint_one_line(tmp_path):
    from gateway.local import free_port

    port = free_port()
    settings = load_settings(data_dir=tmp_path, roles={"judge": {"base_url": f"http://127.0.0.1:{port}/v1", "model": "m", "max_retries": 1}})
    gw = LLMGateway(settings, backoff_base_s=0.01)
    r = await gw.structured("judge", MSG, Verdict)
    assert not r.ok and r.failure.kind == "connection"
    msg = str(r.failure)
    assert "role judge" in msg and f"127.0.0.1:{port}" in msg and "running" in msg and "\n" not in msg


@pytest.mark.parametrize("status, kind, words", [(401, "auth", "API key"), (404, "not_found", "model name"), (400, "bad_request", "rejected")])
async def test_permanent_errors_fail_at_once(fake_llm, tmp_path, status, kind, words):
    fake_llm.set_fault(Fault(status=status))
    gw = make_gateway(fake_llm, tmp_path, max_retries=5)
    r = await gw.structured("generator", MSG, QA)
    assert not r.ok and r.failure.kind == kind and words in r.failure.message
    assert fake_llm.calls() == 1


async def test_garbage_in_a_batch_does_not_stop_the_batch(fake_llm, tmp_path):
    fake_llm.add(prompt_contains="item 3", reply="<<garbage>>")
    fake_llm.add(schema_name="Verdict", reply={"valid": True, "reason": "ok"})
    gw = make_gateway(fake_llm, tmp_path)
    msgs = [[{"role": "user", "content": f"item {i}"}] for i in range(6)]
    results = await gw.gather(gw.structured("verifier", m, Verdict, max_reasks=0) for m in msgs)
    assert [r.ok for r in results] == [True, True, True, False, True, True]
    assert results[3].failure.last_raw_text == "<<garbage>>"


async def test_concurrency_limit_is_per_endpoint_and_shared(fake_llm, tmp_path):
    fake_llm.set_fault(Fault(latency_s=0.1))
    gw = make_gateway(fake_llm, tmp_path, concurrency=3, cache_mode="off")
    msgs = [[{"role": "user", "content": f"n{i}"}] for i in range(12)]
    await gw.gather(gw.chat("generator", m) for m in msgs)
    from gateway.client import endpoint_limiter

    lim = endpoint_limiter(fake_llm.base_url, "fake-model", 3)
    assert lim.peak == 3
    # in flight at the server never exceeded 3: check arrival times against 0.1 s service time
    arrivals = sorted(r.time for r in fake_llm.requests)
    for i in range(len(arrivals) - 3):
        assert arrivals[i + 3] - arrivals[i] >= 0.09


def test_limit_holds_across_threads_and_event_loops(fake_llm, tmp_path):
    fake_llm.set_fault(Fault(latency_s=0.05))
    gw = make_gateway(fake_llm, tmp_path, concurrency=2, cache_mode="off")

    def worker(k):
        async def go():
            await gw.gather(gw.chat("teacher", [{"role": "user", "content": f"t{k}-{i}"}]) for i in range(5))
            await gw.aclose()
        asyncio.run(go())

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    from gateway.client import endpoint_limiter

    assert endpoint_limiter(fake_llm.base_url, "fake-model", 2).peak == 2
    assert fake_llm.calls() == 15


async def test_cache_can_be_switched_off(fake_llm, tmp_path):
    gw = make_gateway(fake_llm, tmp_path, cache_mode="off")
    await gw.structured("generator", MSG, QA)
    await gw.structured("generator", MSG, QA)
    assert fake_llm.calls() == 2


async def test_scoped_cache_per_run(fake_llm, tmp_path):
    settings = load_settings(data_dir=tmp_path, roles={"generator": {"base_url": fake_llm.base_url, "model": "fake-model"}})
    a = LLMGateway(settings, cache=ResponseCache(tmp_path / "c.sqlite", scope="run-a"))
    b = LLMGateway(settings, cache=ResponseCache(tmp_path / "c.sqlite", scope="run-b"))
    await a.structured("generator", MSG, QA)
    await b.structured("generator", MSG, QA)
    await a.structured("generator", MSG, QA)
    assert fake_llm.calls() == 2


async def test_custom_validator_reasks(fake_llm, tmp_path):
    fake_llm.add(schema_name="QA", times=1, reply={"path": ["a", "b"], "question": "Is b the answer?", "answer": "b"})
    fake_llm.add(schema_name="QA", reply={"path": ["a", "b"], "question": "What does a lead to?", "answer": "b"})
    gw = make_gateway(fake_llm, tmp_path)
    r = await gw.structured("generator", MSG, QA,
                            validate=lambda v: "the question leaks the answer" if v.answer in v.question else None)
    assert r.ok and r.value.question == "What does a lead to?"
    assert "leaks the answer" in fake_llm.requests[1].json["messages"][-1]["content"]


async def test_chat_failure_not_cached_and_success_cached(fake_llm, tmp_path):
    fake_llm.add(times=1, fault=Fault(truncated=True), reply="a long answer that is cut")
    fake_llm.add(reply="<think>hmm</think>final answer")
    gw = make_gateway(fake_llm, tmp_path)
    m = [{"role": "user", "content": "hi"}]
    first = await gw.chat("teacher", m)
    assert not first.ok and first.failure.kind == "truncated"
    second = await gw.chat("teacher", m)
    assert second.ok and second.text == "final answer" and second.reasoning == "hmm"
    third = await gw.chat("teacher", m)
    assert third.cached and third.text == "final answer"


def test_unknown_role_is_a_programming_error(fake_llm, tmp_path):
    gw = make_gateway(fake_llm, tmp_path)
    with pytest.raises(ValueError, match="unknown role"):
        gw.resolve("planner")


async def test_truncated_chat_can_be_accepted_when_the_caller_can_use_it(fake_llm, tmp_path):
    fake_llm.add(fault=Fault(truncated=True), reply="entity<|#|>Ada<|#|>person<|#|>a mathematician and writer")
    gw = make_gateway(fake_llm, tmp_path)
    m = [{"role": "user", "content": "extract"}]
    strict = await gw.chat("teacher", m)
    assert not strict.ok and strict.failure.kind == "truncated"
    lenient = await gw.chat("teacher", m, allow_truncated=True)
    assert lenient.ok and lenient.finish_reason == "length" and lenient.text.startswith("entity<|#|>Ada")
    again = await gw.chat("teacher", m, allow_truncated=True)
    assert again.cached


async def test_structured_reports_tokens_of_every_attempt(fake_llm, tmp_path):
    fake_llm.add(schema_name="Verdict", times=1, reply="not json")
    fake_llm.add(schema_name="Verdict", reply={"valid": True, "reason": "ok"})
    gw = make_gateway(fake_llm, tmp_path)
    r = await gw.structured("verifier", MSG, Verdict)
    usage = [req.response["usage"] for req in fake_llm.requests]
    assert r.ok and r.reasks == 1
    assert r.prompt_tokens == sum(u["prompt_tokens"] for u in usage) > 0
    assert r.completion_tokens == sum(u["completion_tokens"] for u in usage) > 0


async def test_sync_embed_works_inside_a_running_loop(fake_llm):
    from gateway.embeddings import OpenAIEmbedder
    from schemas.config import EmbeddingConfig

    emb = OpenAIEmbedder(EmbeddingConfig(base_url=fake_llm.base_url, model="e", dim=16))
    assert emb.embed(["inside a loop"]).shape == (1, 16)  # this test body runs in an event loop


async def test_embeddings_are_decoded_in_input_order_from_base64_or_float_lists(fake_llm):
    """The embedder reads the response body itself (base64 rows in one decode): the same vectors as the server's,
    in input order, from the sync and the async path; a float-list body and bad bodies are handled too."""
    import base64
    import json

    import numpy as np

    from gateway.embeddings import EmbeddingError, OpenAIEmbedder
    from testing.fake import fake_embedding
    from schemas.config import EmbeddingConfig

    texts = [f"entity {i}" for i in range(70)]
    emb = OpenAIEmbedder(EmbeddingConfig(base_url=fake_llm.base_url, model="e", dim=16, batch_size=32))
    want = np.asarray([fake_embedding(t, 16) for t in texts], dtype=np.float32)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    assert np.allclose(emb.embed(texts), want, atol=1e-6)
    assert np.allclose(await emb.aembed(texts), want, atol=1e-6)
    bodies = [r.json for r in fake_llm.requests if r.path.endswith("/embeddings")]
    assert {b.get("encoding_format") for b in bodies} == {"base64"} and len(bodies) == 6  # 3 batches, twice

    rows = [[1.0, 2.0], [3.0, 4.0]]
    shuffled = {"data": [{"index": 1, "embedding": rows[1]}, {"index": 0, "embedding": rows[0]}]}
    assert emb._decode(json.dumps(shuffled).encode(), 2).tolist() == rows
    b64 = {"data": [{"index": i, "embedding": base64.b64encode(np.asarray(r, "<f4").tobytes()).decode()}
                    for i, r in enumerate(rows)]}
    assert emb._decode(json.dumps(b64).encode(), 2).tolist() == rows
    for bad, why in [(b"not json", "unreadable"), (b'{"data": [{"index": 0}]}', "unreadable"),
                     (json.dumps({"data": shuffled["data"][:1]}).encode(), "1 vectors for 2 inputs"),
                     (json.dumps({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]}
                                 ).encode(), "float lists of one length"),
                     (json.dumps({"data": [{"index": i, "embedding": base64.b64encode(
                         np.zeros(i + 1, "<f4").tobytes()).decode()} for i in range(2)]}).encode(),
                      "float32 rows of one length")]:
        with pytest.raises(EmbeddingError, match=why):
            emb._decode(bad, 2)


def test_the_shared_loop_calls_over_aiohttp_and_tells_a_refused_connection_from_a_timeout(fake_llm, tmp_path):
    """Batch tasks call the endpoint from the process's shared loop, over the SDK's aiohttp transport. Its errors
    keep their kinds: a closed port is a ``connection`` failure (the transport itself reports it as a connect
    timeout), a reply slower than ``timeout_s`` a ``timeout``; its clients are closed by the exit hook."""
    import gateway.client as gc_mod
    from gateway.local import free_port
    from gateway.loop import run_shared

    # The slow reply hangs for a minute (the server's stop ends it): a 0.3 s timeout fires whatever the machine's
    # load; the plain call gets a timeout no loaded machine reaches.
    fake_llm.add(schema_name="Verdict", prompt_contains="slow", fault=Fault(hang_s=60.0))
    fake_llm.add(schema_name="Verdict", reply={"valid": True, "reason": "ok"})
    gw = make_gateway(fake_llm, tmp_path / "plain", max_retries=0, timeout_s=60.0, cache_mode="off")
    hasty = make_gateway(fake_llm, tmp_path / "hasty", max_retries=0, timeout_s=0.3, cache_mode="off")
    port = free_port()
    down = LLMGateway(load_settings(data_dir=tmp_path / "down", roles={"judge": {
        "base_url": f"http://127.0.0.1:{port}/v1", "model": "m", "max_retries": 0}}))

    async def go():
        ok = await gw.structured("verifier", MSG, Verdict)
        slow = await hasty.structured("verifier", [{"role": "user", "content": "slow one"}], Verdict)
        refused = await down.structured("judge", MSG, Verdict)
        transport = type(gw._client(gw.resolve("verifier"))._client._transport).__name__
        return ok, slow, refused, transport

    ok, slow, refused, transport = run_shared(go())
    assert transport == "AiohttpTransport"
    assert ok.ok and ok.value.valid
    assert not slow.ok and slow.failure.kind == "timeout"
    assert not refused.ok and refused.failure.kind == "connection"
    mine = [c for k, c in gc_mod._SHARED_CLIENTS.items() if k[0] == os.getpid()]
    assert mine
    gc_mod._close_shared_clients()
    assert all(c.is_closed() for c in mine)
    assert not any(k[0] == os.getpid() for k in gc_mod._SHARED_CLIENTS)


async def test_a_client_on_its_own_event_loop_stays_on_httpx(fake_llm, tmp_path):
    gw = make_gateway(fake_llm, tmp_path)
    client = gw._client(gw.resolve("verifier"))
    assert type(client._client._transport).__name__ != "AiohttpTransport"
    await gw.aclose()


@pytest.mark.parametrize("call", ["structured", "chat"])
async def test_a_stored_answer_lets_the_requests_it_unblocked_go_before_its_caller_resumes(fake_llm, tmp_path, call):
    # One slot, two calls: the second waits for the first's slot. When the first answer comes back, it is stored
    # before the slot passes on (a kill -9 repeats only the requests in flight), and the waiting call takes the slot
    # before the first caller's own code after the call runs (a burst of answers refills its slots first).
    from gateway.client import endpoint_limiter

    fake_llm.set_fault(Fault(latency_s=0.05))
    gw = make_gateway(fake_llm, tmp_path, concurrency=1)
    limiter = endpoint_limiter(fake_llm.base_url, "fake-model", 1)
    events: list[tuple[str, int]] = []
    acquire = limiter.acquire

    async def logged_acquire():
        await acquire()
        events.append(("slot taken", len(gw.cache)))

    limiter.acquire = logged_acquire  # type: ignore[method-assign]

    async def one(i: int) -> None:
        msgs = [{"role": "user", "content": f"Make a question from Paris, number {i}."}]
        if call == "structured":
            res = await gw.structured("generator", msgs, QA)
        else:
            res = await gw.chat("generator", msgs)
        assert res.failure is None
        events.append((f"caller {i} resumes", len(gw.cache)))

    try:
        await asyncio.gather(one(0), one(1))
    finally:
        del limiter.acquire
    assert events == [("slot taken", 0), ("slot taken", 1), ("caller 0 resumes", 1), ("caller 1 resumes", 2)]
