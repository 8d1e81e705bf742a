"""The dataset card of an export and what it names: the ``README.md`` card (``dataset_card``: YAML ``configs`` with
the data files per split, a short guide, rows per config and split, question writers, hops and kinds, graph
settings), LLaMA-Factory's ``dataset_info.json`` (``dataset_info``), and the card section of an evaluation by graph
setting (``evaluation_section``, its table ``settings_markdown``). ``tasks.export.datasets`` writes them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from schemas.qa import SPLITS
from tasks.export.rows import EXPORT_CONFIGS, SHAREGPT_COLUMNS, SHAREGPT_TAGS, data_file
from tasks.qa.mix import hop_kind_counts, hop_kind_markdown


def dataset_info(tables: Mapping[str, Mapping[str, Sequence[Any]]], prefix: str = "hopforge") -> dict[str, Any]:
    """LLaMA-Factory's ``dataset_info.json``: one ShareGPT-with-tools entry per (sft variant, split), named
    ``<prefix>_<config>_<split>``; ``file_name`` is relative to the export directory (use it as
    ``dataset_dir``)."""
    info: dict[str, Any] = {}
    for config in ("sft", "sft_nothink"):
        for split in SPLITS:
            if tables.get(config, {}).get(split):
                info[f"{prefix}_{config}_{split}"] = {
                    "file_name": data_file(config, split),
                    "formatting": "sharegpt",
                    "columns": dict(SHAREGPT_COLUMNS),
                    "tags": dict(SHAREGPT_TAGS),
                }
    return info


_CONFIG_NOTES = {
    "qa": "questions with answer, path, hop class, verified gold paths and provenance ids",
    "sft": "LLaMA-Factory ShareGPT with tools, `<think>` before each reply (template `qwen3`)",
    "sft_nothink": "the tool-use conversations without reasoning (template `qwen3_nothink`)",
    "rl": "verl RL rows: prompt, rule reward ground truth (answers, gold triples), tools kwargs, `tool_agent`",
    "messages": "OpenAI/Qwen messages with `tool_calls` and `reasoning_content`, plus `tools` (TRL)",
}


def dataset_card(version: str, tables: Mapping[str, Mapping[str, Sequence[Any]]], extra: str = "") -> str:
    """The ``README.md`` dataset card: YAML ``configs`` (data_files per split), a short guide, then ``extra``
    (markdown: e.g. the difficulty table and the pictures a refresh adds)."""
    configs = [
        {"config_name": c, "data_files": [{"split": s, "path": data_file(c, s)} for s in SPLITS if tables[c].get(s)]}
        for c in EXPORT_CONFIGS
        if c in tables and any(tables[c].values())
    ]
    front = yaml.safe_dump(
        {"pretty_name": "hopforge KG multi-hop QA and tool-use trajectories", "task_categories": ["question-answering"],
         "tags": ["knowledge-graph", "multi-hop", "tool-use", "hopforge"], "configs": configs},
        sort_keys=False, allow_unicode=True, width=120,
    )  # fmt: skip
    lines = [
        "---", front.rstrip(), "---", "", f"# hopforge dataset {version}", "",
        "Grounded multi-hop questions over knowledge graphs and reasoning trajectories distilled from a teacher "
        "model, made by hopforge. Splits are leak-safe: questions that share an answer or seed entity are in the "
        "same split, and every trajectory is in its question's split.", "",
        "| config | contents | " + " | ".join(SPLITS) + " |", "|---|---|" + "---|" * len(SPLITS),
    ]  # fmt: skip
    for c in EXPORT_CONFIGS:
        if c in tables:
            counts = " | ".join(str(len(tables[c].get(s, []))) for s in SPLITS)
            lines.append(f"| `{c}` | {_CONFIG_NOTES[c]} | {counts} |")
    writers = Counter(r.get("writer") or "llm" for rows in tables.get("qa", {}).values() for r in rows)
    if writers:
        # Who wrote the questions: the LLM, the deterministic template writer, or the LLM rewording a template.
        lines += ["", "| question writer | questions |", "|---|---|"]
        lines += [f"| {w} | {n} |" for w, n in sorted(writers.items())]
    complete = [r for rows in tables.get("qa", {}).values() for r in rows if r.get("kg_setting") != "incomplete"]
    if complete:
        # Questions by hops and kind (an IKG variant is its question again, so only the complete graph's rows).
        lines += ["", "Questions by hops (path edges) and kind (`chain`: a composition; `conjunction`: a node "
                  "pinned by another fact; a question without a program is a chain):", ""]
        lines.append(hop_kind_markdown(hop_kind_counts((len(r["path"]) - 1, r.get("kind")) for r in complete)))
    settings = Counter((r.get("kg_setting"), r.get("ikg_level")) for rows in tables.get("qa", {}).values() for r in rows)
    if any(kg == "incomplete" for kg, _ in settings):
        # Graph-RFT's settings: the complete graph, and IKG-x% views hiding that share of each gold path's triples.
        lines += ["", "| graph setting | questions |", "|---|---|"]
        lines += [f"| {'complete' if level is None else f'IKG-{round(level * 100):g}%'} | {n} |"
                  for (_, level), n in sorted(settings.items(), key=lambda kv: kv[0][1] or 0.0)]
    lines += [
        "", "Load a config with `datasets.load_dataset(\"<this directory or repo>\", \"<config>\")`. For "
        "LLaMA-Factory, point `dataset_dir` at this directory and use the entries of `dataset_info.json`. "
        "`manifest.json` holds the sha256 of every file.", "",
    ]  # fmt: skip
    if extra:
        lines += [extra.rstrip(), ""]
    return "\n".join(lines)


def settings_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """An evaluation's per-setting rows (``eval.ikg.setting_table``) as a markdown table, in percent like
    Graph-RFT's tables: Hits@1, EM, F1, the share of questions that used the text search, text searches per
    question."""
    lines = ["| mode | setting | n | Hits@1 | EM | F1 | used text search | text searches per question |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        lines.append(f"| {r['mode']} | {r['setting']} | {r['n']} | {100 * r['hit1_any']:.1f} | {100 * r['em']:.1f} "
                     f"| {100 * r['f1']:.1f} | {100 * r['text_search_share']:.1f}% | {r['mean_text_calls']:.2f} |")
    return "\n".join(lines)


def evaluation_section(rows: Sequence[Mapping[str, Any]], pictures: Sequence[str], *, run_id: str,
                       model: str | None) -> str:
    """Markdown for the card (``card_extra``): an evaluation of the policy per graph setting (the complete graph
    and the IKG levels, ``eval.ikg``), its table and its pictures by relative path (``pictures/settings.svg``)."""
    lines = ["## Evaluation by graph setting", "",
             f"The policy{f' `{model}`' if model else ''} (evaluation run `{run_id}`) on the complete graph and on "
             "IKG views that hide that share of each question's gold-path triples (Graph-RFT's CKG / IKG-x%). "
             "Hits@1 is Graph-RFT's metric; `used text search` is the share of questions whose tool loop called "
             "`web_search` (Graph-RFT's web-search frequency). `no_tools` and `gold_context` are the closed-book "
             "baseline and the upper bound (in an IKG view: the visible facts and the passages that state the hidden "
             "ones).", "", settings_markdown(rows), ""]  # fmt: skip
    lines += [f"![Hits@1 and text-search share by graph setting]({p})" for p in pictures]
    return "\n".join(lines) + "\n"


__all__ = [
    "dataset_card",
    "dataset_info",
    "evaluation_section",
    "settings_markdown",
]
