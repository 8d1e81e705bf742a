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
