"""Meaning report: every question the template path accepts on a graph, printed with its path and answer for a
person to grade.

For each graph file it is given (``demo`` for the demo's graphs; the tests give it the fixtures of
``tests/fixtures/meaning_graphs``, graphs written with public vocabularies the project did not choose) the report does what ``hopforge graph import`` and ``hopforge qa generate``
do on the embedded model with the judge off, through the same public functions, so that it follows them when they
change:

1. import: ``tasks.graph.importers.import_graph_file`` (the importer ``graph import`` runs), stored and read back
   through an in-memory warehouse (``warehouse.graphs.write_import`` / ``load_graph``), so the graph has the
   snapshot id and record order a flow would see;
2. seeds: ``tasks.qa.seeds.eligible_seeds`` with a small minimum ball (these graphs hold 10 to 150 nodes, the flow's
   default minimum of 20 would leave the small ones without seeds) and ``sample_seeds`` with the flow's ``keep``
   (``tasks.qa.candidates.opens_a_path``);
3. jobs: ``tasks.qa.generate.run_job`` in ``candidates`` mode with the template writer and no judge (the
   ``GenConfig`` ``qa generate`` builds for a local generator from the default ``QualityConfig``), for every seed in
   both hop classes (``qa generate`` gives each seed one class; asking both shows each seed's 2-3 node and 4-5 node
   questions). The gateway is a stub that fails if anything calls it: with the template writer, no paraphrase and
   no judge, nothing should.

Each graph gets ``<name>.txt``: the import summary, the seeds, every accepted question with its path (each hop in
the relation's stored direction, ``a -label-> b`` or ``a <-label- b``) and answer, and a tally of refusals by reason
with examples. The output holds no time or run-dependent value: the same code and graphs give the same bytes.

    python -m flows.meaning_report --out DIR [graph ...]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

ROOT = Path(__file__).resolve().parent.parent
DEMO_GRAPHS = ROOT / "flows" / "demo" / "graphs"
GRAPH_SUFFIXES = (".jsonl", ".tsv", ".graphml", ".json", ".txt", ".gz")

RUN_ID = "meaning-report"
HOP_CLASSES = ("1-2", "3+")


class GatewayCalled(AssertionError):
    """The report's generation path asked the LLM gateway for something; it must run without an LLM."""


class NoGateway:
    """A gateway that refuses every use: the template writer with no paraphrase and no judge never calls one."""

    def __getattr__(self, name: str) -> Any:
        raise GatewayCalled(f"the meaning report runs without an LLM, but generation used gateway.{name}")


def graph_files(folder: str | Path) -> list[Path]:
    """The graph files of ``folder`` (by suffix), sorted by name."""
    return sorted(p for p in Path(folder).iterdir() if p.is_file() and p.name.endswith(GRAPH_SUFFIXES))


def demo_graphs() -> list[Path]:
    return sorted(DEMO_GRAPHS.glob("*.jsonl"))


def graph_name(path: Path) -> str:
    """The domain a file is imported as: its name up to the first dot."""
    return path.name.split(".", 1)[0]


def import_graph(path: str | Path, domain: str | None = None):
    """``(GraphImport, KnowledgeGraph)``: the file imported as ``hopforge graph import`` does (importer chosen by
    suffix), stored as a snapshot in an in-memory warehouse and loaded back as the flows load it."""
    from tasks.graph.importers import import_graph_file
    from warehouse.db import Warehouse
    from warehouse.graphs import load_graph, write_import

    p = Path(path)
    domain = domain or graph_name(p)
    imported = import_graph_file(p, domain)
    wh = Warehouse(":memory:")
    try:
        snap = write_import(wh, imported, build_run_id=None)
        kg = load_graph(wh, domain, snap.snapshot_id)
    finally:
        wh.close()
    return imported, kg


def generation_config(scopes: dict[str, str] | None = None, sampled: Sequence[str] = ()):
    """The ``GenConfig`` ``qa generate`` builds when the template writer is chosen and the judge is off (quality
    settings at their defaults; no paraphrase, which would call the generator). ``sampled``: ``[quality] sampled``."""
    from schemas.config import QualityConfig
    from tasks.qa.generate import GenConfig
    from tasks.qa.text_gates import TextGateConfig

    q = QualityConfig()
    gates = TextGateConfig(language=q.language, min_words=q.min_words, max_words=q.max_words,
                           copy_threshold=q.copy_threshold)
    return GenConfig(use_judge=False, meaning_check="off", constrain_question=False, text_gates=gates, writer="template",
                     template_fallback=q.template_fallback, paraphrase=False,
                     scopes=QualityConfig(scopes=scopes or {}).scopes, sampled=frozenset(sampled))


@dataclass
class Accepted:
    seed: str
    hop_class: str
    path: list[str]
    hops: list[str]  # one line per hop, in the relation's stored direction
    question: str
    answer: str
    program: list[str] = field(default_factory=list)  # the program's kind and constraints, one line each
    shape: str = ""  # the program's steps and pins without their names ("-county-> -district->"; ``program_shape``)


@dataclass
class GraphRun:
    """What the report found on one graph."""

    name: str
    source: str
    import_summary: str
    n_nodes: int
    n_relations: int
    labels: Counter = field(default_factory=Counter)
    eligible: int = 0
    passed_over: list[str] = field(default_factory=list)  # eligible seeds from which no hop can be asked
    seeds: list[str] = field(default_factory=list)
    refill: list[str] = field(default_factory=list)  # further seeds the short hop classes got, "node [class]"
    jobs: int = 0
    accepted: list[Accepted] = field(default_factory=list)
    refusals: Counter = field(default_factory=Counter)  # reason code -> count
    examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    scope_named: list[str] = field(default_factory=list)  # the graph's nodes the scope phrase names

    def refuse(self, reason: str, example: str, keep: int = 4) -> None:
        self.refusals[reason] += 1
        if len(self.examples[reason]) < keep and example not in self.examples[reason]:
            self.examples[reason].append(example)


def hop_line(edge) -> str:
    """One hop as stored: ``head -label-> tail`` walked forward, ``head <-label- tail`` walked against the arrow
    (``head``/``tail`` are in walking order)."""
    label = edge.relation_text() if hasattr(edge, "relation_text") else edge.relation
    label = " ".join(str(label).split())
    if not edge.directed:
        return f"{edge.head} -{label}- {edge.tail}" + ("" if edge.forward else "   (stored the other way round)")
    return f"{edge.head} -{label}-> {edge.tail}" if edge.forward else f"{edge.head} <-{label}- {edge.tail}"


def _first_failure(attempt) -> str:
    for v in attempt.verdicts:
        if not v.ok and v.blocking:
            return f"{v.check}: {v.reason}"
    return attempt.judge_reason or ""


def run_graph(path: str | Path, *, name: str | None = None, n_seeds: int = 20, min_ball: int = 5,
              max_ball: int = 400, sampling_seed: int = 0, hop_classes: Sequence[str] = HOP_CLASSES,
              cfg=None, one_class: bool = False) -> GraphRun:
    """Import one graph and run every (seed, hop class) job through ``run_job`` (module docstring); with
    ``one_class`` each seed gets one hop class, half and half, as ``qa generate`` gives them."""
    from tasks.qa.candidates import describe_refusals, opening_refusals
    from tasks.meaning.profiles import book_for_graph
    from tasks.qa.generate import assign_hop_classes, run_job, scope_names
    from tasks.qa.seed_plan import SeedPlan
    from tasks.qa.seed_rule import SeedRule
    from tasks.qa.refill import missing_jobs
    from schemas.config import SeedBallConfig

    p = Path(path)
    name = name or graph_name(p)
    imported, kg = import_graph(p, name)
    cfg = cfg or generation_config()
    run = GraphRun(name=name, source=str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p),
                   import_summary=imported.summary().replace(str(p), p.name),
                   n_nodes=len(imported.entities), n_relations=len(imported.relations),
                   labels=Counter(r.relation for r in imported.relations))
    seed_plan = SeedPlan(n_seeds=n_seeds, min_ball=min_ball, max_ball=max_ball, hop_mix={"1-2": 0.5, "3+": 0.5},
                         modes=("candidates",), sampling_seed=sampling_seed, refill_factor=SeedBallConfig().refill)
    eligible = seed_plan.eligible(kg, keep_large=True)  # the template writer's
    run.eligible = len(eligible)
    if not eligible:
        run.refuse("no_eligible_seed", f"no node has {min_ball} or more nodes within 3 hops")
        return run
    book = book_for_graph(kg)

    # what qa generate keeps and prefers with the template writer
    rule = SeedRule(kg, book, programs=True, scoped=bool(cfg.scopes.get(kg.domain)), whole=kg.domain not in cfg.sampled)
    run.scope_named = scope_names(kg, cfg.scopes[kg.domain]) if cfg.scopes.get(kg.domain) else []
    run.passed_over = sorted(n for n, _ in eligible if not rule.keep(n))
    for node in run.passed_over:
        run.refuse("seed_passed_over", f"{node}: no relation out of it can be asked and no program starts there: "
                   f"{describe_refusals(opening_refusals(kg, [node]), limit=2)}")
    seeds = seed_plan.sample(eligible, rule, domain=name, snapshot_id=kg.snapshot_id, run_id=RUN_ID,
                             arranged=one_class)
    run.seeds = [s.node for s in seeds]
    gateway = NoGateway()
    plan = (list(zip(seeds, assign_hop_classes(seeds, {"1-2": 0.5, "3+": 0.5}))) if one_class
            else [(seed, hop) for seed in seeds for hop in hop_classes])

    async def jobs() -> list:
        return [await run_job(gateway, kg, seed, hop, "candidates", run_id=RUN_ID, cfg=cfg,  # type: ignore[arg-type]
                              sampling_seed=sampling_seed)
                for seed, hop in plan]

    results = asyncio.run(jobs())
    if one_class:
        # Filling the mix as qa generate does (tasks.qa.refill): a hop class whose jobs gave fewer questions than
        # jobs gets jobs on further seeds, once.
        missing = missing_jobs([(s.node, h, "candidates") for s, h in plan],
                               {(r.seed.node, r.hop_class, "candidates") for r in results if r.qa is None})
        extra = seed_plan.refill(eligible, rule, missing, domain=name, snapshot_id=kg.snapshot_id, run_id=RUN_ID,
                                 used=run.seeds)
        run.refill = [f"{s.node} [{h}]" for s, h in extra]
        plan = extra
        results += asyncio.run(jobs())
    run.jobs = len(results)
    _record_results(run, kg, results)
    return run


def _record_results(run: GraphRun, kg, results: Sequence) -> None:
    """Each job's outcome on ``run``: its accepted question, and a refusal (with the failing check, the question
    and the path) for every other attempt or for a seed without a candidate path."""
    from tasks.qa.context import path_edges
    from tasks.qa.programs import program_lines

    for r in results:
        if not r.attempts:
            run.refuse("no_candidate_path", f"{r.seed.node} [{r.hop_class}]: {r.note}")
            continue
        for a in r.attempts:
            if a.status == "accepted":
                continue
            where = f"{r.seed.node} [{r.hop_class}]"
            path = " / ".join(hop_line(e) for e in path_edges(kg, a.path)) if len(a.path) > 1 else ""
            text = f"{where}: {_first_failure(a)}"
            if a.question:
                text += f"\n      question: {a.question}"
            if path:
                text += f"\n      path: {path}"
            run.refuse(str(a.reject_reason), text)
        if r.qa is not None:
            q = r.qa
            run.accepted.append(Accepted(seed=r.seed.node, hop_class=r.hop_class, path=list(q.path),
                                         hops=[hop_line(e) for e in q.path_edges], question=q.question,
                                         answer=q.answer,
                                         program=program_lines(q.program) if q.program is not None else [],
                                         shape=program_shape(q.program) if q.program is not None else ""))


def program_shape(program: Any) -> str:
    """A program without its names: each step's label and direction, then each pin's node, label and direction
    ("-county-> -district->", "<-part of- | pin 1 -genre->"): what two questions of one template share."""
    steps = " ".join(f"-{s.label}->" if s.forward else f"<-{s.label}-" for s in program.steps)
    pins = " ".join(f"pin {c.node} " + (f"-{c.label}->" if c.forward else f"<-{c.label}-")
                    for c in program.constraints)
    return f"{steps} | {pins}" if pins else steps


def spread_line(accepted: Sequence[Accepted]) -> str:
    """How spread the accepted questions are: their distinct answers and program shapes, each with the commonest
    and its count ("40 accepted: 38 answers (most often 'Kampala' x2), 2 shapes (most often x20 ...)"): a run whose
    questions share one template or one answer teaches a model that template or that answer."""
    if not accepted:
        return "spread: (none accepted)"
    answers = Counter(a.answer for a in accepted)
    shapes = Counter(a.shape or "(no program)" for a in accepted)
    (answer, n_answer), (shape, n_shape) = answers.most_common(1)[0], shapes.most_common(1)[0]
    return (f"spread: {len(answers)} answers of {len(accepted)} (most often {answer!r} x{n_answer}); {len(shapes)} "
            f"program shapes (most often x{n_shape}: {shape})")


def report_text(run: GraphRun) -> str:
    lines = [f"# {run.name} ({run.source})", "", f"import: {run.import_summary}",
             f"labels ({len(run.labels)}): " + ", ".join(f"{k or '(none)'} x{v}" for k, v in
                                                          sorted(run.labels.items(), key=lambda t: (-t[1], t[0]))),
             f"eligible seeds: {run.eligible}; passed over (no hop can be asked): {len(run.passed_over)}; "
             f"sampled: {len(run.seeds)}; refill seeds: {len(run.refill)}; jobs (seed x hop class): {run.jobs}",
             f"accepted: {len(run.accepted)}; refusals: {sum(run.refusals.values())}", spread_line(run.accepted), "",
             "## Accepted questions", ""]
    if run.scope_named:
        lines[-3:-3] = [f"the scope names {len(run.scope_named)} node(s) of the graph ("
                        + ", ".join(repr(n) for n in run.scope_named[:5]) + "): a question asking for one of them "
                        "is refused as a leak"]
    if not run.accepted:
        lines += ["(none)", ""]
    for i, a in enumerate(run.accepted, start=1):
        lines.append(f"{i}. [{a.hop_class}, {len(a.path)} nodes] {a.question}")
        lines.append(f"   answer: {a.answer}")
        lines += [f"   {h}" for h in a.hops]
        lines += [f"   {h}" for h in a.program]
        lines.append("")
    lines += ["## Refusals by reason", ""]
    if not run.refusals:
        lines += ["(none)", ""]
    for reason, n in sorted(run.refusals.items(), key=lambda t: (-t[1], t[0])):
        lines.append(f"- {reason}: {n}")
        lines += [f"    e.g. {ex}" for ex in run.examples[reason]]
    return "\n".join(lines).rstrip() + "\n"


def write_reports(out: str | Path, graphs: Iterable[str | Path], **kwargs: Any) -> dict[str, GraphRun]:
    """Run every graph of ``graphs`` and write ``<name>.txt`` per graph and ``summary.txt`` into ``out``; returns the
    runs by name."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    runs: dict[str, GraphRun] = {}
    for g in graphs:
        run = run_graph(g, **kwargs)
        runs[run.name] = run
        (out / f"{run.name}.txt").write_text(report_text(run), encoding="utf-8")
    summary = ["graph | nodes | relations | seeds | jobs | accepted | top refusal"]
    for name, run in runs.items():
        top = max(run.refusals.items(), key=lambda t: (t[1], t[0]))[0] if run.refusals else "-"
        summary.append(f"{name} | {run.n_nodes} | {run.n_relations} | {len(run.seeds)} | {run.jobs} | "
                       f"{len(run.accepted)} | {top}")
    (out / "summary.txt").write_text("\n".join(summary) + "\n", encoding="utf-8")
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.meaning_report", description=__doc__.split("\n\n")[0])
    ap.add_argument("graphs", nargs="+", help="graph files or folders of them; 'demo' stands for "
                    "flows/demo/graphs/*.jsonl")
    ap.add_argument("--out", required=True, help="folder for the per-graph reports")
    ap.add_argument("--seeds", type=int, default=20, help="seeds per graph (default 20)")
    ap.add_argument("--min-ball", type=int, default=5, help="smallest 3-hop ball of a seed (default 5)")
    ap.add_argument("--sampling-seed", type=int, default=0)
    ap.add_argument("--scope", action="append", default=[], metavar="GRAPH=PHRASE",
                    help="what a graph covers, as [quality] scopes says it ('tate_snake=in the Tate collection'); "
                    "repeat for more graphs")
    ap.add_argument("--sampled", action="append", default=[], metavar="GRAPH",
                    help="a graph that samples a larger world, as [quality] sampled says it: no step may name one of "
                    "many in the world; repeat for more graphs")
    ap.add_argument("--one-class", action="store_true", help="one hop class a seed, half and half, as qa generate "
                    "plans jobs (default: both classes for every seed)")
    args = ap.parse_args(argv)
    graphs: list[Path] = []
    for g in args.graphs:
        graphs += demo_graphs() if g == "demo" else graph_files(g) if Path(g).is_dir() else [Path(g)]
    scopes = {}
    for item in args.scope:
        graph, sep, phrase = item.partition("=")
        if not sep or not graph.strip() or not phrase.strip():
            ap.error(f"--scope {item!r}: give GRAPH=PHRASE")
        scopes[graph.strip()] = phrase.strip()
    try:
        cfg = generation_config(scopes, args.sampled)
    except ValidationError as exc:
        ap.error(f"--scope: {exc.errors()[0]['msg']}")
    runs = write_reports(args.out, graphs, cfg=cfg, n_seeds=args.seeds, min_ball=args.min_ball,
                         sampling_seed=args.sampling_seed, one_class=args.one_class)
    print((Path(args.out) / "summary.txt").read_text(encoding="utf-8"), end="")
    return 0 if runs else 1


if __name__ == "__main__":
    sys.exit(main())
