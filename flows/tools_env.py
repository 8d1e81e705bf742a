"""Build the KG tool environment from the warehouse: the current graph of each domain, indexed with the
configured embedder (or the model-free hashing embedder when asked, e.g. where no embedding model is installed)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Literal

from gateway.embeddings import shared_embedder
from schemas.config import EmbeddingConfig, Settings
from schemas.errors import InputError
from tasks.graph.kg import KnowledgeGraph
from tasks.env.index import HashingEmbedder
from tasks.env.tools import ToolEnvironment
from warehouse.db import Warehouse
from warehouse.graphs import current_snapshots, load_graph

EmbedderChoice = Literal["configured", "hashing"]


def load_graphs(wh: Warehouse, domains: list[str] | None = None) -> list[KnowledgeGraph]:
    snaps = current_snapshots(wh)
    wanted = set(domains) if domains else None
    if wanted:
        missing = wanted - {s.domain for s in snaps}
        if missing:
            raise InputError(f"no graph for domain(s) {sorted(missing)}: build or import them first")
    return [load_graph(wh, s.domain, s.snapshot_id) for s in snaps if wanted is None or s.domain in wanted]


def tool_environment(settings: Settings, wh: Warehouse, domains: list[str] | None = None,
                     embedder: EmbedderChoice = "configured") -> ToolEnvironment:
    graphs = load_graphs(wh, domains)
    if not graphs:
        raise InputError("no graphs in the warehouse: run `hopforge graph build` or `hopforge graph import` first")
    emb = HashingEmbedder() if embedder == "hashing" else shared_embedder(settings.embeddings)
    return ToolEnvironment.from_graphs(graphs, emb, cache_dir=settings.data_dir / "indexes")


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
