"""Run verl's PPO/GRPO trainer (``verl.trainer.main_ppo``) for hopforge and keep the launcher contract.

    python training/launch/verl_ppo.py --run-dir RUN_DIR [--check] <hydra overrides>

The overrides are ``training.rl.plan_verl``'s; this script runs ``main_ppo`` in-process with them, unchanged, so
the command is the same as ``python -m verl.trainer.main_ppo <overrides>`` plus three things verl lacks:

- a health check before anything heavy starts: the tool server named in the tool config answers ``/health`` and
  serves every graph of the train rows (an unreachable server would otherwise turn every tool call of every
  rollout into an error message the policy is trained on);
- ``metrics.jsonl``: verl's ``file`` logger writes ``{"step": n, "data": {...}}`` lines to
  ``$VERL_FILE_LOGGER_PATH``; a thread turns each into a flat ``{"step": n, "<metric>": float}`` row while
  training runs (verl's metric names kept: ``critic/score/mean``, ``actor/pg_loss``...);
- ``result.json``: the last checkpoint's actor Hugging Face weights (``global_step_N/actor/huggingface``).

``--check`` composes verl's Hydra config with the overrides and runs verl's own ``validate_config``, loads the tool
config with verl's tool registry and the reward function with verl's loader, prints a JSON report and exits: no
Ray, no GPU, no tool server needed.

Runs inside the verl environment.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _stubs  # noqa: E402,F401 (torchaudio stand-in before verl imports transformers)

METRICS_FILE = "metrics.jsonl"
RESULT_FILE = "result.json"


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


def check(overrides: list[str]) -> dict[str, Any]:
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
        raise SystemExit("no custom reward function configured")
    c = OmegaConf.to_container(config, resolve=False)
    rollout, reward = c["actor_rollout_ref"]["rollout"], c["reward"]["custom_reward_function"]
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
                                           "train_batch_size", "truncation")},
        "trainer": {k: c["trainer"][k] for k in ("logger", "default_local_dir", "total_epochs", "save_freq",
                                                 "n_gpus_per_node", "nnodes")},
        "ray_env_vars": c.get("ray_kwargs", {}).get("ray_init", {}).get("runtime_env", {}).get("env_vars", {}),
    }  # fmt: skip


# -- before training: the tool server ----------------------------------------------------------------------------


def check_tool_server(tool_config_path: str, train_files: Any, timeout_s: float = 10.0) -> None:
    """``SystemExit`` with what to do when the tool server is down or lacks a graph of the train rows."""
    import httpx
    import pyarrow.parquet as pq
    import yaml

    tools = (yaml.safe_load(Path(tool_config_path).read_text(encoding="utf-8")) or {}).get("tools", [])
    urls = {t["config"]["server_url"].rstrip("/") for t in tools if t.get("config", {}).get("server_url")}
    files = [train_files] if isinstance(train_files, str) else list(train_files)
    graphs: set[str] = set()
    for f in files:
        table = pq.read_table(f, columns=["extra_info"])
        graphs |= {row.get("graph_type") for row in table.column("extra_info").to_pylist() if row.get("graph_type")}
    for url in sorted(urls):
        try:
            health = httpx.get(f"{url}/health", timeout=timeout_s).json()
        except (httpx.HTTPError, ValueError) as exc:
            raise SystemExit(f"the KG tool server {url} does not answer /health ({exc}): start it with "
                             f"`hopforge serve-tools --port <port>` or point tool_server_url at a running one") from None
        missing = sorted(graphs - set(health.get("graph_types", [])))
        if missing:
            raise SystemExit(f"the KG tool server {url} does not serve the graph(s) {missing} of the train rows "
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
    """Appends verl's file-logger lines to ``metrics.jsonl`` as they come (complete lines only)."""

    def __init__(self, source: Path, target: Path, interval_s: float = 2.0):
        super().__init__(name="verl-metrics-relay", daemon=True)
        self.source, self.target, self.interval_s = source, target, interval_s
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
            with open(self.target, "a", encoding="utf-8") as out:
                out.writelines(json.dumps(r) + "\n" for r in rows)
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


def train(run_dir: Path, overrides: list[str]) -> int:
    from omegaconf import OmegaConf

    config = compose(overrides)
    check_tool_server(config.actor_rollout_ref.rollout.multi_turn.tool_config_path, config.data.train_files)
    source = Path(os.environ.get("VERL_FILE_LOGGER_PATH") or run_dir / "verl_metrics.jsonl")
    os.environ["VERL_FILE_LOGGER_PATH"] = str(source)
    relay = MetricsRelay(source, run_dir / METRICS_FILE)
    relay.start()
    started = time.monotonic()
    from verl.trainer.main_ppo import main as main_ppo

    sys.argv = [sys.argv[0], *overrides]
    try:
        main_ppo()
    finally:
        relay.stop()
    checkpoint = last_checkpoint(Path(OmegaConf.select(config, "trainer.default_local_dir")))
    result = {"status": "ok" if checkpoint else "no_checkpoint", "checkpoint": str(checkpoint) if checkpoint else None,
              "duration_s": round(time.monotonic() - started, 1), "trainer": "verl"}  # fmt: skip
    (run_dir / RESULT_FILE).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0 if checkpoint else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--check", action="store_true", help="validate the overrides with verl and exit")
    args, overrides = parser.parse_known_args(argv)
    if args.check:
        print(json.dumps(check(overrides), default=str))
        return 0
    args.run_dir.mkdir(parents=True, exist_ok=True)
    return train(args.run_dir.resolve(), overrides)


if __name__ == "__main__":
    raise SystemExit(main())
