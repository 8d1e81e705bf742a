"""LLaMA-Factory SFT for real, on the CPU: the tiny Qwen3-style model, the fixture export, the real launcher.

Think (template ``qwen3``) and no-think (``qwen3_nothink``) runs train a few optimizer steps with the weighted
think-token loss on, every step on the same batch (all train rows, no shuffling, a high learning rate), so the loss
must fall. Checked as well: LLaMA-Factory's preprocessing kept every row whole, the loss the trainer computed on its
first batch equals Algorithm 1 worked out here from that batch's logits, the config passes LLaMA-Factory's parser,
and the launcher's contract files and the LoRA adapter are written.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.trainers.conftest import run_python
from training.plan import TrainingError, load_export, read_metrics
from training.sft import SFTOptions, plan_sft, validate_sft_config

pytestmark = pytest.mark.train_smoke

THINK_WEIGHT = 0.001
STEPS = {"qwen3": 10, "qwen3_nothink": 8}
DATASET = {"qwen3": "hopforge_sft_train", "qwen3_nothink": "hopforge_sft_nothink_train"}
# Think data trains a LoRA adapter, no-think data the full model: both finetuning types and both checkpoint kinds.
# Learning rates measured to lower the loss steadily on this model (higher ones make LoRA oscillate).
FINETUNING = {"qwen3": ("lora", 0.01), "qwen3_nothink": ("full", 0.003)}


def smoke_plan(export_dir: Path, model_dir: Path, run_dir: Path, template: str, **overrides):
    export = load_export(export_dir)
    config = "sft" if template == "qwen3" else "sft_nothink"
    rows = export.rows(config)["train"]
    finetuning_type, lr = FINETUNING[template]
    opts = dict(model=str(model_dir), dataset=DATASET[template], think_weight=THINK_WEIGHT, cutoff_len=4096,
                finetuning_type=finetuning_type, learning_rate=lr, max_steps=STEPS[template],
                per_device_train_batch_size=rows, gradient_accumulation_steps=1,
                warmup_ratio=0.0, lr_scheduler_type="constant", logging_steps=1,
                save_steps=STEPS[template], eval_steps=STEPS[template], extra={"disable_shuffling": True})  # fmt: skip
    opts.update(overrides)
    return plan_sft(export, run_dir, SFTOptions(**opts))


def launch(plan, python: Path, *, probe: bool = False):
    if probe:
        extras = json.loads(plan.files["hopforge_sft.json"])
        plan.files["hopforge_sft.json"] = json.dumps({**extras, "probe_first_batch": True})
    plan.write()
    return run_python(python, plan.argv[1:], timeout=600)


@pytest.fixture(scope="module", params=["qwen3", "qwen3_nothink"])
def trained(request, tiny_model_dir, tiny_export_dir, trainer_python, tmp_path_factory):
    template = request.param
    plan = smoke_plan(tiny_export_dir, tiny_model_dir, tmp_path_factory.mktemp(f"sft-{template}"), template)
    done = launch(plan, trainer_python("llamafactory"), probe=True)
    assert done.returncode == 0, f"the launcher failed:\n{done.stderr[-4000:]}"
    return template, plan


def test_training_writes_the_contract_files_and_a_checkpoint(trained):
    template, plan = trained
    result = json.loads((plan.run_dir / "result.json").read_text())
    assert result["status"] == "ok" and result["global_step"] == STEPS[template]
    assert result["weighted_loss"] is True and result["think_weight"] == THINK_WEIGHT
    checkpoint = Path(result["checkpoint"])
    assert checkpoint == plan.output_dir
    if FINETUNING[template][0] == "lora":
        assert (checkpoint / "adapter_model.safetensors").is_file()
        assert json.loads((checkpoint / "adapter_config.json").read_text())["r"] == 8
    else:
        assert (checkpoint / "model.safetensors").is_file() and (checkpoint / "config.json").is_file()
    assert (checkpoint / "tokenizer_config.json").is_file()


def test_loss_is_finite_and_falls_on_the_repeated_batch(trained):
    template, plan = trained
    losses = [(r["step"], r["loss"]) for r in read_metrics(plan.run_dir) if "loss" in r]
    assert [s for s, _ in losses] == list(range(1, STEPS[template] + 1))
    values = [v for _, v in losses]
    assert all(isinstance(v, float) and math.isfinite(v) for v in values), values
    print(f"{template} losses: {[round(v, 4) for v in values]}")
    assert values[-1] < values[0] - 0.5, values  # nats; measured drops: about 0.9 (LoRA) and 2.3 (full)
    assert any("eval_loss" in r for r in read_metrics(plan.run_dir))


def test_preprocessing_kept_every_row_whole(trained, tiny_export_dir):
    template, plan = trained
    config = "sft" if template == "qwen3" else "sft_nothink"
    rows = json.loads((tiny_export_dir / "manifest.json").read_text())["rows"][config]
    kept = json.loads((plan.run_dir / "preprocess.json").read_text())
    # Rows: every exported row reached the trainer. Tokens: the launcher compared each row's full encoding with
    # what LLaMA-Factory kept and would have stopped on any cut (see test_rows_longer_than_the_cutoff_stop_the_run).
    assert kept["train"]["rows"] == rows["train"] and kept["eval"]["rows"] == rows["validation"]
    assert 0 < kept["train"]["label_tokens"] < kept["train"]["tokens"]
    assert kept["train"]["tokens"] <= rows["train"] * plan.config["llamafactory"]["cutoff_len"]


def tag_ids(model_dir: Path) -> dict[str, int]:
    """The tokenizer's own ids of its added tokens, read from tokenizer.json."""
    data = json.loads((model_dir / "tokenizer.json").read_text())
    return {t["content"]: t["id"] for t in data["added_tokens"]}


def hand_weights(targets: list[int], open_id: int, close_id: int, w: float) -> list[float]:
    """A token-by-token reading of the span rules: a run of active targets is one assistant turn; ``<think>``
    opens a span up to and including ``</think>``; a ``</think>`` with no opener in its turn closes a span that
    began at the turn's first token; an unclosed span runs to the end of its turn."""
    weights = [0.0] * len(targets)
    t = 0
    while t < len(targets):
        if targets[t] == -100:
            t += 1
            continue
        end = t
        while end < len(targets) and targets[end] != -100:
            end += 1
        turn = targets[t:end]
        inside = open_id not in turn[: turn.index(close_id)] if close_id in turn else False
        for k, tok in enumerate(turn):
            if tok == open_id:
                inside = True
            weights[t + k] = w if inside else 1.0
            if tok == close_id:
                inside = False
        t = end
    return weights


def test_the_trainer_loss_on_its_first_batch_equals_algorithm_1(trained, tiny_model_dir):
    import torch  # in the core test extra: reads the batch the trainer saved
    template, plan = trained
    probe = torch.load(plan.run_dir / "probe_first_batch.pt")
    ids = tag_ids(tiny_model_dir)
    assert tuple(probe["think_ids"]) == (ids["<think>"], ids["</think>"])
    logits, labels = probe["logits"], probe["labels"]
    num = den = plain_num = plain_den = 0.0
    think_targets = 0
    for b in range(labels.size(0)):
        targets = labels[b, 1:].tolist()
        weights = hand_weights(targets, ids["<think>"], ids["</think>"], THINK_WEIGHT)
        log_probs = torch.log_softmax(logits[b, :-1].double(), dim=-1)
        for t, target in enumerate(targets):
            if target == -100:
                continue
            ce = -log_probs[t, target].item()
            num, den = num + weights[t] * ce, den + weights[t]
            plain_num, plain_den = plain_num + ce, plain_den + 1
            think_targets += weights[t] != 1.0
    assert probe["loss"].item() == pytest.approx(num / den, rel=1e-5)
    assert float(probe["num_items_in_batch"]) == pytest.approx(den, rel=1e-6)
    # The first logged loss is this batch's (one micro-batch per step).
    first = next(r["loss"] for r in read_metrics(plan.run_dir) if "loss" in r)
    assert first == pytest.approx(num / den, rel=1e-4)
    if template == "qwen3":
        assert think_targets > 0 and den < plain_den  # think spans were found and down-weighted
    else:
        assert think_targets == 0 and den == plain_den  # no-think rows: the weighted loss is the plain one
        assert num / den == pytest.approx(plain_num / plain_den, rel=1e-9)


def test_llamafactory_parser_accepts_the_config_and_refuses_a_bad_key(tiny_model_dir, tiny_export_dir, tmp_path):
    for template in ("qwen3", "qwen3_nothink"):
        plan = smoke_plan(tiny_export_dir, tiny_model_dir, tmp_path / template, template)
        report = validate_sft_config(plan)
        assert report["status"] == "ok" and report["template"] == template
        assert report["dataset"] == [DATASET[template]] and len(report["think_ids"]) == 2
    bad = smoke_plan(tiny_export_dir, tiny_model_dir, tmp_path / "bad", "qwen3", extra={"lora_rnk": 4})
    with pytest.raises(TrainingError, match=r"LLaMA-Factory refused the config .*lora_rnk"):
        validate_sft_config(bad)


def test_rows_longer_than_the_cutoff_stop_the_run(tiny_model_dir, tiny_export_dir, trainer_python, tmp_path):
    plan = smoke_plan(tiny_export_dir, tiny_model_dir, tmp_path / "run", "qwen3", cutoff_len=256)
    done = launch(plan, trainer_python("llamafactory"))
    assert done.returncode == 2
    assert "longer than cutoff_len 256" in done.stderr and "raise cutoff_len to at least" in done.stderr
    result = json.loads((plan.run_dir / "result.json").read_text())
    assert result["status"] == "error" and "cutoff_len 256" in result["error"]
    assert not plan.output_dir.exists() and not read_metrics(plan.run_dir)  # stopped before any training


def test_a_row_dropped_by_llamafactory_stops_the_run(tiny_model_dir, tiny_export_dir, trainer_python, tmp_path):
    export_copy = tmp_path / "export"
    shutil.copytree(tiny_export_dir, export_copy)
    plan = smoke_plan(export_copy, tiny_model_dir, tmp_path / "run", "qwen3")
    # After planning, one row's turns stop alternating: LLaMA-Factory's converter skips such a row with a warning.
    path = export_copy / "sft" / "train-00000-of-00001.parquet"
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[0]["conversations"] = [rows[0]["conversations"][0], *rows[0]["conversations"]]
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    done = launch(plan, trainer_python("llamafactory"))
    assert done.returncode == 2
    assert f"kept {len(rows) - 1} of the {len(rows)} train rows of hopforge_sft_train" in done.stderr
    assert not plan.output_dir.exists()
