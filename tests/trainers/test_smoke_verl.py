"""verl smoke (``make train-smoke``): verl's own code accepts and runs what ``training.rl_verl.plan_verl`` writes.

On the tiny local model and a fixture export, in the verl environment, no GPU:

- verl composes its Hydra config from the generated overrides and its ``validate_config`` accepts them (GRPO from
  the base model, PPO after SFT), its tool registry builds hopforge's tool class, its loader binds the reward with
  the reward kwargs; a bad override is refused with verl's message;
- verl's ``RLHFDataset`` loads every rl row, prompts unchanged, within ``max_prompt_length`` with the tools;
- verl's reward manager scores a batch through ``compute_score`` (scores in range, a right answer above a wrong one);
- the tool class against a real ``hopforge serve-tools`` on loopback (the row's graph wins, refusals reach the
  model as text, a server that is down is an error), and the launcher's health check;
- verl's tool agent loop end to end with a scripted rollout server standing in for vLLM: a tool call, the
  served reply (masked from the loss), the answer, scored by ``compute_score``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.trainers.conftest import run_python
from training.plan import REPO_ROOT, TrainingError
from training.rl_common import check_plan
from training.rl_verl import VerlOptions, plan_verl

pytestmark = pytest.mark.train_smoke

# Runs inside the verl environment: argv = <repo root> <run dir> <check> <hydra overrides...>.
VERL_SIDE = r'''
"""verl-side smoke checks, run in the verl environment.

argv: <repo root> <run dir> <check> <hydra overrides...>; prints one JSON report line.
check: dataset | filter | reward | tools | agent_loop
"""
import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1] + "/training/launch")
import _stubs  # noqa: E402,F401
import verl_ppo  # noqa: E402

check, overrides = sys.argv[3], sys.argv[4:]
config = verl_ppo.compose(overrides)

import pyarrow.parquet as pq  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402
from verl.tools.tool_registry import initialize_tools_from_config  # noqa: E402

tok = AutoTokenizer.from_pretrained(config.actor_rollout_ref.model.path)
rows = pq.read_table(config.data.train_files).to_pylist()
tools = initialize_tools_from_config(config.actor_rollout_ref.rollout.multi_turn.tool_config_path)
schemas = [t.tool_schema.model_dump(exclude_unset=True, exclude_none=True) for t in tools]
report = {"check": check}


def ids_of(text):
    return tok.encode(text, add_special_tokens=False)


if check == "dataset":
    from verl.utils.dataset.rl_dataset import RLHFDataset

    ds = RLHFDataset(data_files=config.data.train_files, tokenizer=tok, config=config.data)
    items = [ds[i] for i in range(len(ds))]
    report.update(
        rows=len(rows), items=len(ds),
        prompt_tokens=[len(tok.apply_chat_template(list(it["raw_prompt"]), tools=schemas, add_generation_prompt=True,
                                                   tokenize=True, return_dict=True)["input_ids"]) for it in items],
        max_prompt_length=int(config.data.max_prompt_length),
        prompts_equal=[[dict(m) for m in it["raw_prompt"]] == [{"role": m["role"], "content": m["content"]} for m in r["prompt"]]
                       for it, r in zip(items, rows)],
        tools_kwargs_equal=[dict(it["tools_kwargs"]) == r["extra_info"]["tools_kwargs"] for it, r in zip(items, rows)],
        agent_names=[it.get("agent_name") for it in items],
    )

elif check == "filter":
    # the launcher's count of over-long prompts against what verl's own filter leaves out
    from verl.utils.dataset.rl_dataset import RLHFDataset

    measured = verl_ppo.measure_rl_prompts(config)
    ds = RLHFDataset(data_files=config.data.train_files, tokenizer=tok, config=config.data)
    report.update(rows=len(rows), kept=len(ds), over=measured["splits"]["train"]["over"],
                  longest=measured["splits"]["train"]["longest"], limit=int(config.data.max_prompt_length),
                  filter=bool(config.data.filter_overlong_prompts))

elif check == "reward":
    import numpy as np
    import torch
    from verl import DataProto
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
    from verl.trainer.ppo.reward import get_custom_reward_fn

    answers = [json.loads(r["reward_model"]["ground_truth"])["answers"][0] for r in rows]
    texts = [f"<think>\nThe graph says so.\n</think>\n\n<answer>{a}</answer>" for a in answers]
    texts[-1] = "I do not know."
    prompts = [ids_of("question") for _ in rows]
    responses = [ids_of(t) + [tok.convert_tokens_to_ids("<|im_end|>")] for t in texts]
    width_p, width_r = max(map(len, prompts)), max(map(len, responses))
    pad = tok.pad_token_id
    batch = {
        "prompts": torch.tensor([[pad] * (width_p - len(p)) + p for p in prompts]),
        "responses": torch.tensor([r + [pad] * (width_r - len(r)) for r in responses]),
        "attention_mask": torch.tensor([[0] * (width_p - len(p)) + [1] * len(p) + [1] * len(r) + [0] * (width_r - len(r))
                                        for p, r in zip(prompts, responses)]),
    }
    non_tensor = {"data_source": np.array([r["data_source"] for r in rows], dtype=object),
                  "reward_model": np.array([r["reward_model"] for r in rows], dtype=object),
                  "extra_info": np.array([dict(r["extra_info"]) for r in rows], dtype=object)}
    data = DataProto.from_dict(tensors=batch, non_tensors=non_tensor)
    manager = NaiveRewardManager(config, tok, get_custom_reward_fn(config))

    async def score_all():
        return [await manager.run_single(data[i : i + 1]) for i in range(len(data))]

    results = manager.loop.run_until_complete(score_all())  # the manager keeps the loop it was built on
    report.update(scores=[r["reward_score"] for r in results], texts=texts,
                  extra_keys=sorted(results[0]["reward_extra_info"]))

elif check == "tools":
    by_name = {t.name: t for t in tools}

    async def run():
        node_info, matcher = by_name["node_info"], by_name["entity_matcher"]
        out = {}
        iid, _ = await node_info.create(create_kwargs={"graph_type": "cs"})
        resp, reward, metrics = await node_info.execute(iid, {"node_name": "Alan Turing", "graph_type": "elsewhere"})
        out["node_info"] = {"text": resp.text, "reward": reward, "metrics": metrics}
        resp, _, metrics = await node_info.execute(iid, {"node_name": "Nobody At All"})
        out["unknown_entity"] = {"text": resp.text, "metrics": metrics}
        resp, _, metrics = await node_info.execute(iid, {"node_name": "Alan Turing", "depth": 3})
        out["bad_arguments"] = {"text": resp.text, "metrics": metrics}
        await node_info.release(iid)
        iid, _ = await matcher.create(create_kwargs={"graph_type": "cs"})
        resp, _, metrics = await matcher.execute(iid, {"node_name": "Turing"})
        out["entity_matcher"] = {"text": resp.text, "metrics": metrics}
        await matcher.release(iid)
        down = type(node_info)({"type": "native", "server_url": "http://127.0.0.1:9", "timeout_s": 2, "retries": 0},
                               node_info.tool_schema)
        iid, _ = await down.create(create_kwargs={"graph_type": "cs"})
        try:
            await down.execute(iid, {"node_name": "Alan Turing"})
            out["down"] = "no error"
        except Exception as exc:  # the report names the type; the test asserts it
            out["down"] = f"{type(exc).__name__}: {exc}"
        out["counts"] = {"node_info": [node_info.calls, node_info.failures], "down": [down.calls, down.failures]}
        for t in (node_info, matcher, down):
            await t.aclose()
        return out

    report.update(asyncio.run(run()))
    try:
        verl_ppo.check_tool_server(config.actor_rollout_ref.rollout.multi_turn.tool_config_path, config.data.train_files)
        report["health"] = "ok"
    except verl_ppo.LaunchError as exc:
        report["health"] = str(exc)

elif check == "agent_loop":
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
    from verl.utils.dataset.rl_dataset import RLHFDataset
    from verl.workers.rollout.replica import TokenOutput

    row = rows[0]
    answer = json.loads(row["reward_model"]["ground_truth"])["answers"][0]
    call = {"name": "node_info", "arguments": {"node_name": "Alan Turing", "graph_type": "cs"}}
    script = [f"<think>\nI look up Alan Turing.\n</think>\n\n<tool_call>\n{json.dumps(call)}\n</tool_call><|im_end|>",
              f"<think>\nHe studied there.\n</think>\n\n<answer>{answer}</answer><|im_end|>"]

    class ScriptedServer:
        """Stands in for vLLM: answers each generate call with the next scripted assistant turn."""

        def __init__(self):
            self.prompts = []

        async def generate(self, request_id, prompt_ids, sampling_params, **kwargs):
            self.prompts.append(list(prompt_ids))
            return TokenOutput(token_ids=ids_of(script[len(self.prompts) - 1]), log_probs=None)

    server = ScriptedServer()
    loop = ToolAgentLoop(trainer_config=DictConfigWrap(config), server_manager=server, tokenizer=tok, processor=None,
                         dataset_cls=RLHFDataset, data_config=DictConfigWrap(config.data), tools=ToolListWrap(tools))
    ds = RLHFDataset(data_files=config.data.train_files, tokenizer=tok, config=config.data)
    item = ds[0]
    out = loop.loop.run_until_complete(loop.run(sampling_params={}, raw_prompt=list(item["raw_prompt"]), tools_kwargs=item["tools_kwargs"],
                               extra_info=dict(item.get("extra_info", {}))))  # the loop verl bound at init
    response = tok.decode(out.response_ids, skip_special_tokens=True)
    sys.path.insert(0, sys.argv[1])
    from training.verl_reward import compute_score

    mask = list(out.response_mask)
    report.update(num_turns=out.num_turns, generate_calls=len(server.prompts), response=response,
                  masked_tokens=mask.count(0), model_tokens=mask.count(1),
                  masked_text=tok.decode([t for t, m in zip(out.response_ids, mask) if m == 0], skip_special_tokens=True),
                  first_prompt=tok.decode(server.prompts[0]),
                  score=compute_score(row["data_source"], response, row["reward_model"]["ground_truth"],
                                      dict(row["extra_info"])))

elif check == "model":
    # the actor as verl's FSDP engine loads it (workers/engine/fsdp/transformer_impl.py): HFModelConfig from the
    # composed config, then the auto class's from_pretrained with that hf_config
    import torch
    from omegaconf import OmegaConf
    from verl.utils.config import omega_conf_to_dataclass
    from verl.utils.model import get_hf_auto_model_class

    def load(model_config):
        mc = omega_conf_to_dataclass(model_config)
        auto = get_hf_auto_model_class(hf_config=mc.hf_config)
        return auto.from_pretrained(pretrained_model_name_or_path=mc.local_path, torch_dtype=torch.float32,
                                    config=mc.hf_config)

    model = load(config.actor_rollout_ref.model)
    a = ids_of("The first sequence here.")
    b = ids_of("A second, longer sequence of tokens follows the first one.")
    # verl's remove-padding forward (FSDPEngine.forward_step): the micro-batch packed in one row, no attention mask,
    # positions restarting at each sequence, use_cache=False (with a cache transformers would not see the packing)
    packed = model(input_ids=torch.tensor([a + b]), attention_mask=None, use_cache=False,
                   position_ids=torch.tensor([list(range(len(a))) + list(range(len(b)))])).logits[0]
    with torch.no_grad():
        alone = torch.cat([model(input_ids=torch.tensor([x])).logits[0] for x in (a, b)])
    loss = torch.nn.functional.cross_entropy(packed[:-1], torch.tensor(a + b)[1:])
    loss.backward()
    report.update(attn_implementation=model.config._attn_implementation,
                  override=OmegaConf.select(config, "actor_rollout_ref.model.override_config.attn_implementation"),
                  critic_override=OmegaConf.select(config, "critic.model.override_config.attn_implementation"),
                  packed_max_abs_diff=float((packed.detach() - alone).abs().max()), loss=loss.item(),
                  grads_finite=all(bool(torch.isfinite(p.grad).all()) for p in model.parameters() if p.grad is not None))
    # what verl 0.9.1 does without the plan's override: flash_attention_2, refused without flash-attn
    default = OmegaConf.to_container(config.actor_rollout_ref.model, resolve=True)
    default["override_config"] = {}
    try:
        load(OmegaConf.create(default))
        report["default_error"] = None
    except ImportError as exc:
        report["default_error"] = f"ImportError: {exc}"

print(json.dumps(report, default=str))
'''


def _opts(model: Path, **kw) -> VerlOptions:
    return VerlOptions(model=str(model), train_batch_size=2, ppo_mini_batch_size=2, rollout_n=2, n_gpus_per_node=1,
                       max_prompt_length=1024, max_response_length=2048, **kw)  # fmt: skip


def run_verl_side(trainer_python, plan, check: str, tmp_path: Path) -> dict:
    plan.write()
    script = tmp_path / "verl_side.py"
    script.write_text(VERL_SIDE, encoding="utf-8")
    overrides = plan.argv[plan.argv.index("--run-dir") + 2 :]
    done = run_python(trainer_python("verl"), [script, REPO_ROOT, plan.run_dir, check, *overrides], timeout=300,
                      extra_env=plan.env_vars)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith('{"check"')]
    assert lines, done.stdout[-2000:]
    return json.loads(lines[-1])


def test_verl_accepts_both_schedules(trainer_python, tiny_model_dir, rl_export, tmp_path):
    trainer_python("verl")
    stage1 = check_plan(plan_verl(rl_export, tmp_path / "stage1",
                                  _opts(tiny_model_dir, reward="eog_f1_path", reward_kwargs={"path_weight": 0.3})))
    assert stage1["adv_estimator"] == "grpo" and stage1["use_critic"] is False
    assert stage1["rollout"]["name"] == "vllm" and stage1["agent_loop"] == "tool_agent"
    assert stage1["multi_turn"]["enable"] is True and stage1["multi_turn"]["max_user_turns"] == 7
    assert [t["class"] for t in stage1["tools"]] == ["training.launch.verl_tools.HopforgeKGTool"] * 2
    assert [t["name"] for t in stage1["tools"]] == ["entity_matcher", "node_info"]
    # verl kept every key of the written schemas (none dropped)
    written = (tmp_path / "stage1" / "tool_config.yaml").read_text()
    assert [t["tool_schema"] for t in yaml.safe_load(written)["tools"]] == [t["schema"] for t in stage1["tools"]]
    # the reward kwargs reach compute_score through verl's own loader
    assert stage1["reward_fn_kwargs"] == {"path_weight": 0.3}
    assert stage1["ray_env_vars"]["HOPFORGE_REWARD"] == "eog_f1_path"
    # the run records what it ran with: the plan the verl environment's packages, the launcher its installed ones
    # (the CPU flavour has no vLLM; the GPU one records the rollouts' vLLM beside verl)
    plan = plan_verl(rl_export, tmp_path / "stage1", _opts(tiny_model_dir))
    assert plan.config["versions"]["verl"] == stage1["versions"]["verl"] == "0.9.1"
    assert set(stage1["versions"]) <= {"verl", "vllm", "torch", "transformers"} and "torch" in stage1["versions"]
    assert plan.config["versions"].get("vllm") == stage1["versions"].get("vllm")

    stage3 = check_plan(plan_verl(rl_export, tmp_path / "stage3",
                                  VerlOptions.omne_r1("sft", str(tiny_model_dir), train_batch_size=2,
                                                      ppo_mini_batch_size=2, rollout_n=1, n_gpus_per_node=1)))  # fmt: skip
    assert stage3["adv_estimator"] == "gae" and stage3["use_critic"] is True
    assert stage3["ray_env_vars"]["HOPFORGE_REWARD"] == "omne_post_sft"


def test_verl_loads_the_planned_actor_with_the_planned_attention(trainer_python, tiny_model_dir, rl_export, tmp_path):
    """Item 4 of issue 35: verl 0.9.1 loads actor, reference and critic with flash_attention_2 unless
    override_config says otherwise, and the CPU verl environment (like the GPU one) has no flash-attn. The plan
    probes the environment and writes sdpa; verl's own HFModelConfig and auto class then load the tiny model with
    it, and the packed (remove-padding) forward verl's actor runs equals the sequences run one by one."""
    trainer_python("verl")
    plan = plan_verl(rl_export, tmp_path / "run", _opts(tiny_model_dir))
    assert plan.config["attn_implementation"] == {
        "value": "sdpa", "source": "auto: flash-attn does not import in the verl environment (ModuleNotFoundError: "
                                   "No module named 'flash_attn')"}  # fmt: skip
    assert "+actor_rollout_ref.model.override_config.attn_implementation=sdpa" in plan.argv
    r = run_verl_side(trainer_python, plan, "model", tmp_path)
    assert r["override"] == r["attn_implementation"] == "sdpa" and r["critic_override"] is None
    assert r["packed_max_abs_diff"] < 1e-4 and r["grads_finite"] and r["loss"] > 0
    # without the override verl's default is refused by transformers: the failure the plan avoids
    assert r["default_error"] and "FlashAttention2" in r["default_error"]

    ppo = plan_verl(rl_export, tmp_path / "ppo", VerlOptions.omne_r1("sft", str(tiny_model_dir), train_batch_size=2,
                                                                       ppo_mini_batch_size=2, rollout_n=1,
                                                                       n_gpus_per_node=1))  # fmt: skip
    assert run_verl_side(trainer_python, ppo, "model", tmp_path)["critic_override"] == "sdpa"


def test_verl_refuses_a_bad_override(trainer_python, tiny_model_dir, rl_export, tmp_path):
    trainer_python("verl")
    bad = _opts(tiny_model_dir, extra_overrides=["actor_rollout_ref.rollout.log_prob_micro_batch_size=2"])
    with pytest.raises(TrainingError, match=r"refused the plan[\s\S]*You have set both"):
        check_plan(plan_verl(rl_export, tmp_path / "bad", bad))


def test_verl_dataset_loads_every_row(trainer_python, tiny_model_dir, rl_export, tmp_path):
    plan = plan_verl(rl_export, tmp_path / "run", _opts(tiny_model_dir))
    r = run_verl_side(trainer_python, plan, "dataset", tmp_path)
    assert r["items"] == r["rows"] == rl_export.rows("rl")["train"]
    assert all(r["prompts_equal"]) and all(r["tools_kwargs_equal"])
    assert set(r["agent_names"]) == {"tool_agent"}
    # with the tool schemas rendered in, every prompt fits (the launcher measures them; verl would cut silently)
    assert 0 < max(r["prompt_tokens"]) <= r["max_prompt_length"]


def test_verl_filter_drops_exactly_the_prompts_the_launcher_counts(trainer_python, tiny_model_dir, rl_export,
                                                                     tmp_path):  # fmt: skip
    plan = plan_verl(rl_export, tmp_path / "full", _opts(tiny_model_dir))
    longest = run_verl_side(trainer_python, plan, "filter", tmp_path)["longest"]
    plan = plan_verl(rl_export, tmp_path / "run", _opts(tiny_model_dir, overlong="filter").model_copy(
        update={"max_prompt_length": longest - 1}))  # fmt: skip
    r = run_verl_side(trainer_python, plan, "filter", tmp_path)
    assert r["filter"] is True and r["limit"] == longest - 1
    assert r["over"] >= 1 and r["kept"] == r["rows"] - r["over"]


def test_verl_check_refuses_overlong_prompts_with_counts(trainer_python, tiny_model_dir, rl_export, tmp_path):
    trainer_python("verl")
    plan = plan_verl(rl_export, tmp_path / "run", _opts(tiny_model_dir).model_copy(update={"max_prompt_length": 64}))
    with pytest.raises(TrainingError, match=r"refused the plan in \S+: (\d+) of \1 prompts are longer than "
                                            r"max_prompt_length 64 tokens \(longest \d+, qa-\w+\): raise "
                                            r"max_prompt_length, or set overlong=filter to leave them out "
                                            r"\[train \d+, validation \d+\]$"):
        check_plan(plan)


@pytest.mark.parametrize("nnodes", [1, 2])
@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
def test_verl_accepts_one_and_two_nodes_of_eight_gpus(algorithm, nnodes, trainer_python, tiny_model_dir, rl_export,
                                                       tmp_path):  # fmt: skip
    import contextlib
    import socket

    trainer_python("verl")
    shared = tmp_path / "shared"
    shared.mkdir()
    # 4 prompts x 4 responses: divisible by the 8 or 16 GPUs
    opts = {"model": str(tiny_model_dir), "algorithm": algorithm, "nnodes": nnodes, "n_gpus_per_node": 8,
            "train_batch_size": 4, "ppo_mini_batch_size": 4, "rollout_n": 4, "max_prompt_length": 1024,
            "max_response_length": 2048}  # fmt: skip
    with contextlib.ExitStack() as stack:
        address = None
        if nnodes > 1:  # where the cluster's head would listen: the planner asks that it answers
            head = stack.enter_context(socket.socket())
            head.bind(("127.0.0.1", 0))
            head.listen()
            address = f"127.0.0.1:{head.getsockname()[1]}"
            opts.update(ray_address=address, shared_dir=str(shared))
        report = check_plan(plan_verl(rl_export, tmp_path / "run", VerlOptions(**opts)))
    assert (report["trainer"]["nnodes"], report["trainer"]["n_gpus_per_node"], report["ray_address"]) == (
        nnodes, 8, address)  # fmt: skip
    assert report["adv_estimator"] == ("grpo" if algorithm == "grpo" else "gae")
    assert report["use_critic"] is (algorithm == "ppo")
    checkpoints = (shared / "run" if nnodes > 1 else tmp_path / "run") / "checkpoints"
    assert report["trainer"]["default_local_dir"] == str(checkpoints)


def test_verl_reward_manager_scores_a_batch(trainer_python, tiny_model_dir, rl_export, tmp_path):
    plan = plan_verl(rl_export, tmp_path / "run", _opts(tiny_model_dir))
    r = run_verl_side(trainer_python, plan, "reward", tmp_path)
    scores = r["scores"]
    assert len(scores) == 4 and all(0.0 <= s <= 1.0 for s in scores)
    # the last response has no answer: below every right answer
    assert scores[-1] < min(scores[:-1])
    assert {"score", "em", "format_ok"} <= set(r["extra_keys"])


def test_verl_tool_class_against_served_tools(trainer_python, tiny_model_dir, rl_export, served_tools, tmp_path):
    plan = plan_verl(rl_export, tmp_path / "run", _opts(tiny_model_dir, tool_server_url=served_tools))
    r = run_verl_side(trainer_python, plan, "tools", tmp_path)
    assert r["node_info"]["text"].startswith("Entity: Alan Turing")
    assert "King's College, Cambridge" in r["node_info"]["text"]
    assert r["node_info"]["metrics"]["graph_type_replaced"] == 1 and r["node_info"]["metrics"]["ok"] is True
    assert r["unknown_entity"]["metrics"]["error_kind"] == "unknown_entity"
    assert "Nobody At All" in r["unknown_entity"]["text"]
    assert r["bad_arguments"]["metrics"]["error_kind"] == "bad_arguments" and "depth" in r["bad_arguments"]["text"]
    assert "Turing" in r["entity_matcher"]["text"]
    assert r["down"].startswith("ToolServerError: tool server http://127.0.0.1:9/tools/node_info failed")
    # refusals the model reads are calls that worked; only the outage counts as a failure
    assert r["counts"] == {"node_info": [3, 0], "down": [1, 1]}
    assert r["health"] == "ok"


def test_verl_tool_agent_loop_with_scripted_rollouts(trainer_python, tiny_model_dir, rl_export, served_tools, tmp_path):
    plan = plan_verl(rl_export, tmp_path / "run", _opts(tiny_model_dir, tool_server_url=served_tools))
    r = run_verl_side(trainer_python, plan, "agent_loop", tmp_path)
    assert r["generate_calls"] == 2  # the call turn, then the answer turn after the tool reply
    assert "<tool_response>" in r["response"] and "Alan Turing -[studied at]-> King's College" in r["response"]
    # the tool reply is masked from the loss, the model's turns are not
    assert "Alan Turing -[studied at]->" in r["masked_text"] and "<answer>" not in r["masked_text"]
    assert r["model_tokens"] > 0 and r["masked_tokens"] > 0
    # the tool schemas are in the first prompt verl built
    assert '"name": "node_info"' in r["first_prompt"]
    assert r["score"]["score"] > 0 and r["score"]["em"] in (1, True)


def test_verl_result_records_the_installed_versions(trainer_python, tmp_path):
    """``result.json`` (success, or the tool guard's stop) carries the environment's verl, vLLM, torch and
    transformers versions, read there."""
    code = f"""
import importlib.metadata as m, json, sys
from pathlib import Path
sys.path.insert(0, {str(REPO_ROOT / 'training' / 'launch')!r})
import verl_ppo
verl_ppo.write_result(Path(sys.argv[1]), {{"status": "error", "error": "tool calls are failing", "trainer": "verl"}})
seen = {{}}
for name in ("verl", "vllm", "torch", "transformers"):
    try:
        seen[name] = m.version(name)
    except m.PackageNotFoundError:
        pass
print(json.dumps(seen))
"""
    done = run_python(trainer_python("verl"), ["-c", code, tmp_path], timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    installed = json.loads(done.stdout.strip().splitlines()[-1])
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["status"] == "error" and result["error"] == "tool calls are failing"
    assert result["versions"] == installed and result["versions"]["verl"] == "0.9.1"


def test_verl_pins_the_vllm_every_gpu_environment_installs(trainer_python):
    """Item 11 of issue 35: verl 0.9.1's own metadata pins the vLLM of its ``vllm`` extra; the GPU flavours of the
    verl, trl and vllm environments install exactly that one (``training.envs.VLLM_VERSION``)."""
    from training.envs import VLLM_VERSION

    code = "import importlib.metadata as m, json; print(json.dumps(m.requires('verl')))"
    done = run_python(trainer_python("verl"), ["-c", code], timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    requires = json.loads(done.stdout.strip().splitlines()[-1])
    pinned = [r.split(";")[0].strip() for r in requires if r.startswith("vllm") and 'extra == "vllm"' in r]
    assert pinned == [f"vllm=={VLLM_VERSION}"]


def test_launcher_health_check_refuses_a_down_server(trainer_python, tiny_model_dir, rl_export, tmp_path):
    plan = plan_verl(rl_export, tmp_path / "run", _opts(tiny_model_dir, tool_server_url="http://127.0.0.1:9"))
    plan.write()
    done = run_python(trainer_python("verl"), plan.argv[1:], timeout=300, extra_env=plan.env_vars)
    assert done.returncode != 0
    assert "does not answer /health" in done.stderr and "hopforge serve-tools" in done.stderr
    assert not (plan.run_dir / "result.json").exists()
