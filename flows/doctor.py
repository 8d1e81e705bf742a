"""`doctor`: checks every configured endpoint, the embedding model and the warehouse, and records a run."""

from __future__ import annotations

import asyncio
from typing import Any

from prefect import flow, task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE

from flows.runtime import Runtime, default_settings, open_run
from schemas.config import Settings
from tasks.ops.doctor import DoctorCheck, check_embeddings, check_endpoint, check_warehouse, endpoint_groups


@task(name="check-endpoints", retries=1, retry_delay_seconds=2, cache_policy=NO_CACHE)
def check_endpoints_task(rt: Runtime) -> list[DoctorCheck]:
    groups = list(endpoint_groups(rt.settings).values())

    async def run_all() -> list[DoctorCheck]:
        try:
            return await rt.gateway.gather(check_endpoint(rt.gateway, roles) for roles in groups)
        finally:
            await rt.gateway.aclose()

    return asyncio.run(run_all())


@task(name="check-embeddings", cache_policy=NO_CACHE)
def check_embeddings_task(rt: Runtime) -> DoctorCheck:
    return asyncio.run(check_embeddings(rt.embedder))


def summarise(checks: list[DoctorCheck]) -> list[dict[str, Any]]:
    return [
        {"check": c.check, "target": c.target, "ok": "yes" if c.ok else "NO", "seconds": round(c.seconds, 2), "detail": c.detail}
        for c in checks
    ]


@flow(name="doctor", log_prints=True)
def doctor(settings: Settings | None = None, embeddings: bool = True) -> dict[str, Any]:
    """Check the whole set-up once; the returned summary says where the warehouse and run record are."""
    settings = settings or default_settings()
    with open_run("doctor", {"embeddings": embeddings}, settings) as rt:
        checks = list(check_endpoints_task(rt))
        if embeddings:
            checks.append(check_embeddings_task(rt))
        checks.append(check_warehouse(rt.wh, rt.run_id))
        rows = summarise(checks)
        create_table_artifact(key="doctor", table=rows, description=f"hopforge doctor, run {rt.run_id}")
        for r in rows:
            print(f"[{r['ok']:>3}] {r['check']:<10} {r['target']:<45} {r['detail']}")
        return {
            "run_id": rt.run_id,
            "warehouse": str(settings.warehouse_path),
            "ok": all(c.ok for c in checks),
            "checks": rows,
        }
