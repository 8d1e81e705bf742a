"""Policy evaluation: metrics on hand-made cases, one item per mode against the loopback fake, then the flow."""

from __future__ import annotations

import json
from typing import Any

import pytest

from eval.evaluate import EvalConfig, evaluate_item, gold_triples
from eval.metrics import aggregate, em, f1, hit1, summarize
from gateway.client import LLMGateway
from testing.fake import Fault
from schemas.config import load_settings
from schemas.errors import InputError
from tests.test_trajectories import GRAPHS, THREE_HOP, TWO_HOP, gold_for, make_qa

ONE_HOP = (["Alan Turing", "King's College, Cambridge"], "Where did Alan Turing study?")
KINGS = "King's College, Cambridge"


# -- metrics -------------------------------------------------------------------------------------------------------


def test_metrics_on_hand_made_cases():
    gold = [KINGS]
    assert em(" 'king's  college, CAMBRIDGE.' ", gold) and em(f'["{KINGS}"]', gold)
    assert not em(f'["{KINGS}", "Bletchley Park"]', gold) and not em(None, gold) and not em("", gold)
    assert f1(f'["{KINGS}", "Bletchley Park"]', gold) == pytest.approx(2 / 3)
    assert f1('["a", "b"]', ["b", "c"]) == pytest.approx(0.5) and f1(None, gold) == 0.0
    assert hit1(f'["{KINGS}", "Bletchley Park"]', gold)  # the first entity is right
    assert not hit1(f'["Bletchley Park", "{KINGS}"]', gold) and not hit1(None, gold) and not hit1("[]", gold)
    assert hit1('["", "B"]', ["b"])  # empty items are dropped before taking the first


def test_aggregate_groups_sorted_with_counts():
    rows = [
        {"domain": "cs", "hop_class": "3+", "em": True, "f1": 1.0, "hit1": True, "judge_valid": None,
         "n_rounds": 3, "repeated_calls": 1, "end_reason": "answer", "path_coverage": 0.5},
        {"domain": "cs", "hop_class": "1-2", "em": False, "f1": 0.5, "hit1": True, "judge_valid": True,
         "n_rounds": 1, "repeated_calls": 0, "end_reason": "answer", "path_coverage": 0.0},
        {"domain": "bio", "hop_class": "1-2", "em": False, "f1": 0.0, "hit1": False, "judge_valid": False,
         "n_rounds": 0, "repeated_calls": 0, "end_reason": "error", "path_coverage": 0.0},
        {"domain": "cs", "hop_class": "1-2", "em": True, "f1": 1.0, "hit1": True, "judge_valid": None,
         "n_rounds": 2, "repeated_calls": 0, "end_reason": "answer", "path_coverage": 1.0},
    ]  # fmt: skip
    agg = aggregate(rows)
    assert [(r["domain"], r["hop_class"], r["n"]) for r in agg] == [("bio", "1-2", 1), ("cs", "1-2", 2), ("cs", "3+", 1)]
    cs12 = agg[1]
    assert (cs12["em"], cs12["f1"], cs12["hit1"], cs12["judge_acc"], cs12["n_judged"]) == (0.5, 0.75, 1.0, 1.0, 1)
    assert agg[0]["errors"] == 1 and agg[2]["judge_acc"] is None and agg[2]["mean_repeats"] == 1.0
    total = summarize(rows)
    assert total["n"] == 4 and total["em"] == 0.5 and total["judge_acc"] == 0.5 and total["mean_rounds"] == 1.5
    assert summarize([])["n"] == 0 and aggregate([]) == []


# -- items against the fake ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kg():
    from tasks.graph.importers import read_triples

    return read_triples(GRAPHS / "cs.jsonl", "cs").to_graph()


@pytest.fixture(scope="module")
def env(kg):
    from tasks.env.index import HashingEmbedder
    from tasks.env.tools import ToolEnvironment

    return ToolEnvironment.from_graphs([kg], HashingEmbedder(), tools=("entity_matcher", "node_info"))


def roles(fake) -> dict[str, Any]:
    role = {"base_url": fake.base_url, "model": "fake-model", "max_retries": 0, "timeout_s": 10}
    return {"policy": role, "judge": {**role, "model": "fake-judge"}}


def gateway(fake, tmp_path) -> LLMGateway:
    settings = load_settings(data_dir=tmp_path, roles=roles(fake), cache={"mode": "off"}, max_reasks=0)
    return LLMGateway(settings, backoff_base_s=0.01, backoff_cap_s=0.02)


def policy(paths: dict[str, list[str]], tool_answers: dict[str, str], closed_book: dict[str, str]):
    """A scripted policy. With tools: one node_info call on the node before the answer, then the scripted answer
    (the gold one unless ``tool_answers`` says otherwise). Closed book: ``closed_book`` or "Bletchley Park". With
    the gold facts in the prompt: the gold answer, naming the facts in its reasoning."""

    def reply(body: dict[str, Any]) -> str:
        msgs = body["messages"]
        system = msgs[0]["content"]
        user = next(m["content"] for m in msgs if m["role"] == "user")
        if "<tools>" in system:
            path = paths[user]
            if not any(m["role"] == "assistant" for m in msgs):
                return f'<tool_call>node_info(node_name={json.dumps(path[-2])}, graph_type="cs")</tool_call>'
            return f"<answer>{tool_answers.get(user, path[-1])}</answer>"
        if user.startswith("Facts:"):
            question = user.split("Question: ", 1)[1]
            p = paths[question]
            return f"<think>{p[-2]} studied at {p[-1]}.</think><answer>{p[-1]}</answer>"
        return f"<answer>{closed_book.get(user, 'Bletchley Park')}</answer>"

    return reply


async def test_each_mode_scores_one_item(fake_llm, tmp_path, kg, env):
    qa = make_qa(kg, *TWO_HOP, split="test")
    fake_llm.add(reply=policy({qa.question: qa.path}, {}, {}))
    gw = gateway(fake_llm, tmp_path)
    tools = await evaluate_item(gw, env, qa, "tools", EvalConfig(), gold_for(qa), run_id="r")
    assert (tools.prediction, tools.em, tools.f1, tools.hit1, tools.end_reason) == (KINGS, True, 1.0, True, "answer")
    assert tools.n_rounds == 1 and tools.repeated_calls == 0 and tools.run_id == "r" and tools.answers == [KINGS]
    assert tools.judge_valid is None  # the judge is off by default
    closed = await evaluate_item(gw, None, qa, "no_tools")
    assert (closed.prediction, closed.em, closed.f1, closed.hit1, closed.n_rounds) == ("Bletchley Park", False, 0.0, False, 0)
    upper = await evaluate_item(gw, None, qa, "gold_context", gold_paths=gold_for(qa))
    assert upper.em and upper.path_coverage == 0.5  # the reasoning names the studied-at triple, not the other
    prompt = fake_llm.requests[-1].json["messages"][-1]["content"]
    assert "Alan Turing | studied at | King's College, Cambridge" in prompt
    assert gold_triples(qa, []) == [[e.triple() for e in qa.path_edges]]  # no stored paths: the question's own
    with pytest.raises(ValueError, match="unknown mode"):
        await evaluate_item(gw, env, qa, "oracle")


async def test_endpoint_fault_is_an_error_item_not_a_crash(fake_llm, tmp_path, kg, env):
    qa = make_qa(kg, *TWO_HOP, split="test")
    fake_llm.add(reply="x", fault=Fault(status=503))
    gw = gateway(fake_llm, tmp_path)
    for mode in ("tools", "no_tools", "gold_context"):
        item = await evaluate_item(gw, env, qa, mode, EvalConfig(use_judge=True), gold_for(qa))
        assert item.end_reason == "error" and item.error and item.prediction is None
        assert (item.em, item.f1, item.hit1, item.path_coverage, item.judge_valid) == (False, 0.0, False, 0.0, None)


async def test_judge_rules_only_when_em_fails(fake_llm, tmp_path, kg):
    qa = make_qa(kg, *TWO_HOP, split="test")
    fake_llm.add(schema_name="judge_verdict", reply={"correct": True, "reason": "King's is the college meant."})
    fake_llm.add(reply=policy({qa.question: qa.path}, {}, {qa.question: "King's College"}))
    gw = gateway(fake_llm, tmp_path)
    item = await evaluate_item(gw, None, qa, "no_tools", EvalConfig(use_judge=True))
    assert not item.em and item.judge_valid is True and "college" in item.judge_reason
    judged = [r for r in fake_llm.requests if r.json["model"] == "fake-judge"]
    assert len(judged) == 1 and "Gold answer: King's College, Cambridge" in judged[0].json["messages"][-1]["content"]
    up = await evaluate_item(gw, None, qa, "gold_context", EvalConfig(use_judge=True), gold_for(qa))
    assert up.em and up.judge_valid is True  # EM needs no judge call
    assert len([r for r in fake_llm.requests if r.json["model"] == "fake-judge"]) == 1


async def test_a_checkpoint_is_evaluated_in_the_context_it_was_trained_in(fake_llm, tmp_path, kg, env):
    """for_checkpoint: the tools go through the chat template (the contract, in the request), the system prompt is
    the export's, and on think rows each earlier turn goes back with its <think> block."""
    from schemas.tools import OMNE_TOOLS, tool_schemas
    from tasks.export.rows import tool_system_prompt

    qa = make_qa(kg, *TWO_HOP, split="test")
    call = '<tool_call>\n{"name": "node_info", "arguments": {"node_name": "Alan Turing", "graph_type": "cs"}}\n</tool_call>'

    def reply(body: dict[str, Any]) -> str:
        done = any(m["role"] == "assistant" for m in body["messages"])
        return f"<think>Then {KINGS}.</think><answer>{KINGS}</answer>" if done else f"<think>Turing first.</think>{call}"

    fake_llm.add(reply=reply)
    gw = gateway(fake_llm, tmp_path)
    for trained_as, think in (("think", True), ("no_think", False)):
        before = len(fake_llm.requests)
        item = await evaluate_item(gw, env, qa, "tools", EvalConfig.for_checkpoint(trained_as), gold_for(qa))
        assert item.em and item.n_rounds == 1
        first, second = (r.json for r in fake_llm.requests[before:before + 2])
        assert first["tools"] == tool_schemas(OMNE_TOOLS)
        assert first["messages"][0]["content"] == tool_system_prompt("cs", OMNE_TOOLS, think=think)
        sent = second["messages"][2]["content"]
        assert sent == ("<think>\nTuring first.\n</think>\n\n" + call if think else call)
    with pytest.raises(InputError, match="trained_as must be think or no_think"):
        EvalConfig.for_checkpoint("maybe")  # type: ignore[arg-type]


# -- the flow --------------------------------------------------------------------------------------------------------


def build_eval_warehouse(settings):
    """The demo cs graph as the current snapshot and three test questions (two 1-2 hop, one 3+) with gold paths."""
    from warehouse.graphs import write_snapshot
    from tasks.graph.importers import read_triples
    from warehouse.db import Warehouse

    imported = read_triples(GRAPHS / "cs.jsonl", "cs")
    with Warehouse(settings.warehouse_path) as wh:
        snap = write_snapshot(wh, "cs", imported.entities, imported.relations, source="triples", build_run_id=None,
                              directed=imported.directed)  # fmt: skip
        kg = imported.to_graph(snapshot_id=snap.snapshot_id)
        qas = [make_qa(kg, *spec, split="test") for spec in (ONE_HOP, TWO_HOP, THREE_HOP)]
        qas.append(make_qa(kg, ONE_HOP[0], "Which college did Alan Turing attend?", split="train"))
        wh.write_batch("qa", qas)
        wh.write_batch("gold_paths", [g for q in qas for g in gold_for(q)])
    return qas


def test_evaluate_flow_writes_items_runs_and_per_hop_metrics(prefect_harness, fake_llm, tmp_path):
    from flows.evaluate import evaluate_policy
    from warehouse.db import Warehouse

    settings = load_settings(data_dir=tmp_path, roles=roles(fake_llm),
                             embeddings={"base_url": fake_llm.base_url, "model": "fake-embed", "dim": 16})
    qas = build_eval_warehouse(settings)
    one = qas[0]
    # tools: right on the 2- and 3-hop questions, a hedge with the right entity first on the 1-hop one;
    # closed book: right only on the 1-hop question
    fake_llm.add(reply=policy({q.question: q.path for q in qas}, {one.question: f'["{KINGS}", "Bletchley Park"]'},
                              {one.question: KINGS}))  # fmt: skip

    out = evaluate_policy(settings=settings, batch_size=4)
    tools, closed = out["by_mode"]["tools"], out["by_mode"]["no_tools"]
    assert tools["n"] == 3 and tools["em"] == pytest.approx(0.6667) and tools["hit1"] == 1.0
    assert tools["f1"] == pytest.approx((2 / 3 + 2) / 3, abs=1e-3) and tools["mean_rounds"] == 1.0
    assert closed["n"] == 3 and closed["em"] == closed["f1"] == closed["hit1"] == pytest.approx(0.3333)
    assert closed["mean_rounds"] == 0.0 and tools["errors"] == closed["errors"] == 0
    table = {(r["mode"], r["hop_class"]): r for r in out["table"]}
    assert [(r["mode"], r["hop_class"]) for r in out["table"]] == [
        ("tools", "1-2"), ("tools", "3+"), ("tools", "all"), ("no_tools", "1-2"), ("no_tools", "3+"), ("no_tools", "all")]
    assert table[("tools", "1-2")]["n"] == 2 and table[("tools", "1-2")]["em"] == 0.5
    assert table[("tools", "1-2")]["f1"] == pytest.approx(0.8333) and table[("tools", "3+")]["em"] == 1.0
    assert table[("no_tools", "1-2")]["em"] == 0.5 and table[("no_tools", "3+")]["em"] == 0.0

    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        items = wh.query("SELECT * FROM eval_items WHERE run_id = ? ORDER BY mode, qa_id", [out["run_id"]])
        runs = wh.query("SELECT * FROM eval_runs WHERE run_id = ? ORDER BY mode", [out["run_id"]])
        status = wh.scalar("SELECT status FROM runs WHERE run_id = ?", [out["run_id"]])
    assert len(items) == 6 and {i["qa_id"] for i in items} == {q.qa_id for q in qas[:3]}  # the train one is left out
    assert all(json.loads(i["answers"]) == [KINGS] or i["hop_class"] == "3+" for i in items)
    assert [(r["mode"], r["n_items"], r["model"], r["split"]) for r in runs] == [
        ("no_tools", 3, "fake-model", "test"), ("tools", 3, "fake-model", "test")]
    assert runs[1]["em"] == pytest.approx(0.6667) and runs[1]["judge_acc"] is None and status == "completed"

    calls = fake_llm.calls()
    again = evaluate_policy(modes=["no_tools"], limit=2, settings=settings)  # a new run: the cache answers
    assert again["by_mode"]["no_tools"]["n"] == 2 and fake_llm.calls() == calls and again["run_id"] != out["run_id"]
    train = evaluate_policy(split="train", modes=["no_tools"], settings=settings)
    assert train["by_mode"]["no_tools"]["n"] == 1 and fake_llm.calls() == calls + 1
    with pytest.raises(ValueError, match=r"modes \(--mode\) must be tools, no_tools or gold_context, got 'oracle'"):
        evaluate_policy(modes=["oracle"], settings=settings)  # the parameter model refuses it, as the CLI does
    with pytest.raises(ValueError, match=r"modes \(--mode\) needs at least 1 value"):
        evaluate_policy(modes=[], settings=settings)  # a valid type, refused by the flow's own check


def test_a_served_checkpoint_run_records_its_server_and_format(prefect_harness, fake_llm, tmp_path):
    from flows.evaluate import evaluate_policy
    from warehouse.db import Warehouse

    settings = load_settings(data_dir=tmp_path, roles=roles(fake_llm),
                             embeddings={"base_url": fake_llm.base_url, "model": "fake-embed", "dim": 16})
    qas = build_eval_warehouse(settings)
    fake_llm.add(reply=f"<answer>{KINGS}</answer>")
    serving = {"server": "vllm", "vllm_version": "0.24.0", "checkpoint": "/runs/sft/output",
               "chat_format": {"kind": "think", "enable_thinking": True}}  # fmt: skip
    out = evaluate_policy(modes=["tools"], limit=1, trained_as="think", serving=serving, settings=settings)
    assert out["serving"] == serving and out["by_mode"]["tools"]["n"] == 1
    assert fake_llm.requests[-1].json["tools"]  # a checkpoint gets its tools through the chat template
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        params = json.loads(wh.scalar("SELECT parameters FROM runs WHERE run_id = ?", [out["run_id"]]))
    assert params["serving"] == serving and params["trained_as"] == "think"
    assert qas


def test_first_request_is_what_the_evaluation_sends_first(prefect_harness, fake_llm, tmp_path):
    """``first_request`` (what a served checkpoint's prompts are measured on) is the request the tool loop and the
    closed-book baseline really send first: the same messages, tools and max_tokens."""
    from eval.evaluate import first_request
    from flows.evaluate import evaluate_policy
    from schemas.tools import OMNE_TOOLS, tool_schemas

    settings = load_settings(data_dir=tmp_path, roles=roles(fake_llm),
                             embeddings={"base_url": fake_llm.base_url, "model": "fake-embed", "dim": 16})
    qa = build_eval_warehouse(settings)[0]
    fake_llm.add(reply=f"<answer>{KINGS}</answer>")
    for trained_as in ("think", None):
        cfg = EvalConfig.for_checkpoint(trained_as, max_tokens_per_round=700) if trained_as else EvalConfig(
            max_tokens_per_round=700)  # fmt: skip
        for mode in ("tools", "no_tools"):
            before = len(fake_llm.requests)
            evaluate_policy(modes=[mode], limit=1, trained_as=trained_as, max_tokens_per_round=700, reuse=False,
                            settings=settings.model_copy(update={"cache": settings.cache.model_copy(
                                update={"scope": f"first-{trained_as}-{mode}"})}))  # fmt: skip
            sent = next(r.json for r in fake_llm.requests[before:] if "messages" in (r.json or {}))
            want = first_request(qa, mode, cfg)
            assert sent["messages"] == want.messages and sent["max_tokens"] == want.max_tokens
            assert sent.get("tools") == want.tools
    assert first_request(qa, "tools", EvalConfig.for_checkpoint("think")).tools == tool_schemas(OMNE_TOOLS)
    assert first_request(qa, "no_tools").max_tokens == EvalConfig().max_answer_tokens


def test_a_new_checkpoint_under_a_reused_served_name_is_measured_not_replayed(prefect_harness, fake_llm, tmp_path):
    """Two checkpoints served one after the other under the same name: the second must be asked, not answered from
    the first one's cached replies or finished items (the served name alone does not tell them apart)."""
    from flows.evaluate import evaluate_policy
    from training.serve import checkpoint_fingerprint

    settings = load_settings(data_dir=tmp_path, roles=roles(fake_llm),
                             embeddings={"base_url": fake_llm.base_url, "model": "fake-embed", "dim": 16})
    build_eval_warehouse(settings)
    fake_llm.add(reply=f"<answer>{KINGS}</answer>")
    first, second = tmp_path / "ckpt-a", tmp_path / "ckpt-b"
    for d, size in ((first, 1), (second, 2)):
        d.mkdir()
        (d / "model.safetensors").write_bytes(b"w" * size)
    assert checkpoint_fingerprint(first) != checkpoint_fingerprint(second)

    def serving(d):
        return {"server": "vllm", "checkpoint": str(d), "checkpoint_fingerprint": checkpoint_fingerprint(d)}

    evaluate_policy(modes=["no_tools"], limit=1, serving=serving(first), settings=settings)
    calls = fake_llm.calls()
    evaluate_policy(modes=["no_tools"], limit=1, serving=serving(first), settings=settings)
    assert fake_llm.calls() == calls  # the same checkpoint again: reused
    evaluate_policy(modes=["no_tools"], limit=1, serving=serving(second), settings=settings)
    assert fake_llm.calls() == calls + 1  # another checkpoint: asked


def test_paper_comparable_metrics_by_hand():
    from eval.metrics import exploration, score

    s = score('["Oxford", "Cambridge"]', ["Cambridge"])
    # lenient and strict agree here; F1 = 2·(1/2·1)/(1/2+1) = 2/3; Hit@1 first misses, any hits (RoG/EoG)
    assert s["f1"] == pytest.approx(2 / 3) and s["f1_strict"] == pytest.approx(2 / 3)
    assert not s["hit1_first"] and s["hit1_any"] and not s["em"]
    s = score("the U.S.", ["US"])
    assert s["em"] and not s["em_strict"] and s["f1_strict"] == 0.0
    gold = [[("Alan Turing", "studied at", "King's College"), ("King's College", "located in", "Cambridge")]]
    observations = [
        "Entity: Alan Turing\nDescription: x\nNeighbours (2 relations with 2 entities):\n"
        "1. King's College | Alan Turing -[studied at]-> King's College\n2. Bletchley Park | worked at",
        "Entity: Alan Turing\n1. King's College | Alan Turing -[studied at]-> King's College",  # seen before
        "Entity: Oxford\n1. Thames | located in",
    ]
    e = exploration(observations, gold)
    # T_pred = 3 distinct relation lines, 1 gold triple touched of 2: efficiency 3/1, coverage 1/2 (EoG App. P)
    assert e == {"n_explored": 3, "n_gold_touched": 1, "n_gold": 2, "triple_coverage": 0.5,
                 "exploration_efficiency": 3.0}
    assert exploration([], gold)["exploration_efficiency"] is None
    rows = [{"em": True, "f1": 1.0, "hit1": True, "hit1_any": True, "judge_valid": None, "n_rounds": 2,
             "repeated_calls": 0, "end_reason": "answer", "path_coverage": 1.0, "n_tool_calls": 2,
             "triple_coverage": 0.5, "exploration_efficiency": 3.0},
            {"em": False, "f1": 0.0, "hit1": False, "hit1_any": False, "judge_valid": None, "n_rounds": 1,
             "repeated_calls": 1, "end_reason": "answer", "path_coverage": 0.0, "n_tool_calls": 4,
             "triple_coverage": 0.0, "exploration_efficiency": None}]  # fmt: skip
    total = summarize(rows)
    assert total["mean_tool_calls"] == 3.0 and total["triple_coverage"] == 0.25
    assert total["exploration_efficiency"] == 3.0 and total["n_no_gold_touched"] == 1 and total["hit1_any"] == 0.5


def test_a_rerun_copies_finished_items_by_key_and_measures_what_changed(prefect_harness, fake_llm, tmp_path, monkeypatch):
    import flows.evaluate as flow_module
    from flows.evaluate import evaluate_policy
    from warehouse.db import Warehouse

    def settings_with(**sampling):
        return load_settings(data_dir=tmp_path, roles=roles(fake_llm) | ({"policy": {**roles(fake_llm)["policy"],
                             "sampling": sampling}} if sampling else {}),
                             embeddings={"base_url": fake_llm.base_url, "model": "fake-embed", "dim": 16})  # fmt: skip

    settings = settings_with()
    qas = build_eval_warehouse(settings)
    fake_llm.add(reply=policy({q.question: q.path for q in qas}, {}, {qas[0].question: KINGS}))
    first = evaluate_policy(settings=settings, batch_size=4)
    calls = fake_llm.calls()

    def no_graphs(*a, **k):
        raise AssertionError("a rerun with every item finished loads no graph")

    monkeypatch.setattr(flow_module, "load_graph", no_graphs)
    again = evaluate_policy(settings=settings, batch_size=4)
    assert fake_llm.calls() == calls and again["run_id"] != first["run_id"]
    assert again["by_mode"] == first["by_mode"] and again["table"] == first["table"]
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        rows = {r["run_id"]: r for r in wh.query(
            "SELECT run_id, count(*) AS n, count(DISTINCT item_key) AS keys, string_agg(prediction, '|' ORDER BY mode, qa_id) AS p "
            "FROM eval_items GROUP BY run_id")}  # fmt: skip
    assert rows[first["run_id"]]["n"] == rows[again["run_id"]]["n"] == 6 == rows[again["run_id"]]["keys"]
    assert rows[first["run_id"]]["p"] == rows[again["run_id"]]["p"]
    monkeypatch.undo()

    # A question's text changes: that item alone is measured again (through the cache: the other mode's prompt
    # for it is new, so one endpoint call per new prompt).
    with Warehouse(settings.warehouse_path) as wh:
        wh.execute("UPDATE qa SET question = question || ' (in one name)' WHERE qa_id = ?", [qas[1].qa_id])
    fake_llm.add(reply=policy({q.question + " (in one name)": q.path for q in qas} | {q.question: q.path for q in qas},
                              {}, {qas[0].question: KINGS}))  # fmt: skip
    changed = evaluate_policy(settings=settings, batch_size=4, modes=["no_tools"])
    assert fake_llm.calls() == calls + 1 and changed["by_mode"]["no_tools"]["n"] == 3

    # reuse=False asks again; the cache answers, so the endpoint sees nothing new.
    assert evaluate_policy(settings=settings, batch_size=4, modes=["no_tools"], reuse=False)["by_mode"][
        "no_tools"]["n"] == 3 and fake_llm.calls() == calls + 1
    # Another sampling temperature is another policy: nothing is copied, every prompt goes to the endpoint.
    evaluate_policy(settings=settings_with(temperature=0.9), batch_size=4, modes=["no_tools"])
    assert fake_llm.calls() == calls + 1 + 3
    # With the cache off, every run is a new measurement.
    off = load_settings(data_dir=tmp_path, roles=roles(fake_llm), cache={"mode": "off"},
                        embeddings={"base_url": fake_llm.base_url, "model": "fake-embed", "dim": 16})
    evaluate_policy(settings=off, batch_size=4, modes=["no_tools"])
    assert fake_llm.calls() == calls + 1 + 3 + 3


def test_item_keys_follow_what_decides_the_result():
    from eval.evaluate import EvalItem, item_key, reusable

    qa = make_qa(read_triples_cs(), *ONE_HOP, split="test")
    cfg = EvalConfig()
    base = item_key(qa, "tools", cfg, [], {"policy": {"model": "m"}})
    assert base == item_key(qa.model_copy(update={"run_id": "other", "attempt_id": "x"}), "tools", cfg, [], {"policy": {"model": "m"}})
    different = [
        item_key(qa.model_copy(update={"question": qa.question + "?"}), "tools", cfg, [], {"policy": {"model": "m"}}),
        item_key(qa.model_copy(update={"split": "train"}), "tools", cfg, [], {"policy": {"model": "m"}}),
        item_key(qa, "no_tools", cfg, [], {"policy": {"model": "m"}}),
        item_key(qa, "tools", EvalConfig(max_rounds=3), [], {"policy": {"model": "m"}}),
        item_key(qa, "tools", EvalConfig(params={"temperature": 0.5}), [], {"policy": {"model": "m"}}),
        item_key(qa, "tools", cfg, [], {"policy": {"model": "m2"}}),
        item_key(qa, "tools", EvalConfig.for_checkpoint("think"), [], {"policy": {"model": "m"}}),
        item_key(qa, "tools", EvalConfig.for_checkpoint("no_think"), [], {"policy": {"model": "m"}}),
    ]
    # Gold paths that say what the question's own path says are the same scoring: the same key.
    assert item_key(qa, "tools", cfg, gold_for(qa), {"policy": {"model": "m"}}) == base
    assert len({base, *different}) == 1 + len(different)
    item = EvalItem(qa_id="q", mode="tools", domain="cs", hop_class="1-2", question="?", answers=["a"],
                    end_reason="answer", item_key=base)
    assert reusable(item)
    assert not reusable(item.model_copy(update={"end_reason": "error"}))
    assert not reusable(item.model_copy(update={"judge_reason": "judge failed: timeout"}))
    assert not reusable(item.model_copy(update={"item_key": None}))


def read_triples_cs():
    from tasks.graph.importers import read_triples

    return read_triples(GRAPHS / "cs.jsonl", "cs").to_graph()
