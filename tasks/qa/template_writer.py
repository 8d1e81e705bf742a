"""The template writer: fluent questions and step thoughts written by code from a verified path.

A weak generator (the embedded 135M model) cannot write a question a person would train on; code can, from the
path's relations. Everything here is deterministic: the same path, graph and seed give the same text.

How a hop is put into words (``Phrase``), for the relation walked from ``a`` to ``b``:

- a verb label ("wrote", "studied at", "is located in", "was the adopted heir of") read in its stored direction:
  walked forward it describes ``b`` as "the <type> that <a> <label>" ("the work that Alan Turing wrote"), or, for
  a one-word regular or known participle, "the <type> <participle> by <a>" ("the concept introduced by ...");
  walked backward, "the <type> that <label> <a>" ("the person who posed the Entscheidungsproblem");
- a noun label ("capital", "place_of_birth", "part of"): "the <label> of <a>", backward "the <type> whose
  <label> is <a>";
- no label (LightRAG relations have none): the words between the two names in the relation's description
  ("Alan Turing studied mathematics at King's College" gives "studied mathematics at"), else the first keyword
  ("the organization linked to Alan Turing through education");
- nothing usable (no label, keywords, or description naming both ends): ``TemplateError``; the caller records a
  ``template_unphrasable`` reject, never a half-written question.

A question nests the hops ("Which organization did ... ?" is avoided: English needs the verb's base form, which a
label does not give): "What is the <description of the last node>?", "Which <type> <label> <description>?",
"Who ...?" for people, "What is the <label> of ...?" for noun labels, and a comparison form when two hops share a
label into the same node ("Which person founded the same organization as Steve Jobs?"). The phrasing is picked
by a hash of the path and the seed, so a data set gets several shapes, reproducibly.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from schemas.ids import content_digest
from schemas.qa import PathEdge

# -- relation phrases ---------------------------------------------------------------------------------------------


class TemplateError(ValueError):
    """A path the template writer cannot put into words (a relation with no label, keywords or description)."""


_TYPE_NOUN = {
    "person": "person", "people": "person", "location": "place", "geo": "place", "place": "place",
    "organization": "organization", "organisation": "organization", "concept": "concept", "artifact": "artifact",
    "food": "food", "species": "species", "technology": "technology", "event": "event", "method": "method",
    "category": "category", "content": "work", "creature": "creature", "naturalobject": "natural object",
    "natural_object": "natural object", "other": "entity", "data": "entity",
}  # fmt: skip
# LightRAG's default extraction types are Person, Creature, Organization, Location, Event, Concept, Method, Content
# (books, articles, films), Data, Artifact (tools, software, devices), NaturalObject and Other.
_AUX = frozenset("is are was were has have had be been being does did do can could will would may might".split())
_IRREGULAR_PAST = {
    "wrote": "written", "built": "built", "led": "led", "won": "won", "made": "made", "held": "held", "began": "begun",
    "became": "become", "fought": "fought", "gave": "given", "took": "taken", "ran": "run", "taught": "taught",
    "brought": "brought", "bought": "bought", "sold": "sold", "found": "found", "drew": "drawn", "grew": "grown",
    "spoke": "spoken", "chose": "chosen", "broke": "broken", "rode": "ridden", "sang": "sung", "saw": "seen",
    "knew": "known", "met": "met", "left": "left", "lost": "lost", "paid": "paid", "sent": "sent", "spent": "spent",
    "told": "told", "thought": "thought", "shot": "shot", "struck": "struck", "bore": "borne", "drank": "drunk",
    "ate": "eaten", "fed": "fed", "kept": "kept", "rose": "risen", "fell": "fallen", "flew": "flown", "hid": "hidden",
    "wore": "worn", "swam": "swum", "sat": "sat", "stood": "stood", "understood": "understood", "dug": "dug",
    "spread": "spread", "set": "set", "cut": "cut", "cast": "cast", "split": "split", "shut": "shut",
}  # fmt: skip
_BASE_VERBS = frozenset("border contain include grow live lie produce use make connect feed eat host own".split())
_ARTICLES = ("the", "a", "an")


def type_noun(entity_type: str | None) -> str:
    """The noun a question uses for an entity of ``entity_type`` ("person", "place", ...; "entity" if unknown)."""
    t = (entity_type or "").strip().lower()
    if t in _TYPE_NOUN:
        return _TYPE_NOUN[t]
    if re.fullmatch(r"[a-z]{3,20}", t) and t != "unknown":
        return t
    return "entity"


def _clean_label(label: str) -> str:
    """A label as words: the last segment of a dotted Freebase-style name, underscores and camel case split
    (those machine-style labels are also lower-cased; a label written as prose keeps its case)."""
    text = label.strip()
    machine = "_" in text or ("." in text and " " not in text) or bool(re.search(r"[a-z][A-Z]", text))
    if "." in text and " " not in text:
        text = text.rsplit(".", 1)[-1]
    text = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text).replace("_", " ")
    text = " ".join(text.split())
    return text.lower() if machine else text


def is_verb_label(label: str) -> bool:
    """Whether a relation label starts with a verb ("wrote", "studied at", "is part of", "grows in"). A label
    written as prose is taken for a verb phrase unless it is a bare "<noun> of" ("capital of", "part of");
    machine-style labels ("place_of_birth", "people.person.spouse") are nouns unless their first word is clearly
    a verb."""
    ws = label.split()
    if not ws:
        return False
    first = ws[0].lower()
    verbish = (
        first in _AUX or first in _IRREGULAR_PAST or first in _BASE_VERBS or first.endswith("ed")
        or (first.endswith("s") and not first.endswith("ss") and len(first) > 3)
    )  # fmt: skip
    if verbish:
        return True
    return not (ws[-1].lower() == "of" and len(ws) <= 3)


def _is_machine_label(label: str) -> bool:
    text = label.strip()
    return "_" in text or ("." in text and " " not in text) or bool(re.search(r"[a-z][A-Z]", text))


def _strip_trailing_article(words: str) -> str:
    ws = words.split()
    while ws and ws[-1].lower() in _ARTICLES:
        ws.pop()
    return " ".join(ws)


@dataclass(frozen=True)
class Phrase:
    """How one relation reads: ``label`` with ``subject_first`` telling whether the stored subject comes before it
    ("A wrote B": True); ``kind`` is "verb", "noun" or "keyword"."""

    label: str
    kind: str
    subject_is_head: bool  # the walk's head is the relation's subject


def description_phrase(description: str, a: str, b: str) -> tuple[str, bool] | None:
    """The words between the names ``a`` and ``b`` in ``description`` ("studied mathematics at"), and whether ``a``
    comes first; ``None`` when the description does not name both, or the words between are not a short verb
    phrase."""
    low = description.lower()
    ia, ib = low.find(a.lower()), low.find(b.lower())
    if ia < 0 or ib < 0:
        return None
    first, second = (a, b) if ia < ib else (b, a)
    start = min(ia, ib) + len(first)
    end = max(ia, ib)
    between = description[start:end].strip()
    between = re.sub(r"^(?:has|have|had)\s+been\s+", "was ", between)
    between = _strip_trailing_article(between)
    if not between or re.search(r"[,.;:()\"]", between):
        return None
    words = between.split()
    if not 1 <= len(words) <= 6 or any(w[:1].isupper() for w in words) or not is_verb_label(between):
        return None
    return between, ia < ib


def _active(label: str) -> str | None:
    """The active past tense of a past passive label ("was founded by" -> "founded", "were spread by" -> "spread",
    "was written by" -> "wrote"), else ``None`` (present passives keep their form: their active tense is unknown)."""
    m = re.fullmatch(r"(?:was|were) (\w+) by", label.strip())
    if m is None:
        return None
    part = m.group(1)
    past = {v: k for k, v in _IRREGULAR_PAST.items()}.get(part)
    if past is not None:
        return past
    if part.endswith("ed") and len(part) > 4:
        return part
    return None


def hop_phrase(edge: PathEdge) -> Phrase:
    """How the relation of one hop reads (module docstring); ``TemplateError`` when it cannot be phrased."""
    if edge.relation.strip():
        label = _clean_label(edge.relation)
        if _is_machine_label(edge.relation):
            first = label.split()[0] if label.split() else ""
            kind = "verb" if first in _AUX or first.endswith("ed") or first in _IRREGULAR_PAST else "noun"
        else:
            kind = "verb" if is_verb_label(label) else "noun"
        if kind == "noun" and label.endswith(" of"):
            label = label[: -len(" of")]
        active = _active(label) if kind == "verb" else None
        if active is not None:  # "A was founded by B" reads "B founded A"
            return Phrase(active, "verb", not edge.forward)
        return Phrase(label, kind, edge.forward)
    found = description_phrase(edge.description, edge.head, edge.tail) if edge.description else None
    if found is not None:
        return Phrase(found[0], "verb", found[1])
    keywords = [k.strip() for k in edge.keywords if k.strip() and len(k.split()) <= 4]
    if keywords:
        return Phrase(keywords[0].lower(), "keyword", True)
    raise TemplateError(
        f"cannot phrase the relation between {edge.head!r} and {edge.tail!r}: it has no label, no keywords, and "
        "its description does not name both ends"
    )


def _rel(noun: str) -> str:
    return "who" if noun == "person" else "that"


_PREPOSITIONS = frozenset(
    "in at on to for from of with by into onto over under about after before through during against among "
    "between within without towards toward across along around behind beside beyond near upon".split()
)
_ADVERBS = frozenset("first later also once originally jointly independently formally officially".split())
_COPULA = {"is": "has", "are": "have", "was": "had", "were": "had"}
_PAST_OF = {part: past for past, part in _IRREGULAR_PAST.items()}


def _participle(word: str) -> str | None:
    """``word`` read as a past participle ("introduced", "written"), else ``None``."""
    if word in _PAST_OF or word in _IRREGULAR_PAST.values():
        return word
    if word.endswith("ed") and len(word) > 4:
        return word
    return None


def _passive(label: str) -> str | None:
    """The passive of a transitive label read forward: "introduced" -> "introduced", "wrote" -> "written", "first
    classified" -> "first classified" (leading adverbs kept); ``None`` when the label is not one past-tense verb."""
    *adverbs, verb = label.split() or [""]
    if any(a.lower() not in _ADVERBS for a in adverbs):
        return None
    if verb in _IRREGULAR_PAST:
        part = _IRREGULAR_PAST[verb]
    elif verb.endswith("ed") and len(verb) > 4:
        part = verb
    else:
        return None
    return " ".join([*adverbs, part])


@dataclass(frozen=True)
class _Shape:
    """A forward verb label taken apart: ``copula`` ("was"), ``participle`` ("defeated"), ``noun`` ("state" of "is a
    state of", with ``article``), ``prep`` (the trailing preposition), ``rest`` (the label without ``prep``)."""

    copula: str = ""
    participle: str = ""
    article: str = ""
    noun: str = ""
    prep: str = ""
    rest: str = ""


def _shape(label: str) -> _Shape:
    ws = label.split()
    low = [w.lower() for w in ws]
    prep = low[-1] if len(ws) >= 2 and low[-1] in _PREPOSITIONS else ""
    rest = " ".join(ws[:-1]) if prep else label
    if low and low[0] in _COPULA and len(ws) >= 3 and prep == "of" and low[1] in _ARTICLES:
        return _Shape(copula=low[0], article=low[1], noun=" ".join(ws[2:-1]), prep=prep, rest=rest)
    if low and low[0] in _COPULA and len(ws) == 3 and prep and _participle(low[1]):
        return _Shape(copula=low[0], participle=ws[1], prep=prep, rest=rest)
    return _Shape(prep=prep, rest=rest)


def describe(subject: str, phrase: Phrase, noun: str, *, passive: bool = True, nested: bool = False) -> str:
    """A noun phrase for the hop's tail, told through ``subject`` (a name, or with ``nested`` a description without
    a relative clause); see ``_describe``."""
    return _describe(subject, phrase, noun, passive=passive, nested=nested, level=0)[0]


# How much clause a description holds (``_describe``): none, a right-branching one ("the person who founded X",
# "the place whose capital is X"), or one whose subject sits inside it ("the place that X worked in").
PLAIN, RIGHT, CENTRE = 0, 1, 2


def _describe(subject: str, phrase: Phrase, noun: str, *, passive: bool, nested: bool, level: int
              ) -> tuple[str, int]:
    """``(noun phrase, its clause level)`` for the hop's tail, told through ``subject`` of clause ``level``. A
    clause that puts its subject between the relative word and its verb ("the place that <subject> worked in")
    takes a name only, never a description: "the category that the person who worked in France classified" is
    never written. A passive, "whose" or right-branching form is used instead, or ``TemplateError``."""
    if phrase.kind == "keyword":
        return f"the {noun} linked to {subject} through {phrase.label}", level
    if phrase.kind == "noun":
        if phrase.subject_is_head:
            return f"the {phrase.label} of {subject}", level
        return f"the {noun} whose {phrase.label} is {subject}", max(level, RIGHT)
    if not phrase.subject_is_head:
        label = phrase.label
        if subject.split()[:1] and subject.split()[0].lower() in _ARTICLES:
            label = _strip_trailing_article(label)  # "is one of the" + "the category that ..." must not read "the the"
        return f"the {noun} {_rel(noun)} {label} {subject}", max(level, RIGHT)
    # the walk goes from the relation's subject to its object: the object is described through the subject
    label = _strip_trailing_article(phrase.label)
    part = _passive(label)
    if part is not None and (passive or nested):
        return f"the {noun} {part} by {subject}", level
    shape = _shape(label)
    if shape.noun and shape.article == "the":  # "is the capital of": "the country whose capital is Paris"
        return f"the {noun} whose {shape.noun} {shape.copula} {subject}", max(level, RIGHT)
    if nested:  # "the person who the award received by X is named after": a centre clause takes a name only
        raise TemplateError(f"cannot describe the object of {label!r} through {subject!r} without a "
                            "centre-embedded clause")
    if shape.noun:  # "is a state of": "the place that has California as a state"
        return f"the {noun} that {_COPULA[shape.copula]} {subject} as {shape.article} {shape.noun}", CENTRE
    return f"the {noun} {_rel(noun)} {subject} {label}", CENTRE


# -- questions ------------------------------------------------------------------------------------------------------


# Labels that put one thing inside another ("lies in", "is located in", "is a state of", "is part of"). Read from
# the container ("the place that lies in Sonora", "the place that is a state of the United States") they name one of
# many things in the world, however few the graph happens to hold: a question built on that hop has no single answer.
_CONTAINMENT = re.compile(
    r"(?:(?:is|are|was|were)\s+)?(?:(?:located|situated|found|based)\s+)?(?:in|within|inside|near|at)"
    r"(?:\s+(?:the|a|an)\s+[\w-]+\s+of)?"  # "is found in the nuclei of": one of the many things in every cell
    r"|lies?\s+(?:in|within|near)|belongs?\s+to"
    r"|(?:(?:is|are|was|were)\s+)?(?:(?:a|an|the|one)\s+)?(?:part|region|state|county|province|district|island|city"
    r"|town|village|member|department|agency|station)\s+of",
    re.I,
)


# The same holds for anything a verb puts in, at, on, into or from a place, an event or a work, read from that
# side ("the person who worked in Berlin", "the person who was a chemist from France", "the food made from cocoa",
# "the event that took place in Constantinople", "the person who studied at Cambridge"), for the members of a group
# ("a citizen of", "a student of") and for visits, witnesses, servants and users ("the event that reached India", "the
# person who survived the riot", "the person who served Augustus", "the person executed during the French
# Revolution", "the person who used the microscope"): one of many people, events or species. Relations that pair
# one thing with one other ("was married to", "gave birth to", "is the capital of") keep their single answer.
_SETTING = re.compile(
    r"(?!.*\b(?:married|engaged|wed|heir|successor|sequel|prequel|equivalent|identical|birth)\b)"
    r"(?:\w+\s+){0,4}?\w+\s+(?:in|at|on|into|onto|within|inside|near|across|throughout|through|along|to|from|for"
    r"|over|under|during|after|before)"
    r"|(?:(?:is|are|was|were)\s+)?(?:(?:a|an|the|one)\s+)?(?:citizen|native|resident|inhabitant|student|pupil"
    r"|employee|follower|disciple|soldier|subject)s?\s+of"
    r"|(?:(?:is|are|was|were|has|have|had)\s+)?(?:reached|visited|entered|attended|settled|inhabited|survived|witnessed|used|adopted"
    r"|played|besieged|attacked|invaded|raided|served|reaches|visits|enters|attends|inhabits|survives|witnesses|uses|adopts|plays"
    r"|serves)"
    # what is grown, traded or eaten, and what a work or an idea is about: "the place that grows wheat", "the work
    # that explains the Maillard reaction", "the concept that involves sugar" are each one of many
    r"|(?:grows|grew|cultivates|cultivated|farms|farmed|raises|raised|exports|exported|imports|imported|consumes"
    r"|consumed|eats|ate|sells|sold|trades|traded|produces|concerns|concerned|involves|involved|explains|explained"
    r"|describes|described|discusses|discussed|covers|covered|studies|studied|deals\s+with|dealt\s+with"
    r"|focuses\s+on|focused\s+on|relates\s+to|related\s+to|(?:is|was)\s+about|practises|practices|practised"
    r"|practiced)"
    # offices held in turn: "the person who was queen of Italy" is one of its many queens ("the first emperor of"
    # names one)
    r"|(?:is|are|was|were)\s+(?:(?:a|an|the)\s+)?(?:king|queen|emperor|empress|ruler|monarch|president|prime\s+minister"
    r"|chancellor|governor|mayor|pope|bishop|archbishop|abbot|consul|dictator|pharaoh|sultan|caliph|tsar|czar|shah"
    r"|chief|head|leader|director|chairman|chair|captain|coach|editor|dean|rector)\s+of"
    # whoever took up someone's work: "the person who built on the work of Carême", "the person who rediscovered
    # the work of Mendel" (three did) are each one of many
    r"|(?:\w+\s+){1,3}?(?:(?:the|his|her|their)\s+)?(?:\w+\s+)?(?:work|works|ideas|theory|theories|research|findings"
    r"|method|methods|teachings|writings|legacy)\s+of",
    re.I,
)


# Places nest: "is part of", "lies in", "is located in" read from the inside name one of several containers too
# ("Mexico is part of which place?": North America, Latin America, the Americas; "the place that Washington State
# University is located in": Pullman, Washington, the United States). Only a typed container ("is a state of",
# "is a county of") is the one place of its kind.
_NESTED = re.compile(
    r"(?:(?:is|are|was|were)\s+)?(?:(?:located|situated|found|based)\s+)?(?:in|within|inside|near|at)"
    r"|lies?\s+(?:in|within|near)|(?:(?:is|are|was|were)\s+)?(?:(?:a|an|the|one)\s+)?part\s+of"
    # Wholes and their parts: "the concept that includes dashi" is one of many dishes and cuisines with dashi in
    # them, "the concept that is made of DNA" one of many things made of it; read the other way, one of many parts.
    r"|(?:includes?|included|contains?|contained|comprises?|comprised|consists?\s+of|consisted\s+of)"
    r"|(?:(?:is|are|was|were)\s+)?(?:made|composed|built)\s+(?:up\s+)?(?:of|from)"
    # Neighbours and what runs through places: "the place that borders Mesopotamia" is one of its neighbours, "the
    # place that the Rhine flows through" one of the places along it, and the other way round.
    r"|(?:borders?|bordered|neighbou?rs|neighbou?red|(?:is|are|was|were)\s+(?:adjacent|next)\s+to"
    r"|(?:flows?|flowed|runs?|ran|passes|passed)\s+(?:through|across|past|along))"
    # honours: "the award received by Edsger Dijkstra" is one of his many, "the person who received the Turing
    # Award" one of its many winners
    r"|(?:received|receives|(?:was|were)\s+(?:given|granted))"
    # and partners: "the person who Bob Kahn collaborated with" is one of his many
    r"|(?:collaborated|collaborates|cooperated|cooperates|partnered|corresponded)\s+with",
    re.I,
)


# Membership told with an indefinite article ("is a species of", "is an image of", "is a founder of", "is one of the
# mother sauces") and things put to use ("is used to grow"): read from the class, the whole or the use, they name
# one of its members ("the species that is a genus of bacteria", "the place that is used to grow rice"). Read the
# other way they keep their answer ("the category that béchamel is one of").
_MEMBER = re.compile(
    r"(?:(?:is|are|was|were)\s+)?(?:(?:a|an)\s+(?:[\w-]+\s+){0,3}?[\w-]+\s+(?:of|in|for|to|from)"
    r"|one\s+of(?:\s+the)?(?:\s+[\w-]+){0,3}|used\s+(?:to|for|in|as)(?:\s+[\w-]+){0,3})",
    re.I,
)


# Where a person works, studies, lives, plays, campaigns or cooks, and with whom, read from the person: one of the
# several places and partners of a life ("Grace Hopper worked at which organization?": Harvard, Eckert-Mauchly,
# Remington Rand, the US Navy).
_AFFILIATION = re.compile(
    r"(?:(?:has|have|had)\s+)?(?:\w+\s+)?(?:(?:worked|works|work|studied|studies|study|taught|teaches|teach|lectured"
    r"|lectures|lived|lives|live|resided|resides|served|serves|played|plays|stayed|stays|performed|performs"
    r"|exhibited|trained|trains|researched|collaborated|collaborates|cooperated|partnered|corresponded"
    r"|campaigned|campaigns|fought|fights|cooked|cooks)(?:\s+[\w-]+){0,2}?\s+(?:at|for|in|with|on|under|as|alongside)"
    # what a person visits, joins, studies or wins: "the event won by Augustus" is one of his many victories
    r"|visited|visits|attended|attends|joined|joins|studied|studies|won|wins|earned|earns|(?:was|were)\s+awarded"
    # whom a person or a work inspired, influenced or taught: "Who was inspired by the Iliad?" has many answers
    r"|inspired|inspires|influenced|influences|taught|teaches|trained|trains|mentored|mentors|coached|coaches)",
    re.I,
)


# What an organization or a place makes, sells, funds or hires, read from it ("the machine built by IBM", "the
# species that India imported", "the person funded by the Rockefeller Foundation"): one of its many products,
# purchases or grants, however few the graph holds. A person's works are not judged by this list.
_OUTPUT = re.compile(
    r"(?:(?:has|have|had)\s+)?(?:(?:first|later|also|once|jointly|helped(?:\s+to)?)\s+)?"
    r"(?:built|builds|made|makes|manufactured|manufactures|produced|produces|developed|develops|designed|designs"
    r"|released|releases|launched|launches|published|publishes|created|creates|introduced|introduces|invented"
    r"|sold|sells|marketed|markets|issued|issues|funded|funds|sponsored|sponsors|financed|finances|awarded|awards"
    r"|presented|presents|hired|hires|employed|employs|acquired|acquires|bought|buys|imported|imports|exported"
    r"|exports|grew|grows|owned|owns|operated|operates|ran|runs|supported|supports|supplied|supplies|provided"
    r"|provides|commissioned|commissions|hosted|hosts|organised|organized|organises|organizes|trained|trains"
    r"|founded|founds|established|establishes|set\s+up|sets\s+up|adopted|adopts|signed|signs|listed|lists"
    r"|convened|convenes|held|holds|staged|stages"
    r"|recognised|recognized|recognises|recognizes|certified|certifies|approved|approves|sent|sends)"
    r"(?:\s+(?:to|for|with|by|in|on))?",
    re.I,
)
_PRODUCERS = frozenset({"organization", "place"})


def _one_of_many(ph: Phrase, subject_noun: str | None = None) -> bool:
    label = " ".join(ph.label.split())
    if ph.kind != "verb":
        return False
    if _NESTED.fullmatch(label):
        return True
    if ph.subject_is_head:
        return bool(_AFFILIATION.fullmatch(label) or (subject_noun in _PRODUCERS and _OUTPUT.fullmatch(label)))
    return bool(_CONTAINMENT.fullmatch(label) or _SETTING.fullmatch(label) or _MEMBER.fullmatch(label))


def _type_twice(noun: str, ph: Phrase) -> bool:
    """Whether the noun a hop's label puts on the node it describes repeats ``noun``, the node's type ("the species
    that has Streptococcus pneumoniae as a species" from "is a species of", "the place whose place is X"). Only the
    label's noun counts: "took place in" calls nothing a place."""
    if noun == "entity" or ph.kind == "keyword" or (ph.kind == "noun" and ph.subject_is_head):
        return False
    said = ph.label if ph.kind == "noun" else _shape(_strip_trailing_article(ph.label)).noun
    if not said:
        return False
    stem = re.escape(noun[:-1]) + "(?:y|ies)" if noun.endswith("y") else re.escape(noun) + "(?:s|es)?"
    return re.search(rf"\b{stem}$", said, re.I) is not None


def _check_not_tautological(path: Sequence[str], phrases: Sequence[Phrase], nouns: Sequence[str]) -> None:
    """``TemplateError`` for a hop whose label repeats the type noun of the node it describes: the description
    then says nothing ("the species that has X as a species") or contradicts the graph's typing."""
    for i, ph in enumerate(phrases):
        if _type_twice(nouns[i + 1], ph):
            raise TemplateError(f"the hop from {path[i]!r} to {path[i + 1]!r} ({ph.label!r}) would name "
                                f"{path[i + 1]!r} a {nouns[i + 1]} twice: a description that says nothing")


def _check_specific(path: Sequence[str], phrases: Sequence[Phrase], nouns: Sequence[str]) -> None:
    """``TemplateError`` for a hop that describes its node only as one of the many things in, at or of the previous
    one (``_CONTAINMENT``, ``_SETTING``, ``_MEMBER``), as one of the places a place nests in (``_NESTED``) or a
    person works in (``_AFFILIATION``), or as one of the things an organization or a place makes (``_OUTPUT``)."""
    for i, ph in enumerate(phrases):
        if _one_of_many(ph, nouns[i]):
            label = " ".join(ph.label.split())
            if ph.subject_is_head:
                what = f"one of the things {path[i]!r} {label}"
            else:
                what = f"one of the things that {label} {path[i]!r}"
            raise TemplateError(f"the hop from {path[i]!r} to {path[i + 1]!r} ({ph.label!r}) only says that "
                                f"{path[i + 1]!r} is {what}, like many others in the world; a question built on it "
                                "has no single answer")


def one_of_many_hop(edges: Sequence[PathEdge], types: Sequence[str | None] | None = None) -> int | None:
    """The index of the first hop that, read along the path, names its node only as one of the many things in, at
    or of the previous one (whoever writes the question: any wording of "the person who worked in France" has
    many right answers), or None. ``types[i]`` is the entity type of the hop's start, where known (what an
    organization or a place makes is one of many). A hop with no phrasable relation is not judged here."""
    for i, edge in enumerate(edges):
        try:
            ph = hop_phrase(edge)
        except TemplateError:
            continue
        if _one_of_many(ph, type_noun(types[i]) if types is not None else None):
            return i
    return None


def _hops(path: Sequence[str], edges: Sequence[PathEdge]) -> list[Phrase]:
    if len(path) < 2 or len(edges) != len(path) - 1:
        raise TemplateError(f"a question needs a path of two or more nodes with one relation per hop, got {list(path)}")
    # The node a backward hop describes is the relation's subject, and the question names it with a singular noun
    # ("Olympic Games" <-host- "Paris": "Which place hosts Olympic Games?"), whatever number the label has.
    return [ph if ph.subject_is_head or ph.kind != "verb" else Phrase(_singular(ph.label), ph.kind, ph.subject_is_head)
            for ph in (hop_phrase(e) for e in edges)]


_PLURAL_AUX = {"are": "is", "were": "was", "have": "has", "do": "does"}


def _singular(label: str) -> str:
    """``label`` with a leading plural auxiliary or base-form verb made singular ("are used to grow" -> "is used
    to grow", "border" -> "borders")."""
    first, _, rest = label.partition(" ")
    single = _PLURAL_AUX.get(first.lower()) or (first + "s" if first.lower() in _BASE_VERBS else None)
    return f"{single} {rest}".strip() if single else label


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def _final_forward(subject: str, label: str, noun: str, *, nested: bool, level: int, rng: random.Random
                   ) -> list[str]:
    """Question forms asking for the object of a forward verb ``label`` whose subject is ``subject``."""
    who = "Who" if noun == "person" else f"Which {noun}"
    what = "Who" if noun == "person" else "What"
    part = _passive(label)
    shape = _shape(label)
    options: list[str] = []
    if part is not None:
        options += [f"{who} was {part} by {subject}?", f"{what} is the {noun} {part} by {subject}?"]
    elif (shape.participle and level != CENTRE and len(subject.split()) <= 10
          and subject.count(" who ") + subject.count(" that ") + subject.count(" whose ") <= 1):  # fmt: skip
        # "At which event was <subject> defeated?": the subject sits between two verbs, so short, one
        # right-branching clause at most
        which = "whom" if noun == "person" else f"which {noun}"
        options.append(f"{_capitalise(shape.prep)} {which} {shape.copula} {subject} {shape.participle}?")
    elif shape.noun and shape.article != "the" and level == PLAIN:  # "Which place has California as a state?"
        options.append(f"{who} {_COPULA[shape.copula]} {subject} as {shape.article} {shape.noun}?")
    one_of = re.fullmatch(r"(is|are|was|were) one of", label, re.I)
    if one_of and level == PLAIN:  # "Which category is béchamel one of?", not "Béchamel is one of which category?"
        return [f"Which {noun} {one_of.group(1).lower()} {subject} one of?"]
    if not nested and noun != "entity" and part is None and not shape.noun:
        # "The Battle of Austerlitz led to the end of which organization?"
        options.append(f"{_capitalise(subject)} {label} which {noun}?")
    if not options or (not nested and rng.random() < 0.3):
        desc, _ = _describe(subject, Phrase(label, "verb", True), noun, passive=part is not None, nested=nested,
                            level=level)
        options.append(f"{what} is {desc}?")
    return options


_FOLLOWERS = frozenset(
    "is was are were has had in of and to by from with for on at that which who as its or but after before during "
    "into over under than".split()
)


def takes_article(name: str, texts: Sequence[str]) -> bool:
    """Whether ``name`` is written with "the" ("the Great Plains", "the Battle of Actium", not "the Alan Turing"),
    read from how ``texts`` (the descriptions around the entity) write it: at least two mentions, and at least half
    of them "the <name>" where the article belongs to the name itself (followed by punctuation, a function word or
    a verb, not by a noun it modifies: "the TeX typesetting system" does not count)."""
    if not name or name.split()[0].lower() in _ARTICLES:
        return False
    pattern = re.compile(r"(\b[Tt]he\s+)?" + re.escape(name) + r"(?![\w-])(?:\s+([A-Za-z]+))?")
    mentions = with_article = 0
    for text in texts:
        for m in pattern.finditer(text):
            mentions += 1
            after = m.group(2)
            if m.group(1) and (after is None or after in _FOLLOWERS
                               or (after.islower() and after.endswith(("ed", "s")))):  # fmt: skip
                with_article += 1
    return mentions >= 2 and with_article * 2 >= mentions


def write_question(
    path: Sequence[str], edges: Sequence[PathEdge], types: Sequence[str | None], *, seed: int = 0,
    start_article: bool = False,
) -> str:
    """A question whose answer is ``path[-1]``, naming only ``path[0]`` (module docstring), as "the <name>" with
    ``start_article`` (``takes_article``). ``types[i]`` is the entity type of ``path[i]``. Deterministic in (path,
    seed); ``TemplateError`` when a hop cannot be phrased, or phrased only with a centre-embedded clause ("the X
    that the Y who ... <verb>")."""
    phrases = _hops(path, edges)
    nouns = [type_noun(t) for t in types]
    _check_specific(path, phrases, nouns)
    _check_not_tautological(path, phrases, nouns)
    rng = random.Random(content_digest("template-question", str(seed), *path))
    start = f"the {path[0]}" if start_article else path[0]
    # Comparison: A -L-> B <-L- C reads "Which <C> <L> the same <B> as A?"
    if (len(path) == 3 and phrases[0].kind == phrases[1].kind == "verb" and phrases[0].label == phrases[1].label
            and phrases[0].subject_is_head and not phrases[1].subject_is_head and rng.random() < 0.7):  # fmt: skip
        who = "Who" if nouns[2] == "person" else f"Which {nouns[2]}"
        return f"{who} {phrases[1].label} the same {nouns[1]} as {start}?"
    subject, nested, level = start, False, PLAIN
    for i, ph in enumerate(phrases[:-1]):
        subject, level = _describe(subject, ph, nouns[i + 1], passive=rng.random() < 0.8, nested=nested,
                                   level=level)
        nested = True
    last, noun = phrases[-1], nouns[-1]
    if last.kind == "noun" and last.subject_is_head:
        return f"What is the {last.label} of {subject}?"
    if last.kind == "verb" and not last.subject_is_head:
        # "Which person posed ...?" / "Who posed ...?": the label is already a finite verb
        label = _strip_trailing_article(last.label) if subject.split()[0].lower() in _ARTICLES else last.label
        return rng.choice([f"Which {noun} {label} {subject}?",
                           f"Who {label} {subject}?" if noun == "person" else f"What {noun} {label} {subject}?"])
    if last.kind == "verb":
        return rng.choice(_final_forward(subject, _strip_trailing_article(last.label), noun, nested=nested,
                                         level=level, rng=rng))
    description, _ = _describe(subject, last, noun, passive=True, nested=nested, level=level)
    return f"{'Who' if noun == 'person' else 'What'} is {description}?"


# -- thoughts --------------------------------------------------------------------------------------------------------


def fact_sentence(edge: PathEdge) -> str:
    """The hop's relation as a plain statement in its stored direction ("Alan Turing wrote On Computable Numbers")."""
    s, o = (edge.head, edge.tail) if edge.forward else (edge.tail, edge.head)
    ph = hop_phrase(edge)
    if ph.kind == "noun":
        return f"{o} is the {ph.label} of {s}" if edge.relation else f"{s} is linked to {o}"
    if ph.kind == "keyword":
        return f"{edge.head} is linked to {edge.tail} through {ph.label}"
    a, b = (edge.head, edge.tail) if ph.subject_is_head else (edge.tail, edge.head)
    return f"{a} {ph.label} {b}"


def write_thoughts(
    question: str, path: Sequence[str], edges: Sequence[PathEdge], types: Sequence[str | None], *, graph: str,
    seed: int = 0,
) -> list[str]:
    """One thought per assistant turn of a template trajectory: before ``entity_matcher(path[0])``, before each
    ``node_info(path[i])``, and before the answer (``len(path) + 1`` thoughts). A thought names only what the
    question or an earlier tool output has shown: the thought before ``node_info(path[i])`` names ``path[i]``,
    which the previous output listed. Deterministic in (path, seed)."""
    _hops(path, edges)  # raises TemplateError for an unphrasable hop
    nouns = [type_noun(t) for t in types]
    rng = random.Random(content_digest("template-thoughts", str(seed), *path))
    start = path[0]
    first = rng.choice([
        f"The question starts from {start}. I will look it up in the {graph} graph to get its exact entity name.",
        f"I need to begin at {start}, so I will search the {graph} graph for that entity first.",
        f"To answer this I have to follow relations from {start}; first I will find it in the {graph} graph.",
    ])  # fmt: skip
    out = [first]
    need = describe(start, hop_phrase(edges[0]), nouns[1])
    out.append(rng.choice([
        f"The search lists {start}. Now I need {need}, so I will look at the relations of {start}.",
        f"{start} is in the graph. Its relations should show {need}, so I will inspect it next.",
    ]))  # fmt: skip
    for i in range(1, len(path) - 1):
        here = path[i]
        need = describe(here, hop_phrase(edges[i]), nouns[i + 1])
        fact = fact_sentence(edges[i - 1])
        out.append(rng.choice([
            f"The relations of {path[i - 1]} show that {fact}, so the next step is {here}. I still need {need}, "
            f"so I will inspect {here}.",
            f"From the result, {fact}. That brings me to {here}; now I need {need}, so I will look at its relations.",
        ]))  # fmt: skip
    fact = fact_sentence(edges[-1])
    answer = path[-1]
    out.append(rng.choice([
        f"The relations of {path[-2]} show that {fact}. That completes the chain, so the answer is {answer}.",
        f"The result says that {fact}. Following every hop from {start} leads to {answer}, which answers the question.",
    ]))  # fmt: skip
    return out


__all__ = [
    "Phrase",
    "TemplateError",
    "describe",
    "description_phrase",
    "fact_sentence",
    "hop_phrase",
    "is_verb_label",
    "takes_article",
    "type_noun",
    "write_question",
    "write_thoughts",
]
