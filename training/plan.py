"""What every trainer hand-off shares: the export it reads, the plan it writes, the errors it raises.

A *plan* is everything a training run needs before it starts: the files to write into its run directory (trainer
configs, tool configs, hopforge's own extras), the command that launches the trainer in its own environment, and
the resolved configuration recorded with the run. Planning reads the export and the model directory and checks
them; it never imports a trainer (the trainers live in their own virtual environments, ``training.envs``).

Launcher contract (scripts under ``training/launch/``, run inside a trainer environment): each appends one JSON
object per logged step to ``<run_dir>/metrics.jsonl`` (``{"step": int, "<metric>": float, ...}``) and, when the
trainer returns, writes ``<run_dir>/result.json`` (``{"status": "ok", "checkpoint": "<dir>", ...}``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from schemas.errors import TrainingError  # re-exported: callers import it from here
from training.envs import REPO_ROOT, require_env  # noqa: F401  (REPO_ROOT re-exported: callers read it from here)

Trainer = Literal["llamafactory", "verl", "trl"]

LAUNCH_DIR = REPO_ROOT / "training" / "launch"
METRICS_FILE = "metrics.jsonl"
RESULT_FILE = "result.json"
PLAN_FILE = "plan.json"


#: What every trainer process gets, whatever its model: no dataset hub (the data is the export, local), no telemetry,
#: no version nags.
TRAINER_ENV = {
    "HF_DATASETS_OFFLINE": "1",
    "WANDB_MODE": "disabled",
    "DISABLE_VERSION_CHECK": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
#: No model hub: set when the model is a local path or the run is declared offline (``hub_offline``).
HUB_OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
OFFLINE_ENV = {**HUB_OFFLINE_ENV, **TRAINER_ENV}


def hub_offline(model: str | None, offline: bool = False) -> bool:
    """Whether a run keeps its trainer off the model hub: when asked to (``offline``), or when the model is a local
    path (nothing to fetch, and a typo must not turn into a download). A hub id (``Qwen/Qwen3-8B``) is fetched, or
    read from the node's Hugging Face cache, by the trainer itself."""
    return offline or model is None or is_local_model(model)


def trainer_env(*, offline: bool) -> dict[str, str]:
    """The variables a trainer process gets on top of this process's environment (which may set more)."""
    return {**TRAINER_ENV, **(HUB_OFFLINE_ENV if offline else {})}


#: The largest LoRA rank vLLM 0.24.0 serves (``--max-lora-rank``; ``training.serve.VLLM_LORA_RANKS``).
MAX_LORA_RANK = 512


def check_lora_rank(rank: int) -> int:
    """A trainer option's LoRA rank, refused above what vLLM serves: the adapter could not be evaluated."""
    if rank > MAX_LORA_RANK:
        raise ValueError(f"lora_rank {rank} is above {MAX_LORA_RANK}, the largest rank vLLM serves "
                         "(--max-lora-rank): the adapter could not be evaluated")  # fmt: skip
    return rank


# -- the export a run reads ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportView:
    """One export version on disk, checked: its manifest (and the manifest's sha256, recorded with every run) and
    its ``dataset_info.json`` when it has SFT data."""

    path: Path
    version: str
    manifest: dict[str, Any]
    manifest_sha256: str
    dataset_info: dict[str, Any]

    def data_files(self, config: str) -> dict[str, Path]:
        """``split -> parquet path`` for one config (``qa``, ``sft``, ``sft_nothink``, ``rl``, ``messages``)."""
        files = {}
        for name in self.manifest.get("files", {}):
            if name.startswith(f"{config}/") and name.endswith(".parquet"):
                split = name[len(config) + 1 :].split("-00000-", 1)[0]
                files[split] = self.path / name
        return dict(sorted(files.items()))

    def rows(self, config: str) -> dict[str, int]:
        return dict(self.manifest.get("rows", {}).get(config, {}))


def resolve_export(exports_dir: Path, version: str | None) -> Path:
    """The directory of export ``version`` under ``exports_dir``; ``None`` picks the newest complete one."""
    if version is not None:
        candidate = Path(version)
        if candidate.is_dir() and (candidate / "manifest.json").is_file():
            return candidate
        path = exports_dir / version
        if not (path / "manifest.json").is_file():
            known = _export_versions(exports_dir)
            hint = f"known versions: {', '.join(known)}" if known else "there is no export yet: run `hopforge export`"
            raise TrainingError(f"export version {version!r} not found under {exports_dir} ({hint})")
        return path
    known = _export_versions(exports_dir)
    if not known:
        raise TrainingError(f"no export under {exports_dir}: run `hopforge export` first")
    return max((exports_dir / v for v in known), key=lambda p: (p / "manifest.json").stat().st_mtime)


def _export_versions(exports_dir: Path) -> list[str]:
    if not exports_dir.is_dir():
        return []
    return sorted(p.name for p in exports_dir.iterdir()
                  if p.is_dir() and not p.name.startswith(".") and (p / "manifest.json").is_file())  # fmt: skip


def load_export(path: Path) -> ExportView:
    """Read and check an export directory (``TrainingError`` when it is missing, incomplete or altered)."""
    from tasks.export.datasets import verify_export

    path = Path(path)
    if not (path / "manifest.json").is_file():
        raise TrainingError(f"{path} is not a hopforge export (no manifest.json): run `hopforge export`")
    problems = verify_export(path)
    if problems:
        raise TrainingError(f"export {path} is damaged: {'; '.join(problems[:3])}; export it again")
    raw = (path / "manifest.json").read_bytes()
    manifest = json.loads(raw)
    info_path = path / "dataset_info.json"
    info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.is_file() else {}
    return ExportView(path=path.resolve(), version=str(manifest.get("version", path.name)), manifest=manifest,
                      manifest_sha256=hashlib.sha256(raw).hexdigest(), dataset_info=info)  # fmt: skip


# -- model directories ---------------------------------------------------------------------------------------------


def is_local_model(model: str) -> bool:
    """Whether ``model`` names a path on this machine (an existing one, or one written as a path: ``./x``, ``/x``,
    ``~/x``, ``a/b/c``) rather than a hub id like ``Qwen/Qwen3-8B``."""
    return Path(model).expanduser().exists() or model.startswith((".", "/", "~")) or model.count("/") > 1


def check_model_dir(model: str, *, what: str = "model") -> str:
    """A local model directory must hold a Hugging Face ``config.json`` and weights; anything else that is not an
    existing path is taken as a hub id (the GPU side may download it) and returned as is."""
    path = Path(model).expanduser()
    if not is_local_model(model):
        return model
    if not path.is_dir():
        raise TrainingError(f"{what} path {model} does not exist (give a model directory or a hub id like Qwen/Qwen3-8B)")
    if not (path / "config.json").is_file():
        raise TrainingError(f"{what} path {model} is not a model directory: it has no config.json")
    has_weights = any(path.glob("*.safetensors")) or any(path.glob("*.bin")) or (path / "adapter_config.json").is_file()
    if not has_weights:
        raise TrainingError(f"{what} path {model} has a config.json but no weights (*.safetensors or *.bin)")
    return str(path.resolve())


# -- the plan ----------------------------------------------------------------------------------------------------


NODES_DIR = "nodes"


def node_dir(run_dir: Path, node_rank: int) -> Path:
    """Where node ``node_rank`` of a run keeps its own files: node 0 the run directory itself, node k
    ``<run_dir>/nodes/node-<k>`` (its copy of the plan, its command, its trainer log)."""
    return Path(run_dir) if node_rank == 0 else Path(run_dir) / NODES_DIR / f"node-{node_rank}"


@dataclass
class TrainPlan:
    """A training run, ready to launch. ``argv[0]`` is the trainer environment's python (``training.envs``).

    Several nodes share one ``run_dir`` (the trainer's outputs, the launcher's ``result.json``, ``metrics.jsonl`` and
    ``ranks/``); each node writes its plan files, ``plan.json``, ``command.sh`` and ``train.log`` into its own
    ``node_dir`` (``on_node``), so no node overwrites another's (a node's trainer config can differ: accelerate's
    ``machine_rank``). ``hub_offline``: launches and checks set ``HF_HUB_OFFLINE`` (``training.runs.hub_offline``)."""

    trainer: Trainer
    env: str
    run_dir: Path
    files: dict[str, str]
    argv: list[str]
    config: dict[str, Any]
    export_version: str
    manifest_sha256: str
    output_dir: Path
    env_vars: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    node_rank: int = 0
    hub_offline: bool = True

    @property
    def node_dir(self) -> Path:
        return node_dir(self.run_dir, self.node_rank)

    def on_node(self, node_rank: int) -> TrainPlan:
        """This plan as node ``node_rank`` writes and runs it: every reference to one of the plan's files (in the
        command and inside the files) points at the node's own copy in ``node_dir``; the run directory, the output
        directory and the launcher's records stay shared."""
        if node_rank == self.node_rank:
            return self
        here, there = self.node_dir, node_dir(self.run_dir, node_rank)
        moves = sorted(((str(base / name), str(there / name)) for name in self.files
                        for base in {here, here.resolve()}), key=lambda m: -len(m[0]))  # fmt: skip

        def local(text: str) -> str:
            for old, new in moves:
                text = text.replace(old, new)
            return text

        return replace(self, files={n: local(t) for n, t in self.files.items()}, argv=[local(a) for a in self.argv],
                       node_rank=node_rank, notes=list(self.notes))  # fmt: skip

    def command_line(self) -> str:
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(self.env_vars.items()))
        return (env + " " if env else "") + shlex.join(self.argv)

    def write(self) -> list[Path]:
        """Write every file of the plan into ``node_dir`` (``run_dir`` on node 0) plus ``plan.json`` and
        ``command.sh``; return the paths."""
        folder = self.node_dir
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for name, text in sorted(self.files.items()):
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            written.append(target)
        script = folder / "command.sh"
        script.write_text("#!/usr/bin/env bash\nset -euo pipefail\n" + self.command_line() + "\n", encoding="utf-8")
        script.chmod(0o755)
        plan = folder / PLAN_FILE
        plan.write_text(json.dumps(self.summary(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return [*written, script, plan]

    def summary(self) -> dict[str, Any]:
        return {
            "trainer": self.trainer, "env": self.env, "run_dir": str(self.run_dir), "output_dir": str(self.output_dir),
            "export_version": self.export_version, "manifest_sha256": self.manifest_sha256,
            "argv": list(self.argv), "env_vars": dict(self.env_vars), "config": self.config,
            "files": sorted(self.files), "notes": list(self.notes), "node_rank": self.node_rank,
            "hub_offline": self.hub_offline,
        }  # fmt: skip


def dump_yaml(data: Mapping[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True, width=120)


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    """The launcher's ``metrics.jsonl`` (lines that do not parse are skipped: a killed run may leave half a line)."""
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("step"), int):
            out.append(row)
    return out


def launcher(name: str) -> str:
    """Absolute path of a launcher script shipped in ``training/launch``."""
    path = LAUNCH_DIR / name
    if not path.is_file():  # pragma: no cover - a packaging bug
        raise TrainingError(f"launcher {path} is missing from this installation")
    return str(path)


def run_trainer_check(plan: TrainPlan, argv: Sequence[str], *, timeout_s: float, what: str,
                      noun: str = "config") -> dict[str, Any]:  # fmt: skip
    """Run a launcher's ``--check`` mode (``argv``, in the plan's trainer environment, offline, from its run
    directory) and return the JSON report it prints last. ``TrainingError`` naming ``what`` when it times out or
    refuses; the message carries the trainer's own ``error:`` line, else the end of its output."""
    import subprocess

    env = {**os.environ, **trainer_env(offline=plan.hub_offline), **plan.env_vars}
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s, env=env,
                              cwd=str(plan.node_dir))  # fmt: skip
    except subprocess.TimeoutExpired:
        raise TrainingError(f"{what} did not finish checking {plan.run_dir} within {timeout_s:.0f} s") from None
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        output = done.stderr or done.stdout
        errors = [ln for ln in output.splitlines() if ln.startswith("error: ")]
        tail = errors[-1][len("error: "):] if errors else "\n".join(output.strip().splitlines()[-15:])
        raise TrainingError(f"{what} refused the {noun} in {plan.run_dir}: {tail}")
    return json.loads(lines[-1])


# -- prompt lengths ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptCounts:
    """Prompts measured with a model's tokenizer against ``max_prompt_length`` (``training/launch/measure_prompts``):
    ``over`` of ``rows`` are longer; ``splits`` has the same counts per split."""

    rows: int
    over: int
    longest: int
    longest_id: str | None
    max_prompt_length: int
    over_ids: list[str]
    splits: dict[str, dict[str, Any]] = field(default_factory=dict)

    def refusal(self, setting: str = "max_prompt_length") -> str:
        """The one line a plan that refuses over-long prompts stops with."""
        return (f"{self.over} of {self.rows} prompts are longer than {setting} {self.max_prompt_length} tokens "
                f"(longest {self.longest}, {self.longest_id}): raise {setting}, or set overlong=filter to leave "
                "them out")  # fmt: skip


def measure_prompts(source: ExportView | TrainPlan | Path | str | None, tokenizer_dir: str | Path, max_prompt_length: int,
                    *, env: str = "trl", dataset: Literal["rl", "messages"] = "rl",
                    splits: Sequence[str] = ("train", "validation", "test"),
                    tools: Sequence[Mapping[str, Any]] | None = None,
                    chat_template_kwargs: Mapping[str, Any] | None = None,
                    prompts: Sequence[Mapping[str, Any]] | None = None,
                    timeout_s: float = 600) -> PromptCounts:  # fmt: skip
    """Count the prompts of an export (``source``: an ``ExportView``, its directory, or a plan whose export it
    names) longer than ``max_prompt_length`` tokens, rendered by ``tokenizer_dir``'s chat template with ``tools``
    (OpenAI function schemas, as the trainer shows them) and a generation prompt. ``prompts``
    (``[{"id", "messages"}]``) are measured as well (evaluation prompts). The tokenizer runs in trainer environment
    ``env`` (the core has no chat-template renderer); ``TrainingError`` when it is missing or fails."""
    import subprocess
    import tempfile

    if max_prompt_length < 1:
        raise TrainingError(f"max_prompt_length must be >= 1, got {max_prompt_length}")
    if not Path(tokenizer_dir).is_dir():
        raise TrainingError(f"tokenizer {tokenizer_dir} is not a local directory: prompts are measured offline with "
                            "the model's own tokenizer")  # fmt: skip
    export = _export_of(source) if source is not None else None
    files = export.data_files(dataset) if export is not None else {}
    request = {
        "tokenizer": str(tokenizer_dir), "max_prompt_length": int(max_prompt_length),
        "tools": [dict(t) for t in tools] if tools else None, "chat_template_kwargs": dict(chat_template_kwargs or {}),
        "sources": [{"path": str(files[s]), "dataset": dataset, "split": s} for s in splits if s in files],
        "prompts": [dict(p) for p in prompts or []],
    }  # fmt: skip
    python = require_env(env)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump(request, fh)
    try:
        done = subprocess.run([str(python), launcher("measure_prompts.py"), "--request", fh.name], capture_output=True,
                              text=True, timeout=timeout_s, env={**os.environ, **OFFLINE_ENV})  # fmt: skip
    except subprocess.TimeoutExpired:
        raise TrainingError(f"measuring the prompts took more than {timeout_s:.0f} s") from None
    finally:
        Path(fh.name).unlink(missing_ok=True)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise TrainingError(f"measuring the prompts with {tokenizer_dir} failed: {tail[0]}")
    report = json.loads(lines[-1])
    return PromptCounts(rows=report["rows"], over=report["over"], longest=report["longest"],
                        longest_id=report["longest_id"], max_prompt_length=report["max_prompt_length"],
                        over_ids=list(report["over_ids"]), splits=dict(report["splits"]))  # fmt: skip


def _export_of(source: ExportView | TrainPlan | Path | str) -> ExportView:
    if isinstance(source, ExportView):
        return source
    if isinstance(source, TrainPlan):
        dataset_dir = (source.config.get("llamafactory") or {}).get("dataset_dir")  # an SFT plan
        if dataset_dir:
            return load_export(Path(dataset_dir))
        # RL plans name an rl parquet file: <export>/<config>/<split>-00000-of-00001.parquet
        train_file = source.config.get("train_file") or (source.config.get("hopforge") or {}).get("train_file")
        if train_file:
            return load_export(Path(train_file).parents[1])
        raise TrainingError(f"the {source.trainer} plan in {source.run_dir} names no export to measure")
    return load_export(Path(source))
