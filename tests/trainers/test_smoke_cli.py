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
        assert f"model {tiny_model_dir} loads on this node (qwen3" in done.stdout + done.stderr
    bad = _hopforge(["train", "sft", "--model", str(tiny_model_dir), "--export", str(tiny_export_dir),
                     "--set", "extra.not_a_llamafactory_key=1", "--dry-run", "--check"], tmp_path)
    assert bad.returncode == 2 and "not_a_llamafactory_key" in bad.stderr, bad.stderr[-3000:]


def test_check_refuses_a_model_this_node_does_not_have_in_one_line(trainer_python, tiny_export_dir, tmp_path):
    """A hub id under --offline (no download), not in this node's cache: the check loads it with transformers in
    the trainer environment, as the trainer would, and stops before LLaMA-Factory's own check."""
    trainer_python("llamafactory")
    done = _hopforge(["train", "sft", "--model", "hopforge-test/no-such-model", "--export", str(tiny_export_dir),
                      "--offline", "--dry-run", "--check"], tmp_path)  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("training error:"))
    assert line.startswith("training error: model hopforge-test/no-such-model cannot be loaded on this node "
                           "(llamafactory environment): OSError")
    assert line.endswith("(`huggingface-cli download hopforge-test/no-such-model`) or give a local model directory")
    assert "llamafactory accepts the config" not in done.stdout + done.stderr


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


# -- clusters: 1 node x 8 GPUs and 2 nodes x 8 GPUs, checked on this CPU machine as rank 0 would read them ----------

#: A node of 8 GPUs of 80 GiB, stated (this machine has none to probe).
EIGHT_GPUS = ["--nproc-per-node", "8", "--set", "cluster.device=cuda", "--set", "cluster.gpu_memory_gib=80"]
NODES = {"1x8": [], "2x8": ["--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.1", "--master-port", "29611"]}


def _plan(done: subprocess.CompletedProcess[str]) -> tuple[Path, dict]:
    """The folder holding this node's files (the run dir on node 0, ``nodes/node-<k>`` of it on node k) and its
    plan."""
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    node_dir = next((Path(ln.split("files:", 1)[1].strip()) for ln in done.stdout.splitlines()
                     if ln.startswith("node ") and "'s files:" in ln), _run_dir(done.stdout))  # fmt: skip
    return node_dir, json.loads((node_dir / "plan.json").read_text())


@pytest.mark.parametrize("nodes", sorted(NODES))
@pytest.mark.parametrize("kind", ["lora", "full-zero3", "full-fsdp"])
def test_sft_cluster_plans_pass_llamafactory_check(trainer_python, tiny_model_dir, tiny_export_dir, tmp_path, nodes,
                                                   kind):  # fmt: skip
    trainer_python("llamafactory")
    extra = {"lora": [], "full-zero3": ["--full", "--deepspeed", "zero3"],
             "full-fsdp": ["--full", "--set", "fsdp=full_shard"]}[kind]
    done = _hopforge(["train", "sft", "--model", str(tiny_model_dir), "--export", str(tiny_export_dir),
                      "--think-weight", "0.001", *EIGHT_GPUS, *NODES[nodes], *extra, "--dry-run", "--check"],
                     tmp_path)  # fmt: skip
    run_dir, plan = _plan(done)
    assert "llamafactory accepts the config" in done.stdout + done.stderr
    world = 16 if nodes == "2x8" else 8
    argv = plan["argv"]
    assert argv[1:3] == ["-m", "torch.distributed.run"] and argv[argv.index("--nproc-per-node") + 1] == "8"
    assert argv[argv.index("--nnodes") + 1] == ("2" if nodes == "2x8" else "1")
    assert plan["config"]["cluster"]["world_size"] == world and plan["config"]["llamafactory"]["bf16"] is True
    assert plan["config"]["versions"]["llamafactory"] == "0.9.5"
    # The check's report: LLaMA-Factory parsed the config as rank node_rank x 8 of the world, and transformers
    # built the DeepSpeed config.
    report = json.loads((run_dir / "check.json").read_text())
    assert report["world_size"] == world and f"distributed mode with world size {world}" in report["validated"]
    assert any(f"rank {8 if nodes == '2x8' else 0} of {world}" in s for s in report["simulated"])
    if kind == "full-zero3":
        assert (run_dir / "deepspeed_zero3.json").is_file()
        assert any(f"DeepSpeed ZeRO-3 config through transformers' HfTrainerDeepSpeedConfig (train_batch_size "
                   f"{4 * world}" in v for v in report["validated"])  # fmt: skip
    if kind == "full-fsdp":
        assert (run_dir / "fsdp_config.json").is_file()
        assert any(v.startswith("FSDP arguments (full_shard auto_wrap") for v in report["validated"])


@pytest.mark.parametrize("nodes", sorted(NODES))
def test_trl_cluster_plans_pass_the_trl_check(trainer_python, tiny_model_dir, rl_export, tmp_path, nodes):
    trainer_python("trl")
    done = _hopforge(["train", "rl", "--trainer", "trl", "--model", str(tiny_model_dir), "--export",
                      str(rl_export.path), "--set", "num_generations=2", "--set", "per_device_train_batch_size=2",
                      *EIGHT_GPUS, *NODES[nodes], "--deepspeed", "zero3", "--dry-run", "--check"], tmp_path)  # fmt: skip
    run_dir, plan = _plan(done)
    assert "trl accepts the config" in done.stdout + done.stderr
    world = 16 if nodes == "2x8" else 8
    assert plan["argv"][1:3] == ["-m", "accelerate.commands.launch"]
    accel = yaml.safe_load((run_dir / "accelerate.yaml").read_text())
    assert (accel["num_processes"], accel["distributed_type"]) == (world, "DEEPSPEED")
    report = json.loads((run_dir / "check.json").read_text())
    assert f"GRPOConfig in distributed mode, world size {world}, 0 device(s) per process" in report["validated"]
    assert any(v.startswith("DeepSpeed plugin ZeRO-3") for v in report["validated"])
    assert report["prompts"]["measured"] and report["prompts"]["over"] == 0 and report["bf16"] is True


def test_bad_cluster_input_is_one_line_before_anything_launches(tiny_model_dir, tiny_export_dir, tmp_path):
    base = ["train", "sft", "--model", str(tiny_model_dir), "--export", str(tiny_export_dir), "--dry-run"]
    for args, message in (
        (["--nnodes", "2"], "cluster.nnodes 2 needs cluster.master_addr"),
        (["--nnodes", "2", "--node-rank", "2", "--master-addr", "10.0.0.1"], "cluster.node_rank 2 must be below"),
        (["--set", "lora_rank=1024"], "lora_rank 1024 is above 512"),
        (["--deepspeed", "zero4"], "deepspeed: Input should be 'none', 'zero2' or 'zero3'"),
        (["--deepspeed", "zero3"], "deepspeed=zero3 shards the model over GPUs, but this plan's device is a CPU"),
    ):  # fmt: skip
        done = _hopforge([*base, *args], tmp_path)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr[-2000:])
        assert "Traceback" not in done.stderr and not (tmp_path / "training").exists()


def test_two_cpu_ranks_under_torchrun_each_install_the_weighted_loss(trainer_python, tiny_model_dir, tiny_export_dir,
                                                                     tmp_path):  # fmt: skip
    trainer_python("llamafactory")
    done = _hopforge(["train", "sft", "--model", str(tiny_model_dir), "--export", str(tiny_export_dir),
                      "--think-weight", "0.001", "--max-steps", "2", "--nproc-per-node", "2", "--master-port", "29623",
                      "--set", "cluster.device=cpu", "--set", "cutoff_len=4096", "--set", "eval_dataset=none",
                      "--set", "logging_steps=1"], tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    run_dir = _run_dir(done.stdout)
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "ok" and result["global_step"] == 2 and result["weighted_loss"] is True
    assert [(r["rank"], r["world_size"], r["weighted_loss"]) for r in result["ranks"]] == [(0, 2, True), (1, 2, True)]
    assert result["versions"]["llamafactory"] == "0.9.5"
    assert json.loads((run_dir / "plan.json").read_text())["argv"][1:3] == ["-m", "torch.distributed.run"]


def test_measure_prompts_counts_with_the_models_tokenizer(trainer_python, tiny_model_dir, rl_export):
    from schemas.tools import tool_schema
    from training.plan import measure_prompts

    trainer_python("trl")
    tools = [tool_schema("entity_matcher"), tool_schema("node_info")]
    wide = measure_prompts(rl_export, tiny_model_dir, 4096, tools=tools)
    assert wide.rows == sum(rl_export.rows("rl").values()) and wide.over == 0 and set(wide.splits) == {"train",
                                                                                                       "validation"}
    bare = measure_prompts(rl_export, tiny_model_dir, 4096)
    assert bare.longest < wide.longest  # the tool block is part of what is measured
    tight = measure_prompts(rl_export, tiny_model_dir, wide.longest - 1, tools=tools)
    assert tight.over >= 1 and tight.longest_id in tight.over_ids
    assert tight.refusal().startswith(f"{tight.over} of {tight.rows} prompts are longer than max_prompt_length")
    evaluation = measure_prompts(None, tiny_model_dir, 8, prompts=[{"id": "q1", "messages": [
        {"role": "user", "content": "Which college did the author of On Computable Numbers study at?"}]}])
    assert (evaluation.rows, evaluation.over, evaluation.over_ids) == (1, 1, ["q1"])


def test_evaluation_of_a_served_checkpoint_measures_its_prompts_first(trainer_python, tiny_model_dir, prefect_harness,
                                                                      fake_llm, tmp_path):  # fmt: skip
    """A served checkpoint's record names its tokenizer (the checkpoint) and ``max_model_len``: every first request
    is measured with that tokenizer and chat template before any is sent. One that leaves less than its reply tokens
    inside max_model_len refuses the run with the counts, and nothing is asked."""
    from flows.evaluate import evaluate_policy
    from schemas.config import load_settings
    from tests.test_eval import KINGS, build_eval_warehouse, roles
    from training.plan import TrainingError

    trainer_python("trl")
    settings = load_settings(data_dir=tmp_path, roles=roles(fake_llm),
                             embeddings={"base_url": fake_llm.base_url, "model": "fake-embed", "dim": 16})
    build_eval_warehouse(settings)
    fake_llm.add(reply=f"<answer>{KINGS}</answer>")

    def serving(max_model_len: int) -> dict:
        return {"server": "vllm", "checkpoint": str(tiny_model_dir), "max_model_len": max_model_len,
                "chat_format": {"kind": "think", "enable_thinking": True}}  # fmt: skip

    calls = fake_llm.calls()
    # 500 reply tokens per turn: 16 tokens of room are too few for any of the 3 test questions' first requests
    with pytest.raises(TrainingError, match=r"^3 of 3 evaluation prompts are longer than max_model_len 516 minus "
                                            r"the 500 reply tokens they ask for \(16 tokens; longest \d+, \S+:tools\): "
                                            r"serve with a larger max_model_len, or lower max_tokens_per_round$"):
        evaluate_policy(modes=["tools", "no_tools"], trained_as="think", max_tokens_per_round=500,
                        serving=serving(516), settings=settings)  # fmt: skip
    assert fake_llm.calls() == calls  # refused before anything was asked
    out = evaluate_policy(modes=["tools", "no_tools"], trained_as="think", max_tokens_per_round=500,
                          serving=serving(8192), settings=settings)  # fmt: skip
    tools, closed = out["prompts"]["groups"]
    assert out["prompts"]["max_model_len"] == 8192 and out["prompts"]["tokenizer"] == str(tiny_model_dir)
    assert (tools["tools"], tools["rows"], tools["max_tokens"], tools["room"]) == (True, 3, 500, 7692)
    assert (closed["tools"], closed["rows"], closed["max_tokens"]) == (False, 3, 3000)
    assert 16 < closed["longest"] < tools["longest"]  # the tool block is part of what is measured
    assert out["by_mode"]["tools"]["n"] == 3 and fake_llm.calls() > calls
    # the longest first request decides: just room enough passes, one token less refuses
    edge = tools["longest"] + 500
    assert evaluate_policy(modes=["tools"], trained_as="think", max_tokens_per_round=500, serving=serving(edge),
                           settings=settings)["prompts"]["groups"][0]["room"] == tools["longest"]  # fmt: skip
    with pytest.raises(TrainingError, match=rf"^\d of 3 evaluation prompts .* \({tools['longest'] - 1} tokens; "
                                            rf"longest {tools['longest']}, "):
        evaluate_policy(modes=["tools"], trained_as="think", max_tokens_per_round=500, serving=serving(edge - 1),
                        settings=settings)  # fmt: skip


def test_trl_refuses_or_filters_overlong_prompts(trainer_python, tiny_model_dir, rl_export, tmp_path):
    trainer_python("trl")
    base = ["train", "rl", "--trainer", "trl", "--model", str(tiny_model_dir), "--export", str(rl_export.path),
            "--set", "num_generations=2", "--set", "per_device_train_batch_size=2", "--set", "max_prompt_length=266",
            "--dry-run", "--check"]  # fmt: skip
    # The fixture's four train prompts measure 265 tokens or less, but one: 271.
    refused = _hopforge(base, tmp_path)
    assert refused.returncode == 2 and "1 of 4 prompts are longer than max_prompt_length 266 tokens (longest 271" \
        in refused.stderr, refused.stderr[-2000:]
    filtered = _hopforge([*base, "--set", "overlong=filter"], tmp_path)
    assert filtered.returncode == 0, filtered.stderr[-3000:]
