"""Rule-based (and judge-based) RL rewards for hopforge's knowledge-graph QA rollouts, as the four papers define them.

| registry name   | paper, section                         | formula                                                         |
|-----------------|----------------------------------------|-----------------------------------------------------------------|
| ``omne_stage1``   | Omne-R1 §3.3.2                          | ``R_format × (0.1 + 0.9·R_result)``                              |
| ``omne_post_sft`` | Omne-R1 §3.5 (stage 3)                  | ``(r_format + r_answer)/2 − 0.1·n_repetition``                   |
| ``eog_f1_path``   | Explore-on-Graph §3.2, Fig. 15          | ``(1−λ)·F1 + λ·R_path``, λ = ``path_weight`` (0.2, their best)   |
| ``eog_joint``     | Explore-on-Graph §3.2.2 eq. 5           | ``F1 + α·R_path``, α = ``path_alpha``                             |
| ``graph_rft``     | Graph-RFT §3.3.2 eqs. 2–8               | ``R_acc`` / 0.1 retrieval credit / −0.1 penalty (see function)   |
| ``kg_hopper``     | KG-Hopper §III-C eqs. 1–5               | ``min(0.5·n, 0.8) + 0.5·format + f_r(think) + f_a(answer, gold)`` |

Contract (STYLE.md habit 9): a reward is ``reward(solution_str, truth) -> RewardResult``; ``RewardResult.score`` is
the one float the trainer optimises, the other fields are diagnostics with the same keys for every reward (verl
stacks them per batch). Rewards are built by name from ``REWARDS`` with keyword options
(``get_reward("eog_f1_path", path_weight=0.3)``); an unknown name or option raises ``RewardError``.

Answers are compared by ``schemas.answers``. Each reward states its normaliser and takes ``normalizer`` as an
option: the Omne-R1 rewards use ``strict`` (the paper's "exact match after whitespace stripping"), the F1-based
rewards use ``lenient``. Tags are read in lower case only (``<THINK>`` is a format error) unless
``case_sensitive_tags=False``.

Every reader of the response is linear in its length (``tasks.env.tool_calls.scan_tag``): a 120k-character
rollout of repeated tags is scored in milliseconds (``bench/bench_rewards.py``).

The module imports only the standard library, pydantic and hopforge's light modules (``schemas.answers``,
``schemas.tools``, ``tasks.env.tool_calls``) so verl's reward workers can load it without torch, prefect or the
graph stack. The judge used by ``kg_hopper`` is passed in (``training.judges``); nothing here calls a network.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from schemas.answers import (
    LENIENT,
    NORMALIZERS,
    STRICT,
    Normalizer,
    answer_set_matches,
    entity_f1,
    flat_text,
    name_key,
    path_coverage,
    relation_terms,
    triple_mentioned,
)
from schemas.answers import lenient_key as normalize_answer
from schemas.tools import CallError, ToolCall
from tasks.env.tool_calls import extract_answer, parse_tool_calls, scan_tag, strip_think, think_text


class RewardError(ValueError):
    """A reward cannot be computed because of its configuration or ground truth (not because of the response,
    which is always scored)."""


# -- ground truth ------------------------------------------------------------------------------------------------

KGSetting = Literal["complete", "incomplete"]


class GroundTruth(BaseModel):
    """``reward_model.ground_truth`` of an RL row, as ``tasks.export.rows.rl_ground_truth`` writes it:
    ``{"answers": [str], "gold_paths": [[[s, r, o], ...], ...], "graph_type": str}``, plus what some rewards
    need: ``question`` (the KG-Hopper judges) and ``kg_setting`` (Graph-RFT's complete / incomplete graph)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    answers: list[str] = Field(min_length=1)
    gold_paths: list[list[tuple[str, str, str]]] = Field(default_factory=list)
    graph_type: str = ""
    question: str | None = None
    kg_setting: KGSetting | None = None

    @classmethod
    def parse(cls, raw: str | bytes | Mapping[str, Any]) -> GroundTruth:
        """From the exported JSON string (or an already decoded mapping: some loaders decode it). Strict: a
        malformed value raises pydantic's ``ValidationError``. ``coerce`` accepts more shapes."""
        if isinstance(raw, (str, bytes)):
            return cls.model_validate_json(raw)
        return cls.model_validate(raw)

    @classmethod
    def coerce(cls, raw: Any) -> GroundTruth:
        """Any ground-truth shape a trainer may hand over: a ``GroundTruth``; a mapping (``answers``, or
        ``answer``/``target``/``golden_answer`` as other datasets name it); a JSON string of either, of a list of
        answers or of one answer; a list of answers; or a plain answer string. ``RewardError`` otherwise."""
        if isinstance(raw, GroundTruth):
            return raw
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8", errors="replace")
        if isinstance(raw, str):
            text = raw.strip()
            if not text:
                raise RewardError("empty ground truth: expected a JSON object, a list of answers or an answer")
            try:
                decoded = json.loads(text)
            except ValueError:
                decoded = text  # a plain answer such as "Cambridge"
            if isinstance(decoded, (int, float)) and not isinstance(decoded, bool):
                decoded = text  # "1945" is an answer, and keeps its spelling
            raw = decoded
        if isinstance(raw, str):
            return cls(answers=[raw])
        if isinstance(raw, (list, tuple)):
            answers = [a if isinstance(a, str) else json.dumps(a, ensure_ascii=False) for a in raw]
            if not [a for a in answers if a.strip()]:
                raise RewardError("ground truth lists no answer")
            return cls(answers=answers)
        if isinstance(raw, Mapping):
            data = dict(raw)
            if "answers" not in data:
                for alias in ("answer", "target", "golden_answer", "golden_answers"):
                    if alias in data:
                        value = data.pop(alias)
                        data["answers"] = value if isinstance(value, list) else [value]
                        break
            try:
                return cls.model_validate(data)
            except ValidationError as exc:
                raise RewardError(f"malformed ground truth: {_short_errors(exc)}") from None
        raise RewardError(f"ground truth of type {type(raw).__name__} is not understood")


def _short_errors(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors()[:4])


# -- result ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RewardResult:
    """One scored response. ``score`` is what is optimised; the rest is measured for every reward so logs from
    different rewards line up (``metrics()`` has the same keys whichever reward made it).

    - ``format_ok``: the reward's own format rule held.
    - ``answer``: the last ``<answer>`` content outside reasoning (``None``: no closed answer tag).
    - ``em`` / ``f1``: entity-set exact match and F1 against the gold answers under the reward's normaliser.
    - ``path_coverage``: best share, over gold paths, of triples named in the reasoning text.
    - ``n_tool_calls`` / ``n_bad_calls`` / ``n_repeat``: calls read from the response, how many could not be read
      or bound, and how many repeat an earlier call's name and arguments.
    - ``n_search``: KG-Hopper ``<search>`` blocks plus tool calls (the retrievals its reward counts).
    - ``graph_hit`` / ``web_hit``: Graph-RFT's R_graph / R_web (every gold answer appears in the KG / web results).
    - ``judge_reasoning`` / ``judge_answer``: the judge's values as used in the score (the recorded fallback when
      the judge was unavailable); ``judge_unavailable``: how many judge verdicts were missing.
    - ``empty_response``: the solution was ``None`` or blank (scored 0).
    - ``reason``: why the score is what it is, when a rule decided it (not a metric: text).
    """

    score: float
    format_ok: bool = False
    answer: str | None = None
    em: bool = False
    f1: float = 0.0
    path_coverage: float = 0.0
    n_tool_calls: int = 0
    n_bad_calls: int = 0
    n_repeat: int = 0
    n_search: int = 0
    graph_hit: bool = False
    web_hit: bool = False
    judge_reasoning: float = 0.0
    judge_answer: float = 0.0
    judge_unavailable: int = 0
    empty_response: bool = False
    reason: str | None = field(default=None, compare=False)

    def metrics(self) -> dict[str, float | int]:
        """The numeric fields only (``answer`` and ``reason`` left out): trainers average these per batch, and a
        string would break that."""
        return {
            k: (float(v) if isinstance(v, bool) else v)
            for k, v in asdict(self).items()
            if k not in ("answer", "reason")
        }


Reward = Callable[[str, GroundTruth], RewardResult]

# -- reading a response -------------------------------------------------------------------------------------------

#: The tags the format rules know; a variant in another case (``<Think>``) is a format error under lower-case rules.
KNOWN_TAGS = ("think", "answer", "tool_call", "tool_response", "search", "searched_triples", "plan",
              "relation_search", "relation_information", "neighbor_search", "neighbor_information", "web_search",
              "web_information")  # fmt: skip


def _has_miscased_tag(text: str) -> bool:
    """A known tag written in another case (``<THINK>``, ``</Answer>``): the exact and the case-folded counts
    of some tag differ. A few linear passes."""
    lowered = _ascii_lower(text)
    if "<" not in lowered:
        return False
    return any(lowered.count(t) != text.count(t) for tag in KNOWN_TAGS for t in (f"<{tag}>", f"</{tag}>"))


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _ascii_lower(text: str) -> str:
    return text.translate(_ASCII_LOWER)  # length-preserving, unlike str.lower on some scripts


@dataclass(frozen=True)
class Reading:
    """What the rules read from one response, once."""

    answer: str | None
    calls: list[ToolCall | CallError]
    think: str
    miscased: bool
    think_blocks: int
    think_dangling: bool
    think_stray_close: bool
    answer_after_think: bool

    @property
    def n_bad_calls(self) -> int:
        return sum(isinstance(c, CallError) for c in self.calls)

    @property
    def n_repeat(self) -> int:
        keys = [c.key() for c in self.calls if isinstance(c, ToolCall)]
        return len(keys) - len(set(keys))  # first occurrence of a call is not a repeat


def read(text: str, *, case_sensitive_tags: bool = True) -> Reading:
    """Read ``text`` for the rules: answer, tool calls, reasoning and where the ``<think>`` blocks are."""
    scan = scan_tag(text, "think", case_sensitive=case_sensitive_tags)
    answers = scan_tag(text, "answer", case_sensitive=case_sensitive_tags)
    last_think_end = scan.blocks[-1].end if scan.blocks else (
        scan.first_stray_close + len("</think>") if scan.first_stray_close is not None else -1
    )
    after = bool(answers.blocks) and answers.blocks[-1].start >= last_think_end >= 0
    return Reading(
        answer=extract_answer(text, case_sensitive=case_sensitive_tags),
        calls=parse_tool_calls(text),
        think=think_text(text, case_sensitive=case_sensitive_tags),
        miscased=case_sensitive_tags and _has_miscased_tag(text),
        think_blocks=len(scan.blocks),
        think_dangling=scan.dangling is not None,
        think_stray_close=scan.first_stray_close is not None,
        answer_after_think=after,
    )


def format_ok(answer: str | None, calls: Sequence[ToolCall | CallError], text: str) -> bool:
    """The post-SFT format rule (Omne-R1 stage 3, which "simplifies the formatting reward"):

    1. a closed ``<answer>...</answer>`` outside reasoning with non-empty content (a cut-off answer does not
       count: ``extract_answer``);
    2. every ``<tool_call>`` block outside reasoning reads as a call to a known tool with bindable arguments;
    3. no ``<think>`` is left open (an open one means generation stopped mid-reasoning).

    Reasoning is not required (the no-think SFT model is trained with this reward too). Tag case is checked by
    the rewards (``case_sensitive_tags``), not here."""
    return bool(answer) and not any(isinstance(c, CallError) for c in calls) and scan_tag(text, "think").dangling is None


def _unreasoned_call_turn(text: str, think_opened_in_prompt: bool, case_sensitive_tags: bool) -> int | None:
    """The first assistant turn (1-based) that calls a tool without reasoning before the call, or ``None``.

    A rollout's text holds every assistant turn with the tool replies between them; a turn ends where a
    ``</tool_response>`` closes (the next turn starts after the last reply). In each turn the first
    ``<tool_call>`` outside reasoning must come after a closed ``<think>`` block of that turn with something in
    it: an empty ``<think></think>`` is no reasoning. With ``think_opened_in_prompt`` the first turn's reasoning
    ends with a lone ``</think>`` (the template opened the block in the prompt), which counts when there is
    text before it."""
    cs = case_sensitive_tags
    think = scan_tag(text, "think", case_sensitive=cs)
    calls = scan_tag(text, "tool_call", case_sensitive=cs).blocks
    if not calls:
        return None
    lead_end = think.first_stray_close if think_opened_in_prompt else None  # the prompt-opened block's end
    replies = [b.end for b in scan_tag(text, "tool_response", case_sensitive=cs).blocks]
    blocks = think.blocks
    # One pass over calls, think blocks and replies, all in text order (linear: rollouts can be degenerate).
    j = k = 0
    turn_start, checked = 0, 0
    last_thought: int | None = None  # start of the latest non-empty think block that ends before the call
    for call in calls:
        while k < len(replies) and replies[k] <= call.start:
            turn_start, k = replies[k], k + 1
        while j < len(blocks) and blocks[j].end <= call.start:
            if text[blocks[j].inner_start : blocks[j].inner_end].strip():
                last_thought = blocks[j].start
            j += 1
        inside = (j < len(blocks) and blocks[j].start <= call.start) or (lead_end is not None and call.start < lead_end)
        if inside or (think.dangling is not None and call.start >= think.dangling):
            continue  # a call written inside reasoning is not a call of the turn
        turn = k + 1
        if turn == checked:
            continue  # only the turn's first call needs the reasoning before it
        checked = turn
        thought = last_thought is not None and last_thought >= turn_start
        if not thought and turn == 1 and lead_end is not None:
            thought = bool(text[:lead_end].strip())
        if not thought:
            return turn
    return None


def _stage1_format(r: Reading, think_opened_in_prompt: bool, text: str = "",
                   case_sensitive_tags: bool = True) -> tuple[bool, str | None]:  # fmt: skip
    """Omne-R1 stage 1: reasoning in ``<think>…</think>`` first, then the answer in ``<answer>…</answer>``, and
    every turn that calls a tool reasons before the call (§3.3.2: the format reward exists because the model
    called the traversal tools without reasoning first)."""
    if r.miscased:
        return False, "a tag is not in lower case"
    if r.think_dangling:
        return False, "a <think> is left open"
    if r.think_stray_close and not think_opened_in_prompt:
        return False, "a </think> without its <think>"
    if r.think_blocks == 0 and not (think_opened_in_prompt and r.think_stray_close):
        return False, "no <think>…</think> block"
    if not r.answer:
        return False, "no closed, non-empty <answer> outside reasoning"
    if not r.answer_after_think:
        return False, "the answer does not follow the reasoning"
    if r.n_bad_calls:
        return False, "a tool call could not be read"
    turn = _unreasoned_call_turn(text, think_opened_in_prompt, case_sensitive_tags)
    if turn is not None:
        return False, f"turn {turn} calls a tool without <think> reasoning before the call"
    return True, None


def _post_sft_format(r: Reading, text: str) -> tuple[bool, str | None]:
    if r.miscased:
        return False, "a tag is not in lower case"
    if not format_ok(r.answer, r.calls, text):
        return False, "no closed answer, an unreadable tool call, or an open <think>"
    return True, None


def _base(text: str, truth: GroundTruth, r: Reading, normalizer: Normalizer) -> RewardResult:
    good = [c for c in r.calls if isinstance(c, ToolCall)]
    return RewardResult(
        score=0.0,
        answer=r.answer,
        em=answer_set_matches(r.answer, truth.answers, normalizer),
        f1=entity_f1(r.answer, truth.answers, normalizer),
        # Any verified gold path is a valid way to the answer: credit the best-covered one.
        path_coverage=max((path_coverage(r.think, p) for p in truth.gold_paths), default=0.0),
        n_tool_calls=len(r.calls),
        n_bad_calls=len(r.calls) - len(good),
        n_repeat=r.n_repeat,
    )


def _empty(reason: str = "empty response") -> RewardResult:
    return RewardResult(score=0.0, empty_response=True, reason=reason)


def measure(solution_str: str, truth: GroundTruth, *, normalizer: Normalizer = LENIENT,
            case_sensitive_tags: bool = True) -> RewardResult:
    """Every common diagnostic for ``solution_str`` with the post-SFT format rule, and ``score`` 0.0."""
    if not solution_str or not solution_str.strip():
        return _empty()
    r = read(solution_str, case_sensitive_tags=case_sensitive_tags)
    ok, why = _post_sft_format(r, solution_str)
    return replace(_base(solution_str, truth, r, normalizer), format_ok=ok, reason=why)


def _check_normalizer(normalizer: str) -> Normalizer:
    if normalizer not in NORMALIZERS:
        raise RewardError(f"normalizer must be one of {', '.join(NORMALIZERS)}, got {normalizer!r}")
    return normalizer  # type: ignore[return-value]


def _named(fn: Reward, name: str) -> Reward:
    fn.__name__ = name
    fn.__qualname__ = name
    return fn


# -- Omne-R1 ------------------------------------------------------------------------------------------------------


def omne_stage1_reward(*, normalizer: Normalizer = STRICT, case_sensitive_tags: bool = True,
                       think_opened_in_prompt: bool = False) -> Reward:
    """Omne-R1 stage 1 (§3.3.2): ``R = R_format × (0.1 + 0.9·R_result)``, in {0, 0.1, 1}.

    ``R_format`` is 1 when the response reasons in ``<think>…</think>`` and then answers in
    ``<answer>…</answer>`` (closed, non-empty, outside reasoning, after the last ``</think>``), every turn that
    calls a tool has non-empty ``<think>`` reasoning before its call (a turn ends at a ``</tool_response>``),
    leaves no ``<think>`` open, writes every tool call readably and every tag in lower case
    (``case_sensitive_tags``); else 0. ``think_opened_in_prompt``: the chat template opens ``<think>`` in the prompt, so the response's
    reasoning ends with a lone ``</think>``. ``R_result`` is exact match after whitespace stripping (§4.1.2;
    ``normalizer="strict"``), the last answer winning. The 0.1 floor teaches the format before the answer."""
    normalizer = _check_normalizer(normalizer)

    def reward(solution_str: str, truth: GroundTruth) -> RewardResult:
        if not solution_str or not solution_str.strip():
            return _empty()
        r = read(solution_str, case_sensitive_tags=case_sensitive_tags)
        ok, why = _stage1_format(r, think_opened_in_prompt, solution_str, case_sensitive_tags)
        m = replace(_base(solution_str, truth, r, normalizer), format_ok=ok, reason=why)
        return replace(m, score=float(ok) * (0.1 + 0.9 * float(m.em)))

    return _named(reward, "omne_stage1")


#: Penalty per repeated tool call in the post-SFT reward (Omne-R1).
REPEAT_PENALTY = 0.1


def omne_post_sft_reward(*, normalizer: Normalizer = STRICT, case_sensitive_tags: bool = True,
                         repeat_penalty: float = REPEAT_PENALTY) -> Reward:
    """Omne-R1 after SFT (§3.5): ``R = (r_format + r_answer)/2 − 0.1·n_repetition``.

    ``r_format`` is ``format_ok`` (answer closed and non-empty, tool calls readable, no open ``<think>``) with
    lower-case tags; reasoning is not required (the no-think model is trained with it). ``r_answer`` is exact
    match after whitespace stripping (``normalizer="strict"``). ``n_repetition`` counts tool calls with the
    same name and arguments as an earlier one. At most 1; not clipped below (as in the paper)."""
    normalizer = _check_normalizer(normalizer)
    if repeat_penalty < 0:
        raise RewardError(f"repeat_penalty must be >= 0, got {repeat_penalty}")

    def reward(solution_str: str, truth: GroundTruth) -> RewardResult:
        if not solution_str or not solution_str.strip():
            return _empty()
        r = read(solution_str, case_sensitive_tags=case_sensitive_tags)
        ok, why = _post_sft_format(r, solution_str)
        m = replace(_base(solution_str, truth, r, normalizer), format_ok=ok, reason=why)
        return replace(m, score=(float(ok) + float(m.em)) / 2 - repeat_penalty * m.n_repeat)

    return _named(reward, "omne_post_sft")


# -- Explore-on-Graph ----------------------------------------------------------------------------------------------

#: Explore-on-Graph's best weight of the path term in ``(1−λ)·R_outcome + λ·R_path`` (Fig. 15).
DEFAULT_PATH_WEIGHT = 0.2
#: ``α`` of eq. 5 (``R_outcome + α·R_path``) giving the same outcome-to-path ratio as λ = 0.2: 0.2 / 0.8.
DEFAULT_PATH_ALPHA = 0.25


def _eog_measure(solution_str: str, truth: GroundTruth, normalizer: Normalizer, case_sensitive_tags: bool
                 ) -> RewardResult:
    if not solution_str or not solution_str.strip():
        return _empty()
    r = read(solution_str, case_sensitive_tags=case_sensitive_tags)
    # EoG has no format reward: an answer tag that cannot be read gives F1 = 0, which is the format incentive.
    return replace(_base(solution_str, truth, r, normalizer), format_ok=bool(r.answer) and not r.miscased)


def eog_f1_path(path_weight: float = DEFAULT_PATH_WEIGHT, *, normalizer: Normalizer = LENIENT,
                case_sensitive_tags: bool = True) -> Reward:
    """Explore-on-Graph's joint reward in the form of their Fig. 15: ``(1−λ)·R_outcome + λ·R_path``, in [0, 1].

    ``R_outcome`` (eq. 3) is the F1 between the predicted entity set (``<answer>`` content; a JSON list is a
    set) and the gold set, 0 without a readable answer tag. ``R_path`` (eq. 4) is the share of a gold path's
    triples whose subject, relation and object all appear in the reasoning text (best gold path).
    ``λ = path_weight``. Both terms count (their released code zeroes the F1 weight; that is a bug)."""
    if not 0.0 <= path_weight <= 1.0:
        raise RewardError(f"path_weight must be in [0, 1], got {path_weight}")
    normalizer = _check_normalizer(normalizer)

    def reward(solution_str: str, truth: GroundTruth) -> RewardResult:
        m = _eog_measure(solution_str, truth, normalizer, case_sensitive_tags)
        f1 = m.f1 if not m.empty_response and m.format_ok else 0.0
        return replace(m, score=(1.0 - path_weight) * f1 + path_weight * m.path_coverage)

    return _named(reward, f"eog_f1_path_{path_weight:g}")


def eog_joint(path_alpha: float = DEFAULT_PATH_ALPHA, *, normalizer: Normalizer = LENIENT,
              case_sensitive_tags: bool = True) -> Reward:
    """Explore-on-Graph's joint reward as eq. 5 writes it: ``R_outcome + α·R_path``, in [0, 1 + α]
    (terms as in ``eog_f1_path``; ``α = path_alpha``)."""
    if not 0.0 <= path_alpha or not math.isfinite(path_alpha):
        raise RewardError(f"path_alpha must be a finite number >= 0, got {path_alpha}")
    normalizer = _check_normalizer(normalizer)

    def reward(solution_str: str, truth: GroundTruth) -> RewardResult:
        m = _eog_measure(solution_str, truth, normalizer, case_sensitive_tags)
        f1 = m.f1 if not m.empty_response and m.format_ok else 0.0
        return replace(m, score=f1 + path_alpha * m.path_coverage)

    return _named(reward, f"eog_joint_{path_alpha:g}")


# -- Graph-RFT -----------------------------------------------------------------------------------------------------

#: Tool names (hopforge's tool loop) and Graph-RFT's own tags whose results are graph / web retrievals.
GRAPH_RESULT_TOOLS = ("neighbor_search", "node_info", "search")
WEB_RESULT_TOOLS = ("web_search", "text_search")  # text_search: web_search's alias over the same texts


def _tool_results(text: str, case_sensitive_tags: bool) -> dict[str, list[str]]:
    """Retrieval results by kind (``graph``, ``web``), read from Graph-RFT's tags (``<neighbor_information>``,
    ``<web_information>``) and from hopforge's tool loop (each ``<tool_response>`` belongs to the
    ``<tool_call>`` before it). One pass per tag."""
    out: dict[str, list[str]] = {"graph": [], "web": []}
    for tag, kind in (("neighbor_information", "graph"), ("web_information", "web")):
        for b in scan_tag(text, tag, case_sensitive=case_sensitive_tags).blocks:
            out[kind].append(text[b.inner_start : b.inner_end])
    calls = scan_tag(text, "tool_call", case_sensitive=case_sensitive_tags).blocks
    responses = scan_tag(text, "tool_response", case_sensitive=case_sensitive_tags).blocks
    i = 0
    last_name: str | None = None
    for resp in responses:
        while i < len(calls) and calls[i].end <= resp.start:
            body = text[calls[i].inner_start : calls[i].inner_end]
            parsed = parse_tool_calls(f"<tool_call>{body}</tool_call>")
            last_name = parsed[0].name if parsed and isinstance(parsed[0], ToolCall) else None
            i += 1
        content = text[resp.inner_start : resp.inner_end]
        if last_name in GRAPH_RESULT_TOOLS:
            out["graph"].append(content)
        elif last_name in WEB_RESULT_TOOLS:
            out["web"].append(content)
    return out


def _all_answers_in(results: Sequence[str], answers: Sequence[str]) -> bool:
    """Graph-RFT eqs. 4–7: ``I({a} ∩ o = a)``: every gold answer appears in the concatenated results (name keys:
    case, quotes, dashes and spacing folded)."""
    if not results:
        return False
    joined = name_key("\n".join(results))
    keys = [name_key(a) for a in answers if name_key(a)]
    return bool(keys) and all(k in joined for k in keys)


def _graph_rft_format(text: str, r: Reading, require_plan: bool, case_sensitive_tags: bool) -> tuple[bool, str | None]:
    """The Think–Decompose–Retrieve–Search workflow (§3.3.1): reasoning in closed ``<think>`` blocks, every
    retrieval tag closed, readable tool calls, lower-case tags, and a closed, non-empty answer at the end of the
    reasoning; with ``require_plan`` also a ``<plan>`` block before the first retrieval."""
    if r.miscased:
        return False, "a tag is not in lower case"
    if r.think_blocks == 0 or r.think_dangling:
        return False, "no closed <think> block, or one left open"
    if not r.answer or not r.answer_after_think:
        return False, "no closed, non-empty <answer> after the reasoning"
    if r.n_bad_calls:
        return False, "a tool call could not be read"
    for tag in ("relation_search", "neighbor_search", "web_search", "plan"):
        scan = scan_tag(text, tag, case_sensitive=case_sensitive_tags)
        if scan.dangling is not None or scan.first_stray_close is not None:
            return False, f"an unpaired <{tag}> tag"
    if require_plan and not scan_tag(text, "plan", case_sensitive=case_sensitive_tags).blocks:
        return False, "no <plan> block"
    return True, None


def graph_rft(*, kg_setting: KGSetting = "complete", normalizer: Normalizer = LENIENT,
              case_sensitive_tags: bool = True, require_plan: bool = False) -> Reward:
    """Graph-RFT's overall reward (§3.3.2, eqs. 2–8), read case by case in the paper's order:

    - ``R_acc = max(0.1, F1)`` when the format is correct, else 0 (eqs. 2–3; F1 of entity sets);
    - ``R_graph`` / ``R_web`` = 1 when every gold answer appears in the concatenated graph results
      (``<neighbor_information>`` or a graph tool's ``<tool_response>``) / web results (eqs. 4–7);
    - ``R_over`` (eq. 8): ``R_acc`` if ``R_acc > 0``; else 0.1 if ``R_graph > 0`` or ``R_web > 0``; else −0.1
      if the web found the answer on a complete KG or did not on an incomplete one; else 0.

    Because ``R_acc ≥ 0.1`` whenever the format is right, the retrieval credit and the penalty only decide the
    score of malformed responses; read in order, the penalty fires on an incomplete KG when neither graph nor
    web found the answer (a web hit on a complete KG already took the 0.1 case). ``kg_setting`` is the
    default; a row's ground truth may carry its own ``kg_setting``."""
    normalizer = _check_normalizer(normalizer)
    if kg_setting not in ("complete", "incomplete"):
        raise RewardError(f"kg_setting must be 'complete' or 'incomplete', got {kg_setting!r}")

    def reward(solution_str: str, truth: GroundTruth) -> RewardResult:
        if not solution_str or not solution_str.strip():
            return _empty()
        r = read(solution_str, case_sensitive_tags=case_sensitive_tags)
        ok, why = _graph_rft_format(solution_str, r, require_plan, case_sensitive_tags)
        m = replace(_base(solution_str, truth, r, normalizer), format_ok=ok, reason=why)
        results = _tool_results(solution_str, case_sensitive_tags)
        graph_hit = _all_answers_in(results["graph"], truth.answers)
        web_hit = _all_answers_in(results["web"], truth.answers)
        r_acc = max(0.1, m.f1) if ok else 0.0
        setting = truth.kg_setting or kg_setting
        if r_acc > 0:
            score = r_acc
        elif graph_hit or web_hit:
            score = 0.1
        elif (web_hit and setting == "complete") or (not web_hit and setting == "incomplete"):
            score = -0.1
        else:
            score = 0.0
        return replace(m, score=score, graph_hit=graph_hit, web_hit=web_hit)

    return _named(reward, "graph_rft")


# -- KG-Hopper -----------------------------------------------------------------------------------------------------

SEARCH_STEP, SEARCH_CAP, FORMAT_BONUS = 0.5, 0.8, 0.5


class Judge(Protocol):
    """Verdicts for the KG-Hopper judge rewards (``training.judges``). ``None`` means the judge gave none."""

    def reasoning_score(self, question: str | None, reasoning: str) -> float | None: ...

    def answer_correct(self, question: str | None, predicted: str, gold: Sequence[str]) -> bool | None: ...


#: The reasoning reward recorded when the judge gave no score: the middle of f_r's range (0, 1), so a judge
#: outage shifts every rollout of a group alike and moves no advantage.
REASONING_UNAVAILABLE = 0.5


def kg_hopper_format(text: str, case_sensitive_tags: bool = True) -> tuple[bool, str | None]:
    """KG-Hopper's format (§III-B/C): one ``<think>…</think>`` block first, holding every ``<search>…</search>``
    (each closed, non-empty, not nested; its ``<searched_triples>`` closed), then one non-empty
    ``<answer>…</answer>``, with only whitespace around them; lower-case tags."""
    if case_sensitive_tags and _has_miscased_tag(text):
        return False, "a tag is not in lower case"
    think = scan_tag(text, "think", case_sensitive=case_sensitive_tags)
    answer = scan_tag(text, "answer", case_sensitive=case_sensitive_tags)
    if len(think.blocks) != 1 or think.dangling is not None or think.first_stray_close is not None:
        return False, "not exactly one closed <think> block"
    if len(answer.blocks) != 1 or answer.dangling is not None or answer.first_stray_close is not None:
        return False, "not exactly one closed <answer> block"
    t, a = think.blocks[0], answer.blocks[0]
    if text[: t.start].strip() or text[t.end : a.start].strip() or text[a.end :].strip():
        return False, "text outside <think> and <answer>, or the answer before the reasoning"
    if not text[a.inner_start : a.inner_end].strip():
        return False, "empty answer"
    inner = text[t.inner_start : t.inner_end]
    for tag in ("search", "searched_triples"):
        scan = scan_tag(inner, tag, case_sensitive=case_sensitive_tags)
        if scan.dangling is not None or scan.first_stray_close is not None:
            return False, f"an unpaired <{tag}> tag"
        open_tag = f"<{tag}>"
        for b in scan.blocks:
            body = inner[b.inner_start : b.inner_end]
            if tag == "search" and (not body.strip() or open_tag in _ascii_lower(body)):
                return False, "an empty or nested <search>"
    return True, None


def kg_hopper(judge: Judge | None = None, *, normalizer: Normalizer = LENIENT, case_sensitive_tags: bool = True,
              answer_fallback: Literal["rule", "none"] = "rule") -> Reward:
    """KG-Hopper's reward (§III-C, eq. 5): ``R = R_search + R_format + R_reason + R_answer``, in [0, 3.3].

    - ``R_search = min(0.5·n, 0.8)`` (eq. 1), ``n`` = ``<search>`` blocks in the reasoning plus tool calls;
    - ``R_format = 0.5`` when ``kg_hopper_format`` holds, else 0 (eq. 2);
    - ``R_reason = f_r(think text) ∈ (0, 1)`` from the judge (eq. 3);
    - ``R_answer = f_a(predicted, gold) ∈ {0, 1}`` from the judge (eq. 4), 0 without an answer.

    Without a verdict (no judge, or the judge failed) nothing is silently 0 or 1: ``judge_unavailable`` counts
    the missing verdicts, ``reason`` says so, the reasoning term takes ``REASONING_UNAVAILABLE`` and the answer
    term falls back to the rule-based match under ``normalizer`` (``answer_fallback="rule"``) or to 0.5
    (``"none"``). Batch verdicts ahead with ``training.judges.prefetch`` so a batch makes concurrent calls."""
    normalizer = _check_normalizer(normalizer)

    def reward(solution_str: str, truth: GroundTruth) -> RewardResult:
        if not solution_str or not solution_str.strip():
            return _empty()
        r = read(solution_str, case_sensitive_tags=case_sensitive_tags)
        ok, why = kg_hopper_format(solution_str, case_sensitive_tags)
        m = replace(_base(solution_str, truth, r, normalizer), format_ok=ok, reason=why)
        n_search = len(scan_tag(r.think, "search", case_sensitive=case_sensitive_tags).blocks)
        n_search += len(scan_tag(strip_think(solution_str), "search", case_sensitive=case_sensitive_tags).blocks)
        n_search += sum(isinstance(c, ToolCall) for c in r.calls)
        missing: list[str] = []
        reasoning = judge.reasoning_score(truth.question, r.think) if judge is not None else None
        if reasoning is None:
            missing.append("reasoning")
            reasoning = REASONING_UNAVAILABLE
        if not r.answer:
            answer_value = 0.0  # no answer is wrong without asking anyone
        else:
            verdict = judge.answer_correct(truth.question, r.answer, truth.answers) if judge is not None else None
            if verdict is None:
                missing.append("answer")
                answer_value = float(m.em) if answer_fallback == "rule" else 0.5
            else:
                answer_value = float(verdict)
        reasoning = min(max(float(reasoning), 0.0), 1.0)
        score = min(SEARCH_STEP * n_search, SEARCH_CAP) + FORMAT_BONUS * float(ok) + reasoning + answer_value
        note = why
        if missing:
            note = "judge unavailable for " + " and ".join(missing) + (f"; {why}" if why else "")
        return replace(m, score=score, n_search=n_search, judge_reasoning=reasoning, judge_answer=answer_value,
                       judge_unavailable=len(missing), reason=note)

    return _named(reward, "kg_hopper")


# -- registry ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RewardSpec:
    """A registered reward: how to build it with options, which options it takes, and where it comes from.
    Calling the spec scores with the default options (``REWARDS["omne_stage1"](text, truth)``)."""

    name: str
    build: Callable[..., Reward]
    options: frozenset[str]
    source: str

    def __call__(self, solution_str: str, truth: GroundTruth) -> RewardResult:
        return self.default(solution_str, truth)

    @property
    def default(self) -> Reward:
        return _default_reward(self.name)

    def with_options(self, **options: Any) -> Reward:
        unknown = sorted(set(options) - self.options)
        if unknown:
            raise RewardError(f"reward {self.name!r} takes no option(s) {unknown}; its options are {sorted(self.options)}")
        return self.build(**options) if options else self.default


_COMMON = frozenset({"normalizer", "case_sensitive_tags"})
REWARDS: dict[str, RewardSpec] = {
    spec.name: spec
    for spec in (
        RewardSpec("omne_stage1", omne_stage1_reward, _COMMON | {"think_opened_in_prompt"}, "Omne-R1 §3.3.2"),
        RewardSpec("omne_post_sft", omne_post_sft_reward, _COMMON | {"repeat_penalty"}, "Omne-R1 §3.5"),
        RewardSpec("eog_f1_path", eog_f1_path, _COMMON | {"path_weight"}, "Explore-on-Graph §3.2, Fig. 15"),
        RewardSpec("eog_joint", eog_joint, _COMMON | {"path_alpha"}, "Explore-on-Graph §3.2.2 eq. 5"),
        RewardSpec("graph_rft", graph_rft, _COMMON | {"kg_setting", "require_plan"}, "Graph-RFT §3.3.2 eqs. 2-8"),
        RewardSpec("kg_hopper", kg_hopper, _COMMON | {"judge", "answer_fallback"}, "KG-Hopper §III-C eqs. 1-5"),
    )
}
_DEFAULTS: dict[str, Reward] = {}


def _default_reward(name: str) -> Reward:
    if name not in _DEFAULTS:
        _DEFAULTS[name] = REWARDS[name].build()
    return _DEFAULTS[name]


def get_reward(name: str, **options: Any) -> Reward:
    """The reward registered as ``name`` built with ``options``; ``RewardError`` naming the choices for an
    unknown name or option."""
    spec = REWARDS.get(name)
    if spec is None:
        raise RewardError(f"unknown reward {name!r}; choose one of {sorted(REWARDS)}")
    return spec.with_options(**options)


# Kept under their historical names: the Omne-R1 rewards with the paper's options.
omne_stage1: Reward = _default_reward("omne_stage1")
omne_post_sft: Reward = _default_reward("omne_post_sft")

__all__ = [
    "DEFAULT_PATH_ALPHA",
    "DEFAULT_PATH_WEIGHT",
    "FORMAT_BONUS",
    "REASONING_UNAVAILABLE",
    "REPEAT_PENALTY",
    "REWARDS",
    "SEARCH_CAP",
    "SEARCH_STEP",
    "GroundTruth",
    "Judge",
    "Reward",
    "RewardError",
    "RewardResult",
    "RewardSpec",
    "answer_set_matches",
    "entity_f1",
    "eog_f1_path",
    "eog_joint",
    "flat_text",
    "format_ok",
    "get_reward",
    "graph_rft",
    "kg_hopper",
    "kg_hopper_format",
    "measure",
    "normalize_answer",
    "omne_post_sft",
    "omne_post_sft_reward",
    "omne_stage1",
    "omne_stage1_reward",
    "path_coverage",
    "read",
    "relation_terms",
    "think_text",
    "triple_mentioned",
]
