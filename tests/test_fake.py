"""The fake OpenAI server, exercised through the real ``openai`` client."""

from __future__ import annotations

import asyncio
import json
import math
import re
import socket
import threading
import time
from typing import Any, Literal

import httpx2
import jsonschema
import openai
import pytest
from pydantic import BaseModel, Field

from testing.fake import (
    FakeOpenAI,
    Fault,
    Responder,
    fake_embedding,
    request_schema,
    schema_instance,
)

USER = [{"role": "user", "content": "hello there"}]


def client(fake: FakeOpenAI, **kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.base_url, api_key="x", max_retries=kwargs.pop("max_retries", 0), **kwargs)


def aclient(fake: FakeOpenAI, **kwargs: Any) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=fake.base_url, api_key="x", max_retries=kwargs.pop("max_retries", 0), **kwargs)


def json_schema_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}


def chat(fake: FakeOpenAI, prompt: str = "hello there", **kwargs: Any) -> Any:
    kwargs.setdefault("model", "m")
    return client(fake).chat.completions.create(messages=[{"role": "user", "content": prompt}], **kwargs)


# ---- pydantic models used as schemas -------------------------------------------------------


class Hop(BaseModel):
    subject: str
    relation: Literal["born_in", "capital_of"]
    object: str


class Path(BaseModel):
    hops: list[Hop] = Field(min_length=2)
    score: float = Field(ge=0.5, le=1.0)
    count: int = Field(gt=3)
    note: str | None
    verified: bool
    kind: Literal["path"] = "path"


class Tree(BaseModel):
    name: str
    children: list[Tree] = Field(default_factory=list)


# ---- default replies -----------------------------------------------------------------------


def test_default_text_reply_has_the_openai_shape(fake_llm: FakeOpenAI) -> None:
    completion = chat(fake_llm, "one two three", model="my-model")
    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-")
    assert completion.model == "my-model"
    assert isinstance(completion.created, int)
    choice = completion.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == "ok"
    assert choice.finish_reason == "stop"
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (3, 1)
    assert completion.usage.total_tokens == 4


SCHEMAS: list[dict[str, Any]] = [
    Path.model_json_schema(),
    Tree.model_json_schema(),
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}, "minItems": 3,
                                               "uniqueItems": True}}, "required": ["tags"]},
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": 10, "multipleOf": 7},
                                      "x": {"type": "number", "exclusiveMaximum": -2},
                                      "c": {"const": "fixed"}, "e": {"enum": ["a", "b"]},
                                      "s": {"type": "string", "minLength": 4, "maxLength": 5},
                                      "d": {"type": "string", "format": "date-time"},
                                      "u": {"type": ["string", "null"]},
                                      "o": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
                                      "nul": {"type": "null"}},
     "required": ["n", "x", "c", "e", "s", "d", "u", "o", "nul"], "additionalProperties": False},
    {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
               {"properties": {"b": {"type": "boolean"}}, "required": ["b"]}]},
    {"type": "object", "properties": {"p": {"type": "string"}, "q": {"type": "string"}}, "minProperties": 1},
    {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.get("title", str(sorted(s))[:30]))
def test_schema_instance_is_valid(schema: dict[str, Any]) -> None:
    jsonschema.validate(schema_instance(schema), schema)


def test_default_reply_is_a_valid_instance_in_both_schema_styles(fake_llm: FakeOpenAI) -> None:
    schema = Path.model_json_schema()
    styles = [json_schema_format("Path", schema), {"type": "json_object", "schema": schema}]
    for response_format in styles:
        content = chat(fake_llm, response_format=response_format).choices[0].message.content
        instance = json.loads(content)
        jsonschema.validate(instance, schema)
        Path.model_validate(instance)
    assert [request_schema(r.json)[0] for r in fake_llm.requests] == ["Path", "Path"]


def test_parse_helper_gets_a_parsed_model(fake_llm: FakeOpenAI) -> None:
    # .parse() sends a strict json_schema named after the class and validates the reply itself.
    completion = client(fake_llm).chat.completions.parse(model="m", messages=USER, response_format=Path)
    parsed = completion.choices[0].message.parsed
    assert isinstance(parsed, Path) and len(parsed.hops) == 2
    assert fake_llm.requests[0].json["response_format"]["json_schema"]["name"] == "Path"


# ---- matching and scripting ----------------------------------------------------------------


def test_schema_name_matching_in_both_styles(fake_llm: FakeOpenAI) -> None:
    fake_llm.add(schema_name="Answer", reply={"answer": "Paris"})
    fake_llm.add(schema_name="Other", reply={"other": True})
    answer = {"title": "Answer", "type": "object", "properties": {"answer": {"type": "string"}}}
    by_name = chat(fake_llm, response_format=json_schema_format("Answer", answer))
    by_title = chat(fake_llm, response_format={"type": "json_object", "schema": answer})
    other = chat(fake_llm, response_format=json_schema_format("Other", {"type": "object"}))
    plain = chat(fake_llm)
    assert json.loads(by_name.choices[0].message.content) == {"answer": "Paris"}
    assert json.loads(by_title.choices[0].message.content) == {"answer": "Paris"}
    assert json.loads(other.choices[0].message.content) == {"other": True}
    assert plain.choices[0].message.content == "ok"


def test_prompt_model_and_predicate_matching(fake_llm: FakeOpenAI) -> None:
    fake_llm.add(prompt_contains="capital", reply="contains")
    fake_llm.add(prompt_regex=r"born in \d{4}", reply="regex")
    fake_llm.add(model="special", reply="model")
    fake_llm.add(predicate=lambda body: body.get("temperature") == 0.5, reply="predicate")
    assert chat(fake_llm, "What is the capital?").choices[0].message.content == "contains"
    assert chat(fake_llm, "Who was born in 1879?").choices[0].message.content == "regex"
    assert chat(fake_llm, "x", model="special").choices[0].message.content == "model"
    assert chat(fake_llm, "x", temperature=0.5).choices[0].message.content == "predicate"
    assert chat(fake_llm, "nothing").choices[0].message.content == "ok"


def test_prompt_matches_only_the_last_user_message_and_text_parts(fake_llm: FakeOpenAI) -> None:
    fake_llm.add(prompt_contains="capital", reply="matched")
    earlier = [
        {"role": "user", "content": "capital of France?"},
        {"role": "assistant", "content": "Paris"},
        {"role": "user", "content": "thanks"},
    ]
    parts = [{"role": "system", "content": "capital"},
             {"role": "user", "content": [{"type": "text", "text": "the capital please"}]}]
    c = client(fake_llm)
    assert c.chat.completions.create(model="m", messages=earlier).choices[0].message.content == "ok"
    assert c.chat.completions.create(model="m", messages=parts).choices[0].message.content == "matched"


def test_matchers_combine_and_first_added_wins(fake_llm: FakeOpenAI) -> None:
    both = fake_llm.add(prompt_contains="a", model="m2", reply="both")
    first = fake_llm.add(prompt_contains="a", reply="first")
    fake_llm.add(prompt_contains="a", reply="second")
    assert chat(fake_llm, "a", model="m2").choices[0].message.content == "both"
    assert chat(fake_llm, "a").choices[0].message.content == "first"
    assert (both.hits, first.hits) == (1, 1)


def test_times_scripts_bad_then_good(fake_llm: FakeOpenAI) -> None:
    bad = fake_llm.add(Responder(schema_name="A", reply="not json at all", times=1))
    good = fake_llm.add(schema_name="A", reply={"a": 1})
    fmt = json_schema_format("A", {"type": "object"})
    contents = [chat(fake_llm, response_format=fmt).choices[0].message.content for _ in range(3)]
    assert contents == ["not json at all", '{"a": 1}', '{"a": 1}']
    assert (bad.hits, bad.exhausted, good.hits) == (1, True, 2)
    assert [r.responder for r in fake_llm.requests] == [bad, good, good]


def test_reply_callables_sync_async_and_failing(fake_llm: FakeOpenAI) -> None:
    async def async_reply(body: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"echo": body["messages"][-1]["content"]}

    fake_llm.add(prompt_contains="plain", reply=lambda body: ["list", body["model"]])
    fake_llm.add(prompt_contains="coroutine", reply=async_reply)
    fake_llm.add(prompt_contains="boom", reply=lambda body: 1 / 0)
    assert json.loads(chat(fake_llm, "plain").choices[0].message.content) == ["list", "m"]
    assert json.loads(chat(fake_llm, "coroutine").choices[0].message.content) == {"echo": "coroutine"}
    with pytest.raises(openai.InternalServerError, match="ZeroDivisionError"):
        chat(fake_llm, "boom")


def test_reasoning_as_fields_and_as_think_tag(fake_llm: FakeOpenAI) -> None:
    fake_llm.add(prompt_contains="field", reasoning="step by step", reply="42")
    fake_llm.add(prompt_contains="tag", reasoning="step by step", reasoning_style="think_tag", reply="42")
    field_msg = chat(fake_llm, "field").choices[0].message
    assert field_msg.content == "42"
    # openai 3.x has no declared reasoning field on ChatCompletionMessage: it is an extra.
    assert field_msg.model_extra == {"reasoning_content": "step by step", "reasoning": "step by step"}
    assert getattr(field_msg, "reasoning_content") == "step by step"
    tag_msg = chat(fake_llm, "tag").choices[0].message
    assert tag_msg.content == "<think>\nstep by step\n</think>\n\n42"
    assert not tag_msg.model_extra


def test_add_rejects_responder_and_kwargs(fake_llm: FakeOpenAI) -> None:
    with pytest.raises(TypeError):
        fake_llm.add(Responder(), reply="x")
    with pytest.raises(ValueError):
        Fault(status=200)
    with pytest.raises(ValueError):
        Fault(latency_range=(0.2, 0.1))


# ---- faults --------------------------------------------------------------------------------


def test_latency_is_applied(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_fault(Fault(latency_s=0.05))
    fake_llm.add(prompt_contains="slow", fault=Fault(latency_s=0.05))
    c = client(fake_llm)
    start = time.perf_counter()
    c.chat.completions.create(model="m", messages=USER)
    server_only = time.perf_counter() - start
    start = time.perf_counter()
    c.chat.completions.create(model="m", messages=[{"role": "user", "content": "slow"}])
    both = time.perf_counter() - start
    assert server_only >= 0.05 and both >= 0.1  # server-wide and responder delays add up
    assert [r.delay_s for r in fake_llm.requests] == [pytest.approx(0.05), pytest.approx(0.1)]


def test_latency_counts_from_the_requests_arrival_not_from_when_its_answer_was_ready() -> None:
    # Building this answer takes 0.15 s of the fake's time; the 0.3 s latency already runs meanwhile, so the fake
    # sleeps only the 0.15 s left, and the answer leaves 0.3 s after the request came in, not 0.45 s. The fake's
    # clock is the test's own (it advances only when the reply is built), so a loaded machine cannot move it.
    now = [100.0]
    slept: list[float] = []

    def slow_reply(body: dict[str, Any]) -> str:
        now[0] += 0.15
        return "ok"

    with FakeOpenAI(clock=lambda: now[0]) as fake:
        real_sleep = fake._sleep

        async def recording_sleep(seconds: float) -> None:
            slept.append(seconds)
            await real_sleep(seconds)

        fake._sleep = recording_sleep  # type: ignore[method-assign]
        fake.set_fault(Fault(latency_s=0.3))
        fake.add(prompt_contains="busy", reply=slow_reply)
        client(fake).chat.completions.create(model="m", messages=[{"role": "user", "content": "busy"}])
        assert fake.requests[-1].delay_s == pytest.approx(0.3)
    assert slept and sum(slept) == pytest.approx(0.15)  # the latency left after the answer was built


def test_latency_range_is_seeded() -> None:
    def delays(seed: int) -> list[float]:
        with FakeOpenAI(seed=seed, default_fault=Fault(latency_range=(0.0, 0.02))) as fake:
            for _ in range(3):
                chat(fake)
            return [r.delay_s for r in fake.requests]

    first, again, other = delays(7), delays(7), delays(8)
    assert first == again != other
    assert all(0.0 <= d <= 0.02 for d in first)


def test_rate_limit_with_retry_after(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_fault(Fault(status=429, retry_after=2))
    with pytest.raises(openai.RateLimitError) as excinfo:
        chat(fake_llm)
    assert excinfo.value.status_code == 429
    assert excinfo.value.response.headers["retry-after"] == "2"
    assert excinfo.value.body["code"] == "rate_limit_exceeded"  # the client unwraps "error"
    assert fake_llm.requests[0].response["error"]["type"] == "requests"


def test_client_retry_honours_retry_after_and_keeps_scripts(fake_llm: FakeOpenAI) -> None:
    # A rate limit happens before the model sees the request: the times=1 responder stays unused.
    fake_llm.set_fault(Fault(status=429, retry_after=0.05, times=1))
    scripted = fake_llm.add(reply="scripted", times=1)
    c = client(fake_llm, max_retries=1)
    completion = c.chat.completions.create(model="m", messages=USER)
    assert completion.choices[0].message.content == "scripted"
    assert [r.status for r in fake_llm.requests] == [429, 200]
    assert fake_llm.requests[1].time - fake_llm.requests[0].time >= 0.05
    assert scripted.hits == 1


def test_server_error_and_fault_times(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_fault(Fault(status=500, times=2))
    for _ in range(2):
        with pytest.raises(openai.InternalServerError) as excinfo:
            chat(fake_llm)
        assert excinfo.value.body["type"] == "server_error"
    assert chat(fake_llm).choices[0].message.content == "ok"
    assert [r.status for r in fake_llm.requests] == [500, 500, 200]


def test_responder_fault_counts_as_a_use(fake_llm: FakeOpenAI) -> None:
    flaky = fake_llm.add(reply="fine", fault=Fault(status=503, times=1))
    with pytest.raises(openai.InternalServerError):
        chat(fake_llm)
    assert chat(fake_llm).choices[0].message.content == "fine"
    assert flaky.hits == 2 and fake_llm.requests[0].responder is flaky


def test_hang_exceeds_client_timeout_and_stop_ends_the_hang() -> None:
    fake = FakeOpenAI(default_fault=Fault(hang_s=3600))
    fake.start()
    try:
        c = openai.OpenAI(base_url=fake.base_url, api_key="x", max_retries=0, timeout=0.2)
        with pytest.raises(openai.APITimeoutError):
            c.chat.completions.create(model="m", messages=USER)
        # logged although the client gave up; on a loaded machine the client's 0.2 s can run out before the server
        # has read the request, so the log is awaited (bounded), not assumed at the moment the client gives up
        deadline = time.monotonic() + 30
        while fake.calls() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fake.calls() == 1
    finally:
        # The hour-long hang ends with the server: stop() raises when its thread is still alive after the
        # timeout, a bound that only a hang reaches.
        fake.stop(timeout=60)


def test_malformed_content(fake_llm: FakeOpenAI) -> None:
    fake_llm.add(reply={"path": [1, 2]}, fault=Fault(malformed=True))
    choice = chat(fake_llm).choices[0]
    assert choice.message.content == '{"path": [1, 2],'
    assert choice.finish_reason == "stop"
    with pytest.raises(json.JSONDecodeError):
        json.loads(choice.message.content)


def test_truncated_content(fake_llm: FakeOpenAI) -> None:
    fake_llm.add(reply="abcdefgh", fault=Fault(truncated=True))
    choice = chat(fake_llm).choices[0]
    assert (choice.message.content, choice.finish_reason) == ("abcd", "length")
    # The parse helper turns finish_reason="length" into its own error.
    with pytest.raises(openai.LengthFinishReasonError):
        client(fake_llm).chat.completions.parse(model="m", messages=USER, response_format=Path)


def test_set_fault_none_and_reset(fake_llm: FakeOpenAI) -> None:
    fake_llm.set_fault(Fault(status=500))
    fake_llm.set_fault(None)
    fake_llm.add(reply="scripted")
    assert chat(fake_llm).choices[0].message.content == "scripted"
    fake_llm.reset()
    assert fake_llm.requests == [] and fake_llm.responders == []
    assert chat(fake_llm).choices[0].message.content == "ok"


def test_reset_restores_the_default_fault() -> None:
    with FakeOpenAI(default_fault=Fault(status=500, times=1)) as fake:
        with pytest.raises(openai.InternalServerError):
            chat(fake)
        fake.set_fault(None)
        fake.reset()
        with pytest.raises(openai.InternalServerError):
            chat(fake)
        assert chat(fake).choices[0].message.content == "ok"


# ---- request log, other endpoints ----------------------------------------------------------


def test_request_log(fake_llm: FakeOpenAI) -> None:
    scripted = fake_llm.add(prompt_contains="scripted", reply="yes")
    before = time.time()
    chat(fake_llm, "scripted", temperature=0.0)
    chat(fake_llm, "plain")
    client(fake_llm).embeddings.create(model="emb", input="x")
    first, second, third = fake_llm.requests
    assert (first.method, first.path, first.status) == ("POST", "/v1/chat/completions", 200)
    assert first.json["messages"] == [{"role": "user", "content": "scripted"}]
    assert first.json["temperature"] == 0.0
    assert first.headers["authorization"] == "Bearer x"
    assert first.headers["content-type"] == "application/json"
    assert before <= first.time <= second.time <= time.time()
    assert first.responder is scripted and second.responder is None
    assert first.response["choices"][0]["message"]["content"] == "yes"
    assert third.path == "/v1/embeddings"
    assert fake_llm.calls() == 2 and fake_llm.calls("/embeddings") == 1


def test_embeddings_are_deterministic_unit_vectors() -> None:
    with FakeOpenAI(embedding_dim=8) as fake:
        c = client(fake)
        texts = ["Paris", "Berlin", "Paris"]
        as_base64 = c.embeddings.create(model="emb", input=texts)  # the client's default encoding
        as_float = c.embeddings.create(model="emb", input=texts, encoding_format="float")
        single = c.embeddings.create(model="emb", input="Paris", encoding_format="float")
        wide = c.embeddings.create(model="emb", input="Paris", dimensions=32, encoding_format="float")
    paris, berlin, paris_again = (d.embedding for d in as_float.data)
    assert len(paris) == 8 and len(wide.data[0].embedding) == 32
    assert paris == paris_again == single.data[0].embedding == fake_embedding("Paris", 8)
    assert math.isclose(sum(v * v for v in paris), 1.0, rel_tol=1e-9)
    assert abs(sum(a * b for a, b in zip(paris, berlin))) < 0.99
    for decoded, exact in zip(as_base64.data, as_float.data):
        assert decoded.embedding == pytest.approx(exact.embedding, abs=1e-6)  # float32 round trip
    assert [d.index for d in as_float.data] == [0, 1, 2]
    assert as_float.usage.prompt_tokens == 3


def test_models_lists_fake_model_and_seen_models(fake_llm: FakeOpenAI) -> None:
    chat(fake_llm, model="alpha")
    client(fake_llm).embeddings.create(model="beta", input="x")
    ids = [m.id for m in client(fake_llm).models.list()]
    assert ids == ["fake-model", "alpha", "beta"]


def test_stream_is_refused_clearly(fake_llm: FakeOpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="stream"):
        client(fake_llm).chat.completions.create(model="m", messages=USER, stream=True)


def test_health_and_unknown_paths(fake_llm: FakeOpenAI) -> None:
    base = f"http://127.0.0.1:{fake_llm.port}"
    assert httpx2.get(f"{base}/health").status_code == 200
    missing = httpx2.post(f"{base}/v1/responses", json={})
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    bad = httpx2.post(f"{base}/v1/chat/completions", content=b"{not json")
    assert bad.status_code == 400 and "JSON" in bad.json()["error"]["message"]


# ---- lifecycle and concurrency -------------------------------------------------------------


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_clean_stop_and_restart() -> None:
    threads_before = set(threading.enumerate())
    fake = FakeOpenAI()
    with fake:
        port = fake.port
        assert fake.running and _port_open(port)
        assert fake.base_url == f"http://127.0.0.1:{port}/v1"
        chat(fake)  # leaves a keep-alive connection open in the client's pool
    assert not fake.running
    assert set(threading.enumerate()) == threads_before
    assert not _port_open(port)
    with pytest.raises(RuntimeError):
        fake.base_url
    fake.stop()  # idempotent
    with fake:  # restartable, on a fresh port; the log survives
        assert chat(fake).choices[0].message.content == "ok"
        assert fake.calls() == 2
    assert set(threading.enumerate()) == threads_before


async def test_concurrent_requests_overlap() -> None:
    # By order, not by duration: every request is held unanswered (a one-hour hang) while the next ones come in.
    # A server that read one request at a time would never read a second while the first is held, so the wait below
    # would end at its deadline with one request; the deadline only guards against that hang, it measures nothing.
    with FakeOpenAI() as fake:
        async with aclient(fake) as c:
            await c.chat.completions.create(model="m", messages=USER)  # warm up imports and a connection
            fake.set_fault(Fault(hang_s=3600))
            calls = [asyncio.ensure_future(c.chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"q{i}"}])) for i in range(8)]
            deadline = time.monotonic() + 120
            while len(fake.requests) < 1 + len(calls) and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            held = fake.requests[1:]
            assert len(held) == len(calls) and all(r.answered is None for r in held)
            for call in calls:
                call.cancel()
            await asyncio.gather(*calls, return_exceptions=True)
        fake.stop(timeout=60)  # ends the hangs


def test_request_schema_extraction() -> None:
    schema = {"title": "T", "type": "object"}
    assert request_schema({"response_format": json_schema_format("N", schema)}) == ("N", schema)
    assert request_schema({"response_format": {"type": "json_object", "schema": schema}}) == ("T", schema)
    assert request_schema({"response_format": {"type": "json_object"}}) == (None, None)
    assert request_schema({}) == (None, None)
    assert re.fullmatch(r"x+", schema_instance({"type": "string", "minLength": 3})) is not None
