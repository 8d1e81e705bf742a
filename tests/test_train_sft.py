"""LLaMA-Factory SFT configs from an export (training.sft): defaults, templates per dataset, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from training.plan import REPO_ROOT, TrainingError, load_export, resolve_export
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
               bf16=True, extra={"lora_alpha": 32}).config["llamafactory"]  # fmt: skip
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
    ({"extra": {"deepspeed": "ds.json"}}, r"extra may not set deepspeed: use the SFT options"),
    ({"lora_rank": 513}, r"lora_rank: Value error, lora_rank 513 is above 512, the largest rank vLLM serves"),
    ({"deepspeed": "zero4"}, r"deepspeed: Input should be 'none', 'zero2' or 'zero3'"),
    ({"deepspeed": "zero3", "fsdp": "full_shard"}, r"deepspeed=zero3 and fsdp=full_shard both shard the model"),
    ({"cluster": {"nnodes": 2}}, r"cluster: Value error, cluster.nnodes 2 needs cluster.master_addr"),
    ({"cluster": {"nnodes": 2, "node_rank": 2, "master_addr": "10.0.0.1"}},
     r"cluster.node_rank 2 must be below cluster.nnodes 2"),
    ({"cluster": {"nnodes": 2, "master_addr": "127.0.0.1"}}, r"cluster.master_addr 127.0.0.1 is a loopback address"),
    ({"cluster": {"nproc_per_node": 0}}, r"cluster.nproc_per_node: Input should be greater than or equal to 1"),
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


# -- clusters: several GPUs, several nodes, DeepSpeed --------------------------------------------------------------

QWEN3_8B = {"model_type": "qwen3", "hidden_size": 4096, "num_hidden_layers": 36, "intermediate_size": 12288,
            "vocab_size": 151936, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
            "tie_word_embeddings": False}  # fmt: skip


@pytest.fixture(scope="module")
def model_8b(tmp_path_factory) -> Path:
    """A directory with Qwen3-8B's config.json (the sizes the memory check reads) and a stand-in weights file."""
    path = tmp_path_factory.mktemp("qwen3-8b")
    (path / "config.json").write_text(json.dumps(QWEN3_8B))
    (path / "model.safetensors").write_bytes(b"\0" * 8)
    return path


def gpus(n: int = 8, memory: float = 80.0, bf16: bool = True):
    from training.cluster import DeviceInfo

    return DeviceInfo("cuda", n, memory, bf16, "test", {"torch": "2.13.0"})


def plan_on(export_dir, run_dir, model, device, **opts):
    return plan_sft(load_export(export_dir), run_dir, SFTOptions(model=str(model), **opts), device=device)


def test_one_node_of_eight_gpus_runs_lora_under_torchrun_in_bf16(export_dirs, tmp_path, model_dir):
    _, full, _ = export_dirs
    p = plan_on(full, tmp_path / "run", model_dir, gpus(8))
    python, script = p.argv[0], str(REPO / "training" / "launch" / "llamafactory_sft.py")
    assert p.argv[:16] == [python, "-m", "torch.distributed.run", "--nnodes", "1", "--node-rank", "0",
                           "--nproc-per-node", "8", "--master-addr", "127.0.0.1", "--master-port", "29500", script,
                           str((tmp_path / "run" / "llamafactory.yaml").resolve()), "--hopforge"]  # fmt: skip
    cfg = p.config["llamafactory"]
    assert cfg["bf16"] is True and "deepspeed" not in cfg and cfg["finetuning_type"] == "lora"
    launch = json.loads(p.files["hopforge_sft.json"])["launch"]
    assert (launch["world_size"], launch["torchrun"], launch["device"]["kind"]) == (8, True, "cuda")
    assert p.config["launcher"] == "torchrun" and p.config["versions"] == {"torch": "2.13.0"}
    assert any("8 processes (1 node(s) x 8); effective batch 32 rows" in n for n in p.notes)
    summary = json.loads(p.write()[-1].read_text())  # plan.json records the cluster and the versions
    assert summary["config"]["cluster"]["world_size"] == 8 and summary["config"]["memory"]["checked"] is False
    assert any("memory fit not checked: model size unknown" in n for n in p.notes)  # its config.json has no sizes


def test_two_nodes_full_finetuning_with_zero3_writes_the_deepspeed_config_beside_the_run(export_dirs, tmp_path,
                                                                                          model_8b):  # fmt: skip
    _, full, _ = export_dirs
    p = plan_on(full, tmp_path / "run", model_8b, gpus(8), finetuning_type="full", deepspeed="zero3",
                cluster={"nnodes": 2, "node_rank": 1, "master_addr": "10.0.0.1", "master_port": 29600})  # fmt: skip
    assert p.argv[3:13] == ["--nnodes", "2", "--node-rank", "1", "--nproc-per-node", "8", "--master-addr", "10.0.0.1",
                            "--master-port", "29600"]  # fmt: skip
    ds_path = (tmp_path / "run" / "deepspeed_zero3.json").resolve()
    assert p.config["llamafactory"]["deepspeed"] == str(ds_path)
    p.write()
    ds = json.loads(ds_path.read_text())
    assert ds["zero_optimization"]["stage"] == 3 and ds["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"]
    assert ds["train_micro_batch_size_per_gpu"] == "auto" and ds["bf16"] == {"enabled": "auto"}
    memory = p.config["memory"]
    # ZeRO-3 over 16 GPUs: 16 bytes per parameter, sharded; Qwen3-8B has 8.2B parameters (its model card).
    assert abs(memory["params"] / 8.2e9 - 1) < 0.01
    assert memory["state_gib_per_gpu"] == round(16 * memory["params"] / 16 / 1024**3, 1)
    assert any("node 1 of 2: run the same command on every node" in n for n in p.notes)


def test_zero2_that_does_not_fit_is_refused_and_zero3_accepted(export_dirs, tmp_path, model_8b):
    _, full, _ = export_dirs
    small = gpus(8, memory=24.0)
    # ZeRO-2: 2 bytes/param of weights on every GPU + 14 bytes/param sharded over 8 = 28.6 GiB > 75% of 24 GiB.
    with pytest.raises(TrainingError, match=r"^deepspeed=zero2 does not fit: full fine-tuning of 8.2B parameters needs "
                                            r"about 28.6 GiB .* over 8 process\(es\), more than the 18.0 GiB it may "
                                            r"take of a 24 GiB GPU: use deepspeed=zero3"):  # fmt: skip
        plan_on(full, tmp_path / "z2", model_8b, small, finetuning_type="full", deepspeed="zero2")
    z3 = plan_on(full, tmp_path / "z3", model_8b, small, finetuning_type="full", deepspeed="zero3")
    assert z3.config["memory"]["state_gib_per_gpu"] == 15.3
    with pytest.raises(TrainingError, match=r"^deepspeed=none does not fit: .* about 122.1 GiB"):
        plan_on(full, tmp_path / "ddp", model_8b, gpus(8, memory=80.0), finetuning_type="full")
    # LoRA keeps only the frozen bf16 weights and a small adapter's states: fits one 24 GiB GPU.
    lora = plan_on(full, tmp_path / "lora", model_8b, gpus(1, memory=24.0))
    assert lora.config["memory"]["state_gib_per_gpu"] < 18.0


def test_more_processes_than_gpus_is_refused_before_anything_is_written(export_dirs, tmp_path, model_dir):
    _, full, _ = export_dirs
    with pytest.raises(TrainingError, match=r"^cluster.nproc_per_node 8 is more than the 4 GPU\(s\) visible on this "
                                            r"node \(CUDA_VISIBLE_DEVICES="):  # fmt: skip
        plan_on(full, tmp_path / "run", model_dir, gpus(4), cluster={"nproc_per_node": 8})
    assert not (tmp_path / "run").exists()


def test_sharding_needs_gpus(export_dirs, tmp_path, model_dir):
    from training.cluster import DeviceInfo

    _, full, _ = export_dirs
    cpu = DeviceInfo("cpu", 0, None, False, "test")
    with pytest.raises(TrainingError, match=r"^deepspeed=zero3 shards the model over GPUs, but this plan's device is a "
                                            r"CPU \(test\)"):  # fmt: skip
        plan_on(full, tmp_path / "run", model_dir, cpu, deepspeed="zero3")


def test_bf16_follows_the_device_unless_set(export_dirs, tmp_path, model_dir):
    from training.cluster import DeviceInfo

    _, full, _ = export_dirs
    cpu = DeviceInfo("cpu", 0, None, False, "test")
    assert plan_on(full, tmp_path / "a", model_dir, gpus(2)).config["llamafactory"]["bf16"] is True
    assert plan_on(full, tmp_path / "b", model_dir, gpus(2, bf16=False)).config["llamafactory"]["bf16"] is False
    off = plan_on(full, tmp_path / "c", model_dir, gpus(2), bf16=False)
    assert off.config["llamafactory"]["bf16"] is False and any("bf16 is off (set bf16=false" in n for n in off.notes)
    on_cpu = plan_on(full, tmp_path / "d", model_dir, cpu)
    assert on_cpu.config["llamafactory"]["bf16"] is False and on_cpu.config["launcher"] == "python"
    assert any("bf16 is off (no GPU on this node" in n for n in on_cpu.notes)


def test_several_cpu_processes_run_under_torchrun(export_dirs, tmp_path, model_dir):
    _, full, _ = export_dirs
    p = plan_sft(load_export(full), tmp_path / "run", SFTOptions(model=str(model_dir), cluster={"device": "cpu",
                                                                                                "nproc_per_node": 2}))  # fmt: skip
    assert p.argv[1:3] == ["-m", "torch.distributed.run"] and p.argv[p.argv.index("--nproc-per-node") + 1] == "2"
    assert p.config["cluster"]["device"]["source"] == "options (cluster.device=cpu)"


def test_fsdp_config_is_written_and_referenced(export_dirs, tmp_path, model_dir):
    _, full, _ = export_dirs
    p = plan_on(full, tmp_path / "run", model_dir, gpus(8), finetuning_type="full", fsdp="full_shard")
    cfg = p.config["llamafactory"]
    assert cfg["fsdp"] == "full_shard auto_wrap" and cfg["fsdp_config"] == str((tmp_path / "run" / "fsdp_config.json").resolve())
    assert json.loads(p.files["fsdp_config.json"])["use_orig_params"] is True and "deepspeed" not in cfg


def test_device_detection_without_a_probe(tmp_path, monkeypatch):
    from training.cluster import ClusterOptions, detect_device
    from training.envs import ENVS_VAR

    monkeypatch.setenv(ENVS_VAR, str(tmp_path / "no-envs"))
    cpu = detect_device("llamafactory", ClusterOptions(device="cpu"))
    assert (cpu.kind, cpu.gpus, cpu.bf16) == ("cpu", 0, False)
    stated = detect_device("llamafactory", ClusterOptions(device="cuda", nproc_per_node=8, gpu_memory_gib=80))
    assert (stated.kind, stated.gpus, stated.gpu_memory_gib, stated.bf16) == ("cuda", 8, 80, True)
    assert detect_device("llamafactory", ClusterOptions()).source == "no llamafactory environment to probe: planned for a CPU"
    with pytest.raises(TrainingError, match=r"cluster.device is cuda but the llamafactory environment is missing"):
        detect_device("llamafactory", ClusterOptions(device="cuda"))


def test_gpu_environments_keep_what_the_trainers_pin():
    from training.envs import install_commands

    for name in ("llamafactory", "trl", "verl"):
        gpu = [" ".join(c) for c in install_commands(name, "gpu")]
        assert not any("uninstall" in c for c in gpu), gpu
        assert any("uninstall" in c and "torchvision" in c for c in install_commands(name, "cpu") for c in [" ".join(c)])
    for name in ("llamafactory", "trl"):
        for flavour in ("cpu", "gpu"):
            assert any("deepspeed==0.19.8" in " ".join(c) for c in install_commands(name, flavour))


def test_gpu_smoke_installs_gguf_pinned_through_the_trl_environment():
    """``make gpu-smoke`` reads the GGUF weights in the trl environment: gguf comes pinned with its GPU flavour,
    and the make target installs nothing with pip itself."""
    from training.envs import install_commands

    installs = [c for c in install_commands("trl", "gpu") if c[1:4] == ["-m", "pip", "install"]]
    assert [a for c in installs for a in c if a.startswith("gguf")] == ["gguf==0.19.0"]
    makefile = (REPO_ROOT / "Makefile").read_text()
    recipe = makefile.split("\ngpu-smoke:", 1)[1].split("\n\n", 1)[0]
    assert "training.envs create trl --flavour gpu" in recipe and "pip install" not in recipe
