"""CLI: config show redacts secrets; bad input prints one clear line and exits 2."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from flows.cli import app

runner = CliRunner()


def test_config_show_redacts(monkeypatch, tmp_path):
    monkeypatch.setenv("MY_TEACHER_KEY", "placeholder-teacher-key")
    monkeypatch.setenv("HOPFORGE_ROLES__TEACHER__BASE_URL", "https://api.example.invalid/v1")
    monkeypatch.setenv("HOPFORGE_ROLES__TEACHER__MODEL", "teacher-model")
    monkeypatch.setenv("HOPFORGE_ROLES__TEACHER__API_KEY_ENV", "MY_TEACHER_KEY")
    result = runner.invoke(app, ["config", "show", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["roles"]["teacher"]["model"] == "teacher-model"
    assert data["roles"]["teacher"]["api_key"] == "<set>"
    assert "placeholder-teacher-key" not in result.output
    yaml_out = runner.invoke(app, ["config", "show"])
    assert yaml_out.exit_code == 0 and "teacher-model" in yaml_out.output and "placeholder-teacher-key" not in yaml_out.output


def test_bad_config_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("HOPFORGE_ROLES__GENERATOR__MAX_CONCURRENCY", "-4")
    result = runner.invoke(app, ["config", "show"])
    assert result.exit_code == 2
    assert "roles.generator.max_concurrency" in result.output and "Traceback" not in result.output


def test_missing_config_file(tmp_path):
    result = runner.invoke(app, ["config", "show", "--config", str(tmp_path / "nope.toml")])
    assert result.exit_code == 2 and "does not exist" in result.output


def test_warehouse_commands_without_warehouse(tmp_path):
    result = runner.invoke(app, ["warehouse", "tables"])
    assert result.exit_code == 2 and "no warehouse" in result.output


def test_console_entry_point_exits_with_the_command_status(tmp_path):
    """`hopforge` as a process: the exit status is the command's, and the process ends (no lingering threads)."""
    import subprocess
    import sys

    ok = subprocess.run([sys.executable, "-m", "flows.cli", "config", "show", "--json"], capture_output=True,
                        text=True, timeout=120)
    assert ok.returncode == 0 and json.loads(ok.stdout)["seed"] == 0
    bad = subprocess.run([sys.executable, "-m", "flows.cli", "config", "show", "--config", str(tmp_path / "x.toml")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "does not exist" in bad.stderr


def test_bad_seed_ball_bounds_are_one_clear_line(monkeypatch):
    cases = [
        (["--min-ball", "0"], [], "min_ball (--min-ball) must be a whole number of at least 1, got 0"),
        (["--max-ball", "-5"], [], "max_ball (--max-ball) must be a whole number of at least 1, got -5"),
        (["--min-ball", "30", "--max-ball", "10"], [],
         "max_ball (--max-ball) is 10, below min_ball (--min-ball) 30"),
        # a bound from the command line against one from the configuration: the line says where each came from
        (["--min-ball", "30"], [("HOPFORGE_SEEDS__MAX_BALL", "25")],
         "seeds.max_ball (configuration) is 25, below min_ball (--min-ball) 30"),
        ([], [("HOPFORGE_SEEDS__MIN_BALL", "0")], "seeds.min_ball"),
        ([], [("HOPFORGE_SEEDS__MIN_BALL", "50"), ("HOPFORGE_SEEDS__MAX_BALL", "40")],
         "max_ball (40) must be at least min_ball (50)"),
    ]
    for args, env, says in cases:
        with monkeypatch.context() as m:
            for k, v in env:
                m.setenv(k, v)
            result = runner.invoke(app, ["qa", "generate", *args])
        assert result.exit_code == 2, (args, env, result.output)
        flat = " ".join(result.output.split())
        assert says in flat and "Traceback" not in result.output, (args, env, flat)


def test_qa_generate_on_a_domain_without_a_graph_exits_non_zero_with_the_reason(prefect_harness, tmp_path):
    """A domain the warehouse knows (its corpus was ingested) but whose graph was never built or imported: the run
    cannot do its job, says why in one line and exits 2, so a script or a deployment does not count it done."""
    import subprocess
    import sys

    from flows.graphs import ingest_corpus

    folder = tmp_path / "corpus" / "agriculture"
    folder.mkdir(parents=True)
    (folder / "01_maize.md").write_text("# Maize\n\nMaize was domesticated in Mexico from teosinte.\n",
                                        encoding="utf-8")
    assert ingest_corpus(source=str(tmp_path / "corpus"), source_kind="folder")["documents_written"] == 1
    done = subprocess.run([sys.executable, "-m", "flows.cli", "qa", "generate", "-d", "agriculture", "--seeds", "2"],
                          capture_output=True, text=True, timeout=300)
    flat = " ".join(done.stderr.split())
    assert done.returncode == 2, (done.stdout, done.stderr[-2000:])
    assert "no graph for domain(s) agriculture: import one (`hopforge graph import`)" in flat
    assert "Traceback" not in done.stderr
