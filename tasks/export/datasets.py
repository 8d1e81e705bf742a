"""Datasets for trainers: deterministic, split-aware, versioned exports of questions and trajectories.

One export is one directory ``<data_dir>/exports/<version>/`` in the Hugging Face dataset layout:

```
README.md                                   dataset card; YAML ``configs:`` lists data_files per split
manifest.json                               rows per config and split, sha256 and size of every other file, and
                                            the warehouse backup the export can be rebuilt from
dataset_info.json                           LLaMA-Factory dataset registry (ShareGPT with tools)
qa/<split>-00000-of-00001.parquet           plain questions with gold paths and provenance
sft/<split>-00000-of-00001.parquet          LLaMA-Factory ShareGPT + tools, <think> before each reply
sft_nothink/<split>-00000-of-00001.parquet  the same conversations without reasoning (template qwen3_nothink)
rl/<split>-00000-of-00001.parquet           verl RL rows (prompt, rule reward ground truth, tools kwargs)
messages/<split>-00000-of-00001.parquet     OpenAI/Qwen messages with tool_calls (TRL and other trainers)
```

Rules:

- Splits are the questions' (``qa.split``): leak-safe by construction, and checked here: an answer or seed
  entity in two splits fails the export with ``ExportError`` before anything is written. A trajectory goes
  where its question goes. Questions without a split and trajectories whose question is gone are counted, not
  exported.
- Deterministic: rows are sorted by id, every Parquet file has an explicit Arrow schema, JSON is written with
  sorted keys, nothing holds a timestamp. The same warehouse gives byte-identical files.
- The version, unless given, is a content hash of the inputs (question, gold path and accepted trajectory
  records) and of ``FORMAT_VERSION`` and the configs included, so a new version appears exactly when the data
  or the format changes.
- IKG variants (Graph-RFT's incomplete-graph setting, ``tasks.env.ikg``; ``ExportInputs.ikg``) are rows of their
  question with the view's setting: a qa row and an rl row per variant (the rl row's ground truth carries
  ``kg_setting``, its tools' ``create_kwargs`` the ``view_id`` the tool server serves), and sft/messages rows from
  the variant's template trajectory. A variant keeps its question's split. Every row of every config says its
  setting: ``kg_setting`` ("complete" / "incomplete"), ``ikg_level`` (null when complete), ``hidden_triples``
  (empty when complete) and ``view_id`` (null when complete). With variants, the rl rows offer ``web_search`` too
  (Graph-RFT offers the web tool in both settings).
- ShareGPT rows are checked against LLaMA-Factory's rules (``validate_sharegpt``) and OpenAI rows for complete
  tool exchanges (``validate_messages``) before writing; a row that breaks them is reported in the manifest and
  the result, and not written.

The rows of each config and their checks are ``tasks.export.rows``; the dataset card and ``dataset_info.json``,
``tasks.export.card``. This module checks an export's configuration, builds its tables with their Arrow schemas,
and writes and verifies it on disk.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.errors import InputError
from schemas.qa import QA, SPLITS, GoldPath
from schemas.tools import OMNE_TOOLS
from schemas.trajectories import Trajectory
from tasks.env.ikg import IKGView, setting_fields, with_setting
from tasks.export.card import dataset_card, dataset_info
from tasks.export.rows import (
    EXPORT_CONFIGS,
    data_file,
    export_gold_paths,
    messages_row,
    qa_row,
    rl_row,
    sharegpt_row,
    validate_messages,
    validate_sharegpt,
)
from tasks.qa.splits import describe_leaks, split_leaks

#: Bump when a row layout changes: it is part of the default version hash. 2: the QA rows no longer carry the run
#: and attempt that made them. 3: the tools are the tool contract (``schemas.tools.tool_schema``: no per-question enum).
#: 4: every qa, rl, sft and messages row carries its graph setting (``kg_setting``, ``ikg_level``, ``hidden_triples``,
#: ``view_id``; ``tasks.env.ikg.setting_fields``), and IKG variants are exported next to their questions.
FORMAT_VERSION = 4

#: Fields that name the process that made a record, not what it is: left out of the fingerprint, so a run resumed
#: after a crash (other run ids, same content) exports the same version.
RUN_PROVENANCE = frozenset({"run_id", "attempt_id"})

_VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class ExportError(InputError):
    """An export that cannot be made or used, worded for a person."""


def check_version(version: str) -> str:
    """``version`` if it is a safe directory name (letters, digits, ``._-``, not starting with a dot)."""
    if not _VERSION_RE.match(version):
        raise ExportError(
            f"version {version!r} is not usable as a directory name: use letters, digits, '.', '_' or '-' "
            "(at most 128 characters, starting with a letter or digit)"
        )
    return version


def check_include(include: Iterable[str]) -> tuple[str, ...]:
    """The configs to export, in canonical order; ``ExportError`` naming any unknown one."""
    wanted = list(dict.fromkeys(include))
    unknown = [c for c in wanted if c not in EXPORT_CONFIGS]
    if unknown or not wanted:
        choices = ", ".join(EXPORT_CONFIGS)
        raise ExportError(f"unknown or no export config(s) {unknown or wanted}; choose from {choices}")
    return tuple(c for c in EXPORT_CONFIGS if c in wanted)


# -- inputs -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IKGItem:
    """One IKG variant to export: its question, its view, and its template trajectory (``None``, or a rejected one,
    when none could be made: the variant then has qa and rl rows only)."""

    qa: QA
    view: IKGView
    trajectory: Trajectory | None = None


@dataclass
class ExportInputs:
    """What an export is made from: the questions, their gold paths (by ``qa_id``), the accepted trajectories, and
    the IKG variants of the questions (``ikg``, empty unless the export was asked for levels)."""

    qas: list[QA]
    gold_paths: dict[str, list[GoldPath]] = field(default_factory=dict)
    trajectories: list[Trajectory] = field(default_factory=list)
    ikg: list[IKGItem] = field(default_factory=list)

    def fingerprint(self, include: Sequence[str]) -> str:
        """sha256 over the inputs in canonical JSON (sorted by id, without ``RUN_PROVENANCE``), the format version
        and the configs."""
        h = hashlib.sha256()
        h.update(json.dumps({"format": FORMAT_VERSION, "include": list(include)}, sort_keys=True).encode())
        for q in sorted(self.qas, key=lambda q: q.qa_id):
            h.update(b"\nqa:" + _canonical(q.model_dump(mode="json", exclude=set(RUN_PROVENANCE))))
        for qa_id in sorted(self.gold_paths):
            for g in sorted(self.gold_paths[qa_id], key=lambda g: g.rank):
                h.update(b"\ngold:" + _canonical(g.model_dump(mode="json", exclude=set(RUN_PROVENANCE))))
        for t in sorted(self.trajectories, key=lambda t: t.trajectory_id):
            h.update(b"\ntraj:" + _canonical(t.model_dump(mode="json", exclude=set(RUN_PROVENANCE))))
        for item in sorted(self.ikg, key=lambda i: i.view.view_id):
            h.update(b"\nikg:" + _canonical(setting_fields(item.view)))
            if item.trajectory is not None:
                h.update(b"\nikg-traj:" + _canonical(item.trajectory.model_dump(mode="json",
                                                                                 exclude=set(RUN_PROVENANCE))))
        return h.hexdigest()


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# -- Arrow schemas ----------------------------------------------------------------------------------------------

_S = pa.string()
_STRS = pa.list_(pa.string())
#: The graph setting every row carries (``tasks.env.ikg.setting_fields``).
_SETTING = [("kg_setting", _S), ("ikg_level", pa.float64()), ("hidden_triples", pa.list_(_STRS)), ("view_id", _S)]
_SHAREGPT = pa.schema([
    ("id", _S), ("qa_id", _S), ("kind", _S), ("graph_type", _S), ("hop_class", _S), ("question", _S),
    ("golden_answer", _S), ("conversations", pa.list_(pa.struct([("from", _S), ("value", _S)]))), ("system", _S),
    ("tools", _S), *_SETTING,
])  # fmt: skip
_TOOL_CALL = pa.struct([("id", _S), ("type", _S), ("function", pa.struct([("name", _S), ("arguments", _S)]))])
_MESSAGE = pa.struct([
    ("role", _S), ("content", _S), ("reasoning_content", _S), ("tool_calls", pa.list_(_TOOL_CALL)),
    ("tool_call_id", _S), ("name", _S),
])  # fmt: skip
_QA = pa.schema([
    ("qa_id", _S), ("domain", _S), ("hop_class", _S), ("question", _S), ("answer", _S), ("path", _STRS),
    ("path_edges", pa.list_(pa.struct([
        ("head", _S), ("tail", _S), ("relation", _S), ("keywords", _STRS), ("description", _S),
        ("directed", pa.bool_()), ("forward", pa.bool_()), ("source_chunk_ids", _STRS)]))),
    ("gold_paths", pa.list_(pa.struct([
        ("rank", pa.int64()), ("path", _STRS), ("triples", pa.list_(_STRS)), ("verdict", _S),
        ("is_generator_path", pa.bool_())]))),
    ("split", _S), ("snapshot_id", _S), ("seed", _S), ("source_chunk_ids", _STRS),
    ("writer", _S), ("kind", _S), ("program", _S), ("sparql", _S), *_SETTING,
])  # fmt: skip


def _rl_schema(tools: Sequence[str]) -> pa.Schema:
    # tools_kwargs holds one struct field per offered tool, so the schema is built per export.
    # create_kwargs.view_id: the IKG view the tool server serves the row (null on the complete graph).
    create = pa.struct([("graph_type", _S), ("view_id", _S)])
    tool_kwargs = pa.struct([(t, pa.struct([("create_kwargs", create)])) for t in tools])
    extra = pa.struct([
        ("split", _S), ("index", pa.int64()), ("qa_id", _S), ("graph_type", _S), ("hop_class", _S), ("question", _S),
        ("tools_kwargs", tool_kwargs), ("need_tools_kwargs", pa.bool_()), *_SETTING,
    ])  # fmt: skip
    return pa.schema([
        ("data_source", _S), ("prompt", pa.list_(pa.struct([("role", _S), ("content", _S)]))), ("ability", _S),
        ("reward_model", pa.struct([("style", _S), ("ground_truth", _S)])), ("extra_info", extra), ("agent_name", _S),
    ])  # fmt: skip


def _messages_schema(rows: Sequence[Mapping[str, Any]]) -> pa.Schema:
    # The tool schemas are nested JSON whose keys depend on the tools offered: their Arrow type is inferred
    # from the rows (deterministic for the same rows), everything else is fixed.
    tools_type = pa.array([r["tools"] for r in rows]).type if rows else pa.list_(pa.null())
    return pa.schema([
        ("id", _S), ("qa_id", _S), ("kind", _S), ("graph_type", _S), ("question", _S), ("golden_answer", _S),
        ("messages", pa.list_(_MESSAGE)), ("tools", tools_type), ("tools_json", _S), *_SETTING,
    ])  # fmt: skip


# -- building and writing -------------------------------------------------------------------------------------------


@dataclass
class InvalidRow:
    """A row left out because it breaks a format rule."""

    config: str
    id: str
    problems: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"config": self.config, "id": self.id, "problems": self.problems}


@dataclass
class BuiltExport:
    """Rows per config and split, the Arrow schema of each config, and what was left out and why."""

    tables: dict[str, dict[str, list[dict[str, Any]]]]
    schemas: dict[str, pa.Schema]
    invalid: list[InvalidRow] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)


def build_export(
    inputs: ExportInputs, include: Sequence[str], *, tools: Sequence[str] = OMNE_TOOLS
) -> BuiltExport:
    """Every row of every included config, grouped by split and sorted by id; ShareGPT rows validated.

    ``tools`` are the tools an RL row offers (the Omne-R1 pair by default; ``web_search`` joins them when the
    export holds IKG variants). A question's IKG variants follow its own row, by level."""
    include = check_include(include)
    leaks = split_leaks(inputs.qas)
    if leaks:
        # A split is leak-safe or it is not exported: a model tested on an answer it was trained to reach (or
        # on a seed whose neighbourhood it was trained on) scores what it memorised.
        raise ExportError(f"splits are not leak-safe, nothing was written: {describe_leaks(leaks)}; "
                          "move or drop the questions that share these entities, then export again")
    sel = _select(inputs, tools)
    tables: dict[str, dict[str, list[dict[str, Any]]]] = {}
    schemas: dict[str, pa.Schema] = {}
    invalid: list[InvalidRow] = []
    if "qa" in include:
        qa_rows = ((q.split, qa_row(q, sel.gold[q.qa_id], v)) for q, v in sel.question_views)
        tables["qa"] = _split_rows(qa_rows)  # type: ignore[arg-type]
        schemas["qa"] = _QA
    for config, think in (("sft", True), ("sft_nothink", False)):
        if config not in include:
            continue
        tables[config] = _sharegpt_rows(sel, config, think, invalid)
        schemas[config] = _SHAREGPT
    if "rl" in include:
        rl: dict[str, list[dict[str, Any]]] = {}
        for q, view in sel.question_views:
            part = rl.setdefault(q.split, [])  # type: ignore[arg-type]
            part.append(with_setting(rl_row(q, sel.gold[q.qa_id], len(part), sel.tools), view))
        tables["rl"] = {s: rl[s] for s in SPLITS if s in rl}
        schemas["rl"] = _rl_schema(sel.tools)
    if "messages" in include:
        rows_m = []
        for t, view in sel.with_views:
            row = messages_row(t, sel.by_id[t.qa_id], view)
            problems = validate_messages(row)
            if problems:
                invalid.append(InvalidRow("messages", t.trajectory_id, problems))
                continue
            rows_m.append((sel.by_id[t.qa_id].split, row))
        tables["messages"] = _split_rows(rows_m)  # type: ignore[arg-type]
        schemas["messages"] = _messages_schema([r for _, r in rows_m])
    return BuiltExport(tables=tables, schemas=schemas, invalid=invalid, skipped=sel.skipped)


@dataclass
class _Selection:
    """What an export is built from: the questions with a split (each followed by its IKG variants' views), the
    accepted trajectories of those questions (and of the variants) in id order, the RL rows' tools, and the
    counts of what was left out."""

    by_id: dict[str, QA]
    gold: dict[str, list[GoldPath]]
    question_views: list[tuple[QA, IKGView | None]]
    with_views: list[tuple[Trajectory, IKGView | None]]
    tools: Sequence[str]
    skipped: dict[str, int]


def _select(inputs: ExportInputs, tools: Sequence[str]) -> _Selection:
    """The questions, variants and trajectories ``build_export`` writes rows of (``_Selection``)."""
    by_id = {q.qa_id: q for q in inputs.qas}
    with_split = sorted((q for q in inputs.qas if q.split in SPLITS), key=lambda q: q.qa_id)
    skipped = {"questions_without_split": sum(q.split not in SPLITS for q in inputs.qas)}
    trajs = sorted((t for t in inputs.trajectories if t.status == "accepted"), key=lambda t: t.trajectory_id)
    usable = [t for t in trajs if t.qa_id in by_id and by_id[t.qa_id].split in SPLITS]
    skipped["trajectories_without_question_or_split"] = len(trajs) - len(usable)
    gold = {q.qa_id: export_gold_paths(q, inputs.gold_paths.get(q.qa_id, [])) for q in with_split}
    # Each question, then its IKG variants by level: (question, view or None for the complete graph).
    variants: dict[str, list[IKGItem]] = {}
    for item in inputs.ikg:
        if item.qa.qa_id in gold:  # a variant of a question without a split is not exported, like its question
            variants.setdefault(item.qa.qa_id, []).append(item)
    question_views: list[tuple[QA, IKGView | None]] = []
    for q in with_split:
        question_views.append((q, None))
        question_views += [(q, i.view) for i in sorted(variants.get(q.qa_id, []), key=lambda i: i.view.level)]
    if inputs.ikg:
        skipped["ikg_variants_without_question_or_split"] = len(inputs.ikg) - sum(len(v) for v in variants.values())
    if variants and "web_search" not in tools:
        tools = (*tools, "web_search")
    ikg_trajs = sorted(((i.trajectory, i.view) for v in variants.values() for i in v
                        if i.trajectory is not None and i.trajectory.status == "accepted"),
                       key=lambda tv: tv[0].trajectory_id)  # fmt: skip
    with_views: list[tuple[Trajectory, IKGView | None]] = sorted(
        [(t, None) for t in usable] + ikg_trajs, key=lambda tv: tv[0].trajectory_id)  # type: ignore[arg-type]
    return _Selection(by_id=by_id, gold=gold, question_views=question_views, with_views=with_views, tools=tools,
                      skipped=skipped)  # fmt: skip


def _split_rows(rows: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """``(split, row)`` pairs grouped by split, in ``SPLITS`` order, empty splits left out."""
    out: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    for split, row in rows:
        out[split].append(row)
    return {s: rs for s, rs in out.items() if rs}


def _sharegpt_rows(sel: _Selection, config: str, think: bool,
                   invalid: list[InvalidRow]) -> dict[str, list[dict[str, Any]]]:  # fmt: skip
    """The ShareGPT rows of ``config`` (``sft`` with the reasoning, ``sft_nothink`` without) by split; a row that
    breaks a format rule goes to ``invalid``."""
    rows = []
    for t, view in sel.with_views:
        if not think and not t.tools:
            continue  # a long-CoT sample without its reasoning teaches nothing the QA config does not
        row = sharegpt_row(t, sel.by_id[t.qa_id], think=think, view=view)
        problems = validate_sharegpt(row)
        if problems:
            invalid.append(InvalidRow(config, t.trajectory_id, problems))
            continue
        rows.append((sel.by_id[t.qa_id].split, row))
    return _split_rows(rows)  # type: ignore[arg-type]


def parquet_bytes(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> bytes:
    """One Parquet file's bytes. Fixed writer options, so equal rows give equal bytes."""
    table = pa.Table.from_pylist(list(rows), schema=schema)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", compression_level=3, use_dictionary=True,
                   write_statistics=True, row_group_size=50_000)  # fmt: skip
    return buf.getvalue()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class ExportResult:
    """Where an export went and what it holds."""

    version: str
    path: Path
    rows: dict[str, dict[str, int]]
    files: dict[str, dict[str, Any]]
    invalid: list[InvalidRow]
    skipped: dict[str, int]


def write_export(built: BuiltExport, exports_dir: Path, version: str, *, fingerprint: str,
                 extra_files: Mapping[str, bytes] | None = None, card_extra: str = "",
                 warehouse_backup: Mapping[str, Any] | None = None) -> ExportResult:
    """Write ``built`` to ``exports_dir/version`` (replacing an earlier export of that version), with
    ``dataset_info.json``, the dataset card and ``manifest.json``. Files are written to a temporary directory
    first, then swapped in, so a reader never sees a half-written export. ``extra_files`` (relative path ->
    bytes, e.g. pictures) are written and listed in the manifest like the rest; ``card_extra`` ends the card.
    ``warehouse_backup`` (the warehouse backup the export can be rebuilt from, or ``{"id": None, "reason": ...}``:
    ``warehouse.backup.backup_for_export``) goes into the manifest as it is; the data files do not depend on it."""
    check_version(version)
    contents: dict[str, bytes] = {}
    rows: dict[str, dict[str, int]] = {}
    for config, by_split in built.tables.items():
        rows[config] = {s: len(r) for s, r in by_split.items()}
        for split, split_rows in by_split.items():
            contents[data_file(config, split)] = parquet_bytes(split_rows, built.schemas[config])
    info = dataset_info(built.tables)
    if info:
        contents["dataset_info.json"] = (json.dumps(info, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
    for name, data in (extra_files or {}).items():
        if name in contents or name in ("README.md", "manifest.json") or name.startswith((".", "/")) or ".." in name:
            raise ExportError(f"extra export file {name!r} would replace a file of the export or leave it")
        contents[name] = data
    contents["README.md"] = dataset_card(version, built.tables, card_extra).encode()
    files: dict[str, dict[str, Any]] = {}
    for name, data in sorted(contents.items()):
        files[name] = {"sha256": _sha256(data), "bytes": len(data)}
        if name.endswith(".parquet"):
            files[name]["rows"] = _rows_of(name, rows)
    manifest = {
        "name": "hopforge",
        "version": version,
        "format_version": FORMAT_VERSION,
        "inputs_sha256": fingerprint,
        "rows": rows,
        "files": files,
        "invalid_rows": [r.as_dict() for r in built.invalid],
        "skipped": built.skipped,
    }
    if warehouse_backup is not None:
        manifest["warehouse_backup"] = dict(warehouse_backup)
    contents["manifest.json"] = (json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()

    final = exports_dir / version
    tmp = exports_dir / f".{version}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        exports_dir.mkdir(parents=True, exist_ok=True)
        for name, data in contents.items():
            target = tmp / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    except OSError as exc:  # a read-only or full disk: nothing half-written stays visible
        shutil.rmtree(tmp, ignore_errors=True)
        raise ExportError(f"cannot write the export {version} under {exports_dir}: {exc.strerror or exc} "
                          f"({exc.filename}); free space or fix the folder's permissions, or choose another "
                          "data_dir") from None
    old = None
    if final.exists():
        old = exports_dir / f".{version}.old-{uuid.uuid4().hex[:8]}"
        final.rename(old)
    tmp.rename(final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return ExportResult(version, final, rows, files, built.invalid, built.skipped)


def _rows_of(name: str, rows: Mapping[str, Mapping[str, int]]) -> int:
    config, fname = name.split("/", 1)
    return rows[config][fname.split("-00000-", 1)[0]]


def export(
    inputs: ExportInputs, exports_dir: Path, *, version: str | None = None, include: Sequence[str] = EXPORT_CONFIGS,
    warehouse_backup: Mapping[str, Any] | None = None, extra_files: Mapping[str, bytes] | None = None,
    card_extra: str = "",
) -> ExportResult:
    """Build and write one export (module docstring); the version defaults to the inputs' content hash.
    ``warehouse_backup``, ``extra_files`` and ``card_extra`` (e.g. ``evaluation_section`` and its pictures): see
    ``write_export``."""
    include = check_include(include)
    if version is not None:
        check_version(version)
    fingerprint = inputs.fingerprint(include)
    built = build_export(inputs, include)
    return write_export(built, exports_dir, version or f"v-{fingerprint[:16]}", fingerprint=fingerprint,
                        warehouse_backup=warehouse_backup, extra_files=extra_files, card_extra=card_extra)


def verify_export(export_dir: str | Path) -> list[str]:
    """Problems with an export directory: a missing manifest, a file listed there that is missing or whose
    sha256 differs, a data file the manifest does not list. ``[]`` when it is intact."""
    root = Path(export_dir)
    path = root / "manifest.json"
    if not path.is_file():
        return [f"no manifest.json in {root}"]
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        return [f"manifest.json is not valid JSON: {exc}"]
    problems = []
    listed = manifest.get("files", {})
    for name, meta in sorted(listed.items()):
        f = root / name
        if not f.is_file():
            problems.append(f"{name}: listed in the manifest but missing")
        elif _sha256(f.read_bytes()) != meta.get("sha256"):
            problems.append(f"{name}: sha256 differs from the manifest")
    for f in sorted(root.rglob("*")):
        rel = f.relative_to(root).as_posix()
        if f.is_file() and rel != "manifest.json" and rel not in listed and not rel.startswith("."):
            problems.append(f"{rel}: not listed in the manifest")
    return problems


__all__ = [
    "FORMAT_VERSION",
    "BuiltExport",
    "ExportError",
    "ExportInputs",
    "ExportResult",
    "IKGItem",
    "InvalidRow",
    "build_export",
    "check_include",
    "check_version",
    "export",
    "parquet_bytes",
    "verify_export",
    "write_export",
]
