"""TRL GRPO on a hopforge export, rewarded by ``training/verl_reward.py:compute_score``.

    python training/launch/trl_grpo.py --config RUN_DIR/trl_grpo.yaml [--check]

The YAML is ``training.rl.trl_config``'s: ``grpo`` holds ``GRPOConfig`` arguments, ``hopforge`` the model, the data
file, the reward and its kwargs, and the tool server. Rows:

- ``rl``: the prompt (system + question) and the row's ground truth, exactly what verl trains on;
- ``messages``: the first system and user turns of each trajectory, the ground truth made from its answer (no
  gold paths, so path-based rewards see none).

The reward decodes each completion's token ids as verl's reward manager does (``skip_special_tokens=True``: the
whole multi-turn response, tool replies included) and calls ``compute_score`` with ``extra_info["reward"]`` set to
the configured reward and the reward kwargs as keywords, so TRL and verl score the same text the same way.

With ``hopforge.tool_server_url`` the KG tools are offered to the model (TRL's own tool loop, at most
``grpo.max_tool_calling_iterations`` calls): each tool is a function built from hopforge's tool spec (same name,
description and arguments as the SFT data) that posts to the tool server (``POST /tools/{name}``). The graph is
the one the model names (TRL tools carry no per-row state). Without a tool server the model answers in one turn.

Launcher contract: every TRL log line goes to ``<run dir>/metrics.jsonl`` as ``{"step", <numbers>}``; the final
model is saved to ``<output_dir>/final`` and named in ``result.json``. ``--check`` builds the ``GRPOConfig``, the
rows, the reward and the tools without loading the model, prints a JSON report and exits.

Runs inside the TRL environment.
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _stubs  # noqa: E402,F401 (torchaudio stand-in before transformers)

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

METRICS_FILE = "metrics.jsonl"
RESULT_FILE = "result.json"


# -- rows -----------------------------------------------------------------------------------------------------------


def _turn(message: dict[str, Any]) -> dict[str, str]:
    return {"role": message["role"], "content": message.get("content") or ""}


def load_rows(path: str, dataset: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The GRPO rows of one parquet file (``prompt``, ``ground_truth``, ``data_source``, ``graph_type``) and the
    names of the tools they offer."""
    import pyarrow.parquet as pq

    rows, tools = [], []
    for r in pq.read_table(path).to_pylist():
        if dataset == "rl":
            prompt = [_turn(m) for m in r["prompt"]]
            truth = r["reward_model"]["ground_truth"]
            graph = r["extra_info"]["graph_type"]
            offered = list((r["extra_info"].get("tools_kwargs") or {}).keys())
            source = r["data_source"]
        else:
            messages = r["messages"]
            first_user = next(i for i, m in enumerate(messages) if m["role"] == "user")
            prompt = [_turn(m) for m in messages[: first_user + 1]]
            graph = r["graph_type"]
            truth = json.dumps({"answers": [r["golden_answer"]], "gold_paths": [], "graph_type": graph})
            offered = [t["function"]["name"] for t in (r.get("tools") or [])]
            source = "hopforge"
        tools += [t for t in offered if t not in tools]
        rows.append({"prompt": prompt, "ground_truth": truth, "data_source": source, "graph_type": graph})
    if not rows:
        raise SystemExit(f"{path} has no rows")
    return rows, tools


# -- reward ---------------------------------------------------------------------------------------------------------


def make_reward(reward: str, reward_kwargs: dict[str, Any], decode: Callable[[list[int]], str]) -> Callable[..., list[float]]:
    """A TRL reward function ``f(prompts, completions, completion_ids, **columns) -> list[float]`` over
    ``compute_score``."""
    from training.verl_reward import compute_score

    def reward_fn(prompts, completions, completion_ids, ground_truth, data_source, graph_type, **_: Any) -> list[float]:
        scores = []
        for ids, truth, source, graph in zip(completion_ids, ground_truth, data_source, graph_type, strict=True):
            result = compute_score(source, decode(list(ids)), truth, {"reward": reward, "graph_type": graph},
                                   **reward_kwargs)  # fmt: skip
            score = float(result["score"] if isinstance(result, dict) else result)
            if not math.isfinite(score):
                raise ValueError(f"reward {reward} returned {score} for a completion")
            scores.append(score)
        return scores

    reward_fn.__name__ = f"hopforge_{reward}"
    return reward_fn


# -- tools ----------------------------------------------------------------------------------------------------------


class ToolServer:
    """Blocking calls to ``hopforge serve-tools`` (TRL calls tools synchronously, one rollout after another)."""

    def __init__(self, url: str, timeout_s: float):
        self.url, self.timeout_s = url.rstrip("/"), timeout_s

    def health(self) -> dict[str, Any]:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=self.timeout_s) as r:
                return json.loads(r.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise SystemExit(f"the KG tool server {self.url} does not answer /health ({exc}): start it with "
                             f"`hopforge serve-tools` or leave tool_server_url out for single-turn GRPO") from None

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        request = urllib.request.Request(f"{self.url}/tools/{name}", data=json.dumps(arguments).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as r:
                return json.loads(r.read())["rendered_content"]
        except urllib.error.HTTPError as exc:
            # 404/422: the call was refused (unknown graph, bad arguments); the body says why, for the model.
            if exc.code < 500:
                body = json.loads(exc.read() or b"{}")
                return body.get("rendered_content") or f"Error: {body.get('detail', exc.reason)}"
            raise RuntimeError(f"tool server {self.url} failed on {name}: HTTP {exc.code}") from None


def make_tool(name: str, server: ToolServer) -> Callable[..., str]:
    """A Python function TRL can offer as tool ``name``: its signature, type hints and Google-style docstring are
    made from hopforge's tool spec, so the schema TRL renders carries hopforge's descriptions."""
    from schemas.tools import tool_schema

    fn_schema = tool_schema(name)["function"]
    props, required = fn_schema["parameters"]["properties"], set(fn_schema["parameters"].get("required", []))

    def tool(**arguments: Any) -> str:
        return server.call(name, {k: v for k, v in arguments.items() if v is not None})

    params = [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, annotation=str,
                                default=inspect.Parameter.empty if k in required else None) for k in props]  # fmt: skip
    tool.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    tool.__annotations__ = {**{k: str for k in props}, "return": str}
    args = "\n".join(f"    {k}: {p.get('description', k)}" for k, p in props.items())
    tool.__doc__ = f"{fn_schema['description']}\n\nArgs:\n{args}\n\nReturns:\n    The tool's answer as text."
    tool.__name__ = tool.__qualname__ = name
    return tool


def ensure_tool_parsing(tokenizer) -> str:
    """Make TRL able to read tool calls from this tokenizer's output; returns how.

    TRL recognises a chat template only when it is byte-identical to one it ships; a Qwen3 checkpoint whose
    template was rewritten (LLaMA-Factory saves its own; hopforge's tiny test model has its own copy) is refused
    although it emits the same hermes-style ``<tool_call>{json}</tool_call>``. For such templates TRL's Qwen3
    response parser is set explicitly."""
    from trl import chat_template_utils as ctu

    if getattr(tokenizer, "response_template", None) is not None or getattr(tokenizer, "response_schema", None):
        return "tokenizer"
    try:
        ctu.add_response_schema(tokenizer)
        return "trl"
    except ValueError:
        if "<tool_call>" not in (tokenizer.chat_template or ""):
            raise SystemExit("the model's chat template has no <tool_call> format TRL can parse: train single-turn "
                             "(leave tool_server_url out) or use a Qwen3-style checkpoint") from None
    if getattr(ctu, "_SUPPORTS_RESPONSE_TEMPLATE", False):
        tokenizer.response_template = ctu.qwen3_template
    else:
        tokenizer.response_schema = ctu.qwen3_schema
    return "qwen3-hermes"


# -- metrics --------------------------------------------------------------------------------------------------------


def metrics_callback(path: Path):
    from transformers import TrainerCallback

    class MetricsToJsonl(TrainerCallback):
        """Appends every TRL log (loss, reward, KL...) to ``metrics.jsonl`` as a launcher-contract row."""

        def on_log(self, args, state, control, logs=None, **kwargs):
            row: dict[str, Any] = {"step": int(state.global_step)}
            for key, value in (logs or {}).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(float(value)):
                    row[key] = float(value)
            if len(row) > 1:
                with open(path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(row) + "\n")

    return MetricsToJsonl()


# -- main -----------------------------------------------------------------------------------------------------------


def build(config: dict[str, Any]) -> dict[str, Any]:
    """Everything but the model and tokenizer: the GRPOConfig, the rows, the tools."""
    from trl import GRPOConfig

    h = config["hopforge"]
    grpo = GRPOConfig(**config["grpo"])
    rows, tool_names = load_rows(h["train_file"], h["dataset"])
    tools = []
    if h.get("tool_server_url"):
        server = ToolServer(h["tool_server_url"], float(h.get("tool_timeout_s", 30)))
        tools = [make_tool(n, server) for n in tool_names]
    return {"grpo": grpo, "rows": rows, "tools": tools, "tool_server": h.get("tool_server_url")}


def check(config: dict[str, Any]) -> dict[str, Any]:
    from transformers.utils import get_json_schema

    from training.rewards import REWARDS

    built = build(config)
    h, g = config["hopforge"], built["grpo"]
    if h["reward"] not in REWARDS:
        raise SystemExit(f"unknown reward {h['reward']!r}; choose one of {sorted(REWARDS)}")
    return {
        "ok": True, "rows": len(built["rows"]), "reward": h["reward"], "reward_kwargs": h.get("reward_kwargs", {}),
        "tools": [get_json_schema(t) for t in built["tools"]],
        "grpo": {k: getattr(g, k) for k in ("num_generations", "per_device_train_batch_size", "max_steps",
                                             "learning_rate", "beta", "loss_type", "use_vllm", "vllm_mode",
                                             "max_tool_calling_iterations", "output_dir", "remove_unused_columns")},
    }  # fmt: skip


def train(config: dict[str, Any], run_dir: Path) -> int:
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    h = config["hopforge"]
    built = build(config)
    if built["tool_server"]:
        ToolServer(built["tool_server"], 10).health()
    tokenizer = AutoTokenizer.from_pretrained(h["model"])
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    parser = ensure_tool_parsing(tokenizer) if built["tools"] else None
    reward_fn = make_reward(h["reward"], dict(h.get("reward_kwargs") or {}),
                            lambda ids: tokenizer.decode(ids, skip_special_tokens=True))  # fmt: skip
    peft_config = None
    if int(h.get("lora_rank") or 0) > 0:
        from peft import LoraConfig

        peft_config = LoraConfig(r=int(h["lora_rank"]), lora_alpha=2 * int(h["lora_rank"]),
                                 target_modules="all-linear", task_type="CAUSAL_LM")  # fmt: skip
    trainer = GRPOTrainer(model=h["model"], reward_funcs=[reward_fn], args=built["grpo"],
                          train_dataset=Dataset.from_list(built["rows"]), processing_class=tokenizer,
                          tools=built["tools"] or None, peft_config=peft_config,
                          callbacks=[metrics_callback(run_dir / METRICS_FILE)])  # fmt: skip
    started = time.monotonic()
    output = trainer.train()
    final = Path(built["grpo"].output_dir) / "final"
    trainer.save_model(str(final))
    tokenizer.save_pretrained(str(final))
    result = {"status": "ok", "checkpoint": str(final), "trainer": "trl", "global_step": int(trainer.state.global_step),
              "train_loss": float(output.training_loss), "duration_s": round(time.monotonic() - started, 1),
              "tools": [t.__name__ for t in built["tools"]], "tool_call_parser": parser}  # fmt: skip
    (run_dir / RESULT_FILE).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    import yaml

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--check", action="store_true", help="validate the config with TRL and exit")
    args = parser.parse_args(argv)
    config = yaml.safe_load(args.config.read_text(encoding="utf-8"))
    if args.check:
        print(json.dumps(check(config), default=str))
        return 0
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return train(config, args.config.resolve().parent)


if __name__ == "__main__":
    raise SystemExit(main())
