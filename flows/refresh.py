"""The scheduled `refresh` flow: new documents -> graphs -> questions -> gold paths -> trajectories -> difficulty
-> a new dataset version (with its diff and pictures) -> the Hub.

Each stage is the existing flow, run as a subflow on only what changed:

1. **Check** before any LLM call (``check_refresh``): every source exists, the Hub repository id is valid and its
   token is set, the solver settings make sense. Bad input fails here and changes nothing.
2. **Ingest** each source (``ingest-corpus``): documents are keyed by content hash, so only new or changed
   documents land; the domains they land in are the *changed* domains.
3. **Graphs** (``build-graphs``) of the changed domains only: LightRAG's working directory keeps what it already
   extracted, so only the new documents reach the extractor, and a new snapshot is written.
4. **Questions** (``generate-qa``) from the changed graphs (``n_seeds`` each), plus ``seed_quota`` seeds in every
   other domain (deterministic sampling on an unchanged snapshot: once those jobs are done, a quota costs nothing).
5. **Gold paths** and **trajectories** for questions that have none (``verify-paths``, ``distill-trajectories``).
6. **Difficulty** (``label-difficulty``): the solver's pass@k with and without tools for unmeasured questions.
7. **Export** a version named by the content hash of its inputs and labels; questions labelled in
   ``drop_labels`` (trivially easy by default) are left out. Equal hash: nothing new, nothing exported or
   published. Then **publish** it (``tasks.export.hub``): one commit and one tag per version.
8. A markdown artifact with the **diff** against the previous version, and one with the **pictures**.

A refresh that fails anywhere raises, so the Prefect run is Failed (an automation can tell the owner, see the
README); nothing is published before the export is complete and verified, and a failed upload makes no commit,
so the previously published version stays as it was.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from flows.checks import seed_ball_bounds
from flows.distill import distill_trajectories, load_gold_paths, load_trajectories
from flows.graphs import build_graphs, ingest_corpus
from flows.batches import BatchResult, chunks
from flows.params import Label, QAMode, Refresh, SolverMode
from flows.qa import generate_qa, load_qa, verify_paths
from flows.runtime import Runtime, default_settings, flow_parameters, hopforge_flow, open_run
from flows.steps import Step, Unit, by_snapshot, run_step
from flows.evaluate import evaluation_card
from flows.ikg_data import ikg_export_data
from flows.tools_env import snapshot_tool_env
from gateway.spec import GatewaySpec
from schemas.config import Role, Settings
from schemas.errors import InputError
from schemas.qa import QA, GoldPath
from schemas.tools import TOOL_SPECS
from tasks.export.datasets import ExportInputs, build_export, check_include, write_export
from tasks.export.hub import check_publish, publish_version
from tasks.export.pictures import artifact_markdown, card_section, picture_data, render
from tasks.export.rows import EXPORT_CONFIGS, ExportConfig
from tasks.export.versions import diff, diff_markdown, summarize, version_fingerprint
from tasks.graph.kg import KnowledgeGraph
from eval.difficulty import (
    Difficulty,
    DifficultyConfig,
    DifficultyError,
    difficulty_columns,
    drop_labelled,
    measure,
    rates_by_hop_class,
    with_difficulty_schema,
)
from warehouse.backup import backup_for_export
from warehouse.graphs import load_graph

HF_PREFIX = "hf:"


class RefreshError(InputError):
    """A refresh that cannot start or cannot finish, worded for a person."""


# -- checks before any work -----------------------------------------------------------------------------------------

def resolve_sources(sources: Sequence[str]) -> list[tuple[str, str]]:
    """(source, kind) per source: ``hf:org/name`` is a Hugging Face dataset id, anything else a local path that
    must exist now (a source that vanished is an error, not an empty corpus)."""
    out: list[tuple[str, str]] = []
    for s in sources:
        if s.startswith(HF_PREFIX):
            name = s[len(HF_PREFIX):]
            if "/" not in name:
                raise RefreshError(f"source {s!r}: a Hugging Face dataset id looks like 'hf:org/name'")
            out.append((name, "hf"))
            continue
        p = Path(s).expanduser()
        if not p.exists():
            raise RefreshError(f"source {s!r} does not exist (moved or deleted?); nothing was refreshed. Fix the "
                               "deployment's `sources` parameter, or prefix a Hugging Face dataset id with 'hf:'")  # fmt: skip
        out.append((str(p), "auto"))
    return out


def check_refresh(sources: Sequence[str], repo_id: str | None, token_env: str,
                  solver: DifficultyConfig | None) -> list[tuple[str, str]]:
    """Every check of the sources, the Hub and the solver that needs no LLM (the parameters themselves are checked
    by ``Refresh``); raises ``RefreshError`` / ``PublishError`` / ``DifficultyError``."""
    if not sources:
        raise RefreshError("no sources to refresh from: give `sources` (corpus folders, .jsonl files or "
                           "'hf:org/name' dataset ids)")  # fmt: skip
    resolved = resolve_sources(sources)
    check_publish(repo_id, token_env)
    if solver is not None:
        solver.check()
    return resolved


# -- difficulty ------------------------------------------------------------------------------------------------------

@task(name="difficulty-batch", retries=1, retry_delay_seconds=5, cache_policy=NO_CACHE)
def difficulty_batch(spec: GatewaySpec, kg: KnowledgeGraph | None, qas: list[QA], gold: dict[str, list[GoldPath]],
                     cfg: DifficultyConfig, solver_model: str, run_id: str, index_dir: str
                     ) -> BatchResult[Difficulty | None]:  # fmt: skip
    """The difficulty of one batch of questions (all of one graph snapshot), measured concurrently. Picklable in
    and out: the gateway and, with ``kg`` (the "tools" mode), the tool environment are built where the task runs."""
    gateway = spec.open()
    env = snapshot_tool_env(kg, spec.settings.embeddings, index_dir, tuple(TOOL_SPECS)) if kg is not None else None

    async def go() -> list[Difficulty | None]:
        try:
            return await gateway.gather(
                measure(gateway, env, q, cfg, gold.get(q.qa_id, []), solver_model=solver_model, run_id=run_id)
                for q in qas
            )
        finally:
            await gateway.aclose()

    return BatchResult(asyncio.run(go()), gateway.ledger.snapshot())


def solver_model(rt: Runtime, role: str) -> str:
    return rt.gateway.resolve(role).model or role


def load_difficulty(rt: Runtime, model: str, k: int) -> dict[str, Difficulty]:
    rows = rt.wh.query("SELECT * FROM qa_difficulty WHERE solver_model = ? AND k = ?", [model, k])
    return {r["qa_id"]: Difficulty(**r) for r in rows}


@hopforge_flow(name="label-difficulty", log_prints=True)
def label_difficulty(
    k: int = 4,
    modes: tuple[SolverMode, ...] = ("tools", "no_tools"),
    temperature: float = 1.0,
    role: Role = "policy",
    domains: list[str] | None = None,
    batch_size: int = 8,
    max_rounds: int = 7,
    max_tokens_per_round: int = 3000,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Measure each unmeasured question's difficulty: ``k`` attempts per mode by the solver ``role``
    (``eval.difficulty``). Resumable: questions with a row for this solver model and ``k`` are skipped, and
    every answered attempt comes from the cache."""
    settings = settings or default_settings()
    cfg = DifficultyConfig(k=k, modes=tuple(modes), temperature=temperature, role=role, max_rounds=max_rounds,
                           max_tokens_per_round=max_tokens_per_round, seed=settings.seed).check()  # fmt: skip
    if batch_size < 1:
        raise DifficultyError(f"batch_size must be >= 1, got {batch_size}")
    step = DifficultyStep(cfg, domains, batch_size, settings)
    return run_step(step, flow_parameters(label_difficulty, locals()), settings)


class DifficultyStep(Step[QA, "Difficulty | None"]):
    """``k`` solver attempts per mode for each question without a difficulty row for this solver model and ``k``
    (``eval.difficulty``), in batches of one graph snapshot; a question that lost an attempt to the endpoint gets no
    row, and the next run measures it again."""

    flow, progress, doing = "label-difficulty", "label-difficulty", "measuring question difficulty"
    reads = ("qa", "gold_paths", "qa_difficulty", "graph_snapshots")
    writes = {"qa_difficulty": Difficulty}
    task = difficulty_batch

    def __init__(self, cfg: DifficultyConfig, domains: list[str] | None, batch_size: int, settings: Settings) -> None:
        self.cfg, self.domains, self.batch_size = cfg, domains, batch_size
        self.roles = (cfg.role,)
        self.index_dir = str((settings.data_dir / "indexes").resolve())
        self.todo: list[QA] = []
        self.model: str | None = None
        self.gold: dict[str, list[GoldPath]] = {}
        self.graphs: dict[tuple[str, str], KnowledgeGraph] = {}
        self.failed = 0

    def prepare(self, rt: Runtime, spec: GatewaySpec) -> None:
        where, args = "TRUE", []
        if self.domains:
            where, args = "domain IN (SELECT unnest(?::VARCHAR[]))", [list(self.domains)]
        qas = load_qa(rt, where, args)
        if not qas:
            return
        self.model = solver_model(rt, self.cfg.role)
        done = set(load_difficulty(rt, self.model, self.cfg.k))
        self.todo = [q for q in qas if q.qa_id not in done]
        print(f"difficulty: {len(qas)} questions, {len(self.todo)} to measure with {self.model} (k={self.cfg.k}, "
              f"{', '.join(self.cfg.modes)})")
        self.gold = load_gold_paths(rt.wh, [q.qa_id for q in self.todo])

    def _groups(self) -> list[tuple[tuple[str, str], list[QA]]]:
        return by_snapshot(self.todo, lambda q: (q.domain, q.snapshot_id or ""))

    def sizes(self) -> list[int]:
        return [len(b) for _, group in self._groups() for b in chunks(group, self.batch_size or 1)]

    def bar(self, unit: Unit[QA]) -> tuple[str, int, str]:
        return self.progress, len(self.todo), self.doing

    def plan(self, rt: Runtime) -> Iterator[Unit[QA]]:
        for (domain, snap), group in self._groups():
            for b in chunks(group, self.batch_size or 1):
                yield Unit(domain, snap, list(b))

    def parameters(self, rt: Runtime, spec: GatewaySpec, unit: Unit[QA]) -> dict[str, Any]:
        kg = None
        if "tools" in self.cfg.modes:
            key = (unit.domain, unit.snapshot)
            if key not in self.graphs:  # one load per snapshot, not per batch
                self.graphs[key] = load_graph(rt.wh, unit.domain, unit.snapshot or None)
            kg = self.graphs[key]
        return {"spec": spec, "kg": kg, "qas": unit.items, "gold": {q.qa_id: self.gold.get(q.qa_id, [])
                                                                    for q in unit.items},
                "cfg": self.cfg, "solver_model": self.model, "run_id": rt.run_id, "index_dir": self.index_dir}

    def write(self, rt: Runtime, unit: Unit[QA], records: list[Difficulty | None], con: Any) -> list[Difficulty]:
        kept = [r for r in records if r is not None]
        rt.wh.write_batch("qa_difficulty", kept, replace=True, con=con)
        self.failed += len(records) - len(kept)
        return kept

    def summary(self, rt: Runtime, written: list[Difficulty]) -> dict[str, Any]:
        if self.failed:
            print(f"difficulty: {self.failed} question(s) lost an attempt to the endpoint; the next run measures them "
                  "again")
        return {"measured": len(written), "failed": self.failed, "solver_model": self.model}


def _domains(rt: Runtime, sql: str, params: list[Any] | None = None) -> list[str]:
    return [r["domain"] for r in rt.wh.query(sql, params or [])]


def _latest_version(rt: Runtime) -> dict[str, Any] | None:
    rows = rt.wh.query("SELECT * FROM dataset_versions ORDER BY created_at DESC LIMIT 1")
    if not rows:
        return None
    row = rows[0]
    for c in ("summary", "diff"):
        if isinstance(row.get(c), str):
            row[c] = json.loads(row[c])
    return row


def _usage(rt: Runtime, run_ids: Sequence[str]) -> dict[str, int]:
    rows = rt.wh.query(
        "SELECT coalesce(sum(llm_calls), 0) AS llm_calls, coalesce(sum(llm_cache_hits), 0) AS llm_cache_hits, "
        "coalesce(sum(prompt_tokens), 0) AS prompt_tokens, coalesce(sum(completion_tokens), 0) AS completion_tokens "
        "FROM runs WHERE run_id IN (SELECT unnest(?::VARCHAR[]))", [list(run_ids)])  # fmt: skip
    return {k: int(v) for k, v in rows[0].items()}


def _rejects(rt: Runtime, run_ids: Sequence[str]) -> dict[str, int]:
    """Rejects by reason among ``run_ids`` (all runs when empty is not wanted: pass the runs)."""
    counts: Counter = Counter()
    for r in rt.wh.query(
        "SELECT reject_reason AS reason, count(*) AS n FROM qa_attempts WHERE reject_reason IS NOT NULL "
        "AND run_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY 1", [list(run_ids)]):  # fmt: skip
        counts[r["reason"]] += int(r["n"])
    for r in rt.wh.query("SELECT reason, count(*) AS n FROM qa_rejects WHERE run_id IN (SELECT unnest(?::VARCHAR[])) "
                         "GROUP BY 1", [list(run_ids)]):  # fmt: skip
        counts[r["reason"]] += int(r["n"])
    return dict(counts)


def _all_rejects(rt: Runtime) -> dict[str, int]:
    counts: Counter = Counter()
    for r in rt.wh.query("SELECT reject_reason AS reason, count(*) AS n FROM qa_attempts WHERE reject_reason IS NOT NULL "
                         "GROUP BY 1"):  # fmt: skip
        counts[r["reason"]] += int(r["n"])
    for r in rt.wh.query("SELECT reason, count(*) AS n FROM qa_rejects GROUP BY 1"):
        counts[r["reason"]] += int(r["n"])
    return dict(counts)


def _answer_types(rt: Runtime) -> dict[tuple[str, str], str]:
    rows = rt.wh.query("SELECT q.domain, q.answer, e.type FROM qa q JOIN entities e "
                       "ON e.snapshot_id = q.snapshot_id AND e.name = q.answer")  # fmt: skip
    return {(r["domain"], r["answer"]): r["type"] for r in rows}


def _artifact(key: str, markdown: str, description: str) -> None:
    """A Prefect markdown artifact, only inside a flow run (a plain call has no API to send it to)."""
    from prefect.artifacts import create_markdown_artifact
    from prefect.context import FlowRunContext

    if FlowRunContext.get() is not None:
        create_markdown_artifact(key=key, markdown=markdown, description=description)


# -- the flow ---------------------------------------------------------------------------------------------------------

@hopforge_flow(name="refresh", log_prints=True)
def refresh(
    sources: list[str] | None = None,
    domains: list[str] | None = None,
    allow_new_domains: bool = False,
    n_seeds: int = 20,
    seed_quota: int = 0,
    modes: tuple[QAMode, ...] = ("candidates",),
    max_attempts: int = 3,
    min_ball: int | None = None,
    max_ball: int | None = None,
    n_rollouts: int = 2,
    measure_difficulty: bool = True,
    solver_k: int = 4,
    solver_modes: tuple[SolverMode, ...] = ("tools", "no_tools"),
    solver_temperature: float = 1.0,
    solver_role: Role = "policy",
    drop_labels: tuple[Label, ...] = ("trivial",),
    include: tuple[ExportConfig, ...] = EXPORT_CONFIGS,
    repo_id: str | None = None,
    token_env: str = "HF_TOKEN",
    private: bool = True,
    max_rounds: int = 7,
    max_tokens_per_round: int = 3000,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Refresh the dataset from ``sources`` and export (and, with ``repo_id``, publish) a new version when anything
    changed; see the module docstring. ``sources`` defaults to those of the previous refresh. Returns the version,
    whether it is new, the diff, the LLM usage and where it was published."""
    Refresh.check_call(locals())
    settings = settings or default_settings()
    min_ball, max_ball = seed_ball_bounds(min_ball, max_ball, settings.seeds)  # the run records the bounds used
    solver = (DifficultyConfig(k=solver_k, modes=tuple(solver_modes), temperature=solver_temperature, role=solver_role,
                               max_rounds=max_rounds, max_tokens_per_round=max_tokens_per_round, seed=settings.seed)
              if measure_difficulty else None)  # fmt: skip
    include = check_include(include)
    params = flow_parameters(refresh, locals())
    with open_run("refresh", params, settings) as rt:
        if sources is None:
            sources = _previous_sources(rt)
        resolved = check_refresh(sources or [], repo_id, token_env, solver)
        params["sources"] = sources
        rt.wh.execute("UPDATE runs SET parameters = ? WHERE run_id = ?",
                      [json.dumps(params, sort_keys=True, default=str), rt.run_id])  # fmt: skip
        stage_runs: list[str] = []
        changed = _ingest(rt, resolved, stage_runs, allow_new_domains=allow_new_domains, domains=domains,
                          settings=settings)
        _graphs(changed, stage_runs, allow_new_domains, settings)
        _questions(rt, changed, stage_runs, domains=domains, n_seeds=n_seeds, seed_quota=seed_quota,
                   modes=list(modes), max_attempts=max_attempts, min_ball=min_ball, max_ball=max_ball,
                   settings=settings)
        _paths_and_trajectories(rt, stage_runs, n_rollouts, max_rounds, max_tokens_per_round, settings)
        labels = _difficulty(rt, solver, stage_runs, settings) if solver is not None else {}
        # 7. export a version when anything changed, 8. publish it
        result = export_version(rt, labels, drop_labels, include, stage_runs, repo_id=repo_id, token_env=token_env,
                                private=private)  # fmt: skip
        return {"run_id": rt.run_id, "changed_domains": changed, "stage_runs": stage_runs, **result}


def _ingest(rt: Runtime, resolved: list[tuple[str, str]], stage_runs: list[str], *, allow_new_domains: bool,
            domains: list[str] | None, settings: Settings) -> list[str]:
    """2. ingest: documents are content-addressed, so only new or changed ones land. The domains that changed."""
    ingest_runs = []
    for source, kind in resolved:
        out = ingest_corpus(source=source, source_kind=kind, allow_new_domains=allow_new_domains,  # type: ignore[arg-type]
                            settings=settings)  # fmt: skip
        ingest_runs.append(out["run_id"])
        print(f"ingest {source}: {out['documents_written']} new documents, {out['already_present']} already present")
    stage_runs += ingest_runs
    changed = _domains(rt, "SELECT DISTINCT domain FROM documents WHERE ingested_run_id IN "
                           "(SELECT unnest(?::VARCHAR[])) ORDER BY domain", [ingest_runs])  # fmt: skip
    if domains:
        changed = [d for d in changed if d in domains]
    print(f"changed domains: {', '.join(changed) or 'none'}")
    return changed


def _graphs(changed: list[str], stage_runs: list[str], allow_new_domains: bool, settings: Settings) -> None:
    """3. graphs of the changed domains (LightRAG skips documents it already extracted); a failed build stops the
    refresh before anything is exported."""
    if not changed:
        return
    built = build_graphs(domains=changed, allow_new_domains=allow_new_domains, settings=settings)
    stage_runs.append(built["run_id"])
    if built["failures"]:
        raise RefreshError("graph build failed for " + "; ".join(f"{d}: {e}" for d, e in built["failures"].items())
                           + ". Nothing was exported or published.")  # fmt: skip


def _questions(rt: Runtime, changed: list[str], stage_runs: list[str], *, domains: list[str] | None, n_seeds: int,
               seed_quota: int, settings: Settings, **generate: Any) -> None:
    """4. questions from the changed graphs (``n_seeds``), plus ``seed_quota`` seeds from every other graph."""
    with_graph = _domains(rt, "SELECT domain FROM current_graph_snapshots ORDER BY domain")
    if domains:
        with_graph = [d for d in with_graph if d in domains]
    qa_plan = [(sorted(set(changed) & set(with_graph)), n_seeds),
               (sorted(set(with_graph) - set(changed)), seed_quota)]  # fmt: skip
    for doms, seeds in qa_plan:
        if doms and seeds > 0:
            stage_runs.append(generate_qa(domains=doms, n_seeds=seeds, settings=settings, **generate)["run_id"])


def _paths_and_trajectories(rt: Runtime, stage_runs: list[str], n_rollouts: int, max_rounds: int,
                            max_tokens_per_round: int, settings: Settings) -> None:
    """5. gold paths and trajectories for questions that have none (also finishes an interrupted refresh)."""
    unverified = _domains(rt, "SELECT DISTINCT domain FROM qa WHERE qa_id NOT IN "
                              "(SELECT qa_id FROM gold_path_summary WHERE llm_failures = 0) ORDER BY domain")  # fmt: skip
    if unverified:
        stage_runs.append(verify_paths(domains=unverified, settings=settings)["run_id"])
    undistilled = _domains(rt, "SELECT DISTINCT domain FROM qa WHERE qa_id NOT IN "
                               "(SELECT qa_id FROM trajectories) ORDER BY domain")  # fmt: skip
    if undistilled and n_rollouts >= 0:
        out = distill_trajectories(domains=undistilled, n_rollouts=n_rollouts, max_rounds=max_rounds,
                                   max_tokens_per_round=max_tokens_per_round, settings=settings)  # fmt: skip
        stage_runs.append(out["run_id"])


def _difficulty(rt: Runtime, solver: DifficultyConfig, stage_runs: list[str], settings: Settings
                ) -> dict[str, Difficulty]:
    """6. difficulty of the questions the solver has not measured; the labels of every question."""
    if not rt.wh.scalar("SELECT count(*) FROM qa"):
        return {}
    model = solver_model(rt, solver.role)
    unmeasured = rt.wh.scalar("SELECT count(*) FROM qa WHERE qa_id NOT IN (SELECT qa_id FROM qa_difficulty "
                              "WHERE solver_model = ? AND k = ?)", [model, solver.k])  # fmt: skip
    if unmeasured:
        out = label_difficulty(k=solver.k, modes=solver.modes, temperature=solver.temperature,  # type: ignore[arg-type]
                               role=solver.role, max_rounds=solver.max_rounds,
                               max_tokens_per_round=solver.max_tokens_per_round, settings=settings)  # fmt: skip
        stage_runs.append(out["run_id"])
    return load_difficulty(rt, model, solver.k)


def _previous_sources(rt: Runtime) -> list[str] | None:
    for r in rt.wh.query("SELECT parameters FROM runs WHERE flow = 'refresh' AND status = 'completed' "
                         "ORDER BY started_at DESC"):  # fmt: skip
        got = json.loads(r["parameters"]).get("sources")
        if got:
            return list(got)
    return None


#: The warehouse tables a refresh's export is made from (questions, paths, trajectories, difficulty labels, the
#: rejects and answer types its pictures show): the backup named in its manifest holds the same rows in them.
REFRESH_EXPORT_TABLES = ("qa", "gold_paths", "trajectories", "qa_difficulty", "qa_attempts", "qa_rejects", "entities")


def export_version(rt: Runtime, labels: dict[str, Difficulty], drop_labels: Sequence[str], include: Sequence[str],
                   stage_runs: Sequence[str], *, repo_id: str | None, token_env: str, private: bool) -> dict[str, Any]:
    """Steps 7-8 of the module docstring. Writes the version row; returns version, new_version, diff, usage."""
    previous = _latest_version(rt)
    qas = load_qa(rt)
    if not qas:
        raise RefreshError("no questions in the warehouse after the refresh: the sources gave no usable graph "
                           "(see the build-graphs and generate-qa runs)")  # fmt: skip
    kept, dropped = drop_labelled(qas, labels, drop_labels)
    ikg = ikg_export_data(rt.wh, kept, rt.settings, run_id=rt.run_id)  # IKG variants when [ikg] levels is set
    for line in ikg.lines:
        print(line)
    inputs = ExportInputs(qas=kept, gold_paths=load_gold_paths(rt.wh),
                          trajectories=load_trajectories(rt.wh, "status = 'accepted'"), ikg=ikg.items)  # fmt: skip
    fingerprint = version_fingerprint(inputs.fingerprint(include), {q: d.label for q, d in labels.items()},
                                      drop_labels, include)  # fmt: skip
    usage = _usage(rt, [*stage_runs])
    if previous is not None and previous["inputs_sha256"] == fingerprint:
        published = previous["revision"] if previous["status"] == "published" else None
        if repo_id and (previous["status"] != "published" or previous["repo_id"] != repo_id):
            # The version was exported but its upload failed (or a repository was added since): publish it now.
            published = _publish(rt, previous["version"], Path(previous["path"]), repo_id, token_env, private)
        note = (f"Nothing new since version {previous['version']}: no export" + ("" if published else ", nothing published")
                + f". LLM calls this refresh: {usage['llm_calls']}.")  # fmt: skip
        print(note)
        _artifact("refresh-diff", f"# No new dataset version\n\n{note}\n", f"refresh {rt.run_id}: nothing new")
        return {"version": previous["version"], "new_version": False, "published": published, "usage": usage,
                "diff": None, "path": previous["path"]}

    built = build_export(inputs, include)
    if "qa" in built.tables:
        for rows in built.tables["qa"].values():
            for r in rows:
                r.update(difficulty_columns(labels.get(r["qa_id"])))
        built.schemas["qa"] = with_difficulty_schema(built.schemas["qa"])
    qa_rows = [r for rows in built.tables.get("qa", {}).values() for r in rows]
    pictures = render(picture_data(qa_rows, rejects=_all_rejects(rt), answer_types=_answer_types(rt)))
    by_hop = rates_by_hop_class(labels[q.qa_id] for q in kept if q.qa_id in labels)
    extra = []
    if by_hop:
        extra += ["## Difficulty", "",
                  f"Measured by the solver's pass rate over {next(iter(labels.values())).k} attempts with the KG tools "
                  "and without; questions solved every time without tools are labelled `trivial`"
                  + (f" and left out ({', '.join(drop_labels)} dropped)." if drop_labels else "."), "",
                  *_md_table(by_hop), ""]  # fmt: skip
    extra.append(card_section(sorted(pictures)))
    eval_pictures, eval_card = evaluation_card(rt)  # the latest evaluation by graph setting, when one scored IKG items
    pictures = {**pictures, **eval_pictures}
    if eval_card:
        extra.append(eval_card)
    version = f"v-{fingerprint[:16]}"
    result = write_export(built, rt.data_dir / "exports", version, fingerprint=fingerprint, extra_files=pictures,
                          card_extra="\n".join(extra),
                          warehouse_backup=backup_for_export(rt.wh, rt.data_dir, REFRESH_EXPORT_TABLES))  # fmt: skip
    summary = summarize(result.rows, qa_rows)
    changes = diff(previous["summary"] if previous else None, summary)
    dropped_by = dict(Counter(labels[q.qa_id].label for q in dropped))
    now = datetime.now()
    rt.wh.write_batch("dataset_versions", [{
        "version": version, "run_id": rt.run_id, "previous_version": previous["version"] if previous else None,
        "inputs_sha256": fingerprint, "path": str(result.path), "summary": summary, "diff": changes,
        "repo_id": None, "revision": None, "commit_url": None, "status": "exported", "created_at": now,
        "published_at": None}], replace=True)  # fmt: skip
    print(f"exported version {version} at {result.path} (previous: {previous['version'] if previous else 'none'})")
    published = _publish(rt, version, result.path, repo_id, token_env, private) if repo_id else None
    md = diff_markdown(version, previous["version"] if previous else None, changes, _rejects(rt, stage_runs), usage,
                       published=published, dropped=dropped_by, difficulty=by_hop)  # fmt: skip
    _artifact("refresh-diff", md, f"refresh {rt.run_id}: version {version}")
    _artifact("dataset-pictures", artifact_markdown(pictures, f"Dataset version {version}"),
              f"pictures of version {version}")
    for line in md.splitlines():
        if line.startswith("|"):
            print(line)
    return {"version": version, "new_version": True, "published": published, "usage": usage, "diff": changes,
            "path": str(result.path), "dropped": dropped_by, "pictures": sorted(pictures)}


def _publish(rt: Runtime, version: str, path: Path, repo_id: str, token_env: str, private: bool) -> str:
    pub = publish_version(path, repo_id, token_env=token_env, private=private)
    rt.wh.execute("UPDATE dataset_versions SET repo_id = ?, revision = ?, commit_url = ?, status = 'published', "
                  "published_at = ? WHERE version = ?", [repo_id, pub.revision, pub.commit_url, datetime.now(), version])  # fmt: skip
    print(f"published {version} to {repo_id} (tag {pub.revision}): {pub.commit_url}")
    return f"{repo_id}@{pub.revision}"


def _md_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    cols = list(rows[0])
    return (["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
            + ["| " + " | ".join("" if r[c] is None else str(r[c]) for c in cols) + " |" for r in rows])  # fmt: skip


__all__ = ["RefreshError", "check_refresh", "export_version", "label_difficulty", "refresh", "resolve_sources"]
