"""Tool records for the KG environment: argument models, OpenAI function-tool schemas, observations, parsed tool
calls, and the record of one agent run.

The argument models are the single source of truth for a tool's signature: the JSON schema shown to a model
(``tool_schema``), the positional-argument order of a Python-style call (``ToolSpec.parameters``) and the
validation of every call (``ToolSpec.args.model_validate``) all come from them.

Tool families:

- Omne-R1: ``entity_matcher(node_name, graph_type)`` and ``node_info(node_name, graph_type)``.
- Graph-RFT: ``relation_search(entity, relation)`` and ``neighbor_search(entity, relation)``.
- KG-Hopper: ``search(entity)``.

The Graph-RFT and KG-Hopper tools take an optional ``graph_type``: their papers work on one graph, so the
environment fills in its default domain when the argument is left out.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# -- argument models ------------------------------------------------------------------------------------------------

_GRAPH_TYPE_HELP = "Which knowledge graph to query (the domain named in the instructions)."


class _Args(BaseModel):
    # extra="forbid": an argument the tool does not take is a mistake the model should hear about, not a
    # silently ignored typo (``node`` instead of ``node_name``).
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class EntityMatcherArgs(_Args):
    node_name: str = Field(
        min_length=1,
        description="A name or short phrase to look up, e.g. 'crop rotation' or 'Alan Turing'. Need not be exact.",
    )
    graph_type: str = Field(min_length=1, description=_GRAPH_TYPE_HELP)


class NodeInfoArgs(_Args):
    node_name: str = Field(
        min_length=1, description="The exact entity name, as returned by entity_matcher or listed as a neighbour."
    )
    graph_type: str = Field(min_length=1, description=_GRAPH_TYPE_HELP)


class RelationSearchArgs(_Args):
    entity: str = Field(min_length=1, description="The exact name of the entity whose relations to list.")
    relation: str = Field(
        min_length=1, description="The relation you are looking for, in your own words, e.g. 'born in'."
    )
    graph_type: str | None = Field(default=None, description=_GRAPH_TYPE_HELP)


class NeighborSearchArgs(_Args):
    entity: str = Field(min_length=1, description="The exact name of the entity to start from.")
    relation: str = Field(
        min_length=1, description="A relation of that entity, preferably one listed by relation_search."
    )
    graph_type: str | None = Field(default=None, description=_GRAPH_TYPE_HELP)


class SearchArgs(_Args):
    entity: str = Field(min_length=1, description="The exact name of the entity whose facts to retrieve.")
    graph_type: str | None = Field(default=None, description=_GRAPH_TYPE_HELP)


class ToolSpec(BaseModel):
    """A tool's name, what it does (shown to the model) and its argument model."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    description: str
    args: type[_Args]
    family: Literal["omne", "graph_rft", "kg_hopper"]

    @property
    def parameters(self) -> tuple[str, ...]:
        """Argument names in declaration order: the order positional arguments bind to."""
        return tuple(self.args.model_fields)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(n for n, f in self.args.model_fields.items() if f.is_required())

    def signature(self) -> str:
        """``name(a, b, c=None)``: used in error observations so the model sees the expected call."""
        parts = [n if f.is_required() else f"{n}=None" for n, f in self.args.model_fields.items()]
        return f"{self.name}({', '.join(parts)})"


TOOL_SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            name="entity_matcher",
            family="omne",
            args=EntityMatcherArgs,
            description=(
                "Search the knowledge graph for entities whose name or description resembles the query. Returns "
                "the closest entities, best first, each with a short description. Use it to find the exact name "
                "of an entity before asking about it; it shows no relations."
            ),
        ),
        ToolSpec(
            name="node_info",
            family="omne",
            args=NodeInfoArgs,
            description=(
                "Show one entity of the knowledge graph: its description and every neighbouring entity, with the "
                "keywords and description of the relation that links them. Use it to move from an entity to "
                "its neighbours."
            ),
        ),
        ToolSpec(
            name="relation_search",
            family="graph_rft",
            args=RelationSearchArgs,
            description=(
                "List the relations of an entity that are closest to the relation you describe, best first, "
                "with how many neighbours each one reaches. Use it to pick a relation for neighbor_search."
            ),
        ),
        ToolSpec(
            name="neighbor_search",
            family="graph_rft",
            args=NeighborSearchArgs,
            description=(
                "List the entities linked to an entity by one relation (a relation label or keyword). Use a "
                "relation returned by relation_search."
            ),
        ),
        ToolSpec(
            name="search",
            family="kg_hopper",
            args=SearchArgs,
            description="Retrieve the facts about an entity as (head, relation, tail) triples.",
        ),
    )
}

#: The tools the Omne-R1 recipe uses, in the order they are offered.
OMNE_TOOLS: tuple[str, ...] = ("entity_matcher", "node_info")


def _strip_titles(node: Any) -> Any:
    """Drop pydantic's auto-generated ``title`` keys: they repeat the property name and cost prompt tokens."""
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if k != "title" or not isinstance(v, str)}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


@lru_cache(maxsize=None)
def _base_schema_json(name: str) -> str:
    spec = TOOL_SPECS[name]
    params = _strip_titles(spec.args.model_json_schema())
    for prop in params.get("properties", {}).values():
        # ``str | None`` renders as anyOf[string, null]; models and vLLM's tool parsers handle a plain
        # optional string (absent from ``required``) better.
        if "anyOf" in prop:
            branches = [b for b in prop.pop("anyOf") if b.get("type") != "null"]
            if len(branches) == 1:
                prop.update(branches[0])
        prop.pop("default", None)
    params["additionalProperties"] = False
    return json.dumps(
        {"type": "function", "function": {"name": name, "description": spec.description, "parameters": params}}
    )


def tool_schema(name: str, graph_type: str | None = None) -> dict[str, Any]:
    """The OpenAI function-tool definition of ``name`` (``{"type": "function", "function": {...}}``).

    With ``graph_type``, the ``graph_type`` parameter is narrowed to that one value (an ``enum``, as in the
    Omne-R1 prompt), so a model that copies the schema cannot pick another graph. Each call returns a fresh
    dict the caller may change. ``KeyError`` for an unknown tool.
    """
    schema = json.loads(_base_schema_json(name))
    if graph_type is not None:
        prop = schema["function"]["parameters"]["properties"].get("graph_type")
        if prop is not None:
            prop["enum"] = [graph_type]
            prop["description"] = f"Which knowledge graph to query; must be '{graph_type}' for this question."
    return schema


def tool_schemas(names: list[str] | tuple[str, ...], graph_type: str | None = None) -> list[dict[str, Any]]:
    """``tool_schema`` for each name, in the order given."""
    return [tool_schema(n, graph_type) for n in names]


# -- observations and calls -------------------------------------------------------------------------------------------

ErrorKind = Literal[
    "parse_error",  # the text inside <tool_call> is not a call we can read
    "unknown_tool",  # a tool name the environment does not offer
    "bad_arguments",  # missing, extra, duplicated or mistyped arguments
    "unknown_graph",  # graph_type is not a loaded domain
    "unknown_entity",  # no entity by that name (the observation lists the closest ones)
    "no_match",  # the entity exists but nothing matches the relation asked for
    "skipped",  # a call beyond the per-round limit, not executed
    "internal",  # a bug in the environment; logged, never raised into a rollout
]


class Observation(BaseModel):
    """What a tool call gives back to the model.

    ``text`` is always something the model can act on, also when ``ok`` is false (then ``error_kind`` says
    what went wrong). Tools never raise for bad input: every problem becomes an observation.
    """

    model_config = ConfigDict(frozen=True)

    text: str
    ok: bool = True
    error_kind: ErrorKind | None = None


CallStyle = Literal["python", "json", "api"]


class ToolCall(BaseModel):
    """One tool call read from model output, arguments bound to names (positional ones included).

    ``style`` is how it was written: ``python`` (``node_info(node_name="X", graph_type="cs")`` in
    ``<tool_call>``), ``json`` (hermes ``{"name": ..., "arguments": {...}}`` in ``<tool_call>``) or ``api`` (an
    OpenAI ``tool_calls`` entry). ``id`` is the API call id (``None`` for text calls).
    """

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    style: CallStyle
    id: str | None = None
    raw: str = ""

    def key(self) -> str:
        """Identity for repeat counting: name plus arguments in canonical JSON (sorted keys)."""
        return self.name + json.dumps(self.arguments, sort_keys=True, ensure_ascii=False, default=str)

    def as_json(self) -> str:
        """The hermes/LLaMA-Factory form ``{"name": ..., "arguments": {...}}``."""
        return json.dumps({"name": self.name, "arguments": self.arguments}, ensure_ascii=False)


class CallError(BaseModel):
    """A tool call that could not be read or bound; ``observation()`` is what the model is told."""

    kind: Literal["parse_error", "unknown_tool", "bad_arguments"]
    message: str
    style: CallStyle | None = None
    name: str | None = None
    id: str | None = None
    raw: str = ""

    def observation(self) -> Observation:
        return Observation(text=self.message, ok=False, error_kind=self.kind)


# -- agent runs ---------------------------------------------------------------------------------------------------------

EndReason = Literal["answer", "round_limit", "token_limit", "error", "no_tool_call"]


class ToolCallRecord(BaseModel):
    """One executed (or rejected) tool call of an agent run."""

    round: int = Field(ge=1, description="The tool round (1-based) in which the call was made.")
    name: str | None
    arguments: dict[str, Any] = Field(default_factory=dict)
    style: CallStyle | None = None
    call_id: str | None = None
    ok: bool
    error_kind: ErrorKind | None = None
    observation: str
    repeated: bool = False


class TokenCounts(BaseModel):
    """Tokens reported by the endpoint over a run; ``per_round`` is the completion tokens of each generation."""

    prompt: int = 0
    completion: int = 0
    per_round: list[int] = Field(default_factory=list)


class AgentRun(BaseModel):
    """The full record of one multi-turn tool-use run.

    ``messages`` is the conversation as sent to the endpoint (system, user, assistant, tool observations), plus
    the last assistant reply. Reasoning is not in ``messages``: ``reasoning[i]`` belongs to the i-th assistant
    message (``None`` when it had none), so exports can put it back (``<think>`` blocks) or leave it out.
    ``rounds`` counts tool rounds (assistant turns that made at least one tool call); ``generations`` counts
    every endpoint call, nudges included. ``repeated_calls`` counts calls identical (name and arguments) to an
    earlier call of the same run. ``final_answer`` is set only when ``end_reason == "answer"``.
    """

    question: str
    graph_type: str
    style: Literal["text", "api"]
    role: str
    messages: list[dict[str, Any]]
    reasoning: list[str | None] = Field(default_factory=list)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    rounds: int = 0
    generations: int = 0
    nudges: int = 0
    end_reason: EndReason
    final_answer: str | None = None
    repeated_calls: int = 0
    tokens: TokenCounts = Field(default_factory=TokenCounts)
    error: str | None = None


__all__ = [
    "AgentRun",
    "CallError",
    "CallStyle",
    "EndReason",
    "EntityMatcherArgs",
    "ErrorKind",
    "NeighborSearchArgs",
    "NodeInfoArgs",
    "OMNE_TOOLS",
    "Observation",
    "RelationSearchArgs",
    "SearchArgs",
    "TOOL_SPECS",
    "TokenCounts",
    "ToolCall",
    "ToolCallRecord",
    "ToolSpec",
    "tool_schema",
    "tool_schemas",
]
