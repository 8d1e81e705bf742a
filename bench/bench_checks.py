"""Benchmark: code checks and de-duplication throughput on synthetic candidates (no LLM).

Candidates come from the five demo reference graphs (``flows/demo/graphs``): for every seed-eligible node,
code-sampled paths of 2-4 nodes (``tasks.qa.candidates``) get a templated question of one of these kinds:

- ``good``: names the start node, describes each hop by its relation keywords;
- ``leak``: also names an intermediate node or the answer;
- ``broken``: a path with one node swapped for a random non-adjacent node;
- ``paraphrase`` / ``copy``: a near-copy (one word changed) or an exact copy (case / punctuation changed) of
  an earlier good question, for dedup to find.

The set is repeated, each later round's questions prefixed with random words (``--target`` candidates in all). It times ``run_checks`` over every
candidate (candidates per second, and the share each reject code took) and ``dedup_questions`` over the
candidates that passed (items per second, duplicates and near-duplicates found).

    python bench/bench_checks.py               # about 20k candidates
    python bench/bench_checks.py --target 5000
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # runnable as a plain script from any directory
    sys.path.insert(0, str(ROOT))

from schemas.qa import QA, make_qa_id  # noqa: E402
from tasks.qa.candidates import sample_candidate_paths  # noqa: E402
from tasks.qa.context import path_edges  # noqa: E402
from tasks.qa.dedup import dedup_questions  # noqa: E402
from tasks.graph.importers import read_triples  # noqa: E402
from tasks.graph.kg import KnowledgeGraph  # noqa: E402
from tasks.qa.checks import passed, reject_reason, run_checks  # noqa: E402
from tasks.qa.generate import prompt_sources  # noqa: E402
from tasks.qa.text_gates import question_gates  # noqa: E402
from tasks.qa.seeds import eligible_seeds  # noqa: E402

GRAPHS = ROOT / "flows" / "demo" / "graphs"


def describe(kg: KnowledgeGraph, path: list[str]) -> str:
    steps = []
    for e in path_edges(kg, path):
        words = e.relation or (e.keywords[0] if e.keywords else "is linked to")
        steps.append(words)
    return f"Starting from {path[0]}, follow '" + "', then '".join(steps) + "': which entity do you reach?"


def synthesize(kg: KnowledgeGraph, rng: random.Random) -> list[tuple[str, list[str], str, str, str]]:
    """(domain, path, question, answer, kind) tuples for one graph."""
    out: list[tuple[str, list[str], str, str, str]] = []
    nodes = kg.nodes()
    goods: list[tuple[list[str], str]] = []
    for seed, _ in eligible_seeds(kg):
        for n_nodes in (2, 3, 4):
            for cand in sample_candidate_paths(kg, seed, n_nodes, count=3, seed=rng.randrange(1 << 30)):
                path = list(cand.nodes)
                roll = rng.random()
                if roll < 0.55:
                    q = describe(kg, path)
                    goods.append((path, q))
                    out.append((kg.domain, path, q, path[-1], "good"))
                elif roll < 0.75:
                    leaked = rng.choice(path[1:])
                    out.append((kg.domain, path, describe(kg, path) + f" (hint: {leaked})", path[-1], "leak"))
                elif roll < 0.85:
                    bad = list(path)
                    bad[rng.randrange(1, len(bad))] = rng.choice(nodes)
                    out.append((kg.domain, bad, describe(kg, path), bad[-1], "broken"))
                elif goods:
                    p, q = rng.choice(goods)
                    if roll < 0.93:
                        q2 = q.replace("which entity", "what entity", 1)
                        out.append((kg.domain, p, q2, p[-1], "paraphrase"))
                    else:
                        out.append((kg.domain, p, q.upper().replace("?", " ?"), p[-1], "copy"))
    return out


def _noise(rng: random.Random) -> str:
    return " ".join("".join(rng.choice("bcdfghklmnprstvz") + rng.choice("aeiou") for _ in range(3)) for _ in range(5))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", type=int, default=20_000, help="about how many candidates to check")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    rng = random.Random(args.seed)
    graphs = {p.stem: read_triples(p, p.stem).to_graph() for p in sorted(GRAPHS.glob("*.jsonl"))}
    t0 = time.perf_counter()
    base = [row for kg in graphs.values() for row in synthesize(kg, rng)]
    synth_s = time.perf_counter() - t0
    reps = max(1, args.target // max(1, len(base)))
    # Later rounds prefix each question with a few random words, so a repeat is a different question for dedup
    # (about 0.5 n-gram Jaccard with its original) rather than a near-copy of it.
    rows = [(d, p, q if r == 0 else f"In case {r}, {_noise(rng)}: {q}", a, k) for r in range(reps)
            for (d, p, q, a, k) in base]  # fmt: skip

    t0 = time.perf_counter()
    results = []
    for domain, path, q, a, _ in rows:
        hop_class = "1-2" if len(path) <= 3 else "3+"
        results.append(run_checks(graphs[domain], path, q, a, hop_class))
    check_s = time.perf_counter() - t0
    reasons = Counter(reject_reason(v) or "passed" for v in results)

    # The text gates on the same candidates, as the generation loop runs them (names blanked, copy sources given).
    sources = prompt_sources()
    question_gates("Warm-up: which detector loads first?")  # the language model loads once per process
    t0 = time.perf_counter()
    gate_codes: Counter = Counter()
    for domain, path, q, a, _ in rows:
        gates = question_gates(q, names=path, sources=sources)
        gate_codes[next((v.code for v in gates if not v.ok), "passed")] += 1
    gates_s = time.perf_counter() - t0

    accepted: list[QA] = []
    for (domain, path, q, a, _), verdicts in zip(rows, results):
        if passed(verdicts):
            kg = graphs[domain]
            accepted.append(QA(
                qa_id=make_qa_id(domain, None, q, a, path), domain=domain, seed=path[0],
                hop_class="1-2" if len(path) <= 3 else "3+", path=path, path_edges=path_edges(kg, path),
                question=q, answer=a,
            ))  # fmt: skip
    unique = list({x.qa_id: x for x in accepted}.values())
    t0 = time.perf_counter()
    dd = dedup_questions(unique)
    dedup_s = time.perf_counter() - t0
    dd_reasons = Counter(r.reason for r in dd.rejects)

    out = {
        "candidates": len(rows),
        "synthesis_s": round(synth_s, 2),
        "checks_s": round(check_s, 2),
        "checks_per_s": round(len(rows) / check_s),
        "outcomes": dict(sorted(reasons.items())),
        "gates_s": round(gates_s, 2),
        "gates_per_s": round(len(rows) / gates_s),
        "checks_and_gates_per_s": round(len(rows) / (check_s + gates_s)),
        "gate_outcomes": dict(sorted(gate_codes.items())),
        "dedup_items": len(unique),
        "dedup_s": round(dedup_s, 2),
        "dedup_per_s": round(len(unique) / dedup_s) if dedup_s else None,
        "dedup_kept": len(dd.kept),
        "dedup_rejects": dict(sorted(dd_reasons.items())),
        "kinds": dict(sorted(Counter(k for *_, k in rows).items())),
    }
    print(
        f"checks: {out['candidates']} candidates in {out['checks_s']} s ({out['checks_per_s']:,}/s); text gates "
        f"{out['gates_per_s']:,}/s; checks and gates together {out['checks_and_gates_per_s']:,}/s; "
        f"dedup: {out['dedup_items']} questions in {out['dedup_s']} s ({out['dedup_per_s']:,}/s), kept "
        f"{out['dedup_kept']}, rejects {out['dedup_rejects']}"
    )
    print(json.dumps(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
