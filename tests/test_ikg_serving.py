"""IKG views served by the tool server (over HTTP, with its token), views from an export's rows, the verl tool class
passing the row's view id, and text_search counting as a web hit in Graph-RFT's reward."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from flows.tool_server import create_app
from flows.tools_env import export_views, tool_environment, warehouse_views
from schemas.config import load_settings
from schemas.qa import QA
from tasks.corpus.ingest import ingest_text_folders
from tasks.distill.template import lists_entity
from tasks.env.ikg import IKGError, ViewRegistry, make_view, parse_view_id
from tasks.env.index import HashingEmbedder
from tasks.env.text_search import TextIndex, chunks_from_ingest
from tasks.env.tools import ToolEnvironment
from tasks.graph.importers import read_triples
from tasks.qa.context import path_edges
from tasks.export.rows import qa_row
from training.rewards import GroundTruth, get_reward
from warehouse.corpus import write_ingest
from warehouse.db import Warehouse
from warehouse.graphs import write_import

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "flows" / "demo"
TOKEN = "ikg-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TOOLS = ("entity_matcher", "node_info", "neighbor_search", "web_search")


@pytest.fixture(scope="module")
def env() -> ToolEnvironment:
    graph = read_triples(DEMO / "graphs" / "cs.jsonl", "cs").to_graph(snapshot_id="cs-snap")
    text = TextIndex(chunks_from_ingest(ingest_text_folders(DEMO / "corpus" / "cs"), "cs"), HashingEmbedder(), name="cs")
    return ToolEnvironment.from_graphs([graph], HashingEmbedder(), tools=TOOLS, texts={"cs": text})


@pytest.fixture(scope="module")
def question(env) -> QA:
    """A 2-hop question (On Computable Numbers -> Alan Turing -> King's College, Cambridge)."""
    graph = env.indexes["cs"].graph
    path = ["On Computable Numbers", "Alan Turing", "King's College, Cambridge"]
    return QA(qa_id="qa-turing", domain="cs", snapshot_id="cs-snap", seed=path[0], hop_class="1-2", path=path,
              path_edges=path_edges(graph, path), question="Which college did the author of On Computable Numbers "
              "study at?", answer=path[-1], split="train")  # fmt: skip


@pytest.fixture
def client(env, question):
    views = ViewRegistry(questions={question.qa_id: question}, graphs={"cs": env.indexes["cs"].graph})
    with TestClient(create_app(env, token=TOKEN, views=views)) as c:
        yield c


def test_a_view_answers_no_information_and_web_search_reads_the_fact(client, env, question):
    view = make_view(env.indexes["cs"].graph, question.qa_id, question.path_edges, 0.4)  # 1 of 2 triples
    hidden = view.facts[0]
    args = {"entity": hidden.head, "relation": hidden.relation, "graph_type": "cs"}
    complete = client.post("/tools/neighbor_search", json=args, headers=AUTH).json()
    assert complete["ok"] and hidden.tail in complete["rendered_content"]
    seen = client.post("/tools/neighbor_search", params={"view_id": view.view_id}, json=args, headers=AUTH)
    assert seen.status_code == 200
    body = seen.json()
    assert body["ok"] is False and body["error_kind"] == "no_match"
    assert body["rendered_content"].startswith(f"No information in the KG about {hidden.head}")
    assert hidden.tail not in body["rendered_content"]
    # node_info on the view leaves the hidden neighbour out; the complete graph still shows it
    node = {"node_name": hidden.head, "graph_type": "cs"}
    in_view = client.post("/tools/node_info", params={"view_id": view.view_id}, json=node, headers=AUTH).json()
    assert in_view["ok"] and not lists_entity(in_view["rendered_content"], hidden.tail)
    assert lists_entity(client.post("/tools/node_info", json=node, headers=AUTH).json()["rendered_content"], hidden.tail)
    web = client.post("/tools/web_search", params={"view_id": view.view_id},
                      json={"query": hidden.query(), "graph_type": "cs"}, headers=AUTH).json()  # fmt: skip
    assert web["ok"] and web["rendered_content"].startswith("Passages for") and hidden.tail in web["rendered_content"]
    # the token still guards every route, views included
    assert client.post("/tools/neighbor_search", params={"view_id": view.view_id}, json=args).status_code == 401


@pytest.mark.parametrize("view_id", ["qa-nobody@ikg-40", "qa-turing@ikg-140", "not a view", "qa-turing@ikg-"])
def test_an_unknown_view_id_is_a_tool_error_the_model_reads(client, view_id):
    reply = client.post("/tools/node_info", params={"view_id": view_id},
                        json={"node_name": "Alan Turing", "graph_type": "cs"}, headers=AUTH)  # fmt: skip
    assert reply.status_code == 200
    body = reply.json()
    assert body["ok"] is False and body["error_kind"] == "unknown_view"
    assert "'<qa_id>@ikg-40'" in body["rendered_content"] and "\n" not in body["rendered_content"]
    assert client.get("/health", headers=AUTH).json()["status"] == "ok"  # the server is still up


def test_a_server_without_views_says_so():
    graph = read_triples(DEMO / "graphs" / "cs.jsonl", "cs").to_graph()
    with TestClient(create_app(ToolEnvironment.from_graphs([graph], HashingEmbedder()))) as c:
        body = c.post("/tools/node_info", params={"view_id": "q@ikg-40"},
                      json={"node_name": "Alan Turing", "graph_type": "cs"}).json()  # fmt: skip
    assert body == {"rendered_content": "unknown IKG view 'q@ikg-40': this server serves no IKG views", "ok": False,
                    "error_kind": "unknown_view"}


def test_view_ids_parse_and_views_come_from_export_rows(env, question):
    assert parse_view_id("qa-x@ikg-40") == ("qa-x", 0.4) and parse_view_id("a@b@ikg-20") == ("a@b", 0.2)
    with pytest.raises(IKGError, match="is not an IKG view id"):
        parse_view_id("qa-x@ikg-0")
    graph = env.indexes["cs"].graph
    view = make_view(graph, question.qa_id, question.path_edges, 0.4)
    row = {**qa_row(question, [], view)}
    registry = export_views([qa_row(question, []), row], {"cs": graph})
    assert len(registry) == 1 and registry.get(view.view_id) == view and registry.domain(view.view_id) == "cs"
    tampered = {**row, "hidden_triples": [["x", "y", "z"]]}
    with pytest.raises(IKGError, match="hides other triples than the export says"):
        export_views([tampered], {"cs": graph})


def test_serve_tools_environment_loads_texts_and_warehouse_views(tmp_path, question):
    settings = load_settings(data_dir=tmp_path)
    with Warehouse(settings.warehouse_path) as wh:
        snap = write_import(wh, read_triples(DEMO / "graphs" / "cs.jsonl", "cs"), build_run_id=None)
        write_import(wh, read_triples(DEMO / "graphs" / "history.jsonl", "history"), build_run_id=None)
        write_ingest(wh, ingest_text_folders(DEMO / "corpus" / "cs"), "run-1")
        qa = question.model_copy(update={"snapshot_id": snap.snapshot_id})
        wh.write_batch("qa", [qa])
        env = tool_environment(settings, wh, embedder="hashing")
        views = warehouse_views(wh, env)
    assert "web_search" in env.tool_names and set(env.texts) == {"cs"}  # history has no corpus
    assert env.call("web_search", {"query": "Alan Turing studied at", "graph_type": "cs"}).ok
    assert not env.call("web_search", {"query": "Rome", "graph_type": "history"}).ok
    made = views.get(f"{qa.qa_id}@ikg-40")  # made on demand from the question and the level
    assert made == make_view(env.indexes["cs"].graph, qa.qa_id, qa.path_edges, 0.4) and views.domain(made.view_id) == "cs"
    with pytest.raises(IKGError, match="unknown IKG view 'qa-other@ikg-40'"):
        views.get("qa-other@ikg-40")


def test_text_search_counts_as_a_web_hit_in_graph_rfts_reward():
    truth = GroundTruth(answers=["Cambridge"], kg_setting="incomplete")
    for name in ("web_search", "text_search"):
        call = json.dumps({"name": name, "arguments": {"query": "Turing college", "graph_type": "cs"}})
        text = f"<tool_call>{call}</tool_call><tool_response>King's College, Cambridge</tool_response><answer>Oxford</answer>"
        r = get_reward("graph_rft")(text, truth)
        assert r.web_hit and r.score == pytest.approx(0.1), name
    other = json.dumps({"name": "entity_matcher", "arguments": {"node_name": "Turing", "graph_type": "cs"}})
    r = get_reward("graph_rft")(f"<tool_call>{other}</tool_call><tool_response>Cambridge</tool_response>"
                                "<answer>Oxford</answer>", truth)
    assert not r.web_hit and r.score == pytest.approx(-0.1)


VERL_SIDE = textwrap.dedent("""
    import asyncio, json, sys
    import httpx
    from verl.tools.schemas import OpenAIFunctionToolSchema
    from schemas.tools import tool_schema
    from training.launch import verl_tools

    seen = []

    def handler(request):
        seen.append({"path": request.url.path, "params": dict(request.url.params), "body": json.loads(request.content)})
        return httpx.Response(200, json={"rendered_content": "No information in the KG", "ok": False,
                                         "error_kind": "no_match"})

    tool = verl_tools.HopforgeKGTool({"server_url": "http://127.0.0.1:9", "retries": 0},
                                     OpenAIFunctionToolSchema.model_validate(tool_schema("neighbor_search")))
    tool._client = lambda: httpx.AsyncClient(base_url=tool.server_url, transport=httpx.MockTransport(handler))

    async def go():
        ikg, _ = await tool.create(create_kwargs={"graph_type": "cs", "view_id": "qa-1@ikg-40"})
        full, _ = await tool.create(create_kwargs={"graph_type": "cs", "view_id": None})
        args = {"entity": "Alan Turing", "relation": "studied at"}
        reply, _, metrics = await tool.execute(ikg, dict(args))
        await tool.execute(full, dict(args))
        await tool.release(ikg)
        return reply.text, metrics

    text, metrics = asyncio.run(go())
    print(json.dumps({"seen": seen, "text": text, "ok": metrics["ok"]}))
""")


@pytest.mark.train_smoke  # needs the verl environment, which `make train-smoke` builds
def test_the_verl_tool_class_sends_the_rows_view_id():
    python = ROOT / ".venvs" / "verl" / "bin" / "python"
    assert python.exists(), "the verl environment is not built: make trainer-env T=verl"
    done = subprocess.run([str(python), "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + VERL_SIDE],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    ikg, full = out["seen"]
    assert ikg["path"] == "/tools/neighbor_search" and ikg["params"] == {"view_id": "qa-1@ikg-40"}
    assert ikg["body"] == {"entity": "Alan Turing", "relation": "studied at", "graph_type": "cs"}
    assert full["params"] == {} and out["text"] == "No information in the KG" and out["ok"] is False
