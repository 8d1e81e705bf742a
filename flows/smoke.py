"""`smoke`: one LLM step end to end (batch task, cache, warehouse write, Parquet export, artifact)."""

from __future__ import annotations

import asyncio
from typing import Any

from prefect import task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE

from flows.batches import BatchResult, batch_runner, chunks, run_batches
from flows.params import Smoke
from flows.runtime import default_settings, flow_parameters, hopforge_flow, open_run
from gateway.spec import GatewaySpec
from schemas.config import Settings
from tasks.ops.smoke import SMOKE_TEXTS, SmokeItem, annotate


@task(name="annotate-batch", retries=2, retry_delay_seconds=[1, 5], cache_policy=NO_CACHE)
def annotate_batch(spec: GatewaySpec, texts: list[str], run_id: str) -> BatchResult[SmokeItem]:
    gateway = spec.open()

    async def go() -> list[SmokeItem]:
        try:
            return await annotate(gateway, texts, run_id)
        finally:
            await gateway.aclose()

    return BatchResult(asyncio.run(go()), gateway.ledger.snapshot())


@hopforge_flow(name="smoke", log_prints=True)
def smoke(settings: Settings | None = None, texts: list[str] | None = None, batch_size: int = 8) -> dict[str, Any]:
    Smoke.check_call(locals())
    settings = settings or default_settings()
    texts = texts or SMOKE_TEXTS
    with open_run("smoke", flow_parameters(smoke, locals()), settings) as rt, \
            batch_runner(settings.runner, rt.gateway) as runner:
        spec = runner.spec("generator")  # the role `annotate` asks
        items: list[SmokeItem] = []
        for _, done in run_batches(annotate_batch, chunks(texts, batch_size), runner=runner,
                                   parameters=lambda b: {"spec": spec, "texts": list(b), "run_id": rt.run_id}):
            rt.wh.write("smoke_items", done.records)  # one transaction per batch: a crash loses no finished batch
            items.extend(done.records)
        export = rt.wh.export_parquet(
            "SELECT * FROM smoke_items WHERE run_id = ? ORDER BY item_id",
            settings.data_dir / "exports" / f"smoke_items-{rt.run_id}.parquet",
            params=[rt.run_id],
        )
        usage = rt.gateway.ledger.totals()
        ok = sum(i.ok for i in items)
        create_table_artifact(
            key="smoke",
            table=[{"text": i.text[:60], "ok": i.ok, "topic": i.topic, "entities": ", ".join(i.entities), "cached": i.cached,
                    "failure": (i.failure or "")[:120]} for i in items],
            description=f"smoke run {rt.run_id}: {ok}/{len(items)} valid, {usage['llm_calls']} LLM calls, {usage['llm_cache_hits']} cache hits",
        )
        print(f"smoke: {ok}/{len(items)} items valid, {usage['llm_calls']} LLM calls, {usage['llm_cache_hits']} cache hits; export {export}")
        return {"run_id": rt.run_id, "valid": ok, "total": len(items), "export": str(export), **usage}
