"""The `refresh` flow on the loopback fake: a first version, a refresh with nothing new (0 LLM calls, nothing
exported), an incremental refresh (one new document -> its domain's graph -> new questions -> a new version with
its diff), difficulty labels in the export, publishing with a recording Hub client, and bad input stopped before
any LLM call with the previous version untouched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from schemas.config import load_settings
from tasks.export.datasets import verify_export
from testing.hub import RecordingHub
from tests import refresh_world as world
from warehouse.db import Warehouse

SMALL = {"n_seeds": 6, "min_ball": 5, "n_rollouts": 1, "solver_k": 2, "max_rounds": 3, "max_tokens_per_round": 200}


@pytest.fixture
def setup(prefect_harness, fake_llm, tmp_path, monkeypatch):
    import huggingface_hub

    RecordingHub.reset()
    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingHub)
    answers = world.install(fake_llm)
    settings = load_settings(data_dir=tmp_path / "data", roles=world.roles(fake_llm.base_url),
                             embeddings={"base_url": fake_llm.base_url, "model": "e", "dim": 16})  # fmt: skip
    world.store_profiles(settings.warehouse_path)
    corpus = tmp_path / "corpus"
    world.write_corpus(corpus)
    return settings, corpus, answers


def _versions(settings) -> list[dict[str, Any]]:
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        return wh.query("SELECT version, status, revision, previous_version FROM dataset_versions ORDER BY created_at")


def test_first_refresh_then_nothing_new_then_one_new_document(setup, fake_llm):
    from flows.refresh import refresh

    settings, corpus, answers = setup
    first = refresh(sources=[str(corpus)], settings=settings, **SMALL)
    assert first["new_version"] and first["changed_domains"] == ["cs"]
    assert first["usage"]["llm_calls"] > 0
    export = Path(first["path"])
    assert verify_export(export) == []
    card = (export / "README.md").read_text()
    pictures = sorted(p.relative_to(export).as_posix() for p in (export / "pictures").glob("*.svg"))
    assert pictures == first["pictures"] and len(pictures) == 6
    assert all(f"]({p})" in card for p in pictures) and "## Difficulty" in card

    qa = pq.read_table(export / "qa" / "train-00000-of-00001.parquet").to_pylist()
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        labels = {r["qa_id"]: r for r in wh.query("SELECT * FROM qa_difficulty")}
        n_qa = wh.scalar("SELECT count(*) FROM qa")
        splits_before = {r["qa_id"]: r["split"] for r in wh.query("SELECT qa_id, split FROM qa")}
    assert len(labels) == n_qa
    # the fake solver answers closed-book right from the first eight places only: those are trivial and dropped
    trivial = {q for q, r in labels.items() if r["label"] == "trivial"}
    for row in qa:
        assert row["difficulty"] == labels[row["qa_id"]]["label"] != "trivial"
        assert row["solver_k"] == 2 and row["solve_rate_no_tools"] == labels[row["qa_id"]]["no_tools_pass_rate"]
    exported = sum(json.loads((export / "manifest.json").read_text())["rows"]["qa"].values())
    assert exported == n_qa - len(trivial)
    assert first["dropped"] == ({"trivial": len(trivial)} if trivial else {})

    calls = fake_llm.calls()
    again = refresh(settings=settings, **SMALL)  # sources: those of the previous refresh
    assert fake_llm.calls() == calls, "a refresh with nothing new must not call the LLM"
    assert not again["new_version"] and again["version"] == first["version"] and again["usage"]["llm_calls"] == 0
    assert len(_versions(settings)) == 1

    world.write_corpus(corpus, extra=True)
    third = refresh(settings=settings, **SMALL)
    assert third["new_version"] and third["changed_domains"] == ["cs"]
    assert third["version"] != first["version"]
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        ingested = wh.query("SELECT ingested_run_id, count(*) AS n FROM documents GROUP BY 1 ORDER BY min(ingested_at)")
        snapshots = wh.scalar("SELECT count(DISTINCT snapshot_id) FROM graph_snapshots WHERE domain = 'cs'")
        names = {r["name"] for r in wh.query("SELECT name FROM entities WHERE snapshot_id = "
                                             "(SELECT snapshot_id FROM current_graph_snapshots WHERE domain = 'cs')")}
        splits_after = {r["qa_id"]: r["split"] for r in wh.query("SELECT qa_id, split FROM qa")}
    assert [r["n"] for r in ingested] == [4, 1]  # only the new document was ingested
    assert snapshots >= 2 and set(world.NEW_NAMES) <= names  # a new snapshot that holds the new places
    assert all(splits_after[q] == s for q, s in splits_before.items() if q in splits_after)  # earlier splits hold
    added = {(r["config"], r["split"]): r["added"] for r in third["diff"]["by_config_split"]}
    assert sum(v for (c, _), v in added.items() if c == "qa") == sum(
        r["added"] for r in third["diff"]["by_domain_hop"]) > 0
    versions = _versions(settings)
    assert [v["version"] for v in versions] == [first["version"], third["version"]]
    assert versions[1]["previous_version"] == first["version"]
    assert RecordingHub.calls == []  # no repository configured: nothing published


def test_publish_a_tag_per_version_and_a_failed_upload_changes_nothing(setup, fake_llm, monkeypatch):
    from flows.refresh import refresh

    settings, corpus, _ = setup
    monkeypatch.setenv("HOPFORGE_TEST_HUB_TOKEN", "hf_test")
    hub = {"repo_id": "someone/kg-hops", "token_env": "HOPFORGE_TEST_HUB_TOKEN"}
    first = refresh(sources=[str(corpus)], settings=settings, **SMALL, **hub)
    assert first["published"] == f"someone/kg-hops@{first['version']}"
    kinds = [c[0] for c in RecordingHub.calls]
    assert kinds == ["create_repo", "upload_folder", "create_tag"]
    upload, tag = RecordingHub.calls[1][1], RecordingHub.calls[2][1]
    assert upload["repo_type"] == "dataset" and upload["revision"] == "main" and upload["folder_path"] == first["path"]
    assert "**/*.parquet" in upload["delete_patterns"]  # files of the previous version do not linger
    assert tag["tag"] == first["version"] and tag["revision"] == f"{1:040x}"

    # a refresh with something new whose upload fails: the run fails, no tag moves, the previous version stays
    world.write_corpus(corpus, extra=True)
    RecordingHub.fail_upload = True
    with pytest.raises(ConnectionError):
        refresh(settings=settings, **SMALL, **hub)
    assert [c[0] for c in RecordingHub.calls] == kinds + ["create_repo"]
    versions = _versions(settings)
    assert versions[0]["status"] == "published" and versions[0]["revision"] == first["version"]
    assert versions[1]["status"] == "exported" and versions[1]["revision"] is None

    # the next refresh has nothing new to make, and publishes the version whose upload failed
    RecordingHub.fail_upload = False
    calls = fake_llm.calls()
    retry = refresh(settings=settings, **SMALL, **hub)
    assert fake_llm.calls() == calls and not retry["new_version"]
    assert retry["version"] == versions[1]["version"] and retry["published"].endswith(versions[1]["version"])
    assert RecordingHub.calls[-1][1]["tag"] == versions[1]["version"]


@pytest.mark.parametrize("case", ["bad_repo", "no_token", "vanished"])
def test_bad_input_is_refused_before_any_llm_call(setup, fake_llm, monkeypatch, case):
    from flows.refresh import RefreshError, refresh
    from tasks.export.hub import PublishError

    settings, corpus, _ = setup
    first = refresh(sources=[str(corpus)], settings=settings, **SMALL)
    world.write_corpus(corpus, extra=True)  # there is something new: only the bad input stops the refresh
    calls = fake_llm.calls()
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HOPFORGE_TEST_HUB_TOKEN", "hf_test")
    kwargs: dict[str, Any]
    kwargs, error, message = {
        "bad_repo": ({"repo_id": "not a repo!", "token_env": "HOPFORGE_TEST_HUB_TOKEN"}, PublishError,
                     "'not a repo!' is not a valid Hugging Face repository id"),
        "no_token": ({"repo_id": "someone/kg-hops"}, PublishError, "the environment variable HF_TOKEN holds no token"),
        "vanished": ({"sources": [str(corpus.parent / "gone")]}, RefreshError, "does not exist (moved or deleted?)"),
    }[case]  # fmt: skip
    with pytest.raises(error) as info:
        refresh(settings=settings, **{**SMALL, **kwargs})
    assert message in str(info.value)
    assert fake_llm.calls() == calls
    assert [v["version"] for v in _versions(settings)] == [first["version"]]
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        assert wh.scalar("SELECT count(*) FROM documents") == 4  # the new document was not even ingested


def test_cli_refresh_refuses_bad_input_before_any_flow(tmp_path, monkeypatch):
    import flows.refresh as refresh_flows
    from typer.testing import CliRunner

    from flows.cli import app

    runner = CliRunner()

    def must_not_run(**kwargs):
        raise AssertionError("the flow started on bad input")

    monkeypatch.setattr(refresh_flows, "refresh", must_not_run)
    result = runner.invoke(app, ["refresh", "--source", str(tmp_path / "vanished")])
    assert result.exit_code == 2 and "vanished" in result.output and "Traceback" not in result.output
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"context": "text"}\n')
    monkeypatch.delenv("HF_TOKEN", raising=False)
    result = runner.invoke(app, ["refresh", "--source", str(corpus), "--repo-id", "not a repo id"])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
