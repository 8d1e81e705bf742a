"""The end-to-end `factory` flow: corpus -> graphs -> questions -> gold paths -> trajectories -> datasets -> eval.

It runs each stage as a subflow, so every stage keeps its own run record, artifacts and resumability. With
the embedded demo-quality model as extractor, LightRAG graphs come out too sparse for multi-hop questions, so
the factory imports the reference graphs written for the demo corpus and says so; with a real extractor
endpoint, the graphs it built are used.

``DEMO_PLAN`` is what `hopforge demo` asks of the factory on the embedded model: every stage runs, but the stages
the 135M model cannot do well (LightRAG extraction, teacher rollouts, long chain of thought) run on a sample that
shows the path and its reject reasons instead of spending minutes on work that yields nothing.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flows.checks import seed_ball_bounds
from flows.distill import distill_trajectories
from flows.evaluate import evaluate_policy
from flows.export import export_datasets
from flows.graphs import build_graphs, import_graphs
from flows.qa import generate_qa, verify_paths
from flows.runtime import default_settings, hopforge_flow
from schemas.config import Settings
from schemas.errors import InputError
from schemas.qa import GenMode
from schemas.trajectories import TRAJECTORY_KINDS
from warehouse.db import Warehouse

DEMO_DIR = Path(__file__).resolve().parent / "demo"
DEMO_DOMAINS = ["agriculture", "biology", "cooking", "cs", "history"]


@dataclass(frozen=True)
class DemoPlan:
    """What `hopforge demo` runs on the embedded model, sized to finish in minutes on 2 cores.

    ``seeds`` / ``free_seeds``: seeds per domain for candidates / free mode; ``short_share``: share of 1-2 hop jobs
    (few 3+ hop paths of the small demo graphs can be asked). ``build_docs``: documents per domain LightRAG reads
    (one shows the path; the 135M model extracts almost nothing, so the reference graphs are used either way).
    ``deep_questions``: questions that also get teacher rollouts and long CoT (the 135M teacher's are rejected, so a
    handful shows the reject reasons). ``batch_size``: questions per batch task of the gold-path, distillation and
    evaluation stages (the embedded model answers one call at a time, so a batch per question is a task per call).
    ``split_proportions``: the demo graphs give 35 questions, so the test split takes a larger share than the
    factory's 10% (the leak-safe grouping is the same) to hold at least ``min_test_questions``, the fewest an
    evaluation says anything about (tests/test_demo_plan.py checks the plan gives them)."""

    seeds: int = 10
    short_share: float = 0.8
    free_seeds: int = 1
    build_docs: int = 1
    deep_questions: int = 3
    n_rollouts: int = 1
    batch_size: int = 16
    split_proportions: dict[str, float] = field(
        default_factory=lambda: {"train": 0.55, "validation": 0.1, "test": 0.35})
    min_test_questions: int = 10
    #: ``[ikg] levels`` of the demo's export (Graph-RFT's IKG-20% and IKG-40%), unless its config sets some.
    ikg_levels: tuple[float, ...] = (0.2, 0.4)
    #: The IKG levels the demo's evaluation scores: one, as a tool-mode item of the embedded policy costs seconds
    #: (its rounds run to their token budget), and the test split's questions at both levels would add minutes.
    eval_ikg_levels: tuple[float, ...] = (0.4,)
    #: Test questions the demo evaluates (first by id): enough to show the evaluation runs end to end in both modes;
    #: the embedded 135M policy scores nothing a larger sample would tell (``hopforge demo --eval-items 0``: all).
    eval_items: int = 4

    #: What each demo domain's graph covers, as ``[quality] scopes`` says it: the notes it was built from. A question
    #: whose one answer rests on the small graph holding every fact ("who worked at IBM and received the Turing
    #: Award") is true of the notes, not of the world; said within them it is right, and a pin that names its node
    #: alone among the notes' nodes of its kind is refused (``pins_alone``: the steps before would do no work).
    scopes: dict[str, str] = field(default_factory=lambda: {
        "agriculture": "among the crops, people, places and methods of the demo notes on the history of farming",
        "biology": "among the scientists, organisms, ideas and institutions of the demo notes on biology",
        "cooking": "among the foods, cooks, places and ideas of the demo notes on the history of cooking",
        "cs": "among the people, machines and organisations of the demo notes on the history of computing",
        "history": "among the people, places and events of the demo notes on world history",
    })

    def with_scopes(self, settings: Settings) -> Settings:
        """``settings`` with the demo's scope for each demo domain its configuration gives none. The demo's own
        settings only."""
        scopes = {**self.scopes, **settings.quality.scopes}
        settings.quality = settings.quality.model_copy(update={"scopes": scopes})
        return settings

    def with_ikg(self, settings: Settings) -> Settings:
        """``settings`` with the demo's IKG levels, when the configuration asks for none (the global default
        exports no IKG variants), and the whole demo corpus as the IKG text collection, when none is given: the
        warehouse holds only the ``build_docs`` sample LightRAG read, and a hidden fact must be readable in the
        text for its variant to be kept. The demo's own settings only."""
        update: dict[str, Any] = {}
        if not settings.ikg.levels:
            update["levels"] = list(self.ikg_levels)
        if settings.ikg.texts is None:
            update["texts"] = str(DEMO_DIR / "corpus")
        settings.ikg = settings.ikg.model_copy(update=update)
        return settings


DEMO_PLAN = DemoPlan()


def sample_corpus(corpus: str, per_domain: int, dest: Path) -> str:
    """A copy of the first ``per_domain`` text files (by name) of each domain of the folder corpus ``corpus``, in
    ``dest`` (replaced): the documents a sampled LightRAG build reads. ``InputError`` for a corpus that is not a
    folder or a count below 1."""
    from tasks.corpus.ingest import TEXT_EXTENSIONS, _plan_folder

    if per_domain < 1:
        raise InputError(f"build_docs must be >= 1 (documents per domain LightRAG reads), got {per_domain}")
    if not Path(corpus).is_dir():
        raise InputError(f"build_docs needs a corpus folder (one subfolder per domain); {corpus} is not a folder")
    by_domain: dict[str, list[Path]] = {}
    for domain, f, _ in _plan_folder(Path(corpus), TEXT_EXTENSIONS):
        by_domain.setdefault(domain, []).append(f)
    shutil.rmtree(dest, ignore_errors=True)
    for domain, files in by_domain.items():
        (dest / domain).mkdir(parents=True)
        for f in sorted(files, key=lambda p: p.name)[:per_domain]:
            shutil.copyfile(f, dest / domain / f.name)
    return str(dest)


def build_line(built: dict[str, Any], graph_choice: list[str], build_docs: int | None) -> str:
    """One line saying what the LightRAG build yielded over all domains and which graphs later stages use."""
    entities = sum(b["entities"] for b in built.values())
    relations = sum(b["relations"] for b in built.values())
    docs = sum(b["documents"] for b in built.values())
    read = f"{build_docs} document(s) per domain ({docs} in all)" if build_docs else f"{docs} documents"
    empty = [d for d, b in built.items() if not b["entities"]]
    yielded = ("0 entities in every domain" if built and len(empty) == len(built) else
               f"{entities} entities and {relations} relations ({len(empty)} of {len(built)} domains empty)")
    on_ref = [line.split(":", 1)[0] for line in graph_choice if "reference graph" in line]
    uses = ("the reference graphs" if on_ref and len(on_ref) == len(graph_choice) else
            f"the reference graphs of {', '.join(on_ref)}" if on_ref else "the built graphs")
    return f"LightRAG read {read}: {yielded}; later stages use {uses}"


def deep_question_ids(wh: Warehouse, domains: list[str], n: int) -> list[str]:
    """``n`` questions for rollouts and long CoT, one domain at a time in turn so the handful covers the domains;
    within a domain, train-split questions (the ones SFT learns from) before the others, then by qa_id."""
    rows = wh.query("SELECT domain, qa_id FROM qa WHERE domain IN (SELECT unnest(?::VARCHAR[])) "
                    "ORDER BY split IS DISTINCT FROM 'train', domain, qa_id", [domains])
    queues: dict[str, list[str]] = {}
    for r in rows:
        queues.setdefault(r["domain"], []).append(r["qa_id"])
    picked: list[str] = []
    while len(picked) < n and any(queues.values()):
        for q in queues.values():
            if q and len(picked) < n:
                picked.append(q.pop(0))
    return picked


@contextmanager
def timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    """Add the wall time of the block to ``timings[stage]`` (seconds), so the summary says where the minutes went."""
    t0 = time.monotonic()
    try:
        yield
    finally:
        timings[stage] = round(timings.get(stage, 0.0) + time.monotonic() - t0, 1)


def reference_graph_files(reference_dir: Path, domains: list[str]) -> dict[str, str]:
    return {d: str(reference_dir / f"{d}.jsonl") for d in domains if (reference_dir / f"{d}.jsonl").exists()}


def choose_graphs(built: dict[str, Any], reports: list[dict[str, Any]], extractor_is_local: bool,
                  reference: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """Which domains need the reference graph, and why (one line per domain)."""
    by_domain = {r["domain"]: r for r in reports}
    use_reference: dict[str, str] = {}
    lines: list[str] = []
    for domain in sorted(set(built) | set(reference)):
        rep = by_domain.get(domain)
        got = (f"{rep['n_nodes']} nodes, {rep['n_edges']} edges, {rep['seed_eligible']} seed-eligible"
               if rep else f"{built.get(domain, {}).get('entities', 0)} entities (no usable graph)")
        usable = rep is not None and rep["verdict"] == "usable"
        if domain in reference and (extractor_is_local or not usable):
            use_reference[domain] = reference[domain]
            why = ("the extractor is the embedded demo-quality model" if extractor_is_local else
                   f"the built graph is {rep['verdict'] if rep else 'missing'}")
            lines.append(f"{domain}: LightRAG build gave {got}; later stages use the reference graph ({why})")
        else:
            lines.append(f"{domain}: LightRAG build gave {got}; later stages use this built graph")
    return use_reference, lines


@hopforge_flow(name="factory", log_prints=True)
def factory(
    corpus: str | None = None,
    reference_graphs: str | None = None,
    domains: list[str] | None = None,
    n_seeds: int = 20,
    modes: list[GenMode] | None = None,
    free_seeds: int | None = None,
    hop_mix: dict[str, float] | None = None,
    max_attempts: int = 3,
    min_ball: int | None = None,
    max_ball: int | None = None,
    gleaning: int | None = None,
    build_docs: int | None = None,
    split_proportions: dict[str, float] | None = None,
    n_rollouts: int = 2,
    deep_questions: int | None = None,
    distill_limits: dict[str, int] | None = None,
    batch_size: int | None = None,
    export_version: str | None = None,
    eval_ikg_levels: list[float] | None = None,
    eval_limit: int | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Run every stage once. ``corpus``/``reference_graphs`` default to the demo corpus and its reference graphs.

    ``free_seeds`` (default: ``n_seeds``) lets the ``free`` mode run on fewer seeds than ``candidates``.
    ``hop_mix`` is the share of 1-2 and 3+ hop jobs (default: generate-qa's).
    ``build_docs`` (default: all) is how many documents per domain of a folder corpus LightRAG reads.
    ``split_proportions`` (default: generate-qa's 80/10/10) are the train/validation/test shares.
    ``deep_questions`` (default: all) is how many questions get teacher rollouts and long CoT besides their
    template trajectory; 0 skips those two kinds.
    ``distill_limits`` passes ``max_rounds`` / ``max_tokens_per_round`` / ``cot_max_tokens`` to distillation.
    ``batch_size`` (default: each endpoint's ``max_concurrency``) is the questions per batch task of gold paths,
    distillation and evaluation: an endpoint that answers one call at a time would otherwise cost a task per question.
    ``min_ball`` / ``max_ball`` bound the seeds' depth-3 neighbourhoods (default: ``settings.seeds``).
    ``eval_ikg_levels`` are the IKG levels the evaluation scores too (default: ``[ikg] levels``; ``[]``: none);
    ``eval_limit`` evaluates at most that many test questions (first by id; default: all).
    The summary's ``timings`` holds each stage's wall time in seconds.
    """
    settings = settings or default_settings()
    min_ball, max_ball = seed_ball_bounds(min_ball, max_ball, settings.seeds)
    if deep_questions is not None and deep_questions < 0:
        raise InputError(f"deep_questions must be >= 0 (questions that get rollouts and long CoT), "
                         f"got {deep_questions}")
    timings: dict[str, float] = {}
    summary: dict[str, Any] = {"timings": timings}
    doms = _graphs(summary, corpus, reference_graphs, domains, gleaning, build_docs, settings)
    _questions(summary, doms, modes or ["candidates", "free"], n_seeds=n_seeds, free_seeds=free_seeds,
               max_attempts=max_attempts, hop_mix=hop_mix, min_ball=min_ball, max_ball=max_ball,
               split_proportions=split_proportions, settings=settings)
    with timed(timings, "gold paths"):
        gold = verify_paths(domains=doms, batch_size=batch_size, settings=settings)
    summary["gold_paths"] = {k: v for k, v in gold.items() if not k.startswith(("llm_", "prompt", "completion"))}
    summary["trajectories"], summary["deep_trajectories"] = _distill(
        doms, n_rollouts, deep_questions, {**(distill_limits or {}), "batch_size": batch_size}, settings, timings)
    _export(summary, export_version, settings)
    _evaluation(summary, doms, batch_size, eval_limit, eval_ikg_levels, distill_limits, settings)
    summary["warehouse"] = str(settings.warehouse_path)
    return summary


def _graphs(summary: dict[str, Any], corpus: str | None, reference_graphs: str | None, domains: list[str] | None,
            gleaning: int | None, build_docs: int | None, settings: Settings) -> list[str]:
    """Build the domains' graphs from ``corpus`` (default: the demo corpus), import the reference graph of each
    domain whose built graph is too thin to ask questions of (``choose_graphs``), and return the domains."""
    timings = summary["timings"]
    corpus = corpus or str(DEMO_DIR / "corpus")
    reference_dir = Path(reference_graphs) if reference_graphs else DEMO_DIR / "graphs"
    build_source = (sample_corpus(corpus, build_docs, settings.data_dir / "build-sample")
                    if build_docs is not None else corpus)
    with timed(timings, "graph build"):
        built = build_graphs(domains=domains, source=build_source, gleaning=gleaning, settings=settings)
    summary["build"] = {"run_id": built["run_id"], "built": built["built"], "failures": built["failures"]}
    doms = domains or sorted(set(built["built"]) | set(built["failures"]))
    extractor_local = settings.endpoint("extractor").is_local
    use_ref, why = choose_graphs(built["built"], built["reports"], extractor_local,
                                 reference_graph_files(reference_dir, doms))
    for line in why:
        print(line)
    summary["graph_choice"] = why
    summary["build_line"] = build_line(built["built"], why, build_docs)
    if use_ref:
        with timed(timings, "graph import"):
            imported = import_graphs(files=use_ref, settings=settings)
        summary["import"] = {"run_id": imported["run_id"], "imported": imported["imported"], "failures": imported["failures"]}
    # The reports of the graphs later stages use: the built one, or the reference graph that replaced it.
    summary["graph_reports"] = [r for r in built["reports"] if r["domain"] not in use_ref] + (
        imported["reports"] if use_ref else [])
    return doms


def _questions(summary: dict[str, Any], doms: list[str], modes: list[GenMode], *, n_seeds: int,
               free_seeds: int | None, settings: Settings, **generate: Any) -> None:
    """One ``generate-qa`` run per mode (``free`` on ``free_seeds`` when given)."""
    qa_runs = []
    with timed(summary["timings"], "questions"):
        for mode in modes:
            seeds = n_seeds if mode == "candidates" or free_seeds is None else free_seeds
            if seeds <= 0:
                continue
            qa_runs.append(generate_qa(domains=doms, n_seeds=seeds, modes=[mode], settings=settings, **generate))
    summary["qa"] = [{"run_id": r["run_id"], "accepted": r["accepted"], "attempts": r["attempts"], "yields": r["yields"],
                      "seed_notes": r.get("seed_notes", [])} for r in qa_runs]


def _export(summary: dict[str, Any], export_version: str | None, settings: Settings) -> None:
    """The export, and how many questions each split holds."""
    with timed(summary["timings"], "export"):
        exported = export_datasets(version=export_version, settings=settings)
    summary["export"] = {"run_id": exported["run_id"], "version": exported["version"], "path": exported["path"],
                         "rows": exported["rows"], "invalid": len(exported["invalid"]),
                         "ikg": exported.get("ikg", [])}
    with Warehouse(settings.warehouse_path, lock_wait_s=settings.lock_wait_s) as wh:
        summary["splits"] = {r["split"]: int(r["n"]) for r in wh.query(
            "SELECT split, count(*) AS n FROM qa WHERE split IS NOT NULL GROUP BY split ORDER BY split")}


def _evaluation(summary: dict[str, Any], doms: list[str], batch_size: int | None, eval_limit: int | None,
                eval_ikg_levels: list[float] | None, distill_limits: dict[str, int] | None,
                settings: Settings) -> None:
    """The policy on the test split in both modes; skipped, said, when no question landed there."""
    if not summary["splits"].get("test"):
        summary["eval"] = None
        print("evaluation skipped: no question landed in the test split")
        return
    limits = {k: v for k, v in (distill_limits or {}).items() if k in ("max_rounds", "max_tokens_per_round")}
    with timed(summary["timings"], "evaluation"):
        ev = evaluate_policy(split="test", modes=("tools", "no_tools"), domains=doms, batch_size=batch_size,
                             limit=eval_limit, ikg_levels=eval_ikg_levels, settings=settings, **limits)
    summary["eval"] = {"run_id": ev["run_id"], "model": ev["model"], "by_mode": ev["by_mode"], "limit": eval_limit}


def _distill(domains: list[str], n_rollouts: int, deep_questions: int | None, limits: dict[str, Any],
             settings: Settings, timings: dict[str, float]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Template trajectories for every question; rollouts and long CoT for all of them or ``deep_questions``
    (module docstring); ``limits`` are further parameters of the distillation (budgets, batch size). Returns the
    summaries of the run over every question and of the sampled run (or None)."""

    def brief(r: dict[str, Any]) -> dict[str, Any]:
        # Only the kinds this run made (the flow's table also lists kinds earlier runs stored).
        return {"run_id": r["run_id"], "made": r["made"], "accepted": r["accepted"],
                "by_kind": [k for k in r["by_kind"] if k["trajectories"]]}

    if deep_questions is None:
        with timed(timings, "trajectories"):
            every = distill_trajectories(domains=domains, n_rollouts=n_rollouts, settings=settings, **limits)
        return brief(every), None
    with timed(timings, "trajectories"):
        every = brief(distill_trajectories(domains=domains, kinds=("template",), settings=settings, **limits))
    deep_kinds = tuple(k for k in TRAJECTORY_KINDS if k != "template")
    if not deep_questions:
        print(f"{' and '.join(deep_kinds)} skipped (deep_questions=0)")
        return every, {"questions": 0, "skipped": f"deep_questions=0: no {' or '.join(deep_kinds)} trajectories"}
    with Warehouse(settings.warehouse_path, lock_wait_s=settings.lock_wait_s) as wh:
        picked = deep_question_ids(wh, domains, deep_questions)
    if not picked:
        return every, {"questions": 0, "skipped": "no question to run them on"}
    with timed(timings, "rollouts and long CoT"):
        deep = distill_trajectories(domains=domains, kinds=deep_kinds, qa_ids=picked, n_rollouts=n_rollouts,
                                    settings=settings, **limits)
    return every, {"questions": len(picked), **brief(deep)}
