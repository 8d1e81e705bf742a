"""The tool service on Ray Serve (``flows.tool_serve_ray``, ``hopforge serve-tools --ray-address``).

Fast (``make test``): a public host without a token, an address where nothing answers, a missing warehouse or
snapshot and ``--workers`` with ``--ray-address`` are each refused in one line before any cluster is joined.

Marker ``ray`` (``make test-ray``): on a local two-node cluster (a head and a second node started with ``ray start``
as separate processes on this machine, one CPU each, so the two replicas of one CPU each land one per node; both
nodes read the snapshot's served files from the test's data directory: one machine, one disk), two replicas behind
Serve's one proxy on the head take a stream of tool requests from four client threads; one replica is killed
(``ray.kill`` of its actor) once a third of the requests are answered. Every request is answered, each with exactly the
status and bytes the single in-process app (``load_app`` over the same snapshot, ``TestClient``) gives for it, and
Serve brings the deployment back to two running replicas. Retry policy of the clients, as an RL rollout's would be:
a request is sent again, up to 4 tries in all, after a connection error or a 5xx reply (tool calls are read-only, so
sending one again is safe); the test states how many were retried.
"""

from __future__ import annotations

import os
import random
import socket
import threading
import time
from pathlib import Path

import pytest

from schemas.config import load_settings
from schemas.errors import ConfigError, InputError

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "flows" / "demo"
TOKEN = "ray-serve-test-token"
NODE_IP = "127.0.0.3"
TRIES = 4  # the clients' retry policy: up to 4 tries on a connection error or a 5xx reply


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _warehouse(data_dir: Path, graphs: tuple[str, ...] = ("cs",)):
    from tasks.graph.importers import read_triples
    from warehouse.db import Warehouse
    from warehouse.graphs import write_import

    settings = load_settings(data_dir=data_dir)
    with Warehouse(settings.warehouse_path) as wh:
        for g in graphs:
            write_import(wh, read_triples(DEMO / "graphs" / f"{g}.jsonl", g), build_run_id=None)
    return settings


# -- refused in one line, no cluster ----------------------------------------------------------------------------------


def test_a_public_host_without_a_token_is_refused_before_the_cluster(tmp_path):
    from flows.tool_serve_ray import serve_on_ray

    with pytest.raises(InputError, match="beyond loopback.*HOPFORGE_TOOL_TOKEN"):
        serve_on_ray(load_settings(data_dir=tmp_path), f"127.0.0.1:{_closed_port()}", host="0.0.0.0")


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_an_address_where_nothing_answers_is_one_line(tmp_path, scheme):
    from flows.tool_serve_ray import serve_on_ray

    address = f"{scheme}127.0.0.1:{_closed_port()}"
    started = time.monotonic()
    with pytest.raises(ConfigError) as err:
        serve_on_ray(load_settings(data_dir=tmp_path), address, connect_timeout_s=2.0)
    line = str(err.value)
    assert line.startswith(f"--ray-address {address}: nothing answers there") and "\n" not in line
    assert time.monotonic() - started < 5


def test_a_bad_address_is_named():
    from flows.tool_serve_ray import check_address

    with pytest.raises(ConfigError, match="is not host:port"):
        check_address("head-without-port")


def test_a_missing_warehouse_or_snapshot_is_refused_before_the_cluster(tmp_path, monkeypatch):
    from flows import tool_serve_ray

    with socket.socket() as srv:  # something answers at the address: the snapshot is what is missing
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        address = f"127.0.0.1:{srv.getsockname()[1]}"
        monkeypatch.setattr(tool_serve_ray, "_runtime_env",
                            lambda *a: pytest.fail("the cluster was joined for a missing snapshot"))
        with pytest.raises(InputError, match="no warehouse at .*--shared-data-dir"):
            tool_serve_ray.serve_on_ray(load_settings(data_dir=tmp_path / "empty"), address, embedder="hashing")
        settings = _warehouse(tmp_path / "data")
        with pytest.raises(ValueError, match="no graph for domain"):
            tool_serve_ray.serve_on_ray(settings, address, domains=["history"], embedder="hashing")
        with pytest.raises(InputError, match="no warehouse at"):  # the nodes' path is what is read
            tool_serve_ray.serve_on_ray(settings, address, embedder="hashing", shared_data_dir=tmp_path / "elsewhere")


def test_serve_tools_on_ray_refuses_workers_and_a_dead_address(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from flows.cli import app

    monkeypatch.delenv("HOPFORGE_TOOL_TOKEN", raising=False)
    monkeypatch.setenv("HOPFORGE_DATA_DIR", str(tmp_path))
    address = f"127.0.0.1:{_closed_port()}"
    result = CliRunner().invoke(app, ["serve-tools", "--ray-address", address, "--workers", "2"])
    assert result.exit_code != 0 and "--workers" in result.output and "--replicas" in result.output
    result = CliRunner().invoke(app, ["serve-tools", "--ray-address", address, "--embedder", "hashing"])
    assert result.exit_code != 0 and f"--ray-address {address}: nothing answers there" in result.output
    result = CliRunner().invoke(app, ["serve-tools", "--ray-address", address, "--host", "0.0.0.0"])
    assert result.exit_code != 0 and "beyond loopback" in result.output


# -- the local two-node cluster ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.serve")
    from tests import ray_cluster as rc

    c = rc.new_cluster(REPO / ".venv" / "bin" / "ray", tmp_path_factory.mktemp("ray-logs"))
    try:
        c.start_head(num_cpus=1)
        c.add_node("second", NODE_IP, num_cpus=1)
        c.wait_alive([rc.HEAD_IP, NODE_IP])
        yield c
    finally:
        if ray.is_initialized():
            ray.shutdown()
        rc.remove(c)


@pytest.fixture
def _driver_like_a_users(monkeypatch, tmp_path_factory):
    """As in tests/test_ray_nodes.py: the driver finds its node by the route to the cluster, and runs outside the
    checkout (Ray puts the driver's directory on every worker's path)."""
    from ray._private import ray_constants

    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", True)
    monkeypatch.chdir(tmp_path_factory.getbasetemp())


def requests_of() -> list[tuple[str, dict]]:
    """(path, JSON body) of the tool requests sent: node_info and entity_matcher by both routes, neighbor_search,
    batches, a name the graph lacks (200, ok false) and an unknown tool (404)."""
    from tasks.graph.importers import read_triples

    graph = read_triples(DEMO / "graphs" / "cs.jsonl", "cs")
    rows = [(r.source, r.relation, r.target) for r in graph.relations][:40]
    out: list[tuple[str, dict]] = []
    for head, relation, tail in rows:
        out += [
            ("/cs/get_node", {"node_name": head}),
            ("/cs/get_precise_entity_names", {"node_name": tail.lower()}),
            ("/tools/node_info", {"node_name": tail, "graph_type": "cs"}),
            ("/tools/entity_matcher", {"node_name": head[: max(3, len(head) - 2)], "graph_type": "cs"}),
            ("/tools/neighbor_search", {"entity": head, "relation": relation, "graph_type": "cs"}),
        ]
    out.append(("/batch", {"calls": [{"name": "node_info", "arguments": {"node_name": h, "graph_type": "cs"}}
                                     for h, _, _ in rows[:8]]}))  # fmt: skip
    out.append(("/cs/get_node", {"node_name": "no such entity anywhere"}))
    out.append(("/tools/no_such_tool", {"x": 1}))
    return out


def _send(session, url: str, path: str, body: dict, headers: dict) -> tuple[int, bytes, int]:
    """The request under the retry policy: (status, body, tries used)."""
    import requests

    for attempt in range(1, TRIES + 1):
        try:
            r = session.post(url + path, json=body, headers=headers, timeout=30)
        except requests.RequestException:
            if attempt == TRIES:
                raise
        else:
            if r.status_code < 500 or attempt == TRIES:
                return r.status_code, r.content, attempt
        time.sleep(0.2 * attempt)
    raise AssertionError("unreachable")


@pytest.mark.ray
def test_two_replicas_answer_like_the_single_server_through_a_replica_kill(cluster, tmp_path, _driver_like_a_users):
    import ray
    import requests
    from fastapi.testclient import TestClient

    from flows.tool_serve_ray import load_app, serve_on_ray
    from tests import ray_cluster as rc

    settings = _warehouse(tmp_path / "data")
    port = rc.free_port(rc.HEAD_IP)
    service = serve_on_ray(settings, cluster.address, replicas=2, host=rc.HEAD_IP, port=port, embedder="hashing",
                           token=TOKEN, ready_timeout_s=240)  # fmt: skip
    try:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        calls = requests_of()
        with TestClient(load_app(settings, None, "hashing", TOKEN)) as single:
            expected = {i: (r.status_code, r.content) for i, (path, body) in enumerate(calls)
                        for r in [single.post(path, json=body, headers=auth)]}  # fmt: skip
        assert {s for s, _ in expected.values()} == {200, 404}

        # the token rule holds through Serve's proxy
        assert requests.get(f"{service.url}/health", timeout=10).status_code == 401
        assert requests.get(f"{service.url}/health", headers=auth, timeout=10).status_code == 200

        # the two replicas run on the two nodes (a replica's pid is a process of one node)
        pids = {requests.get(f"{service.url}/health", headers=auth, timeout=10).json()["worker"] for _ in range(40)}
        nodes = {n.name for n in cluster.nodes for pid in pids if pid in n.pids()}
        assert len(pids) == 2 and nodes == {"head", "second"}, (pids, nodes)

        before = service.replica_actors()
        assert len(before) == 2
        rounds = 6
        work = [i for _ in range(rounds) for i in range(len(calls))]
        random.Random(7).shuffle(work)
        answered: list[tuple[int, int, bytes, int]] = []
        lock = threading.Lock()
        third = len(work) // 3
        killed = threading.Event()
        errors: list[BaseException] = []

        def client(share: list[int]) -> None:
            with requests.Session() as session:
                for i in share:
                    try:
                        status, content, tries = _send(session, service.url, *calls[i], auth)
                    except BaseException as exc:  # noqa: BLE001 - reported below
                        errors.append(exc)
                        continue
                    with lock:
                        answered.append((i, status, content, tries))

        threads = [threading.Thread(target=client, args=(work[k::4],)) for k in range(4)]
        for t in threads:
            t.start()
        while len(answered) < third and any(t.is_alive() for t in threads):
            time.sleep(0.01)
        victim = before[0]
        ray.kill(ray.get_actor(victim, namespace="serve"), no_restart=True)
        killed.set()
        for t in threads:
            t.join(timeout=600)
        assert not errors, errors[:3]
        assert len(answered) == len(work)
        wrong = [(calls[i][0], status, content[:200], expected[i][1][:200])
                 for i, status, content, _ in answered if (status, content) != expected[i]]  # fmt: skip
        assert not wrong, wrong[:3]
        retried = sum(1 for *_, tries in answered if tries > 1)
        print(f"\n{len(work)} requests over 4 clients, replica {victim} killed after {third}: every one answered as "
              f"the single server does; {retried} needed more than one try (policy: up to {TRIES} on connection "
              "errors and 5xx)")  # fmt: skip

        # Serve replaces the killed replica: two running again, the killed one gone
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            now = service.replica_actors()
            if victim not in now and len(now) == 2 and service.running_replicas() == 2:
                break
            time.sleep(1)
        else:
            pytest.fail(f"Serve did not bring the replicas back to two: {service.replica_actors()}")
        with requests.Session() as session:  # and the new one answers the same
            for i, (path, body) in enumerate(calls):
                assert _send(session, service.url, path, body, auth)[:2] == expected[i]
        after = {requests.get(f"{service.url}/health", headers=auth, timeout=10).json()["worker"] for _ in range(40)}
        assert len(after) == 2 and len(after & pids) == 1, (pids, after)  # one survivor, one new process
    finally:
        service.stop()
    with pytest.raises(OSError):
        socket.create_connection((rc.HEAD_IP, port), timeout=2).close()
