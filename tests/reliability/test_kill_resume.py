"""kill -9 and resume, stage by stage (marker ``reliability_slow``; ``pytest -m reliability_slow tests/reliability``).

Each stage runs in a process of its own (``tests/reliability/stage_child.py``) against the loopback fake, which
lives in this test process and so outlives the kills. Every role may keep 64 requests in flight, as the benchmarks
run, and the fake answers each after 0.1-0.4 s, so a stage's calls overlap and a kill finds many in flight. An
uninterrupted run, one process per stage, leaves a copy of its data dir after every stage. Then, for every kill
point, a copy of the data dir before the stage is given to a process that is frozen (SIGSTOP), either by the fake on
receiving the K-th LLM request of the stage or by itself inside the transaction of a write (or, for the export,
after writing some of its files); the test notes the moment and the process's descendants, then SIGKILLs it
(``harness.Watched``). A second process resumes the stage and runs the later ones. Checked:

- the exports equal the uninterrupted run's: every file byte for byte (and every Parquet file's rows, which say
  where they differ if the bytes do);
- the evaluation's items (those of its completed run) equal the uninterrupted run's;
- LLM requests the killed process had sent and the resumed one sends again: only calls observed in flight at the
  kill (the fake had not answered them) or answered but not stored (``calls_at_kill`` says which and why);
- the process table holds nothing the killed process started, a few seconds after the kill: neither its
  descendants at the kill nor any process carrying its environment marker; the killed run is ``crashed`` after
  the resume, none ``running``.

``test_kill_9_of_a_command_leaves_no_temporary_prefect_server`` kills a ``hopforge`` command that had to start
Prefect's temporary server (a uvicorn child) and checks that it went with the command.
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

from testing.fake import Fault, RecordedRequest
from tests.reliability.harness import (
    KILL_OUTCOMES,
    Kill,
    Proc,
    Watched,
    calls_at_kill,
    marked_processes,
    process,
    request_digest,
    response_cache_key,
    still_running,
    stored_keys,
)
from tests.reliability.stage_child import CONCURRENCY, STAGES, config_for

REPO = Path(__file__).resolve().parents[2]

# Each answer leaves the fake after a draw from this range: longer than the child needs to send a batch of
# requests, so up to CONCURRENCY of them are in flight at once, and spread, so answers do not come in whole rounds.
LATENCY_S = (0.1, 0.4)
GRACE_S = 5.0  # how long the descendants of a killed process may take to end

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


def _chat(fake) -> list[RecordedRequest]:
    return [r for r in fake.requests if r.path.endswith("/chat/completions")]


def _settled(fake, quiet_s: float = 0.3) -> int:
    """The number of chat requests once the fake has recorded no new one for ``quiet_s``: a request a killed
    process had sent whole is recorded a moment after the kill, and belongs to the killed run, not the resume."""
    n = len(_chat(fake))
    while True:
        time.sleep(quiet_s)
        m = len(_chat(fake))
        if m == n:
            return n
        n = m


def _left_behind(kill: Kill, marker: str) -> list[Proc]:
    """What the killed process left running after ``GRACE_S``: its descendants at the kill, and any process that
    carries its marker (started from it, even one that left its tree). Each is killed here once listed, so that one
    failure does not spill into the next kill."""
    left = still_running(kill.descendants, GRACE_S)
    pids = {p.pid for p in left}
    left += [p for pid in marked_processes(marker) if pid not in pids and (p := process(pid)) is not None]
    for p in left:
        try:
            os.kill(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


class Stages:
    def __init__(self, fake, tmp_path: Path, api_url: str) -> None:
        self.fake, self.tmp, self.api_url = fake, tmp_path, api_url
        self.kill_at: int | None = None  # freeze the running child on this request number (1-based, since run())
        self.seen = 0
        self.child: Watched | None = None

    def predicate(self, body: dict[str, Any]) -> bool:  # first responder: counts, may kill, never answers
        self.seen += 1
        if self.kill_at is not None and self.seen == self.kill_at and self.child is not None:
            self.child.freeze()
        return False

    def run(self, data: Path, stages: list[str], *, kill_write: dict | None = None, kill_at: int | None = None,
            marker: str = "") -> tuple[subprocess.CompletedProcess, Kill | None]:
        cfg = {"data_dir": str(data), "base_url": self.fake.base_url, "stages": stages, "kill_write": kill_write}
        path = self.tmp / f"cfg-{uuid.uuid4().hex[:6]}.json"
        path.write_text(json.dumps(cfg))
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOPFORGE_")}
        env.update({"PYTHONPATH": str(REPO), "PREFECT_API_URL": self.api_url, "RELIABILITY_KILL_MARK": marker or "-"})
        self.seen, self.kill_at = 0, kill_at
        self.child = Watched([sys.executable, "-m", "tests.reliability.stage_child", str(path)], cwd=REPO, env=env)
        done = self.child.wait(600)
        kill = self.child.kill
        self.child, self.kill_at = None, None
        return done, kill


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


def _script(fake, st: Stages | None = None) -> None:
    from tests.test_graph_build import extraction_reply
    from tests.test_qa_flow import good_pick

    fake.set_fault(Fault(latency_range=LATENCY_S))
    if st is not None:
        fake.add(predicate=st.predicate, reply="never")
    fake.add(predicate=lambda b: b.get("model") == "policy-model",
             reply="<think>I follow the relations.</think><answer>Alan Turing</answer>")
    fake.add(schema_name="qa_pick_path", reply=good_pick)
    fake.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    fake.add(predicate=lambda b: "---Input Text---" in json.dumps(b["messages"]), reply=extraction_reply)


def _reference(st: Stages, fake, tmp_path: Path, failures: list[str]) -> tuple[dict[str, Path], dict[str, int]]:
    """The uninterrupted run, one process per stage, a copy of the data dir after each; the LLM calls per stage.

    It also checks what the kills' figures rest on: the fake stamped an answer on every request, and every answer a
    stage stored is found by ``response_cache_key`` from a request the stage sent (else a stored answer would pass
    for an unstored one, and the bound on repeated calls would be looser than it says)."""
    ref = tmp_path / "ref"
    checkpoints: dict[str, Path] = {}
    calls: dict[str, int] = {}
    for stage in STAGES:
        n0 = len(_chat(fake))
        stored0 = stored_keys(ref / "llm_cache.sqlite")
        done, _ = st.run(ref, [stage])
        assert done.returncode == 0, done.stdout[-4000:]
        sent = _chat(fake)[n0:_settled(fake)]
        calls[stage] = len(sent)
        new = stored_keys(ref / "llm_cache.sqlite") - stored0
        unknown = new - {response_cache_key(r.json) for r in sent}
        if unknown:
            failures.append(f"uninterrupted {stage}: {len(unknown)} of {len(new)} stored answers match no request's "
                            "cache key (harness.response_cache_key no longer computes the gateway's key)")
        if sent and not new:
            failures.append(f"uninterrupted {stage}: {len(sent)} LLM calls and no answer stored")
        unanswered = [r for r in sent if r.answered is None]
        if unanswered:
            failures.append(f"uninterrupted {stage}: {len(unanswered)} requests without an answered stamp")
        checkpoints[stage] = tmp_path / "checkpoints" / stage
        shutil.copytree(ref, checkpoints[stage])
    return checkpoints, calls


@pytest.mark.reliability_slow
def test_kill_9_and_resume_every_stage(prefect_harness, fake_llm, tmp_path):
    from prefect.settings import PREFECT_API_URL

    st = Stages(fake_llm, tmp_path, PREFECT_API_URL.value())
    _script(fake_llm, st)
    failures: list[str] = []
    t0 = time.perf_counter()
    checkpoints, calls = _reference(st, fake_llm, tmp_path, failures)
    ref_seconds = time.perf_counter() - t0
    ref = tmp_path / "ref"
    ref_tables, ref_raw = _export_view(ref / "exports" / "v1")
    ref_eval = _eval_view(ref)
    assert ref_tables and ref_eval and calls["generate"] and calls["distill"]
    # Enough calls that a stage's LLM work takes more than one round of CONCURRENCY, so kills find calls answered
    # and stored as well as calls in flight.
    assert max(calls.values()) > CONCURRENCY, calls

    most_in_flight = 0
    for i, stage in enumerate(STAGES):
        before = checkpoints[STAGES[i - 1]] if i else None
        row = {"stage": stage, "kills": 0, "identical": True, "in_flight": 0, "unstored": 0, "repeated": 0,
               "children": 0, "left": 0, "crashed": 0, "seconds": 0.0, "llm_calls": calls[stage], "per_kill": []}
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
                killed, kill = st.run(work, [stage], kill_at=max(1, round(point[1] * calls[stage])), marker=marker)
            else:
                killed, kill = st.run(work, [stage], kill_write={"table": point[1], "nth": point[2]}, marker=marker)
            where = f"{stage} {'/'.join(map(str, point))}"
            if killed.returncode != -signal.SIGKILL or kill is None:
                failures.append(f"{where}: the process was not killed (status {killed.returncode}): "
                                f"{killed.stdout[-1500:]}")
                continue
            row["kills"] += 1
            left = _left_behind(kill, marker)
            n1 = _settled(fake_llm)
            seen = calls_at_kill(_chat(fake_llm)[n0:n1], kill.at, stored_keys(work / "llm_cache.sqlite"))
            resumed, _ = st.run(work, list(STAGES[i:]))
            if resumed.returncode != 0:
                failures.append(f"{where}: the resume failed: {resumed.stdout[-3000:]}")
                continue
            repeated = seen.sent & {request_digest(r.json) for r in _chat(fake_llm)[n1:]}
            beyond = repeated - seen.in_flight - seen.unstored
            most_in_flight = max(most_in_flight, len(seen.in_flight))
            tables, raw = _export_view(work / "exports" / "v1")
            same_rows = tables == ref_tables
            same_eval = _eval_view(work) == ref_eval
            states = _run_states(work)
            row["identical"] &= same_rows and same_eval
            row["in_flight"] += len(seen.in_flight)
            row["unstored"] += len(seen.unstored)
            row["repeated"] += len(repeated)
            row["children"] += len(kill.descendants)
            row["left"] += len(left)
            row["crashed"] += states.get("crashed", 0)
            row["per_kill"].append({"where": where, "sent": len(seen.sent), "in_flight": len(seen.in_flight),
                                    "unstored": len(seen.unstored), "repeated": len(repeated)})
            if not same_rows:
                diff = [n for n in sorted(set(tables) | set(ref_tables)) if tables.get(n) != ref_tables.get(n)]
                failures.append(f"{where}: export rows differ from the uninterrupted run's in {diff}")
            if not same_eval:
                failures.append(f"{where}: evaluation items differ from the uninterrupted run's")
            if beyond:
                failures.append(f"{where}: {len(beyond)} LLM requests repeated on resume that were answered and "
                                f"stored before the kill ({len(repeated)} repeated; {len(seen.in_flight)} in flight, "
                                f"{len(seen.unstored)} answered but not stored at the kill)")
            if left:
                failures.append(f"{where}: the killed process left {len(left)} processes running {GRACE_S:g} s "
                                f"after the kill: {left}")
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
    # At concurrency 1 a kill finds one call in flight at most: more shows the stages' calls really overlapped.
    if most_in_flight <= 1:
        failures.append(f"no kill found more than {most_in_flight} LLM call in flight (concurrency {CONCURRENCY})")
    assert not failures, "\n".join(failures)


@pytest.mark.reliability_slow
def test_kill_9_of_a_command_leaves_no_temporary_prefect_server(prefect_harness, fake_llm, tmp_path):
    """``hopforge qa generate`` with no Prefect server to use starts Prefect's temporary one (``python -m uvicorn``,
    a child of the command). Killed with SIGKILL in the middle of its flow (at its first LLM request, when the
    server is up and recording the run), the command must take that server, and every other descendant, with it."""
    from prefect.settings import PREFECT_API_URL

    st = Stages(fake_llm, tmp_path, PREFECT_API_URL.value())
    _script(fake_llm, st)
    data = tmp_path / "data"
    done, _ = st.run(data, ["import"])  # a graph to ask about, recorded in the test's own Prefect server
    assert done.returncode == 0, done.stdout[-4000:]
    config = tmp_path / "hopforge.yaml"
    config.write_text(json.dumps(config_for({"data_dir": data, "base_url": fake_llm.base_url})))  # JSON is YAML
    marker = uuid.uuid4().hex
    # No Prefect API configured and a fresh PREFECT_HOME (no `hopforge server` state): the command must start the
    # temporary server. The server's first start in a fresh home migrates its database (~30 s on 2 cores).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOPFORGE_", "PREFECT_"))}
    env.update({"PYTHONPATH": str(REPO), "PREFECT_HOME": str(tmp_path / "prefect-home"),
                "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "RELIABILITY_KILL_MARK": marker})
    st.kill_at = 1
    st.child = Watched([sys.executable, "-m", "flows.cli", "qa", "generate", "-c", str(config), "--domain", "cs",
                        "--seeds", "6", "--attempts", "2"], cwd=REPO, env=env)
    t0 = time.perf_counter()
    done = st.child.wait(300)
    kill = st.child.kill
    st.child, st.kill_at = None, None
    assert kill is not None and done.returncode == -signal.SIGKILL, (
        f"the command was not killed at its first LLM request (status {done.returncode}): {done.stdout[-3000:]}")
    servers = [p for p in kill.descendants if "uvicorn" in p.command]
    left = _left_behind(kill, marker)
    KILL_OUTCOMES.append({"stage": "cli+temp api", "kills": 1, "identical": True, "in_flight": 0, "repeated": 0,
                          "children": len(kill.descendants), "left": len(left), "crashed": 0,
                          "seconds": time.perf_counter() - t0})
    assert servers, f"no temporary Prefect server among the command's processes at the kill: {kill.descendants}"
    assert not left, (f"the killed command left {len(left)} processes running {GRACE_S:g} s after the kill: {left} "
                      f"(its processes at the kill: {kill.descendants})")
