"""The ``profiler`` role: what a relation label means, asked of an LLM for the labels no other source profiles.

``tasks.meaning.profiles.ProfileBook`` resolves a label from the user's file, the shipped lexicon and the label's
morphology, and the graph statistics; a label that is words but still has no surface forms, or a count that is
still "unknown", is asked here once (``flows.profiles.profile_unknown_labels``). The request gives the label, a few
of its triples from the graph and its statistics, and asks for the fields of a ``RelationProfile``
(``schemas.meaning``): whether the label is words, the statement, question and clause templates, how many objects
one subject has and how many subjects one object has in the world, and whether it is symmetric.

``parse`` turns a reply into a profile or a ``ProfilerReject``: a reply whose templates do not validate (an
unknown or missing placeholder, a question without "?") is ``malformed``; one that says "one" in a direction where
the graph statistics prove "many" (``count_from_stats``) ``contradicts_graph``. A rejected answer is stored with
its reason and the label falls back to the sources before it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from gateway.client import LLMGateway
from schemas.meaning import Count, Evidence, RelationProfile, relation_key
from tasks.meaning.profiles import LabelStats, count_from_stats, edge_label

ROLE = "profiler"
#: The request (and JSON schema) name of a profiler call; ``testing.fake.PROFILER_SCHEMA`` answers it.
REQUEST_NAME = "relation_profile"
#: Most example triples a request shows.
MAX_EXAMPLES = 5
#: Longest entity description a request shows (a longer one is left out, the name stays).
MAX_DESCRIPTION_CHARS = 120
#: Gateway failures that mean the model answered, but not in the requested shape: stored as malformed. Any other
#: failure (timeout, rate limit, a server error) stores nothing, so the next run asks again.
_MALFORMED_FAILURES = frozenset({"validation", "truncated", "empty"})

RejectKind = Literal["malformed", "contradicts_graph", "endpoint"]


class ProfilerOutput(BaseModel):
    """The profiler's reply: the fields of a ``RelationProfile`` (templates as in ``schemas.meaning``)."""

    words: bool
    statement: str
    ask_object: list[str]
    object_clause: list[str]
    ask_subject: list[str]
    subject_clause: list[str]
    objects_per_subject: Count
    subjects_per_object: Count
    symmetric: bool
    reason: str


@dataclass(frozen=True)
class Example:
    """One triple of a label in the graph, with the ends' descriptions when they are short."""

    subject: str
    object: str
    subject_description: str = ""
    object_description: str = ""


@dataclass(frozen=True)
class ProfilerReject:
    """Why the profiler's answer for a label is not used. ``kind``: ``malformed`` (the reply does not make a valid
    profile), ``contradicts_graph`` (it says "one" where the graph shows "many"), ``endpoint`` (no answer came:
    not stored, asked again next time)."""

    key: str
    label: str
    kind: RejectKind
    reason: str

    @property
    def stored(self) -> bool:
        return self.kind != "endpoint"


# -- the request ----------------------------------------------------------------------------------------------------


def _short(text: str) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= MAX_DESCRIPTION_CHARS else ""


def label_examples(kgs: Iterable[Any], keys: Collection[str], n: int = MAX_EXAMPLES) -> dict[str, list[Example]]:
    """Up to ``n`` example triples per relation key in ``keys``, from the graphs ``kgs`` (``KnowledgeGraph``) in
    order, each read from the end its label reads from (``edge_label``)."""
    out: dict[str, list[Example]] = {}
    want = set(keys)
    for kg in kgs:
        for r in kg.relations():
            text, s = edge_label(r, r.source, r.target)
            if not text:
                continue
            key = relation_key(text)
            if key not in want or len(out.get(key, ())) >= n:
                continue
            o = r.target if s == r.source else r.source
            out.setdefault(key, []).append(Example(
                subject=s, object=o, subject_description=_short(_description(kg, s)),
                object_description=_short(_description(kg, o)),
            ))  # fmt: skip
    return out


def _description(kg: Any, name: str) -> str:
    try:
        return kg.entity(name).description
    except KeyError:
        return ""


def _stats_lines(stats: LabelStats | None) -> str:
    if stats is None or not stats.pairs:
        return "Graph statistics: none (the label was not found in the graph)."
    return (f"Graph statistics ({stats.pairs} triples over {stats.snapshots} graph snapshot(s)):\n"
            f"- {stats.subjects_several} of {stats.subjects} subjects have several objects\n"
            f"- {stats.objects_several} of {stats.objects} objects have several subjects")


def build_messages(label: str, examples: Sequence[Example], stats: LabelStats | None) -> list[dict[str, str]]:
    """The profiler's request for ``label``: the label, its example triples and its graph statistics."""

    def node(name: str, description: str) -> str:
        description = _short(description)
        return f"{name} ({description})" if description else name

    shown = "\n".join(f"- {node(e.subject, e.subject_description)} --[{label}]--> "
                      f"{node(e.object, e.object_description)}" for e in examples[:MAX_EXAMPLES])
    return [
        {"role": "system", "content": (
            "You explain what the relation labels of a knowledge graph mean, so that questions about the graph can "
            "be worded from them. You answer as JSON."
        )},
        {"role": "user", "content": (
            f"Relation label: {label!r}\n\n"
            f"Example triples (subject --[label]--> object):\n{shown or '- (none)'}\n\n"
            f"{_stats_lines(stats)}\n\n"
            "Describe the label:\n"
            "- words: true if the label is words a reader understands; false for an opaque code (\"P31\", "
            "\"rel_7\"). When false, leave every template empty.\n"
            "- statement: a sentence template stating one triple, with {s} for the subject and {o} for the "
            "object, e.g. \"{s} is an ingredient of {o}\".\n"
            "- ask_object: questions that know the subject and ask for the object: each starts with {wh}, contains "
            "{s}, never {o}, and ends with \"?\", e.g. \"{wh} is {s} an ingredient of?\".\n"
            "- object_clause: noun phrases for the object, given the subject: each starts with {the}, may use "
            "{that}, contains {s}, never {o}, no \"?\", e.g. \"{the} {that} has {s} as an ingredient\".\n"
            "- ask_subject and subject_clause: the same the other way round, knowing the object: they contain {o}, "
            "never {s}, e.g. \"{wh} is an ingredient of {o}?\", \"{the} {that} is an ingredient of {o}\".\n"
            "  {wh} becomes \"Who\", \"What\" or \"Which drug\"; {the} \"the drug\"; {that} \"who\" or \"that\". "
            "Use no other placeholders. Give each list best first; an empty list when no wording fits.\n"
            "- objects_per_subject: in the world, not only in this graph, does one subject have \"one\" such "
            "object or \"many\"? \"unknown\" if it varies.\n"
            "- subjects_per_object: the same for one object: \"one\", \"many\" or \"unknown\".\n"
            "  Say \"one\" in a direction only if the statistics above show no node with several in it.\n"
            "- symmetric: true if \"A label B\" always means \"B label A\" as well (then both counts are the same).\n"
            "- reason: one short sentence on what the label means."
        )},
    ]  # fmt: skip


# -- the reply ------------------------------------------------------------------------------------------------------


def _first_error(exc: ValidationError) -> str:
    errs = exc.errors()
    if not errs:
        return str(exc)
    msg = str(errs[0].get("msg", "")).removeprefix("Value error, ")
    loc = ".".join(str(p) for p in errs[0].get("loc", ()))
    return f"{loc}: {msg}" if loc and ":" not in msg else msg


def evidence_detail(model: str | None) -> str:
    return f"the profiler role's answer (model {model})" if model else "the profiler role's answer"


def parse(output: ProfilerOutput, label: str, stats: LabelStats | None, *,
          model: str | None = None) -> RelationProfile | ProfilerReject:
    """The profile the reply gives for ``label``, or why it is rejected (module docstring). Every field's
    evidence is the profiler's, naming the endpoint's ``model``."""
    key = relation_key(label)

    def reject(kind: RejectKind, reason: str) -> ProfilerReject:
        return ProfilerReject(key=key, label=label, kind=kind, reason=reason)

    forms: dict[str, Any] | None = None
    if output.words:
        if not output.statement.strip():
            return reject("malformed", "the reply says the label is words but gives no statement")
        forms = {"statement": output.statement, "ask_object": output.ask_object,
                 "object_clause": output.object_clause, "ask_subject": output.ask_subject,
                 "subject_clause": output.subject_clause}
    detail = evidence_detail(model)
    if output.reason.strip():
        detail = f"{detail}: {' '.join(output.reason.split())[:160]}"
    ev = Evidence(source="profiler", detail=detail)
    try:
        profile = RelationProfile(
            key=key, label=label, words=output.words, forms=forms,
            objects_per_subject=output.objects_per_subject, subjects_per_object=output.subjects_per_object,
            symmetric=output.symmetric,
            evidence={f: ev for f in ("words", "forms", "objects_per_subject", "subjects_per_object", "symmetric")},
        )  # fmt: skip
    except ValidationError as exc:
        return reject("malformed", _first_error(exc))
    if stats is not None:
        for name, n, several, side, other in (
            ("objects_per_subject", stats.subjects, stats.subjects_several, "subject", "objects"),
            ("subjects_per_object", stats.objects, stats.objects_several, "object", "subjects"),
        ):
            found = count_from_stats(n, several)
            if getattr(profile, name) == "one" and found is not None and found[0] == "many":
                return reject("contradicts_graph", f"the reply says one {side} has one of its {other}, but in the "
                              f"graph {several} of {n} {side}s have several")
    return profile


async def ask_profiler(gateway: LLMGateway, label: str, examples: Sequence[Example], stats: LabelStats | None, *,
                       params: dict[str, Any] | None = None) -> RelationProfile | ProfilerReject:
    """One profiler call for ``label`` (cached by the gateway), parsed."""
    res = await gateway.structured(ROLE, build_messages(label, examples, stats), ProfilerOutput, name=REQUEST_NAME,
                                   params=params or {"max_tokens": 700, "temperature": 0.0}, max_reasks=1)
    if not res.ok or res.value is None:
        failure = res.failure
        kind = failure.kind if failure is not None else "empty"
        why = str(failure) if failure is not None else "no answer"
        return ProfilerReject(key=relation_key(label), label=label,
                              kind="malformed" if kind in _MALFORMED_FAILURES else "endpoint",
                              reason=f"{kind}: {why}"[:300])
    return parse(res.value, label, stats, model=gateway.settings.endpoint(ROLE).model)


def needs_profiler(profile: RelationProfile) -> bool:
    """Whether a resolved profile leaves something for the profiler: it is words, but has no surface forms or a
    count still unknown in either direction."""
    return profile.words and (profile.forms is None or "unknown" in (profile.objects_per_subject,
                                                                     profile.subjects_per_object))


__all__ = ["MAX_EXAMPLES", "REQUEST_NAME", "ROLE", "Example", "ProfilerOutput", "ProfilerReject", "ask_profiler",
           "build_messages", "evidence_detail", "label_examples", "needs_profiler", "parse"]
