"""The relation profiles file: what ``hopforge graph profiles export`` writes and ``import`` reads back.

The export holds one entry per relation label of the current snapshots, every field resolved, with the source and
evidence of each. A user corrects the fields they disagree with (or deletes the entries they do not care about) and
imports the file: every field an entry gives becomes the user's, and wins over every other source. An entry needs
``key`` (or ``label``) and at least one field; ``evidence`` is read and ignored (the import writes its own).

An import is all or nothing: the first problem (an unknown field, a label that is in no snapshot, a count that is
not one / many / unknown, an empty or malformed surface form, a symmetric relation with two different counts) is
one line naming the file, the entry and the field, and nothing is stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from schemas.errors import InputError
from schemas.meaning import Count, RelationProfile, SurfaceForms, relation_key
from tasks.meaning.profiles import LabelStats, ProfileBook

HEADER = """\
# hopforge relation profiles: what each relation label of the graph means.
# Correct any field and import the file back: `hopforge graph profiles import FILE`. Every field you give wins
# over the lexicon, the graph statistics and the profiler; `evidence` shows where each value came from now and is
# ignored on import. Delete the entries you leave as they are, or keep them: either way is fine.
#
# words:                is the label English words at all (an opaque code such as `r17` is not)?
# forms:                templates; {s} = the relation's subject, {o} = its object, {the} = "the <type>" of the
#                       node asked for, {that} = who/that, {wh} = Who / Which <type> / What (opens a question).
#   statement           "{s} is an ingredient of {o}"
#   ask_object          questions that know the subject and ask for the object
#   object_clause       noun phrases for the object, told through the subject
#   ask_subject         questions that know the object and ask for the subject
#   subject_clause      noun phrases for the subject, told through the object
# objects_per_subject:  in the world, how many objects one subject has: one | many | unknown
# subjects_per_object:  how many subjects one object has: one | many | unknown
#                       (a hop is asked only in a direction whose count is one)
# symmetric:            true when "A r B" says the same as "B r A"
# subject_noun, object_noun: what each end is in the world (person, place, work, ...), used where the graph gives
#                       a node no type: "Which place was X born in?" rather than "What was X born in?"
"""


class ProfilesFileError(InputError):
    """A relation profiles file that cannot be imported."""


class ProfileEntry(BaseModel):
    """One entry of a profiles file: the fields a user sets."""

    model_config = ConfigDict(extra="forbid")

    key: str | None = None
    label: str | None = None
    words: bool | None = None
    forms: SurfaceForms | None = None
    objects_per_subject: Count | None = None
    subjects_per_object: Count | None = None
    symmetric: bool | None = None
    subject_noun: str | None = None
    object_noun: str | None = None
    evidence: dict[str, Any] | None = None


_FIELDS = ("words", "forms", "objects_per_subject", "subjects_per_object", "symmetric", "subject_noun", "object_noun")


def dump_profiles(profiles: Iterable[RelationProfile], stats: Mapping[str, LabelStats] | None = None) -> str:
    """The profiles as the YAML file a user reads and corrects (module docstring), sorted by key."""
    entries = []
    for p in sorted(profiles, key=lambda p: p.key):
        d = p.model_dump(mode="json", exclude_none=False)
        entry: dict[str, Any] = {"key": d["key"], "label": d["label"], "words": d["words"]}
        if d["forms"] is not None:
            entry["forms"] = d["forms"]
        entry.update({k: d[k] for k in ("objects_per_subject", "subjects_per_object", "symmetric", "subject_noun",
                                        "object_noun")})
        entry["evidence"] = {k: (f"{v['source']}: {v['detail']}" if v.get("detail") else v["source"])
                             for k, v in d["evidence"].items()}
        st = (stats or {}).get(p.key)
        if st is not None:
            entry["evidence"]["uses"] = (f"{st.pairs} pair(s), {st.subjects} subject(s), {st.objects} object(s) over "
                                         f"{st.snapshots} snapshot(s)")
        entries.append(entry)
    body = yaml.safe_dump({"profiles": entries}, sort_keys=False, allow_unicode=True, width=120)
    return HEADER + body


def _where(path: str, i: int, entry: Any) -> str:
    name = entry.get("key") or entry.get("label") if isinstance(entry, dict) else None
    return f"{path}: entry {i + 1}" + (f" ({name!r})" if name else "")


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err["loc"]) or "entry"
    if err["type"] == "extra_forbidden":
        return f"unknown field {loc!r}; the fields are key, label, {', '.join(_FIELDS)} (and evidence, ignored)"
    if err["type"] == "literal_error":
        return f"{loc} must be one, many or unknown, got {err.get('input')!r}"
    msg = err["msg"].removeprefix("Value error, ")
    return f"{loc}: {msg}"


def parse_profiles_file(text: str, path: str, known: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """The user's entries (key -> the fields they set) of a profiles file, validated against ``known`` (the
    relation keys of the current snapshots -> one raw label each). ``ProfilesFileError`` with one line naming
    the first problem; nothing is returned partly."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ProfilesFileError(f"{path}: not valid YAML{where}") from None
    if not isinstance(data, dict) or set(data) != {"profiles"} or not isinstance(data["profiles"], list):
        raise ProfilesFileError(f"{path}: expected a mapping with one key, 'profiles', holding a list of entries")
    out: dict[str, dict[str, Any]] = {}
    for i, raw in enumerate(data["profiles"]):
        where = _where(path, i, raw)
        if not isinstance(raw, dict):
            raise ProfilesFileError(f"{where}: an entry is a mapping of fields, got {type(raw).__name__}")
        try:
            entry = ProfileEntry.model_validate(raw)
        except ValidationError as exc:
            raise ProfilesFileError(f"{where}: {_first_error(exc)}") from None
        key = relation_key(entry.key or entry.label or "")
        if not key:
            raise ProfilesFileError(f"{where}: an entry needs a key (or a label)")
        if key not in known:
            raise ProfilesFileError(f"{where}: the label {key!r} is in no current graph snapshot; "
                                    "`hopforge graph profiles export` lists the labels there are")
        if key in out:
            raise ProfilesFileError(f"{where}: {key!r} has two entries")
        fields = {f: getattr(entry, f) for f in _FIELDS if f in entry.model_fields_set}
        if not fields:
            continue  # an entry that only names its label sets nothing
        fields = {k: (v.model_dump() if isinstance(v, BaseModel) else v) for k, v in fields.items()}
        # the entry must make a valid profile with what the other sources say
        try:
            ProfileBook(user={key: fields}).profile(known[key])
        except ValidationError as exc:
            raise ProfilesFileError(f"{where}: {_first_error(exc)}") from None
        out[key] = fields
    return out


__all__ = ["HEADER", "ProfileEntry", "ProfilesFileError", "dump_profiles", "parse_profiles_file"]
