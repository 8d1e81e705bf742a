"""Dataset export: format rules, round trips through `datasets`, determinism, manifest hashes, hub upload (mocked)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from schemas.config import load_settings
from schemas.qa import QA, GoldPath, make_qa_id
from schemas.trajectories import Trajectory, make_trajectory_id
from schemas.tools import tool_schemas
from tasks.qa.context import path_edges
from tasks.export.datasets import (
    ExportError,
    ExportInputs,
    build_export,
    check_include,
    check_version,
    export,
    verify_export,
)
from tasks.export.rows import EXPORT_CONFIGS, sharegpt_conversations, validate_messages, validate_sharegpt
from tasks.graph.importers import read_triples
from testing.hub import RecordingHub
from tasks.env.index import HashingEmbedder
from tasks.env.tools import ToolEnvironment
from tasks.distill.cot import COT_SYSTEM, cot_student_messages
from tasks.distill.template import run_template_tools, template_messages

GRAPHS = Path(__file__).resolve().parent.parent / "flows" / "demo" / "graphs"
QUESTIONS = [
    (["On Computable Numbers", "Alan Turing", "King's College, Cambridge"],
     "Which college did the author of On Computable Numbers study at?", "train"),
    (["David Hilbert", "Entscheidungsproblem", "On Computable Numbers", "Alan Turing"],
     "Who wrote the paper that settled the decision problem posed by David Hilbert?", "validation"),
    # seeds and answers of different splits never meet (the export refuses a leaking split)
    (["Government Code and Cypher School", "Bletchley Park"], "Where was the Government Code and Cypher School based?",
     "test"),
    (["Alan Turing", "Bombe"], "Which codebreaking device did Alan Turing design?", None),
]  # fmt: skip


def _qa(kg, path, question, split) -> QA:
    edges = path_edges(kg, path)
    return QA(qa_id=make_qa_id("cs", kg.snapshot_id, question, path[-1], path), domain="cs", snapshot_id=kg.snapshot_id,
              seed=path[0], hop_class="1-2" if len(path) <= 3 else "3+", path=path, path_edges=edges,
              question=question, answer=path[-1], split=split, run_id="qa-run", attempt_id=f"att-{len(path)}",
              source_chunk_ids=sorted({c for e in edges for c in e.source_chunk_ids}))  # fmt: skip


def _traj(qa: QA, kind: str, messages, reasoning, *, sample: int = 0, status: str = "accepted", tools=True) -> Trajectory:
    return Trajectory(trajectory_id=make_trajectory_id(qa.qa_id, kind, sample), qa_id=qa.qa_id, kind=kind, sample=sample,
                      domain="cs", snapshot_id=qa.snapshot_id, split=qa.split, status=status,
                      reject_reason=None if status == "accepted" else "wrong_answer", question=qa.question,
                      golden_answer=qa.answer, messages=messages, reasoning=reasoning, final_answer=qa.answer,
                      n_rounds=sum(1 for m in messages if m.get("tool_calls")), end_reason="answer",
                      tools=["entity_matcher", "node_info"] if tools else [], run_id="distill-run", model="fake-model")  # fmt: skip


@pytest.fixture(scope="module")
def records():
    """Questions, gold paths and trajectories of every kind, made without an LLM (thoughts written here)."""
    kg = read_triples(GRAPHS / "cs.jsonl", "cs").to_graph(snapshot_id="cs-test")
    env = ToolEnvironment.from_graphs([kg], HashingEmbedder(), tools=("entity_matcher", "node_info"))
    qas = [_qa(kg, *q) for q in QUESTIONS]
    gold = {q.qa_id: [GoldPath(qa_id=q.qa_id, rank=0, path=q.path, triples=[e.triple() for e in q.path_edges],
                               verdict="valid", is_generator_path=True)] for q in qas[:2]}  # fmt: skip
    gold[qas[2].qa_id] = [GoldPath(qa_id=qas[2].qa_id, rank=0, path=qas[2].path, triples=[["x", "y", "z"]], verdict="invalid")]
    trajs = []
    for q in qas:
        steps, problem = run_template_tools(env, q.path, "cs")
        assert problem is None
        msgs = template_messages("system", q.question, q.answer, steps)
        trajs.append(_traj(q, "template", msgs, [f"thought {i}" for i in range(len(steps) + 1)]))
    q0 = qas[0]
    rollout = template_messages("system", q0.question, q0.answer, run_template_tools(env, q0.path, "cs")[0])
    rollout[2] = {**rollout[2], "content": "Let me look it up."}  # prose next to a call goes into the think block
    trajs.append(_traj(q0, "rollouts", rollout, [None, "r1", "r2", "r3"], sample=1))
    trajs.append(_traj(q0, "rollouts", rollout, [None] * 4, sample=0, status="rejected"))
    cot = [*cot_student_messages(q0, [("Alan Turing", "studied at", q0.answer)]),
           {"role": "assistant", "content": f'<answer>["{q0.answer}"]</answer>'}]
    trajs.append(_traj(q0, "cot", cot, ["I follow (Alan Turing, studied at, King's College, Cambridge)."], tools=False))
    broken = template_messages("system", q0.question, q0.answer, run_template_tools(env, q0.path, "cs")[0])[:-1]
    trajs.append(_traj(qas[1], "rollouts", broken, ["a", "b", "c", "d"], sample=5))  # ends on a tool message
    return qas, gold, trajs


@pytest.fixture
def settings(tmp_path):
    return load_settings(data_dir=tmp_path / "data", cache={"mode": "off"})


@pytest.fixture
def warehouse(settings, records):
    from warehouse.db import Warehouse

    qas, gold, trajs = records
    with Warehouse(settings.warehouse_path) as wh:
        wh.write_batch("qa", qas)
        wh.write_batch("gold_paths", [g for gs in gold.values() for g in gs])
        wh.write_batch("trajectories", trajs)
    return settings


def run_export(settings, **kw) -> dict[str, Any]:
    from flows.export import export_datasets

    return export_datasets.fn(settings=settings, **kw)  # the function itself: no Prefect server needed


def file_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# -- ShareGPT rules ------------------------------------------------------------------------------------------------


def _row(*turns: tuple[str, str], tools: str = "") -> dict[str, Any]:
    return {"conversations": [{"from": f, "value": v} for f, v in turns], "system": "s", "tools": tools}


CALL = '{"name": "node_info", "arguments": {"node_name": "A", "graph_type": "cs"}}'


def test_sharegpt_validator_enforces_llamafactory_rules():
    good = _row(("human", "q"), ("function_call", "<think>\nx\n</think>\n\n" + CALL), ("observation", "o"), ("gpt", "a"),
                tools="[]")  # fmt: skip
    assert validate_sharegpt(good) == []
    assert validate_sharegpt(_row(("human", "q"), ("gpt", "a"))) == []
    swapped = validate_sharegpt(_row(("human", "q"), ("observation", "o"), ("gpt", "a")))
    assert any("turn 2 is 'observation'; position 2 must be gpt or function_call" in p for p in swapped)
    assert any("the last turn is 'function_call'" in p for p in validate_sharegpt(_row(("human", "q"), ("function_call", CALL))))
    assert any("last turn is 'human'" in p for p in validate_sharegpt(_row(("human", "q"), ("gpt", "a"), ("human", "b"))))
    assert any("not JSON" in p for p in validate_sharegpt(_row(("human", "q"), ("function_call", "node_info(A)"),
                                                                ("observation", "o"), ("gpt", "a"))))  # fmt: skip
    no_args = '{"name": "node_info", "arguments": "A"}'
    assert any("arguments must be a JSON object" in p for p in validate_sharegpt(
        _row(("human", "q"), ("function_call", no_args), ("observation", "o"), ("gpt", "a"))))
    assert any("does not follow a function_call" in p for p in validate_sharegpt(
        _row(("human", "q"), ("gpt", "a"), ("observation", "o"), ("gpt", "b"))))
    assert any("first turn must be human" in p for p in validate_sharegpt(_row(("observation", "o"), ("gpt", "a"))))
    assert any("empty value" in p for p in validate_sharegpt(_row(("human", " "), ("gpt", "a"))))
    assert validate_sharegpt(_row()) == ["conversations is empty"]
    call = {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]}
    ok = [{"role": "user", "content": "q"}, call, {"role": "tool", "tool_call_id": "c1"}, {"role": "assistant", "content": "a"}]
    assert validate_messages({"messages": ok}) == []
    assert validate_messages({"messages": ok[:2] + ok[3:]}) == [
        "message 3 comes before the tool call(s) ['c1'] were answered"]
    assert "message 3 answers no open tool call" in validate_messages({"messages": [ok[0], ok[3], ok[2], ok[3]]})
    assert any("tools is not valid JSON" in p for p in validate_sharegpt(_row(("human", "q"), ("gpt", "a"), tools="{")))


def test_think_and_nothink_conversations(records):
    qas, _, trajs = records
    rollout = next(t for t in trajs if t.kind == "rollouts" and t.sample == 1)
    think = sharegpt_conversations(rollout, think=True)
    assert [c["from"] for c in think] == ["human", "function_call", "observation"] * 1 + ["function_call", "observation"] * 2 + ["gpt"]
    assert think[1]["value"].startswith("<think>\nLet me look it up.\n</think>\n\n{")
    assert json.loads(think[1]["value"].split("</think>\n\n", 1)[1]) == {
        "name": "entity_matcher", "arguments": {"node_name": qas[0].path[0], "graph_type": "cs"}}
    assert think[3]["value"].startswith("<think>\nr1\n</think>")
    assert think[-1]["value"] == f"<think>\nr3\n</think>\n\n<answer>{qas[0].answer}</answer>"
    plain = sharegpt_conversations(rollout, think=False)
    assert json.loads(plain[1]["value"])["name"] == "entity_matcher" and plain[-1]["value"] == f"<answer>{qas[0].answer}</answer>"
    assert all("<think>" not in c["value"] for c in plain)


def test_inputs_are_checked_before_work(warehouse):
    with pytest.raises(ExportError, match="unknown or no export config"):
        check_include(["qa", "paths"])
    with pytest.raises(ExportError, match="not usable as a directory name"):
        check_version("../escape")
    with pytest.raises(ExportError, match="not usable"):
        run_export(warehouse, version=".hidden")
    assert not (warehouse.data_dir / "exports").exists()


# -- the export --------------------------------------------------------------------------------------------------------


def test_export_layout_rows_and_reports(warehouse, records):
    qas, _, trajs = records
    out = run_export(warehouse)
    root = Path(out["path"])
    assert root.parent == warehouse.data_dir / "exports" and root.name == out["version"] and out["version"].startswith("v-")
    # the question without a split is not exported; the tool-message ending is reported, not written
    assert out["skipped"]["questions_without_split"] == 1
    assert [(b["config"], b["problems"][-1]) for b in out["invalid"]] == [
        ("sft", "the last turn is 'observation'; it must be gpt"), ("sft_nothink", "the last turn is 'observation'; it must be gpt"),
        ("messages", "the last message must be an assistant answer (no tool call)")]
    assert out["rows"]["qa"] == {"train": 1, "validation": 1, "test": 1}
    assert out["rows"]["sft"] == {"train": 3, "validation": 1, "test": 1}  # template+rollout+cot for the train question
    assert out["rows"]["sft_nothink"] == {"train": 2, "validation": 1, "test": 1}  # no CoT without its reasoning
    assert out["rows"]["rl"] == {"train": 1, "validation": 1, "test": 1}
    assert out["rows"]["messages"] == {"train": 3, "validation": 1, "test": 1}

    manifest = json.loads((root / "manifest.json").read_text())
    on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()} - {"manifest.json"}
    assert set(manifest["files"]) == on_disk
    for name, meta in manifest["files"].items():
        assert meta["sha256"] == hashlib.sha256((root / name).read_bytes()).hexdigest()
    assert manifest["files"]["sft/train-00000-of-00001.parquet"]["rows"] == 3
    assert verify_export(root) == []
    (root / "rl" / "test-00000-of-00001.parquet").write_bytes(b"changed")
    (root / "stray.txt").write_text("x")
    assert verify_export(root) == ["rl/test-00000-of-00001.parquet: sha256 differs from the manifest",
                                   "stray.txt: not listed in the manifest"]  # fmt: skip

    info = json.loads((root / "dataset_info.json").read_text())
    assert info["hopforge_sft_train"] == {
        "file_name": "sft/train-00000-of-00001.parquet", "formatting": "sharegpt",
        "columns": {"messages": "conversations", "system": "system", "tools": "tools"},
        "tags": {"role_tag": "from", "content_tag": "value", "user_tag": "human", "assistant_tag": "gpt",
                 "observation_tag": "observation", "function_tag": "function_call", "system_tag": "system"},
    }  # fmt: skip
    assert set(info) == {f"hopforge_{c}_{s}" for c in ("sft", "sft_nothink") for s in ("train", "validation", "test")}
    card = (root / "README.md").read_text()
    assert card.startswith("---\n") and "config_name: rl" in card and "path: qa/validation-00000-of-00001.parquet" in card


def test_every_file_loads_with_datasets(warehouse, records, tmp_path):
    import datasets

    qas, _, _ = records
    root = Path(run_export(warehouse)["path"])
    cache = str(tmp_path / "hf-cache")
    for f in sorted(root.rglob("*.parquet")):
        ds = datasets.load_dataset("parquet", data_files=str(f), split="train", cache_dir=cache)
        assert len(ds) >= 1
    loaded = {c: datasets.load_dataset(str(root), c, cache_dir=cache) for c in EXPORT_CONFIGS}  # offline, from the card

    sft = loaded["sft"]["train"]
    template = next(r for r in sft if r["kind"] == "template")
    assert template["graph_type"] == "cs" and template["golden_answer"] == qas[0].answer
    assert [c["from"] for c in template["conversations"]][-1] == "gpt" and validate_sharegpt(template) == []
    assert [t["function"]["name"] for t in json.loads(template["tools"])] == ["entity_matcher", "node_info"]
    assert "<think>" in template["system"] and "<tools>" not in template["system"]  # the trainer's template lists tools
    cot = next(r for r in sft if r["kind"] == "cot")
    assert cot["tools"] == "" and cot["system"] == COT_SYSTEM
    nothink = loaded["sft_nothink"]["train"][0]
    assert "<think>" not in nothink["system"] and all("<think>" not in c["value"] for c in nothink["conversations"])

    rl = loaded["rl"]["validation"][0]
    assert rl["data_source"] == "hopforge_kgqa" and rl["agent_name"] == "tool_agent"
    assert [m["role"] for m in rl["prompt"]] == ["system", "user"] and rl["prompt"][1]["content"] == qas[1].question
    truth = json.loads(rl["reward_model"]["ground_truth"])
    assert rl["reward_model"]["style"] == "rule" and truth["answers"] == ["Alan Turing"] and truth["graph_type"] == "cs"
    assert truth["gold_paths"] == [[list(e.triple()) for e in qas[1].path_edges]]
    extra = rl["extra_info"]
    assert extra["need_tools_kwargs"] is True and extra["index"] == 0 and extra["split"] == "validation"
    assert extra["tools_kwargs"]["node_info"] == {"create_kwargs": {"graph_type": "cs", "view_id": None}}
    # every row says its graph setting; without IKG levels every row is on the complete graph
    assert truth["kg_setting"] == "complete" and (extra["kg_setting"], extra["ikg_level"], extra["view_id"]) == (
        "complete", None, None) and extra["hidden_triples"] == []
    # the verifier refused the test question's only path: no gold triples for the path reward
    assert json.loads(loaded["rl"]["test"][0]["reward_model"]["ground_truth"])["gold_paths"] == []

    qa = loaded["qa"]["train"][0]
    assert qa["qa_id"] == qas[0].qa_id and qa["path"] == qas[0].path and qa["hop_class"] == "1-2"
    assert qa["gold_paths"][0]["verdict"] == "valid" and "run_id" not in qa and "attempt_id" not in qa
    assert qa["snapshot_id"] == "cs-test" and qa["seed"] == qas[0].path[0] and "source_chunk_ids" in qa

    msgs = loaded["messages"]["train"]
    rollout = next(r for r in msgs if r["kind"] == "rollouts")
    roles = [m["role"] for m in rollout["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant"]
    first_call = rollout["messages"][2]
    assert first_call["tool_calls"][0]["function"]["name"] == "entity_matcher" and first_call["content"] == "Let me look it up."
    assert rollout["messages"][4]["reasoning_content"] == "r1" and rollout["messages"][3]["tool_call_id"] == "call_0"
    assert [t["function"]["name"] for t in rollout["tools"]] == ["entity_matcher", "node_info"]
    assert json.loads(rollout["tools_json"]) == tool_schemas(["entity_matcher", "node_info"])


def test_reexport_is_byte_identical(warehouse):
    first = run_export(warehouse)
    root = Path(first["path"])
    before = file_bytes(root)
    second = run_export(warehouse)
    assert second["version"] == first["version"] and file_bytes(root) == before
    named = Path(run_export(warehouse, version="release-1")["path"])
    after = file_bytes(named)
    assert {k: v for k, v in after.items() if k.endswith(".parquet") or k == "dataset_info.json"} == {
        k: v for k, v in before.items() if k.endswith(".parquet") or k == "dataset_info.json"}
    only_qa = run_export(warehouse, include=["qa"])
    assert only_qa["version"] != first["version"] and set(only_qa["rows"]) == {"qa"}


def test_a_leaking_split_fails_the_export_and_writes_nothing(records, tmp_path):
    qas, gold, trajs = records
    # the validation question's answer (Alan Turing) becomes the seed of a test question
    leak = _qa(read_triples(GRAPHS / "cs.jsonl", "cs").to_graph(snapshot_id="cs-test"),
               ["Alan Turing", "Bletchley Park"], "Where did Alan Turing work during the war?", "test")
    with pytest.raises(ExportError, match=r"not leak-safe.*cs/'alan turing' in test, validation"):
        export(ExportInputs([*qas, leak], gold, trajs), tmp_path / "exports")
    assert not (tmp_path / "exports").exists()
    # without a split the same question is only counted as left out
    built = build_export(ExportInputs([*qas, leak.model_copy(update={"split": None})], gold, trajs), ["qa"])
    assert built.skipped["questions_without_split"] == 2


def test_version_follows_the_inputs(records):
    qas, gold, trajs = records
    base = ExportInputs(qas, gold, trajs).fingerprint(EXPORT_CONFIGS)
    assert base == ExportInputs(list(reversed(qas)), gold, list(reversed(trajs))).fingerprint(EXPORT_CONFIGS)
    edited = [qas[0].model_copy(update={"question": qas[0].question + " (edited)"}), *qas[1:]]
    assert ExportInputs(edited, gold, trajs).fingerprint(EXPORT_CONFIGS) != base
    built = build_export(ExportInputs(qas, gold, trajs), ["rl"])
    assert set(built.tables) == {"rl"} and [r["extra_info"]["index"] for r in built.tables["rl"]["train"]] == [0]


# -- hub upload ----------------------------------------------------------------------------------------------------


def test_export_publishes_a_commit_and_a_tag_as_refresh_does(warehouse, monkeypatch, tmp_path):
    """``export --repo-id`` publishes through ``refresh``'s publisher: one commit on ``main`` that replaces the
    previous version's data files, then a tag named after the version; a missing token stops it before any work."""
    import huggingface_hub

    from tasks.export.hub import REPLACED, PublishError, publish_version

    RecordingHub.reset()
    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingHub)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    exports = Path(warehouse.data_dir) / "exports"
    before = sorted(exports.iterdir()) if exports.is_dir() else []
    with pytest.raises(PublishError, match="HF_TOKEN holds no token"):
        run_export(warehouse, version="pushed", repo_id="me/kgqa")
    assert (sorted(exports.iterdir()) if exports.is_dir() else []) == before and RecordingHub.instances == []
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    out = run_export(warehouse, version="pushed", repo_id="me/kgqa")
    assert out["commit_url"] == "https://hub.test/commit/1" and out["tag"] == "pushed"
    (api,) = RecordingHub.instances
    assert api.token == "hf_secret"
    calls = list(RecordingHub.calls)
    assert [c[0] for c in calls] == ["create_repo", "upload_folder", "create_tag"]
    upload, tag = calls[1][1], calls[2][1]
    assert upload["folder_path"] == out["path"] and upload["revision"] == "main"
    assert upload["delete_patterns"] == REPLACED  # stale files of an earlier version do not linger
    assert tag == {"repo_id": "me/kgqa", "tag": "pushed", "revision": f"{1:040x}", "repo_type": "dataset",
                   "tag_message": "hopforge dataset pushed", "exist_ok": True}
    # the refresh flow's publisher, on the same export, makes the same calls
    RecordingHub.reset()
    publish_version(out["path"], "me/kgqa", private=True)
    assert RecordingHub.calls == calls


def test_a_tampered_export_is_not_published(warehouse, monkeypatch):
    import huggingface_hub

    from tasks.export.hub import PublishError, publish_version

    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingHub)
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    root = Path(run_export(warehouse)["path"])
    (root / "README.md").write_text("tampered")
    RecordingHub.reset()
    with pytest.raises(PublishError, match="sha256 differs"):
        publish_version(root, "me/kgqa")
    assert RecordingHub.instances == []


def test_a_full_disk_leaves_no_version_behind(records, tmp_path, monkeypatch):
    """The disk fills while the export writes its files: a clear ``ExportError``, and neither the version nor its
    temporary folder is left (an earlier version of the same name stays whole)."""
    import errno

    qas, gold, trajs = records
    first = export(ExportInputs(qas, gold, trajs), tmp_path / "exports", version="v1")
    before = {p.relative_to(first.path): p.read_bytes() for p in first.path.rglob("*") if p.is_file()}
    real = Path.write_bytes
    written: list[Path] = []

    def filling(self: Path, data: bytes) -> int:
        if len(written) >= 3:
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        written.append(self)
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", filling)
    with pytest.raises(ExportError, match=r"cannot write the export v1 under .*No space left on device.*free space"):
        export(ExportInputs(qas[:-1], gold, trajs), tmp_path / "exports", version="v1")
    monkeypatch.undo()
    assert sorted(p.name for p in (tmp_path / "exports").iterdir()) == ["v1"]  # no temporary folder left
    assert {p.relative_to(first.path): p.read_bytes() for p in first.path.rglob("*") if p.is_file()} == before
