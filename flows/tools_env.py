"""Build the KG tool environment from the warehouse: the current graph of each domain, indexed with the
configured embedder (or the model-free hashing embedder when asked, e.g. where no embedding model is installed),
with the text search (``web_search``) over each domain's corpus chunks where it has any, and the IKG views
(``tasks.env.ikg``) the tool server serves: made on demand from the warehouse's questions, or registered from an
export's rows (``export_views``)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from gateway.embeddings import shared_embedder
from schemas.config import EmbeddingConfig, Settings
from schemas.errors import InputError
from schemas.programs import QueryProgram
from schemas.qa import QA, PathEdge
from schemas.tools import KG_TOOLS
from tasks.graph.kg import KnowledgeGraph
from tasks.env.ikg import IKGError, ViewRegistry, critical_edges, make_view
from tasks.env.index import HashingEmbedder
from tasks.env.text_search import TextIndex
from tasks.env.tools import ToolEnvironment
from warehouse.db import Warehouse
from warehouse.graphs import current_snapshots, load_graph
from warehouse.text_chunks import domain_chunks

EmbedderChoice = Literal["configured", "hashing"]


def load_graphs(wh: Warehouse, domains: list[str] | None = None) -> list[KnowledgeGraph]:
    return [load_graph(wh, s.domain, s.snapshot_id) for s in current_snapshots(wh, domains)]


def tool_environment(settings: Settings, wh: Warehouse, domains: list[str] | None = None,
                     embedder: EmbedderChoice = "configured", *, texts: bool = True,
                     served: bool = False) -> ToolEnvironment:
    """The tools over the current graphs; with ``texts``, ``web_search`` over the corpus chunks of every domain
    that has any (offered only then), indexed with the same embedder. ``served`` (the tool server): the graphs
    as ``ServedGraph`` arrays memory-mapped from their cache in the index folder
    (``flows.tool_server.served_graphs``), and missing HNSW graphs built in the background (``ann_background``)."""
    emb = None
    if served:  # the served cache is keyed by the embedder too
        from flows.tool_server import served_graphs

        emb = HashingEmbedder() if embedder == "hashing" else shared_embedder(settings.embeddings)
        graphs: Sequence[Any] = served_graphs(wh, domains, settings.data_dir / "indexes", emb)
    else:
        graphs = load_graphs(wh, domains)
    if not graphs:
        raise InputError("no graphs in the warehouse: run `hopforge graph build` or `hopforge graph import` first")
    if emb is None:
        emb = HashingEmbedder() if embedder == "hashing" else shared_embedder(settings.embeddings)
    found: dict[str, TextIndex] = {}
    chunks = {g.domain: domain_chunks(wh, g.domain) for g in graphs} if texts else {}
    if texts and (settings.ikg.texts is not None or any(chunks.values())):
        # The same text the IKG checks searched: the domain's corpus chunks, then ``[ikg] texts`` when set. Imported
        # only when there is text to search: the IKG module's imports cost seconds of a tool server's start.
        from flows.ikg_data import load_collection, text_index_of

        collection = load_collection(settings)
        for g in graphs:
            index = text_index_of(g.domain, chunks[g.domain], collection, emb, settings)
            if index is not None:
                found[g.domain] = index
    tools = KG_TOOLS + (("web_search",) if found else ())
    # The tool server (``served``) answers before a new snapshot's HNSW graphs exist: they are built in the background
    # while every row is scanned exactly (``tasks.env.index.AnnBuild``).
    env = ToolEnvironment.from_graphs(graphs, emb, cache_dir=settings.data_dir / "indexes", tools=tools, texts=found,
                                      ann_background=served)
    for index in found.values():
        index.ann_background = served
        index.warm()
    return env


def warehouse_views(wh: Warehouse, env: ToolEnvironment) -> ViewRegistry:
    """The IKG views of every question of the loaded graphs' snapshots, made on first use from the view id
    (``<qa_id>@ikg-<percent>``): the questions are read now (the server forks and drops the warehouse)."""
    graphs = {d: env.indexes[d].graph for d in env.domains}
    snaps = sorted({g.snapshot_id for g in graphs.values() if g.snapshot_id})
    qas = wh.read("qa", QA, "snapshot_id IN (SELECT unnest(?::VARCHAR[]))", [snaps], order_by="qa_id") if snaps else []
    return ViewRegistry(questions={q.qa_id: q for q in qas}, graphs=graphs)


def export_views(rows: Sequence[Mapping[str, Any]], graphs: Mapping[str, KnowledgeGraph],
                 registry: ViewRegistry | None = None) -> ViewRegistry:
    """``registry`` (a new one by default) with the view of every IKG row of an export's ``qa`` config, rebuilt over
    ``graphs``; ``IKGError`` when a row's domain is not loaded or the graph hides other triples than the row says
    (the export was made from another snapshot)."""
    registry = registry if registry is not None else ViewRegistry()
    for row in rows:
        if row.get("kg_setting") != "incomplete":
            continue
        graph = graphs.get(row["domain"])
        if graph is None:
            raise IKGError(f"IKG view {row['view_id']}: no graph loaded for domain {row['domain']!r}")
        edges = [PathEdge(**e) for e in row["path_edges"]]
        program = QueryProgram.model_validate_json(row["program"]) if row.get("program") else None
        view = make_view(graph, row["qa_id"], critical_edges(graph, edges, program), row["ikg_level"])
        if view.view_id != row["view_id"] or view.hidden_triples() != [list(t) for t in row["hidden_triples"]]:
            raise IKGError(f"IKG view {row['view_id']}: the loaded {row['domain']} graph hides other triples than the "
                           "export says; serve the graph snapshot the export was made from")
        registry.add(view, row["domain"])
    return registry


def export_qa_rows(export_dir: str | Path) -> list[dict[str, Any]]:
    """The rows of an export's ``qa`` config (every split)."""
    import pyarrow.parquet as pq

    files = sorted((Path(export_dir) / "qa").glob("*.parquet"))
    if not files:
        raise InputError(f"{export_dir} holds no qa config: give the directory of a hopforge export")
    return [r for f in files for r in pq.read_table(f).to_pylist()]


_ENVS: OrderedDict[tuple[str, str, tuple[str, ...]], ToolEnvironment] = OrderedDict()
_ENVS_LOCK = threading.Lock()
_BUILDING: dict[tuple[str, str, tuple[str, ...]], threading.Lock] = {}  # a lock per key being built


def snapshot_tool_env(kg: KnowledgeGraph, embeddings: EmbeddingConfig, index_dir: str,
                      tools: Sequence[str]) -> ToolEnvironment:
    """The tool environment over one snapshot's graph, built once per snapshot, embedder and tool set in this
    process (batch tasks of one snapshot share it; its embeddings are also cached on disk under ``index_dir``)."""
    key = (kg.snapshot_id or f"unsaved-{id(kg)}", embeddings.model_dump_json(), tuple(tools))
    with _ENVS_LOCK:
        env = _ENVS.get(key)
        building = _BUILDING.setdefault(key, threading.Lock()) if env is None else None
    if env is None:
        # One build per key at a time: two batches of one snapshot start together, and the second would embed
        # every entity again (before the first has written the index to disk) only to throw its copy away.
        with building:  # type: ignore[union-attr]
            with _ENVS_LOCK:
                env = _ENVS.get(key)
            if env is None:
                env = ToolEnvironment.from_graphs([kg], shared_embedder(embeddings), cache_dir=index_dir,
                                                  tools=tuple(tools))
                with _ENVS_LOCK:
                    env = _ENVS.setdefault(key, env)
                    while len(_ENVS) > 8:  # a run touches a few snapshots at a time
                        _ENVS.popitem(last=False)
        with _ENVS_LOCK:
            if _BUILDING.get(key) is building:
                _BUILDING.pop(key, None)
    return env
