"""One training run across nodes, without a trainer: the shared run id, each node's files in one run directory, the
warehouse held only at the start and the end (never by a node other than 0), every node's and rank's record, exit
statuses, the format record beside every checkpoint, and when the hub is off.

The trainer is a small script run by this interpreter (trainer environments whose python is ``sys.executable``):
what is tested is the launcher contract around it, as ``tests/test_train_flows.py`` does for one node."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from flows.train import (
    RUN_FILE,
    TRAINING,
    claim_run_dir,
    mark_lost_trainings,
    run_identity,
    run_plan,
    shared_train_id,
)
from schemas.config import load_settings
from training.cluster import ClusterOptions
from training.envs import ENVS_VAR, require_env
from training.plan import TrainingError, TrainPlan, hub_offline, trainer_env
from training.runs import check_model_loads, node_record_path, node_records, write_node_record
from training.serve import FORMAT_FILE, ChatFormat, chat_format, mark_checkpoints, plan_serve, recorded_format
from training.serve import ServeOptions
from warehouse.db import Warehouse

# A trainer: one rank of a run. It writes its rank record into the shared run directory (argv[2]), saves a
# checkpoint when it is rank 0, and in mode "probe" first writes what it finds of the warehouse (is it free to
# write? what does the run's `runs` row say?) and of the hub switch, as a trainer running mid-launch would see them.
FAKE_RANK = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    mode, run_dir, rank = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    seen = {"hub_offline": os.environ.get("HF_HUB_OFFLINE"), "datasets_offline": os.environ.get("HF_DATASETS_OFFLINE")}
    if mode == "probe":
        import duckdb
        con = duckdb.connect(os.environ["PROBE_WAREHOUSE"])  # for writing: refused while another process holds it
        seen["runs"] = con.execute("SELECT status FROM runs").fetchall()
        seen["training_runs"] = con.execute("SELECT status FROM training_runs").fetchall()
        con.close()
    (Path.cwd() / "seen.json").write_text(json.dumps(seen))
    (run_dir / "ranks").mkdir(exist_ok=True)
    (run_dir / "ranks" / f"rank-{rank}.json").write_text(json.dumps({"rank": rank, "status": "ok", "global_step": 2}))
    with open(run_dir / "metrics.jsonl", "a") as f:
        f.write(json.dumps({"step": 1, "loss": 2.0}) + "\\n")
    if mode == "fail":
        print("RuntimeError: rank lost", flush=True)
        sys.exit(3)
    if rank == 0:
        ckpt = run_dir / "output" / "checkpoint-2"
        ckpt.mkdir(parents=True)
        (ckpt / "config.json").write_text("{}")
        (run_dir / "output" / "config.json").write_text("{}")
        (run_dir / "result.json").write_text(json.dumps({"status": "ok", "checkpoint": str(run_dir / "output")}))
""")


@pytest.fixture
def fake_envs(tmp_path, monkeypatch):
    """Trainer environments whose python is this interpreter, with its packages (a wrapper, not a symlink: a link
    to a virtualenv's python outside the virtualenv loses its site-packages)."""
    root = tmp_path / "envs"
    for name in ("llamafactory", "verl", "trl"):
        (root / name / "bin").mkdir(parents=True)
        python = root / name / "bin" / "python"
        python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
        python.chmod(0o755)
    monkeypatch.setenv(ENVS_VAR, str(root))
    return root


def _plan(tmp_path: Path, mode: str, rank: int, *, run_id: str = "two-nodes", template: str = "qwen3") -> TrainPlan:
    """Node ``rank``'s plan of one run (one rank a node), as ``train_sft`` makes it: planned for the shared run
    directory, then ``on_node``."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "fake_rank.py"
    script.write_text(FAKE_RANK)
    run_dir = tmp_path / "shared" / run_id
    config = {"llamafactory": {"template": template, "output_dir": str(run_dir / "output")}, "max_steps": 2}
    plan = TrainPlan(trainer="llamafactory", env="llamafactory", run_dir=run_dir,
                     files={"llamafactory.yaml": f"output_dir: {run_dir / 'output'}\n",
                            "hopforge_sft.json": json.dumps({"run_dir": str(run_dir)})},
                     argv=[str(require_env("llamafactory")), str(script), mode, str(run_dir), str(rank),
                           str(run_dir / "llamafactory.yaml")],
                     config=config, export_version="v1", manifest_sha256="a" * 64,
                     output_dir=run_dir / "output")  # fmt: skip
    return plan.on_node(rank)


def _settings(tmp_path: Path):
    return load_settings(None, data_dir=tmp_path / "data")


# -- the run id every node shares --------------------------------------------------------------------------------------


def test_a_given_run_id_is_the_run_id_and_a_bad_one_is_refused():
    cluster = ClusterOptions(nnodes=2, node_rank=1, master_addr="10.0.0.1")
    assert shared_train_id("sft", "llamafactory", run_id="job-7", cluster=cluster) == "job-7"
    for bad in ("", "../up", "a b", "-x", "x" * 129):
        with pytest.raises(TrainingError, match="must be 1-128 letters, digits"):
            shared_train_id("sft", "llamafactory", run_id=bad, cluster=cluster)


def test_nodes_derive_the_same_run_id_from_the_rendezvous_without_talking():
    def derived(rank: int, *, port: int = 29500, env: dict | None = None) -> str:
        cluster = ClusterOptions(nnodes=2, node_rank=rank, master_addr="10.0.0.1", master_port=port)
        return shared_train_id("sft", "llamafactory", run_id=None, cluster=cluster, environ=env or {})

    assert derived(0) == derived(1) and derived(0).startswith("sft-llamafactory-")
    assert derived(0) == derived(0)  # the same command on the same rendezvous: the same run, continued
    assert derived(0, port=29501) != derived(0)
    # not the export nor the model: a node with another copy lands in the same directory, where the run's record
    # refuses it (test_a_run_directory_refuses_a_node_of_another_run)
    assert derived(0, env={"SLURM_JOB_ID": "41"}) == derived(1, env={"SLURM_JOB_ID": "41"}) != derived(
        0, env={"SLURM_JOB_ID": "42"})
    one = ClusterOptions()
    first, second = (shared_train_id("sft", "llamafactory", run_id=None, cluster=one) for _ in range(2))
    assert first != second  # one node: every run its own id, as before


def test_a_run_directory_refuses_a_node_of_another_run(tmp_path, fake_envs):
    plan = _plan(tmp_path, "ok", 0)
    identity = run_identity(plan, kind="sft", base_model="m", nnodes=2)
    claim_run_dir(plan, identity)
    claim_run_dir(plan.on_node(1), identity)  # the other node of the same run
    assert json.loads((plan.run_dir / RUN_FILE).read_text())["nnodes"] == 2
    with pytest.raises(TrainingError, match=r"is another run \(base_model: 'm' there, 'other' here\): every node must "
                                            r"run the same command; give a new --run-id"):
        claim_run_dir(plan, {**identity, "base_model": "other"})


# -- each node's files, one run directory ------------------------------------------------------------------------------


def test_node_k_writes_its_own_copy_of_the_plan_and_shares_the_outputs(tmp_path, fake_envs):
    node0, node1 = _plan(tmp_path, "ok", 0), _plan(tmp_path, "ok", 1)
    assert node0.node_dir == node0.run_dir and node1.node_dir == node1.run_dir / "nodes" / "node-1"
    assert node1.argv[-1] == str(node1.node_dir / "llamafactory.yaml") and node0.argv[-1] == str(node0.run_dir /
                                                                                                 "llamafactory.yaml")
    assert node1.output_dir == node0.output_dir and node1.argv[3] == str(node0.run_dir)  # shared, not localised
    node1.write()
    node0.write()
    assert json.loads((node1.node_dir / "plan.json").read_text())["node_rank"] == 1
    assert json.loads((node0.run_dir / "plan.json").read_text())["node_rank"] == 0
    assert str(node1.node_dir / "llamafactory.yaml") in (node1.node_dir / "command.sh").read_text()


# -- the warehouse: node 0 at the start and the end, never across the launch; node k never -----------------------------


def test_node_0_releases_the_warehouse_while_the_trainer_runs(tmp_path, fake_envs, monkeypatch):
    settings = _settings(tmp_path)
    monkeypatch.setenv("PROBE_WAREHOUSE", str(settings.warehouse_path))
    plan = _plan(tmp_path, "probe", 0)
    r = run_plan(plan, kind="sft", settings=settings, params={}, dry_run=False, timeout_s=60, base_model=None)
    seen = json.loads((plan.node_dir / "seen.json").read_text())
    # the trainer opened the warehouse for writing mid-launch, and saw the run recorded as started
    assert seen["runs"] == [[TRAINING]] and seen["training_runs"] == [["running"]]
    assert r["status"] == "completed" and r["checkpoint"] == str(plan.output_dir)
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        assert wh.query("SELECT status FROM runs") == [{"status": "completed"}]
        assert wh.query("SELECT status FROM training_runs") == [{"status": "completed"}]


def test_a_node_other_than_0_never_opens_the_warehouse(tmp_path, fake_envs, monkeypatch):
    def no_warehouse(*args, **kwargs):
        raise AssertionError("node 1 opened the warehouse")

    monkeypatch.setattr("flows.train.Warehouse", no_warehouse)
    settings = _settings(tmp_path)
    plan = _plan(tmp_path, "ok", 1)
    for dry_run in (True, False):
        r = run_plan(plan, kind="sft", settings=settings, params={}, dry_run=dry_run, timeout_s=60, base_model=None,
                     nnodes=2)  # fmt: skip
        assert r["run_id"] is None and r["node_rank"] == 1
    assert r["status"] == "completed" and r["checkpoint"] is None
    assert not settings.warehouse_path.exists()
    record = json.loads(node_record_path(plan.run_dir, 1).read_text())
    assert (record["status"], record["returncode"], record["run_id"]) == ("completed", 0, None)
    assert (plan.node_dir / "train.log").is_file() and not (plan.run_dir / "train.log").exists()


def test_every_node_and_rank_is_recorded_with_the_run_and_rank_0_decides_its_state(tmp_path, fake_envs):
    settings = _settings(tmp_path)
    # node 1 first (its trainer exits 0; it writes no result, that is rank 0's), then node 0
    one = run_plan(_plan(tmp_path, "ok", 1), kind="sft", settings=settings, params={}, dry_run=False, timeout_s=60,
                   base_model=None, nnodes=2)  # fmt: skip
    zero = run_plan(_plan(tmp_path, "ok", 0), kind="sft", settings=settings, params={}, dry_run=False, timeout_s=60,
                    base_model=None, nnodes=2)  # fmt: skip
    assert one["status"] == zero["status"] == "completed" and one["train_id"] == zero["train_id"] == "two-nodes"
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        rows = wh.query("SELECT train_id, status, ranks FROM training_runs")
    assert len(rows) == 1 and rows[0]["status"] == "completed"
    ranks = json.loads(rows[0]["ranks"])
    assert ranks["nnodes"] == 2 and [(n["node_rank"], n["status"], n["returncode"]) for n in ranks["nodes"]] == [
        (0, "completed", 0), (1, "completed", 0)]
    assert [(r["rank"], r["status"]) for r in ranks["ranks"]] == [(0, "ok"), (1, "ok")]


def test_exit_statuses_a_node_whose_ranks_fail_raises_and_a_failed_rank_0_fails_the_run(tmp_path, fake_envs):
    settings = _settings(tmp_path)
    with pytest.raises(TrainingError, match=r"^node 1: llamafactory exited with status 3: RuntimeError: rank lost"):
        run_plan(_plan(tmp_path, "fail", 1), kind="sft", settings=settings, params={}, dry_run=False, timeout_s=60,
                 base_model=None, nnodes=2)  # fmt: skip
    assert [(n["node_rank"], n["status"]) for n in node_records(tmp_path / "shared" / "two-nodes")] == [(1, "failed")]
    assert not settings.warehouse_path.exists()  # node 1 recorded nothing there
    with pytest.raises(TrainingError, match="exited with status 3"):
        run_plan(_plan(tmp_path, "fail", 0), kind="sft", settings=settings, params={}, dry_run=False, timeout_s=60,
                 base_model=None, nnodes=2)  # fmt: skip
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        assert wh.query("SELECT status FROM training_runs") == [{"status": "failed"}]
        assert wh.query("SELECT status FROM runs") == [{"status": "failed"}]


def test_a_training_run_whose_node_0_process_died_is_marked_crashed_by_the_next_run(tmp_path, fake_envs):
    settings = _settings(tmp_path)
    plan = _plan(tmp_path, "ok", 0)
    run_plan(plan, kind="sft", settings=settings, params={}, dry_run=False, timeout_s=60, base_model=None)
    with Warehouse(settings.warehouse_path) as wh:  # as a node 0 killed mid-launch leaves it
        wh.execute("UPDATE runs SET status = ?", [TRAINING])
        wh.execute("UPDATE training_runs SET status = 'running'")
        run_id = wh.scalar("SELECT run_id FROM runs")
        record = json.loads(node_record_path(plan.run_dir, 0).read_text())
        write_node_record(plan.run_dir, 0, {**record, "pid": 2**22 + 1, "status": None})  # above pid_max: gone
        assert mark_lost_trainings(wh, host=record["host"]) == [run_id]
        assert wh.query("SELECT status FROM runs") == [{"status": "crashed"}]
        assert wh.query("SELECT status FROM training_runs") == [{"status": "failed"}]
        write_node_record(plan.run_dir, 0, {**record, "pid": os.getpid()})  # alive: left alone
        wh.execute("UPDATE runs SET status = ?", [TRAINING])
        assert mark_lost_trainings(wh, host=record["host"]) == []


# -- the format record beside every checkpoint ---------------------------------------------------------------------


def test_the_run_writes_its_format_beside_every_checkpoint(tmp_path, fake_envs):
    settings = _settings(tmp_path)
    plan = _plan(tmp_path, "ok", 0, template="qwen3_nothink")
    run_plan(plan, kind="sft", settings=settings, params={}, dry_run=False, timeout_s=60, base_model=None)
    for folder in (plan.output_dir, plan.output_dir / "checkpoint-2"):
        record = json.loads((folder / FORMAT_FILE).read_text())
        assert (record["kind"], record["template"], record["train_id"]) == ("no_think", "qwen3_nothink", "two-nodes")
    # copied away from its run (no plan.json above it), a checkpoint still says how it was trained
    copy = tmp_path / "elsewhere" / "ckpt"
    copy.parent.mkdir()
    (plan.output_dir / "checkpoint-2").rename(copy)
    chat = chat_format(copy)
    assert (chat.kind, chat.enable_thinking, chat.reasoning_parser) == ("no_think", True, None)
    assert str(copy / FORMAT_FILE) in chat.source


def test_checkpoints_under_a_shared_dir_are_served_in_their_format(tmp_path):
    # verl's layout: <shared_dir>/<run>/checkpoints/global_step_N/actor/huggingface, the run's plan.json elsewhere
    checkpoints = tmp_path / "shared" / "rl-verl-1" / "checkpoints"
    hf = checkpoints / "global_step_4" / "actor" / "huggingface"
    hf.mkdir(parents=True)
    (hf / "config.json").write_text("{}")
    assert recorded_format(hf) is None  # no record: serving would have to be told
    think = ChatFormat("think", True, "qwen3", "verl run rl-verl-1 from SFT run s1 (template qwen3)")
    written = mark_checkpoints(checkpoints, think, train_id="rl-verl-1")
    assert written == [checkpoints / FORMAT_FILE, hf / FORMAT_FILE]
    plan = plan_serve(hf, ServeOptions(reasoning="auto"), vllm="vllm")
    assert plan.chat.kind == "think" and "--reasoning-parser" in plan.argv
    with pytest.raises(TrainingError, match="serving must match training"):
        plan_serve(hf, ServeOptions(reasoning="no_think"), vllm="vllm")


# -- models by path or by id ---------------------------------------------------------------------------------------


def test_the_hub_is_off_for_a_local_model_or_when_asked_and_on_for_a_hub_id(tmp_path):
    local = tmp_path / "model"
    local.mkdir()
    assert hub_offline(str(local)) and hub_offline("./models/x") and hub_offline(None)
    assert not hub_offline("Qwen/Qwen3-8B") and hub_offline("Qwen/Qwen3-8B", offline=True)
    assert trainer_env(offline=False).get("HF_HUB_OFFLINE") is None
    assert trainer_env(offline=True)["HF_HUB_OFFLINE"] == "1"
    assert trainer_env(offline=False)["HF_DATASETS_OFFLINE"] == "1"  # the data is the local export, always


def test_a_launch_sets_hf_hub_offline_only_for_a_local_model_or_offline(tmp_path, fake_envs, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    settings = _settings(tmp_path)
    seen = {}
    for name, model, offline in (("hub", "Qwen/Qwen3-8B", False), ("forced", "Qwen/Qwen3-8B", True),
                                 ("local", str(tmp_path), False)):  # fmt: skip
        plan = _plan(tmp_path / name, "ok", 0)
        run_plan(plan, kind="sft", settings=settings, params={}, dry_run=False, timeout_s=60, base_model=model,
                 offline=offline)  # fmt: skip
        seen[name] = json.loads((plan.node_dir / "seen.json").read_text())
        assert json.loads((plan.node_dir / "plan.json").read_text())["hub_offline"] is (name != "hub")
    assert [seen[n]["hub_offline"] for n in ("hub", "forced", "local")] == [None, "1", "1"]
    assert {s["datasets_offline"] for s in seen.values()} == {"1"}


def test_a_model_this_node_cannot_load_is_one_line_naming_what_to_do(tmp_path, fake_envs, monkeypatch):
    refusing = tmp_path / "model_check.py"
    refusing.write_text("import sys\nprint('error: OSError: We couldn\\'t connect to the hub, and the files are not "
                        "in the cache', file=sys.stderr)\nsys.exit(2)\n")
    monkeypatch.setattr("training.runs.launcher", lambda name: str(refusing))
    plan = _plan(tmp_path, "ok", 0)
    plan.hub_offline = True
    with pytest.raises(TrainingError) as caught:
        check_model_loads(plan, "Qwen/Qwen3-8B")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("model Qwen/Qwen3-8B cannot be loaded on this node (llamafactory environment): OSError:")
    assert message.endswith("put it in this node's Hugging Face cache (`huggingface-cli download Qwen/Qwen3-8B`) or "
                            "give a local model directory")
    plan.hub_offline = False
    with pytest.raises(TrainingError, match=r"check the id and this node's access to the hub"):
        check_model_loads(plan, "Qwen/Qwen3-8B")
