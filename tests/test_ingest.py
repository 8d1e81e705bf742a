"""Corpus ingestion: every source format, every kind of bad input, dedup across runs, one-transaction writes."""

from __future__ import annotations

import itertools
import json
import tracemalloc
from pathlib import Path

import pytest
from pydantic import ValidationError

from schemas.corpus import IngestOptions, IngestResult, make_chunk_id, make_doc_id
from tasks.corpus.ingest import (
    IngestError,
    _iter_lines,
    check_domain,
    ingest_hf_dataset,
    ingest_jsonl,
    ingest_text_folders,
)
from tasks.corpus.text import lightrag_stored_chunks
from warehouse.corpus import write_ingest
from warehouse.db import Warehouse

SMALL = IngestOptions(chunk_token_size=40, chunk_overlap_token_size=5)


def _context(topic: str, words: int = 120) -> str:
    return " ".join(f"{topic}{i % 17} fact{i}." if i % 9 == 0 else f"{topic}-word{i}" for i in range(words))


def _write_jsonl(path: Path, rows: list[object]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _counts(wh: Warehouse) -> tuple[int, int, int]:
    return tuple(wh.scalar(f"SELECT count(*) FROM {t}") for t in ("documents", "chunks", "ingest_skips"))  # type: ignore[return-value]


# -- UltraDomain jsonl -----------------------------------------------------------------------------------------


def test_ultradomain_jsonl_keeps_unique_contexts(tmp_path):
    a, b = _context("graph"), _context("tree")
    rows = [
        {"input": "q1", "context": a, "title": "Graphs"},
        {"input": "q2", "context": a, "title": "Graphs"},
        {"input": "q3", "context": b},
        {"input": "q4", "context": "  " + b + "\n"},  # the same text once cleaned
    ]
    f = _write_jsonl(tmp_path / "cs.jsonl", rows)
    result = ingest_jsonl(f, options=SMALL)
    assert [d.domain for d in result.documents] == ["cs", "cs"]
    assert result.duplicates == 2
    assert result.skipped == []
    first = result.documents[0]
    assert first.doc_id == make_doc_id("cs", a) and first.doc_id.startswith("doc-") and len(first.doc_id) == 36
    assert (first.source, first.source_line, first.title, first.text) == (str(f), 1, "Graphs", a)
    assert result.documents[1].source_line == 3 and result.documents[1].title is None
    expected = lightrag_stored_chunks(a, 40, 5)
    mine = [c for c in result.chunks if c.doc_id == first.doc_id]
    assert [(c.chunk_index, c.text, c.n_tokens) for c in mine] == [(e.index, e.text, e.tokens) for e in expected]
    assert mine[0].chunk_id == make_chunk_id(first.doc_id, 0) == f"{first.doc_id}-chunk-000"
    assert len(mine) > 1


def test_jsonl_folder_domain_from_stem_or_given(tmp_path):
    _write_jsonl(tmp_path / "cs.jsonl", [{"context": _context("x")}])
    _write_jsonl(tmp_path / "music.jsonl", [{"context": _context("x")}, {"context": _context("y")}])
    result = ingest_jsonl(tmp_path, options=SMALL)
    assert sorted(d.domain for d in result.documents) == ["cs", "music", "music"]
    assert result.duplicates == 0  # the same text in two domains is two documents: one per graph
    forced = ingest_jsonl([tmp_path / "cs.jsonl", tmp_path / "music.jsonl"], domain="mix", options=SMALL)
    assert {d.domain for d in forced.documents} == {"mix"}
    assert forced.duplicates == 1


def test_jsonl_crlf_bom_and_blank_lines(tmp_path):
    f = tmp_path / "art.jsonl"
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps({"context": "Monet painted water lilies."}).encode() + b"\r\n\r\n")
    result = ingest_jsonl(f)
    assert [d.text for d in result.documents] == ["Monet painted water lilies."]
    assert result.skipped == []


def test_unknown_domain_is_an_error_before_reading(tmp_path):
    good = _write_jsonl(tmp_path / "cs.jsonl", [{"context": "x"}])
    bad = _write_jsonl(tmp_path / "cooking2.jsonl", [{"context": "y"}])
    calls = []
    with pytest.raises(IngestError, match=r"cooking2\.jsonl: unknown domain 'cooking2'.*allow_new_domains"):
        ingest_jsonl([good, bad], progress=lambda d, t: calls.append(d))
    assert calls == []  # nothing was read
    accepted = ingest_jsonl(bad, options=IngestOptions(allow_new_domains=True))
    assert [d.domain for d in accepted.documents] == ["cooking2"]
    with pytest.raises(IngestError, match="not a valid domain name"):
        check_domain("Bad-Name", where="x", allow_new_domains=True)
    with pytest.raises(IngestError, match="not a valid domain name"):
        check_domain("a" * 41, where="x", allow_new_domains=True)
    assert check_domain("a" * 40, where="x", allow_new_domains=True) == "a" * 40
    with pytest.raises(IngestError, match="no such file"):
        ingest_jsonl(tmp_path / "absent.jsonl")


def test_every_bad_jsonl_row_is_skipped_with_a_reason(tmp_path):
    f = tmp_path / "history.jsonl"
    f.write_bytes(
        b"\n".join(
            [
                json.dumps({"context": "Rome was founded, legend says, in 753 BC."}).encode(),  # 1 good
                b'{"context": "unterminated',  # 2 bad_json
                b"[1, 2, 3]",  # 3 bad_json (not an object)
                json.dumps({"question": "where?"}).encode(),  # 4 missing_field
                json.dumps({"context": "   "}).encode(),  # 5 empty_text
                json.dumps({"context": None}).encode(),  # 6 empty_text
                json.dumps({"context": 42}).encode(),  # 7 wrong_type
                b'{"context": "caf\xe9"}',  # 8 not_utf8 (Latin-1 byte)
                json.dumps({"context": "x" * 30_000}).encode(),  # 9 line_too_long
                json.dumps({"context": "Carthage fell in 146 BC."}).encode(),  # 10 good
                b"[" * 5000 + b"]" * 5000,  # 11 bad_json (nested too deeply for the parser)
            ]
        )
    )
    result = ingest_jsonl(f, options=IngestOptions(max_line_bytes=20_000))
    assert [d.source_line for d in result.documents] == [1, 10]
    reasons = [(s.line, s.reason_code) for s in result.skipped]
    assert reasons == [
        (2, "bad_json"),
        (3, "bad_json"),
        (4, "missing_field"),
        (5, "empty_text"),
        (6, "empty_text"),
        (7, "wrong_type"),
        (8, "not_utf8"),
        (9, "line_too_long"),
        (11, "bad_json"),
    ]
    for s in result.skipped:
        assert s.source == str(f) and s.message.startswith(f"{f}:{s.line}: ")
    line8 = f.read_bytes().split(b"\n")[7]
    offset = sum(len(x) + 1 for x in f.read_bytes().split(b"\n")[:7]) + line8.index(b"\xe9")
    assert f"byte offset {offset}" in result.skipped[6].message
    assert "30,015 bytes, over the 20,000-byte limit" in result.skipped[7].message
    assert "no 'context' field (fields: question)" in result.skipped[2].message


def test_bad_files_are_skipped_whole(tmp_path):
    (tmp_path / "cs.jsonl").write_bytes(b"")
    (tmp_path / "art.jsonl").write_bytes(b"\n  \n\t\n")
    (tmp_path / "fin.jsonl").write_bytes(b'{"context": "x"}\n\x00\x01\x02binary')
    result = ingest_jsonl(tmp_path)
    got = {(Path(s.source).name, s.line, s.reason_code) for s in result.skipped}
    assert got == {("cs.jsonl", None, "empty"), ("art.jsonl", None, "empty"), ("fin.jsonl", None, "binary")}
    assert result.documents == []
    assert "NUL byte at byte offset 17" in next(s.message for s in result.skipped if s.reason_code == "binary")


def _write_huge_line_file(path: Path, huge: int) -> None:
    """A jsonl file whose second line is ``huge`` bytes, written sparsely (a hole reads back as NUL bytes).

    The first line is longer than the 8 KiB binary sniff, so the hole's NUL bytes are never sniffed.
    """
    first = json.dumps({"context": "Some text about physics. " * 400}).encode() + b"\n"
    last = json.dumps({"context": "Newton wrote the Principia."}).encode() + b"\n"
    with path.open("wb") as f:
        f.write(first)
        f.write(b'{"context": "')
        f.seek(huge - len(b'{"context": "') - 2, 1)  # the hole: no disk, no time
        f.write(b'"}\n')
        f.write(last)


def test_a_200mb_line_is_skipped_in_bounded_memory(tmp_path, monkeypatch):
    import tasks.corpus.ingest as ingest_module

    f = tmp_path / "physics.jsonl"
    huge = 200 * 1024 * 1024
    _write_huge_line_file(f, huge)
    seen: list[tuple[int, int]] = []
    reads: list[int] = []

    class Counted:
        """The file as the line reader sees it, counting its reads."""

        def __init__(self, stream):
            self.stream = stream

        def read(self, size: int = -1) -> bytes:
            block = self.stream.read(size)
            reads.append(len(block))
            return block

    monkeypatch.setattr(ingest_module, "_iter_lines", lambda stream, *a, **k: _iter_lines(Counted(stream), *a, **k))
    tracemalloc.start()
    try:
        result = ingest_jsonl(f, progress=lambda d, t: seen.append((d, t)))  # default 10 MB limit
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [d.source_line for d in result.documents] == [1, 3]
    [skip] = result.skipped
    assert (skip.line, skip.reason_code) == (2, "line_too_long")
    assert f"the line is {huge:,} bytes" in skip.message  # its length without the newline
    # The 10 MB limit plus one 1 MiB read block plus chunking the two small documents; far below 200 MB.
    assert peak < 40 * 1024 * 1024, f"peak traced memory {peak / 2**20:.1f} MiB"
    # One pass in 1 MiB blocks: every byte read once, never byte by byte nor again.
    assert sum(reads) == f.stat().st_size and len(reads) <= f.stat().st_size // 2**20 + 2
    assert seen[-1] == (f.stat().st_size, f.stat().st_size)
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen))
    assert len(seen) <= 110  # throttled to about one call per 1%


def test_line_reader_edges():
    import io

    def lines(data: bytes, limit: int = 5, block: int = 3):
        return [(x.number, x.offset, x.length, x.data) for x in _iter_lines(io.BytesIO(data), limit, block)]

    assert lines(b"") == []
    assert lines(b"ab\ncd") == [(1, 0, 2, b"ab"), (2, 3, 2, b"cd")]
    assert lines(b"ab\n\n") == [(1, 0, 2, b"ab"), (2, 3, 0, b"")]
    assert lines(b"abcdefgh\nxy\n") == [(1, 0, 8, None), (2, 9, 2, b"xy")]
    assert lines(b"abcde\n") == [(1, 0, 5, b"abcde")]  # exactly at the limit is accepted


# -- text folders ------------------------------------------------------------------------------------------------


def test_domain_folder_and_root_folder(tmp_path):
    cooking = tmp_path / "corpus" / "cooking"
    (cooking / "sub").mkdir(parents=True)
    (cooking / "bread.md").write_text("# Sourdough Bread\n\nMix flour, water and starter.\n", encoding="utf-8")
    (cooking / "sub" / "soup.txt").write_text("Simmer the onions slowly.", encoding="utf-8")
    (cooking / "notes.pdf").write_bytes(b"%PDF")  # not a text extension: ignored
    (cooking / ".hidden.txt").write_text("hidden", encoding="utf-8")
    music = tmp_path / "corpus" / "music"
    music.mkdir()
    (music / "bach.txt").write_text("Bach wrote the Goldberg Variations.", encoding="utf-8")

    one = ingest_text_folders(cooking)
    assert sorted((d.domain, d.title) for d in one.documents) == [("cooking", "Sourdough Bread"), ("cooking", "soup")]
    root = ingest_text_folders(tmp_path / "corpus")
    assert sorted(d.domain for d in root.documents) == ["cooking", "cooking", "music"]
    assert all(d.source_line is None for d in root.documents)
    bread = next(d for d in root.documents if d.title == "Sourdough Bread")
    assert bread.text == "# Sourdough Bread\n\nMix flour, water and starter."  # stripped by LightRAG's cleaner
    assert bread.source == str(cooking / "bread.md")


def test_folder_mapping_with_globs(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one.txt").write_text("Alpha text about legal contracts.", encoding="utf-8")
    (tmp_path / "a" / "two.md").write_text("Beta text about torts.", encoding="utf-8")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "three.txt").write_text("Gamma text about my_new_domain.", encoding="utf-8")
    result = ingest_text_folders(
        {str(tmp_path / "a" / "*.txt"): "legal", tmp_path / "b": "my_new_domain"},
        options=IngestOptions(allow_new_domains=True),
    )
    assert sorted((d.domain, Path(d.source).name) for d in result.documents) == [
        ("legal", "one.txt"),
        ("my_new_domain", "three.txt"),
    ]
    with pytest.raises(IngestError, match="unknown domain 'my_new_domain'"):
        ingest_text_folders({tmp_path / "b": "my_new_domain"})
    with pytest.raises(IngestError, match="matches no file or folder"):
        ingest_text_folders({str(tmp_path / "nothing*" / "*.txt"): "legal"})


def test_folder_name_that_is_not_a_domain(tmp_path):
    folder = tmp_path / "Computer Science"
    folder.mkdir()
    (folder / "x.txt").write_text("text", encoding="utf-8")
    with pytest.raises(IngestError, match=r"Computer Science.*not a valid domain name"):
        ingest_text_folders(folder)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(IngestError, match=r"no \.txt/\.md files"):
        ingest_text_folders(empty)


def test_bad_text_files(tmp_path):
    folder = tmp_path / "biology"
    folder.mkdir()
    (folder / "good.txt").write_text("Cells divide by mitosis.", encoding="utf-8")
    (folder / "empty.txt").write_bytes(b"")
    (folder / "blank.md").write_bytes(b"\n \n")
    (folder / "image.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (folder / "latin1.txt").write_bytes("Ligne un\nZo\xe9 et la cellule".encode("latin-1"))
    (folder / "long.txt").write_bytes(b"short line\n" + b"y" * 3000 + b"\n")
    (folder / "dup.txt").write_text("Cells divide by mitosis.\n", encoding="utf-8")
    result = ingest_text_folders(folder, options=IngestOptions(max_line_bytes=2048))
    assert [Path(d.source).name for d in result.documents] == ["dup.txt"]  # files are read in name order
    assert result.duplicates == 1
    got = {Path(s.source).name: (s.line, s.reason_code) for s in result.skipped}
    assert got == {
        "empty.txt": (None, "empty"),
        "blank.md": (None, "empty"),
        "image.txt": (None, "binary"),
        "latin1.txt": (2, "not_utf8"),
        "long.txt": (2, "line_too_long"),
    }
    latin = next(s for s in result.skipped if s.reason_code == "not_utf8")
    assert "byte offset 11 (byte 0xe9)" in latin.message and latin.message.startswith(f"{folder / 'latin1.txt'}:2:")


def test_folder_progress_counts_files(tmp_path):
    folder = tmp_path / "art"
    folder.mkdir()
    for i in range(5):
        (folder / f"{i}.txt").write_text(f"Painting number {i} is blue.", encoding="utf-8")
    seen: list[tuple[int, int]] = []
    ingest_text_folders(folder, progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (5, 5) and [d for d, _ in seen] == sorted(d for d, _ in seen)


# -- Hugging Face datasets -----------------------------------------------------------------------------------------


def test_hf_parquet_with_domain_column(tmp_path):
    import polars as pl

    f = tmp_path / "data.parquet"
    pl.DataFrame(
        {
            "context": ["Photosynthesis makes sugar.", "Photosynthesis makes sugar.", None, "Stocks rose.", "  "],
            "label": ["biology", "biology", "biology", "fin", "fin"],
            "title": ["Plants", "Plants", None, "Markets", None],
        }
    ).write_parquet(f)
    seen: list[tuple[int, int]] = []
    result = ingest_hf_dataset(
        "parquet",
        data_files=str(f),
        domain_column="label",
        title_column="title",
        cache_dir=str(tmp_path / "hf-cache"),
        progress=lambda d, t: seen.append((d, t)),
    )
    assert [(d.domain, d.title, d.source_line) for d in result.documents] == [
        ("biology", "Plants", 0),
        ("fin", "Markets", 3),
    ]
    assert result.duplicates == 1
    assert [(s.line, s.reason_code) for s in result.skipped] == [(2, "empty_text"), (4, "empty_text")]
    assert result.documents[0].source.startswith("hf:parquet:train")
    assert seen[-1] == (5, 5)


def test_hf_json_with_fixed_domain_and_errors(tmp_path):
    f = _write_jsonl(tmp_path / "rows.jsonl", [{"text": "Kant wrote three critiques."}, {"text": "Hume doubted."}])
    result = ingest_hf_dataset(
        "json", data_files=str(f), text_column="text", domain="philosophy", cache_dir=str(tmp_path / "c")
    )
    assert [d.text for d in result.documents] == ["Kant wrote three critiques.", "Hume doubted."]
    with pytest.raises(IngestError, match=r"no column\(s\) \['context'\]; its columns are \['text'\]"):
        ingest_hf_dataset("json", data_files=str(f), domain="philosophy", cache_dir=str(tmp_path / "c"))
    with pytest.raises(IngestError, match="exactly one of domain"):
        ingest_hf_dataset("json", data_files=str(f), text_column="text", cache_dir=str(tmp_path / "c"))
    with pytest.raises(IngestError, match="unknown domain 'phil'"):
        ingest_hf_dataset("json", data_files=str(f), text_column="text", domain="phil")
    with pytest.raises(IngestError, match=r"name one split with split= \(it has \['train'\]\)"):
        ingest_hf_dataset("json", data_files=str(f), split=None, domain="philosophy", cache_dir=str(tmp_path / "c"))  # type: ignore[arg-type]
    with pytest.raises(IngestError, match="cannot load dataset"):
        ingest_hf_dataset(
            "json", data_files=str(tmp_path / "absent.jsonl"), domain="philosophy", cache_dir=str(tmp_path / "c")
        )


def test_hf_unknown_domain_in_a_row(tmp_path):
    f = _write_jsonl(tmp_path / "rows.jsonl", [{"context": "a", "d": "cs"}, {"context": "b", "d": "Sports"}])
    with pytest.raises(IngestError, match=r"row 1: 'Sports' is not a valid domain name"):
        ingest_hf_dataset("json", data_files=str(f), domain_column="d", cache_dir=str(tmp_path / "c"))


# -- options -----------------------------------------------------------------------------------------------------


def test_options_are_checked():
    with pytest.raises(ValidationError, match="must be smaller than chunk_token_size"):
        IngestOptions(chunk_token_size=100, chunk_overlap_token_size=100)
    with pytest.raises(ValidationError):
        IngestOptions(max_line_bytes=0)


# -- warehouse ---------------------------------------------------------------------------------------------------


def test_migration_creates_corpus_tables():
    with Warehouse() as wh:
        assert wh.schema_version() >= 4
        assert {"documents", "chunks", "ingest_skips"} <= set(wh.tables())
        assert wh.columns("chunks") == ["chunk_id", "doc_id", "domain", "chunk_index", "text", "n_tokens"]
        assert wh.columns("ingest_skips")[:5] == ["run_id", "source", "line", "reason_code", "message"]


def test_write_and_dedup_across_runs(tmp_path):
    f = _write_jsonl(tmp_path / "cs.jsonl", [{"context": _context("a")}, {"context": _context("b")}, "not json"])
    first = ingest_jsonl(f, options=SMALL)
    with Warehouse(tmp_path / "wh.duckdb") as wh:
        s1 = write_ingest(wh, first, "run-1")
        assert (s1.documents_written, s1.already_present, s1.skips_written) == (2, 0, 1)
        assert s1.chunks_written == len(first.chunks) > 2
        assert _counts(wh) == (2, len(first.chunks), 1)
        assert {r["ingested_run_id"] for r in wh.query("SELECT ingested_run_id FROM documents")} == {"run-1"}

        _write_jsonl(f, [{"context": _context("b")}, {"context": _context("c")}])
        second = ingest_jsonl(f, options=SMALL)
        s2 = write_ingest(wh, second, "run-2")
        assert (s2.documents_written, s2.already_present) == (1, 1)
        assert _counts(wh)[0] == 3
        b_id = make_doc_id("cs", _context("b"))
        assert wh.scalar("SELECT ingested_run_id FROM documents WHERE doc_id = ?", [b_id]) == "run-1"
        assert wh.scalar("SELECT count(*) FROM chunks WHERE doc_id = ?", [b_id]) == sum(
            c.doc_id == b_id for c in first.chunks
        )
        rows = wh.query("SELECT run_id, line, reason_code FROM ingest_skips")
        assert rows == [{"run_id": "run-1", "line": 3, "reason_code": "bad_json"}]

        s3 = write_ingest(wh, second, "run-3")  # the same input again changes nothing
        assert (s3.documents_written, s3.chunks_written, s3.already_present) == (0, 0, 2)


def test_write_is_one_transaction(tmp_path, monkeypatch):
    f = _write_jsonl(tmp_path / "cs.jsonl", [{"context": _context("a")}, "{bad"])
    result = ingest_jsonl(f, options=SMALL)
    with Warehouse(tmp_path / "wh.duckdb") as wh:
        real = wh.write_batch

        def failing(table, records, **kwargs):
            if table == "ingest_skips":  # documents and chunks are already inserted by now
                raise RuntimeError("disk full (simulated)")
            return real(table, records, **kwargs)

        monkeypatch.setattr(wh, "write_batch", failing)
        with pytest.raises(RuntimeError, match="simulated"):
            write_ingest(wh, result, "run-x")
        assert _counts(wh) == (0, 0, 0)
        monkeypatch.setattr(wh, "write_batch", real)
        write_ingest(wh, result, "run-y")
        assert _counts(wh) == (1, len(result.chunks), 1)


def test_write_rejects_inconsistent_results(tmp_path):
    f = _write_jsonl(tmp_path / "cs.jsonl", [{"context": _context("a")}])
    result = ingest_jsonl(f, options=SMALL)
    doubled = IngestResult(documents=result.documents * 2, chunks=result.chunks)
    orphan = IngestResult(documents=[], chunks=result.chunks)
    with Warehouse() as wh:
        with pytest.raises(IngestError, match="lists a document twice"):
            write_ingest(wh, doubled, "r")
        with pytest.raises(IngestError, match="belong to no document"):
            write_ingest(wh, orphan, "r")
        assert _counts(wh) == (0, 0, 0)
        merged = result.merge(result)
        assert merged.duplicates == 1 and len(merged.documents) == 1 and len(merged.chunks) == len(result.chunks)
        assert write_ingest(wh, merged, "r").documents_written == 1


# -- end to end with LightRAG ------------------------------------------------------------------------------------


def test_chunk_ids_line_up_with_lightrag_ainsert(tmp_path):
    """Insert ingested documents with LightRAG's real pipeline; its chunk keys are exactly our chunk ids."""
    import asyncio

    import numpy as np
    from lightrag import LightRAG
    from lightrag.utils import EmbeddingFunc

    from tasks.corpus.text import make_lightrag_tokenizer

    folder = tmp_path / "cooking"
    (folder / "sub").mkdir(parents=True)
    # Same basename in two folders, and two documents from one jsonl file: LightRAG would keep one of each
    # pair if given the plain source as file_path.
    (folder / "bread.md").write_text("# Bread\n\n" + _context("flour", 200), encoding="utf-8")
    (folder / "sub" / "bread.md").write_text(_context("rye", 150) + " &amp; more", encoding="utf-8")
    jsonl = _write_jsonl(tmp_path / "cooking.jsonl", [{"context": _context("soup")}, {"context": _context("stew")}])
    opts = IngestOptions(chunk_token_size=60, chunk_overlap_token_size=10, embedding_token_limit=50)
    result = ingest_text_folders(folder, options=opts).merge(ingest_jsonl(jsonl, options=opts))
    assert len(result.documents) == 4

    async def llm(prompt, system_prompt=None, history_messages=None, **kwargs):
        return "<|COMPLETE|>"

    async def embed(texts, **kwargs):
        return np.ones((len(texts), 8), dtype=np.float32)

    async def insert() -> dict:
        rag = LightRAG(
            working_dir=str(tmp_path / "rag"),
            workspace=f"w{tmp_path.name}",
            llm_model_func=llm,
            embedding_func=EmbeddingFunc(embedding_dim=8, func=embed, max_token_size=opts.embedding_token_limit),
            embedding_chunk_overlap_token_size=opts.embedding_overlap_token_size,
            tokenizer=make_lightrag_tokenizer(),
            chunk_token_size=opts.chunk_token_size,
            chunk_overlap_token_size=opts.chunk_overlap_token_size,
        )
        await rag.initialize_storages()
        try:
            await rag.ainsert(
                [d.text for d in result.documents],
                ids=[d.doc_id for d in result.documents],
                file_paths=[d.lightrag_file_path() for d in result.documents],
            )
        finally:
            await rag.finalize_storages()
        (store,) = (tmp_path / "rag").rglob("kv_store_text_chunks.json")
        return json.loads(store.read_text())

    stored = asyncio.run(insert())
    assert {k: (v["full_doc_id"], v["content"], v["tokens"]) for k, v in stored.items()} == {
        c.chunk_id: (c.doc_id, c.text, c.n_tokens) for c in result.chunks
    }
