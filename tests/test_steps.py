"""The step contract (``flows.steps``): the runner writes each unit whole or not at all, in plan order, whatever order
the batches finish in; a step whose units fail alone records a failed unit and lands the others; and every declared
step writes only the tables it declares."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from pathlib import Path
import threading
from typing import Any

import pytest
from prefect import task
from prefect.cache_policies import NO_CACHE

from flows.batches import BatchResult
from flows.runtime import hopforge_flow
from flows.steps import Step, Unit, UnitFailure, run_step
from schemas.config import load_settings
from warehouse.db import Warehouse

_release = threading.Event()


@task(name="toy-batch", cache_policy=NO_CACHE)
def toy_batch(items: list[str], hold: bool) -> BatchResult[str]:
    """Upper-cases its items; the first unit waits until a later one has finished (so they finish out of order)."""
    if hold:
        _release.wait(timeout=30)
    else:
        _release.set()
    return BatchResult([i.upper() for i in items])


class ToyStep(Step[str, str]):
    flow, progress, doing = "toy-step", "toy", "toying with {domain}"
    roles = ("generator",)
    reads = ()
    writes = {"qa_job_notes": dict}
    task = toy_batch

    def __init__(self, fail_on: str | None = None) -> None:
        self.batch_size = 2
        self.fail_on = fail_on
        self.landed: list[list[str]] = []

    def plan(self, rt: Any):
        for domain, items in (("a", ["x1", "x2", "x3"]), ("b", ["y1"])):
            for i in range(0, len(items), 2):
                yield Unit(domain, "snap", items[i:i + 2])

    def sizes(self) -> list[int]:
        return [2, 1, 1]

    def total(self, domain: str) -> int:
        return {"a": 3, "b": 1}[domain]

    def parameters(self, rt: Any, spec: Any, unit: Unit[str]) -> dict[str, Any]:
        return {"items": unit.items, "hold": unit.items[0] == "x1"}

    def write(self, rt: Any, unit: Unit[str], records: list[str], con: Any) -> list[str]:
        rows = [{"domain": unit.domain, "snapshot_id": unit.snapshot, "seed": r, "hop_class": "1-2", "mode": "m",
                 "note": None, "run_id": rt.run_id} for r in records]
        rt.wh.write_batch("qa_job_notes", rows, con=con)
        if self.fail_on in records:
            raise RuntimeError(f"write of {self.fail_on} failed")
        self.landed.append(records)
        return records

    def summary(self, rt: Any, written: list[str]) -> dict[str, Any]:
        return {"written": written}


@hopforge_flow(name="toy-step")
def toy_flow(step: Any, settings: Any) -> dict[str, Any]:
    return run_step(step, {}, settings)


@pytest.fixture
def settings(fake_llm, tmp_path):
    role = {"base_url": fake_llm.base_url, "model": "fake-model", "max_retries": 1, "timeout_s": 10}
    return load_settings(data_dir=tmp_path, roles={"generator": role},
                         runner={"kind": "threads", "max_workers": 3, "in_flight": 3})


def _notes(settings) -> list[str]:
    with Warehouse(settings.warehouse_path) as wh:
        return [r["seed"] for r in wh.query("SELECT seed FROM qa_job_notes ORDER BY seed")]


def test_a_second_round_is_planned_after_the_first_has_landed(prefect_harness, settings):
    """``next_round``: planned once every unit of the round before has landed (a step whose later units read what
    the earlier ones wrote)."""

    class TwoRounds(ToyStep):
        def __init__(self) -> None:
            super().__init__()
            self.seen_at_second: list[list[str]] | None = None
            self.rounds = 0

        def next_round(self, rt):
            self.rounds += 1
            if self.rounds > 1:
                return None
            self.seen_at_second = list(self.landed)
            return iter([Unit("b", "snap", ["z1"])])

        def total(self, domain: str) -> int:
            return {"a": 3, "b": 2}[domain]

    _release.clear()
    step = TwoRounds()
    out = toy_flow(step, settings)
    assert step.seen_at_second == [["X1", "X2"], ["X3"], ["Y1"]]
    assert out["written"] == ["X1", "X2", "X3", "Y1", "Z1"]


def test_units_land_in_plan_order_though_they_finish_out_of_order(prefect_harness, settings):
    _release.clear()
    step = ToyStep()
    out = toy_flow(step, settings)
    # the first unit finished last (it waited for another), and still landed first
    assert step.landed == [["X1", "X2"], ["X3"], ["Y1"]]
    assert out["written"] == ["X1", "X2", "X3", "Y1"]
    assert out["run_id"]
    assert _notes(settings) == ["X1", "X2", "X3", "Y1"]


def test_a_unit_whose_write_fails_lands_nothing_and_stops_the_run(prefect_harness, settings):
    _release.clear()
    step = ToyStep(fail_on="X3")
    with pytest.raises(RuntimeError, match="write of X3 failed"):
        toy_flow(step, settings)
    assert _notes(settings) == ["X1", "X2"]  # the first unit landed; the second's rows were rolled back


@task(name="toy-failing-batch", cache_policy=NO_CACHE)
def toy_failing_batch(items: list[str]) -> BatchResult[str]:
    """Upper-cases its items, and fails on a unit holding ``bad``."""
    if "bad" in items:
        raise ValueError("no toy of bad")
    return BatchResult([i.upper() for i in items])


class FailsAloneStep(ToyStep):
    """Units of one item each; the second fails in its batch task."""

    task = toy_failing_batch
    fails_alone = True

    def __init__(self, items: list[str]) -> None:
        super().__init__()
        self.items = items
        self.told: list[str] = []

    def plan(self, rt: Any):
        for item in self.items:
            yield Unit("a", "snap", [item])

    def sizes(self) -> list[int]:
        return [1] * len(self.items)

    def total(self, domain: str) -> int:
        return len(self.items)

    def parameters(self, rt: Any, spec: Any, unit: Unit[str]) -> dict[str, Any]:
        return {"items": unit.items}

    def failed(self, rt: Any, failure: UnitFailure[str]) -> None:
        self.told.append(failure.unit.items[0])

    def summary(self, rt: Any, written: list[Any]) -> dict[str, Any]:
        return {"written": [w for w in written if not isinstance(w, UnitFailure)],
                "failures": [(w.unit.items, w.reason) for w in written if isinstance(w, UnitFailure)],
                "order": ["!" + w.unit.items[0] if isinstance(w, UnitFailure) else w for w in written]}


def test_a_unit_that_fails_alone_lands_nothing_and_the_others_land_in_order(prefect_harness, settings):
    """``fails_alone``: a failed batch stops nothing; its unit lands nothing, ``failed`` hears of it, and the summary
    finds its ``UnitFailure`` at its place in plan order."""
    step = FailsAloneStep(["x1", "bad", "y1", "z1"])
    out = toy_flow(step, settings)
    assert out["order"] == ["X1", "!bad", "Y1", "Z1"]
    assert out["failures"] == [(["bad"], "ValueError: no toy of bad")]
    assert step.told == ["bad"]
    assert step.landed == [["X1"], ["Y1"], ["Z1"]]
    assert _notes(settings) == ["X1", "Y1", "Z1"]


def test_without_fails_alone_a_failed_batch_stops_the_run(prefect_harness, settings):
    """The default: a failed batch stops the run; what landed before it stays."""

    class Stops(FailsAloneStep):
        fails_alone = False

    step = Stops(["x1", "bad", "y1"])
    with pytest.raises(ValueError, match="no toy of bad"):
        toy_flow(step, settings)
    assert step.told == [] and _notes(settings) == ["X1"]


_running: list[int] = []
_overlap: list[int] = []


@task(name="toy-alone-batch", cache_policy=NO_CACHE)
def toy_alone_batch(items: list[str]) -> BatchResult[str]:
    """Counts how many of its kind run at once."""
    import time

    _running.append(1)
    _overlap.append(len(_running))
    time.sleep(0.05)
    _running.pop()
    return BatchResult([i.upper() for i in items])


def test_one_per_process_runs_one_unit_at_a_time_on_threads(prefect_harness, settings):
    """``one_per_process``: the thread pool runs one unit at a time (the settings allow three in flight)."""

    class Alone(FailsAloneStep):
        task = toy_alone_batch
        one_per_process = True

    _overlap.clear()
    out = toy_flow(Alone(["x1", "x2", "x3", "x4"]), settings)
    assert out["written"] == ["X1", "X2", "X3", "X4"]
    assert max(_overlap) == 1


@task(name="toy-where-batch", cache_policy=NO_CACHE)
def toy_where_batch(items: list[str]) -> BatchResult[str]:
    """Upper-cases its items and says which process ran it."""
    import os

    return BatchResult([f"{i.upper()}@{os.getpid()}" for i in items])


def test_a_local_step_runs_on_the_flows_thread_pool_whatever_the_runner(prefect_harness, fake_llm, tmp_path):
    """``local``: with ``runner.kind = "ray"`` configured (and no Ray needed), the batches run in the flow's process."""
    import os

    class Local(FailsAloneStep):
        task = toy_where_batch
        local = True

    role = {"base_url": fake_llm.base_url, "model": "fake-model", "max_retries": 1, "timeout_s": 10}
    on_ray = load_settings(data_dir=tmp_path, roles={"generator": role}, runner={"kind": "ray", "max_workers": 2})
    out = toy_flow(Local(["x1", "x2"]), on_ray)
    assert out["written"] == [f"X1@{os.getpid()}", f"X2@{os.getpid()}"]


def test_a_step_that_writes_in_its_own_transaction_gets_no_connection(prefect_harness, settings):
    """``own_transaction``: the runner opens no transaction around ``write`` (a warehouse writer that opens its own,
    as ``warehouse.corpus.write_ingest`` does, would otherwise nest one in another) and passes ``con=None``."""

    class OwnTransaction(ToyStep):
        own_transaction = True

        def __init__(self) -> None:
            super().__init__()
            self.cons: list[Any] = []

        def write(self, rt: Any, unit: Unit[str], records: list[str], con: Any) -> list[str]:
            self.cons.append(con)
            with rt.wh.transaction() as own:  # what a writer with its own transaction does
                rt.wh.write_batch("qa_job_notes", [{"domain": unit.domain, "snapshot_id": unit.snapshot, "seed": r,
                                                    "hop_class": "1-2", "mode": "m", "note": None,
                                                    "run_id": rt.run_id} for r in records], con=own)
            return records

    _release.clear()
    step = OwnTransaction()
    out = toy_flow(step, settings)
    assert out["written"] == ["X1", "X2", "X3", "Y1"] and step.cons == [None, None, None]
    assert _notes(settings) == ["X1", "X2", "X3", "Y1"]


def _declared_steps() -> list[type[Step]]:
    import flows.distill
    import flows.evaluate
    import flows.export
    import flows.graphs
    import flows.qa
    import flows.refresh  # noqa: F401  (the modules that declare steps)

    return [cls for cls in Step.__subclasses__() if cls.__module__.startswith("flows.")]


#: A statement that writes a table: ``INSERT [OR REPLACE] INTO t``, ``UPDATE t``, ``DELETE FROM t``.
_SQL_WRITE = re.compile(r"\b(?:INSERT (?:OR REPLACE )?INTO|UPDATE|DELETE FROM)\s+([a-z_]+)\b")


def _tables_written(cls: type[Step]) -> set[str]:
    """The tables the step writes, read from the class's source: those named in its ``write``/``write_batch`` calls
    and SQL statements, and in those of the project's functions it calls (``flows`` and ``warehouse`` functions
    named in the module, followed through the functions they call in turn)."""
    out: set[str] = set()
    seen: set[Any] = set()

    def scan(obj: Any) -> None:
        names = vars(inspect.getmodule(obj))
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(obj)))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.update(_SQL_WRITE.findall(node.value))
            if not isinstance(node, ast.Call):
                continue
            if (isinstance(node.func, ast.Attribute) and node.func.attr in ("write", "write_batch") and node.args
                    and isinstance(node.args[0], ast.Constant) and re.fullmatch(r"[a-z_]+", str(node.args[0].value))):
                out.add(node.args[0].value)
            callee = names.get(node.func.id) if isinstance(node.func, ast.Name) else None
            if (inspect.isfunction(callee) and callee.__module__.split(".")[0] in ("flows", "warehouse")
                    and callee not in seen):
                seen.add(callee)
                scan(callee)

    scan(cls)
    return out


def test_the_table_scan_follows_the_functions_a_step_calls():
    """The scan sees a table written by a function the step calls, in another module: ``relation_profiles``, which
    ``GenerateStep.prepare`` writes through ``flows.profiles.profile_unknown_labels`` and
    ``warehouse.profiles.write_profiled``."""
    import flows.qa

    assert "relation_profiles" in _tables_written(flows.qa.GenerateStep)
    # and through raw SQL: ``warehouse.graphs.write_snapshot`` and ``write_build``, two calls down
    import flows.graphs

    assert {"graph_builds", "graph_build_failures", "graph_snapshots", "entities", "relations", "entity_merges",
            "entity_near_duplicates"} <= _tables_written(flows.graphs.BuildGraphsStep)


def test_every_declared_step_writes_the_tables_it_declares_and_no_other():
    steps = _declared_steps()
    assert {s.flow for s in steps} >= {"generate-qa", "verify-paths", "distill-trajectories", "evaluate-policy",
                                       "label-difficulty", "build-graphs", "ingest-corpus", "import-graphs",
                                       "report-graphs", "export-datasets"}
    for cls in steps:
        assert _tables_written(cls) == set(cls.writes), cls.__name__
        assert cls.task is not None, cls.__name__
        # a bar a domain (the default) says which domain it counts
        assert cls.bar is not Step.bar or cls.doing.count("{domain}") == 1, cls.__name__


def _flows() -> dict[str, int]:
    """Every ``@hopforge_flow`` function of ``flows/`` and its length in lines (signature and docstring included)."""
    root = Path(__file__).resolve().parents[1] / "flows"
    out = {}
    for path in sorted(root.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and any(
                    isinstance(d, ast.Call) and getattr(d.func, "id", "") == "hopforge_flow"
                    for d in node.decorator_list):
                out[f"{path.stem}.{node.name}"] = node.end_lineno - node.lineno + 1
    return out


def test_every_flow_is_a_short_declaration():
    """A flow is its parameters, their checks and the steps it runs (``run_step``) or the flows it runs in order:
    none past 60 lines; the batch flows run on the step contract."""
    import flows.distill
    import flows.evaluate
    import flows.export
    import flows.graphs
    import flows.qa
    import flows.refresh

    lengths = _flows()
    assert len(lengths) >= 15 and {"qa.generate_qa", "factory.factory", "refresh.refresh"} <= set(lengths)
    assert {name: n for name, n in lengths.items() if n > 60} == {}
    for fn in (flows.qa.generate_qa, flows.qa.verify_paths, flows.distill.distill_trajectories,
               flows.evaluate.evaluate_policy, flows.refresh.label_difficulty, flows.graphs.build_graphs,
               flows.graphs.ingest_corpus, flows.graphs.import_graphs, flows.graphs.report_graphs,
               flows.export.export_datasets):
        assert "run_step(" in inspect.getsource(fn.fn).splitlines()[-1], fn.name
