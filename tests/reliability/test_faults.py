"""Injected faults: one request in five to every role fails (429 with Retry-After, 500, a hang past the timeout,
malformed JSON, truncated output). Generation, gold paths, distillation and a judged evaluation (generator, verifier,
teacher, policy and judge) then give the same rows as a fault-free run with the same scripted answers, store nothing
twice, and retry within their bounds.
Behind the ``reliability_slow`` marker (about 45 s with the Prefect harness)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

DEMO = Path(__file__).resolve().parents[2] / "flows" / "demo"
KINDS = ("429", "500", "timeout", "malformed", "truncated")


class FaultPlan:
    """One request in five gets a fault, the kinds in turn (every kind once in 25 requests; a JSON fault due on a
    plain-text answer is moved to the next JSON answer), for the fault responders to match."""

    def __init__(self) -> None:
        self.current: str | None = None
        self.counts = dict.fromkeys(KINDS, 0)
        self.requests = 0
        self.pending: list[str] = []

    def draw(self, body: dict[str, Any]) -> bool:
        n = self.requests
        self.requests += 1
        kind = KINDS[(n // 5) % len(KINDS)] if n % 5 == 2 else None
        json_reply = _reply(body) is not None
        if kind in ("malformed", "truncated") and not json_reply:
            # a plain-text answer has no JSON to break: the next JSON answer gets it, and this request fails in
            # transport instead, so that one request in five still fails
            self.pending.append(kind)
            kind = "500"
        elif kind is None and self.pending and json_reply:
            kind = self.pending.pop(0)
        self.current = kind
        if kind:
            self.counts[kind] += 1
        return False

    def is_(self, kind: str):
        return lambda body: self.current == kind


def _reply(body: dict[str, Any]) -> Any:
    from tests.test_qa_flow import good_pick

    schema = (body.get("response_format") or {}).get("json_schema", {}).get("name")
    if schema == "qa_pick_path":
        return good_pick(body)
    if schema == "qa_judgement":
        return {"valid": True, "reason": "ok"}
    if schema == "gold_path_verdicts":
        ids = body["response_format"]["json_schema"]["schema"]["properties"]["verdicts"]["items"]["properties"][
            "path_id"]["enum"]
        return {"verdicts": [{"path_id": i, "valid": True, "reason": "the relations connect"} for i in ids]}
    if schema == "judge_verdict":
        return {"correct": "Alan Turing" in _prompt_text(body), "reason": "compared with the gold answer"}
    if schema == "template_thoughts":
        from tests.test_trajectories import good_thoughts

        return good_thoughts(body)
    return None


def _prompt_text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in body.get("messages", []))


def _policy(body: dict[str, Any]) -> bool:
    return body.get("model") == "policy-model"


def _script(fake, plan: FaultPlan | None) -> None:
    from testing.fake import Fault

    if plan is not None:
        fake.add(predicate=plan.draw, reply="never")
        fake.add(predicate=plan.is_("429"), reply="x", fault=Fault(status=429, retry_after=0.01))
        fake.add(predicate=plan.is_("500"), reply="x", fault=Fault(status=500))
        fake.add(predicate=plan.is_("timeout"), reply="x", fault=Fault(hang_s=1.5))
        for kind in ("malformed", "truncated"):
            fake.add(predicate=plan.is_(kind), reply=_reply, fault=Fault(**{kind: True}))
    for name in ("qa_pick_path", "qa_judgement", "gold_path_verdicts", "template_thoughts", "judge_verdict"):
        fake.add(schema_name=name, reply=_reply)
    fake.add(predicate=_policy, reply="<answer>Alan Turing</answer>")  # the policy answers without tools


def _run(base: Path, data: Path, fake) -> dict[str, Any]:
    import duckdb

    from flows.distill import distill_trajectories
    from flows.evaluate import evaluate_policy
    from flows.qa import generate_qa, verify_paths
    from schemas.config import load_settings

    shutil.copytree(base, data)
    roles = {r: {"base_url": fake.base_url, "model": "policy-model" if r == "policy" else "fake-model",
                 "max_retries": 6, "timeout_s": 1.0, "max_concurrency": 4}
             for r in ("generator", "verifier", "teacher", "judge", "policy")}
    settings = load_settings(data_dir=data, roles=roles, seed=5, max_reasks=3,
                             embeddings={"base_url": fake.base_url, "model": "e", "dim": 16})
    generate_qa(domains=["cs"], n_seeds=8, writer="llm", max_attempts=2, settings=settings)
    verify_paths(domains=["cs"], settings=settings)
    distill_trajectories(domains=["cs"], kinds=("template", "cot"), max_rounds=2, cot_max_tokens=200,
                         settings=settings)
    evaluate_policy(split=None, modes=("no_tools",), domains=["cs"], use_judge=True, settings=settings)
    con = duckdb.connect(str(settings.warehouse_path), read_only=True)
    try:
        def rows(sql: str) -> list:
            return con.execute(sql).fetchall()

        return {
            "qa": rows("SELECT qa_id, question, answer, path, split FROM qa ORDER BY qa_id"),
            "gold": rows("SELECT qa_id, rank, path, verdict FROM gold_paths ORDER BY ALL"),
            "traj": rows("SELECT qa_id, kind, status, reject_reason FROM trajectories ORDER BY ALL"),
            "eval": rows("SELECT qa_id, mode, prediction, em, judge_valid, error FROM eval_items ORDER BY ALL"),
            "dupes": rows("SELECT 'qa', count(*) - count(DISTINCT qa_id) FROM qa UNION ALL "
                          "SELECT 'traj', count(*) - count(DISTINCT (qa_id, kind, sample)) FROM trajectories"),
            "usage": rows("SELECT role, sum(calls), sum(retries), sum(reasks) FROM llm_usage GROUP BY role ORDER BY role"),
        }
    finally:
        con.close()


@pytest.mark.reliability_slow
def test_injected_faults_change_no_accepted_row(prefect_harness, tmp_path):
    from flows.graphs import import_graphs
    from testing.fake import FakeOpenAI
    from schemas.config import load_settings
    from tasks.graph.importers import read_triples
    from testing.permissive_profiles import store_one_each_way
    from warehouse.db import Warehouse

    base = tmp_path / "base"
    import_graphs(files={"cs": str(DEMO / "graphs" / "cs.jsonl")}, settings=load_settings(data_dir=base))
    # faults are tested, not what may be asked: every relation of the graph can be asked (the user's profiles), so
    # each role gets enough requests for every kind of fault
    with Warehouse(load_settings(data_dir=base).warehouse_path) as wh:
        store_one_each_way(wh, [read_triples(DEMO / "graphs" / "cs.jsonl", "cs").to_graph()])
    with FakeOpenAI() as clean_fake:
        _script(clean_fake, None)
        clean = _run(base, tmp_path / "clean", clean_fake)
    plan = FaultPlan()
    with FakeOpenAI() as faulty_fake:
        _script(faulty_fake, plan)
        faulty = _run(base, tmp_path / "faulty", faulty_fake)
    print(f"\ninjected faults: {json.dumps(plan.counts)} in {plan.requests} requests; "
          f"usage (role, calls, retries, re-asks) clean {clean['usage']} faulty {faulty['usage']}")
    print(f"clean: {len(clean['qa'])} questions, {len(clean['gold'])} gold paths, "
          f"{sum(t[2] == 'accepted' for t in clean['traj'])}/{len(clean['traj'])} trajectories accepted")
    assert all(plan.counts.values()) and sum(plan.counts.values()) >= 0.18 * plan.requests
    assert clean["qa"] and clean["gold"] and any(t[2] == "accepted" for t in clean["traj"])
    assert faulty["qa"] == clean["qa"]
    assert faulty["gold"] == clean["gold"]
    assert faulty["traj"] == clean["traj"]
    assert clean["eval"] and all(e[5] is None for e in clean["eval"]) and faulty["eval"] == clean["eval"]
    assert {r[0] for r in faulty["usage"]} >= {"generator", "verifier", "teacher", "judge", "policy"}
    assert all(n == 0 for _, n in faulty["dupes"])


def _build(corpus: Path, data: Path, fake) -> dict[str, Any]:
    import duckdb

    from flows.graphs import build_graphs
    from schemas.config import load_settings

    settings = load_settings(
        data_dir=data, roles={"extractor": {"base_url": fake.base_url, "model": "fake-model", "max_retries": 6,
                                             "timeout_s": 1.0, "max_concurrency": 4}},
        embeddings={"base_url": fake.base_url, "model": "e", "dim": 16})  # fmt: skip
    out = build_graphs(source=str(corpus), settings=settings, chunk_token_size=60, chunk_overlap_token_size=10)
    con = duckdb.connect(str(settings.warehouse_path), read_only=True)
    try:
        current = "SELECT snapshot_id FROM current_graph_snapshots WHERE domain = 'cs'"
        return {
            "built": out["built"]["cs"],
            "entities": con.execute(f"SELECT name, type, description FROM entities WHERE snapshot_id = ({current}) "
                                    "ORDER BY ALL").fetchall(),
            "relations": con.execute(f"SELECT source, target, keywords, description FROM relations WHERE snapshot_id = "
                                     f"({current}) ORDER BY ALL").fetchall(),
            "failures": con.execute("SELECT count(*) FROM graph_build_failures").fetchone()[0],
        }
    finally:
        con.close()


@pytest.mark.reliability_slow
def test_injected_faults_on_the_extractor_change_no_graph(prefect_harness, tmp_path):
    """The sixth role: LightRAG's extraction calls through the gateway, one in five failing in transport (429,
    500, a hang); the built graph is the fault-free one."""
    from testing.fake import Fault, FakeOpenAI
    from tests.test_graph_build import TEXTS, extraction_reply

    corpus = tmp_path / "corpus" / "cs"
    corpus.mkdir(parents=True)
    for i, text in enumerate(TEXTS):
        (corpus / f"{i}.md").write_text(text)
    with FakeOpenAI() as clean_fake:
        clean_fake.add(reply=extraction_reply)
        clean = _build(corpus.parent, tmp_path / "clean", clean_fake)
    state = {"n": 0, "kind": None, "counts": {"429": 0, "500": 0, "timeout": 0}}

    def draw(body: dict[str, Any]) -> bool:
        n, state["kind"] = state["n"], None
        state["n"] += 1
        if n % 5 == 2:
            state["kind"] = ("429", "500", "timeout")[(n // 5) % 3]
            state["counts"][state["kind"]] += 1
        return False

    with FakeOpenAI() as faulty_fake:
        faulty_fake.add(predicate=draw, reply="never")
        faulty_fake.add(predicate=lambda b: state["kind"] == "429", reply="x", fault=Fault(status=429, retry_after=0.01))
        faulty_fake.add(predicate=lambda b: state["kind"] == "500", reply="x", fault=Fault(status=500))
        faulty_fake.add(predicate=lambda b: state["kind"] == "timeout", reply="x", fault=Fault(hang_s=1.5))
        faulty_fake.add(reply=extraction_reply)
        faulty = _build(corpus.parent, tmp_path / "faulty", faulty_fake)
    print(f"\nextractor faults: {json.dumps(state['counts'])} in {state['n']} requests")
    assert all(state["counts"].values()) and sum(state["counts"].values()) >= 0.18 * state["n"]
    assert clean["entities"] and clean["relations"] and clean["failures"] == 0
    assert (faulty["entities"], faulty["relations"], faulty["failures"]) == (
        clean["entities"], clean["relations"], clean["failures"])
