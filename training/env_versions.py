"""Package versions inside the trainer environments, read by each environment's own python.

The core never imports a trainer, so what is installed in ``.venvs/<name>`` is asked of that environment's python
through ``importlib.metadata``. Runs record what they ran with: a training run its trainer's versions, a served
checkpoint the vLLM that serves it and the vLLM its rollouts ran on (verl and TRL each pin their own, older than the
serving one).
"""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Sequence
from typing import Any

from training.envs import TRAINER_ENVS, env_python, require_env
from training.plan import TrainingError

#: The trainer environments whose vLLM generates: rollouts (verl, TRL) and serving (vllm).
VLLM_ENVS: tuple[str, ...] = ("verl", "trl", "vllm")

_READ = """
import importlib.metadata as m, json, sys
out = {}
for name in sys.argv[1:]:
    try:
        out[name] = m.version(name)
    except m.PackageNotFoundError:
        out[name] = None
print(json.dumps(out))
"""


def package_versions(env: str, packages: Sequence[str], *, timeout_s: float = 120.0) -> dict[str, str | None]:
    """``{package: version}`` of ``packages`` as installed in trainer environment ``env`` (``None``: not
    installed there). ``TrainingError`` when the environment is missing or its python cannot answer."""
    python = require_env(env)
    try:
        done = subprocess.run([str(python), "-c", _READ, *packages], capture_output=True, text=True,
                              timeout=timeout_s)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise TrainingError(f"the {env} environment did not report its package versions within {timeout_s:.0f} s") from None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise TrainingError(f"reading package versions in the {env} environment ({python}) failed: {tail[0]}")
    return json.loads(lines[-1])


_FLASH_ATTN = """
import json
try:
    import flash_attn
except (ImportError, OSError) as exc:  # not installed, or its CUDA extension does not load here
    print(json.dumps({"importable": False, "why": f"{type(exc).__name__}: {exc}"[:300]}))
else:
    print(json.dumps({"importable": True, "version": getattr(flash_attn, "__version__", None)}))
"""


@functools.lru_cache(maxsize=8)
def _flash_attn_probe(python: str, timeout_s: float) -> dict[str, Any]:
    try:
        done = subprocess.run([python, "-c", _FLASH_ATTN], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise TrainingError(f"probing flash-attn with {python} took more than {timeout_s:.0f} s") from None
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise TrainingError(f"probing flash-attn with {python} failed: {tail[0]}")
    return json.loads(lines[-1])


def flash_attn_status(env: str, *, timeout_s: float = 120.0) -> dict[str, Any] | None:
    """Whether ``import flash_attn`` works in trainer environment ``env`` (``{"importable": bool, "version"|"why":
    ...}``), asked of that environment's python once per process; ``None`` when the environment is not built."""
    python = env_python(env)
    if not python.exists():
        return None
    return _flash_attn_probe(str(python), timeout_s)


def vllm_versions(envs: Sequence[str] = VLLM_ENVS) -> dict[str, str | None]:
    """``{env: vLLM version}`` for each of ``envs`` that exists here (``None``: the environment has no vLLM, as the
    CPU flavour); environments not built are left out."""
    return {env: package_versions(env, ["vllm"])["vllm"] for env in envs
            if env in TRAINER_ENVS and env_python(env).exists()}  # fmt: skip


__all__ = ["VLLM_ENVS", "flash_attn_status", "package_versions", "vllm_versions"]
