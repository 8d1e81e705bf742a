"""One tool contract, rendered by each trainer's own code (``make train-smoke``).

The same tool schemas (``schemas.tools.tool_schema``) reach the model on four paths, each rendered by the code that
renders it in training or serving:

- SFT rows: the export's ``tools`` column through LLaMA-Factory's ``qwen3`` template (its own tool formatter), in
  the llamafactory environment;
- verl: the run's ``tool_config.yaml`` through verl's tool registry and ``model_dump(exclude_unset=True,
  exclude_none=True)`` (what its tool agent loop renders), then the chat template, in the verl environment;
- TRL: the launcher's tool functions (``trl_grpo.make_tool``) through ``apply_chat_template(tools=...)`` (what
  ``GRPOTrainer`` calls), in the TRL environment;
- evaluation: the tools and messages the tool loop sends to the policy endpoint, rendered with the chat template as
  vLLM does (``apply_chat_template``; transformers of the TRL environment stands in for vLLM's, which has no CPU
  build here).

The chat template is Qwen3's own (the original TRL ships for recognising Qwen3 checkpoints). The system turn that
holds the tool block is byte-identical on all four paths. Beyond the tool block, the whole prompt the evaluation
loop sends before a final answer, fed the replies a checkpoint was trained on, renders to the text LLaMA-Factory
trained on: for think rows with every earlier ``<think>`` block and ``enable_thinking`` true, for no-think rows
(``qwen3_nothink``) with ``enable_thinking`` true too, where ``false`` would add an empty think block.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.trainers.conftest import run_python
from training.plan import REPO_ROOT, load_export

pytestmark = pytest.mark.train_smoke

_THINK = re.compile(r"^<think>\n(.*?)\n</think>\n\n", re.S)

LLAMAFACTORY = r"""
import json, sys
sys.path.insert(0, sys.argv[2] + "/training/launch")
import _stubs
from transformers import AutoTokenizer
from llamafactory.data.data_utils import Role
from llamafactory.data.template import get_template_and_fix_tokenizer
from llamafactory.hparams import DataArguments

spec = json.load(open(sys.argv[1]))
roles = {"human": Role.USER.value, "gpt": Role.ASSISTANT.value, "function_call": Role.FUNCTION.value,
         "observation": Role.OBSERVATION.value}
out = {}
for name, case in spec["cases"].items():
    tok = AutoTokenizer.from_pretrained(spec["tokenizer"])
    template = get_template_and_fix_tokenizer(tok, DataArguments(template=case["template"]))
    msgs = [{"role": roles[t["from"]], "content": t["value"]} for t in case["conversations"]]
    pairs = template.encode_multiturn(tok, msgs, case["system"], case["tools"])
    prompt = [i for p, r in pairs[:-1] for i in p + r] + pairs[-1][0]
    out[name] = tok.decode(prompt, skip_special_tokens=False, clean_up_tokenization_spaces=False)
print(json.dumps(out))
"""

TRL = r"""
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2] + "/training/launch")
import _stubs
import trl
import trl_grpo
from transformers import AutoTokenizer

spec = json.load(open(sys.argv[1]))
tok = AutoTokenizer.from_pretrained(spec["tokenizer"])
qwen3 = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
server = trl_grpo.ToolServer("http://127.0.0.1:9", 1.0)  # never called: rendering only
tools = [trl_grpo.make_tool(n, server) for n in spec["tool_names"]]
render = lambda msgs, tools, **kw: tok.apply_chat_template(msgs, tools=tools, chat_template=qwen3, tokenize=False,
                                                           add_generation_prompt=True, **kw)
out = {"template": qwen3, "trl": render(spec["prompt"], tools)}
for name, case in spec["eval"].items():
    out[name] = render(case["messages"], case["tools"], **case["chat_template_kwargs"])
    out[name + "/thinking_off"] = render(case["messages"], case["tools"], enable_thinking=False)
print(json.dumps(out))
"""

VERL = r"""
import json, sys
sys.path.insert(0, sys.argv[2] + "/training/launch")
import _stubs
from transformers import AutoTokenizer
from verl.tools.tool_registry import initialize_tools_from_config

spec = json.load(open(sys.argv[1]))
tok = AutoTokenizer.from_pretrained(spec["tokenizer"])
tools = initialize_tools_from_config(spec["tool_config"])
schemas = [t.tool_schema.model_dump(exclude_unset=True, exclude_none=True) for t in tools]
text = tok.apply_chat_template(spec["prompt"], tools=schemas, chat_template=spec["template"], tokenize=False,
                               add_generation_prompt=True)
print(json.dumps({"verl": text}))
"""


def system_turn(text: str) -> str:
    """The first turn of a rendered prompt: the system prompt and the tool block."""
    assert text.startswith("<|im_start|>system\n"), text[:80]
    return text[: text.index("<|im_end|>\n") + len("<|im_end|>\n")]


def replies_of(conversation: list[dict[str, str]]) -> list[Any]:
    """What a server with vLLM's reasoning and hermes tool parsers returns for each assistant turn of an SFT row:
    the reasoning apart, the call parsed, the rest as content."""
    from gateway.client import ChatResult

    out = []
    for i, turn in enumerate(t for t in conversation if t["from"] in ("function_call", "gpt")):
        value = turn["value"]
        found = _THINK.match(value)
        reasoning, rest = (found.group(1), value[found.end():]) if found else (None, value)
        if turn["from"] == "function_call":
            call = json.loads(rest)
            out.append(ChatResult(role="policy", text="", reasoning=reasoning, completion_tokens=5, tool_calls=[
                {"id": f"call_{i}", "name": call["name"], "arguments": json.dumps(call["arguments"], ensure_ascii=False)}]))  # fmt: skip
        else:
            out.append(ChatResult(role="policy", text=rest, reasoning=reasoning, completion_tokens=5))
    return out


class Replay:
    """A policy endpoint that answers with ``replies`` in turn and keeps every request as sent."""

    def __init__(self, replies: list[Any]) -> None:
        self.replies, self.requests = replies, []

    async def chat(self, role, messages, *, params=None, tools=None, use_cache=True):
        self.requests.append({"messages": json.loads(json.dumps(messages)), "tools": tools})
        return self.replies[len(self.requests) - 1]


def eval_request(row: dict[str, Any], kind: str) -> dict[str, Any]:
    """The last request the evaluation loop sends a checkpoint trained on ``row``'s kind of rows (the one before its
    answer), the checkpoint replying as the row does; with the chat template switch the served format sets."""
    from eval.evaluate import EvalConfig
    from tasks.env.agent_loop import run_agent
    from tasks.env.index import HashingEmbedder
    from tasks.env.tools import ToolEnvironment
    from tasks.graph.importers import read_triples
    from training.serve import format_of_template

    kg = read_triples(REPO_ROOT / "flows" / "demo" / "graphs" / "cs.jsonl", "cs").to_graph(snapshot_id="cs-smoke")
    env = ToolEnvironment.from_graphs([kg], HashingEmbedder(), tools=("entity_matcher", "node_info"))
    gateway = Replay(replies_of(row["conversations"]))
    run = asyncio.run(run_agent(gateway, env, row["question"], row["graph_type"],
                                EvalConfig.for_checkpoint(kind).agent_config()))  # type: ignore[arg-type]
    assert run.end_reason == "answer" and run.final_answer == row["golden_answer"]
    last = gateway.requests[-1]
    template = "qwen3" if kind == "think" else "qwen3_nothink"
    fmt = format_of_template(template, source="this test")
    return {"messages": last["messages"], "tools": last["tools"], "chat_template_kwargs": fmt.chat_template_kwargs()}


def test_every_path_renders_the_same_tool_block_and_evaluation_the_prompt_training_saw(
        trainer_python, tiny_model_dir, tiny_export_dir, tmp_path):  # fmt: skip
    from training.rl_verl import VerlOptions, plan_verl

    export = load_export(tiny_export_dir)
    think = next(r for r in pq.read_table(export.data_files("sft")["train"]).to_pylist() if r["kind"] == "template")
    nothink = next(r for r in pq.read_table(export.data_files("sft_nothink")["train"]).to_pylist()
                   if r["id"] == think["id"])  # fmt: skip
    rl = pq.read_table(export.data_files("rl")["train"]).to_pylist()[0]
    prompt = [{"role": m["role"], "content": m["content"]} for m in rl["prompt"]]
    assert prompt[0]["content"] == think["system"]  # RL rows ask as the think SFT rows do
    n_rl = export.rows("rl")["train"]
    verl = plan_verl(export, tmp_path / "verl", VerlOptions(model=str(tiny_model_dir), train_batch_size=n_rl,
                                                           ppo_mini_batch_size=n_rl, rollout_n=2, n_gpus_per_node=1))  # fmt: skip
    verl.write()
    tool_names = [t["function"]["name"] for t in json.loads(think["tools"])]

    spec = {
        "tokenizer": str(tiny_model_dir), "tool_names": tool_names, "prompt": prompt,
        "tool_config": str(tmp_path / "verl" / "tool_config.yaml"),
        "cases": {
            "think": {"template": "qwen3", "conversations": think["conversations"], "system": think["system"],
                      "tools": think["tools"]},
            "nothink": {"template": "qwen3_nothink", "conversations": nothink["conversations"],
                        "system": nothink["system"], "tools": nothink["tools"]},
        },
        "eval": {"eval_think": eval_request(think, "think"), "eval_nothink": eval_request(nothink, "no_think")},
    }  # fmt: skip
    (tmp_path / "spec.json").write_text(json.dumps(spec))

    def rendered(env: str, code: str) -> dict[str, str]:
        done = run_python(trainer_python(env), ["-c", code, tmp_path / "spec.json", REPO_ROOT], timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    lf = rendered("llamafactory", LLAMAFACTORY)
    hf = rendered("trl", TRL)
    spec["template"] = hf["template"]
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    vl = rendered("verl", VERL)

    # The tool block: the system turn of every path, byte for byte.
    block = system_turn(lf["think"])
    assert "\n<tools>\n" + "\n".join(json.dumps(t, ensure_ascii=False) for t in json.loads(think["tools"])) in block
    assert system_turn(vl["verl"]) == block, "verl"
    assert system_turn(hf["trl"]) == block, "TRL"
    assert system_turn(hf["eval_think"]) == block, "evaluation"
    assert system_turn(hf["eval_nothink"]) == system_turn(lf["nothink"]), "evaluation, no-think"
    # verl and TRL render the RL prompt the same way through and through
    assert vl["verl"] == hf["trl"]

    # The whole prompt before the answer: what evaluation sends a checkpoint is what it was trained on.
    assert hf["eval_think"] == lf["think"]
    assert lf["think"].count("<think>\n") == len(think["conversations"]) // 2 - 1  # every earlier turn's reasoning
    assert hf["eval_nothink"] == lf["nothink"] and "<think>" not in lf["nothink"]
    # ...and the other switch would not be: an empty think block training never saw
    assert hf["eval_nothink/thinking_off"] == lf["nothink"] + "<think>\n\n</think>\n\n"
