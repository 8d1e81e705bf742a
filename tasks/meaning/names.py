"""How a reader sees a node: the display form of an identifier name, and the noun a question uses for a node.

Graphs that hopforge did not write name nodes with identifiers: snake_case ("element_ion_or_isotope"), camelCase
("clinicalDrug"), URIs and CURIEs ("http://dbpedia.org/resource/Albert_Einstein", "dbr:Albert_Einstein",
"wd:Q42"), Freebase mids ("m.0abc12", "/m/0abc12"). Paths, answers and tool arguments keep the identifier (it is
the node's key); questions, checks and answer matching also know its display form:

=============================================  ==============================  ===============================
name                                           ``display_name``                why
=============================================  ==============================  ===============================
``element_ion_or_isotope``                     element ion or isotope          snake_case keeps its case
``Albert_Einstein``                            Albert Einstein
``clinicalDrug``                               clinical drug                   camel humps, lower-cased
``http://dbpedia.org/resource/Caf%C3%A9``      Café                            URI: its decoded last segment
``dbr:Albert_Einstein``                        Albert Einstein                 CURIE: its local part
``m.0abc12`` / ``wd:Q42``                      the name table's entry          else left as it is
``DeepMind``, ``McDonald``, ``iPhone``         unchanged                       ordinary names
``BodySystem`` (``vocabulary=True``)           body system                     a class name, not an entity's
=============================================  ==============================  ===============================

PascalCase counts as an identifier only where the text names a class or a relation (``vocabulary=True``: a type
column, the object of a type edge): as an entity name "BodySystem" has the shape of "DeepMind", "YouTube" and
"PlayStation", and a brand split into words is worse than a type left run together. The rules themselves live in
``schemas.answers`` (pure standard library, so that the answer normaliser shares them); this module adds what
needs a name table or the graph.

``node_type_noun`` reads the noun for a node from the graph: the object of a type edge out of the node (``isa``,
``is_a``, ``instance of``, ``P31``, ``type``, ``rdf:type``, Freebase's ``type.object.type`` and
``common.topic.notable_types``), else the importer's type column or LightRAG's entity type; "entity" only when
nothing is known.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import lemminflect
import yaml

from schemas.answers import identifier_display, identifier_local, is_identifier
from schemas.errors import InputError
from schemas.graph import UNKNOWN_TYPE
from tasks.meaning.morphology import DERIVING_PREFIXES, PREPOSITIONS, derived_cores, derived_word, mass_noun, word_list

if TYPE_CHECKING:
    from tasks.graph.kg import KnowledgeGraph

_MID = re.compile(r"/?([mg])[./]([0-9a-z_]{2,})")
_WIKIDATA_ID = re.compile(r"[QPL][1-9][0-9]*")


# -- display forms --------------------------------------------------------------------------------------------------
def table_keys(name: str) -> list[str]:
    """The keys a name table may hold an identifier under: as written, its local part, and a mid in both of
    Freebase's spellings ("m.0abc12", "/m/0abc12"), a Wikidata id bare and as ``wd:``."""
    t = name.strip()
    local = identifier_local(t)
    keys = [t, local]
    m = _MID.fullmatch(local)
    if m:
        keys += [f"{m.group(1)}.{m.group(2)}", f"/{m.group(1)}/{m.group(2)}"]
    if _WIKIDATA_ID.fullmatch(local):
        keys.append(f"wd:{local}")
    return list(dict.fromkeys(k for k in keys if k))


def display_name(name: str, names: Mapping[str, str] | None = None, *, vocabulary: bool = False) -> str:
    """The form a reader sees of ``name`` (module table): an identifier's entry in ``names`` (a name table, looked
    up under ``table_keys``), else its words (``schemas.answers.identifier_display``); a mid or a Wikidata id
    without an entry stays as it is. A name that is not an identifier comes back unchanged."""
    t = name.strip()
    if not is_identifier(t, vocabulary=vocabulary):
        return name
    if names:
        for key in table_keys(t):
            shown = names.get(key)
            if isinstance(shown, str) and shown.strip():
                return " ".join(shown.split())
    return identifier_display(t, vocabulary=vocabulary)


def display_forms(names: Iterable[str]) -> list[str]:
    """``names`` and, after each identifier, its display form (no name table), repeats dropped."""
    out: list[str] = []
    for n in names:
        if not n or not n.strip():
            continue
        out.append(n)
        shown = display_name(n)
        if shown != n:
            out.append(shown)
    return list(dict.fromkeys(out))


# -- relations that name or type a node ----------------------------------------------------------------------------
@lru_cache(maxsize=65536)
def relation_word(label: str) -> str:
    """A relation label reduced for recognising it: its local part (URI, CURIE), the last part of a dotted
    Freebase label, lower case, without spaces, underscores or hyphens ("rdf:type" -> "type", "instance of" ->
    "instanceof", "type.object.type" -> "type", "wdt:P31" -> "p31")."""
    t = identifier_local(label.strip())
    if "." in t and " " not in t:
        t = t.rsplit(".", 1)[1]
    return re.sub(r"[\s_\-]+", "", t).casefold()


#: Labels (as ``relation_word`` gives them) of a relation from a node to its class.
TYPE_RELATIONS = frozenset({
    "isa", "instanceof", "p31", "type", "hastype", "typeof", "entitytype", "notabletypes", "notabletype",
})  # fmt: skip
#: Labels of a relation from a node to its name (``rdfs:label``, ``skos:prefLabel``, Freebase's
#: ``type.object.name``, Wikidata's official name P1448 and name P2561).
NAME_RELATIONS = frozenset({"name", "label", "preflabel", "officialname", "p1448", "p2561"})


def _out_edges(kg: KnowledgeGraph, name: str, words: frozenset[str]) -> list[str]:
    """Nodes that relations labelled with one of ``words`` lead to from ``name`` (stored from it), in the
    graph's neighbour order."""
    if name not in kg or not words & _relation_words(kg):
        return []
    out = []
    for other, e in kg.neighbors(name):
        stored_from_it = e.direction == "out" or (e.direction == "undirected" and e.source == name)
        if other == name or not e.relation or not stored_from_it:
            continue
        if relation_word(e.relation) in words:
            out.append(other)
    return out


def _relation_words(kg: KnowledgeGraph) -> frozenset[str]:
    """The words of every relation label the graph holds (``relation_word``), once a graph: a graph without a type
    or a name relation is not searched node by node for one."""
    hit = kg.__dict__.get("_relation_words")
    if hit is None:
        hit = kg.__dict__["_relation_words"] = frozenset(relation_word(r.relation) for r in kg.relation_views()
                                                         if r.relation)
    return hit


def node_display(kg: KnowledgeGraph, name: str, names: Mapping[str, str] | None = None, *,
                 vocabulary: bool = False) -> str:
    """How a question writes node ``name``: a name that is not an identifier as it is; an identifier by its entry
    in ``names``, else by the graph's own name for it (a ``name`` / ``label`` / ``rdfs:label`` /
    ``type.object.name`` relation out of the node to a node that is not an identifier), else ``display_name``."""
    if not is_identifier(name, vocabulary=vocabulary):
        return name
    if names:
        shown = display_name(name, names, vocabulary=vocabulary)
        if shown != name:
            return shown
    for other in _out_edges(kg, name, NAME_RELATIONS):
        if other.strip() and not is_identifier(other):
            return " ".join(other.split())
    return display_name(name, vocabulary=vocabulary)


# -- type nouns ----------------------------------------------------------------------------------------------------
#: LightRAG's default extraction types (Person, Creature, Organization, Location, Event, Concept, Method, Content,
#: Data, Artifact, NaturalObject, Other) and common spellings, keyed by ``relation_word``; ``None``: says nothing.
LIGHTRAG_TYPES: dict[str, str | None] = {
    "person": "person", "people": "person", "location": "place", "geo": "place", "place": "place",
    "organization": "organization", "organisation": "organization", "content": "work",
    "naturalobject": "natural object", "creature": "creature", "event": "event", "concept": "concept",
    "method": "method", "artifact": "artifact", "other": None, "data": None, "unknown": None, "none": None,
    "entity": None, "thing": None, "null": None, "na": None, "n/a": None, "": None,
    "human": "person",  # Wikidata's class of people (Q5), the object of their `instance of` edges
}  # fmt: skip
# Words a Title Case type name keeps in lower case anyway ("Element, Ion, or Isotope").
_MINOR = frozenset("a an and as at by for from in of on or the to with".split())
#: Words a name keeps in lower case between its capitalised ones ("Battle_of_Hastings", "Ludwig_van_Beethoven").
NAME_PARTICLES = _MINOR | frozenset("de da di do du des del della dos das van von der den ter ten le la les al el bin "
                                    "ibn y zu af av".split())
_NOUN_TEXT = re.compile(r"[^\W\d_][\w'’ ,/&\-]*")


@lru_cache(maxsize=4096)
def _singular(word: str) -> str:
    """The singular of a lower-case noun that looks plural ("drugs" -> "drug"; "species", "physics", "analysis"
    stay)."""
    if not (word.endswith("s") and len(word) > 3 and word.isalpha() and word.islower()) or word.endswith("ss"):
        return word
    lemmas = lemminflect.getLemma(word, upos="NOUN")
    return lemmas[0] if lemmas and lemmas[0] else word


def type_text_noun(text: str | None) -> str | None:
    """The noun a question uses for a class written ``text`` (a type column, a type edge's object), or ``None``
    when it says nothing (empty, ``UNKNOWN``, LightRAG's Other or Data, a code such as "T121", an unresolved
    mid). Identifiers become words (``vocabulary=True``: "clinical_drug", "BodySystem", "people.person"), the
    last word singular, and the words lower case unless they read as a proper noun: a single capitalised word
    and Title Case are lowered ("Person", "Clinical Drugs"), and so is a sentence-case first word that is a common
    English word ("Transition metal"); "Greek deity" keeps its capital, and so does a modifier English knows only as
    a proper word ("OlympicEvent" -> "Olympic event")."""
    if text is None:
        return None
    t = " ".join(text.split())
    if not t or t == UNKNOWN_TYPE:
        return None
    key = relation_word(t)
    if key in LIGHTRAG_TYPES:
        return LIGHTRAG_TYPES[key]
    if re.fullmatch(r"(?:[A-Z][a-z]+){2,}", t):  # PascalCase ("OlympicEvent"): its words in Title Case
        t = " ".join(re.findall(r"[A-Z][a-z]+", t))
    t = " ".join(display_name(t, vocabulary=True).split())
    if is_identifier(t, vocabulary=True) or not _NOUN_TEXT.fullmatch(t) or not re.search(r"[^\W\d_]{2}", t):
        return None
    words = t.split(" ")
    if len(words) > 6:
        return None
    if t.isupper() and len(words) >= 2 and any(len(w) >= 4 and english_word(w.lower()) for w in words):
        # a heading in capitals ("PRIVATE DOMAINS", a list's section) is its words: "private domain"; acronyms and
        # short words among them stay ("ICANN DOMAINS" -> "ICANN domain", "US STATE" -> "US state")
        words = [w.lower() if len(w) >= 4 and english_word(w.lower()) else w for w in words]
    cased = [w for w in words if w.strip(",").casefold() not in _MINOR or w[:1].isupper()]

    def titled(w: str) -> bool:
        core = w.strip(",'’")
        return core[:1].isupper() and (core[1:].islower() or not core[1:])

    if len(words) == 1 or all(titled(w) for w in cased):
        # Title Case lowered, but a modifier English knows only as a proper word keeps its capital ("Olympic event",
        # "American football team"): lemminflect lists no lower-case "olympic"
        words = [w if i < len(words) - 1 and titled(w) and w.isalpha() and not lemminflect.getAllLemmas(w.lower())
                 and w.casefold() not in _MINOR else (w.lower() if titled(w) else w) for i, w in enumerate(words)]
        if len(words) == 1 and _name_cased(t) and not english_word(t.lower()):
            words = [t]  # one word no list knows, written as a name is ("Pokemon"): a proper noun keeps its capital
    elif titled(words[0]) and all(w.islower() for w in words[1:]) and lemminflect.getAllLemmas(words[0].lower()):
        # sentence case whose first word is a common English word: "Transition metal" (but "Greek deity")
        words[0] = words[0].lower()
    if not _head_reads_as_noun(words[-1]) or phrase_name(" ".join(words)):
        return None  # no noun at its end, or a relation's phrase ("has manifestation", "related to")
    while len(words) > 1 and _ABBREVIATION.fullmatch(words[0]) and not lemminflect.getAllLemmas(words[0]):
        words = words[1:]  # a table's prefix in lower case, no word: "rpdr_contestants" names contestants
    if _ABBREVIATION.fullmatch(words[-1]) and not lemminflect.getAllLemmas(words[-1]) and (
            len(words[-1]) <= 3 or not re.search(r"[aeiouy]", words[-1])):
        words[-1] = words[-1].upper()  # an acronym a type column wrote in lower case: "geographic_crs" -> "geographic CRS"
    elif "of" in words[1:-1]:
        i = words.index("of", 1)  # "<noun> of <nouns>": the head is before "of" ("system of units", "unit of time")
        words[i - 1] = _singular(words[i - 1])
    else:
        words[-1] = _singular(words[-1])
    noun = " ".join(words)
    key = relation_word(noun)
    return LIGHTRAG_TYPES[key] if key in LIGHTRAG_TYPES else noun


#: A short lower-case token that may be an abbreviation ("rpdr", "mlb") when English knows no such word.
_ABBREVIATION = re.compile(r"[a-z]{2,4}")
_LETTERS_DIGITS = re.compile(r"[^\W\d_]+\d+[^\W_]*|\d+[^\W\d_]+[^\W_]*")


_FUNCTION_WORDS = PREPOSITIONS | frozenset({"the", "a", "an", "and", "or"})


def _head_reads_as_noun(word: str) -> bool:
    """Whether the last word of a class name can head a noun phrase: not a token of letters and digits ("Cars93",
    "minicw1": a table or column name), not a word English knows only as an adjective or a verb ("Large", "Sporty",
    "Retired": a value of a class column, not a class). A word English does not know passes ("metabolite")."""
    if _LETTERS_DIGITS.fullmatch(word):
        return False
    low = word.strip(",'’").lower()
    if not low.isalpha():
        return True
    if low in _FUNCTION_WORDS:  # "Appointed on the advice of": a column's phrase, not a class
        return False
    lemmas = lemminflect.getAllLemmas(low)
    return not lemmas or "NOUN" in lemmas or "PROPN" in lemmas


def entity_type_noun(entity_type: str | None) -> str:
    """``type_text_noun`` of a type column, "entity" when it says nothing."""
    return type_text_noun(entity_type) or "entity"


def node_type_noun(kg: KnowledgeGraph, name: str) -> str:
    """The noun a question uses for node ``name``, from the graph: the object of a type edge out of the node
    (``TYPE_RELATIONS``; the object's display form or its own name relation, singular, lower case unless a
    proper noun), else the node's type column (an importer's type, LightRAG's entity type:
    ``type_text_noun``); "entity" only when nothing is known. Worked out once a node, kept on the graph."""
    memo = kg.__dict__.setdefault("_type_nouns", {})
    noun = memo.get(name)
    if noun is None:
        noun = memo[name] = _type_noun(kg, name)
    return noun


def _type_noun(kg: KnowledgeGraph, name: str) -> str:
    """``node_type_noun``, worked out."""
    declared = type_text_noun(kg.entity(name).type) if name in kg else None
    typed = _out_edges(kg, name, TYPE_RELATIONS)
    if typed and declared and declared not in _COARSE_KINDS and _type_edges_are_attributes(kg):
        typed = []  # a Pokémon's "type" (water, fire): an attribute, not the class its declared type names
    for other in typed:
        if _column_value(kg, other):
            continue
        shown = node_display(kg, other, vocabulary=True)
        noun = type_text_noun(shown)
        if noun and declared and english_word(declared.split()[-1].lower()) and _foreign_kind(shown):
            # a class in another language ("quan", "thanh-pho": a Vietnamese district, a city; "Autres achats et
            # charges externes", a French chart's account type) beside an English type column ("district",
            # "account"): the column names the kind
            continue
        if noun and not _run_together(noun):
            return noun
    if name in kg:
        noun = type_text_noun(kg.entity(name).type)
        if noun and _foreign_code(noun):
            return "entity"  # a type column's code in another language: "commune-actuelle", "commune-deleguee"
        if noun in _COARSE_KINDS:
            noun = _description_kinds(kg).get(name, noun)
        if noun and not _table_name(kg, name, noun) and relation_word(noun) not in _NOT_KINDS:
            words = noun.split()
            if len(words) >= 2 and words[-1] == "name" and not column_value(kg, name) and states_facts(kg, name):
                # a row keyed by its name column ("volcano_name"): the row is the volcano, not its name; a name
                # that only other nodes lead to is a name ("Bengali name", a district's native label)
                noun = " ".join(words[:-1])
            return _cased_as_the_graph_writes(kg, noun)
    return "entity"


def _foreign_kind(noun: str) -> bool:
    """Whether a type edge's class reads as no English kind: one lower-case word no English list knows or a
    hyphenated code in another language ("quan", "thanh-pho"), or words of which most are no English word
    ("Autres achats et charges externes", "Disponibilités")."""
    one = noun.lower()
    if " " not in one and (_foreign_code(one) or one.isalpha() and not english_word(one)):
        return True  # one word in another language ("quan") or a hyphenated code ("thanh-pho")
    if not noun[:1].isupper():
        return False
    if any(w in _FOREIGN_JOINERS for w in noun.split()[1:]):
        return True  # "Charges de personnel", "Vorräte und Forderungen"
    words = [w for w in re.findall(r"[^\W\d_]+", noun) if len(w) > 2]
    return bool(words) and 2 * sum(not english_word(w.lower()) for w in words) > len(words)


#: Words that join the words of a class's name in French, Spanish, Italian, Portuguese, German or Dutch, and are no
#: English word: a class named so is named in that language.
_FOREIGN_JOINERS = frozenset({"de", "du", "des", "et", "la", "le", "les", "del", "della", "di", "y", "e", "da", "do",
                              "und", "der", "die", "das", "von", "für", "van", "het", "en"})


def _foreign_code(noun: str) -> bool:
    """Whether a type column's noun holds a lower-case word joined by hyphens with a part English does not know
    ("commune-actuelle"): a converter's code in another language, no kind a reader knows."""
    return any("-" in w and w.islower() and not all(english_word(p) or p in DERIVING_PREFIXES for p in w.split("-") if p)
               for w in noun.split())


def _name_cased(text: str) -> bool:
    """Whether ``text`` is one word written as a name is: a capital, then lower-case letters only ("Pokemon")."""
    return text.isalpha() and text[0].isupper() and text[1:].islower()


def states_facts(kg: KnowledgeGraph, name: str, *, besides_type: bool = False) -> bool:
    """Whether relations are stored from node ``name`` (it is a row's subject, not only a value others lead to);
    ``besides_type``: relations other than its type edges (``TYPE_RELATIONS``)."""
    return any(other != name and e.relation and (e.direction == "out" or (e.direction == "undirected" and e.source == name))
               and not (besides_type and relation_word(e.relation) in TYPE_RELATIONS)
               for other, e in kg.neighbors(name))


def _cased_as_the_graph_writes(kg: KnowledgeGraph, noun: str) -> str:
    """``noun`` with a word a snake_case or lower-case type column lowered given back its capital where the graph's
    names write it only so ("python_module" -> "Python module": "Python", "Python 3", "Python Traceback" and never
    "python" as a word of a name); never its head, a common noun ("season", though an item type is named "Season")."""
    words = noun.split()
    if not any(w.islower() and w.isalpha() for w in words[:-1]):
        return noun
    cased = _name_word_cases(kg)
    # the head stays a common noun: a node named "Season" (an item type) does not make every season a "Season"
    return " ".join(w.capitalize() if w.islower() and w.isalpha() and cased.get(w) == "upper" else w
                    for w in words[:-1]) + " " + words[-1]


def _name_word_cases(kg: KnowledgeGraph) -> dict[str, str]:
    """Per lower-cased word of the graph's names: "upper" where a node is named by the capitalised word alone
    ("Python") and no name writes it in lower case (a proper word; a capital inside a name is the name's own:
    "Reflection nebula", "Democratic Party"); "lower" where some name writes it in lower case. Kept on the graph."""
    hit = kg.__dict__.get("_name_word_cases")
    if hit is None:
        upper: Counter[str] = Counter()
        lower: set[str] = set()
        for n in kg.nodes():
            if "/" in n or "." in n.strip(".") and " " not in n:  # identifiers ("application/x-python") say nothing
                continue
            if re.fullmatch(r"[A-Z][a-z]+", n):
                upper[n.lower()] += 1
                continue
            lower.update(w for w in re.findall(r"(?<![\w.-])[^\W\d_]+(?![\w.-])", n) if w.islower())
        hit = {w: "lower" for w in lower}
        hit.update({w: "upper" for w in upper if w not in lower})
        kg.__dict__["_name_word_cases"] = hit
    return hit


#: Share of a graph's typed nodes with two or more type edges past which those edges are an attribute, not class
#: membership ("instance of township" names the class; a Pokémon's "type" water and poison are two values).
TYPE_ATTRIBUTE_SHARE = 0.1


def _type_edges_are_attributes(kg: KnowledgeGraph) -> bool:
    """Whether the graph's type-labelled relations are a multi-valued attribute (``TYPE_ATTRIBUTE_SHARE``): then a
    node that declares its own type is called by that, not by its "type" values."""
    hit = kg.__dict__.get("_type_edges_are_attributes")
    if hit is None:
        counts = Counter()
        for r in kg.sorted_views():
            if r.relation and relation_word(r.relation) in TYPE_RELATIONS:
                counts[r.source] += 1
        hit = bool(counts) and sum(n >= 2 for n in counts.values()) >= TYPE_ATTRIBUTE_SHARE * len(counts)
        kg.__dict__["_type_edges_are_attributes"] = hit
    return hit


#: LightRAG's coarse entity types a node's own description may say more exactly: "Country of north-east Africa"
#: is a country, "Governing council of ancient Rome" a council, not "the place" or "the organization".
_COARSE_KINDS = frozenset({"place", "organization", "event"})
#: Words a description's opening noun phrase stops at.
_PHRASE_ENDS = _FUNCTION_WORDS | frozenset("who whom which that whose where when".split())
#: Nodes that must share a description's kind for it to be a kind (a class holds several things).
_KIND_MIN_NODES = 2


def description_kind(description: str, name: str = "") -> str | None:
    """The kind a description's opening noun phrase names, or None: its head noun, singular and lower case
    ("Small river in northern Italy ..." -> "river", "Julius Caesar was a Roman general ..." -> "general",
    "The Roman state before ..." -> "state"). None where the phrase ends in a proper name or the head is a word
    English also uses as an adverb ("first", "north") or an adjective that is not the head ("Short, ...",
    "Chemical element essential for ...")."""
    d = " ".join((description or "").split())
    if name:
        d = re.sub(rf"^{re.escape(name)}\s+(?:is|was|are|were)\s+", "", d)
    words = re.findall(r"[^\W\d_][\w'’-]*|[,.;:()]", d)
    if words and words[0].lower() in ("a", "an", "the"):
        words = words[1:]
    span: list[str] = []
    end = ""
    for w in words[:8]:
        if w in ",.;:()" or w.lower() in _PHRASE_ENDS or (span and _verb_only(w)):
            end = w  # a punctuation mark, a preposition or pronoun, or a participle after the noun ("plants grown")
            break
        span.append(w)
    if not span or len(span) > 5:
        return None
    head = span[-1]
    if not head.isalpha() or (head[:1].isupper() and len(span) > 1):
        return None
    low = head.lower()
    lemmas = lemminflect.getAllLemmas(low)
    if not lemmas:  # a word the tables lack ("empire"): the head of a description's opening phrase is its noun
        return low if len(low) >= 4 and not low.endswith("ly") else None
    if "NOUN" not in lemmas or "ADV" in lemmas:
        return None
    if "ADJ" in lemmas and (len(span) < 2 and end in ",.;:()" or
                            len(span) >= 2 and "NOUN" in lemminflect.getAllLemmas(span[-2].lower())):
        return None  # "Short, stiff-stemmed wheat", "Chemical element essential for ...": an adjective, not the head
    return lemmas["NOUN"][0]


def _verb_only(word: str) -> bool:
    """A word English knows as a verb form and not as a noun ("domesticated", "carved")."""
    lemmas = lemminflect.getAllLemmas(word.lower()) if word.isalpha() else {}
    return "VERB" in lemmas and "NOUN" not in lemmas


def _description_kinds(kg: KnowledgeGraph) -> dict[str, str]:
    """Per node of a coarse LightRAG type, the kind its description names, where at least ``_KIND_MIN_NODES``
    nodes of the graph share it; counted on first use and kept on the graph object."""
    kinds = kg.__dict__.get("_description_kinds")
    if kinds is None:
        found: dict[str, str] = {}
        for n in kg.nodes():
            e = kg.entity(n)
            if e.description and type_text_noun(e.type) in _COARSE_KINDS:
                k = description_kind(e.description, n)
                if k:
                    found[n] = k
        shared = Counter(found.values())
        kinds = kg.__dict__["_description_kinds"] = {n: k for n, k in found.items() if shared[k] >= _KIND_MIN_NODES}
    return kinds


#: Type columns that name a field of a row, not a kind of thing: a table whose rows are typed by their key column
#: ("name", "id", "title") says nothing of what the rows are ("which name has SP3r2 as a socket").
#: Words a file puts where it has no class or no name for a thing: a catch-all group says what a row is not ("which
#: misc is ...", Warframe's), and a placeholder names nothing (``tasks.qa.programs``' codes).
CATCH_ALL_WORDS = frozenset({"misc", "miscellaneous", "other", "others", "various", "unknown", "unsorted",
                             "uncategorized", "uncategorised", "unclassified", "unspecified", "undefined"})
_NOT_KINDS = NAME_RELATIONS | CATCH_ALL_WORDS | frozenset({"id", "identifier", "key", "title", "code", "value", "item",
                                                           "row", "record"})


def _column_value(kg: KnowledgeGraph, node: str) -> bool:
    """Whether ``node``, the object of a type edge, is a value of a table's column named like a type ("Type",
    "type") rather than a class: the graph types it by that column's own name (Cars93's "Midsize" is of type
    "Type"), as it types every column's values. A class is not typed "type"."""
    if node not in kg:
        return False
    return relation_word(kg.entity(node).type or "") in TYPE_RELATIONS


#: Rows of a type looked at to tell a table's name from a class (``_table_name``).
_ROWS_SAMPLED = 24


def _table_name(kg: KnowledgeGraph, name: str, noun: str) -> bool:
    """Whether ``noun``, the type column of ``name``, is the name of the table the node is a row of rather than a
    class a reader knows: the noun's last word is no English word ("starwar", "msleep", "statename") and the graph
    types the rows' values by the columns that hold them (most rows of the type have two or more relations leading
    to a node whose type is the relation's own label: "eye_color" -> a node of type "eye_color"). Decided once per
    type for the whole graph, so every row of a table gets the same answer whatever its neighbours. A row type that
    is a word ("baker") is a class all the same, and so is one its source writes as a name is written, one word with
    a capital and no other ("Pokemon"): a table name is lower case, or words run together."""
    head = noun.split()[-1].lower()
    if not head.isalpha() or english_word(head) or not _made_up(head):
        return False
    type_text = kg.entity(name).type or ""
    if _name_cased(type_text):
        return False
    decided = kg.__dict__.setdefault("_table_types", {})
    if type_text not in decided:
        rows = _rows_by_type(kg).get(type_text, [])
        decided[type_text] = 2 * sum(_typed_by_columns(kg, n) for n in rows) > len(rows)
    return decided[type_text]


def _run_together(noun: str) -> bool:
    """Whether a kind from a type edge is one lower-case word no list knows that is English words run together, a
    file's internal word ("biggun", "particlebeam"): no reader knows the kind by it, so the node's type column names
    it instead."""
    return noun.isalpha() and noun.islower() and not english_word(noun) and _made_up(noun)


def _made_up(word: str) -> bool:
    """Whether a lower-case word no list knows is made up the way a table is named: without a vowel ("pkmn"), or
    English words run together, or a letter or two before one ("statename", "starwar", "msleep"); a word that is
    none of these ("radionuclide", "nuclide") is a term of a field the lists lack, a kind all the same."""
    if not re.search(r"[aeiouy]", word):
        return True
    return any((i <= 2 or english_word(word[:i])) and len(word) - i >= 3 and english_word(word[i:])
               for i in range(1, len(word) - 2))


@lru_cache(maxsize=65536)
def english_word(word: str) -> bool:
    """Whether lower-case ``word`` is English: a lemma or inflection lemminflect knows, a common noun of WordNet its
    list lacks (``unlisted_nouns.txt``: "gemstone"), or one built from such a word with a prefix English derives
    words with (``derived_word``: "microarchitecture", "subfamily")."""
    return bool(lemminflect.getAllLemmas(word)) or word in word_list("unlisted_nouns.txt") or derived_word(word)


def _rows_by_type(kg: KnowledgeGraph) -> dict[str, list[str]]:
    """The first ``_ROWS_SAMPLED`` nodes (by name) of each type column, in one pass over the graph, kept on it."""
    hit = kg.__dict__.get("_rows_by_type")
    if hit is None:
        hit = {}
        for n in kg.nodes():
            rows = hit.setdefault(kg.entity(n).type or "", [])
            if len(rows) < _ROWS_SAMPLED:
                rows.append(n)
        kg.__dict__["_rows_by_type"] = hit
    return hit


def _typed_by_columns(kg: KnowledgeGraph, name: str) -> bool:
    """Whether two or more relations out of ``name`` lead to a node whose type is the relation's own label."""
    columns = 0
    for other, e in kg.neighbors(name):
        if other == name or not e.relation or not (e.direction == "out" or e.source == name):
            continue
        if other in kg and relation_word(kg.entity(other).type or "") == relation_word(e.relation):
            columns += 1
            if columns >= 2:
                return True
    return False


def column_value(kg: KnowledgeGraph, name: str) -> bool:
    """Whether ``name`` is a value of a column: the graph types it by the label of a relation that leads to it ("atom",
    of type MolecularGeometry, the object of ``molecularGeometry``). Such a value is said bare ("whose molecular
    geometry is atom"), not as a thing ("the atom")."""
    if name not in kg:
        return False
    memo = kg.__dict__.setdefault("_column_values", {})  # per node, kept on the graph: a hub has thousands of edges
    hit = memo.get(name)
    if hit is None:
        kind = relation_word(kg.entity(name).type or "")
        hit = memo[name] = bool(kind) and any(
            e.relation and relation_word(e.relation) == kind and other != name
            for other, e in kg.neighbors(name) if e.direction != "out" and e.target == name)
    return hit


#: Kinds of bodies whose initialisms English writes with "the" ("the FLF", "the NHL", "the UN"); a company's ("IBM")
#: and a generic "organization"'s (a company too, in LightRAG's types) are said bare.
_BODY_KINDS = frozenset({"faction", "agency", "league", "party", "association", "federation", "union", "alliance",
                         "committee", "council", "commission", "guild"})
#: Heads of kinds whose members are categories a column names ("ship class": "Bomber"; "rank": "Captain"), said
#: bare after their label ("whose class is Bomber").
_CATEGORY_HEADS = frozenset({"class", "subclass", "category", "type", "subtype", "archetype", "rank", "grade", "level",
                             "tier", "race", "colour", "size", "group", "status", "kind", "sort", "variety", "form",
                             "shape", "stage"})
#: Kinds that name places (their names are proper names, "Wall Street", "Reading") or say nothing of their members
#: ("entity", a table's row).
_PLACE_OR_NO_KINDS = frozenset({"street", "road", "avenue", "lane", "square", "boulevard", "city", "town", "village",
                                "place", "location", "settlement", "neighbourhood", "neighborhood", "county",
                                "country", "province", "station", "stop", "airport", "port", "park", "island",
                                "district", "region", "state", "building", "venue", "stadium", "company", "band",
                                "group", "team", "club", "brand", "label", "airline", "manufacturer", "publisher",
                                "school", "university", "hospital", "church", "museum", "entity", "thing", "item",
                                "object"})
#: Heads of names that are places a name is said bare with ("Baker Street", "Green Park", "Tower Hill").
_PLACE_HEADS = frozenset({"street", "road", "avenue", "lane", "square", "park", "hill", "garden", "gardens", "cross",
                          "gate", "bridge", "water", "common", "green", "place", "row", "circus", "court", "town",
                          "village", "end", "wood", "field", "fields", "heath", "quay", "wharf", "dock", "docks"})
#: Words a name may not open with to be read as a common noun: it has its own determiner ("My Company", "No Man").
_DETERMINERS = frozenset("a an the my our your his her its their this that these those no some any every each all "
                         "either neither".split())
#: Share of a kind's names that must be English count nouns for the kind to name roles or classes
#: (``class_name_takes_the``), and the fewest names a kind needs for the share to say anything.
_CLASS_SHARE = Fraction(2, 5)
_CLASS_MIN_NODES = 8


def _initialism(name: str) -> bool:
    """A name said letter by letter: capitals without a vowel, or three at most ("FLF", "BJCP", "UN", "WHO"); not one
    said as a word ("NASA", "NATO", "UEFA")."""
    return re.fullmatch(r"[A-Z]{2,5}", name) is not None and (len(name) <= 3 or not re.search(r"[AEIOU]", name))


def _english_count_phrase(name: str, *, listed: bool = False) -> bool:
    """Capitalised English words, at most three, headed by a singular count noun: "Pirate", "Wanted Pirate",
    "Traders Guild", "Bowman"; not "Thugs" (a plural), "Dvaered" or "Za'lek" (no English words). ``listed``: a head
    WordNet has that lemminflect lacks counts too ("Empire"); its list also holds elements and languages in lower
    case ("americium", "akan"), so a kind is judged without it."""
    words = strip_disambiguator(name).split()
    head = words[-1].lower() if words else ""
    if not words or words[0].lower() in _DETERMINERS or head in _PLACE_HEADS:
        return False
    return 1 <= len(words) <= 3 and all(re.fullmatch(r"[A-Z][a-z]+", w) and english_word(w.lower()) for w in words) \
        and (_count_noun(head) or (listed and head in word_list("unlisted_nouns.txt") and not head.endswith("s")
                                   and not mass_noun(head)))


def _class_kinds(kg: KnowledgeGraph) -> frozenset[str]:
    """The kinds of the graph whose names are largely English count nouns (a game's factions "Empire", "Pirate",
    "Trader"; its units "Bowman", "Assassin"): of ``_CLASS_MIN_NODES`` nodes or more, at least ``_CLASS_SHARE``
    (two in five: Naev names 11 of its 24 factions so, the others by peoples "Dvaered", "Sirius"). Places, companies,
    bands and other kinds English names bare are never such kinds (``_PLACE_OR_NO_KINDS``)."""
    # judged on the name shown, not an id ("Q100" labelled "Empire")
    return _kinds_by_share(kg, "_class_kinds", lambda n: _english_count_phrase(node_display(kg, n)),
                           _CLASS_MIN_NODES, _CLASS_SHARE)


def _kinds_by_share(kg: KnowledgeGraph, memo: str, holds: Callable[[str], bool], min_nodes: int, share: Fraction,
                    among: frozenset[str] | None = None) -> frozenset[str]:
    """The kinds of the graph (``among`` only, when given) of ``min_nodes`` nodes or more, ``holds`` true of at least
    ``share`` of them: decided once a graph, kept on it under ``memo``."""
    hit = kg.__dict__.get(memo)
    if hit is None:
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for n in kg.nodes():
            kind = (node_type_noun(kg, n) or "").lower()
            if kind and (among is None or kind in among):
                counts[kind][0] += 1
                counts[kind][1] += bool(holds(n))
        hit = kg.__dict__[memo] = frozenset(k for k, (n, a) in counts.items() if n >= min_nodes and a >= share * n)
    return hit


def class_name_takes_the(kg: KnowledgeGraph, name: str, shown: str) -> bool:
    """Whether a node's shown name takes "the" because English reads it as a common noun: a body's initialism ("an
    enemy of the FLF"), or English words headed by a count noun naming one of a kind whose names mostly are such
    words ("an enemy of the Empire", "the Wanted Pirate"; a place called "Reading" or a company called "Apple" is one
    of many names that are not), or a species' common name where the graph names its species so
    (``_common_named_species``). Not a category a column names ("whose class is Bomber"), nor people, works, states,
    ideas or taxa' scientific names."""
    if _common_named_species(kg, name, shown):
        return True
    kind = (node_type_noun(kg, name) or "").lower()
    if not kind or person_kind(kind) or _work_kind(kind) or state_kind(kind) or abstract_kind(kind) or \
            kind in _PROPER_KINDS or kind.split()[-1] in _CATEGORY_HEADS | _PLACE_OR_NO_KINDS or \
            column_value(kg, name):
        return False
    if _initialism(shown):
        return kind.split()[-1] in _BODY_KINDS
    if _count_head(shown) and kind in _line_kinds(kg):
        return True  # "included in the TIE Punisher Expansion Pack", "both the Core Set and ..."
    return _english_count_phrase(shown, listed=True) and kind in _class_kinds(kg)


def _count_head(shown: str) -> str | None:
    """The last word of a name of two words or more when it is a capitalised singular count noun English says
    "the" before ("Expansion Pack", "Core Set"), lower case; None for a place's head ("Street", "Park", "Airport"),
    which English names bare, a mass noun ("Methionine Metabolism"), and a name that opens with its own
    determiner or lists parts with commas."""
    words = strip_disambiguator(shown).split()
    if len(words) < 2 or words[0].lower() in _DETERMINERS or not re.fullmatch(r"[A-Z][a-z]+", words[-1]) or \
            "," in shown:
        return None  # "Inspection of Diaphragm, External Approach": a description's parts, no product's name
    head = words[-1].lower()
    plurals = lemminflect.getAllInflections(head, upos="NOUN").get("NNS", ())
    countable = "NOUN" in lemminflect.getAllLemmas(head) and any(p != head for p in plurals)  # "packs", "sets"
    return head if countable and not mass_noun(head) and head not in _PLACE_HEADS | _BARE_HEADS else None


#: Heads of names English says bare though they are count nouns: "Helsinki Airport", "Monterey Bay", "Crater Lake".
_BARE_HEADS = frozenset({"airport", "airfield", "station", "terminal", "bay", "lake", "mountain", "mount", "peak",
                         "island", "isle", "beach", "port", "harbour", "harbor", "falls", "creek", "brook"})


def _line_kinds(kg: KnowledgeGraph) -> frozenset[str]:
    """The kinds that name their nodes as a product line does, by a shared head noun: of ``_CLASS_MIN_NODES`` nodes or
    more, half end in the same count noun ("A-wing Expansion Pack", "Ghost Expansion Pack"), so every name of the
    kind that ends in a count noun is a description said with "the" ("the Core Set" too)."""
    hit = kg.__dict__.get("_line_kinds")
    if hit is None:
        heads: dict[str, Counter[str]] = defaultdict(Counter)
        sizes: Counter[str] = Counter()
        for n in kg.nodes():
            kind = (node_type_noun(kg, n) or "").lower()
            sizes[kind] += 1
            head = _count_head(node_display(kg, n))
            if head is not None:
                heads[kind][head] += 1
        hit = kg.__dict__["_line_kinds"] = frozenset(
            k for k, c in heads.items() if sizes[k] >= _CLASS_MIN_NODES and 2 * c.most_common(1)[0][1] >= sizes[k])
    return hit


def _common_named_species(kg: KnowledgeGraph, name: str, shown: str) -> bool:
    """Whether ``shown`` is a species' English common name in a graph that names its species so: a third or more of
    the kind's names (ten or more) are common names with an English head (``_species_common_name``: "the Black
    Bittern"), and this one is written as they are, capitalised words, though its head is no word a list knows
    ("the Coal Tit", "the Three-banded Rosefinch", "the Omao"): every species of the graph is said alike. A
    binomial ("Periparus ater") is no common name."""
    kind = (node_type_noun(kg, name) or "").lower()
    words = shown.split()
    if kind.split()[-1:] not in (["species"], ["subspecies"]) or not words or not all(
            w[:1].isupper() or w in ("and", "of") or ("-" in w and w[:1].isalpha()) for w in words):
        return False
    if any(not re.fullmatch(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", w) or re.search(r"['’]s$", w) for w in words):
        return False  # "Pallas's Sandgrouse" opens with a possessive; a number or a code is no common name
    # a third: many English names end in a word no list knows ("Cisticola", "Longclaw"); binomials never count
    common = _kinds_by_share(kg, "_common_named_species", lambda n: _species_common_name(
        strip_disambiguator(n).split(), node_type_noun(kg, n)), 10, Fraction(1, 3))
    return kind in common


def _event_participle(word: str) -> bool:
    """Whether ``word`` is a verb's past participle and nothing else ("abolished", "merged", "proposed"; not
    "protected" or "registered", adjectives too, nor "census")."""
    low = word.lower()
    return low.endswith("ed") and set(lemminflect.getAllLemmas(low)) == {"VERB"}


def question_name(kg: KnowledgeGraph, name: str) -> str:
    """How the question writes a node's name: an identifier's readable form, without a trailing disambiguator
    ("Jurassic Park (novel)" -> "Jurassic Park"; the checks take either form) unless another node of the graph reads
    the same without its own ("Plymouth Municipal (NH12)" and "Plymouth Municipal (1B9)" keep theirs) or the tag
    names a node it is linked to ("3-CH (Hydrabeam 1000 RGBW)", a mode of that fixture), and with an
    article a catalogue moved to the end put back ("Shining, The" -> "The Shining"); anything else as it is."""
    shown = node_display(kg, name)
    bare = strip_disambiguator(shown)
    if bare == shown and bare.casefold() in _bare_names(kg):
        kind = _kind_apart(kg, name, bare)
        if kind:  # "Han Solo (upgrade)" beside "Han Solo (YT-1300, Rebel Alliance)", a pilot
            return f"{registry_place_name(kg, name, shown) or shown} ({kind})"
    if bare.strip() and bare != shown and (bare.casefold() in _bare_names(kg) or
                                           _tag_names_a_neighbour(kg, name, shown[len(bare):])):
        tail = shown[len(bare):].strip()[1:-1].strip()
        # a disambiguator that is the node's kind is said as one: "Renfrew (census division)" -> "Renfrew census
        # division"; any other stays as written ("Plymouth Municipal (NH12)")
        kind = (node_type_noun(kg, name) or "").casefold()
        # a column's value is said after its column ("whose duration is 24 hours"): the label names the kind, and
        # the writer's tag would say it twice ("24 hours (duration)")
        if not (tail.casefold() == kind and column_value(kg, name)):
            # (a kind that opens with a capital is no common noun after a name: "Delaware (American state)"; nor one
            # that opens with a participle, an event's: "Chanuman (abolished district)", not "the Chanuman abolished
            # district")
            bare = f"{bare} {tail}" if tail.casefold() == kind and len(kind.split()) >= 2 and tail[:1].islower() \
                and not _event_participle(kind.split()[0]) else shown
    bare = bare if bare.strip() else shown
    first = bare.split()[0].lower()
    if _sentence_cased_value(kg, name, bare, first):
        # a column's value a table writes in sentence case is a phrase, said in lower case mid-sentence ("whose
        # duration is until dispelled", "up to 24 hours", "whose colour is greenish-blue"); a one-word value may be
        # a name ("Nice") and stays, unless the graph writes that word in lower case too ("Vitreous" beside
        # "adamantine to vitreous")
        bare = bare[0].lower() + bare[1:]
    m = _INVERTED.fullmatch(bare)
    if m:
        return f"{m['article']} {m['rest']}{m['tail'] or ''}"
    kind = (node_type_noun(kg, name) or "").lower()
    if kind in _PEOPLE_KINDS and _DEMONYM.fullmatch(bare) and kind in _demonym_kinds(kg):
        # a people named by its adjective, as a game's or a census's table names it ("Indian", "British"): English
        # says "the Indian nation", not "a leader of Indian"
        return f"{bare} {kind}"
    m = _SURNAME_FIRST.fullmatch(bare)
    if m and person_kind(node_type_noun(kg, name)):  # a catalogue's "Hamilton, Richard" is Richard Hamilton
        return f"{m['given']} {m['surname']}"
    return registry_place_name(kg, name, bare) or bare  # a gazetteer's "SOCIO CUE" is the place Socio Cue


def registry_capitals(kg: KnowledgeGraph, name: str) -> bool:
    """Whether ``name`` is written in capitals where nine in ten of its kind's names (ten or more) are: the
    registry's way of writing every name ("SOCIO CUE" among "SAN JUAN NEUMANN", "CERRO PYTA"), so a short one is the
    registry's capitals too, not an acronym; an acronym among names written with small letters ("NATO" beside
    "France") is not."""
    if not _in_capitals(strip_disambiguator(name).strip()):
        return False
    kinds = _kinds_by_share(kg, "_registry_kinds", lambda n: _in_capitals(strip_disambiguator(n).strip()), 10,
                            Fraction(9, 10))
    return (node_type_noun(kg, name) or "").lower() in kinds


def registry_place_name(kg: KnowledgeGraph, name: str, shown: str | None = None) -> str | None:
    """A place a gazetteer wrote in capitals (``registry_capitals``), as the place is written: "SOCIO CUE", a city, ->
    "Socio Cue" (``registry_title`` of ``shown``, the node's name without its tag by default). Only places, and only
    names of words: a kind of codes is written in capitals too (gene symbols "KAR4", port codes "ISVES", a market's
    "CBOE EU DXE OFF BOOK"), and no casing makes those names. None where the name is not such a place's."""
    bare = strip_disambiguator(name).strip()
    if any(ch.isdigit() for ch in bare) or not registry_capitals(kg, name):
        return None
    if kind_head(node_type_noun(kg, name)) not in PLACE_KINDS:
        return None
    return registry_title(bare if shown is None else shown)


def kind_head(kind: str | None) -> str:
    """A kind's head noun, lower case ("" for none): its last word, or the word before its of-phrase ("district"
    of "district of India", "state of India"), past a prefix joined by a hyphen ("county" of "sub-county")."""
    words = (kind or "").lower().split()
    if "of" in words[1:-1]:
        words = words[:words.index("of", 1)]
    return words[-1].rsplit("-", 1)[-1] if words else ""


#: Heads of the kinds of places a gazetteer lists (and whose names it may write in capitals), the levels of a country's
#: divisions and the words English uses of any stretch of land.
PLACE_KINDS = frozenset({"city", "town", "village", "district", "locality", "neighbourhood", "neighborhood",
                         "department", "municipality", "commune", "ward", "region", "province", "county", "parish",
                         "state", "settlement", "place", "hamlet", "barrio", "suburb", "canton", "prefecture",
                         "subdistrict", "regency", "division", "subdivision", "sector", "township", "colony",
                         "governorate", "oblast", "raion", "arrondissement", "subprefecture", "cercle", "chiefdom",
                         "country", "nation", "territory", "dependency", "island", "continent", "subregion", "area",
                         "zone", "location", "land"})


def other_script(text: str) -> str | None:
    """The script ``text`` is written in where none of its letters is Latin ("CJK" for "万安县", "BENGALI",
    "HIRAGANA", "GREEK"): a name an English question cannot show as written. None where a letter is Latin
    ("Tōkyō (東京)") or there is no letter."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters or any(unicodedata.name(ch, "").startswith("LATIN") for ch in letters):
        return None
    return unicodedata.name(letters[0], "UNKNOWN").split()[0]


def _in_capitals(text: str) -> bool:
    """Whether ``text`` has capitals and no small letter: a script without case (Japanese "音羽山", Thai, Arabic)
    is written in no capitals."""
    return any(ch.isupper() for ch in text) and not any(ch.islower() for ch in text)


def registry_title(name: str) -> str | None:
    """A name a registry wrote in capitals, as the place or the body is written: each word capitalised, the
    particles that join a name's words in small letters after the first ("SAN JUAN DE LA CRUZ" -> "San Juan de la
    Cruz"), after an apostrophe or a hyphen as before them ("O'HIGGINS" -> "O'Higgins", "VILLA-ELISA" ->
    "Villa-Elisa"), an ordinal's letters small ("2DA" -> "2da"), a space after an abbreviation's dot ("COL.EDELIRA"
    -> "Col. Edelira"); Roman numerals, initials ("S.A.") and numbers as written; a trailing disambiguator as it
    is, or cased so where it too is in capitals ("BUKESA (KAMPALA CENTRAL)" -> "Bukesa (Kampala Central)"). None
    where a word may be an acronym, which no casing recovers: a word of letters with no vowel ("PJC"), or a name of
    one word of three letters or fewer ("ITA")."""
    bare = strip_disambiguator(name).rstrip()
    tail = name[len(bare):]
    words = re.sub(r"(?<=[^\W\d_]{2})\.(?=[^\W\d_]{2})", ". ", bare).split()
    if not words or (len(words) == 1 and len(re.sub(r"\W", "", words[0])) <= 3):
        return None
    out = []
    for i, word in enumerate(words):
        letters = re.sub(r"[^\w]|\d|_", "", word)
        if letters and not _ROMAN.fullmatch(letters) and not _INITIALS.fullmatch(word) and not _has_vowel(letters):
            return None
        out.append(_registry_word(word, edge=i in (0, len(words) - 1)))
    tag = re.fullmatch(r"(\s*\()([^()]*)(\)\s*)", tail)
    if tag and any(ch.isalpha() for ch in tag[2]) and not any(ch.islower() for ch in tag[2]):
        # the place a tag names, in the registry's capitals too: "Bukesa (KAMPALA CENTRAL)" -> "(Kampala Central)"
        cased = ", ".join(registry_title(part.strip()) or part.strip() for part in tag[2].split(","))
        tail = tag[1] + cased + tag[3]
    return " ".join(out) + tail


def _registry_word(word: str, *, edge: bool) -> str:
    """One word of ``registry_title``; a particle in small letters only inside the name, never first or last ("SAN
    JUAN DE LA CRUZ"; "ORYANG A" and "ZONA A" end in a letter that tells two places apart, no particle)."""
    core = word.strip("()[],;:")
    if _ROMAN.fullmatch(core) or _INITIALS.fullmatch(core) or not any(ch.isalpha() for ch in core):
        return word
    if not edge and core.lower() in NAME_PARTICLES:
        return word.lower()

    def cased(m: re.Match) -> str:
        before = word[m.start() - 1] if m.start() else ""
        if before.isdigit() or (before != "" and before in "'’" and m.end() - m.start() == 1):
            return m[0].lower()  # "2da", "1a.": an ordinal's letters; "Jose's": a possessive's "s"
        return m[0].capitalize()

    # each piece between hyphens, dots and apostrophes opens with a capital: "Villa-Elisa", "O'Higgins"
    return re.sub(r"[^\W\d_]+", cased, word)


def _has_vowel(letters: str) -> bool:
    return any(unicodedata.normalize("NFD", ch)[0] in "AEIOUYaeiouy" for ch in letters)


#: A Roman numeral up to 39 ("II", "XIV"), which a registry's name keeps in capitals.
_ROMAN = re.compile(r"X{0,3}(?:IX|IV|V?I{0,3})(?<=\w)")
#: Initials with their dots ("S.A.", "J.").
_INITIALS = re.compile(r"(?:[^\W\d_]\.)+")


def _kind_apart(kg: KnowledgeGraph, name: str, bare: str) -> str | None:
    """The kind of a node the graph names without a tag where other nodes bear the same name with one ("Han Solo", an
    upgrade card, beside the pilot cards "Han Solo (YT-1300, Rebel Alliance)"), when no other of them is of that
    kind: the question says it, or the reader cannot tell which card is meant. None where the kind tells nothing
    apart, or the graph gives none."""
    kind = node_type_noun(kg, name)
    if not kind or kind == "entity" or column_value(kg, name):
        return None  # a column's value is said after its label, which names its kind: "whose age is 23"
    key = bare.casefold()
    others = [n for n in _bare_names(kg).get(key, ()) if n != name]
    return kind if others and all(node_type_noun(kg, n) != kind for n in others) else None


def _bare_names(kg: KnowledgeGraph) -> dict[str, list[str]]:
    """The graph's nodes by their case-folded name without a trailing tag, for names two nodes or more share; once a
    graph."""
    hit = kg.__dict__.get("_bare_names")
    if hit is None:
        groups: dict[str, list[str]] = defaultdict(list)
        for n in kg.nodes():
            groups[strip_disambiguator(n).casefold()].append(n)
        hit = kg.__dict__["_bare_names"] = {k: v for k, v in groups.items() if len(v) > 1}
    return hit


def _tag_names_a_neighbour(kg: KnowledgeGraph, name: str, tail: str) -> bool:
    """Whether a name's bracketed tag names a node the graph links it to, whose part it is ("3-CH (Hydrabeam 1000
    RGBW)", a mode of that fixture): without it the name is one any fixture's mode could bear ("3-CH"), so the
    question keeps it."""
    tag = tail.strip()[1:-1].strip()
    return bool(tag) and tag in kg and tag != name and kg.has_edge(name, tag)


def _demonym_kinds(kg: KnowledgeGraph) -> frozenset[str]:
    """The kinds of peoples whose names the graph writes as adjectives: of ten nodes or more, three in five end as
    an adjective of a people does ("Indian", "Chinese", "Kurdish", "Iraqi"; Freeciv's nations), where a kind whose
    names are "Scotland" and "Japan" names places (Wikidata's "nation")."""
    return _kinds_by_share(kg, "_demonym_kinds", lambda n: _ADJECTIVE_OF_PEOPLE.search(strip_disambiguator(n).strip()),
                           10, Fraction(3, 5), _PEOPLE_KINDS)


#: How an adjective of a people ends: "Indian", "Chinese", "Kurdish", "Iraqi", "Icelandic", "Dutch", "Cypriot".
_ADJECTIVE_OF_PEOPLE = re.compile(r"(?:an|ese|ish|i|ic|ch|ot)$")
#: Kinds of peoples, whose members a table may name by their adjective ("Indian", "Antiguan and Barbudan").
_PEOPLE_KINDS = frozenset({"nation", "people", "tribe", "ethnic group", "civilization", "civilisation"})
#: One capitalised word, or two joined by "and", not a plural ("the Incas" is said as it is); or capitalised words
#: ending in an adjective of a people ("Volga German", "Lower Sorbian").
_DEMONYM = re.compile(r"[A-Z][\w'’-]*[^\Ws](?: and [A-Z][\w'’-]*[^\Ws])?|"
                      r"(?:[A-Z][\w'’-]* )+[A-Z][\w'’-]*(?:an|ese|ish|ic|i|ch)")


def _sentence_cased_value(kg: KnowledgeGraph, name: str, bare: str, first: str) -> bool:
    """Whether ``bare``, a node's shown name, is a column's value a table wrote in sentence case (``question_name``)."""
    if not column_value(kg, name) or _name_word_cases(kg).get(first) == "upper":
        return False
    if (node_type_noun(kg, name) or "").lower() in _PROPER_KINDS:
        return False  # a taxon's or a person's name is written as it is: "Gallus gallus", "Glycine max"
    if _SENTENCE_CASE.fullmatch(bare):
        # every word English: a title in another language keeps its capital ("Revue suisse d'histoire")
        return all(w in PREPOSITIONS or w in _MINOR or english_word(w)
                   for w in re.findall(r"[^\W\d_]+", bare.lower()))
    if not _SENTENCE_TOKEN.fullmatch(bare):
        return False
    parts = bare.lower().split("-")
    # one word: "Greenish-blue", "Near-colourless" (words joined by hyphens), or a word the graph writes in lower
    # case elsewhere ("Vitreous")
    return all(english_word(p) for p in parts) and (len(parts) > 1 or _name_word_cases(kg).get(first) == "lower")


#: One capitalised word, or capitalised words joined by hyphens to lower-case ones ("Vitreous", "Greenish-blue").
_SENTENCE_TOKEN = re.compile(r"[A-Z][a-z]+(?:-[a-z]+)*")

#: A phrase in sentence case: a capitalised first word and lower-case words or numbers after it ("Until dispelled").
_SENTENCE_CASE = re.compile(r"[A-Z][a-z]+(?: (?:[a-z][a-z'’-]*|\d[\d.,]*))+")

_INVERTED = re.compile(r"(?P<rest>.+?), (?P<article>The|A|An)(?P<tail> \([^()]*\))?")
_SURNAME_FIRST = re.compile(r"(?P<surname>[A-Z][\w'’-]+(?: [a-z]{1,3} [A-Z][\w'’-]+)?), "
                            r"(?!(?:Sr|Jr|Snr|Jnr)\.?(?: |$)|(?:II|III|IV)(?: |$))"  # "Jacob, Sr. Fox", "Smith, Jr.": a suffix
                            r"(?P<given>[A-Z][\w.'’-]*(?: [A-Z][\w.'’-]*){0,3})")


def strip_disambiguator(shown: str) -> str:
    """``shown`` without a trailing bracketed disambiguator ("Hurricane Bob (1985)" -> "Hurricane Bob")."""
    return re.sub(r"\s*\([^()]*\)$", "", shown)


def coordinates(name: str) -> bool:
    """Whether ``name`` is a point's coordinates ("28.65638, 121.42076", "Point(121.4 28.6)", "41°13′26″N 8°41′56″W"):
    a list's point for a place that covers an area, one of many figures as right, so never an answer."""
    t = name.strip()
    return bool(_WKT_POINT.fullmatch(t) or any(p.fullmatch(x) for p in (_DECIMAL_POINT, _DMS_POINT)
                                               for x in (t, strip_disambiguator(t))))


_DECIMAL_POINT = re.compile(r"[-+]?\d{1,3}\.\d+\s*[,;/ ]\s*[-+]?\d{1,3}\.\d+")
_WKT_POINT = re.compile(r"(?i)point\s*\(\s*[-+]?\d+(?:\.\d+)?\s+[-+]?\d+(?:\.\d+)?\s*\)")
_DMS_POINT = re.compile(r"\d{1,3}°(?:\s*\d{1,2}['′])?(?:\s*\d{1,2}(?:\.\d+)?[\"″])?\s*[NS],?\s*"
                        r"\d{1,3}°(?:\s*\d{1,2}['′])?(?:\s*\d{1,2}(?:\.\d+)?[\"″])?\s*[EW]")


#: A bare year ("1934") and a bare number ("12345", "3.5", "1,200").
YEAR = re.compile(r"1\d{3}|20\d{2}")
NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")


def bare_number(name: str) -> bool:
    """Whether a name is a bare number other than a year ("12345", "3.5", "1,200", "10 (cores)"): a table's
    measurement without its unit or date (a population, an area, a price), or a number standing for a name (a
    socket "3647")."""
    t = strip_disambiguator(name.strip())
    if _NUMBER_RANGE.fullmatch(t):
        return True  # a range of them ("7.0-7.5", a hardness) measures no more than one does
    return bool(NUMBER.fullmatch(t)) and not YEAR.fullmatch(t)


#: Two bare numbers joined as a range ("7.0-7.5", "2.0 – 3.0"); years joined so ("1914-1918") are dates.
_NUMBER_RANGE = re.compile(r"\d+(?:[.,]\d+)?\s*[-–]\s*\d+(?:[.,]\d+)?(?<!\d{4}[-–]\d{4})")


# -- what the text gates mask ---------------------------------------------------------------------------------------
def gate_names(kg: KnowledgeGraph, nodes: Iterable[str]) -> list[str]:
    """What the text gates blank out of a question over ``nodes`` (a path and its answer) before judging its
    shape and language: every node's name and display form, and the graph's class names for them as the graph
    writes them (a type column such as "clinical_drug", a type edge's object) with their display forms. These
    are the graph's own words, not markup, whatever symbols they hold."""
    out: list[str] = []
    for n in dict.fromkeys(nodes):
        if not n or not n.strip():
            continue
        out += [n, node_display(kg, n)]
        if n not in kg:
            continue
        classes = [kg.entity(n).type, *_out_edges(kg, n, TYPE_RELATIONS)]
        for c in classes:
            if c and c != UNKNOWN_TYPE and is_identifier(c, vocabulary=True):
                out += [c, display_name(c, vocabulary=True)]
    return display_forms(out)



# -- articles -------------------------------------------------------------------------------------------------------

_ARTICLE_FILE = Path(__file__).with_name("names.yaml")


_SECTIONS = ("heads", "of_heads", "types", "people", "of_names", "substance_kinds", "symbol_kinds", "generic")


@lru_cache(maxsize=1)
def _name_rules() -> dict[str, frozenset[str]]:
    """The sections of ``names.yaml``, each a set of lower-case words."""
    data = yaml.safe_load(_ARTICLE_FILE.read_text(encoding="utf-8")) or {}
    unknown = set(data) - set(_SECTIONS)
    if unknown:
        raise InputError(f"{_ARTICLE_FILE.name}: unknown section(s) {', '.join(sorted(unknown))}; the sections are "
                         + ", ".join(_SECTIONS))
    return {k: frozenset(str(w).strip().lower() for w in data.get(k) or ()) for k in _SECTIONS}


def _article_rules() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """``(heads, of_heads, types)`` of ``names.yaml``."""
    rules = _name_rules()
    return rules["heads"], rules["of_heads"], rules["types"]


def generic_name_words() -> frozenset[str]:
    """Words that may appear in a name yet say nothing about which entity it is: ``names.yaml``'s ``generic``
    section and its ``heads`` (lower case)."""
    rules = _name_rules()
    return rules["generic"] | rules["heads"]


def of_name_noun(noun: str) -> bool:
    """Whether "the <noun> of <Name>" names the thing itself ("the city of Rome", "the state of Ohio"):
    ``names.yaml``'s ``of_names``. A relation read so is said with the possessive when its known end is a name."""
    return noun.strip().lower() in _name_rules()["of_names"]


def name_says_kind(name: str) -> bool:
    """Whether a name says what kind of thing it names: its last word, or that of its bracketed disambiguator, is an
    English noun in the singular ("Frutillar Airport", "Kent County", "Santa Fe (administrative region)"; not
    "Pembroke Pines"). Such a name after "the
    <noun> of" cannot be read as the noun's own name ("the country of Frutillar Airport"), a bare one can ("the state
    of Rockford")."""
    m = re.search(r"\(([^()]*)\)\s*$", name)
    words = re.findall(r"[A-Za-z]+", m.group(1) if m else name)
    if not words:
        return False
    last = words[-1].lower()
    nouns = lemminflect.getAllLemmas(last).get("NOUN", ())
    # a kind is said in the singular ("Airport", "County"); a plural closes a name ("Pembroke Pines", "Niagara Falls")
    return last in _name_rules()["of_names"] or (last in nouns and _plain_english(last))


def _words_key(name: str) -> str:
    return " ".join(strip_disambiguator(name.removeprefix("the ")).casefold().split())


def name_carries(name: str, other: str) -> bool:
    """Whether ``name`` says ``other`` as a whole phrase: as a disambiguating tail ("Arlington (Texas)" carries
    "Texas"; "Eastern, Kenya" carries "Kenya"), as a part ("Schalke 04 v Hamburger SV" carries "Schalke 04") or whole
    (a coordinate system named as its datum). A question that shows ``name`` gives ``other`` away."""
    shown = " ".join(name.removeprefix("the ").casefold().split())
    o = _words_key(other)
    if len(o) == 1:  # one capital ("H", an element): a token of its own, in its case ("OH + C2H2 <=> H + CH2CO")
        letter = strip_disambiguator(other.removeprefix("the ")).strip()
        return letter.isupper() and re.search(rf"(?<![\w'’.-]){re.escape(letter)}(?![\w'’.-])", name) is not None
    return len(o) >= 2 and next(_phrase_starts(o, shown), None) is not None


def _phrase_starts(phrase: str, text: str) -> Iterator[int]:
    """Where ``phrase`` stands in ``text`` as a whole phrase, not inside a word (no word character, apostrophe or
    hyphen just before or after it), left to right and not overlapping: what the pattern
    ``(?<![\w'’-])<phrase>(?![\w'’-])`` finds, without compiling one pattern per name (a graph's names are asked
    about thousands of times, and compiling each costs more than the search)."""
    size, at = len(phrase), text.find(phrase)
    while at >= 0:
        end = at + size
        if (at == 0 or not _in_word(text[at - 1])) and (end == len(text) or not _in_word(text[end])):
            yield at
            at = text.find(phrase, end)
        else:
            at = text.find(phrase, at + 1)


def _in_word(ch: str) -> bool:
    return ch.isalnum() or ch in "_'’-"


#: Words that join names into a name built of them ("Schalke 04 v Hamburger SV", "Simon & Garfunkel").
_JOINERS = frozenset({"v", "v.", "vs", "vs.", "versus", "and", "&", "-", "–", "—", "/", ",", "the", "of", "at"})


def name_made_of(name: str, parts: Iterable[str]) -> bool:
    """Whether ``name`` is nothing but ``parts`` (names a question shows) and joining words: a game named
    "Schalke 04 v Karlsruher SC" asked for by its two clubs is read off the question."""
    rest = f" {_words_key(name)} "
    found = False
    for p in sorted({_words_key(p) for p in parts}, key=len, reverse=True):
        if len(p) < 2:
            continue
        starts = list(_phrase_starts(p, rest))
        for at in reversed(starts):
            rest = f"{rest[:at]} {rest[at + len(p):]}"
        found = found or bool(starts)
    return found and all(w in _JOINERS for w in rest.split())


#: A name of two sides: a game or a court case ("Schalke 04 v Hamburger SV", "Roe v. Wade").
_VERSUS = re.compile(r"\S\s+(?:v|vs|versus)\.?\s+\S", re.IGNORECASE)


def versus_name(name: str) -> bool:
    """Whether ``name`` names a game or a case by its two sides ("Schalke 04 v Hamburger SV", "Roe v. Wade"): read
    bare after "of" it reads as the first side ("the home team of Schalke 04 ..."), so running text says its kind
    before it ("the football match Schalke 04 v Hamburger SV")."""
    return _VERSUS.search(name) is not None


_PERSON_NOUNS_FILE = Path(__file__).with_name("person_nouns.txt")


def _person_nouns() -> frozenset[str]:
    return word_list(_PERSON_NOUNS_FILE.name)


#: Kinds whose nodes are pieces of language: a question mentions them ('the word "wege"'), it does not use them.
_MENTION_KINDS = frozenset({"word", "term", "lemma", "headword", "phrase", "idiom", "surname", "given name",
                            "first name", "suffix", "prefix", "affix", "tag", "hashtag", "keyword"})


def symbol_kind(noun: str | None) -> bool:
    """Whether a kind's members are named by symbols that look like codes (``names.yaml`` ``symbol_kinds``: a gene's
    or a protein's official symbol, "TP53", is its name), by the kind's last word."""
    words = (noun or "").strip().lower().split()
    return bool(words) and words[-1] in _name_rules()["symbol_kinds"]


def mention_kind(noun: str | None) -> bool:
    """Whether a kind's nodes are words or phrases themselves (``_MENTION_KINDS``; "English word" by its head)."""
    words = (noun or "").strip().lower().split()
    return bool(words) and (words[-1] in _MENTION_KINDS or " ".join(words[-2:]) in _MENTION_KINDS)


#: Words that open a relation's phrase, not a name ("has manifestation", "is input of").
_PHRASE_OPENERS = frozenset("has have had is are was were can may does do".split())


def phrase_name(name: str) -> bool:
    """Whether a name in lower case reads as a relation's phrase, not a name: it ends in a preposition ("member of",
    "target for", "contribution from") or opens with a verb of being or having ("has manifestation", "is input
    of"), or a participle with its preposition ("related to at instance level"). In running text such a name is
    read as part of the sentence ("the subset that member of is in"), so a question mentions it."""
    words = name.split()
    if len(words) < 2 or not name.islower() or not all(re.fullmatch(r"[a-z][a-z'-]*", w) for w in words):
        return False
    # ... or a participle with its preposition ("related to at instance level", "located in")
    return words[-1] in PREPOSITIONS or words[0] in _PHRASE_OPENERS or (
        words[0].endswith("ed") and words[1] in PREPOSITIONS)


def coordinated_name(name: str) -> bool:
    """Whether a name of four words or more joins words with "and" or "or", or one of three or more with commas, and
    is written as a description is, in lower case after its first word ("Neurodevelopmental disorder and structural
    brain anomalies with or without seizures", "HYLS1 centriolar and ciliogenesis associated", "Ceroid
    lipofuscinosis, neuronal, 7"): in a question that joins its own clauses with "and" and commas, the reader cannot
    tell where such a name ends, so it is mentioned in quotes. Names in title case ("Saint Kitts and Nevis", "Bosnia
    and Herzegovina", "Arlington, Virginia") read as names and are not."""
    words = name.split()
    joined = len(words) >= 4 and any(w in ("and", "or") for w in words[1:-1])
    if not joined and not (len(words) >= 3 and any(w.endswith(",") for w in words[:-1])):
        return False
    content = [w for w in words[1:] if w not in _FUNCTION_WORDS and w[:1].isalpha()]
    return bool(content) and 2 * sum(w[:1].islower() for w in content) > len(content)


#: Heads of kinds whose column values are names of other things ("common name", "nickname"): a question mentions them.
_NAME_HEADS = frozenset({"name", "nickname", "alias", "synonym"})


def name_kind(noun: str | None) -> bool:
    """Whether a kind's head says its nodes are names of other things ("common name", "alias")."""
    words = (noun or "").strip().lower().split()
    return bool(words) and words[-1] in _NAME_HEADS


def _head_listed(words: list[str], table: str) -> bool:
    """Whether the last of ``words`` (lower case), or its singular, is in one of the WordNet tables."""
    return bool(words) and (words[-1] in word_list(table) or _singular(words[-1]) in word_list(table))


#: Heads of a kind that is a version of what the word before them names ("aircraft variant", "engine model").
_VERSION_HEADS = frozenset({"variant", "model", "version", "edition"})


@lru_cache(maxsize=4096)
def device_kind(noun: str | None) -> bool:
    """Whether a kind noun names devices or vehicles (``device_nouns.txt``: WordNet 3.0 nouns whose first sense is
    an instrumentality: "aircraft", "engine", "locomotive"), or a version of one ("aircraft variant"). English
    gives such a thing's name the article: "the A321-272N", "the Trent 892", "the Saturn V"."""
    words = (noun or "").strip().lower().split()
    if len(words) >= 2 and words[-1] in _VERSION_HEADS:
        words = words[:-1]
    if _head_listed(words, "device_nouns.txt"):
        return True
    # a head WordNet lacks that English derives from a device noun with a prefix: "subsystem", "microcontroller"
    return bool(words) and any(core in word_list("device_nouns.txt") for core in derived_cores(_singular(words[-1])))


#: Device nouns that, with a word before them, name software or a scheme as often as a machine ("browser engine",
#: "operating system", "writing system"); "tool" and "system" alone are most often programs in data (MISP's tools,
#: Nmap's systems).
_SOFT_DEVICE_HEADS = frozenset({"system", "engine", "subsystem"})
#: Words before such a head that make it a machine again ("weapon system", "rocket engine").
_MACHINE_MODIFIERS = frozenset({"weapon", "weapons", "propulsion", "aircraft", "rocket", "jet", "steam", "diesel",
                                "missile", "defense", "defence", "radar", "braking", "fuel", "piston", "marine"})


def _software_kind(noun: str | None) -> bool:
    """Whether a device noun's kind names programs or schemes, whose members are named bare ("uses GOST", "runs
    Android", "written in Latin"; not "the Trent 892", an engine, or "the Patriot", a weapon system)."""
    words = (noun or "").strip().lower().split()
    if len(words) >= 2 and words[-1] in _VERSION_HEADS:
        words = words[:-1]  # "operating system version": a release of an operating system
    return words in (["tool"], ["software", "tool"], ["system"]) or (
        len(words) >= 2 and words[-1] in _SOFT_DEVICE_HEADS and words[-2] not in _MACHINE_MODIFIERS)


@lru_cache(maxsize=4096)
def abstract_kind(noun: str | None) -> bool:
    """Whether a kind noun names categories of ideas, acts or qualities (``abstract_nouns.txt``, WordNet 3.0: "music
    genre", "sport", "style"), whose members are named bare."""
    words = (noun or "").strip().lower().split()
    if " ".join(words) in _LIGHTRAG_KINDS:
        return False  # LightRAG's coarse types ("concept", "method") say nothing of how the things are named
    return _head_listed(words, "abstract_nouns.txt")


_LIGHTRAG_KINDS = frozenset(v for v in LIGHTRAG_TYPES.values() if v)


@lru_cache(maxsize=4096)
def state_kind(noun: str | None) -> bool:
    """Whether a kind noun names states such as diseases (``state_nouns.txt``, WordNet 3.0's noun.state: "disease",
    "condition", "disorder"; "disease or condition" by its first word): their names are common nouns ("asthma")."""
    words = (noun or "").strip().lower().split()
    return bool(words) and any(w in word_list("state_nouns.txt") for w in (words[0], words[-1]))


@lru_cache(maxsize=4096)
def may_name_people(noun: str | None) -> bool:
    """Whether a kind noun can name people, so that a relation saying its node is a person may make it "who": no
    kind, a word English does not know as a noun ("entity", a table's name), or a noun with a sense that names
    people (``person_nouns.txt``, WordNet's noun.person: "entrant", "character"). "weakness" or "city" never does,
    whatever relation a table gives it ("child of": a weakness is no child)."""
    words = (noun or "").strip().lower().split()
    if not words or words == ["entity"]:
        return True
    head = words[-1]
    one = _singular(head)
    if head in _person_nouns() or one in _person_nouns():
        return True
    if "NOUN" not in lemminflect.getAllLemmas(head):
        # a word derived from a noun with a prefix ("subcategory", "subsection") is judged by that noun: a category
        # names no people ("the subcategory who is a parent of X" read a code's class as a person)
        cores = [c for c in derived_cores(one) if "NOUN" in lemminflect.getAllLemmas(c)]
        return not cores or any(may_name_people(c) for c in cores)
    return False


@lru_cache(maxsize=4096)
def person_kind(noun: str | None) -> bool:
    """Whether a kind noun names people, so that a question asks for one with "Who" and describes one with "who":
    "person"; a noun the shipped lexicon says is a person ("author", "director", "actor": its ``is``); or one whose
    last word is a person noun of ``names.yaml`` ("baker", "player", "contestant", "character"), singular or plural
    ("bakers", "film director", "les miserables character"), or a noun every sense of which in WordNet names people
    (``people_nouns.txt``: "shopkeeper"; "server" also names a machine, "monster" a creature)."""
    if not noun:
        return False
    words = noun.strip().lower().split()
    if not words:
        return False
    if words == ["person"]:
        return True
    from tasks.meaning.lexicon import load_lexicon

    lexicon = load_lexicon()
    people = _name_rules()["people"]
    for phrase in (" ".join(words), words[-1], _singular(words[-1])):
        entry = lexicon.noun(phrase)
        if (entry is not None and entry.is_ == "person") or phrase in people:
            return True
    # a noun every sense of which names people ("shopkeeper", "blacksmith"; not "server", "monster" or "worker")
    return words[-1] in word_list("people_nouns.txt") or _singular(words[-1]) in word_list("people_nouns.txt")


#: An ordinal ("10th", "1st") or a year ("1934") opening a name: it names one edition of a recurring thing.
_EDITION = re.compile(r"\d{1,3}(?:st|nd|rd|th)|1\d{3}|20\d{2}")
#: Era markers after a year ("1926 CE"): a date, not an edition of something.
_ERAS = frozenset({"CE", "BCE", "AD", "BC", "A.D.", "B.C."})
_ORDINAL_WORDS = frozenset("First Second Third Fourth Fifth Sixth Seventh Eighth Ninth Tenth".split())
_POSSESSIVE = re.compile(r"(?:men|women|boys|girls|children|people|ladies|gentlemen)['’]s|(?:boys|girls|ladies)['’]",
                         re.IGNORECASE)


def _head_word(words: list[str]) -> str:
    """The head of a noun phrase: the last word before an "of" phrase ("germ theory of disease" -> "theory")."""
    before = words[:words.index("of")] if "of" in words[1:] else words
    return before[-1] if before else ""


def _species_common_name(words: list[str], type_noun: str | None) -> bool:
    """Whether a species' name is its English common name, a common noun in capitals that running text says with
    "the" ("the Black Bittern", "the Emu"): its kind is a species and its last word an English count noun; a binomial
    ("Ixobrychus flavicollis") has no English head."""
    return bool(words) and words[0][:1].isupper() and \
        (type_noun or "").strip().lower().split()[-1:] in (["species"], ["subspecies"]) and \
        _count_noun(words[-1].lower()) and all(w[:1].isupper() or w in ("and", "of") or "-" in w for w in words)


@lru_cache(maxsize=4096)
def _count_noun(word: str) -> bool:
    """Whether ``word`` is a singular noun English only counts ("hedgehog", "hour"; not "maize", "rice" or "water",
    which lemminflect's corpus also uses as their own plural, nor a word it does not know as a noun)."""
    if not word.isalpha():
        return False
    plurals = lemminflect.getAllInflections(word, upos="NOUN").get("NNS")
    return bool(plurals) and word not in plurals and word in lemminflect.getAllLemmas(word).get("NOUN", ())


def name_takes_article(name: str, type_noun: str | None = None) -> bool:
    """Whether running text writes ``name`` with "the", by the rules of ``names.yaml``: its last word heads such names
    ("United Kingdom", "Premier League"), it is "<Head> of <...>" with a common noun as head ("Battle of Actium"), its
    type takes "the" ("Nile", a river), an ordinal or a year opens it before a capitalised word (one edition of a
    recurring event: "the 10th Academy Awards", "the 1934 World Series"), or it is a team's name ending in a plural
    ("the Milwaukee Braves": a team, club or franchise named by its members). A name starting with an article, or in
    lower case (a kind of thing) takes "the" when its head is a noun English only counts ("the desert hedgehog",
    "the hour", "the double helix"; "maize" and "glutamate" stay bare)."""
    words = name.split()
    if state_kind(type_noun):
        return False  # a disease's or a condition's class name is a common noun: "has deviated nasal septum as a ..."
    if _work_kind(type_noun):
        return False  # a title is written as it is: "Broken English", "System of a Down" (an album), "Heart Attack"
    if (type_noun or "").lower().split()[-1:] in (["station"], ["stop"], ["halt"]):
        return False  # a station is named bare whatever its last word: "Eastern Pkwy-Brooklyn Museum", "Penn Station"
    if len(words) >= 2 and _EDITION.fullmatch(words[0]) and words[1][:1].isupper() and words[1] not in _ERAS:
        return True  # an edition of a recurring thing: "the 10th Academy Awards", "the 1934 World Series"
    if len(words) >= 2 and words[0] in _ORDINAL_WORDS and words[1][:1].isupper() and \
            "NOUN" in lemminflect.getAllLemmas(words[1].lower()):
        return True  # a role named by its place in a row: "the Third Guard", "the First Citizen"
    if len(words) >= 2 and _POSSESSIVE.fullmatch(words[0]):
        return True  # an event or a category named for whom it is for: "the men's 100 metres", "the women's singles"
    if len(words) >= 3 and words[1] == "of" and words[0].isalpha() and words[0].islower() and \
            "NOUN" in lemminflect.getAllLemmas(words[0]):
        return True  # a thing named by its kind and what it is of: "the earthquake of 28 June 1992"
    if len(words) >= 3 and words[0].isalpha() and words[0].islower() and words[0] not in NAME_PARTICLES and \
            not person_kind(type_noun) and any(w[:1].isupper() for w in words[2:]):
        # an institution named by its kind, in lower case as its own language writes it, then the place or body it
        # is of: "the tribunal du travail de Liège", "the cour d'appel de Bruxelles" ("de Gaulle Airport", a
        # particle of a surname, does not count)
        return True
    if _common_noun_name(name, words, type_noun):
        return True
    if words and words[0].lower() not in ("the", "a", "an") and (words[0][:1].isupper() or words[0][:1].isdigit()) \
            and device_kind(type_noun) and not _software_kind(type_noun):
        # a machine or a vehicle, or its model: "the A321-272N", "the Trent 892", "the 747-400"; an album, a book
        # (WordNet's objects too) are titles: "Broken English"
        return True
    kind = (type_noun or "").strip()
    if _people_by_members(name, kind) or _species_common_name(words, type_noun):
        return True  # a people named by its members ("the Frisians"), a species by its English name ("the Emu")
    if _description(name, type_noun):
        return True
    if not words or words[0].lower() in ("the", "a", "an") or not words[0][:1].isupper():
        return False
    heads, of_heads, types = _article_rules()
    kind = (type_noun or "").lower()
    if kind in types or kind in _MEASURE_KINDS or (
            " " not in kind and any(core in types for core in derived_cores(kind))):
        return True  # "the Nile" (a river); "the Neogene" (a period), "the Phanerozoic" (an eon; a supereon too)
    if _team_takes_the(words, type_noun):
        return True
    last = words[-2] if len(words) >= 3 and _VERSION.fullmatch(words[-1]) else words[-1]
    if len(words) == 1 and last.lower() in heads and last.isalpha() and not english_word(last.lower()) and (
            not type_noun or (type_noun.lower().split() or [""])[-1] in _PLACE_OR_SIDE):
        # a head that is a country's name alone, no English word: "the Netherlands", "the Philippines", "the Gambia"
        # (an airline called "Emirates" is no place)
        return True
    if len(words) == 1 and re.fullmatch(r"[A-Z][a-z]+(?:ean|ic)", last) and \
            ((type_noun or "").lower().split() or [""])[-1] in ("region", "subregion", "sea", "ocean", "area"):
        # a region named by its adjective: "the Caribbean", "the Mediterranean", "the Baltic", "the Arctic"
        return True
    if len(words) >= 2 and last.lower() in heads:
        # "the United Kingdom", "the Boston Massacre", "the Cloud Billing API v1" (a version after the head);
        # a song called "Heart Attack" is a title
        return True
    before = _head_before_its_complement(words)
    if before is not None and before[:1].isupper() and before.lower() in heads:
        # the head before "of", another preposition or a comma: "the District Court of Guam", "the Institute for
        # Advanced Study", "the Nobel Prize in Physics 1921", "the United States Bankruptcy Court, W.D. Missouri"
        return True
    if len(words) >= 3 and words[1] == "of":
        head = words[0].lower()
        if head in of_heads:
            return True
        return words[0].isalpha() and "NOUN" in lemminflect.getAllLemmas(head)
    return False


def _common_noun_name(name: str, words: list[str], type_noun: str | None) -> bool:
    """Whether a name in lower case is a common noun that takes "the": a kind of thing named by a count noun ("the
    desert hedgehog", "the hour", "the double helix"; a genre or a sport is named bare: "new wave", "hip hop"), or a
    unit of measure ("the property of the microliter", "of the bel watt")."""
    if not words or words[0] in ("the", "a", "an") or not name.islower():
        return False
    if all(w.isalpha() for w in words) and _count_noun(_head_word(words)) and not abstract_kind(type_noun):
        return True
    return (type_noun or "").strip().lower() in _MEASURE_KINDS


#: Kinds of units of measure, whose names running text writes as common nouns, with "the" ("the watt", "the
#: Roentgen"), in lower case or not.
_MEASURE_KINDS = frozenset({"unit", "units", "unit of measure", "unit of measurement", "measurement unit",
                            "base unit", "derived unit"})


def _description(name: str, type_noun: str | None) -> bool:
    """A description ending in its kind's own common noun, or in a count noun in lower case: "the Russian keyboard
    layout", "the HEVC/H.265 video format", "the :optional CSS pseudo-class"."""
    words, kind = name.split(), (type_noun or "").strip()
    return len(words) >= 2 and ((words[0][:1].isupper() and bool(kind) and kind.islower()
                                 and name.endswith(" " + kind)) or
                                (not words[0][:1].islower() and any(c.isupper() for c in "".join(words[:-1]))
                                 and _common_head(words, type_noun)))


def _people_by_members(name: str, kind: str) -> bool:
    """A people's or a tribe's name that is its members in the plural: one word, an adjective of a people in "-an" or a
    noun every sense of which is a person, with an "s" ("Frisians", "Barbarians", "Atlanteans"; not "Wales", "Cyprus",
    "Tunis" or "Louis"); of a kind that holds only peoples, any plural ("the Gauls", "the Ptolemies"). Not of a
    "nation": Wikidata's nations are countries ("Laos")."""
    if re.fullmatch(r"[A-Z][a-z]+s", name) is None:
        return False
    if kind.lower() in _PEOPLES_ONLY:
        return True  # a kind that holds only peoples: "the Gauls", "the Seleucids", "the Ptolemies"
    return kind.lower() in _PEOPLE_KINDS - {"nation"} and (
        name[:-1].endswith("an") or name[:-1].lower() in word_list("people_nouns.txt"))


#: Kinds whose members are peoples and nothing else, named in the plural by their members. Not "people" (a table of
#: persons is called that: "Louis", "James") nor "nation" (Wikidata's nations are countries: "Laos").
_PEOPLES_ONLY = frozenset({"tribe", "civilisation", "civilization", "ethnic group"})


#: Sports whose teams are franchises named by a place or a sponsor and a nickname, written with "the".
_FRANCHISE_SPORTS = frozenset({"baseball", "basketball", "hockey", "softball", "lacrosse"})
#: The abbreviations that mark a sports club's name, which English writes without "the" ("HC Davos", "Färjestad BK").
#: ("SK" is left out: it is as often a sponsor's name, "the SK Wyverns").
_CLUB_MARKS = frozenset({"FC", "CF", "SC", "AC", "BC", "KK", "CB", "BK", "HC", "HK", "CD", "RC", "FK", "SV", "EV",
                         "EC", "HV", "TSV", "VfB", "VfL", "EHC", "IF", "IK", "AIK"})


def _common_head(words: list[str], type_noun: str | None) -> bool:
    """Whether a name is a noun phrase headed by a count noun in the singular, in lower case after a capitalised
    word ("HEVC/H.265 video format", "Bengal tiger"): a description, not a proper name. Not a title or a person's name,
    nor one with a colon ("Background-clip: text"), nor a head English also uses as a mass noun."""
    head = words[-1]
    before = "".join(words[:-1])
    return (re.fullmatch(r"[a-z]+(?:-[a-z]+)?", head) is not None and not re.search(r":\s|[,;]", " ".join(words) + " ")
            and any(c.isupper() for c in before[1:])  # more than a sentence's capital: "Hip hop", "Sulfur dioxide"
            and not any(re.search(r"['’]s?$", w) for w in words)  # "Halley's comet" names one thing
            and not person_kind(type_noun) and not _work_kind(type_noun) and not state_kind(type_noun) and (type_noun or "").lower() not in _PROPER_KINDS
            and _count_noun(head.split("-")[-1]) and head.split("-")[-1] not in NAME_PARTICLES)


def _team_takes_the(words: list[str], type_noun: str | None) -> bool:
    """A team named by its members in the plural: "the Milwaukee Braves", "the Houston Colt .45's", "the San Francisco
    49ers"; a franchise of the leagues that name teams by a sponsor or a city and a nickname, a word of any number:
    "the Miami Heat", "the KT Wiz" ("HC Davos", a club by its mark, and "CSKA Moscow" are bare)."""
    return len(words) >= 2 and (type_noun or "").lower().split()[-1:] in (["team"], ["club"], ["franchise"]) and \
        not any(w.replace(".", "") in _CLUB_MARKS for w in words) and words[0] != "Team" and (
            bool(re.fullmatch(r"[A-Z][\w'’.]*[^sS\W]s|[\w.]*\d's|\d+[a-z]+s", words[-1])) or
            (_franchise_team(type_noun) and english_word(words[-1].lower())))


def _franchise_team(type_noun: str | None) -> bool:
    """Whether the kind is a team of a franchise sport ("baseball team", "ice hockey team"; not "football club")."""
    words = re.findall(r"[a-z]+", (type_noun or "").lower())
    return words[-1:] in (["team"], ["franchise"]) and any(w in _FRANCHISE_SPORTS for w in words)


#: Kinds a country's name stands for: the place, or the side that plays for it.
_PLACE_OR_SIDE = frozenset({"country", "nation", "state", "place", "territory", "location", "region", "archipelago",
                            "team", "side", "entity"})
#: Kinds whose names are titles, written as they are whatever their last word ("Heart Attack", a song).
_WORK_HEADS = frozenset({"song", "single", "album", "record", "film", "movie", "book", "novel", "poem", "play",
                         "painting", "episode", "series", "show", "game", "opera", "symphony", "track", "artwork",
                         "sculpture"})


#: A version after a name's head ("v1", "v1beta1", "v2.3"): "the Cloud Billing API v1".
_VERSION = re.compile(r"v\d+(?:[.\w]*)")


def _work_kind(noun: str | None) -> bool:
    return bool(noun) and noun.lower().split()[-1] in _WORK_HEADS


def _plain_english(word: str) -> bool:
    """A word English knows as written: a lemma or one of its own inflections ("thickened", "ears"; not the Latin
    plural "pneumoniae", which lemminflect folds into "pneumonia")."""
    for lemmas in lemminflect.getAllLemmas(word).values():
        for lemma in lemmas:
            if word == lemma or any(word in forms for forms in lemminflect.getAllInflections(lemma).values()):
                return True
    return False


#: Kinds whose names keep their capital whatever their words: people, taxa (a binomial, "Streptococcus
#: pneumoniae", has its genus capitalised) and viruses, written as the authority writes them ("Aleutian mink disease
#: virus 3").
_PROPER_KINDS = frozenset({"person", "species", "genus", "taxon", "organism", "bacterium", "strain", "subspecies",
                           "virus", "virus species"})
_TITLED_WORD = re.compile(r"[A-Z][a-z]+(?:-[a-z]+)*,?")


#: Heads of compound kinds of units ("census division", "school division") and of bodies ("political party") a name
#: is said with: bare, "Pacific" reads as the ocean and "Republican" or "Democratic-Republican" as an adjective. Not
#: "region" or "district": a graph calls provinces and boroughs that ("AdministrativeRegion"), and "the Gauteng
#: region" would misname a province.
_UNIT_HEADS = frozenset({"division", "party"})


def _unit_head(name: str, type_noun: str | None) -> str | None:
    """The head a unit's name is said with (``in_running_text``), or None: a kind of two words or more ending in
    a ``_UNIT_HEADS`` word, and a name in capitals without it, a comma or an article."""
    kind = (type_noun or "").lower().split()
    t = name.strip()
    if len(kind) < 2 or kind[-1] not in _UNIT_HEADS or not t[:1].isupper() or "," in t:
        return None
    words = re.findall(r"[\w'’-]+", t.lower())  # "Renfrew (census division)" says its kind in its disambiguator
    if kind[-1] in words or words[0] in ("the", "a", "an"):
        return None
    return kind[-1]


def in_running_text(name: str, type_noun: str | None = None) -> str:
    """How ``name`` is written inside a sentence: a class-like name in sentence case whose first word is a common
    English word loses its capital ("Protruding ear", "Abnormal morphology of the inner ear", "Ring chromosome 14
    syndrome", "Abnormal pinna morphology": the first word decides); a name with a second capital ("Pitt-Hopkins
    syndrome", "New York"), a one-word name, a word English does not know ("Zellweger syndrome", "Cutis laxa"), a
    person's name and a taxon's ("Streptococcus pneumoniae") stay as written. An honorific glued to a name, as
    character tables write them ("MmeMagloire", "LtGillenormand"), gets its space back ("Mme Magloire"). The name of
    a statistical or administrative unit whose kind is a compound ("census division", "health region") is said with
    its kind's head ("South Atlantic division", "Pacific division"): bare, "Pacific" reads as the ocean."""
    glued = _GLUED_TITLE.fullmatch(name.strip())
    if glued:
        return f"{glued[1]} {glued[2]}"
    name = re.sub(r"\b(of|for|in|at|on) The(?= [A-Z])", r"\1 the", name)  # "Council of The Sixth Circuit"
    if name.startswith("The ") and _headed_by_a_head(name[4:]):
        # "received the Nobel Prize in Physics 1921": the article of a name English heads with "the"; "The Hague",
        # "The Times" and a work's title ("The Lord of the Rings") keep their capital
        return "the " + name[4:]
    if (type_noun or "").lower() in _name_rules()["substance_kinds"]:
        return _SUBSTANCE_WORD.sub(lambda m: m[0].lower(), name)
    unit = _unit_head(name, type_noun)
    if unit is not None:
        return f"{name} {unit}"
    # judged without a trailing tag: "Float (level 1)" is one word and its level, no phrase in sentence case
    words = strip_disambiguator(name).split() or name.split()
    if (type_noun or "") in _PROPER_KINDS or person_kind(type_noun) or not _TITLED_WORD.fullmatch(words[0] if words
                                                                                                  else ""):
        return name  # "Peter van Loosbroek", a translator: a person's name is written as it is
    if versus_name(name):
        return name  # two sides' names ("Lens v Strasbourg"): the first word is a name's, whatever it means in English
    first = words[0].strip(",.;:()'’").lower()
    common = first.isalpha() and first not in _MINOR and (_plain_english(first) or _CLINICAL.search(first) is not None)
    last = words[-1].strip(",.;:()'’").lower()
    if len(words) >= 2 and state_kind(type_noun) and first.isalpha() and _LEARNED_ADJECTIVE.search(first) and \
            (_plain_english(last) or _CLINICAL.search(last)):
        common = True  # a disease named by a learned adjective and a common head: "Alveolar proteinosis"
    if len(words) == 1:
        # one word of a kind of states ("Hemothorax", a disease): a common noun; an eponym ("Crohn") keeps its capital
        return name[:1].lower() + name[1:] if common and state_kind(type_noun) else name
    second = words[1].strip(",.;:()'’").lower()
    particle = second in NAME_PARTICLES - _MINOR - PREPOSITIONS and len(words) >= 3 and words[2][:1].isupper()
    if common and words[1][:1].islower() and second not in _MINOR | PREPOSITIONS and not particle:
        # sentence case ("Pneumonia due to Methicillin susceptible Staphylococcus aureus", "Justice de paix de
        # Jodoigne"): the first capital is the sentence's, whatever proper words follow; "Bank of America" (a minor
        # word next) and "Taco del Mar" (a name's particle before a capital) stay
        return name[:1].lower() + name[1:]
    if any(ch.isupper() for w in words[1:] for ch in w):
        return name
    if common and not state_kind(type_noun) and all(any(ch.isdigit() for ch in w) for w in words[1:]):
        return name  # a word and a model's number: "Enjoy 6", "Galaxy 7" (a state's, "Trisomy 21", is a class name)
    if common:
        # a common English word opens it: a class name whatever words follow ("Abnormal pinna morphology",
        # "Stenosis of larynx")
        return name[:1].lower() + name[1:]
    for w in words:  # every word plain English: "Streptococcus pneumoniae" is a binomial, not a class name
        core = w.strip(",.;:()'’").lower()
        if core.isalpha() and core not in _MINOR and not _plain_english(core):
            return name
    return name[:1].lower() + name[1:]


#: Endings of clinical words, which English writes as common nouns ("stenosis", "pneumonitis", "hemothorax",
#: "carcinoma", "neuralgia", "bronchiectasis").
_CLINICAL = re.compile(r"(?:osis|itis|emia|aemia|oma|algia|pathy|plasia|trophy|rrhea|rrhoea|ectasis|thorax|iasis|"
                       r"uria|penia|megaly|spasm|cele|plegia|sclerosis|stasis|lysis|edema|oedema)$")


#: Endings of adjectives English builds from Latin and Greek ("alveolar", "laryngeal", "postprocedural").
_LEARNED_ADJECTIVE = re.compile(r"^[a-z]{3,}(?:al|ar|ary|ic|ous|oid|ive)$")


#: A capitalised word of a substance's name (a capital, then two or more lower-case letters, the whole word): lower
#: case in running text; "ATP", "CoA", "L" (of "L-alanine") and "C10H12N5O10P2" keep theirs.
_SUBSTANCE_WORD = re.compile(r"(?<![\w])[A-Z][a-z]{2,}(?![\w])")
_GLUED_TITLE = re.compile(r"(Mme|Mlle|Mr|Mrs|Ms|Mx|Dr|Lt|Sgt|Capt|Col|Gen|Prof|Rev|Sr|Jr|Fr|Sir|Dame|Lady|Lord|Baron|"
                          r"Baroness|Count|Countess|Madame|Mademoiselle|Monsieur)([A-Z][a-z]+(?:[A-Z][a-z]+)?)")
_SHOUTED_WORD = re.compile(r"[A-Z]{6,}")
_WORD_NUMBER = re.compile(r"[A-Z]?[a-z]{2,}\d+")
_RAW_PREFIX = re.compile(r"^[B-HJ-Z] [A-Z]")


def heading_not_name(name: str) -> str | None:
    """Why a table's heading is no name, as a start, a pin or an answer, or None: a group's heading opened by a
    quantifier ("All Conspirators" reads as "all conspirators"), a table's plural notation ("Pyroclastic cone(s)"),
    a note of clauses joined by semicolons ("White to cream-white; yellowing with age"), or prose ("The same.
    Another room.")."""
    t = " ".join(name.split())
    words = t.split()
    if words and words[0] in _QUANTIFIERS and len(words) >= 2:
        return f"{name!r} opens with a quantifier: in a sentence it reads as 'all lords', not as a name"
    if re.search(r"\w\((?:s|es)\)", t):
        return f"{name!r} is written in a table's plural notation ('cone(s)'), not as a name"
    if ";" in t:
        return f"{name!r} is a table's note (clauses joined by a semicolon), not a name"
    if re.search(r"\.\s+[A-Z][a-z]{2,}(?:\s+[\w'’-]+)+\.$", t) or re.search(r"\s[a-z]{3,}\.$", t):
        # "The same. Another room."; "Gloucester's castle.", "A street.": a stage direction's sentence, whose full
        # stop would end the question's sentence (an abbreviation's stop follows a capital: "Warner Bros.")
        return f"{name!r} is a sentence or two (a heading's prose), not a name"
    return None


def _head_before_its_complement(words: list[str]) -> str | None:
    """The word of a name before its first "of", "for", "in", "at" or "on", or before its first comma ("Court" of
    "District Court of Guam", "Prize" of "Nobel Prize in Physics 1921"); None when the name has neither."""
    cut = next((i for i, w in enumerate(words)
                if i >= 1 and (w in ("of", "for", "in", "at", "on") or words[i - 1].endswith(","))), None)
    return None if cut is None else words[cut - 1].rstrip(",")


def _headed_by_a_head(name: str) -> bool:
    """Whether ``name``'s head (the word before its complement, else its last word) is one of ``names.yaml``'s
    heads of names said with "the" ("Prize", "Institute", "Court")."""
    words = name.split()
    head = _head_before_its_complement(words) or (words[-1] if words else "")
    return head[:1].isupper() and head.lower() in _article_rules()[0]


def unreadable_name(name: str) -> str | None:
    """Why a name, as a question would show it, is no name a reader knows the thing by, or None: a registry's name in
    capitals ("MCDONNELL DOUGLAS", "CESSNA": a word of six capitals or more, or two of four or more; acronyms are
    shorter), a one- or two-letter code ("R", "AL", "NY": a party's, a league's, a state's), a word with a number glued
    on ("Woman1": a table's placeholder), or a raw identifier's words ("R Fumarate transport via proton symport-2 - H":
    a one-letter prefix, a hyphen standing alone; "Lumina_APV": an underscore inside a word). A name the question
    quotes (a word mentioned as a word: '"cow2"') is judged without its quotes."""
    t = " ".join(name.split())
    if len(t) >= 2 and t[0] in "\"“‘" and t[-1] in "\"”’":
        t = t[1:-1].strip()
    words = t.split()
    if re.fullmatch(r"[A-Z]{1,2}", t):
        return f"{name!r} is a one- or two-letter code (a party's, a league's, a state's), not the name it stands for"
    if bare_number(t):
        return f"{name!r} is a bare number, not a name: the graph gives no unit or meaning for it"
    core = strip_disambiguator(t) or t  # "METRONIDAZOLE (substance)": the name before the tag
    if core.upper() == core and any(ch.isalpha() for ch in core):
        # "OSAKA EXCHANGE,INC": a comma joins two words; "INTRA-ARTERIAL": so does a hyphen
        parts = [w for w in re.split(r"[\s,.\-/]+", core) if w]
        if any(_SHOUTED_WORD.fullmatch(w) for w in parts) or \
                sum(len(w) >= 4 and w.isalpha() for w in parts) >= 2 or \
                any(len(w) >= 4 and w.isalpha() and _plain_english(w.lower()) for w in parts):
            # "MCDONNELL DOUGLAS", "ONION", "NZX DARK": a word English writes in lower case, shouted (an acronym is
            # no word)
            return f"{name!r} is written in capitals, as a registry writes it, not as its name is written"
    if any(_WORD_NUMBER.fullmatch(w) for w in words):
        return f"{name!r} has a number glued to a word: a table's placeholder, not a name"
    if "\ufffd" in t or "ï¿½" in t or re.search(r"Ã[\u0080-\u00bf]", t):
        return f"{name!r} holds characters garbled in its encoding, not the name as it is written"
    if re.search(r"(?<![\w.])(?:[a-z]\.){2,}", t):
        return f"{name!r} holds an abbreviation ('n.e.c.'), not words a reader is given"
    if placeholder_name(t):
        return f"{name!r} is a table's placeholder for a missing or unnamed value, not a name"
    heading = heading_not_name(t)
    if heading is not None:
        return heading
    short = _abbreviation(words)
    if short is not None:
        return f"{name!r} is cut short ({short!r}): a table's abbreviation, not the name as it is written"
    if _RAW_PREFIX.match(t) or " - " in f" {t} " or any("_" in w.strip("_") for w in words):
        return f"{name!r} reads as a raw identifier (a one-letter prefix, a hyphen standing alone, an underscore)"
    return None


def placeholder_name(name: str) -> bool:
    """Whether a node's name stands for a missing or unnamed value: a table's placeholder ("Unknown", "N/A",
    "Other"), or a name whose last part after a comma is one, alone or before a noun of one or two words ("Art
    Competitions Mixed Architecture, Unknown Event": an entry whose event the data does not know). A question
    through such a node asks about no thing."""
    t = " ".join(name.split())
    if _PLACEHOLDER.fullmatch(t):
        return True  # "Missing (1982 film)" and "Unknown (2011 film)" are titles: the name as a whole is judged
    bare = " ".join((strip_disambiguator(t) or t).split())
    if "," not in bare:
        return False
    words = bare.rsplit(",", 1)[1].split()
    return 1 <= len(words) <= 3 and _PLACEHOLDER_WORD.fullmatch(words[0]) is not None


#: Words that open a group's heading, not a name ("All Conspirators", "Both Tribunes").
_QUANTIFIERS = frozenset({"All", "Both", "Some", "Several", "Many", "Each", "Every"})
#: What tables write where a value is missing or has no name.
_PLACEHOLDER_WORDS = r"unknown|unspecified|undisclosed|other|others|various|miscellaneous|missing"
_PLACEHOLDER = re.compile(r"not (?:applicable|available|reported|specified|known|stated|given)|n/?a|none|misc\.?|"
                          rf"anonymous|tbd|tba|null|nan|{_PLACEHOLDER_WORDS}", re.IGNORECASE)
#: The placeholders a name's last part after a comma may be: words only ("Li, Na" is a person, "Chiang Mai, NA" a
#: place; "n/a", "nan" and "null" count only as a whole name).
_PLACEHOLDER_WORD = re.compile(_PLACEHOLDER_WORDS, re.IGNORECASE)
#: Abbreviations that are how the word is written in names ("St. Louis", "Dr. No", "Acme Co.").
_USUAL_SHORT = frozenset({"mr", "mrs", "ms", "dr", "st", "mt", "ft", "jr", "sr", "co", "inc", "ltd", "bros", "corp",
                          "no", "vs", "prof", "gen", "col", "capt", "lt", "sgt", "rev", "hon", "sen", "rep", "gov",
                          "pres", "ave", "blvd", "rd", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept",
                          "oct", "nov", "dec", "vol", "op", "pt", "jos", "wm", "chas", "geo", "thos", "jas", "fr"})


def _abbreviation(words: list[str]) -> str | None:
    """The first word of a name a table cut short, or None: a capitalised word of two to five letters with a full
    stop that names write in full ("Org.", "Ec.", "Fed. Sts."), a capital with a full stop before a word in lower
    case (an initial comes before a name: "J. of Political Economy"), or a capitalised word of three letters or more
    with no vowel ("Mgmt", "Assn"). "St. Louis", "Dr. No", "J. R. R. Tolkien" and acronyms ("MIT") pass."""
    for i, w in enumerate(words):
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if re.fullmatch(r"[A-Z][a-z]{1,4}\.,?", w) and w.rstrip(".,").lower() not in _USUAL_SHORT:
            return w
        if re.fullmatch(r"[A-Z]\.", w) and nxt[:1].islower():
            return w
        if re.fullmatch(r"[B-DF-HJ-NP-TV-XZ][b-df-hj-np-tv-xz]{2,},?", w) and w.rstrip(",").lower() not in _USUAL_SHORT:
            return w
    return None


def adjective_name(name: str) -> bool:
    """Whether a name is one capitalised word English knows only as an adjective or a verb form ("Retired",
    "Unemployed", "Domesticated"): a state a value column holds, not a thing, so no clause can name it ("has
    Retired as an occupation"). Nationality words ("French") are not in the word list, so they stay names."""
    word = name.strip()
    if not re.fullmatch(r"[A-Z][a-z]+", word):
        return False
    lemmas = lemminflect.getAllLemmas(word.lower())
    return bool(lemmas) and "NOUN" not in lemmas and "PROPN" not in lemmas


def common_noun_name(name: str) -> bool:
    """Whether a name is one capitalised common English noun ("Congress", "Parliament", "Money"): a graph may call
    one thing that, but a reader of the question cannot tell which of the many it means."""
    word = strip_disambiguator(name.strip())  # "North (Pakistan)": a table's relative area, the country only its disambiguator
    if not re.fullmatch(r"[A-Z][a-z]+", word):
        return False
    return "NOUN" in lemminflect.getAllLemmas(word.lower())


__all__ = [
    "LIGHTRAG_TYPES",
    "other_script",
    "YEAR",
    "NUMBER",
    "adjective_name",
    "bare_number",
    "strip_disambiguator",
    "unreadable_name",
    "common_noun_name",
    "NAME_RELATIONS",
    "TYPE_RELATIONS",
    "display_forms",
    "display_name",
    "entity_type_noun",
    "gate_names",
    "generic_name_words",
    "identifier_display",
    "identifier_local",
    "in_running_text",
    "is_identifier",
    "name_takes_article",
    "node_display",
    "person_kind",
    "question_name",
    "node_type_noun",
    "relation_word",
    "table_keys",
    "type_text_noun",
]
