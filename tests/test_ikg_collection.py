"""A person's own text collection (``[ikg] texts``) for IKG variants: read through the ingest's readers (a folder,
a jsonl, a Hugging Face dataset on disk), searched beside a domain's corpus or alone for an imported graph, the
run's line naming it, and one clear error for a missing or empty collection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.ikg_data import TextCollectionError, ikg_export_data, load_collection
from schemas.answers import name_key
from schemas.config import load_settings
from schemas.errors import InputError
from schemas.qa import QA
from tasks.corpus.ingest import ingest_text_folders
from tasks.env.index import HashingEmbedder
from tasks.env.text_search import TextIndex
from tasks.graph.importers import read_triples
from tests.test_ikg_export import make_questions
from warehouse.corpus import write_ingest
from warehouse.db import Warehouse
from warehouse.graphs import load_graph, write_import

DEMO = Path(__file__).resolve().parent.parent / "flows" / "demo"
HISTORY_TEXTS = sorted((DEMO / "corpus" / "history").glob("*.md"))


def settings_for(root: Path, **ikg):
    return load_settings(data_dir=root / "data", cache={"mode": "off"},
                         ikg={"levels": [0.2, 0.4], "embedder": "hashing", **ikg})  # fmt: skip


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> tuple[Path, list[QA]]:
    """A warehouse with the demo history graph imported (no corpus) and the cs graph with its corpus."""
    root = tmp_path_factory.mktemp("ikg-texts")
    qas: list[QA] = []
    with Warehouse(settings_for(root).warehouse_path) as wh:
        write_ingest(wh, ingest_text_folders(DEMO / "corpus" / "cs"), "run-ingest")
        for domain, n in (("history", 8), ("cs", 3)):
            snap = write_import(wh, read_triples(DEMO / "graphs" / f"{domain}.jsonl", domain), build_run_id="run-g")
            qas += make_questions(load_graph(wh, domain, snap.snapshot_id), n)
    return root, qas


def run_ikg(root: Path, qas: list[QA], **ikg):
    settings = settings_for(root, **ikg)
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        return ikg_export_data(wh, qas, settings, run_id="run-x")


def history(qas: list[QA]) -> list[QA]:
    return [q for q in qas if q.domain == "history"]


def test_an_imported_graph_without_texts_gets_no_variants_and_says_so(world):
    root, qas = world
    out = run_ikg(root, history(qas))
    assert out.items == []
    assert out.lines == [l for l in out.lines if "history" in l] and len(out.lines) == 1
    assert "no corpus chunks and no text collection given, so no IKG variants" in out.lines[0]


def test_a_folder_collection_gives_an_imported_graph_checked_variants(world, tmp_path):
    root, qas = world
    texts = tmp_path / "my_notes"
    texts.mkdir()
    for f in HISTORY_TEXTS:
        (texts / f.name).write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    out = run_ikg(root, history(qas), texts=str(texts))
    assert out.lines[0] == (f"IKG history: text search over no corpus chunks (the graph has no corpus) and text "
                            f"collection 'my_notes' ({len(HISTORY_TEXTS)} chunks, folder at {texts})")  # fmt: skip
    assert out.items, out.lines
    # Re-check each text-answerable variant independently: the collection's top 3 for the fact's query holds a
    # passage naming both entities (an imported graph's facts have no provenance to match).
    index = TextIndex(load_collection(settings_for(root, texts=str(texts))).chunks, HashingEmbedder(), name="check")
    by_text = 0
    for item in out.items:
        for fact in item.view.facts:
            hits = index.search(fact.query(), 3)
            named = [h for h in hits if name_key(fact.head) in name_key(f"{h.chunk.title}\n{h.chunk.text}")
                     and name_key(fact.tail) in name_key(f"{h.chunk.title}\n{h.chunk.text}")]
            by_text += bool(named)
        assert all(h.chunk.collection == "my_notes" for h in index.search(item.view.facts[0].query(), 3))
    assert by_text > 0
    kept = sum(int(l.split(": ")[1].split(" variants kept")[0]) for l in out.lines[1:])
    assert kept == len(out.items)


def test_a_collection_is_searched_beside_the_domain_corpus(world, tmp_path):
    root, qas = world
    rows = tmp_path / "extra.jsonl"
    rows.write_text("".join(json.dumps({"context": f.read_text(encoding="utf-8")}) + "\n" for f in HISTORY_TEXTS),
                    encoding="utf-8")
    out = run_ikg(root, [q for q in qas if q.domain == "cs"], texts=str(rows))
    assert out.lines[0] == (f"IKG cs: text search over 5 corpus chunks of cs and text collection 'extra' "
                            f"({len(HISTORY_TEXTS)} chunks, jsonl at {rows})")  # fmt: skip


def test_a_dataset_on_disk_is_read_by_the_dataset_reader(tmp_path):
    datasets = pytest.importorskip("datasets")
    body = {"context": [f.read_text(encoding="utf-8") for f in HISTORY_TEXTS]}
    datasets.Dataset.from_dict(body).save_to_disk(str(tmp_path / "saved"))
    (tmp_path / "pq").mkdir()
    datasets.Dataset.from_dict(body).to_parquet(str(tmp_path / "pq" / "train.parquet"))
    for folder in ("saved", "pq"):
        got = load_collection(settings_for(tmp_path, texts=str(tmp_path / folder)))
        assert got is not None and got.kind == "hf" and got.name == folder
        assert len(got.chunks) == len(HISTORY_TEXTS) and any("Waterloo" in c.text for c in got.chunks)


def test_no_collection_configured_is_none(tmp_path):
    assert load_collection(settings_for(tmp_path)) is None


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: p / "absent", r"^\[ikg\] texts: .*absent: no such file or folder"),
    (lambda p: (p / "empty").mkdir() or p / "empty", r"^\[ikg\] texts: .*no \.txt/\.md files there"),
    (lambda p: (p / "blank.jsonl").write_text('{"context": 3}\n{"context": "  "}\n') and p / "blank.jsonl",
     r"^\[ikg\] texts: text collection 'blank' holds no text \(skipped: .*wrong_type"),
    (lambda p: (p / "notes.pdf").write_bytes(b"%PDF-1.4") and p / "notes.pdf",
     r"^\[ikg\] texts: .*notes\.pdf: a file source must be"),
])  # fmt: skip
def test_a_missing_empty_or_non_text_collection_is_one_clear_error(tmp_path, make, message):
    path = make(tmp_path)
    with pytest.raises(TextCollectionError, match=message) as info:
        load_collection(settings_for(tmp_path, texts=str(path)))
    assert isinstance(info.value, InputError) and "\n" not in str(info.value)


def test_a_bad_collection_stops_the_ikg_run_before_any_graph_is_searched(world):
    root, qas = world
    with pytest.raises(TextCollectionError, match=r"^\[ikg\] texts: "):
        run_ikg(root, history(qas), texts=str(root / "nowhere"))


def test_the_tool_server_searches_the_collection_the_checks_searched(world, tmp_path):
    """``tool_environment`` (what ``serve-tools`` and rollouts use) offers ``web_search`` on the imported graph
    over the configured collection, so a rollout reads the text its variant was checked against."""
    from flows.tools_env import tool_environment

    root, _ = world
    texts = tmp_path / "notes"
    texts.mkdir()
    for f in HISTORY_TEXTS:
        (texts / f.name).write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    first = HISTORY_TEXTS[0].read_text(encoding="utf-8").split()
    query = " ".join(first[:12])
    without = settings_for(root)
    with Warehouse(without.warehouse_path, read_only=True) as wh:
        env = tool_environment(without, wh, ["history"], embedder="hashing")
    assert "web_search" not in env.tool_names
    given = settings_for(root, texts=str(texts))
    with Warehouse(given.warehouse_path, read_only=True) as wh:
        env = tool_environment(given, wh, ["history"], embedder="hashing")
    assert "web_search" in env.tool_names
    obs = env.call("web_search", {"query": query, "graph_type": "history"})
    assert obs.ok, obs.text
    assert HISTORY_TEXTS[0].stem in obs.text or " ".join(first[:6]) in obs.text
