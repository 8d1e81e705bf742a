"""Every flow's parameters are one typed model: Prefect builds it from the signature and shows it as the run form,
closed choices as lists to pick from; a bad value is refused with hopforge's own message before the flow body runs
(the line of the flow's parameter model, where it has one); the deployments in prefect.yaml validate against it;
and the run row records the whole call."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Any

import pytest
import yaml
from prefect.flows import Flow

from eval.evaluate import MODES as EVAL_MODES
from flows.runtime import HopforgeFlow
from schemas.errors import InputError
from schemas.qa import SPLITS
from schemas.trajectories import TRAJECTORY_KINDS
from tasks.export.rows import EXPORT_CONFIGS

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(p.stem for p in (ROOT / "flows").glob("*.py") if p.stem not in ("__init__", "cli", "__main__"))


def _flows() -> dict[str, Flow]:
    found = {}
    for stem in MODULES:
        mod = importlib.import_module(f"flows.{stem}")
        for obj in vars(mod).values():
            if isinstance(obj, Flow) and obj.fn.__module__ == mod.__name__:
                found[obj.name] = obj
    return found


FLOWS = _flows()


def _enum(prop: dict[str, Any], defs: dict[str, Any]) -> list[Any] | None:
    """The choices a form field offers (through arrays, optionals and references), or None."""
    if "$ref" in prop:
        return _enum(defs[prop["$ref"].split("/")[-1]], defs)
    if "enum" in prop:
        return list(prop["enum"])
    if "const" in prop:
        return [prop["const"]]
    if "items" in prop:
        return _enum(prop["items"], defs)
    for key in ("anyOf", "allOf"):
        for sub in prop.get(key, []):
            if sub.get("type") != "null":
                found = _enum(sub, defs)
                if found is not None:
                    return found
    return None


def test_the_factory_flows_are_all_found_and_all_hopforge_flows():
    assert {"generate-qa", "verify-paths", "distill-trajectories", "evaluate-policy", "export-datasets", "build-graphs",
            "ingest-corpus", "import-graphs", "refresh", "factory", "train-sft", "train-rl"} <= set(FLOWS)
    assert [name for name, f in FLOWS.items() if not isinstance(f, HopforgeFlow)] == []


@pytest.mark.parametrize("name", sorted(FLOWS))
def test_every_parameter_is_typed_in_the_run_form(name):
    flow = FLOWS[name]
    schema = flow.parameters
    untyped = [k for k, v in schema.properties.items()
               if not any(key in v for key in ("type", "anyOf", "allOf", "$ref", "enum", "const"))]
    assert untyped == [], f"{name}: parameters without a type in the run form: {untyped}"
    import inspect

    unannotated = [p.name for p in inspect.signature(flow.fn).parameters.values() if p.annotation is inspect._empty]
    assert unannotated == []


@pytest.mark.parametrize(("name", "param", "choices"), [
    ("generate-qa", "modes", ["free", "candidates"]),
    ("generate-qa", "writer", ["llm", "template"]),
    ("factory", "modes", ["free", "candidates"]),
    ("distill-trajectories", "kinds", list(TRAJECTORY_KINDS)),
    ("distill-trajectories", "split", list(SPLITS)),
    ("evaluate-policy", "modes", list(EVAL_MODES)),
    ("evaluate-policy", "split", list(SPLITS)),
    ("export-datasets", "include", list(EXPORT_CONFIGS)),
    ("refresh", "include", list(EXPORT_CONFIGS)),
    ("ingest-corpus", "source_kind", ["auto", "jsonl", "folder", "hf"]),
    ("import-graphs", "kind", ["graphml", "lightrag", "triples", "rog"]),
    ("label-difficulty", "role", ["extractor", "generator", "verifier", "teacher", "judge", "policy", "profiler"]),
    ("train-and-eval", "eval_split", list(SPLITS)),
])
def test_closed_choices_are_offered_as_choices(name, param, choices):
    schema = FLOWS[name].parameters
    assert sorted(_enum(schema.properties[param], schema.definitions or {}) or []) == sorted(choices)


@pytest.mark.parametrize(("name", "params", "says"), [
    ("generate-qa", {"modes": ["candidates", "bogus"]}, ["modes (--mode)", "'bogus'", "candidates"]),
    ("generate-qa", {"writer": "robot"}, ["writer", "'robot'", "template"]),
    ("distill-trajectories", {"split": "dev"}, ["split", "'dev'", "validation"]),
    ("evaluate-policy", {"modes": ["tools", "open_book"]}, ["modes (--mode)", "'open_book'", "gold_context"]),
    ("import-graphs", {"files": {"cs": "x.graphml"}, "kind": "csv"}, ["kind", "'csv'", "graphml"]),
    ("generate-qa", {"n_seeds": "many"}, ["n_seeds (--seeds)", "'many'", "integer"]),
    ("export-datasets", {"include": ["qa", "parquet"]}, ["include (--include)", "'parquet'", "sft_nothink"]),
])
def test_a_bad_value_is_refused_with_the_parameter_the_value_and_the_choices(name, params, says):
    """A flow with a parameter model (flows/params.py) refuses with the model's line, the command line's; a flow
    without one with Prefect's check, naming the flow and where in the value the problem is."""
    from flows.params import model_of

    flow = FLOWS[name]
    with pytest.raises(InputError) as err:
        flow.validate_parameters(params)
    text = str(err.value)
    assert all(s in text for s in says), text
    model = model_of(flow.fn.__module__, flow.fn.__name__)
    if model is None:
        assert text.startswith(f"bad parameter(s) for flow {name!r}: "), text
    else:
        with pytest.raises(InputError) as own:
            model.check(params)
        assert text == str(own.value)


def test_good_values_pass_and_are_cast():
    out = FLOWS["generate-qa"].validate_parameters({"n_seeds": "5", "modes": ["free"]})
    assert out["n_seeds"] == 5 and out["modes"] == ["free"]


def test_every_deployment_validates_against_its_flow():
    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    for dep in spec["deployments"]:
        path, attr = dep["entrypoint"].split(":")
        flow = getattr(importlib.import_module(path.removesuffix(".py").replace("/", ".")), attr)
        flow.validate_parameters(dep.get("parameters") or {})  # raises InputError naming the bad one


def test_every_run_records_the_flows_whole_call():
    """Each ``open_run`` in a flow module records ``flow_parameters(<that flow>, locals())``, not a hand-picked
    dict (checked in the source, so a new flow cannot slip by); ``test_run_parameters`` checks the stored rows."""
    hand_picked = []
    for stem in MODULES:
        tree = ast.parse((ROOT / "flows" / f"{stem}.py").read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            assigned = {t.id: node.value for node in ast.walk(fn) if isinstance(node, ast.Assign)
                        for t in node.targets if isinstance(t, ast.Name)}
            for call in ast.walk(fn):
                if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) in ("open_run", "run_step")
                        and len(call.args) > 1):
                    continue
                arg = call.args[1]
                if isinstance(arg, ast.Name) and fn.name in ("run_plan", "run_step"):
                    # the training flows pass their flow_parameters(...) through run_plan(params=...), the flows on the
                    # step contract through run_step(step, flow_parameters(...), settings), checked as a call here
                    continue
                value = assigned.get(arg.id) if isinstance(arg, ast.Name) else arg
                text = ast.unparse(value) if value is not None else ""
                if "flow_parameters(" not in text:
                    hand_picked.append(f"flows/{stem}.py:{fn.name}: {ast.unparse(arg)} = {text}")
    assert hand_picked == []


@pytest.mark.parametrize("name", ["train-sft", "train-rl"])
def test_a_training_timeout_must_be_positive(name, tmp_path):
    from schemas.config import load_settings
    from schemas.errors import TrainingError

    options = {"options": {"model": "m"}} if name == "train-sft" else {"verl": {"model": "m"}}
    with pytest.raises(TrainingError, match="timeout must be > 0 seconds, got -5"):
        FLOWS[name].fn(**options, timeout_s=-5, dry_run=True, settings=load_settings(data_dir=tmp_path))
