"""Rule-based RL rewards for hopforge's knowledge-graph QA rollouts.

Rewards follow two papers:

- *Omne-R1: Learning to Reason with Memory for Multi-hop Question Answering* — stage-1
  ``R = R_format × (0.1 + 0.9·R_result)`` and post-SFT ``R = (r_format + r_answer)/2 − 0.1·n_repeat``
  (a repeat is a tool call with the same name and arguments as an earlier one); exact match after whitespace
  stripping, the last ``<answer>`` wins.
- *Explore-on-Graph: Incentivizing Autonomous Exploration of Large Language Models on Knowledge Graphs with
  Path-refined Reward Modeling* — outcome reward = entity-set F1 between the ``<answer>[...]</answer>`` list and
  the gold set (0 without an answer tag), path reward = share of gold triples named in the ``<think>`` text,
  joined as ``(1−λ)·R_outcome + λ·R_path`` (λ = 0.2, their best). Their released code multiplies F1 by 0; here it
  counts with weight ``1−λ``.

Contract (STYLE.md habit 9): every reward is ``reward(solution_str, truth) -> RewardResult``; ``RewardResult.score``
is the one float the trainer optimises, the other fields are diagnostics. Rewards are picked by name from
``REWARDS``. The module imports only the standard library, pydantic and ``tasks.env.tool_calls`` (itself light) so
verl's reward workers can load it without torch, prefect or the graph stack.

This module is the single home of the answer-matching and path-mention rules (``normalize_answer``,
``answer_set_matches``, ``triple_mentioned``, ``path_coverage``): ``tasks.distill.trajectories`` imports them from here, so
trajectories are accepted by exactly the rule RL rewards them by.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from schemas.tools import CallError, ToolCall
from tasks.env.tool_calls import extract_answer, parse_answer_list, parse_tool_calls

# -- ground truth ------------------------------------------------------------------------------------------------


class GroundTruth(BaseModel):
    """``reward_model.ground_truth`` of an RL row, as ``tasks.export.datasets.rl_ground_truth`` writes it:
    ``{"answers": [str], "gold_paths": [[[s, r, o], ...], ...], "graph_type": str}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    answers: list[str] = Field(min_length=1)
    gold_paths: list[list[tuple[str, str, str]]] = Field(default_factory=list)
    graph_type: str

    @classmethod
    def parse(cls, raw: str | Mapping[str, Any]) -> GroundTruth:
        """From the exported JSON string (or an already decoded mapping: some loaders decode it)."""
        if isinstance(raw, (str, bytes)):
            return cls.model_validate_json(raw)
        return cls.model_validate(raw)


# -- result ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RewardResult:
    """One scored response. ``score`` is what is optimised; the rest is measured for every reward so logs from
    different rewards line up.

    - ``format_ok``: the response meets ``format_ok`` below.
    - ``answer``: the last ``<answer>`` content outside reasoning (``None``: no closed answer tag).
    - ``em``: the predicted entity set equals the gold set, both normalised.
    - ``f1``: entity-set F1 of the prediction against the gold answers (0.0 without an answer).
    - ``path_coverage``: best share, over gold paths, of triples named in the ``<think>`` text.
    - ``n_tool_calls`` / ``n_bad_calls`` / ``n_repeat``: calls read from the response, how many of them could
      not be read or bound, and how many repeat an earlier call's name and arguments.
    """

    score: float
    format_ok: bool
    answer: str | None
    em: bool
    f1: float
    path_coverage: float
    n_tool_calls: int
    n_bad_calls: int
    n_repeat: int

    def metrics(self) -> dict[str, float | int]:
        """The numeric fields only (``answer`` left out): trainers average these per batch, and a string would
        break that."""
        return {
            k: (float(v) if isinstance(v, bool) else v)
            for k, v in asdict(self).items()
            if k != "answer"
        }


Reward = Callable[[str, GroundTruth], RewardResult]


# -- answer matching and path mentions (shared with tasks.distill.trajectories) ------------------------------------------------

# Stripped from both ends of an answer: quotes, sentence punctuation and markdown emphasis that models wrap
# answers in. Brackets, '+', '#' are kept: they end real names ("C++", "Queen (band)").
_ANSWER_STRIP = " \t\r\n.,;:!?'\"`*_“”‘’«»„"


def normalize_answer(text: str) -> str:
    """The comparison key of an answer: NFKC, case folded, whitespace collapsed, surrounding punctuation and
    quotes stripped. Idempotent."""
    t = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    prev = None
    while prev != t:  # "'Paris.'" needs two rounds: quote, then the period inside it
        prev = t
        t = t.strip(_ANSWER_STRIP)
    return t


def answer_set_matches(predicted: str | None, gold: Sequence[str]) -> bool:
    """The predicted entity set (``parse_answer_list``) equals the gold set, both normalised."""
    want = {normalize_answer(g) for g in gold} - {""}
    got = {normalize_answer(i) for i in parse_answer_list(predicted)} - {""}
    return bool(want) and got == want


def _flat(text: str) -> str:
    return " ".join(text.casefold().split())


def relation_terms(relation: str) -> list[str]:
    """What counts as naming a relation: the whole text, or one of its comma-separated parts (a LightRAG
    relation has no label; its triple carries the keywords joined with ", ")."""
    whole = " ".join(relation.split())
    parts = [" ".join(p.split()) for p in relation.split(",")]
    return list(dict.fromkeys([whole, *(p for p in parts if len(p) >= 3)]))


def triple_mentioned(think: str, triple: Sequence[str]) -> bool:
    """Explore-on-Graph's test for one gold triple ``(s, r, o)``: subject, relation (label or one of its
    keywords) and object all appear in the text, case-insensitively, whitespace collapsed."""
    text = _flat(think)
    s, r, o = triple
    return (
        _flat(s) in text
        and _flat(o) in text
        and any(_flat(t) in text for t in relation_terms(r) if t)
    )


def path_coverage(think: str, triples: Sequence[Sequence[str]]) -> float:
    """The path reward: the share of ``triples`` mentioned in ``think`` (0.0 for no triples)."""
    if not triples:
        return 0.0
    return sum(triple_mentioned(think, t) for t in triples) / len(triples)


# -- reading a response -------------------------------------------------------------------------------------------

_THINK_BLOCK = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)


def think_text(text: str) -> str:
    """All reasoning in ``text``, joined by newlines: every closed ``<think>`` block, the part before a lone
    leading ``</think>`` (chat templates that open the block in the prompt) and an unclosed ``<think>`` to the
    end. Only reasoning counts for the path reward: tool observations echo triples verbatim, and crediting them
    would reward calling tools rather than reasoning over the results."""
    parts = [m.group(1) for m in _THINK_BLOCK.finditer(text)]
    rest = _THINK_BLOCK.sub("\n", text)
    lowered = rest.lower()
    start, end = lowered.find("<think>"), lowered.find("</think>")
    if end >= 0 and (start < 0 or end < start):
        parts.insert(0, rest[:end])
    if start >= 0:
        parts.append(rest[start + len("<think>") :])
    return "\n".join(parts)


def entity_f1(predicted: str | None, gold: Sequence[str]) -> float:
    """F1 between the predicted entity set (``parse_answer_list``) and the gold set, both normalised; 0.0 when
    either is empty (no answer tag means no prediction)."""
    want = {normalize_answer(g) for g in gold} - {""}
    got = {normalize_answer(i) for i in parse_answer_list(predicted)} - {""}
    hit = len(want & got)
    if not hit:
        return 0.0
    precision, recall = hit / len(got), hit / len(want)
    return 2 * precision * recall / (precision + recall)


def _unclosed_think(text: str) -> bool:
    return "<think>" in _THINK_BLOCK.sub("", text).lower()


def format_ok(
    answer: str | None, calls: Sequence[ToolCall | CallError], text: str
) -> bool:
    """Omne-R1's format rule as applied here. A response is well-formed when all of these hold:

    1. it has a closed ``<answer>...</answer>`` outside reasoning with non-empty content (a cut-off answer does
       not count: ``extract_answer``);
    2. every ``<tool_call>`` block outside reasoning reads as a call to a known tool with bindable arguments
       (no ``CallError``; Python-call or hermes JSON style, ``parse_tool_calls``);
    3. no ``<think>`` is left open (an open one means generation stopped mid-reasoning).

    The number of tool calls is not constrained: the repeat penalty, not the format, discourages waste."""
    return (
        bool(answer)
        and not any(isinstance(c, CallError) for c in calls)
        and not _unclosed_think(text)
    )


def measure(solution_str: str, truth: GroundTruth) -> RewardResult:
    """Every diagnostic for ``solution_str``, with ``score`` 0.0: rewards fill ``score`` from these fields."""
    answer = extract_answer(solution_str)
    calls = parse_tool_calls(solution_str)
    good = [c for c in calls if isinstance(c, ToolCall)]
    keys = [c.key() for c in good]
    think = think_text(solution_str)
    return RewardResult(
        score=0.0,
        format_ok=format_ok(answer, calls, solution_str),
        answer=answer,
        em=answer_set_matches(answer, truth.answers),
        f1=entity_f1(answer, truth.answers),
        # Any verified gold path is a valid way to the answer: credit the best-covered one.
        path_coverage=max(
            (path_coverage(think, p) for p in truth.gold_paths), default=0.0
        ),
        n_tool_calls=len(calls),
        n_bad_calls=len(calls) - len(good),
        n_repeat=len(keys)
        - len(set(keys)),  # first occurrence of a call is not a repeat
    )


def _with_score(m: RewardResult, score: float) -> RewardResult:
    return RewardResult(**{**asdict(m), "score": float(score)})


# -- rewards ------------------------------------------------------------------------------------------------------


def omne_stage1(solution_str: str, truth: GroundTruth) -> RewardResult:
    """Omne-R1 stage 1: ``R_format × (0.1 + 0.9·EM)``. In [0, 1]: 0 for a malformed response, 0.1 for a
    well-formed wrong one (the floor teaches the format before the answer), 1 for a well-formed right one."""
    m = measure(solution_str, truth)
    return _with_score(m, float(m.format_ok) * (0.1 + 0.9 * float(m.em)))


#: Penalty per repeated tool call in the post-SFT reward (Omne-R1).
REPEAT_PENALTY = 0.1


def omne_post_sft(solution_str: str, truth: GroundTruth) -> RewardResult:
    """Omne-R1 after SFT: ``(r_format + r_answer)/2 − 0.1·n_repeat``. At most 1; not clipped below (as in the
    paper), so the range is ``[−0.1·(n_tool_calls − 1), 1]``: each repeat of a call costs 0.1 more."""
    m = measure(solution_str, truth)
    return _with_score(
        m, (float(m.format_ok) + float(m.em)) / 2 - REPEAT_PENALTY * m.n_repeat
    )


#: Explore-on-Graph's best weight of the path term in ``(1−λ)·R_outcome + λ·R_path``.
DEFAULT_PATH_WEIGHT = 0.2


def eog_f1_path(path_weight: float = DEFAULT_PATH_WEIGHT) -> Reward:
    """Explore-on-Graph's joint reward ``(1−λ)·F1 + λ·path_coverage`` with ``λ = path_weight``; in [0, 1].

    Both terms count (their released code zeroes the F1 weight; that is a bug, not a design)."""
    if not 0.0 <= path_weight <= 1.0:
        raise ValueError(f"path_weight must be in [0, 1], got {path_weight}")

    def reward(solution_str: str, truth: GroundTruth) -> RewardResult:
        m = measure(solution_str, truth)
        return _with_score(
            m, (1.0 - path_weight) * m.f1 + path_weight * m.path_coverage
        )

    reward.__name__ = f"eog_f1_path_{path_weight:g}"
    return reward


REWARDS: dict[str, Reward] = {
    "omne_stage1": omne_stage1,
    "omne_post_sft": omne_post_sft,
    "eog_f1_path": eog_f1_path(),
}


def get_reward(name: str) -> Reward:
    """The reward registered as ``name``; ``KeyError`` naming the choices for an unknown one."""
    try:
        return REWARDS[name]
    except KeyError:
        raise KeyError(
            f"unknown reward {name!r}; choose one of {sorted(REWARDS)}"
        ) from None


__all__ = [
    "DEFAULT_PATH_WEIGHT",
    "REPEAT_PENALTY",
    "REWARDS",
    "GroundTruth",
    "Reward",
    "RewardResult",
    "answer_set_matches",
    "entity_f1",
    "eog_f1_path",
    "format_ok",
    "get_reward",
    "measure",
    "normalize_answer",
    "omne_post_sft",
    "omne_stage1",
    "path_coverage",
    "think_text",
    "triple_mentioned",
]
