"""Secrets: a recognisable API key, in the environment variable a role names and written by mistake into a config
file, reaches the endpoint but never the warehouse (run parameters, resolved config, any table), the data dir's
files (exports, dataset card, cache), the logs, Prefect's artifacts or `hopforge config show`."""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "flows" / "demo"


def _warehouse_text(path: Path) -> str:
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                            "WHERE table_schema = 'main'").fetchall()]
        return "\n".join(repr(con.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables)
    finally:
        con.close()


def test_an_api_key_is_never_written(prefect_harness, fake_llm, tmp_path, monkeypatch, capsys, caplog):
    from prefect.client.orchestration import get_client
    from typer.testing import CliRunner

    from flows.cli import app
    from flows.export import export_datasets
    from flows.graphs import import_graphs, ingest_corpus
    from flows.qa import generate_qa
    from schemas.config import load_settings
    from schemas.errors import ConfigError
    from tests.test_qa_flow import good_pick

    secret = f"sk-hopforge-canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("MY_LLM_KEY", secret)
    caplog.set_level(logging.DEBUG)
    fake_llm.add(schema_name="qa_pick_path", reply=good_pick)
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    data = tmp_path / "data"
    config = tmp_path / "hopforge.toml"
    role = f'base_url = "{fake_llm.base_url}"\nmodel = "fake-model"\napi_key_env = "MY_LLM_KEY"\n'
    config.write_text(f'data_dir = "{data}"\n[roles.generator]\n{role}[roles.verifier]\n{role}')

    # a key pasted into the file where the variable's name belongs is refused, and the message does not echo it
    wrong = tmp_path / "wrong.toml"
    wrong.write_text(f'[roles.generator]\napi_key = "{secret}"\n')
    try:
        load_settings(wrong)
        raise AssertionError("a key in the config file must be refused")
    except ConfigError as exc:
        assert secret not in str(exc) and "api_key_env" in str(exc)

    monkeypatch.delenv("HOPFORGE_DATA_DIR")  # the file says where the data goes
    settings = load_settings(config)
    assert settings.data_dir == data
    ingest_corpus(source=str(DEMO / "corpus" / "cs"), source_kind="folder", settings=settings)
    import_graphs(files={"cs": str(DEMO / "graphs" / "cs.jsonl")}, settings=settings)
    out = generate_qa(domains=["cs"], n_seeds=2, writer="llm", settings=settings)
    export_datasets(version="v1", settings=settings)
    shown = CliRunner().invoke(app, ["config", "show", "--json", "-c", str(config)])

    assert out["accepted"] > 0
    used = [r for r in fake_llm.requests if r.path.endswith("/chat/completions")]
    assert used and all(secret in r.headers.get("authorization", "") for r in used)  # the key did reach the endpoint
    assert json.loads(shown.output)["roles"]["generator"]["api_key"] == "<set>"
    places = {"config show": shown.output, "warehouse": _warehouse_text(settings.warehouse_path)}
    for f in sorted(settings.data_dir.rglob("*")):
        if f.is_file():
            places[str(f.relative_to(settings.data_dir))] = f.read_bytes().decode("utf-8", "replace")
    captured = capsys.readouterr()
    places["stdout"], places["stderr"] = captured.out, captured.err
    places["logs"] = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    with get_client(sync_client=True) as client:
        places["artifacts"] = "\n".join(json.dumps(a.data, default=str) + str(a.description)
                                        for a in client.read_artifacts())
    leaks = [where for where, text in places.items() if secret in text]
    assert not leaks, f"the API key was written to: {leaks}"
    assert len(places) > 10 and any(p.startswith("exports/v1/") for p in places)
