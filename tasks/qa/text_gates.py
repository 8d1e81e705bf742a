"""Text gates: what code vouches for in a question, a thought or a tool argument besides the path.

The path checks (``tasks.qa.checks``) prove that a question is grounded; these gates prove that its text reads
as what it claims to be. Each gate is a pure function returning a ``schemas.qa.Verdict`` with its own check name,
reject code and a reason that doubles as retry feedback:

==================  =====================  ==========================================================================
check               reject code            rejects
==================  =====================  ==========================================================================
``no_markup``       ``has_markup``         braces, brackets, angle brackets, backslashes, regex or code tokens, arrows,
                                           URLs, template placeholders ("{entity}", "<start>", "[X]", "___")
``no_labels``       ``has_label``          role and format labels ("Answer:", "Question:", "Step 1", "path P3",
                                           "Hint:"), which mean the model wrote a transcript instead of a question
``question_form``   ``not_one_question``   not ending in "?", several sentences or questions, several lines, a
                                           list, or a question cut off after an article or conjunction
``question_length`` ``bad_length``         fewer or more words than configured
``no_repetition``   ``repetitive``         a word said three times running, a word 3-gram said three times, a
                                           5-gram said twice, too few distinct words for the length, or a passive
                                           nested in itself ("followed by the age followed by")
``language``        ``wrong_language``     another language than the configured one (``LanguageGate``)
``not_copied``      ``copies_source``      most of one prompt instruction or example, or of a relation description
                                           of the path, copied into the question
==================  =====================  ==========================================================================

Every gate that reads the question's shape or language (markup, labels, form, language, copies) judges it with
the entity names it is given (``names``: the path's nodes; ``tasks.meaning.names.gate_names`` adds the graph's
class names for them) and their display forms blanked out: a graph's own names are not markup, however they are
written ("element_ion_or_isotope", "dbr:Albert_Einstein", "<Obama>"). Without ``names`` nothing is blanked.

Good questions must pass: numbers ("in 1936", "$5 billion"), names with punctuation ("C++", "C#", "St. Louis",
"U.S.", "AT&T", "Node.js", "King's College, Cambridge"), quoted titles ("'On Computable Numbers'", a title that
itself ends in "?"), parentheses, and non-English names inside an English question ("Søren Kierkegaard",
"Königsberg", "Entscheidungsproblem"). Language identification therefore looks at the text with the entity names
it is given and mid-sentence capitalised words blanked out: the function words carry the language, names do not.

The thought gates (``thought_gates``) reuse the same pieces with settings for free text: language, repetition
loops, and pasting a tool result. ``check_tool_argument`` says whether a tool argument is a name, not a sentence.
"""

from __future__ import annotations

import os
import pickle
import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from schemas.errors import InputError
from schemas.qa import CHECK_CODES, CheckName, Verdict
from tasks.meaning.names import display_forms

# -- settings ---------------------------------------------------------------------------------------------------------


class TextGateError(InputError):
    """A text-gate setting that cannot work (a language the detector does not know, bounds the wrong way)."""


class TextGateConfig(BaseModel):
    """Knobs of the question gates; checked when built (an unknown language is a ``TextGateError``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    language: str = Field("en", description="ISO 639-1 code of the language questions and thoughts must be in.")
    min_words: int = Field(3, ge=1, description="Fewest words a question may have (\"Who built Colossus?\" has 3).")
    max_words: int = Field(45, ge=2, description="Most words a question may have.")
    copy_threshold: float = Field(
        0.6, gt=0.0, le=1.0,
        description="Share of one prompt instruction's or relation description's word 3-grams found in a question "
                    "at which the question counts as a copy of it.",
    )  # fmt: skip

    @field_validator("language")
    @classmethod
    def _lower(cls, v: str) -> str:
        return v.strip().lower()

    def model_post_init(self, _context: object) -> None:
        # Raised here rather than in a validator so callers get a TextGateError, not pydantic's wrapper.
        if self.language not in supported_languages():
            raise TextGateError(
                f"language {self.language!r} is not one the language detector knows; use an ISO 639-1 code such as "
                f"{', '.join(sorted(supported_languages())[:12])}, ..."
            )
        if self.max_words < self.min_words:
            raise TextGateError(f"max_words ({self.max_words}) must be at least min_words ({self.min_words})")


def _v(check: CheckName, ok: bool, reason: str) -> Verdict:
    return Verdict(check=check, ok=ok, code=None if ok else CHECK_CODES[check], reason=reason)


# -- words --------------------------------------------------------------------------------------------------------
_WORD = re.compile(r"[^\W_]+(?:['’.\-][^\W_]+)*[+#]*", re.UNICODE)


def words(text: str) -> list[str]:
    """The words of ``text``, case folded ("C++", "St.", "Jean-Paul", "King's" stay one word each)."""
    return [w.casefold() for w in _WORD.findall(text)]


def _ngrams(ws: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)]


# -- markup ---------------------------------------------------------------------------------------------------------
# One alternative per kind of junk, so the reason can say which. Deliberately allowed: + and # inside names ("C++",
# "C#"), & ("AT&T"), / between words ("TCP/IP"), $ before a number, parentheses, quotes, periods and hyphens.
_MARKUP: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a URL", re.compile(r"https?://|\bwww\.|\b[\w-]+\.(?:com|org|net|io|html?)\b", re.I)),
    ("an HTML or XML tag", re.compile(r"</?[A-Za-z_][\w:-]*[^<>]*>")),
    ("a template placeholder", re.compile(r"\{\{?\s*\w[\w ]*\}\}?|\[[A-Z_ ]{2,}\]|<[a-z_ ]+>|_{3,}|\bX{3,}\b")),
    ("a regular expression", re.compile(r"\.\*|\\[dswbDSWB]|\[\^|\{\d+(?:,\d*)?\}|\(\?[:=!<]|[^\s\w]\$(?:\W|$)")),
    ("JSON", re.compile(r"[{}]|\"\s*:\s*[\"\[{\d]|'\s*:\s*'")),
    ("code", re.compile(r"`|\b\w+\([^()]*=[^()]*\)|\)\s*;|;\s*$|==|!=|:=|\+=|=>|/\*|\*/|//")),
    ("an arrow or path notation", re.compile(r"->|<-|→|←|⇒")),
    ("brackets or symbols",
     re.compile(r"[\[\]<>\\|^~*_@]|(?<![A-Za-z0-9])=|=(?![A-Za-z0-9])|\$(?!\s?\d)|(?<![\w+])#(?!\d)")),
)


def markup_kind(text: str) -> str | None:
    """What kind of markup, code or template text ``text`` holds, or ``None``."""
    for kind, rx in _MARKUP:
        if rx.search(text):
            return kind
    return None


def check_no_markup(text: str) -> Verdict:
    kind = markup_kind(text)
    if kind is not None:
        return _v("no_markup", False, f"the question contains {kind}; write plain prose with no markup, code, "
                  "JSON, placeholders or symbols.")  # fmt: skip
    return _v("no_markup", True, "the question is plain prose.")


# -- labels ---------------------------------------------------------------------------------------------------------
_LABEL = re.compile(
    r"(?:^|[\s\"'(])(?:final\s+answer|answer|question|q|a|hint|note|explanation|output|input|reasoning|thought|"
    r"solution|response|user|assistant|system|path|reply|example|context)\s*:"
    r"|\bstep\s*\d+\b|\b(?:path|candidate|option)\s+(?:P?\d+|id)\b|\bpath_id\b|\bP\d+\s*:|^\s*P\d+\b"
    r"|\b(?:the\s+)?(?:last|first|start|end)\s+(?:entity|node)\b|\bentit(?:y|ies)\s+of\s+(?:the\s+)?path\b"
    r"|\b(?:end|start|beginning|last|first)\s+(?:\w+\s+)?of\s+the\s+path\b|\bP[1-9]\d?\s+path\b"
    r"|\b(?:question|answer)\s+is\s*:|\bin\s+the\s+knowledge\s+graph\b",
    re.I,
)


def check_no_labels(text: str) -> Verdict:
    m = _LABEL.search(text)
    if m:
        found = m.group(0).strip(" \"'(")
        return _v("no_labels", False, f"the question contains the label or format word {found!r}; write only the "
                  "question itself, with no labels, steps or path names.")  # fmt: skip
    return _v("no_labels", True, "the question has no labels.")


# -- form -------------------------------------------------------------------------------------------------------------
# Words after which a period does not end a sentence ("St. Louis", "Dr. Who", "U.S. Army", "No. 5").
_ABBREV = frozenset(
    "st mt ft dr mr mrs ms jr sr prof gen col lt sgt capt rev hon sen rep gov pres inc ltd co corp bros vs etc "
    "no vol ed eds approx est dept univ ave blvd rd fig al ca cf ie eg op ch pp sec".split()
)
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|«[^»\n]*»|(?<!\w)'[^'\n]*'(?!\w)")
_SENTENCE_END = re.compile(r"([.!?])[\"')\]]*\s+(?=[\"'(]?[A-Z0-9])|(;)")
_DANGLING = frozenset({"the", "a", "an", "and", "or", "but", "nor", "whose", "its", "their", "his", "her", "our",
                       "my", "your", "this", "these", "those", "than", "because", "if", "while"})  # fmt: skip
_LIST_START = re.compile(r"^\s*(?:[-*•]\s|\d+[.)]\s|\(?[a-z]\)\s)")


def _unquoted(text: str) -> str:
    """``text`` with quoted spans replaced by a placeholder word (a quoted title may hold "?" or ".")."""
    return _QUOTED.sub(" Title ", text)


def _sentence_breaks(text: str) -> list[str]:
    """The punctuation marks in ``text`` that end a sentence before its end."""
    out = []
    for m in _SENTENCE_END.finditer(text):
        if m.group(2):
            out.append(";")
            continue
        if m.group(1) == ".":
            before = text[: m.start()].split()
            prev = before[-1].strip("\"'(") if before else ""
            core = prev.replace(".", "")
            # "St." "U.S." "J." "No.": an abbreviation or an initial, not the end of a sentence
            initials = core.isupper() and len(core) <= 4  # "J." "U.S." "D.C."
            if core.casefold() in _ABBREV or initials or (len(core) == 1 and core.isalpha()):
                continue
        out.append(m.group(1))
    return out


def _only_names(text: str) -> bool:
    """Whether ``text`` (three words or more, in a script with case) is names and nothing else: besides its first
    word, no word starts in lower case. Every question in a cased script has some ("Who founded Königsberg?")."""
    raw = _WORD.findall(text)
    if len(raw) < 3 or not any(ch.isupper() for ch in text):
        return False
    return not any(w[:1].islower() for w in raw[1:])


def check_question_form(text: str) -> Verdict:
    t = text.strip()
    if not t:
        return _v("question_form", False, "the question is empty.")
    if "\n" in t:
        return _v("question_form", False, "the question spans several lines; write one question on one line.")
    if _LIST_START.match(t):
        return _v("question_form", False, "the question starts like a list item; write one question.")
    plain = _unquoted(t).rstrip("\"')”’» ")
    if not plain.endswith("?"):
        return _v("question_form", False, "the question does not end with '?'; write one complete question.")
    if plain.count("?") > 1:
        return _v("question_form", False, "the text holds several questions; write exactly one.")
    breaks = _sentence_breaks(plain[:-1])
    # One semicolon can join a premise to the question ("The Notes describe a machine; its designer founded
    # which body?"); two or more string several questions or statements together.
    if breaks.count(";") == 1:
        breaks.remove(";")
    if breaks:
        return _v("question_form", False, "the text holds several sentences; write one question sentence only.")
    ws = words(plain)
    if ws and ws[-1] in _DANGLING:
        return _v("question_form", False, f"the question is cut off after {ws[-1]!r}; finish the sentence.")
    if _only_names(plain):
        return _v("question_form", False, "the text is a list of names, not a question; ask about them in a sentence.")
    return _v("question_form", True, "the text is one question.")


def check_question_length(text: str, min_words: int = 3, max_words: int = 45) -> Verdict:
    n = len(words(text))
    if n < min_words:
        return _v("question_length", False, f"the question has {n} word(s); write at least {min_words}.")
    if n > max_words:
        return _v("question_length", False, f"the question has {n} words; keep it under {max_words + 1}.")
    return _v("question_length", True, f"{n} words.")


# -- repetition ----------------------------------------------------------------------------------------------------
def repetition_problem(text: str, *, min_distinct: float = 0.3) -> str | None:
    """Why ``text`` is a degenerate repetition, or ``None``. Linear in the length of the text.

    Short text (a question, a one-line thought): a word three times running, a 3-gram three times, a 5-gram
    twice. Longer text (60 words and more: a chain of thought) naturally reuses short phrases, so there only an
    8-gram said three times or a low share of distinct words counts as a loop."""
    if re.search(r"(.)\1{5,}", text) or re.search(r"(\S{2,6})\1{3,}", text):
        return "a character or syllable repeated over and over"
    ws = words(text)
    for a, b, c in zip(ws, ws[1:], ws[2:]):
        if a == b == c:
            return f"the word {a!r} three times in a row"
    rules = ((8, 3),) if len(ws) >= 60 else ((3, 3), (5, 2))
    for n, times in rules:
        grams = Counter(_ngrams(ws, n))
        if grams:
            gram, k = grams.most_common(1)[0]
            if k >= times:
                return f"the phrase {' '.join(gram)!r} {k} times"
    floor = min_distinct if len(ws) < 60 else min_distinct * 0.6
    if len(ws) >= 12 and len(set(ws)) / len(ws) < floor:
        return f"only {len(set(ws))} distinct words in {len(ws)}"
    return None


#: One passive participle reduced twice in a row: "followed by the age followed by X", a clause unwound twice.
_NESTED_PASSIVE = re.compile(r"\b(\w+(?:ed|en)) by the (?:\w+ ){1,3}?\1 by\b", re.IGNORECASE)


def check_no_repetition(text: str) -> Verdict:
    problem = repetition_problem(text)
    nested = _NESTED_PASSIVE.search(text)
    if problem is None and nested is not None:
        problem = f"the passive {nested[1]!r} nested in itself: {nested[0]!r}"
    if problem is not None:
        return _v("no_repetition", False, f"the question repeats itself ({problem}); say it once.")
    return _v("no_repetition", True, "no repetition.")


# -- language -------------------------------------------------------------------------------------------------------
_IDENTIFIER: Any = None
_IDENTIFIER_LOCK = threading.Lock()


def _identifier():
    """py3langid's naive Bayes identifier over its 140 languages, probabilities normalised. Its model ships
    inside the wheel (``py3langid/data``), so nothing is downloaded; built once per process. Decompressing the
    model takes 0.4-0.6 s, so the built identifier is also kept in the user's cache folder (``_identifier_cache``),
    from which a process loads it in under 0.1 s; ``warm_language_detector`` loads it in the background."""
    global _IDENTIFIER
    with _IDENTIFIER_LOCK:
        if _IDENTIFIER is None:
            _IDENTIFIER = _load_identifier()
        return _IDENTIFIER


def _load_identifier() -> Any:
    from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

    cache = _identifier_cache(MODEL_DIR / MODEL_FILE)
    if cache is not None and cache.is_file():
        try:
            found = pickle.loads(cache.read_bytes())
        except (OSError, EOFError, ValueError, AttributeError, ImportError, pickle.UnpicklingError):
            found = None  # unreadable or from another version: built again below, and the copy replaced
        if isinstance(found, LanguageIdentifier):
            return found
    ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
            tmp.write_bytes(pickle.dumps(ident, protocol=pickle.HIGHEST_PROTOCOL))
            os.replace(tmp, cache)  # whole or not at all, whichever process writes last
        except OSError:
            pass  # a read-only home: the next process decompresses the model again
    return ident


def _identifier_cache(model: Path) -> Path | None:
    """Where the built identifier is kept: the user's cache folder (``XDG_CACHE_HOME``, else ``~/.cache``), named by
    the py3langid version and the model file's size and time, so an upgrade builds a new one."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        stat = model.stat()
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    except (OSError, RuntimeError):  # no model file to name it by, or no home folder
        return None
    try:
        tag = version("py3langid")
    except PackageNotFoundError:  # a copy without metadata: the size and time still name the model
        tag = "unknown"
    return base / "hopforge" / f"py3langid-{tag}-{stat.st_size}-{stat.st_mtime_ns}.pickle"


def warm_language_detector() -> None:
    """Start loading the language detector on a daemon thread, so that a flow's first language gate does not wait
    for it (nor hold up the event loop that runs the gates) and the flow's start does not pay for it either."""
    if _IDENTIFIER is None:
        threading.Thread(target=_identifier, name="language-detector-load", daemon=True).start()


#: The codes of the languages the detector tells (its model's labels; a test checks they still match), known
#: without loading the model, so a configuration is checked at once.
SUPPORTED_LANGUAGES: frozenset[str] = frozenset({
    "ace", "af", "am", "an", "ar", "ary", "arz", "as", "az", "ba", "bcl", "be", "bg", "bn", "br", "bs", "ca",
    "crh", "cs", "cy", "da", "de", "dz", "el", "en", "eo", "es", "et", "eu", "ext", "fa", "fi", "fo", "fr", "fuv",
    "fy", "ga", "gcf", "gcr", "gd", "gl", "gom", "grc", "gu", "gug", "guw", "ha", "hbo", "he", "hi", "hr", "ht",
    "hu", "hy", "id", "ig", "is", "it", "ja", "jv", "ka", "kab", "kik", "kk", "km", "kn", "ko", "ku", "ky", "la",
    "lb", "lg", "lij", "ln", "lo", "lt", "ltg", "lv", "mg", "mk", "ml", "mn", "mr", "ms", "mt", "my", "ne", "nl",
    "nn", "no", "nso", "oc", "om", "or", "pa", "pcm", "pl", "ps", "pt", "qu", "ro", "ru", "rw", "sa", "sdh", "se",
    "si", "sk", "sl", "sn", "so", "sq", "sr", "st", "sv", "sw", "ta", "te", "tg", "th", "tk", "tl", "tr", "tt",
    "ug", "uk", "ur", "uz", "uzs", "vec", "vi", "vo", "wa", "wuu", "xh", "yo", "yue", "zh", "zu", "zxx",
})


def supported_languages() -> frozenset[str]:
    """ISO 639-1 codes of every language the detector can tell."""
    return SUPPORTED_LANGUAGES


class LanguageGate:
    """Language identification for one configured language (``for_language``: one per process and language).

    Why py3langid and not lingua-language-detector (both ship their models in the wheel), measured on hopforge's
    fixtures: once entity names are blanked out (``language_sample``) both accept all 74 good questions and reject
    all 13 wrong-language questions and thoughts, and on 23 further short foreign questions both, with the
    confidence rule below, pass only one mixed German-English question; on the raw text lingua rejected 10 of
    the 74 good questions for their German or Danish names, py3langid 1. py3langid takes about 0.03 ms a question
    against lingua's 0.3 ms, loads in 0.3 s against 2.6 s, and weighs 4.5 MB against 96 MB (lingua keeps about
    400 MB resident), which counts in every worker process of a cluster run.
    """

    _lock = threading.Lock()
    _built: dict[str, "LanguageGate"] = {}

    def __init__(self, language: str) -> None:
        if language not in supported_languages():
            raise TextGateError(f"language {language!r} is not one the language detector knows")
        self.language = language
        self._ident = _identifier()

    @classmethod
    def for_language(cls, language: str) -> "LanguageGate":
        with cls._lock:
            gate = cls._built.get(language)
            if gate is None:
                gate = cls._built[language] = cls(language)
            return gate

    def rank(self, text: str) -> tuple[str, float, float]:
        """``(best language, its probability, the configured language's probability)`` for ``text``."""
        ranked = self._ident.rank(text)
        best, p_best = ranked[0]
        p_target = next((p for lang, p in ranked if lang == self.language), 0.0)
        return best, p_best, p_target

    def detect(self, text: str) -> str:
        """The ISO code the detector picks for ``text``."""
        return self.rank(text)[0]


_LETTERS = re.compile(r"[^\W\d_]", re.UNICODE)


def blank_names(text: str, names: Iterable[str], placeholder: str = " ") -> str:
    """``text`` with every occurrence of ``names`` (case-insensitive, longest first) replaced by ``placeholder``."""
    for name in sorted({n for n in names if n and n.strip()}, key=len, reverse=True):
        text = _name_pattern(name).sub(placeholder, text)
    return text


@lru_cache(maxsize=65536)
def _name_pattern(name: str) -> re.Pattern[str]:
    """``name`` as a case-insensitive pattern, compiled once (``blank_names`` runs over every question's names)."""
    return re.compile(re.escape(name), flags=re.I)


def language_sample(text: str, names: Iterable[str] = ()) -> str:
    """The part of ``text`` that carries its language: known entity names, quoted spans, and capitalised words
    after the first word blanked out (a German or Danish name in an English question says nothing about the
    question's language). Falls back to the whole text when that leaves fewer than two words."""
    t = blank_names(_unquoted(text).replace(" Title ", " "), names)
    ws = t.split()
    kept = [w for i, w in enumerate(ws) if i == 0 or not (w[:1].isupper() or w[:1].isdigit())]
    sample = " ".join(kept)
    if len(words(sample)) < 2:
        return text
    return sample


def language_problem(text: str, language: str, names: Iterable[str] = (), *, min_letters: int = 6) -> str | None:
    """Why ``text`` is not in ``language``, or ``None`` (also when there are too few letters to tell)."""
    sample = language_sample(text, names)
    found = _LETTERS.findall(sample)
    letters = len(found)
    # Two short words of a Latin script ("Who served", "Who built") are too little to tell a language by: skip
    # rather than guess. Scripts without spaces (Japanese, Chinese) and non-Latin scripts are told apart easily.
    latin = all(ord(c) < 0x250 for c in found)
    if letters < min_letters or (latin and len(words(sample)) < 3 and letters < 12):
        return None
    got, _p_got, p_target = LanguageGate.for_language(language).rank(sample)
    # Only a clear verdict rejects: the configured language must be nearly ruled out, and more firmly for a short
    # sample, where a few letters can tip the detector ("Who built" leans Scottish Gaelic, English still at 0.07;
    # "Wer baute" leaves English 0.02).
    floor = 0.05 if letters < 20 else 0.2
    if got == language or p_target >= floor:
        return None
    return f"it reads as {got!r}, not {language!r}"


def check_language(text: str, language: str = "en", names: Iterable[str] = ()) -> Verdict:
    problem = language_problem(text, language, names)
    if problem is not None:
        return _v("language", False, f"the question is not in the configured language ({problem}); write it in "
                  f"{language!r}.")  # fmt: skip
    return _v("language", True, f"the question is in {language!r}.")


# -- copies ---------------------------------------------------------------------------------------------------------
def check_not_copied(text: str, sources: Iterable[str], threshold: float = 0.6, names: Iterable[str] = (),
                     descriptions: Iterable[str] = ()) -> Verdict:
    """``sources``: the prompt's instruction lines and examples, and the relation descriptions of the path.

    A copy reproduces most of one source (``threshold`` of the source's word 3-grams) and is made of little else
    (0.7 of its own 3-grams come from it). A question that asks about the same relation as a description adds its
    own "which <noun>" and stays under that ("Which place is a county of Britain?" against "Berkshire is a county
    of Britain"); an instruction copied out does not. Against relation ``descriptions`` the bar for the question's
    own share is 0.9: "Who was a chemist from France?" asks about "Louis-Camille Maillard was a chemist from
    France" by swapping the subject for "who", while a description restated with a question mark is all copy.
    Entity ``names`` count as one word each on both sides: a long title shared by the question and a description
    is the entity the question asks about, not copied wording."""
    names = list(names)
    mine = set(_ngrams(words(blank_names(text, names, " Name ")), 3))
    if len(mine) < 3:
        return _v("not_copied", True, "the question is too short to be a copy.")
    for s, own in [*((s, 0.7) for s in sources), *((d, 0.9) for d in descriptions)]:
        theirs = set(_ngrams(words(blank_names(s, names, " Name ")), 3))
        if len(theirs) < 3:
            continue
        shared = len(mine & theirs)
        if shared / len(theirs) >= threshold and shared / len(mine) >= own:
            return _v("not_copied", False, f"the question copies {shared / len(theirs):.0%} of {s[:80]!r}; ask a "
                      "question in your own words instead of restating the instructions or a relation.")  # fmt: skip
    return _v("not_copied", True, "the question is not copied from the prompt or a relation.")


# -- all question gates --------------------------------------------------------------------------------------------
TEXT_GATE_CHECKS: tuple[CheckName, ...] = (
    "no_markup", "no_labels", "question_form", "question_length", "no_repetition", "language", "not_copied",
)  # fmt: skip


def question_gates(
    question: str,
    *,
    config: TextGateConfig | None = None,
    names: Iterable[str] = (),
    sources: Iterable[str] = (),
    descriptions: Iterable[str] = (),
    scope: str | None = None,
) -> list[Verdict]:
    """Every question gate, in ``TEXT_GATE_CHECKS`` order (all run, so retry feedback lists every problem).
    ``scope``: the phrase the question opens with (``[quality] scopes``), the same for every question of its graph:
    the length is counted without it, as a limit on what the question itself asks.
    ``names``: the entity names the question may contain (the path's nodes), blanked out for language
    identification; ``sources``: instructions and examples it must not copy, ``descriptions``: the path's relation
    descriptions it must not restate (``check_not_copied``). An identifier among ``names`` is blanked in its
    display form too ("element ion or isotope" for ``element_ion_or_isotope``, ``tasks.meaning.names``)."""
    cfg = config or TextGateConfig()
    names = display_forms(names)
    # A node name may itself hold symbols ("Barack_Obama", "<Obama>", "Where Have All the Flowers Gone?"): the
    # shape checks look at the question with the names it may contain replaced by a plain word.
    shaped = blank_names(question, names, "Name")
    return [
        check_no_markup(shaped),
        check_no_labels(shaped),
        check_question_form(shaped),
        _length_without_scope(question, scope, cfg.min_words, cfg.max_words),
        check_no_repetition(question),
        check_language(question, cfg.language, names),
        check_not_copied(question, sources, cfg.copy_threshold, names, descriptions),
    ]


def _length_without_scope(question: str, scope: str | None, min_words: int, max_words: int) -> Verdict:
    """``check_question_length`` of the question without its scope, saying so in its reason."""
    asked = _without_scope(question, scope)
    v = check_question_length(asked, min_words, max_words)
    if asked is question:
        return v
    return v.model_copy(update={"reason": v.reason.rstrip(".") + " (not counting the scope it opens with)."})


def _without_scope(question: str, scope: str | None) -> str:
    """``question`` without the scope phrase it opens with ("Among the ..., which ...?" -> "which ...?"); as it is
    when it does not open with it."""
    if not scope:
        return question
    q = question.lstrip()
    head = scope.strip()
    if q[:len(head)].casefold() == head.casefold() and q[len(head):len(head) + 1] == ",":
        return q[len(head) + 1:].lstrip()
    return question


# -- thoughts and tool arguments -------------------------------------------------------------------------------
_TOOL_LINE = re.compile(r"^\s*\d+\.\s+\S", re.M)


def pasted_share(thought: str, observation: str) -> float:
    """Share of ``observation``'s lines (of 20 characters or more) that ``thought`` contains verbatim."""
    lines = [ln.strip() for ln in observation.splitlines() if len(ln.strip()) >= 20]
    if not lines:
        return 0.0
    flat = " ".join(thought.split())
    return sum(" ".join(ln.split()) in flat for ln in lines) / len(lines)


def thought_problem(
    thought: str,
    *,
    language: str = "en",
    names: Iterable[str] = (),
    observations: Sequence[str] = (),
    max_pasted_share: float = 0.5,
) -> tuple[str, str] | None:
    """``(code, reason)`` for the first problem of one thought, ``None`` when it reads as a thought.

    Codes: ``thought_markup`` (tags, tool-call syntax, JSON), ``thought_pastes_tool_output`` (a numbered tool
    listing, or most of one observation's lines copied), ``thought_repetitive`` (a loop), ``thought_wrong_language``.
    """
    t = thought.strip()
    names = display_forms(names)
    # Tags include the model's made-up ones with spaces or hyphens ("<step-by-step reasoning>"); a fenced code
    # block ("```python") is code, whatever language its comments are in. Entity names are blanked first: a
    # node named "<Obama>" is not a tag.
    shaped = blank_names(t, names, "Name") if names else t
    if re.search(r"</?[A-Za-z][\w -]*>|```|\{\s*\"|\w+\(\s*\w+\s*=|<tool_call>|\[\s*\{", shaped):
        return "thought_markup", "the thought holds tags, code, JSON or tool-call syntax; write plain sentences"
    if len(_TOOL_LINE.findall(t)) >= 3:
        return "thought_pastes_tool_output", "the thought is a numbered listing like a tool result; say what it shows"
    for obs in observations:
        share = pasted_share(t, obs)
        if share > max_pasted_share and len(t) > 200:
            return "thought_pastes_tool_output", f"the thought pastes {share:.0%} of a tool result; summarise it"
    # Names are what a thought is about and come back in every sentence; a loop is in the words around them.
    problem = repetition_problem(blank_names(t, names))
    if problem is not None:
        return "thought_repetitive", f"the thought loops ({problem})"
    lang = language_problem(t, language, names)
    if lang is not None:
        return "thought_wrong_language", f"the thought is not in the configured language ({lang})"
    return None


def tool_argument_problem(value: str, *, max_words: int = 12) -> str | None:
    """Why ``value`` is not an entity-like tool argument (a name, not a sentence or a question), or ``None``."""
    v = value.strip()
    if not v:
        return "it is empty"
    if "\n" in v:
        return "it spans several lines"
    n = len(words(v))
    if n == 0:
        return "it holds no word"
    if n > max_words:
        return f"it has {n} words; a name has at most {max_words}"
    if v.endswith("?") or _sentence_breaks(v + " X"):
        return "it is a sentence or a question, not a name"
    if re.match(r"(?i)^(?:what|which|who|whom|whose|where|when|why|how|is|are|does|did|find|search|look)\b", v):
        return "it is a request, not a name"
    kind = markup_kind(v.replace("_", " "))
    if kind in {"a URL", "an HTML or XML tag", "JSON", "code", "a regular expression", "a template placeholder"}:
        return f"it contains {kind}"
    return None


__all__ = [
    "LanguageGate",
    "TEXT_GATE_CHECKS",
    "TextGateConfig",
    "TextGateError",
    "blank_names",
    "check_language",
    "check_no_labels",
    "check_no_markup",
    "check_no_repetition",
    "check_not_copied",
    "check_question_form",
    "check_question_length",
    "language_problem",
    "language_sample",
    "markup_kind",
    "pasted_share",
    "question_gates",
    "repetition_problem",
    "supported_languages",
    "thought_problem",
    "tool_argument_problem",
    "words",
]
