"""The IKG step of `hopforge demo`: what `[ikg] levels = [0.2, 0.4]` adds to the demo's export, and one exported
IKG trajectory.

The demo's export builds, per domain, the text index over the corpus chunks in the warehouse (the documents
LightRAG read) and the demo corpus (``[ikg] texts``, set by ``DEMO_PLAN.with_ikg``), and the entity index (the
configured embedder, the local model in the demo), checks every IKG variant's answerability, and walks a template
trajectory on each kept variant (``flows.ikg_data.ikg_export_data``). This runs that step the same way on the
demo's reference graphs, with questions walked along the graphs' paths in the demo's hop mix (about the demo's 35; no LLM is needed
to make them): once alone from a cold data dir (every index built), then the whole export without IKG levels and
with them (the indexes cached on disk, as the demo's export finds its entity indexes after the distillation). The
difference of the two exports is what the IKG levels add to the demo. Wall and CPU seconds and the machine's load
and cores are recorded: other work on the machine stretches the wall times.

    python bench/bench_ikg_demo.py [--json bench/results/ikg_demo.json] [--show-trajectory]
    python bench/bench_ikg_demo.py --export <data dir>/exports/<version> [--view <qa_id>@ikg-20]   # print only

``--show-trajectory`` prints one IKG trajectory of the export's ``messages`` config (its switch: the graph's
no-information reply, the text search, the passage, the graph again), abridged, as the docs show it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import re
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from flows.factory import DEMO_DIR, DEMO_DOMAINS, DEMO_PLAN, reference_graph_files, sample_corpus  # noqa: E402
from flows.export import export_datasets  # noqa: E402
from flows.ikg_data import ikg_export_data  # noqa: E402
from schemas.config import load_settings  # noqa: E402
from schemas.qa import QA, GoldPath, make_qa_id  # noqa: E402
from tasks.corpus.ingest import ingest_text_folders  # noqa: E402
from tasks.distill.ikg_template import NO_INFORMATION, shows_the_switch  # noqa: E402
from tasks.graph.importers import read_triples  # noqa: E402
from tasks.graph.kg import KnowledgeGraph  # noqa: E402
from tasks.qa.context import path_edges  # noqa: E402
from tasks.qa.splits import assign_splits  # noqa: E402
from warehouse.corpus import write_ingest  # noqa: E402
from warehouse.db import Warehouse  # noqa: E402
from warehouse.graphs import load_graph, write_import  # noqa: E402

def walk(graph: KnowledgeGraph, start: str, hops: int) -> list[str] | None:
    """A simple path of ``hops`` relations from ``start``: always the first unvisited neighbour by name (the IKG
    tests walk their questions the same way)."""
    path = [start]
    while len(path) <= hops:
        nxt = [n for n in graph.neighbor_names(path[-1]) if n not in path]
        if not nxt:
            return None
        path.append(nxt[0])
    return path


def demo_like_questions(graph: KnowledgeGraph, n: int) -> list[QA]:
    """``n`` questions of ``graph``: 1-2 hops for ``DEMO_PLAN.short_share`` of them, 3 hops for the rest."""
    n_long = round(n * (1 - DEMO_PLAN.short_share))
    hops_wanted = [3] * n_long + [1 + i % 2 for i in range(n - n_long)]
    out: list[QA] = []
    for start in graph.nodes():
        if len(out) == len(hops_wanted):
            break
        hops = hops_wanted[len(out)]
        path = walk(graph, start, hops)
        if path is None:
            continue
        question = f"Which entity do you reach from {start} in {hops} steps?"
        out.append(QA(qa_id=make_qa_id(graph.domain, graph.snapshot_id, question, path[-1], path), domain=graph.domain,
                      snapshot_id=graph.snapshot_id, seed=start, hop_class="1-2" if hops <= 2 else "3+", path=path,
                      path_edges=path_edges(graph, path), question=question, answer=path[-1]))  # fmt: skip
    return out


def _cut(text: str, here: str, nxt: str, chars: int) -> str:
    """``text`` in one line, cut to about ``chars``: its first line, then the first sentence that names both
    ``here`` and ``nxt`` (a passage or entry stating the step's fact), else its start."""
    flat = " ".join(text.split())
    if len(flat) <= chars:
        return flat
    head = " ".join(text.split("\n", 1)[0].split())
    sentences = re.split(r"(?<=[.!?])\s+", flat[len(head):])
    found = next((x for x in sentences if here in x and nxt in x), None)
    if found is None:
        return flat[:chars] + "..."
    return f"{head} ... {found.strip()[:chars]} ..."


def abridge(row: dict[str, Any], chars: int = 200) -> str:
    """An exported ``messages`` row, one line per turn: the assistant's thought and call, or the tool's reply cut
    to about ``chars`` (around the sentence that states the step's fact: the node it stands on and the next)."""
    walk: list[str] = []  # the entity each call stands on, then the answer
    for m in row["messages"]:
        for c in (m.get("tool_calls") or []) if m["role"] == "assistant" else []:
            args = json.loads(c["function"]["arguments"])
            walk.append(args.get("node_name") or args.get("entity") or (walk[-1] if walk else ""))
    walk.append(row["golden_answer"])
    lines = [f"[{row['view_id']}, {row['kind']}] Q: {row['question']}"]
    k = 0
    for m in row["messages"]:
        if m["role"] == "assistant":
            if m.get("reasoning_content"):
                lines.append(f"  think: {m['reasoning_content']}")
            for c in m.get("tool_calls") or []:
                lines.append(f"  call:  {c['function']['name']}({c['function']['arguments']})")
            if m.get("content"):
                lines.append(f"  say:   {m['content']}")
        elif m["role"] == "tool":
            here = walk[k]
            nxt = next((w for w in walk[k + 1:] if w != here), walk[-1])
            lines.append(f"  tool:  {_cut(str(m['content']), here, nxt, chars)}")
            k += 1
    return "\n".join(lines)


def ikg_row_with_switch(export_dir: Path, view_id: str | None = None) -> dict[str, Any] | None:
    """The exported IKG ``messages`` row (of ``view_id`` when given) with the longest switch (no-information reply,
    text search, then the graph again where there is one), first by id; ``None`` when no IKG row shows it."""
    rows = [r for f in sorted((export_dir / "messages").glob("*.parquet")) for r in pq.read_table(f).to_pylist()
            if r["kg_setting"] == "incomplete" and view_id in (None, r["view_id"])]

    def switch(r: dict[str, Any]) -> bool:
        turns = r["messages"]
        return any(m["role"] == "tool" and str(m["content"]).startswith(NO_INFORMATION) and i + 1 < len(turns)
                   and [c["function"]["name"] for c in turns[i + 1].get("tool_calls") or []] == ["web_search"]
                   for i, m in enumerate(turns))  # fmt: skip

    shown = [r for r in rows if switch(r)]
    return min(shown, key=lambda r: (-len(r["messages"]), r["id"]), default=None)


def timed(fn: Any) -> tuple[Any, float, float]:
    """``fn()``, its wall seconds and the process's CPU seconds (every thread: torch encodes on several)."""
    wall, cpu = time.monotonic(), time.process_time()
    out = fn()
    return out, round(time.monotonic() - wall, 1), round(time.process_time() - cpu, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the result here")
    ap.add_argument("--questions", type=int, default=7, help="questions per domain (the demo makes about 7)")
    ap.add_argument("--show-trajectory", action="store_true", help="print one exported IKG trajectory, abridged")
    ap.add_argument("--export", type=Path, help="only print one IKG trajectory of this export (a demo's: the "
                    "`datasets:` folder its summary names), abridged")
    ap.add_argument("--view", help="with --export: the IKG view id whose trajectory to print")
    args = ap.parse_args()
    if args.export is not None:
        row = ikg_row_with_switch(args.export, args.view)
        print(abridge(row) if row is not None else f"no IKG trajectory of {args.export} shows the switch")
        return
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        settings = DEMO_PLAN.with_ikg(load_settings(data_dir=Path(tmp) / "data", cache={"mode": "off"}))
        with Warehouse(settings.warehouse_path) as wh:
            # As in the demo: the warehouse holds the documents LightRAG read, the demo corpus is [ikg] texts.
            sample = sample_corpus(str(DEMO_DIR / "corpus"), DEMO_PLAN.build_docs, Path(tmp) / "sample")
            write_ingest(wh, ingest_text_folders(sample), "run-ingest")
            qas: list[QA] = []
            for domain, f in reference_graph_files(DEMO_DIR / "graphs", DEMO_DOMAINS).items():
                snap = write_import(wh, read_triples(Path(f), domain), build_run_id="run-g")
                qas += demo_like_questions(load_graph(wh, domain, snap.snapshot_id), args.questions)
            # The demo's shares, leak-safe as generate-qa assigns them (the export refuses leaking splits).
            splits = assign_splits(qas, proportions=DEMO_PLAN.split_proportions, seed=settings.seed).assignment
            qas = [q.model_copy(update={"split": splits[q.qa_id]}) for q in qas]
            wh.write_batch("qa", qas)
            wh.write_batch("gold_paths", [GoldPath(qa_id=q.qa_id, rank=0, path=q.path, verdict="valid",
                                                   triples=[e.triple() for e in q.path_edges]) for q in qas])
            data, cold_wall, cold_cpu = timed(lambda: ikg_export_data(wh, qas, settings, run_id="bench-ikg"))
        quiet = io.StringIO()
        with contextlib.redirect_stdout(quiet):
            plain = settings.model_copy(update={"ikg": settings.ikg.model_copy(update={"levels": []})})
            _, plain_wall, plain_cpu = timed(lambda: export_datasets.fn(settings=plain))
            out, ikg_wall, ikg_cpu = timed(lambda: export_datasets.fn(settings=settings))
        row = ikg_row_with_switch(Path(out["path"]))
    trajs = [i.trajectory for i in data.items if i.trajectory is not None]
    kept = Counter(i.view.level for i in data.items)
    result = {
        "what": "the IKG step of the demo's export (flows.ikg_data.ikg_export_data) on the demo graphs, the "
                "warehouse holding the demo's LightRAG sample and [ikg] texts the demo corpus (DEMO_PLAN.with_ikg), "
                "[ikg] levels = [0.2, 0.4], the configured embedder (local all-MiniLM-L6-v2), demo-like questions",
        "questions": len(qas),
        "levels": list(DEMO_PLAN.ikg_levels),
        "ikg_step_cold": {"wall_s": cold_wall, "cpu_s": cold_cpu},
        "export_without_ikg": {"wall_s": plain_wall, "cpu_s": plain_cpu},
        "export_with_ikg_warm_indexes": {"wall_s": ikg_wall, "cpu_s": ikg_cpu},
        "variants_kept": {f"{round(k * 100)}%": n for k, n in sorted(kept.items())},
        # rows per config: the complete questions and their IKG variants (no complete-graph trajectories here, so
        # the sft and messages rows are the IKG template trajectories)
        "export_rows": {c: sum(n for n in splits.values()) for c, splits in out["rows"].items()},
        "template_trajectories": len(trajs),
        "template_trajectories_accepted": sum(t.accepted for t in trajs),
        "template_reject_reasons": dict(sorted(Counter(t.reject_reason for t in trajs if not t.accepted).items())),
        "template_trajectories_showing_the_switch": sum(t.accepted and shows_the_switch(t) for t in trajs),
        "lines": [line.replace(str(ROOT), "<repo>") for line in data.lines],  # no machine paths in the record
        "machine": {"cpus": os.cpu_count(), "load_1min_before": round(load_before[0], 2),
                    "load_1min_after": round(os.getloadavg()[0], 2), "platform": platform.platform(),
                    "python": platform.python_version()},
        "when": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    print(json.dumps({k: v for k, v in result.items() if k != "lines"}, indent=1))
    for line in data.lines:
        print(line)
    if args.show_trajectory:
        print(abridge(row) if row is not None else "no exported IKG trajectory shows the switch")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
