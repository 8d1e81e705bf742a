"""Training flows: an export version in, a checkpoint (and its record) out.

- ``train-sft``: LLaMA-Factory SFT (``training.sft``) with the weighted think-token loss.
- ``train-rl``: verl GRPO/PPO with vLLM rollouts and the KG tool agent loop (``training.rl_verl.plan_verl``), or
  TRL GRPO as the light path (``training.rl_trl.plan_trl``). The flow starts ``hopforge serve-tools`` on loopback for
  the rollouts' tool calls and stops it when training ends.
- ``train-and-eval``: SFT, then optionally RL from the SFT checkpoint (Omne-R1 stage 3), then ``vllm serve`` of the
  final checkpoint and ``evaluate-policy`` with the ``policy`` role pointed at it.

Every run is a ``training_runs`` row (the plan's whole configuration, the export version and manifest sha256, the
trainer and its version, status, checkpoint) plus ``training_metrics`` per logged step, and a Prefect markdown
artifact with the loss / reward curves. ``dry_run`` writes the configs and the command and launches nothing.
The trainers run in their own environments (``training.envs``); this process never imports them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import httpx

from flows.checks import writable_folder
from flows.params import TrainRL, TrainSFT
from flows.progress import Progress
from flows.runtime import code_version, default_settings, flow_parameters, hopforge_flow, mark_crashed, new_run_id
from schemas.config import Settings
from schemas.qa import Split
from gateway import children
from training.cluster import ClusterOptions
from training.merge import plan_merge
from training.plan import ExportView, TrainingError, TrainPlan, hub_offline, load_export, resolve_export
from training.rl_common import _check_shared_dir, check_plan
from training.rl_trl import TRLOptions, plan_trl
from training.rl_verl import VerlOptions, plan_verl
from training.runs import (
    LaunchResult,
    check_model_loads,
    curves_svg,
    final_metrics,
    launch,
    metric_rows,
    node_record_path,
    rank_records,
    read_json,
    training_row,
    wait_for_nodes,
    write_node_record,
)
from training.serve import (
    ChatFormat,
    ServeOptions,
    VLLMServer,
    mark_checkpoints,
    plan_format,
    serve_command_line,
    write_format_record,
)
from training.sft import SFTOptions, plan_sft, validate_sft_config
from warehouse.db import Warehouse


def new_train_id(kind: str, trainer: str) -> str:
    return f"{kind}-{trainer}-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


#: What a given run id may look like (it names the run directory on every node).
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
#: Scheduler variables that name the job every node of it runs in (hopforge's own, Slurm, PBS/Torque, LSF): part of a
#: derived run id, so two jobs on the same rendezvous are two runs.
JOB_ID_VARS = ("HOPFORGE_JOB_ID", "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID")
#: The shared run directory's identity record: the first node to start writes it, every other node compares.
RUN_FILE = "run.json"
#: How long node 0 waits, after a successful training, for the other nodes to record how they ended.
NODES_WAIT_S = 120.0
#: The status of a ``runs`` row while its trainer runs with the warehouse released. Not ``running``: a process that
#: opens the warehouse marks the ``running`` rows of other processes as crashed (``flows.runtime.mark_crashed``).
TRAINING = "training"


def shared_train_id(kind: str, trainer: str, *, run_id: str | None, cluster: ClusterOptions | None,
                    environ: Mapping[str, str] | None = None) -> str:  # fmt: skip
    """The id of a training run, which names its run directory: ``run_id`` when given (every node the same); on
    several nodes without one, derived from what every node's command already shares (the rendezvous: master
    address and port, the number of nodes; the scheduler's job id when there is one; the kind and trainer), so the
    nodes agree without talking. Not the export or the model: a node whose copy differs must land in the same run
    directory, where ``claim_run_dir`` refuses it, not in a directory of its own. The same command on the same
    rendezvous is the same run again: it continues in the same directory (LLaMA-Factory resumes from the last
    checkpoint there). One node: a new id."""
    if run_id is not None:
        if not RUN_ID.match(run_id):
            raise TrainingError(f"run id {run_id!r} must be 1-128 letters, digits, '.', '_' or '-' (it names the run "
                                "directory on every node)")  # fmt: skip
        return run_id
    if cluster is None or cluster.nnodes == 1:
        return new_train_id(kind, trainer)
    env = os.environ if environ is None else environ
    job = next(([name, env[name]] for name in JOB_ID_VARS if env.get(name)), None)
    key = [kind, trainer, cluster.master_addr, cluster.master_port, cluster.nnodes, job]
    return f"{kind}-{trainer}-{hashlib.sha256(json.dumps(key).encode()).hexdigest()[:12]}"


def _export(settings: Settings, export_version: str | None) -> ExportView:
    return load_export(resolve_export(settings.data_dir / "exports", export_version))


def _run_dir(settings: Settings, train_id: str, shared_dir: str | None = None) -> Path:
    """``<shared_dir>/<train_id>`` (a directory every node mounts at the same path), else the data dir's
    ``training/<train_id>`` (then the data dir must be shared by the nodes)."""
    if shared_dir is not None:
        return (_check_shared_dir(shared_dir) or Path(shared_dir)) / train_id
    return (settings.data_dir / "training" / train_id).resolve()


def _in_flow() -> bool:
    from prefect.context import FlowRunContext

    return FlowRunContext.get() is not None


def _report(plan: TrainPlan, train_id: str, res: LaunchResult | None) -> str:
    """Markdown for the run's artifact; the curves are embedded as an SVG data URI and written beside the run."""
    lines = [f"## {plan.trainer} run `{train_id}`", "",
             f"- export: `{plan.export_version}` (manifest sha256 `{plan.manifest_sha256[:16]}`)",
             f"- run directory: `{plan.run_dir}`", f"- command: `{plan.command_line()}`"]  # fmt: skip
    if res is None:
        lines.append("- dry run: configs written, nothing launched")
        return "\n".join(lines)
    lines += [f"- status: **{res.status}** in {res.duration_s:.0f} s (trainer {res.trainer_version or '?'})",
              f"- checkpoint: `{res.checkpoint}`" if res.checkpoint else f"- error: {res.error}"]  # fmt: skip
    svg = curves_svg(res.metrics, title=f"{plan.trainer} {train_id}")
    if svg:
        (plan.run_dir / "curves.svg").write_text(svg, encoding="utf-8")
        data = base64.b64encode(svg.encode()).decode()
        lines += ["", f"![training curves](data:image/svg+xml;base64,{data})"]
    return "\n".join(lines)


def _artifact(key: str, markdown: str) -> None:
    if _in_flow():
        from prefect.artifacts import create_markdown_artifact

        create_markdown_artifact(key=key, markdown=markdown)


def trainer_check(plan: TrainPlan, model: str | None = None) -> dict[str, Any]:
    """``model``'s config and tokenizer load on this node (in the trainer's environment, with the launch's hub
    setting), then the trainer's own parser on the plan's config, in its environment (LLaMA-Factory's
    ``get_train_args``; verl's Hydra composition and ``validate_config``; TRL's ``GRPOConfig``). ``TrainingError``
    on refusal."""
    if model is not None:
        loaded = check_model_loads(plan, model)
        print(f"model {model} loads on this node ({loaded.get('model_type')}, {loaded.get('tokens')} tokens; "
              f"hub {'offline' if plan.hub_offline else 'online'})")  # fmt: skip
    if plan.trainer == "llamafactory":
        return validate_sft_config(plan)
    return check_plan(plan)


# -- one run, several nodes: identity, records, the warehouse only at the start and the end ----------------------


def run_identity(plan: TrainPlan, *, kind: str, base_model: str | None, nnodes: int) -> dict[str, Any]:
    """What every node of one run must agree on (``RUN_FILE``); the trainer settings may change between attempts."""
    return {"train_id": plan.run_dir.name, "kind": kind, "trainer": plan.trainer, "export_version": plan.export_version,
            "manifest_sha256": plan.manifest_sha256, "base_model": base_model, "nnodes": nnodes,
            "output_dir": str(plan.output_dir)}  # fmt: skip


def claim_run_dir(plan: TrainPlan, identity: dict[str, Any]) -> None:
    """Write the run's identity into its shared directory, or check it against what the first node (or an earlier
    attempt) wrote there: a run id reused for another export, model or node count is refused in one line."""
    plan.run_dir.mkdir(parents=True, exist_ok=True)
    path = plan.run_dir / RUN_FILE
    try:
        with open(path, "x", encoding="utf-8") as fh:  # exclusive: of the nodes starting together, one writes
            fh.write(json.dumps(identity, indent=2, sort_keys=True) + "\n")
        return
    except FileExistsError:
        pass
    theirs = read_json(path)
    if not theirs:  # the first node is writing it right now
        time.sleep(1.0)
        theirs = read_json(path)
    differ = sorted(k for k in identity if theirs.get(k) != identity[k])
    if differ:
        shown = "; ".join(f"{k}: {theirs.get(k)!r} there, {identity[k]!r} here" for k in differ)
        raise TrainingError(f"run {plan.run_dir.name} in {plan.run_dir} is another run ({shown}): every node must run "
                            "the same command; give a new --run-id for a new run")  # fmt: skip


def _runs_row(run_id: str, flow: str, params: dict[str, Any], settings: Settings, started: datetime) -> dict[str, Any]:
    return {"run_id": run_id, "flow": flow, "parameters": json.dumps(params, sort_keys=True, default=str),
            "config": json.dumps(settings.redacted(), sort_keys=True, default=str),
            "config_hash": settings.config_hash(), "code_version": code_version(), "started_at": started,
            "status": TRAINING}  # fmt: skip


@contextmanager
def _warehouse(settings: Settings) -> Iterator[Warehouse]:
    """The warehouse for one short write (the start or the end of a run): never held across a launch."""
    writable_folder(settings.data_dir, "the data dir")
    with Warehouse(settings.warehouse_path, lock_wait_s=settings.lock_wait_s) as wh:
        yield wh


def mark_lost_trainings(wh: Warehouse, host: str | None = None) -> list[str]:
    """``training`` runs whose node 0 process, on this host, is gone without recording an end (killed, out of
    memory): their ``runs`` row becomes ``crashed`` and their ``training_runs`` row ``failed``. Returns their ids."""
    host = host or socket.gethostname()
    lost = []
    for row in wh.query("SELECT r.run_id, t.train_id, t.run_dir FROM runs r JOIN training_runs t USING (run_id) "
                        "WHERE r.status = ?", [TRAINING]):  # fmt: skip
        record = read_json(node_record_path(Path(row["run_dir"]), 0))
        if record.get("host") == host and record.get("run_id") == row["run_id"] and not _alive(record.get("pid")):
            lost.append(row)
    why = "node 0's hopforge process ended without recording an end (killed or crashed); found by the next run"
    for row in lost:
        wh.execute("UPDATE runs SET status = 'crashed', ended_at = ?, error = ? WHERE run_id = ?",
                   [datetime.now(), why, row["run_id"]])  # fmt: skip
        wh.execute("UPDATE training_runs SET status = 'failed', ended_at = ?, error = ? WHERE train_id = ? AND "
                   "status = 'running'", [datetime.now(), why, row["train_id"]])  # fmt: skip
    return [r["run_id"] for r in lost]


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process of that number
        return True
    return True


def _record_start(plan: TrainPlan, *, run_id: str, flow: str, kind: str, params: dict[str, Any],
                  settings: Settings, started: datetime, status: str, base_model: str | None) -> None:  # fmt: skip
    with _warehouse(settings) as wh:
        crashed = mark_crashed(wh) + mark_lost_trainings(wh)
        if crashed:
            print(f"marked {len(crashed)} run(s) whose process ended without recording an end as crashed: "
                  f"{', '.join(crashed)}")  # fmt: skip
        with wh.transaction() as tx:
            wh.write_batch("runs", [_runs_row(run_id, flow, params, settings, started)], con=tx)
            wh.write_batch("training_runs", [training_row(plan, train_id=plan.run_dir.name, run_id=run_id, kind=kind,
                           status=status, started_at=started, base_model=base_model)], replace=True, con=tx)  # fmt: skip


def _record_end(plan: TrainPlan, *, run_id: str, kind: str, settings: Settings, started: datetime,
                status: str, res: LaunchResult | None, base_model: str | None, ranks: dict[str, Any] | None,
                error: str | None) -> None:  # fmt: skip
    """The run's final rows, in one transaction: ``training_runs`` (its state: rank 0's result), the metrics, every
    node's and rank's record, and the ``runs`` row's end."""
    row = training_row(plan, train_id=plan.run_dir.name, run_id=run_id, kind=kind, status=status, started_at=started,
                       launch_result=res, base_model=base_model)  # fmt: skip
    row["ranks"] = json.dumps(ranks, sort_keys=True, default=str) if ranks is not None else None
    with _warehouse(settings) as wh, wh.transaction() as tx:
        wh.write_batch("training_runs", [row], replace=True, con=tx)
        if res is not None:
            wh.write_batch("training_metrics", metric_rows(plan.run_dir.name, res.metrics), replace=True, con=tx)
        tx.execute("UPDATE runs SET status = ?, error = ?, ended_at = ? WHERE run_id = ?",
                   ["completed" if status in ("completed", "dry_run") else "failed", error, datetime.now(), run_id])


def _run_format(plan: TrainPlan) -> ChatFormat | None:
    """The think/no-think format the run trains, to record beside its checkpoints; ``None`` (said in a line) when
    it cannot be told: then serving needs ``reasoning`` declared, as for a base model."""
    try:
        return plan_format(plan.summary(), plan.run_dir.name)
    except TrainingError as exc:
        print(f"no format record beside the checkpoints: {exc}")
        return None


def run_plan(plan: TrainPlan, *, kind: str, settings: Settings, params: dict[str, Any], dry_run: bool,
             timeout_s: float | None, base_model: str | None, check: bool = False, offline: bool = False,
             nnodes: int = 1) -> dict[str, Any]:  # fmt: skip
    """Record, launch (unless ``dry_run``) and record again. Returns the flow's result dict. With ``check`` (a dry
    run's option) the model must load on this node and the trainer's own parser must accept the written config.

    Several nodes (``nnodes``; this one is ``plan.node_rank``) run one run in one shared run directory. Only node 0
    writes the warehouse, and only for a moment at the start and at the end: the launch holds no lock, so the other
    nodes' ``hopforge train`` (which never open the warehouse) and any other command can run meanwhile. Every node
    records itself in ``nodes/node-<k>.json``, every rank in ``ranks/rank-<r>.json``; node 0 stores them all with
    the run. The run's state is rank 0's result; another node succeeds (exits 0) when its own ranks trained."""
    train_id = plan.run_dir.name
    node = plan.node_rank
    started = datetime.now()
    flow_name = f"train-{kind}"
    plan.hub_offline = hub_offline(base_model, offline)
    if not plan.hub_offline:
        plan.notes.append(f"model {base_model} is a hub id: the trainer reads it from this node's Hugging Face cache or "
                          "downloads it (--offline forbids downloading)")  # fmt: skip
    record = dict(kind=kind, settings=settings, started=started, base_model=base_model)
    if dry_run:
        return _dry_run(plan, flow_name=flow_name, params=params, check=check, **record)
    claim_run_dir(plan, run_identity(plan, kind=kind, base_model=base_model, nnodes=nnodes))
    run_id = new_run_id(flow_name) if node == 0 else None
    here = {"host": socket.gethostname(), "pid": os.getpid(), "run_id": run_id, "started_at": started,
            "node_dir": str(plan.node_dir)}  # fmt: skip
    write_node_record(plan.run_dir, node, here)
    chat = _run_format(plan)
    if node == 0:
        if chat is not None:  # before training: checkpoints saved along the way are found under it
            plan.output_dir.mkdir(parents=True, exist_ok=True)
            write_format_record(plan.output_dir, chat, train_id=train_id)
        _record_start(plan, run_id=run_id, flow=flow_name, status="running", params=params, **record)
    res = _launch_recorded(plan, flow_name=flow_name, here=here, run_id=run_id, timeout_s=timeout_s, **record)
    write_node_record(plan.run_dir, node, {**here, "status": res.status, "returncode": res.returncode,
                                           "error": res.error, "duration_s": round(res.duration_s, 1),
                                           "ended_at": datetime.now()})  # fmt: skip
    if node != 0:
        if res.status != "completed":
            raise TrainingError(f"node {node}: {res.error or f'{plan.trainer} failed'}")
        print(f"node {node} of {nnodes}: its ranks finished training in {res.duration_s:.0f} s; node 0 records run "
              f"{train_id} (output: {plan.output_dir})")  # fmt: skip
        return _result(plan, run_id=None, status="completed", checkpoint=None, metrics={})
    return _finish_run(plan, res, chat=chat, run_id=run_id, flow_name=flow_name, nnodes=nnodes, **record)


def _result(plan: TrainPlan, *, run_id: str | None, status: str, checkpoint: str | None,
            metrics: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """The training flow's result dict."""
    return {"run_id": run_id, "train_id": plan.run_dir.name, "status": status, "run_dir": str(plan.run_dir),
            "node_dir": str(plan.node_dir), "node_rank": plan.node_rank, "command": plan.command_line(),
            "checkpoint": checkpoint, "metrics": metrics}  # fmt: skip


def _dry_run(plan: TrainPlan, *, flow_name: str, kind: str, params: dict[str, Any], settings: Settings,
             started: datetime, base_model: str | None, check: bool) -> dict[str, Any]:  # fmt: skip
    """A dry run: the plan's files written (and, with ``check``, the trainer's check), node 0's start and end
    recorded, the plan's artifact and the command to launch it."""
    plan.write()
    if check:
        trainer_check(plan, base_model)
        print(f"{plan.trainer} accepts the config in {plan.node_dir}")
    run_id = new_run_id(flow_name) if plan.node_rank == 0 else None
    if run_id is not None:
        _record_start(plan, run_id=run_id, flow=flow_name, kind=kind, params=params, settings=settings,
                      started=started, status="dry_run", base_model=base_model)  # fmt: skip
        _record_end(plan, run_id=run_id, kind=kind, settings=settings, started=started, status="dry_run",
                    res=None, base_model=base_model, ranks=None, error=None)  # fmt: skip
    _artifact(f"{flow_name}-plan", _report(plan, plan.run_dir.name, None))
    print(f"dry run: wrote {plan.node_dir}; launch with:\n  {plan.command_line()}")
    return _result(plan, run_id=run_id, status="dry_run", checkpoint=None, metrics={})


def _launch_recorded(plan: TrainPlan, *, flow_name: str, here: dict[str, Any], run_id: str | None, kind: str,
                     settings: Settings, started: datetime, base_model: str | None,
                     timeout_s: float | None) -> LaunchResult:  # fmt: skip
    """The trainer's launch with a progress bar over its steps. Interrupted or refused before the trainer ended,
    the node's record and (node 0) the run are marked failed, and the error goes on as it was."""
    total = int(plan.config.get("max_steps") or plan.config.get("total_training_steps") or 0)
    bar = Progress(f"{flow_name}-{plan.run_dir.name}", total, f"{plan.trainer} training")

    def on_metrics(rows: list[dict[str, Any]]) -> None:
        bar.update(max(r["step"] for r in rows))

    res: LaunchResult | None = None
    try:
        res = launch(plan, on_line=print if os.environ.get("HOPFORGE_TRAIN_ECHO") else None, on_metrics=on_metrics,
                     timeout_s=timeout_s)  # fmt: skip
    finally:
        if res is None:  # interrupted or refused before the trainer ended: recorded, and the error goes on as it was
            exc = sys.exc_info()[1]
            why = f"{type(exc).__name__}: {exc}" if exc is not None else "stopped before the trainer ended"
            write_node_record(plan.run_dir, plan.node_rank, {**here, "status": "failed", "error": why,
                                                             "ended_at": datetime.now()})  # fmt: skip
            if run_id is not None:
                _record_end(plan, run_id=run_id, kind=kind, settings=settings, started=started, status="failed",
                            res=None, base_model=base_model, ranks=None, error=why)  # fmt: skip
    return res


def _finish_run(plan: TrainPlan, res: LaunchResult, *, chat: ChatFormat | None, run_id: str | None, flow_name: str,
                nnodes: int, kind: str, settings: Settings, started: datetime,
                base_model: str | None) -> dict[str, Any]:  # fmt: skip
    """Node 0's end of a launched run: its checkpoints marked with the format, every node's and rank's record
    gathered, the run's end recorded with its report; ``TrainingError`` when the trainer failed."""
    train_id = plan.run_dir.name
    if res.status == "completed" and chat is not None:
        mark_checkpoints(plan.output_dir, chat, train_id=train_id, also=[res.checkpoint] if res.checkpoint else [])
    nodes = wait_for_nodes(plan.run_dir, nnodes, ended=True, wait_s=NODES_WAIT_S if nnodes > 1 and
                           res.status == "completed" else 0.0)  # fmt: skip
    ranks = {"nodes": nodes, "ranks": rank_records(plan.run_dir), "nnodes": nnodes}
    _record_end(plan, run_id=run_id, kind=kind, settings=settings, started=started, status=res.status, res=res,
                base_model=base_model, ranks=ranks, error=res.error)  # fmt: skip
    _artifact(f"{flow_name}-report", _report(plan, train_id, res))
    if res.status != "completed":
        raise TrainingError(res.error or f"{plan.trainer} failed")
    print(f"{plan.trainer} finished in {res.duration_s:.0f} s; checkpoint: {res.checkpoint}")
    return _result(plan, run_id=run_id, status=res.status, checkpoint=res.checkpoint,
                   metrics=final_metrics(res.metrics))


@hopforge_flow(name="train-sft", log_prints=True)
def train_sft(
    options: SFTOptions,
    export_version: str | None = None,
    dry_run: bool = False,
    check: bool = False,
    timeout_s: float | None = None,
    run_id: str | None = None,
    shared_dir: str | None = None,
    offline: bool = False,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """LLaMA-Factory SFT on an export (the newest when ``export_version`` is None); see the module docstring.
    ``check`` (with ``dry_run``): the model loads on this node and LLaMA-Factory's own parser accepts the written
    config. On several nodes (``options.cluster``) every node runs this flow with its own ``node_rank`` and the same
    ``run_id`` (or none: derived from the rendezvous, ``shared_train_id``); the run directory is
    ``<shared_dir>/<run id>`` or the data dir's ``training/<run id>``, and must be the same directory on every node.
    ``offline``: the trainer may not download the model (always so for a local model directory)."""
    TrainSFT.check_call(locals())
    settings = settings or default_settings()
    export = _export(settings, export_version)
    train_id = shared_train_id("sft", "llamafactory", run_id=run_id, cluster=options.cluster)
    plan = plan_sft(export, _run_dir(settings, train_id, shared_dir), options).on_node(options.cluster.node_rank)
    params = {**flow_parameters(train_sft, locals()), "export_version": export.version}  # the version it resolved to
    return run_plan(plan, kind="sft", settings=settings, params=params, dry_run=dry_run, timeout_s=timeout_s,
                    base_model=options.model, check=check, offline=offline, nnodes=options.cluster.nnodes)  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def tool_server(settings: Settings, *, port: int | None = None, embedder: str = "configured", workers: int = 1,
                startup_timeout_s: float = 300.0, log_path: Path | None = None) -> Iterator[str]:  # fmt: skip
    """``hopforge serve-tools`` on loopback for the length of the block; yields its base URL. The child reads the
    same warehouse (read-only, closed before it serves) and configuration as this process. Without ``port`` a
    free one is picked, and picked again if another process takes it before the server binds."""
    env = dict(os.environ)
    env["HOPFORGE_DATA_DIR"] = str(settings.data_dir)
    env["HOPFORGE_WAREHOUSE"] = str(settings.warehouse_path)
    env.pop("HOPFORGE_TOOL_TOKEN", None)  # a loopback server takes no token (training.tool_auth)
    config_file = getattr(settings, "_config_file", None)
    if config_file:
        env["HOPFORGE_CONFIG"] = str(config_file)
    deadline = time.monotonic() + startup_timeout_s
    for attempt in range(3 if port is None else 1):
        chosen = port or _free_port()
        log = log_path or settings.data_dir / "logs" / f"tool-server-{chosen}.log"
        proc, url = _start_tool_server(chosen, embedder, workers, env, log)
        try:
            ready = _wait_healthy(proc, url, deadline)
            if not ready and attempt < 2 and port is None and _port_taken(log):
                continue  # lost the port to another process between picking and binding it
            if not ready:
                tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:]
                if proc.poll() is not None:
                    raise TrainingError(f"the tool server exited with status {proc.returncode}: "
                                        f"{tail[0] if tail else '(no output)'} (log: {log})")  # fmt: skip
                raise TrainingError(f"the tool server did not answer /health within {startup_timeout_s:.0f} s (log: {log})")
            yield url
            return
        finally:
            _stop(proc)


def _start_tool_server(port: int, embedder: str, workers: int, env: dict[str, str],
                       log: Path) -> tuple[subprocess.Popen[bytes], str]:  # fmt: skip
    argv = [sys.executable, "-m", "flows.cli", "serve-tools", "--host", "127.0.0.1", "--port", str(port),
            "--embedder", embedder, "--workers", str(workers)]  # fmt: skip
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as handle:  # the child keeps its own descriptor
        # dies with this process (and its workers with it), however this process ends
        proc = children.popen(argv, stdout=handle, stderr=subprocess.STDOUT, env=env)
    return proc, f"http://127.0.0.1:{port}"


def _wait_healthy(proc: subprocess.Popen[bytes], url: str, deadline: float) -> bool:
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=2.0).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    return False


def _port_taken(log: Path) -> bool:
    text = log.read_text(encoding="utf-8", errors="replace").lower()
    return "address already in use" in text


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@hopforge_flow(name="train-rl", log_prints=True)
def train_rl(
    trainer: Literal["verl", "trl"] = "verl",
    verl: VerlOptions | None = None,
    trl: TRLOptions | None = None,
    export_version: str | None = None,
    start_tool_server: bool = True,
    tool_embedder: Literal["configured", "hashing"] = "configured",
    tool_workers: int = 1,
    dry_run: bool = False,
    check: bool = False,
    timeout_s: float | None = None,
    run_id: str | None = None,
    shared_dir: str | None = None,
    offline: bool = False,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """RL on an export's questions: verl (GRPO/PPO, vLLM rollouts, KG tools over HTTP) or TRL GRPO.

    With ``start_tool_server`` (verl) the flow serves the warehouse's graphs on a free loopback port with
    ``tool_workers`` processes (one per spare core of a rollout node) and points the tool config at it; otherwise
    the options' ``tool_server_url`` must name a running server. ``run_id``, ``shared_dir`` and ``offline`` as for
    ``train_sft``: TRL on several nodes runs this flow on every node (its own ``cluster.node_rank``); verl runs it
    once, on the node that drives the Ray cluster, and its ``shared_dir`` option holds the checkpoints."""
    TrainRL.check_call(locals())
    settings = settings or default_settings()
    export = _export(settings, export_version)
    if trainer == "verl":
        opts: VerlOptions | TRLOptions = verl or _missing("verl", "model")
    elif trainer == "trl":
        opts = trl or _missing("trl", "model")
    else:
        raise TrainingError(f"unknown RL trainer {trainer!r}; choose verl or trl")
    if trainer == "verl" and shared_dir is not None:  # verl's own option: its checkpoints go there
        opts = opts.model_copy(update={"shared_dir": shared_dir})  # checked again when planned
    cluster = opts.cluster if isinstance(opts, TRLOptions) else None
    train_id = shared_train_id("rl", trainer, run_id=run_id, cluster=cluster)
    run_dir = _run_dir(settings, train_id, shared_dir if trainer == "trl" else None)
    params = {**flow_parameters(train_rl, locals()), "export_version": export.version}  # the version it resolved to

    def go(tool_url: str | None) -> dict[str, Any]:
        if trainer == "verl":
            o = opts.model_copy(update={"tool_server_url": tool_url}) if tool_url else opts
            plan = plan_verl(export, run_dir, o)  # type: ignore[arg-type]
        else:
            plan = plan_trl(export, run_dir, opts).on_node(cluster.node_rank)  # type: ignore[arg-type,union-attr]
        return run_plan(plan, kind="rl", settings=settings, params=params, dry_run=dry_run, timeout_s=timeout_s,
                        base_model=opts.model, check=check, offline=offline,
                        nnodes=cluster.nnodes if cluster else 1)  # fmt: skip

    if trainer == "verl" and start_tool_server and not dry_run:
        with tool_server(settings, embedder=tool_embedder, workers=tool_workers,
                         log_path=run_dir / "tool-server.log") as url:  # fmt: skip
            print(f"tool server for the rollouts: {url}")
            return go(url)
    return go(None)


def _template_of(sft_result: dict[str, Any]) -> str:
    import yaml

    cfg = Path(sft_result["run_dir"]) / "llamafactory.yaml"
    return str(yaml.safe_load(cfg.read_text(encoding="utf-8")).get("template", "qwen3")) if cfg.is_file() else "qwen3"


def merge_adapter(adapter_dir: str | None, *, settings: Settings, template: str = "qwen3",
                  base_model: str | None = None, timeout_s: float | None = None) -> dict[str, Any]:  # fmt: skip
    """Merge a LoRA adapter into its base model (recorded as a ``merge`` training run); returns run_plan's dict."""
    if not adapter_dir:
        raise TrainingError("SFT reported no checkpoint: nothing to merge")
    train_id = new_train_id("merge", "llamafactory")
    plan = plan_merge(adapter_dir, _run_dir(settings, train_id), template=template, base_model=base_model)
    return run_plan(plan, kind="merge", settings=settings, params={"adapter": str(adapter_dir), "template": template},
                    dry_run=False, timeout_s=timeout_s, base_model=base_model)  # fmt: skip


def preflight(settings: Settings, export_version: str | None, options: SFTOptions | VerlOptions | TRLOptions, *,
              run_id: str | None = None, shared_dir: str | None = None) -> TrainPlan:  # fmt: skip
    """Plan a run without writing or launching anything, so that a bad export, dataset, model, option, run id or
    shared directory is one clear ``TrainingError`` before a flow (and Prefect) starts. The flow plans again, into
    its own run directory."""
    export = _export(settings, export_version)
    if run_id is not None:
        shared_train_id("preflight", "any", run_id=run_id, cluster=None)
    if shared_dir is not None:
        _run_dir(settings, "preflight", shared_dir)
    scratch = _run_dir(settings, "preflight")
    if isinstance(options, SFTOptions):
        return plan_sft(export, scratch, options)
    if isinstance(options, VerlOptions):
        return plan_verl(export, scratch, options)
    return plan_trl(export, scratch, options)


def _missing(trainer: str, field: str) -> Any:
    raise TrainingError(f"train-rl with trainer={trainer} needs `{trainer}` options (at least `{field}`)")


@hopforge_flow(name="train-and-eval", log_prints=True)
def train_and_eval(
    sft: SFTOptions,
    rl: VerlOptions | None = None,
    serve: ServeOptions | None = None,
    export_version: str | None = None,
    eval_split: Split = "test",
    eval_limit: int | None = None,
    dry_run: bool = False,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """SFT -> (RL from the SFT checkpoint: Omne-R1 stage 3) -> ``vllm serve`` -> ``evaluate-policy``.

    RL starts from full weights: after LoRA SFT the adapter is merged into its base model first (LLaMA-Factory's
    exporter, ``training.merge``). With ``dry_run`` the SFT and RL configs are written and their commands printed;
    nothing is launched."""
    settings = settings or default_settings()
    serve = serve or ServeOptions()
    out: dict[str, Any] = {"sft": train_sft(options=sft, export_version=export_version, dry_run=dry_run, settings=settings)}
    checkpoint = out["sft"]["checkpoint"]
    if rl is not None:
        if not dry_run and sft.finetuning_type != "full":
            out["merge"] = merge_adapter(checkpoint, settings=settings, template=_template_of(out["sft"]))
            checkpoint = out["merge"]["checkpoint"]
        rl_opts = rl if dry_run else rl.model_copy(update={"model": checkpoint, "stage": "sft"})
        out["rl"] = train_rl(trainer="verl", verl=rl_opts, export_version=export_version, dry_run=dry_run,
                             settings=settings)  # fmt: skip
        checkpoint = out["rl"]["checkpoint"]
    if dry_run:
        out["serve_command"] = "vllm serve <final checkpoint> ... (see `hopforge train serve-command`)"
        return out
    if not checkpoint:
        raise TrainingError("the trainer finished without reporting a checkpoint; nothing to evaluate")
    from flows.evaluate import evaluate_policy

    out["serve_command"] = serve_command_line(checkpoint, serve)
    log = settings.data_dir / "logs" / f"vllm-{serve.served_name}.log"
    with VLLMServer(checkpoint, serve, log) as server:
        policy = settings.roles.policy.model_copy(update=server.policy_endpoint(settings.roles.policy.extra_body))
        roles = settings.roles.model_copy(update={"policy": policy})
        eval_settings = settings.model_copy(update={"roles": roles})
        out["eval"] = evaluate_policy(split=eval_split, limit=eval_limit, trained_as=server.plan.chat.kind,
                                      serving=server.record(), settings=eval_settings)  # fmt: skip
    return out


__all__ = ["train_sft", "train_rl", "train_and_eval", "tool_server", "run_plan", "merge_adapter"]
