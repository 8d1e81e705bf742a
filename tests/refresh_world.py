"""A small corpus whose graph the fake extractor can build, and the fake's scripts for a whole refresh.

The corpus describes a ring of invented places with chords, one sentence per link ("Aldermoor borders
Brackenfell."), so LightRAG's graph has balls of 20+ nodes at depth 3 and multi-hop questions exist. The fake
extractor answers LightRAG's extraction prompt with one entity row per known name and one relation row per pair
named in the same sentence, that sentence its description (``store_profiles`` stores the user's profiles of its
verbs); the generator picks the first candidate path; the judge accepts; the solver answers
a question right without tools when its answer's name is short (so difficulty labels differ between questions).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

TUPLE = "<|#|>"
COMPLETE = "<|COMPLETE|>"
NAMES = [
    "Aldermoor", "Brackenfell", "Cindervale", "Dunmarrow", "Elderholt", "Fernhallow", "Glimmerby", "Hollowmere",
    "Ironwick", "Juniperra", "Kestrelburg", "Larkspire", "Mossgrove", "Nettlecombe", "Oakshade", "Pebblesby",
    "Quillhaven", "Ravenmoor", "Saltmarsh", "Thornbury", "Umberfield", "Vinecrest", "Willowbrook", "Yarrowdale",
]
NEW_NAMES = ["Zephyrton", "Ashcombe", "Briarwood"]
VERBS = ["trades with", "borders", "sends grain to", "shares a river with"]
_INPUT = re.compile(r"---Input Text---\n```\n(.*?)\n```", re.S)
_KNOWN = NAMES + NEW_NAMES


def sentences(names: list[str], links: list[tuple[int, int]]) -> list[str]:
    """One sentence a link. A ring link's verb and a chord's differ at every place (ring: odd index, chord: even),
    so "the place that Aldermoor borders" names one place: the relation chain of a path singles out its nodes."""
    n = len(names)
    return [f"{names[a]} {VERBS[(a + b + ((b - a) % n == 5)) % len(VERBS)]} {names[b]}." for a, b in links]


def base_links() -> list[tuple[int, int]]:
    n = len(NAMES)
    return [(i, (i + 1) % n) for i in range(n)] + [(i, (i + 5) % n) for i in range(0, n, 2)]


def extra_sentences() -> list[str]:
    """The extra document: three new places linked into the ring."""
    return [f"{NEW_NAMES[0]} trades with {NAMES[0]}.", f"{NEW_NAMES[1]} borders {NEW_NAMES[0]}.",
            f"{NEW_NAMES[2]} sends grain to {NEW_NAMES[1]}.", f"{NEW_NAMES[2]} shares a river with {NAMES[7]}."]


def links_in(text: str) -> list[tuple[str, str, str]]:
    """The links the fake extractor reports for ``text``: (name, name, description) for each pair named in the
    same sentence, the names in ``_KNOWN`` order, the sentence itself as the description (LightRAG's relations
    carry no label: the words between the two names, "borders", are what the relation is profiled and phrased
    by)."""
    out = []
    for sentence in re.split(r"(?<=\.)\s+", text):
        found = [n for n in _KNOWN if re.search(rf"\b{n}\b", sentence)]
        out += [(a, b, sentence.strip()) for a, b in zip(found, found[1:])]
    return out


def write_corpus(folder: Path, *, extra: bool = False) -> Path:
    """``folder/cs.jsonl``: four documents of the ring; with ``extra``, one more document that links three new
    places into it (an incremental refresh adds exactly that document)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = sentences(NAMES, base_links())
    docs = [" ".join(lines[i::4]) for i in range(4)]
    if extra:
        docs.append(" ".join(extra_sentences()))
    path = folder / "cs.jsonl"
    path.write_text("".join(json.dumps({"context": d}) + "\n" for d in docs), encoding="utf-8")
    return path


def extraction_reply(body: dict[str, Any]) -> str:
    prompt = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    m = _INPUT.search(prompt)
    if m is None:
        return COMPLETE if "Based on the last extraction task" in prompt else "A short summary."
    rows: list[str] = []
    seen: set[str] = set()
    for sentence in re.split(r"(?<=\.)\s+", m.group(1)):
        for n in [n for n in _KNOWN if re.search(rf"\b{n}\b", sentence)]:
            if n not in seen:
                seen.add(n)
                rows.append(f"entity{TUPLE}{n}{TUPLE}location{TUPLE}{n} is a place named in the text.")
        for a, b, description in links_in(sentence):
            rows.append(f"relation{TUPLE}{a}{TUPLE}{b}{TUPLE}trade, neighbours{TUPLE}{description}")
    return "\n".join([*rows, COMPLETE])


def world_graph():
    """Every place and link the corpus, its extra document included, names, as the fake extractor reports them."""
    from schemas.graph import Relation
    from tasks.graph.kg import KnowledgeGraph

    text = " ".join([*sentences(NAMES, base_links()), *extra_sentences()])
    rels = [Relation(domain="cs", source=a, target=b, relation="", keywords=["trade", "neighbours"],
                     description=description) for a, b, description in links_in(text)]
    return KnowledgeGraph.from_records("cs", [], rels, add_missing_entities=True)


def store_profiles(warehouse_path) -> None:
    """The user's relation profiles, as `hopforge graph profiles import` stores them: each link verb of this
    invented world names one place each way, so every hop of the ring can be asked (the shipped lexicon would
    call "borders" many both ways, and know nothing of the others' counts)."""
    from testing.permissive_profiles import store_one_each_way
    from warehouse.db import Warehouse

    with Warehouse(warehouse_path) as wh:
        store_one_each_way(wh, [world_graph()])


def _prompt(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in body["messages"])


def make_pick_reply(answers: dict[str, str]):
    """The generator: the first candidate path ("P1: A -> B -> C" lines of the prompt), with a question naming only
    its start; records question -> answer in ``answers`` so the solver script can know it."""

    def reply(body: dict[str, Any]) -> dict[str, str]:
        prompt = _prompt(body)
        paths = {m.group(1): m.group(2).split(" -> ") for m in re.finditer(r"^(P\d+): (.+)$", prompt, re.M)}
        pid = sorted(paths)[0]
        seed = re.search(r"Candidate paths starting at (['\"])(.+?)\1;", prompt).group(2)
        question = f"Starting from {seed}, which place does this chain of links lead to?"
        answers[question] = paths[pid][-1].strip()
        return {"path_id": pid, "question": question}

    return reply


def is_no_tools(body: dict[str, Any]) -> bool:
    return body["messages"][0].get("content", "").startswith("Answer the question from what you know")


def install(fake, known: frozenset[str] = frozenset(NAMES[:8])) -> dict[str, str]:
    """Script the fake for a refresh. The closed-book solver answers right when the question starts from a place
    in ``known`` (so those questions are labelled trivial), wrong otherwise. Returns question -> answer."""
    answers: dict[str, str] = {}
    fake.add(schema_name="qa_pick_path", reply=make_pick_reply(answers))
    fake.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    fake.add(predicate=lambda b: "---Input Text---" in json.dumps(b["messages"]), reply=extraction_reply)

    def solver(body: dict[str, Any]) -> str:
        question = body["messages"][-1]["content"]
        seed = re.match(r"Starting from (.+?), which", question)
        right = seed is not None and seed.group(1) in known
        return f"<answer>{answers.get(question, 'Nowhere') if right else 'Nowhere'}</answer>"

    fake.add(predicate=is_no_tools, reply=solver)
    return answers


def roles(base_url: str) -> dict[str, dict[str, Any]]:
    return {r: {"base_url": base_url, "model": "fake-model", "max_retries": 0, "timeout_s": 10}
            for r in ("extractor", "generator", "verifier", "teacher", "judge", "policy")}
