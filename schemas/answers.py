"""When two answers are the same: the one answer normaliser of hopforge.

Question checks, dedup, trajectory acceptance, RL rewards and evaluation all decide "is this the gold answer?"
here, so they cannot disagree. The module is pure standard library (verl's reward workers load it).

Three keys, from strictest to loosest. Each is coarser than the one before it: two texts with the same
``strict_key`` have the same ``name_key``, and two with the same non-empty ``name_key`` have the same
``lenient_key`` (a text whose name key is empty is compared by its strict key, see below).

``strict_key`` (``STRICT``)
    The Omne-R1 rule (§4.1.2): the text with surrounding whitespace stripped, nothing else.

``name_key`` (the graph's lookup key; ``tasks.graph.kg.normalize_name`` is this function)
    NFKC, every quote-like character an apostrophe and every dash-like character a hyphen, case folded,
    whitespace collapsed, punctuation stripped from both ends (not ``#``, ``+``, ``%``, ``&``, ``)``, ``]``,
    which end real names). Inner punctuation and accents are kept: a lookup must not merge "Node.js" and
    "Node js" or "Müller" and "Muller".

``lenient_key`` (``LENIENT``; the default of every matcher here)
    ``name_key``, then accents dropped, periods and apostrophes inside names dropped, separators folded to a
    space, thousands separators dropped, number words written as digits, one leading article dropped.

=========================  =====================================  ===========  ==========  ===========
case                       example                                strict       name        lenient
=========================  =====================================  ===========  ==========  ===========
surrounding whitespace     " Paris\\n" / "Paris"                    same         same        same
case                       "PARIS" / "Paris"                       differ       same        same
dashes                     "GPT—4" / "GPT-4"                       differ       same        same
curly quotes               "Kant’s" / "Kant's"                     differ       same        same
full-width forms           "ＡＢＣ" / "ABC"                          differ       same        same
end punctuation, emphasis  "**Paris.**" / "Paris"                  differ       same        same
diacritics                 "Zürich" / "Zurich"                     differ       differ      same
inner periods              "U.S." / "US"; "St. Louis" / "St Louis" differ       differ      same
apostrophes                "McDonald's" / "McDonalds"              differ       differ      same
separators                 "Jean-Paul" / "Jean Paul"               differ       differ      same
articles (leading only)    "The Hague" / "Hague"                   differ       differ      same
"&"                        "Procter & Gamble" / "Procter and ..."  differ       differ      same
thousands separators       "1,945" / "1945"                        differ       differ      same
number words (cardinals)   "twenty-one" / "21"                     differ       differ      same
C++ / C#                   "C++" / "C#" / "C"                      differ       differ      differ
decimals                   "3.14" / "314"                          differ       differ      differ
inner articles             "Vitamin A" / "Vitamin"                 differ       differ      differ
ordinals                   "first" / "1st"                         differ       differ      differ
substrings                 "Paris, France" / "Paris"               differ       differ      differ
=========================  =====================================  ===========  ==========  ===========

Identifiers: under ``LENIENT`` a name written as an identifier also matches its display form
(``identifier_display``: "clinicalDrug" / "clinical drug", "dbr:Albert_Einstein" / "Albert Einstein",
"http://dbpedia.org/resource/Caf%C3%A9" / "Cafe"), either way round: the matchers compare every key a text has
(``answer_keys``), while ``lenient_key`` itself stays one key per text. A mid or a Wikidata id ("m.0abc12",
"Q42") has no display form here; ``tasks.meaning.names`` looks those up in a graph's name table.

A text whose lenient key would be empty (a gold such as "?" or "The") keeps its name key, and failing that its
strict key, so such a gold is matched only by itself and never by an empty prediction.

Answer sets: ``parse_answer_list`` reads ``["a", "b"]`` (JSON or Python list syntax) as two entities, any other
text as one (names contain commas: "King's College, Cambridge"). Under ``LENIENT`` a single free-text answer
is also read as a list split on commas, semicolons, "and" and "&" ("Paris and Lyon"); that reading counts only
when it is exactly the gold set, so a gold that is itself "Procter & Gamble" still matches as one entity and
"Paris, France" gets no partial credit for the gold "Paris".

Compared with the SQuAD-style normaliser of Search-R1's and RoG's evaluation scripts (lower case, every
punctuation character and every article removed, and in RoG a hit when the gold is a substring of the
prediction): the lenient key agrees on U.S./US, The Hague/Hague, 1,945/1945; it keeps "C++" and "C#" apart
(they both become "c"), never lets a gold that normalises to nothing match an empty prediction, and counts no
substring hits ("Paris, France" is not "Paris").
"""

from __future__ import annotations

import ast
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

Normalizer = Literal["strict", "lenient"]
STRICT: Normalizer = "strict"
LENIENT: Normalizer = "lenient"
NORMALIZERS: tuple[Normalizer, ...] = (STRICT, LENIENT)

# -- strict ---------------------------------------------------------------------------------------------------------


def strict_key(text: str) -> str:
    """Omne-R1's comparison: surrounding whitespace stripped."""
    return text.strip()


# -- name key (the graph's) -----------------------------------------------------------------------------------------
# Every quote-like character becomes an apostrophe and every dash-like character a hyphen, so "Kant’s" and
# "Kant's", "GPT—4" and "GPT-4" look the same to a lookup.
_QUOTES = "\"'`´‘’‚‛“”„‟‹›«»′″‵‶＂＇"
_DASHES = "‐‑‒–—―−⁃﹘﹣－"
_FOLD = str.maketrans({**{q: "'" for q in _QUOTES}, **{d: "-" for d in _DASHES}, "\u00ad": None})
# Characters stripped from both ends (after folding). Deliberately not '#', '+', '%', '&', ')' or ']': they end
# real names ("C#", "C++", "Queen (band)").
_END_STRIP = " '.,;:!?-_*…¡¿·•"


def _name_once(s: str) -> str:
    t = unicodedata.normalize("NFKC", s).translate(_FOLD).casefold()
    # casefold can leave text that NFKC would change again (and NFKC can bring back a fancy quote), so both run
    # a second time; the fixed-point loop in name_key covers whatever remains.
    t = unicodedata.normalize("NFKC", t).translate(_FOLD)
    return " ".join(t.split()).strip(_END_STRIP)


#: ``_FOLD`` on ASCII text: the ASCII quotes (the dashes and the soft hyphen are not ASCII).
_ASCII_FOLD = str.maketrans({q: "'" for q in _QUOTES if q.isascii()})


def name_key(s: str) -> str:
    """The lookup key of an entity name (see the module table). Idempotent:
    ``name_key(name_key(s)) == name_key(s)``."""
    if s.isascii():
        # NFKC leaves ASCII as it is and casefold is lower there, and the result is already a fixed point: one
        # pass of the same steps (a sixth of the cost; the served graph's build keys a million names).
        return " ".join(s.translate(_ASCII_FOLD).lower().split()).strip(_END_STRIP)
    t = _name_once(s)
    for _ in range(4):  # converges in one or two rounds; the bound keeps a pathological input from looping
        again = _name_once(t)
        if again == t:
            break
        t = again
    return t


# -- lenient key ----------------------------------------------------------------------------------------------------
# Letters that NFKD does not split into a base letter and a mark.
_LETTERS = str.maketrans({"ø": "o", "æ": "ae", "œ": "oe", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i"})
_THOUSANDS = re.compile(r"(?<![\d.])\d{1,3}(?:[,'\u2009\u202f]\d{3})+(?![\d]|[.,]\d)")
# A period is part of a number only between two digits ("3.14"); anywhere else it is an abbreviation mark.
_PERIOD = re.compile(r"(?<!\d)\.|\.(?!\d)")
_SEPARATORS = re.compile(r"[-_/\\,;:!?…·•|~*\"{}<>]+")
_ARTICLES = ("the ", "a ", "an ")

_ONES = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split()
)}  # fmt: skip
_TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
_SCALES = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}


def _below_thousand(words: Sequence[str], i: int) -> tuple[int, int] | None:
    """A number under 1000 spelled from ``words[i]``: ``(value, next index)``, or ``None``."""
    start, value = i, 0
    if i + 1 < len(words) and words[i] in _ONES and 0 < _ONES[words[i]] < 10 and words[i + 1] == "hundred":
        value, i = _ONES[words[i]] * 100, i + 2
        if i + 1 < len(words) and words[i] == "and" and (words[i + 1] in _ONES or words[i + 1] in _TENS):
            i += 1  # "one hundred and five"
    if i < len(words) and words[i] in _TENS:
        value, i = value + _TENS[words[i]], i + 1
        if i < len(words) and words[i] in _ONES and 0 < _ONES[words[i]] < 10:
            value, i = value + _ONES[words[i]], i + 1
    elif i < len(words) and words[i] in _ONES and not (value and words[i] == "zero"):
        value, i = value + _ONES[words[i]], i + 1
    return (value, i) if i > start else None


def _number_words(words: list[str]) -> list[str]:
    """Runs of cardinal number words as digits: "twenty one thousand" -> "21000", "one two" -> "1 2"."""
    out: list[str] = []
    i = 0
    while i < len(words):
        total, j, last_scale = 0, i, None
        while True:
            got = _below_thousand(words, j)
            if got is None:
                break
            value, k = got
            scale = _SCALES.get(words[k]) if k < len(words) else None
            if scale is not None and (last_scale is None or scale < last_scale):
                total, j, last_scale = total + value * scale, k + 1, scale
                continue
            total, j = total + value, k
            break
        if j > i:
            out.append(str(total))
            i = j
        else:
            out.append(words[i])
            i += 1
    return out


def _lenient_once(text: str) -> str:
    t = name_key(text)
    t = unicodedata.normalize("NFKD", t.translate(_LETTERS))
    t = "".join(c for c in t if not unicodedata.combining(c))
    t = _THOUSANDS.sub(lambda m: re.sub(r"[,'\u2009\u202f]", "", m.group()), t)
    t = _PERIOD.sub("", t).replace("'", "").replace("&", " and ")
    # Brackets stay: "Queen (band)" names something else than "Queen".
    t = _SEPARATORS.sub(" ", t)
    words = _number_words(t.split())
    while len(words) > 1 and f"{words[0]} " in _ARTICLES:
        words = words[1:]
    return " ".join(words)


def lenient_key(text: str) -> str:
    """The lenient comparison key (see the module table); a text it would empty keeps its name key, then its
    strict key. Idempotent."""
    t = _lenient_once(text)
    again = _lenient_once(t)
    t = again if again else t  # the first pass can expose one more article or number word; two passes settle it
    return t or name_key(text) or strict_key(text)


# -- identifiers ----------------------------------------------------------------------------------------------------
# Graphs that hopforge did not write name nodes with identifiers: snake_case ("element_ion_or_isotope"), camelCase
# ("clinicalDrug"), URIs and CURIEs ("http://dbpedia.org/resource/Albert_Einstein", "dbr:Albert_Einstein",
# "wd:Q42"), Freebase mids ("m.0abc12", "/m/0abc12") and Wikidata ids ("Q42"). A reader writes such a name as its
# display form ("element ion or isotope", "Albert Einstein"); under LENIENT an answer matches in either form. The
# name table lookups (a mid's or a Q-id's name) and type nouns live in ``tasks.meaning.names``; this part is pure
# standard library so that the answer normaliser can use it.
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://\S+")
_CURIE = re.compile(r"([a-z][a-z0-9_\-]{0,15}):([^\s:/]\S*)")
_MID = re.compile(r"/?([mg])[./]([0-9a-z_]{2,})")
_WIKIDATA_ID = re.compile(r"[QPL][1-9][0-9]*")
_SNAKE = re.compile(r"[^\s_]+(?:_[^\s_]+)+")
# camelCase: a lower-case word of two letters or more, then capitalised words ("clinicalDrug", "dateOfBirth"; not
# "iPhone", "eBay", "macOS", "jQuery").
_LOWER_CAMEL = re.compile(r"[a-z]{2,}(?:[A-Z][a-z]+)+[0-9]*")
# PascalCase and acronym humps ("BodySystem", "DNASequence"): only where the text names a class or a relation
# (``vocabulary=True``). As an entity name the shape is also a brand's ("DeepMind", "YouTube", "PlayStation",
# "JavaScript"), and splitting a name is worse than leaving a type run together.
_ANY_CAMEL = re.compile(r"(?=[A-Za-z0-9]*[a-z][A-Z]|[A-Za-z0-9]*[A-Z]{2}[a-z])[A-Za-z][A-Za-z0-9]*")
_DOTTED = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+")  # a Freebase type or relation ("people.person")
_HUMP = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")


def identifier_local(name: str) -> str:
    """The part of an identifier that names the thing: a URI's last path segment or fragment, a CURIE's local
    part, percent-decoded (``"http://dbpedia.org/resource/Caf%C3%A9"`` -> ``"Café"``, ``"wd:Q42"`` -> ``"Q42"``);
    any other text stripped and returned as it is."""
    from urllib.parse import unquote

    t = name.strip()
    if _URI.fullmatch(t):
        rest = t.split("://", 1)[1].split("?", 1)[0]
        if "#" in rest:
            local = rest.rsplit("#", 1)[1]
        elif "/" in rest.rstrip("/"):
            local = rest.rstrip("/").rsplit("/", 1)[1]
        else:
            local = ""  # a bare host ("http://example.org/") names no thing
        return unquote(local) if local else t
    m = _CURIE.fullmatch(t)
    if m:
        return unquote(m.group(2))
    return unquote(t) if _PERCENT.search(t) else t


def _opaque(local: str) -> bool:
    """A mid or a Wikidata id: only a name table says what it names."""
    return bool(_MID.fullmatch(local) or _WIKIDATA_ID.fullmatch(local))


def is_identifier(name: str, *, vocabulary: bool = False) -> bool:
    """Whether ``name`` is written as an identifier rather than as a reader would write it: snake_case,
    camelCase, a URI or CURIE, a Freebase mid, a Wikidata id. ``vocabulary``: the text names a class or a
    relation (a type column, the object of a type edge, a relation label), where PascalCase ("BodySystem") and
    dotted Freebase names ("people.person") count too; as an entity name they do not ("DeepMind")."""
    t = name.strip()
    if not t or any(ch.isspace() for ch in t):
        return False
    if _URI.fullmatch(t) or _CURIE.fullmatch(t) or _opaque(t) or _SNAKE.fullmatch(t) or _LOWER_CAMEL.fullmatch(t):
        return True
    return vocabulary and bool(_ANY_CAMEL.fullmatch(t) or _DOTTED.fullmatch(t))


def _humps(word: str, vocabulary: bool) -> str:
    """Camel humps as words, capitalised words lower-cased, acronyms kept ("clinicalDrug" -> "clinical drug",
    "DNASequence" -> "DNA sequence"). A word that is not camelCase (in ``vocabulary``: any camel shape) stays."""
    if not (_LOWER_CAMEL.fullmatch(word) or (vocabulary and _ANY_CAMEL.fullmatch(word))):
        return word
    parts = _HUMP.findall(word)
    return " ".join(p.lower() if p[:1].isupper() and p[1:].islower() or p.islower() else p for p in parts)


def identifier_display(name: str, *, vocabulary: bool = False) -> str:
    """The form a reader sees of an identifier (no name table: see ``tasks.meaning.names.display_name``):
    underscores and camel humps as spaces, a URI or CURIE by its percent-decoded local part, a dotted Freebase
    name (``vocabulary``) by its last part. Case is kept except in camel humps ("Albert_Einstein" -> "Albert
    Einstein", "element_ion_or_isotope" -> "element ion or isotope", "dbo:birthPlace" -> "birth place"). A mid or
    a Wikidata id, and any text that is not an identifier, comes back as it is."""
    t = name.strip()
    if not is_identifier(t, vocabulary=vocabulary):
        return name
    local = identifier_local(t)
    if _opaque(local) or not local.strip():
        return name
    if vocabulary and _DOTTED.fullmatch(local):
        local = local.rsplit(".", 1)[1]
    words = [w for w in local.replace("_", " ").split() if w]
    shown = " ".join(_humps(w, vocabulary) for w in words)
    return shown or name


def _identifier_keys(text: str, key: Callable[[str], str]) -> list[str]:
    """``text``'s key and, for an identifier, its display form's key: the keys an answer may match under."""
    k = key(text)
    out = [k] if k else []
    if is_identifier(text):
        shown = key(identifier_display(text))
        if shown and shown not in out:
            out.append(shown)
    return out


_KEYS: dict[str, Callable[[str], str]] = {STRICT: strict_key, LENIENT: lenient_key}


def answer_key(text: str, normalizer: Normalizer = LENIENT) -> str:
    """The comparison key of one answer under ``normalizer``."""
    return key_function(normalizer)(text)


def key_function(normalizer: Normalizer) -> Callable[[str], str]:
    try:
        return _KEYS[normalizer]
    except KeyError:
        raise ValueError(f"unknown answer normalizer {normalizer!r}; choose one of {', '.join(NORMALIZERS)}") from None


def answer_keys(text: str, normalizer: Normalizer = LENIENT) -> list[str]:
    """Every key ``text`` matches under: its key, and under ``LENIENT`` for an identifier also its display form's
    ("clinicalDrug" matches as "clinical drug" too, ``identifier_display``). Empty for a text with no key."""
    key = key_function(normalizer)
    if normalizer == LENIENT:
        return _identifier_keys(text, key)
    k = key(text)
    return [k] if k else []


def same_answer(a: str, b: str, normalizer: Normalizer = LENIENT) -> bool:
    """Whether two single answers name the same thing under ``normalizer`` (empty texts are never the same; under
    ``LENIENT`` an identifier and its display form are the same)."""
    return bool(set(answer_keys(a, normalizer)) & set(answer_keys(b, normalizer)))


# -- answer lists ---------------------------------------------------------------------------------------------------

#: A list answer longer than this is read as one text: parsing megabytes of brackets is not worth a stalled worker.
MAX_LIST_CHARS = 100_000


def parse_answer_list(answer: str | None) -> list[str]:
    """The entities in an answer: ``["a", "b"]`` (JSON or Python list syntax) gives ``["a", "b"]``; any other
    non-empty text is one entity. Items are stripped, empty ones and repeats dropped, order kept. Text is never
    split on commas here: entity names contain them ("King's College, Cambridge")."""
    if answer is None:
        return []
    text = answer.strip()
    if not text:
        return []
    items: list[Any] | None = None
    if text.startswith("[") and text.endswith("]") and len(text) <= MAX_LIST_CHARS:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            try:
                value = ast.literal_eval(text)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                value = None
        if isinstance(value, list):
            items = value
    if items is None:
        return [text]
    out: list[str] = []
    for item in items:
        s = (item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)).strip()
        if s and s not in out:
            out.append(s)
    return out


_LIST_SPLIT = re.compile(r"\s*(?:;|,\s*(?:and\s+|&\s*)?|\s+and\s+|\s*&\s*)\s*", re.IGNORECASE)


def _readings(answer: str | None, normalizer: Normalizer) -> list[list[str]]:
    """The ways to read ``answer`` as a list of entities: as written, and under ``LENIENT`` a lone free-text
    answer split on list separators."""
    items = parse_answer_list(answer)
    readings = [items]
    if normalizer == LENIENT and len(items) == 1 and not answer.strip().startswith("["):  # type: ignore[union-attr]
        parts = [p for p in _LIST_SPLIT.split(items[0]) if p.strip()]
        if len(parts) > 1:
            readings.append(parts)
    return readings


def _keys(items: Iterable[str], normalizer: Normalizer, aliases: dict[str, str] | None = None) -> list[str]:
    """The items' keys, in order, repeats dropped. With ``aliases`` (``_gold_aliases``), an item whose identifier
    or display-form key is a gold item's takes that gold item's key, so either form of a name matches."""
    out: list[str] = []
    for i in items:
        ks = answer_keys(i, normalizer)
        if not ks:
            continue
        k = next((aliases[a] for a in ks if a in aliases), ks[0]) if aliases else ks[0]
        if k not in out:
            out.append(k)
    return out


def _gold_keys(gold: Sequence[str], normalizer: Normalizer) -> list[str]:
    """The gold items' keys; two gold items that are one name in two forms are one key."""
    return _keys(gold, normalizer, _gold_aliases(gold, normalizer))


def _gold_aliases(gold: Sequence[str], normalizer: Normalizer) -> dict[str, str]:
    """Every key a gold item matches under (``answer_keys``) -> the item's own key; the first gold item wins."""
    out: dict[str, str] = {}
    for g in gold:
        ks = answer_keys(g, normalizer)
        for k in ks:
            out.setdefault(k, ks[0])
    return out


def _f1(got: Sequence[str], want: set[str]) -> float:
    hit = len(set(got) & want)
    if not hit:
        return 0.0
    precision, recall = hit / len(set(got)), hit / len(want)
    return 2 * precision * recall / (precision + recall)


def predicted_keys(predicted: str | None, gold: Sequence[str], normalizer: Normalizer = LENIENT) -> list[str]:
    """The predicted entities' keys, in order. The answer is read as written; a split reading (``LENIENT``)
    replaces it only when it is exactly the gold set, so "Paris, France" earns nothing for the gold "Paris"
    (no partial credit for what is really a longer name)."""
    want = set(_gold_keys(gold, normalizer))
    aliases = _gold_aliases(gold, normalizer)
    readings = _readings(predicted, normalizer)
    as_written = _keys(readings[0], normalizer, aliases)
    for reading in readings[1:]:
        got = _keys(reading, normalizer, aliases)
        if want and set(got) == want and set(as_written) != want:
            return got
    return as_written


def answer_set_matches(predicted: str | None, gold: Sequence[str], normalizer: Normalizer = LENIENT) -> bool:
    """Exact match of entity sets: the predicted set equals the gold set, both under ``normalizer``."""
    want = set(_gold_keys(gold, normalizer))
    return bool(want) and set(predicted_keys(predicted, gold, normalizer)) == want


def entity_f1(predicted: str | None, gold: Sequence[str], normalizer: Normalizer = LENIENT) -> float:
    """F1 between the predicted entity set and the gold set under ``normalizer`` (Explore-on-Graph eq. 3,
    Graph-RFT eq. 3); 0.0 when either is empty."""
    want = set(_gold_keys(gold, normalizer))
    return _f1(predicted_keys(predicted, gold, normalizer), want) if want else 0.0


def hit1_first(predicted: str | None, gold: Sequence[str], normalizer: Normalizer = LENIENT) -> bool:
    """Hit@1 as a ranked list's top item: the first predicted entity is a gold answer."""
    want = set(_gold_keys(gold, normalizer))
    got = predicted_keys(predicted, gold, normalizer)
    return bool(got) and got[0] in want


def hit1_any(predicted: str | None, gold: Sequence[str], normalizer: Normalizer = LENIENT) -> bool:
    """Hit@1 as RoG and Explore-on-Graph compute it: any predicted entity is a gold answer (exact keys, no
    substring hits)."""
    want = set(_gold_keys(gold, normalizer))
    return bool(want & set(predicted_keys(predicted, gold, normalizer)))


__all__ = [
    "LENIENT",
    "MAX_LIST_CHARS",
    "NORMALIZERS",
    "STRICT",
    "Normalizer",
    "answer_key",
    "answer_keys",
    "answer_set_matches",
    "entity_f1",
    "hit1_any",
    "hit1_first",
    "identifier_display",
    "identifier_local",
    "is_identifier",
    "key_function",
    "lenient_key",
    "name_key",
    "parse_answer_list",
    "predicted_keys",
    "same_answer",
    "strict_key",
]


# -- path mentions (Explore-on-Graph's path reward; trajectory acceptance) ------------------------------------------


def flat_text(text: str) -> str:
    """Case folded, whitespace collapsed: the form both sides of a mention test take."""
    return " ".join(text.casefold().split())


def relation_terms(relation: str) -> list[str]:
    """What counts as naming a relation: the whole text, or one of its comma-separated parts (a LightRAG
    relation has no label; its triple carries the keywords joined with ", ")."""
    whole = " ".join(relation.split())
    parts = [" ".join(p.split()) for p in relation.split(",")]
    return list(dict.fromkeys([whole, *(p for p in parts if len(p) >= 3)]))


def _mentioned_in_flat(flat: str, triple: Sequence[str]) -> bool:
    s, r, o = triple
    return flat_text(s) in flat and flat_text(o) in flat and any(flat_text(t) in flat for t in relation_terms(r) if t)


def triple_mentioned(text: str, triple: Sequence[str]) -> bool:
    """Explore-on-Graph's test for one gold triple ``(s, r, o)`` (§3.2.2, eq. 4): subject, relation (label or
    one of its keywords) and object all appear in the text as substrings, case-insensitively, whitespace
    collapsed."""
    return _mentioned_in_flat(flat_text(text), triple)


def path_coverage(text: str, triples: Sequence[Sequence[str]]) -> float:
    """The path reward: the share of ``triples`` mentioned in ``text`` (0.0 for no triples). The text is
    folded once, so the cost is one pass over it per triple part, not per triple and call."""
    if not triples:
        return 0.0
    flat = flat_text(text)
    return sum(_mentioned_in_flat(flat, t) for t in triples) / len(triples)


__all__ += ["flat_text", "path_coverage", "relation_terms", "triple_mentioned"]
