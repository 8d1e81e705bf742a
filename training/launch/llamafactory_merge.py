"""Merge a LoRA adapter into its base model with LLaMA-Factory's own exporter (run in the llamafactory env).

    python training/launch/llamafactory_merge.py <run_dir>/merge.yaml

The YAML holds LLaMA-Factory export arguments (``model_name_or_path``, ``adapter_name_or_path``, ``template``,
``finetuning_type: lora``, ``export_dir``). RL trainers and ``vllm serve`` without LoRA need the merged weights.
Writes ``result.json`` in the working directory (the run directory) as every hopforge launcher does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _stubs  # noqa: E402,F401  (before llamafactory: stands in for torchaudio)
import yaml  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: llamafactory_merge.py MERGE_YAML", file=sys.stderr)
        return 2
    args = yaml.safe_load(Path(argv[0]).read_text(encoding="utf-8"))
    from llamafactory.train.tuner import export_model

    export_model(args)
    out = Path(args["export_dir"])
    if not (out / "config.json").is_file():
        print(f"error: the exporter wrote no config.json to {out}", file=sys.stderr)
        return 1
    Path("result.json").write_text(json.dumps({"status": "ok", "checkpoint": str(out.resolve())}), encoding="utf-8")
    print(f"merged model: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
