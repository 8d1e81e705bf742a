"""`hopforge train ... --dry-run --check` as a user types it: the configs the command writes are accepted by the
trainers' own parsers in their own environments (LLaMA-Factory's get_train_args, verl's Hydra composition and
validate_config, TRL's GRPOConfig), and the run is recorded as a dry run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.trainers.conftest import subprocess_env
from training.plan import REPO_ROOT

pytestmark = pytest.mark.train_smoke


def _hopforge(args: list[str], data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], capture_output=True, text=True, timeout=900,
                          cwd=str(REPO_ROOT), env=subprocess_env({"HOPFORGE_DATA_DIR": str(data_dir)}))  # fmt: skip


def _run_dir(stdout: str) -> Path:
    line = next(ln for ln in stdout.splitlines() if "run dir:" in ln)
    return Path(line.split("run dir:", 1)[1].strip())


def test_sft_dry_run_check(trainer_python, tiny_model_dir, tiny_export_dir, tmp_path):
    trainer_python("llamafactory")
    for extra, template in (([], "qwen3"), (["--dataset", "hopforge_sft_nothink_train", "--full"], "qwen3_nothink")):
        done = _hopforge(["train", "sft", "--model", str(tiny_model_dir), "--export", str(tiny_export_dir),
                          "--think-weight", "0.001", "--max-steps", "2", *extra, "--dry-run", "--check"], tmp_path)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        run_dir = _run_dir(done.stdout)
        cfg = yaml.safe_load((run_dir / "llamafactory.yaml").read_text())
        assert cfg["template"] == template and cfg["dataset_dir"] == str(tiny_export_dir.resolve())
        assert "llamafactory accepts the config" in done.stdout + done.stderr
    bad = _hopforge(["train", "sft", "--model", str(tiny_model_dir), "--export", str(tiny_export_dir),
                     "--set", "extra.not_a_llamafactory_key=1", "--dry-run", "--check"], tmp_path)
    assert bad.returncode == 2 and "not_a_llamafactory_key" in bad.stderr, bad.stderr[-3000:]


def test_rl_dry_run_check(trainer_python, tiny_model_dir, rl_export, tmp_path):
    trainer_python("verl")
    trainer_python("trl")
    small = ["--set", "train_batch_size=2", "--set", "ppo_mini_batch_size=2", "--set", "rollout_n=2",
             "--set", "n_gpus_per_node=1", "--set", "max_prompt_length=1024"]  # fmt: skip
    for stage in ("base", "sft"):
        done = _hopforge(["train", "rl", "--model", str(tiny_model_dir), "--export", str(rl_export.path), "--stage",
                          stage, "--tool-server", "http://127.0.0.1:8765", *small, "--dry-run", "--check"], tmp_path)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        plan = json.loads((_run_dir(done.stdout) / "plan.json").read_text())
        assert plan["trainer"] == "verl" and "verl accepts the config" in done.stdout + done.stderr
    done = _hopforge(["train", "rl", "--trainer", "trl", "--model", str(tiny_model_dir), "--export", str(rl_export.path),
                      "--set", "max_steps=2", "--set", "num_generations=2", "--set", "per_device_train_batch_size=2",
                      "--dry-run", "--check"], tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "trl accepts the config" in done.stdout + done.stderr
