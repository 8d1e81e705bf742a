"""``GraphIndex``: name lookup and embedding search over one domain graph, for the entity tools.

A query is answered in two steps:

1. names: the entity called exactly the query, then every entity whose ``normalize_name`` key equals the
   query's (case, quotes, dashes, spacing);
2. meaning: the rest of the top-k by cosine similarity between the query's embedding and each entity's
   embedding of ``"name: description"``.

Entity embeddings are computed once per graph snapshot and embedder and cached on disk as one ``.npy`` matrix
(rows in ``GraphIndex.names`` order, L2-normalised float32), so a restarted tool server loads them in a
fraction of a second instead of re-embedding the graph. The cached file is memory-mapped read-only, so the
processes serving one snapshot share one copy of it. Top-k is an exact search: one matrix product per chunk
of queries, then ``argpartition`` per row. Exact is fast enough at the sizes hopforge builds (tens of thousands
of entities per domain, see ``bench/bench_tools.py``) and keeps results reproducible, which an approximate
index would not.

``HashingEmbedder`` is a deterministic character-trigram embedder with no model behind it: tests and
benchmarks use it, and it is a usable fallback for matching misspelled names when no model is installed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from gateway.embeddings import Embedder
from tasks.graph.kg import KnowledgeGraph

log = logging.getLogger(__name__)

#: How far below the k-th float32 score a candidate is still re-scored in float64. Float32 dot products of
#: unit vectors of a few hundred dimensions are off by at most ~1e-5, so 1e-4 never drops a true top-k row.
RESCORE_MARGIN = 1e-4

#: Bumped whenever ``entity_text`` changes, so cached matrices built from the old texts are not reused.
TEXT_FORMAT_VERSION = 1

MatchKind = Literal["exact", "normalized", "embedding"]


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
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self._one(text)
        return _unit_rows(out)

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
    - Thread-safe: the lazy embedding build and the query-embedding cache are locked, and the matrix products
      of concurrent searches run one at a time (each one already uses every core).
    - The cache file is written atomically (temporary file, then rename), so a crash never leaves a truncated
      matrix behind; a file of the wrong shape is ignored and rebuilt.
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
    ) -> None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
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
        return [entity_text(e.name, e.description, self.max_text_chars) for e in self.graph.entities()]

    def _text_fingerprint(self, texts: list[str]) -> str:
        if self._fingerprint is None:
            h = hashlib.sha256(f"v{TEXT_FORMAT_VERSION}".encode())
            for t in texts:
                h.update(t.encode("utf-8"))
                h.update(b"\x00")
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def cache_path(self, texts: list[str] | None = None) -> Path | None:
        """Where the entity matrix is cached: ``<cache_dir>/<snapshot>__<embedder>-<dim>__<texts hash>.npy``.

        The snapshot part is the graph's ``snapshot_id`` (content-addressed), or ``<domain>-adhoc`` for a graph
        built outside the warehouse. The hash of the embedded texts is part of the name too, so a change to
        the text recipe or an ad-hoc graph's content never reuses a stale matrix.
        """
        if self.cache_dir is None:
            return None
        fp = self._text_fingerprint(texts if texts is not None else self._texts())
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
        if self.names:
            self.graph.neighbors(self.names[0])
            self.graph.lookup_all(self.names[0])
        return self

    def _load_or_build(self) -> np.ndarray:
        texts = self._texts()
        path = self.cache_path(texts)
        expected = (len(texts), self.embedder.dim)
        if path is not None and path.exists():
            cached = self._map(path, expected)
            if cached is not None:
                return cached
        matrix = self._compute(texts)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as fh:
                    np.save(fh, matrix, allow_pickle=False)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
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

    def _compute(self, texts: list[str]) -> np.ndarray:
        dim = self.embedder.dim
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        parts = [
            np.asarray(self.embedder.embed(texts[i : i + self.embed_batch_size]), dtype=np.float32)
            for i in range(0, len(texts), self.embed_batch_size)
        ]
        matrix = np.ascontiguousarray(np.concatenate(parts))
        if matrix.shape != (len(texts), dim):
            raise ValueError(f"embedder {self.embedder.name!r} returned shape {matrix.shape}, expected ({len(texts)}, {dim})")
        return _unit_rows(matrix)

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
        """Exact top-``k`` rows of ``embeddings`` for each query vector: ``(indices, scores)``, both ``(Q, k')``
        with ``k' = min(k, len(names))``, best first, ties by row (name) order; scores are float64.

        ``vectors`` must be unit rows of the embedder's dimension. Two passes:

        1. candidates: one float32 matrix product per chunk of ``chunk_size`` queries (BLAS, both cores), then
           ``argpartition`` on each contiguous row (measured 1.4-2x faster on 2 cores than one ``argpartition``
           of the whole score block along axis 1), keeping every row within ``RESCORE_MARGIN`` of the k-th best;
        2. ranking: the candidates' scores recomputed in float64, one independent sum per row.

        The second pass is what makes results independent of batching: BLAS picks different kernels for one
        query and for a block of queries, so float32 scores differ in the last bits and near-ties could swap
        between a batched server call and a single direct call. The float64 per-row sums do not depend on
        which other queries or candidates are computed alongside.
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
        for start in range(0, q.shape[0], self.chunk_size):
            with self._search_lock:
                scores = q[start : start + self.chunk_size] @ matrix.T
            for j, row in enumerate(scores):
                if kk < n:
                    top = np.argpartition(row, n - kk)[n - kk :]
                    cand = np.flatnonzero(row >= row[top].min() - RESCORE_MARGIN)
                else:
                    cand = np.arange(n)
                exact = (matrix[cand].astype(np.float64) * q64[start + j]).sum(axis=1)
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


def _unit_rows(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return x / norms


__all__ = ["GraphIndex", "HashingEmbedder", "Match", "TEXT_FORMAT_VERSION", "entity_text"]
