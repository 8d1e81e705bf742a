"""verl ``custom_reward_function`` entry point for hopforge RL rows.

Use with ``reward.custom_reward_function.path=training/verl_reward.py`` and ``.name=compute_score``. verl loads
this file by path in its reward workers, so it imports only the standard library, pydantic and hopforge's light
modules (``training.rewards``, ``tasks.env.tool_calls``, ``schemas.tools``): no torch, no prefect.

The reward is chosen per row by ``extra_info["reward"]`` when present, else by the ``HOPFORGE_REWARD``
environment variable, else ``omne_post_sft``; names are those of ``training.rewards.REWARDS``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

# verl imports this file by path from its own working directory, where the repository may not be on
# sys.path (hopforge need not be installed in verl's environment): add the root this file lives in.
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from training.rewards import GroundTruth, get_reward  # noqa: E402 (after the sys.path set-up above)

DEFAULT_REWARD = "omne_post_sft"
REWARD_ENV = "HOPFORGE_REWARD"


def reward_name(extra_info: dict[str, Any] | None) -> str:
    """The reward for a row: ``extra_info["reward"]``, else ``$HOPFORGE_REWARD``, else ``omne_post_sft``."""
    chosen = (extra_info or {}).get("reward")
    return chosen or os.environ.get(REWARD_ENV) or DEFAULT_REWARD


def compute_score(
    data_source: str | None,
    solution_str: str,
    ground_truth: str | dict[str, Any],
    extra_info: dict[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float | int]:
    """``{"score": float, **numeric diagnostics}`` for one response (see ``training.rewards.RewardResult``).

    ``ground_truth`` is the exported JSON string (a decoded dict is accepted too). A malformed ground truth or
    an unknown reward name raises: both are configuration bugs that a silent 0 would hide. ``data_source`` and
    extra keyword arguments verl may pass are accepted and ignored: every hopforge row is scored the same way.
    """
    truth = GroundTruth.parse(ground_truth)
    result = get_reward(reward_name(extra_info))(solution_str, truth)
    return (
        result.metrics()
    )  # contains "score"; only numbers, as verl averages every key over the batch
