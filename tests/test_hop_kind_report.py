"""The hop x kind report (``tasks.qa.mix``): counts of a hand-built reference set of questions through every way
it is shown (the pure counts, the warehouse query of ``qa stats`` and the run summary, the CLI, the dataset card),
and the per-domain mix with the reasons a run fell short, from hand-built attempts and job notes."""

from __future__ import annotations

from collections import Counter

import pytest
from typer.testing import CliRunner

from flows.cli import app
from schemas.config import load_settings
from schemas.programs import ProgramConstraint, ProgramStep, QueryProgram
from schemas.qa import QA, PathEdge, QAAttempt
from tasks.export.card import dataset_card
from tasks.export.rows import qa_row
from tasks.qa import mix
from warehouse.db import Warehouse


def _chain(nodes: list[str], *, pinned: bool = False) -> QueryProgram:
    steps = [ProgramStep(label=f"r{i}") for i in range(len(nodes) - 1)]
    cons = [ProgramConstraint(node=1, label="pin", value="Pinned value")] if pinned else []
    return QueryProgram(kind="conjunction" if pinned else "chain", start=nodes[0], steps=steps, constraints=cons,
                        nodes=nodes)


def _qa(domain: str, hops: int, program: str | None, i: int) -> QA:
    """A question of ``hops`` path edges; ``program``: None (a bare path), "chain" or "conjunction"."""
    path = [f"{domain} node {i}.{k}" for k in range(hops + 1)]
    edges = [PathEdge(head=a, tail=b, relation=f"r{k}") for k, (a, b) in enumerate(zip(path, path[1:]))]
    prog = None if program is None else _chain(path, pinned=program == "conjunction")
    return QA(qa_id=f"{domain}-{i}", domain=domain, seed=path[0], hop_class="1-2" if hops <= 2 else "3+", path=path,
              path_edges=edges, question=f"Question {i} about {path[0]}?", answer=path[-1], split="train",
              run_id="run-ref", program=prog)  # fmt: skip


# The reference set: (domain, hops, program kind or None for a bare path) and how many of each.
REFERENCE = [
    ("geo", 1, None, 3), ("geo", 1, "chain", 1), ("geo", 2, "chain", 2), ("geo", 2, "conjunction", 1),
    ("geo", 3, "chain", 1), ("geo", 4, "conjunction", 2), ("bio", 2, None, 1), ("bio", 3, "conjunction", 1),
]  # fmt: skip
# Counted by hand from REFERENCE: no program counts as a chain; 3 and 4 hops are both "3+".
EXPECTED = {
    "geo": {"1": {"chain": 4, "conjunction": 0}, "2": {"chain": 2, "conjunction": 1},
            "3+": {"chain": 1, "conjunction": 2}},
    "bio": {"1": {"chain": 0, "conjunction": 0}, "2": {"chain": 1, "conjunction": 0},
            "3+": {"chain": 0, "conjunction": 1}},
    "all": {"1": {"chain": 4, "conjunction": 0}, "2": {"chain": 3, "conjunction": 1},
            "3+": {"chain": 1, "conjunction": 3}},
}  # fmt: skip


@pytest.fixture
def reference() -> list[QA]:
    out, i = [], 0
    for domain, hops, kind, n in REFERENCE:
        for _ in range(n):
            out.append(_qa(domain, hops, kind, i))
            i += 1
    return out


def test_hop_buckets():
    assert [mix.hop_bucket(h) for h in (1, 2, 3, 4, 7)] == ["1", "2", "3+", "3+", "3+"]
    with pytest.raises(ValueError):
        mix.hop_bucket(0)


def test_the_counts_of_the_reference_set(reference):
    every = mix.hop_kind_counts((q.hops, q.kind) for q in reference)
    assert mix.hop_kind_dict(every) == EXPECTED["all"]
    geo = mix.hop_kind_counts((q.hops, q.program.kind if q.program else None) for q in reference if q.domain == "geo")
    assert mix.hop_kind_dict(geo) == EXPECTED["geo"]
    assert mix.hop_kind_lines(every) == [
        "hops  chain  conjunction  all",
        "1         4            0    4",
        "2         3            1    4",
        "3+        1            3    4",
        "all       8            4   12",
    ]
    assert mix.hop_kind_markdown(every).splitlines() == [
        "| hops | chain | conjunction | all |", "|---|---|---|---|", "| 1 | 4 | 0 | 4 |", "| 2 | 3 | 1 | 4 |",
        "| 3+ | 1 | 3 | 4 |", "| all | 8 | 4 | 12 |"]  # fmt: skip


def test_the_warehouse_query_counts_what_the_records_say(reference, tmp_path):
    with Warehouse(tmp_path / "wh.duckdb") as wh:
        wh.write("qa", reference)
        by_domain = mix.counts_by_domain(wh.query(mix.shapes_sql()))
        only_bio = mix.counts_by_domain(wh.query(mix.shapes_sql("domain = ?"), ["bio"]))
    assert {d: mix.hop_kind_dict(c) for d, c in by_domain.items()} == {"geo": EXPECTED["geo"], "bio": EXPECTED["bio"]}
    assert list(only_bio) == ["bio"] and mix.hop_kind_dict(only_bio["bio"]) == EXPECTED["bio"]


def test_qa_stats_prints_the_table_for_all_domains_and_each(reference):
    with Warehouse(load_settings().warehouse_path) as wh:
        wh.write("qa", reference)
    result = CliRunner().invoke(app, ["qa", "stats"])
    assert result.exit_code == 0, result.output
    lines = [line.rstrip() for line in result.output.splitlines()]
    at = lines.index("questions by hops x kind, all domains:")
    assert lines[at + 1: at + 6] == ["  " + line for line in mix.hop_kind_lines(mix.hop_kind_counts(
        (q.hops, q.kind) for q in reference))]  # fmt: skip
    assert lines[at + 4] == "  3+        1            3    4"
    bio = lines.index("questions by hops x kind, bio:")
    assert lines[bio + 3: bio + 6] == ["  2         1            0    1", "  3+        0            1    1",
                                       "  all       1            1    2"]  # fmt: skip
    assert "questions by hops x kind, geo:" in lines


def test_the_dataset_card_counts_the_complete_graph_rows_only(reference):
    rows = [qa_row(q, []) for q in reference]
    variant = {**rows[0], "kg_setting": "incomplete", "ikg_level": 0.2}  # an IKG variant: the same question again
    card = dataset_card("v1", {"qa": {"train": [*rows, variant]}})
    assert "| hops | chain | conjunction | all |" in card
    assert "| 1 | 4 | 0 | 4 |" in card and "| 3+ | 1 | 3 | 4 |" in card and "| all | 8 | 4 | 12 |" in card
    assert "Questions by hops (path edges) and kind" in card


# -- the requested mix and why a run fell short ------------------------------------------------------------------------
def _attempt(seed: str, hop: str, n: int, status: str, reason: str | None = None) -> QAAttempt:
    return QAAttempt(attempt_id=f"{seed}-{hop}-{n}", run_id="run-ref", domain="geo", seed=seed, hop_class=hop,
                     mode="candidates", attempt=n, status=status, reject_reason=reason)  # fmt: skip


def test_shortfalls_name_the_job_notes_codes_the_last_rejects_and_the_drops():
    attempts = [
        _attempt("a", "1-2", 1, "rejected", "leaks_answer"), _attempt("a", "1-2", 2, "accepted"),
        _attempt("b", "3+", 1, "rejected", "leaks_answer"), _attempt("b", "3+", 2, "rejected", "judge_invalid"),
        _attempt("c", "3+", 1, "rejected", "not_answerable_from_facts"),
        _attempt("d", "3+", 1, "accepted"),
    ]  # fmt: skip
    ended = Counter({("geo", "3+", "candidates", "program_no_pin"): 3, ("geo", "3+", "candidates", "no_path_ambiguous"): 1})
    dropped = Counter({("geo", "3+", "candidates", "near_duplicate"): 1})
    short = mix.shortfalls(attempts, ended, dropped)
    assert short == {("geo", "3+"): Counter({"program_no_pin": 3, "no_path_ambiguous": 1, "judge_invalid": 1,
                                             "not_answerable_from_facts": 1, "near_duplicate": 1})}  # fmt: skip
    # 2 + 7 jobs were run: a and another 1-2 hop job gave a question each; of the seven 3+ hop jobs, four ended
    # before any attempt, b and c were rejected, and d's question was dropped by dedup
    jobs = [("geo", "1-2", "candidates")] * 2 + [("geo", "3+", "candidates")] * 7
    kept = Counter({("geo", "1-2", "candidates"): 2})
    counts = mix.hop_kind_counts([(1, None), (2, "conjunction")])
    report = mix.mix_report({"1-2": 0.5, "3+": 0.5}, {"geo": counts}, jobs, kept, short)
    geo = report["geo"]
    assert geo["jobs"] == {"1-2": 2, "3+": 7} and geo["kept"] == {"1-2": 2}
    assert list(geo["short"]["3+"].items()) == [("program_no_pin", 3), ("judge_invalid", 1), ("near_duplicate", 1),
                                                ("no_path_ambiguous", 1), ("not_answerable_from_facts", 1)]
    assert geo["line"] == (
        "geo: reached 2 questions (1 hop 1, 2 hops 1, 3+ hops 0; chain 1, conjunction 1); "
        "1-2 hops asked 50% of the seeds, reached 100% of the questions (2 of 2 jobs); "
        "3+ hops asked 50% of the seeds, reached 0% of the questions (0 of 7 jobs) short because: "
        "program_no_pin 3, judge_invalid 1, near_duplicate 1, no_path_ambiguous 1")


def test_a_mix_line_without_a_requested_mix_says_only_what_was_reached():
    line = mix.mix_line("bio", mix.hop_kind_counts([(3, "chain")] * 2), None, {}, {}, {})
    assert line == "bio: reached 2 questions (1 hop 0, 2 hops 0, 3+ hops 2; chain 2, conjunction 0)"
