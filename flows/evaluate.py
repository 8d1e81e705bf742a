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
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from eval.evaluate import MODES, EvalConfig, EvalItem, Mode, TrainedAs, evaluate_item, item_key, reusable
from eval.metrics import aggregate, summarize
from flows.distill import load_gold_paths
from flows.batches import BatchResult, batch_runner, chunks, endpoint_concurrency, run_batches, typical_size
from flows.checks import check_domain_names, check_domains_in
from flows.progress import Progress
from flows.tools_env import snapshot_tool_env
from gateway.loop import run_shared
from gateway.spec import GatewaySpec
from flows.qa import load_qa
from flows.runtime import Runtime, default_settings, flow_parameters, hopforge_flow, open_run
from gateway.client import EndpointUnavailable
from schemas.config import Settings
from schemas.errors import InputError
from schemas.qa import QA, SPLITS, GoldPath, Split
from tasks.graph.kg import KnowledgeGraph
from warehouse.graphs import load_graph


@task(name="evaluate-batch", retries=1, retry_delay_seconds=5, cache_policy=NO_CACHE)
def evaluate_batch(spec: GatewaySpec, kg: KnowledgeGraph | None, jobs: list[tuple[QA, str]],
                   gold: dict[str, list[GoldPath]], cfg: EvalConfig, run_id: str, index_dir: str) -> BatchResult[EvalItem]:
    """The scored items of one batch (one graph snapshot), concurrently (the gateway's limiter paces the policy
    endpoint); with ``kg`` the tools run over it, built where the task runs."""
    gateway = spec.open()
    env = snapshot_tool_env(kg, spec.settings.embeddings, index_dir, cfg.tools) if kg is not None else None

    async def go() -> list[EvalItem]:
        try:
            return await gateway.gather(
                evaluate_item(gateway, env, qa, mode, cfg, gold.get(qa.qa_id, []), run_id=run_id)
                for qa, mode in jobs
            )
        finally:
            await gateway.aclose()

    return BatchResult(run_shared(go()), gateway.ledger.snapshot())


def check_eval_params(modes: Sequence[str], split: str | None, batch_size: int | None, limit: int | None,
                      domains: Sequence[str] | None = None) -> tuple[str, ...]:
    """The modes in canonical order; ``InputError`` (before any work) for bad parameters."""
    check_domain_names(domains)
    wanted = list(dict.fromkeys(modes))
    unknown = [m for m in wanted if m not in MODES]
    if unknown or not wanted:
        raise InputError(f"unknown or no mode(s) {unknown or wanted}; choose from {', '.join(MODES)}")
    if split is not None and split not in SPLITS:
        raise InputError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
    if batch_size is not None and batch_size < 1:
        raise InputError(f"batch_size must be >= 1, got {batch_size}")
    if limit is not None and limit < 1:
        raise InputError(f"limit (--limit) must be >= 1, got {limit}")
    return tuple(m for m in MODES if m in wanted)


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
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Evaluate the ``policy`` role on the stored questions; see the module docstring. ``batch_size`` (items per
    batch task) defaults to the policy endpoint's ``max_concurrency``; ``reuse=False`` measures items again that an
    earlier run finished with the same key. ``trained_as`` (``think`` | ``no_think``): the policy is a checkpoint
    trained on hopforge's exports with those rows, evaluated in the context it was trained in
    (``EvalConfig.for_checkpoint``); ``None``: any model, tools listed in the system prompt. ``serving`` is the
    record of the server that answers (``training.serve.VLLMServer.record``: checkpoint, format, vLLM version),
    stored with the run's parameters and returned. Returns
    ``{"run_id", "by_mode": {mode: {n, em, f1, hit1, judge_acc, ...}}, "table", "serving"}``."""
    settings = settings or default_settings()
    served = (serving or {}).get("checkpoint_fingerprint")
    if served and settings.cache.scope == "global":
        # a checkpoint served under a name an earlier one used must not get that one's cached answers
        settings = settings.model_copy(update={"cache": settings.cache.model_copy(update={"scope": f"served-{served}"})})
    modes = check_eval_params(modes, split, batch_size, limit, domains)
    common = {"max_rounds": max_rounds, "max_tokens_per_round": max_tokens_per_round, "use_judge": use_judge}
    cfg = EvalConfig.for_checkpoint(trained_as, **common) if trained_as is not None else EvalConfig(**common)
    params = flow_parameters(evaluate_policy, locals())
    with open_run("evaluate-policy", params, settings) as rt, batch_runner(settings.runner, rt.gateway) as runner:
        spec = runner.spec(cfg.role, *(["judge"] if use_judge else []))
        check_domains_in(rt.wh, domains)
        where, args = "TRUE", []
        if split is not None:
            where, args = where + " AND split = ?", [*args, split]
        if domains:
            where, args = where + " AND domain IN (SELECT unnest(?::VARCHAR[]))", [*args, list(domains)]
        qas = load_qa(rt, where, args)[:limit] if limit else load_qa(rt, where, args)
        if not qas:
            raise InputError(f"no questions for split={split!r}, domains={domains}: run `generate-qa` first")
        gold = load_gold_paths(rt.wh, [q.qa_id for q in qas])
        print(f"evaluating {len(qas)} questions in mode(s) {', '.join(modes)}")
        identity = reuse_identity(settings, [cfg.role, *([cfg.judge_role] if use_judge else [])], "tools" in modes)
        if served:
            identity["served_checkpoint"] = served
        keys = {(q.qa_id, m): item_key(q, m, cfg, gold.get(q.qa_id, []), identity) for q in qas for m in modes}
        found = finished_items(rt, sorted(set(keys.values()))) if reuse and can_reuse(settings) else {}
        made: list[EvalItem] = []
        bar = Progress("evaluate-policy", len(qas) * len(modes), "evaluating the policy")
        if found:
            copied = [found[keys[(q.qa_id, m)]].model_copy(update={"run_id": rt.run_id})
                      for m in modes for q in qas if keys[(q.qa_id, m)] in found]  # fmt: skip
            with rt.wh.transaction() as con:
                rt.wh.write("eval_items", copied, replace=True, con=con)
            made += copied
            bar.advance(len(copied))
            print(f"{len(copied)} of {len(keys)} items finished earlier with the same questions, settings, endpoints "
                  "and code: copied (reuse=False measures them again)")  # fmt: skip
        groups: dict[tuple[str, str], list[QA]] = {}
        for q in qas:
            groups.setdefault((q.domain, q.snapshot_id or ""), []).append(q)
        index_dir = str((settings.data_dir / "indexes").resolve())
        concurrency = endpoint_concurrency(spec, cfg.role, *(["judge"] if use_judge else []))
        batch_size = batch_size or concurrency
        work = [(domain, snap, b) for (domain, snap), group in sorted(groups.items())
                for b in chunks([(q, m) for m in modes for q in group if keys[(q.qa_id, m)] not in found], batch_size)]
        batches = run_batches(evaluate_batch, work, runner=runner, parameters=lambda w: {
            "spec": spec, "kg": load_graph(rt.wh, w[0], w[1] or None) if "tools" in modes else None,
            "jobs": list(w[2]), "gold": {q.qa_id: gold.get(q.qa_id, []) for q, _ in w[2]}, "cfg": cfg,
            "run_id": rt.run_id, "index_dir": index_dir},
            in_flight=runner.in_flight(typical_size([w[2] for w in work], batch_size), concurrency))  # fmt: skip
        for (_, _, batch), done in batches:
            items: list[EvalItem] = [i.model_copy(update={"item_key": keys[(i.qa_id, i.mode)]}) for i in done.records]
            with rt.wh.transaction() as con:  # a batch lands whole or not at all
                rt.wh.write("eval_items", items, replace=True, con=con)
            made += items
            bar.advance(len(batch))
            rt.flush_usage()
        model = _model(rt, cfg.role)
        by_mode: dict[str, dict[str, Any]] = {}
        runs = []
        for mode in modes:
            s = summarize(i for i in made if i.mode == mode)
            by_mode[mode] = s
            runs.append({"run_id": rt.run_id, "mode": mode, "role": cfg.role, "model": model, "split": split,
                         "n_items": s["n"], "n_errors": s["errors"], "em": s["em"], "f1": s["f1"], "hit1": s["hit1"],
                         "judge_acc": s["judge_acc"], "mean_rounds": s["mean_rounds"],
                         "mean_repeats": s["mean_repeats"], "created_at": datetime.now()})  # fmt: skip
        rt.wh.write_batch("eval_runs", runs, replace=True)
        table = metrics_table(made, modes)
        _artifact(table, f"policy evaluation ({model or 'unknown model'}), run {rt.run_id}")
        for mode, s in by_mode.items():
            print(f"{mode}: n={s['n']} em={s['em']} f1={s['f1']} hit1={s['hit1']} judge={s['judge_acc']} "
                  f"errors={s['errors']}")  # fmt: skip
        if serving:
            print(f"served by vLLM {serving.get('vllm_version') or '?'}: {serving.get('checkpoint')}")
        return {"run_id": rt.run_id, "model": model, "by_mode": by_mode, "table": table, "serving": serving,
                **rt.gateway.ledger.totals()}


__all__ = ["can_reuse", "check_eval_params", "evaluate_batch", "evaluate_policy", "finished_items", "metrics_table",
           "reuse_identity"]
