"""RL hand-off to verl: GRPO/PPO with vLLM rollouts and the KG tool agent loop.

``plan_verl(export, run_dir, VerlOptions(...))`` writes verl's tool config (``tool_config.yaml``) into the run
directory and returns the command ``python training/launch/verl_ppo.py <hopforge flags> --run-dir <run_dir> <hydra
overrides>``. That launcher runs verl's ``main_ppo`` in-process with those overrides and adds what verl lacks for
the launcher contract (``training.plan``): verl's ``file`` logger writes ``{"step", "data": {...}}`` lines, so the
launcher turns them into flat ``metrics.jsonl`` rows while training runs, and writes ``result.json`` with the last
checkpoint (the actor's Hugging Face weights, ready for ``vllm serve``). It also measures every prompt with the
model's tokenizer before training (``overlong``: refuse or filter), checks the tool server, and on a Ray cluster
(``ray_address``, ``nnodes``) checks from every node that the shipped code, the tool server with its token, the
``shared_dir`` and the model are there, and stops the run when tool calls keep failing (``max_tool_failure_rate``):
see ``training/launch/verl_cluster.py``. Both Omne-R1 schedules are options:
stage 1 is ``stage="base"`` (RL from the base model on the QA prompts, reward ``omne_stage1``), stage 3 is
``stage="sft"`` (RL from the SFT checkpoint, reward ``omne_post_sft``); the paper trains both with PPO
(``algorithm="ppo"``), Explore-on-Graph with GRPO (the default).

verl plans set the trained models' attention (``attn_implementation``): sdpa unless flash-attn imports in the verl
environment (``resolve_attn_implementation``), since verl 0.9.1 defaults to flash_attention_2.

What verl's and TRL's plans share (the options base, ``check_plan``) is ``training.rl_common``.

This module is core: it imports neither torch nor any trainer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from training.cluster import env_versions
from training.plan import REPO_ROOT, ExportView, TrainingError, TrainPlan, check_model_dir, dump_yaml, launcher
from training.rl_common import _check_policy_model, _check_shared_dir, _Options, loopback_tool_url_problem

TOOL_CONFIG_FILE = "tool_config.yaml"
VERL_LOG_FILE = "verl_metrics.jsonl"
REWARD_FILE = REPO_ROOT / "training" / "verl_reward.py"
#: verl's ``pkg://`` form of the reward: imported by module name, so each node uses its py_modules copy.
REWARD_MODULE = "pkg://training.verl_reward"
TOOL_CLASS = "training.launch.verl_tools.HopforgeKGTool"

#: hopforge's packages the Ray workers import (the tool class, the reward and what they import), shipped to every
#: node through Ray's runtime_env ``py_modules``: no node needs this checkout.
SHIPPED_PACKAGES = ("training", "schemas", "tasks", "gateway")
#: Seconds the planner waits for a Ray head to accept a connection.
RAY_PROBE_TIMEOUT_S = 3.0


class VerlOptions(_Options):
    """A verl run. Defaults follow Explore-on-Graph's verl GRPO set-up (App. K: lr 4e-6, 6 samples per prompt,
    temperature 1, KL loss off, gradient clip 1, vLLM at 0.6 of GPU memory) at a smaller batch, and Omne-R1's tool
    loop (7 tool rounds)."""

    algorithm: Literal["grpo", "ppo"] = "grpo"
    critic_model: str | None = Field(default=None, description="PPO critic initialisation; default: the policy model.")
    critic_lr: float = Field(default=1e-5, gt=0, lt=1)
    rollout_n: int = Field(default=6, ge=1, le=256, description="Responses sampled per prompt.")
    train_batch_size: int = Field(default=64, ge=1, description="Prompts per RL step.")
    ppo_mini_batch_size: int = Field(default=32, ge=1, description="Prompts per policy update (<= train_batch_size).")
    micro_batch_size_per_gpu: int = Field(default=2, ge=1)
    ppo_epochs: int = Field(default=1, ge=1)
    lr: float = Field(default=4e-6, gt=0, lt=1)
    lr_warmup_steps: int = Field(default=-1, ge=-1)
    use_kl_loss: bool = False
    kl_loss_coef: float = Field(default=0.001, ge=0)
    kl_loss_type: Literal["kl", "abs", "mse", "low_var_kl", "full"] = "low_var_kl"
    use_kl_in_reward: bool = False
    kl_coef: float = Field(default=0.001, ge=0, description="KL coefficient when it is in the reward.")
    entropy_coeff: float = Field(default=0.0, ge=0)
    temperature: float = Field(default=1.0, gt=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    max_prompt_length: int = Field(default=2048, ge=16, description="Tokens of a prompt with its tools and chat "
                                                                    "template; longer ones are refused or filtered.")  # fmt: skip
    overlong: Literal["refuse", "filter"] = Field(default="refuse", description="What a prompt longer than "
                                                                               "max_prompt_length does to the run.")  # fmt: skip
    max_response_length: int = Field(default=8192, ge=16, description="All assistant turns and tool replies of one rollout.")
    max_tool_response_chars: int = Field(default=4096, ge=64, description="Longer tool replies are cut (middle).")
    tool_server_url: str = Field(default="http://127.0.0.1:8765", description="A running `hopforge serve-tools`.")
    n_gpus_per_node: int = Field(default=8, ge=1)
    nnodes: int = Field(default=1, ge=1)
    ray_address: str | None = Field(default=None, description="host:port of a running Ray cluster's head (its GCS) "
                                                              "to join; none: verl starts a local Ray.")  # fmt: skip
    shared_dir: str | None = Field(default=None, description="A directory every node mounts at this same path: "
                                   "checkpoints go there. Needed with ray_address or nnodes > 1.")  # fmt: skip
    tensor_parallel_size: int = Field(default=1, ge=1)
    gpu_memory_utilization: float = Field(default=0.6, gt=0, le=1)
    lora_rank: int = Field(default=0, ge=0)
    gradient_checkpointing: bool = True
    attn_implementation: Literal["auto", "sdpa", "flash_attention_2", "eager"] = Field(
        default="auto", description="Attention of the trained models (actor, reference, critic; vLLM's rollouts pick "
        "their own). auto: flash_attention_2 when flash-attn imports in the verl environment, else sdpa: verl 0.9.1 "
        "loads them with flash_attention_2 unless told, and transformers refuses that without flash-attn.")  # fmt: skip
    param_offload: bool = False
    optimizer_offload: bool = False
    total_epochs: int = Field(default=1, ge=1)
    total_training_steps: int | None = Field(default=None, ge=1, description="Stop after this many steps.")
    save_freq: int = Field(default=50, ge=1, description="Checkpoint every N steps (and always at the last).")
    test_freq: int = Field(default=10, ge=-1, description="Validate every N steps (-1: never).")
    val_before_train: bool = True
    logger: list[Literal["console", "wandb", "tensorboard", "mlflow", "swanlab"]] = Field(default_factory=lambda: ["console"])
    project_name: str = Field(default="hopforge", pattern=r"^[A-Za-z0-9_.-]+$")
    experiment_name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]+$")
    extra_overrides: list[str] = Field(default_factory=list, description="Raw Hydra overrides, applied last.")

    @field_validator("tool_server_url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not re.fullmatch(r"https?://[^\s/]+(/[^\s]*)?", v):
            raise ValueError(f"tool_server_url must be an http(s) URL like http://127.0.0.1:8765, got {v!r}")
        return v.rstrip("/")

    @field_validator("ray_address")
    @classmethod
    def _ray_address(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}", v.strip()):
            raise ValueError(f"ray_address must be the head's host:port (its GCS, e.g. 10.0.0.1:6379), got {v!r}")
        return v.strip() if v is not None else v

    @field_validator("extra_overrides")
    @classmethod
    def _overrides(cls, v: list[str]) -> list[str]:
        for item in v:
            if not re.fullmatch(r"[+~]{0,2}[A-Za-z_][\w.@/-]*(=.*)?", item) or ("=" not in item and not item.startswith("~")):
                raise ValueError(f"extra override {item!r} is not a Hydra override like `key.path=value`")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> VerlOptions:
        if self.algorithm == "grpo" and self.rollout_n < 2:
            raise ValueError("GRPO compares responses within a group: rollout_n must be >= 2 (PPO may use 1)")
        if self.ppo_mini_batch_size > self.train_batch_size:
            raise ValueError(f"ppo_mini_batch_size ({self.ppo_mini_batch_size}) must not exceed train_batch_size "
                             f"({self.train_batch_size})")  # fmt: skip
        if self.train_batch_size % self.ppo_mini_batch_size:
            raise ValueError(f"train_batch_size ({self.train_batch_size}) must be a multiple of ppo_mini_batch_size "
                             f"({self.ppo_mini_batch_size})")  # fmt: skip
        gpus = self.n_gpus_per_node * self.nnodes
        if (self.train_batch_size * self.rollout_n) % gpus:
            raise ValueError(f"train_batch_size x rollout_n ({self.train_batch_size * self.rollout_n}) must be "
                             f"divisible by the {gpus} GPUs")  # fmt: skip
        if gpus % self.tensor_parallel_size:
            raise ValueError(f"tensor_parallel_size ({self.tensor_parallel_size}) must divide the {gpus} GPUs")
        if self.critic_model is not None and self.algorithm != "ppo":
            raise ValueError("critic_model is only used with algorithm='ppo'")
        problem = cluster_problem(self)
        if problem:
            raise ValueError(problem)
        return self

    @classmethod
    def omne_r1(cls, stage: Literal["base", "sft"], model: str, **overrides: Any) -> VerlOptions:
        """Omne-R1's schedule for ``stage``: PPO with a critic (GAE), its stage reward, 7 tool rounds."""
        return cls(model=model, stage=stage, algorithm="ppo", **overrides)


def _address_host(address: str) -> str:
    return address.rsplit(":", 1)[0].strip("[]")


def cluster_problem(opts: VerlOptions) -> str | None:
    """What stops ``opts`` from running on the nodes it names, in one line, or ``None``.

    Several nodes need a running cluster to join (``ray_address``) and a directory they all see (``shared_dir``:
    every node's ranks write their shards of a checkpoint); so does a remote cluster, where the training workers
    may sit on another machine than the launcher. A loopback tool URL answers on this machine only: refused when
    rollout workers may run elsewhere, unless the cluster itself is on loopback (all its nodes on this machine)."""
    from training.tool_auth import is_loopback_host

    if opts.nnodes > 1 and not opts.ray_address:
        return (f"nnodes={opts.nnodes} needs ray_address: start a Ray cluster (`ray start --head` on one node, "
                "`ray start --address <head>:6379` on the others) and give its head's host:port")  # fmt: skip
    if (opts.ray_address or opts.nnodes > 1) and not opts.shared_dir:
        where = f"ray_address {opts.ray_address}" if opts.ray_address else f"nnodes={opts.nnodes}"
        return (f"{where} needs shared_dir: a directory every node mounts at the same path, where every node writes "
                "its part of each checkpoint")  # fmt: skip
    cluster_on_loopback = opts.ray_address is not None and is_loopback_host(_address_host(opts.ray_address))
    spans_machines = (opts.nnodes > 1 or opts.ray_address is not None) and not cluster_on_loopback
    return loopback_tool_url_problem(opts.tool_server_url) if spans_machines else None


def _hydra_value(value: Any) -> str:
    """One override value in Hydra's grammar: plain when it is safe unquoted, else a quoted string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_hydra_value(v) for v in value) + "]"
    text = str(value)
    # Hydra parses unquoted true/null/numbers as such; anything else outside this set (spaces, commas, quotes,
    # brackets, `=`) must be quoted so a path like "My Exports/v1" stays one string.
    if re.fullmatch(r"[A-Za-z_/.][\w./-]*", text) and text.lower() not in {"true", "false", "null", "none", "inf", "nan"}:
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def verl_tool_schema(name: str) -> dict[str, Any]:
    """The ``tool_schema`` entry of tool ``name`` in verl's tool config: the tool contract
    (``schemas.tools.tool_schema``), which keeps to what verl's ``OpenAIFunctionToolSchema`` holds, so the schema
    verl renders into the prompt is the one SFT rows, TRL and evaluation show."""
    from schemas.tools import tool_schema

    return tool_schema(name)


def verl_tool_config(tools: Sequence[str], opts: VerlOptions) -> dict[str, Any]:
    """verl's tool config (``tools/tool_registry.py``): one entry per tool with hopforge's tool class, its
    ``config`` (native tool; the server URL and timeout) and its schema."""
    return {"tools": [{
        "class_name": TOOL_CLASS,
        "config": {"type": "native", "server_url": opts.tool_server_url, "timeout_s": opts.tool_timeout_s},
        "tool_schema": verl_tool_schema(name),
    } for name in tools]}  # fmt: skip


def _rl_files(export: ExportView) -> tuple[Path, Path, list[str]]:
    """The rl parquet files to train and validate on; notes when validation falls back to the train split."""
    files, rows = export.data_files("rl"), export.rows("rl")
    if not files or not rows.get("train"):
        raise TrainingError(f"export {export.version} has no rl train rows: export again with the rl config "
                            f"(`hopforge export --include rl ...`) from questions with a train split")  # fmt: skip
    if rows.get("validation"):
        return files["train"], files["validation"], []
    return files["train"], files["train"], ["the export has no rl validation rows: validating on the train split"]


def _rl_tools(train_file: Path) -> list[str]:
    """The tools the rl rows offer (the keys of ``extra_info.tools_kwargs``), read from the parquet schema."""
    import pyarrow.parquet as pq

    schema = pq.read_schema(train_file)
    try:
        extra = schema.field("extra_info").type
        kwargs = extra.field(extra.get_field_index("tools_kwargs")).type
    except KeyError:
        raise TrainingError(f"{train_file} has no extra_info.tools_kwargs: it is not a hopforge rl file") from None
    return [kwargs.field(i).name for i in range(kwargs.num_fields)]


def _check_tool_token(url: str) -> None:
    """A tool server beyond loopback takes requests only with the shared token, which the clients read from
    their environment: refuse before launch when this environment has none."""
    from training.tool_auth import TOKEN_ENV, is_loopback_host, tool_token, url_host

    if not is_loopback_host(url_host(url)) and tool_token() is None:
        raise TrainingError(f"tool_server_url {url} is beyond loopback, where `hopforge serve-tools` requires its "
                            f"token: set {TOKEN_ENV} in this environment to the server's value (it is read from the "
                            "environment only and written nowhere)")  # fmt: skip


def resolve_attn_implementation(choice: str) -> tuple[str, str]:
    """The attention implementation a verl plan writes for ``choice`` (``VerlOptions.attn_implementation``) and
    why. ``auto`` asks the verl environment's python whether ``import flash_attn`` works (sdpa when it does not, or
    when the environment is not built here); an explicit ``flash_attention_2`` that cannot import there is refused
    in one line, since verl would die at model load."""
    from training.env_versions import flash_attn_status

    if choice in ("sdpa", "eager"):
        return choice, "set in the options"
    status = flash_attn_status("verl")
    if choice == "flash_attention_2":
        if status is not None and not status["importable"]:
            raise TrainingError(f"attn_implementation=flash_attention_2, but flash-attn does not import in the verl "
                                f"environment ({status['why']}): verl would stop at model load; install flash-attn "
                                "there or set attn_implementation=auto (sdpa)")  # fmt: skip
        return choice, "set in the options"
    if status is None:
        return "sdpa", "auto: no verl environment here to probe for flash-attn"
    if status["importable"]:
        return "flash_attention_2", f"auto: flash-attn {status.get('version')} imports in the verl environment"
    return "sdpa", f"auto: flash-attn does not import in the verl environment ({status['why']})"


def check_ray_address(address: str, timeout_s: float = RAY_PROBE_TIMEOUT_S) -> None:
    """``TrainingError`` in one line when the Ray head at ``address`` does not accept a connection."""
    import socket

    host, port = _address_host(address), int(address.rsplit(":", 1)[1])
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise TrainingError(f"ray_address {address} does not answer ({reason}): start the cluster there (`ray start "
                            f"--head --port {port}` on the head node) or correct the address") from None


def plan_verl(export: ExportView, run_dir: Path, opts: VerlOptions) -> TrainPlan:
    """The verl run of ``opts`` on ``export``'s rl rows (module docstring); nothing is launched or written. With
    ``ray_address`` the Ray head must answer now, and a tool server beyond loopback needs ``$HOPFORGE_TOOL_TOKEN``
    here: both refused in one line before anything starts."""
    run_dir = Path(run_dir).resolve()
    shared, model, critic = _check_verl_setup(opts)
    train_file, val_file, notes = _rl_files(export)
    _check_train_batch_size(export, opts)
    tools = _rl_tools(train_file)
    reward = opts.reward_name
    attn, attn_source = resolve_attn_implementation(opts.attn_implementation)
    # Every node's ranks write their shards of a checkpoint: on several nodes that is a directory they all see.
    checkpoints = (shared / run_dir.name if shared else run_dir) / "checkpoints"

    # Ray workers on a running cluster do not inherit this process's environment, nor see this checkout: what the
    # tool class and the reward need travels in Ray's runtime_env (settings as env_vars, hopforge's packages as
    # py_modules). The launcher itself imports hopforge from PYTHONPATH. The tool server's token is never here: the
    # launcher hands it to the workers through a Ray actor (training/launch/verl_cluster.py).
    ray_env_vars = {"HOPFORGE_REWARD": reward, "VERL_FILE_LOGGER_PATH": str(run_dir / VERL_LOG_FILE)}
    env_vars = {"PYTHONPATH": str(REPO_ROOT), **ray_env_vars}
    py_modules = [str(REPO_ROOT / name) for name in SHIPPED_PACKAGES]
    o = {
        **_verl_data_overrides(opts, train_file, val_file),
        **_verl_actor_overrides(opts, model, attn),
        **_verl_rollout_overrides(opts, run_dir / TOOL_CONFIG_FILE),
        **_verl_trainer_overrides(opts, run_dir, checkpoints),
    }
    _add_verl_optional_overrides(o, opts, critic, attn, ray_env_vars, py_modules)

    overrides = [f"{k}={_hydra_value(v)}" for k, v in o.items()]
    overrides = _apply_extra(overrides, opts.extra_overrides)
    argv = _verl_argv(opts, run_dir, shared, overrides)
    config = {
        "options": opts.model_dump(mode="json"), "reward": reward, "reward_kwargs": dict(opts.reward_kwargs),
        "model": model, "stage": opts.stage, "algorithm": opts.algorithm, "tools": tools,
        "total_training_steps": opts.total_training_steps, "overrides": overrides,
        "attn_implementation": {"value": attn, "source": attn_source},
        "train_file": str(train_file), "val_file": str(val_file), "checkpoint_dir": str(checkpoints),
        "cluster": {"ray_address": opts.ray_address, "nnodes": opts.nnodes, "n_gpus_per_node": opts.n_gpus_per_node,
                    "shared_dir": str(shared) if shared else None, "py_modules": py_modules},
        "equivalent_command": ["python", "-m", "verl.trainer.main_ppo", *overrides],
        # the verl environment's packages, vLLM (the rollouts' engine) among them: serving records its own
        "versions": env_versions("verl"),
    }  # fmt: skip
    notes = [*notes, *_verl_notes(opts, model, reward, attn, attn_source, checkpoints)]
    return TrainPlan(trainer="verl", env="verl", run_dir=run_dir,
                     files={TOOL_CONFIG_FILE: dump_yaml(verl_tool_config(tools, opts))}, argv=argv, config=config,
                     export_version=export.version, manifest_sha256=export.manifest_sha256, output_dir=checkpoints,
                     env_vars=env_vars, notes=notes)  # fmt: skip


def _check_verl_setup(opts: VerlOptions) -> tuple[Path | None, str, str]:
    """The cluster, shared directory, tool token, Ray head and models of ``opts`` checked in that order (each
    refused in one line): the shared directory, the policy model and the critic model."""
    problem = cluster_problem(opts)  # again: model_copy (the flow's tool URL) skips the validators
    if problem:
        raise TrainingError(problem)
    shared = _check_shared_dir(opts.shared_dir)
    _check_tool_token(opts.tool_server_url)
    if opts.ray_address:
        check_ray_address(opts.ray_address)
    model = _check_policy_model(opts.model, opts.stage)
    critic = check_model_dir(opts.critic_model, what="critic model") if opts.critic_model else model
    return shared, model, critic


def _check_train_batch_size(export: ExportView, opts: VerlOptions) -> None:
    """A step needs ``train_batch_size`` prompts: refused when the export has fewer rl train rows."""
    n_train = export.rows("rl")["train"]
    if opts.train_batch_size > n_train:
        raise TrainingError(f"train_batch_size {opts.train_batch_size} is larger than the export's {n_train} rl "
                            f"train rows: verl would run no step; lower train_batch_size")  # fmt: skip


def _verl_data_overrides(opts: VerlOptions, train_file: Path, val_file: Path) -> dict[str, Any]:
    """verl's ``data.*`` and ``algorithm.*`` settings."""
    return {
        "data.train_files": str(train_file),
        "data.val_files": str(val_file),
        "data.prompt_key": "prompt",
        "data.return_raw_chat": True,
        "data.max_prompt_length": opts.max_prompt_length,
        "data.max_response_length": opts.max_response_length,
        "data.train_batch_size": opts.train_batch_size,
        # verl 0.9.1's RLHFDataset stores data.truncation but never applies it, and its agent loop cuts a longer
        # prompt from the left (the system prompt and tool block first) with only a warning. So the launcher
        # measures every prompt with the model's tokenizer before training: `overlong="refuse"` stops with the
        # counts, `"filter"` has verl leave those rows out (filter_overlong_prompts, the same length rule).
        "data.truncation": "error",
        "data.filter_overlong_prompts": opts.overlong == "filter",
        "algorithm.adv_estimator": "grpo" if opts.algorithm == "grpo" else "gae",
        "algorithm.use_kl_in_reward": opts.use_kl_in_reward,
        "algorithm.kl_ctrl.kl_coef": opts.kl_coef,
    }


def _verl_actor_overrides(opts: VerlOptions, model: str, attn: str) -> dict[str, Any]:
    """verl's settings of the trained policy and its reference (``actor_rollout_ref.model``, ``.actor``, ``.ref``)."""
    return {
        "actor_rollout_ref.model.path": model,
        "actor_rollout_ref.model.enable_gradient_checkpointing": opts.gradient_checkpointing,
        "actor_rollout_ref.model.lora_rank": opts.lora_rank,
        # verl 0.9.1 (workers/config/model.py) builds the actor's and reference's config with
        # override_config.attn_implementation, default flash_attention_2: without flash-attn the load fails.
        "+actor_rollout_ref.model.override_config.attn_implementation": attn,
        "actor_rollout_ref.actor.optim.lr": opts.lr,
        "actor_rollout_ref.actor.optim.lr_warmup_steps": opts.lr_warmup_steps,
        "actor_rollout_ref.actor.ppo_mini_batch_size": opts.ppo_mini_batch_size,
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": opts.micro_batch_size_per_gpu,
        "actor_rollout_ref.actor.ppo_epochs": opts.ppo_epochs,
        "actor_rollout_ref.actor.use_kl_loss": opts.use_kl_loss,
        "actor_rollout_ref.actor.kl_loss_coef": opts.kl_loss_coef,
        "actor_rollout_ref.actor.kl_loss_type": opts.kl_loss_type,
        "actor_rollout_ref.actor.entropy_coeff": opts.entropy_coeff,
        "actor_rollout_ref.actor.fsdp_config.param_offload": opts.param_offload,
        "actor_rollout_ref.actor.fsdp_config.optimizer_offload": opts.optimizer_offload,
        # hf_model: each checkpoint also holds full Hugging Face weights, so `vllm serve` and evaluation can take
        # it without verl's model merger.
        "actor_rollout_ref.actor.checkpoint.save_contents": ["model", "optimizer", "extra", "hf_model"],
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": opts.micro_batch_size_per_gpu,
    }


def _verl_rollout_overrides(opts: VerlOptions, tool_config: Path) -> dict[str, Any]:
    """verl's rollout settings: vLLM, sampling and the multi-turn tool loop (``actor_rollout_ref.rollout``)."""
    return {
        "actor_rollout_ref.rollout.name": "vllm",
        "actor_rollout_ref.rollout.mode": "async",
        "actor_rollout_ref.rollout.n": opts.rollout_n,
        "actor_rollout_ref.rollout.temperature": opts.temperature,
        "actor_rollout_ref.rollout.top_p": opts.top_p,
        "actor_rollout_ref.rollout.tensor_model_parallel_size": opts.tensor_parallel_size,
        "actor_rollout_ref.rollout.gpu_memory_utilization": opts.gpu_memory_utilization,
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": opts.micro_batch_size_per_gpu,
        "actor_rollout_ref.rollout.multi_turn.enable": True,
        "actor_rollout_ref.rollout.multi_turn.tool_config_path": str(tool_config),
        "actor_rollout_ref.rollout.multi_turn.format": "hermes",
        # A tool round is one assistant turn with a call and one tool reply: max_tool_rounds replies, and one
        # more assistant turn for the answer.
        "actor_rollout_ref.rollout.multi_turn.max_user_turns": opts.max_tool_rounds,
        "actor_rollout_ref.rollout.multi_turn.max_assistant_turns": opts.max_tool_rounds + 1,
        "actor_rollout_ref.rollout.multi_turn.max_parallel_calls": 1,
        "actor_rollout_ref.rollout.multi_turn.max_tool_response_length": opts.max_tool_response_chars,
        "actor_rollout_ref.rollout.agent.default_agent_loop": "tool_agent",
    }


def _verl_trainer_overrides(opts: VerlOptions, run_dir: Path, checkpoints: Path) -> dict[str, Any]:
    """verl's reward function, ``trainer.*`` and Hydra settings."""
    return {
        # imported as a module (verl's `pkg://` form) from the py_modules copy on each node, not read from this path
        "reward.custom_reward_function.path": REWARD_MODULE,
        "reward.custom_reward_function.name": "compute_score",
        "trainer.project_name": opts.project_name,
        "trainer.experiment_name": opts.experiment_name or run_dir.name,
        "trainer.logger": [*dict.fromkeys([*opts.logger, "file"])],
        "trainer.n_gpus_per_node": opts.n_gpus_per_node,
        "trainer.nnodes": opts.nnodes,
        "trainer.total_epochs": opts.total_epochs,
        "trainer.save_freq": opts.save_freq,
        "trainer.test_freq": opts.test_freq,
        "trainer.val_before_train": opts.val_before_train,
        "trainer.default_local_dir": str(checkpoints),
        "trainer.resume_mode": "disable",
        "hydra.run.dir": str(run_dir / "hydra"),
    }


def _add_verl_optional_overrides(o: dict[str, Any], opts: VerlOptions, critic: str, attn: str,
                                 ray_env_vars: dict[str, str], py_modules: list[str]) -> None:
    """Adds to ``o`` what depends on the options: the step count, PPO's critic, the reward's keyword arguments
    and Ray's runtime environment and address."""
    if opts.total_training_steps is not None:
        o["trainer.total_training_steps"] = opts.total_training_steps
    if opts.algorithm == "ppo":
        o.update({
            "critic.enable": True,
            "critic.model.path": critic,
            "critic.optim.lr": opts.critic_lr,
            "critic.ppo_micro_batch_size_per_gpu": opts.micro_batch_size_per_gpu,
            "critic.model.enable_gradient_checkpointing": opts.gradient_checkpointing,
            "+critic.model.override_config.attn_implementation": attn,
        })  # fmt: skip
    # Keys absent from verl's schema are added with Hydra's `+`.
    for key, value in sorted(opts.reward_kwargs.items()):
        o[f"+reward.custom_reward_function.reward_kwargs.{key}"] = value
    for key, value in sorted(ray_env_vars.items()):
        o[f"+ray_kwargs.ray_init.runtime_env.env_vars.{key}"] = value
    o["+ray_kwargs.ray_init.runtime_env.py_modules"] = py_modules
    o["+ray_kwargs.ray_init.runtime_env.excludes"] = ["__pycache__", "*.pyc"]
    if opts.ray_address:
        o["+ray_kwargs.ray_init.address"] = opts.ray_address


def _verl_argv(opts: VerlOptions, run_dir: Path, shared: Path | None, overrides: list[str]) -> list[str]:
    """The launcher's command: hopforge's own settings come before --run-dir; everything after it is verl's."""
    flags = ["--overlong", opts.overlong, "--max-tool-failure-rate", repr(opts.max_tool_failure_rate),
             "--tool-failure-window", str(opts.tool_failure_window)]  # fmt: skip
    if shared:
        flags += ["--shared-dir", str(shared)]
    return ["python", launcher("verl_ppo.py"), *flags, "--run-dir", str(run_dir), *overrides]


def _verl_notes(opts: VerlOptions, model: str, reward: str, attn: str, attn_source: str,
                checkpoints: Path) -> list[str]:
    """The plan's notes on the stage, long prompts, attention and the Ray cluster."""
    notes = [f"stage {opts.stage}: {opts.algorithm} from {model}, reward {reward}",
             f"prompts longer than {opts.max_prompt_length} tokens: {opts.overlong} (measured by the launcher with "
             "the model's tokenizer before Ray starts)",
             f"attention {attn} for the trained models ({attn_source})"]  # fmt: skip
    if opts.ray_address:
        notes.append(f"joins the Ray cluster at {opts.ray_address} ({opts.nnodes} x {opts.n_gpus_per_node} GPUs): "
                     f"hopforge's code reaches the workers as runtime_env py_modules; checkpoints go to {checkpoints} "
                     "(shared_dir, checked from every node before training); the tool config travels with the job "
                     "(runtime_env working_dir); the export and the metrics log stay on the launching node, where "
                     f"verl's driver task is pinned; the model path {model} must exist on every node (or be a hub "
                     "id)")  # fmt: skip
    return notes


def _override_key(item: str) -> str:
    return item.split("=", 1)[0].lstrip("+~")


def _apply_extra(overrides: list[str], extra: Sequence[str]) -> list[str]:
    """``extra`` replaces a generated override of the same key (Hydra refuses a key given twice), else is added."""
    replaced = {_override_key(e) for e in extra}
    return [o for o in overrides if _override_key(o) not in replaced] + list(extra)


__all__ = [
    "VerlOptions",
    "check_ray_address",
    "cluster_problem",
    "plan_verl",
    "resolve_attn_implementation",
    "verl_tool_config",
    "verl_tool_schema",
]
