"""The entity index's approximate first pass: an HNSW graph (usearch, ``AnnIndex``) from ``ANN_MIN_ROWS`` rows.

Checked against a brute-force float64 ranking on a generated set of a few thousand rows forced through the graph
(the threshold lowered): recall@10 of a build on two threads and of a small one (one thread), identical results from an index saved to a file and
viewed again (in this process and in another, as the workers of a server view it), and reproducible builds (the
same file bytes in another process) where the build is kept on one thread, as every build below
``ANN_PARALLEL_MIN_ROWS`` rows is. A build on several threads is not
reproducible, so nothing here compares two of them byte for byte.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tasks.env.index as index_module
from schemas.graph import Entity
from tasks.env.index import ANN_DTYPE, AnnIndex, GraphIndex, HashingEmbedder
from tasks.graph.kg import KnowledgeGraph

ROOT = Path(__file__).resolve().parent.parent


class _FixedEmbedder:
    """Hands back the preset row of each entity (named ``e<row>``, embedded by its name alone)."""

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows
        self.dim = rows.shape[1]
        self.name = "fixed"

    def embed(self, texts):
        return self.rows[[int(t[1:]) for t in texts]]


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _clustered(seed: int, n: int = 4000, dim: int = 64) -> np.ndarray:
    """Rows around n/100 random centres, as far from their centre as the centre is from the origin."""
    rng = np.random.default_rng(seed)
    centres = _unit(rng.standard_normal((n // 100, dim)))
    return _unit(centres[rng.integers(0, len(centres), n)] + rng.standard_normal((n, dim)) / np.sqrt(dim))


def _index(rows: np.ndarray, **kw) -> GraphIndex:
    names = [f"e{i:06d}" for i in range(len(rows))]
    g = KnowledgeGraph.from_records("cs", [Entity(domain="cs", name=n) for n in names], [])
    return GraphIndex(g, _FixedEmbedder(rows), **kw)


def _brute(matrix: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    scores = queries.astype(np.float64) @ matrix.astype(np.float64).T
    return np.array([np.lexsort((np.arange(len(s)), -s))[:k] for s in scores])


@pytest.fixture
def low_threshold(monkeypatch):
    monkeypatch.setattr(index_module, "ANN_MIN_ROWS", 1000)


def test_the_graph_finds_the_exact_top_10_of_nearly_every_query(low_threshold, monkeypatch):
    monkeypatch.setattr(index_module, "ANN_BUILD_THREADS", 2)  # racy insertion: recall, not bytes, is the same
    rows = _clustered(1)
    rng = np.random.default_rng(2)
    queries = _unit(rows[rng.integers(0, len(rows), 300)] + rng.standard_normal((300, rows.shape[1])) / 8)
    idx = _index(rows)
    assert idx.uses_ann and idx.prepare_search().startswith("hnsw (usearch")
    got, scores = idx.top_k(queries, 10)
    want = _brute(rows, queries, 10)
    recall = np.mean([len(set(g) & set(w)) / 10 for g, w in zip(got.tolist(), want.tolist())])
    assert recall >= 0.95, recall
    # the candidates are ranked exactly: scores are the float64 sums, best first
    m = idx.embeddings
    exact = np.array([(m[g].astype(np.float64) * q.astype(np.float64)).sum(axis=1) for g, q in zip(got, queries)])
    assert np.array_equal(scores, exact) and np.all(np.diff(scores, axis=1) <= 0)


def test_names_misspelt_find_their_entity_through_the_graph(low_threshold):
    names = [f"{a} {b} {i}" for i, (a, b) in enumerate((a, b) for a in ("Alan", "Grace", "Ada", "Edsger", "Barbara",
             "Donald", "John", "Niklaus") for b in ("Turing", "Hopper", "Lovelace", "Dijkstra", "Liskov", "Knuth",
             "McCarthy", "Wirth", "Backus", "Hoare", "Milner", "Kay", "Thompson", "Ritchie", "Lamport", "Codd"))]
    names = [f"{n} {j}" for n in names for j in range(12)]  # 1,536 entities
    g = KnowledgeGraph.from_records("cs", [Entity(domain="cs", name=n) for n in names], [])
    graph_idx, exact_idx = GraphIndex(g, HashingEmbedder(64)), GraphIndex(g, HashingEmbedder(64), search="float32")
    assert graph_idx.uses_ann and not exact_idx.uses_ann
    queries = [n.lower()[:-1] + "x" for n in names[::37]]
    got, want = graph_idx.match_many(queries, 10), exact_idx.match_many(queries, 10)
    recall = np.mean([len({m.name for m in a} & {m.name for m in b}) / 10 for a, b in zip(got, want)])
    assert recall >= 0.95, recall


def test_a_saved_graph_is_viewed_again_with_identical_results(low_threshold, tmp_path, monkeypatch):
    rows = _clustered(3, n=3000, dim=32)
    queries = _unit(np.random.default_rng(4).standard_normal((40, 32)))
    first = _index(rows, cache_dir=tmp_path)
    want = first.top_k(queries, 7)
    path = first.ann_path()
    assert path is not None and path.exists() and path.suffix == ".usearch" and ANN_DTYPE in path.name
    built = []
    monkeypatch.setattr(AnnIndex, "build", classmethod(lambda cls, m: built.append(m) or None))
    again = _index(rows, cache_dir=tmp_path)
    got = again.top_k(queries, 7)
    assert built == []  # viewed from the file, not built
    assert again.ann().path == path
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    one_by_one = np.concatenate([again.top_k(q[None], 7)[0] for q in queries])
    assert np.array_equal(one_by_one, want[0])  # a query's candidates do not depend on the others of its batch


def test_a_small_graph_is_built_on_one_thread_and_the_same_file_in_another_process(tmp_path):
    """No setting asked for one thread: below ``ANN_PARALLEL_MIN_ROWS`` rows that is the default."""
    assert index_module.ANN_BUILD_THREADS == 0 and index_module.ann_build_threads(2000) == 1
    assert index_module.ann_build_threads(index_module.ANN_PARALLEL_MIN_ROWS) == index_module.ann_build_threads()
    rows = _clustered(5, n=2000, dim=32)
    np.save(tmp_path / "rows.npy", rows)
    here = AnnIndex.load_or_build(rows, tmp_path / "here.usearch")
    code = ("import sys, numpy as np; from pathlib import Path; import tasks.env.index as m; "
            "m.AnnIndex.load_or_build(np.load(sys.argv[1]), Path(sys.argv[2]))")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "rows.npy"), str(tmp_path / "there.usearch")],
                   check=True, cwd=ROOT)  # fmt: skip
    assert (tmp_path / "here.usearch").read_bytes() == (tmp_path / "there.usearch").read_bytes()
    assert len(here) == 2000


def test_a_graph_built_on_two_threads_answers_the_same_in_every_process_that_views_it(tmp_path, monkeypatch):
    """What holds of a multi-threaded build: the cached file is the graph, so another process viewing it (a
    server's other worker, a restart) finds the same candidates, and it is viewed, not built again."""
    monkeypatch.setattr(index_module, "ANN_BUILD_THREADS", 2)
    assert index_module.ann_build_threads() >= 1
    rows = _clustered(5, n=3000, dim=32)
    queries = _unit(np.random.default_rng(10).standard_normal((50, 32)))
    path = tmp_path / "graph.usearch"
    built = AnnIndex.load_or_build(rows, path)
    stamp = path.stat().st_mtime_ns
    np.save(tmp_path / "rows.npy", rows)
    np.save(tmp_path / "queries.npy", queries)
    code = ("import sys, numpy as np; from pathlib import Path; from tasks.env.index import AnnIndex; "
            "g = AnnIndex.load_or_build(np.load(sys.argv[1]), Path(sys.argv[2])); "
            "print(' '.join(','.join(map(str, c)) for c in g.candidates(np.load(sys.argv[3]), 20)))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "rows.npy"), str(path),
                          str(tmp_path / "queries.npy")], check=True, cwd=ROOT, capture_output=True, text=True)
    there = [list(map(int, c.split(","))) for c in out.stdout.split()]
    assert there == [c.tolist() for c in built.candidates(queries, 20)]
    assert path.stat().st_mtime_ns == stamp  # viewed in the other process, not rebuilt


def test_a_graph_file_that_does_not_fit_is_rebuilt_with_a_warning(low_threshold, tmp_path, caplog):
    """The graph is rebuilt, so on several threads not necessarily the same graph as the first build (see
    ``AnnIndex``): each build's answers are checked against the exact ranking, not against each other."""
    rows = _clustered(6, n=2500, dim=32)
    queries = _unit(np.random.default_rng(7).standard_normal((100, 32)))
    exact = _brute(rows, queries, 5)

    def recall(found: np.ndarray) -> float:
        return float(np.mean([len(set(g) & set(w)) / 5 for g, w in zip(found.tolist(), exact.tolist())]))

    want = _index(rows, cache_dir=tmp_path).top_k(queries, 5)
    assert recall(want[0]) >= 0.95
    path = _index(rows, cache_dir=tmp_path).ann_path()
    AnnIndex.load_or_build(rows[:1500], path.with_name("other.usearch"))
    # another matrix's graph under this name, replaced as the cache writes (never rewritten in place: a process
    # viewing the old file would read pages that are gone)
    os.replace(path.with_name("other.usearch"), path)
    with caplog.at_level(logging.WARNING, logger="tasks.env.index"):
        got = _index(rows, cache_dir=tmp_path).top_k(queries, 5)
    assert "is not an index of 2500 rows" in caplog.text
    assert recall(got[0]) >= 0.95
    assert AnnIndex.view(path, 2500, 32) is not None  # saved again, whole
    again = _index(rows, cache_dir=tmp_path).top_k(queries, 5)
    assert np.array_equal(again[0], got[0])  # the rebuilt file is the one read from now on
    (tmp_path / "junk").write_bytes(b"not an index")
    os.replace(tmp_path / "junk", path)
    with caplog.at_level(logging.WARNING, logger="tasks.env.index"):
        got = _index(rows, cache_dir=tmp_path).top_k(queries, 5)
    assert "ignoring unreadable HNSW index" in caplog.text
    assert recall(got[0]) >= 0.95
    assert AnnIndex.view(path, 2500, 32) is not None


def test_exact_below_the_threshold_and_when_a_precision_is_asked(low_threshold):
    rows = _clustered(8, n=1200, dim=16)
    assert not _index(rows[:999]).uses_ann and _index(rows[:999]).ann() is None
    assert not _index(rows, search="float32").uses_ann and not _index(rows, search="bfloat16").uses_ann
    assert _index(rows[:50], search="hnsw").uses_ann
    forced = _index(rows, search="hnsw")
    assert forced.share_search() is False  # no bfloat16 copy where the graph serves
    queries = _unit(np.random.default_rng(9).standard_normal((5, 16)))
    assert np.array_equal(forced.top_k(queries, len(rows) + 5)[0], _brute(rows, queries, len(rows)))  # k >= rows
