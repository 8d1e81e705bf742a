"""Incomplete-graph (IKG) views: Graph-RFT's IKG-20/40/60% settings as overlays on one loaded graph.

Graph-RFT (§4, "IKG") builds IKG-x% by removing x% of each question's critical triples, and every relation
between the same entity pairs, from the graph the agent sees. Here a question's critical triples are the
triples of its gold path (``QA.path_edges``), and a view is the set of relation ids hidden for that question
(``IKGView.hidden``), never a copy of the graph: one loaded snapshot serves thousands of questions, each
through its own view.

Rules (the tests pin them):

- how many: ``n_hidden(level, n) = max(1, floor(level * n + 0.5))``, capped at ``n`` (round half up, at least
  one triple: a view that hides nothing is the complete graph). So a 3-hop path hides 1 triple at 20% and 40%,
  2 at 60%; a 5-hop path hides 1, 2 and 3.
- which: a ``random.Random`` seeded with ``sha256("<qa_id>|<level>")`` samples the triples, so the same
  question and level hide the same triples in every run and process;
- what: for each chosen triple, every relation between its two entities, in both directions.

The KG tools (``tasks.env.tools.ToolEnvironment``) read a view through ``ViewedGraph``: relations the view hides
are not there, and a ``neighbor_search`` that finds nothing says so in Graph-RFT's way
(``tasks.env.tools.render_no_information``) and points the model to the ``web_search`` tool. A hidden fact is hidden from every
tool: a sentence of a description that states it (one naming both of its ends, or, in an end's own description,
the other end: "Tenochtitlan: Capital of the Aztec empire"), a keyword that names the other end, and a visible
relation whose own label states it ("George Beadle championed the teosinte origin of maize") are left out.
Names match whole (``_names``: "Mexico" is not named by "Mexico City").

Answerability (``check_answerable``): a variant is kept only when every hidden fact is in the text search's
top k for a query made of the fact's head entity and relation (the head in walking order, as the agent would ask
it), or the answer is still reachable from the question's start in the view. A fact "is in" a result when the
passage the tool shows for that query (``passage_window``, not the title) names both of its entities whole and, for a
fact extracted from the corpus, the result is a chunk it came from (``source_chunk_ids``); a fact with no
provenance (a hand-written or imported graph searched through an added text collection) needs the names alone.
Where a reader is given (``reads``: ``tasks.env.ikg_reader``, the verifier asked whether the passage shown states
the fact), a passage the names rule keeps must also be one the reader says states it.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import lemminflect

from schemas.errors import InputError
from schemas.meaning import relation_key
from schemas.programs import QueryProgram
from schemas.qa import QA, PathEdge
from tasks.env.text_search import DEFAULT_TOP_K, TextHit, TextIndex, passage_window
from tasks.env.tools import ToolEnvironment
from tasks.graph.kg import EdgeData, KnowledgeGraph
from tasks.meaning.profiles import edge_label
from tasks.qa.context import edge_as_hop

#: Graph-RFT's levels (IKG-20%, IKG-40%, IKG-60%).
DEFAULT_LEVELS: tuple[float, ...] = (0.2, 0.4, 0.6)

#: A relation's identity, as ``schemas.graph.Relation.key``: ``(source, target, relation, directed)``, ends sorted
#: when undirected.
EdgeId = tuple[str, str, str, bool]

KGSetting = Literal["complete", "incomplete"]


class IKGError(InputError):
    """An IKG view that cannot be made as asked: a level outside (0, 1), a path with no triple to hide, an
    unknown view id."""


def edge_id(d: EdgeData) -> EdgeId:
    """The id of the relation ``d`` is a view of (the same for both of its ends)."""
    a, b = d.source, d.target
    if not d.directed and b < a:
        a, b = b, a
    return (a, b, d.relation, d.directed)


def check_level(level: object) -> float:
    """``level`` as a float in (0, 1), else ``IKGError``."""
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0.0 < float(level) < 1.0:
        raise IKGError(f"IKG level must be a share between 0 and 1, both excluded (0.4 for IKG-40%), got {level!r}")
    return float(level)


def check_levels(levels: Iterable[object]) -> tuple[float, ...]:
    """Distinct levels, each checked, in ascending order; ``IKGError`` for none."""
    out = tuple(sorted({check_level(x) for x in levels}))
    if not out:
        raise IKGError("no IKG level given; Graph-RFT's are 0.2, 0.4 and 0.6")
    return out


def n_hidden(level: float, n_critical: int) -> int:
    """How many of ``n_critical`` triples a view at ``level`` hides: round half up, at least 1, at most all."""
    level = check_level(level)
    if n_critical < 1:
        raise IKGError("the gold path has no triple to hide")
    return min(n_critical, max(1, math.floor(level * n_critical + 0.5)))


def level_name(level: float) -> str:
    """``IKG-40%`` for 0.4: the setting's name in reports and view ids."""
    return f"IKG-{round(check_level(level) * 100):g}%"


@dataclass(frozen=True, slots=True)
class HiddenFact:
    """One critical triple a view hides, in walking order (``head`` is where the agent stands when it needs it)
    with its stored reading (``triple``) and provenance."""

    head: str
    relation: str
    tail: str
    triple: tuple[str, str, str]
    source_chunk_ids: tuple[str, ...] = ()

    def query(self) -> str:
        """The text search query an agent would write for it: the head entity and the relation."""
        return f"{self.head} {self.relation}".strip()


@dataclass(frozen=True)
class IKGView:
    """What one question sees at one level: ``hidden`` relation ids (every relation between the pairs of the
    hidden facts, both directions) over an untouched graph. ``view_id`` is ``"<qa_id>@ikg-<percent>"``."""

    view_id: str
    qa_id: str
    level: float
    facts: tuple[HiddenFact, ...]
    hidden: frozenset[EdgeId]
    pairs: frozenset[frozenset[str]] = field(default_factory=frozenset)

    def hides(self, d: EdgeData) -> bool:
        return edge_id(d) in self.hidden

    def other_ends(self, name: str) -> set[str]:
        """The entities a hidden fact links ``name`` to."""
        return {other for pair in self.pairs if name in pair for other in pair if other != name}

    def states(self, text: str) -> bool:
        """Whether ``text`` names both ends of a hidden fact."""
        return any(names_both(text, *pair) for pair in (tuple(p) for p in self.pairs) if len(pair) == 2)

    def redact(self, text: str, about: str | None = None) -> str:
        """``text`` without the sentences that state a hidden fact: one naming both ends of a hidden pair, or, in
        the description of an end (``about``), one naming the other end ("Tenochtitlan: Capital of the Aztec
        empire" in a view without the capital fact). Names match whole, case-insensitively."""
        if not text or not self.pairs:
            return text
        others = self.other_ends(about) if about is not None else set()
        pairs = [tuple(pair) for pair in self.pairs if len(pair) == 2]

        def states(sentence: str) -> bool:
            return any(names_both(sentence, about, o) or _names(re.sub(re.escape(about), " ", sentence,
                                                                       flags=re.IGNORECASE), o)
                       for o in others) or any(names_both(sentence, a, b) for a, b in pairs)

        sentences = _SENTENCE.split(text.strip())
        kept = [t for t in sentences if not states(t)]
        return text if len(kept) == len(sentences) else " ".join(kept)

    def hidden_triples(self) -> list[list[str]]:
        """The hidden critical triples, as exported rows carry them (stored reading)."""
        return [list(f.triple) for f in self.facts]


_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")


def _mentions(text: str, name: str, skip: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """Where ``text`` names ``name`` whole, as ``(start, end)``: not inside a longer name ("Mexico" is not named by
    "Mexico City", "New Mexico", "France 3" or "America/Mexico_City": a capitalised word right before or after it,
    a number after it, or a slash, continues the name), nor inside a span of ``skip`` (a longer name's)."""
    if not name:
        return []
    out = []
    for m in re.finditer(rf"(?<![\w/]){re.escape(name)}(?![\w/])", text, re.IGNORECASE):
        before = [w.lstrip("\"'([") for w in text[:m.start()].split()[-1:]]
        after = text[m.end():].split()[:1]
        if before and re.fullmatch(r"[A-Z][\w'-]*", before[0]) and not before[0].endswith((".", ",")) \
                and m.start() > 0 and text[m.start() - 1] == " " and before[0] not in _OPENERS:
            continue
        if after and re.fullmatch(r"(?:[A-Z][\w'-]*|[0-9]+)[.,;:!?)\]\"']*", after[0]) and \
                text[m.end():m.end() + 1] == " ":
            continue
        if not any(a < m.end() and m.start() < b for a, b in skip):
            out.append((m.start(), m.end()))
    return out


def _names(text: str, name: str) -> bool:
    """Whether ``text`` names ``name`` whole (``_mentions``)."""
    return bool(_mentions(text, name))


def names_both(text: str, a: str, b: str) -> bool:
    """Whether ``text`` names both ``a`` and ``b`` whole, the shorter not counted inside the longer ("maize" in
    "International Maize and Wheat Improvement Center")."""
    long, short = (a, b) if len(a) >= len(b) else (b, a)
    if not _names(text, long):
        return False
    rest = re.sub(re.escape(long), " ", text, flags=re.IGNORECASE)
    return _names(rest, short)


#: Where a passage's sentences end, for ``states_fact`` (a full stop before a capital or a digit, or a line break).
_FACT_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n+")

#: Words that open a sentence by pointing back at what the sentence before named ("She later wrote ..."), each with
#: what follows the name read in its place ("Her theory was ...": "Lynn Margulis’s theory was ...", the
#: apostrophe a typographic one so that the name before does not read as continuing the name after, as ``_names``
#: reads a capitalised word before).
_BACK_REFERENCE = {"he": "", "she": "", "it": "", "they": "", "this": "", "these": "",
                   "his": "\u2019s", "her": "\u2019s", "its": "\u2019s", "their": "\u2019s"}

#: Pointing words only a person takes: the name they point back at is a proper name (it opens with a capital).
_PERSONAL = frozenset("he she his her".split())

#: Words of a relation label that do not say which relation it is: the copula, articles, prepositions, pronouns.
_LINK_WORDS = frozenset(
    "be is are was were been being has have had do does did a an the of in at on to for from by with into onto "
    "near under over during after before about around across along among between through within without against "
    "toward towards upon up out off via since until as one first its their his her it that which who and or not "
    "also later then".split())

#: Relations of people doing something together: two ends named as the joint subject of one verb state them
#: ("Howard Florey and Ernst Chain turned penicillin into a drug": they collaborated). A "co-" verb is joint too.
_JOINT = frozenset("collaborate cooperate partner".split())

#: Lower-case words that are themselves a link (a preposition, a conjunction, a relative), not a modifier of a name.
_NOT_MODIFIER = frozenset(
    "of in at near on by from to for with into and or but as than which who whom whose that where when while".split())

#: Prepositions that put two names side by side without making them one subject ("the talks between Sparta and
#: Athens").
_GOVERNING = frozenset("between among against versus".split())

_ARTICLE = r"(?:the|a|an)"
_LOWER = r"[a-z][\w'-]*"
_PREP = r"(?:of|in|at|near|on|by|from)"

#: Ends linked by nothing but a preposition (after a comma and an adverb of time, or an apposition saying what the
#: first end is), or a possessive: "Carl Bosch of the chemical company BASF", "Lynn Margulis, then at Boston
#: University", "Antonie van Leeuwenhoek, a cloth merchant in Delft", "the Bastille, the opening act of the French
#: Revolution", "Morgan's student Alfred Sturtevant". The lower-case words (``mods``) must not be a link themselves.
_TIGHT = re.compile(
    rf"\s*(?:,\s*(?:then|now|later|formerly|once|still)\s+|,\s*{_ARTICLE}(?P<apposed>(?:\s+{_LOWER}){{1,4}})\s+)?"
    rf"{_PREP}(?P<mods>(?:\s+{_LOWER}){{0,3}})\s*"
    rf"|\s*['\u2019]s?(?P<owned>(?:\s+{_LOWER}){{0,3}})\s*")

#: An end in a list that a colon opens after the other end: "the founder crops of Old World farming: emmer wheat,
#: einkorn wheat, barley" (each item is one of the founder crops).
_LISTED = re.compile(r"(?:\s+(?:of|in|from|for)\s+[^,;:()]{1,40})?\s*:\s*(?:[^,;:()]+,\s*)*(?:and\s+)?")

#: A name coordinated with the first end before the link: "Howard Florey and Ernst Chain at the University of Oxford".
_COORDINATED = re.compile(rf"\s*(?:,|and)\s+(?:{_ARTICLE}(?:\s+{_LOWER}){{1,3}}\s+)?[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")

#: Two names as one joint subject, each perhaps with where it was: "Vint Cerf of Stanford University and Bob Kahn",
#: "the physicist Nicholas Kurti and the French chemist Hervé This".
_JOINED = re.compile(rf"(?:\s+(?:of|at|from)\s+(?:the\s+)?[A-Z][\w'-]*(?:\s+(?:of\s+)?[A-Z][\w'-]*)*)?\s+and"
                     rf"(?:\s+{_ARTICLE}(?P<apposed>(?:\s+[^\W\d_][\w'-]*){{1,3}}))?\s*")

#: A place or body a sentence opens with, the first end, and right after its comma the other end, the subject, or a
#: place the subject is of ("At Columbia University, Thomas Hunt Morgan bred ...", "In Norfolk, the farmer Thomas
#: Coke ...", "In England, Heston Blumenthal of The Fat Duck in Bray built ...").
_FRONTED = re.compile(r"[\W_]*(?:at|in|on)\s+(?:the\s+)?", re.IGNORECASE)
_FRONTED_LINK = re.compile(rf",\s*(?:{_ARTICLE}(?P<apposed>(?:\s+{_LOWER}){{1,3}})\s+)?"
                           rf"(?:[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*\s+(?:of|in|at|on)\s+(?:the\s+)?)*")


def _lemmas(text: str) -> set[str]:
    """The lemmas of the words of ``text`` (every part of speech lemminflect knows, and the word itself), lower
    case, a "co-" prefix read off ("co-founded": found)."""
    out: set[str] = set()
    for word in re.findall(r"[^\W\d_]+(?:-[^\W\d_]+)*", text.casefold()):
        word = word.removeprefix("co-")
        out.add(word)
        out.update(x for forms in lemminflect.getAllLemmas(word).values() for x in forms)
    return out


def _relation_lemmas(relation: str) -> set[str]:
    """The lemmas of the words of ``relation`` that say which relation it is (not ``_LINK_WORDS``)."""
    return _lemmas(" ".join(w for w in re.split(r"[^\w-]+", relation.casefold()) if w and w not in _LINK_WORDS))


def _is_joint(relation: str) -> bool:
    """Whether ``relation`` is something people do together: "collaborated with", "co-founded", "partnered with"."""
    return bool(_lemmas(relation) & _JOINT) or bool(re.search(r"\bco-\w", relation.casefold()))


def _modifiers_only(*groups: str | None) -> bool:
    return not any(w in _NOT_MODIFIER for g in groups if g for w in g.split())


def _tight(between: str) -> bool:
    """Whether ``between`` links two names with nothing but a preposition or a possessive (``_TIGHT``), or a list
    that a colon opens (``_LISTED``)."""
    m = _TIGHT.fullmatch(between)
    return bool(m and _modifiers_only(m.group("apposed"), m.group("mods"), m.group("owned"))) or bool(
        _LISTED.fullmatch(between))


def _linked(between: str, before: str, relation: str) -> bool:
    """Whether a sentence links two ends it names, ``between`` the text between them and ``before`` the clause up
    to the first (``states_fact`` for the rules)."""
    if ";" in between:
        return False
    if _relation_lemmas(relation) & _lemmas(f"{before} {between}"):
        return True
    if _tight(between):
        return True
    coordinated = _COORDINATED.match(between)
    if coordinated and coordinated.end() < len(between) and _tight(between[coordinated.end():]):
        return True
    fronted = _FRONTED_LINK.fullmatch(between) if _FRONTED.fullmatch(before) else None
    if fronted and _modifiers_only(fronted.group("apposed")):
        return True
    governed = before.split()[-1:] and before.split()[-1].casefold() in _NOT_MODIFIER | _GOVERNING
    joined = _JOINED.fullmatch(between) if _is_joint(relation) and not governed else None
    return bool(joined and _modifiers_only(joined.group("apposed")))


def _states_in(sentence: str, fact: HiddenFact) -> bool:
    """Whether one ``sentence`` names both ends of ``fact`` whole and links them (``_linked``)."""
    long, short = (fact.head, fact.tail) if len(fact.head) >= len(fact.tail) else (fact.tail, fact.head)
    at_long = _mentions(sentence, long)
    at_short = _mentions(sentence, short, skip=at_long)
    for x in at_long:
        for y in at_short:
            (_, end), (start, _) = sorted((x, y))
            before = re.split(r"[,;:()]", sentence[:min(x[0], y[0])])[-1]
            if _linked(sentence[end:start], before, fact.relation):
                return True
    return False


def _points_back(sentence: str, nxt: str, fact: HiddenFact) -> bool:
    """Whether ``nxt`` opens with a word pointing back at an end ``sentence`` names, and, read with that end's name
    in the pointing word's place, states ``fact`` (``_states_in``). "He", "she", "his" and "her" point at a proper
    name only: "Her theory" does not point back at mitochondria."""
    opener = re.match(r"[\W_]*([^\W\d_]+)", nxt)
    word = opener.group(1).casefold() if opener else ""
    if word not in _BACK_REFERENCE:
        return False
    for a, b in ((fact.head, fact.tail), (fact.tail, fact.head)):
        if not _names(sentence, a) or not _names(nxt, b) or (word in _PERSONAL and not a[:1].isupper()):
            continue
        read = nxt[:opener.start(1)] + a + _BACK_REFERENCE[word] + nxt[opener.end(1):]
        if _states_in(read, fact):
            return True
    return False


def states_fact(text: str, fact: HiddenFact) -> bool:
    """Whether ``text`` states ``fact``: one sentence names both of its ends whole (``names_both``) and links them,
    or one names an end and the next, opening with a word that points back at it ("She later joined ..."), does so
    with that end in the pointing word's place. Two ends a sentence names are linked when

    - a word of the relation (its lemma, any part of speech: "working at" for "worked at", "with funding from" for
      "funded", "published the design" for "co-designed") stands between them or in the clause before the first;
    - nothing but a preposition or a possessive stands between them ("Carl Bosch of the chemical company BASF",
      "a wild grass of the Balsas River valley in southern Mexico", "Lynn Margulis, then at Boston University",
      "Jethro Tull, a farmer in Berkshire", "Morgan's student Alfred Sturtevant"), also after a name coordinated with
      the first ("Howard Florey and Ernst Chain at the University of Oxford"), or the second is in a list a colon
      opens after the first ("the founder crops: emmer wheat, einkorn wheat, barley");
    - the sentence opens at a place, the first end, and the other is the subject right after its comma ("At
      Columbia University, Thomas Hunt Morgan bred ...");
    - for a relation of doing something together ("collaborated with", "co-founded"), both are one joint subject
      ("Howard Florey and Ernst Chain turned penicillin into a drug").

    Naming both is not linking them: a list ("emmer wheat, einkorn wheat, barley" says nothing of einkorn being
    wheat), a verb of another relation ("The new Environmental Protection Agency banned most farm uses of DDT in
    the United States" says nothing of whose agency it is), two clauses ("After defeating Austria ... he reorganised
    the German states, and in 1806 Francis II dissolved the Holy Roman Empire")."""
    sentences = [x for x in _FACT_SENTENCE.split(text) if x.strip()]
    for i, sentence in enumerate(sentences):
        if _states_in(sentence, fact):
            return True
        if i + 1 < len(sentences) and _points_back(sentence, sentences[i + 1], fact):
            return True
    return False


#: Capitalised words that open a sentence or clause rather than continue a name before them.
_OPENERS = frozenset("The A An In On At Of From To By With For And Or But Its His Her Their This That".split())


def make_view_id(qa_id: str, level: float) -> str:
    return f"{qa_id}@ikg-{round(check_level(level) * 100):g}"


def _seed(qa_id: str, level: float) -> int:
    return int.from_bytes(hashlib.sha256(f"{qa_id}|{level:.6f}".encode()).digest()[:8], "big")


def _facts(edges: Sequence[PathEdge]) -> list[HiddenFact]:
    return [HiddenFact(e.head, e.relation_text(), e.tail, e.triple(), tuple(e.source_chunk_ids)) for e in edges]


def make_view(graph: KnowledgeGraph, qa_id: str, path_edges: Sequence[PathEdge], level: float) -> IKGView:
    """The IKG view of one question at ``level`` (module docstring for the rules). ``IKGError`` for a bad level
    or a path with no triple."""
    level = check_level(level)
    if not path_edges:
        raise IKGError(f"question {qa_id}: its gold path has no triple to hide")
    facts = _facts(path_edges)
    k = n_hidden(level, len(facts))
    chosen = sorted(random.Random(_seed(qa_id, level)).sample(range(len(facts)), k))
    picked = tuple(facts[i] for i in chosen)
    hidden: set[EdgeId] = set()
    pairs: set[frozenset[str]] = set()
    for f in picked:
        pairs.add(frozenset((f.head, f.tail)))
        if f.head in graph and f.tail in graph:
            hidden.update(edge_id(d) for d in graph.relations_between(f.head, f.tail, undirected=True))
    return IKGView(make_view_id(qa_id, level), qa_id, level, picked, frozenset(hidden), frozenset(pairs))


def pin_edges(graph: KnowledgeGraph, program: QueryProgram | None) -> list[PathEdge]:
    """The fact behind each pin of ``program`` (its constraints), walked from the pinned node to the value: the
    relation between them with the pin's label read in the pin's direction (either way when symmetric). A pin the
    graph does not hold (another snapshot) is left out: the view hides what the graph has."""
    if program is None or not program.nodes:
        return []
    out: list[PathEdge] = []
    for c in program.constraints:
        node = program.nodes[c.node]
        if node not in graph or c.value not in graph:
            continue
        for d in graph.relations_between(node, c.value):
            text, subject = edge_label(d, d.source, d.target)
            if text and relation_key(text) == relation_key(c.label) and ((subject == node) == c.forward or c.symmetric):
                out.append(edge_as_hop(d, node, c.value))
                break
    return out


def critical_edges(graph: KnowledgeGraph, path_edges: Sequence[PathEdge], program: QueryProgram | None
                   ) -> list[PathEdge]:
    """The facts a question rests on, the ones an IKG view may hide: its path's, then its pins' (``pin_edges``). A
    pin is hidden like a hop: a question whose pin the graph no longer shows has to read it in the text."""
    return [*path_edges, *pin_edges(graph, program)]


def view_for_qa(graph: KnowledgeGraph, qa: QA, level: float) -> IKGView:
    return make_view(graph, qa.qa_id, critical_edges(graph, qa.path_edges, qa.program), level)


# -- the graph as a view shows it ---------------------------------------------------------------------------------


class ViewedGraph:
    """A ``KnowledgeGraph`` as one ``IKGView`` shows it: the relations the view hides are left out of every
    walk (``neighbors``, ``neighbor_names``, ``relations_between``, ``has_edge``, ``edge``); everything else
    (entities, names, lookups, the snapshot) is the underlying graph's. No copy: a filter over the same graph."""

    def __init__(self, graph: KnowledgeGraph, view: IKGView) -> None:
        self._graph = graph
        self.view = view

    def __getattr__(self, name: str) -> Any:
        return getattr(self._graph, name)

    def __contains__(self, name: object) -> bool:
        return name in self._graph

    def __len__(self) -> int:
        return len(self._graph)

    def __repr__(self) -> str:
        return f"ViewedGraph({self._graph!r}, {self.view.view_id}, {len(self.view.hidden)} hidden)"

    def entity(self, name: str) -> Any:
        """The entity, its description without the sentences that state a hidden fact (``IKGView.redact``)."""
        e = self._graph.entity(name)
        shown = self.view.redact(e.description, about=e.name)
        return e if shown == e.description else e.model_copy(update={"description": shown})

    def neighbors(self, name: str, *, undirected: bool = True) -> list[tuple[str, EdgeData]]:
        """The relations of ``name`` the view shows, each description without the sentences that state a hidden
        fact and without the keywords that name one ("sheep breed" on a relation of Leicester Longwool, in a view
        that hides that it is a breed of sheep)."""
        hidden = self.view.hidden
        out = []
        for nb, d in self._graph.neighbors(name, undirected=undirected):
            if edge_id(d) in hidden or self.view.states(f"{d.source} {d.relation} {d.target}"):
                continue  # hidden, or a relation whose own label states a hidden fact ("George Beadle championed
                # the teosinte origin of maize", in a view that hides that maize was domesticated from teosinte)
            shown = self.view.redact(d.description, about=name)
            words = tuple(k for k in d.keywords if self.view.redact(k, about=name) == k)
            if shown != d.description or words != d.keywords:
                d = replace(d, description=shown, keywords=words)
            out.append((nb, d))
        return out

    def hidden_neighbors(self, name: str, *, undirected: bool = True) -> list[tuple[str, EdgeData]]:
        """The relations of ``name`` this view hides (for the tools to tell a question about a hidden fact from
        one a looser reading of another relation would answer); never shown to the model."""
        hidden = self.view.hidden
        return [(nb, d) for nb, d in self._graph.neighbors(name, undirected=undirected) if edge_id(d) in hidden]

    def neighbor_names(self, name: str, *, undirected: bool = True) -> list[str]:
        return sorted({nb for nb, _ in self.neighbors(name, undirected=undirected)})

    def relations_between(self, a: str, b: str, *, undirected: bool = True) -> list[EdgeData]:
        return [d for d in self._graph.relations_between(a, b, undirected=undirected) if not self.view.hides(d)]

    def has_edge(self, a: str, b: str, *, undirected: bool = True) -> bool:
        if a not in self._graph or b not in self._graph:
            return False
        return bool(self.relations_between(a, b, undirected=undirected))

    def edge(self, a: str, b: str, *, undirected: bool = True) -> EdgeData | None:
        if a not in self._graph or b not in self._graph:
            return None
        rels = self.relations_between(a, b, undirected=undirected)
        return min(rels, key=lambda d: (-d.weight, d._sort_key())) if rels else None


class ViewedIndex:
    """A ``tasks.env.index.GraphIndex`` whose ``graph`` is a ``ViewedGraph``: name lookup and entity search are
    the full index's (entities are never hidden, only relations); walks go through the view."""

    def __init__(self, index: Any, view: IKGView) -> None:
        self._index = index
        self.view = view
        self.graph = ViewedGraph(index.graph, view)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._index, name)


def viewed_environment(env: Any, view: IKGView, domain: str) -> Any:
    """``env`` (a ``tasks.env.tools.ToolEnvironment``) as one question sees it: the same tools, limits and text
    collections, with ``domain``'s graph shown through ``view``. Costs a dict and a few small objects, so a tool
    server can make one per request."""

    if domain not in env.indexes:
        raise IKGError(f"IKG view {view.view_id}: no graph loaded for domain {domain!r}")
    indexes = {**env.indexes, domain: ViewedIndex(env.indexes[domain], view)}
    return ToolEnvironment(indexes, tools=env.tool_names, limits=env.limits, default_domain=env.default_domain,
                           texts=env.texts)




def reachable(graph: KnowledgeGraph | ViewedGraph, start: str, goal: str, max_hops: int) -> bool:
    """Whether ``goal`` is within ``max_hops`` relations of ``start`` (either direction) in ``graph``."""
    if start not in graph or goal not in graph:
        return False
    if start == goal:
        return True
    seen, frontier = {start}, deque([(start, 0)])
    while frontier:
        node, depth = frontier.popleft()
        if depth >= max_hops:
            continue
        for nb in graph.neighbor_names(node):
            if nb == goal:
                return True
            if nb not in seen:
                seen.add(nb)
                frontier.append((nb, depth + 1))
    return False


# -- answerability ------------------------------------------------------------------------------------------------

RejectReason = Literal["no_triples", "not_answerable", "no_text", "same_as_lower_level"]


@dataclass(frozen=True)
class IKGVariant:
    """A kept IKG question: its view, and how it stays answerable (``"text"``: every hidden fact is in the text
    search's top k; ``"path"``: the answer is reachable by another path in the view)."""

    qa: QA
    view: IKGView
    answerable_by: Literal["text", "path"]
    evidence: Mapping[str, str] = field(default_factory=dict)  # fact query -> chunk id that holds it


@dataclass(frozen=True)
class IKGReject:
    qa_id: str
    level: float
    reason: RejectReason
    detail: str


@dataclass(frozen=True)
class IKGBuild:
    """Every variant kept and rejected for one domain at ``levels`` (checked, ascending); ``notice`` says why a
    domain got none at all."""

    domain: str
    variants: tuple[IKGVariant, ...] = ()
    rejects: tuple[IKGReject, ...] = ()
    notice: str | None = None
    levels: tuple[float, ...] = ()


#: Whether a passage, as the text tool shows it, states a hidden fact (a reader's verdict; ``tasks.env.ikg_reader``).
PassageReader = Callable[[str, HiddenFact], bool]


def fact_found(fact: HiddenFact, hits: Sequence[TextHit], reads: PassageReader | None = None) -> str | None:
    """The chunk id among ``hits`` that holds ``fact`` (module docstring), else ``None``: a hit counts when the text
    the tool shows for the fact's query (``passage_window``; the title does not count) states it (``states_fact``:
    one sentence names both of its entities whole, "Mexico" inside "Mexico City" not counting),
    and, for a fact extracted from the corpus, when it is the chunk the fact came from. A fact the reply would cut
    off is not one the agent can read. With ``reads``, the reader must say the passage states it too."""
    for h in hits:
        if fact.source_chunk_ids and h.chunk.chunk_id not in fact.source_chunk_ids:
            continue
        shown = passage_window(fact.query(), h.chunk.text)
        if states_fact(shown, fact) and (reads is None or reads(shown, fact)):
            return h.chunk.chunk_id
    return None


def check_answerable(
    graph: KnowledgeGraph,
    qa: QA,
    view: IKGView,
    text: TextIndex | None,
    *,
    k: int = DEFAULT_TOP_K,
    max_hops: int | None = None,
    reads: PassageReader | None = None,
) -> IKGVariant | IKGReject:
    """The variant when ``view`` leaves ``qa`` answerable, else the reject naming the first fact the text search
    missed. ``max_hops`` bounds the other path (default: the question's hops + 1)."""
    evidence: dict[str, str] = {}
    missing: HiddenFact | None = None
    if text is not None:
        results = text.search_many([f.query() for f in view.facts], k)
        for f, hits in zip(view.facts, results):
            found = fact_found(f, hits, reads)
            if found is None:
                missing = missing or f
            else:
                evidence[f.query()] = found
        if missing is None:
            return IKGVariant(qa, view, "text", evidence)
    hops = max_hops if max_hops is not None else qa.hops + 1
    if reachable(ViewedGraph(graph, view), qa.path[0], qa.path[-1], hops):
        return IKGVariant(qa, view, "path", evidence)
    if missing is None:
        detail = "no text collection to search, and no other path to the answer in the view"
    else:
        detail = (f"hidden fact {missing.triple} is not in the top {k} text results for {missing.query()!r}, "
                  f"and no other path of at most {hops} hops reaches the answer")
    return IKGReject(qa.qa_id, view.level, "not_answerable", detail)


def build_variants(
    graph: KnowledgeGraph,
    questions: Sequence[QA],
    text: TextIndex | None,
    *,
    levels: Sequence[float] = DEFAULT_LEVELS,
    k: int = DEFAULT_TOP_K,
    reads: PassageReader | None = None,
) -> IKGBuild:
    """IKG variants of ``questions`` at every level, only answerable ones kept (``check_answerable``).

    A graph without a text collection (an imported graph with no corpus, and none added) gets no variants: an
    incomplete graph with nowhere to read the missing facts would only teach guessing. ``IKGBuild.notice``
    says so, for the run to print."""
    lv = check_levels(levels)
    if text is None:
        return IKGBuild(graph.domain, notice=(
            f"{graph.domain}: no corpus chunks and no text collection given, so no IKG variants; add a text "
            "collection (a folder, a jsonl or a dataset) to search"), levels=lv)
    kept: list[IKGVariant] = []
    rejects: list[IKGReject] = []
    for qa in questions:
        seen: dict[frozenset[EdgeId], float] = {}
        for level in lv:
            if not qa.path_edges:
                rejects.append(IKGReject(qa.qa_id, level, "no_triples", "the gold path has no triple to hide"))
                continue
            view = view_for_qa(graph, qa, level)
            if view.hidden in seen:  # a one-hop question hides its one fact at every level: one variant, not two
                rejects.append(IKGReject(qa.qa_id, level, "same_as_lower_level",
                                         f"hides the same facts as IKG-{round(seen[view.hidden] * 100):g}%"))
                continue
            seen[view.hidden] = level
            out = check_answerable(graph, qa, view, text, k=k, reads=reads)
            (kept if isinstance(out, IKGVariant) else rejects).append(out)  # type: ignore[arg-type]
    return IKGBuild(graph.domain, tuple(kept), tuple(rejects), levels=lv)


@dataclass(frozen=True)
class IKGLevels:
    """The IKG levels a run asks for, handed down once where they enter a flow (``of``) and carried from there: they
    build each domain's variants (``build``), whose ``IKGBuild.levels`` the run's lines per level read. Empty: no
    IKG variants (false as a truth value). ``k``: the text search results a hidden fact must be among."""

    levels: tuple[float, ...] = ()
    k: int = DEFAULT_TOP_K

    @classmethod
    def of(cls, given: Iterable[object] | None, configured: Iterable[object] = (), *,
           k: int = DEFAULT_TOP_K) -> "IKGLevels":
        """``given`` (``None``: ``configured``, the ``[ikg] levels`` setting), checked (``check_levels``: distinct,
        ascending; ``IKGError`` for a level outside (0, 1)); an empty list asks for none."""
        wanted = list(configured if given is None else given)
        return cls(check_levels(wanted) if wanted else (), k)

    def __bool__(self) -> bool:
        return bool(self.levels)

    def build(self, graph: KnowledgeGraph, questions: Sequence[QA], text: TextIndex | None, *,
              reads: PassageReader | None = None) -> IKGBuild:
        """The variants of ``questions`` at these levels (``build_variants``)."""
        return build_variants(graph, questions, text, levels=self.levels, k=self.k, reads=reads)


# -- serving many views ----------------------------------------------------------------------------------------


_VIEW_ID = re.compile(r"^(?P<qa>.+)@ikg-(?P<pct>[0-9]{1,2}(?:\.[0-9]+)?)$")


def parse_view_id(view_id: object) -> tuple[str, float]:
    """``(qa_id, level)`` of ``"<qa_id>@ikg-<percent>"``; ``IKGError`` for anything else."""
    found = _VIEW_ID.match(view_id) if isinstance(view_id, str) else None
    if found is None or not 0 < float(found["pct"]) < 100:
        raise IKGError(f"{view_id!r} is not an IKG view id; view ids look like '<qa_id>@ikg-40'")
    return found["qa"], float(found["pct"]) / 100


class ViewRegistry:
    """The views a tool server or rollout worker serves, by id: one graph, thousands of small overlays.

    A view is registered (``add``, e.g. from an export's rows) or made on first use from its id (question id and
    level) when the registry knows the question (``questions``: qa id -> question, ``graphs``: domain -> graph);
    each view remembers the domain whose graph it hides relations of (``domain``)."""

    def __init__(
        self,
        views: Iterable[IKGView] = (),
        *,
        domain: str | None = None,
        questions: Mapping[str, QA] | None = None,
        graphs: Mapping[str, KnowledgeGraph] | None = None,
    ) -> None:
        self._views: dict[str, IKGView] = {}
        self._domains: dict[str, str] = {}
        self._questions = dict(questions or {})
        self._graphs = dict(graphs or {})
        self._lock = threading.Lock()
        for v in views:
            self.add(v, domain)

    def add(self, view: IKGView, domain: str | None = None) -> None:
        self._views[view.view_id] = view
        if domain is not None:
            self._domains[view.view_id] = domain

    def domain(self, view_id: str) -> str | None:
        """The domain ``view_id`` belongs to, when known."""
        return self._domains.get(view_id)

    def _on_demand(self, view_id: str) -> IKGView | None:
        if not self._questions:
            return None
        qa_id, level = parse_view_id(view_id)
        qa = self._questions.get(qa_id)
        graph = self._graphs.get(qa.domain) if qa is not None else None
        if qa is None or graph is None:
            return None
        view = view_for_qa(graph, qa, level)
        if view.view_id != view_id:  # "q@ikg-40.0" names the view "q@ikg-40": serve it under the id asked
            return None
        with self._lock:
            self.add(view, qa.domain)
        return view

    def __len__(self) -> int:
        return len(self._views)

    def __contains__(self, view_id: object) -> bool:
        return view_id in self._views

    def get(self, view_id: str) -> IKGView:
        """The view ``view_id``, made now when the registry knows its question; ``IKGError`` (one line the model or
        the caller can read) when unknown."""
        found = self._views.get(view_id)
        if found is None:
            found = self._on_demand(view_id)
        if found is None:
            raise IKGError(f"unknown IKG view {view_id!r}; views look like '<qa_id>@ikg-40' and must be loaded "
                           "with the questions they belong to")
        return found


# -- export fields -------------------------------------------------------------------------------------------------


def setting_fields(view: IKGView | None) -> dict[str, Any]:
    """What every exported row of a question carries about its setting: ``kg_setting`` (complete / incomplete),
    ``ikg_level`` (``None`` when complete), ``hidden_triples`` (stored reading) and ``view_id``."""
    if view is None:
        return {"kg_setting": "complete", "ikg_level": None, "hidden_triples": [], "view_id": None}
    return {"kg_setting": "incomplete", "ikg_level": view.level, "hidden_triples": view.hidden_triples(),
            "view_id": view.view_id}


def with_setting(rl_row: Mapping[str, Any], view: IKGView | None) -> dict[str, Any]:
    """A verl RL row (``tasks.export.rows.rl_row``) in ``view``'s setting: ``kg_setting`` in the ground truth
    (Graph-RFT's reward reads it from there, ``training.rewards.GroundTruth``), the setting fields in
    ``extra_info``, and the view id in every tool's ``create_kwargs`` (the tool class serves that view)."""
    row = dict(rl_row)
    fields = setting_fields(view)
    rm = dict(row["reward_model"])
    truth = json.loads(rm["ground_truth"])
    truth["kg_setting"] = fields["kg_setting"]
    rm["ground_truth"] = json.dumps(truth, ensure_ascii=False, separators=(",", ":"))
    row["reward_model"] = rm
    extra = dict(row["extra_info"])
    extra.update(fields)
    if view is not None:
        extra["tools_kwargs"] = {name: {"create_kwargs": {**kw.get("create_kwargs", {}), "view_id": view.view_id}}
                                 for name, kw in extra.get("tools_kwargs", {}).items()}
    row["extra_info"] = extra
    return row


__all__ = [
    "DEFAULT_LEVELS",
    "EdgeId",
    "HiddenFact",
    "IKGBuild",
    "IKGError",
    "IKGLevels",
    "IKGReject",
    "IKGVariant",
    "IKGView",
    "ViewRegistry",
    "ViewedGraph",
    "ViewedIndex",
    "PassageReader",
    "build_variants",
    "check_answerable",
    "check_level",
    "check_levels",
    "edge_id",
    "fact_found",
    "states_fact",
    "level_name",
    "make_view",
    "make_view_id",
    "n_hidden",
    "parse_view_id",
    "reachable",
    "setting_fields",
    "view_for_qa",
    "critical_edges",
    "pin_edges",
    "viewed_environment",
    "with_setting",
]
