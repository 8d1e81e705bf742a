"""Pictures of a dataset version: where candidates were lost, and what the kept questions look like.

``picture_data`` gathers counts (plain dicts, no warehouse) and ``render`` draws one SVG per picture with
matplotlib's object API (no pyplot: no global figure state, safe on worker threads). The same files go into the
export under ``pictures/`` (the dataset card embeds them) and into the Prefect run as a markdown artifact.

An evaluation in Graph-RFT's graph settings (``eval.ikg``) has one more picture, ``settings`` (``render_settings``):
Hits@1 per setting (complete graph, IKG-20%, IKG-40%, ...) as bars, and the share of questions whose tool loop
used the text search as a line, like Graph-RFT's Figure 3. The evaluation report shows it, and the dataset card of
an export made with an evaluation's table (``tasks.export.card.evaluation_section``).

SVGs are written deterministically (fixed hash salt, no date), so equal counts give equal bytes and an export
stays byte-identical for the same inputs.
"""

from __future__ import annotations

import base64
import io
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The pictures, in the order the card shows them: file stem -> title.
PICTURES: dict[str, str] = {
    "funnel": "Candidates kept and rejected, by reason",
    "hops": "Questions by hop class",
    "domains": "Questions by domain",
    "answer_types": "Answers by entity type",
    "difficulty": "Solver pass rate with tools (difficulty)",
    "writers": "Questions by writer",
}

#: The evaluation's picture (not drawn by ``render``: it needs an evaluation, not an export's rows).
SETTINGS_PICTURE = "settings"
_TITLES: dict[str, str] = {**PICTURES, SETTINGS_PICTURE: "Hits@1 and text-search share by graph setting"}


@dataclass
class PictureData:
    """Counts to draw. ``funnel`` maps ``accepted`` and each reject reason to a count; ``pass_rates`` holds one
    pass rate (0..1) per measured question."""

    funnel: dict[str, int] = field(default_factory=dict)
    hops: dict[str, int] = field(default_factory=dict)
    domains: dict[str, int] = field(default_factory=dict)
    answer_types: dict[str, int] = field(default_factory=dict)
    pass_rates: list[float] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    writers: dict[str, int] = field(default_factory=dict)


def picture_data(qa_rows: Iterable[Mapping[str, Any]], *, rejects: Mapping[str, int] | None = None,
                 answer_types: Mapping[tuple[str, str], str] | None = None) -> PictureData:
    """Counts from exported ``qa`` rows (with difficulty columns when measured). ``rejects``: reason -> count;
    ``answer_types``: (domain, entity name) -> entity type."""
    rows = list(qa_rows)
    types = answer_types or {}
    data = PictureData(
        hops=dict(Counter(r["hop_class"] for r in rows)),
        domains=dict(Counter(r["domain"] for r in rows)),
        answer_types=dict(Counter(types.get((r["domain"], r["answer"]), "unknown") for r in rows)),
        pass_rates=[r["solve_rate_tools"] for r in rows if r.get("solve_rate_tools") is not None],
        labels=dict(Counter(r["difficulty"] for r in rows if r.get("difficulty"))),
        writers=dict(Counter(r.get("writer") or "llm" for r in rows)),
    )  # fmt: skip
    data.funnel = {"accepted": len(rows), **{k: v for k, v in sorted((rejects or {}).items()) if v}}
    return data


def _figure(height: float = 2.8):
    from matplotlib.figure import Figure

    return Figure(figsize=(6.4, height), dpi=100, layout="constrained")


def _bars(title: str, counts: Mapping[str, int], *, horizontal: bool = False, highlight: str | None = None):
    fig = _figure(max(2.4, 0.32 * len(counts) + 1.2) if horizontal else 2.8)
    ax = fig.add_subplot()
    names = list(counts)
    values = [counts[n] for n in names]
    colors = ["#2b8a3e" if n == highlight else "#4263eb" for n in names]
    if horizontal:
        bars = ax.barh(names[::-1], values[::-1], color=colors[::-1])
        ax.set_xlabel("count")
    else:
        bars = ax.bar(names, values, color=colors)
        ax.set_ylabel("count")
        ax.tick_params(axis="x", labelrotation=30 if len(names) > 4 else 0)
    ax.bar_label(bars, fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.spines[["top", "right"]].set_visible(False)
    return fig


def _empty(title: str, why: str):
    fig = _figure(1.4)
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_title(title, fontsize=10)
    ax.text(0.5, 0.4, why, ha="center", va="center", fontsize=9, color="#666666")
    return fig


def _difficulty(data: PictureData):
    title = PICTURES["difficulty"]
    if not data.pass_rates:
        return _empty(title, "difficulty not measured for this version")
    fig = _figure()
    ax = fig.add_subplot()
    ax.hist(data.pass_rates, bins=[i / 10 for i in range(11)], color="#f08c00", edgecolor="white")
    ax.set_xlabel("share of the solver's k attempts that were right (with tools)")
    ax.set_ylabel("questions")
    labels = ", ".join(f"{k}: {v}" for k, v in sorted(data.labels.items()))
    ax.set_title(f"{title}\n{labels}", fontsize=10)
    ax.spines[["top", "right"]].set_visible(False)
    return fig


def _svg(fig) -> bytes:
    import matplotlib

    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "hopforge", "svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return buf.getvalue()


def settings_points(rows: Iterable[Mapping[str, Any]], mode: str = "tools") -> dict[str, tuple[float, float, int]]:
    """From ``eval.ikg.setting_table`` rows, ``mode``'s points in the table's order (complete first, then the
    levels ascending): setting -> (Hits@1, text-search share, n)."""
    return {r["setting"]: (float(r["hit1_any"]), float(r["text_search_share"]), int(r["n"]))
            for r in rows if r["mode"] == mode}  # fmt: skip


def _settings_figure(points: Mapping[str, tuple[float, float, int]], mode: str):
    title = f"{_TITLES[SETTINGS_PICTURE]} ({mode})"
    if not points:
        return _empty(title, "no items of this mode were evaluated")
    fig = _figure(3.0)
    ax = fig.add_subplot()
    names = list(points)
    hits = [100 * points[n][0] for n in names]
    share = [100 * points[n][1] for n in names]
    bars = ax.bar([f"{n}\n(n={points[n][2]})" for n in names], hits, color="#4263eb", label="Hits@1")
    ax.bar_label(bars, fmt="%.1f", fontsize=8)
    ax.set_ylabel("Hits@1 (%)")
    ax.set_ylim(0, 118)  # room above a 100% bar for the legend
    line = ax.twinx()
    line.plot(range(len(names)), share, color="#e8590c", marker="s", linestyle="--", label="text search used")
    line.set_ylabel("questions that used text search (%)")
    line.set_ylim(0, 118)
    ax.legend(handles=[bars, *line.get_lines()], loc="upper center", ncols=2, fontsize=8, frameon=False)
    ax.set_title(title, fontsize=10)
    ax.spines[["top"]].set_visible(False)
    line.spines[["top"]].set_visible(False)
    return fig


def render_settings(rows: Iterable[Mapping[str, Any]], mode: str = "tools") -> dict[str, bytes]:
    """``pictures/settings.svg``: Hits@1 per graph setting (bars) and the share of questions that used the text
    search (line), for ``mode``'s rows of ``eval.ikg.setting_table``."""
    return {f"pictures/{SETTINGS_PICTURE}.svg": _svg(_settings_figure(settings_points(rows, mode), mode))}


def render(data: PictureData) -> dict[str, bytes]:
    """``pictures/<name>.svg`` -> SVG bytes, one per entry of ``PICTURES``."""
    figs = {
        "funnel": _bars(PICTURES["funnel"], data.funnel, horizontal=True, highlight="accepted"),
        "hops": _bars(PICTURES["hops"], dict(sorted(data.hops.items()))),
        "domains": _bars(PICTURES["domains"], dict(sorted(data.domains.items())), horizontal=True),
        "answer_types": _bars(PICTURES["answer_types"],
                              dict(sorted(data.answer_types.items(), key=lambda kv: (-kv[1], kv[0]))), horizontal=True),
        "difficulty": _difficulty(data),
        "writers": _bars(PICTURES["writers"], dict(sorted(data.writers.items()))),
    }  # fmt: skip
    return {f"pictures/{name}.svg": _svg(fig) for name, fig in figs.items()}


def card_section(files: Sequence[str]) -> str:
    """Markdown for the dataset card: each picture by its relative path (the Hub renders them in the card)."""
    lines = ["## Pictures", ""]
    for name in files:
        stem = name.rsplit("/", 1)[-1].removesuffix(".svg")
        lines += [f"![{_TITLES.get(stem, stem)}]({name})", ""]
    return "\n".join(lines)


def artifact_markdown(pictures: Mapping[str, bytes], heading: str) -> str:
    """Markdown for a Prefect artifact: the pictures inline as data URIs (the UI has no access to the files)."""
    lines = [f"## {heading}", ""]
    for name, svg in pictures.items():
        stem = name.rsplit("/", 1)[-1].removesuffix(".svg")
        b64 = base64.b64encode(svg).decode("ascii")
        lines += [f"![{_TITLES.get(stem, stem)}](data:image/svg+xml;base64,{b64})", ""]
    return "\n".join(lines)


__all__ = ["PICTURES", "SETTINGS_PICTURE", "PictureData", "artifact_markdown", "card_section", "picture_data", "render",
           "render_settings", "settings_points"]
