"""Candidate gold paths (bounded start -> answer search, rendered as triples), the per-question report, and the
QA tables of migration 0007 (every record type written and read back)."""

from __future__ import annotations

from testing.permissive_profiles import permissive_book

import json
from pathlib import Path

import pytest

from schemas.graph import Relation
from schemas.qa import QA, GoldPath, QAAttempt, QAReject, QAYield, Seed, make_attempt_id, make_qa_id
from tasks.qa.candidates import sample_candidate_paths
from tasks.qa.context import path_edges, path_source_chunks
from tasks.qa.gold_paths import (
    candidate_gold_paths,
    default_max_hops,
    gold_path_records,
    gold_path_report,
    summarize_reports,
)
from tasks.graph.importers import read_triples
from tasks.graph.kg import KnowledgeGraph
from tasks.qa.checks import run_checks

DEMO = Path(__file__).resolve().parent.parent / "flows" / "demo" / "graphs"


@pytest.fixture(scope="module")
def cs() -> KnowledgeGraph:
    return read_triples(DEMO / "cs.jsonl", "cs").to_graph()


@pytest.fixture()
def diamond() -> KnowledgeGraph:
    """s -> a -> t, s -> b -> t, s -> c -> d -> t, with a parallel relation on s - a."""
    return KnowledgeGraph.from_records(
        "t", [],
        [Relation(domain="t", source="s", target="a", relation="knows", weight=1.0, directed=True),
         Relation(domain="t", source="s", target="a", relation="admires", weight=2.0, directed=True),
         Relation(domain="t", source="a", target="t", relation="built", directed=True),
         Relation(domain="t", source="t", target="b", relation="owns", directed=True),  # walked backwards
         Relation(domain="t", source="s", target="b", relation="met", directed=True),
         Relation(domain="t", source="s", target="c", relation="r1", directed=True),
         Relation(domain="t", source="c", target="d", relation="r2", directed=True),
         Relation(domain="t", source="d", target="t", relation="r3", directed=True)],
        add_missing_entities=True,
    )  # fmt: skip


def make_qa(kg: KnowledgeGraph, path: list[str], question: str = "q?") -> QA:
    edges = path_edges(kg, path)
    return QA(
        qa_id=make_qa_id(kg.domain, kg.snapshot_id, question, path[-1], path), domain=kg.domain, seed=path[0],
        hop_class="1-2" if len(path) <= 3 else "3+", path=path, path_edges=edges, question=question,
        answer=path[-1], source_chunk_ids=path_source_chunks(edges),
    )  # fmt: skip


def test_paths_are_ordered_shortest_first_then_by_name(diamond):
    search = candidate_gold_paths(diamond, "s", "t", 3)
    assert [p.nodes for p in search.paths] == [("s", "a", "t"), ("s", "b", "t"), ("s", "c", "d", "t")]
    assert search.complete and search.stopped is None
    assert [p.hops for p in search.paths] == [2, 2, 3]
    assert [p.nodes for p in candidate_gold_paths(diamond, "s", "t", 2).paths] == [("s", "a", "t"), ("s", "b", "t")]


def test_triples_use_the_strongest_parallel_relation_in_stored_direction(diamond):
    first, second, _ = candidate_gold_paths(diamond, "s", "t", 3).paths
    assert first.triples == (("s", "admires", "a"), ("a", "built", "t"))
    assert second.triples == (("s", "met", "b"), ("t", "owns", "b"))


def test_lightrag_style_relations_render_keywords():
    kg = KnowledgeGraph.from_records(
        "t", [], [Relation(domain="t", source="x", target="y", keywords=["invented", "1936"], description="x made y")],
        add_missing_entities=True,
    )  # fmt: skip
    (p,) = candidate_gold_paths(kg, "y", "x", 1).paths
    # the fact reads from the relation's stored source, whichever end the path starts at ("x made y")
    assert p.triples == (("x", "invented, 1936", "y"),)
    assert candidate_gold_paths(kg, "x", "y", 1).paths[0].triples == p.triples


def test_count_bound(diamond):
    search = candidate_gold_paths(diamond, "s", "t", 3, max_paths=2)
    assert len(search.paths) == 2 and search.stopped == "max_paths"
    assert [p.nodes for p in search.paths] == [("s", "a", "t"), ("s", "b", "t")]


def test_time_budget_on_a_dense_graph_returns_early():
    n = 40
    kg = KnowledgeGraph.from_triples("t", [(f"v{i:02d}", "r", f"v{j:02d}") for i in range(n) for j in range(i + 1, n)])
    ticks = iter(range(10**9))  # a clock that advances 1 ms a reading, whatever the machine's load

    def clock() -> float:
        return next(ticks) / 1000

    search = candidate_gold_paths(kg, "v00", "v39", 8, max_paths=10**9, time_budget_s=0.05, clock=clock)
    assert search.stopped == "time_budget" and not search.complete
    assert 0.05 < search.elapsed_s <= 0.06  # it stopped at the first reading past the budget
    assert search.paths and search.paths[0].nodes == ("v00", "v39")
    lengths = [p.hops for p in search.paths]
    assert lengths == sorted(lengths)


def test_argument_errors(diamond):
    with pytest.raises(KeyError):
        candidate_gold_paths(diamond, "s", "nowhere", 3)
    with pytest.raises(ValueError):
        candidate_gold_paths(diamond, "s", "t", 0)
    assert candidate_gold_paths(diamond, "s", "s", 3).paths == ()


def test_report_and_records(diamond):
    qa = make_qa(diamond, ["s", "c", "d", "t"])
    assert default_max_hops(qa.path) == 4
    search, report = gold_path_report(diamond, qa)
    assert report.n_paths == 3 and report.generator_path_found and report.generator_rank == 2
    assert report.shortest_hops == 2 and report.question_hops == 3 and report.stopped is None
    rows = gold_path_records(qa, search, run_id="r1")
    assert [r.rank for r in rows] == [0, 1, 2]
    assert [r.is_generator_path for r in rows] == [False, False, True]
    assert all(r.verdict == "unverified" and r.qa_id == qa.qa_id for r in rows)

    cut, cut_report = gold_path_report(diamond, qa, max_paths=1)
    assert cut_report.stopped == "max_paths" and not cut_report.generator_path_found
    rows = gold_path_records(qa, cut, kg=diamond)
    assert len(rows) == 2 and rows[-1].is_generator_path and rows[-1].path == qa.path
    assert rows[-1].triples == [("s", "r1", "c"), ("c", "r2", "d"), ("d", "r3", "t")]
    assert len(gold_path_records(qa, cut)) == 1  # no graph given: nothing appended

    summary = summarize_reports([report, cut_report])
    assert summary["questions"] == 2 and summary["generator_found_share"] == 0.5
    assert summary["shorter_path_share"] == 1.0 and summary["complete_share"] == 0.5
    assert summarize_reports([])["questions"] == 0


def test_demo_graph_questions_find_their_own_path(cs):
    reports = []
    book = permissive_book(cs)  # the search is about paths, not wording: every relation may be asked here
    for start in ["Alan Turing", "ARPANET", "C language", "Tim Berners-Lee"]:
        for cand in sample_candidate_paths(cs, start, 4, count=4, seed=0, book=book):
            qa = make_qa(cs, cand.nodes)
            search, report = gold_path_report(cs, qa, time_budget_s=5.0)
            assert report.generator_path_found, (cand.nodes, report)
            assert report.shortest_hops == 3  # candidates are shortcut-free
            assert all(p.nodes[0] == start and p.nodes[-1] == cand.nodes[-1] for p in search.paths)
            assert all(len(set(p.nodes)) == len(p.nodes) and p.hops <= 4 for p in search.paths)
            reports.append(report)
    assert reports and summarize_reports(reports)["generator_found_share"] == 1.0


# -- warehouse tables (migration 0007) ----------------------------------------------------------------------------------------
def test_qa_tables_round_trip(cs):
    from warehouse.db import Warehouse

    path = ["Alan Turing", "King's College, Cambridge"]
    qa = make_qa(cs, path, question="Where did the author of On Computable Numbers study?")
    attempt_id = make_attempt_id("run-1", "cs", None, "Alan Turing", "1-2", "free", 1)
    verdicts = run_checks(cs, path, qa.question, qa.answer, "1-2")
    attempt = QAAttempt(
        attempt_id=attempt_id, run_id="run-1", domain="cs", seed="Alan Turing", hop_class="1-2", mode="free",
        attempt=1, path=path, question=qa.question, answer=qa.answer, verdicts=verdicts, status="rejected",
        reject_reason="start_not_named", raw_text='{"path": [...]}',
    )  # fmt: skip
    search, _ = gold_path_report(cs, qa)
    with Warehouse(":memory:") as wh:
        assert wh.write_batch("seeds", [Seed(domain="cs", node="Alan Turing", ball_size=66, depth=3, sample_rank=0,
                                             run_id="run-1", sampling_seed=7)]) == 1  # fmt: skip
        wh.write_batch("qa_attempts", [attempt])
        wh.write_batch("qa", [qa])
        wh.write_batch("qa_rejects", [QAReject(run_id="run-1", domain="cs", stage="dedup", reason="duplicate",
                                               qa_id="qa-x", duplicate_of=qa.qa_id, similarity=1.0)])  # fmt: skip
        wh.write_batch("gold_paths", gold_path_records(qa, search, kg=cs, run_id="run-1"))
        wh.write_batch("qa_yields", [QAYield(run_id="run-1", domain="cs", hop_class="1-2", mode="free",
                                             stage="checks", count=1, reason="start_not_named")])  # fmt: skip

        row = wh.query("SELECT * FROM qa")[0]
        back = QA.model_validate({**row, "path": json.loads(row["path"]), "path_edges": json.loads(row["path_edges"]),
                                  "source_chunk_ids": json.loads(row["source_chunk_ids"])})  # fmt: skip
        assert back == qa and "King's College, Cambridge" in back.path  # the apostrophe survives
        arow = wh.query("SELECT * FROM qa_attempts")[0]
        back_attempt = QAAttempt.model_validate(
            {**arow, "path": json.loads(arow["path"]), "verdicts": json.loads(arow["verdicts"])}
        )
        assert back_attempt == attempt
        g = wh.query("SELECT * FROM gold_paths ORDER BY rank")
        gold = [GoldPath.model_validate({**r, "path": json.loads(r["path"]), "triples": json.loads(r["triples"])})
                for r in g]  # fmt: skip
        assert gold == gold_path_records(qa, search, kg=cs, run_id="run-1")
        assert wh.scalar("SELECT duplicate_of FROM qa_rejects") == qa.qa_id
        assert wh.scalar("SELECT path->>1 FROM qa") == "King's College, Cambridge"
        assert wh.scalar("SELECT count(*) FROM qa_yields WHERE reason = 'start_not_named'") == 1
