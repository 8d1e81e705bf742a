"""`make gpu-smoke`: the whole training chain on one CUDA GPU with a real small model, each step timed and recorded.

    python bench/gpu_smoke.py [--out DIR] [--results DIR]        # on a machine with a CUDA GPU
    python bench/gpu_smoke.py --plan-only [--check]               # anywhere: write and check every config

Steps, in order (``STEPS``):

1. ``data``: the factory on generated graphs against the loopback fake (``testing.fake``): ``--domains`` seeded
   graphs of ``--nodes`` labelled entities are imported, ``generate-qa`` writes questions with the template writer
   (``--seeds`` per domain), ``verify-paths`` and ``distill-trajectories`` (template trajectories only: the tool
   calls along each gold path) follow, and ``export`` writes the qa, sft, sft_nothink and rl configs. A few thousand
   trajectories at the defaults.
2. ``base_model``: the embedded default's SmolLM2-135M-Instruct, read from the GGUF it ships into transformers
   (``training/launch/gguf_model.py`` in the TRL environment; Qwen3's chat template and markup tokens added).
3. ``eval_base``: ``vllm serve`` of the base model and the tool-loop evaluation on the test split, in the base
   model's own format: no-think (no reasoning parser, ``enable_thinking`` false). Served as a think checkpoint, the
   ``qwen3`` parser would wait for a ``</think>`` the base model never writes and its EM would be 0 by construction.
4. ``sft_lora`` and ``sft_full``: LLaMA-Factory SFT for ``--epochs`` on the think rows with Omne-R1's weighted
   think-token loss (``--think-weight``, 0.001), LoRA (rank ``--lora-rank``, 12 by default: vLLM serves it as 16, and
   the serve step says so) and full fine-tuning.
5. ``merge``: the LoRA adapter merged into the base model.
6. ``eval_sft``: the LoRA adapter served on the base model (``--enable-lora``) and evaluated; ``eval_sft_full``: the
   full fine-tune.
7. ``rl``: verl GRPO for ``--rl-steps`` steps from the merged model, vLLM rollouts, the KG tools of a
   ``hopforge serve-tools`` started for it.
8. ``eval_rl``: the RL checkpoint served and evaluated.

Lengths fit the model's context (``max_position_embeddings`` of its ``config.json``: 8192 for SmolLM2):
``--max-model-len`` defaults to it and is refused above it, SFT's ``cutoff_len`` is held under it, and verl's prompt
and response lengths share it.

**The smoke learns or fails:** EM on the test split (held out of the training rows by the export's leak-safe
splits) after SFT (the LoRA adapter, the checkpoint RL starts from) must beat EM before (the base model) by
``--min-em-gain`` (0.05 absolute). The report's ``learning`` holds the three figures (before, after SFT, after RL;
the full fine-tune's too) and whether the requirement was met; ``ok`` is true only when every step ran and it was.

Every step's time, status and result (checkpoints, final training metrics, the exact commands, EM / F1 / Hit@1 of
each evaluation, the vLLM version of each environment: one for rollouts and serving, ``training.envs.VLLM_VERSION``)
go to ``<results>/gpu_smoke.json`` and ``gpu_smoke.md``. A failed step stops the chain; the report says which step and
why.

Without a CUDA GPU the script refuses in one line (``make gpu-smoke`` asks before it builds llama.cpp or any
trainer environment). ``--plan-only`` runs no GPU step: it builds the data (or takes
``--export``/``--data-dir``), converts the model (or takes ``--model``), then writes every trainer config and
command, the serve commands and the evaluation settings, each checkpoint a later step would make standing in as a
planned path (the verl plan takes the base model in place of the merged one); ``--check`` also asks each trainer's
own parser to accept its config. Its report is written as ``gpu_smoke_plan.{json,md}`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # runnable as a plain script from any directory
    sys.path.insert(0, str(ROOT))

from schemas.errors import InputError  # noqa: E402

STEPS: tuple[str, ...] = ("data", "base_model", "fit_lengths", "eval_base", "sft_lora", "sft_full", "merge",
                          "eval_sft", "eval_sft_full", "rl", "eval_rl")  # fmt: skip
#: Think rows: the format the SFT trains and the trained checkpoints are served in.
TRAINED_AS = "think"
#: The base model's own format: it was never taught to close a ``</think>``.
BASE_AS = "no_think"


class NoGPU(InputError):
    """This machine has no CUDA GPU for the smoke."""


def cuda_gpus() -> list[str]:
    """The CUDA GPUs ``nvidia-smi`` lists here (name and memory); none without the driver."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    done = subprocess.run([exe, "--query-gpu=name,memory.total", "--format=csv,noheader"], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    return [line.strip() for line in done.stdout.splitlines() if line.strip()] if done.returncode == 0 else []


def require_cuda() -> list[str]:
    gpus = cuda_gpus()
    if not gpus:
        raise NoGPU("gpu-smoke needs a CUDA GPU and nvidia-smi finds none on this machine; `python bench/gpu_smoke.py "
                    "--plan-only` writes and checks every config without one")  # fmt: skip
    return gpus


# -- options and the record of a run ---------------------------------------------------------------------------------


@dataclass
class SmokeOptions:
    out: Path = ROOT / ".hopforge" / "gpu-smoke"
    results: Path = ROOT / "bench" / "results"
    plan_only: bool = False
    check: bool = False
    data_dir: Path | None = None  # a data dir the data step made before (its warehouse and exports)
    export: Path | None = None  # with data_dir: the export to train on
    model: Path | None = None  # a model directory instead of the GGUF conversion
    gguf: Path | None = None
    domains: int = 8
    nodes: int = 800
    seeds: int = 400
    eval_limit: int = 100
    epochs: float = 1.0
    lora_rank: int = 12
    cutoff_len: int = 4096
    rl_steps: int = 3
    rl_batch: int = 16
    rollout_n: int = 4
    max_model_len: int | None = None  # None: the model's context (config.json)
    think_weight: float = 0.001
    min_em_gain: float = 0.05
    port: int = 8011
    seed: int = 0


@dataclass
class StepRecord:
    name: str
    status: str  # ok | failed | planned | given | not_run
    seconds: float = 0.0
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


class Chain:
    """The steps run so far, their records, and what later steps read (``self.state``)."""

    def __init__(self, opts: SmokeOptions) -> None:
        self.opts = opts
        self.records: list[StepRecord] = []
        self.state: dict[str, Any] = {}
        self.stopped: str | None = None

    def step(self, name: str, fn: Callable[[], dict[str, Any]], *, status: str | None = None) -> None:
        """Run one step (unless an earlier one failed) and record its time, status and result."""
        if self.stopped is not None:
            self.records.append(StepRecord(name, "not_run", error=f"after {self.stopped} failed"))
            return
        print(f"== {name}", flush=True)
        started = time.monotonic()
        try:
            result = fn()
        except Exception as exc:  # noqa: BLE001 - every failure is the step's result: the report says which and why
            self.records.append(StepRecord(name, "failed", round(time.monotonic() - started, 1),
                                           error=f"{type(exc).__name__}: {exc}"))  # fmt: skip
            self.stopped = name
            print(f"   failed: {exc}", flush=True)
            return
        done = status or result.pop("_status", None) or ("planned" if self.opts.plan_only else "ok")
        self.records.append(StepRecord(name, done, round(time.monotonic() - started, 1), result))
        print(f"   {done} in {self.records[-1].seconds:.1f} s", flush=True)


# -- the data ------------------------------------------------------------------------------------------------------


def _pick(body: dict[str, Any]) -> dict[str, Any]:
    text = "\n".join(str(m.get("content")) for m in body["messages"])
    pid = sorted(re.findall(r"^(P\d+): ", text, re.M))[0]
    return {"path_id": pid, "question": "Which entity does this chain of relations lead to?"}


def _verdicts(body: dict[str, Any]) -> dict[str, Any]:
    ids = body["response_format"]["json_schema"]["schema"]["properties"]["verdicts"]["items"]["properties"][
        "path_id"]["enum"]  # fmt: skip
    return {"verdicts": [{"path_id": i, "valid": True, "reason": "each hop is stated"} for i in ids]}


@contextmanager
def fake_endpoint() -> Iterator[str]:
    """The loopback fake for every LLM role of the data step and for embeddings throughout (the tool server and
    the evaluations rank entities with the same embedder as the trajectories did)."""
    from testing.fake import FakeOpenAI

    with FakeOpenAI() as fake:
        fake.add(schema_name="qa_pick_path", reply=_pick)
        fake.add(schema_name="qa_judgement", reply={"valid": True, "reason": "clear and multi-hop"})
        fake.add(schema_name="gold_path_verdicts", reply=_verdicts)
        fake.add(predicate=lambda b: "response_format" not in b, reply="<answer>unknown</answer>")
        yield fake.base_url


def smoke_settings(data_dir: Path, fake_url: str, *, export_env: bool) -> Any:
    """Every role and the embeddings on the fake; with ``export_env`` through this process's environment too, so
    child processes (the tool server) read the same configuration."""
    from schemas.config import load_settings

    role = {"base_url": fake_url, "model": "fake-model", "max_concurrency": 64, "max_retries": 1, "timeout_s": 60}
    if export_env:
        os.environ.update({"HOPFORGE_DATA_DIR": str(data_dir), "HOPFORGE_EMBEDDINGS__BASE_URL": fake_url,
                           "HOPFORGE_EMBEDDINGS__MODEL": "fake-embed", "HOPFORGE_EMBEDDINGS__DIM": "16"})  # fmt: skip
    return load_settings(data_dir=data_dir, roles={r: role for r in ("generator", "verifier", "teacher", "judge",
                                                                    "policy")},
                         embeddings={"base_url": fake_url, "model": "fake-embed", "dim": 16},
                         quality={"meaning_check": "off"})  # fmt: skip


def build_data(settings: Any, opts: SmokeOptions) -> dict[str, Any]:
    """Graphs, questions, gold paths, template trajectories and an export (module docstring, step 1)."""
    from bench.bench_scale import write_triples
    from testing.permissive_profiles import store_one_each_way
    from flows.distill import distill_trajectories
    from flows.export import export_datasets
    from flows.graphs import import_graphs
    from flows.qa import generate_qa, verify_paths
    from warehouse.db import Warehouse
    from warehouse.graphs import load_graph

    graphs = settings.data_dir / "graphs"
    graphs.mkdir(parents=True, exist_ok=True)
    files = {}
    for i in range(opts.domains):
        files[f"g{i:02d}"] = str(graphs / f"g{i:02d}.jsonl")
        write_triples(Path(files[f"g{i:02d}"]), opts.nodes, 0.5, opts.seed + i, readable=True)
    imported = import_graphs(files=files, settings=settings)
    if imported["failures"]:
        raise RuntimeError(f"importing the generated graphs failed: {imported['failures']}")
    # The generated labels are words without a meaning in the world; a profile says each names one thing each way,
    # so every hop can be asked (the template writer renders the profiles).
    domains = sorted(imported["imported"])
    with Warehouse(settings.warehouse_path) as wh:
        store_one_each_way(wh, [load_graph(wh, d) for d in domains], run_id="gpu-smoke-profiles")
    qa = generate_qa(domains=domains, n_seeds=opts.seeds, modes=["candidates"], writer="template", use_judge=False,
                     meaning_check="off", split_proportions={"train": 0.8, "validation": 0.1, "test": 0.1},
                     settings=settings)  # fmt: skip
    verify_paths(domains=domains, settings=settings)
    distilled = distill_trajectories(domains=domains, kinds=["template"], settings=settings)
    exported = export_datasets(include=["qa", "sft", "sft_nothink", "rl"], settings=settings)
    return {"domains": domains, "questions": qa["accepted"], "trajectories": distilled["accepted"],
            "export": exported["path"], "version": exported["version"], "rows": exported["rows"]}  # fmt: skip


# -- the model -----------------------------------------------------------------------------------------------------


def convert_command(gguf: Path, out: Path) -> list[str]:
    from training.envs import env_python

    return [str(env_python("trl")), str(ROOT / "training" / "launch" / "gguf_model.py"), str(gguf), str(out)]


def base_model(opts: SmokeOptions) -> dict[str, Any]:
    """The GGUF of the embedded default read into a transformers model directory (module docstring, step 2)."""
    from gateway.local import find_default_gguf
    from training.envs import require_env

    require_env("trl")
    gguf = opts.gguf or find_default_gguf()
    out = opts.out / "models" / gguf.stem
    argv = convert_command(gguf, out)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()][-1:] or ["(no output)"]
        raise RuntimeError(f"converting {gguf.name} failed: {tail[0]}")
    return {**json.loads(lines[-1]), "gguf": str(gguf), "command": " ".join(argv)}


#: config.json keys that hold a model's context length, first found wins (Llama/Qwen, GPT-2, others).
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")


def model_context(model: str | Path) -> int:
    """The context length of the model directory ``model`` from its ``config.json`` (its ``text_config`` too);
    ``InputError`` when it holds none."""
    path = Path(model) / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the model's context from {path}: {exc}") from None
    for scope in (config, config.get("text_config") or {}):
        for key in CONTEXT_KEYS:
            if isinstance(scope.get(key), int) and scope[key] > 0:
                return int(scope[key])
    raise InputError(f"{path} names no context length ({', '.join(CONTEXT_KEYS)})")


def fit_lengths(opts: SmokeOptions, context: int) -> dict[str, int]:
    """Every length of the chain within the model's ``context``: vLLM's ``--max-model-len`` (the context unless
    given; above it ``InputError``: vLLM would refuse to start), SFT's ``cutoff_len``, verl's prompt and response."""
    if opts.max_model_len is not None and opts.max_model_len > context:
        raise InputError(f"--max-model-len {opts.max_model_len} is above the model's context of {context} tokens "
                         "(its config.json): vLLM refuses to serve it; leave --max-model-len out to use the context")  # fmt: skip
    return {"context": context, "max_model_len": opts.max_model_len or context,
            "cutoff_len": min(opts.cutoff_len, context), "rl_prompt": context // 2, "rl_response": context // 2}


# -- training, serving, evaluating ---------------------------------------------------------------------------------


def sft_plan(export: Any, opts: SmokeOptions, model: str, kind: str, lengths: dict[str, int]) -> Any:
    from training.sft import SFTOptions, plan_sft

    sft = SFTOptions(model=model, finetuning_type=kind, num_train_epochs=opts.epochs, cutoff_len=lengths["cutoff_len"],
                     think_weight=opts.think_weight,
                     per_device_train_batch_size=8, gradient_accumulation_steps=1, logging_steps=10,
                     save_steps=100_000, eval_dataset="none",
                     **({"lora_rank": opts.lora_rank} if kind == "lora" else {}))  # fmt: skip
    return plan_sft(export, opts.out / "runs" / f"sft-{kind}", sft)


def verl_plan(export: Any, opts: SmokeOptions, model: str, tool_url: str | None, lengths: dict[str, int]) -> Any:
    from training.rl_verl import VerlOptions, plan_verl

    verl = VerlOptions(model=model, stage="sft", algorithm="grpo", rollout_n=opts.rollout_n,
                       train_batch_size=opts.rl_batch, ppo_mini_batch_size=opts.rl_batch, micro_batch_size_per_gpu=4,
                       n_gpus_per_node=1, total_training_steps=opts.rl_steps, save_freq=opts.rl_steps, test_freq=-1,
                       val_before_train=False, max_prompt_length=lengths["rl_prompt"],
                       max_response_length=lengths["rl_response"],
                       gpu_memory_utilization=0.4, **({"tool_server_url": tool_url} if tool_url else {}))  # fmt: skip
    return plan_verl(export, opts.out / "runs" / "rl-verl", verl)


def launched(plan: Any, what: str) -> dict[str, Any]:
    """Launch ``plan`` to its end (``training.runs.launch``); the step's result, or ``RuntimeError``."""
    from training.runs import final_metrics, launch

    res = launch(plan, on_line=lambda line: print(f"   | {line}", flush=True) if os.environ.get("GPU_SMOKE_ECHO") else None)
    if res.status != "completed" or not res.checkpoint:
        raise RuntimeError(res.error or f"{what} reported no checkpoint")
    return {"checkpoint": res.checkpoint, "trainer_version": res.trainer_version, "seconds": round(res.duration_s, 1),
            "final_metrics": final_metrics(res.metrics), "command": plan.command_line(), "run_dir": str(plan.run_dir)}  # fmt: skip


def planned(plan: Any, check: bool) -> dict[str, Any]:
    """Write ``plan`` (and with ``check`` have its trainer's parser accept it); the step's result."""
    plan.write()
    out: dict[str, Any] = {"run_dir": str(plan.run_dir), "command": plan.command_line(), "files": sorted(plan.files),
                           "output_dir": str(plan.output_dir), "notes": list(plan.notes)}  # fmt: skip
    if check:
        from flows.train import trainer_check

        trainer_check(plan)
        out["checked_by"] = plan.trainer
    return out


def serve_options(opts: SmokeOptions, max_model_len: int, reasoning: str | None = None) -> Any:
    """How each checkpoint is served. A trained one is served in the format its run record says (``auto``); a plan
    declares think as well, which the record must agree with (the planned RL run starts from a stand-in). The base
    model is served in its own format, no-think (module docstring, step 3)."""
    from training.serve import ServeOptions

    reasoning = reasoning or (TRAINED_AS if opts.plan_only else "auto")
    return ServeOptions(port=opts.port, served_name="smoke-policy", max_model_len=max_model_len,
                        gpu_memory_utilization=0.5, reasoning=reasoning)  # type: ignore[arg-type]


def evaluate(settings: Any, opts: SmokeOptions, checkpoint: Any, serve: Any, name: str) -> dict[str, Any]:
    """Serve ``checkpoint`` with vLLM as it was trained and run the tool-loop evaluation on the test split; in
    ``--plan-only`` only the serve command and the evaluation settings."""
    from training.serve import VLLMServer, plan_serve

    if opts.plan_only:
        plan = plan_serve(checkpoint, serve)
        return {"serve": plan.record(), "policy": plan.policy_endpoint(), "trained_as": plan.chat.kind,
                "split": "test", "limit": opts.eval_limit, "modes": ["tools"]}  # fmt: skip
    from flows.evaluate import evaluate_policy

    log = opts.out / "logs" / f"vllm-{name}.log"
    serve = serve.model_copy(update={"served_name": f"smoke-{name}"})
    with VLLMServer(checkpoint, serve, log) as server:
        policy = settings.roles.policy.model_copy(update=server.policy_endpoint(settings.roles.policy.extra_body))
        # Every checkpoint answers afresh: no response cache between them (they share a port).
        eval_settings = settings.model_copy(update={"roles": settings.roles.model_copy(update={"policy": policy}),
                                                    "cache": settings.cache.model_copy(update={"mode": "off"})})
        out = evaluate_policy(split="test", modes=["tools"], limit=opts.eval_limit, trained_as=server.plan.chat.kind,
                              serving=server.record(), reuse=False, settings=eval_settings)  # fmt: skip
    tools = out["by_mode"]["tools"]
    return {"em": tools["em"], "f1": tools["f1"], "hit1": tools["hit1"], "n": tools["n"], "errors": tools["errors"],
            "mean_rounds": tools["mean_rounds"], "mean_tool_calls": tools.get("mean_tool_calls"),
            "run_id": out["run_id"], "serve": out["serving"]}  # fmt: skip


# -- the chain -----------------------------------------------------------------------------------------------------


def run_chain(opts: SmokeOptions) -> Chain:
    """Every step of the smoke (module docstring); planned only with ``opts.plan_only``."""
    chain = Chain(opts)
    opts.out.mkdir(parents=True, exist_ok=True)
    if not opts.plan_only:
        chain.state["gpus"] = require_cuda()
        from training.env_versions import vllm_versions

        chain.state["vllm_versions"] = vllm_versions()  # rollouts (verl, trl) and serving: one version
    data_dir = (opts.data_dir or opts.out / "data").resolve()
    # Flows (the data step, the evaluations) need a Prefect API; a plan on a given export runs none.
    flows = opts.export is None or not opts.plan_only
    with fake_endpoint() as fake_url, (_prefect() if flows else nullcontext()):
        settings = smoke_settings(data_dir, fake_url, export_env=not opts.plan_only)
        _chain_steps(chain, settings, opts)
    return chain


def _chain_steps(chain: Chain, settings: Any, opts: SmokeOptions) -> None:
    from training.plan import load_export, resolve_export
    from training.serve import Checkpoint

    st = chain.state
    if opts.export is not None:
        chain.step("data", lambda: {"export": str(opts.export)}, status="given")
        st["export"] = load_export(opts.export)
    else:
        def data() -> dict[str, Any]:
            out = build_data(settings, opts)
            st["export"] = load_export(resolve_export(settings.data_dir / "exports", out["version"]))
            return out

        chain.step("data", data)
    if opts.model is not None:
        chain.step("base_model", lambda: {"model": str(opts.model)}, status="given")
        st["base"] = str(Path(opts.model).resolve())
    else:
        def convert() -> dict[str, Any]:
            out = base_model(opts)
            st["base"] = out["model"]
            return out

        chain.step("base_model", convert)
    def lengths() -> dict[str, Any]:
        st["lengths"] = fit_lengths(opts, model_context(st["base"]))
        return dict(st["lengths"])

    chain.step("fit_lengths", lengths)
    # The base model has no run record and was never taught to think: asked in its own format, no-think.
    chain.step("eval_base", lambda: evaluate(settings, opts, st["base"],
                                             serve_options(opts, st["lengths"]["max_model_len"], BASE_AS), "base"))

    def sft(kind: str) -> Callable[[], dict[str, Any]]:
        def go() -> dict[str, Any]:
            plan = sft_plan(st["export"], opts, st["base"], kind, st["lengths"])
            out = planned(plan, opts.check) if opts.plan_only else launched(plan, f"SFT ({kind})")
            st[f"sft_{kind}"] = out.get("checkpoint") or str(plan.output_dir)
            return out

        return go

    chain.step("sft_lora", sft("lora"))
    chain.step("sft_full", sft("full"))

    def merge() -> dict[str, Any]:
        from training.merge import plan_merge

        adapter: Any = st["sft_lora"]
        if opts.plan_only:
            adapter = Checkpoint("lora", st["sft_lora"], st["base"], opts.lora_rank)
        plan = plan_merge(adapter, opts.out / "runs" / "merge", base_model=st["base"])
        out = planned(plan, False) if opts.plan_only else launched(plan, "the merge")
        st["merged"] = out.get("checkpoint") or str(plan.output_dir)
        return out

    chain.step("merge", merge)

    def lora_checkpoint() -> Any:
        return Checkpoint("lora", st["sft_lora"], st["base"], opts.lora_rank) if opts.plan_only else st["sft_lora"]

    def full_checkpoint(key: str) -> Any:
        return Checkpoint("full", st[key]) if opts.plan_only else st[key]

    def served() -> Any:
        return serve_options(opts, st["lengths"]["max_model_len"])

    chain.step("eval_sft", lambda: evaluate(settings, opts, lora_checkpoint(), served(), "sft-lora"))
    chain.step("eval_sft_full", lambda: evaluate(settings, opts, full_checkpoint("sft_full"), served(), "sft-full"))

    def rl() -> dict[str, Any]:
        if opts.plan_only:  # the merged weights do not exist yet: the base model (same architecture) stands in
            out = planned(verl_plan(st["export"], opts, st["base"], None, st["lengths"]), opts.check)
            out["notes"].append(f"planned from the base model in place of the merged SFT checkpoint {st['merged']}")
            st["rl"] = str(Path(out["output_dir"]) / f"global_step_{opts.rl_steps}" / "actor" / "huggingface")
            return out
        from flows.train import tool_server

        run_dir = opts.out / "runs" / "rl-verl"
        with tool_server(settings, embedder="configured", log_path=run_dir / "tool-server.log") as url:
            out = launched(verl_plan(st["export"], opts, st["merged"], url, st["lengths"]), "verl GRPO")
        st["rl"] = out["checkpoint"]
        from training.env_versions import package_versions

        out["rollout_versions"] = package_versions("verl", ["verl", "vllm", "torch", "transformers"])
        return out

    chain.step("rl", rl)
    chain.step("eval_rl", lambda: evaluate(settings, opts, full_checkpoint("rl"), served(), "rl"))


@contextmanager
def _prefect() -> Iterator[None]:
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


# -- the report ----------------------------------------------------------------------------------------------------


def learning(evals: dict[str, dict[str, Any]], min_em_gain: float) -> dict[str, Any]:
    """The requirement that makes the smoke a test of learning: EM on the test split after SFT (the LoRA adapter)
    beats EM before (the base model) by ``min_em_gain``; the three figures of the chain (and the full fine-tune's)."""
    def em(name: str) -> float | None:
        return evals.get(name, {}).get("em")

    before, after = em("eval_base"), em("eval_sft")
    met = before is not None and after is not None and after - before >= min_em_gain
    return {"split": "test", "em_before_sft": before, "em_after_sft": after, "em_after_rl": em("eval_rl"),
            "em_after_sft_full": em("eval_sft_full"), "min_em_gain": min_em_gain,
            "em_gain": round(after - before, 4) if before is not None and after is not None else None,
            "requirement": f"EM after SFT - EM before >= {min_em_gain} on the held-out test split", "met": met}  # fmt: skip


def report(chain: Chain, opts: SmokeOptions) -> dict[str, Any]:
    """The JSON report: the options, the machine's GPUs, every step's record, the evaluations side by side, and
    whether the chain learned (``learning``). ``ok``: every step ran and, on a GPU, the requirement was met."""
    evals = {r.name: {k: r.result.get(k) for k in ("em", "f1", "hit1", "n", "errors", "mean_rounds")}
             for r in chain.records if r.name.startswith("eval_") and r.status == "ok"}  # fmt: skip
    learned = learning(evals, opts.min_em_gain)
    steps_ok = chain.stopped is None
    return {
        "plan_only": opts.plan_only,
        "gpus": chain.state.get("gpus", []),
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in vars(opts).items()},
        "steps": [vars(r) for r in chain.records],
        "evaluations": evals,
        "learning": learned,
        "vllm_versions": chain.state.get("vllm_versions", {}),
        "total_s": round(sum(r.seconds for r in chain.records), 1),
        "ok": steps_ok and (opts.plan_only or learned["met"]),
    }


def markdown(data: dict[str, Any]) -> str:
    title = "GPU smoke plan (nothing ran on a GPU)" if data["plan_only"] else "GPU smoke"
    failed = any(s["status"] == "failed" for s in data["steps"])
    verdict = ("stopped at a failed step" if failed else "all steps passed" if data["plan_only"]
               else "all steps passed and EM rose as required" if data["ok"]
               else "all steps passed but EM did not rise as required")  # fmt: skip
    lines = [f"# {title}", "", f"GPUs: {', '.join(data['gpus']) or 'none'}; total {data['total_s']} s; {verdict}.", ""]
    learned = data.get("learning") or {}
    if not data["plan_only"]:
        def fig(v: Any) -> str:
            return "n/a" if v is None else f"{v:.3f}"

        lines += [f"Learning ({learned.get('requirement')}): EM before {fig(learned.get('em_before_sft'))}, after SFT "
                  f"{fig(learned.get('em_after_sft'))}, after RL {fig(learned.get('em_after_rl'))} (full SFT "
                  f"{fig(learned.get('em_after_sft_full'))}); {'met' if learned.get('met') else 'NOT met'}.", ""]  # fmt: skip
    lines += ["| step | status | seconds | result |", "|---|---|---:|---|"]
    for s in data["steps"]:
        res = s["result"]
        if "em" in res:
            text = f"EM {res['em']:.3f}, F1 {res['f1']:.3f}, Hit@1 {res['hit1']:.3f} (n={res['n']}, errors {res['errors']})"
        elif "checkpoint" in res:
            text = f"checkpoint `{res['checkpoint']}`"
        elif "serve" in res:
            text = f"`{res['serve']['command']}`"
        elif "command" in res:
            text = f"`{res['command']}`"
        else:
            text = ", ".join(f"{k}: {v}" for k, v in res.items() if isinstance(v, (str, int, float)))[:300]
        lines.append(f"| {s['name']} | {s['status']} | {s['seconds']} | {(s['error'] or text).replace('|', '/')} |")
    notes = [n for s in data["steps"] for n in (s["result"].get("notes") or s["result"].get("serve", {}).get("notes") or [])]
    if notes:
        lines += ["", "Notes:", "", *(f"- {n}" for n in dict.fromkeys(notes))]
    return "\n".join(lines) + "\n"


def write_report(data: dict[str, Any], results: Path) -> tuple[Path, Path]:
    results.mkdir(parents=True, exist_ok=True)
    stem = "gpu_smoke_plan" if data["plan_only"] else "gpu_smoke"
    js, md = results / f"{stem}.json", results / f"{stem}.md"
    js.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    md.write_text(markdown(data), encoding="utf-8")
    return js, md


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = SmokeOptions()
    ap.add_argument("--out", type=Path, default=defaults.out, help="working directory (data, runs, logs)")
    ap.add_argument("--results", type=Path, help="where the report goes; default: bench/results, and the working "
                    "directory for a plan")
    ap.add_argument("--plan-only", action="store_true", help="run no GPU step: write and validate the plan")
    ap.add_argument("--require-cuda", action="store_true", help="only say whether this machine has a CUDA GPU")
    ap.add_argument("--check", action="store_true", help="with --plan-only: the trainers' own parsers check the configs")
    ap.add_argument("--data-dir", type=Path, help="with --export: the data dir that holds its warehouse")
    ap.add_argument("--export", type=Path, help="an existing export directory (skips the data step)")
    ap.add_argument("--model", type=Path, help="a model directory (skips the GGUF conversion)")
    ap.add_argument("--gguf", type=Path, help="GGUF file; default: the embedded default model's")
    for name in ("domains", "nodes", "seeds", "eval_limit", "lora_rank", "cutoff_len", "rl_steps", "rl_batch",
                 "rollout_n", "port", "seed"):  # fmt: skip
        ap.add_argument(f"--{name.replace('_', '-')}", type=int, default=getattr(defaults, name))
    ap.add_argument("--max-model-len", type=int, default=None, help="vLLM's context; default: the model's own "
                    "(config.json), refused above it")  # fmt: skip
    ap.add_argument("--epochs", type=float, default=defaults.epochs)
    ap.add_argument("--think-weight", type=float, default=defaults.think_weight, help="the weighted think-token "
                    "loss's weight (Omne-R1: 0.001)")  # fmt: skip
    ap.add_argument("--min-em-gain", type=float, default=defaults.min_em_gain, help="EM after SFT must beat EM "
                    "before by this much (absolute) on the test split for the smoke to pass")  # fmt: skip
    args = ap.parse_args(argv)
    if args.export is not None and args.data_dir is None:
        ap.error("--export needs --data-dir (the evaluations read the questions from its warehouse)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    only_check = args.require_cuda
    if args.results is None:
        args.results = args.out if args.plan_only else SmokeOptions.results
    opts = SmokeOptions(**{k: v for k, v in vars(args).items() if k != "require_cuda"})
    try:
        if not opts.plan_only:
            gpus = require_cuda()
            if only_check:
                print(f"CUDA GPUs: {'; '.join(gpus)}")
                return 0
        chain = run_chain(opts)
    except NoGPU as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    data = report(chain, opts)
    js, md = write_report(data, opts.results)
    print(f"report: {js} and {md}")
    return 0 if data["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
