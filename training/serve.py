"""Serving a checkpoint with vLLM's OpenAI-compatible server, and pointing the ``policy`` role at it.

A checkpoint is either a full model directory (``config.json`` + weights) or a LoRA adapter (``adapter_config.json``);
an adapter is served on top of its base model with ``--enable-lora --lora-modules NAME=DIR``, and the policy then
asks for ``NAME``. Qwen3's reasoning goes to ``message.reasoning`` (``--reasoning-parser qwen3``) and tool calls
are parsed as hermes JSON, as the gateway and the evaluator expect.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

from training.envs import env_dir, require_env
from training.plan import TrainingError


class ServeOptions(BaseModel):
    """How to serve a checkpoint for evaluation."""

    model_config = ConfigDict(extra="forbid")

    served_name: str = Field("hopforge-policy", pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
                             description="The model name the policy role asks for.")  # fmt: skip
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    base_model: str | None = Field(None, description="Base model of a LoRA adapter; default: the adapter's own record.")
    tensor_parallel_size: int = Field(1, ge=1)
    max_model_len: int | None = Field(None, ge=256)
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    max_num_seqs: int = Field(256, ge=1)
    startup_timeout_s: float = Field(900.0, gt=0)
    extra_args: list[str] = Field(default_factory=list, description="More `vllm serve` arguments, as given.")


def describe_checkpoint(path: str | Path) -> dict[str, Any]:
    """``{"kind": "full"|"lora", "path", "base_model", "lora_rank"}`` for a checkpoint directory."""
    root = Path(path)
    if not root.is_dir():
        raise TrainingError(f"checkpoint {root} does not exist: train first, or give a model directory")
    adapter = root / "adapter_config.json"
    if adapter.is_file():
        cfg = json.loads(adapter.read_text(encoding="utf-8"))
        return {"kind": "lora", "path": str(root.resolve()), "base_model": cfg.get("base_model_name_or_path"),
                "lora_rank": int(cfg.get("r") or 8)}  # fmt: skip
    if (root / "config.json").is_file():
        return {"kind": "full", "path": str(root.resolve()), "base_model": None, "lora_rank": None}
    raise TrainingError(f"{root} is neither a model (config.json) nor a LoRA adapter (adapter_config.json)")


def vllm_serve_argv(checkpoint: str | Path, opts: ServeOptions, *, vllm: str | None = None) -> list[str]:
    """The ``vllm serve`` command for ``checkpoint`` (run in the ``vllm`` trainer environment)."""
    ckpt = describe_checkpoint(checkpoint)
    exe = vllm or str(env_dir("vllm") / "bin" / "vllm")
    common = ["--host", opts.host, "--port", str(opts.port), "--enable-prefix-caching",
              "--reasoning-parser", "qwen3", "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
              "--tensor-parallel-size", str(opts.tensor_parallel_size),
              "--gpu-memory-utilization", str(opts.gpu_memory_utilization), "--max-num-seqs", str(opts.max_num_seqs)]  # fmt: skip
    if opts.max_model_len:
        common += ["--max-model-len", str(opts.max_model_len)]
    if ckpt["kind"] == "full":
        return [exe, "serve", ckpt["path"], "--served-model-name", opts.served_name, *common, *opts.extra_args]
    base = opts.base_model or ckpt["base_model"]
    if not base:
        raise TrainingError(f"LoRA adapter {ckpt['path']} does not name its base model: pass base_model")
    return [exe, "serve", base, "--served-model-name", f"{opts.served_name}-base", "--enable-lora",
            "--lora-modules", f"{opts.served_name}={ckpt['path']}", "--max-lora-rank", str(ckpt["lora_rank"]),
            *common, *opts.extra_args]  # fmt: skip


def policy_endpoint(opts: ServeOptions) -> dict[str, Any]:
    """The ``roles.policy`` settings that point evaluation at the served checkpoint."""
    host = "127.0.0.1" if opts.host in ("0.0.0.0", "::") else opts.host
    return {"base_url": f"http://{host}:{opts.port}/v1", "model": opts.served_name}


def serve_command_line(checkpoint: str | Path, opts: ServeOptions) -> str:
    return shlex.join(vllm_serve_argv(checkpoint, opts))


class VLLMServer:
    """``vllm serve`` as a child process, ready when ``/v1/models`` lists the served name; stopped on exit."""

    def __init__(self, checkpoint: str | Path, opts: ServeOptions, log_path: Path):
        require_env("vllm")
        self.argv = vllm_serve_argv(checkpoint, opts)
        self.opts = opts
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> VLLMServer:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")  # noqa: SIM115 (closed in __exit__ with the process)
        self._log = log
        self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT)
        url = policy_endpoint(self.opts)["base_url"] + "/models"
        deadline = time.monotonic() + self.opts.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.__exit__(None, None, None)
                raise TrainingError(f"vllm serve exited with status {self.proc.returncode} (log: {self.log_path})")
            try:
                names = [m.get("id") for m in httpx.get(url, timeout=2.0).json().get("data", [])]
                if self.opts.served_name in names:
                    return self
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(2.0)
        self.__exit__(None, None, None)
        raise TrainingError(f"vllm serve did not come up within {self.opts.startup_timeout_s:.0f} s (log: {self.log_path})")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
