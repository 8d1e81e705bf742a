"""IKG variants in the export flow: the rows of every config, the split guarantee, the answerability of each kept
variant (re-checked without the module's helpers), the template trajectory's switch, and a domain with no corpus."""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path
from typing import Any

import networkx as nx
import pyarrow.parquet as pq
import pytest

from bench.bench_ikg_demo import walk
from schemas.answers import name_key
from schemas.config import load_settings
from schemas.qa import QA, GoldPath, make_qa_id
from tasks.corpus.ingest import ingest_text_folders
from tasks.env.index import HashingEmbedder
from tasks.env.text_search import TextIndex
from tasks.graph.importers import read_triples
from tasks.graph.kg import KnowledgeGraph
from tasks.qa.context import path_edges
from tasks.qa.splits import split_leaks
from warehouse.corpus import write_ingest
from warehouse.db import Warehouse
from warehouse.graphs import load_graph, write_import
from warehouse.text_chunks import domain_chunks

DEMO = Path(__file__).resolve().parent.parent / "flows" / "demo"
LEVELS = [0.2, 0.4]
SPLIT_CYCLE = ("train", "train", "validation", "test")


def expected_hidden(level: float, n: int) -> int:
    """Graph-RFT's share of n critical triples, round half up, at least one (worked out independently)."""
    return min(n, max(1, int(math.floor(level * n + 0.5))))




def make_questions(graph: KnowledgeGraph, n: int) -> list[QA]:
    """Up to ``n`` questions of 1 to 4 hops, each given the first split that keeps the splits leak-safe."""
    out: list[QA] = []
    for start in graph.nodes():
        for hops in (2, 3, 1, 4):
            path = walk(graph, start, hops)
            if path is None:
                continue
            question = f"Which entity do you reach from {start} in {hops} steps?"
            for split in SPLIT_CYCLE[len(out) % 4:] + SPLIT_CYCLE[: len(out) % 4]:
                qa = QA(qa_id=make_qa_id(graph.domain, graph.snapshot_id, question, path[-1], path), domain=graph.domain,
                        snapshot_id=graph.snapshot_id, seed=start, hop_class="1-2" if hops <= 2 else "3+", path=path,
                        path_edges=path_edges(graph, path), question=question, answer=path[-1], split=split)  # fmt: skip
                if not split_leaks([*out, qa]):
                    out.append(qa)
                    break
            break
        if len(out) == n:
            break
    return out


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, Any]:
    """An export of cs questions (corpus ingested) and history questions (no corpus) at IKG-20% and IKG-40%."""
    from flows.export import export_datasets

    root = tmp_path_factory.mktemp("ikg-export")
    settings = load_settings(data_dir=root / "data", cache={"mode": "off"},
                             ikg={"levels": LEVELS, "embedder": "hashing"})  # fmt: skip
    with Warehouse(settings.warehouse_path) as wh:
        write_ingest(wh, ingest_text_folders(DEMO / "corpus" / "cs"), "run-ingest")
        qas: list[QA] = []
        for domain, n in (("cs", 12), ("history", 3)):
            snap = write_import(wh, read_triples(DEMO / "graphs" / f"{domain}.jsonl", domain), build_run_id="run-g")
            qas += make_questions(load_graph(wh, domain, snap.snapshot_id), n)
        wh.write_batch("qa", qas)
        wh.write_batch("gold_paths", [GoldPath(qa_id=q.qa_id, rank=0, path=q.path, verdict="valid",
                                               triples=[e.triple() for e in q.path_edges]) for q in qas])
        chunks = domain_chunks(wh, "cs")
        graph = load_graph(wh, "cs")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        out = export_datasets.fn(settings=settings)
    path = Path(out["path"])

    def rows(config: str) -> list[dict[str, Any]]:
        return [r for f in sorted((path / config).glob("*.parquet")) for r in pq.read_table(f).to_pylist()]

    return {"out": out, "printed": printed.getvalue(), "qas": {q.qa_id: q for q in qas}, "rows": rows,
            "chunks": chunks, "graph": graph, "path": path}


def _ikg(rows: list[dict[str, Any]], setting_of=lambda r: r) -> list[dict[str, Any]]:
    return [r for r in rows if setting_of(r)["kg_setting"] == "incomplete"]


def test_the_run_reports_kept_and_rejected_per_level_and_the_domain_without_corpus(exported):
    lines = [x for x in exported["printed"].splitlines() if x.startswith("IKG ")]
    assert [x.split(":")[0] for x in lines] == ["IKG cs IKG-20%", "IKG cs IKG-40%", "IKG history"]
    assert lines[2].startswith("IKG history: no corpus chunks and no text collection given, so no IKG variants")
    for line in lines[:2]:
        assert " variants kept (" in line and " rejected" in line and " template trajectories" in line
    assert exported["out"]["ikg"] == lines


def test_ikg_qa_rows_hide_exactly_the_configured_share_and_keep_their_split(exported):
    qas, rows = exported["qas"], exported["rows"]("qa")
    complete = [r for r in rows if r["kg_setting"] == "complete"]
    ikg = _ikg(rows)
    assert len(complete) == len(qas) and ikg
    assert all(r["ikg_level"] is None and r["hidden_triples"] == [] and r["view_id"] is None for r in complete)
    assert {r["domain"] for r in ikg} == {"cs"}  # history has no corpus
    kept = [x for x in exported["printed"].splitlines() if x.startswith("IKG cs")]
    for level, line in zip(LEVELS, kept):
        assert sum(r["ikg_level"] == level for r in ikg) == int(line.split(": ")[1].split(" ")[0])
    for r in ikg:
        qa = qas[r["qa_id"]]
        assert r["split"] == qa.split and r["ikg_level"] in LEVELS
        assert r["view_id"] == f"{qa.qa_id}@ikg-{round(r['ikg_level'] * 100)}"
        triples = [list(e.triple()) for e in qa.path_edges]
        assert len(r["hidden_triples"]) == expected_hidden(r["ikg_level"], len(triples))
        assert all(t in triples for t in r["hidden_triples"]) and len({tuple(t) for t in r["hidden_triples"]}) == len(
            r["hidden_triples"])


def test_every_exported_ikg_question_is_answerable(exported):
    """Re-checked independently: each hidden fact's head-and-relation query has a top-3 passage naming both of its
    entities, or networkx finds a path to the answer in the graph without every relation between hidden pairs."""
    graph, text = exported["graph"], TextIndex(exported["chunks"], HashingEmbedder(), name="recheck")
    for r in _ikg(exported["rows"]("qa")):
        qa = exported["qas"][r["qa_id"]]
        hidden = {tuple(t) for t in r["hidden_triples"]}
        facts = [e for e in qa.path_edges if e.triple() in hidden]
        by_text = all(
            any(name_key(e.head) in name_key(h.chunk.title + "\n" + h.chunk.text)
                and name_key(e.tail) in name_key(h.chunk.title + "\n" + h.chunk.text)
                for h in text.search(f"{e.head} {e.relation_text()}", 3))
            for e in facts)  # fmt: skip
        pairs = {frozenset((e.head, e.tail)) for e in facts}
        g = nx.Graph()
        g.add_nodes_from(graph.nodes())
        g.add_edges_from((n, nb) for n in graph.nodes() for nb, _ in graph.neighbors(n) if frozenset((n, nb)) not in pairs)
        by_path = nx.has_path(g, qa.path[0], qa.path[-1]) and nx.shortest_path_length(g, qa.path[0], qa.path[-1]) <= qa.hops + 1
        assert by_text or by_path, r["view_id"]


def test_rl_rows_carry_the_setting_to_the_reward_and_the_view_to_the_tools(exported):
    rows = exported["rows"]("rl")
    by_split: dict[str, list[int]] = {}
    for r in rows:
        extra, truth = r["extra_info"], json.loads(r["reward_model"]["ground_truth"])
        assert truth["kg_setting"] == extra["kg_setting"]
        assert set(extra["tools_kwargs"]) == {"entity_matcher", "node_info", "web_search"}
        views = {kw["create_kwargs"]["view_id"] for kw in extra["tools_kwargs"].values()}
        assert views == {extra["view_id"]}
        assert extra["split"] == exported["qas"][extra["qa_id"]].split
        by_split.setdefault(extra["split"], []).append(extra["index"])
        if extra["kg_setting"] == "incomplete":
            assert extra["view_id"].startswith(extra["qa_id"] + "@ikg-") and extra["hidden_triples"]
    assert all(ix == list(range(len(ix))) for ix in by_split.values())
    assert len(_ikg(rows, lambda r: r["extra_info"])) == len(_ikg(exported["rows"]("qa")))


def test_sft_rows_of_ikg_variants_show_the_switch(exported):
    sft = _ikg(exported["rows"]("sft"))
    assert sft and len(sft) <= len(_ikg(exported["rows"]("qa")))
    for r in sft:
        turns = r["conversations"]
        calls = [json.loads(t["value"].split("</think>\n\n", 1)[1]) if t["from"] == "function_call" else None for t in turns]
        i = next(k for k, t in enumerate(turns) if t["from"] == "observation" and t["value"].startswith("No information in the KG"))
        assert calls[i - 1]["name"] == "neighbor_search" and calls[i + 1]["name"] == "web_search"
        assert turns[i + 2]["from"] == "observation" and turns[i + 2]["value"].startswith("Passages for")
        assert "search the text" in turns[i + 1]["value"]  # the thought before the search says why
        assert turns[-1]["from"] == "gpt" and turns[-1]["value"].endswith(f"<answer>{r['golden_answer']}</answer>")
        assert [t["function"]["name"] for t in json.loads(r["tools"])][-1] == "web_search"
    messages = _ikg(exported["rows"]("messages"))
    assert {r["id"] for r in messages} == {r["id"] for r in sft}
    assert {r["view_id"] for r in messages} <= {r["view_id"] for r in _ikg(exported["rows"]("qa"))}


def test_the_template_trajectory_switches_to_the_text_or_says_why_not():
    from tasks.distill.ikg_template import IKG_TEMPLATE_TOOLS, ikg_template_trajectory, shows_the_switch
    from tasks.distill.template import ToolStep, thought_problems
    from tasks.env.ikg import make_view, viewed_environment
    from tasks.env.text_search import TextChunk, chunks_from_ingest
    from tasks.env.tools import ToolEnvironment

    graph = read_triples(DEMO / "graphs" / "cs.jsonl", "cs").to_graph()
    path = ["On Computable Numbers", "Alan Turing", "King's College, Cambridge"]
    qa = QA(qa_id="qa-turing", domain="cs", seed=path[0], hop_class="1-2", path=path, path_edges=path_edges(graph, path),
            question="Which college did the author of On Computable Numbers study at?", answer=path[-1], split="train")
    text = TextIndex(chunks_from_ingest(ingest_text_folders(DEMO / "corpus" / "cs"), "cs"), HashingEmbedder(), name="cs")
    env = ToolEnvironment.from_graphs([graph], HashingEmbedder(), tools=IKG_TEMPLATE_TOOLS, texts={"cs": text})
    view = make_view(graph, qa.qa_id, qa.path_edges, 0.4)
    traj = ikg_template_trajectory(qa, view, viewed_environment(env, view, "cs"))
    assert traj.status == "accepted" and shows_the_switch(traj) and traj.final_answer == qa.answer
    names = [c["function"]["name"] for m in traj.messages for c in (m.get("tool_calls") or [])]
    hidden_first = view.facts[0].head == path[0]
    assert names == (["entity_matcher", "neighbor_search", "web_search", "node_info"] if hidden_first
                     else ["entity_matcher", "node_info", "neighbor_search", "web_search"])
    # One thought per turn, none naming a node before a tool output showed it.
    steps = [ToolStep(m["name"], {}, m["content"], True, "") for m in traj.messages if m["role"] == "tool"]
    assert thought_problems(traj.reasoning, qa.question, qa.path, steps) is None
    assert len(traj.reasoning) == len(names) + 1 and traj.reasoning[-1].endswith(f"the answer is {qa.answer}.")
    # The complete graph never says "no information": the same walk is not a switch.
    assert not shows_the_switch(traj.model_copy(update={"messages": traj.messages[:3]}))
    # A text that does not state the hidden fact: rejected, naming the search that missed it.
    bare = TextIndex([TextChunk("c-1", "Bletchley Park is a country house in Buckinghamshire.", "Bletchley")], None)
    blind = ToolEnvironment.from_graphs([graph], HashingEmbedder(), tools=IKG_TEMPLATE_TOOLS, texts={"cs": bare})
    missed = ikg_template_trajectory(qa, view, viewed_environment(blind, view, "cs"))
    assert missed.status == "rejected" and missed.reject_reason == "next_hop_missing"
    assert missed.detail.startswith("web_search(") and repr(view.facts[0].tail) in missed.detail


def test_the_dataset_card_counts_questions_per_setting(exported):
    rows = exported["rows"]("qa")
    card = (exported["path"] / "README.md").read_text()
    n = {lv: sum(r["ikg_level"] == lv for r in rows) for lv in (None, *LEVELS)}
    table = card[card.find("| graph setting |"):].split("\n\n", 1)[0]
    assert n[0.2] and f"| complete | {n[None]} |\n| IKG-20% | {n[0.2]} |\n| IKG-40% | {n[0.4]} |" in card, table


@pytest.mark.parametrize("levels", [[0.4, 1.0], [0.0], [-0.2]])
def test_a_configured_level_outside_zero_one_is_one_clear_error(levels):
    from schemas.errors import ConfigError

    with pytest.raises(ConfigError, match=r"ikg.levels: .*IKG levels must be shares between 0 and 1"):
        load_settings(ikg={"levels": levels})
    assert load_settings().ikg.levels == [] and load_settings(ikg={"levels": [0.4, 0.2, 0.4]}).ikg.levels == [0.2, 0.4]
