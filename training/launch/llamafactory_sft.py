"""Launch LLaMA-Factory SFT with hopforge's additions; runs inside the ``llamafactory`` trainer environment.

    python training/launch/llamafactory_sft.py <run_dir>/llamafactory.yaml --hopforge <run_dir>/hopforge_sft.json

The YAML is a plain LLaMA-Factory train config (``training.sft.plan_sft`` writes it; ``llamafactory-cli train``
would accept it as is). The JSON holds what LLaMA-Factory has no key for: ``think_weight``,
``weight_tool_calls``, ``run_dir``, ``expected_rows`` (rows per dataset name, from the export's manifest).

What this adds to ``run_exp()`` (called in this process: ``llamafactory-cli`` re-launches itself and would lose the
patches):

1. **No silent truncation, no dropped row.** LLaMA-Factory cuts rows longer than ``cutoff_len`` turn by turn
   (``SupervisedDatasetProcessor._encode_data_example``) and drops rows whose turns do not pair up. The launcher
   wraps that method to compare each row's encoded length, with the real tokenizer and template, to what is kept;
   any row longer than ``cutoff_len`` stops the run before the model is loaded, with the longest length and how
   many rows are too long. After preprocessing, the rows and tokens kept per split are written to
   ``<run_dir>/preprocess.json`` and compared with ``expected_rows``: a dropped row is an error too.
2. **The weighted think-token loss** (``weighted_loss.py``): LLaMA-Factory 0.9.5 has no config key for a custom
   loss, so ``CustomSeq2SeqTrainer`` is subclassed with ``WeightedLossTrainerMixin`` and replaced in
   ``llamafactory.train.sft.workflow``; the tag ids come from the run's tokenizer. Installed when
   ``think_weight != 1`` or tool calls are weighted (otherwise the loss is identical to LLaMA-Factory's own).
3. **The launcher contract** (``training.plan``): a callback appends ``{"step": ..., "loss": ...}`` lines to
   ``<run_dir>/metrics.jsonl``; ``<run_dir>/result.json`` says ``{"status": "ok", "checkpoint": <output_dir>}`` or
   ``{"status": "error", "error": <line>}``.

Under ``torchrun`` (``training.sft`` plans it for GPUs and for several processes) every rank runs this script, so
every rank installs the guard and the weighted loss before ``run_exp``; each rank records its node, host, what it
installed and how far it got in ``<run_dir>/ranks/rank-<RANK>.json`` (``run_dir`` is the run's shared directory, the
same on every node), and only global rank 0 writes ``preprocess.json``, ``metrics.jsonl`` and ``result.json`` (which
lists every rank's record, taken after all ranks met at the end of training, and the package versions). A rank
other than 0 exits 0 once it has trained: the run's result is rank 0's.

``--check`` only validates: LLaMA-Factory's parser on the config and the tokenizer's tag ids; it prints a JSON
report (also written to ``<run_dir>/check.json``). For a distributed plan it validates what rank 0 would read: the rendezvous variables torchrun would set
(``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``...) are set and a process group of the plan's world size is opened with
torch's in-process ``fake`` backend (no peers, no rendezvous), so ``get_train_args`` takes its distributed path and
transformers builds the DeepSpeed config (``HfTrainerDeepSpeedConfig``, its ``auto`` values filled) or the FSDP
arguments. On a machine without the plan's GPUs, bf16 support is taken from the plan's probe instead of this
machine. The report's ``validated`` and ``simulated`` lists say which is which. Expected failures (bad config, rows
too long, dropped rows, a tokenizer without the think tags) print one line ``error: ...`` and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _stubs  # noqa: E402,F401  (before llamafactory: it imports torchaudio at module level)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import yaml  # noqa: E402
from rank_records import global_rank, read_ranks, record_rank  # noqa: E402
from transformers import TrainerCallback  # noqa: E402
from weighted_loss import WeightedLossTrainerMixin, WeightedThinkLoss  # noqa: E402

METRICS_FILE = "metrics.jsonl"  # the names of training.plan's launcher contract (the core is not importable here)
RESULT_FILE = "result.json"
PREPROCESS_FILE = "preprocess.json"
PROBE_FILE = "probe_first_batch.pt"
CHECK_FILE = "check.json"
VERSIONED = ("torch", "transformers", "accelerate", "peft", "deepspeed", "llamafactory")


def versions() -> dict[str, str]:
    """Versions of the packages that decide how this environment trains (the ones installed)."""
    from installed import installed_versions

    return installed_versions(VERSIONED)


class LaunchError(Exception):
    """A run that must not start or go on; the message is the one line the user sees."""


# -- inputs ----------------------------------------------------------------------------------------------------------


def read_inputs(config_path: Path, extras_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
        extras = json.loads(extras_path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise LaunchError(f"{exc.filename} does not exist: write the run's files with `hopforge train sft`") from None
    except (yaml.YAMLError, ValueError) as exc:
        raise LaunchError(f"cannot read the run's config: {exc}") from None
    if not isinstance(config, dict) or not isinstance(extras, dict):
        raise LaunchError(f"{config_path} and {extras_path} must each hold a mapping")
    if config.get("stage") != "sft":
        raise LaunchError(f"{config_path} is not an SFT config (stage: {config.get('stage')!r})")
    return config, extras


def check_config(config: dict[str, Any]) -> Any:
    """LLaMA-Factory's own parser on the config (unknown keys, conflicting options); its error as a LaunchError."""
    from llamafactory.hparams import get_train_args

    try:
        return get_train_args(dict(config))
    except ValueError as exc:
        raise LaunchError(f"LLaMA-Factory rejects the config: {exc}") from None


# -- preprocessing guard ------------------------------------------------------------------------------------------


class PreprocessGuard:
    """Wraps ``SupervisedDatasetProcessor._encode_data_example``: every row's full encoded length (what the
    template produced before LLaMA-Factory's cut) against what is kept."""

    def __init__(self, cutoff_len: int, in_workers: bool) -> None:
        self.cutoff_len = cutoff_len
        self.in_workers = in_workers  # datasets.map in worker processes: counts made there never come back
        self.rows = 0
        self.too_long: list[tuple[int, str]] = []

    def install(self) -> None:
        from llamafactory.data.processor import supervised

        original = supervised.SupervisedDatasetProcessor._encode_data_example
        guard = self

        def encode_checked(processor, prompt, response, system, tools, images, videos, audios):
            lengths: list[int] = []
            template = processor.template
            real = template.encode_multiturn

            def measured(*args, **kwargs):
                pairs = real(*args, **kwargs)
                lengths.append(sum(len(s) + len(t) for s, t in pairs))
                return pairs

            template.encode_multiturn = measured  # this call only: the instance attribute shadows the method
            try:
                input_ids, labels = original(processor, prompt, response, system, tools, images, videos, audios)
            finally:
                del template.encode_multiturn
            full = (lengths[0] if lengths else len(input_ids)) + (1 if template.efficient_eos else 0)
            guard.rows += 1
            if full > len(input_ids):
                head = (prompt[0]["content"] if prompt else "")[:60].replace("\n", " ")
                guard.too_long.append((full, head))
                if guard.in_workers:
                    raise LaunchError(guard.message())
            return input_ids, labels

        supervised.SupervisedDatasetProcessor._encode_data_example = encode_checked

    def message(self) -> str:
        longest, head = max(self.too_long)
        return (f"{len(self.too_long)} row(s) are longer than cutoff_len {self.cutoff_len} (longest {longest} tokens, "
                f"starting {head!r}); LLaMA-Factory would truncate them: raise cutoff_len to at least {longest} "
                "or leave such rows out of the export")  # fmt: skip

    def check(self) -> None:
        if self.too_long:
            raise LaunchError(self.message())


def dataset_report(dataset_module: dict[str, Any]) -> dict[str, Any]:
    """Rows, tokens and active-label tokens LLaMA-Factory kept, per split (``train``, ``eval``...)."""
    report: dict[str, Any] = {}
    for key, part in (("train", dataset_module.get("train_dataset")), ("eval", dataset_module.get("eval_dataset"))):
        parts = part if isinstance(part, dict) else ({key: part} if part is not None else {})
        for name, ds in parts.items():
            label = key if name == key else f"{key}:{name}"
            report[label] = {
                "rows": len(ds),
                "tokens": int(sum(len(x) for x in ds["input_ids"])),
                "label_tokens": int(sum(sum(1 for v in x if v != -100) for x in ds["labels"])),
            }
    return report


def check_rows(report: dict[str, Any], config: dict[str, Any], expected: dict[str, int]) -> None:
    """Every row of the chosen datasets reached the trainer (packing merges rows: then only tokens count)."""
    if config.get("packing") or config.get("neat_packing") or config.get("max_samples"):
        return
    for key, names in (("train", config.get("dataset")), ("eval", config.get("eval_dataset"))):
        wanted = [n.strip() for n in str(names or "").split(",") if n.strip()]
        if not wanted or any(n not in expected for n in wanted):
            continue
        want = sum(expected[n] for n in wanted)
        got = sum(v["rows"] for k, v in report.items() if k == key or k.startswith(f"{key}:"))
        if got != want:
            raise LaunchError(f"LLaMA-Factory kept {got} of the {want} {key} rows of {', '.join(wanted)}: its "
                              "converter drops rows whose turns do not alternate (see its 'Dropped invalid example' "
                              "warnings above); export the data again")  # fmt: skip


# -- trainer -------------------------------------------------------------------------------------------------------


class MetricsCallback(TrainerCallback):
    """Appends every log the trainer makes as ``{"step": int, "<metric>": float, ...}`` to metrics.jsonl."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / METRICS_FILE
        self.last: dict[str, Any] = {}

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        row: dict[str, Any] = {"step": int(state.global_step)}
        for key, value in logs.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(float(value)):
                row[key] = float(value)
            elif isinstance(value, float):  # nan / inf: keep them visible as strings (JSON has no literal)
                row[key] = str(value)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, sort_keys=True) + "\n")
        self.last.update(row)


class FirstBatchProbe:
    """Saves the first training micro-batch's logits, labels and loss (``probe_first_batch``), so a test can
    recompute Algorithm 1 by hand on exactly what the trainer saw."""

    def __init__(self, loss: WeightedThinkLoss, path: Path) -> None:
        self.loss, self.path, self.done = loss, path, False

    def __call__(self, outputs, labels, num_items_in_batch=None):
        value = self.loss(outputs, labels, num_items_in_batch=num_items_in_batch)
        if not self.done:
            import torch

            logits = outputs["logits"] if isinstance(outputs, dict) else outputs[0]
            torch.save({"logits": logits.detach().float().cpu(), "labels": labels.detach().cpu(),
                        "loss": value.detach().float().cpu(), "num_items_in_batch": num_items_in_batch,
                        "think_ids": self.loss.think_ids, "tool_call_ids": self.loss.tool_call_ids,
                        "think_weight": self.loss.think_weight}, self.path)  # fmt: skip
            self.done = True
        return value


def install_trainer(extras: dict[str, Any], run_dir: Path, finetuning_args: Any) -> dict[str, Any]:
    """Replace LLaMA-Factory's SFT trainer with one that computes the weighted loss; return what was installed."""
    from llamafactory.train.sft import trainer as sft_trainer
    from llamafactory.train.sft import workflow

    weight = float(extras.get("think_weight", 1.0))
    tools = bool(extras.get("weight_tool_calls", False))
    if weight == 1.0 and not tools:
        return {"weighted_loss": False}
    own = [k for k in ("use_dft_loss", "use_eaft_loss", "use_asft_loss") if getattr(finetuning_args, k, False)]
    if own:
        raise LaunchError(f"think_weight={weight} cannot be combined with LLaMA-Factory's {', '.join(own)}: "
                          "choose one loss")  # fmt: skip
    probe = bool(extras.get("probe_first_batch", False))
    base = sft_trainer.CustomSeq2SeqTrainer

    class WeightedSeq2SeqTrainer(WeightedLossTrainerMixin, base):  # type: ignore[misc,valid-type]
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            try:
                loss = WeightedThinkLoss.from_tokenizer(self.processing_class, weight, tools)
            except ValueError as exc:
                raise LaunchError(str(exc)) from None
            self.weighted_loss = loss
            self.compute_loss_func = FirstBatchProbe(loss, run_dir / PROBE_FILE) if probe else loss

    workflow.CustomSeq2SeqTrainer = WeightedSeq2SeqTrainer
    return {"weighted_loss": True, "think_weight": weight, "weight_tool_calls": tools}


def install_dataset_report(run_dir: Path, config: dict[str, Any], extras: dict[str, Any],
                           guard: PreprocessGuard, report: dict[str, Any]) -> None:  # fmt: skip
    """Wrap the ``get_dataset`` the SFT workflow calls: check the guard and the row counts right after
    preprocessing, before the model is loaded."""
    from llamafactory.train.sft import workflow

    real = workflow.get_dataset

    def get_dataset_checked(*args, **kwargs):
        module = real(*args, **kwargs)
        guard.check()
        report.update(dataset_report(module))
        if global_rank() == 0:
            (run_dir / PREPROCESS_FILE).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n",
                                                   encoding="utf-8")  # fmt: skip
        check_rows(report, config, {k: int(v) for k, v in (extras.get("expected_rows") or {}).items()})
        return module

    workflow.get_dataset = get_dataset_checked


# -- main --------------------------------------------------------------------------------------------------------------


def launch(config_path: Path, extras_path: Path) -> dict[str, Any]:
    config, extras = read_inputs(config_path, extras_path)
    run_dir = Path(extras.get("run_dir") or config_path.parent)
    run_dir.mkdir(parents=True, exist_ok=True)
    _model_args, data_args, _training_args, finetuning_args, _gen = check_config(config)

    guard = PreprocessGuard(int(data_args.cutoff_len), in_workers=bool(data_args.preprocessing_num_workers))
    guard.install()
    report: dict[str, Any] = {}
    install_dataset_report(run_dir, config, extras, guard, report)
    installed = install_trainer(extras, run_dir, finetuning_args)
    record_rank(run_dir, {**installed, "status": "started"})
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not torch.cuda.is_available():
        restore_cpu_index_locations()
    metrics = MetricsCallback(run_dir)

    from llamafactory.train.tuner import run_exp

    started = time.monotonic()
    end = RankEndCallback(run_dir, installed)
    run_exp(args=dict(config), callbacks=[metrics, end])
    record_rank(run_dir, {**installed, "status": "ok", "global_step": end.global_step})
    output_dir = Path(config["output_dir"]).resolve()
    return {
        "status": "ok", "checkpoint": str(output_dir), "trainer": "llamafactory", "run_dir": str(run_dir),
        "seconds": round(time.monotonic() - started, 1), "preprocess": report, **installed,
        "final": {k: v for k, v in metrics.last.items() if k != "step"}, "global_step": metrics.last.get("step"),
        "versions": versions(), "ranks": read_ranks(run_dir),
    }  # fmt: skip


def restore_cpu_index_locations() -> None:
    """Let ``torch.load`` restore storages to a ``cpu:<index>`` location. Resuming a run of several CPU processes,
    transformers (5.6, ``Trainer._load_optimizer_and_scheduler``) loads the optimizer state with ``map_location`` =
    the process's device, which under torchrun on a CPU is ``cpu:0``: torch's default restore refuses that tag ("don't
    know how to restore data location"). On GPUs the location is ``cuda:<n>``, which torch restores itself."""
    def restore(storage: Any, location: str) -> Any:
        return storage if location.startswith("cpu:") else None

    torch.serialization.register_package(30, lambda _obj: None, restore)


class RankEndCallback(TrainerCallback):
    """At the end of training, while the process group is still up (LLaMA-Factory destroys it when ``run_exp``
    returns): every rank records that it trained, then all wait for each other, so rank 0's ``result.json`` lists
    every rank of every node as it ended."""

    def __init__(self, run_dir: Path, installed: dict[str, Any]) -> None:
        self.run_dir, self.installed = run_dir, installed
        self.global_step: int | None = None

    def on_train_end(self, args, state, control, **kwargs):
        self.global_step = int(state.global_step)
        record_rank(self.run_dir, {**self.installed, "status": "trained", "global_step": self.global_step})
        if dist.is_available() and dist.is_initialized():
            dist.barrier()


def check(config_path: Path, extras_path: Path) -> dict[str, Any]:
    """What ``--check`` reports: LLaMA-Factory's parser accepts the config, and when the weighted loss is on, the
    model's tokenizer has ``<think>``/``</think>`` (and the tool-call tags) as single tokens. Trains nothing."""
    config, extras = read_inputs(config_path, extras_path)
    launch_plan = extras.get("launch") or {}
    simulated = stand_in_for_ranks(launch_plan, config)
    model_args, data_args, training_args, finetuning_args, _gen = check_config(config)
    validated = check_distributed(launch_plan, training_args)
    weight = float(extras.get("think_weight", 1.0))
    tools = bool(extras.get("weight_tool_calls", False))
    if not (math.isfinite(weight) and weight >= 0):
        raise LaunchError(f"think_weight must be a finite number >= 0, got {weight}")
    report: dict[str, Any] = {"status": "ok", "stage": finetuning_args.stage, "template": data_args.template,
                              "dataset": data_args.dataset, "eval_dataset": data_args.eval_dataset,
                              "cutoff_len": data_args.cutoff_len, "finetuning_type": finetuning_args.finetuning_type,
                              "output_dir": training_args.output_dir, "bf16": training_args.bf16,
                              "world_size": training_args.world_size, "validated": validated,
                              "simulated": simulated, "versions": versions()}  # fmt: skip
    if (weight != 1.0 or tools) and Path(model_args.model_name_or_path).is_dir():
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)
        try:
            loss = WeightedThinkLoss.from_tokenizer(tokenizer, weight, tools)
        except ValueError as exc:
            raise LaunchError(str(exc)) from None
        report.update(think_ids=list(loss.think_ids), tool_call_ids=list(loss.tool_call_ids or []))
    return report


def stand_in_for_ranks(launch_plan: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """Make this one process look like rank 0 of the plan's launch to LLaMA-Factory's and transformers' parsers (for
    ``--check`` only); return what was simulated."""
    import torch

    simulated = []
    if launch_plan.get("torchrun"):
        import torch.distributed as dist
        from torch.testing._internal.distributed.fake_pg import FakeStore

        world, per_node = int(launch_plan["world_size"]), int(launch_plan["nproc_per_node"])
        rank = int(launch_plan.get("node_rank", 0)) * per_node
        os.environ.update(RANK=str(rank), LOCAL_RANK="0", WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(per_node),
                          GROUP_RANK=str(launch_plan.get("node_rank", 0)), MASTER_ADDR=str(launch_plan["master_addr"]),
                          MASTER_PORT=str(launch_plan["master_port"]))  # fmt: skip
        if not dist.is_initialized():
            dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world)
        simulated.append(f"rank {rank} of {world} under torchrun (rendezvous variables set, in-process fake process "
                         "group: no peers were reached)")  # fmt: skip
    device = (launch_plan.get("device") or {}).get("kind")
    if device == "cuda" and not torch.cuda.is_available():
        from transformers import training_args

        if config.get("bf16"):
            plan_bf16 = bool((launch_plan.get("device") or {}).get("bf16"))
            training_args.is_torch_bf16_gpu_available = lambda: plan_bf16
            simulated.append(f"bf16 support of the plan's GPUs ({plan_bf16}, as the plan says; this machine has no CUDA)")
        simulated.append("devices: the ranks would each own one CUDA device; here they are CPU")
    if config.get("deepspeed") and not torch.cuda.is_available():
        import deepspeed.comm.torch as ds_torch

        ds_torch.build_shm_op = lambda: None  # DeepSpeed's CPU shared-memory collectives: a C++ build no check needs
        simulated.append("DeepSpeed communication backend on CPU (its shared-memory op not built)")
    return simulated


def check_distributed(launch_plan: dict[str, Any], training_args: Any) -> list[str]:
    """What the parsed arguments show about the distributed launch, checked against the plan."""
    from transformers.training_args import ParallelMode

    validated = ["LLaMA-Factory get_train_args"]
    if not launch_plan.get("torchrun"):
        return validated
    want = int(launch_plan["world_size"])
    if training_args.parallel_mode != ParallelMode.DISTRIBUTED or training_args.world_size != want:
        raise LaunchError(f"the trainer sees {training_args.world_size} process(es) in mode "
                          f"{training_args.parallel_mode}, not the plan's {want} distributed ranks")  # fmt: skip
    validated.append(f"distributed mode with world size {want}")
    ds = getattr(training_args, "hf_deepspeed_config", None)
    if training_args.deepspeed:
        stage = ds.config["zero_optimization"]["stage"]
        batch = ds.config["train_batch_size"]
        expected = (training_args.per_device_train_batch_size * training_args.gradient_accumulation_steps * want)
        if batch != expected:
            raise LaunchError(f"DeepSpeed's train_batch_size {batch} is not per-device batch x accumulation x world "
                              f"size ({expected})")  # fmt: skip
        validated.append(f"DeepSpeed ZeRO-{stage} config through transformers' HfTrainerDeepSpeedConfig "
                         f"(train_batch_size {batch}, bf16 {ds.config['bf16']['enabled']})")  # fmt: skip
    if training_args.fsdp:
        validated.append(f"FSDP arguments ({' '.join(str(o.value) for o in training_args.fsdp)}, "
                         f"config {sorted(training_args.fsdp_config)})")  # fmt: skip
    return validated


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path, help="LLaMA-Factory train YAML")
    parser.add_argument("--hopforge", type=Path, required=True, help="hopforge_sft.json (think_weight, run_dir...)")
    parser.add_argument("--check", action="store_true", help="validate the config with LLaMA-Factory; train nothing")
    args = parser.parse_args(argv)
    result_dir = args.hopforge.parent
    if args.check:
        try:
            report = check(args.config, args.hopforge)
            (result_dir / CHECK_FILE).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            print(json.dumps(report, sort_keys=True))
        except LaunchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    try:
        result = launch(args.config, args.hopforge)
    except LaunchError as exc:
        if global_rank() == 0:
            _write_result(result_dir, {"status": "error", "error": str(exc)})
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if global_rank() != 0:
        return 0  # this rank trained; the run's result is rank 0's
    result["ranks"] = read_ranks(Path(result["run_dir"]))  # after the ranks' end barrier: every rank's record
    _write_result(Path(result.get("run_dir", result_dir)), result)
    print(json.dumps({k: result[k] for k in ("status", "checkpoint", "global_step")}))
    return 0


def _write_result(run_dir: Path, result: dict[str, Any]) -> None:
    if run_dir.is_dir():
        (run_dir / RESULT_FILE).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
