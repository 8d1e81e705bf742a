"""The flows' parameter models (flows/params.py) are the one declaration of each flow verb's parameters: every option
of a verb built from a model is one of its fields (or the verb's own --config / --gguf), every field is a parameter of
its flow with the flow's default (or a part of a trainer's options, gathered into its parameter), and the command line,
the flow and a deployment's parameters refuse a bad value with the same line (a flow without a model keeps Prefect's
check, worded by ``HopforgeFlow``). No verb that runs a flow is written by hand (``HAND_WRITTEN`` lists those that
run none). The demo and the training verbs: tests/test_params_commands.py."""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from pathlib import Path

import click
import pytest
import typer
from typer.testing import CliRunner

from flows.cli import app
from flows.cli_options import model_values
from flows.params import (COMMAND_MODELS, MODELS, BuildGraphs, Demo, DistillTrajectories, Doctor, EvaluatePolicy,
                          ExportDatasets, ExportProfiles, FlowParams, GenerateQA, ImportGraphs, ImportProfiles,
                          IngestCorpus, Refresh, ReportGraphs, Smoke, TrainRL, TrainSFT, VerifyPaths, cli_of, flags_of,
                          is_parameter, model_of)
from schemas.errors import InputError

#: Options a verb declares itself: what the command applies to the settings, never a flow parameter.
OWN_OPTIONS = {"config", "gguf"}

VERBS = {("qa", "generate"): GenerateQA, ("qa", "paths"): VerifyPaths, ("traj", "distill"): DistillTrajectories,
         ("eval", "run"): EvaluatePolicy, ("export",): ExportDatasets, ("graph", "build"): BuildGraphs,
         ("ingest",): IngestCorpus, ("refresh",): Refresh, ("demo",): Demo, ("train", "sft"): TrainSFT,
         ("train", "rl"): TrainRL, ("doctor",): Doctor, ("smoke",): Smoke, ("graph", "report"): ReportGraphs,
         ("graph", "import"): ImportGraphs, ("graph", "profiles", "import"): ImportProfiles,
         ("graph", "profiles", "export"): ExportProfiles}
#: A file that is there (graph import and profiles import refuse a path that is not a file).
HERE = str(Path(__file__).resolve())
#: A value for each required parameter, where "x" would not do.
REQUIRED = {TrainSFT: {"options": {"model": "m"}}, ImportGraphs: {"files": {"cs": HERE}},
            ImportProfiles: {"path": HERE}}


def _flow(model: type[FlowParams]):
    module, name = model.flow.split(":")
    return getattr(importlib.import_module(module), name)


def _command(path: tuple[str, ...]) -> click.Command:
    cmd = typer.main.get_command(app)
    for word in path:
        cmd = cmd.commands[word]  # type: ignore[attr-defined]
    return cmd


#: The verbs written by hand: none runs a flow (they read the warehouse or a checkpoint, serve, or manage the
#: Prefect server). A verb that runs a flow is built from its flow's model (``verb(group, name, Model)``) instead.
HAND_WRITTEN = {("serve-tools",), ("serve-model",), ("config", "show"), ("warehouse", "tables"), ("warehouse", "runs"),
                ("warehouse", "export"), ("warehouse", "check"), ("warehouse", "backup"), ("warehouse", "restore"),
                ("graph", "export"), ("qa", "stats"), ("traj", "stats"), ("train", "serve-command"),
                ("train", "runs"), ("server", "start"), ("server", "stop"), ("server", "status")}


def _callbacks() -> dict[tuple[str, ...], object]:
    """Every command of the app, by its words, with the function it runs."""
    found = {}

    def walk(typer_app: typer.Typer, path: tuple[str, ...]) -> None:
        for info in typer_app.registered_commands:
            found[(*path, info.name or info.callback.__name__.replace("_", "-"))] = info.callback
        for group in typer_app.registered_groups:
            walk(group.typer_instance, (*path, group.name))

    walk(app, ())
    return found


def _generated() -> dict[tuple[str, ...], click.Command]:
    """Every command built from a model, found by walking the app (a new one is held to the same rules)."""
    return {path: _command(path) for path, callback in _callbacks().items() if getattr(callback, "model", None)}


def test_the_flow_verbs_are_built_from_their_models():
    generated = _generated()
    assert {path: cmd.callback.model for path, cmd in generated.items() if path in VERBS} == VERBS
    assert {cmd.callback.model for cmd in generated.values()} <= set(COMMAND_MODELS)


def test_a_verb_that_runs_a_flow_is_never_written_by_hand():
    """Every verb not built from a model is one of ``HAND_WRITTEN``, and none of them imports a flow (in its body or
    the body it hands ``_run``): a new hand-written verb fails here until it is built from its flow's model."""
    from prefect import Flow

    hand = {path: callback for path, callback in _callbacks().items() if getattr(callback, "model", None) is None}
    assert set(hand) == HAND_WRITTEN
    for path, callback in hand.items():
        tree = ast.parse(textwrap.dedent(inspect.getsource(callback)))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                module = importlib.import_module(node.module)
                flows = [a.name for a in node.names if isinstance(getattr(module, a.name, None), Flow)]
                assert not flows, f"{' '.join(path)} runs the flow(s) {flows}: build it from their model"


@pytest.mark.parametrize("path", sorted(_generated()), ids=" ".join)
def test_every_option_of_a_generated_verb_is_a_field_and_every_offered_field_an_option(path):
    cmd = _generated()[path]
    model = cmd.callback.model
    names = [p.name for p in cmd.params]
    offered = [n for n in model.model_fields if not cli_of(model, n).hidden]
    assert sorted(set(names) - OWN_OPTIONS) == sorted(offered)
    assert len(names) == len(set(names))
    for param in cmd.params:
        if param.name in OWN_OPTIONS:
            continue
        assert [*param.opts, *param.secondary_opts] == list(flags_of(model, param.name)) or cli_of(model, param.name).argument
        field = model.model_fields[param.name]
        assert param.help == (cli_of(model, param.name).help or field.description)
        assert param.required == (cli_of(model, param.name).required or (field.is_required() and
                                                                        cli_of(model, param.name).argument))


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_field_is_a_parameter_of_its_flow_with_the_flows_default(model):
    signature = inspect.signature(_flow(model).fn)
    parameters = {n: p for n, p in signature.parameters.items() if n != "settings"}
    fields = {n: f for n, f in model.model_fields.items() if is_parameter(model, n)}
    assert sorted(fields) == sorted(parameters), "the model and the flow's signature name different parameters"
    for name, field in fields.items():
        flow_default = parameters[name].default
        if flow_default is inspect.Parameter.empty:
            assert field.is_required(), name
        else:
            assert field.default == flow_default, (name, field.default, flow_default)
    assert all(cli_of(model, n).hidden is False for n in model.model_fields if cli_of(model, n).command_only)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_the_defaults_pass_the_model_and_are_the_flows_call(model):
    required = {n: "x" for n, f in model.model_fields.items() if f.is_required()} | REQUIRED.get(model, {})
    params = model.check(required)
    assert set(params.flow_kwargs()) <= set(inspect.signature(_flow(model).fn).parameters)


def test_the_profiles_exports_fields_are_its_functions_parameters_and_its_call():
    """``graph profiles export`` runs no flow of its own but ``export_profiles`` (which runs ``profile-relations``
    when asked): its model's fields are that function's parameters, with its defaults where it has them."""
    module, name = ExportProfiles.function.split(":")
    function = getattr(importlib.import_module(module), name)
    parameters = {n: p for n, p in inspect.signature(function).parameters.items() if n != "settings"}
    assert sorted(ExportProfiles.model_fields) == sorted(parameters)
    for n, p in parameters.items():
        assert p.default is inspect.Parameter.empty or ExportProfiles.model_fields[n].default == p.default, n
    assert set(ExportProfiles().call_kwargs()) == set(parameters)


def test_values_given_in_another_form_become_the_flows():
    assert model_values(GenerateQA, {"hop_mix": 0.3, "modes": None})["hop_mix"] == {"1-2": 0.3, "3+": 0.7}
    assert "modes" not in model_values(GenerateQA, {"modes": None})  # not given: the flow's default
    assert model_values(EvaluatePolicy, {"split": "all"}) == {"split": None}
    assert model_values(EvaluatePolicy, {"split": "test"}) == {"split": "test"}


# -- one refusal for both ways in --------------------------------------------------------------------------------
BAD = [
    (["qa", "generate", "--seeds", "0"], GenerateQA, {"n_seeds": 0}, "n_seeds (--seeds) must be at least 1, got 0"),
    (["qa", "generate", "--attempts", "0"], GenerateQA, {"max_attempts": 0},
     "max_attempts (--attempts) must be at least 1, got 0"),
    (["qa", "generate", "-m", "bogus"], GenerateQA, {"modes": ["bogus"]},
     "modes (--mode) must be free or candidates, got 'bogus'"),
    (["qa", "generate", "--min-ball", "30", "--max-ball", "10"], GenerateQA, {"min_ball": 30, "max_ball": 10},
     "max_ball (--max-ball) is 10, below min_ball (--min-ball) 30"),
    (["qa", "generate", "--short-share", "1.5"], GenerateQA, {"hop_mix": {"1-2": 1.5, "3+": -0.5}},
     "hop_mix['1-2'] must be a share between 0 and 1, got 1.5 (--short-share sets 1-2 and 3+ = 1 - it)"),
    (["qa", "generate", "--meaning-check", "maybe"], GenerateQA, {"meaning_check": "maybe"},
     "meaning_check (--meaning-check) must be auto, on or off, got 'maybe'"),
    (["qa", "generate", "-d", "../etc"], GenerateQA, {"domains": ["../etc"]}, "'../etc' is not a valid domain name"),
    (["qa", "paths", "--max-paths", "0"], VerifyPaths, {"max_paths": 0},
     "max_paths (--max-paths) must be at least 1, got 0"),
    (["qa", "paths", "--time-budget", "0"], VerifyPaths, {"time_budget_s": 0.0},
     "time_budget_s (--time-budget) must be above 0, got 0.0"),
    (["traj", "distill", "-k", "bogus"], DistillTrajectories, {"kinds": ["bogus"]},
     "kinds (--kind) must be template, rollouts or cot, got 'bogus'"),
    (["traj", "distill", "--rollouts", "-1"], DistillTrajectories, {"n_rollouts": -1},
     "n_rollouts (--rollouts) must be at least 0, got -1"),
    (["traj", "distill", "--split", "dev"], DistillTrajectories, {"split": "dev"},
     "split (--split) must be train, validation or test, got 'dev'"),
    (["eval", "run", "--limit", "0"], EvaluatePolicy, {"limit": 0}, "limit (--limit) must be at least 1, got 0"),
    (["eval", "run", "-m", "open_book"], EvaluatePolicy, {"modes": ["open_book"]},
     "modes (--mode) must be tools, no_tools or gold_context, got 'open_book'"),
    (["eval", "run", "--split", "dev"], EvaluatePolicy, {"split": "dev"},
     "split (--split) must be train, validation or test, got 'dev'"),
    (["eval", "run", "--ikg-level", "1.5"], EvaluatePolicy, {"ikg_levels": [1.5]},
     "IKG level must be a share between 0 and 1, both excluded (0.4 for IKG-40%), got 1.5"),
    (["export", "--version", "../up"], ExportDatasets, {"version": "../up"},
     "version '../up' is not usable as a directory name"),
    (["export", "-i", "parquet"], ExportDatasets, {"include": ["parquet"]},
     "include (--include) must be qa, sft, sft_nothink, rl or messages, got 'parquet'"),
    (["refresh", "--n-seeds", "-1"], Refresh, {"n_seeds": -1}, "n_seeds (--n-seeds) must be at least 0, got -1"),
    (["graph", "build", "-d", "Bad Name"], BuildGraphs, {"domains": ["Bad Name"]},
     "'Bad Name' is not a valid domain name"),
    (["graph", "import", HERE, "-d", "cs", "--kind", "csv"], ImportGraphs, {"files": {"cs": HERE}, "kind": "csv"},
     "unknown graph kind 'csv'; choose from graphml, lightrag, triples, rog"),
    (["graph", "profiles", "import", "/nowhere/p.yaml"], ImportProfiles, {"path": "/nowhere/p.yaml"},
     "/nowhere/p.yaml: no such file"),
]


@pytest.mark.parametrize(("argv", "model", "params", "says"), BAD, ids=lambda x: " ".join(x) if isinstance(x, list) else "")
def test_a_bad_value_is_refused_alike_by_the_command_and_by_the_flow(argv, model, params, says, tmp_path, monkeypatch):
    monkeypatch.setenv("HOPFORGE_DATA_DIR", str(tmp_path / "data"))
    result = CliRunner().invoke(app, argv)
    flat = " ".join(result.output.split())
    assert result.exit_code == 2 and says in flat and "Traceback" not in result.output, flat
    required = {"source": str(tmp_path)} if model is IngestCorpus else {}
    with pytest.raises(InputError) as refused:
        _flow(model).fn(**required, **params)
    assert says in str(refused.value)
    assert " ".join(str(refused.value).split()) in flat  # the same line, word for word
    with pytest.raises(InputError) as deployed:  # a deployment's parameters, as Prefect checks them before the body
        _flow(model).validate_parameters({**required, **params})
    assert str(deployed.value) == str(refused.value)
    assert not (tmp_path / "data").exists()  # refused before anything was opened


def test_a_flow_without_a_model_keeps_prefects_check_and_a_missing_parameter_is_named():
    from flows.profiles import profile_relations

    assert model_of("flows.profiles", "profile_relations") is None
    with pytest.raises(InputError, match=r"^bad parameter\(s\) for flow 'profile-relations': domains: Input should "
                                         r"be a valid list \(given 5\)$"):
        profile_relations.validate_parameters({"domains": 5})
    with pytest.raises(InputError, match=r"^source is required$"):
        _flow(IngestCorpus).validate_parameters({"source_kind": "jsonl"})


def test_graph_import_checks_its_file_and_domain_before_the_flow_which_checks_its_own():
    """The command line's file and domain are the flow's ``files``, checked by the model with --allow-new-domains;
    a Python caller (a benchmark, the demo) may name a new domain, and the flow checks the files where it reads
    them (a deployment's parameters hold the placeholder ``files: {}``)."""
    flow = _flow(ImportGraphs)
    assert ImportGraphs.check({"path": Path(HERE), "domain": "cs"}).flow_kwargs() == {"files": {"cs": HERE},
                                                                                        "kind": None}
    with pytest.raises(InputError, match="unknown domain 'chess'.*--allow-new-domains"):
        ImportGraphs.check({"path": Path(HERE), "domain": "chess"})
    assert ImportGraphs.check({"path": Path(HERE), "domain": "chess", "allow_new_domains": True})
    with pytest.raises(InputError, match="/nowhere/g.graphml \\(domain cs\\): no such file"):
        ImportGraphs.check({"path": Path("/nowhere/g.graphml"), "domain": "cs"})
    assert flow.validate_parameters({"files": {}})["files"] == {}  # prefect.yaml's placeholder
    for files, says in [({"Chess": HERE}, "'Chess' is not a valid domain name"), ({}, "no graph files given"),
                        ({"cs": "/nowhere/g.graphml"}, "/nowhere/g.graphml (domain cs): no such file")]:
        with pytest.raises(InputError) as refused:
            flow.fn(files=files)  # the flow's own check, before it opens anything
        assert says in str(refused.value)
