"""Build the KG tool environment from the warehouse: the current graph of each domain, indexed with the
configured embedder (or the model-free hashing embedder when asked, e.g. where no embedding model is installed)."""

from __future__ import annotations

from typing import Literal

from gateway.embeddings import EmbeddingError, make_embedder
from schemas.config import Settings
from schemas.errors import InputError
from tasks.graph.kg import KnowledgeGraph
from tasks.env.index import HashingEmbedder
from tasks.env.tools import ToolEnvironment
from warehouse.db import Warehouse

EmbedderChoice = Literal["configured", "hashing"]


def load_graphs(wh: Warehouse, domains: list[str] | None = None) -> list[KnowledgeGraph]:
    rows = wh.query("SELECT domain, snapshot_id FROM current_graph_snapshots ORDER BY domain")
    wanted = set(domains) if domains else None
    if wanted:
        missing = wanted - {r["domain"] for r in rows}
        if missing:
            raise InputError(f"no graph for domain(s) {sorted(missing)}: build or import them first")
    return [KnowledgeGraph.load(wh, r["domain"], r["snapshot_id"]) for r in rows if wanted is None or r["domain"] in wanted]


def tool_environment(settings: Settings, wh: Warehouse, domains: list[str] | None = None,
                     embedder: EmbedderChoice = "configured") -> ToolEnvironment:
    graphs = load_graphs(wh, domains)
    if not graphs:
        raise InputError("no graphs in the warehouse: run `hopforge graph build` or `hopforge graph import` first")
    emb = HashingEmbedder() if embedder == "hashing" else make_embedder(settings.embeddings)
    try:
        return ToolEnvironment.from_graphs(graphs, emb, cache_dir=settings.data_dir / "indexes")
    except EmbeddingError:
        raise
