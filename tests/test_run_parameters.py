"""A run row records the flow's whole call: every parameter (defaults resolved), not a hand-picked part."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

from flows.runtime import flow_parameters
from schemas.config import load_settings


def test_flow_parameters_takes_every_parameter_but_settings():
    def flow_fn(domains=None, batch_size: int = 16, split_proportions=None, settings=None):
        split_proportions = split_proportions or {"train": 1.0}
        unrelated = 3  # noqa: F841 - a local that is not a parameter is not recorded
        return flow_parameters(flow_fn, locals())

    assert flow_fn(["cs"]) == {"domains": ["cs"], "batch_size": 16, "split_proportions": {"train": 1.0}}


def test_verify_paths_records_its_whole_call(prefect_harness, tmp_path):
    from flows.qa import verify_paths
    from warehouse.db import Warehouse

    settings = load_settings(data_dir=tmp_path)
    out = verify_paths(domains=["cs"], batch_size=7, settings=settings)  # no questions yet: nothing to verify
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        recorded = json.loads(wh.scalar("SELECT parameters FROM runs WHERE run_id = ?", [out["run_id"]]))
    expected = set(inspect.signature(verify_paths.fn).parameters) - {"settings"}
    assert set(recorded) == expected and recorded["batch_size"] == 7 and recorded["domains"] == ["cs"]


def test_ingest_and_import_record_their_whole_call(prefect_harness, tmp_path):
    from flows.graphs import import_graphs, ingest_corpus
    from warehouse.db import Warehouse

    demo = Path(__file__).resolve().parents[1] / "flows" / "demo"
    settings = load_settings(data_dir=tmp_path)
    ing = ingest_corpus(str(demo / "corpus" / "cs"), chunk_token_size=300, chunk_overlap_token_size=20,
                        settings=settings)  # fmt: skip
    imp = import_graphs({"cs": str(demo / "graphs" / "cs.jsonl")}, kind="triples", settings=settings)
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        rows = {r["run_id"]: json.loads(r["parameters"]) for r in wh.query("SELECT run_id, parameters FROM runs")}
    assert rows[ing["run_id"]] == {"source": str(demo / "corpus" / "cs"), "source_kind": "auto",
                                   "allow_new_domains": False, "chunk_token_size": 300,
                                   "chunk_overlap_token_size": 20}  # fmt: skip
    assert rows[imp["run_id"]] == {"files": {"cs": str(demo / "graphs" / "cs.jsonl")}, "kind": "triples"}
