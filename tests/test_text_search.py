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
