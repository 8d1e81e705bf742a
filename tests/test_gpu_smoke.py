"""`make gpu-smoke` without a GPU (bench/gpu_smoke.py): the one-line refusal, the plan of every step on a given
export and model (configs written, commands, serve flags, evaluation settings), the chain stopping at a failed
step, and the report. ``tests/trainers/test_gpu_smoke_plan.py`` builds the data for real and has the trainers check
the written configs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench import gpu_smoke
from bench.gpu_smoke import STEPS, Chain, SmokeOptions, main, markdown, report, run_chain
from training.plan import REPO_ROOT


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory) -> Path:
    from tasks.export.datasets import ExportInputs, export
    from tests.trainers.conftest import build_fixture_records

    qas, gold, trajs = build_fixture_records()
    return export(ExportInputs(qas, gold, trajs), tmp_path_factory.mktemp("exports"), version="smoke").path


def weights(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text('{"model_type": "llama"}')
    (root / "model.safetensors").write_bytes(b"\0" * 8)
    return root


def test_without_cuda_the_smoke_refuses_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gpu_smoke, "cuda_gpus", lambda: [])
    assert main(["--out", str(tmp_path / "out"), "--results", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: gpu-smoke needs a CUDA GPU") and "--plan-only" in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "results").exists()  # nothing started
    assert main(["--require-cuda"]) == 2 and "needs a CUDA GPU" in capsys.readouterr().err
    monkeypatch.setattr(gpu_smoke, "cuda_gpus", lambda: ["NVIDIA H100 80GB HBM3, 81559 MiB"])
    assert main(["--require-cuda"]) == 0 and "NVIDIA H100" in capsys.readouterr().out


def test_the_script_refuses_where_nvidia_smi_is_missing(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    done = subprocess.run([sys.executable, str(REPO_ROOT / "bench" / "gpu_smoke.py"), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=120, env={"PATH": str(empty)})  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [done.stderr.strip()] and "needs a CUDA GPU" in done.stderr


def test_plan_only_writes_every_step(export_dir, tmp_path):
    model = weights(tmp_path / "smol")
    opts = SmokeOptions(out=tmp_path / "out", results=tmp_path / "results", plan_only=True, export=export_dir,
                        data_dir=tmp_path / "data", model=model, rl_batch=2, rollout_n=2)  # fmt: skip
    chain = run_chain(opts)
    data = report(chain, opts)
    steps = {s["name"]: s for s in data["steps"]}
    assert list(steps) == list(STEPS) and data["ok"] is True
    assert [steps[n]["status"] for n in ("data", "base_model")] == ["given", "given"]
    assert all(steps[n]["status"] == "planned" for n in STEPS[2:])

    lora = steps["sft_lora"]["result"]
    cfg = yaml.safe_load((Path(lora["run_dir"]) / "llamafactory.yaml").read_text())
    assert cfg["finetuning_type"] == "lora" and cfg["lora_rank"] == 12 and cfg["num_train_epochs"] == 1.0
    assert cfg["template"] == "qwen3" and "llamafactory_sft.py" in lora["command"]
    full = yaml.safe_load((Path(steps["sft_full"]["result"]["run_dir"]) / "llamafactory.yaml").read_text())
    assert full["finetuning_type"] == "full" and "lora_rank" not in full
    merge = yaml.safe_load((Path(steps["merge"]["result"]["run_dir"]) / "merge.yaml").read_text())
    assert merge["adapter_name_or_path"] == lora["output_dir"] and merge["template"] == "qwen3"
    assert merge["model_name_or_path"] == str(model.resolve())

    base = steps["eval_base"]["result"]
    assert "--reasoning-parser qwen3" in base["serve"]["command"] and base["serve"]["chat_format"]["source"] == "declared"
    sft = steps["eval_sft"]["result"]
    assert "--enable-lora" in sft["serve"]["command"] and "--max-lora-rank 16" in sft["serve"]["command"]
    assert "LoRA rank 12 served with --max-lora-rank 16: vLLM accepts only 1, 8, 16, 32, 64, 128, 256, 320, 512" \
        in sft["serve"]["notes"]
    assert sft["serve"]["chat_format"]["source"] == "SFT run sft-lora (template qwen3)"  # the record agrees
    assert sft["policy"]["extra_body"] == {"chat_template_kwargs": {"enable_thinking": True}}
    assert sft["trained_as"] == "think" and sft["split"] == "test" and sft["modes"] == ["tools"]
    full_eval = steps["eval_sft_full"]["result"]["serve"]
    assert "--enable-lora" not in full_eval["command"] and full_eval["checkpoint"] == steps["sft_full"]["result"]["output_dir"]

    rl = steps["rl"]["result"]
    assert "tool_config.yaml" in rl["files"] and "verl_ppo.py" in rl["command"]
    assert any("in place of the merged SFT checkpoint" in n for n in rl["notes"])
    assert steps["eval_rl"]["result"]["serve"]["checkpoint"].endswith("global_step_3/actor/huggingface")

    js, md = gpu_smoke.write_report(data, opts.results)
    assert js.name == "gpu_smoke_plan.json" and json.loads(js.read_text())["plan_only"] is True
    text = md.read_text()
    assert text.startswith("# GPU smoke plan (nothing ran on a GPU)") and "| eval_sft | planned |" in text


def test_a_failed_step_stops_the_chain_and_the_report_says_where(tmp_path):
    chain = Chain(SmokeOptions(out=tmp_path))
    chain.step("data", lambda: {"questions": 3})
    chain.step("base_model", lambda: (_ for _ in ()).throw(RuntimeError("converting x.gguf failed: no gguf")))
    chain.step("eval_base", lambda: {"em": 1.0})
    data = report(chain, SmokeOptions(out=tmp_path))
    assert [(s["name"], s["status"]) for s in data["steps"]] == [("data", "ok"), ("base_model", "failed"),
                                                                 ("eval_base", "not_run")]  # fmt: skip
    assert data["ok"] is False and data["steps"][1]["error"] == "RuntimeError: converting x.gguf failed: no gguf"
    assert data["steps"][2]["error"] == "after base_model failed"
    text = markdown(data)
    assert "stopped at a failed step" in text and "| base_model | failed |" in text


def test_a_finished_evaluation_reads_in_the_report(tmp_path):
    chain = Chain(SmokeOptions(out=tmp_path))
    chain.step("eval_sft", lambda: {"em": 0.25, "f1": 0.5, "hit1": 0.3, "n": 100, "errors": 0, "mean_rounds": 2.0,
                                    "serve": {"command": "vllm serve x", "notes": ["LoRA rank 12 served ..."]}})  # fmt: skip
    data = report(chain, SmokeOptions(out=tmp_path))
    assert data["evaluations"]["eval_sft"] == {"em": 0.25, "f1": 0.5, "hit1": 0.3, "n": 100, "errors": 0,
                                               "mean_rounds": 2.0}  # fmt: skip
    assert "EM 0.250, F1 0.500, Hit@1 0.300 (n=100, errors 0)" in markdown(data)

