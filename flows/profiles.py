"""Relation profiles of the current graphs: export them to the file a user reads and corrects, import it back.

``export_profiles`` only reads the warehouse; ``import_profiles`` is a flow: the import is validated whole, then
stored in one transaction and recorded with its run (the file's path and the keys it set)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flows.runtime import default_settings, flow_parameters, hopforge_flow, open_run
from schemas.config import Settings
from schemas.errors import InputError
from schemas.meaning import relation_key
from tasks.meaning.profiles import LabelStats, ProfileBook, edge_label, label_stats, merge_stats
from tasks.meaning.profiles_file import dump_profiles, parse_profiles_file
from warehouse.db import Warehouse
from warehouse.graphs import current_snapshots, load_graph
from warehouse.profiles import read_profiled, read_user_profiles, write_user_profiles


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


def export_profiles(path: Path, settings: Settings | None = None, domains: list[str] | None = None) -> dict[str, Any]:
    """Write every label's resolved profile to ``path``; return counts (labels, usable in some direction, not
    words, without forms)."""
    settings = settings or default_settings()
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
    return {"path": str(path), "labels": len(profiles), "usable": usable,
            "opaque": sum(1 for p in profiles if not p.words),
            "no_forms": sum(1 for p in profiles if p.words and p.forms is None)}


@hopforge_flow(name="import-profiles", log_prints=True)
def import_profiles(path: str, settings: Settings | None = None) -> dict[str, Any]:
    """Validate a profiles file against the current snapshots' labels and store its entries as the user's."""
    settings = settings or default_settings()
    file = Path(path)
    if not file.is_file():
        raise InputError(f"{path}: no such file")
    text = file.read_text(encoding="utf-8")
    with open_run("import-profiles", flow_parameters(import_profiles, locals()), settings) as rt:
        labels, _ = snapshot_labels(rt.wh)
        entries = parse_profiles_file(text, path, labels)
        write_user_profiles(rt.wh, entries, labels, rt.run_id)
        print(f"{path}: {len(entries)} profile entr{'y' if len(entries) == 1 else 'ies'} stored as the user's "
              f"(run {rt.run_id})")
        return {"run_id": rt.run_id, "stored": sorted(entries)}


__all__ = ["export_profiles", "import_profiles", "snapshot_labels"]
