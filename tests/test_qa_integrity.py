"""QA integrity over whole runs of the generate-qa flow on the fake: splits stay leak-safe across five refreshes,
old questions never move, and every accepted attempt ends in exactly one ``qa`` or ``qa_rejects`` row."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace


from schemas.config import load_settings
from schemas.qa import QA
from tasks.graph.importers import read_triples
from tasks.qa.splits import split_leaks
from testing.permissive_profiles import store_one_each_way
from warehouse.db import Warehouse

DEMO = Path(__file__).resolve().parent.parent / "flows" / "demo"


def _prompt(body) -> str:
    return "\n".join(str(m.get("content")) for m in body["messages"])


def pick_first(body):
    cands = {m.group(1): m.group(2).split(" -> ") for m in re.finditer(r"^(P\d+): (.+)$", _prompt(body), re.M)}
    seed = re.search(r"Candidate paths starting at (['\"])(.+?)\1;", _prompt(body)).group(2)
    pid = sorted(cands)[0]
    return {"path_id": pid, "question": f"Starting from {seed}, which entity does this chain of relations lead to?"}


def _settings(fake_llm, tmp_path, seed: int):
    roles = {r: {"base_url": fake_llm.base_url, "model": "fake-model", "max_retries": 1, "timeout_s": 10}
             for r in ("generator", "verifier")}  # fmt: skip
    return load_settings(data_dir=tmp_path, roles=roles, seed=seed,
                         embeddings={"base_url": fake_llm.base_url, "model": "e", "dim": 16})  # fmt: skip


def _load(wh: Warehouse, table: str) -> list[dict]:
    return wh.query(f"SELECT * FROM {table}")


def assert_one_row_per_attempt(wh: Warehouse) -> None:
    """Accepted attempts: exactly one ``qa`` row or one ``qa_rejects`` row each; rejected attempts: neither,
    and a reason on the attempt."""
    attempts = _load(wh, "qa_attempts")
    in_qa = [r["attempt_id"] for r in wh.query("SELECT attempt_id FROM qa")]
    in_rejects = [r["attempt_id"] for r in wh.query("SELECT attempt_id FROM qa_rejects")]
    assert len(in_qa) == len(set(in_qa)) and len(in_rejects) == len(set(in_rejects))
    for a in attempts:
        places = in_qa.count(a["attempt_id"]) + in_rejects.count(a["attempt_id"])
        if a["status"] == "accepted":
            assert places == 1, a
        else:
            assert places == 0 and a["reject_reason"], a
    assert set(in_qa) | set(in_rejects) <= {a["attempt_id"] for a in attempts}


def test_five_generation_runs_on_the_same_graph(prefect_harness, fake_llm, tmp_path):
    from flows.export import export_datasets
    from flows.graphs import import_graphs
    from flows.qa import generate_qa, load_qa

    fake_llm.add(schema_name="qa_pick_path", reply=pick_first)
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    import_graphs(files={"cs": str(DEMO / "graphs" / "cs.jsonl")}, settings=_settings(fake_llm, tmp_path, 0))
    # integrity over runs, not what may be asked, is tested: every relation of the graph can be asked (the user's
    # profiles), so each run has enough questions to split
    with Warehouse(_settings(fake_llm, tmp_path, 0).warehouse_path) as wh:
        store_one_each_way(wh, [read_triples(DEMO / "graphs" / "cs.jsonl", "cs").to_graph()])
    placed: dict[str, str] = {}
    shares = []
    for run in range(5):  # a scheduled refresh: same graph, another sampling seed each time
        settings = _settings(fake_llm, tmp_path, run)
        out = generate_qa(domains=["cs"], n_seeds=12, modes=["candidates"], settings=settings)
        with Warehouse(settings.warehouse_path, read_only=True) as wh:
            rt = SimpleNamespace(wh=wh)
            qas = load_qa(rt)  # type: ignore[arg-type]
            assert_one_row_per_attempt(wh)
            conflicts = wh.query("SELECT * FROM qa_rejects WHERE reason = 'split_conflict'")
            yields = wh.query("SELECT stage, reason, sum(count) AS n FROM qa_yields WHERE run_id = ? "
                              "GROUP BY stage, reason", [out["run_id"]])  # fmt: skip
        assert all(q.split for q in qas) and split_leaks(qas) == {}
        assert all(placed[q.qa_id] == q.split for q in qas if q.qa_id in placed)  # old questions never move
        assert all(q.seed == q.path[0] for q in qas)
        placed.update({q.qa_id: q.split for q in qas})  # type: ignore[misc]
        n = {(y["stage"], y["reason"]): y["n"] for y in yields}
        assert n.get(("splits", "split_conflict"), 0) == sum(c["run_id"] == out["run_id"] for c in conflicts)
        assert out["splits"]["conflicts"] == n.get(("splits", "split_conflict"), 0)
        shares.append(out["splits"]["achieved"])
    assert len(placed) >= 20
    print("split shares after each of five runs:", shares)
    # the export checks the property itself and writes
    result = export_datasets.fn(settings=_settings(fake_llm, tmp_path, 0), include=["qa"])
    assert sum(result["rows"]["qa"].values()) == len(qas)


def test_a_qa_id_collision_is_a_duplicate_reject_not_an_overwrite(tmp_path):
    from flows.qa import _collisions

    def q(attempt: str) -> QA:
        return QA(qa_id="qa-same", domain="cs", seed="A", hop_class="1-2", path=["A", "B"], path_edges=[],
                  question="Which entity follows A?", answer="B", attempt_id=attempt)  # fmt: skip

    with Warehouse(tmp_path / "w.duckdb") as wh:
        rt = SimpleNamespace(wh=wh, run_id="run-2")
        kept, rejects = _collisions(rt, [q("att-1"), q("att-2")])  # type: ignore[arg-type]
        assert [k.attempt_id for k in kept] == ["att-1"]
        (r,) = rejects
        assert (r.reason, r.stage, r.attempt_id, r.duplicate_of) == ("duplicate", "dedup", "att-2", "qa-same")
        assert "attempt att-1" in r.detail
        wh.write_batch("qa", kept)
        # a later run's attempt making the same id is a duplicate of the stored row; the same attempt is not
        kept, rejects = _collisions(rt, [q("att-3"), q("att-1")])  # type: ignore[arg-type]
        assert [k.attempt_id for k in kept] == ["att-1"] and [r.attempt_id for r in rejects] == ["att-3"]
