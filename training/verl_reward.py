"""verl ``custom_reward_function`` entry point for hopforge RL rows.

Use with ``reward.custom_reward_function.path=pkg://training.verl_reward`` (what ``training.rl_verl.plan_verl``
writes: verl imports it by module name, from the copy of hopforge's packages Ray ships to each node) or a file path
to this file, and ``.name=compute_score`` (or ``.name=compute_score_batch`` with verl's ``batch`` reward manager,
which lets judge rewards ask one batch of verdicts at once). verl loads it in its reward workers, so it imports only
the standard library, pydantic and hopforge's light modules (``training.rewards``, ``schemas.answers``,
``schemas.tools``, ``tasks.env.tool_calls``): no torch, no prefect.

Which reward, first found wins: ``extra_info["reward"]`` (the row), the ``reward`` keyword (verl's
``custom_reward_function.reward_kwargs``), ``$HOPFORGE_REWARD``, ``omne_post_sft``. Its options:
``reward_kwargs`` keywords (``path_weight=0.3``), overridden by the row's ``extra_info["reward_kwargs"]``. An
option the chosen reward does not take raises ``RewardError``: a misspelt ``path_wieght`` must not be ignored.
``judge="gateway"`` gives ``kg_hopper`` the configured ``judge`` role.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# Loaded by file path, this file may run where the repository is not on sys.path (hopforge need not be installed
# in verl's environment): add the root this file lives in.
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from training.rewards import (  # noqa: E402 (after the sys.path set-up above)
    GroundTruth,
    Reward,
    RewardError,
    RewardResult,
    get_reward,
)

DEFAULT_REWARD = "omne_post_sft"
REWARD_ENV = "HOPFORGE_REWARD"
#: Keywords verl's reward loop passes to every custom reward function; they configure nothing here.
VERL_PLUMBING = frozenset({"reward_router_address", "reward_model_tokenizer"})


def reward_name(extra_info: Mapping[str, Any] | None, chosen: str | None = None) -> str:
    """The reward for a row: ``extra_info["reward"]``, else ``chosen`` (the ``reward`` keyword), else
    ``$HOPFORGE_REWARD``, else ``omne_post_sft``."""
    return (extra_info or {}).get("reward") or chosen or os.environ.get(REWARD_ENV) or DEFAULT_REWARD


def reward_options(extra_info: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The reward's options: ``kwargs`` less verl's own, then the row's ``extra_info["reward_kwargs"]``."""
    options = {k: v for k, v in kwargs.items() if k not in VERL_PLUMBING and k != "reward"}
    row = (extra_info or {}).get("reward_kwargs") or {}
    if not isinstance(row, Mapping):
        raise RewardError(f"extra_info['reward_kwargs'] must be a mapping, got {type(row).__name__}")
    return {**options, **row}


_BUILT: dict[tuple[str, tuple[tuple[str, str], ...]], Reward] = {}
_JUDGES: dict[str, Any] = {}


def _gateway_judge() -> Any:
    if "gateway" not in _JUDGES:
        from training.judges import GatewayJudge  # the gateway is imported only for judge rewards

        _JUDGES["gateway"] = GatewayJudge.from_settings()
    return _JUDGES["gateway"]


def build_reward(name: str, options: Mapping[str, Any]) -> Reward:
    """The reward ``name`` with ``options``, built once per distinct configuration (verl calls per row)."""
    opts = dict(options)
    if opts.get("judge") == "gateway":
        opts["judge"] = _gateway_judge()
    key = (name, tuple(sorted((k, repr(v)) for k, v in opts.items())))
    if key not in _BUILT:
        _BUILT[key] = get_reward(name, **opts)
    return _BUILT[key]


def _empty_result(reason: str) -> dict[str, float | int]:
    return RewardResult(score=0.0, empty_response=True, reason=reason).metrics()


def compute_score(
    data_source: str | None,
    solution_str: str | None,
    ground_truth: str | bytes | Mapping[str, Any] | Sequence[str],
    extra_info: dict[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float | int]:
    """``{"score": float, **numeric diagnostics}`` for one response (``training.rewards.RewardResult.metrics``:
    the same keys for every reward and every row, as verl stacks them per batch).

    ``ground_truth``: the exported JSON string, a decoded dict, a list of answers or a plain answer string
    (``GroundTruth.coerce``). A ``None`` or blank ``solution_str`` scores 0 with ``empty_response = 1``. A
    ground truth that cannot be read, an unknown reward or option raise ``RewardError``: configuration bugs
    that a silent 0 would hide. ``data_source`` is accepted and unused: every hopforge row is scored alike."""
    name = reward_name(extra_info, kwargs.get("reward"))
    reward = build_reward(name, reward_options(extra_info, kwargs))
    truth = GroundTruth.coerce(ground_truth)
    if solution_str is None or not str(solution_str).strip():
        return _empty_result("no solution" if solution_str is None else "empty solution")
    return reward(str(solution_str), truth).metrics()


def compute_score_batch(
    data_sources: Sequence[str | None],
    solution_strs: Sequence[str | None],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[dict[str, Any] | None] | None = None,
    **kwargs: Any,
) -> list[dict[str, float | int]]:
    """``compute_score`` over a batch (verl's ``batch`` reward manager). Rewards with a judge get every verdict
    of the batch asked for concurrently first (``GatewayJudge.prefetch``)."""
    extras = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    if not len(data_sources) == len(solution_strs) == len(ground_truths) == len(extras):
        raise RewardError("compute_score_batch: data_sources, solution_strs, ground_truths and extra_infos differ in length")
    if any(reward_options(e, kwargs).get("judge") == "gateway" for e in extras):
        _prefetch(solution_strs, ground_truths)
    return [compute_score(d, s, g, e, **kwargs) for d, s, g, e in zip(data_sources, solution_strs, ground_truths, extras)]


def _prefetch(solution_strs: Sequence[str | None], ground_truths: Sequence[Any]) -> None:
    from tasks.env.tool_calls import extract_answer, think_text

    items = []
    for s, g in zip(solution_strs, ground_truths):
        if s and s.strip():
            truth = GroundTruth.coerce(g)
            items.append((truth.question, think_text(s, case_sensitive=True), extract_answer(s, case_sensitive=True),
                          truth.answers))
    judge = _gateway_judge()
    judge.clear()
    judge.prefetch(items)


__all__ = ["DEFAULT_REWARD", "REWARD_ENV", "build_reward", "compute_score", "compute_score_batch", "reward_name",
           "reward_options"]
