"""The shipped lexicon of relation meanings (``lexicon.yaml``), parsed and validated.

The file holds what code must not guess: for verb phrases and nouns, how many objects one subject has and how
many subjects one object has in the world, and whether the relation is symmetric; for whole labels of common
vocabularies (schema.org, Wikidata, DBpedia, Freebase, the UMLS semantic network), the English they read as and,
where the shape of the words alone would be wrong, explicit surface forms. ``tasks.meaning.morphology`` reads a
label's words and consults this table; the file's own header says how each section is read.

``load_lexicon()`` reads the shipped file once and caches it; ``load_lexicon(path)`` reads a user's file (also
cached, by path and modification time). A file that does not parse or breaks the schema raises ``LexiconError``
with one line naming the file, the entry and what is wrong.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from schemas.errors import InputError
from schemas.meaning import Count, SurfaceForms, check_type_noun, relation_key

LEXICON_PATH = Path(__file__).with_name("lexicon.yaml")


class LexiconError(InputError):
    """The lexicon file cannot be read or breaks its schema; the message names the file and the entry."""

    label = "lexicon error"


def _type_noun(v: Any) -> str | None:
    """An entry's ``subject`` / ``object`` / ``is`` / ``of``: checked as ``RelationProfile.subject_noun`` is."""
    return check_type_noun(v)


class _Counts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    objects_per_subject: Count = "unknown"
    subjects_per_object: Count = "unknown"
    symmetric: bool = False
    note: str = ""

    @model_validator(mode="after")
    def _symmetric(self) -> _Counts:
        if self.symmetric and self.objects_per_subject != self.subjects_per_object:
            raise ValueError(f"a symmetric entry has as many objects per subject as subjects per object, got "
                             f"{self.objects_per_subject}/{self.subjects_per_object}")
        (a_name, a), (b_name, b) = self._kinds()
        if self.symmetric and None not in (a, b) and a != b:
            raise ValueError(f"a symmetric entry has one kind of thing at both ends, got {a_name} {a!r} and "
                             f"{b_name} {b!r}")
        return self

    def _kinds(self) -> tuple[tuple[str, str | None], tuple[str, str | None]]:
        """The entry's two kind nouns, named as the file names them (none by default)."""
        return ("", None), ("", None)


class VerbEntry(_Counts):
    """A verb phrase in its lemma form ("write", "work at", "be born in"), counted as "<subject> <verb> <object>".
    ``tense`` is the tense a label without an auxiliary is read in ("born in": past; "caused by": present).
    ``subject`` and ``object`` say what each end is in the world ("write": a person writes a work)."""

    tense: Literal["past", "present"] | None = None
    subject: str | None = None
    object: str | None = None

    @field_validator("subject", "object", mode="before")
    @classmethod
    def _nouns(cls, v: Any) -> str | None:
        return _type_noun(v)

    def _kinds(self) -> tuple[tuple[str, str | None], tuple[str, str | None]]:
        return ("subject", self.subject), ("object", self.object)


class NounEntry(_Counts):
    """A noun ("capital", "ingredient", "birth place"), counted as "<subject> is a <noun> of <object>":
    ``objects_per_subject`` is how many things one <noun> is the <noun> of, ``subjects_per_object`` how many
    <noun>s one thing has. ``article`` overrides the article the noun takes ("none": "is part of"). ``is`` says
    what a thing called the <noun> is in the world (an author: a person), ``of`` what it is the <noun> of (a
    work)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    article: Literal["the", "a", "none"] | None = None
    is_: str | None = Field(default=None, alias="is")
    of: str | None = None

    @field_validator("is_", "of", mode="before")
    @classmethod
    def _nouns(cls, v: Any) -> str | None:
        return _type_noun(v)

    def _kinds(self) -> tuple[tuple[str, str | None], tuple[str, str | None]]:
        return ("'is'", self.is_), ("'of'", self.of)


class LabelEntry(_Counts):
    """A whole label of a known vocabulary ("P31", "birthPlace", "isa"). ``reads`` is the English the label
    means, read by the morphology in place of the label; ``forms`` are explicit surface forms; ``opaque`` marks a
    label that is a code with no English reading. Counts given here override those of the words, and so do
    ``subject`` and ``object``: what the label's own subject and object are in the world ("dbo:city": a city)."""

    reads: str | None = None
    forms: SurfaceForms | None = None
    opaque: bool = False
    subject: str | None = None
    object: str | None = None

    @field_validator("subject", "object", mode="before")
    @classmethod
    def _nouns(cls, v: Any) -> str | None:
        return _type_noun(v)

    def _kinds(self) -> tuple[tuple[str, str | None], tuple[str, str | None]]:
        return ("subject", self.subject), ("object", self.object)

    @field_validator("reads")
    @classmethod
    def _reads(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("an empty 'reads'")
        return " ".join(v.split()) if v is not None else v

    @model_validator(mode="after")
    def _opaque(self) -> LabelEntry:
        if self.opaque and (self.reads or self.forms):
            raise ValueError("an opaque label has no 'reads' or 'forms'")
        if self.symmetric and None not in (self.subject, self.object) and self.subject != self.object:
            raise ValueError(f"a symmetric entry has the same subject and object, got {self.subject!r} and "
                             f"{self.object!r}")
        return self


class Lexicon(BaseModel):
    """The parsed lexicon: ``verbs`` and ``nouns`` keyed by their lower-case lemma phrase, ``labels`` by
    ``relation_key`` of the label, ``words`` the extra tokens accepted as English."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = 1
    words: frozenset[str] = frozenset()
    verbs: dict[str, VerbEntry] = {}
    nouns: dict[str, NounEntry] = {}
    labels: dict[str, LabelEntry] = {}

    @field_validator("words", mode="before")
    @classmethod
    def _words(cls, v: Any) -> Any:
        if v is None:
            return frozenset()
        if not isinstance(v, list | tuple | set | frozenset):
            raise ValueError("'words' is a list of words")
        out = set()
        for w in v:
            if not isinstance(w, str) or not w.strip() or len(w.split()) != 1:
                raise ValueError(f"'words' holds single words, got {w!r}")
            out.add(w.strip().casefold())
        return frozenset(out)

    @field_validator("verbs", "nouns", mode="before")
    @classmethod
    def _phrases(cls, v: Any) -> Any:
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise ValueError("a section is a mapping of phrase to entry")
        out: dict[str, Any] = {}
        for k, e in v.items():
            key = " ".join(str(k).casefold().replace("_", " ").split())
            if not key:
                raise ValueError("an entry with an empty phrase")
            if key in out:
                raise ValueError(f"{key!r} is listed twice")
            out[key] = {} if e is None else e
        return out

    @field_validator("labels", mode="before")
    @classmethod
    def _labels(cls, v: Any) -> Any:
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise ValueError("a section is a mapping of label to entry")
        out: dict[str, Any] = {}
        for k, e in v.items():
            key = relation_key(str(k))
            if not key:
                raise ValueError("an entry with an empty label")
            if key in out:
                raise ValueError(f"label {key!r} is listed twice")
            out[key] = {} if e is None else e
        return out

    def verb(self, phrase: str) -> VerbEntry | None:
        return self.verbs.get(" ".join(phrase.casefold().split()))

    def noun(self, phrase: str) -> NounEntry | None:
        return self.nouns.get(" ".join(phrase.casefold().split()))

    def label(self, label: str) -> LabelEntry | None:
        return self.labels.get(relation_key(label))

    def knows_word(self, word: str) -> bool:
        """Whether ``word`` is listed as English (in ``words`` or inside a verb or noun phrase)."""
        w = word.casefold()
        return w in self.words or w in self._phrase_words

    @functools.cached_property
    def _phrase_words(self) -> frozenset[str]:
        return frozenset(w for p in (*self.verbs, *self.nouns) for w in p.split())


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out and part in {"objects_per_subject", "subjects_per_object", "symmetric", "tense", "article",
                              "reads", "forms", "opaque", "note", "statement", "ask_object", "object_clause",
                              "ask_subject", "subject_clause", "subject", "object", "is", "of"}:
            out += f".{part}"
        elif out:
            out += f"[{part!r}]"
        else:
            out = str(part)
    return out


def _one_line(path: Path, err: ValidationError) -> str:
    first = err.errors()[0]
    msg = str(first.get("msg", "")).removeprefix("Value error, ")
    loc = tuple(first.get("loc", ()))
    where = _where(loc)
    if loc and isinstance(loc[-1], str) and msg.startswith(f"{loc[-1]}: "):  # "statement: statement: ..."
        msg = msg[len(loc[-1]) + 2:]
    if first.get("type") == "extra_forbidden":
        msg = "unknown field (the fields are listed at the top of the shipped lexicon.yaml)"
    elif first.get("type") == "literal_error":
        msg = f"{first.get('input')!r} is not allowed: {msg.lower()}"
    more = len(err.errors()) - 1
    tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    text = f"lexicon {path}: {where + ': ' if where else ''}{msg}{tail}"
    return " ".join(text.split())


@functools.lru_cache(maxsize=8)
def _load(path: Path, mtime: float) -> Lexicon:
    del mtime  # part of the cache key only
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise LexiconError(f"lexicon {path}: cannot be read ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise LexiconError(f"lexicon {path}: not valid YAML{at} ({problem})") from None
    if not isinstance(raw, dict):
        raise LexiconError(f"lexicon {path}: the file must be a mapping with the sections words, verbs, nouns "
                           "and labels")
    try:
        return Lexicon.model_validate(raw)
    except ValidationError as exc:
        raise LexiconError(_one_line(path, exc)) from None


def load_lexicon(path: Path | None = None) -> Lexicon:
    """The lexicon at ``path`` (default: the shipped ``lexicon.yaml``), parsed and validated; cached.
    ``LexiconError`` with one line when the file is missing, not YAML, or breaks the schema."""
    p = Path(path) if path is not None else LEXICON_PATH
    try:
        mtime = p.stat().st_mtime
    except OSError as exc:
        raise LexiconError(f"lexicon {p}: cannot be read ({exc.strerror or exc})") from None
    return _load(p.resolve(), mtime)


__all__ = ["LEXICON_PATH", "LabelEntry", "Lexicon", "LexiconError", "NounEntry", "VerbEntry", "load_lexicon"]
