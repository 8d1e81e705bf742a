"""LLM judges for the KG-Hopper rewards (KG-Hopper §III-C eqs. 3–4), through hopforge's gateway (role ``judge``).

``GatewayJudge`` implements ``training.rewards.Judge``. Verdicts are asked for in batches (``prefetch``: one
concurrent ``gateway.gather`` over a batch, the endpoint's concurrency limit pacing it) and are cached twice: in
the gateway's content-addressed response cache (a rerun asks nothing) and in memory for the batch being scored.
A failed call gives ``None``, which the reward records as "judge unavailable", never as a silent 0 or 1.

The gateway (and with it ``openai``) is imported only when a judge is built, so ``training.rewards`` stays light.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from gateway.client import LLMGateway

#: The judge's view of the reasoning is capped: the judge sees the first and last parts of a long trace.
MAX_REASONING_CHARS = 12_000


class ReasoningVerdict(BaseModel):
    """f_r: how sound the reasoning is, 0 (unsound) to 1 (sound)."""

    score: float = Field(ge=0.0, le=1.0)
    reason: str = Field(default="", max_length=600)


class AnswerVerdict(BaseModel):
    """f_a: whether the predicted answer means the gold answer."""

    correct: bool
    reason: str = Field(default="", max_length=600)


def _clip(text: str, limit: int = MAX_REASONING_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters left out ...]\n{text[-half:]}"


def reasoning_messages(question: str | None, reasoning: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": (
            "You grade the reasoning of a model that answers a question by searching a knowledge graph. Good "
            "reasoning uses the retrieved facts when they suffice, picks a sensible next entity or relation to "
            "look up when they do not, and falls back on its own knowledge only when the graph lacks the facts. "
            "Score from 0 (unsound or off topic) to 1 (sound at every step). Reply with JSON: "
            '{"score": number, "reason": "one sentence"}.')},
        {"role": "user", "content": f"Question: {question or '(not given)'}\n\nReasoning:\n{_clip(reasoning)}"},
    ]  # fmt: skip


def answer_messages(question: str | None, predicted: str, gold: Sequence[str]) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": (
            "You check answers. Decide whether the predicted answer names the same thing as the gold answer: "
            "another name, an abbreviation or a spelling of it counts; a different, broader or narrower thing does "
            'not. Reply with JSON: {"correct": true or false, "reason": "one sentence"}.')},
        {"role": "user", "content": (f"Question: {question or '(not given)'}\nGold answer: {' | '.join(gold)}\n"
                                     f"Predicted answer: {_clip(predicted, 2000)}")},
    ]  # fmt: skip


class GatewayJudge:
    """``Judge`` over the gateway's ``judge`` role (see the module docstring)."""

    def __init__(self, gateway: LLMGateway, role: str = "judge"):
        self.gateway = gateway
        self.role = role
        self._reasoning: dict[tuple[str | None, str], float | None] = {}
        self._answers: dict[tuple[str | None, str, tuple[str, ...]], bool | None] = {}

    @classmethod
    def from_settings(cls, role: str = "judge") -> GatewayJudge:
        """A judge on the configured settings (``HOPFORGE_...`` environment and config file)."""
        from gateway.client import LLMGateway
        from schemas.config import load_settings

        return cls(LLMGateway(load_settings()), role)

    async def _reasoning_call(self, question: str | None, reasoning: str) -> float | None:
        res = await self.gateway.structured(self.role, reasoning_messages(question, reasoning), ReasoningVerdict,
                                            name="reasoning_verdict")
        return res.value.score if res.ok else None

    async def _answer_call(self, question: str | None, predicted: str, gold: Sequence[str]) -> bool | None:
        res = await self.gateway.structured(self.role, answer_messages(question, predicted, gold), AnswerVerdict,
                                            name="answer_verdict")
        return res.value.correct if res.ok else None

    async def aprefetch(self, items: Iterable[tuple[str | None, str, str | None, Sequence[str]]]) -> None:
        """Ask every verdict a batch needs at once: items are ``(question, reasoning, answer, gold)``."""
        r_keys: list[tuple[str | None, str]] = []
        a_keys: list[tuple[str | None, str, tuple[str, ...]]] = []
        r_calls, a_calls = [], []
        for question, reasoning, answer, gold in items:
            rk = (question, reasoning)
            if rk not in self._reasoning and rk not in r_keys:
                r_keys.append(rk)
                r_calls.append(self._reasoning_call(question, reasoning))
            if answer:
                ak = (question, answer, tuple(gold))
                if ak not in self._answers and ak not in a_keys:
                    a_keys.append(ak)
                    a_calls.append(self._answer_call(question, answer, gold))
        results = await self.gateway.gather([*r_calls, *a_calls])
        for key, value in zip(r_keys, results[: len(r_keys)]):
            self._reasoning[key] = value
        for key, value in zip(a_keys, results[len(r_keys) :]):
            self._answers[key] = value

    def prefetch(self, items: Iterable[tuple[str | None, str, str | None, Sequence[str]]]) -> None:
        from gateway.client import run_sync

        run_sync(self.aprefetch(list(items)))

    def reasoning_score(self, question: str | None, reasoning: str) -> float | None:
        key = (question, reasoning)
        if key not in self._reasoning:
            self.prefetch([(question, reasoning, None, ())])
        return self._reasoning[key]

    def answer_correct(self, question: str | None, predicted: str, gold: Sequence[str]) -> bool | None:
        key = (question, predicted, tuple(gold))
        if key not in self._answers:
            from gateway.client import run_sync

            self._answers[key] = run_sync(self._answer_call(question, predicted, gold))
        return self._answers[key]

    def clear(self) -> None:
        """Forget the in-memory verdicts (the gateway cache keeps them): call between batches."""
        self._reasoning.clear()
        self._answers.clear()


__all__ = ["AnswerVerdict", "GatewayJudge", "ReasoningVerdict", "answer_messages", "reasoning_messages"]
