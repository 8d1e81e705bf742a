"""What of the GPU training path can be checked with torch and transformers alone, on a tiny random Qwen3.

    python3 bench/gpu_check.py --out DIR [--device cuda|cpu] [--sft-steps N]

The trainer stacks (LLaMA-Factory, TRL, verl, vLLM) are not installed on the machine lent for GPU checks, so
``make gpu-smoke`` cannot run there. This script checks the parts underneath them that can run with torch and
transformers only, each against something computed independently:

1. ``weighted_loss``: the Omne-R1 weighted think-token loss (``training/launch/weighted_loss.py``) through a
   transformers ``Trainer`` (``WeightedLossTrainerMixin``, bf16 autocast, 2 micro-batches of gradient accumulation,
   one optimizer step). The gradient the trainer hands its optimizer and the loss it logs are compared with a
   reference computed here in float32 over the whole effective batch: per-token cross entropy from
   ``torch.nn.functional.log_softmax``, weights from a plain Python loop over the labels (not the module's
   vectorised spans), Σ(w·ce·mask)/Σ(w·mask). Two wrong computations are measured too (the mean of the
   micro-batches' own ratios, and the unweighted token mean): the check passes only when the trainer is close to the
   reference and both wrong ones are far from it, so the tolerance can tell them apart.
2. ``sdpa``: the model saved and loaded back with ``attn_implementation="sdpa"`` (what hopforge's verl plans set when
   flash-attn is not importable) in bf16, and whether ``flash_attention_2`` loads here (the failure verl 0.9.1's
   default meets without flash-attn).
3. ``sft``: a short SFT of the sdpa-loaded model on a toy task (reverse four symbols, with a think block weighted
   0.001) through the same trainer; the held-out weighted loss and the exact match of the answer (greedy, after the
   prompt and the think block) before and after. Passes when the held-out loss fell by ``--min-loss-drop`` (25%)
   and EM rose by ``--min-em-gain`` (0.2).

``ok`` in ``<out>/gpu_check.json`` is true only when every check passed. Runs on a CPU too (``--device cpu``).
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import math
import platform
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from training.launch.weighted_loss import IGNORE_INDEX, WeightedLossTrainerMixin, WeightedThinkLoss  # noqa: E402

# Token ids of the toy vocabulary.
PAD, BOS, EOS, SEP, THINK, END_THINK = 0, 1, 2, 3, 4, 5
FIRST_SYMBOL, N_SYMBOLS = 10, 12
VOCAB = 64
THINK_WEIGHT = 0.001
#: Tolerance of the trainer's gradient against the float32 reference (relative L2): bf16 autocast rounds logits.
GRAD_TOLERANCE = 0.05
LOSS_TOLERANCE = 0.02


def tiny_qwen3(seed: int) -> Any:
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=128,
                         bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD, tie_word_embeddings=False)  # fmt: skip
    return Qwen3ForCausalLM(config)


class Rows(torch.utils.data.Dataset):
    def __init__(self, rows: list[dict[str, list[int]]]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {k: torch.tensor(v) for k, v in self.rows[i].items()}


def trainer_class() -> type:
    from transformers import Trainer

    class WeightedTrainer(WeightedLossTrainerMixin, Trainer):
        pass

    return WeightedTrainer


def training_args(out: Path, device: str, **kw: Any) -> Any:
    from transformers import TrainingArguments

    return TrainingArguments(output_dir=str(out), report_to="none", save_strategy="no", bf16=True,
                             use_cpu=device == "cpu", dataloader_num_workers=0, seed=0, data_seed=0,
                             disable_tqdm=True, **kw)  # fmt: skip


# -- 1. the weighted loss under gradient accumulation ---------------------------------------------------------------


def reference_weights(labels: list[int]) -> list[float]:
    """The weight of each causal target (target t = labels[t + 1]) by the rules of weighted_loss's docstring, in a
    plain loop: a turn is a run of active targets; <think> opens a span through the next </think>; an unclosed
    <think> runs to the turn's end; a </think> with no <think> before it in the turn weights the turn up to it."""
    targets = labels[1:] + [IGNORE_INDEX]
    weights = [0.0] * len(targets)
    t = 0
    while t < len(targets):
        if targets[t] == IGNORE_INDEX:
            t += 1
            continue
        end = t
        while end < len(targets) and targets[end] != IGNORE_INDEX:
            end += 1
        turn = list(range(t, end))
        inside = False
        seen_tag = False
        for i in turn:
            weights[i] = 1.0
        for i in turn:
            tok = targets[i]
            if tok == THINK:
                inside, seen_tag = True, True
                weights[i] = THINK_WEIGHT
            elif tok == END_THINK:
                if not seen_tag:  # opener in the prompt: the turn up to here
                    for j in turn:
                        if j > i:
                            break
                        weights[j] = THINK_WEIGHT
                else:
                    weights[i] = THINK_WEIGHT
                inside, seen_tag = False, True
            elif inside:
                weights[i] = THINK_WEIGHT
        t = end
    return weights


def accumulation_rows(seed: int, length: int = 40) -> list[dict[str, list[int]]]:
    """Four rows whose weighted counts differ a lot (so a per-micro-batch ratio differs from the step's ratio)."""
    rng = random.Random(seed)

    def sym(n: int) -> list[int]:
        return [FIRST_SYMBOL + rng.randrange(N_SYMBOLS) for _ in range(n)]

    prompt = 6
    bodies = [
        [THINK, *sym(30), END_THINK, *sym(2)],            # mostly think: small weighted count
        [*sym(1), THINK, *sym(length - prompt - 3)],       # unclosed think: smaller still
        sym(length - prompt - 1),                          # no think: full weight
        [*sym(20), END_THINK, *sym(length - prompt - 22)],  # orphan </think>: opener in the prompt
    ]  # fmt: skip
    rows = []
    for body in bodies:
        ids = ([BOS, *sym(prompt - 1)] + body + [EOS])[:length]
        ids += [EOS] * (length - len(ids))
        labels = [IGNORE_INDEX] * prompt + ids[prompt:]
        rows.append({"input_ids": ids, "labels": labels, "attention_mask": [1] * length})
    return rows


def reference_loss(model: Any, rows: list[dict[str, list[int]]], device: str) -> tuple[torch.Tensor, float]:
    """Σ(w·ce)/Σ(w) over all rows in float32, and Σ(w)."""
    ids = torch.tensor([r["input_ids"] for r in rows], device=device)
    logits = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits.float()
    num, den = torch.zeros((), device=device), 0.0
    for b, r in enumerate(rows):
        targets = r["labels"][1:] + [IGNORE_INDEX]
        w = reference_weights(r["labels"])
        logp = F.log_softmax(logits[b], dim=-1)
        for t, (tok, wt) in enumerate(zip(targets, w, strict=True)):
            if tok != IGNORE_INDEX and wt:
                num = num - wt * logp[t, tok]
                den += wt
    return num / den, den


def grads_of(model: Any) -> torch.Tensor:
    return torch.cat([p.grad.detach().float().reshape(-1) for p in model.parameters() if p.grad is not None])


def check_weighted_loss(device: str, work: Path) -> dict[str, Any]:
    from transformers import TrainerCallback

    rows = accumulation_rows(1)
    base = tiny_qwen3(0).to(device)
    loss_fn = WeightedThinkLoss(think_ids=(THINK, END_THINK), think_weight=THINK_WEIGHT)

    # the reference and two wrong computations, float32, no autocast
    def grad_of(compute) -> tuple[torch.Tensor, float]:
        model = copy.deepcopy(base)
        model.zero_grad()
        loss = compute(model)
        loss.backward()
        return grads_of(model), float(loss)

    g_ref, loss_ref = grad_of(lambda m: reference_loss(m, rows, device)[0])

    def mean_of_ratios(m: Any) -> torch.Tensor:  # rows 0+1 (little weight) and 2+3 (much) as two micro-batches
        parts = [reference_loss(m, rows[i:i + 2], device)[0] for i in (0, 2)]
        return sum(parts) / 2

    def unweighted(m: Any) -> torch.Tensor:
        ids = torch.tensor([r["input_ids"] for r in rows], device=device)
        labels = torch.tensor([r["labels"] for r in rows], device=device)
        logits = m(input_ids=ids).logits.float()
        return F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), labels[:, 1:].reshape(-1), ignore_index=IGNORE_INDEX)

    g_ratios, _ = grad_of(mean_of_ratios)
    g_plain, _ = grad_of(unweighted)

    captured: dict[str, Any] = {}

    class Capture(TrainerCallback):
        def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
            captured["grad"] = grads_of(model)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                captured["loss"] = float(logs["loss"])

    model = copy.deepcopy(base)
    cls = trainer_class()
    args = training_args(work / "accumulation", device, per_device_train_batch_size=2, gradient_accumulation_steps=2,
                         max_steps=1, learning_rate=1e-3, logging_steps=1, max_grad_norm=0.0)  # fmt: skip
    trainer = cls(model=model, args=args, train_dataset=Rows(rows), compute_loss_func=loss_fn, callbacks=[Capture()])
    trainer.weighted_loss = loss_fn
    trainer.train()
    g_trainer = captured["grad"]

    def rel(a: torch.Tensor, b: torch.Tensor) -> float:
        return float((a - b).norm() / b.norm())

    out = {
        "autocast": "bf16", "micro_batches": 2, "per_device_batch": 2, "rows": len(rows),
        "weighted_count": reference_loss(base, rows, device)[1],
        "loss_reference": loss_ref, "loss_trainer_logged": captured.get("loss"),
        "loss_rel_error": abs(captured["loss"] - loss_ref) / abs(loss_ref) if "loss" in captured else None,
        "grad_rel_error": rel(g_trainer, g_ref),
        "grad_cosine": float(F.cosine_similarity(g_trainer, g_ref, dim=0)),
        "wrong_mean_of_micro_batch_ratios_rel_error": rel(g_ratios, g_ref),
        "wrong_unweighted_mean_rel_error": rel(g_plain, g_ref),
        "grad_tolerance": GRAD_TOLERANCE, "loss_tolerance": LOSS_TOLERANCE,
    }  # fmt: skip
    out["ok"] = bool(out["loss_rel_error"] is not None and out["loss_rel_error"] < LOSS_TOLERANCE
                     and out["grad_rel_error"] < GRAD_TOLERANCE
                     and out["wrong_mean_of_micro_batch_ratios_rel_error"] > 4 * GRAD_TOLERANCE
                     and out["wrong_unweighted_mean_rel_error"] > 4 * GRAD_TOLERANCE)  # fmt: skip
    return out


# -- 2. sdpa, and flash-attn ----------------------------------------------------------------------------------------


def check_attention(device: str, work: Path) -> tuple[dict[str, Any], Any]:
    from transformers import AutoModelForCausalLM

    saved = work / "tiny-qwen3"
    tiny_qwen3(1).save_pretrained(saved)
    model = AutoModelForCausalLM.from_pretrained(saved, attn_implementation="sdpa", dtype=torch.bfloat16).to(device)
    out: dict[str, Any] = {"attn_implementation": model.config._attn_implementation, "dtype": str(model.dtype)}
    ids = torch.tensor([[BOS, *range(FIRST_SYMBOL, FIRST_SYMBOL + 8), EOS]], device=device)
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    out["loss"] = float(loss)
    out["grads_finite"] = all(bool(torch.isfinite(p.grad).all()) for p in model.parameters() if p.grad is not None)
    model.zero_grad()
    out["flash_attn_importable"] = importlib.util.find_spec("flash_attn") is not None
    try:
        AutoModelForCausalLM.from_pretrained(saved, attn_implementation="flash_attention_2", dtype=torch.bfloat16)
        out["flash_attention_2_loads"] = True
    except (ImportError, ValueError) as exc:  # transformers' refusal when flash-attn is missing or unusable here
        out["flash_attention_2_loads"] = False
        out["flash_attention_2_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    out["ok"] = out["attn_implementation"] == "sdpa" and math.isfinite(out["loss"]) and out["grads_finite"]
    return out, model


# -- 3. a short SFT that learns -------------------------------------------------------------------------------------


def toy_row(question: list[int]) -> dict[str, list[int]]:
    """BOS q SEP <think> sorted(q) </think> reversed(q) EOS; the loss covers everything after SEP."""
    ids = [BOS, *question, SEP, THINK, *sorted(question), END_THINK, *reversed(question), EOS]
    prompt = len(question) + 2
    return {"input_ids": ids, "labels": [IGNORE_INDEX] * prompt + ids[prompt:], "attention_mask": [1] * len(ids)}


def toy_split(seed: int, n_train: int, n_test: int) -> tuple[list[list[int]], list[list[int]]]:
    rng = random.Random(seed)
    seen: set[tuple[int, ...]] = set()
    questions = []
    while len(questions) < n_train + n_test:
        q = tuple(FIRST_SYMBOL + rng.randrange(N_SYMBOLS) for _ in range(4))
        if q not in seen:
            seen.add(q)
            questions.append(list(q))
    return questions[:n_train], questions[n_train:]


@torch.no_grad()
def held_out(model: Any, questions: list[list[int]], loss_fn: WeightedThinkLoss, device: str) -> dict[str, float]:
    """The weighted loss and the answer's exact match (greedy, after the prompt and the gold think block)."""
    model.eval()
    rows = [toy_row(q) for q in questions]
    ids = torch.tensor([r["input_ids"] for r in rows], device=device)
    labels = torch.tensor([r["labels"] for r in rows], device=device)
    with torch.autocast(device_type=device, dtype=torch.bfloat16):
        logits = model(input_ids=ids).logits
    loss = float(loss_fn({"logits": logits}, labels))
    answer_at = len(questions[0]) + 2 + len(questions[0]) + 2  # after BOS q SEP <think> sorted </think>
    context = ids[:, :answer_at]
    for _ in range(len(questions[0])):
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            nxt = model(input_ids=context).logits[:, -1].argmax(-1, keepdim=True)
        context = torch.cat([context, nxt], dim=1)
    gold = ids[:, answer_at:answer_at + len(questions[0])]
    em = float((context[:, answer_at:] == gold).all(dim=1).float().mean())
    model.train()
    return {"loss": round(loss, 4), "em": round(em, 4)}


def check_sft(model: Any, device: str, work: Path, steps: int, min_loss_drop: float, min_em_gain: float) -> dict[str, Any]:
    train_q, test_q = toy_split(7, 3000, 200)
    loss_fn = WeightedThinkLoss(think_ids=(THINK, END_THINK), think_weight=THINK_WEIGHT)
    model = model.float()  # fp32 master weights, bf16 autocast (Trainer's bf16)
    before = held_out(model, test_q, loss_fn, device)
    args = training_args(work / "sft", device, per_device_train_batch_size=32, gradient_accumulation_steps=2,
                         max_steps=steps, learning_rate=3e-3, lr_scheduler_type="cosine", warmup_steps=10,
                         logging_steps=max(1, steps // 10), weight_decay=0.0)  # fmt: skip
    trainer = trainer_class()(model=model, args=args, train_dataset=Rows([toy_row(q) for q in train_q]),
                              compute_loss_func=loss_fn)  # fmt: skip
    trainer.weighted_loss = loss_fn
    started = time.monotonic()
    output = trainer.train()
    seconds = time.monotonic() - started
    after = held_out(model, test_q, loss_fn, device)
    out = {"steps": steps, "effective_batch": 64, "train_rows": len(train_q), "held_out_rows": len(test_q),
           "think_weight": THINK_WEIGHT, "attn_implementation": model.config._attn_implementation,
           "before": before, "after": after, "train_loss": round(float(output.training_loss), 4),
           "seconds": round(seconds, 1), "min_loss_drop": min_loss_drop, "min_em_gain": min_em_gain,
           "loss_drop": round(1 - after["loss"] / before["loss"], 4), "em_gain": round(after["em"] - before["em"], 4)}  # fmt: skip
    out["ok"] = out["loss_drop"] >= min_loss_drop and out["em_gain"] >= min_em_gain
    return out


# -- main -----------------------------------------------------------------------------------------------------------


def environment(device: str) -> dict[str, Any]:
    import transformers

    env: dict[str, Any] = {"device": device, "python": platform.python_version(), "torch": torch.__version__,
                           "transformers": transformers.__version__}  # fmt: skip
    if device == "cuda":
        env.update(gpu=torch.cuda.get_device_name(0), cuda=torch.version.cuda, bf16=torch.cuda.is_bf16_supported())
    return env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="where gpu_check.json goes")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--sft-steps", type=int, default=300)
    ap.add_argument("--min-loss-drop", type=float, default=0.25)
    ap.add_argument("--min-em-gain", type=float, default=0.2)
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda but torch sees no CUDA device here; use --device cpu", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    report: dict[str, Any] = {"environment": environment(args.device)}
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        report["weighted_loss"] = check_weighted_loss(args.device, work)
        print("weighted_loss:", json.dumps(report["weighted_loss"]), flush=True)
        report["sdpa"], model = check_attention(args.device, work)
        print("sdpa:", json.dumps(report["sdpa"]), flush=True)
        report["sft"] = check_sft(model, args.device, work, args.sft_steps, args.min_loss_drop, args.min_em_gain)
        print("sft:", json.dumps(report["sft"]), flush=True)
    report["seconds"] = round(time.monotonic() - started, 1)
    report["ok"] = all(report[k]["ok"] for k in ("weighted_loss", "sdpa", "sft"))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_check.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"ok: {report['ok']} ({report['seconds']} s); report: {args.out / 'gpu_check.json'}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
