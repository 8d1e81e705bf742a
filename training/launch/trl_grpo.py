"""TRL GRPO on a hopforge export, rewarded by ``training/verl_reward.py:compute_score``.

    python training/launch/trl_grpo.py --config RUN_DIR/trl_grpo.yaml [--check]

The YAML is ``training.rl_trl.trl_config``'s: ``grpo`` holds ``GRPOConfig`` arguments, ``hopforge`` the model, the data
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

Prompts are never cut: before the model loads, every prompt is measured with the model's tokenizer exactly as
``GRPOTrainer`` renders it (chat template, the same tools, generation prompt; ``measure_prompts.py``). Prompts
longer than ``hopforge.max_prompt_length`` stop the run with their count (``overlong: refuse``) or are left out and
counted (``overlong: filter``); the counts go to ``<run dir>/prompts.json`` and ``result.json``.

Tool calls that fail (server down, timing out, 5xx, token refused) are counted (``ToolServer``): TRL would hand
their error text to the model as the tool's reply, so past ``hopforge.max_tool_failure_rate`` of the last
``hopforge.tool_failure_window`` calls of a process the run stops with ``error: tool calls are failing: ...``
(status 2, the counts in ``result.json``'s ``tool``), as verl's launcher does. On several processes the tripped
rank does not leave alone (the others would block in their next collective): its calls fail fast, and before the
next optimizer step every rank gathers every rank's flag (``StopEveryRank``) and all stop together.

The completion budget: TRL 1.16 counts every assistant turn and tool reply of a rollout against
``max_completion_length`` and drops a reply that would not fit (the rollout then ends without an answer). Before
the model loads, the export's ``messages`` trajectories are rendered with the model's chat template and the run's
tools, tool replies cut at ``hopforge.max_tool_response_chars`` as the tool client cuts live replies (verl's middle
cut); a given budget below the longest is refused in one line, none given becomes the longest x
``hopforge.completion_margin`` (``completion_budget``; in ``check.json`` and ``result.json``). vLLM rollouts
(``use_vllm``) need vLLM in this environment: refused in one line without it; ``result.json`` records the engine
and its version (``rollouts``).

Launcher contract: every TRL log line goes to ``<run dir>/metrics.jsonl`` as ``{"step", <numbers>}`` (with the tool
counters ``tool/calls``, ``tool/failures``, ``tool/window_failure_rate`` when the run has tools); the final
model is saved to ``<output_dir>/final`` and named in ``result.json`` (with the environment's package versions).
Under ``accelerate launch`` (``training.rl_trl.plan_trl`` plans it for GPUs) every process runs this script. The run
directory is ``hopforge.run_dir`` (shared by every node; node k's config lies in its own ``nodes/node-<k>``): every
rank records its node, host and how far it got in ``ranks/rank-<RANK>.json`` there (started, trained or error), and
only global rank 0 writes ``metrics.jsonl``, ``prompts.json`` and ``result.json`` (with every rank's record, read
after all ranks met at the end of training). Another rank exits 0 once it has trained: the run's result is rank 0's.

``--check`` builds the ``GRPOConfig``, the rows, the reward and the tools without loading the model, measures the
prompts when the model's tokenizer is local, prints a JSON report (also written to ``<run dir>/check.json``) and
exits. For an ``accelerate launch`` plan it
first stands in for the main process: accelerate's own code parses ``accelerate.yaml`` and computes the environment
its launch gives the processes, the rendezvous variables torchrun adds are set, and a process group of the plan's
world size is opened with torch's in-process ``fake`` backend, so ``GRPOConfig`` resolves its distributed mode and
its DeepSpeed plugin as rank 0 would. The report's ``validated`` and ``simulated`` lists say which is which.

Runs inside the TRL environment.
"""

from __future__ import annotations

import argparse
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
from rank_records import global_rank, read_ranks, record_rank  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

METRICS_FILE = "metrics.jsonl"
RESULT_FILE = "result.json"
PROMPTS_FILE = "prompts.json"
CHECK_FILE = "check.json"
ACCELERATE_FILE = "accelerate.yaml"
VERSIONED = ("torch", "transformers", "accelerate", "peft", "deepspeed", "trl", "vllm")


class LaunchError(SystemExit):
    """A run that must not start, or must stop: the message is the one line the user sees (``error: ...``, status
    2); ``tool``: the tool-failure counts when failing tool calls stopped it (written to ``result.json``)."""

    def __init__(self, message: str, tool: dict[str, Any] | None = None) -> None:
        super().__init__(2)
        self.message = message
        self.tool = tool


def is_main_process() -> bool:
    return global_rank() == 0


def run_dir_of(config: dict[str, Any], config_path: Path) -> Path:
    """The run's shared directory (``hopforge.run_dir``, the same on every node), where ``metrics.jsonl``,
    ``prompts.json``, ``result.json`` and ``ranks/`` go; node k's config lies in its own ``nodes/node-<k>``. A config
    written without it: the config's folder."""
    return Path(config["hopforge"].get("run_dir") or config_path.resolve().parent)


def node_rank_of(config: dict[str, Any]) -> int:
    return int((config["hopforge"].get("launch") or {}).get("node_rank") or 0)


def finish(run_dir: Path, config: dict[str, Any], global_step: int, wait_for_everyone: Callable[[], None],
           result: Callable[[], dict[str, Any]]) -> int:
    """The end of training on every rank: it records that it trained (``ranks/rank-<RANK>.json``), all ranks wait
    for each other, and global rank 0 writes ``result.json`` (``result()`` with the run directory and every rank's
    record). Another rank returns 0: it trained, and the run's result is rank 0's."""
    record_rank(run_dir, {"status": "trained", "trainer": "trl", "global_step": global_step},
                node_rank=node_rank_of(config))  # fmt: skip
    wait_for_everyone()
    if not is_main_process():
        return 0
    write_result(run_dir, {**result(), "run_dir": str(run_dir), "ranks": read_ranks(run_dir)})
    return 0


def write_result(run_dir: Path, result: dict[str, Any]) -> None:
    (Path(run_dir) / RESULT_FILE).write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")


def is_distributed() -> bool:
    """Several processes train this run (``accelerate launch`` sets ``WORLD_SIZE``)."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def versions() -> dict[str, str]:
    """Versions of the packages that decide how this environment trains (the ones installed)."""
    from installed import installed_versions

    return installed_versions(VERSIONED)


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
            ident = r["extra_info"].get("qa_id")
        else:
            messages = r["messages"]
            first_user = next(i for i, m in enumerate(messages) if m["role"] == "user")
            prompt = [_turn(m) for m in messages[: first_user + 1]]
            graph = r["graph_type"]
            truth = json.dumps({"answers": [r["golden_answer"]], "gold_paths": [], "graph_type": graph})
            offered = [t["function"]["name"] for t in (r.get("tools") or [])]
            source = "hopforge"
            ident = r.get("qa_id") or r.get("id")
        tools += [t for t in offered if t not in tools]
        rows.append({"id": str(ident or f"train:{len(rows)}"), "prompt": prompt, "ground_truth": truth,
                     "data_source": source, "graph_type": graph})
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


class ToolServerError(RuntimeError):
    """The tool server gave no reply for a call (down, timing out, 5xx, token refused, no ``rendered_content``): a
    failure, counted against ``max_tool_failure_rate``. Refused calls (404/422) are replies the model reads."""


class ToolServer:
    """Blocking calls to ``hopforge serve-tools`` (TRL calls tools synchronously, one rollout after another).

    Every call's outcome goes into a ``FailureWindow`` (the one verl's launcher keeps, per process here). TRL's tool
    loop catches any ``Exception`` of a tool and hands its text to the model as the reply, so a failure below the
    bound is raised as ``ToolServerError`` (counted by TRL too, ``tools/failure_frequency``), and past the bound
    ``LaunchError``, a ``SystemExit`` TRL does not catch: the run stops instead of training on error text."""

    def __init__(self, url: str, timeout_s: float, max_failure_rate: float = 0.05, failure_window: int = 200,
                 max_reply_chars: int | None = None):  # fmt: skip
        from training.launch.verl_cluster import FailureWindow
        from training.tool_auth import auth_headers, tool_token

        self.url, self.timeout_s = url.rstrip("/"), timeout_s
        self.max_reply_chars = max_reply_chars
        # a server beyond loopback takes requests only with the shared token of this process's environment
        self.headers = auth_headers(tool_token())
        self.failures = FailureWindow(max_failure_rate, failure_window)

    def health(self) -> dict[str, Any]:
        try:
            request = urllib.request.Request(f"{self.url}/health", headers=self.headers)
            with urllib.request.urlopen(request, timeout=self.timeout_s) as r:
                return json.loads(r.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise SystemExit(f"the KG tool server {self.url} does not answer /health ({exc}): start it with "
                             f"`hopforge serve-tools` or leave tool_server_url out for single-turn GRPO") from None

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """The text the model reads for tool ``name`` called with ``arguments``; the outcome is counted (class
        docstring)."""
        from training.launch.verl_cluster import failure_reason

        if self.failures.tripped:  # several ranks: this one waits for the others at the next optimizer step
            raise ToolServerError(f"tool calls stopped on this rank: {failure_reason(self.failures.snapshot())}")
        try:
            reply = self._post(name, arguments)
        except ToolServerError as exc:
            self.failures.record(True, str(exc))
            if self.failures.tripped:
                if is_distributed():
                    # A rank that left now would leave the others blocked in their next collective (NCCL's
                    # 30-minute timeout): it goes on to the next optimizer step, where every rank stops together
                    # (StopEveryRank), before any update with error replies.
                    raise ToolServerError(f"tool calls stopped on this rank: "
                                          f"{failure_reason(self.failures.snapshot())}") from None  # fmt: skip
                raise LaunchError(failure_reason(self.failures.snapshot()), tool=self.failures.snapshot()) from None
            raise
        self.failures.record(False)
        return cap_reply(reply, self.max_reply_chars)

    def _post(self, name: str, arguments: dict[str, Any]) -> str:
        request = urllib.request.Request(f"{self.url}/tools/{name}", data=json.dumps(arguments).encode(),
                                         headers={"Content-Type": "application/json", **self.headers}, method="POST")  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as r:
                body = json.loads(r.read())
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise ToolServerError(f"tool server {self.url} refused {'the' if self.headers else 'a missing'} "
                                      f"token on {name} (HTTP {exc.code})") from None  # fmt: skip
            if exc.code >= 500:
                raise ToolServerError(f"tool server {self.url} failed on {name}: HTTP {exc.code}") from None
            # 404/422: the call was refused (unknown graph, bad arguments); the body says why, for the model.
            try:
                refused = json.loads(exc.read() or b"{}")
            except ValueError:
                refused = {}
            refused = refused if isinstance(refused, dict) else {}
            return refused.get("rendered_content") or f"Error: {refused.get('detail', exc.reason)}"
        except (urllib.error.URLError, OSError) as exc:  # refused connection, timeout, reset
            raise ToolServerError(f"tool server {self.url} did not answer {name} ({exc})") from None
        except ValueError:
            raise ToolServerError(f"tool server {self.url} answered {name} with a body that is not JSON") from None
        rendered = body.get("rendered_content") if isinstance(body, dict) else None
        if not isinstance(rendered, str):
            raise ToolServerError(f"tool server {self.url} answered {name} without rendered_content")
        return rendered


def cap_reply(text: str, cap: int | None) -> str:
    """``text`` cut in the middle to ``cap`` characters, exactly as verl 0.9.1's tool agent loop cuts a tool reply
    (``tool_response_truncate_side="middle"``), so TRL and verl show the model the same replies."""
    if cap is None or len(text) <= cap:
        return text
    length = cap // 2
    return text[:length] + "...(truncated)..." + text[-length:]


def make_tool(name: str, server: ToolServer) -> Callable[..., str]:
    """A Python function TRL can offer as tool ``name``, built from the tool contract so that the schema TRL
    renders is the one SFT rows, verl and evaluation show (``schemas.tools.tool_function``)."""
    from schemas.tools import tool_function

    return tool_function(name, lambda tool, arguments: server.call(tool, arguments))


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


# -- the completion budget ------------------------------------------------------------------------------------------

#: TRL's own default budget, used only where nothing can be measured and the rollouts have no tool replies.
SINGLE_TURN_BUDGET = 1024


def trajectory_messages(row: dict[str, Any], reply_cap: int | None) -> list[dict[str, Any]]:
    """One export ``messages`` row as chat messages a chat template renders: tool calls with their arguments as
    objects, the reasoning kept, tool replies cut as the tool client cuts them (``cap_reply``)."""
    out = []
    for m in row["messages"]:
        msg: dict[str, Any] = {"role": m["role"], "content": m.get("content") or ""}
        if m.get("reasoning_content"):
            msg["reasoning_content"] = m["reasoning_content"]
        calls = m.get("tool_calls")
        if isinstance(calls, str):
            calls = json.loads(calls)
        if calls:
            msg["tool_calls"] = [{"type": "function", "function": {
                "name": c["function"]["name"],
                "arguments": json.loads(c["function"]["arguments"]) if isinstance(c["function"]["arguments"], str)
                else c["function"]["arguments"]}} for c in calls]  # fmt: skip
        if m["role"] == "tool":
            msg["content"] = cap_reply(msg["content"], reply_cap)
            if m.get("name"):
                msg["name"] = m["name"]
        out.append(msg)
    return out


def completion_lengths(tokenizer: Any, trajectories: list[list[dict[str, Any]]], tools: list[Any] | None,
                       chat_template_kwargs: dict[str, Any] | None = None) -> list[int]:  # fmt: skip
    """Tokens of each trajectory after its prompt (system and first user turn with the generation prompt): every
    assistant turn and tool reply, what TRL 1.16 counts against ``max_completion_length``."""
    from measure_prompts import prompt_lengths

    kwargs = chat_template_kwargs or {}
    prompts = []
    for messages in trajectories:
        first_user = next(i for i, m in enumerate(messages) if m["role"] == "user")
        prompts.append(messages[: first_user + 1])
    before = prompt_lengths(tokenizer, prompts, tools, kwargs)
    lengths = []
    for messages, start in zip(trajectories, before, strict=True):
        encoded = tokenizer.apply_chat_template(list(messages), tools=tools or None, tokenize=True, return_dict=True,
                                                **kwargs)  # fmt: skip
        ids = encoded["input_ids"]
        total = len(ids[0]) if ids and isinstance(ids[0], list) else len(ids)
        lengths.append(max(0, total - start))
    return lengths


def completion_budget(h: dict[str, Any], grpo: dict[str, Any], tokenizer: Any | None, tools: list[Any],
                      chat_template_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """Decide ``grpo["max_completion_length"]`` (set in place) from the export's trajectories, measured with the
    model's tokenizer and the tools the run offers, tool replies capped as the tool client caps them. A given
    budget that cannot hold the longest trajectory is refused in one line (TRL would drop the reply that does not
    fit and end the rollout without an answer, scoring 0, with no error); none given: the longest x the margin.
    Returns the report that goes to ``result.json`` and ``check.json``."""
    import pyarrow.parquet as pq

    given = grpo.get("max_completion_length")
    report: dict[str, Any] = {"given": given, "measured": False}
    if not tools:
        grpo["max_completion_length"] = given or SINGLE_TURN_BUDGET
        report.update(why="single-turn: no tool replies in a rollout", max_completion_length=grpo["max_completion_length"])
        return report
    path = h.get("trajectories_file")
    if tokenizer is None or not path:
        why = "the export has no messages trajectories" if not path else "the model's tokenizer is not local"
        if given is None:
            raise LaunchError(f"max_completion_length is not set and cannot be measured ({why}): set it to the "
                              "tokens of the longest rollout, tool replies included")  # fmt: skip
        report.update(why=why, max_completion_length=given)
        return report
    cap = h.get("max_tool_response_chars")
    rows = pq.read_table(path).to_pylist()
    trajectories = [trajectory_messages(r, cap) for r in rows]
    ids = [str(r.get("qa_id") or r.get("id") or f"train:{n}") for n, r in enumerate(rows)]
    lengths = completion_lengths(tokenizer, trajectories, tools, chat_template_kwargs)
    longest, longest_id = max(zip(lengths, ids, strict=True), default=(0, None))
    report.update(measured=True, trajectories=len(lengths), longest=longest, longest_id=longest_id,
                  reply_cap_chars=cap, source=Path(path).name)  # fmt: skip
    if given is not None:
        over = sum(n > given for n in lengths)
        if over:
            raise LaunchError(f"{over} of {len(lengths)} trajectories of the export need more than max_completion_length "
                              f"{given} tokens (longest {longest}, {longest_id}; tool replies count, cut at {cap} "
                              f"characters): TRL would drop the reply that does not fit and score the rollout 0; raise "
                              f"max_completion_length to at least {longest}, or lower max_tool_response_chars")  # fmt: skip
        grpo["max_completion_length"] = given
    else:
        margin = float(h.get("completion_margin") or 1.25)
        grpo["max_completion_length"] = max(64, int(math.ceil(longest * margin / 64.0)) * 64)
    report["max_completion_length"] = grpo["max_completion_length"]
    return report


# -- metrics --------------------------------------------------------------------------------------------------------


def tripped_ranks(tripped_here: bool) -> list[int]:
    """The ranks whose tool-failure window tripped, agreed by every rank (an all-gather of one flag each over the
    run's process group: NCCL on GPUs, gloo on a CPU); this process alone outside a process group."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return [0] if tripped_here else []
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    flag = torch.tensor([int(tripped_here)], device=device)
    flags = [torch.zeros_like(flag) for _ in range(dist.get_world_size())]
    dist.all_gather(flags, flag)
    return [rank for rank, f in enumerate(flags) if int(f.item())]


def stop_if_any_rank_tripped(server: ToolServer) -> None:
    """Every rank calls this at the same point (before each optimizer step); when any rank's window tripped, every
    rank raises ``LaunchError`` there, so all processes stop together and none waits in a collective for one that
    left."""
    from training.launch.verl_cluster import failure_reason

    snapshot = server.failures.snapshot()
    ranks = tripped_ranks(server.failures.tripped)
    if not ranks:
        return
    if server.failures.tripped:
        message = failure_reason(snapshot)
    else:
        message = (f"tool calls are failing on rank(s) {ranks} (their logs say which calls): the run stopped on "
                   "every rank before the next optimizer step instead of training on error replies")  # fmt: skip
    raise LaunchError(message, tool={**snapshot, "tripped_ranks": ranks})


def stop_callback(server: ToolServer):
    from transformers import TrainerCallback

    class StopEveryRank(TrainerCallback):
        """Before each optimizer step (every rank reaches it together): all ranks stop when one tripped."""

        def on_pre_optimizer_step(self, args, state, control, **kwargs):
            stop_if_any_rank_tripped(server)

    return StopEveryRank()


def metrics_callback(path: Path, server: ToolServer | None = None):
    from transformers import TrainerCallback

    from training.launch.verl_cluster import failure_metrics

    class MetricsToJsonl(TrainerCallback):
        """Appends every TRL log (loss, reward, KL...) to ``metrics.jsonl`` as a launcher-contract row, with this
        process's tool-call counters (``tool/calls``, ``tool/failures``, ``tool/window_failure_rate``, as verl's
        rows have them) when the run has tools."""

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not state.is_world_process_zero:
                return
            row: dict[str, Any] = {"step": int(state.global_step)}
            for key, value in (logs or {}).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(float(value)):
                    row[key] = float(value)
            if server is not None:
                row.update(failure_metrics(server.failures.snapshot()))
            if len(row) > 1:
                with open(path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(row) + "\n")

    return MetricsToJsonl()


# -- main -----------------------------------------------------------------------------------------------------------


def build(config: dict[str, Any], tokenizer: Any | None = None) -> dict[str, Any]:
    """Everything but the model: the rows, the tools, the completion budget (measured with ``tokenizer`` when
    given: ``completion_budget``) and the GRPOConfig."""
    from trl import GRPOConfig

    h = config["hopforge"]
    rows, tool_names = load_rows(h["train_file"], h["dataset"])
    tools, server = [], None
    if h.get("tool_server_url"):
        server = ToolServer(h["tool_server_url"], float(h.get("tool_timeout_s", 30)),
                            max_failure_rate=float(h.get("max_tool_failure_rate", 0.05)),
                            failure_window=int(h.get("tool_failure_window", 200)),
                            max_reply_chars=h.get("max_tool_response_chars"))  # fmt: skip
        tools = [make_tool(n, server) for n in tool_names]
    grpo_args = dict(config["grpo"])
    kwargs = grpo_args.get("chat_template_kwargs") if isinstance(grpo_args.get("chat_template_kwargs"), dict) else None
    budget = completion_budget(h, grpo_args, tokenizer, tools, kwargs)
    if grpo_args.get("use_vllm") and grpo_args.get("vllm_mode") == "colocate":
        # vLLM's context: the prompt and the whole rollout, not the model's full context (smaller KV cache)
        grpo_args.setdefault("vllm_max_model_length", int(h.get("max_prompt_length") or 2048)
                             + int(grpo_args["max_completion_length"]))  # fmt: skip
    grpo = GRPOConfig(**grpo_args)
    return {"grpo": grpo, "rows": rows, "tools": tools, "tool_server": h.get("tool_server_url"), "server": server,
            "completion_budget": budget}  # fmt: skip


def require_vllm(grpo: Any) -> str | None:
    """The installed vLLM version when the run rolls out with vLLM; ``LaunchError`` in one line when it is missing
    (TRL would fail deep in its generation set-up)."""
    if not grpo.use_vllm:
        return None
    from installed import installed_versions

    version = installed_versions(("vllm",)).get("vllm")
    if not version:
        raise LaunchError(f"use_vllm ({grpo.vllm_mode}) needs vLLM in the trl environment, which has none: build it "
                          "with `make trainer-env T=trl FLAVOUR=gpu` (trl[vllm]), or set use_vllm=off")  # fmt: skip
    return version


def screen_prompts(rows: list[dict[str, Any]], tokenizer: Any, tools: list[Any], grpo: Any,
                   h: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:  # fmt: skip
    """Measure every prompt as GRPOTrainer renders it; refuse or filter the over-long ones (``hopforge.overlong``).
    Returns the rows to train on and the counts."""
    from measure_prompts import count, prompt_lengths

    limit = int(h.get("max_prompt_length") or 0)
    if not limit:
        return rows, {"measured": False}
    kwargs = grpo.chat_template_kwargs if isinstance(grpo.chat_template_kwargs, dict) else {}
    lengths = prompt_lengths(tokenizer, [r["prompt"] for r in rows], tools, kwargs)
    counts = count(lengths, [r["id"] for r in rows], limit)
    counts.update(policy=h.get("overlong", "refuse"), measured=True)
    if counts["over"] and counts["policy"] == "refuse":
        raise LaunchError(f"{counts['over']} of {counts['rows']} prompts are longer than max_prompt_length {limit} "
                          f"tokens (longest {counts['longest']}, {counts['longest_id']}): raise max_prompt_length, "
                          "or set overlong=filter to leave them out")  # fmt: skip
    kept = [r for r, n in zip(rows, lengths, strict=True) if n <= limit]
    if not kept:
        raise LaunchError(f"all {len(rows)} prompts are longer than max_prompt_length {limit} tokens: raise it")
    counts["kept"] = len(kept)
    return kept, counts


def stand_in_for_main_process(config_path: Path, config: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Make this one process look like the main process of the plan's ``accelerate launch`` (``--check`` only).
    Returns (validated, simulated)."""
    import torch

    launch_plan = config["hopforge"].get("launch") or {}
    validated: list[str] = []
    simulated: list[str] = []
    if not launch_plan.get("accelerate"):
        return validated, simulated
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import launch as accelerate_launch

    accelerate_file = config_path.parent / ACCELERATE_FILE
    parsed = load_config_from_file(str(accelerate_file))
    world = int(launch_plan["world_size"])
    if parsed.num_processes != world or parsed.num_machines != launch_plan["nnodes"]:
        raise LaunchError(f"{accelerate_file} says {parsed.num_processes} processes on {parsed.num_machines} "
                          f"machine(s); the plan has {world} on {launch_plan['nnodes']}")  # fmt: skip
    validated.append(f"{ACCELERATE_FILE} read by accelerate ({parsed.distributed_type}, {parsed.num_processes} "
                     f"processes, {parsed.num_machines} machine(s), mixed precision {parsed.mixed_precision})")  # fmt: skip
    args = launch_command_parser().parse_args(["--config_file", str(accelerate_file), __file__, "--config",
                                               str(config_path)])  # fmt: skip
    args, defaults, mp_from_config = _validate_launch_command(args)
    if args.use_deepspeed:
        fields = [*defaults.deepspeed_config.keys(), *(["mixed_precision"] if mp_from_config else [])]
        args.deepspeed_fields_from_accelerate_config = ",".join(fields)
        _cmd, env = accelerate_launch.prepare_deepspeed_cmd_env(args)
    elif args.multi_gpu:
        env = accelerate_launch.prepare_multi_gpu_env(args)
    else:
        _cmd, env = accelerate_launch.prepare_simple_launcher_cmd_env(args)
    os.environ.update({k: v for k, v in env.items() if k.startswith(("ACCELERATE_", "FSDP_", "CUDA_", "OMP_"))})
    validated.append("the environment accelerate launch gives its processes (accelerate's own launch code)")
    if world > 1:
        import torch.distributed as dist
        from torch.testing._internal.distributed.fake_pg import FakeStore

        per_node = int(launch_plan["nproc_per_node"])
        rank = int(launch_plan["node_rank"]) * per_node
        os.environ.update(RANK=str(rank), LOCAL_RANK="0", WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(per_node),
                          MASTER_ADDR=str(launch_plan["master_addr"]), MASTER_PORT=str(launch_plan["master_port"]))  # fmt: skip
        if not dist.is_initialized():
            dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world)
        simulated.append(f"rank {rank} of {world} (rendezvous variables set, in-process fake process group: no peers "
                         "were reached)")  # fmt: skip
    if (launch_plan.get("device") or {}).get("kind") == "cuda" and not torch.cuda.is_available():
        from transformers import training_args

        plan_bf16 = bool((launch_plan.get("device") or {}).get("bf16"))
        training_args.is_torch_bf16_gpu_available = lambda: plan_bf16
        # accelerate opens a CPU process group only when told the process is a CPU one; the ranks' GPU backend
        # (and DeepSpeed's communication layer on it) cannot be opened here.
        os.environ["ACCELERATE_USE_CPU"] = "true"
        simulated.append(f"bf16 support of the plan's GPUs ({plan_bf16}, as the plan says; this machine has no CUDA), "
                         "and the devices: accelerate's state is a CPU one here, so DeepSpeed's communication "
                         "backend is not opened")  # fmt: skip
    return validated, simulated


def check(config: dict[str, Any], config_path: Path | None = None) -> dict[str, Any]:
    from transformers.training_args import ParallelMode
    from transformers.utils import get_json_schema

    from training.rewards import REWARDS

    validated, simulated = stand_in_for_main_process(config_path, config) if config_path else ([], [])
    h = config["hopforge"]
    tokenizer = None
    if Path(h["model"]).is_dir():
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(h["model"])
    built = build(config, tokenizer)
    g = built["grpo"]
    budget = built["completion_budget"]
    if budget["measured"]:
        validated.append(f"completion budget {budget['max_completion_length']} tokens holds the export's "
                         f"{budget['trajectories']} trajectories (longest {budget['longest']}, tool replies cut at "
                         f"{budget['reply_cap_chars']} characters)")  # fmt: skip
    if g.use_vllm:
        from installed import installed_versions

        vllm = installed_versions(("vllm",)).get("vllm")
        if vllm:
            validated.append(f"vLLM {vllm} for the rollouts ({g.vllm_mode})")
        else:
            simulated.append(f"vLLM rollouts ({g.vllm_mode}): vLLM is not installed in this trl environment; the "
                             "launcher refuses to start on a node without it")  # fmt: skip
    if h["reward"] not in REWARDS:
        raise SystemExit(f"unknown reward {h['reward']!r}; choose one of {sorted(REWARDS)}")
    launch_plan = h.get("launch") or {}
    world = int(launch_plan.get("world_size", 1))
    if launch_plan.get("accelerate") and world > 1:
        if g.parallel_mode != ParallelMode.DISTRIBUTED or g.world_size != world:
            raise LaunchError(f"GRPOConfig sees {g.world_size} process(es) in mode {g.parallel_mode}, not the plan's "
                              f"{world} distributed processes")  # fmt: skip
        validated.append(f"GRPOConfig in distributed mode, world size {world}, {g.n_gpu} device(s) per process")
    if launch_plan.get("deepspeed", "none") != "none":
        plugin = getattr(g, "deepspeed_plugin", None)
        stage = plugin.hf_ds_config.config["zero_optimization"]["stage"] if plugin is not None else None
        if stage != int(launch_plan["deepspeed"][-1]):
            raise LaunchError(f"the DeepSpeed plugin runs ZeRO stage {stage}, the plan asks for {launch_plan['deepspeed']}")
        validated.append(f"DeepSpeed plugin ZeRO-{stage} (accelerate's DeepSpeedPlugin from its launch environment, "
                         f"mixed precision {plugin.hf_ds_config.config.get('bf16', {})})")  # fmt: skip
    prompts: dict[str, Any] = {"measured": False, "why": "the model is not a local directory"}
    if tokenizer is not None:
        _rows, prompts = screen_prompts(built["rows"], tokenizer, built["tools"], g, h)
        validated.append(f"{prompts['rows']} prompts measured with the model's tokenizer ({prompts['over']} over "
                         f"{prompts['max_prompt_length']} tokens, policy {prompts['policy']})")  # fmt: skip
    validated.append("GRPOConfig")
    return {
        "ok": True, "rows": len(built["rows"]), "reward": h["reward"], "reward_kwargs": h.get("reward_kwargs", {}),
        "tools": [get_json_schema(t) for t in built["tools"]], "prompts": prompts, "bf16": g.bf16,
        "completion_budget": budget,
        "grpo": {k: getattr(g, k) for k in ("num_generations", "per_device_train_batch_size", "max_steps",
                                             "learning_rate", "beta", "loss_type", "use_vllm", "vllm_mode",
                                             "max_tool_calling_iterations", "output_dir", "remove_unused_columns",
                                             "max_completion_length", "vllm_max_model_length")},
        "validated": validated, "simulated": simulated, "versions": versions(),
        "tool_failures": {"max_tool_failure_rate": built["server"].failures.max_rate,
                          "tool_failure_window": built["server"].failures.window} if built["server"] else None,
    }  # fmt: skip


def train(config: dict[str, Any], run_dir: Path) -> int:
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    h = config["hopforge"]
    tokenizer = AutoTokenizer.from_pretrained(h["model"])
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    built = build(config, tokenizer)
    record_rank(run_dir, {"status": "started", "trainer": "trl"}, node_rank=node_rank_of(config))
    vllm_version = require_vllm(built["grpo"])
    if built["tool_server"]:
        ToolServer(built["tool_server"], 10).health()
    parser = ensure_tool_parsing(tokenizer) if built["tools"] else None
    rows, prompts = screen_prompts(built["rows"], tokenizer, built["tools"], built["grpo"], h)
    if is_main_process():
        (run_dir / PROMPTS_FILE).write_text(json.dumps(prompts, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    reward_fn = make_reward(h["reward"], dict(h.get("reward_kwargs") or {}),
                            lambda ids: tokenizer.decode(ids, skip_special_tokens=True))  # fmt: skip
    peft_config = None
    if int(h.get("lora_rank") or 0) > 0:
        from peft import LoraConfig

        peft_config = LoraConfig(r=int(h["lora_rank"]), lora_alpha=2 * int(h["lora_rank"]),
                                 target_modules="all-linear", task_type="CAUSAL_LM")  # fmt: skip
    trainer = GRPOTrainer(model=h["model"], reward_funcs=[reward_fn], args=built["grpo"],
                          train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                          tools=built["tools"] or None, peft_config=peft_config,
                          callbacks=[metrics_callback(run_dir / METRICS_FILE, built["server"]),
                                     *([stop_callback(built["server"])] if built["server"] else [])])  # fmt: skip
    started = time.monotonic()
    output = trainer.train()
    final = Path(built["grpo"].output_dir) / "final"
    trainer.save_model(str(final))  # every process: under DeepSpeed ZeRO-3 saving gathers the shards

    def result() -> dict[str, Any]:
        tokenizer.save_pretrained(str(final))
        return {"status": "ok", "checkpoint": str(final), "trainer": "trl",
                "global_step": int(trainer.state.global_step), "train_loss": float(output.training_loss), "duration_s": round(time.monotonic() - started, 1),
                "tools": [t.__name__ for t in built["tools"]], "tool_call_parser": parser, "prompts": prompts,
                "processes": trainer.accelerator.num_processes, "versions": versions(),
                "completion_budget": built["completion_budget"],
                "rollouts": {"engine": "vllm" if built["grpo"].use_vllm else "transformers",
                             "vllm_mode": built["grpo"].vllm_mode if built["grpo"].use_vllm else None,
                             "vllm": vllm_version},
                "tool": built["server"].failures.snapshot() if built["server"] else None}  # fmt: skip

    return finish(run_dir, config, int(trainer.state.global_step), trainer.accelerator.wait_for_everyone, result)


def main(argv: list[str] | None = None) -> int:
    import yaml

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--check", action="store_true", help="validate the config with TRL and exit")
    args = parser.parse_args(argv)
    config = yaml.safe_load(args.config.read_text(encoding="utf-8"))
    try:
        if args.check:
            report = json.dumps(check(config, args.config.resolve()), default=str)
            (args.config.resolve().parent / CHECK_FILE).write_text(report + "\n", encoding="utf-8")
            print(report)
            return 0
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        return train(config, run_dir_of(config, args.config))
    except LaunchError as exc:
        if not args.check:
            fail(run_dir_of(config, args.config), config, exc)
        print(f"error: {exc.message}", file=sys.stderr)
        return 2


def fail(run_dir: Path, config: dict[str, Any], exc: LaunchError) -> None:
    """A run that stopped with ``exc``: every rank records it (``ranks/rank-<RANK>.json``), and global rank 0 writes
    the run's ``result.json`` in the shared run directory (never in node k's folder)."""
    record_rank(run_dir, {"status": "error", "trainer": "trl", "error": exc.message}, node_rank=node_rank_of(config))
    if is_main_process():
        write_result(run_dir, {"status": "error", "error": exc.message, "versions": versions(), "tool": exc.tool,
                               "run_dir": str(run_dir), "ranks": read_ranks(run_dir)})  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
