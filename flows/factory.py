"""The end-to-end `factory` flow: corpus -> graphs -> questions -> gold paths -> trajectories -> datasets -> eval.

It runs each stage as a subflow, so every stage keeps its own run record, artifacts and resumability. With
the embedded demo-quality model as extractor, LightRAG graphs come out too sparse for multi-hop questions, so
the factory imports the reference graphs written for the demo corpus and says so; with a real extractor
endpoint, the graphs it built are used.
"""

from __future__ import annotations

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
from schemas.qa import GenMode
from warehouse.db import Warehouse

DEMO_DIR = Path(__file__).resolve().parent / "demo"
DEMO_DOMAINS = ["agriculture", "biology", "cooking", "cs", "history"]


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
    n_rollouts: int = 2,
    distill_limits: dict[str, int] | None = None,
    export_version: str | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Run every stage once. ``corpus``/``reference_graphs`` default to the demo corpus and its reference graphs.

    ``free_seeds`` (default: ``n_seeds``) lets the ``free`` mode run on fewer seeds than ``candidates``.
    ``hop_mix`` is the share of 1-2 and 3+ hop jobs (default: generate-qa's).
    ``distill_limits`` passes ``max_rounds`` / ``max_tokens_per_round`` / ``cot_max_tokens`` to distillation.
    ``min_ball`` / ``max_ball`` bound the seeds' depth-3 neighbourhoods (default: ``settings.seeds``).
    """
    settings = settings or default_settings()
    min_ball, max_ball = seed_ball_bounds(min_ball, max_ball, settings.seeds)
    corpus = corpus or str(DEMO_DIR / "corpus")
    reference_dir = Path(reference_graphs) if reference_graphs else DEMO_DIR / "graphs"
    modes = modes or ["candidates", "free"]
    summary: dict[str, Any] = {}

    built = build_graphs(domains=domains, source=corpus, gleaning=gleaning, settings=settings)
    summary["build"] = {"run_id": built["run_id"], "built": built["built"], "failures": built["failures"]}
    doms = domains or sorted(set(built["built"]) | set(built["failures"]))
    extractor_local = settings.endpoint("extractor").is_local
    use_ref, why = choose_graphs(built["built"], built["reports"], extractor_local,
                                 reference_graph_files(reference_dir, doms))
    for line in why:
        print(line)
    summary["graph_choice"] = why
    if use_ref:
        imported = import_graphs(files=use_ref, settings=settings)
        summary["import"] = {"run_id": imported["run_id"], "imported": imported["imported"], "failures": imported["failures"]}
    # The reports of the graphs later stages use: the built one, or the reference graph that replaced it.
    summary["graph_reports"] = [r for r in built["reports"] if r["domain"] not in use_ref] + (
        imported["reports"] if use_ref else [])

    qa_runs = []
    for mode in modes:
        seeds = n_seeds if mode == "candidates" or free_seeds is None else free_seeds
        if seeds <= 0:
            continue
        qa_runs.append(generate_qa(domains=doms, n_seeds=seeds, modes=[mode], max_attempts=max_attempts, hop_mix=hop_mix,
                                   min_ball=min_ball, max_ball=max_ball, settings=settings))
    summary["qa"] = [{"run_id": r["run_id"], "accepted": r["accepted"], "attempts": r["attempts"], "yields": r["yields"],
                      "seed_notes": r.get("seed_notes", [])} for r in qa_runs]
    gold = verify_paths(domains=doms, settings=settings)
    summary["gold_paths"] = {k: v for k, v in gold.items() if not k.startswith(("llm_", "prompt", "completion"))}
    traj = distill_trajectories(domains=doms, n_rollouts=n_rollouts, settings=settings, **(distill_limits or {}))
    summary["trajectories"] = {"run_id": traj["run_id"], "made": traj["made"], "accepted": traj["accepted"],
                               "by_kind": traj["by_kind"]}
    exported = export_datasets(version=export_version, settings=settings)
    summary["export"] = {"run_id": exported["run_id"], "version": exported["version"], "path": exported["path"],
                         "rows": exported["rows"], "invalid": len(exported["invalid"])}
    with Warehouse(settings.warehouse_path, lock_wait_s=settings.lock_wait_s) as wh:
        n_test = wh.scalar("SELECT count(*) FROM qa WHERE split = 'test'")
    if n_test:
        limits = {k: v for k, v in (distill_limits or {}).items() if k in ("max_rounds", "max_tokens_per_round")}
        ev = evaluate_policy(split="test", modes=("tools", "no_tools"), domains=doms, settings=settings, **limits)
        summary["eval"] = {"run_id": ev["run_id"], "model": ev["model"], "by_mode": ev["by_mode"]}
    else:
        summary["eval"] = None
        print("evaluation skipped: no question landed in the test split")
    summary["warehouse"] = str(settings.warehouse_path)
    return summary
