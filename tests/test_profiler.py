"""The profiler role: its request, how a reply is parsed (accepted, malformed, contradicting the graph), and the flow
hook that asks it once per label nothing else profiles, never while it is the embedded model."""

from __future__ import annotations

import pytest

from schemas.config import load_settings
from schemas.meaning import relation_key
from tasks.graph.kg import KnowledgeGraph
from tasks.meaning.profiler import (
    REQUEST_NAME,
    Example,
    ProfilerOutput,
    ProfilerReject,
    build_messages,
    label_examples,
    needs_profiler,
    parse,
)
from tasks.meaning.profiles import LabelStats, ProfileBook, hop_refusal
from warehouse.db import Warehouse

GOOD = {"words": True, "statement": "{s} tutors {o}", "ask_object": ["{wh} does {s} tutor?"],
        "object_clause": ["{the} tutored by {s}"], "ask_subject": ["{wh} tutors {o}?"],
        "subject_clause": ["{the} {that} tutors {o}"], "objects_per_subject": "one", "subjects_per_object": "many",
        "symmetric": False, "reason": "a guardian and the person in their care"}  # fmt: skip


def _out(**changes) -> ProfilerOutput:
    return ProfilerOutput(**{**GOOD, **changes})


# -- the request ----------------------------------------------------------------------------------------------------


def test_messages_give_the_label_examples_and_statistics():
    kg = KnowledgeGraph.from_triples("d", [("Ann", "tutor", "Bea"), ("Cal", "tutor", "Dee"), ("Ann", "knows", "Cal")])
    ex = label_examples([kg], {"tutor"})
    assert [(e.subject, e.object) for e in ex["tutor"]] == [("Ann", "Bea"), ("Cal", "Dee")] and "knows" not in ex
    examples = [Example("Ann", "Bea", "a guardian", "x" * 500)] + [Example(f"S{i}", f"O{i}") for i in range(7)]
    msgs = build_messages("tutor", examples, LabelStats(subjects=9, subjects_several=0, objects=7, objects_several=2,
                                                       pairs=9, snapshots=1))
    text = msgs[-1]["content"]
    assert "Relation label: 'tutor'" in text
    assert "- Ann (a guardian) --[tutor]--> Bea\n" in text  # a long description is left out, the name stays
    assert "S3 --[tutor]--> O3" in text and "S4" not in text  # at most five examples
    assert "0 of 9 subjects have several objects" in text and "2 of 7 objects have several subjects" in text
    for placeholder in ("{s}", "{o}", "{wh}", "{the}", "{that}"):
        assert placeholder in text


# -- parsing a reply ------------------------------------------------------------------------------------------------


def test_a_good_reply_is_a_profile_whose_evidence_is_the_profilers():
    p = parse(_out(), "Tutor", LabelStats(subjects=3, objects=3, objects_several=2, pairs=5, snapshots=1),
              model="judge-70b")
    assert not isinstance(p, ProfilerReject)
    assert (p.key, p.label, p.objects_per_subject, p.subjects_per_object) == ("tutor", "Tutor", "one", "many")
    assert p.forms is not None and p.forms.ask_subject == ["{wh} tutors {o}?"]
    assert set(p.evidence) == {"words", "forms", "objects_per_subject", "subjects_per_object", "symmetric"}
    assert all(e.source == "profiler" and "judge-70b" in e.detail for e in p.evidence.values())


@pytest.mark.parametrize(("changes", "says"), [
    ({"statement": "{s} tutors {x}"}, "{x}"),  # unknown placeholder
    ({"ask_subject": ["{wh} tutors?"]}, "{o}"),  # missing placeholder
    ({"object_clause": ["{the} tutored by {s}?"]}, "must not end"),
    ({"statement": "  "}, "no statement"),
    ({"symmetric": True}, "symmetric"),  # symmetric with different counts
])  # fmt: skip
def test_a_reply_that_is_no_valid_profile_is_malformed(changes, says):
    r = parse(_out(**changes), "tutor", None, model="m")
    assert isinstance(r, ProfilerReject) and r.kind == "malformed" and r.stored and says in r.reason, r


def test_a_reply_saying_one_where_the_graph_shows_many_contradicts_it():
    stats = LabelStats(subjects=5, subjects_several=2, objects=8, objects_several=0, pairs=9, snapshots=1)
    r = parse(_out(), "tutor", stats)
    assert isinstance(r, ProfilerReject) and r.kind == "contradicts_graph" and "2 of 5 subjects" in r.reason
    # one subject with two objects does not prove "many" (MANY_MIN): the answer stands
    assert not isinstance(parse(_out(), "tutor", LabelStats(subjects=5, subjects_several=1, pairs=6)), ProfilerReject)


def test_not_words_has_no_forms():
    p = parse(_out(words=False, objects_per_subject="unknown", subjects_per_object="unknown"), "r17", None)
    assert not isinstance(p, ProfilerReject) and p.words is False and p.forms is None


# -- through the flow -----------------------------------------------------------------------------------------------

TRIPLES = [
    ("Ann", "tutor", "Bea"), ("Cal", "tutor", "Dee"), ("Eve", "tutor", "Fay"), ("Gus", "tutor", "Bea"),
    ("Ann", "guards", "Hal"), ("Cal", "guards", "Ivy"), ("Ann", "guards", "Jon"), ("Cal", "guards", "Kim"),
    ("Bea", "r17", "Dee"), ("Dee", "r17", "Fay"), ("Hal", "married", "Ivy"),
]  # fmt: skip


def _profiler_calls(fake) -> list[str]:
    import re

    from testing.fake import last_user_text, request_schema

    out = []
    for r in fake.requests:
        if r.json and request_schema(r.json)[0] == REQUEST_NAME:
            out.append(re.search(r"^Relation label: '(.+)'$", last_user_text(r.json), re.M).group(1))
    return out


@pytest.fixture
def graph(prefect_harness, tmp_path):
    from flows.graphs import import_graphs

    path = tmp_path / "g.tsv"
    path.write_text("".join(f"{s}\t{r}\t{o}\n" for s, r, o in TRIPLES))
    import_graphs(files={"care": str(path)}, settings=load_settings(data_dir=tmp_path / "data"))
    return tmp_path / "data"


def _settings(data_dir, fake, profiler: bool):
    ep = {"base_url": fake.base_url, "model": "fake-model", "max_retries": 1, "timeout_s": 10}
    roles = {"generator": ep, "verifier": ep}
    if profiler:
        roles["profiler"] = {**ep, "model": "profiler-model"}
    return load_settings(data_dir=data_dir, roles=roles)


def _expected(data_dir) -> set[str]:
    from flows.profiles import snapshot_labels

    with Warehouse(data_dir / "warehouse.duckdb", read_only=True) as wh:
        labels, stats = snapshot_labels(wh)
    book = ProfileBook(stats=stats)
    return {labels[k] for k in labels if needs_profiler(book.profile(labels[k]))}


def _generate(settings):
    from flows.qa import generate_qa

    return generate_qa(domains=["care"], n_seeds=3, modes=["candidates"], writer="template", use_judge=False,
                       meaning_check="off", min_ball=2, settings=settings)


def test_the_flow_asks_once_per_unknown_label_and_the_answers_reach_the_book(graph, fake_llm, monkeypatch):
    import tasks.qa.generate as gen
    from flows.profiles import snapshot_labels
    from warehouse.profiles import read_profiled

    expected = _expected(graph)
    assert "tutor" in expected and "r17" not in expected  # no forms; not words (never asked)
    before = ProfileBook().profile("tutor")
    assert before.forms is None and "no surface forms" in hop_refusal(before, True)
    fake_llm.add(schema_name=REQUEST_NAME, prompt_contains="Relation label: 'guards'",
                 reply={**GOOD, "statement": "{s} guards {x}"})  # malformed: stored as rejected
    fake_llm.add_profiler()
    seen: list[set[str]] = []
    real = gen.book_for_graph

    def spy(kg, user=None, profiled=None):
        seen.append(set(profiled or {}))
        return real(kg, user, profiled)

    monkeypatch.setattr(gen, "book_for_graph", spy)
    settings = _settings(graph, fake_llm, profiler=True)
    _generate(settings)
    calls = _profiler_calls(fake_llm)
    assert sorted(calls) == sorted(expected)  # once per label that needed it
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        rows = {r["key"]: r for r in wh.query("SELECT key, status, note, run_id FROM relation_profiles "
                                               "WHERE source = 'profiler'")}
        profiled = read_profiled(wh)
        labels, stats = snapshot_labels(wh)
    assert set(rows) == {relation_key(c) for c in calls}
    assert rows["guards"]["status"] == "rejected" and rows["guards"]["note"].startswith("malformed")
    assert "guards" not in profiled and "tutor" in profiled
    # the jobs' books carried the accepted answers
    assert seen and all("tutor" in s for s in seen)
    book = ProfileBook(profiled=profiled, stats=stats)
    tutor = book.profile("tutor")
    assert tutor.forms is not None and tutor.evidence["forms"].source == "profiler"
    assert "profiler-model" in tutor.evidence["forms"].detail
    assert hop_refusal(tutor, True) is None  # the label that had no forms can be asked
    guards = book.profile("guards")  # the rejected answer: the label falls back to the morphology
    assert guards.forms is not None and guards.evidence["forms"].source == "morphology"
    # a rerun asks nothing: every label has an answer or a rejection
    _generate(settings)
    assert len(_profiler_calls(fake_llm)) == len(calls)


def test_a_forgotten_answer_comes_from_the_cache(graph, fake_llm, capsys):
    from flows.profiles import profile_unknown_labels
    from flows.runtime import open_run

    fake_llm.add_profiler()
    settings = _settings(graph, fake_llm, profiler=True)
    with open_run("profile-relations", {}, settings) as rt:
        first = profile_unknown_labels(rt)
    n = len(_profiler_calls(fake_llm))
    assert first is not None and first.asked == n == len(_expected(graph)) and first.accepted == n
    assert f"profiler: {n} relation label(s) profiled, {n} accepted, 0 rejected" in capsys.readouterr().out
    with Warehouse(settings.warehouse_path) as wh:
        wh.execute("DELETE FROM relation_profiles WHERE source = 'profiler'")
    with open_run("profile-relations", {}, settings) as rt:
        again = profile_unknown_labels(rt)
        usage = rt.gateway.ledger.totals()
    assert again.asked == n and len(_profiler_calls(fake_llm)) == n and usage["llm_cache_hits"] == n


def test_the_embedded_model_is_never_asked(graph, fake_llm, monkeypatch, capsys):
    import gateway.local
    from flows.profiles import profile_unknown_labels
    from flows.runtime import open_run

    def no_local(*a, **k):
        raise AssertionError("the embedded model must not be started for the profiler")

    monkeypatch.setattr(gateway.local, "shared_server", no_local)
    fake_llm.add_profiler()
    settings = _settings(graph, fake_llm, profiler=False)
    assert settings.endpoint("profiler").is_local
    with open_run("profile-relations", {}, settings) as rt:
        assert profile_unknown_labels(rt) is None
    assert "profiler" not in capsys.readouterr().out
    _generate(settings)
    assert _profiler_calls(fake_llm) == []
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        assert wh.scalar("SELECT count(*) FROM relation_profiles WHERE source = 'profiler'") == 0


def test_export_with_profile_profiles_first(graph, fake_llm):
    import yaml

    from flows.profiles import export_profiles

    fake_llm.add_profiler()
    settings = _settings(graph, fake_llm, profiler=True)
    out = graph.parent / "profiles.yaml"
    r = export_profiles(out, settings, profile=True)
    assert r["profiler"].startswith("profiler: ") and _profiler_calls(fake_llm)
    by_key = {e["key"]: e for e in yaml.safe_load(out.read_text())["profiles"]}
    assert by_key["tutor"]["forms"]["statement"] == "{s} tutor {o}"
    export_profiles(graph.parent / "again.yaml", settings)  # without --profile: nothing asked
    assert len(_profiler_calls(fake_llm)) == len(_expected(graph))


def test_the_fake_profiler_reads_counts_from_the_statistics():
    from testing.fake import profiler_reply

    body = {"messages": build_messages("tends", [], LabelStats(subjects=4, subjects_several=2, objects=6,
                                                               objects_several=0, pairs=8, snapshots=1))}
    reply = profiler_reply(body)
    assert (reply["objects_per_subject"], reply["subjects_per_object"]) == ("many", "one")
    assert not isinstance(parse(ProfilerOutput(**reply), "tends", None), ProfilerReject)
    assert profiler_reply({"messages": build_messages("P_31", [], None)})["words"] is False


def test_the_doctor_checks_the_profiler_only_when_it_has_an_endpoint(tmp_path):
    from tasks.ops.doctor import endpoint_groups

    local = load_settings(data_dir=tmp_path)
    assert "profiler" not in [r for roles in endpoint_groups(local).values() for r in roles]
    remote = load_settings(data_dir=tmp_path, roles={"profiler": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}})
    assert endpoint_groups(remote)[("http://127.0.0.1:9/v1", "m")] == ["profiler"]


def test_the_cli_export_takes_profile(graph, fake_llm, monkeypatch):
    from typer.testing import CliRunner

    from flows.cli import app

    fake_llm.add_profiler()
    monkeypatch.setenv("HOPFORGE_DATA_DIR", str(graph))
    out = graph.parent / "cli.yaml"
    local = CliRunner().invoke(app, ["graph", "profiles", "export", "--out", str(out), "--profile"])
    assert local.exit_code == 0, local.output
    assert "embedded model, which is never asked" in local.output and _profiler_calls(fake_llm) == []
    monkeypatch.setenv("HOPFORGE_ROLES__PROFILER__BASE_URL", fake_llm.base_url)
    monkeypatch.setenv("HOPFORGE_ROLES__PROFILER__MODEL", "profiler-model")
    remote = CliRunner().invoke(app, ["graph", "profiles", "export", "--out", str(out), "--profile"])
    assert remote.exit_code == 0, remote.output
    assert sorted(_profiler_calls(fake_llm)) == sorted(_expected(graph))
