"""SFT hand-off: a LLaMA-Factory config from an export, with Omne-R1's weighted think-token loss.

``plan_sft(export, run_dir, SFTOptions(model=...))`` writes two files into the run directory and returns the command
that runs them in the ``llamafactory`` trainer environment::

    <run_dir>/llamafactory.yaml   a plain LLaMA-Factory train config (llamafactory-cli would accept it as is):
                                  model, template, dataset_dir = the export, dataset names from its
                                  dataset_info.json, LoRA or full, cutoff_len, optimiser schedule, output_dir
    <run_dir>/hopforge_sft.json   what LLaMA-Factory has no key for: think_weight, weight_tool_calls, the rows each
                                  dataset holds (the launcher checks none is dropped), the export's version and hash

    python training/launch/llamafactory_sft.py <run_dir>/llamafactory.yaml --hopforge <run_dir>/hopforge_sft.json

Defaults follow the Omne-R1 appendix: LoRA rank 8 on all linear layers, cutoff 6144, 3 epochs, cosine schedule,
lr 1e-4 with warmup 0.1 (full fine-tuning: 1e-5, warmup 0.01), effective batch 4 per device. The paper trains in
bf16 on GPUs; ``bf16`` left unset is on when the node's GPUs compute in bf16 and off on a CPU (``training.cluster``
probes the trainer environment's torch; the decision and the environment's package versions are in ``plan.json``).

Several GPUs or nodes (the ``cluster`` option): the command runs the launcher under ``torchrun``
(``python -m torch.distributed.run --nnodes --node-rank --nproc-per-node --master-addr --master-port``), so every
rank runs ``llamafactory_sft.py`` and installs the weighted loss and the truncation guard itself. Every node writes
its copy of these files into its own folder of the shared run directory (``TrainPlan.on_node``: node k's are under
``nodes/node-<k>``), while the output directory, ``result.json`` and the ranks' records are the run's, shared.
``llamafactory-cli train`` is not used: it re-launches LLaMA-Factory's own entry point under torchrun, whose ranks
would run without those patches. ``deepspeed`` (``zero2``/``zero3``) writes ``deepspeed_<stage>.json`` and ``fsdp``
writes ``fsdp_config.json`` into the run directory, referenced from ``llamafactory.yaml``; the model states per GPU
are estimated first and a plan that cannot fit is refused (``training.cluster.check_memory_fit``). On several nodes
each node runs the same command with its own ``cluster.node_rank``; the export and the output directory must be at
the same path on every node (a shared file system).

The template follows the data: ``qwen3`` for the ``sft`` config (a ``<think>`` block before every reply),
``qwen3_nothink`` for ``sft_nothink``. Whether every row fits ``cutoff_len`` needs the real tokenizer, so the exact
check is the launcher's (it stops before training when a row would be truncated); here a rough characters-per-token
estimate only adds a note to the plan.

``validate_sft_config(plan)`` asks LLaMA-Factory's own parser, in its environment, whether it accepts the config.

This module is core: it imports neither torch nor LLaMA-Factory.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from training.cluster import (
    ClusterOptions,
    DeviceInfo,
    ResolvedCluster,
    check_memory_fit,
    deepspeed_config,
    detect_device,
    dump_json,
    resolve_cluster,
    sharding_of,
    torchrun_argv,
)
from training.plan import (
    MAX_LORA_RANK,
    ExportView,
    TrainingError,
    TrainPlan,
    check_lora_rank,
    check_model_dir,
    dump_yaml,
    launcher,
    run_trainer_check,
)

CONFIG_FILE = "llamafactory.yaml"
EXTRAS_FILE = "hopforge_sft.json"
OUTPUT_DIR = "output"

#: The template of each SFT config of an export (``tasks.export.datasets``).
TEMPLATE_OF_CONFIG = {"sft": "qwen3", "sft_nothink": "qwen3_nothink"}
#: Keys the plan owns: set through options, not ``extra``.
RESERVED_KEYS = frozenset({"stage", "do_train", "dataset_dir", "output_dir", "dataset", "eval_dataset",
                           "model_name_or_path", "template", "finetuning_type", "deepspeed", "fsdp",
                           "fsdp_config", "bf16"})  # fmt: skip
#: Characters per token assumed for the cutoff note; byte-level BPE on English averages about 4.
CHARS_PER_TOKEN = 4.0
EFFECTIVE_BATCH = 4
#: The largest LoRA rank ``vllm serve --max-lora-rank`` accepts: an adapter above it could not be evaluated.
FSDP_FILE = "fsdp_config.json"


def _names(value: Any) -> Any:
    """``"a,b"`` and ``["a", "b"]`` both mean two dataset names; ``"auto"``/``"none"`` stay as they are."""
    if isinstance(value, str) and value not in ("auto", "none"):
        value = [v.strip() for v in value.split(",") if v.strip()]
    return value


class SFTOptions(BaseModel):
    """Options of one LLaMA-Factory SFT run. ``None`` means the paper's default for the finetuning type."""

    # extra="forbid": a misspelt option is an error, not a silently ignored setting.
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1, description="Base model directory (or hub id on the GPU side).")
    dataset: Literal["auto"] | list[str] = Field(
        "auto", description="dataset_info.json entries; auto: the export's think SFT train split.")
    eval_dataset: Literal["auto", "none"] | list[str] = Field(
        "auto", description="auto: the validation split of the training data when the export has one.")
    template: str = Field("auto", description="auto: qwen3 for sft rows, qwen3_nothink for sft_nothink rows.")
    finetuning_type: Literal["lora", "full"] = "lora"
    lora_rank: int = Field(8, ge=1, description=f"LoRA rank (at most {MAX_LORA_RANK}, the largest vLLM serves).")
    lora_target: str = Field("all", min_length=1)
    cutoff_len: int = Field(6144, ge=16)
    think_weight: float = Field(1.0, ge=0.0, description="Loss weight of <think>…</think> tokens (paper: 0.001).")
    weight_tool_calls: bool = Field(False, description="Also weight <tool_call>…</tool_call> spans by think_weight.")
    num_train_epochs: float = Field(3.0, gt=0)
    learning_rate: float | None = Field(None, gt=0)
    warmup_ratio: float | None = Field(None, ge=0, le=1)
    lr_scheduler_type: str = "cosine"
    per_device_train_batch_size: int = Field(1, ge=1)
    gradient_accumulation_steps: int | None = Field(None, ge=1)
    per_device_eval_batch_size: int = Field(1, ge=1)
    bf16: bool | None = Field(None, description="None: on when the node's GPUs compute in bf16, off on a CPU.")
    deepspeed: Literal["none", "zero2", "zero3"] = Field("none", description="DeepSpeed ZeRO stage (config written "
                                                                             "beside the run).")  # fmt: skip
    fsdp: Literal["none", "full_shard", "shard_grad_op"] = Field("none", description="PyTorch FSDP sharding (instead "
                                                                                     "of DeepSpeed).")  # fmt: skip
    cluster: ClusterOptions = Field(default_factory=ClusterOptions)
    max_steps: int | None = Field(None, ge=1)
    logging_steps: int = Field(10, ge=1)
    save_steps: int = Field(500, ge=1)
    eval_steps: int | None = Field(None, ge=1)
    report_to: str = "none"
    seed: int = 42
    extra: dict[str, Any] = Field(default_factory=dict, description="Raw LLaMA-Factory keys, applied last.")

    @field_validator("dataset", "eval_dataset", mode="before")
    @classmethod
    def _split_names(cls, v: Any) -> Any:
        return _names(v)

    @field_validator("lora_rank")
    @classmethod
    def _servable_rank(cls, v: int) -> int:
        return check_lora_rank(v)

    @field_validator("think_weight")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("think_weight must be a finite number")
        return v

    @field_validator("extra")
    @classmethod
    def _extra(cls, v: dict[str, Any]) -> dict[str, Any]:
        reserved = sorted(RESERVED_KEYS & set(v))
        if reserved:
            raise ValueError(f"extra may not set {', '.join(reserved)}: use the SFT options of the same name")
        return v

    @model_validator(mode="after")
    def _lists_not_empty(self) -> SFTOptions:
        if isinstance(self.dataset, list) and not self.dataset:
            raise ValueError("dataset must name at least one dataset_info.json entry (or be auto)")
        if self.deepspeed != "none" and self.fsdp != "none":
            raise ValueError(f"deepspeed={self.deepspeed} and fsdp={self.fsdp} both shard the model: choose one")
        return self

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> SFTOptions:
        """Options from plain values (a CLI, a flow parameter); ``TrainingError`` naming each bad option."""
        try:
            return cls.model_validate(dict(values))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'options'}: {e['msg']}" for e in exc.errors()[:5])
            raise TrainingError(f"bad SFT options: {problems}") from None

    def resolved_learning_rate(self) -> float:
        if self.learning_rate is not None:
            return self.learning_rate
        return 1e-4 if self.finetuning_type == "lora" else 1e-5

    def resolved_warmup_ratio(self) -> float:
        return self.warmup_ratio if self.warmup_ratio is not None else (0.1 if self.finetuning_type == "lora" else 0.01)

    def resolved_accumulation(self) -> int:
        """Effective batch 4 per device (the paper's), whatever the micro-batch size."""
        if self.gradient_accumulation_steps is not None:
            return self.gradient_accumulation_steps
        return max(1, math.ceil(EFFECTIVE_BATCH / self.per_device_train_batch_size))


# -- datasets of the export ----------------------------------------------------------------------------------------


def _config_and_split(export: ExportView, name: str) -> tuple[str, str]:
    """The export config (``sft`` / ``sft_nothink``) and split of a dataset_info entry, from its file name."""
    file_name = str(export.dataset_info[name].get("file_name", ""))
    config, _, rest = file_name.partition("/")
    return config, rest.split("-00000-", 1)[0]


def _check_names(export: ExportView, names: Sequence[str], what: str) -> list[str]:
    known = sorted(export.dataset_info)
    if not known:
        raise TrainingError(f"export {export.version} has no SFT data (no dataset_info.json entries): export it with "
                            "the sft or sft_nothink config")  # fmt: skip
    unknown = [n for n in names if n not in export.dataset_info]
    if unknown:
        raise TrainingError(f"{what} {', '.join(map(repr, unknown))} not in the dataset_info.json of export "
                            f"{export.version}; known: {', '.join(known)}")  # fmt: skip
    return list(names)


def _train_datasets(export: ExportView, opts: SFTOptions) -> list[str]:
    if opts.dataset == "auto":
        auto = [n for n in sorted(export.dataset_info) if _config_and_split(export, n) == ("sft", "train")]
        if not auto:
            known = ", ".join(sorted(export.dataset_info)) or "none"
            raise TrainingError(f"export {export.version} has no think SFT train split (sft/train) to pick "
                                f"automatically; name the datasets with `dataset` (known: {known})")  # fmt: skip
        return auto
    return _check_names(export, opts.dataset, "dataset")


def _eval_datasets(export: ExportView, opts: SFTOptions, train: Sequence[str]) -> list[str]:
    if opts.eval_dataset == "none":
        return []
    if opts.eval_dataset == "auto":
        configs = {_config_and_split(export, n)[0] for n in train}
        return [n for n in sorted(export.dataset_info) if _config_and_split(export, n)[1] == "validation"
                and _config_and_split(export, n)[0] in configs]  # fmt: skip
    return _check_names(export, opts.eval_dataset, "eval_dataset")


def _template(export: ExportView, opts: SFTOptions, names: Sequence[str]) -> str:
    configs = sorted({_config_and_split(export, n)[0] for n in names})
    wanted = sorted({TEMPLATE_OF_CONFIG[c] for c in configs if c in TEMPLATE_OF_CONFIG})
    if len(wanted) > 1:
        raise TrainingError(f"datasets {', '.join(names)} mix think (sft) and no-think (sft_nothink) rows, which need "
                            "different templates (qwen3, qwen3_nothink): train them in separate runs")  # fmt: skip
    if opts.template == "auto":
        if not wanted:
            raise TrainingError(f"cannot choose a template for datasets {', '.join(names)} (export configs "
                                f"{', '.join(configs)}): set `template`")  # fmt: skip
        return wanted[0]
    if wanted and opts.template in TEMPLATE_OF_CONFIG.values() and opts.template != wanted[0]:
        raise TrainingError(f"template {opts.template} does not match the data: {', '.join(configs)} rows are "
                            f"trained with {wanted[0]} (or leave template on auto)")  # fmt: skip
    return opts.template


def _rows(export: ExportView, names: Sequence[str]) -> dict[str, int]:
    out = {}
    for name in names:
        config, split = _config_and_split(export, name)
        out[name] = int(export.rows(config).get(split, 0))
    return out


def longest_row_chars(export: ExportView, names: Sequence[str]) -> tuple[int, str]:
    """Characters of the longest row (system, tools and every turn) over ``names``, and its id."""
    import pyarrow.parquet as pq

    best = (0, "")
    for name in names:
        table = pq.read_table(export.path / export.dataset_info[name]["file_name"],
                              columns=["id", "conversations", "system", "tools"])  # fmt: skip
        for row in table.to_pylist():
            chars = len(row.get("system") or "") + len(row.get("tools") or "")
            chars += sum(len(t.get("value") or "") for t in row.get("conversations") or [])
            best = max(best, (chars, str(row.get("id"))))
    return best


# -- the plan --------------------------------------------------------------------------------------------------------


def resolved_bf16(opts: SFTOptions, device: DeviceInfo) -> bool:
    """``bf16`` as given, else on exactly when the node's GPUs compute in bf16."""
    return opts.bf16 if opts.bf16 is not None else (device.kind == "cuda" and device.bf16)


def _cpu_cluster() -> ResolvedCluster:
    return resolve_cluster(ClusterOptions(device="cpu"), DeviceInfo("cpu", 0, None, False, "default (one CPU process)"))


def sharding_files(run_dir: Path, opts: SFTOptions) -> dict[str, str]:
    """The DeepSpeed or FSDP config file of the run, ``{file name: text}`` (none without sharding)."""
    if opts.deepspeed != "none":
        return {f"deepspeed_{opts.deepspeed}.json": dump_json(deepspeed_config(opts.deepspeed))}
    if opts.fsdp != "none":
        # transformers' fsdp_config keys; the layers to wrap come from the model's own _no_split_modules.
        return {FSDP_FILE: dump_json({"fsdp_version": 1, "backward_prefetch": "backward_pre", "forward_prefetch": False,
                                      "use_orig_params": True, "sync_module_states": True,
                                      "cpu_ram_efficient_loading": True, "activation_checkpointing": False})}  # fmt: skip
    return {}


def sft_config(export: ExportView, run_dir: Path, opts: SFTOptions,
               rc: ResolvedCluster | None = None) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
    """The LLaMA-Factory config and hopforge's extras for one run (no files written). ``rc``: where it runs
    (default: one CPU process)."""
    rc = rc or _cpu_cluster()
    train = _train_datasets(export, opts)
    evals = _eval_datasets(export, opts, train)
    template = _template(export, opts, [*train, *evals])
    config: dict[str, Any] = {
        "model_name_or_path": check_model_dir(opts.model),
        "stage": "sft",
        "do_train": True,
        "finetuning_type": opts.finetuning_type,
    }
    if opts.finetuning_type == "lora":
        config.update(lora_rank=opts.lora_rank, lora_target=opts.lora_target)
    config.update({
        "dataset_dir": str(export.path),
        "dataset": ",".join(train),
        "template": template,
        "cutoff_len": opts.cutoff_len,
        # Preprocess afresh each run: the launcher's truncation check sees every row only when nothing is cached.
        "overwrite_cache": True,
        "output_dir": str(Path(run_dir).resolve() / OUTPUT_DIR),
        "logging_steps": opts.logging_steps,
        "save_steps": opts.save_steps,
        "plot_loss": False,
        "per_device_train_batch_size": opts.per_device_train_batch_size,
        "gradient_accumulation_steps": opts.resolved_accumulation(),
        "learning_rate": opts.resolved_learning_rate(),
        "num_train_epochs": opts.num_train_epochs,
        "lr_scheduler_type": opts.lr_scheduler_type,
        "warmup_ratio": opts.resolved_warmup_ratio(),
        "bf16": resolved_bf16(opts, rc.device),
        "report_to": opts.report_to,
        "seed": opts.seed,
    })  # fmt: skip
    for name in sharding_files(run_dir, opts):
        if name == FSDP_FILE:
            config.update(fsdp=f"{opts.fsdp} auto_wrap", fsdp_config=str(Path(run_dir).resolve() / name))
        else:
            config["deepspeed"] = str(Path(run_dir).resolve() / name)
    if opts.max_steps is not None:
        config["max_steps"] = opts.max_steps
    if evals:
        config.update(eval_dataset=",".join(evals), per_device_eval_batch_size=opts.per_device_eval_batch_size,
                      eval_strategy="steps", eval_steps=opts.eval_steps or opts.save_steps)  # fmt: skip
    config.update(opts.extra)
    extras = {
        "think_weight": opts.think_weight,
        "weight_tool_calls": opts.weight_tool_calls,
        "run_dir": str(Path(run_dir).resolve()),
        "expected_rows": _rows(export, [*train, *evals]),
        "export_version": export.version,
        "manifest_sha256": export.manifest_sha256,
        # What the launcher's --check stands in for when it validates on another machine than the ranks'.
        "launch": {**rc.summary(), "torchrun": _under_torchrun(rc, opts), "bf16": config["bf16"]},
    }
    return config, extras


def _under_torchrun(rc: ResolvedCluster, opts: SFTOptions) -> bool:
    """Every GPU plan runs under torchrun (each rank owns one GPU, so LLaMA-Factory never sees several GPUs in one
    process); a CPU plan only when it has several processes."""
    return rc.device.kind == "cuda" or rc.distributed or opts.deepspeed != "none" or opts.fsdp != "none"


def plan_sft(export: ExportView, run_dir: Path, opts: SFTOptions, device: DeviceInfo | None = None) -> TrainPlan:
    """Everything a LLaMA-Factory SFT run needs (module docstring); ``TrainingError`` on bad input. ``device``:
    what this node offers (default: ``training.cluster.detect_device`` on the llamafactory environment)."""
    from training.envs import env_python

    run_dir = Path(run_dir)
    device = device or detect_device("llamafactory", opts.cluster)
    rc = resolve_cluster(opts.cluster, device)
    sharding = sharding_of(opts.deepspeed, opts.fsdp)
    if sharding != "none" and device.kind != "cuda":
        raise TrainingError(f"{'deepspeed' if opts.deepspeed != 'none' else 'fsdp'}={sharding.removeprefix('fsdp_')} "
                            f"shards the model over GPUs, but this plan's device is a CPU ({device.source}): set "
                            "cluster.device=cuda on a GPU node")  # fmt: skip
    config, extras = sft_config(export, run_dir, opts, rc)
    memory = check_memory_fit(model=config["model_name_or_path"], finetuning_type=opts.finetuning_type,
                              lora_rank=opts.lora_rank, sharding=sharding, rc=rc,
                              model_params_b=opts.cluster.model_params_b)  # fmt: skip
    notes = _notes(export, opts, config, rc, memory)
    config_path, extras_path = run_dir.resolve() / CONFIG_FILE, run_dir.resolve() / EXTRAS_FILE
    python, script = str(env_python("llamafactory")), launcher("llamafactory_sft.py")
    args = [str(config_path), "--hopforge", str(extras_path)]
    torchrun = extras["launch"]["torchrun"]
    return TrainPlan(
        trainer="llamafactory",
        env="llamafactory",
        run_dir=run_dir,
        files={CONFIG_FILE: dump_yaml(config),
               EXTRAS_FILE: json.dumps(extras, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
               **sharding_files(run_dir, opts)},
        argv=torchrun_argv(python, rc, script, args) if torchrun else [python, script, *args],
        config={"llamafactory": config, "hopforge": extras, "cluster": rc.summary(), "memory": memory,
                "launcher": "torchrun" if torchrun else "python", "versions": device.versions},
        export_version=export.version,
        manifest_sha256=export.manifest_sha256,
        output_dir=Path(config["output_dir"]),
        notes=notes,
    )  # fmt: skip


def _notes(export: ExportView, opts: SFTOptions, config: Mapping[str, Any], rc: ResolvedCluster,
           memory: Mapping[str, Any]) -> list[str]:  # fmt: skip
    notes = []
    names = [n for n in (config["dataset"] + "," + config.get("eval_dataset", "")).split(",") if n]
    chars, row_id = longest_row_chars(export, names)
    estimate = math.ceil(chars / CHARS_PER_TOKEN)
    if estimate > opts.cutoff_len:
        notes.append(f"the longest row ({row_id}, {chars} characters, about {estimate} tokens) is probably longer than "
                     f"cutoff_len {opts.cutoff_len}: the launcher will stop before training if it is")  # fmt: skip
    if opts.think_weight != 1.0 and config["template"] == "qwen3_nothink":
        notes.append("think_weight has no effect on no-think rows (they hold no <think> spans)")
    device = rc.device
    if not config["bf16"]:
        why = "set bf16=false" if opts.bf16 is False else (
            "the GPUs do not compute in bf16" if device.kind == "cuda" else "no GPU on this node")
        notes.append(f"bf16 is off ({why}; device from {device.source})")
    if rc.distributed:
        notes.append(f"{rc.world_size} processes ({rc.nnodes} node(s) x {rc.nproc_per_node}); effective batch "
                     f"{opts.per_device_train_batch_size * opts.resolved_accumulation() * rc.world_size} rows per "
                     "optimizer step")  # fmt: skip
    if rc.nnodes > 1:
        notes.append(f"node {rc.node_rank} of {rc.nnodes}: run the same command on every node with its own "
                     f"cluster.node_rank (and the same run id); the export {config['dataset_dir']} must be at that "
                     f"path on every node, and the run directory holding {config['output_dir']} must be one "
                     "directory every node sees (a shared file system: the data dir, or --shared-dir)")  # fmt: skip
    if device.kind == "cuda" and not memory.get("checked"):
        notes.append(f"memory fit not checked: model size {memory['params_from']}")
    return notes


def validate_sft_config(plan: TrainPlan, *, timeout_s: float = 300) -> dict[str, Any]:
    """LLaMA-Factory's own parser (``get_train_args``) on the plan's config, in the trainer environment. Writes the
    plan's files first. Returns the launcher's report; ``TrainingError`` with LLaMA-Factory's message on refusal."""
    from training.envs import require_env

    if plan.trainer != "llamafactory":
        raise TrainingError(f"validate_sft_config checks LLaMA-Factory plans, not {plan.trainer}")
    python = require_env(plan.env)
    plan.write()
    # One process, whatever the launch: the check stands in for rank 0 of the plan's cluster (the launcher's --check).
    argv = [str(python), launcher("llamafactory_sft.py"), str(plan.node_dir.resolve() / CONFIG_FILE), "--hopforge",
            str(plan.node_dir.resolve() / EXTRAS_FILE), "--check"]  # fmt: skip
    return run_trainer_check(plan, argv, timeout_s=timeout_s, what="LLaMA-Factory")


__all__ = ["MAX_LORA_RANK", "SFTOptions", "plan_sft", "resolved_bf16", "sft_config", "validate_sft_config",
           "longest_row_chars"]
