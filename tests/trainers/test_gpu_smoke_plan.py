"""`make gpu-smoke`'s plan on the CPU (``make train-smoke``): ``bench/gpu_smoke.py --plan-only --check`` builds the
data for real (the factory against the loopback fake: graphs, template-written questions, gold paths, template
trajectories, an export), then writes every step's config on the tiny local model, and LLaMA-Factory (LoRA and full
SFT) and verl (GRPO with the KG tools) accept theirs with their own parsers. Then the GPU path with the GPU work
stood in for (trainers that leave the checkpoints they would, the loopback fake as vLLM): every checkpoint passes to
the next step and is served and evaluated as its runs record it. The GPU steps themselves have not run in CI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bench import gpu_smoke
from bench.gpu_smoke import STEPS, SmokeOptions, report, run_chain
from tests.trainers.conftest import run_python
from training.plan import REPO_ROOT

pytestmark = pytest.mark.train_smoke


def test_plan_only_builds_the_data_and_the_trainers_accept_every_config(trainer_python, tiny_model_dir, tmp_path):
    for env in ("llamafactory", "verl"):
        trainer_python(env)  # fails with the make command when missing
    done = run_python(sys.executable, [REPO_ROOT / "bench" / "gpu_smoke.py", "--plan-only", "--check",
                                       "--model", tiny_model_dir, "--out", tmp_path / "out",
                                       "--results", tmp_path / "results", "--domains", "2", "--nodes", "150",
                                       "--seeds", "15", "--rl-batch", "2", "--rollout-n", "2"], timeout=1200)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "results" / "gpu_smoke_plan.json").read_text())
    steps = {s["name"]: s for s in report["steps"]}
    assert report["ok"] and report["plan_only"]
    data = steps["data"]["result"]
    assert data["questions"] >= 10 and data["trajectories"] == data["questions"]
    assert all(data["rows"][c]["train"] > 0 for c in ("sft", "sft_nothink", "rl"))
    assert steps["sft_lora"]["result"]["checked_by"] == steps["sft_full"]["result"]["checked_by"] == "llamafactory"
    assert steps["rl"]["result"]["checked_by"] == "verl"
    assert "--max-lora-rank 16" in steps["eval_sft"]["result"]["serve"]["command"]
    assert (tmp_path / "results" / "gpu_smoke_plan.md").read_text().startswith("# GPU smoke plan (nothing ran on a GPU)")


@pytest.fixture
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


def test_the_gpu_chain_passes_each_checkpoint_on_and_evaluates_it_as_trained(export_dir, tmp_path, monkeypatch,
                                                                             prefect_harness):  # fmt: skip
    """The GPU path with the GPU work stood in for: trainers that leave the checkpoints they would, a vLLM that is
    the loopback fake. Each step gets the previous one's checkpoint, each checkpoint is served in the format its
    run records say, and the evaluations run the real flow on the test questions."""
    from contextlib import contextmanager

    from tests.test_eval import build_eval_warehouse
    from training import serve as serve_mod

    for key in ("HOPFORGE_DATA_DIR", "HOPFORGE_EMBEDDINGS__BASE_URL", "HOPFORGE_EMBEDDINGS__MODEL",
                "HOPFORGE_EMBEDDINGS__DIM"):  # fmt: skip
        monkeypatch.delenv(key, raising=False)  # restored after the test: the chain exports its settings
    monkeypatch.setattr(gpu_smoke, "cuda_gpus", lambda: ["Test GPU, 1 MiB"])
    monkeypatch.setattr(gpu_smoke, "_prefect", lambda: __import__("contextlib").nullcontext())
    model = weights(tmp_path / "smol")
    launched_plans = []

    def launched(plan, what):
        plan.write()
        launched_plans.append(plan.trainer)
        out = plan.output_dir
        if plan.trainer == "verl":
            out = plan.output_dir / "global_step_3" / "actor" / "huggingface"
            weights(out)
        elif plan.config.get("llamafactory", {}).get("finetuning_type") == "lora":
            out.mkdir(parents=True)
            (out / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(model), "r": 12}))
        else:
            weights(out)
        return {"checkpoint": str(out), "command": plan.command_line(), "run_dir": str(plan.run_dir)}

    served = []

    class FakeServer:
        def __init__(self, checkpoint, opts, log, chat=None):
            self.plan = serve_mod.plan_serve(checkpoint, opts, chat=chat, vllm="vllm")
            served.append(self.plan)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def policy_endpoint(self, extra_body=None):
            return {**self.plan.policy_endpoint(extra_body), "base_url": fake["url"], "model": "fake-model"}

        def record(self):
            return {**self.plan.record(), "server": "vllm", "vllm_version": "test"}

    fake = {}
    real_settings = gpu_smoke.smoke_settings

    def settings_with_questions(data_dir, fake_url, *, export_env):
        fake["url"] = fake_url
        settings = real_settings(data_dir, fake_url, export_env=export_env)
        build_eval_warehouse(settings)
        return settings

    @contextmanager
    def tool_server(settings, **kwargs):
        yield "http://127.0.0.1:9"

    monkeypatch.setattr(gpu_smoke, "launched", launched)
    monkeypatch.setattr(gpu_smoke, "smoke_settings", settings_with_questions)
    monkeypatch.setattr(serve_mod, "VLLMServer", FakeServer)
    monkeypatch.setattr("flows.train.tool_server", tool_server)
    monkeypatch.setattr("training.env_versions.package_versions", lambda env, pkgs: {p: "test" for p in pkgs})

    opts = SmokeOptions(out=tmp_path / "out", results=tmp_path / "results", export=export_dir,
                        data_dir=tmp_path / "data", model=model, rl_batch=2, rollout_n=2, eval_limit=10)  # fmt: skip
    chain = run_chain(opts)
    data = report(chain, opts)
    steps = {s["name"]: s for s in data["steps"]}
    assert not any(s["error"] for s in data["steps"]), [(s["name"], s["error"]) for s in data["steps"] if s["error"]]
    assert [steps[n]["status"] for n in STEPS[2:]] == ["ok"] * (len(STEPS) - 2) and data["gpus"] == ["Test GPU, 1 MiB"]
    assert launched_plans == ["llamafactory", "llamafactory", "llamafactory", "verl"]
    # each served checkpoint is the one the step before it made, in the format its runs record
    assert [p.checkpoint.path for p in served][1:] == [
        steps["sft_lora"]["result"]["checkpoint"], steps["sft_full"]["result"]["checkpoint"],
        steps["rl"]["result"]["checkpoint"]]
    assert [p.chat.source.split(" (")[0] for p in served] == ["declared", "SFT run sft-lora", "SFT run sft-full",
                                                               "verl run rl-verl from SFT run sft-lora"]  # fmt: skip
    assert served[1].lora_rank == 16 and [p.opts.served_name for p in served] == [
        "smoke-base", "smoke-sft-lora", "smoke-sft-full", "smoke-rl"]
    assert steps["merge"]["result"]["checkpoint"].endswith("merge/merged")
    assert steps["rl"]["result"]["rollout_versions"]["vllm"] == "test"
    assert set(data["evaluations"]) == {"eval_base", "eval_sft", "eval_sft_full", "eval_rl"}
    for name, scores in data["evaluations"].items():
        assert scores["n"] == 3 and scores["em"] == 0.0 and scores["errors"] == 0, name  # the fake knows nothing
    # so nothing was learned: every step ran, and the smoke still fails
    assert data["learning"]["met"] is False and data["ok"] is False
    assert (data["learning"]["em_before_sft"], data["learning"]["em_after_sft"], data["learning"]["em_after_rl"]) == (0.0, 0.0, 0.0)
    assert steps["eval_sft"]["result"]["serve"]["vllm_version"] == "test"
