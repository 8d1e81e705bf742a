"""Serving a checkpoint with vLLM's OpenAI-compatible server the way it was trained, and pointing the ``policy``
role at it.

A checkpoint is either a full model directory (``config.json`` + weights) or a LoRA adapter (``adapter_config.json``);
an adapter is served on top of its base model with ``--enable-lora --lora-modules NAME=DIR``, and the policy then
asks for ``NAME``. vLLM (0.24.0, ``training.envs.VLLM_VERSION``; ``vllm/config/lora.py``) accepts only
``VLLM_LORA_RANKS`` for ``--max-lora-rank``: an adapter's rank is rounded up to the next of them (and the plan says
so); a rank above 512 is refused.

Serving matches training (``ChatFormat``). What a checkpoint was trained on is read from the record hopforge writes
beside every checkpoint a run saves (``hopforge_format.json``: in the output directory when the run starts, then in
every checkpoint directory when it ends, wherever they are: a run dir, ``--shared-dir``, a copy elsewhere), else from
the hopforge run that wrote it (``plan.json`` of its run directory: the SFT run's LLaMA-Factory template; a merge or
an RL run inherits the format of the model it started from), or declared (``ServeOptions.reasoning``). That decides:

- ``--reasoning-parser qwen3`` for a think checkpoint only. In vLLM 0.24.0 that parser starts in reasoning mode
  unless the request sets ``enable_thinking`` false (``vllm/parser/qwen3.py``: ``initial_state=REASONING``), so a
  reply without ``</think>`` lands whole in ``reasoning`` and ``content`` is empty: a no-think checkpoint is served
  without a parser, and its reply stays in ``content``.
- ``enable_thinking`` in ``chat_template_kwargs`` of every request (the policy endpoint's ``extra_body``): the value
  whose generation prompt is the one training rendered. LLaMA-Factory's ``qwen3`` template (think rows) and its
  ``qwen3_nothink`` template both end the prompt at ``<|im_start|>assistant\\n``, which Qwen3's chat template
  renders with ``enable_thinking`` true; ``false`` would add the empty ``<think>\\n\\n</think>\\n\\n`` that only
  ``qwen3`` trained with LLaMA-Factory's ``enable_thinking: false`` puts in its prompts.
- whether evaluation sends earlier turns' reasoning back (``ChatFormat.keep_reasoning``): SFT rows and RL rollouts
  keep every turn's ``<think>`` block, so a think checkpoint is evaluated with them in its context.

Tool calls are parsed as hermes JSON (``--tool-call-parser hermes``), as the gateway and the evaluator expect.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from gateway import children
from training.envs import env_dir, require_env
from training.plan import PLAN_FILE, TrainingError

#: The values vLLM 0.24.0 accepts for ``--max-lora-rank`` (``MaxLoRARanks`` in ``vllm/config/lora.py``).
VLLM_LORA_RANKS: tuple[int, ...] = (1, 8, 16, 32, 64, 128, 256, 320, 512)
#: vLLM's reasoning parser for Qwen3-style ``<think>`` blocks.
REASONING_PARSER = "qwen3"
#: The LLaMA-Factory templates hopforge trains with, and the kind of rows each renders (``training.sft``).
TEMPLATE_KIND: dict[str, str] = {"qwen3": "think", "qwen3_nothink": "no_think"}
#: The format record written beside a run's checkpoints (``mark_checkpoints``).
FORMAT_FILE = "hopforge_format.json"
#: How far above a checkpoint its run directory may be (verl: ``<run>/checkpoints/global_step_N/actor/huggingface``).
_RUN_DEPTH = 5

Reasoning = Literal["think", "no_think"]


class ServeOptions(BaseModel):
    """How to serve a checkpoint for evaluation."""

    model_config = ConfigDict(extra="forbid")

    served_name: str = Field("hopforge-policy", pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
                             description="The model name the policy role asks for.")  # fmt: skip
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    base_model: str | None = Field(None, description="Base model of a LoRA adapter; default: the adapter's own record.")
    reasoning: Literal["auto", "think", "no_think"] = Field(
        "auto", description="What the checkpoint was trained on; auto: read it from the hopforge run that wrote it.")
    tensor_parallel_size: int = Field(1, ge=1)
    max_model_len: int | None = Field(None, ge=256)
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    max_num_seqs: int = Field(256, ge=1)
    startup_timeout_s: float = Field(900.0, gt=0)
    extra_args: list[str] = Field(default_factory=list, description="More `vllm serve` arguments, as given.")


# -- what a checkpoint is ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint to serve: full weights or a LoRA adapter (with its base model and rank)."""

    kind: Literal["full", "lora"]
    path: str
    base_model: str | None = None
    lora_rank: int | None = None


def checkpoint_fingerprint(path: str | Path) -> str:
    """What tells one checkpoint from another served under the same name: the resolved path and the name, size and
    modification time of every file in it (weights are not read). Evaluation keys its reused items and its response
    cache on it, so a new checkpoint at a reused served name is measured, not answered from the last one's cache."""
    root = Path(path).expanduser().resolve()
    entries = [str(root)]
    if root.is_dir():
        for f in sorted(root.rglob("*")):
            if f.is_file():
                st = f.stat()
                entries.append(f"{f.relative_to(root)}\t{st.st_size}\t{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(entries).encode("utf-8")).hexdigest()[:16]


def describe_checkpoint(path: str | Path) -> Checkpoint:
    """What the directory ``path`` holds: a LoRA adapter (``adapter_config.json``) or full weights (``config.json``)."""
    root = Path(path)
    if not root.is_dir():
        raise TrainingError(f"checkpoint {root} does not exist: train first, or give a model directory")
    adapter = root / "adapter_config.json"
    if adapter.is_file():
        cfg = json.loads(adapter.read_text(encoding="utf-8"))
        return Checkpoint("lora", str(root.resolve()), cfg.get("base_model_name_or_path"), int(cfg.get("r") or 8))
    if (root / "config.json").is_file():
        return Checkpoint("full", str(root.resolve()))
    raise TrainingError(f"{root} is neither a model (config.json) nor a LoRA adapter (adapter_config.json)")


def max_lora_rank(rank: int, *, adapter: str = "the adapter") -> int:
    """The smallest ``--max-lora-rank`` vLLM accepts that holds ``rank``; ``TrainingError`` above 512."""
    if rank < 1:
        raise TrainingError(f"LoRA rank {rank} of {adapter} is not a rank: it must be >= 1")
    for allowed in VLLM_LORA_RANKS:
        if rank <= allowed:
            return allowed
    raise TrainingError(f"LoRA rank {rank} of {adapter} is above 512, the largest --max-lora-rank vLLM serves: merge "
                        "the adapter into its base model (training.merge) and serve the merged weights")  # fmt: skip


# -- what it was trained on ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChatFormat:
    """How a checkpoint was trained to read and write a conversation, and so how it is served and evaluated.

    ``enable_thinking`` is the chat-template switch that reproduces the generation prompt of training (module
    docstring); ``source`` says where the format was read."""

    kind: Reasoning
    enable_thinking: bool
    template: str | None
    source: str

    @property
    def reasoning_parser(self) -> str | None:
        return REASONING_PARSER if self.kind == "think" else None

    @property
    def keep_reasoning(self) -> bool:
        """Whether earlier turns go back with their ``<think>`` blocks: SFT rows and RL rollouts keep them."""
        return self.kind == "think"

    def chat_template_kwargs(self) -> dict[str, Any]:
        return {"enable_thinking": self.enable_thinking}

    def record(self) -> dict[str, Any]:
        return {"kind": self.kind, "template": self.template, "enable_thinking": self.enable_thinking,
                "reasoning_parser": self.reasoning_parser, "keep_reasoning": self.keep_reasoning,
                "source": self.source}  # fmt: skip


def format_of_template(template: str, *, enable_thinking: bool = True, source: str) -> ChatFormat:
    """The format a LLaMA-Factory template trains: ``qwen3`` writes a ``<think>`` block before every reply (or, with
    LLaMA-Factory's ``enable_thinking: false``, puts an empty one in the prompt: a no-think model that the chat
    template's ``enable_thinking=false`` serves); ``qwen3_nothink`` writes none and no block in the prompt."""
    kind = TEMPLATE_KIND.get(template)
    if kind is None:
        raise TrainingError(f"{source} trained with template {template!r}, whose reasoning format hopforge does not "
                            f"know (it knows {', '.join(TEMPLATE_KIND)}): serve it with reasoning=think or no_think")  # fmt: skip
    if kind == "think" and not enable_thinking:
        return ChatFormat("no_think", False, template, f"{source} (template {template}, enable_thinking false)")
    return ChatFormat(kind, True, template, f"{source} (template {template})")  # type: ignore[arg-type]


def _record_near(path: Path) -> tuple[Literal["format", "plan"], Path, dict[str, Any]] | None:
    """The nearest hopforge record at or above ``path``: a format record (``FORMAT_FILE``, written beside the
    checkpoints of a run wherever they were saved) or the ``plan.json`` of the run directory whose output holds
    ``path``."""
    for folder in [path, *path.parents][: _RUN_DEPTH + 1]:
        record = folder / FORMAT_FILE
        if record.is_file():
            return "format", folder, json.loads(record.read_text(encoding="utf-8"))
        plan_file = folder / PLAN_FILE
        if not plan_file.is_file():
            continue
        plan = json.loads(plan_file.read_text(encoding="utf-8"))
        out = Path(str(plan.get("output_dir") or folder)).resolve()
        return ("plan", folder, plan) if path == out or out in path.parents else None
    return None


def _format_of_record(record: Mapping[str, Any], folder: Path) -> ChatFormat:
    kind = record.get("kind")
    if kind not in ("think", "no_think"):
        raise TrainingError(f"{folder / FORMAT_FILE} says kind {kind!r}, not think or no_think: write it again "
                            "(or remove it and set reasoning)")  # fmt: skip
    return ChatFormat(kind, bool(record.get("enable_thinking", kind == "think")), record.get("template"),
                      f"{record.get('source') or 'a hopforge run'}; recorded in {folder / FORMAT_FILE}")  # fmt: skip


def recorded_format(path: str | Path, *, _seen: frozenset[str] = frozenset()) -> ChatFormat | None:
    """The format the hopforge run that wrote ``path`` trained: the format record beside the checkpoint (or above
    it), else the run's ``plan.json``: an SFT run's template; a merge, verl or TRL run inherits the format of the
    model it started from (a merge falls back on its own ``template``). ``None`` when no hopforge record holds
    ``path`` (a base model)."""
    resolved = Path(path).expanduser().resolve()
    if str(resolved) in _seen:
        return None
    found = _record_near(resolved)
    if found is None:
        return None
    what, run_dir, plan = found
    if what == "format":
        return _format_of_record(plan, run_dir)
    return plan_format(plan, run_dir.name, _seen=_seen | {str(resolved)})


def plan_format(plan: Mapping[str, Any], run_name: str, *, _seen: frozenset[str] = frozenset()) -> ChatFormat | None:
    """The format a run trains, from its plan (``TrainPlan.summary()``, what ``plan.json`` holds): see
    ``recorded_format``. ``None`` when it cannot be told (RL from a base model)."""
    cfg = plan.get("config") or {}
    trainer = plan.get("trainer")
    if trainer == "llamafactory" and isinstance(cfg.get("llamafactory"), dict):
        lf = cfg["llamafactory"]
        return format_of_template(str(lf.get("template")), enable_thinking=lf.get("enable_thinking", True) is not False,
                                  source=f"SFT run {run_name}")  # fmt: skip
    if trainer == "llamafactory":  # a merge: the adapter's SFT run knows best
        adapter = cfg.get("adapter_name_or_path")
        inherited = recorded_format(adapter, _seen=_seen) if adapter else None
        if inherited is not None:
            return inherited
        return format_of_template(str(cfg.get("template")), source=f"merge run {run_name}")
    start = cfg.get("model") or (cfg.get("hopforge") or {}).get("model")
    if trainer in ("verl", "trl") and start:
        inherited = recorded_format(start, _seen=_seen)
        if inherited is not None:
            return ChatFormat(inherited.kind, inherited.enable_thinking, inherited.template,
                              f"{trainer} run {run_name} from {inherited.source}")  # fmt: skip
    return None


def write_format_record(folder: Path, chat: ChatFormat, *, train_id: str) -> Path:
    """``FORMAT_FILE`` in ``folder``: the format the checkpoint(s) there were trained in, so serving finds it
    wherever the checkpoint was saved or copied."""
    path = Path(folder) / FORMAT_FILE
    record = {**chat.record(), "train_id": train_id}
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def mark_checkpoints(output_dir: Path, chat: ChatFormat, *, train_id: str,
                     also: Sequence[str | Path] = ()) -> list[Path]:  # fmt: skip
    """Write the format record beside every checkpoint a run saved: ``output_dir`` itself and every directory
    under it holding weights (``config.json`` or ``adapter_config.json``: LLaMA-Factory's ``checkpoint-N``, TRL's,
    verl's ``global_step_N/actor/huggingface``), and the directories in ``also`` (the reported checkpoint)."""
    root = Path(output_dir)
    if not root.is_dir():
        return []
    folders = {root} | {p.parent for name in ("config.json", "adapter_config.json") for p in root.rglob(name)}
    folders |= {Path(a) for a in also if Path(a).is_dir()}
    return [write_format_record(f, chat, train_id=train_id) for f in sorted(folders)]


def chat_format(checkpoint: str | Path, declared: Literal["auto", "think", "no_think"] = "auto") -> ChatFormat:
    """The format to serve ``checkpoint`` in: the one its run record says, else the declared one. A declaration
    that contradicts the record is refused (serving must match training); ``auto`` with no record is refused too.
    Declared without a record, ``no_think`` uses Qwen3's own switch (``enable_thinking`` false)."""
    recorded = recorded_format(checkpoint)
    if recorded is not None:
        if declared not in ("auto", recorded.kind):
            raise TrainingError(f"{checkpoint} was trained {recorded.kind.replace('_', '-')} ({recorded.source}) but "
                                f"reasoning={declared} was asked: serving must match training; leave reasoning on auto")  # fmt: skip
        return recorded
    if declared == "auto":
        raise TrainingError(f"cannot tell whether {checkpoint} was trained on think or no-think rows (no hopforge run "
                            "record holds it): set reasoning to think or no_think")  # fmt: skip
    return ChatFormat(declared, declared == "think", None, "declared")


# -- the command ---------------------------------------------------------------------------------------------------


@dataclass
class ServePlan:
    """The ``vllm serve`` command for one checkpoint, the format it is served in, and what the command chose."""

    checkpoint: Checkpoint
    chat: ChatFormat
    argv: list[str]
    opts: ServeOptions
    notes: list[str] = field(default_factory=list)
    lora_rank: int | None = None  # the --max-lora-rank given (an adapter's rank, rounded up)

    def command_line(self) -> str:
        return shlex.join(self.argv)

    def policy_endpoint(self, extra_body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The ``roles.policy`` settings that point evaluation at the served checkpoint: its URL and name, and the
        chat template switch of ``chat`` in every request's body (added to ``extra_body``, the endpoint's own)."""
        extra = dict(extra_body or {})
        kwargs = {**(extra.get("chat_template_kwargs") or {}), **self.chat.chat_template_kwargs()}
        return {**policy_endpoint(self.opts), "extra_body": {**extra, "chat_template_kwargs": kwargs}}

    def record(self) -> dict[str, Any]:
        """What an evaluation records about the server it asked."""
        return {"checkpoint": self.checkpoint.path, "checkpoint_fingerprint": checkpoint_fingerprint(self.checkpoint.path),
                "checkpoint_kind": self.checkpoint.kind,
                "base_model": self.checkpoint.base_model, "lora_rank": self.checkpoint.lora_rank,
                "max_lora_rank": self.lora_rank, "served_name": self.opts.served_name,
                "max_model_len": self.opts.max_model_len,  # evaluation measures its prompts against it
                "chat_format": self.chat.record(), "command": self.command_line(), "notes": list(self.notes)}  # fmt: skip


def plan_serve(checkpoint: str | Path | Checkpoint, opts: ServeOptions, *, chat: ChatFormat | None = None,
               vllm: str | None = None) -> ServePlan:  # fmt: skip
    """The ``vllm serve`` command for ``checkpoint`` (a directory, or a ``Checkpoint`` not written yet, which then
    needs ``chat``), run in the ``vllm`` trainer environment. ``chat`` defaults to ``chat_format(checkpoint,
    opts.reasoning)``."""
    ckpt = checkpoint if isinstance(checkpoint, Checkpoint) else describe_checkpoint(checkpoint)
    if chat is None:
        chat = chat_format(ckpt.path, opts.reasoning)
    exe = vllm or str(env_dir("vllm") / "bin" / "vllm")
    common = ["--host", opts.host, "--port", str(opts.port), "--enable-prefix-caching"]
    if chat.reasoning_parser:
        common += ["--reasoning-parser", chat.reasoning_parser]
    common += ["--enable-auto-tool-choice", "--tool-call-parser", "hermes",
               "--tensor-parallel-size", str(opts.tensor_parallel_size),
               "--gpu-memory-utilization", str(opts.gpu_memory_utilization), "--max-num-seqs", str(opts.max_num_seqs)]  # fmt: skip
    if opts.max_model_len:
        common += ["--max-model-len", str(opts.max_model_len)]
    notes = [f"served {chat.kind.replace('_', '-')} ({chat.source}): "
             + (f"--reasoning-parser {chat.reasoning_parser}" if chat.reasoning_parser else "no reasoning parser")
             + f", requests send enable_thinking={str(chat.enable_thinking).lower()}"]  # fmt: skip
    if ckpt.kind == "full":
        argv = [exe, "serve", ckpt.path, "--served-model-name", opts.served_name, *common, *opts.extra_args]
        return ServePlan(ckpt, chat, argv, opts, notes)
    base = opts.base_model or ckpt.base_model
    if not base:
        raise TrainingError(f"LoRA adapter {ckpt.path} does not name its base model: pass base_model")
    rank = max_lora_rank(int(ckpt.lora_rank or 8), adapter=f"adapter {ckpt.path}")
    if rank != ckpt.lora_rank:
        notes.append(f"LoRA rank {ckpt.lora_rank} served with --max-lora-rank {rank}: vLLM accepts only "
                     f"{', '.join(map(str, VLLM_LORA_RANKS))}")  # fmt: skip
    argv = [exe, "serve", base, "--served-model-name", f"{opts.served_name}-base", "--enable-lora",
            "--lora-modules", f"{opts.served_name}={ckpt.path}", "--max-lora-rank", str(rank), *common, *opts.extra_args]  # fmt: skip
    return ServePlan(ckpt, chat, argv, opts, notes, lora_rank=rank)


def policy_endpoint(opts: ServeOptions) -> dict[str, Any]:
    """The URL and model name of the server ``opts`` describes (``ServePlan.policy_endpoint`` adds the format)."""
    host = "127.0.0.1" if opts.host in ("0.0.0.0", "::") else opts.host
    return {"base_url": f"http://{host}:{opts.port}/v1", "model": opts.served_name}


def serve_command_line(checkpoint: str | Path, opts: ServeOptions) -> str:
    """The command, preceded by its notes as shell comments (what the format and the LoRA rank chose)."""
    plan = plan_serve(checkpoint, opts)
    return "\n".join([*(f"# {n}" for n in plan.notes), plan.command_line()])


class VLLMServer:
    """``vllm serve`` as a child process, ready when ``/v1/models`` lists the served name; stopped on exit.
    ``record()`` is what an evaluation stores about it, the vLLM version included."""

    def __init__(self, checkpoint: str | Path, opts: ServeOptions, log_path: Path, *, chat: ChatFormat | None = None):
        require_env("vllm")
        self.plan = plan_serve(checkpoint, opts, chat=chat)
        self.argv = self.plan.argv
        self.opts = opts
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        from training.env_versions import package_versions

        self.vllm_version = package_versions("vllm", ["vllm"])["vllm"]

    def policy_endpoint(self, extra_body: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return self.plan.policy_endpoint(extra_body)

    def record(self) -> dict[str, Any]:
        return {**self.plan.record(), "server": "vllm", "vllm_version": self.vllm_version}

    def __enter__(self) -> VLLMServer:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")  # noqa: SIM115 (closed in __exit__ with the process)
        self._log = log
        # SIGTERM when this process dies, however it dies: vLLM then stops its own engine processes
        self.proc = children.popen(self.argv, death_signal=signal.SIGTERM, stdout=log, stderr=subprocess.STDOUT)
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


__all__ = [
    "REASONING_PARSER",
    "TEMPLATE_KIND",
    "VLLM_LORA_RANKS",
    "FORMAT_FILE",
    "ChatFormat",
    "Checkpoint",
    "ServeOptions",
    "ServePlan",
    "VLLMServer",
    "chat_format",
    "describe_checkpoint",
    "format_of_template",
    "mark_checkpoints",
    "plan_format",
    "max_lora_rank",
    "plan_serve",
    "policy_endpoint",
    "recorded_format",
    "serve_command_line",
    "write_format_record",
]
