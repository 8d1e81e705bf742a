"""Graph building with LightRAG 1.5.7: its extraction format, the gateway path, resume after a kill, failures.

The fake extractor answers like a well-behaved LLM: it reads the chunk text out of LightRAG's extraction prompt,
finds the entity names it knows, and emits LightRAG's delimiter rows. The expected graph is computed
independently from the chunks LightRAG stores (``tasks.corpus.text.lightrag_stored_chunks``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gateway.client import LLMGateway
from testing.fake import Fault, fake_embedding
from gateway.usage import RoleUsage
from schemas.config import load_settings
from schemas.corpus import Document, IngestOptions, content_hash, make_chunk_id, make_doc_id
from schemas.graph_build import BuildUsage
from tasks.graph.build import (
    GRAPHML_NAME,
    ExtractionLLMError,
    GraphBuildError,
    build_domain_graph,
    domain_working_dir,
    graphml_path,
    make_llm_func,
    workspace_for,
)
from tasks.corpus.text import count_tokens, lightrag_stored_chunks

DOMAIN = "cs"
OPTIONS = IngestOptions(chunk_token_size=60, chunk_overlap_token_size=10)
TUPLE = "<|#|>"
COMPLETE = "<|COMPLETE|>"

#: Entity names the fake extractor recognises, with their types (emitted in this order).
KNOWN: dict[str, str] = {
    "Ada Lovelace": "person",
    "Charles Babbage": "person",
    "Mary Somerville": "person",
    "Difference Engine": "artifact",
    "Analytical Engine": "artifact",
    "Bernoulli Numbers": "concept",
    "Royal Society": "organization",
    "London": "location",
    "Alan Turing": "person",
    "Bletchley Park": "location",
    "Grace Hopper": "person",
    "Harvard Mark I": "artifact",
}
FILLER = "It was a period of steady work, and many long letters were written and answered. "
TEXTS = [
    "Ada Lovelace met Charles Babbage in London.",
    "Charles Babbage designed the Difference Engine. " + FILLER * 2 + "The Analytical Engine followed it.",
    "Alan Turing worked at Bletchley Park.",
    "Ada Lovelace wrote about the Analytical Engine and Bernoulli Numbers. " + FILLER + "Mary Somerville knew Ada Lovelace.",
    "The Royal Society in London honoured Charles Babbage. " + FILLER + "Alan Turing joined the Royal Society.",
]
POISON_TEXT = "Grace Hopper programmed the Harvard Mark I."

_INPUT = re.compile(r"---Input Text---\n```\n(.*?)\n```", re.S)


def make_doc(text: str, line: int) -> Document:
    return Document(
        doc_id=make_doc_id(DOMAIN, text), domain=DOMAIN, source="corpus/cs.jsonl", source_line=line, text=text,
        content_hash=content_hash(text), n_tokens=count_tokens(text),
    )  # fmt: skip


DOCS = [make_doc(t, i + 1) for i, t in enumerate(TEXTS)]


def names_in(text: str) -> list[str]:
    return [n for n in KNOWN if n in text]


def reply_for_prompt(prompt: str) -> str:
    """What the fake extractor answers to one LightRAG prompt."""
    m = _INPUT.search(prompt)
    if m is None:
        # The gleaning ("continue") prompt carries no input text: nothing was missed. Any other prompt would be a
        # description summary, which these small documents never trigger.
        return COMPLETE if "Based on the last extraction task" in prompt else "A short summary."
    found = names_in(m.group(1))
    rows = [f"entity{TUPLE}{n}{TUPLE}{KNOWN[n]}{TUPLE}{n} is mentioned in the text." for n in found]
    rows += [
        f"relation{TUPLE}{a}{TUPLE}{b}{TUPLE}mentioned together, history{TUPLE}{a} and {b} appear together."
        for a, b in zip(found, found[1:])
    ]
    return "\n".join([*rows, COMPLETE])


def last_user_text(body: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def extraction_reply(body: dict[str, Any]) -> str:
    return reply_for_prompt(last_user_text(body))


def expected_graph(docs: Sequence[Document]) -> tuple[dict[str, set[str]], dict[frozenset[str], set[str]]]:
    """Entity name -> chunk ids, and relation (unordered pair) -> chunk ids, from LightRAG's stored chunks."""
    entities: dict[str, set[str]] = {}
    relations: dict[frozenset[str], set[str]] = {}
    for d in docs:
        for c in lightrag_stored_chunks(d.text, OPTIONS.chunk_token_size, OPTIONS.chunk_overlap_token_size):
            cid = make_chunk_id(d.doc_id, c.index)
            found = names_in(c.text)
            for n in found:
                entities.setdefault(n, set()).add(cid)
            for a, b in zip(found, found[1:]):
                relations.setdefault(frozenset((a, b)), set()).add(cid)
    return entities, relations


def graph_view(entities, relations) -> tuple[dict, dict]:
    """Order-free view of graph records (merge order depends on concurrency)."""
    ents = {e.name: (e.type, frozenset(e.source_chunk_ids), frozenset(e.file_paths), frozenset(e.description.split("\n"))) for e in entities}
    rels = {frozenset((r.source, r.target)): (frozenset(r.source_chunk_ids), frozenset(r.keywords), frozenset(r.description.split("\n"))) for r in relations}
    return ents, rels


def assert_expected(result, docs: Sequence[Document]) -> None:
    want_entities, want_relations = expected_graph(docs)
    got_entities = {e.name: set(e.source_chunk_ids) for e in result.entities}
    got_relations = {frozenset((r.source, r.target)): set(r.source_chunk_ids) for r in result.relations}
    assert got_entities == want_entities
    assert got_relations == want_relations
    for e in result.entities:
        assert e.type == KNOWN[e.name] and e.description == f"{e.name} is mentioned in the text."
    for r in result.relations:
        assert sorted(r.keywords) == ["history", "mentioned together"] and not r.directed
    chunk_id = re.compile(r"^doc-[0-9a-f]{32}-chunk-\d{3}$")
    assert all(chunk_id.match(c) for e in result.entities for c in e.source_chunk_ids)


class HashEmbedder:
    """Deterministic 16-d unit vectors (the fake server's embedding function, without the HTTP round trip)."""

    name = "hash-16"
    dim = 16

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray([fake_embedding(t, self.dim) for t in texts], dtype=np.float32)

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)


def make_settings(fake, data_dir: Path, **role: Any):
    extractor = {"base_url": fake.base_url, "model": "fake-model", "max_retries": 1, "timeout_s": 10.0, "max_concurrency": 8}
    return load_settings(data_dir=data_dir, roles={"extractor": {**extractor, **role}})


def make_gateway(settings) -> LLMGateway:
    return LLMGateway(settings, backoff_base_s=0.01, backoff_cap_s=0.02)


def chat_requests(fake) -> list:
    return [r for r in fake.requests if r.path.endswith("/chat/completions")]


def request_key(req) -> str:
    return json.dumps(req.json["messages"], sort_keys=True)


async def build(fake, tmp_path: Path, docs=DOCS, *, working_dir: Path | None = None, **kw):
    settings = make_settings(fake, tmp_path)
    gw = make_gateway(settings)
    try:
        return await build_domain_graph(
            DOMAIN, docs, working_dir=working_dir or domain_working_dir(tmp_path, DOMAIN), gateway=gw,
            embedder=HashEmbedder(), options=OPTIONS, **kw,
        )  # fmt: skip
    finally:
        await gw.aclose()


# -- LightRAG's own contract, without the gateway -----------------------------------------------------------------


async def test_lightrag_extraction_format_with_plain_llm_function(tmp_path):
    """Pins what LightRAG 1.5.7 sends and parses: the delimiters, the prompt around the chunk, the gleaning call,
    the keyword arguments an llm_model_func receives, and chunk keys in source ids."""
    from lightrag import LightRAG
    from lightrag.prompt import PROMPTS
    from lightrag.utils import EmbeddingFunc

    from tasks.corpus.text import make_lightrag_tokenizer

    assert (PROMPTS["DEFAULT_TUPLE_DELIMITER"], PROMPTS["DEFAULT_COMPLETION_DELIMITER"]) == (TUPLE, COMPLETE)
    seen: list[tuple[str, str | None, list, set[str]]] = []

    async def llm(prompt, system_prompt=None, history_messages=None, **kwargs):
        seen.append((prompt, system_prompt, list(history_messages or []), set(kwargs)))
        return reply_for_prompt(prompt)

    emb = HashEmbedder()
    rag = LightRAG(
        working_dir=str(tmp_path / "rag"), workspace=f"plain-{tmp_path.name}", llm_model_func=llm,
        embedding_func=EmbeddingFunc(embedding_dim=emb.dim, func=emb.aembed), tokenizer=make_lightrag_tokenizer(),
        chunk_token_size=OPTIONS.chunk_token_size, chunk_overlap_token_size=OPTIONS.chunk_overlap_token_size,
        enable_llm_cache_for_entity_extract=False,
    )  # fmt: skip
    await rag.initialize_storages()
    try:
        await rag.ainsert([d.text for d in DOCS], ids=[d.doc_id for d in DOCS], file_paths=[d.lightrag_file_path() for d in DOCS])
    finally:
        await rag.finalize_storages()

    from tasks.graph.importers import read_lightrag_graphml

    graph = read_lightrag_graphml(tmp_path / "rag" / f"plain-{tmp_path.name}" / GRAPHML_NAME, DOMAIN)
    assert_expected(graph, DOCS)
    extracts = [s for s in seen if _INPUT.search(s[0])]
    gleans = [s for s in seen if not _INPUT.search(s[0])]
    n_chunks = sum(len(lightrag_stored_chunks(d.text, OPTIONS.chunk_token_size, OPTIONS.chunk_overlap_token_size)) for d in DOCS)
    assert len(extracts) == len(gleans) == n_chunks  # one gleaning round per chunk (LightRAG's default)
    assert all(TUPLE in s[1] and COMPLETE in s[1] for s in extracts)  # the system prompt states the format
    # Gleaning replays the first exchange as history: [user prompt, assistant answer].
    assert all([m["role"] for m in s[2]] == ["user", "assistant"] for s in gleans)
    assert all(s[3] == {"hashing_kv"} for s in seen)  # all the llm func gets besides the prompt: LightRAG's cache handle
    assert not list((tmp_path / "rag").rglob("kv_store_llm_response_cache.json"))  # its own cache stayed unused


# -- through the gateway ---------------------------------------------------------------------------------------------


async def test_build_through_gateway_then_rerun_makes_no_llm_calls(fake_llm, tmp_path):
    fake_llm.add(reply=extraction_reply)
    ticks: list[tuple[int, int]] = []
    result = await build(fake_llm, tmp_path, progress=lambda d, t: ticks.append((d, t)), progress_interval_s=0.01)

    assert_expected(result, DOCS)
    assert (result.docs_total, result.docs_processed, result.docs_failed, result.failures) == (5, 5, 0, [])
    n_chunks = sum(len(lightrag_stored_chunks(d.text, OPTIONS.chunk_token_size, OPTIONS.chunk_overlap_token_size)) for d in DOCS)
    assert result.chunks == n_chunks and result.seconds > 0
    assert result.usage.llm_calls == fake_llm.calls() == 2 * n_chunks and result.usage.cache_hits == 0
    assert ticks[-1] == (5, 5) and ticks == sorted(ticks)
    assert Path(result.graphml_path) == graphml_path(domain_working_dir(tmp_path, DOMAIN), DOMAIN)
    assert result.workspace == workspace_for(DOMAIN, domain_working_dir(tmp_path, DOMAIN))
    assert not list(tmp_path.rglob("kv_store_llm_response_cache.json"))  # LightRAG's cache stayed unused
    sent = chat_requests(fake_llm)[0].json
    assert [m["role"] for m in sent["messages"]] == ["system", "user"] and "hashing_kv" not in sent

    # A finished build again: LightRAG skips every document, no LLM call at all, the same graph.
    again = await build(fake_llm, tmp_path)
    assert fake_llm.calls() == 2 * n_chunks
    assert (again.docs_processed, again.docs_already_processed, again.usage) == (5, 5, BuildUsage())
    assert graph_view(again.entities, again.relations) == graph_view(result.entities, result.relations)

    # A fresh working directory with the same gateway cache: LightRAG redoes everything, the endpoint sees nothing.
    fresh = await build(fake_llm, tmp_path, working_dir=tmp_path / "elsewhere")
    assert fake_llm.calls() == 2 * n_chunks
    assert fresh.usage.cache_hits == 2 * n_chunks and fresh.usage.llm_calls == 0
    assert graph_view(fresh.entities, fresh.relations) == graph_view(result.entities, result.relations)


async def test_failing_document_is_recorded_retried_and_others_built(fake_llm, tmp_path):
    from warehouse.db import Warehouse
    from warehouse.graphs import write_build, write_snapshot

    poisoned = {"on": True}
    fake_llm.add(
        predicate=lambda body: poisoned["on"] and "Grace Hopper" in last_user_text(body),
        fault=Fault(status=500), label="poison",
    )  # fmt: skip
    fake_llm.add(reply=extraction_reply)
    bad = make_doc(POISON_TEXT, 99)
    docs = [*DOCS, bad]

    first = await build(fake_llm, tmp_path, docs)
    assert (first.docs_processed, first.docs_failed) == (5, 1)
    (failure,) = first.failures
    assert failure.doc_id == bad.doc_id and failure.status == "failed"
    assert make_chunk_id(bad.doc_id, 0) in failure.reason and "server error 500" in failure.reason
    assert failure.file_path == bad.lightrag_file_path()
    assert_expected(first, DOCS)  # the other documents are built; nothing of the failed one is in the graph
    poison_calls = [r for r in chat_requests(fake_llm) if "Grace Hopper" in last_user_text(r.json)]
    assert len(poison_calls) == 2  # the gateway retried the 500 once (max_retries=1), then gave up

    with Warehouse(":memory:") as wh:
        snap = write_snapshot(wh, DOMAIN, first.entities, first.relations, source="lightrag", build_run_id="r1", directed=first.directed)
        write_build(wh, first, "r1", snap.snapshot_id)
        write_build(wh, first, "r1", snap.snapshot_id)  # writing the same build again replaces it
        row = wh.query("SELECT * FROM graph_builds")
        assert len(row) == 1 and row[0]["docs_failed"] == 1 and row[0]["entities"] == len(first.entities)
        assert row[0]["snapshot_id"] == snap.snapshot_id and row[0]["llm_calls"] == first.usage.llm_calls
        assert wh.query("SELECT doc_id, reason FROM graph_build_failures") == [{"doc_id": bad.doc_id, "reason": failure.reason}]
        # The run's ledger figures may be written instead of the build's own count.
        write_build(wh, first, "r2", None, RoleUsage("extractor", calls=7, cache_hits=2, prompt_tokens=30, completion_tokens=4))
        assert wh.query("SELECT llm_calls, cache_hits, prompt_tokens, snapshot_id FROM graph_builds WHERE run_id = 'r2'") == [
            {"llm_calls": 7, "cache_hits": 2, "prompt_tokens": 30, "snapshot_id": None}
        ]

    # Next run: LightRAG retries only the failed document (one attempt, still failing); no other LLM call.
    before = len(chat_requests(fake_llm))
    second = await build(fake_llm, tmp_path, docs)
    new = chat_requests(fake_llm)[before:]
    assert (second.docs_processed, second.docs_failed, second.docs_retried) == (5, 1, 1)
    assert len(new) == 2 and all("Grace Hopper" in last_user_text(r.json) for r in new)

    # The endpoint recovers: the retried document is built and joins the graph.
    poisoned["on"] = False
    third = await build(fake_llm, tmp_path, docs)
    assert (third.docs_processed, third.docs_failed, third.failures) == (6, 0, [])
    assert_expected(third, docs)


async def test_llm_func_raises_on_gateway_failure_and_passes_sampling(fake_llm, tmp_path):
    fake_llm.add(prompt_contains="broken", fault=Fault(status=404))
    fake_llm.add(reply="fine")
    gw = make_gateway(make_settings(fake_llm, tmp_path))
    fn = make_llm_func(gw)
    try:
        out = await fn("hello", system_prompt="sys", history_messages=[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
                       hashing_kv=object(), stream=False, enable_cot=True, max_tokens=77)  # fmt: skip
        assert out == "fine"
        body = chat_requests(fake_llm)[-1].json
        assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
        assert body["max_tokens"] == 77 and "stream" not in body and "enable_cot" not in body
        with pytest.raises(ExtractionLLMError, match="not_found"):
            await fn("broken prompt")
        # LightRAG re-raises as type(e)(prefixed message): the class must take a single message.
        assert str(ExtractionLLMError("C[1/1]: chunk: x")) == "C[1/1]: chunk: x"
    finally:
        await gw.aclose()


async def test_bad_input_is_refused_before_anything_happens(fake_llm, tmp_path):
    other = make_doc("Ada Lovelace again.", 1).model_copy(update={"domain": "history"})
    with pytest.raises(GraphBuildError, match="belongs to domain 'history'"):
        await build(fake_llm, tmp_path, [*DOCS, other])
    with pytest.raises(GraphBuildError, match="may not set tokenizer"):
        await build(fake_llm, tmp_path, lightrag_options={"tokenizer": None})
    with pytest.raises(GraphBuildError, match="chunker"):
        await build(fake_llm, tmp_path, lightrag_options={"addon_params": {"chunker": {}}})
    clash = DOCS[0].model_copy(update={"text": "something else"})
    with pytest.raises(GraphBuildError, match="share the doc_id"):
        await build(fake_llm, tmp_path, [DOCS[0], clash])
    assert fake_llm.calls() == 0 and not (tmp_path / "graphs").exists()


# -- crash and resume ----------------------------------------------------------------------------------------------

_CHILD = r"""
import asyncio, json, sys
from pathlib import Path
import numpy as np
from gateway.client import LLMGateway
from testing.fake import fake_embedding
from schemas.config import load_settings
from schemas.corpus import Document, IngestOptions
from tasks.graph.build import build_domain_graph

cfg = json.loads(Path(sys.argv[1]).read_text())

class Embedder:
    name, dim = "hash-16", 16
    async def aembed(self, texts):
        return np.asarray([fake_embedding(t, 16) for t in texts], dtype=np.float32)

settings = load_settings(data_dir=cfg["data_dir"], roles={"extractor": cfg["extractor"]})
gw = LLMGateway(settings, backoff_base_s=0.01, backoff_cap_s=0.02)
asyncio.run(build_domain_graph(
    cfg["domain"], [Document(**d) for d in cfg["documents"]], working_dir=Path(cfg["working_dir"]), gateway=gw,
    embedder=Embedder(), options=IngestOptions(**cfg["options"]), max_parallel_insert=1, llm_max_async=1,
))
print("finished without being killed")
"""


async def test_killed_build_resumes_without_repeating_finished_llm_calls(fake_llm, tmp_path, repo_root):
    """SIGKILL a build process in the middle of a document, then resume it here.

    The child makes one LLM call at a time, so when the fake receives call K every earlier answer has reached the
    child's gateway cache. The fake kills the child on receiving call K, before answering it.
    """
    kill_at = 5  # first document (1 chunk: 2 calls) done, the second (2 chunks) half way
    state: dict[str, Any] = {"n": 0, "proc": None}
    started = threading.Event()

    def reply(body: dict[str, Any]) -> str:
        state["n"] += 1  # the fake serves requests on one event loop: no lock needed
        if state["n"] == kill_at:
            started.wait(30)
            os.kill(state["proc"].pid, signal.SIGKILL)
        return extraction_reply(body)

    fake_llm.add(reply=reply)
    working_dir = domain_working_dir(tmp_path, DOMAIN)
    extractor = {"base_url": fake_llm.base_url, "model": "fake-model", "max_retries": 1, "timeout_s": 10.0, "max_concurrency": 8}
    cfg = {
        "domain": DOMAIN, "data_dir": str(tmp_path), "working_dir": str(working_dir), "extractor": extractor,
        "documents": [d.model_dump() for d in DOCS], "options": OPTIONS.model_dump(),
    }  # fmt: skip
    (tmp_path / "child.json").write_text(json.dumps(cfg))
    (tmp_path / "child.py").write_text(_CHILD)
    env = {**os.environ, "PYTHONPATH": str(repo_root)}
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / "child.py"), str(tmp_path / "child.json")], cwd=repo_root, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    state["proc"] = proc
    started.set()
    out, _ = await asyncio.to_thread(proc.communicate, timeout=120)
    assert proc.returncode == -signal.SIGKILL, out.decode(errors="replace")[-3000:]

    run1 = chat_requests(fake_llm)
    assert len(run1) == kill_at
    answered = {request_key(r) for r in run1[: kill_at - 1]}  # the K-th never reached the child
    resumed = await build(fake_llm, tmp_path, working_dir=working_dir)
    run2 = chat_requests(fake_llm)[kill_at:]

    assert not answered & {request_key(r) for r in run2}  # zero repeated requests for finished calls
    assert request_key(run1[-1]) in {request_key(r) for r in run2}  # the interrupted call was made again
    assert (resumed.docs_processed, resumed.docs_failed) == (5, 0)
    assert 1 <= resumed.docs_already_processed < 5  # finished documents were skipped...
    assert resumed.usage.cache_hits >= 1  # ...and the interrupted one's finished chunk came from the gateway cache
    n_chunks = sum(len(lightrag_stored_chunks(d.text, OPTIONS.chunk_token_size, OPTIONS.chunk_overlap_token_size)) for d in DOCS)
    assert len(run1) - 1 + len(run2) == 2 * n_chunks  # every call made exactly once overall

    # The resumed graph equals an uninterrupted build's.
    assert_expected(resumed, DOCS)
    reference = await build(fake_llm, tmp_path, working_dir=tmp_path / "uninterrupted")
    assert graph_view(resumed.entities, resumed.relations) == graph_view(reference.entities, reference.relations)
