"""Question de-duplication inside each domain: exact, then near-duplicate by character n-gram MinHash.

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

Items are processed in a stable order (``sort_key``, by default the item id): the first of a group is kept,
every later one becomes a reject pointing to it (``duplicate_of``), and rejects only ever point to kept items.
Near-duplicates are looked up among kept items only, so the outcome does not depend on chains of rejects.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from datasketch import MinHash, MinHashLSH

from schemas.qa import QAReject
from tasks.graph.kg import normalize_name

T = TypeVar("T")

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
    reason: Literal["duplicate", "near_duplicate"]
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
                detail=f"{r.reason} of {r.duplicate_of} (n-gram Jaccard {r.similarity:.3f})",
            )  # fmt: skip
            for r in self.rejects
        ]


def _get(attr: str) -> Callable[[Any], Any]:
    return lambda item: getattr(item, attr)


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
) -> DedupResult[T]:
    """Exact and near duplicates within each domain (module docstring). ``sort_key=None`` keeps the input
    order as the "first wins" order. Kept items come back in that order, each domain's items together in the
    order domains first appear. ``ValueError`` for a threshold outside (0, 1] or ``ngram < 1``."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    if ngram < 1:
        raise ValueError(f"ngram must be >= 1, got {ngram}")
    ordered: Sequence[T] = sorted(items, key=sort_key) if sort_key is not None else list(items)
    by_domain: dict[Hashable, list[T]] = {}
    for it in ordered:
        by_domain.setdefault(domain_of(it), []).append(it)

    result: DedupResult[T] = DedupResult()
    for group in by_domain.values():
        lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
        exact: dict[tuple[str, str], str] = {}
        kept_grams: dict[str, tuple[set[str], str]] = {}
        keys = [(normalize_question(question_of(it)), normalize_name(answer_of(it))) for it in group]
        grams_of = [char_ngrams(q, ngram) for q, _ in keys]
        # MinHash.generator shares one permutation set across the group instead of drawing it per item.
        hashes = MinHash.generator(
            ([g.encode("utf-8", "surrogatepass") for g in sorted(grams)] for grams in grams_of),
            num_perm=num_perm, seed=seed,
        )  # fmt: skip
        for it, (q, a), grams, mh in zip(group, keys, grams_of, hashes):
            qid = id_of(it)
            hit = exact.get((q, a))
            if hit is not None:
                result.rejects.append(DedupReject(it, "duplicate", hit, 1.0))
                continue
            matches: list[tuple[float, str]] = []
            for other in lsh.query(mh):
                other_grams, other_answer = kept_grams[other]
                if same_answer and other_answer != a:
                    continue
                sim = jaccard(grams, other_grams)
                if sim >= threshold:
                    matches.append((sim, other))
            # Highest similarity wins; among equals the id that sorts first, so the result is stable.
            best = min(matches, key=lambda m: (-m[0], m[1])) if matches else None
            if best is not None:
                result.rejects.append(DedupReject(it, "near_duplicate", best[1], round(best[0], 6)))
                continue
            if qid in kept_grams:
                raise ValueError(f"two different items share the id {qid!r}")
            exact[(q, a)] = qid
            kept_grams[qid] = (grams, a)
            lsh.insert(qid, mh)
            result.kept.append(it)
    return result


__all__ = ["DedupReject", "DedupResult", "char_ngrams", "dedup_questions", "jaccard", "normalize_question"]
