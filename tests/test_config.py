"""Configuration: sources, validation messages that name the field and the fix, redaction."""

from __future__ import annotations

import json

import pytest

from schemas.config import ConfigError, load_settings


def test_defaults_are_local_and_valid(tmp_path):
    s = load_settings(data_dir=tmp_path)
    assert all(s.endpoint(r).is_local for r in ("extractor", "generator", "verifier", "teacher", "judge", "policy",
                                                "profiler"))
    assert s.warehouse_path == tmp_path / "warehouse.duckdb"
    assert s.cache_path == tmp_path / "llm_cache.sqlite"


def test_env_vars_set_nested_role_fields(monkeypatch):
    monkeypatch.setenv("HOPFORGE_ROLES__GENERATOR__BASE_URL", "http://gpu-box:8000/v1/")
    monkeypatch.setenv("HOPFORGE_ROLES__GENERATOR__MODEL", "qwen3-32b")
    monkeypatch.setenv("HOPFORGE_ROLES__GENERATOR__MAX_CONCURRENCY", "64")
    monkeypatch.setenv("HOPFORGE_SEED", "7")
    s = load_settings()
    ep = s.endpoint("generator")
    assert (ep.base_url, ep.model, ep.max_concurrency, s.seed) == ("http://gpu-box:8000/v1", "qwen3-32b", 64, 7)
    assert s.endpoint("verifier").is_local


def test_the_profiler_role_is_configured_like_the_others(tmp_path, monkeypatch):
    from schemas.config import ROLES, Roles

    assert ROLES[-1] == "profiler" and set(ROLES) == set(Roles.model_fields)
    s = load_settings(data_dir=tmp_path)
    assert s.endpoint("profiler").sampling.temperature == 0.0
    assert s.redacted()["roles"]["profiler"]["api_key"] is None
    monkeypatch.setenv("HOPFORGE_ROLES__PROFILER__BASE_URL", "http://gpu-box:8000/v1")
    monkeypatch.setenv("HOPFORGE_ROLES__PROFILER__MODEL", "qwen3-32b")
    ep = load_settings(data_dir=tmp_path).endpoint("profiler")
    assert (ep.base_url, ep.model, ep.is_local) == ("http://gpu-box:8000/v1", "qwen3-32b", False)
    with pytest.raises(ConfigError, match="did you mean profiler"):
        load_settings(data_dir=tmp_path, roles={"profilr": {}})


def test_toml_and_yaml_files(tmp_path):
    toml = tmp_path / "c.toml"
    toml.write_text('seed = 3\n[roles.teacher]\nbase_url = "https://api.example.invalid/v1"\nmodel = "big"\napi_key_env = "TEACHER_KEY"\n')
    yml = tmp_path / "c.yaml"
    yml.write_text("seed: 4\nroles:\n  judge:\n    base_url: http://127.0.0.1:9/v1\n    model: j\n")
    assert load_settings(toml).endpoint("teacher").model == "big"
    assert load_settings(yml).seed == 4


def test_env_overrides_file(tmp_path, monkeypatch):
    f = tmp_path / "c.toml"
    f.write_text("seed = 3\n")
    monkeypatch.setenv("HOPFORGE_SEED", "9")
    assert load_settings(f).seed == 9


@pytest.mark.parametrize(
    "kwargs, field, words",
    [
        ({"roles": {"generator": {"max_concurrency": -1}}}, "roles.generator.max_concurrency", "at least 1"),
        ({"roles": {"planner": {}}}, "roles.planner", "unknown role"),
        ({"roles": {"judge": {"base_url": "localhost:8000"}}}, "roles.judge.base_url", "http://"),
        ({"roles": {"judge": {"base_url": "http://x/v1"}}}, "roles.judge", "needs `model`"),
        ({"roles": {"teacher": {"timeout_s": 0}}}, "roles.teacher.timeout_s", "positive"),
        ({"bogus": 1}, "bogus", "unknown setting"),
    ],
)
def test_validation_errors_name_field_and_fix(kwargs, field, words):
    with pytest.raises(ConfigError) as exc:
        load_settings(**kwargs)
    msg = str(exc.value)
    assert field in msg and words in msg
    assert "HOPFORGE_" in msg  # says where it can be set


def test_malformed_config_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("seed = [unclosed\n")
    with pytest.raises(ConfigError, match="bad.toml is not valid TOML"):
        load_settings(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="use a .toml"):
        (tmp_path / "c.ini").write_text("x")
        load_settings(tmp_path / "c.ini")


def test_redacted_never_contains_secret(monkeypatch):
    monkeypatch.setenv("TEACHER_KEY", "placeholder-verysecretvalue")
    s = load_settings(roles={"teacher": {"base_url": "https://api.example.invalid/v1", "model": "m", "api_key_env": "TEACHER_KEY"}})
    blob = json.dumps(s.redacted())
    assert "verysecret" not in blob
    assert s.redacted()["roles"]["teacher"]["api_key"] == "<set>"
    assert s.redacted()["roles"]["generator"]["api_key"] is None
    assert s.endpoint("teacher").api_key() == "placeholder-verysecretvalue"


def test_config_hash_is_stable_and_sensitive():
    assert load_settings(seed=1).config_hash() == load_settings(seed=1).config_hash()
    assert load_settings(seed=1).config_hash() != load_settings(seed=2).config_hash()
