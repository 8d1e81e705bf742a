"""A Hugging Face model directory from a GGUF file, with Qwen3's chat markup, for the GPU smoke chain.

    python training/launch/gguf_model.py MODEL.gguf OUT_DIR [--chat-template FILE]

transformers reads a GGUF (``from_pretrained(dir, gguf_file=name)``, which needs the ``gguf`` package) into full
precision weights and a tokenizer. The embedded default's SmolLM2-135M-Instruct knows ChatML (``<|im_start|>``,
``<|im_end|>``) but not Qwen3's ``<think>``, ``</think>``, ``<tool_call>``, ``</tool_call>``, ``<tool_response>`` and
``</tool_response>``: they are added as tokens (one id each, kept when decoding, as in Qwen3) and the embeddings
resized, so LLaMA-Factory's ``qwen3`` template, verl's hermes tool parser and vLLM's ``qwen3`` reasoning parser (which
finds ``</think>`` by token id) all see Qwen3's layout. The chat template becomes ``--chat-template`` (default:
Qwen3's own, as TRL ships it for recognising Qwen3 checkpoints), because SmolLM2's renders neither tools nor
reasoning. Runs in a trainer environment with torch, transformers and gguf (the TRL one in ``make gpu-smoke``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

QWEN3_MARKUP = ("<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")


def default_chat_template() -> str:
    import trl

    path = Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja"
    if not path.is_file():
        raise SystemExit(f"error: TRL ships no Qwen3 chat template at {path}: pass --chat-template FILE")
    return path.read_text(encoding="utf-8")


def plain_model(loaded):
    """The dequantized GGUF weights in an ordinary model of the same config. transformers keeps a model read from a
    GGUF tied to its GGUF quantizer, which it refuses to save (``save_pretrained``: "not serializable"), although
    with ``dequantize`` every weight is already a dense tensor under its usual name."""
    from transformers import AutoModelForCausalLM

    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, torch_dtype=loaded.dtype)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    tied = set(getattr(model, "_tied_weights_keys", None) or [])
    if unexpected or set(missing) - tied:
        raise SystemExit(f"error: the GGUF weights do not fill the model: missing {sorted(set(missing) - tied)[:5]}, "
                         f"unexpected {sorted(unexpected)[:5]}")  # fmt: skip
    model.tie_weights()
    return model


def convert(gguf: Path, out: Path, chat_template: str) -> dict:
    try:
        import gguf as _gguf  # noqa: F401 (transformers needs it to read the file)
    except ImportError:
        raise SystemExit(f"error: reading {gguf.name} needs the gguf package in this environment: the GPU "
                         "flavour of the trl environment pins it (`python -m training.envs create trl --flavour "
                         "gpu`)") from None  # fmt: skip
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = plain_model(AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name,
                                                             quantization_config=GgufConfig(dequantize=True)))
    added = tok.add_tokens([t for t in QWEN3_MARKUP if t not in tok.get_vocab()])
    if added:
        model.resize_token_embeddings(len(tok))
    tok.chat_template = chat_template
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    ids = {t: tok.convert_tokens_to_ids(t) for t in QWEN3_MARKUP}
    return {"status": "ok", "model": str(out.resolve()), "architecture": model.config.architectures,
            "parameters": sum(p.numel() for p in model.parameters()), "vocab": len(tok), "added_tokens": added,
            "markup_ids": ids}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gguf", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--chat-template", type=Path, help="Jinja chat template file; default: Qwen3's")
    args = parser.parse_args(argv)
    if not args.gguf.is_file():
        raise SystemExit(f"error: GGUF file {args.gguf} does not exist")
    template = args.chat_template.read_text(encoding="utf-8") if args.chat_template else default_chat_template()
    print(json.dumps(convert(args.gguf.resolve(), args.out, template)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
