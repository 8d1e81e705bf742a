"""Multi-node rehearsal of verl RL on one machine: a Ray head and a second Ray node started as separate processes
(``ray start --head``, ``ray start --address``, the verl environment's Ray, 127.0.0.2 and 127.0.0.3), the RL plan
launched against that cluster by address with CPU settings.

- ``hopforge``'s plan for 2 nodes joins the cluster by address, and verl's own parser accepts it (``--check``:
  Hydra, ``validate_config``, tool registry, reward loader, every prompt measured with the model's tokenizer);
- the launcher's ``--preflight`` (everything before verl trains): on each node a task pinned there imports the tool
  class and the reward from Ray's runtime_env copy (their files lie under Ray's ``runtime_resources``, not in this
  checkout), calls the tool server's ``/health`` with the token (a token-protected ``hopforge`` tool server; the
  nodes' environment has no token: it reaches them through the run's control actor) and reads the marker in the
  shared directory; the token is then nowhere on disk, not in the run directory nor in Ray's logs;
- a tool server that goes down mid-training: the tool class on the second node counts its failures, and the guard
  stops the launcher's blocked main thread once more than ``max_tool_failure_rate`` of the window failed.

A real verl step needs vLLM rollouts (GPU): not run here. Both Ray nodes are stopped (their process groups, then any
process left in their temp directory) even when a test fails. ``make test-ray`` (marker ``ray``; ~2-3 min here).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.train import _stop as _stop_server

from training.plan import REPO_ROOT, load_export
from training.rl_common import check_plan
from training.rl_verl import VerlOptions, plan_verl

pytestmark = pytest.mark.ray

HEAD_IP, NODE_IP = "127.0.0.2", "127.0.0.3"
TOKEN = "rehearsal-token-7f3a9c"
GRAPHS = REPO_ROOT / "flows" / "demo" / "graphs"

# Ray's own switches for a cluster on loopback: a second node may join one, no usage report, no cluster token.
RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1", "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _wait_port(host: str, port: int, timeout_s: float, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the process for {host}:{port} exited with {proc.returncode}")
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"nothing answered on {host}:{port} within {timeout_s:.0f} s")


def _verl_python() -> Path:
    from training.envs import require_env
    from training.plan import TrainingError

    try:
        return require_env("verl")
    except TrainingError as exc:  # the rehearsal runs the verl environment's Ray and launcher: it must exist
        pytest.fail(str(exc), pytrace=False)


def _clean_env(**extra: str) -> dict[str, str]:
    """This environment without the repository on PYTHONPATH or a tool token: what a fresh node would have."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HOPFORGE_TOOL_TOKEN")}
    return {**env, **RAY_ENV, **extra}


def _stop(procs: list[subprocess.Popen], temp_dir: Path) -> None:
    """Stop what this test started: each ``ray start --block`` process group (SIGTERM, then SIGKILL), then any
    process still running from this cluster's temp directory (by pid)."""
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 10
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
    marker = str(temp_dir)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            try:
                os.kill(int(entry.name), signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[dict]:
    """Two Ray nodes on this machine, started with ``ray start`` from the verl environment; yields their address."""
    python = _verl_python()
    ray_cli = python.parent / "ray"
    # Ray's socket paths must stay short: its own directory under /tmp, not pytest's deep tmp_path.
    temp_dir = Path(tempfile.mkdtemp(prefix="hfray-", dir="/tmp"))
    logs = tmp_path_factory.mktemp("ray-logs")
    port = _free_port(HEAD_IP)
    common = ["--num-cpus", "1", "--num-gpus", "0", "--block"]
    procs: list[subprocess.Popen] = []
    try:
        with open(logs / "head.log", "wb") as out:
            procs.append(subprocess.Popen(
                [str(ray_cli), "start", "--head", "--node-ip-address", HEAD_IP, "--port", str(port),
                 "--temp-dir", str(temp_dir), "--include-dashboard=false",
                 "--dashboard-agent-listen-port", str(_free_port()), *common],
                cwd=temp_dir, env=_clean_env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True))  # fmt: skip
        _wait_port(HEAD_IP, port, 120, procs[0])
        with open(logs / "node.log", "wb") as out:
            procs.append(subprocess.Popen(
                [str(ray_cli), "start", "--address", f"{HEAD_IP}:{port}", "--node-ip-address", NODE_IP,
                 "--dashboard-agent-listen-port", str(_free_port()), *common],
                cwd=temp_dir, env=_clean_env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True))  # fmt: skip
        wait = ("import ray, sys, time\nray.init(address=sys.argv[1])\nfor _ in range(240):\n"
                "    ips = sorted(n['NodeManagerAddress'] for n in ray.nodes() if n['Alive'])\n"
                "    if len(ips) == 2: break\n    time.sleep(0.5)\nprint(ips)\n")  # fmt: skip
        done = subprocess.run([str(python), "-c", wait, f"{HEAD_IP}:{port}"], capture_output=True, text=True,
                              timeout=180, env=_clean_env(), cwd=temp_dir)  # fmt: skip
        assert f"['{HEAD_IP}', '{NODE_IP}']" in done.stdout, (done.stdout, done.stderr[-2000:],
                                                            (logs / "node.log").read_text()[-2000:])  # fmt: skip
        yield {"address": f"{HEAD_IP}:{port}", "temp_dir": temp_dir, "python": python}
    finally:
        _stop(procs, temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def tiny_model(cluster, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("model") / "qwen3-tiny"
    done = subprocess.run([str(cluster["python"]), str(REPO_ROOT / "training" / "launch" / "tiny_model.py"), str(out)],
                          capture_output=True, text=True, timeout=300, env=_clean_env(HF_HUB_OFFLINE="1"))  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return out


TOOL_SERVER = r'''
import sys
from pathlib import Path
from flows.tool_workers import serve
from tasks.env.index import HashingEmbedder
from tasks.env.tools import ToolEnvironment
from tasks.graph.importers import read_triples
from training.tool_auth import tool_token

kg = read_triples(Path(sys.argv[1]) / "cs.jsonl", "cs").to_graph(snapshot_id="cs-rehearsal")
env = ToolEnvironment.from_graphs([kg], HashingEmbedder(), tools=("entity_matcher", "node_info"))
serve(env, host="127.0.0.1", port=int(sys.argv[2]), token=tool_token(), log_level="warning")
'''


@pytest.fixture(scope="module")
def tool_server(tmp_path_factory) -> Iterator[str]:
    """``hopforge``'s tool server over the demo computing graph, requiring the token."""
    script = tmp_path_factory.mktemp("tools") / "serve.py"
    script.write_text(TOOL_SERVER, encoding="utf-8")
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HOPFORGE_TOOL_TOKEN": TOKEN}
    proc = subprocess.Popen([sys.executable, str(script), str(GRAPHS), str(port)], env=env, cwd=REPO_ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        _wait_port("127.0.0.1", port, 120, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop_server(proc)


@pytest.fixture(scope="module")
def plan(cluster, tiny_model, tool_server, tmp_path_factory):
    from tests.test_train_rl import build_rl_export

    root = tmp_path_factory.mktemp("rehearsal")
    shared = root / "shared"
    shared.mkdir()
    view = load_export(build_rl_export(root / "exports", version="v1"))
    opts = VerlOptions(model=str(tiny_model), ray_address=cluster["address"], nnodes=2, n_gpus_per_node=1,
                       shared_dir=str(shared), tool_server_url=tool_server, train_batch_size=2, ppo_mini_batch_size=2,
                       rollout_n=2, max_prompt_length=1024, max_response_length=2048, tool_failure_window=20,
                       extra_overrides=["trainer.device=cpu"])  # fmt: skip
    return plan_verl(view, root / "run", opts)


def _launcher_env(plan, token: str | None) -> dict[str, str]:
    from training.runs import OFFLINE_ENV

    env = {**_clean_env(), **OFFLINE_ENV, **plan.env_vars}
    if token is not None:
        env["HOPFORGE_TOOL_TOKEN"] = token
    return env


def test_verl_accepts_the_two_node_plan(plan, cluster):
    report = check_plan(plan, timeout_s=300)
    assert report["trainer"]["nnodes"] == 2 and report["trainer"]["n_gpus_per_node"] == 1
    assert report["ray_address"] == cluster["address"]
    assert report["reward"]["path"] == "pkg://training.verl_reward" and report["reward_fn_kwargs"] == {}
    assert [Path(m).name for m in report["ray_py_modules"]] == ["training", "schemas", "tasks", "gateway"]
    # every prompt measured with the model's tokenizer, tool block included: none over the limit
    prompts = report["prompts"]
    assert prompts["rows"] == 5 and prompts["over"] == 0 and 0 < prompts["longest"] <= 1024
    assert prompts["splits"]["train"]["rows"] == 4 and prompts["splits"]["validation"]["rows"] == 1


def test_preflight_reaches_both_nodes_with_code_token_and_tools(plan, cluster, tool_server):
    plan.write()
    argv = [str(cluster["python"]), plan.argv[1], "--preflight", *plan.argv[2:]]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=plan.run_dir,
                          env=_launcher_env(plan, TOKEN))  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["ray"]["address"] == cluster["address"]
    assert report["ray"]["namespace"] == f"hopforge-{plan.run_dir.name}"  # its own, for its control actor
    nodes = sorted(report["preflight"]["nodes"], key=lambda n: n["node_ip"])
    assert [n["node_ip"] for n in nodes] == [HEAD_IP, NODE_IP]
    resources = str(cluster["temp_dir"])
    for node in nodes:
        assert node["problems"] == []
        # the tool server's /health answered this node, with the token it got from the run's control actor (no
        # node has it in its environment)
        assert node["health"] == {tool_server: 200} and node["token"] == "control actor"
        assert node["shared_dir"] == "ok"
        # the tool class and the reward were imported from Ray's copy of the job's packages, not this checkout
        for module, path in node["modules"].items():
            assert path.startswith(resources) and "/runtime_resources/py_modules_files/" in path, (module, path)
            assert not path.startswith(str(REPO_ROOT))
        assert "/runtime_resources/working_dir_files/" in node["cwd"]
    # the token is nowhere on disk: not in the run directory, nor in anything Ray wrote on either node
    for root in (plan.run_dir, cluster["temp_dir"]):
        leaks = [p for p in Path(root).rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()]
        assert leaks == [], leaks
    assert TOKEN not in done.stdout + done.stderr


def test_preflight_refuses_a_wrong_token_in_one_line(plan, cluster, tool_server):
    plan.write()
    argv = [str(cluster["python"]), plan.argv[1], "--preflight", *plan.argv[2:]]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=plan.run_dir,
                          env=_launcher_env(plan, "not-the-token"))  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (f"error: the KG tool server {tool_server} refused the token (HTTP "
                                                    "401): set HOPFORGE_TOOL_TOKEN to the server's value")  # fmt: skip


GUARD = r'''
"""On the cluster: the tool class on the second node calls a tool server that is down; the guard stops the main
thread, blocked as verl's driver is, once the window's failure rate passes the bound."""
import json, sys, time
sys.path.insert(0, sys.argv[2])
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
from training.launch import verl_cluster

address, repo, node_ip, down_url = sys.argv[1:5]
ray.init(address=address, namespace="hopforge", runtime_env={
    "py_modules": [f"{repo}/training", f"{repo}/schemas", f"{repo}/tasks"], "excludes": ["__pycache__"]})
control = verl_cluster.start_control(None, 0.05, 20)
guard = verl_cluster.FailureGuard(control, interval_s=0.5)
second = next(n["NodeID"] for n in ray.nodes() if n["Alive"] and n["NodeManagerAddress"] == node_ip)


@ray.remote(num_cpus=0)
def rollouts(url):
    import asyncio
    from verl.tools.schemas import OpenAIFunctionToolSchema
    from schemas.tools import tool_schema
    from training.launch import verl_tools

    tool = verl_tools.HopforgeKGTool({"server_url": url, "timeout_s": 2, "retries": 0},
                                     OpenAIFunctionToolSchema.model_validate(tool_schema("node_info")))
    errors = []

    async def go():
        iid, _ = await tool.create(create_kwargs={"graph_type": "cs"})
        for _ in range(4):
            try:
                await tool.execute(iid, {"node_name": "Alan Turing"})
            except verl_tools.ToolServerError as exc:
                errors.append(str(exc))
            await asyncio.sleep(0.2)

    asyncio.run(go())
    return {"calls": tool.calls, "failures": tool.failures, "file": verl_tools.__file__, "error": errors[0]}


@ray.remote(num_cpus=0)
class Trainer:
    def fit(self):
        time.sleep(120)


here = ray.get_runtime_context().get_node_id()
trainer = Trainer.options(scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False)).remote()
started = time.monotonic()
calls = rollouts.options(scheduling_strategy=NodeAffinitySchedulingStrategy(second, soft=False)).remote(down_url)
guard.start()
report = {}
try:
    verl_cluster.run_guarded(lambda: ray.get(trainer.fit.remote()), guard)
    report["stopped"] = False
except verl_cluster.LaunchError as exc:
    report.update(stopped=True, reason=str(exc), after_s=round(time.monotonic() - started, 1))
guard.stop()
report["tool"] = ray.get(calls, timeout=60)
report["counter"] = guard.poll()
# the counters as metrics.jsonl columns beside verl's own, as the launcher's relay writes them
from pathlib import Path
from training.launch.verl_ppo import MetricsRelay

Path("verl.jsonl").write_text(json.dumps({"step": 1, "data": {"critic/score/mean": 0.5}}) + "\n")
MetricsRelay(Path("verl.jsonl"), Path("metrics.jsonl"), extra=guard.metrics).drain()
report["metrics"] = json.loads(Path("metrics.jsonl").read_text())
ray.shutdown()
print(json.dumps(report))
'''


def test_tool_failures_on_a_node_stop_the_run(cluster, tmp_path):
    script = tmp_path / "guard.py"
    script.write_text(GUARD, encoding="utf-8")
    down = f"http://127.0.0.1:{_free_port()}"  # nothing listens there: every call fails
    done = subprocess.run([str(cluster["python"]), str(script), cluster["address"], str(REPO_ROOT), NODE_IP, down],
                          capture_output=True, text=True, timeout=240, cwd=tmp_path, env=_clean_env())  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    r = json.loads(done.stdout.strip().splitlines()[-1])
    # stopped well before the 120 s "training" ended, by the guard, with the counts
    assert r["stopped"] is True and r["after_s"] < 60, r
    assert re.match(r"tool calls are failing: \d+ of the last \d+ failed, more than max_tool_failure_rate 0.05 of "
                    r"tool_failure_window 20 \(first error: tool server http://127\.0\.0\.1:\d+/tools/node_info "
                    r"failed: cannot connect", r["reason"]), r["reason"]  # fmt: skip
    # the calls were made on the second node, by the tool class Ray shipped there, and counted by it and the actor
    assert "/runtime_resources/py_modules_files/" in r["tool"]["file"]
    assert r["tool"]["calls"] == r["tool"]["failures"] >= 2
    assert r["counter"]["failures"] == r["tool"]["failures"] and r["counter"]["tripped"] is True
    assert r["metrics"] == {"step": 1, "critic/score/mean": 0.5, "tool/calls": float(r["tool"]["calls"]),
                            "tool/failures": float(r["tool"]["failures"]), "tool/window_failure_rate": 1.0}
