"""``bench/gpu_check.py`` on the CPU (``make train-smoke``): the checks it runs on a lent GPU (the weighted
think-token loss through a transformers Trainer with gradient accumulation against an independent float32
reference, the sdpa load, a toy SFT that learns) pass here too, in a trainer environment with torch and
transformers. The H200 run's report is ``bench/results/gpu_check.json``."""

from __future__ import annotations

import json

import pytest

from tests.trainers.conftest import run_python
from training.plan import REPO_ROOT

pytestmark = pytest.mark.train_smoke


def test_gpu_check_passes_on_the_cpu(trainer_python, tmp_path):
    done = run_python(trainer_python("verl"), [REPO_ROOT / "bench" / "gpu_check.py", "--device", "cpu", "--out",
                                               tmp_path, "--sft-steps", "100"], timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["ok"] and report["environment"]["device"] == "cpu"
    loss = report["weighted_loss"]
    assert loss["grad_rel_error"] < loss["grad_tolerance"] < loss["wrong_mean_of_micro_batch_ratios_rel_error"] / 4
    assert report["sdpa"]["attn_implementation"] == "sdpa" and report["sdpa"]["flash_attention_2_loads"] is False
    sft = report["sft"]
    assert sft["after"]["loss"] < 0.75 * sft["before"]["loss"] and sft["after"]["em"] >= sft["before"]["em"] + 0.2


def test_the_committed_gpu_result_ran_on_cuda_and_passed():
    report = json.loads((REPO_ROOT / "bench" / "results" / "gpu_check.json").read_text())
    assert report["ok"] and report["environment"]["device"] == "cuda" and report["environment"]["gpu"] == "NVIDIA H200"
    assert all(report[k]["ok"] for k in ("weighted_loss", "sdpa", "sft"))
