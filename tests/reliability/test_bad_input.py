"""Bad input, table-driven: each case is a bad input given to the CLI as a person types it, or to a flow as a
deployment calls it. Every case must end with its documented exit status (README "Exit statuses"), one clear
message naming the input and the fix, no traceback, the warehouse unchanged (a failed run's own record allowed),
and, where the input can be checked up front, no flow run started. The figures are printed as a table at the end
of the session (tests/reliability/conftest.py)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.harness import OUTCOMES, Outcome, warehouse_changes, warehouse_digest

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "flows" / "demo"
GOOD_ROW = json.dumps({"context": "Alan Turing worked at Bletchley Park during the Second World War. " * 3})


# -- the base warehouse every case starts from ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def base_data(tmp_path_factory, prefect_harness):
    """A data dir with an ingested corpus, an imported graph and questions: something bad input could damage."""
    from flows.graphs import import_graphs, ingest_corpus
    from flows.qa import generate_qa
    from schemas.config import load_settings

    data = tmp_path_factory.mktemp("base") / "data"
    settings = load_settings(data_dir=data)
    ingest_corpus(source=str(DEMO / "corpus" / "cs"), source_kind="folder", settings=settings)
    import_graphs(files={"cs": str(DEMO / "graphs" / "cs.jsonl")}, settings=settings)
    generate_qa(domains=["cs"], n_seeds=4, writer="template", use_judge=False, settings=settings)
    return data


@dataclass
class Case:
    group: str
    kind: str
    argv: list[str] | None = None  # CLI words; {d} = the case's scratch dir
    call: Callable[[Path, Any], Any] | None = None  # a flow as a deployment calls it: call(scratch, settings)
    setup: Callable[[Path, Path], None] | None = None  # setup(scratch, data_dir)
    env: dict[str, str] = field(default_factory=dict)
    code: int = 2
    says: tuple[str, ...] = ()  # what the message must contain (the input, the fix), case-insensitive
    upfront: bool = True  # refused before a flow run starts (no runs row, no Prefect flow run)
    skip_report: bool = False  # a reported skip (exit 0): the run completes and names the file and line

    @property
    def id(self) -> str:
        return f"{self.group}-{self.kind}"


def _write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _corpus(name: str, data: bytes | str) -> Callable[[Path, Path], None]:
    return lambda d, _data: _write(d / "corpus" / name, data) and None


def _file(name: str, data: bytes | str) -> Callable[[Path, Path], None]:
    return lambda d, _data: _write(d / name, data) and None


def _hold_lock(d: Path, data: Path) -> None:
    """Another process opens the warehouse for writing and keeps it open (killed at the end of the case)."""
    code = ("import duckdb, sys, time; con = duckdb.connect(sys.argv[1]); print('ready', flush=True); time.sleep(120)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(data / "warehouse.duckdb")], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "ready"
    _LOCKERS.append(proc)


_LOCKERS: list[subprocess.Popen] = []

GRAPHML_HEAD = ('<?xml version="1.0" encoding="utf-8"?>\n<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n'
                '<key id="d0" for="node" attr.name="entity_type" attr.type="string"/>\n'
                '<key id="d1" for="node" attr.name="description" attr.type="string"/>\n'
                '<key id="d2" for="edge" attr.name="description" attr.type="string"/>\n'
                '<graph edgedefault="undirected">\n'
                '<node id="Alan Turing"><data key="d0">person</data><data key="d1">A mathematician.</data></node>\n'
                '<node id="Bletchley Park"><data key="d0">location</data><data key="d1">A codebreaking site.</data></node>\n')


def _flow(name: str, **kwargs: Any) -> Callable[[Path, Any], Any]:
    def call(d: Path, settings: Any) -> Any:
        import flows.distill
        import flows.evaluate
        import flows.export
        import flows.graphs
        import flows.qa

        fn = {"generate_qa": flows.qa.generate_qa, "verify_paths": flows.qa.verify_paths,
              "distill_trajectories": flows.distill.distill_trajectories,
              "evaluate_policy": flows.evaluate.evaluate_policy, "export_datasets": flows.export.export_datasets,
              "build_graphs": flows.graphs.build_graphs, "ingest_corpus": flows.graphs.ingest_corpus,
              "import_graphs": flows.graphs.import_graphs}[name]
        args = {k: (v.format(d=d) if isinstance(v, str) else v) for k, v in kwargs.items()}
        return fn(settings=settings, **args)

    return call


CASES: list[Case] = [
    # -- corpus -------------------------------------------------------------------------------------------------
    Case("corpus", "empty-file", ["ingest", "{d}/corpus/cs.jsonl"], setup=_corpus("cs.jsonl", b""),
         says=("cs.jsonl", "empty"), upfront=False),
    Case("corpus", "binary-file", ["ingest", "{d}/corpus/cs.jsonl"], setup=_corpus("cs.jsonl", b"\x00\x01\x02PK\x03" * 500),
         says=("cs.jsonl", "binary"), upfront=False),
    Case("corpus", "non-utf8-row", ["ingest", "{d}/corpus/cs.jsonl"],
         setup=_corpus("cs.jsonl", GOOD_ROW.encode() + b'\n{"context": "caf\xe9 \xe9t\xe9"}\n'),
         code=0, skip_report=True, says=("cs.jsonl:2", "utf-8")),
    Case("corpus", "long-line", ["ingest", "{d}/corpus/cs.jsonl"],
         setup=_corpus("cs.jsonl", GOOD_ROW + "\n" + json.dumps({"context": "x" * (11 * 1024 * 1024)}) + "\n"),
         code=0, skip_report=True, says=("cs.jsonl:2", "long")),
    Case("corpus", "bad-json-mid-file", ["ingest", "{d}/corpus/cs.jsonl"],
         setup=_corpus("cs.jsonl", GOOD_ROW + '\n{"context": "unfinished\n' + GOOD_ROW.replace("Alan", "Ada") + "\n"),
         code=0, skip_report=True, says=("cs.jsonl:2", "json")),
    Case("corpus", "missing-field", ["ingest", "{d}/corpus/cs.jsonl"],
         setup=_corpus("cs.jsonl", GOOD_ROW + '\n{"text": "no context here"}\n'),
         code=0, skip_report=True, says=("cs.jsonl:2", "context")),
    Case("corpus", "wrong-type-field", ["ingest", "{d}/corpus/cs.jsonl"],
         setup=_corpus("cs.jsonl", GOOD_ROW + '\n{"context": 42}\n'),
         code=0, skip_report=True, says=("cs.jsonl:2", "context")),
    Case("corpus", "only-bad-rows", ["ingest", "{d}/corpus/cs.jsonl"],
         setup=_corpus("cs.jsonl", '{"text": 1}\nnot json\n'), says=("cs.jsonl", "nothing"), upfront=False),
    Case("corpus", "missing-path", ["ingest", "{d}/nowhere/cs.jsonl"], says=("nowhere", "no such file")),
    Case("corpus", "wrong-file-kind", ["ingest", "{d}/corpus/cs.csv"], setup=_corpus("cs.csv", "a,b\n1,2\n"),
         says=("cs.csv", ".jsonl")),
    Case("corpus", "unknown-domain", ["ingest", "{d}/corpus/notadomain.jsonl"],
         setup=_corpus("notadomain.jsonl", GOOD_ROW + "\n"), says=("notadomain", "allow-new-domains")),
    Case("corpus", "empty-folder", ["ingest", "{d}/corpus"], setup=lambda d, _: (d / "corpus").mkdir(),
         says=("corpus", "no")),
    Case("corpus", "unknown-kind", ["ingest", "{d}/corpus/cs.jsonl", "--kind", "xml"],
         setup=_corpus("cs.jsonl", GOOD_ROW + "\n"), says=("xml", "jsonl")),
    Case("corpus", "negative-chunk-size", ["ingest", "{d}/corpus/cs.jsonl", "--chunk-tokens", "-5"],
         setup=_corpus("cs.jsonl", GOOD_ROW + "\n"), says=("chunk", "-5")),
    # -- graphs -------------------------------------------------------------------------------------------------
    Case("graph", "graphml-dangling-edge", ["graph", "import", "{d}/g.graphml", "-d", "cs"],
         setup=_file("g.graphml", GRAPHML_HEAD + '<edge source="Alan Turing" target="Nobody"><data key="d2">x</data></edge>\n'
                     '<edge source="Alan Turing" target="Bletchley Park"><data key="d2">worked at</data></edge>\n'
                     "</graph></graphml>\n"),
         code=0, skip_report=True, says=("nobody",)),
    Case("graph", "graphml-truncated", ["graph", "import", "{d}/g.graphml", "-d", "cs"],
         setup=_file("g.graphml", GRAPHML_HEAD[:-40]), says=("g.graphml",), upfront=False),
    Case("graph", "triples-newline-in-name", ["graph", "import", "{d}/t.jsonl", "-d", "cs"],
         setup=_file("t.jsonl", json.dumps({"head": "Alan\nTuring", "relation": "worked at", "tail": "Bletchley\tPark"})
                     + "\n" + json.dumps({"head": "Ada", "relation": "knew", "tail": "Babbage"}) + "\n"),
         code=0, skip_report=True, says=("t.jsonl:1",)),
    Case("graph", "tsv-wrong-columns", ["graph", "import", "{d}/t.tsv", "-d", "cs"],
         setup=_file("t.tsv", "Alan Turing\tworked at\tBletchley Park\textra\nAda\tknew\n"), says=("t.tsv",),
         upfront=False),
    Case("graph", "zero-valid-rows", ["graph", "import", "{d}/t.jsonl", "-d", "cs"],
         setup=_file("t.jsonl", '{"x": 1}\n{"y": 2}\n'), says=("t.jsonl",), upfront=False),
    Case("graph", "missing-file", ["graph", "import", "{d}/none.graphml", "-d", "cs"], says=("none.graphml", "no such")),
    Case("graph", "directory-as-file", ["graph", "import", "{d}", "-d", "cs"], says=("directory",)),
    Case("graph", "bad-domain-name", ["graph", "import", "{d}/t.jsonl", "-d", "../etc"],
         setup=_file("t.jsonl", json.dumps({"head": "Ada", "relation": "knew", "tail": "Babbage"}) + "\n"),
         says=("../etc", "domain")),
    Case("graph", "unknown-kind", ["graph", "import", "{d}/t.jsonl", "-d", "cs", "--kind", "csv"],
         setup=_file("t.jsonl", json.dumps({"head": "Ada", "relation": "knew", "tail": "Babbage"}) + "\n"),
         says=("csv", "graphml")),
    # -- configuration ------------------------------------------------------------------------------------------
    Case("config", "unknown-key-file", ["config", "show", "-c", "{d}/c.toml"], setup=_file("c.toml", 'datadir = "x"\n'),
         says=("datadir", "data_dir")),
    Case("config", "misspelt-role-file", ["config", "show", "-c", "{d}/c.toml"],
         setup=_file("c.toml", '[roles.genrator]\nmodel = "m"\n'), says=("genrator", "generator")),
    Case("config", "unknown-env-var", ["config", "show"], env={"HOPFORGE_DATADIR": "/tmp/x"},
         says=("HOPFORGE_DATADIR", "HOPFORGE_DATA_DIR")),
    Case("config", "unrelated-env-var", ["config", "show"], env={"HOPFORGE_ZQXW": "1"}, code=0, skip_report=True,
         says=("HOPFORGE_ZQXW", "not a hopforge setting")),
    Case("config", "misspelt-role-env", ["config", "show"], env={"HOPFORGE_ROLES__GENRATOR__MODEL": "m"},
         says=("genrator", "generator")),
    Case("config", "misspelt-nested-env", ["config", "show"], env={"HOPFORGE_ROLES__GENERATOR__MAX_CONCURENCY": "4"},
         says=("max_concurency", "max_concurrency")),
    Case("config", "wrong-type", ["config", "show", "-c", "{d}/c.toml"],
         setup=_file("c.toml", '[roles.generator]\nmax_concurrency = "many"\n'), says=("max_concurrency", "integer")),
    Case("config", "wrong-type-env", ["config", "show"], env={"HOPFORGE_SEED": "abc"}, says=("seed", "HOPFORGE_SEED")),
    Case("config", "negative-limit", ["config", "show", "-c", "{d}/c.yaml"],
         setup=_file("c.yaml", "roles:\n  judge:\n    timeout_s: -1\n"), says=("timeout_s", "positive")),
    Case("config", "url-without-scheme", ["config", "show"],
         env={"HOPFORGE_ROLES__GENERATOR__BASE_URL": "gpu-node:8000/v1", "HOPFORGE_ROLES__GENERATOR__MODEL": "m"},
         says=("base_url", "http://")),
    Case("config", "invalid-toml", ["config", "show", "-c", "{d}/c.toml"], setup=_file("c.toml", "seed = [1,\n"),
         says=("c.toml", "toml")),
    Case("config", "invalid-yaml", ["config", "show", "-c", "{d}/c.yaml"], setup=_file("c.yaml", "seed: [1,\n  x: :\n"),
         says=("c.yaml", "yaml")),
    Case("config", "yaml-not-a-mapping", ["config", "show", "-c", "{d}/c.yaml"], setup=_file("c.yaml", "- 1\n- 2\n"),
         says=("c.yaml", "mapping")),
    Case("config", "missing-file", ["config", "show", "-c", "{d}/none.toml"], says=("none.toml", "does not exist")),
    Case("config", "missing-file-env", ["config", "show"], env={"HOPFORGE_CONFIG": "{d}/none.toml"},
         says=("none.toml", "HOPFORGE_CONFIG")),
    Case("config", "directory", ["config", "show", "-c", "{d}"], says=("directory",)),
    Case("config", "latin-1-file", ["config", "show", "-c", "{d}/c.toml"],
         setup=_file("c.toml", '# r\xe9glages\nseed = 1\n'.encode("latin-1")), says=("c.toml", "utf-8")),
    Case("config", "wrong-suffix", ["config", "show", "-c", "{d}/c.ini"], setup=_file("c.ini", "seed=1\n"),
         says=("c.ini", ".toml")),
    Case("config", "data-dir-is-a-file", ["warehouse", "tables"], setup=_file("afile", "x"),
         env={"HOPFORGE_DATA_DIR": "{d}/afile"}, says=("afile", "data_dir")),
    Case("config", "data-dir-is-a-file-flow", ["ingest", "{d}/corpus/cs.jsonl"],
         setup=lambda d, data: (_write(d / "afile", "x"), _write(d / "corpus" / "cs.jsonl", GOOD_ROW + "\n")) and None,
         env={"HOPFORGE_DATA_DIR": "{d}/afile"}, says=("afile", "data_dir")),
    # -- warehouse ----------------------------------------------------------------------------------------------
    Case("warehouse", "not-duckdb", ["warehouse", "tables"], setup=_file("wh.duckdb", "hello, not a database\n" * 100),
         env={"HOPFORGE_WAREHOUSE": "{d}/wh.duckdb"}, says=("wh.duckdb", "not a valid duckdb")),
    Case("warehouse", "truncated", ["warehouse", "tables"],
         setup=lambda d, data: _write(d / "wh.duckdb", (data / "warehouse.duckdb").read_bytes()[:20000]) and None,
         env={"HOPFORGE_WAREHOUSE": "{d}/wh.duckdb"}, says=("wh.duckdb",)),
    Case("warehouse", "truncated-flow", ["ingest", "{d}/corpus/cs.jsonl"],
         setup=lambda d, data: (_write(d / "wh.duckdb", (data / "warehouse.duckdb").read_bytes()[:20000]),
                                _write(d / "corpus" / "cs.jsonl", GOOD_ROW + "\n")) and None,
         env={"HOPFORGE_WAREHOUSE": "{d}/wh.duckdb"}, says=("wh.duckdb",)),
    Case("warehouse", "locked-write", ["ingest", "{d}/corpus/cs.jsonl"],
         setup=lambda d, data: (_write(d / "corpus" / "cs.jsonl", GOOD_ROW + "\n"), _hold_lock(d, data)) and None,
         says=("locked", "process")),
    Case("warehouse", "locked-read", ["warehouse", "tables"], setup=_hold_lock, says=("locked", "process")),
    Case("warehouse", "export-delete", ["warehouse", "export", "DELETE FROM qa", "{d}/out.parquet"],
         says=("delete", "select")),
    Case("warehouse", "export-drop", ["warehouse", "export", "SELECT 1; DROP TABLE qa", "{d}/out.parquet"],
         says=("select",)),
    Case("warehouse", "export-bad-sql", ["warehouse", "export", "SELEC * FRM qa", "{d}/out.parquet"],
         says=("selec", "select")),
    Case("warehouse", "export-unknown-table", ["warehouse", "export", "no_such_table", "{d}/out.parquet"],
         says=("no_such_table",)),
    Case("warehouse", "export-unwritable-dest", ["warehouse", "export", "qa", "{d}/afile/out.parquet"],
         setup=_file("afile", "x"), says=("afile",)),
    # -- flow parameters through the CLI --------------------------------------------------------------------------
    Case("params", "negative-seeds-cli", ["qa", "generate", "--seeds", "-3"], says=("--seeds", "-3")),
    Case("params", "unknown-mode-cli", ["qa", "generate", "-m", "bogus"], says=("bogus", "candidates")),
    Case("params", "share-out-of-range-cli", ["qa", "generate", "--short-share", "1.5"], says=("--short-share", "1.5")),
    Case("params", "zero-attempts-cli", ["qa", "generate", "--attempts", "0"], says=("--attempts", "0")),
    Case("params", "unknown-domain-cli", ["qa", "generate", "-d", "nosuch"], says=("nosuch", "cs")),
    Case("params", "invalid-domain-cli", ["qa", "paths", "-d", "../etc"], says=("../etc",)),
    Case("params", "unknown-split-cli", ["eval", "run", "--split", "bogus"], says=("bogus", "test")),
    Case("params", "unknown-traj-kind-cli", ["traj", "distill", "-k", "bogus"], says=("bogus", "template")),
    Case("params", "negative-rollouts-cli", ["traj", "distill", "--rollouts", "-1"], says=("rollouts", "-1")),
    Case("params", "negative-max-paths-cli", ["qa", "paths", "--max-paths", "-1"], says=("max-paths", "-1")),
    Case("params", "zero-limit-cli", ["eval", "run", "--limit", "0"], says=("limit", "0")),
    # -- flow parameters as a deployment calls them -------------------------------------------------------------
    Case("flow", "negative-seed-count", call=_flow("generate_qa", n_seeds=-1), says=("n_seeds", "-1")),
    Case("flow", "unknown-mode", call=_flow("generate_qa", modes=["bogus"]), says=("bogus", "candidates")),
    Case("flow", "zero-attempts", call=_flow("generate_qa", max_attempts=0), says=("max_attempts", "0")),
    Case("flow", "share-out-of-range", call=_flow("generate_qa", hop_mix={"1-2": 1.5, "3+": -0.5}),
         says=("hop_mix", "1.5")),
    Case("flow", "bad-split-proportions", call=_flow("generate_qa", split_proportions={"train": 2.0, "tset": -1.0}),
         says=("split_proportions",)),
    Case("flow", "unknown-domain", call=_flow("generate_qa", domains=["nosuch"]), says=("nosuch", "cs"), upfront=False),
    Case("flow", "unknown-domain-paths", call=_flow("verify_paths", domains=["nosuch"]), says=("nosuch", "cs"),
         upfront=False),
    Case("flow", "negative-max-paths", call=_flow("verify_paths", max_paths=-1), says=("max_paths", "-1")),
    Case("flow", "unknown-traj-kind", call=_flow("distill_trajectories", kinds=["bogus"]), says=("bogus", "template")),
    Case("flow", "negative-rollouts", call=_flow("distill_trajectories", n_rollouts=-1), says=("n_rollouts", "-1")),
    Case("flow", "unknown-eval-mode", call=_flow("evaluate_policy", modes=("bogus",)), says=("bogus", "tools")),
    Case("flow", "zero-eval-limit", call=_flow("evaluate_policy", limit=0), says=("limit", "0")),
    Case("flow", "missing-source", call=_flow("build_graphs", source="{d}/nowhere"), says=("nowhere", "no such")),
    Case("flow", "unknown-source-kind", call=_flow("ingest_corpus", source=str(DEMO / "corpus" / "cs"), source_kind="xml"),
         says=("xml", "jsonl")),
    Case("flow", "negative-chunk-size", call=_flow("ingest_corpus", source=str(DEMO / "corpus" / "cs"),
                                                    chunk_token_size=-1), says=("chunk_token_size",)),
    Case("flow", "import-missing-file", call=_flow("import_graphs", files={"cs": "{d}/none.graphml"}),
         says=("none.graphml",)),
    # -- exports ------------------------------------------------------------------------------------------------
    Case("export", "unsafe-version", ["export", "--version", "../up"], says=("../up", "version")),
    Case("export", "unknown-config", ["export", "--include", "bogus"], says=("bogus", "sft")),
    Case("export", "unwritable-target", ["export", "--version", "v1"],
         setup=lambda d, data: _write(data / "exports", "a file where the exports folder goes") and None,
         says=("exports", "writ"), upfront=False),
    Case("export", "unknown-version-train", ["train", "sft", "-m", "{d}", "--export", "nosuch", "--dry-run"],
         says=("nosuch", "export")),
    Case("export", "unknown-version-flow", call=_flow("export_datasets", version="../x"), says=("../x", "version")),
]


class _TracebackCatcher(logging.Handler):
    """Log records that carry a traceback (Prefect logs a failed run's exception with one)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.tracebacks: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.exc_text:
            self.tracebacks.append(f"{record.name}: {record.getMessage()[:200]}")


def _cli(argv: list[str], env: dict[str, str]) -> tuple[int, str, BaseException | None]:
    from typer.testing import CliRunner

    from flows.cli import app

    result = CliRunner().invoke(app, argv, env=env)
    exc = result.exception if not isinstance(result.exception, SystemExit) else None
    return result.exit_code, result.output, exc


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input(case: Case, base_data: Path, tmp_path: Path, monkeypatch):
    from prefect.flows import Flow

    from schemas.errors import HopforgeError

    scratch = tmp_path / "case"
    scratch.mkdir()
    data = tmp_path / "data"
    shutil.copytree(base_data, data)
    env = {"HOPFORGE_DATA_DIR": str(data)}
    env.update({k: v.format(d=scratch) for k, v in case.env.items()})
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    before = warehouse_digest(data / "warehouse.duckdb")
    if case.setup:
        case.setup(scratch, data)
    started: list[str] = []
    logged = _TracebackCatcher()
    logging.getLogger("prefect").addHandler(logged)
    logging.getLogger().addHandler(logged)
    real_call = Flow.__call__

    def counting_call(self, *args, **kwargs):
        started.append(self.name)
        return real_call(self, *args, **kwargs)

    monkeypatch.setattr(Flow, "__call__", counting_call)
    t0 = time.perf_counter()
    notes: list[str] = []
    try:
        if case.argv is not None:
            code, text, exc = _cli([a.format(d=scratch) for a in case.argv], env)
            via = "cli"
        else:
            from schemas.config import load_settings

            via = "flow"
            exc, text, code = None, "", 0
            try:
                case.call(scratch, load_settings())
            except HopforgeError as e:
                code, text = e.exit_code, f"{e.label}: {e}"
            except Exception as e:  # noqa: BLE001 - recorded as a failure of the case, with its type
                code, exc, text = 1, e, f"{type(e).__name__}: {e}"
    finally:
        logging.getLogger("prefect").removeHandler(logged)
        logging.getLogger().removeHandler(logged)
        for proc in _LOCKERS:
            proc.kill()
            proc.wait()
        _LOCKERS.clear()
    seconds = time.perf_counter() - t0
    traceback = exc is not None or "Traceback" in text or bool(logged.tracebacks)
    if exc is not None:
        notes.append(f"raised {type(exc).__name__}: {str(exc)[:300]}")
    if logged.tracebacks:
        notes.append(f"logged with a traceback: {logged.tracebacks[:3]}")
    flat = " ".join(text.split()).lower()
    missing = [s for s in case.says if s.lower() not in flat]
    clear = not missing and bool(flat.strip())
    if missing:
        notes.append(f"message lacks {missing}: {flat[:400]!r}")
    after = warehouse_digest(data / "warehouse.duckdb")
    changes = [] if not before else warehouse_changes(before, after, allow_own_run=True)
    if case.skip_report:  # the run completes: only its own record and what the good rows added
        changes = [c for c in changes if c.startswith("runs row") or "left 'running'" in c]
    new_runs = set(after.get("runs", {})) - set(before.get("runs", {}))
    upfront = None
    if case.upfront and not case.skip_report:
        upfront = not started and not new_runs if case.argv is not None else not new_runs
        if not upfront:
            notes.append(f"not refused up front: flows started {started}, new runs {sorted(new_runs)}")
    outcome = Outcome(case.group, case.kind, via, code, case.code, clear, traceback, len(changes), upfront, seconds,
                      notes + changes)
    OUTCOMES.append(outcome)
    assert outcome.handled, (code, notes, changes, text[-2000:])


# -- the same through a real process, as a person types it -------------------------------------------------------
SUBPROCESS_CASES = ["config-unknown-env-var", "config-directory", "corpus-missing-path", "warehouse-not-duckdb",
                    "warehouse-export-delete", "params-unknown-mode-cli", "graph-bad-domain-name", "config-latin-1-file"]


def test_bad_input_as_a_process(base_data: Path, tmp_path: Path):
    """A sample of the cases through `python -m flows.cli` in parallel: the documented status, the message on
    stderr, no traceback, and the process ends."""
    by_id = {c.id: c for c in CASES}
    procs = []
    for cid in SUBPROCESS_CASES:
        case = by_id[cid]
        scratch = tmp_path / cid
        scratch.mkdir()
        data = scratch / "data"
        shutil.copytree(base_data, data)
        if case.setup:
            case.setup(scratch, data)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOPFORGE_")}
        env.update({"HOPFORGE_DATA_DIR": str(data), "PYTHONPATH": str(REPO)})
        env.update({k: v.format(d=scratch) for k, v in case.env.items()})
        procs.append((case, subprocess.Popen([sys.executable, "-m", "flows.cli", *[a.format(d=scratch) for a in case.argv]],
                                             cwd=scratch, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                             text=True)))
    failures = []
    for case, proc in procs:
        stdout, stderr = proc.communicate(timeout=120)
        flat = " ".join(stderr.split()).lower()
        if proc.returncode != case.code or "traceback" in flat or any(s.lower() not in flat for s in case.says):
            failures.append((case.id, proc.returncode, stderr[-1500:]))
    assert not failures, failures
