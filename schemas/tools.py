"""Tool records for the KG environment: argument models, OpenAI function-tool schemas, observations, parsed tool
calls, and the record of one agent run.

The argument models are the single source of truth for a tool's signature: the JSON schema shown to a model
(``tool_schema``, the tool contract every training and serving path uses), the positional-argument order of a
Python-style call (``ToolSpec.parameters``) and the validation of every call (``ToolSpec.args.model_validate``) all
come from them.

Tool families:

- Omne-R1: ``entity_matcher(node_name, graph_type)`` and ``node_info(node_name, graph_type)``.
- Graph-RFT: ``relation_search(entity, relation)`` and ``neighbor_search(entity, relation)``.
- KG-Hopper: ``search(entity)``.
- Text: ``web_search(query)`` (Graph-RFT's name; ``text_search`` is its alias) over the corpus chunks of the
  graph's domain, for facts an incomplete graph lacks (``tasks.env.text_search``, ``tasks.env.ikg``).

The Graph-RFT and KG-Hopper tools take an optional ``graph_type``: their papers work on one graph, so the
environment fills in its default domain when the argument is left out.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
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


class WebSearchArgs(_Args):
    query: str = Field(
        description="What to look up in the text: the entity and the relation the graph had no information on, "
        "e.g. 'Alan Turing born in'.",
    )
    graph_type: str | None = Field(default=None, description="Which domain's texts to search (the graph's domain).")


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
        ToolSpec(
            name="web_search",
            family="graph_rft",
            args=WebSearchArgs,
            description=(
                "Search the texts the knowledge graph was built from for passages about an entity and a relation, "
                "best first. Use it when the graph tools have no information on a fact."
            ),
        ),
        ToolSpec(
            name="text_search",
            family="graph_rft",
            args=WebSearchArgs,
            description=(
                "Search the texts the knowledge graph was built from for passages about an entity and a relation, "
                "best first (the same tool as web_search)."
            ),
        ),
    )
}

#: The text-search tools (Graph-RFT's ``web_search``, and ``text_search``, its alias): offered only where a text
#: collection is loaded, so an environment offers the graph tools by default.
TEXT_TOOLS: tuple[str, ...] = ("web_search", "text_search")
#: The graph tools.
KG_TOOLS: tuple[str, ...] = tuple(n for n in TOOL_SPECS if n not in TEXT_TOOLS)

#: The tools the Omne-R1 recipe uses, in the order they are offered.
OMNE_TOOLS: tuple[str, ...] = ("entity_matcher", "node_info")


# -- the tool contract: one schema per tool, the same bytes in every chat template -----------------------------------

#: The JSON types an argument may have, with the Python annotation that makes ``transformers.get_json_schema`` (what
#: TRL turns a tool function into) give the same type.
_JSON_TYPES: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool}


class ToolContractError(TypeError):
    """A tool whose arguments the tool contract cannot describe the same way on every training and serving path."""


def _contract_property(tool: str, arg: str, prop: dict[str, Any]) -> dict[str, Any]:
    """``{"type", "description"}`` of one argument. ``str | None`` (an optional argument) is its plain type: it is
    optional by being absent from ``required``."""
    branches = [b for b in prop.get("anyOf", [prop]) if b.get("type") != "null"]
    kind = branches[0].get("type") if len(branches) == 1 else None
    if kind not in _JSON_TYPES or "enum" in branches[0] or not prop.get("description"):
        raise ToolContractError(f"tool {tool!r} argument {arg!r} must be a described plain {'/'.join(_JSON_TYPES)}: "
                                "verl keeps only type, description and enum of a property, and TRL derives the "
                                "schema from a typed function, so anything else would read differently there")
    return {"type": kind, "description": prop["description"]}


@lru_cache(maxsize=None)
def _contract_json(name: str) -> str:
    spec = TOOL_SPECS[name]
    props = {arg: _contract_property(name, arg, prop)
             for arg, prop in spec.args.model_json_schema().get("properties", {}).items()}  # fmt: skip
    if not spec.required:
        raise ToolContractError(f"tool {name!r} has no required argument: transformers leaves `required` out then, "
                                "so TRL's schema would differ from the others")
    params = {"type": "object", "properties": props, "required": list(spec.required)}
    return json.dumps({"type": "function", "function": {"name": name, "description": spec.description,
                                                        "parameters": params}})  # fmt: skip


def tool_schema(name: str) -> dict[str, Any]:
    """The tool contract of ``name``: the OpenAI function-tool definition every path shows the model.

    SFT rows (the export's ``tools`` column, rendered by LLaMA-Factory), verl's tool config, TRL's tool functions
    (``tool_function``) and the evaluation loop all take it from here, so the tool block of their prompts is the
    same text. Its shape is the subset all of them keep as written: verl reads a schema into
    ``OpenAIFunctionToolSchema`` and renders ``model_dump(exclude_unset=True, exclude_none=True)`` (a property keeps
    ``type``, ``description`` and ``enum`` only, in that order); transformers' ``get_json_schema`` gives ``type``
    then ``description`` for a typed, documented argument. So: no ``minLength``, no ``additionalProperties``, no
    per-question ``enum`` (verl's tool config is one schema per tool for the whole run; the instructions name the
    graph, and the environment refuses any other). The argument models still validate every call. Each call
    returns a fresh dict; ``KeyError`` for an unknown tool.
    """
    return json.loads(_contract_json(name))


def tool_schemas(names: list[str] | tuple[str, ...]) -> list[dict[str, Any]]:
    """``tool_schema`` for each name, in the order given."""
    return [tool_schema(n) for n in names]


def tool_function(name: str, call: Callable[[str, dict[str, Any]], str]) -> Callable[..., str]:
    """A Python function offering tool ``name`` to TRL, which builds a tool's schema from a function with
    ``transformers.get_json_schema``: the signature (keyword-only arguments, optional ones defaulting to ``None``),
    annotations and Google-style docstring are written from ``tool_schema(name)`` so that the schema TRL renders
    is the contract itself (no return annotation or ``Returns:`` section: either would add a ``return`` key).
    Calling it runs ``call(name, arguments)`` with the arguments given (``None`` ones left out)."""
    fn = tool_schema(name)["function"]
    props = fn["parameters"]["properties"]
    required = set(fn["parameters"]["required"])

    def tool(**arguments: Any) -> str:
        return call(name, {k: v for k, v in arguments.items() if v is not None})

    empty = inspect.Parameter.empty
    tool.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, annotation=_JSON_TYPES[p["type"]],
                          default=empty if k in required else None) for k, p in props.items()])  # fmt: skip
    tool.__annotations__ = {k: _JSON_TYPES[p["type"]] for k, p in props.items()}
    args = "\n".join(f"    {k}: {p['description']}" for k, p in props.items())
    tool.__doc__ = f"{fn['description']}\n\nArgs:\n{args}"
    tool.__name__ = tool.__qualname__ = name
    return tool


# -- observations and calls -------------------------------------------------------------------------------------------

ErrorKind = Literal[
    "parse_error",  # the text inside <tool_call> is not a call we can read
    "unknown_tool",  # a tool name the environment does not offer
    "bad_arguments",  # missing, extra, duplicated or mistyped arguments
    "unknown_graph",  # graph_type is not a loaded domain
    "unknown_view",  # an IKG view id the tool server does not know (tasks.env.ikg)
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
    the last assistant reply. Reasoning is not in ``messages`` (unless the run was asked to send it back,
    ``AgentConfig.keep_reasoning``): ``reasoning[i]`` belongs to the i-th assistant message (``None`` when it had
    none), so exports can put it back (``<think>`` blocks) or leave it out.
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
    "KG_TOOLS",
    "TEXT_TOOLS",
    "TOOL_SPECS",
    "TokenCounts",
    "ToolCall",
    "ToolCallRecord",
    "ToolContractError",
    "ToolSpec",
    "WebSearchArgs",
    "tool_function",
    "tool_schema",
    "tool_schemas",
]
