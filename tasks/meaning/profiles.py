"""Relation profiles for a graph: every distinct relation label resolved from its sources, in order.

1. the user's file (``hopforge graph profiles import``): every field it gives wins;
2. the shipped lexicon and the label's morphology (``tasks.meaning.morphology.profile_from_label``);
3. graph statistics, for a count the lexicon leaves unknown (``LabelStats``);
4. the ``profiler`` role (one cached LLM call per label nothing above profiled), for what is still missing.

A hop can be put into words only over a relation whose profile has words, surface forms, and a count of one in the
direction the hop reads (``hop_refusal`` says why not, naming the label). LightRAG relations carry keywords and a
description instead of a label: they are grouped under the verb phrase their description puts between the two
names ("Alan Turing studied mathematics at King's College" -> "studied mathematics at"), else under their
normalised keywords, and that key is profiled like a label (keywords name a topic, not how two things relate, so
they get no surface forms unless the user or the profiler gives some).

Graph statistics only ever settle a count that nothing else knows, and only on enough evidence: a label is "many"
in a direction when at least ``MANY_MIN`` of its subjects (objects) have several objects (subjects) in the graph,
and "one" when at least ``ONE_MIN`` subjects all have exactly one. A graph holds a sample of the world, so one
subject with two objects proves "many" while a thousand with one only suggest "one".
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import astuple, dataclass, field, replace
from functools import lru_cache
from typing import Any, Protocol

from schemas.meaning import Count, Evidence, RelationProfile, is_type_noun, relation_key

#: Subjects (objects) with several objects (subjects) that prove "many" in that direction.
MANY_MIN = 2
#: Subjects (objects) that must all have exactly one object (subject) for the graph to say "one".
ONE_MIN = 20


class EdgeLike(Protocol):
    relation: str
    keywords: Any
    description: str


# -- keys ------------------------------------------------------------------------------------------------------------

_AUX_START = re.compile(r"^(?:has|have|had)\s+been\s+")
_ARTICLES = ("the", "a", "an")


def description_phrase(description: str, a: str, b: str) -> tuple[str, bool] | None:
    """The words between the names ``a`` and ``b`` in ``description`` ("studied mathematics at"), and whether ``a``
    comes first; ``None`` when the description does not name both, or what lies between is not a short run of
    lower-case words (a clause, a list, another name)."""
    low = description.lower()
    ia, ib = low.find(a.lower()), low.find(b.lower())
    if ia < 0 or ib < 0 or not a or not b:
        return None
    first = a if ia < ib else b
    start = min(ia, ib) + len(first)
    between = description[start:max(ia, ib)].strip()
    between = _AUX_START.sub("was ", between)
    ws = between.split()
    while ws and ws[-1].lower() in _ARTICLES:
        ws.pop()
    between = " ".join(ws)
    if not between or re.search(r"[,.;:()\"]", between):
        return None
    if not 1 <= len(ws) <= 6 or any(w[:1].isupper() for w in ws):
        return None
    return between, ia < ib


def keywords_key(keywords: Iterable[str]) -> str:
    """The key of a relation known only by keywords: its keywords folded, de-duplicated, sorted."""
    words = sorted({relation_key(k) for k in keywords if k.strip()})
    return "keywords: " + ", ".join(words) if words else ""


def edge_label(edge: EdgeLike, source: str, target: str) -> tuple[str, str]:
    """The text a relation is profiled under, and which of its stored ends (``source``, ``target``) the text reads
    from: the source for a label, whichever end a LightRAG description names first for a description's verb
    phrase. The text is empty when the relation has no label, no keywords and no usable description."""
    if edge.relation.strip():
        return edge.relation, source
    if edge.description and source and target:
        found = description_phrase(edge.description, source, target)
        if found is not None:
            return found[0], (source if found[1] else target)
    return keywords_key(edge.keywords or ()), source


# -- graph statistics -----------------------------------------------------------------------------------------------


@dataclass
class LabelStats:
    """How one label is used in a graph (or several): subjects and how many of them have several objects, and
    the same the other way; ``snapshots`` counts the graphs measured."""

    subjects: int = 0
    subjects_several: int = 0
    objects: int = 0
    objects_several: int = 0
    pairs: int = 0
    snapshots: int = 0

    def merged(self, other: LabelStats) -> LabelStats:
        return LabelStats(*(a + b for a, b in zip(astuple(self), astuple(other))))


def label_stats(relations: Iterable[Any]) -> dict[str, LabelStats]:
    """``LabelStats`` per relation key of one graph's relations (records with ``source``, ``target``,
    ``relation``, ``keywords`` and ``description``)."""
    objs: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    subs: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for r in relations:
        text, s = edge_label(r, r.source, r.target)
        if not text:
            continue
        o = r.target if s == r.source else r.source
        key = relation_key(text)
        objs[key][s].add(o)
        subs[key][o].add(s)
    out: dict[str, LabelStats] = {}
    for key in objs:
        per_s, per_o = objs[key], subs[key]
        out[key] = LabelStats(
            subjects=len(per_s), subjects_several=sum(len(v) > 1 for v in per_s.values()),
            objects=len(per_o), objects_several=sum(len(v) > 1 for v in per_o.values()),
            pairs=sum(len(v) for v in per_s.values()), snapshots=1,
        )  # fmt: skip
    return out


@dataclass(frozen=True)
class LabelValues:
    """What one label's objects are in a graph: ``kind``, the type noun nearly all of them share (None where they
    share none), ``years``, whether every object is a bare year ("1934"), and ``quantities``, whether every object
    is a number and not all are years (a count, a price, a measurement: "13" deaths, "2.5" million)."""

    kind: str | None = None
    years: bool = False
    quantities: bool = False
    subject_kind: str | None = None  # the type noun nearly all of the label's subjects share, as ``kind``
    #: Nearly all of the label's objects are things of their own, not a column's values: each states facts (a
    #: labelled relation out of it) or is of a kind other than the label's own words and no code ("parent_code"
    #: whose objects are districts and provinces; not "iso_code" whose objects are of the type "iso code")
    rows: bool = False


#: Objects of a label looked at for ``LabelValues`` (a label's objects are a table's column: a sample tells).
_VALUES_SAMPLE = 200
#: Share of a label's objects that must have one type noun for it to be the objects' kind.
_KIND_SHARE = 0.9


def label_values(kg: Any) -> dict[str, LabelValues]:
    """``LabelValues`` per relation key of ``kg`` (a ``KnowledgeGraph``), from up to ``_VALUES_SAMPLE`` objects of
    each label, in the graph's order."""
    from tasks.meaning.names import NUMBER, YEAR, node_type_noun, states_facts

    objects: dict[str, dict[str, None]] = defaultdict(dict)
    subjects: dict[str, dict[str, None]] = defaultdict(dict)
    for r in kg.sorted_views():
        text, s = edge_label(r, r.source, r.target)
        if not text:
            continue
        key = relation_key(text)
        seen, by = objects[key], subjects[key]
        if len(seen) < _VALUES_SAMPLE:
            seen[r.target if s == r.source else r.source] = None
        if len(by) < _VALUES_SAMPLE:
            by[s] = None
    nouns: dict[str, str] = {}

    def shared_kind(names: Mapping[str, None]) -> str | None:
        kinds: dict[str, int] = defaultdict(int)
        for o in names:
            if o not in nouns:
                nouns[o] = node_type_noun(kg, o)
            kinds[nouns[o]] += 1
        noun, n = max(kinds.items(), key=lambda kv: (kv[1], kv[0]))
        return noun if noun != "entity" and n >= _KIND_SHARE * len(names) else None

    stating: dict[str, bool] = {}

    def own_thing(o: str, key: str) -> bool:
        noun = nouns[o]  # worked out by ``shared_kind`` for every object
        if noun != "entity" and relation_key(noun) != key and noun.split()[-1].lower() not in _CODE_WORDS | _KEY_WORDS:
            return True
        hit = stating.get(o)
        if hit is None:
            hit = stating[o] = states_facts(kg, o, besides_type=True)
        return hit

    out: dict[str, LabelValues] = {}
    for key, objs in objects.items():
        years = all(YEAR.fullmatch(o.strip()) for o in objs)
        out[key] = LabelValues(kind=shared_kind(objs), years=years,
                               quantities=not years and all(NUMBER.fullmatch(o.strip()) for o in objs),
                               subject_kind=shared_kind(subjects[key]),
                               rows=sum(own_thing(o, key) for o in objs) >= _KIND_SHARE * len(objs))
    return out


def merge_stats(parts: Iterable[Mapping[str, LabelStats]]) -> dict[str, LabelStats]:
    """Statistics of several snapshots added up per label."""
    out: dict[str, LabelStats] = {}
    for part in parts:
        for key, st in part.items():
            out[key] = out[key].merged(st) if key in out else replace(st)
    return out


def count_from_stats(n: int, several: int) -> tuple[Count, str] | None:
    """The count a direction's statistics support (module docstring), with the evidence sentence, or None."""
    if several >= MANY_MIN:
        return "many", f"{several} of {n} have several in the graph"
    if n >= ONE_MIN and several == 0:
        return "one", f"all {n} have exactly one in the graph"
    return None


# -- resolution -----------------------------------------------------------------------------------------------------


@lru_cache(maxsize=65536)
def derived_profile(label: str, words_alone: bool = False) -> RelationProfile:
    """What the shipped lexicon and the label's morphology say (no user file, no statistics); ``words_alone``: the
    label's words without the lexicon's entry for the whole label."""
    from tasks.meaning.morphology import profile_from_label

    return profile_from_label(label, words_alone=words_alone)


def _clashes(noun: str | None, kind: str | None) -> bool:
    """Whether a lexicon entry's end ``noun`` ("place", "person") cannot be the graph's ``kind`` of that end: a place
    is no idea, device, person or state ("web feature" is no place); a person is no idea, device or state."""
    from tasks.meaning.names import abstract_kind, device_kind, person_kind, state_kind

    if not kind or noun not in ("place", "person"):
        return False
    other = abstract_kind(kind) or device_kind(kind) or state_kind(kind)
    return other or (noun == "place" and person_kind(kind))


def _other_vocabulary(base: RelationProfile, label: str, values: LabelValues) -> RelationProfile:
    """``base``, or the label's own words where the lexicon's entry for it belongs to another vocabulary: the entry
    says what its ends are, and the graph's kinds at those ends cannot be that (GeoNames' ``parentFeature`` reads
    "is located in" between places; a browser table's ``parentFeature`` joins web features)."""
    if base.evidence.get("forms") is None or base.evidence["forms"].source != "lexicon":
        return base
    ends = [(noun, kind) for noun, kind in ((base.subject_noun, values.subject_kind), (base.object_noun, values.kind))
            if noun in ("place", "person") and kind]
    # every end the entry names must clash (a person born on a ship is still born in a place), and the label's
    # own words must read ("located in the administrative territorial entity" alone has none)
    if not ends or not all(_clashes(noun, kind) for noun, kind in ends):
        return base
    own = derived_profile(label, True)
    if own.forms is None:
        return base
    said = ", ".join(f"{noun} as {kind!r}" for noun, kind in ends)
    return own.model_copy(update={"key": base.key, "evidence": {**own.evidence, "forms": Evidence(
        source="graph", detail=f"the lexicon's entry reads its ends as places or people, the graph's kinds cannot be "
        f"({said}): read by its own words ({own.evidence['forms'].detail if 'forms' in own.evidence else ''})")}})


_USER_FIELDS = ("words", "forms", "objects_per_subject", "subjects_per_object", "symmetric", "subject_noun",
                "object_noun")


def _apply(base: RelationProfile, fields: Mapping[str, Any], evidence: Mapping[str, Evidence]) -> RelationProfile:
    data = base.model_dump()
    data.update(fields)
    ev = dict(base.evidence)
    ev.update(evidence)
    data["evidence"] = {k: (v.model_dump() if isinstance(v, Evidence) else v) for k, v in ev.items()}
    if data.get("words") is False:
        data["forms"] = None
    return RelationProfile.model_validate(data)


def _fill_from_profiler(base: RelationProfile, llm: RelationProfile, *, symmetric_is_users: bool) -> RelationProfile:
    """``base`` with what only the profiler's answer knows: surface forms where it has none, counts it left
    unknown, and symmetry where that keeps one count for both directions. Nothing another source set changes."""
    counts = ("objects_per_subject", "subjects_per_object")
    fill: dict[str, Any] = {}
    if base.forms is None and llm.forms is not None:
        fill["forms"] = llm.forms.model_dump()
    given = {n: getattr(llm, n) for n in counts if getattr(base, n) == "unknown" and getattr(llm, n) != "unknown"}
    after = {n: given.get(n, getattr(base, n)) for n in counts}
    symmetric = base.symmetric or (llm.symmetric and not symmetric_is_users)
    if not symmetric or after["objects_per_subject"] == after["subjects_per_object"]:
        fill.update(given)
        if symmetric and not base.symmetric:
            fill["symmetric"] = True
    if not fill:
        return base
    said = {f: llm.evidence[f].detail if f in llm.evidence else "" for f in fill}
    return _apply(base, fill, {f: Evidence(source="profiler", detail=said[f]) for f in fill})


@dataclass
class ProfileBook:
    """Profiles for the labels of a graph (or several), resolved on first use and kept.

    ``user`` holds the user's entries (field name -> value, only the fields the user gave); ``profiled`` the
    profiler role's answers (whole profiles); ``stats`` the graph statistics per key."""

    user: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    profiled: Mapping[str, RelationProfile] = field(default_factory=dict)
    stats: Mapping[str, LabelStats] = field(default_factory=dict)
    values: Mapping[str, LabelValues] = field(default_factory=dict)
    _cache: dict[str, RelationProfile] = field(default_factory=dict, repr=False)

    def profile(self, label: str) -> RelationProfile:
        key = relation_key(label)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self._resolve(label, key)
        return hit

    def _resolve(self, label: str, key: str) -> RelationProfile:
        if key.startswith("keywords: "):
            base = RelationProfile(key=key, label=label, words=True, evidence={
                "forms": Evidence(source="morphology", detail="keywords name a topic, not how the two ends relate"),
                "objects_per_subject": Evidence(source="none"), "subjects_per_object": Evidence(source="none"),
            })  # fmt: skip
        else:
            base = derived_profile(label)
            if base.key != key:
                base = base.model_copy(update={"key": key})
        given = self.user.get(key)
        if given:
            base = _apply(base, given, {f: Evidence(source="user", detail="the user's profiles file")
                                        for f in given if f in _USER_FIELDS})
        values = self.values.get(key)
        if not base.words:
            if values is None or given:
                return base
            base = _kind_word(base, values)
            if not base.words:
                base = _reread(base, values)  # "added in unicode version": the words before its objects' kind
                if not base.words:
                    return base
        if values is not None and not given:
            base = _reread(_other_vocabulary(base, label, values), values)
        updates: dict[str, Any] = {}
        evidence: dict[str, Evidence] = {}
        st = self.stats.get(key)
        if st is not None:
            for name, n, several in (("objects_per_subject", st.subjects, st.subjects_several),
                                     ("subjects_per_object", st.objects, st.objects_several)):
                if getattr(base, name) == "unknown":
                    found = count_from_stats(n, several)
                    if found is not None:
                        updates[name] = found[0]
                        evidence[name] = Evidence(source="graph", detail=f"{found[1]} ({st.snapshots} snapshot(s))")
        if base.symmetric and updates:
            # a symmetric relation has one count: "many" either way wins
            c = "many" if "many" in updates.values() else next(iter(updates.values()))
            for name in ("objects_per_subject", "subjects_per_object"):
                updates[name] = c
                evidence.setdefault(name, Evidence(source="graph", detail="symmetric relation"))
        if updates:
            base = _apply(base, updates, evidence)
        if st is not None and values is not None and not given:
            base = _classifying(base, values, st)
        llm = self.profiled.get(key)
        if llm is not None:
            base = _fill_from_profiler(base, llm, symmetric_is_users="symmetric" in self.user.get(key, {}))
        return base

    def for_edge(self, edge: EdgeLike, source: str, target: str) -> tuple[RelationProfile, str] | None:
        """The profile of a relation with stored ends ``source`` and ``target``, and the end its label reads from
        (the profile's subject); None for a relation with no label, keywords or usable description."""
        text, subject = edge_label(edge, source, target)
        if not text:
            return None
        return self.profile(text), subject

    def labels(self) -> list[str]:
        return sorted(self._cache)


def _kind_word(base: RelationProfile, values: LabelValues) -> RelationProfile:
    """A label that is no English word but is the kind the graph gives its objects ("shabad" whose objects are
    shabads, "raag" whose objects are raags) is a word of the domain the graph itself defines: a bare noun, "a shabad
    of X" (one or several as the graph's counts say), not a label that cannot be put into words. A code ("P31") or a
    label of several words stays as it is; so does a label whose objects share no kind."""
    from tasks.meaning.morphology import bare_noun_forms, label_words

    words = [w.lower() for w in label_words(base.label)]
    if (len(words) != 1 or not values.kind or values.kind.lower() != words[0] or not words[0].isalpha()
            or len(words[0]) < 3 or not is_type_noun(values.kind)):
        return base
    why = (f"the label is the kind the graph gives its objects ({values.kind!r}): a word of the graph's own, read as "
           f"a bare noun")
    return _apply(base, {"words": True, "forms": bare_noun_forms(words[0], "a").model_dump()}, {
        "words": Evidence(source="graph", detail=why), "forms": Evidence(source="graph", detail=f"bare noun "
                                                                             f"{words[0]!r}: {why}")})


def _reread(base: RelationProfile, values: LabelValues) -> RelationProfile:
    """``base`` read again with what the graph's objects show, where its words alone misled:

    - a label that ends in its objects' kind after a relational phrase ("member_of_party" whose objects are
      parties, "capital of country" whose objects are countries) reads as that phrase with the kind as the object's
      noun ("a member of {o}"), not as one compound noun ("the member of party of X"), nor as nothing where its
      words alone have no reading ("added in unicode version": "was added in {o}"); so does one that ends in
      the head of a kind with an of-phrase of its own ("unit_of_system" whose objects are systems of units: "a unit
      of {o}", not "the unit of system of X");
    - a label that says "date" where every object is a bare year ("date of birth" -> 1934) says "year": "whose
      date of birth is the date of birth of X" would claim one day, the graph knows the year."""
    from tasks.meaning.morphology import TIME_NOUNS, label_words

    out = base
    words = label_words(base.label)
    low = [w.lower() for w in words]
    kind = (values.kind or "").split()
    # the kind's last words the label ends in ("party" of "political party"), then a preposition before them
    # (never only the complement of the kind's own of-phrase: "state of use" is no "state of" whose object is a use)
    tail = next((n for n in range(len(kind), 0, -1) if len(low) > n + 1 and low[-n:] == kind[-n:]
                 and not (len(kind) > n and kind[-n - 1] in _RELATIONAL_ENDS)), 0)
    ends = "its objects' kind"
    if not tail:
        ends = "the head of its objects' kind"
        # or the head of a kind with an of-phrase of its own: "unit_of_system" whose objects are systems of units is
        # "a unit of {o}", not one compound noun ("the unit of system of X")
        head = _of_head(kind)
        tail = next((n for n in range(len(head), 0, -1) if len(low) > n + 1 and low[-n:] == head[-n:]), 0)
    # unread alone ("added in unicode version" of Unicode versions), the phrase before its objects' kind reads
    unread = base.forms is None and "forms" in base.evidence and base.evidence["forms"].source != "lexicon"
    if tail and low[-tail - 1] in _RELATIONAL_ENDS and (unread or "bare noun" in (
            base.evidence["forms"].detail if "forms" in base.evidence else "")):
        phrase = derived_profile(" ".join(words[:-tail]))
        if phrase.forms is not None:
            out = _read_as(out, phrase, values.kind, f"the label ends in {ends} {values.kind!r}: read as "
                                                     f"{' '.join(words[:-tail])!r}")
            if not out.words:
                out = _apply(out, {"words": True}, {"words": Evidence(source="graph", detail=(
                    f"English words before its objects' kind {values.kind!r}: {' '.join(words[:-tail])!r}"))})
            for name in ("objects_per_subject", "subjects_per_object"):
                if getattr(out, name) == "unknown" and getattr(phrase, name) != "unknown":
                    out = _apply(out, {name: getattr(phrase, name)}, {name: phrase.evidence[name]})
    elif (len(low) == len(kind) + 1 and kind and low[1:] == kind and low[0].isalpha() and low[0] not in _EVENT_NOUNS
          and kind[-1] not in TIME_NOUNS
          and "bare noun" in (base.evidence["forms"].detail if "forms" in base.evidence else "")):
        out = _noun_before_kind(out, values, words)
    elif kind and low == kind and _noun_not_verb(base):
        # "round" whose objects are rounds, "stage" whose objects are stages, "attack" whose objects are attacks: a
        # label that is its objects' own kind names them, a noun ("the round of X", "has slam as an attack"), not a
        # verb ("X rounds Y", "the unit that attacks slam")
        phrase = derived_profile("has " + " ".join(words))
        if phrase.forms is not None and "perfect" in phrase.evidence["forms"].detail:
            # "has set", "has cut" read as a perfect ("the card that has set Eevee Grove"): the noun said as one
            phrase = _the_noun(phrase, low)
        if phrase.forms is not None:
            out = _read_as(out, phrase, values.kind, f"the label is its objects' kind {values.kind!r}: read as a "
                                                     "noun")
    else:
        out = _key_or_role(out, values, words)
    return _worded_as_the_objects(_route_both_ways(out, values, low), values, words)


def _noun_before_kind(out: RelationProfile, values: LabelValues, words: list[str]) -> RelationProfile:
    """``out`` read as a "<noun> <kind>" label whose last words are its objects' kind (``_reread``): the noun is the
    relation, the kind the object's noun ("locationCountry" whose objects are countries, "capitalCity": "the location
    of X", not "the location country of X", which reads "whose location countries include the country that is a
    location country of both X and Y"). Where the noun is the subjects' kind, the label names a table joining the two
    kinds ("country_climate_zone" whose subjects are countries: the climate zone of X, not "the country of X")."""
    low = [w.lower() for w in words]
    from lemminflect import getAllLemmas

    from tasks.meaning.lexicon import load_lexicon
    from tasks.meaning.morphology import word_list

    relational = load_lexicon().noun(low[0]) is not None
    # a broad class the lexicon knows no relation by says what the subjects are ("taxon common name" whose
    # subjects are species and objects common names: the common name of X, not "the taxon of X")
    classed = not relational and low[0] in word_list("class_nouns.txt")
    joined = (values.subject_kind or "").lower().split()[-1:] == [low[0]] or classed
    phrase = derived_profile(" ".join(words[1:]) if joined else words[0])
    # an adjective before the kind modifies it ("primary_attribute": the primary attribute, not "the primary" of
    # X, an election) unless the lexicon lists it as a noun of relation ("capitalCity": the capital of X); so
    # does any other word the lexicon gives no relation: the label is read whole ("eu_standard": the EU standard
    # of X, not "the eu of X"; "interchange station": not "the interchange of X")
    modifier = not relational and ("ADJ" in getAllLemmas(low[0]) or not joined)
    if phrase.forms is not None and not modifier and "bare noun" in (
            phrase.evidence["forms"].detail if "forms" in phrase.evidence else ""):
        said = " ".join(words[1:]) if joined else words[0]
        after = (f" after {low[0]!r}, a broad class its subjects belong to" if classed
                 else f" after its subjects' kind {values.subject_kind!r}" if joined else "")
        out = _read_as(out, phrase, values.kind, f"the label is a noun and its objects' kind {values.kind!r}"
                       + after + f": read as {said!r}")
    return out


def _route_both_ways(out: RelationProfile, values: LabelValues, low: list[str]) -> RelationProfile:
    """``out`` with many both ways where it is "next" or "previous" alone and its objects are stops of a line or a
    road ("next" whose objects are stations): the label with its objects' kind is what "next station" is by its
    words (``morphology.both_ways``), one of two, since the route runs both ways."""
    from tasks.meaning.morphology import both_ways

    kind = (values.kind or "").lower().split()
    if not (len(low) == 1 and kind and both_ways(f"{low[0]} {kind[-1]}")):
        return out
    why = (f"its objects are of kind {values.kind!r}: a line or a road runs both ways, so a stop's next one way is "
           "its previous the other")
    return _apply(out, {"objects_per_subject": "many", "subjects_per_object": "many"},
                  {"objects_per_subject": Evidence(source="graph", detail=why),
                   "subjects_per_object": Evidence(source="graph", detail=why)})


def _of_head(kind: list[str]) -> list[str]:
    """The words of a kind before its own of-phrase ("system" of "system of units", "body" of "body of water"); empty
    for a kind without one, or with it first or last."""
    i = kind.index("of") if "of" in kind else -1
    return kind[:i] if 0 < i < len(kind) - 1 else []


def _the_noun(phrase: RelationProfile, words: list[str]) -> RelationProfile:
    """``phrase`` with the forms of ``words`` as one noun with "the" ("{o} is the set of {s}")."""
    from tasks.meaning.morphology import bare_noun_forms

    return phrase.model_copy(update={"forms": bare_noun_forms(" ".join(words), "the")})


def _worded_as_the_objects(out: RelationProfile, values: LabelValues, words: list[str]) -> RelationProfile:
    """``out``'s forms in the words the graph's objects call for: the capitals of the objects' kind where the label
    is that kind ("EC number"), "year" for "date" where every object is a bare year."""
    low = [w.lower() for w in words]
    cased = values.kind or ""
    if out.forms is not None and cased != cased.lower() and cased.lower().split() == low:
        # a label that is its objects' kind, which the graph writes with capitals ("ec_number" whose objects are of
        # the type "EC number", "k_locus" of "K locus"): its words as the graph writes them, not "the ec number of X"
        said = re.compile(rf"(?<![\w-]){re.escape(' '.join(low))}(?![\w-])")
        forms = {k: ([said.sub(cased, t) for t in v] if isinstance(v, list) else said.sub(cased, v))
                 for k, v in out.forms.model_dump().items()}
        out = _apply(out, {"forms": forms}, {"forms": Evidence(source="graph", detail=(
            out.evidence["forms"].detail if "forms" in out.evidence else "") + f"; written as its objects' kind "
            f"{cased!r}")})
    if values.years and out.forms is not None and any(w.lower() == "date" for w in words):
        forms = {k: ([_DATE.sub("year", t) for t in v] if isinstance(v, list) else _DATE.sub("year", v))
                 for k, v in out.forms.model_dump().items()}
        out = _apply(out, {"forms": forms}, {"forms": Evidence(source="graph", detail=(
            out.evidence["forms"].detail if "forms" in out.evidence else "") + "; every object is a bare year: "
            "'date' said as 'year'")})
    return out


def _key_or_role(base: RelationProfile, values: LabelValues, words: list[str]) -> RelationProfile:
    """``base`` read again where its objects show it is a table's key column or a noun with its participle:

    - "country_id", "authorId" whose objects are countries, authors: a foreign key holds the thing itself, not its
      identifier ("the country of X", not "the country ID of X"); a key column whose objects are codes has another
      kind and keeps its words;
    - "suspectedVictim" whose objects are countries: "victim" is no kind of its objects, so the label is a noun with
      its participle ("a suspected victim of X"), not a verb and its object's kind ("X suspected Y"); "releasedAlbum"
      whose objects are albums stays "X released Y"."""
    from lemminflect import getAllLemmas

    from tasks.meaning.morphology import bare_noun_forms, singular, standing_profile
    from tasks.meaning.names import may_name_people

    low = [w.lower() for w in words]
    kind = (values.kind or "").lower().split()
    detail = base.evidence["forms"].detail if "forms" in base.evidence else ""
    if len(low) >= 2 and low[-1] in _KEY_WORDS and kind and kind[-1] == low[-2] and "bare noun" in detail:
        phrase = derived_profile(" ".join(words[:-1]))
        if phrase.forms is not None:
            return _read_as(base, phrase, values.kind, f"the label is a key column and its objects are of kind "
                                                       f"{values.kind!r}: read as {' '.join(words[:-1])!r}")
    if len(low) >= 2 and low[-1] in _KEY_WORDS | _CODE_WORDS and values.rows and "bare noun" in detail:
        # "parent_code" whose objects are districts that state their own facts: the converter put the row itself
        # where the table had its code, so the label names the row ("the parent of X"), not a code
        phrase = derived_profile(" ".join(words[:-1]))
        if phrase.forms is not None and "bare noun" in phrase.evidence["forms"].detail:
            # a column holds one value a row: "the parent of X", whatever the word names elsewhere (a person's two)
            phrase = _the_noun(phrase, low[:-1])
        if phrase.forms is not None:
            return _read_as(base, phrase, values.kind, f"the label is a key column and its objects are rows, not "
                                                       f"codes: read as {' '.join(words[:-1])!r}")
    then = re.match(r"active past verb '[^']+', then '([^']+)': the kind of the object", detail)
    if then and len(low) >= 2 and kind[-1:] != then[1].split()[-1:] and (
            re.fullmatch(r"[a-z]+ed", low[0]) or "NOUN" in getAllLemmas(low[0])):
        noun = singular(" ".join(low))  # "bit_values": a bit value of X
        return _apply(base, {"forms": bare_noun_forms(noun, "a").model_dump()}, {"forms": Evidence(
            source="graph", detail=f"{then[1]!r} is no kind of the label's objects"
            + (f" ({values.kind!r})" if values.kind else "") + f": read as the noun {noun!r}")})
    if then and values.subject_kind and not may_name_people(values.subject_kind):
        # "produced_unit" whose subjects are units, "requiredItem" whose subjects are research topics: a field of what
        # holds, in the present ("the unit that produces X"); a person's "coinedTerm" keeps its past
        present = standing_profile(base.label)
        said = present.evidence["forms"].detail if "forms" in present.evidence else ""
        if present.forms is not None and "standing facts" in said:
            return _apply(base, {"forms": present.forms.model_dump()}, {"forms": Evidence(
                source="graph", detail=f"{said}; its subjects are of kind {values.subject_kind!r}, no people")})
    return base


def _noun_not_verb(base: RelationProfile) -> bool:
    """Whether the words alone read the label as a verb, or could not choose between a noun and a verb."""
    detail = base.evidence["forms"].detail if "forms" in base.evidence else ""
    return (base.forms is None and "a noun or as a verb" in detail) or (
        base.evidence.get("forms") is not None and base.evidence["forms"].source == "morphology"
        and re.match(r"active (?:present|past)[a-z ]* verb '", detail) is not None)


def _classifying(base: RelationProfile, values: LabelValues, st: LabelStats) -> RelationProfile:
    """A bare noun label that is its objects' own kind ("species" whose objects are species, "genus" whose objects
    are genera) says which class a thing is in. Where at least ``ONE_MIN`` subjects each have exactly one in the
    graph, that is the sense meant, and a thing has one: "the species of Luke Skywalker", not the lexicon's other
    sense of the noun ("a genus has many species": "a species of Luke Skywalker"); and a class holds many things."""
    from tasks.meaning.morphology import bare_noun_forms, label_words

    detail = base.evidence["forms"].detail if "forms" in base.evidence else ""
    noun = " ".join(w.lower() for w in label_words(base.label))
    if not (detail.startswith("bare noun") and base.objects_per_subject == "many" and values.kind == noun
            and st.subjects >= ONE_MIN and st.subjects_several == 0):
        return base
    return _apply(base, {"objects_per_subject": "one", "subjects_per_object": "many",
                         "forms": bare_noun_forms(noun, "the").model_dump()}, {
        "objects_per_subject": Evidence(source="graph", detail=f"the label is its objects' kind {noun!r} and all "
                                        f"{st.subjects} subjects have exactly one in the graph: a thing is in one"),
        "subjects_per_object": Evidence(source="graph", detail=f"the label is its objects' kind {noun!r}: a class "
                                        "holds many things"),
        "forms": Evidence(source="graph", detail=f"{detail}; a thing has one {noun}: 'the {noun} of'")})


def _read_as(base: RelationProfile, phrase: RelationProfile, kind: str | None, why: str) -> RelationProfile:
    """``base`` with ``phrase``'s surface forms and ``kind`` as its object's noun, both from the graph's objects (a
    kind with a capital, "Olympic event", is not recorded as the object's noun: a type noun is lower case)."""
    kind = kind if kind is not None and is_type_noun(kind) else None
    return _apply(base, {"forms": phrase.forms.model_dump(), "object_noun": kind}, {
        "forms": Evidence(source="graph", detail=why),
        "object_noun": Evidence(source="graph", detail=f"its objects are of kind {kind!r}")})


#: The last word of a table's key column ("country_id", "authorKey", "team_ref"): it names the row it points to.
_KEY_WORDS = frozenset({"id", "ids", "key", "ref", "fk"})
#: Last words of a column that holds another row's code ("parent_code", "region_number"): a key where its objects
#: are rows, a code column where they are values.
_CODE_WORDS = frozenset({"code", "codes", "number", "no", "identifier"})
#: Prepositions a relational phrase ends in before the kind of its object ("member of", "located in").
_RELATIONAL_ENDS = frozenset({"of", "in", "for", "at", "to", "from", "on", "with"})
#: Nouns of events: "<event> <kind>" ("birth country") names the kind of the event's place, not the event.
_EVENT_NOUNS = frozenset({"birth", "death", "burial", "marriage", "founding", "foundation", "release", "publication",
                          "debut", "retirement", "election", "baptism", "coronation", "wedding"})
_DATE = re.compile(r"\bdate\b")


def hop_refusal(profile: RelationProfile, subject_known: bool) -> str | None:
    """Why a hop over ``profile`` cannot be asked, reading from its subject (``subject_known``) or its object;
    None when it can. Each reason names the label and the source that decided it."""
    label = profile.label
    if not profile.words:
        ev = profile.evidence.get("words")
        return f"the relation {label!r} is not words ({ev.detail if ev else 'an opaque code'}); it cannot be phrased"
    if profile.forms is None:
        ev = profile.evidence.get("forms")
        return f"the relation {label!r} has no surface forms ({ev.detail if ev else 'no source gave any'})"
    name = "objects_per_subject" if subject_known or profile.symmetric else "subjects_per_object"
    count = getattr(profile, name)
    if count == "one":
        return None
    ev = profile.evidence.get(name)
    where = f"{ev.source}: {ev.detail}" if ev and ev.detail else (ev.source if ev else "no source")
    side = ("one subject has" if name == "objects_per_subject" else "one object has")
    other = "objects" if name == "objects_per_subject" else "subjects"
    if count == "many":
        return (f"the relation {label!r} read this way names one of many: {side} many {other} in the world "
                f"({where}); a question built on it has no single answer")
    return (f"the relation {label!r} read this way may name one of many: how many {other} {side} is unknown "
            f"({where}); correct it in the profiles file to use it")


def book_for_graph(kg: Any, user: Mapping[str, Mapping[str, Any]] | None = None,
                   profiled: Mapping[str, RelationProfile] | None = None) -> ProfileBook:
    """A ``ProfileBook`` with the statistics of ``kg`` (a ``KnowledgeGraph``), kept on the graph object so the
    jobs of one snapshot share it. The user's entries and the profiler's answers are part of the cache key."""
    token = _digest(user, profiled)
    cache = kg.__dict__.setdefault("_profile_books", {})
    book = cache.get(token)
    if book is None:
        book = cache[token] = ProfileBook(user=user or {}, profiled=profiled or {}, stats=label_stats(kg.sorted_views()),
                                          values=label_values(kg))
    return book


def _digest(user: Mapping[str, Any] | None, profiled: Mapping[str, RelationProfile] | None) -> str:
    if not user and not profiled:
        return ""
    body = {"user": user or {}, "profiled": {k: v.model_dump(mode="json") for k, v in (profiled or {}).items()}}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


_DEFAULT = ProfileBook()


def default_book() -> ProfileBook:
    """Profiles from the lexicon and morphology alone (no graph statistics, no user file)."""
    return _DEFAULT


__all__ = ["MANY_MIN", "ONE_MIN", "LabelStats", "LabelValues", "ProfileBook", "book_for_graph", "count_from_stats",
           "default_book", "derived_profile", "description_phrase", "edge_label", "hop_refusal", "keywords_key",
           "label_stats", "label_values", "merge_stats"]
