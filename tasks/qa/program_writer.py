"""The template writer for programs: a question from a ``QueryProgram``, constraints included.

A program without constraints reads as the template writer's chain question (``write_question``). A constrained
node is described by its step's relative clause joined with its constraints' clauses ("the element that was
discovered by Carl Wilhelm Scheele and that is in period 4"); when the answer itself is constrained the question
asks for it through the same clauses ("Which element was discovered by Carl Wilhelm Scheele and is in period 4?").

Clauses come from the relation profiles' surface forms, turned into relative predicates (``relative``):

- ``{the} {that} X`` -> ``{that} X``; ``{the} whose X`` -> ``whose X``;
- a noun phrase ``the capital of {s}`` -> ``{that} is the capital of {s}``;
- a reduced participle (``{the} discovered by {o}``) has no tense to join with "and": another form of the same list
  is used; where none serves, the participle takes the tense of the relation's statement ("{that} was discovered by
  {o}", ``_tensed_participle``), or the step or constraint cannot be said (``TemplateError``).

Deterministic in (program, seed).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from lemminflect import getAllInflections, getAllLemmas, getInflection

from schemas.ids import content_digest
from schemas.meaning import RelationProfile
from schemas.programs import ProgramConstraint, QueryProgram
from tasks.meaning.morphology import PREPOSITIONS, indefinite, mass_noun
from tasks.meaning.names import (adjective_name, common_noun_name, may_name_people, name_carries, person_kind,
                                 placeholder_name, unreadable_name)
from tasks.meaning.profiles import ProfileBook
from tasks.qa.text_gates import repetition_problem
from tasks.qa.template_writer import (
    Hop, TemplateError, _capitalise, _describe, _fill, _slot_last, ask, node_nouns, on_dates, pick_form, possessive,
)

_THAT = "{the} {that} "


def relative(template: str) -> str | None:
    """A clause form as a relative predicate (module docstring), or None when it has none."""
    if template.startswith(_THAT):
        return "{that} " + template[len(_THAT):]
    if template.startswith("{the} whose "):
        return template[len("{the} "):]
    if template.startswith("the ") or template.startswith("a ") or template.startswith("an "):
        return "{that} is " + template
    return None


def _hop(profile: RelationProfile, subject_known: bool) -> Hop:
    if not profile.words or profile.forms is None:
        raise TemplateError(f"the relation {profile.label!r} has no surface forms")
    return Hop(profile, subject_known)


def constraint_hop(profile: RelationProfile, forward: bool) -> Hop:
    """The reading of a constraint: the constrained node is described through the value, so the value is the known
    end (the object when the node is the subject)."""
    return _hop(profile, not forward)


def can_pin_with(profile: RelationProfile, forward: bool) -> bool:
    """Whether a fact over ``profile`` (the pinned node its subject when ``forward``) can be said as a relative
    clause: what the program sampler asks before using it as a constraint."""
    if not profile.words or profile.forms is None:
        return False
    return bool(_rests(constraint_hop(profile, forward), slot_last=False))


def _rests(hop: Hop, *, slot_last: bool) -> list[str]:
    """The hop's clause forms as relative predicates (``slot_last``: only those that end in the known node). Where
    none serves, a reduced participle is said with the tense of the relation's statement ("{the} used by {s}" ->
    "{that} is used by {s}"; "{the} written by {s}" -> "{that} was written by {s}"), so a chain can go on through a
    description ("the ware that is used by the building that ...")."""
    out = [r for r in (relative(t) for t in hop.clauses()) if r is not None]
    out = [r for r in out if _slot_last(r, hop.slot)] if slot_last else out
    if not out:
        out = [r for r in (_tensed_participle(t, hop.profile) for t in hop.clauses())
               if r is not None and (not slot_last or _slot_last(r, hop.slot))]
    return out


_PARTICIPLE = re.compile(r"\{the\} (?P<verb>[a-z]+) (?P<rest>by \{[so]\})")


def _tensed_participle(template: str, profile: RelationProfile) -> str | None:
    """A reduced passive participle ("{the} used by {s}") as a relative predicate in the tense of the relation's
    statement ("{s} uses {o}": "is used by"; "{s} wrote {o}": "was written by"); None for any other form, or where
    the statement's verb says no tense."""
    m = _PARTICIPLE.fullmatch(template)
    if m is None or profile.forms is None:
        return None
    words = profile.forms.statement.split()
    verb = words[1] if len(words) >= 3 and words[0] in ("{s}", "{o}") else ""
    tense = _verb_tense(verb)
    if tense is None or m["verb"] not in getInflection(tense[0], "VBN"):
        return None
    return f"{{that}} {'was' if tense[1] == 'past' else 'is'} {m['verb']} {m['rest']}"


@dataclass(frozen=True)
class Rest:
    """A filled relative predicate: ``text``; ``open_end``: it ends in its own words, not in its known node;
    ``verb_first``: a verb follows the pronoun ("that borders France", not "that France borders"), so the pronoun
    can give way to a question word."""

    text: str
    open_end: bool
    verb_first: bool
    filler: str = ""  # the known node's words, when the clause ends in them ("France" of "that borders France")
    #: a clause said once for several fillers ("that is a region of both A and B"): the words before them, and them
    shared: str = ""
    fillers: tuple[str, ...] = ()

    @property
    def lead(self) -> str:
        """The clause before its filler ("that borders "), when it ends in it; else empty."""
        if self.open_end or not self.filler or not self.text.endswith(self.filler):
            return ""
        return self.text[:-len(self.filler)]

    @property
    def dangling(self) -> bool:
        """It ends in a stranded preposition ("that Germany is a member of"): "and" or a further clause after it
        would read as part of it. A clause that ends in its verb ("that the Rockefeller Foundation founded") may."""
        return self.open_end and self.text.rstrip("?").split()[-1].lower() in PREPOSITIONS


def _rest(template: str, known: str, slot: str, noun: str, person: bool = False, *, named: bool = True) -> Rest:
    """A filled relative predicate; ``named``: ``known`` is a name, not a description (``_fill``)."""
    verb_first = template.startswith("{that} ") and not template[len("{that} "):].startswith("{")
    return Rest(_fill(template, known, slot, noun, person, named=named), not _slot_last(template, slot), verb_first,
                known)


def _coordinated(rests: Sequence[Rest]) -> list[Rest]:
    """Clauses that say the same words before their fillers, said once: "that is a connecting line of X and that is
    a connecting line of the station ..." becomes "that is a connecting line of both X and the station ...", a
    name before a description."""
    out: list[Rest] = []
    for r in rests:
        prev = out[-1] if out else None
        held = _held_both(prev, r) if prev is not None else None
        if held is not None:  # "that has A as a home stadium and that has B as a home stadium"
            out[-1] = held
            continue
        # "whose target airport is both A and B" says one airport is two: a "whose" clause is not shared
        if prev is not None and prev.lead and prev.lead == r.lead and " both " not in prev.text and \
                not _has_and(prev.filler, r.filler) and \
                (not prev.lead.startswith("whose ") or prev.lead.endswith(" include ")):
            out[-1] = _shared(prev.lead, (prev.filler, r.filler), prev.verb_first)
            continue
        # a third filler of the same clause: "that is a region of each of A, B and C", not "... of both A and B and
        # that is a region of C"
        if prev is not None and prev.shared and prev.shared == r.lead and not _has_and(r.filler):
            out[-1] = _shared(prev.shared, (*prev.fillers, r.filler), prev.verb_first)
            continue
        out.append(r)
    return out


def _shared(lead: str, fillers: Sequence[str], verb_first: bool) -> Rest:
    """One clause said for several fillers, names before descriptions: "both A and B" for two, "each of A, B and C"
    for more."""
    ordered = tuple(sorted(fillers, key=lambda f: f.startswith("the ") and " that " in f))
    said = (f"both {ordered[0]} and {ordered[1]}" if len(ordered) == 2
            else f"each of {', '.join(ordered[:-1])} and {ordered[-1]}")
    return Rest(f"{lead}{said}", False, verb_first, shared=lead, fillers=ordered)


_AS_ONE = re.compile(r"^ as an? (?P<noun>[\w' -]+)$")


def _has_and(*fillers: str | None) -> bool:
    """Whether a filler says "and" or "both" itself, or lists with commas ("Command and Scripting Interpreter", "the
    technique that has both A and B as tactics", "bipolar disorder, current episode depressed, severe"): inside
    "both ... and" the reader could not tell where each part ends."""
    return any(f and re.search(r"\b(?:and|both)\b|[&,;]", f) for f in fillers)


def _held_both(a: Rest, b: Rest) -> Rest | None:
    """Two "that has X as a <noun>" clauses of one relation said once: "that has both A and B as home stadiums";
    None for any other pair."""
    parts = []
    for r in (a, b):
        if not r.filler or r.text.count(r.filler) != 1:
            return None
        parts.append(r.text.split(r.filler))
    (pre, post), (pre2, post2) = parts
    if _has_and(a.filler, b.filler):
        return None
    m = _AS_ONE.match(post)
    if pre != pre2 or post != post2 or not pre.endswith(" has ") or m is None:
        return None
    return Rest(f"{pre}both {a.filler} and {b.filler} as {_plural(m['noun'])}", False, a.verb_first)


def _constraint_options(profile: RelationProfile, forward: bool, several: bool = False,
                        nested: bool = False) -> list[tuple[str, str]]:
    """A constraint's relative predicates with the slot each fills: a symmetric relation reads the same from either
    end, so both of its clause lists serve ("that borders France" as well as "that France borders"). ``several``:
    the question gives the pinned node more than one object of this relation (``_one_of_many``)."""
    hop = constraint_hop(profile, forward)
    out = [(r, hop.slot) for r in _rests(hop, slot_last=False)]
    if profile.symmetric and profile.forms is not None:
        out += [(r, "{o}") for r in (relative(t) for t in profile.forms.subject_clause) if r is not None]
    return [(_one_of_many(r, slot, profile, several, nested and several), slot) for r, slot in out]


def _one_of_many(rest: str, slot: str, profile: RelationProfile, several: bool = False, nested: bool = False) -> str:
    """A "whose <noun> is {o}" clause describes the subject by its one object; where one subject has many of them
    (the airline "whose target airport is Yeager" has many), it says ``that has {o} as a <noun>``. Read from the
    subject, "that is the <noun> of {s}" says the subject has one; where it has many, "that is a <noun> of {s}"
    ("the airport that is a target airport of AirTran"). ``several``: the question itself gives the subject two
    objects of the relation (the team "whose home stadium is X and whose home stadium is Y"), whatever the world
    count says, so its clauses say ``that has {o} as a <noun>`` too. ``nested``: the known node is a description,
    which must end the clause ("whose seasons include the season that ...", not "who has the season that ... as a
    season")."""
    if profile.objects_per_subject != "many" and not (several and slot == "{o}"):
        return rest
    if slot == "{o}":
        return _including(rest) if nested else _as_one_of(rest)
    m = _THE_NOUN_OF.match(rest)
    if m is None:
        return rest
    noun = m["noun"]
    return f"{{that}} is {indefinite(noun)} of {{s}}"


_THE_NOUN_OF = re.compile(r"^\{that\} is the (?P<noun>[\w' -]+?) of \{s\}$")


_WHOSE = re.compile(r"^whose (?P<noun>[\w' -]+?) (?:is|was) \{o\}$")


def _including(rest: str) -> str:
    """``whose <noun> is {o}`` as ``whose <nouns> include {o}``; any other predicate as it is."""
    m = _WHOSE.match(rest)
    if m is None:
        return rest
    if mass_noun(m["noun"]):
        return f"whose {m['noun']} includes {{o}}"  # "whose required research includes X": no plural
    return f"whose {_plural(m['noun'])} include {{o}}"


def _plural(noun: str) -> str:
    """A noun phrase with its head in the plural: the last word ("home stadium" -> "home stadiums"), or the word
    before its "of" phrase ("route of administration" -> "routes of administration")."""
    if mass_noun(noun):
        return noun  # "as required research": a noun English does not count has no plural
    words = noun.split()
    at = words.index("of") - 1 if "of" in words[1:-1] else len(words) - 1
    forms = getInflection(words[at], "NNS")
    words[at] = forms[0] if forms else words[at] + "s"
    return " ".join(words)


def _as_one_of(rest: str) -> str:
    """``whose <noun> is {o}`` as ``that has {o} as a <noun>``; any other predicate as it is."""
    m = _WHOSE.match(rest)
    if m is None:
        return rest
    noun = m["noun"]
    return f"{{that}} has {{o}} as {indefinite(noun)}"


def _constraint_rests(cons: Sequence[ProgramConstraint], book: ProfileBook, noun: str,
                      name_of: Callable[[str], str], rng: random.Random, person: bool = False,
                      several: frozenset[str] = frozenset(), nested: bool = False) -> list[Rest]:
    """Each constraint as a filled relative predicate: one that ends in the value and puts its verb first if it
    has one. ``several``: labels the question gives the node more than one object of; ``nested``: the step's
    clause ends in a description, so such a label's pins take the form it takes ("whose leagues include AL")."""
    out: list[Rest] = []
    for c in cons:
        options = _constraint_options(book.profile(c.label), c.forward, c.forward and c.label in several, nested)
        if not options:
            raise TemplateError(f"the constraint over {c.label!r} cannot be said as a relative clause")
        rests = [_rest(t, name_of(c.value), slot, noun, person) for t, slot in options]
        best = min((r.open_end, not r.verb_first) for r in rests)
        out.append(pick_form([r for r in rests if (r.open_end, not r.verb_first) == best], rng))
    return out


def _pinned(known: str, hop: Hop, noun: str, cons: Sequence[ProgramConstraint], *, nested: bool, book: ProfileBook,
            name_of: Callable[[str], str], rng: random.Random, person: bool = False) -> list[Rest]:
    """The step's relative predicate and its constraints', filled."""
    options = [(t, hop.slot) for t in _rests(hop, slot_last=nested)]
    if hop.profile.symmetric and hop.profile.forms is not None:
        # a symmetric relation reads the same from either end: "that is associated with PAX1" as well as "that
        # PAX1 is associated with"
        options += [(r, "{o}") for r in (relative(t) for t in hop.profile.forms.subject_clause)
                    if r is not None and (not nested or _slot_last(r, "{o}"))]
    if not options:
        raise TemplateError(f"the step over {hop.profile.label!r} cannot be said as a relative clause"
                            + (" that ends in its known node" if nested else ""))
    # labels of which the question gives this node, as their subject, more than one object: the step's (read
    # into the node from its object) and the pins'
    held = Counter([hop.profile.label] * (hop.slot == "{o}") + [c.label for c in cons if c.forward])
    several = frozenset(label for label, n in held.items() if n > 1)
    options = [(_one_of_many(t, slot, hop.profile, hop.profile.label in several, nested), slot)
               for t, slot in options]
    closed = [o for o in options if _slot_last(*o)]
    pool = closed or options
    template, slot = pool[0] if len(pool) == 1 or rng.random() < 0.6 else rng.choice(pool[1:])
    step = _rest(template, known, slot, noun, person, named=not nested)
    pins = _constraint_rests(cons, book, noun, name_of, rng, person, several, nested)
    if nested:
        # The step's clause holds a description of its own ("whose currency is the currency of the country of
        # Vilnius"): a pin after it would read as the inner node's. The pins come first, the step's clause last.
        if any(r.dangling for r in pins):
            raise TemplateError("a pin that ends in a stranded preposition cannot come before a nested description")
        return _one_tense([*pins, step], person)
    rests = _one_tense([step, *pins], person)
    # At most one clause may end in a stranded preposition ("that Germany is a member of"), and only the last: "and"
    # after it would read as part of it.
    rests.sort(key=lambda r: r.dangling)
    if sum(r.dangling for r in rests) > 1:
        raise TemplateError("two clauses that end in stranded prepositions cannot be joined with 'and'")
    return rests


def _verb_tense(word: str) -> tuple[str, str] | None:
    """``(lemma, "past" | "present")`` of a finite verb in the simple past or the third person present that is not
    "be", "have" or "do" ("competed", "plays"); None for anything else, or a form that is both ("read")."""
    for lemma in getAllLemmas(word).get("VERB", ()):
        if lemma in ("be", "have", "do"):
            return None
        forms = getAllInflections(lemma, upos="VERB")
        present = word in forms.get("VBZ", ())
        past = word in forms.get("VBD", ()) and word not in forms.get("VB", ()) + forms.get("VBP", ())
        if present != past:
            return lemma, "past" if past else "present"
    return None


def _clause_tense(r: Rest) -> tuple[str, str] | None:
    """``_verb_tense`` of a "who" clause whose verb follows the pronoun ("who competed in X"; "was" and "were" count
    as past: "who was born in Y"); None where a name follows it ("who Spurs signed")."""
    words = r.text.split()
    if not r.verb_first or len(words) < 2 or words[0] != "who" or not words[1].islower():
        return None
    return ("be", "past") if words[1] in ("was", "were") else _verb_tense(words[1])


def _one_tense(rests: list[Rest], person: bool) -> list[Rest]:
    """A person's clauses in one tense: beside a past one ("who competed in the 1928 painting contest"), what the
    person does is said in the past too ("who played for the Netherlands", not "who plays for"), which holds
    whether or not it still goes on, and a present one beside a past one reads as false for the long dead. "is" and
    "has" clauses keep their tense."""
    if not person or len(rests) < 2:
        return rests
    verbs = [_clause_tense(r) for r in rests]
    if not any(v is not None and v[1] == "past" for v in verbs):
        return rests
    out = []
    for r, v in zip(rests, verbs):
        if v is not None and v[1] == "present" and v[0] != "be":
            said = getInflection(v[0], "VBD")
            if said:
                r = replace(r, text="who " + said[0] + r.text[len("who ") + len(r.text.split()[1]):])
        out.append(r)
    return out


def person_nodes(program: QueryProgram, hops: Sequence[Hop], nouns: Sequence[str], book: ProfileBook) -> list[bool]:
    """Whether each node of ``program`` is a person, so that it is asked for with "Who" and described with "who":
    its kind noun names people (``person_kind``: "baker", "author"), or a relation at it says that end is a person
    in the world (the profile's subject or object noun: whoever has a hometown or an occupation) and its kind can
    name people (``may_name_people``: not a weakness that is a "child of" another)."""
    out = [person_kind(n) for n in nouns]
    may = [may_name_people(n) for n in nouns]
    for i, hop in enumerate(hops):  # hop i reads from node i to node i + 1
        p = hop.profile
        known, found = (p.subject_noun, p.object_noun) if hop.slot == "{s}" else (p.object_noun, p.subject_noun)
        out[i] = out[i] or (known == "person" and may[i])
        out[i + 1] = out[i + 1] or (found == "person" and may[i + 1])
    for c in program.constraints:
        p = book.profile(c.label)
        out[c.node] = out[c.node] or ((p.subject_noun if c.forward else p.object_noun) == "person" and may[c.node])
    return out


def _tells(name: str, others: Sequence[str]) -> str | None:
    """The name among ``others`` that ``name`` carries (``name_carries``), or None: a name that carries the node the
    question asks for gives it away."""
    return next((other for other in others if name_carries(name, other)), None)


def scoped(question: str, scope: str) -> str:
    """``question`` opened with what the graph covers: "In the Tate collection, which artwork ...?". A scope that
    lists three things or more with commas alone ("among brands, the places they trade in, what they sell") joins
    its last with "and", or the list runs on into the question."""
    q = question.strip()
    parts = scope.strip().split(", ")
    if len(parts) >= 3 and not re.search(r"\b(?:and|or|nor)\b", parts[-1]):
        scope = ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{scope[:1].upper()}{scope[1:]}, {q[:1].lower()}{q[1:]}"


def write_program_question(program: QueryProgram, types: Sequence[str | None], *, book: ProfileBook,
                           name_of: Callable[[str], str], seed: int = 0) -> str:
    """The question for ``program`` (module docstring). ``types[i]`` is the type noun of ``program.nodes[i]``;
    ``name_of(node)`` how a name is written in the question (display form, "the" where it takes one).
    ``TemplateError`` when some part cannot be said.

    A chain that climbs one relation through levels of different kinds ("parent taxon" from a virus to its species,
    genus and family) says the relation's words once, at the run's last step, and each level before it by its kind
    ("Which order is the parent taxon of the family of the genus of the species of X?", not "the parent taxon of the
    parent taxon of the parent taxon of X's parent taxon": ``hierarchy_levels``).

    Long because each refusal is tied to the step of the wording it guards (nouns, people, the chain's
    descriptions, the pins' clauses, the ask), and every step reads what the one before decided; the clauses
    themselves are built by helpers."""
    nodes = program.nodes
    if len(nodes) != program.hops + 1:
        raise TemplateError("a program needs its executed chain (nodes) to be written")
    hops = [_hop(book.profile(s.label), s.forward) for s in program.steps]
    nouns = node_nouns(hops, types)
    levels = hierarchy_levels(program, nouns)
    if sum(n == "entity" for n in nouns[1:]) > 1:
        raise TemplateError("the question would call more than one node 'the entity': the graph gives no type for "
                            + ", ".join(repr(p) for p, n in zip(nodes[1:], nouns[1:]) if n == "entity"))
    described = [n for n, noun in zip(nodes[1:-1], nouns[1:-1]) if noun == "entity"]
    if described:
        raise TemplateError(f"the node {described[0]!r} has no kind a reader knows (the graph gives none, or a table "
                            "name or an adjective as its type): 'the entity that ...' names no kind of thing")
    people = person_nodes(program, hops, nouns, book)
    shown = name_of(nodes[0])
    bare = shown[4:] if shown.startswith("the ") else shown
    if common_noun_name(bare):
        raise TemplateError(f"the start's name {bare!r} is a common noun: in the world it names many things, so a "
                            "question that names it alone has no single answer")
    if adjective_name(bare):
        raise TemplateError(f"the start's name {bare!r} is an adjective: it names a state, not a thing")
    for named in [nodes[0], *(c.value for c in program.constraints)]:
        told = _tells(name_of(named), [name_of(n) for n in nodes[1:] if n != named])
        if told is not None:
            raise TemplateError(f"the name {name_of(named)!r} says {told!r}, a node the question asks the reader to "
                                "find")
    for node in nodes[1:]:
        if placeholder_name(node):
            raise TemplateError(f"the node {node!r} is a table's placeholder for a missing or unnamed value: a "
                                "question through it asks about no thing")
    for n in [bare, *(name_of(c.value).removeprefix("the ") for c in program.constraints)]:
        why = unreadable_name(n)
        if why is not None:
            raise TemplateError(f"a name the question would show: {why}")
    for c in program.constraints:
        if common_noun_name(name_of(c.value).removeprefix("the ")):
            raise TemplateError(f"the constraint's value {c.value!r} is a common noun: it names many things")
        if adjective_name(name_of(c.value).removeprefix("the ")):
            raise TemplateError(f"the constraint's value {c.value!r} is an adjective: it names a state, not a thing "
                                "('has Retired as an occupation')")
    rng = random.Random(content_digest("program-question", str(seed), program.model_dump_json()))
    subject = shown
    nested = open_end = False
    inner: tuple[str, list[Rest]] | None = None  # the last pinned node's noun and clauses, once it is described

    def attach_check(noun: str) -> None:
        # "the film whose director is X and whose date is the date of the film whose language is Y and whose
        # country is Z": the last "and whose" reads as the outer film's as well as the inner one's. Two pinned
        # nodes are joined only where the inner clauses cannot attach to the outer noun: other kinds, and the
        # inner clauses after the first opened by "who" or "that" of the inner noun's own kind, not "whose".
        if inner is not None and (inner[0] == noun or any(r.text.startswith("whose") for r in inner[1][1:])):
            raise TemplateError(f"the clauses of the pinned {inner[0]} nested in the pinned {noun}'s would read as "
                                "either's")

    for i, hop in enumerate(hops[:-1], start=1):
        cons = program.constraints_on(i)
        if cons:
            attach_check(nouns[i])
            rests = _coordinated(_pinned(subject, hop, nouns[i], cons, nested=nested, book=book, name_of=name_of,
                                         rng=rng, person=people[i]))
            subject = f"the {nouns[i]} " + " and ".join(r.text for r in rests)
            open_end = rests[-1].open_end
            inner = (nouns[i], rests)
        elif i in levels and not people[i]:
            subject = f"the {nouns[i]} of {subject}"  # "the genus of the species of X" (hierarchy_levels)
        else:
            # after the first hop a description is put last in the next one ("the province containing the cercle
            # that Daoura is located in"), which then ends in the same words
            if open_end and not nested:
                raise TemplateError("a description that ends in its own words would be followed by more words")
            subject, opens = _describe(subject, hop, nouns[i], nested=nested, rng=rng, person=people[i])
            open_end = open_end or opens
        nested = True
    last = hops[-1]
    k = program.hops
    cons = program.constraints_on(k)
    noun = nouns[-1]
    if cons:
        if noun == "entity":
            raise TemplateError("the answer has no type noun: 'the entity that ...' with a pin leaves every kind of "
                                "thing that fits open")
        attach_check(noun)
        rests = _coordinated(_pinned(subject, last, noun, cons, nested=nested, book=book, name_of=name_of, rng=rng,
                                     person=people[-1]))
        pronoun = "who" if people[-1] else "that"
        if all(r.verb_first for r in rests):
            wh = "Who" if noun == "person" else ("What" if noun == "entity" else f"Which {noun}")
            question = f"{wh} " + " and ".join(r.text[len(pronoun) + 1:] for r in rests) + "?"
        else:
            # a person is asked for with "Who": "Who is the baker whose hometown is Leeds ...?", not "What is ..."
            opener = f"Who is the {noun}" if people[-1] else f"What is the {noun}"
            question = f"{opener} " + " and ".join(r.text for r in rests) + "?"
        return _said_once(on_dates(_capitalise(" ".join(question.split()))), nouns, shown)
    return _said_once(ask(subject, last, noun, nested=nested, open_end=open_end, rng=rng, person=people[-1]), nouns,
                      shown)


def hierarchy_levels(program: QueryProgram, nouns: Sequence[str]) -> frozenset[int]:
    """The chain nodes that can be said by their kind alone ("the genus of X"): a node reached over a relation that
    the next step follows again the same way, with no pin of its own, where every node of that run of steps has a
    kind of its own (a virus, its species, genus, family: the kind tells the levels apart; "the account of the
    account of X" would not). The run's last step, and a pinned node's, keep the relation's words."""
    steps = program.steps
    out: set[int] = set()
    first = 0  # the run's first step: steps first .. j-1 follow one label one way
    while first < len(steps):
        j = first + 1
        while (j < len(steps) and steps[j].label == steps[first].label and steps[j].forward == steps[first].forward
               and not steps[j].symmetric):
            j += 1
        run = nouns[first:j + 1]
        if "entity" not in run and len(set(run)) == len(run):
            out.update(n for n in range(first + 1, j) if not program.constraints_on(n))
        first = j
    return frozenset(out)


def _said_once(question: str, nouns: Sequence[str], start: str) -> str:
    """``question`` with each kind said in full once (``kind_said_once``), a mentioned name's kind once
    (``named_once``) and a relation said twice over told the second time through the start's name
    (``start_possessive``)."""
    return start_possessive(named_once(kind_said_once(question, nouns)), start)


#: Words that end a noun phrase's run of words: a clause, a copula, an article or a conjunction starts after it.
_CLAUSE_WORDS = r"(?:the|a|an|of|that|who|whose|which|is|was|are|were|has|had|and|or|in|on|at|by|to|for|with|from)"


def start_possessive(question: str, start: str) -> str:
    """``question`` with "the <noun> of <start>" said "<start>'s <noun>" where the relation's words come twice
    ("What is the monster type of the monster whose companion type is the monster type of the giant tarantula?" ->
    "... is the giant tarantula's monster type?"): a chain through one relation twice, which the repetition gate
    refuses as written. Only the start's own phrase changes (a name, never a description, nor a name with a comma or
    brackets), only where the question then no longer repeats itself, and the question is unchanged otherwise."""
    if repetition_problem(question) is None or re.search(r"[,()]", start):
        # "Ungoliant, the Unlight's": a name with an apposition or a tag cannot take the possessive's ending
        return question
    phrase = re.compile(rf"\b([Tt]he) ((?:(?!{_CLAUSE_WORDS}\b)[a-z][a-z'-]* ){{1,4}})of {re.escape(start)}(?![\w'’])")
    found = list(phrase.finditer(question))
    if len(found) != 1 or found[0][2].startswith(("one ", "same ")):
        return question
    m = found[0]
    owner = start[:1].upper() + start[1:] if m.start() == 0 else start
    said = f"{question[: m.start()]}{possessive(owner)} {m[2].strip()}{question[m.end():]}"
    return said if repetition_problem(said) is None else question


#: A name mentioned with its kind, then the same kind again: 'has the keyword "Imperium" as a keyword'.
_NAMED_TWICE = re.compile(r'\bthe ([a-z][\w -]*?) ("[^"]+") as (?:an?|its) \1(?=\s*(?:[?,.;]|and\b|or\b|$))')


def named_once(question: str) -> str:
    """``question`` with a name mentioned with its kind said once: 'which faction has the keyword "Imperium"', not
    'has the keyword "Imperium" as a keyword' (the label's noun and the mentioned kind are the same word)."""
    return _NAMED_TWICE.sub(r"the \1 \2", question)


#: Heads too vague to name a kind alone ("the type that replaced ...").
_VAGUE_HEADS = frozenset("type kind class sort form category item thing entity object group part unit value".split())


def kind_said_once(question: str, nouns: Sequence[str]) -> str:
    """``question`` with a kind of two words or more said in full once and by its head after that: "Which mass
    spectrometry term is a subclass of both the term "matrix application type" and the term that is part of ...?",
    not the full kind four times over. Only where no other kind of the question ends in the same head, the head is
    no vague word ("type", "class") and the kind is not inside a quoted name."""
    kinds = {n for n in nouns if n and n != "entity"}
    heads = Counter(n.split()[-1].lower() for n in kinds)
    for noun in sorted(kinds, key=len, reverse=True):
        words = noun.split()
        head = words[-1]
        if len(words) < 2 or heads[head.lower()] > 1 or head.lower() in _VAGUE_HEADS:
            continue
        parts = question.split('"')  # the even parts lie outside quotes
        seen = False
        for i in range(0, len(parts), 2):
            def shorten(m: re.Match[str]) -> str:
                nonlocal seen
                if not seen:
                    seen = True
                    return m[0]
                return f"{m[1]} {head}"
            # "the card set of X", "whose card set is" say the label's noun, not the kind: left as they are
            parts[i] = re.sub(rf"\b([Tt]he|an?|[Ww]hich|[Ww]hat) {re.escape(noun)}\b(?! of\b)", shorten, parts[i])
        question = '"'.join(parts)
    return question


__all__ = ["can_pin_with", "constraint_hop", "hierarchy_levels", "named_once", "person_nodes", "relative", "scoped",
           "start_possessive", "write_program_question"]
