"""RL hand-off to TRL: GRPO, the light path.

``plan_trl(export, run_dir, TRLOptions(...))`` writes ``trl_grpo.yaml`` (``GRPOConfig`` arguments plus hopforge's
data, reward and tool settings) for ``training/launch/trl_grpo.py``. On GPUs the command is ``accelerate launch
--config_file <run_dir>/accelerate.yaml`` (one process per GPU: ``GRPOTrainer`` refuses several GPUs in one process),
with the ``cluster`` option's nodes, ranks and rendezvous, bf16 when the GPUs support it, and DeepSpeed ZeRO-2/3
through accelerate's plugin (``training.cluster``). TRL does not cut prompts, so a prompt longer than
``max_prompt_length`` (measured by the launcher with the model's tokenizer and the tools it trains with) stops the
run or is left out, as ``overlong`` says; ``training.plan.measure_prompts`` counts the same for any export. TRL
turns a failing tool call into a reply the policy trains on, so the launcher counts every call's outcome and stops
the run past ``max_tool_failure_rate`` of the last ``tool_failure_window`` calls (verl's bound, same names and
defaults), every rank together; a loopback ``tool_server_url`` is refused on several nodes. Rollouts use vLLM
colocated on GPUs unless ``use_vllm`` says otherwise (refused in one line where the trl environment has no vLLM),
and the completion budget, which TRL fills with tool replies too, is measured by the launcher from the export's
trajectories unless ``max_completion_length`` is given (then checked against them).

What verl's and TRL's plans share (the options base, ``check_plan``) is ``training.rl_common``.

This module is core: it imports neither torch nor any trainer.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from training.cluster import (
    ClusterOptions,
    DeviceInfo,
    ResolvedCluster,
    accelerate_config,
    check_memory_fit,
    detect_device,
    resolve_cluster,
)
from training.plan import REPO_ROOT, ExportView, TrainingError, TrainPlan, check_lora_rank, dump_yaml, launcher
from training.rl_common import TRL_CONFIG_FILE, _check_policy_model, _Options, loopback_tool_url_problem

ACCELERATE_FILE = "accelerate.yaml"


class TRLOptions(_Options):
    """A TRL GRPO run. ``dataset="rl"`` trains on the rl rows' prompts (system + question) with their ground
    truth; ``"messages"`` on the first system/user turns of the messages rows (answers only: no gold paths).
    With ``tool_server_url`` the KG tools are offered for multi-turn rollouts (TRL's tool loop, up to
    ``max_tool_rounds`` calls); without it the model answers in one turn."""

    dataset: Literal["rl", "messages"] = "rl"
    tool_server_url: str | None = None
    num_generations: int = Field(default=4, ge=2, description="Completions per prompt (the GRPO group).")
    per_device_train_batch_size: int = Field(default=4, ge=1)
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    learning_rate: float = Field(default=1e-6, gt=0, lt=1)
    beta: float = Field(default=0.0, ge=0, description="KL coefficient (0: no reference model).")
    epsilon: float = Field(default=0.2, gt=0, lt=1)
    loss_type: Literal["grpo", "dapo", "dr_grpo", "bnpo"] = "dapo"
    max_completion_length: int | None = Field(default=None, ge=8, description="Tokens of one rollout after its "
                                              "prompt: every assistant turn and every tool reply (TRL 1.16 counts "
                                              "both and drops a reply that would not fit, so the rollout ends "
                                              "without an answer). None: the launcher measures the export's "
                                              "trajectories and takes the longest times completion_margin; a given "
                                              "value that cannot hold them is refused.")  # fmt: skip
    completion_margin: float = Field(default=1.25, ge=1, le=8, description="Room above the longest measured "
                                                                          "trajectory for a measured budget.")  # fmt: skip
    max_tool_response_chars: int = Field(default=4096, ge=64, description="Longer tool replies are cut in the "
                                         "middle, as verl's tool loop cuts them (also in the measured trajectories).")  # fmt: skip
    temperature: float = Field(default=1.0, gt=0)
    num_train_epochs: float = Field(default=1.0, gt=0)
    max_steps: int = Field(default=-1, ge=-1)
    logging_steps: int = Field(default=1, ge=1)
    save_steps: int = Field(default=500, ge=1)
    use_vllm: Literal["auto", "off", "colocate", "server"] = Field(default="auto", description="Rollouts with "
                                                                    "vLLM. auto: colocate on GPUs (HF generate under "
                                                                    "ZeRO-3 is orders of magnitude slower), off on a "
                                                                    "CPU.")  # fmt: skip
    vllm_server_base_url: str | None = None
    vllm_gpu_memory_utilization: float = Field(default=0.3, gt=0, le=1)
    bf16: bool | None = Field(default=None, description="None: on when the node's GPUs compute in bf16, off on a CPU.")
    lora_rank: int = Field(default=0, ge=0, description="0: full fine-tuning; at most 512, the largest vLLM serves.")
    max_prompt_length: int = Field(default=2048, ge=16, description="Tokens of a prompt with its tools and chat "
                                                                    "template; longer ones are refused or filtered.")  # fmt: skip
    overlong: Literal["refuse", "filter"] = Field(default="refuse", description="What a prompt longer than "
                                                                               "max_prompt_length does to the run.")  # fmt: skip
    deepspeed: Literal["none", "zero2", "zero3"] = "none"
    cluster: ClusterOptions = Field(default_factory=ClusterOptions)
    seed: int = 0
    report_to: list[str] = Field(default_factory=list)
    extra_args: dict[str, Any] = Field(default_factory=dict, description="More GRPOConfig arguments, applied last.")

    @field_validator("tool_server_url", "vllm_server_base_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"https?://[^\s/]+(/[^\s]*)?", v):
            raise ValueError(f"must be an http(s) URL like http://127.0.0.1:8765, got {v!r}")
        return v.rstrip("/") if v else v

    @field_validator("lora_rank")
    @classmethod
    def _servable_rank(cls, v: int) -> int:
        return check_lora_rank(v)

    @model_validator(mode="after")
    def _consistent(self) -> TRLOptions:
        if (self.per_device_train_batch_size * self.gradient_accumulation_steps) % self.num_generations:
            raise ValueError(f"per_device_train_batch_size x gradient_accumulation_steps "
                             f"({self.per_device_train_batch_size * self.gradient_accumulation_steps}) must be a "
                             f"multiple of num_generations ({self.num_generations})")  # fmt: skip
        if self.use_vllm == "server" and not self.vllm_server_base_url:
            raise ValueError("use_vllm='server' needs vllm_server_base_url (a running `trl vllm-serve`)")
        owned = {"output_dir", "use_vllm", "vllm_mode", "max_tool_calling_iterations", "bf16", "deepspeed"}
        if owned & set(self.extra_args):
            raise ValueError(f"extra_args may not set {sorted(owned & set(self.extra_args))}: use the options")
        return self


def trl_config(export: ExportView, run_dir: Path, opts: TRLOptions, model: str,
               rc: ResolvedCluster | None = None) -> dict[str, Any]:  # fmt: skip
    """The launcher's YAML: ``grpo`` holds ``GRPOConfig`` keyword arguments, ``hopforge`` the rest. ``rc``: where
    it runs (default: one CPU process)."""
    rc = rc or resolve_cluster(ClusterOptions(device="cpu"), DeviceInfo("cpu", 0, None, False, "default (one CPU "
                                                                                                "process)"))  # fmt: skip
    bf16 = opts.bf16 if opts.bf16 is not None else (rc.device.kind == "cuda" and rc.device.bf16)
    use_vllm = trl_vllm_mode(opts, rc.device)
    files, rows = export.data_files(opts.dataset), export.rows(opts.dataset)
    if not files or not rows.get("train"):
        raise TrainingError(f"export {export.version} has no {opts.dataset} train rows: export again with the "
                            f"{opts.dataset} config, or choose dataset={'messages' if opts.dataset == 'rl' else 'rl'}")  # fmt: skip
    if opts.max_steps < 0 and rows["train"] < opts.per_device_train_batch_size // opts.num_generations:
        raise TrainingError(f"the export's {rows['train']} {opts.dataset} train rows do not fill one batch")
    grpo: dict[str, Any] = {
        "output_dir": str(run_dir / "checkpoints"),
        "learning_rate": opts.learning_rate,
        "beta": opts.beta,
        "epsilon": opts.epsilon,
        "loss_type": opts.loss_type,
        "num_generations": opts.num_generations,
        "per_device_train_batch_size": opts.per_device_train_batch_size,
        "gradient_accumulation_steps": opts.gradient_accumulation_steps,
        "max_completion_length": opts.max_completion_length,
        "temperature": opts.temperature,
        "num_train_epochs": opts.num_train_epochs,
        "max_steps": opts.max_steps,
        "logging_steps": opts.logging_steps,
        "save_steps": opts.save_steps,
        "save_strategy": "steps",
        "bf16": bf16,
        "seed": opts.seed,
        "report_to": list(opts.report_to) or "none",
        "use_vllm": use_vllm != "off",
        "remove_unused_columns": False,  # the reward needs the ground-truth columns
    }
    if use_vllm != "off":
        grpo["vllm_mode"] = use_vllm
        grpo["vllm_gpu_memory_utilization"] = opts.vllm_gpu_memory_utilization
        if opts.vllm_server_base_url:
            grpo["vllm_server_base_url"] = opts.vllm_server_base_url
    if opts.tool_server_url:
        grpo["max_tool_calling_iterations"] = opts.max_tool_rounds
    grpo.update(opts.extra_args)
    return {
        "grpo": grpo,
        "hopforge": {
            # the run's shared directory: the launcher's records go there on every node (node k's config is elsewhere)
            "run_dir": str(Path(run_dir).resolve()),
            "model": model, "stage": opts.stage, "dataset": opts.dataset,
            "train_file": str(files["train"]),
            "eval_file": str(files["validation"]) if rows.get("validation") else None,
            "reward": opts.reward_name, "reward_kwargs": dict(opts.reward_kwargs),
            "tool_server_url": opts.tool_server_url, "tool_timeout_s": opts.tool_timeout_s,
            "max_tool_failure_rate": opts.max_tool_failure_rate, "tool_failure_window": opts.tool_failure_window,
            "lora_rank": opts.lora_rank, "max_prompt_length": opts.max_prompt_length, "overlong": opts.overlong,
            # TRL's completion budget holds the tool replies: the launcher measures it from these trajectories
            "trajectories_file": str(export.data_files("messages")["train"]) if export.rows("messages").get("train")
            else None,
            "completion_margin": opts.completion_margin, "max_tool_response_chars": opts.max_tool_response_chars,
            # What the launcher's --check stands in for when it validates on another machine than the ranks'.
            "launch": {**rc.summary(), "accelerate": _under_accelerate(rc, opts), "bf16": bf16,
                       "deepspeed": opts.deepspeed},
        },
    }  # fmt: skip


def trl_vllm_mode(opts: TRLOptions, device: DeviceInfo) -> str:
    """The rollout engine of a TRL plan: ``auto`` is ``colocate`` on GPUs and ``off`` on a CPU. vLLM on GPUs must be
    in the trl environment: refused in one line when this node's trl environment was probed and has none (a plan
    for GPUs declared in the options, checked elsewhere, is left to the launcher, which refuses the same way)."""
    mode = opts.use_vllm if opts.use_vllm != "auto" else ("colocate" if device.kind == "cuda" else "off")
    if mode == "off" or device.kind != "cuda":
        return mode
    if device.source.startswith("probe") and not device.versions.get("vllm"):
        raise TrainingError(f"use_vllm={mode} needs vLLM in the trl environment, which has none: build it with `make "
                            "trainer-env T=trl FLAVOUR=gpu` (trl[vllm]), or set use_vllm=off (rollouts with HF "
                            "generate, orders of magnitude slower)")  # fmt: skip
    return mode


def _under_accelerate(rc: ResolvedCluster, opts: TRLOptions) -> bool:
    """GPU plans run under ``accelerate launch`` (one process per GPU: GRPOTrainer refuses several GPUs in one
    process); a CPU plan only when it has several processes."""
    return rc.device.kind == "cuda" or rc.distributed or opts.deepspeed != "none"


def plan_trl(export: ExportView, run_dir: Path, opts: TRLOptions, device: DeviceInfo | None = None) -> TrainPlan:
    """The TRL GRPO run of ``opts`` on ``export`` (module docstring); nothing is launched or written. ``device``: what
    this node offers (default: ``training.cluster.detect_device`` on the trl environment). On GPUs, or with several
    processes, the command is ``accelerate launch --config_file <run_dir>/accelerate.yaml``."""
    from training.envs import env_python

    run_dir = Path(run_dir).resolve()
    model = _check_policy_model(opts.model, opts.stage)
    device = device or detect_device("trl", opts.cluster)
    rc = resolve_cluster(opts.cluster, device)
    if rc.nnodes > 1:  # every node's ranks call the tools: a loopback server answers on one of them only
        problem = loopback_tool_url_problem(opts.tool_server_url)
        if problem:
            raise TrainingError(f"{problem} (cluster.nnodes {rc.nnodes})")
    if device.kind == "cpu" and rc.distributed:
        raise TrainingError(f"cluster.nnodes x cluster.nproc_per_node is {rc.world_size} processes on a CPU; TRL on a "
                            "CPU runs one process (accelerate's MULTI_CPU launch needs MPI): plan on GPUs")  # fmt: skip
    if opts.deepspeed != "none" and device.kind != "cuda":
        raise TrainingError(f"deepspeed={opts.deepspeed} shards the model over GPUs, but this plan's device is a CPU "
                            f"({device.source}): set cluster.device=cuda on a GPU node")  # fmt: skip
    memory = check_memory_fit(model=model, finetuning_type="lora" if opts.lora_rank else "full",
                              lora_rank=opts.lora_rank, sharding=opts.deepspeed, rc=rc,
                              model_params_b=opts.cluster.model_params_b, reference_model=opts.beta > 0,
                              reserved_fraction=opts.vllm_gpu_memory_utilization
                              if trl_vllm_mode(opts, device) == "colocate" else 0.0)  # fmt: skip
    config = trl_config(export, run_dir, opts, model, rc)
    notes = [f"stage {opts.stage}: GRPO from {model}, reward {opts.reward_name}",
             "multi-turn with the KG tools" if opts.tool_server_url else "single-turn (no tool_server_url)",
             f"rollouts: {'vLLM ' + config['grpo']['vllm_mode'] if config['grpo']['use_vllm'] else 'HF generate'}",
             f"completion budget: {opts.max_completion_length} tokens, checked against the export's trajectories"
             if opts.max_completion_length else "completion budget: the longest of the export's trajectories (tool "
             f"replies cut at {opts.max_tool_response_chars} characters) x {opts.completion_margin}, measured by the "
             "launcher with the model's tokenizer",
             f"prompts longer than {opts.max_prompt_length} tokens: {opts.overlong} (measured by the launcher with the "
             "model's tokenizer before the model loads)"]  # fmt: skip
    if not config["grpo"]["bf16"]:
        notes.append(f"bf16 is off ({'set bf16=false' if opts.bf16 is False else 'no bf16 GPU on this node'}; "
                     f"device from {device.source})")  # fmt: skip
    if rc.nnodes > 1:
        notes.append(f"node {rc.node_rank} of {rc.nnodes}: run the same command on every node with its own "
                     "cluster.node_rank; the export and the run directory must be the same paths on every node")  # fmt: skip
    files = {TRL_CONFIG_FILE: dump_yaml(config)}
    python, script = str(env_python("trl")), launcher("trl_grpo.py")
    args = ["--config", str(run_dir / TRL_CONFIG_FILE)]
    accelerate = config["hopforge"]["launch"]["accelerate"]
    if accelerate:
        files[ACCELERATE_FILE] = dump_yaml(accelerate_config(rc, bf16=config["grpo"]["bf16"], deepspeed=opts.deepspeed))
        argv = [python, "-m", "accelerate.commands.launch", "--config_file", str(run_dir / ACCELERATE_FILE), script, *args]
    else:
        argv = [python, script, *args]
    return TrainPlan(trainer="trl", env="trl", run_dir=run_dir, files=files, argv=argv,
                     config={**config, "options": opts.model_dump(mode="json"), "max_steps": opts.max_steps,
                             "cluster": rc.summary(), "memory": memory, "versions": device.versions,
                             "launcher": "accelerate" if accelerate else "python"},
                     export_version=export.version, manifest_sha256=export.manifest_sha256,
                     output_dir=run_dir / "checkpoints", env_vars={"PYTHONPATH": str(REPO_ROOT)}, notes=notes)  # fmt: skip


__all__ = [
    "TRLOptions",
    "plan_trl",
    "trl_config",
    "trl_vllm_mode",
]
