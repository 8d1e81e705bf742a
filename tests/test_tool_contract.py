"""One tool contract (``schemas.tools.tool_schema``) on every path that shows the model its tools, checked in the
core environment: the export's SFT rows, verl's tool config, the TRL launcher's tool functions and the evaluation
loop's requests hold the same schemas, key order included, and a Qwen3-layout chat template (the tiny test model's,
rendered with jinja2 as transformers renders it) turns the SFT, verl and evaluation prompts into the same tool
block. ``tests/trainers/test_tool_contract.py`` renders each path with its trainer's own code."""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

from schemas.tools import OMNE_TOOLS, tool_function, tool_schemas
from training.launch.tiny_model import CHAT_TEMPLATE
from training.plan import load_export


def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """``apply_chat_template(..., tokenize=False, add_generation_prompt=True)`` as transformers does it: a sandboxed
    environment with trimmed blocks and its ``tojson`` (non-ASCII kept, keys in their order)."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])

    def tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None,
               sort_keys: bool = False) -> str:  # fmt: skip
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env.filters["tojson"] = tojson
    return env.from_string(CHAT_TEMPLATE).render(messages=messages, tools=tools, add_generation_prompt=True)


def system_turn(text: str) -> str:
    return text[: text.index("<|im_end|>\n") + len("<|im_end|>\n")]


@pytest.fixture(scope="module")
def export_view(tmp_path_factory):
    from tasks.export.datasets import ExportInputs, export
    from tests.trainers.conftest import build_fixture_records

    qas, gold, trajs = build_fixture_records()
    return load_export(export(ExportInputs(qas, gold, trajs), tmp_path_factory.mktemp("exports"), version="v").path)


class Capture:
    """A policy endpoint that answers at once and keeps the first request."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    async def chat(self, role, messages, *, params=None, tools=None, use_cache=True):
        from gateway.client import ChatResult

        self.requests.append({"messages": json.loads(json.dumps(messages)), "tools": json.loads(json.dumps(tools))})
        return ChatResult(role=role, text="<answer>x</answer>", completion_tokens=1)


def eval_request(question: str, kind: str) -> dict[str, Any]:
    from eval.evaluate import EvalConfig
    from tasks.env.agent_loop import run_agent
    from tasks.env.index import HashingEmbedder
    from tasks.env.tools import ToolEnvironment
    from tasks.graph.importers import read_triples
    from training.plan import REPO_ROOT

    kg = read_triples(REPO_ROOT / "flows" / "demo" / "graphs" / "cs.jsonl", "cs").to_graph()
    env = ToolEnvironment.from_graphs([kg], HashingEmbedder(), tools=OMNE_TOOLS)
    gateway = Capture()
    asyncio.run(run_agent(gateway, env, question, "cs", EvalConfig.for_checkpoint(kind).agent_config()))  # type: ignore[arg-type]
    return gateway.requests[0]


def test_sft_verl_trl_and_evaluation_show_the_same_tool_block(export_view, tmp_path):
    from training.rl_verl import VerlOptions, plan_verl

    rows = pq.read_table(export_view.data_files("sft")["train"]).to_pylist()
    sft = next(r for r in rows if r["kind"] == "template")
    sft_tools = json.loads(sft["tools"])
    nothink = next(r for r in pq.read_table(export_view.data_files("sft_nothink")["train"]).to_pylist()
                   if r["id"] == sft["id"])  # fmt: skip
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"\0" * 8)
    plan = plan_verl(export_view, tmp_path / "verl", VerlOptions(model=str(model), train_batch_size=2,
                                                                ppo_mini_batch_size=2, n_gpus_per_node=1))  # fmt: skip
    verl_tools = [t["tool_schema"] for t in yaml.safe_load(plan.files["tool_config.yaml"])["tools"]]
    rl = pq.read_table(export_view.data_files("rl")["train"]).to_pylist()[0]
    rl_prompt = [{"role": m["role"], "content": m["content"]} for m in rl["prompt"]]
    asked = eval_request(sft["question"], "think")

    # The same objects, in the same key order, on every path.
    contract = json.dumps(tool_schemas(OMNE_TOOLS))
    assert json.dumps(sft_tools) == json.dumps(verl_tools) == json.dumps(asked["tools"]) == contract
    # TRL renders a function's signature and docstring (transformers' get_json_schema, checked byte for byte in the
    # TRL environment): they are written from the same schemas.
    for schema in sft_tools:
        fn = schema["function"]
        tool = tool_function(fn["name"], lambda name, args: "")
        assert inspect.getdoc(tool).startswith(fn["description"] + "\n\nArgs:\n")
        assert list(inspect.signature(tool).parameters) == list(fn["parameters"]["properties"])

    # The same tool block: the system turn rendered for SFT, verl (its RL prompt) and evaluation.
    sft_prompt = [{"role": "system", "content": sft["system"]}, {"role": "user", "content": sft["question"]}]
    block = system_turn(render(sft_prompt, sft_tools))
    assert "<tools>\n" + "\n".join(json.dumps(t, ensure_ascii=False) for t in sft_tools) + "\n</tools>" in block
    assert system_turn(render(rl_prompt, verl_tools)) == block
    assert system_turn(render(asked["messages"], asked["tools"])) == block
    asked_nothink = eval_request(sft["question"], "no_think")
    nothink_prompt = [{"role": "system", "content": nothink["system"]}, {"role": "user", "content": sft["question"]}]
    assert system_turn(render(asked_nothink["messages"], asked_nothink["tools"])) == \
        system_turn(render(nothink_prompt, json.loads(nothink["tools"])))
    assert "<think>" not in nothink["system"] and "<think>" in sft["system"]
