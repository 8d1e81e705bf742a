"""The evaluation's modes and checkpoint contexts, named once for the evaluator, the flows and their parameter
models (``eval.evaluate`` says what each does)."""

from __future__ import annotations

from typing import Literal

Mode = Literal["tools", "no_tools", "gold_context"]
MODES: tuple[str, ...] = ("tools", "no_tools", "gold_context")

TrainedAs = Literal["think", "no_think"]

__all__ = ["MODES", "Mode", "TrainedAs"]
