"""The `distill-trajectories` flow: teacher trajectories (template, rollouts, long CoT) for the stored questions.

For each domain and graph snapshot the flow loads the questions (optionally one split), their gold paths, the graph
and a tool environment over it; batch tasks make trajectories (``tasks.distill.trajectories``) and never write; the flow
writes each batch in one transaction. Resumable: jobs ``(qa_id, kind, sample)`` with a final verdict are skipped (a
job lost to an unreachable endpoint is tried again), and a crashed run loses at most the batch in flight (whose LLM
answers the cache still holds). A table artifact reports trajectories, acceptance rate and reject reasons per kind.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from flows.batches import BatchResult, chunks
from flows.checks import check_domains_in
from flows.params import DistillTrajectories
from flows.qa import load_qa
from flows.runtime import Runtime, default_settings, flow_parameters, hopforge_flow
from flows.steps import Step, Unit, by_snapshot, run_step
from flows.tools_env import snapshot_tool_env
from gateway.embeddings import shared_embedder
from gateway.loop import run_shared
from gateway.spec import GatewaySpec
from schemas.config import Settings
from schemas.errors import HopforgeError, InputError
from schemas.qa import QA, GoldPath, Split
from schemas.tools import OMNE_TOOLS
from schemas.trajectories import TRAJECTORY_KINDS, Trajectory, TrajectoryKind
from tasks.env.index import GraphIndex
from tasks.graph.kg import KnowledgeGraph
from tasks.distill.common import DistillConfig, DistillContext, DistillJob
from tasks.distill.trajectories import distill_one, jobs_for
from warehouse.db import Warehouse
from warehouse.graphs import load_graph

def load_trajectories(wh: Warehouse, where: str = "TRUE", params: Sequence[Any] | None = None) -> list[Trajectory]:
    """Trajectories matching a SQL condition, ordered by id."""
    return wh.read("trajectories", Trajectory, where, params, order_by="trajectory_id")


def load_gold_paths(wh: Warehouse, qa_ids: Sequence[str] | None = None) -> dict[str, list[GoldPath]]:
    """Gold paths by ``qa_id`` (rank order), for the given questions or all."""
    if qa_ids is None:
        paths = wh.read("gold_paths", GoldPath, order_by="qa_id, rank")
    else:
        paths = wh.read("gold_paths", GoldPath, "qa_id IN (SELECT unnest(?::VARCHAR[]))", [list(qa_ids)],
                        order_by="qa_id, rank")
    out: dict[str, list[GoldPath]] = {}
    for p in paths:
        out.setdefault(p.qa_id, []).append(p)
    return out


def stored_jobs(wh: Warehouse, kinds: Sequence[str]) -> set[tuple[str, str, int]]:
    """``(qa_id, kind, sample)`` with a final verdict for ``kinds``: accepted, or rejected for anything but an
    endpoint that gave no answer (``llm_error`` with ``end_reason = 'error'``), which a re-run tries again (the new
    row replaces the old one: same id)."""
    rows = wh.query(
        "SELECT qa_id, kind, sample FROM trajectories WHERE kind IN (SELECT unnest(?::VARCHAR[])) "
        "AND NOT (reject_reason = 'llm_error' AND end_reason IS NOT DISTINCT FROM 'error')",
        [list(kinds)],
    )
    return {(r["qa_id"], r["kind"], int(r["sample"])) for r in rows}


@task(name="distill-batch", retries=1, retry_delay_seconds=5, cache_policy=NO_CACHE)
def distill_batch(
    spec: GatewaySpec, kg: KnowledgeGraph, jobs: list[DistillJob], gold: dict[str, list[GoldPath]],
    cfg: DistillConfig, run_id: str, model: str | None, index_dir: str,
) -> BatchResult[Trajectory]:
    """The trajectories of one batch of jobs (all of one graph snapshot), concurrently (the gateway's limiter paces
    the teacher). Picklable in and out: the tool environment is built where the task runs."""
    gateway = spec.open()
    needs_tools = {"template", "rollouts"} & {j.kind for j in jobs}
    plain = DistillContext(gateway=gateway, env=None, kg=kg, cfg=cfg, run_id=run_id, model=model)

    async def go() -> list[Trajectory]:
        # The tool environment (on a new snapshot: every entity embedded for the index) is built on a worker
        # thread while the CoT jobs, which need no tools, already call the teacher; the other jobs wait for it.
        env = asyncio.ensure_future(asyncio.to_thread(
            snapshot_tool_env, kg, spec.settings.embeddings, index_dir, OMNE_TOOLS)) if needs_tools else None

        async def one(job: DistillJob) -> Trajectory:
            ctx = plain if env is None or job.kind == "cot" else replace(plain, env=await env)
            return await distill_one(job, gold.get(job.qa.qa_id, []), ctx)

        try:
            return await gateway.gather(one(job) for job in jobs)
        finally:
            if env is not None and not env.done():
                await asyncio.wait([env])  # a build under way finishes (it cannot be interrupted) before the batch ends
            await gateway.aclose()

    return BatchResult(run_shared(go()), gateway.ledger.snapshot())


class IndexesAhead:
    """The entity indexes of a run's snapshots, built on a thread of the flow in the order the batches will ask for
    them, beside the teacher calls of the batches already running.

    A batch task builds its tool environment over the on-disk index (``snapshot_tool_env``); a new snapshot's
    index is every entity embedded through the embeddings endpoint, which used to sit on the critical path of the
    snapshot's first batch, one domain after the other. Built ahead, the next domains' indexes are on disk before
    their batches start; a batch that asks for an index still being built waits for that one build (one build per
    cache file in a process, ``GraphIndex``) instead of starting another. An endpoint that fails here is left to
    the batch that needs the index, which resumes the build from the parts kept and stops the run with the
    error's one line. The thread reads the graphs over a connection of its own (a DuckDB connection serves one
    thread at a time); an in-memory warehouse has no second connection, and its batches build their indexes."""

    def __init__(self, wh: Warehouse, snapshots: Sequence[tuple[str, str]], settings: Settings,
                 index_dir: str) -> None:
        self._path, self._snapshots, self._settings, self._index_dir = wh.path, list(snapshots), settings, index_dir
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="distill-indexes", daemon=True)

    def _run(self) -> None:
        embedder = shared_embedder(self._settings.embeddings)
        with Warehouse(self._path, migrate=False) as wh:
            for domain, snap in self._snapshots:
                if self._stop.is_set():
                    return
                try:
                    kg = load_graph(wh, domain, snap or None)
                    GraphIndex(kg, embedder, cache_dir=self._index_dir).embeddings  # noqa: B018  (built and cached)
                except HopforgeError:  # the batch that needs this index resumes its build and reports the error
                    continue

    def __enter__(self) -> "IndexesAhead":
        if self._snapshots and self._path is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()  # a build under way finishes (its parts are saved either way)


def yield_table(made: Sequence[Trajectory], stored: dict[tuple[str, str], int]) -> list[dict[str, Any]]:
    """One artifact row per kind: this run's trajectories, accepted, rejected, acceptance rate, reject reasons;
    and the accepted total stored over all runs."""
    rows = []
    for kind in TRAJECTORY_KINDS:
        mine = [t for t in made if t.kind == kind]
        if not mine and not stored.get((kind, "accepted")):
            continue
        accepted = sum(t.accepted for t in mine)
        reasons = Counter(t.reject_reason or "" for t in mine if not t.accepted)
        rows.append({
            "kind": kind,
            "questions": len({t.qa_id for t in mine}),
            "trajectories": len(mine),
            "accepted": accepted,
            "rejected": len(mine) - accepted,
            "acceptance_rate": round(accepted / len(mine), 3) if mine else None,
            "reject_reasons": ", ".join(f"{r}: {n}" for r, n in sorted(reasons.items(), key=lambda x: (-x[1], x[0]))),
            "accepted_by_writer": ", ".join(f"{w}: {n}" for w, n in sorted(Counter(
                t.writer for t in mine if t.accepted).items())),
            "stored_accepted": stored.get((kind, "accepted"), 0),
        })  # fmt: skip
    return rows


def _artifact(table: list[dict[str, Any]], description: str) -> None:
    """A Prefect table artifact, only inside a flow run (a plain call in a test has no API to send it to)."""
    from prefect.artifacts import create_table_artifact
    from prefect.context import FlowRunContext

    if table and FlowRunContext.get() is not None:
        create_table_artifact(key="trajectory-yields", table=table, description=description)


@hopforge_flow(name="distill-trajectories", log_prints=True)
def distill_trajectories(
    domains: list[str] | None = None,
    kinds: Sequence[TrajectoryKind] = ("template", "rollouts", "cot"),
    n_rollouts: int = 2,
    split: Split | None = None,
    qa_ids: list[str] | None = None,
    batch_size: int | None = None,
    min_path_coverage: float = 0.5,
    max_distractors: int = 40,
    rollout_temperature: float = 0.8,
    rollout_style: str = "text",
    max_rounds: int = 7,
    max_tokens_per_round: int = 3000,
    cot_max_tokens: int = 4096,
    thought_writer: str | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Distil teacher trajectories for the stored questions (of ``split``, if given; only ``qa_ids``, if given) of
    ``domains`` (default: all with questions). ``batch_size`` (jobs per batch task) defaults to the teacher endpoint's ``max_concurrency``.
    Returns per-kind counts and the run id; see the module docstring."""
    wanted = DistillTrajectories.check_call(locals()).kinds
    settings = settings or default_settings()
    kinds = tuple(k for k in TRAJECTORY_KINDS if k in wanted)  # canonical order
    q = settings.quality
    # ``auto``: the embedded demo-quality teacher writes word salad, so the template writer writes its thoughts.
    thought_writer = thought_writer or q.writer_for(q.thought_writer, settings.endpoint("teacher").is_local)
    cfg = DistillConfig(
        n_rollouts=n_rollouts, min_path_coverage=min_path_coverage, max_distractors=max_distractors,
        rollout_temperature=rollout_temperature, rollout_style=rollout_style,  # type: ignore[arg-type]
        seed=settings.seed, max_rounds=max_rounds, max_tokens_per_round=max_tokens_per_round,
        cot_max_tokens=cot_max_tokens, thought_writer=thought_writer, language=q.language,  # type: ignore[arg-type]
    )  # fmt: skip
    step = DistillStep(domains, kinds, n_rollouts, split, qa_ids, batch_size, cfg, settings)
    return run_step(step, flow_parameters(distill_trajectories, locals()), settings)


class DistillStep(Step[DistillJob, Trajectory]):
    """Teacher trajectories for the stored questions: jobs ``(qa_id, kind, sample)`` without a final verdict, in
    batches of one graph snapshot, each made by ``distill_batch`` (``tasks.distill.trajectories``)."""

    flow, progress, doing = "distill-trajectories", "distill", "distilling {domain} trajectories"
    reads = ("qa", "gold_paths", "trajectories", "graph_snapshots")
    writes = {"trajectories": Trajectory}
    task = distill_batch

    def __init__(self, domains: list[str] | None, kinds: Sequence[str], n_rollouts: int, split: str | None,
                 qa_ids: list[str] | None, batch_size: int | None, cfg: DistillConfig, settings: Settings) -> None:
        self.domains, self.kinds, self.n_rollouts, self.cfg = domains, tuple(kinds), n_rollouts, cfg
        self.batch_size = batch_size
        self.roles = (cfg.role,)
        self.index_dir = str((settings.data_dir / "indexes").resolve())
        self.settings = settings
        self.where, self.args = "domain IN (SELECT unnest(?::VARCHAR[]))", [list(domains or [])]
        self.split, self.qa_ids = split, qa_ids
        self.counts: dict[tuple[str, str], int] = {}
        self.totals: dict[str, int] = {}
        self.done: set[tuple[str, str, int]] = set()
        self.model: str | None = None

    def prepare(self, rt: Runtime, spec: GatewaySpec) -> None:
        check_domains_in(rt.wh, self.domains)
        self.domains = self.domains or [r["domain"] for r in rt.wh.query(
            "SELECT DISTINCT domain FROM qa ORDER BY domain")]  # fmt: skip
        if not self.domains:
            raise InputError("no questions in the warehouse: run `generate-qa` (and `verify-paths`) first")
        self.model = spec.endpoints[self.cfg.role].model if self.cfg.role in spec.endpoints else None
        self.done = stored_jobs(rt.wh, self.kinds)
        self.args = [list(self.domains)]
        if self.split is not None:
            self.where, self.args = self.where + " AND split = ?", [*self.args, self.split]
        if self.qa_ids is not None:
            self.where, self.args = self.where + " AND qa_id IN (SELECT unnest(?::VARCHAR[]))", [*self.args,
                                                                                                   list(self.qa_ids)]
        self.counts = {(r["domain"], r["snap"]): int(r["n"]) for r in rt.wh.query(
            f"SELECT domain, coalesce(snapshot_id, '') AS snap, count(*) AS n FROM qa WHERE {self.where} GROUP BY ALL",
            self.args)}  # fmt: skip

    def sizes(self) -> list[int]:
        per_question = sum(self.n_rollouts if k == "rollouts" else 1 for k in self.kinds)
        return [len(b) for n in self.counts.values() for b in chunks(range(n * per_question), self.batch_size or 1)]

    def total(self, domain: str) -> int:
        return self.totals[domain]

    def plan(self, rt: Runtime) -> Iterator[Unit[DistillJob]]:
        for domain in self.domains or []:
            if not any(d == domain for d, _ in self.counts):
                continue
            qas = load_qa(rt, f"domain = ? AND {self.where}", [domain, *self.args])
            jobs = jobs_for(qas, self.kinds, self.n_rollouts, self.done)
            if not jobs:
                continue
            already = len(self.done & _keys(qas, self.kinds, self.n_rollouts))
            print(f"{domain}: {len(qas)} questions, {len(jobs)} trajectories to make ({already} already stored)")
            gold = load_gold_paths(rt.wh, sorted({j.qa.qa_id for j in jobs}))
            self.totals[domain] = len(jobs)
            for snap, snap_jobs in by_snapshot(jobs, lambda j: j.qa.snapshot_id or ""):
                for b in chunks(snap_jobs, self.batch_size or 1):
                    yield Unit(domain, snap, list(b), {"gold": {j.qa.qa_id: gold.get(j.qa.qa_id, []) for j in b}})

    def alongside(self, rt: Runtime) -> IndexesAhead:
        return IndexesAhead(rt.wh, _needing_tools(rt.wh, self.where, self.args, self.kinds, self.n_rollouts,
                                                  self.domains or []), self.settings, self.index_dir)

    def parameters(self, rt: Runtime, spec: GatewaySpec, unit: Unit[DistillJob]) -> dict[str, Any]:
        return {"spec": spec, "kg": load_graph(rt.wh, unit.domain, unit.snapshot or None), "jobs": unit.items,
                "gold": unit.extra["gold"], "cfg": self.cfg, "run_id": rt.run_id, "model": self.model,
                "index_dir": self.index_dir}

    def write(self, rt: Runtime, unit: Unit[DistillJob], records: list[Trajectory], con: Any) -> list[Trajectory]:
        rt.wh.write("trajectories", records, replace=True, con=con)
        return records

    def summary(self, rt: Runtime, written: list[Trajectory]) -> dict[str, Any]:
        stored = {(r["kind"], r["status"]): int(r["n"]) for r in rt.wh.query(
            "SELECT kind, status, count(*) AS n FROM trajectories GROUP BY kind, status")}  # fmt: skip
        table = yield_table(written, stored)
        _artifact(table, f"trajectories, run {rt.run_id}")
        for line in table:
            print(" | ".join(f"{k}: {v}" for k, v in line.items()))
        return {"made": len(written), "accepted": sum(t.accepted for t in written), "by_kind": table}


def _needing_tools(wh: Warehouse, where: str, args: list[Any], kinds: Sequence[str], n_rollouts: int,
                   domains: Sequence[str]) -> list[tuple[str, str]]:
    """The ``(domain, snapshot)`` pairs, in the batch loop's order, with a question that still lacks a final template
    or rollout trajectory (``stored_jobs``' rule): those whose tool index a batch will open. A rerun with nothing
    left to make lists none, and reads no graph."""
    wanted = (1 if "template" in kinds else 0) + (n_rollouts if "rollouts" in kinds else 0)
    if not wanted:
        return []
    rows = wh.query(
        f"SELECT DISTINCT q.domain, coalesce(q.snapshot_id, '') AS snap FROM qa q WHERE {where} AND ("
        "SELECT count(DISTINCT (t.kind, t.sample)) FROM trajectories t WHERE t.qa_id = q.qa_id "
        "AND ((t.kind = 'template' AND ?) OR (t.kind = 'rollouts' AND t.sample < ?)) "
        "AND NOT (t.reject_reason = 'llm_error' AND t.end_reason IS NOT DISTINCT FROM 'error')) < ?",
        [*args, "template" in kinds, n_rollouts if "rollouts" in kinds else 0, wanted])
    order = {d: i for i, d in enumerate(domains)}
    return sorted(((r["domain"], r["snap"]) for r in rows), key=lambda k: (order.get(k[0], len(order)), k))


def _keys(qas: Sequence[QA], kinds: Sequence[str], n_rollouts: int) -> set[tuple[str, str, int]]:
    return {(q.qa_id, k, s) for q in qas for k in kinds for s in range(n_rollouts if k == "rollouts" else 1)}


__all__ = ["DistillStep", "distill_batch", "distill_trajectories", "load_gold_paths", "load_trajectories",
           "stored_jobs", "yield_table"]
