"""Evaluation in Graph-RFT's graph settings: per-level aggregation against a hand-computed reference, an IKG item
run in its view with the text tool, the text-search count, the IKG gold context, and the flow's report, picture and
dataset-card section on the demo cs graph and corpus (fake endpoint, hashing embedder)."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from eval.evaluate import EvalConfig, EvalItem, evaluate_item, item_key
from eval.ikg import hidden_passages, ikg_config, setting_label, setting_table, text_calls
from schemas.config import load_settings
from schemas.errors import InputError
from schemas.qa import QA, GoldPath
from schemas.tools import ToolCallRecord
from tasks.corpus.ingest import ingest_text_folders
from tasks.env.ikg import IKGVariant, check_answerable, make_view
from tasks.env.index import HashingEmbedder
from tasks.env.text_search import TextIndex, chunks_from_ingest
from tasks.env.tools import ToolEnvironment
from tasks.export.card import evaluation_section
from tasks.export.pictures import render_settings
from tasks.graph.importers import read_triples
from tests.test_agent_loop import make_gateway
from tests.test_ikg_agent import two_hop_question

DEMO = Path(__file__).resolve().parent.parent / "flows" / "demo"
TOOLS = ("node_info", "neighbor_search")


# -- aggregation by hand ---------------------------------------------------------------------------------------------


def _item(mode: str, level: float | None, hit: bool, text: int, em: bool = False, f1: float = 0.0) -> EvalItem:
    return EvalItem(qa_id="q", mode=mode, domain="cs", hop_class="1-2", question="?", answers=["a"],
                    end_reason="answer", hit1_any=hit, em=em, f1=f1, n_text_calls=text,
                    kg_setting="complete" if level is None else "incomplete", ikg_level=level,
                    view_id="" if level is None else f"q@ikg-{round(level * 100)}")  # fmt: skip


def test_setting_table_matches_a_hand_computed_reference():
    items = [
        # complete: 3 items, Hits@1 2/3, one searched the text (twice) although the graph held everything
        _item("tools", None, True, 0, em=True, f1=1.0), _item("tools", None, True, 2, f1=0.5),
        _item("tools", None, False, 0),
        # IKG-40%: 2 items, 1 hit, both searched (1 and 3 calls)
        _item("tools", 0.4, False, 1), _item("tools", 0.4, True, 3, em=True, f1=1.0),
        # IKG-20%: 4 items, 3 hits, 1 searched
        _item("tools", 0.2, True, 1), _item("tools", 0.2, True, 0), _item("tools", 0.2, True, 0),
        _item("tools", 0.2, False, 0),
        # the closed-book baseline at IKG-20%: never a text call
        _item("no_tools", 0.2, True, 0), _item("no_tools", 0.2, False, 0),
    ]  # fmt: skip
    rows = setting_table(items, ["tools", "no_tools"])
    got = [(r["mode"], r["setting"], r["n"], r["hit1_any"], r["text_search_share"], r["mean_text_calls"], r["em"],
            r["f1"]) for r in rows]  # fmt: skip
    assert got == [
        ("tools", "complete", 3, 0.6667, 0.3333, 0.6667, 0.3333, 0.5),
        ("tools", "IKG-20%", 4, 0.75, 0.25, 0.25, 0.0, 0.0),
        ("tools", "IKG-40%", 2, 0.5, 1.0, 2.0, 0.5, 0.5),
        ("no_tools", "IKG-20%", 2, 0.5, 0.0, 0.0, 0.0, 0.0),
    ]
    assert [setting_label("complete", None), setting_label("incomplete", 0.6)] == ["complete", "IKG-60%"]


def test_text_calls_count_both_names_and_failed_calls():
    def rec(name: str, ok: bool = True) -> ToolCallRecord:
        return ToolCallRecord(round=1, name=name, arguments={}, style="json", ok=ok, observation="")

    assert text_calls([rec("node_info"), rec("web_search"), rec("text_search", ok=False), rec("neighbor_search")]) == 2
    assert text_calls([]) == 0
    assert ikg_config(EvalConfig(tools=TOOLS)).tools == (*TOOLS, "web_search")
    assert ikg_config(EvalConfig()).tools == ("entity_matcher", "node_info", "neighbor_search", "web_search")
    assert ikg_config(EvalConfig(tools=("node_info", "text_search"))).tools == ("node_info", "text_search",
                                                                                "neighbor_search")


# -- items on the demo graph -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def env() -> ToolEnvironment:
    graph = read_triples(DEMO / "graphs" / "cs.jsonl", "cs").to_graph()
    chunks = chunks_from_ingest(ingest_text_folders(DEMO / "corpus" / "cs"), "cs")
    text = TextIndex(chunks, HashingEmbedder(), name="cs")
    return ToolEnvironment.from_graphs([graph], HashingEmbedder(), tools=(*TOOLS, "web_search"), texts={"cs": text})


def call(name: str, **arguments: str) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def responses(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user" and "<tool_response>" in m["content"]]


def probing_policy(qa: QA, searches: int = 1):
    """Looks the first hop up with node_info, then asks neighbor_search for it; on "No information" searches the
    text ``searches`` times (the first ``searches - 1`` with an empty query, which the tool refuses), then walks the
    second hop and answers what the graph showed."""
    first, second = qa.path_edges

    def reply(body: dict[str, Any]) -> str:
        seen = responses(body)
        if not seen:
            return call("node_info", node_name=first.head, graph_type="cs")
        if len(seen) == 1:
            return call("neighbor_search", entity=first.head, relation=first.relation)
        searched = len(seen) - 2
        if "No information in the KG" in seen[1] and searched < searches:
            return call("web_search", query="" if searched < searches - 1 else f"{first.head} {first.relation}")
        texts = searches if "No information in the KG" in seen[1] else 0  # the replies of the text searches
        if not any(second.tail in s for s in seen[2 + texts:]):
            return call("neighbor_search", entity=first.tail, relation=second.relation)
        return f"<answer>{second.tail}</answer>"

    return reply


async def test_an_ikg_item_runs_in_its_view_with_the_text_tool(fake_llm, tmp_path, env):
    qa, view = two_hop_question(env)
    first = qa.path_edges[0]
    cfg = ikg_config(EvalConfig(tools=TOOLS))
    fake_llm.add(reply=probing_policy(qa, searches=2))
    ikg = await evaluate_item(make_gateway(fake_llm, tmp_path), env, qa, "tools", cfg, view=view)
    body = fake_llm.requests[-1].json
    node_info, no_info, refused, found, *_ = responses(body)
    # The KG tools answer from the view: node_info lists no hidden relation (its description is the entity's own
    # text), and neighbor_search says it has none.
    assert "Neighbours" in node_info and first.tail not in node_info.split("Neighbours", 1)[1]
    assert "No information in the KG" in no_info and first.tail not in no_info
    assert "the query is empty" in refused and first.tail in found
    assert '"name": "web_search"' in body["messages"][0]["content"]  # the text tool is offered
    assert (ikg.kg_setting, ikg.ikg_level, ikg.view_id) == ("incomplete", 0.2, view.view_id)
    assert ikg.n_text_calls == 2 and ikg.n_tool_calls == 5 and ikg.hit1_any and ikg.prediction == qa.answer

    fake_llm.add(reply=probing_policy(qa, searches=2))
    full = await evaluate_item(make_gateway(fake_llm, tmp_path), env, qa, "tools", cfg)
    assert first.tail in responses(fake_llm.requests[-1].json)[0].split("Neighbours", 1)[1]  # the complete graph has it
    assert (full.kg_setting, full.ikg_level, full.view_id, full.n_text_calls) == ("complete", None, "", 0)
    assert full.hit1_any and full.n_tool_calls == 3
    # The same question in two settings is two rows of one run, with different keys.
    assert item_key(qa, "tools", cfg, [], {}, view) != item_key(qa, "tools", cfg, [], {})
    assert setting_table([ikg, full], ["tools"])[1]["text_search_share"] == 1.0


async def test_the_ikg_gold_context_gives_hidden_triples_as_the_passages_that_state_them(fake_llm, tmp_path, env):
    qa, view = two_hop_question(env)
    first, second = (e.triple() for e in qa.path_edges)
    text = env.texts["cs"]
    [(hidden, chunk)] = hidden_passages(view, [first, second], text)
    assert hidden == first and chunk is not None and qa.path[1] in chunk.text
    fake_llm.add(reply=f"<answer>{qa.answer}</answer>")
    gold = [GoldPath(qa_id=qa.qa_id, rank=0, path=qa.path, triples=[first, second])]
    item = await evaluate_item(make_gateway(fake_llm, tmp_path), None, qa, "gold_context", EvalConfig(), gold,
                               view=view, text=text)
    prompt = fake_llm.requests[-1].json["messages"][-1]["content"]
    facts, passages = prompt.split("Passages:", 1)
    assert f"- {' | '.join(second)}" in facts and " | ".join(first) not in facts
    assert chunk.text in passages and item.em and item.kg_setting == "incomplete"
    # On the complete graph the same question gets both triples as facts and no passage.
    await evaluate_item(make_gateway(fake_llm, tmp_path), None, qa, "gold_context", EvalConfig(), gold)
    prompt = fake_llm.requests[-1].json["messages"][-1]["content"]
    assert " | ".join(first) in prompt and "Passages:" not in prompt


def test_the_settings_picture_and_card_section():
    rows = setting_table([_item("tools", None, True, 0), _item("tools", 0.2, False, 1)], ["tools"])
    pics = render_settings(rows)
    assert list(pics) == ["pictures/settings.svg"] and pics["pictures/settings.svg"].startswith(b"<?xml")
    assert render_settings(rows) == pics  # deterministic bytes
    assert render_settings([{**rows[1], "hit1_any": 1.0}, rows[0]]) != pics  # and drawn from the numbers
    card = evaluation_section(rows, sorted(pics), run_id="run-1", model="m")
    assert "![Hits@1 and text-search share by graph setting](pictures/settings.svg)" in card
    assert "| tools | complete | 1 | 100.0 | 0.0 | 0.0 | 0.0% | 0.00 |" in card
    assert "| tools | IKG-20% | 1 | 0.0 | 0.0 | 0.0 | 100.0% | 1.00 |" in card


# -- the flow --------------------------------------------------------------------------------------------------------


def flow_policy(by_question: dict[str, QA]):
    """Tools: neighbor_search on the first hop; when its reply lists no neighbour named as the hop's tail, one text
    search; then the gold answer, except
    after a text search on a 3+ hop question ("unknown"). Closed book: right on 1-2 hop questions only. Gold
    context: right when the prompt holds a passage or the whole path as facts."""

    def reply(body: dict[str, Any]) -> str:
        msgs = body["messages"]
        user = next(m["content"] for m in msgs if m["role"] == "user")
        if "<tools>" in msgs[0]["content"]:
            qa = by_question[user]
            seen = responses(body)
            if not seen:
                first = qa.path_edges[0]
                return call("neighbor_search", entity=first.head, relation=first.relation)
            listed = re.search(rf"^\d+\. {re.escape(qa.path[1])} \|", seen[0], flags=re.M)
            if not listed and len(seen) == 1:  # the graph did not show the first hop: read it in the text
                return call("web_search", query=f"{qa.path_edges[0].head} {qa.path_edges[0].relation}")
            searched = len(seen) > 1
            return f"<answer>{'unknown' if searched and qa.hop_class == '3+' else qa.answer}</answer>"
        if user.startswith("Facts:"):
            qa = by_question[user.rsplit("Question: ", 1)[1]]
            return f"<answer>{qa.answer}</answer>"
        qa = by_question[user]
        return f"<answer>{qa.answer if qa.hop_class == '1-2' else 'unknown'}</answer>"

    return reply


@pytest.fixture(scope="module")
def evaluated(prefect_harness, tmp_path_factory) -> dict[str, Any]:
    """The evaluate-policy flow at IKG-20% and IKG-60% on four cs test questions (two 2-hop, two 3-hop), corpus
    ingested, every mode, against a fake endpoint; then an export whose card carries the evaluation."""
    from flows.evaluate import evaluate_policy, evaluation_card, latest_setting_table
    from flows.runtime import open_run
    from testing.fake import FakeOpenAI
    from tasks.export.datasets import ExportInputs, export
    from tasks.qa.context import path_edges
    from bench.bench_ikg_demo import walk
    from warehouse.corpus import write_ingest
    from warehouse.db import Warehouse
    from warehouse.graphs import load_graph, write_import

    root = tmp_path_factory.mktemp("ikg-eval")
    with FakeOpenAI() as fake:
        role = {"base_url": fake.base_url, "model": "fake-model", "max_retries": 0, "timeout_s": 10}
        settings = load_settings(data_dir=root / "data", roles={"policy": role}, cache={"mode": "off"},
                                 embeddings={"base_url": fake.base_url, "model": "fake-embed", "dim": 16},
                                 ikg={"embedder": "hashing"})  # fmt: skip
        with Warehouse(settings.warehouse_path) as wh:
            write_ingest(wh, ingest_text_folders(DEMO / "corpus" / "cs"), "run-ingest")
            snap = write_import(wh, read_triples(DEMO / "graphs" / "cs.jsonl", "cs"), build_run_id="run-g")
            graph = load_graph(wh, "cs", snap.snapshot_id)
            probe = ToolEnvironment.from_graphs([graph], HashingEmbedder(), tools=TOOLS)
            # the corpus as the flow searches it (the ikg embedder is the hashing one): the reference below counts
            # every variant as answerable, so questions whose hidden facts no passage states are passed over
            corpus = TextIndex(chunks_from_ingest(ingest_text_folders(DEMO / "corpus" / "cs"), "cs"),
                               HashingEmbedder(), name="cs")
            qas: list[QA] = []
            for hops in (2, 2, 3, 3):
                for start in graph.nodes():
                    path = walk(graph, start, hops)
                    if path is None or any(q.seed == start for q in qas):
                        continue
                    edges = path_edges(graph, path)
                    # the policy's first call must find the first hop on the complete graph
                    if not probe.call("neighbor_search", {"entity": edges[0].head, "relation": edges[0].relation}).ok:
                        continue
                    qa = QA(qa_id=f"qa-{len(qas)}", domain="cs", snapshot_id=snap.snapshot_id, seed=start,
                            hop_class="1-2" if hops == 2 else "3+", path=path, path_edges=edges,
                            question=f"Which entity is {hops} steps from {start}?", answer=path[-1], split="test")
                    if not all(isinstance(check_answerable(graph, qa, make_view(graph, qa.qa_id, edges, lv), corpus),
                                          IKGVariant) for lv in (0.2, 0.6)):
                        continue
                    qas.append(qa)
                    break
            assert len(qas) == 4
            wh.write_batch("qa", qas)
            wh.write_batch("gold_paths", [GoldPath(qa_id=q.qa_id, rank=0, path=q.path, verdict="valid",
                                                   triples=[e.triple() for e in q.path_edges]) for q in qas])
        fake.add(reply=flow_policy({q.question: q for q in qas}))
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            out = evaluate_policy(modes=["tools", "no_tools", "gold_context"], ikg_levels=[0.2, 0.6],
                                  settings=settings)
        with Warehouse(settings.warehouse_path, read_only=True) as wh:
            items = wh.query("SELECT * FROM eval_items WHERE run_id = ? ORDER BY mode, qa_id, view_id", [out["run_id"]])
        chats = [r.json["messages"] for r in fake.requests if "messages" in r.json]
        tool_prompts = [m[0]["content"] for m in chats if "<tools>" in m[0]["content"]]
        with open_run("card", {}, settings) as rt:
            latest = latest_setting_table(rt)
            card_pictures, card_extra = evaluation_card(rt)
        exported = export(ExportInputs(qas=qas, gold_paths={}, trajectories=[]), root / "exports", include=["qa"],
                          extra_files=card_pictures, card_extra=card_extra)
    return {"out": out, "qas": qas, "graph": graph, "items": items, "printed": printed.getvalue(),
            "tool_prompts": tool_prompts, "latest": latest, "export": exported.path}


def test_the_flow_scores_each_level_as_a_hand_computed_reference_says(evaluated):
    qas, graph, out = evaluated["qas"], evaluated["graph"], evaluated["out"]
    # Reference, from the views alone: an item searches the text when its view hides the first hop; Hits@1 is lost
    # by the tool loop only on a 3+ hop question that searched, and by the closed book on every 3+ hop question.
    expected: dict[tuple[str, str], list[tuple[bool, int]]] = {}
    for level, name in ((None, "complete"), (0.2, "IKG-20%"), (0.6, "IKG-60%")):
        for qa in qas:
            view = make_view(graph, qa.qa_id, qa.path_edges, level) if level is not None else None
            if level == 0.6 and view.hidden == make_view(graph, qa.qa_id, qa.path_edges, 0.2).hidden:
                continue  # no second variant that hides what IKG-20% hides
            searched = view is not None and frozenset(qa.path[:2]) in view.pairs
            expected.setdefault(("tools", name), []).append((not (searched and qa.hop_class == "3+"), int(searched)))
            expected.setdefault(("no_tools", name), []).append((qa.hop_class == "1-2", 0))
            expected.setdefault(("gold_context", name), []).append((True, 0))
    # every variant is answerable here (the printed lines say so), so each level scores all four questions
    n60 = len(expected[("tools", "IKG-60%")])
    assert 0 < n60 < 4  # the fixture holds questions whose two levels differ and questions whose do not
    assert re.findall(r"IKG cs (IKG-\d+%): (\d) of 4 questions scored", "\n".join(out["ikg"])) == [
        ("IKG-20%", "4"), ("IKG-60%", str(n60))]
    assert any(line.endswith("(the others: same_as_lower_level)") for line in out["ikg"])
    got = {(r["mode"], r["setting"]): (r["n"], r["hit1_any"], r["text_search_share"], r["mean_text_calls"])
           for r in out["by_setting"]}  # fmt: skip
    assert [(r["mode"], r["setting"]) for r in out["by_setting"]] == [
        (m, s) for m in ("tools", "no_tools", "gold_context") for s in ("complete", "IKG-20%", "IKG-60%")]
    for key, cases in expected.items():
        n = len(cases)
        hits = round(sum(h for h, _ in cases) / n, 4)
        share = round(sum(c > 0 for _, c in cases) / n, 4)
        assert got[key] == (n, hits, share, round(sum(c for _, c in cases) / n, 4)), key
    assert got[("tools", "IKG-60%")][2] > 0  # the reference is not trivially zero
    # by_mode and eval_runs summarise the complete graph, as without IKG levels
    assert out["by_mode"]["tools"]["n"] == 4 and out["by_mode"]["no_tools"]["hit1_any"] == 0.5


def test_the_flow_stores_one_row_per_setting_and_offers_the_text_tool(evaluated):
    items, qas = evaluated["items"], evaluated["qas"]
    graph = evaluated["graph"]
    distinct = [q for q in qas if make_view(graph, q.qa_id, q.path_edges, 0.6).hidden !=
                make_view(graph, q.qa_id, q.path_edges, 0.2).hidden]
    assert len(items) == 3 * (4 * 2 + len(distinct))  # modes x (questions x two settings + the distinct IKG-60%)
    views = {(i["qa_id"], i["view_id"]) for i in items if i["mode"] == "tools"}
    assert views == {(q.qa_id, v) for q in qas for v in ("", f"{q.qa_id}@ikg-20")} | {
        (q.qa_id, f"{q.qa_id}@ikg-60") for q in distinct}
    assert {(i["kg_setting"], i["ikg_level"]) for i in items} == {("complete", None), ("incomplete", 0.2),
                                                                   ("incomplete", 0.6)}
    assert all(i["n_text_calls"] == 0 for i in items if i["mode"] != "tools")
    # every tool-loop prompt (complete graph included) offers web_search
    assert evaluated["tool_prompts"] and all('"name": "web_search"' in p for p in evaluated["tool_prompts"])


def test_the_report_and_the_dataset_card_show_the_picture(evaluated):
    out = evaluated["out"]
    report = Path(out["report"])
    text = report.read_text(encoding="utf-8")
    assert "![Hits@1 and text-search share by graph setting](pictures/settings.svg)" in text
    drawn = render_settings(out["by_setting"])["pictures/settings.svg"]
    assert (report.parent / "pictures" / "settings.svg").read_bytes() == drawn
    n60 = next(r["n"] for r in out["by_setting"] if (r["mode"], r["setting"]) == ("tools", "IKG-60%"))
    assert 0 < n60 < 4 and f"| tools | IKG-60% | {n60} |" in text
    run_id, _, rows = evaluated["latest"]
    assert run_id == out["run_id"] and rows == out["by_setting"]
    card = (evaluated["export"] / "README.md").read_text(encoding="utf-8")
    assert "## Evaluation by graph setting" in card and "](pictures/settings.svg)" in card
    assert (evaluated["export"] / "pictures" / "settings.svg").is_file()
    manifest = json.loads((evaluated["export"] / "manifest.json").read_text())
    assert "pictures/settings.svg" in manifest["files"]


def test_bad_levels_are_refused_before_any_work(tmp_path):
    from flows.evaluate import evaluate_policy

    settings = load_settings(data_dir=tmp_path)
    with pytest.raises(InputError, match=r"IKG level must be a share between 0 and 1.*got 1\.5"):
        evaluate_policy.fn(ikg_levels=[0.2, 1.5], settings=settings)


def test_the_migration_keeps_earlier_items_and_keys_rows_by_view(tmp_path):
    from warehouse.db import Warehouse
    from warehouse.migrations import MIGRATIONS

    path = tmp_path / "w.duckdb"
    with Warehouse(path, migrate=False) as wh:
        wh.migrate([m for m in MIGRATIONS if m.name != "eval_ikg"])
        wh.execute("INSERT INTO eval_items (run_id, qa_id, mode, domain, hop_class, question, answers, em, f1, hit1, "
                   "n_rounds, repeated_calls, end_reason, path_coverage, prompt_tokens, completion_tokens, hit1_any, "
                   "item_key) VALUES ('r', 'q', 'tools', 'cs', '1-2', '?', '[\"a\"]', true, 1.0, true, 1, 0, 'answer', "
                   "0.5, 10, 5, true, 'k')")  # fmt: skip
    with Warehouse(path) as wh:
        [old] = wh.read("eval_items", EvalItem)
        assert (old.kg_setting, old.ikg_level, old.view_id, old.n_text_calls) == ("complete", None, "", 0)
        assert old.hit1_any and old.item_key == "k" and old.path_coverage == 0.5
        ikg = old.model_copy(update={"kg_setting": "incomplete", "ikg_level": 0.4, "view_id": "q@ikg-40",
                                     "n_text_calls": 2})
        wh.write("eval_items", [ikg])  # the same question, run and mode in another setting: a second row
        wh.write("eval_items", [ikg.model_copy(update={"n_text_calls": 3})], replace=True)
        rows = wh.query("SELECT view_id, n_text_calls FROM eval_items ORDER BY view_id")
    assert rows == [{"view_id": "", "n_text_calls": 0}, {"view_id": "q@ikg-40", "n_text_calls": 3}]
