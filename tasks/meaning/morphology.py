"""A relation label read as English: its words, its shape, and the surface forms and counts that follow.

``profile_from_label(label)`` splits a label into words (snake_case, camelCase, Freebase-style dotted names, URIs
and prefixed names, Wikidata-style prose), decides whether they are English at all (every word known to
lemminflect or listed in the lexicon; a token with digits or an unknown code makes the label opaque), recognises
its shape and writes ``SurfaceForms`` (``schemas.meaning``) from it with lemminflect (verb lemmas and inflections)
and inflect (articles, singulars). The counts, the symmetry and what each end is (``subject_noun``, ``object_noun``:
a person, a place) come from the lexicon (``tasks.meaning.lexicon``), turned as the shape reads the words, never
from the shape alone. The shapes:

- active verb phrase, any tense, with a particle or preposition and object words: "wrote", "studied at",
  "flows through", "co-founded", "border", "has won", "developed a vaccine against", "interacts_with";
- passive with its agent: "founded by", "was written by" (the stored object is the agent: "{o} founded {s}");
- copula with a participle or an adjective: "is located in", "born_in", "is made from", "adjacent to";
- "<noun> of": "ingredient_of", "is a species of", "is the capital of" (the subject is the noun);
- a bare noun or "has <noun>": "author", "birthPlace", "place_of_birth", "hasPart" (the object is the noun:
  ``Hamlet author Shakespeare``); a gerund before a noun is a compound noun ("filming_location");
- a machine label whose verb phrase ends in its object's kind ("awardedPrize", "located_on_chromosome"): the verb
  phrase is read and the noun becomes ``object_noun``.

A label whose words are English but whose shape is not one of these, or reads two ways, gets ``forms=None`` with
evidence saying why: a form that could read backwards is never guessed.
"""

from __future__ import annotations

import contextvars
import functools
import re
from pathlib import Path
from dataclasses import dataclass, field

import inflect
from lemminflect import getAllInflections, getAllLemmas, getAllLemmasOOV, getInflection

from schemas.meaning import Count, Evidence, RelationProfile, SurfaceForms, relation_key
from tasks.meaning.lexicon import Lexicon, NounEntry, VerbEntry, load_lexicon

# -- closed-class grammar words (not meaning: the meaning of labels lives in lexicon.yaml) ----------------------------

_PREPS = frozenset(
    "about above across after against along alongside amid among around as at before behind below beneath beside "
    "besides between beyond by despite down during for from in inside into like near of off on onto out outside "
    "over past per since than through throughout till to toward towards under underneath until up upon via with "
    "within without".split()
)
_ARTICLES = frozenset({"a", "an", "the"})
_DETERMINERS = _ARTICLES | frozenset("this that these those its their his her our my your some any each every no "
                                     "own".split())
_BE = {"is": ("present", False), "are": ("present", True), "was": ("past", False), "were": ("past", True),
       "be": ("present", True)}  # fmt: skip
_HAVE = {"has": False, "have": True, "had": False}
_MODALS = frozenset("can could may might must shall should will would".split())
_FUNCTION = _PREPS | _DETERMINERS | frozenset(_BE) | frozenset(_HAVE) | _MODALS | frozenset(
    "been being do does did and or not nor one whose which who what".split())
_PREFIXES = frozenset("co re pre non un sub self anti multi inter intra post over under counter".split())
_ORDINALS = frozenset("first last only second third sole".split())
_TYPE_WORD = re.compile(r"[a-z][a-z-]*")

_ENGINE = inflect.engine()


# -- words ------------------------------------------------------------------------------------------------------------


def _last_segment(text: str) -> str:
    """The local name of a URI ("http://schema.org/birthPlace"), a prefixed name ("dbo:birthPlace") or a dotted
    Freebase-style name ("people.person.place_of_birth"); other text unchanged."""
    if re.match(r"^[a-z][a-z0-9+.-]*://", text, re.I) or ("/" in text and " " not in text):
        text = re.split(r"[/#]", text.rstrip("/#"))[-1]
    m = re.fullmatch(r"[A-Za-z][\w-]*:([A-Za-z_][\w.-]*)", text)
    if m is not None:
        text = m.group(1)
    if "." in text and " " not in text:
        text = text.strip(".").rsplit(".", 1)[-1]
    return text


def label_words(label: str) -> list[str]:
    """The words of a label: the local name of a URI or dotted name, underscores as spaces, camel case split.
    Machine-style labels (no spaces) are lower-cased; a prose label keeps its case past the first word, so names
    inside it ("defeated Pompey at") stay names."""
    text = _last_segment(label.strip())
    machine = " " not in text
    text = text.replace("_", " ")
    if machine:
        # a prefix camel case would split off is written with its word: "weaponSubClass" -> "weapon subclass"
        text = _JOINED_PREFIX.sub(lambda m: m[1] + m[2].lower(), text)
        text = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text)
        text = re.sub(r"(?<=[A-Z])(?=[A-Z][a-z])", " ", text)
    words = text.split()
    if machine:
        out = []
        for w in words:  # "is-located-in", "part-of"; "co-occurs" keeps its prefix
            parts = w.lower().split("-")
            out.extend(parts if len(parts) > 1 and any(p in _FUNCTION for p in parts) else [w.lower()])
        return out
    title = all(w[:1].isupper() for w in words)  # "Located In", "Place Of Birth": title case, not names
    return [w.lower() if i == 0 and w[:1].isupper() and w[1:].islower() or w.lower() in _FUNCTION
            or (title and _known(w.lower())) else w for i, w in enumerate(words)]


#: A prefix English writes joined to its word, where camel case starts the word with a capital ("weaponSubClass",
#: "superClassOf", "preRelease"); not before words it stands apart from ("superBowl", "subOn").
_JOINED_PREFIX = re.compile(r"(?:(?<=[a-z])|^)(sub|Sub|super|Super|pre|Pre|multi|Multi|inter|Inter|intra|Intra|non|Non)"
                            r"([A-Z])(?=[a-z])(?!owl|n\b|ff\b)")


def _is_name(word: str) -> bool:
    return len(word) >= 2 and word[0].isupper() and word[1:].islower() and word.isalpha()


def _known(word: str) -> bool:
    return bool(getAllLemmas(word)) or bool(getAllLemmas(word.lower()))


def _english(word: str, lexicon: Lexicon) -> bool:
    w = word.casefold()
    if w in _FUNCTION or lexicon.knows_word(w):
        return True
    if not re.fullmatch(r"[a-z]+(?:['’-][a-z]+)*", w):
        return False
    if "-" in w:
        parts = w.split("-")
        return all(p in _PREFIXES or _english(p, lexicon) for p in parts)
    # a common noun of WordNet that lemminflect's list lacks ("dependency", "gemstone") is English too
    return _known(w) or _unlisted_noun(w) or _oov_verb(w) is not None or bool(_split_prefix(w)[0]) or \
        derived_word(w)


#: Prefixes English builds new words with ("subgenre", "microarchitecture", "nanosatellite").
DERIVING_PREFIXES = ("micro", "macro", "mini", "multi", "nano", "mega", "giga", "super", "sub", "semi", "hyper",
                     "inter", "intra", "infra", "ultra", "proto", "pseudo", "neo", "non", "pre", "post", "anti",
                     "counter", "over", "under", "co", "re", "un", "bio", "geo", "hydro", "electro", "photo", "tele",
                     "auto", "mono", "poly", "tri", "bi", "self")


def derived_cores(word: str) -> list[str]:
    """What follows each prefix ``word`` opens with (``DERIVING_PREFIXES``), where four letters or more follow: the
    words it may be derived from ("superepoch" -> "epoch")."""
    return [word[len(p):].lstrip("-") for p in DERIVING_PREFIXES if word.startswith(p) and len(word) - len(p) >= 4]


def derived_word(word: str) -> bool:
    """Whether lower-case ``word`` is a prefix English derives words with (``DERIVING_PREFIXES``) before a word
    lemminflect or WordNet knows (``_unlisted_noun``: "county"), of four letters or more: "subgenre",
    "microarchitecture", "subcounty"; not "statename" or "msleep"."""
    return any(_known(core) or _unlisted_noun(core) for core in derived_cores(word))


def derived_noun(word: str) -> bool:
    """Whether ``word`` is a noun the word list lacks that English derives from one with a prefix ("subgenre",
    "subregion"; not "substance", a word of its own)."""
    w = word.lower()
    return not getAllLemmas(w) and not _unlisted_noun(w) and any(
        "NOUN" in getAllLemmas(core) or _unlisted_noun(core) for core in derived_cores(w))


def _oov_verb(word: str) -> str | None:
    """The lemma of an inflected verb form lemminflect's dictionary lacks ("flavoured"), when that lemma is itself
    a known word."""
    if not word.endswith(("ed", "es", "s")) or len(word) < 5:
        return None
    for lemma in getAllLemmasOOV(word, upos="VERB").get("VERB", ()):
        if lemma != word and (_known(lemma) or any(lemma.startswith(p) and len(lemma) > len(p) + 2
                                                   and _known(lemma[len(p):]) for p in _PREFIXES)):
            return lemma
    return None


# -- verbs ------------------------------------------------------------------------------------------------------------


def _split_prefix(word: str) -> tuple[str, str]:
    """("co-", "found") for "co-found"; ("re", "found") for "refound", which the word tables lack."""
    if "-" in word:
        pre, _, core = word.rpartition("-")
        return pre + "-", core
    if not getAllLemmas(word):
        for pre in _PREFIXES:
            core = word[len(pre):]
            if word.startswith(pre) and len(core) > 2 and "VERB" in getAllLemmas(core):
                return pre, core
    return "", word


@functools.lru_cache(maxsize=8192)
def _verb_readings(word: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """``(lemma, tags)`` for each reading of ``word`` as a verb form (Penn tags VB, VBD, VBN, VBZ, VBG)."""
    prefix, core = _split_prefix(word.lower())
    out: list[tuple[str, frozenset[str]]] = []
    lemmas = list(getAllLemmas(core, upos="VERB").get("VERB", ()))
    oov = _oov_verb(core) if not lemmas and "ADJ" in getAllLemmas(core) or not getAllLemmas(core) else None
    if oov is not None:
        lemmas.append(oov)
    for lemma in lemmas:
        infl = dict(getAllInflections(lemma, upos="VERB"))
        infl.setdefault("VBN", infl.get("VBD", ()))  # the tables leave out a participle that is the past tense
        tags = {t for t, forms in infl.items() if core in forms and t != "VBP"}
        if core == lemma:
            tags.add("VB")
        if not tags:  # a spelling the tables lack ("modelled"): read the suffix
            if core.endswith("ed"):
                tags = {"VBD", "VBN"}
            elif core.endswith("ing"):
                tags = {"VBG"}
            elif core.endswith("s"):
                tags = {"VBZ"}
        if tags:
            out.append((prefix + lemma, frozenset(tags)))
    return tuple(out)


def _inflect(lemma: str, tag: str) -> str:
    prefix, core = _split_prefix(lemma)
    if core == "be":
        return {"VB": "be", "VBD": "was", "VBN": "been", "VBZ": "is", "VBG": "being"}[tag]
    infl = getAllInflections(core, upos="VERB")
    forms = infl.get(tag) or (infl.get("VBD") if tag == "VBN" else None)
    if not forms:
        forms = getInflection(core, tag=tag)
    return prefix + (forms[0] if forms else core)


def _is_noun(word: str) -> bool:
    """A noun lemminflect knows, a common noun of WordNet its list lacks (``unlisted_nouns.txt``: "dependency"), one
    English derives from a noun with a prefix ("subgenre", "microarchitecture"), or a compound joined by hyphens whose
    last part is a noun ("half-life", "by-product")."""
    lem = getAllLemmas(word.lower())
    return "NOUN" in lem or "PROPN" in lem or _unlisted_noun(word.lower()) or derived_noun(word) or _hyphen_noun(word)


def _unlisted_noun(word: str) -> bool:
    """Whether ``word`` is a common noun of WordNet that lemminflect's list lacks, or its plural ("dependencies")."""
    unlisted = word_list("unlisted_nouns.txt")
    return word in unlisted or (_ENGINE.singular_noun(word) or "") in unlisted


def _hyphen_noun(word: str) -> bool:
    """Whether ``word`` is a compound joined by hyphens whose last part is a noun and whose other parts are words or
    prefixes ("half-life", "by-product", "co-founder"; not "x-y" or "a-b")."""
    parts = word.lower().split("-")
    if len(parts) < 2 or not all(re.fullmatch(r"[a-z]{2,}", p) for p in parts):
        return False
    return "NOUN" in getAllLemmas(parts[-1]) and all(p in _PREFIXES or _known(p) for p in parts[:-1])


def _singular(noun: str) -> str:
    """The singular of a noun phrase's head: its last word ("castrated males" -> "castrated male"), or the word
    before "of" in "<head> of <...>" ("places of birth" -> "place of birth"; "number of deaths" stays)."""
    words = noun.split()
    if "of" in words[1:-1]:
        i = words.index("of")
        return " ".join([*_singular(" ".join(words[:i])).split(), *words[i:]])
    *head, last = words
    if last.lower() in _FUNCTION:
        return noun
    lem = getAllLemmas(last.lower()).get("NOUN")
    if lem and lem[0] == last.lower():
        return noun
    if lem:
        one = lem[0]
    else:
        one = _ENGINE.singular_noun(last) or last  # type: ignore[assignment]
        if one != last and not _known(str(one)) and str(one).lower() not in word_list("unlisted_nouns.txt"):
            one = last
    return " ".join([*head, str(one)])


def singular(noun: str) -> str:
    """The singular of a noun phrase (``_singular``), for the readings made from a graph's values."""
    return _singular(noun)


def indefinite(noun: str) -> str:
    """``noun`` with "a" or "an" as it is said, not spelt: "a use", "a unit", "an hour", "an ISO code"; a noun whose
    head English does not count is said bare ("required research", "support equipment")."""
    return noun if mass_noun(noun) else _ENGINE.a(noun)


@functools.lru_cache(maxsize=None)
def word_list(name: str) -> frozenset[str]:
    """The words of one of this folder's word lists (one a line, ``#`` comments), read once: the WordNet tables
    ``bench/wordnet_tables.py`` builds (``unlisted_nouns.txt``, ``person_nouns.txt``, ...), ``mass_nouns.txt``
    (nouns English uses without "a"), ``noun_first.txt`` (one-word nouns English uses as nouns three times as often as verbs, or
    more: WordNet's sense-tagged counts, ``bench/wordnet_tables.py``; "book", "skill", not "record" or "border"),
    ``object_verbs.txt`` (verbs no tagged sense of which goes without an object: "introduce", "marry")."""
    text = Path(__file__).with_name(name).read_text(encoding="utf-8")
    return frozenset(w.strip() for w in text.splitlines() if w.strip() and not w.startswith("#"))


def mass_noun(noun: str) -> bool:
    """Whether a noun phrase's head is a noun English uses without "a" (``mass_nouns.txt``, the common ones by hand;
    ``uncountable_nouns.txt``, the abstract nouns whose plural is rare, measured by ``bench/uncountable_nouns.py``:
    "resistance", "evidence"): its last word, or the word before its "of" phrase ("research of X" -> "research")."""
    words = noun.lower().split()
    if "of" in words[1:]:
        words = words[:words.index("of")]
    return bool(words) and (words[-1] in word_list("mass_nouns.txt") or words[-1] in word_list("uncountable_nouns.txt"))


def _with_article(article: str, noun: str) -> str:
    if article in ("a", "an"):
        return indefinite(noun)
    if article == "none":
        return noun
    return f"{article} {noun}"


def _join(*parts: str) -> str:
    return " ".join(" ".join(p for p in parts if p).split())


# -- shapes -----------------------------------------------------------------------------------------------------------


class _Unreadable(Exception):
    """The words are English but their shape is not one we can put into forms safely; the message says why."""


@dataclass
class _Reading:
    forms: SurfaceForms
    shape: str  # a short description for the evidence
    kind: str  # "verb" or "noun": the lexicon section the counts come from
    keys: list[str]  # lexicon phrases to try, best first
    swap: bool = False  # the lexicon entry counts the other direction (passive agent, bare noun)
    default_tense: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


def _ends_open(rest: list[str]) -> bool:
    """Whether words after a verb can be followed directly by the object: nothing, a final preposition or
    particle, or one verb or adjective ("began building", "helped record", "made possible")."""
    if not rest:
        return True
    last = rest[-1].lower()
    if last in _PREPS:
        return True
    if last in _DETERMINERS or last in _FUNCTION:
        return False
    lem = getAllLemmas(last)
    if len(rest) == 1:  # "made possible", "began building"; not "has won prize", "works written"
        return (last.endswith("ing") and "VERB" in lem) or ("ADJ" in lem and "VERB" not in lem)
    if rest[-2].lower() == "to" and "VERB" in lem:  # "is used to make", "aimed to replace"
        return True
    return last.endswith("ing") and "VERB" in lem


def _tense_of(tags: frozenset[str]) -> tuple[str, bool] | None:
    """(tense, plural) of a finite verb form; None for a participle or gerund."""
    if "VBD" in tags:
        return "past", False
    if "VBZ" in tags:
        return "present", False
    if "VB" in tags:
        return "present", True
    return None


def _active(lemma: str, word: str, tags: frozenset[str], tense: str, plural: bool, adverbs: list[str],
            rest: list[str], modal: str = "") -> _Reading:
    """An active verb phrase: "wrote", "flows through", "has won", "border", "developed a vaccine against",
    "may treat" (``tense`` "modal" with ``modal``)."""
    if not _ends_open(rest):
        raise _Unreadable(f"the object would follow {rest[-1]!r} with no preposition before it "
                          f"({' '.join([word, *rest])!r})")
    adv = " ".join(adverbs)
    tail = " ".join(rest)
    base = _inflect(lemma, "VB")
    part = word if "VBN" in tags and tense == "perfect" else _inflect(lemma, "VBN")
    if tense == "modal":  # "may treat": the modal opens the question, and no reduced clause drops it
        forms = SurfaceForms(
            statement=_join("{s}", modal, adv, base, tail, "{o}"),
            ask_object=[f"{{wh}} {_join(modal, '{s}', adv, base, tail)}?"]
            + ([f"{{wh}} {_join(modal, 'be', adv, part)} by {{s}}?"] if not rest else []),
            object_clause=([f"{{the}} {{that}} {_join(modal, 'be', adv, part)} by {{s}}"] if not rest else [])
            + [f"{{the}} {{that}} {_join('{s}', modal, adv, base, tail)}"],
            ask_subject=[f"{{wh}} {_join(modal, adv, base, tail)} {{o}}?"],
            subject_clause=[f"{{the}} {{that}} {_join(modal, adv, base, tail)} {{o}}"],
        )
        return _Reading(forms, f"active verb {base!r} after {modal!r}" + (f" with {tail!r}" if tail else ""), "verb",
                        [_join(lemma, tail), _join(_split_prefix(lemma)[1], tail)])
    if tense == "past":
        finite = finite_sg = word if "VBD" in tags else _inflect(lemma, "VBD")
        aux, passive_be = "did", "was"
        asked = base
    elif tense == "present":
        finite = word if not plural else base
        finite_sg = _inflect(lemma, "VBZ")
        aux, passive_be = ("do" if plural else "does"), ("are" if plural else "is")
        asked = base
    else:  # perfect
        have = "have" if plural else "has"
        finite, finite_sg = f"{have} {part}", f"has {part}"
        aux, passive_be = have, "has been"
        asked = part
    ask_object = [f"{{wh}} {_join(aux, '{s}', adv, asked, tail)}?"]
    object_clause = [f"{{the}} {{that}} {_join('{s}', adv, finite, tail)}"]
    if not rest:  # a transitive verb: the object can be told by a passive ("the work written by X")
        be = "was" if tense == "past" else ("is" if tense == "present" else "has been")
        ask_object.append(f"{{wh}} {_join(be, adv, part)} by {{s}}?")
        object_clause.insert(0, f"{{the}} {_join(adv, part)} by {{s}}")
    del passive_be
    forms = SurfaceForms(
        statement=_join("{s}", adv, finite, tail, "{o}"),
        ask_object=ask_object,
        object_clause=object_clause,
        ask_subject=[f"{{wh}} {_join(adv, finite_sg, tail)} {{o}}?"],
        subject_clause=[f"{{the}} {{that}} {_join(adv, finite_sg, tail)} {{o}}"],
    )
    keys = [_join(lemma, tail)]
    prefix, core = _split_prefix(lemma)
    if prefix:
        keys.append(_join(core, tail))
    what = {"past": "past", "present": "present plural" if plural else "present", "perfect": "perfect"}[tense]
    return _Reading(forms, f"active {what} verb {base!r}" + (f" with {tail!r}" if tail else ""), "verb", keys)


def _passive_agent(lemma: str, part: str, tense: str, adverbs: list[str], explicit_be: bool) -> _Reading:
    """A passive with its agent: "founded by", "was written by", "is supported by" ({o} is the agent)."""
    adv = " ".join(adverbs)
    base = _inflect(lemma, "VB")
    if tense.startswith("modal:"):  # "may be treated by": "{o} may treat {s}"
        modal = tense.split(":", 1)[1]
        forms = SurfaceForms(
            statement=_join("{o}", modal, adv, base, "{s}"),
            ask_object=[f"{{wh}} {_join(modal, adv, base)} {{s}}?"],
            object_clause=[f"{{the}} {{that}} {_join(modal, adv, base)} {{s}}"],
            ask_subject=[f"{{wh}} {_join(modal, 'be', adv, part)} by {{o}}?"],
            subject_clause=[f"{{the}} {{that}} {_join(modal, 'be', adv, part)} by {{o}}",
                            f"{{the}} {{that}} {_join('{o}', modal, adv, base)}"],
        )
        return _Reading(forms, f"passive of {base!r} after {modal!r} with its agent: the object is the agent", "verb",
                        [lemma, _split_prefix(lemma)[1]], swap=True)
    if tense == "past":
        active, be, aux = _inflect(lemma, "VBD"), "was", "did"
    else:
        active, be, aux = _inflect(lemma, "VBZ"), "is", "does"
    forms = SurfaceForms(
        statement=_join("{o}", adv, active, "{s}"),
        ask_object=[f"{{wh}} {_join(adv, active)} {{s}}?"],
        object_clause=[f"{{the}} {{that}} {_join(adv, active)} {{s}}"],
        ask_subject=[f"{{wh}} {_join(be, adv, part)} by {{o}}?", f"{{wh}} {_join(aux, '{o}', adv, base)}?"],
        subject_clause=[f"{{the}} {_join(adv, part)} by {{o}}", f"{{the}} {{that}} {_join(be, adv, part)} by {{o}}",
                        f"{{the}} {{that}} {_join('{o}', adv, active)}"],
    )
    how = "with 'is'/'was'" if explicit_be else "without an auxiliary"
    return _Reading(forms, f"passive of {base!r} with its agent ({how}): the object is the agent", "verb",
                    [lemma, _split_prefix(lemma)[1]], swap=True)


def _noun_passive(noun: str, part: str, lemma: str) -> _Reading:
    """"<noun> <participle> by" ("Proof shortened by", "lyrics written by"): the object did the verb to the subject's
    noun, in the past ("{o} shortened the proof of {s}"; "the theorem whose proof was shortened by {o}")."""
    active = _inflect(lemma, "VBD")
    was = "was" if _singular(noun) == noun else "were"
    forms = SurfaceForms(
        statement=f"{{o}} {active} the {noun} of {{s}}",
        ask_object=[f"{{wh}} {active} the {noun} of {{s}}?"],
        object_clause=[f"{{the}} {{that}} {active} the {noun} of {{s}}"],
        ask_subject=[f"{{wh}} had its {noun} {part} by {{o}}?"],
        subject_clause=[f"{{the}} whose {noun} {was} {part} by {{o}}"],
    )
    return _Reading(forms, f"'<noun> <participle> by' with noun {noun!r}: the object {active} the subject's {noun}",
                    "verb", [lemma, _split_prefix(lemma)[1]], swap=True)


def _copula(be: str, plural: bool, rest: list[str], key_rest: list[str]) -> _Reading:
    """A copula with a participle, an adjective or a preposition: "is located in", "was born in", "is rich in"."""
    if not _ends_open(rest) and not (len(rest) >= 1 and "VBN" in {t for _, ts in _verb_readings(rest[-1]) for t in ts}):
        raise _Unreadable(f"the object would follow {rest[-1]!r} with no preposition before it "
                          f"({' '.join([be, *rest])!r})")
    tail = " ".join(rest)
    sg = {"are": "is", "were": "was"}.get(be, be)
    modal, _, be_word = be.rpartition(" ")  # "may be": the modal opens the question, "be" stays with the rest
    # "the city located in X", "the food rich in iron"; not "the X near Y", nor one that drops a modal
    reduced = rest[0].lower() not in _PREPS and not modal
    subject_clause = [f"{{the}} {{that}} {sg} {tail} {{o}}"]
    if reduced:
        subject_clause.append(f"{{the}} {tail} {{o}}")
    forms = SurfaceForms(
        statement=f"{{s}} {be} {tail} {{o}}",
        ask_object=[f"{{wh}} {modal} {{s}} {be_word} {tail}?" if modal else f"{{wh}} {be} {{s}} {tail}?"],
        object_clause=[f"{{the}} {{that}} {{s}} {be} {tail}"],
        ask_subject=[f"{{wh}} {sg} {tail} {{o}}?"],
        subject_clause=subject_clause,
    )
    return _Reading(forms, f"copula {be!r} with {tail!r}", "verb", [_join("be", " ".join(key_rest))])


def _noun_of(be: str, plural: bool, article: str | None, noun: str, prep: str, lexicon: Lexicon,
             modifiers: list[str]) -> _Reading:
    """ "<noun> of": the subject is the noun ("lipid ingredient_of drug": "lipid is an ingredient of drug").
    ``article`` is the one the label writes ("a", "the", "none" for "was king of"), None when the label has no
    copula ("ingredient_of"): then the lexicon's, or "the" when one thing has one <noun>, else "a"/"an"."""
    one = _singular(noun)
    head = one.split()[-1]
    entry = lexicon.noun(one) if modifiers else (lexicon.noun(one) or lexicon.noun(head))
    computed = "a"
    if _singles(modifiers):
        computed = "the"
    elif entry is not None and entry.article is not None:
        computed = entry.article
    elif entry is not None and entry.subjects_per_object == "one":
        computed = "the"
    written = article if article is not None else computed
    single = written if not plural else (computed if article in (None, "none") else written)
    np_sg = _with_article(single, one)
    if article is None:  # no copula written ("alumniOf", "ingredient_of"): the singular with its article
        np_label = _with_article(written, one)
    elif plural:
        np_label = noun if written == "none" else f"{written} {noun}"
    else:
        np_label = _with_article(written, noun)
    sg = {"are": "is", "were": "was"}.get(be, be)
    have = "had" if sg == "was" else "has"
    present = sg == "is"
    bare = single == "none" and article == "none" and not (entry is not None and entry.article == "none")
    as_np = f"its {one}" if single == "the" else (one if bare else indefinite(one))  # "as king", "as a part"
    ask_object = [f"{{wh}} {be} {{s}} {np_label} {prep}?"]
    object_clause = []
    if prep == "of" and not plural:
        ask_object.append(f"{{wh}} {have} {{s}} as {as_np}?")
        if single == "the":
            object_clause.append(f"{{the}} whose {one} {sg} {{s}}")
        object_clause.append(f"{{the}} {{that}} {have} {{s}} as {as_np}")
    else:  # the object sits inside the clause: a name only
        object_clause.append(f"{{the}} {{that}} {{s}} {be} {np_label} {prep}")
    subject_clause = [f"{{the}} {{that}} {sg} {np_sg} {prep} {{o}}"]
    if single == "the" and (present or _singles(modifiers)):
        subject_clause.append(f"the {one} {prep} {{o}}")
    forms = SurfaceForms(
        statement=f"{{s}} {be} {np_label} {prep} {{o}}",
        ask_object=ask_object,
        object_clause=object_clause,
        ask_subject=[f"{{wh}} {sg} {np_sg} {prep} {{o}}?"],
        subject_clause=subject_clause,
    )
    keys = [one] if modifiers else [one, head]
    if prep != "of":
        keys = [f"{k} {prep}" for k in keys]
    return _Reading(forms, f"'<noun> {prep}' with noun {one!r} (the subject is the {one})", "noun", keys,
                    extra={"article": single, "single": str(_singles(modifiers))})


def _singles(modifiers: list[str]) -> bool:
    """Whether a noun's modifiers name one of its kind: an ordinal or a superlative ("first", "largest")."""
    return any(m in _ORDINALS or (m.endswith("est") and "ADJ" in getAllLemmas(m) and getAllLemmas(m)["ADJ"][0] != m)
               for m in modifiers)


def _noun_head(words: list[str]) -> bool:
    """Whether ``words`` (before a final preposition) are a plain noun phrase whose last word is a noun and not
    a participle or an adjective ("king", "castrated males", "part"; not "located", "rich", "native")."""
    if not words or any(w.lower() in _FUNCTION for w in words):
        return False
    head = words[-1].lower()
    lem = getAllLemmas(head)
    if "NOUN" not in lem and not (_is_name(words[-1]) and len(words) == 1):
        return False
    return not any("VBN" in tags for _, tags in _verb_readings(head))


def bare_noun_forms(one: str, article: str) -> SurfaceForms:
    """The forms of a bare noun label whose object is the ``one`` of its subject, with ``article`` ("the": a thing
    has one, "the author of X", "whose author is Y"; "a"/"an"/"none": it may have several)."""
    np = _with_article(article, one)
    as_np = f"its {one}" if article == "the" else indefinite(one)
    if article == "the":
        object_clause = [f"the {one} of {{s}}"]
        subject_clause = [f"{{the}} whose {one} is {{o}}"]
    else:
        object_clause = [f"{{the}} {{that}} is {np} of {{s}}"]
        subject_clause = [f"{{the}} {{that}} has {{o}} as {as_np}"]
    return SurfaceForms(
        statement=f"{{o}} is {np} of {{s}}",
        ask_object=[f"{{wh}} is {np} of {{s}}?"],
        object_clause=object_clause,
        ask_subject=[f"{{wh}} has {{o}} as {as_np}?"],
        subject_clause=subject_clause,
    )


def _bare_noun(noun: str, lexicon: Lexicon, has: bool) -> _Reading:
    """A bare noun or "has <noun>": the object is the noun of the subject ("Hamlet author Shakespeare")."""
    one = _singular(noun)
    modifiers = one.split()[:-1]
    entry = lexicon.noun(one)
    if _singles(modifiers):  # "largest city", "first president": one of its kind
        article = "the"
    elif entry is not None and entry.article is not None:
        article = entry.article
    elif entry is not None and entry.subjects_per_object == "many":
        article = "a"
    else:
        article = "the"
    forms = bare_noun_forms(one, article)
    what = "'has <noun>'" if has else "bare noun"
    return _Reading(forms, f"{what} {one!r} (the object is the {one} of the subject)", "noun",
                    [one], swap=True, extra={"article": article, "single": str(_singles(modifiers))})


def _one_of(be: str, rest: list[str]) -> _Reading:
    """ "is one of the": the object names a group ("barley is one of the founder crops")."""
    sg = {"are": "is", "were": "was"}.get(be, be)
    tail = " ".join(rest)
    if sg != be:
        raise _Unreadable("a plural subject cannot be 'one of' a group")
    forms = SurfaceForms(
        statement=f"{{s}} {be} {tail} {{o}}",
        ask_object=[f"{{wh}} {be} {{s}} one of?"],
        object_clause=[f"{{the}} {{that}} {{s}} {be} one of"],
        ask_subject=[f"{{wh}} {sg} {tail} {{o}}?"],
        subject_clause=[f"{{the}} {{that}} {sg} {tail} {{o}}"],
    )
    return _Reading(forms, f"{be!r} {tail!r}: the object names a group the subject is one of", "verb",
                    [_join("be", tail)])


def _noun_phrase(words: list[str]) -> bool:
    """Whether ``words`` read as a noun phrase ("author", "birth place", "place of birth", "parent organization"), or
    two joined by "or" ("regency or city", "state or province": a column whose rows hold one or the other)."""
    low = [w.lower() for w in words]
    if low.count("or") == 1 and 0 < low.index("or") < len(low) - 1:
        at = low.index("or")
        return _noun_phrase(words[:at]) and _noun_phrase(words[at + 1:])
    if not words or words[-1].lower() in _FUNCTION or not _is_noun(words[-1]):
        return False
    return all(w.lower() in {"of"} or (w.lower() not in _FUNCTION and (bool(getAllLemmas(w.lower())) or _is_noun(w)
                                                                     or derived_word(w.lower()) or _hyphen_noun(w)))
               for w in words)


def _read(words: list[str], lexicon: Lexicon, machine: bool = False) -> _Reading:
    """The shape of a label's words (module docstring); ``_Unreadable`` when none fits safely. A ``machine``
    label ("isCitizenOf") drops articles, so one it leaves out is not taken as written.

    Long because the shapes are tried in order of precedence (copula, perfect, the lexicon's phrases, then the
    word's own readings), each on what the earlier ones left; one function keeps that order readable top to
    bottom, and each shape's forms are built by its own helper (``_copula``, ``_finite``, ``_bare_noun``...)."""
    if words and words[0].lower() in _ARTICLES and len(words) >= 3:  # "the capital of": a copula left out
        words = ["is", *words]
    if len(words) >= 2 and words[0].lower() in _MODALS:
        return _modal(words[0].lower(), words[1:], lexicon)
    low = [w.lower() for w in words]
    n = len(low)
    first = low[0]
    # copula: "is located in", "was a member of", "is the capital of", "were spread by"
    if first in _BE and n >= 2:
        tense, plural = _BE[first]
        be = first if first != "be" else "is"
        rest, rlow = words[1:], low[1:]
        if rlow[0] in _ARTICLES:
            if n < 4 or rlow[-1] not in _PREPS:
                raise _Unreadable(f"'{' '.join(words)}' has no preposition before the object")
            noun_words = rest[1:-1]
            if any(w.lower() in _FUNCTION for w in noun_words):
                raise _Unreadable(f"'{' '.join(noun_words)}' is not a plain noun phrase")
            modifiers = [w.lower() for w in noun_words[:-1]]
            return _noun_of(be, plural, rlow[0], " ".join(noun_words), rlow[-1], lexicon, modifiers)
        if rlow[:2] == ["one", "of"]:
            return _one_of(be, rest)
        if len(rlow) >= 2 and rlow[-1] in _PREPS and (_noun_head(rest[:-1]) or (  # "is enantiomer of": listed
                rlow[-1] == "of" and lexicon.noun(_singular(" ".join(rlow[:-1]))) is not None)) and (
                rlow[-1] == "of" or "ADJ" not in getAllLemmas(rlow[-2])):  # "was king of", "is part of"
            return _noun_of(be, plural, None if machine else "none", " ".join(rest[:-1]), rlow[-1], lexicon,
                            [w.lower() for w in rest[:-2]])
        agent = _passive_by(rlow, 0, tense if first != "be" else "present")
        if agent is not None:
            return agent
        return _copula(be, plural, rest, [w for w in rlow if not _adverb(w)])
    # perfect or "has <noun>"
    if first in _HAVE and n >= 2:
        second = low[1]
        readings = _verb_readings(second)
        if any("VBN" in tags for _, tags in readings) and not lexicon.noun(_singular(" ".join(low[1:]))):
            lemma = next(lem for lem, tags in readings if "VBN" in tags)
            tags = next(tags for lem, tags in readings if "VBN" in tags)
            return _active(lemma, words[1], tags, "perfect", _HAVE[first], [], words[2:])
        if _noun_phrase(words[1:]) or lexicon.noun(_singular(" ".join(low[1:]))):  # "has parent hydride"
            return _bare_noun(" ".join(low[1:]), lexicon, has=True)
        raise _Unreadable(f"'{' '.join(words)}' is neither a perfect verb nor 'has <noun>'")
    # leading adverbs: "first classified", "independently proposed"
    adverbs, i = _leading_adverbs(low, 0)
    word, rest, rlow = words[i], words[i + 1:], low[i + 1:]
    wlow = word.lower()
    readings = _verb_readings(wlow)
    tail = " ".join(rlow)
    # what the lexicon says the phrase is
    verb_listed = [(lem, tags) for lem, tags in readings
                   if lexicon.verb(_join(lem, tail)) or lexicon.verb(_join(_split_prefix(lem)[1], tail))]
    be_listed = [(lem, tags) for lem, tags in readings if "VBN" in tags and lexicon.verb(_join("be", wlow, tail))]
    if not be_listed and not readings and lexicon.verb(_join("be", wlow, tail)):
        be_listed = [(wlow, frozenset({"ADJ"}))]
    noun_text = " ".join(low[i:])
    if not adverbs:
        if rlow and rlow[-1] == "of" and lexicon.noun(_singular(" ".join(low[:-1]))) \
                and not verb_listed and not be_listed:
            return _noun_of("is", False, None, " ".join(low[:-1]), rlow[-1], lexicon, [])
        if lexicon.noun(_singular(noun_text)) and not verb_listed and not be_listed:
            return _bare_noun(noun_text, lexicon, has=False)
    if be_listed:
        entry = lexicon.verb(_join("be", wlow, tail))
        be = "was" if entry is not None and entry.tense == "past" else "is"
        return _copula(be, False, words, low[i:])  # adverbs kept in the forms, not in the key
    if rlow == ["by"]:
        lemma = _participle_lemma(wlow)
        if lemma is not None:
            entry = lexicon.verb(lemma)
            tense = entry.tense if entry is not None and entry.tense else "past"
            return _passive_agent(lemma, wlow, tense, adverbs, False)
    if not adverbs and len(rlow) == 2 and rlow[1] == "by" and _is_noun(wlow) and not verb_listed and \
            _participle_lemma(rlow[0]) is not None:
        # "Proof shortened by", "lyrics written by", "musicComposedBy": the subject's <noun> was <participle> by the
        # object ("whose proof was shortened by X"), not a verb "proof" with a participle after it
        return _noun_passive(wlow, rlow[0], _participle_lemma(rlow[0]))  # type: ignore[arg-type]
    if verb_listed:
        lemma, tags = verb_listed[0]
        return _finite(lemma, word, tags, adverbs, rest, machine)
    if readings and not rest and any(a in _SEQUENCE_ADVERBS for a in adverbs) and \
            any("VBN" in tags for _, tags in readings):
        # "firstSeen", "lastModified", "firstAired": when the subject was first seen, not what it "is first seen"
        raise _Unreadable(f"'{' '.join(low)}' says when the subject underwent the verb, not what the object is")
    if readings:
        finite = [(lem, tags) for lem, tags in readings if tags & {"VBD", "VBZ"}]
        base = [(lem, tags) for lem, tags in readings if "VB" in tags]
        participle = [(lem, tags) for lem, tags in readings if tags == frozenset({"VBN"})]
        noun = _is_noun(wlow) and not finite
        passive = _object_verb_participle(readings, rlow, wlow, lexicon)
        if not rest and not adverbs and not verb_listed and _plural_column(wlow, readings):
            # "Quarks", "tags", "Colors": a column named by a plural noun holds the subject's quarks, not what it
            # "quarks"; a verb that names a state ("contains", "includes") or one the lexicon lists stays a verb
            if _no_singular(wlow):
                # "clothes", "scissors": no verb ("X clothes Y"), and a noun with no singular cannot be said of the one
                # object a column holds ("whose clothes is Hanten Shirt")
                raise _Unreadable(f"{word!r} is a noun with no singular: said of one object it reads neither as a "
                                  "verb nor as the noun")
            return _bare_noun(_singular(wlow), lexicon, has=False)
        if passive is not None and not adverbs:
            # "sold under", "caught in", "appointed on the advice of": a verb whose usual sense takes an object,
            # followed by a preposition and no object, is its passive participle ("X was sold under Y")
            return _copula(passive, False, words, low[i:])
        if not adverbs and len(rlow) >= 2 and rlow[-1] == "of" and _noun_head(rest[:-1]) and \
                any("VBN" in tags for _, tags in readings):
            # "modified version of", "revised edition of", "elected member of": a participle before a noun and
            # "of" modifies the noun ("X is a modified version of Y"), not a verb with an object ("X modified
            # version of Y")
            return _noun_of("is", False, None, " ".join(low[i:-1]), "of", lexicon, [wlow])
        if not rest and finite and not noun and "VBZ" in finite[0][1] and \
                verb_frames().get(finite[0][0], ("", False))[0] == "intr":
            # "depends", "relies": a verb that takes no object, with no preposition for the object ("X depends Y");
            # a past ("ended", "passed") names an event, and most take an object ("the treaty ended the war")
            raise _Unreadable(f"{word!r} takes no object and the label gives no preposition before it")
        if finite:
            return _finite(finite[0][0], word, finite[0][1], adverbs, rest)
        if participle and not base and rlow and rlow[-1] not in _PREPS and not adverbs and _noun_phrase(rest):
            # "hidden ability", "known issue": a participle before a noun is its modifier, a compound noun ("the
            # hidden ability of X"); a passive participle takes no object after it
            return _bare_noun(noun_text, lexicon, has=False)
        if participle and not base:  # "born in", "written in": a participle only, read with a copula
            return _copula("is", False, words, low[i:])
        if base and noun:
            if rlow and rlow[-1] == "of" and not adverbs:
                return _noun_of("is", False, None, " ".join(low[i:-1]), "of", lexicon, [])
            if not rlow and wlow in word_list("noun_first.txt"):
                # "book", "skill": one word that English uses as a noun far more often than as a verb names what
                # the column holds ("the book of Acid Bolt"); a bare verb would not agree with one subject anyway
                return _bare_noun(noun_text, lexicon, has=False)
            if not rlow:
                raise _Unreadable(f"{word!r} reads as a noun or as a verb; the lexicon lists neither")
            if _noun_phrase(words[i:]) and not adverbs:
                return _bare_noun(noun_text, lexicon, has=False)
        if base:
            return _finite(base[0][0], word, base[0][1], adverbs, rest, machine)
        if rest and not adverbs and all("VBG" in tags for _, tags in readings):
            # a gerund before a noun is a compound noun: "filming location", "connecting line"
            if rlow[-1] == "of" and len(rlow) >= 2 and _noun_phrase(words[i:-1]):
                return _noun_of("is", False, None, " ".join(low[i:-1]), "of", lexicon, [])
            if _noun_phrase(words[i:]):
                return _bare_noun(noun_text, lexicon, has=False)
        raise _Unreadable(f"{word!r} is not a finite verb")
    if adverbs:
        raise _Unreadable(f"no verb after {' '.join(adverbs)!r}")
    lem = getAllLemmas(wlow)
    if "ADJ" in lem and rlow and rlow[-1] in _PREPS and ("NOUN" not in lem or rlow[-1] != "of") and not (
            rlow[-1] == "of" and len(low) >= 3 and _noun_phrase(words[1:-1])):
        return _copula("is", False, words, low)  # "adjacent to", "rich in", "native to"; not "electoral district of"
    if rlow and rlow[-1] in _PREPS and all(w not in _FUNCTION for w in low[:-1]) and _is_noun(low[-2]):
        return _noun_of("is", False, None, " ".join(low[:-1]), rlow[-1], lexicon, [])
    if _noun_phrase(words):
        return _bare_noun(" ".join(low), lexicon, has=False)
    raise _Unreadable(f"'{' '.join(words)}' is not a verb phrase, a copula phrase or a noun phrase")


_VERB_FRAMES_FILE = Path(__file__).with_name("verb_frames.tsv")


@functools.lru_cache(maxsize=1)
def verb_frames() -> dict[str, tuple[str, bool]]:
    """``lemma -> (frames, stative)`` of ``verb_frames.tsv`` (WordNet 3.0, ``bench/wordnet_tables.py``): whether the
    verb's most frequent sense takes an object (``tr``), never does (``intr``) or both, and whether it is a state."""
    out: dict[str, tuple[str, bool]] = {}
    for line in _VERB_FRAMES_FILE.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            lemma, kind, stative = line.split("\t")
            out[lemma] = (kind, stative == "1")
    return out


def _object_verb_participle(readings: tuple[tuple[str, frozenset[str]], ...], rest: list[str], word: str,
                            lexicon: Lexicon) -> str | None:
    """The copula a past form before a preposition is read with as a passive participle, or None: the form is both
    a past tense and a participle ("sold", not "wrote" or "written"), a preposition follows it (no object), and the
    verb's most frequent sense always takes an object (``verb_frames``: "sell", "catch", "appoint"; not "emigrate"
    or "work"), or none of its senses goes without one (``object_verbs.txt``: "introduce", "marry"). The copula is
    "is" for a state (WordNet's stative verbs, or a participle the lexicon lists as a present state with another
    preposition: "be located in" makes "located at" one), else "was" ("was appointed")."""
    if not rest or rest[0] not in _PREPS:
        return None
    for lemma, tags in readings:
        if {"VBD", "VBN"} <= tags:
            kind, stative = verb_frames().get(lemma, ("", False))
            if kind == "tr" or lemma in word_list("object_verbs.txt"):
                state = stative or any(key.startswith(f"be {word} ") and entry.tense != "past"
                                       for key, entry in lexicon.verbs.items())
                return "is" if state else "was"
    return None


def _no_singular(word: str) -> bool:
    """Whether ``word`` is a noun in "s" with no singular ("clothes", "scissors"): its own and only noun lemma."""
    return word.endswith("s") and getAllLemmas(word).get("NOUN", ()) == (word,)


def _plural_column(word: str, readings: tuple[tuple[str, frozenset[str]], ...]) -> bool:
    """Whether ``word`` alone is a plural noun sooner than a verb's third person: it is the plural of a noun
    ("quarks", "tags"), or a noun with no singular ("clothes", "scissors"), and the verb it would be names no state
    (``verb_frames``: not "contains", "includes") or is no verb WordNet knows ("quark")."""
    one = _singular(word)
    if not _no_singular(word) and (one == word or "NOUN" not in getAllLemmas(one)):
        return False
    vbz = [lem for lem, tags in readings if "VBZ" in tags]
    return bool(vbz) and all(not verb_frames().get(lem, ("", False))[1] for lem in vbz)


def _leading_adverbs(low: list[str], start: int) -> tuple[list[str], int]:
    """The adverbs of ``low`` from ``start`` on ("first", "later"), and the index of the first word after them (the
    last word is never taken)."""
    i = start
    while i < len(low) - 1 and _adverb(low[i]):
        i += 1
    return low[start:i], i


def _passive_by(low: list[str], start: int, tense: str) -> _Reading | None:
    """``low[start:]`` read as "[adverbs] <participle> by" ("first classified by"), else None."""
    adverbs, i = _leading_adverbs(low, start)
    if len(low) - i == 2 and low[-1] == "by":
        lemma = _participle_lemma(low[i])
        if lemma is not None:
            return _passive_agent(lemma, low[i], tense, adverbs, True)
    return None


def _modal(modal: str, words: list[str], lexicon: Lexicon) -> _Reading:
    """"may treat", "may be treated by", "can be found in"."""
    low = [w.lower() for w in words]
    if low[0] == "be" and len(low) >= 2:
        agent = _passive_by(low, 1, f"modal:{modal}")
        if agent is not None:
            return agent
        if low[1] in _ARTICLES or low[1] == "one":
            raise _Unreadable(f"a noun after {modal!r} 'be' is not read")
        return _copula(f"{modal} be", False, words[1:], [w for w in low[1:] if not _adverb(w)])
    adverbs, i = _leading_adverbs(low, 0)
    for lemma, tags in _verb_readings(low[i]):
        if "VB" in tags:
            return _active(lemma, words[i], tags, "modal", False, adverbs, words[i + 1:], modal=modal)
    raise _Unreadable(f"{words[i]!r} after {modal!r} is not a verb's base form")


def _finite(lemma: str, word: str, tags: frozenset[str], adverbs: list[str], rest: list[str],
            machine: bool = False) -> _Reading:
    if machine and rest and "VB" in tags and not tags & {"VBD", "VBZ"}:
        # a machine label's bare verb with words after it ("Change_To", "connect_to") is a column's key, not
        # agreement with a plural subject as in prose ("Darwin's finches live on ..."): a subject is one thing, "X
        # changes to Y" (one bare word, "border", may be either and stays as written)
        word, tags = _inflect(lemma, "VBZ"), frozenset({"VBZ"})
    t = _tense_of(tags)
    if t is None:
        raise _Unreadable(f"{word!r} is not a finite verb form")
    return _active(lemma, word, tags, t[0], t[1], adverbs, rest)


def _adverb(word: str) -> bool:
    lem = getAllLemmas(word)
    return "ADV" in lem and "VERB" not in lem and word not in _PREPS and word not in _FUNCTION and (
        word.endswith("ly") or word in _ORDINALS or word in {"also", "later", "once", "jointly", "originally"}
    )


def _participle_lemma(word: str) -> str | None:
    for lemma, tags in _verb_readings(word):
        if "VBN" in tags:
            return lemma
    return None


# -- the profile ------------------------------------------------------------------------------------------------------


def _lookup(reading: _Reading, lexicon: Lexicon) -> tuple[str, VerbEntry | NounEntry] | None:
    table = lexicon.verb if reading.kind == "verb" else lexicon.noun
    for key in reading.keys:
        entry = table(key)
        if entry is not None:
            return key, entry
    return None


def profile_from_label(label: str, lexicon: Lexicon | None = None, *, words_alone: bool = False) -> RelationProfile:
    """The meaning of ``label`` as far as its words and the lexicon tell (module docstring): ``words``,
    ``forms``, the counts and symmetry, and what each end is in the world (``subject_noun``, ``object_noun``), with
    evidence for every field. ``words_alone``: the label's own words, not the lexicon's entry for the whole label
    (another vocabulary's label of the same spelling)."""
    lex = lexicon if lexicon is not None else load_lexicon()
    key = relation_key(label)
    ev: dict[str, Evidence] = {}
    local = _last_segment(label.strip())
    entry = None if words_alone else lex.label(label)
    if entry is None and local != label.strip() and not words_alone:
        entry = lex.label(local)
    if entry is None and not words_alone:  # "is_a", "isA", "IS-A" all find the entry "is a"
        entry = lex.label(" ".join(label_words(local)))
    counts: dict[str, object] = {}
    reads_text = None
    if entry is not None:
        where = f"label {key!r} in lexicon labels"
        for name in ("objects_per_subject", "subjects_per_object"):
            if getattr(entry, name) != "unknown":
                counts[name] = (getattr(entry, name), Evidence(source="lexicon", detail=f"{where}: "
                                                                f"{getattr(entry, name)}"))
        if "symmetric" in entry.model_fields_set:
            counts["symmetric"] = (entry.symmetric, Evidence(source="lexicon", detail=f"{where}: "
                                                             f"symmetric={str(entry.symmetric).lower()}"))
        for name, end in (("subject_noun", "subject"), ("object_noun", "object")):
            if getattr(entry, end) is not None:
                counts[name] = (getattr(entry, end), Evidence(source="lexicon", detail=f"{where}: {end} "
                                                              f"{getattr(entry, end)}"))
        if entry.opaque:
            why = entry.note or "a code with no English reading"
            return _profile(key, label, False, None, counts, {
                "words": Evidence(source="lexicon", detail=f"{where}: {why}"),
                "forms": Evidence(source="lexicon", detail=f"{where}: {why}")})
        if entry.forms is not None:
            ev["words"] = Evidence(source="lexicon", detail=f"{where}")
            ev["forms"] = Evidence(source="lexicon", detail=f"{where}: explicit forms")
            reading = None
            if entry.reads:
                reading = _reading_or_none(label_words(entry.reads), lex)[0]
            return _profile(key, label, True, entry.forms, _merge(counts, reading, lex), ev)
        reads_text = entry.reads
        for _ in range(3):  # "P166" reads "award received", which reads "received"
            further = lex.label(reads_text) if reads_text else None
            if further is None or not further.reads or relation_key(further.reads) == relation_key(reads_text):
                break
            reads_text = further.reads
    words = label_words(reads_text) if reads_text else label_words(label)
    relational = _relational_noun(words)
    if relational is not None:
        reads_text = " ".join(relational)
        words = relational
    if not words:
        return _profile(key, label, False, None, counts, {
            "words": Evidence(source="morphology", detail="the label has no words"),
            "forms": Evidence(source="morphology", detail="the label has no words")})
    if reads_text is None:
        prose = " " in local
        for w in words:
            if not _english(w, lex) and not (prose and _is_name(w)):
                why = f"{w!r} is not an English word" if not re.search(r"\d", w) else \
                    f"{w!r} is a code, not an English word"
                return _profile(key, label, False, None, counts, {
                    "words": Evidence(source="morphology", detail=why),
                    "forms": Evidence(source="morphology", detail=f"{why}: the label cannot be put into words")})
        ev["words"] = Evidence(source="morphology", detail=f"English words: {' '.join(words)!r}")
    elif relational is not None:
        ev["words"] = Evidence(source="morphology", detail=f"a noun of relationship reads as its participle: "
                                                           f"{reads_text!r}")
    else:
        ev["words"] = Evidence(source="lexicon", detail=f"label {key!r} in lexicon labels reads {reads_text!r}")
    reading, why = _reading_or_none(words, lex, machine=reads_text is None and " " not in local)
    if reading is None:
        ev["forms"] = Evidence(source="morphology", detail=f"no safe reading: {why}")
        return _profile(key, label, True, None, _merge(counts, None, lex), ev)
    src = "lexicon" if reads_text else "morphology"
    prefix = f"label {key!r} reads {reads_text!r}: " if reads_text else ""
    ev["forms"] = Evidence(source=src, detail=prefix + reading.shape)
    return _profile(key, label, True, reading.forms, _merge(counts, reading, lex), ev)


#: Nouns that name a relationship, not either of its ends, with the participle phrase that says it: "whose genetic
#: association is PAX1" makes a gene an association; "that is genetically associated with PAX1" does not.
_RELATIONSHIP_NOUNS = {
    "association": ["associated", "with"], "relation": ["related", "to"], "relationship": ["related", "to"],
    "connection": ["connected", "to"], "correlation": ["correlated", "with"], "interaction": ["interacts", "with"],
}


def _adverb_of(adjective: str) -> str:
    """The -ly adverb of an adjective ("genetic" -> "genetically", "physical" -> "physically")."""
    if adjective.endswith("ic"):
        return adjective + "ally"
    if adjective.endswith("le") and len(adjective) > 3:
        return adjective[:-1] + "y"
    if adjective.endswith("y") and len(adjective) > 3:
        return adjective[:-1] + "ily"
    return adjective + "ly"


def _relational_noun(words: list[str]) -> list[str] | None:
    """A label that is a noun of relationship ("association", "genetic association", "physical interaction") read
    as its participle phrase ("genetically associated with"), its adjectives as adverbs; None for any other label,
    and for one with a noun before the head ("drug interaction": the lexicon's), where no adverb says it."""
    low = [w.lower() for w in words]
    if not low or low[-1] not in _RELATIONSHIP_NOUNS or len(low) > 3:
        return None
    mods = low[:-1]
    for m in mods:
        lemmas = getAllLemmas(m)
        if not m.isalpha() or "ADJ" not in lemmas or "NOUN" in lemmas:
            return None
    return [*(_adverb_of(m) for m in mods), *_RELATIONSHIP_NOUNS[low[-1]]]


#: Nouns a machine label's verb phrase takes bare: light-verb idioms ("takes part in", "gives birth to") and mass
#: nouns ("provides information about"). Closed-class English, not the meaning of any one vocabulary.
_BARE_NOUNS = frozenset(
    "part place birth rise care use fun sense charge control credit attention access advantage office information "
    "water energy evidence damage support advice data research knowledge money power music food work help time "
    "interest importance trade weight harm shelter protection permission responsibility influence".split())


def _articled(words: list[str]) -> list[str]:
    """A machine label's words with the article it dropped before a bare singular noun between its verb (or a
    preposition) and a preposition: "appears_in_chapter_with" reads "appears in a chapter with", "encodes_enzyme_for"
    "encodes an enzyme for". Not after a copula or "has" (read by their own shapes), and not before a noun taken bare
    (``_BARE_NOUNS``)."""
    low = [w.lower() for w in words]
    if len(low) < 3 or low[0] in _BE or low[0] in _HAVE or low[0] in _MODALS or not any(
            tags & {"VBD", "VBZ", "VBP"} for _, tags in _verb_readings(low[0])):
        return words  # a finite verb first ("appears", "worked"), not a gerund ("filming_location_of")
    for i in range(1, len(low) - 1):
        w, prev, nxt = low[i], low[i - 1], low[i + 1]
        if nxt not in _PREPS or w in _FUNCTION or w in _BARE_NOUNS or mass_noun(w) or not _TYPE_WORD.fullmatch(w):
            continue
        if not (i == 1 or prev in _PREPS):
            continue
        lemmas = getAllLemmas(w).get("NOUN")
        if not lemmas or lemmas[0] != w or "VERB" in getAllLemmas(w) and i == 1:
            continue
        return [*words[:i], _ENGINE.a(w).split()[0], *words[i:]]
    return words


def _reading_or_none(words: list[str], lex: Lexicon, machine: bool = False) -> tuple[_Reading | None, str]:
    if machine:
        words = _articled(words)
    try:
        return _read(words, lex, machine), ""
    except _Unreadable as exc:
        kind = _object_kind(words, lex, machine) or _kind_then_participle(words, lex, machine) or \
            _agent_kind(words, lex, machine)
        return kind if kind is not None else (None, str(exc))


def _agent_kind(words: list[str], lex: Lexicon, machine: bool) -> tuple[_Reading, str] | None:
    """A prose label's passive with its agent's kind after "by" ("described by source", Wikidata's P1343): the object
    is the agent, of that kind ("{o} described {s}", the object a source). A machine label's agent after "by" is left
    alone ("writtenByAuthor")."""
    low = [w.lower() for w in words]
    if machine or len(low) != 3 or low[1] != "by" or not _TYPE_WORD.fullmatch(low[2]) or not _is_noun(low[2]) or \
            low[2] in _FUNCTION or _participle_lemma(low[0]) is None:
        return None
    try:
        reading = _read(words[:2], lex, machine)
    except _Unreadable:
        return None
    if reading.kind != "verb":
        return None
    one = _singular(low[2])
    reading.shape += f", then {one!r}: the kind of the agent"
    reading.extra["object_kind"] = one
    return reading, ""


#: Nouns that name a time: "<time noun> <participle>" ("yearBuilt", "date_founded") says when the subject underwent
#: the verb, not what it acted on.
TIME_NOUNS = frozenset("year date day time century decade season month era period".split())
#: Nouns that name a where: "<place noun> <participle>" ("placeBuried", "location_filmed") says where the subject
#: underwent the verb.
_WHERE_NOUNS = frozenset("place location site venue".split())
#: Adverbs of sequence a machine label puts between that noun and its participle ("yearFirstProduced").
_SEQUENCE_ADVERBS = frozenset("first last originally initially officially formally".split())


def _kind_then_participle(words: list[str], lex: Lexicon, machine: bool) -> tuple[_Reading, str] | None:
    """A machine label that names its object's kind, then a past participle: "cityServed", "area_served",
    "languageSpoken" (the object is the <noun> <participle> by the subject: "{s} serves {o}", the object a city),
    and with a time noun "yearBuilt", "date_founded" (when the subject was <participle>: "{s} was built in {o}").
    Only where the noun is a plain noun and the participle a verb's past participle; a prose label is not
    shortened."""
    if not machine or len(words) < 2:
        return None
    low = [w.lower() for w in words]
    part, nouns = low[-1], low[:-1]
    # an adverb of sequence between a time or place noun and the participle: "yearFirstProduced" (when the subject
    # was first produced), "placeLastSeen"
    adverb = nouns.pop() if len(nouns) >= 2 and nouns[-1] in _SEQUENCE_ADVERBS and \
        nouns[-2] in TIME_NOUNS | _WHERE_NOUNS else None
    lemma = _participle_lemma(part)
    if lemma is None or any(w in _FUNCTION or not _TYPE_WORD.fullmatch(w) for w in nouns) or \
            not _is_noun(nouns[-1]) or "VERB" in getAllLemmas(nouns[-1]) and len(nouns) == 1 and \
            "NOUN" not in getAllLemmas(nouns[-1]):
        return None
    if all(w in _SEQUENCE_ADVERBS for w in nouns):
        return None  # "lastSeen", "firstAired": when the subject was last seen, not "the last seen by" it
    noun = _singular(" ".join(nouns))
    try:
        head = noun.split()[-1]
        if head in TIME_NOUNS or head in _WHERE_NOUNS:
            reading = _read(["was", *([adverb] if adverb else []), part, "in"], lex, machine)
            reading.shape += f": {noun!r} is {'when' if head in TIME_NOUNS else 'where'} the subject was {part}"
            if head in TIME_NOUNS:
                reading.extra["object_kind"] = "date"
        elif adverb is not None:
            return None
        else:
            reading = _read([_inflect(lemma, "VBZ")], lex, machine)
            reading.shape += f", from {noun!r} {part!r}: the object is the {noun} {part} by the subject"
            reading.extra["object_kind"] = noun
    except _Unreadable:
        return None
    if reading.kind != "verb" or reading.swap:
        return None
    return reading, ""


#: Set by ``standing_profile``: a participle before its object's kind reads in the present (``_standing_participle``).
_STANDING: contextvars.ContextVar[bool] = contextvars.ContextVar("standing", default=False)


def standing_profile(label: str) -> RelationProfile:
    """``profile_from_label`` with a machine label's regular participle before its object's kind read in the present
    ("produced_unit": "X produces Y", "the building that produces Y"), for a graph whose subjects of the label are
    no people (``tasks.meaning.profiles``): a record's field states what holds, as "cityServed" does with its
    participle after the noun ("the airport that serves X"), and read in the past ("the building that produced X")
    it tells of an event the field does not hold. A person's "coinedTerm" keeps its past: the person coined it."""
    token = _STANDING.set(True)
    try:
        return profile_from_label(label)
    finally:
        _STANDING.reset(token)


def _standing_participle(before: list[str]) -> str | None:
    """The verb of a machine label's one regular participle before its object's kind ("produced_unit",
    "requiredItem", "repaired_units"), or None (``standing_profile``). Regular forms only (past and participle
    alike in "-ed"); an irregular past ("won_award", "wrote_song") keeps its tense."""
    if len(before) != 1 or not before[0].islower() and not before[0][:1].isupper():
        return None
    word = before[0].lower()
    if not word.endswith("ed"):
        return None
    lemmas = {lemma for lemma, tags in _verb_readings(word) if {"VBD", "VBN"} <= tags}
    if len(lemmas) != 1:
        return None
    lemma = next(iter(lemmas))
    return lemma if _inflect(lemma, "VBN") == word else None


def _object_kind(words: list[str], lex: Lexicon, machine: bool) -> tuple[_Reading, str] | None:
    """A machine label that names its object's kind after a verb phrase ("awardedPrize", "won_award",
    "located_on_chromosome", "hasWonPrize"): the words before the noun are the relation ("was awarded", "is
    located on") and the noun says what the object is (a prize, a chromosome). Only where those words read as an
    active verb or a copula with the object after them; a passive ("written by") has its agent there, not a
    kind, and a prose label ("has won prize") is not shortened."""
    if not machine or len(words) < 2:
        return None
    noun, before = words[-1].lower(), words[:-1]
    if noun in _FUNCTION or not _is_noun(noun) or before[-1].lower() in _DETERMINERS or \
            before[-1].lower() in _BE or before[-1].lower() in _HAVE or not _TYPE_WORD.fullmatch(noun):
        return None
    readings = _verb_readings(before[-1].lower()) if len(before) == 1 else ()
    if readings and all(tags == frozenset({"VBN"}) for _, tags in readings):
        return None  # "hiddenAbility": a participle alone before a noun modifies it ("the hidden ability of X")
    if len(before) == 1 and "ADJ" in getAllLemmas(before[0].lower()):
        return None  # "exact_mappings", "narrow_mappings": an adjective before a noun modifies it, no verb "exacts"
    try:
        reading = _read(before, lex, machine)
        standing = _standing_participle(before) if _STANDING.get() and reading.shape.startswith(
            "active past verb") else None
        if standing:  # the present as a verb: "repairs", "harvests" alone would read as the nouns they also are
            reading = _finite(standing, _inflect(standing, "VBZ"), frozenset({"VBZ"}), [], [], machine)
    except _Unreadable:
        return None
    if reading.kind != "verb" or reading.swap:
        return None
    one = _singular(noun)
    if standing:
        reading.shape += f" (the participle {before[0].lower()!r} before a noun: a field of standing facts)"
    reading.shape += f", then {one!r}: the kind of the object"
    reading.extra["object_kind"] = one
    return reading, ""


def _merge(counts: dict[str, object], reading: _Reading | None, lex: Lexicon) -> dict[str, object]:
    """Counts and type nouns from the label entry (already in ``counts``) over those of the reading's lexicon
    entries."""
    out = dict(counts)
    found = _lookup(reading, lex) if reading is not None else None
    if found is not None and reading is not None:
        phrase, entry = found
        ops, spo = entry.objects_per_subject, entry.subjects_per_object
        if reading.swap:
            ops, spo = spo, ops
        section = "verbs" if reading.kind == "verb" else "nouns"
        turn = " (read the other way)" if reading.swap else ""
        what = f"{reading.kind} {phrase!r} in lexicon {section}: {entry.objects_per_subject}/" \
               f"{entry.subjects_per_object}{turn}"
        if ops != "unknown":
            out.setdefault("objects_per_subject", (ops, Evidence(source="lexicon", detail=what)))
        if spo != "unknown":
            out.setdefault("subjects_per_object", (spo, Evidence(source="lexicon", detail=what)))
        if "symmetric" in entry.model_fields_set:
            out.setdefault("symmetric", (entry.symmetric, Evidence(source="lexicon", detail=what)))
    elif reading is not None and reading.kind == "noun" and both_ways(reading.keys[0]):
        detail = (f"'the {reading.keys[0]}': a line or a road runs both ways, so a stop's next one way is its "
                  "previous the other")
        out.setdefault("objects_per_subject", ("many", Evidence(source="morphology", detail=detail)))
        out.setdefault("subjects_per_object", ("many", Evidence(source="morphology", detail=detail)))
    elif reading is not None and reading.extra.get("single") == "True":
        name = "objects_per_subject" if reading.swap else "subjects_per_object"
        detail = f"'the {reading.keys[0]}': an ordinal or a superlative names one"
        out.setdefault(name, ("one", Evidence(source="morphology", detail=detail)))
    if reading is not None and "object_kind" in reading.extra:  # "awardedPrize": the label says the object is a prize
        kind = reading.extra["object_kind"]
        out.setdefault("object_noun", (kind, Evidence(source="morphology", detail=f"the label ends in {kind!r}, the "
                                                      f"kind of its object")))
    if reading is not None:
        for name, value in _kinds(reading, lex).items():
            out.setdefault(name, value)
    return out


#: Words that place one of a sequence after or before another, and the stops of a line or a road travelled both
#: ways: "the next station of X" is one station each way (an episode's or a king's next is one, in time).
_SEQUENCE_WORDS = frozenset({"next", "previous", "following", "preceding", "prior"})
_ROUTE_STOPS = frozenset({"station", "stop", "halt", "exit", "junction", "interchange", "lock", "port", "harbour",
                           "harbor", "airport", "terminal", "platform", "pier", "town", "village", "city"})


def both_ways(noun: str) -> bool:
    """Whether a noun phrase names the next or the previous stop of a route ("next station", "previous stop"), which
    is one of two in the world: the route is travelled both ways."""
    words = noun.lower().split()
    return len(words) >= 2 and words[0] in _SEQUENCE_WORDS and words[-1] in _ROUTE_STOPS


#: The main ranks of biological classification, lowest first ("division" is the botanists' phylum).
_MAIN_RANKS = ("species", "genus", "family", "order", "class", "phylum", "kingdom", "domain")
_RANK_SYNONYMS = {"division": "phylum", "tribe": "subfamily", "section": "subgenus", "series": "subgenus",
                  "variety": "subspecies", "form": "subspecies", "empire": "domain", "realm": "domain"}
#: Where a prefixed rank sits against its main rank (ten apart): "superfamily" above the family, "infraorder"
#: below the suborder.
_RANK_PREFIXES = (("super", 3), ("magn", 2), ("sub", -3), ("infra", -5), ("parv", -7))


def rank_place(kind: str | None) -> int | None:
    """A biological rank's place, ten a main rank ("species" 0, "genus" 10, "subfamily" 17, "superfamily" 23,
    "class" 40), for a kind noun that is one (its last word, singular), else None."""
    if not kind or not kind.split():
        return None
    word = kind.lower().split()[-1]
    word = _RANK_SYNONYMS.get(word, word)
    for prefix, shift in ("", 0), *_RANK_PREFIXES:
        base = word[len(prefix):]
        if word.startswith(prefix) and base in _MAIN_RANKS:
            return 10 * _MAIN_RANKS.index(base) + shift
    return None


def ranks_between(child: str | None, parent: str | None) -> list[str]:
    """The main ranks strictly between a child's rank and its parent's ("genus" and "class": family and order), none
    where either kind is no rank or they are next to each other ("genus", "subfamily"): a source that gives a genus
    a class for its parent has skipped the family, whose name is the parent in the world."""
    low, high = rank_place(child), rank_place(parent)
    if low is None or high is None or high <= low:
        return []
    return [r for i, r in enumerate(_MAIN_RANKS) if low < 10 * i < high]


def _kinds(reading: _Reading, lex: Lexicon) -> dict[str, tuple[str, Evidence]]:
    """``subject_noun`` and ``object_noun`` from the reading's lexicon entries, turned as the counts are: a verb
    entry's ``subject``/``object`` read the other way for a passive ("written by": the object is the person who
    wrote), a noun entry's ``is``/``of`` ("<subject> is the <noun> of <object>") the other way for a bare noun
    ("author": the object is the author, a person). Each key the reading tries is asked in turn ("co-write", then
    "write"); a noun phrase with no kind of its own takes its head's ("largest city" is a city)."""
    verb = reading.kind == "verb"
    table = lex.verb if verb else lex.noun
    section = "verbs" if verb else "nouns"
    # (field of the profile, field of the entry that fills it)
    if verb:
        ends = [("subject_noun", "object" if reading.swap else "subject"),
                ("object_noun", "subject" if reading.swap else "object")]
    else:
        ends = [("subject_noun", "of" if reading.swap else "is_"), ("object_noun", "is_" if reading.swap else "of")]
    keys: list[tuple[str, str | None]] = [(k, None) for k in reading.keys]
    if not verb:  # the head of a compound noun ("largest city", "home stadium") says what the thing is
        for k in reading.keys:
            words = k.split()
            if len(words) > 1 and not any(w in _FUNCTION for w in words):
                keys.append((words[-1], k))
    out: dict[str, tuple[str, Evidence]] = {}
    for name, attr in ends:
        for key, compound in keys:
            if compound is not None and attr != "is_":
                continue  # a modifier may change what the thing is the <noun> of, not what it is
            entry = table(key)
            value = getattr(entry, attr) if entry is not None else None
            if value is None:
                continue
            said = "is" if attr == "is_" else attr
            what = f"{reading.kind} {key!r} in lexicon {section}: {said} {value}"
            if compound is not None:
                what += f" (the head of {compound!r})"
            if reading.swap:
                side = "subject" if name == "subject_noun" else "object"
                what += (f" (read the other way: the label's {side} is the verb's {attr})" if verb else
                         f" (a bare noun: the label's object is the {compound or key})")
            out[name] = (value, Evidence(source="lexicon", detail=what))
            break
    return out


#: Acronyms English writes in capitals, which a machine label writes in lower case ("mimeType", "Id", "iata_code").
_ACRONYMS = frozenset("id ids url uri iri mime isbn issn doi iata icao ip dns html api sql gps cpu gpu ram usb pdf xml "
                      "json http ssl tls rgb uuid".split())


def _capital_acronyms(forms: SurfaceForms, label: str) -> SurfaceForms:
    """``forms`` of a machine label with the acronyms among its words in capitals: "the MIME type of X", "the ID of
    X" (not "mime types", a performer's art, or "id", Freud's word)."""
    hits = {w for w in label_words(label) if w in _ACRONYMS}
    if not hits:
        return forms
    pattern = re.compile(r"\b(" + "|".join(sorted(hits, key=len, reverse=True)) + r")\b")

    def up(text: str) -> str:
        return pattern.sub(lambda m: m[1].upper() if m[1] != "ids" else "IDs", text)

    return SurfaceForms(**{k: [up(t) for t in v] if isinstance(v, list) else up(v)
                           for k, v in forms.model_dump().items()})


def _profile(key: str, label: str, words: bool, forms: SurfaceForms | None, counts: dict[str, object],
             ev: dict[str, Evidence]) -> RelationProfile:
    if forms is not None and " " not in _last_segment(label.strip()):
        forms = _capital_acronyms(forms, label)
    values: dict[str, object] = {}
    for name in ("objects_per_subject", "subjects_per_object"):
        if name in counts:
            value, evidence = counts[name]  # type: ignore[misc]
            values[name] = value
            ev[name] = evidence
        else:
            values[name] = "unknown"
            ev[name] = Evidence(source="none", detail="no lexicon entry gives this count" if words else
                                "the label is not words and no lexicon entry gives this count")
    if "symmetric" in counts:
        sym, evidence = counts["symmetric"]  # type: ignore[misc]
        ev["symmetric"] = evidence
    else:
        sym = False
        ev["symmetric"] = Evidence(source="none", detail="no lexicon entry says the relation is symmetric")
    nouns: dict[str, str | None] = {}
    for name, end in (("subject_noun", "subject"), ("object_noun", "object")):
        if name in counts:
            nouns[name], ev[name] = counts[name]  # type: ignore[misc]
        else:
            nouns[name] = None
            ev[name] = Evidence(source="none", detail=f"no lexicon entry says what the {end} is")
    if sym and (nouns["subject_noun"] is None) != (nouns["object_noun"] is None):  # one kind at both ends
        known = "subject_noun" if nouns["subject_noun"] is not None else "object_noun"
        other = "object_noun" if known == "subject_noun" else "subject_noun"
        nouns[other] = nouns[known]
        ev[other] = Evidence(source=ev[known].source, detail=f"{ev[known].detail} (symmetric: both ends)")
    ops: Count = values["objects_per_subject"]  # type: ignore[assignment]
    spo: Count = values["subjects_per_object"]  # type: ignore[assignment]
    if sym and ops != spo:  # a symmetric relation counts the same both ways: take the stated one
        known = ops if ops != "unknown" else spo
        ops = spo = known
        ev["objects_per_subject" if values["objects_per_subject"] == "unknown" else "subjects_per_object"] = \
            ev["symmetric"]
    return RelationProfile(key=key, label=label, words=words, forms=forms, objects_per_subject=ops,
                           subjects_per_object=spo, symmetric=bool(sym), subject_noun=nouns["subject_noun"],
                           object_noun=nouns["object_noun"], evidence=ev)


#: The prepositions and particles a label's words may hold (closed-class English, not meaning).
PREPOSITIONS: frozenset[str] = _PREPS

__all__ = ["DERIVING_PREFIXES", "PREPOSITIONS", "derived_noun", "derived_word", "label_words", "profile_from_label"]
