"""The factory on a two-node Ray cluster joined by address: a head and a second node started with ``ray start`` as
separate processes on this machine (one CPU each, so batches land on both), the flows run through prefect-ray with
``runner.address`` set, hopforge's code shipped to the nodes in the job's runtime_env.

- build-graphs, generate-qa, verify-paths and distill on two nodes export the same bytes as on the head alone, and
  every stage's batches ran on both nodes (by Ray node id);
- the second node killed (SIGKILL to all its processes) in the middle of distillation: the run completes, every
  trajectory is stored once, the export is the same bytes again, and the LLM calls made again are among those the
  node had in flight at the kill (or answered but not yet stored);
- bad input, one line each and the stage runs on once fixed: an address where nothing answers, and a node that
  joins without hopforge (nor its dependencies) installed.

Slow (three Ray nodes started, three factory runs): ``make test-ray`` (marker ``ray``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
ray = pytest.importorskip("ray")

from schemas.config import load_settings  # noqa: E402
from schemas.errors import ConfigError  # noqa: E402
from tests import ray_cluster as rc  # noqa: E402
from tests.test_ray import (  # noqa: E402
    ROLES,
    _ask_every_relation,
    _files,
    _script,
    _teacher,
    _verdicts,
    fixed_run_ids,  # noqa: F401  (the fixture: runs named by flow and order)
)

pytestmark = pytest.mark.ray

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "flows" / "demo"
DOMAINS = ["cs", "history"]
NODE_IP, BARE_IP = "127.0.0.3", "127.0.0.4"
STAGES = ("build-domain-graph", "generate-batch", "verify-batch", "distill-batch")
#: Steps that read or write the flow machine's files: the runner keeps them on its threads (``local``), no Ray node.
LOCAL = ("import-graph-file", "build-export")
# Columns that name the run or the moment, or are derived from the run id, not the content (as
# bench/output_digest.py leaves out).
SKIP = {"run_id", "attempt_id", "created_at", "started_at", "finished_at", "latency_s", "elapsed_s", "build_run_id"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A Ray head on 127.0.0.2 with one CPU; the tests add and remove the other nodes."""
    c = rc.new_cluster(REPO / ".venv" / "bin" / "ray", tmp_path_factory.mktemp("ray-logs"))
    try:
        c.start_head(num_cpus=1)
        c.wait_alive([rc.HEAD_IP])
        yield c
    finally:
        if ray.is_initialized():
            ray.shutdown()
        rc.remove(c)


@pytest.fixture(autouse=True)
def _driver_like_a_users(monkeypatch, tmp_path_factory):
    """The driver finds its node by the route to the cluster (what it does on Linux by default; a test module that
    imported Ray before this one may have kept every address on 127.0.0.1). It runs outside the checkout: Ray puts
    the driver's current directory on every worker's path, which on this one machine would hand the nodes this
    checkout instead of the job's copy of the code."""
    from ray._private import ray_constants

    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", True)
    monkeypatch.chdir(tmp_path_factory.getbasetemp())


@pytest.fixture
def ran_on(monkeypatch):
    """Task name -> the Ray node ids that ran its batches (seen where the results arrive)."""
    from flows import batches

    seen: dict[str, set[str]] = {}
    run = batches._Runner.run

    def spy(self, task, *args, **kwargs):
        for batch, result in run(self, task, *args, **kwargs):
            seen.setdefault(task.name, set()).add(result.node)
            yield batch, result

    monkeypatch.setattr(batches._Runner, "run", spy)
    return seen


def _settings(fake, data_dir: Path, address: str, **runner):
    roles = {r: {"base_url": fake.base_url, "model": "fake-model", "max_retries": 2, "timeout_s": 30} for r in ROLES}
    return load_settings(data_dir=data_dir, roles=roles,
                         runner={"kind": "ray", "address": address, "max_workers": 2, **runner},
                         embeddings={"base_url": fake.base_url, "model": "e", "dim": 16})  # fmt: skip


def _script_all(fake, paths: dict[str, list[str]]) -> None:
    from tests.test_trajectories import good_thoughts, walker

    _script(fake)
    fake.add(schema_name="gold_path_verdicts", reply=_verdicts)
    fake.add(schema_name="template_thoughts", reply=good_thoughts)
    fake.add(reply=lambda body: _teacher(paths, walker(paths), body))


def _before_qa(settings) -> dict:
    """build-graphs over the demo corpus (the fake extractor's graphs are tiny, so the demo's reference graphs
    replace them, as in the factory) and the profiles that let every relation be asked."""
    from flows.graphs import build_graphs, import_graphs

    out = build_graphs(domains=DOMAINS, source=str(DEMO / "corpus"), settings=settings)
    import_graphs(files={d: str(DEMO / "graphs" / f"{d}.jsonl") for d in DOMAINS}, settings=settings)
    for d in DOMAINS:
        _ask_every_relation(settings, DEMO / "graphs" / f"{d}.jsonl")
    return out


def _questions(settings) -> dict:
    from flows.qa import generate_qa

    return generate_qa(domains=DOMAINS, n_seeds=5, modes=["candidates"], batch_size=4, settings=settings)


def _distill(settings) -> dict:
    from flows.distill import distill_trajectories

    return distill_trajectories(domains=DOMAINS, n_rollouts=2, batch_size=2, settings=settings, max_rounds=4,
                                max_tokens_per_round=200, cot_max_tokens=200)  # fmt: skip


def _teacher_paths(settings, paths: dict[str, list[str]]) -> None:
    from flows.qa import load_qa
    from warehouse.db import Warehouse

    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        paths.update({q.question: q.path for q in load_qa(_Reader(wh))})


class _Reader:
    """What ``load_qa`` reads through: a run's warehouse."""

    def __init__(self, wh) -> None:
        self.wh = wh


def _digest(settings, table: str, order: str) -> tuple[int, str]:
    from warehouse.db import Warehouse

    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        rows = wh.query(f"SELECT * FROM {table} ORDER BY {order}")
    clean = [{k: v for k, v in r.items() if k not in SKIP} for r in rows]
    return len(rows), hashlib.sha256(json.dumps(clean, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _factory(settings, paths, snapshots: dict[str, Path] | None = None, fixed_run_ids=None) -> dict:
    """The four stages, then the export; ``snapshots`` gets a copy of the data dir (and the run counter) before
    generation and before distillation."""
    from flows.export import export_datasets
    from flows.qa import verify_paths

    out = {"build": _before_qa(settings)}
    if snapshots is not None:
        snapshots["qa"] = _snapshot(settings, "before-qa", fixed_run_ids)
    out["qa"] = _questions(settings)
    out["qa_digest"] = _digest(settings, "qa", "qa_id")  # before verify-paths and the export add to the rows
    out["gold"] = verify_paths(domains=DOMAINS, batch_size=4, settings=settings, time_budget_s=3600.0)  # no clock bound
    _teacher_paths(settings, paths)
    if snapshots is not None:
        snapshots["distill"] = _snapshot(settings, "before-distill", fixed_run_ids)
    out["traj"] = _distill(settings)
    out["export"] = export_datasets(settings=settings)
    return out


def _snapshot(settings, name: str, fixed_run_ids) -> Path:
    target = settings.data_dir.parent / name
    shutil.copytree(settings.data_dir, target / "data")
    (target / "run_ids.json").write_text(json.dumps(fixed_run_ids or {}))
    return target


def _restore(snapshot: Path, data_dir: Path, fixed_run_ids) -> None:
    shutil.copytree(snapshot / "data", data_dir)
    fixed_run_ids.clear()
    fixed_run_ids.update(json.loads((snapshot / "run_ids.json").read_text()))


def _node_ids() -> dict[str, str]:
    """Live Ray nodes of the joined cluster: address -> node id."""
    return {n["NodeManagerAddress"]: n["NodeID"] for n in ray.nodes() if n["Alive"]}


@pytest.fixture(scope="module")
def reference(cluster, tmp_path_factory):
    """Shared between the tests: the head-alone run's results, export and data-dir snapshots."""
    return {"root": tmp_path_factory.mktemp("reference")}


def test_two_nodes_export_what_one_node_exports(prefect_harness, fake_llm, cluster, reference, fixed_run_ids, ran_on):
    import flows.ray_cluster as joined

    paths: dict[str, list[str]] = {}
    _script_all(fake_llm, paths)
    root = reference["root"]

    # the head alone
    snapshots: dict[str, Path] = {}
    one = _factory(_settings(fake_llm, root / "one" / "data", cluster.address), paths, snapshots, fixed_run_ids)
    head = _node_ids()[rc.HEAD_IP]
    assert set(ran_on) == set(STAGES) | set(LOCAL) and set().union(*(ran_on[s] for s in STAGES)) == {head}
    assert set().union(*(ran_on[s] for s in LOCAL)) == {""}  # on the flow's own threads
    # hopforge's code reached the node through the job's runtime_env, not this checkout
    said = joined.check_nodes(load_settings(runner={"kind": "ray", "address": cluster.address}).runner)
    assert [s["ip"] for s in said] == [rc.HEAD_IP]
    assert "/runtime_resources/py_modules_files/" in said[0]["flows"] and not said[0]["flows"].startswith(str(REPO))

    # the second node joins; the same factory from a cold data dir
    cluster.add_node("node2", NODE_IP, num_cpus=1)
    cluster.wait_alive([rc.HEAD_IP, NODE_IP])
    ran_on.clear()
    fixed_run_ids.clear()
    fake_llm.requests.clear()
    two = _factory(_settings(fake_llm, root / "two" / "data", cluster.address), paths)
    nodes = _node_ids()
    assert set(nodes) == {rc.HEAD_IP, NODE_IP}
    assert {stage: ran_on[stage] for stage in STAGES} == {stage: set(nodes.values()) for stage in STAGES}, ran_on

    # real work, and the same bytes
    assert one["qa"]["accepted"] == two["qa"]["accepted"] >= 5
    assert one["gold"]["lost_calls"] == two["gold"]["lost_calls"] == 0, (one["gold"], two["gold"])
    assert one["gold"]["mean_verified"] == two["gold"]["mean_verified"] > 0, (one["gold"], two["gold"])
    assert one["traj"]["made"] == two["traj"]["made"] > 0
    a, b = _files(Path(one["export"]["path"])), _files(Path(two["export"]["path"]))
    assert one["export"]["version"] == two["export"]["version"]
    assert sorted(a) == sorted(b) and sum(name.endswith(".parquet") for name in a) >= 3
    assert [name for name in a if a[name] != b[name]] == []
    assert one["qa_digest"] == two["qa_digest"]
    reference.update(one=one, export=a, snapshots=snapshots, paths=dict(paths))


def _running_on(node: rc.Node, task_name: str) -> bool:
    for pid in node.pids():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cmd.startswith(f"ray::{task_name}"):
            return True
    return False


def test_a_node_killed_mid_distillation_loses_and_repeats_nothing_answered(prefect_harness, fake_llm, cluster,
                                                                           reference, fixed_run_ids, tmp_path):
    from flows.distill import load_trajectories
    from flows.export import export_datasets
    from testing.fake import Fault
    from tests.reliability.harness import response_cache_key, stored_keys
    from warehouse.db import Warehouse

    if "snapshots" not in reference:
        pytest.skip("needs the two-node run")
    node = next(n for n in cluster.nodes if n.name == "node2")
    assert node.proc.poll() is None and set(_node_ids()) == {rc.HEAD_IP, NODE_IP}
    paths = dict(reference["paths"])
    _script_all(fake_llm, paths)
    _restore(reference["snapshots"]["distill"], tmp_path / "data", fixed_run_ids)
    settings = _settings(fake_llm, tmp_path / "data", cluster.address)

    fake_llm.set_fault(Fault(latency_s=0.3))  # distillation batches long enough to kill the node in one
    fake_llm.requests.clear()
    kill: dict = {}

    def killer() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not _running_on(node, "distill-batch"):
            time.sleep(0.05)
        time.sleep(1.5)  # past the task's start: some of its calls answered and stored, some in flight
        while time.monotonic() < deadline and not any(r.answered is None for r in list(fake_llm.requests)):
            time.sleep(0.01)
        kill["at"] = cluster.kill(node)
        kill["stored"] = stored_keys(settings.cache_path)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    try:
        out = _distill(settings)
    finally:
        thread.join(timeout=300)
    fake_llm.set_fault(None)
    assert "at" in kill, "no distill-batch ran on the second node"
    assert node.proc.poll() is not None and node.pids() == []

    # nothing lost, nothing stored twice: every job once, and the export is the head-alone run's bytes
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        ids = [t.trajectory_id for t in load_trajectories(wh)]
        n_qa = wh.scalar("SELECT count(*) FROM qa")
    assert len(ids) == len(set(ids)) == 4 * n_qa == out["made"] == reference["one"]["traj"]["made"]
    export = _files(Path(export_datasets(settings=settings)["path"]))
    assert sorted(export) == sorted(reference["export"])
    assert [name for name in export if export[name] != reference["export"][name]] == []

    # the calls sent again after the kill were in flight at it, or answered but not yet stored
    chats = [r for r in fake_llm.requests if r.path.endswith("/chat/completions") and r.json]
    before = [r for r in chats if r.time < kill["at"]]
    after = {response_cache_key(r.json) for r in chats if r.time >= kill["at"]}
    in_flight = {response_cache_key(r.json) for r in before if r.answered is None or r.answered >= kill["at"]}
    unstored = {response_cache_key(r.json) for r in before} - kill["stored"]
    repeated = {response_cache_key(r.json) for r in before} & after
    assert in_flight, "the kill came when no call was in flight"
    assert repeated <= in_flight | unstored, (len(repeated), len(in_flight), len(unstored))
    print(f"\nkill of the second node mid-distill: {len(before)} calls before it, {len(in_flight)} in flight, "
          f"{len(unstored - in_flight)} answered but not stored, {len(repeated)} repeated")


def test_an_address_where_nothing_answers_fails_in_one_line(prefect_harness, fake_llm, reference, fixed_run_ids,
                                                            tmp_path, monkeypatch):
    import socket

    from flows.qa import generate_qa

    if "snapshots" not in reference:
        pytest.skip("needs the head-alone run")
    _restore(reference["snapshots"]["qa"], tmp_path / "data", fixed_run_ids)
    port = rc.free_port()
    address = f"127.0.0.1:{port}"
    tries: list[float | None] = []
    real = socket.create_connection

    def create_connection(where, timeout=None, *args, **kwargs):
        if tuple(where) == ("127.0.0.1", port):
            tries.append(timeout)
        return real(where, timeout, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", create_connection)
    with pytest.raises(ConfigError) as err:
        generate_qa(domains=DOMAINS, n_seeds=5, modes=["candidates"], batch_size=4,
                    settings=_settings(fake_llm, tmp_path / "data", address, connect_timeout_s=3))  # fmt: skip
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"runner.address {address}: nothing answers there")
    assert "runner.connect_timeout_s" in line
    # refused by one attempt bounded by the setting, before Ray itself tried (it retries for a minute or more)
    assert tries == [3]


def test_a_node_without_hopforge_is_named_in_one_line_and_the_stage_runs_once_it_left(
        prefect_harness, fake_llm, cluster, reference, fixed_run_ids, tmp_path):
    from training.envs import require_env
    from training.plan import TrainingError

    if "snapshots" not in reference:
        pytest.skip("needs the head-alone run")
    try:  # the verl environment: Ray and Python of this one's versions, no hopforge, no prefect
        bare_ray = require_env("verl").parent / "ray"
    except TrainingError as exc:
        pytest.skip(str(exc))
    paths = dict(reference["paths"])
    _script_all(fake_llm, paths)
    _restore(reference["snapshots"]["qa"], tmp_path / "data", fixed_run_ids)
    settings = _settings(fake_llm, tmp_path / "data", cluster.address)
    bare = cluster.add_node("bare", BARE_IP, num_cpus=1, ray_bin=bare_ray)
    try:
        cluster.wait_alive([rc.HEAD_IP, BARE_IP])
        with pytest.raises(ConfigError) as err:
            _questions(settings)
        line = str(err.value)
        assert "\n" not in line
        assert line.startswith(f"runner.address {cluster.address}: the Ray node at {BARE_IP} (")
        assert "cannot run hopforge's tasks: no module 'prefect_ray'" in line
        assert _digest(settings, "qa", "qa_id")[0] == 0  # stopped before any batch
    finally:
        cluster.remove_node(bare)
    cluster.wait_alive([rc.HEAD_IP])
    out = _questions(settings)  # the same command, the node gone: the stage runs
    assert out["accepted"] == reference["one"]["qa"]["accepted"]
    assert _digest(settings, "qa", "qa_id") == reference["one"]["qa_digest"]
