"""An OpenAI-compatible fake LLM server on loopback, for tests and benchmarks.

``FakeOpenAI`` serves a small subset of the OpenAI HTTP API from a Starlette app run by uvicorn
in a background thread with its own event loop:

* ``POST /v1/chat/completions``: scripted replies (:class:`Responder`), or by default a minimal
  instance of the requested JSON schema, or the text ``"ok"``; :meth:`FakeOpenAI.add_fact_reader`
  scripts a careful reader of the meaning check's fact sheets (:func:`read_fact_sheet`), and
  :meth:`FakeOpenAI.add_profiler` a profiler of simple verb labels (:func:`profiler_reply`);
* ``POST /v1/embeddings``: deterministic unit vectors (a pure function of text and dimension), after a latency
  of their own and with errors of their own (``embedding_fault``, :meth:`FakeOpenAI.set_embedding_fault`);
* ``GET /v1/models``: ``"fake-model"`` plus every model name seen in a request;
* ``GET /health``: 200.

Faults (:class:`Fault`) inject latency, HTTP errors, hangs, malformed and truncated content, either
server-wide (:meth:`FakeOpenAI.set_fault`) or per responder. Every request is recorded in
:attr:`FakeOpenAI.requests`.

Usage::

    with FakeOpenAI() as fake:
        fake.add(schema_name="Answer", reply={"answer": "Paris"}, times=1)
        client = openai.OpenAI(base_url=fake.base_url, api_key="x", max_retries=0)
        ...

The server shares the test process (and its GIL), so handlers are kept lean: no pydantic on the
hot path, one lock-protected planning step per request, and sleeps that are plain timers on the
server loop (32 concurrent sleeping requests cost nothing but their timers).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import inspect
import itertools
import json
import math
import random
import re
import socket
import struct
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = [
    "Fault",
    "FakeOpenAI",
    "RecordedRequest",
    "Responder",
    "fact_reader_reply",
    "fake_embedding",
    "profiler_reply",
    "read_fact_sheet",
    "schema_instance",
]

JSON: TypeAlias = Any
ReplyValue: TypeAlias = "str | dict[str, Any] | list[Any]"
ReplyFn: TypeAlias = Callable[[dict[str, Any]], "ReplyValue | Awaitable[ReplyValue] | None"]
Predicate: TypeAlias = Callable[[dict[str, Any]], bool]

DEFAULT_MODEL_ID = "fake-model"
_ERROR_TYPES: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "forbidden"),
    404: ("invalid_request_error", "not_found"),
    408: ("timeout_error", "timeout"),
    409: ("invalid_request_error", "conflict"),
    422: ("invalid_request_error", "unprocessable_entity"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", "server_error"),
    502: ("server_error", "bad_gateway"),
    503: ("server_error", "overloaded"),
    504: ("server_error", "timeout"),
}


# --------------------------------------------------------------------------------------------
# Configuration objects
# --------------------------------------------------------------------------------------------


@dataclass(kw_only=True, eq=False)
class Fault:
    """A fault to inject into chat completions, server-wide or attached to a :class:`Responder`.

    Contract:

    * ``latency_s`` and a draw from ``latency_range`` (uniform, from the server's seeded RNG) are
      slept before answering; ``hang_s`` is slept too (it exists separately so that tests read as
      "hang past the client timeout"). The sleep counts from the request's arrival at the handler,
      so the answer leaves that long after the request came in, whatever the fake spent reading it
      and building the answer (64 requests arriving at once used to add each other's handling to
      their latency: 1,260 gateway calls at 0.5 s reached 0.94 of the floor, 0.955 now). Sleeps end
      early only when the server stops.
    * ``status`` (>= 400) answers with that HTTP status and an OpenAI-style error body
      ``{"error": {"message", "type", "param", "code"}}``; ``retry_after`` then adds a
      ``Retry-After`` header (seconds).
    * ``malformed`` makes the content invalid JSON (the reply with its last closing bracket
      replaced by a dangling comma, e.g. ``{"path": [1, 2],``), ``finish_reason`` stays "stop".
    * ``truncated`` keeps the first half of the content and sets ``finish_reason="length"``.
    * ``times`` limits the fault to the first N requests it applies to; afterwards it is inert.
      The count lives on this object (:attr:`applied`); :meth:`FakeOpenAI.reset` zeroes it for the
      server-wide fault. A responder's fault that answers with an error still counts as one of
      that responder's uses (``Responder.times``).
    """

    latency_s: float = 0.0
    latency_range: tuple[float, float] | None = None
    status: int | None = None
    retry_after: float | None = None
    hang_s: float | None = None
    malformed: bool = False
    truncated: bool = False
    times: int | None = None
    applied: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.latency_s < 0:
            raise ValueError("latency_s must be >= 0")
        if self.latency_range is not None:
            low, high = self.latency_range
            if not 0 <= low <= high:
                raise ValueError("latency_range must be (low, high) with 0 <= low <= high")
        if self.status is not None and not 400 <= self.status <= 599:
            raise ValueError("status must be an HTTP error status (400-599)")
        if self.retry_after is not None and self.retry_after < 0:
            raise ValueError("retry_after must be >= 0")
        if self.hang_s is not None and self.hang_s < 0:
            raise ValueError("hang_s must be >= 0")
        if self.times is not None and self.times < 0:
            raise ValueError("times must be >= 0")

    @property
    def exhausted(self) -> bool:
        """True once the fault has been applied ``times`` times."""
        return self.times is not None and self.applied >= self.times

    def _take(self) -> bool:
        """Count one application if the fault is still active; return whether it applies."""
        if self.exhausted:
            return False
        self.applied += 1
        return True


@dataclass(kw_only=True, eq=False)
class Responder:
    """A scripted reply for chat completions.

    Matching: every matcher that is set must hold (they AND together); a responder with no
    matcher matches every chat request.

    * ``schema_name``: the request's ``response_format`` schema name (``json_schema.name`` for
      ``{"type": "json_schema"}``; the schema's ``title`` for llama.cpp-style
      ``{"type": "json_object", "schema": S}``).
    * ``prompt_contains`` / ``prompt_regex``: substring / ``re.search`` on the text of the LAST
      user message (text parts of a multi-part content are joined with newlines).
    * ``model``: equality with the request's ``model``.
    * ``predicate``: ``predicate(request_json) -> bool``; runs on the server thread, keep it quick.

    Reply: ``reply`` is a string (the content), a dict or list (JSON-dumped into the content), a
    callable ``reply(request_json)`` returning any of those (may be async), or ``None`` for the
    default reply (a schema instance or ``"ok"``). A callable that raises produces a 500 whose
    message names the exception, so a broken script fails loudly.

    Reasoning: ``reasoning`` text goes to ``message.reasoning_content`` and ``message.reasoning``
    (``reasoning_style="field"``) or is prepended to the content as
    ``"<think>\\n{reasoning}\\n</think>\\n\\n"`` (``"think_tag"``). Content faults (malformed,
    truncated) act on the answer part only, so the think block stays intact.

    ``times``: the responder serves only its first N matches (:attr:`hits`), then is skipped, so
    tests can script "bad then good" by adding a ``times=1`` responder before a general one.
    ``fault`` is applied to the requests this responder serves (see :class:`Fault`).
    """

    schema_name: str | None = None
    prompt_contains: str | None = None
    prompt_regex: str | re.Pattern[str] | None = None
    model: str | None = None
    predicate: Predicate | None = None
    reply: ReplyValue | ReplyFn | None = None
    reasoning: str | None = None
    reasoning_style: Literal["field", "think_tag"] = "field"
    times: int | None = None
    fault: Fault | None = None
    label: str | None = None
    hits: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.reasoning_style not in ("field", "think_tag"):
            raise ValueError("reasoning_style must be 'field' or 'think_tag'")
        if self.times is not None and self.times < 0:
            raise ValueError("times must be >= 0")
        if isinstance(self.prompt_regex, str):
            self.prompt_regex = re.compile(self.prompt_regex)

    @property
    def exhausted(self) -> bool:
        """True once the responder has served ``times`` requests."""
        return self.times is not None and self.hits >= self.times

    def matches(self, body: Mapping[str, Any]) -> bool:
        """Whether this responder's matchers all accept the request body (ignores ``times``)."""
        if self.model is not None and body.get("model") != self.model:
            return False
        if self.schema_name is not None and request_schema(body)[0] != self.schema_name:
            return False
        if self.prompt_contains is not None or self.prompt_regex is not None:
            prompt = last_user_text(body)
            if self.prompt_contains is not None and self.prompt_contains not in prompt:
                return False
            if isinstance(self.prompt_regex, re.Pattern) and not self.prompt_regex.search(prompt):
                return False
        if self.predicate is not None and not self.predicate(dict(body)):
            return False
        return True


@dataclass(eq=False)
class RecordedRequest:
    """One request the server received.

    ``json`` is the parsed body (None when there was no body or it was not JSON); ``headers`` has
    lower-cased names; ``time`` is the arrival ``time.time()``; ``responder`` is the responder that
    served it (None for the default reply or non-chat paths); ``status`` is the HTTP status it
    was answered with; ``response`` is the JSON body sent back; ``delay_s`` is the injected sleep
    (latency + hang) before answering. A request is recorded when its answer is decided, before
    the injected sleep, so a client that timed out still sees it logged. ``answered`` is the
    ``time.time()`` at which the whole answer had been handed to the connection (None until then):
    a request recorded but not answered at a moment was in flight then, which is how the kill -9
    tests observe the calls a killed client had in flight.
    """

    method: str
    path: str
    json: JSON
    headers: dict[str, str]
    time: float
    responder: Responder | None
    status: int
    response: JSON = None
    delay_s: float = 0.0
    answered: float | None = None


# --------------------------------------------------------------------------------------------
# Pure helpers (importable by tests)
# --------------------------------------------------------------------------------------------


def request_schema(body: Mapping[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
    """Return ``(schema_name, schema)`` from a chat request's ``response_format``.

    ``{"type": "json_schema", "json_schema": {"name": N, "schema": S}}`` gives ``(N, S)``;
    llama.cpp-style ``{"type": "json_object", "schema": S}`` gives ``(S.get("title"), S)``;
    anything else gives ``(None, None)``.
    """
    fmt = body.get("response_format")
    if not isinstance(fmt, dict):
        return None, None
    kind = fmt.get("type")
    if kind == "json_schema":
        spec = fmt.get("json_schema")
        if isinstance(spec, dict):
            schema = spec.get("schema")
            return spec.get("name"), schema if isinstance(schema, dict) else None
    elif kind == "json_object":
        schema = fmt.get("schema")
        if isinstance(schema, dict):
            title = schema.get("title")
            return (title if isinstance(title, str) else None), schema
    return None, None


def _message_text(content: Any) -> str:
    """Text of a message content: a string, or the text parts of a multi-part list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def last_user_text(body: Mapping[str, Any]) -> str:
    """Text of the last ``role == "user"`` message of a chat request ("" if none)."""
    messages = body.get("messages")
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role") == "user":
                return _message_text(message.get("content"))
    return ""


def _word_count(text: str) -> int:
    return len(text.split())


def fake_embedding(text: str, dim: int) -> list[float]:
    """The deterministic unit vector the server returns for ``text`` at dimension ``dim``.

    A pure function of ``(text, dim)`` (SHAKE-256 of the UTF-8 text, stable across processes and
    seeds): equal texts give equal vectors, different texts give near-orthogonal ones.
    """
    if dim <= 0:
        raise ValueError("dim must be positive")
    raw = hashlib.shake_256(text.encode("utf-8")).digest(4 * dim)
    values = [(word / 2147483647.5) - 1.0 for word in struct.unpack(f"<{dim}I", raw)]
    norm = math.sqrt(sum(v * v for v in values))
    if norm == 0.0:  # pragma: no cover - needs a hash of all-midpoint words
        return [1.0] + [0.0] * (dim - 1)
    return [v / norm for v in values]


_MAX_SCHEMA_DEPTH = 32


def schema_instance(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> JSON:
    """A minimal instance that validates against a JSON schema (the subset LLM APIs use).

    Handles ``$ref`` into ``$defs``/``definitions`` (JSON pointers from the root), ``const``,
    ``enum`` (first value), ``anyOf``/``oneOf`` (first branch), ``allOf`` (merged), type lists
    (first type), OpenAPI ``nullable``, objects (required properties only, more if
    ``minProperties`` asks), arrays (``minItems`` items, distinct when ``uniqueItems``,
    ``prefixItems``), strings (``minLength``/``maxLength``, common ``format`` values), integers and
    numbers (bounds, ``multipleOf``) and booleans. ``pattern`` is not honoured.
    """
    return _instance(schema, root if root is not None else schema, 0, 0)


def _resolve_ref(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any]:
    if not ref.startswith("#"):
        raise ValueError(f"only local $ref is supported, got {ref!r}")
    node: Any = root
    for token in filter(None, ref[1:].split("/")):
        node = node[token.replace("~1", "/").replace("~0", "~")]
    return node


def _merge_all_of(schema: Mapping[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in schema["allOf"]:
        if "$ref" in part:
            part = _resolve_ref(part["$ref"], root)
        for key, value in part.items():
            if key == "properties":
                merged["properties"] = {**merged.get("properties", {}), **value}
            elif key == "required":
                merged["required"] = list(dict.fromkeys([*merged.get("required", []), *value]))
            else:
                merged.setdefault(key, value)
    return merged


_STRING_FORMATS = {
    "date-time": "1970-01-01T00:00:00Z",
    "date": "1970-01-01",
    "time": "00:00:00Z",
    "email": "x@example.com",
    "uri": "http://example.com",
    "url": "http://example.com",
    "uuid": "00000000-0000-0000-0000-000000000000",
}


def _number(schema: Mapping[str, Any], variant: int, integer: bool) -> int | float:
    """The value closest to zero inside the bounds, then ``variant`` steps up (for uniqueItems)."""

    def bound(key: str) -> float | None:
        value = schema.get(key)
        # Draft-4 boolean exclusiveMinimum/Maximum modifiers are not numbers: ignore them.
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    step = bound("multipleOf") or 1
    low, high, xlow, xhigh = bound("minimum"), bound("maximum"), bound("exclusiveMinimum"), bound("exclusiveMaximum")
    value: float = 0
    if low is not None and value < low:
        value = low
    if xlow is not None and value <= xlow:
        value = xlow + step
    if high is not None and value > high:
        value = high
    if xhigh is not None and value >= xhigh:
        value = xhigh - step
    value += variant * step
    if "multipleOf" in schema:
        value = math.ceil(value / step) * step
    return math.ceil(value) if integer else float(value)


def _instance(schema: Mapping[str, Any] | bool, root: Mapping[str, Any], depth: int, variant: int) -> JSON:
    if schema is True or not isinstance(schema, Mapping):
        return None
    if depth > _MAX_SCHEMA_DEPTH:
        return None  # recursive schema with a required cycle: no finite instance exists
    if "$ref" in schema:
        return _instance(_resolve_ref(schema["$ref"], root), root, depth + 1, variant)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema and schema["enum"]:
        values = schema["enum"]
        return values[variant % len(values)]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return _instance(schema[key][0], root, depth + 1, variant)
    if schema.get("allOf"):
        return _instance(_merge_all_of(schema, root), root, depth + 1, variant)

    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0] if kind else None
    if kind is None:
        if "properties" in schema or "required" in schema:
            kind = "object"
        elif "items" in schema or "prefixItems" in schema:
            kind = "array"
        elif schema.get("nullable"):
            return None
        else:
            return None  # an unconstrained schema accepts anything, null included

    if kind == "object":
        props: Mapping[str, Any] = schema.get("properties", {})
        names = list(schema.get("required", []))
        for name in props:
            if len(names) >= schema.get("minProperties", 0):
                break
            if name not in names:
                names.append(name)
        return {name: _instance(props.get(name, {}), root, depth + 1, 0) for name in names}
    if kind == "array":
        prefix = list(schema.get("prefixItems", []))
        count = max(schema.get("minItems", 0), len(prefix) if schema.get("minItems", 0) else 0)
        items = schema.get("items", {})
        unique = bool(schema.get("uniqueItems"))
        out = []
        for index in range(count):
            sub = prefix[index] if index < len(prefix) else items
            out.append(_instance(sub, root, depth + 1, index if unique else 0))
        return out
    if kind == "string":
        if schema.get("format") in _STRING_FORMATS and not variant:
            return _STRING_FORMATS[schema["format"]]
        text = "x" if not variant else f"x{variant}"
        min_len = schema.get("minLength", 0)
        if len(text) < min_len:
            text = text + "x" * (min_len - len(text))
        max_len = schema.get("maxLength")
        return text[:max_len] if max_len is not None else text
    if kind == "integer":
        return _number(schema, variant, integer=True)
    if kind == "number":
        return _number(schema, variant, integer=False)
    if kind == "boolean":
        return bool(variant % 2)
    return None  # "null"


# --------------------------------------------------------------------------------------------
# The careful reader: answers a question from a fact sheet (the meaning check's reference)
# --------------------------------------------------------------------------------------------

#: The request name the careful reader answers by default (``tasks.qa.meaning_check.REQUEST_NAME``).
FACT_READER_SCHEMA = "qa_meaning_check"
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
#: Words that carry no relation meaning for the reader: articles, auxiliaries, relative pronouns, wh-words.
_FUNCTION_WORDS = frozenset(
    "a an the is are was were be been being am does do did has have had that which who whom whose what it its "
    "where when".split()
)
_AUXILIARIES = frozenset("is are was were am does do did has have had".split())
_WH_WORDS = frozenset("what which who whom whose where when".split())
_PREPOSITIONS = frozenset("of in to for from with by at on into about as".split())
_READER_MAX_HOPS = 5


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.casefold())


def _stem(word: str) -> str:
    """Plural or third-person "s" dropped ("contains" -> "contain"); nothing else."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


@dataclass(frozen=True)
class _Fact:
    subject: str
    words: tuple[str, ...]  # the relation's content words, stemmed, in order
    object: str


def _parse_fact(line: str, names: dict[tuple[str, ...], str]) -> _Fact | None:
    """``<A> <relation words> <B>``: the longest known name the sentence starts with and the longest it ends
    with, the words between them the relation. ``None`` when the sentence is not of that shape."""
    toks = _tokens(line)
    starts = [(len(k), k) for k in names if tuple(toks[: len(k)]) == k]
    ends = [(len(k), k) for k in names if len(k) <= len(toks) and tuple(toks[len(toks) - len(k):]) == k]
    for _, a in sorted(starts, reverse=True):
        for _, b in sorted(ends, reverse=True):
            if len(a) + len(b) < len(toks) and names[a] != names[b]:
                middle = toks[len(a): len(toks) - len(b)]
                words = tuple(_stem(w) for w in middle if w not in _FUNCTION_WORDS)
                if words:
                    return _Fact(names[a], words, names[b])
    return None


def _windows(words: tuple[str, ...], items: list[tuple[str, str]]) -> list[int]:
    """Start indexes where ``words`` occur as consecutive word items of the question."""
    n = len(words)
    return [i for i in range(len(items) - n + 1)
            if all(items[i + j] == ("w", words[j]) for j in range(n))]


def read_fact_sheet(facts: list[str], question: str, names: list[str]) -> tuple[str, str]:
    """``(answer, reason)``: what a careful reader who knows only ``facts`` answers to ``question``.

    Reading, independent of any code that writes questions or fact sentences:

    1. Each fact ``<A> <relation words> <B>`` is split at two known entity names (``names``), A first; the
       relation is its content words (articles, auxiliaries and relative pronouns dropped, a final "s" dropped).
    2. The question becomes a gapped statement: its entity names are located, the wh-word is taken out and "?"
       dropped. The gap (the entity asked for) stands where the wh-phrase stood, at the start ("Which drug contains
       lipid?" -> "<gap> contains lipid"), or at the end when the question ends in a preposition, has
       "do"/"does"/"did", or has an auxiliary right before a name that is not its last word ("What is lipid an
       ingredient of?" -> "lipid is an ingredient of <gap>"; "What does X produce?" -> "X produce <gap>"). A name
       right after an opening "Which"/"What" is the wh-phrase's noun ("Which clinical drug ..."), not a name.
    3. A chain of facts from a named entity to a candidate answer is accepted when every fact's relation words
       occur in the question (each in its own place), and the order agrees with the facts' order: the relation
       words of the first fact come after the named entity exactly when that entity is the fact's subject, and
       those of the last fact come after the gap exactly when the answer is that fact's subject.
    4. A chain must read every question word that is a relation word of some fact (prepositions aside): "What
       does the thing that X produces treat?" is not answered by "X produces Y" alone. Only the longest accepted
       chains count. No chain: "unknown"; chains ending at more than one entity: "several".

    Limits: word order only, no grammar. Passives ("founded by X"), synonyms, inflections other than a final "s",
    and rewordings ("has X as an ingredient" for "X is an ingredient of") are not understood and read as
    "unknown"; the direction of a chain's middle hops is not checked (only the hops at the named entity and at
    the gap are); a question naming several entities is read from each of them.
    """
    keys = {tuple(_tokens(n)): n for n in sorted(names, key=len)}
    keys.pop((), None)
    parsed = [f for f in (_parse_fact(line, keys) for line in facts) if f is not None]
    toks = _tokens(question)
    items, gap_at_end = _question_items(toks, keys)
    named = [(pos, name) for pos, (kind, name) in enumerate(items) if kind == "e"]
    if not named:
        return "unknown", "the question names no entity of the facts"
    if toks and (toks[-1] in _PREPOSITIONS or any(t in ("do", "does", "did") for t in toks)):
        gap_at_end = True  # "What is <...> an ingredient of?", "Which drug does <...> contain?"
    gap = len(items) if gap_at_end else -1
    found = _fact_chains(parsed, items, named, gap)
    if not found:
        return "unknown", "no chain of facts reads the way the question asks"
    longest = found[max(found)]
    if len(longest) > 1:
        return "several", f"several entities fit: {', '.join(sorted(longest))}"
    answer, chains = next(iter(longest.items()))
    return answer, f"read as: {chains[0]}"


def _question_items(toks: list[str], keys: dict[tuple[str, ...], str]) -> tuple[list[tuple[str, str]], bool]:
    """The question's items (``("e", name)`` for a known name, ``("w", stem)`` for a content word; an opening
    wh-word left out), and whether an auxiliary right before a name that is not its last word puts the gap at
    the end (``read_fact_sheet``, step 2)."""
    items: list[tuple[str, str]] = []
    gap_at_end = False
    i = 1 if toks and toks[0] in _WH_WORDS else 0
    by_length = sorted(keys, key=len, reverse=True)
    while i < len(toks):
        hit = next((k for k in by_length if tuple(toks[i: i + len(k)]) == k), None)
        if hit is not None and i == 1 and toks[0] in ("which", "what"):
            hit = None  # "Which clinical drug ...": the wh-phrase's noun, not a name
        if hit is not None:
            if i > 0 and toks[i - 1] in _AUXILIARIES and i + len(hit) < len(toks):
                gap_at_end = True
            items.append(("e", keys[hit]))
            i += len(hit)
            continue
        if toks[i] not in _FUNCTION_WORDS:
            items.append(("w", _stem(toks[i])))
        i += 1
    return items, gap_at_end


def _fact_chains(parsed: list[_Fact], items: list[tuple[str, str]], named: list[tuple[int, str]],
                 gap: int) -> dict[int, dict[str, list[str]]]:  # fmt: skip
    """The accepted chains of facts (``read_fact_sheet``, steps 3 and 4) from each named entity: by length, each
    end entity with the chains that reach it."""
    # question words that are relation words of some fact (prepositions aside) must all be read by the chain
    vocabulary = {w for f in parsed for w in f.words} - _PREPOSITIONS
    relation_items = [i for i, (kind, w) in enumerate(items) if kind == "w" and w in vocabulary]
    found: dict[int, dict[str, list[str]]] = {}

    def walk(start_pos: int, node: str, chain: list[_Fact], seen: set[str], used: list[tuple[int, int]]) -> None:
        covered = {i for a, b in used for i in range(a, b)}
        if chain and all(i in covered for i in relation_items):
            last = chain[-1]
            # the last fact: its words come after the gap exactly when the answer is its subject
            if (used[-1][0] > gap) == (node == last.subject):
                found.setdefault(len(chain), {}).setdefault(node, []).append(
                    "; ".join(f"{f.subject} {' '.join(f.words)} {f.object}" for f in chain))
        if len(chain) >= _READER_MAX_HOPS:
            return
        for fact in parsed:
            if node not in (fact.subject, fact.object):
                continue
            nxt = fact.object if node == fact.subject else fact.subject
            if nxt in seen:
                continue
            for w in _windows(fact.words, items):
                span = (w, w + len(fact.words))
                if any(span[0] < b and a < span[1] for a, b in used):
                    continue
                if not chain and (w > start_pos) != (node == fact.subject):
                    continue  # the first fact must read from the named entity in its own direction
                walk(start_pos, nxt, [*chain, fact], seen | {nxt}, [*used, span])

    for pos, name in named:
        walk(pos, name, [], {name}, [])
    return found


def _answer_names(body: Mapping[str, Any]) -> list[str]:
    """The entity names a reply may give: the ``answer`` enum of the request's schema, else of the schema the
    gateway wrote into the prompt; "unknown" and "several" left out."""
    _, schema = request_schema(body)
    if schema is None:
        text = "\n".join(_message_text(m.get("content")) for m in body.get("messages") or [] if isinstance(m, dict))
        start = text.find("{", text.find("JSON schema"))
        try:
            schema, _ = json.JSONDecoder().raw_decode(text[start:]) if start >= 0 else (None, 0)
        except ValueError:
            schema = None
    try:
        values = schema["properties"]["answer"]["enum"]  # type: ignore[index]
    except (KeyError, TypeError):
        return []
    return [v for v in values if isinstance(v, str) and v not in ("unknown", "several")]


def fact_reader_reply(body: Mapping[str, Any]) -> dict[str, str]:
    """The careful reader as a responder reply: reads the ``- `` lines under ``Facts:`` and the ``Question:`` line
    of the last user message (the meaning check's prompt) and answers as :func:`read_fact_sheet` does, as
    ``{"answer": ..., "reason": ...}``."""
    text = last_user_text(body)
    facts: list[str] = []
    question = ""
    in_facts = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped == "Facts:":
            in_facts = True
        elif in_facts and stripped.startswith("- "):
            facts.append(stripped[2:])
        elif in_facts and not stripped:
            in_facts = False
        if stripped.startswith("Question:") and not question:
            question = stripped[len("Question:"):].strip()
    answer, reason = read_fact_sheet(facts, question, _answer_names(body))
    return {"answer": answer, "reason": reason}


# --------------------------------------------------------------------------------------------
# The profiler: what a simple verb label means (the profiler role's reference)
# --------------------------------------------------------------------------------------------

#: The request name the fake profiler answers by default (``tasks.meaning.profiler.REQUEST_NAME``).
PROFILER_SCHEMA = "relation_profile"
_LABEL_LINE = re.compile(r"^Relation label: (.+)$", re.MULTILINE)
_SEVERAL = re.compile(r"(\d+) of (\d+) (subjects|objects) have several")


def profiler_reply(body: Mapping[str, Any]) -> dict[str, Any]:
    """A plausible profile for the label on the ``Relation label:`` line of the last user message, read as a verb
    phrase ("wards" -> "{s} wards {o}", "{wh} wards {o}?", "{the} {that} {s} wards"; no question asking for the
    object, which would need the verb's base form). A label with a digit, an underscore or no letter is not
    words. Each count is "many" when the request's graph statistics show a node with several, else "one"."""
    text = last_user_text(body)
    found = _LABEL_LINE.search(text)
    label = found.group(1).strip() if found else ""
    if len(label) >= 2 and label[0] == label[-1] and label[0] in "'\"":
        label = label[1:-1]
    label = " ".join(label.split())
    counts = {"subjects": "one", "objects": "one"}
    for several, _, side in _SEVERAL.findall(text):
        counts[side] = "many" if int(several) > 0 else "one"
    words = bool(label) and bool(re.search(r"[a-zA-Z]", label)) and not re.search(r"[\d_{}]", label)
    if not words:
        return {"words": False, "statement": "", "ask_object": [], "object_clause": [], "ask_subject": [],
                "subject_clause": [], "objects_per_subject": "unknown", "subjects_per_object": "unknown",
                "symmetric": False, "reason": f"{label!r} is a code, not words"}
    return {"words": True, "statement": f"{{s}} {label} {{o}}", "ask_object": [],
            "object_clause": [f"{{the}} {{that}} {{s}} {label}"], "ask_subject": [f"{{wh}} {label} {{o}}?"],
            "subject_clause": [f"{{the}} {{that}} {label} {{o}}"], "objects_per_subject": counts["subjects"],
            "subjects_per_object": counts["objects"], "symmetric": False,
            "reason": f"{label!r} read as a verb phrase"}


def _malform(content: str) -> str:
    """Content that is never valid JSON: the last closing bracket becomes a dangling comma."""
    stripped = content.rstrip()
    if stripped.endswith(("}", "]")):
        stripped = stripped[:-1].rstrip()
    # No valid JSON text ends with a comma, so this always fails json.loads.
    return stripped + ","


def _error_body(status: int, message: str) -> dict[str, Any]:
    err_type, code = _ERROR_TYPES.get(status, ("api_error", "error"))
    return {"error": {"message": message, "type": err_type, "param": None, "code": code}}


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------


@dataclass
class _Plan:
    """What a chat request will get, decided atomically under the lock."""

    responder: Responder | None
    delay_s: float
    status: int | None
    retry_after: float | None
    malformed: bool
    truncated: bool
    error_origin: str = ""


class FakeOpenAI:
    """An OpenAI-compatible HTTP server on ``127.0.0.1`` (free port) in a background thread.

    Lifecycle: :meth:`start` (or ``with``) binds a free loopback port, starts the thread and
    returns once the server accepts connections; :meth:`stop` (or leaving the ``with``) ends
    in-flight sleeps, closes the port and joins the thread. A stopped instance may be started
    again (on a new port); scripted state survives a restart.

    Responders are tried in the order they were added (first added, first matched); exhausted
    ones (``times`` used up) are skipped. Server-wide faults (``default_fault`` or
    :meth:`set_fault`) apply to every chat completion request and are evaluated first: when one
    returns an error status, no responder is consulted (so a scripted ``times=1`` responder is
    not used up by a rate-limit error). Otherwise a matching responder's own fault composes with
    it: delays add up, the server-wide error status wins over the responder's, content flags OR.

    Thread safety: :meth:`add`, :meth:`set_fault`, :meth:`reset` and reads of :attr:`requests`
    may be called from any thread while requests are being served.
    """

    def __init__(self, *, default_fault: Fault | None = None, seed: int = 0, embedding_dim: int = 16,
                 embedding_fault: Fault | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        if embedding_dim <= 0:
            raise ValueError("embedding_dim must be positive")
        # What an injected delay is counted with (seconds): a test passes its own to check the arithmetic.
        self.clock = clock
        self.default_fault = default_fault
        # The embeddings endpoint's own fault (latency, an error status, ``times``): chat faults never apply to it,
        # so a benchmark can give the embedder a latency of its own and a test can fail the Nth embedding request.
        self.embedding_fault = embedding_fault
        self.seed = seed
        self.embedding_dim = embedding_dim
        self.requests: list[RecordedRequest] = []
        self._responders: list[Responder] = []
        self._fault: Fault | None = default_fault
        self._models_seen: dict[str, None] = {}  # insertion-ordered set
        self._rng = random.Random(seed)
        # Re-entrant: user predicates run under it and may call back into add()/calls().
        self._lock = threading.RLock()
        self._ids = itertools.count(1)

        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_future: asyncio.Future[None] | None = None
        self._ready = threading.Event()
        self._thread_error: BaseException | None = None
        self._port: int | None = None
        self._app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/health", self._health, methods=["GET"]),
                Route(
                    "/{path:path}",
                    self._not_found,
                    methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"],
                ),
            ]
        )

    # ---- scripting ---------------------------------------------------------------------------

    def add(self, responder: Responder | None = None, **kwargs: Any) -> Responder:
        """Append a responder (given, or built from ``kwargs``) and return it.

        Responders match in the order added: add specific or ``times``-limited ones first.
        """
        if responder is not None and kwargs:
            raise TypeError("pass either a Responder or keyword arguments, not both")
        if responder is None:
            responder = Responder(**kwargs)
        with self._lock:
            self._responders.append(responder)
        return responder

    def add_fact_reader(self, schema_name: str | None = FACT_READER_SCHEMA, **kwargs: Any) -> Responder:
        """Answer the meaning check's requests (by default those named ``qa_meaning_check``) as a careful reader
        of their fact sheet (:func:`read_fact_sheet`, whose docstring lists what it does not understand). Other
        matchers, ``times`` and ``fault`` as for :class:`Responder`."""
        return self.add(schema_name=schema_name, reply=fact_reader_reply, label="fact-reader", **kwargs)

    def add_profiler(self, schema_name: str | None = PROFILER_SCHEMA, **kwargs: Any) -> Responder:
        """Answer the profiler role's requests (by default those named ``relation_profile``) with a plausible
        profile of their label (:func:`profiler_reply`). Other matchers, ``times`` and ``fault`` as for
        :class:`Responder`."""
        return self.add(schema_name=schema_name, reply=profiler_reply, label="profiler", **kwargs)

    def set_embedding_fault(self, fault: Fault | None) -> None:
        """Replace the fault applied to every embeddings request (None clears it); only ``latency_s``,
        ``latency_range``, ``hang_s``, ``status``, ``retry_after`` and ``times`` apply there."""
        with self._lock:
            self.embedding_fault = fault

    def set_fault(self, fault: Fault | None) -> None:
        """Replace the server-wide fault applied to every chat request (None clears it)."""
        with self._lock:
            self._fault = fault

    def reset(self) -> None:
        """Forget responders, the request log and seen models; restore the constructor's fault.

        The server-wide fault goes back to ``default_fault`` (its ``times`` count zeroed), since
        that is the server's configured baseline (e.g. a benchmark's latency); the RNG is reseeded.
        """
        with self._lock:
            self._responders.clear()
            self.requests.clear()
            self._models_seen.clear()
            self._fault = self.default_fault
            if self.default_fault is not None:
                self.default_fault.applied = 0
            self._rng = random.Random(self.seed)

    def calls(self, path_suffix: str = "/chat/completions") -> int:
        """How many recorded requests have a path ending with ``path_suffix``."""
        with self._lock:
            return sum(1 for r in self.requests if r.path.endswith(path_suffix))

    @property
    def responders(self) -> list[Responder]:
        """A snapshot of the responders, in matching order."""
        with self._lock:
            return list(self._responders)

    # ---- lifecycle ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (only while running)."""
        if self._port is None:
            raise RuntimeError("FakeOpenAI is not running")
        return self._port

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, for ``openai.OpenAI(base_url=...)``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def running(self) -> bool:
        """True between a successful :meth:`start` and :meth:`stop`."""
        return self._thread is not None and self._thread.is_alive() and self._ready.is_set()

    def start(self, timeout: float = 10.0) -> FakeOpenAI:
        """Bind a free loopback port, start serving, and return once connections are accepted."""
        if self._thread is not None:
            raise RuntimeError("FakeOpenAI is already started")
        # Binding here (not in uvicorn) means the port is known and owned before the thread runs:
        # no race between picking a free port and binding it.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            # Accepted connections inherit TCP_NODELAY (Linux): without it a reply written as headers then
            # body waits for the client's delayed ACK, ~40 ms per request on a keep-alive connection.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.bind(("127.0.0.1", 0))
            sock.listen(2048)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self._port = sock.getsockname()[1]
        self._ready.clear()
        self._thread_error = None
        self._thread = threading.Thread(
            target=self._run, args=(sock,), name=f"FakeOpenAI-{self._port}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.01):
            if not self._thread.is_alive() or time.monotonic() > deadline:
                error = self._thread_error
                self._thread.join(1.0)
                self._thread = None
                self._port = None
                sock.close()
                raise RuntimeError(f"FakeOpenAI failed to start: {error!r}") from error
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving: end injected sleeps, close the port and connections, join the thread.

        Idempotent. Raises RuntimeError if the thread does not end within ``timeout``.
        """
        thread, loop, stop_future = self._thread, self._loop, self._stop_future
        if thread is None:
            return
        if loop is not None and stop_future is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(_resolve, stop_future)
            except RuntimeError:  # the loop closed between the check and the call
                pass
        thread.join(timeout)
        if thread.is_alive():
            raise RuntimeError("FakeOpenAI server thread did not stop")
        self._thread = None
        self._loop = None
        self._stop_future = None
        self._port = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self, sock: socket.socket) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve(sock))
        except BaseException as exc:  # surfaced by start() or lost on a stop we are already doing
            self._thread_error = exc
        finally:
            try:
                pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for task in pending:
                    task.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()
                sock.close()

    async def _serve(self, sock: socket.socket) -> None:
        # log_config=None: uvicorn must not reconfigure the host process's logging.
        config = uvicorn.Config(
            self._app,
            lifespan="off",
            http="auto",  # httptools when installed (less CPU per request), else h11
            ws="none",
            log_config=None,
            access_log=False,
            server_header=False,
            date_header=True,
        )
        config.load()
        server = uvicorn.Server(config)
        # uvicorn.Server.serve() polls for exit every 0.1 s and its shutdown() sleeps a fixed
        # 0.1 s; with one server per test that adds up, so the same steps run here, driven by a
        # future that stop() resolves.
        server.lifespan = config.lifespan_class(config)
        self._stop_future = asyncio.get_running_loop().create_future()
        await server.startup(sockets=[sock])
        await server.on_tick(0)  # sets the default (Date) headers
        self._ready.set()
        while not self._stop_future.done():
            await asyncio.wait([self._stop_future], timeout=1.0)
            await server.on_tick(0)  # refresh the Date header once a second
        await self._shutdown(server)

    async def _shutdown(self, server: uvicorn.Server, grace_s: float = 2.0) -> None:
        for listener in server.servers:
            listener.close()
        state = server.server_state
        # Idle keep-alive connections close at once; busy ones close after their response,
        # which comes promptly because every injected sleep ended when the stop future resolved.
        for connection in list(state.connections):
            connection.shutdown()
        deadline = time.monotonic() + grace_s
        while (state.connections or state.tasks) and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        for task in list(state.tasks):
            task.cancel()
        for listener in server.servers:
            # Bounded: on Python >= 3.12 wait_closed() also waits for every connection to close.
            try:
                await asyncio.wait_for(listener.wait_closed(), timeout=1.0)
            except asyncio.TimeoutError:
                pass

    async def _sleep(self, seconds: float) -> None:
        """Sleep on the server loop, ending early when the server stops."""
        if seconds <= 0:
            return
        stop = self._stop_future
        if stop is None:
            await asyncio.sleep(seconds)
        elif not stop.done():
            # asyncio.wait on a plain future schedules one timer; no task per sleep.
            await asyncio.wait([stop], timeout=seconds)

    # ---- request handling --------------------------------------------------------------------

    def _record(
        self,
        request: Request,
        body: JSON,
        arrived: float,
        responder: Responder | None,
        status: int,
        response: JSON,
        delay_s: float = 0.0,
    ) -> RecordedRequest:
        entry = RecordedRequest(
            method=request.method,
            path=request.scope["path"],  # cheaper than request.url, which parses the whole URL
            json=body,
            headers=dict(request.headers.items()),  # Starlette yields lower-cased names
            time=arrived,
            responder=responder,
            status=status,
            response=response,
            delay_s=delay_s,
        )
        with self._lock:
            self.requests.append(entry)
        return entry

    @staticmethod
    def _reply(entry: RecordedRequest, payload: JSON, status: int = 200,
               headers: dict[str, str] | None = None) -> JSONResponse:
        """The answer to a recorded request; Starlette runs its background step once the body is written."""
        return JSONResponse(payload, status_code=status, headers=headers, background=BackgroundTask(_answered, entry))

    async def _read_json(self, request: Request) -> tuple[JSON, str | None]:
        raw = await request.body()
        if not raw:
            return None, "request body is empty; expected a JSON object"
        try:
            body = json.loads(raw)
        except ValueError as exc:
            return None, f"request body is not valid JSON: {exc}"
        if not isinstance(body, dict):
            return body, "request body must be a JSON object"
        return body, None

    def _error(
        self,
        request: Request,
        body: JSON,
        arrived: float,
        status: int,
        message: str,
        responder: Responder | None = None,
        headers: dict[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> JSONResponse:
        payload = _error_body(status, message)
        entry = self._record(request, body, arrived, responder, status, payload, delay_s)
        return self._reply(entry, payload, status, headers)

    def _plan(self, body: dict[str, Any]) -> _Plan:
        """Pick the fault(s) and responder for a chat request; consumes ``times`` counters."""
        with self._lock:
            model = body.get("model")
            if isinstance(model, str):
                self._models_seen[model] = None
            faults: list[tuple[str, Fault]] = []
            server_fault = self._fault
            if server_fault is not None and server_fault._take():
                faults.append(("server-wide", server_fault))
            responder: Responder | None = None
            if not (faults and faults[0][1].status is not None):
                for candidate in self._responders:
                    if not candidate.exhausted and candidate.matches(body):
                        responder = candidate
                        responder.hits += 1
                        if responder.fault is not None and responder.fault._take():
                            faults.append(("responder", responder.fault))
                        break
            delay = 0.0
            status: int | None = None
            retry_after: float | None = None
            origin = ""
            for where, fault in faults:
                delay += fault.latency_s + (fault.hang_s or 0.0)
                if fault.latency_range is not None:
                    delay += self._rng.uniform(*fault.latency_range)
                if status is None and fault.status is not None:
                    status, retry_after, origin = fault.status, fault.retry_after, where
            return _Plan(
                responder=responder,
                delay_s=delay,
                status=status,
                retry_after=retry_after,
                malformed=any(f.malformed for _, f in faults),
                truncated=any(f.truncated for _, f in faults),
                error_origin=origin,
            )

    async def _chat(self, request: Request) -> Response:
        arrived = time.time()
        started = self.clock()  # the injected delay counts from here (``Fault``)
        body, problem = await self._read_json(request)
        if problem is not None:
            return self._error(request, body, arrived, 400, problem)
        if body.get("stream"):
            return self._error(
                request, body, arrived, 400, "stream=true is not supported by FakeOpenAI; send stream=false"
            )
        if not isinstance(body.get("messages"), list):
            return self._error(request, body, arrived, 400, "'messages' must be a list")

        plan = self._plan(body)
        if plan.status is not None:
            headers = {}
            if plan.retry_after is not None:
                headers["retry-after"] = f"{plan.retry_after:g}"
            response = self._error(
                request,
                body,
                arrived,
                plan.status,
                f"injected {plan.error_origin} fault: HTTP {plan.status}",
                responder=plan.responder,
                headers=headers,
                delay_s=plan.delay_s,
            )
            await self._sleep(plan.delay_s - (self.clock() - started))
            return response

        responder = plan.responder
        try:
            content = await self._content(responder, body)
        except Exception as exc:  # a broken scripted reply: fail loudly, with the cause
            return self._error(
                request, body, arrived, 500, f"responder reply raised {exc!r}", responder=responder
            )
        finish_reason = "stop"
        if plan.truncated:
            content = content[: len(content) // 2]
            finish_reason = "length"
        if plan.malformed:
            content = _malform(content)

        message: dict[str, Any] = {"role": "assistant", "content": content}
        reasoning = responder.reasoning if responder is not None else None
        if reasoning is not None:
            if responder is not None and responder.reasoning_style == "think_tag":
                message["content"] = f"<think>\n{reasoning}\n</think>\n\n{content}"
            else:
                message["reasoning_content"] = reasoning
                message["reasoning"] = reasoning
        n = body.get("n")
        n = n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 1
        prompt_tokens = sum(
            _word_count(_message_text(m.get("content"))) for m in body["messages"] if isinstance(m, dict)
        )
        completion_tokens = _word_count(message["content"]) + (
            _word_count(reasoning) if reasoning and "reasoning" in message else 0
        )
        payload = {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(arrived),
            "model": body.get("model") or DEFAULT_MODEL_ID,
            "choices": [
                {"index": i, "message": dict(message), "finish_reason": finish_reason, "logprobs": None}
                for i in range(n)
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens * n,
                "total_tokens": prompt_tokens + completion_tokens * n,
            },
        }
        entry = self._record(request, body, arrived, responder, 200, payload, plan.delay_s)
        await self._sleep(plan.delay_s - (self.clock() - started))
        return self._reply(entry, payload)

    async def _content(self, responder: Responder | None, body: dict[str, Any]) -> str:
        reply: Any = responder.reply if responder is not None else None
        if callable(reply):
            reply = reply(body)
            if inspect.isawaitable(reply):
                reply = await reply
        if reply is None:
            _, schema = request_schema(body)
            if schema is None:
                return "ok"
            reply = schema_instance(schema)
        if isinstance(reply, str):
            return reply
        if isinstance(reply, (dict, list)):
            return json.dumps(reply)
        raise TypeError(f"reply must be str, dict, list or None, got {type(reply).__name__}")

    async def _embeddings(self, request: Request) -> Response:
        arrived = time.time()
        body, problem = await self._read_json(request)
        if problem is not None:
            return self._error(request, body, arrived, 400, problem)
        raw_input = body.get("input")
        texts: list[str]
        if isinstance(raw_input, str):
            texts = [raw_input]
        elif isinstance(raw_input, list) and raw_input and all(isinstance(x, int) for x in raw_input):
            texts = [json.dumps(raw_input)]  # one pre-tokenized input
        elif isinstance(raw_input, list) and raw_input:
            texts = [x if isinstance(x, str) else json.dumps(x) for x in raw_input]
        else:
            return self._error(request, body, arrived, 400, "'input' must be a string or a non-empty list")
        dim = body.get("dimensions") or self.embedding_dim
        if not isinstance(dim, int) or dim <= 0:
            return self._error(request, body, arrived, 400, "'dimensions' must be a positive integer")
        encoding = body.get("encoding_format") or "float"
        if encoding not in ("float", "base64"):
            return self._error(request, body, arrived, 400, "'encoding_format' must be 'float' or 'base64'")
        model = body.get("model") or DEFAULT_MODEL_ID
        started = self.clock()
        delay, status, retry_after = 0.0, None, None
        with self._lock:
            self._models_seen[model] = None
            fault = self.embedding_fault
            if fault is not None and fault._take():
                delay = fault.latency_s + (fault.hang_s or 0.0)
                if fault.latency_range is not None:
                    delay += self._rng.uniform(*fault.latency_range)
                status, retry_after = fault.status, fault.retry_after
        if status is not None:
            headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else None
            response = self._error(request, body, arrived, status, f"injected embeddings fault: HTTP {status}",
                                   headers=headers, delay_s=delay)
            await self._sleep(delay - (self.clock() - started))
            return response
        data = []
        for index, text in enumerate(texts):
            vector = fake_embedding(text, dim)
            embedding: Any = vector
            if encoding == "base64":
                # The openai client asks for base64 by default and decodes little-endian float32.
                embedding = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode("ascii")
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(_word_count(t) for t in texts)
        payload = {
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        entry = self._record(request, body, arrived, None, 200, payload, delay)
        await self._sleep(delay - (self.clock() - started))
        return self._reply(entry, payload)

    async def _models(self, request: Request) -> Response:
        arrived = time.time()
        with self._lock:
            names = [DEFAULT_MODEL_ID, *(m for m in self._models_seen if m != DEFAULT_MODEL_ID)]
        payload = {
            "object": "list",
            "data": [{"id": name, "object": "model", "created": 0, "owned_by": "fake"} for name in names],
        }
        self._record(request, None, arrived, None, 200, payload)
        return JSONResponse(payload)

    async def _health(self, request: Request) -> Response:
        payload = {"status": "ok"}
        self._record(request, None, time.time(), None, 200, payload)
        return JSONResponse(payload)

    async def _not_found(self, request: Request) -> Response:
        arrived = time.time()
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        return self._error(
            request, body, arrived, 404, f"{request.method} {request.url.path} is not served by FakeOpenAI"
        )


async def _answered(entry: RecordedRequest) -> None:
    # A coroutine, so Starlette runs it in the same task right after writing the body (a plain function would go
    # to a worker thread and be stamped late).
    entry.answered = time.time()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
