"""QA flows: `generate_qa` (seeds -> generate -> check -> judge -> dedup -> splits) and `verify_paths`.

Both are resumable: a re-run skips jobs (seed, hop class, mode) that already have a final verdict for the same
graph snapshot and questions that already have gold paths, and every LLM answer already given comes from the cache.
A domain whose jobs all have a verdict is settled from the warehouse (the seeds an earlier run sampled with the same
parameters, and the finished jobs by key) before its graph is loaded. Both run the batches of every domain through
one batch loop, several batches in flight (``_Runner.in_flight``), and write results in domain order.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from flows.batches import LATER, Ahead, BatchResult, chunks
from flows.checks import check_domains_in, seed_ball_bounds
from flows.params import GenerateQA, VerifyPaths
from flows.profiles import profile_unknown_labels
from gateway.loop import run_shared
from gateway.spec import GatewaySpec
from gateway.embeddings import EmbeddingError
from flows.runtime import Runtime, default_settings, flow_parameters, hopforge_flow
from flows.steps import Step, Unit, by_snapshot, run_step
from schemas.config import Settings
from schemas.errors import InputError
from schemas.qa import CHECK_CODES, QA, GenMode, GoldPath, QAAttempt, QAReject, Seed
from tasks.qa.seed_plan import Job, SeedPlan, job_key
from tasks.qa.seed_rule import SeedRule
from tasks.qa.dedup import dedup_questions
from tasks.qa.gold_verify import GoldResult, verify_question
from tasks.graph.kg import KnowledgeGraph
from tasks.qa.generate import (
    ENDPOINT_FAILURES, GenConfig, JobResult, Prepared, prepare_job, profile_book, run_job,
    scope_names, scope_problem,
)
from tasks.qa.meaning_check import CHECK_NAME, Calibration, calibrate, reader_answer
from tasks.qa.programs import graph_memos, merge_graph_memos, relation_index
from tasks.qa.refill import missing_jobs
from tasks.qa.mix import (counts_by_domain, hop_kind_dict, hop_kind_lines, hop_kind_markdown, mix_report, shapes_sql,
                          shortfalls)
from tasks.qa.text_gates import TextGateConfig, warm_language_detector
from tasks.qa.yields import funnel, yield_table
from tasks.qa.splits import describe_leaks, stable_splits
from warehouse.graphs import current_snapshot, current_snapshots, load_graph
from warehouse.profiles import read_profiled, read_user_profiles

def load_qa(rt: Runtime, where: str = "TRUE", params: list[Any] | None = None) -> list[QA]:
    return rt.wh.read("qa", QA, where, params, order_by="qa_id")


def finished_jobs(rt: Runtime, domain: str, snapshot_id: str, max_attempts: int) -> set[tuple[str, str, str]]:
    """Jobs that already reached a final verdict on this snapshot: accepted, or every attempt used on answers the
    model actually gave, or ended before any attempt (``qa_job_notes``: no candidate path). Attempts lost to an
    endpoint (``failure_kind`` one of ``ENDPOINT_FAILURES``, the generator's or the judge's) do not count, so a
    re-run after an outage tries those jobs again. A template-writer job that ran out of candidates before
    ``max_attempts`` is final too (every attempt by the template writer, none lost to an endpoint): the writer is
    deterministic, and a re-run would write the same questions again."""
    rows = rt.wh.query(
        "SELECT seed, hop_class, mode FROM qa_attempts WHERE domain = ? AND snapshot_id = ? "
        "GROUP BY seed, hop_class, mode HAVING bool_or(status = 'accepted') "
        "OR count(*) FILTER (WHERE coalesce(failure_kind, '') NOT IN (SELECT unnest(?::VARCHAR[]))) >= ? "
        "OR (bool_and(coalesce(writer, 'llm') = 'template') "
        "AND NOT bool_or(coalesce(failure_kind, '') IN (SELECT unnest(?::VARCHAR[]))))",
        [domain, snapshot_id, sorted(ENDPOINT_FAILURES), max_attempts, sorted(ENDPOINT_FAILURES)],
    )
    ended = rt.wh.query("SELECT seed, hop_class, mode FROM qa_job_notes WHERE domain = ? AND snapshot_id = ?",
                        [domain, snapshot_id])
    return {(r["seed"], r["hop_class"], r["mode"]) for r in [*rows, *ended]}


def unanswered_jobs(rt: Runtime, domain: str, snapshot_id: str) -> set[tuple[str, str, str]]:
    """Jobs ``(seed, hop class, mode)`` on this snapshot that ended without a question: attempts, none accepted and
    none lost to an endpoint (a re-run resumes those), or ended before any attempt (``qa_job_notes``)."""
    rows = rt.wh.query(
        "SELECT seed, hop_class, mode FROM qa_attempts WHERE domain = ? AND snapshot_id = ? GROUP BY ALL "
        "HAVING NOT bool_or(status = 'accepted') "
        "AND NOT bool_or(coalesce(failure_kind, '') IN (SELECT unnest(?::VARCHAR[])))",
        [domain, snapshot_id, sorted(ENDPOINT_FAILURES)])
    ended = rt.wh.query("SELECT seed, hop_class, mode FROM qa_job_notes WHERE domain = ? AND snapshot_id = ?",
                        [domain, snapshot_id])
    return {(r["seed"], r["hop_class"], r["mode"]) for r in [*rows, *ended]}


def earlier_seeds(rt: Runtime, domain: str, snapshot_id: str, plan: SeedPlan) -> list[Seed] | None:
    """The seeds an earlier ``generate-qa`` run sampled on this snapshot as ``plan`` would (``SeedPlan.same_sample``),
    in sample order, or None. The sample is a function of the snapshot (a content hash), the sampling seed,
    ``n_seeds`` and the ball bounds, so these are the seeds this run would sample: a rerun learns its jobs from the
    warehouse without loading the graph or scanning it for eligible seeds."""
    rows = rt.wh.query(
        "SELECT s.run_id, any_value(r.parameters) AS parameters, any_value(r.started_at) AS started_at "
        "FROM seeds s JOIN runs r USING (run_id) WHERE s.domain = ? AND s.snapshot_id = ? AND s.sampling_seed = ? "
        "AND r.flow = 'generate-qa' GROUP BY s.run_id ORDER BY started_at DESC, s.run_id",
        [domain, snapshot_id, plan.sampling_seed],
    )
    for row in rows:
        try:
            p = json.loads(row["parameters"] or "{}")
        except ValueError:
            continue
        if plan.same_sample(p):
            return rt.wh.read("seeds", Seed, "run_id = ? AND domain = ? AND snapshot_id = ?",
                              [row["run_id"], domain, snapshot_id], order_by="sample_rank")
    return None


def job_concurrency(spec: GatewaySpec) -> int:
    """Jobs in flight: enough to keep the generator's and verifier's endpoints busy, few enough that the code
    checks of one job never wait behind the prompt building of hundreds of others."""
    eps = [spec.endpoints[r] for r in ("generator", "verifier") if r in spec.endpoints]
    return 2 * max((ep.max_concurrency for ep in eps), default=1)


@task(name="generate-batch", retries=1, retry_delay_seconds=5, cache_policy=NO_CACHE)
def generate_batch(spec: GatewaySpec, kg: KnowledgeGraph, jobs: list[tuple[Seed, str, str]], cfg: GenConfig,
                   run_id: str, sampling_seed: int,
                   prepared: Sequence[concurrent.futures.Future] | None = None) -> BatchResult[JobResult]:
    """Run one batch of generation jobs concurrently; picklable in and out, so any task runner can run it.
    ``prepared`` (the thread pool only): one future a job, its preparation done ahead in another process
    (``GenerateStep``); a job waits for its own and starts at once, and one that comes back ``None`` (its process
    was lost) is prepared here."""
    gateway = spec.open()

    async def one(seed: Seed, hop: str, mode: str, ready: concurrent.futures.Future | None) -> JobResult:
        done: Prepared | None = await asyncio.wrap_future(ready) if ready is not None else None
        return await run_job(gateway, kg, seed, hop, mode, run_id=run_id, cfg=cfg,  # type: ignore[arg-type]
                             sampling_seed=sampling_seed, prepared=done)

    async def go() -> list[JobResult]:
        try:
            return await gateway.gather((one(*job, ready) for job, ready in zip(jobs, prepared or [None] * len(jobs))),
                                        limit=job_concurrency(spec))
        finally:
            await gateway.aclose()

    return BatchResult(run_shared(go()), gateway.ledger.snapshot())


def _dedup_domain(rt: Runtime, domain: str, threshold: float, paraphrase_threshold: float | None) -> Counter:
    """Dedup all of the domain's questions; earlier runs' questions win ties, and questions that already have a
    split (published by an earlier run) are never dropped. With ``paraphrase_threshold`` the configured embedder
    also catches paraphrases. Returns reject counts by key."""
    if not rt.wh.scalar("SELECT count(*) FROM qa WHERE domain = ? AND split IS NULL", [domain]):
        # Every question has a split, and dedup never drops one that has: nothing to do (a rerun's case).
        return Counter()
    qas = load_qa(rt, "domain = ?", [domain])

    def dedup(embedder: Any):
        return dedup_questions(qas, threshold=threshold, sort_key=lambda q: (q.run_id == rt.run_id, q.qa_id),
                               embedder=embedder, embed_threshold=paraphrase_threshold or 1.0,
                               fixed=lambda q: q.split is not None)  # fmt: skip

    if paraphrase_threshold is not None and qas:
        # No probe request first: the flow's thread waits for each embeddings round trip while finished batches
        # wait to be written, once per domain. Dedup writes nothing, so a failed pass is simply done again without.
        try:
            result = dedup(rt.embedder)
        except EmbeddingError as exc:
            print(f"dedup {domain}: paraphrase pass skipped, the embedder is unavailable: {exc}")
            result = dedup(None)
    else:
        result = dedup(None)
    rejects = result.qa_rejects(run_id=rt.run_id)
    counts: Counter = Counter()
    if rejects:
        by_id = {q.qa_id: q for q in qas}
        with rt.wh.transaction() as con:
            rt.wh.delete("qa", "qa_id", [r.qa_id for r in rejects], con=con)
            rt.wh.write("qa_rejects", rejects, con=con)
        modes = _modes_of(rt, [by_id[r.qa_id] for r in rejects])
        for r in rejects:
            q = by_id[r.qa_id]
            counts[(domain, q.hop_class, modes.get(q.attempt_id or "", ""), r.reason)] += 1
    return counts


def _modes_of(rt: Runtime, qas: list[QA]) -> dict[str, str]:
    """The generation mode of each question's attempt, by attempt id (one query for all of them)."""
    ids = sorted({q.attempt_id for q in qas if q.attempt_id})
    if not ids:
        return {}
    return {r["attempt_id"]: r["mode"] for r in rt.wh.query(
        "SELECT attempt_id, mode FROM qa_attempts WHERE attempt_id IN (SELECT unnest(?::VARCHAR[]))", [ids])}


def _assign_splits(rt: Runtime, seed: int, proportions: dict[str, float]) -> tuple[dict[str, Any], Counter]:
    """Splits for the questions that have none (``tasks.qa.splits.stable_splits``: earlier questions never move).
    A new question that would join two splits is moved from ``qa`` to ``qa_rejects`` (``split_conflict``) in the
    same transaction. Returns the report and the conflicts counted by (domain, hop class, mode, reason)."""
    qas = load_qa(rt)
    counts: Counter = Counter()
    if not qas:
        return {}, counts
    res = stable_splits(qas, seed=seed, proportions=proportions)
    by_id = {q.qa_id: q for q in qas}
    rejects = [
        QAReject(run_id=rt.run_id, domain=by_id[c.qa_id].domain, stage="splits", reason="split_conflict",
                 qa_id=c.qa_id, attempt_id=by_id[c.qa_id].attempt_id, question=by_id[c.qa_id].question,
                 answer=by_id[c.qa_id].answer, detail=c.detail)
        for c in res.conflicts
    ]  # fmt: skip
    with rt.wh.transaction() as con:
        if res.assignment:
            # One statement for the whole assignment: DuckDB runs an executemany UPDATE row by row (0.3 s for 655).
            con.execute(
                "UPDATE qa SET split = m.split FROM (SELECT unnest(?::VARCHAR[]) AS qa_id, unnest(?::VARCHAR[]) AS "
                "split) AS m WHERE qa.qa_id = m.qa_id", [list(res.assignment), list(res.assignment.values())])
        if rejects:
            rt.wh.delete("qa", "qa_id", [r.qa_id for r in rejects], con=con)
            rt.wh.write("qa_rejects", rejects, con=con)
    modes = _modes_of(rt, [by_id[r.qa_id] for r in rejects])  # type: ignore[index]
    for r in rejects:
        q = by_id[r.qa_id]  # type: ignore[index]
        counts[(q.domain, q.hop_class, modes.get(q.attempt_id or "", ""), r.reason)] += 1
    print(f"splits: {res.summary()}")
    if res.legacy_leaks:
        print(f"splits: questions split before conflicts were rejected already leak: {describe_leaks(res.legacy_leaks)}")
    return {"new": len(res.assignment), "conflicts": len(res.conflicts), "counts": res.counts,
            "achieved": {s: round(v, 4) for s, v in res.achieved.items()},
            "max_deviation": round(res.max_deviation, 4)}, counts


def _collisions(rt: Runtime, qas: list[QA]) -> tuple[list[QA], list[QAReject]]:
    """A ``qa_id`` is a content hash, so two attempts can make the same one: the second is a ``duplicate`` of
    the first (a row already in ``qa``, or an earlier one of the batch) instead of silently replacing it."""
    held = {r["qa_id"]: r["attempt_id"] for r in rt.wh.query(
        "SELECT qa_id, attempt_id FROM qa WHERE qa_id IN (SELECT unnest(?::VARCHAR[]))", [[q.qa_id for q in qas]])}  # fmt: skip
    kept: list[QA] = []
    rejects: list[QAReject] = []
    for q in qas:
        owner = held.setdefault(q.qa_id, q.attempt_id)
        if owner == q.attempt_id:  # the same attempt written again (a resumed batch) is not a collision
            kept.append(q)
            continue
        rejects.append(QAReject(run_id=rt.run_id, domain=q.domain, stage="dedup", reason="duplicate", qa_id=q.qa_id,
                                attempt_id=q.attempt_id, duplicate_of=q.qa_id, similarity=1.0, question=q.question,
                                answer=q.answer, detail=f"same qa_id as the question of attempt {owner}"))  # fmt: skip
    return kept, rejects


#: How many questions the meaning check rejected the run summary shows, with the reader's answer.
MEANING_EXAMPLES = 5


def run_mix(rt: Runtime, hop_mix: dict[str, float], jobs: Sequence[tuple[str, str, str]],
            attempts: Sequence[QAAttempt], kept: Counter, dropped: Counter, ended: Counter) -> dict[str, Any]:
    """The run's hops x kind table (its questions in the warehouse after dedup and splits) and, per domain, the
    mix it reached against ``hop_mix`` and why it fell short (``tasks.qa.mix``)."""
    by_domain = counts_by_domain(rt.wh.query(shapes_sql("run_id = ?"), [rt.run_id]))
    counts = sum(by_domain.values(), Counter())
    domains = mix_report(hop_mix, by_domain, jobs, kept, shortfalls(attempts, ended, dropped))
    lines = ["accepted questions, hops x kind:", *hop_kind_lines(counts, indent="  ")]
    lines += [f"mix {d['line']}" for d in domains.values()]
    return {"hop_kind": hop_kind_dict(counts), "markdown": hop_kind_markdown(counts), "domains": domains,
            "lines": lines}


def meaning_summary(setting: str, calibration: Calibration | None, attempts: Sequence[QAAttempt],
                    n: int = MEANING_EXAMPLES) -> dict[str, Any]:
    """The meaning check's part of the run summary: the setting asked, the calibration and its line, and the
    first ``n`` questions it rejected with what the reader answered."""
    code = CHECK_CODES[CHECK_NAME]
    rejected = [a for a in attempts if a.reject_reason == code]
    examples = [
        {"domain": a.domain, "seed": a.seed, "hop_class": a.hop_class, "question": a.question, "answer": a.answer,
         "reader_answer": next((reader_answer(v) for v in a.verdicts if v.check == CHECK_NAME), None)}
        for a in rejected[:n]
    ]  # fmt: skip
    on = setting == "on" and (calibration is None or calibration.passed)
    lines = [calibration.line if calibration is not None else f"meaning check {setting} (asked for this run)"]
    if rejected:
        lines.append(f"{code}: {len(rejected)} attempts rejected; the first {len(examples)}, with the reader's answer:")
        lines += [f"  {e['domain']}: {e['question']!r} intended {e['answer']!r}, the reader answered "
                  f"{e['reader_answer']!r}" for e in examples]  # fmt: skip
    return {"asked": setting, "on": on, "calibration": calibration.as_dict() if calibration is not None else None,
            "rejected": len(rejected), "examples": examples, "lines": lines}


def summary_markdown(mix: dict[str, Any], meaning: dict[str, Any]) -> str:
    """The run's hops x kind table, mix lines and meaning-check lines as one markdown artifact."""
    parts = ["## Accepted questions, hops x kind", "", mix["markdown"], "", "## Mix per domain", ""]
    parts += [f"- {d['line']}" for d in mix["domains"].values()] or ["- no domain ran jobs"]
    parts += ["", "## Meaning check", "", *[f"    {line}" for line in meaning["lines"]]]
    return "\n".join(parts)


@dataclass
class Generation:
    """``generate-qa``'s parameters with every default resolved (what the run row records), and the jobs'
    configuration (``resolve_generation``)."""

    min_ball: int
    max_ball: int
    hop_mix: dict[str, float]
    modes: list[GenMode]
    writer: Literal["llm", "template"]
    meaning_check: Literal["on", "off"]
    split_proportions: dict[str, float]
    cfg: GenConfig
    seeds: SeedPlan


def resolve_generation(settings: Settings, *, domains: list[str] | None, n_seeds: int,
                       hop_mix: dict[str, float] | None, modes: list[GenMode] | None, max_attempts: int,
                       use_judge: bool, min_ball: int | None, max_ball: int | None, batch_size: int,
                       dedup_threshold: float, split_proportions: dict[str, float] | None,
                       constrain_question: bool | None, candidates: int, writer: str | None,
                       meaning_check: str | None) -> Generation:
    """Every ``generate-qa`` parameter's default resolved from ``settings`` (the parameters themselves checked by
    ``GenerateQA`` already; ``InputError`` before anything is sampled or written); a scope every question would be
    refused for stops the run here. ``n_seeds`` goes down in the run's ``SeedPlan`` (``tasks.qa.seed_plan``), which
    carries it from here on."""
    min_ball, max_ball = seed_ball_bounds(min_ball, max_ball, settings.seeds)
    q = settings.quality
    if writer is None:
        writer = q.writer_for(q.question_writer, settings.endpoint("generator").is_local)
    if writer not in ("llm", "template"):
        raise InputError(f"unknown question writer {writer!r}; choose llm or template")
    meaning_check = meaning_check or q.meaning_check
    if meaning_check not in ("auto", "on", "off"):
        raise InputError(f"unknown meaning_check {meaning_check!r}; choose auto, on or off")
    if meaning_check == "auto":  # resolved here, so the run records what it did
        meaning_check = "off" if settings.endpoint("verifier").is_local else "on"
    for domain, phrase in q.scopes.items():
        why = scope_problem(phrase)
        if why is not None:
            raise InputError(f"[quality] scopes.{domain}: {why}")
    gates = TextGateConfig(language=q.language, min_words=q.min_words, max_words=q.max_words,
                           copy_threshold=q.copy_threshold)
    cfg = GenConfig(max_attempts=max_attempts, use_judge=use_judge, constrain_question=bool(constrain_question),
                    candidates=candidates, text_gates=gates, writer=writer, template_fallback=q.template_fallback,
                    paraphrase=q.paraphrase, meaning_check=meaning_check, scopes=q.scopes, sampled=frozenset(q.sampled))
    hop_mix, modes = hop_mix or {"1-2": 0.5, "3+": 0.5}, modes or ["candidates"]
    seeds = SeedPlan(n_seeds=n_seeds, min_ball=min_ball, max_ball=max_ball, hop_mix=hop_mix, modes=tuple(modes),
                     sampling_seed=settings.seed, refill_factor=settings.seeds.refill)
    return Generation(min_ball, max_ball, hop_mix, modes, writer, meaning_check,  # type: ignore[arg-type]
                      split_proportions or {"train": 0.8, "validation": 0.1, "test": 0.1}, cfg, seeds)


@hopforge_flow(name="generate-qa", log_prints=True)
def generate_qa(
    domains: list[str] | None = None,
    n_seeds: int = 20,
    hop_mix: dict[str, float] | None = None,
    modes: list[GenMode] | None = None,
    max_attempts: int = 3,
    use_judge: bool = True,
    min_ball: int | None = None,
    max_ball: int | None = None,
    batch_size: int = 64,
    dedup_threshold: float = 0.8,
    paraphrase_threshold: float | None = 0.92,
    split_proportions: dict[str, float] | None = None,
    constrain_question: bool | None = None,
    candidates: int = 8,
    writer: Literal["llm", "template"] | None = None,
    meaning_check: Literal["auto", "on", "off"] | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Sample seeds per domain and generate verified multi-hop questions in each mode; report the funnel
    (``GenerateStep``).

    ``writer`` (``llm`` | ``template``; default ``settings.quality.question_writer``, whose ``auto`` picks the
    template writer for the embedded demo-quality generator) says who writes the questions; the text gates
    (``settings.quality``) check every question, whoever wrote it. ``constrain_question`` (default off) adds a
    schema pattern that makes an LLM question name its start entity and end in "?" (the grammar built from it steers
    the 135M model into regex-like text, so it is off unless asked for). ``meaning_check`` (``auto`` | ``on`` |
    ``off``; default ``settings.quality.meaning_check``; ``auto``: on unless the verifier is the embedded model):
    the verifier answers each question from its path's facts and distractors alone (``tasks.qa.meaning_check``)
    after control fact sheets with known answers (below 3 of 4 right the check is off for the run, said in one
    line). The result's ``hop_kind`` counts the run's questions by hops (1, 2, 3+) and kind, and ``mix`` says per
    domain what mix it reached against ``hop_mix`` and why each hop class fell short (``tasks.qa.mix``). Seeds are
    nodes whose depth-3 ball holds ``min_ball`` to ``max_ball`` nodes (default: ``settings.seeds``, 20 to 400); a
    domain with no eligible seed says which bound left every node out (``seed_notes``).
    """
    GenerateQA.check_call(locals())
    settings = settings or default_settings()
    g = resolve_generation(settings, domains=domains, n_seeds=n_seeds, hop_mix=hop_mix, modes=modes,
                           max_attempts=max_attempts, use_judge=use_judge, min_ball=min_ball, max_ball=max_ball,
                           batch_size=batch_size, dedup_threshold=dedup_threshold,
                           split_proportions=split_proportions, constrain_question=constrain_question,
                           candidates=candidates, writer=writer, meaning_check=meaning_check)
    min_ball, max_ball, hop_mix, modes, writer, meaning_check, split_proportions = (  # recorded as resolved
        g.min_ball, g.max_ball, g.hop_mix, g.modes, g.writer, g.meaning_check, g.split_proportions)
    warm_language_detector()  # loaded while the flow plans its first domain, not when the first answer is checked
    step = GenerateStep(g, domains=domains, batch_size=batch_size, dedup_threshold=dedup_threshold,
                        paraphrase_threshold=paraphrase_threshold, settings=settings)
    return run_step(step, flow_parameters(generate_qa, locals()), settings)


#: Fewer jobs than this (a domain's refill, most often) are prepared in their batch: a forked process costs about
#: as much CPU as preparing 8 jobs (its copies of the pages it touches), whatever it then does. (Measured again with
#: every refill prepared ahead in the whole-wait benchmark: 1.4 s less CPU in the flow's process, 2.5 s more in the
#: children, on two cores that were busy already.)
AHEAD_MIN_JOBS = 16
#: Domains planned ahead of the batch loop's asking (``GenerateStep.ahead``): one a child process preparing jobs.
PLAN_AHEAD = 2


class GenerateStep(Step[Job, JobResult]):
    """Questions for sampled seeds, every domain through one batch loop: a domain is planned (graph, seed scan,
    sample) while the loop waits for a batch, up to ``PLAN_AHEAD`` domains before it asks for them (``ahead``), or
    when it asks, so the endpoint works on one domain's jobs while the next ones are planned and prepared and while
    another domain's last jobs finish. On the thread pool each job's preparation (its rendered subgraph and
    candidates, ``prepare_job``: the bulk of a job's CPU) runs in a forked process (``flows.batches.Ahead``) from the
    moment its domain is planned, so the flow's process keeps its GIL for the calls in flight. A domain whose jobs all
    have a final verdict is settled from the warehouse (finished jobs by key, the seeds sampled before) without
    loading its graph. Results are written, and domains deduplicated, in domain order whatever order the batches
    finish in. Further seeds (``tasks.qa.refill``) go to the hop classes whose jobs gave fewer questions than jobs:
    a domain's refill is planned as soon as its first jobs have landed, among the other domains' batches
    (``_ready_refills``). Deduplication (``_dedup_domain``) and the splits (``_assign_splits``) rewrite ``qa`` and
    ``qa_rejects`` too."""

    flow, progress, doing = "generate-qa", "qa", "generating {domain} questions"
    reads = ("graph_snapshots", "qa", "qa_attempts", "qa_job_notes", "seeds", "relation_profiles")
    writes = {"seeds": Seed, "qa_attempts": QAAttempt, "qa": QA, "qa_rejects": QAReject, "qa_job_notes": dict,
              "qa_yields": dict, "relation_profiles": dict}  # the profiler role's answers (``prepare``)
    task = generate_batch

    def __init__(self, g: Generation, *, domains: list[str] | None, batch_size: int, dedup_threshold: float,
                 paraphrase_threshold: float | None, settings: Settings) -> None:
        self.g, self.cfg, self.domains, self.seeds = g, g.cfg, domains, g.seeds
        self.batch_size, self.settings = batch_size, settings
        self.dedup = (dedup_threshold, paraphrase_threshold)
        self.roles = ("generator", *(["verifier"] if g.cfg.use_judge or g.meaning_check == "on" else []))
        self.calibration: Calibration | None = None
        self.all_attempts: list[QAAttempt] = []
        self.started_jobs: list[tuple[str, str, str]] = []
        self.dedup_counts: Counter = Counter()
        self.ended_counts: Counter = Counter()  # jobs that ended before any attempt, by (domain, hop, mode, reason)
        self.notes: list[str] = []
        self.seed_notes: list[str] = []  # domains that gave no seed, and why
        self.no_graph: list[str] = []  # domains asked for that have no graph in the warehouse
        self.no_seed: list[str] = []  # domains whose graph gave no seed (why: in seed_notes)
        self.planned_domains: list[str] = []  # in plan order; a domain's batches all come before the next domain's
        self.totals: dict[str, int] = {}
        # Per domain planned in this run (not settled): what the refill round needs (``tasks.qa.refill``).
        self.refill_from: dict[str, tuple[str, list[tuple[str, int]], list[Seed], list[Job]]] = {}
        self.refills: dict[str, dict[str, Any]] = {}
        self.deduped = 0
        # Where each domain's units stand, for its refill (``_ready_refills``) and its second dedup (``before``).
        self.open: Counter = Counter()  # first-job units planned and not landed, by domain
        self.refill_open: Counter = Counter()  # refill units planned and not landed, by domain
        self.refill_planned: set[str] = set()
        self.again: set[str] = set()  # deduplicated before their refill landed: deduplicated again after it
        self.last_planned = -1  # plan index of the domain whose first-job unit was planned last
        self.all_planned = False  # every domain's first-job units are planned
        self.children: Ahead | None = None  # the forked processes preparing jobs ahead (``_preparing_ahead``)
        # Domains planned ahead of the batch loop's asking (``ahead``), with their units, in plan order.
        self.planned_ahead: deque[tuple[str, list[Unit[Job]]]] = deque()
        self.next_domain = 0  # index in ``domains`` of the next domain to plan

    def prepare(self, rt: Runtime, spec: GatewaySpec) -> None:
        check_domains_in(rt.wh, self.domains)
        self.domains = self.domains or [s.domain for s in current_snapshots(rt.wh)]
        if not self.domains:
            raise InputError("no graphs in the warehouse: build or import graphs first (`hopforge graph build|import`)")
        cfg = self.cfg
        if self.g.meaning_check == "on":
            # Control fact sheets with known answers first: a verifier that cannot read them would reject good
            # questions as not_answerable_from_facts, so below the bar the check is off for this run, said in one line.
            self.calibration = run_shared(calibrate(rt.gateway, max_facts=cfg.meaning_max_facts,
                                                    params=cfg.meaning_params))
            print(self.calibration.line)
            if not self.calibration.passed:
                cfg = cfg.model_copy(update={"meaning_check": "off"})
        # The user's relation profiles (`hopforge graph profiles import`) travel with the jobs' configuration; the
        # profiler role is asked, once per label, about what the user, the lexicon and the graph statistics leave
        # unknown, and its accepted answers travel too.
        cfg = cfg.model_copy(update={"profiles": read_user_profiles(rt.wh)})
        profile_unknown_labels(rt, self.domains, cfg.profiles)
        self.cfg = cfg.model_copy(update={"profiled": read_profiled(rt.wh)})
        self.domains = list(dict.fromkeys(self.domains))  # a domain named twice is planned once

    def sizes(self) -> list[int]:
        # batches never span two domains: a domain's jobs are cut alone (75 into 64 and 11, 38 on average)
        return self.seeds.batch_sizes(self.batch_size)

    def total(self, domain: str) -> int:
        return self.totals[domain]

    def parameters(self, rt: Runtime, spec: GatewaySpec, unit: Unit[Job]) -> dict[str, Any]:
        return {"spec": spec, "kg": unit.extra["kg"], "jobs": list(unit.items), "cfg": self.cfg,
                "run_id": rt.run_id, "sampling_seed": self.settings.seed, "prepared": unit.extra.get("prepared")}

    def alongside(self, rt: Runtime) -> Any:
        return self._preparing_ahead()

    @contextmanager
    def _preparing_ahead(self) -> Iterator[None]:
        """Forked processes that prepare the jobs ahead (one a CPU), on the thread pool where ``os.fork`` exists; on
        Ray a batch prepares its own jobs in its worker process."""
        if self.settings.runner.kind != "threads" or not Ahead.available():
            yield
            return
        self.children = Ahead(workers=os.cpu_count() or 1)
        try:
            yield
        finally:
            self.children.close()
            self.children = None

    def _units(self, domain: str, snapshot_id: str, kg: KnowledgeGraph, jobs: list[Job],
               refill: bool = False) -> list[Unit[Job]]:
        """``jobs`` in units of ``batch_size``, each job's preparation started ahead (``Ahead``) when it can be."""
        ready = self._prepare_ahead(kg, jobs)
        return [Unit(domain, snapshot_id, [jobs[i] for i in b],
                     {"kg": kg, "prepared": [ready[i] for i in b] if ready else None, "refill": refill})
                for b in chunks(range(len(jobs)), self.batch_size)]

    def _prepare_ahead(self, kg: KnowledgeGraph, jobs: list[Job]) -> list[concurrent.futures.Future] | None:
        if self.children is None or len(jobs) < AHEAD_MIN_JOBS:
            return None
        cfg, sampling_seed = self.cfg, self.settings.seed
        relation_index(kg)  # built once here (the checks read it too), not again in every child

        def prepare(job: Job | None) -> Any:
            if job is None:  # after the jobs: what the child worked out about the graph (``graph_memos``)
                return graph_memos(kg)
            seed, hop, mode = job
            return prepare_job(kg, seed, hop, mode, cfg, sampling_seed)  # type: ignore[arg-type]

        *ready, memos = self.children.submit(prepare, [*jobs, None])
        # The tables the child filled (kinds, twins, shares, column values, ...) join this process's, so checking the
        # answers and preparing the refill here do not work them out again (a lost child's None adds nothing).
        memos.add_done_callback(lambda f: f.result() is not None and merge_graph_memos(kg, f.result()))
        return ready

    def _rule(self, kg: KnowledgeGraph, domain: str) -> SeedRule:
        return SeedRule(kg, profile_book(kg, self.cfg), programs=self.g.writer == "template",
                        scoped=bool(self.cfg.scopes.get(domain)), whole=domain not in self.cfg.sampled)

    def plan(self, rt: Runtime) -> Iterator[Unit[Job]]:
        while self.planned_ahead or self.next_domain < len(self.domains or []):
            if not self.planned_ahead:  # not planned ahead yet: planned now
                self._plan_next(rt)
            domain, units = self.planned_ahead.popleft()
            for unit in units:
                yield from self._ready_refills(rt)
                self.open[domain] += 1
                self.last_planned = self.planned_domains.index(domain)
                yield unit
        self.all_planned = True
        while self.refill_from.keys() - self.refill_planned:  # the last ones: each once its first jobs have landed
            planned = len(self.refill_planned)
            units = list(self._ready_refills(rt))
            yield from units
            if len(self.refill_planned) == planned:
                yield LATER  # none ready: the next landing may make one so

    def ahead(self, rt: Runtime) -> bool:
        """Plan the next domain (graph, seed scan, sample, its jobs' preparation started in a forked process) while
        the batches in flight run, up to ``PLAN_AHEAD`` domains before the batch loop asks for them: when a batch
        finishes, the next domain's jobs are prepared already instead of being planned then, while the endpoint
        waits (every batch of a window ends at about the same time, and the loop asked for the next domains all at
        once). What is planned is the same, in the same order; its units wait in ``planned_ahead``."""
        if len(self.planned_ahead) >= PLAN_AHEAD or self.next_domain >= len(self.domains or []):
            return False
        self._plan_next(rt)
        return True

    def _plan_next(self, rt: Runtime) -> None:
        domain = (self.domains or [])[self.next_domain]
        self.next_domain += 1
        self.planned_ahead.append((domain, self._plan_domain(rt, domain)))

    def _plan_domain(self, rt: Runtime, domain: str) -> list[Unit[Job]]:
        """A domain's graph, seed scan and sample, and its units of first jobs (none where it is settled)."""
        plan = self.seeds
        snap = current_snapshot(rt.wh, domain)
        if snap is None:
            self.notes.append(f"{domain}: no graph")
            self.no_graph.append(domain)
            return []
        snapshot_id = snap.snapshot_id
        self.planned_domains.append(domain)
        done = finished_jobs(rt, domain, snapshot_id, self.cfg.max_attempts)
        earlier = earlier_seeds(rt, domain, snapshot_id, plan)
        # A domain is settled when every planned job and every refill seed's jobs have a final verdict.
        if earlier is not None and plan.settled(earlier, done):
            rt.wh.write_batch("seeds", [s.model_copy(update={"run_id": rt.run_id}) for s in earlier],
                              replace=True)  # fmt: skip
            print(f"{domain}: graph {snapshot_id}, the {len(earlier)} seeds sampled before; "
                  "every job already has a final verdict")
            return []
        kg = load_graph(rt.wh, domain, snapshot_id)
        rule = self._rule(kg, domain)
        eligible = plan.eligible(kg, keep_large=rule.programs)
        seeds = plan.sample(eligible, rule, domain=domain, snapshot_id=snapshot_id, run_id=rt.run_id)
        rt.wh.write_batch("seeds", seeds, replace=True)
        print(f"{domain}: graph {snapshot_id}, {len(eligible)} eligible seeds, {len(seeds)} sampled")
        self._note_seeds(kg, domain, eligible, seeds, rule)
        planned = plan.jobs(seeds)
        self.refill_from[domain] = (snapshot_id, eligible, seeds, planned)
        jobs = [j for j in planned if job_key(j) not in done]
        if len(jobs) < len(planned):
            print(f"{domain}: {len(planned) - len(jobs)} jobs already have a final verdict; {len(jobs)} to run")
        self.totals[domain] = len(jobs)
        return self._units(domain, snapshot_id, kg, jobs)

    def _note_seeds(self, kg: KnowledgeGraph, domain: str, eligible: list[tuple[str, int]], seeds: list[Seed],
                    rule: SeedRule) -> None:
        """Say why a domain gave fewer seeds than asked, or none (``SeedPlan.shortfall``), and what its scope
        names."""
        named = scope_names(kg, self.cfg.scopes[domain]) if self.cfg.scopes.get(domain) else []
        if named:  # every question that opens with the scope names them: none may ask for one
            self.seed_notes.append(f"the scope of domain {domain} names {len(named)} of its nodes ("
                                   + ", ".join(repr(n) for n in named[:5])
                                   + "): a question that opens with it and asks for one of them is refused as a "
                                     "leak; a scope that says what the data covers without naming its answers keeps "
                                     "them askable")
            print(f"{domain}: {self.seed_notes[-1]}")
        why = self.seeds.shortfall(kg, domain, eligible, seeds, rule)
        if why:
            print(f"{domain}: {why}")
            self.seed_notes.append(why)
        if not seeds:
            self.no_seed.append(domain)

    def _ready_refills(self, rt: Runtime) -> Iterator[Unit[Job]]:
        """The refill units of every domain whose first jobs have all landed, in plan order; a domain's only once a
        later domain's first unit is planned (it lands first, so the domain is deduplicated before its refill lands,
        as when the refill was a round of its own after every domain's first jobs) or every domain's are."""
        for i, domain in enumerate(self.planned_domains):
            if not self.all_planned and i >= self.last_planned:
                return
            if domain in self.refill_from and domain not in self.refill_planned and not self.open[domain]:
                self.refill_planned.add(domain)
                yield from self._refill_units(rt, domain)

    def _refill_units(self, rt: Runtime, domain: str) -> list[Unit[Job]]:
        """A domain's refill (``tasks.qa.refill``), planned once its first jobs have landed: the jobs on further
        seeds for the hop classes whose planned jobs gave fewer questions than jobs."""
        plan = self.seeds
        snapshot_id, eligible, seeds, planned = self.refill_from[domain]
        done = finished_jobs(rt, domain, snapshot_id, self.cfg.max_attempts)
        missing = missing_jobs([job_key(j) for j in planned], unanswered_jobs(rt, domain, snapshot_id))
        if not missing or not plan.refills:
            return []
        kg = load_graph(rt.wh, domain, snapshot_id)
        extra = plan.refill(eligible, self._rule(kg, domain), missing, domain=domain, snapshot_id=snapshot_id,
                            run_id=rt.run_id, used=[s.node for s in seeds])
        by_class = Counter(h for _, h in extra)
        self.refills[domain] = {"missing": dict(sorted(missing.items())), "seeds": dict(sorted(by_class.items()))}
        said = ", ".join(f"{h} {missing.get(h, 0)} missing, {by_class.get(h, 0)} more seeds"
                         for h in sorted(set(missing) | set(by_class)))
        print(f"{domain}: filling the mix: {said}")
        if not extra:
            return []
        rt.wh.write_batch("seeds", [s for s, _ in extra], replace=True)
        jobs = plan.refill_jobs(extra, done)
        self.totals[domain] = self.totals.get(domain, 0) + len(jobs)
        units = self._units(domain, snapshot_id, kg, jobs, refill=True)  # type: ignore[arg-type]
        self.refill_open[domain] += len(units)
        return units

    def _dedup_until(self, rt: Runtime, domain: str | None) -> None:
        """Deduplicate, in plan order, every planned domain before ``domain`` (all of them for None)."""
        stop = self.planned_domains.index(domain) if domain is not None else len(self.planned_domains)
        for d in self.planned_domains[self.deduped:stop]:
            self.dedup_counts += _dedup_domain(rt, d, *self.dedup)
        self.deduped = max(self.deduped, stop)

    def _dedup_refilled(self, rt: Runtime) -> None:
        """Deduplicate again, in plan order, each domain deduplicated before its refill landed, once all of it has."""
        for d in [d for d in self.planned_domains if d in self.again and not self.refill_open[d]]:
            self.again.discard(d)
            self.dedup_counts += _dedup_domain(rt, d, *self.dedup)

    def before(self, rt: Runtime, unit: Unit[Job]) -> None:
        if not unit.extra.get("refill"):
            self._dedup_until(rt, unit.domain)
        self._dedup_refilled(rt)

    def write(self, rt: Runtime, unit: Unit[Job], records: list[JobResult], con: Any) -> list[JobResult]:
        domain = unit.domain
        attempts = [a for r in records for a in r.attempts]
        qas, collided = _collisions(rt, [r.qa for r in records if r.qa is not None])
        ended = [{"domain": domain, "snapshot_id": r.seed.snapshot_id, "seed": r.seed.node,
                  "hop_class": r.hop_class, "mode": r.mode, "note": r.note, "run_id": rt.run_id}
                 for r in records if not r.attempts and r.note and r.seed.snapshot_id]  # fmt: skip
        rt.wh.write_batch("qa_attempts", attempts, con=con)
        rt.wh.write_batch("qa", qas, replace=True, con=con)
        rt.wh.write_batch("qa_rejects", collided, con=con)
        rt.wh.write_batch("qa_job_notes", ended, replace=True, con=con)
        job_of = {r.qa.attempt_id: (r.hop_class, r.mode) for r in records if r.qa is not None}
        for c in collided:
            self.dedup_counts[(c.domain, *job_of[c.attempt_id], c.reason)] += 1
        self.all_attempts += attempts
        self.started_jobs += [(domain, h, m) for _, h, m in unit.items]
        self.notes += [f"{domain}/{r.seed.node}/{r.hop_class}/{r.mode}: {r.note}" for r in records if r.note]
        self.ended_counts.update((domain, r.hop_class, r.mode, r.note_reason)
                                 for r in records if not r.attempts and r.note_reason)  # fmt: skip
        if unit.extra.get("refill"):
            self.refill_open[domain] -= 1
            if self.planned_domains.index(domain) < self.deduped:
                self.again.add(domain)
        else:
            self.open[domain] -= 1
        return records

    def summary(self, rt: Runtime, written: list[JobResult]) -> dict[str, Any]:
        self._dedup_until(rt, None)
        self._dedup_refilled(rt)
        splits, conflict_counts = _assign_splits(rt, self.settings.seed, self.g.split_proportions)
        self.dedup_counts += conflict_counts
        kept: Counter = Counter()
        for row in rt.wh.query(
            "SELECT q.domain, q.hop_class, a.mode FROM qa q JOIN qa_attempts a USING (attempt_id) WHERE q.run_id = ?",
            [rt.run_id],
        ):
            kept[(row["domain"], row["hop_class"], row["mode"])] += 1
        counts = (self.started_jobs, self.all_attempts, kept, self.dedup_counts, self.ended_counts)
        yields = funnel(rt.run_id, *counts)
        rt.wh.write_batch("qa_yields", yields)
        table = yield_table(yields, rt.gateway.ledger.totals())
        if table:
            create_table_artifact(key="qa-yields", table=table, description=f"QA funnel, run {rt.run_id}")
        for line in table:
            print(" | ".join(f"{k}: {v}" for k, v in line.items()))
        for n in self.notes[:10]:
            print("note:", n)
        for n in self.seed_notes:
            print("seeds:", n)
        by_writer = dict(sorted(Counter(r["writer"] for r in rt.wh.query(
            "SELECT writer FROM qa WHERE run_id = ?", [rt.run_id])).items()))  # fmt: skip
        print(f"accepted questions by writer: {by_writer}")
        mix = run_mix(rt, self.g.hop_mix, *counts)
        meaning = meaning_summary(self.g.meaning_check, self.calibration, self.all_attempts)
        for line in mix["lines"]:
            print(line)
        for line in meaning["lines"]:
            print(line)
        create_markdown_artifact(key="qa-mix", markdown=summary_markdown(mix, meaning),
                                 description=f"hops x kind and the meaning check, run {rt.run_id}")
        return {"accepted": sum(kept.values()), "yields": table, "splits": splits, "attempts": len(self.all_attempts),
                "writer": self.g.writer, "by_writer": by_writer, "seed_notes": self.seed_notes,
                "no_graph": self.no_graph, "no_seed": self.no_seed, "hop_kind": mix["hop_kind"], "mix": mix["domains"],
                "mix_lines": mix["lines"], "refill": self.refills, "meaning_check": meaning}


@task(name="verify-batch", retries=1, retry_delay_seconds=5, cache_policy=NO_CACHE)
def verify_batch(spec: GatewaySpec, kg: KnowledgeGraph, qas: list[QA], run_id: str, max_paths: int,
                 time_budget_s: float, paths_per_call: int) -> BatchResult[GoldResult]:
    """Search and verify the gold paths of one batch of questions (all of one graph snapshot)."""
    gateway = spec.open()

    async def go() -> list[GoldResult]:
        try:
            return await gateway.gather(
                verify_question(gateway, kg, q, run_id=run_id, max_paths=max_paths, time_budget_s=time_budget_s,
                                paths_per_call=paths_per_call)
                for q in qas
            )
        finally:
            await gateway.aclose()

    return BatchResult(run_shared(go()), gateway.ledger.snapshot())


class GoldPathsStep(Step[QA, GoldResult]):
    """Gold paths for the accepted questions that have none yet (or lost a call to the endpoint last time): search
    start->answer paths, bounded, and have the verifier judge them (``tasks.qa.gold_verify``)."""

    flow, progress, doing = "verify-paths", "gold", "verifying {domain} gold paths"
    roles = ("verifier",)
    reads = ("qa", "gold_path_summary", "graph_snapshots")
    writes = {"gold_paths": GoldPath, "gold_path_summary": dict}
    task = verify_batch
    #: Questions whose verification lost a call to the endpoint are verified again.
    TODO = "qa_id NOT IN (SELECT qa_id FROM gold_path_summary WHERE llm_failures = 0)"

    def __init__(self, domains: list[str] | None, max_paths: int, time_budget_s: float, paths_per_call: int,
                 batch_size: int | None) -> None:
        self.domains, self.batch_size = domains, batch_size
        self.search = {"max_paths": max_paths, "time_budget_s": time_budget_s, "paths_per_call": paths_per_call}
        self.counts: dict[tuple[str, str], int] = {}

    def prepare(self, rt: Runtime, spec: GatewaySpec) -> None:
        check_domains_in(rt.wh, self.domains)
        self.domains = self.domains or [r["domain"] for r in rt.wh.query(
            "SELECT DISTINCT domain FROM qa ORDER BY domain")]  # fmt: skip
        if self.batch_size is None or self.batch_size < 1:
            raise InputError(f"batch_size must be >= 1, got {self.batch_size}")
        # How many questions each (domain, snapshot) has to verify, in one query: the window and the progress bars
        # are sized from it, and each domain's questions are read when the batch loop reaches the domain.
        self.counts = {(r["domain"], r["snap"]): int(r["n"]) for r in rt.wh.query(
            f"SELECT domain, coalesce(snapshot_id, '') AS snap, count(*) AS n FROM qa WHERE {self.TODO} "
            "AND domain IN (SELECT unnest(?::VARCHAR[])) GROUP BY ALL", [list(self.domains)])}  # fmt: skip

    def sizes(self) -> list[int]:
        return [len(b) for n in self.counts.values() for b in chunks(range(n), self.batch_size or 1)]

    def total(self, domain: str) -> int:
        return sum(n for (d, _), n in self.counts.items() if d == domain)

    def plan(self, rt: Runtime) -> Iterator[Unit[QA]]:
        # The batches of every domain go through one batch loop (the endpoint works on the next domain while one
        # domain's last questions finish); a batch holds questions of one snapshot, in a stable order.
        for domain in self.domains or []:
            if not any(d == domain for d, _ in self.counts):
                continue
            qas = load_qa(rt, f"domain = ? AND {self.TODO}", [domain])
            for snap, group in by_snapshot(qas, lambda q: q.snapshot_id or ""):
                for b in chunks(group, self.batch_size or 1):
                    yield Unit(domain, snap, list(b))

    def parameters(self, rt: Runtime, spec: GatewaySpec, unit: Unit[QA]) -> dict[str, Any]:
        return {"spec": spec, "kg": load_graph(rt.wh, unit.domain, unit.snapshot or None), "qas": unit.items,
                "run_id": rt.run_id, **self.search}

    def write(self, rt: Runtime, unit: Unit[QA], records: list[GoldResult], con: Any) -> list[dict[str, Any]]:
        rows = [{"qa_id": r.qa_id, "run_id": rt.run_id, "domain": unit.domain, "n_candidates": len(r.paths),
                 "n_valid": r.verified, "generator_confirmed": r.generator_confirmed,
                 "search_stopped": r.search.stopped, "shortest_hops": r.search.shortest_hops,
                 "question_hops": r.search.question_hops, "llm_failures": r.llm_failures} for r in records]
        rt.wh.write_batch("gold_paths", [p for r in records for p in r.paths], replace=True, con=con)
        rt.wh.write_batch("gold_path_summary", rows, replace=True, con=con)
        return rows

    def summary(self, rt: Runtime, written: list[dict[str, Any]]) -> dict[str, Any]:
        n = len(written)
        stats = {
            "questions": n,
            "mean_candidates": round(sum(s["n_candidates"] for s in written) / n, 2) if n else 0,
            "mean_verified": round(sum(s["n_valid"] for s in written) / n, 2) if n else 0,
            "with_verified_alternative": sum(s["n_valid"] >= 2 for s in written),
            "generator_confirmed": sum(bool(s["generator_confirmed"]) for s in written),
            "search_cut": sum(s["search_stopped"] is not None for s in written),
            # questions whose verification lost a call to the endpoint: verified again on the next run
            "lost_calls": sum(s["llm_failures"] > 0 for s in written),
        }
        if written:
            create_table_artifact(key="gold-paths", table=written[:500],
                                  description=f"gold paths, run {rt.run_id}: {stats}")
        print(f"gold paths: {stats}")
        return stats


@hopforge_flow(name="verify-paths", log_prints=True)
def verify_paths(
    domains: list[str] | None = None,
    max_paths: int = 20,
    time_budget_s: float = 2.0,
    paths_per_call: int = 5,
    batch_size: int | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """For each accepted question without gold paths: search start->answer paths (bounded), verify them by LLM.
    ``batch_size`` (questions per batch task) defaults to the verifier endpoint's ``max_concurrency``."""
    VerifyPaths.check_call(locals())
    settings = settings or default_settings()
    step = GoldPathsStep(domains, max_paths, time_budget_s, paths_per_call, batch_size)
    return run_step(step, flow_parameters(verify_paths, locals()), settings)
