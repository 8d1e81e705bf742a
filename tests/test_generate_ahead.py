"""Generation keeps the endpoint's slots busy: each job's preparation runs ahead in forked processes
(``flows.batches.Ahead``), a domain's refill is planned as soon as its first jobs have landed, among the other
domains' batches (``LATER`` in the batch loop), and what lands is what it was before. Every check here reads the order
in which things happened, never a clock."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from flows.batches import LATER, Ahead, batch_runner, run_batches
from schemas.config import RunnerConfig, load_settings
from warehouse.db import Warehouse

GEO = Path(__file__).resolve().parent.parent / "docs" / "programs" / "graphs" / "geo_wikidata.jsonl"


def _square_and_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def test_ahead_computes_in_another_process_and_hands_back_each_result_in_order():
    ahead = Ahead(workers=2)
    try:
        first = ahead.submit(_square_and_pid, [1, 2, 3])
        second = ahead.submit(_square_and_pid, [4, 5])
        results = [f.result(timeout=60) for f in first + second]
    finally:
        ahead.close()
    assert [r[0] for r in results] == [1, 4, 9, 16, 25]
    assert os.getpid() not in {r[1] for r in results}  # none of it ran in this process
    assert len({r[1] for r in results[:3]}) == 1 and ahead.lost == 0  # one child a submit


def _dies_at_three(x: int) -> int:
    if x == 3:
        os._exit(7)
    return x


def test_a_lost_child_leaves_none_for_what_it_did_not_send():
    ahead = Ahead(workers=1)
    try:
        futures = ahead.submit(_dies_at_three, [1, 2, 3, 4])
        after = ahead.submit(_dies_at_three, [5])  # the next child in line still runs
        assert [f.result(timeout=60) for f in futures] == [1, 2, None, None]
        assert after[0].result(timeout=60) == 5
    finally:
        ahead.close()
    assert ahead.lost == 1


@task(name="toy-ahead-batch", cache_policy=NO_CACHE)
def _echo(item: str) -> str:
    return item.upper()


def test_later_waits_for_a_landing_then_plans_what_it_read(prefect_harness):
    """A plan that can only go on once its first batch has landed yields ``LATER``; the loop submits nothing more,
    lands the batch, and asks again: the second batch is planned after the first landed, not after the loop ended."""
    events: list[str] = []
    landed: list[str] = []

    def plan():
        events.append("plan a")
        yield "a"
        while not landed:
            events.append("later")
            yield LATER
        events.append(f"plan b after {landed}")
        yield "b"

    @flow
    def go() -> None:
        with batch_runner(RunnerConfig(max_workers=2)) as r:
            for item, out in run_batches(_echo, plan(), lambda i: {"item": i}, runner=r, in_flight=2):
                events.append(f"land {out}")
                landed.append(item)

    go()
    assert events[0] == "plan a" and "later" in events
    assert events[events.index("land A") + 1] == "plan b after ['a']"
    assert events[-1] == "land B"


def test_later_with_nothing_in_flight_is_a_bug_said_as_such(prefect_harness):
    def plan():
        yield LATER

    @flow
    def go() -> None:
        with batch_runner(RunnerConfig(max_workers=2)) as r:
            list(run_batches(_echo, plan(), lambda i: {"item": i}, runner=r, in_flight=2))

    with pytest.raises(RuntimeError, match="wait for one to land, and none is in flight"):
        go()


@pytest.fixture
def settings(tmp_path):
    # Two batches in flight: the second domain is planned while the first one's jobs run.
    return load_settings(data_dir=tmp_path, seeds={"min_ball": 5}, runner={"kind": "threads", "in_flight": 2})


def _generate(settings):
    from flows.qa import generate_qa

    # The template writer and no judge: no endpoint call; about half of the sampled 3+ seeds have no three-step
    # program, so each domain's planned jobs fall short and its refill runs (as in tests/test_refill.py). A domain's
    # 20 jobs are one unit, prepared ahead.
    return generate_qa(domains=["geo", "geo2"], n_seeds=20, hop_mix={"3+": 1.0}, writer="template",
                       use_judge=False, meaning_check="off", paraphrase_threshold=None, batch_size=20,
                       settings=settings)


def _record(monkeypatch, events: list[tuple[str, ...]]) -> None:
    """Record, in order: a domain's jobs sent to be prepared ahead, each unit landing (first jobs or refill), each
    refill planned and each deduplication."""
    import flows.qa
    import tasks.qa.seed_plan

    real_submit, real_write = Ahead.submit, flows.qa.GenerateStep.write
    real_refill, real_dedup = tasks.qa.seed_plan.refill_seeds, flows.qa._dedup_domain

    def submit(self, fn, items, **kw):
        events.append(("prepare", items[0][0].domain))
        return real_submit(self, fn, items, **kw)

    def write(self, rt, unit, records, con):
        events.append(("land", unit.domain, "refill" if unit.extra.get("refill") else "first"))
        return real_write(self, rt, unit, records, con)

    def refill(eligible, rule, missing, **kw):
        events.append(("refill", kw["domain"]))
        return real_refill(eligible, rule, missing, **kw)

    def dedup(rt, domain, *a):
        events.append(("dedup", domain))
        return real_dedup(rt, domain, *a)

    monkeypatch.setattr(Ahead, "submit", submit)
    monkeypatch.setattr(flows.qa.GenerateStep, "write", write)
    monkeypatch.setattr(tasks.qa.seed_plan, "refill_seeds", refill)
    monkeypatch.setattr(flows.qa, "_dedup_domain", dedup)


def _landed(settings) -> dict[str, list[tuple]]:
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        return {t: sorted(tuple(r.values()) for r in wh.query(f"SELECT {cols} FROM {t}")) for t, cols in (
            ("qa", "qa_id, domain, seed, hop_class, question, answer, split"),
            ("qa_rejects", "qa_id, domain, stage, reason, question"),
            ("seeds", "domain, node, sample_rank"),
            ("qa_attempts", "domain, seed, hop_class, attempt, status, question, answer, reject_reason"))}


def test_jobs_are_prepared_ahead_and_a_refill_overlaps_the_next_domain(prefect_harness, settings, monkeypatch,
                                                                       tmp_path):
    import flows.qa
    import tasks.qa.generate
    import tasks.qa.seed_plan
    from flows.graphs import import_graphs

    monkeypatch.setattr(tasks.qa.seed_plan, "PREFER_WINDOW", 1)  # the first kept seeds in rank order: 3+ jobs fall short
    import_graphs(files={"geo": str(GEO), "geo2": str(GEO)}, settings=settings)
    in_flow: list[str] = []
    real_prepared = tasks.qa.generate._prepared

    async def prepared_here(kg, seed, *a):  # a job prepared by the flow's own process, not ahead
        in_flow.append(seed.node)
        return await real_prepared(kg, seed, *a)

    monkeypatch.setattr(tasks.qa.generate, "_prepared", prepared_here)
    events: list[tuple[str, ...]] = []
    _record(monkeypatch, events)
    out = _generate(settings)
    assert set(out["refill"]) == {"geo", "geo2"}
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        first = {r["node"] for r in wh.query("SELECT node FROM seeds WHERE sample_rank < 20")}
    assert first and not first & set(in_flow)  # none of the first jobs was prepared by the flow's process

    at = {e: i for i, e in reversed(list(enumerate(events)))}  # each event's first place
    last = {e: i for i, e in enumerate(events)}
    # geo2's jobs went to be prepared before geo's first jobs landed, and geo's refill was planned before geo2's
    # first jobs landed: neither waited for the other domain to finish.
    assert at[("prepare", "geo2")] < at[("land", "geo", "first")] < at[("refill", "geo")]
    assert at[("refill", "geo")] < at[("land", "geo2", "first")] < at[("land", "geo", "refill")]
    # Deduplication as when the refill was a round of its own: geo before its refill landed and again after it;
    # geo2, the last domain, once, with its refill.
    assert [i for i, e in enumerate(events) if e == ("dedup", "geo")] == [
        at[("dedup", "geo")], last[("dedup", "geo")]]
    assert at[("dedup", "geo")] < at[("land", "geo", "refill")] < last[("dedup", "geo")]
    assert events.count(("dedup", "geo2")) == 1 and at[("dedup", "geo2")] > last[("land", "geo2", "refill")]

    # The same questions, seeds and attempts when every job is prepared in its batch instead.
    ahead_rows = _landed(settings)
    monkeypatch.setattr(Ahead, "available", staticmethod(lambda: False))
    again = load_settings(data_dir=tmp_path / "in_batch", seeds={"min_ball": 5},
                          runner={"kind": "threads", "in_flight": 2})
    import_graphs(files={"geo": str(GEO), "geo2": str(GEO)}, settings=again)
    in_flow.clear()
    _generate(again)
    assert set(in_flow) >= first and _landed(again) == ahead_rows


def test_the_batch_loop_does_the_work_ahead_while_a_batch_runs(prefect_harness):
    """``ahead`` is called while the loop would wait for a batch: the batch here finishes only once the work ahead
    has run (it would give up, unreleased, otherwise), and the loop stops calling it once it says nothing is left."""
    import threading

    released = threading.Event()
    calls: list[str] = []

    @task(name="toy-gated-batch", cache_policy=NO_CACHE)
    def gated(item: str) -> str:
        return item if released.wait(30) else "unreleased"

    def ahead() -> bool:
        calls.append("ahead")
        if released.is_set():
            return False
        released.set()
        return True

    @flow
    def go() -> list[str]:
        with batch_runner(RunnerConfig(max_workers=2)) as r:
            return [out for _, out in run_batches(gated, ["a"], lambda i: {"item": i}, runner=r, in_flight=1,
                                                  ahead=ahead)]

    assert go() == ["a"]
    assert calls[:2] == ["ahead", "ahead"]  # one piece of work, then nothing left: the loop waits


def test_the_next_domain_is_prepared_while_the_first_domains_jobs_are_in_flight(prefect_harness, tmp_path,
                                                                                monkeypatch):
    """With one batch in flight the batch loop would ask for the next domain only once the first one's batch ended;
    planned ahead (``GenerateStep.ahead``), the next domain's jobs go to be prepared while the first domain's jobs
    run: here the first domain's jobs end only after that (a job waits for it, and gives up unreleased after 30 s),
    and what lands is the same."""
    import asyncio
    import threading

    import flows.qa
    import tasks.qa.seed_plan
    from flows.graphs import import_graphs

    settings = load_settings(data_dir=tmp_path, seeds={"min_ball": 5}, runner={"kind": "threads", "in_flight": 1})
    monkeypatch.setattr(tasks.qa.seed_plan, "PREFER_WINDOW", 1)
    import_graphs(files={"geo": str(GEO), "geo2": str(GEO)}, settings=settings)
    events: list[tuple[str, ...]] = []
    _record(monkeypatch, events)
    second_planned = threading.Event()
    real_submit, real_run_job = Ahead.submit, flows.qa.run_job
    waited: list[bool] = []
    gated: list[str] = []

    def submit(self, fn, items, **kw):
        if items[0][0].domain == "geo2":
            second_planned.set()
        return real_submit(self, fn, items, **kw)

    async def run_job(gateway, kg, seed, *a, **kw):
        if kg.domain == "geo" and not gated:  # one job of the first domain waits
            gated.append(seed.node)
            waited.append(await asyncio.get_running_loop().run_in_executor(None, second_planned.wait, 30))
        return await real_run_job(gateway, kg, seed, *a, **kw)

    monkeypatch.setattr(Ahead, "submit", submit)
    monkeypatch.setattr(flows.qa, "run_job", run_job)
    _generate(settings)
    assert waited == [True]
    at = {e: i for i, e in reversed(list(enumerate(events)))}
    assert at[("prepare", "geo")] < at[("prepare", "geo2")] < at[("land", "geo", "first")]

    monkeypatch.setattr(flows.qa.GenerateStep, "ahead", lambda self, rt: False)  # nothing planned ahead
    monkeypatch.setattr(flows.qa, "run_job", real_run_job)
    again = load_settings(data_dir=tmp_path / "not_ahead", seeds={"min_ball": 5},
                          runner={"kind": "threads", "in_flight": 1})
    import_graphs(files={"geo": str(GEO), "geo2": str(GEO)}, settings=again)
    _generate(again)
    assert _landed(again) == _landed(settings)


def test_what_a_child_worked_out_about_the_graph_joins_the_parents_tables_unchanged():
    """A forked process that prepared jobs sends back its memos over the graph (``graph_memos``); merged here
    (``merge_graph_memos``) they are what this process would have worked out itself, and an entry already here stays."""
    import pickle

    from flows.meaning_report import import_graph
    from tasks.qa.programs import graph_memos, merge_graph_memos, relation_index, sample_programs
    from tasks.meaning.profiles import book_for_graph

    from tasks.graph.kg import KnowledgeGraph

    def fresh() -> KnowledgeGraph:  # a graph object of its own, with no memo yet (no snapshot id: not cached)
        read = import_graph(GEO)[1]
        return KnowledgeGraph(read.domain, read.entities(), read.relations(), directed=read.directed)

    kg = fresh()
    book = book_for_graph(kg)
    relation_index(kg)  # built before the fork, as the flow does
    starts = sorted(kg.nodes())[:6]

    def work(start: str) -> object:
        if start is None:
            return graph_memos(kg)
        return [p.nodes for p in sample_programs(kg, start, 2, count=4, seed=1, book=book).programs]

    ahead = Ahead(workers=1)
    try:
        *programs, memos = ahead.submit(work, [*starts, None])
        got, memos = [f.result(timeout=120) for f in programs], memos.result(timeout=120)
    finally:
        ahead.close()
    index = relation_index(kg)
    assert memos["index"]["kinds"] and not index.kinds  # the child worked them out; this process has not
    name = next(iter(memos["index"]["kinds"]))
    index.kinds[name] = "kept"  # an entry already here is not replaced
    merge_graph_memos(kg, pickle.loads(pickle.dumps(memos)))
    assert index.kinds[name] == "kept" and set(index.kinds) == set(memos["index"]["kinds"])
    index.kinds[name] = memos["index"]["kinds"][name]
    assert [[p.nodes for p in sample_programs(kg, s, 2, count=4, seed=1, book=book).programs] for s in starts] == got
    other = relation_index(fresh())  # the same tables, worked out from nothing
    for name in memos["index"]["kinds"]:
        assert other.kind(name) == index.kind(name)
