"""Count the tokens of chat prompts with a model's own tokenizer and chat template; runs in a trainer environment.

    python training/launch/measure_prompts.py --request request.json

A prompt is measured as the trainers build it: ``tokenizer.apply_chat_template(messages, tools=...,
add_generation_prompt=True, **chat_template_kwargs)``, the tool schemas rendered into the system turn. The request
(``training.plan.measure_prompts`` writes it) names the tokenizer directory, ``max_prompt_length``, the tool schemas,
and the prompts: parquet files of an export's ``rl`` rows (column ``prompt``) or ``messages`` rows (the turns up to
the first user turn), or prompts given inline (``{"id", "messages"}``). It prints one JSON object: rows measured,
how many are longer than ``max_prompt_length``, the longest and its id, and the ids of the over-long rows.

``trl_grpo.py`` imports ``prompt_lengths`` and ``count`` so the TRL launcher measures with the exact tools it
trains with.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _stubs  # noqa: E402,F401 (torchaudio stand-in before transformers)

#: Over-long ids listed in a report (the count is always complete).
LISTED_IDS = 20


def prompt_lengths(tokenizer: Any, prompts: Sequence[list[dict[str, Any]]], tools: list[Any] | None,
                   chat_template_kwargs: dict[str, Any] | None = None) -> list[int]:  # fmt: skip
    """Token count of each prompt with its generation prompt, as a trainer renders it before sampling."""
    lengths = []
    for messages in prompts:
        encoded = tokenizer.apply_chat_template(list(messages), tools=tools or None, add_generation_prompt=True,
                                                tokenize=True, return_dict=True, **(chat_template_kwargs or {}))  # fmt: skip
        ids = encoded["input_ids"]
        lengths.append(len(ids[0]) if ids and isinstance(ids[0], list) else len(ids))
    return lengths


def count(lengths: Sequence[int], ids: Sequence[str], max_prompt_length: int) -> dict[str, Any]:
    """The report of ``lengths`` against ``max_prompt_length``."""
    over = [(n, i) for n, i in zip(lengths, ids, strict=True) if n > max_prompt_length]
    longest = max(zip(lengths, ids, strict=True), default=(0, None))
    return {"rows": len(lengths), "over": len(over), "longest": longest[0], "longest_id": longest[1],
            "max_prompt_length": max_prompt_length, "over_ids": [i for _, i in over[:LISTED_IDS]]}  # fmt: skip


def rows_of(path: str, dataset: str, split: str) -> tuple[list[list[dict[str, Any]]], list[str]]:
    """The prompts of an export parquet file and an id for each (the question's ``qa_id`` where the row has it)."""
    import pyarrow.parquet as pq

    prompts, ids = [], []
    for n, row in enumerate(pq.read_table(path).to_pylist()):
        if dataset == "rl":
            messages = row["prompt"]
            ident = (row.get("extra_info") or {}).get("qa_id")
        else:
            turns = row["messages"]
            first_user = next(i for i, m in enumerate(turns) if m["role"] == "user")
            messages = turns[: first_user + 1]
            ident = row.get("qa_id") or row.get("id")
        prompts.append([{"role": m["role"], "content": m.get("content") or ""} for m in messages])
        ids.append(str(ident or f"{split}:{n}"))
    return prompts, ids


def measure(request: dict[str, Any]) -> dict[str, Any]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(request["tokenizer"])
    limit = int(request["max_prompt_length"])
    tools, kwargs = request.get("tools"), request.get("chat_template_kwargs") or {}
    report: dict[str, Any] = {"splits": {}}
    all_lengths: list[int] = []
    all_ids: list[str] = []
    for source in request.get("sources") or []:
        prompts, ids = rows_of(source["path"], source["dataset"], source["split"])
        lengths = prompt_lengths(tokenizer, prompts, tools, kwargs)
        report["splits"][source["split"]] = count(lengths, ids, limit)
        all_lengths += lengths
        all_ids += ids
    inline = request.get("prompts") or []
    if inline:
        lengths = prompt_lengths(tokenizer, [p["messages"] for p in inline], tools, kwargs)
        report["splits"]["prompts"] = count(lengths, [str(p["id"]) for p in inline], limit)
        all_lengths += lengths
        all_ids += [str(p["id"]) for p in inline]
    return {**count(all_lengths, all_ids, limit), **report}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--request", type=Path, required=True)
    args = parser.parse_args(argv)
    print(json.dumps(measure(json.loads(args.request.read_text(encoding="utf-8"))), sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
