"""``TextIndex``: hybrid search over text chunks, the "web" of Graph-RFT's incomplete-graph (IKG) setting.

Graph-RFT's agent falls back to a web search engine when the knowledge graph lacks a fact. hopforge keeps the
corpus its graphs were built from, chunk by chunk, with the provenance of every entity and relation, so a fact
hidden from the graph is still in the chunk it came from: the search engine here is that corpus (and any text
collection a person adds through the ingest), searched offline and reproducibly.

Ranking fuses two rankings by reciprocal rank fusion (RRF, ``score = sum 1 / (rrf_k + rank)``):

1. lexical: BM25 over word tokens (``bm25s``, sparse, exact scores), which finds the chunk that names the
   entity and the relation;
2. meaning: cosine similarity between the query's embedding and each chunk's (the project's ``Embedder``, the
   same one the entity index uses), which finds paraphrases. The top rows are found as ``GraphIndex.top_k``
   finds them: a candidate product keeps every row within a rounding bound of the n-th best score (float32,
   ``RESCORE_MARGIN``; or bfloat16 through PyTorch where the CPU multiplies it faster, ``precision``), then the
   candidates are ranked by float64 sums, so a query's ranking depends neither on the product's precision nor
   on which other queries share it (BLAS picks other kernels, and rounds differently, for one query and for a
   block).

Each ranking contributes its top ``candidates`` chunks; ties are broken by chunk order (the corpus order), so a
query gives the same results in every process. Both halves are built once per collection content and cached on
disk under ``cache_dir`` (the BM25 matrices as ``bm25s`` saves them, the chunk embeddings as one ``.npy``),
keyed by a hash of every chunk id and text, like ``tasks.env.index.GraphIndex`` caches entity embeddings; a
process keeps built indexes in memory (``cached_text_index``).

Hot path (``bench/bench_text_search.py``, 100k chunks): the meaning half streams the whole chunk matrix once per
product (150 MB in float32 at 384 dimensions), a few ms per query, which dominated a request. From
``ANN_MIN_CHUNKS`` chunks a query therefore takes its candidates from an HNSW graph instead (usearch,
``tasks.env.index.AnnIndex``: built on every core, so two builds may differ near ties, but cached beside the matrix
and memory-mapped, so every process reads the same file; approximate, at the recall measured in
``bench/results/ann.json``) and ranks them by float64 sums.
Below it the search is exact, and concurrent searches of one process are coalesced (``_DenseBatcher``): while one
product runs, new queries queue, and the next product takes all of them, so 32 concurrent queries stream the matrix
once, not 32 times; on a CPU with bfloat16 units the product runs in bfloat16 where a timed probe finds it faster
(``precision="auto"``). The lexical half ranks only the chunks that share a word with the query (``_top_positive``) instead of sorting
every chunk tied at score 0.

Limits: a query is non-empty and at most ``MAX_QUERY_CHARS`` characters; ``k`` is at most ``MAX_TOP_K``.
Breaking one raises ``TextSearchError`` (an ``InputError``); the tool turns it into an observation the model
can read.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from gateway.embeddings import Embedder
from schemas.corpus import IngestResult
from schemas.errors import InputError
# The entity index's search pieces: its float32 and bfloat16 candidate products (same margins), its float64
# re-scoring, its atomic array save.
from tasks.env.index import (
    AnnBuild,
    AnnIndex,
    _Bfloat16Product,
    _CoarseProduct,
    _exact_scores,
    _mapped_from,
    _save_atomically,
    _unit_rows,
)

log = logging.getLogger(__name__)

#: The longest query accepted, in characters. Graph-RFT's queries are an entity and a relation; a longer one is
#: a model pasting an observation back, and embedding it would cost more than every other call of the round.
MAX_QUERY_CHARS = 2000
#: The most results one call may ask for. Graph-RFT fixes top-3; a few more still fit in a model's context.
MAX_TOP_K = 10
DEFAULT_TOP_K = 3
#: RRF's constant (Cormack et al., 2009): large enough that the first few ranks of either list weigh alike.
RRF_K = 60
#: Chunk text embedded per chunk, in characters (sentence encoders truncate longer inputs anyway).
MAX_EMBED_CHARS = 2000
#: Below this many chunks a float32 product takes about a millisecond: not worth importing PyTorch (``auto``).
AUTO_BF16_ROWS = 20_000
#: Smallest block of queries multiplied in bfloat16: one query streams the matrix either way, and PyTorch's
#: per-call cost then makes bfloat16 the slower of the two.
BF16_MIN_BLOCK = 4
#: From this many chunks the meaning half takes its candidates from an HNSW graph (``dense="auto"``; usearch,
#: ``tasks.env.index.AnnIndex``) instead of scoring every chunk. Measured in ``bench/results/ann.json`` (``chunks``
#: set: the text-search benchmark's corpus, hashed, 384 dimensions; one thread, load 1.6-2.8): for recall@10 >= 0.95
#: the graph needs a search depth of 800 (``ANN_DEPTH_EXPANSION``), 4.6 ms a query at 50k chunks and 6.9 ms at 100k,
#: while the exact product, coalesced over 32 concurrent queries (``_DenseBatcher``), costs 1.4 and 3.3 ms a query:
#: exact is the cheaper up to 100k chunks. At 200k the two cost the same (depth 800: 6.2 ms, recall@10 0.93; exact
#: in blocks: 6.5 ms) and the exact product grows with the collection while the graph barely does; a lone query
#: costs 29 ms exact against 6 ms through the graph.
ANN_MIN_CHUNKS = 200_000
#: The graph's search depth per query, in multiples of the rows a ranking contributes (``TextIndex.depth``, 50 by
#: default, so 800): the depth where recall@10 against the exact ranking reached 0.95 on the benchmark corpus
#: (``bench/results/ann.json``, 100k chunks: 0.88 at 200, 0.93 at 400, 0.96 at 800). A fused top 3 depends on the
#: whole meaning ranking, not only its first 10 rows.
ANN_DEPTH_EXPANSION = 16

#: Bumped whenever tokenising or the embedded text changes, so indexes cached from the old recipe are rebuilt.
TEXT_INDEX_VERSION = 1

#: The meaning half's search: ``exact`` scores every chunk, ``hnsw`` reads an HNSW graph, ``auto`` reads it from
#: ``ANN_MIN_CHUNKS`` chunks. ``ivf`` is kept as another name of ``hnsw``: the ``[ikg] text_dense`` setting names
#: the inverted lists the graph replaced.
DenseSearch = Literal["auto", "exact", "hnsw", "ivf"]
DENSE_SEARCHES: tuple[str, ...] = ("auto", "exact", "hnsw", "ivf")

_TOKEN = re.compile(r"(?u)\b\w\w+\b")


class TextSearchError(InputError):
    """A text search that cannot run as asked: an empty or over-long query, a bad ``k``, an empty collection."""


@dataclass(frozen=True, slots=True)
class TextChunk:
    """One searchable passage: ``chunk_id`` is the warehouse chunk key (provenance of graph facts) or the ingest's
    key for an added collection; ``collection`` names where it came from (a domain, or the added collection)."""

    chunk_id: str
    text: str
    title: str = ""
    collection: str = ""


@dataclass(frozen=True, slots=True)
class TextHit:
    """One result: the chunk, its fused score, and its rank (1-based) in each ranking (``None``: not a candidate)."""

    chunk: TextChunk
    score: float
    lexical_rank: int | None
    dense_rank: int | None


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens of two or more characters, English stop words left out (``bm25s``'s list)."""
    return [t for t in _TOKEN.findall(text.casefold()) if t not in _stopwords()]


_STOP: frozenset[str] | None = None


def _stopwords() -> frozenset[str]:
    global _STOP
    if _STOP is None:
        from bm25s.stopwords import STOPWORDS_EN

        _STOP = frozenset(STOPWORDS_EN)
    return _STOP


def check_query(query: object, k: object) -> tuple[str, int]:
    """The query (whitespace-collapsed) and ``k``, or ``TextSearchError`` naming the limit broken."""
    if not isinstance(query, str):
        raise TextSearchError(f"text search: the query must be text, got {type(query).__name__}")
    flat = " ".join(query.split())
    if not flat:
        raise TextSearchError("text search: the query is empty; name the entity and the relation you are looking for")
    if len(flat) > MAX_QUERY_CHARS:
        raise TextSearchError(f"text search: the query is {len(flat)} characters long, the limit is {MAX_QUERY_CHARS}; "
                              "ask for one entity and one relation")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_TOP_K:
        raise TextSearchError(f"text search: k must be a whole number from 1 to {MAX_TOP_K}, got {k!r}")
    return flat, k


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "x"


def _top(scores: np.ndarray, n: int) -> np.ndarray:
    """Row ids of the ``n`` best scores, best first, ties by row order."""
    n = min(n, scores.shape[0])
    if n <= 0:
        return np.zeros(0, dtype=np.intp)
    if n < scores.shape[0]:
        part = np.argpartition(-scores, n - 1)[:n]
        floor = scores[part].min()
        part = np.flatnonzero(scores >= floor)  # every row tied with the n-th, so ties resolve by row order
    else:
        part = np.arange(scores.shape[0])
    order = part[np.lexsort((part, -scores[part]))][:n]
    return order


def _top_positive(scores: np.ndarray, n: int) -> np.ndarray:
    """``_top(scores, n)`` without the rows scoring 0 or less, ranking only the rows that score: BM25 gives most
    chunks 0 for a query of rare words (names), and ``_top`` would then sort every chunk tied at 0."""
    rows = np.flatnonzero(scores > 0)
    if n <= 0:
        return np.zeros(0, dtype=np.intp)
    if len(rows) > n:
        sub = scores[rows]
        floor = sub[np.argpartition(-sub, n - 1)[:n]].min()
        rows = rows[sub >= floor]  # every row tied with the n-th, so ties resolve by row order
    return rows[np.lexsort((rows, -scores[rows]))][:n]


class _Slot:
    """One query waiting in a ``_DenseBatcher``: its vector, and its result (or error) once computed."""

    __slots__ = ("vector", "result", "error", "done", "lead")

    def __init__(self, vector: np.ndarray) -> None:
        self.vector = vector
        self.result: np.ndarray | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.lead = False


class _DenseBatcher:
    """Coalesces the dense top-n searches of concurrent threads into one product (module docstring, hot path).

    The first thread to arrive runs a product at once (a lone query is never delayed); threads arriving while it
    runs queue, and when it finishes, the first of them runs the next product for the whole queue (up to
    ``max_batch``). Each query's rows are ranked by float64 sums, so they do not depend on the batch."""

    def __init__(self, run: Callable[[np.ndarray], list[np.ndarray]], max_batch: int = 64) -> None:
        self._run = run
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._queue: list[_Slot] = []
        self._busy = False
        self.products = 0
        self.queries = 0

    def top(self, vector: np.ndarray) -> np.ndarray:
        slot = _Slot(vector)
        with self._lock:
            self._queue.append(slot)
            slot.lead = not self._busy
            self._busy = True
        if not slot.lead:
            slot.done.wait()  # woken with a result, or to lead the next product
        if slot.result is None and slot.error is None:
            self._lead()
        if slot.error is not None:
            raise slot.error
        assert slot.result is not None
        return slot.result

    def _lead(self) -> None:
        with self._lock:
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
        try:
            results = self._run(np.stack([s.vector for s in batch]))
            for s, r in zip(batch, results, strict=True):
                s.result = r
        except BaseException as exc:  # handed to every waiting caller, each re-raises it
            for s in batch:
                s.error = exc
        with self._lock:
            self.products += 1
            self.queries += len(batch)
            if self._queue:
                self._queue[0].lead = True  # the next waiting thread runs the next product
                nxt = self._queue[0]
            else:
                self._busy = False
                nxt = None
        for s in batch:
            s.done.set()
        if nxt is not None:
            nxt.done.set()


class TextIndex:
    """Hybrid BM25 + embedding search over one list of chunks (see the module docstring).

    Contracts: chunk ids are unique; results are deterministic for a given collection, embedder and query
    (whatever ``precision`` the candidate product runs in, and whichever queries share a product);
    thread-safe (the lazy builds are locked, searches only read, concurrent dense products are coalesced).
    """

    def __init__(
        self,
        chunks: Sequence[TextChunk],
        embedder: Embedder | None,
        *,
        name: str = "text",
        cache_dir: str | Path | None = None,
        candidates: int = 50,
        rrf_k: int = RRF_K,
        precision: Literal["auto", "float32", "bfloat16"] = "auto",
        dense: DenseSearch = "auto",
        nprobe: int | None = None,
    ) -> None:
        ids = [c.chunk_id for c in chunks]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise TextSearchError(f"text collection {name!r} lists chunk {dup!r} twice")
        if not chunks:
            raise TextSearchError(f"text collection {name!r} holds no text: "
                                  "ingest a folder, jsonl or dataset with text in it")
        if candidates < 1 or rrf_k < 1:
            raise ValueError(f"candidates and rrf_k must be >= 1, got {candidates} and {rrf_k}")
        if precision not in ("auto", "float32", "bfloat16"):
            raise ValueError(f"precision must be auto, float32 or bfloat16, got {precision!r}")
        if dense not in DENSE_SEARCHES:
            raise ValueError(f"dense must be one of {', '.join(DENSE_SEARCHES)}, got {dense!r}")
        if nprobe is not None and (isinstance(nprobe, bool) or not isinstance(nprobe, int) or nprobe < 1):
            raise ValueError(f"nprobe must be a whole number >= 1, got {nprobe!r}")
        self.chunks: tuple[TextChunk, ...] = tuple(chunks)
        self.by_id = {c.chunk_id: i for i, c in enumerate(self.chunks)}
        self.embedder = embedder
        self.name = name
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.candidates = candidates
        self.rrf_k = rrf_k
        self._lock = threading.Lock()
        self._bm25 = None
        self._matrix: np.ndarray | None = None
        self.precision = precision
        self._bf16: _Bfloat16Product | None = None
        self._bf16_pid: int | None = None
        self._batcher = _DenseBatcher(self._dense_top_block)
        self.dense = dense
        self.nprobe = nprobe
        self._ann: AnnIndex | None = None
        #: Build a missing graph in another process and search exactly until it is written (``AnnBuild``; the
        #: tool server sets it before ``warm``); else a missing graph is built on first use.
        self.ann_background = False
        self._ann_build: AnnBuild | None = None
        # Searches through the graph run one at a time per process: each is ~1 ms of GIL-bound Python and numpy
        # (BM25, fusion), and 16 threads taking turns on the GIL stretched the slowest of them to 3x the median
        # (bench_text_search).
        self._searching = threading.Lock()
        self.fingerprint = self._fingerprint()

    def __len__(self) -> int:
        return len(self.chunks)

    def __repr__(self) -> str:
        emb = self.embedder.name if self.embedder is not None else None
        return f"TextIndex({self.name!r}, {len(self)} chunks, embedder={emb!r})"

    def _fingerprint(self) -> str:
        h = hashlib.sha256(f"v{TEXT_INDEX_VERSION}".encode())
        for c in self.chunks:
            h.update(c.chunk_id.encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
            h.update(c.text.encode("utf-8", "surrogatepass"))
            h.update(b"\x01")
        return h.hexdigest()

    def _stem(self) -> str:
        return f"text__{_slug(self.name)}__{self.fingerprint[:16]}"

    # -- building -------------------------------------------------------------------------------------------------
    def warm(self) -> "TextIndex":
        """Load or build both halves now, so no request pays for them."""
        self._lexical()
        self._dense()
        self._graph()
        return self

    def _lexical(self):
        if self._bm25 is None:
            with self._lock:
                if self._bm25 is None:
                    self._bm25 = self._load_or_build_bm25()
        return self._bm25

    def _load_or_build_bm25(self):
        import bm25s

        where = self.cache_dir / f"{self._stem()}__bm25" if self.cache_dir is not None else None
        if where is not None and (where / "params.index.json").exists():
            try:
                return bm25s.BM25.load(str(where), mmap=False, show_progress=False)
            except (OSError, ValueError) as exc:
                log.warning("ignoring unreadable cached BM25 index %s: %s", where, exc)
        retriever = bm25s.BM25()
        retriever.index(self._token_ids(), show_progress=False)
        if where is not None:
            where.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=where.parent, prefix=where.name, suffix=".tmp"))
            retriever.save(str(tmp), show_progress=False)
            try:
                os.replace(tmp, where)
            except OSError:  # another process saved the same content first: theirs is as good
                import shutil

                shutil.rmtree(tmp, ignore_errors=True)
        return retriever

    def _token_ids(self) -> tuple[list[list[int]], dict[str, int]]:
        """Each chunk's tokens as vocabulary ids, and the vocabulary: what ``bm25s`` builds from token lists, but
        a document holds ints shared through the vocabulary instead of a new string per token, which at 100k
        chunks kept hundreds of MB resident after the build (``bench/bench_bm25_libs.py`` measures it)."""
        vocab: dict[str, int] = {}
        ids = [[vocab.setdefault(t, len(vocab)) for t in tokenize(f"{c.title}\n{c.text}")] for c in self.chunks]
        return ids, vocab

    def _dense(self) -> np.ndarray | None:
        if self.embedder is None:
            return None
        if self._matrix is None:
            with self._lock:
                if self._matrix is None:
                    self._matrix = self._load_or_build_matrix()
        return self._matrix

    def _matrix_path(self) -> Path | None:
        if self.cache_dir is None or self.embedder is None:
            return None
        return self.cache_dir / f"{self._stem()}__{_slug(self.embedder.name)}-{self.embedder.dim}.npy"

    def _load_or_build_matrix(self) -> np.ndarray:
        assert self.embedder is not None
        path = self._matrix_path()
        expected = (len(self.chunks), self.embedder.dim)
        if path is not None and path.exists():
            try:
                cached = np.load(path, mmap_mode="r", allow_pickle=False)
                if cached.shape == expected and cached.dtype == np.float32:
                    return np.asarray(cached)
                log.warning("ignoring cached chunk embeddings %s: shape %s, expected %s", path, cached.shape, expected)
            except (OSError, ValueError) as exc:
                log.warning("ignoring unreadable cached chunk embeddings %s: %s", path, exc)
        texts = [" ".join(f"{c.title}: {c.text}".split())[:MAX_EMBED_CHARS] for c in self.chunks]
        step = 4096
        parts = [np.asarray(self.embedder.embed(texts[i : i + step]), dtype=np.float32)
                 for i in range(0, len(texts), step)]
        matrix = _unit_rows(np.concatenate(parts))
        if matrix.shape != expected:
            raise ValueError(f"embedder {self.embedder.name!r} returned shape {matrix.shape}, expected {expected}")
        if path is not None:
            _save_atomically(path, matrix)
            # mapped from the file, as a restart maps it: its pages shared, and a background HNSW build reads it
            return np.asarray(np.load(path, mmap_mode="r", allow_pickle=False))
        return matrix

    @property
    def uses_ann(self) -> bool:
        """Whether the meaning half takes its candidates from an HNSW graph: ``dense="hnsw"`` (or its older name
        ``"ivf"``), or ``auto`` from ``ANN_MIN_CHUNKS`` chunks; never without an embedder or where the collection
        holds no more chunks than a ranking contributes."""
        if self.embedder is None or self.dense == "exact" or len(self) <= self.depth:
            return False
        return self.dense != "auto" or len(self) >= ANN_MIN_CHUNKS

    def _graph(self) -> AnnIndex | None:
        """The HNSW graph of the chunk matrix (built once, cached beside it), ``None`` when not used."""
        if not self.uses_ann:
            return None
        if self._ann is None and self._ann_build is None:
            matrix = self._dense()
            assert matrix is not None  # uses_ann needs an embedder
            with self._lock:
                if self._ann is None and self._ann_build is None:
                    path = self._matrix_path()
                    where = path.with_name(AnnIndex.file_name(path.stem)) if path is not None else None
                    source = _mapped_from(matrix)
                    if self.ann_background and where is not None and source is not None:
                        found = AnnIndex.view(where, *matrix.shape) if where.exists() else None
                        if found is not None:
                            self._ann = found
                        else:
                            self._ann_build = AnnBuild.start(source, where, *matrix.shape)
                    else:
                        self._ann = AnnIndex.load_or_build(matrix, where)
        if self._ann is None and self._ann_build is not None:
            found = self._ann_build.poll()
            if found is not None:
                with self._lock:
                    if self._ann is None:
                        self._ann = found
                        log.info("%s: the HNSW graph is built; the meaning half reads it from now on", self)
        return self._ann

    @property
    def serving(self) -> str:
        """The meaning half's search now: ``"hnsw"`` or ``"exact"`` (as ``GraphIndex.serving``)."""
        if self._ann is None and self._ann_build is not None:
            self._graph()
        return "hnsw" if self._ann is not None else "exact"

    @property
    def expansion(self) -> int:
        """The graph's search depth per query: ``nprobe`` when given (the setting's older name, from the inverted
        lists the graph replaced), else ``ANN_DEPTH_EXPANSION`` times the ranking's ``depth``; at least twice the
        ``depth`` (the rows taken from the graph)."""
        wanted = self.nprobe if self.nprobe is not None else ANN_DEPTH_EXPANSION * self.depth
        return max(wanted, 2 * self.depth)

    # -- searching ------------------------------------------------------------------------------------------------
    def lexical_scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk for ``query`` (float32, chunk order); zeros when no query word is indexed."""
        retriever = self._lexical()
        ids = retriever.get_tokens_ids(tokenize(query))
        if not ids:
            return np.zeros(len(self.chunks), dtype=np.float32)
        return np.asarray(retriever.get_scores_from_ids(ids), dtype=np.float32)

    def dense_scores(self, queries: Sequence[str]) -> np.ndarray | None:
        """Cosine similarity of every chunk to each query, ``(len(queries), len(chunks))``; ``None`` without an
        embedder. One embedder call and one matrix product for all the queries."""
        matrix = self._dense()
        if matrix is None:
            return None
        assert self.embedder is not None  # _dense returned a matrix
        q = _unit_rows(np.asarray(self.embedder.embed(list(queries)), dtype=np.float32).reshape(len(queries), -1))
        return q @ matrix.T

    def prepare_search(self) -> str | None:
        """Choose and set up the candidate product of this process now rather than on the first query (the
        bfloat16 copy of the matrix, PyTorch's import); the precision in use, ``None`` without an embedder. Per
        process: a forked tool server worker sets up its own."""
        if self._dense() is None:
            return None
        graph = self._graph()
        if graph is not None:
            return f"hnsw (usearch, {len(graph)} chunks, depth {self.expansion})"
        if self._ann_build is not None:
            return f"exact float32 scan (HNSW graph {self._ann_build.state} in the background)"
        return "bfloat16" if self._bfloat16() is not None else "float32"

    def _bfloat16(self) -> _Bfloat16Product | None:
        """The bfloat16 product when ``precision`` asks for it, or (``auto``) where PyTorch is installed, the index
        holds ``AUTO_BF16_ROWS`` chunks and a block of 32 queries runs 1.25x faster than in float32."""
        matrix = self._dense()
        # With a graph the scan only stands in while it is built (or after its build failed): float32, no copy.
        if matrix is None or self.precision == "float32" or len(self) <= self.depth or self.uses_ann:
            return None
        pid = os.getpid()
        if self._bf16_pid != pid:
            with self._lock:
                if self._bf16_pid != pid:
                    self._bf16 = self._choose_bfloat16(matrix)
                    self._bf16_pid = pid
        return self._bf16

    def _choose_bfloat16(self, matrix: np.ndarray) -> _Bfloat16Product | None:
        if self.precision == "auto":
            if len(self) < AUTO_BF16_ROWS:
                return None
            try:
                import torch  # noqa: F401  (the `local` and `test` extras install it; the core does not need it)
            except ImportError:
                return None
        fast = _Bfloat16Product(matrix, None)
        if self.precision == "bfloat16":
            return fast
        probe = np.ascontiguousarray(matrix[:: max(1, len(self) // 32)][:32], dtype=np.float32)
        return fast if fast.best_time(probe) * 1.25 < _CoarseProduct(matrix).best_time(probe) else None

    def _dense_top_block(self, vectors: np.ndarray) -> list[np.ndarray]:
        """For each unit query vector, the ``depth`` best rows by cosine similarity, best first, ties by row order
        (``_top``'s order), ranked by float64 sums."""
        matrix = self._dense()
        assert matrix is not None  # only called with an embedder
        n = matrix.shape[0]
        kk = min(self.depth, n)
        q = np.ascontiguousarray(vectors, dtype=np.float32)
        bf16 = self._bfloat16() if kk < n and len(q) >= BF16_MIN_BLOCK else None
        if bf16 is not None:
            candidates = bf16.candidates(q, kk)
        elif kk < n:
            candidates = _CoarseProduct(matrix).candidates(q, kk)
        else:
            candidates = [np.arange(n)] * len(q)
        out = []
        for cand, vec in zip(candidates, q.astype(np.float64), strict=True):
            exact = _exact_scores(matrix, cand, vec)
            out.append(cand[np.lexsort((cand, -exact))[:kk]])
        return out

    def dense_top(self, queries: Sequence[str]) -> list[np.ndarray] | None:
        """The dense ranking's candidates of each query (``_dense_top_block``), ``None`` without an embedder. One
        embedder call; a single query joins the product of concurrent callers (``_DenseBatcher``)."""
        if self._dense() is None:
            return None
        assert self.embedder is not None
        q = _unit_rows(np.asarray(self.embedder.embed(list(queries)), dtype=np.float32).reshape(len(queries), -1))
        graph = self._graph()
        if graph is not None:  # a query reads a small part of the graph: nothing to share with concurrent callers
            return self._graph_top(graph, q)
        if len(q) == 1:
            return [self._batcher.top(q[0])]
        step = self._batcher.max_batch
        return [rows for i in range(0, len(q), step) for rows in self._dense_top_block(q[i : i + step])]

    def _graph_top(self, graph: AnnIndex, q: np.ndarray) -> list[np.ndarray]:
        """For each unit query vector, the ``depth`` best of the rows the graph finds (``2 * depth`` of them), best
        first, ranked by float64 sums, ties by row order."""
        matrix = self._dense()
        assert matrix is not None
        kk = min(self.depth, len(self))
        out = []
        for cand, vec in zip(graph.candidates(q, min(len(self), 2 * kk), self.expansion), q.astype(np.float64),
                             strict=True):  # fmt: skip
            if len(cand) < kk:  # the graph found fewer rows than asked: every row, exactly
                cand = np.arange(len(self))
            exact = _exact_scores(matrix, cand, vec)
            out.append(cand[np.lexsort((cand, -exact))[:kk]])
        return out

    @property
    def depth(self) -> int:
        """Candidates each ranking contributes for a ``k`` up to ``MAX_TOP_K``."""
        return max(self.candidates, MAX_TOP_K)

    def search(self, query: str, k: int = DEFAULT_TOP_K) -> list[TextHit]:
        """The ``k`` best chunks for ``query`` by RRF of the two rankings; ``TextSearchError`` on bad input."""
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int = DEFAULT_TOP_K) -> list[list[TextHit]]:
        """``search`` for each query, the embeddings of all of them in one call (the answerability check asks
        one query per hidden fact of a whole question set)."""
        checked = [check_query(q, k)[0] for q in queries]
        if not checked:
            return []
        if self.uses_ann:
            with self._searching:
                return self._search_checked(checked, k)
        return self._search_checked(checked, k)

    def _search_checked(self, checked: list[str], k: int) -> list[list[TextHit]]:
        dense = self.dense_top(checked)
        depth = max(self.candidates, k)
        out = []
        for i, q in enumerate(checked):
            scores = self.lexical_scores(q)
            lex = _top_positive(scores, depth)
            # dense rows are ranked to ``self.depth`` >= depth: a prefix of a total order is the top ``depth``
            den = dense[i][:depth] if dense is not None else np.zeros(0, dtype=np.intp)
            out.append(self._fuse(lex, den, k))
        return out

    def _fuse(self, lexical: np.ndarray, dense: np.ndarray, k: int) -> list[TextHit]:
        lrank = {int(r): i + 1 for i, r in enumerate(lexical)}
        drank = {int(r): i + 1 for i, r in enumerate(dense)}
        fused = {r: sum(1.0 / (self.rrf_k + rk[r]) for rk in (lrank, drank) if r in rk)
                 for r in lrank.keys() | drank.keys()}
        best = sorted(fused, key=lambda r: (-round(fused[r], 12), r))[:k]
        return [TextHit(self.chunks[r], fused[r], lrank.get(r), drank.get(r)) for r in best]


# -- collections -----------------------------------------------------------------------------------------------------


def chunks_from_ingest(result: IngestResult, collection: str) -> list[TextChunk]:
    """The chunks of an ingest result (a folder, a jsonl, a Hugging Face dataset read by ``tasks.corpus.ingest``),
    titled by their document; ``TextSearchError`` when the collection holds no text."""
    titles = {d.doc_id: d.title or "" for d in result.documents}
    chunks = [TextChunk(c.chunk_id, c.text, titles.get(c.doc_id, ""), collection)
              for c in result.chunks if c.text.strip()]
    if not chunks:
        skipped = "; ".join(f"{s.source}: {s.reason_code}" for s in result.skipped[:3])
        where = f" (skipped: {skipped})" if skipped else ""
        raise TextSearchError(f"text collection {collection!r} holds no text{where}")
    return chunks


_CACHE: OrderedDict[tuple[str, str, str], TextIndex] = OrderedDict()
_CACHE_LOCK = threading.Lock()
CACHE_SIZE = 8


def cached_text_index(
    chunks: Iterable[TextChunk], embedder: Embedder | None, *, name: str, cache_dir: str | Path | None = None,
    dense: DenseSearch = "auto", nprobe: int | None = None,
) -> TextIndex:
    """The ``TextIndex`` of ``chunks``, built once per process per content, embedder and search settings (the last
    ``CACHE_SIZE`` kept): a tool server and the answerability check over one snapshot share it."""
    index = TextIndex(list(chunks), embedder, name=name, cache_dir=cache_dir, dense=dense, nprobe=nprobe)
    key = (name, index.fingerprint, embedder.name if embedder is not None else "", dense, nprobe)
    with _CACHE_LOCK:
        found = _CACHE.get(key)
        if found is not None:
            _CACHE.move_to_end(key)
            return found
        _CACHE[key] = index
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return index


__all__ = [
    "DEFAULT_TOP_K",
    "MAX_QUERY_CHARS",
    "MAX_TOP_K",
    "TextChunk",
    "TextHit",
    "TextIndex",
    "TextSearchError",
    "cached_text_index",
    "check_query",
    "chunks_from_ingest",
    "passage_window",
    "render_text_hits",
    "tokenize",
]


# -- the tool's observation --------------------------------------------------------------------------------------

#: Characters of one passage shown to the model: about a paragraph, enough to read a fact and its context.
PASSAGE_CHARS = 600


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _clip(text: str, chars: int) -> str:
    """``text`` cut at a word boundary to at most ``chars`` characters, ``...`` marking the cut."""
    if len(text) <= chars:
        return text
    cut = text[: chars - 3]
    space = cut.rfind(" ")
    return (cut[:space] if space > chars - 40 else cut).rstrip(" ,;:") + "..."


def passage_window(query: str, text: str, chars: int = PASSAGE_CHARS) -> str:
    """The part of a chunk a text-search reply shows for ``query``: the whole chunk when it fits in ``chars``,
    else whole sentences around the one sharing most of the query's words (the earliest on a tie; the chunk's
    start when none shares a word), grown forward then backward while they fit, ``...`` marking each cut. A fact
    stated deep in a long chunk is then shown to the model that searched for it, and the IKG answerability check
    (``tasks.env.ikg.fact_found``) judges this same text."""
    flat = " ".join(text.split())
    if len(flat) <= chars:
        return flat
    sentences = _SENTENCE_END.split(flat)
    wanted = set(tokenize(query))  # no stop words: a sentence's own stop words cannot overlap with it
    overlap = [len(wanted.intersection(_TOKEN.findall(s.casefold()))) for s in sentences] if wanted else []
    best = max(range(len(sentences)), key=lambda i: (overlap[i], -i)) if wanted else 0
    lo = hi = best
    room = chars - 6  # the two "..." marks at most

    def length(a: int, b: int) -> int:
        return sum(len(s) for s in sentences[a : b + 1]) + (b - a)

    if length(lo, hi) > room:
        return ("..." if best > 0 else "") + _clip(sentences[best], chars - (3 if best > 0 else 0))
    grown = True
    while grown:
        grown = False
        if hi + 1 < len(sentences) and length(lo, hi + 1) <= room:
            hi, grown = hi + 1, True
        if lo > 0 and length(lo - 1, hi) <= room:
            lo, grown = lo - 1, True
    shown = " ".join(sentences[lo : hi + 1])
    return ("..." if lo > 0 else "") + shown + ("..." if hi < len(sentences) - 1 else "")


def render_text_hits(query: str, hits: Sequence[TextHit], passage_chars: int = PASSAGE_CHARS) -> str:
    """web_search / text_search: the passages for ``query``, best first, each with its title and chunk id (the
    chunk id is the citation a reviewer can look up in the warehouse). Part of the data format, like the KG
    tools' templates."""
    flat = " ".join(query.split())
    if not hits:
        return f'No passages match "{flat}". Try other words: the entity\'s full name and the relation.'
    lines = [f'Passages for "{flat}", best first ({len(hits)}):']
    for i, h in enumerate(hits, 1):
        text = passage_window(flat, h.chunk.text, passage_chars)
        title = f"{h.chunk.title} " if h.chunk.title else ""
        lines.append(f"{i}. {title}[{h.chunk.chunk_id}]: {text}")
    return "\n".join(lines)
