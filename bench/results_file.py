"""Where a benchmark's result goes: ``bench/results/*.json``, the files the docs' figures cite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def save_report(report: dict[str, Any], path: Path | None) -> None:
    """Write a benchmark's ``report`` as indented JSON to ``path`` (its folder made), if one was given."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2) + "\n")
