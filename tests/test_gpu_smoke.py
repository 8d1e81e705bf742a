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
    (root / "config.json").write_text('{"model_type": "llama", "max_position_embeddings": 8192}')
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

    # every length within the model's context (config.json: 8192, SmolLM2's), none above it
    assert steps["fit_lengths"]["result"] == {"context": 8192, "max_model_len": 8192, "cutoff_len": 4096,
                                              "rl_prompt": 4096, "rl_response": 4096}  # fmt: skip
    # every step that runs something has its command in the report
    for name in ("sft_lora", "sft_full", "merge", "rl"):
        assert steps[name]["result"]["command"], name
    for name in ("eval_base", "eval_sft", "eval_sft_full", "eval_rl"):
        command = steps[name]["result"]["serve"]["command"]
        assert " serve " in command and "--max-model-len 8192" in command, name

    lora = steps["sft_lora"]["result"]
    # the weighted think-token loss (Omne-R1: 0.001) in both SFT runs
    for name in ("sft_lora", "sft_full"):
        extra = json.loads((Path(steps[name]["result"]["run_dir"]) / "hopforge_sft.json").read_text())
        assert extra["think_weight"] == 0.001, name
    cfg = yaml.safe_load((Path(lora["run_dir"]) / "llamafactory.yaml").read_text())
    assert cfg["finetuning_type"] == "lora" and cfg["lora_rank"] == 12 and cfg["num_train_epochs"] == 1.0
    assert cfg["template"] == "qwen3" and "llamafactory_sft.py" in lora["command"] and cfg["cutoff_len"] == 4096
    full = yaml.safe_load((Path(steps["sft_full"]["result"]["run_dir"]) / "llamafactory.yaml").read_text())
    assert full["finetuning_type"] == "full" and "lora_rank" not in full
    merge = yaml.safe_load((Path(steps["merge"]["result"]["run_dir"]) / "merge.yaml").read_text())
    assert merge["adapter_name_or_path"] == lora["output_dir"] and merge["template"] == "qwen3"
    assert merge["model_name_or_path"] == str(model.resolve())

    # the base model in its own format: no reasoning parser waiting for a </think> it never writes
    base = steps["eval_base"]["result"]
    assert "--reasoning-parser" not in base["serve"]["command"] and base["serve"]["chat_format"]["source"] == "declared"
    assert base["trained_as"] == "no_think"
    assert base["policy"]["extra_body"] == {"chat_template_kwargs": {"enable_thinking": False}}
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
    assert "data.max_prompt_length=4096" in rl["command"] and "data.max_response_length=4096" in rl["command"]
    # verl loads the policy with sdpa here (no flash-attn in any environment of this machine)
    assert "+actor_rollout_ref.model.override_config.attn_implementation=sdpa" in rl["command"]
    assert any("in place of the merged SFT checkpoint" in n for n in rl["notes"])
    assert steps["eval_rl"]["result"]["serve"]["checkpoint"].endswith("global_step_3/actor/huggingface")

    js, md = gpu_smoke.write_report(data, opts.results)
    assert js.name == "gpu_smoke_plan.json" and json.loads(js.read_text())["plan_only"] is True
    text = md.read_text()
    assert text.startswith("# GPU smoke plan (nothing ran on a GPU)") and "| eval_sft | planned |" in text


def test_the_model_context_bounds_every_length(tmp_path):
    model = weights(tmp_path / "smol")
    assert gpu_smoke.model_context(model) == 8192
    with pytest.raises(gpu_smoke.InputError, match=r"^--max-model-len 16384 is above the model's context of 8192 "
                                                    r"tokens \(its config.json\): vLLM refuses to serve it"):  # fmt: skip
        gpu_smoke.fit_lengths(SmokeOptions(max_model_len=16384), 8192)
    small = gpu_smoke.fit_lengths(SmokeOptions(max_model_len=2048, cutoff_len=4096), 2048)
    assert small == {"context": 2048, "max_model_len": 2048, "cutoff_len": 2048, "rl_prompt": 1024, "rl_response": 1024}
    (model / "config.json").write_text('{"text_config": {"max_position_embeddings": 32768}}')
    assert gpu_smoke.model_context(model) == 32768
    (model / "config.json").write_text('{"model_type": "llama"}')
    with pytest.raises(gpu_smoke.InputError, match="names no context length"):
        gpu_smoke.model_context(model)


def _evaluated(tmp_path, ems: dict[str, float]) -> dict:
    chain = Chain(SmokeOptions(out=tmp_path))
    for name in ("eval_base", "eval_sft", "eval_sft_full", "eval_rl"):
        chain.step(name, lambda em=ems[name]: {"em": em, "f1": em, "hit1": em, "n": 100, "errors": 0,
                                               "mean_rounds": 2.0})  # fmt: skip
    return report(chain, SmokeOptions(out=tmp_path))


def test_ok_means_em_after_sft_beat_em_before_by_the_margin(tmp_path):
    data = _evaluated(tmp_path, {"eval_base": 0.10, "eval_sft": 0.20, "eval_sft_full": 0.25, "eval_rl": 0.22})
    learned = data["learning"]
    assert data["ok"] is True and learned["met"] is True and learned["em_gain"] == 0.1
    assert (learned["em_before_sft"], learned["em_after_sft"], learned["em_after_rl"], learned["em_after_sft_full"]) \
        == (0.10, 0.20, 0.22, 0.25)
    assert "EM before 0.100, after SFT 0.200, after RL 0.220 (full SFT 0.250); met" in markdown(data)
    # every step ran, but SFT did not lift EM by the margin (0.05): not ok
    flat = _evaluated(tmp_path, {"eval_base": 0.10, "eval_sft": 0.12, "eval_sft_full": 0.30, "eval_rl": 0.4})
    assert flat["ok"] is False and flat["learning"]["met"] is False
    assert "all steps passed but EM did not rise as required" in markdown(flat) and "NOT met" in markdown(flat)


def test_make_gpu_smoke_checks_cuda_before_building_anything():
    """The target's first command is the CUDA check, on the core environment only; llama.cpp (the local extra) and
    the trainer environments are built after it."""
    text = (REPO_ROOT / "Makefile").read_text()
    block = text.split("\ngpu-smoke:", 1)[1].split("\n\n", 1)[0]
    prerequisites, *commands = block.splitlines()
    assert ".installed-local" not in prerequisites and ".installed-test" in prerequisites
    commands = [c.strip() for c in commands]
    assert commands[0] == "$(BIN)/python bench/gpu_smoke.py --require-cuda"
    assert commands[1] == "$(MAKE) $(VENV)/.installed-local"
    assert all("training.envs create" in c for c in commands[2:-1]) and commands[-1].startswith("$(BIN)/python bench/gpu_smoke.py")


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

