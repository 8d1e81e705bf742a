"""docs/prefect.md's Deployments section, run as written: its bash block of commands (pools, `prefect deploy --all`,
the worker, `prefect deployment run 'generate-qa/generate-qa'`) in a fresh `bash` in the checkout, with only the
environment the section's first block names (PREFECT_API_URL: a real `prefect server start` on loopback,
HOPFORGE_CONFIG: a temporary data dir and the loopback fake as every LLM role) and no HOPFORGE_HOME. Requires every
deployment of prefect.yaml registered and the `generate-qa` run completed with questions in the warehouse.

The pull step is also run alone, as the worker runs it, where no checkout is found: it stops with one line naming
HOPFORGE_HOME.

Run with ``make test-prefect-server`` (marker ``prefect_server``; excluded from ``make test``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests import refresh_world as world
from tests.test_prefect_server import BIN, FINAL, ROOT, Stack, stack  # noqa: F401 - `stack` is the fixture
from warehouse.db import Warehouse

pytestmark = pytest.mark.prefect_server

DOCS = ROOT / "docs" / "prefect.md"
GEO = ROOT / "docs" / "programs" / "graphs" / "geo_wikidata.jsonl"


def deployment_blocks() -> tuple[str, str]:
    """The Deployments section's two bash blocks: the environment, then the commands."""
    text = DOCS.read_text()
    section = text[text.index("\n## Deployments\n"):]
    section = section[: section.find("\n## ", 1)] if "\n## " in section[1:] else section
    blocks = re.findall(r"^```bash\n(.*?)^```", section, re.S | re.M)
    assert len(blocks) == 2, f"docs/prefect.md's Deployments section has {len(blocks)} bash blocks, not 2"
    return blocks[0], blocks[1]


def exported(block: str) -> list[str]:
    return re.findall(r"^export (\w+)=", block, re.M)


def fresh_env(stack: Stack, config: Path) -> dict[str, str]:
    """A new shell's environment: the system's basics, a private PREFECT_HOME, and the variables the docs name."""
    env = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG", "LC_ALL", "TMPDIR", "USER")}
    env.update({
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",  # the venv, as an activated one has it
        "PREFECT_HOME": stack.env["PREFECT_HOME"], "DO_NOT_TRACK": "1",
        "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
        "PREFECT_API_URL": stack.api, "HOPFORGE_CONFIG": str(config),
    })  # fmt: skip
    return env


def test_the_docs_block_lists_the_commands_in_the_order_they_run():
    env_block, commands = deployment_blocks()
    assert exported(env_block) == ["PREFECT_API_URL", "HOPFORGE_CONFIG"]
    lines = [ln.split("#")[0].strip() for ln in commands.splitlines() if ln.split("#")[0].strip()]
    order = ["prefect work-pool create hopforge", "prefect work-pool create gpu", "prefect deploy --all",
             "prefect worker start --pool hopforge", "prefect deployment run 'generate-qa/generate-qa'"]
    assert [next(i for i, ln in enumerate(lines) if ln.startswith(o)) for o in order] == list(range(len(order)))
    pools = {d["work_pool"]["name"] for d in yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]}
    assert pools == {"hopforge", "gpu"}  # every pool prefect.yaml names is created by the block
    assert "HOPFORGE_HOME" in DOCS.read_text().split("\n## Deployments\n")[1]


def test_the_docs_deployment_commands_run_as_written(stack, fake_llm, tmp_path):
    env_block, commands = deployment_blocks()
    assert set(exported(env_block)) == {"PREFECT_API_URL", "HOPFORGE_CONFIG"}  # what fresh_env sets
    world.install(fake_llm)
    stack.env.pop("HOPFORGE_HOME")  # the checkout is the worker's directory, as the docs say
    config = tmp_path / "hopforge.yaml"
    config.write_text(yaml.safe_dump({
        "data_dir": str(stack.data), "roles": world.roles(fake_llm.base_url), "seeds": {"min_ball": 5},
        "quality": {"meaning_check": "off", "question_writer": "template"},
        "embeddings": {"base_url": fake_llm.base_url, "model": "e", "dim": 16}}))  # fmt: skip
    env = fresh_env(stack, config)
    imported = subprocess.run([str(BIN / "hopforge"), "graph", "import", str(GEO), "-d", "cs"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert imported.returncode == 0, imported.stdout + imported.stderr

    log = tmp_path / "docs-commands.log"
    started = time.monotonic()
    with open(log, "wb") as out:
        # the worker the block starts with `&` outlives bash: it is in bash's process group, ended below
        shell = subprocess.Popen(["bash", "-e", "-c", commands], cwd=ROOT, env=env, stdout=out,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 start_new_session=True)  # fmt: skip
    try:
        rc = shell.wait(timeout=400)
        assert rc == 0, log.read_text()[-4000:]
        deployed = {d["name"] for d in stack.post("/deployments/filter", {})}
        declared = {d["name"] for d in yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]}
        assert deployed == declared, log.read_text()[-4000:]

        created = log.read_text().split("Creating flow run for deployment 'generate-qa/generate-qa'")[1]
        flow_run_id = re.search(r"UUID:\s*([0-9a-f-]{36})", created).group(1)
        run = stack.get(f"/flow_runs/{flow_run_id}")
        end = time.monotonic() + 400
        while run["state_type"] not in FINAL and time.monotonic() < end:
            time.sleep(2)
            run = stack.get(f"/flow_runs/{flow_run_id}")
        took = time.monotonic() - started
        state = f"{run['state_type']}: {run['state']['message']}"
        assert run["state_type"] == "COMPLETED", state + "\n" + log.read_text()[-4000:]
        assert run["parameters"]["n_seeds"] == int(re.search(r"n_seeds=(\d+)", commands).group(1))
        with Warehouse(stack.data / "warehouse.duckdb", read_only=True) as wh:
            assert wh.scalar("SELECT count(*) FROM qa") > 0
        assert "FileNotFoundError" not in log.read_text()
        print(f"the docs' deployment commands and the generate-qa run: {took:.1f} s")
    finally:
        end_group(shell)


def end_group(shell: subprocess.Popen) -> None:
    """End the worker the block started (bash's process group) before the server stops."""
    shell.poll()
    for sig, grace in ((signal.SIGTERM, 60), (signal.SIGKILL, 10)):
        try:
            os.killpg(shell.pid, sig)
        except ProcessLookupError:
            return
        end = time.monotonic() + grace
        while time.monotonic() < end:
            try:
                os.killpg(shell.pid, 0)
            except ProcessLookupError:
                return
            shell.poll()
            time.sleep(0.5)


def test_the_pull_step_stops_with_one_line_where_no_checkout_is(tmp_path):
    """The pull steps of prefect.yaml, run as the worker runs them (in the run's temporary folder), by a worker
    started outside any checkout without HOPFORGE_HOME, then with HOPFORGE_HOME naming the checkout."""
    script = (
        "import asyncio, os, sys, yaml\n"
        "from prefect.deployments.steps.core import run_steps\n"
        f"steps = yaml.safe_load(open({str(ROOT / 'prefect.yaml')!r}))['pull']\n"
        "os.chdir(sys.argv[1])\n"
        "try:\n"
        "    asyncio.run(run_steps(steps))\n"
        "except Exception as e:\n"
        "    print('REFUSED', e.__cause__); sys.exit(3)\n"
        "print('ENTERED', os.getcwd())\n"
    )
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    base = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG", "TMPDIR", "PATH")}
    base.update(PREFECT_HOME=str(tmp_path / "prefect"), DO_NOT_TRACK="1", PWD=str(elsewhere))
    refused = subprocess.run([str(BIN / "python"), "-c", script, str(run_dir)], cwd=elsewhere, env=base,
                             capture_output=True, text=True, timeout=180)  # fmt: skip
    assert refused.returncode == 3, refused.stdout + refused.stderr
    line = next(ln for ln in refused.stdout.splitlines() if ln.startswith("REFUSED"))
    assert "HOPFORGE_HOME" in line and str(elsewhere) in line and "start the worker in the hopforge checkout" in line
    entered = subprocess.run([str(BIN / "python"), "-c", script, str(run_dir)], cwd=elsewhere,
                             env={**base, "HOPFORGE_HOME": str(ROOT)}, capture_output=True, text=True,
                             timeout=180)  # fmt: skip
    assert entered.returncode == 0 and f"ENTERED {ROOT}" in entered.stdout, entered.stdout + entered.stderr
