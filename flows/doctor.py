"""`doctor`: checks every configured endpoint, the embedding model and the warehouse, and records a run."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import duckdb
from prefect import task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE

from flows.batches import BatchResult
from flows.params import Doctor
from flows.runtime import default_settings, flow_parameters, hopforge_flow, open_run
from gateway.embeddings import shared_embedder
from gateway.spec import GatewaySpec, spec_for
from schemas.config import EmbeddingConfig, Settings
from tasks.ops.doctor import DoctorCheck, check_embeddings, check_endpoint, endpoint_groups
from warehouse.db import Warehouse, WarehouseError


@task(name="check-endpoints", retries=1, retry_delay_seconds=2, cache_policy=NO_CACHE)
def check_endpoints_task(spec: GatewaySpec) -> BatchResult[DoctorCheck]:
    """One check per distinct endpoint. ``spec`` resolves no role in advance: resolving (and starting the embedded
    model) is part of what is checked."""
    gateway = spec.open()
    groups = list(endpoint_groups(spec.settings).values())

    async def run_all() -> list[DoctorCheck]:
        try:
            return await gateway.gather(check_endpoint(gateway, roles) for roles in groups)
        finally:
            await gateway.aclose()

    return BatchResult(asyncio.run(run_all()), gateway.ledger.snapshot())


@task(name="check-embeddings", cache_policy=NO_CACHE)
def check_embeddings_task(embeddings: EmbeddingConfig) -> DoctorCheck:
    return asyncio.run(check_embeddings(shared_embedder(embeddings)))


def summarise(checks: list[DoctorCheck]) -> list[dict[str, Any]]:
    return [
        {"check": c.check, "target": c.target, "ok": "yes" if c.ok else "NO", "seconds": round(c.seconds, 2), "detail": c.detail}
        for c in checks
    ]


def check_warehouse(wh: Warehouse, run_id: str) -> DoctorCheck:
    started = time.perf_counter()
    try:
        version = wh.schema_version()
        found = wh.scalar("SELECT count(*) FROM runs WHERE run_id = ?", [run_id])
        ok = found == 1
        detail = f"{wh.path or ':memory:'}: schema version {version}, {len(wh.tables())} tables, run row {'written' if ok else 'missing'}"
    except (duckdb.Error, WarehouseError) as exc:  # a doctor check reports, it does not raise
        ok, detail = False, str(exc)
    return DoctorCheck(check="warehouse", target=str(wh.path or ":memory:"), ok=ok, detail=detail,
                       seconds=time.perf_counter() - started)


@hopforge_flow(name="doctor", log_prints=True)
def doctor(settings: Settings | None = None, embeddings: bool = True) -> dict[str, Any]:
    """Check the whole set-up once; the returned summary says where the warehouse and run record are."""
    Doctor.check_call(locals())
    settings = settings or default_settings()
    with open_run("doctor", flow_parameters(doctor, locals()), settings) as rt:
        found = check_endpoints_task(spec_for(rt.gateway, ()))
        rt.gateway.ledger.merge(found.usage)
        checks = list(found.records)
        if embeddings:
            checks.append(check_embeddings_task(settings.embeddings))
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
