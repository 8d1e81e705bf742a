"""The `evaluate-policy` flow: score the policy model on the stored questions, with tools and baselines.

The flow loads the questions of a split (every split when ``split`` is None), optionally of some domains and at
most ``limit`` of them (first by ``qa_id``), their gold paths, the graph snapshot each was made on and a tool
environment over it. Batch tasks answer and score items (``eval.evaluate.evaluate_item``) and never write; the
flow writes each batch of ``eval_items`` in one transaction, then one ``eval_runs`` row per mode. A table artifact
reports EM / F1 / Hit@1 (and judge accuracy) per mode and (domain, hop class).

A later run re-asks nothing the endpoint already answered. Each item carries a key of what its result depends on
(``eval.evaluate.item_key``: the question and gold paths as stored, the mode, the settings, the policy and judge
endpoints and the embedder as configured, the evaluation code). With the response cache on (``cache.mode`` on or
read_only, not scoped per run), a finished item with the same key is the result this run would get by replaying
the cache, so it is copied under this run without loading the graph or building prompts; items whose endpoint
gave no answer or whose judge failed are asked again. ``reuse=False`` measures every item again (through the
cache, unless it is off).

Graph-RFT's incomplete-graph setting (``ikg_levels``; default ``[ikg] levels``): each question is also scored in its
IKG view at every level (``eval.ikg``), the variants the export would keep (``tasks.env.ikg.build_variants``: only
those whose hidden facts the text search finds, or whose answer another path reaches), in every mode. The tool loop
runs in the view with ``neighbor_search`` and ``web_search`` over the domain's corpus chunks added to its tools
(``eval.ikg.ikg_config``), offered on the complete graph of that domain too (a domain without a corpus gets no IKG
items and no added tools, and the run says so). The table artifact
``eval-settings`` and the report under ``<data_dir>/eval/<run_id>/`` (``report.md``, ``pictures/settings.svg``)
give Hits@1, EM, F1 and the text-search share per mode and setting; ``by_mode``, ``table`` and ``eval_runs``
summarise the complete-graph items as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from eval.evaluate import MODES, EvalConfig, EvalItem, Mode, TrainedAs, evaluate_item, first_request, item_key, reusable
from eval.ikg import ikg_config, scored_lines, setting_table
from eval.metrics import aggregate, summarize
from flows.ikg_data import domain_text_index, ikg_embedder
from flows.distill import load_gold_paths
from flows.batches import BatchResult, chunks
from flows.checks import check_domains_in
from flows.params import EvaluatePolicy
from flows.tools_env import snapshot_tool_env
from gateway.loop import run_shared
from gateway.spec import GatewaySpec
from flows.qa import load_qa
from flows.runtime import Runtime, default_settings, flow_parameters, hopforge_flow
from flows.steps import Step, Unit, by_snapshot, run_step
from gateway.client import EndpointUnavailable
from schemas.config import Settings
from schemas.errors import InputError
from schemas.qa import QA, GoldPath, Split
from tasks.env.ikg import IKGLevels, IKGView
from tasks.env.text_search import TextChunk, TextIndex, cached_text_index
from tasks.env.tools import ToolEnvironment
from tasks.export.card import evaluation_section, settings_markdown
from tasks.export.pictures import artifact_markdown, render_settings
from tasks.graph.kg import KnowledgeGraph
from warehouse.graphs import SnapshotNotFoundError, load_graph

#: One item to score: the question, the mode, and the IKG view it runs in (``None``: the complete graph).
Job = tuple[QA, str, IKGView | None]


def batch_text_index(settings: Settings, domain: str, chunks: Sequence[TextChunk] | None,
                     index_dir: str) -> TextIndex | None:
    """The text search over ``chunks`` with the ``[ikg] embedder``, as the flow's answerability check built it
    (the same object in this process, else loaded from the disk cache)."""
    if not chunks:
        return None
    return cached_text_index(chunks, ikg_embedder(settings), name=domain, cache_dir=index_dir,
                             dense=settings.ikg.text_dense, nprobe=settings.ikg.text_nprobe)


@task(name="evaluate-batch", retries=1, retry_delay_seconds=5, cache_policy=NO_CACHE)
def evaluate_batch(spec: GatewaySpec, kg: KnowledgeGraph | None, jobs: list[Job],
                   gold: dict[str, list[GoldPath]], cfg: EvalConfig, run_id: str, index_dir: str,
                   texts: list[TextChunk] | None = None) -> BatchResult[EvalItem]:
    """The scored items of one batch (one graph snapshot), concurrently (the gateway's limiter paces the policy
    endpoint); with ``kg`` the tools run over it, built where the task runs; with ``texts`` (the domain's corpus
    chunks) ``web_search`` reads them, and IKG items' gold contexts quote them."""
    gateway = spec.open()
    domain = kg.domain if kg is not None else (jobs[0][0].domain if jobs else "")
    text = batch_text_index(spec.settings, domain, texts, index_dir)
    env = snapshot_tool_env(kg, spec.settings.embeddings, index_dir, cfg.tools) if kg is not None else None
    if env is not None and text is not None:
        env = ToolEnvironment(env.indexes, tools=cfg.tools, limits=env.limits, default_domain=env.default_domain,
                              texts={kg.domain: text})  # type: ignore[union-attr]

    async def go() -> list[EvalItem]:
        try:
            return await gateway.gather(
                evaluate_item(gateway, env, qa, mode, cfg, gold.get(qa.qa_id, []), run_id=run_id, view=view,
                              text=text)
                for qa, mode, view in jobs
            )
        finally:
            await gateway.aclose()

    return BatchResult(run_shared(go()), gateway.ledger.snapshot())


@dataclass
class SettingPlan:
    """What one (domain, snapshot) group is scored in: its IKG variants, the text collection its tools read (the
    corpus chunks and their index's fingerprint; ``None``: no corpus, no text tool) and the lines the run prints."""

    views: list[tuple[QA, IKGView]] = field(default_factory=list)
    chunks: list[TextChunk] | None = None
    text_fingerprint: str | None = None
    lines: list[str] = field(default_factory=list)


def plan_settings(rt: Runtime, domain: str, snapshot_id: str | None, qas: Sequence[QA],
                  ikg: IKGLevels) -> SettingPlan:
    """The IKG variants of ``qas`` at the levels of ``ikg`` that the export would keep (``IKGLevels.build`` against
    the domain's corpus, searched as ``flows.ikg_data`` does), with one line per level saying how many are scored and
    why the others are not (``eval.ikg.scored_lines``)."""
    plan = SettingPlan()
    if not ikg:
        return plan
    try:
        graph = load_graph(rt.wh, domain, snapshot_id)
    except SnapshotNotFoundError:
        plan.lines.append(f"IKG {domain}: graph snapshot {snapshot_id} is not in the warehouse, so its {len(qas)} "
                          "questions are scored on the complete graph only")  # fmt: skip
        return plan
    text = domain_text_index(rt.wh, domain, ikg_embedder(rt.settings), rt.settings)
    build = ikg.build(graph, sorted(qas, key=lambda q: q.qa_id), text)
    if build.notice is not None or text is None:
        plan.lines.append(f"IKG {build.notice}; its questions are scored on the complete graph only")
        return plan
    plan.chunks, plan.text_fingerprint = list(text.chunks), text.fingerprint
    plan.views = [(v.qa, v.view) for v in build.variants]
    plan.lines += scored_lines(build, len(qas))
    return plan


def metrics_table(items: Sequence[EvalItem], modes: Sequence[str]) -> list[dict[str, Any]]:
    """One row per mode x (domain, hop class), then one "all" row per mode."""
    rows: list[dict[str, Any]] = []
    for mode in modes:
        mine = [i for i in items if i.mode == mode]
        if not mine:
            continue
        for r in aggregate(mine):
            rows.append({"mode": mode, **r})
        rows.append({"mode": mode, "domain": "all", "hop_class": "all", **summarize(mine)})
    return rows


def _artifact(table: list[dict[str, Any]], description: str) -> None:
    """A Prefect table artifact, only inside a flow run (a plain call in a test has no API to send it to)."""
    from prefect.artifacts import create_table_artifact
    from prefect.context import FlowRunContext

    if table and FlowRunContext.get() is not None:
        create_table_artifact(key="eval-metrics", table=table, description=description)


def _model(rt: Runtime, role: str) -> str | None:
    try:
        return rt.gateway.resolve(role).model
    except (EndpointUnavailable, OSError):  # an embedded model that cannot start: the items record the failure
        return None


def reuse_identity(settings: Settings, roles: Sequence[str], tools: bool) -> dict[str, Any]:
    """The part of an item key that comes from the configuration: each role's endpoint as configured (server, model,
    sampling, structured-output mode, extra body; the embedded model's file and context for a local role) and, with
    tools, the embedder. Concurrency, timeouts, retries and prices change how fast answers come, not what they are."""
    out: dict[str, Any] = {}
    for role in roles:
        ep = settings.endpoint(role)
        entry = ep.model_dump(mode="json", include={"base_url", "model", "sampling", "structured", "extra_body"})
        if ep.is_local:
            entry["local_model"] = settings.local_model.model_dump(mode="json", include={"gguf", "n_ctx"})
        out[role] = entry
    if tools:
        out["embeddings"] = settings.embeddings.model_dump(
            mode="json", exclude={"batch_size", "max_concurrency", "timeout_s", "api_key_env"})
    return out


def can_reuse(settings: Settings) -> bool:
    """Whether this configuration replays cached answers, so that a finished item stands for a new one."""
    return settings.cache.mode in ("on", "read_only") and settings.cache.scope != "run"


def finished_items(rt: Runtime, keys: Sequence[str]) -> dict[str, EvalItem]:
    """For each key, a reusable finished item with it (from the most recent run that has one)."""
    if not keys:
        return {}
    rows = rt.wh.read("eval_items", EvalItem, "item_key IN (SELECT unnest(?::VARCHAR[]))", [list(keys)],
                      order_by="(SELECT started_at FROM runs WHERE runs.run_id = eval_items.run_id) DESC NULLS LAST, "
                               "run_id DESC")  # fmt: skip
    out: dict[str, EvalItem] = {}
    for item in rows:
        if item.item_key is not None and item.item_key not in out and reusable(item):
            out[item.item_key] = item
    return out


def write_report(data_dir: Path, run_id: str, model: str | None, rows: Sequence[dict[str, Any]],
                 pictures: dict[str, bytes]) -> Path:
    """The evaluation report of a run with IKG items: ``<data_dir>/eval/<run_id>/report.md`` (the per-setting
    table) and its pictures next to it. Returns the report's path."""
    folder = data_dir / "eval" / run_id
    for name, data in pictures.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    text = [f"# Evaluation {run_id}", "", f"Policy: {model or 'unknown model'}. Hits@1, EM and F1 in percent per "
            "mode and graph setting (the complete graph and IKG-x% views: Graph-RFT's CKG / IKG); `used text "
            "search` is the share of questions whose tool loop called the text search.", "", settings_markdown(rows),
            "", *(f"![Hits@1 and text-search share by graph setting]({name})" for name in pictures), ""]  # fmt: skip
    report = folder / "report.md"
    report.write_text("\n".join(text), encoding="utf-8")
    return report


def _markdown_artifact(key: str, markdown: str, description: str) -> None:
    from prefect.artifacts import create_markdown_artifact
    from prefect.context import FlowRunContext

    if FlowRunContext.get() is not None:
        create_markdown_artifact(key=key, markdown=markdown, description=description)


def latest_setting_table(rt: Runtime) -> tuple[str, str | None, list[dict[str, Any]]] | None:
    """``(run_id, model, setting_table rows)`` of the latest evaluate-policy run that scored IKG items, for a dataset
    card (``tasks.export.card.evaluation_section``); ``None`` when no run did."""
    found = rt.wh.query("SELECT i.run_id, max(r.started_at) AS started FROM eval_items i JOIN runs r USING (run_id) "
                        "WHERE i.kg_setting = 'incomplete' GROUP BY i.run_id "
                        "ORDER BY started DESC LIMIT 1")  # fmt: skip
    if not found:
        return None
    run_id = found[0]["run_id"]
    items = rt.wh.read("eval_items", EvalItem, "run_id = ?", [run_id], order_by="mode, qa_id, view_id")
    models = rt.wh.query("SELECT model FROM eval_runs WHERE run_id = ? AND model IS NOT NULL LIMIT 1", [run_id])
    modes = [m for m in MODES if any(i.mode == m for i in items)]
    return run_id, (models[0]["model"] if models else None), setting_table(items, modes)


def evaluation_card(rt: Runtime) -> tuple[dict[str, bytes], str]:
    """What a dataset card shows of the latest evaluation by graph setting (``latest_setting_table``): the picture
    files (``pictures/settings.svg``) and the card section (``tasks.export.card.evaluation_section``), to pass
    to ``tasks.export.datasets.export`` as ``extra_files`` and ``card_extra``; nothing when no run scored IKG
    items."""
    found = latest_setting_table(rt)
    if found is None:
        return {}, ""
    run_id, model, rows = found
    pictures = render_settings(rows, "tools" if any(r["mode"] == "tools" for r in rows) else rows[0]["mode"])
    return pictures, evaluation_section(rows, sorted(pictures), run_id=run_id, model=model)


#: The trainer environments that can hold a served checkpoint's tokenizer, in the order tried (``vllm`` serves it).
TOKENIZER_ENVS = ("vllm", "trl", "verl", "llamafactory")


def _served_tokenizer(serving: dict[str, Any]) -> str | None:
    """The local directory holding the served checkpoint's tokenizer: the checkpoint (LLaMA-Factory saves it beside
    an adapter too), else a LoRA adapter's local base model."""
    for candidate in (serving.get("checkpoint"), serving.get("base_model")):
        if candidate and (Path(candidate) / "tokenizer_config.json").is_file():
            return str(candidate)
    return None


def check_served_prompts(serving: dict[str, Any] | None, jobs: Sequence[tuple[QA, str, EvalConfig]],
                         gold: dict[str, list[GoldPath]]) -> dict[str, Any] | None:  # fmt: skip
    """Measure the first request of every ``(question, mode, config)`` with the served checkpoint's tokenizer and
    chat template before anything is asked, and refuse in one line, with the counts, when one leaves less than the
    reply it asks for (``max_tokens``) inside the server's ``max_model_len``: vLLM refuses such a request, and the
    item would score as an endpoint error. ``None`` (and a printed line saying why) when the record names no
    ``max_model_len`` or no local tokenizer. Returns the counts per group of requests."""
    from training.envs import env_python
    from training.plan import TrainingError, measure_prompts

    limit = (serving or {}).get("max_model_len")
    if not serving or not limit:
        if serving:
            print("evaluation prompts not measured: the serving record has no max_model_len")
        return None
    tokenizer = _served_tokenizer(serving)
    env = next((e for e in TOKENIZER_ENVS if env_python(e).exists()), None)
    if tokenizer is None or env is None:
        why = "no local tokenizer beside the checkpoint" if tokenizer is None else "no trainer environment to run it"
        print(f"evaluation prompts not measured: {why}")
        return None
    kwargs = {"enable_thinking": bool(serving["chat_format"]["enable_thinking"])} if serving.get("chat_format") else {}
    groups: dict[tuple[str, int], tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]] = {}
    for qa, mode, cfg in jobs:
        req = first_request(qa, mode, cfg, gold.get(qa.qa_id, []))
        key = (json.dumps(req.tools, sort_keys=True), req.max_tokens)
        groups.setdefault(key, (req.tools, []))[1].append({"id": f"{qa.qa_id}:{mode}", "messages": req.messages})
    report: dict[str, Any] = {"max_model_len": int(limit), "tokenizer": tokenizer, "groups": []}
    for (_, max_tokens), (tools, prompts) in sorted(groups.items(), key=lambda g: g[0][1]):
        room = int(limit) - max_tokens
        if room < 1:
            raise TrainingError(f"max_model_len {limit} of the served checkpoint leaves no room for a prompt beside "
                                f"the {max_tokens} reply tokens evaluation asks for: raise max_model_len, or lower "
                                "max_tokens_per_round")  # fmt: skip
        counts = measure_prompts(None, tokenizer, room, env=env, tools=tools, chat_template_kwargs=kwargs,
                                 prompts=prompts)  # fmt: skip
        if counts.over:
            raise TrainingError(f"{counts.over} of {counts.rows} evaluation prompts are longer than max_model_len "
                                f"{limit} minus the {max_tokens} reply tokens they ask for ({room} tokens; longest "
                                f"{counts.longest}, {counts.longest_id}): serve with a larger max_model_len, or lower "
                                "max_tokens_per_round")  # fmt: skip
        report["groups"].append({"tools": tools is not None, "max_tokens": max_tokens, "rows": counts.rows,
                                 "longest": counts.longest, "room": room})  # fmt: skip
    print(f"evaluation prompts measured with {tokenizer}: "
          + "; ".join(f"{g['rows']} of at most {g['longest']} tokens (room {g['room']})" for g in report["groups"]))
    return report


@hopforge_flow(name="evaluate-policy", log_prints=True)
def evaluate_policy(
    split: Split | None = "test",
    modes: Sequence[Mode] = ("tools", "no_tools"),
    domains: list[str] | None = None,
    limit: int | None = None,
    use_judge: bool = False,
    batch_size: int | None = None,
    max_rounds: int = 7,
    max_tokens_per_round: int = 3000,
    reuse: bool = True,
    trained_as: TrainedAs | None = None,
    serving: dict[str, Any] | None = None,
    ikg_levels: list[float] | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Evaluate the ``policy`` role on the stored questions; see the module docstring. ``batch_size`` (items per
    batch task) defaults to the policy endpoint's ``max_concurrency``; ``reuse=False`` measures items again that an
    earlier run finished with the same key. ``trained_as`` (``think`` | ``no_think``): the policy is a checkpoint
    trained on hopforge's exports with those rows, evaluated in the context it was trained in
    (``EvalConfig.for_checkpoint``); ``None``: any model, tools listed in the system prompt. ``serving`` is the
    record of the server that answers (``training.serve.VLLMServer.record``: checkpoint, format, vLLM version),
    stored with the run's parameters and returned; when it names ``max_model_len`` and the checkpoint's tokenizer is
    local, every first request is measured before any is sent (``check_served_prompts``: an over-long one refuses
    the run with the counts). ``ikg_levels``: the IKG levels to score too (``None``: ``[ikg]
    levels``; ``[]``: the complete graph only). Returns ``{"run_id", "by_mode": {mode: {n, em, f1, hit1,
    judge_acc, ...}}, "table", "serving", "prompts", "by_setting", "report", "ikg"}`` (``by_setting``:
    ``eval.ikg.setting_table``; ``report``: the report's path, ``None`` without IKG items; ``ikg``: the lines
    saying how many questions each level scores)."""
    wanted = EvaluatePolicy.check_call(locals()).modes
    settings = settings or default_settings()
    served = (serving or {}).get("checkpoint_fingerprint")
    if served and settings.cache.scope == "global":
        # a checkpoint served under a name an earlier one used must not get that one's cached answers
        settings = settings.model_copy(update={"cache": settings.cache.model_copy(update={"scope": f"served-{served}"})})
    modes = tuple(m for m in MODES if m in wanted)  # canonical order
    ikg = IKGLevels.of(ikg_levels, settings.ikg.levels, k=settings.ikg.top_k)  # carried down from here
    common = {"max_rounds": max_rounds, "max_tokens_per_round": max_tokens_per_round, "use_judge": use_judge}
    cfg = EvalConfig.for_checkpoint(trained_as, **common) if trained_as is not None else EvalConfig(**common)
    step = EvaluateStep(split, modes, domains, limit, use_judge, batch_size, cfg, ikg, reuse, serving, settings)
    return run_step(step, flow_parameters(evaluate_policy, locals()), settings)


class EvaluateStep(Step[Job, EvalItem]):
    """The policy's answers to the stored questions, in each mode and IKG view, scored (``eval.evaluate``): jobs
    ``(question, mode, view)`` in batches of one graph snapshot; items an earlier run finished under the same key are
    taken over instead of asked again (``reuse``)."""

    flow, progress, doing = "evaluate-policy", "evaluate-policy", "evaluating the policy"
    reads = ("qa", "gold_paths", "eval_items", "graph_snapshots", "text_chunks")
    writes = {"eval_items": EvalItem, "eval_runs": dict}
    task = evaluate_batch

    def __init__(self, split: str | None, modes: Sequence[str], domains: list[str] | None, limit: int | None,
                 use_judge: bool, batch_size: int | None, cfg: EvalConfig, ikg: IKGLevels, reuse: bool,
                 serving: dict[str, Any] | None, settings: Settings) -> None:
        self.split, self.modes, self.domains, self.limit, self.use_judge = split, tuple(modes), domains, limit, use_judge
        self.batch_size, self.cfg, self.ikg, self.reuse, self.serving = batch_size, cfg, ikg, reuse, serving
        self.settings = settings
        self.roles = (cfg.role, *(["judge"] if use_judge else []))
        self.index_dir = str((settings.data_dir / "indexes").resolve())
        self.plans: dict[tuple[str, str], SettingPlan] = {}
        self.cfgs: dict[tuple[str, str], EvalConfig] = {}
        self.jobs: dict[tuple[str, str], list[Job]] = {}
        self.keys: dict[tuple[str, str, str], str] = {}
        self.found: dict[str, EvalItem] = {}
        self.gold: dict[str, list[GoldPath]] = {}
        self.prompts: Any = None

    def prepare(self, rt: Runtime, spec: GatewaySpec) -> None:
        check_domains_in(rt.wh, self.domains)
        where, args = "TRUE", []
        if self.split is not None:
            where, args = where + " AND split = ?", [*args, self.split]
        if self.domains:
            where, args = where + " AND domain IN (SELECT unnest(?::VARCHAR[]))", [*args, list(self.domains)]
        qas = load_qa(rt, where, args)[:self.limit] if self.limit else load_qa(rt, where, args)
        if not qas:
            raise InputError(f"no questions for split={self.split!r}, domains={self.domains}: run `generate-qa` first")
        self.gold = gold = load_gold_paths(rt.wh, [q.qa_id for q in qas])
        groups = dict(by_snapshot(qas, lambda q: (q.domain, q.snapshot_id or "")))
        self.plans = plans = {g: plan_settings(rt, g[0], g[1] or None, group, self.ikg)
                              for g, group in groups.items()}
        for plan in plans.values():
            for line in plan.lines:
                print(line)
        # In an IKG evaluation a domain with a corpus offers the IKG tools in every setting (``eval.ikg``).
        self.cfgs = cfgs = {g: ikg_config(self.cfg) if plan.chunks is not None else self.cfg
                            for g, plan in plans.items()}
        modes = self.modes
        self.jobs = jobs = {
            g: [(q, m, None) for m in modes for q in groups[g]] + [(q, m, v) for m in modes for q, v in plans[g].views]
            for g in plans}  # fmt: skip
        n_jobs = sum(len(j) for j in jobs.values())
        # A served checkpoint: every first request fits its context, or nothing is asked (IKG views add no tokens
        # to the tool loop's first turn; their gold-context passages are not measured).
        self.prompts = check_served_prompts(self.serving, [(q, m, cfgs[g]) for g in jobs for q, m, v in jobs[g]
                                                           if v is None], gold)  # fmt: skip
        print(f"evaluating {len(qas)} questions in mode(s) {', '.join(modes)}"
              + (f", {n_jobs // len(modes) - len(qas)} IKG variants too" if self.ikg else ""))  # fmt: skip
        identity = reuse_identity(self.settings, [self.cfg.role, *([self.cfg.judge_role] if self.use_judge else [])],
                                  "tools" in modes)
        served = (self.serving or {}).get("checkpoint_fingerprint")
        if served:
            identity["served_checkpoint"] = served
        if self.ikg:
            identity["ikg"] = self.settings.ikg.model_dump(mode="json", include={"embedder", "top_k"})

        def key_of(g: tuple[str, str], job: Job) -> str:
            q, m, view = job
            uses_text = (m == "tools" and plans[g].chunks is not None) or (m == "gold_context" and view is not None)
            return item_key(q, m, cfgs[g], gold.get(q.qa_id, []), identity, view,
                            plans[g].text_fingerprint if uses_text else None)

        self.keys = {_job_id(j): key_of(g, j) for g in jobs for j in jobs[g]}
        reusable = self.reuse and can_reuse(self.settings)
        self.found = finished_items(rt, sorted(set(self.keys.values()))) if reusable else {}

    def _todo(self, g: tuple[str, str]) -> list[Job]:
        return [j for j in self.jobs[g] if self.keys[_job_id(j)] not in self.found]

    def sizes(self) -> list[int]:
        return [len(b) for g in sorted(self.jobs) for b in chunks(self._todo(g), self.batch_size or 1)]

    def bar(self, unit: Unit[Job]) -> tuple[str, int, str]:
        return self.progress, sum(len(j) for j in self.jobs.values()), self.doing

    def reused(self, rt: Runtime) -> tuple[Unit[Job], list[EvalItem]] | None:
        taken = [j for g in self.jobs for j in self.jobs[g] if self.keys[_job_id(j)] in self.found]
        if not taken:
            return None
        copied = [self.found[self.keys[_job_id(j)]].model_copy(update={"run_id": rt.run_id}) for j in taken]
        print(f"{len(copied)} of {len(self.keys)} items finished earlier with the same questions, settings, endpoints "
              "and code: copied (reuse=False measures them again)")  # fmt: skip
        return Unit("", "", taken), copied

    def plan(self, rt: Runtime) -> Iterator[Unit[Job]]:
        for g in sorted(self.jobs):
            for b in chunks(self._todo(g), self.batch_size or 1):
                yield Unit(g[0], g[1], list(b))

    def parameters(self, rt: Runtime, spec: GatewaySpec, unit: Unit[Job]) -> dict[str, Any]:
        g = (unit.domain, unit.snapshot)
        kg = load_graph(rt.wh, unit.domain, unit.snapshot or None) if "tools" in self.modes else None
        return {"spec": spec, "kg": kg, "jobs": unit.items,
                "gold": {q.qa_id: self.gold.get(q.qa_id, []) for q, _, _ in unit.items}, "cfg": self.cfgs[g],
                "run_id": rt.run_id, "index_dir": self.index_dir, "texts": self.plans[g].chunks}

    def write(self, rt: Runtime, unit: Unit[Job], records: list[EvalItem], con: Any) -> list[EvalItem]:
        items = [i.model_copy(update={"item_key": self.keys[(i.qa_id, i.mode, i.view_id)]}) for i in records]
        rt.wh.write("eval_items", items, replace=True, con=con)
        return items

    def summary(self, rt: Runtime, made: list[EvalItem]) -> dict[str, Any]:
        cfg, modes = self.cfg, self.modes
        model = _model(rt, cfg.role)
        complete = [i for i in made if i.kg_setting == "complete"]
        by_mode: dict[str, dict[str, Any]] = {}
        runs = []
        for mode in modes:
            s = summarize(i for i in complete if i.mode == mode)
            by_mode[mode] = s
            runs.append({"run_id": rt.run_id, "mode": mode, "role": cfg.role, "model": model, "split": self.split,
                         "n_items": s["n"], "n_errors": s["errors"], "em": s["em"], "f1": s["f1"], "hit1": s["hit1"],
                         "judge_acc": s["judge_acc"], "mean_rounds": s["mean_rounds"],
                         "mean_repeats": s["mean_repeats"], "created_at": datetime.now()})  # fmt: skip
        rt.wh.write_batch("eval_runs", runs, replace=True)
        table = metrics_table(complete, modes)
        _artifact(table, f"policy evaluation ({model or 'unknown model'}), run {rt.run_id}")
        for mode, s in by_mode.items():
            print(f"{mode}: n={s['n']} em={s['em']} f1={s['f1']} hit1={s['hit1']} judge={s['judge_acc']} "
                  f"errors={s['errors']}")  # fmt: skip
        by_setting = setting_table(made, modes)
        report = None
        if any(i.kg_setting == "incomplete" for i in made):
            pictures = render_settings(by_setting, "tools" if "tools" in modes else modes[0])
            report = write_report(self.settings.data_dir, rt.run_id, model, by_setting, pictures)
            _settings_artifact(by_setting, pictures, model, rt.run_id)
            for r in by_setting:
                print(f"{r['mode']} {r['setting']}: n={r['n']} hits@1={r['hit1_any']} em={r['em']} f1={r['f1']} "
                      f"text search used={r['text_search_share']} per question={r['mean_text_calls']}")  # fmt: skip
            print(f"report: {report}")
        if self.serving:
            print(f"served by vLLM {self.serving.get('vllm_version') or '?'}: {self.serving.get('checkpoint')}")
        return {"model": model, "by_mode": by_mode, "table": table, "serving": self.serving, "prompts": self.prompts,
                "by_setting": by_setting, "report": str(report) if report is not None else None,
                "ikg": [line for plan in self.plans.values() for line in plan.lines]}


def _job_id(job: Job) -> tuple[str, str, str]:
    return job[0].qa_id, job[1], job[2].view_id if job[2] is not None else ""


def _settings_artifact(rows: list[dict[str, Any]], pictures: dict[str, bytes], model: str | None, run_id: str) -> None:
    """The per-setting table and its picture as Prefect artifacts (inside a flow run only)."""
    from prefect.artifacts import create_table_artifact
    from prefect.context import FlowRunContext

    if FlowRunContext.get() is None:
        return
    create_table_artifact(key="eval-settings", table=rows,
                          description=f"policy evaluation by graph setting ({model or 'unknown model'}), run {run_id}")
    _markdown_artifact("eval-settings-picture", artifact_markdown(pictures, f"Evaluation {run_id} by graph setting"),
                       f"Hits@1 and text-search share by graph setting, run {run_id}")


__all__ = ["SettingPlan", "can_reuse", "check_served_prompts", "evaluate_batch", "evaluate_policy",
           "evaluation_card", "finished_items", "latest_setting_table", "metrics_table", "plan_settings",
           "reuse_identity", "write_report"]
