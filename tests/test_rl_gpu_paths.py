"""What the RL plans decide for a GPU run (issue 35): verl's attention implementation from the verl environment,
TRL's completion budget measured from the export, TRL's vLLM rollouts, one stop across TRL's ranks, and the vLLM
versions every run records. Plans only: no trainer is imported (``tests/trainers`` runs them)."""

from __future__ import annotations

import pytest

# the RL tests' own fixtures (an export view, a model dir), shared rather than written again
from tests.test_train_rl import export_view, model_dir, overrides_of, small  # noqa: F401
from training import env_versions
from training.plan import TrainingError
from training.rl_verl import VerlOptions, plan_verl, resolve_attn_implementation


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


# -- TRL: the completion budget holds the tool replies -------------------------------------------------------------


def _trl_launcher():
    import sys

    from training.plan import REPO_ROOT

    launch = str(REPO_ROOT / "training" / "launch")
    if launch not in sys.path:
        sys.path.insert(0, launch)
    import trl_grpo

    return trl_grpo


class CharTokenizer:
    """A chat template stand-in: one token per character of each message's text, reasoning and tool calls, two per
    message, one for the generation prompt (the tools add the same to every rendering)."""

    def apply_chat_template(self, messages, tools=None, add_generation_prompt=False, tokenize=True, return_dict=True,
                            **kwargs):  # fmt: skip
        import json

        n = 10 * len(tools or [])
        for m in messages:
            n += 2 + len(m.get("content") or "") + len(m.get("reasoning_content") or "")
            n += len(json.dumps(m["tool_calls"])) if m.get("tool_calls") else 0
        return {"input_ids": list(range(n + int(add_generation_prompt)))}


def _budget(export_view, grpo: dict, *, tools=("t",), cap=4096, trajectories=True):
    trl_grpo = _trl_launcher()
    h = {"trajectories_file": str(export_view.data_files("messages")["train"]) if trajectories else None,
         "completion_margin": 1.25, "max_tool_response_chars": cap}  # fmt: skip
    return trl_grpo.completion_budget(h, grpo, CharTokenizer(), list(tools))


def test_trl_budget_is_measured_from_the_export_trajectories(export_view):
    import pyarrow.parquet as pq

    trl_grpo = _trl_launcher()
    rows = pq.read_table(export_view.data_files("messages")["train"]).to_pylist()
    # the expected lengths by hand: everything after the first user turn, tool calls as JSON objects
    tok = CharTokenizer()
    expected = []
    for r in rows:
        msgs = trl_grpo.trajectory_messages(r, 4096)
        first_user = next(i for i, m in enumerate(msgs) if m["role"] == "user")
        full = len(tok.apply_chat_template(msgs, tools=["t"])["input_ids"])
        prompt = len(tok.apply_chat_template(msgs[: first_user + 1], tools=["t"], add_generation_prompt=True)["input_ids"])
        expected.append(full - prompt)
    assert min(expected) > 200  # multi-hop trajectories: far above a few dozen tokens

    grpo: dict = {"max_completion_length": None}
    report = _budget(export_view, grpo)
    assert report["measured"] and report["trajectories"] == len(rows) and report["longest"] == max(expected)
    assert grpo["max_completion_length"] == report["max_completion_length"] >= 1.25 * max(expected)
    assert grpo["max_completion_length"] % 64 == 0 and grpo["max_completion_length"] - 1.25 * max(expected) < 64

    enough = {"max_completion_length": max(expected)}
    assert _budget(export_view, enough)["max_completion_length"] == max(expected)


def test_trl_budget_that_cannot_hold_the_trajectories_is_refused_in_one_line(export_view):
    trl_grpo = _trl_launcher()
    with pytest.raises(trl_grpo.LaunchError) as refused:
        _budget(export_view, {"max_completion_length": 100})
    message = refused.value.message
    assert "\n" not in message
    assert message.startswith(f"{export_view.rows('messages')['train']} of {export_view.rows('messages')['train']} "
                              "trajectories of the export need more than max_completion_length 100 tokens (longest ")
    assert "raise max_completion_length to at least" in message and "max_tool_response_chars" in message
    # nothing to measure: a budget must be given when the rollouts have tool replies
    with pytest.raises(trl_grpo.LaunchError) as unmeasured:
        _budget(export_view, {"max_completion_length": None}, trajectories=False)
    assert unmeasured.value.message.startswith("max_completion_length is not set and cannot be measured (the export "
                                               "has no messages trajectories)")  # fmt: skip
    # single-turn: no tool replies, TRL's default budget
    single: dict = {"max_completion_length": None}
    assert _budget(export_view, single, tools=())["why"] == "single-turn: no tool replies in a rollout"
    assert single["max_completion_length"] == 1024


def test_trl_reply_cap_cuts_like_verl_and_shortens_the_measured_budget(export_view):
    trl_grpo = _trl_launcher()
    text = "a" * 50 + "b" * 50
    # verl 0.9.1 tool_agent_loop, truncate side "middle": text[:n//2] + "...(truncated)..." + text[-n//2:]
    assert trl_grpo.cap_reply(text, 20) == "a" * 10 + "...(truncated)..." + "b" * 10
    assert trl_grpo.cap_reply(text, 100) == text and trl_grpo.cap_reply(text, None) == text
    wide, capped = _budget(export_view, {"max_completion_length": None}), _budget(export_view, {"max_completion_length": None}, cap=64)
    assert capped["longest"] < wide["longest"] and capped["reply_cap_chars"] == 64


def test_trl_plan_leaves_the_budget_to_the_launcher_and_passes_the_trajectories(export_view, model_dir, tmp_path):
    import yaml

    from training.rl_trl import TRLOptions, plan_trl

    plan = plan_trl(export_view, tmp_path / "run", TRLOptions(model=str(model_dir), tool_server_url="http://127.0.0.1:8765"))
    cfg = yaml.safe_load(plan.files["trl_grpo.yaml"])
    assert cfg["grpo"]["max_completion_length"] is None
    assert cfg["hopforge"]["trajectories_file"] == str(export_view.data_files("messages")["train"])
    assert (cfg["hopforge"]["completion_margin"], cfg["hopforge"]["max_tool_response_chars"]) == (1.25, 4096)
    assert any(n.startswith("completion budget: the longest of the export's trajectories") for n in plan.notes)


# -- TRL: vLLM rollouts by default on GPUs -------------------------------------------------------------------------


def _device(kind: str, source: str, versions: dict):
    from training.cluster import DeviceInfo

    return DeviceInfo(kind, 8 if kind == "cuda" else 0, 80.0 if kind == "cuda" else None, kind == "cuda", source, versions)


def test_trl_rolls_out_with_vllm_colocate_on_gpus_by_default(export_view, model_dir, tmp_path):
    import yaml

    from training.rl_trl import TRLOptions, plan_trl

    opts = TRLOptions(model=str(model_dir), tool_server_url="http://127.0.0.1:8765")
    gpu = plan_trl(export_view, tmp_path / "gpu", opts, device=_device("cuda", "probe of the trl environment",
                                                                        {"trl": "1.16.0", "vllm": "0.31.0"}))  # fmt: skip
    g = yaml.safe_load(gpu.files["trl_grpo.yaml"])["grpo"]
    assert (g["use_vllm"], g["vllm_mode"], g["vllm_gpu_memory_utilization"]) == (True, "colocate", 0.3)
    assert "rollouts: vLLM colocate" in gpu.notes
    cpu = plan_trl(export_view, tmp_path / "cpu", opts, device=_device("cpu", "test", {}))
    assert yaml.safe_load(cpu.files["trl_grpo.yaml"])["grpo"]["use_vllm"] is False and "rollouts: HF generate" in cpu.notes
    off = plan_trl(export_view, tmp_path / "off", opts.model_copy(update={"use_vllm": "off"}),
                   device=_device("cuda", "probe of the trl environment", {"trl": "1.16.0"}))  # fmt: skip
    assert yaml.safe_load(off.files["trl_grpo.yaml"])["grpo"]["use_vllm"] is False


def test_trl_without_vllm_on_a_gpu_node_is_refused_in_one_line(export_view, model_dir, tmp_path):
    from training.rl_trl import TRLOptions, plan_trl

    no_vllm = _device("cuda", "probe of the trl environment (torch CUDA 12.8)", {"trl": "1.16.0"})
    with pytest.raises(TrainingError, match=r"^use_vllm=colocate needs vLLM in the trl environment, which has none: "
                                            r"build it with `make trainer-env T=trl FLAVOUR=gpu`") as refused:  # fmt: skip
        plan_trl(export_view, tmp_path / "run", TRLOptions(model=str(model_dir)), device=no_vllm)
    assert "\n" not in str(refused.value)
    # GPUs declared in the options (a plan checked on another machine): the launcher on the node refuses instead
    declared = _device("cuda", "options (cluster.device=cuda, nproc_per_node, gpu_memory_gib)", {"trl": "1.16.0"})
    assert plan_trl(export_view, tmp_path / "declared", TRLOptions(model=str(model_dir)), device=declared)


def test_trl_launcher_refuses_vllm_rollouts_without_vllm(monkeypatch):
    from types import SimpleNamespace

    trl_grpo = _trl_launcher()
    import installed

    monkeypatch.setattr(installed, "installed_versions", lambda names: {})
    with pytest.raises(trl_grpo.LaunchError) as refused:
        trl_grpo.require_vllm(SimpleNamespace(use_vllm=True, vllm_mode="colocate"))
    assert refused.value.message.startswith("use_vllm (colocate) needs vLLM in the trl environment, which has none")
    assert trl_grpo.require_vllm(SimpleNamespace(use_vllm=False, vllm_mode=None)) is None
    monkeypatch.setattr(installed, "installed_versions", lambda names: {"vllm": "0.24.0"})
    assert trl_grpo.require_vllm(SimpleNamespace(use_vllm=True, vllm_mode="colocate")) == "0.24.0"


# -- TRL: a tripped tool-failure window stops every rank -----------------------------------------------------------

RANK_SIDE = r'''
import json
import sys
from datetime import timedelta

sys.path[:0] = [sys.argv[1] + "/training/launch", sys.argv[1]]
import torch.distributed as dist  # noqa: E402
import trl_grpo  # noqa: E402

dist.init_process_group("gloo", timeout=timedelta(seconds=120))
rank, url = dist.get_rank(), sys.argv[2]
server = trl_grpo.ToolServer(url, 2.0, max_failure_rate=0.3, failure_window=10)
report = {"rank": rank}
trl_grpo.stop_if_any_rank_tripped(server)  # nobody tripped: every rank goes on
report["first_check"] = "passed"
errors = []
if rank == 1:  # this rank's tool server is down: its window trips at the 4th call
    for _ in range(6):
        try:
            server.call("node_info", {"entity": "Alan Turing"})
        except trl_grpo.ToolServerError as exc:  # a reply for the model, never an exit on its own
            errors.append(str(exc)[:60])
report["errors"] = errors
try:
    trl_grpo.stop_if_any_rank_tripped(server)  # what StopEveryRank runs before each optimizer step
    report["stopped"] = False
except trl_grpo.LaunchError as exc:
    report.update(stopped=True, message=exc.message, tripped_ranks=exc.tool["tripped_ranks"])
print(json.dumps(report))
dist.destroy_process_group()
'''


def test_a_tripped_window_on_one_rank_stops_every_rank(tmp_path):
    """Two ranks on gloo (loopback): rank 1's tool server is down, rank 0's calls are fine. Rank 1 does not exit
    when its window trips (that would leave rank 0 blocked in its next collective); at the next optimizer step both
    ranks agree and both stop, rank 0 naming rank 1."""
    import json
    import os
    import socket
    import subprocess
    import sys

    from training.plan import REPO_ROOT

    def free_port() -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    script = tmp_path / "rank_side.py"
    script.write_text(RANK_SIDE, encoding="utf-8")
    down = f"http://127.0.0.1:{free_port()}"  # nobody listens: connection refused
    env = {**os.environ, "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    procs = [subprocess.Popen([sys.executable, str(script), str(REPO_ROOT), down], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env={**env, "RANK": str(r), "LOCAL_RANK": str(r)})
             for r in (0, 1)]  # fmt: skip
    outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    r0, r1 = (json.loads(o[0].strip().splitlines()[-1]) for o in outs)
    assert r0["first_check"] == r1["first_check"] == "passed"
    assert len(r1["errors"]) == 6 and r1["errors"][3].startswith("tool calls stopped on this rank: tool calls are")
    assert r0["errors"] == []
    assert r0["stopped"] is r1["stopped"] is True and r0["tripped_ranks"] == r1["tripped_ranks"] == [1]
    assert r0["message"].startswith("tool calls are failing on rank(s) [1]")
    assert r1["message"].startswith("tool calls are failing: 4 of the last")


# -- one vLLM ----------------------------------------------------------------------------------------------------------


def test_one_vllm_for_verl_rollouts_trl_rollouts_and_serving():
    """Every GPU flavour that holds vLLM pins the one verl 0.9.1 pins (``tests/trainers/test_smoke_verl.py`` reads
    that pin from verl's own metadata), and it lies in TRL 1.16's supported range (0.22 to 0.31)."""
    from training.envs import TRAINER_ENVS, VLLM_VERSION

    pins = {name: [s for s in env.gpu if s.startswith("vllm")] for name, env in TRAINER_ENVS.items()}
    assert pins == {"llamafactory": [], "trl": [f"vllm=={VLLM_VERSION}"], "verl": [f"vllm=={VLLM_VERSION}"],
                    "vllm": [f"vllm=={VLLM_VERSION}"]}  # fmt: skip
    version = tuple(int(p) for p in VLLM_VERSION.split("."))
    assert (0, 22, 0) <= version <= (0, 31, 0)
