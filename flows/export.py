"""The `export-datasets` flow: questions, gold paths and accepted trajectories -> a versioned dataset directory.

Reads the warehouse (``qa``, ``gold_paths``, ``trajectories``), writes ``<data_dir>/exports/<version>/`` with
``tasks.export.datasets`` (Hugging Face layout, LLaMA-Factory ShareGPT + ``dataset_info.json``, verl RL parquet, plain QA,
OpenAI messages, dataset card, manifest), and optionally uploads it to the Hugging Face Hub. The export itself
writes nothing to the warehouse except the run record.

With ``[ikg] levels`` set, the export also holds IKG variants of its questions (``flows.ikg_data``): the run
prints, per domain and level, the variants kept and rejected with the reasons, and a domain with no corpus gets
one line saying it gets none.

The flow runs on the step contract (``flows.steps``): ``ExportStep`` reads what the export is made of in
``prepare``, its one unit (every question) is built into rows by a task, and its ``write`` writes the version's
directory.

The manifest's ``warehouse_backup`` names the backup the export can be rebuilt from: the newest backup under
``<data_dir>/backups`` whose ``EXPORT_TABLES`` hold the rows exported (``warehouse.backup.backup_for_export``), or
null with the reason. The export does not take a backup itself: that would copy the whole warehouse, graphs
included, at every export; ``hopforge warehouse backup`` before an export makes one it names.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from flows.batches import BatchResult
from flows.checks import writable_folder
from flows.distill import load_gold_paths, load_trajectories
from flows.evaluate import evaluation_card
from flows.params import ExportDatasets
from flows.ikg_data import ikg_export_data
from flows.qa import load_qa
from flows.runtime import Runtime, default_settings, flow_parameters, hopforge_flow
from flows.steps import Step, Unit, run_step
from gateway.spec import GatewaySpec
from schemas.config import Settings
from schemas.errors import InputError
from schemas.qa import QA
from tasks.export.datasets import BuiltExport, ExportInputs, ExportResult, build_export, check_include, write_export
from tasks.export.hub import check_publish, publish_version
from tasks.export.rows import EXPORT_CONFIGS, ExportConfig
from warehouse.backup import backup_for_export

#: The warehouse tables an export is made from: a backup holding the same rows in them rebuilds the same export.
EXPORT_TABLES = ("qa", "gold_paths", "trajectories")


def _artifact(rows: list[dict[str, Any]], description: str) -> None:
    """A Prefect table artifact, only inside a flow run (a plain call has no API to send it to)."""
    from prefect.artifacts import create_table_artifact
    from prefect.context import FlowRunContext

    if rows and FlowRunContext.get() is not None:
        create_table_artifact(key="dataset-export", table=rows, description=description)


def _say_export(result: Any, backup: dict[str, Any]) -> None:
    """An export's backup, rows per config and split (also as a table artifact), first invalid rows and path."""
    print(f"warehouse backup: {backup['id']}" if backup["id"] else f"warehouse backup: none ({backup['reason']})")
    table = [{"config": c, "split": s, "rows": n} for c, splits in result.rows.items() for s, n in splits.items()]
    _artifact(table, f"export {result.version} at {result.path}")
    for line in table:
        print(f"{line['config']}/{line['split']}: {line['rows']} rows")
    for bad in result.invalid[:10]:
        print(f"invalid {bad.config} row {bad.id}: {'; '.join(bad.problems)}")
    print(f"export {result.version}: {result.path}")


@task(name="build-export", cache_policy=NO_CACHE)
def build_export_task(inputs: ExportInputs, include: tuple[str, ...]) -> BatchResult[BuiltExport]:
    """Every row of every included config (``tasks.export.datasets.build_export``); nothing is written."""
    return BatchResult([build_export(inputs, include)])


class ExportStep(Step[QA, BuiltExport]):
    """One export version. ``prepare`` reads what it is made of: the questions (none is an ``InputError``), their
    gold paths and accepted trajectories, the IKG variants (``[ikg] levels``), the backup it can be rebuilt from and
    the latest evaluation's card section. One unit, every question, whose rows the task builds (``local``: the unit
    is everything the run read); ``write`` writes the version's directory (``tasks.export.datasets.write_export``;
    no table: the export writes nothing to the warehouse but its run record); ``summary`` says what it holds and
    publishes it when a repository is named."""

    flow, progress, doing = "export-datasets", "export", "exporting questions"
    roles = ()
    reads = (*EXPORT_TABLES, "graph_snapshots", "entities", "relations", "documents", "chunks", "eval_items",
             "eval_runs", "runs")
    writes: dict[str, type] = {}
    task = build_export_task
    local = True

    def __init__(self, version: str | None, include: tuple[str, ...], *, repo_id: str | None, token_env: str,
                 private: bool) -> None:
        self.version, self.include = version, include
        self.publish = {"repo_id": repo_id, "token_env": token_env, "private": private}
        self.batch_size = 1  # one unit, the whole export
        self.inputs = ExportInputs(qas=[])  # read in prepare
        self.ikg_lines: list[str] = []
        self.backup: dict[str, Any] = {}
        self.pictures: dict[str, bytes] = {}
        self.card = ""

    def prepare(self, rt: Runtime, spec: GatewaySpec) -> None:
        qas = load_qa(rt)
        if not qas:
            raise InputError("no questions in the warehouse: run `generate-qa` first")
        ikg = ikg_export_data(rt.wh, qas, rt.settings, run_id=rt.run_id)  # nothing unless [ikg] levels is set
        for line in ikg.lines:
            print(line)
        self.ikg_lines = ikg.lines
        self.inputs = ExportInputs(qas=qas, gold_paths=load_gold_paths(rt.wh),
                                   trajectories=load_trajectories(rt.wh, "status = 'accepted'"), ikg=ikg.items)
        self.backup = backup_for_export(rt.wh, rt.settings.data_dir, EXPORT_TABLES)
        # The latest evaluation by graph setting (complete, IKG-x%), when one scored IKG items: a picture and a section.
        self.pictures, self.card = evaluation_card(rt)

    def bar(self, unit: Unit[QA]) -> tuple[str, int, str]:
        return self.progress, len(unit.items), self.doing

    def plan(self, rt: Runtime) -> Iterator[Unit[QA]]:
        yield Unit("", "", self.inputs.qas)

    def parameters(self, rt: Runtime, spec: GatewaySpec, unit: Unit[QA]) -> dict[str, Any]:
        return {"inputs": self.inputs, "include": self.include}

    def write(self, rt: Runtime, unit: Unit[QA], records: list[BuiltExport], con: Any) -> list[ExportResult]:
        [built] = records
        fingerprint = self.inputs.fingerprint(self.include)  # the version's default name and the manifest's
        return [write_export(built, rt.settings.data_dir / "exports", self.version or f"v-{fingerprint[:16]}",
                             fingerprint=fingerprint, warehouse_backup=self.backup, extra_files=self.pictures,
                             card_extra=self.card)]

    def summary(self, rt: Runtime, written: list[ExportResult]) -> dict[str, Any]:
        [result] = written
        _say_export(result, self.backup)
        url = tag = None
        if self.publish["repo_id"]:
            pub = publish_version(result.path, **self.publish)
            url, tag = pub.commit_url, pub.revision
            print(f"published {result.version} to {self.publish['repo_id']} (tag {tag}): {url}")
        return {"version": result.version, "path": str(result.path), "rows": result.rows,
                "invalid": [r.as_dict() for r in result.invalid], "skipped": result.skipped, "commit_url": url,
                "tag": tag, "warehouse_backup": self.backup, "ikg": self.ikg_lines}


#: The keys of ``export-datasets``'s result.
EXPORT_RESULT = ("run_id", "version", "path", "rows", "invalid", "skipped", "commit_url", "tag", "warehouse_backup",
                 "ikg")


@hopforge_flow(name="export-datasets", log_prints=True)
def export_datasets(
    version: str | None = None,
    include: Sequence[ExportConfig] = EXPORT_CONFIGS,
    repo_id: str | None = None,
    token_env: str = "HF_TOKEN",
    private: bool = True,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Export every question and accepted trajectory (``include`` picks the configs); with ``repo_id``, publish
    the export to that Hugging Face dataset repository with the token in ``token_env``, as ``refresh`` publishes a
    version (``tasks.export.hub.publish_version``: one commit on ``main`` that replaces the previous data files, and a
    tag named after the version).

    Returns the version, the export path, rows per config and split, the rows left out as invalid, and the
    commit's URL and tag when one was published."""
    ExportDatasets.check_call(locals())
    settings = settings or default_settings()
    include = check_include(include)  # canonical order
    check_publish(repo_id, token_env)  # before any work: a repository id or token that cannot work stops here
    writable_folder(settings.data_dir / "exports", "the exports folder")
    step = ExportStep(version, include, repo_id=repo_id, token_env=token_env, private=private)
    params = flow_parameters(export_datasets, locals())
    return {k: v for k, v in run_step(step, params, settings).items() if k in EXPORT_RESULT}


__all__ = ["ExportStep", "export_datasets"]
