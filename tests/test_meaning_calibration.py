"""The meaning check's calibration: before a run the verifier answers control fact sheets whose answers are known;
below the bar (3 of 4) the check is off for that run, said in one line in the log and the run summary, and the
summary shows the first questions the check rejected with the reader's answer.

The verifier is the loopback fake: its careful reader (``FakeOpenAI.add_fact_reader``) reads fact sheets right; the
plain fake (the first allowed name), a constant "unknown", garbage and a failing endpoint do not."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing.permissive_profiles import store_one_each_way
from gateway.client import LLMGateway
from testing.fake import Fault, fact_reader_reply
from schemas.config import load_settings
from schemas.qa import Verdict
from tasks.meaning.profiles import book_for_graph
from tasks.qa import meaning_check as mc
from tasks.qa.template_writer import fact_sentence
from warehouse.db import Warehouse

DEMO = Path(__file__).resolve().parent.parent / "flows" / "demo"


def gateway_for(fake, tmp_path) -> LLMGateway:
    role = {"base_url": fake.base_url, "model": "fake-model", "max_retries": 1, "timeout_s": 10}
    return LLMGateway(load_settings(data_dir=tmp_path, roles={"generator": role, "verifier": role}),
                      backoff_base_s=0.01, backoff_cap_s=0.02)  # fmt: skip


def meaning_requests(fake):
    return [r for r in fake.requests if r.json and (r.json.get("response_format") or {}).get("json_schema", {})
            .get("name") == mc.REQUEST_NAME]


async def test_the_control_sheets_are_built_as_the_real_check_builds_them(fake_llm, tmp_path):
    fake_llm.add_fact_reader()
    await mc.calibrate(gateway_for(fake_llm, tmp_path))
    kg = mc.control_graph()
    book = book_for_graph(kg)
    want = [mc.build_messages(mc.build_record(kg, c.path, c.question, c.answer, state=lambda e: fact_sentence(e, book)))
            for c in mc.CONTROLS]  # fmt: skip
    sent = [r.json["messages"] for r in meaning_requests(fake_llm)]
    assert len(sent) == len(mc.CONTROLS) == 4
    # the same system prompt, fact sheet and question as a real check of that path (the gateway appends the schema)
    for system, user in want:
        assert sum(s[0]["content"] == system["content"] and s[-1]["content"].startswith(user["content"] + "\n")
                   for s in sent) == 1  # fmt: skip
    first = mc.build_record(kg, mc.CONTROLS[0].path, mc.CONTROLS[0].question, "Ostrand",
                            state=lambda e: fact_sentence(e, book))  # fmt: skip
    assert "Velmora is the capital of Ostrand" in first.facts and first.names[0] != "Ostrand"


async def test_a_verifier_that_reads_fact_sheets_passes_and_the_check_stays_on(fake_llm, tmp_path):
    fake_llm.add_fact_reader()
    cal = await mc.calibrate(gateway_for(fake_llm, tmp_path))
    assert [r.got for r in cal.results] == ["Ostrand", "Mirel Osk", "Velmora", "unknown"]
    assert cal.right == 4 and cal.needed == 3 and cal.passed
    assert cal.line == "meaning check on: the verifier answered 4 of 4 control fact sheets right (at least 3 needed)"


async def test_the_plain_fake_cannot_read_them_and_the_check_is_switched_off(fake_llm, tmp_path):
    cal = await mc.calibrate(gateway_for(fake_llm, tmp_path))  # the plain fake answers the first allowed name
    assert cal.right == 0 and not cal.passed
    assert cal.line.startswith("meaning check switched OFF for this run: the verifier answered 0 of 4 control fact "
                               "sheets right (at least 3 needed)")  # fmt: skip
    assert "'What is Velmora the capital of?' answered 'Brisk River', expected 'Ostrand'" in cal.line
    assert "'Who founded Tarnet?' answered 'Mirel Osk', expected 'unknown'" in cal.line
    assert "\n" not in cal.line


async def test_a_reader_that_always_says_unknown_gets_one_and_is_switched_off(fake_llm, tmp_path):
    fake_llm.add(schema_name=mc.REQUEST_NAME, reply={"answer": "unknown", "reason": "no idea"})
    cal = await mc.calibrate(gateway_for(fake_llm, tmp_path))
    assert [r.right for r in cal.results] == [False, False, False, True] and not cal.passed


@pytest.mark.parametrize("fault", ["garbage", "server_error"])
async def test_a_verifier_that_answers_nothing_is_switched_off(fake_llm, tmp_path, fault):
    if fault == "garbage":
        fake_llm.add(schema_name=mc.REQUEST_NAME, reply="I would rather not say")
    else:
        fake_llm.add(schema_name=mc.REQUEST_NAME, fault=Fault(status=500))
    cal = await mc.calibrate(gateway_for(fake_llm, tmp_path))
    assert cal.right == 0 and not cal.passed
    assert all(r.got is None and r.failure for r in cal.results)
    assert "answered nothing valid" in cal.line
    assert cal.as_dict()["controls"][0] == {"question": "What is Velmora the capital of?", "expected": "Ostrand",
                                            "answered": None, "failure": cal.results[0].failure, "right": False}


def _wrong_on(*questions: str):
    """The careful reader, except that it answers "several" to ``questions``."""

    def reply(body):
        out = fact_reader_reply(body)
        return {"answer": "several", "reason": "both"} if any(q in str(body) for q in questions) else out

    return reply


async def test_the_bar_is_three_of_four(fake_llm, tmp_path):
    fake_llm.add(schema_name=mc.REQUEST_NAME, reply=_wrong_on("Who wrote Harbour Songs?"))
    three = await mc.calibrate(gateway_for(fake_llm, tmp_path / "a"))
    assert three.right == 3 and three.passed
    fake_llm.reset()
    fake_llm.add(schema_name=mc.REQUEST_NAME, reply=_wrong_on("Who wrote Harbour Songs?", "Who founded Tarnet?"))
    two = await mc.calibrate(gateway_for(fake_llm, tmp_path / "b"))
    assert two.right == 2 and not two.passed
    assert "'Who wrote Harbour Songs?' answered 'several', expected 'Mirel Osk'" in two.line
    with pytest.raises(ValueError):
        await mc.calibrate(gateway_for(fake_llm, tmp_path / "c"), needed=5)


def test_the_readers_answer_is_read_back_from_the_verdict():
    rec = mc.MeaningRecord(question="q?", answer="clinical drug", path=("lipid", "clinical drug"), facts=(), names=())
    for said, back in [("glycerol", "glycerol"), ("O'Brien \"Jr\"", "O'Brien \"Jr\""), ("several", "several"),
                       ("Unknown", "unknown"), ("Clinical drug", "Clinical drug")]:
        verdict = mc.verdict_for(mc.MeaningOutput(answer=said, reason="read as: it answered 'x'"), rec)
        assert mc.reader_answer(verdict) == back
    assert mc.reader_answer(Verdict(check="answer_hidden", ok=False, reason="answered 'x'")) is None


# -- in a run ------------------------------------------------------------------------------------------------------------
def _pick_with_generic_question(body):
    """A candidates-mode reply: the first offered path, with a question no fact sheet answers."""
    import re

    prompt = "\n".join(str(m.get("content")) for m in body["messages"])
    pid = sorted(re.findall(r"^(P\d+): ", prompt, re.M))[0]
    seed = re.search(r"Candidate paths starting at (['\"])(.+?)\1;", prompt).group(2)
    return {"path_id": pid, "question": f"Starting from {seed}, which entity does this chain of relations lead to?"}


@pytest.fixture
def run_settings(fake_llm, tmp_path, prefect_harness):
    from flows.graphs import import_graphs
    from tasks.graph.importers import read_triples

    roles = {r: {"base_url": fake_llm.base_url, "model": "fake-model", "max_retries": 1, "timeout_s": 10}
             for r in ("generator", "verifier")}
    # A fixed plan of jobs, counted below: filling the mix is tests/test_refill.py's.
    settings = load_settings(data_dir=tmp_path, roles=roles, seeds={"refill": 0})
    import_graphs(files={"cs": str(DEMO / "graphs" / "cs.jsonl")}, settings=settings)
    with Warehouse(settings.warehouse_path) as wh:  # every relation askable: the run's jobs are counted
        store_one_each_way(wh, [read_triples(DEMO / "graphs" / "cs.jsonl", "cs").to_graph()])
    fake_llm.add(schema_name="qa_pick_path", reply=_pick_with_generic_question)
    return settings


def test_a_run_with_a_reader_keeps_the_check_on_and_shows_what_it_rejected(run_settings, fake_llm, caplog):
    from flows.qa import generate_qa

    fake_llm.add_fact_reader()
    out = generate_qa(domains=["cs"], n_seeds=2, modes=["candidates"], max_attempts=2, use_judge=False,
                      meaning_check="on", settings=run_settings)  # fmt: skip
    m = out["meaning_check"]
    assert m["asked"] == "on" and m["on"] is True and m["calibration"]["right"] == 4
    # every question read "unknown" from its sheet: each attempt was rejected, and the summary shows the first ones
    assert out["accepted"] == 0 and m["rejected"] == out["attempts"] == 4
    assert len(m["examples"]) == 4
    # and the mix says why each hop class fell short
    assert out["mix"]["cs"]["short"] == {"1-2": {"not_answerable_from_facts": 1}, "3+": {"not_answerable_from_facts": 1}}
    assert all(e["reader_answer"] == "unknown" and e["question"].startswith("Starting from ") for e in m["examples"])
    assert m["lines"][0] == "meaning check on: the verifier answered 4 of 4 control fact sheets right (at least 3 needed)"
    assert m["lines"][1] == "not_answerable_from_facts: 4 attempts rejected; the first 4, with the reader's answer:"
    e = m["examples"][0]
    assert m["lines"][2] == f"  cs: {e['question']!r} intended {e['answer']!r}, the reader answered 'unknown'"
    logged = [r.getMessage() for r in caplog.records]  # the flow's log (its prints go to Prefect's logger)
    assert m["lines"][0] in logged and m["lines"][2] in logged


def test_a_run_whose_verifier_cannot_read_switches_the_check_off_in_one_line(run_settings, fake_llm, caplog):
    from flows.qa import generate_qa

    fake_llm.add(schema_name=mc.REQUEST_NAME, reply={"answer": "unknown", "reason": "cannot tell"})
    out = generate_qa(domains=["cs"], n_seeds=2, modes=["candidates"], max_attempts=2, use_judge=False,
                      meaning_check="on", settings=run_settings)  # fmt: skip
    m = out["meaning_check"]
    assert m["asked"] == "on" and m["on"] is False and m["calibration"]["right"] == 1
    line = m["calibration"]["line"]
    assert line.startswith("meaning check switched OFF for this run: the verifier answered 1 of 4 control fact "
                           "sheets right (at least 3 needed)") and m["lines"][0] == line  # fmt: skip
    # the check did not run on the questions: only the four control sheets were asked, and nothing was lost to it
    assert len(meaning_requests(fake_llm)) == 4
    assert m["rejected"] == 0 and m["examples"] == [] and out["accepted"] == 2
    # the LLM writer's questions have no program (chains): one of two hops, one of 3+, as the mix line says
    assert out["hop_kind"] == {"1": {"chain": 0, "conjunction": 0}, "2": {"chain": 1, "conjunction": 0},
                               "3+": {"chain": 1, "conjunction": 0}}
    assert out["mix"]["cs"]["line"] == (
        "cs: reached 2 questions (1 hop 0, 2 hops 1, 3+ hops 1; chain 2, conjunction 0); 1-2 hops asked 50% of the "
        "seeds, reached 50% of the questions (1 of 1 jobs); 3+ hops asked 50% of the seeds, reached 50% of the "
        "questions (1 of 1 jobs)")
    assert [r.getMessage() for r in caplog.records].count(line) == 2  # at the start, and in the summary
    # a re-run of the finished flow asks nothing: the control answers come from the cache, with the same decision
    asked = len(fake_llm.requests)
    again = generate_qa(domains=["cs"], n_seeds=2, modes=["candidates"], max_attempts=2, use_judge=False,
                        meaning_check="on", settings=run_settings)  # fmt: skip
    assert len(fake_llm.requests) == asked and again["meaning_check"]["calibration"]["line"] == line
