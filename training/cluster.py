"""Where a training run's processes go: nodes, processes per node, the device they see, and whether the model fits.

``ClusterOptions`` is the ``cluster`` section of an SFT or TRL plan (``nnodes``, ``node_rank``, ``nproc_per_node``,
``master_addr``, ``master_port``; ``device`` and ``gpu_memory_gib`` say what a node holds when it should not be
probed). ``detect_device`` asks the trainer environment's torch what this node sees (CUDA devices, their memory,
bf16 support) once per process; ``resolve_cluster`` turns options and device into the launch's numbers and refuses,
in one line naming the setting, what cannot run: more processes than visible GPUs, a node rank outside the
cluster, several nodes without a reachable master address.

``check_memory_fit`` estimates the memory each GPU needs for the model states (weights, gradients, Adam states) under
DDP, ZeRO-2, ZeRO-3 or FSDP, with the ZeRO paper's accounting for mixed-precision Adam (2 bytes a weight, 2 a
gradient, 12 for the fp32 master copy and the two moments), and refuses a plan whose states take more than
``STATE_MEMORY_FRACTION`` of a GPU (the rest is for activations, communication buffers and the CUDA context).

The launch commands: ``torchrun_argv`` (``python -m torch.distributed.run`` with the rendezvous flags; every rank
runs the same launcher script, so whatever that script installs is installed in every rank) and ``accelerate_config``
(the YAML ``accelerate launch --config_file`` reads). ``deepspeed_config`` is the ZeRO JSON transformers' DeepSpeed
integration reads, with ``auto`` values it fills from the trainer's arguments.

This module is core: it never imports torch; the probe runs in the trainer environment.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from training.plan import TrainingError

Sharding = Literal["none", "zero2", "zero3", "fsdp_full_shard", "fsdp_shard_grad_op"]

#: Share of a GPU's memory the model states may take; the rest holds activations (gradient checkpointing on),
#: DeepSpeed's bucket buffers, the CUDA context and fragmentation.
STATE_MEMORY_FRACTION = 0.75
GIB = 1024**3
#: The packages whose versions are recorded with every plan (those present in the trainer environment).
RECORDED_PACKAGES = ("torch", "transformers", "accelerate", "peft", "deepspeed", "llamafactory", "trl", "verl", "vllm")


class ClusterOptions(BaseModel):
    """The ``cluster`` section of a plan. One node by default; for several, each node plans and runs the same
    command with its own ``node_rank``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    nnodes: int = Field(1, ge=1, description="Nodes in the job.")
    node_rank: int = Field(0, ge=0, description="This node's rank (0 on the node at master_addr).")
    nproc_per_node: int | None = Field(None, ge=1, description="Processes on this node; default: its visible GPUs "
                                                               "(1 on a CPU).")  # fmt: skip
    master_addr: str | None = Field(None, min_length=1, description="Address of node 0 every node can reach; "
                                                                    "required with nnodes > 1.")  # fmt: skip
    master_port: int = Field(29500, ge=1, le=65535)
    device: Literal["auto", "cuda", "cpu"] = Field("auto", description="auto: what the trainer environment's torch "
                                                                       "sees on this node.")  # fmt: skip
    gpu_memory_gib: float | None = Field(None, gt=0, description="Memory of one GPU; default: probed.")
    model_params_b: float | None = Field(None, gt=0, description="Parameters of the model in billions, for the "
                                                                 "memory check when its config.json is not local.")  # fmt: skip
    one_machine: bool = Field(False, description="Every node is a process on this one machine (a rehearsal of a "
                                                 "multi-node run on loopback): a loopback master_addr is allowed.")  # fmt: skip

    @model_validator(mode="after")
    def _consistent(self) -> ClusterOptions:
        if self.node_rank >= self.nnodes:
            raise ValueError(f"cluster.node_rank {self.node_rank} must be below cluster.nnodes {self.nnodes} "
                             f"(ranks count from 0)")  # fmt: skip
        if self.nnodes > 1 and not self.master_addr:
            raise ValueError(f"cluster.nnodes {self.nnodes} needs cluster.master_addr: the address of node 0 that "
                             "every node can reach")  # fmt: skip
        if self.nnodes > 1 and _is_loopback(self.master_addr or "") and not self.one_machine:
            raise ValueError(f"cluster.master_addr {self.master_addr} is a loopback address, which other nodes "
                             f"cannot reach (cluster.nnodes {self.nnodes}): give node 0's address (or set "
                             "cluster.one_machine=true to rehearse the nodes as processes of this machine)")  # fmt: skip
        return self


def _is_loopback(addr: str) -> bool:
    if addr.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(addr).is_loopback
    except ValueError:
        return False


# -- what a node sees ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceInfo:
    """What one node offers a trainer: ``gpus`` visible CUDA devices (0 on a CPU), the smallest one's memory,
    whether they compute in bf16, where that was learned, and the trainer environment's package versions."""

    kind: Literal["cuda", "cpu"]
    gpus: int
    gpu_memory_gib: float | None
    bf16: bool
    source: str
    versions: dict[str, str] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return asdict(self)


_PROBE = """
import json, torch
n = torch.cuda.device_count() if torch.cuda.is_available() else 0
mem = min((torch.cuda.get_device_properties(i).total_memory for i in range(n)), default=None)
print(json.dumps({"gpus": n, "memory": mem, "bf16": bool(n and torch.cuda.is_bf16_supported()),
                  "cuda": torch.version.cuda}))
"""


def env_versions(env: str) -> dict[str, str]:
    """Versions of ``RECORDED_PACKAGES`` installed in trainer environment ``env`` (those present; empty when the
    environment is missing)."""
    from training.env_versions import package_versions
    from training.envs import env_python

    if not env_python(env).exists():
        return {}
    return {k: v for k, v in sorted(package_versions(env, RECORDED_PACKAGES).items()) if v is not None}


@functools.lru_cache(maxsize=8)
def _probe(python: str, visible: str | None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    if visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible
    try:
        done = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=180, env=env)
    except subprocess.TimeoutExpired:
        raise TrainingError(f"probing the GPUs with {python} took more than 180 s: set cluster.device "
                            "(and cluster.nproc_per_node, cluster.gpu_memory_gib) instead") from None
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise TrainingError(f"probing the GPUs with {python} failed: {tail[0]}")
    return json.loads(lines[-1])


def detect_device(env: str, cluster: ClusterOptions) -> DeviceInfo:
    """This node's device for trainer environment ``env``: from the options when they say enough, else from the
    environment's torch (cached per process). Without the environment an ``auto`` plan is a CPU plan, and says so."""
    from training.envs import env_python

    versions = env_versions(env)
    if cluster.device == "cpu":
        return DeviceInfo("cpu", 0, None, False, "options (cluster.device=cpu)", versions)
    if cluster.device == "cuda" and cluster.nproc_per_node and cluster.gpu_memory_gib:
        return DeviceInfo("cuda", cluster.nproc_per_node, cluster.gpu_memory_gib, True,
                          "options (cluster.device=cuda, nproc_per_node, gpu_memory_gib)", versions)  # fmt: skip
    python = env_python(env)
    if not python.exists():
        if cluster.device == "cuda":
            raise TrainingError(f"cluster.device is cuda but the {env} environment is missing, so its GPUs cannot be "
                                f"counted: create it (`make trainer-env T={env} FLAVOUR=gpu`) or set "
                                "cluster.nproc_per_node and cluster.gpu_memory_gib")  # fmt: skip
        return DeviceInfo("cpu", 0, None, False, f"no {env} environment to probe: planned for a CPU", versions)
    seen = _probe(str(python), os.environ.get("CUDA_VISIBLE_DEVICES"))
    gpus = int(seen["gpus"])
    source = f"probe of the {env} environment (torch CUDA {seen.get('cuda') or 'none'})"
    if gpus == 0:
        if cluster.device == "cuda":
            raise TrainingError(f"cluster.device is cuda but torch in the {env} environment sees no GPU "
                                f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})")  # fmt: skip
        return DeviceInfo("cpu", 0, None, False, source, versions)
    memory = cluster.gpu_memory_gib or (seen["memory"] / GIB if seen.get("memory") else None)
    return DeviceInfo("cuda", gpus, memory, bool(seen["bf16"]), source, versions)


# -- the launch's numbers ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResolvedCluster:
    """The numbers a launch uses; ``world_size`` counts every process on every node."""

    nnodes: int
    node_rank: int
    nproc_per_node: int
    master_addr: str
    master_port: int
    device: DeviceInfo

    @property
    def world_size(self) -> int:
        return self.nnodes * self.nproc_per_node

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def summary(self) -> dict[str, Any]:
        return {"nnodes": self.nnodes, "node_rank": self.node_rank, "nproc_per_node": self.nproc_per_node,
                "world_size": self.world_size, "master_addr": self.master_addr, "master_port": self.master_port,
                "device": self.device.summary()}  # fmt: skip


def resolve_cluster(cluster: ClusterOptions, device: DeviceInfo) -> ResolvedCluster:
    """Options and device as launch numbers; ``TrainingError`` naming the setting when they cannot run."""
    nproc = cluster.nproc_per_node or (device.gpus if device.kind == "cuda" else 1)
    if device.kind == "cuda" and nproc > device.gpus:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "unset")
        raise TrainingError(f"cluster.nproc_per_node {nproc} is more than the {device.gpus} GPU(s) visible on this "
                            f"node (CUDA_VISIBLE_DEVICES={visible}): lower it or make more GPUs visible")  # fmt: skip
    return ResolvedCluster(nnodes=cluster.nnodes, node_rank=cluster.node_rank, nproc_per_node=nproc,
                           master_addr=cluster.master_addr or "127.0.0.1", master_port=cluster.master_port,
                           device=device)  # fmt: skip


def torchrun_argv(python: str, rc: ResolvedCluster, script: str, args: Sequence[str]) -> list[str]:
    """``python -m torch.distributed.run`` (torchrun) with the static rendezvous of ``rc``, running ``script`` in
    every process."""
    return [python, "-m", "torch.distributed.run", "--nnodes", str(rc.nnodes), "--node-rank", str(rc.node_rank),
            "--nproc-per-node", str(rc.nproc_per_node), "--master-addr", rc.master_addr, "--master-port",
            str(rc.master_port), script, *args]  # fmt: skip


# -- configs written beside the run ---------------------------------------------------------------------------------


def deepspeed_config(stage: Literal["zero2", "zero3"]) -> dict[str, Any]:
    """The ZeRO JSON for transformers' DeepSpeed integration. ``auto`` values are filled from the trainer's own
    arguments (batch sizes, accumulation, clipping, bf16/fp16), so the two can never disagree. ZeRO-3 gathers the
    16-bit weights when saving, so checkpoints are plain Hugging Face weights."""
    common: dict[str, Any] = {
        "train_batch_size": "auto",
        "train_micro_batch_size_per_gpu": "auto",
        "gradient_accumulation_steps": "auto",
        "gradient_clipping": "auto",
        "zero_allow_untested_optimizer": True,
        "bf16": {"enabled": "auto"},
        "fp16": {"enabled": "auto", "loss_scale": 0, "loss_scale_window": 1000, "initial_scale_power": 16,
                 "hysteresis": 2, "min_loss_scale": 1},  # fmt: skip
    }
    if stage == "zero2":
        zero = {"stage": 2, "allgather_partitions": True, "allgather_bucket_size": 5e8, "overlap_comm": False,
                "reduce_scatter": True, "reduce_bucket_size": 5e8, "contiguous_gradients": True,
                "round_robin_gradients": True}  # fmt: skip
    else:
        zero = {"stage": 3, "overlap_comm": False, "contiguous_gradients": True, "sub_group_size": 1e9,
                "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
                "stage3_param_persistence_threshold": "auto", "stage3_max_live_parameters": 1e9,
                "stage3_max_reuse_distance": 1e9, "stage3_gather_16bit_weights_on_model_save": True}  # fmt: skip
    return {**common, "zero_optimization": zero}


def accelerate_config(rc: ResolvedCluster, *, bf16: bool,
                      deepspeed: Literal["none", "zero2", "zero3"] = "none") -> dict[str, Any]:  # fmt: skip
    """The ``accelerate launch --config_file`` YAML for ``rc``: ``num_processes`` counts every process of every
    node (accelerate's meaning), ``machine_rank``/``main_process_ip``/``main_process_port`` the rendezvous. DeepSpeed
    goes through accelerate's plugin with the stage given inline (as TRL's own accelerate configs do: a separate
    DeepSpeed JSON would make accelerate refuse ``mixed_precision`` here); transformers fills the rest with
    ``auto`` values from the trainer's arguments."""
    cpu = rc.device.kind == "cpu"
    if cpu and (rc.distributed or deepspeed != "none"):
        raise TrainingError("accelerate runs one process on a CPU (its MULTI_CPU launch needs MPI): set "
                            "cluster.nnodes=1 and cluster.nproc_per_node=1, or plan on GPUs")  # fmt: skip
    if deepspeed != "none":
        kind = "DEEPSPEED"
    else:
        kind = "MULTI_GPU" if rc.distributed else "NO"
    config: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE",
        "distributed_type": kind,
        "num_processes": rc.world_size,
        "num_machines": rc.nnodes,
        "machine_rank": rc.node_rank,
        "main_process_ip": rc.master_addr,
        "main_process_port": rc.master_port,
        "mixed_precision": "bf16" if bf16 else "no",
        "rdzv_backend": "static",
        "same_network": True,
        "use_cpu": cpu,
        # One process on a node with several GPUs: accelerate makes only the first visible, so the trainer never
        # sees several GPUs in one process.
        "gpu_ids": "all" if rc.distributed or cpu else "0",
        "debug": False,
    }
    if deepspeed != "none":
        zero3 = deepspeed == "zero3"
        config["deepspeed_config"] = {"zero_stage": 3 if zero3 else 2, "offload_optimizer_device": "none",
                                      "offload_param_device": "none", "zero3_init_flag": zero3,
                                      "zero3_save_16bit_model": zero3, "deepspeed_multinode_launcher": "standard"}  # fmt: skip
    return config


# -- will the model fit ------------------------------------------------------------------------------------------------


def model_params(model: str, override_b: float | None = None) -> tuple[float | None, str]:
    """Parameters of ``model`` (a count, not billions) and how it was found: ``override_b`` when given, else
    computed from a local ``config.json`` of a decoder-only transformer (embeddings, attention, MLP, norms, LM head);
    ``None`` when neither is known."""
    if override_b is not None:
        return override_b * 1e9, "cluster.model_params_b"
    config_path = Path(model) / "config.json"
    if not config_path.is_file():
        return None, "unknown (no local config.json; set cluster.model_params_b)"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config = config.get("text_config", config)
    try:
        hidden, layers = int(config["hidden_size"]), int(config["num_hidden_layers"])
        inter, vocab = int(config["intermediate_size"]), int(config["vocab_size"])
        heads = int(config["num_attention_heads"])
    except (KeyError, TypeError, ValueError):
        return None, f"unknown ({config_path} lacks the sizes of a decoder; set cluster.model_params_b)"
    kv = int(config.get("num_key_value_heads") or heads)
    head_dim = int(config.get("head_dim") or hidden // heads)
    attention = hidden * heads * head_dim * 2 + hidden * kv * head_dim * 2
    per_layer = attention + 3 * hidden * inter + 2 * hidden
    embeddings = vocab * hidden * (1 if config.get("tie_word_embeddings") else 2)
    return float(layers * per_layer + embeddings + hidden), f"computed from {config_path}"


def lora_params(model: str, rank: int) -> float | None:
    """Trainable parameters of LoRA rank ``rank`` on every linear layer of the attention and MLP blocks."""
    config_path = Path(model) / "config.json"
    if not config_path.is_file():
        return None
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config = config.get("text_config", config)
    try:
        hidden, layers, inter = int(config["hidden_size"]), int(config["num_hidden_layers"]), int(config["intermediate_size"])
        heads = int(config["num_attention_heads"])
    except (KeyError, TypeError, ValueError):
        return None
    kv = int(config.get("num_key_value_heads") or heads)
    head_dim = int(config.get("head_dim") or hidden // heads)
    q, k = heads * head_dim, kv * head_dim
    sides = (hidden + q) * 2 + (hidden + k) * 2 + (hidden + inter) * 3  # q, o, k, v, gate, up, down
    return float(layers * rank * sides)


def state_bytes_per_gpu(params: float, trainable: float, sharding: Sharding, world: int) -> float:
    """Bytes of model states on one GPU with mixed-precision Adam (ZeRO paper, section 3): 2 per weight, 2 per
    trainable gradient, 12 per trainable parameter for the fp32 copy and two moments. ZeRO-2 / FSDP SHARD_GRAD_OP
    shard gradients and optimizer states over the ``world`` ranks, ZeRO-3 / FSDP FULL_SHARD the weights too."""
    weights, grads, optim = 2.0 * params, 2.0 * trainable, 12.0 * trainable
    if sharding == "none":
        return weights + grads + optim
    if sharding in ("zero2", "fsdp_shard_grad_op"):
        return weights + (grads + optim) / world
    return (weights + grads + optim) / world


def check_memory_fit(*, model: str, finetuning_type: str, lora_rank: int, sharding: Sharding, rc: ResolvedCluster,
                     model_params_b: float | None, reference_model: bool = False,
                     reserved_fraction: float = 0.0) -> dict[str, Any]:  # fmt: skip
    """The model-state estimate for this plan, recorded with it; ``TrainingError`` naming the setting when the states
    alone take more than ``STATE_MEMORY_FRACTION`` of a GPU (less ``reserved_fraction``, e.g. vLLM colocated on the
    same GPU). ``reference_model``: a frozen copy of the weights (KL against the initial policy), sharded like the
    weights. Not checked (and said so) on a CPU or when the model size or the GPU memory is unknown."""
    params, how = model_params(model, model_params_b)
    report: dict[str, Any] = {"params": params, "params_from": how, "sharding": sharding,
                              "world_size": rc.world_size, "gpu_memory_gib": rc.device.gpu_memory_gib}  # fmt: skip
    if rc.device.kind != "cuda" or params is None or rc.device.gpu_memory_gib is None:
        report["checked"] = False
        return report
    trainable = params if finetuning_type == "full" else (lora_params(model, lora_rank) or params * 0.01)
    need = state_bytes_per_gpu(params, trainable, sharding, rc.world_size)
    if reference_model:
        need += 2.0 * params / (rc.world_size if sharding in ("zero3", "fsdp_full_shard") else 1)
    need /= GIB
    budget = rc.device.gpu_memory_gib * (STATE_MEMORY_FRACTION - reserved_fraction)
    if budget <= 0:
        raise TrainingError(f"no GPU memory is left for training beside the {reserved_fraction:.0%} reserved for "
                            "vLLM: lower vllm_gpu_memory_utilization")  # fmt: skip
    report.update(checked=True, state_gib_per_gpu=round(need, 1), budget_gib=round(budget, 1))
    if need > budget:
        setting = "deepspeed" if sharding.startswith("zero") or sharding == "none" else "fsdp"
        hint = "use deepspeed=zero3" if sharding != "zero3" and sharding != "fsdp_full_shard" else "add nodes or GPUs"
        raise TrainingError(
            f"{setting}={sharding} does not fit: {finetuning_type} fine-tuning of {params / 1e9:.1f}B parameters needs "
            f"about {need:.1f} GiB of weights, gradients and Adam states per GPU over {rc.world_size} process(es), "
            f"more than the {budget:.1f} GiB it may take of a {rc.device.gpu_memory_gib:.0f} GiB GPU: {hint}, or "
            "train LoRA")  # fmt: skip
    return report


def sharding_of(deepspeed: str, fsdp: str) -> Sharding:
    if deepspeed != "none" and fsdp != "none":
        raise TrainingError(f"deepspeed={deepspeed} and fsdp={fsdp} both shard the model: choose one")
    if fsdp != "none":
        return f"fsdp_{fsdp}"  # type: ignore[return-value]
    return deepspeed  # type: ignore[return-value]


def rendezvous_env(rc: ResolvedCluster, rank_on_node: int = 0) -> dict[str, str]:
    """The variables torchrun gives process ``rank_on_node`` of this node (what a rank's own checks read)."""
    rank = rc.node_rank * rc.nproc_per_node + rank_on_node
    return {"RANK": str(rank), "LOCAL_RANK": str(rank_on_node), "WORLD_SIZE": str(rc.world_size),
            "LOCAL_WORLD_SIZE": str(rc.nproc_per_node), "GROUP_RANK": str(rc.node_rank),
            "MASTER_ADDR": rc.master_addr, "MASTER_PORT": str(rc.master_port)}  # fmt: skip


def dump_json(data: Mapping[str, Any]) -> str:
    return json.dumps(dict(data), indent=2, sort_keys=True) + "\n"


__all__ = [
    "ClusterOptions",
    "DeviceInfo",
    "ResolvedCluster",
    "accelerate_config",
    "check_memory_fit",
    "deepspeed_config",
    "detect_device",
    "env_versions",
    "model_params",
    "rendezvous_env",
    "resolve_cluster",
    "sharding_of",
    "state_bytes_per_gpu",
    "torchrun_argv",
]
