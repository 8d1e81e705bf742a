"""The whole factory once, every role on the loopback fake: corpus -> graph -> questions -> gold paths ->
trajectories -> export. Checks the wiring between stages; each stage's rules are tested in its own file."""

from __future__ import annotations

import json
from pathlib import Path

from schemas.config import load_settings
from tests.test_graph_build import extraction_reply
from tests.test_qa_flow import good_pick


def test_factory_end_to_end_on_the_fake(prefect_harness, fake_llm, tmp_path):
    from flows.factory import factory

    fake_llm.add(schema_name="qa_pick_path", reply=good_pick)
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    fake_llm.add(predicate=lambda b: "---Input Text---" in json.dumps(b["messages"]), reply=extraction_reply)
    roles = {r: {"base_url": fake_llm.base_url, "model": "fake-model", "max_retries": 0, "timeout_s": 10}
             for r in ("extractor", "generator", "verifier", "teacher", "judge", "policy")}
    settings = load_settings(data_dir=tmp_path, roles=roles,
                             embeddings={"base_url": fake_llm.base_url, "model": "e", "dim": 16})
    out = factory(domains=["cs"], n_seeds=3, free_seeds=0, n_rollouts=1, settings=settings,
                  distill_limits={"max_rounds": 3, "max_tokens_per_round": 200, "cot_max_tokens": 200})
    # the fake extractor knows none of the demo entities: the built graph is empty, so the reference graph is used
    assert any(line.startswith("cs:") and "reference graph" in line for line in out["graph_choice"])
    assert out["qa"][0]["accepted"] == 3
    assert out["gold_paths"]["questions"] == 3
    assert out["trajectories"]["made"] == 9  # 3 questions x (template, 1 rollout, cot)
    export = Path(out["export"]["path"])
    manifest = json.loads((export / "manifest.json").read_text())
    assert sum(out["export"]["rows"]["qa"].values()) == 3
    assert list((export / "qa").glob("*.parquet")) and manifest
    assert [r["domain"] for r in out["graph_reports"]] == ["cs"]
    from warehouse.db import Warehouse

    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        n_test = wh.scalar("SELECT count(*) FROM qa WHERE split = 'test'")
        n_items = wh.scalar("SELECT count(*) FROM eval_items")
    # evaluation runs on the test split: both modes on every test question, or is skipped when there is none
    assert (out["eval"] is None) == (n_test == 0)
    assert n_items == 2 * n_test
    if n_test:
        assert {m: st["n"] for m, st in out["eval"]["by_mode"].items()} == {"tools": n_test, "no_tools": n_test}
