"""TRL smoke (``make train-smoke``): GRPO from ``training.rl_trl.plan_trl`` trains for real on the CPU.

On the tiny local model and a fixture export, in the TRL environment: TRL's ``GRPOConfig`` accepts the written
config; the launcher's reward gives ``compute_score``'s value for decoded token ids (a right answer above a wrong
one, kwargs passed through); GRPO runs optimizer steps single-turn and with the KG tools of a real
``hopforge serve-tools``, through ``training.runs.launch`` (the flows' own path), leaving ``metrics.jsonl`` with
finite losses and in-range rewards and a ``result.json`` naming a saved model.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.trainers.conftest import run_python
from training.plan import REPO_ROOT, TrainingError, read_metrics
from training.rl_common import check_plan
from training.rl_trl import TRLOptions, plan_trl

pytestmark = pytest.mark.train_smoke

# Tiny steps: 2 prompts x 2 completions of at most 24 tokens per step.
SMALL = {"max_steps": 3, "num_generations": 2, "per_device_train_batch_size": 4, "max_completion_length": 24,
         "learning_rate": 1e-4, "save_steps": 1000}  # fmt: skip


def test_grpo_config_accepted(trainer_python, tiny_model_dir, rl_export, served_tools, tmp_path):
    trainer_python("trl")
    single = check_plan(plan_trl(rl_export, tmp_path / "single", TRLOptions(model=str(tiny_model_dir), **SMALL)))
    assert single["rows"] == rl_export.rows("rl")["train"] and single["tools"] == []
    assert single["grpo"]["num_generations"] == 2 and single["grpo"]["use_vllm"] is False
    assert single["grpo"]["max_tool_calling_iterations"] is None
    assert single["tool_failures"] is None
    with_tools = {**SMALL, "max_completion_length": None}  # measured from the export's trajectories
    tools = check_plan(plan_trl(rl_export, tmp_path / "tools", TRLOptions(
        model=str(tiny_model_dir), tool_server_url=served_tools, dataset="messages", stage="sft",
        max_tool_failure_rate=0.2, tool_failure_window=50, **with_tools)))  # fmt: skip
    assert tools["grpo"]["max_tool_calling_iterations"] == 7 and tools["reward"] == "omne_post_sft"
    # TRL counts the tool replies in the completion: the budget is measured with the model's own chat template
    budget = tools["completion_budget"]
    assert budget["measured"] and budget["trajectories"] == rl_export.rows("messages")["train"]
    assert tools["grpo"]["max_completion_length"] == budget["max_completion_length"] >= 1.25 * budget["longest"] > 100
    # a budget that cannot hold them is refused in one line, before the model loads
    with pytest.raises(TrainingError, match=r"trajectories of the export need more than max_completion_length 24 "
                                            r"tokens \(longest \d+"):  # fmt: skip
        check_plan(plan_trl(rl_export, tmp_path / "short", TRLOptions(model=str(tiny_model_dir), **SMALL,
                                                                      tool_server_url=served_tools)))  # fmt: skip
    # the launcher's tool client counts failures against the plan's bound
    assert tools["tool_failures"] == {"max_tool_failure_rate": 0.2, "tool_failure_window": 50}
    # The schema TRL makes of each tool function (transformers' get_json_schema) is the tool contract, key order
    # included
    from schemas.tools import tool_schema

    assert [t["function"]["name"] for t in tools["tools"]] == ["entity_matcher", "node_info"]
    for rendered in tools["tools"]:
        assert json.dumps(rendered) == json.dumps(tool_schema(rendered["function"]["name"]))


def test_reward_function_scores_decoded_ids(trainer_python, tiny_model_dir, rl_export, tmp_path):
    """The launcher's reward: decode the ids, then compute_score with the configured reward and kwargs."""
    row_truth = json.loads(__import__("pyarrow.parquet").parquet.read_table(
        rl_export.data_files("rl")["train"]).to_pylist()[0]["reward_model"]["ground_truth"])
    code = f"""
import json, sys
sys.path.insert(0, {str(REPO_ROOT / 'training' / 'launch')!r})
import trl_grpo
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained({str(tiny_model_dir)!r})
truth = json.dumps({row_truth!r})
right = "<think>\\nThe graph says so.\\n</think>\\n\\n<answer>" + {row_truth['answers'][0]!r} + "</answer>"
ids = [tok.encode(t, add_special_tokens=False) for t in (right, "no idea", right)]
out = {{}}
for name, kwargs in (("omne_stage1", {{}}), ("eog_f1_path", {{"path_weight": 0.5}})):
    fn = trl_grpo.make_reward(name, kwargs, lambda i: tok.decode(i, skip_special_tokens=True))
    out[name] = fn(prompts=[None] * 3, completions=[None] * 3, completion_ids=ids, ground_truth=[truth] * 3,
                   data_source=["hopforge"] * 3, graph_type=["cs"] * 3)
    out[name + "_fn"] = fn.__name__
print(json.dumps(out))
"""
    done = run_python(trainer_python("trl"), ["-c", code], timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    for name in ("omne_stage1", "eog_f1_path"):
        right, wrong, again = out[name]
        assert 0.0 < right <= 1.0 and wrong == 0.0 and again == right
        assert out[name + "_fn"] == f"hopforge_{name}"


def _launch_and_check(plan, budget: int = 24) -> tuple[list[dict], dict]:
    from training.runs import launch

    res = launch(plan, timeout_s=600)
    assert res.status == "completed", res.error
    metrics = read_metrics(plan.run_dir)
    result = json.loads((plan.run_dir / "result.json").read_text())
    steps = [m for m in metrics if "loss" in m]
    assert [m["step"] for m in steps] == [1, 2, 3]
    assert all(math.isfinite(m["loss"]) for m in steps)
    assert all(0.0 <= m["reward"] <= 1.0 for m in steps)
    assert all(m["completions/max_length"] <= budget for m in steps)
    checkpoint = Path(result["checkpoint"])
    assert result["status"] == "ok" and res.checkpoint == str(checkpoint) and result["global_step"] == 3
    assert (checkpoint / "config.json").is_file() and any(checkpoint.glob("*.safetensors"))
    # the launcher's records in the run's shared directory, as the SFT launcher writes them (one rank here)
    assert result["run_dir"] == str(plan.run_dir)
    assert [(r["rank"], r["node_rank"], r["status"], r["global_step"]) for r in result["ranks"]] == [(0, 0, "trained", 3)]
    return steps, result


def test_grpo_trains_single_turn(trainer_python, tiny_model_dir, rl_export, tmp_path):
    trainer_python("trl")
    plan = plan_trl(rl_export, tmp_path / "run", TRLOptions(model=str(tiny_model_dir), **SMALL))
    steps, result = _launch_and_check(plan)
    assert result["tools"] == []
    assert all("rewards/hopforge_omne_stage1/mean" in m for m in steps)


def test_grpo_trains_with_kg_tools(trainer_python, tiny_model_dir, rl_export, served_tools, tmp_path):
    trainer_python("trl")
    # Tool replies cut at 128 characters (live and in the measured trajectories, as verl cuts them): the measured
    # budget, and so each rollout, stays a few hundred tokens (the default 4096 gives ~1,900 and minutes a step here).
    opts = TRLOptions(model=str(tiny_model_dir), tool_server_url=served_tools, reward="eog_f1_path",
                      reward_kwargs={"path_weight": 0.5}, max_tool_response_chars=128,
                      **{**SMALL, "max_completion_length": None})  # fmt: skip
    plan = plan_trl(rl_export, tmp_path / "run", opts)
    steps, result = _launch_and_check(plan, budget=10**6)
    # the measured budget is the one TRL ran with, and it bounds every completion
    budget = result["completion_budget"]
    assert budget["measured"] and budget["reply_cap_chars"] == 128
    assert budget["max_completion_length"] >= 1.25 * budget["longest"]
    assert result["rollouts"] == {"engine": "transformers", "vllm_mode": None, "vllm": None}
    assert all(m["completions/max_length"] <= result["completion_budget"]["max_completion_length"] for m in steps)
    assert result["tools"] == ["entity_matcher", "node_info"]
    # the tiny model's template is Qwen3's but not byte-identical to TRL's copy: the hermes parser is set
    assert result["tool_call_parser"] in ("trl", "qwen3-hermes")
    assert all("rewards/hopforge_eog_f1_path/mean" in m for m in steps)
    # every tool call's outcome is counted (the served tools answer: no failure), in the metrics rows and the result
    tool = result["tool"]
    assert (tool["failures"], tool["tripped"], tool["max_rate"], tool["window"]) == (0, False, 0.05, 200)
    assert all(m["tool/failures"] == 0.0 and m["tool/calls"] <= tool["calls"] for m in steps)
    assert steps[-1]["tool/window_failure_rate"] == 0.0
