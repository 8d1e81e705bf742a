"""Difficulty labels, attempt bookkeeping and the solver's k cached attempts; pictures; version diffs; Hub checks."""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET

import pytest

from eval.evaluate import EvalItem
from gateway.cache import ResponseCache
from gateway.client import LLMGateway
from gateway.usage import UsageLedger
from schemas.config import load_settings
from schemas.qa import QA, PathEdge
from tasks.export.hub import PublishError, check_publish, check_repo_id, publish_version
from tasks.export.pictures import PICTURES, artifact_markdown, card_section, picture_data, render
from tasks.export.versions import diff, diff_markdown, summarize, version_fingerprint
from eval.difficulty import (
    DifficultyConfig,
    DifficultyError,
    drop_labelled,
    label_for,
    measure,
    rates_by_hop_class,
    summarize_attempts,
)


def _qa(qa_id: str = "q1", answer: str = "Oakshade", hop: str = "3+") -> QA:
    return QA(qa_id=qa_id, domain="cs", snapshot_id="s", seed="Aldermoor", hop_class=hop, path=["Aldermoor", answer],
              path_edges=[PathEdge(head="Aldermoor", tail=answer, relation="trades with")],
              question="Starting from Aldermoor, which place is next?", answer=answer, attempt_id=f"a-{qa_id}")  # fmt: skip


def _item(mode: str, em: bool, end: str = "answer") -> EvalItem:
    return EvalItem(qa_id="q1", mode=mode, domain="cs", hop_class="3+", question="?", answers=["Oakshade"], em=em,
                    end_reason=end)  # fmt: skip


@pytest.mark.parametrize(("tools", "no_tools", "label"), [
    (0.0, 1.0, "trivial"), (1.0, 1.0, "trivial"), (1.0, 0.5, "easy"), (0.75, None, "easy"), (0.5, 0.0, "medium"),
    (0.25, 0.0, "medium"), (0.2, 0.0, "hard"), (0.0, 0.5, "unsolved"), (None, 0.5, "medium"), (None, None, "unsolved"),
])  # fmt: skip
def test_label_for(tools, no_tools, label):
    assert label_for(tools, no_tools) == label


def test_summarize_attempts_counts_passes_and_refuses_an_outage():
    cfg = DifficultyConfig(k=4)
    items = [_item("tools", e) for e in (True, True, False, True)] + [_item("no_tools", e) for e in (False,) * 4]
    row = summarize_attempts(_qa(), items, cfg, solver_model="m", run_id="r")
    assert (row.tools_passes, row.tools_pass_rate, row.no_tools_pass_rate, row.label) == (3, 0.75, 0.0, "easy")
    # an attempt the endpoint never answered is not a wrong answer: no row, so the next run measures it again
    assert summarize_attempts(_qa(), [*items[:-1], _item("no_tools", False, "error")], cfg, solver_model="m",
                              run_id="r") is None  # fmt: skip
    with pytest.raises(DifficultyError, match="expected 4 tools attempts, got 3"):
        summarize_attempts(_qa(), items[1:], cfg, solver_model="m", run_id="r")


@pytest.mark.parametrize(("cfg", "message"), [
    (DifficultyConfig(k=0), "solver k must be >= 1, got 0"),
    (DifficultyConfig(modes=("gold_context",)), "unknown or no solver mode(s) ['gold_context']; choose from tools, no_tools"),
    (DifficultyConfig(modes=()), "unknown or no solver mode(s) []; choose from tools, no_tools"),
    (DifficultyConfig(temperature=3.0), "solver temperature must be in [0, 2], got 3.0"),
])  # fmt: skip
def test_config_errors(cfg, message):
    with pytest.raises(DifficultyError) as info:
        cfg.check()
    assert str(info.value) == message


def test_drop_labelled_keeps_unmeasured_questions():
    cfg = DifficultyConfig(k=1, modes=("no_tools",))
    easy = summarize_attempts(_qa("q1"), [_item("no_tools", True)], cfg, solver_model="m", run_id="r")
    kept, dropped = drop_labelled([_qa("q1"), _qa("q2")], {"q1": easy}, ["trivial"])
    assert [q.qa_id for q in kept] == ["q2"] and [q.qa_id for q in dropped] == ["q1"]
    with pytest.raises(DifficultyError, match="unknown difficulty label"):
        drop_labelled([], {}, ["boring"])
    table = rates_by_hop_class([easy])
    assert table[-1] == {"domain": "all", "hop_class": "3+", "n": 1, "pass_rate_tools": None, "pass_rate_no_tools": 1.0,
                         "trivial": 1, "easy": 0, "medium": 0, "hard": 0, "unsolved": 0}  # fmt: skip


def test_k_attempts_are_distinct_cached_calls(fake_llm, tmp_path):
    """Each attempt is its own request (its seed differs), and measuring again repeats none of them."""
    fake_llm.add(reply=lambda body: "<answer>Oakshade</answer>" if body["seed"] % 2 else "<answer>Nowhere</answer>")
    settings = load_settings(data_dir=tmp_path, roles={"policy": {"base_url": fake_llm.base_url, "model": "fake-model",
                                                                   "max_retries": 0}})  # fmt: skip
    cfg = DifficultyConfig(k=4, modes=("no_tools",), seed=10)

    async def once():
        gw = LLMGateway(settings, cache=ResponseCache(settings.cache_path), ledger=UsageLedger())
        try:
            return await measure(gw, None, _qa(), cfg, solver_model="fake-model", run_id="r")
        finally:
            await gw.aclose()

    row = asyncio.run(once())
    assert fake_llm.calls() == 4 and row.no_tools_passes == 2 and row.label == "medium"
    again = asyncio.run(once())
    assert fake_llm.calls() == 4, "a second measurement must come from the cache"
    assert (again.no_tools_passes, again.label) == (2, "medium")
    with pytest.raises(DifficultyError, match="needs a tool environment"):
        asyncio.run(measure(None, None, _qa(), DifficultyConfig(), solver_model="m", run_id="r"))  # type: ignore[arg-type]


# -- pictures -----------------------------------------------------------------------------------------------------

ROWS = [
    {"domain": "cs", "hop_class": "1-2", "answer": "Oakshade", "writer": "llm", "difficulty": "easy", "solve_rate_tools": 1.0},
    {"domain": "cs", "hop_class": "3+", "answer": "Mossgrove", "writer": "template", "difficulty": "hard", "solve_rate_tools": 0.25},
    {"domain": "history", "hop_class": "3+", "answer": "Rome", "writer": "llm", "difficulty": None, "solve_rate_tools": None},
]  # fmt: skip


def test_pictures_are_deterministic_svgs_in_card_and_artifact():
    data = picture_data(ROWS, rejects={"duplicate": 3, "leaks_intermediate_node": 1, "none": 0},
                        answer_types={("cs", "Oakshade"): "location", ("cs", "Mossgrove"): "location"})  # fmt: skip
    assert data.funnel == {"accepted": 3, "duplicate": 3, "leaks_intermediate_node": 1}
    assert data.answer_types == {"location": 2, "unknown": 1} and data.pass_rates == [1.0, 0.25]
    assert data.hops == {"1-2": 1, "3+": 2} and data.writers == {"llm": 2, "template": 1}
    pics = render(data)
    assert sorted(pics) == sorted(f"pictures/{n}.svg" for n in PICTURES)
    for svg in pics.values():
        assert ET.fromstring(svg).tag.endswith("svg")
    assert render(data) == pics  # same counts, same bytes: exports stay byte-identical
    card = card_section(sorted(pics))
    assert "![Questions by hop class](pictures/hops.svg)" in card
    md = artifact_markdown(pics, "v1")
    assert md.count("](data:image/svg+xml;base64,") == len(PICTURES)
    empty = render(picture_data([]))
    assert len(empty) == len(PICTURES) and empty["pictures/difficulty.svg"] != pics["pictures/difficulty.svg"]


# -- version diffs ---------------------------------------------------------------------------------------------------

def test_diff_and_markdown():
    old = summarize({"qa": {"train": 4, "test": 1}, "rl": {"train": 4}}, ROWS[:2])
    new = summarize({"qa": {"train": 6, "test": 1}, "rl": {"train": 6}, "sft": {"train": 2}}, ROWS)
    d = diff(old, new)
    assert d["by_config_split"] == [
        {"config": "qa", "split": "train", "before": 4, "after": 6, "added": 2},
        {"config": "rl", "split": "train", "before": 4, "after": 6, "added": 2},
        {"config": "sft", "split": "train", "before": 0, "after": 2, "added": 2},
    ]
    assert d["by_domain_hop"] == [{"domain": "history", "hop_class": "3+", "before": 0, "after": 1, "added": 1}]
    assert diff(new, new) == {"by_config_split": [], "by_domain_hop": []}
    md = diff_markdown("v2", "v1", d, {"duplicate": 2}, {"llm_calls": 7, "prompt_tokens": 100}, dropped={"trivial": 1})
    assert "| qa | train | 4 | 6 | 2 |" in md and "| duplicate | 2 |" in md and "| 7 | 0 | 100 | 0 |" in md
    assert "Not published" in md and "| trivial | 1 |" in md
    a = version_fingerprint("x", {"q1": "easy"}, ["trivial"], ["qa"])
    assert a == version_fingerprint("x", {"q1": "easy"}, ["trivial"], ["qa"])
    assert a != version_fingerprint("x", {"q1": "hard"}, ["trivial"], ["qa"]) != version_fingerprint("x", {"q1": "easy"}, [], ["qa"])


# -- Hub checks --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("repo_id", "message"), [
    ("", "the Hub repository id is empty"),
    ("not a repo!", "'not a repo!' is not a valid Hugging Face repository id"),
    ("a/b/c", "'a/b/c' is not a valid Hugging Face repository id"),
    ("kg-hops", "'kg-hops': give the repository as 'namespace/name'"),
])  # fmt: skip
def test_repo_id_errors(repo_id, message):
    with pytest.raises(PublishError) as info:
        check_repo_id(repo_id)
    assert str(info.value).startswith(message)


def test_token_and_export_checks(monkeypatch, tmp_path):
    monkeypatch.delenv("HOPFORGE_NO_SUCH_TOKEN", raising=False)
    check_publish(None, "HOPFORGE_NO_SUCH_TOKEN")  # no repository: nothing to check
    with pytest.raises(PublishError, match="HOPFORGE_NO_SUCH_TOKEN holds no token"):
        check_publish("me/ds", "HOPFORGE_NO_SUCH_TOKEN")
    monkeypatch.setenv("HOPFORGE_NO_SUCH_TOKEN", "hf_x")
    with pytest.raises(PublishError, match="refusing to publish .*no manifest.json"):
        publish_version(tmp_path, "me/ds", token_env="HOPFORGE_NO_SUCH_TOKEN", api=object())  # type: ignore[arg-type]
