"""The text index's approximate first pass on large collections: an HNSW graph (usearch, ``AnnIndex``) in place of
the inverted lists it replaced. Checked against the exact meaning ranking of the same chunks: recall, the same
ranking alone, batched and under concurrency, and a graph cached beside the matrix and viewed again."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest

import tasks.env.text_search as text_search
from testing.text_corpus import synthetic_chunks
from tasks.env.index import AnnIndex, HashingEmbedder
from tasks.env.text_search import TextIndex


@pytest.fixture(scope="module")
def corpus():
    chunks, facts = synthetic_chunks(2400, seed=11)
    return chunks, facts


@pytest.fixture(scope="module")
def exact(corpus) -> TextIndex:
    chunks, _ = corpus
    return TextIndex(chunks, HashingEmbedder(), name="exact", candidates=20, dense="exact").warm()


def _with_graph(exact: TextIndex, nprobe: int | None = None, name: str = "graph") -> TextIndex:
    index = TextIndex(exact.chunks, exact.embedder, name=name, candidates=20, dense="hnsw", nprobe=nprobe)
    index._matrix = exact._dense()  # the same embeddings, not computed again
    return index


def test_the_graph_finds_nearly_every_chunk_of_the_exact_meaning_ranking(exact, corpus):
    _, facts = corpus
    index = _with_graph(exact)
    assert index.uses_ann and index.prepare_search().startswith("hnsw (usearch")
    queries = [f.query for f in facts[::7]]
    got, want = index.dense_top(queries), exact.dense_top(queries)
    recall_10 = np.mean([len(set(g[:10].tolist()) & set(w[:10].tolist())) / 10 for g, w in zip(got, want)])
    recall_depth = np.mean([len(set(g.tolist()) & set(w.tolist())) / len(w) for g, w in zip(got, want)])
    assert recall_10 >= 0.95 and recall_depth >= 0.95, (recall_10, recall_depth)
    # the rows found are ranked exactly: a found row never sits above a better-scoring found row
    m = exact._dense().astype(np.float64)
    q = np.asarray(exact.embedder.embed(queries[:20]), dtype=np.float64)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    for rows, vec in zip(got[:20], q):
        assert np.all(np.diff((m[rows] * vec).sum(axis=1)) <= 0)
    fused_same = np.mean([a == b for a, b in zip(index.search_many(queries, 3), exact.search_many(queries, 3))])
    # a fused top 3 moves with any row of the meaning ranking (RRF adds 1/(60 + rank) of both rankings), so fewer
    # fused lists than meaning rows stay identical: 0.99 here at the default search depth (320 for 20 rows a ranking)
    assert fused_same >= 0.9, fused_same


def test_a_query_ranks_the_same_alone_in_a_batch_and_under_concurrency(exact, corpus):
    from concurrent.futures import ThreadPoolExecutor

    _, facts = corpus
    index = _with_graph(exact, name="batch")
    queries = [f.query for f in facts[1:300:7]]
    alone = [index.search(q, 3) for q in queries]
    assert index.search_many(queries, 3) == alone
    with ThreadPoolExecutor(16) as pool:
        assert list(pool.map(lambda q: index.search(q, 3), queries)) == alone


def test_the_graph_is_cached_beside_the_matrix_and_viewed_again(corpus, tmp_path, monkeypatch):
    chunks, facts = corpus
    emb = HashingEmbedder()
    first = TextIndex(chunks, emb, name="c", cache_dir=tmp_path, dense="hnsw").warm()
    files = sorted(p.name for p in tmp_path.glob("*.usearch"))
    assert len(files) == 1 and "__hnsw-" in files[0]
    built = []
    monkeypatch.setattr(AnnIndex, "build", classmethod(lambda cls, *a, **k: built.append(a) or None))
    again = TextIndex(chunks, emb, name="c", cache_dir=tmp_path, dense="hnsw").warm()
    assert built == []  # viewed, not built
    queries = [f.query for f in facts[::100]]
    assert again.search_many(queries, 5) == first.search_many(queries, 5)


def test_a_cached_graph_that_does_not_fit_is_rebuilt_with_a_warning(exact, corpus, tmp_path, caplog):
    """The graph is rebuilt on several threads, so not necessarily the same graph as the first (``AnnIndex``):
    the rebuilt one's meaning ranking is checked against the exact one, then read back from its file."""
    chunks, facts = corpus
    emb = HashingEmbedder()
    first = TextIndex(chunks, emb, name="c", cache_dir=tmp_path, dense="hnsw").warm()
    queries = [f.query for f in facts[::30]]
    path = next(tmp_path.glob("*.usearch"))
    AnnIndex.load_or_build(first._dense()[:500], tmp_path / "small.usearch")
    # another matrix's graph put in its place (replaced, as the cache writes: ``first`` still maps the old file)
    os.replace(tmp_path / "small.usearch", path)
    with caplog.at_level(logging.WARNING, logger="tasks.env.index"):
        again = TextIndex(chunks, emb, name="c", cache_dir=tmp_path, dense="hnsw").warm()
    assert "is not an index of 2400 rows" in caplog.text
    got, want = again.dense_top(queries), exact.dense_top(queries)
    recall_10 = np.mean([len(set(g[:10].tolist()) & set(w[:10].tolist())) / 10 for g, w in zip(got, want)])
    assert recall_10 >= 0.95, recall_10
    assert AnnIndex.view(path, 2400, emb.dim) is not None  # saved again, whole
    viewed = TextIndex(chunks, emb, name="c", cache_dir=tmp_path, dense="hnsw").warm()
    assert viewed.search_many(queries, 5) == again.search_many(queries, 5)  # the rebuilt file, read from now on


def test_auto_uses_the_graph_from_the_size_threshold_only(corpus, monkeypatch):
    chunks, _ = corpus
    emb = HashingEmbedder()
    assert not TextIndex(chunks, emb, name="a").uses_ann
    assert not TextIndex(chunks, None, name="a", dense="hnsw").uses_ann  # no embedder: no meaning half
    assert not TextIndex(chunks[:20], emb, name="a", dense="hnsw").uses_ann  # no more chunks than a ranking holds
    monkeypatch.setattr(text_search, "ANN_MIN_CHUNKS", len(chunks))
    index = TextIndex(chunks, emb, name="a")
    assert index.uses_ann and index.prepare_search().startswith("hnsw (usearch")
    assert not TextIndex(chunks, emb, name="a", dense="exact").uses_ann
    assert TextIndex(chunks[:100], emb, name="a", dense="ivf").uses_ann  # the setting's older name


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"dense": "approximate"}, "dense must be one of auto, exact, hnsw, ivf"),
    ({"nprobe": 0}, "nprobe must be a whole number >= 1"),
    ({"nprobe": 2.5}, "nprobe must be a whole number >= 1"),
])  # fmt: skip
def test_bad_graph_settings_are_refused(corpus, kwargs, message):
    chunks, _ = corpus
    with pytest.raises(ValueError, match=message):
        TextIndex(chunks, HashingEmbedder(), name="bad", **kwargs)


def test_nprobe_sets_the_search_depth_never_below_twice_the_ranking(exact):
    assert _with_graph(exact).expansion == text_search.ANN_DEPTH_EXPANSION * exact.depth
    assert _with_graph(exact, nprobe=3).expansion == 2 * exact.depth
    assert _with_graph(exact, nprobe=500).expansion == 500


def test_the_ikg_settings_choose_the_search_the_tool_server_and_checks_build(corpus, tmp_path):
    from flows.ikg_data import text_index_of
    from schemas.config import load_settings
    from schemas.errors import ConfigError

    chunks, _ = corpus
    settings = load_settings(data_dir=tmp_path / "data", ikg={"text_dense": "ivf", "text_nprobe": 300})
    index = text_index_of("d", chunks, None, HashingEmbedder(), settings)
    assert index is not None and index.uses_ann and index.expansion == 300
    plain = text_index_of("d", chunks, None, HashingEmbedder(), load_settings(data_dir=tmp_path / "data"))
    assert plain is not None and not plain.uses_ann and plain is not index
    with pytest.raises(ConfigError, match="text_nprobe"):
        load_settings(data_dir=tmp_path / "data", ikg={"text_nprobe": 0})
    with pytest.raises(ConfigError, match="text_dense"):
        load_settings(data_dir=tmp_path / "data", ikg={"text_dense": "lsh"})
