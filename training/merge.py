"""Planning the merge of a LoRA adapter into its base model (LLaMA-Factory's exporter, in its own environment).

RL (verl, TRL) and a plain ``vllm serve`` start from full weights; after LoRA SFT the chain merges first.
"""

from __future__ import annotations

from pathlib import Path

from training.envs import env_python
from training.plan import TrainingError, TrainPlan, dump_yaml, launcher
from training.serve import describe_checkpoint


def plan_merge(adapter_dir: str | Path, run_dir: Path, *, template: str = "qwen3", base_model: str | None = None,
               export_version: str = "", manifest_sha256: str = "") -> TrainPlan:  # fmt: skip
    """A plan whose launch writes ``<run_dir>/merged`` = base model + adapter."""
    ckpt = describe_checkpoint(adapter_dir)
    if ckpt["kind"] != "lora":
        raise TrainingError(f"{adapter_dir} is not a LoRA adapter (no adapter_config.json): nothing to merge")
    base = base_model or ckpt["base_model"]
    if not base:
        raise TrainingError(f"LoRA adapter {adapter_dir} does not name its base model: pass base_model")
    out = run_dir / "merged"
    args = {"model_name_or_path": base, "adapter_name_or_path": ckpt["path"], "template": template,
            "finetuning_type": "lora", "export_dir": str(out), "trust_remote_code": True}  # fmt: skip
    return TrainPlan(trainer="llamafactory", env="llamafactory", run_dir=run_dir, files={"merge.yaml": dump_yaml(args)},
                     argv=[str(env_python("llamafactory")), launcher("llamafactory_merge.py"), str(run_dir / "merge.yaml")],
                     config=args, export_version=export_version, manifest_sha256=manifest_sha256, output_dir=out)  # fmt: skip
