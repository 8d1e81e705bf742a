"""verl on a Ray cluster, as planned in the core (``training.rl_verl``): joining a cluster by address, nodes and GPUs
from the plan, code shipped as runtime_env py_modules, checkpoints in a shared directory, and the bad input refused
in one line naming the setting before anything launches (a Ray address that does not answer, a loopback tool URL
with several nodes, a tool server beyond loopback without its token).

Fast, no trainer: the launcher's side (Ray, the checks from every node, the tool-failure guard) is in
``tests/test_verl_cluster.py`` (marker ``ray``).
"""

from __future__ import annotations

import socket

import pytest
from typer.testing import CliRunner

from tests.test_train_rl import build_rl_export, fake_model_dir, overrides_of
from training.plan import REPO_ROOT, TrainingError, load_export
from training.rl_common import options_from
from training.rl_verl import VerlOptions, plan_verl

runner = CliRunner()


@pytest.fixture(scope="module")
def export_view(tmp_path_factory):
    return load_export(build_rl_export(tmp_path_factory.mktemp("exports")))


@pytest.fixture
def model_dir(tmp_path):
    return fake_model_dir(tmp_path / "model")


@pytest.fixture
def ray_head():
    """A socket listening on loopback where a Ray head's GCS would: the planner only asks whether it answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield f"127.0.0.1:{s.getsockname()[1]}"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed when the block ends: nothing answers there


def two_nodes(**kw) -> dict:
    """2 nodes x 8 GPUs over the 4-row fixture export: 4 prompts x 4 samples = 16 sequences, one per GPU."""
    return {"nnodes": 2, "n_gpus_per_node": 8, "train_batch_size": 4, "ppo_mini_batch_size": 4, "rollout_n": 4, **kw}


def test_two_nodes_join_the_cluster_and_checkpoint_in_the_shared_dir(export_view, model_dir, ray_head, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    plan = plan_verl(export_view, tmp_path / "run", VerlOptions(model=str(model_dir), ray_address=ray_head,
                                                                shared_dir=str(shared), **two_nodes()))  # fmt: skip
    o = overrides_of(plan)
    assert o["+ray_kwargs.ray_init.address"] == f"'{ray_head}'"  # quoted: one Hydra string
    assert (o["trainer.nnodes"], o["trainer.n_gpus_per_node"]) == ("2", "8")
    # every node's ranks write their shards into the shared directory; the run's own files stay in the run dir
    assert o["trainer.default_local_dir"] == str(shared / "run" / "checkpoints") == str(plan.output_dir)
    assert o["+ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH"] == str(tmp_path / "run" /
                                                                                       "verl_metrics.jsonl")  # fmt: skip
    # hopforge's code reaches the workers as py_modules, the reward by module name: no path of this checkout is
    # read on another node
    modules = o["+ray_kwargs.ray_init.runtime_env.py_modules"].strip("[]").split(",")
    assert modules == [str(REPO_ROOT / p) for p in ("training", "schemas", "tasks", "gateway")]
    assert o["reward.custom_reward_function.path"] == "'pkg://training.verl_reward'"
    assert not any(k.endswith("env_vars.PYTHONPATH") for k in o)
    # the launcher checks the shared directory from every node
    i = plan.argv.index("--shared-dir")
    assert plan.argv[i + 1] == str(shared) and i < plan.argv.index("--run-dir")
    assert plan.config["cluster"] == {"ray_address": ray_head, "nnodes": 2, "n_gpus_per_node": 8,
                                      "shared_dir": str(shared), "py_modules": modules}  # fmt: skip
    assert any(n.startswith(f"joins the Ray cluster at {ray_head} (2 x 8 GPUs)") for n in plan.notes)


def test_one_node_of_eight_gpus_needs_no_cluster(export_view, model_dir, tmp_path):
    plan = plan_verl(export_view, tmp_path / "run", VerlOptions(model=str(model_dir), n_gpus_per_node=8,
                                                                train_batch_size=4, ppo_mini_batch_size=4, rollout_n=2))  # fmt: skip
    o = overrides_of(plan)
    assert "+ray_kwargs.ray_init.address" not in o and "--shared-dir" not in plan.argv
    assert (o["trainer.nnodes"], o["trainer.n_gpus_per_node"]) == ("1", "8")
    assert o["trainer.default_local_dir"] == str(tmp_path / "run" / "checkpoints")


def test_overlong_filter_turns_on_verls_own_filter(export_view, model_dir, tmp_path):
    plan = plan_verl(export_view, tmp_path / "run", VerlOptions(model=str(model_dir), overlong="filter",
                                                                max_tool_failure_rate=0.2, tool_failure_window=50,
                                                                n_gpus_per_node=1, train_batch_size=2,
                                                                ppo_mini_batch_size=2, rollout_n=2))  # fmt: skip
    o = overrides_of(plan)
    assert o["data.filter_overlong_prompts"] == "true"
    assert plan.argv[2:8] == ["--overlong", "filter", "--max-tool-failure-rate", "0.2", "--tool-failure-window", "50"]


@pytest.mark.parametrize(("values", "message"), [
    (two_nodes(), r"^bad VerlOptions: options: Value error, nnodes=2 needs ray_address: start a Ray cluster"),
    (two_nodes(ray_address="10.0.0.1:6379"), r"ray_address 10.0.0.1:6379 needs shared_dir: a directory every node "
                                             r"mounts at the same path"),
    ({"ray_address": "10.0.0.1:6379", "shared_dir": "/mnt/shared"},
     r"tool_server_url http://127.0.0.1:8765 is a loopback address, which rollout workers on other nodes cannot "
     r"reach"),
    (two_nodes(ray_address="10.0.0.1:6379", shared_dir="/mnt/shared", tool_server_url="http://localhost:9000"),
     r"tool_server_url http://localhost:9000 is a loopback address"),
    ({"ray_address": "ray://10.0.0.1:10001"}, r"ray_address: Value error, ray_address must be the head's host:port"),
    ({"ray_address": "10.0.0.1"}, r"ray_address must be the head's host:port"),
    ({"max_tool_failure_rate": 0}, r"max_tool_failure_rate: Input should be greater than 0"),
    ({"tool_failure_window": 5}, r"tool_failure_window: Input should be greater than or equal to 10"),
    ({"overlong": "truncate"}, r"overlong: Input should be 'refuse' or 'filter'"),
])  # fmt: skip
def test_bad_cluster_options(values, message):
    with pytest.raises(TrainingError, match=message):
        options_from(VerlOptions, {"model": "Qwen/Qwen3-8B", **values})


def test_a_cluster_on_loopback_may_use_a_loopback_tool_server():
    """All nodes of a loopback cluster are this machine (the rehearsal in tests/test_verl_cluster.py)."""
    opts = VerlOptions(model="Qwen/Qwen3-8B", ray_address="127.0.0.1:6379", shared_dir="/tmp", **two_nodes())
    assert opts.tool_server_url == "http://127.0.0.1:8765"


def test_a_ray_address_that_does_not_answer_is_refused_before_launch(export_view, model_dir, tmp_path):
    port = closed_port()
    opts = VerlOptions(model=str(model_dir), ray_address=f"127.0.0.1:{port}", shared_dir=str(tmp_path), **two_nodes())
    with pytest.raises(TrainingError, match=rf"^ray_address 127.0.0.1:{port} does not answer \(Connection refused\): "
                                            rf"start the cluster there \(`ray start --head --port {port}`"):
        plan_verl(export_view, tmp_path / "run", opts)
    assert not (tmp_path / "run").exists()


def test_a_tool_server_beyond_loopback_needs_the_token_here(export_view, model_dir, tmp_path, monkeypatch, ray_head):
    monkeypatch.delenv("HOPFORGE_TOOL_TOKEN", raising=False)
    opts = VerlOptions(model=str(model_dir), tool_server_url="http://10.0.0.5:8765", ray_address=ray_head,
                       shared_dir=str(tmp_path), **two_nodes())  # fmt: skip
    with pytest.raises(TrainingError, match=r"^tool_server_url http://10.0.0.5:8765 is beyond loopback, where "
                                            r"`hopforge serve-tools` requires its token: set HOPFORGE_TOOL_TOKEN"):
        plan_verl(export_view, tmp_path / "run", opts)
    monkeypatch.setenv("HOPFORGE_TOOL_TOKEN", "s3cret-value")
    plan = plan_verl(export_view, tmp_path / "run", opts)
    assert "s3cret-value" not in plan.command_line() and "s3cret-value" not in str(plan.summary())
    assert all("s3cret-value" not in text for text in plan.files.values())


def test_shared_dir_must_exist_here(export_view, model_dir, tmp_path, ray_head):
    for shared, message in ((tmp_path / "nowhere", r"does not exist here: mount the shared file system"),
                            ("relative/dir", r"must be an absolute path")):  # fmt: skip
        opts = VerlOptions(model=str(model_dir), ray_address=ray_head, shared_dir=str(shared), **two_nodes())
        with pytest.raises(TrainingError, match=rf"^shared_dir \S+ {message}"):
            plan_verl(export_view, tmp_path / "run", opts)


def test_the_flows_loopback_tool_server_is_refused_for_a_remote_cluster(export_view, model_dir, tmp_path):
    """The RL flow swaps in the URL of the tool server it starts (``model_copy`` skips the validators): the plan
    checks again, before the network."""
    opts = VerlOptions(model=str(model_dir), ray_address="10.0.0.1:6379", shared_dir=str(tmp_path),
                       tool_server_url="http://10.0.0.5:8765", **two_nodes())  # fmt: skip
    flow_copy = opts.model_copy(update={"tool_server_url": "http://127.0.0.1:41234"})
    with pytest.raises(TrainingError, match=r"^tool_server_url http://127.0.0.1:41234 is a loopback address"):
        plan_verl(export_view, tmp_path / "run", flow_copy)


def test_cli_refuses_a_silent_ray_address_in_one_line(tmp_path, monkeypatch):
    import flows.train as train_flows
    from flows.cli import app
    from tests.trainers.conftest import build_fixture_records
    from tasks.export.datasets import ExportInputs, export

    qas, gold, trajs = build_fixture_records()
    export(ExportInputs(qas=qas, gold_paths=gold, trajectories=trajs), tmp_path / "hopforge-data" / "exports",
           version="v1")  # fmt: skip

    def must_not_run(**kwargs):
        raise AssertionError("the flow started on bad input")

    monkeypatch.setattr(train_flows, "train_rl", must_not_run)
    model = fake_model_dir(tmp_path / "model")
    port = closed_port()
    base = ["train", "rl", "--model", str(model), "--export", "v1", "--set", "n_gpus_per_node=1",
            "--set", "train_batch_size=2", "--set", "ppo_mini_batch_size=2", "--set", "rollout_n=2", "--dry-run"]  # fmt: skip
    cases = [
        ([*base, "--ray-address", f"127.0.0.1:{port}", "--shared-dir", str(tmp_path)],
         f"ray_address 127.0.0.1:{port} does not answer"),
        ([*base, "--ray-address", "10.0.0.1:6379", "--shared-dir", str(tmp_path)],
         "tool_server_url http://127.0.0.1:8765 is a loopback address"),
        ([*base, "--ray-address", "127.0.0.1:6379"], "needs shared_dir"),
        ([*base, "--trainer", "trl", "--ray-address", "127.0.0.1:6379"], "--ray-address is a verl option"),
    ]  # fmt: skip
    for args, expected in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert expected in result.output and "Traceback" not in result.output, (args, result.output)
        assert len([ln for ln in result.output.splitlines() if ln.strip()]) == 1, result.output


def test_failure_window_trips_past_the_bound_over_the_last_calls():
    """The rule the launcher's guard applies (``training/launch/verl_cluster.py``; end to end, across Ray nodes,
    in ``tests/test_verl_cluster.py``): more than ``max_rate × window`` failures among the last ``window`` calls."""
    from training.launch.verl_cluster import FailureWindow

    w = FailureWindow(max_rate=0.05, window=40)  # the bound: more than 2 failures in the last 40 calls
    for _ in range(30):
        w.record(False)
    w.record(True, "tool server http://10.0.0.5:8765/tools/node_info failed: cannot connect")
    w.record(True, "a later error")
    assert not w.tripped and w.snapshot()["window_failures"] == 2
    for _ in range(40):  # the two failures leave the window
        w.record(False)
    w.record(True)
    w.record(True)
    assert not w.tripped
    w.record(True)
    s = w.snapshot()
    assert w.tripped and s["tripped"] is True
    assert (s["calls"], s["failures"], s["window_calls"], s["window_failures"]) == (75, 5, 40, 3)
    assert s["window_failure_rate"] == 0.075
    assert s["first_error"].startswith("tool server http://10.0.0.5:8765/tools/node_info failed")


def _node(ip: str, gpus: float | None) -> dict:
    """A ``ray.nodes()`` entry as the preflight reads it (a CPU-only node has no ``GPU`` resource)."""
    resources = {"CPU": 16.0, **({"GPU": gpus} if gpus is not None else {})}
    return {"NodeID": f"{ip}-id", "NodeManagerAddress": ip, "Alive": True, "Resources": resources}


@pytest.mark.parametrize(("nodes", "nnodes", "message"), [
    ([_node("10.0.0.1", 4)], 1, r"the cluster has 0 node\(s\) with at least 8 GPUs \(4 GPUs per node\)"),
    ([_node("10.0.0.1", 8), _node("10.0.0.2", 4)], 2, r"the cluster has 1 node\(s\) with at least 8 GPUs "
                                                      r"\(8, 4 GPUs per node\)"),
    ([_node("10.0.0.1", 8), _node("10.0.0.2", None)], 2, r"the cluster has 1 node\(s\) with at least 8 GPUs "
                                                         r"\(8, 0 GPUs per node\)"),
    ([_node("10.0.0.1", 8)], 2, r"the cluster has 1 node\(s\) with at least 8 GPUs \(8 GPUs per node\)"),
])  # fmt: skip
def test_preflight_refuses_more_processes_than_gpus(nodes, nnodes, message):
    """verl would place ``nnodes x n_gpus_per_node`` workers and wait for GPUs that are not there: the launcher's
    preflight refuses first, in one line naming the settings and what each node holds."""
    from training.launch.verl_cluster import LaunchError, check_gpus

    with pytest.raises(LaunchError, match=rf"^trainer.nnodes={nnodes} x n_gpus_per_node=8: {message}$"):
        check_gpus(nodes, device="cuda", nnodes=nnodes, n_gpus_per_node=8)


def test_preflight_accepts_enough_gpus_and_a_cpu_run():
    from training.launch.verl_cluster import check_gpus

    check_gpus([_node("10.0.0.1", 8), _node("10.0.0.2", 8)], device="cuda", nnodes=2, n_gpus_per_node=8)
    check_gpus([_node("10.0.0.1", 8), _node("10.0.0.2", 2)], device="cuda", nnodes=1, n_gpus_per_node=8)
    check_gpus([_node("10.0.0.1", None)], device="cpu", nnodes=1, n_gpus_per_node=8)  # a CPU run asks for none


def test_verl_cluster_module_loads_without_ray_or_verl():
    import subprocess
    import sys

    code = ("import sys, training.launch.verl_cluster; print(sorted(m for m in ('ray', 'verl', 'torch') "
            "if m in sys.modules))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    assert done.stdout.strip() == "[]"
