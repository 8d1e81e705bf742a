"""Question de-duplication inside each domain: exact, same path, near-duplicate by character n-gram MinHash, then
paraphrase by sentence embedding.

- **Exact**: two questions are duplicates when their normalised question text (Unicode NFKC, case folded,
  punctuation dropped, whitespace collapsed) and their answer (``tasks.graph.kg.normalize_name``) are equal
  (Omne-R1 de-duplicates on question-answer pairs).
- **Near**: the question's character ``ngram``-grams (of the normalised text, padded with a space at both
  ends so short questions still have n-grams) are hashed into a MinHash (``datasketch``, fixed ``seed``) and
  indexed in a ``MinHashLSH`` at ``threshold``. The LSH only proposes candidates (its recall is high but not
  1: a pair just above the threshold can be missed, deterministically for a given seed); a candidate is confirmed
  by the exact Jaccard similarity of the two n-gram sets (known here, so there is no reason to accept the
  estimate's error), which must be ``>= threshold``. With ``same_answer=True`` (the default) a
  near-duplicate must also have the same answer: "Who founded X?" and "Who founded Y?" differ in a few
  characters but are different questions, and their answers tell them apart.

- **Same path** (``duplicate_path``): the same answer reached over the same set of edges (each edge an
  unordered pair of normalised node names) is the same question whatever the wording: a reworded copy teaches
  nothing new and, split apart, would put one question in two splits.
- **Paraphrase** (``paraphrase``, with an ``embedder``): the cosine similarity of the two questions' sentence
  embeddings (the configured embedder; rows are L2-normalised) is at or above ``embed_threshold``; with
  ``same_answer`` they must also share the answer. This catches rewordings over different paths, which
  share few character n-grams.

Items are processed in a stable order (``sort_key``, by default the item id): the first of a group is kept,
every later one becomes a reject pointing to it (``duplicate_of``), and rejects only ever point to kept items.
Duplicates are looked up among kept items only, so the outcome does not depend on chains of rejects. Items for
which ``fixed`` is true (questions an earlier run already published) are kept whatever they match, and later
items are compared with them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Generic, Literal, TypeVar

import numpy as np
from datasketch import MinHash, MinHashLSH
from datasketch.lsh import _optimal_param

from gateway.embeddings import Embedder

from schemas.errors import InputError
from schemas.qa import QAReject
from tasks.graph.kg import normalize_name

T = TypeVar("T")

DedupReason = Literal["duplicate", "duplicate_path", "near_duplicate", "paraphrase"]
_DETAIL = {
    "duplicate": "same question and answer as {of}",
    "duplicate_path": "same answer over the same path edges as {of}",
    "near_duplicate": "near duplicate of {of} (n-gram Jaccard {sim:.3f})",
    "paraphrase": "paraphrase of {of} (embedding cosine {sim:.3f})",
}

_PUNCT = re.compile(r"[^\w\s]+", re.UNICODE)


def normalize_question(text: str) -> str:
    """The text two questions are compared on: NFKC, case folded, punctuation removed, whitespace collapsed."""
    t = unicodedata.normalize("NFKC", text).casefold()
    t = _PUNCT.sub(" ", t)
    return " ".join(t.split())


def char_ngrams(text: str, n: int) -> set[str]:
    """Character ``n``-grams of ``" " + text + " "`` (a text shorter than ``n`` gives itself)."""
    padded = f" {text} "
    if len(padded) <= n:
        return {padded}
    return {padded[i : i + n] for i in range(len(padded) - n + 1)}


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


@dataclass(frozen=True)
class DedupReject(Generic[T]):
    """An item dropped as a copy of ``kept`` (its id in ``duplicate_of``)."""

    item: T
    reason: DedupReason
    duplicate_of: str
    similarity: float


@dataclass
class DedupResult(Generic[T]):
    kept: list[T] = field(default_factory=list)
    rejects: list[DedupReject[T]] = field(default_factory=list)

    def qa_rejects(self, *, run_id: str | None = None) -> list[QAReject]:
        """The rejects as ``qa_rejects`` rows (items must have ``qa_id``, ``domain``, ``question``,
        ``answer``; ``attempt_id`` is copied when present)."""
        return [
            QAReject(
                run_id=run_id, domain=r.item.domain, stage="dedup", reason=r.reason, qa_id=r.item.qa_id,  # type: ignore[attr-defined]
                attempt_id=getattr(r.item, "attempt_id", None), duplicate_of=r.duplicate_of,
                similarity=r.similarity, question=r.item.question, answer=r.item.answer,  # type: ignore[attr-defined]
                detail=_DETAIL[r.reason].format(of=r.duplicate_of, sim=r.similarity),
            )  # fmt: skip
            for r in self.rejects
        ]


def _get(attr: str) -> Callable[[Any], Any]:
    return lambda item: getattr(item, attr)


def edge_key(path: Sequence[str] | None) -> frozenset[frozenset[str]] | None:
    """The path as a set of undirected edges between normalised names (``None`` without a path of two nodes):
    the same hops walked in another order, or backwards, give the same key."""
    if not path or len(path) < 2:
        return None
    names = [normalize_name(n) for n in path]
    return frozenset(frozenset((a, b)) for a, b in zip(names, names[1:]))


def _path_or_none(item: Any) -> Sequence[str] | None:
    return getattr(item, "path", None)


@lru_cache(maxsize=64)
def lsh_params(threshold: float, num_perm: int) -> tuple[int, int]:
    """The bands and rows ``MinHashLSH`` would choose for ``threshold`` (its default, equal weights of false
    positives and negatives), computed once per process: the choice integrates numerically over every (b, r) pair,
    a few hundred milliseconds that every domain's dedup used to pay again."""
    return _optimal_param(threshold, num_perm, 0.5, 0.5)


def dedup_questions(
    items: Iterable[T],
    *,
    threshold: float = 0.8,
    ngram: int = 5,
    num_perm: int = 128,
    seed: int = 1,
    same_answer: bool = True,
    sort_key: Callable[[T], Any] | None = _get("qa_id"),
    id_of: Callable[[T], str] = _get("qa_id"),
    domain_of: Callable[[T], Hashable] = _get("domain"),
    question_of: Callable[[T], str] = _get("question"),
    answer_of: Callable[[T], str] = _get("answer"),
    path_of: Callable[[T], Sequence[str] | None] | None = _path_or_none,
    embedder: Embedder | None = None,
    embed_threshold: float = 0.92,
    fixed: Callable[[T], bool] | None = None,
) -> DedupResult[T]:
    """Exact, same-path, near and (with ``embedder``) paraphrase duplicates within each domain (module
    docstring). ``sort_key=None`` keeps the input order as the "first wins" order; ``path_of=None`` turns the
    same-path pass off. Kept items come back in that order, each domain's items together in the order domains
    first appear. ``ValueError`` for a threshold outside (0, 1] or ``ngram < 1``."""
    if not 0.0 < threshold <= 1.0:
        raise InputError(f"threshold must be in (0, 1], got {threshold}")
    if not 0.0 < embed_threshold <= 1.0:
        raise InputError(f"embed_threshold must be in (0, 1], got {embed_threshold}")
    if ngram < 1:
        raise InputError(f"ngram must be >= 1, got {ngram}")
    ordered: Sequence[T] = sorted(items, key=sort_key) if sort_key is not None else list(items)
    by_domain: dict[Hashable, list[T]] = {}
    for it in ordered:
        by_domain.setdefault(domain_of(it), []).append(it)

    result: DedupResult[T] = DedupResult()
    for group in by_domain.values():
        lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, params=lsh_params(threshold, num_perm))
        exact: dict[tuple[str, str], str] = {}
        by_edges: dict[tuple[str, frozenset[frozenset[str]]], str] = {}
        kept_grams: dict[str, tuple[set[str], str]] = {}
        keys = [(normalize_question(question_of(it)), normalize_name(answer_of(it))) for it in group]
        grams_of = [char_ngrams(q, ngram) for q, _ in keys]
        # MinHash.generator shares one permutation set across the group instead of drawing it per item.
        hashes = MinHash.generator(
            ([g.encode("utf-8", "surrogatepass") for g in sorted(grams)] for grams in grams_of),
            num_perm=num_perm, seed=seed,
        )  # fmt: skip
        vectors = np.asarray(embedder.embed([question_of(it) for it in group]), dtype=np.float32) if embedder else None
        kept_rows: dict[str, list[int]] = {}  # answer ("" without same_answer) -> rows of kept items' vectors
        for row, (it, (q, a), grams, mh) in enumerate(zip(group, keys, grams_of, hashes)):
            qid = id_of(it)
            edges = edge_key(path_of(it)) if path_of is not None else None
            hit: tuple[DedupReason, str, float] | None = None
            if fixed is None or not fixed(it):
                hit = _find_duplicate(
                    q, a, grams, mh, edges, row, vectors, exact=exact, by_edges=by_edges, lsh=lsh,
                    kept_grams=kept_grams, kept_rows=kept_rows, same_answer=same_answer, threshold=threshold,
                    embed_threshold=embed_threshold, id_of_row=lambda r: id_of(group[r]),
                )  # fmt: skip
            if hit is not None:
                result.rejects.append(DedupReject(it, hit[0], hit[1], hit[2]))
                continue
            if qid in kept_grams:
                raise ValueError(f"two different items share the id {qid!r}")
            exact.setdefault((q, a), qid)
            if edges is not None:
                by_edges.setdefault((a, edges), qid)
            kept_grams[qid] = (grams, a)
            lsh.insert(qid, mh)
            kept_rows.setdefault(a if same_answer else "", []).append(row)
            result.kept.append(it)
    return result


def _find_duplicate(
    q: str, a: str, grams: set[str], mh: MinHash, edges: frozenset[frozenset[str]] | None, row: int,
    vectors: np.ndarray | None, *, exact: dict[tuple[str, str], str],
    by_edges: dict[tuple[str, frozenset[frozenset[str]]], str], lsh: MinHashLSH,
    kept_grams: dict[str, tuple[set[str], str]], kept_rows: dict[str, list[int]], same_answer: bool,
    threshold: float, embed_threshold: float, id_of_row: Callable[[int], str],
) -> tuple[DedupReason, str, float] | None:
    """The first kept item this one duplicates, by the passes of the module docstring in their order."""
    hit = exact.get((q, a))
    if hit is not None:
        return "duplicate", hit, 1.0
    if edges is not None:
        hit = by_edges.get((a, edges))
        if hit is not None:
            return "duplicate_path", hit, 1.0
    matches: list[tuple[float, str]] = []
    for other in lsh.query(mh):
        other_grams, other_answer = kept_grams[other]
        if same_answer and other_answer != a:
            continue
        sim = jaccard(grams, other_grams)
        if sim >= threshold:
            matches.append((sim, other))
    # Highest similarity wins; among equals the id that sorts first, so the result is stable.
    if matches:
        sim, other = min(matches, key=lambda m: (-m[0], m[1]))
        return "near_duplicate", other, round(sim, 6)
    if vectors is not None:
        rows = kept_rows.get(a if same_answer else "", [])
        if rows:
            sims = vectors[rows] @ vectors[row]
            best = max(range(len(rows)), key=lambda k: (float(sims[k]), -rows[k]))
            if float(sims[best]) >= embed_threshold:
                return "paraphrase", id_of_row(rows[best]), round(float(sims[best]), 6)
    return None


__all__ = [
    "DedupReason",
    "DedupReject",
    "DedupResult",
    "char_ngrams",
    "dedup_questions",
    "edge_key",
    "jaccard",
    "normalize_question",
]
