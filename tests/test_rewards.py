"""Rewards for RL (training/rewards.py) and the verl entry point (training/verl_reward.py)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from schemas.qa import QA, GoldPath, PathEdge, make_qa_id
from tasks.distill import common, cot
from tasks.export.rows import rl_ground_truth, rl_row
from training import rewards
from training.rewards import (
    REWARDS,
    GroundTruth,
    RewardError,
    eog_f1_path,
    get_reward,
    omne_post_sft,
    omne_stage1,
)
from training.verl_reward import compute_score

ROOT = Path(__file__).resolve().parents[1]

TRIPLES = [
    ("Alan Turing", "studied at", "King's College, Cambridge"),
    ("King's College, Cambridge", "located in", "Cambridge"),
]
TRUTH = GroundTruth(answers=["Cambridge"], gold_paths=[[*TRIPLES]], graph_type="cs")
CALL = '<tool_call>\nnode_info(node_name="Alan Turing", graph_type="cs")\n</tool_call>'


def _resp(
    answer: str | None = "Cambridge",
    *,
    think: str = "plan",
    calls: tuple[str, ...] = (),
) -> str:
    parts = [f"<think>{think}</think>", *calls]
    if answer is not None:
        parts.append(f"<answer>{answer}</answer>")
    return "\n".join(parts)


# -- answers ----------------------------------------------------------------------------------------------------


def test_em_ignores_surrounding_whitespace():
    r = omne_stage1(_resp("  \n Cambridge \t"), TRUTH)
    assert r.em and r.format_ok and r.score == 1.0
    assert omne_post_sft(_resp(" Cambridge "), TRUTH).score == 1.0


def test_last_answer_wins():
    assert omne_stage1(
        "<think>x</think><answer>Oxford</answer> wait <answer>Cambridge</answer>", TRUTH
    ).em
    r = omne_stage1("<think>x</think><answer>Cambridge</answer> no <answer>Oxford</answer>", TRUTH)
    assert r.answer == "Oxford" and not r.em and r.score == pytest.approx(0.1)


def test_answer_inside_think_does_not_count():
    r = omne_stage1("<think><answer>Cambridge</answer></think>", TRUTH)
    assert r.answer is None and r.score == 0.0


@pytest.mark.parametrize("name", sorted(set(REWARDS) - {"kg_hopper"}))
def test_missing_answer_scores_zero(name):
    r = get_reward(name)(_resp(None, think="nothing relevant"), TRUTH)
    assert r.answer is None and not r.format_ok and r.f1 == 0.0 and r.score == 0.0
    # an unclosed answer tag (cut-off output) is no answer either
    assert get_reward(name)("<think>x</think><answer>Cambridge", TRUTH).score == 0.0


def test_stage1_wrong_but_well_formed_gets_floor():
    assert omne_stage1(_resp("Oxford"), TRUTH).score == pytest.approx(0.1)


def test_post_sft_halves():
    assert omne_post_sft(_resp("Oxford"), TRUTH).score == pytest.approx(
        0.5
    )  # format only


# -- format ------------------------------------------------------------------------------------------------------


def test_malformed_tool_call_breaks_format():
    bad = "<tool_call>\nnode_info(node_name=\n</tool_call>"
    r = omne_stage1(_resp("Cambridge", calls=(bad,)), TRUTH)
    assert r.n_bad_calls == 1 and not r.format_ok and r.score == 0.0
    unknown = (
        '<tool_call>\n{"name": "teleport", "arguments": {"q": "x"}}\n</tool_call>'
    )
    assert not omne_stage1(_resp("Cambridge", calls=(unknown,)), TRUTH).format_ok


def test_hermes_json_call_is_well_formed():
    call = '<tool_call>\n{"name": "node_info", "arguments": {"node_name": "Alan Turing", "graph_type": "cs"}}\n</tool_call>'
    r = omne_stage1(_resp("Cambridge", calls=(call,)), TRUTH)
    assert r.format_ok and r.n_tool_calls == 1 and r.score == 1.0


def test_unclosed_think_breaks_format():
    assert not omne_stage1("<answer>Cambridge</answer><think>more", TRUTH).format_ok
    # a lone leading </think> is fine where the template opens the block in the prompt, and only there
    opened = "reasoning</think>\n<answer>Cambridge</answer>"
    assert get_reward("omne_stage1", think_opened_in_prompt=True)(opened, TRUTH).score == 1.0
    assert omne_stage1(opened, TRUTH).score == 0.0 and omne_post_sft(opened, TRUTH).format_ok


# -- repeats -----------------------------------------------------------------------------------------------------


def test_repeat_penalty_counts_identical_name_and_arguments():
    other = (
        '<tool_call>\nnode_info(node_name="Cambridge", graph_type="cs")\n</tool_call>'
    )
    same_json = '<tool_call>\n{"name": "node_info", "arguments": {"graph_type": "cs", "node_name": "Alan Turing"}}\n</tool_call>'
    r = omne_post_sft(_resp("Cambridge", calls=(CALL, other, CALL, same_json)), TRUTH)
    assert (
        r.n_tool_calls == 4 and r.n_repeat == 2
    )  # CALL twice more (written two ways); `other` differs
    assert r.score == pytest.approx(1.0 - 0.2)
    assert omne_post_sft(_resp("Cambridge", calls=(CALL, other)), TRUTH).n_repeat == 0


def test_calls_inside_think_are_not_counted():
    r = omne_post_sft(
        _resp("Cambridge", think=f"maybe {CALL} {CALL}", calls=(CALL,)), TRUTH
    )
    assert r.n_tool_calls == 1 and r.n_repeat == 0


# -- Explore-on-Graph --------------------------------------------------------------------------------------------


def test_f1_on_partial_sets():
    truth = GroundTruth(answers=["Cambridge", "Oxford"], graph_type="cs")
    assert eog_f1_path(0.0)(
        '<answer>["cambridge", "Oxford", "London"]</answer>', truth
    ).f1 == pytest.approx(0.8)
    assert eog_f1_path(0.0)(
        '<answer>["Cambridge"]</answer>', truth
    ).score == pytest.approx(2 / 3)
    assert eog_f1_path(0.0)('<answer>["Paris"]</answer>', truth).score == 0.0
    # entity names with commas are one entity, not split
    comma = GroundTruth(answers=["King's College, Cambridge"], graph_type="cs")
    assert (
        rewards.measure("<answer>King's College, Cambridge</answer>", comma).f1 == 1.0
    )


def test_path_coverage_substrings_case_insensitive():
    think = "ALAN turing STUDIED AT king's college,   cambridge, which is LOCATED IN Cambridge."
    assert rewards.measure(_resp(None, think=think), TRUTH).path_coverage == 1.0
    half = "alan turing studied at King's College, Cambridge"
    assert rewards.measure(
        _resp(None, think=half), TRUTH
    ).path_coverage == pytest.approx(0.5)


def test_path_coverage_reads_only_reasoning():
    """Tool observations echo triples; only <think> text earns the path reward."""
    obs = "<tool_response>Alan Turing studied at King's College, Cambridge located in Cambridge</tool_response>"
    r = rewards.measure(
        f"<think>hmm</think>{CALL}{obs}<answer>Cambridge</answer>", TRUTH
    )
    assert r.path_coverage == 0.0


def test_path_coverage_takes_best_gold_path():
    truth = GroundTruth(
        answers=["Cambridge"],
        gold_paths=[[("x", "y", "z")], [*TRIPLES]],
        graph_type="cs",
    )
    think = "Alan Turing studied at King's College, Cambridge; located in Cambridge"
    assert rewards.measure(_resp(None, think=think), truth).path_coverage == 1.0


def test_f1_weight_really_counts():
    """Guard against Explore-on-Graph's released code, which multiplies F1 by 0."""
    right_no_path = _resp("['Cambridge']", think="no triples here")
    assert REWARDS["eog_f1_path"](right_no_path, TRUTH).score == pytest.approx(0.8)
    full = _resp(
        "['Cambridge']",
        think="Alan Turing studied at King's College, Cambridge, located in Cambridge",
    )
    assert REWARDS["eog_f1_path"](full, TRUTH).score == pytest.approx(1.0)
    path_only = _resp(
        "['Oxford']",
        think="Alan Turing studied at King's College, Cambridge, located in Cambridge",
    )
    assert REWARDS["eog_f1_path"](path_only, TRUTH).score == pytest.approx(0.2)
    assert eog_f1_path(0.5)(right_no_path, TRUTH).score == pytest.approx(0.5)


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_path_weight_validated(bad):
    with pytest.raises(ValueError):
        eog_f1_path(bad)


# -- trajectories are accepted by the same rules RL rewards by -------------------------------------------------------


def test_trajectories_use_the_reward_rules():
    for module, name in ((common, "normalize_answer"), (common, "path_coverage"), (cot, "answer_set_matches")):
        assert getattr(module, name) is getattr(rewards, name)


# -- registry and ranges ---------------------------------------------------------------------------------------------


def test_registry_covers_all_names():
    assert set(REWARDS) == {"omne_stage1", "omne_post_sft", "eog_f1_path", "eog_joint", "graph_rft", "kg_hopper"}
    with pytest.raises(RewardError, match="omne_stage1"):
        get_reward("nope")
    with pytest.raises(RewardError, match="path_weight"):
        get_reward("omne_stage1", path_weight=0.3)


RESPONSES = [
    "",
    "garbage",
    _resp("Cambridge"),
    _resp("Oxford", calls=(CALL, CALL, CALL)),
    _resp(
        "['Cambridge', 'Oxford']",
        think="Alan Turing studied at King's College, Cambridge",
    ),
    "<answer></answer>",
    "<tool_call>not a call</tool_call><answer>Cambridge</answer>",
]


@pytest.mark.parametrize("name", sorted(REWARDS))
@pytest.mark.parametrize("text", RESPONSES)
def test_score_is_float_in_documented_range(name, text):
    r = get_reward(name)(text, TRUTH)
    assert type(r.score) is float and math.isfinite(r.score)
    low, high = {
        "omne_post_sft": (-rewards.REPEAT_PENALTY * max(r.n_tool_calls - 1, 0), 1.0),
        "graph_rft": (-0.1, 1.0),
        "kg_hopper": (0.0, 3.3),
        "eog_joint": (0.0, 1.0 + rewards.DEFAULT_PATH_ALPHA),
    }.get(name, (0.0, 1.0))
    assert low - 1e-9 <= r.score <= high + 1e-9
    assert 0.0 <= r.f1 <= 1.0 and 0.0 <= r.path_coverage <= 1.0


# -- verl entry point on a real exported row -------------------------------------------------------------------------


@pytest.fixture
def rl_example() -> dict:
    path = ["Alan Turing", "King's College, Cambridge", "Cambridge"]
    edges = [PathEdge(head=s, tail=o, relation=r) for s, r, o in TRIPLES]
    question = "In which city is the college where Alan Turing studied?"
    qa = QA(qa_id=make_qa_id("cs", "snap", question, path[-1], path), domain="cs", snapshot_id="snap",
            seed=path[0], hop_class="1-2", path=path, path_edges=edges, question=question, answer=path[-1],
            split="train")  # fmt: skip
    gold = [
        GoldPath(
            qa_id=qa.qa_id,
            rank=0,
            path=path,
            triples=[e.triple() for e in edges],
            verdict="valid",
        )
    ]
    row = rl_row(qa, gold, 0, ["entity_matcher", "node_info"])
    assert row["reward_model"]["ground_truth"] == rl_ground_truth(qa, gold)
    return row


def test_ground_truth_parses_exported_json(rl_example):
    gt = rl_example["reward_model"]["ground_truth"]
    assert isinstance(gt, str)
    truth = GroundTruth.parse(gt)
    assert (
        truth.answers == ["Cambridge"]
        and truth.graph_type == "cs"
        and truth.gold_paths == [TRIPLES]
    )
    assert GroundTruth.parse(json.loads(gt)) == truth
    with pytest.raises(ValidationError):
        GroundTruth.parse('{"answers": [], "graph_type": "cs"}')


def test_compute_score_on_exported_row(rl_example, monkeypatch):
    monkeypatch.delenv("HOPFORGE_REWARD", raising=False)
    gt, extra = rl_example["reward_model"]["ground_truth"], rl_example["extra_info"]
    text = _resp(
        " Cambridge ",
        think="Alan Turing studied at King's College, Cambridge, located in Cambridge",
        calls=(CALL, CALL),
    )
    out = compute_score(rl_example["data_source"], text, gt, extra)
    assert out["score"] == pytest.approx(
        0.9
    )  # default omne_post_sft: 1 − 0.1 for the repeat
    assert (
        all(isinstance(v, (int, float)) for v in out.values()) and out["n_repeat"] == 1
    )
    monkeypatch.setenv("HOPFORGE_REWARD", "omne_stage1")
    assert compute_score(rl_example["data_source"], text, gt, extra)["score"] == 1.0
    # the row's own choice wins over the environment
    out = compute_score(
        rl_example["data_source"], text, gt, {**extra, "reward": "eog_f1_path"}
    )
    assert out["score"] == pytest.approx(1.0) and out["path_coverage"] == 1.0
    assert (
        type(compute_score(rl_example["data_source"], "", gt, None)["score"]) is float
    )
    with pytest.raises(RewardError):
        compute_score(rl_example["data_source"], text, gt, {**extra, "reward": "nope"})


def test_verl_reward_loads_by_path_with_light_imports(tmp_path):
    """verl's workers load the file by path; it must not drag in torch, prefect or the graph stack."""
    code = (
        "import runpy, sys\n"
        f"ns = runpy.run_path({str(ROOT / 'training' / 'verl_reward.py')!r})\n"
        "assert callable(ns['compute_score'])\n"
        "allowed = {'pydantic', 'pydantic_core', 'annotated_types', 'typing_extensions', 'typing_inspection',"
        " 'tasks', 'schemas', 'training'}\n"
        "top = {m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names) - allowed\n"
        "top = {m for m in top if not m.startswith('_')}\n"
        "print(sorted(top))\n"
        "assert not top, top\n"
    )
    # run from elsewhere, with nothing of the repository on the path: the file must find its own root
    done = subprocess.run(
        [sys.executable, "-I", "-c", code],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr + done.stdout


# -- Omne-R1 stage 1 as the paper states it ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("<think>Turing studied there.</think>\n<answer>Cambridge</answer>", 1.0),  # 1 × (0.1 + 0.9·1)
        ("<think>x</think><answer>Oxford</answer>", 0.1),  # 1 × (0.1 + 0.9·0)
        ("<answer>Cambridge</answer>", 0.0),  # no <think>: R_format = 0
        ("<THINK>x</THINK><ANSWER>Cambridge</ANSWER>", 0.0),  # upper-case tags
        ("<think>x</think><Answer>Cambridge</Answer>", 0.0),
        ("<answer>Cambridge</answer><think>x</think>", 0.0),  # answer before the reasoning
        ("<think>x</think><answer>cambridge</answer>", 0.1),  # strict EM: case counts (paper §4.1.2)
        ("<think>x</think><answer>  Cambridge\n</answer>", 1.0),  # whitespace does not
    ],
)
def test_stage1_by_hand(text, score):
    assert omne_stage1(text, TRUTH).score == pytest.approx(score)


def test_stage1_options():
    lenient = get_reward("omne_stage1", normalizer="lenient")
    assert lenient("<think>x</think><answer>cambridge</answer>", TRUTH).score == 1.0
    any_case = get_reward("omne_stage1", case_sensitive_tags=False)
    assert any_case("<THINK>x</THINK><ANSWER>Cambridge</ANSWER>", TRUTH).score == 1.0
    with pytest.raises(RewardError, match="normalizer"):
        get_reward("omne_stage1", normalizer="loose")


# Rollouts as verl decodes them (Qwen3 template, special tokens skipped): each assistant turn, then the tool reply
# in a user turn, then the next assistant turn. Written by hand, not produced by the code under test.
MATCH = ('<tool_call>\n{"name": "entity_matcher", "arguments": {"node_name": "On Computable Numbers", '
         '"graph_type": "cs"}}\n</tool_call>')
NODE = '<tool_call>\n{"name": "node_info", "arguments": {"node_name": "Alan Turing", "graph_type": "cs"}}\n</tool_call>'
REPLY_1 = "user\n<tool_response>\nOn Computable Numbers: a 1936 paper by Alan Turing.\n</tool_response>\nassistant\n"
REPLY_2 = "user\n<tool_response>\nAlan Turing -[studied at]-> King's College, Cambridge\n</tool_response>\nassistant\n"
THINK_1 = "<think>\nI need the author of the paper first.\n</think>\n\n"
THINK_2 = "<think>\nThe author is Alan Turing; now his college.\n</think>\n\n"
THINK_3 = "<think>\nHe studied at King's College, Cambridge, which is in Cambridge.\n</think>\n\n"


@pytest.mark.parametrize(("text", "score", "why"), [
    # every turn that calls a tool reasons first: the format holds (1 × (0.1 + 0.9·1))
    (THINK_1 + MATCH + REPLY_1 + THINK_2 + NODE + REPLY_2 + THINK_3 + "<answer>Cambridge</answer>", 1.0, None),
    # the first turn calls straight away (the behaviour §3.3.2 says the format reward exists to stop)
    (MATCH + REPLY_1 + THINK_2 + NODE + REPLY_2 + THINK_3 + "<answer>Cambridge</answer>", 0.0, "turn 1"),
    # the second turn calls without reasoning, though the others reason
    (THINK_1 + MATCH + REPLY_1 + NODE + REPLY_2 + THINK_3 + "<answer>Cambridge</answer>", 0.0, "turn 2"),
    # reasoning of an earlier turn does not cover a later call
    (THINK_1 + THINK_2 + MATCH + REPLY_1 + NODE + REPLY_2 + THINK_3 + "<answer>Cambridge</answer>", 0.0, "turn 2"),
    # reasoning written after the call is not reasoning before it
    (MATCH + THINK_1 + REPLY_1 + THINK_2 + NODE + REPLY_2 + THINK_3 + "<answer>Cambridge</answer>", 0.0, "turn 1"),
    # an empty think block is no reasoning (the no-think template writes one)
    ("<think>\n\n</think>\n\n" + MATCH + REPLY_1 + THINK_3 + "<answer>Cambridge</answer>", 0.0, "turn 1"),
    # a call mentioned inside the reasoning is not a call of the turn
    ("<think>\nMaybe " + NODE + " later.\n</think>\n\n<answer>Oxford</answer>", 0.1, None),
    # one turn, reasoning then a call then the answer after the reply: well formed, wrong answer
    (THINK_1 + MATCH + REPLY_1 + THINK_3 + "<answer>Oxford</answer>", 0.1, None),
])  # fmt: skip
def test_stage1_turn_that_calls_without_thinking_fails_the_format(text, score, why):
    r = omne_stage1(text, TRUTH)
    assert r.score == pytest.approx(score)
    if why:
        assert not r.format_ok and r.reason == f"{why} calls a tool without <think> reasoning before the call"
    else:
        assert r.format_ok
    # the post-SFT reward does not ask for reasoning (the no-think model trains with it)
    assert omne_post_sft(text, TRUTH).format_ok


def test_stage1_reasoning_opened_by_the_template_counts_for_the_first_turn():
    opened = get_reward("omne_stage1", think_opened_in_prompt=True)
    # the template opened <think> in the prompt: turn 1 reasons up to a lone </think>, later turns open their own
    text = "I need the author first.\n</think>\n\n" + MATCH + REPLY_1 + THINK_3 + "<answer>Cambridge</answer>"
    assert opened(text, TRUTH).score == 1.0
    assert opened("\n</think>\n\n" + MATCH + REPLY_1 + THINK_3 + "<answer>Cambridge</answer>", TRUTH).score == 0.0
    assert opened("I look.\n</think>\n\n" + MATCH + REPLY_1 + NODE + REPLY_2 + THINK_3 + "<answer>Cambridge</answer>",
                  TRUTH).reason == "turn 2 calls a tool without <think> reasoning before the call"  # fmt: skip


def test_post_sft_by_hand():
    other = '<tool_call>\nnode_info(node_name="Cambridge", graph_type="cs")\n</tool_call>'
    # (1 + 1)/2 − 0.1·2: CALL three times is two repeats
    assert omne_post_sft(_resp("Cambridge", calls=(CALL, CALL, other, CALL)), TRUTH).score == pytest.approx(0.8)
    # (0 + 1)/2: right answer, upper-case tag elsewhere breaks the format
    assert omne_post_sft("<THINK>x</THINK><answer>Cambridge</answer>", TRUTH).score == pytest.approx(0.5)
    # no think needed after SFT (the no-think model)
    assert omne_post_sft("<answer>Cambridge</answer>", TRUTH).score == 1.0
    assert get_reward("omne_post_sft", repeat_penalty=0.25)(_resp("x", calls=(CALL, CALL)), TRUTH).score == pytest.approx(0.25)


# -- Explore-on-Graph eq. 5 --------------------------------------------------------------------------------------


def test_eog_joint_by_hand():
    truth = GroundTruth(answers=["Cambridge", "Oxford"], gold_paths=[[*TRIPLES]], graph_type="cs")
    half_path = _resp('["Cambridge", "London"]', think="Alan Turing studied at King's College, Cambridge")
    # F1 = 2·(1/2·1/2)/(1/2+1/2) = 0.5; R_path = 1/2; α = 0.25 -> 0.5 + 0.125
    assert get_reward("eog_joint")(half_path, truth).score == pytest.approx(0.625)
    assert get_reward("eog_joint", path_alpha=1.0)(half_path, truth).score == pytest.approx(1.0)
    # (1−λ)·F1 + λ·R_path with λ = 0.3
    assert get_reward("eog_f1_path", path_weight=0.3)(half_path, truth).score == pytest.approx(0.7 * 0.5 + 0.3 * 0.5)
    assert get_reward("eog_f1_path")("<think>x</think><ANSWER>Cambridge</ANSWER>", truth).score == 0.0


# -- Graph-RFT eqs. 2–8 ------------------------------------------------------------------------------------------

NEIGHBOR = "<neighbor_search>Alan Turing, studied at</neighbor_search><neighbor_information>{}</neighbor_information>"
WEB = "<web_search>Turing college city</web_search><web_information>{}</web_information>"


@pytest.mark.parametrize(
    ("text", "setting", "score", "graph_hit", "web_hit"),
    [
        # format right: R_acc = max(0.1, F1)
        ("<think>a</think>" + NEIGHBOR.format("King's College -> Cambridge") + "<answer>Cambridge</answer>",
         "complete", 1.0, True, False),
        ("<think>a</think><answer>Oxford</answer>", "complete", 0.1, False, False),
        ('<think>a</think><answer>["Cambridge", "Oxford"]</answer>', "complete", 2 / 3, False, False),
        # format wrong (no think): R_acc = 0, then retrieval credit, penalty, or 0
        (NEIGHBOR.format("located in Cambridge") + "<answer>Oxford</answer>", "complete", 0.1, True, False),
        (WEB.format("the city of cambridge") + "<answer>Oxford</answer>", "complete", 0.1, False, True),
        ("<answer>Oxford</answer>", "complete", 0.0, False, False),
        ("<answer>Oxford</answer>", "incomplete", -0.1, False, False),
        (WEB.format("nothing useful") + "<answer>Oxford</answer>", "incomplete", -0.1, False, False),
    ],
)
def test_graph_rft_by_hand(text, setting, score, graph_hit, web_hit):
    r = get_reward("graph_rft", kg_setting=setting)(text, TRUTH)
    assert r.score == pytest.approx(score) and r.graph_hit is graph_hit and r.web_hit is web_hit


def test_graph_rft_reads_hopforge_tool_responses_and_row_setting():
    call = '<tool_call>\n{"name": "neighbor_search", "arguments": {"entity": "Alan Turing", "relation": "studied at", "graph_type": "cs"}}\n</tool_call>'
    text = f"{call}<tool_response>1. Cambridge | located in</tool_response><answer>Oxford</answer>"
    assert get_reward("graph_rft")(text, TRUTH).graph_hit
    incomplete = TRUTH.model_copy(update={"kg_setting": "incomplete"})
    assert get_reward("graph_rft")("<answer>Oxford</answer>", incomplete).score == pytest.approx(-0.1)


# -- KG-Hopper eqs. 1–5 ------------------------------------------------------------------------------------------


class ScriptedJudge:
    def __init__(self, reasoning, answer):
        self.reasoning, self.answer, self.asked = reasoning, answer, []

    def reasoning_score(self, question, reasoning):
        self.asked.append(("reasoning", reasoning))
        return self.reasoning

    def answer_correct(self, question, predicted, gold):
        self.asked.append(("answer", predicted, tuple(gold)))
        return self.answer


HOPPER = ("<think>I do not know. <search>Alan Turing</search> <searched_triples>(Alan Turing, studied at, King's "
          "College)</searched_triples> then <search>King's College</search> found it.</think> <answer>{}</answer>")


@pytest.mark.parametrize(
    ("text", "reasoning", "answer", "score"),
    [
        (HOPPER.format("Cambridge"), 0.7, True, 0.8 + 0.5 + 0.7 + 1),  # n = 2: min(1.0, 0.8)
        (HOPPER.format("Oxford"), 0.2, False, 0.8 + 0.5 + 0.2 + 0),
        ("<think>one <search>Turing</search></think><answer>Cambridge</answer>", 0.5, True, 0.5 + 0.5 + 0.5 + 1),
        ("<think>none</think><answer>Cambridge</answer>", 0.9, True, 0.0 + 0.5 + 0.9 + 1),
        ("preamble <think>x</think><answer>Cambridge</answer>", 0.9, True, 0.0 + 0.0 + 0.9 + 1),  # format broken
        ("<think>x <search></search></think><answer>Cambridge</answer>", 0.4, True, 0.5 + 0.0 + 0.4 + 1),
    ],
)
def test_kg_hopper_by_hand(text, reasoning, answer, score):
    judge = ScriptedJudge(reasoning, answer)
    r = get_reward("kg_hopper", judge=judge)(text, TRUTH)
    assert r.score == pytest.approx(score) and r.judge_unavailable == 0


def test_kg_hopper_records_an_unavailable_judge():
    r = get_reward("kg_hopper", judge=ScriptedJudge(None, None))(HOPPER.format("Cambridge"), TRUTH)
    # reasoning -> 0.5 (recorded), answer -> the rule-based match (lenient EM = 1)
    assert r.judge_unavailable == 2 and "judge unavailable" in r.reason
    assert r.score == pytest.approx(0.8 + 0.5 + rewards.REASONING_UNAVAILABLE + 1.0)
    none = get_reward("kg_hopper", judge=ScriptedJudge(None, None), answer_fallback="none")
    assert none(HOPPER.format("Cambridge"), TRUTH).judge_answer == 0.5
    # no answer: nothing to ask, and 0 for the answer term
    judge = ScriptedJudge(0.3, True)
    r = get_reward("kg_hopper", judge=judge)("<think>x</think>", TRUTH)
    assert r.judge_answer == 0.0 and [a[0] for a in judge.asked] == ["reasoning"]


def test_gateway_judge_batches_caches_and_degrades(tmp_path):
    """The judge role through the gateway on a scripted in-process stand-in: two verdicts asked once each."""
    from gateway.client import Structured
    from training.judges import AnswerVerdict, GatewayJudge, ReasoningVerdict

    class Gateway:
        def __init__(self):
            self.calls = []

        async def structured(self, role, messages, output, **kw):
            self.calls.append(output.__name__)
            if output is ReasoningVerdict:
                return Structured(role=role, value=ReasoningVerdict(score=0.6))
            from gateway.client import LLMFailure

            return Structured(role=role, failure=LLMFailure(role=role, kind="timeout", message="judge timed out"))

        async def gather(self, calls):
            import asyncio

            return list(await asyncio.gather(*calls))

    gw = Gateway()
    judge = GatewayJudge(gw)  # type: ignore[arg-type]
    judge.prefetch([("q", "think", "Cambridge", ["Cambridge"]), ("q", "think", "Cambridge", ["Cambridge"])])
    assert sorted(gw.calls) == ["AnswerVerdict", "ReasoningVerdict"]
    assert judge.reasoning_score("q", "think") == 0.6 and judge.answer_correct("q", "Cambridge", ["Cambridge"]) is None
    assert len(gw.calls) == 2  # served from memory
    assert AnswerVerdict(correct=True).correct


# -- compute_score: every ground-truth shape, empty solutions, options ------------------------------------------


@pytest.mark.parametrize(
    "gt",
    [
        '{"answers": ["Cambridge"], "graph_type": "cs"}',
        {"answers": ["Cambridge"], "graph_type": "cs"},
        "Cambridge",
        '["Cambridge"]',
        ["Cambridge"],
        '"Cambridge"',
        {"target": ["Cambridge"]},
        {"answer": "Cambridge"},
    ],
)
def test_compute_score_accepts_every_ground_truth_shape(gt, monkeypatch):
    monkeypatch.delenv("HOPFORGE_REWARD", raising=False)
    out = compute_score("hopforge", "<think>x</think><answer>Cambridge</answer>", gt)
    assert out["score"] == 1.0 and out["em"] == 1.0


def test_compute_score_numbers_stay_answers():
    assert compute_score("x", "<answer>1945</answer>", "1945")["em"] == 1.0


@pytest.mark.parametrize("solution", [None, "", "   \n"])
def test_compute_score_empty_solution_scores_zero_with_reason(solution, monkeypatch):
    monkeypatch.delenv("HOPFORGE_REWARD", raising=False)
    out = compute_score("x", solution, "Cambridge")
    assert out["score"] == 0.0 and out["empty_response"] == 1.0
    assert set(out) == set(compute_score("x", "<answer>Cambridge</answer>", "Cambridge"))  # verl stacks keys


def test_compute_score_honours_and_checks_reward_kwargs(monkeypatch):
    monkeypatch.delenv("HOPFORGE_REWARD", raising=False)
    text = _resp("Cambridge", think="no triples")
    assert compute_score("x", text, TRUTH.model_dump(), reward="eog_f1_path")["score"] == pytest.approx(0.8)
    assert compute_score("x", text, TRUTH.model_dump(), reward="eog_f1_path", path_weight=0.5)["score"] == pytest.approx(0.5)
    row = {"reward": "eog_f1_path", "reward_kwargs": {"path_weight": 0.0}}
    assert compute_score("x", text, TRUTH.model_dump(), row, path_weight=0.5)["score"] == pytest.approx(1.0)
    # verl's own keywords are accepted; a misspelt option is not ignored
    assert compute_score("x", text, "Cambridge", reward_router_address=None, reward_model_tokenizer=None)["score"] == 1.0
    with pytest.raises(RewardError, match="path_wieght"):
        compute_score("x", text, "Cambridge", reward="eog_f1_path", path_wieght=0.5)


@pytest.mark.parametrize("gt", ["", "   ", "{}", '{"answers": []}', '{"answers": ["a"], "bogus": 1}', 42.5, []])
def test_compute_score_rejects_unreadable_ground_truth(gt):
    with pytest.raises(RewardError):
        compute_score("x", "<answer>a</answer>", gt)


def test_compute_score_batch_matches_single_calls(monkeypatch):
    from training.verl_reward import compute_score_batch

    monkeypatch.delenv("HOPFORGE_REWARD", raising=False)
    texts = [_resp("Cambridge"), None, _resp("Oxford")]
    out = compute_score_batch(["x"] * 3, texts, ["Cambridge"] * 3, None)
    assert [o["score"] for o in out] == [compute_score("x", t, "Cambridge")["score"] for t in texts] == [1.0, 0.0, 0.5]


# -- linear time on degenerate rollouts ---------------------------------------------------------------------------

def degenerate(case: str, n: int = 10) -> str:
    """A degenerate response of kind ``case``; ``n`` = 10 gives at least 100k characters, ``n`` = 1 a tenth."""
    return {
        "unclosed_think": lambda: "<think>" + "word " * 2_000 * n,
        "repeated_think": lambda: "<think>" * 1_500 * n,
        "repeated_answer": lambda: "<answer>" * 1_300 * n,
        "repeated_close": lambda: "</think>" * 1_300 * n + "<answer>Cambridge</answer>",
        "nested": lambda: "<think>" * 700 * n + "x" + "</think>" * 700 * n,
        "tool_calls": lambda: "<tool_call>" * 950 * n,
        "responses": lambda: "<tool_response>" * 750 * n,
        "mixed_case": lambda: "<THINK><Answer>" * 700 * n,
        "binary_junk": lambda: bytes(range(256)).decode("latin-1") * 40 * n,
        "brackets": lambda: "<answer>" + "[" * 5_000 * n + "]" * 5_000 * n + "</answer>",
    }[case]()


DEGENERATE = {case: degenerate(case) for case in (
    "unclosed_think", "repeated_think", "repeated_answer", "repeated_close", "nested", "tool_calls", "responses",
    "mixed_case", "binary_junk", "brackets")}


@pytest.mark.parametrize("name", sorted(REWARDS))
@pytest.mark.parametrize("case", sorted(DEGENERATE))
def test_degenerate_100k_responses_score_fast(name, case):
    """Quadratic parsing took 7–28 s on such inputs; linear parsing takes milliseconds. Checked as growth, which
    load on a shared machine does not change: ten times the text may cost at most 25 times the time (linear: ~10,
    quadratic: ~100), best of five each, measured in turn, and the tenth counted as at least 1 ms, below which a busy machine's jitter
    decides the ratio (a quadratic parser still shows: it took seconds on the whole text). No cap in seconds: a busy
    machine would decide it."""
    import time

    text = DEGENERATE[case]
    assert len(text) >= 100_000
    reward = get_reward(name, judge=ScriptedJudge(0.5, False)) if name == "kg_hopper" else get_reward(name)

    def took(t: str) -> float:
        start = time.perf_counter()
        r = reward(t, TRUTH)
        seconds = time.perf_counter() - start
        assert math.isfinite(r.score)
        return seconds

    tenth = degenerate(case, 1)
    # interleaved, so that a burst of load falls on both sizes alike
    runs = [(took(tenth), took(text)) for _ in range(5)]
    small, large = min(a for a, _ in runs), min(b for _, b in runs)
    assert large < 25 * max(small, 1e-3), f"{name} on {case}: {large:.4f} s against {small:.4f} s for a tenth"
