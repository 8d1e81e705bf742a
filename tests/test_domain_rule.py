"""One rule for domain names, the same for ``hopforge ingest`` and ``hopforge graph import``
(``schemas.corpus.check_domain``; docs/graphs.md#domains): a name matches the domain-name pattern, and a name
outside the 20 UltraDomain names is refused unless ``--allow-new-domains`` says the new domain is meant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import flows.graphs  # noqa: F401 - imported (and Prefect's logging set up) before CliRunner swaps the streams
from flows.cli import app

runner = CliRunner()

KNOWN = ["cs", "biology"]
NEW = ["quantumfoo", "my_domain2"]
MALFORMED = ["QuantumFoo", "quantum-foo", "9lives", "_x", "a" * 41]


def _ingest(tmp_path: Path, name: str, *flags: str):
    corpus = tmp_path / f"corpus-{len(list(tmp_path.iterdir()))}"
    corpus.mkdir()
    (corpus / f"{name}.jsonl").write_text(json.dumps({"context": f"Ada Lovelace wrote notes about {name}."}) + "\n")
    return runner.invoke(app, ["ingest", str(corpus / f"{name}.jsonl"), *flags])


def _import(tmp_path: Path, name: str, *flags: str):
    triples = tmp_path / "t.tsv"
    triples.write_text("Ada Lovelace\tworked with\tCharles Babbage\nCharles Babbage\tdesigned\tAnalytical Engine\n")
    return runner.invoke(app, ["graph", "import", str(triples), "-d", name, *flags])


COMMANDS = {"ingest": _ingest, "graph import": _import}


def _flat(result) -> str:
    return " ".join(result.output.split())


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("name", NEW + MALFORMED)
def test_both_commands_refuse_the_same_names_with_the_same_line(command, name, tmp_path):
    refused = COMMANDS[command](tmp_path, name)
    assert refused.exit_code == 2, (command, name, refused.output)
    flat = _flat(refused)
    assert "Traceback" not in refused.output
    if name in NEW:
        assert f"unknown domain '{name}'" in flat and "--allow-new-domains" in flat, flat
    else:
        assert f"'{name}' is not a valid domain name" in flat and "lowercase letters" in flat, flat
    if name in MALFORMED:  # the flag admits a new name, never a malformed one
        again = COMMANDS[command](tmp_path, name, "--allow-new-domains")
        assert again.exit_code == 2 and "is not a valid domain name" in _flat(again), again.output


def test_both_commands_accept_known_names_and_new_ones_when_asked(prefect_harness, tmp_path):
    """Run as processes (`hopforge` itself): a flow run through CliRunner's captured streams trips Prefect's logging."""
    import subprocess
    import sys

    def hopforge(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "flows.cli", *args], capture_output=True, text=True, timeout=300)

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    triples = tmp_path / "t.tsv"
    triples.write_text("Ada Lovelace\tworked with\tCharles Babbage\nCharles Babbage\tdesigned\tAnalytical Engine\n")
    for name, flags in [*((n, []) for n in KNOWN[:1]), *((n, ["--allow-new-domains"]) for n in NEW[:1])]:
        (corpus / f"{name}.jsonl").write_text(json.dumps({"context": f"Ada Lovelace wrote notes on {name}."}) + "\n")
        for args in (["ingest", str(corpus / f"{name}.jsonl")], ["graph", "import", str(triples), "-d", name]):
            done = hopforge(*args, *flags)
            assert done.returncode == 0, (args, flags, done.stdout[-2000:], done.stderr[-2000:])


def test_the_rule_is_one_function():
    """``ingest``'s check and ``graph import``'s check are the same rule, only their error class differs."""
    from flows.checks import check_graph_files
    from schemas.corpus import check_domain
    from schemas.errors import InputError
    from tasks.corpus.ingest import IngestError
    from tasks.corpus.ingest import check_domain as ingest_check
    from tasks.graph.importers import GraphImportError

    for name in NEW + MALFORMED:
        with pytest.raises(InputError) as shared:
            check_domain(name, where="x")
        with pytest.raises(IngestError) as by_ingest:
            ingest_check(name, where="x")
        with pytest.raises(GraphImportError) as by_import:
            check_graph_files({name: "x"}, None)
        reason = str(shared.value).split(";")[0]
        assert str(by_ingest.value).startswith(reason) and str(by_import.value).startswith(reason)
    for name in KNOWN:
        assert check_domain(name, where="x") == ingest_check(name, where="x") == name
    for name in NEW:
        assert check_domain(name, where="x", allow_new_domains=True) == name
