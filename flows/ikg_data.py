"""IKG variants for an export (Graph-RFT's incomplete-graph setting): the flows' side of ``tasks.env.ikg``.

For the questions an export holds and the levels of ``[ikg] levels``, each domain's questions get their views
(``build_variants``) over the graph snapshot they were generated on, checked against the domain's corpus chunks
(``warehouse.text_chunks``) searched with the text tool, and each kept variant gets its template trajectory
(``tasks.distill.ikg_template``) run on the view. A domain with no corpus (an imported graph) gets none, and the
run says so in one line. ``flows.export`` and ``flows.refresh`` print the lines and pass the items to the
export (``tasks.export.datasets.ExportInputs.ikg``).

A person's own text collection (``[ikg] texts``: a folder of .txt/.md files, a .jsonl file or folder, or a
Hugging Face dataset on disk, read by the ingest's readers, ``tasks.corpus.ingest``) is searched beside each
domain's corpus, and alone for a graph with no corpus (an imported graph), which then gets IKG variants too.
Its chunks have no provenance link to graph facts, so a hidden fact of an imported graph counts as found when a
result names both of its entities (``tasks.env.ikg.fact_found``); a fact extracted from the corpus still counts
only when its own source chunk is found. With a collection, each domain's run prints one line saying which text
it searched.

The text index and the entity index use ``[ikg] embedder`` (the configured embedder, or the hashing one): serve
the tools with the same one (``hopforge serve-tools --embedder``) so a rollout reads what the check read.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gateway.client import LLMGateway
from gateway.embeddings import Embedder, shared_embedder
from gateway.loop import run_shared
from schemas.config import Settings
from schemas.corpus import IngestOptions, IngestResult
from schemas.errors import InputError
from schemas.qa import QA, SPLITS
from tasks.distill.ikg_rollouts import ikg_trajectories, summary_lines
from tasks.distill.ikg_template import IKG_TEMPLATE_TOOLS
from tasks.env.ikg import HiddenFact, IKGLevels
from tasks.env.ikg_reader import ReaderVerdicts, read_passages, recording_reader
from tasks.env.index import HashingEmbedder
from tasks.env.text_search import TextChunk, TextIndex, TextSearchError, cached_text_index, chunks_from_ingest
from tasks.env.tools import ToolEnvironment
from tasks.export.datasets import IKGItem
from warehouse.db import Warehouse
from warehouse.graphs import SnapshotNotFoundError, load_graph
from warehouse.text_chunks import domain_chunks


@dataclass
class IKGData:
    """The variants to export and what the run prints about them (kept and rejected per level, with reasons)."""

    items: list[IKGItem] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def ikg_embedder(settings: Settings) -> Embedder:
    return HashingEmbedder() if settings.ikg.embedder == "hashing" else shared_embedder(settings.embeddings)


class TextCollectionError(InputError):
    """``[ikg] texts`` names no readable text: a missing path, an unknown kind, a collection with no text."""


#: The ingest domain a collection's documents are read under (the collection belongs to no domain: it is
#: searched beside every domain's corpus). Also keeps its chunk ids apart from any corpus chunk's.
COLLECTION_DOMAIN = "ikg_texts"
_DATASET_FILES = ("*.parquet", "*.arrow", "dataset_info.json")


@dataclass(frozen=True)
class TextCollection:
    """A person's text collection, read once: ``name`` (the path's name) tags its chunks, ``source`` is the
    path as configured and ``kind`` how it was read."""

    name: str
    source: str
    kind: str
    chunks: tuple[TextChunk, ...]

    def describe(self) -> str:
        return f"text collection {self.name!r} ({len(self.chunks)} chunks, {self.kind} at {self.source})"


def collection_kind(path: Path, kind: str) -> str:
    """How to read ``path``: ``kind`` unless ``auto``; a folder holding parquet or arrow files (or a
    ``save_to_disk`` folder) is a dataset, else the ingest's own detection (``flows.graphs.detect_source_kind``)."""
    if kind != "auto":
        return kind
    if path.is_dir() and any(next(path.glob(g), None) for g in _DATASET_FILES):
        return "hf"
    if path.is_file() and path.suffix.lower() in (".txt", ".md"):
        return "folder"  # one text file: the folder reader takes a file too
    from flows.graphs import detect_source_kind

    return detect_source_kind(str(path))


def _ingest_collection(path: Path, kind: str, field: str) -> IngestResult:
    """The collection through the ingest's readers (``tasks.corpus.ingest``)."""
    from tasks.corpus.ingest import ingest_hf_dataset, ingest_jsonl, ingest_text_folders

    opts = IngestOptions(allow_new_domains=True)
    if kind == "jsonl":
        return ingest_jsonl(path, domain=COLLECTION_DOMAIN, text_field=field, options=opts)
    if kind == "folder":
        return ingest_text_folders({path: COLLECTION_DOMAIN}, options=opts)
    saved = sorted(path.glob("*.arrow")) if (path / "state.json").exists() else []
    if saved:  # a `Dataset.save_to_disk` folder: its arrow files, which `load_dataset` refuses to read as a folder
        return ingest_hf_dataset("arrow", data_files=[str(f) for f in saved], split="train", text_column=field,
                                 domain=COLLECTION_DOMAIN, options=opts)  # fmt: skip
    return ingest_hf_dataset(str(path), split="train", text_column=field, domain=COLLECTION_DOMAIN, options=opts)


_COLLECTIONS: dict[tuple[str, str, str], TextCollection] = {}
_COLLECTIONS_LOCK = threading.Lock()


def load_collection(settings: Settings) -> TextCollection | None:
    """``[ikg] texts`` read (once per process per setting), ``None`` when unset; ``TextCollectionError`` naming the
    setting for a missing path, a path of the wrong kind, or a collection with no text in it."""
    cfg = settings.ikg
    if cfg.texts is None:
        return None
    key = (str(cfg.texts), cfg.texts_kind, cfg.texts_field)
    with _COLLECTIONS_LOCK:
        found = _COLLECTIONS.get(key)
    if found is not None:
        return found
    from tasks.corpus.ingest import IngestError

    path = Path(cfg.texts).expanduser()
    if not path.exists():
        raise TextCollectionError(f"[ikg] texts: {cfg.texts}: no such file or folder (give a folder of .txt/.md "
                                  "files, a .jsonl file, or a Hugging Face dataset saved on disk)")  # fmt: skip
    name = path.stem or "texts"
    try:
        kind = collection_kind(path, cfg.texts_kind)
        chunks = chunks_from_ingest(_ingest_collection(path, kind, cfg.texts_field), name)
    except (IngestError, TextSearchError) as exc:
        raise TextCollectionError(f"[ikg] texts: {exc}") from None
    collection = TextCollection(name, str(cfg.texts), kind, tuple(chunks))
    with _COLLECTIONS_LOCK:
        _COLLECTIONS[key] = collection
    return collection


def domain_text_index(wh: Warehouse, domain: str, embedder: Embedder, settings: Settings) -> TextIndex | None:
    """The text search over ``domain``'s corpus chunks plus the ``[ikg] texts`` collection (cached per process
    and on disk), or ``None`` without either."""
    return text_index_of(domain, domain_chunks(wh, domain), load_collection(settings), embedder, settings)


def text_index_of(domain: str, corpus: Sequence[TextChunk], collection: TextCollection | None, embedder: Embedder,
                  settings: Settings) -> TextIndex | None:
    """The text search over ``corpus`` then ``collection``'s chunks, ``None`` when both are empty."""
    chunks = list(corpus)
    name = domain
    if collection is not None:
        chunks += collection.chunks
        name = f"{domain}+{collection.name}"
    if not chunks:
        return None
    return cached_text_index(chunks, embedder, name=name, cache_dir=settings.data_dir / "indexes",
                             dense=settings.ikg.text_dense, nprobe=settings.ikg.text_nprobe)


def text_line(domain: str, corpus: int, collection: TextCollection | None) -> str:
    """The run's line saying which text ``domain``'s IKG checks searched."""
    own = f"{corpus} corpus chunks of {domain}" if corpus else "no corpus chunks (the graph has no corpus)"
    extra = f" and {collection.describe()}" if collection is not None else ""
    return f"IKG {domain}: text search over {own}{extra}"


def reader_on(settings: Settings) -> bool:
    """Whether the IKG reader check runs (``[ikg] reader_check``; ``auto``: unless the verifier is the embedded
    model)."""
    setting = settings.ikg.reader_check
    return setting == "on" or (setting == "auto" and not settings.endpoint("verifier").is_local)


def read_with_verifier(settings: Settings, pairs: Sequence[tuple[str, HiddenFact]]) -> ReaderVerdicts:
    """The verifier's verdicts on ``pairs`` (``tasks.env.ikg_reader.read_passages``), on a gateway opened and
    closed here."""
    gateway = LLMGateway(settings)

    async def go() -> ReaderVerdicts:
        try:
            return await read_passages(gateway, pairs)
        finally:
            await gateway.aclose()

    return run_shared(go())


def ikg_export_data(wh: Warehouse, qas: Sequence[QA], settings: Settings, *, run_id: str | None = None) -> IKGData:
    """The IKG variants of ``qas`` (those with a split) at ``settings.ikg.levels`` (module docstring), which go down
    once, in an ``IKGLevels``; nothing when no level is configured."""
    levels = IKGLevels.of(settings.ikg.levels, k=settings.ikg.top_k)
    out = IKGData()
    if not levels:
        return out
    groups: dict[tuple[str, str | None], list[QA]] = {}
    for q in qas:
        if q.split in SPLITS:
            groups.setdefault((q.domain, q.snapshot_id), []).append(q)
    collection = load_collection(settings)  # a bad [ikg] texts stops the run before any graph is loaded
    embedder = ikg_embedder(settings)
    for (domain, snapshot_id), questions in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        try:
            graph = load_graph(wh, domain, snapshot_id)
        except SnapshotNotFoundError:
            out.lines.append(f"IKG {domain}: graph snapshot {snapshot_id} is not in the warehouse, so its "
                             f"{len(questions)} questions get no IKG variants")  # fmt: skip
            continue
        corpus = domain_chunks(wh, domain)
        text = text_index_of(domain, corpus, collection, embedder, settings)
        if text is not None and collection is not None:  # without one, the domain's corpus is the only text
            out.lines.append(text_line(domain, len(corpus), collection))
        ordered = sorted(questions, key=lambda q: q.qa_id)
        reads = None
        if text is not None and reader_on(settings):
            # A first pass collects the passages the names rule keeps; the verifier reads them; the second pass
            # keeps a variant only where it said each passage states its fact.
            kept_by_names: list[tuple[str, HiddenFact]] = []
            levels.build(graph, ordered, text, reads=recording_reader(kept_by_names))
            verdicts = read_with_verifier(settings, kept_by_names)
            out.lines.append(verdicts.line(domain))
            reads = verdicts.reads
        build = levels.build(graph, ordered, text, reads=reads)
        if build.notice is not None:
            out.lines.append(f"IKG {build.notice}")
            continue
        env = ToolEnvironment.from_graphs([graph], embedder, cache_dir=settings.data_dir / "indexes",
                                          tools=IKG_TEMPLATE_TOOLS, texts={domain: text})  # fmt: skip
        # Template trajectories, and the teacher's in the view when [ikg] teacher asks (tasks.distill.ikg_rollouts).
        made = ikg_trajectories(build.variants, env, graph, settings, run_id=run_id)
        out.items += made.items
        out.lines += summary_lines(build, made.items) + made.lines
    return out


__all__ = ["COLLECTION_DOMAIN", "IKGData", "TextCollection", "TextCollectionError", "domain_text_index", "ikg_embedder",
           "ikg_export_data", "load_collection", "text_index_of", "text_line"]
