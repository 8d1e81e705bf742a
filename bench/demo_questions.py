"""The demo's accepted questions, each with its program, as ``hopforge demo`` asks them on its five reference graphs
(``tests/test_demo_programs.py`` runs the same: the template writer, 10 seeds a domain, 80% of the jobs 1-2 hops,
the demo's scopes, no judge, no meaning check), written as a Markdown page a reader can grade.

    python bench/demo_questions.py --out docs/programs/demo-questions.md
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def demo_questions() -> list[dict]:
    """Every accepted question of the demo's reference graphs, by domain then question."""
    from flows.export import export_datasets
    from flows.factory import DEMO_DIR, DEMO_DOMAINS, DEMO_PLAN
    from flows.graphs import import_graphs
    from flows.params import Demo
    from flows.qa import generate_qa
    from schemas.config import load_settings
    from testing.fake import FakeOpenAI
    import polars as pl

    with FakeOpenAI() as fake, tempfile.TemporaryDirectory() as tmp:
        role = {"base_url": fake.base_url, "model": "fake-model", "max_retries": 0, "timeout_s": 10}
        settings = DEMO_PLAN.with_scopes(load_settings(data_dir=tmp, roles={"generator": role, "verifier": role}))
        import_graphs(files={d: str(DEMO_DIR / "graphs" / f"{d}.jsonl") for d in DEMO_DOMAINS}, settings=settings)
        demo = Demo().factory_kwargs()  # the seeds and the hop mix `hopforge demo` asks for
        generate_qa(domains=list(DEMO_DOMAINS), n_seeds=demo["n_seeds"], modes=["candidates"], writer="template",
                    hop_mix=demo["hop_mix"], use_judge=False, meaning_check="off", settings=settings)
        exported = export_datasets(settings=settings)
        rows = pl.read_parquet(Path(exported["path"]) / "qa" / "*.parquet").to_dicts()
    rows = [r for r in rows if not r.get("ikg_level")]
    return sorted(rows, key=lambda r: (r["domain"], r["question"]))


def page(rows: list[dict], commit: str) -> str:
    from schemas.programs import QueryProgram
    from tasks.qa.programs import program_lines

    hops = Counter(min(QueryProgram.model_validate_json(r["program"]).hops, 3) for r in rows)
    lines = [
        "# The demo's questions",
        "",
        f"Written by `python bench/demo_questions.py` at {commit}: `qa generate` as `hopforge demo` runs it on the five "
        "demo reference graphs (template writer, 10 seeds a domain, 80% of the jobs 1-2 hops, the demo's scopes), "
        "every accepted question with its answer and program. Not graded.",
        "",
        f"Accepted: {len(rows)}; 1 hop: {hops[1]}, 2 hops: {hops[2]}, 3 or more: {hops[3]}.",
        "",
    ]
    for i, r in enumerate(rows, 1):
        lines.append(f"{i}. [{r['domain']}] {r['question']}  ")
        lines.append(f"   answer: {r['answer']}  ")
        for line in program_lines(QueryProgram.model_validate_json(r["program"])):
            lines.append(f"   {line}  ")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="the Markdown page to write (stdout if unset)")
    args = ap.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=False).stdout.strip() or "an unknown commit"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True, check=False).stdout.strip()
    commit += " with changes not yet committed" if dirty else ""
    text = page(demo_questions(), commit)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
