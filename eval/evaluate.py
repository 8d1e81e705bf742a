"""Evaluate a policy model on one question: the tool loop, and two baselines.

Modes (``MODES``):

- ``tools``: the multi-turn KG tool loop (``tasks.env.agent_loop.run_agent``) with role ``policy`` and up to
  ``max_rounds`` (7, Omne-R1) tool rounds; the answer is the final ``<answer>``.
- ``no_tools``: the closed-book baseline: the policy answers from the question alone, in ``<answer>``.
- ``gold_context``: the upper bound: the question plus the gold path's triples in the prompt.

Each mode also runs in Graph-RFT's incomplete-graph setting: ``evaluate_item(..., view=...)`` scores the question in
an IKG view (``tasks.env.ikg``), the tool loop in the view with the text tool, the gold context with the hidden
triples as the passages that state them (``eval.ikg`` says how and why). The item carries its setting
(``kg_setting``, ``ikg_level``, ``view_id``) and, from the tool loop, ``n_text_calls``.

Scores are ``eval.metrics`` (EM and F1 under the strict and lenient normalisers, Hit@1 first and any), the path
coverage of the model's reasoning (``schemas.answers.path_coverage``, best over gold paths) and, in ``tools`` mode,
Explore-on-Graph's exploration metrics over the tool observations (``eval.metrics.exploration``). An optional LLM judge (role
``judge``, off by default) decides, when EM fails, whether the prediction names the gold answer anyway.

``evaluate_item`` never raises for endpoint problems: an endpoint that gives no answer makes an item with
``end_reason == "error"``, no prediction and zero scores (the flow counts those separately).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from eval import metrics
from eval.ikg import hidden_passages, text_calls, visible_triples
from schemas.errors import InputError
from schemas.qa import QA, GoldPath
from schemas.tools import OMNE_TOOLS, tool_schemas
from tasks.env.agent_loop import AgentConfig, ChatGateway, ToolRunner, initial_messages, run_agent
from schemas.answers import path_coverage
from schemas.evaluation import MODES, Mode, TrainedAs
from tasks.env.ikg import IKGView, setting_fields, viewed_environment
from tasks.env.text_search import TextIndex
from tasks.env.tool_calls import extract_answer, strip_think, think_text



@dataclass(frozen=True)
class EvalConfig:
    """How items are evaluated. ``max_answer_tokens`` caps the single generation of the baselines.

    ``ask_for_think`` and ``keep_reasoning`` shape the tool loop's context (``AgentConfig``); ``for_checkpoint``
    sets them, with the tool-call style, to what a checkpoint trained on hopforge's exports saw."""

    role: str = "policy"
    max_rounds: int = 7
    max_tokens_per_round: int = 3000
    max_answer_tokens: int = 3000
    tools: tuple[str, ...] = OMNE_TOOLS
    style: Literal["text", "api"] = "text"
    params: Mapping[str, Any] = field(default_factory=dict)
    use_judge: bool = False
    judge_role: str = "judge"
    ask_for_think: bool = True
    keep_reasoning: bool = False

    @classmethod
    def for_checkpoint(cls, trained_as: TrainedAs, **kwargs: Any) -> EvalConfig:
        """The context a checkpoint trained on ``trained_as`` rows was trained in: tools through the chat template
        (the export's ``tools`` column; ``style="api"``), the export's system prompt (it asks for ``<think>`` on
        think rows only) and, on think rows, every earlier turn sent back with its ``<think>`` block."""
        if trained_as not in ("think", "no_think"):
            raise InputError(f"trained_as must be think or no_think, got {trained_as!r}")
        think = trained_as == "think"
        return cls(style="api", ask_for_think=think, keep_reasoning=think, **kwargs)

    def agent_config(self) -> AgentConfig:
        return AgentConfig(role=self.role, style=self.style, tools=self.tools, max_rounds=self.max_rounds,
                           max_tokens_per_round=self.max_tokens_per_round, params=dict(self.params),
                           ask_for_think=self.ask_for_think, keep_reasoning=self.keep_reasoning)  # fmt: skip


class EvalItem(BaseModel):
    """One scored answer: an ``eval_items`` row."""

    model_config = ConfigDict(extra="forbid")

    run_id: str | None = None
    qa_id: str
    mode: str
    domain: str
    hop_class: str
    split: str | None = None
    question: str
    prediction: str | None = None
    answers: list[str]
    em: bool = False
    em_strict: bool = False
    f1: float = 0.0
    f1_strict: float = 0.0
    hit1: bool = False  # the old name of hit1_first
    hit1_first: bool = False
    hit1_any: bool = False
    judge_valid: bool | None = None
    judge_reason: str | None = None
    n_rounds: int = 0
    repeated_calls: int = 0
    end_reason: str
    error: str | None = None
    path_coverage: float = 0.0
    n_tool_calls: int = 0
    n_explored: int = 0
    triple_coverage: float = 0.0
    exploration_efficiency: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    kg_setting: str = "complete"  # complete | incomplete (Graph-RFT's CKG / IKG)
    ikg_level: float | None = None  # the IKG level (0.4 for IKG-40%); None on the complete graph
    view_id: str = ""  # the IKG view the item ran in; "" on the complete graph (a row-key column)
    n_text_calls: int = 0  # web_search / text_search calls of the tool loop
    item_key: str | None = None  # ``item_key``: what the result depends on; a later run may copy the item by it


class JudgeVerdict(BaseModel):
    """The judge's structured answer."""

    correct: bool
    reason: str = Field(max_length=600)


# -- prompts ------------------------------------------------------------------------------------------------------

_ANSWER_RULE = ("Give the final answer inside <answer> and </answer>: the entity's exact name and nothing else. "
                "You may think first inside <think> and </think>.")  # fmt: skip


def no_tools_messages(qa: QA) -> list[dict[str, Any]]:
    """The closed-book baseline's prompt: the question alone."""
    return [
        {"role": "system", "content": "Answer the question from what you know. " + _ANSWER_RULE},
        {"role": "user", "content": qa.question},
    ]


def gold_triples(qa: QA, gold_paths: Sequence[GoldPath] = ()) -> list[list[tuple[str, str, str]]]:
    """The gold paths as triples: every stored path the verifier did not refuse (rank order), else the question's
    own path; each followed by the facts its program pins nodes with (``pin_triples``)."""
    paths = [list(g.triples) for g in sorted(gold_paths, key=lambda g: g.rank) if g.verdict != "invalid" and g.triples]
    if not paths and qa.path_edges:
        paths = [[e.triple() for e in qa.path_edges]]
    pins = pin_triples(qa)
    return [[*p, *(t for t in pins if t not in p)] for p in paths]


def pin_triples(qa: QA) -> list[tuple[str, str, str]]:
    """The facts that pin nodes of the question's program (``schemas.programs``), ``(subject, label, object)``: a
    question that states a pin is answered from the path and its pins together, so the gold facts include them."""
    program = qa.program
    if program is None or not program.nodes or not program.constraints:
        return []
    return [tuple(t) for t in program.facts()[program.hops:]]  # type: ignore[misc]


def gold_context_messages(qa: QA, triples: Sequence[tuple[str, str, str]],
                          passages: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The upper bound's prompt: the facts of one gold path, then the question. With ``passages`` (an IKG item:
    the texts that state the triples its view hides, ``eval.ikg``), the passages follow the facts."""
    facts = "\n".join(f"- {s} | {r} | {o}" for s, r, o in triples)
    if not passages:
        return [
            {"role": "system", "content": "Answer the question using the facts given (subject | relation | object). "
                                          + _ANSWER_RULE},
            {"role": "user", "content": f"Facts:\n{facts}\n\nQuestion: {qa.question}"},
        ]
    facts = facts or "- (none: the graph shows no fact of the path)"
    texts = "\n".join(f"[{i}] {p}" for i, p in enumerate(passages, 1))
    return [
        {"role": "system", "content": "Answer the question using the facts (subject | relation | object) and the "
                                      "passages given. " + _ANSWER_RULE},
        {"role": "user", "content": f"Facts:\n{facts}\n\nPassages:\n{texts}\n\nQuestion: {qa.question}"},
    ]


def ikg_gold_context(qa: QA, triples: Sequence[tuple[str, str, str]], view: IKGView,
                     text: TextIndex | None) -> list[dict[str, Any]]:
    """The upper bound in an IKG view: the triples the view shows as facts, each hidden one as the passage that
    states it (``eval.ikg.hidden_passages``; a hidden triple no passage states is left out)."""
    passages = [f"{c.title}: {c.text}" if c.title else c.text for _, c in hidden_passages(view, triples, text) if c]
    return gold_context_messages(qa, visible_triples(view, triples), passages)


@dataclass(frozen=True)
class FirstRequest:
    """The first request evaluation sends for one item: what a served model's context must hold before any reply.
    ``tools``: the schemas sent beside the messages (the tool loop in the api style); ``max_tokens``: the reply it
    asks room for."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    max_tokens: int


class _ContractTools:
    """The tool contract without a graph: the system prompt of the tool loop needs the schemas, nothing else."""

    def schemas(self, tools: Sequence[str] | None = None) -> list[dict[str, Any]]:
        return tool_schemas(tuple(tools) if tools is not None else OMNE_TOOLS)

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> Any:
        raise NotImplementedError("the contract tools render prompts only")


def first_request(qa: QA, mode: str, config: EvalConfig = EvalConfig(),
                  gold_paths: Sequence[GoldPath] = ()) -> FirstRequest:  # fmt: skip
    """The first request ``evaluate_item`` sends for ``qa`` in ``mode`` on the complete graph (the tool loop's
    opening turn, or the baseline's single one), built the same way; later turns of the tool loop only add to it."""
    if mode not in MODES:
        raise InputError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    if mode == "tools":
        agent = config.agent_config()
        tools = tool_schemas(agent.tools) if agent.style == "api" else None
        return FirstRequest(initial_messages(_ContractTools(), qa.question, qa.domain, agent), tools,
                            config.max_tokens_per_round)  # fmt: skip
    if mode == "no_tools":
        return FirstRequest(no_tools_messages(qa), None, config.max_answer_tokens)
    paths = gold_triples(qa, gold_paths)
    return FirstRequest(gold_context_messages(qa, paths[0] if paths else []), None, config.max_answer_tokens)


def judge_messages(qa: QA, prediction: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You grade answers to questions. Decide whether the predicted answer names the "
                                      "same entity as the gold answer (another name or spelling of it counts; a "
                                      "different, broader or narrower entity does not). Reply with JSON: "
                                      '{"correct": true or false, "reason": "one sentence"}.'},
        {"role": "user", "content": f"Question: {qa.question}\nGold answer: {qa.answer}\nPredicted answer: {prediction}"},
    ]  # fmt: skip


# -- reuse -----------------------------------------------------------------------------------------------------------

#: The modules whose code decides an item's prompts, tool observations and scores. Their source is part of every item
#: key, so after a change to any of them an evaluation measures again instead of copying an older result.
KEY_MODULES: tuple[str, ...] = ("eval.evaluate", "eval.metrics", "tasks.env.agent_loop", "tasks.env.tools",
                                "tasks.env.tool_calls", "tasks.env.index", "schemas.tools", "schemas.answers",
                                "schemas.qa", "eval.ikg", "tasks.env.ikg", "tasks.env.text_search")  # fmt: skip
#: QA fields that do not change what the policy is asked or how its answer is scored.
_QA_BOOKKEEPING = frozenset({"run_id", "attempt_id", "source_chunk_ids", "writer", "seed"})


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """sha256 over the source files of ``KEY_MODULES``."""
    h = hashlib.sha256()
    for name in KEY_MODULES:
        module = importlib.import_module(name)
        h.update(name.encode() + b"\x00" + Path(str(module.__file__)).read_bytes() + b"\x00")
    return h.hexdigest()


def item_key(qa: QA, mode: str, config: EvalConfig, gold_paths: Sequence[GoldPath], identity: Mapping[str, Any],
             view: IKGView | None = None, text: str | None = None) -> str:
    """What an item's result depends on, as a sha256: the question as stored (its path, answer, split and graph
    snapshot), the gold paths it is scored against, the mode, the evaluation settings, ``identity`` (the endpoints
    and embedder as configured: the caller's part) and ``code_fingerprint``; for an IKG item its view (id and
    hidden relations), and ``text``, the fingerprint of the text collection its tools or gold context read
    (``TextIndex.fingerprint``). Two items with the same key give the same result when the responses come from the
    cache, so a finished one can be copied."""
    payload: dict[str, Any] = {
        "qa": qa.model_dump(mode="json", exclude=set(_QA_BOOKKEEPING)),
        "gold": gold_triples(qa, gold_paths),
        "mode": mode,
        "config": {**dataclasses.asdict(config), "params": dict(config.params)},
        "identity": identity,
        "code": code_fingerprint(),
    }
    if view is not None:
        payload["view"] = {"view_id": view.view_id, "hidden": sorted(map(list, view.hidden))}
    if text is not None:
        payload["text"] = text
    dumped = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(dumped.encode("utf-8")).hexdigest()


def reusable(item: EvalItem) -> bool:
    """Whether a finished item may stand for a later run: not one whose endpoint gave no answer, nor one whose
    judge failed (both may go otherwise next time), and only one that carries a key."""
    return (item.item_key is not None and item.end_reason != "error"
            and not (item.judge_reason or "").startswith("judge failed"))  # fmt: skip


# -- one item -------------------------------------------------------------------------------------------------------


def _base(qa: QA, mode: str, view: IKGView | None) -> dict[str, Any]:
    setting = setting_fields(view)
    return {"qa_id": qa.qa_id, "mode": mode, "domain": qa.domain, "hop_class": qa.hop_class, "split": qa.split,
            "question": qa.question, "answers": [qa.answer], "kg_setting": setting["kg_setting"],
            "ikg_level": setting["ikg_level"], "view_id": setting["view_id"] or ""}  # fmt: skip


async def _single_answer(gateway: ChatGateway, messages: list[dict[str, Any]], config: EvalConfig) -> dict[str, Any]:
    """One generation for a baseline: prediction, end reason, reasoning text, tokens."""
    result = await gateway.chat(config.role, messages, params={**config.params, "max_tokens": config.max_answer_tokens})
    out: dict[str, Any] = {"prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
                           "think": ""}  # fmt: skip
    if result.failure is not None:
        kind = "token_limit" if result.failure.kind == "truncated" else "error"
        return {**out, "end_reason": kind, "error": result.failure.message}
    answer = extract_answer(result.text)
    out["think"] = "\n".join(t for t in (result.reasoning or "", think_text(result.text)) if t)
    return {**out, "prediction": answer, "end_reason": "answer" if answer is not None else "no_answer"}


async def evaluate_item(
    gateway: ChatGateway,
    env: ToolRunner | None,
    qa: QA,
    mode: str,
    config: EvalConfig = EvalConfig(),
    gold_paths: Sequence[GoldPath] = (),
    run_id: str | None = None,
    view: IKGView | None = None,
    text: TextIndex | None = None,
) -> EvalItem:
    """Answer and score ``qa`` in ``mode`` (see the module docstring). ``env`` is needed for ``tools`` only (a
    ``tasks.env.tools.ToolEnvironment`` when ``view`` is given: the loop runs in the view over it). ``view``: the
    IKG view the item is scored in (``None``: the complete graph); ``text``: the text collection its gold context
    reads the hidden triples' passages from."""
    if mode not in MODES:
        raise InputError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    paths = gold_triples(qa, gold_paths)
    got: dict[str, Any]
    if mode == "tools":
        if env is None:
            raise ValueError("mode 'tools' needs a tool environment")
        seen = viewed_environment(env, view, qa.domain) if view is not None else env
        run = await run_agent(gateway, seen, qa.question, qa.domain, config.agent_config())
        own = [r for r in run.reasoning if r] + [think_text(m.get("content") or "") for m in run.messages
                                                 if m.get("role") == "assistant"]  # fmt: skip
        explored = metrics.exploration([c.observation for c in run.tool_calls if c.ok], paths)
        got = {"prediction": run.final_answer, "end_reason": run.end_reason, "error": run.error,
               "n_rounds": run.rounds, "repeated_calls": run.repeated_calls, "think": "\n".join(t for t in own if t),
               "prompt_tokens": run.tokens.prompt, "completion_tokens": run.tokens.completion,
               "n_tool_calls": len(run.tool_calls), "n_explored": explored["n_explored"],
               "triple_coverage": explored["triple_coverage"],
               "exploration_efficiency": explored["exploration_efficiency"],
               "n_text_calls": text_calls(run.tool_calls)}  # fmt: skip
    elif mode == "no_tools":
        got = await _single_answer(gateway, no_tools_messages(qa), config)
    elif view is not None:
        got = await _single_answer(gateway, ikg_gold_context(qa, paths[0] if paths else [], view, text), config)
    else:
        got = await _single_answer(gateway, gold_context_messages(qa, paths[0] if paths else []), config)
    think = got.pop("think", "")
    prediction = got.get("prediction")
    item = EvalItem(**_base(qa, mode, view), **got, run_id=run_id)
    if item.end_reason == "error" or prediction is None:
        return item.model_copy(update={"judge_valid": False if config.use_judge and item.end_reason != "error" else None})
    scores = metrics.score(prediction, item.answers)
    coverage = max((path_coverage(think, p) for p in paths), default=0.0)
    item = item.model_copy(update={**scores, "path_coverage": coverage})
    if config.use_judge:
        item = await judge_item(gateway, qa, item, config)
    return item


async def judge_item(gateway: ChatGateway, qa: QA, item: EvalItem, config: EvalConfig) -> EvalItem:
    """Fill ``judge_valid``: true on EM without a call; else the judge's verdict (``None`` when the judge gave
    none: a judge failure is not a wrong answer)."""
    if item.em:
        return item.model_copy(update={"judge_valid": True, "judge_reason": "exact match"})
    prediction = strip_think(item.prediction or "").strip()
    if not prediction:
        return item.model_copy(update={"judge_valid": False, "judge_reason": "no answer"})
    res = await gateway.structured(config.judge_role, judge_messages(qa, prediction), JudgeVerdict,  # type: ignore[attr-defined]
                                   name="judge_verdict")
    if not res.ok:
        return item.model_copy(update={"judge_valid": None, "judge_reason": f"judge failed: {res.failure}"[:500]})
    return item.model_copy(update={"judge_valid": res.value.correct, "judge_reason": res.value.reason})


__all__ = [
    "KEY_MODULES",
    "MODES",
    "EvalConfig",
    "EvalItem",
    "FirstRequest",
    "JudgeVerdict",
    "TrainedAs",
    "code_fingerprint",
    "evaluate_item",
    "first_request",
    "gold_context_messages",
    "pin_triples",
    "gold_triples",
    "ikg_gold_context",
    "item_key",
    "judge_item",
    "no_tools_messages",
    "reusable",
]
