"""QA generation: generator -> code checks -> judge, retried with feedback, every attempt kept.

One *job* is (seed, hop class, mode). Each attempt:
1. builds the prompt (subgraph context, task, few-shot examples, and the previous attempts with their feedback),
2. asks the generator for a structured answer restricted per request to the subgraph's node names (``free``) or
   to code-sampled candidate path ids (``candidates``),
3. runs the code checks (``tasks.qa.checks``); when they pass, asks the verifier to judge the question,
4. stops on acceptance, else feeds every failed check and the judge's reason into the next attempt.

Prompts and examples are hopforge's own wording of the recipe in the Omne-R1 paper (section 2 and appendix C).
"""

from __future__ import annotations

import asyncio
import random
import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from gateway.client import LLMGateway
from schemas.meaning import RelationProfile
from schemas.programs import QueryProgram
from schemas.qa import (
    CHECK_CODES, QA, CandidatePath, GenMode, HopClass, QAAttempt, Seed, Verdict, Writer, make_attempt_id, make_qa_id,
)  # fmt: skip
from tasks.qa.candidates import explain_no_candidates, render_candidates, sample_candidate_paths
from tasks.qa.context import RenderedContext, path_edges, path_source_chunks, render_subgraph
from tasks.graph.kg import KnowledgeGraph
from tasks.qa.checks import CheckConfig, feedback_text, hop_class_bounds, passed, reject_reason, resolve_path, run_checks
from tasks.qa.meaning_check import check_meaning, enabled as meaning_enabled
from tasks.meaning.names import (class_name_takes_the, column_value, coordinated_name, in_running_text, mention_kind, name_kind,
                                 name_takes_article, node_type_noun, phrase_name, question_name, versus_name)
from tasks.meaning.profiles import ProfileBook, book_for_graph
from tasks.qa.program_writer import can_pin_with, scoped, write_program_question
from tasks.qa.llm_programs import Pin, program_for_path, render_program_candidates
from tasks.qa.programs import (
    MAX_PINS,
    ClauseOk,
    PinRefusal,
    constraint_edges,
    program_edges,
    relation_index,
    sample_programs,
    skipped_ranks,
)
from tasks.qa.template_writer import TemplateError, date_in_words, fact_sentence, takes_article, write_question
from tasks.qa.text_gates import TextGateConfig, markup_kind, question_gates


#: Gateway failure kinds that mean "the endpoint did not answer", as opposed to "it answered badly".
ENDPOINT_FAILURES = frozenset(
    {"timeout", "rate_limit", "server_error", "connection", "auth", "not_found", "bad_request", "endpoint_unavailable"}
)


class GenConfig(BaseModel):
    """Knobs of QA generation."""

    max_attempts: int = Field(3, ge=1, description="Attempts per job: the first plus retries with feedback.")
    candidates: int = Field(8, ge=1, description="Candidate paths offered in candidates mode.")
    max_nodes: int = Field(5, ge=4, description="Most nodes of a 3+ hop path.")
    context_depth: int = Field(3, ge=1)
    context_token_budget: int = Field(2500, ge=200)
    max_description_chars: int = Field(160, ge=20)
    use_judge: bool = True
    constrain_question: bool = Field(
        False,
        description="Add a JSON-schema `pattern` forcing the question to name the start entity and end with '?'. "
        "Grammar-based servers (llama.cpp, vLLM) enforce it. Off by default: with the embedded 135M model the "
        "grammar built from the pattern seems to steer it into regex-like text.",
    )
    checks: CheckConfig = Field(default_factory=lambda: CheckConfig(max_nodes=5))
    text_gates: TextGateConfig | None = Field(
        default_factory=TextGateConfig, description="The question gates (tasks.qa.text_gates); None turns them off."
    )
    writer: Literal["llm", "template"] = Field(
        "llm", description="Who writes questions: the generator LLM, or the deterministic template writer (for "
        "weak generators such as the embedded model).",
    )  # fmt: skip
    template_fallback: bool = Field(
        False, description="After the LLM's last failed attempt, try the template writer on the job's candidates."
    )
    paraphrase: bool = Field(
        False, description="With the template writer: ask the generator to paraphrase each template question, and "
        "keep the paraphrase only if it passes every check and gate.",
    )  # fmt: skip
    profiles: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="The user's relation profile entries (key -> the fields they set), from "
        "`hopforge graph profiles import`; they win over the lexicon and the graph statistics.",
    )  # fmt: skip
    profiled: dict[str, RelationProfile] = Field(
        default_factory=dict, description="The profiler role's accepted answers (key -> profile): what no other "
        "source knew about a label (surface forms, a count still unknown).",
    )  # fmt: skip
    scopes: dict[str, str] = Field(
        default_factory=dict, description="Per domain, what its graph covers (``QualityConfig.scopes``): the "
        "template writer opens a question whose answer rests on the graph being whole with it.",
    )  # fmt: skip

    sampled: frozenset[str] = Field(
        default_factory=frozenset, description="Domains whose graph samples a larger world (``QualityConfig.sampled``): "
        "no program step there may name one of many in the world.",
    )  # fmt: skip

    @field_validator("scopes")
    @classmethod
    def _scopes_read_as_prose(cls, v: dict[str, str]) -> dict[str, str]:
        for domain, phrase in v.items():
            why = scope_problem(phrase)
            if why is not None:
                raise ValueError(f"scopes.{domain}: {why}")
        return v
    generator_params: dict[str, Any] = Field(default_factory=lambda: {"max_tokens": 400})
    judge_params: dict[str, Any] = Field(default_factory=lambda: {"max_tokens": 200, "temperature": 0.0})
    meaning_check: Literal["auto", "on", "off"] = Field(
        "auto", description="Before the judge, ask the verifier to answer each checked question from the path's facts "
        "alone (with distractors; tasks.qa.meaning_check); another answer rejects it (not_answerable_from_facts). "
        "auto: on unless the verifier role is the embedded local model.",
    )  # fmt: skip
    meaning_max_facts: int = Field(30, ge=1, description="Most lines of the meaning check's fact sheet; the path's "
                                   "own facts are always on it.")
    meaning_params: dict[str, Any] = Field(default_factory=lambda: {"max_tokens": 200, "temperature": 0.0})


# -- structured outputs ---------------------------------------------------------------------------------------------
class FreePin(BaseModel):
    """A pin the model names in ``free`` mode: path node ``node`` holds a relation to ``value``, an entity off the
    path, that the question states to single the node out (``tasks.qa.llm_programs``)."""

    node: str
    value: str


class FreeOutput(BaseModel):
    """``free`` mode: the model chooses the path itself, and the pins that single out its nodes."""

    path: list[str]
    question: str
    answer: str
    pins: list[FreePin] = Field(default_factory=list)


class PickedOutput(BaseModel):
    """``candidates`` mode: the model picks a candidate path by id and writes the question."""

    path_id: str
    question: str


class JudgeOutput(BaseModel):
    valid: bool
    reason: str


def question_schema(start: str | None = None) -> dict[str, Any]:
    """The question field; with ``start``, a pattern that makes the question name it and end with '?'."""
    schema: dict[str, Any] = {"type": "string", "minLength": 10, "maxLength": 300}
    if start is not None:
        # No quotes, backslashes or newlines around the name: a grammar built from the pattern must not let the
        # model close the JSON string early and keep writing.
        free = '[^"\\\\\\n]{0,150}'  # bounded too: a grammar follows the pattern, not maxLength
        schema["pattern"] = "^" + free + re.escape(start).replace("\\ ", " ") + free + "\\?$"
    return schema


def free_schema(nodes: Sequence[str], hop_class: HopClass, max_nodes: int, start: str | None = None) -> dict[str, Any]:
    lo, hi = hop_class_bounds(hop_class, max_nodes)
    names = list(dict.fromkeys(nodes))
    return {
        "type": "object",
        "properties": {
            "path": {"type": "array", "items": {"type": "string", "enum": names}, "minItems": lo, "maxItems": hi},
            "question": question_schema(start),
            "answer": {"type": "string", "enum": names},
            "pins": {"type": "array", "maxItems": MAX_PINS, "items": {
                "type": "object", "properties": {"node": {"type": "string", "enum": names},
                                                 "value": {"type": "string", "enum": names}},
                "required": ["node", "value"]}},
        },
        "required": ["path", "question", "answer"],
    }


def picked_schema(ids: Sequence[str], start: str | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"path_id": {"type": "string", "enum": list(ids)}, "question": question_schema(start)},
        "required": ["path_id", "question"],
    }


# -- prompts --------------------------------------------------------------------------------------------------------
SYSTEM = (
    "You write multi-hop quiz questions grounded in a knowledge graph. A good question starts from one named "
    "entity and can only be answered by following every relation of a given path, one hop after another."
)

RULES = """Rules for the question:
- Name the start entity of the path, and no other entity of the path.
- Never write the answer or any intermediate entity of the path in the question; describe them through their relations instead.
- Every hop must be needed: the answer cannot be reached in fewer steps.
- One clear answer: the last entity of the path.
- Read like a natural question a curious person would ask."""

PIN_RULE = """Pins: where a relation of the path leads to several entities, the one meant is singled out by a pin, a
fact of that entity whose other end is off the path. The question must state every pin, naming the pin's entity
("the element discovered in Sweden that ..."): without it the question has several answers."""

# Short examples written for hopforge (bridge, property check, comparison), on graphs unrelated to the demo.
FEW_SHOT_1_2 = """Examples of good short questions:
- Bridge (2 hops). Path: Marie Curie -> University of Paris -> Sorbonne Chapel.
  Question: "Which chapel belongs to the university where Marie Curie taught?" Answer: Sorbonne Chapel.
- Property (1 hop). Path: Danube -> Black Sea.
  Question: "Into which sea does the Danube flow?" Answer: Black Sea.
- Comparison through a shared neighbour (2 hops). Path: Kyoto -> Heian period -> Nara.
  Question: "Which earlier capital preceded the era in which Kyoto became Japan's capital?" Answer: Nara."""

FEW_SHOT_3 = """Example of a good long question:
- Path: Ada Lovelace -> Analytical Engine -> Charles Babbage -> Royal Astronomical Society.
  Question: "Which learned society did the designer of the machine that Ada Lovelace wrote programs for help to found?"
  Answer: Royal Astronomical Society."""


def _history_block(history: Sequence[QAAttempt]) -> str:
    if not history:
        return ""
    parts = ["Your earlier attempts were rejected. Fix every problem listed:"]
    for h in history:
        parts.append(
            f"Attempt {h.attempt}: path {' -> '.join(h.path) if h.path else '(none)'}"
            + (" with pins " + "; ".join(f"{h.program.nodes[c.node]} - {c.value}" for c in h.program.constraints)
               if h.program is not None and h.program.constraints else "") + "\n"
            f"  question: {h.question or '(none)'}\n  feedback:\n"
            + "\n".join("    " + line for line in _attempt_feedback(h).splitlines())
        )
    return "\n".join(parts)


def _attempt_feedback(a: QAAttempt) -> str:
    text = feedback_text(a.verdicts)
    if a.judge_valid is False and a.judge_reason:
        text = (text + "\n" if text else "") + f"reviewer: {a.judge_reason}"
    if not text and a.raw_text is not None and not a.question:
        text = "the reply was not a valid JSON object of the requested shape"
    return text or "rejected"


def scope_problem(phrase: str) -> str | None:
    """Why a scope phrase cannot open a question, or None: the question gates would refuse every question that
    opens with it (markup or symbols, such as an underscore in "country_converter's")."""
    kind = markup_kind(phrase)
    if kind is not None:
        return (f"{phrase!r} holds {kind}, so the question gates would refuse every question that opens with it; "
                "write the scope in plain words")
    if re.search(r";|:\s+[a-z]", phrase):
        # "In OPC UA's base information model (IEC 62541): its types, objects, variables and methods, which ...?": a
        # list after a colon has no verb, and the question runs on after it (grades-heldout51.md, gram); a title's
        # colon ("Animal Crossing: New Leaf") is the title's
        return (f"{phrase!r} holds a semicolon or a colon before a list, so every question would run on from the "
                "list into its own words; write the scope as one phrase (\"among the types and objects of the model\")")
    return None


def scope_names(kg: KnowledgeGraph, scope: str, *, longest: int = 6) -> list[str]:
    """The graph's nodes a scope phrase names ("among the places of the Austrian states Tirol, Salzburg and
    Vorarlberg" names three states): a question that opens with the scope names them too, so one whose answer or
    middle node is one of them is refused as a leak. Word runs of the phrase (up to ``longest`` words, longest
    first, capitalised first word) looked up as names; in the phrase's order."""
    words = re.findall(r"[\w'’.-]+", scope)
    found: list[str] = []
    i = 0
    while i < len(words):
        for n in range(min(longest, len(words) - i), 0, -1):
            run = " ".join(words[i:i + n])
            node = kg.lookup(run) if words[i][:1].isupper() else None
            if node is not None and node not in found:
                found.append(node)
                i += n - 1
                break
        i += 1
    return found


def check_scope_stated(question: str, scope: str) -> Verdict:
    """A question of a domain with a scope says it: every content word of the scope is in the question ("Among the
    94 named hurricanes that struck the US mainland from 1950 to 2012, ..."). Without it "the number of deaths of
    Hurricane Ivan" reads as the world's figure, "the event whose bronze medalist is X" as any event, and "the module
    of TeX" in the world's sense of "module"."""
    said = set(_scope_words(question))
    missing = [w for w in dict.fromkeys(_scope_words(scope)) if w not in said]
    if missing:
        return Verdict(check="scope_stated", ok=False, code=CHECK_CODES["scope_stated"],
                       reason=f"the question does not say what the graph covers, where its one answer holds "
                              f"(no {', '.join(repr(w) for w in missing[:4])}): open it with "
                              f"\"{scope[:1].upper()}{scope[1:]}, \".")
    return Verdict(check="scope_stated", ok=True, code=CHECK_CODES["scope_stated"],
                   reason="the question says what the graph covers, where its one answer holds.")


def _scope_words(text: str) -> list[str]:
    from tasks.meaning.names import generic_name_words

    skip = generic_name_words()
    return [w for w in re.findall(r"[\w']+", text.casefold()) if len(w) >= 3 and w not in skip]


def scope_rule(scope: str | None) -> str:
    """The rule line that tells the writer what the graph covers (``GenConfig.scopes``); empty without a scope."""
    if not scope:
        return ""
    opener = f"{scope[:1].upper()}{scope[1:]}, "
    return (f"Scope: the graph covers only what is {scope}. The question's one answer holds within that, so open "
            f"it with {opener!r}.\n")


def free_messages(ctx: RenderedContext, seed: str, hop_class: HopClass, max_nodes: int,
                  history: Sequence[QAAttempt], scope: str | None = None) -> list[dict[str, str]]:
    lo, hi = hop_class_bounds(hop_class, max_nodes)
    shots = FEW_SHOT_1_2 if hop_class == "1-2" else FEW_SHOT_3
    task = (
        f"Knowledge graph around {seed!r} (one relation per line: A - B: keywords; description):\n{ctx.text}\n\n"
        f"Task: choose a path of {lo} to {hi} entities that starts at {seed!r}, follows relations listed above, "
        f"and never visits an entity twice. Then write one question whose answer is the last entity of the path.\n"
        f"{RULES}\n{PIN_RULE}\n{scope_rule(scope)}List the pins you state as {{\"node\": <entity of the path>, \"value\": <the pin's "
        f"entity>}} (at most {MAX_PINS}; none when every relation of the path leads to one entity).\n\n{shots}\n\n"
        f"{_history_block(history)}\n"
        'Reply as JSON: {"path": [start, ..., answer], "question": "...", "answer": "<last entity of the path>", '
        '"pins": [{"node": "...", "value": "..."}]}'
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task.replace("\n\n\n", "\n\n")}]


def candidate_messages(cands: Sequence[CandidatePath], seed: str, hop_class: HopClass, max_description_chars: int,
                       history: Sequence[QAAttempt], kg: KnowledgeGraph | None = None,
                       book: ProfileBook | None = None, scope: str | None = None) -> list[dict[str, str]]:
    """The candidates-mode prompt. With the graph, candidates that are programs show their pins
    (``render_program_candidates``) and the rules say how to state them; ``scope``: what the graph covers
    (``scope_rule``)."""
    shots = FEW_SHOT_1_2 if hop_class == "1-2" else FEW_SHOT_3
    hidden = sorted({n for c in cands for n in c.nodes[1:]})
    pinned = kg is not None and any(c.program is not None and c.program.constraints for c in cands)
    shown = (render_program_candidates(kg, cands, book=book if book is not None else profile_book(kg),
                                       max_description_chars=max_description_chars)
             if kg is not None and any(c.program is not None for c in cands)
             else render_candidates(list(cands), max_description_chars=max_description_chars))
    task = (
        f"Candidate paths starting at {seed!r}; each hop shows its relation (A - B: keywords; description):\n"
        f"{shown}\n\n"
        "Task: pick the candidate path that makes the most interesting question, and write one question that "
        f"starts from {seed!r} and whose answer is the last entity of that path.\n{RULES}\n"
        + (f"{PIN_RULE}\n" if pinned else "")
        + scope_rule(scope)
        + 
        f"The question must contain the words {seed!r}. It must not contain any of: {', '.join(hidden)}.\n\n"
        f"{shots}\n\n"
        f"{_history_block(history)}\n"
        'Reply as JSON: {"path_id": "<one of the ids above>", "question": "..."}'
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task.replace("\n\n\n", "\n\n")}]


JUDGE_SYSTEM = "You review multi-hop quiz questions written from a knowledge graph path. You are strict but fair."


def judge_messages(question: str, path_lines: str, answer: str, start: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": (
            f"Path (one hop per line):\n{path_lines}\n\nQuestion: {question}\nIntended answer: {answer}\n\n"
            f"Is the question valid? It is valid only if all of these hold:\n"
            f"1. it names the start entity {start!r} and no other entity of the path (a pin's entity, off the "
            f"path, may be named: stating the pin singles out the node it pins);\n"
            f"2. it does not reveal the answer or any intermediate entity;\n"
            f"3. answering it needs every hop of the path;\n"
            f"4. it reads naturally;\n"
            f"5. it has exactly one answer, the intended one.\n"
            'Reply as JSON: {"valid": true or false, "reason": "one sentence; say what to fix when invalid"}'
        )},
    ]


def path_lines(kg: KnowledgeGraph, path: Sequence[str], max_chars: int = 200, *, program: QueryProgram | None = None,
               book: ProfileBook | None = None) -> str:
    """One line per hop (``A -> B: relation``); with the question's program, its hops as the program reads them and
    one ``pin`` line per fact that singles out a node (the question must state them)."""
    lines = []
    if program is not None:
        book = book if book is not None else profile_book(kg)
        edges = program_edges(kg, program, book)
    else:
        edges = path_edges(kg, path)
    for e in edges:
        s, rel, o = e.triple()
        lines.append(f"{s} -> {o}: {rel}"[: max_chars + len(s) + len(o)])
    if program is not None:
        for c, e in zip(program.constraints, constraint_edges(kg, program, book)):
            s, rel, o = e.triple()
            lines.append(f"pin on {program.nodes[c.node]}: {s} -> {o}: {rel}"[: max_chars + len(s) + len(o) + 40])
    return "\n".join(lines)


def prompt_sources() -> list[str]:
    """Texts a question must not copy (``text_gates.check_not_copied``): the generator prompt's instruction lines
    and example questions."""
    example_questions = re.findall(r'Question: "([^"]+)"', FEW_SHOT_1_2 + FEW_SHOT_3)
    lines = [ln.strip(" -") for ln in (SYSTEM + "\n" + RULES + "\n" + PIN_RULE).splitlines() if ln.strip(" -")]
    return [*lines, *example_questions]


def check_candidate(kg: KnowledgeGraph, path: Sequence[str], question: str, answer: str, hop_class: HopClass,
                    cfg: GenConfig, seed: str | None = None, program: QueryProgram | None = None) -> list[Verdict]:
    """The code checks and, unless turned off, the text gates of one candidate, in reporting order: path checks,
    then the text gates, then the naming checks (start named, nothing leaked, no shortcut). The first rejecting
    verdict is the reject reason, so a question that is not a question is reported as such, not as a leak."""
    verdicts = run_checks(kg, path, question, answer, hop_class, config=cfg.checks, seed=seed,
                          book=profile_book(kg, cfg), program=program)
    scope = cfg.scopes.get(kg.domain)
    if scope:  # with a scope every question says it (template_candidates)
        verdicts.append(check_scope_stated(question, scope))
    if cfg.text_gates is None:
        return verdicts
    try:
        edges = path_edges(kg, path)
    except (ValueError, KeyError):  # a broken path has no relations to compare with; the path checks say why
        edges = []
    from tasks.meaning.names import gate_names  # the path's names, display forms and class names: not markup

    gates = question_gates(question, config=cfg.text_gates, names=gate_names(kg, [*path, answer]),
                           sources=prompt_sources(), descriptions=[e.description for e in edges if e.description],
                           scope=scope)
    naming = {"start_named", "answer_hidden", "intermediates_hidden", "no_partial_leak", "no_shortcut"}
    return [v for v in verdicts if v.check not in naming] + gates + [v for v in verdicts if v.check in naming]


# -- the attempt loop -----------------------------------------------------------------------------------------------
@dataclass
class JobResult:
    """What one (seed, hop class, mode) job produced: every attempt, and the accepted question if any."""

    seed: Seed
    hop_class: HopClass
    mode: GenMode
    attempts: list[QAAttempt] = field(default_factory=list)
    qa: QA | None = None
    note: str = ""  # why the job could not start (e.g. no candidate path of that length)
    note_reason: str = ""  # the note's reason code (``tasks.qa.candidates.NO_PATH_REASONS``), counted in the yields


def _prepare(kg: KnowledgeGraph, seed: Seed, hop_class: HopClass, mode: GenMode, cfg: GenConfig,
             sampling_seed: int) -> tuple[RenderedContext, list[CandidatePath], tuple[str, str]]:
    """The job's rendered subgraph and, in candidates mode, its candidate paths (deterministic by seed); with the
    template writer, the candidates are programs sampled from the seed's whole neighbourhood, longest first. The
    third value is why no program stood (reason code, detail), for a template job that found none."""
    ctx = render_subgraph(kg, seed.node, depth=cfg.context_depth, token_budget=cfg.context_token_budget,
                          max_description_chars=cfg.max_description_chars)
    cands: list[CandidatePath] = []
    why: tuple[str, str] = ("", "")
    if cfg.writer == "template":
        rng = random.Random(f"{sampling_seed}:{kg.domain}:{seed.node}:{hop_class}")
        lo, hi = hop_class_bounds(hop_class, cfg.max_nodes)
        drawn = hop_nodes(hop_class, rng, cfg.max_nodes) if hop_class == "3+" else hi
        walk_seed = rng.randrange(2**31)
        book = profile_book(kg, cfg)
        # Longest first: the writer tries them in that order, and a shorter one of the class only when every longer
        # one failed its checks or could not be written.
        cands, why = _program_candidates(kg, seed, hop_class, range(drawn, lo - 1, -1), cfg, walk_seed, book,
                                         can_pin_with)
        # Then the bare paths the relation-chain checks vouch for (inside the rendered subgraph), as before programs:
        # a job whose programs all fail still has them to fall back on.
        paths = _bare_paths(kg, seed, ctx, range(hi, lo - 1, -1), cfg, walk_seed, book)
        cands += [c.model_copy(update={"id": f"P{len(cands) + i}"}) for i, c in enumerate(paths, start=1)]
    elif mode == "candidates" or cfg.template_fallback:
        rng = random.Random(f"{sampling_seed}:{kg.domain}:{seed.node}:{hop_class}")
        n_nodes = hop_nodes(hop_class, rng, cfg.max_nodes)
        lo, _ = hop_class_bounds(hop_class, cfg.max_nodes)
        walk_seed = rng.randrange(2**31)
        book = profile_book(kg, cfg)
        # The drawn length first; a seed with no path that long still gets a shorter one of its hop class.
        cands = _bare_paths(kg, seed, ctx, range(n_nodes, lo - 1, -1), cfg, walk_seed, book)
        if mode == "candidates":
            # Then programs from the whole neighbourhood, pins shown (``tasks.qa.llm_programs``): the model words
            # any pin, so every phrasable fact may pin. They follow the bare paths, which need no pin.
            progs, why = _program_candidates(kg, seed, hop_class, range(n_nodes, lo - 1, -1), cfg, walk_seed, book,
                                             None, first=len(cands) + 1, enough=cfg.candidates)
            cands += progs[:cfg.candidates]  # the longest first; at most as many as the bare paths, for the prompt
    return ctx, cands, why


#: A job's preparation (``prepare_job``): its rendered subgraph, its candidates, and why no program stood.
Prepared = tuple[RenderedContext, list[CandidatePath], tuple[str, str]]


def prepare_job(kg: KnowledgeGraph, seed: Seed, hop_class: HopClass, mode: GenMode, cfg: GenConfig,
                sampling_seed: int) -> Prepared:
    """A job's preparation (``_prepare``), pure and deterministic: a caller may run it ahead, elsewhere, and hand
    the result to ``run_job`` (``prepared``)."""
    return _prepare(kg, seed, hop_class, mode, cfg, sampling_seed)


def _program_candidates(kg: KnowledgeGraph, seed: Seed, hop_class: HopClass, lengths: Sequence[int], cfg: GenConfig,
                        walk_seed: int, book: ProfileBook, clause_ok: ClauseOk | None, *, first: int = 1,
                        enough: int | None = None) -> tuple[list[CandidatePath], tuple[str, str]]:
    """Programs of each of ``lengths`` (node counts, in that order) from the seed's whole neighbourhood
    (``sample_programs``), as candidates numbered from ``first``; and why none stood at the first length that had
    none (reason code, detail). ``enough``: the caller keeps only the first ``enough`` candidates, so the lengths
    after the one that reached them are not sampled (each length is sampled with the same ``walk_seed``, whatever
    came before it, so the first ``enough`` are the same; most of a candidates-mode job's preparation went into
    programs it then dropped). "Why none" then covers the lengths sampled: the template writer, which reads it,
    passes no ``enough``."""
    cands: list[CandidatePath] = []
    why: tuple[str, str] = ("", "")
    for n in lengths:
        if enough is not None and len(cands) >= enough:
            break
        found = sample_programs(kg, seed.node, n - 1, count=cfg.candidates, seed=walk_seed, book=book,
                                clause_ok=clause_ok, scoped=bool(cfg.scopes.get(kg.domain)),
                                whole=kg.domain not in cfg.sampled)
        cands += [CandidatePath(id=f"P{first + len(cands) + i}", nodes=list(p.nodes),
                                edges=program_edges(kg, p, book), program=p)
                  for i, p in enumerate(found.programs)]
        if not found.programs and not why[0]:
            code, detail = found.why_none()
            why = (f"program_{code}", f"no {hop_class}-hop program from {seed.node!r} stood: {detail}")
    return cands, why


def _bare_paths(kg: KnowledgeGraph, seed: Seed, ctx: RenderedContext, lengths: Sequence[int], cfg: GenConfig,
                walk_seed: int, book: ProfileBook) -> list[CandidatePath]:
    """The candidate paths (``sample_candidate_paths``, inside the rendered subgraph) of the first of ``lengths``
    (node counts) that has any whose start and answer are names, not codes (``RelationIndex.is_code``, as for
    programs: a question names its start, and a time-zone id is no answer a person gives), and none of whose parent
    steps skips a rank (``skipped_ranks``)."""
    index = relation_index(kg)
    for n in lengths:
        paths = [p for p in sample_candidate_paths(kg, seed.node, n, count=cfg.candidates, seed=walk_seed,
                                                   allowed_nodes=set(ctx.nodes), book=book)
                 if not (index.is_code(p.nodes[0]) or index.is_code(p.nodes[-1]))
                 and not any(skipped_ranks(index, e.relation_text(), e.forward, e.head, e.tail) for e in p.edges)]
        if paths:
            return paths
    return []


_LANES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


async def _prepared(kg: KnowledgeGraph, seed: Seed, hop_class: HopClass, mode: GenMode, cfg: GenConfig,
                    sampling_seed: int) -> tuple[RenderedContext, list[CandidatePath], tuple[str, str]]:
    """``_prepare`` on the event loop, one job at a time, with a look at the sockets between two jobs.

    Preparing (the rendered subgraph, the candidate walks) is pure Python, a few milliseconds a job, and a batch
    starts 64 or more jobs at once. On worker threads they took the GIL in turns while the loop waited for it, so
    the loop read no answer for ~0.2 s at every batch start (a run's first request went out 0.19 s after its
    first job began preparing); back to back on the loop they would block it as long. In one lane each job
    prepares in its own loop turn, so an answer waits at most one job's preparation: generation's endpoint
    saturation 0.84-0.85 -> 0.88-0.89 at 40 seeds and 0.92 at 75 in ``bench/bench_pipeline.py``."""
    loop = asyncio.get_running_loop()
    lane = _LANES.get(loop)
    if lane is None:
        lane = _LANES[loop] = asyncio.Lock()
    async with lane:
        prepared = _prepare(kg, seed, hop_class, mode, cfg, sampling_seed)
        await asyncio.sleep(0)  # the loop polls its sockets before the next job prepares
    return prepared


def hop_nodes(hop_class: HopClass, rng: random.Random, max_nodes: int) -> int:
    """How many path nodes a candidates-mode job asks for: 2 or 3 for 1-2 hop, 4..max for 3+."""
    lo, hi = hop_class_bounds(hop_class, max_nodes)
    return rng.randint(lo, hi)


async def run_job(
    gateway: LLMGateway,
    kg: KnowledgeGraph,
    seed: Seed,
    hop_class: HopClass,
    mode: GenMode,
    *,
    run_id: str,
    cfg: GenConfig,
    sampling_seed: int = 0,
    prepared: Prepared | None = None,
) -> JobResult:
    """Generate, check, judge and retry one job. Never raises for LLM problems: they become rejected attempts.
    ``prepared``: the job's ``prepare_job``, done ahead (otherwise it is done here)."""
    result = JobResult(seed=seed, hop_class=hop_class, mode=mode)
    if prepared is None:
        prepared = await _prepared(kg, seed, hop_class, mode, cfg, sampling_seed)
    ctx, cands, why_none = prepared
    if cfg.writer == "template" and not cands:
        result.note, result.note_reason = why_none[1], why_none[0]
        return result
    if mode == "candidates" and not cands:
        # Why not, for the hop class's shortest length (the longer ones were tried first): too shallow, every
        # path a shortcut, outside the rendered subgraph, ambiguous, a hop the sampler refuses.
        lo, _ = hop_class_bounds(hop_class, cfg.max_nodes)
        why = explain_no_candidates(kg, seed.node, lo, allowed_nodes=set(ctx.nodes), book=profile_book(kg, cfg))
        result.note, result.note_reason = why.note(hop_class), why.reason
        return result
    if cfg.writer == "template":
        await _template_attempts(gateway, kg, seed, hop_class, mode, cands, result, run_id=run_id, cfg=cfg,
                                 sampling_seed=sampling_seed, first=1, tries=cfg.max_attempts)
    else:
        for attempt in range(1, cfg.max_attempts + 1):
            a = await _attempt(gateway, kg, seed, hop_class, mode, ctx, cands, result.attempts, attempt,
                               run_id=run_id, cfg=cfg)
            result.attempts.append(a)
            if a.status == "accepted":
                break
        if cfg.template_fallback and cands and not any(a.status == "accepted" for a in result.attempts):
            await _template_attempts(gateway, kg, seed, hop_class, mode, cands, result, run_id=run_id, cfg=cfg,
                                     sampling_seed=sampling_seed, first=len(result.attempts) + 1, tries=1)
    accepted = next((a for a in result.attempts if a.status == "accepted"), None)
    if accepted is not None:
        result.qa = _qa_from(kg, seed, hop_class, accepted, run_id, profile_book(kg, cfg))
    return result


def _qa_from(kg: KnowledgeGraph, seed: Seed, hop_class: HopClass, a: QAAttempt, run_id: str,
             book: ProfileBook) -> QA:
    edges = program_edges(kg, a.program, book) if a.program is not None else path_edges(kg, a.path)
    return QA(
        qa_id=make_qa_id(kg.domain, kg.snapshot_id, a.question, a.answer, a.path),
        # The row's seed is the path's start (checked equal to the job's seed): splits link questions through it.
        domain=kg.domain, snapshot_id=kg.snapshot_id, seed=a.path[0], hop_class=hop_class,
        path=a.path, path_edges=edges, question=a.question, answer=a.answer, run_id=run_id,
        attempt_id=a.attempt_id, source_chunk_ids=path_source_chunks(edges), writer=a.writer, program=a.program,
    )  # fmt: skip


def profile_book(kg: KnowledgeGraph, cfg: GenConfig | None = None) -> ProfileBook:
    """The relation profiles a job reads: the user's entries, the lexicon, the graph's statistics, the profiler's
    answers."""
    if cfg is None:
        return book_for_graph(kg)
    return book_for_graph(kg, cfg.profiles, cfg.profiled)


def template_candidates(kg: KnowledgeGraph, cands: Sequence[CandidatePath], *, seed: int = 0,
                        book: ProfileBook | None = None,
                        scope: str | None = None) -> list[tuple[CandidatePath, str | None, str]]:
    """``(candidate, question or None, why not)`` for every candidate, the template writer's questions first and
    shortest first (fewer nested clauses read better), the unphrasable ones last. ``scope``: what the graph covers;
    every question opens with it: one whose answer rests on the graph being whole (``rests_on_whole_graph``) needs
    it, and one that does not still speaks the data's words ("the module of TeX", "the default engine of the
    A321"), which a reader takes in their world sense without it (graded world failures, grades-heldout14.md).
    Deterministic."""
    book = book if book is not None else profile_book(kg)
    out: list[tuple[CandidatePath, str | None, str]] = []
    for c in cands:
        try:
            if c.program is not None:
                q = write_program_question(c.program, [_type_noun(kg, n) for n in c.nodes], book=book,
                                           name_of=lambda n: written_name(kg, n), seed=seed)
                if scope:
                    q = scoped(q, scope)
                out.append((c, q, ""))
                continue
            start_noun, shown = _type_noun(kg, c.nodes[0]), question_name(kg, c.nodes[0])
            versus = versus_name(shown) and start_noun != "entity"
            q = write_question(c.nodes, c.edges, [_type_noun(kg, n) for n in c.nodes], seed=seed, book=book,
                               names=[f"{start_noun} {shown}" if versus else shown],
                               start_article=(versus or takes_article(c.nodes[0], _texts_around(kg, c.nodes[0]))
                                              or name_takes_article(shown, start_noun)
                                              or class_name_takes_the(kg, c.nodes[0], shown)))
            out.append((c, q, ""))
        except TemplateError as exc:
            out.append((c, None, str(exc)))
    # Programs: the most hops first (they were sampled for it), then the shortest wording. Bare paths: shortest first.
    return sorted(out, key=lambda t: (t[1] is None, -len(t[0].nodes) if t[0].program is not None else 0,
                                      len((t[1] or "").split()), int(t[0].id[1:]) if t[0].id[1:].isdigit() else 0,
                                      t[0].id))


def written_name(kg: KnowledgeGraph, name: str) -> str:
    """How a question writes a node's name: its display form, with "the" where the name takes it."""
    kind = _type_noun(kg, name)
    shown = date_in_words(in_running_text(question_name(kg, name), kind))
    if versus_name(shown) and kind != "entity":
        return f"the {kind} {shown}"  # "the football match Schalke 04 v Hamburger SV", not "Schalke 04 ..."
    # a descriptive name joined by "and" is quoted too, or its own "and" runs into the question's ("a characteristic
    # of Neurodevelopmental disorder and structural brain anomalies ... and is ...")
    if mention_kind(kind) or (kind != "entity" and (phrase_name(shown) or (coordinated_name(shown) and
                                                                           kind.islower()))):
        # a word mentioned, not used: 'the pronunciation of the word "wege"', 'the subset that the slot "member of"
        # is in'; the kind said before it is not said again in a tag ('the group "hotels" (group)')
        return f'the {kind} "{shown.removesuffix(f" ({kind})")}"'
    if coordinated_name(shown) or (name_kind(kind) and column_value(kg, name)):
        return f'"{shown}"'  # a name as a column's value is mentioned: 'what has "black bittern" as its common name'
    # a converter's tag said as the kind makes a description: "water faucet (vehicle part)", "the water faucet
    # vehicle part"
    tagged = bool(kind) and name.rstrip().endswith(f"({kind})") and shown.endswith(f" {kind}")
    if takes_article(name, _texts_around(kg, name)) or (name_takes_article(shown, kind) and not (
            shown.islower() and column_value(kg, name))) or (  # a column's value is said bare: "whose ... is atom"
            class_name_takes_the(kg, name, shown)) or tagged:  # "an enemy of the Empire", "the FLF"
        return f"the {shown}"
    return shown


def _texts_around(kg: KnowledgeGraph, name: str) -> list[str]:
    """The entity's description and those of its relations: how the graph's own text writes the name."""
    try:
        own = kg.entity(name).description or ""
    except KeyError:
        return []
    return [own, *(rel.description for _, rel in kg.neighbors(name)[:200] if rel.description)]


def _type_noun(kg: KnowledgeGraph, name: str) -> str:
    """The node's type noun, read from the graph (an `isa` / `instance of` edge, the importer's type column,
    LightRAG's entity type)."""
    return node_type_noun(kg, name)


def _entity_type(kg: KnowledgeGraph, name: str) -> str | None:
    try:
        return kg.entity(name).type
    except KeyError:
        return None


PARAPHRASE_SYSTEM = "You rewrite quiz questions in plain, natural English without changing what they ask."


def paraphrase_messages(question: str, start: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": PARAPHRASE_SYSTEM},
        {"role": "user", "content": (
            f"Rewrite this question so it reads naturally. Keep its meaning and its answer, keep the name {start!r} "
            f"exactly, name no other entity, and write one question ending in '?'.\nQuestion: {question}\n"
            'Reply as JSON: {"question": "..."}'
        )},
    ]  # fmt: skip


class ParaphraseOutput(BaseModel):
    question: str


async def _template_attempts(gateway: LLMGateway, kg: KnowledgeGraph, seed: Seed, hop_class: HopClass,
                             mode: GenMode, cands: Sequence[CandidatePath], result: JobResult, *, run_id: str,
                             cfg: GenConfig, sampling_seed: int, first: int, tries: int) -> None:
    """Template-writer attempts, numbered from ``first``: the candidates' template questions in
    ``template_candidates`` order, each checked and gated like an LLM question (the writer vouches for nothing by
    itself), then judged; at most ``tries`` attempts, stopping at the first accepted one. A job whose candidates
    cannot be phrased at all gets one ``template_unphrasable`` attempt."""
    ranked = template_candidates(kg, cands, seed=sampling_seed, book=profile_book(kg, cfg),
                                 scope=cfg.scopes.get(kg.domain))
    attempt = first
    for cand, question, why in ranked:
        if attempt >= first + tries:
            return
        base = dict(
            attempt_id=make_attempt_id(run_id, kg.domain, kg.snapshot_id, seed.node, hop_class, mode, attempt),
            run_id=run_id, domain=kg.domain, snapshot_id=kg.snapshot_id, seed=seed.node, hop_class=hop_class,
            mode=mode, attempt=attempt, candidate_id=cand.id, path=list(cand.nodes), answer=cand.nodes[-1],
            writer="template", program=cand.program,
        )  # fmt: skip
        attempt += 1
        if question is None:
            result.attempts.append(QAAttempt(**base, status="rejected", reject_reason="template_unphrasable",
                                             judge_reason=why))
            return  # the rest are unphrasable too (they sort last)
        verdicts = check_candidate(kg, cand.nodes, question, cand.nodes[-1], hop_class, cfg, seed.node, cand.program)
        writer: Writer = "template"
        if passed(verdicts) and cfg.paraphrase:
            res = await gateway.structured("generator", paraphrase_messages(question, cand.nodes[0]),
                                           ParaphraseOutput, name="qa_paraphrase", params=cfg.generator_params,
                                           max_reasks=0)  # fmt: skip
            if res.ok:
                alt = res.value.question.strip()
                alt_verdicts = check_candidate(kg, cand.nodes, alt, cand.nodes[-1], hop_class, cfg, seed.node,
                                               cand.program)
                if passed(alt_verdicts):  # a paraphrase that fails any check or gate is dropped, not repaired
                    question, verdicts, writer = alt, alt_verdicts, "template+paraphrase"
        slots = {k: v for k, v in base.items() if k not in ("path", "answer")}
        a = await _finish(gateway, kg, {**slots, "writer": writer}, list(cand.nodes), question, cand.nodes[-1],
                          verdicts, None, cfg)
        result.attempts.append(a)
        if a.status == "accepted":
            return


def _failure_kind(res: Any) -> str:
    """The failure kind of a generator reply that gave no usable answer. A reply with no text at all counts as lost
    to the endpoint (a re-run tries again), as it did before the kind was recorded."""
    if res.failure is None:
        return "validation"  # parsed, but named a path the job did not offer
    if not res.raw and res.failure.kind not in ENDPOINT_FAILURES:
        return "endpoint_unavailable"
    return res.failure.kind


async def _finish(gateway: LLMGateway, kg: KnowledgeGraph, base: dict[str, Any], path: list[str], question: str,
                  answer: str, verdicts: list[Verdict], raw: str | None, cfg: GenConfig) -> QAAttempt:
    """The checked candidate's outcome: rejected by a check or gate, by the meaning check (its verdict is stored
    with the others, so the retry feedback says what the verifier read), accepted without a judge, or judged."""
    common = dict(**base, path=path, question=question, answer=answer, verdicts=verdicts, raw_text=raw)
    if not passed(verdicts):
        return QAAttempt(**common, status="rejected", reject_reason=reject_reason(verdicts))
    if meaning_enabled(cfg.meaning_check, gateway):
        book = profile_book(kg, cfg)  # the facts read as the job's own profiles say, the user's corrections included
        program = base.get("program")
        meant = await check_meaning(gateway, kg, path, question, answer, max_facts=cfg.meaning_max_facts,
                                    params=cfg.meaning_params, state=lambda e: fact_sentence(e, book),
                                    extra=constraint_edges(kg, program, book) if program is not None else ())
        if meant.verdict is None:
            # Like the judge's: an endpoint failure (or no valid reply) is not a verdict on the question.
            what = "meaning check unavailable" if meant.failure_kind in ENDPOINT_FAILURES else "meaning check failed"
            return QAAttempt(**common, status="rejected", reject_reason="llm_error",
                             judge_reason=f"{what}: {meant.failure}", failure_kind=meant.failure_kind)
        common["verdicts"] = [*verdicts, meant.verdict]
        if not meant.verdict.ok:
            return QAAttempt(**common, status="rejected", reject_reason="not_answerable_from_facts")
    if not cfg.use_judge:
        return QAAttempt(**common, status="accepted")
    judged = await gateway.structured(
        "verifier", judge_messages(question, path_lines(kg, path, program=base.get("program"),
                                                      book=profile_book(kg, cfg)), answer, path[0]), JudgeOutput,
        name="qa_judgement", params=cfg.judge_params, max_reasks=1,
    )
    if not judged.ok:
        # "judge unavailable" (the endpoint failed) is not a verdict on the question: a re-run retries the job.
        # "judge failed" (the judge answered, but not validly) is.
        what = "judge unavailable" if judged.failure.kind in ENDPOINT_FAILURES else "judge failed"
        return QAAttempt(**common, status="rejected", reject_reason="llm_error",
                         judge_reason=f"{what}: {judged.failure}", failure_kind=judged.failure.kind)
    if not judged.value.valid:
        return QAAttempt(**common, status="rejected", reject_reason="judge_invalid",
                         judge_valid=False, judge_reason=judged.value.reason)
    return QAAttempt(**common, status="accepted", judge_valid=True, judge_reason=judged.value.reason)


async def _attempt(gateway: LLMGateway, kg: KnowledgeGraph, seed: Seed, hop_class: HopClass, mode: GenMode,
                   ctx: RenderedContext, cands: Sequence[CandidatePath], history: Sequence[QAAttempt],
                   attempt: int, *, run_id: str, cfg: GenConfig) -> QAAttempt:
    base = dict(
        attempt_id=make_attempt_id(run_id, kg.domain, kg.snapshot_id, seed.node, hop_class, mode, attempt),
        run_id=run_id, domain=kg.domain, snapshot_id=kg.snapshot_id, seed=seed.node, hop_class=hop_class,
        mode=mode, attempt=attempt,
    )
    candidate_id = None
    if mode == "free":
        res = await gateway.structured(
            "generator", free_messages(ctx, seed.node, hop_class, cfg.max_nodes, history, cfg.scopes.get(kg.domain)),
            FreeOutput,
            schema=free_schema(ctx.nodes, hop_class, cfg.max_nodes, seed.node if cfg.constrain_question else None),
            name="qa_generation",
            params=cfg.generator_params, max_reasks=0,
        )
        if not res.ok:
            return QAAttempt(**base, status="rejected", reject_reason="llm_error", raw_text=res.raw or None,
                             judge_reason=str(res.failure), failure_kind=_failure_kind(res))
        path, _unknown = resolve_path(kg, res.value.path)
        answer = kg.lookup(res.value.answer) or res.value.answer
        question = res.value.question.strip()
        program, refused = _free_program(kg, path, res.value.pins, cfg)
    else:
        by_id = {c.id: c for c in cands}
        res = await gateway.structured(
            "generator", candidate_messages(cands, seed.node, hop_class, cfg.max_description_chars, history, kg,
                                            profile_book(kg, cfg), cfg.scopes.get(kg.domain)),
            PickedOutput, schema=picked_schema(list(by_id), seed.node if cfg.constrain_question else None),
            name="qa_pick_path", params=cfg.generator_params,
            max_reasks=0,
        )
        if not res.ok or res.value.path_id not in by_id:
            return QAAttempt(**base, status="rejected", reject_reason="llm_error", raw_text=res.raw or None,
                             judge_reason=str(res.failure) if res.failure else "unknown path id",
                             failure_kind=_failure_kind(res))
        cand = by_id[res.value.path_id]
        candidate_id, path, answer, question = cand.id, list(cand.nodes), cand.nodes[-1], res.value.question.strip()
        program, refused = cand.program, None

    verdicts = check_candidate(kg, path, question, answer, hop_class, cfg, seed.node, program)
    if refused is not None:
        # The path the model chose, read as a program with its pins, does not single out its answer: said where the
        # relation-chain uniqueness would be, with the facts that would pin the node it failed at.
        failed = Verdict(check="answer_unique", ok=False, code=CHECK_CODES["answer_unique"],
                         reason=f"the path with its pins is no program with one answer: {refused.detail}.")
        verdicts = ([failed if v.check == "answer_unique" else v for v in verdicts]
                    if any(v.check == "answer_unique" for v in verdicts) else [*verdicts, failed])
    return await _finish(gateway, kg, {**base, "candidate_id": candidate_id, "program": program}, path, question,
                         answer, verdicts, res.raw, cfg)


def _free_program(kg: KnowledgeGraph, path: Sequence[str], pins: Sequence[FreePin], cfg: GenConfig
                  ) -> tuple[QueryProgram | None, PinRefusal | None]:
    """A free-mode answer's program (``program_for_path``), or why it has none. A path of unknown or unconnected
    nodes has none and no refusal: the path checks say what is wrong with it."""
    if len(path) < 2 or any(n not in kg for n in path) or any(not kg.has_edge(a, b) for a, b in zip(path, path[1:])):
        return None, None
    read = [Pin(kg.lookup(p.node) or p.node, kg.lookup(p.value) or p.value) for p in pins]
    built = program_for_path(kg, path, read, book=profile_book(kg, cfg))
    if isinstance(built, PinRefusal):
        return None, built
    return built, None


def assign_hop_classes(seeds: Sequence[Seed], hop_mix: dict[str, float]) -> list[HopClass]:
    """Give each seed (in sample order) a hop class so the counts follow ``hop_mix`` (largest remainder)."""
    classes = [c for c in ("1-2", "3+") if hop_mix.get(c, 0) > 0]
    if not classes:
        raise ValueError(f"hop_mix needs a positive weight for '1-2' or '3+', got {hop_mix}")
    total = sum(hop_mix[c] for c in classes)
    out: list[HopClass] = []
    given = {c: 0 for c in classes}
    for i in range(len(seeds)):
        # the class furthest below its share so far gets the next seed: a stable interleaving
        c = max(classes, key=lambda c: (hop_mix[c] / total) * (i + 1) - given[c])
        given[c] += 1
        out.append(c)  # type: ignore[arg-type]
    return out
