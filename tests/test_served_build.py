"""The served graph's arrays (``tasks.env.served.build_arrays``, built over all entities at once with sorts and
offsets) equal, array for array and byte for byte, those of the plain entity-by-entity walk kept here as the
reference: the cache files a server writes are the same either way."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import orjson
import pytest

from schemas.graph import Entity, Relation
from tasks.env.index import entity_text, text_fingerprint
from tasks.env.served import _ARRAYS, FINGERPRINT_TEXT_CHARS, SERVED_FORMAT_VERSION, _fingerprint_key, build_arrays, limits_key
from tasks.env.tools import RenderLimits, render_node_info
from tasks.graph.kg import KnowledgeGraph, normalize_name
from tasks.graph.store import gc_paused
from tests.test_tool_server_bytes import generated_graph

_DIRECTION_CODE = {"out": 0, "undirected": 1, "in": 2}


class _Strings:
    """Interned strings during a build: one id per distinct string, in first-seen order."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.items: list[bytes] = []

    def __call__(self, text: str) -> int:
        sid = self.ids.get(text)
        if sid is None:
            sid = self.ids[text] = len(self.items)
            self.items.append(text.encode("utf-8"))
        return sid

    def many(self, texts: Any) -> list[int]:
        return [self(t) for t in texts]


def _ragged(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in lists], out=ptr[1:])
    flat = np.fromiter((v for x in lists for v in x), dtype=np.int32, count=int(ptr[-1]))
    return ptr, flat


def _blob(parts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    return np.frombuffer(b"".join(parts), dtype=np.uint8).copy(), offsets


def reference_arrays(graph: KnowledgeGraph, limits: Any,
                 content_hash: str | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The served arrays by the plain walk: every entity in name order, its ``graph.neighbors`` once, each string
    and relation given an id when first met, each reply rendered by ``render_node_info``."""
    names = graph.nodes()
    row = {n: i for i, n in enumerate(names)}
    strings = _Strings()
    strings.many(names)  # string id i is entity i
    rel_ids: dict[tuple[Any, ...], int] = {}
    rel_cols: dict[str, list[Any]] = {k: [] for k in ("source", "target", "label", "kw", "description", "weight",
                                                     "directed", "chunks")}  # fmt: skip
    ent_type, ent_desc, ent_chunks, ent_files, degree = [], [], [], [], []
    texts: list[str] = []
    nbr_node: list[int] = []
    nbr_rel: list[int] = []
    nbr_dir: list[int] = []
    nbr_ptr = np.zeros(len(names) + 1, dtype=np.int64)
    replies: list[bytes] = []
    with gc_paused():
        for i, name in enumerate(names):
            e = graph.entity(name)
            ent_type.append(strings(e.type))
            ent_desc.append(strings(e.description))
            texts.append(entity_text(e.name, e.description, FINGERPRINT_TEXT_CHARS))
            ent_chunks.append(strings.many(e.source_chunk_ids))
            ent_files.append(strings.many(e.file_paths))
            degree.append(graph.degree(name))
            rels = graph.neighbors(name)
            for nb, d in rels:
                key = (d.source, d.target, d.relation, d.directed, d.description, d.keywords, d.weight,
                       d.source_chunk_ids)  # fmt: skip
                rid = rel_ids.get(key)
                if rid is None:
                    rid = rel_ids[key] = len(rel_ids)
                    rel_cols["source"].append(row[d.source])
                    rel_cols["target"].append(row[d.target])
                    rel_cols["label"].append(strings(d.relation))
                    rel_cols["kw"].append(strings.many(d.keywords))
                    rel_cols["description"].append(strings(d.description))
                    rel_cols["weight"].append(d.weight)
                    rel_cols["directed"].append(d.directed)
                    rel_cols["chunks"].append(strings.many(d.source_chunk_ids))
                nbr_node.append(row[nb])
                nbr_rel.append(rid)
                nbr_dir.append(_DIRECTION_CODE[d.direction])
            nbr_ptr[i + 1] = len(nbr_node)
            replies.append(orjson.dumps({"rendered_content": render_node_info(graph, name, limits)}))
        norm: dict[str, list[int]] = {}
        for name in names:
            key = normalize_name(name)
            if key:
                norm.setdefault(key, graph.lookup_all(name))
        keys = sorted(norm)
        norm_ptr, norm_ids = _ragged([[row[n] for n in norm[k]] for k in keys])
        norm_keys = np.asarray(strings.many(keys), dtype=np.int32)
    arrays: dict[str, np.ndarray] = {}
    arrays["strings"], arrays["string_offsets"] = _blob(strings.items)
    arrays["entity_type"] = np.asarray(ent_type, dtype=np.int32)
    arrays["entity_description"] = np.asarray(ent_desc, dtype=np.int32)
    arrays["entity_chunk_ptr"], arrays["entity_chunks"] = _ragged(ent_chunks)
    arrays["entity_file_ptr"], arrays["entity_files"] = _ragged(ent_files)
    arrays["degree"] = np.asarray(degree, dtype=np.int32)
    arrays["rel_source"] = np.asarray(rel_cols["source"], dtype=np.int32)
    arrays["rel_target"] = np.asarray(rel_cols["target"], dtype=np.int32)
    arrays["rel_label"] = np.asarray(rel_cols["label"], dtype=np.int32)
    arrays["rel_kw_ptr"], arrays["rel_kw"] = _ragged(rel_cols["kw"])
    arrays["rel_description"] = np.asarray(rel_cols["description"], dtype=np.int32)
    arrays["rel_weight"] = np.asarray(rel_cols["weight"], dtype=np.float64)
    arrays["rel_directed"] = np.asarray(rel_cols["directed"], dtype=np.bool_)
    arrays["rel_chunk_ptr"], arrays["rel_chunks"] = _ragged(rel_cols["chunks"])
    arrays["nbr_ptr"] = nbr_ptr
    arrays["nbr_node"] = np.asarray(nbr_node, dtype=np.int32)
    arrays["nbr_rel"] = np.asarray(nbr_rel, dtype=np.int32)
    arrays["nbr_dir"] = np.asarray(nbr_dir, dtype=np.int8)
    arrays["norm_keys"], arrays["norm_ptr"], arrays["norm_ids"] = norm_keys, norm_ptr, norm_ids
    arrays["reply_blob"], arrays["reply_offsets"] = _blob(replies)
    meta = {
        "format": SERVED_FORMAT_VERSION, "domain": graph.domain, "directed": graph.directed,
        "snapshot_id": graph.snapshot_id, "entities": len(names), "relations": graph.n_edges,
        "limits": limits_key(limits), "content_hash": content_hash,
        "text_fingerprints": {_fingerprint_key(FINGERPRINT_TEXT_CHARS): text_fingerprint(texts)},
    }  # fmt: skip
    return arrays, meta


def tied_graph(directed: bool) -> KnowledgeGraph:
    """Ties the order must break as ``neighbors`` does: one pair joined by relations of one label that differ only
    in description or source, both directions, self-loops, undirected relations (in a directed graph too), a hub
    past the relation cap with equal weights, keys ``normalize_name`` folds together or empties, non-ASCII text,
    chunk ids, file paths and more keywords than shown."""
    rng = random.Random(5)
    names = ["hub", "Hub", "HUB!", "a", "b", "c", "Ünïcode ✓", "!!!", "x y", "X-Y"] + [f"n{i}" for i in range(60)]
    entities = [Entity(domain="t", name=n, type=rng.choice(["person", "", "UNKNOWN"]),
                       description=rng.choice(["", "short.", "a b c " * 150, "é ✓ text"]),
                       source_chunk_ids=rng.sample(["c1", "c2", "a", "short."], rng.randrange(0, 3)),
                       file_paths=rng.sample(["f1", "hub", "f2"], rng.randrange(0, 3))) for n in names]  # fmt: skip
    rels: dict[tuple, Relation] = {}

    def add(a: str, b: str, label: str, desc: str = "", *, d: bool = directed, w: float = 1.0) -> None:
        r = Relation(domain="t", source=a, target=b, relation=label, description=desc, directed=d, weight=w,
                     keywords=rng.sample(["k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10"], rng.randrange(0, 11)),
                     source_chunk_ids=rng.sample(["c1", "c9"], rng.randrange(0, 2)))  # fmt: skip
        rels.setdefault(r.key(), r)

    for desc in ("z desc", "a desc", ""):
        add("a", "b", "same", desc)
        add("b", "a", "same", desc)
    add("a", "b", "", "")
    add("a", "a", "self")
    add("c", "c", "", "loop")
    add("a", "c", "und", "one", d=False)
    add("c", "a", "und", "two", d=False)
    for i in range(60):
        add("hub", f"n{i}", rng.choice(["r", "s", ""]), rng.choice(["", "d"]), w=rng.choice([1.0, 2.0]))
        if i % 3 == 0:
            add(f"n{i}", "hub", "r", "back")
    for _ in range(120):
        a, b = rng.choice(names), rng.choice(names)
        add(a, b, rng.choice(["r", "s", "Ünï"]), rng.choice(["", "x", "y ✓"]), w=rng.choice([0.5, 1.0]))
    return KnowledgeGraph.from_records("t", entities, list(rels.values()), directed=directed)


def empty_graph() -> KnowledgeGraph:
    return KnowledgeGraph.from_records("t", [], [], directed=True)


def lonely_graph() -> KnowledgeGraph:
    return KnowledgeGraph.from_records("t", [Entity(domain="t", name="only", description="alone")], [],
                                       directed=False)  # fmt: skip


@pytest.mark.parametrize("make", [generated_graph, lambda: tied_graph(True), lambda: tied_graph(False), empty_graph,
                                  lonely_graph], ids=["generated", "tied-directed", "tied-undirected", "empty", "lonely"])
@pytest.mark.parametrize("limits", [RenderLimits(), RenderLimits(neighbors=3, keywords=2, edge_description_chars=20,
                                                                 description_chars=30)], ids=["default", "tight"])
def test_the_fast_build_equals_the_walk(make: Any, limits: RenderLimits) -> None:
    graph = make()
    fast, fast_meta = build_arrays(graph, limits, "h")
    slow, slow_meta = reference_arrays(graph, limits, "h")
    assert fast_meta == slow_meta
    assert sorted(fast) == sorted(slow) == sorted(_ARRAYS)
    for name in _ARRAYS:
        assert fast[name].dtype == slow[name].dtype, name
        assert fast[name].shape == slow[name].shape, name
        assert np.array_equal(fast[name], slow[name]), name
        assert fast[name].tobytes() == slow[name].tobytes(), name


def _stored(tmp_path: Any, graph: KnowledgeGraph) -> tuple[Any, Any]:
    """``graph`` written as a snapshot of a new warehouse: the warehouse and the snapshot's row."""
    from warehouse.db import Warehouse
    from warehouse.graphs import write_snapshot

    wh = Warehouse(tmp_path / "warehouse.duckdb")
    snap = write_snapshot(wh, graph.domain, graph.entities(), graph.relations(), source="triples", build_run_id=None,
                          directed=graph.directed)  # fmt: skip
    return wh, snap


@pytest.mark.parametrize("make", [generated_graph, lambda: tied_graph(True), lambda: tied_graph(False), lonely_graph],
                         ids=["generated", "tied-directed", "tied-undirected", "lonely"])
def test_the_cold_start_from_the_warehouse_tables_writes_the_walks_arrays(tmp_path: Any, make: Any) -> None:
    """The tool server's cold start reads a snapshot as columns (``GraphColumns.from_tables``: no records, no
    ``KnowledgeGraph``) and writes its cache in a forked process: every file it writes holds the reference walk's
    arrays over the ``KnowledgeGraph`` of the same snapshot, read the old way (validated records, networkx)."""
    import flows.tool_server as tool_server
    from tasks.env.index import HashingEmbedder
    from tasks.env.served import read_arrays
    from warehouse.graphs import load_graph

    wh, snap = _stored(tmp_path, make())
    limits = RenderLimits()
    old = getattr(tool_server, "FORK_ARRAYS_MIN_ENTITIES")
    try:
        tool_server.FORK_ARRAYS_MIN_ENTITIES = 1  # the forked writer, as at scale
        (served,) = tool_server.served_graphs(wh, None, tmp_path / "indexes", HashingEmbedder(), limits)
    finally:
        tool_server.FORK_ARRAYS_MIN_ENTITIES = old
    found = read_arrays(served.path)
    assert found is not None
    written, meta = found
    expected, expected_meta = reference_arrays(load_graph(wh, snap.domain, snap.snapshot_id), limits,
                                               snap.content_hash)  # fmt: skip
    assert meta == expected_meta
    for name in _ARRAYS:
        assert written[name].dtype == expected[name].dtype, name
        assert np.asarray(written[name]).tobytes() == expected[name].tobytes(), name


def test_columns_in_any_relation_order_give_the_same_arrays() -> None:
    """A snapshot's relations are read in no set order: shuffled, the arrays are the same bytes."""
    import pyarrow as pa

    from tasks.env.served import GraphColumns

    graph = tied_graph(True)
    ents = pa.table({"name": [e.name for e in graph.entities()], "type": [e.type for e in graph.entities()],
                     "description": [e.description for e in graph.entities()],
                     "source_chunk_ids": [e.source_chunk_ids for e in graph.entities()],
                     "file_paths": [e.file_paths for e in graph.entities()]})  # fmt: skip
    rels = graph.relations()
    random.Random(3).shuffle(rels)
    rel_table = pa.table({k: [getattr(r, k) for r in rels] for k in ("source", "target", "relation", "keywords",
                                                                    "description", "weight", "source_chunk_ids",
                                                                    "directed")})  # fmt: skip
    cols = GraphColumns.from_tables("t", True, None, ents.take(list(range(len(ents)))[::-1]), rel_table)
    assert cols.names == graph.nodes()  # re-sorted in Python's order
    fast, _ = build_arrays(cols, RenderLimits(), "h")
    slow, _ = reference_arrays(graph, RenderLimits(), "h")
    for name in _ARRAYS:
        assert fast[name].tobytes() == slow[name].tobytes(), name


@pytest.mark.parametrize("change, problem", [
    ("duplicate name", "duplicate entity name"),
    ("missing end", "not entities"),
    ("duplicate relation", "duplicate relation"),
    ("directed in undirected", "directed relation(s) in an undirected graph"),
])  # fmt: skip
def test_columns_are_checked_as_records_are(change: str, problem: str) -> None:
    import pyarrow as pa

    from tasks.env.served import GraphColumns
    from tasks.graph.store import GraphRecordsError

    names = ["a", "b", "c"] + (["c"] if change == "duplicate name" else [])
    ents = pa.table({"name": names, "type": ["x"] * len(names), "description": [""] * len(names),
                     "source_chunk_ids": [[]] * len(names), "file_paths": [[]] * len(names)})  # fmt: skip
    directed = change != "directed in undirected"
    rows = [("a", "b", "r", directed), ("b", "c", "r", not directed)]
    rows += {"missing end": [("a", "zz", "r", False)], "duplicate relation": [("c", "b", "r", False)]}.get(change, [])
    rels = pa.table({"source": [r[0] for r in rows], "target": [r[1] for r in rows], "relation": [r[2] for r in rows],
                     "keywords": [[]] * len(rows), "description": [""] * len(rows), "weight": [1.0] * len(rows),
                     "source_chunk_ids": [[]] * len(rows), "directed": [r[3] for r in rows]})  # fmt: skip
    with pytest.raises(GraphRecordsError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        GraphColumns.from_tables("t", directed, None, ents, rels)


@pytest.mark.parametrize("make", [generated_graph, lambda: tied_graph(False), lonely_graph],
                         ids=["generated", "tied-undirected", "lonely"])
def test_replies_rendered_in_two_processes_are_the_walks(make: Any) -> None:
    graph = make()
    fast, _ = build_arrays(graph, RenderLimits(neighbors=3), "h", processes=2)
    slow, _ = reference_arrays(graph, RenderLimits(neighbors=3), "h")
    for name in _ARRAYS:
        assert fast[name].tobytes() == slow[name].tobytes(), name


def test_replies_whose_forked_half_fails_are_rendered_in_process() -> None:
    import os

    from tasks.env.served import _in_two

    parent = os.getpid()

    def render(first: int, stop: int) -> tuple[bytes, np.ndarray]:
        if os.getpid() != parent:
            raise RuntimeError("the child fails")
        parts = [f"<{i}>".encode() for i in range(first, stop)]
        return b"".join(parts), np.asarray([len(x) for x in parts], dtype=np.int64)

    blob, lengths = _in_two(render, 13)
    assert blob == b"".join(f"<{i}>".encode() for i in range(13))
    assert lengths.tolist() == [len(f"<{i}>") for i in range(13)]
