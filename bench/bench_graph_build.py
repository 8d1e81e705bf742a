"""Overhead of ``build_domain_graph`` over calling LightRAG directly.

Every side builds the same domain (N synthetic documents) with LightRAG 1.5.7, the same local tokenizer, chunk
sizes, embedder and concurrency, and gets the same extraction answers after the same latency per LLM call:

- **hopforge**: ``tasks.graph.build.build_domain_graph``: every LLM call through the gateway (HTTP to the loopback
  fake, response cache in SQLite, usage accounting), doc-status bookkeeping, then the GraphML read into canonical
  records;
- **direct-http**: ``LightRAG.ainsert`` with a minimal LLM function that posts the same chat request to the same
  fake endpoint through one shared OpenAI client (keep-alive pool and TCP_NODELAY, as the gateway has), LightRAG's
  defaults otherwise (its own LLM cache on, cold). This isolates what hopforge adds around LightRAG;
- **direct-function**: ``LightRAG.ainsert`` with an in-process async function that sleeps the same latency and
  returns the same answer: no HTTP at all, so this ratio also carries the client-side cost of an OpenAI HTTP call
  (SDK request building, httpx, response parsing), which any real endpoint costs.

The fake endpoint (``testing.fake.FakeOpenAI`` with a fixed latency) runs in a child process, as a remote server
would: serving requests does not compete with the client for this process's GIL. Caches are cold on every side
(a fresh data directory per run). Sides alternate, each run ``--repeat`` times after one warm-up; the report gives
medians, best runs (least disturbed by other load) and both ratios hopforge/direct (target <= 1.1).

    python bench/bench_graph_build.py [--docs 30] [--latency 0.02] [--concurrency 8] [--parallel-docs 4]
                                      [--repeat 7] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import multiprocessing
import random
import re
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from bench.results_file import save_report  # noqa: E402

from gateway.client import LLMGateway  # noqa: E402
from testing.fake import Fault, FakeOpenAI, fake_embedding  # noqa: E402
from schemas.config import load_settings  # noqa: E402
from schemas.corpus import Document, IngestOptions, content_hash, make_doc_id  # noqa: E402
from tasks.graph.build import build_domain_graph  # noqa: E402
from tasks.corpus.text import count_tokens, make_lightrag_tokenizer  # noqa: E402

DOMAIN = "cs"
TUPLE, COMPLETE = "<|#|>", "<|COMPLETE|>"
_INPUT = re.compile(r"---Input Text---\n```\n(.*?)\n```", re.S)
_TYPES = ("person", "organization", "location", "artifact", "concept")


def entity_names(n: int = 60) -> list[str]:
    first = ["Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "John", "Frances", "Claude", "Tony"]
    last = ["Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Backus", "Allen", "Shannon", "Hoare"]
    return [f"{f} {ln}" for f in first for ln in last][:n]


def synthetic_documents(n_docs: int, seed: int = 0) -> list[Document]:
    """Documents of 3-6 sentences, each naming two or three known entities, padded with plain prose."""
    rng = random.Random(seed)
    names = entity_names()
    filler = "The work went on for years, with many letters, drafts and long discussions about methods. "
    docs = []
    for i in range(n_docs):
        parts = []
        for _ in range(rng.randint(3, 6)):
            a, b, c = rng.sample(names, 3)
            parts.append(f"{a} worked with {b} on a problem that {c} had posed. " + filler * rng.randint(1, 3))
        text = "".join(parts).strip()
        docs.append(
            Document(
                doc_id=make_doc_id(DOMAIN, text), domain=DOMAIN, source="bench/cs.jsonl", source_line=i + 1,
                text=text, content_hash=content_hash(text), n_tokens=count_tokens(text),
            )
        )  # fmt: skip
    return docs


NAMES = entity_names()
TYPE_OF = {n: _TYPES[i % len(_TYPES)] for i, n in enumerate(NAMES)}


def reply_for_prompt(prompt: str) -> str:
    """LightRAG 1.5.7 delimiter rows for the known names in the prompt's input text."""
    m = _INPUT.search(prompt)
    if m is None:
        return COMPLETE if "Based on the last extraction task" in prompt else "A merged description."
    found = [n for n in NAMES if n in m.group(1)]
    rows = [f"entity{TUPLE}{n}{TUPLE}{TYPE_OF[n]}{TUPLE}{n} is named in the text." for n in found]
    rows += [f"relation{TUPLE}{a}{TUPLE}{b}{TUPLE}collaboration{TUPLE}{a} worked with {b}." for a, b in zip(found, found[1:])]
    return "\n".join([*rows, COMPLETE])


class HashEmbedder:
    name, dim = "hash-32", 32

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray([fake_embedding(t, self.dim) for t in texts], dtype=np.float32)


async def run_hopforge(base_url: str, docs: list[Document], options: IngestOptions, args) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(
            data_dir=Path(tmp),
            roles={"extractor": {"base_url": base_url, "model": "fake-model", "max_concurrency": args.concurrency}},
        )
        gw = LLMGateway(settings)
        started = time.perf_counter()
        result = await build_domain_graph(
            DOMAIN, docs, working_dir=Path(tmp) / "graphs" / DOMAIN / "lightrag", gateway=gw, embedder=HashEmbedder(),
            options=options, llm_max_async=args.concurrency, max_parallel_insert=args.parallel_docs,
        )  # fmt: skip
        wall = time.perf_counter() - started
        await gw.aclose()
    return {
        "wall_s": wall, "llm_calls": result.usage.llm_calls, "docs_processed": result.docs_processed,
        "entities": len(result.entities), "relations": len(result.relations), "chunks": result.chunks,
    }  # fmt: skip


def _serve(latency: float, port_queue, stop_event) -> None:
    with FakeOpenAI(default_fault=Fault(latency_s=latency)) as fake:
        fake.add(reply=lambda body: reply_for_prompt(body["messages"][-1]["content"]))
        port_queue.put(fake.base_url)
        stop_event.wait()


class FakeServerProcess:
    """The loopback fake in a child process, as a remote endpoint would be: serving HTTP then costs this process
    (and its GIL, on a 2-core machine) nothing, on any side."""

    def __init__(self, latency: float) -> None:
        ctx = multiprocessing.get_context("fork")
        self._queue = ctx.Queue()
        self._stop = ctx.Event()
        self._proc = ctx.Process(target=_serve, args=(latency, self._queue, self._stop), daemon=True)
        self.base_url = ""

    def __enter__(self) -> FakeServerProcess:
        self._proc.start()
        self.base_url = self._queue.get(timeout=60)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._proc.join(timeout=30)


def _openai_client(base_url: str, concurrency: int):
    """One OpenAI client with a keep-alive pool as large as the concurrency and TCP_NODELAY (the gateway's setup:
    without it each request waits ~40 ms for a delayed ACK, which would slow this baseline, not hopforge)."""
    import openai

    base = openai.DefaultAsyncHttpxClient
    httpmod = importlib.import_module(base.__mro__[1].__module__.split(".")[0])  # httpx or httpx2
    size = concurrency + 4
    transport = httpmod.AsyncHTTPTransport(
        limits=httpmod.Limits(max_connections=size, max_keepalive_connections=size),
        socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
    )
    return openai.AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0, http_client=base(transport=transport))


async def run_direct(docs: list[Document], options: IngestOptions, args, base_url: str | None) -> dict[str, Any]:
    """LightRAG alone: over HTTP to ``base_url`` with a minimal client, or (``None``) an in-process function."""
    from lightrag import LightRAG
    from lightrag.base import DocStatus
    from lightrag.utils import EmbeddingFunc

    calls = 0
    client = _openai_client(base_url, args.concurrency) if base_url else None

    async def llm(prompt: str, system_prompt: str | None = None, history_messages=None, **kwargs: Any) -> str:
        nonlocal calls
        calls += 1
        if client is None:
            await asyncio.sleep(args.latency)
            return reply_for_prompt(prompt)
        messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
        messages += [*(history_messages or []), {"role": "user", "content": prompt}]
        resp = await client.chat.completions.create(model="fake-model", messages=messages)
        return resp.choices[0].message.content or ""

    emb = HashEmbedder()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        rag = LightRAG(
            working_dir=tmp, workspace=f"direct-{Path(tmp).name}", llm_model_func=llm,
            embedding_func=EmbeddingFunc(embedding_dim=emb.dim, func=emb.aembed, model_name=emb.name),
            tokenizer=make_lightrag_tokenizer(), chunk_token_size=options.chunk_token_size,
            chunk_overlap_token_size=options.chunk_overlap_token_size, llm_model_max_async=args.concurrency,
            max_parallel_insert=args.parallel_docs,
        )  # fmt: skip
        await rag.initialize_storages()
        try:
            await rag.ainsert([d.text for d in docs], ids=[d.doc_id for d in docs], file_paths=[d.lightrag_file_path() for d in docs])
            processed = len(await rag.doc_status.get_docs_by_statuses([DocStatus.PROCESSED]))
            nodes = len(await rag.chunk_entity_relation_graph.get_all_labels())
        finally:
            await rag.finalize_storages()
        wall = time.perf_counter() - started
    if client is not None:
        await client.close()
    return {"wall_s": wall, "llm_calls": calls, "docs_processed": processed, "entities": nodes}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=30)
    ap.add_argument("--latency", type=float, default=0.02, help="seconds per LLM call, every side")
    ap.add_argument("--concurrency", type=int, default=8, help="LLM calls in flight (llm_model_max_async)")
    ap.add_argument("--parallel-docs", type=int, default=4, help="documents in flight (max_parallel_insert)")
    ap.add_argument("--chunk-tokens", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    logging.getLogger("lightrag").setLevel(logging.WARNING)  # LightRAG logs every chunk at INFO

    docs = synthetic_documents(args.docs)
    options = IngestOptions(chunk_token_size=args.chunk_tokens, chunk_overlap_token_size=args.chunk_tokens // 10)
    runs: dict[str, list[dict[str, Any]]] = {"hopforge": [], "direct_http": [], "direct_function": []}
    with FakeServerProcess(args.latency) as fake:
        sides = {
            "hopforge": lambda: run_hopforge(fake.base_url, docs, options, args),
            "direct_http": lambda: run_direct(docs, options, args, fake.base_url),
            "direct_function": lambda: run_direct(docs, options, args, None),
        }
        # One warm-up each (imports, tokenizer vocabulary), then alternate so drift hits every side alike.
        for side in sides.values():
            asyncio.run(side())
        for _ in range(args.repeat):
            for name, side in sides.items():
                runs[name].append(asyncio.run(side()))

    med = {name: statistics.median(r["wall_s"] for r in rs) for name, rs in runs.items()}
    # The best run of each side is the least disturbed by other load on the machine (2 shared cores here).
    best = {name: min(r["wall_s"] for r in rs) for name, rs in runs.items()}
    hop = runs["hopforge"][-1]
    calls = hop["llm_calls"]
    same_work = all(
        r["docs_processed"] == args.docs and r["llm_calls"] == calls and r["entities"] == hop["entities"]
        for rs in runs.values() for r in rs
    )  # fmt: skip
    report = {
        "docs": args.docs, "chunks": hop["chunks"], "llm_calls": calls, "latency_s": args.latency,
        "concurrency": args.concurrency, "parallel_docs": args.parallel_docs, "repeat": args.repeat,
        "ideal_llm_wall_s": round(calls * args.latency / args.concurrency, 3),
        **{f"{name}_wall_s": round(w, 3) for name, w in med.items()},
        "ratio_vs_direct_http": round(med["hopforge"] / med["direct_http"], 3),
        "ratio_vs_direct_function": round(med["hopforge"] / med["direct_function"], 3),
        **{f"{name}_best_s": round(w, 3) for name, w in best.items()},
        "best_ratio_vs_direct_http": round(best["hopforge"] / best["direct_http"], 3),
        "best_ratio_vs_direct_function": round(best["hopforge"] / best["direct_function"], 3),
        **{f"{name}_runs_s": [round(r["wall_s"], 3) for r in rs] for name, rs in runs.items()},
        "same_work": same_work, "entities": hop["entities"], "relations": hop["relations"],
    }  # fmt: skip
    print(
        f"graph build, {args.docs} docs / {report['chunks']} chunks / {calls} LLM calls at {args.latency * 1000:.0f} ms, "
        f"C={args.concurrency}, {args.parallel_docs} docs in flight (medians of {args.repeat}): "
        f"hopforge {med['hopforge']:.2f} s, direct LightRAG over HTTP {med['direct_http']:.2f} s "
        f"-> ratio {report['ratio_vs_direct_http']:.3f}; in-process LLM function "
        f"{med['direct_function']:.2f} s -> ratio {report['ratio_vs_direct_function']:.3f}; best runs: "
        f"{best['hopforge']:.2f} / {best['direct_http']:.2f} / {best['direct_function']:.2f} s -> ratios "
        f"{report['best_ratio_vs_direct_http']:.3f} / {report['best_ratio_vs_direct_function']:.3f}; same work: {same_work}"
    )
    print(json.dumps(report))
    save_report(report, args.json)


if __name__ == "__main__":
    main()
