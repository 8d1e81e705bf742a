"""Two nodes through the CLI, rehearsed on this CPU: two `hopforge train sft` processes as node 0 and node 1
(torchrun, gloo, loopback, one rank each) on the tiny model, sharing one data dir. They make one run in one run
directory: one output directory whose checkpoints hold both ranks' parts, every node's and rank's record, one
warehouse row (written by node 0, which held the warehouse only at the start and the end), both exit 0. The same
command again, with more steps, resumes from the last checkpoint.

TRL under ``accelerate launch`` with two machines is not rehearsed here: accelerate runs several CPU processes only
as MULTI_CPU, which needs MPI (``training.cluster.accelerate_config`` refuses it in one line); see docs/training.md."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.trainers.conftest import subprocess_env
from training.plan import REPO_ROOT

pytestmark = pytest.mark.train_smoke

RUN_ID = "rehearsal"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _two_nodes(model: Path, export: Path, data_dir: Path, *, steps: int) -> list[subprocess.CompletedProcess[str]]:
    """Start node 0 and node 1 together (each with its own Prefect home, as two machines would have) and wait for
    both."""
    port = _free_port()
    procs = []
    for node in (0, 1):
        argv = [sys.executable, "-m", "flows.cli", "train", "sft", "--model", str(model), "--export", str(export),
                "--think-weight", "0.001", "--max-steps", str(steps), "--nnodes", "2", "--node-rank", str(node),
                "--nproc-per-node", "1", "--master-addr", "127.0.0.1", "--master-port", str(port),
                "--run-id", RUN_ID, "--set", "cluster.device=cpu", "--set", "cluster.one_machine=true",
                "--set", "cutoff_len=4096", "--set", "eval_dataset=none", "--set", "logging_steps=1",
                "--set", "save_steps=1"]  # fmt: skip
        env = subprocess_env({"HOPFORGE_DATA_DIR": str(data_dir), "PREFECT_HOME": str(data_dir.parent / f"prefect-{node}")})
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                      cwd=str(REPO_ROOT)))  # fmt: skip
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=1200)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


@pytest.fixture(scope="module")
def rehearsal(tiny_model_dir, tiny_export_dir, trainer_python, tmp_path_factory):
    trainer_python("llamafactory")
    data_dir = tmp_path_factory.mktemp("two-nodes") / "data"
    first = _two_nodes(tiny_model_dir, tiny_export_dir, data_dir, steps=2)
    for node, done in enumerate(first):
        assert done.returncode == 0, f"node {node}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return data_dir, first


def test_both_nodes_exit_0_with_one_run_in_one_directory(rehearsal):
    data_dir, (node0, node1) = rehearsal
    assert sorted(p.name for p in (data_dir / "training").iterdir()) == [RUN_ID]
    run_dir = data_dir / "training" / RUN_ID
    assert f"completed: {RUN_ID}  run dir: {run_dir}" in node0.stdout and f"completed: {RUN_ID}" in node1.stdout
    assert f"node 1's files: {run_dir / 'nodes' / 'node-1'}" in node1.stdout
    plan0 = json.loads((run_dir / "plan.json").read_text())
    plan1 = json.loads((run_dir / "nodes" / "node-1" / "plan.json").read_text())
    assert (plan0["node_rank"], plan1["node_rank"]) == (0, 1) and plan0["output_dir"] == plan1["output_dir"]
    assert plan1["argv"][plan1["argv"].index("--node-rank") + 1] == "1"
    assert str(run_dir / "nodes" / "node-1" / "llamafactory.yaml") in plan1["argv"]
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "ok" and result["global_step"] == 2
    assert [(r["rank"], r["node_rank"], r["world_size"], r["status"] in ("trained", "ok")) for r in result["ranks"]] \
        == [(0, 0, 2, True), (1, 1, 2, True)]


def test_the_checkpoints_hold_both_ranks_parts_and_their_format(rehearsal):
    data_dir, _ = rehearsal
    output = data_dir / "training" / RUN_ID / "output"
    for step in (1, 2):
        ckpt = output / f"checkpoint-{step}"
        assert (ckpt / "rng_state_0.pth").is_file() and (ckpt / "rng_state_1.pth").is_file(), sorted(ckpt.iterdir())
        assert (ckpt / "optimizer.pt").is_file() and (ckpt / "adapter_model.safetensors").is_file()
        assert json.loads((ckpt / "hopforge_format.json").read_text())["kind"] == "think"


def test_node_0_recorded_the_run_with_every_node_and_rank(rehearsal):
    from warehouse.db import Warehouse

    data_dir, _ = rehearsal
    with Warehouse(data_dir / "warehouse.duckdb", read_only=True) as wh:
        rows = wh.query("SELECT train_id, status, ranks FROM training_runs")
        runs = wh.query("SELECT flow, status FROM runs")
    assert [(r["train_id"], r["status"]) for r in rows] == [(RUN_ID, "completed")]
    ranks = json.loads(rows[0]["ranks"])
    assert [(n["node_rank"], n["status"], n["returncode"]) for n in ranks["nodes"]] == [(0, "completed", 0),
                                                                                       (1, "completed", 0)]
    assert [r["rank"] for r in ranks["ranks"]] == [0, 1]
    assert runs == [{"flow": "train-sft", "status": "completed"}]  # node 1 has no row: it never opened the warehouse


def test_the_same_command_with_more_steps_resumes_the_run(rehearsal, tiny_model_dir, tiny_export_dir):
    data_dir, _ = rehearsal
    again = _two_nodes(tiny_model_dir, tiny_export_dir, data_dir, steps=3)
    for node, done in enumerate(again):
        assert done.returncode == 0, f"node {node}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    run_dir = data_dir / "training" / RUN_ID
    log = (run_dir / "train.log").read_text()
    assert f"Resuming training from {run_dir / 'output' / 'checkpoint-2'}" in log
    assert json.loads((run_dir / "result.json").read_text())["global_step"] == 3
    assert (run_dir / "output" / "checkpoint-3" / "rng_state_1.pth").is_file()
    served = subprocess.run([sys.executable, "-m", "flows.cli", "train", "serve-command",
                             str(run_dir / "output" / "checkpoint-3")], capture_output=True, text=True,
                            env=subprocess_env(), cwd=str(REPO_ROOT), timeout=300)  # fmt: skip
    assert served.returncode == 0 and "--reasoning-parser qwen3" in served.stdout, served.stderr[-2000:]
