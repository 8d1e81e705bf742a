"""kill -9 and resume, stage by stage (marker ``reliability_slow``; ``pytest -m reliability_slow tests/reliability``).

Each stage runs in a process of its own (``tests/reliability/stage_child.py``) against the loopback fake, which
lives in this test process and so outlives the kills. An uninterrupted run, one process per stage, leaves a copy of
its data dir after every stage. Then, for every kill point, a copy of the data dir before the stage is given to a
process that is SIGKILLed, either by the fake on receiving the K-th LLM request of the stage (every role sends one
request at a time, so exactly that one is in flight), or by itself inside the transaction of a write (or, for the
export, after writing some of its files: the flow keeps later batches going while it writes one, so the next
batch's request may be in flight then too); a second process resumes the stage and runs the later ones. Checked:

- the exports equal the uninterrupted run's: every file byte for byte (and every Parquet file's rows, which say
  where they differ if the bytes do);
- the evaluation's items (those of its completed run) equal the uninterrupted run's;
- LLM requests the killed process had sent and the resumed one sends again: at most the one in flight;
- no process started by the killed one is left; the killed run is ``crashed`` after the resume, none ``running``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.harness import KILL_OUTCOMES
from tests.reliability.stage_child import STAGES

REPO = Path(__file__).resolve().parents[2]

# The LLM kill points are drawn at random, one in each half of a stage's requests, from a seed the figures print:
# RELIABILITY_KILL_SEED=<n> replays a run's points.
KILL_SEED = int(os.environ.get("RELIABILITY_KILL_SEED", "2026"))
_rng = random.Random(KILL_SEED)


def _llm_points() -> list[tuple]:
    return [("llm", round(_rng.uniform(0.05, 0.5), 2)), ("llm", round(_rng.uniform(0.5, 0.95), 2))]


# stage -> kill points: ("llm", share of the stage's requests) or ("write", table, nth write of it)
KILLS: dict[str, list[tuple]] = {
    "ingest": [("write", "documents", 1), ("write", "chunks", 1)],
    "build": [*_llm_points(), ("write", "graph_builds", 1), ("write", "tx", 2)],
    "import": [("write", "tx", 2), ("write", "graph_reports", 1)],
    "generate": [*_llm_points(), ("write", "qa_attempts", 1), ("write", "qa", 1)],
    "paths": [*_llm_points(), ("write", "gold_paths", 1)],
    "distill": [*_llm_points(), ("write", "trajectories", 1)],
    "eval": [*_llm_points(), ("write", "eval_items", 1)],
    "export": [("write", "files", 2), ("write", "files", 5)],
}
PROVENANCE = {"run_id", "attempt_id"}


def _key(req) -> str:
    return json.dumps([req.json.get("model"), req.json.get("messages"), req.json.get("response_format")],
                      sort_keys=True)


def _chat(fake) -> list:
    return [r for r in fake.requests if r.path.endswith("/chat/completions")]


def _marked_processes(marker: str) -> list[int]:
    """Live processes (not zombies) whose environment holds ``marker``: what a killed child started."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() not in (entry / "environ").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


class Stages:
    def __init__(self, fake, tmp_path: Path, api_url: str) -> None:
        self.fake, self.tmp, self.api_url = fake, tmp_path, api_url
        self.kill_at: int | None = None  # kill the running child on this request number (1-based, since arm())
        self.seen = 0
        self.proc: subprocess.Popen | None = None

    def predicate(self, body: dict[str, Any]) -> bool:  # first responder: counts, may kill, never answers
        self.seen += 1
        if self.kill_at is not None and self.seen == self.kill_at and self.proc is not None:
            os.kill(self.proc.pid, signal.SIGKILL)
        return False

    def run(self, data: Path, stages: list[str], *, kill_write: dict | None = None, kill_at: int | None = None,
            marker: str = "") -> subprocess.CompletedProcess:
        cfg = {"data_dir": str(data), "base_url": self.fake.base_url, "stages": stages, "kill_write": kill_write}
        path = self.tmp / f"cfg-{uuid.uuid4().hex[:6]}.json"
        path.write_text(json.dumps(cfg))
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOPFORGE_")}
        env.update({"PYTHONPATH": str(REPO), "PREFECT_API_URL": self.api_url, "RELIABILITY_KILL_MARK": marker or "-"})
        self.seen, self.kill_at = 0, kill_at
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.reliability.stage_child", str(path)], cwd=REPO,
                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out, _ = self.proc.communicate(timeout=600)
        done = subprocess.CompletedProcess(self.proc.args, self.proc.returncode, out)
        self.proc, self.kill_at = None, None
        return done


def _export_view(export_dir: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    import pyarrow.parquet as pq

    tables, raw = {}, {}
    for f in sorted(export_dir.rglob("*")):
        if not f.is_file():
            continue
        name = str(f.relative_to(export_dir))
        raw[name] = f.read_bytes()
        if f.suffix == ".parquet":
            t = pq.read_table(f)
            tables[name] = t.drop_columns([c for c in t.column_names if c in PROVENANCE]).to_pylist()
    return tables, raw


def _eval_view(data: Path) -> list[tuple]:
    import duckdb

    con = duckdb.connect(str(data / "warehouse.duckdb"), read_only=True)
    try:
        # An evaluation is a measurement of its own run: a killed one keeps the items it wrote under its (crashed)
        # run, and the resumed command measures again under a new one. The result is the completed run's items.
        return con.execute("SELECT i.qa_id, i.mode, i.prediction, i.em, i.f1 FROM eval_items i "
                           "JOIN runs r ON r.run_id = i.run_id WHERE r.status = 'completed' ORDER BY ALL").fetchall()
    finally:
        con.close()


def _run_states(data: Path) -> dict[str, int]:
    import duckdb

    con = duckdb.connect(str(data / "warehouse.duckdb"), read_only=True)
    try:
        return dict(con.execute("SELECT status, count(*) FROM runs GROUP BY status").fetchall())
    finally:
        con.close()


@pytest.mark.reliability_slow
def test_kill_9_and_resume_every_stage(prefect_harness, fake_llm, tmp_path):
    from prefect.settings import PREFECT_API_URL

    from tests.test_graph_build import extraction_reply
    from tests.test_qa_flow import good_pick

    st = Stages(fake_llm, tmp_path, PREFECT_API_URL.value())
    fake_llm.add(predicate=st.predicate, reply="never")
    fake_llm.add(predicate=lambda b: b.get("model") == "policy-model",
                 reply="<think>I follow the relations.</think><answer>Alan Turing</answer>")
    fake_llm.add(schema_name="qa_pick_path", reply=good_pick)
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    fake_llm.add(predicate=lambda b: "---Input Text---" in json.dumps(b["messages"]), reply=extraction_reply)

    # the uninterrupted run, one process per stage, a copy of the data dir after each
    ref = tmp_path / "ref"
    checkpoints: dict[str, Path] = {}
    calls: dict[str, int] = {}
    t0 = time.perf_counter()
    for stage in STAGES:
        n0 = len(_chat(fake_llm))
        done = st.run(ref, [stage])
        assert done.returncode == 0, done.stdout[-4000:]
        calls[stage] = len(_chat(fake_llm)) - n0
        checkpoints[stage] = tmp_path / "checkpoints" / stage
        shutil.copytree(ref, checkpoints[stage])
    ref_seconds = time.perf_counter() - t0
    ref_tables, ref_raw = _export_view(ref / "exports" / "v1")
    ref_eval = _eval_view(ref)
    assert ref_tables and ref_eval and calls["generate"] and calls["distill"]

    failures = []
    for i, stage in enumerate(STAGES):
        before = checkpoints[STAGES[i - 1]] if i else None
        row = {"stage": stage, "kills": 0, "identical": True, "repeated": 0, "in_flight": 0, "left": 0,
               "crashed": 0, "seconds": 0.0, "llm_calls": calls[stage]}
        t_stage = time.perf_counter()
        for n_point, point in enumerate(KILLS[stage]):
            work = tmp_path / "work" / f"{stage}-{n_point}"
            if before is not None:
                shutil.copytree(before, work)
            marker = uuid.uuid4().hex
            n0 = len(_chat(fake_llm))
            if point[0] == "llm":
                if not calls[stage]:
                    continue
                kill_at = max(1, round(point[1] * calls[stage]))
                killed = st.run(work, [stage], kill_at=kill_at, marker=marker)
                in_flight = 1
            else:
                killed = st.run(work, [stage], kill_write={"table": point[1], "nth": point[2]}, marker=marker)
                # Batches overlap the flow's writes (several are kept in flight), so a request of a later batch may
                # be unanswered when the process dies inside a write: at most one, the endpoint's one slot.
                in_flight = 1
            where = f"{stage} {point}"
            if killed.returncode != -signal.SIGKILL:
                failures.append(f"{where}: the process was not killed (status {killed.returncode}): "
                                f"{killed.stdout[-1500:]}")
                continue
            row["kills"] += 1
            left = _marked_processes(marker)
            for pid in left:
                os.kill(pid, signal.SIGKILL)
            killed_keys = {_key(r) for r in _chat(fake_llm)[n0:]}
            n1 = len(_chat(fake_llm))
            resumed = st.run(work, list(STAGES[i:]))
            if resumed.returncode != 0:
                failures.append(f"{where}: the resume failed: {resumed.stdout[-3000:]}")
                continue
            repeated = len(killed_keys & {_key(r) for r in _chat(fake_llm)[n1:]})
            tables, raw = _export_view(work / "exports" / "v1")
            same_rows = tables == ref_tables
            same_eval = _eval_view(work) == ref_eval
            states = _run_states(work)
            row["identical"] &= same_rows and same_eval
            row["repeated"] += repeated
            row["in_flight"] += in_flight
            row["left"] += len(left)
            row["crashed"] += states.get("crashed", 0)
            if not same_rows:
                diff = [n for n in sorted(set(tables) | set(ref_tables)) if tables.get(n) != ref_tables.get(n)]
                failures.append(f"{where}: export rows differ from the uninterrupted run's in {diff}")
            if not same_eval:
                failures.append(f"{where}: evaluation items differ from the uninterrupted run's")
            if repeated > in_flight:
                failures.append(f"{where}: {repeated} LLM requests repeated on resume, {in_flight} were in flight")
            if left:
                failures.append(f"{where}: {len(left)} processes of the killed one were left: {left}")
            if states.get("running") or not states.get("crashed"):
                failures.append(f"{where}: runs after the resume: {states} (the killed run must be crashed)")
            row["files"] = len(ref_raw)
            row["bytes_equal"] = min(row.get("bytes_equal", len(ref_raw)), sum(raw.get(n) == b for n, b in ref_raw.items()))
            if set(raw) != set(ref_raw):
                failures.append(f"{where}: export files differ: {sorted(set(raw) ^ set(ref_raw))}")
            unequal = sorted(n for n, b in ref_raw.items() if raw.get(n) != b)
            if unequal:
                failures.append(f"{where}: export files not byte-identical to the uninterrupted run's: {unequal}")
        row["seconds"] = time.perf_counter() - t_stage
        KILL_OUTCOMES.append(row)
    KILL_OUTCOMES.append({"stage": "uninterrupted", "kills": 0, "identical": True, "repeated": 0, "seed": KILL_SEED,
                          "points": {st_: [p[1] for p in pts if p[0] == "llm"] for st_, pts in KILLS.items()},
                          "in_flight": 0, "left": 0, "crashed": 0, "seconds": ref_seconds,
                          "llm_calls": sum(calls.values()), "files": len(ref_raw), "bytes_equal": len(ref_raw)})
    assert not failures, "\n".join(failures)
