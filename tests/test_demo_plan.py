"""What `hopforge demo` promises, checked without the embedded model: its plan puts at least
``DEMO_PLAN.min_test_questions`` questions in the test split of the demo's reference graphs, the command's defaults
are the plan, the LightRAG build reads a sample of the corpus, and rollouts and long CoT go to a handful of
questions spread over the domains."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from schemas.config import load_settings
from schemas.errors import InputError
from warehouse.db import Warehouse


def test_demo_plan_puts_enough_questions_in_the_test_split(prefect_harness, fake_llm, tmp_path):
    """The demo's candidates run, as the embedded model makes it (the template writer writes, no meaning check),
    with a verifier that accepts every question: the embedded judge has accepted all but one attempt of a demo
    run, and the free-mode run after it only adds questions (earlier ones never change split)."""
    from flows.factory import DEMO_DIR, DEMO_DOMAINS, DEMO_PLAN, reference_graph_files
    from flows.graphs import import_graphs
    from flows.qa import generate_qa, load_qa
    from flows.runtime import open_run
    from tasks.qa.splits import DEFAULT_PROPORTIONS, assign_splits, split_leaks

    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    roles = {r: {"base_url": fake_llm.base_url, "model": "fake-model", "max_retries": 0, "timeout_s": 10}
             for r in ("generator", "verifier")}
    settings = load_settings(data_dir=tmp_path, roles=roles,
                             embeddings={"base_url": fake_llm.base_url, "model": "e", "dim": 16},
                             quality={"question_writer": "template", "meaning_check": "off"})
    settings = DEMO_PLAN.with_scopes(settings)  # as `hopforge demo` says its questions: within the notes
    import_graphs(files=reference_graph_files(DEMO_DIR / "graphs", DEMO_DOMAINS), settings=settings)
    out = generate_qa(domains=DEMO_DOMAINS, n_seeds=DEMO_PLAN.seeds, modes=["candidates"],
                      hop_mix={"1-2": DEMO_PLAN.short_share, "3+": 1 - DEMO_PLAN.short_share},
                      split_proportions=DEMO_PLAN.split_proportions, settings=settings)
    with open_run("test-read", {}, settings) as rt:
        qas = load_qa(rt)
    counts = {s: sum(q.split == s for q in qas) for s in ("train", "validation", "test")}
    assert out["accepted"] == len(qas) == sum(counts.values())
    assert counts["test"] >= DEMO_PLAN.min_test_questions, counts
    assert split_leaks(qas) == {}  # the larger test share keeps the leak-safe grouping
    # The factory's own shares would leave the evaluation a handful: the plan's share is what makes the ten.
    usual = assign_splits([q.model_copy(update={"split": None}) for q in qas], proportions=DEFAULT_PROPORTIONS,
                          seed=settings.seed)
    assert usual.counts["test"] < DEMO_PLAN.min_test_questions, usual.summary()


def test_demo_command_defaults_are_the_plan():
    from flows.cli import demo
    from flows.factory import DEMO_PLAN

    params = inspect.signature(demo).parameters
    assert (params["seeds"].default, params["short_share"].default, params["free_seeds"].default,
            params["deep_questions"].default) == (DEMO_PLAN.seeds, DEMO_PLAN.short_share, DEMO_PLAN.free_seeds,
                                                  DEMO_PLAN.deep_questions)
    shares = DEMO_PLAN.split_proportions
    assert abs(sum(shares.values()) - 1) < 1e-9 and shares["test"] > 0.1


def test_sample_corpus_copies_the_first_documents_of_each_domain(tmp_path):
    from flows.factory import DEMO_DIR, DEMO_DOMAINS, sample_corpus
    from tasks.corpus.ingest import ingest_text_folders

    dest = tmp_path / "sample"
    (dest / "stale").mkdir(parents=True)  # a sample left by an earlier run is replaced, not added to
    got = sample_corpus(str(DEMO_DIR / "corpus"), 1, dest)
    assert sorted(p.name for p in dest.iterdir()) == DEMO_DOMAINS
    for d in DEMO_DOMAINS:
        first = sorted((DEMO_DIR / "corpus" / d).iterdir())[0]
        assert [p.name for p in (dest / d).iterdir()] == [first.name]
        assert (dest / d / first.name).read_bytes() == first.read_bytes()
    assert len(ingest_text_folders(got).documents) == len(DEMO_DOMAINS)
    assert len(list((Path(sample_corpus(str(DEMO_DIR / "corpus"), 2, dest)) / "cs").iterdir())) == 2


@pytest.mark.parametrize("corpus, n, needle", [
    ("corpus", 0, "build_docs must be >= 1"), ("corpus/cs/01_turing_and_bletchley_park.md", 1, "needs a corpus folder")])
def test_sample_corpus_refuses_what_it_cannot_sample(tmp_path, corpus, n, needle):
    from flows.factory import DEMO_DIR, sample_corpus

    with pytest.raises(InputError, match=needle):
        sample_corpus(str(DEMO_DIR / corpus), n, tmp_path / "sample")


def test_deep_questions_take_train_questions_one_domain_at_a_time():
    from flows.factory import deep_question_ids

    rows = [("a1", "agriculture", "train"), ("a2", "agriculture", "train"), ("a0", "agriculture", "test"),
            ("b1", "biology", "validation"), ("c1", "cs", "train"), ("c2", "cs", "train"), ("h1", "history", "train")]
    with Warehouse(":memory:", migrate=False) as wh:  # the three columns the choice reads
        wh.execute("CREATE TABLE qa (qa_id VARCHAR, domain VARCHAR, split VARCHAR)")
        for row in rows:
            wh.execute("INSERT INTO qa VALUES (?, ?, ?)", list(row))
        # a domain at a time, each domain's train questions before its others; a domain not asked for is left out
        assert deep_question_ids(wh, ["agriculture", "biology", "cs"], 3) == ["a1", "c1", "b1"]
        assert deep_question_ids(wh, ["agriculture", "biology", "cs"], 6) == ["a1", "c1", "b1", "a2", "c2", "a0"]
        assert deep_question_ids(wh, ["biology"], 4) == ["b1"]
        assert deep_question_ids(wh, ["agriculture"], 0) == []


def test_build_line_says_what_lightrag_gave_in_one_line():
    from flows.factory import build_line

    empty = {d: {"documents": 1, "entities": 0, "relations": 0} for d in ("cs", "history")}
    ref = ["cs: LightRAG build gave 0 entities (no usable graph); later stages use the reference graph (...)",
           "history: LightRAG build gave 0 entities (no usable graph); later stages use the reference graph (...)"]
    assert build_line(empty, ref, 1) == ("LightRAG read 1 document(s) per domain (2 in all): 0 entities in every "
                                         "domain; later stages use the reference graphs")
    mixed = {"cs": {"documents": 5, "entities": 40, "relations": 55}, "history": empty["history"]}
    assert build_line(mixed, [ref[1], "cs: LightRAG build gave 40 nodes; later stages use this built graph"],
                      None) == ("LightRAG read 6 documents: 40 entities and 55 relations (1 of 2 domains empty); "
                                "later stages use the reference graphs of history")


def _summary_input(deep: dict) -> dict:
    """What the factory returns, cut to the keys the demo's summary reads."""
    yields = [{"kind": "template", "questions": 2, "trajectories": 2, "accepted": 2, "rejected": 0,
               "reject_reasons": ""}]
    return {
        "build": {"run_id": "build-1", "built": {}, "failures": {}},
        "build_line": "LightRAG read 1 document(s) per domain (5 in all): 0 entities in every domain; later stages "
                      "use the reference graphs",
        "graph_choice": ["cs: LightRAG build gave 0 entities (no usable graph); later stages use the reference graph "
                         "(the extractor is the embedded demo-quality model)"],
        "graph_reports": [], "qa": [], "splits": {"train": 7, "test": 11},
        "gold_paths": {"run_id": "gold-1", "questions": 18, "mean_candidates": 1.3, "mean_verified": 1.0},
        "trajectories": {"run_id": "traj-1", "made": 2, "accepted": 2, "by_kind": yields},
        "deep_trajectories": deep,
        "export": {"path": "EXPORTS/v-1", "version": "v-1", "rows": {"qa": {"train": 7, "test": 11}}, "ikg": [
            "IKG cs IKG-20%: 6 variants kept (6 by text, 0 by another path), 1 rejected (not_answerable 1); "
            "6 template trajectories"]},
        "eval": None,
        "timings": {"doctor": 11.0, "graph build": 75.2, "evaluation": 150.0, "total": 437.9},
    }


def _summary(monkeypatch, f: dict, ui: str | None) -> str:
    import io

    from rich.console import Console

    from flows import cli, prefect_server

    buf = io.StringIO()
    monkeypatch.setattr(cli, "out", Console(file=buf, width=300))
    monkeypatch.setattr(prefect_server, "server_url", lambda: ui)
    settings = load_settings(data_dir="DATA")
    smoke = {"valid": 6, "total": 6, "llm_calls": 6, "llm_cache_hits": 0}
    cli._demo_summary(settings, {"run_id": "doctor-1"}, smoke, f)
    return buf.getvalue()


def test_demo_summary_says_what_ran_how_long_and_where_to_look(monkeypatch, tmp_path):
    deep = {"questions": 3, "run_id": "traj-2", "made": 6, "accepted": 0, "by_kind": [
        {"kind": "rollouts", "questions": 3, "trajectories": 3, "accepted": 0, "rejected": 3,
         "reject_reasons": "no_answer: 3"},
        {"kind": "cot", "questions": 3, "trajectories": 3, "accepted": 0, "rejected": 3,
         "reject_reasons": "bad_format: 3"}]}
    home = tmp_path / "my repo" / ".prefect"  # the Makefile's PREFECT_HOME, which a user's shell does not set
    monkeypatch.setenv("PREFECT_HOME", str(home))
    text = _summary(monkeypatch, _summary_input(deep), "http://127.0.0.1:4200")
    lines = text.splitlines()
    # one line for the LightRAG step; a domain on the reference graph adds none
    assert [line for line in lines if "LightRAG" in line] == [
        "graphs: LightRAG read 1 document(s) per domain (5 in all): 0 entities in every domain; later stages use the "
        "reference graphs (run build-1)"]
    assert "splits: train: 7  validation: 0  test: 11" in lines
    assert "rollouts and long CoT on 3 question(s) (run traj-2): 0/6 accepted" in lines
    assert any("reject_reasons: no_answer: 3" in line for line in lines)
    assert any("reject_reasons: bad_format: 3" in line for line in lines)
    assert "time:   doctor 11s  graph build 1m15s  evaluation 2m30s  total 7m18s" in lines
    assert ("  IKG cs IKG-20%: 6 variants kept (6 by text, 0 by another path), 1 rejected (not_answerable 1); "
            "6 template trajectories") in lines
    tail = lines[lines.index("where to look:"):]
    assert tail[1] == "  Prefect UI: http://127.0.0.1:4200 (the runs, artifacts and yields of this demo)"
    assert tail[2] == (f"  your shell: export PREFECT_HOME='{home.resolve()}'  (so later commands find this demo's "
                       "Prefect server and run history)")
    assert "hopforge qa stats" in tail[3] and tail[4].startswith("  datasets:   EXPORTS/v-1 ")


def test_demo_summary_says_scores_of_the_embedded_policy_measure_nothing_yet(monkeypatch):
    f = _summary_input({"questions": 0, "skipped": "deep_questions=0: no rollouts or cot trajectories"})
    f["eval"] = {"model": "SmolLM2-135M-Instruct", "by_mode": {"tools": {"n": 12, "em": 0.0, "f1": 0.0, "hit1": 0.0}}}
    lines = _summary(monkeypatch, f, None).splitlines()
    at = lines.index("eval tools     (policy SmolLM2-135M-Instruct, test split): n=12 EM=0.00 F1=0.00 Hit@1=0.00")
    assert lines[at + 1].startswith("  (the policy is the embedded 135M demo model: these scores show the evaluation")
    monkeypatch.setenv("HOPFORGE_ROLES__POLICY__BASE_URL", "http://127.0.0.1:8000/v1")  # a served policy
    monkeypatch.setenv("HOPFORGE_ROLES__POLICY__MODEL", "my-policy")
    assert "embedded 135M demo model" not in _summary(monkeypatch, f, None)


def test_demo_summary_without_a_server_or_rollouts_says_why(monkeypatch):
    skipped = {"questions": 0, "skipped": "deep_questions=0: no rollouts or cot trajectories"}
    monkeypatch.delenv("PREFECT_HOME", raising=False)  # Prefect's default home: a plain shell finds it already
    text = _summary(monkeypatch, _summary_input(skipped), None)
    assert "your shell:" not in text and "PREFECT_HOME" not in text
    assert "rollouts and long CoT: skipped (deep_questions=0: no rollouts or cot trajectories)" in text
    assert "Prefect UI: no Prefect server is up" in text and "`hopforge server start`" in text


def test_demo_fails_when_its_test_split_is_too_small():
    from flows.cli import _check_demo_test_split

    _check_demo_test_split({"train": 30, "test": 10}, 10)
    with pytest.raises(InputError, match=r"test split holds 9 question\(s\), fewer than the 10"):
        _check_demo_test_split({"train": 30, "test": 9}, 10)
    with pytest.raises(InputError, match="holds 0"):
        _check_demo_test_split({"train": 30}, 10)


def test_distill_on_chosen_questions_leaves_the_others_alone(prefect_harness, fake_llm, tmp_path):
    """The factory's rollouts and long CoT on a handful: ``qa_ids`` limits the distillation to those questions."""
    from flows.distill import distill_trajectories, load_trajectories
    from tests.test_trajectories import build_warehouse, teacher

    role = {"base_url": fake_llm.base_url, "model": "fake-model", "max_retries": 0, "timeout_s": 10}
    settings = load_settings(data_dir=tmp_path, roles={"teacher": role},
                             embeddings={"base_url": fake_llm.base_url, "model": "fake-embed", "dim": 16})
    qas = build_warehouse(settings)
    fake_llm.add(reply=teacher({q.question: q.path for q in qas}))
    chosen = qas[1].qa_id
    out = distill_trajectories(domains=["cs"], kinds=["rollouts", "cot"], qa_ids=[chosen], n_rollouts=1,
                               settings=settings)
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        stored = load_trajectories(wh)
    assert out["made"] == 2 and sorted((t.qa_id, t.kind) for t in stored) == [(chosen, "cot"), (chosen, "rollouts")]
    assert distill_trajectories(domains=["cs"], kinds=["cot"], qa_ids=[], settings=settings)["made"] == 0


@pytest.mark.parametrize("args, says", [(["--deep-questions", "-1"], "--deep-questions must be >= 0, got -1"),
                                        (["--short-share", "1.5"], "--short-share must be between 0 and 1")])
def test_demo_refuses_bad_options_before_anything_runs(monkeypatch, tmp_path, args, says):
    from typer.testing import CliRunner

    from flows.cli import app

    monkeypatch.setenv("HOPFORGE_DATA_DIR", str(tmp_path / "data"))
    result = CliRunner().invoke(app, ["demo", *args])
    assert result.exit_code == 2 and says in result.output, result.output
    assert not (tmp_path / "data" / "warehouse.duckdb").exists()  # refused before the doctor opened anything


def test_demo_record_keeps_times_yields_and_reject_reasons(tmp_path):
    import json

    from flows.cli import _write_demo_record

    deep = {"questions": 3, "run_id": "traj-2", "made": 3, "accepted": 0, "by_kind": [
        {"kind": "cot", "questions": 3, "trajectories": 3, "accepted": 0, "rejected": 3,
         "reject_reasons": "bad_format: 3", "stored_accepted": 0}]}
    f = _summary_input(deep)
    f["qa"] = [{"run_id": "qa-1", "accepted": 18, "attempts": 19, "yields": [], "seed_notes": []}]
    f["eval"] = {"run_id": "eval-1", "model": "m", "by_mode": {"tools": {"n": 11, "em": 0.0, "f1": 0.1, "hit1": 0.0,
                                                                       "errors": 0}}}
    path = _write_demo_record(tmp_path / "data" / "demo-summary.json", f)
    rec = json.loads(path.read_text())
    assert rec["timings_s"]["total"] == 437.9 and rec["splits"] == {"train": 7, "test": 11}
    assert rec["questions"] == [{"run_id": "qa-1", "accepted": 18, "attempts": 19}]
    assert rec["rollouts_and_cot"] == {"questions": 3, "skipped": None, "by_kind": [
        {"kind": "cot", "questions": 3, "trajectories": 3, "accepted": 0, "reject_reasons": "bad_format: 3"}]}
    assert rec["eval"] == {"tools": {"n": 11, "em": 0.0, "f1": 0.1, "hit1": 0.0}}
    assert rec["lightrag"].startswith("LightRAG read 1 document(s) per domain")
    assert rec["export"]["ikg"] == f["export"]["ikg"]


def test_the_demo_exports_ikg_20_and_40_percent_variants(monkeypatch, tmp_path):
    """The demo's settings, as the command hands them to the factory, ask for IKG-20% and IKG-40% variants,
    searched in the whole demo corpus (the warehouse holds only LightRAG's sample), and its evaluation scores one
    IKG level (the embedded policy's tool runs cost seconds each); the global default asks for none, and a
    configuration's own levels and texts are kept."""
    from typer.testing import CliRunner

    import flows.doctor
    import flows.factory
    import flows.smoke
    from flows.cli import app
    from flows.factory import DEMO_DIR, DEMO_DOMAINS, DEMO_PLAN

    assert DEMO_PLAN.ikg_levels == (0.2, 0.4) and set(DEMO_PLAN.eval_ikg_levels) <= set(DEMO_PLAN.ikg_levels)
    seen, limits, scopes = [], [], []

    def factory(**kw):
        seen.append((list(kw["settings"].ikg.levels), kw["settings"].ikg.texts, kw["eval_ikg_levels"]))
        limits.append(kw["eval_limit"])
        scopes.append(dict(kw["settings"].quality.scopes))
        raise InputError("stop here")  # the demo ends with this one line: nothing else runs

    monkeypatch.setattr(flows.doctor, "doctor", lambda settings: {"ok": True, "run_id": "d"})
    monkeypatch.setattr(flows.smoke, "smoke", lambda settings: {})
    monkeypatch.setattr(flows.factory, "factory", factory)
    monkeypatch.setenv("HOPFORGE_DATA_DIR", str(tmp_path / "data"))
    result = CliRunner().invoke(app, ["demo"])
    assert result.exit_code == 2 and "stop here" in result.output, result.output
    assert seen == [([0.2, 0.4], str(DEMO_DIR / "corpus"), [0.4])]
    # the evaluation scores a few test questions unless asked for all (--eval-items 0)
    assert limits == [DEMO_PLAN.eval_items] and 0 < DEMO_PLAN.eval_items < DEMO_PLAN.min_test_questions
    for flag, want in (("0", None), ("7", 7)):
        result = CliRunner().invoke(app, ["demo", "--eval-items", flag])
        assert result.exit_code == 2 and limits[-1] == want, result.output
    result = CliRunner().invoke(app, ["demo", "--eval-items", "-1"])
    assert result.exit_code != 0 and "--eval-items must be >= 0" in result.output and len(limits) == 3
    assert load_settings(data_dir=tmp_path).ikg.levels == [] and load_settings(data_dir=tmp_path).ikg.texts is None
    own = DEMO_PLAN.with_ikg(load_settings(data_dir=tmp_path, ikg={"levels": [0.6], "texts": str(tmp_path)}))
    assert own.ikg.levels == [0.6] and own.ikg.texts == str(tmp_path)
    # every question is said within the notes its domain's graph was built from; a configuration's own scope wins
    assert scopes[0] == DEMO_PLAN.scopes and set(DEMO_PLAN.scopes) == set(DEMO_DOMAINS)
    from schemas.config import QualityConfig
    from tasks.qa.generate import scope_problem

    assert QualityConfig(scopes=DEMO_PLAN.scopes).scopes == DEMO_PLAN.scopes  # the configuration's own checks
    assert all(scope_problem(p) is None for p in DEMO_PLAN.scopes.values())
    assert load_settings(data_dir=tmp_path).quality.scopes == {}
    mine = DEMO_PLAN.with_scopes(load_settings(data_dir=tmp_path, quality={"scopes": {"cs": "in my notes"}}))
    assert mine.quality.scopes["cs"] == "in my notes" and mine.quality.scopes["history"] == DEMO_PLAN.scopes["history"]
