"""What verl's and TRL's RL plans share: the options both extend (``_Options``: model, stage, reward and its
keyword arguments, tool rounds) with their reward checks, the policy-model check, the refusal of a loopback tool
server for rollouts on other machines, the shared directory check, ``options_from`` and ``check_plan``. The
planners are ``training.rl_verl`` (verl GRPO/PPO) and ``training.rl_trl`` (TRL GRPO).

``check_plan(plan)`` asks the trainer itself whether it accepts what was written: verl composes its Hydra config
with the overrides and runs its own ``validate_config``, loads the tool config with its tool registry and the
reward function with its loader; TRL builds its ``GRPOConfig`` (as the main process of its ``accelerate launch``
would) and measures the prompts. It runs in the trainer's environment.

This module is core: it imports neither torch nor any trainer.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from training.plan import TrainingError, TrainPlan, check_model_dir, launcher, run_trainer_check

TRL_CONFIG_FILE = "trl_grpo.yaml"

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
    tool_timeout_s: float = Field(default=30.0, gt=0)
    max_tool_failure_rate: float = Field(default=0.05, gt=0, le=1, description="The run stops when more than this "
                                         "share of the last tool_failure_window tool calls failed (server down, "
                                         "timing out, 5xx, token refused); TRL counts each process's own "
                                         "calls.")  # fmt: skip
    tool_failure_window: int = Field(default=200, ge=10, le=100_000, description="Tool calls the failure rate is "
                                                                                "taken over.")  # fmt: skip

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


def loopback_tool_url_problem(url: str | None) -> str | None:
    """The one line refusing a loopback ``tool_server_url`` for a run whose rollouts may call it from other
    machines (verl's workers, TRL's ranks on several nodes), or ``None`` when ``url`` is not loopback."""
    from training.tool_auth import is_loopback_host, url_host

    if url is None or not is_loopback_host(url_host(url)):
        return None
    return (f"tool_server_url {url} is a loopback address, which rollout workers on other nodes cannot reach: "
            "serve the tools on an address every node reaches (`HOPFORGE_TOOL_TOKEN=... hopforge serve-tools --host "
            "0.0.0.0`) and set tool_server_url to http://<that host>:<port>")  # fmt: skip


def _check_policy_model(model: str, stage: str) -> str:
    path = Path(model).expanduser()
    if path.is_dir() and (path / "adapter_config.json").is_file() and not (path / "config.json").is_file():
        raise TrainingError(f"model {model} is a LoRA adapter; RL needs full weights (vLLM rollouts): merge it into "
                            f"its base model first (LLaMA-Factory `llamafactory-cli export`)")  # fmt: skip
    return check_model_dir(model, what="SFT checkpoint" if stage == "sft" else "model")


def _check_shared_dir(shared_dir: str | None) -> Path | None:
    """``shared_dir`` as an absolute path that exists here and can be written; whether every node sees the same
    directory is checked by the launcher, from each node, before training."""
    if shared_dir is None:
        return None
    path = Path(shared_dir).expanduser()
    if not path.is_absolute():
        raise TrainingError(f"shared_dir {shared_dir} must be an absolute path: every node resolves it on its own")
    if not path.is_dir():
        raise TrainingError(f"shared_dir {shared_dir} does not exist here: mount the shared file system at that path "
                            "on every node (checkpoints are written there)")  # fmt: skip
    if not os.access(path, os.W_OK | os.X_OK):
        raise TrainingError(f"shared_dir {shared_dir} is not writable by this user")
    return Path(os.path.normpath(path))


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
    if plan.trainer == "trl":  # one process, whatever the launch: the check stands in for the main process
        # the node's own copy of the config (``TrainPlan.node_dir``: the run dir on node 0)
        argv = [str(python), launcher("trl_grpo.py"), "--check", "--config", str(plan.node_dir / TRL_CONFIG_FILE)]
    else:
        argv = [str(python), plan.argv[1], "--check", *plan.argv[2:]]
    return run_trainer_check(plan, argv, timeout_s=timeout_s, what=plan.trainer, noun="plan")


__all__ = [
    "STAGE_REWARD",
    "TRL_CONFIG_FILE",
    "check_plan",
    "loopback_tool_url_problem",
    "options_from",
]
