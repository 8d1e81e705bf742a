"""Reads and writes of ``relation_profiles``: the user's entries and the profiler role's answers (the lexicon and
the graph statistics are derived again whenever they are needed)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from schemas.meaning import RelationProfile
from warehouse.db import Warehouse


def read_user_profiles(wh: Warehouse) -> dict[str, dict[str, Any]]:
    """The user's entries: key -> the fields they set."""
    rows = wh.query("SELECT key, fields FROM relation_profiles WHERE source = 'user' AND status = 'ok' ORDER BY key")
    return {r["key"]: json.loads(r["fields"]) for r in rows}


def write_user_profiles(wh: Warehouse, entries: Mapping[str, Mapping[str, Any]], labels: Mapping[str, str],
                        run_id: str) -> None:
    """Store the user's entries in one transaction (an entry replaces the user's earlier one for its key)."""
    now = datetime.now()
    wh.write_batch("relation_profiles", [
        {"key": key, "source": "user", "label": labels.get(key, key), "fields": json.dumps(fields, sort_keys=True),
         "status": "ok", "note": None, "run_id": run_id, "updated_at": now}
        for key, fields in sorted(entries.items())
    ], replace=True)  # fmt: skip


def read_profiled(wh: Warehouse) -> dict[str, RelationProfile]:
    """The profiler role's accepted answers: key -> profile."""
    rows = wh.query("SELECT key, fields FROM relation_profiles WHERE source = 'profiler' AND status = 'ok' "
                    "ORDER BY key")
    return {r["key"]: RelationProfile.model_validate_json(r["fields"]) for r in rows}


def profiler_done(wh: Warehouse) -> set[str]:
    """Keys the profiler role has answered for, accepted or rejected: asked once per label."""
    return {r["key"] for r in wh.query("SELECT key FROM relation_profiles WHERE source = 'profiler'")}


def write_profiled(wh: Warehouse, key: str, label: str, profile: RelationProfile | None, note: str | None,
                   run_id: str) -> None:
    """Store one profiler answer: the profile, or (``profile=None``) why it was rejected."""
    wh.write_batch("relation_profiles", [{
        "key": key, "source": "profiler", "label": label,
        "fields": profile.model_dump_json() if profile is not None else "{}",
        "status": "ok" if profile is not None else "rejected", "note": note, "run_id": run_id,
        "updated_at": datetime.now(),
    }], replace=True)  # fmt: skip


__all__ = ["profiler_done", "read_profiled", "read_user_profiles", "write_profiled", "write_user_profiles"]
