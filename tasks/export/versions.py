"""What a dataset version holds and how it differs from the one before: pure functions over counts.

A version's ``summary`` (``summarize``) is stored with it (``dataset_versions.summary``), so the next refresh can
say what changed without the previous export's files. ``diff`` compares two summaries; ``diff_markdown`` writes
the refresh's markdown artifact: rows added per config and split, per domain and hop class, rejects by reason,
and the LLM calls and tokens the refresh spent.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def version_fingerprint(inputs_sha256: str, labels: Mapping[str, str], drop: Sequence[str], include: Sequence[str]) -> str:
    """The content hash a refreshed version is named after: the export inputs' hash, the difficulty label of
    every question and what was filtered out. Equal hashes mean nothing new to publish."""
    payload = {"inputs": inputs_sha256, "labels": dict(sorted(labels.items())), "drop": sorted(drop),
               "include": list(include)}  # fmt: skip
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def summarize(rows: Mapping[str, Mapping[str, int]], qa_rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``rows``: config -> split -> count (an export's ``rows``); ``qa_rows``: the exported ``qa`` rows."""
    by = Counter(f"{r['domain']}|{r['hop_class']}" for r in qa_rows)
    return {"rows": {c: dict(sorted(s.items())) for c, s in sorted(rows.items())}, "qa_by_domain_hop": dict(sorted(by.items()))}


def diff(previous: Mapping[str, Any] | None, current: Mapping[str, Any]) -> dict[str, Any]:
    """Rows added (negative: removed) per config/split and per domain/hop class; only the cells that changed."""
    prev = previous or {"rows": {}, "qa_by_domain_hop": {}}
    by_config: list[dict[str, Any]] = []
    for config in sorted(set(prev["rows"]) | set(current["rows"])):
        before, after = prev["rows"].get(config, {}), current["rows"].get(config, {})
        for split in sorted(set(before) | set(after)):
            delta = after.get(split, 0) - before.get(split, 0)
            if delta:
                by_config.append({"config": config, "split": split, "before": before.get(split, 0),
                                  "after": after.get(split, 0), "added": delta})  # fmt: skip
    by_domain: list[dict[str, Any]] = []
    b, a = prev["qa_by_domain_hop"], current["qa_by_domain_hop"]
    for key in sorted(set(b) | set(a)):
        delta = a.get(key, 0) - b.get(key, 0)
        if delta:
            domain, hop = key.split("|", 1)
            by_domain.append({"domain": domain, "hop_class": hop, "before": b.get(key, 0), "after": a.get(key, 0),
                              "added": delta})  # fmt: skip
    return {"by_config_split": by_config, "by_domain_hop": by_domain}


def _table(rows: Sequence[Mapping[str, Any]], empty: str) -> list[str]:
    if not rows:
        return [empty, ""]
    cols = list(rows[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join("" if r[c] is None else str(r[c]) for c in cols) + " |" for r in rows]
    return [*out, ""]


def diff_markdown(version: str, previous: str | None, changes: Mapping[str, Any], rejects: Mapping[str, int],
                  usage: Mapping[str, int], *, published: str | None = None, dropped: Mapping[str, int] | None = None,
                  difficulty: Sequence[Mapping[str, Any]] = ()) -> str:
    """The refresh's markdown artifact (module docstring)."""
    lines = [f"# Dataset version {version}", "",
             f"Previous version: {previous or 'none (first version)'}. "
             + (f"Published: {published}." if published else "Not published (no Hub repository configured)."), ""]  # fmt: skip
    lines += ["## Rows added per config and split", ""]
    lines += _table(changes["by_config_split"], "No row added or removed.")
    lines += ["## Questions added per domain and hop class", ""]
    lines += _table(changes["by_domain_hop"], "No question added or removed.")
    lines += ["## Rejects of this refresh, by reason", ""]
    lines += _table([{"reason": k, "count": v} for k, v in sorted(rejects.items(), key=lambda kv: (-kv[1], kv[0]))],
                    "No candidate was rejected.")
    if dropped:
        lines += ["## Left out of the export by difficulty", ""]
        lines += _table([{"label": k, "questions": v} for k, v in sorted(dropped.items())], "")
    if difficulty:
        lines += ["## Solver pass rate per hop class", ""]
        lines += _table(list(difficulty), "")
    lines += ["## LLM usage of this refresh", ""]
    lines += _table([{k: usage.get(k, 0) for k in ("llm_calls", "llm_cache_hits", "prompt_tokens", "completion_tokens")}], "")
    return "\n".join(lines)


__all__ = ["diff", "diff_markdown", "summarize", "version_fingerprint"]
