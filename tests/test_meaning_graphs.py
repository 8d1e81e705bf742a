"""The meaning fixtures (graphs in public vocabularies: schema.org, Wikidata, DBpedia, Freebase, a UMLS-style
semantic network, codes only, and a small country graph) import through ``hopforge graph import``'s importer, and
the meaning report (``flows.meaning_report``) writes one file per graph; on the graph of codes no question may be
accepted, and the report says which label could not be read."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from flows import meaning_report as mr

FIXTURES = Path(__file__).parent / "fixtures" / "meaning_graphs"

FIXTURE_NAMES = {"schema_org", "wikidata", "dbpedia", "freebase", "biomedical", "opaque", "small"}


def test_every_vocabulary_has_a_fixture():
    assert {mr.graph_name(p) for p in mr.graph_files(FIXTURES)} == FIXTURE_NAMES
    assert (FIXTURES / "README.md").is_file()


@pytest.mark.parametrize("path", mr.graph_files(FIXTURES), ids=mr.graph_name)
def test_fixture_imports_cleanly(path):
    imported, kg = mr.import_graph(path)
    name = mr.graph_name(path)
    assert imported.bad_rows == 0, imported.summary()
    assert kg.snapshot_id and kg.domain == name
    low, high = (10, 20) if name == "small" else (40, 150)
    assert low <= kg.n_nodes <= high, f"{name}: {kg.n_nodes} nodes"


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    out = tmp_path_factory.mktemp("meaning")
    return out, mr.write_reports(out, mr.graph_files(FIXTURES))


def test_report_written_for_every_graph(reports):
    out, runs = reports
    assert set(runs) == FIXTURE_NAMES
    for name in FIXTURE_NAMES:
        text = (out / f"{name}.txt").read_text(encoding="utf-8")
        assert "## Accepted questions" in text and "## Refusals by reason" in text
        # a graph with no seed says why, naming the relation labels that stopped it
        if not runs[name].seeds:
            refusals = text.split("## Refusals by reason", 1)[1]
            assert "seed_passed_over" in refusals and "the relation '" in refusals, f"{name}: {refusals[:500]}"
    # the graphs about the real world give questions
    assert all(runs[n].accepted for n in ("schema_org", "wikidata", "dbpedia", "freebase", "small"))
    assert (out / "summary.txt").is_file()


def test_report_is_deterministic(reports, tmp_path):
    out, _ = reports
    mr.write_reports(tmp_path, [FIXTURES / "small.jsonl"])
    assert (tmp_path / "small.txt").read_bytes() == (out / "small.txt").read_bytes()


def test_codes_yield_no_question_and_the_reason_names_the_label(reports):
    out, runs = reports
    run = runs["opaque"]
    text = (out / "opaque.txt").read_text(encoding="utf-8")
    accepted = [f"{a.question} ({' / '.join(a.hops)})" for a in run.accepted]
    assert not accepted, f"{len(accepted)} questions accepted on a graph of codes, e.g. {accepted[:3]}"
    refusals = text.split("## Refusals by reason", 1)[1]
    labels = {label for label in run.labels if label}
    assert any(re.search(rf"(?<![\w-]){re.escape(label)}(?![\w-])", refusals) for label in labels), refusals[:2000]


def test_the_report_says_how_spread_its_questions_are(reports):
    """japan_rail_dbpedia (grades-heldout51.md): all forty accepted questions were one template, "the next station of
    the next station of X", and 38 failed together; opcua_snake's eleven had "Mandatory" as six answers. The report
    says in its head how many distinct answers and program shapes its questions have, each with the commonest,
    counted here again from the questions it prints."""
    out, runs = reports
    for name, run in runs.items():
        text = (out / f"{name}.txt").read_text(encoding="utf-8")
        head = text.split("## Accepted questions", 1)[0]
        answers = Counter(re.findall(r"^   answer: (.*)$", text, flags=re.M))
        if not answers:
            assert "spread: (none accepted)" in head, name
            continue
        m = re.search(r"^spread: (\d+) answers of (\d+) \(most often (.*) x(\d+)\); (\d+) program shapes \(most often "
                      r"x(\d+): ", head, flags=re.M)
        assert m is not None, head
        assert (int(m[1]), int(m[2]), int(m[4])) == (len(answers), sum(answers.values()), max(answers.values()))
        assert 1 <= int(m[5]) <= sum(answers.values()) and int(m[6]) <= sum(answers.values())
    shapes = [("Kampala", "-county-> -district->"), ("Kampala", "-county-> -district->"), ("Gulu", "-district->")]
    acc = [mr.Accepted(seed="s", hop_class="1-2", path=[], hops=[], question="q", answer=a, shape=s) for a, s in shapes]
    assert mr.spread_line(acc) == ("spread: 2 answers of 3 (most often 'Kampala' x2); 2 program shapes (most often x2: "
                                   "-county-> -district->)")
