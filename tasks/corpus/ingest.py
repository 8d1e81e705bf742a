"""Corpus ingestion: UltraDomain-style jsonl, folders of text/markdown files, Hugging Face datasets.

Contract of every ``ingest_*`` function:
- It returns an ``IngestResult`` and never touches the warehouse; ``write_ingest`` writes one result in one
  transaction (the flow process is the single writer).
- A configuration problem (a missing path, an unknown or malformed domain name, a dataset without the text
  column) raises ``IngestError`` before any input is read, or at the latest before anything is written.
- A bad input (empty or binary file, invalid UTF-8, an over-long line, a row that is not JSON or lacks its
  text...) becomes a ``SkippedInput`` naming the file and line with a reason code; the ingest goes on.
- Texts are cleaned with LightRAG's own ``sanitize_text_for_encoding`` (strip, HTML unescape, drop control
  characters and lone surrogates): that is the text LightRAG chunks when the graph build inserts the document,
  so the stored document, its hash and its chunks are exactly what LightRAG sees.
- Identical cleaned texts within one domain are kept once and counted in ``IngestResult.duplicates``.
- Lines are read in bounded pieces: memory stays near ``max_line_bytes`` whatever the length of a line.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from lightrag.utils import sanitize_text_for_encoding

from schemas.corpus import (
    Chunk,
    Document,
    IngestOptions,
    IngestResult,
    SkippedInput,
    SkipReason,
    content_hash,
    check_domain as _check_domain,
    make_chunk_id,
    make_doc_id,
)
from schemas.errors import InputError
from tasks.corpus.text import count_tokens, lightrag_stored_chunks

#: ``progress(done, total)``: units are bytes for jsonl, files for folders, rows for datasets; ``total`` is 0
#: when unknown (a streaming dataset). The last call always has ``done == total`` when total is known.
Progress = Callable[[int, int], None]

TEXT_EXTENSIONS: tuple[str, ...] = (".txt", ".md")
BINARY_SNIFF_BYTES = 8 * 1024
_READ_BLOCK = 1 << 20  # bytes per read; memory per line is bounded by max_line_bytes plus one block
_BOM = b"\xef\xbb\xbf"


class IngestError(InputError):
    """A problem with what ingest was asked to do, worded for a person; raised before anything is written."""


# -- domains ---------------------------------------------------------------------------------------------


def check_domain(name: str, *, where: str, allow_new_domains: bool = False) -> str:
    """Return ``name`` if it is a usable domain, else raise IngestError naming ``where`` it came from.

    The rule is ``schemas.corpus.check_domain``'s, the one ``graph import`` applies too."""
    return _check_domain(name, where=where, allow_new_domains=allow_new_domains, error=IngestError,
                         fix="rename the file or folder, or give the domain explicitly")


# -- collecting documents ------------------------------------------------------------------------------------


class _Collector:
    """Turns accepted texts into documents and chunks, deduplicating per domain, and keeps the skips."""

    def __init__(self, options: IngestOptions):
        self.options = options
        self.documents: list[Document] = []
        self.chunks: list[Chunk] = []
        self.skipped: list[SkippedInput] = []
        self.duplicates = 0
        self._seen: set[str] = set()
        # UltraDomain repeats each context on every question row about it: recognizing a repeat by a hash of
        # the raw text skips cleaning it again, which costs more than the hash.
        self._seen_raw: set[tuple[str, bytes]] = set()

    def skip(self, source: str, line: int | None, reason: SkipReason, message: str) -> None:
        where = f"{source}:{line}" if line is not None else source
        self.skipped.append(SkippedInput(source=source, line=line, reason_code=reason, message=f"{where}: {message}"))

    def add(self, *, domain: str, source: str, line: int | None, title: str | None, raw_text: str) -> None:
        raw_key = (domain, hashlib.blake2b(raw_text.encode("utf-8", "surrogatepass"), digest_size=16).digest())
        if raw_key in self._seen_raw:
            self.duplicates += 1
            return
        text = sanitize_text_for_encoding(raw_text)
        if not text:
            what = "the text is empty" if not raw_text.strip() else "the text is empty once cleaned"
            self.skip(source, line, "empty_text", what)
            return
        self._seen_raw.add(raw_key)
        doc_id = make_doc_id(domain, text)
        if doc_id in self._seen:  # a different raw text that cleans to one we have
            self.duplicates += 1
            return
        self._seen.add(doc_id)
        opts = self.options
        pieces = lightrag_stored_chunks(
            text,
            opts.chunk_token_size,
            opts.chunk_overlap_token_size,
            embedding_token_limit=opts.embedding_token_limit,
            embedding_overlap=opts.embedding_overlap_token_size,
        )
        self.documents.append(
            Document(
                doc_id=doc_id,
                domain=domain,
                source=source,
                source_line=line,
                title=title,
                text=text,
                content_hash=content_hash(text),
                n_tokens=count_tokens(text),
            )
        )
        self.chunks.extend(
            Chunk(
                chunk_id=make_chunk_id(doc_id, p.index),
                doc_id=doc_id,
                domain=domain,
                chunk_index=p.index,
                text=p.text,
                n_tokens=p.tokens,
            )
            for p in pieces
        )

    def result(self) -> IngestResult:
        return IngestResult(
            documents=self.documents, chunks=self.chunks, skipped=self.skipped, duplicates=self.duplicates
        )


class _Throttle:
    """Calls ``progress`` about every 1% of ``total`` (and always at the end), so reporting stays cheap."""

    def __init__(self, progress: Progress | None, total: int):
        self.progress = progress
        self.total = total
        self.step = max(total // 100, 1)
        self.last = -1

    def __call__(self, done: int, *, final: bool = False) -> None:
        if self.progress is None:
            return
        if final or self.last < 0 or done - self.last >= self.step:
            self.last = done
            self.progress(done, self.total)


# -- bounded line reading ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    number: int  # 1-based
    offset: int  # byte offset of the line's first byte in the file
    length: int  # bytes in the line, without its "\n"
    data: bytes | None  # the line without its "\n"; None when longer than the limit (never held in memory)


def _iter_lines(stream: BinaryIO, max_line_bytes: int, block_size: int = _READ_BLOCK) -> Iterator[_Line]:
    """Yield the lines of a binary stream, reading ``block_size`` bytes at a time.

    A line longer than ``max_line_bytes`` is measured but not kept: its bytes are dropped as they are read,
    so a 200 MB line costs one block of memory, not 200 MB.
    """
    number = 0
    offset = 0
    parts: list[bytes] = []
    held = 0
    length = 0
    too_long = False
    while True:
        block = stream.read(block_size)
        if not block:
            break
        pos = 0
        while True:
            newline = block.find(b"\n", pos)
            end = newline if newline >= 0 else len(block)
            size = end - pos
            length += size
            if not too_long:
                if held + size > max_line_bytes:
                    too_long = True
                    parts = []
                    held = 0
                elif size:
                    parts.append(block[pos:end])
                    held += size
            if newline < 0:
                break
            number += 1
            yield _Line(number, offset, length, None if too_long else b"".join(parts))
            offset += length + 1
            parts, held, length, too_long = [], 0, 0, False
            pos = newline + 1
    if length:  # a last line without a trailing newline
        yield _Line(number + 1, offset, length, None if too_long else b"".join(parts))


def _sniff_file(path: Path, source: str, col: _Collector) -> bool:
    """Whole-file checks before reading lines; record a skip and return False for an unusable file."""
    try:
        with path.open("rb") as f:
            head = f.read(BINARY_SNIFF_BYTES)
    except OSError as exc:
        col.skip(source, None, "unreadable", f"cannot read the file: {exc.strerror or exc}")
        return False
    if not head:
        col.skip(source, None, "empty", "the file is empty")
        return False
    nul = head.find(b"\x00")
    if nul >= 0:
        col.skip(source, None, "binary", f"looks binary (a NUL byte at byte offset {nul}); expected UTF-8 text")
        return False
    return True


def _decode(line: _Line, source: str, col: _Collector) -> str | None:
    data = line.data or b""
    if line.number == 1 and data.startswith(_BOM):  # editors on Windows write one; it is not text
        data = data[len(_BOM) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bom = len(_BOM) if line.number == 1 and (line.data or b"").startswith(_BOM) else 0
        at = line.offset + bom + exc.start
        col.skip(
            source,
            line.number,
            "not_utf8",
            f"not valid UTF-8 at byte offset {at} (byte 0x{data[exc.start]:02x}); re-encode the file as UTF-8",
        )
        return None


def _too_long(line: _Line, source: str, col: _Collector, limit: int) -> None:
    col.skip(
        source,
        line.number,
        "line_too_long",
        f"the line is {line.length:,} bytes, over the {limit:,}-byte limit (max_line_bytes); "
        "split the record or raise the limit",
    )


# -- jsonl ---------------------------------------------------------------------------------------------------


def _jsonl_files(paths: str | Path | Sequence[str | Path]) -> list[Path]:
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not items:
        raise IngestError("no jsonl input given")
    files: list[Path] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            found = sorted(q for q in p.glob("*.jsonl") if q.is_file())
            if not found:
                raise IngestError(f"{p}: the folder holds no .jsonl files")
            files.extend(found)
        elif p.is_file():
            files.append(p)
        else:
            raise IngestError(f"{p}: no such file or folder")
    return files


def ingest_jsonl(
    paths: str | Path | Sequence[str | Path],
    *,
    domain: str | None = None,
    text_field: str = "context",
    title_field: str | None = "title",
    options: IngestOptions | None = None,
    progress: Progress | None = None,
) -> IngestResult:
    """Ingest UltraDomain-style jsonl: one JSON object per line, the text in ``text_field``.

    ``paths`` is a file, a folder (its ``*.jsonl`` files), or a list of these. Each file's domain is
    ``domain`` when given, else the file's stem (``cs.jsonl`` -> ``cs``); every domain is checked before
    any file is read. UltraDomain repeats a context on every question row about it: repeats count as
    duplicates, not documents. Blank lines are ignored. ``Document.source_line`` is the 1-based line.
    """
    opts = options or IngestOptions()
    files = _jsonl_files(paths)
    domains = [
        check_domain(domain if domain is not None else f.stem, where=str(f), allow_new_domains=opts.allow_new_domains)
        for f in files
    ]
    col = _Collector(opts)
    sizes = [f.stat().st_size for f in files]
    tick = _Throttle(progress, sum(sizes))
    before = 0
    for f, dom, size in zip(files, domains, sizes, strict=True):
        _ingest_jsonl_file(f, dom, text_field, title_field, col, opts.max_line_bytes, tick, before)
        before += size
        tick(before)
    tick(before, final=True)
    return col.result()


def _ingest_jsonl_file(
    path: Path,
    domain: str,
    text_field: str,
    title_field: str | None,
    col: _Collector,
    max_line_bytes: int,
    tick: _Throttle,
    bytes_before: int,
) -> None:
    """Ingest one jsonl file into ``col``; ``bytes_before`` is where the file starts in the progress total."""
    source = str(path)
    if not _sniff_file(path, source, col):
        return
    saw_content = False
    try:
        with path.open("rb") as f:
            for line in _iter_lines(f, max_line_bytes):
                tick(bytes_before + line.offset + line.length)
                if line.data is None:
                    saw_content = True
                    _too_long(line, source, col, max_line_bytes)
                    continue
                if not line.data.strip():
                    continue
                saw_content = True
                raw = _decode(line, source, col)
                if raw is None:
                    continue
                _jsonl_row(raw, line.number, domain, source, text_field, title_field, col)
    except OSError as exc:
        col.skip(source, None, "unreadable", f"reading failed: {exc.strerror or exc}")
        return
    if not saw_content:
        col.skip(source, None, "empty", "the file holds only whitespace")


def _jsonl_row(
    raw: str, number: int, domain: str, source: str, text_field: str, title_field: str | None, col: _Collector
) -> None:
    try:
        row = json.loads(raw)
    except json.JSONDecodeError as exc:
        col.skip(source, number, "bad_json", f"not valid JSON ({exc.msg} at column {exc.colno})")
        return
    except RecursionError:  # hostile or broken input: arrays nested thousands deep
        col.skip(source, number, "bad_json", "JSON nested too deeply to parse")
        return
    if not isinstance(row, dict):
        col.skip(source, number, "bad_json", f"expected a JSON object, got a JSON {_json_kind(row)}")
        return
    if text_field not in row:
        keys = ", ".join(sorted(map(str, row))[:10]) or "none"
        col.skip(source, number, "missing_field", f"no {text_field!r} field (fields: {keys})")
        return
    value = row[text_field]
    if value is None:
        col.skip(source, number, "empty_text", f"{text_field!r} is null")
        return
    if not isinstance(value, str):
        col.skip(source, number, "wrong_type", f"{text_field!r} holds a JSON {_json_kind(value)}, expected a string")
        return
    title = row.get(title_field) if title_field else None
    col.add(
        domain=domain,
        source=source,
        line=number,
        title=(title.strip() or None) if isinstance(title, str) else None,
        raw_text=value,
    )


def _json_kind(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


# -- folders of text files --------------------------------------------------------------------------------------


def _is_text_file(p: Path, extensions: tuple[str, ...]) -> bool:
    return p.is_file() and p.suffix.lower() in extensions and not p.name.startswith(".")


def _text_files_under(folder: Path, extensions: tuple[str, ...]) -> list[Path]:
    """Text files anywhere under ``folder``, skipping hidden files and folders (.git, .obsidian ...)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if _is_text_file(p, extensions):
                found.append(p)
    return found


def _plan_folder(folder: Path, extensions: tuple[str, ...]) -> list[tuple[str, Path, str]]:
    """(domain, file, where) for a domain folder, or for a root folder holding one subfolder per domain."""
    if not folder.is_dir():
        raise IngestError(f"{folder}: no such folder")
    direct = [p for p in sorted(folder.iterdir()) if _is_text_file(p, extensions)]
    if direct:  # a domain folder: its own name is the domain
        return [(folder.name, p, str(folder)) for p in _text_files_under(folder, extensions)]
    plan: list[tuple[str, Path, str]] = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        plan.extend((sub.name, p, str(sub)) for p in _text_files_under(sub, extensions))
    if not plan:
        raise IngestError(
            f"{folder}: no {'/'.join(extensions)} files in the folder or in its subfolders "
            "(a folder is one domain; a root folder holds one subfolder per domain)"
        )
    return plan


def _plan_mapping(spec: Mapping[str | Path, str], extensions: tuple[str, ...]) -> list[tuple[str, Path, str]]:
    plan: list[tuple[str, Path, str]] = []
    for pattern, dom in spec.items():
        where = f"{pattern} (mapped to domain {dom!r})"
        p = Path(pattern)
        if p.is_dir():
            files = _text_files_under(p, extensions)
        elif p.is_file():
            files = [p]
        else:
            matches = sorted(Path(m) for m in glob.glob(str(pattern), recursive=True))
            if not matches:
                raise IngestError(f"{pattern}: matches no file or folder")
            files = []
            for m in matches:
                if m.is_dir():
                    files.extend(_text_files_under(m, extensions))
                elif _is_text_file(m, extensions):
                    files.append(m)
        if not files:
            raise IngestError(f"{where}: no {'/'.join(extensions)} files there")
        plan.extend((dom, f, where) for f in files)
    return plan


def ingest_text_folders(
    spec: str | Path | Sequence[str | Path] | Mapping[str | Path, str],
    *,
    options: IngestOptions | None = None,
    progress: Progress | None = None,
    extensions: Sequence[str] = TEXT_EXTENSIONS,
) -> IngestResult:
    """Ingest ``.txt``/``.md`` files, one document per file.

    ``spec`` is one of:
    - a folder holding text files: the folder's name is the domain (files in its subfolders count too);
    - a root folder with no text files of its own: each subfolder is a domain named after it;
    - a list of such folders;
    - a mapping ``{folder, file or glob: domain}`` (globs may use ``**``).
    Every domain is checked before any file is read. The title is a markdown file's leading ``# heading``,
    else the file's stem. A file listed twice is read once.
    """
    opts = options or IngestOptions()
    exts = tuple(e.lower() if e.startswith(".") else f".{e.lower()}" for e in extensions)
    if isinstance(spec, Mapping):
        plan = _plan_mapping(spec, exts)
    else:
        items = [spec] if isinstance(spec, (str, Path)) else list(spec)
        if not items:
            raise IngestError("no folder given")
        plan = [entry for item in items for entry in _plan_folder(Path(item), exts)]
    checked: set[str] = set()
    for dom, _, where in plan:
        if dom not in checked:
            check_domain(dom, where=where, allow_new_domains=opts.allow_new_domains)
            checked.add(dom)
    seen_files: set[tuple[str, Path]] = set()
    unique_plan = []
    for dom, f, _ in plan:
        key = (dom, f.resolve())
        if key not in seen_files:
            seen_files.add(key)
            unique_plan.append((dom, f))
    col = _Collector(opts)
    tick = _Throttle(progress, len(unique_plan))
    for done, (dom, f) in enumerate(unique_plan, 1):
        _ingest_text_file(f, dom, col, opts.max_line_bytes)
        tick(done)
    tick(len(unique_plan), final=True)
    return col.result()


def _ingest_text_file(path: Path, domain: str, col: _Collector, max_line_bytes: int) -> None:
    source = str(path)
    if not _sniff_file(path, source, col):
        return
    lines: list[str] = []
    try:
        with path.open("rb") as f:
            for line in _iter_lines(f, max_line_bytes):
                if line.data is None:
                    _too_long(line, source, col, max_line_bytes)
                    return
                decoded = _decode(line, source, col)
                if decoded is None:
                    return  # one document per file: a bad byte anywhere skips the file
                lines.append(decoded)
    except OSError as exc:
        col.skip(source, None, "unreadable", f"reading failed: {exc.strerror or exc}")
        return
    raw = "\n".join(lines)
    if not raw.strip():
        col.skip(source, None, "empty", "the file holds only whitespace")
        return
    col.add(domain=domain, source=source, line=None, title=_title(lines, path), raw_text=raw)


def _title(lines: list[str], path: Path) -> str:
    if path.suffix.lower() == ".md":
        for text in lines:
            stripped = text.strip()
            if stripped:
                if stripped.startswith("#"):
                    heading = stripped.lstrip("#").strip()
                    if heading:
                        return heading
                break
    return path.stem


# -- Hugging Face datasets ---------------------------------------------------------------------------------------


def ingest_hf_dataset(
    path: str,
    *,
    name: str | None = None,
    split: str = "train",
    data_files: str | Sequence[str] | Mapping[str, Any] | None = None,
    text_column: str = "context",
    domain: str | None = None,
    domain_column: str | None = None,
    title_column: str | None = None,
    options: IngestOptions | None = None,
    progress: Progress | None = None,
    **load_kwargs: Any,
) -> IngestResult:
    """Ingest one split of a dataset loaded with ``datasets.load_dataset(path, name, split=, data_files=)``.

    ``path`` is a hub id, a local dataset folder, or a builder such as ``"parquet"``/``"json"`` with
    ``data_files``. Give exactly one of ``domain`` (every row) or ``domain_column`` (per row; each new value
    is checked, and an unknown one raises IngestError). ``Document.source_line`` is the row index.
    ``load_kwargs`` go to ``load_dataset`` unchanged (``cache_dir``, ``revision``, ``streaming``...).
    """
    opts = options or IngestOptions()
    if (domain is None) == (domain_column is None):
        raise IngestError(f"dataset {path!r}: give exactly one of domain= (for every row) or domain_column=")
    source = f"hf:{path}" + (f"/{name}" if name else "") + f":{split}"
    if data_files is not None:
        source += f" (data_files={data_files})"
    if domain is not None:
        check_domain(domain, where=source, allow_new_domains=opts.allow_new_domains)
    wanted = list(dict.fromkeys(c for c in (text_column, domain_column, title_column) if c))
    ds, total = _load_hf_split(path, name=name, split=split, data_files=data_files, source=source, wanted=wanted,
                               load_kwargs=load_kwargs)  # fmt: skip
    col = _Collector(opts)
    tick = _Throttle(progress, total)
    rows = _HFRows(source=source, text_column=text_column, domain=domain, domain_column=domain_column,
                   title_column=title_column, opts=opts, col=col)  # fmt: skip
    index = 0
    for batch in ds.iter(batch_size=1000):
        if text_column not in batch:  # a streaming dataset does not always declare its columns up front
            raise IngestError(f"dataset {source} has no column {text_column!r}; its columns are {sorted(batch)}")
        index += rows.add_batch(batch, index)
        tick(index)
    tick(total if total else index, final=True)
    return col.result()


def _load_hf_split(path: str, *, name: str | None, split: str,
                   data_files: str | Sequence[str] | Mapping[str, Any] | None, source: str, wanted: list[str],
                   load_kwargs: Mapping[str, Any]) -> tuple[Any, int]:  # fmt: skip
    """The dataset split (only the ``wanted`` columns where it declares its columns) and its number of rows (0 for
    a streaming one); ``IngestError`` when it does not load, is not one split, or lacks a wanted column."""
    import datasets  # heavy import, only for this source

    try:
        ds = datasets.load_dataset(path, name=name, split=split, data_files=data_files, **load_kwargs)
    except Exception as exc:  # the library raises many types (FileNotFoundError, DatasetNotFoundError, ...)
        raise IngestError(f"cannot load dataset {source}: {type(exc).__name__}: {exc}") from exc
    if isinstance(ds, (datasets.DatasetDict, datasets.IterableDatasetDict)):
        raise IngestError(f"dataset {source}: name one split with split= (it has {sorted(ds)})")
    columns = list(ds.column_names or [])
    if columns:
        missing = [c for c in wanted if c not in columns]
        if missing:
            raise IngestError(f"dataset {source} has no column(s) {missing}; its columns are {columns}")
    total = len(ds) if isinstance(ds, datasets.Dataset) else 0
    if isinstance(ds, datasets.Dataset):
        ds = ds.select_columns(wanted)
    return ds, total


@dataclass
class _HFRows:
    """A dataset split's rows into documents: each row's domain (given, or its column's value, checked when new),
    its text and its title; a row without a domain or a text is skipped with the reason."""

    source: str
    text_column: str
    domain: str | None
    domain_column: str | None
    title_column: str | None
    opts: IngestOptions
    col: _Collector
    checked: set[str] = field(default_factory=set)

    def add_batch(self, batch: Mapping[str, list[Any]], index: int) -> int:
        """The rows of ``batch`` (the first is row ``index``) into the collector; returns how many rows it held."""
        source, text_column, domain_column, col = self.source, self.text_column, self.domain_column, self.col
        texts = batch[text_column]
        for i, value in enumerate(texts):
            row = index + i
            dom = self.domain
            if domain_column is not None:
                dom = batch[domain_column][i]
                if dom is None or dom == "":
                    col.skip(source, row, "missing_field", f"row {row} has no {domain_column!r} value")
                    continue
                if dom not in self.checked:
                    check_domain(dom, where=f"{source} row {row}", allow_new_domains=self.opts.allow_new_domains)
                    self.checked.add(dom)
            if value is None:
                col.skip(source, row, "empty_text", f"{text_column!r} is empty (null)")
                continue
            if not isinstance(value, str):
                col.skip(source, row, "wrong_type", f"{text_column!r} holds {type(value).__name__}, expected text")
                continue
            title = batch[self.title_column][i] if self.title_column else None
            col.add(
                domain=dom,  # type: ignore[arg-type]  # set from domain or the column above
                source=source,
                line=row,
                title=(title.strip() or None) if isinstance(title, str) else None,
                raw_text=value,
            )
        return len(texts)
