"""RL hand-off (``training.rl_verl``, ``training.rl_trl``, ``training.rl_common``): the verl overrides and tool
config, the TRL GRPO config, both Omne-R1 schedules, reward kwargs passed through, and bad input refused with a
clear ``TrainingError`` before anything is written.

Fast and core-only: no trainer is imported here (the trainers' own checks of these files are in
``tests/trainers/test_smoke_verl.py`` and ``test_smoke_trl.py``).
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from training.plan import REPO_ROOT, TrainingError, load_export
from training.rl_common import options_from
from training.rl_trl import TRLOptions, plan_trl
from training.rl_verl import VerlOptions, plan_verl, verl_tool_schema

GRAPHS = REPO_ROOT / "flows" / "demo" / "graphs"

# (path, question, split). Train and validation questions share no seed or answer entity (exports refuse
# splits that do).
RL_QUESTIONS = [
    (["On Computable Numbers", "Alan Turing", "King's College, Cambridge"],
     "Which college did the author of On Computable Numbers study at?", "train"),
    (["Alan Turing", "Bletchley Park"], "Where did Alan Turing work during the war?", "train"),
    (["Alan Turing", "Bombe"], "Which codebreaking device did Alan Turing design?", "train"),
    (["Alan Turing", "On Computable Numbers", "Turing machine"],
     "What abstract device did the 1936 paper by Alan Turing introduce?", "train"),
    (["Marian Rejewski", "Polish Cipher Bureau"], "Which intelligence unit did Marian Rejewski work for?",
     "validation"),
]  # fmt: skip


def build_rl_export(exports_dir: Path, *, version: str = "rl-test", questions=RL_QUESTIONS,
                    include=("qa", "sft", "rl", "messages")) -> Path:  # fmt: skip
    """An export of ``questions`` over the demo computing graph, with one template tool-use trajectory each."""
    from schemas.qa import QA, GoldPath, make_qa_id
    from schemas.trajectories import Trajectory, make_trajectory_id
    from tasks.distill.template import run_template_tools, template_messages
    from tasks.env.index import HashingEmbedder
    from tasks.env.tools import ToolEnvironment
    from tasks.export.datasets import ExportInputs, export
    from tasks.graph.importers import read_triples
    from tasks.qa.context import path_edges

    kg = read_triples(GRAPHS / "cs.jsonl", "cs").to_graph(snapshot_id="cs-rl-test")
    env = ToolEnvironment.from_graphs([kg], HashingEmbedder(), tools=("entity_matcher", "node_info"))
    qas, gold, trajs = [], {}, []
    for i, (path, question, split) in enumerate(questions):
        edges = path_edges(kg, path)
        qa = QA(qa_id=make_qa_id("cs", kg.snapshot_id, question, path[-1], path), domain="cs",
                snapshot_id=kg.snapshot_id, seed=path[0], hop_class="1-2" if len(path) <= 3 else "3+", path=path,
                path_edges=edges, question=question, answer=path[-1], split=split, run_id="qa-rl", attempt_id=f"a{i}",
                source_chunk_ids=sorted({c for e in edges for c in e.source_chunk_ids}))  # fmt: skip
        qas.append(qa)
        gold[qa.qa_id] = [GoldPath(qa_id=qa.qa_id, rank=0, path=path, triples=[e.triple() for e in edges],
                                   verdict="valid", is_generator_path=True)]  # fmt: skip
        steps, problem = run_template_tools(env, path, "cs")
        assert problem is None, problem
        msgs = template_messages("system", question, qa.answer, steps)
        trajs.append(Trajectory(
            trajectory_id=make_trajectory_id(qa.qa_id, "template", 0), qa_id=qa.qa_id, kind="template", sample=0,
            domain="cs", snapshot_id=kg.snapshot_id, split=split, status="accepted", reject_reason=None,
            question=question, golden_answer=qa.answer, messages=msgs,
            reasoning=[f"I look at {path[min(k, len(path) - 1)]}." for k in range(len(steps))] + ["Done."],
            final_answer=qa.answer, n_rounds=len(steps), end_reason="answer", tools=["entity_matcher", "node_info"],
            run_id="distill-rl", model="fake-model"))  # fmt: skip
    result = export(ExportInputs(qas, gold, trajs), exports_dir, version=version, include=include)
    assert not result.invalid, result.invalid
    return result.path


def fake_model_dir(root: Path) -> Path:
    """A directory that passes ``check_model_dir`` (a config and a weights file); never loaded here."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text('{"model_type": "qwen3"}')
    (root / "model.safetensors").write_bytes(b"\0" * 8)
    return root


@pytest.fixture(scope="module")
def export_view(tmp_path_factory):
    return load_export(build_rl_export(tmp_path_factory.mktemp("exports")))


@pytest.fixture
def model_dir(tmp_path):
    return fake_model_dir(tmp_path / "base-model")


def small(**kw) -> dict:
    """Options that fit the 4-row fixture export on one GPU."""
    return {"train_batch_size": 2, "ppo_mini_batch_size": 2, "rollout_n": 2, "n_gpus_per_node": 1, **kw}


def overrides_of(plan) -> dict[str, str]:
    args = plan.argv[plan.argv.index("--run-dir") + 2 :]
    assert all("=" in a for a in args), args
    return dict(a.split("=", 1) for a in args)


# -- verl ------------------------------------------------------------------------------------------------------------


def test_verl_stage1_grpo_overrides(export_view, model_dir, tmp_path):
    plan = plan_verl(export_view, tmp_path / "run", VerlOptions(model=str(model_dir), **small()))
    o = overrides_of(plan)
    assert plan.trainer == "verl" and plan.env == "verl"
    assert plan.argv[:2] == ["python", str(REPO_ROOT / "training" / "launch" / "verl_ppo.py")]
    assert o["data.train_files"] == str(export_view.data_files("rl")["train"])
    assert o["data.val_files"] == str(export_view.data_files("rl")["validation"])
    assert o["actor_rollout_ref.model.path"] == str(model_dir.resolve())
    assert o["algorithm.adv_estimator"] == "grpo" and "critic.model.path" not in o
    assert o["actor_rollout_ref.rollout.name"] == "vllm"
    assert o["actor_rollout_ref.rollout.multi_turn.enable"] == "true"
    assert o["actor_rollout_ref.rollout.multi_turn.format"] == "hermes"
    assert o["actor_rollout_ref.rollout.agent.default_agent_loop"] == "tool_agent"
    # 7 tool rounds (Omne-R1): 7 tool replies, one more assistant turn for the answer
    assert (o["actor_rollout_ref.rollout.multi_turn.max_user_turns"], o["actor_rollout_ref.rollout.multi_turn.max_assistant_turns"]) == ("7", "8")
    assert o["actor_rollout_ref.rollout.multi_turn.tool_config_path"] == str(tmp_path / "run" / "tool_config.yaml")
    # the reward is imported by module name (verl's pkg:// form) from the copy Ray ships to each node
    assert o["reward.custom_reward_function.path"] == "'pkg://training.verl_reward'"
    assert o["reward.custom_reward_function.name"] == "compute_score"
    assert o["trainer.default_local_dir"] == str(tmp_path / "run" / "checkpoints")
    assert o["trainer.logger"] == "[console,file]"
    assert o["actor_rollout_ref.actor.checkpoint.save_contents"] == "[model,optimizer,extra,hf_model]"
    # stage 1 rewards with Omne-R1's stage-1 reward; the launcher imports hopforge from PYTHONPATH, verl's workers get
    # the reward's name as an env var and hopforge's packages as runtime_env py_modules (no path of this checkout)
    assert plan.env_vars["HOPFORGE_REWARD"] == "omne_stage1" == plan.config["reward"]
    assert plan.env_vars["PYTHONPATH"] == str(REPO_ROOT)
    assert o["+ray_kwargs.ray_init.runtime_env.env_vars.HOPFORGE_REWARD"] == "omne_stage1"
    assert "+ray_kwargs.ray_init.runtime_env.env_vars.PYTHONPATH" not in o
    assert o["+ray_kwargs.ray_init.runtime_env.py_modules"] == "[" + ",".join(
        str(REPO_ROOT / p) for p in ("training", "schemas", "tasks", "gateway")) + "]"
    assert "+ray_kwargs.ray_init.address" not in o  # no cluster named: verl starts a local Ray
    # over-long prompts are refused (measured by the launcher); verl's own filter stays off
    assert o["data.filter_overlong_prompts"] == "false"
    assert plan.argv[2:10] == ["--overlong", "refuse", "--max-tool-failure-rate", "0.05", "--tool-failure-window",
                               "200", "--run-dir", str(tmp_path / "run")]  # fmt: skip
    assert plan.config["tools"] == ["entity_matcher", "node_info"]
    # the command line round-trips through a shell
    assert shlex.split(plan.command_line())[-len(plan.argv):] == plan.argv


def test_verl_stage3_ppo_after_sft(export_view, tmp_path):
    sft = fake_model_dir(tmp_path / "sft-merged")
    opts = VerlOptions.omne_r1("sft", str(sft), **small(rollout_n=1), critic_lr=2e-6)
    plan = plan_verl(export_view, tmp_path / "run", opts)
    o = overrides_of(plan)
    assert opts.algorithm == "ppo" and plan.config["stage"] == "sft"
    assert o["algorithm.adv_estimator"] == "gae"
    assert o["critic.enable"] == "true" and o["critic.model.path"] == str(sft.resolve())
    assert o["critic.optim.lr"] == "2e-06"
    assert plan.env_vars["HOPFORGE_REWARD"] == "omne_post_sft"
    assert any("stage sft: ppo" in n for n in plan.notes)


def test_verl_reward_kwargs_and_named_reward_pass_through(export_view, model_dir, tmp_path):
    opts = VerlOptions(model=str(model_dir), reward="eog_f1_path", reward_kwargs={"path_weight": 0.3, "tag": "a b"},
                       **small())  # fmt: skip
    plan = plan_verl(export_view, tmp_path / "run", opts)
    o = overrides_of(plan)
    # verl 0.9.1 reads reward.custom_reward_function.reward_kwargs and passes them to compute_score as keywords
    assert o["+reward.custom_reward_function.reward_kwargs.path_weight"] == "0.3"
    assert o["+reward.custom_reward_function.reward_kwargs.tag"] == "'a b'"  # quoted: one Hydra string
    assert plan.env_vars["HOPFORGE_REWARD"] == "eog_f1_path"
    assert plan.config["reward_kwargs"] == {"path_weight": 0.3, "tag": "a b"}


def test_verl_tool_config_yaml(export_view, model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HOPFORGE_TOOL_TOKEN", "secret-token-value")  # a server beyond loopback takes a token
    opts = VerlOptions(model=str(model_dir), tool_server_url="http://10.0.0.5:9000/", tool_timeout_s=12, **small())
    plan = plan_verl(export_view, tmp_path / "run", opts)
    written = plan.write()
    config = yaml.safe_load((tmp_path / "run" / "tool_config.yaml").read_text())
    assert tmp_path / "run" / "tool_config.yaml" in written
    assert [t["tool_schema"]["function"]["name"] for t in config["tools"]] == ["entity_matcher", "node_info"]
    for tool in config["tools"]:
        assert tool["class_name"] == "training.launch.verl_tools.HopforgeKGTool"
        assert tool["config"] == {"type": "native", "server_url": "http://10.0.0.5:9000", "timeout_s": 12.0}
        params = tool["tool_schema"]["function"]["parameters"]
        assert params["required"] == ["node_name", "graph_type"]
        # only the keys verl keeps: what the prompt shows is what is written here
        assert set(params) == {"type", "properties", "required"}
        assert all(set(p) <= {"type", "description", "enum"} for p in params["properties"].values())
    assert verl_tool_schema("node_info")["function"]["description"] == config["tools"][1]["tool_schema"]["function"]["description"]
    summary = json.loads((tmp_path / "run" / "plan.json").read_text())
    assert summary["trainer"] == "verl" and summary["env_vars"]["HOPFORGE_REWARD"] == "omne_stage1"
    # the token is read from the environment where it is used, never written
    assert not [f for f in written if "secret-token-value" in f.read_text()]


def test_verl_extra_overrides_replace_generated_ones(export_view, model_dir, tmp_path):
    opts = VerlOptions(model=str(model_dir), extra_overrides=["actor_rollout_ref.rollout.name=sglang",
                                                              "+trainer.something_new=1"], **small())  # fmt: skip
    args = plan_verl(export_view, tmp_path / "run", opts).argv
    assert "actor_rollout_ref.rollout.name=sglang" in args and "actor_rollout_ref.rollout.name=vllm" not in args
    assert args[-1] == "+trainer.something_new=1"


def test_verl_paths_with_spaces_are_quoted(tmp_path):
    exports = tmp_path / "my exports"
    view = load_export(build_rl_export(exports, version="v1"))
    model = fake_model_dir(tmp_path / "a model")
    o = overrides_of(plan_verl(view, tmp_path / "run", VerlOptions(model=str(model), **small())))
    assert o["data.train_files"] == "'" + str(view.data_files("rl")["train"]) + "'"
    assert o["actor_rollout_ref.model.path"] == "'" + str(model.resolve()) + "'"


# -- TRL -------------------------------------------------------------------------------------------------------------


def test_trl_config(export_view, model_dir, tmp_path):
    opts = TRLOptions(model=str(model_dir), stage="sft", reward_kwargs={"path_weight": 0.2}, max_steps=3,
                      tool_server_url="http://127.0.0.1:8765", per_device_train_batch_size=4, num_generations=2)  # fmt: skip
    plan = plan_trl(export_view, tmp_path / "run", opts)
    plan.write()
    config = yaml.safe_load((tmp_path / "run" / "trl_grpo.yaml").read_text())
    assert plan.trainer == "trl" and plan.env == "trl"
    assert plan.argv[0].endswith("trl/bin/python") and plan.config["launcher"] == "python"  # one CPU process
    assert plan.argv[1:] == [str(REPO_ROOT / "training" / "launch" / "trl_grpo.py"), "--config",
                             str(tmp_path / "run" / "trl_grpo.yaml")]  # fmt: skip
    g, h = config["grpo"], config["hopforge"]
    assert g["output_dir"] == str(tmp_path / "run" / "checkpoints") and g["max_steps"] == 3
    assert g["num_generations"] == 2 and g["use_vllm"] is False and "vllm_mode" not in g
    assert g["max_tool_calling_iterations"] == 7 and g["remove_unused_columns"] is False
    assert h["reward"] == "omne_post_sft" and h["reward_kwargs"] == {"path_weight": 0.2}
    assert h["train_file"] == str(export_view.data_files("rl")["train"]) and h["dataset"] == "rl"
    assert h["tool_server_url"] == "http://127.0.0.1:8765"
    assert plan.config["max_steps"] == 3


def test_trl_vllm_and_single_turn(export_view, model_dir, tmp_path):
    opts = TRLOptions(model=str(model_dir), use_vllm="colocate", dataset="messages")
    g = yaml.safe_load(plan_trl(export_view, tmp_path / "r", opts).files["trl_grpo.yaml"])
    assert g["grpo"]["use_vllm"] is True and g["grpo"]["vllm_mode"] == "colocate"
    assert "max_tool_calling_iterations" not in g["grpo"]  # no tool server: one turn
    assert g["hopforge"]["reward"] == "omne_stage1" and g["hopforge"]["dataset"] == "messages"


def _gpus(n: int = 8, memory: float = 80.0):
    from training.cluster import DeviceInfo

    return DeviceInfo("cuda", n, memory, True, "test", {"trl": "1.16.0"})


def test_trl_on_one_node_of_eight_gpus_runs_under_accelerate_launch(export_view, model_dir, tmp_path):
    plan = plan_trl(export_view, tmp_path / "run", TRLOptions(model=str(model_dir)), device=_gpus(8))
    accel = tmp_path / "run" / "accelerate.yaml"
    assert plan.argv[1:5] == ["-m", "accelerate.commands.launch", "--config_file", str(accel)]
    assert plan.argv[5:] == [str(REPO_ROOT / "training" / "launch" / "trl_grpo.py"), "--config",
                             str(tmp_path / "run" / "trl_grpo.yaml")]  # fmt: skip
    a = yaml.safe_load(plan.files["accelerate.yaml"])
    assert (a["distributed_type"], a["num_processes"], a["num_machines"], a["machine_rank"]) == ("MULTI_GPU", 8, 1, 0)
    assert (a["main_process_ip"], a["main_process_port"], a["mixed_precision"], a["gpu_ids"]) == ("127.0.0.1", 29500,
                                                                                                   "bf16", "all")  # fmt: skip
    g = yaml.safe_load(plan.files["trl_grpo.yaml"])
    assert g["grpo"]["bf16"] is True and g["hopforge"]["launch"]["world_size"] == 8
    assert (g["hopforge"]["max_prompt_length"], g["hopforge"]["overlong"]) == (2048, "refuse")
    assert plan.config["versions"] == {"trl": "1.16.0"} and plan.config["launcher"] == "accelerate"


def test_trl_on_two_nodes_with_zero3(export_view, model_dir, tmp_path):
    opts = TRLOptions(model=str(model_dir), deepspeed="zero3", overlong="filter", max_prompt_length=4096,
                      cluster={"nnodes": 2, "node_rank": 1, "master_addr": "10.0.0.1"})  # fmt: skip
    plan = plan_trl(export_view, tmp_path / "run", opts, device=_gpus(8))
    a = yaml.safe_load(plan.files["accelerate.yaml"])
    assert (a["distributed_type"], a["num_processes"], a["num_machines"], a["machine_rank"]) == ("DEEPSPEED", 16, 2, 1)
    assert a["main_process_ip"] == "10.0.0.1"
    assert a["deepspeed_config"]["zero_stage"] == 3 and a["deepspeed_config"]["zero3_init_flag"] is True
    h = yaml.safe_load(plan.files["trl_grpo.yaml"])["hopforge"]
    assert (h["max_prompt_length"], h["overlong"], h["launch"]["deepspeed"]) == (4096, "filter", "zero3")
    assert any("node 1 of 2" in n for n in plan.notes)


def test_trl_single_gpu_process_sees_one_gpu(export_view, model_dir, tmp_path):
    plan = plan_trl(export_view, tmp_path / "run", TRLOptions(model=str(model_dir), cluster={"nproc_per_node": 1}),
                    device=_gpus(8))  # fmt: skip
    a = yaml.safe_load(plan.files["accelerate.yaml"])
    assert (a["distributed_type"], a["num_processes"], a["gpu_ids"]) == ("NO", 1, "0")


def test_trl_cluster_refusals(export_view, model_dir, tmp_path):
    from training.cluster import DeviceInfo

    with pytest.raises(TrainingError, match=r"^cluster.nproc_per_node 8 is more than the 2 GPU\(s\) visible"):
        plan_trl(export_view, tmp_path / "run", TRLOptions(model=str(model_dir), cluster={"nproc_per_node": 8}),
                 device=_gpus(2))  # fmt: skip
    cpu = DeviceInfo("cpu", 0, None, False, "test")
    with pytest.raises(TrainingError, match=r"^cluster.nnodes x cluster.nproc_per_node is 2 processes on a CPU"):
        plan_trl(export_view, tmp_path / "run", TRLOptions(model=str(model_dir), cluster={"nproc_per_node": 2}),
                 device=cpu)  # fmt: skip
    with pytest.raises(TrainingError, match=r"^deepspeed=zero2 shards the model over GPUs, but this plan's device is a CPU"):
        plan_trl(export_view, tmp_path / "run", TRLOptions(model=str(model_dir), deepspeed="zero2"), device=cpu)
    # every node's ranks call the tools: a loopback server is refused on several nodes, as verl's plan refuses it
    two_nodes = {"nnodes": 2, "node_rank": 0, "master_addr": "10.0.0.1"}
    for url in ("http://127.0.0.1:8765", "http://localhost:9000"):
        with pytest.raises(TrainingError, match=rf"^tool_server_url {url} is a loopback address, which rollout "
                                                r"workers on other nodes cannot reach: .* \(cluster.nnodes 2\)$"):
            plan_trl(export_view, tmp_path / "run", TRLOptions(model=str(model_dir), tool_server_url=url,
                                                               cluster=two_nodes), device=_gpus(8))  # fmt: skip
    reachable = TRLOptions(model=str(model_dir), tool_server_url="http://10.0.0.1:8765", cluster=two_nodes)
    h = plan_trl(export_view, tmp_path / "run", reachable, device=_gpus(8)).config["hopforge"]
    assert h["tool_server_url"] == "http://10.0.0.1:8765"
    assert (h["max_tool_failure_rate"], h["tool_failure_window"]) == (0.05, 200)  # verl's defaults
    one_node = TRLOptions(model=str(model_dir), tool_server_url="http://127.0.0.1:8765")
    assert plan_trl(export_view, tmp_path / "run", one_node, device=_gpus(8)).config["hopforge"]["tool_server_url"] \
        == "http://127.0.0.1:8765"
    big = tmp_path / "big"
    big.mkdir()
    (big / "config.json").write_text(json.dumps({"hidden_size": 4096, "num_hidden_layers": 36, "intermediate_size":
                                                 12288, "vocab_size": 151936, "num_attention_heads": 32,
                                                 "num_key_value_heads": 8, "head_dim": 128}))  # fmt: skip
    (big / "model.safetensors").write_bytes(b"\0" * 8)
    # vLLM colocated takes 30% of each GPU: 8.2B with ZeRO-2 needs 28.6 GiB of the 45% of 80 GiB left (36 GiB)...
    fits = plan_trl(export_view, tmp_path / "a", TRLOptions(model=str(big), deepspeed="zero2", use_vllm="colocate"),
                    device=_gpus(8))  # fmt: skip
    assert fits.config["memory"]["budget_gib"] == 36.0
    # ... but not with a KL reference model beside it (2 more bytes a parameter on every GPU).
    with pytest.raises(TrainingError, match=r"^deepspeed=zero2 does not fit: full fine-tuning of 8.2B parameters"):
        plan_trl(export_view, tmp_path / "b", TRLOptions(model=str(big), deepspeed="zero2", use_vllm="colocate",
                                                         beta=0.04), device=_gpus(8))  # fmt: skip


# -- bad input -------------------------------------------------------------------------------------------------------


def test_export_missing():
    with pytest.raises(TrainingError, match=r"is not a hopforge export \(no manifest.json\): run `hopforge export`"):
        load_export(Path("/nonexistent/export"))


def test_export_without_rl_rows(tmp_path, model_dir):
    view = load_export(build_rl_export(tmp_path / "ex", include=("qa", "sft")))
    with pytest.raises(TrainingError, match=r"has no rl train rows: export again with the rl config"):
        plan_verl(view, tmp_path / "run", VerlOptions(model=str(model_dir), **small()))
    with pytest.raises(TrainingError, match=r"has no rl train rows: export again .* or choose dataset=messages"):
        plan_trl(view, tmp_path / "run", TRLOptions(model=str(model_dir)))
    assert not (tmp_path / "run").exists()


def test_model_path_not_a_model(export_view, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TrainingError, match=r"model path .*empty is not a model directory: it has no config.json"):
        plan_verl(export_view, tmp_path / "run", VerlOptions(model=str(empty), **small()))
    with pytest.raises(TrainingError, match=r"SFT checkpoint path .*missing does not exist"):
        plan_trl(export_view, tmp_path / "run", TRLOptions(model=str(tmp_path / "missing"), stage="sft"))
    adapter = tmp_path / "lora"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    with pytest.raises(TrainingError, match=r"is a LoRA adapter; RL needs full weights .* merge it"):
        plan_verl(export_view, tmp_path / "run", VerlOptions(model=str(adapter), stage="sft", **small()))
    assert not (tmp_path / "run").exists()


def test_unknown_reward_name():
    with pytest.raises(TrainingError, match=r"reward: Value error, unknown reward 'f1_magic'; choose one of \["):
        options_from(VerlOptions, {"model": "Qwen/Qwen3-8B", "reward": "f1_magic"})
    with pytest.raises(TrainingError, match=r"unknown reward 'f1_magic'"):
        options_from(TRLOptions, {"model": "Qwen/Qwen3-8B", "reward": "f1_magic"})


@pytest.mark.parametrize(("values", "message"), [
    ({"algorithm": "grpo", "rollout_n": 1}, "GRPO compares responses within a group: rollout_n must be >= 2"),
    ({"algorithm": "a2c"}, r"algorithm: Input should be 'grpo' or 'ppo'"),
    ({"ppo_mini_batch_size": 128, "train_batch_size": 64}, r"ppo_mini_batch_size \(128\) must not exceed"),
    ({"train_batch_size": 6, "ppo_mini_batch_size": 4}, r"must be a multiple of ppo_mini_batch_size"),
    ({"train_batch_size": 3, "ppo_mini_batch_size": 3, "rollout_n": 3}, r"must be divisible by the 8 GPUs"),
    ({"lr": 0}, r"lr: Input should be greater than 0"),
    ({"tool_server_url": "localhost:8765"}, r"tool_server_url must be an http\(s\) URL"),
    ({"extra_overrides": ["not an override"]}, r"is not a Hydra override"),
    ({"critic_model": "m"}, r"critic_model is only used with algorithm='ppo'"),
    ({"reward_kwargs": {"bad-key": 1}}, r"is not a Python keyword argument name"),
    ({"rollout_N": 4}, r"rollout_N: Extra inputs are not permitted"),
    ({"stage": "rlhf"}, r"stage: Input should be 'base' or 'sft'"),
])  # fmt: skip
def test_bad_verl_options(values, message):
    with pytest.raises(TrainingError, match=message):
        options_from(VerlOptions, {"model": "Qwen/Qwen3-8B", **values})


@pytest.mark.parametrize(("values", "message"), [
    ({"num_generations": 3, "per_device_train_batch_size": 4}, r"must be a multiple of num_generations \(3\)"),
    ({"use_vllm": "server"}, r"use_vllm='server' needs vllm_server_base_url"),
    ({"use_vllm": "yes"}, r"use_vllm: Input should be 'auto', 'off', 'colocate' or 'server'"),
    ({"extra_args": {"output_dir": "/tmp/x"}}, r"extra_args may not set \['output_dir'\]"),
    ({"extra_args": {"bf16": True}}, r"extra_args may not set \['bf16'\]"),
    ({"lora_rank": 1024}, r"lora_rank: Value error, lora_rank 1024 is above 512, the largest rank vLLM serves"),
    ({"deepspeed": "stage3"}, r"deepspeed: Input should be 'none', 'zero2' or 'zero3'"),
    ({"overlong": "truncate"}, r"overlong: Input should be 'refuse' or 'filter'"),
    ({"max_tool_failure_rate": 0}, r"max_tool_failure_rate: Input should be greater than 0"),
    ({"tool_failure_window": 5}, r"tool_failure_window: Input should be greater than or equal to 10"),
    ({"cluster": {"nnodes": 2}}, r"cluster.nnodes 2 needs cluster.master_addr"),
    ({"cluster": {"nnodes": 3, "node_rank": 5, "master_addr": "10.0.0.1"}}, r"cluster.node_rank 5 must be below "
                                                                            r"cluster.nnodes 3"),
])  # fmt: skip
def test_bad_trl_options(values, message):
    with pytest.raises(TrainingError, match=message):
        options_from(TRLOptions, {"model": "Qwen/Qwen3-8B", **values})


def test_batch_larger_than_export(export_view, model_dir, tmp_path):
    opts = VerlOptions(model=str(model_dir), **small(train_batch_size=8, ppo_mini_batch_size=8))
    with pytest.raises(TrainingError, match=r"train_batch_size 8 is larger than the export's 4 rl train rows"):
        plan_verl(export_view, tmp_path / "run", opts)


def test_core_imports_no_trainer():
    import subprocess

    code = ("import sys, training.rl_common, training.rl_trl, training.rl_verl; "
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'verl', 'trl', 'vllm', 'transformers')]; print(bad)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    assert done.stdout.strip() == "[]"


@contextlib.contextmanager
def _serving(handler: type) -> Iterator[str]:
    """``handler`` (a ``BaseHTTPRequestHandler``) served on a free loopback port for the block; yields its URL."""
    import http.server
    import threading

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def _reply(handler: Any, status: int, body: dict) -> None:
    """Answer ``handler``'s request with ``body`` as JSON."""
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def test_trl_tool_client_sends_the_shared_token(monkeypatch):
    """TRL's blocking tool client sends ``$HOPFORGE_TOOL_TOKEN`` on /health and on tool calls, as the verl tool class
    does: a tool server beyond loopback refuses requests without it."""
    import http.server

    trl_grpo = _trl_launcher()
    seen: list[tuple[str, str | None]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self, body: dict) -> None:
            seen.append((self.path, self.headers.get("Authorization")))
            if self.headers.get("Authorization") != "Bearer s3cret-token":
                self.send_response(401)
                self.end_headers()
                return
            _reply(self, 200, body)

        def do_GET(self):  # noqa: N802
            self._answer({"status": "ok"})

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self._answer({"rendered_content": "Ada Lovelace"})

        def log_message(self, *args):
            pass

    with _serving(Handler) as url:
        monkeypatch.setenv("HOPFORGE_TOOL_TOKEN", "s3cret-token")
        client = trl_grpo.ToolServer(url, 5.0)
        assert client.health() == {"status": "ok"}
        assert client.call("node_info", {"entity": "Ada"}) == "Ada Lovelace"
        assert seen == [("/health", "Bearer s3cret-token"), ("/tools/node_info", "Bearer s3cret-token")]
        monkeypatch.delenv("HOPFORGE_TOOL_TOKEN")
        with pytest.raises(SystemExit, match="does not answer /health"):
            trl_grpo.ToolServer(url, 5.0).health()  # no token: refused by the server


def _trl_launcher():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "training" / "launch"))
    import trl_grpo

    return trl_grpo


def test_trl_tool_calls_to_a_down_server_stop_the_run_past_the_bound():
    """Nothing listens at the tool server's address: every call fails. Below the bound a failure is raised as
    ``ToolServerError`` (TRL hands its text to the model and counts it); the call that takes the window past
    ``max_tool_failure_rate`` raises the launcher's ``LaunchError``, a ``SystemExit`` that TRL's tool loop (which
    catches ``Exception``) lets through, so the run stops."""
    import socket

    trl_grpo = _trl_launcher()
    with socket.socket() as unused:  # a free loopback port nobody listens on: connection refused
        unused.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{unused.getsockname()[1]}"
    client = trl_grpo.ToolServer(url, 2.0, max_failure_rate=0.3, failure_window=10)
    for _ in range(3):  # 3 of 10 is not more than 0.3 x 10
        with pytest.raises(trl_grpo.ToolServerError, match=rf"^tool server {url} did not answer node_info"):
            client.call("node_info", {"entity": "Alan Turing", "graph_type": "cs"})
    with pytest.raises(trl_grpo.LaunchError) as stopped:
        client.call("node_info", {"entity": "Alan Turing", "graph_type": "cs"})
    assert not isinstance(stopped.value, Exception)
    assert re.fullmatch(rf"tool calls are failing: 4 of the last 4 failed, more than max_tool_failure_rate 0.3 of "
                        rf"tool_failure_window 10 \(first error: tool server {url} did not answer node_info .*\); "
                        r"the run stopped instead of training on error replies", stopped.value.message)  # fmt: skip
    assert (stopped.value.tool["calls"], stopped.value.tool["failures"], stopped.value.tool["tripped"]) == (4, 4, True)


def test_trl_tool_failures_below_the_bound_are_counted_and_the_run_goes_on():
    """A server that fails every fifth call (5xx), refuses a bad call (422, text for the model: not a failure) and
    answers the rest: 20 calls stay under 0.3 of a window of 10 and are all counted."""
    import http.server

    trl_grpo = _trl_launcher()
    posts = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            posts.append(self.path)
            status, body = 200, {"rendered_content": "Entity: Alan Turing"}
            if len(posts) % 5 == 0:
                status, body = 503, {"detail": "overloaded"}
            elif len(posts) == 2:
                status, body = 422, {"detail": "depth: Input should be less than or equal to 3"}
            _reply(self, status, body)

        def log_message(self, *args):
            pass

    with _serving(Handler) as url:
        client = trl_grpo.ToolServer(url, 5.0, max_failure_rate=0.3, failure_window=10)
        replies, failed = [], 0
        for _ in range(20):
            try:
                replies.append(client.call("node_info", {"entity": "Alan Turing"}))
            except trl_grpo.ToolServerError as exc:
                assert str(exc) == f"tool server {url} failed on node_info: HTTP 503"
                failed += 1
    assert failed == 4 and len(replies) == 16
    assert replies[1] == "Error: depth: Input should be less than or equal to 3"
    s = client.failures.snapshot()
    assert (s["calls"], s["failures"], s["window_failures"], s["tripped"]) == (20, 4, 2, False)
