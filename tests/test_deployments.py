"""prefect.yaml: every deployment points at a flow that exists, with parameters that flow accepts."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_every_entrypoint_is_a_flow_with_known_parameters():
    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    assert spec["deployments"]
    for dep in spec["deployments"]:
        path, fn = dep["entrypoint"].split(":")
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        flow = getattr(module, fn)
        assert hasattr(flow, "fn"), f"{dep['name']}: {fn} is not a Prefect flow"
        accepted = set(inspect.signature(flow.fn).parameters)
        unknown = set(dep.get("parameters") or {}) - accepted
        assert not unknown, f"{dep['name']}: unknown parameters {unknown}"
        for sched in dep.get("schedules") or []:
            assert len(sched["cron"].split("#")[0].split()) == 5
