"""The passages that keep IKG variants "readable in text", printed for a person to grade.

An IKG variant hides facts of its question from the graph and is kept "by text" when, for every hidden fact, the
text search's top results hold a passage that states it by the project's rule (``tasks.env.ikg.fact_found``, through
``states_fact``: a sentence names both ends whole and links them). Whether that passage *states* the fact is what a
reader checks, to measure the rule: the grades are in docs/programs/ikg-passages.md. This script
builds the variants the demo's export would keep, over the demo's reference graphs and corpus with the project's
hashing embedder (no model, no network), and writes one row per (variant, hidden fact) kept by text: the fact and
the passage window the text search shows for it (``passage_window``), as the agent would read it.

Questions are programs sampled from each graph (one and two steps, pins included, as ``qa generate``'s template
path samples them) and the demo's walked questions (``bench.bench_ikg_demo.demo_like_questions``). Deterministic.

    python bench/ikg_passages.py --out docs/programs/ikg-passages.md [--per-domain 12]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_ikg_demo import demo_like_questions  # noqa: E402
from schemas.qa import QA, make_qa_id  # noqa: E402
from tasks.corpus.ingest import ingest_text_folders  # noqa: E402
from tasks.env.ikg import build_variants  # noqa: E402
from tasks.env.index import HashingEmbedder  # noqa: E402
from tasks.env.text_search import TextIndex, chunks_from_ingest, passage_window  # noqa: E402
from tasks.graph.importers import read_triples  # noqa: E402
from tasks.meaning.profiles import book_for_graph  # noqa: E402
from tasks.qa.program_writer import can_pin_with  # noqa: E402
from tasks.qa.programs import program_edges, sample_programs  # noqa: E402

DEMO = ROOT / "flows" / "demo"
LEVELS = (0.2, 0.4)


def program_questions(graph, n: int) -> list[QA]:
    """Up to ``n`` questions from programs of one and two steps, starts in name order, one program a start."""
    book = book_for_graph(graph)
    out: list[QA] = []
    for start in sorted(graph.nodes()):
        if len(out) >= n:
            break
        for hops in (2, 1):
            found = sample_programs(graph, start, hops, count=1, book=book, max_walks=10, clause_ok=can_pin_with)
            if not found.programs:
                continue
            p = found.programs[0]
            question = f"(program from {start}, {hops} step(s))"
            out.append(QA(qa_id=make_qa_id(graph.domain, graph.snapshot_id, question, p.answer, p.nodes),
                          domain=graph.domain, snapshot_id=graph.snapshot_id, seed=start,
                          hop_class="1-2", path=list(p.nodes), path_edges=program_edges(graph, p, book),
                          question=question, answer=p.answer, program=p))
            break
    return out


def rows(per_domain: int) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for corpus in sorted(p for p in (DEMO / "corpus").iterdir() if p.is_dir()):
        domain = corpus.name
        graph = read_triples(DEMO / "graphs" / f"{domain}.jsonl", domain).to_graph()
        chunks = chunks_from_ingest(ingest_text_folders(corpus), domain)
        text = TextIndex(chunks, HashingEmbedder(), name=domain)
        by_id = {c.chunk_id: c for c in chunks}
        questions = program_questions(graph, per_domain) + demo_like_questions(graph, per_domain)
        build = build_variants(graph, sorted(questions, key=lambda q: q.qa_id), text, levels=LEVELS)
        for v in build.variants:
            if v.answerable_by != "text":
                continue
            for fact in v.view.facts:
                chunk = by_id[v.evidence[fact.query()]]
                out.append({"view": v.view.view_id.split("@")[1], "domain": domain,
                            "fact": " | ".join(fact.triple), "chunk": chunk.chunk_id,
                            "passage": " ".join(passage_window(fact.query(), chunk.text).split())})
    return out


def markdown(found: list[dict[str, str]]) -> str:
    lines = ["| # | domain | level | hidden fact (subject \\| relation \\| object) | passage shown | states it |",
             "|---|---|---|---|---|---|"]
    seen: set[tuple[str, str]] = set()
    n = 0
    for r in found:
        key = (r["fact"], r["chunk"])
        if key in seen:  # the same fact read in the same passage at another level or in another question
            continue
        seen.add(key)
        n += 1
        passage = r["passage"].replace("|", "\\|")
        fact = r["fact"].replace("|", "\\|")
        lines.append(f"| {n} | {r['domain']} | {r['view']} | {fact} | {passage} | |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--per-domain", type=int, default=12, help="questions of each kind per demo domain")
    args = ap.parse_args()
    found = rows(args.per_domain)
    args.out.write_text(markdown(found), encoding="utf-8")
    print(f"{len(found)} (variant, hidden fact) rows kept by text; table in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
