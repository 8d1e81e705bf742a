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


def name_key(s: str) -> str:
    """The lookup key of an entity name (see the module table). Idempotent:
    ``name_key(name_key(s)) == name_key(s)``."""
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


_KEYS: dict[str, Callable[[str], str]] = {STRICT: strict_key, LENIENT: lenient_key}


def answer_key(text: str, normalizer: Normalizer = LENIENT) -> str:
    """The comparison key of one answer under ``normalizer``."""
    return key_function(normalizer)(text)


def key_function(normalizer: Normalizer) -> Callable[[str], str]:
    try:
        return _KEYS[normalizer]
    except KeyError:
        raise ValueError(f"unknown answer normalizer {normalizer!r}; choose one of {', '.join(NORMALIZERS)}") from None


def same_answer(a: str, b: str, normalizer: Normalizer = LENIENT) -> bool:
    """Whether two single answers name the same thing under ``normalizer`` (empty texts are never the same)."""
    ka, kb = answer_key(a, normalizer), answer_key(b, normalizer)
    return bool(ka) and ka == kb


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


def _keys(items: Iterable[str], normalizer: Normalizer) -> list[str]:
    key = key_function(normalizer)
    out: list[str] = []
    for i in items:
        k = key(i)
        if k and k not in out:
            out.append(k)
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
    want = set(_keys(gold, normalizer))
    readings = _readings(predicted, normalizer)
    as_written = _keys(readings[0], normalizer)
    for reading in readings[1:]:
        got = _keys(reading, normalizer)
        if want and set(got) == want and set(as_written) != want:
            return got
    return as_written


def answer_set_matches(predicted: str | None, gold: Sequence[str], normalizer: Normalizer = LENIENT) -> bool:
    """Exact match of entity sets: the predicted set equals the gold set, both under ``normalizer``."""
    want = set(_keys(gold, normalizer))
    return bool(want) and set(predicted_keys(predicted, gold, normalizer)) == want


def entity_f1(predicted: str | None, gold: Sequence[str], normalizer: Normalizer = LENIENT) -> float:
    """F1 between the predicted entity set and the gold set under ``normalizer`` (Explore-on-Graph eq. 3,
    Graph-RFT eq. 3); 0.0 when either is empty."""
    want = set(_keys(gold, normalizer))
    return _f1(predicted_keys(predicted, gold, normalizer), want) if want else 0.0


def hit1_first(predicted: str | None, gold: Sequence[str], normalizer: Normalizer = LENIENT) -> bool:
    """Hit@1 as a ranked list's top item: the first predicted entity is a gold answer."""
    want = set(_keys(gold, normalizer))
    got = predicted_keys(predicted, gold, normalizer)
    return bool(got) and got[0] in want


def hit1_any(predicted: str | None, gold: Sequence[str], normalizer: Normalizer = LENIENT) -> bool:
    """Hit@1 as RoG and Explore-on-Graph compute it: any predicted entity is a gold answer (exact keys, no
    substring hits)."""
    want = set(_keys(gold, normalizer))
    return bool(want & set(predicted_keys(predicted, gold, normalizer)))


__all__ = [
    "LENIENT",
    "MAX_LIST_CHARS",
    "NORMALIZERS",
    "STRICT",
    "Normalizer",
    "answer_key",
    "answer_set_matches",
    "entity_f1",
    "hit1_any",
    "hit1_first",
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
