"""Every rank's record in the run's shared directory, written by the launchers in each rank (the launcher contract of
``training.runs``: ``ranks/rank-<RANK>.json``; ``training.runs.rank_records`` reads them on node 0).

Used by ``llamafactory_sft.py`` and ``trl_grpo.py`` inside their trainer environments: standard library only.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

RANKS_DIR = "ranks"


def global_rank() -> int:
    return int(os.environ.get("RANK", "0"))


def record_rank(run_dir: Path, fields: dict[str, Any], *, node_rank: int | None = None) -> Path:
    """``ranks/rank-<RANK>.json`` in the shared run directory: this rank's node, host and process, and ``fields``
    (what it installed, how far it got: ``status`` started, trained, ok or error). The node is torchrun's
    ``GROUP_RANK`` when set, else ``node_rank`` (the plan's), else 0. Written whole and renamed into place, so a rank
    on another node never reads half of it."""
    folder = Path(run_dir) / RANKS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    record = {"rank": global_rank(), "local_rank": int(os.environ.get("LOCAL_RANK", "0")),
              "node_rank": int(os.environ.get("GROUP_RANK", node_rank or 0)), "host": socket.gethostname(),
              "world_size": int(os.environ.get("WORLD_SIZE", "1")), "pid": os.getpid(), **fields}  # fmt: skip
    path = folder / f"rank-{record['rank']}.json"
    part = folder / f".rank-{record['rank']}.json.{os.getpid()}.part"
    part.write_text(json.dumps(record, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(part, path)
    return path


def read_ranks(run_dir: Path) -> list[dict[str, Any]]:
    """Every rank's record, by global rank (a record being renamed into place is read whole or not at all)."""
    found = [json.loads(p.read_text(encoding="utf-8")) for p in (Path(run_dir) / RANKS_DIR).glob("rank-*.json")]
    return sorted(found, key=lambda r: r["rank"])
