"""Load a model's config and tokenizer as a trainer on this node will; runs inside a trainer environment.

    python training/launch/model_check.py <model directory or hub id>

``hopforge train ... --dry-run --check`` runs it before the trainer's own check, with the launch's environment
(``HF_HUB_OFFLINE`` set when the model is a local path or the run is offline), so a model that is neither on this
node nor reachable is one line before anything starts. A LoRA adapter (``adapter_config.json`` without
``config.json``) is checked through its base model's config and its own tokenizer. Prints one JSON line with what
was loaded, or ``error: <one line>`` on stderr and exits with status 2.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split("\n")[:2]).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def check(model: str) -> dict[str, object]:
    from transformers import AutoConfig, AutoTokenizer

    config_source = model
    adapter = Path(model) / "adapter_config.json"
    if adapter.is_file() and not (Path(model) / "config.json").is_file():
        config_source = json.loads(adapter.read_text(encoding="utf-8")).get("base_model_name_or_path") or model
    config = AutoConfig.from_pretrained(config_source)
    tokenizer = AutoTokenizer.from_pretrained(model)
    return {"status": "ok", "model": model, "config_from": config_source, "model_type": config.model_type,
            "tokens": len(tokenizer), "hub_offline": os.environ.get("HF_HUB_OFFLINE") == "1"}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: model_check.py <model directory or hub id>", file=sys.stderr)
        return 2
    try:
        report = check(args[0])
    except (OSError, ValueError, KeyError) as exc:  # what transformers raises for a model it cannot find or read
        print(f"error: {first_line(exc)}", file=sys.stderr)
        return 2
    print(json.dumps(report, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
