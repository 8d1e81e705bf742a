"""The IKG reader check (tasks.env.ikg_reader): the verifier, through an OpenAI-compatible fake on loopback, is asked
whether each passage the names rule keeps states its hidden fact; a "no", a quote not in the passage and a failed
call all keep the variant out, and the run says how many of each."""

from __future__ import annotations

import asyncio
import contextlib
import io

import pytest

from gateway.client import LLMGateway
from schemas.config import load_settings
from tasks.env.ikg import HiddenFact
from tasks.env.ikg_reader import READER_SCHEMA, quote_in, read_passages
from testing.fake import Fault, FakeOpenAI, Responder, last_user_text

BOSCH = HiddenFact("Carl Bosch", "worked at", "BASF", ("Carl Bosch", "worked at", "BASF"))
HABER = HiddenFact("Fritz Haber", "worked at", "BASF", ("Fritz Haber", "worked at", "BASF"))
TULL = HiddenFact("Jethro Tull", "lived in", "Berkshire", ("Jethro Tull", "lived in", "Berkshire"))
PASSAGE = ("In 1909 the German chemist Fritz Haber showed how to make ammonia, and Carl Bosch of the chemical company "
           "BASF scaled the method up at Oppau in 1913.")


def verdict(body) -> dict:
    """A reader that knows the one fact this passage states: Bosch of BASF; Haber is named, not said to work there.
    For Tull it quotes a sentence that is not in the passage."""
    prompt = last_user_text(body)
    if "Fact: Carl Bosch" in prompt:
        return {"states": True, "quote": "Carl Bosch of the chemical company BASF scaled the method up"}
    if "Fact: Jethro Tull" in prompt:
        return {"states": True, "quote": "Jethro Tull farmed in Berkshire."}
    return {"states": False, "quote": ""}


def gateway_for(fake: FakeOpenAI, tmp_path, retries: int = 0) -> LLMGateway:
    role = {"base_url": fake.base_url, "model": "fake-model", "max_retries": retries, "timeout_s": 10}
    return LLMGateway(load_settings(data_dir=tmp_path, roles={"verifier": role}, max_reasks=0),
                      backoff_base_s=0.01, backoff_cap_s=0.02)


def test_a_quote_must_be_a_stretch_of_the_passage():
    assert quote_in(PASSAGE, "carl bosch of the chemical company BASF")
    assert quote_in(PASSAGE, "Carl  Bosch, of the chemical company BASF")  # spacing and punctuation aside
    assert not quote_in(PASSAGE, "Carl Bosch worked at BASF") and not quote_in(PASSAGE, "")


def test_the_verifier_confirms_only_what_the_passage_states_and_a_failed_call_counts(tmp_path):
    async def run(gw, pairs):
        try:
            return await read_passages(gw, pairs)
        finally:
            await gw.aclose()

    with FakeOpenAI() as fake:
        fake.add(Responder(schema_name=READER_SCHEMA, reply=verdict))
        got = asyncio.run(run(gateway_for(fake, tmp_path), [(PASSAGE, BOSCH), (PASSAGE, HABER), (PASSAGE, TULL),
                                                             (PASSAGE, BOSCH)]))
        assert fake.calls() == 3  # the same passage and fact is read once
    assert got.reads(PASSAGE, BOSCH) and not got.reads(PASSAGE, HABER) and not got.reads(PASSAGE, TULL)
    assert (got.stated, got.not_stated, got.failed) == (1, 2, 0)
    assert not got.reads("another passage", BOSCH)  # a passage nobody read is not confirmed
    with FakeOpenAI(default_fault=Fault(status=500)) as fake:
        got = asyncio.run(run(gateway_for(fake, tmp_path / "down"), [(PASSAGE, BOSCH)]))
    assert (got.stated, got.failed) == (0, 1) and not got.reads(PASSAGE, BOSCH)
    assert "1 could not be read" in got.line("cs")


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Sixteen cs questions made as test_ikg_export's fixture makes them (enough that a variant is kept by text
    alone, no other path reaching its answer), exported with the reader check off and on; the verifier a fake that
    says no to every passage, so only variants answerable by another path can stay."""
    from flows.ikg_data import ikg_export_data
    from tests.test_ikg_export import DEMO, make_questions
    from tasks.corpus.ingest import ingest_text_folders
    from tasks.graph.importers import read_triples
    from warehouse.corpus import write_ingest
    from warehouse.db import Warehouse
    from warehouse.graphs import load_graph, write_import

    root = tmp_path_factory.mktemp("ikg-reader")
    with FakeOpenAI() as fake:
        fake.add(Responder(schema_name=READER_SCHEMA, reply={"states": False, "quote": ""}))
        role = {"base_url": fake.base_url, "model": "fake-model", "max_retries": 0, "timeout_s": 10}
        out = {}
        for mode in ("off", "on"):
            settings = load_settings(data_dir=root / mode, cache={"mode": "off"}, roles={"verifier": role},
                                     ikg={"levels": [0.2, 0.4], "embedder": "hashing", "reader_check": mode})
            with Warehouse(settings.warehouse_path) as wh:
                write_ingest(wh, ingest_text_folders(DEMO / "corpus" / "cs"), "run-ingest")
                snap = write_import(wh, read_triples(DEMO / "graphs" / "cs.jsonl", "cs"), build_run_id="run-g")
                qas = [q.model_copy(update={"split": "train"})
                       for q in make_questions(load_graph(wh, "cs", snap.snapshot_id), 16)]
                with contextlib.redirect_stdout(io.StringIO()):
                    out[mode] = ikg_export_data(wh, qas, settings)
                graph = load_graph(wh, "cs")
        calls = fake.calls()
    return out, calls, graph


def test_with_the_reader_on_a_variant_is_kept_by_text_only_where_the_verifier_confirms_each_passage(exports):
    from tasks.env.ikg import ViewedGraph, reachable

    out, calls, graph = exports
    off, on = out["off"], out["on"]
    line = next(x for x in on.lines if "the verifier read" in x)
    assert calls > 0 and " 0 state their fact" in line and not any("the verifier read" in x for x in off.lines)

    def by_path(item) -> bool:
        return reachable(ViewedGraph(graph, item.view), item.qa.path[0], item.qa.path[-1], item.qa.hops + 1)

    ids = {m: {(i.qa.qa_id, i.view.level) for i in out[m].items} for m in ("off", "on")}
    # with every passage refused, exactly the variants another path answers stay; some kept by text alone go
    assert ids["on"] == {(i.qa.qa_id, i.view.level) for i in off.items if by_path(i)}
    assert ids["on"] < ids["off"]
