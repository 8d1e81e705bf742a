"""Evaluation metrics: pure functions over predictions and gold answers, and their aggregation.

The scores are the RL rewards' own measurements (``training.rewards``) so that an evaluation and a reward agree on
what a right answer is:

- ``em``: the predicted entity set (``parse_answer_list`` of the ``<answer>`` content) equals the gold set, both
  normalised (``normalize_answer``: NFKC, case folded, whitespace collapsed, surrounding quotes/punctuation gone);
- ``f1``: entity-set F1 (Explore-on-Graph's outcome reward);
- ``hit1``: the first predicted entity is in the gold set (Hit@1 of KGQA papers: a ranked list's top item).

``None`` or an empty prediction scores 0 everywhere. ``aggregate`` groups scored items by any keys (by default
``(domain, hop_class)``) with counts, in sorted key order, so reports are deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tasks.env.tool_calls import parse_answer_list
from training.rewards import answer_set_matches, entity_f1, normalize_answer


def em(prediction: str | None, gold: Sequence[str]) -> bool:
    """Exact match of entity sets after normalisation."""
    return answer_set_matches(prediction, gold)


def f1(prediction: str | None, gold: Sequence[str]) -> float:
    """Entity-set F1 after normalisation (0.0 for no prediction)."""
    return entity_f1(prediction, gold)


def hit1(prediction: str | None, gold: Sequence[str]) -> bool:
    """The first predicted entity (after dropping empty ones) is one of the gold answers."""
    want = {normalize_answer(g) for g in gold} - {""}
    got = [n for n in (normalize_answer(i) for i in parse_answer_list(prediction)) if n]
    return bool(got) and got[0] in want


def score(prediction: str | None, gold: Sequence[str]) -> dict[str, Any]:
    """``{"em": bool, "f1": float, "hit1": bool}`` for one prediction."""
    return {"em": em(prediction, gold), "f1": f1(prediction, gold), "hit1": hit1(prediction, gold)}


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key)


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def summarize(items: Iterable[Any]) -> dict[str, Any]:
    """Counts and means over scored items (pydantic models, dataclasses or mappings with ``em``, ``f1``,
    ``hit1``, ``judge_valid``, ``n_rounds``, ``repeated_calls``, ``end_reason``, ``path_coverage``).

    ``judge_acc`` is the share of judged items (``judge_valid`` not ``None``) judged right, ``None`` when no item
    was judged; ``errors`` counts items whose endpoint gave no answer."""
    items = list(items)
    judged = [bool(v) for v in (_get(i, "judge_valid") for i in items) if v is not None]
    return {
        "n": len(items),
        "em": _mean([float(bool(_get(i, "em"))) for i in items]),
        "f1": _mean([float(_get(i, "f1")) for i in items]),
        "hit1": _mean([float(bool(_get(i, "hit1"))) for i in items]),
        "judge_acc": _mean([float(v) for v in judged]) if judged else None,
        "n_judged": len(judged),
        "mean_rounds": _mean([float(_get(i, "n_rounds")) for i in items]),
        "mean_repeats": _mean([float(_get(i, "repeated_calls")) for i in items]),
        "path_coverage": _mean([float(_get(i, "path_coverage")) for i in items]),
        "errors": sum(_get(i, "end_reason") == "error" for i in items),
    }


def aggregate(items: Iterable[Any], keys: Sequence[str] = ("domain", "hop_class")) -> list[dict[str, Any]]:
    """One row per distinct value of ``keys`` (sorted; ``None`` sorts first), with the key fields then
    ``summarize`` of the group."""
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for item in items:
        groups.setdefault(tuple(_get(item, k) for k in keys), []).append(item)
    order = sorted(groups, key=lambda t: tuple((v is not None, str(v) if v is not None else "") for v in t))
    return [{**dict(zip(keys, k)), **summarize(groups[k])} for k in order]


__all__ = ["aggregate", "em", "f1", "hit1", "score", "summarize"]
