"""The `hopforge` command. Every command runs a Prefect flow or reads the warehouse; problems a person can fix print
one line and exit with status 2. Flows record their runs in the Prefect API that PREFECT_API_URL names, else in
hopforge's own server when `hopforge server start` left one up (flows.prefect_server), else in a temporary server
Prefect starts for the one command (10-30 s)."""

from __future__ import annotations

import atexit
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from flows.cli_options import model_command
from flows.params import (DOMAIN_FLAGS, DOMAINS_HELP, BuildGraphs, Demo, DistillTrajectories, Doctor, EvaluatePolicy,
                          ExportDatasets, ExportProfiles, GenerateQA, ImportGraphs, ImportProfiles, IngestCorpus,
                          Refresh, ReportGraphs, Smoke, TrainRL, TrainSFT, VerifyPaths)
from schemas.errors import HopforgeError, InputError

# Prefect's first ephemeral start migrates a SQLite database (25-30 s on 2 cores); analytics would try the network.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

app = typer.Typer(add_completion=False, no_args_is_help=True, help="hopforge: grounded multi-hop QA data from knowledge graphs.")
config_app = typer.Typer(no_args_is_help=True, help="Inspect the resolved configuration.")
warehouse_app = typer.Typer(no_args_is_help=True, help="Inspect, export, check, back up and restore the warehouse.")
app.add_typer(config_app, name="config")
graph_app = typer.Typer(no_args_is_help=True, help="Build, import and report knowledge graphs.")
app.add_typer(warehouse_app, name="warehouse")
app.add_typer(graph_app, name="graph")
qa_app = typer.Typer(no_args_is_help=True, help="Generate and verify multi-hop questions.")
app.add_typer(qa_app, name="qa")
traj_app = typer.Typer(no_args_is_help=True, help="Distill tool-use and long chain-of-thought trajectories.")
app.add_typer(traj_app, name="traj")
eval_app = typer.Typer(no_args_is_help=True, help="Evaluate the policy role on held-out questions.")
app.add_typer(eval_app, name="eval")
train_app = typer.Typer(no_args_is_help=True, help="Train on an export: LLaMA-Factory SFT, verl / TRL RL, serve a checkpoint.")
app.add_typer(train_app, name="train")

out = Console()
err = Console(stderr=True)

ConfigOpt = Annotated[Optional[Path], typer.Option("--config", "-c", help="TOML/YAML config file (or HOPFORGE_CONFIG).")]
GgufOpt = Annotated[Optional[Path], typer.Option("--gguf", help="GGUF model file for the embedded server.")]


def _settings(config: Path | None, gguf: Path | None = None, **overrides: Any):
    from schemas.config import load_settings

    settings = load_settings(config, **overrides)
    if gguf is not None:
        if not gguf.exists():
            raise _UserError(f"--gguf {gguf}: no such file")
        settings.local_model.gguf = gguf
    return settings


class _UserError(InputError):
    """A command-line option a person got wrong."""


def _preflight_warehouse(settings) -> None:
    """Open the warehouse for writing and close it again before a flow starts: a locked, damaged or misplaced
    warehouse is one clear line at once, not a flow run that fails."""
    from flows.checks import writable_folder
    from warehouse.db import Warehouse

    writable_folder(settings.data_dir, "the data dir")  # DuckDB writes its .wal there at the first commit
    with Warehouse(settings.warehouse_path, lock_wait_s=settings.lock_wait_s):
        pass


def _check_domains(settings, domains: list[str] | None) -> None:
    """Domain names a person typed must be ones the warehouse knows, before a flow starts."""
    from flows.checks import check_domain_names, check_domains_in
    from warehouse.db import Warehouse

    check_domain_names(domains)
    if domains and settings.warehouse_path.is_file():
        with Warehouse(settings.warehouse_path, read_only=True, lock_wait_s=settings.lock_wait_s) as wh:
            check_domains_in(wh, domains)


class _Bars:
    """Terminal progress bars fed by flows.progress (one bar per key)."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=err, transient=False)
        self.tasks: dict[str, Any] = {}

    def __call__(self, key: str, done: int, total: int, description: str) -> None:
        if key not in self.tasks:
            self.tasks[key] = self.progress.add_task(description, total=total or None)
        self.progress.update(self.tasks[key], completed=done, total=total or None, description=description)

    def __enter__(self):
        from flows.progress import listen

        self._listen = listen(self)
        self._listen.__enter__()
        self.progress.start()
        return self

    def __exit__(self, *exc):
        self.progress.stop()
        self._listen.__exit__(*exc)


def _run(fn):
    """Run a command body, turning the project's expected failures (``HopforgeError``) into one clear line and the
    error's exit status; anything else is a bug and keeps its traceback."""
    try:
        return fn()
    except HopforgeError as exc:
        err.print(f"[bold red]{exc.label}:[/] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(exc.exit_code) from None
    finally:
        from gateway.local import stop_shared_servers

        stop_shared_servers()


def verb(group: typer.Typer, name: str, model: type) -> Any:
    """A verb whose options are the fields of a flow's parameter model (``flows.cli_options``); its body runs
    under ``_run``, the model's check included."""
    return model_command(group, name, model, _run)


@verb(app, "doctor", Doctor)
def doctor(p: Doctor, config: ConfigOpt = None, gguf: GgufOpt = None) -> None:
    """Check every configured endpoint, the embedding model and the warehouse; record a run."""
    from flows.doctor import doctor as doctor_flow

    result = doctor_flow(**p.flow_kwargs(), settings=_settings(config, gguf))
    out.print(f"warehouse: {result['warehouse']}  run: {result['run_id']}")
    if not result["ok"]:
        err.print("[bold red]doctor: some checks failed[/] (see above)")
        raise typer.Exit(1)


@verb(app, "smoke", Smoke)
def smoke(p: Smoke, config: ConfigOpt = None, gguf: GgufOpt = None) -> None:
    """Run the smoke flow: a few structured LLM calls, written to the warehouse and exported to Parquet."""
    from flows.smoke import smoke as smoke_flow

    result = smoke_flow(**p.flow_kwargs(), settings=_settings(config, gguf))
    out.print(f"smoke run {result['run_id']}: {result['valid']}/{result['total']} valid; parquet: {result['export']}")


def _ball_bounds(settings, min_ball: int | None, max_ball: int | None) -> None:
    """The seed ball bounds, given or configured, checked together before Prefect starts."""
    from flows.checks import check_ball_bounds, seed_ball_bounds

    check_ball_bounds(min_ball, max_ball)
    seed_ball_bounds(min_ball, max_ball, settings.seeds)


@verb(app, "demo", Demo)
def demo(p: Demo, config: ConfigOpt = None, gguf: GgufOpt = None) -> None:
    """The main job: doctor, smoke, then every factory stage on the demo corpus, sized for minutes on 2 cores
    (flows.factory.DEMO_PLAN): LightRAG on one document a domain, gold paths and a template trajectory for every
    question, rollouts and long CoT on a few, at least 10 questions in the test split, of which the evaluation
    scores a few (``--eval-items``) to show it runs: the embedded policy's scores say nothing more on all of them."""
    import time

    from flows.doctor import doctor as doctor_flow
    from flows.factory import DEMO_PLAN, factory
    from flows.smoke import smoke as smoke_flow

    started = time.monotonic()
    # the export holds IKG-20% and IKG-40% variants; questions are said within the notes each graph was built from
    settings = DEMO_PLAN.with_scopes(DEMO_PLAN.with_ikg(_settings(config, gguf)))
    _ball_bounds(settings, p.min_ball, p.max_ball)
    if settings.endpoint("extractor").is_local:
        # The embedded model rambles to max_tokens; short answers keep the demo build to a few minutes.
        settings.roles.extractor.sampling.max_tokens = min(settings.roles.extractor.sampling.max_tokens, 256)
    t0 = time.monotonic()
    d = doctor_flow(settings=settings)
    if not d["ok"]:
        err.print("[bold red]doctor: some checks failed[/] (see above); fix them before running the factory")
        raise typer.Exit(1)
    t1 = time.monotonic()
    s = smoke_flow(settings=settings)
    t2 = time.monotonic()
    local_teacher = settings.endpoint("teacher").is_local
    # The 135M model writes until max_tokens; tight budgets keep its trajectories to minutes, not hours.
    limits = {"max_tokens_per_round": 256, "cot_max_tokens": 384} if local_teacher else None
    with _Bars():
        f = factory(**p.factory_kwargs(), gleaning=0 if settings.endpoint("extractor").is_local else None,
                    build_docs=DEMO_PLAN.build_docs, split_proportions=DEMO_PLAN.split_proportions,
                    n_rollouts=DEMO_PLAN.n_rollouts if local_teacher else 2, distill_limits=limits,
                    batch_size=DEMO_PLAN.batch_size, eval_ikg_levels=list(DEMO_PLAN.eval_ikg_levels),
                    settings=settings)
    f["timings"] = {"doctor": round(t1 - t0, 1), "smoke": round(t2 - t1, 1), **f["timings"],
                    "total": round(time.monotonic() - started, 1)}
    f["record"] = str(_write_demo_record(settings.data_dir / "demo-summary.json", f))
    f["accepted_questions"] = accepted_questions(settings)
    _demo_summary(settings, d, s, f)
    _check_demo_test_split(f["splits"], DEMO_PLAN.min_test_questions)


def _check_demo_test_split(splits: dict[str, int], least: int) -> None:
    """The demo fails, after its summary, when its test split is too small for the evaluation to say anything."""
    n_test = splits.get("test", 0)
    if n_test < least:
        raise _UserError(f"the demo's test split holds {n_test} question(s), fewer than the {least} its evaluation "
                         "needs to say anything; raise --seeds (or --short-share: 1-2 hop jobs give most questions)")


def demo_record(f: dict[str, Any]) -> dict[str, Any]:
    """What a demo run did, for a file beside its warehouse: per-stage seconds, questions per mode and split,
    trajectories and their reject reasons, scores, and where the datasets went (``bench/bench_demo.py`` keeps it)."""

    def kinds(t: dict[str, Any] | None) -> list[dict[str, Any]]:
        return [{k: r[k] for k in ("kind", "questions", "trajectories", "accepted", "reject_reasons")}
                for r in (t or {}).get("by_kind", [])]

    deep = f.get("deep_trajectories") or {}
    return {
        "timings_s": f["timings"],
        "lightrag": f["build_line"],
        "questions": [{"run_id": q["run_id"], "accepted": q["accepted"], "attempts": q["attempts"]} for q in f["qa"]],
        "splits": f["splits"],
        "gold_paths": {k: f["gold_paths"][k] for k in ("questions", "mean_candidates", "mean_verified")},
        "trajectories": kinds(f["trajectories"]),
        "rollouts_and_cot": {"questions": deep.get("questions", 0), "skipped": deep.get("skipped"),
                             "by_kind": kinds(deep)},
        "eval": {m: {k: st[k] for k in ("n", "em", "f1", "hit1")} for m, st in (f.get("eval") or {}).get(
            "by_mode", {}).items()},
        "export": {"version": f["export"]["version"], "rows": f["export"]["rows"], "ikg": f["export"].get("ikg", [])},
    }


def _write_demo_record(path: Path, f: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(demo_record(f), indent=2, sort_keys=True) + "\n")
    return path


def _minutes(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


def _prefect_ui() -> str:
    """Where the run history can be opened: the UI of the Prefect server the runs went to, else how to start one
    (a temporary server's runs stay in PREFECT_HOME's database, which a started server shows)."""
    from flows.prefect_server import server_url

    url = server_url()
    if url:
        return f"{url} (the runs, artifacts and yields of this demo)"
    return ("no Prefect server is up (this demo ran on a temporary one); `hopforge server start` starts one that "
            "shows these runs, at the address it prints")


def _prefect_home_export() -> str | None:
    """The line a user's shell needs so its later commands use this demo's Prefect server and database: the
    Makefile sets PREFECT_HOME to the repository's ``.prefect``, which a plain shell lacks, so its commands would
    look in ``~/.prefect`` and start a temporary server instead. None when PREFECT_HOME is Prefect's default."""
    import shlex

    from flows.prefect_server import prefect_home

    home = prefect_home().resolve()
    if not os.environ.get("PREFECT_HOME") or home == Path("~/.prefect").expanduser().resolve():
        return None
    return f"export PREFECT_HOME={shlex.quote(str(home))}"


def accepted_questions(settings) -> list[dict[str, Any]]:
    """Every accepted question of the warehouse with its domain, answer, path and program (JSON), by domain."""
    from warehouse.db import Warehouse

    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        return wh.query("SELECT domain, question, answer, path, program FROM qa ORDER BY domain, qa_id")


def _print_accepted(rows: list[dict[str, Any]]) -> None:
    """Every accepted question with its answer and its program (steps and pins): what a reader checks a question
    against."""
    from schemas.programs import QueryProgram
    from tasks.qa.programs import program_lines

    if not rows:
        return
    out.print(f"accepted questions ({len(rows)}), each with its program:")
    for r in rows:
        out.print(f"  [{r['domain']}] {r['question']}  -> {r['answer']}", highlight=False, markup=False,
                  soft_wrap=True)
        if r["program"]:
            for line in program_lines(QueryProgram.model_validate_json(r["program"])):
                out.print(f"      {line}", highlight=False, markup=False, soft_wrap=True)
        else:
            out.print(f"      path: {' / '.join(json.loads(r['path']) if isinstance(r['path'], str) else r['path'])}",
                      highlight=False, markup=False, soft_wrap=True)


def _demo_summary(settings, d: dict[str, Any], s: dict[str, Any], f: dict[str, Any]) -> None:
    out.rule("hopforge demo")
    out.print(f"doctor: all checks passed (run {d['run_id']})")
    out.print(f"smoke:  {s['valid']}/{s['total']} valid, {s['llm_calls']} LLM calls, {s['llm_cache_hits']} cache hits")
    b = f["build"]
    out.print(f"graphs: {f['build_line']} (run {b['run_id']})", highlight=False, markup=False, soft_wrap=True)
    for line in f["graph_choice"]:
        if "reference graph" not in line:  # a domain on its built graph says so; the others share the line above
            out.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
    out.print("graph reports (the graphs later stages use):")
    _print_reports(f["graph_reports"])
    for q in f["qa"]:
        out.print(f"questions (run {q['run_id']}): {q['accepted']} accepted from {q['attempts']} attempts")
        _print_seed_notes(q.get("seed_notes", []))
        _print_yields(q["yields"])
    _print_accepted(f.get("accepted_questions", []))
    out.print("splits: " + "  ".join(f"{k}: {f['splits'].get(k, 0)}" for k in ("train", "validation", "test")))
    g = f["gold_paths"]
    out.print(f"gold paths: {g['questions']} questions, {g['mean_candidates']} candidate paths and "
              f"{g['mean_verified']} verified on average (run {g['run_id']})", soft_wrap=True)
    t = f["trajectories"]
    out.print(f"trajectories (run {t['run_id']}): {t['accepted']}/{t['made']} accepted")
    _print_yields(t["by_kind"])
    deep = f.get("deep_trajectories")
    if deep and deep.get("skipped"):
        out.print(f"rollouts and long CoT: skipped ({deep['skipped']})")
    elif deep:
        out.print(f"rollouts and long CoT on {deep['questions']} question(s) (run {deep['run_id']}): "
                  f"{deep['accepted']}/{deep['made']} accepted", soft_wrap=True)
        _print_yields(deep["by_kind"])
    e = f["export"]
    for cfg, splits in e["rows"].items():
        out.print(f"  export {cfg:<12} " + "  ".join(f"{s_}: {n}" for s_, n in splits.items()))
    for line in e.get("ikg", []):  # per domain and level: IKG variants kept, rejected by reason, trajectories
        out.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
    if f.get("eval"):
        for m, st in f["eval"]["by_mode"].items():
            scope = (f"first {f['eval']['limit']} of {f['splits'].get('test', 0)} test questions"
                     if f["eval"].get("limit") else "test split")
            out.print(f"eval {m:<9} (policy {f['eval']['model']}, {scope}): n={st['n']} EM={st['em']:.2f} "
                      f"F1={st['f1']:.2f} Hit@1={st['hit1']:.2f}", soft_wrap=True)
        if settings.endpoint("policy").is_local:
            out.print("  (the policy is the embedded 135M demo model: these scores show the evaluation ran end to "
                      "end, not what a trained policy reaches; `hopforge train` then `hopforge eval run` scores one; "
                      "`hopforge demo --eval-items 0` scores the whole test split)",
                      soft_wrap=True)
    out.print("time:   " + "  ".join(f"{k} {_minutes(v)}" for k, v in f["timings"].items()), highlight=False,
              soft_wrap=True)
    out.print(f"warehouse:  {settings.warehouse_path}")
    out.print("where to look:")
    out.print(f"  Prefect UI: {_prefect_ui()}", highlight=False, markup=False, soft_wrap=True)
    export = _prefect_home_export()
    if export:
        out.print(f"  your shell: {export}  (so later commands find this demo's Prefect server and run history)",
                  highlight=False, markup=False, soft_wrap=True)
    out.print("  questions:  .venv/bin/hopforge qa stats  (also: traj stats | warehouse runs | graph report)",
              highlight=False, markup=False, soft_wrap=True)
    out.print(f"  datasets:   {e['path']} (version {e['version']}; manifest.json, dataset_info.json, README.md)",
              highlight=False, markup=False, soft_wrap=True)
    if f.get("record"):
        out.print(f"  this run:   {f['record']} (stage times, yields, reject reasons, scores)", highlight=False,
                  markup=False, soft_wrap=True)


DomainOpt = Annotated[Optional[list[str]], typer.Option(*DOMAIN_FLAGS, help=DOMAINS_HELP)]


@verb(app, "ingest", IngestCorpus)
def ingest(p: IngestCorpus, config: ConfigOpt = None) -> None:
    """Ingest a corpus (UltraDomain jsonl, a folder of .txt/.md per domain, or a Hugging Face dataset id)."""
    from flows.graphs import check_source, ingest_corpus, ingest_options

    settings = _settings(config)
    check_source(p.source, p.source_kind, ingest_options(p.chunk_token_size, p.chunk_overlap_token_size,
                                                         p.allow_new_domains))
    _preflight_warehouse(settings)
    with _Bars():
        r = ingest_corpus(**p.flow_kwargs(), settings=settings)
    for line in r.get("skips", []):
        err.print(f"skipped {line}", highlight=False, markup=False, soft_wrap=True)
    out.print(f"ingested: {r['documents_written']} new documents, {r['chunks_written']} chunks, "
              f"{r['already_present']} already present, {r['skipped']} inputs skipped (run {r['run_id']})")


@verb(graph_app, "build", BuildGraphs)
def graph_build(p: BuildGraphs, config: ConfigOpt = None, gguf: GgufOpt = None) -> None:
    """Build one LightRAG graph per domain from the ingested documents (resumable), then report."""
    from flows.graphs import build_graphs, check_source, ingest_options

    settings = _settings(config, gguf)
    options = ingest_options(p.chunk_token_size, p.chunk_overlap_token_size, p.allow_new_domains)
    if p.source:
        check_source(p.source, p.source_kind, options)
    _preflight_warehouse(settings)
    with _Bars():
        r = build_graphs(**p.flow_kwargs(), settings=settings)
    _print_reports(r["reports"])
    for d, why in r["failures"].items():
        err.print(f"[red]{d}: {why}[/]")
    if r["failures"] and not r["built"]:
        raise typer.Exit(1)


@verb(graph_app, "import", ImportGraphs)
def graph_import(p: ImportGraphs, config: ConfigOpt = None) -> None:
    """Import a graph built elsewhere (LightRAG GraphML, triple TSV/JSONL, RoG JSONL) as a domain snapshot."""
    from flows.graphs import import_graphs

    settings = _settings(config)
    _preflight_warehouse(settings)
    r = import_graphs(**p.flow_kwargs(), settings=settings)
    if r["failures"]:
        raise _UserError(r["failures"][p.domain])
    done = r["imported"][p.domain]
    if done["bad_rows"]:
        err.print(f"{p.path}: {done['bad_rows']} bad rows left out:", highlight=False, markup=False, soft_wrap=True)
        for line in done.get("problems", []):
            err.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
    _print_reports(r["reports"])


@verb(graph_app, "report", ReportGraphs)
def graph_report_cmd(p: ReportGraphs, config: ConfigOpt = None) -> None:
    """Report each domain's current graph: is it usable for multi-hop questions?"""
    from flows.graphs import report_graphs

    r = report_graphs(**p.flow_kwargs(), settings=_settings(config))
    if not r["reports"]:
        raise _UserError("no graphs yet: run `hopforge graph build` or `hopforge graph import`")
    _print_reports(r["reports"])


@graph_app.command("export")
def graph_export(out_dir: Annotated[Path, typer.Option("--out", "-o", help="Folder for <domain>.<format>.")] = Path("rdf"),
                 fmt: Annotated[str, typer.Option("--format", help="nt (N-Triples) | ttl (Turtle)")] = "nt",
                 config: ConfigOpt = None, domain: DomainOpt = None) -> None:
    """Write each domain's current graph in its RDF form (the form the questions' SPARQL queries run on): an IRI per
    entity and per relation label, labels as rdfs:label, each fact in the direction its relation profile reads."""

    def body():
        from tasks.qa.programs import write_rdf
        from warehouse.db import Warehouse
        from warehouse.graphs import current_snapshots, load_graph

        if fmt not in ("nt", "ttl"):
            raise _UserError(f"unknown RDF format {fmt!r}; choose nt or ttl")
        settings = _settings(config)
        with Warehouse(settings.warehouse_path, read_only=True, lock_wait_s=settings.lock_wait_s) as wh:
            snaps = current_snapshots(wh, domain)
            if not snaps:
                raise _UserError("no graphs yet: run `hopforge graph build` or `hopforge graph import`")
            out_dir.mkdir(parents=True, exist_ok=True)
            for snap in snaps:
                kg = load_graph(wh, snap.domain, snap.snapshot_id)
                path = out_dir / f"{snap.domain}.{fmt}"
                n = write_rdf(kg, path)
                out.print(f"{path}: {n} triples ({snap.domain}, snapshot {snap.snapshot_id})", highlight=False,
                          markup=False)

    _run(body)


profiles_app = typer.Typer(no_args_is_help=True, help="Relation profiles: what each relation label means.")
graph_app.add_typer(profiles_app, name="profiles")


@verb(profiles_app, "export", ExportProfiles)
def profiles_export(p: ExportProfiles, config: ConfigOpt = None) -> None:
    """Write every relation label's profile (forms, counts, symmetry, with where each came from) to a YAML file
    you can read, correct and import back."""
    from flows.profiles import export_profiles, profiler_configured

    settings = _settings(config)
    _preflight_warehouse(settings)
    if p.profile and not profiler_configured(settings):
        out.print("--profile: the profiler role is the embedded model, which is never asked; set "
                  "HOPFORGE_ROLES__PROFILER__BASE_URL and __MODEL (or [roles.profiler]) to profile labels",
                  highlight=False, markup=False)
    r = export_profiles(**p.call_kwargs(), settings=settings)
    out.print(f"{r['path']}: {r['labels']} relation labels; {r['usable']} can be asked in some direction, "
              f"{r['opaque']} are not words, {r['no_forms']} have no surface forms", highlight=False, markup=False)


@verb(profiles_app, "import", ImportProfiles)
def profiles_import(p: ImportProfiles, config: ConfigOpt = None) -> None:
    """Import a corrected profiles file: its fields win over the lexicon, the graph statistics and the profiler
    (validated whole first; nothing is stored if any entry is wrong)."""
    from flows.profiles import check_profiles_file, import_profiles

    settings = _settings(config)
    _preflight_warehouse(settings)
    check_profiles_file(p.path, settings)  # a bad file is refused here, before any flow starts
    import_profiles(**p.flow_kwargs(), settings=settings)


def _print_reports(reports: list[dict[str, Any]]) -> None:
    from tasks.graph.report import GraphReport, report_text

    for r in reports:
        out.print(report_text(GraphReport(**r)), highlight=False, markup=False, soft_wrap=True)


@verb(qa_app, "generate", GenerateQA)
def qa_generate(p: GenerateQA, config: ConfigOpt = None, gguf: GgufOpt = None) -> None:
    """Sample seeds, generate questions, check them in code and by a judge, dedup, assign splits."""
    from flows.qa import generate_qa

    settings = _settings(config, gguf)
    _ball_bounds(settings, p.min_ball, p.max_ball)
    _check_domains(settings, p.domains)
    _preflight_warehouse(settings)
    with _Bars():
        r = generate_qa(**p.flow_kwargs(), settings=settings)
    _print_seed_notes(r.get("seed_notes", []))
    _print_yields(r["yields"])
    _print_seed_notes([*r["mix_lines"], *r["meaning_check"]["lines"]])
    out.print(f"accepted {r['accepted']} questions in run {r['run_id']} ({r['llm_calls']} LLM calls, "
              f"{r['llm_cache_hits']} cache hits)")
    if r.get("no_graph"):  # the job could not be done for a stated reason: a script must not count it done
        raise _UserError(f"no graph for domain(s) {', '.join(r['no_graph'])}: import one (`hopforge graph "
                         "import`) or build one (`hopforge graph build`) first")
    if r.get("no_seed"):  # the reason for each is printed above (the seed notes)
        raise _UserError(f"no seed in domain(s) {', '.join(r['no_seed'])}: no question could be asked there; "
                         "the lines above say why")


def _print_seed_notes(lines: list[str]) -> None:
    """Domains that gave no seed, each with the bound that left every node out (``generate_qa``'s seed_notes)."""
    for line in lines:
        out.print(line, highlight=False, markup=False, soft_wrap=True)


@verb(qa_app, "paths", VerifyPaths)
def qa_paths(p: VerifyPaths, config: ConfigOpt = None, gguf: GgufOpt = None) -> None:
    """Find and verify gold paths for accepted questions that have none yet."""
    from flows.qa import verify_paths

    settings = _settings(config, gguf)
    _check_domains(settings, p.domains)
    _preflight_warehouse(settings)
    with _Bars():
        r = verify_paths(**p.flow_kwargs(), settings=settings)
    out.print(f"{r['questions']} questions: {r['mean_candidates']} candidate paths and {r['mean_verified']} verified "
              f"on average; generator path confirmed for {r['generator_confirmed']}; {r['search_cut']} searches "
              f"hit a bound (run {r['run_id']})")
    if r.get("lost_calls"):
        out.print(f"{r['lost_calls']} question(s) lost a verifier call to the endpoint: `hopforge qa paths` again "
                  "verifies them", soft_wrap=True)


@qa_app.command("stats")
def qa_stats(config: ConfigOpt = None) -> None:
    """Questions per domain, hop class and split; the latest generation funnel."""

    def body():
        from tasks.qa.mix import shapes_sql
        from warehouse.db import Warehouse

        with Warehouse(_settings(config).warehouse_path, read_only=True) as wh:
            rows = wh.query("SELECT domain, hop_class, coalesce(split, '-') AS split, count(*) AS n FROM qa "
                            "GROUP BY ALL ORDER BY ALL")
            shapes = wh.query(shapes_sql())
            last = wh.scalar("SELECT run_id FROM runs WHERE flow = 'generate-qa' AND status = 'completed' "
                             "ORDER BY started_at DESC LIMIT 1")
            ylds = wh.query("SELECT * FROM qa_yields WHERE run_id = ?", [last]) if last else []
            gold = wh.query("SELECT count(*) AS questions, avg(n_valid) AS mean_valid, "
                            "sum(CASE WHEN generator_confirmed THEN 1 ELSE 0 END) AS confirmed FROM gold_path_summary")
        if not rows:
            raise _UserError("no questions yet: run `hopforge qa generate`")
        for r in rows:
            out.print(f"{r['domain']:<14} {r['hop_class']:<4} {r['split']:<10} {r['n']:>6}")
        _print_hop_kind(shapes)
        if ylds:
            from schemas.qa import QAYield
            from tasks.qa.yields import yield_table

            out.print(f"latest generation run {last}:")
            _print_yields(yield_table([QAYield(**y) for y in ylds]))
        if gold and gold[0]["questions"]:
            g = gold[0]
            out.print(f"gold paths: {g['questions']} questions verified, {g['mean_valid']:.2f} valid paths on average, "
                      f"generator path confirmed for {g['confirmed']}")

    _run(body)


def _print_hop_kind(shapes: list[dict[str, Any]]) -> None:
    """Questions by hops (1, 2, 3+) and kind (chain, conjunction; no program is a chain): all domains, then each
    domain when there are several. ``shapes`` are the ``qa`` table's rows of ``tasks.qa.mix.shapes_sql``."""
    from tasks.qa.mix import counts_by_domain, hop_kind_lines

    by_domain = counts_by_domain(shapes)
    parts = [("all domains", sum(by_domain.values(), Counter()))]
    if len(by_domain) > 1:
        parts += sorted(by_domain.items())
    for name, counts in parts:
        out.print(f"questions by hops x kind, {name}:", highlight=False, markup=False)
        for line in hop_kind_lines(counts, indent="  "):
            out.print(line, highlight=False, markup=False)


@verb(traj_app, "distill", DistillTrajectories)
def traj_distill(p: DistillTrajectories, config: ConfigOpt = None, gguf: GgufOpt = None) -> None:
    """Distill trajectories from the teacher role for accepted questions with gold paths (resumable)."""
    from flows.distill import distill_trajectories

    settings = _settings(config, gguf)
    _check_domains(settings, p.domains)
    _preflight_warehouse(settings)
    with _Bars():
        r = distill_trajectories(**p.flow_kwargs(), settings=settings)
    _print_yields(r["by_kind"])
    out.print(f"{r['accepted']}/{r['made']} trajectories accepted in run {r['run_id']}")


@traj_app.command("stats")
def traj_stats(config: ConfigOpt = None) -> None:
    """Trajectories per kind and status, with the main reject reasons."""

    def body():
        from warehouse.db import Warehouse

        with Warehouse(_settings(config).warehouse_path, read_only=True) as wh:
            rows = wh.query("SELECT kind, status, coalesce(reject_reason, '') AS reason, count(*) AS n FROM trajectories "
                            "GROUP BY ALL ORDER BY ALL")
        if not rows:
            raise _UserError("no trajectories yet: run `hopforge traj distill`")
        for r in rows:
            out.print(f"{r['kind']:<10} {r['status']:<9} {r['reason']:<20} {r['n']:>6}")

    _run(body)


@verb(eval_app, "run", EvaluatePolicy)
def eval_run(p: EvaluatePolicy, config: ConfigOpt = None, gguf: GgufOpt = None) -> None:
    """Run the policy role through the tool loop (and baselines) on a split; EM / F1 / Hit@1 per hop class and domain."""
    from flows.evaluate import evaluate_policy

    settings = _settings(config, gguf)
    _check_domains(settings, p.domains)
    _preflight_warehouse(settings)
    with _Bars():
        r = evaluate_policy(**p.flow_kwargs(), settings=settings)
    for m, stats in r["by_mode"].items():
        out.print(f"{m:<13} n={stats['n']}  EM={stats['em']:.3f}  F1={stats['f1']:.3f}  Hit@1={stats['hit1']:.3f}"
                  + (f"  judge={stats['judge_acc']:.3f}" if stats.get("judge_acc") is not None else ""))
    _print_yields(r["table"])
    if r.get("report"):
        for row in r["by_setting"]:
            out.print(f"{row['mode']:<13} {row['setting']:<9} n={row['n']}  Hits@1={row['hit1_any']:.3f}  "
                      f"text search used={row['text_search_share']:.3f}  per question={row['mean_text_calls']:.2f}")
        out.print(f"report: {r['report']}")
    out.print(f"run {r['run_id']} (model {r['model']}); rows in eval_runs / eval_items")


@verb(app, "export", ExportDatasets)
def export_cmd(p: ExportDatasets, config: ConfigOpt = None) -> None:
    """Export the datasets (QA parquet, LLaMA-Factory ShareGPT, verl RL parquet, TRL messages) with a manifest."""
    from flows.checks import writable_folder
    from flows.export import export_datasets

    settings = _settings(config)
    if p.ikg_texts is not None:
        settings.ikg = settings.ikg.model_copy(update={"texts": str(p.ikg_texts)})
    writable_folder(settings.data_dir / "exports", "the exports folder")
    _preflight_warehouse(settings)
    r = export_datasets(settings=settings, **p.flow_kwargs())
    for cfg, splits in r["rows"].items():
        out.print(f"{cfg:<12} " + "  ".join(f"{s}: {n}" for s, n in splits.items()))
    if r["invalid"]:
        err.print(f"{len(r['invalid'])} rows failed the format checks and were left out (see the run log)")
    out.print(f"export {r['version']}: {r['path']}"
              + (f"  published: {r['commit_url']} (tag {r['tag']})" if r["commit_url"] else ""))


def _print_yields(table: list[dict[str, Any]]) -> None:
    for line in table:
        out.print("  " + " | ".join(f"{k}: {v}" for k, v in line.items()), highlight=False, markup=False, soft_wrap=True)


@config_app.command("show")
def config_show(config: ConfigOpt = None, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Print the resolved configuration, secrets redacted."""

    def body():
        settings = _settings(config)
        data = settings.redacted()
        data["_resolved"] = {"warehouse": str(settings.warehouse_path), "cache": str(settings.cache_path),
                             "config_hash": settings.config_hash()}
        if as_json:
            print(json.dumps(data, indent=2, sort_keys=True))
        else:
            import yaml

            print(yaml.safe_dump(data, sort_keys=True), end="")

    _run(body)


@warehouse_app.command("tables")
def warehouse_tables(config: ConfigOpt = None) -> None:
    """List the warehouse tables with row counts."""

    def body():
        from warehouse.db import Warehouse

        with Warehouse(_settings(config).warehouse_path, read_only=True) as wh:
            for t in wh.tables():
                out.print(f"{t:<24} {wh.scalar(f'SELECT count(*) FROM {t}'):>10}")

    _run(body)


@warehouse_app.command("runs")
def warehouse_runs(config: ConfigOpt = None, limit: int = 20) -> None:
    """The most recent runs with status and LLM usage."""

    def body():
        from warehouse.db import Warehouse

        with Warehouse(_settings(config).warehouse_path, read_only=True) as wh:
            rows = wh.query(
                "SELECT run_id, flow, status, started_at, ended_at, llm_calls, llm_cache_hits, prompt_tokens, "
                "completion_tokens, llm_failures FROM runs ORDER BY started_at DESC LIMIT ?", [limit])
        for r in rows:
            out.print(json.dumps(r, default=str))

    _run(body)


@warehouse_app.command("export")
def warehouse_export(table_or_query: str, dest: Path, config: ConfigOpt = None) -> None:
    """Export a table or a SELECT query to a Parquet file."""

    def body():
        from warehouse.db import Warehouse

        with Warehouse(_settings(config).warehouse_path, read_only=True) as wh:
            path = wh.export_parquet(table_or_query, dest)
        out.print(f"wrote {path}")

    _run(body)


def _print_check(report) -> None:
    for table, n in sorted(report.rows.items()):
        out.print(f"{table:<28} {n:>10}", highlight=False, soft_wrap=True)
    blocks = report.blocks
    if report.migration is not None:
        out.print(f"migration {report.migration} (expected {report.expected_migration}); blocks: "
                  f"{blocks.get('used_blocks')} used, {blocks.get('free_blocks')} free of {blocks.get('total_blocks')}",
                  highlight=False, soft_wrap=True)  # fmt: skip
    report.raise_first()
    out.print(f"check: ok ({report.path})", highlight=False, soft_wrap=True)


@warehouse_app.command("check")
def warehouse_check(config: ConfigOpt = None) -> None:
    """Check the warehouse: it opens, every table and column its migrations make is there, the migration level is
    this hopforge's, every table reads whole and every key index reads through. Exits 2 naming the first damaged
    table or index and how to recover."""

    def body():
        from warehouse.backup import check

        settings = _settings(config)
        _print_check(check(settings.warehouse_path, lock_wait_s=settings.lock_wait_s))

    _run(body)


@warehouse_app.command("backup")
def warehouse_backup(config: ConfigOpt = None,
                     out_path: Annotated[Optional[Path], typer.Option("--out", "-o", help="Backup file, or an existing folder for it; default <data_dir>/backups.")] = None) -> None:  # fmt: skip
    """Copy the warehouse, while nothing writes it, to a backup file with a manifest (sha256, rows per table)."""

    def body():
        from warehouse.backup import backup

        settings = _settings(config)
        b = backup(settings.warehouse_path, out_path, data_dir=settings.data_dir, lock_wait_s=settings.lock_wait_s)
        m = b.manifest
        rows = sum(t["rows"] for t in m["tables"].values())
        out.print(f"backup {b.id}: {b.path} ({m['bytes']} bytes, sha256 {b.sha256[:16]}, migration "
                  f"{m['migration']}, {rows} rows in {len(m['tables'])} tables)", highlight=False, soft_wrap=True)

    _run(body)


@warehouse_app.command("restore")
def warehouse_restore(backup_file: Annotated[Path, typer.Argument(help="A backup file written by `hopforge warehouse backup`.")],
                      config: ConfigOpt = None) -> None:  # fmt: skip
    """Put a backup in place of the warehouse (the current one is moved aside, never deleted), then check it."""

    def body():
        from warehouse.backup import check, restore

        settings = _settings(config)
        done = restore(backup_file, settings.warehouse_path, lock_wait_s=settings.lock_wait_s)
        if done.moved_aside is not None:
            out.print(f"moved the previous warehouse to {done.moved_aside}", highlight=False, soft_wrap=True)
        out.print(f"restored backup {done.backup.id} (created {done.backup.manifest.get('created_at')}) to "
                  f"{done.warehouse}", highlight=False, soft_wrap=True)
        if done.migrated_from is not None:
            out.print(f"migrated it from migration {done.migrated_from}", highlight=False, soft_wrap=True)
        _print_check(check(settings.warehouse_path, lock_wait_s=settings.lock_wait_s))

    _run(body)


def _print_train(r: dict[str, Any]) -> None:
    out.print(f"{r['status']}: {r['train_id']}  run dir: {r['run_dir']}", highlight=False, soft_wrap=True)
    if r.get("node_rank"):
        out.print(f"node {r['node_rank']}'s files: {r['node_dir']}", highlight=False, soft_wrap=True)
    if r["status"] == "dry_run":
        out.print("launch with:", highlight=False)
        out.print(f"  {r['command']}", highlight=False, markup=False, soft_wrap=True)
    else:
        out.print(f"checkpoint: {r['checkpoint']}", highlight=False, soft_wrap=True)
        for k, v in sorted((r.get("metrics") or {}).items()):
            out.print(f"  {k}: {v:.6g}", highlight=False)


@verb(train_app, "sft", TrainSFT)
def train_sft_cmd(p: TrainSFT, config: ConfigOpt = None) -> None:
    """LLaMA-Factory SFT on an export (weighted think-token loss), in the trainer's own environment; torchrun over
    this node's GPUs (and --nnodes nodes: the same command on every node, its own --node-rank)."""
    from flows.train import preflight, train_sft

    settings = _settings(config)
    preflight(settings, p.export_version, p.options, run_id=p.run_id,
              shared_dir=p.shared_dir)  # bad input: one line before Prefect
    _print_train(train_sft(**p.flow_kwargs(), settings=settings))


@verb(train_app, "rl", TrainRL)
def train_rl_cmd(p: TrainRL, config: ConfigOpt = None) -> None:
    """RL on an export's questions with verl (or TRL), rewarded by training/verl_reward.py:compute_score."""
    from flows.train import preflight, train_rl

    settings = _settings(config)
    preflight(settings, p.export_version, p.trainer_options(), run_id=p.run_id,
              shared_dir=p.shared_dir if p.trainer == "trl" else None)  # bad input: one line before Prefect
    _print_train(train_rl(**p.flow_kwargs(), settings=settings))


@train_app.command("serve-command")
def train_serve_command(checkpoint: Path,
                        port: Annotated[int, typer.Option(help="Port of the OpenAI-compatible server.")] = 8000,
                        name: Annotated[str, typer.Option(help="Served model name (what the policy role asks for).")] = "hopforge-policy",
                        base_model: Annotated[Optional[str], typer.Option(help="Base model of a LoRA adapter.")] = None,
                        reasoning: Annotated[str, typer.Option(help="auto (read from the run that wrote the checkpoint) | think | no_think")] = "auto") -> None:
    """Print the `vllm serve` command for a checkpoint (served as it was trained: think or no-think) and the settings
    that point the policy role at it."""

    def body():
        import json
        import shlex

        from training.serve import ServeOptions, plan_serve

        if reasoning not in ("auto", "think", "no_think"):
            raise _UserError(f"--reasoning must be auto, think or no_think, got {reasoning!r}")
        plan = plan_serve(checkpoint, ServeOptions(port=port, served_name=name, base_model=base_model,
                                                   reasoning=reasoning))  # type: ignore[arg-type]
        for note in plan.notes:
            out.print(f"# {note}", highlight=False, markup=False, soft_wrap=True)
        out.print(plan.command_line(), highlight=False, markup=False, soft_wrap=True)
        ep = plan.policy_endpoint()
        out.print("then evaluate it with:", highlight=False)
        out.print(f"  HOPFORGE_ROLES__POLICY__BASE_URL={ep['base_url']} HOPFORGE_ROLES__POLICY__MODEL={ep['model']} "
                  f"HOPFORGE_ROLES__POLICY__EXTRA_BODY={shlex.quote(json.dumps(ep['extra_body']))} "
                  f"hopforge eval run --trained-as {plan.chat.kind}", highlight=False, markup=False, soft_wrap=True)

    _run(body)


@train_app.command("runs")
def train_runs(config: ConfigOpt = None, limit: int = 20) -> None:
    """The latest training runs: trainer, export, status, checkpoint."""

    def body():
        from warehouse.db import Warehouse

        settings = _settings(config)
        with Warehouse(settings.warehouse_path, read_only=True, lock_wait_s=settings.lock_wait_s) as wh:
            rows = wh.query("SELECT train_id, trainer, export_version, status, checkpoint, started_at FROM training_runs "
                            "ORDER BY started_at DESC LIMIT ?", [limit])
        if not rows:
            out.print("no training runs yet: `hopforge train sft --help`")
        for r in rows:
            out.print(f"{r['started_at']:%Y-%m-%d %H:%M}  {r['train_id']:<44} {r['trainer']:<12} {r['export_version']:<20} "
                      f"{r['status']:<9} {r['checkpoint'] or ''}", highlight=False)

    _run(body)


@verb(app, "refresh", Refresh)
def refresh_cmd(p: Refresh, config: ConfigOpt = None, gguf: GgufOpt = None) -> None:
    """Incremental refresh: new documents -> their graphs -> questions, paths, trajectories -> a new dataset version."""
    from flows.refresh import check_refresh, refresh

    settings = _settings(config, gguf)
    if p.sources:  # what can be refused without an LLM is refused before Prefect starts
        check_refresh(list(p.sources), p.repo_id, p.token_env, None)
    with _Bars():
        r = refresh(**p.flow_kwargs(), settings=settings)
    for key in ("version", "new_version", "published"):
        if key in r:
            out.print(f"{key}: {r[key]}", highlight=False, soft_wrap=True)


@app.command("serve-tools")
def serve_tools(config: ConfigOpt = None, domain: DomainOpt = None,
                host: Annotated[str, typer.Option(help="Interface; loopback by default.")] = "127.0.0.1",
                port: int = 8765,
                embedder: Annotated[str, typer.Option(help="configured | hashing (model-free, for quick tests)")] = "configured",
                workers: Annotated[int, typer.Option(min=1, help="Server processes sharing the index; one per core on a rollout node.")] = 1,
                views: Annotated[Optional[Path], typer.Option(help="An export directory whose IKG rows' views to register (views of the warehouse's questions are made on demand anyway).")] = None,
                ray_address: Annotated[Optional[str], typer.Option(help="Serve on the Ray cluster there (host:port of its head, ray://host:port or auto) with Ray Serve: --replicas copies of the app behind one proxy on the head at --host:--port.")] = None,
                replicas: Annotated[int, typer.Option(min=1, help="With --ray-address: replicas of the app (one CPU each).")] = 2,
                shared_data_dir: Annotated[Optional[Path], typer.Option(help="With --ray-address: the data directory as every node sees it (shared storage); default: this one's.")] = None) -> None:
    """Serve the KG tools over HTTP (Omne-R1 endpoints, one endpoint per tool, batch, health, stats), web_search
    over each domain's corpus, and IKG views by ?view_id=. With --ray-address: on Ray Serve (flows.tool_serve_ray)."""
    if ray_address is not None:
        _serve_tools_on_ray(config, domain, host, port, embedder, workers, views, ray_address, replicas, shared_data_dir)
        return

    def body():
        from flows.tool_workers import serve
        from flows.tools_env import export_qa_rows, export_views, tool_environment, warehouse_views
        from training.tool_auth import TOKEN_ENV, is_loopback_host, tool_token
        from warehouse.db import Warehouse

        if embedder not in ("configured", "hashing"):
            raise _UserError(f"--embedder must be configured or hashing, got {embedder!r}")
        if not is_loopback_host(host) and tool_token() is None:  # before the index loads
            raise _UserError(f"--host {host} listens beyond loopback: set {TOKEN_ENV} (a shared secret) in the "
                             "environment of the server and of every client")
        settings = _settings(config)
        with Warehouse(settings.warehouse_path, read_only=True, lock_wait_s=settings.lock_wait_s) as wh:
            env = tool_environment(settings, wh, domain, embedder, served=True)  # type: ignore[arg-type]
            registry = warehouse_views(wh, env)
        if views is not None:
            export_views(export_qa_rows(views), {d: env.indexes[d].graph for d in env.domains}, registry)
        token = tool_token()  # from the environment only: never an option, so never in a shell history or a log
        auth = f" (requests need the {TOKEN_ENV} token)" if token else ""
        out.print(f"serving tools for {', '.join(env.domains)} on http://{host}:{port} (GET /health, /tools, /stats){auth}")
        serve(env, host=host, port=port, workers=workers, token=token, views=registry)

    _run(body)


def _serve_tools_on_ray(config: Any, domain: Any, host: str, port: int, embedder: str, workers: int,
                        views: Optional[Path], ray_address: str, replicas: int, shared_data_dir: Optional[Path]) -> None:
    """``serve-tools --ray-address``: the tool service on Ray Serve until SIGINT/SIGTERM, then stopped cleanly."""

    def body():
        from flows.tool_serve_ray import run_until_stopped, serve_on_ray
        from training.tool_auth import TOKEN_ENV, is_loopback_host, tool_token

        if workers != 1:
            raise _UserError("--workers forks processes of one server; on Ray give --replicas instead")
        if embedder not in ("configured", "hashing"):
            raise _UserError(f"--embedder must be configured or hashing, got {embedder!r}")
        token = tool_token()  # from the environment only, as for the single server
        if not is_loopback_host(host) and token is None:
            raise _UserError(f"--host {host} listens beyond loopback: set {TOKEN_ENV} (a shared secret) in the "
                             "environment of the server and of every client")
        settings = _settings(config)
        service = serve_on_ray(settings, ray_address, replicas=replicas, host=host, port=port, domains=domain,
                               embedder=embedder, token=token, shared_data_dir=shared_data_dir, views=views,
                               connect_timeout_s=settings.runner.connect_timeout_s)
        auth = f" (requests need the {TOKEN_ENV} token)" if token else ""
        try:
            run_until_stopped(service, on_ready=lambda: out.print(
                f"serving tools on Ray Serve at {ray_address}: {replicas} replicas behind {service.url} "
                f"(GET /health, /tools, /stats){auth}", highlight=False, soft_wrap=True))
        finally:
            service.stop()  # also when a signal came before the line

    _run(body)


@app.command("serve-model")
def serve_model(config: ConfigOpt = None, gguf: GgufOpt = None) -> None:
    """Run the embedded llama.cpp server in the foreground (Ctrl-C stops it)."""

    def body():
        import time

        from gateway.local import LocalModelServer

        settings = _settings(config, gguf)
        with LocalModelServer(settings.local_model.gguf, n_ctx=settings.local_model.n_ctx,
                              startup_timeout_s=settings.local_model.startup_timeout_s) as srv:
            out.print(f"serving {srv.model_name} at {srv.base_url} (demo-quality model); Ctrl-C to stop")
            try:
                while srv.running:
                    time.sleep(1)
            except KeyboardInterrupt:
                pass

    _run(body)


server_app = typer.Typer(no_args_is_help=True, help="A local Prefect server that stays up: commands use it and "
                                                     "start in seconds; its UI shows their runs.")
app.add_typer(server_app, name="server")


@server_app.command("start")
def server_start(host: Annotated[str, typer.Option(help="Interface; loopback by default (the server has no "
                                                        "authentication).")] = "127.0.0.1",
                 port: int = 4200,
                 if_needed: Annotated[bool, typer.Option("--if-needed", help="Succeed when hopforge's server is "
                                                         "already up (or PREFECT_API_URL names one).")] = False,
                 timeout: Annotated[float, typer.Option(help="Seconds to wait for it to answer.")] = 180.0) -> None:
    """Start a Prefect server in the background (PREFECT_HOME holds its database, state and log)."""

    def body():
        from flows import prefect_server

        state, line = prefect_server.start(host, port, if_needed=if_needed, timeout_s=timeout)
        out.print(f"Prefect server {line}" if state is not None else line, highlight=False, soft_wrap=True)
        if state is not None:
            out.print(f"UI: {state.ui_url}  (API {state.api_url}; log {state.log})", highlight=False, soft_wrap=True)

    _run(body)


@server_app.command("stop")
def server_stop() -> None:
    """Stop hopforge's Prefect server (and whatever it started)."""

    def body():
        from flows import prefect_server

        out.print(prefect_server.stop(), highlight=False, soft_wrap=True)

    _run(body)


@server_app.command("status")
def server_status() -> None:
    """Is a Prefect server up for hopforge's commands? Its address and pid; exit status 1 when none answers."""

    def body():
        from flows import prefect_server

        st = prefect_server.status()
        for line in st.lines:
            out.print(line, highlight=False, soft_wrap=True)
        if not st.up:
            raise typer.Exit(1)

    _run(body)


def main() -> None:
    code: int = 0
    from flows import prefect_server

    if sys.argv[1:2] != ["server"]:
        prefect_server.use_running_server()  # before any command imports Prefect
    try:
        app()  # standalone: parses, runs, and ends with SystemExit carrying the exit status
    except KeyboardInterrupt:
        err.print("interrupted")
        code = 130
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    # Everything is written by now (each stage commits its own transactions). Send Prefect's queued logs and events
    # while its server is still up, run the exit handlers (they stop Prefect's temporary server and the embedded
    # model), then leave without joining library worker threads: LightRAG's executor threads can keep a finished
    # process alive indefinitely.
    prefect_server.flush_prefect()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
