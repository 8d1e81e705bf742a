"""Omne-R1's weighted think-token loss (section 3.4.3, Algorithm 1), for LLaMA-Factory's SFT trainer.

Every target token gets a weight: ``w`` (``think_weight``; the paper's best is 0.001) on the tokens from
``<think>`` through ``</think>`` inclusive, optionally also on tool-call spans ``<tool_call>`` … ``</tool_call>``,
and 1 elsewhere. With ``mask`` = label is not -100 (after the usual causal shift: logits at position t predict the
label at t + 1)::

    loss = Σ(w · ce · mask) / Σ(w · mask)

The denominator is the *weighted* count of active tokens, so with w = 1 this is exactly the plain token-mean cross
entropy of transformers' ``ForCausalLMLoss``.

Spans are found from token ids, never by decoding: the ids of ``<think>``/``</think>`` (and ``<tool_call>``/
``</tool_call>``) come from the tokenizer, and each must be a single token. Only active targets count, and a span
never crosses an inactive (masked) token, so in multi-turn rows each assistant turn is handled on its own and
system, user and observation turns (masked by LLaMA-Factory) add nothing. Within one assistant turn:

- a ``<think>`` opens a span that ends at the next ``</think>`` (inclusive);
- a ``<think>`` that is never closed (a turn cut short) weights everything to the end of its turn;
- a ``</think>`` with no ``<think>`` before it in the turn (the opening tag sat in the prompt, as in templates
  that pre-fill it) weights the turn from its first token through that ``</think>``.

Gradient accumulation: transformers' ``Trainer`` collects the micro-batches of one optimizer step first and passes
``num_items_in_batch`` (the count of active labels over all of them) to ``compute_loss_func``, then sums the
micro-batch losses without dividing by the accumulation steps. ``WeightedLossTrainerMixin`` replaces that count
by the weighted count Σ(w · mask) over all micro-batches of the step (gathered across processes exactly as the
trainer gathers its own count), and the loss function divides each micro-batch's Σ(w · ce · mask) by it. The sum
over micro-batches is then Algorithm 1 over the whole effective batch, not a mean of per-micro-batch ratios.
Without ``num_items_in_batch`` (a direct call) the denominator is the batch's own Σ(w · mask).

Only torch is needed here; the launcher (``llamafactory_sft.py``) mixes the trainer part into LLaMA-Factory's
``CustomSeq2SeqTrainer``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

IGNORE_INDEX = -100
THINK_TOKENS = ("<think>", "</think>")
TOOL_CALL_TOKENS = ("<tool_call>", "</tool_call>")


# -- pure functions over tensors -------------------------------------------------------------------------------------


def shift_targets(labels: torch.Tensor, ignore_index: int = IGNORE_INDEX) -> torch.Tensor:
    """The causal targets: ``targets[:, t] = labels[:, t + 1]``, the last position padded with ``ignore_index``
    (as transformers' ``ForCausalLMLoss`` does)."""
    return F.pad(labels, (0, 1), value=ignore_index)[..., 1:]


def span_mask(targets: torch.Tensor, open_id: int, close_id: int, ignore_index: int = IGNORE_INDEX) -> torch.Tensor:
    """Boolean ``[batch, seq]``: active targets inside an ``open_id`` … ``close_id`` span (both tags included),
    by the rules of the module docstring. A turn is a run of consecutive active targets. Vectorised: no Python
    loop over tokens, so 6k-token rows cost a few tensor ops."""
    if targets.dim() == 1:
        return span_mask(targets.unsqueeze(0), open_id, close_id, ignore_index)[0]
    active = targets != ignore_index
    length = targets.size(-1)
    if length == 0:
        return active
    previous_active = F.pad(active[:, :-1], (1, 0), value=False)
    turn = torch.cumsum(active & ~previous_active, dim=1)  # id of the active run each position belongs to
    is_open = active & (targets == open_id)
    is_close = active & (targets == close_id)
    marker = is_open | is_close
    index = torch.arange(length, device=targets.device).expand_as(targets)

    # The last tag at or before t, if it is in t's turn: inside a span when that tag opened one.
    last = torch.cummax(torch.where(marker, index, torch.full_like(index, -1)), dim=1).values
    last_at = last.clamp_min(0)
    has_last = (last >= 0) & (turn.gather(1, last_at) == turn)
    after_open = has_last & is_open.gather(1, last_at)

    # No tag yet in this turn and the next tag in the turn is a closing one: its opener was in the prompt.
    following = torch.flip(torch.cummin(torch.flip(torch.where(marker, index, torch.full_like(index, length)), [1]),
                                        dim=1).values, [1])  # fmt: skip
    following_at = following.clamp_max(length - 1)
    orphan_prefix = (~has_last & (following < length) & (turn.gather(1, following_at) == turn)
                     & is_close.gather(1, following_at))  # fmt: skip

    return active & (after_open | is_close | orphan_prefix)


def token_weights(
    targets: torch.Tensor,
    think_ids: tuple[int, int],
    think_weight: float,
    tool_call_ids: tuple[int, int] | None = None,
    ignore_index: int = IGNORE_INDEX,
) -> torch.Tensor:
    """Float32 ``[batch, seq]``: ``think_weight`` on active targets in a think span (and in a tool-call span when
    ``tool_call_ids`` is given), 1 on other active targets, 0 on inactive ones (the mask is folded in)."""
    active = targets != ignore_index
    spans = span_mask(targets, *think_ids, ignore_index=ignore_index)
    if tool_call_ids is not None:
        spans = spans | span_mask(targets, *tool_call_ids, ignore_index=ignore_index)
    weights = torch.where(spans, torch.full(targets.shape, float(think_weight), device=targets.device),
                          torch.ones(targets.shape, device=targets.device))  # fmt: skip
    return weights * active


def weighted_token_loss(
    logits: torch.Tensor,
    labels: torch.Tensor,
    think_ids: tuple[int, int],
    think_weight: float,
    *,
    tool_call_ids: tuple[int, int] | None = None,
    denominator: torch.Tensor | float | None = None,
    ignore_index: int = IGNORE_INDEX,
) -> torch.Tensor:
    """Algorithm 1 on one batch: Σ(w · ce · mask) / Σ(w · mask), logits ``[batch, seq, vocab]`` and *unshifted*
    labels ``[batch, seq]``. ``denominator`` replaces this batch's Σ(w · mask) (the weighted count over every
    micro-batch of an optimizer step). A batch with nothing to learn gives 0 (with a graph), not NaN."""
    targets = shift_targets(labels.to(logits.device), ignore_index)
    weights = token_weights(targets, think_ids, think_weight, tool_call_ids, ignore_index)
    ce = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=ignore_index,
                         reduction="none")  # fmt: skip
    numerator = (ce * weights.reshape(-1)).sum()
    if denominator is None:
        denominator = weights.sum()
    denominator = torch.as_tensor(denominator, dtype=torch.float32, device=numerator.device)
    return numerator / denominator.clamp_min(torch.finfo(torch.float32).tiny)


# -- configured for one tokenizer ------------------------------------------------------------------------------------


def _single_token_id(tokenizer: Any, token: str) -> int:
    ids = tokenizer.encode(token, add_special_tokens=False)
    if len(ids) != 1:
        raise ValueError(f"the tokenizer splits {token!r} into {len(ids)} tokens {ids}: the weighted think-token loss "
                         "needs it to be one added token (a Qwen3-style tokenizer has it)")  # fmt: skip
    return int(ids[0])


@dataclass(frozen=True)
class WeightedThinkLoss:
    """The loss for one tokenizer's tag ids; an instance is transformers' ``compute_loss_func``."""

    think_ids: tuple[int, int]
    think_weight: float
    tool_call_ids: tuple[int, int] | None = None
    ignore_index: int = IGNORE_INDEX

    def __post_init__(self) -> None:
        if not (math.isfinite(self.think_weight) and self.think_weight >= 0):
            raise ValueError(f"think_weight must be a finite number >= 0, got {self.think_weight}")

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, think_weight: float, weight_tool_calls: bool = False) -> WeightedThinkLoss:
        """Tag ids from the tokenizer itself (``ValueError`` when a tag is not a single token)."""
        think = tuple(_single_token_id(tokenizer, t) for t in THINK_TOKENS)
        tool = tuple(_single_token_id(tokenizer, t) for t in TOOL_CALL_TOKENS) if weight_tool_calls else None
        return cls(think_ids=think, think_weight=float(think_weight), tool_call_ids=tool)  # type: ignore[arg-type]

    def weights(self, labels: torch.Tensor) -> torch.Tensor:
        """Per-target weights of unshifted ``labels`` (0 where masked)."""
        return token_weights(shift_targets(labels, self.ignore_index), self.think_ids, self.think_weight,
                             self.tool_call_ids, self.ignore_index)  # fmt: skip

    def denominator(self, labels_list: Sequence[torch.Tensor]) -> torch.Tensor:
        """Σ(w · mask) over several micro-batches' unshifted labels."""
        return sum((self.weights(labels).sum() for labels in labels_list), torch.zeros(()))

    def __call__(self, outputs: Any, labels: torch.Tensor, num_items_in_batch: Any = None) -> torch.Tensor:
        logits = outputs["logits"] if isinstance(outputs, Mapping) else outputs[0]
        return weighted_token_loss(logits, labels, self.think_ids, self.think_weight,
                                   tool_call_ids=self.tool_call_ids, denominator=num_items_in_batch,
                                   ignore_index=self.ignore_index)  # fmt: skip


# -- the trainer side ------------------------------------------------------------------------------------------------


class WeightedLossTrainerMixin:
    """Mix into a transformers ``Trainer`` subclass (before it in the bases) and set ``weighted_loss``: the trainer
    then computes its loss with it and hands it the weighted count of the optimizer step as
    ``num_items_in_batch`` (module docstring, "Gradient accumulation")."""

    weighted_loss: WeightedThinkLoss | None = None

    def _get_num_items_in_batch(self, batch_samples: list, device: Any) -> Any:
        loss = self.weighted_loss
        if loss is None or not batch_samples or "labels" not in batch_samples[0]:
            return super()._get_num_items_in_batch(batch_samples, device)  # type: ignore[misc]
        total = loss.denominator([batch["labels"] for batch in batch_samples]).to(device)
        args = self.args  # type: ignore[attr-defined]
        # Mirror the trainer's own reduction of its count across processes, so each process divides by the
        # global weighted count (the trainer multiplies the loss back by the process count).
        if args.average_tokens_across_devices:
            if args.world_size > 1:
                total = self.accelerator.gather(total.reshape(1)).sum()  # type: ignore[attr-defined]
        elif args.n_gpu > 1:
            total = total / args.n_gpu
        parallelism = getattr(self.accelerator, "parallelism_config", None)  # type: ignore[attr-defined]
        if parallelism is not None:
            total = total / parallelism.non_data_parallel_size
        return total
