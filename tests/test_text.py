"""The offline tokenizer and the chunker: exact round trips, thread safety, and equivalence with LightRAG."""

from __future__ import annotations

import asyncio
import copy
import json
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lightrag.chunker import chunking_by_token_size

from tasks.corpus.text import (
    MAX_PIECE_CHARS,
    Chunk,
    RegexTokenizer,
    chunk_text,
    count_tokens,
    lightrag_stored_chunks,
    make_lightrag_tokenizer,
    split_pieces,
)

# Text that exercises every branch of the piece pattern: long words, CJK, punctuation runs, odd whitespace.
_ALPHABET = st.sampled_from(
    [*"abcdefghij XYZ0123456789\n\t\r.,;!?-'\"()[]{}", "é", "ß", "中", "文", "か", "한", "\u00a0", "\u2003", "😀"]
)
texty = st.text(alphabet=_ALPHABET, max_size=400)


def _sample_text(n_words: int = 900) -> str:
    words = ["alpha", "beta", "internationalization", "gamma,", "delta.", "\n\n", "  ", "中文字", "x" * 30]
    return " ".join(words[(i * 7 + i // 3) % len(words)] + str(i % 13) for i in range(n_words))


# -- tokenizer ---------------------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_roundtrip_any_text(text):
    tok = RegexTokenizer()
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert len(ids) == count_tokens(text)


@settings(max_examples=200, deadline=None)
@given(texty)
def test_roundtrip_texty_and_pieces_are_bounded(text):
    tok = make_lightrag_tokenizer()
    assert tok.decode(tok.encode(text)) == text
    pieces = split_pieces(text)
    assert "".join(pieces) == text
    assert all(0 < len(p) <= MAX_PIECE_CHARS for p in pieces)


def test_lone_surrogates_round_trip():
    tok = RegexTokenizer()
    text = "a\ud800b \udfff"
    assert tok.decode(tok.encode(text)) == text


def test_pieces_approximate_bpe():
    assert split_pieces("Hello, world!") == ["Hello", ",", " ", "world", "!"]
    assert split_pieces("internationalization") == ["internat", "ionaliza", "tion"]
    assert split_pieces("中文ok") == ["中", "文", "ok"]
    assert count_tokens("") == 0
    # A realistic English sentence: the count is within the usual range of a BPE count (~1.3 tokens/word).
    sentence = "The quick brown fox jumps over the lazy dog near the riverbank at dawn."
    assert 14 <= count_tokens(sentence) <= 30


def test_ids_are_stable_and_unknown_ids_are_a_clear_error():
    tok = RegexTokenizer()
    assert tok.encode("a b a") == tok.encode("a b a")
    assert tok.encode("a b a")[0] == tok.encode("a")[0]
    with pytest.raises(ValueError, match="not produced by this tokenizer"):
        tok.decode([10_000])


def test_count_does_not_grow_vocabulary():
    tok = RegexTokenizer()
    tok.count("many new words here")
    assert len(tok) == 0


def test_deepcopy_shares_the_tokenizer():
    tok = make_lightrag_tokenizer()
    clone = copy.deepcopy(tok)
    assert clone.tokenizer is tok.tokenizer


def test_concurrent_encode_is_consistent():
    tok = RegexTokenizer()
    texts = [" ".join(f"w{t}_{i}" for i in range(2000)) for t in range(4)] * 2
    results: dict[int, list[int]] = {}

    def work(k: int) -> None:
        results[k] = tok.encode(texts[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, ids in results.items():
        assert tok.decode(ids) == texts[k]
    assert results[0] == results[4]  # same text, same ids, whichever thread added the pieces first
    assert len(set(tok._ids.values())) == len(tok)  # no piece was given two ids


# -- chunking -------------------------------------------------------------------------------------------------------


def _lightrag_chunks(text: str, size: int, overlap: int) -> list[Chunk]:
    out = chunking_by_token_size(make_lightrag_tokenizer(), text, None, False, overlap, size)
    return [Chunk(d["content"], d["tokens"], d["chunk_order_index"]) for d in out]


@pytest.mark.parametrize(("size", "overlap"), [(1200, 100), (50, 10), (7, 0), (13, 12), (1, 0)])
def test_chunk_text_matches_lightrag(size, overlap):
    text = "  " + _sample_text() + "\n\n   \n"
    assert chunk_text(text, size, overlap) == _lightrag_chunks(text, size, overlap)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texty, st.integers(min_value=1, max_value=40), st.integers(min_value=0, max_value=39))
def test_chunk_text_matches_lightrag_property(text, size, overlap):
    overlap = overlap % size
    assert chunk_text(text, size, overlap) == _lightrag_chunks(text, size, overlap)


def test_chunker_quirks_are_reproduced():
    # A window holding only whitespace becomes an empty chunk whose token count is still the window's.
    text = "word" + " " * 40 + "end"
    chunks = chunk_text(text, 3, 0)
    assert chunks == _lightrag_chunks(text, 3, 0)
    assert any(c.text == "" and c.tokens > 0 for c in chunks)
    # The last window can lie entirely inside the previous one (size 10, step 8, 10 tokens: [0,10), [8,10)).
    text = " ".join(["w"] * 5) + "!"  # 10 pieces
    assert count_tokens(text) == 10
    chunks = chunk_text(text, 10, 2)
    assert [c.tokens for c in chunks] == [10, 2]
    assert chunks[1].text in chunks[0].text
    assert chunk_text("", 10, 2) == []


def test_chunk_sizes_are_checked():
    with pytest.raises(ValueError, match="must be smaller than chunk_token_size"):
        chunk_text("abc", 10, 10)
    with pytest.raises(ValueError, match="0 or more"):
        chunk_text("abc", 10, -1)
    with pytest.raises(ValueError, match="at least 1"):
        chunk_text("abc", 0, 0)


# -- what LightRAG's pipeline actually stores ----------------------------------------------------------------------


def _insert_with_lightrag(tmp_path, text: str, doc_id: str, size: int, overlap: int, max_token_size: int | None):
    """Run LightRAG's real document pipeline (fake LLM, fake embeddings) and return its stored chunks."""
    from lightrag import LightRAG
    from lightrag.utils import EmbeddingFunc

    async def llm(prompt, system_prompt=None, history_messages=None, **kwargs):
        return "<|COMPLETE|>"  # no entities: only chunking and storage matter here

    async def embed(texts, **kwargs):
        return np.ones((len(texts), 8), dtype=np.float32)

    async def run() -> dict:
        rag = LightRAG(
            working_dir=str(tmp_path),
            llm_model_func=llm,
            embedding_func=EmbeddingFunc(embedding_dim=8, func=embed, max_token_size=max_token_size),
            tokenizer=make_lightrag_tokenizer(),
            chunk_token_size=size,
            chunk_overlap_token_size=overlap,
            # LightRAG keeps per-process shared state by workspace: a fresh one per call keeps runs apart.
            workspace=tmp_path.name,
        )
        await rag.initialize_storages()
        try:
            await rag.ainsert([text], ids=[doc_id], file_paths=["doc.txt"])
        finally:
            await rag.finalize_storages()
        (store,) = tmp_path.rglob("kv_store_text_chunks.json")
        return json.loads(store.read_text())

    return asyncio.run(run())


@pytest.mark.parametrize("max_token_size", [None, 8192, 20])
def test_stored_chunks_match_lightrag_pipeline(tmp_path, max_token_size):
    from lightrag.utils import sanitize_text_for_encoding

    from schemas.corpus import make_chunk_id

    raw = "  Intro &amp; more. " + _sample_text(300) + "word" + " " * 800 + "tail\n"
    text = sanitize_text_for_encoding(raw)  # what LightRAG chunks; ingest stores this text
    stored = _insert_with_lightrag(tmp_path, raw, "doc-test", 40, 5, max_token_size)
    ours = lightrag_stored_chunks(text, 40, 5, embedding_token_limit=max_token_size, embedding_overlap=100)
    theirs = {k: (v["content"], v["tokens"], v["chunk_order_index"]) for k, v in stored.items()}
    assert {make_chunk_id("doc-test", c.index): (c.text, c.tokens, c.index) for c in ours} == theirs
    if max_token_size is None:  # a whitespace-only window was dropped and its number left unused
        assert [c.index for c in ours] != list(range(len(ours)))
    else:  # dropped, then renumbered contiguously
        assert [c.index for c in ours] == list(range(len(ours)))
    if max_token_size == 20:  # the embedding limit forced extra splits, renumbered contiguously
        assert len(ours) > len([c for c in chunk_text(text, 40, 5) if c.text])
