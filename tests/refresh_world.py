"""A small corpus whose graph the fake extractor can build, and the fake's scripts for a whole refresh.

The corpus describes a ring of invented places with chords, one sentence per link ("Aldermoor trades with
Brackenfell."), so LightRAG's graph has balls of 20+ nodes at depth 3 and multi-hop questions exist. The fake
extractor answers LightRAG's extraction prompt with one entity row per known name and one relation row per pair
named in the same sentence; the generator picks the first candidate path; the judge accepts; the solver answers
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
    return [f"{names[a]} {VERBS[(a + b) % len(VERBS)]} {names[b]}." for a, b in links]


def base_links() -> list[tuple[int, int]]:
    n = len(NAMES)
    return [(i, (i + 1) % n) for i in range(n)] + [(i, (i + 5) % n) for i in range(0, n, 2)]


def write_corpus(folder: Path, *, extra: bool = False) -> Path:
    """``folder/cs.jsonl``: four documents of the ring; with ``extra``, one more document that links three new
    places into it (an incremental refresh adds exactly that document)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = sentences(NAMES, base_links())
    docs = [" ".join(lines[i::4]) for i in range(4)]
    if extra:
        docs.append(" ".join([f"{NEW_NAMES[0]} trades with {NAMES[0]}.", f"{NEW_NAMES[1]} borders {NEW_NAMES[0]}.",
                              f"{NEW_NAMES[2]} sends grain to {NEW_NAMES[1]}.", f"{NEW_NAMES[2]} borders {NAMES[7]}."]))
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
        found = [n for n in _KNOWN if re.search(rf"\b{n}\b", sentence)]
        for n in found:
            if n not in seen:
                seen.add(n)
                rows.append(f"entity{TUPLE}{n}{TUPLE}location{TUPLE}{n} is a place named in the text.")
        for a, b in zip(found, found[1:]):
            rows.append(f"relation{TUPLE}{a}{TUPLE}{b}{TUPLE}{KEYWORDS}{TUPLE}{link_description(a, b)}")
    return "\n".join([*rows, COMPLETE])


KEYWORDS = "trade, neighbours"


def link_description(a: str, b: str) -> str:
    """A relation's description: LightRAG's relations carry no label, so the words between the two names
    ("is linked to") are what its profile is keyed and phrased by."""
    return f"{a} is linked to {b}."


def world_graph():
    """Every place and link the corpus (with its extra document) can name, as the fake extractor reports them."""
    from schemas.graph import Relation
    from tasks.graph.kg import KnowledgeGraph

    pairs = [(NAMES[a], NAMES[b]) for a, b in base_links()]
    pairs += [(NEW_NAMES[0], NAMES[0]), (NEW_NAMES[1], NEW_NAMES[0]), (NEW_NAMES[2], NEW_NAMES[1]),
              (NEW_NAMES[2], NAMES[7])]
    rels = []
    for x, y in pairs:
        a, b = sorted((x, y), key=_KNOWN.index)  # the order extraction_reply names them in
        rels.append(Relation(domain="cs", source=a, target=b, relation="", keywords=KEYWORDS.split(", "),
                             description=link_description(a, b)))
    return KnowledgeGraph.from_records("cs", [], rels, add_missing_entities=True)


def store_profiles(settings) -> None:
    """The user's relation profiles (as `hopforge graph profiles import` stores them): a link between two places
    names one place each way, so every hop of the ring can be asked. Without them nothing says how many places one
    is linked to, and no seed could start a path."""
    from tests.meaning_helpers import store_one_each_way
    from warehouse.db import Warehouse

    with Warehouse(settings.warehouse_path) as wh:
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
