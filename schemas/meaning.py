"""What a relation label means, as data: one ``RelationProfile`` per distinct label of a snapshot.

A profile says whether the label is words at all, how to say the relation in both reading directions, how many
objects one subject has and how many subjects one object has in the world, and whether it is symmetric. Code
renders profiles; it does not decide what a label means. Every field records where its value came from
(``evidence``), so a user can see why a hop was phrased or refused, correct the profile in a YAML file and pass
it back.

Surface forms are templates with these placeholders:

- ``{s}``: the relation's stored subject; ``{o}``: its stored object. In a question or clause form one of them is
  the known node (a name, or a noun phrase describing it) and the other is the node asked for.
- ``{the}``: "the <type noun>" of the node asked for ("the drug", "the person").
- ``{that}``: the relative pronoun for the node asked for ("who" for a person, else "that").
- ``{wh}``: the opening of a question for the node asked for ("Who", "Which drug", "What"); only at the start.

The forward forms know the subject and ask for the object (``ask_object``, ``object_clause``); the inverse forms
know the object and ask for the subject (``ask_subject``, ``subject_clause``). For ``lipid ingredient_of
clinical drug``::

    statement:       "{s} is an ingredient of {o}"
    ask_object:      ["{wh} is {s} an ingredient of?", "{wh} has {s} as an ingredient?"]
    object_clause:   ["{the} {that} has {s} as an ingredient"]
    ask_subject:     ["{wh} is an ingredient of {o}?"]
    subject_clause:  ["{the} {that} is an ingredient of {o}"]

A clause whose known slot is its last word is right-branching ("{the} written by {s}") and may hold a nested
description; one whose slot sits inside it ("{the} {that} {s} wrote") takes a name only.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Count = Literal["one", "many", "unknown"]
ProfileSource = Literal["user", "lexicon", "morphology", "graph", "profiler", "none"]
PROFILE_SOURCES: tuple[str, ...] = ("user", "lexicon", "morphology", "graph", "profiler", "none")
PROFILE_FIELDS: tuple[str, ...] = ("words", "forms", "objects_per_subject", "subjects_per_object", "symmetric",
                                   "subject_noun", "object_noun")

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_ALLOWED = {"s", "o", "the", "that", "wh"}


_TYPE_NOUN = re.compile(r"[a-z][a-z-]*(?: [a-z][a-z-]*){0,2}")


def is_type_noun(text: str) -> bool:
    """Whether ``text`` is a type noun as ``check_type_noun`` takes it (one to three lower-case words)."""
    return _TYPE_NOUN.fullmatch(" ".join(text.split())) is not None


def check_type_noun(v: object) -> str | None:
    """What one end of a relation is in the world ("person", "place", "body of water"): one to three lower-case
    words, white space made single; ``ValueError`` otherwise. None stays None (not known)."""
    if v is None:
        return None
    text = " ".join(v.split()) if isinstance(v, str) else None
    if text is None or not _TYPE_NOUN.fullmatch(text):
        raise ValueError(f"a type noun is one to three lower-case words (\"person\", \"place\"), got {v!r}")
    return text


class Evidence(BaseModel):
    """Where one field of a profile came from, and what supports it ("lexicon: noun 'ingredient' (many/many)",
    "graph: 412 of 412 subjects have one object over 2 snapshots")."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: ProfileSource
    detail: str = ""


def _check_template(text: str, *, need: set[str], question: bool, what: str) -> str:
    text = " ".join(text.split())
    if not text:
        raise ValueError(f"{what}: an empty surface form")
    names = _PLACEHOLDER.findall(text)
    unknown = sorted({n for n in names if n not in _ALLOWED})
    if unknown:
        raise ValueError(f"{what}: unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)} in {text!r}; "
                         f"use {{s}}, {{o}}, {{the}}, {{that}} or {{wh}}")
    missing = sorted(need - set(names))
    if missing:
        raise ValueError(f"{what}: {text!r} lacks {', '.join('{' + m + '}' for m in missing)}")
    if question != text.endswith("?"):
        raise ValueError(f"{what}: {text!r} {'must' if question else 'must not'} end with '?'")
    if "{wh}" in text and not text.startswith("{wh}"):
        raise ValueError(f"{what}: {{wh}} opens a question; {text!r} has it elsewhere")
    return text


class SurfaceForms(BaseModel):
    """How a relation reads (module docstring). Each list holds alternatives, best first."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    statement: str
    ask_object: list[str] = Field(default_factory=list)
    object_clause: list[str] = Field(default_factory=list)
    ask_subject: list[str] = Field(default_factory=list)
    subject_clause: list[str] = Field(default_factory=list)

    @field_validator("statement")
    @classmethod
    def _statement(cls, v: str) -> str:
        return _check_template(v, need={"s", "o"}, question=False, what="statement")

    @model_validator(mode="after")
    def _forms(self) -> SurfaceForms:
        specs = {
            "ask_object": ({"s", "wh"}, True), "object_clause": ({"s"}, False),
            "ask_subject": ({"o", "wh"}, True), "subject_clause": ({"o"}, False),
        }  # fmt: skip
        for name, (need, question) in specs.items():
            values = [_check_template(t, need=need, question=question, what=name) for t in getattr(self, name)]
            for t in values:
                other = "o" if "s" in need else "s"
                if "{" + other + "}" in t:
                    raise ValueError(f"{name}: {t!r} names {{{other}}}, the node the form asks for")
            object.__setattr__(self, name, values)
        return self


class RelationProfile(BaseModel):
    """One relation label's meaning (module docstring). ``key`` is the normalised label (``relation_key``);
    ``label`` one raw spelling of it. ``forms=None`` means the relation cannot be put into words: a hop over it is
    refused with the label named."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    label: str
    words: bool
    forms: SurfaceForms | None = None
    objects_per_subject: Count = "unknown"
    subjects_per_object: Count = "unknown"
    symmetric: bool = False
    # What kind of thing each end is in the world ("person", "place", "work"), for a graph that types neither: a
    # question asks "Which place was Harry Kane born in?", not "What was Harry Kane born in?". None: not known.
    subject_noun: str | None = None
    object_noun: str | None = None
    evidence: dict[str, Evidence] = Field(default_factory=dict)

    @field_validator("subject_noun", "object_noun", mode="before")
    @classmethod
    def _noun(cls, v: object) -> str | None:
        return check_type_noun(v)

    @field_validator("key")
    @classmethod
    def _key(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("a profile needs a non-empty key")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> RelationProfile:
        unknown = sorted(set(self.evidence) - set(PROFILE_FIELDS))
        if unknown:
            raise ValueError(f"evidence for unknown field(s) {', '.join(unknown)}; the fields are "
                             f"{', '.join(PROFILE_FIELDS)}")
        if self.symmetric and self.objects_per_subject != self.subjects_per_object:
            raise ValueError(f"{self.key!r}: a symmetric relation has as many objects per subject as subjects per "
                             f"object, got {self.objects_per_subject}/{self.subjects_per_object}")
        if not self.words and self.forms is not None:
            raise ValueError(f"{self.key!r}: a label that is not words has no surface forms")
        return self

    def count_for(self, forward: bool) -> Count:
        """How many nodes a hop over this relation leads to in the world: walked forward (subject known) the
        objects per subject, backward the subjects per object."""
        return self.objects_per_subject if forward else self.subjects_per_object


def relation_key(label: str) -> str:
    """The key a label's profile is stored under: case folded, runs of white space made one space. Spellings
    that differ in more than that ("place_of_birth", "place of birth") are different labels with profiles of their
    own."""
    return " ".join(label.casefold().split())


__all__ = ["PROFILE_FIELDS", "PROFILE_SOURCES", "Count", "Evidence", "ProfileSource", "RelationProfile",
           "SurfaceForms", "check_type_noun", "relation_key"]
