"""Evaluation metrics: pure functions over predictions and gold answers, and their aggregation.

Answers are compared by ``schemas.answers`` (the rule RL rewards use), under both of its normalisers:

| metric                | definition                                                     | comparable with                              |
|-----------------------|----------------------------------------------------------------|----------------------------------------------|
| ``em_strict``         | predicted entity set = gold set, whitespace-stripped strings    | Omne-R1 Tables 7–8 (EM after whitespace strip) |
| ``em``                | the same under the lenient key (case, accents, U.S./US, ...)    | hopforge's own reports                        |
| ``f1`` / ``f1_strict``| entity-set F1 (lenient / strict)                                | EoG Table 1 F1, Graph-RFT's r_ans             |
| ``hit1_first``        | the first predicted entity is gold (a ranked list's top item)   | KGQA papers that rank answers                 |
| ``hit1_any``          | any predicted entity is gold (exact keys, no substring hits)    | EoG / RoG Hit@1, KG-Hopper and Graph-RFT Hits@1 |

``hit1`` is kept as the old name of ``hit1_first`` (warehouse column). RoG's evaluation also counts a gold that
is a substring of the prediction; hopforge does not, so its ``hit1_any`` is at most RoG's on the same outputs.

Exploration (Explore-on-Graph App. P, for the tool loop): ``n_tool_calls`` per question, ``repeated_calls``,
``triple_coverage`` = |T_pred ∩ T_gold| / |T_gold| (eq. 7) and ``exploration_efficiency`` = |T_pred| /
|T_pred ∩ T_gold| (eq. 6, lower is better; undefined when nothing gold was touched, such items are left out of
the mean and counted in ``n_no_gold_touched``). T_pred is the set of relation lines the agent's tool
observations showed it, T_gold the best-covered gold path's triples (see ``exploration``).

Graph settings (``eval.ikg``): ``n_text_calls`` counts an item's ``web_search`` / ``text_search`` calls;
``summarize`` gives the share of items with at least one (Graph-RFT's web-search frequency) and their mean.

``None`` or an empty prediction scores 0 everywhere. ``aggregate`` groups scored items by any keys (by default
``(domain, hop_class)``) with counts, in sorted key order, so reports are deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from schemas.answers import LENIENT, STRICT, answer_set_matches, entity_f1, hit1_any, hit1_first, triple_mentioned


def em(prediction: str | None, gold: Sequence[str]) -> bool:
    """Exact match of entity sets under the lenient key."""
    return answer_set_matches(prediction, gold, LENIENT)


def em_strict(prediction: str | None, gold: Sequence[str]) -> bool:
    """Exact match of entity sets after whitespace stripping only (Omne-R1's evaluation)."""
    return answer_set_matches(prediction, gold, STRICT)


def f1(prediction: str | None, gold: Sequence[str]) -> float:
    """Entity-set F1 under the lenient key (0.0 for no prediction)."""
    return entity_f1(prediction, gold, LENIENT)


def f1_strict(prediction: str | None, gold: Sequence[str]) -> float:
    """Entity-set F1 after whitespace stripping only."""
    return entity_f1(prediction, gold, STRICT)


def hit1(prediction: str | None, gold: Sequence[str]) -> bool:
    """``hit1_first``, under its historical name."""
    return hit1_first(prediction, gold, LENIENT)


def score(prediction: str | None, gold: Sequence[str]) -> dict[str, Any]:
    """Every answer metric of one prediction (see the module table)."""
    first = hit1_first(prediction, gold, LENIENT)
    return {"em": em(prediction, gold), "em_strict": em_strict(prediction, gold), "f1": f1(prediction, gold),
            "f1_strict": f1_strict(prediction, gold), "hit1": first, "hit1_first": first,
            "hit1_any": hit1_any(prediction, gold, LENIENT)}  # fmt: skip


# -- exploration (Explore-on-Graph App. P) ----------------------------------------------------------------------------

# One relation per line in the tool renderings: "N. neighbour | ..." (node_info, neighbor_search) or
# "(head, relation, tail)" (search).
_RELATION_LINE = re.compile(r"^\s*(?:\d+\.\s+.*\|.*|\(.+,.+,.+\))\s*$")


def explored_relations(observations: Iterable[str]) -> list[str]:
    """T_pred: the distinct relation lines the observations showed, each with its observation's first line
    (which names the entity it is about: "Entity: X", "Neighbours of X by ..."), in first-seen order."""
    seen: dict[str, None] = {}
    for obs in observations:
        lines = obs.splitlines()
        if not lines:
            continue
        head = lines[0]
        for line in lines[1:]:
            if _RELATION_LINE.match(line):
                seen.setdefault(f"{head}\n{line.strip()}", None)
    return list(seen)


def exploration(observations: Sequence[str], gold_paths: Sequence[Sequence[Sequence[str]]]) -> dict[str, Any]:
    """``{"n_explored", "n_gold_touched", "n_gold", "triple_coverage", "exploration_efficiency"}`` for one run.

    A gold triple is touched when one explored relation line (with its header) names its subject, relation and
    object (``triple_mentioned``, the path reward's test). The best-covered gold path counts.
    ``exploration_efficiency`` is ``None`` when no gold triple was touched."""
    explored = explored_relations(observations)
    touched, n_gold, best = 0, 0, (-1.0, 0)
    for path in gold_paths:
        if not path:
            continue
        hits = sum(any(triple_mentioned(line, t) for line in explored) for t in path)
        if (hits / len(path), hits) > best:
            best, touched, n_gold = (hits / len(path), hits), hits, len(path)
    return {
        "n_explored": len(explored),
        "n_gold_touched": touched,
        "n_gold": n_gold,
        "triple_coverage": touched / n_gold if n_gold else 0.0,
        "exploration_efficiency": len(explored) / touched if touched else None,
    }


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key)


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def _opt(item: Any, key: str, default: Any = 0.0) -> Any:
    """A field older rows may lack (items scored before it existed)."""
    value = item.get(key, default) if isinstance(item, Mapping) else getattr(item, key, default)
    return default if value is None and default is not None else value


def summarize(items: Iterable[Any]) -> dict[str, Any]:
    """Counts and means over scored items (pydantic models, dataclasses or mappings with the ``score`` fields,
    ``judge_valid``, ``n_rounds``, ``repeated_calls``, ``end_reason``, ``path_coverage`` and, for the tool loop,
    ``n_tool_calls``, ``triple_coverage``, ``exploration_efficiency``).

    ``judge_acc`` is the share of judged items (``judge_valid`` not ``None``) judged right, ``None`` when no item
    was judged; ``errors`` counts items whose endpoint gave no answer. ``exploration_efficiency`` is the mean
    over items that touched a gold triple (``None`` when none did). ``text_search_share`` is the share of items
    whose tool loop called the text tool at least once (``n_text_calls``; Graph-RFT's web-search frequency) and
    ``mean_text_calls`` the mean number of such calls."""
    items = list(items)
    judged = [bool(v) for v in (_get(i, "judge_valid") for i in items) if v is not None]
    efficiency = [float(v) for v in (_opt(i, "exploration_efficiency", None) for i in items) if v is not None]
    return {
        "n": len(items),
        "em": _mean([float(bool(_get(i, "em"))) for i in items]),
        "em_strict": _mean([float(bool(_opt(i, "em_strict", False))) for i in items]),
        "f1": _mean([float(_get(i, "f1")) for i in items]),
        "f1_strict": _mean([float(_opt(i, "f1_strict")) for i in items]),
        "hit1": _mean([float(bool(_get(i, "hit1"))) for i in items]),
        "hit1_first": _mean([float(bool(_opt(i, "hit1_first", _get(i, "hit1")))) for i in items]),
        "hit1_any": _mean([float(bool(_opt(i, "hit1_any", False))) for i in items]),
        "judge_acc": _mean([float(v) for v in judged]) if judged else None,
        "n_judged": len(judged),
        "mean_rounds": _mean([float(_get(i, "n_rounds")) for i in items]),
        "mean_tool_calls": _mean([float(_opt(i, "n_tool_calls")) for i in items]),
        "mean_repeats": _mean([float(_get(i, "repeated_calls")) for i in items]),
        "path_coverage": _mean([float(_get(i, "path_coverage")) for i in items]),
        "triple_coverage": _mean([float(_opt(i, "triple_coverage")) for i in items]),
        "exploration_efficiency": _mean(efficiency) if efficiency else None,
        "n_no_gold_touched": len(items) - len(efficiency),
        "errors": sum(_get(i, "end_reason") == "error" for i in items),
        "text_search_share": _mean([float(int(_opt(i, "n_text_calls", 0)) > 0) for i in items]),
        "mean_text_calls": _mean([float(_opt(i, "n_text_calls", 0)) for i in items]),
    }


def aggregate(items: Iterable[Any], keys: Sequence[str] = ("domain", "hop_class")) -> list[dict[str, Any]]:
    """One row per distinct value of ``keys`` (sorted; ``None`` sorts first), with the key fields then
    ``summarize`` of the group."""
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for item in items:
        groups.setdefault(tuple(_get(item, k) for k in keys), []).append(item)
    order = sorted(groups, key=lambda t: tuple((v is not None, str(v) if v is not None else "") for v in t))
    return [{**dict(zip(keys, k)), **summarize(groups[k])} for k in order]


__all__ = ["aggregate", "em", "em_strict", "exploration", "explored_relations", "f1", "f1_strict", "hit1", "score",
           "summarize"]
