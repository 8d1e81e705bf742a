"""Graph flows: ingest, import with per-domain isolation, and the report, under the Prefect harness."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.config import load_settings
from schemas.graph import Entity, Relation
from tasks.graph.report import bucket_degrees, graph_report, judge_graph, report_text
from tasks.graph.kg import KnowledgeGraph
from warehouse.db import Warehouse

DEMO = Path(__file__).resolve().parent.parent / "flows" / "demo"


def chain_graph(n: int, domain: str = "cs") -> KnowledgeGraph:
    names = [f"N{i:03d}" for i in range(n)]
    ents = [Entity(domain=domain, name=x, type="concept" if i % 2 else "person", description=f"node {x}") for i, x in enumerate(names)]
    rels = [Relation(domain=domain, source=a, target=b, relation="next", keywords=["next"], description=f"{a} precedes {b}",
                     weight=1.0, source_chunk_ids=[], directed=False) for a, b in zip(names, names[1:])]
    return KnowledgeGraph(domain, ents, rels, directed=False, snapshot_id="snap")


def test_report_on_a_chain():
    # in a path graph a depth-3 ball holds at most 7 nodes: nothing is seed-eligible with the default 20..400
    rep = graph_report(chain_graph(50), run_id="r")
    assert (rep.n_nodes, rep.n_edges, rep.components, rep.isolated_nodes) == (50, 49, 1, 0)
    assert rep.seed_eligible == 0 and rep.verdict == "sparse"
    assert rep.degree_histogram["1"] == 2 and rep.degree_histogram["2"] == 48
    assert rep.entity_types == {"person": 25, "concept": 25}
    loose = graph_report(chain_graph(50), run_id="r", min_ball=5, max_ball=7)
    assert loose.seed_eligible == 48 and loose.verdict == "usable"  # the two end nodes have 4-node balls
    assert "verdict: USABLE" in report_text(loose)


def test_verdicts():
    assert judge_graph(10, 10, 0)[0] == "too_small"
    assert judge_graph(1000, 900, 3)[0] == "sparse"
    assert judge_graph(1000, 100, 50)[0] == "sparse"
    assert judge_graph(1000, 900, 50)[0] == "usable"
    assert bucket_degrees([1, 2, 0, 0, 0, 0, 3])["5-9"] == 3


@pytest.fixture
def settings(tmp_path):
    return load_settings(data_dir=tmp_path)


def test_ingest_then_import_and_report(prefect_harness, settings, tmp_path):
    from flows.graphs import import_graphs, ingest_corpus, report_graphs

    r = ingest_corpus(source=str(DEMO / "corpus"), settings=settings)
    assert r["documents_written"] == 25 and r["skipped"] == 0
    again = ingest_corpus(source=str(DEMO / "corpus"), settings=settings)
    assert again["documents_written"] == 0 and again["already_present"] == 25

    bad = tmp_path / "broken.jsonl"
    bad.write_text('{"head": "A"}\nnot json\n')
    out = import_graphs(files={"cs": str(DEMO / "graphs" / "cs.jsonl"), "history": str(bad)}, settings=settings)
    assert "cs" in out["imported"] and "history" in out["failures"]  # one bad file does not stop the other domain
    assert out["imported"]["cs"]["entities"] >= 60
    [rep] = out["reports"]
    assert rep["domain"] == "cs" and rep["verdict"] == "usable" and rep["seed_eligible"] > 0

    rerun = report_graphs(settings=settings)
    assert [r["domain"] for r in rerun["reports"]] == ["cs"]
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        assert wh.scalar("SELECT count(*) FROM graph_reports") == 2
        assert wh.scalar("SELECT count(*) FROM documents WHERE domain = 'cs'") == 5
        runs = wh.query("SELECT flow, status FROM runs ORDER BY started_at")
    assert [r["flow"] for r in runs] == ["ingest-corpus", "ingest-corpus", "import-graphs", "report-graphs"]
    assert all(r["status"] == "completed" for r in runs)


def test_unknown_domain_folder_is_a_clear_error_and_writes_nothing(prefect_harness, settings, tmp_path):
    from flows.graphs import ingest_corpus
    from tasks.corpus.ingest import IngestError

    (tmp_path / "corpus" / "astrology").mkdir(parents=True)
    (tmp_path / "corpus" / "astrology" / "a.md").write_text("# Stars\nSome text about stars.")
    with pytest.raises(IngestError, match="astrology"):
        ingest_corpus(source=str(tmp_path / "corpus"), settings=settings)
    # refused before a run was recorded: nothing was opened or written
    assert not settings.warehouse_path.exists()


def test_build_graphs_flow_builds_reports_and_isolates_failures(prefect_harness, fake_llm, tmp_path):
    """The whole build flow: ingest a folder corpus, LightRAG through the gateway (fake extractor), snapshots,
    build rows, reports; a domain whose documents all fail is recorded while the other is built."""
    from flows.graphs import build_graphs
    from tests.test_graph_build import TEXTS, extraction_reply

    corpus = tmp_path / "corpus"
    for i, text in enumerate(TEXTS):
        (corpus / "cs").mkdir(parents=True, exist_ok=True)
        (corpus / "cs" / f"{i}.md").write_text(text)
    (corpus / "history").mkdir()
    (corpus / "history" / "h.md").write_text("Ada Lovelace and the Royal Society met in London, where Charles Babbage lived.")
    fake_llm.add(predicate=lambda b: "Royal Society met in London" in str(b["messages"]), fault=__import__("testing.fake", fromlist=["Fault"]).Fault(status=500))
    def extraction_with_variant(body):
        text = extraction_reply(body)
        if "Ada Lovelace met Charles Babbage" in str(body["messages"]):
            # a spelling variant of an entity another document names: entity resolution must merge it
            text = text.replace("<|COMPLETE|>", "entity<|#|>charles  babbage<|#|>person<|#|>A variant spelling.\n"
                                "relation<|#|>charles  babbage<|#|>London<|#|>lived in<|#|>He lived in London.\n<|COMPLETE|>")
        return text

    fake_llm.add(reply=extraction_with_variant)
    settings = load_settings(
        data_dir=tmp_path / "data",
        roles={"extractor": {"base_url": fake_llm.base_url, "model": "fake-model", "max_retries": 0, "timeout_s": 10}},
        embeddings={"base_url": fake_llm.base_url, "model": "e", "dim": 16},
    )
    out = build_graphs(source=str(corpus), settings=settings, chunk_token_size=60, chunk_overlap_token_size=10)
    assert out["ingest"]["documents_written"] == 6
    assert out["built"]["cs"]["entities"] >= 8 and out["built"]["cs"]["failed"] == 0
    assert out["built"]["history"]["failed"] == 1 and out["built"]["history"]["entities"] == 0
    [rep] = out["reports"]
    assert rep["domain"] == "cs" and rep["llm_calls"] > 0
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        builds = {r["domain"]: r for r in wh.query("SELECT * FROM graph_builds")}
        failures = wh.query("SELECT * FROM graph_build_failures")
        snaps = wh.query("SELECT domain, source FROM current_graph_snapshots")
    assert builds["cs"]["docs_processed"] == 5 and builds["cs"]["llm_calls"] > 0
    assert failures[0]["domain"] == "history" and "500" in failures[0]["reason"]
    assert snaps == [{"domain": "cs", "source": "lightrag"}]
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        merges = wh.query("SELECT kept_name, merged_name, rule, from_snapshot_id, to_snapshot_id FROM entity_merges")
        current = wh.scalar("SELECT snapshot_id FROM current_graph_snapshots WHERE domain = 'cs'")
        names = {r["name"] for r in wh.query("SELECT name FROM entities WHERE snapshot_id = ?", [current])}
        n_snaps = wh.scalar("SELECT count(*) FROM graph_snapshots WHERE domain = 'cs'")
    assert [(m["kept_name"], m["merged_name"], m["rule"]) for m in merges] == [("Charles Babbage", "charles  babbage", "whitespace")]
    assert merges[0]["to_snapshot_id"] == current and merges[0]["from_snapshot_id"] != current
    assert "charles  babbage" not in names and "Charles Babbage" in names and n_snaps == 2  # raw snapshot kept

    calls = fake_llm.calls()
    again = build_graphs(settings=settings, domains=["cs"], chunk_token_size=60, chunk_overlap_token_size=10)
    assert fake_llm.calls() == calls  # a finished build makes no LLM calls
    assert again["built"]["cs"]["processed"] == 5


def test_build_graphs_records_a_failed_build_and_builds_the_other_domains(prefect_harness, fake_llm, tmp_path,
                                                                          monkeypatch):
    """``build-graphs`` on the step contract (``fails_alone``): a domain whose build task fails lands nothing and is
    named in ``failures`` (after a domain without documents, named before any build), and the domains after it are
    built, landed and reported; the result keeps its five keys."""
    import tasks.graph.build as build
    from flows.graphs import build_graphs
    from tests.test_graph_build import TEXTS, extraction_reply

    corpus = tmp_path / "corpus"
    for domain, texts in (("agriculture", TEXTS[3:4]), ("cs", TEXTS[:3])):
        (corpus / domain).mkdir(parents=True)
        for i, text in enumerate(texts):
            (corpus / domain / f"{i}.md").write_text(text)
    real = build.build_domain_graph

    async def storage_gone(domain, *args, **kwargs):
        if domain == "agriculture":
            raise RuntimeError("LightRAG storage gone")
        return await real(domain, *args, **kwargs)

    monkeypatch.setattr(build, "build_domain_graph", storage_gone)
    fake_llm.add(reply=extraction_reply)
    settings = load_settings(
        data_dir=tmp_path / "data",
        roles={"extractor": {"base_url": fake_llm.base_url, "model": "fake-model", "max_retries": 0, "timeout_s": 10}},
        embeddings={"base_url": fake_llm.base_url, "model": "e", "dim": 16},
    )
    out = build_graphs(source=str(corpus), domains=["biology", "agriculture", "cs"], settings=settings,
                       chunk_token_size=60, chunk_overlap_token_size=10)
    assert list(out) == ["run_id", "ingest", "built", "failures", "reports"]
    assert out["failures"] == {"biology": "no documents ingested for this domain",
                               "agriculture": "RuntimeError: LightRAG storage gone"}
    assert list(out["failures"]) == ["biology", "agriculture"]
    assert list(out["built"]) == ["cs"] and out["built"]["cs"]["entities"] > 0
    assert [r["domain"] for r in out["reports"]] == ["cs"]
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        assert [r["domain"] for r in wh.query("SELECT domain FROM graph_builds")] == ["cs"]
        assert [r["domain"] for r in wh.query("SELECT DISTINCT domain FROM graph_snapshots")] == ["cs"]
        assert wh.scalar("SELECT count(*) FROM graph_reports WHERE run_id = ?", [out["run_id"]]) == 1


def test_a_failed_build_says_so_in_the_line_it_always_printed(capsys):
    from flows.graphs import BuildGraphsStep
    from flows.steps import Unit, UnitFailure

    step = BuildGraphsStep(None, None, "auto", None, gleaning=None, max_parallel_insert=2, llm_max_async=4)  # type: ignore[arg-type]
    step.failed(None, UnitFailure(Unit("agriculture", "", []), RuntimeError("LightRAG storage gone")))  # type: ignore[arg-type]
    assert capsys.readouterr().out == "agriculture: build FAILED: RuntimeError: LightRAG storage gone\n"


def test_factory_graph_choice_says_which_graph_and_why():
    from flows.factory import choose_graphs

    reports = [{"domain": "cs", "n_nodes": 300, "n_edges": 900, "seed_eligible": 120, "verdict": "usable"},
               {"domain": "history", "n_nodes": 8, "n_edges": 3, "seed_eligible": 0, "verdict": "too_small"}]
    built = {"cs": {"entities": 300}, "history": {"entities": 8}, "biology": {"entities": 0}}
    ref = {"cs": "cs.jsonl", "history": "history.jsonl", "biology": "biology.jsonl"}
    use, why = choose_graphs(built, reports, extractor_is_local=False, reference=ref)
    assert use == {"history": "history.jsonl", "biology": "biology.jsonl"}  # a usable real build is kept
    assert any(line.startswith("cs:") and "this built graph" in line for line in why)
    assert any(line.startswith("history:") and "too_small" in line for line in why)
    use_local, why_local = choose_graphs(built, reports, extractor_is_local=True, reference=ref)
    assert set(use_local) == {"cs", "history", "biology"}
    assert all("embedded demo-quality model" in line for line in why_local)
