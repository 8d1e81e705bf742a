"""Run verl's PPO/GRPO trainer (``verl.trainer.main_ppo``) for hopforge and keep the launcher contract.

    python training/launch/verl_ppo.py [--overlong refuse|filter] [--max-tool-failure-rate R]
        [--tool-failure-window N] [--shared-dir DIR] --run-dir RUN_DIR [--check | --preflight] <hydra overrides>

The overrides are ``training.rl_verl.plan_verl``'s, the same as ``python -m verl.trainer.main_ppo <overrides>``; this
script does what verl's ``main`` does (Hydra composition, ``validate_config``, ``run_ppo``) and adds:

- **prompts measured first**: every rl prompt (train and validation) is rendered the way verl's agent loop renders
  it (its Continuous Token builder, with the tool schemas) and counted with the model's tokenizer. verl 0.9.1 never
  applies ``data.truncation``: a longer prompt would lose its beginning. ``--overlong refuse`` stops with the counts,
  ``filter`` lets verl's ``filter_overlong_prompts`` leave those rows out (and stops if fewer than a batch remain);
- **the tool server answers**: ``/health`` from here, with ``$HOPFORGE_TOOL_TOKEN``, serving every graph of the
  train rows;
- **Ray for the cluster** (``training/launch/verl_cluster.py``): ``ray.init`` with the plan's address and runtime_env
  (hopforge's packages as py_modules, the tool config in the job's working_dir), the tool token handed to the
  workers through a named actor instead of an environment variable, the same checks from every node (code, token,
  tool server, ``--shared-dir``, model path, GPUs), verl's driver task pinned to this node, and a guard that stops
  the run when more than ``--max-tool-failure-rate`` of the last ``--tool-failure-window`` tool calls failed;
- ``metrics.jsonl``: verl's ``file`` logger writes ``{"step": n, "data": {...}}`` lines to
  ``$VERL_FILE_LOGGER_PATH``; a thread turns each into a flat ``{"step": n, "<metric>": float}`` row while training
  runs (verl's metric names kept: ``critic/score/mean``, ``actor/pg_loss``...), with the tool counters
  (``tool/calls``, ``tool/failures``, ``tool/window_failure_rate``) added;
- ``result.json``: the last checkpoint's actor Hugging Face weights (``global_step_N/actor/huggingface``), or
  ``{"status": "error", "error": ...}`` when the tool guard stopped the run; either way with ``versions``, the
  installed verl, vLLM (the rollouts' engine), torch and transformers (``--check`` reports them too).

``--check`` composes verl's Hydra config with the overrides and runs verl's own ``validate_config``, loads the tool
config with verl's tool registry and the reward function with verl's loader, measures the prompts, prints a JSON
report and exits: no Ray, no GPU, no tool server needed. ``--preflight`` does everything before training (prompts,
tool server, Ray, the checks from every node), prints the report and stops.

Expected refusals print one line ``error: ...`` and exit with status 2. Runs inside the verl environment.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _stubs  # noqa: E402,F401 (torchaudio stand-in before verl imports transformers)

# hopforge's packages (verl_cluster must be imported under its package name: Ray workers import it by that name)
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.append(_ROOT)

from training.launch import verl_cluster as cluster  # noqa: E402
from training.launch.verl_cluster import LaunchError  # noqa: E402

METRICS_FILE = "metrics.jsonl"
RESULT_FILE = "result.json"
#: The packages whose installed versions a run records: vLLM is the rollouts' engine, older than the serving one.
VERSIONED = ("verl", "vllm", "torch", "transformers")


def versions() -> dict[str, str]:
    """Versions of ``VERSIONED`` installed in this environment (those present: the CPU flavour has no vLLM)."""
    from installed import installed_versions

    return installed_versions(VERSIONED)


def write_result(run_dir: Path, result: dict[str, Any]) -> None:
    """``result.json`` of the run: ``result`` with the environment's package versions."""
    payload = {**result, "versions": versions()}
    (run_dir / RESULT_FILE).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


def split_overrides(overrides: list[str]) -> tuple[list[str], dict[str, str]]:
    """Config overrides (for ``compose``) and the ``hydra.*`` ones (run-time only), the latter as a dict."""
    config, hydra = [], {}
    for item in overrides:
        key, _, value = item.partition("=")
        if key.startswith("hydra."):
            hydra[key] = value
        else:
            config.append(item)
    return config, hydra


def compose(overrides: list[str]):
    """verl's ``ppo_trainer`` config with ``overrides``, composed by Hydra as ``main_ppo`` would."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from verl.trainer import main_ppo

    config_dir = str(Path(main_ppo.__file__).resolve().parent / "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=split_overrides(overrides)[0])


def check(overrides: list[str], overlong: str = "refuse") -> dict[str, Any]:
    """What ``--check`` reports (module docstring); verl's own exceptions propagate."""
    from omegaconf import OmegaConf
    from verl.tools.tool_registry import initialize_tools_from_config
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    config = compose(overrides)
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    tools = initialize_tools_from_config(config.actor_rollout_ref.rollout.multi_turn.tool_config_path)
    reward_fn = get_custom_reward_fn(config)
    if reward_fn is None:
        raise LaunchError("no custom reward function configured")
    prompts = check_prompts(config, overlong)
    c = OmegaConf.to_container(config, resolve=False)
    rollout, reward = c["actor_rollout_ref"]["rollout"], c["reward"]["custom_reward_function"]
    runtime_env = c.get("ray_kwargs", {}).get("ray_init", {}).get("runtime_env", {})
    return {
        "ok": True,
        "adv_estimator": c["algorithm"]["adv_estimator"],
        "use_critic": bool(need_critic(config)),
        "use_reference_policy": bool(need_reference_policy(config)),
        "model": c["actor_rollout_ref"]["model"]["path"],
        "rollout": {k: rollout[k] for k in ("name", "mode", "n", "temperature")},
        "multi_turn": {k: rollout["multi_turn"][k] for k in ("enable", "format", "max_user_turns",
                                                            "max_assistant_turns", "tool_config_path")},
        "agent_loop": rollout["agent"]["default_agent_loop"],
        "tools": [{"name": t.name, "class": f"{type(t).__module__}.{type(t).__qualname__}",
                   "server_url": getattr(t, "server_url", None),
                   "schema": t.tool_schema.model_dump(exclude_unset=True, exclude_none=True)} for t in tools],
        "reward": {"path": reward["path"], "name": reward["name"], "reward_kwargs": reward.get("reward_kwargs", {})},
        "reward_fn_kwargs": dict(getattr(reward_fn, "args", ())[1] if getattr(reward_fn, "args", None) else {}),
        "data": {k: c["data"][k] for k in ("train_files", "val_files", "max_prompt_length", "max_response_length",
                                           "train_batch_size", "truncation", "filter_overlong_prompts")},
        "prompts": prompts,
        "trainer": {k: c["trainer"][k] for k in ("logger", "default_local_dir", "total_epochs", "save_freq",
                                                 "n_gpus_per_node", "nnodes")},
        "ray_address": c.get("ray_kwargs", {}).get("ray_init", {}).get("address"),
        "ray_env_vars": runtime_env.get("env_vars", {}),
        "ray_py_modules": runtime_env.get("py_modules", []),
        "versions": versions(),
    }  # fmt: skip


# -- before training: the prompts ---------------------------------------------------------------------------------


def _data_files(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else [str(v) for v in value]


def verl_prompt_length(config: Any) -> Callable[[list[dict[str, Any]]], int]:
    """The token count of a prompt as verl's tool agent loop builds it: the Continuous Token builder verl picks for
    the model's ``model_type``, with the tool schemas of the run's tool config and ``data.apply_chat_template_kwargs``
    (``AgentLoopBase``/``ToolAgentLoop`` in verl 0.9.1)."""
    from omegaconf import OmegaConf
    from transformers import AutoConfig
    from verl.tools.tool_registry import initialize_tools_from_config
    from verl.utils import hf_tokenizer
    from verl.utils.tokenizer.continuous_token_wiring import create_continuous_token_builder

    model = config.actor_rollout_ref.model
    path = model.get("tokenizer_path") or model.path
    trust = bool(model.get("trust_remote_code", False))
    tokenizer = hf_tokenizer(path, trust_remote_code=trust)
    model_type = getattr(AutoConfig.from_pretrained(model.path, trust_remote_code=trust), "model_type", None)
    raw = config.data.get("apply_chat_template_kwargs")
    kwargs = OmegaConf.to_container(raw, resolve=True) if raw is not None else {}
    builder = create_continuous_token_builder(tokenizer, hf_model_type=model_type if isinstance(model_type, str) else None,
                                              chat_template_kwargs=kwargs)  # fmt: skip
    tools = initialize_tools_from_config(config.actor_rollout_ref.rollout.multi_turn.tool_config_path)
    schemas = [t.tool_schema.model_dump(exclude_unset=True, exclude_none=True) for t in tools] or None
    return lambda messages: len(builder.build_initial_tokens(list(messages), tools=schemas))


def measure_rl_prompts(config: Any) -> dict[str, Any]:
    """Every train and validation prompt against the length verl keeps (``data.max_prompt_length``, and the
    rollout's ``prompt_length`` when smaller): the report of ``training/launch/measure_prompts.py``'s ``count``,
    with one entry per split."""
    from measure_prompts import count, rows_of

    limit = int(config.data.max_prompt_length)
    rollout_limit = int(config.actor_rollout_ref.rollout.prompt_length)
    limit = min(limit, rollout_limit)
    splits: dict[str, Any] = {}
    lengths: list[int] = []
    ids: list[str] = []
    length = verl_prompt_length(config)
    sources = {"train": _data_files(config.data.train_files), "validation": _data_files(config.data.val_files)}
    if sources["validation"] == sources["train"]:
        sources.pop("validation")  # the plan validates on the train rows when the export has no validation split
    for split, files in sources.items():
        prompts, split_ids = [], []
        for f in files:
            p, i = rows_of(f, "rl", split)
            prompts += p
            split_ids += i
        split_lengths = [length(messages) for messages in prompts]
        splits[split] = count(split_lengths, split_ids, limit)
        lengths += split_lengths
        ids += split_ids
    return {**count(lengths, ids, limit), "splits": splits}


def check_prompts(config: Any, overlong: str) -> dict[str, Any]:
    """``measure_rl_prompts``; ``LaunchError`` with the counts when a prompt is too long and ``overlong`` is
    ``refuse``, or when filtering would leave fewer train rows than one batch."""
    from training.plan import PromptCounts

    report = measure_rl_prompts(config)
    report["overlong"] = overlong
    if not report["over"]:
        return report
    counts = PromptCounts(**{k: report[k] for k in ("rows", "over", "longest", "longest_id", "max_prompt_length",
                                                    "over_ids", "splits")})  # fmt: skip
    if overlong != "filter":
        per_split = ", ".join(f"{s} {r['over']}" for s, r in report["splits"].items())
        raise LaunchError(f"{counts.refusal()} [{per_split}]")
    if int(config.actor_rollout_ref.rollout.prompt_length) < int(config.data.max_prompt_length):
        raise LaunchError(f"actor_rollout_ref.rollout.prompt_length {config.actor_rollout_ref.rollout.prompt_length} "
                          f"is below data.max_prompt_length {config.data.max_prompt_length}: verl's filter would keep "
                          "prompts its rollouts then cut; make them equal")  # fmt: skip
    if not config.data.get("filter_overlong_prompts", False):
        raise LaunchError("overlong=filter needs data.filter_overlong_prompts=true (the plan sets it)")
    kept = report["splits"]["train"]["rows"] - report["splits"]["train"]["over"]
    if kept < int(config.data.train_batch_size):
        raise LaunchError(f"filtering the over-long prompts leaves {kept} train rows, fewer than train_batch_size "
                          f"{config.data.train_batch_size}: raise max_prompt_length")  # fmt: skip
    print(f"{report['over']} of {report['rows']} prompts are longer than {report['max_prompt_length']} tokens: verl "
          "leaves them out (overlong=filter)", file=sys.stderr)  # fmt: skip
    return report


# -- before training: the tool server ----------------------------------------------------------------------------


def tool_urls(tool_config_path: str) -> list[str]:
    import yaml

    tools = (yaml.safe_load(Path(tool_config_path).read_text(encoding="utf-8")) or {}).get("tools", [])
    return sorted({t["config"]["server_url"].rstrip("/") for t in tools if t.get("config", {}).get("server_url")})


def train_graphs(train_files: Any) -> set[str]:
    import pyarrow.parquet as pq

    graphs: set[str] = set()
    for f in _data_files(train_files):
        table = pq.read_table(f, columns=["extra_info"])
        graphs |= {row.get("graph_type") for row in table.column("extra_info").to_pylist() if row.get("graph_type")}
    return graphs


def check_tool_server(tool_config_path: str, train_files: Any, timeout_s: float = 10.0) -> None:
    """``LaunchError`` with what to do when the tool server is down, refuses the token or lacks a graph of the
    train rows (from this machine; ``verl_cluster.preflight`` asks again from every node)."""
    import httpx

    from training.tool_auth import TOKEN_ENV, auth_headers, tool_token

    graphs = train_graphs(train_files)
    token = tool_token()
    for url in tool_urls(tool_config_path):
        try:
            response = httpx.get(f"{url}/health", headers=auth_headers(token), timeout=timeout_s)
        except httpx.HTTPError as exc:
            raise LaunchError(f"the KG tool server {url} does not answer /health ({exc}): start it with "
                              f"`hopforge serve-tools --port <port>` or point tool_server_url at a running one") from None
        if response.status_code in (401, 403):
            raise LaunchError(f"the KG tool server {url} refused {'the' if token else 'a missing'} token (HTTP "
                              f"{response.status_code}): set {TOKEN_ENV} to the server's value")  # fmt: skip
        try:
            health = response.json()
        except ValueError:
            health = {}
        missing = sorted(graphs - set(health.get("graph_types", [])))
        if missing:
            raise LaunchError(f"the KG tool server {url} does not serve the graph(s) {missing} of the train rows "
                              f"(it serves {health.get('graph_types')}): serve the warehouse these questions came from")


# -- during training: metrics --------------------------------------------------------------------------------------


def flat_metrics(line: str) -> dict[str, Any] | None:
    """One verl file-logger line as a launcher-contract row (numbers only), or None when it is not one."""
    try:
        row = json.loads(line)
    except ValueError:
        return None
    if not isinstance(row, dict) or not isinstance(row.get("step"), int) or not isinstance(row.get("data"), dict):
        return None
    out: dict[str, Any] = {"step": row["step"]}
    for key, value in row["data"].items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if math.isfinite(float(value)):
            out[key] = float(value)
    return out if len(out) > 1 else None


class MetricsRelay(threading.Thread):
    """Appends verl's file-logger lines to ``metrics.jsonl`` as they come (complete lines only), each with the
    columns ``extra()`` returns at that time (the tool counters)."""

    def __init__(self, source: Path, target: Path, interval_s: float = 2.0,
                 extra: Callable[[], dict[str, float]] | None = None):  # fmt: skip
        super().__init__(name="verl-metrics-relay", daemon=True)
        self.source, self.target, self.interval_s, self.extra = source, target, interval_s, extra
        self.offset = 0
        self.stopped = threading.Event()

    def drain(self) -> int:
        if not self.source.is_file():
            return 0
        with open(self.source, "rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        rows = [r for r in (flat_metrics(ln) for ln in complete.decode("utf-8", "replace").splitlines()) if r]
        if rows:
            columns = self.extra() if self.extra else {}
            with open(self.target, "a", encoding="utf-8") as out:
                out.writelines(json.dumps({**r, **columns}) + "\n" for r in rows)
        return len(rows)

    def run(self) -> None:
        while not self.stopped.wait(self.interval_s):
            self.drain()

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=10)
        self.drain()


def last_checkpoint(checkpoint_dir: Path) -> Path | None:
    """The newest ``global_step_N``'s actor weights in Hugging Face layout (else its actor directory)."""
    steps = [p for p in checkpoint_dir.glob("global_step_*") if p.name.split("_")[-1].isdigit()]
    if not steps:
        return None
    newest = max(steps, key=lambda p: int(p.name.split("_")[-1])) / "actor"
    hf = newest / "huggingface"
    has_weights = hf.is_dir() and (any(hf.glob("*.safetensors")) or any(hf.glob("*.bin")))
    return hf if has_weights else newest


def prepare(run_dir: Path, overrides: list[str], args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """Everything before verl trains (module docstring): prompts, the tool server, Ray, the checks from every node,
    the control actor. Returns the config to train with (the tool config path made relative to the job's working
    directory) and the report. Ray is up when it returns."""
    from omegaconf import OmegaConf

    config = compose(overrides)
    rollout = config.actor_rollout_ref.rollout
    report: dict[str, Any] = {"prompts": check_prompts(config, args.overlong)}
    check_tool_server(rollout.multi_turn.tool_config_path, config.data.train_files)
    job_dir = cluster.job_dir_with_tool_config(run_dir, Path(rollout.multi_turn.tool_config_path))
    urls, graphs = tool_urls(rollout.multi_turn.tool_config_path), sorted(train_graphs(config.data.train_files))
    OmegaConf.update(config, "actor_rollout_ref.rollout.multi_turn.tool_config_path", cluster.TOOL_CONFIG_NAME)
    report["ray"] = cluster.connect(config, job_dir, run_dir.name)
    print(f"joined Ray: {json.dumps(report['ray'])}", file=sys.stderr)
    try:
        from training.tool_auth import tool_token

        report["control"] = cluster.start_control(tool_token(), args.max_tool_failure_rate, args.tool_failure_window)
        report["preflight"] = cluster.preflight(
            tool_urls=urls, graphs=graphs, shared_dir=args.shared_dir, model=str(config.actor_rollout_ref.model.path),
            device=str(config.trainer.device), nnodes=int(config.trainer.nnodes),
            n_gpus_per_node=int(config.trainer.n_gpus_per_node))  # fmt: skip
    except BaseException:
        import ray

        ray.shutdown()
        raise
    return config, report


def run_verl(config: Any) -> None:
    """verl's ``main`` after composition (``auto_set_device``, ``validate_config``, ``run_ppo``), with its driver
    task (``TaskRunner``) pinned to this node. Ray is already initialised, so verl does not call ``ray.init``."""
    from verl.trainer.main_ppo import TaskRunnerV1, run_ppo
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.device import auto_set_device

    auto_set_device(config)
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    if config.trainer.use_v1:
        runner = TaskRunnerV1
    else:
        from verl.trainer.main_ppo_v0 import TaskRunner as runner
    run_ppo(config, task_runner_class=cluster.pinned_here(runner))


def train(run_dir: Path, overrides: list[str], args: argparse.Namespace) -> int:
    import ray
    from omegaconf import OmegaConf

    config, report = prepare(run_dir, overrides, args)
    guard = cluster.FailureGuard(report["control"])
    source = Path(os.environ.get("VERL_FILE_LOGGER_PATH") or run_dir / "verl_metrics.jsonl")
    os.environ["VERL_FILE_LOGGER_PATH"] = str(source)
    relay = MetricsRelay(source, run_dir / METRICS_FILE, extra=guard.metrics)
    started = time.monotonic()
    guard.start()
    relay.start()
    try:
        cluster.run_guarded(lambda: run_verl(config), guard)
    except LaunchError as exc:
        result = {"status": "error", "error": str(exc), "trainer": "verl",
                  "duration_s": round(time.monotonic() - started, 1), "tool": guard.tripped}  # fmt: skip
        write_result(run_dir, result)
        raise
    finally:
        guard.stop()
        guard.poll()
        relay.stop()
        ray.shutdown()
    checkpoint = last_checkpoint(Path(OmegaConf.select(config, "trainer.default_local_dir")))
    result = {"status": "ok" if checkpoint else "no_checkpoint", "checkpoint": str(checkpoint) if checkpoint else None,
              "duration_s": round(time.monotonic() - started, 1), "trainer": "verl", "tool": guard.last}  # fmt: skip
    write_result(run_dir, result)
    return 0 if checkpoint else 1


def preflight_only(run_dir: Path, overrides: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """``--preflight``: ``prepare`` and stop (the report without the control actor)."""
    import ray

    _, report = prepare(run_dir, overrides, args)
    report.pop("control")
    ray.shutdown()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--check", action="store_true", help="validate the overrides with verl and exit")
    parser.add_argument("--preflight", action="store_true", help="every check before training, then exit")
    parser.add_argument("--overlong", choices=("refuse", "filter"), default="refuse")
    parser.add_argument("--max-tool-failure-rate", type=float, default=0.05)
    parser.add_argument("--tool-failure-window", type=int, default=200)
    parser.add_argument("--shared-dir", default=None)
    args, overrides = parser.parse_known_args(argv)
    try:
        if args.check:
            print(json.dumps(check(overrides, args.overlong), default=str))
            return 0
        args.run_dir.mkdir(parents=True, exist_ok=True)
        if args.preflight:
            print(json.dumps(preflight_only(args.run_dir.resolve(), overrides, args), default=str))
            return 0
        return train(args.run_dir.resolve(), overrides, args)
    except LaunchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
