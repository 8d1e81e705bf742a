"""The QA funnel per domain, hop class and mode: seeds -> attempts -> code checks (with the meaning check) -> judge
-> accepted -> dedup.

Counts come from the stored attempts and rejects, so the yield report always agrees with the warehouse. A job that
ended before any attempt (no candidate path from its seed) counts at the ``seeds`` stage under the reason its note
gives (``tasks.qa.candidates.NO_PATH_REASONS``: too shallow, every path a shortcut, ambiguous, ...).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from schemas.qa import CHECK_CODES, QAAttempt, QAYield


def funnel(
    run_id: str,
    jobs: Iterable[tuple[str, str, str]],
    attempts: Sequence[QAAttempt],
    accepted_after_dedup: Counter,
    dedup_rejects: Counter,
    ended_jobs: Counter | None = None,
) -> list[QAYield]:
    """Yield rows. ``jobs`` are (domain, hop_class, mode) per started job; ``accepted_after_dedup`` and
    ``dedup_rejects`` count per (domain, hop_class, mode) and per (domain, hop_class, mode, reason);
    ``ended_jobs`` counts the jobs that ended before any attempt per (domain, hop_class, mode, reason)."""
    ended_jobs = ended_jobs or Counter()
    rows: list[QAYield] = []
    job_count = Counter(jobs)
    by_key: dict[tuple[str, str, str], list[QAAttempt]] = defaultdict(list)
    for a in attempts:
        by_key[(a.domain, a.hop_class, a.mode)].append(a)
    keys = sorted(set(job_count) | set(by_key) | {k[:3] for k in ended_jobs})
    for key in keys:
        domain, hop, mode = key
        atts = by_key.get(key, [])
        generated = [a for a in atts if a.reject_reason not in _NOT_GENERATED]
        checked = [a for a in generated if a.reject_reason not in _CHECK_CODES]
        judged_ok = [a for a in checked if a.status == "accepted"]
        base = {"run_id": run_id, "domain": domain, "hop_class": hop, "mode": mode}
        rows += [
            QAYield(**base, stage="seeds", count=job_count.get(key, 0)),
            QAYield(**base, stage="generated", count=len(generated)),
            QAYield(**base, stage="checks", count=len(checked)),
            QAYield(**base, stage="judge", count=len(judged_ok)),
            QAYield(**base, stage="accepted", count=len({a.seed for a in judged_ok})),
            QAYield(**base, stage="dedup", count=accepted_after_dedup.get(key, 0)),
        ]
        for (d, h, m, reason), n in sorted(ended_jobs.items()):
            if (d, h, m) == key and n:
                rows.append(QAYield(**base, stage="seeds", count=n, reason=reason))
        reasons = Counter(a.reject_reason for a in atts if a.reject_reason)
        for reason, n in sorted(reasons.items()):
            stage = "generated" if reason in _NOT_GENERATED else ("judge" if reason == "judge_invalid" else "checks")
            rows.append(QAYield(**base, stage=stage, count=n, reason=reason))
        for (d, h, m, reason), n in sorted(dedup_rejects.items()):
            if (d, h, m) == key:
                # a split conflict is dropped at the split step, after dedup; it has its own stage in the funnel
                stage = "splits" if reason == "split_conflict" else "dedup"
                rows.append(QAYield(**base, stage=stage, count=n, reason=reason))
    return rows


#: Every code a code check, text gate or the meaning check (``tasks.qa.meaning_check``, the verifier answering
#: from the path's facts alone, before the judge) rejects with: those attempts were generated but stopped at
#: "checks" (``not_answerable_from_facts`` is counted there, not as a judge verdict).
_CHECK_CODES = frozenset(CHECK_CODES.values())
#: No question came out: the LLM gave nothing usable, or the template writer could not phrase any candidate.
_NOT_GENERATED = frozenset({"llm_error", "template_unphrasable"})


def yield_table(rows: Sequence[QAYield], usage: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One line per (domain, hop class, mode): the funnel and the top reject reasons, for an artifact."""
    out = []
    grouped: dict[tuple[str, str, str], list[QAYield]] = defaultdict(list)
    for r in rows:
        grouped[(r.domain, r.hop_class, r.mode)].append(r)
    for (domain, hop, mode), rs in sorted(grouped.items()):
        totals = {r.stage: r.count for r in rs if not r.reason}
        reasons = sorted(((r.count, r.reason) for r in rs if r.reason), reverse=True)
        line = {
            "domain": domain, "hop": hop, "mode": mode,
            "seeds": totals.get("seeds", 0), "attempts ok-json": totals.get("generated", 0),
            "passed checks": totals.get("checks", 0), "passed judge": totals.get("judge", 0),
            "accepted": totals.get("accepted", 0), "after dedup": totals.get("dedup", 0),
            "top rejects": ", ".join(f"{reason} {n}" for n, reason in reasons[:4]),
        }
        out.append(line)
    if usage and out:
        accepted = sum(line["after dedup"] for line in out)
        calls = usage.get("llm_calls", 0)
        tokens = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
        for line in out:
            line["LLM calls / accepted (run)"] = round(calls / accepted, 1) if accepted else "-"
            line["tokens / accepted (run)"] = round(tokens / accepted) if accepted else "-"
    return out
