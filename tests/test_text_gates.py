"""Text gates: the fixture junk from the embedded model is rejected for the expected reason, the fixture good
questions (and good questions of other shapes) pass, each gate on its own, the settings' errors, thoughts and tool
arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from schemas.qa import CHECK_CODES
from tasks.qa.generate import prompt_sources
from tasks.qa.text_gates import (
    TEXT_GATE_CHECKS,
    TextGateConfig,
    check_language,
    check_no_labels,
    check_no_markup,
    check_no_repetition,
    check_not_copied,
    check_question_form,
    check_question_length,
    language_sample,
    question_gates,
    thought_problem,
    tool_argument_problem,
)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = yaml.safe_load((Path(__file__).parent / "fixtures" / "text_gates.yaml").read_text(encoding="utf-8"))


def _demo_names() -> list[str]:
    names = []
    for p in sorted((ROOT / "flows" / "demo" / "graphs").glob("*.jsonl")):
        for line in p.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if "entity" in row:
                names.append(row["entity"])
    return names


NAMES = _demo_names()


def mentioned(text: str) -> list[str]:
    """The demo entity names in ``text`` (what a path would hand the gates as names it may contain)."""
    low = text.lower()
    return [n for n in NAMES if n.lower() in low]


def first_code(verdicts) -> str | None:
    return next((v.code for v in verdicts if not v.ok), None)


# -- fixtures ---------------------------------------------------------------------------------------------------------
def _real(items):
    return [i for i in items if i["source"] == "embedded-model"]


def test_fixture_sizes_meet_the_issue():
    # the issue asks for junk taken from the embedded model's actual output; hand-written items come on top
    assert len(_real(FIXTURES["junk_questions"])) >= 40
    assert len(_real(FIXTURES["junk_thoughts"])) >= 20
    assert len(FIXTURES["good_questions"]) >= 60
    for item in FIXTURES["junk_questions"] + FIXTURES["junk_thoughts"]:
        assert item["source"] in ("embedded-model", "hand-written") and item.get("how"), item


def test_known_gaps_are_reported(capsys):
    """Real model junk that passes every text gate today: listed with what would catch it, not asserted, so a
    gate that starts catching one shows up in the count."""
    gq, gt = FIXTURES["known_gaps_questions"], FIXTURES["known_gaps_thoughts"]
    assert all(g["why"] and g["text"] for g in gq + gt)
    caught_q = sum(first_code(question_gates(g["text"], names=mentioned(g["text"]), sources=prompt_sources()))
                   is not None for g in gq)
    caught_t = sum(thought_problem(g["text"], names=mentioned(g["text"])) is not None for g in gt)
    with capsys.disabled():
        print(f"\ntext gates: known gaps caught now: {caught_q}/{len(gq)} questions, {caught_t}/{len(gt)} thoughts")


@pytest.mark.parametrize("item", FIXTURES["junk_questions"], ids=lambda i: i["text"][:40])
def test_junk_question_is_rejected_for_its_reason(item):
    verdicts = question_gates(item["text"], names=mentioned(item["text"]), sources=prompt_sources(),
                              descriptions=item.get("sources", []))
    assert first_code(verdicts) == item["expect"], [v.reason for v in verdicts if not v.ok]


@pytest.mark.parametrize("item", FIXTURES["junk_thoughts"], ids=lambda i: i["text"][:40])
def test_junk_thought_is_rejected_for_its_reason(item):
    found = thought_problem(item["text"], names=mentioned(item["text"]))
    assert found is not None and found[0] == item["expect"], found


def test_good_questions_pass_every_gate_and_the_false_reject_rate_is_reported(capsys):
    good = FIXTURES["good_questions"]
    rejected = {}
    for q in good:
        failed = [v for v in question_gates(q, names=mentioned(q), sources=prompt_sources()) if not v.ok]
        if failed:
            rejected[q] = [v.code for v in failed]
    junk = FIXTURES["junk_questions"]
    caught = sum(first_code(question_gates(i["text"], names=mentioned(i["text"]), sources=prompt_sources(),
                                           descriptions=i.get("sources", []))) is not None for i in junk)
    with capsys.disabled():
        print(f"\ntext gates: false rejects {len(rejected)}/{len(good)} good questions "
              f"({len(rejected) / len(good):.1%}); junk rejected {caught}/{len(junk)}")
    assert rejected == {}


# Good questions of shapes the fixtures do not hold; none may be rejected, with or without names given.
MORE_GOOD = [
    "Which mountain, Mt. Everest or K2, did the expedition of 1953 climb first?",
    "What's the name of the river that flows through Washington, D.C.?",
    "Which actor played Luke Skywalker in 'Star Wars: Episode IV – A New Hope'?",
    "Which composer wrote the opera that Sean O'Brien reviewed in The New York Times?",
    "Which prize did the physicist who proposed E=mc2 win in 1921?",
    "Which university did the founder of Microsoft drop out of — Harvard or Yale?",
    "which city is the capital of the country where the Danube ends?",
    "Who succeeded Louis XIV as King of France in 1715?",
    "Which Nobel laureate was born in São Paulo, Brazil?",
    "Which treaty, signed at Brest-Litovsk in 1918, ended Russia's role in World War I?",
    "Who wrote it?",
    "The Notes describe a machine; its designer founded which learned body?",
    "Which version of Python, 2.7 or 3.0, was released in 2008?",
    "What is the population of Kraków, the city on the Vistula?",
    "Who built Colossus?",
]


@pytest.mark.parametrize("question", MORE_GOOD)
def test_more_good_questions_pass(question):
    assert [v.reason for v in question_gates(question, sources=prompt_sources()) if not v.ok] == []


# -- each gate ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, ok", [
    ("Which language is C++ an extension of?", True), ("What did C# replace at Microsoft?", True),
    ("What did AT&T sell in 1984 for $5 billion?", True), ("Which protocol, TCP/IP or UDP, came first?", True),
    ("Which site is at https://example.org?", False), ("Which {node} is it?", False), ("What is <b>this</b>?", False),
    ("Is x == y?", False), ("Which city -> country?", False), ("Which [ENTITY] wrote it?", False),
    ("What is `foo` in Python?", False), ("Who is @alan?", False), ("Which ~ is it?", False),
])  # fmt: skip
def test_markup_gate(text, ok):
    v = check_no_markup(text)
    assert v.ok is ok and (v.code is None if ok else v.code == "has_markup")


@pytest.mark.parametrize("text, ok", [
    ("Which answer did the oracle at Delphi give to Croesus?", True), ("Which question did Hilbert pose in 1928?", True),
    ("Answer: which river is it?", False), ("Step 2 then which city?", False), ("What is path P3 about?", False),
    ("Which node is at the end of the path from Rome?", False), ("The question is: who wrote it?", False),
])  # fmt: skip
def test_label_gate(text, ok):
    assert check_no_labels(text).ok is ok


@pytest.mark.parametrize("text, ok", [
    ("Who lived in St. Louis, Mo. before 1900?", True), ("Which U.S. city hosted the fair?", True),
    ("Who wrote \"Where Have All the Flowers Gone?\" in 1955?", True), ("What did J. R. R. Tolkien teach?", True),
    ("Who wrote it", False), ("Who wrote it? Where?", False), ("He wrote it. Who is he?", False),
    ("Which city is the capital of the?", False), ("- Which city is it?", False), ("Which city\nis it?", False),
    ("Alan Turing, Alonzo Church, Princeton University?", False), ("", False),
])  # fmt: skip
def test_question_form_gate(text, ok):
    assert check_question_form(text).ok is ok


def test_length_gate_bounds_are_configurable():
    assert not check_question_length("Who?", 3, 10).ok
    assert check_question_length("Who wrote it?", 3, 10).ok
    assert not check_question_length("Who " + "really " * 12 + "wrote it?", 3, 10).ok


def test_the_length_gate_counts_the_question_without_its_scope():
    """cataclysm_raw (set 34): 3+ questions were refused at 54 words against a limit of 46, 17 of them the scope
    phrase every question of the graph opens with. The limit bounds what the question asks: the scope is not
    counted, and a question that does not open with it is counted whole."""
    from tasks.qa.text_gates import question_gates

    scope = "among the items, vehicles, monsters and professions of the survival game Cataclysm: Dark Days Ahead"
    ask = "which profession has the " + "very " * 25 + "long belt as an item?"  # 34 words
    length = lambda q, s: next(v for v in question_gates(q, scope=s) if v.check == "question_length")  # noqa: E731
    scoped_q = "Among the items, vehicles, monsters and professions of the survival game Cataclysm: Dark Days Ahead, " + ask
    assert len(scoped_q.split()) > 45
    assert length(scoped_q, scope).ok and "34 words" in length(scoped_q, scope).reason
    assert not length(scoped_q, None).ok
    assert not length("In the Tate collection, " + ask + " " + "truly " * 15, scope).ok  # another opening: whole


@pytest.mark.parametrize("text, ok", [
    ("Who supervised the man who supervised Alan Turing?", True), ("Which of the two rivers is the longer one?", True),
    ("Who is is is it?", False), ("Which king king of the king of the king of the land?", False),
    ("aaaaaaaaaaaaa?", False),
])  # fmt: skip
def test_repetition_gate(text, ok):
    assert check_no_repetition(text).ok is ok


def test_language_gate_blanks_names_before_it_decides():
    q = "Which philosopher influenced Søren Kierkegaard in Copenhagen?"
    assert "Kierkegaard" not in language_sample(q)
    assert check_language("Who founded Königsberg?", "en", ["Königsberg"]).ok
    assert not check_language("Welche Universität besuchte Alan Turing?", "en", ["Alan Turing"]).ok
    # the configured language is respected: the same German question is right for "de"
    assert check_language("Welche Universität besuchte Alan Turing?", "de", ["Alan Turing"]).ok


def test_copy_gate_tells_a_restated_relation_from_a_question_about_it():
    desc = "Berkshire is a county of Britain in the south of England."
    assert check_not_copied("Which place is a county of Britain?", [], names=["Britain", "Berkshire"],
                            descriptions=[desc]).ok
    copied = check_not_copied("Berkshire is a county of Britain in the south of England?", [], descriptions=[desc])
    assert check_not_copied("Who was a chemist from France?", [],
                            descriptions=["Louis-Camille Maillard was a chemist from France."]).ok
    assert not copied.ok and copied.code == "copies_source"


def test_gates_run_in_order_and_each_names_its_code():
    verdicts = question_gates("Which river flows through Mesopotamia?")
    assert [v.check for v in verdicts] == list(TEXT_GATE_CHECKS)
    assert all(v.ok for v in verdicts)
    assert {CHECK_CODES[c] for c in TEXT_GATE_CHECKS} == {
        "has_markup", "has_label", "not_one_question", "bad_length", "repetitive", "wrong_language", "copies_source"}


def test_node_names_with_symbols_do_not_trip_the_shape_gates():
    q = "Where was Barack_Obama born before he moved to Chicago?"
    assert first_code(question_gates(q)) == "has_markup"
    assert first_code(question_gates(q, names=["Barack_Obama"])) is None


# -- settings -----------------------------------------------------------------------------------------------------
def test_unknown_language_is_a_clear_error():
    with pytest.raises(ValueError, match="not one the language detector knows"):
        TextGateConfig(language="xx")
    with pytest.raises(ValueError, match="max_words"):
        TextGateConfig(min_words=10, max_words=5)
    assert TextGateConfig(language="DE").language == "de"


def test_settings_reject_an_unknown_language_before_any_work():
    from schemas.config import ConfigError, load_settings

    with pytest.raises(ConfigError, match="quality.language"):
        load_settings(quality={"language": "klingon"})


# -- thoughts and tool arguments ----------------------------------------------------------------------------------
GOOD_THOUGHTS = [
    "The question starts from Alan Turing. I will look it up in the cs graph to get its exact entity name.",
    "The relations of Alan Turing show that Alan Turing wrote On Computable Numbers. Next I need the concept it "
    "introduced, so I will inspect On Computable Numbers.",
    "I should check which organization Alonzo Church taught at; node_info on him will list it.",
    "That completes the chain, so the answer is Bletchley Park.",
]


@pytest.mark.parametrize("thought", GOOD_THOUGHTS)
def test_good_thoughts_pass(thought):
    assert thought_problem(thought, names=mentioned(thought)) is None


@pytest.mark.parametrize("thought", [
    "<step-by-step reasoning>\nThe start entity is Alan Turing.", "I will look it up.\n```python\nprint(1)\n```",
    "<tool response>Alan Turing</tool response>",
])  # fmt: skip
def test_made_up_tags_and_code_fences_are_markup_in_a_thought(thought):
    found = thought_problem(thought)
    assert found is not None and found[0] == "thought_markup"


def test_comparisons_in_a_thought_are_not_tags():
    assert thought_problem("Colossus ran in 1944 < 1946, so it came before ENIAC; the answer is Colossus.") is None


def test_a_thought_that_pastes_most_of_an_observation_is_rejected():
    facts = ["Alan Turing wrote On Computable Numbers in 1936", "Alonzo Church supervised his doctorate at Princeton",
             "Bletchley Park broke messages of the Enigma machine", "The Bombe searched for the settings of Enigma",
             "Gordon Welchman devised the diagonal board for it"]
    obs = "\n".join(f"{i}. {f}" for i, f in enumerate(facts, 1))
    pasted = "Here is what I found: " + "; ".join(obs.splitlines()[:4])
    found = thought_problem(pasted, observations=[obs])
    assert found is not None and found[0] == "thought_pastes_tool_output"


@pytest.mark.parametrize("value, ok", [
    ("Alan Turing", True), ("King's College, Cambridge", True), ("C++", True), ("St. Louis", True),
    ("Food and Agriculture Organization (FAO)", True), ("Barack_Obama", True),
    ("Which university did Alan Turing attend?", False), ("find the university of Alan Turing", False),
    ("Alan Turing. He studied at Cambridge", False), ("", False), ("a\nb", False),
    ("the entity that is connected to the other entity that the person studied at in the year", False),
    ('{"node_name": "X"}', False),
])  # fmt: skip
def test_tool_argument_must_be_a_name(value, ok):
    assert (tool_argument_problem(value) is None) is ok


def test_the_static_language_list_is_the_detector_models_own_and_the_model_loads_in_the_background():
    """A configuration is checked against ``SUPPORTED_LANGUAGES`` without loading the model; the list must be the
    model's labels exactly (a new py3langid with other labels fails here). ``warm_language_detector`` loads the
    model once, on another thread, and the gates then use that one identifier."""
    import threading

    from tasks.qa import text_gates as tg

    tg.warm_language_detector()
    loaders = [t for t in threading.enumerate() if t.name == "language-detector-load"]
    for t in loaders:
        t.join(timeout=30)
    ident = tg._identifier()
    assert tg.SUPPORTED_LANGUAGES == frozenset(ident.labels)
    assert tg._identifier() is ident and tg.LanguageGate("en")._ident is ident
    with pytest.raises(ValueError, match="not one the language detector knows"):
        tg.TextGateConfig(language="xx")


def test_the_built_language_detector_is_kept_in_the_cache_folder_and_a_bad_copy_is_replaced(tmp_path, monkeypatch):
    """The first load builds the identifier from the compressed model and keeps it in ``XDG_CACHE_HOME``; the next
    load reads that copy (same answers); a damaged copy is built again and replaced."""
    from tasks.qa import text_gates as tg

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    built = tg._load_identifier()
    copies = list((tmp_path / "hopforge").glob("py3langid-*.pickle"))
    assert len(copies) == 1 and copies[0].stat().st_size > 1_000_000
    from py3langid.langid import LanguageIdentifier

    real = LanguageIdentifier.from_model_file.__func__

    def no_build(cls, *a, **k):
        raise AssertionError("built again although a good copy is in the cache")

    monkeypatch.setattr(LanguageIdentifier, "from_model_file", classmethod(no_build))
    again = tg._load_identifier()  # from the copy: building would fail
    text = "Which river flows through the capital of France?"
    assert again.rank(text) == built.rank(text)
    monkeypatch.setattr(LanguageIdentifier, "from_model_file", classmethod(real))
    copies[0].write_bytes(b"not a pickle")
    rebuilt = tg._load_identifier()
    assert rebuilt.rank(text) == built.rank(text) and copies[0].stat().st_size > 1_000_000


def test_identifier_names_and_their_display_forms_are_masked():
    """A biomedical graph's snake_case names are its own words, not markup; real markup around them still fails."""
    path = ["sodium_chloride", "clinical_drug", "element_ion_or_isotope"]
    for q in ("Which element_ion_or_isotope is an ingredient of the clinical_drug that contains sodium_chloride?",
              "Which element ion or isotope is an ingredient of the clinical drug that contains sodium chloride?"):
        assert [v.code for v in question_gates(q, names=path, sources=prompt_sources()) if not v.ok] == []
    assert first_code(question_gates(path[0] + " <b>is</b> in which clinical_drug?", names=path)) == "has_markup"
    assert first_code(question_gates('Which clinical_drug holds {"a": 1}?', names=path)) == "has_markup"
    assert first_code(question_gates("Which clinical_drug is sold at www.pharma.com?", names=path)) == "has_markup"
    assert first_code(question_gates("Which clinical_drug contains sodium_chloride?")) == "has_markup"  # no names
