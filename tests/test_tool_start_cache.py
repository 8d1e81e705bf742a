"""The tool server's start from its caches (issue 37): a warm start opens the served graph and the entity matrix
without reading or building the graph and without making the entity texts; a cache that does not describe the
snapshot (another content hash, damaged arrays) is rebuilt; the vectorised hashing embedder gives the same bits
as the one-text-at-a-time recipe the cached matrices were made with."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import numpy as np
import pytest

import warehouse.graphs
from flows.tool_server import served_graphs
from flows.tools_env import tool_environment
from schemas.config import load_settings
from tasks.env.index import GraphIndex, HashingEmbedder, _unit_rows, entity_text, text_fingerprint
from tasks.env.served import ServedGraph
from tasks.env.tools import RenderLimits
from tasks.graph.importers import read_triples
from warehouse.db import Warehouse
from warehouse.graphs import write_import

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "flows" / "demo"


def _warehouse(tmp_path: Path) -> tuple[object, Warehouse]:
    settings = load_settings(data_dir=tmp_path)
    wh = Warehouse(settings.warehouse_path)
    write_import(wh, read_triples(DEMO / "graphs" / "cs.jsonl", "cs"), build_run_id=None)
    return settings, wh


def _served_dir(root: Path) -> Path:
    (found,) = [p for p in root.iterdir() if "__served-v" in p.name]
    return found


def test_a_cold_start_caches_the_matrix_with_the_served_graph(tmp_path, monkeypatch):
    settings, wh = _warehouse(tmp_path)
    root = settings.data_dir / "indexes"
    (graph,) = served_graphs(wh, None, root, HashingEmbedder())
    matrix = GraphIndex(graph, HashingEmbedder(), cache_dir=root).cache_path()
    assert matrix is not None and matrix.exists()  # embedded from the graph's records, before the served arrays
    monkeypatch.setattr(GraphIndex, "_compute", lambda *_a, **_k: pytest.fail("the matrix is cached already"))
    env = tool_environment(settings, wh, embedder="hashing", served=True)
    assert env.indexes["cs"].cache_path() == matrix


def test_a_warm_start_neither_reads_nor_builds_the_graph_nor_makes_entity_texts(tmp_path, monkeypatch):
    settings, wh = _warehouse(tmp_path)
    cold = tool_environment(settings, wh, embedder="hashing", served=True)
    cold_matrix = np.array(cold.indexes["cs"].embeddings)
    calls: list[str] = []

    def refuse(what):
        def called(*_a, **_k):
            calls.append(what)
            raise AssertionError(f"a warm start must not call {what}")
        return called

    import flows.tool_server

    monkeypatch.setattr(warehouse.graphs, "read_snapshot", refuse("read_snapshot"))
    monkeypatch.setattr(flows.tool_server, "KnowledgeGraph", refuse("KnowledgeGraph"))
    monkeypatch.setattr(ServedGraph, "entity_texts", refuse("ServedGraph.entity_texts"))
    monkeypatch.setattr(ServedGraph, "entities", refuse("ServedGraph.entities"))
    monkeypatch.setattr(GraphIndex, "_compute", refuse("GraphIndex._compute"))
    warm = tool_environment(settings, wh, embedder="hashing", served=True)
    assert calls == []
    index = warm.indexes["cs"]
    assert isinstance(index.graph, ServedGraph)
    assert index.embeddings.base is not None  # memory-mapped from the cached file
    assert np.array_equal(index.embeddings, cold_matrix)
    assert index.cache_path() == cold.indexes["cs"].cache_path()
    obs = warm.call("entity_matcher", {"node_name": "alan turnig", "graph_type": "cs"})
    assert obs.ok and "Alan Turing" in obs.text


def test_the_recorded_text_hash_is_the_hash_of_the_entity_texts(tmp_path):
    settings, wh = _warehouse(tmp_path)
    (graph,) = served_graphs(wh, None, settings.data_dir / "indexes", HashingEmbedder())
    texts = [entity_text(e.name, e.description, 1000) for e in graph.entities()]
    assert graph.entity_texts(1000) == texts
    assert graph.text_fingerprint(1000) == text_fingerprint(texts)
    assert graph.text_fingerprint(50) is None  # not recorded: an index with other limits hashes its texts itself
    short = GraphIndex(graph, HashingEmbedder(), cache_dir=tmp_path / "other", max_text_chars=50)
    assert short.cache_path().stem.endswith(text_fingerprint(graph.entity_texts(50))[:16])


def test_a_cache_of_other_content_is_rebuilt(tmp_path, monkeypatch):
    settings, wh = _warehouse(tmp_path)
    root = settings.data_dir / "indexes"
    served_graphs(wh, None, root, HashingEmbedder())
    meta_file = _served_dir(root) / "meta.json"
    meta = json.loads(meta_file.read_text())
    meta["content_hash"] = "not-this-snapshot"
    meta_file.write_text(json.dumps(meta))
    reads: list[str] = []
    real_read = warehouse.graphs.read_snapshot

    def counted(*args, **kwargs):
        reads.append(args[1])
        return real_read(*args, **kwargs)

    monkeypatch.setattr(warehouse.graphs, "read_snapshot", counted)
    (graph,) = served_graphs(wh, None, root, HashingEmbedder())
    assert reads == ["cs"]  # rebuilt from the warehouse's records
    snap = warehouse.graphs.current_snapshot(wh, "cs")
    assert json.loads(meta_file.read_text())["content_hash"] == snap.content_hash
    assert graph.snapshot_id == snap.snapshot_id and len(graph) == snap.n_nodes
    served_graphs(wh, None, root, HashingEmbedder())
    assert reads == ["cs"]  # and the rebuilt cache is warm again


def test_a_damaged_cache_is_replaced_not_left_in_place(tmp_path):
    settings, wh = _warehouse(tmp_path)
    root = settings.data_dir / "indexes"
    (first,) = served_graphs(wh, None, root, HashingEmbedder())
    folder = _served_dir(root)
    np.save(folder / "reply_offsets.npy", np.zeros(3, dtype=np.int64))  # arrays that disagree with the metadata
    assert ServedGraph.load(folder) is None
    (again,) = served_graphs(wh, None, root, HashingEmbedder())
    assert again.nodes() == first.nodes()
    assert ServedGraph.load(folder) is not None
    assert [p.name for p in root.iterdir() if "__served-v" in p.name] == [folder.name]  # no leftovers


def test_the_vectorised_hashing_embedder_gives_the_same_bits_as_one_text_at_a_time():
    rng = random.Random(5)
    texts = ["", "a", "ab", "Straße ﬁ  ÉCOLE", "日本語: 説明", "  x  "] + [
        "".join(rng.choice("abc XYZé\n\t.:-") for _ in range(rng.randrange(0, 400))) for _ in range(600)]
    for embedder in (HashingEmbedder(), HashingEmbedder(16, decay=3.0)):
        one_by_one = _unit_rows(np.stack([embedder._one(t) for t in texts]).astype(np.float32))
        assert np.array_equal(embedder.embed(texts).view(np.uint32), one_by_one.view(np.uint32))
    assert HashingEmbedder().embed([]).shape == (0, 384)


@pytest.mark.parametrize("rows", [0, 1, 7])
def test_served_entity_texts_of_tiny_graphs(tmp_path, rows):
    from tasks.graph.kg import KnowledgeGraph

    triples = [(f"e{i}", "r", f"e{i + 1}") for i in range(rows)]
    kg = KnowledgeGraph.from_triples("tiny", triples, directed=True)
    graph = ServedGraph.cached(tmp_path / "tiny", kg, RenderLimits())
    assert graph.nodes() == kg.nodes()
    assert graph.entity_texts(1000) == [entity_text(e.name, e.description, 1000) for e in kg.entities()]


def test_a_cold_start_builds_the_hnsw_graph_in_the_background_the_warm_one_views(tmp_path, monkeypatch):
    import tasks.env.index as index_module

    monkeypatch.setattr(index_module, "ANN_MIN_ROWS", 10)  # the demo graph's entities are searched through a graph
    settings, wh = _warehouse(tmp_path)
    root = settings.data_dir / "indexes"
    started: list[str] = []
    real_argv = index_module._builder_argv

    def counted(*args):
        started.append(str(args[1]))
        return real_argv(*args)

    monkeypatch.setattr(index_module, "_builder_argv", counted)
    cold = tool_environment(settings, wh, embedder="hashing", served=True)
    index = cold.indexes["cs"]
    # One build process, started by the cold start's served build and joined by the server's index (or already
    # done): the server answers before the graph exists, by the exact scan.
    assert len(started) == 1 and started[0] == str(index.ann_path())
    query = {"node_name": "alan turnig", "graph_type": "cs"}
    answer = cold.call("entity_matcher", query).text
    while index.serving != "hnsw":  # the build runs in another process: wait for the index to find its file
        assert index.index_status()["hnsw"] == "building"
        time.sleep(0.05)
    assert index.serving == "hnsw" and list(root.glob("*.usearch"))
    warm = tool_environment(settings, wh, embedder="hashing", served=True)
    assert len(started) == 1 and warm.indexes["cs"].ann() is not None  # viewed from its file
    assert warm.indexes["cs"].index_status() == {"serving": "hnsw", "hnsw": "ready"}
    assert warm.call("entity_matcher", query).text == cold.call("entity_matcher", query).text == answer


@pytest.mark.parametrize("ascii_only", [True, False])
def test_names_and_normalised_names_are_found_as_the_knowledge_graph_finds_them(tmp_path, ascii_only):
    """The served graph finds rows by bisection over its sorted names and keys (no dictionaries at start)."""
    from tasks.graph.kg import KnowledgeGraph

    rng = random.Random(11)
    words = ["alpha", "Alpha", "ALPHA", "beta-gamma", "beta gamma", "Delta's", "delta"]
    if not ascii_only:
        words += ["Ærø", "ærø", "Straße", "STRASSE", "東京", "Zoë", "zoe"]
    names = sorted({f"{rng.choice(words)} {rng.choice(words)}" for _ in range(300)} | set(words))
    triples = [(a, "near", b) for a, b in zip(names, names[1:])]
    kg = KnowledgeGraph.from_triples("names", triples, directed=True)
    graph = ServedGraph.cached(tmp_path / "names", kg, RenderLimits())
    queries = [*names, *(n.upper() for n in names), *(n.lower() + " " for n in names), "", "nobody", "zzz", "\uffff"]
    for q in queries:
        assert (q in graph) == (q in kg)
        assert graph.lookup(q) == kg.lookup(q)
        assert graph.lookup_all(q) == kg.lookup_all(q)
    assert 3 not in graph and None not in graph and graph.row(names[5]) == 5


def test_served_arrays_written_in_a_forked_process_are_the_ones_written_in_process(tmp_path, monkeypatch):
    """From ``FORK_ARRAYS_MIN_ENTITIES`` a cold start writes the served arrays in a forked child while it embeds the
    matrix: the same files, byte for byte, as written in the process itself."""
    import flows.tool_server as tool_server

    files = {}
    for name, threshold in (("forked", 1), ("inline", 10**9)):
        monkeypatch.setattr(tool_server, "FORK_ARRAYS_MIN_ENTITIES", threshold)
        settings, wh = _warehouse(tmp_path / name)
        root = settings.data_dir / "indexes"
        (graph,) = served_graphs(wh, None, root, HashingEmbedder())
        served = _served_dir(root)
        files[name] = {p.name: p.read_bytes() for p in sorted(served.iterdir())}
        assert GraphIndex(graph, HashingEmbedder(), cache_dir=root).cache_path().exists()
    assert files["forked"] == files["inline"] and files["forked"]
