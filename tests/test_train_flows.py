"""Training hand-off in the core: launching a plan in a trainer environment, the records and curves it leaves,
vLLM serve commands, the tool server the RL flow starts, the CLI, and the training deployments."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from flows.cli import app
from schemas.config import load_settings
from training.envs import ENVS_VAR, install_commands, require_env
from training.plan import ExportView, TrainingError, TrainPlan, load_export, read_metrics, resolve_export
from training.runs import curve_series, curves_svg, final_metrics, launch, metric_rows

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()

FAKE_TRAINER = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    run_dir = Path.cwd()
    mode = sys.argv[1]
    with open(run_dir / "metrics.jsonl", "a") as f:
        for step, loss in enumerate([2.0, 1.5, 1.2], start=1):
            f.write(json.dumps({"step": step, "loss": loss, "learning_rate": 1e-4 / step}) + "\\n")
        f.write('{"step": 4, "loss": ')  # a half-written line, as a killed trainer may leave
    print("training on", run_dir.name, flush=True)
    if mode == "fail":
        print("RuntimeError: CUDA out of memory", flush=True)
        sys.exit(3)
    if mode == "hang":
        import time
        time.sleep(60)
    (run_dir / "ckpt").mkdir()
    (run_dir / "result.json").write_text(json.dumps({"status": "ok", "checkpoint": str(run_dir / "ckpt")}))
""")


@pytest.fixture
def fake_envs(tmp_path, monkeypatch):
    """Trainer environments whose python is this interpreter (the launcher contract is what is tested)."""
    root = tmp_path / "envs"
    for name in ("llamafactory", "verl", "trl"):
        (root / name / "bin").mkdir(parents=True)
        (root / name / "bin" / "python").symlink_to(sys.executable)
    monkeypatch.setenv(ENVS_VAR, str(root))
    return root


def _plan(tmp_path: Path, mode: str, env: str = "llamafactory") -> TrainPlan:
    script = tmp_path / "fake_trainer.py"
    script.write_text(FAKE_TRAINER)
    run_dir = tmp_path / "runs" / f"sft-{mode}"
    return TrainPlan(trainer="llamafactory", env=env, run_dir=run_dir, files={"llamafactory.yaml": "model: x\n"},
                     argv=[str(require_env(env)), str(script), mode], config={"max_steps": 3},
                     export_version="v1", manifest_sha256="0" * 64, output_dir=run_dir / "ckpt")


@pytest.fixture
def export_dir(tmp_path) -> Path:
    from tasks.export.datasets import ExportInputs, export
    from tests.trainers.conftest import build_fixture_records

    qas, gold, trajs = build_fixture_records()
    result = export(ExportInputs(qas=qas, gold_paths=gold, trajectories=trajs), tmp_path / "hopforge-data" / "exports",
                    version="v1")
    return result.path


# -- environments -------------------------------------------------------------------------------------------------


def test_missing_trainer_env_names_the_make_target(tmp_path, monkeypatch):
    monkeypatch.setenv(ENVS_VAR, str(tmp_path / "none"))
    with pytest.raises(TrainingError, match=r"make trainer-env T=verl"):
        require_env("verl")
    with pytest.raises(TrainingError, match="unknown trainer environment 'megatron'"):
        require_env("megatron")


def test_install_commands_pin_the_cpu_torch_and_drop_the_multimodal_wheels():
    cmds = install_commands("llamafactory")
    flat = [" ".join(c) for c in cmds]
    assert any("llamafactory==0.9.5" in c and "torch==2.13.0" in c for c in flat)
    assert any("uninstall" in c and "torchvision" in c and "torchaudio" in c for c in flat)
    with pytest.raises(TrainingError, match="no cpu flavour"):
        install_commands("vllm", "cpu")


# -- exports -----------------------------------------------------------------------------------------------------


def test_resolve_export_errors_say_what_to_do(tmp_path, export_dir):
    exports = export_dir.parent
    assert resolve_export(exports, None) == export_dir
    assert resolve_export(exports, "v1") == export_dir
    with pytest.raises(TrainingError, match=r"'v9' not found .*known versions: v1"):
        resolve_export(exports, "v9")
    with pytest.raises(TrainingError, match="run `hopforge export` first"):
        resolve_export(tmp_path / "empty", None)


def test_load_export_refuses_an_altered_export(export_dir):
    view = load_export(export_dir)
    assert isinstance(view, ExportView) and view.version == "v1" and len(view.manifest_sha256) == 64
    assert set(view.data_files("sft")) >= {"train"} and view.rows("rl")["train"] >= 1
    target = view.data_files("sft")["train"]
    target.write_bytes(target.read_bytes() + b"x")
    with pytest.raises(TrainingError, match="damaged"):
        load_export(export_dir)


# -- launching ---------------------------------------------------------------------------------------------------


def test_launch_runs_the_trainer_and_reads_its_metrics(tmp_path, fake_envs):
    plan = _plan(tmp_path, "ok")
    seen: list[str] = []
    res = launch(plan, on_line=seen.append)
    assert res.status == "completed" and res.returncode == 0 and res.error is None
    assert res.checkpoint == str(plan.run_dir / "ckpt")
    assert [m["step"] for m in res.metrics] == [1, 2, 3]  # the half line is skipped
    assert "training on sft-ok" in seen
    assert (plan.run_dir / "train.log").read_text().startswith("training on")
    assert json.loads((plan.run_dir / "plan.json").read_text())["export_version"] == "v1"
    assert (plan.run_dir / "llamafactory.yaml").read_text() == "model: x\n"
    assert os.access(plan.run_dir / "command.sh", os.X_OK)


def test_a_failing_trainer_is_reported_with_its_last_line(tmp_path, fake_envs):
    res = launch(_plan(tmp_path, "fail"))
    assert res.status == "failed" and res.returncode == 3 and res.checkpoint is None
    assert "CUDA out of memory" in res.error and "train.log" in res.error


def test_a_hanging_trainer_is_killed_at_the_timeout(tmp_path, fake_envs):
    res = launch(_plan(tmp_path, "hang"), timeout_s=3)
    assert res.status == "failed" and "timed out" in res.error and res.duration_s < 30


def test_metric_rows_and_final_metrics():
    metrics = [{"step": 1, "loss": 2.0, "epoch": 0.5, "note": "x"}, {"step": 2, "loss": float("nan"), "reward": 0.5},
               {"step": 2, "loss": 1.0}, {"loss": 9.0}]
    rows = metric_rows("t1", metrics)
    assert {(r["step"], r["name"], r["value"]) for r in rows} == {(1, "loss", 2.0), (1, "epoch", 0.5), (2, "reward", 0.5),
                                                                  (2, "loss", 1.0)}
    assert final_metrics(metrics) == {"loss": 9.0, "epoch": 0.5, "reward": 0.5}


def test_curves_svg_draws_one_panel_per_metric():
    metrics = [{"step": s, "loss": 3.0 / s, "reward": 0.1 * s} for s in range(1, 6)]
    svg = curves_svg(metrics, title="run <1>")
    root = ET.fromstring(svg)  # well-formed, the title escaped
    polylines = [e for e in root.iter() if e.tag.endswith("polyline")]
    assert len(polylines) == 2
    first = [tuple(map(float, p.split(","))) for p in polylines[0].get("points").split()]
    assert len(first) == 5 and first[0][1] < first[-1][1]  # loss falls: its line goes down the page (y grows)
    assert curve_series(metrics)["reward"][-1] == (5, 0.5)
    assert curves_svg([{"step": 1, "epoch": 1.0}]) is None


# -- records through the flow ----------------------------------------------------------------------------------------


def test_run_plan_records_the_run_and_its_metrics(tmp_path, fake_envs):
    from flows.train import run_plan
    from warehouse.db import Warehouse

    settings = load_settings(None, data_dir=tmp_path / "data")
    plan = _plan(tmp_path, "ok")
    r = run_plan(plan, kind="sft", settings=settings, params={}, dry_run=False, timeout_s=None, base_model="m")
    assert r["status"] == "completed" and r["metrics"]["loss"] == 1.2
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        row = wh.query("SELECT * FROM training_runs")[0]
        steps = wh.query("SELECT step, value FROM training_metrics WHERE name = 'loss' ORDER BY step")
        run = wh.query("SELECT flow, status FROM runs")[0]
    assert row["status"] == "completed" and row["checkpoint"] == r["checkpoint"] and row["export_version"] == "v1"
    assert json.loads(row["config"])["argv"][-1] == "ok" and json.loads(row["final_metrics"])["loss"] == 1.2
    assert [(s["step"], s["value"]) for s in steps] == [(1, 2.0), (2, 1.5), (3, 1.2)]
    assert run == {"flow": "train-sft", "status": "completed"}


def test_a_failed_training_run_is_recorded_then_raised(tmp_path, fake_envs):
    from flows.train import run_plan
    from warehouse.db import Warehouse

    settings = load_settings(None, data_dir=tmp_path / "data")
    with pytest.raises(TrainingError, match="CUDA out of memory"):
        run_plan(_plan(tmp_path, "fail"), kind="sft", settings=settings, params={}, dry_run=False, timeout_s=None,
                 base_model=None)
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        row = wh.query("SELECT status, error FROM training_runs")[0]
        steps = wh.scalar("SELECT count(*) FROM training_metrics")
        run = wh.query("SELECT status FROM runs")[0]
    assert row["status"] == "failed" and "exited with status 3" in row["error"]
    assert steps == 6  # the steps it logged before failing are kept
    assert run["status"] == "failed"


def test_dry_run_writes_and_records_without_launching(tmp_path, monkeypatch):
    from flows.train import run_plan
    from warehouse.db import Warehouse

    monkeypatch.setenv(ENVS_VAR, str(tmp_path / "no-envs"))  # a dry run needs no trainer environment
    settings = load_settings(None, data_dir=tmp_path / "data")
    plan = TrainPlan(trainer="verl", env="verl", run_dir=tmp_path / "run", files={"tool_config.yaml": "tools: []\n"},
                     argv=["python", "-m", "verl.trainer.main_ppo", "a=1"], config={}, export_version="v1",
                     manifest_sha256="1" * 64, output_dir=tmp_path / "run" / "ckpt", env_vars={"PYTHONPATH": "x y"})
    r = run_plan(plan, kind="rl", settings=settings, params={}, dry_run=True, timeout_s=None, base_model=None)
    assert r["status"] == "dry_run" and r["command"] == "PYTHONPATH='x y' python -m verl.trainer.main_ppo a=1"
    assert (tmp_path / "run" / "tool_config.yaml").is_file() and not (tmp_path / "run" / "train.log").exists()
    assert "verl.trainer.main_ppo a=1" in (tmp_path / "run" / "command.sh").read_text()
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        assert wh.query("SELECT status, trainer FROM training_runs") == [{"status": "dry_run", "trainer": "verl"}]


def test_tool_server_is_started_for_the_rollouts_and_stopped(tmp_path, prefect_harness):
    """The RL flow's tool server: a real `hopforge serve-tools` child on loopback, stopped after the block."""
    from flows.graphs import import_graphs
    from flows.train import tool_server

    settings = load_settings(None, data_dir=tmp_path / "data")
    import_graphs.fn(files={"cs": str(ROOT / "flows" / "demo" / "graphs" / "cs.jsonl")}, settings=settings)
    with tool_server(settings, embedder="hashing", workers=2, startup_timeout_s=120) as url:
        reply = httpx.post(f"{url}/tools/node_info", json={"node_name": "Alan Turing", "graph_type": "cs"}, timeout=30)
        assert reply.status_code == 200 and "Alan Turing" in reply.json()["rendered_content"]
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{url}/health", timeout=2)


def test_tool_server_that_cannot_start_is_a_clear_error(tmp_path):
    from flows.train import tool_server

    settings = load_settings(None, data_dir=tmp_path / "empty")
    with pytest.raises(TrainingError, match="tool server exited"):
        with tool_server(settings, embedder="hashing", startup_timeout_s=120):
            pass


def test_training_deployments_validate_against_their_flows():
    from prefect.flows import Flow

    import flows.train as train_flows

    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    training = {d["name"]: d for d in spec["deployments"] if d["entrypoint"].startswith("flows/train.py")}
    assert set(training) == {"train-sft", "train-rl", "train-and-eval"}
    for dep in training.values():
        assert dep["work_pool"]["name"] == "gpu"
        flow_obj: Flow = getattr(train_flows, dep["entrypoint"].split(":")[1])
        flow_obj.validate_parameters(dep.get("parameters") or {})  # the form's defaults parse into typed options


def test_read_metrics_of_a_run_without_metrics(tmp_path):
    assert read_metrics(tmp_path) == []
    (tmp_path / "metrics.jsonl").write_text('{"step": "x"}\n[1]\n{"step": 2, "loss": 1}\n')
    assert read_metrics(tmp_path) == [{"step": 2, "loss": 1}]


def _model_dir(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"model_type": "qwen3"}))
    (path / "model.safetensors").write_bytes(b"")
    return path


def test_sft_dry_run_flow_writes_a_recorded_config(tmp_path, export_dir, prefect_harness, monkeypatch):
    """The train-sft flow with dry_run: the LLaMA-Factory config lands in a run directory and in the warehouse, and
    nothing is launched (no trainer environment is needed)."""
    from flows.train import train_sft
    from training.sft import SFTOptions
    from warehouse.db import Warehouse

    monkeypatch.setenv(ENVS_VAR, str(tmp_path / "no-envs"))
    model = _model_dir(tmp_path / "model")
    settings = load_settings(None)
    r = train_sft(options=SFTOptions(model=str(model), think_weight=0.001, max_steps=5), export_version="v1",
                  dry_run=True, settings=settings)
    assert r["status"] == "dry_run" and "llamafactory_sft.py" in r["command"]
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        row = wh.query("SELECT * FROM training_runs")[0]
    cfg = yaml.safe_load((Path(row["run_dir"]) / "llamafactory.yaml").read_text())
    assert cfg["model_name_or_path"] == str(model.resolve()) and cfg["dataset_dir"] == str(export_dir.resolve())
    assert cfg["template"] == "qwen3" and cfg["max_steps"] == 5 and cfg["report_to"] == "none"
    assert row["status"] == "dry_run" and row["export_version"] == "v1" and row["trainer"] == "llamafactory"
    assert json.loads((Path(row["run_dir"]) / "hopforge_sft.json").read_text())["think_weight"] == 0.001


def test_rl_dry_run_flow_writes_verl_overrides_and_tool_config(tmp_path, export_dir, prefect_harness):
    from flows.train import train_rl
    from training.rl_verl import VerlOptions

    model = _model_dir(tmp_path / "model")
    r = train_rl(trainer="verl", verl=VerlOptions(model=str(model), stage="base", tool_server_url="http://127.0.0.1:8765",
                                       train_batch_size=2, ppo_mini_batch_size=2, n_gpus_per_node=1),
                 export_version="v1", dry_run=True, settings=load_settings(None))
    run_dir = Path(r["run_dir"])
    command = (run_dir / "command.sh").read_text()
    assert "algorithm.adv_estimator=grpo" in command and "compute_score" in command
    tools = yaml.safe_load(next(run_dir.glob("*tool*.yaml")).read_text())["tools"]
    assert tools and "127.0.0.1:8765" in json.dumps(tools)


def test_cli_hands_typed_options_to_the_flow(tmp_path, export_dir, monkeypatch):
    import flows.train as train_flows

    seen: dict[str, object] = {}

    def fake_flow(**kwargs):
        seen.update(kwargs)
        return {"status": "dry_run", "train_id": "t", "run_dir": "d", "command": "c", "checkpoint": None}

    monkeypatch.setattr(train_flows, "train_sft", fake_flow)
    model = _model_dir(tmp_path / "model")
    result = runner.invoke(app, ["train", "sft", "--model", str(model), "--export", "v1", "--full", "--max-steps", "7",
                                 "--set", "learning_rate=2e-5", "--set", "extra.flash_attn=disabled", "--dry-run"])
    assert result.exit_code == 0, result.output
    opts = seen["options"]
    assert opts.finetuning_type == "full" and opts.max_steps == 7 and opts.learning_rate == 2e-5
    assert opts.extra == {"flash_attn": "disabled"} and seen["dry_run"] is True and seen["export_version"] == "v1"


def test_cli_train_bad_input_is_one_line_before_any_flow(tmp_path, export_dir, monkeypatch):
    import flows.train as train_flows

    def must_not_run(**kwargs):
        raise AssertionError("the flow started on bad input")

    monkeypatch.setattr(train_flows, "train_sft", must_not_run)
    monkeypatch.setattr(train_flows, "train_rl", must_not_run)
    model = _model_dir(tmp_path / "model")
    cases = [
        (["train", "sft", "--model", str(model), "--export", "nope"], "'nope' not found"),
        (["train", "sft", "--model", str(model), "--export", "v1", "--set", "lora_rank=-1"], "lora_rank"),
        (["train", "sft", "--model", str(tmp_path / "nowhere" / "m"), "--export", "v1"], "does not exist"),
        (["train", "sft", "--model", str(tmp_path), "--export", "v1"], "no config.json"),
        (["train", "sft", "--model", str(model), "--export", "v1", "--dataset", "nope_train"], "nope_train"),
        (["train", "sft", "--model", str(model), "--set", "novalue"], "expected KEY=VALUE"),
        (["train", "rl", "--model", str(model), "--trainer", "ppo-magic"], "--trainer must be verl or trl"),
        (["train", "rl", "--model", str(model), "--export", "v1", "--reward", "no_such_reward"], "no_such_reward"),
        (["train", "rl", "--model", str(model), "--export", "v1", "--stage", "middle"], "stage"),
    ]
    for args, expected in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert expected in result.output and "Traceback" not in result.output, (args, result.output)

