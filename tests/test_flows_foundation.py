"""The doctor and smoke flows under one Prefect harness, against the loopback fake."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from testing.fake import Fault
from schemas.config import load_settings
from tasks.ops.doctor import check_embeddings
from warehouse.db import Warehouse


def fake_settings(fake, tmp_path, **kw):
    roles = {r: {"base_url": fake.base_url, "model": "fake-model", "max_retries": 1, "timeout_s": 5}
             for r in ("extractor", "generator", "verifier", "teacher", "judge", "policy", "profiler")}
    return load_settings(data_dir=tmp_path, roles=roles,
                         embeddings={"base_url": fake.base_url, "model": "fake-embed", "dim": 16}, **kw)


def test_doctor_flow_records_run_and_usage(prefect_harness, fake_llm, tmp_path):
    from flows.doctor import doctor

    settings = fake_settings(fake_llm, tmp_path)
    result = doctor(settings=settings, embeddings=False)
    assert result["ok"], result
    # seven roles on one endpoint are checked with one call
    assert fake_llm.calls() == 1
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        run = wh.query("SELECT * FROM runs WHERE run_id = ?", [result["run_id"]])[0]
        assert run["status"] == "completed" and run["ended_at"] is not None
        assert run["llm_calls"] == 1 and run["code_version"]
        assert "api_key" in run["config"]
        usage = wh.query("SELECT * FROM llm_usage WHERE run_id = ?", [result["run_id"]])
        assert [u["role"] for u in usage] == ["extractor"] and usage[0]["calls"] == 1


def test_doctor_reports_a_broken_endpoint(prefect_harness, fake_llm, tmp_path):
    from flows.doctor import doctor

    fake_llm.set_fault(Fault(status=401))
    result = doctor(settings=fake_settings(fake_llm, tmp_path), embeddings=False)
    assert not result["ok"]
    llm = [c for c in result["checks"] if c["check"] == "llm"][0]
    assert llm["ok"] == "NO" and "API key" in llm["detail"]


def test_smoke_flow_writes_exports_and_rerun_is_free(prefect_harness, fake_llm, tmp_path):
    from flows.smoke import smoke

    # every attempt for this item (re-asks included) gets garbage
    fake_llm.add(schema_name="SmokeAnnotation", reply="not json at all",
                 predicate=lambda body: any("Linus" in str(m.get("content")) for m in body["messages"]))
    settings = fake_settings(fake_llm, tmp_path)
    first = smoke(settings=settings, batch_size=4)
    assert first["total"] == 6 and first["valid"] == 5  # the garbage answer is a recorded failure
    calls_first = fake_llm.calls()
    second = smoke(settings=settings)
    # the valid answers come from the cache; only the item that never validated is asked again
    assert second["llm_cache_hits"] == 5
    assert fake_llm.calls() - calls_first == 3  # 1 call + 2 re-asks for the failing item
    rows = pq.read_table(first["export"]).to_pylist()
    assert len(rows) == 6 and sum(r["ok"] for r in rows) == 5
    bad = [r for r in rows if not r["ok"]][0]
    assert "Linus" in bad["text"] and "no JSON" in bad["failure"]
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        assert wh.scalar("SELECT count(*) FROM smoke_items") == 12
        assert wh.scalar("SELECT count(*) FROM runs WHERE flow = 'smoke' AND status = 'completed'") == 2


def test_failed_flow_marks_run_failed(prefect_harness, tmp_path):
    from flows.runtime import open_run

    settings = load_settings(data_dir=tmp_path)
    with pytest.raises(RuntimeError):
        with open_run("boom", {}, settings) as rt:
            run_id = rt.run_id
            raise RuntimeError("stage crashed")
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        row = wh.query("SELECT status, error FROM runs WHERE run_id = ?", [run_id])[0]
    assert row["status"] == "failed" and "stage crashed" in row["error"]


def test_a_run_that_cannot_be_recorded_closes_the_warehouse_it_opened(tmp_path, monkeypatch):
    """A failure before the run's row is written (here, marking old runs crashed) must not leave the warehouse
    open: DuckDB refuses a second connection to a file this process holds open with another configuration, so a
    long-lived process (a worker) could not even read it afterwards."""
    import flows.runtime as runtime

    settings = load_settings(data_dir=tmp_path)

    def refuse(wh):
        raise RuntimeError("cannot read the runs table")

    held: list[Warehouse] = []  # kept alive, as a long-lived process's frames may keep it: no garbage collection

    def opening(*args, **kwargs):
        held.append(Warehouse(*args, **kwargs))
        return held[-1]

    monkeypatch.setattr(runtime, "Warehouse", opening)
    monkeypatch.setattr(runtime, "mark_crashed", refuse)
    with pytest.raises(RuntimeError, match="cannot read the runs table"):
        with runtime.open_run("boom", {}, settings):
            raise AssertionError("the body must not run")
    assert len(held) == 1
    with Warehouse(settings.warehouse_path, read_only=True) as wh:  # another configuration: only if it was closed
        assert wh.scalar("SELECT count(*) FROM runs WHERE flow = 'boom'") == 0


class _StubEmbedder:
    name, dim = "stub", 3

    def __init__(self, vecs):
        self.vecs = np.asarray(vecs, dtype=np.float32)

    async def aembed(self, texts):
        return self.vecs


async def test_check_embeddings_good_and_bad():
    good = await check_embeddings(_StubEmbedder([[1, 0, 0], [0.9, 0.1, 0], [0, 0, 1]]))
    bad = await check_embeddings(_StubEmbedder([[1, 0, 0], [0, 0, 1], [1, 0, 0]]))
    assert good.ok and not bad.ok


async def test_openai_embedder_against_fake(fake_llm):
    from gateway.embeddings import OpenAIEmbedder
    from schemas.config import EmbeddingConfig

    emb = OpenAIEmbedder(EmbeddingConfig(base_url=fake_llm.base_url, model="e", dim=16, batch_size=2))
    v = await emb.aembed(["a", "b", "a"])
    assert v.shape == (3, 16)
    assert np.allclose(v[0], v[2]) and np.allclose(np.linalg.norm(v, axis=1), 1.0)
    assert fake_llm.calls("/embeddings") == 2  # batches of two
    wrong = OpenAIEmbedder(EmbeddingConfig(base_url=fake_llm.base_url, model="e", dim=8))
    from gateway.embeddings import EmbeddingError

    with pytest.raises(EmbeddingError, match="expected"):
        await wrong.aembed(["x"])
