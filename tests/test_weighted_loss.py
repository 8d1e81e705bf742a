"""The Omne-R1 weighted think-token loss (Algorithm 1): spans from token ids, hand computations, accumulation."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from training.launch.weighted_loss import (
    IGNORE_INDEX,
    WeightedLossTrainerMixin,
    WeightedThinkLoss,
    span_mask,
    token_weights,
    weighted_token_loss,
)

M = IGNORE_INDEX
VOCAB = 9
THINK, END_THINK, CALL, END_CALL = 5, 6, 7, 8  # tag ids of a toy vocabulary: 0..4 are plain tokens
IDS = (THINK, END_THINK)


def fixed_logits(batch: int, seq: int, seed: int = 7) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(batch, seq, VOCAB, generator=gen, dtype=torch.float32) * 2


def hand_loss(logits: torch.Tensor, labels: torch.Tensor, weights: list[list[float]]) -> float:
    """Algorithm 1 written out with Python floats: target t+1 predicted at t, weight per target position."""
    num = den = 0.0
    for b, row in enumerate(labels.tolist()):
        for t in range(len(row) - 1):
            target = row[t + 1]
            if target == M:
                continue
            scores = logits[b, t].tolist()
            top = max(scores)
            log_z = top + math.log(sum(math.exp(s - top) for s in scores))
            ce = log_z - scores[target]
            num += weights[b][t] * ce
            den += weights[b][t]
    return num / den


# Two rows, unshifted labels as LLaMA-Factory writes them: prompt and observation turns masked (-100).
# Row 0 is multi-turn: assistant turn 1 = <think> 1 2 </think> <tool_call> 3 </tool_call>, an observation (masked),
# assistant turn 2 = <think> 4 </think> 2 1. Row 1: one turn without a think block, then padding.
LABELS = torch.tensor([
    [M, M, THINK, 1, 2, END_THINK, CALL, 3, END_CALL, M, M, M, THINK, 4, END_THINK, 2, 1],
    [M, M, M, 3, 1, 2, 4, M, M, M, M, M, M, M, M, M, M],
])  # fmt: skip


def expected_weights(w: float, *, tools: bool = False) -> list[list[float]]:
    """Per target position (target = label at t + 1), written from the rows above by reading them."""
    c = w if tools else 1.0
    row0 = [0, w, w, w, w, c, c, c, 0, 0, 0, w, w, w, 1, 1, 0]  # t=16 has no target
    row1 = [0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    return [row0, row1]


# -- spans -------------------------------------------------------------------------------------------------------------


def test_think_spans_cover_tags_inclusive_in_each_assistant_turn():
    targets = LABELS[:, 1:]
    got = span_mask(targets, THINK, END_THINK).int().tolist()
    assert got[0] == [0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0]
    assert got[1] == [0] * 16


def test_spans_never_cross_masked_turns_and_handle_unclosed_and_orphan_tags():
    row = torch.tensor([
        THINK, 1, END_THINK, 2,        # a closed span, then the answer
        M, THINK, 1,                   # observation masked; next turn opens <think> and is cut off: weight to its end
        M, 3, END_THINK, 4,            # <think> sat in the prompt: the turn up to </think> is reasoning
        M, 1, 2,                       # a turn with no tags
        M, THINK, END_THINK, THINK,    # an empty block, then an unclosed one at the end of the row
    ])  # fmt: skip
    got = span_mask(row, THINK, END_THINK).int().tolist()
    assert got == [1, 1, 1, 0, 0, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1]


def test_an_open_span_stops_at_the_end_of_its_turn():
    # The next assistant turn starts plain even though the previous one never closed its <think>.
    row = torch.tensor([THINK, 1, M, M, 1, 2, M])
    assert span_mask(row, THINK, END_THINK).int().tolist() == [1, 1, 0, 0, 0, 0, 0]


def test_token_weights_fold_in_the_mask_and_the_tool_call_option():
    targets = LABELS[:, 1:]
    for w in (0.1, 0.001):
        plain = token_weights(targets, IDS, w).flatten().tolist()
        with_tools = token_weights(targets, IDS, w, (CALL, END_CALL)).flatten().tolist()
        assert plain == pytest.approx([x for r in expected_weights(w) for x in r[:16]])
        assert with_tools == pytest.approx([x for r in expected_weights(w, tools=True) for x in r[:16]])


# -- the loss ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("w", [0.1, 0.001, 1.0])
def test_loss_equals_the_hand_computation(w):
    logits = fixed_logits(2, LABELS.size(1))
    got = weighted_token_loss(logits, LABELS, IDS, w).item()
    assert got == pytest.approx(hand_loss(logits, LABELS, expected_weights(w)), rel=1e-6)
    loss = WeightedThinkLoss(think_ids=IDS, think_weight=w, tool_call_ids=(CALL, END_CALL))
    got_tools = loss({"logits": logits}, LABELS).item()
    assert got_tools == pytest.approx(hand_loss(logits, LABELS, expected_weights(w, tools=True)), rel=1e-6)


def test_weight_one_is_the_plain_token_mean_cross_entropy():
    # transformers' ForCausalLMLoss without num_items_in_batch: shift, then mean CE over labels != -100.
    logits = fixed_logits(2, LABELS.size(1), seed=3)
    plain = F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), LABELS[:, 1:].reshape(-1), ignore_index=M)
    got = WeightedThinkLoss(think_ids=IDS, think_weight=1.0, tool_call_ids=(CALL, END_CALL))((logits,), LABELS)
    assert got.item() == pytest.approx(plain.item(), rel=1e-6)
    # ... and with the trainer's count of active labels as num_items_in_batch (its sum reduction).
    count = (LABELS != M).sum()
    got_n = WeightedThinkLoss(think_ids=IDS, think_weight=1.0)((logits,), LABELS, num_items_in_batch=count)
    summed = F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), LABELS[:, 1:].reshape(-1), ignore_index=M,
                             reduction="sum")  # fmt: skip
    assert got_n.item() == pytest.approx((summed / count).item(), rel=1e-6)


def test_a_lower_think_weight_moves_the_loss_towards_the_answer_tokens():
    logits = fixed_logits(2, LABELS.size(1), seed=11)
    # As w -> 0 only the tokens outside think spans count.
    answer_only = [[1.0 if x == 1 else 0.0 for x in row] for row in expected_weights(0.001)]
    tiny = weighted_token_loss(logits, LABELS, IDS, 1e-9).item()
    assert tiny == pytest.approx(hand_loss(logits, LABELS, answer_only), rel=1e-5)


def test_rows_without_think_tokens_give_the_plain_loss_for_any_weight():
    labels = LABELS[1:].clone()
    logits = fixed_logits(1, labels.size(1), seed=5)
    plain = weighted_token_loss(logits, labels, IDS, 1.0).item()
    for w in (0.1, 0.001):
        assert weighted_token_loss(logits, labels, IDS, w).item() == pytest.approx(plain, rel=1e-6)


def test_unclosed_think_weights_to_the_end_of_the_turn():
    labels = torch.tensor([[M, M, THINK, 1, 2, 3, M, M]])
    logits = fixed_logits(1, labels.size(1), seed=9)
    weights = [[0, 0.1, 0.1, 0.1, 0.1, 0, 0, 0]]
    assert weighted_token_loss(logits, labels, IDS, 0.1).item() == pytest.approx(hand_loss(logits, labels, weights))


def test_all_masked_batch_gives_zero_and_a_usable_gradient():
    logits = fixed_logits(1, 6).requires_grad_()
    loss = weighted_token_loss(logits, torch.full((1, 6), M), IDS, 0.001)
    assert loss.item() == 0.0 and math.isfinite(loss.item())
    loss.backward()
    assert torch.count_nonzero(logits.grad) == 0


def test_gradient_accumulation_with_the_weighted_count_equals_the_full_batch():
    """Two micro-batches, each divided by the weighted count of both (what the trainer mixin passes as
    num_items_in_batch), sum to the full-batch loss and gradient; a mean of per-micro-batch ratios does not."""
    loss_fn = WeightedThinkLoss(think_ids=IDS, think_weight=0.001, tool_call_ids=None)
    base = fixed_logits(2, LABELS.size(1), seed=13)
    full_logits = base.clone().requires_grad_()
    full = loss_fn({"logits": full_logits}, LABELS)
    full.backward()

    parts = base.clone().requires_grad_()
    denominator = loss_fn.denominator([LABELS[:1], LABELS[1:]])
    assert denominator.item() == pytest.approx(sum(sum(r) for r in expected_weights(0.001)))
    step = sum(loss_fn({"logits": parts[i : i + 1]}, LABELS[i : i + 1], num_items_in_batch=denominator) for i in (0, 1))
    step.backward()
    assert step.item() == pytest.approx(full.item(), rel=1e-6)
    assert torch.allclose(parts.grad, full_logits.grad, atol=1e-7)
    naive = sum(loss_fn({"logits": base[i : i + 1]}, LABELS[i : i + 1]) for i in (0, 1)) / 2
    assert abs(naive.item() - full.item()) > 1e-3


# -- tokenizer ids and the trainer mixin -------------------------------------------------------------------------------


class ToyTokenizer:
    """Encodes tag strings with a fixed table; anything else splits into one id per character."""

    def __init__(self, table):
        self.table = table

    def encode(self, text, add_special_tokens=False):
        return [self.table[text]] if text in self.table else [1] * len(text)


def test_tag_ids_come_from_the_tokenizer():
    tok = ToyTokenizer({"<think>": 41, "</think>": 42, "<tool_call>": 43, "</tool_call>": 44})
    loss = WeightedThinkLoss.from_tokenizer(tok, 0.001, weight_tool_calls=True)
    assert loss.think_ids == (41, 42) and loss.tool_call_ids == (43, 44) and loss.think_weight == 0.001
    assert WeightedThinkLoss.from_tokenizer(tok, 0.5).tool_call_ids is None


def test_a_tokenizer_that_splits_the_tags_is_refused():
    with pytest.raises(ValueError, match=r"splits '<think>' into 7 tokens.*one added token"):
        WeightedThinkLoss.from_tokenizer(ToyTokenizer({}), 0.001)


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf")])
def test_bad_weights_are_refused(bad):
    with pytest.raises(ValueError, match="think_weight must be a finite number >= 0"):
        WeightedThinkLoss(think_ids=IDS, think_weight=bad)


class FakeTrainer:
    """The part of transformers' Trainer the mixin relies on."""

    def __init__(self):
        self.args = SimpleNamespace(average_tokens_across_devices=True, world_size=1, n_gpu=1)
        self.accelerator = SimpleNamespace(parallelism_config=None)

    def _get_num_items_in_batch(self, batch_samples, device):
        return sum((b["labels"] != M).sum() for b in batch_samples)


class WeightedFake(WeightedLossTrainerMixin, FakeTrainer):
    pass


def test_trainer_mixin_hands_the_weighted_count_of_the_step_to_the_loss():
    trainer = WeightedFake()
    batches = [{"labels": LABELS[:1]}, {"labels": LABELS[1:]}]
    assert trainer._get_num_items_in_batch(batches, "cpu") == (LABELS != M).sum()  # no loss installed: unchanged
    trainer.weighted_loss = WeightedThinkLoss(think_ids=IDS, think_weight=0.1)
    got = trainer._get_num_items_in_batch(batches, "cpu")
    assert got.item() == pytest.approx(sum(sum(r) for r in expected_weights(0.1)))
