"""Failures that read well in the Prefect UI: a flow run given a bad parameter or a bad input ends Failed with the
expected failure's one line as its state message, and none of the run's logs (read back through Prefect's API, as
the UI shows them) carries a traceback. Covered: a Python call (the body finds the bad input; Prefect's parameter
validation refuses a bad value before the body; a task finds it), a deployment run executed by ``python -m prefect.engine`` (what a
process worker runs), and a flow pickled for ``flow.serve()``'s subprocess. Also: endpoint URLs without a host are
refused by the configuration."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from uuid import UUID

import cloudpickle
import pytest
from prefect import task
from typer.testing import CliRunner

from flows.runtime import failure_line, hopforge_flow
from schemas.config import ConfigError, load_settings
from schemas.errors import InputError

ROOT = Path(__file__).resolve().parents[1]


def run_logs(flow_run_id: UUID, until: str = "Finished in state", timeout_s: float = 20.0) -> list[str]:
    """The messages of a flow run's logs as Prefect's API serves them, once the run's last line has arrived."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=5)
    deadline = time.monotonic() + timeout_s
    while True:
        with get_client(sync_client=True) as client:
            logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))
        messages = [log.message for log in logs]
        if any(until in m for m in messages) or time.monotonic() > deadline:
            return messages
        time.sleep(0.3)


def final_state(flow_run_id: UUID):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(flow_run_id).state


def _no_traceback(messages: list[str]) -> None:
    assert messages, "the run sent no logs"
    assert not [m for m in messages if "Traceback" in m or 'File "' in m], messages


def test_a_bad_input_found_in_the_body_fails_the_run_with_its_line(prefect_harness, tmp_path):
    """A missing prerequisite only the body can find (no graphs in the warehouse; a bad parameter value is refused
    before the body, by the flow's parameter model)."""
    from flows.qa import generate_qa

    settings = load_settings(data_dir=tmp_path)
    with pytest.raises(InputError) as expected:
        generate_qa.fn(n_seeds=3, settings=settings)
    state = generate_qa(n_seeds=3, settings=settings, return_state=True)
    assert state.is_failed() and state.message == failure_line(expected.value)
    assert "no graphs" in state.message and "\n" not in state.message
    messages = run_logs(state.state_details.flow_run_id)
    _no_traceback(messages)
    assert any(failure_line(expected.value) in m for m in messages)  # the error log line names it too


def test_a_bad_parameter_value_fails_the_run_before_the_body(prefect_harness, tmp_path):
    from flows.qa import generate_qa

    settings = load_settings(data_dir=tmp_path)
    with pytest.raises(InputError) as expected:
        generate_qa.validate_parameters({"writer": "robot"})
    state = generate_qa(writer="robot", settings=settings, return_state=True)
    assert state.is_failed() and state.message == failure_line(expected.value)
    assert "'robot'" in state.message and "Validation of flow parameters" not in state.message
    assert state.message == "writer must be llm or template, got 'robot'"  # the line of the flow's parameter model
    assert not settings.warehouse_path.exists()  # refused before the body: no run recorded
    with pytest.raises(InputError, match="writer"):  # a Python call still raises the error itself
        generate_qa(writer="robot", settings=settings)


@task
def _refuse(x: int) -> int:
    raise InputError(f"x must be at least 1, got {x}: give a positive x")


@hopforge_flow(name="refusing-task")
def _refusing(x: int = -1) -> int:
    return _refuse(x)


def test_a_bad_input_found_in_a_task_fails_task_and_flow_with_its_line(prefect_harness):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    line = "x must be at least 1, got -1: give a positive x"
    state = _refusing(x=-1, return_state=True)
    assert state.is_failed() and state.message == line
    flow_run_id = state.state_details.flow_run_id
    deadline = time.monotonic() + 20
    while True:  # task run states reach the API through its event stream: a moment after the run
        with get_client(sync_client=True) as client:
            runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
        if (runs and runs[0].state and runs[0].state.is_final()) or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    [task_run] = runs
    assert task_run.state.is_failed() and task_run.state.message == line, task_run.state
    _no_traceback(run_logs(flow_run_id))


def test_a_deployment_run_with_a_bad_parameter_fails_with_its_line(prefect_harness, tmp_path, monkeypatch):
    """The run as a process worker executes it: ``python -m prefect.engine`` for a run created from a deployment
    with ``n_seeds=-1`` (a value the run form accepts: an int; the flow's parameter model refuses it with the
    command line's line before the body), the flow loaded from its entrypoint."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL

    from flows.qa import generate_qa

    monkeypatch.chdir(ROOT)  # the entrypoint is relative to the project root, as in prefect.yaml
    with pytest.raises(InputError) as expected:
        generate_qa.fn(n_seeds=-1, settings=load_settings())
    deployment_id = generate_qa.to_deployment(name="bad-input-test").apply()
    with get_client(sync_client=True) as client:
        run = client.create_flow_run_from_deployment(deployment_id, parameters={"n_seeds": -1})
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "PREFECT__FLOW_RUN_ID": str(run.id)}
    done = subprocess.run([sys.executable, "-m", "prefect.engine"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=180)  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    state = final_state(run.id)
    assert state.is_failed() and state.message == failure_line(expected.value), state.message
    messages = run_logs(run.id)
    _no_traceback(messages)
    # the engine's last word carries the failure instead of the traceback it used to need to say what
    assert any(m.startswith("Engine execution exited") and failure_line(expected.value) in m for m in messages)


def test_a_flow_pickled_for_a_served_run_validates_as_in_process():
    """``flow.serve()`` runs each flow run in a spawned process that unpickles the flow; its parameters must be
    validated there with hopforge's message, not fail with pydantic's "not fully defined" for every run."""
    from flows.qa import generate_qa

    served = cloudpickle.loads(cloudpickle.dumps(generate_qa))
    assert served.fn is generate_qa.fn
    with pytest.raises(InputError, match=r"n_seeds.*'many'"):
        served.validate_parameters({"n_seeds": "many"})
    assert served.validate_parameters({"n_seeds": "5"})["n_seeds"] == 5


# -- endpoint URLs ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("url", "says"), [
    ("http://", "has no host"),
    ("https:///v1", "has no host"),
    ("http://:8000/v1", "has no host"),
    ("localhost:8000", "must start with http:// or https://"),
    ("ftp://x", "must start with http:// or https://"),
    ("http://gpu-box:port/v1", "is not a valid URL"),
])
def test_an_endpoint_url_without_a_host_is_refused_naming_the_setting(url, says):
    for kwargs, setting, env in [
        ({"roles": {"judge": {"base_url": url, "model": "m"}}}, "roles.judge.base_url", "HOPFORGE_ROLES__JUDGE__BASE_URL"),
        ({"embeddings": {"base_url": url, "model": "e", "dim": 8}}, "embeddings.base_url", "HOPFORGE_EMBEDDINGS__BASE_URL"),
    ]:  # fmt: skip
        with pytest.raises(ConfigError) as err:
            load_settings(**kwargs)
        lines = [line for line in str(err.value).splitlines() if setting in line]
        assert len(lines) == 1 and says in lines[0] and repr(url) in lines[0] and env in lines[0], str(err.value)


def test_good_endpoint_urls_pass():
    s = load_settings(roles={"judge": {"base_url": "http://gpu-box:8000/v1/", "model": "m"}},
                      embeddings={"base_url": "https://[::1]:9000/v1", "model": "e", "dim": 8})  # fmt: skip
    assert s.endpoint("judge").base_url == "http://gpu-box:8000/v1"
    assert s.embeddings.base_url == "https://[::1]:9000/v1"


def test_a_hostless_url_stops_a_command_before_it_starts(monkeypatch, tmp_path):
    from flows.cli import app

    warehouse = load_settings().warehouse_path
    monkeypatch.setenv("HOPFORGE_ROLES__GENERATOR__BASE_URL", "http://")
    monkeypatch.setenv("HOPFORGE_ROLES__GENERATOR__MODEL", "m")
    result = CliRunner().invoke(app, ["qa", "generate", "--seeds", "3"])
    assert result.exit_code == 2, result.output
    flat = " ".join(result.output.split())
    assert "roles.generator.base_url" in flat and "has no host" in flat and "Traceback" not in result.output
    assert not warehouse.exists()  # nothing ran: no warehouse was made
