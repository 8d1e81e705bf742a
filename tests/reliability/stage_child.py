"""One factory stage in a process of its own, for the kill -9 tests: ``python -m tests.reliability.stage_child CFG``.

CFG (JSON): ``data_dir``, ``base_url`` (the loopback fake, served by the test process), ``stages`` (run in order) and optionally
``concurrency`` (every role's ``max_concurrency``; default ``CONCURRENCY``) and
``kill_write`` = ``{"table": ..., "nth": n}``: stop this process (SIGSTOP) inside the transaction of the n-th write to
that table (``"files"``: the n-th file the export writes; ``"tx"``: the n-th transaction of any kind), before it
commits. The test sees it stopped, notes what it left (its descendants, the calls in flight) and SIGKILLs it: every
thread is frozen at the kill point, exactly as a SIGKILL there would leave them, and the test can look first.

Every role may keep ``CONCURRENCY`` requests in flight, as the benchmarks run (bench/bench_pipeline.py), so a kill
finds many calls in flight; the test observes which ones at the fake."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "flows" / "demo"
STAGES = ("ingest", "build", "import", "generate", "paths", "distill", "eval", "export")
CONCURRENCY = 64  # bench/bench_pipeline.py's --concurrency default: max_concurrency of every role
N_SEEDS = 40  # seeds of the generate stage: enough questions that the later LLM stages run more than one round


def config_for(cfg: dict) -> dict:
    """The settings of a stage, as ``load_settings`` keywords (or a config file's contents)."""
    roles = {r: {"base_url": cfg["base_url"], "model": "policy-model" if r == "policy" else "fake-model",
                 "max_retries": 0, "timeout_s": 20, "max_concurrency": cfg.get("concurrency", CONCURRENCY)}
             for r in ("extractor", "generator", "verifier", "teacher", "judge", "policy")}
    # As in tests/conftest.py (whose HOPFORGE_ variables the parent keeps from this process): the loopback fake is
    # not the embedded model, so the meaning check's "auto" would ask the verifier about fact sheets it does not read.
    return {"data_dir": str(cfg["data_dir"]), "roles": roles, "seed": 7, "quality": {"meaning_check": "off"},
            "embeddings": {"base_url": cfg["base_url"], "model": "e", "dim": 16}}


def settings_for(cfg: dict):
    from schemas.config import load_settings

    return load_settings(**config_for(cfg))


def _stop_here() -> None:
    """The kill point: tell the watching test (``harness.Watched``), then freeze every thread of the process; the
    test kills it once it has looked (SIGKILL after SIGSTOP, should anything continue it)."""
    if fd := os.environ.get("RELIABILITY_STOP_FD"):
        os.write(int(fd), b"s")
    os.kill(os.getpid(), signal.SIGSTOP)
    os.kill(os.getpid(), signal.SIGKILL)


def _arm_write_kill(spec: dict) -> None:
    from warehouse.db import Warehouse

    seen = {"n": 0}
    if spec["table"] == "files":
        import pathlib

        real_write = pathlib.Path.write_bytes

        def write_bytes(self, data):
            seen["n"] += 1
            n = real_write(self, data)
            if seen["n"] == spec["nth"]:
                _stop_here()
            return n

        pathlib.Path.write_bytes = write_bytes  # type: ignore[method-assign]
        return
    if spec["table"] == "tx":  # the n-th transaction of the process, after its statements, before COMMIT
        from contextlib import contextmanager

        real_tx = Warehouse.transaction

        @contextmanager
        def transaction(self):
            with real_tx(self) as con:
                yield con
                seen["n"] += 1
                if seen["n"] == spec["nth"]:
                    _stop_here()

        Warehouse.transaction = transaction  # type: ignore[method-assign]
        return
    real = Warehouse.write_batch

    def write_batch(self, table, records, *, replace=False, con=None):
        records = list(records)
        if table == spec["table"] and records:
            seen["n"] += 1
            if seen["n"] == spec["nth"]:
                if con is not None:
                    real(self, table, records, replace=replace, con=con)
                else:
                    with self.transaction() as tx:
                        real(self, table, records, replace=replace, con=tx)
                        _stop_here()
                _stop_here()  # inside the caller's open transaction
        return real(self, table, records, replace=replace, con=con)

    Warehouse.write_batch = write_batch  # type: ignore[method-assign]


def _ask_every_relation(settings) -> None:
    """The user's profiles, stored as `hopforge graph profiles import` would: every relation of the demo cs graph
    names one thing each way. Kills and resumes are tested here, not what may be asked: with the shipped lexicon few
    seeds of the graph can start a path, and the stages would have too little work (too few export files) to kill."""
    from tasks.graph.importers import read_triples
    from testing.permissive_profiles import store_one_each_way
    from warehouse.db import Warehouse

    with Warehouse(settings.warehouse_path) as wh:
        store_one_each_way(wh, [read_triples(DEMO / "graphs" / "cs.jsonl", "cs").to_graph()])


def run_stage(stage: str, settings) -> dict:
    from flows.distill import distill_trajectories
    from flows.evaluate import evaluate_policy
    from flows.export import export_datasets
    from flows.graphs import build_graphs, import_graphs, ingest_corpus
    from flows.qa import generate_qa, verify_paths

    if stage == "ingest":
        return ingest_corpus(source=str(DEMO / "corpus" / "cs"), source_kind="folder", settings=settings)
    if stage == "build":
        return build_graphs(domains=["cs"], gleaning=0, settings=settings)
    if stage == "import":
        out = import_graphs(files={"cs": str(DEMO / "graphs" / "cs.jsonl")}, settings=settings)
        _ask_every_relation(settings)
        return out
    if stage == "generate":
        return generate_qa(domains=["cs"], n_seeds=N_SEEDS, modes=["candidates"], writer="llm", max_attempts=2,
                           settings=settings)
    if stage == "paths":
        return verify_paths(domains=["cs"], settings=settings)
    if stage == "distill":
        return distill_trajectories(domains=["cs"], kinds=("template", "rollouts", "cot"), n_rollouts=1,
                                    max_rounds=2, max_tokens_per_round=200, cot_max_tokens=200, settings=settings)
    if stage == "eval":
        return evaluate_policy(split=None, modes=("tools", "no_tools"), domains=["cs"], max_rounds=2,
                               max_tokens_per_round=200, settings=settings)
    if stage == "export":
        return export_datasets(version="v1", settings=settings)
    raise SystemExit(f"unknown stage {stage}")


def main() -> None:
    cfg = json.loads(Path(sys.argv[1]).read_text())
    if cfg.get("kill_write"):
        _arm_write_kill(cfg["kill_write"])
    settings = settings_for(cfg)
    for stage in cfg["stages"]:
        out = run_stage(stage, settings)
        print(f"STAGE-DONE {stage} " + json.dumps({"run_id": out.get("run_id")}), flush=True)
    sys.stdout.flush()
    os._exit(0)  # LightRAG's worker threads can keep a finished process alive


if __name__ == "__main__":
    main()
