"""Filling the requested mix: a hop class whose planned jobs gave fewer questions than jobs gets jobs on further
seeds (``tasks.qa.refill``), deterministic, 3+ first, and a re-run takes the same seeds and runs nothing again."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.config import load_settings
from schemas.qa import Seed
from tasks.qa.refill import SCAN_PER_SEED, missing_jobs, refill_seeds
from warehouse.db import Warehouse

# GeoNames places in Wikidata's labels (docs/programs/graphs/PROVENANCE.md): about one seed in ten has a three-step
# program, so the sampled 3+ jobs fall short and further seeds exist.
GEO = Path(__file__).resolve().parent.parent / "docs" / "programs" / "graphs" / "geo_wikidata.jsonl"


def test_missing_jobs_counts_planned_jobs_that_ended_without_a_question_per_class():
    planned = [("a", "1-2", "candidates"), ("b", "3+", "candidates"), ("c", "3+", "candidates"),
               ("d", "3+", "candidates")]
    # c ended without a question; e did too but was not planned (another run's)
    assert missing_jobs(planned, {("c", "3+", "candidates"), ("e", "3+", "candidates")}) == {"3+": 1}
    assert missing_jobs(planned, set()) == {}


class _Rule:
    """A seed rule with set answers: ``keep`` for every node but the refused ones, ``depth`` from a table."""

    def __init__(self, depth: dict[str, int], refused=(), programs: bool = True) -> None:
        self._d, self.refused, self.programs, self.asked = depth, set(refused), programs, []

    def keep(self, node: str) -> bool:
        self.asked.append(node)
        return node not in self.refused

    def depth(self, node: str) -> int:
        return self._d.get(node, 0)

    def prefer(self, node: str) -> int:
        return self.depth(node)


ELIGIBLE = [(f"n{i:02d}", 30) for i in range(40)]


def _refill(rule, missing, **kw):
    args = dict(n_seeds=5, n_modes=1, factor=2.0, sampling_seed=0, domain="d", snapshot_id="s", run_id="r",
                used=["n00", "n01"])
    args.update(kw)
    return refill_seeds(ELIGIBLE, rule, missing, **args)


def test_refill_seeds_go_to_3plus_first_where_three_steps_stand_and_follow_the_planned_ranks():
    deep = {f"n{i:02d}": 3 for i in range(0, 40, 4)}  # every fourth node is deep
    out = _refill(_Rule(deep), {"3+": 2, "1-2": 1})
    classes = [h for _, h in out]
    assert classes == ["3+"] * 4 + ["1-2"] * 2  # two seeds per missing question, 3+ first
    assert all(deep.get(s.node, 0) >= 3 for s, h in out if h == "3+")
    nodes = [s.node for s, _ in out]
    assert len(set(nodes)) == len(nodes) and not {"n00", "n01"} & set(nodes)  # never a planned seed, never twice
    assert [s.sample_rank for s, _ in out] == list(range(5, 11))  # after the planned seeds' ranks
    assert all(isinstance(s, Seed) and s.run_id == "r" for s, _ in out)
    assert out == _refill(_Rule(deep), {"3+": 2, "1-2": 1})  # deterministic


def test_refill_is_bounded_by_n_seeds_the_factor_and_the_scan():
    deep = {n: 3 for n, _ in ELIGIBLE}
    assert _refill(_Rule(deep), {"3+": 2}, factor=0) == []
    assert len(_refill(_Rule(deep), {"3+": 9})) == 5  # at most n_seeds a class
    assert len(_refill(_Rule(deep), {"3+": 3}, n_modes=2)) == 3  # a seed runs one job a mode
    # no deep seed at all: the scan stops after SCAN_PER_SEED nodes per seed wanted
    rule = _Rule({})
    assert _refill(rule, {"3+": 1}, n_seeds=1, factor=1.0) == []
    assert len(rule.asked) <= SCAN_PER_SEED
    # without programs (the LLM writer) a 3+ refill seed is any kept seed
    assert len(_refill(_Rule({}, programs=False), {"3+": 1})) == 2


def test_a_3plus_shortfall_no_deep_seed_can_fill_falls_back_to_two_step_1_2_seeds_only_when_asked():
    # No node has a three-step program (a graph of rows and their columns); every other node has a two-step one.
    two = {f"n{i:02d}": 2 for i in range(0, 40, 2)}
    # 3 missing 3+ questions want 6 seeds, none found; falling back, one 1-2 seed per missing 3+ question, each
    # where two steps stand, after the 1-2 class's own 2 (1 missing x factor 2) taken from any kept seed
    out = _refill(_Rule(two), {"3+": 3, "1-2": 1}, n_seeds=20, fall_back=True)
    assert [h for _, h in out] == ["1-2"] * 5
    assert all(two.get(s.node, 0) >= 2 for s, _ in out[2:])
    assert len({s.node for s, _ in out}) == 5 and [s.sample_rank for s, _ in out] == list(range(20, 25))
    # not falling back: the 3+ shortfall stays a shortfall
    assert _refill(_Rule(two), {"3+": 3, "1-2": 1}, n_seeds=20) == _refill(_Rule(two), {"1-2": 1}, n_seeds=20)
    # no two-step program either: nothing to fall back to
    assert _refill(_Rule({}), {"3+": 3}, n_seeds=20, fall_back=True) == []
    # some deep seeds found: only the questions they leave missing fall back (4 of 6 wanted seeds found -> 1)
    deep = {f"n{i:02d}": 3 for i in (2, 3, 4, 5)}
    out = _refill(_Rule({**two, **deep}), {"3+": 3}, n_seeds=20, fall_back=True)
    assert [h for _, h in out] == ["3+"] * 4 + ["1-2"]
    assert {s.node for s, h in out if h == "3+"} == set(deep)
    # at most n_seeds fall back
    assert len(_refill(_Rule(two), {"3+": 40}, n_seeds=5, fall_back=True)) == 5


@pytest.fixture
def settings(tmp_path):
    return load_settings(data_dir=tmp_path, seeds={"min_ball": 5})


def test_qa_generate_fills_a_short_class_and_a_rerun_runs_nothing(prefect_harness, settings, monkeypatch):
    import tasks.qa.seed_plan
    from flows.graphs import import_graphs
    from flows.qa import generate_qa

    # Without the sampler's look-ahead for deep seeds (its window), the first kept seeds in rank order are planned,
    # and about half of them have no three-step program: the planned 3+ jobs fall short.
    monkeypatch.setattr(tasks.qa.seed_plan, "PREFER_WINDOW", 1)

    import_graphs(files={"geo": str(GEO)}, settings=settings)
    out = generate_qa(domains=["geo"], n_seeds=10, hop_mix={"3+": 1.0}, writer="template", use_judge=False,
                      meaning_check="off", paraphrase_threshold=None, settings=settings)
    refill = out["refill"]["geo"]
    assert refill["missing"]["3+"] >= 1 and refill["seeds"]["3+"] >= 1
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        seeds = wh.query("SELECT node, sample_rank FROM seeds WHERE run_id = ? ORDER BY sample_rank", [out["run_id"]])
        jobs = wh.query("SELECT DISTINCT seed, hop_class FROM qa_attempts UNION "
                        "SELECT DISTINCT seed, hop_class FROM qa_job_notes")
        accepted = wh.query("SELECT seed, hop_class FROM qa_attempts WHERE status = 'accepted'")
    planned = [r["node"] for r in seeds if r["sample_rank"] < 10]
    extra = [r["node"] for r in seeds if r["sample_rank"] >= 10]
    assert len(planned) == 10 and len(extra) == refill["seeds"]["3+"] and not set(planned) & set(extra)
    # every refill seed ran its 3+ job, and the run's questions include some from them
    assert {r["seed"] for r in jobs if r["hop_class"] == "3+"} >= set(extra)
    from_planned = sum(r["seed"] in planned for r in accepted)
    assert from_planned == 10 - refill["missing"]["3+"]
    assert out["accepted"] >= from_planned
    rerun = generate_qa(domains=["geo"], n_seeds=10, hop_mix={"3+": 1.0}, writer="template", use_judge=False,
                        meaning_check="off", paraphrase_threshold=None, settings=settings)
    assert rerun["attempts"] == 0 and rerun["refill"] == {}
