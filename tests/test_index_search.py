"""The entity search's candidate product in either precision gives exactly the float64 top-k: the bfloat16 pass
(PyTorch) re-scores every row within ``bfloat16_margin`` of its k-th best, so rounding never drops a true
top-k row, and results do not depend on the precision, on batching or on the process that chose it."""

from __future__ import annotations

import numpy as np
import pytest

from schemas.graph import Entity
from tasks.env.index import AUTO_MIN_ROWS, GraphIndex, HashingEmbedder, bfloat16_margin
from tasks.graph.kg import KnowledgeGraph

torch = pytest.importorskip("torch")


class _FixedEmbedder:
    """Hands back preset rows, so a test decides the entity matrix (clusters, exact ties, near-ties)."""

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows
        self.dim = rows.shape[1]
        self.name = "fixed"

    def embed(self, texts):
        return self.rows[: len(texts)]


def _index(rows: np.ndarray, **kw) -> GraphIndex:
    names = [f"e{i:06d}" for i in range(len(rows))]
    g = KnowledgeGraph.from_records("cs", [Entity(domain="cs", name=n) for n in names], [])
    return GraphIndex(g, _FixedEmbedder(rows), **kw)


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _brute(index: GraphIndex, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    m = index.embeddings.astype(np.float64)
    out_i, out_s = [], []
    for q in queries.astype(np.float64):
        s = (m * q).sum(axis=1)
        order = np.lexsort((np.arange(len(s)), -s))[:k]
        out_i.append(order)
        out_s.append(s[order])
    return np.array(out_i), np.array(out_s)


def _hard_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    """Tight clusters around a few centres (many scores within bfloat16's rounding of each other), exact
    duplicates (ties broken by row order), and random rows."""
    centres = _unit(rng.standard_normal((8, dim)))
    rows = centres[rng.integers(0, 8, n)] + 0.01 * rng.standard_normal((n, dim)).astype(np.float32)
    rows[: n // 10] = rng.standard_normal((n // 10, dim))
    rows[n // 2 : n // 2 + 40] = rows[n // 2]  # 40 identical rows
    return _unit(rows)


@pytest.mark.parametrize("dim", [32, 384])
def test_bfloat16_candidates_give_the_exact_top_k(dim):
    rng = np.random.default_rng(dim)
    rows = _hard_rows(rng, 3000, dim)
    idx = _index(rows, search="bfloat16", chunk_size=16)
    assert idx.prepare_search() == "bfloat16"
    queries = np.concatenate([
        _unit(rows[rng.integers(0, 3000, 30)] + 0.005 * rng.standard_normal((30, dim)).astype(np.float32)),
        _unit(rng.standard_normal((20, dim))),
        rows[[1500, 1500 + 39]],  # the duplicated row itself: 40 exact ties at the top
    ])
    for k in (1, 7, 45):
        got_i, got_s = idx.top_k(queries, k)
        want_i, want_s = _brute(idx, queries, k)
        assert (got_i == want_i).all()
        assert np.array_equal(got_s, want_s)


def test_bfloat16_errors_stay_inside_the_margin():
    rng = np.random.default_rng(3)
    rows = _hard_rows(rng, 2000, 384)
    queries = _unit(rng.standard_normal((64, 384)))
    approx = (torch.from_numpy(queries).bfloat16() @ torch.from_numpy(rows).bfloat16().T).float().numpy()
    exact = queries.astype(np.float64) @ rows.astype(np.float64).T
    assert np.abs(approx - exact).max() < bfloat16_margin(384) / 2  # each score within b of the truth
    assert bfloat16_margin(384) < 0.03  # and b is small enough to prune: a few dozen candidates, not thousands


def test_precisions_agree_and_batching_does_not_matter():
    rng = np.random.default_rng(11)
    rows = _hard_rows(rng, 2500, 64)
    queries = _unit(rng.standard_normal((33, 64)))
    results = []
    for search, chunk in (("float32", 64), ("bfloat16", 64), ("bfloat16", 5), ("auto", 7)):
        idx = _index(rows, search=search, chunk_size=chunk)
        results.append(idx.top_k(queries, 9))
    one_by_one = [_index(rows, search="bfloat16").top_k(q[None], 9) for q in queries]
    for got_i, got_s in results[1:]:
        assert (got_i == results[0][0]).all() and np.array_equal(got_s, results[0][1])
    assert (np.concatenate([i for i, _ in one_by_one]) == results[0][0]).all()


def test_auto_keeps_float32_for_small_graphs_and_picks_a_precision_for_large_ones():
    rng = np.random.default_rng(5)
    assert _index(_unit(rng.standard_normal((AUTO_MIN_ROWS - 1, 16)))).prepare_search() == "float32"
    big = _index(_unit(rng.standard_normal((AUTO_MIN_ROWS, 64))))
    assert big.prepare_search(threads=1) in ("float32", "bfloat16")
    queries = _unit(rng.standard_normal((5, 64)))
    want_i, _ = _brute(big, queries, 6)
    assert (big.top_k(queries, 6)[0] == want_i).all()


def test_match_many_is_the_same_in_both_precisions():
    names = [f"entity {w} {i}" for i in range(600) for w in ("alpha",)]
    g = KnowledgeGraph.from_records("cs", [Entity(domain="cs", name=n, description=f"row {n}") for n in names], [])
    queries = ["entty alpha 17", "alpah entity 300", "entity alpha 599", "nothing like it"]
    a = GraphIndex(g, HashingEmbedder(64), search="float32").match_many(queries, 5)
    b = GraphIndex(g, HashingEmbedder(64), search="bfloat16").match_many(queries, 5)
    assert a == b and all(len(m) == 5 for m in a)


def test_a_bad_precision_is_refused():
    with pytest.raises(ValueError, match="search must be one of auto, float32, bfloat16"):
        _index(np.eye(4, dtype=np.float32), search="fp8")


def test_a_query_that_ties_with_every_row_is_rescored_in_slices(monkeypatch):
    import tasks.env.index as index_module

    monkeypatch.setattr(index_module, "RESCORE_ROWS", 100)
    rng = np.random.default_rng(2)
    rows = _unit(rng.standard_normal((1000, 16)))
    rows[:, 0] = 0.0  # every row orthogonal to the first axis: that query scores 0 with all of them
    idx = _index(rows, search="bfloat16")
    query = np.zeros((1, 16), dtype=np.float32)
    query[0, 0] = 1.0
    got_i, got_s = idx.top_k(query, 5)
    assert list(got_i[0]) == [0, 1, 2, 3, 4] and not got_s.any()  # all tied: row order decides
    queries = _unit(rng.standard_normal((4, 16)))
    want_i, want_s = _brute(idx, queries, 5)
    got_i, got_s = idx.top_k(queries, 5)
    assert (got_i == want_i).all() and np.array_equal(got_s, want_s)


def test_the_shared_bfloat16_bits_are_pytorchs_rounding():
    from tasks.env.index import bfloat16_bits

    rng = np.random.default_rng(8)
    rows = np.concatenate([_hard_rows(rng, 700, 48), np.array([[0.5 + 2.0**-9] * 48, [-(1 + 2.0**-8)] * 48],
                                                                dtype=np.float32)])  # fmt: skip
    want = torch.from_numpy(rows).to(torch.bfloat16)
    got = torch.from_numpy(bfloat16_bits(rows, step=128).view(np.int16)).view(torch.bfloat16)
    assert torch.equal(got, want)


def test_a_shared_bfloat16_copy_gives_the_exact_top_k_without_a_copy_of_its_own(monkeypatch):
    """``share_search`` (the tool server calls it before forking its workers) makes the bfloat16 rows once;
    the product of each process is a view of them, and the results are still the exact ones."""
    rng = np.random.default_rng(21)
    rows = _hard_rows(rng, 3000, 64)
    queries = _unit(rng.standard_normal((17, 64)))
    idx = _index(rows, search="bfloat16")
    assert idx.share_search() and idx._bf16_bits.dtype == np.uint16
    assert idx.prepare_search() == "bfloat16"
    shared = idx._coarse._rows_t
    assert shared.data_ptr() == idx._bf16_bits.ctypes.data  # a view of the shared bits, not a copy
    got_i, got_s = idx.top_k(queries, 8)
    want_i, want_s = _brute(idx, queries, 8)
    assert (got_i == want_i).all() and np.array_equal(got_s, want_s)
    assert not _index(rows, search="float32").share_search()
    assert not _index(_unit(rng.standard_normal((AUTO_MIN_ROWS - 1, 8)))).share_search()  # auto, small: float32


def test_the_bfloat16_copy_is_cached_in_a_file_and_mapped_back(tmp_path):
    rng = np.random.default_rng(4)
    rows = _hard_rows(rng, 1200, 32)
    path = tmp_path / "bits.npy"
    first = _index(rows, search="bfloat16")
    assert first.share_search(path) and path.exists()
    second = _index(rows, search="bfloat16")
    assert second.share_search(path)
    assert isinstance(second._bf16_bits.base, np.memmap) or second._bf16_bits.base is not None
    assert np.array_equal(second._bf16_bits, first._bf16_bits) and not second._bf16_bits.flags.writeable
    other = _index(rows[:1000], search="bfloat16")  # another shape: rewritten, not reused
    assert other.share_search(path) and other._bf16_bits.shape == (1000, 32)
    queries = _unit(rng.standard_normal((6, 32)))
    assert (other.top_k(queries, 5)[0] == _brute(other, queries, 5)[0]).all()
