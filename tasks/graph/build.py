"""Build a domain's knowledge graph with LightRAG, every LLM call going through the gateway.

``build_domain_graph`` inserts a domain's documents into one LightRAG instance (one working directory and
workspace per domain) and returns the resulting graph as canonical records plus what happened to each document.
It never touches the warehouse: the flow writes the snapshot (``warehouse.graphs.write_snapshot``) and then the
build record (``write_build``), each in one transaction.

Facts about LightRAG 1.5.7 this module relies on (read in its source, and pinned by ``tests/test_graph_build.py``):

- **One cache.** Entity extraction, gleaning and description summaries all go through
  ``lightrag.utils.use_llm_func_with_cache`` with cache mode ``"default"``; ``handle_cache`` reads and
  ``save_to_cache`` writes that mode only when ``enable_llm_cache_for_entity_extract`` is true (multimodal
  analysis shares the flag). With it false every call reaches ``llm_model_func``, so the gateway's
  content-addressed cache is the only one and its usage ledger sees every cache hit. ``enable_llm_cache`` (query
  modes) is switched off too; a build runs no query.
- **Resume.** ``apipeline_process_enqueue_documents`` picks up PENDING documents and the PROCESSING / PARSING /
  ANALYZING ones a killed process left behind (``_AUTO_RESUME_DOC_STATUSES``); a resumed document is purged of
  its partial chunks and graph contributions and extracted again from scratch. PROCESSED documents are never
  touched again. The re-extraction costs no endpoint call for a chunk finished before the crash: its prompts
  depend only on the chunk text (and LightRAG's fixed prompt settings), and the gateway cached each answer
  before returning it to LightRAG.
- **FAILED is not retried automatically.** 1.5.7 re-processes a FAILED document only after an explicit manual
  retry request in the workspace's pipeline ingress (what the server's ``/documents/reprocess_failed`` does):
  the run drains the automatic backlog, resets FAILED to PENDING with no worker running, then processes them.
  ``build_domain_graph`` publishes such a request when one of its documents is FAILED, so each run gives every
  unfinished document one more attempt; the gateway already retried transient endpoint errors inside it.
- **Failure reasons.** An exception out of ``llm_model_func`` fails the whole document (the other chunks' tasks
  are cancelled) and lands in ``doc_status.error_msg`` as ``"C[i/n]: <chunk id>: <message>"``. LightRAG adds
  those prefixes by rebuilding the exception from its arguments (``utils.create_prefixed_exception``:
  ``type(e)(*args)``), so the exception class raised here takes a single message argument.
- **Re-enqueueing an id that already has a doc_status row** (any status) makes LightRAG store a FAILED
  ``dup-…`` record and skip the document: only documents LightRAG has never seen are inserted.
- **Layout.** With ``workspace=W`` every file-based store lives in ``<working_dir>/W/``, the graph in
  ``<working_dir>/W/graph_chunk_entity_relation.graphml``. LightRAG also keeps per-process state (loaded
  stores, pipeline flags) keyed by workspace name alone, not by directory: two instances with one workspace name
  in one process share it, whatever their directories. The workspace name is therefore derived from the domain
  and the resolved working directory (``workspace_for``): a different directory is a different workspace.
- Chunk keys are ``<doc_id>-chunk-NNN`` when each document is inserted with ``ids=[doc_id]``, the local
  tokenizer and the ingest chunk sizes (``schemas.corpus``); ``file_paths`` must be unique per document
  (``Document.lightrag_file_path``) because LightRAG drops a document whose file-name basename it has seen.
  The environment variables ``CHUNK_F_SIZE`` / ``CHUNK_F_OVERLAP_SIZE`` override constructor chunk sizes; sizes
  given in ``addon_params["chunker"]["fixed_token"]`` override those, so the build pins them there.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from lightrag import LightRAG
from lightrag.base import DocStatus
from lightrag.constants import DEFAULT_LLM_TIMEOUT
from lightrag.utils import EmbeddingFunc

from schemas.config import ROLES
from schemas.corpus import Document, IngestOptions
from schemas.errors import InputError
from schemas.graph import GRAPH_DOMAIN, Entity, Relation
from schemas.graph_build import BuildUsage, DocumentFailure, DomainBuildResult
from tasks.corpus.text import make_lightrag_tokenizer

if TYPE_CHECKING:
    from gateway.client import ChatResult, LLMGateway
    from gateway.embeddings import Embedder

log = logging.getLogger(__name__)

#: ``progress(done_docs, total_docs)``: documents of this build LightRAG has finished (processed or failed).
Progress = Callable[[int, int], None]

#: File name of LightRAG's graph inside ``<working_dir>/<workspace>/``.
GRAPHML_NAME = "graph_chunk_entity_relation.graphml"

#: LightRAG options this module sets itself; ``lightrag_options`` may not override them.
_OWNED_OPTIONS = frozenset(
    {
        "working_dir", "workspace", "llm_model_func", "llm_model_name", "llm_model_max_async", "max_parallel_insert",
        "default_llm_timeout", "embedding_func", "embedding_chunk_overlap_token_size", "tokenizer",
        "chunk_token_size", "chunk_overlap_token_size", "enable_llm_cache", "enable_llm_cache_for_entity_extract",
    }
)  # fmt: skip

#: Keyword arguments LightRAG may pass to ``llm_model_func`` that mean something to an OpenAI endpoint. The rest
#: (``hashing_kv``, ``stream``, ``enable_cot``, ``keyword_extraction``...) are LightRAG's internals.
_PASS_THROUGH = ("max_tokens", "temperature", "top_p", "stop", "seed", "response_format")

_TERMINAL = frozenset({DocStatus.PROCESSED.value, DocStatus.FAILED.value})

# Working directories being built in this process: a second concurrent build of one directory would share
# LightRAG's in-process pipeline flags and return at once ("already processing") with nothing done.
_ACTIVE: set[str] = set()
_ACTIVE_LOCK = threading.Lock()


class GraphBuildError(InputError):
    """A build that cannot start (bad domain, documents of another domain, conflicting options), worded for a person;
    raised before LightRAG is touched."""


class ExtractionLLMError(RuntimeError):
    """The gateway returned no usable answer for a LightRAG LLM call.

    Raised inside ``llm_model_func`` so that LightRAG marks the document FAILED with this message as its reason.
    Takes one message argument: LightRAG re-creates it as ``type(e)(prefixed_message)`` to add chunk prefixes.
    """


def domain_working_dir(data_dir: str | Path, domain: str) -> Path:
    """The LightRAG working directory of ``domain``: ``<data_dir>/graphs/<domain>/lightrag``."""
    return Path(data_dir) / "graphs" / domain / "lightrag"


def workspace_for(domain: str, working_dir: str | Path) -> str:
    """LightRAG workspace name for ``domain`` built in ``working_dir``: ``<domain>-<10 hex of the resolved path>``.

    Stable for one directory (a later run resumes in the same subfolder), different for different directories,
    so two builds in one process never share LightRAG's per-workspace in-process state. Moving a working
    directory therefore starts its LightRAG state afresh (the gateway cache still answers every LLM call).
    """
    resolved = str(Path(working_dir).expanduser().resolve())
    return f"{domain}-{hashlib.sha256(resolved.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"


def graphml_path(working_dir: str | Path, domain: str) -> Path:
    """Where LightRAG writes the graph of ``domain`` built in ``working_dir``."""
    return Path(working_dir) / workspace_for(domain, working_dir) / GRAPHML_NAME


class _UsageCounter:
    """This build's own count of gateway results (the gateway's ledger is shared by everything in the run)."""

    def __init__(self) -> None:
        self.usage = BuildUsage()

    def record(self, result: ChatResult) -> None:
        u = self.usage
        if result.cached:
            u.cache_hits += 1
        else:
            u.llm_calls += 1
        if not result.ok:
            u.failures += 1
        u.prompt_tokens += result.prompt_tokens
        u.completion_tokens += result.completion_tokens


def make_llm_func(
    gateway: LLMGateway, *, role: str = "extractor", usage: _UsageCounter | None = None
) -> Callable[..., Awaitable[str]]:
    """A LightRAG ``llm_model_func`` that sends every call through ``gateway.chat(role, ...)``.

    Messages are ``system_prompt`` (if any), then ``history_messages``, then ``prompt`` as the last user message.
    Sampling keyword arguments in ``_PASS_THROUGH`` override the role's defaults; LightRAG's internal ones are
    dropped. A gateway failure raises ``ExtractionLLMError`` (LightRAG then fails that document with the message);
    an empty answer (the model had nothing to add, common for gleaning) is returned as ``""``.
    """

    async def llm_model_func(
        prompt: str,
        system_prompt: str | None = None,
        history_messages: Sequence[Mapping[str, Any]] | None = None,
        **kwargs: Any,
    ) -> str:
        messages: list[dict[str, Any]] = []
        if system_prompt:
            messages.append({"role": "system", "content": system_prompt})
        for m in history_messages or ():
            messages.append({"role": m["role"], "content": m["content"]})
        messages.append({"role": "user", "content": prompt})
        params = {k: kwargs[k] for k in _PASS_THROUGH if kwargs.get(k) is not None}
        # A cut-off extraction still carries the rows before the cut; LightRAG parses what is there.
        result = await gateway.chat(role, messages, params=params or None, allow_truncated=True)
        if usage is not None:
            usage.record(result)
        if result.failure is not None:
            if result.failure.kind == "empty":
                return ""
            raise ExtractionLLMError(f"{result.failure.kind}: {result.failure.message}")
        return result.text

    return llm_model_func


def _embedding_func(embedder: Embedder, max_token_size: int | None) -> EmbeddingFunc:
    async def embed(texts: Sequence[str], **_: Any) -> np.ndarray:
        return await embedder.aembed(list(texts))

    return EmbeddingFunc(
        embedding_dim=embedder.dim, func=embed, max_token_size=max_token_size, model_name=embedder.name
    )


def _llm_timeout_s(gateway: LLMGateway, role: str) -> int:
    """LightRAG's per-call timeout, long enough for the gateway's own retries with backoff.

    LightRAG's queue kills a call after twice this value; cutting a call the gateway is still retrying would
    turn a transient endpoint error into a failed document.
    """
    try:
        ep = gateway.settings.endpoint(role)
    except (KeyError, ValueError):
        return DEFAULT_LLM_TIMEOUT
    worst = ep.timeout_s * (ep.max_retries + 1) + gateway.backoff_cap_s * ep.max_retries
    return max(DEFAULT_LLM_TIMEOUT, math.ceil(worst))


def _status_value(row: Mapping[str, Any] | None) -> str | None:
    if not row:
        return None
    status = row.get("status")
    return getattr(status, "value", status)


async def _statuses(rag: LightRAG, ids: Sequence[str]) -> dict[str, Mapping[str, Any] | None]:
    rows = await rag.doc_status.get_by_ids(list(ids))
    return dict(zip(ids, rows))


async def _request_failed_retry(rag: LightRAG) -> None:
    """Publish a manual retry request: the next processing run resets FAILED documents to PENDING and retries them."""
    from lightrag.kg.shared_storage import (
        commit_manual_retry_request,
        get_namespace_data,
        get_namespace_lock,
        get_pipeline_ingress,
    )

    status = await get_namespace_data("pipeline_status", workspace=rag.workspace)
    lock = get_namespace_lock("pipeline_status", workspace=rag.workspace)
    ingress = await get_pipeline_ingress(rag.workspace)
    refusal = await commit_manual_retry_request(status, lock, ingress, uuid.uuid4().hex, {})
    if refusal is not None:
        # Not fatal: the documents stay FAILED and are reported with their earlier reason.
        log.warning("LightRAG refused to retry failed documents in %s: %s", rag.workspace, refusal)


async def _poll_progress(rag: LightRAG, ids: Sequence[str], progress: Progress, interval_s: float) -> None:
    last = -1
    while True:
        done = sum(_status_value(r) in _TERMINAL for r in (await _statuses(rag, ids)).values())
        if done != last:
            progress(done, len(ids))
            last = done
        await asyncio.sleep(interval_s)


def _unique_documents(domain: str, documents: Sequence[Document]) -> list[Document]:
    if not GRAPH_DOMAIN.match(domain):
        raise GraphBuildError(
            f"domain {domain!r} must be lowercase letters, digits and underscores, starting with a letter "
            "(at most 40 characters)"
        )
    out: dict[str, Document] = {}
    for d in documents:
        if d.domain != domain:
            raise GraphBuildError(f"document {d.doc_id} belongs to domain {d.domain!r}, not {domain!r}")
        seen = out.get(d.doc_id)
        if seen is None:
            out[d.doc_id] = d
        elif seen.text != d.text:
            raise GraphBuildError(f"two different texts share the doc_id {d.doc_id}; doc ids must be content hashes")
    return list(out.values())


def _failure(doc_id: str, row: Mapping[str, Any] | None, file_path: str) -> DocumentFailure:
    status = _status_value(row)
    if status is None:
        reason = "LightRAG kept no status for this document: it was dropped when enqueued (a duplicate file name or content)"
    elif status == DocStatus.FAILED.value:
        reason = str((row or {}).get("error_msg") or "LightRAG marked the document failed without a message")
    else:
        reason = f"LightRAG left the document {status} when the build ended; the next build resumes it"
    return DocumentFailure(doc_id=doc_id, reason=reason, file_path=file_path, status=status or "missing")


async def build_domain_graph(
    domain: str,
    documents: Sequence[Document],
    *,
    working_dir: Path,
    gateway: LLMGateway,
    embedder: Embedder,
    options: IngestOptions,
    progress: Progress | None = None,
    max_parallel_insert: int | None = None,
    llm_max_async: int | None = None,
    role: str = "extractor",
    retry_failed: bool = True,
    lightrag_options: Mapping[str, Any] | None = None,
    progress_interval_s: float = 0.5,
) -> DomainBuildResult:
    """Insert ``documents`` into the LightRAG graph of ``domain`` in ``working_dir`` and return the graph.

    Contract:
    - Bad input (a malformed domain, a document of another domain, two texts under one doc_id, a
      ``lightrag_options`` key this function owns) raises ``GraphBuildError`` before anything is touched.
    - Documents LightRAG already PROCESSED in this directory are skipped (no LLM call); documents a killed run
      left unfinished are resumed; documents that FAILED before are retried once when ``retry_failed``; new
      documents are inserted with ``ids=[doc_id]`` and ``Document.lightrag_file_path()``. Finished chunks cost
      no endpoint call on a resume or re-run (the gateway cache answers).
    - A document whose extraction fails is reported in ``failures`` with LightRAG's reason; the others are built.
      Endpoint problems never raise; storage errors and cancellation do (storages are finalized either way).
    - The returned entities/relations are the whole graph of the working directory, read from LightRAG's GraphML
      after the storages are finalized, canonical for ``write_snapshot(..., source="lightrag")``.
    - ``progress(done, total)`` is called from the event loop whenever the number of finished documents (processed
      or failed) changes, and once at the end.
    - Concurrency: ``llm_max_async`` LLM calls in flight (default: the role's ``max_concurrency``) and
      ``max_parallel_insert`` documents at once (default ``max(2, llm_max_async // 2)``); the gateway's
      per-endpoint limit applies on top. One build per working directory at a time in a process (a second one
      raises ``GraphBuildError``); across processes, do not build one directory twice at once.
    """
    started = time.perf_counter()
    if role not in ROLES:
        raise GraphBuildError(f"unknown LLM role {role!r}; the roles are: {', '.join(ROLES)}")
    docs = _unique_documents(domain, documents)
    extra, addon_params = _lightrag_extra_options(lightrag_options, options)
    llm_max_async, max_parallel_insert = _concurrency(gateway, role, llm_max_async, max_parallel_insert)

    working_dir = Path(working_dir)
    working_dir.mkdir(parents=True, exist_ok=True)
    workspace = workspace_for(domain, working_dir)
    graph_file = working_dir / workspace / GRAPHML_NAME
    key = _claim_working_dir(working_dir)

    counter = _UsageCounter()
    try:
        rag = LightRAG(
            working_dir=str(working_dir),
            workspace=workspace,
            llm_model_func=make_llm_func(gateway, role=role, usage=counter),
            llm_model_name=gateway.settings.endpoint(role).model or role,
            llm_model_max_async=llm_max_async,
            max_parallel_insert=max_parallel_insert,
            default_llm_timeout=_llm_timeout_s(gateway, role),
            embedding_func=_embedding_func(embedder, options.embedding_token_limit),
            embedding_chunk_overlap_token_size=options.embedding_overlap_token_size,
            tokenizer=make_lightrag_tokenizer(),
            chunk_token_size=options.chunk_token_size,
            chunk_overlap_token_size=options.chunk_overlap_token_size,
            enable_llm_cache=False,
            enable_llm_cache_for_entity_extract=False,
            addon_params=addon_params,
            **extra,
        )
        runs = await _run_documents(rag, docs, progress, progress_interval_s, retry_failed)
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE.discard(key)

    return _build_result(domain, docs, runs, working_dir=working_dir, workspace=workspace, graph_file=graph_file,
                         retry_failed=retry_failed, progress=progress, started=started, usage=counter.usage)


def _lightrag_extra_options(
    lightrag_options: Mapping[str, Any] | None, options: IngestOptions
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The caller's further LightRAG options and its ``addon_params`` with the chunker pinned to ``options``;
    ``GraphBuildError`` for a key ``build_domain_graph`` sets itself."""
    extra = dict(lightrag_options or {})
    if owned := sorted(_OWNED_OPTIONS & extra.keys()):
        raise GraphBuildError(f"lightrag_options may not set {', '.join(owned)}: build_domain_graph sets them itself")
    addon_params = dict(extra.pop("addon_params", None) or {})
    if "chunker" in addon_params:
        raise GraphBuildError("lightrag_options may not set addon_params['chunker']: chunk sizes come from options")
    # Pinned per strategy as well as on the constructor: LightRAG lets the CHUNK_F_SIZE / CHUNK_F_OVERLAP_SIZE
    # environment variables override constructor sizes, which would make its chunk keys disagree with the
    # chunk rows ingest stored.
    addon_params["chunker"] = {
        "chunk_token_size": options.chunk_token_size,
        "fixed_token": {
            "chunk_token_size": options.chunk_token_size,
            "chunk_overlap_token_size": options.chunk_overlap_token_size,
        },
    }
    return extra, addon_params


def _concurrency(
    gateway: LLMGateway, role: str, llm_max_async: int | None, max_parallel_insert: int | None
) -> tuple[int, int]:
    """LLM calls in flight and documents at once (``build_domain_graph``'s defaults), each at least 1."""
    if llm_max_async is None:
        llm_max_async = gateway.settings.endpoint(role).max_concurrency
    if max_parallel_insert is None:
        max_parallel_insert = max(2, llm_max_async // 2)
    if llm_max_async < 1 or max_parallel_insert < 1:
        raise GraphBuildError("llm_max_async and max_parallel_insert must be at least 1")
    return llm_max_async, max_parallel_insert


def _claim_working_dir(working_dir: Path) -> str:
    """Marks ``working_dir`` as being built in this process (its key, to release); a second build is refused."""
    key = str(working_dir.resolve())
    with _ACTIVE_LOCK:
        if key in _ACTIVE:
            raise GraphBuildError(f"{working_dir} is already being built in this process; wait for that build to end")
        _ACTIVE.add(key)
    return key


@dataclass(frozen=True)
class _DocumentRuns:
    """LightRAG's status rows of the documents after the build, and which were processed or failed before it."""

    after: dict[str, Mapping[str, Any] | None]
    already: list[str]
    failed_before: list[str]


async def _run_documents(
    rag: LightRAG,
    docs: Sequence[Document],
    progress: Progress | None,
    progress_interval_s: float,
    retry_failed: bool,
) -> _DocumentRuns:
    """Opens ``rag``'s storages, resumes, retries and inserts ``docs`` as ``build_domain_graph`` describes, and
    finalizes the storages (also on failure)."""
    ids = [d.doc_id for d in docs]
    by_id = {d.doc_id: d for d in docs}
    poller: asyncio.Task[None] | None = None
    await rag.initialize_storages()
    try:
        before = await _statuses(rag, ids)
        already = [i for i in ids if _status_value(before[i]) == DocStatus.PROCESSED.value]
        failed_before = [i for i in ids if _status_value(before[i]) == DocStatus.FAILED.value]
        unfinished = [i for i in ids if _status_value(before[i]) not in _TERMINAL and before[i]]
        new = [i for i in ids if not before[i]]
        if progress is not None and ids:
            poller = asyncio.create_task(_poll_progress(rag, ids, progress, progress_interval_s))

        # Earlier documents first (interrupted, then failed), so a resumed build merges in the same order as
        # an uninterrupted one; a new insert would also be refused while a manual retry holds the pipeline.
        if failed_before and retry_failed:
            await _request_failed_retry(rag)
        if unfinished or (failed_before and retry_failed):
            await rag.apipeline_process_enqueue_documents()
        if new:
            await rag.ainsert(
                [by_id[i].text for i in new],
                ids=new,
                file_paths=[by_id[i].lightrag_file_path() for i in new],
            )
        after = await _statuses(rag, ids)
    finally:
        if poller is not None:
            poller.cancel()
            with suppress(asyncio.CancelledError):
                await poller
        await rag.finalize_storages()
    return _DocumentRuns(after=after, already=already, failed_before=failed_before)


def _build_result(
    domain: str,
    docs: Sequence[Document],
    runs: _DocumentRuns,
    *,
    working_dir: Path,
    workspace: str,
    graph_file: Path,
    retry_failed: bool,
    progress: Progress | None,
    started: float,
    usage: BuildUsage,
) -> DomainBuildResult:
    """The build's result: its counts and failures, the last progress call, and the graph read from ``graph_file``."""
    ids = [d.doc_id for d in docs]
    by_id = {d.doc_id: d for d in docs}
    after = runs.after
    processed = [i for i in ids if _status_value(after[i]) == DocStatus.PROCESSED.value]
    failures = [
        _failure(i, after[i], by_id[i].lightrag_file_path())
        for i in ids
        if _status_value(after[i]) != DocStatus.PROCESSED.value
    ]
    if progress is not None:
        progress(sum(_status_value(after[i]) in _TERMINAL for i in ids), len(ids))
    entities, relations, directed = _read_graph(graph_file, domain)
    return DomainBuildResult(
        domain=domain,
        working_dir=str(working_dir),
        workspace=workspace,
        graphml_path=str(graph_file),
        directed=directed,
        entities=entities,
        relations=relations,
        docs_total=len(ids),
        docs_processed=len(processed),
        docs_failed=len(failures),
        docs_already_processed=len(runs.already),
        docs_retried=len(runs.failed_before) if retry_failed else 0,
        failures=failures,
        chunks=sum(int((after[i] or {}).get("chunks_count") or 0) for i in processed),
        seconds=round(time.perf_counter() - started, 3),
        usage=usage,
    )


def _read_graph(path: Path, domain: str) -> tuple[list[Entity], list[Relation], bool]:
    """The graph's records, or nothing when LightRAG has not written a node yet (every document failed)."""
    from tasks.graph.importers import GraphImportError, read_lightrag_graphml

    if not path.is_file():
        return [], [], False
    try:
        imported = read_lightrag_graphml(path, domain)
    except GraphImportError as exc:
        # The importer refuses a file without records; an empty LightRAG graph is a valid (empty) result here,
        # a file with unreadable elements is not.
        if "yielded no entity or relation" in str(exc) and "0 bad" in str(exc):
            return [], [], False
        raise
    if imported.bad_rows:
        log.warning("%s", imported.summary())
    return imported.entities, imported.relations, imported.directed
