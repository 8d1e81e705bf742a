"""Evaluation in Graph-RFT's graph settings: the complete graph (CKG) and incomplete-graph views (IKG-20/40/60%).

An IKG item is one question seen through one view (``tasks.env.ikg``: that share of its gold path's triples, and
every relation between the same entity pairs, hidden). Each mode of ``eval.evaluate`` reads the view so:

- ``tools``: the agent runs in the item's view (``viewed_environment``): the KG tools answer "No information in the
  KG ... use the web_search tool" for a hidden fact. ``ikg_config`` adds the tools an IKG template trajectory
  trains with: ``neighbor_search`` (the graph tool that gives that answer) and the text tool ``web_search`` over
  the domain's corpus chunks. In an evaluation with IKG levels they are offered on the complete graph too, as
  Graph-RFT's agent always has its web search: the complete row's text-search share then counts searches the graph
  did not need (what Graph-RFT's R_over penalises), and the settings differ only in what the graph shows.
- ``no_tools``: the question alone, the same prompt in every setting (Graph-RFT's IO / CoT baselines do not see the
  graph). It is scored per level anyway, so each level's row has its baseline over the same questions (the
  response cache answers the repeats).
- ``gold_context``: the upper bound of the tool loop in that setting: the gold path's triples the view still shows,
  as facts, and each hidden triple as the text passage that states it (``hidden_passages``). In the view an agent
  can reach exactly these: the graph's facts, and the hidden ones only as text. Giving the hidden triples as facts
  would repeat the complete graph's upper bound; leaving them out would measure guessing, not reading. Graph-RFT
  has no gold-context baseline, so this is hopforge's own choice.

The report (``setting_table``): one row per mode and setting (``complete``, ``IKG-20%``, ...) with ``n``, Hits@1
(``hit1_any``, the metric Graph-RFT reports as Hits@1: ``eval.metrics``), the project's EM and F1, the
``text_search_share`` (the share of items whose tool loop called ``web_search`` / ``text_search`` at least once:
Graph-RFT's web-search frequency, Figure 3) and ``mean_text_calls`` (text-search calls per item).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from eval.metrics import aggregate
from schemas.tools import TEXT_TOOLS, ToolCallRecord
from tasks.env.ikg import IKGBuild, IKGView, fact_found, level_name
from tasks.env.text_search import DEFAULT_TOP_K, TextChunk, TextIndex


class _Offers(Protocol):
    tools: tuple[str, ...]


C = TypeVar("C", bound=_Offers)


def setting_label(kg_setting: str | None, ikg_level: float | None) -> str:
    """``complete`` for the complete graph, else the level's name (``IKG-40%``)."""
    return "complete" if kg_setting in (None, "complete") or ikg_level is None else level_name(ikg_level)


#: The tools an IKG item adds to the evaluation's own (both are in an IKG template trajectory's tool set,
#: ``tasks.distill.ikg_template.IKG_TEMPLATE_TOOLS``): the graph tool that says when the graph has no such fact,
#: and the text tool.
IKG_TOOLS: tuple[str, ...] = ("neighbor_search", "web_search")


def ikg_config(config: C) -> C:
    """``config`` (an ``eval.evaluate.EvalConfig``, a dataclass) with ``IKG_TOOLS`` offered after its own tools (``web_search`` left out when a text tool is
    offered already); unchanged when it offers them."""
    has_text = any(t in TEXT_TOOLS for t in config.tools)
    extra = [t for t in IKG_TOOLS if t not in config.tools and not (t in TEXT_TOOLS and has_text)]
    return dataclasses.replace(config, tools=(*config.tools, *extra)) if extra else config  # type: ignore[type-var]


def text_calls(calls: Iterable[ToolCallRecord]) -> int:
    """How many of a run's tool calls went to the text tool (under either name; failed calls count: the agent
    chose to search)."""
    return sum(c.name in TEXT_TOOLS for c in calls)


def hidden_passages(view: IKGView, triples: Sequence[Sequence[str]], text: TextIndex | None,
                    k: int = DEFAULT_TOP_K) -> list[tuple[tuple[str, str, str], TextChunk | None]]:
    """For each triple of ``triples`` (one gold path) the view hides (its two entities are a hidden pair), the chunk
    that states it: the first of its source chunks the text collection holds (provenance), else the first of the
    text search's top ``k`` for the fact's query that names both entities (``tasks.env.ikg.fact_found``, the
    answerability check's rule); ``None`` when neither finds one. Path order."""
    facts = {frozenset((f.head, f.tail)): f for f in view.facts}
    out: list[tuple[tuple[str, str, str], TextChunk | None]] = []
    for s, r, o in triples:
        fact = facts.get(frozenset((s, o)))
        if fact is None:
            continue
        chunk: TextChunk | None = None
        if text is not None:
            held = [text.chunks[text.by_id[c]] for c in fact.source_chunk_ids if c in text.by_id]
            if held:
                chunk = held[0]
            else:
                found = fact_found(fact, text.search(fact.query(), k))
                chunk = text.chunks[text.by_id[found]] if found is not None else None
        out.append(((s, r, o), chunk))
    return out


def visible_triples(view: IKGView, triples: Sequence[Sequence[str]]) -> list[tuple[str, str, str]]:
    """The triples of ``triples`` the view still shows."""
    return [(s, r, o) for s, r, o in triples if frozenset((s, o)) not in view.pairs]


def setting_table(items: Sequence[Any], modes: Sequence[str]) -> list[dict[str, Any]]:
    """One row per mode and setting (complete first, then IKG levels ascending): ``mode``, ``setting``,
    ``kg_setting``, ``ikg_level`` and ``eval.metrics.summarize`` of the group (``hit1_any`` is Hits@1,
    ``text_search_share`` and ``mean_text_calls`` the text-search figures)."""
    rows: list[dict[str, Any]] = []
    for mode in modes:
        mine = [i for i in items if _get(i, "mode") == mode]
        for r in aggregate(mine, ("kg_setting", "ikg_level")):
            rows.append({"mode": mode, "setting": setting_label(r["kg_setting"], r["ikg_level"]), **r})
    return rows


def scored_lines(build: IKGBuild, questions: int) -> list[str]:
    """One line per level the variants were built at (``build.levels``): how many of the domain's ``questions`` are
    scored in their view, and why the others are not."""
    lines = []
    for level in build.levels:
        kept = sum(v.view.level == level for v in build.variants)
        why = sorted({r.reason for r in build.rejects if r.level == level})
        lines.append(f"IKG {build.domain} {level_name(level)}: {kept} of {questions} questions scored in their view"
                     + (f" (the others: {', '.join(why)})" if kept < questions else ""))
    return lines


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key)


__all__ = [
    "IKG_TOOLS",
    "hidden_passages",
    "scored_lines",
    "setting_label",
    "setting_table",
    "text_calls",
    "visible_triples",
    "ikg_config",
]
