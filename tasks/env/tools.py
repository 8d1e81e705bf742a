"""The KG tools and the environment that runs them: the same text in SFT data, RL rollouts and evaluation.

Each tool has exactly one render function, and the environment, the HTTP tool server and the agent loop all go
through ``ToolEnvironment.call``, so a tool's observation text is byte-identical wherever it is produced. The
templates are part of the data format: changing one changes every trajectory built afterwards, so treat them
like a schema (the snapshot tests in ``tests/test_kg_tools.py`` pin them).

Conventions of every template:

- names are printed exactly as stored, so the model can copy them into the next call;
- descriptions are whitespace-collapsed and cut at a word boundary with ``...`` (limits in ``RenderLimits``);
- lists are capped; what is left out is announced as ``... and N more``;
- a relation is shown as ``source -[label]-> target`` (``-[label]-`` when undirected; the bracket is left out
  when the relation has no label, as in LightRAG graphs, and an unlabelled undirected relation shows no arrow
  at all), then ``keywords: ...`` and its description, separated by `` | ``.

Bad input never raises: an unknown tool, graph, entity or argument becomes an ``Observation`` with
``ok=False``, an ``error_kind`` and a text telling the model how to recover (the closest entity names, the
expected signature, the loaded graph types).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gateway.embeddings import Embedder
from schemas.graph import UNKNOWN_TYPE, Entity
from schemas.tools import (
    KG_TOOLS,
    TOOL_SPECS,
    CallError,
    EntityMatcherArgs,
    NeighborSearchArgs,
    NodeInfoArgs,
    Observation,
    RelationSearchArgs,
    SearchArgs,
    ToolCall,
    WebSearchArgs,
    tool_schemas,
)
from tasks.graph.kg import EdgeData, KnowledgeGraph, normalize_name
from tasks.env.index import GraphIndex
from tasks.env.text_search import MAX_TOP_K, TextIndex, TextSearchError, render_text_hits

log = logging.getLogger(__name__)

#: relation_search embeds at most this many of an entity's relation names (see ``_ranked_relations``).
MAX_RANKED_RELATIONS = 256


@dataclass(frozen=True)
class RenderLimits:
    """Caps on what one observation shows. Part of the data format: keep them fixed within a dataset."""

    matches: int = 5  # entity_matcher results (Omne-R1 shows five)
    neighbors: int = 40  # relations listed by node_info and neighbor_search
    relations: int = 15  # relation_search candidates (Graph-RFT returns the top 15)
    triples: int = 30  # search triples
    closest: int = 5  # suggestions after an unknown entity name
    description_chars: int = 600  # the described entity's own description (node_info)
    short_description_chars: int = 160  # an entity description in a list (entity_matcher)
    edge_description_chars: int = 200  # a relation description
    keywords: int = 8  # keywords shown per relation
    passages: int = 3  # web_search / text_search results (Graph-RFT fixes top-3)

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if value < 1:
                raise ValueError(f"RenderLimits.{name} must be >= 1, got {value}")


# -- text helpers -------------------------------------------------------------------------------------------------


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to at most ``limit`` characters at a word boundary, ``...`` marking a cut."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: max(limit - 3, 1)]
    space = cut.rfind(" ")
    # Back off to a word boundary only when it costs a little: one 400-character token is still cut.
    if space >= len(cut) - 20 and space > 0:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "..."


def _count(n: int, singular: str, plural: str) -> str:
    return f"{n} {singular if n == 1 else plural}"


def _more(n: int) -> str:
    return f"... and {n} more"


def _quote(text: str) -> str:
    return '"' + " ".join(text.split()) + '"'


def _ends(neighbor: str, d: EdgeData) -> tuple[str, str]:
    """``(head, tail)`` to print: the stored direction of a directed relation; for an undirected one (whose
    stored order means nothing) the entity being described first, then its neighbour."""
    if d.directed:
        return d.source, d.target
    focus = d.target if d.source == neighbor else d.source
    return focus, neighbor


def _arrow(neighbor: str, d: EdgeData) -> str:
    head, tail = _ends(neighbor, d)
    if d.directed:
        return f"{head} -[{d.relation}]-> {tail}" if d.relation else f"{head} -> {tail}"
    return f"{head} -[{d.relation}]- {tail}" if d.relation else ""


def relation_line(neighbor: str, d: EdgeData, limits: RenderLimits) -> str:
    """One neighbour relation: ``neighbour | arrow | keywords: ... | description`` (empty parts left out).
    Shared by node_info and neighbor_search so a relation reads the same in both."""
    return relation_head(neighbor, d) + relation_tail(d, limits)


def relation_head(neighbor: str, d: EdgeData) -> str:
    """The start of ``relation_line``: ``neighbour | arrow`` (the arrow left out when empty)."""
    arrow = _arrow(neighbor, d)
    return f"{neighbor} | {arrow}" if arrow else neighbor


def relation_tail(d: EdgeData, limits: RenderLimits) -> str:
    """The end of ``relation_line`` after the arrow: ``" | keywords: ... | description"`` (empty parts left out),
    the same from either end of the relation (the served graph renders it once per relation)."""
    tail = ""
    if d.keywords:
        kws = list(d.keywords[: limits.keywords])
        if len(d.keywords) > limits.keywords:
            kws.append("...")
        tail = " | keywords: " + ", ".join(kws)
    if d.description.strip():
        tail += " | " + clip(d.description, limits.edge_description_chars)
    return tail


def _entity_label(e: Entity) -> str:
    return f"{e.name} [{e.type}]" if e.type and e.type != UNKNOWN_TYPE else e.name


def _cap_relations(rels: list[tuple[str, EdgeData]], cap: int) -> tuple[list[tuple[str, EdgeData]], int]:
    """At most ``cap`` relations, in the given (name) order: when some must go, the strongest (highest weight,
    then earliest) stay, so a hub's most supported links survive the cut."""
    if len(rels) <= cap:
        return rels, 0
    keep = sorted(range(len(rels)), key=lambda i: (-rels[i][1].weight, i))[:cap]
    return [rels[i] for i in sorted(keep)], len(rels) - cap


# -- one render function per tool ---------------------------------------------------------------------------------


def render_entity_matches(query: str, graph_type: str, entities: Sequence[Entity], limits: RenderLimits) -> str:
    """entity_matcher: the matches for ``query``, best first, each with a short description."""
    if not entities:
        return f"No entities in the {graph_type} graph match {_quote(query)}."
    lines = [f"Entities matching {_quote(query)} in the {graph_type} graph, best first:"]
    for i, e in enumerate(entities, 1):
        desc = clip(e.description, limits.short_description_chars)
        lines.append(f"{i}. {_entity_label(e)}" + (f": {desc}" if desc else ""))
    return "\n".join(lines)


def render_node_info(graph: KnowledgeGraph, name: str, limits: RenderLimits) -> str:
    """node_info: the entity, its description, and every relation to a neighbour (capped)."""
    e = graph.entity(name)
    rels = graph.neighbors(name)
    shown, left = _cap_relations(rels, limits.neighbors)
    return node_info_text(e.name, e.type, e.description, len(rels), len({nb for nb, _ in rels}),
                          [relation_line(nb, d, limits) for nb, d in shown], left, limits)  # fmt: skip


def node_info_text(name: str, type_: str, description: str, n_relations: int, n_entities: int,
                   shown: Sequence[str], left: int, limits: RenderLimits) -> str:
    """The node_info text of one entity from its parts: ``n_relations`` relations with ``n_entities`` distinct
    neighbours, of which the ``relation_line``s ``shown`` (``_cap_relations``'s), ``left`` more not shown. The
    served graph's build renders every entity through it from its arrays (``tasks.env.served``)."""
    lines = [f"Entity: {name}"]
    if type_ and type_ != UNKNOWN_TYPE:
        lines.append(f"Type: {type_}")
    desc = clip(description, limits.description_chars)
    lines.append(f"Description: {desc}" if desc else "Description: (none)")
    if not n_relations:
        lines.append("Neighbours: none")
        return "\n".join(lines)
    lines.append(f"Neighbours ({_count(n_relations, 'relation', 'relations')} with {_count(n_entities, 'entity', 'entities')}):")
    lines.extend(f"{i}. {line}" for i, line in enumerate(shown, 1))
    if left:
        lines.append(_more(left))
    return "\n".join(lines)


def render_relation_candidates(
    entity: str, relation: str, ranked: Sequence[tuple[str, int]], limits: RenderLimits
) -> str:
    """relation_search: the entity's relations closest to ``relation``, with the neighbours each reaches."""
    if not ranked:
        return f"{entity} has no relations."
    shown = ranked[: limits.relations]
    lines = [f"Relations of {entity} closest to {_quote(relation)}, best first ({len(shown)} of {len(ranked)}):"]
    for i, (label, count) in enumerate(shown, 1):
        lines.append(f"{i}. {label} ({_count(count, 'neighbour', 'neighbours')})")
    if len(ranked) > len(shown):
        lines.append(_more(len(ranked) - len(shown)))
    return "\n".join(lines)


def render_neighbors(
    entity: str, relation: str, rels: Sequence[tuple[str, EdgeData]], limits: RenderLimits
) -> str:
    """neighbor_search: the entities linked to ``entity`` by ``relation``, one relation per line."""
    shown, left = _cap_relations(list(rels), limits.neighbors)
    lines = [f"Neighbours of {entity} by {_quote(relation)} ({len(rels)}):"]
    lines.extend(f"{i}. {relation_line(nb, d, limits)}" for i, (nb, d) in enumerate(shown, 1))
    if left:
        lines.append(_more(left))
    return "\n".join(lines)


def _triple_relation(d: EdgeData) -> str:
    if d.relation:
        return d.relation
    if d.keywords:
        return " / ".join(d.keywords)
    return "related to"


def render_triples(graph: KnowledgeGraph, entity: str, limits: RenderLimits) -> str:
    """search: every relation at ``entity`` as a ``(head, relation, tail)`` triple: in its stored direction when
    directed, with ``entity`` as the head when undirected."""
    rels = graph.neighbors(entity)
    if not rels:
        return f"No triples about {entity}."
    shown, left = _cap_relations(rels, limits.triples)
    lines = [f"Triples about {entity} ({len(rels)}):"]
    for nb, d in shown:
        head, tail = _ends(nb, d)
        lines.append(f"({head}, {_triple_relation(d)}, {tail})")
    if left:
        lines.append(_more(left))
    return "\n".join(lines)


def render_unknown_entity(name: str, graph_type: str, closest: Sequence[str]) -> str:
    """The observation for a name that is not an entity: the closest names, and what to do next."""
    text = f"No entity named {_quote(name)} in the {graph_type} graph."
    if closest:
        text += " Closest entities: " + "; ".join(closest) + ". Call again with one of these exact names."
    return text


# -- the environment ----------------------------------------------------------------------------------------------


class ToolEnvironment:
    """The KG tools over one ``GraphIndex`` per domain (``graph_type``).

    ``call(name, arguments)`` validates the arguments with the tool's pydantic model, runs the tool and
    renders the result; it never raises for bad input (see the module docstring). ``tools`` limits which tools
    are offered (default: the graph tools, ``KG_TOOLS``; with ``texts``, the text tools too). ``default_domain``
    is used by tools whose ``graph_type`` is optional (Graph-RFT, KG-Hopper) when the call leaves it out; with a
    single domain it defaults to that one. ``texts`` is the text collection per domain that ``web_search`` (alias
    ``text_search``) searches (``tasks.env.text_search``).

    Thread-safe: tools only read the graphs, and the indexes lock their caches.
    """

    def __init__(
        self,
        indexes: Mapping[str, GraphIndex],
        *,
        tools: Sequence[str] | None = None,
        limits: RenderLimits | None = None,
        default_domain: str | None = None,
        texts: Mapping[str, TextIndex] | None = None,
    ) -> None:
        for domain, index in indexes.items():
            if index.domain != domain:
                raise ValueError(f"index for domain {index.domain!r} registered under {domain!r}")
        names = tuple(tools) if tools is not None else KG_TOOLS + (("web_search",) if texts else ())
        unknown = [t for t in names if t not in TOOL_SPECS]
        if unknown:
            raise ValueError(f"unknown tools {unknown}; the tools are: {', '.join(TOOL_SPECS)}")
        if default_domain is not None and default_domain not in indexes:
            raise ValueError(f"default_domain {default_domain!r} is not among the loaded domains {sorted(indexes)}")
        self.indexes: dict[str, GraphIndex] = dict(indexes)
        self.tool_names: tuple[str, ...] = names
        self.limits = limits or RenderLimits()
        if default_domain is None and len(self.indexes) == 1:
            default_domain = next(iter(self.indexes))
        self.default_domain = default_domain
        if self.limits.passages > MAX_TOP_K:
            raise ValueError(f"RenderLimits.passages must be <= {MAX_TOP_K}, got {self.limits.passages}")
        self.texts: dict[str, TextIndex] = dict(texts or {})
        self._handlers = {
            "entity_matcher": self._entity_matcher,
            "node_info": self._node_info,
            "relation_search": self._relation_search,
            "neighbor_search": self._neighbor_search,
            "search": self._search,
            "web_search": self._web_search,
            "text_search": self._web_search,
        }

    @classmethod
    def from_graphs(
        cls,
        graphs: Iterable[KnowledgeGraph],
        embedder: Embedder,
        *,
        cache_dir: str | Path | None = None,
        warm: bool = True,
        ann_background: bool = False,
        **kwargs: Any,
    ) -> "ToolEnvironment":
        """An environment over ``graphs`` (one per domain), each indexed with ``embedder``; embeddings cached
        under ``cache_dir`` and, with ``warm``, loaded or built now rather than on the first query.
        ``ann_background`` (the tool server): a missing HNSW graph is built in another process while the index
        searches exactly (``GraphIndex.ann``)."""
        indexes: dict[str, GraphIndex] = {}
        for g in graphs:
            if g.domain in indexes:
                raise ValueError(f"two graphs for domain {g.domain!r}")
            indexes[g.domain] = GraphIndex(g, embedder, cache_dir=cache_dir, ann_background=ann_background)
        env = cls(indexes, **kwargs)
        if warm:
            env.warm()
        return env

    @property
    def domains(self) -> tuple[str, ...]:
        return tuple(sorted(self.indexes))

    def warm(self) -> None:
        for index in self.indexes.values():
            index.warm()

    def index_status(self) -> dict[str, dict[str, str]]:
        """Which search answers each domain's entity matcher now, and its text search's meaning half where it
        has one (``<domain> text``): ``serving`` is ``"exact"`` or ``"hnsw"`` (``GraphIndex.index_status``)."""
        out = {domain: index.index_status() for domain, index in sorted(self.indexes.items())}
        for domain, text in sorted(self.texts.items()):
            if text.embedder is not None:
                out[f"{domain} text"] = {"serving": text.serving}
        return out

    def prepare_search(self, threads: int | None = None) -> dict[str, str]:
        """Set up every index's entity search in this process now (``GraphIndex.prepare_search``); returns the
        precision chosen per domain, and per text collection (``<domain> text``) where one chose."""
        chosen = {domain: index.prepare_search(threads) for domain, index in sorted(self.indexes.items())}
        for domain, text in sorted(self.texts.items()):
            precision = text.prepare_search()
            if precision is not None:
                chosen[f"{domain} text"] = precision
        return chosen

    def schemas(self, tools: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The tool contract (``schemas.tools.tool_schemas``) of the offered tools, or of ``tools``."""
        return tool_schemas(tuple(tools) if tools is not None else self.tool_names)

    # -- calling ----------------------------------------------------------------------------------------------------
    def call(self, name: str, arguments: Mapping[str, Any] | None) -> Observation:
        """Run tool ``name`` with ``arguments``; always returns an ``Observation``."""
        checked = self._check(name, arguments)
        if isinstance(checked, Observation):
            return checked
        try:
            return self._handlers[name](checked)
        except Exception:  # a bug here must not kill an RL rollout; it is logged with its traceback
            log.exception("tool %s failed on %r", name, dict(arguments or {}))
            return Observation(text=f"The tool {name} failed on this input; try another call.", ok=False, error_kind="internal")

    def execute(self, call: ToolCall | CallError) -> Observation:
        """The observation for a parsed call: a ``CallError`` becomes its error observation."""
        if isinstance(call, CallError):
            return call.observation()
        return self.call(call.name, call.arguments)

    def call_many(self, calls: Sequence[tuple[str, Mapping[str, Any] | None]]) -> list[Observation]:
        """``call`` for each ``(name, arguments)``, same results, but the entity_matcher calls of each domain
        share one query-embedding call and one batched top-k search."""
        out: list[Observation | None] = [None] * len(calls)
        groups: dict[str, list[tuple[int, EntityMatcherArgs]]] = {}
        for i, (name, arguments) in enumerate(calls):
            if name == "entity_matcher":
                checked = self._check(name, arguments)
                if isinstance(checked, Observation):
                    out[i] = checked
                elif isinstance(checked, EntityMatcherArgs):
                    groups.setdefault(checked.graph_type, []).append((i, checked))
                continue
            out[i] = self.call(name, arguments)
        for domain, items in groups.items():
            index = self.indexes[domain]
            try:
                found = index.match_many([a.node_name for _, a in items], self.limits.matches)
            except Exception:
                log.exception("batched entity_matcher failed in %s", domain)
                for i, a in items:
                    out[i] = self.call("entity_matcher", a.model_dump())
                continue
            for (i, a), matches in zip(items, found):
                out[i] = self._render_matches(index, a, matches)
        return [o for o in out if o is not None]

    def _check(self, name: str, arguments: Mapping[str, Any] | None) -> Any:
        """The validated argument model, or the error observation explaining what is wrong."""
        if name not in self.tool_names:
            return Observation(
                text=f"Unknown tool {_quote(name)}. Available tools: {', '.join(self.tool_names)}.",
                ok=False,
                error_kind="unknown_tool",
            )
        spec = TOOL_SPECS[name]
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            return Observation(
                text=f"Arguments of {name} must be named values. Expected {spec.signature()}.",
                ok=False,
                error_kind="bad_arguments",
            )
        try:
            args = spec.args.model_validate(dict(arguments))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors(include_url=False)[:5]
            )
            return Observation(
                text=f"Bad arguments for {name}: {problems}. Expected {spec.signature()}.",
                ok=False,
                error_kind="bad_arguments",
            )
        graph_type = getattr(args, "graph_type", None)
        if graph_type is None:
            if self.default_domain is None:
                return Observation(
                    text=f"{name} needs graph_type here; the loaded graph types are: {', '.join(self.domains)}.",
                    ok=False,
                    error_kind="bad_arguments",
                )
            args = args.model_copy(update={"graph_type": self.default_domain})
        elif graph_type not in self.indexes:
            return Observation(
                text=f"Unknown graph_type {_quote(graph_type)}. Available graph types: {', '.join(self.domains)}.",
                ok=False,
                error_kind="unknown_graph",
            )
        return args

    def _resolve(self, index: GraphIndex, name: str) -> str | Observation:
        found = index.resolve(name)
        if found is not None:
            return found
        closest = [m.name for m in index.match(name, self.limits.closest)]
        return Observation(
            text=render_unknown_entity(name, index.domain, closest), ok=False, error_kind="unknown_entity"
        )

    # -- tools ----------------------------------------------------------------------------------------------------
    def _render_matches(self, index: GraphIndex, args: EntityMatcherArgs, matches: Sequence[Any]) -> Observation:
        entities = [index.graph.entity(m.name) for m in matches]
        return Observation(text=render_entity_matches(args.node_name, index.domain, entities, self.limits))

    def _entity_matcher(self, args: EntityMatcherArgs) -> Observation:
        index = self.indexes[args.graph_type]
        return self._render_matches(index, args, index.match(args.node_name, self.limits.matches))

    def _node_info(self, args: NodeInfoArgs) -> Observation:
        index = self.indexes[args.graph_type]
        name = self._resolve(index, args.node_name)
        if isinstance(name, Observation):
            return name
        return Observation(text=render_node_info(index.graph, name, self.limits))

    def _ranked_relations(self, index: GraphIndex, entity: str, relation: str) -> list[tuple[str, int]]:
        """The entity's relation names (labels, or keywords for unlabelled relations) with the number of
        distinct neighbours each reaches: an exact (normalised) match first, then by similarity to
        ``relation``, ties by name.

        Only the ``MAX_RANKED_RELATIONS`` names that reach the most neighbours are embedded; the rest follow
        them in that order. A LightRAG hub can carry thousands of distinct keywords, and embedding them all
        with a sentence model would take seconds on the first call.
        """
        reach: dict[str, set[str]] = {}
        display: dict[str, str] = {}
        for nb, d in index.graph.neighbors(entity):
            for label in _relation_labels(d):
                key = normalize_name(label)
                if not key:
                    continue
                display.setdefault(key, label)
                reach.setdefault(key, set()).add(nb)
        if not reach:
            return []
        want = normalize_name(relation)
        by_reach = sorted(reach, key=lambda k: (k != want, -len(reach[k]), display[k]))
        scored, rest = by_reach[:MAX_RANKED_RELATIONS], by_reach[MAX_RANKED_RELATIONS:]
        # Labels like "people.person.place_of_birth" embed better as words.
        sims = index.similarities(relation, [display[k].replace("_", " ").replace(".", " ") for k in scored])
        # Rounded so that last-bit differences between embedder batches cannot reorder near-ties.
        sim = {k: round(float(x), 6) for k, x in zip(scored, sims)}
        scored.sort(key=lambda k: (k != want, -sim[k], display[k]))
        return [(display[k], len(reach[k])) for k in scored + rest]

    def _relation_search(self, args: RelationSearchArgs) -> Observation:
        index = self.indexes[args.graph_type or ""]
        name = self._resolve(index, args.entity)
        if isinstance(name, Observation):
            return name
        ranked = self._ranked_relations(index, name, args.relation)
        return Observation(text=render_relation_candidates(name, args.relation, ranked, self.limits))

    def _neighbor_search(self, args: NeighborSearchArgs) -> Observation:
        index = self.indexes[args.graph_type or ""]
        name = self._resolve(index, args.entity)
        if isinstance(name, Observation):
            return name
        want = normalize_name(args.relation)
        want_words = _words(args.relation)

        def exact(d: EdgeData) -> bool:
            return any(normalize_name(x) == want for x in _relation_terms(d))

        def loose(d: EdgeData) -> bool:
            # The asked relation inside a label or keyword, or the other way round ("born" for "born in", "place of
            # birth" for "people.person.place_of_birth").
            return any(_contains(_words(x), want_words) for x in _relation_terms(d))

        rels = index.graph.neighbors(name)
        hits = [(nb, d) for nb, d in rels if exact(d)]
        hidden = getattr(index.graph, "hidden_neighbors", None)  # an IKG view (tasks.env.ikg.ViewedGraph)
        # In a view, a relation the view hides is the one asked for: the graph has no information, rather than a
        # looser reading that answers with another relation's neighbours (a keyword of "portrays" inside "drove
        # migration to").
        asked_hidden = not hits and hidden is not None and any(exact(d) or loose(d) for _, d in hidden(name))
        if not hits and not asked_hidden:
            hits = [(nb, d) for nb, d in rels if loose(d)]
        if hits:
            return Observation(text=render_neighbors(name, args.relation, hits, self.limits))
        ranked = self._ranked_relations(index, name, args.relation)
        if getattr(index, "view", None) is not None:  # an incomplete graph (tasks.env.ikg): Graph-RFT's reply
            closest_labels = [label for label, _ in ranked[: self.limits.closest]]
            text = render_no_information(name, args.relation, closest_labels)
            return Observation(text=text, ok=False, error_kind="no_match")
        if not ranked:
            return Observation(text=f"{name} has no relations.", ok=False, error_kind="no_match")
        closest = "; ".join(label for label, _ in ranked[: self.limits.closest])
        return Observation(
            text=(
                f"No relation of {name} matches {_quote(args.relation)}. Its closest relations: {closest}. "
                "Call neighbor_search with one of these."
            ),
            ok=False,
            error_kind="no_match",
        )

    def _search(self, args: SearchArgs) -> Observation:
        index = self.indexes[args.graph_type or ""]
        name = self._resolve(index, args.entity)
        if isinstance(name, Observation):
            return name
        return Observation(text=render_triples(index.graph, name, self.limits))

    def _web_search(self, args: WebSearchArgs) -> Observation:
        domain = args.graph_type or ""
        text = self.texts.get(domain)
        if text is None:
            return Observation(text=f'No texts are loaded for the "{domain}" graph; use the graph tools.', ok=False,
                               error_kind="no_match")
        try:
            hits = text.search(args.query, self.limits.passages)
        except TextSearchError as exc:  # an empty or over-long query: the model reads the limit and retries
            return Observation(text=str(exc), ok=False, error_kind="bad_arguments")
        return Observation(text=render_text_hits(args.query, hits))


def _relation_labels(d: EdgeData) -> list[str]:
    """The names relation_search lists for a relation: its label, else its keywords (LightRAG relations have
    no label). Keywords of a labelled relation are left out: they are topics, not relation names."""
    return [d.relation] if d.relation else list(d.keywords)


def _relation_terms(d: EdgeData) -> list[str]:
    """Everything neighbor_search accepts as the name of a relation: its label and its keywords."""
    return [d.relation, *d.keywords] if d.relation else list(d.keywords)


def _words(text: str) -> str:
    return normalize_name(text).replace("_", " ").replace(".", " ")


def _contains(a: str, b: str) -> bool:
    """One phrase inside the other, both at least three characters (so "at" or "of" match nothing)."""
    return len(a) >= 3 and len(b) >= 3 and (b in a or a in b)



def render_no_information(entity: str, relation: str, closest: Sequence[str]) -> str:
    """neighbor_search on an incomplete graph when no visible relation of ``entity`` matches ``relation``:
    Graph-RFT's "No information in KG, please use web tool", with the entity's closest visible relations (the
    same text whether the fact was hidden or never there, so the reply does not give the hiding away)."""
    text = f'No information in the KG about {entity} by "{" ".join(relation.split())}".'
    if closest:
        text += " Its closest relations: " + "; ".join(closest) + "."
    return text + " If none of these fits, use the web_search tool."

__all__ = [
    "RenderLimits",
    "ToolEnvironment",
    "clip",
    "node_info_text",
    "relation_head",
    "relation_line",
    "relation_tail",
    "render_entity_matches",
    "render_neighbors",
    "render_no_information",
    "render_node_info",
    "render_relation_candidates",
    "render_triples",
    "render_unknown_entity",
]
