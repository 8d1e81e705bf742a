"""Fixtures of the trainer smoke tests (``make train-smoke``): trainer environments, a tiny local model, an export.

Everything here runs trainers for real in their own virtual environments (``training.envs``) through subprocesses
that are kept offline. A missing environment fails the test with the make command that creates it: a smoke test
that skips would pass without having trained anything.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from training.plan import REPO_ROOT, TrainingError

#: Environment of every trainer subprocess: no hub, no telemetry, the repository importable.
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "WANDB_MODE": "disabled",
    "DO_NOT_TRACK": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def subprocess_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """``os.environ`` plus the offline switches and ``PYTHONPATH=<repo root>`` (launchers import hopforge)."""
    env = {**os.environ, **OFFLINE_ENV, "PYTHONPATH": str(REPO_ROOT)}
    env.update(extra or {})
    return env


def run_python(python: Path | str, args: Sequence[str], *, timeout: float = 900, cwd: Path | None = None,
               extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """Run ``python args...`` offline; the output is returned (and shown by pytest when a test fails)."""
    done = subprocess.run([str(python), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          cwd=str(cwd or REPO_ROOT), env=subprocess_env(extra_env))  # fmt: skip
    sys.stdout.write(done.stdout[-4000:])
    sys.stderr.write(done.stderr[-8000:])
    return done


@pytest.fixture(scope="session")
def trainer_python() -> Callable[[str], Path]:
    """``trainer_python(name)``: the python of trainer environment ``name``; the test FAILS (naming
    ``make trainer-env T=<name>``) when the environment is missing."""
    from training.envs import require_env

    def get(name: str) -> Path:
        try:
            return require_env(name)
        except TrainingError as exc:
            pytest.fail(str(exc), pytrace=False)

    return get


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, trainer_python) -> Path:
    """A tiny random Qwen3-style model and tokenizer (``training/launch/tiny_model.py``), built once per session
    in the LLaMA-Factory environment (any trainer environment can build it)."""
    out = tmp_path_factory.mktemp("tiny-model") / "qwen3-tiny"
    done = run_python(trainer_python("llamafactory"), [REPO_ROOT / "training" / "launch" / "tiny_model.py", out],
                      timeout=300)  # fmt: skip
    assert done.returncode == 0, f"building the tiny model failed:\n{done.stderr[-3000:]}"
    assert (out / "model.safetensors").is_file() and (out / "tokenizer_config.json").is_file()
    return out


# -- the export ------------------------------------------------------------------------------------------------------

GRAPHS = REPO_ROOT / "flows" / "demo" / "graphs"

# (path, question, split): multi-hop questions over the demo computing graph, in every split.
QUESTIONS = [
    (["On Computable Numbers", "Alan Turing", "King's College, Cambridge"],
     "Which college did the author of On Computable Numbers study at?", "train"),
    (["Alan Turing", "Bletchley Park"], "Where did Alan Turing work during the war?", "train"),
    (["Alan Turing", "Bombe"], "Which codebreaking device did Alan Turing design?", "train"),
    (["David Hilbert", "Entscheidungsproblem", "Alonzo Church", "lambda calculus"],
     "Which formal system did the logician who also settled David Hilbert's decision problem invent?", "validation"),
]  # fmt: skip
# Leak-safe as the export requires: no seed or answer entity of one split is a seed or answer in another.


def build_fixture_records():
    """Questions, gold paths and accepted trajectories made without an LLM: one template tool-use trajectory per
    question (multi-turn: a call and its observation per hop, then the answer) with a thought before every
    assistant turn, one rollout whose first turn mixes prose with its call, and one long-CoT sample without
    tools."""
    from schemas.qa import QA, GoldPath, make_qa_id
    from schemas.trajectories import Trajectory, make_trajectory_id
    from tasks.distill.cot import cot_student_messages
    from tasks.distill.template import run_template_tools, template_messages
    from tasks.env.index import HashingEmbedder
    from tasks.env.tools import ToolEnvironment
    from tasks.graph.importers import read_triples
    from tasks.qa.context import path_edges

    kg = read_triples(GRAPHS / "cs.jsonl", "cs").to_graph(snapshot_id="cs-smoke")
    env = ToolEnvironment.from_graphs([kg], HashingEmbedder(), tools=("entity_matcher", "node_info"))
    qas = []
    for path, question, split in QUESTIONS:
        edges = path_edges(kg, path)
        qas.append(QA(qa_id=make_qa_id("cs", kg.snapshot_id, question, path[-1], path), domain="cs",
                      snapshot_id=kg.snapshot_id, seed=path[0], hop_class="1-2" if len(path) <= 3 else "3+",
                      path=path, path_edges=edges, question=question, answer=path[-1], split=split,
                      run_id="qa-smoke", attempt_id=f"att-{len(qas)}",
                      source_chunk_ids=sorted({c for e in edges for c in e.source_chunk_ids})))  # fmt: skip
    gold = {q.qa_id: [GoldPath(qa_id=q.qa_id, rank=0, path=q.path, triples=[e.triple() for e in q.path_edges],
                               verdict="valid", is_generator_path=True)] for q in qas}  # fmt: skip

    def traj(q, kind, messages, reasoning, *, sample=0, tools=True):
        return Trajectory(trajectory_id=make_trajectory_id(q.qa_id, kind, sample), qa_id=q.qa_id, kind=kind,
                          sample=sample, domain="cs", snapshot_id=q.snapshot_id, split=q.split, status="accepted",
                          reject_reason=None, question=q.question, golden_answer=q.answer, messages=messages,
                          reasoning=reasoning, final_answer=q.answer,
                          n_rounds=sum(1 for m in messages if m.get("tool_calls")), end_reason="answer",
                          tools=["entity_matcher", "node_info"] if tools else [], run_id="distill-smoke",
                          model="fake-model")  # fmt: skip

    trajs = []
    for q in qas:
        steps, problem = run_template_tools(env, q.path, "cs")
        assert problem is None, problem
        msgs = template_messages("system", q.question, q.answer, steps)
        thoughts = [f"Step {i + 1}: I check what the graph says about {q.path[min(i, len(q.path) - 1)]}."
                    for i in range(len(steps))] + [f"The path ends at {q.answer}."]  # fmt: skip
        trajs.append(traj(q, "template", msgs, thoughts))
    q0 = qas[0]
    rollout = template_messages("system", q0.question, q0.answer, run_template_tools(env, q0.path, "cs")[0])
    rollout[2] = {**rollout[2], "content": "Let me look it up."}
    trajs.append(traj(q0, "rollouts", rollout, [None, "The author is next.", "Found it.", "Done."], sample=1))
    cot = [*cot_student_messages(q0, [("Alan Turing", "studied at", q0.answer)]),
           {"role": "assistant", "content": f'<answer>["{q0.answer}"]</answer>'}]  # fmt: skip
    trajs.append(traj(q0, "cot", cot, ["I follow (Alan Turing, studied at, King's College, Cambridge)."], tools=False))
    return qas, gold, trajs


@pytest.fixture(scope="session")
def tiny_export_dir(tmp_path_factory) -> Path:
    """An export (``tasks.export.datasets``) of the fixture records with every config: ``sft`` (think) and
    ``sft_nothink`` ShareGPT rows with tools, ``rl`` rows, ``messages`` rows; train and validation splits."""
    from tasks.export.datasets import ExportInputs, export

    qas, gold, trajs = build_fixture_records()
    result = export(ExportInputs(qas, gold, trajs), tmp_path_factory.mktemp("exports"), version="smoke")
    assert not result.invalid, result.invalid
    for config in ("sft", "sft_nothink", "rl", "messages"):
        assert result.rows.get(config, {}).get("train"), f"the fixture export has no {config} train rows"
    return result.path


@pytest.fixture(scope="module")
def rl_export(tmp_path_factory):
    """A leak-safe export with rl rows in train and validation (``tests/test_train_rl.build_rl_export``)."""
    from tests.test_train_rl import build_rl_export
    from training.plan import load_export

    return load_export(build_rl_export(tmp_path_factory.mktemp("rl-exports"), version="smoke"))


@pytest.fixture(scope="module")
def served_tools(tmp_path_factory, prefect_harness):
    """A real ``hopforge serve-tools`` (``flows.train.tool_server``) over the demo computing graph, on loopback."""
    from flows.graphs import import_graphs
    from flows.train import tool_server
    from schemas.config import load_settings

    settings = load_settings(None, data_dir=tmp_path_factory.mktemp("tool-data"))
    import_graphs.fn(files={"cs": str(REPO_ROOT / "flows" / "demo" / "graphs" / "cs.jsonl")}, settings=settings)
    with tool_server(settings, embedder="hashing", startup_timeout_s=180) as url:
        yield url
