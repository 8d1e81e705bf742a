"""Corpus records: documents, their chunks, the inputs ingest had to skip, and ingest options.

Identity rules (why the ids look the way they do):
- ``doc_id`` is ``"doc-" + sha256(domain + "\\n" + text)[:32]``. It is a content hash, so the same text
  ingested twice (in one run or across runs) is one document; the domain is part of the hash because graphs
  are built per domain, and a text that two domains both hold must land in both graphs.
- ``content_hash`` is the full sha256 of the text alone, to spot the same text across domains.
- ``chunk_id`` is ``f"{doc_id}-chunk-{index:03d}"``: the key LightRAG 1.5's document pipeline gives a chunk
  when a document is inserted with ``ainsert(texts, ids=[doc_id])`` (``build_chunks_dict_from_chunking_result``),
  so the ``source_id`` fields of LightRAG's entities and relations name rows of our ``chunks`` table.

For those ids to line up, the graph build must insert each document as
``ainsert([doc.text], ids=[doc.doc_id], file_paths=[doc.lightrag_file_path()])`` into a LightRAG made with
``tokenizer=tasks.corpus.text.make_lightrag_tokenizer()``, the same ``chunk_token_size`` /
``chunk_overlap_token_size``, and an embedding ``max_token_size`` equal to
``IngestOptions.embedding_token_limit`` (see ``tasks.corpus.text.lightrag_stored_chunks``).
"""

from __future__ import annotations

import hashlib
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schemas.errors import InputError

#: The 20 UltraDomain domains (one jsonl file each in the UltraDomain release).
ULTRADOMAIN_DOMAINS: frozenset[str] = frozenset(
    {
        "agriculture", "art", "biography", "biology", "cooking", "cs", "fiction", "fin", "health", "history",
        "legal", "literature", "mathematics", "mix", "music", "philosophy", "physics", "politics", "psychology",
        "technology",
    }
)  # fmt: skip

#: What any domain name must look like: it becomes a graph_type, a directory name and a tool argument.
DOMAIN_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def check_domain(name: object, *, where: str, allow_new_domains: bool = False, fix: str = "",
                 error: type[InputError] = InputError) -> str:
    """Return ``name`` if it may name a domain, else raise ``error`` (an ``InputError``) naming ``where`` it came from.

    The one rule for every command that puts data into a domain (``hopforge ingest``, ``graph build --source``,
    ``graph import``; see docs/graphs.md#domains): a domain name matches ``DOMAIN_NAME`` (1-40 lowercase letters,
    digits or ``_``, starting with a letter), and a name outside the 20 UltraDomain names is a new domain, refused
    unless ``allow_new_domains`` says it is meant (``--allow-new-domains``): a typo in a file name or in ``-d``
    must not start a domain of its own. ``fix`` says how to correct a malformed name where it came from.
    """
    if not isinstance(name, str) or not DOMAIN_NAME.match(name):
        raise error(f"{where}: {name!r} is not a valid domain name; use 1-40 lowercase letters, digits or '_', "
                    f"starting with a letter{f' ({fix})' if fix else ''}")
    if name not in ULTRADOMAIN_DOMAINS and not allow_new_domains:
        raise error(f"{where}: unknown domain {name!r}; the known (UltraDomain) domains are "
                    f"{', '.join(sorted(ULTRADOMAIN_DOMAINS))}. Pass --allow-new-domains (allow_new_domains=True in "
                    "Python) to add a new domain.")
    return name

SkipReason = Literal[
    "empty",  # the file holds nothing but whitespace
    "binary",  # a NUL byte in the first 8 KiB
    "not_utf8",  # bytes that do not decode as UTF-8 (the message gives the byte offset)
    "line_too_long",  # one line longer than IngestOptions.max_line_bytes
    "bad_json",  # a jsonl row that is not JSON, or not a JSON object
    "missing_field",  # a jsonl row without the text field
    "wrong_type",  # the text field holds a number, list or object instead of a string
    "empty_text",  # the text is empty or whitespace once cleaned
    "unreadable",  # the operating system refused to read the file
]


def make_doc_id(domain: str, text: str) -> str:
    """The document id of ``text`` in ``domain`` (see the module docstring)."""
    digest = hashlib.sha256(f"{domain}\n{text}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"doc-{digest[:32]}"


def content_hash(text: str) -> str:
    """Full sha256 hex digest of ``text`` alone."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def make_chunk_id(doc_id: str, chunk_index: int) -> str:
    """The chunk key LightRAG's pipeline gives chunk ``chunk_index`` of document ``doc_id``."""
    return f"{doc_id}-chunk-{chunk_index:03d}"


class Document(BaseModel):
    """One ingested text, as LightRAG will receive it (already cleaned with LightRAG's own sanitizer)."""

    model_config = ConfigDict(extra="forbid")

    doc_id: str
    domain: str
    source: str = Field(description="File path, or 'hf:<dataset>[/<config>]:<split>' for a Hugging Face dataset.")
    source_line: int | None = Field(None, description="1-based line of a jsonl file, row index of a dataset.")
    title: str | None = None
    text: str
    content_hash: str
    n_tokens: int = Field(ge=0)
    ingested_run_id: str | None = Field(None, description="Set when the document is written to the warehouse.")

    def lightrag_file_path(self) -> str:
        """The ``file_path`` to pass with this document to ``LightRAG.ainsert(texts, ids=..., file_paths=...)``.

        LightRAG 1.5 keeps only the basename of a file path and drops a document whose basename it has seen
        before, even under a different id: every row of ``cs.jsonl``, or two ``notes.md`` in different folders,
        would collapse into one document. The doc_id suffix makes the name unique per document (and the same
        for the same document, so LightRAG's own dedup still works); the prefix keeps citations readable.
        """
        base = self.source.replace("\\", "/").rsplit("/", 1)[-1]
        where = f"{base}:{self.source_line}" if self.source_line is not None else base
        return f"{where}#{self.doc_id}"


class Chunk(BaseModel):
    """One chunk of a document, exactly as LightRAG's pipeline stores it for ``ainsert(ids=[doc_id])``."""

    model_config = ConfigDict(extra="forbid")

    chunk_id: str
    doc_id: str
    domain: str
    chunk_index: int = Field(ge=0)
    text: str
    n_tokens: int = Field(ge=0)


class SkippedInput(BaseModel):
    """An input ingest could not use, with the file, the line (1-based; None for a whole file) and why."""

    model_config = ConfigDict(extra="forbid")

    source: str
    line: int | None = None
    reason_code: SkipReason
    message: str


class IngestResult(BaseModel):
    """What one ingest call produced. ``duplicates`` counts texts dropped because an earlier row or file of
    the same input, in the same domain, had the identical (cleaned) text."""

    model_config = ConfigDict(extra="forbid")

    documents: list[Document] = Field(default_factory=list)
    chunks: list[Chunk] = Field(default_factory=list)
    skipped: list[SkippedInput] = Field(default_factory=list)
    duplicates: int = 0

    def merge(self, other: IngestResult) -> IngestResult:
        """Both results in one; a document already in ``self`` counts as a duplicate, its chunks are dropped."""
        seen = {d.doc_id for d in self.documents}
        fresh = [d for d in other.documents if d.doc_id not in seen]
        fresh_ids = {d.doc_id for d in fresh}
        return IngestResult(
            documents=[*self.documents, *fresh],
            chunks=[*self.chunks, *(c for c in other.chunks if c.doc_id in fresh_ids)],
            skipped=[*self.skipped, *other.skipped],
            duplicates=self.duplicates + other.duplicates + len(other.documents) - len(fresh),
        )


class IngestWriteSummary(BaseModel):
    """What ``write_ingest`` wrote. ``already_present`` counts documents skipped because their doc_id was
    already in the warehouse from an earlier run (their chunks were not written again either)."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    documents_written: int
    chunks_written: int
    skips_written: int
    already_present: int


class IngestOptions(BaseModel):
    """Knobs shared by every ingest source, checked when built.

    ``embedding_token_limit`` and ``embedding_overlap_token_size`` must equal what the graph build gives
    LightRAG (``EmbeddingFunc(max_token_size=...)`` and ``embedding_chunk_overlap_token_size``): LightRAG
    re-splits any chunk over that limit before embedding and renumbers the chunks, and the chunk rows here
    follow the same rule so their ids keep matching. ``None`` means the embedding function has no
    ``max_token_size`` (LightRAG then keeps chunks as cut, skipping only whitespace-only ones).
    """

    model_config = ConfigDict(extra="forbid")

    chunk_token_size: int = Field(1200, ge=1)
    chunk_overlap_token_size: int = Field(100, ge=0)
    embedding_token_limit: int | None = Field(None, ge=1)
    embedding_overlap_token_size: int = Field(100, ge=0)
    max_line_bytes: int = Field(10 * 1024 * 1024, ge=1, description="Longest accepted line, in bytes.")
    allow_new_domains: bool = Field(False, description="Accept domain names outside the 20 UltraDomain ones.")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> IngestOptions:
        if self.chunk_overlap_token_size >= self.chunk_token_size:
            raise ValueError(
                f"chunk_overlap_token_size ({self.chunk_overlap_token_size}) must be smaller than "
                f"chunk_token_size ({self.chunk_token_size})"
            )
        return self
