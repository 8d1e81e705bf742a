"""The template writer: questions and step thoughts written by code from a verified path, by rendering relation
profiles.

A weak generator (the embedded 135M model) cannot write a question a person would train on; code can, from the
path's relations, if it knows what each relation means. It does not decide that itself: every hop reads its
relation's profile (``tasks.meaning.profiles``: the user's file, the shipped lexicon, graph statistics, the
profiler role), and this module only fills the profile's surface forms. Everything is deterministic: the same
path, profiles and seed give the same text.

How a question is built, for a path ``n0 -> n1 -> ... -> nk`` whose answer is ``nk``:

- each hop reads its relation from the known node (``n_i``) to the node asked for (``n_{i+1}``): from the
  relation's subject (the profile's forward forms) or from its object (the inverse forms);
- a hop is refused, with a sentence naming the label (``TemplateError``), when the profile says the relation is no
  words, has no surface forms, or names one of many in that direction in the world (``hop_refusal``);
- every hop but the last becomes a noun phrase (a clause form) describing the next node through the one before:
  "the work written by Alan Turing", "the drug that has lipid as an ingredient"; a clause whose slot sits inside
  it ("the work that Alan Turing wrote") takes a name only, never a description, so no clause is centre-embedded;
- the last hop becomes a question form around that noun phrase: "Who supervised the person who wrote On
  Computable Numbers?";
- a node with no type noun is "the entity"; a question that would call two nodes that is refused.

Which alternative a form list offers is picked by a hash of the path and the seed, so a data set gets several
shapes, reproducibly.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import lemminflect

from schemas.ids import content_digest
from schemas.meaning import RelationProfile
from schemas.qa import PathEdge
from tasks.meaning.names import (adjective_name, common_noun_name, entity_type_noun, name_says_kind, of_name_noun,
                                 person_kind, unreadable_name)
from tasks.meaning.morphology import PREPOSITIONS
from tasks.meaning.profiles import ProfileBook, default_book, hop_refusal


class TemplateError(ValueError):
    """A path the template writer cannot put into words; the message says which hop and why."""


def type_noun(entity_type: str | None) -> str:
    """The noun a question uses for an entity of ``entity_type`` ("person", "place", ...; "entity" if unknown):
    ``tasks.meaning.names.entity_type_noun``, the one map of type names to nouns."""
    return entity_type_noun(entity_type)


@dataclass(frozen=True)
class Hop:
    """One hop read through its profile: ``subject_known`` is true when the walk goes from the relation's subject
    (as the profile reads it) to its object."""

    profile: RelationProfile
    subject_known: bool

    @property
    def slot(self) -> str:
        return "{s}" if self.subject_known or self.profile.symmetric else "{o}"

    def clauses(self) -> list[str]:
        forms = self.profile.forms
        assert forms is not None  # hop_reading refuses a profile without forms
        return forms.object_clause if self.slot == "{s}" else forms.subject_clause

    def questions(self) -> list[str]:
        forms = self.profile.forms
        assert forms is not None
        return forms.ask_object if self.slot == "{s}" else forms.ask_subject


def hop_reading(edge: PathEdge, book: ProfileBook | None = None, *, counted: bool = True) -> Hop:
    """How one hop reads (module docstring); ``TemplateError`` naming the label when it cannot be asked. With
    ``counted=False`` a hop that names one of many is read all the same (a program's pins single out the node,
    and its trajectory's thoughts follow the same hops); a label with no words or forms is still refused."""
    book = book or default_book()
    source, _, target = edge.triple()
    found = book.for_edge(edge, source, target)
    if found is None:
        raise TemplateError(f"cannot phrase the relation between {edge.head!r} and {edge.tail!r}: it has no label, "
                            "no keywords, and no description naming both ends")
    profile, subject = found
    subject_known = subject == edge.head
    why = hop_refusal(profile, subject_known) if counted else (
        None if profile.words and profile.forms is not None else f"the relation {profile.label!r} cannot be phrased")
    if why is not None:
        raise TemplateError(f"the hop from {edge.head!r} to {edge.tail!r}: {why}")
    return Hop(profile, subject_known)


def hop_refusals(edges: Sequence[PathEdge], book: ProfileBook | None = None) -> tuple[int, str] | None:
    """The first hop that cannot be asked and why, or None (what the candidate sampler filters on)."""
    for i, edge in enumerate(edges):
        try:
            hop_reading(edge, book)
        except TemplateError as exc:
            return i, str(exc)
    return None


#: Kind nouns of a time: a question about one asks "When was X founded?", not "Which date was X founded in?".
TIME_KINDS = frozenset({"date", "year", "time", "day"})
_TIME_QUESTION = re.compile(r"^\{wh\} (.*) (?:in|on|at)\?$")


_ONE_OF = re.compile(r"\bone of (?:the )?\{[so]\}")
_DESCRIPTION = re.compile(r"^the \S.* (?:that|who|whose) ")


def _possessive(text: str, known: str) -> str:
    """``text`` with "the <noun> of <known>" as "<known>'s <noun>" where "the <noun> of <Name>" would name the thing
    itself (``of_name_noun``: "the state of Rockford" reads as a state named Rockford)."""
    return re.sub(rf"\bthe ((?:(?!\bof\b)[a-z' -])+?) of {re.escape(known)}(?![\w'’])",
                  lambda m: f"{possessive(known)} {m[1]}" if of_name_noun(m[1]) else m[0], text)


def possessive(name: str) -> str:
    """``name`` with the possessive's ending: "'" after a name said with "the" that ends in "s", which is plural
    ("the Faroe Islands'", "the United States'", "the Bahamas'"), else "'s" ("Rockford's", "Paris's", and a town
    named by a plural, "Coral Springs's")."""
    last = name.split()[-1] if name.split() else name
    if name.startswith("the ") and last.endswith("s") and last[:1].isalpha() and not last.endswith("ss"):
        return f"{name}'"  # "the Bahamas'", "the Beatles'": a name English says with "the" and ends in "s" is plural
    return f"{name}'s"


def _fill(template: str, known: str, slot: str, noun: str, person: bool | None = None, *,
          named: bool = False) -> str:
    """``template`` with ``known`` in ``slot``, "{the}" as "the <noun>", "{that}" as "who" for a node that is a
    person (``person``; by default, whether ``noun`` names people: ``person_kind``) and "that" otherwise.
    ``named``: ``known`` is a name, not a description, so "the state of {s}" is said "{s}'s state"
    (``_possessive``)."""
    if named:
        # a value named with the kind its clause has just said: "whose skin color is grey skin color" -> "is grey"
        said = re.search(rf"\bwhose ([a-z][a-z ]*) (?:is|was) {re.escape(slot)}$", template)
        if said is not None and known.endswith(f" {said[1]}") and len(known) > len(said[1]) + 1:
            known = known[: -len(said[1]) - 1]
    named = named and not name_says_kind(known)  # "the country of Frutillar Airport" reads as it should
    # "the district of Curupicayty 1a.", "the city of Valle Care (neighborhood)": no "'s" after a dot, a bracket or a
    # quote
    named = named and known[-1:].isalnum()
    if _ONE_OF.search(template) and slot in template and _DESCRIPTION.match(known):
        # "one of the founder crops" names a group; "one of the category that ..." says one of one thing
        raise TemplateError(f"'one of' before a description ({known[:60]!r}) reads as one of one thing")
    person = person_kind(noun) if person is None else person
    wh = "Who" if noun == "person" else ("What" if noun == "entity" else f"Which {noun}")
    if noun in TIME_KINDS:
        m = _TIME_QUESTION.match(template)
        if m is not None:
            template, wh = "{wh} " + m.group(1) + "?", "When"
        elif template.startswith(("{wh} is ", "{wh} was ")):  # "What is the publication date of X?"
            wh = "What"
    if _plural_heading(known):  # "Which group are motion picture projection activities part of?"
        for one, many in (("is", "are"), ("was", "were"), ("has", "have"), ("does", "do")):
            # the verb agrees with the slot where the slot is its subject: before it, or after it in a question's
            # inversion ("{wh} is {s} part of?"); not "{that} has {o} as a product", where the slot is the object
            if one != "has":
                template = re.sub(rf"^(\{{wh\}}) {one} {re.escape(slot)}", rf"\1 {many} {slot}", template)
            template = re.sub(rf"{re.escape(slot)} {one}\b", f"{slot} {many}", template)
    text = (template.replace(slot, known).replace("{the}", f"the {noun}")
            .replace("{that}", "who" if person else "that").replace("{wh}", wh))
    text = " ".join(text.split())
    # A form's own article before a name that carries one ("one of the {o}" with "the founder crops") says it once.
    text = re.sub(r"\b([Tt]he) the\b", r"\1", text)
    # A relation noun that is the node's own type says it once: "the country of X", not "the country that is the
    # country of X" (a question's opener is handled in ``write_question``).
    n = re.escape(noun)
    text = re.sub(rf"\bthe {n} (?:that|who) (?:is|was) (?:the|a|an) {n} of ", f"the {noun} of ", text)
    if named:  # "the state of Rockford" (from any form, the collapse above included) -> "Rockford's state"
        text = _possessive(text, known)
    if person:  # "Who has Joe Biden as its successor?" -> "as their successor"
        text = text.replace(" as its ", " as their ")
    return text


def _plural_heading(name: str) -> bool:
    """Whether a name is a plural common-noun heading in lower case ("motion picture projection activities", "root
    crops"): the verb beside it agrees in the plural. A capitalised name is one thing ("United States", "Three
    Sisters"), and so is a description ("the ... that ...")."""
    words = name.split()
    if not words or not name.islower() or words[0] in ("the", "a", "an") or len(words) > 8:
        return False
    for i, w in enumerate(words):  # the head ends before a preposition or a comma: "hypertrophy of tonsils with ..."
        if i and (w in PREPOSITIONS or w in ("due", "following")):
            words = words[:i]
            break
        if w.endswith(","):
            words = words[:i + 1]
            words[-1] = w.rstrip(",")
            break
    last = words[-1]
    lemmas = lemminflect.getAllLemmas(last).get("NOUN", ())
    return bool(lemmas) and last not in lemmas and last.endswith("s")


#: A statement that puts its subject inside its object ("{s} is located in {o}").
INSIDE_STATEMENT = re.compile(r"\{s\} (?:is (?:located|situated) in|lies in|is in) \{o\}")


def _container_forms(hop: Hop, *, question: bool) -> list[str]:
    """For a hop read from a node towards what it is located in, the forms that say the container by what it holds,
    ending in the node ("the province containing {s}", "Which region contains {s}?"); none for other hops."""
    forms = hop.profile.forms
    if hop.slot != "{s}" or forms is None or not INSIDE_STATEMENT.fullmatch(forms.statement):
        return []
    return ["{wh} contains {s}?"] if question else ["{the} containing {s}"]


def pick_form(options: Sequence[str], rng: random.Random) -> str:
    """One of a profile's alternative forms: the first (best) most of the time, another for variety."""
    return options[0] if len(options) == 1 or rng.random() < 0.6 else rng.choice(list(options[1:]))


def _slot_last(template: str, slot: str) -> bool:
    return template.rstrip("?").rstrip().endswith(slot)


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def describe(subject: str, hop: Hop, noun: str, *, nested: bool = False, rng: random.Random | None = None) -> str:
    """A noun phrase for the node a hop leads to, told through ``subject`` (a name, or with ``nested`` a
    description: then only a clause whose slot ends it). ``TemplateError`` when the profile has no such clause."""
    return _describe(subject, hop, noun, nested=nested, rng=rng)[0]


def _describe(subject: str, hop: Hop, noun: str, *, nested: bool, rng: random.Random | None,
              person: bool | None = None) -> tuple[str, bool]:
    """``describe`` and whether the phrase ends in its own words after the slot ("the person who X is named
    after"), not in the slot's filler."""
    slot = hop.slot
    options = [t for t in hop.clauses() if not nested or _slot_last(t, slot)]
    if not options and nested:
        # "the cercle that Daoura is located in" cannot take a description in its slot ("the province that the
        # cercle that Daoura is located in is located in"); the container is said by what it holds instead: "the
        # province containing the cercle that Daoura is located in"
        options = _container_forms(hop, question=False)
    if not options:
        raise TemplateError(f"cannot describe the node after {subject!r} over {hop.profile.label!r} without a "
                            "centre-embedded clause" if nested else
                            f"the profile of {hop.profile.label!r} has no clause form for this direction")
    pick = options[0] if rng is None else pick_form(options, rng)
    return _fill(pick, subject, slot, noun, person, named=not nested), not _slot_last(pick, slot)


def write_question(
    path: Sequence[str], edges: Sequence[PathEdge], types: Sequence[str | None], *, seed: int = 0,
    start_article: bool = False, book: ProfileBook | None = None, names: Sequence[str] | None = None,
) -> str:
    """A question whose answer is ``path[-1]``, naming only ``path[0]`` (module docstring), as "the <name>" with
    ``start_article`` (``takes_article``). ``types[i]`` is the type noun (or entity type) of ``path[i]``;
    ``names[0]``, when given, is the start's display form (an identifier's readable name). Deterministic in (path,
    seed); ``TemplateError`` when a hop cannot be asked."""
    if len(path) < 2 or len(edges) != len(path) - 1:
        raise TemplateError(f"a question needs a path of two or more nodes with one relation per hop, got {list(path)}")
    book = book or default_book()
    hops = [hop_reading(e, book) for e in edges]
    nouns = node_nouns(hops, types)
    if sum(n == "entity" for n in nouns[1:]) > 1:
        raise TemplateError("the question would call more than one node 'the entity': the graph gives no type for "
                            + ", ".join(repr(p) for p, n in zip(path[1:], nouns[1:]) if n == "entity"))
    shown = names[0] if names else path[0]
    if common_noun_name(shown):
        raise TemplateError(f"the start's name {shown!r} is a common noun: in the world it names many things, so a "
                            "question that names it alone has no single answer")
    if adjective_name(shown):
        raise TemplateError(f"the start's name {shown!r} is an adjective: it names a state, not a thing")
    if unreadable_name(shown) is not None:
        raise TemplateError(f"the start's name: {unreadable_name(shown)}")
    rng = random.Random(content_digest("template-question", str(seed), *path))
    subject = f"the {shown}" if start_article else shown
    nested = open_end = False
    for i, hop in enumerate(hops[:-1]):
        subject, open_end = _describe(subject, hop, nouns[i + 1], nested=nested, rng=rng)
        nested = True
    return ask(subject, hops[-1], nouns[-1], nested=nested, open_end=open_end, rng=rng)


def ask(subject: str, last: Hop, noun: str, *, nested: bool, open_end: bool, rng: random.Random,
        person: bool | None = None) -> str:
    """The question over the last hop, around ``subject`` (a name, or a description when ``nested``; ``open_end``:
    the description ends in its own words). ``TemplateError`` when no question form fits."""
    options = last.questions()
    if open_end:
        # "Which place had the person who pizza Margherita is named after as queen?": a description that ends in
        # its own verb or preposition may only end the question too
        options = [t for t in options if _slot_last(t, last.slot)] or _container_forms(last, question=True)
        if not options:
            raise TemplateError(f"the question over {last.profile.label!r} would continue after a clause that ends "
                                f"in its own verb ({subject!r}): a garden path")
    elif nested:
        # a description in the middle of a question ("What has the place whose countries include both Iran and the
        # country of Ladik as a location?") is centre-embedded: only a form that ends in it
        options = [t for t in options if _slot_last(t, last.slot)] or _container_forms(last, question=True)
        if not options:
            raise TemplateError(f"the question over {last.profile.label!r} would hold the description {subject!r} "
                                "in its middle: a centre-embedded clause")
    if not options:
        raise TemplateError(f"the profile of {last.profile.label!r} has no question form for this direction")
    question = _capitalise(_fill(pick_form(options, rng), subject, last.slot, noun, person, named=not nested))
    # "Which species is einkorn a species of?" says its noun twice: "What is einkorn a species of?"
    opener = f"Which {noun} "
    rest = question[len(opener):]
    if question.startswith(opener) and re.match(r"(?:is|was|are|were) ", rest) and \
            re.search(rf"\b{re.escape(noun)}\b", rest):
        # a person is asked with "who": "Who is a voice actor of X?", not "What is"
        question = ("Who " if (person_kind(noun) if person is None else person) else "What ") + rest
    return on_dates(question)


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_DAY_DATE = re.compile(r"\bin (?=\d{1,2} (?:" + "|".join(_MONTHS) + r") \d{3,4}\b)")
_THE_DATE = re.compile(r"\bin the (date|day) (that|when) (.+?) in(?=[?,]| and\b| whose\b|$)")


def on_dates(question: str) -> str:
    """A day takes "on", not "in": "founded in 16 September 2012" -> "founded on 16 September 2012", and "founded in
    the date that X was founded in" -> "founded on the date that X was founded on" (a year or a month keeps "in")."""
    question = _DAY_DATE.sub("on ", question)
    return _THE_DATE.sub(lambda m: f"on the {m[1]} {m[2]} {m[3]} on", question)


def date_in_words(name: str) -> str:
    """An ISO date as English writes it in running text ("2012-09-16" -> "16 September 2012", "1994-02" ->
    "February 1994"); anything else as it is."""
    m = re.fullmatch(r"(\d{4})-(\d{2})(?:-(\d{2}))?", name.strip())
    if m is None or not 1 <= int(m[2]) <= 12 or (m[3] is not None and not 1 <= int(m[3]) <= 31):
        return name
    month = _MONTHS[int(m[2]) - 1]
    return f"{int(m[3])} {month} {m[1]}" if m[3] else f"{month} {m[1]}"


def node_nouns(hops: Sequence[Hop], types: Sequence[str | None]) -> list[str]:
    """The noun for each node: its type from the graph, else what the relations say that end is in the world (a
    profile's ``subject_noun`` / ``object_noun``: the object of "was born in" is a place), else "entity"."""
    nouns = [type_noun(t) for t in types]
    for i, noun in enumerate(nouns):
        if noun != "entity":
            continue
        said: list[str | None] = []
        if i > 0:  # the node the hop before leads to
            h = hops[i - 1]
            said.append(h.profile.object_noun if h.slot == "{s}" else h.profile.subject_noun)
        if i < len(hops):  # the node the next hop starts from
            h = hops[i]
            said.append(h.profile.subject_noun if h.slot == "{s}" else h.profile.object_noun)
        nouns[i] = next((n for n in said if n), "entity")
    return nouns


_FOLLOWERS = frozenset(
    "is was are were has had in of and to by from with for on at that which who as its or but after before during "
    "into over under than".split()
)
_ARTICLES = ("the", "a", "an")


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



# -- facts and thoughts ------------------------------------------------------------------------------------------------


def fact_sentence(edge: PathEdge, book: ProfileBook | None = None) -> str:
    """The hop's relation as a plain statement in its stored direction ("Alan Turing wrote On Computable Numbers")
    from its profile's statement form; a relation without one is shown as a bracketed triple
    ("lipid [ingredient_of] clinical drug"), which says no more than the graph does."""
    book = book or default_book()
    source, _, target = edge.triple()
    found = book.for_edge(edge, source, target)
    if found is not None and found[0].forms is not None:
        profile, subject = found
        obj = target if subject == source else source
        return " ".join(profile.forms.statement.replace("{s}", subject).replace("{o}", obj).split())
    return f"{source} [{edge.relation_text()}] {target}"


def write_thoughts(
    question: str, path: Sequence[str], edges: Sequence[PathEdge], types: Sequence[str | None], *, graph: str,
    seed: int = 0, book: ProfileBook | None = None, pins: Mapping[int, Sequence[str]] | None = None,
) -> list[str]:
    """One thought per assistant turn of a template trajectory: before ``entity_matcher(path[0])``, before each
    ``node_info(path[i])``, and before the answer (``len(path) + 1`` thoughts). A thought names only what the
    question or an earlier tool output has shown: the thought before ``node_info(path[i])`` names ``path[i]``,
    which the previous output listed. ``pins`` (a program's question: node index -> the statements of its
    constraints, empty for a chain): the thought after a pinned node's relations says the pin holds, a pinned
    answer is inspected before it is given (one more thought: ``len(path) + 2``), and hops that name one of many
    are read (the pins single the node out). Deterministic in (path, seed); ``TemplateError`` for a hop that
    cannot be asked."""
    book = book or default_book()
    if len(path) < 2 or len(edges) != len(path) - 1:
        raise TemplateError(f"a trajectory needs a path of two or more nodes with one relation per hop, got {list(path)}")
    hops = [hop_reading(e, book, counted=pins is None) for e in edges]
    nouns = node_nouns(hops, types)
    rng = random.Random(content_digest("template-thoughts", str(seed), *path))
    start = path[0]
    first = rng.choice([
        f"The question starts from {start}. I will look it up in the {graph} graph to get its exact entity name.",
        f"I need to begin at {start}, so I will search the {graph} graph for that entity first.",
        f"To answer this I have to follow relations from {start}; first I will find it in the {graph} graph.",
    ])  # fmt: skip
    out = [first]
    need = describe(start, hops[0], nouns[1])
    out.append(rng.choice([
        f"The search lists {start}. Now I need {need}, so I will look at the relations of {start}.",
        f"{start} is in the graph. Its relations should show {need}, so I will inspect it next.",
    ]))  # fmt: skip
    pins = pins or {}

    def held(i: int) -> str:  # what the relations of path[i] also show: the pins on it
        said = pins.get(i, ())
        return (" They also show that " + " and that ".join(said) + ", as the question requires.") if said else ""

    for i in range(1, len(path) - 1):
        here = path[i]
        need = describe(here, hops[i], nouns[i + 1])
        fact = fact_sentence(edges[i - 1], book)
        out.append(rng.choice([
            f"The relations of {path[i - 1]} show that {fact}, so the next step is {here}.{held(i - 1)} I still "
            f"need {need}, so I will inspect {here}.",
            f"From the result, {fact}.{held(i - 1)} That brings me to {here}; now I need {need}, so I will look at "
            "its relations.",
        ]))  # fmt: skip
    fact = fact_sentence(edges[-1], book)
    answer = path[-1]
    last = len(path) - 1
    if pins.get(last):
        out.append(f"The relations of {path[-2]} show that {fact}.{held(last - 1)} That makes {answer} the "
                   f"candidate, but the question also pins it down, so I will check the relations of {answer}.")
        out.append(f"The relations of {answer} show that " + " and that ".join(pins[last]) + f". Every condition "
                   f"holds, so the answer is {answer}.")
        return out
    out.append(rng.choice([
        f"The relations of {path[-2]} show that {fact}.{held(last - 1)} That completes the chain, so the answer is "
        f"{answer}.",
        f"The result says that {fact}.{held(last - 1)} Following every hop from {start} leads to {answer}, which "
        "answers the question.",
    ]))  # fmt: skip
    return out


__all__ = [
    "Hop",
    "TemplateError",
    "ask",
    "pick_form",
    "describe",
    "fact_sentence",
    "hop_reading",
    "hop_refusals",
    "node_nouns",
    "common_noun_name",
    "takes_article",
    "type_noun",
    "write_question",
    "write_thoughts",
]
