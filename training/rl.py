"""RL hand-off: verl GRPO/PPO (vLLM rollouts, the KG tool agent loop) and TRL GRPO (the light path).

``plan_verl(export, run_dir, VerlOptions(...))`` writes verl's tool config (``tool_config.yaml``) into the run
directory and returns the command ``python training/launch/verl_ppo.py --run-dir <run_dir> <hydra overrides>``.
That launcher runs ``verl.trainer.main_ppo`` in-process with those overrides and adds what verl lacks for the
launcher contract (``training.plan``): verl's ``file`` logger writes ``{"step", "data": {...}}`` lines, so the
launcher turns them into flat ``metrics.jsonl`` rows while training runs, and writes ``result.json`` with the last
checkpoint (the actor's Hugging Face weights, ready for ``vllm serve``). Both Omne-R1 schedules are options:
stage 1 is ``stage="base"`` (RL from the base model on the QA prompts, reward ``omne_stage1``), stage 3 is
``stage="sft"`` (RL from the SFT checkpoint, reward ``omne_post_sft``); the paper trains both with PPO
(``algorithm="ppo"``), Explore-on-Graph with GRPO (the default).

``plan_trl(export, run_dir, TRLOptions(...))`` writes ``trl_grpo.yaml`` (``GRPOConfig`` arguments plus hopforge's
data, reward and tool settings) for ``training/launch/trl_grpo.py``.

``check_plan(plan)`` asks the trainer itself whether it accepts what was written: verl composes its Hydra config
with the overrides and runs its own ``validate_config``, loads the tool config with its tool registry and the
reward function with its loader; TRL builds its ``GRPOConfig``. It runs in the trainer's environment.

This module is core: it imports neither torch nor any trainer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from training.plan import (
    REPO_ROOT,
    ExportView,
    TrainingError,
    TrainPlan,
    check_model_dir,
    dump_yaml,
    launcher,
    run_trainer_check,
)

TOOL_CONFIG_FILE = "tool_config.yaml"
TRL_CONFIG_FILE = "trl_grpo.yaml"
VERL_LOG_FILE = "verl_metrics.jsonl"
REWARD_FILE = REPO_ROOT / "training" / "verl_reward.py"
TOOL_CLASS = "training.launch.verl_tools.HopforgeKGTool"

#: The reward each Omne-R1 stage trains with when none is named: stage 1 rewards format and a correct answer
#: from the base model, stage 3 (after SFT) answer and format with a penalty for repeated tool calls.
STAGE_REWARD = {"base": "omne_stage1", "sft": "omne_post_sft"}

ScalarKwarg = bool | int | float | str


def _reward_names() -> list[str]:
    from training.rewards import REWARDS  # light: pydantic and hopforge's parsers only

    return sorted(REWARDS)


def _check_reward(name: str | None) -> str | None:
    if name is not None and name not in _reward_names():
        raise ValueError(f"unknown reward {name!r}; choose one of {_reward_names()}")
    return name


def _check_reward_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    for key in kwargs:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise ValueError(f"reward_kwargs key {key!r} is not a Python keyword argument name")
    return dict(kwargs)


class _Options(BaseModel):
    # extra="forbid": a misspelt option (`rollout_N`) is an error, not a silently ignored setting.
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1, description="Base model (stage 1) or the SFT checkpoint / merged model (stage 3).")
    stage: Literal["base", "sft"] = "base"
    reward: str | None = Field(default=None, description="A name in training.rewards.REWARDS; default by stage.")
    reward_kwargs: dict[str, ScalarKwarg] = Field(default_factory=dict)
    max_tool_rounds: int = Field(default=7, ge=0, le=64, description="Tool calls per rollout (Omne-R1: 7).")

    @field_validator("reward")
    @classmethod
    def _reward(cls, v: str | None) -> str | None:
        return _check_reward(v)

    @field_validator("reward_kwargs")
    @classmethod
    def _reward_kwargs(cls, v: dict[str, Any]) -> dict[str, Any]:
        return _check_reward_kwargs(v)

    @property
    def reward_name(self) -> str:
        return self.reward or STAGE_REWARD[self.stage]


# -- verl ------------------------------------------------------------------------------------------------------------


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
    max_prompt_length: int = Field(default=2048, ge=16)
    max_response_length: int = Field(default=8192, ge=16, description="All assistant turns and tool replies of one rollout.")
    max_tool_response_chars: int = Field(default=4096, ge=64, description="Longer tool replies are cut (middle).")
    tool_server_url: str = Field(default="http://127.0.0.1:8765", description="A running `hopforge serve-tools`.")
    tool_timeout_s: float = Field(default=30.0, gt=0)
    n_gpus_per_node: int = Field(default=8, ge=1)
    nnodes: int = Field(default=1, ge=1)
    tensor_parallel_size: int = Field(default=1, ge=1)
    gpu_memory_utilization: float = Field(default=0.6, gt=0, le=1)
    lora_rank: int = Field(default=0, ge=0)
    gradient_checkpointing: bool = True
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
        return self

    @classmethod
    def omne_r1(cls, stage: Literal["base", "sft"], model: str, **overrides: Any) -> VerlOptions:
        """Omne-R1's schedule for ``stage``: PPO with a critic (GAE), its stage reward, 7 tool rounds."""
        return cls(model=model, stage=stage, algorithm="ppo", **overrides)


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
    """hopforge's OpenAI schema of tool ``name`` in the subset verl keeps (``tools/schemas.py``): a property has
    ``type``, ``description`` and ``enum`` only, parameters ``type``/``properties``/``required``. Writing just that
    subset makes the schema verl renders into the prompt the one written here (it would silently drop
    ``minLength`` and ``additionalProperties``)."""
    from schemas.tools import tool_schema

    fn = tool_schema(name)["function"]
    params = fn["parameters"]
    props = {}
    for key, prop in params.get("properties", {}).items():
        kept = {k: prop[k] for k in ("type", "description", "enum") if k in prop}
        if "type" not in kept:
            raise TrainingError(f"tool {name!r} argument {key!r} has no plain JSON type; verl cannot describe it")
        props[key] = kept
    return {"type": "function", "function": {"name": fn["name"], "description": fn["description"], "parameters": {
        "type": "object", "properties": props, "required": list(params.get("required", []))}}}  # fmt: skip


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


def _check_policy_model(model: str, stage: str) -> str:
    path = Path(model).expanduser()
    if path.is_dir() and (path / "adapter_config.json").is_file() and not (path / "config.json").is_file():
        raise TrainingError(f"model {model} is a LoRA adapter; RL needs full weights (vLLM rollouts): merge it into "
                            f"its base model first (LLaMA-Factory `llamafactory-cli export`)")  # fmt: skip
    return check_model_dir(model, what="SFT checkpoint" if stage == "sft" else "model")


def plan_verl(export: ExportView, run_dir: Path, opts: VerlOptions) -> TrainPlan:
    """The verl run of ``opts`` on ``export``'s rl rows (module docstring); nothing is launched or written."""
    run_dir = Path(run_dir).resolve()
    model = _check_policy_model(opts.model, opts.stage)
    critic = check_model_dir(opts.critic_model, what="critic model") if opts.critic_model else model
    train_file, val_file, notes = _rl_files(export)
    n_train = export.rows("rl")["train"]
    if opts.train_batch_size > n_train:
        raise TrainingError(f"train_batch_size {opts.train_batch_size} is larger than the export's {n_train} rl "
                            f"train rows: verl would run no step; lower train_batch_size")  # fmt: skip
    tools = _rl_tools(train_file)
    reward = opts.reward_name
    checkpoints = run_dir / "checkpoints"
    tool_config = run_dir / TOOL_CONFIG_FILE
    experiment = opts.experiment_name or run_dir.name

    # Ray workers on a running cluster do not inherit this process's environment: what the tool class and the
    # reward need travels in Ray's runtime_env as well as in the launcher's own environment.
    env_vars = {"PYTHONPATH": str(REPO_ROOT), "HOPFORGE_REWARD": reward,
                "VERL_FILE_LOGGER_PATH": str(run_dir / VERL_LOG_FILE)}  # fmt: skip
    o: dict[str, Any] = {
        "data.train_files": str(train_file),
        "data.val_files": str(val_file),
        "data.prompt_key": "prompt",
        "data.return_raw_chat": True,
        "data.max_prompt_length": opts.max_prompt_length,
        "data.max_response_length": opts.max_response_length,
        "data.train_batch_size": opts.train_batch_size,
        "data.truncation": "error",  # a prompt longer than max_prompt_length stops the run instead of being cut
        "data.filter_overlong_prompts": False,
        "algorithm.adv_estimator": "grpo" if opts.algorithm == "grpo" else "gae",
        "algorithm.use_kl_in_reward": opts.use_kl_in_reward,
        "algorithm.kl_ctrl.kl_coef": opts.kl_coef,
        "actor_rollout_ref.model.path": model,
        "actor_rollout_ref.model.enable_gradient_checkpointing": opts.gradient_checkpointing,
        "actor_rollout_ref.model.lora_rank": opts.lora_rank,
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
        "reward.custom_reward_function.path": str(REWARD_FILE),
        "reward.custom_reward_function.name": "compute_score",
        "trainer.project_name": opts.project_name,
        "trainer.experiment_name": experiment,
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
    if opts.total_training_steps is not None:
        o["trainer.total_training_steps"] = opts.total_training_steps
    if opts.algorithm == "ppo":
        o.update({
            "critic.enable": True,
            "critic.model.path": critic,
            "critic.optim.lr": opts.critic_lr,
            "critic.ppo_micro_batch_size_per_gpu": opts.micro_batch_size_per_gpu,
            "critic.model.enable_gradient_checkpointing": opts.gradient_checkpointing,
        })  # fmt: skip
    # Keys absent from verl's schema are added with Hydra's `+`.
    for key, value in sorted(opts.reward_kwargs.items()):
        o[f"+reward.custom_reward_function.reward_kwargs.{key}"] = value
    for key, value in sorted(env_vars.items()):
        o[f"+ray_kwargs.ray_init.runtime_env.env_vars.{key}"] = value

    overrides = [f"{k}={_hydra_value(v)}" for k, v in o.items()]
    overrides = _apply_extra(overrides, opts.extra_overrides)
    argv = ["python", launcher("verl_ppo.py"), "--run-dir", str(run_dir), *overrides]
    config = {
        "options": opts.model_dump(mode="json"), "reward": reward, "reward_kwargs": dict(opts.reward_kwargs),
        "model": model, "stage": opts.stage, "algorithm": opts.algorithm, "tools": tools,
        "total_training_steps": opts.total_training_steps, "overrides": overrides,
        "train_file": str(train_file), "val_file": str(val_file), "checkpoint_dir": str(checkpoints),
        "equivalent_command": ["python", "-m", "verl.trainer.main_ppo", *overrides],
    }  # fmt: skip
    notes = [*notes, f"stage {opts.stage}: {opts.algorithm} from {model}, reward {reward}"]
    return TrainPlan(trainer="verl", env="verl", run_dir=run_dir,
                     files={TOOL_CONFIG_FILE: dump_yaml(verl_tool_config(tools, opts))}, argv=argv, config=config,
                     export_version=export.version, manifest_sha256=export.manifest_sha256, output_dir=checkpoints,
                     env_vars=env_vars, notes=notes)  # fmt: skip


def _override_key(item: str) -> str:
    return item.split("=", 1)[0].lstrip("+~")


def _apply_extra(overrides: list[str], extra: Sequence[str]) -> list[str]:
    """``extra`` replaces a generated override of the same key (Hydra refuses a key given twice), else is added."""
    replaced = {_override_key(e) for e in extra}
    return [o for o in overrides if _override_key(o) not in replaced] + list(extra)


# -- TRL -------------------------------------------------------------------------------------------------------------


class TRLOptions(_Options):
    """A TRL GRPO run. ``dataset="rl"`` trains on the rl rows' prompts (system + question) with their ground
    truth; ``"messages"`` on the first system/user turns of the messages rows (answers only: no gold paths).
    With ``tool_server_url`` the KG tools are offered for multi-turn rollouts (TRL's tool loop, up to
    ``max_tool_rounds`` calls); without it the model answers in one turn."""

    dataset: Literal["rl", "messages"] = "rl"
    tool_server_url: str | None = None
    tool_timeout_s: float = Field(default=30.0, gt=0)
    num_generations: int = Field(default=4, ge=2, description="Completions per prompt (the GRPO group).")
    per_device_train_batch_size: int = Field(default=4, ge=1)
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    learning_rate: float = Field(default=1e-6, gt=0, lt=1)
    beta: float = Field(default=0.0, ge=0, description="KL coefficient (0: no reference model).")
    epsilon: float = Field(default=0.2, gt=0, lt=1)
    loss_type: Literal["grpo", "dapo", "dr_grpo", "bnpo"] = "dapo"
    max_completion_length: int = Field(default=1024, ge=8)
    temperature: float = Field(default=1.0, gt=0)
    num_train_epochs: float = Field(default=1.0, gt=0)
    max_steps: int = Field(default=-1, ge=-1)
    logging_steps: int = Field(default=1, ge=1)
    save_steps: int = Field(default=500, ge=1)
    use_vllm: Literal["off", "colocate", "server"] = "off"
    vllm_server_base_url: str | None = None
    vllm_gpu_memory_utilization: float = Field(default=0.3, gt=0, le=1)
    bf16: bool = False
    lora_rank: int = Field(default=0, ge=0)
    seed: int = 0
    report_to: list[str] = Field(default_factory=list)
    extra_args: dict[str, Any] = Field(default_factory=dict, description="More GRPOConfig arguments, applied last.")

    @field_validator("tool_server_url", "vllm_server_base_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"https?://[^\s/]+(/[^\s]*)?", v):
            raise ValueError(f"must be an http(s) URL like http://127.0.0.1:8765, got {v!r}")
        return v.rstrip("/") if v else v

    @model_validator(mode="after")
    def _consistent(self) -> TRLOptions:
        if (self.per_device_train_batch_size * self.gradient_accumulation_steps) % self.num_generations:
            raise ValueError(f"per_device_train_batch_size x gradient_accumulation_steps "
                             f"({self.per_device_train_batch_size * self.gradient_accumulation_steps}) must be a "
                             f"multiple of num_generations ({self.num_generations})")  # fmt: skip
        if self.use_vllm == "server" and not self.vllm_server_base_url:
            raise ValueError("use_vllm='server' needs vllm_server_base_url (a running `trl vllm-serve`)")
        owned = {"output_dir", "use_vllm", "vllm_mode", "max_tool_calling_iterations"}
        if owned & set(self.extra_args):
            raise ValueError(f"extra_args may not set {sorted(owned & set(self.extra_args))}: use the options")
        return self


def trl_config(export: ExportView, run_dir: Path, opts: TRLOptions, model: str) -> dict[str, Any]:
    """The launcher's YAML: ``grpo`` holds ``GRPOConfig`` keyword arguments, ``hopforge`` the rest."""
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
        "bf16": opts.bf16,
        "seed": opts.seed,
        "report_to": list(opts.report_to) or "none",
        "use_vllm": opts.use_vllm != "off",
        "remove_unused_columns": False,  # the reward needs the ground-truth columns
    }
    if opts.use_vllm != "off":
        grpo["vllm_mode"] = opts.use_vllm
        grpo["vllm_gpu_memory_utilization"] = opts.vllm_gpu_memory_utilization
        if opts.vllm_server_base_url:
            grpo["vllm_server_base_url"] = opts.vllm_server_base_url
    if opts.tool_server_url:
        grpo["max_tool_calling_iterations"] = opts.max_tool_rounds
    grpo.update(opts.extra_args)
    return {
        "grpo": grpo,
        "hopforge": {
            "model": model, "stage": opts.stage, "dataset": opts.dataset,
            "train_file": str(files["train"]),
            "eval_file": str(files["validation"]) if rows.get("validation") else None,
            "reward": opts.reward_name, "reward_kwargs": dict(opts.reward_kwargs),
            "tool_server_url": opts.tool_server_url, "tool_timeout_s": opts.tool_timeout_s,
            "lora_rank": opts.lora_rank,
        },
    }  # fmt: skip


def plan_trl(export: ExportView, run_dir: Path, opts: TRLOptions) -> TrainPlan:
    """The TRL GRPO run of ``opts`` on ``export`` (module docstring); nothing is launched or written."""
    run_dir = Path(run_dir).resolve()
    model = _check_policy_model(opts.model, opts.stage)
    config = trl_config(export, run_dir, opts, model)
    notes = [f"stage {opts.stage}: GRPO from {model}, reward {opts.reward_name}",
             "multi-turn with the KG tools" if opts.tool_server_url else "single-turn (no tool_server_url)"]  # fmt: skip
    return TrainPlan(trainer="trl", env="trl", run_dir=run_dir, files={TRL_CONFIG_FILE: dump_yaml(config)},
                     argv=["python", launcher("trl_grpo.py"), "--config", str(run_dir / TRL_CONFIG_FILE)],
                     config={**config, "options": opts.model_dump(mode="json"), "max_steps": opts.max_steps},
                     export_version=export.version, manifest_sha256=export.manifest_sha256,
                     output_dir=run_dir / "checkpoints", env_vars={"PYTHONPATH": str(REPO_ROOT)}, notes=notes)  # fmt: skip


# -- asking the trainer ----------------------------------------------------------------------------------------------


def options_from(cls: type[_Options], values: Mapping[str, Any]) -> _Options:
    """``cls(**values)`` with pydantic's errors turned into one ``TrainingError`` naming each bad option."""
    try:
        return cls(**values)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'options'}: {e['msg']}" for e in exc.errors())
        raise TrainingError(f"bad {cls.__name__}: {problems}") from None


def check_plan(plan: TrainPlan, *, timeout_s: float = 600) -> dict[str, Any]:
    """Ask the trainer, in its own environment, whether it accepts ``plan`` (module docstring). Writes the plan's
    files first (the checks read them). Returns the launcher's JSON report; ``TrainingError`` with the trainer's
    own message when it refuses."""
    from training.envs import require_env

    if plan.trainer not in ("verl", "trl"):
        raise TrainingError(f"check_plan handles verl and trl plans, not {plan.trainer}")
    python = require_env(plan.env)
    plan.write()
    argv = [str(python), plan.argv[1], "--check", *plan.argv[2:]]
    return run_trainer_check(plan, argv, timeout_s=timeout_s, what=plan.trainer, noun="plan")


__all__ = [
    "STAGE_REWARD",
    "TRLOptions",
    "VerlOptions",
    "check_plan",
    "options_from",
    "plan_trl",
    "plan_verl",
    "trl_config",
    "verl_tool_config",
    "verl_tool_schema",
]
