"""Knowledge-graph flows: ingest a corpus, build graphs with LightRAG, import graphs built elsewhere, report.

Each domain is its own task: one domain's failure is recorded and the others go on. The flow process writes the
warehouse (documents, snapshots, build rows, reports), each domain's results in their own transactions. Every flow
here runs on the step contract (``flows.steps``): ``IngestStep`` (``ingest-corpus``), ``BuildGraphsStep``
(``build-graphs``), ``ImportGraphsStep`` (``import-graphs``) and ``ReportGraphsStep`` (``report-graphs``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, NamedTuple

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from flows.batches import BatchResult
from flows.checks import GraphKind, check_graph_files
from flows.params import BuildGraphs, ImportGraphs, IngestCorpus, ReportGraphs, SourceKind
from flows.progress import Progress
from flows.steps import Step, Unit, UnitFailure, run_step
from gateway.embeddings import shared_embedder
from gateway.spec import GatewaySpec
from flows.runtime import Runtime, default_settings, flow_parameters, hopforge_flow
from schemas.config import Settings
from schemas.errors import HopforgeError
from schemas.corpus import Chunk, Document, IngestOptions, IngestResult, IngestWriteSummary
from schemas.graph import Entity, EntityMerge, GraphSnapshot, NearDuplicate, Relation
from schemas.graph_build import DomainBuildResult
from tasks.graph.report import GraphReport, graph_report, report_markdown, report_rows
from tasks.corpus.ingest import IngestError, ingest_hf_dataset, ingest_jsonl, ingest_text_folders
from tasks.graph.importers import GraphImport
from tasks.graph.kg import KnowledgeGraph
from warehouse.corpus import write_ingest
from warehouse.graphs import (current_snapshot, get_snapshot, load_graph, write_build, write_near_duplicates,
                              write_snapshot)



# -- ingestion ------------------------------------------------------------------------------------------------------
def detect_source_kind(source: str) -> Literal["jsonl", "folder", "hf"]:
    p = Path(source)
    if p.is_file():
        if p.suffix == ".jsonl":
            return "jsonl"
        raise IngestError(f"{source}: a file source must be UltraDomain-style .jsonl (or pass a folder)")
    if p.is_dir():
        return "jsonl" if any(p.glob("*.jsonl")) else "folder"
    if "/" in source and not source.startswith((".", "/")):
        return "hf"  # a hub id such as "org/dataset"
    raise IngestError(f"{source}: no such file or folder (a Hugging Face dataset id looks like 'org/name')")


SOURCE_KINDS: tuple[str, ...] = ("auto", "jsonl", "folder", "hf")


def ingest_options(chunk_token_size: int, chunk_overlap_token_size: int, allow_new_domains: bool) -> IngestOptions:
    """The ingest options, or an ``IngestError`` naming the bad one (a deployment's parameters or CLI options)."""
    from pydantic import ValidationError

    try:
        return IngestOptions(chunk_token_size=chunk_token_size, chunk_overlap_token_size=chunk_overlap_token_size,
                             allow_new_domains=allow_new_domains)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'options'} = {e.get('input')!r}: {e['msg']}"
                             for e in exc.errors())
        raise IngestError(f"bad ingest options: {problems} (chunk_token_size / --chunk-tokens and "
                          "chunk_overlap_token_size / --chunk-overlap are token counts)") from None


def check_source(source: str, kind: str, options: IngestOptions) -> str:
    """What can be refused about a corpus source without reading it, before a flow run starts: the kind, the path,
    a folder without text files, domain names. Returns the kind to use."""
    from tasks.corpus.ingest import TEXT_EXTENSIONS, _jsonl_files, _plan_folder, check_domain

    if kind not in SOURCE_KINDS:
        raise IngestError(f"unknown source kind {kind!r} for {source}; choose from {', '.join(SOURCE_KINDS)}")
    resolved = detect_source_kind(source) if kind == "auto" else kind
    if resolved == "jsonl":
        for f in _jsonl_files(source):
            check_domain(f.stem, where=str(f), allow_new_domains=options.allow_new_domains)
    elif resolved == "folder":
        checked: set[str] = set()
        for dom, _, where in _plan_folder(Path(source), TEXT_EXTENSIONS):
            if dom not in checked:
                check_domain(dom, where=where, allow_new_domains=options.allow_new_domains)
                checked.add(dom)
    return resolved


def nothing_ingested(source: str, result: IngestResult) -> None:
    """A source that gave no document at all, only skipped inputs, is an error listing why (nothing is written)."""
    if result.documents or not result.skipped:
        return
    listed = "; ".join(f"{s.source}{f':{s.line}' if s.line else ''} [{s.reason_code}] {s.message}"
                       for s in result.skipped[:5])
    more = f" (and {len(result.skipped) - 5} more)" if len(result.skipped) > 5 else ""
    raise IngestError(f"nothing to ingest from {source}: every input was skipped: {listed}{more}. Fix or replace "
                      "those inputs (UltraDomain jsonl needs one JSON object per line with a text field `context`).")


def ingest_source(source: str, kind: SourceKind, options: IngestOptions, *, hf_split: str = "train",
                  hf_text_column: str = "context", hf_domain: str | None = None,
                  hf_domain_column: str | None = None) -> IngestResult:
    kind = detect_source_kind(source) if kind == "auto" else kind
    bar = Progress(f"ingest-{Path(source).name}", 0, f"ingesting {source}")

    def tick(done: int, total: int) -> None:
        bar.update(done, total)

    if kind == "jsonl":
        return ingest_jsonl(source, options=options, progress=tick)
    if kind == "folder":
        return ingest_text_folders(source, options=options, progress=tick)
    return ingest_hf_dataset(source, split=hf_split, text_column=hf_text_column, domain=hf_domain,
                             domain_column=hf_domain_column, options=options, progress=tick)


def documents_of(rt: Runtime, domain: str) -> list[Document]:
    return rt.wh.read("documents", Document, "domain = ?", [domain], order_by="doc_id")


def known_domains(rt: Runtime, table: str = "documents") -> list[str]:
    return [r["domain"] for r in rt.wh.query(f"SELECT DISTINCT domain FROM {table} ORDER BY domain")]


# -- reports --------------------------------------------------------------------------------------------------------
def current_graph(rt: Runtime, domain: str) -> tuple[KnowledgeGraph, str | None] | None:
    snap = current_snapshot(rt.wh, domain)
    if snap is None:
        return None
    return load_graph(rt.wh, domain, snap.snapshot_id), snap.source


def build_usage(rt: Runtime, domain: str, snapshot_id: str) -> dict[str, Any] | None:
    """LLM usage and cost of the latest build that produced this snapshot (None for imported graphs)."""
    rows = rt.wh.query(
        "SELECT b.llm_calls, b.prompt_tokens, b.completion_tokens FROM graph_builds b JOIN runs r USING (run_id) "
        "WHERE b.domain = ? AND b.snapshot_id = ? ORDER BY r.started_at DESC LIMIT 1",
        [domain, snapshot_id],
    )
    if not rows:
        return None
    u = rows[0]
    ep = rt.settings.endpoint("extractor")
    return {**u, "cost_usd": round(ep.cost_usd(u["prompt_tokens"] or 0, u["completion_tokens"] or 0), 6)}


def report_options(rt: Runtime, domain: str, snapshot_id: str) -> dict[str, Any]:
    """``graph_report``'s arguments besides the graph and its source: the run, the build's usage, the seed balls."""
    return {"run_id": rt.run_id, "usage": build_usage(rt, domain, snapshot_id),
            "min_ball": rt.settings.seeds.min_ball, "max_ball": rt.settings.seeds.max_ball}


def report_artifacts(rt: Runtime, reports: list[GraphReport]) -> None:
    """The run's reports as Prefect artifacts: a table and the markdown (none for no report)."""
    if reports:
        create_table_artifact(key="graph-report", table=report_rows(reports),
                              description=f"graph report, run {rt.run_id}")
        create_markdown_artifact(key="graph-report-md", markdown="# Graph report\n\n" + report_markdown(reports))


def report_domains(rt: Runtime, domains: list[str], snapshots: dict[str, str] | None = None) -> list[GraphReport]:
    """Report each domain's current graph, or the given snapshot of it (``snapshots``: domain -> snapshot id), in
    the flow's process: what ``build-graphs`` and ``import-graphs`` report of the graphs they made."""
    reports = []
    for domain in domains:
        if snapshots and domain in snapshots:
            kg = load_graph(rt.wh, domain, snapshots[domain])
            source = get_snapshot(rt.wh, domain, snapshots[domain]).source
        else:
            found = current_graph(rt, domain)
            if found is None:
                continue
            kg, source = found
        rep = graph_report(kg, source=source, **report_options(rt, domain, kg.snapshot_id or ""))
        rt.wh.write_batch("graph_reports", [rep], replace=True)
        reports.append(rep)
    report_artifacts(rt, reports)
    return reports


@task(name="report-graph", cache_policy=NO_CACHE)
def report_graph_task(kg: KnowledgeGraph, source: str | None, run_id: str, usage: dict[str, Any] | None,
                      min_ball: int, max_ball: int) -> BatchResult[GraphReport]:
    """One graph's report (``tasks.graph.report.graph_report``); nothing is written."""
    return BatchResult([graph_report(kg, run_id=run_id, source=source, usage=usage, min_ball=min_ball,
                                     max_ball=max_ball)])


class ReportGraphsStep(Step[GraphSnapshot, GraphReport]):
    """A report of each domain's current graph (the domains given, or every domain with a graph; a domain without
    one is left out): a unit is a domain's current snapshot, the graph travels with it, the task computes the report
    (its seed balls are the long part on a large graph) and the report's row lands."""

    flow, progress, doing = "report-graphs", "report-graphs", "reporting graphs"
    roles = ()
    reads = ("graph_snapshots", "entities", "relations", "graph_builds", "runs")
    writes = {"graph_reports": GraphReport}
    task = report_graph_task

    def __init__(self, domains: list[str] | None) -> None:
        self.domains = domains
        self.batch_size = 1  # a unit is one domain
        self.snapshots: list[GraphSnapshot] = []

    def prepare(self, rt: Runtime, spec: GatewaySpec) -> None:
        found = (current_snapshot(rt.wh, d) for d in self.domains or known_domains(rt, "graph_snapshots"))
        self.snapshots = [snap for snap in found if snap is not None]

    def bar(self, unit: Unit[GraphSnapshot]) -> tuple[str, int, str]:
        return self.progress, len(self.snapshots), self.doing  # one bar, in domains

    def plan(self, rt: Runtime) -> Iterator[Unit[GraphSnapshot]]:
        for snap in self.snapshots:
            yield Unit(snap.domain, snap.snapshot_id, [snap])

    def parameters(self, rt: Runtime, spec: GatewaySpec, unit: Unit[GraphSnapshot]) -> dict[str, Any]:
        [snap] = unit.items
        return {"kg": load_graph(rt.wh, unit.domain, unit.snapshot), "source": snap.source,
                **report_options(rt, unit.domain, unit.snapshot)}

    def write(self, rt: Runtime, unit: Unit[GraphSnapshot], records: list[GraphReport], con: Any) -> list[GraphReport]:
        rt.wh.write_batch("graph_reports", records, replace=True, con=con)
        return records

    def summary(self, rt: Runtime, written: list[GraphReport]) -> dict[str, Any]:
        report_artifacts(rt, written)
        print(report_markdown(written))
        return {"reports": [r.model_dump(mode="json") for r in written]}


#: The keys of ``report-graphs``'s result (the run's totals are in its run row).
REPORT_RESULT = ("run_id", "reports")


@hopforge_flow(name="report-graphs", log_prints=True)
def report_graphs(domains: list[str] | None = None, settings: Settings | None = None) -> dict[str, Any]:
    """Report every (or the given) domain's current graph: size, connectivity, seed eligibility, cost, verdict."""
    ReportGraphs.check_call(locals())
    settings = settings or default_settings()
    params = flow_parameters(report_graphs, locals())
    return {k: v for k, v in run_step(ReportGraphsStep(domains), params, settings).items() if k in REPORT_RESULT}


# -- import ---------------------------------------------------------------------------------------------------------
@task(name="import-graph-file", cache_policy=NO_CACHE)
def import_file_task(path: str, domain: str, kind: str | None) -> BatchResult[GraphImport]:
    """One graph file read as canonical records of ``domain`` (``tasks.graph.importers``); nothing is written."""
    from tasks.graph.importers import import_graph_file

    return BatchResult([import_graph_file(path, domain, kind=kind)])  # type: ignore[arg-type]


def import_failure(exc: BaseException) -> str:
    """Why a domain's file was not imported: an expected failure's own line, another's type and message."""
    return str(exc) if isinstance(exc, HopforgeError) else f"{type(exc).__name__}: {exc}"


class ImportGraphsStep(Step[str, GraphImport]):
    """Graph files imported as snapshots of their domains: a unit is one domain's file, read by the importer in the
    flow's process (``local``: the files are the flow machine's). A file that cannot be imported is recorded and the
    other domains go on (``fails_alone``); a domain's snapshot lands in one transaction, in domain order. The
    domains imported are then reported."""

    flow, progress, doing = "import-graphs", "import-graphs", "importing graphs"
    roles = ()
    reads = ("graph_snapshots", "entities", "relations", "graph_builds", "runs")
    writes = {"graph_snapshots": GraphSnapshot, "entities": Entity, "relations": Relation,
              "entity_merges": EntityMerge, "graph_reports": GraphReport}
    task = import_file_task
    fails_alone = True
    local = True

    def __init__(self, files: dict[str, str], kind: str | None) -> None:
        self.files, self.kind = files, kind
        self.batch_size = 1  # a unit is one domain's file

    def bar(self, unit: Unit[str]) -> tuple[str, int, str]:
        return self.progress, len(self.files), self.doing  # one bar, in files

    def plan(self, rt: Runtime) -> Iterator[Unit[str]]:
        for domain, path in sorted(self.files.items()):
            yield Unit(domain, "", [path])

    def parameters(self, rt: Runtime, spec: GatewaySpec, unit: Unit[str]) -> dict[str, Any]:
        return {"path": unit.items[0], "domain": unit.domain, "kind": self.kind}

    def write(self, rt: Runtime, unit: Unit[str], records: list[GraphImport],
              con: Any) -> list[tuple[str, dict[str, Any]]]:
        [imp] = records
        # warehouse.graphs.write_import's snapshot, in the runner's transaction
        snap = write_snapshot(rt.wh, imp.domain, imp.entities, imp.relations, source=imp.source,
                              build_run_id=rt.run_id, directed=imp.directed, con=con)
        print(f"{unit.domain}: {imp.summary()} -> snapshot {snap.snapshot_id}")
        return [(unit.domain, {"snapshot_id": snap.snapshot_id, "entities": len(imp.entities),
                               "relations": len(imp.relations), "bad_rows": imp.bad_rows,
                               "problems": [str(e) for e in imp.errors[:20]]})]

    def failed(self, rt: Runtime, failure: UnitFailure[str]) -> None:
        print(f"{failure.unit.domain}: import FAILED: {import_failure(failure.error)}")

    def summary(self, rt: Runtime, written: list[Any]) -> dict[str, Any]:
        done = {domain: row for domain, row in (w for w in written if not isinstance(w, UnitFailure))}
        failures = {w.unit.domain: import_failure(w.error) for w in written if isinstance(w, UnitFailure)}
        reports = report_domains(rt, sorted(done))
        print(report_markdown(reports))
        return {"imported": done, "failures": failures, "reports": [r.model_dump(mode="json") for r in reports]}


#: The keys of ``import-graphs``'s result.
IMPORT_RESULT = ("run_id", "imported", "failures", "reports")


@hopforge_flow(name="import-graphs", log_prints=True)
def import_graphs(files: dict[str, str], kind: GraphKind | None = None, settings: Settings | None = None) -> dict[str, Any]:
    """Import graph files (``{domain: path}``; GraphML, triple TSV/JSONL, RoG JSONL) as domain snapshots."""
    ImportGraphs.check_call(locals())
    settings = settings or default_settings()
    # Python callers (benchmarks, tests, the demo) name their own domains; the commands apply the domain rule
    # (``hopforge graph import`` checks with its --allow-new-domains before this flow runs: ``ImportGraphs``).
    check_graph_files(files, kind, allow_new_domains=True)
    params = flow_parameters(import_graphs, locals())
    return {k: v for k, v in run_step(ImportGraphsStep(files, kind), params, settings).items() if k in IMPORT_RESULT}


# -- build ----------------------------------------------------------------------------------------------------------
class DomainBuilt(NamedTuple):
    """A build task's record: LightRAG's result for its domain and the extractor usage it spent (the build row's)."""

    result: DomainBuildResult
    usage: dict[str, int]


@task(name="build-domain-graph", cache_policy=NO_CACHE)
def build_domain_task(spec: GatewaySpec, domain: str, documents: list[Document], options: IngestOptions,
                      working_dir: str, max_parallel_insert: int, llm_max_async: int,
                      gleaning: int | None = None) -> BatchResult[DomainBuilt]:
    """Build one domain's graph with LightRAG (``working_dir`` must be reachable where the task runs); returns the
    ``DomainBuilt`` and the usage it spent."""
    import logging

    from tasks.graph.build import build_domain_graph

    # LightRAG logs every chunk at INFO; the progress bar and the report say what matters.
    logging.getLogger("lightrag").setLevel(logging.WARNING)

    bar = Progress(f"build-{domain}", len(documents), f"building the {domain} graph")
    gateway = spec.open()

    async def go():
        try:
            return await build_domain_graph(
                domain,
                documents,
                working_dir=Path(working_dir),
                gateway=gateway,
                embedder=shared_embedder(spec.settings.embeddings),
                options=options,
                progress=lambda done, total: bar.update(done, total),
                max_parallel_insert=max_parallel_insert,
                llm_max_async=llm_max_async,
                lightrag_options={"entity_extract_max_gleaning": gleaning} if gleaning is not None else None,
            )
        finally:
            await gateway.aclose()

    res = asyncio.run(go())
    usage = gateway.ledger.snapshot()
    return BatchResult([DomainBuilt(res, _extractor_usage(usage))], usage)


class BuildGraphsStep(Step[Document, DomainBuilt]):
    """One LightRAG graph per domain, ``source`` ingested first in the same run (documents already ingested are not
    duplicated): a unit is a domain's documents. Builds run one at a time in a process (LightRAG's storage locks); a
    domain whose build fails is recorded and the others go on (``fails_alone``), and so is a domain without documents.
    A domain's snapshots (raw and resolved), merge log, near-duplicate report and build row land in one transaction.
    Resumable: LightRAG skips the documents it finished, and answered extraction calls come from the cache."""

    flow, progress, doing = "build-graphs", "build-graphs", "building graphs"
    roles = ("extractor",)
    reads = ("documents", "graph_snapshots", "entities", "relations", "graph_builds", "runs")
    writes = {"documents": Document, "chunks": Chunk, "ingest_skips": dict, "graph_snapshots": GraphSnapshot,
              "entities": Entity, "relations": Relation, "entity_merges": EntityMerge,
              "entity_near_duplicates": NearDuplicate, "graph_builds": dict, "graph_build_failures": dict,
              "graph_reports": GraphReport}
    task = build_domain_task
    fails_alone = True
    one_per_process = True
    NO_DOCUMENTS = "no documents ingested for this domain"

    def __init__(self, domains: list[str] | None, source: str | None, source_kind: SourceKind,
                 options: IngestOptions, *, gleaning: int | None, max_parallel_insert: int,
                 llm_max_async: int) -> None:
        self.domains, self.source, self.source_kind, self.options = domains, source, source_kind, options
        self.build = {"max_parallel_insert": max_parallel_insert, "llm_max_async": llm_max_async, "gleaning": gleaning}
        self.batch_size = 1  # a unit is one domain
        self.ingested: IngestWriteSummary | None = None
        self.counts: dict[str, int] = {}  # documents of each domain to build
        self.failures: dict[str, str] = {}  # domains refused before any build

    def prepare(self, rt: Runtime, spec: GatewaySpec) -> None:
        self.ingested = _ingest_first(rt, self.source, self.source_kind, self.options) if self.source else None
        self.domains = self.domains or known_domains(rt)
        if not self.domains:
            raise IngestError("no documents to build from: give a source (a corpus folder, jsonl files or a dataset id)")
        counts = {r["domain"]: int(r["n"]) for r in rt.wh.query(
            "SELECT domain, count(*) AS n FROM documents GROUP BY domain")}  # fmt: skip
        for domain in self.domains:
            if counts.get(domain):
                self.counts[domain] = counts[domain]
            else:
                self.failures[domain] = self.NO_DOCUMENTS

    def bar(self, unit: Unit[Document]) -> tuple[str, int, str]:
        return self.progress, sum(self.counts.values()), self.doing  # one bar, in documents

    def plan(self, rt: Runtime) -> Iterator[Unit[Document]]:
        for domain in self.domains or []:
            if domain in self.counts:
                yield Unit(domain, "", documents_of(rt, domain))

    def parameters(self, rt: Runtime, spec: GatewaySpec, unit: Unit[Document]) -> dict[str, Any]:
        working_dir = (rt.settings.data_dir / "graphs").resolve() / unit.domain / "lightrag"
        return {"spec": spec, "domain": unit.domain, "documents": unit.items, "options": self.options,
                "working_dir": str(working_dir), **self.build}

    def write(self, rt: Runtime, unit: Unit[Document], records: list[DomainBuilt],
              con: Any) -> list[tuple[str, dict[str, Any]]]:
        [(res, usage)] = records
        snap = _write_build(rt, res, usage, con)
        print(f"{res.domain}: {res.docs_processed}/{res.docs_total} documents, {len(res.entities)} entities, "
              f"{len(res.relations)} relations" + (f", {res.docs_failed} failed documents" if res.docs_failed else ""))
        return [(res.domain, {"snapshot_id": snap, "documents": res.docs_total, "processed": res.docs_processed,
                              "failed": res.docs_failed, "entities": len(res.entities),
                              "relations": len(res.relations)})]

    def failed(self, rt: Runtime, failure: UnitFailure[Document]) -> None:
        print(f"{failure.unit.domain}: build FAILED: {failure.reason}")

    def summary(self, rt: Runtime, written: list[Any]) -> dict[str, Any]:
        built = {domain: row for domain, row in (w for w in written if not isinstance(w, UnitFailure))}
        failures = {**self.failures, **{w.unit.domain: w.reason for w in written if isinstance(w, UnitFailure)}}
        # Report what this run built (a domain whose build extracted nothing has no snapshot to report).
        made = {d: b["snapshot_id"] for d, b in built.items() if b["snapshot_id"]}
        reports = report_domains(rt, sorted(made), made)
        print(report_markdown(reports))
        return {"ingest": self.ingested.model_dump() if self.ingested else None, "built": built,
                "failures": failures, "reports": [r.model_dump(mode="json") for r in reports]}


#: The keys of ``build-graphs``'s result (the run's LLM totals are in its run row).
BUILD_RESULT = ("run_id", "ingest", "built", "failures", "reports")


@hopforge_flow(name="build-graphs", log_prints=True)
def build_graphs(
    domains: list[str] | None = None,
    source: str | None = None,
    source_kind: SourceKind = "auto",
    chunk_token_size: int = 1200,
    chunk_overlap_token_size: int = 100,
    allow_new_domains: bool = False,
    max_parallel_insert: int = 2,
    llm_max_async: int = 4,
    gleaning: int | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Ingest ``source`` (if given), then build one LightRAG graph per domain and report on each.

    ``gleaning`` sets LightRAG's extra extraction rounds per chunk (its default is 1; 0 halves the calls).

    Re-running continues where a previous run stopped: documents already ingested are not duplicated, documents
    LightRAG finished are skipped, and extraction calls already answered come from the cache.
    """
    BuildGraphs.check_call(locals())
    settings = settings or default_settings()
    options = ingest_options(chunk_token_size, chunk_overlap_token_size, allow_new_domains)
    if source:
        check_source(source, source_kind, options)
    step = BuildGraphsStep(domains, source, source_kind, options, gleaning=gleaning,
                           max_parallel_insert=max_parallel_insert, llm_max_async=llm_max_async)
    params = flow_parameters(build_graphs, locals())
    return {k: v for k, v in run_step(step, params, settings).items() if k in BUILD_RESULT}


def _ingest_first(rt: Runtime, source: str, source_kind: SourceKind, options: Any) -> IngestWriteSummary:
    """Ingest ``source`` before the builds (documents already ingested are not duplicated); its summary."""
    result = ingest_source(source, source_kind, options)
    nothing_ingested(source, result)
    summary = write_ingest(rt.wh, result, rt.run_id)
    print(f"ingested {source}: {summary.documents_written} new documents, {summary.chunks_written} chunks, "
          f"{summary.already_present} already present, {len(result.skipped)} skipped inputs")
    for s in result.skipped[:20]:
        print(f"  skipped {s.source}{f':{s.line}' if s.line else ''} [{s.reason_code}] {s.message}")
    return summary


def _extractor_usage(usages) -> dict[str, int]:
    """The build row's usage columns from a build task's ledger."""
    u = next((u for u in usages if u.role == "extractor"), None)
    return {"llm_calls": u.calls if u else 0, "cache_hits": u.cache_hits if u else 0,
            "prompt_tokens": u.prompt_tokens if u else 0, "completion_tokens": u.completion_tokens if u else 0}


def _write_build(rt: Runtime, res: DomainBuildResult, usage: dict[str, int], con: Any,
                 resolve: bool = True, near_duplicate_threshold: float | None = 0.95) -> str:
    """Store the build in the open transaction ``con``: the raw snapshot, then (when names merge) the resolved
    snapshot with its merge log, the near-duplicate report, and the build row. The raw snapshot stays, so any merge
    can be reviewed and undone."""
    from tasks.graph.entity_resolution import near_duplicates, resolve_entities

    snapshot_id = None
    if res.entities:
        raw = write_snapshot(rt.wh, res.domain, res.entities, res.relations, source="lightrag",
                             build_run_id=rt.run_id, directed=res.directed, con=con)
        snapshot_id = raw.snapshot_id
        if resolve:
            merged = resolve_entities(res.entities, res.relations, run_id=rt.run_id, from_snapshot_id=raw.snapshot_id)
            if merged.merges:
                snap = write_snapshot(rt.wh, res.domain, merged.entities, merged.relations, source="lightrag",
                                      build_run_id=rt.run_id, directed=res.directed, merges=merged.merges, con=con)
                snapshot_id = snap.snapshot_id  # write_snapshot stored the merge log with it
                print(f"{res.domain}: entity resolution: {merged.summary()}")
            if near_duplicate_threshold is not None:
                try:
                    pairs = near_duplicates([e.name for e in merged.entities], rt.embedder.embed, domain=res.domain,
                                            threshold=near_duplicate_threshold, snapshot_id=snapshot_id, run_id=rt.run_id)
                except Exception as exc:  # the report is advisory: never lose a build over it
                    print(f"{res.domain}: near-duplicate report skipped: {type(exc).__name__}: {exc}")
                    pairs = []
                if pairs:
                    write_near_duplicates(rt.wh, pairs, con=con)
                    print(f"{res.domain}: {len(pairs)} near-duplicate name pairs reported for review (not merged)")
    write_build(rt.wh, res, rt.run_id, snapshot_id, usage, con=con)
    return snapshot_id or ""


@task(name="ingest-source", cache_policy=NO_CACHE)
def ingest_task(source: str, kind: SourceKind, options: IngestOptions) -> BatchResult[IngestResult]:
    """A corpus source read and chunked (``ingest_source``); nothing is written."""
    return BatchResult([ingest_source(source, kind, options)])


def _skip_line(s: Any) -> str:
    return f"{s.source}{f':{s.line}' if s.line else ''} [{s.reason_code}] {s.message}"


class IngestStep(Step[str, IngestResult]):
    """A corpus ingested into ``documents`` and ``chunks``: one unit, the source, read and chunked in the flow's
    process (``local``: a folder or files of the flow's machine, a dataset it downloads), its documents, chunks and
    skipped inputs landed by ``warehouse.corpus.write_ingest`` in its one transaction (``own_transaction``; a
    document already ingested is not written again). A source that gave no document, only skipped inputs, is an
    ``IngestError`` and writes nothing."""

    flow, progress, doing = "ingest-corpus", "ingest-corpus", "ingesting the corpus"
    roles = ()
    reads = ("documents",)
    writes = {"documents": Document, "chunks": Chunk, "ingest_skips": dict}
    task = ingest_task
    local = True
    own_transaction = True

    def __init__(self, source: str, kind: str, options: IngestOptions) -> None:
        self.source, self.kind, self.options = source, kind, options
        self.batch_size = 1  # one unit, the source

    def bar(self, unit: Unit[str]) -> tuple[str, int, str]:
        return self.progress, 1, self.doing

    def plan(self, rt: Runtime) -> Iterator[Unit[str]]:
        yield Unit("", "", [self.source])

    def parameters(self, rt: Runtime, spec: GatewaySpec, unit: Unit[str]) -> dict[str, Any]:
        return {"source": self.source, "kind": self.kind, "options": self.options}

    def write(self, rt: Runtime, unit: Unit[str], records: list[IngestResult],
              con: Any) -> list[tuple[IngestResult, IngestWriteSummary]]:
        [result] = records
        nothing_ingested(self.source, result)
        return [(result, write_ingest(rt.wh, result, rt.run_id))]

    def summary(self, rt: Runtime, written: list[tuple[IngestResult, IngestWriteSummary]]) -> dict[str, Any]:
        [(result, summary)] = written
        for s in result.skipped:
            print(f"skipped {_skip_line(s)}")
        if result.skipped:
            create_table_artifact(key="ingest-skips", table=[s.model_dump() for s in result.skipped],
                                  description=f"inputs skipped by run {rt.run_id}")
        return {**summary.model_dump(exclude={"run_id"}), "skipped": len(result.skipped),
                "duplicates": result.duplicates, "skips": [_skip_line(s) for s in result.skipped[:100]]}


#: The keys of ``ingest-corpus``'s result: the run, what ``write_ingest`` wrote, the skipped inputs.
INGEST_RESULT = ("run_id", *(k for k in IngestWriteSummary.model_fields if k != "run_id"), "skipped", "duplicates",
                 "skips")


@hopforge_flow(name="ingest-corpus", log_prints=True)
def ingest_corpus(
    source: str,
    source_kind: SourceKind = "auto",
    allow_new_domains: bool = False,
    chunk_token_size: int = 1200,
    chunk_overlap_token_size: int = 100,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Ingest a corpus into `documents` and `chunks` (one transaction); list skipped inputs with reasons.

    A source that yields no document, only skipped inputs, is an ``IngestError`` and writes nothing."""
    IngestCorpus.check_call(locals())
    settings = settings or default_settings()
    options = ingest_options(chunk_token_size, chunk_overlap_token_size, allow_new_domains)
    step = IngestStep(source, check_source(source, source_kind, options), options)
    params = flow_parameters(ingest_corpus, locals())
    return {k: v for k, v in run_step(step, params, settings).items() if k in INGEST_RESULT}
