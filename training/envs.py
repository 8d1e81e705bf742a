"""The trainers' own virtual environments.

LLaMA-Factory, TRL, verl and vLLM pin versions of torch, transformers, datasets and fastapi that conflict with each
other and with hopforge's core, so each lives in its own virtual environment under ``.venvs/<name>`` (or
``$HOPFORGE_TRAINER_ENVS/<name>``). The core writes files they read and launches their python; it never imports
them. ``make trainer-env T=<name>`` (``python -m training.envs create <name>``) builds one from the specs below.

Two flavours: ``cpu`` (the default; what the CPU smoke tests run, with the CPU torch wheel) and ``gpu`` (a CUDA
machine: torch as the trainer's own pins ask, vLLM for rollouts and serving: one version, ``VLLM_VERSION``, the one
verl pins, in all three). Only the CPU flavour removes
torchvision/torchaudio (PyPI's builds do not match the CPU torch wheel); the GPU flavour keeps everything the
trainers pin (``verl[vllm]`` pins both). DeepSpeed is in both flavours of the llamafactory and trl environments, so
a ZeRO plan's ``--check`` builds its DeepSpeed config with transformers' own code on a CPU too.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from schemas.errors import TrainingError

#: The repository's root: the trainer environments live under it (``.venvs/<name>``).
REPO_ROOT = Path(__file__).resolve().parents[1]

ENVS_VAR = "HOPFORGE_TRAINER_ENVS"

#: One vLLM for verl's rollouts, TRL's rollouts and serving: the one ``verl[vllm]==0.9.1`` pins (its metadata says
#: ``vllm==0.24.0``), inside TRL 1.16's range (0.22 to 0.31). A model is then trained and evaluated under the same
#: engine and chat-template handling. What serving relies on was read in vLLM 0.24.0's own code: the ``qwen3``
#: reasoning parser starts in reasoning mode unless ``enable_thinking`` is false (``vllm/parser/qwen3.py``), replies
#: carry ``message.reasoning``, ``--max-lora-rank`` takes 1, 8, 16, 32, 64, 128, 256, 320, 512
#: (``vllm/config/lora.py``), and every ``vllm serve`` flag ``training.serve`` writes exists.
VLLM_VERSION = "0.24.0"


@dataclass(frozen=True)
class TrainerEnv:
    name: str
    probe: str  # a module whose import proves the environment works
    cpu: tuple[str, ...]
    gpu: tuple[str, ...]
    # PyPI's torchvision/torchaudio builds break `transformers` imports beside the CPU torch wheel (CPU flavour only).
    remove: tuple[str, ...] = ()
    purpose: str = ""
    extra_env: dict[str, str] = field(default_factory=dict)


TRAINER_ENVS: dict[str, TrainerEnv] = {
    "llamafactory": TrainerEnv(
        name="llamafactory", probe="llamafactory.train.tuner",
        cpu=("llamafactory==0.9.5", "torch==2.13.0", "deepspeed==0.19.8"),
        gpu=("llamafactory==0.9.5", "torch", "deepspeed==0.19.8"),
        remove=("torchvision", "torchaudio"),
        purpose="LLaMA-Factory SFT with hopforge's weighted think-token loss",
    ),
    "trl": TrainerEnv(
        name="trl", probe="trl",
        cpu=("trl==1.16.0", "torch==2.13.0", "peft", "deepspeed==0.19.8"),
        # gguf: `make gpu-smoke` reads the embedded default's GGUF weights into transformers here
        gpu=("trl[vllm]==1.16.0", f"vllm=={VLLM_VERSION}", "peft", "deepspeed==0.19.8", "gguf==0.19.0"),
        remove=("torchvision", "torchaudio"),
        purpose="TRL GRPO, the light RL path",
    ),
    "verl": TrainerEnv(
        name="verl", probe="verl",
        cpu=("verl==0.9.1", "torch==2.13.0", "cachetools", "uvicorn", "fastapi", "httpx"),
        gpu=("verl[vllm]==0.9.1", f"vllm=={VLLM_VERSION}", "cachetools", "uvicorn", "fastapi", "httpx"),
        remove=("torchvision", "torchaudio"),
        purpose="verl GRPO / PPO with vLLM rollouts and the KG tool agent loop",
    ),
    "vllm": TrainerEnv(
        name="vllm", probe="vllm", cpu=(), gpu=(f"vllm=={VLLM_VERSION}",),
        purpose="vllm serve for evaluating checkpoints (GPU only), the vLLM verl's rollouts run on",
    ),
}  # fmt: skip


def envs_root() -> Path:
    return Path(os.environ.get(ENVS_VAR) or REPO_ROOT / ".venvs")


def env_dir(name: str) -> Path:
    spec(name)
    return envs_root() / name


def env_python(name: str) -> Path:
    return env_dir(name) / "bin" / "python"


def spec(name: str) -> TrainerEnv:
    try:
        return TRAINER_ENVS[name]
    except KeyError:
        raise TrainingError(f"unknown trainer environment {name!r}; known: {', '.join(TRAINER_ENVS)}") from None


def require_env(name: str) -> Path:
    """The python of trainer environment ``name``; ``TrainingError`` naming the make target when it is missing."""
    python = env_python(name)
    if not python.exists():
        raise TrainingError(
            f"trainer environment {name!r} is missing ({env_dir(name)}): create it with "
            f"`make trainer-env T={name}` (or point {ENVS_VAR} at a directory holding it)"
        )
    return python


def install_commands(name: str, flavour: str = "cpu") -> list[list[str]]:
    """The commands that build environment ``name`` (run in order by ``create``)."""
    env = spec(name)
    specs = env.cpu if flavour == "cpu" else env.gpu
    if not specs:
        raise TrainingError(f"trainer environment {name!r} has no {flavour} flavour ({env.purpose})")
    python = str(env_python(name))
    cmds = [
        [sys.executable, "-m", "venv", str(env_dir(name))],
        [python, "-m", "pip", "install", "-q", "-U", "pip"],
        [python, "-m", "pip", "install", *specs],
    ]
    if env.remove and flavour == "cpu":
        cmds.append([python, "-m", "pip", "uninstall", "-y", "-q", *env.remove])
    return cmds


def create(name: str, flavour: str = "cpu") -> Path:
    """Build (or complete) environment ``name`` and check that its trainer imports."""
    for cmd in install_commands(name, flavour):
        if cmd[1:3] == ["-m", "venv"] and env_python(name).exists():
            continue
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    check(name)
    return env_python(name)


def check(name: str) -> None:
    python = require_env(name)
    probe = spec(name).probe
    code = f"import sys; sys.path.insert(0, {str(REPO_ROOT / 'training' / 'launch')!r}); import _stubs; import {probe}"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise TrainingError(f"trainer environment {name!r} is broken: importing {probe} failed: {tail[0]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.envs", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["create", "check", "path", "commands"])
    parser.add_argument("name", choices=sorted(TRAINER_ENVS))
    parser.add_argument("--flavour", choices=["cpu", "gpu"], default="cpu")
    args = parser.parse_args(argv)
    try:
        if args.action == "create":
            print(create(args.name, args.flavour))
        elif args.action == "check":
            check(args.name)
            print(f"{args.name}: ok ({env_python(args.name)})")
        elif args.action == "path":
            print(env_python(args.name))
        else:
            for cmd in install_commands(args.name, args.flavour):
                print(" ".join(cmd))
    except TrainingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as exc:
        print(f"error: {' '.join(map(str, exc.cmd))} failed with status {exc.returncode}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
