"""A tiny random Qwen3-style causal LM and its tokenizer, built locally for CPU tests of the trainers.

No hub download: the model is ``Qwen3ForCausalLM`` with random weights (hidden size 64, two layers), the tokenizer
a byte-level BPE trained with ``tokenizers`` on hopforge's demo corpus plus chat and tool markup. It carries
Qwen3's special and added tokens (``<|im_start|>``, ``<|im_end|>``, ``<|endoftext|>``, ``<think>``, ``</think>``,
``<tool_call>``, ``</tool_call>``, ``<tool_response>``, ``</tool_response>`` ...), each one token id, and a
Qwen3-style chat template (tools, ``reasoning_content``, ``enable_thinking``) in ``tokenizer_config.json``, so
LLaMA-Factory's ``qwen3`` templates, TRL and verl all see the token layout of a real Qwen3 checkpoint.

Run inside any trainer environment: ``python training/launch/tiny_model.py OUT_DIR [--seed N]``. The same seed
gives the same tokenizer and weights.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS = REPO_ROOT / "flows" / "demo" / "corpus"

#: Special tokens (never split, dropped by ``skip_special_tokens``), as in Qwen3.
SPECIAL_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>",
    "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>",
    "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
)  # fmt: skip
#: Added tokens that are text the model writes (kept when decoding), as in Qwen3.
ADDED_TOKENS = (
    "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
)  # fmt: skip

# Qwen2/3's pre-tokenizer split: contractions, words with one leading non-letter, single digits, punctuation runs,
# newlines, spaces. Splitting like the real model keeps token boundaries (and so loss masks) realistic.
SPLIT_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

# The chat template, Qwen3's layout in our own wording. Tools go into the first system turn as one JSON schema per
# line inside <tools>; an assistant turn is an optional <think> block, its text, then one <tool_call> JSON per
# call; consecutive tool results share one user turn, each in <tool_response>. enable_thinking=false pre-fills an
# empty think block in the generation prompt, which is how Qwen3 switches reasoning off.
CHAT_TEMPLATE = r"""{%- set msgs = messages -%}
{%- set sys_text = none -%}
{%- if msgs and msgs[0].role == 'system' -%}
{%- set sys_text = msgs[0].content -%}
{%- set msgs = msgs[1:] -%}
{%- endif -%}
{%- if tools -%}
{{- '<|im_start|>system\n' -}}
{%- if sys_text -%}{{- sys_text + '\n\n' -}}{%- endif -%}
{{- '# Tools\n\nThese functions are available to you. Their signatures follow, inside <tools></tools>:\n<tools>' -}}
{%- for tool in tools -%}{{- '\n' + (tool | tojson) -}}{%- endfor -%}
{{- '\n</tools>\n\nTo call a function, write a JSON object with its name and arguments between <tool_call> and </tool_call>:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' -}}
{%- elif sys_text is not none -%}
{{- '<|im_start|>system\n' + sys_text + '<|im_end|>\n' -}}
{%- endif -%}
{%- for message in msgs -%}
{%- if message.role == 'user' or message.role == 'system' -%}
{{- '<|im_start|>' + message.role + '\n' + (message.content or '') + '<|im_end|>\n' -}}
{%- elif message.role == 'assistant' -%}
{%- set body = message.content or '' -%}
{%- set thought = none -%}
{%- if message.reasoning_content is defined and message.reasoning_content is not none -%}
{%- set thought = message.reasoning_content -%}
{%- elif '</think>' in body -%}
{%- set thought = body.split('</think>')[0].split('<think>')[-1] -%}
{%- set body = body.split('</think>')[-1] -%}
{%- endif -%}
{{- '<|im_start|>assistant\n' -}}
{%- if thought is not none -%}
{{- '<think>\n' + (thought | trim) + '\n</think>\n\n' -}}
{%- endif -%}
{{- body | trim -}}
{%- if message.tool_calls -%}
{%- for call in message.tool_calls -%}
{%- set fn = call.function if call.function is defined else call -%}
{%- if body | trim or not loop.first -%}{{- '\n' -}}{%- endif -%}
{{- '<tool_call>\n{"name": "' + fn.name + '", "arguments": ' -}}
{%- if fn.arguments is string -%}{{- fn.arguments -}}{%- else -%}{{- fn.arguments | tojson -}}{%- endif -%}
{{- '}\n</tool_call>' -}}
{%- endfor -%}
{%- endif -%}
{{- '<|im_end|>\n' -}}
{%- elif message.role == 'tool' -%}
{%- if loop.first or msgs[loop.index0 - 1].role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
{{- '\n<tool_response>\n' + (message.content or '') + '\n</tool_response>' -}}
{%- if loop.last or msgs[loop.index0 + 1].role != 'tool' -%}{{- '<|im_end|>\n' -}}{%- endif -%}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- if enable_thinking is defined and enable_thinking is false -%}{{- '<think>\n\n</think>\n\n' -}}{%- endif -%}
{%- endif -%}"""

# Markup the tokenizer must see often enough to learn compact merges for it.
_MARKUP_SAMPLES = (
    '<|im_start|>system\nYou answer questions about a knowledge graph with tools.<|im_end|>\n',
    '<|im_start|>user\nWhich college did the author of On Computable Numbers study at?<|im_end|>\n',
    '<|im_start|>assistant\n<think>\nI look up the paper first, then its author.\n</think>\n\n'
    '<tool_call>\n{"name": "entity_matcher", "arguments": {"node_name": "On Computable Numbers", "graph_type": "cs"}}'
    '\n</tool_call><|im_end|>\n',
    '<|im_start|>user\n<tool_response>\nEntity: Alan Turing\nDescription: mathematician\n</tool_response><|im_end|>\n',
    '<|im_start|>assistant\n<think>\n\n</think>\n\n<answer>["King\'s College, Cambridge"]</answer><|im_end|>\n',
    '{"name": "node_info", "arguments": {"node_name": "Alan Turing", "graph_type": "cs"}}',
    '{"type": "function", "function": {"name": "node_info", "description": "Entity and neighbours", '
    '"parameters": {"type": "object", "properties": {"node_name": {"type": "string"}}, "required": ["node_name"]}}}',
)


def training_text() -> list[str]:
    """The local text the tokenizer learns from: the demo corpus (sorted, so the result is reproducible) and
    chat/tool markup."""
    texts = [p.read_text(encoding="utf-8") for p in sorted(CORPUS.rglob("*")) if p.is_file()]
    return texts + list(_MARKUP_SAMPLES) * 20


def build_tokenizer(vocab_size: int = 2048):
    """A byte-level BPE ``PreTrainedTokenizerFast`` with Qwen3's special tokens after the learned vocabulary."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])  # fmt: skip
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)  # fmt: skip
    tok.train_from_iterator(training_text(), trainer=trainer)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in ADDED_TOKENS])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None, unk_token=None,
        model_max_length=32768, clean_up_tokenization_spaces=False, split_special_tokens=False,
        chat_template=CHAT_TEMPLATE,
    )  # fmt: skip


def build_tiny_model(out_dir: str | Path, *, seed: int = 0, vocab_size: int = 2048) -> Path:
    """Write a tiny random Qwen3 model (safetensors) and its tokenizer to ``out_dir``; return the directory."""
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(vocab_size)
    torch.manual_seed(seed)
    # Embedding rows rounded up to a multiple of 64, as real checkpoints pad them; every token id is < vocab_size.
    rows = -(-len(tokenizer) // 64) * 64
    config = Qwen3Config(
        vocab_size=rows, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=8192, rope_theta=1_000_000.0,
        tie_word_embeddings=True, bos_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, torch_dtype="float32",
    )  # fmt: skip
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=config.bos_token_id, eos_token_id=[tokenizer.eos_token_id, config.bos_token_id],
        pad_token_id=tokenizer.pad_token_id, do_sample=False,
    )  # fmt: skip
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    _template_into_tokenizer_config(out)
    return out


def _template_into_tokenizer_config(out: Path) -> None:
    """Keep the chat template in ``tokenizer_config.json`` (where older transformers, vLLM and verl read it);
    newer transformers write ``chat_template.jinja`` instead, which would take precedence if both existed. The
    class is named ``PreTrainedTokenizerFast``, which every transformers version resolves (5.x's own name for it,
    ``TokenizersBackend``, is unknown to 4.x)."""
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    cfg["chat_template"] = CHAT_TEMPLATE
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg_path.write_text(json.dumps(cfg, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    jinja = out / "chat_template.jinja"
    if jinja.exists():
        jinja.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vocab-size", type=int, default=2048)
    args = parser.parse_args(argv)
    print(build_tiny_model(args.out_dir, seed=args.seed, vocab_size=args.vocab_size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
