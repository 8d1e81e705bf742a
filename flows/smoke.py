"""`smoke`: one LLM step end to end (batch task, cache, warehouse write, Parquet export, artifact)."""

from __future__ import annotations

import asyncio
from typing import Any

from prefect import flow, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE

from flows.runtime import Runtime, default_settings, open_run
from schemas.config import Settings
from tasks.ops.smoke import SMOKE_TEXTS, SmokeItem, annotate


@task(name="annotate-batch", retries=2, retry_delay_seconds=[1, 5], cache_policy=NO_CACHE)
def annotate_batch(rt: Runtime, texts: list[str]) -> list[SmokeItem]:
    async def go() -> list[SmokeItem]:
        try:
            return await annotate(rt.gateway, texts, rt.run_id)
        finally:
            await rt.gateway.aclose()

    return asyncio.run(go())


@flow(name="smoke", log_prints=True)
def smoke(settings: Settings | None = None, texts: list[str] | None = None, batch_size: int = 8) -> dict[str, Any]:
    settings = settings or default_settings()
    texts = texts or SMOKE_TEXTS
    with open_run("smoke", {"n_texts": len(texts), "batch_size": batch_size}, settings) as rt:
        items: list[SmokeItem] = []
        for start in range(0, len(texts), batch_size):
            batch = annotate_batch(rt, texts[start : start + batch_size])
            rt.wh.write_batch("smoke_items", batch)  # one transaction per batch: a crash loses no finished batch
            items.extend(batch)
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
