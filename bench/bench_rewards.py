"""Benchmark: reward scoring throughput on ordinary and degenerate rollouts (no LLM).

Every registered reward (``training.rewards.REWARDS``; ``kg_hopper`` with a constant stand-in judge) scores:

- ``ordinary``: a few-round tool-loop rollout of about 3k characters (think, calls, responses, answer);
- degenerate rollouts of about 120k characters: an unclosed ``<think>``, 17k repeated ``<think>`` tags, 15k
  repeated ``<answer>`` tags, 8k nested ``<think>`` pairs, 10k unclosed ``<tool_call>`` tags, mixed-case tags,
  binary junk, and one deeply nested list answer.

It reports responses per second and megabytes of response text per second for each (reward, input), the
slowest case, and the ratio slowest-degenerate / ordinary per character (about 1 for linear parsing; the
quadratic parser before it took 28 s on the repeated ``<think>`` rollout and 7 s on repeated ``<answer>``).

    python bench/bench_rewards.py              # 3 repetitions per case
    python bench/bench_rewards.py --repeat 10 --json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from training.rewards import REWARDS, GroundTruth, get_reward  # noqa: E402 (after the sys.path set-up)

TRUTH = GroundTruth(
    answers=["Cambridge"],
    gold_paths=[[("Alan Turing", "studied at", "King's College, Cambridge"),
                 ("King's College, Cambridge", "located in", "Cambridge")]],
    graph_type="cs",
    question="In which city is the college where Alan Turing studied?",
)  # fmt: skip


def _ordinary() -> str:
    call = '<tool_call>\nnode_info(node_name="{}", graph_type="cs")\n</tool_call>'
    obs = "<tool_response>\nEntity: {0}\nDescription: " + "a long description " * 20 + "\n1. {1} | keywords: x\n</tool_response>"
    parts = []
    for a, b in (("Alan Turing", "King's College, Cambridge"), ("King's College, Cambridge", "Cambridge")):
        parts += [f"<think>I should look up {a}; it may lead to {b}.</think>", call.format(a), obs.format(a, b)]
    parts.append("<think>Alan Turing studied at King's College, Cambridge, located in Cambridge.</think>")
    parts.append("<answer>Cambridge</answer>")
    return "\n".join(parts)


CASES = {
    "ordinary": _ordinary(),
    "unclosed_think": "<think>" + "word " * 24_000,
    "repeated_think": "<think>" * 17_000,
    "repeated_answer": "<answer>" * 15_000,
    "nested_think": "<think>" * 8_000 + "x" + "</think>" * 8_000,
    "unclosed_tool_calls": "<tool_call>" * 10_000,
    "mixed_case": "<THINK><Answer>" * 8_000,
    "binary_junk": bytes(range(256)).decode("latin-1") * 470,
    "nested_list": "<answer>" + "[" * 49_995 + "]" * 49_995 + "</answer>",
}


class ConstantJudge:
    def reasoning_score(self, question, reasoning):
        return 0.5

    def answer_correct(self, question, predicted, gold):
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()
    rows = []
    for name in sorted(REWARDS):
        reward = get_reward(name, judge=ConstantJudge()) if name == "kg_hopper" else get_reward(name)
        for case, text in CASES.items():
            start = time.perf_counter()
            for _ in range(args.repeat):
                reward(text, TRUTH)
            per_call = (time.perf_counter() - start) / args.repeat
            rows.append({"reward": name, "case": case, "chars": len(text), "ms_per_call": round(per_call * 1e3, 3),
                         "calls_per_s": round(1 / per_call, 1), "mb_per_s": round(len(text) / per_call / 1e6, 2)})
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'reward':<14} {'case':<20} {'chars':>8} {'ms/call':>9} {'calls/s':>9} {'MB/s':>7}")
    for r in rows:
        print(f"{r['reward']:<14} {r['case']:<20} {r['chars']:>8} {r['ms_per_call']:>9} {r['calls_per_s']:>9} {r['mb_per_s']:>7}")
    slow = max((r for r in rows if r["case"] != "ordinary"), key=lambda r: r["ms_per_call"])
    ordinary = {r["reward"]: r for r in rows if r["case"] == "ordinary"}
    base = ordinary[slow["reward"]]
    ratio = (slow["ms_per_call"] / slow["chars"]) / (base["ms_per_call"] / base["chars"])
    print(f"\nslowest degenerate case: {slow['reward']} on {slow['case']}, {slow['ms_per_call']} ms for {slow['chars']} chars")
    print(f"its time per character / the ordinary rollout's: {ratio:.2f}")


if __name__ == "__main__":
    main()
