"""An endpoint that is down stops the stage with one clear ``EndpointError`` (exit 3), and a later run resumes."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from flows.batches import DownEndpoints
from gateway.usage import RoleUsage
from schemas.config import load_settings
from schemas.errors import EndpointError

DEMO = Path(__file__).resolve().parent.parent / "flows" / "demo"


def _closed_port() -> int:
    with socket.socket() as s:  # bound then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def usage(role: str, calls: int = 0, refused: int = 0) -> list[RoleUsage]:
    return [RoleUsage(role, calls=calls, failures=Counter({"connection": refused} if refused else {}))]


def test_two_refused_batches_in_a_row_stop_the_stage():
    down = DownEndpoints()
    down.see(usage("generator", refused=4))
    down.check("generate-batch", final=False)  # one batch may be a blip
    down.see(usage("generator", refused=4))
    with pytest.raises(EndpointError, match=r"generate-batch: the generator endpoint cannot be reached: 8 request"):
        down.check("generate-batch", final=False)


def test_a_batch_that_got_through_resets_the_count_and_bad_answers_do_not_count():
    down = DownEndpoints()
    down.see(usage("generator", refused=4))
    down.see(usage("generator", calls=3, refused=1))  # some requests reached it: up, just flaky
    down.see(usage("generator", refused=2))
    down.check("generate-batch", final=True)  # it answered earlier in this run: not down
    other = DownEndpoints()
    other.see([RoleUsage("verifier", failures=Counter({"validation": 5, "timeout": 2}))])
    other.see([RoleUsage("verifier", failures=Counter({"validation": 5}))])
    other.check("verify-batch", final=True)  # the endpoint answered badly or slowly: not a connection failure


def test_a_single_batch_run_that_never_connected_fails_at_its_end():
    down = DownEndpoints()
    down.see(usage("teacher", refused=3))
    with pytest.raises(EndpointError, match="teacher endpoint"):
        down.check("distill-batch", final=True)


def test_generate_qa_against_a_closed_port_fails_fast_then_resumes(prefect_harness, fake_llm, tmp_path):
    from flows.graphs import import_graphs
    from flows.qa import generate_qa
    from tasks.graph.importers import read_triples
    from testing.permissive_profiles import store_one_each_way
    from tests.test_qa_flow import good_pick
    from warehouse.db import Warehouse

    dead = {"base_url": f"http://127.0.0.1:{_closed_port()}/v1", "model": "m", "max_retries": 0, "timeout_s": 5}
    live = {"base_url": fake_llm.base_url, "model": "fake-model", "max_retries": 0, "timeout_s": 10}
    down = load_settings(data_dir=tmp_path, roles={"generator": dead, "verifier": live})
    import_graphs(files={"cs": str(DEMO / "graphs" / "cs.jsonl")}, settings=down)
    # an outage, not what may be asked, is tested: every relation of the graph can be asked (the user's profiles)
    with Warehouse(down.warehouse_path) as wh:
        store_one_each_way(wh, [read_triples(DEMO / "graphs" / "cs.jsonl", "cs").to_graph()])
    with pytest.raises(EndpointError, match=r"the generator endpoint at http://127\.0\.0\.1:\d+/v1 \(model m\) cannot"):
        generate_qa(domains=["cs"], n_seeds=6, modes=["candidates"], batch_size=2, use_judge=False, settings=down)

    fake_llm.add(schema_name="qa_pick_path", reply=good_pick)
    up = load_settings(data_dir=tmp_path, roles={"generator": live, "verifier": live})
    out = generate_qa(domains=["cs"], n_seeds=6, modes=["candidates"], batch_size=2, use_judge=False, settings=up)
    assert sum(y["accepted"] for y in out["yields"]) == 6  # every job lost to the endpoint is tried again


def test_the_cli_prints_one_line_and_exits_3(tmp_path):
    config = tmp_path / "hopforge.toml"
    config.write_text(f'data_dir = "{tmp_path.as_posix()}/data"\n[roles.generator]\nbase_url = '
                      f'"http://127.0.0.1:{_closed_port()}/v1"\nmodel = "m"\nmax_retries = 0\n', encoding="utf-8")
    imported = subprocess.run([sys.executable, "-m", "flows.cli", "graph", "import", "--config", str(config),
                               "--domain", "cs", str(DEMO / "graphs" / "cs.jsonl")],
                              capture_output=True, text=True, timeout=300)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    run = subprocess.run([sys.executable, "-m", "flows.cli", "qa", "generate", "--config", str(config), "--domain",
                          "cs", "--seeds", "4", "--no-judge"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 3, run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert "the generator endpoint at http://127.0.0.1:" in run.stderr
