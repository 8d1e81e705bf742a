"""The whole factory once, every role on the loopback fake: corpus -> graph -> questions -> gold paths ->
trajectories -> export -> evaluation. Checks the wiring between stages; each stage's rules are tested in its own
file."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

from schemas.config import load_settings
from tasks.graph.importers import read_triples
from testing.permissive_profiles import store_one_each_way
from tests.test_graph_build import extraction_reply
from tests.test_qa_flow import _candidates, _prompt, _seed, good_pick

N_SEEDS = 20  # enough singleton split groups for the 80/10/10 shares to put two questions in test
WRONG = "Nowhere Land"  # no entity of the cs graph
DEMO_GRAPHS = Path(__file__).resolve().parent.parent / "flows" / "demo" / "graphs"


class ScriptedPolicy:
    """The ``policy`` role (its own model name, so no other role reaches it). The generator's picks record each
    question's gold answer. With tools, the first question asked is answered right and every later one with
    ``WRONG``; without tools, every question gets its gold answer with its case swapped (right under the lenient
    normaliser, wrong under the strict one)."""

    def __init__(self) -> None:
        self.gold: dict[str, str] = {}  # seed -> the last node of the picked path
        self.right: dict[str, str] = {}  # mode -> the one question answered right
        self.lock = threading.Lock()

    def pick(self, body):
        out = good_pick(body)
        self.gold[_seed(body)] = _candidates(body)[out["path_id"]][-1]
        return out

    def answer(self, body):
        prompt = _prompt(body)
        seed = re.search(r"Starting from (.+?), which entity", prompt).group(1)
        gold = self.gold[seed]
        if "Answer the question from what you know." in prompt:
            return f"<answer>{gold.swapcase()}</answer>"
        with self.lock:
            first = self.right.setdefault("tools", seed)
        return f"<think>I know this one.</think><answer>{gold if seed == first else WRONG}</answer>"


def test_factory_end_to_end_on_the_fake(prefect_harness, fake_llm, tmp_path):
    from flows.factory import factory
    from warehouse.db import Warehouse

    policy = ScriptedPolicy()
    fake_llm.add(predicate=lambda b: b.get("model") == "policy-model", reply=policy.answer)
    fake_llm.add(schema_name="qa_pick_path", reply=policy.pick)
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    fake_llm.add(predicate=lambda b: "---Input Text---" in json.dumps(b["messages"]), reply=extraction_reply)
    roles = {r: {"base_url": fake_llm.base_url, "model": "policy-model" if r == "policy" else "fake-model",
                 "max_retries": 0, "timeout_s": 10}
             for r in ("extractor", "generator", "verifier", "teacher", "judge", "policy")}
    settings = load_settings(data_dir=tmp_path, roles=roles,
                             embeddings={"base_url": fake_llm.base_url, "model": "e", "dim": 16})
    # The wiring, not what may be asked, is tested here: the user's profiles (as `hopforge graph profiles import`
    # stores them before a run) say every relation of the cs graph names one thing each way. With the shipped
    # lexicon only 8 of the demo cs graph's seeds can start a path and few 3+ hop paths can be asked, far too few
    # questions to put two in the test split; test_qa_checks and test_qa_flow cover what the lexicon lets through.
    with Warehouse(settings.warehouse_path) as wh:
        store_one_each_way(wh, [read_triples(DEMO_GRAPHS / "cs.jsonl", "cs").to_graph()])
    out = factory(domains=["cs"], n_seeds=N_SEEDS, free_seeds=0, n_rollouts=1, settings=settings, build_docs=1,
                  deep_questions=2, batch_size=4,
                  distill_limits={"max_rounds": 3, "max_tokens_per_round": 200, "cot_max_tokens": 200})
    # the fake extractor knows none of the demo entities: the built graph is empty, so the reference graph is used
    assert any(line.startswith("cs:") and "reference graph" in line for line in out["graph_choice"])
    # LightRAG read one document of the domain's five, and one line says what it gave
    assert out["build"]["built"]["cs"]["documents"] == 1
    assert out["build_line"].startswith("LightRAG read 1 document(s) per domain (1 in all): ")
    assert out["build_line"].endswith("later stages use the reference graphs")
    assert list(out["timings"]) == ["graph build", "graph import", "questions", "gold paths", "trajectories",
                                    "rollouts and long CoT", "export", "evaluation"]
    assert all(v >= 0 for v in out["timings"].values())
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        notes = [r["note"] for r in wh.query("SELECT note FROM qa_job_notes")]
        batched = sorted((r["flow"], json.loads(r["parameters"])["batch_size"]) for r in wh.query(
            "SELECT flow, parameters FROM runs "
            "WHERE flow IN ('verify-paths', 'distill-trajectories', 'evaluate-policy')"))
    # the factory's batch size reaches every stage that batches per endpoint concurrency
    assert batched == [("distill-trajectories", 4), ("distill-trajectories", 4), ("evaluate-policy", 4),
                       ("verify-paths", 4)]
    # every seed's job gives a question, or a note that its subgraph offers no candidate path (a seed such as a county,
    # whose every path starts "the place that lies in Buckinghamshire", offers none)
    n = out["qa"][0]["accepted"]
    assert n + len(notes) == N_SEEDS and n >= N_SEEDS - 3
    assert all("candidate path" in note for note in notes), notes
    assert out["gold_paths"]["questions"] == n
    assert out["trajectories"]["made"] == n  # a template trajectory for every question
    assert [r["kind"] for r in out["trajectories"]["by_kind"]] == ["template"]
    # rollouts and long CoT on two questions only: 1 rollout and 1 CoT each, every reject with its reason
    deep = out["deep_trajectories"]
    assert (deep["questions"], deep["made"]) == (2, 4)
    assert [(r["kind"], r["questions"], r["trajectories"]) for r in deep["by_kind"]] == [
        ("rollouts", 2, 2), ("cot", 2, 2)]
    assert all(r["rejected"] == 0 or r["reject_reasons"] for r in deep["by_kind"])
    assert out["splits"] == {s: c for s, c in out["splits"].items() if c} and sum(out["splits"].values()) == n
    export = Path(out["export"]["path"])
    manifest = json.loads((export / "manifest.json").read_text())
    assert sum(out["export"]["rows"]["qa"].values()) == n
    assert list((export / "qa").glob("*.parquet")) and manifest
    assert [r["domain"] for r in out["graph_reports"]] == ["cs"]

    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        splits = {r["split"]: r["n"] for r in wh.query("SELECT split, count(*) AS n FROM qa GROUP BY split")}
        test_qa = wh.query("SELECT qa_id, seed, answer FROM qa WHERE split = 'test' ORDER BY qa_id")
        items = wh.query("SELECT qa_id, mode, prediction, em, em_strict, f1, f1_strict, hit1_first, hit1_any "
                         "FROM eval_items "
                         "ORDER BY mode, qa_id")
    # unlinked questions: 80/10/10 of them, rounded
    assert sum(splits.values()) == n and splits["test"] == splits["validation"] == round(0.1 * n)
    n_test = len(test_qa)
    # the picks the generator made are the stored answers
    assert {q["seed"]: q["answer"] for q in test_qa} == {q["seed"]: policy.gold[q["seed"]] for q in test_qa}

    # evaluation ran on the test split, both modes, every test question once per mode
    assert sorted((i["mode"], i["qa_id"]) for i in items) == sorted(
        (m, q["qa_id"]) for m in ("no_tools", "tools") for q in test_qa)
    right = policy.right["tools"]
    assert right in {q["seed"] for q in test_qa}
    gold = {q["qa_id"]: q["answer"] for q in test_qa}
    seed_of = {q["qa_id"]: q["seed"] for q in test_qa}
    for i in items:
        if i["mode"] == "no_tools":
            assert i["prediction"] == gold[i["qa_id"]].swapcase() != gold[i["qa_id"]]
            assert (i["em"], i["em_strict"], i["f1"], i["f1_strict"], i["hit1_first"], i["hit1_any"]) == (
                True, False, 1.0, 0.0, True, True)
        else:
            hit = seed_of[i["qa_id"]] == right
            assert i["prediction"] == (gold[i["qa_id"]] if hit else WRONG)
            assert (i["em"], i["em_strict"], i["f1"], i["f1_strict"], i["hit1_first"], i["hit1_any"]) == (
                hit, hit, float(hit), float(hit), hit, hit)

    by_mode = out["eval"]["by_mode"]
    # tools: one of the two test questions right -> EM = F1 = Hit@1 (both meanings) = 1/2
    tools = by_mode["tools"]
    assert (tools["n"], tools["errors"]) == (n_test, 0)
    assert (tools["em"], tools["em_strict"], tools["f1"], tools["f1_strict"], tools["hit1_first"],
            tools["hit1_any"]) == (0.5, 0.5, 0.5, 0.5, 0.5, 0.5)
    # no tools: both answers are the gold with its case swapped -> 1.0 under the lenient normaliser, 0.0 under the strict
    closed = by_mode["no_tools"]
    assert (closed["n"], closed["errors"]) == (n_test, 0)
    assert (closed["em"], closed["f1"], closed["hit1_first"], closed["hit1_any"]) == (1.0, 1.0, 1.0, 1.0)
    assert (closed["em_strict"], closed["f1_strict"]) == (0.0, 0.0)
