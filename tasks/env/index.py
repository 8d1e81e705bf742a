"""``GraphIndex``: name lookup and embedding search over one domain graph, for the entity tools.

A query is answered in two steps:

1. names: the entity called exactly the query, then every entity whose ``normalize_name`` key equals the
   query's (case, quotes, dashes, spacing);
2. meaning: the rest of the top-k by cosine similarity between the query's embedding and each entity's
   embedding of ``"name: description"``.

Entity embeddings are computed once per graph snapshot and embedder and cached on disk as one ``.npy`` matrix (rows
in ``GraphIndex.names`` order, L2-normalised float32), so a restarted tool server loads them in a fraction of a
second instead of re-embedding the graph. The cached file is memory-mapped read-only, so the processes serving one
snapshot share one copy of it. A build embeds the entities in parts of ``INDEX_PART_ROWS`` rows, several at once
where the embedder is an endpoint (up to its ``max_concurrency`` requests in flight in the process), and saves each
part beside the cache file as it lands: a build stopped by a failing endpoint resumes from the parts it kept, and
one cache file is built once at a time in a process. Top-k runs in two passes: a first pass selects candidates,
then the candidates are ranked by float64 sums. Below ``ANN_MIN_ROWS`` entities the first pass is exact: one matrix
product per chunk of queries, in float32 (NumPy's BLAS) or, where the CPU multiplies bfloat16 much faster (AMX or
AVX-512 BF16: 4-6x here for a block of 16-64 queries against 50k entities), in bfloat16 through PyTorch, with a
margin wide enough that no true top-k row is ever dropped (``bfloat16_margin``). From ``ANN_MIN_ROWS`` entities the
candidates come from an HNSW graph (usearch, ``AnnIndex``; built once on every core, so not reproducibly: two builds
of one matrix may answer differently near ties; cached beside the matrix and memory-mapped, so every worker of a
server reads the same file and gives the same answers): a scan of 200k rows costs tens of ms a query on one core,
the graph well under one, at a recall measured in ``bench/results/ann.json``. See ``GraphIndex.top_k``.

A tool server does not wait for a new snapshot's graph (``ann_background``; minutes at a million rows): it is built
in another process (``AnnBuild``, ``python -m tasks.env.ann_build``) and written beside the matrix atomically, while
the index answers by the exact float32 scan, whose candidates hold every true top-k row (the graph's may miss one).
Each process looks for the file at most once per ``ANN_POLL_S`` and switches between two searches, never during
one; a failed build leaves the scan serving. ``GraphIndex.index_status`` says which search serves.

``HashingEmbedder`` is a deterministic character-trigram embedder with no model behind it: tests and
benchmarks use it, and it is a usable fallback for matching misspelled names when no model is installed.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from gateway.embeddings import Embedder, EmbeddingError
from tasks.graph.kg import KnowledgeGraph

log = logging.getLogger(__name__)

#: How far below the k-th float32 score a candidate is still re-scored in float64. Float32 dot products of
#: unit vectors of a few hundred dimensions are off by at most ~1e-5, so 1e-4 never drops a true top-k row.
RESCORE_MARGIN = 1e-4

#: Bumped whenever ``entity_text`` changes, so cached matrices built from the old texts are not reused.
TEXT_FORMAT_VERSION = 1

MatchKind = Literal["exact", "normalized", "embedding"]

#: How candidates are found: ``"auto"`` reads an HNSW graph (``AnnIndex``) from ``ANN_MIN_ROWS`` rows and below
#: it measures both products on the index's own matrix once per process and keeps the faster (bfloat16 only where
#: PyTorch is installed and the index has ``AUTO_MIN_ROWS`` rows); ``"float32"`` and ``"bfloat16"`` scan every row
#: in that precision at any size; ``"hnsw"`` reads the graph at any size.
SearchPrecision = Literal["auto", "float32", "bfloat16", "hnsw"]
SEARCH_PRECISIONS: tuple[str, ...] = ("auto", "float32", "bfloat16", "hnsw")

#: Below this many entities one float32 product takes well under a millisecond: not worth importing PyTorch.
AUTO_MIN_ROWS = 4096

#: From this many rows ``search="auto"`` takes its candidates from an HNSW graph (usearch, ``AnnIndex``) instead of
#: scanning every row. Measured in ``bench/results/ann.json`` (``names`` set: hashed entity texts, 384 dimensions,
#: one query at a time on one thread, load 2.7-3): the scan and the graph cost the same per query at 2,000 rows
#: (0.062 / 0.054 ms), the graph costs half at 5,000 (0.149 / 0.069 ms), a fifth at 10,000 (0.49 / 0.10 ms) and
#: 1/75 at 200,000 (32.8 / 0.44 ms), at recall@10 >= 0.998 and a build of 0.5 s at 5,000 rows (cached). The
#: entity matcher searches one request at a time, so the per-query cost is the one 32 queued requests add up.
ANN_MIN_ROWS = 5_000
#: HNSW settings (``bench/bench_ann.py`` measured them): links per node (M), search depth while inserting, search
#: depth at query time (more: higher recall, slower), and the stored scalar. bfloat16: half float32's file, and on
#: this machine (AVX-512 BF16, usearch's ``genoa`` kernels) the fastest build: 1M hashed entity texts on two
#: threads in 203 s against float16's 488 s (665 s on one thread), int8's 266 s, at the same recall@10 of the
#: 20 re-ranked candidates (0.998-0.9998 on ``names``, 0.967-0.976 against float16's 0.980 on ``clustered`` at
#: 200k, 0.922 / 0.917 on ``chunks`` at depth 800). A shallower insertion (expansion_add 64 / 40) builds 1.5-3x
#: faster but loses recall on harder data: 0.92 / 0.78 on ``clustered``, 0.85 / 0.80 on ``chunks`` (text search
#: shares these settings), so it stays 128. Without bfloat16 instructions usearch falls back to slower kernels:
#: measure again on such a CPU (docs/benchmarks.md, "Build settings for the cold start").
ANN_CONNECTIVITY = 16
ANN_EXPANSION_ADD = 128
ANN_EXPANSION_SEARCH = 64
ANN_DTYPE = "bf16"
#: Candidates taken from the graph per result asked, then ranked by exact float64 scores: the graph's bfloat16
#: scores may order near-ties wrongly, and the exact re-ranking puts them right.
ANN_CANDIDATES_PER_K = 2
#: Threads inserting rows into a new HNSW graph (0: every core this process may use). More than one is not
#: reproducible (see ``AnnIndex``); two threads built 1M rows 1.4x faster than one here (load 2-3, float16).
ANN_BUILD_THREADS = 0
#: Below this many rows a graph is built on one thread whatever the cores (``ANN_BUILD_THREADS`` set above 0 still
#: rules): there the build is reproducible and takes seconds on one thread (about twice as long as on two cores).
#: Several threads insert in a racy order, and on a small graph of near-identical names an occasional such build
#: misses true neighbours that a one-thread build finds (``tests/test_ann.py``, the misspelt names).
ANN_PARALLEL_MIN_ROWS = 20_000
#: Bumped whenever the HNSW graph is built differently, so cached ones from the old recipe are rebuilt.
ANN_VERSION = 2
#: How often (seconds, at most) an index whose HNSW graph is being built in the background (``AnnBuild``) looks for
#: the finished file: one ``stat`` per check, made by the first search (or ``/health``) after the period.
ANN_POLL_S = 1.0
#: The niceness of a background HNSW build: the searches served meanwhile (the exact scan) come first on the cores.
ANN_BUILD_NICE = 10


def ann_build_threads(rows: int | None = None) -> int:
    """The threads of an HNSW build of ``rows`` rows: ``ANN_BUILD_THREADS``, else one below
    ``ANN_PARALLEL_MIN_ROWS`` rows, else every core this process may run on."""
    if ANN_BUILD_THREADS > 0:
        return ANN_BUILD_THREADS
    if rows is not None and rows < ANN_PARALLEL_MIN_ROWS:
        return 1
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def bfloat16_margin(dim: int) -> float:
    """How far below the k-th bfloat16 score a row must still be re-scored so that no true top-k row is lost.

    Rounding a unit query and a unit row to bfloat16 (unit roundoff ``u = 2**-8``) moves each product term by
    at most ``(2u + u^2) |q_i x_i|``, so the dot product by at most ``2u + u^2`` (Cauchy-Schwarz); the float32
    accumulation adds at most ``dim * 2**-24`` more, and rounding the result back to bfloat16 ``u`` times its
    magnitude (at most ~1). Each approximate score is then within ``b`` of the true one, and a row whose true
    score reaches the true k-th best scores at least the approximate k-th best minus ``2b``. Measured errors on
    unit vectors of 384 dimensions stay near ``0.002``, against ``b ~ 0.012``.
    """
    u = 2.0**-8
    b = (2 * u + u * u) + u * (1 + 3 * u) + dim * 2.0**-24 * (1 + u) ** 2
    return 2 * b + 1e-6


@dataclass(frozen=True, slots=True)
class Match:
    """One entity found for a query: ``how`` says which step found it; ``score`` is the cosine similarity for
    embedding matches and 1.0 for name matches."""

    name: str
    score: float
    how: MatchKind


def entity_text(name: str, description: str, max_chars: int = 1000) -> str:
    """The text embedded for an entity: ``"name: description"`` (just the name when undescribed).

    Whitespace is collapsed (merged LightRAG descriptions hold newlines) and the description is cut at
    ``max_chars``: sentence encoders truncate long inputs anyway, and the bound keeps the cost per entity flat.
    """
    desc = " ".join(description.split())
    if not desc:
        return name
    return f"{name}: {desc[:max_chars]}"


# -- a model-free embedder ------------------------------------------------------------------------------------------


class HashingEmbedder:
    """Character-trigram feature hashing: deterministic, model-free, L2-normalised float32 rows.

    Each text is NFKC-normalised, case-folded, whitespace-collapsed and padded with spaces; every byte trigram
    of its UTF-8 form is hashed to one of ``dim`` buckets with a sign. Trigrams are weighted
    ``1 / (1 + position / decay)``, so the start of a text (an entity's name, in ``entity_text``) counts more
    than the tail of a long description. Texts that share spelling get high cosine similarity, so misspellings
    ("Alan Turnig") still find their entity; meaning is not captured. The hash is a fixed integer function, so
    vectors are identical in every process and on every machine.
    """

    def __init__(self, dim: int = 384, decay: float = 8.0) -> None:
        if dim < 8:
            raise ValueError(f"dim must be >= 8, got {dim}")
        if decay <= 0:
            raise ValueError(f"decay must be > 0, got {decay}")
        self.dim = dim
        self.decay = decay
        self.name = f"hashing-char3-{dim}-d{decay:g}"

    def _one(self, text: str) -> np.ndarray:
        norm = " " + " ".join(unicodedata.normalize("NFKC", text).casefold().split()) + " "
        raw = np.frombuffer(norm.encode("utf-8"), dtype=np.uint8).astype(np.uint64)
        if raw.size < 3:
            raw = np.concatenate([raw, np.full(3 - raw.size, 32, dtype=np.uint64)])
        codes = (raw[:-2] << np.uint64(16)) | (raw[1:-1] << np.uint64(8)) | raw[2:]
        # Multiplicative hash kept to 32 bits, then an xor-shift so the low bits (the bucket) depend on every
        # byte of the trigram; without it similar trigrams pile into the same buckets.
        h = (codes * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)
        h ^= h >> np.uint64(15)
        buckets = (h % np.uint64(self.dim)).astype(np.intp)
        signs = np.where((h >> np.uint64(31)) & np.uint64(1), -1.0, 1.0)
        weights = signs / (1.0 + np.arange(h.size) / self.decay)
        return np.bincount(buckets, weights=weights, minlength=self.dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit rows for ``texts``, hashed 256 texts at a time in one pass of NumPy operations over their joined
        bytes (a cold index build embeds a million entity texts: one text at a time cost ~20 us of NumPy overhead
        each, ~1.5x the batched cost).
        The rows are bit-identical to ``_one``'s: each text's trigrams are hashed and weighted by their position
        in that text, and ``np.bincount`` adds each bucket's weights in the same order as a per-text count."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        step = 256  # texts hashed together: the counts of a slice stay in the CPU's cache
        for i in range(0, len(texts), step):
            out[i : i + step] = self._counts(texts[i : i + step])
        return _unit_rows(out)

    def _counts(self, texts: Sequence[str]) -> np.ndarray:
        """The weighted trigram counts (float64, one row per text) of ``embed``, before normalisation."""
        normed = [(" " + " ".join(unicodedata.normalize("NFKC", t).casefold().split()) + " ").encode("utf-8")
                  for t in texts]
        # a text of fewer than 3 bytes is padded with spaces, as ``_one`` pads it
        normed = [b if len(b) >= 3 else b + b" " * (3 - len(b)) for b in normed]
        lengths = np.fromiter((len(b) for b in normed), dtype=np.int64, count=len(normed))
        raw = np.frombuffer(b"".join(normed), dtype=np.uint8).astype(np.uint64)
        starts = np.zeros(len(normed), dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        grams = lengths - 2  # trigrams per text
        first = np.zeros(len(normed), dtype=np.int64)  # index of each text's first trigram in the flat arrays
        np.cumsum(grams[:-1], out=first[1:])
        row = np.repeat(np.arange(len(normed), dtype=np.int64), grams)
        pos = np.arange(int(grams.sum()), dtype=np.int64) - first[row]  # the trigram's position in its text
        at = starts[row] + pos
        codes = (raw[at] << np.uint64(16)) | (raw[at + 1] << np.uint64(8)) | raw[at + 2]
        h = (codes * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)
        h ^= h >> np.uint64(15)
        buckets = (h % np.uint64(self.dim)).astype(np.int64)
        signs = np.where((h >> np.uint64(31)) & np.uint64(1), -1.0, 1.0)
        weights = signs / (1.0 + pos / self.decay)
        counts = np.bincount(row * self.dim + buckets, weights=weights, minlength=len(normed) * self.dim)
        return counts.reshape(len(normed), self.dim)

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)


# -- the index -----------------------------------------------------------------------------------------------------


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "embedder"


class GraphIndex:
    """Entity lookup for one domain graph (see the module docstring).

    Contracts:

    - ``names[i]`` is the entity of row ``i`` of ``embeddings``; names are sorted.
    - ``match``/``match_many`` never raise for any query string; an empty graph gives no matches.
    - Results are deterministic for a given graph, embedder and query: ties in score are broken by name order.
      From ``ANN_MIN_ROWS`` entities the candidates come from an HNSW graph (``AnnIndex``), built on several
      threads: two builds of the same matrix give different files, whose answers may differ near ties; the file,
      once cached, fixes them for every process and machine that reads it.
    - Thread-safe: the lazy embedding build and the query-embedding cache are locked, and the matrix products
      of concurrent searches run one at a time (each one already uses every core).
    - The cache file is written atomically (temporary file, then rename), so a crash never leaves a truncated
      matrix behind; a file of the wrong shape is ignored and rebuilt. Its name holds the snapshot, the embedder's
      name and dimension and a hash of the embedded texts (``cache_path``). Parts of an unfinished build are kept
      in ``<name>.parts/`` (also written atomically) until the whole matrix is in place.
    """

    def __init__(
        self,
        graph: KnowledgeGraph,
        embedder: Embedder,
        *,
        cache_dir: str | Path | None = None,
        query_cache_size: int = 4096,
        chunk_size: int = 64,
        max_text_chars: int = 1000,
        embed_batch_size: int = 4096,
        search: SearchPrecision = "auto",
        ann_background: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        if search not in SEARCH_PRECISIONS:
            raise ValueError(f"search must be one of {', '.join(SEARCH_PRECISIONS)}, got {search!r}")
        self.search = search
        self._coarse: _CoarseProduct | None = None
        self._ann: AnnIndex | None = None
        self.ann_background = ann_background
        self._clock = clock
        self._ann_build: AnnBuild | None = None
        self._coarse_pid: int | None = None
        self._bf16_bits: np.ndarray | None = None  # share_search
        self.graph = graph
        self.embedder = embedder
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.query_cache_size = query_cache_size
        self.chunk_size = chunk_size
        self.max_text_chars = max_text_chars
        self.embed_batch_size = embed_batch_size
        self.names: tuple[str, ...] = tuple(graph.nodes())
        self._matrix: np.ndarray | None = None
        self._build_lock = threading.Lock()
        # One matrix product at a time: BLAS already spreads one product over every core, and a server's thread
        # pool running dozens of them at once oversubscribes the cores so badly that requests time out.
        self._search_lock = threading.Lock()
        self._qcache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._qlock = threading.Lock()
        self._fingerprint: str | None = None

    # -- identity and cache -------------------------------------------------------------------------------------------
    @property
    def domain(self) -> str:
        return self.graph.domain

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return f"GraphIndex({self.domain!r}, {len(self)} entities, embedder={self.embedder.name!r})"

    def _texts(self) -> list[str]:
        """Every entity's ``entity_text``, in ``names`` order; from the graph's own ``entity_texts`` where it has
        one (``ServedGraph``: straight from its arrays, no ``Entity`` objects made)."""
        made = getattr(self.graph, "entity_texts", None)
        if made is not None:
            return made(self.max_text_chars)
        return [entity_text(e.name, e.description, self.max_text_chars) for e in self.graph.entities()]

    def _known_fingerprint(self) -> str | None:
        """The hash of the embedded texts without making them: kept from an earlier call, or recorded by the graph
        itself (``ServedGraph.text_fingerprint``: written into its cache with its arrays), else ``None``."""
        if self._fingerprint is None:
            recorded = getattr(self.graph, "text_fingerprint", None)
            found = recorded(self.max_text_chars) if recorded is not None else None
            if found:
                self._fingerprint = found
        return self._fingerprint

    def _text_fingerprint(self, texts: list[str]) -> str:
        if self._fingerprint is None:
            self._fingerprint = text_fingerprint(texts)
        return self._fingerprint

    def cache_path(self, texts: list[str] | None = None) -> Path | None:
        """Where the entity matrix is cached: ``<cache_dir>/<snapshot>__<embedder>-<dim>__<texts hash>.npy``.

        The snapshot part is the graph's ``snapshot_id`` (content-addressed), or ``<domain>-adhoc`` for a graph
        built outside the warehouse. The hash of the embedded texts is part of the name too, so a change to
        the text recipe or an ad-hoc graph's content never reuses a stale matrix.
        """
        if self.cache_dir is None:
            return None
        fp = self._known_fingerprint() or self._text_fingerprint(texts if texts is not None else self._texts())
        snap = self.graph.snapshot_id or f"{self.domain}-adhoc"
        emb = f"{_slug(self.embedder.name)}-{self.embedder.dim}"
        return self.cache_dir / f"{_slug(snap)}__{emb}__{fp[:16]}.npy"

    @property
    def embeddings(self) -> np.ndarray:
        """The ``(len(names), dim)`` entity matrix, loaded from the cache or computed (then cached) on first use."""
        if self._matrix is None:
            with self._build_lock:
                if self._matrix is None:
                    self._matrix = self._load_or_build()
        return self._matrix

    def warm(self) -> "GraphIndex":
        """Load or build the entity matrix, and the graph's lazy adjacency and name caches, now: a server
        calls this before taking requests, so no request pays for them (or builds them twice at once)."""
        _ = self.embeddings
        self.ann()
        if self.names:
            self.graph.neighbors(self.names[0])
            self.graph.lookup_all(self.names[0])
        return self

    def prepare_search(self, threads: int | None = None) -> str:
        """Choose (``search="auto"``) and set up the candidate product of this process now rather than on the
        first query: the bfloat16 copy of the matrix, PyTorch's import. Returns the precision in use.

        ``threads`` caps PyTorch's threads for the bfloat16 product (the tool server passes its BLAS limit).
        Per process: a forked tool server worker calls it after the fork, so no PyTorch thread pool crosses a
        fork and each worker times its own product. With an HNSW graph (``uses_ann``) nothing else is set up."""
        ann = self.ann()
        if ann is not None:
            return f"hnsw (usearch {ANN_DTYPE}, {len(ann)} rows, depth {ANN_EXPANSION_SEARCH})"
        precision = self._coarse_product(threads).precision
        if self._ann_build is not None:
            return f"exact {precision} scan (HNSW graph {self._ann_build.state} in the background)"
        return precision

    def share_search(self, cache_file: Path | None = None) -> bool:
        """Make the bfloat16 copy of the matrix now, as plain NumPy bits, where ``prepare_search`` may choose the
        bfloat16 product: the tool server calls this before forking its workers, so they share one copy of its
        pages (read-only, never written) instead of each converting its own, half the matrix's size per worker.
        With ``cache_file`` the bits are memory-mapped from it (written first when missing or of another
        shape): a restart skips the conversion, and the pages are the page cache's, shared by every process.
        No PyTorch is imported here (its threads must not cross a fork). Returns whether a copy is held."""
        import importlib.util

        matrix = self.embeddings
        if self.uses_ann:  # the graph's file is viewed (shared pages); until it is built, the float32 scan
            return False
        if self._bf16_bits is not None or self.search == "float32":
            return self._bf16_bits is not None
        if self.search == "auto" and (matrix.shape[0] < AUTO_MIN_ROWS or importlib.util.find_spec("torch") is None):
            return False
        bits = _mapped_bits(cache_file, matrix.shape) if cache_file is not None else None
        if bits is None:
            bits = bfloat16_bits(matrix)
            if cache_file is not None:
                _save_atomically(cache_file, bits)
                bits = _mapped_bits(cache_file, matrix.shape)
                if bits is None:
                    raise OSError(f"the bfloat16 copy {cache_file} was written but cannot be read back")
        self._bf16_bits = bits
        return True

    @property
    def uses_ann(self) -> bool:
        """Whether candidates come from an HNSW graph: ``search="hnsw"``, or ``auto`` from ``ANN_MIN_ROWS`` rows."""
        return self.search == "hnsw" or (self.search == "auto" and len(self.names) >= ANN_MIN_ROWS)

    def ann_path(self) -> Path | None:
        """Where the HNSW graph is cached: beside the entity matrix's cache file, named after it (a rebuilt matrix
        gets a new graph); ``None`` without a ``cache_dir``."""
        # The texts' hash is kept once the matrix is loaded: no need to make every entity text again for it.
        path = self.cache_path([] if self._fingerprint is not None else None)
        return path.with_name(AnnIndex.file_name(path.stem)) if path is not None else None

    def ann(self) -> AnnIndex | None:
        """The HNSW graph of the entity matrix (viewed from its cache file, or built now and cached), ``None``
        where ``uses_ann`` is false or the graph is empty.

        With ``ann_background`` (the tool server) and a cached matrix, a missing graph is not built here: a process
        builds it (``AnnBuild``), and until its file is written (looked for at most once per ``ANN_POLL_S`` of the
        index's clock) or when the build failed, this returns ``None`` and searches scan every row exactly."""
        if not self.uses_ann or not self.names:
            return None
        if self._ann is None and self._ann_build is not None:
            return self._poll_build()
        if self._ann is None:
            matrix = self.embeddings  # outside the lock: a first use builds the matrix under the same lock
            with self._build_lock:
                if self._ann is None and self._ann_build is None:
                    path = self.ann_path()
                    source = _mapped_from(matrix)
                    if self.ann_background and path is not None and source is not None:
                        found = AnnIndex.view(path, *matrix.shape) if path.exists() else None
                        if found is not None:
                            self._ann = found
                        else:
                            self._ann_build = AnnBuild.start(source, path, *matrix.shape, clock=self._clock)
                    else:
                        self._ann = AnnIndex.load_or_build(matrix, path)
                        log.debug("%s: candidates from an HNSW graph of %d rows", self, len(self._ann))
            if self._ann is None and self._ann_build is not None:
                return self._poll_build()
        return self._ann

    def _poll_build(self) -> AnnIndex | None:
        build = self._ann_build
        found = build.poll() if build is not None else None
        if found is not None:
            with self._build_lock:
                if self._ann is None:
                    self._ann = found
                    log.info("%s: the HNSW graph is built; candidates come from it from now on", self)
        return self._ann

    @property
    def serving(self) -> str:
        """Which search answers now: ``"hnsw"`` (the graph) or ``"exact"`` (every row scanned: below
        ``ANN_MIN_ROWS``, while the graph is built in the background, or after its build failed). Looks for a
        background build's file as a search does (at most once per ``ANN_POLL_S``); loads nothing."""
        if self._ann is None and self._ann_build is not None:
            self._poll_build()
        return "hnsw" if self._ann is not None else "exact"

    def index_status(self) -> dict[str, str]:
        """``serving`` and the state of the HNSW graph: ``"off"`` (not used at this size or setting),
        ``"building"``, ``"ready"`` or ``"failed"`` (with ``error``, the build's one line)."""
        serving = self.serving
        build = self._ann_build
        if serving == "hnsw":
            out = {"serving": serving, "hnsw": "ready"}
        elif build is not None:
            out = {"serving": serving, "hnsw": build.state}
            if build.error is not None:
                out["error"] = build.error
        else:
            out = {"serving": serving, "hnsw": "off" if not self.uses_ann else "not loaded"}
        return out

    def _coarse_product(self, threads: int | None = None) -> "_CoarseProduct":
        pid = os.getpid()
        if self._coarse is None or self._coarse_pid != pid:
            matrix = self.embeddings  # outside the lock: a first use builds the matrix under the same lock
            with self._build_lock:
                if self._coarse is None or self._coarse_pid != pid:
                    # With a graph (used, or being built) the scan only stands in while it is built, or after its
                    # build failed: float32, no bfloat16 copy of the matrix made in every worker for it.
                    search = "float32" if self.uses_ann else self.search
                    self._coarse = _CoarseProduct.choose(matrix, search, threads, self._bf16_bits)
                    self._coarse_pid = pid
                    log.debug("%s: candidate search in %s", self, self._coarse.precision)
        return self._coarse

    def _load_or_build(self) -> np.ndarray:
        """The cached matrix, or the matrix embedded now (resuming from the parts a stopped build kept) and cached.
        One build per cache file at a time in this process: a flow building indexes ahead and a batch task asking
        for the same snapshot wait for each other instead of both embedding every entity.

        Where the graph records the hash of its texts (``_known_fingerprint``: a served graph's cache), a cached
        matrix is found and mapped without making a single entity text: a warm start at a million entities
        spent most of its time making them only to hash them."""
        texts = None if self.cache_dir is not None and self._known_fingerprint() is not None else self._texts()
        path = self.cache_path(texts)
        expected = (len(self.names), self.embedder.dim)
        if path is None:
            return self._compute(texts if texts is not None else self._texts())
        with _build_lock_for(path):
            if path.exists():
                cached = self._map(path, expected)
                if cached is not None:
                    return cached
            if texts is None:
                texts = self._texts()
            # The hashing embedder cannot fail and costs less than writing its parts twice: no parts kept for it.
            parts = None if isinstance(self.embedder, HashingEmbedder) else _parts_dir(path)
            matrix = self._compute(texts, parts)
            _save_atomically(path, matrix)
            if parts is not None:
                shutil.rmtree(parts, ignore_errors=True)  # the whole matrix is in place: the parts are spent
            mapped = self._map(path, expected)
            if mapped is not None:
                return mapped
        return matrix

    def _map(self, path: Path, expected: tuple[int, int]) -> np.ndarray | None:
        """The cached matrix as a read-only memory map, or ``None`` when the file is unreadable or of the wrong
        shape. Mapped, not read: every process serving the snapshot (tool server workers, a restarted server)
        shares the operating system's one copy of the pages, and opening it costs no copy."""
        try:
            cached = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable cached embeddings %s: %s", path, exc)
            return None
        if cached.shape == expected and cached.dtype == np.float32 and cached.flags.c_contiguous:
            return np.asarray(cached)  # a plain ndarray over the mapping: products return ndarrays, not memmaps
        log.warning("ignoring cached embeddings %s: shape %s, expected %s", path, cached.shape, expected)
        return None

    def _compute(self, texts: list[str], parts: Path | None = None) -> np.ndarray:
        """Every text embedded, in parts of ``INDEX_PART_ROWS`` rows (at most ``embed_batch_size``).

        With ``parts`` (a folder beside the cache file) each part is saved there as soon as it is embedded, and a
        part already saved by an earlier, stopped build is read instead of embedded again: an endpoint that fails
        mid-index costs only the parts in flight. Parts run concurrently where the embedder sends requests
        concurrently (``max_in_flight``: an endpoint's ``max_concurrency``), enough of them to fill its slots; a
        local model or the hashing embedder runs them one after the other. A part that fails stops the build
        with one ``EmbeddingError`` line saying how much is kept."""
        dim = self.embedder.dim
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        rows = max(1, min(self.embed_batch_size, INDEX_PART_ROWS))
        out = np.empty((len(texts), dim), dtype=np.float32)
        todo: list[tuple[int, int]] = []
        for start in range(0, len(texts), rows):
            stop = min(start + rows, len(texts))
            kept = _read_part(parts, start, stop, dim) if parts is not None else None
            if kept is None:
                todo.append((start, stop))
            else:
                out[start:stop] = kept
        if parts is not None and len(todo) < -(-len(texts) // rows):
            log.info("%s: resuming the index build, %d of %d entities already embedded", self, len(texts) - sum(
                b - a for a, b in todo), len(texts))

        saved: list[int] = []  # rows embedded (and saved) by this build

        def one(start: int, stop: int) -> None:
            vecs = np.asarray(self.embedder.embed(texts[start:stop]), dtype=np.float32)
            if vecs.shape != (stop - start, dim):
                raise ValueError(f"embedder {self.embedder.name!r} returned shape {vecs.shape}, "
                                 f"expected ({stop - start}, {dim})")
            vecs = _unit_rows(vecs)
            if parts is not None:
                _write_part(parts, start, stop, vecs)
            out[start:stop] = vecs
            saved.append(stop - start)

        try:
            _run_parts(one, todo, _parts_at_once(self.embedder, rows))
        except EmbeddingError as exc:
            done = len(texts) - sum(b - a for a, b in todo) + sum(saved)
            kept = (f"{done} of {len(texts)} entities embedded and kept for the next run" if parts is not None
                    else f"{len(texts)} entities, nothing kept without a cache_dir")
            raise EmbeddingError(f"building the {self.domain!r} entity index stopped ({kept}): "
                                 f"{_one_line(exc)}") from None
        return out

    # -- names ---------------------------------------------------------------------------------------------------------
    def resolve(self, name: str) -> str | None:
        """The entity called ``name``, else the best entity with the same normalised name, else ``None``."""
        return self.graph.lookup(name)

    def name_matches(self, query: str) -> list[Match]:
        """Entities found by name alone: the exact one first, then normalised-name matches (most neighbours first)."""
        out: list[Match] = []
        if query in self.graph:
            out.append(Match(query, 1.0, "exact"))
        out.extend(Match(n, 1.0, "normalized") for n in self.graph.lookup_all(query) if n != query)
        return out

    # -- vectors ---------------------------------------------------------------------------------------------------------
    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for ``texts`` (one embedder call for all cache misses); repeated texts hit an LRU cache,
        which matters in RL rollouts where many samples ask for the same names."""
        out = np.empty((len(texts), self.embedder.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        with self._qlock:
            for i, t in enumerate(texts):
                vec = self._qcache.get(t)
                if vec is None:
                    missing.setdefault(t, []).append(i)
                else:
                    self._qcache.move_to_end(t)
                    out[i] = vec
        if missing:
            todo = list(missing)
            vecs = _unit_rows(np.asarray(self.embedder.embed(todo), dtype=np.float32).reshape(len(todo), -1))
            with self._qlock:
                for t, vec in zip(todo, vecs):
                    for i in missing[t]:
                        out[i] = vec
                    if self.query_cache_size > 0:
                        self._qcache[t] = vec
                        self._qcache.move_to_end(t)
                while len(self._qcache) > self.query_cache_size:
                    self._qcache.popitem(last=False)
        return out

    def top_k(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` rows of ``embeddings`` for each query vector: ``(indices, scores)``, both ``(Q, k')``
        with ``k' = min(k, len(names))``, best first, ties by row (name) order; scores are float64.

        ``vectors`` must be unit rows of the embedder's dimension. Two passes:

        1. candidates: from ``ANN_MIN_ROWS`` rows (``uses_ann``), the ``ANN_CANDIDATES_PER_K * k`` rows an HNSW
           graph finds (``AnnIndex``: approximate, a true top-k row may be missed; recall@10 against the exact
           ranking is measured in ``bench/results/ann.json``); below it, exact: one matrix product per chunk of
           ``chunk_size`` queries, in float32 (NumPy's BLAS) or bfloat16 (PyTorch; see ``search``), then every
           row whose approximate score is within the product's margin of the k-th best approximate score:
           ``RESCORE_MARGIN`` for float32, ``bfloat16_margin`` for bfloat16 (a bound on the rounding, so a true
           top-k row is never left out);
        2. ranking: the candidates' scores recomputed in float64, one independent sum per row.

        The second pass is what makes results independent of batching and of the first pass's precision: BLAS
        picks different kernels for one query and for a block of queries, so approximate scores differ in the
        last bits and near-ties could swap between a batched server call and a single direct call. The float64
        per-row sums do not depend on which other queries or candidates are computed alongside.
        """
        matrix = self.embeddings
        q = np.ascontiguousarray(np.atleast_2d(np.asarray(vectors, dtype=np.float32)))
        n = matrix.shape[0]
        kk = max(0, min(k, n))
        idx_out = np.empty((q.shape[0], kk), dtype=np.intp)
        score_out = np.empty((q.shape[0], kk), dtype=np.float64)
        if kk == 0 or q.shape[0] == 0:
            return idx_out, score_out
        if q.shape[1] != matrix.shape[1]:
            raise ValueError(f"query vectors have dimension {q.shape[1]}, the index has {matrix.shape[1]}")
        q64 = q.astype(np.float64)
        ann = self.ann() if kk < n else None
        coarse = self._coarse_product() if kk < n and ann is None else None
        for start in range(0, q.shape[0], self.chunk_size):
            block = q[start : start + self.chunk_size]
            if ann is not None:
                candidates = ann.candidates(block, min(n, ANN_CANDIDATES_PER_K * kk))
            elif coarse is None:
                candidates = [np.arange(n)] * len(block)
            else:
                with self._search_lock:
                    candidates = coarse.candidates(block, kk)
            for j, cand in enumerate(candidates):
                if len(cand) < kk:  # the graph found fewer rows than asked: every row, exactly
                    cand = np.arange(n)
                exact = _exact_scores(matrix, cand, q64[start + j])
                # lexsort: last key is primary -> score descending, then row index ascending.
                order = np.lexsort((cand, -exact))[:kk]
                idx_out[start + j] = cand[order]
                score_out[start + j] = exact[order]
        return idx_out, score_out

    def similarities(self, query: str, candidates: Sequence[str]) -> np.ndarray:
        """Cosine similarity (float64) between ``query`` and each candidate text, all embedded through the
        query cache."""
        if not candidates:
            return np.zeros(0, dtype=np.float64)
        vecs = self.embed_queries([query, *candidates]).astype(np.float64)
        return (vecs[1:] * vecs[0]).sum(axis=1)  # per-row sums: independent of how many candidates there are

    # -- matching -------------------------------------------------------------------------------------------------------
    def match(self, query: str, k: int = 5) -> list[Match]:
        """Up to ``k`` entities for ``query``: name matches first, then the nearest by embedding."""
        return self.match_many([query], k)[0]

    def match_many(self, queries: Sequence[str], k: int = 5) -> list[list[Match]]:
        """``match`` for many queries with one embedder call and one batched top-k search.

        Queries whose name matches already fill ``k`` are not embedded at all.
        """
        if k < 1:
            return [[] for _ in queries]
        by_name = [self.name_matches(q)[:k] for q in queries]
        need = [i for i, hits in enumerate(by_name) if len(hits) < k]
        results = [list(hits) for hits in by_name]
        if not need or not self.names:
            return results
        extra = max(len(by_name[i]) for i in need)
        vecs = self.embed_queries([queries[i] for i in need])
        idx, scores = self.top_k(vecs, k + extra)
        for row, i in enumerate(need):
            taken = {m.name for m in results[i]}
            for j, s in zip(idx[row], scores[row]):
                if len(results[i]) >= k:
                    break
                name = self.names[j]
                if name not in taken:
                    results[i].append(Match(name, float(s), "embedding"))
        return results


#: Rows re-scored at a time: a query whose scores all tie (an empty or unknown text embeds to a constant vector)
#: makes every row a candidate, and its float64 copy is made a slice at a time instead of all at once.
RESCORE_ROWS = 8192


def _mapped_from(matrix: np.ndarray) -> Path | None:
    """The ``.npy`` file ``matrix`` is memory-mapped from (``np.load(mmap_mode="r")``), else ``None``."""
    base = matrix
    while base is not None and not isinstance(base, np.memmap):
        base = getattr(base, "base", None)
    name = getattr(base, "filename", None)
    return Path(name) if name else None


def _exact_scores(matrix: np.ndarray, rows: np.ndarray, q64: np.ndarray) -> np.ndarray:
    """float64 dot products of ``q64`` with ``matrix[rows]``, one independent sum per row."""
    if len(rows) <= RESCORE_ROWS:
        return (matrix[rows].astype(np.float64) * q64).sum(axis=1)
    return np.concatenate([(matrix[rows[i : i + RESCORE_ROWS]].astype(np.float64) * q64).sum(axis=1)
                           for i in range(0, len(rows), RESCORE_ROWS)])


class _CoarseProduct:
    """The first pass of ``GraphIndex.top_k``: approximate scores of a block of queries against every row, and
    the rows within ``margin`` of each query's k-th best approximate score."""

    precision = "float32"

    def __init__(self, matrix: np.ndarray) -> None:
        self.matrix = matrix
        self.margin = RESCORE_MARGIN

    @staticmethod
    def choose(matrix: np.ndarray, search: str, threads: int | None, bits: np.ndarray | None = None) -> "_CoarseProduct":
        if search == "float32":
            return _CoarseProduct(matrix)
        if search == "bfloat16":
            return _Bfloat16Product(matrix, threads, bits)
        if matrix.shape[0] < AUTO_MIN_ROWS:
            return _CoarseProduct(matrix)
        try:
            import torch  # noqa: F401  (the `local` and `test` extras install it; the core does not need it)
        except ImportError:
            return _CoarseProduct(matrix)
        plain, fast = _CoarseProduct(matrix), _Bfloat16Product(matrix, threads, bits)
        # A block of 32 queries is what a busy server batches. bfloat16 must win clearly: CPUs without
        # bfloat16 units emulate it, slower than float32.
        probe = np.ascontiguousarray(matrix[:: max(1, matrix.shape[0] // 32)][:32], dtype=np.float32)
        return fast if fast.best_time(probe) * 1.25 < plain.best_time(probe) else plain

    def best_time(self, block: np.ndarray, repeats: int = 3) -> float:
        import time

        self.candidates(block, 10)  # first call: page in the matrix, build kernels
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            self.candidates(block, 10)
            best = min(best, time.perf_counter() - started)
        return best

    def candidates(self, block: np.ndarray, kk: int) -> list[np.ndarray]:
        """For each query of ``block`` (unit float32 rows), the row ids to re-score exactly, ascending;
        ``kk`` < the number of rows."""
        scores = block @ self.matrix.T
        n = scores.shape[1]
        out = []
        for row in scores:
            # argpartition on each contiguous row: measured 1.4-2x faster on 2 cores than one argpartition of
            # the whole block along axis 1.
            top = np.argpartition(row, n - kk)[n - kk :]
            out.append(np.flatnonzero(row >= row[top].min() - self.margin))
        return out


class _Bfloat16Product(_CoarseProduct):
    """``_CoarseProduct`` in bfloat16 through PyTorch (AMX / AVX-512 BF16 kernels where the CPU has them), with
    ``bfloat16_margin``: a copy of the matrix in bfloat16 (half the float32 size), this process's own or, with
    ``bits`` (``GraphIndex.share_search``, made before a fork), a view of pages shared with the other workers."""

    precision = "bfloat16"

    def __init__(self, matrix: np.ndarray, threads: int | None, bits: np.ndarray | None = None) -> None:
        import torch

        if threads is not None:
            torch.set_num_threads(max(1, threads))
        self.matrix = matrix
        self.margin = bfloat16_margin(matrix.shape[1])
        self._torch = torch
        if bits is not None and bits.shape == matrix.shape:
            # int16 -> bfloat16 is a reinterpretation of the same 16 bits: no copy, the pages stay shared. The
            # tensor is only ever read, so a read-only mapping is fine (PyTorch warns about it all the same).
            import warnings

            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
                rows = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
        else:
            rows = torch.empty(matrix.shape, dtype=torch.bfloat16)
            step = 65536  # converted in slices: the source may be a read-only memory map, never copied whole
            for i in range(0, matrix.shape[0], step):
                rows[i : i + step] = torch.from_numpy(np.array(matrix[i : i + step], dtype=np.float32))
        self._rows_t = rows.T

    def candidates(self, block: np.ndarray, kk: int) -> list[np.ndarray]:
        torch = self._torch
        with torch.inference_mode():
            scores = (torch.from_numpy(np.array(block, dtype=np.float32)).to(torch.bfloat16) @ self._rows_t).float()
            floor = torch.topk(scores, kk, dim=1, sorted=False).values.min(dim=1).values - self.margin
            rows, cols = torch.nonzero(scores >= floor[:, None], as_tuple=True)
        rows_np, cols_np = rows.numpy(), cols.numpy().astype(np.intp)
        bounds = np.searchsorted(rows_np, np.arange(len(block) + 1))
        return [cols_np[bounds[i] : bounds[i + 1]] for i in range(len(block))]


class AnnIndex:
    """An HNSW graph (usearch) over unit rows: the first pass of a search from ``ANN_MIN_ROWS`` rows, for the entity
    index and the meaning half of text search (``tasks.env.text_search``).

    Keys are row numbers. The graph is built on ``ANN_BUILD_THREADS`` threads (every core the process may use; one
    below ``ANN_PARALLEL_MIN_ROWS`` rows), which insert rows in a racy order: two builds of the same matrix give
    different files (on one thread they would be identical, byte for byte, at 1.4x the build time on two cores),
    with the same measured recall but answers that may differ near ties (two builds of 200k rows: the graph's own
    top 10 differed for 0.8% / 5.2% of ``names`` / ``clustered`` queries, ``bench/results/ann.json``). A graph is
    therefore built once per snapshot and cached: every worker of a server views the same file, so one server
    answers a query the same way wherever it lands, and a restart reuses the file rather than rebuilding it. A
    search reads only the query and the graph, so a query's candidates depend neither on the other queries of a
    request nor on the process. The file is viewed (memory-mapped, ``Index.restore(view=True)``), not read: the
    processes serving one snapshot share its pages, and opening it costs no copy. Candidates are approximate (a true
    neighbour can be missed: ``bench/results/ann.json`` measures recall@10 against the exact ranking); callers rank
    them by exact float64 scores. A cache file is replaced (a new file renamed over it), never rewritten in place: a
    process viewing the old one keeps reading its pages. Searches of one index run one at a time (usearch's Python
    search shares per-thread scratch space between callers), each well under a millisecond.
    """

    def __init__(self, index, rows: int, dim: int, path: Path | None = None) -> None:
        self._index = index
        self.rows = rows
        self.dim = dim
        self.path = path
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self.rows

    @staticmethod
    def file_name(stem: str) -> str:
        """The cache file of an index built from the matrix cached as ``<stem>.npy``: its settings are in the name,
        so other settings never reuse it."""
        return (f"{stem}__hnsw-{ANN_DTYPE}-m{ANN_CONNECTIVITY}-a{ANN_EXPANSION_ADD}-v{ANN_VERSION}.usearch")

    @classmethod
    def build(cls, matrix: np.ndarray, threads: int | None = None) -> "AnnIndex":
        """The graph of ``matrix``'s rows, inserted on ``threads`` threads (``ann_build_threads(rows)`` by default)."""
        from usearch.index import Index

        rows, dim = matrix.shape
        threads = threads or ann_build_threads(rows)
        index = Index(ndim=dim, metric="ip", dtype=ANN_DTYPE, connectivity=ANN_CONNECTIVITY,
                      expansion_add=ANN_EXPANSION_ADD, expansion_search=ANN_EXPANSION_SEARCH)
        step = 65536  # added a slice at a time: the source may be a read-only memory map, never copied whole
        for i in range(0, rows, step):
            part = np.ascontiguousarray(matrix[i : i + step], dtype=np.float32)
            index.add(np.arange(i, i + len(part), dtype=np.uint64), part, threads=threads)
        return cls(index, rows, dim)

    def save(self, path: Path) -> None:
        """Write the graph to ``path`` atomically: a temporary file in the same folder, then renamed over it (a
        process viewing an older file there keeps reading that file's pages)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
        os.close(fd)
        try:
            self._index.save(tmp)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load_or_build(cls, matrix: np.ndarray, path: Path | None) -> "AnnIndex":
        """The graph of ``matrix`` viewed from ``path``, or built now (then saved there atomically and viewed) when
        the file is missing, unreadable or not this matrix's size; without a path, built in memory."""
        rows, dim = matrix.shape
        if path is not None and path.exists():
            found = cls.view(path, rows, dim)
            if found is not None:
                return found
        built = cls.build(matrix)
        if path is None:
            return built
        built.save(path)
        viewed = cls.view(path, rows, dim)
        if viewed is None:
            raise OSError(f"the HNSW index {path} was written but cannot be viewed back")
        return viewed

    @classmethod
    def view(cls, path: Path, rows: int, dim: int) -> "AnnIndex | None":
        """The index saved at ``path``, memory-mapped read-only; ``None`` (with a warning) when unreadable or not
        an index of ``rows`` rows of ``dim`` dimensions in this module's settings."""
        from usearch.index import Index

        try:
            index = Index.restore(str(path), view=True, expansion_search=ANN_EXPANSION_SEARCH)
        except (OSError, RuntimeError, ValueError) as exc:
            log.warning("ignoring unreadable HNSW index %s: %s", path, exc)
            return None
        if index is None or len(index) != rows or index.ndim != dim or index.dtype.name.lower() != ANN_DTYPE \
                or index.connectivity != ANN_CONNECTIVITY:
            log.warning("ignoring HNSW index %s: it is not an index of %d rows of %d dimensions", path, rows, dim)
            return None
        return cls(index, rows, dim, path)

    def candidates(self, vectors: np.ndarray, count: int, expansion: int | None = None) -> list[np.ndarray]:
        """For each unit query row, the row numbers of (about) its ``count`` most similar rows, ascending.
        ``expansion``: the search depth (``ANN_EXPANSION_SEARCH`` unless given; at least ``count``)."""
        q = np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)
        count = max(1, min(count, self.rows))
        depth = max(count, expansion if expansion is not None else ANN_EXPANSION_SEARCH)
        with self._lock:
            self._index.expansion_search = depth
            found = self._index.search(q, count, threads=1)
        keys = np.asarray(found.keys).reshape(len(q), -1)
        # one query gives one ``Matches`` (keys found only), a block ``BatchMatches`` (padded, with counts)
        counts = np.asarray(found.counts).reshape(len(q)) if hasattr(found, "counts") else [keys.shape[1]]
        return [np.sort(keys[i, : counts[i]].astype(np.intp)) for i in range(len(q))]


def _lock_file(path: Path) -> Path:
    """The lock a background build of the HNSW file ``path`` holds while it runs (``AnnBuild``)."""
    return path.with_name(path.name + ".lock")


def _failed_file(path: Path) -> Path:
    """Where a background build of ``path`` that ended without it says why, in one line (``AnnBuild``)."""
    return path.with_name(path.name + ".failed")


def _try_lock(path: Path, exclusive: bool) -> int | None:
    """An open descriptor of ``path`` (created if missing) holding its ``flock``, or ``None`` when another open
    file holds it exclusively (or, for ``exclusive``, at all)."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _claim_failure(path: Path, line: str) -> bool:
    """Write ``line`` to the failure file of ``path`` unless one exists: ``True`` for the one process that wrote it
    (the one that logs it; the others only read it)."""
    try:
        fd = os.open(_failed_file(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(line + "\n")
    return True


def _read_failure(path: Path) -> str | None:
    try:
        return _failed_file(path).read_text(encoding="utf-8").strip() or "the HNSW build failed"
    except FileNotFoundError:
        return None


def _builder_argv(matrix: Path, path: Path, lock_fd: int, threads: int) -> list[str]:
    """The command of a background HNSW build (``python -m tasks.env.ann_build``)."""
    return [sys.executable, "-m", "tasks.env.ann_build", "--matrix", str(matrix), "--out", str(path),
            "--lock-fd", str(lock_fd), "--threads", str(threads), "--nice", str(ANN_BUILD_NICE)]


class AnnBuild:
    """An HNSW graph (``AnnIndex``) being built in another process, and the file it will be viewed from.

    A new snapshot's server answers before its graph exists: ``start`` runs ``python -m tasks.env.ann_build`` (a
    process, not a thread: the build would share this process's GIL with the requests) at ``ANN_BUILD_NICE``,
    which writes the graph beside the matrix atomically (temporary file, then rename). Meanwhile the index searches
    by the exact scan, and ``poll`` (at most once per ``poll_s`` of ``clock``, one ``stat``) views the file once it
    is there. Every process serving the snapshot (the forked workers of a server) polls on its own.

    The outcome is read from files beside the graph's, so any process can tell it: ``<graph>.lock`` is held
    (``flock``, exclusively) by the build for its whole life (the starting process takes it and hands the
    descriptor to the child, so the lock is held from before the child runs); ``<graph>.failed`` holds one line
    when the build failed. A build that raised writes that line itself and logs it; one that died without a word
    (killed) is noticed by the first process that finds the lock free and no graph, which writes and logs the line.
    Either way the index keeps its exact scan and ``error`` says why. A second ``start`` while a build holds the
    lock (a server started twice, the cold start's early build and the server's index) joins that build."""

    def __init__(self, path: Path, rows: int, dim: int, *, clock: Callable[[], float] = time.monotonic,
                 poll_s: float = ANN_POLL_S, process: subprocess.Popen[bytes] | None = None) -> None:
        self.path = path
        self.rows = rows
        self.dim = dim
        self.clock = clock
        self.poll_s = poll_s
        self.process = process  # only in the process that started the build
        self.error: str | None = None
        self._ready: AnnIndex | None = None
        self._checked = clock()
        self._lock = threading.Lock()

    @classmethod
    def start(cls, matrix_path: Path, path: Path, rows: int, dim: int, *, threads: int = 0,
              clock: Callable[[], float] = time.monotonic, poll_s: float = ANN_POLL_S) -> "AnnBuild":
        """Build the graph of the matrix cached at ``matrix_path`` into ``path`` in a new process, or join the
        build already running there. An unusable file at ``path`` (``AnnIndex.view`` refused it) is removed
        first, and so is the failure line of an earlier build."""
        from gateway.children import popen

        fd = _try_lock(_lock_file(path), exclusive=True)
        if fd is None:  # a build is running: wait for its file
            return cls(path, rows, dim, clock=clock, poll_s=poll_s)
        try:
            if path.exists():  # written by a build that ended since the caller looked, or not this matrix's
                found = AnnIndex.view(path, rows, dim)
                if found is not None:
                    done = cls(path, rows, dim, clock=clock, poll_s=poll_s)
                    done._ready = found
                    return done
                path.unlink()
            _failed_file(path).unlink(missing_ok=True)
            env = dict(os.environ)
            root = str(Path(__file__).resolve().parents[2])  # the child imports this copy of the project
            env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
            # the threads decided here (``ann_build_threads``), where the caller's settings are, not in the child
            process = popen(_builder_argv(matrix_path, path, fd, threads or ann_build_threads(rows)), pass_fds=(fd,),
                            env=env)
        finally:
            os.close(fd)  # the child holds the lock now (the same open file), until it exits
        log.info("building the HNSW graph of %d rows in the background (process %d); searching by the exact scan "
                 "until %s is written", rows, process.pid, path.name)  # fmt: skip
        return cls(path, rows, dim, clock=clock, poll_s=poll_s, process=process)

    @property
    def state(self) -> str:
        """``"building"`` or ``"failed"``."""
        return "failed" if self.error is not None else "building"

    def poll(self, force: bool = False) -> AnnIndex | None:
        """The graph, viewed from its file, once the build has written it; ``None`` while it runs, after it failed,
        and between checks (one every ``poll_s`` unless ``force``; a thread finding another one checking does not
        wait for it)."""
        if self._ready is not None or self.error is not None:
            return self._ready
        now = self.clock()
        if not force and now - self._checked < self.poll_s:
            return None
        if not self._lock.acquire(blocking=False):
            return None
        try:
            self._checked = now
            return self._check()
        finally:
            self._lock.release()

    def _check(self) -> AnnIndex | None:
        if self.path.exists():
            return self._view()
        failed = _read_failure(self.path)
        if failed is None:
            fd = _try_lock(_lock_file(self.path), exclusive=False)
            if fd is None:
                return None  # still building
            os.close(fd)
            # The lock is free: the build has ended. It renames the graph into place before it exits, so a file
            # missing now is missing for good.
            if self.path.exists():
                return self._view()
            failed = _read_failure(self.path)
            if failed is None:
                line = (f"the background HNSW build of {self.path.name} ended without writing it (killed?); "
                        "searches stay on the exact scan")
                if _claim_failure(self.path, line):
                    log.error("%s", line)
                failed = _read_failure(self.path) or line
        self.error = failed
        return None

    def _view(self) -> AnnIndex | None:
        found = AnnIndex.view(self.path, self.rows, self.dim)
        if found is None:
            line = f"the background HNSW build wrote {self.path.name}, which cannot be viewed; searching exactly"
            if _claim_failure(self.path, line):
                log.error("%s", line)
            self.error = line
        return found

    def wait(self, timeout_s: float | None = None) -> None:
        """Block until the build process started here ends (tests and benchmarks); nothing for a joined build."""
        if self.process is not None:
            self.process.wait(timeout_s)


#: Rows embedded and saved together while an index is built: what a build stopped mid-way keeps for the next
#: one (16 requests of 64 texts to an endpoint).
INDEX_PART_ROWS = 1024

_BUILD_LOCKS: dict[str, threading.Lock] = {}
_BUILD_LOCKS_LOCK = threading.Lock()


def _build_lock_for(path: Path) -> threading.Lock:
    """The process-wide lock of one cache file: the indexes of one snapshot and embedder built once at a time."""
    with _BUILD_LOCKS_LOCK:
        return _BUILD_LOCKS.setdefault(str(path), threading.Lock())


def _parts_dir(path: Path) -> Path:
    """Where the parts of the matrix cached at ``path`` are kept while it is built: ``<name>.parts/``."""
    return path.with_name(path.stem + ".parts")


def _part_file(parts: Path, start: int, stop: int) -> Path:
    return parts / f"{start:010d}-{stop:010d}.npy"


def _read_part(parts: Path, start: int, stop: int, dim: int) -> np.ndarray | None:
    """Rows ``start:stop`` saved by an earlier build, or None (absent, unreadable or of the wrong shape)."""
    f = _part_file(parts, start, stop)
    if not f.exists():
        return None
    try:
        rows = np.load(f, allow_pickle=False)
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable index part %s: %s", f, exc)
        return None
    return rows if rows.shape == (stop - start, dim) and rows.dtype == np.float32 else None


def _write_part(parts: Path, start: int, stop: int, rows: np.ndarray) -> None:
    """Save one part atomically (temporary file, then rename): a crash never leaves half a part behind."""
    _save_atomically(_part_file(parts, start, stop), rows)


def _parts_at_once(embedder: Embedder, rows: int) -> int:
    """Parts to embed concurrently: enough to fill an endpoint's ``max_in_flight`` requests of ``batch_size``
    texts (one for an embedder without them, which gains nothing from running parts side by side)."""
    in_flight = int(getattr(embedder, "max_in_flight", 1) or 1)
    per_request = int(getattr(embedder, "batch_size", rows) or rows)
    requests_per_part = -(-rows // max(1, per_request))
    return max(1, -(-in_flight // requests_per_part))


def _run_parts(one, todo: list[tuple[int, int]], at_once: int) -> None:
    """``one(start, stop)`` for every part, ``at_once`` at a time. On a failure no new part starts; the parts
    already running finish (and are saved) before the first error is raised."""
    if at_once <= 1 or len(todo) <= 1:
        for start, stop in todo:
            one(start, stop)
        return
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(at_once, len(todo)),
                                               thread_name_prefix="index-build") as pool:
        futures = [pool.submit(one, a, b) for a, b in todo]
        done, _ = concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_EXCEPTION)
        failed = next((f for f in futures if f.done() and not f.cancelled() and f.exception() is not None), None)
        if failed is not None:
            for f in futures:
                f.cancel()
            concurrent.futures.wait(futures)
            raise failed.exception()  # type: ignore[misc]


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def bfloat16_bits(matrix: np.ndarray, step: int = 65536) -> np.ndarray:
    """The bits of ``matrix`` (finite float32) rounded to bfloat16, to nearest with ties to even as PyTorch
    rounds, as a ``uint16`` array; converted a slice at a time (the source may be a memory map)."""
    out = np.empty(matrix.shape, dtype=np.uint16)
    for i in range(0, matrix.shape[0], step):
        b = np.ascontiguousarray(matrix[i : i + step], dtype=np.float32).view(np.uint32)
        out[i : i + step] = (b + (np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16)
    return out


def _mapped_bits(path: Path, shape: tuple[int, ...]) -> np.ndarray | None:
    """The bfloat16 bits cached in ``path``, memory-mapped read-only, or ``None`` when missing or unusable."""
    try:
        bits = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError):
        return None
    if bits.shape != tuple(shape) or bits.dtype != np.uint16:
        return None
    return np.asarray(bits)


def _save_atomically(path: Path, array: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, array, allow_pickle=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def text_fingerprint(texts: Sequence[str]) -> str:
    """The hash of the embedded texts that names an entity matrix's cache file (``GraphIndex.cache_path``), with
    ``TEXT_FORMAT_VERSION`` in it; a served graph records it in its cache (``tasks.env.served``)."""
    h = hashlib.sha256(f"v{TEXT_FORMAT_VERSION}".encode())
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


def _unit_rows(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return x / norms


__all__ = ["ANN_MIN_ROWS", "AnnIndex", "GraphIndex", "HashingEmbedder", "Match", "SEARCH_PRECISIONS",
           "TEXT_FORMAT_VERSION", "bfloat16_bits", "bfloat16_margin", "entity_text", "text_fingerprint"]
