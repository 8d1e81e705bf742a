"""Trajectory records: tool-use and long-CoT reasoning traces distilled from the ``teacher`` role.

One record per ``(qa_id, kind, sample)``, accepted or rejected, in the ``trajectories`` table
(``warehouse/sql/0010_trajectories.sql``; a record's fields are the table's columns).

Kinds:

- ``template``: the canonical tool sequence along a verified gold path (``entity_matcher`` on the start entity, then
  ``node_info`` on each path node before the answer), real tool outputs, the teacher writes the thought of every
  step (Omne-R1, section 3.3: "constructing a trajectory template and then filling in the detailed reasoning").
- ``rollouts``: the multi-turn tool loop run by the teacher, kept when its final answer matches the gold answer
  (rejection sampling; ``sample`` numbers the draws of one question).
- ``cot``: one long chain of thought over the question's subgraph given in context, ``<think>…</think>`` then
  ``<answer>[…]</answer>`` (Explore-on-Graph, section 3.1 and figure 9).

Message format (``messages``): OpenAI chat messages, the same for every kind, so that exports are one mapping:

- ``{"role": "system" | "user", "content": str}``;
- ``{"role": "assistant", "content": str, "tool_calls": [{"id", "type": "function", "function": {"name",
  "arguments": <JSON string>}}]}`` (``tool_calls`` absent on a turn without a call);
- ``{"role": "tool", "tool_call_id": str, "name": str, "content": <observation text>}``.

Assistant ``content`` never holds reasoning: ``reasoning[i]`` is the thought of the i-th assistant message
(``None`` when it had none), so an export can put it back as ``<think>…</think>`` or leave it out.

Identity: ``trajectory_id`` is ``"traj-" + sha256(qa_id, kind, sample)[:24]`` (``make_trajectory_id``), so a
resumed run recognises what it already stored and a re-stored row is an upsert.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from schemas.ids import content_digest

#: The kinds of trajectory, in the order a flow runs them.
TrajectoryKind = Literal["template", "rollouts", "cot"]
TRAJECTORY_KINDS: tuple[str, ...] = get_args(TrajectoryKind)

TrajectoryStatus = Literal["accepted", "rejected"]

#: Why a trajectory was not kept. Each code is produced by exactly one rule:
TrajectoryRejectReason = Literal[
    "no_gold_path",  # template: the verifier did not confirm the question's own path; cot: it confirmed no path
    "too_many_rounds",  # template: the path needs more tool calls than the agent's round limit
    "tool_error",  # template: a canonical tool call returned an error; rollouts: a tool failed internally
    "start_not_found",  # template: entity_matcher on the start entity does not list it
    "next_hop_missing",  # template: node_info of a path node does not list the next path node
    "pin_missing",  # template: node_info of a pinned node does not list the value the question's pin names
    "thoughts_leak",  # template: the teacher's thoughts name a path node before a tool output showed it
    "llm_error",  # any kind: the teacher gave no usable output (endpoint failure, invalid structured output)
    "no_answer",  # rollouts: the run ended without an <answer> (round/token limit, no tool call)
    "wrong_answer",  # rollouts: the final answer does not match the gold answer
    "nudged",  # rollouts: right answer, but the run needed a protocol reminder (bad training data)
    "malformed_call",  # rollouts: a tool call that could not be read, named no tool, or was skipped
    "bad_format",  # cot: no <think> reasoning or no <answer> in the teacher's reply
    "answer_mismatch",  # cot: the answer set differs from the gold answer set
    "low_path_coverage",  # cot: the reasoning mentions too few of the gold path's triples
    "template_unphrasable",  # template (template writer): a hop of the path cannot be put into words
    "thought_markup",  # template/rollouts: a thought holds tags, JSON or tool-call syntax
    "thought_pastes_tool_output",  # template/rollouts: a thought pastes a tool result instead of reasoning on it
    "thought_repetitive",  # any kind: a thought (or the CoT reasoning) loops
    "thought_wrong_language",  # any kind: a thought is not in the configured language
    "bad_tool_argument",  # rollouts: a tool argument is a sentence or a request, not an entity name
    "hidden_fact_not_fetched",  # IKG rollouts/cot: right answer, but no hidden fact read in the text nor other path
]
TRAJECTORY_REJECT_REASONS: tuple[str, ...] = get_args(TrajectoryRejectReason)

#: Where the path behind a template or CoT trajectory came from (see ``tasks.distill.common.choose_gold_paths``).
GoldSource = Literal["generator_confirmed", "verified_alternative", "question_path"]




def make_trajectory_id(qa_id: str, kind: str, sample: int) -> str:
    """The id of the ``sample``-th trajectory of ``kind`` for question ``qa_id`` (stable across runs)."""
    return "traj-" + content_digest(qa_id, kind, str(sample))[:24]


class Trajectory(BaseModel):
    """One distilled trajectory with its verdict and provenance (see the module docstring).

    ``n_rounds`` counts tool rounds (assistant turns with a tool call); ``repeated_calls`` counts calls identical
    (name and arguments) to an earlier call of the same trajectory. ``end_reason`` is the agent loop's for
    rollouts, ``"answer"`` for an accepted template or CoT. ``gold_path``/``gold_source`` name the path a
    template followed (and the first gold path of a CoT subgraph). ``path_coverage`` is the Explore-on-Graph path
    reward of the reasoning text (share of gold triples mentioned; the best gold path counts), set for every kind
    that has reasoning. ``params`` are the sampling parameters sent to the teacher. ``split`` is the question's
    split when the trajectory was made; exports read the current split from ``qa``.
    """

    model_config = ConfigDict(extra="forbid")

    trajectory_id: str
    qa_id: str
    kind: TrajectoryKind
    sample: int = Field(0, ge=0)
    domain: str
    snapshot_id: str | None = None
    split: str | None = None
    status: TrajectoryStatus
    reject_reason: TrajectoryRejectReason | None = None
    detail: str = ""
    question: str
    golden_answer: str
    messages: list[dict[str, Any]] = Field(default_factory=list)
    reasoning: list[str | None] = Field(default_factory=list)
    final_answer: str | None = None
    n_rounds: int = Field(0, ge=0)
    repeated_calls: int = Field(0, ge=0)
    end_reason: str | None = None
    tools: list[str] = Field(default_factory=list)
    gold_path: list[str] = Field(default_factory=list)
    gold_source: GoldSource | None = None
    path_coverage: float | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    run_id: str | None = None
    model: str | None = None
    prompt_tokens: int = Field(0, ge=0)
    completion_tokens: int = Field(0, ge=0)
    writer: Literal["llm", "template"] = Field(
        "llm", description="Who wrote the thoughts: the teacher LLM, or the template writer (template kind only)."
    )

    @property
    def accepted(self) -> bool:
        return self.status == "accepted"


__all__ = [
    "GoldSource",
    "TRAJECTORY_KINDS",
    "TRAJECTORY_REJECT_REASONS",
    "Trajectory",
    "TrajectoryKind",
    "TrajectoryRejectReason",
    "TrajectoryStatus",
    "make_trajectory_id",
]
