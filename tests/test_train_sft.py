"""LLaMA-Factory SFT configs from an export (training.sft): defaults, templates per dataset, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from training.plan import TrainingError, load_export, resolve_export
from training.sft import SFTOptions, plan_sft

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def export_dirs(tmp_path_factory):
    """A full export of the trainer fixture records, and one without SFT data (qa and rl only)."""
    from tasks.export.datasets import ExportInputs, export
    from tests.trainers.conftest import build_fixture_records

    qas, gold, trajs = build_fixture_records()
    root = tmp_path_factory.mktemp("exports")
    full = export(ExportInputs(qas, gold, trajs), root, version="full")
    bare = export(ExportInputs(qas, gold, trajs), root, version="no-sft", include=["qa", "rl"])
    return root, full.path, bare.path


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model")
    (path / "config.json").write_text(json.dumps({"model_type": "qwen3"}))
    (path / "model.safetensors").write_bytes(b"\0" * 8)
    return path


def plan(export_dir, tmp_path, model_dir, **opts):
    return plan_sft(load_export(export_dir), tmp_path / "run", SFTOptions(model=str(model_dir), **opts))


def test_default_lora_config_follows_the_paper_and_the_export(export_dirs, tmp_path, model_dir):
    _, full, _ = export_dirs
    p = plan(full, tmp_path, model_dir)
    cfg = yaml.safe_load(p.files["llamafactory.yaml"])
    assert cfg["template"] == "qwen3" and cfg["dataset"] == "hopforge_sft_train"
    assert cfg["eval_dataset"] == "hopforge_sft_validation" and cfg["eval_strategy"] == "steps"
    assert cfg["dataset_dir"] == str(full.resolve()) and cfg["model_name_or_path"] == str(model_dir.resolve())
    assert (cfg["stage"], cfg["do_train"], cfg["finetuning_type"]) == ("sft", True, "lora")
    assert (cfg["lora_rank"], cfg["lora_target"], cfg["cutoff_len"]) == (8, "all", 6144)
    assert (cfg["learning_rate"], cfg["warmup_ratio"], cfg["lr_scheduler_type"]) == (1e-4, 0.1, "cosine")
    assert cfg["num_train_epochs"] == 3.0 and cfg["report_to"] == "none" and cfg["bf16"] is False
    assert cfg["per_device_train_batch_size"] * cfg["gradient_accumulation_steps"] == 4
    assert cfg["overwrite_cache"] is True and "max_steps" not in cfg
    assert cfg["output_dir"] == str((tmp_path / "run" / "output").resolve()) == str(p.output_dir)
    extras = json.loads(p.files["hopforge_sft.json"])
    manifest = json.loads((full / "manifest.json").read_text())
    assert extras["expected_rows"] == {"hopforge_sft_train": manifest["rows"]["sft"]["train"],
                                       "hopforge_sft_validation": manifest["rows"]["sft"]["validation"]}  # fmt: skip
    assert extras["think_weight"] == 1.0 and extras["weight_tool_calls"] is False
    assert extras["export_version"] == "full" == p.export_version
    assert (p.trainer, p.env) == ("llamafactory", "llamafactory")
    assert p.argv[0].endswith("llamafactory/bin/python") and p.argv[1].endswith("training/launch/llamafactory_sft.py")
    assert p.argv[2:] == [str((tmp_path / "run" / "llamafactory.yaml").resolve()), "--hopforge",
                          str((tmp_path / "run" / "hopforge_sft.json").resolve())]  # fmt: skip


def test_written_files_are_what_the_launcher_reads(export_dirs, tmp_path, model_dir):
    _, full, _ = export_dirs
    p = plan(full, tmp_path, model_dir, think_weight=0.001, weight_tool_calls=True, max_steps=5)
    written = {f.name for f in p.write()}
    assert {"llamafactory.yaml", "hopforge_sft.json", "command.sh", "plan.json"} <= written
    cfg = yaml.safe_load((p.run_dir / "llamafactory.yaml").read_text())
    extras = json.loads((p.run_dir / "hopforge_sft.json").read_text())
    assert cfg == p.config["llamafactory"] and extras == p.config["hopforge"]
    assert cfg["max_steps"] == 5 and extras["think_weight"] == 0.001 and extras["weight_tool_calls"] is True


def test_no_think_data_gets_the_nothink_template_and_its_own_validation_split(export_dirs, tmp_path, model_dir):
    _, full, _ = export_dirs
    p = plan(full, tmp_path, model_dir, dataset="hopforge_sft_nothink_train", think_weight=0.001)
    cfg = p.config["llamafactory"]
    assert cfg["template"] == "qwen3_nothink" and cfg["eval_dataset"] == "hopforge_sft_nothink_validation"
    assert any("no effect on no-think rows" in n for n in p.notes)


def test_full_finetuning_defaults(export_dirs, tmp_path, model_dir):
    _, full, _ = export_dirs
    cfg = plan(full, tmp_path, model_dir, finetuning_type="full", per_device_train_batch_size=2,
               eval_dataset="none").config["llamafactory"]  # fmt: skip
    assert cfg["finetuning_type"] == "full" and "lora_rank" not in cfg and "lora_target" not in cfg
    assert (cfg["learning_rate"], cfg["warmup_ratio"], cfg["gradient_accumulation_steps"]) == (1e-5, 0.01, 2)
    assert "eval_dataset" not in cfg and "eval_strategy" not in cfg


def test_explicit_values_and_extra_keys_win(export_dirs, tmp_path, model_dir):
    _, full, _ = export_dirs
    cfg = plan(full, tmp_path, model_dir, learning_rate=3e-4, warmup_ratio=0.0, gradient_accumulation_steps=8,
               dataset=["hopforge_sft_train", "hopforge_sft_validation"], eval_dataset="none",
               extra={"lora_alpha": 32, "bf16": True}).config["llamafactory"]  # fmt: skip
    assert (cfg["learning_rate"], cfg["warmup_ratio"], cfg["gradient_accumulation_steps"]) == (3e-4, 0.0, 8)
    assert cfg["dataset"] == "hopforge_sft_train,hopforge_sft_validation"
    assert cfg["lora_alpha"] == 32 and cfg["bf16"] is True


def test_a_small_cutoff_is_noted_before_launch(export_dirs, tmp_path, model_dir):
    _, full, _ = export_dirs
    p = plan(full, tmp_path, model_dir, cutoff_len=64)
    assert any("probably longer than cutoff_len 64" in n for n in p.notes)
    assert not any("cutoff_len" in n for n in plan(full, tmp_path, model_dir).notes)


# -- bad input --------------------------------------------------------------------------------------------------------


def test_missing_export_version(export_dirs):
    root, _, _ = export_dirs
    with pytest.raises(TrainingError, match=r"export version 'v-missing' not found .*known versions: full, no-sft"):
        resolve_export(root, "v-missing")
    with pytest.raises(TrainingError, match=r"is not a hopforge export \(no manifest.json\): run `hopforge export`"):
        load_export(root / "nowhere")


def test_dataset_not_in_dataset_info_lists_the_known_names(export_dirs, tmp_path, model_dir):
    _, full, _ = export_dirs
    with pytest.raises(TrainingError, match=r"dataset 'hopforge_sft_tran' not in the dataset_info.json of export full; "
                                            r"known: hopforge_sft_nothink_train, hopforge_sft_nothink_validation, "
                                            r"hopforge_sft_train, hopforge_sft_validation"):  # fmt: skip
        plan(full, tmp_path, model_dir, dataset="hopforge_sft_tran")
    with pytest.raises(TrainingError, match=r"eval_dataset 'nope' not in the dataset_info.json"):
        plan(full, tmp_path, model_dir, eval_dataset=["nope"])


def test_export_without_sft_data(export_dirs, tmp_path, model_dir):
    _, _, bare = export_dirs
    with pytest.raises(TrainingError, match=r"export no-sft has no think SFT train split .*known: none"):
        plan(bare, tmp_path, model_dir)
    with pytest.raises(TrainingError, match=r"export no-sft has no SFT data .*export it with the sft or sft_nothink"):
        plan(bare, tmp_path, model_dir, dataset="hopforge_sft_train")


def test_model_path_that_is_not_a_model(export_dirs, tmp_path):
    _, full, _ = export_dirs
    (tmp_path / "empty").mkdir()
    with pytest.raises(TrainingError, match=r"is not a model directory: it has no config.json"):
        plan(full, tmp_path, tmp_path / "empty")
    with pytest.raises(TrainingError, match=r"does not exist \(give a model directory or a hub id"):
        plan(full, tmp_path, tmp_path / "missing")


def test_think_and_nothink_rows_cannot_share_a_run(export_dirs, tmp_path, model_dir):
    _, full, _ = export_dirs
    with pytest.raises(TrainingError, match=r"mix think \(sft\) and no-think \(sft_nothink\) rows.*separate runs"):
        plan(full, tmp_path, model_dir, dataset="hopforge_sft_train,hopforge_sft_nothink_train")
    with pytest.raises(TrainingError, match=r"template qwen3 does not match the data: sft_nothink rows are trained "
                                            r"with qwen3_nothink"):  # fmt: skip
        plan(full, tmp_path, model_dir, dataset="hopforge_sft_nothink_train", template="qwen3")


@pytest.mark.parametrize(("values", "message"), [
    ({"think_weight": -0.5}, r"think_weight: Input should be greater than or equal to 0"),
    ({"think_weight": float("inf")}, r"think_weight: Value error, think_weight must be a finite number"),
    ({"finetuning_type": "qlora"}, r"finetuning_type: Input should be 'lora' or 'full'"),
    ({"lora_rank": 0}, r"lora_rank: Input should be greater than or equal to 1"),
    ({"learning_rat": 1e-4}, r"learning_rat: Extra inputs are not permitted"),
    ({"extra": {"output_dir": "/elsewhere"}}, r"extra may not set output_dir: use the SFT options"),
    ({"dataset": []}, r"dataset must name at least one dataset_info.json entry"),
])  # fmt: skip
def test_wrong_option_values(values, message):
    with pytest.raises(TrainingError, match=r"bad SFT options: .*" + message):
        SFTOptions.from_values({"model": "Qwen/Qwen3-8B", **values})


def test_the_core_module_imports_no_trainer():
    code = ("import sys, training.sft; "
            "bad = [m for m in ('torch', 'transformers', 'llamafactory') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
