"""Relation profiles of the current graphs: export them to the file a user reads and corrects, import it back.

``export_profiles`` only reads the warehouse (with ``profile=True`` it first runs ``profile_relations``, the flow
that asks the profiler role about the labels no other source profiles); ``import_profiles`` is a flow: the import
is validated whole, then stored in one transaction and recorded with its run (the file's path and the keys it
set)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flows.params import ExportProfiles, ImportProfiles
from flows.runtime import Runtime, default_settings, flow_parameters, hopforge_flow, open_run
from gateway.loop import run_shared
from schemas.config import Settings
from schemas.errors import InputError
from schemas.meaning import RelationProfile, relation_key
from tasks.meaning.profiler import ROLE as PROFILER_ROLE
from tasks.meaning.profiler import ProfilerReject, ask_profiler, label_examples, needs_profiler
from tasks.meaning.profiles import LabelStats, ProfileBook, edge_label, label_stats, merge_stats
from tasks.meaning.profiles_file import dump_profiles, parse_profiles_file
from warehouse.db import Warehouse
from warehouse.graphs import current_snapshots, load_graph
from warehouse.profiles import (profiler_done, read_profiled, read_user_profiles, write_profiled,
                                write_user_profiles)


def snapshot_labels(wh: Warehouse, domains: list[str] | None = None) -> tuple[dict[str, str], dict[str, LabelStats]]:
    """The relation keys of the current snapshots (key -> one raw label, the first in sorted order) and their
    statistics added up over the snapshots."""
    labels: dict[str, str] = {}
    parts = []
    for snap in current_snapshots(wh):
        if domains and snap.domain not in domains:
            continue
        kg = load_graph(wh, snap.domain, snap.snapshot_id)
        rels = kg.relations()
        for r in rels:
            text, _ = edge_label(r, r.source, r.target)
            if text:
                key = relation_key(text)
                if key not in labels or text < labels[key]:
                    labels[key] = text
        parts.append(label_stats(rels))
    return labels, merge_stats(parts)


def profiler_configured(settings: Settings) -> bool:
    """Whether the ``profiler`` role has an endpoint of its own: the embedded demo-quality model is never asked
    what a label means."""
    return not settings.endpoint(PROFILER_ROLE).is_local


@dataclass
class ProfilingReport:
    """What one profiling pass did: labels asked, answers accepted, rejected (stored with the reason), and calls
    that got no answer (not stored: asked again next time)."""

    asked: int = 0
    accepted: int = 0
    rejected: int = 0
    failed: int = 0
    reasons: list[str] = field(default_factory=list)

    def line(self) -> str:
        text = f"profiler: {self.asked} relation label(s) profiled, {self.accepted} accepted, {self.rejected} rejected"
        if self.failed:
            text += f", {self.failed} without an answer (asked again next run)"
        if self.reasons:
            text += f" (first: {self.reasons[0]})"
        return text


def profile_unknown_labels(rt: Runtime, domains: list[str] | None = None,
                           user: dict[str, dict[str, Any]] | None = None) -> ProfilingReport | None:
    """Ask the profiler role about every label of the current snapshots (of ``domains``) that the user's entries,
    the lexicon, the morphology and the graph statistics leave without surface forms or with a count unknown,
    once per label: a key already answered (``profiler_done``, accepted or rejected) is not asked again, and the
    gateway's cache answers a repeated request. Each answer or rejection is stored (``write_profiled``) and one
    line is printed. None, and nothing asked or printed, when the profiler role is the embedded model."""
    if not profiler_configured(rt.settings):
        return None
    labels, stats = snapshot_labels(rt.wh, domains)
    book = ProfileBook(user=read_user_profiles(rt.wh) if user is None else user, stats=stats)
    done = profiler_done(rt.wh)
    todo = sorted(k for k in labels if k not in done and needs_profiler(book.profile(labels[k])))
    report = ProfilingReport()
    if not todo:
        return report
    kgs = [load_graph(rt.wh, s.domain, s.snapshot_id) for s in current_snapshots(rt.wh)
           if not domains or s.domain in domains]
    examples = label_examples(kgs, todo)
    gateway = rt.gateway

    async def go() -> list[RelationProfile | ProfilerReject]:
        return await gateway.gather(ask_profiler(gateway, labels[k], examples.get(k, []), stats.get(k)) for k in todo)

    for key, answer in zip(todo, run_shared(go())):
        report.asked += 1
        if isinstance(answer, RelationProfile):
            report.accepted += 1
            write_profiled(rt.wh, key, labels[key], answer, None, rt.run_id)
            continue
        report.reasons.append(f"{labels[key]!r}: {answer.reason}")
        if answer.stored:
            report.rejected += 1
            write_profiled(rt.wh, key, labels[key], None, f"{answer.kind}: {answer.reason}", rt.run_id)
        else:
            report.failed += 1
    print(report.line())
    return report


def export_profiles(path: Path, settings: Settings | None = None, domains: list[str] | None = None, *,
                    profile: bool = False) -> dict[str, Any]:
    """Write every label's resolved profile to ``path``; return counts (labels, usable in some direction, not
    words, without forms). With ``profile``, first ask the profiler role about the labels no other source
    profiles (``profile_unknown_labels``, recorded as a run); nothing is asked while it is the embedded model.
    ``hopforge graph profiles export`` is built from its parameters (``ExportProfiles``)."""
    ExportProfiles.check({"path": path, "domains": domains, "profile": profile})
    settings = settings or default_settings()
    profiled = None
    if profile and profiler_configured(settings):
        profiled = profile_relations(domains=domains, settings=settings)["profiler"]
    wh = Warehouse(settings.warehouse_path, lock_wait_s=settings.lock_wait_s)
    try:
        labels, stats = snapshot_labels(wh, domains)
        if not labels:
            raise InputError("no relation labels: build or import graphs first (`hopforge graph build|import`)")
        book = ProfileBook(user=read_user_profiles(wh), profiled=read_profiled(wh), stats=stats)
        profiles = [book.profile(labels[k]) for k in sorted(labels)]
    finally:
        wh.close()
    path.write_text(dump_profiles(profiles, stats), encoding="utf-8")
    usable = sum(1 for p in profiles if p.forms is not None and "one" in (p.objects_per_subject, p.subjects_per_object))
    out: dict[str, Any] = {"path": str(path), "labels": len(profiles), "usable": usable,
                           "opaque": sum(1 for p in profiles if not p.words),
                           "no_forms": sum(1 for p in profiles if p.words and p.forms is None)}
    if profiled is not None:
        out["profiler"] = profiled
    return out


@hopforge_flow(name="profile-relations", log_prints=True)
def profile_relations(domains: list[str] | None = None, settings: Settings | None = None) -> dict[str, Any]:
    """Ask the profiler role about the current snapshots' labels that no other source profiles
    (``profile_unknown_labels``); ``generate-qa`` does the same before it plans its jobs."""
    settings = settings or default_settings()
    with open_run("profile-relations", flow_parameters(profile_relations, locals()), settings) as rt:
        report = profile_unknown_labels(rt, domains)
        return {"run_id": rt.run_id, "profiler": report.line() if report is not None else None}


def profile_entries(wh: Warehouse, path: str) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The user's entries of the profiles file at ``path``, validated against the current snapshots' labels, and
    those labels (key -> one raw label); ``InputError`` (one line) for a missing or bad file."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"{path}: no such file")
    labels, _ = snapshot_labels(wh)
    return parse_profiles_file(file.read_text(encoding="utf-8"), path, labels), labels


def check_profiles_file(path: str, settings: Settings | None = None) -> int:
    """Validate a profiles file without starting a flow (the CLI refuses a bad file up front, in one line); return
    how many entries set something."""
    settings = settings or default_settings()
    with Warehouse(settings.warehouse_path, lock_wait_s=settings.lock_wait_s) as wh:
        return len(profile_entries(wh, path)[0])


@hopforge_flow(name="import-profiles", log_prints=True)
def import_profiles(path: str, settings: Settings | None = None) -> dict[str, Any]:
    """Validate a profiles file against the current snapshots' labels and store its entries as the user's."""
    ImportProfiles.check_call(locals())  # a path that is not a file is refused here
    settings = settings or default_settings()
    with open_run("import-profiles", flow_parameters(import_profiles, locals()), settings) as rt:
        entries, labels = profile_entries(rt.wh, path)
        write_user_profiles(rt.wh, entries, labels, rt.run_id)
        print(f"{path}: {len(entries)} profile entr{'y' if len(entries) == 1 else 'ies'} stored as the user's "
              f"(run {rt.run_id})")
        return {"run_id": rt.run_id, "stored": sorted(entries)}


__all__ = ["ProfilingReport", "check_profiles_file", "export_profiles", "import_profiles", "profile_entries",
           "profile_relations", "profile_unknown_labels", "profiler_configured", "snapshot_labels"]
