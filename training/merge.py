"""Planning the merge of a LoRA adapter into its base model (LLaMA-Factory's exporter, in its own environment).

RL (verl, TRL) and a plain ``vllm serve`` start from full weights; after LoRA SFT the chain merges first. The merge
renders nothing, but LLaMA-Factory still takes a template: the adapter's own (its SFT run's), so the merged model
is recorded with the format it was trained in (``training.serve.recorded_format`` reads it back).
"""

from __future__ import annotations

from pathlib import Path

from training.envs import env_python
from training.plan import TrainingError, TrainPlan, dump_yaml, launcher
from training.serve import Checkpoint, describe_checkpoint, recorded_format


def plan_merge(adapter_dir: str | Path | Checkpoint, run_dir: Path, *, template: str | None = None,
               base_model: str | None = None, export_version: str = "", manifest_sha256: str = "") -> TrainPlan:  # fmt: skip
    """A plan whose launch writes ``<run_dir>/merged`` = base model + adapter (a directory, or a ``Checkpoint`` an
    SFT run has yet to write, to plan a chain ahead). ``template`` defaults to the one the adapter's SFT run trained
    with (``qwen3`` when no run record holds the adapter)."""
    ckpt = adapter_dir if isinstance(adapter_dir, Checkpoint) else describe_checkpoint(adapter_dir)
    if ckpt.kind != "lora":
        raise TrainingError(f"{adapter_dir} is not a LoRA adapter (no adapter_config.json): nothing to merge")
    base = base_model or ckpt.base_model
    if not base:
        raise TrainingError(f"LoRA adapter {adapter_dir} does not name its base model: pass base_model")
    if template is None:
        recorded = recorded_format(ckpt.path)
        template = recorded.template if recorded is not None and recorded.template else "qwen3"
    out = run_dir / "merged"
    args = {"model_name_or_path": base, "adapter_name_or_path": ckpt.path, "template": template,
            "finetuning_type": "lora", "export_dir": str(out), "trust_remote_code": True}  # fmt: skip
    return TrainPlan(trainer="llamafactory", env="llamafactory", run_dir=run_dir, files={"merge.yaml": dump_yaml(args)},
                     argv=[str(env_python("llamafactory")), launcher("llamafactory_merge.py"), str(run_dir / "merge.yaml")],
                     config=args, export_version=export_version, manifest_sha256=manifest_sha256, output_dir=out)  # fmt: skip
