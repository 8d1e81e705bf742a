"""Training flows: an export version in, a checkpoint (and its record) out.

- ``train-sft``: LLaMA-Factory SFT (``training.sft``) with the weighted think-token loss.
- ``train-rl``: verl GRPO/PPO with vLLM rollouts and the KG tool agent loop (``training.rl.plan_verl``), or TRL
  GRPO as the light path (``plan_trl``). The flow starts ``hopforge serve-tools`` on loopback for the rollouts'
  tool calls and stops it when training ends.
- ``train-and-eval``: SFT, then optionally RL from the SFT checkpoint (Omne-R1 stage 3), then ``vllm serve`` of the
  final checkpoint and ``evaluate-policy`` with the ``policy`` role pointed at it.

Every run is a ``training_runs`` row (the plan's whole configuration, the export version and manifest sha256, the
trainer and its version, status, checkpoint) plus ``training_metrics`` per logged step, and a Prefect markdown
artifact with the loss / reward curves. ``dry_run`` writes the configs and the command and launches nothing.
The trainers run in their own environments (``training.envs``); this process never imports them.
"""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import httpx

from flows.progress import Progress
from flows.runtime import default_settings, flow_parameters, hopforge_flow, open_run
from schemas.config import Settings
from schemas.qa import Split
from tasks.ops import children
from training.merge import plan_merge
from training.plan import ExportView, TrainingError, TrainPlan, load_export, resolve_export
from training.rl import TRLOptions, VerlOptions, check_plan, plan_trl, plan_verl
from training.runs import LaunchResult, check_timeout, curves_svg, final_metrics, launch, metric_rows, training_row
from training.serve import ServeOptions, VLLMServer, serve_command_line
from training.sft import SFTOptions, plan_sft, validate_sft_config


def new_train_id(kind: str, trainer: str) -> str:
    return f"{kind}-{trainer}-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


def _export(settings: Settings, export_version: str | None) -> ExportView:
    return load_export(resolve_export(settings.data_dir / "exports", export_version))


def _run_dir(settings: Settings, train_id: str) -> Path:
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


def trainer_check(plan: TrainPlan) -> dict[str, Any]:
    """The trainer's own parser on the plan's config, in its environment (LLaMA-Factory's ``get_train_args``;
    verl's Hydra composition and ``validate_config``; TRL's ``GRPOConfig``). ``TrainingError`` on refusal."""
    if plan.trainer == "llamafactory":
        return validate_sft_config(plan)
    return check_plan(plan)


def run_plan(plan: TrainPlan, *, kind: str, settings: Settings, params: dict[str, Any], dry_run: bool,
             timeout_s: float | None, base_model: str | None, check: bool = False) -> dict[str, Any]:  # fmt: skip
    """Record, launch (unless ``dry_run``) and record again. Returns the flow's result dict. With ``check`` (a dry
    run's option) the trainer's own parser must accept the written config first."""
    train_id = plan.run_dir.name
    started = datetime.now()
    flow_name = f"train-{kind}"
    with open_run(flow_name, params, settings) as rt:
        if dry_run:
            plan.write()
            if check:
                trainer_check(plan)
                print(f"{plan.trainer} accepts the config in {plan.run_dir}")
            rt.wh.write_batch("training_runs", [training_row(plan, train_id=train_id, run_id=rt.run_id, kind=kind,
                              status="dry_run", started_at=started, base_model=base_model)])  # fmt: skip
            _artifact(f"{flow_name}-plan", _report(plan, train_id, None))
            print(f"dry run: wrote {plan.run_dir}; launch with:\n  {plan.command_line()}")
            return {"run_id": rt.run_id, "train_id": train_id, "status": "dry_run", "run_dir": str(plan.run_dir),
                    "command": plan.command_line(), "checkpoint": None, "metrics": {}}  # fmt: skip
        rt.wh.write_batch("training_runs", [training_row(plan, train_id=train_id, run_id=rt.run_id, kind=kind,
                          status="running", started_at=started, base_model=base_model)])  # fmt: skip
        total = int(plan.config.get("max_steps") or plan.config.get("total_training_steps") or 0)
        bar = Progress(f"{flow_name}-{train_id}", total, f"{plan.trainer} training")

        def on_metrics(rows: list[dict[str, Any]]) -> None:
            bar.update(max(r["step"] for r in rows))

        res = launch(plan, on_line=print if os.environ.get("HOPFORGE_TRAIN_ECHO") else None, on_metrics=on_metrics,
                     timeout_s=timeout_s)  # fmt: skip
        with rt.wh.transaction() as tx:  # the final row and the metrics land together
            rt.wh.write_batch("training_runs", [training_row(plan, train_id=train_id, run_id=rt.run_id, kind=kind,
                              status=res.status, started_at=started, launch_result=res, base_model=base_model)],
                              replace=True, con=tx)  # fmt: skip
            rt.wh.write_batch("training_metrics", metric_rows(train_id, res.metrics), replace=True, con=tx)
        _artifact(f"{flow_name}-report", _report(plan, train_id, res))
        if res.status != "completed":
            raise TrainingError(res.error or f"{plan.trainer} failed")
        print(f"{plan.trainer} finished in {res.duration_s:.0f} s; checkpoint: {res.checkpoint}")
        return {"run_id": rt.run_id, "train_id": train_id, "status": res.status, "run_dir": str(plan.run_dir),
                "command": plan.command_line(), "checkpoint": res.checkpoint, "metrics": final_metrics(res.metrics)}  # fmt: skip


@hopforge_flow(name="train-sft", log_prints=True)
def train_sft(
    options: SFTOptions,
    export_version: str | None = None,
    dry_run: bool = False,
    check: bool = False,
    timeout_s: float | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """LLaMA-Factory SFT on an export (the newest when ``export_version`` is None); see the module docstring.
    ``check`` (with ``dry_run``): LLaMA-Factory's own parser must accept the written config."""
    settings = settings or default_settings()
    check_timeout(timeout_s)
    export = _export(settings, export_version)
    train_id = new_train_id("sft", "llamafactory")
    plan = plan_sft(export, _run_dir(settings, train_id), options)
    params = {**flow_parameters(train_sft, locals()), "export_version": export.version}  # the version it resolved to
    return run_plan(plan, kind="sft", settings=settings, params=params, dry_run=dry_run, timeout_s=timeout_s,
                    base_model=options.model, check=check)  # fmt: skip


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
    settings: Settings | None = None,
) -> dict[str, Any]:
    """RL on an export's questions: verl (GRPO/PPO, vLLM rollouts, KG tools over HTTP) or TRL GRPO.

    With ``start_tool_server`` (verl) the flow serves the warehouse's graphs on a free loopback port with
    ``tool_workers`` processes (one per spare core of a rollout node) and points the tool config at it; otherwise
    the options' ``tool_server_url`` must name a running server."""
    if tool_workers < 1:
        raise TrainingError(f"tool_workers must be >= 1, got {tool_workers}")
    settings = settings or default_settings()
    check_timeout(timeout_s)
    export = _export(settings, export_version)
    train_id = new_train_id("rl", trainer)
    run_dir = _run_dir(settings, train_id)
    if trainer == "verl":
        opts: VerlOptions | TRLOptions = verl or _missing("verl", "model")
    elif trainer == "trl":
        opts = trl or _missing("trl", "model")
    else:
        raise TrainingError(f"unknown RL trainer {trainer!r}; choose verl or trl")
    params = {**flow_parameters(train_rl, locals()), "export_version": export.version}  # the version it resolved to

    def go(tool_url: str | None) -> dict[str, Any]:
        if trainer == "verl":
            o = opts.model_copy(update={"tool_server_url": tool_url}) if tool_url else opts
            plan = plan_verl(export, run_dir, o)  # type: ignore[arg-type]
        else:
            plan = plan_trl(export, run_dir, opts)  # type: ignore[arg-type]
        return run_plan(plan, kind="rl", settings=settings, params=params, dry_run=dry_run, timeout_s=timeout_s,
                        base_model=opts.model, check=check)  # fmt: skip

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


def preflight(settings: Settings, export_version: str | None, options: SFTOptions | VerlOptions | TRLOptions) -> TrainPlan:
    """Plan a run without writing or launching anything, so that a bad export, dataset, model or option is one
    clear ``TrainingError`` before a flow (and Prefect) starts. The flow plans again, into its own run directory."""
    export = _export(settings, export_version)
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
