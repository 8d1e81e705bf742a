"""Serving a checkpoint as it was trained (training.serve): the format read from the run that wrote it, the vLLM
command it decides, LoRA ranks vLLM accepts, the policy endpoint, and the CLI that prints them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from training.merge import plan_merge
from training.plan import TrainingError, load_export
from training.rl_verl import VerlOptions, plan_verl
from training.serve import (
    VLLM_LORA_RANKS,
    ChatFormat,
    Checkpoint,
    ServeOptions,
    chat_format,
    describe_checkpoint,
    max_lora_rank,
    plan_serve,
    policy_endpoint,
    recorded_format,
    serve_command_line,
)
from training.sft import SFTOptions, plan_sft

runner = CliRunner()


def weights(root: Path) -> Path:
    """A directory that passes as full weights (never loaded here)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text('{"model_type": "qwen3"}')
    (root / "model.safetensors").write_bytes(b"\0" * 8)
    return root


def adapter(root: Path, base: Path | str, rank: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(base), "r": rank}))
    return root


@pytest.fixture(scope="module")
def export_view(tmp_path_factory):
    """An export with think and no-think SFT rows and rl rows (the trainer fixture records)."""
    from tasks.export.datasets import ExportInputs, export
    from tests.trainers.conftest import build_fixture_records

    qas, gold, trajs = build_fixture_records()
    return load_export(export(ExportInputs(qas, gold, trajs), tmp_path_factory.mktemp("exports"), version="v1").path)


def sft_output(export_view, tmp_path: Path, base: Path, name: str, **opts) -> Path:
    """The output of a planned (and written) SFT run, made to look like what LLaMA-Factory leaves there."""
    plan = plan_sft(export_view, tmp_path / name, SFTOptions(model=str(base), **opts))
    plan.write()
    if opts.get("finetuning_type") == "full":
        return weights(plan.output_dir)
    return adapter(plan.output_dir, base, plan.config["llamafactory"]["lora_rank"])


# -- the format, from the runs that made the checkpoint -------------------------------------------------------------


def test_think_sft_then_merge_then_verl_is_served_with_the_reasoning_parser(export_view, tmp_path):
    base = weights(tmp_path / "base")
    lora = sft_output(export_view, tmp_path, base, "sft", lora_rank=12)
    fmt = recorded_format(lora)
    assert (fmt.kind, fmt.template, fmt.enable_thinking, fmt.keep_reasoning) == ("think", "qwen3", True, True)
    assert fmt.source == "SFT run sft (template qwen3)"

    merge = plan_merge(lora, tmp_path / "merge")  # the template comes from the adapter's own run
    assert merge.config["template"] == "qwen3"
    merge.write()
    merged = weights(merge.output_dir)
    assert recorded_format(merged) == fmt  # a merge inherits what its adapter was trained on

    rl = plan_verl(export_view, tmp_path / "rl", VerlOptions(model=str(merged), stage="sft", train_batch_size=2,
                                                             ppo_mini_batch_size=2, rollout_n=2, n_gpus_per_node=1))  # fmt: skip
    rl.write()
    final = weights(rl.output_dir / "global_step_2" / "actor" / "huggingface")
    after_rl = recorded_format(final)
    assert after_rl.kind == "think" and after_rl.source.startswith("verl run rl from SFT run sft")

    plan = plan_serve(final, ServeOptions(port=8011), vllm="vllm")
    argv = plan.argv
    assert argv[:3] == ["vllm", "serve", str(final.resolve())]
    assert argv[argv.index("--reasoning-parser") + 1] == "qwen3"
    assert argv[argv.index("--tool-call-parser") + 1] == "hermes" and "--enable-lora" not in argv
    assert plan.policy_endpoint() == {"base_url": "http://127.0.0.1:8011/v1", "model": "hopforge-policy",
                                      "extra_body": {"chat_template_kwargs": {"enable_thinking": True}}}  # fmt: skip
    assert plan.record()["chat_format"]["keep_reasoning"] is True
    # the endpoint's own extra body is kept, the switch added to its chat template kwargs
    assert plan.policy_endpoint({"top_k": 20, "chat_template_kwargs": {"x": 1}})["extra_body"] == {
        "top_k": 20, "chat_template_kwargs": {"x": 1, "enable_thinking": True}}


def test_no_think_sft_is_served_without_a_parser_and_with_the_prompt_it_trained_on(export_view, tmp_path):
    base = weights(tmp_path / "base")
    full = sft_output(export_view, tmp_path, base, "sft-nothink", dataset="hopforge_sft_nothink_train",
                      finetuning_type="full")  # fmt: skip
    plan = plan_serve(full, ServeOptions(), vllm="vllm")
    assert plan.chat.kind == "no_think" and plan.chat.template == "qwen3_nothink"
    # vLLM 0.24.0's qwen3 parser would put the whole reply in `reasoning`: no parser, the reply stays in `content`
    assert "--reasoning-parser" not in plan.argv
    # qwen3_nothink prompts end at "<|im_start|>assistant\n": Qwen3's template renders that with enable_thinking
    # true; false would add an empty think block training never saw
    assert plan.policy_endpoint()["extra_body"] == {"chat_template_kwargs": {"enable_thinking": True}}
    assert plan.chat.keep_reasoning is False
    assert plan.notes[0].startswith("served no-think (SFT run sft-nothink (template qwen3_nothink)): no reasoning parser")


def test_qwen3_trained_with_thinking_off_is_served_with_thinking_off(tmp_path):
    fmt = ChatFormat("no_think", False, "qwen3", "x")
    from training.serve import format_of_template

    off = format_of_template("qwen3", enable_thinking=False, source="SFT run a")
    assert (off.kind, off.enable_thinking, off.reasoning_parser) == (fmt.kind, fmt.enable_thinking, None)
    with pytest.raises(TrainingError, match="template 'llama3', whose reasoning format hopforge does not know"):
        format_of_template("llama3", source="SFT run b")


def test_without_a_run_record_the_format_must_be_declared(tmp_path):
    base = weights(tmp_path / "base")
    assert recorded_format(base) is None
    with pytest.raises(TrainingError, match="cannot tell whether .* set reasoning to think or no_think"):
        plan_serve(base, ServeOptions(), vllm="vllm")
    think = plan_serve(base, ServeOptions(reasoning="think"), vllm="vllm")
    assert "--reasoning-parser" in think.argv and think.chat.source == "declared"
    # declared without a record, no-think is Qwen3's own switch
    nothink = plan_serve(base, ServeOptions(reasoning="no_think"), vllm="vllm")
    assert "--reasoning-parser" not in nothink.argv and nothink.chat.enable_thinking is False


def test_a_declaration_that_contradicts_the_record_is_refused(export_view, tmp_path):
    lora = sft_output(export_view, tmp_path, weights(tmp_path / "base"), "sft")
    assert chat_format(lora, "think").kind == "think"
    with pytest.raises(TrainingError, match="was trained think .* reasoning=no_think was asked"):
        chat_format(lora, "no_think")


def test_a_plan_json_that_does_not_hold_the_checkpoint_is_no_record(tmp_path):
    run = tmp_path / "run"
    weights(run / "elsewhere")
    (run / "plan.json").write_text(json.dumps({"trainer": "llamafactory", "output_dir": str(run / "output"),
                                               "config": {"llamafactory": {"template": "qwen3"}}}))  # fmt: skip
    assert recorded_format(run / "elsewhere") is None
    assert recorded_format(weights(run / "output")).kind == "think"


# -- LoRA ranks -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("rank", "served"), [(1, 1), (4, 8), (8, 8), (12, 16), (24, 32), (100, 128), (300, 320),
                                              (320, 320), (400, 512), (512, 512)])  # fmt: skip
def test_lora_ranks_round_up_to_what_vllm_accepts(rank, served):
    assert max_lora_rank(rank) == served and served in VLLM_LORA_RANKS


def test_lora_adapter_command_says_when_its_rank_was_rounded(tmp_path):
    lora = adapter(tmp_path / "lora", "/models/base", 12)
    plan = plan_serve(lora, ServeOptions(served_name="p1", reasoning="think"), vllm="vllm")
    argv = plan.argv
    assert argv[2] == "/models/base" and "--enable-lora" in argv
    assert argv[argv.index("--lora-modules") + 1] == f"p1={lora.resolve()}"
    assert argv[argv.index("--max-lora-rank") + 1] == "16" and plan.lora_rank == 16
    assert "LoRA rank 12 served with --max-lora-rank 16: vLLM accepts only 1, 8, 16, 32, 64, 128, 256, 320, 512" in plan.notes
    exact = plan_serve(adapter(tmp_path / "lora8", "/models/base", 8), ServeOptions(reasoning="think"), vllm="vllm")
    assert exact.argv[exact.argv.index("--max-lora-rank") + 1] == "8" and len(exact.notes) == 1


def test_a_rank_above_512_is_refused_in_one_line(tmp_path):
    with pytest.raises(TrainingError) as info:
        plan_serve(adapter(tmp_path / "big", "/models/base", 600), ServeOptions(reasoning="think"), vllm="vllm")
    message = str(info.value)
    assert "\n" not in message and "LoRA rank 600" in message and "above 512" in message and "merge" in message
    with pytest.raises(TrainingError, match="must be >= 1"):
        max_lora_rank(0)


def test_a_planned_checkpoint_is_described_without_a_directory():
    planned = Checkpoint("lora", "/runs/sft/output", "/models/base", 24)
    plan = plan_serve(planned, ServeOptions(), chat=ChatFormat("think", True, "qwen3", "planned"), vllm="vllm")
    assert plan.argv[plan.argv.index("--max-lora-rank") + 1] == "32"


def test_checkpoint_description_and_policy_endpoint(tmp_path):
    assert describe_checkpoint(weights(tmp_path / "full")) == Checkpoint("full", str((tmp_path / "full").resolve()))
    assert policy_endpoint(ServeOptions(host="0.0.0.0", port=9000, served_name="p1")) == {
        "base_url": "http://127.0.0.1:9000/v1", "model": "p1"}
    with pytest.raises(TrainingError, match="neither a model"):
        describe_checkpoint(tmp_path)
    with pytest.raises(TrainingError, match="does not exist"):
        describe_checkpoint(tmp_path / "nope")
    text = serve_command_line(adapter(tmp_path / "l", "/m", 4), ServeOptions(reasoning="think"))
    assert text.splitlines()[1] == "# LoRA rank 4 served with --max-lora-rank 8: vLLM accepts only 1, 8, 16, 32, 64, " \
                                   "128, 256, 320, 512"
    assert " serve /m " in text.splitlines()[-1]


# -- the CLI ----------------------------------------------------------------------------------------------------------


def test_serve_command_cli_prints_the_format_and_how_to_evaluate(export_view, tmp_path):
    lora = sft_output(export_view, tmp_path, weights(tmp_path / "base"), "sft", lora_rank=12)
    result = runner.invoke(app, ["train", "serve-command", str(lora), "--port", "8123"])
    assert result.exit_code == 0, result.output
    assert "# LoRA rank 12 served with --max-lora-rank 16" in result.output
    assert "--reasoning-parser qwen3" in result.output and "--port 8123" in result.output
    assert "HOPFORGE_ROLES__POLICY__BASE_URL=http://127.0.0.1:8123/v1" in result.output
    assert """HOPFORGE_ROLES__POLICY__EXTRA_BODY='{"chat_template_kwargs": {"enable_thinking": true}}'""" in result.output
    assert "hopforge eval run --trained-as think" in result.output


def test_serve_command_cli_refuses_an_unknown_format(tmp_path):
    weights(tmp_path / "base")
    result = runner.invoke(app, ["train", "serve-command", str(tmp_path / "base")])
    assert result.exit_code != 0 and "set reasoning to think or no_think" in result.output
    declared = runner.invoke(app, ["train", "serve-command", str(tmp_path / "base"), "--reasoning", "no_think"])
    assert declared.exit_code == 0 and "--reasoning-parser" not in declared.output
    assert "--trained-as no_think" in declared.output


def test_eval_cli_refuses_an_unknown_training_format():
    result = runner.invoke(app, ["eval", "run", "--trained-as", "maybe"])
    flat = " ".join(result.output.split())
    assert result.exit_code != 0 and "trained_as (--trained-as) must be think or no_think, got 'maybe'" in flat
