"""How hard a question is, measured: a solver model's pass rate over k attempts, with the KG tools and without.

Two seeds use difficulty. KG-Hopper drops questions every rollout already answers ("history resampling": their
rewards are uniformly high, so GRPO's normalised advantage is near zero and they teach nothing); it samples 16
rollouts at temperature 1. Omne-R1 reports accuracy per hop class (1/2-hop vs 3+). hopforge measures both per
question: ``k`` attempts by the ``solver`` (the ``policy`` role by default) through the same tool loop and
closed-book baseline the evaluator uses (``eval.evaluate.evaluate_item``), and stores the pass rates and a label.

Labels (``label_for``): ``trivial`` when every attempt without tools is right (the model knows it by heart, so
the graph is not needed: the export drops these by default), else by the pass rate with tools: ``easy`` (>= 3/4),
``medium`` (>= 1/4), ``hard`` (> 0), ``unsolved`` (0).

Each attempt is its own cached LLM call: the attempt index is the request's ``seed``, so the k requests differ
(the cache key holds the parameters) and a re-run repeats none of them. An attempt the endpoint did not answer is
not a wrong answer: a question with such an attempt gets no row, so the next run measures it again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa
from pydantic import BaseModel, ConfigDict

from eval.evaluate import EvalConfig, EvalItem, evaluate_item
from schemas.errors import InputError
from schemas.qa import QA, GoldPath
from tasks.env.agent_loop import ChatGateway, ToolRunner

LABELS: tuple[str, ...] = ("trivial", "easy", "medium", "hard", "unsolved")
SOLVER_MODES: tuple[str, ...] = ("tools", "no_tools")


class DifficultyError(InputError):
    """A difficulty setting that cannot work, worded for a person."""


@dataclass(frozen=True)
class DifficultyConfig:
    """``k`` attempts per mode at ``temperature`` by ``role``; tool-loop limits as in evaluation."""

    k: int = 4
    modes: tuple[str, ...] = SOLVER_MODES
    temperature: float = 1.0  # KG-Hopper's rollout temperature: at 0 the k attempts would be one answer k times
    role: str = "policy"
    max_rounds: int = 7
    max_tokens_per_round: int = 3000
    seed: int = 0

    def check(self) -> DifficultyConfig:
        if self.k < 1:
            raise DifficultyError(f"solver k must be >= 1, got {self.k}")
        unknown = [m for m in self.modes if m not in SOLVER_MODES]
        if unknown or not self.modes:
            raise DifficultyError(f"unknown or no solver mode(s) {unknown or list(self.modes)}; "
                                  f"choose from {', '.join(SOLVER_MODES)}")  # fmt: skip
        if not 0.0 <= self.temperature <= 2.0:
            raise DifficultyError(f"solver temperature must be in [0, 2], got {self.temperature}")
        return self

    def eval_config(self, attempt: int) -> EvalConfig:
        return EvalConfig(role=self.role, max_rounds=self.max_rounds, max_tokens_per_round=self.max_tokens_per_round,
                          max_answer_tokens=self.max_tokens_per_round,
                          params={"temperature": self.temperature, "seed": self.seed + attempt})  # fmt: skip


class Difficulty(BaseModel):
    """One ``qa_difficulty`` row."""

    model_config = ConfigDict(extra="forbid")

    qa_id: str
    solver_model: str
    k: int
    solver_role: str
    temperature: float
    domain: str
    hop_class: str
    tools_passes: int | None = None
    no_tools_passes: int | None = None
    tools_pass_rate: float | None = None
    no_tools_pass_rate: float | None = None
    label: str
    run_id: str
    created_at: datetime


def label_for(tools_rate: float | None, no_tools_rate: float | None) -> str:
    """The label of a question from its pass rates (module docstring); a mode not run is ``None``."""
    if no_tools_rate is not None and no_tools_rate >= 1.0:
        return "trivial"
    rate = tools_rate if tools_rate is not None else (no_tools_rate or 0.0)
    if rate >= 0.75:
        return "easy"
    if rate >= 0.25:
        return "medium"
    return "hard" if rate > 0 else "unsolved"


def summarize_attempts(qa: QA, items: Sequence[EvalItem], cfg: DifficultyConfig, *, solver_model: str,
                       run_id: str, now: datetime | None = None) -> Difficulty | None:
    """The row for one question's attempts, or ``None`` when an attempt got no answer from the endpoint (an
    outage is not a wrong answer: the question is measured again next time)."""
    if any(i.end_reason == "error" for i in items):
        return None
    passes: dict[str, int | None] = {}
    rates: dict[str, float | None] = {}
    for mode in SOLVER_MODES:
        mine = [i for i in items if i.mode == mode]
        if mode not in cfg.modes:
            passes[mode], rates[mode] = None, None
            continue
        if len(mine) != cfg.k:
            raise DifficultyError(f"{qa.qa_id}: expected {cfg.k} {mode} attempts, got {len(mine)}")
        passes[mode] = sum(bool(i.em) for i in mine)
        rates[mode] = passes[mode] / cfg.k  # type: ignore[operator]
    return Difficulty(
        qa_id=qa.qa_id, solver_model=solver_model, k=cfg.k, solver_role=cfg.role, temperature=cfg.temperature,
        domain=qa.domain, hop_class=qa.hop_class, tools_passes=passes["tools"], no_tools_passes=passes["no_tools"],
        tools_pass_rate=rates["tools"], no_tools_pass_rate=rates["no_tools"],
        label=label_for(rates["tools"], rates["no_tools"]), run_id=run_id, created_at=now or datetime.now(),
    )  # fmt: skip


async def measure(gateway: ChatGateway, env: ToolRunner | None, qa: QA, cfg: DifficultyConfig,
                  gold: Sequence[GoldPath] = (), *, solver_model: str, run_id: str) -> Difficulty | None:
    """``cfg.k`` attempts per mode on one question, concurrently (the gateway's limiter paces the endpoint)."""
    if "tools" in cfg.modes and env is None:
        raise DifficultyError("solver mode 'tools' needs a tool environment")
    jobs = [evaluate_item(gateway, env, qa, mode, cfg.eval_config(a), gold, run_id=run_id)
            for mode in cfg.modes for a in range(cfg.k)]  # fmt: skip
    items = await asyncio.gather(*jobs)
    return summarize_attempts(qa, items, cfg, solver_model=solver_model, run_id=run_id)


# -- using the labels -------------------------------------------------------------------------------------------

def drop_labelled(qas: Iterable[QA], labels: Mapping[str, Difficulty], drop: Sequence[str]) -> tuple[list[QA], list[QA]]:
    """Split questions into (kept, dropped): dropped are those whose label is in ``drop``. A question without a
    label is kept (it was not measured, which says nothing about it)."""
    bad = set(drop)
    unknown = bad - set(LABELS)
    if unknown:
        raise DifficultyError(f"unknown difficulty label(s) {sorted(unknown)}; the labels are {', '.join(LABELS)}")
    kept: list[QA] = []
    dropped: list[QA] = []
    for q in qas:
        d = labels.get(q.qa_id)
        (dropped if d is not None and d.label in bad else kept).append(q)
    return kept, dropped


#: Columns the ``qa`` config gains when difficulty is measured (nullable: an unmeasured question has none).
DIFFICULTY_FIELDS: tuple[pa.Field, ...] = (
    pa.field("difficulty", pa.string()),
    pa.field("solve_rate_tools", pa.float64()),
    pa.field("solve_rate_no_tools", pa.float64()),
    pa.field("solver_k", pa.int32()),
)


def difficulty_columns(d: Difficulty | None) -> dict[str, Any]:
    if d is None:
        return {"difficulty": None, "solve_rate_tools": None, "solve_rate_no_tools": None, "solver_k": None}
    return {"difficulty": d.label, "solve_rate_tools": d.tools_pass_rate, "solve_rate_no_tools": d.no_tools_pass_rate,
            "solver_k": d.k}


def with_difficulty_schema(schema: pa.Schema) -> pa.Schema:
    for f in DIFFICULTY_FIELDS:
        if schema.get_field_index(f.name) < 0:
            schema = schema.append(f)
    return schema


def rates_by_hop_class(rows: Iterable[Difficulty]) -> list[dict[str, Any]]:
    """Omne-R1's view: mean pass rate per (domain, hop class) with and without tools, and the share of each label;
    then one ``all`` row per hop class."""
    groups: dict[tuple[str, str], list[Difficulty]] = {}
    for d in rows:
        groups.setdefault((d.domain, d.hop_class), []).append(d)
        groups.setdefault(("all", d.hop_class), []).append(d)

    def mean(xs: list[float | None]) -> float | None:
        vals = [x for x in xs if x is not None]
        return round(sum(vals) / len(vals), 4) if vals else None

    out = []
    for (domain, hop), ds in sorted(groups.items(), key=lambda kv: (kv[0][0] == "all", kv[0])):
        row: dict[str, Any] = {"domain": domain, "hop_class": hop, "n": len(ds),
                               "pass_rate_tools": mean([d.tools_pass_rate for d in ds]),
                               "pass_rate_no_tools": mean([d.no_tools_pass_rate for d in ds])}  # fmt: skip
        for label in LABELS:
            row[label] = sum(d.label == label for d in ds)
        out.append(row)
    return out


__all__ = [
    "DIFFICULTY_FIELDS",
    "LABELS",
    "SOLVER_MODES",
    "Difficulty",
    "DifficultyConfig",
    "DifficultyError",
    "difficulty_columns",
    "drop_labelled",
    "label_for",
    "measure",
    "rates_by_hop_class",
    "summarize_attempts",
    "with_difficulty_schema",
]
