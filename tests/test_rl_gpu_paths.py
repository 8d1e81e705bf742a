"""What the RL plans decide for a GPU run (issue 35): verl's attention implementation from the verl environment,
TRL's completion budget measured from the export, TRL's vLLM rollouts, one stop across TRL's ranks, and the vLLM
versions every run records. Plans only: no trainer is imported (``tests/trainers`` runs them)."""

from __future__ import annotations

import pytest

from tests.test_train_rl import build_rl_export, fake_model_dir, overrides_of, small
from training import env_versions
from training.plan import TrainingError, load_export
from training.rl import VerlOptions, plan_verl, resolve_attn_implementation


@pytest.fixture(scope="module")
def export_view(tmp_path_factory):
    return load_export(build_rl_export(tmp_path_factory.mktemp("exports")))


@pytest.fixture
def model_dir(tmp_path):
    return fake_model_dir(tmp_path / "base-model")


# -- verl: the attention the trained models load with ---------------------------------------------------------------


@pytest.fixture
def flash_attn(monkeypatch):
    """``flash_attn(status)``: what the verl environment's probe answers (``None``: no environment)."""
    asked = []

    def set_status(status):
        def probe(env):
            asked.append(env)
            return status

        monkeypatch.setattr(env_versions, "flash_attn_status", probe)
        return asked

    return set_status


def test_verl_uses_sdpa_when_flash_attn_does_not_import(export_view, model_dir, tmp_path, flash_attn):
    asked = flash_attn({"importable": False, "why": "ModuleNotFoundError: No module named 'flash_attn'"})
    plan = plan_verl(export_view, tmp_path / "run", VerlOptions(model=str(model_dir), **small()))
    o = overrides_of(plan)
    assert asked == ["verl"]
    assert o["+actor_rollout_ref.model.override_config.attn_implementation"] == "sdpa"
    assert "+critic.model.override_config.attn_implementation" not in o  # GRPO: no critic
    assert plan.config["attn_implementation"]["value"] == "sdpa"
    assert "attention sdpa for the trained models (auto: flash-attn does not import in the verl environment " \
           "(ModuleNotFoundError: No module named 'flash_attn'))" in plan.notes

    ppo = plan_verl(export_view, tmp_path / "ppo", VerlOptions(model=str(model_dir), algorithm="ppo", **small()))
    o = overrides_of(ppo)
    assert o["+actor_rollout_ref.model.override_config.attn_implementation"] == "sdpa"
    assert o["+critic.model.override_config.attn_implementation"] == "sdpa"


def test_verl_keeps_flash_attention_where_it_imports(export_view, model_dir, tmp_path, flash_attn):
    flash_attn({"importable": True, "version": "2.8.3"})
    plan = plan_verl(export_view, tmp_path / "run", VerlOptions(model=str(model_dir), **small()))
    assert overrides_of(plan)["+actor_rollout_ref.model.override_config.attn_implementation"] == "flash_attention_2"
    assert plan.config["attn_implementation"] == {"value": "flash_attention_2",
                                                  "source": "auto: flash-attn 2.8.3 imports in the verl environment"}


def test_verl_attention_without_an_environment_and_when_set(flash_attn):
    asked = flash_attn(None)
    assert resolve_attn_implementation("auto") == ("sdpa", "auto: no verl environment here to probe for flash-attn")
    assert resolve_attn_implementation("eager") == ("eager", "set in the options") and asked == ["verl"]
    flash_attn({"importable": False, "why": "ImportError: libcudart.so.12: cannot open shared object file"})
    with pytest.raises(TrainingError, match=r"^attn_implementation=flash_attention_2, but flash-attn does not import "
                                            r"in the verl environment \(ImportError: libcudart"):  # fmt: skip
        resolve_attn_implementation("flash_attention_2")
    flash_attn({"importable": True, "version": "2.8.3"})
    assert resolve_attn_implementation("flash_attention_2") == ("flash_attention_2", "set in the options")


def test_bad_attention_value_is_refused():
    with pytest.raises(ValueError, match="attn_implementation"):
        VerlOptions(model="m", attn_implementation="flash_attention_3")
