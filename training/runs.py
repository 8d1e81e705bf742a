"""Launching a planned training run in its trainer environment, and what is recorded about it.

``launch`` writes the plan, starts the trainer's python as a child process with the plan's environment, streams its
output to ``<run_dir>/train.log`` (and to a callback, for progress), and reads back the launcher's
``metrics.jsonl`` and ``result.json`` (``training.plan``). Nothing here imports a trainer.

``training_row`` / ``metric_rows`` are the warehouse records (tables ``training_runs`` and ``training_metrics``);
``curves_svg`` draws the loss and reward curves for the Prefect artifact.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from html import escape
from pathlib import Path
from typing import Any

from gateway import children
from training.envs import require_env
from training.plan import (  # noqa: F401  (OFFLINE_ENV re-exported: callers read it from here)
    NODES_DIR,
    OFFLINE_ENV,
    RESULT_FILE,
    TrainingError,
    TrainPlan,
    is_local_model,
    launcher,
    read_metrics,
    trainer_env,
)

LOG_FILE = "train.log"
#: Every rank's record (``ranks/rank-<RANK>.json``), written by the launchers into the shared run directory.
RANKS_DIR = "ranks"

_PACKAGE_OF = {"llamafactory": "llamafactory", "verl": "verl", "trl": "trl"}


@dataclass
class LaunchResult:
    status: str  # completed | failed
    returncode: int
    checkpoint: str | None
    metrics: list[dict[str, Any]]
    result: dict[str, Any]
    log_tail: list[str]
    duration_s: float
    error: str | None = None
    trainer_version: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def trainer_version(plan: TrainPlan) -> str | None:
    """The installed version of the plan's trainer, read in its own environment."""
    python = require_env(plan.env)
    package = _PACKAGE_OF.get(plan.trainer, plan.trainer)
    done = subprocess.run([str(python), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    return done.stdout.strip() or None if done.returncode == 0 else None


def check_model_loads(plan: TrainPlan, model: str, *, timeout_s: float = 600) -> dict[str, Any]:
    """Load ``model``'s config and tokenizer in the plan's trainer environment with the launch's hub setting
    (``training/launch/model_check.py``); ``TrainingError`` in one line, naming the model and what to do, when this
    node cannot. Returns the check's report."""
    python = require_env(plan.env)
    env = {**os.environ, **trainer_env(offline=plan.hub_offline)}
    try:
        done = subprocess.run([str(python), launcher("model_check.py"), model], capture_output=True, text=True,
                              timeout=timeout_s, env=env)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise TrainingError(f"loading model {model} in the {plan.env} environment took more than {timeout_s:.0f} s: "
                            "is the hub reachable from this node? (or give a local directory, or --offline)") from None
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode == 0 and lines:
        return json.loads(lines[-1])
    errors = [ln[len("error: "):] for ln in done.stderr.splitlines() if ln.startswith("error: ")]
    why = errors[-1] if errors else ((done.stderr or done.stdout).strip().splitlines() or ["(no output)"])[-1]
    raise TrainingError(f"model {model} cannot be loaded on this node ({plan.env} environment): {why}"
                        f"{_model_hint(model, plan.hub_offline)}")  # fmt: skip


def _model_hint(model: str, offline: bool) -> str:
    if is_local_model(model):
        return ""
    if offline:
        return (f"; {model} is a hub id and the run is offline: put it in this node's Hugging Face cache "
                f"(`huggingface-cli download {model}`) or give a local model directory")  # fmt: skip
    return "; check the id and this node's access to the hub (HF_TOKEN for a gated model), or give a local directory"


def launch(
    plan: TrainPlan,
    *,
    on_line: Callable[[str], None] | None = None,
    on_metrics: Callable[[list[dict[str, Any]]], None] | None = None,
    offline: bool | None = None,
    timeout_s: float | None = None,
) -> LaunchResult:
    """Run ``plan`` to its end. A missing trainer environment is a ``TrainingError`` before anything starts; a
    trainer that fails gives ``status="failed"`` with the last lines of its log (the caller records it).

    ``offline`` (default: the plan's ``hub_offline``) keeps the trainer off the model hub. On node 0 (one node, or the
    node of global rank 0) the run succeeded when the trainer exits 0 and rank 0's ``result.json`` says so (a
    ``result.json`` left by an earlier attempt of the run is removed first). On any other node it succeeded when its
    own ranks exited 0: only rank 0 writes the result, and the run's state is its."""
    python = require_env(plan.env)
    if plan.argv and Path(plan.argv[0]).name.startswith("python") and Path(plan.argv[0]) != python:
        plan.argv[0] = str(python)
    plan.write()
    if plan.node_rank == 0:
        (plan.run_dir / RESULT_FILE).unlink(missing_ok=True)
    env = dict(os.environ)
    env.update(trainer_env(offline=plan.hub_offline if offline is None else offline))
    env.update(plan.env_vars)
    version = trainer_version(plan)
    log_path = plan.node_dir / LOG_FILE
    tail: list[str] = []
    started = time.monotonic()
    stop = threading.Event()

    def watch_metrics() -> None:
        seen = 0
        while not stop.wait(2.0):
            rows = read_metrics(plan.run_dir)
            if len(rows) != seen and on_metrics is not None:
                seen = len(rows)
                on_metrics(rows)

    watcher = threading.Thread(target=watch_metrics, name="metrics-watch", daemon=True)
    with open(log_path, "w", encoding="utf-8") as log:
        # SIGTERM when this process dies, however it dies: the launcher (torchrun, Ray) then stops its workers
        proc = children.popen(plan.argv, death_signal=signal.SIGTERM, cwd=str(plan.node_dir), env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                              bufsize=1)  # fmt: skip
        watcher.start()
        # A trainer that hangs without printing must still stop at the timeout: a timer kills it.
        killer = threading.Timer(timeout_s, proc.kill) if timeout_s is not None else None
        if killer is not None:
            killer.daemon = True
            killer.start()
        try:
            assert proc.stdout is not None  # PIPE above
            for line in proc.stdout:
                log.write(line)
                tail.append(line.rstrip("\n"))
                del tail[:-40]
                if on_line is not None:
                    on_line(line.rstrip("\n"))
            rc = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            if killer is not None:
                killer.cancel()
            stop.set()
            watcher.join(timeout=5)
    duration = time.monotonic() - started
    metrics = read_metrics(plan.run_dir)
    result = read_json(plan.run_dir / RESULT_FILE) if plan.node_rank == 0 else {}
    ok = rc == 0 and (result.get("status") == "ok" or plan.node_rank != 0)
    error = None
    if not ok:
        last = next((t for t in reversed(tail) if t.strip()), "(no output)")
        why = "timed out" if timeout_s is not None and duration > timeout_s else f"exited with status {rc}"
        error = f"{plan.trainer} {why}: {last} (full log: {log_path})"
    return LaunchResult(status="completed" if ok else "failed", returncode=rc, checkpoint=result.get("checkpoint"),
                        metrics=metrics, result=result, log_tail=tail, duration_s=duration, error=error,
                        trainer_version=version)  # fmt: skip


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``; ``{}`` when it is missing or half written (a killed process may leave one)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# -- the nodes and ranks of a run ----------------------------------------------------------------------------------


def node_record_path(run_dir: Path, node_rank: int) -> Path:
    return Path(run_dir) / NODES_DIR / f"node-{node_rank}.json"


def write_node_record(run_dir: Path, node_rank: int, record: dict[str, Any]) -> Path:
    """``nodes/node-<k>.json`` in the shared run directory: what node ``k``'s ``hopforge train`` saw (its host and
    process, and when it ends its status and the trainer's exit status). Written whole, then renamed: a reader on
    another node never sees half of it."""
    path = node_record_path(run_dir, node_rank)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    part.write_text(json.dumps({"node_rank": node_rank, **record}, sort_keys=True, default=str) + "\n",
                    encoding="utf-8")  # fmt: skip
    os.replace(part, path)
    return path


def node_records(run_dir: Path) -> list[dict[str, Any]]:
    """Every node's record (``write_node_record``), by node rank."""
    found = [read_json(p) for p in (Path(run_dir) / NODES_DIR).glob("node-*.json")]
    return sorted((r for r in found if isinstance(r.get("node_rank"), int)), key=lambda r: r["node_rank"])


def rank_records(run_dir: Path) -> list[dict[str, Any]]:
    """Every rank's record (``ranks/rank-<RANK>.json``, written by the launcher in each rank), by global rank."""
    found = [read_json(p) for p in (Path(run_dir) / RANKS_DIR).glob("rank-*.json")]
    return sorted((r for r in found if isinstance(r.get("rank"), int)), key=lambda r: r["rank"])


def wait_for_nodes(run_dir: Path, nnodes: int, *, ended: bool, wait_s: float,
                   poll_s: float = 1.0) -> list[dict[str, Any]]:  # fmt: skip
    """The node records of a run of ``nnodes`` nodes, waiting up to ``wait_s`` for every node's to be there (with
    ``ended``: to say how the node ended). The nodes leave training together, but each writes its record when its
    own launcher has exited; what is missing after the wait is recorded as missing, not waited for longer."""
    deadline = time.monotonic() + wait_s
    while True:
        records = node_records(run_dir)
        done = [r for r in records if not ended or r.get("status") is not None]
        if len(done) >= nnodes or time.monotonic() >= deadline:
            return records
        time.sleep(poll_s)


# -- records -------------------------------------------------------------------------------------------------------


def training_row(plan: TrainPlan, *, train_id: str, run_id: str, kind: str, status: str,
                 started_at: datetime, launch_result: LaunchResult | None = None,
                 base_model: str | None = None) -> dict[str, Any]:  # fmt: skip
    """One ``training_runs`` row."""
    res = launch_result
    return {
        "train_id": train_id, "run_id": run_id, "kind": kind, "trainer": plan.trainer,
        "trainer_version": res.trainer_version if res else None,
        "export_version": plan.export_version, "manifest_sha256": plan.manifest_sha256,
        "base_model": base_model, "config": json.dumps(plan.summary(), sort_keys=True, default=str),
        "command": plan.command_line(), "run_dir": str(plan.run_dir), "output_dir": str(plan.output_dir),
        "checkpoint": res.checkpoint if res else None, "status": status, "error": res.error if res else None,
        "started_at": started_at, "ended_at": datetime.now() if res or status == "dry_run" else None,
        "final_metrics": json.dumps(final_metrics(res.metrics)) if res else None, "ranks": None,
    }  # fmt: skip


def metric_rows(train_id: str, metrics: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Long-format ``training_metrics`` rows: one per (step, numeric metric); the last value of a step wins."""
    out: dict[tuple[int, str], float] = {}
    for row in metrics:
        step = row.get("step")
        if not isinstance(step, int):
            continue
        for name, value in row.items():
            if name == "step" or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if math.isfinite(float(value)):
                out[(step, name)] = float(value)
    return [{"train_id": train_id, "step": s, "name": n, "value": v} for (s, n), v in sorted(out.items())]


def final_metrics(metrics: Sequence[dict[str, Any]]) -> dict[str, float]:
    last: dict[str, float] = {}
    for row in metrics:
        for name, value in row.items():
            if name != "step" and isinstance(value, (int, float)) and not isinstance(value, bool):
                if math.isfinite(float(value)):
                    last[name] = float(value)
    return last


# -- pictures ------------------------------------------------------------------------------------------------------

CURVE_KEYS = ("loss", "eval_loss", "reward", "score", "critic/score/mean", "critic/rewards/mean", "learning_rate")
_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")


def curve_series(metrics: Sequence[dict[str, Any]], keys: Sequence[str] = CURVE_KEYS) -> dict[str, list[tuple[int, float]]]:
    """``name -> [(step, value), ...]`` for the keys present (finite values only), in step order."""
    series: dict[str, list[tuple[int, float]]] = {}
    for row in sorted((r for r in metrics if isinstance(r.get("step"), int)), key=lambda r: r["step"]):
        for key in keys:
            value = row.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(float(value)):
                series.setdefault(key, []).append((row["step"], float(value)))
    return series


def curves_svg(metrics: Sequence[dict[str, Any]], keys: Sequence[str] = CURVE_KEYS, *, title: str = "",
               width: int = 640, height: int = 200) -> str | None:  # fmt: skip
    """A small SVG with one panel per metric (each on its own y scale); ``None`` when nothing was logged."""
    series = {k: v for k, v in curve_series(metrics, keys).items() if k != "learning_rate" or len(keys) == 1}
    if not series:
        return None
    pad_l, pad_r, pad_t, pad_b = 60, 12, 24, 24
    panel_h = height
    total_h = panel_h * len(series) + (20 if title else 0)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total_h}" '
             f'font-family="sans-serif" font-size="11">', '<rect width="100%" height="100%" fill="white"/>']  # fmt: skip
    y0 = 0
    if title:
        parts.append(f'<text x="{width / 2}" y="14" text-anchor="middle" font-size="13">{escape(title)}</text>')
        y0 = 20
    for i, (name, points) in enumerate(series.items()):
        top = y0 + i * panel_h
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        x_lo, x_hi = min(xs), max(xs)
        y_lo, y_hi = min(ys), max(ys)
        if x_hi == x_lo:
            x_hi = x_lo + 1
        if y_hi == y_lo:
            y_lo, y_hi = y_lo - 0.5, y_hi + 0.5
        plot_w = width - pad_l - pad_r
        plot_h = panel_h - pad_t - pad_b

        def sx(x: float) -> float:
            return pad_l + (x - x_lo) / (x_hi - x_lo) * plot_w

        def sy(y: float) -> float:
            return top + pad_t + (1 - (y - y_lo) / (y_hi - y_lo)) * plot_h

        colour = _COLOURS[i % len(_COLOURS)]
        parts.append(f'<text x="{pad_l}" y="{top + 14}" fill="{colour}">{escape(name)}</text>')
        parts.append(f'<rect x="{pad_l}" y="{top + pad_t}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#ccc"/>')
        for v in (y_lo, y_hi):
            parts.append(f'<text x="{pad_l - 4}" y="{sy(v) + 4:.1f}" text-anchor="end">{v:.4g}</text>')
        parts.append(f'<text x="{pad_l}" y="{top + panel_h - 6}">step {x_lo}</text>')
        parts.append(f'<text x="{width - pad_r}" y="{top + panel_h - 6}" text-anchor="end">step {x_hi}</text>')
        pts = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in points)
        parts.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        if len(points) == 1:
            x, y = points[0]
            parts.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{colour}"/>')
    parts.append("</svg>")
    return "\n".join(parts)


def check_timeout(value: float | None) -> float | None:
    if value is not None and value <= 0:
        raise TrainingError(f"timeout must be > 0 seconds, got {value}")
    return value
