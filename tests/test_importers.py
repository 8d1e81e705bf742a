"""Graph importers (tasks/graph/importers.py): LightRAG GraphML, TSV / JSONL triples, RoG subgraphs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from schemas.graph import Relation
from tasks.graph.store import records_from_networkx
from warehouse.graphs import write_snapshot
from tasks.graph.importers import (
    GraphImportError,
    import_graph_file,
    read_graphml,
    read_lightrag_graphml,
    read_rog_jsonl,
    read_triples,
)
from tasks.graph.kg import KnowledgeGraph
from warehouse.db import Warehouse
from warehouse.graphs import load_graph, write_import

DEMO_GRAPHS = Path(__file__).resolve().parent.parent / "flows" / "demo" / "graphs"


def lightrag_style_graph() -> nx.Graph:
    """A graph with LightRAG 1.5's attributes, <SEP>-merged fields, and text that needs XML escaping."""
    G = nx.Graph()
    nodes = {
        "Alan Turing": (
            "person",
            "Mathematician.<SEP>Codebreaker at Bletchley & co.<SEP>Mathematician.",
            "chunk-a<SEP>chunk-b",
        ),
        "Turing machine": ("concept", "A model of computation <tape>.", "chunk-a"),
        "Bletchley Park": ("location", "Codebreaking site.\nIn England.", "chunk-b<SEP>chunk-c"),
        "Enigma": ("artifact", "Cipher machine “Enigma”.", "chunk-c"),
        "Dana": ("UNKNOWN", "UNKNOWN", "UNKNOWN"),
    }
    for name, (etype, desc, src) in nodes.items():
        G.add_node(name, entity_id=name, entity_type=etype, description=desc, source_id=src,
                   file_path="doc1.txt<SEP>doc2.txt", created_at=1700000000)  # fmt: skip
    edges = [
        ("Alan Turing", "Turing machine", 2.0, "Turing proposed the machine.", "invention, computation", "chunk-a"),
        (
            "Alan Turing",
            "Bletchley Park",
            1.0,
            "Worked there.<SEP>Led Hut 8.",
            "work<SEP>work, wartime",
            "chunk-b<SEP>chunk-c",
        ),
        ("Bletchley Park", "Enigma", 3.5, "Enigma was broken there.", "codebreaking", "chunk-c"),
        ("Enigma", "Dana", 1.0, "Dana studied Enigma.", "research", "UNKNOWN"),
    ]
    for u, v, w, desc, kw, src in edges:
        G.add_edge(
            u, v, weight=w, description=desc, keywords=kw, source_id=src, file_path="doc1.txt", created_at=1700000000
        )
    return G


# -- GraphML -------------------------------------------------------------------------------------------------------
def test_graphml_round_trip_into_warehouse(tmp_path: Path) -> None:
    path = tmp_path / "graph_chunk_entity_relation.graphml"
    nx.write_graphml(lightrag_style_graph(), path)
    imported = read_lightrag_graphml(path, "cs")
    reference = nx.read_graphml(path)
    assert len(imported.entities) == reference.number_of_nodes() == 5
    assert len(imported.relations) == reference.number_of_edges() == 4
    assert not imported.directed and imported.bad_rows == 0 and imported.source == "lightrag"

    # The streaming reader gives exactly what the networkx route gives.
    ref_entities, ref_relations = records_from_networkx(reference, "cs")
    assert imported.entities == ref_entities
    assert sorted(imported.relations, key=lambda r: r.key()) == sorted(ref_relations, key=lambda r: r.key())

    turing = next(e for e in imported.entities if e.name == "Alan Turing")
    assert turing.description == "Mathematician.\nCodebreaker at Bletchley & co."
    assert turing.source_chunk_ids == ["chunk-a", "chunk-b"] and turing.file_paths == ["doc1.txt", "doc2.txt"]
    dana = next(e for e in imported.entities if e.name == "Dana")
    assert (dana.type, dana.description, dana.source_chunk_ids) == ("UNKNOWN", "", [])
    work = next(
        r
        for r in imported.relations
        if "Bletchley Park" in (r.source, r.target) and "Alan Turing" in (r.source, r.target)
    )
    assert work.keywords == ["work", "wartime"] and work.description == "Worked there.\nLed Hut 8."
    assert work.source_chunk_ids == ["chunk-b", "chunk-c"] and work.relation == "" and not work.directed

    wh = Warehouse()
    snap = write_import(wh, imported, build_run_id="run-1")
    assert (snap.n_nodes, snap.n_edges, snap.directed, snap.source) == (5, 4, False, "lightrag")
    assert (
        wh.scalar("SELECT count(*) FROM entities WHERE snapshot_id = ?", [snap.snapshot_id])
        == reference.number_of_nodes()
    )
    assert (
        wh.scalar("SELECT count(*) FROM relations WHERE snapshot_id = ?", [snap.snapshot_id])
        == reference.number_of_edges()
    )
    kg = load_graph(wh, "cs")
    assert kg.shortest_path_length("Turing machine", "Dana") == 4
    assert kg.edge("Enigma", "Bletchley Park").weight == 3.5


def test_graphml_multigraph_keeps_parallel_and_mixed_direction(tmp_path: Path) -> None:
    relations = [
        Relation(domain="cs", source="A", target="B", relation="advises", directed=True),
        Relation(domain="cs", source="A", target="B", relation="cites", directed=True, weight=3.0),
        Relation(domain="cs", source="B", target="A", relation="funds", directed=True, keywords=["money"]),
        Relation(domain="cs", source="C", target="A", relation="near", directed=False, description="C is near A"),
    ]
    kg = KnowledgeGraph.from_records("cs", [], relations, add_missing_entities=True)
    path = tmp_path / "multi.graphml"
    nx.write_graphml(kg.to_networkx(), path)
    back = read_graphml(path, "cs")
    assert back.source == "graphml" and back.directed
    assert back.to_graph().relations() == kg.relations()


def test_graphml_edges_before_nodes_and_bad_elements(tmp_path: Path) -> None:
    path = tmp_path / "odd.graphml"
    path.write_text(
        """<?xml version='1.0' encoding='utf-8'?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="w" for="edge" attr.name="weight" attr.type="double"><default>2.5</default></key>
  <key id="t" for="node" attr.name="entity_type" attr.type="string" />
  <graph edgedefault="directed">
    <edge source="a" target="b" />
    <edge source="b" target="c"><data key="w">heavy</data></edge>
    <edge source="" target="c" />
    <node id="a"><data key="t">person</data></node>
    <node id="b" />
    <node id="   " />
  </graph>
</graphml>
""",
        encoding="utf-8",
    )
    imported = read_lightrag_graphml(path, "cs")
    assert imported.directed
    assert [(r.source, r.target, r.weight, r.directed) for r in imported.relations] == [("a", "b", 2.5, True)]
    assert [e.name for e in imported.entities] == ["a", "b"] and imported.entities[0].type == "person"
    assert imported.bad_rows == 3
    errors = sorted(imported.errors, key=lambda e: e.line or 0)
    assert [(e.line, e.reason_code) for e in errors] == [(7, "bad_element"), (8, "bad_element"), (11, "bad_element")]
    assert "weight 'heavy' is not a number" in errors[0].message
    assert "without a source or target" in errors[1].message and "without an id" in errors[2].message


def test_graphml_malformed_and_empty(tmp_path: Path) -> None:
    broken = tmp_path / "broken.graphml"
    broken.write_text("<graphml>\n<graph>\n<node id='a'>\n</graph>\n", encoding="utf-8")
    with pytest.raises(GraphImportError, match=r"broken.graphml:4: not well-formed"):
        read_lightrag_graphml(broken, "cs")
    empty = tmp_path / "empty.graphml"
    empty.write_text("<graphml><graph edgedefault='undirected'></graph></graphml>", encoding="utf-8")
    with pytest.raises(GraphImportError, match="yielded no entity"):
        read_lightrag_graphml(empty, "cs")
    with pytest.raises(GraphImportError, match="no graph file"):
        read_lightrag_graphml(tmp_path / "missing.graphml", "cs")


async def test_real_lightrag_graph_without_llm(tmp_path: Path) -> None:
    """LightRAG builds a graph from a custom KG (no LLM); its GraphML imports with chunk ids intact."""
    from lightrag import LightRAG
    from lightrag.utils import EmbeddingFunc

    from tasks.corpus.text import make_lightrag_tokenizer

    async def embed(texts: list[str], **_: object) -> np.ndarray:
        vecs = np.zeros((len(texts), 8), dtype=np.float32)
        for i, t in enumerate(texts):
            for j, ch in enumerate(t.encode("utf-8")):
                vecs[i, (j + ch) % 8] += 1.0
        return vecs

    async def no_llm(
        prompt: str, system_prompt: str | None = None, history_messages: list | None = None, **_: object
    ) -> str:
        raise AssertionError("insert_custom_kg must not call the LLM")

    rag = LightRAG(
        working_dir=str(tmp_path / "rag"),
        llm_model_func=no_llm,
        embedding_func=EmbeddingFunc(embedding_dim=8, func=embed, max_token_size=512),
        tokenizer=make_lightrag_tokenizer(),
    )
    await rag.initialize_storages()
    try:
        await rag.ainsert_custom_kg(
            {
                "chunks": [
                    {"content": "Alice works with Bob at Acme.", "source_id": "doc-1", "file_path": "a.txt"},
                    {"content": "Bob founded Acme in 1999.", "source_id": "doc-2", "file_path": "b.txt"},
                ],
                "entities": [
                    {"entity_name": "Alice", "entity_type": "person", "description": "An engineer.",
                     "source_id": "doc-1"},
                    {"entity_name": "Bob", "entity_type": "person", "description": "A founder.", "source_id": "doc-2"},
                    {"entity_name": "Acme", "entity_type": "organization", "description": "A company.",
                     "source_id": "doc-1"},
                ],
                "relationships": [
                    {"src_id": "Alice", "tgt_id": "Bob", "description": "Alice works with Bob.",
                     "keywords": "collaboration, team", "weight": 2.0, "source_id": "doc-1"},
                    {"src_id": "Bob", "tgt_id": "Acme", "description": "Bob founded Acme.", "keywords": "founder",
                     "weight": 1.0, "source_id": "doc-2"},
                    {"src_id": "Acme", "tgt_id": "Dana", "description": "Dana works at Acme.", "keywords": "employment",
                     "source_id": "doc-2"},
                ],
            }
        )  # fmt: skip
    finally:
        await rag.finalize_storages()

    path = tmp_path / "rag" / "graph_chunk_entity_relation.graphml"
    imported = read_lightrag_graphml(path, "cs")
    assert [e.name for e in imported.entities] == ["Acme", "Alice", "Bob", "Dana"]
    assert len(imported.relations) == 3 and not imported.directed
    alice = imported.entities[1]
    assert alice.type == "person" and alice.description == "An engineer."
    (chunk,) = alice.source_chunk_ids
    assert chunk.startswith("chunk-")
    dana = imported.entities[3]
    assert dana.type == "UNKNOWN" and dana.description == ""
    team = next(r for r in imported.relations if {r.source, r.target} == {"Alice", "Bob"})
    assert team.keywords == ["collaboration", "team"] and team.weight >= 2.0 and team.source_chunk_ids == [chunk]
    kg = imported.to_graph()
    assert kg.shortest_path_length("Alice", "Dana") == 3


# -- triples -------------------------------------------------------------------------------------------------------
def test_tsv_triples(tmp_path: Path) -> None:
    path = tmp_path / "kb.tsv"
    path.write_text(
        "head\trelation\ttail\n"
        "# a comment\n"
        "Paris\tcapital_of\tFrance\n"
        "Paris\tlargest_city_of\tFrance\n"
        "France\tcontains\tParis\n"
        "\n"
        "Paris\tcapital_of\tFrance\n"
        "only\ttwo\n"
        "\trelation\tFrance\n",
        encoding="utf-8",
    )
    imported = read_triples(path, "geo")
    assert imported.directed and imported.source == "triples"
    assert [(r.source, r.relation, r.target) for r in imported.relations] == [
        ("Paris", "capital_of", "France"), ("Paris", "largest_city_of", "France"), ("France", "contains", "Paris"),
    ]  # fmt: skip
    first = imported.relations[0]
    assert first.keywords == ["capital_of"] and first.description == "Paris capital_of France" and first.directed
    assert imported.duplicates_merged == 1
    assert [(e.line, e.reason_code) for e in imported.errors] == [(8, "bad_columns"), (9, "empty_name")]
    assert str(imported.errors[0]).startswith(f"{path}:8: ")
    kg = imported.to_graph()
    assert [(d.relation, d.direction) for d in kg.relations_between("Paris", "France")] == [
        ("capital_of", "out"), ("largest_city_of", "out"), ("contains", "in"),
    ]  # fmt: skip
    assert [d.relation for d in kg.relations_between("France", "Paris", undirected=False)] == ["contains"]


def test_jsonl_triples_with_entity_rows(tmp_path: Path) -> None:
    rows = [
        {"entity": "Alan Turing", "type": "person", "description": "Mathematician."},
        {"head": "Alan Turing", "relation": "proposed", "tail": "Turing machine", "keywords": "invention, computation",
         "description": "Turing proposed the machine in 1936.", "directed": True, "weight": 2},
        {"head": "Alan Turing", "relation": "worked_at", "tail": "Bletchley Park"},
        {"head": "Turing machine", "relation": "related_to", "tail": "Lambda calculus", "directed": False,
         "keywords": []},
        {"entity": "Alan Turing", "type": "UNKNOWN", "description": "Codebreaker."},
    ]  # fmt: skip
    lines = [json.dumps(r) for r in rows]
    lines += [
        "{not json",
        json.dumps(["a", "list"]),
        json.dumps({"head": "x", "tail": "y"}),
        json.dumps({"head": 1, "relation": "r", "tail": "y"}),
        json.dumps({"head": "x", "relation": "r", "tail": "y", "weight": -1}),
        json.dumps({"head": "x", "relation": "r", "tail": "y", "directed": "yes"}),
        json.dumps({"foo": "bar"}),
        json.dumps({"entity": "  "}),
    ]
    path = tmp_path / "graph.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    imported = read_triples(path, "cs")
    assert imported.rows_read == 13 and imported.bad_rows == 8
    assert [(e.line, e.reason_code) for e in imported.errors] == [
        (6, "bad_json"), (7, "bad_json"), (8, "missing_field"), (9, "wrong_type"), (10, "bad_weight"),
        (11, "wrong_type"), (12, "unknown_row"), (13, "empty_name"),
    ]  # fmt: skip
    by_name = {e.name: e for e in imported.entities}
    assert set(by_name) == {"Alan Turing", "Turing machine", "Bletchley Park", "Lambda calculus"}
    turing = by_name["Alan Turing"]
    assert turing.type == "person" and turing.description == "Mathematician.\nCodebreaker."
    assert by_name["Bletchley Park"].type == "UNKNOWN"
    proposed, worked, related = imported.relations
    assert proposed.keywords == ["invention", "computation"] and proposed.weight == 2.0
    assert proposed.description == "Turing proposed the machine in 1936."
    assert worked.keywords == ["worked_at"] and worked.description == "Alan Turing worked_at Bletchley Park"
    assert not related.directed and related.keywords == []
    assert imported.directed
    kg = imported.to_graph()
    assert kg.has_edge("Lambda calculus", "Turing machine", undirected=False)
    assert not kg.has_edge("Bletchley Park", "Alan Turing", undirected=False)


def test_file_with_only_bad_rows_raises_with_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"head": "a"}\n\nnot json\n', encoding="utf-8")
    with pytest.raises(GraphImportError, match=r"bad.jsonl:1: .*missing_field.*bad.jsonl:3: "):
        read_triples(path, "cs")


def test_not_utf8_line_is_a_row_error(tmp_path: Path) -> None:
    path = tmp_path / "mixed.tsv"
    path.write_bytes(b"a\tr\tb\n\xff\xfe\tr\tc\nb\tr\tc\n")
    imported = read_triples(path, "cs")
    assert len(imported.relations) == 2
    assert [(e.line, e.reason_code) for e in imported.errors] == [(2, "not_utf8")]


def test_undirected_only_triples_make_an_undirected_graph(tmp_path: Path) -> None:
    path = tmp_path / "u.jsonl"
    path.write_text(
        json.dumps({"head": "a", "relation": "r", "tail": "b", "directed": False})
        + "\n"
        + json.dumps({"head": "b", "relation": "r", "tail": "a", "directed": False})
        + "\n",
        encoding="utf-8",
    )
    imported = read_triples(path, "cs")
    assert not imported.directed and len(imported.relations) == 1 and imported.duplicates_merged == 1


def test_rog_subgraphs_merge_into_one_graph(tmp_path: Path) -> None:
    rows = [
        {"id": "WebQTest-1", "question": "what is the capital of france", "graph": [
            ["France", "location.country.capital", "Paris"], ["Paris", "location.location.containedby", "France"]]},
        {"id": "WebQTest-2", "graph": [
            ["France", "location.country.capital", "Paris"], ["France", "location.country.official_language", "French"],
            ["France", "bad"], [1, 2, 3], ["", "r", "x"]]},
        {"id": "WebQTest-3"},
    ]  # fmt: skip
    path = tmp_path / "rog.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(json.dumps(r) for r in rows) + "\n")
    imported = read_rog_jsonl(path, "webqsp")
    assert imported.source == "rog" and imported.directed
    assert len(imported.relations) == 3 and imported.duplicates_merged == 1
    assert [(e.line, e.reason_code) for e in imported.errors] == [
        (2, "bad_triple"), (2, "bad_triple"), (2, "empty_name"), (3, "missing_field"),
    ]  # fmt: skip
    assert "graph[3]" in imported.errors[1].message
    kg = imported.to_graph()
    assert [d.relation for d in kg.relations_between("France", "Paris")] == [
        "location.country.capital",
        "location.location.containedby",
    ]
    assert kg.relations_between("France", "Paris")[1].direction == "in"
    assert import_graph_file(path, "webqsp").source == "rog"


def test_import_graph_file_dispatch(tmp_path: Path) -> None:
    tsv = tmp_path / "t.txt"
    tsv.write_text("a\tr\tb\n", encoding="utf-8")
    assert import_graph_file(tsv, "cs").source == "triples"
    gml = tmp_path / "g.graphml"
    nx.write_graphml(lightrag_style_graph(), gml)
    assert import_graph_file(gml, "cs").source == "lightrag"
    sniff = tmp_path / "rows.data"
    sniff.write_text(json.dumps({"head": "a", "relation": "r", "tail": "b"}) + "\n", encoding="utf-8")
    assert len(read_triples(sniff, "cs").relations) == 1


@pytest.mark.skipif(not DEMO_GRAPHS.is_dir(), reason="demo graphs not present")
def test_demo_graphs_import_cleanly() -> None:
    wh = Warehouse()
    for path in sorted(DEMO_GRAPHS.glob("*.jsonl")):
        imported = read_triples(path, path.stem)
        assert imported.bad_rows == 0, imported.summary()
        snap = write_snapshot(
            wh, path.stem, imported.entities, imported.relations, source="triples", build_run_id=None,
            directed=imported.directed,
        )  # fmt: skip
        assert load_graph(wh, path.stem).n_edges == snap.n_edges == len(imported.relations)


def test_entity_row_after_its_relation_is_not_a_duplicate(tmp_path: Path) -> None:
    path = tmp_path / "late.jsonl"
    path.write_text(
        json.dumps({"head": "a", "relation": "r", "tail": "b"})
        + "\n"
        + json.dumps({"entity": "b", "type": "place", "description": "B."})
        + "\n",
        encoding="utf-8",
    )
    imported = read_triples(path, "cs")
    assert imported.duplicates_merged == 0
    assert [(e.name, e.type, e.description) for e in imported.entities] == [("a", "UNKNOWN", ""), ("b", "place", "B.")]


def test_bad_domain_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "t.tsv"
    path.write_text("a\tr\tb\n", encoding="utf-8")
    with pytest.raises(GraphImportError, match="domain 'Computer Science'"):
        read_triples(path, "Computer Science")
