"""TRL's records across nodes follow the contract the SFT launcher keeps (``training.runs``): the run's shared
directory is named in the config, every rank records itself in ``ranks/rank-<RANK>.json`` there, only global rank 0
writes ``result.json`` (with every rank's record), and node k's folder (which holds its config) gets none of them.

The launcher runs here in the core environment with its training replaced (TRL itself trains in ``make
train-smoke``): a two-node GPU plan written as node 0 and node 1 write it, each node's ``main`` run as its rank."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.test_rl_gpu_paths import _device, _trl_launcher
from tests.test_train_rl import build_rl_export, fake_model_dir
from training.cluster import ClusterOptions
from training.plan import load_export
from training.rl_common import TRL_CONFIG_FILE
from training.rl_trl import TRLOptions, plan_trl
from training.runs import RESULT_FILE, rank_records


@pytest.fixture(scope="module")
def export_view(tmp_path_factory):
    return load_export(build_rl_export(tmp_path_factory.mktemp("exports")))


@pytest.fixture
def two_nodes(export_view, tmp_path):
    """Node 0's and node 1's plan of one TRL run (2 nodes x 2 GPUs), each written as its node writes it."""
    model = fake_model_dir(tmp_path / "base-model")
    gpus = _device("cuda", "probe of the trl environment", {"trl": "1.16.0", "vllm": "0.24.0"})
    plans = []
    for node in (0, 1):
        cluster = ClusterOptions(nnodes=2, node_rank=node, nproc_per_node=2, master_addr="10.0.0.1", device="cuda")
        plan = plan_trl(export_view, tmp_path / "run", TRLOptions(model=str(model), cluster=cluster),
                        device=gpus).on_node(node)  # fmt: skip
        plan.write()
        plans.append(plan)
    return plans


def _as_rank(monkeypatch, rank: int, node: int) -> None:
    """The variables ``accelerate launch`` (torchrun) gives rank ``rank`` on node ``node``."""
    for name, value in {"RANK": rank, "LOCAL_RANK": rank % 2, "WORLD_SIZE": 4, "GROUP_RANK": node}.items():
        monkeypatch.setenv(name, str(value))


def test_the_config_names_the_shared_run_dir_on_every_node(two_nodes):
    node0, node1 = two_nodes
    run_dir = node0.run_dir
    assert node1.node_dir == run_dir / "nodes" / "node-1"
    for plan in two_nodes:
        config = yaml.safe_load((plan.node_dir / TRL_CONFIG_FILE).read_text(encoding="utf-8"))
        assert config["hopforge"]["run_dir"] == str(run_dir)
        assert config["grpo"]["output_dir"] == str(run_dir / "checkpoints")
    assert str(node1.node_dir / TRL_CONFIG_FILE) in node1.argv  # node 1 reads its own copy


def test_every_rank_records_itself_and_rank_0_writes_the_one_result(two_nodes, monkeypatch):
    trl_grpo = _trl_launcher()
    node0, node1 = two_nodes
    run_dir = node0.run_dir
    waits = []

    def trains(config, where):
        def result():
            assert trl_grpo.global_rank() == 0, "only rank 0 builds the result"
            return {"status": "ok", "checkpoint": str(run_dir / "checkpoints" / "final"), "trainer": "trl",
                    "global_step": 3}  # fmt: skip

        return trl_grpo.finish(where, config, 3, lambda: waits.append(trl_grpo.global_rank()), result)

    monkeypatch.setattr(trl_grpo, "train", trains)
    # node 1's two ranks end first: each records itself in the shared run dir and exits 0, writing no result
    for rank in (3, 2):
        _as_rank(monkeypatch, rank, node=1)
        assert trl_grpo.main(["--config", str(node1.node_dir / TRL_CONFIG_FILE)]) == 0
    assert not (run_dir / RESULT_FILE).exists()
    assert not (node1.node_dir / RESULT_FILE).exists() and not (node1.node_dir / "ranks").exists()
    for rank in (1, 0):
        _as_rank(monkeypatch, rank, node=0)
        assert trl_grpo.main(["--config", str(node0.node_dir / TRL_CONFIG_FILE)]) == 0
    assert waits == [3, 2, 1, 0]  # every rank met the others before rank 0 read their records
    result = json.loads((run_dir / RESULT_FILE).read_text(encoding="utf-8"))
    assert result["status"] == "ok" and result["run_dir"] == str(run_dir) and result["global_step"] == 3
    assert [(r["rank"], r["node_rank"], r["status"], r["global_step"]) for r in result["ranks"]] == [
        (0, 0, "trained", 3), (1, 0, "trained", 3), (2, 1, "trained", 3), (3, 1, "trained", 3)]  # fmt: skip
    # what node 0's hopforge train stores with the run (training.runs reads the same records)
    assert [r["rank"] for r in rank_records(run_dir)] == [0, 1, 2, 3]


def test_a_stopped_run_is_recorded_by_every_rank_and_its_result_is_rank_0s(two_nodes, monkeypatch):
    trl_grpo = _trl_launcher()
    node0, node1 = two_nodes
    run_dir = node0.run_dir
    why = "tool calls are failing on rank(s) [3] (their logs say which calls)"

    def stops(config, where):
        raise trl_grpo.LaunchError(why, tool={"tripped_ranks": [3]})

    monkeypatch.setattr(trl_grpo, "train", stops)
    _as_rank(monkeypatch, 3, node=1)
    assert trl_grpo.main(["--config", str(node1.node_dir / TRL_CONFIG_FILE)]) == 2
    assert not (node1.node_dir / RESULT_FILE).exists() and not (run_dir / RESULT_FILE).exists()
    _as_rank(monkeypatch, 0, node=0)
    assert trl_grpo.main(["--config", str(node0.node_dir / TRL_CONFIG_FILE)]) == 2
    result = json.loads((run_dir / RESULT_FILE).read_text(encoding="utf-8"))
    assert (result["status"], result["error"], result["tool"]) == ("error", why, {"tripped_ranks": [3]})
    assert [(r["rank"], r["node_rank"], r["status"], r["error"]) for r in result["ranks"]] == [
        (0, 0, "error", why), (3, 1, "error", why)]  # fmt: skip
