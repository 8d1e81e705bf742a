"""A local, offline tokenizer for LightRAG, and a chunker that cuts exactly where LightRAG cuts.

LightRAG's default tokenizer is tiktoken, which downloads its vocabulary on first use; these machines cannot
reach the download host. ``RegexTokenizer`` needs no data file: it splits text into pieces (words, runs of
whitespace, single punctuation marks; CJK ideographs and kana one by one; any piece longer than
``MAX_PIECE_CHARS`` cut into slices of that size) and numbers pieces as it meets them. The piece count is
close enough to a BPE token count for chunk sizing and prompt budgets, and ``decode(encode(t)) == t`` holds for
every string, which is what LightRAG relies on when it decodes token windows back into chunk text.

``chunk_text`` reproduces ``lightrag.chunker.chunking_by_token_size`` (the fixed-window, no-separator path):
same windows, same ``.strip()`` of the window text, same token counts taken *before* that strip, same indexes.
``lightrag_stored_chunks`` goes one step further, to what LightRAG's document pipeline actually stores after
the chunker (empty chunks dropped, tokens recounted, oversize chunks re-split for the embedding model): the
ingest stage stores those, so LightRAG's chunk keys and ``source_id`` fields name our chunk rows.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from lightrag.utils import Tokenizer, enforce_chunk_token_limit_before_embedding

#: Longest piece, in characters. BPE vocabularies hold few tokens longer than ~8 characters, so a long word
#: (or a long run of spaces) counts as several tokens, as it would for a BPE tokenizer.
MAX_PIECE_CHARS = 8

#: Name LightRAG records for this tokenizer (it appears in LightRAG's config dumps, nowhere else).
TOKENIZER_NAME = "hopforge-regex-v1"

# Scripts written without spaces: one character is roughly one BPE token, so each is its own piece instead of
# one sentence-long "word".
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
# Every character matches exactly one branch (a CJK character, another word character, whitespace, or
# anything else), so the pieces always concatenate back to the input: that is what makes decode exact. The
# {1,8} bounds cut long words and whitespace runs into MAX_PIECE_CHARS slices inside the regex engine, which
# is several times faster than slicing in Python.
_PIECE = re.compile(rf"[{_CJK}]|[^\W{_CJK}]{{1,{MAX_PIECE_CHARS}}}|\s{{1,{MAX_PIECE_CHARS}}}|[^\w\s]", re.UNICODE)


def split_pieces(text: str) -> list[str]:
    """Cut ``text`` into pieces whose concatenation is ``text``; no piece is longer than ``MAX_PIECE_CHARS``."""
    return _PIECE.findall(text)


class RegexTokenizer:
    """Pieces in, integer ids out, through a vocabulary that grows as new pieces appear.

    Contract:
    - ``decode(encode(t)) == t`` for every ``str`` ``t`` (lone surrogates included).
    - ``len(encode(t)) == count_tokens(t)``; counting does not grow the vocabulary.
    - Safe to call from several threads at once (LightRAG encodes in worker threads): lookups of known pieces
      take no lock; a new piece is added under a lock, and its id is published only after the piece is in
      the id -> piece table, so ``decode`` never sees an id it cannot resolve.
    - Ids are private to one tokenizer object in one process, in order of first appearance. Never store them:
      re-encode the text instead.
    - ``copy.deepcopy`` returns the same object (LightRAG deep-copies its config; a copy would carry a lock
      that cannot be copied and a vocabulary that would drift apart from the original).
    """

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._pieces: list[str] = []
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict[int, object]) -> RegexTokenizer:
        return self

    def __len__(self) -> int:
        """Number of distinct pieces seen so far."""
        return len(self._pieces)

    def _add(self, piece: str) -> int:
        with self._lock:
            known = self._ids.get(piece)
            if known is not None:  # another thread added it while we waited for the lock
                return known
            self._pieces.append(piece)
            new_id = len(self._pieces) - 1
            self._ids[piece] = new_id  # published last: any id a reader can see resolves in _pieces
            return new_id

    def encode(self, content: str) -> list[int]:
        ids = self._ids
        out: list[int] = []
        for piece in split_pieces(content):
            known = ids.get(piece)
            out.append(known if known is not None else self._add(piece))
        return out

    def decode(self, tokens: list[int]) -> str:
        pieces = self._pieces
        try:
            return "".join([pieces[t] for t in tokens])
        except (IndexError, TypeError):
            bad = next(t for t in tokens if not isinstance(t, int) or not 0 <= t < len(pieces))
            raise ValueError(
                f"token id {bad!r} was not produced by this tokenizer (it knows ids 0..{len(pieces) - 1}); "
                "ids are private to one RegexTokenizer object and process"
            ) from None

    @staticmethod
    def count(content: str) -> int:
        """Number of tokens ``encode(content)`` would return, without touching the vocabulary."""
        return len(split_pieces(content))


_shared = RegexTokenizer()


def make_lightrag_tokenizer() -> Tokenizer:
    """A ``lightrag.utils.Tokenizer`` over the shared ``RegexTokenizer``: pass it as ``LightRAG(tokenizer=...)``."""
    return Tokenizer(model_name=TOKENIZER_NAME, tokenizer=_shared)


def count_tokens(text: str) -> int:
    """Token count of ``text`` under ``RegexTokenizer`` (equal to ``len(encode(text))``)."""
    return RegexTokenizer.count(text)


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk as LightRAG's fixed-window chunker returns it.

    ``text`` is the window's text with surrounding whitespace stripped (it may be empty when a window holds
    only whitespace); ``tokens`` is the window's token count *before* that strip; ``index`` is the window's
    position (LightRAG's ``chunk_order_index``).
    """

    text: str
    tokens: int
    index: int


def check_chunk_sizes(chunk_token_size: int, overlap: int) -> None:
    """Raise ValueError unless ``0 <= overlap < chunk_token_size`` (LightRAG's own rule, checked up front)."""
    if chunk_token_size < 1:
        raise ValueError(f"chunk_token_size must be at least 1 token (got {chunk_token_size})")
    if overlap < 0:
        raise ValueError(f"chunk overlap must be 0 or more tokens (got {overlap})")
    if overlap >= chunk_token_size:
        raise ValueError(
            f"chunk overlap ({overlap}) must be smaller than chunk_token_size ({chunk_token_size}): "
            "each window must advance by at least one token"
        )


def chunk_text(text: str, chunk_token_size: int = 1200, overlap: int = 100) -> list[Chunk]:
    """Cut ``text`` into the chunks ``chunking_by_token_size`` gives with ``RegexTokenizer`` and these sizes.

    Windows start every ``chunk_token_size - overlap`` tokens and hold up to ``chunk_token_size`` tokens; the
    last window may lie entirely inside the one before it (LightRAG keeps it, and so do we). No text
    cleaning happens here: LightRAG sanitizes a document before chunking it, so callers pass the
    sanitized text (the ingest stage does). Empty text gives no chunks.
    """
    check_chunk_sizes(chunk_token_size, overlap)
    # Our tokenizer is concatenative, so joining a window's pieces is exactly decode(encode(...)) of that
    # window; working on pieces directly avoids growing the shared vocabulary just to chunk.
    pieces = split_pieces(text)
    n = len(pieces)
    step = chunk_token_size - overlap
    chunks: list[Chunk] = []
    for index, start in enumerate(range(0, n, step)):
        end = min(start + chunk_token_size, n)
        chunks.append(Chunk("".join(pieces[start:end]).strip(), end - start, index))
    return chunks


def lightrag_stored_chunks(
    text: str,
    chunk_token_size: int = 1200,
    overlap: int = 100,
    *,
    embedding_token_limit: int | None = None,
    embedding_overlap: int = 100,
) -> list[Chunk]:
    """The chunks LightRAG 1.5's document pipeline stores for ``text`` (after ``chunk_text``).

    ``ainsert`` does not store the chunker's output as is:
    - with an embedding limit (``EmbeddingFunc(max_token_size=...)``, the usual case) it drops whitespace-only
      windows, recounts each chunk's tokens on the stripped text, splits any chunk still over the limit, and
      renumbers the chunks 0..n-1 (``enforce_chunk_token_limit_before_embedding``, called here as is);
    - without one it only drops empty chunks, keeping the chunker's numbering (gaps included) and counts.
    The index of each returned chunk is the number in LightRAG's chunk key ``<doc_id>-chunk-NNN``.
    """
    cut = chunk_text(text, chunk_token_size, overlap)
    if embedding_token_limit is None:
        return [c for c in cut if c.text]
    as_lightrag = [{"tokens": c.tokens, "content": c.text, "chunk_order_index": c.index} for c in cut]
    stored = enforce_chunk_token_limit_before_embedding(
        as_lightrag,
        make_lightrag_tokenizer(),
        max_tokens=embedding_token_limit,
        overlap_tokens=embedding_overlap,
        source_content=text,
    )
    return [Chunk(d["content"], d["tokens"], d["chunk_order_index"]) for d in stored]
