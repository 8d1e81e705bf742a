"""The meaning check: does the question, read by someone who knows only the facts, lead to its answer?

Code checks test a question's form (it names its start, hides its answer, is one question). They cannot tell
whether the words say what the path says: ``lipid ingredient_of clinical drug`` once became "What is the
ingredient of lipid?", which reads the relation backwards. This step asks the ``verifier`` role to answer the
question from a *fact sheet* alone and compares its answer with the gold answer; it runs after the code checks pass
and before the judge, for every writer (LLM or template).

The fact sheet (``fact_sheet``):

- every fact of the path, one plain sentence each, in the relation's stored direction (``state``, by default
  ``tasks.qa.template_writer.fact_sentence``);
- the other facts of the path's nodes as distractors, facts whose relation text is also one of the path's first
  (they are what makes a wrongly worded or an ambiguous question visible), then in a seeded order, up to
  ``max_facts`` lines in all; the path's facts are always kept, whatever the cap;
- shuffled deterministically (seeded by the question and the path), so the path's facts are not the first lines.

The verifier answers with one of the sheet's entity names, ``"unknown"`` (no chain of facts answers the
question) or ``"several"`` (more than one entity fits). An answer that is not the gold answer under the shared
answer normaliser (``schemas.answers.same_answer``) is a failed ``answerable_from_facts`` verdict, reject code
``not_answerable_from_facts``; its reason names the verifier's answer, so the generator's retry feedback says what
the question was read as. An endpoint failure, or a reply that stays invalid after the re-ask, is no verdict on the
question: the caller records it as ``llm_error``, as it does for the judge.

The step follows the project's LLM-step shape: ``build_record`` -> ``build_messages(record)`` -> one gateway call
(``check_meaning``) -> ``parse`` / ``verdict_for``.

Calibration (``calibrate``): a verifier that cannot read fact sheets rejects good questions. Before a run with the
check on, the verifier answers ``CONTROLS``, questions on fact sheets built exactly as a real check builds them
(``check_meaning`` over ``control_graph``, invented entities said by the template writer's sentences) whose answers
are known; fewer than ``MIN_CONTROLS_RIGHT`` of them right (a wrong answer, or no valid reply) and the run switches
the check off, with ``Calibration.line`` saying so and why. ``reader_answer`` reads a verdict's reader answer back
for the run summary.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from gateway.client import LLMGateway
from gateway.structured import extract_json
from schemas.answers import name_key, same_answer
from schemas.ids import content_digest
from schemas.qa import CHECK_CODES, PathEdge, Verdict
from tasks.graph.kg import EdgeData, KnowledgeGraph
from tasks.meaning.profiles import book_for_graph
from tasks.qa.context import path_edges
from tasks.qa.template_writer import fact_sentence

#: The request name (and JSON-schema name) of the meaning check's call.
REQUEST_NAME = "qa_meaning_check"
#: The check's name in a ``Verdict`` and its reject code.
CHECK_NAME = "answerable_from_facts"
UNKNOWN = "unknown"
SEVERAL = "several"
#: Most lines of a fact sheet (the path's facts are kept even beyond it).
MAX_FACTS = 30

State = Callable[[PathEdge], str]


def _default_state() -> State:
    return fact_sentence


class MeaningOutput(BaseModel):
    """The verifier's reply: an entity name of the sheet, "unknown" or "several", and why."""

    answer: str
    reason: str = ""


@dataclass(frozen=True)
class MeaningRecord:
    """What the verifier is shown (``facts``, ``question``) and what it is checked against (``answer``, ``path``).
    ``names`` are the entities of the sheet, sorted: the answers it may give besides "unknown" and "several"."""

    question: str
    answer: str
    path: tuple[str, ...]
    facts: tuple[str, ...]
    names: tuple[str, ...]
    n_path_facts: int = 0


@dataclass(frozen=True)
class MeaningResult:
    """One meaning check: ``verdict`` when the verifier answered, else ``failure`` (the gateway's failure) and
    ``failure_kind``. ``reply`` is the verifier's parsed answer."""

    record: MeaningRecord
    verdict: Verdict | None = None
    reply: MeaningOutput | None = None
    failure: str | None = None
    failure_kind: str | None = None
    raw: str | None = None


# -- the fact sheet ---------------------------------------------------------------------------------------------------
def _edge_from(head: str, tail: str, d: EdgeData) -> PathEdge:
    """A relation at ``head`` as a hop ``head -> tail``, with ``forward`` set as ``context.hop_edge`` sets it."""
    return PathEdge(
        head=head, tail=tail, relation=d.relation, keywords=list(d.keywords), description=d.description,
        directed=d.directed, forward=d.direction == "out" or (d.direction == "undirected" and d.source == head),
        source_chunk_ids=list(d.source_chunk_ids),
    )  # fmt: skip


def _stored(e: PathEdge) -> tuple[str, str, str]:
    return e.triple()


def fact_sheet(kg: KnowledgeGraph, path: Sequence[str], question: str, *, state: State | None = None,
               max_facts: int = MAX_FACTS, extra: Sequence[PathEdge] = ()) -> tuple[list[str], list[PathEdge], int]:
    """``(lines, edges, n_path_facts)``: the sheet's sentences in shown order, the edge behind each line, and how
    many of them are the path's facts (module docstring); ``extra`` facts (a program's constraints) are on the sheet
    as the path's are. ``ValueError`` when the path is not connected."""
    say = state or _default_state()
    own = [*path_edges(kg, path), *extra]
    seen: set[tuple[str, str, str]] = set()
    chosen: list[PathEdge] = []
    for e in own:
        if _stored(e) not in seen:
            seen.add(_stored(e))
            chosen.append(e)
    n_path = len(chosen)
    labels = {e.relation_text().casefold() for e in own}
    rank_seed = content_digest("meaning-check-distractors", question, *path)
    others: list[tuple[tuple[int, str], PathEdge]] = []
    for node in dict.fromkeys(path):
        for nb, d in kg.neighbors(node):
            e = _edge_from(node, nb, d)
            t = _stored(e)
            if t in seen or t[0] == t[2]:
                continue
            seen.add(t)
            same_label = e.relation_text().casefold() in labels
            others.append(((0 if same_label else 1, content_digest(rank_seed, *t)), e))
    others.sort(key=lambda x: x[0])
    room = max(0, max_facts - len(chosen))
    chosen += [e for _, e in others[:room]]
    lines: list[str] = []
    edges: list[PathEdge] = []
    kept_path = 0
    for i, e in enumerate(chosen):
        text = " ".join(say(e).split())
        if not text or text in lines:  # two relations said the same way are one line
            continue
        lines.append(text)
        edges.append(e)
        kept_path += i < n_path
    order = list(range(len(lines)))
    random.Random(content_digest("meaning-check-shuffle", question, *path)).shuffle(order)
    return [lines[i] for i in order], [edges[i] for i in order], kept_path


def build_record(kg: KnowledgeGraph, path: Sequence[str], question: str, answer: str, *, state: State | None = None,
                 max_facts: int = MAX_FACTS, extra: Sequence[PathEdge] = ()) -> MeaningRecord:
    """The record one meaning check is made from."""
    lines, edges, n_path = fact_sheet(kg, path, question, state=state, max_facts=max_facts, extra=extra)
    names = sorted({n for e in edges for n in (e.head, e.tail)})
    return MeaningRecord(question=question, answer=answer, path=tuple(path), facts=tuple(lines), names=tuple(names),
                         n_path_facts=n_path)


# -- the call ---------------------------------------------------------------------------------------------------------
def role_is_embedded(gateway: LLMGateway, role: str = "verifier") -> bool:
    """Whether ``role`` is the embedded local model: its endpoint has no ``base_url`` (``Endpoint.is_local``), or it
    was resolved to the embedded server. Starts nothing."""
    try:
        return gateway.settings.endpoint(role).is_local
    except (KeyError, ValueError, AttributeError):
        return False


def enabled(setting: str, gateway: LLMGateway, role: str = "verifier") -> bool:
    """Whether the meaning check runs: ``on``, ``off``, or ``auto`` (on unless ``role`` is the embedded model, a
    demo-quality model too weak to read a fact sheet reliably)."""
    if setting == "auto":
        return not role_is_embedded(gateway, role)
    if setting in ("on", "off"):
        return setting == "on"
    raise ValueError(f"unknown meaning_check setting {setting!r}; choose auto, on or off")


SYSTEM = ("You answer questions from a list of facts and nothing else. You know nothing about these entities "
          "beyond the facts given.")


def build_messages(record: MeaningRecord) -> list[dict[str, str]]:
    """The verifier's prompt: the fact sheet and the question, never the intended answer."""
    facts = "\n".join(f"- {f}" for f in record.facts)
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": (
            f"Facts:\n{facts}\n\nQuestion: {record.question}\n\n"
            "Answer the question from these facts alone. Read every fact exactly as written: a relation holds in "
            "the direction its sentence states, never the reverse. Start from the entity the question names and "
            "follow the facts the question describes, one after another.\n"
            "- If they lead to exactly one entity, answer with its name as written in the facts.\n"
            f'- If more than one entity fits the question, answer "{SEVERAL}".\n'
            f'- If no chain of facts answers the question, answer "{UNKNOWN}".\n'
            'Reply as JSON: {"answer": "...", "reason": "one short sentence"}'
        )},
    ]  # fmt: skip


def answer_schema(record: MeaningRecord) -> dict[str, Any]:
    """The reply's schema: ``answer`` is one of the sheet's names, "unknown" or "several"."""
    return {
        "type": "object",
        "properties": {
            "answer": {"type": "string", "enum": [*record.names, UNKNOWN, SEVERAL]},
            "reason": {"type": "string", "maxLength": 400},
        },
        "required": ["answer"],
    }


def parse(text: str | None) -> MeaningOutput | None:
    """A reply text read as ``MeaningOutput`` (a JSON object, fenced or inside prose), or ``None`` for an empty,
    garbled or wrongly shaped reply. A blank answer is no answer."""
    try:
        value = extract_json(text or "")
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    try:
        out = MeaningOutput.model_validate(value)
    except ValidationError:
        return None
    if not out.answer.strip():
        return None
    return out


def _is(answer: str, word: str) -> bool:
    return name_key(answer) == word


def verdict_for(reply: MeaningOutput, record: MeaningRecord) -> Verdict:
    """The ``answerable_from_facts`` verdict of a parsed reply: passed when its answer is the gold answer."""
    got = reply.answer.strip()
    why = f" ({reply.reason.strip()})" if reply.reason.strip() else ""
    if same_answer(got, record.answer):
        return Verdict(check=CHECK_NAME, ok=True, reason=f"a reader given only the facts answered {got!r}")
    if _is(got, SEVERAL):
        reason = (f"a reader given only the facts found several entities that fit the question{why}: say which "
                  "relation each step follows so that only the intended answer fits")
    elif _is(got, UNKNOWN):
        reason = (f"a reader given only the facts could not answer the question{why}: each step must say what "
                  "its relation states, in the direction the relation reads")
    else:
        reason = (f"a reader given only the facts answered {got!r}, not the intended answer{why}: the question "
                  "says something its path does not; check the direction of each relation")
    return Verdict(check=CHECK_NAME, ok=False, code=CHECK_CODES[CHECK_NAME], reason=reason)


async def check_meaning(gateway: LLMGateway, kg: KnowledgeGraph, path: Sequence[str], question: str, answer: str,
                        *, state: State | None = None, max_facts: int = MAX_FACTS, params: dict[str, Any] | None = None,
                        role: str = "verifier", extra: Sequence[PathEdge] = ()) -> MeaningResult:
    """Ask ``role`` to answer ``question`` from the path's fact sheet (and the ``extra`` facts a program's
    constraints add). Never raises for LLM problems: a failed call is a result with ``failure`` set and no
    verdict."""
    record = build_record(kg, path, question, answer, state=state, max_facts=max_facts, extra=extra)
    res = await gateway.structured(role, build_messages(record), MeaningOutput, schema=answer_schema(record),
                                   name=REQUEST_NAME, params=params, max_reasks=1)
    if not res.ok:
        return MeaningResult(record=record, failure=str(res.failure), failure_kind=res.failure.kind,
                             raw=res.raw or None)
    return MeaningResult(record=record, verdict=verdict_for(res.value, record), reply=res.value, raw=res.raw or None)


_ANSWERED = re.compile(r"""answered ('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")


def reader_answer(verdict: Verdict) -> str | None:
    """What the reader answered, read back from a meaning-check verdict (``verdict_for`` writes it into the
    reason): an entity name, ``"several"`` or ``"unknown"``; ``None`` for a verdict of another check."""
    if verdict.check != CHECK_NAME:
        return None
    if verdict.reason.startswith("a reader given only the facts found several"):
        return SEVERAL
    if verdict.reason.startswith("a reader given only the facts could not answer"):
        return UNKNOWN
    m = _ANSWERED.search(verdict.reason)
    return ast.literal_eval(m.group(1)) if m else None


# -- calibration: control fact sheets whose answers are known ---------------------------------------------------------
#: The control graph: invented places, people and books, so that a reader can answer only from the sheet.
CONTROL_TRIPLES: tuple[tuple[str, str, str], ...] = (
    ("Velmora", "capital of", "Ostrand"), ("Ostrand", "currency", "Dalin"),
    ("Brisk River", "flows through", "Velmora"), ("Tarnet", "capital of", "Quellia"),
    ("Quellia", "borders", "Ostrand"), ("Torvin Kade", "born in", "Velmora"),
    ("Torvin Kade", "wrote", "The Salt Ledger"), ("Mirel Osk", "wrote", "Harbour Songs"),
    ("Mirel Osk", "born in", "Tarnet"), ("Quellia", "currency", "Pell"),
    ("Ostrand", "official language", "Ostric"),
)  # fmt: skip
CONTROL_DOMAIN = "meaning_controls"


@dataclass(frozen=True)
class Control:
    """A control question: the path its sheet is built from, and the answer a careful reader gives."""

    path: tuple[str, ...]
    question: str
    answer: str


#: One hop read backwards from the question's word order, one hop asked from its object, two hops, and a
#: question the sheet cannot answer ("unknown"). No answer is the first name of its sheet (what a reader that
#: picks the first allowed value says), and a reader that always says "unknown" gets one right.
CONTROLS: tuple[Control, ...] = (
    Control(("Velmora", "Ostrand"), "What is Velmora the capital of?", "Ostrand"),
    Control(("Harbour Songs", "Mirel Osk"), "Who wrote Harbour Songs?", "Mirel Osk"),
    Control(("The Salt Ledger", "Torvin Kade", "Velmora"),
            "Which city was the person who wrote The Salt Ledger born in?", "Velmora"),
    Control(("Tarnet", "Quellia"), "Who founded Tarnet?", UNKNOWN),
)
#: Control sheets the verifier must answer right for the meaning check to stay on in a run.
MIN_CONTROLS_RIGHT = 3


@dataclass(frozen=True)
class ControlResult:
    """One control: what the reader answered (``got``, None when it gave no valid reply: ``failure``)."""

    control: Control
    got: str | None = None
    failure: str | None = None

    @property
    def right(self) -> bool:
        return self.got is not None and same_answer(self.got, self.control.answer)

    def describe(self) -> str:
        said = repr(self.got) if self.got is not None else f"nothing valid ({self.failure})"
        return f"{self.control.question!r} answered {said}, expected {self.control.answer!r}"


@dataclass(frozen=True)
class Calibration:
    """The control sheets' outcome and the decision: the check stays on when at least ``needed`` are right."""

    results: tuple[ControlResult, ...]
    needed: int = MIN_CONTROLS_RIGHT

    @property
    def right(self) -> int:
        return sum(r.right for r in self.results)

    @property
    def passed(self) -> bool:
        return self.right >= self.needed

    @property
    def line(self) -> str:
        """The one line a run logs and records: the score, the bar, and what it means for the run."""
        score = (f"the verifier answered {self.right} of {len(self.results)} control fact sheets right "
                 f"(at least {self.needed} needed)")
        if self.passed:
            return f"meaning check on: {score}"
        wrong = "; ".join(r.describe() for r in self.results if not r.right)
        return (f"meaning check switched OFF for this run: {score}, so it cannot be trusted to read fact sheets "
                f"and would reject good questions as {CHECK_CODES[CHECK_NAME]}; wrong: {wrong}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "right": self.right, "of": len(self.results), "needed": self.needed, "passed": self.passed,
            "line": self.line,
            "controls": [{"question": r.control.question, "expected": r.control.answer, "answered": r.got,
                          "failure": r.failure, "right": r.right} for r in self.results],
        }  # fmt: skip


def control_graph() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples(CONTROL_DOMAIN, list(CONTROL_TRIPLES))


async def calibrate(gateway: LLMGateway, *, controls: Sequence[Control] = CONTROLS,
                    needed: int = MIN_CONTROLS_RIGHT, max_facts: int = MAX_FACTS,
                    params: dict[str, Any] | None = None, role: str = "verifier") -> Calibration:
    """Ask ``role`` the control questions, each from a fact sheet built exactly as a real check builds one
    (``check_meaning`` on the control graph, its facts said by the template writer's sentences under the graph's
    profiles). A reply that is no valid answer counts as wrong. Never raises for LLM problems."""
    if not 0 < needed <= len(controls):
        raise ValueError(f"needed must be between 1 and the number of controls ({len(controls)}), got {needed}")
    kg = control_graph()
    book = book_for_graph(kg)
    results = await gateway.gather(
        check_meaning(gateway, kg, c.path, c.question, c.answer, state=lambda e: fact_sentence(e, book),
                      max_facts=max_facts, params=params, role=role)
        for c in controls
    )  # fmt: skip
    return Calibration(tuple(ControlResult(c, r.reply.answer.strip() if r.reply else None, r.failure)
                             for c, r in zip(controls, results)), needed)


__all__ = [
    "CHECK_NAME", "CONTROLS", "CONTROL_TRIPLES", "MAX_FACTS", "MIN_CONTROLS_RIGHT", "REQUEST_NAME", "SEVERAL",
    "UNKNOWN", "Calibration", "Control", "ControlResult", "MeaningOutput", "MeaningRecord", "MeaningResult",
    "answer_schema", "build_messages", "build_record", "calibrate", "check_meaning", "control_graph", "enabled",
    "fact_sheet", "parse", "reader_answer", "role_is_embedded", "verdict_for",
]
