"""Gold paths, the LLM half: the verifier judges several candidate start->answer paths per call.

The bounded search is ``tasks.qa.gold_paths``; this module asks the ``verifier`` role which of those paths really
answer the question (the Explore-on-Graph paper, appendix O: BFS then an LLM check), and reports per question how
many verified alternatives exist and whether the generator's own path was confirmed.
"""

from __future__ import annotations

import asyncio

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from gateway.client import LLMGateway
from schemas.qa import QA, GoldPath
from tasks.qa.gold_paths import GoldPathReport, gold_path_records, gold_path_report
from tasks.graph.kg import KnowledgeGraph


class PathVerdictItem(BaseModel):
    path_id: str
    valid: bool
    reason: str


class PathVerdicts(BaseModel):
    verdicts: list[PathVerdictItem]


def verify_messages(qa: QA, paths: Sequence[tuple[str, GoldPath]]) -> list[dict[str, str]]:
    """The verifier's prompt for one question's candidate paths. A question written from a program with pins
    states facts that single out a node of its chain; they are listed so a path through another node that the
    chain alone also reaches is judged against them."""
    blocks = []
    for pid, gp in paths:
        lines = "\n".join(f"    {s} -> {o}: {r}" for s, r, o in gp.triples)
        blocks.append(f"{pid}: {' -> '.join(gp.path)}\n{lines}")
    program = qa.program
    pins = ""
    if program is not None and program.nodes and program.constraints:
        pins = ("The question also states these facts, which single out a node of its chain (subject -> object: "
                "relation):\n" + "\n".join(f"    {s} -> {o}: {r}" for s, r, o in program.facts()[program.hops:])
                + "\nA path whose node there lacks its fact does not answer the question as asked.\n\n")
    return [
        {"role": "system", "content": "You check whether a chain of knowledge-graph facts answers a question."},
        {"role": "user", "content": (
            f"Question: {qa.question}\nAnswer: {qa.answer}\n\nCandidate paths from {qa.path[0]!r} to the answer "
            f"(each hop: subject -> object: relation):\n" + "\n".join(blocks) + "\n\n" + pins +
            "For each path, decide whether following its facts in order leads from the question's start to the "
            "answer in the way the question asks (every hop supports the reasoning; a path through unrelated "
            "facts is not valid). Reply as JSON: "
            '{"verdicts": [{"path_id": "G1", "valid": true or false, "reason": "one short sentence"}, ...]} '
            "with one verdict per path."
        )},
    ]


def verdicts_schema(ids: Sequence[str]) -> dict:
    return {
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "minItems": len(ids),
                "maxItems": len(ids),
                "items": {
                    "type": "object",
                    "properties": {"path_id": {"type": "string", "enum": list(ids)}, "valid": {"type": "boolean"},
                                   "reason": {"type": "string"}},
                    "required": ["path_id", "valid", "reason"],
                },
            }
        },
        "required": ["verdicts"],
    }


@dataclass
class GoldResult:
    qa_id: str
    paths: list[GoldPath]
    search: GoldPathReport
    verified: int  # paths judged valid
    generator_confirmed: bool | None  # None when the verifier gave no verdict on it
    llm_failures: int


async def verify_question(
    gateway: LLMGateway,
    kg: KnowledgeGraph,
    qa: QA,
    *,
    run_id: str,
    max_hops: int | None = None,
    max_paths: int = 20,
    time_budget_s: float = 2.0,
    paths_per_call: int = 5,
    params: dict | None = None,
) -> GoldResult:
    """Search the question's candidate gold paths and have the verifier judge them, ``paths_per_call`` at a time.

    A path the verifier gave no verdict on (its call failed) stays ``unverified`` with the reason.
    """
    # The bounded search (up to ``time_budget_s``) on a worker thread: the event loop meanwhile reads the other
    # questions' verdicts.
    search, report = await asyncio.to_thread(gold_path_report, kg, qa, max_hops=max_hops, max_paths=max_paths,
                                             time_budget_s=time_budget_s)
    rows = gold_path_records(qa, search, kg=kg, run_id=run_id)
    failures = 0
    groups = [rows[start : start + paths_per_call] for start in range(0, len(rows), paths_per_call)]
    # The groups are independent calls: all in flight at once (the gateway's limiter paces them), one round trip
    # per question instead of one per group.
    answers = await asyncio.gather(*(gateway.structured(
        "verifier", verify_messages(qa, [(f"G{r.rank + 1}", r) for r in group]), PathVerdicts,
        schema=verdicts_schema([f"G{r.rank + 1}" for r in group]), name="gold_path_verdicts",
        params=params or {"max_tokens": 120 * len(group), "temperature": 0.0}, max_reasks=1,
    ) for group in groups))  # fmt: skip
    for group, res in zip(groups, answers):
        ids = [f"G{r.rank + 1}" for r in group]
        if not res.ok:
            failures += 1
            for r in group:
                r.reason = f"no verdict: {res.failure}"[:300]
            continue
        by_id = {v.path_id: v for v in res.value.verdicts}
        for pid, r in zip(ids, group):
            v = by_id.get(pid)
            if v is None:
                r.reason = "the verifier gave no verdict for this path"
            else:
                r.verdict = "valid" if v.valid else "invalid"
                r.reason = v.reason
    own = next((r for r in rows if r.is_generator_path), None)
    confirmed = None if own is None or own.verdict == "unverified" else own.verdict == "valid"
    return GoldResult(qa_id=qa.qa_id, paths=rows, search=report, verified=sum(r.verdict == "valid" for r in rows),
                      generator_confirmed=confirmed, llm_failures=failures)
