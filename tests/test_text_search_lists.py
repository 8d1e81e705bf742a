"""The text index's inverted lists: the meaning half's approximate first pass on large collections.

Each list search is checked against a ranking spelled out in float64 from the index's centroids and assignments
(not through ``_InvertedLists.top``): probing every list must give the exact ranking, probing fewer the exact
ranking of the rows in the probed lists.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

import tasks.env.text_search as text_search
from bench.text_corpus import synthetic_chunks
from tasks.env.index import HashingEmbedder
from tasks.env.text_search import TextIndex, _InvertedLists


@pytest.fixture(scope="module")
def corpus():
    chunks, facts = synthetic_chunks(2400, seed=11)
    return chunks, facts


@pytest.fixture(scope="module")
def exact(corpus) -> TextIndex:
    chunks, _ = corpus
    return TextIndex(chunks, HashingEmbedder(), name="exact", candidates=20, dense="exact").warm()


def _with_lists(exact: TextIndex, nprobe: int | None = None, name: str = "lists") -> TextIndex:
    index = TextIndex(exact.chunks, exact.embedder, name=name, candidates=20, dense="ivf", nprobe=nprobe)
    index._matrix = exact._dense()  # the same embeddings, not computed again
    return index


def _assigned(lists: _InvertedLists) -> np.ndarray:
    """The list of each chunk, read from the stored order and offsets."""
    out = np.empty(len(lists.order), dtype=np.intp)
    for lst in range(lists.lists):
        out[lists.order[lists.offsets[lst] : lists.offsets[lst + 1]]] = lst
    return out


def reference_dense(index: TextIndex, query: str, n: int) -> list[int]:
    """The ``n`` best chunks among the lists the query probes, spelled out in float64: centroid similarities,
    the ``probes`` best lists (ties by list id), then every row of those lists by cosine, ties by chunk order."""
    lists = index._inverted()
    assert lists is not None
    q = np.asarray(index.embedder.embed([query]), dtype=np.float64)[0]
    q /= np.linalg.norm(q)
    cent = (lists.centroids.astype(np.float64) * q).sum(axis=1)
    ids = np.arange(lists.lists)
    probed = set(ids[np.lexsort((ids, -cent))][: index.probes].tolist())
    assigned = _assigned(lists)
    rows = np.flatnonzero([a in probed for a in assigned])
    scores = (index._dense()[rows].astype(np.float64) * q).sum(axis=1)
    return rows[np.lexsort((rows, -scores))][:n].tolist()


def test_every_chunk_is_in_the_list_of_its_most_similar_centroid(exact):
    index = _with_lists(exact)
    lists = index._inverted()
    assert lists is not None and lists.lists == _InvertedLists.list_count(len(index)) > 1
    assert sorted(lists.order.tolist()) == list(range(len(index)))
    assert lists.offsets[0] == 0 and lists.offsets[-1] == len(index) and np.all(np.diff(lists.offsets) >= 0)
    sims = index._dense().astype(np.float64) @ lists.centroids.astype(np.float64).T
    assigned = _assigned(lists)
    best = sims.max(axis=1)
    mine = sims[np.arange(len(index)), assigned]
    assert np.all(mine >= best - 1e-5)  # the most similar, up to float32 rounding of a near-tie
    np.testing.assert_allclose(np.linalg.norm(lists.centroids, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(lists.rows, index._dense()[lists.order])


def test_probing_every_list_ranks_exactly_as_the_whole_matrix(exact, corpus):
    _, facts = corpus
    index = _with_lists(exact, nprobe=_InvertedLists.list_count(len(exact)), name="all")
    queries = [f.query for f in facts[::97]] + ["wheat harvest river", "zzzz qqqq"]
    assert index.dense_top(queries) is not None
    for got, want in zip(index.dense_top(queries), exact.dense_top(queries), strict=True):
        np.testing.assert_array_equal(got, want)
    assert index.search_many(queries, 10) == exact.search_many(queries, 10)


@pytest.mark.parametrize("nprobe", [1, 3, 12])
def test_probing_some_lists_ranks_their_rows_exactly(exact, corpus, nprobe):
    _, facts = corpus
    index = _with_lists(exact, nprobe=nprobe, name=f"p{nprobe}")
    assert index.probes == nprobe
    for q in [f.query for f in facts[5::151]] + ["wheat harvest river"]:
        got = index.dense_top([q])[0].tolist()
        assert got == reference_dense(index, q, index.depth), q


def test_fewer_probes_find_a_subset_of_what_more_probes_find_above_their_floor(exact, corpus):
    """More probes only add rows: every row one probe finds above the exact top list's floor stays found."""
    _, facts = corpus
    few, many = _with_lists(exact, nprobe=2, name="few"), _with_lists(exact, nprobe=20, name="many")
    for q in [f.query for f in facts[::211]]:
        a, b = set(few.dense_top([q])[0][:10].tolist()), set(many.dense_top([q])[0].tolist())
        want = exact.dense_top([q])[0]
        assert a & set(want[:10].tolist()) <= b


def test_a_query_ranks_the_same_alone_in_a_batch_and_under_concurrency(exact, corpus):
    from concurrent.futures import ThreadPoolExecutor

    _, facts = corpus
    index = _with_lists(exact, nprobe=4, name="batch")
    queries = [f.query for f in facts[1:300:7]]
    alone = [index.search(q, 3) for q in queries]
    assert index.search_many(queries, 3) == alone
    with ThreadPoolExecutor(16) as pool:
        assert list(pool.map(lambda q: index.search(q, 3), queries)) == alone


def test_lists_are_cached_beside_the_matrix_and_reused(corpus, tmp_path, monkeypatch):
    chunks, facts = corpus
    emb = HashingEmbedder()
    first = TextIndex(chunks, emb, name="c", cache_dir=tmp_path, dense="ivf", nprobe=3).warm()
    files = sorted(p.name for p in tmp_path.glob("*ivf*"))
    assert [f.rsplit(".", 2)[-2] for f in files] == ["centroids", "offsets", "order", "rows"]
    built = []
    monkeypatch.setattr(_InvertedLists, "build", classmethod(lambda cls, *a, **k: built.append(a) or None))
    again = TextIndex(chunks, emb, name="c", cache_dir=tmp_path, dense="ivf", nprobe=3).warm()
    assert built == []  # loaded, not built
    queries = [f.query for f in facts[::300]]
    assert again.search_many(queries, 5) == first.search_many(queries, 5)


def test_cached_lists_that_do_not_fit_are_rebuilt_with_a_warning(corpus, tmp_path, caplog):
    chunks, facts = corpus
    emb = HashingEmbedder()
    first = TextIndex(chunks, emb, name="c", cache_dir=tmp_path, dense="ivf", nprobe=3).warm()
    offsets = next(tmp_path.glob("*ivf*.offsets.npy"))
    np.save(offsets, np.zeros(3, dtype=np.int64))  # another matrix's lists
    with caplog.at_level(logging.WARNING, logger="tasks.env.text_search"):
        again = TextIndex(chunks, emb, name="c", cache_dir=tmp_path, dense="ivf", nprobe=3).warm()
    assert "do not fit" in caplog.text
    queries = [f.query for f in facts[::300]]
    assert again.search_many(queries, 5) == first.search_many(queries, 5)
    assert np.load(offsets).shape == (first._inverted().lists + 1,)  # saved again, whole


def test_auto_uses_lists_from_the_size_threshold_only(corpus, monkeypatch):
    chunks, _ = corpus
    emb = HashingEmbedder()
    assert not TextIndex(chunks, emb, name="a").uses_lists
    assert not TextIndex(chunks, None, name="a", dense="ivf").uses_lists  # no embedder: no meaning half
    assert not TextIndex(chunks[:20], emb, name="a", dense="ivf").uses_lists  # too few chunks for two lists
    monkeypatch.setattr(text_search, "IVF_MIN_ROWS", len(chunks))
    index = TextIndex(chunks, emb, name="a")
    assert index.uses_lists and index.probes == max(1, round(text_search.IVF_PROBE_SHARE * index._inverted().lists))
    assert index.prepare_search().startswith("inverted lists (")
    assert not TextIndex(chunks, emb, name="a", dense="exact").uses_lists


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"dense": "approximate"}, "dense must be auto, exact or ivf"),
    ({"nprobe": 0}, "nprobe must be a whole number >= 1"),
    ({"nprobe": 2.5}, "nprobe must be a whole number >= 1"),
])  # fmt: skip
def test_bad_list_settings_are_refused(corpus, kwargs, message):
    chunks, _ = corpus
    with pytest.raises(ValueError, match=message):
        TextIndex(chunks, HashingEmbedder(), name="bad", **kwargs)


def test_more_probes_than_lists_probe_every_list(exact):
    index = _with_lists(exact, nprobe=10_000, name="over")
    assert index.probes == index._inverted().lists


def test_the_ikg_settings_choose_the_search_the_tool_server_and_checks_build(corpus, tmp_path):
    from flows.ikg_data import text_index_of
    from schemas.config import load_settings
    from schemas.errors import ConfigError

    chunks, _ = corpus
    settings = load_settings(data_dir=tmp_path / "data", ikg={"text_dense": "ivf", "text_nprobe": 3})
    index = text_index_of("d", chunks, None, HashingEmbedder(), settings)
    assert index is not None and index.uses_lists and index.probes == 3
    plain = text_index_of("d", chunks, None, HashingEmbedder(), load_settings(data_dir=tmp_path / "data"))
    assert plain is not None and not plain.uses_lists and plain is not index
    with pytest.raises(ConfigError, match="text_nprobe"):
        load_settings(data_dir=tmp_path / "data", ikg={"text_nprobe": 0})
    with pytest.raises(ConfigError, match="text_dense"):
        load_settings(data_dir=tmp_path / "data", ikg={"text_dense": "hnsw"})
