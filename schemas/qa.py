"""QA factory records: seeds, generation attempts, accepted questions, rejects, gold paths and yields.

Shapes follow the warehouse tables of ``warehouse/sql/0007_qa.sql`` one to one (a record's fields are the
table's columns), so ``Warehouse.write_batch(table, records)`` stores them directly. Lists and nested records
(paths, verdicts, path edges, triples) are JSON columns: ``write_batch`` serialises them with ``json.dumps``,
which keeps every character of a node name (a string cast to ``VARCHAR[]`` would not: DuckDB drops quotes
such as the apostrophe in "King's College").

Identity rules:

- ``qa_id`` is ``"qa-" + sha256(domain, snapshot_id, normalised question, normalised answer, path)[:24]``
  (``make_qa_id``): the same question generated again from the same graph gets the same id, so reruns and
  exports are byte-identical and a re-inserted row is an upsert, not a copy.
- ``attempt_id`` is ``"att-" + sha256(run_id, domain, snapshot_id, seed node, hop class, mode, attempt)[:24]``
  (``make_attempt_id``): one id per generation call slot, stable when a crashed run resumes.
- A ``Verdict`` names its check (``check``), whether it passed (``ok``), the reject code it stands for
  (``code``, set only when it failed) and a sentence for people and for the generator's retry feedback
  (``reason``). ``blocking=False`` marks a failed check that is only flagged (the shortcut check can be
  configured that way): it is stored, but it does not reject.
"""

from __future__ import annotations

import unicodedata
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from schemas.graph import Domain
from schemas.ids import content_digest
from schemas.programs import QueryProgram

#: Hop classes of the Omne-R1 recipe: paths of 2-3 nodes ("1-2") and of 4 or more nodes ("3+").
HopClass = Literal["1-2", "3+"]

#: How a question was generated: the model picks its own path in the rendered subgraph ("free"), or it picks
#: one of the code-sampled candidate paths ("candidates").
GenMode = Literal["free", "candidates"]

#: Dataset splits, in export order.
Split = Literal["train", "validation", "test"]
SPLITS: tuple[Split, ...] = ("train", "validation", "test")

#: Why a candidate question was not kept. Every code below is produced by exactly one stage:
RejectReason = Literal[
    "unknown_node",  # checks: a path node is not an entity of the domain graph
    "path_not_simple",  # checks: a node appears twice in the path
    "path_not_connected",  # checks: two consecutive path nodes are not adjacent (either direction)
    "answer_not_last_node",  # checks: the answer is not the path's last node
    "wrong_hop_count",  # checks: the number of path nodes does not fit the hop class
    "start_not_named",  # checks: the question does not name the path's start node
    "leaks_answer",  # checks: the question names the answer
    "leaks_intermediate_node",  # checks: the question names a node between start and answer
    "shortcut",  # checks: the answer is closer to the start than the path's hop count
    "ambiguous_answer",  # checks: the path's relation chain from the start also leads to other nodes
    "pin_not_stated",  # checks: the question does not name the value of a fact its program pins a node with
    "scope_not_stated",  # checks: the program's one answer holds only within what the graph covers; the question omits it
    "path_not_from_seed",  # checks: the path does not start at the job's seed node
    "leaks_partial_name",  # checks: the question has a distinctive word of the answer's or an intermediate's name
    "has_markup",  # text gates: markup, code, JSON, regex, placeholders, URLs or symbols in the question
    "has_label",  # text gates: a role or format label ("Answer:", "Step 1", "path P3") in the question
    "not_one_question",  # text gates: not one complete question sentence ending in "?"
    "bad_length",  # text gates: fewer or more words than configured
    "repetitive",  # text gates: degenerate repetition of words or phrases
    "wrong_language",  # text gates: not in the configured language
    "copies_source",  # text gates: copied from the prompt's instructions or a relation description
    "template_unphrasable",  # template writer: no relation of the path could be put into words
    "not_answerable_from_facts",  # meaning check: the verifier, given only the facts, answered something else
    "judge_invalid",  # judge: the LLM question judge said the question is invalid
    "duplicate",  # dedup: same normalised (question, answer) as a kept question of the domain
    "near_duplicate",  # dedup: character n-gram Jaccard with a kept question at or above the threshold
    "duplicate_path",  # dedup: same answer over the same path edges as a kept question, whatever the wording
    "paraphrase",  # dedup: sentence-embedding cosine with a kept question (same answer) at or above the threshold
    "split_conflict",  # splits: it links entities already held by two different splits; earlier questions never move
    "llm_error",  # generation: no parseable, schema-valid output after the gateway's retries
]
REJECT_REASONS: tuple[str, ...] = get_args(RejectReason)

#: Names of the code checks (``tasks.qa.checks``), in the order they run and are reported.
CheckName = Literal[
    "nodes_exist",
    "path_simple",
    "path_connected",
    "answer_is_last_node",
    "hop_count",
    "start_named",
    "answer_hidden",
    "intermediates_hidden",
    "no_shortcut",
    "answer_unique",
    "pins_named",
    "scope_stated",
    "starts_at_seed",
    "no_partial_leak",
    # text gates (tasks.qa.text_gates), run with the code checks, before the judge
    "no_markup",
    "no_labels",
    "question_form",
    "question_length",
    "no_repetition",
    "language",
    "not_copied",
    # meaning check (tasks.qa.meaning_check), after the code checks and text gates, before the judge
    "answerable_from_facts",
]

#: The reject code a failed check stands for.
CHECK_CODES: dict[str, RejectReason] = {
    "nodes_exist": "unknown_node",
    "path_simple": "path_not_simple",
    "path_connected": "path_not_connected",
    "answer_is_last_node": "answer_not_last_node",
    "hop_count": "wrong_hop_count",
    "start_named": "start_not_named",
    "answer_hidden": "leaks_answer",
    "intermediates_hidden": "leaks_intermediate_node",
    "no_shortcut": "shortcut",
    "answer_unique": "ambiguous_answer",
    "pins_named": "pin_not_stated",
    "scope_stated": "scope_not_stated",
    "starts_at_seed": "path_not_from_seed",
    "no_partial_leak": "leaks_partial_name",
    "no_markup": "has_markup",
    "no_labels": "has_label",
    "question_form": "not_one_question",
    "question_length": "bad_length",
    "no_repetition": "repetitive",
    "language": "wrong_language",
    "not_copied": "copies_source",
    "answerable_from_facts": "not_answerable_from_facts",
}

#: Who wrote a question (or a trajectory's thoughts): the LLM, the deterministic template writer
#: (``tasks.qa.template_writer``), or the LLM paraphrasing a template question (kept only if it passed every gate).
Writer = Literal["llm", "template", "template+paraphrase"]
WRITERS: tuple[str, ...] = get_args(Writer)

AttemptStatus = Literal[
    "checked",  # every blocking code check passed; the question judge has not answered yet
    "accepted",  # checks and judge passed: a ``QA`` row was made from it (dedup may still drop that row)
    "rejected",  # ``reject_reason`` says why
]

#: Stages a yield row counts.
YieldStage = Literal["seeds", "generated", "checks", "judge", "dedup", "splits", "accepted", "gold_paths"]

GoldVerdict = Literal["unverified", "valid", "invalid"]


def _norm_text(s: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", s).casefold().split())




def make_qa_id(domain: str, snapshot_id: str | None, question: str, answer: str, path: list[str]) -> str:
    """The id of an accepted question (see the module docstring); case and whitespace of the question and
    answer do not change it, the path does."""
    return "qa-" + content_digest(domain, snapshot_id or "", _norm_text(question), _norm_text(answer), *path)[:24]


def make_attempt_id(
    run_id: str | None, domain: str, snapshot_id: str | None, seed: str, hop_class: str, mode: str, attempt: int
) -> str:
    """The id of one generation attempt (see the module docstring)."""
    return "att-" + content_digest(run_id or "", domain, snapshot_id or "", seed, hop_class, mode, str(attempt))[:24]


class Seed(BaseModel):
    """A node chosen to grow questions from: its ``depth``-hop ball holds ``ball_size`` nodes (centre included).
    ``sample_rank`` is its position in the seeded sample (0 first). ``run_id`` is part of the ``seeds`` table's
    key: set it before writing."""

    model_config = ConfigDict(extra="forbid")

    domain: Domain
    snapshot_id: str | None = None
    node: str
    ball_size: int = Field(ge=1)
    depth: int = Field(ge=1)
    sample_rank: int = Field(ge=0)
    sampling_seed: int | None = None
    run_id: str | None = None


class PathEdge(BaseModel):
    """The relation used for one hop of a path, seen in walking order (``head`` then ``tail``).

    ``forward`` is true when the stored relation reads from ``head`` to ``tail``: a directed relation walked
    backwards has ``forward=False``, and so has an undirected one walked from its stored target (its label reads
    from its stored source: "Abram was born in Ur" stored without direction is not "Ur was born in Abram").
    ``triple()`` gives the fact in its stored direction, which is how a person (or a verifier) should read it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    head: str
    tail: str
    relation: str = ""
    keywords: list[str] = Field(default_factory=list)
    description: str = ""
    directed: bool = False
    forward: bool = True
    source_chunk_ids: list[str] = Field(default_factory=list)

    def relation_text(self) -> str:
        """The label, else the keywords joined with ", ", else the description (LightRAG relations have no
        label)."""
        if self.relation:
            return self.relation
        if self.keywords:
            return ", ".join(self.keywords)
        return self.description

    def triple(self) -> tuple[str, str, str]:
        """``(subject, relation text, object)`` in the relation's stored direction."""
        if self.forward:
            return (self.head, self.relation_text(), self.tail)
        return (self.tail, self.relation_text(), self.head)


class CandidatePath(BaseModel):
    """A code-sampled path offered to the generator in ``candidates`` mode: ``id`` is "P1", "P2", ...;
    ``edges[i]`` joins ``nodes[i]`` and ``nodes[i + 1]``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    nodes: list[str]
    edges: list[PathEdge]
    program: QueryProgram | None = Field(None, description="The program the path was sampled as, if any.")

    @property
    def hops(self) -> int:
        return len(self.nodes) - 1


class Verdict(BaseModel):
    """One code check's outcome (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    check: CheckName
    ok: bool
    code: RejectReason | None = None
    reason: str = ""
    blocking: bool = True

    @property
    def rejects(self) -> bool:
        """Whether this verdict alone rejects the candidate."""
        return not self.ok and self.blocking


class QACandidate(BaseModel):
    """What the generator proposes: a path through the rendered subgraph, a question, and the answer node.
    This is also the shape of the generator's structured output (``generator_output_schema``)."""

    model_config = ConfigDict(extra="forbid")

    path: list[str]
    question: str
    answer: str


def generator_output_schema(
    node_names: list[str], *, min_nodes: int, max_nodes: int, candidate_ids: list[str] | None = None
) -> dict[str, Any]:
    """The JSON schema of one generator reply for one request: path items and the answer are ``enum``s of the
    rendered node names, so a constraining endpoint can only name real nodes. With ``candidate_ids`` (the
    ``candidates`` mode) the reply also carries ``path_id``, one of those ids."""
    names = list(dict.fromkeys(node_names))
    props: dict[str, Any] = {
        "path": {
            "type": "array",
            "items": {"type": "string", "enum": names},
            "minItems": min_nodes,
            "maxItems": max_nodes,
        },
        "question": {"type": "string", "minLength": 1},
        "answer": {"type": "string", "enum": names},
    }
    required = ["path", "question", "answer"]
    if candidate_ids is not None:
        props = {"path_id": {"type": "string", "enum": list(candidate_ids)}, **props}
        required = ["path_id", *required]
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


class QAAttempt(BaseModel):
    """One generation attempt for one seed: what the generator returned (``raw_text``), what was parsed from it,
    every code verdict, the judge's answer, and the outcome. Attempts are never deleted: a rejected attempt is
    the record of why (``reject_reason``), and the next attempt's prompt carries its feedback."""

    model_config = ConfigDict(extra="forbid")

    attempt_id: str
    run_id: str | None = None
    domain: Domain
    snapshot_id: str | None = None
    seed: str
    hop_class: HopClass
    mode: GenMode
    attempt: int = Field(ge=1, description="1 for the first try, 2 for the first retry, ...")
    candidate_id: str | None = Field(None, description="The candidate path picked, in candidates mode.")
    path: list[str] = Field(default_factory=list)
    question: str = ""
    answer: str = ""
    verdicts: list[Verdict] = Field(default_factory=list)
    judge_valid: bool | None = None
    judge_reason: str | None = None
    status: AttemptStatus
    reject_reason: RejectReason | None = None
    raw_text: str | None = Field(None, description="The generator's reply as received (reasoning excluded).")
    writer: Writer = "llm"
    failure_kind: str | None = Field(
        None, description="For llm_error: the gateway's failure kind (timeout, connection, validation...).")
    program: QueryProgram | None = Field(None, description="The program the question was written from, if any.")


class QA(BaseModel):
    """An accepted question with its provenance: the attempt and run that made it, the path and the relation of
    every hop (``path_edges``), and the chunks those relations were extracted from."""

    model_config = ConfigDict(extra="forbid")

    qa_id: str
    domain: Domain
    snapshot_id: str | None = None
    seed: str
    hop_class: HopClass
    path: list[str]
    path_edges: list[PathEdge]
    question: str
    answer: str
    split: Split | None = None
    run_id: str | None = None
    attempt_id: str | None = None
    source_chunk_ids: list[str] = Field(default_factory=list)
    writer: Writer = "llm"
    program: QueryProgram | None = Field(None, description="The program the question was written from (steps, "
                                         "constraints, the chain it executed to); None for a bare path.")

    @field_validator("path")
    @classmethod
    def _path_long_enough(cls, v: list[str]) -> list[str]:
        if len(v) < 2:
            raise ValueError("a QA path needs at least two nodes")
        return v

    @property
    def hops(self) -> int:
        return len(self.path) - 1

    @property
    def kind(self) -> str:
        """``chain`` or ``conjunction`` (the program's kind); a question without a program is a chain."""
        return self.program.kind if self.program is not None else "chain"


class QAReject(BaseModel):
    """A question dropped after its attempt was accepted (dedup, splits), or any candidate a stage dropped that
    has no attempt row of its own. Every accepted attempt ends in exactly one ``qa`` row or one of these (a
    ``qa_id`` another attempt already holds is a ``duplicate`` of it). ``duplicate_of`` is the ``qa_id`` of the
    kept row for ``duplicate``, ``duplicate_path``, ``near_duplicate`` and ``paraphrase``; ``similarity`` is the
    n-gram Jaccard for ``near_duplicate``, the embedding cosine for ``paraphrase``, 1.0 for the other two."""

    model_config = ConfigDict(extra="forbid")

    run_id: str | None = None
    domain: Domain
    stage: YieldStage
    reason: RejectReason
    qa_id: str | None = None
    attempt_id: str | None = None
    duplicate_of: str | None = None
    similarity: float | None = None
    question: str = ""
    answer: str = ""
    detail: str = ""


class GoldPath(BaseModel):
    """One start-to-answer path found by the bounded search, as triples, with the LLM verifier's verdict.
    ``rank`` is its position in the search order (shortest first, then by node names)."""

    model_config = ConfigDict(extra="forbid")

    qa_id: str
    rank: int = Field(ge=0)
    path: list[str]
    triples: list[tuple[str, str, str]]
    verdict: GoldVerdict = "unverified"
    reason: str = ""
    is_generator_path: bool = False
    run_id: str | None = None

    @property
    def hops(self) -> int:
        return len(self.path) - 1


class QAYield(BaseModel):
    """A count for the yield report: how many items a stage saw / kept / rejected for one reason, per domain,
    hop class and generation mode. ``reason`` is a ``RejectReason`` for reject counts and "" for totals."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    domain: Domain
    hop_class: HopClass | Literal[""] = ""
    mode: GenMode | Literal[""] = ""
    stage: YieldStage
    count: int = Field(ge=0)
    reason: str = ""


__all__ = [
    "CHECK_CODES",
    "REJECT_REASONS",
    "SPLITS",
    "AttemptStatus",
    "CandidatePath",
    "CheckName",
    "GenMode",
    "GoldPath",
    "GoldVerdict",
    "HopClass",
    "PathEdge",
    "QA",
    "QAAttempt",
    "QACandidate",
    "QAReject",
    "QAYield",
    "RejectReason",
    "Seed",
    "Split",
    "Verdict",
    "WRITERS",
    "Writer",
    "YieldStage",
    "generator_output_schema",
    "make_attempt_id",
    "make_qa_id",
]
