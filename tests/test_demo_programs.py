"""The demo's questions as programs: ``qa generate`` with the template writer on the five demo reference graphs, as
``hopforge demo`` runs it (10 seeds a domain, 80% of the jobs 1-2 hops), then ``export``. What the demo promises
of its questions holds without the embedded model: at least 40 accepted, more than half of two hops or more,
every one with a program that executes to its answer, and every exported SPARQL query returns exactly the stored
answer under a real engine (pyoxigraph) over the graph's RDF form."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pyoxigraph
import pytest

from schemas.config import load_settings
from schemas.programs import QueryProgram
from tasks.meaning.profiles import book_for_graph
from tasks.qa.programs import iri_name, rdf_lines, relation_index, stands
from warehouse.db import Warehouse
from warehouse.graphs import load_graph

DEMO = Path(__file__).resolve().parent.parent / "flows" / "demo" / "graphs"
DOMAINS = ("agriculture", "biology", "cooking", "cs", "history")


@pytest.fixture(scope="module")
def demo_run(prefect_harness, tmp_path_factory):
    from flows.export import export_datasets
    from flows.factory import DEMO_PLAN
    from flows.graphs import import_graphs
    from flows.params import Demo
    from flows.qa import generate_qa
    from testing.fake import FakeOpenAI

    with FakeOpenAI() as fake:  # the template writer, no judge, no meaning check: nothing may call it
        role = {"base_url": fake.base_url, "model": "fake-model", "max_retries": 0, "timeout_s": 10}
        settings = DEMO_PLAN.with_scopes(load_settings(data_dir=tmp_path_factory.mktemp("demo-programs"),
                                                       roles={"generator": role, "verifier": role}))
        import_graphs(files={d: str(DEMO / f"{d}.jsonl") for d in DOMAINS}, settings=settings)
        demo = Demo().factory_kwargs()  # the seeds and the hop mix `hopforge demo` asks for
        out = generate_qa(domains=list(DOMAINS), n_seeds=demo["n_seeds"], modes=["candidates"], writer="template",
                          hop_mix=demo["hop_mix"], use_judge=False, meaning_check="off", settings=settings)
        exported = export_datasets(settings=settings)
        assert fake.calls() == 0
    return settings, out, exported


def _rows(exported) -> list[dict]:
    return pl.read_parquet(Path(exported["path"]) / "qa" / "*.parquet").to_dicts()


def test_the_demo_asks_forty_questions_most_of_two_hops_or_more(demo_run):
    _, out, exported = demo_run
    rows = [r for r in _rows(exported) if not r.get("ikg_level")]
    hops = [len(json.loads(r["path"])) - 1 if isinstance(r["path"], str) else len(r["path"]) - 1 for r in rows]
    assert out["accepted"] >= 40, out["mix"]
    assert sum(h >= 2 for h in hops) * 2 > len(hops), (sum(h >= 2 for h in hops), len(hops))
    for domain in DOMAINS:  # every domain asks something
        assert any(r["domain"] == domain for r in rows), domain


def test_every_demo_program_executes_to_its_answer_and_its_sparql_returns_exactly_it(demo_run):
    settings, _, exported = demo_run
    rows = _rows(exported)
    assert rows and all(r["program"] and r["sparql"] for r in rows)
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        graphs = {d: load_graph(wh, d) for d in DOMAINS}
    stores = {}
    for d, kg in graphs.items():
        store = pyoxigraph.Store()
        store.load(("\n".join(rdf_lines(kg)) + "\n").encode(), format=pyoxigraph.RdfFormat.N_TRIPLES)
        stores[d] = store
    for r in rows:
        kg = graphs[r["domain"]]
        program = QueryProgram.model_validate_json(r["program"])
        assert program.answer == r["answer"]
        assert stands(program, relation_index(kg), book_for_graph(kg)) is None, r["question"]
        var = f"x{program.hops}"
        found = {iri_name(b[var].value, r["domain"]) for b in stores[r["domain"]].query(r["sparql"])}
        assert found == {r["answer"]}, (r["question"], r["sparql"], found)


def test_the_demo_summary_prints_every_accepted_question_with_its_program(demo_run, capsys):
    from flows.cli import _print_accepted, accepted_questions

    settings, out, _ = demo_run
    capsys.readouterr()
    _print_accepted(accepted_questions(settings))
    text = capsys.readouterr().out
    assert f"accepted questions ({out['accepted']}), each with its program:" in text
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        rows = wh.query("SELECT question, program FROM qa")
    assert len(rows) == out["accepted"]
    unwrapped = " ".join(text.split())
    for r in rows:
        assert " ".join(r["question"].split()) in unwrapped
        program = QueryProgram.model_validate_json(r["program"])
        assert f"program: {program.kind}, {program.hops} step(s): {program.start} " in unwrapped
    assert sum(line.strip().startswith("program: ") for line in text.splitlines()) == out["accepted"]


def test_the_demo_export_has_the_committed_content(demo_run):
    """The demo's export, content by content (``tasks.export.digest``), is the one committed in
    tests/fixtures/export_digest.json: a change to what the demo exports shows here by file. Regenerate after an
    intended change with ``make export-digest``."""
    from tests.test_export_digest import check_reference

    _, _, exported = demo_run
    check_reference(exported["path"], "demo")
