"""What mix of hops and kinds a set of questions holds, and why a run's jobs fell short of the mix it was asked for.

The hop x kind table counts questions by the number of path edges (1, 2, 3+; a question's ``hops``) and by its
program's kind (``chain`` | ``conjunction``; a question without a program counts as a chain, as ``QA.kind``
says). It is a count of records, never an estimate: ``qa stats`` feeds it the warehouse's ``qa`` rows, the run
summary of ``qa generate`` the run's accepted questions, the dataset card the exported ``qa`` rows of the complete
graph (an IKG variant is its question again, not another one).

``generate_qa`` is asked for a mix by hop class (``hop_mix``: a share of the seeds per class, ``1-2`` and ``3+``).
:func:`shortfalls` says, per domain and hop class, why the jobs that gave no question gave none, from the records:
the reason code of a job that ended before any attempt (its note: ``program_no_pin``, ``no_path_ambiguous`` ...),
the reject reason of the last attempt of a job whose every attempt was rejected, and the dedup or split reason
of an accepted question dropped afterwards.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from schemas.programs import PROGRAM_KINDS
from schemas.qa import QAAttempt

#: The hop buckets of the table, in order: one hop, two hops, three or more.
HOP_BUCKETS: tuple[str, ...] = ("1", "2", "3+")
#: The kind of a question without a program (``QA.kind``).
DEFAULT_KIND = "chain"

HopKind = tuple[str, str]


def hop_bucket(hops: int) -> str:
    """``"1"``, ``"2"`` or ``"3+"`` for a question of ``hops`` path edges (``ValueError`` below one)."""
    if hops < 1:
        raise ValueError(f"a question has at least one hop, got {hops}")
    return str(hops) if hops < 3 else "3+"


def hop_kind_counts(items: Iterable[tuple[int, str | None]]) -> Counter[HopKind]:
    """``(hop bucket, kind)`` counts of ``(hops, kind)`` pairs; a ``None`` kind (no program) is a chain."""
    return Counter((hop_bucket(h), k or DEFAULT_KIND) for h, k in items)


def counts_by_domain(rows: Iterable[Mapping[str, Any]]) -> dict[str, Counter[HopKind]]:
    """Per domain, the hop x kind counts of warehouse rows ``{domain, hops, kind[, n]}`` (``n``: how many
    questions the row stands for, 1 when absent), as :func:`shapes_sql` selects them."""
    out: dict[str, Counter[HopKind]] = defaultdict(Counter)
    for r in rows:
        out[r["domain"]][(hop_bucket(int(r["hops"])), r["kind"] or DEFAULT_KIND)] += int(r.get("n", 1))
    return dict(out)


def shapes_sql(where: str = "TRUE") -> str:
    """SQL over the ``qa`` table: ``domain, hops, kind, n`` per group (``kind`` NULL for a question without a
    program), for :func:`counts_by_domain`."""
    return ("SELECT domain, json_array_length(path) - 1 AS hops, json_extract_string(program, '$.kind') AS kind, "
            f"count(*) AS n FROM qa WHERE {where} GROUP BY ALL ORDER BY ALL")


def kinds_of(counts: Mapping[HopKind, int]) -> list[str]:
    """The table's kind columns: the program kinds, then any other kind the counts hold, sorted."""
    return [*PROGRAM_KINDS, *sorted({k for _, k in counts} - set(PROGRAM_KINDS))]


def hop_kind_dict(counts: Mapping[HopKind, int]) -> dict[str, dict[str, int]]:
    """The table as JSON-ready ``{hops: {kind: n}}``, every bucket and kind present (zeros included)."""
    return {b: {k: int(counts.get((b, k), 0)) for k in kinds_of(counts)} for b in HOP_BUCKETS}


def hop_kind_lines(counts: Mapping[HopKind, int], *, indent: str = "") -> list[str]:
    """The table as aligned text lines: one row per hop bucket and a total row, one column per kind and a total
    column."""
    kinds = kinds_of(counts)
    head = ["hops", *kinds, "all"]
    rows = [[b, *(str(counts.get((b, k), 0)) for k in kinds), str(sum(counts.get((b, k), 0) for k in kinds))]
            for b in HOP_BUCKETS]  # fmt: skip
    rows.append(["all", *(str(sum(counts.get((b, k), 0) for b in HOP_BUCKETS)) for k in kinds),
                 str(sum(counts.values()))])  # fmt: skip
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return [indent + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
            for r in [head, *rows]]  # fmt: skip


def hop_kind_markdown(counts: Mapping[HopKind, int]) -> str:
    """The table as markdown (the dataset card's)."""
    kinds = kinds_of(counts)
    lines = ["| hops | " + " | ".join(kinds) + " | all |", "|---|" + "---|" * (len(kinds) + 1)]
    for b in HOP_BUCKETS:
        cells = [counts.get((b, k), 0) for k in kinds]
        lines.append(f"| {b} | " + " | ".join(str(n) for n in cells) + f" | {sum(cells)} |")
    totals = [sum(counts.get((b, k), 0) for b in HOP_BUCKETS) for k in kinds]
    lines.append("| all | " + " | ".join(str(n) for n in totals) + f" | {sum(counts.values())} |")
    return "\n".join(lines)


# -- the requested mix and why a run fell short of it ------------------------------------------------------------------
def shortfalls(attempts: Sequence[QAAttempt], ended: Mapping[tuple[str, str, str, str], int],
               dropped: Mapping[tuple[str, str, str, str], int]) -> dict[tuple[str, str], Counter[str]]:
    """Per ``(domain, hop class)``, the jobs that gave no question, counted by reason: ``ended`` (jobs that ended
    before any attempt, by ``(domain, hop class, mode, reason)``: the job notes' reason codes), the last attempt's
    reject reason of every job with attempts and none accepted, and ``dropped`` (accepted questions dropped by
    dedup or the splits, by ``(domain, hop class, mode, reason)``)."""
    out: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for (domain, hop, _, reason), n in ended.items():
        if n:
            out[(domain, hop)][reason] += n
    jobs: dict[tuple[str, str, str, str], list[QAAttempt]] = defaultdict(list)
    for a in attempts:
        jobs[(a.domain, a.seed, a.hop_class, a.mode)].append(a)
    for (domain, _, hop, _), atts in jobs.items():
        if any(a.status == "accepted" for a in atts):
            continue
        last = max(atts, key=lambda a: a.attempt)
        out[(domain, hop)][last.reject_reason or "rejected"] += 1
    for (domain, hop, _, reason), n in dropped.items():
        if n:
            out[(domain, hop)][reason] += n
    return dict(out)


def _ranked(reasons: Mapping[str, int]) -> list[tuple[str, int]]:
    """Reasons commonest first, ties by name (the same order whatever order they were counted in)."""
    return sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))


def _hops_said(b: str) -> str:
    return f"{b} hop" if b == "1" else f"{b} hops"


def mix_line(domain: str, counts: Mapping[HopKind, int], hop_mix: Mapping[str, float] | None,
             jobs: Mapping[str, int], kept: Mapping[str, int], short: Mapping[str, Counter[str]],
             *, top: int = 4) -> str:
    """One domain's mix in a line: the hop buckets and kinds of the questions it kept, then (with ``hop_mix``) per
    hop class the share asked, the jobs run and the questions kept, and for a class with fewer questions than
    jobs the commonest reasons (``short``)."""
    total = sum(counts.values())
    hops = ", ".join(f"{_hops_said(b)} {sum(n for (bb, _), n in counts.items() if bb == b)}" for b in HOP_BUCKETS)
    kinds = ", ".join(f"{k} {sum(n for (_, kk), n in counts.items() if kk == k)}" for k in kinds_of(counts))
    parts = [f"{domain}: reached {total} questions ({hops}; {kinds})"]
    for hop_class, share in (hop_mix or {}).items():
        n_jobs, n_kept = jobs.get(hop_class, 0), kept.get(hop_class, 0)
        got = f"{n_kept / total:.0%} of the questions" if total else "no questions"
        said = f"{hop_class} hops asked {share:.0%} of the seeds, reached {got} ({n_kept} of {n_jobs} jobs)"
        why = short.get(hop_class, Counter())
        if n_kept < n_jobs and why:
            said += " short because: " + ", ".join(f"{r} {n}" for r, n in _ranked(why)[:top])
        parts.append(said)
    return "; ".join(parts)


def mix_report(hop_mix: Mapping[str, float] | None, counts_by_domain: Mapping[str, Mapping[HopKind, int]],
               jobs: Iterable[tuple[str, str, str]], kept: Mapping[tuple[str, str, str], int],
               short: Mapping[tuple[str, str], Counter[str]]) -> dict[str, dict[str, Any]]:
    """Per domain: its hop x kind counts, the jobs and kept questions per hop class, the reasons it fell short,
    and :func:`mix_line`. ``jobs`` are ``(domain, hop class, mode)`` per job run, ``kept`` counts kept questions
    per ``(domain, hop class, mode)``."""
    n_jobs: dict[str, Counter[str]] = defaultdict(Counter)
    for domain, hop, _ in jobs:
        n_jobs[domain][hop] += 1
    n_kept: dict[str, Counter[str]] = defaultdict(Counter)
    for (domain, hop, _), n in kept.items():
        n_kept[domain][hop] += n
    out: dict[str, dict[str, Any]] = {}
    for domain in sorted(set(n_jobs) | set(n_kept) | set(counts_by_domain)):
        counts = counts_by_domain.get(domain, Counter())
        why = {hop: c for (d, hop), c in short.items() if d == domain}
        out[domain] = {
            "hop_kind": hop_kind_dict(counts),
            "jobs": dict(sorted(n_jobs[domain].items())),
            "kept": dict(sorted(n_kept[domain].items())),
            "short": {hop: dict(_ranked(c)) for hop, c in sorted(why.items())},
            "line": mix_line(domain, counts, hop_mix, n_jobs[domain], n_kept[domain], why),
        }
    return out


__all__ = ["DEFAULT_KIND", "HOP_BUCKETS", "counts_by_domain", "hop_bucket", "hop_kind_counts", "hop_kind_dict",
           "hop_kind_lines", "hop_kind_markdown", "kinds_of", "mix_line", "mix_report", "shapes_sql", "shortfalls"]
