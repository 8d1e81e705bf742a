"""The text-search tool's index: hybrid BM25 + embedding ranking over corpus chunks, its limits and its cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.corpus import IngestResult
from schemas.errors import InputError
from tasks.corpus.ingest import ingest_jsonl, ingest_text_folders
from tasks.env.index import HashingEmbedder
from tasks.env.text_search import (
    MAX_QUERY_CHARS,
    MAX_TOP_K,
    TextChunk,
    TextIndex,
    TextSearchError,
    cached_text_index,
    chunks_from_ingest,
    render_text_hits,
    tokenize,
)
from warehouse.corpus import write_ingest
from warehouse.db import Warehouse
from warehouse.text_chunks import domain_chunks

CORPUS = Path(__file__).resolve().parent.parent / "flows" / "demo" / "corpus"


class CountingEmbedder(HashingEmbedder):
    """The model-free embedder, counting how many texts it embedded (a cached index embeds none)."""

    def __init__(self) -> None:
        super().__init__(dim=64)
        self.texts = 0

    def embed(self, texts):
        self.texts += len(texts)
        return super().embed(texts)


@pytest.fixture(scope="module")
def demo_chunks() -> list[TextChunk]:
    return chunks_from_ingest(ingest_text_folders(CORPUS), "demo")


@pytest.fixture(scope="module")
def demo_index(demo_chunks) -> TextIndex:
    return TextIndex(demo_chunks, HashingEmbedder(), name="demo").warm()


@pytest.mark.parametrize(("query", "title"), [
    ("Alan Turing worked at", "Alan Turing and the Codebreakers of Bletchley Park"),
    ("double helix discovered by", "The Double Helix"),
    ("Norman Borlaug wheat", "Norman Borlaug and the Green Revolution"),
])  # fmt: skip
def test_the_chunk_naming_the_fact_ranks_first(demo_index, query, title):
    hits = demo_index.search(query, 3)
    assert len(hits) == 3 and hits[0].chunk.title == title
    assert hits[0].lexical_rank == 1
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_fusion_is_reciprocal_rank_fusion(demo_index):
    for h in demo_index.search("Bletchley Park codebreaking", 5):
        expected = sum(1 / (60 + r) for r in (h.lexical_rank, h.dense_rank) if r is not None)
        assert h.score == pytest.approx(expected)


def test_a_paraphrase_with_no_shared_word_is_found_by_meaning_alone(demo_chunks):
    # No word of the query is in the corpus, so only the embedding ranking can find anything.
    index = TextIndex(demo_chunks, HashingEmbedder(), name="demo")
    hits = index.search("Turingg Bletchleyy", 3)
    assert hits and all(h.lexical_rank is None and h.dense_rank is not None for h in hits)
    assert "Bletchley" in hits[0].chunk.title
    lexical_only = TextIndex(demo_chunks, None, name="demo")
    assert lexical_only.search("Turingg Bletchleyy", 3) == []


def test_results_are_deterministic_and_batch_independent(demo_index):
    queries = ["printing press Gutenberg", "Mendel peas", "pizza Naples", "ARPANET packet switching"]
    one_by_one = [demo_index.search(q, 4) for q in queries]
    assert demo_index.search_many(queries, 4) == one_by_one


@pytest.mark.parametrize(("query", "k", "message"), [
    ("", 3, "query is empty"),
    ("   \n ", 3, "query is empty"),
    ("x" * (MAX_QUERY_CHARS + 1), 3, f"the limit is {MAX_QUERY_CHARS}"),
    ("w " * 50_000, 3, f"the limit is {MAX_QUERY_CHARS}"),
    ("Turing", 0, "k must be"),
    ("Turing", MAX_TOP_K + 1, "k must be"),
    (None, 3, "must be text"),
])  # fmt: skip
def test_bad_queries_raise_one_clear_error(demo_index, query, k, message):
    with pytest.raises(TextSearchError, match=message) as info:
        demo_index.search(query, k)
    assert isinstance(info.value, InputError) and "\n" not in str(info.value)


def test_an_empty_or_non_text_collection_is_refused(tmp_path):
    with pytest.raises(TextSearchError, match="holds no text"):
        TextIndex([], HashingEmbedder(), name="empty")
    (tmp_path / "rows.jsonl").write_text('{"context": 12}\n{"context": "   "}\n', encoding="utf-8")
    result = ingest_jsonl(tmp_path / "rows.jsonl", domain="cs")
    with pytest.raises(TextSearchError, match=r"'notes' holds no text \(skipped: .*wrong_type"):
        chunks_from_ingest(result, "notes")
    with pytest.raises(TextSearchError, match="twice"):
        TextIndex([TextChunk("a", "x"), TextChunk("a", "y")], None)


def test_both_halves_are_cached_on_disk_and_in_the_process(demo_chunks, tmp_path):
    emb = CountingEmbedder()
    first = TextIndex(demo_chunks, emb, name="demo", cache_dir=tmp_path).warm()
    assert emb.texts == len(demo_chunks)
    assert len(list(tmp_path.glob("text__demo__*.npy"))) == 1 and len(list(tmp_path.glob("text__demo__*__bm25"))) == 1
    again = TextIndex(demo_chunks, emb, name="demo", cache_dir=tmp_path).warm()
    assert emb.texts == len(demo_chunks)  # loaded, not embedded again
    assert again.search("Gutenberg printing", 3) == first.search("Gutenberg printing", 3)
    # Another text is another index.
    changed = [TextChunk(demo_chunks[0].chunk_id, demo_chunks[0].text + " More."), *demo_chunks[1:]]
    assert TextIndex(changed, emb, name="demo").fingerprint != first.fingerprint
    a = cached_text_index(demo_chunks, emb, name="demo-proc")
    assert cached_text_index(demo_chunks, emb, name="demo-proc") is a


def test_domain_chunks_come_from_the_warehouse_with_titles(tmp_path):
    with Warehouse(tmp_path / "wh.duckdb") as wh:
        write_ingest(wh, ingest_text_folders(CORPUS / "cs"), "run-1")
        chunks = domain_chunks(wh, "cs")
        assert len(chunks) == 5 and all(c.collection == "cs" and c.title for c in chunks)
        assert domain_chunks(wh, "history") == []
        hits = TextIndex(chunks, HashingEmbedder(), name="cs").search("Unix Bell Labs", 1)
        assert hits[0].chunk.title == "Unix, C and Free Software"


def test_observation_lists_passages_with_their_chunk_ids(demo_index):
    hits = demo_index.search("Alan Turing worked at", 2)
    text = render_text_hits("Alan  Turing worked at", hits, passage_chars=120)
    lines = text.splitlines()
    assert lines[0] == 'Passages for "Alan Turing worked at", best first (2):'
    assert lines[1].startswith(f"1. Alan Turing and the Codebreakers of Bletchley Park [{hits[0].chunk.chunk_id}]: ")
    assert lines[1].endswith("...") and len(lines) == 3
    assert render_text_hits("zzz", []).startswith('No passages match "zzz".')


def test_tokenize_drops_stop_words_and_single_letters():
    assert tokenize("The Father of the Computer, a B 1936") == ["father", "computer", "1936"]


def test_an_empty_ingest_result_is_no_collection():
    with pytest.raises(TextSearchError, match="'nothing' holds no text$"):
        chunks_from_ingest(IngestResult(), "nothing")


# -- the hot path: coalesced dense products, float64 ranking, identical results -------------------------------------


_F64: dict = {}  # float64 copies of the test indexes' matrices, by index name


def reference_search(index: TextIndex, query: str, k: int) -> list[tuple[str, int | None, int | None]]:
    """The ranking spelled out without the index's shortcuts: BM25 scores of every chunk, cosine similarity of
    every chunk as float64 sums, the top ``max(candidates, k)`` of each (ties by chunk order, BM25 zeros out),
    fused by RRF; ``(chunk id, lexical rank, dense rank)`` best first."""
    import numpy as np

    depth = max(index.candidates, k)
    lex_scores = index.lexical_scores(query).astype(np.float64)
    matrix = _F64.get(index.name)
    if matrix is None:
        matrix = _F64[index.name] = index._dense().astype(np.float64)
    q = np.asarray(index.embedder.embed([query]), dtype=np.float64)[0]
    q /= np.linalg.norm(q)
    dense_scores = (matrix * q).sum(axis=1)
    rows = np.arange(len(index))
    lex = [r for r in rows[np.lexsort((rows, -lex_scores))][:depth] if lex_scores[r] > 0]
    den = list(rows[np.lexsort((rows, -dense_scores))][:depth])
    lrank = {int(r): i + 1 for i, r in enumerate(lex)}
    drank = {int(r): i + 1 for i, r in enumerate(den)}
    fused = {r: sum(1 / (60 + rk[r]) for rk in (lrank, drank) if r in rk) for r in lrank.keys() | drank.keys()}
    best = sorted(fused, key=lambda r: (-round(fused[r], 12), r))[:k]
    return [(index.chunks[r].chunk_id, lrank.get(r), drank.get(r)) for r in best]


@pytest.fixture(scope="module")
def synthetic_index() -> tuple[TextIndex, list]:
    from testing.text_corpus import synthetic_chunks

    chunks, facts = synthetic_chunks(3000, seed=5)
    return TextIndex(chunks, HashingEmbedder(), name="synthetic", candidates=20).warm(), facts


def test_search_equals_the_spelled_out_ranking(synthetic_index, demo_index):
    index, facts = synthetic_index
    queries = [f.query for f in facts[::60]] + ["river harvest wheat", "Mendel peas", "zzzz qqqq"]
    for q in queries:
        got = [(h.chunk.chunk_id, h.lexical_rank, h.dense_rank) for h in index.search(q, 10)]
        assert got == reference_search(index, q, 10), q
    for q in ("Alan Turing worked at", "pizza Naples", "double helix"):
        got = [(h.chunk.chunk_id, h.lexical_rank, h.dense_rank) for h in demo_index.search(q, 5)]
        assert got == reference_search(demo_index, q, 5)


def test_the_bfloat16_product_ranks_exactly_as_float32(synthetic_index):
    pytest.importorskip("torch")
    index, facts = synthetic_index
    fast = TextIndex(index.chunks, index.embedder, name="bf16", candidates=20, precision="bfloat16")
    fast._matrix = index._dense()  # same embeddings, not computed again
    assert fast.prepare_search() == "bfloat16"
    plain = TextIndex(index.chunks, index.embedder, name="f32", candidates=20, precision="float32")
    plain._matrix = index._dense()
    assert plain.prepare_search() == "float32"
    queries = [f.query for f in facts[3::40]] + ["wheat harvest river", "zzzz qqqq"]
    blocks: list[int] = []
    product = fast._bf16.candidates
    fast._bf16.candidates = lambda block, n: blocks.append(len(block)) or product(block, n)
    assert fast.search_many(queries, 10) == plain.search_many(queries, 10)
    assert sum(blocks) == len(queries) and min(blocks) >= 4  # blocks of 4 or more: the bfloat16 product ran
    for q in queries[:10]:
        assert [(h.chunk.chunk_id, h.lexical_rank, h.dense_rank) for h in fast.search(q, 10)] == reference_search(fast, q, 10)


def test_fewer_candidates_than_k_still_rank_k(synthetic_index):
    index, facts = synthetic_index
    narrow = TextIndex(index.chunks, index.embedder, name="narrow", candidates=2)
    narrow._matrix = index._dense()  # same embeddings, not computed again
    q = facts[7].query
    got = [(h.chunk.chunk_id, h.lexical_rank, h.dense_rank) for h in narrow.search(q, 6)]
    assert got == reference_search(narrow, q, 6) and len(got) == 6


def test_concurrent_searches_share_products_and_give_sequential_results(synthetic_index):
    from concurrent.futures import ThreadPoolExecutor

    index, facts = synthetic_index
    queries = [f.query for f in facts[1:400:3]]
    sequential = [index.search(q, 3) for q in queries]
    before = (index._batcher.products, index._batcher.queries)
    with ThreadPoolExecutor(32) as pool:
        concurrent = list(pool.map(lambda q: index.search(q, 3), queries))
    assert concurrent == sequential
    assert index._batcher.queries - before[1] == len(queries)


def test_the_batcher_coalesces_queued_queries_into_one_product():
    import threading

    import numpy as np

    from tasks.env.text_search import _DenseBatcher

    release = threading.Event()
    blocks: list[int] = []

    def run(block):
        blocks.append(len(block))
        if len(blocks) == 1:
            release.wait(10)
        return [np.array([int(v[0])]) for v in block]

    batcher = _DenseBatcher(run)
    results: dict[int, int] = {}

    def ask(i: int) -> None:
        results[i] = int(batcher.top(np.array([float(i)]))[0])

    first = threading.Thread(target=ask, args=(0,))
    first.start()
    while not blocks:
        threading.Event().wait(0.001)
    rest = [threading.Thread(target=ask, args=(i,)) for i in range(1, 6)]
    for t in rest:
        t.start()
    while len(batcher._queue) < 5:  # all five queued behind the running product
        threading.Event().wait(0.001)
    release.set()
    for t in [first, *rest]:
        t.join(10)
    assert results == {i: i for i in range(6)}
    assert blocks == [1, 5] and (batcher.products, batcher.queries) == (2, 6) and not batcher._busy


def test_a_failed_product_reaches_every_caller_and_the_batcher_goes_on():
    import numpy as np

    from tasks.env.text_search import _DenseBatcher

    calls = []

    def run(block):
        calls.append(len(block))
        if len(calls) == 1:
            raise MemoryError("no room")
        return [np.array([1])] * len(block)

    batcher = _DenseBatcher(run)
    with pytest.raises(MemoryError, match="no room"):
        batcher.top(np.zeros(2))
    assert list(batcher.top(np.zeros(2))) == [1] and not batcher._busy


def test_top_positive_is_top_without_zero_scores():
    import numpy as np

    from tasks.env.text_search import _top, _top_positive

    rng = np.random.default_rng(3)
    for n in (1, 5, 50, 400):
        scores = np.where(rng.random(300) < 0.7, 0.0, rng.integers(1, 6, 300).astype(np.float32))
        old = _top(scores, n)
        assert list(_top_positive(scores, n)) == list(old[scores[old] > 0])
    assert len(_top_positive(np.zeros(10, dtype=np.float32), 3)) == 0


def test_bm25_built_from_token_ids_scores_as_built_from_token_lists(synthetic_index):
    import bm25s
    import numpy as np

    index, facts = synthetic_index
    from_lists = bm25s.BM25()
    from_lists.index([tokenize(f"{c.title}\n{c.text}") for c in index.chunks], show_progress=False)
    for q in [f.query for f in facts[::100]] + ["river wheat harvest", "unknownword"]:
        ids = from_lists.get_tokens_ids(tokenize(q))
        expected = from_lists.get_scores_from_ids(ids) if ids else np.zeros(len(index), dtype=np.float32)
        assert np.array_equal(index.lexical_scores(q), np.asarray(expected, dtype=np.float32)), q
