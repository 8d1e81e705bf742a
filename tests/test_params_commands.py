"""The demo's and the training verbs' parameter models (flows/params.py: ``Demo``, ``TrainSFT``, ``TrainRL``): the
options a person sets one by one are parts of the trainer's option model, gathered into the flow's parameter and
checked by that model's own check; a bad value is refused with the same line from the command line, from the
model a deployment's parameters are checked with and from the flow called from Python; the demo's defaults are the demo plan's and its options make the
factory's call. (The rules every generated verb follows are in tests/test_params.py.)"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel
from typer.testing import CliRunner

from flows.cli import app
from flows.params import Demo, TrainRL, TrainSFT, cli_of, option_sets
from schemas.errors import HopforgeError, InputError, TrainingError
from training.rl_common import options_from
from training.rl_trl import TRLOptions
from training.rl_verl import VerlOptions
from training.sft import SFTOptions

ROOT = Path(__file__).resolve().parent.parent
#: The trainer model each parameter the parts go into holds.
TRAINER_MODELS = {TrainSFT: {"options": SFTOptions}, TrainRL: {"verl": VerlOptions, "trl": TRLOptions}}


def _flow_parameters(name: str) -> set[str]:
    import flows.train

    return set(inspect.signature(getattr(flows.train, name).fn).parameters) - {"settings"}


def _flow_name(model: type[BaseModel]) -> str:
    """The name of the training flow a model declares (``flows.train:train_sft`` -> ``train_sft``)."""
    return model.flow.split(":")[1]  # type: ignore[attr-defined]


def _key_of(model: type[BaseModel], dotted: str) -> Any:
    """The field a dotted key names in a trainer model (through its sections); ``KeyError`` when there is none."""
    *sections, leaf = dotted.split(".")
    for section in sections:
        model = model.model_fields[section].annotation
    return model.model_fields[leaf]


# -- the demo ------------------------------------------------------------------------------------------------------


def test_the_demo_defaults_are_the_plans_and_its_options_make_the_factorys_call():
    from flows.factory import DEMO_PLAN, factory

    demo = Demo()
    assert (demo.seeds, demo.short_share, demo.free_seeds, demo.deep_questions, demo.eval_items) == (
        DEMO_PLAN.seeds, DEMO_PLAN.short_share, DEMO_PLAN.free_seeds, DEMO_PLAN.deep_questions, DEMO_PLAN.eval_items)
    call = demo.factory_kwargs()
    assert set(call) <= set(inspect.signature(factory.fn).parameters)
    assert call["n_seeds"] == 10 and call["hop_mix"] == {"1-2": 0.8, "3+": pytest.approx(0.2)}
    assert call["eval_limit"] == DEMO_PLAN.eval_items
    assert Demo(eval_items=0).factory_kwargs()["eval_limit"] is None  # 0: the whole test split


def test_the_demo_hands_the_factory_its_models_call(monkeypatch, tmp_path):
    import flows.doctor
    import flows.factory
    import flows.smoke

    seen: list[dict[str, Any]] = []

    def factory(**kw):
        seen.append(kw)
        raise InputError("stop here")

    monkeypatch.setattr(flows.doctor, "doctor", lambda settings: {"ok": True, "run_id": "d"})
    monkeypatch.setattr(flows.smoke, "smoke", lambda settings: {})
    monkeypatch.setattr(flows.factory, "factory", factory)
    monkeypatch.setenv("HOPFORGE_DATA_DIR", str(tmp_path / "data"))
    argv = ["--seeds", "3", "--short-share", "0.6", "--free-seeds", "2", "--deep-questions", "0", "--eval-items", "0",
            "--min-ball", "5", "--max-ball", "50"]
    result = CliRunner().invoke(app, ["demo", *argv])
    assert result.exit_code == 2 and "stop here" in result.output, result.output
    want = Demo.check({"seeds": 3, "short_share": 0.6, "free_seeds": 2, "deep_questions": 0, "eval_items": 0,
                       "min_ball": 5, "max_ball": 50}).factory_kwargs()
    assert {k: seen[0][k] for k in want} == want
    assert want["eval_limit"] is None and want["hop_mix"]["1-2"] == 0.6 and want["deep_questions"] == 0


# -- training: the parts of the trainer's options -------------------------------------------------------------------


@pytest.mark.parametrize("model", [TrainSFT, TrainRL], ids=lambda m: m.__name__)
def test_every_part_is_an_option_of_its_trainers_model(model):
    parts = {n: cli_of(model, n).part for n in model.model_fields if cli_of(model, n).part is not None}
    assert {"model", "sets", "nnodes", "deepspeed"} <= set(parts)
    for name, part in parts.items():
        keys = {into: part for into in TRAINER_MODELS[model]} if isinstance(part, str) else part
        assert keys, name
        for into, key in keys.items():
            if key:  # "" is --set: options merged whole
                _key_of(TRAINER_MODELS[model][into], key)  # a KeyError names a part no trainer takes


def test_the_command_line_gathers_the_trainer_options_as_the_flow_takes_them(monkeypatch, tmp_path):
    import flows.train

    parameters = _flow_parameters("train_sft")
    seen: dict[str, Any] = {}
    monkeypatch.setattr(flows.train, "preflight", lambda settings, export, opts, **kw: seen.update(preflight=opts))
    monkeypatch.setattr(flows.train, "train_sft", lambda **kw: seen.update(kw) or {
        "status": "dry_run", "train_id": "t", "run_dir": "d", "command": "c", "checkpoint": None})
    monkeypatch.setenv("HOPFORGE_DATA_DIR", str(tmp_path / "data"))
    result = CliRunner().invoke(app, [
        "train", "sft", "-m", "M", "-e", "v1", "--full", "--dataset", "a", "--dataset", "b", "--think-weight", "0.001",
        "--set", "think_weight=0.5", "--set", "cluster.master_port=1234", "--set", "cluster.device=cpu",
        "--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.1", "--deepspeed", "zero2", "--run-id", "r1",
        "--offline", "--dry-run", "--timeout", "30"])
    assert result.exit_code == 0, result.output
    opts = seen["options"]
    assert seen["preflight"] is opts and isinstance(opts, SFTOptions)
    assert (opts.model, opts.finetuning_type, opts.dataset, opts.think_weight, opts.deepspeed) == (
        "M", "full", ["a", "b"], 0.001, "zero2")  # an option of its own wins over --set
    assert opts.cluster.model_dump(include={"nnodes", "node_rank", "master_addr", "master_port", "device"}) == {
        "nnodes": 2, "node_rank": 1, "master_addr": "10.0.0.1", "master_port": 1234, "device": "cpu"}
    assert set(seen) - {"preflight", "settings"} == parameters
    assert (seen["export_version"], seen["run_id"], seen["offline"], seen["dry_run"], seen["timeout_s"]) == (
        "v1", "r1", True, True, 30.0)


@pytest.mark.parametrize("trainer", ["verl", "trl"])
def test_train_rl_gathers_the_options_of_its_trainer(trainer, monkeypatch, tmp_path):
    import flows.train

    parameters = _flow_parameters("train_rl")
    seen: dict[str, Any] = {}
    monkeypatch.setattr(flows.train, "preflight",
                        lambda settings, export, opts, **kw: seen.update(preflight=(opts, kw)))
    monkeypatch.setattr(flows.train, "train_rl", lambda **kw: seen.update(kw) or {
        "status": "dry_run", "train_id": "t", "run_dir": "d", "command": "c", "checkpoint": None})
    monkeypatch.setenv("HOPFORGE_DATA_DIR", str(tmp_path / "data"))
    common = ["train", "rl", "-m", "M", "--trainer", trainer, "--stage", "sft", "--reward", "omne_stage1",
              "--tool-server", "http://10.0.0.5:8765", "--tool-workers", "3", "--shared-dir", str(tmp_path)]
    own = (["--ray-address", "10.0.0.1:6379", "--nnodes", "2", "--set", "n_gpus_per_node=2"] if trainer == "verl" else
           ["--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.1", "--deepspeed", "zero3",
            "--set", "num_generations=2"])
    result = CliRunner().invoke(app, [*common, *own, "--dry-run"])
    assert result.exit_code == 0, result.output
    opts, preflight_kw = seen["preflight"]
    assert seen[trainer] is opts and seen["verl" if trainer == "trl" else "trl"] is None
    assert (opts.model, opts.stage, opts.reward, opts.tool_server_url) == ("M", "sft", "omne_stage1",
                                                                           "http://10.0.0.5:8765")
    assert seen["start_tool_server"] is False and seen["tool_workers"] == 3 and seen["shared_dir"] == str(tmp_path)
    if trainer == "verl":  # verl's own options: its checkpoints' directory, its nodes, its Ray cluster
        assert (opts.shared_dir, opts.nnodes, opts.ray_address, opts.n_gpus_per_node) == (
            str(tmp_path), 2, "10.0.0.1:6379", 2)
        assert preflight_kw["shared_dir"] is None
    else:
        assert (opts.cluster.nnodes, opts.cluster.node_rank, opts.deepspeed, opts.num_generations) == (2, 1, "zero3", 2)
        assert preflight_kw["shared_dir"] == str(tmp_path)
    assert set(seen) - {"preflight", "settings"} == parameters


@pytest.mark.parametrize(("name", "model", "into", "trainer_model"), [
    ("train-sft", TrainSFT, "options", SFTOptions), ("train-rl", TrainRL, "verl", VerlOptions)])
def test_the_training_deployments_parameters_pass_the_models(name, model, into, trainer_model):
    deployments = {d["name"]: d for d in yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]}
    parameters = deployments[name]["parameters"]
    params = model.check(parameters)
    assert isinstance(getattr(params, into), trainer_model)
    assert getattr(params, into) == trainer_model.model_validate(parameters[into])
    assert set(params.flow_kwargs()) <= _flow_parameters(name.replace("-", "_"))


def test_set_pairs_read_as_yaml_and_nest():
    assert option_sets(["a=1", "b.c=true", "b.d=[1, 2]", "e=x: y: z", "f="]) == {
        "a": 1, "b": {"c": True, "d": [1, 2]}, "e": "x: y: z", "f": ""}
    with pytest.raises(InputError, match="expected KEY=VALUE"):
        option_sets(["novalue"])
    with pytest.raises(InputError, match="a is already a value"):
        option_sets(["a=1", "a.b=2"])


# -- one refusal for both ways in ------------------------------------------------------------------------------------
# (argv, model, the values the model is given, the line): where the values are a deployment's parameters (the
# trainer's options as one mapping), the trainer model's own check says the line too.
SFT = ["train", "sft", "-m", "m"]
RL = ["train", "rl", "-m", "m"]
BAD = [
    (["demo", "--short-share", "1.5"], Demo, {"short_share": 1.5}, "--short-share must be between 0 and 1, got 1.5"),
    (["demo", "--deep-questions", "-1"], Demo, {"deep_questions": -1}, "--deep-questions must be >= 0, got -1"),
    (["demo", "--eval-items", "-2"], Demo, {"eval_items": -2},
     "--eval-items must be >= 0 (0: the whole test split), got -2"),
    (["demo", "--seeds", "0"], Demo, {"seeds": 0}, "seeds (--seeds) must be at least 1, got 0"),
    (["demo", "--free-seeds", "0"], Demo, {"free_seeds": 0}, "free_seeds (--free-seeds) must be at least 1, got 0"),
    (["demo", "--min-ball", "30", "--max-ball", "10"], Demo, {"min_ball": 30, "max_ball": 10},
     "max_ball (--max-ball) is 10, below min_ball (--min-ball) 30"),
    ([*SFT, "--think-weight", "-1"], TrainSFT, {"options": {"model": "m", "think_weight": -1}},
     "bad SFT options: think_weight: Input should be greater than or equal to 0"),
    ([*SFT, "--deepspeed", "zero4"], TrainSFT, {"options": {"model": "m", "deepspeed": "zero4"}},
     "bad SFT options: deepspeed: Input should be 'none', 'zero2' or 'zero3'"),
    ([*SFT, "--nnodes", "2"], TrainSFT, {"options": {"model": "m", "cluster": {"nnodes": 2}}},
     "cluster.nnodes 2 needs cluster.master_addr"),
    ([*SFT, "--set", "lora_rank=1024"], TrainSFT, {"options": {"model": "m", "lora_rank": 1024}},
     "lora_rank 1024 is above 512"),
    ([*SFT, "--set", "learning_rat=1e-4"], TrainSFT, {"options": {"model": "m", "learning_rat": 1e-4}},
     "bad SFT options: learning_rat: Extra inputs are not permitted"),
    ([*SFT, "--timeout", "0"], TrainSFT, {"options": {"model": "m"}, "timeout_s": 0},
     "timeout must be > 0 seconds, got 0"),
    ([*SFT, "--check"], TrainSFT, {"options": {"model": "m"}, "check": True},
     "check (--check) goes with dry_run (--dry-run)"),
    ([*SFT, "--set", "novalue"], TrainSFT, {"model": "m", "sets": ["novalue"]}, "--set 'novalue': expected KEY=VALUE"),
    ([*SFT, "--set", "cluster=3", "--nnodes", "2"], TrainSFT, {"model": "m", "sets": ["cluster=3"], "nnodes": 2},
     "--set cluster=... must be a mapping (use --set cluster.nnodes=2)"),
    ([*RL, "--trainer", "ppo-magic"], TrainRL, {"trainer": "ppo-magic"},
     "--trainer must be verl or trl, got 'ppo-magic'"),
    ([*RL, "--stage", "middle"], TrainRL, {"verl": {"model": "m", "stage": "middle"}},
     "bad VerlOptions: stage: Input should be 'base' or 'sft'"),
    ([*RL, "--reward", "no_such_reward"], TrainRL, {"verl": {"model": "m", "reward": "no_such_reward"}},
     "unknown reward 'no_such_reward'"),
    ([*RL, "--set", "rollout_n=1"], TrainRL, {"verl": {"model": "m", "rollout_n": 1}},
     "GRPO compares responses within a group: rollout_n must be >= 2"),
    ([*RL, "--trainer", "trl", "--set", "num_generations=1"], TrainRL,
     {"trainer": "trl", "trl": {"model": "m", "num_generations": 1}},
     "bad TRLOptions: num_generations: Input should be greater than or equal to 2"),
    ([*RL, "--tool-workers", "0"], TrainRL, {"tool_workers": 0},
     "tool_workers (--tool-workers) must be at least 1, got 0"),
    ([*RL, "--ray-address", "10.0.0.1:6379"], TrainRL, {"verl": {"model": "m", "ray_address": "10.0.0.1:6379"}},
     "ray_address 10.0.0.1:6379 needs shared_dir"),
    ([*RL, "--trainer", "trl", "--ray-address", "h:1"], TrainRL, {"trainer": "trl", "model": "m", "ray_address": "h:1"},
     "--ray-address is a verl option (TRL launches with accelerate)"),
    ([*RL, "--node-rank", "1"], TrainRL, {"model": "m", "node_rank": 1},
     "--node-rank, --nproc-per-node, --master-addr, --master-port and --deepspeed are TRL options"),
]


@pytest.mark.parametrize(("argv", "model", "values", "says"), BAD,
                         ids=lambda x: " ".join(x) if isinstance(x, list) else "")
def test_a_bad_value_is_refused_alike_by_the_command_and_by_the_model(argv, model, values, says, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setenv("HOPFORGE_DATA_DIR", str(tmp_path / "data"))
    result = CliRunner().invoke(app, argv)
    flat = " ".join(result.output.split())
    assert result.exit_code == 2 and says in flat and "Traceback" not in result.output, flat
    with pytest.raises(HopforgeError) as refused:
        model.check(values)
    line = " ".join(str(refused.value).split())
    assert says in line and line in flat  # the same line, word for word
    for into, trainer_model in TRAINER_MODELS.get(model, {}).items():
        if isinstance(values.get(into), dict) and set(values) <= {into, "trainer"}:  # the trainer's own check says it
            with pytest.raises(TrainingError) as own:
                if trainer_model is SFTOptions:
                    SFTOptions.from_values(values[into])
                else:
                    options_from(trainer_model, values[into])
            assert " ".join(str(own.value).split()) == line
    if model is not Demo and set(values) <= _flow_parameters(_flow_name(model)):  # the flow, from Python and deployed
        import flows.train

        flow = getattr(flows.train, _flow_name(model))
        with pytest.raises(HopforgeError) as called:
            flow.fn(**values)
        with pytest.raises(HopforgeError) as deployed:  # a deployment's parameters, as Prefect checks them
            flow.validate_parameters(values)
        assert " ".join(str(called.value).split()) == " ".join(str(deployed.value).split()) == line
    assert not (tmp_path / "data").exists()  # refused before anything was opened


def test_a_deployment_of_a_training_flow_is_refused_before_its_body_with_the_models_line():
    """A deployment's bad trainer option stops at the flow's parameter check (``HopforgeFlow``), which asks the
    flow's model first: the trainer model's line, not Prefect's wording; good parameters come back as the flow's
    typed values."""
    from flows.train import train_rl, train_sft

    with pytest.raises(TrainingError) as refused:
        train_sft.validate_parameters({"options": {"model": "m", "think_weight": -1}})
    assert str(refused.value).startswith("bad SFT options: think_weight: Input should be greater than or equal to 0")
    assert "bad parameter(s) for flow" not in str(refused.value)
    with pytest.raises(InputError, match=r"^tool_workers \(--tool-workers\) must be at least 1, got 0$"):
        train_rl.validate_parameters({"tool_workers": 0, "verl": {"model": "m"}})
    checked = train_sft.validate_parameters({"options": {"model": "m", "think_weight": 0.001}, "timeout_s": "60"})
    assert isinstance(checked["options"], SFTOptions) and checked["options"].think_weight == 0.001
    assert checked["timeout_s"] == 60.0


def test_the_domain_options_read_alike_on_every_verb():
    """``--domain`` (domains to work on) and ``--allow-new-domains`` are declared once (flows/params.py), on the
    hand-written verbs too."""
    import click
    import typer

    from flows.params import DOMAIN_FLAGS, DOMAINS_HELP, NEW_DOMAINS_HELP

    seen = {"domain": 0, "allow_new_domains": 0}

    def walk(cmd: click.Command) -> None:
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub)
        for param in cmd.params:
            if "--domain" in param.opts and param.multiple:  # (graph import names the one domain it imports)
                seen["domain"] += 1
                assert (tuple(param.opts), param.help) == (DOMAIN_FLAGS, DOMAINS_HELP), cmd.name
            if param.name == "allow_new_domains":
                seen["allow_new_domains"] += 1
                assert param.help == NEW_DOMAINS_HELP, cmd.name

    walk(typer.main.get_command(app))
    assert seen["domain"] >= 8 and seen["allow_new_domains"] >= 3, seen
