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
bf16 on GPUs; ``bf16`` is off by default so the same plan runs on a CPU: set it on a GPU.

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

from training.plan import (
    ExportView,
    TrainingError,
    TrainPlan,
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
                           "model_name_or_path", "template", "finetuning_type"})  # fmt: skip
#: Characters per token assumed for the cutoff note; byte-level BPE on English averages about 4.
CHARS_PER_TOKEN = 4.0
EFFECTIVE_BATCH = 4


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
    lora_rank: int = Field(8, ge=1)
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
    bf16: bool = False
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


def sft_config(export: ExportView, run_dir: Path, opts: SFTOptions) -> tuple[dict[str, Any], dict[str, Any]]:
    """The LLaMA-Factory config and hopforge's extras for one run (no files written)."""
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
        "bf16": opts.bf16,
        "report_to": opts.report_to,
        "seed": opts.seed,
    })  # fmt: skip
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
    }
    return config, extras


def plan_sft(export: ExportView, run_dir: Path, opts: SFTOptions) -> TrainPlan:
    """Everything a LLaMA-Factory SFT run needs (module docstring); ``TrainingError`` on bad input."""
    from training.envs import env_python

    run_dir = Path(run_dir)
    config, extras = sft_config(export, run_dir, opts)
    notes = _notes(export, opts, config)
    config_path, extras_path = run_dir.resolve() / CONFIG_FILE, run_dir.resolve() / EXTRAS_FILE
    return TrainPlan(
        trainer="llamafactory",
        env="llamafactory",
        run_dir=run_dir,
        files={CONFIG_FILE: dump_yaml(config),
               EXTRAS_FILE: json.dumps(extras, indent=2, sort_keys=True, ensure_ascii=False) + "\n"},
        argv=[str(env_python("llamafactory")), launcher("llamafactory_sft.py"), str(config_path), "--hopforge",
              str(extras_path)],
        config={"llamafactory": config, "hopforge": extras},
        export_version=export.version,
        manifest_sha256=export.manifest_sha256,
        output_dir=Path(config["output_dir"]),
        notes=notes,
    )  # fmt: skip


def _notes(export: ExportView, opts: SFTOptions, config: Mapping[str, Any]) -> list[str]:
    notes = []
    names = [n for n in (config["dataset"] + "," + config.get("eval_dataset", "")).split(",") if n]
    chars, row_id = longest_row_chars(export, names)
    estimate = math.ceil(chars / CHARS_PER_TOKEN)
    if estimate > opts.cutoff_len:
        notes.append(f"the longest row ({row_id}, {chars} characters, about {estimate} tokens) is probably longer than "
                     f"cutoff_len {opts.cutoff_len}: the launcher will stop before training if it is")  # fmt: skip
    if opts.think_weight != 1.0 and config["template"] == "qwen3_nothink":
        notes.append("think_weight has no effect on no-think rows (they hold no <think> spans)")
    if not opts.bf16:
        notes.append("bf16 is off (CPU-safe); the paper trains in bf16: set bf16=true on a GPU")
    return notes


def validate_sft_config(plan: TrainPlan, *, timeout_s: float = 300) -> dict[str, Any]:
    """LLaMA-Factory's own parser (``get_train_args``) on the plan's config, in the trainer environment. Writes the
    plan's files first. Returns the launcher's report; ``TrainingError`` with LLaMA-Factory's message on refusal."""
    from training.envs import require_env

    if plan.trainer != "llamafactory":
        raise TrainingError(f"validate_sft_config checks LLaMA-Factory plans, not {plan.trainer}")
    python = require_env(plan.env)
    plan.write()
    return run_trainer_check(plan, [str(python), *plan.argv[1:], "--check"], timeout_s=timeout_s, what="LLaMA-Factory")


__all__ = ["SFTOptions", "plan_sft", "sft_config", "validate_sft_config", "longest_row_chars"]
