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
    with wh.transaction() as con:
        for key, fields in sorted(entries.items()):
            con.execute("DELETE FROM relation_profiles WHERE key = ? AND source = 'user'", [key])
            con.execute(
                "INSERT INTO relation_profiles (key, source, label, fields, status, note, run_id, updated_at) "
                "VALUES (?, 'user', ?, ?, 'ok', NULL, ?, ?)",
                [key, labels.get(key, key), json.dumps(fields, sort_keys=True), run_id, now],
            )


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
    fields = profile.model_dump_json() if profile is not None else "{}"
    with wh.transaction() as con:
        con.execute("DELETE FROM relation_profiles WHERE key = ? AND source = 'profiler'", [key])
        con.execute(
            "INSERT INTO relation_profiles (key, source, label, fields, status, note, run_id, updated_at) "
            "VALUES (?, 'profiler', ?, ?, ?, ?, ?, ?)",
            [key, label, fields, "ok" if profile is not None else "rejected", note, run_id, datetime.now()],
        )


__all__ = ["profiler_done", "read_profiled", "read_user_profiles", "write_profiled", "write_user_profiles"]
