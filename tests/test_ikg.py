"""IKG views (Graph-RFT's incomplete-graph settings) as overlays on the demo graphs, and the answerability check."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

from bench.bench_ikg_demo import walk
from schemas.answers import name_key
from schemas.errors import InputError
from schemas.graph import Relation
from schemas.qa import QA
from tasks.corpus.ingest import ingest_text_folders
from tasks.env.ikg import (
    IKGError,
    IKGReject,
    IKGVariant,
    ViewedGraph,
    ViewRegistry,
    build_variants,
    check_answerable,
    edge_id,
    make_view,
    setting_fields,
    with_setting,
)
from tasks.env.index import HashingEmbedder
from tasks.env.tools import render_no_information
from tasks.env.text_search import TextChunk, TextIndex, chunks_from_ingest, passage_window, render_text_hits
from tasks.graph.importers import read_triples
from tasks.graph.kg import KnowledgeGraph
from tasks.qa.context import path_edges

DEMO = Path(__file__).resolve().parent.parent / "flows" / "demo"
DOMAINS = ("agriculture", "biology", "cooking", "cs", "history")

#: Critical triples hidden per path length at IKG-20/40/60%: round half up, at least one (worked out by hand).
EXPECTED_HIDDEN = {1: (1, 1, 1), 2: (1, 1, 1), 3: (1, 1, 2), 4: (1, 2, 2), 5: (1, 2, 3)}
LEVELS = (0.2, 0.4, 0.6)


def questions(graph: KnowledgeGraph, per_hops: int = 6) -> list[QA]:
    out = []
    for hops in EXPECTED_HIDDEN:
        found = 0
        for start in graph.nodes():
            path = walk(graph, start, hops)
            if path is None:
                continue
            out.append(QA(qa_id=f"qa-{graph.domain}-{hops}-{found}", domain=graph.domain, seed=start,
                          hop_class="1-2" if hops <= 2 else "3+", path=path, path_edges=path_edges(graph, path),
                          question=f"Which entity is reached from {start}?", answer=path[-1]))  # fmt: skip
            found += 1
            if found == per_hops:
                break
    return out


@pytest.fixture(scope="module")
def graphs() -> dict[str, KnowledgeGraph]:
    return {d: read_triples(DEMO / "graphs" / f"{d}.jsonl", d).to_graph() for d in DOMAINS}


@pytest.fixture(scope="module")
def texts() -> dict[str, TextIndex]:
    result = ingest_text_folders(DEMO / "corpus")
    by_domain: dict[str, list[TextChunk]] = {}
    for c in chunks_from_ingest(result, "demo"):
        domain = next(d.domain for d in result.documents if c.chunk_id.startswith(d.doc_id))
        by_domain.setdefault(domain, []).append(c)
    return {d: TextIndex(chunks, HashingEmbedder(), name=d) for d, chunks in by_domain.items()}


def all_pairs_relations(graph: KnowledgeGraph, a: str, b: str) -> set:
    return {edge_id(d) for d in graph.relations_between(a, b)} | {edge_id(d) for d in graph.relations_between(b, a)}


@pytest.mark.parametrize("domain", DOMAINS)
def test_views_hide_exactly_the_configured_share_of_critical_triples(graphs, domain):
    graph = graphs[domain]
    qs = questions(graph)
    assert {q.hops for q in qs} == set(EXPECTED_HIDDEN)
    for qa in qs:
        path_triples = [e.triple() for e in qa.path_edges]
        for level, expected in zip(LEVELS, EXPECTED_HIDDEN[qa.hops]):
            view = make_view(graph, qa.qa_id, qa.path_edges, level)
            assert len(view.facts) == expected, (qa.hops, level)
            assert len({f.triple for f in view.facts}) == expected
            assert all(f.triple in path_triples for f in view.facts)
            # Every relation between each hidden pair, both directions, and nothing else.
            want = set().union(*(all_pairs_relations(graph, f.head, f.tail) for f in view.facts))
            assert view.hidden == want and want
            seen = ViewedGraph(graph, view)
            for f in view.facts:
                assert not seen.has_edge(f.head, f.tail) and not seen.has_edge(f.tail, f.head)
                assert f.tail not in seen.neighbor_names(f.head) and seen.edge(f.head, f.tail) is None
            visible = sum(len(seen.neighbors(n)) for n in graph.nodes())
            total = sum(len(graph.neighbors(n)) for n in graph.nodes())
            # each relation is seen from both of its ends; a relation whose own label states a hidden fact ("Fritz
            # Haber ... ammonia from nitrogen") is dropped too
            stating = {edge_id(d) for n in graph.nodes() for _, d in graph.neighbors(n)
                       if edge_id(d) not in view.hidden and view.states(f"{d.source} {d.relation} {d.target}")}
            assert total - visible == 2 * (len(view.hidden) + len(stating))
            # Critical triples the view keeps are still there.
            kept = [e for e in qa.path_edges if e.triple() not in {f.triple for f in view.facts}]
            assert all(seen.has_edge(e.head, e.tail) for e in kept)


def test_views_are_reproducible_and_differ_between_questions(graphs):
    graph = graphs["cs"]
    qs = [q for q in questions(graph) if q.hops == 5]
    first = [make_view(graph, q.qa_id, q.path_edges, 0.4) for q in qs]
    assert [make_view(graph, q.qa_id, q.path_edges, 0.4) for q in qs] == first
    moved = [make_view(graph, q.qa_id + "x", q.path_edges, 0.4).facts for q in qs]
    assert moved != [v.facts for v in first]
    assert first[0].view_id == f"{qs[0].qa_id}@ikg-40"


def test_the_graph_itself_is_not_copied_or_changed(graphs):
    graph = graphs["history"]
    qa = questions(graph)[3]
    before = graph.n_edges
    view = make_view(graph, qa.qa_id, qa.path_edges, 0.6)
    seen = ViewedGraph(graph, view)
    assert graph.n_edges == before and seen.n_edges == before  # entity-level facts pass through
    assert seen.entity(qa.path[0]) == graph.entity(qa.path[0]) and seen.lookup(qa.path[0].upper()) == qa.path[0]
    assert graph.has_edge(view.facts[0].head, view.facts[0].tail)


@pytest.mark.parametrize("level", [0, 1, 1.0, -0.2, 1.5, True, "0.4", None])
def test_a_level_outside_zero_one_is_one_clear_error(graphs, level):
    qa = questions(graphs["cs"])[0]
    with pytest.raises(IKGError, match="IKG level must be a share between 0 and 1") as info:
        make_view(graphs["cs"], qa.qa_id, qa.path_edges, level)
    assert isinstance(info.value, InputError) and "\n" not in str(info.value)


def test_a_path_with_no_triple_and_an_unknown_view_are_clear_errors(graphs):
    with pytest.raises(IKGError, match="question qa-x: its gold path has no triple to hide"):
        make_view(graphs["cs"], "qa-x", [], 0.4)
    registry = ViewRegistry([make_view(graphs["cs"], "qa-y", questions(graphs["cs"])[0].path_edges, 0.4)])
    assert "qa-y@ikg-40" in registry and len(registry) == 1
    with pytest.raises(IKGError, match="unknown IKG view 'qa-z@ikg-40'"):
        registry.get("qa-z@ikg-40")


def _independently_answerable(graph: KnowledgeGraph, qa: QA, variant: IKGVariant, text: TextIndex) -> bool:
    """The kept variant re-checked without the module's helpers: each hidden fact's head-and-relation query has a
    top-3 passage naming both of its entities, or networkx finds a path to the answer in the graph minus the
    hidden relations."""
    by_text = True
    for f in variant.view.facts:
        hits = text.search(f"{f.head} {f.relation}", 3)
        keys = [name_key(h.chunk.title + "\n" + h.chunk.text) for h in hits]
        by_text &= any(name_key(f.head) in k and name_key(f.tail) in k for k in keys)
    g = nx.Graph()
    g.add_nodes_from(graph.nodes())
    for n in graph.nodes():
        for nb, d in graph.neighbors(n):
            if edge_id(d) not in variant.view.hidden:
                g.add_edge(n, nb)
    try:
        by_path = nx.shortest_path_length(g, qa.path[0], qa.path[-1]) <= qa.hops + 1
    except nx.NetworkXNoPath:
        by_path = False
    return by_text if variant.answerable_by == "text" else by_path


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_kept_variant_is_answerable_by_text_or_another_path(graphs, texts, domain):
    graph, text = graphs[domain], texts[domain]
    qs = questions(graph)
    build = build_variants(graph, qs, text, levels=LEVELS)
    assert build.notice is None
    assert len(build.variants) + len(build.rejects) == len(qs) * len(LEVELS)
    by_id = {q.qa_id: q for q in qs}
    assert build.variants
    for v in build.variants:
        assert _independently_answerable(graph, by_id[v.qa.qa_id], v, text), v.view.view_id
    for r in build.rejects:
        assert (r.reason == "not_answerable" and "is not in the top 3 text results" in r.detail) or (
            r.reason == "same_as_lower_level" and r.detail.startswith("hides the same facts as IKG-"))
    # a level that would hide what a lower one hides gives no second variant: every kept variant differs
    views = [(v.qa.qa_id, v.view.hidden) for v in build.variants]
    assert len(views) == len(set(views))
    same = [r for r in build.rejects if r.reason == "same_as_lower_level"]
    assert same  # the 1-hop questions hide their one fact at every level
    for r in same:
        q = by_id[r.qa_id]
        lower = float(r.detail.removeprefix("hides the same facts as IKG-").rstrip("%")) / 100
        assert lower < r.level
        assert make_view(graph, q.qa_id, q.path_edges, lower).hidden == make_view(graph, q.qa_id, q.path_edges,
                                                                                    r.level).hidden


def test_a_fact_the_text_lacks_with_no_other_path_is_rejected_with_its_reason(graphs, texts):
    graph = graphs["cs"]
    # A 1-hop question to a leaf: hiding its one triple cuts the answer off, and the cooking corpus never says it.
    leaf = next(n for n in graph.nodes() if len(graph.neighbor_names(n)) == 1)
    path = [graph.neighbor_names(leaf)[0], leaf]
    leaf_qa = QA(qa_id="qa-leaf", domain="cs", seed=path[0], hop_class="1-2", path=path,
                 path_edges=path_edges(graph, path), question="q?", answer=leaf)
    view = make_view(graph, leaf_qa.qa_id, leaf_qa.path_edges, 0.2)
    out = check_answerable(graph, leaf_qa, view, texts["cooking"])
    assert isinstance(out, IKGReject) and out.reason == "not_answerable"
    assert repr(view.facts[0].triple) in out.detail and "no other path of at most 2 hops" in out.detail


def test_a_graph_without_text_gets_no_variants_and_the_build_says_so(graphs):
    build = build_variants(graphs["cs"], questions(graphs["cs"]), None)
    assert build.variants == () and build.rejects == ()
    assert build.notice and build.notice.startswith("cs: no corpus chunks and no text collection given")
    with pytest.raises(IKGError):
        build_variants(graphs["cs"], questions(graphs["cs"]), None, levels=[0.4, 2])


def test_provenance_decides_which_chunk_holds_a_fact():
    rel = Relation(domain="cs", source="Ada Lovelace", target="Analytical Engine", relation="wrote notes on",
                   source_chunk_ids=["doc-1-chunk-000"], directed=True)
    extra = Relation(domain="cs", source="Analytical Engine", target="Charles Babbage", relation="designed by",
                     source_chunk_ids=["doc-2-chunk-000"], directed=True)
    graph = KnowledgeGraph.from_records("cs", [], [rel, extra], add_missing_entities=True)
    qa = QA(qa_id="qa-ada", domain="cs", seed="Ada Lovelace", hop_class="1-2", path=["Ada Lovelace", "Analytical Engine"],
            path_edges=path_edges(graph, ["Ada Lovelace", "Analytical Engine"]), question="q?", answer="Analytical Engine")
    view = make_view(graph, qa.qa_id, qa.path_edges, 0.5)
    # The source chunk states the fact; a decoy names both entities but is not where the fact came from.
    source = TextChunk("doc-1-chunk-000", "Ada Lovelace wrote notes on the Analytical Engine in 1843.", "Ada")
    decoy = TextChunk("doc-9-chunk-000", "Ada Lovelace and the Analytical Engine appear in many novels.", "Decoy")
    kept = check_answerable(graph, qa, view, TextIndex([source, decoy], None), k=3)
    assert isinstance(kept, IKGVariant) and kept.evidence == {"Ada Lovelace wrote notes on": "doc-1-chunk-000"}
    missed = check_answerable(graph, qa, view, TextIndex([decoy], None), k=3)
    assert isinstance(missed, IKGReject)
    # The source words the fact without the engine's name: an agent reading it cannot learn the answer.
    unnamed = TextChunk("doc-1-chunk-000", "Ada Lovelace wrote notes on Babbage's machine in 1843.", "Ada")
    assert isinstance(check_answerable(graph, qa, view, TextIndex([unnamed, decoy], None), k=3), IKGReject)


def test_a_fact_deep_in_a_long_chunk_is_shown_and_found():
    """The reply shows the sentences around the one the query matches, so a fact past the first screenful of a
    chunk is read by the agent, and the check judges that same text (a fact cut off the reply is not found)."""
    filler = " ".join(f"Sentence {i} tells of weather and harvest in the valley." for i in range(40))
    text = f"{filler} Ada Lovelace wrote notes on the Analytical Engine in 1843. {filler}"
    shown = passage_window("Ada Lovelace wrote notes on", text, 600)
    assert "Ada Lovelace wrote notes on the Analytical Engine" in shown
    assert shown.startswith("...") and shown.endswith("...") and len(shown) <= 600
    assert passage_window("zzz", "Short text.", 600) == "Short text."
    rel = Relation(domain="cs", source="Ada Lovelace", target="Analytical Engine", relation="wrote notes on",
                   source_chunk_ids=["doc-1-chunk-000"], directed=True)
    graph = KnowledgeGraph.from_records("cs", [], [rel], add_missing_entities=True)
    qa = QA(qa_id="qa-ada", domain="cs", seed="Ada Lovelace", hop_class="1-2", path=["Ada Lovelace", "Analytical Engine"],
            path_edges=path_edges(graph, ["Ada Lovelace", "Analytical Engine"]), question="q?", answer="Analytical Engine")
    view = make_view(graph, qa.qa_id, qa.path_edges, 0.5)
    kept = check_answerable(graph, qa, view, TextIndex([TextChunk("doc-1-chunk-000", text, "Ada")], None), k=3)
    assert isinstance(kept, IKGVariant)
    rendered = render_text_hits(view.facts[0].query(), TextIndex([TextChunk("doc-1-chunk-000", text, "Ada")],
                                                                 None).search(view.facts[0].query(), 1))
    assert "the Analytical Engine in 1843" in rendered


def test_no_information_reply_and_export_fields(graphs):
    assert render_no_information("Alan Turing", "born  in", ["worked at"]) == (
        'No information in the KG about Alan Turing by "born in". Its closest relations: worked at. '
        "If none of these fits, use the web_search tool.")
    qa = questions(graphs["cs"])[2]
    view = make_view(graphs["cs"], qa.qa_id, qa.path_edges, 0.4)
    assert setting_fields(None) == {"kg_setting": "complete", "ikg_level": None, "hidden_triples": [], "view_id": None}
    fields = setting_fields(view)
    assert fields["kg_setting"] == "incomplete" and fields["ikg_level"] == 0.4
    assert fields["hidden_triples"] == [list(f.triple) for f in view.facts] and fields["view_id"] == view.view_id
    row = {"reward_model": {"style": "rule", "ground_truth": '{"answers":["x"],"gold_paths":[],"graph_type":"cs"}'},
           "extra_info": {"qa_id": qa.qa_id, "tools_kwargs": {"neighbor_search": {"create_kwargs": {"graph_type": "cs"}}}}}
    out = with_setting(row, view)
    assert '"kg_setting":"incomplete"' in out["reward_model"]["ground_truth"]
    assert out["extra_info"]["tools_kwargs"]["neighbor_search"]["create_kwargs"] == {"graph_type": "cs",
                                                                                    "view_id": view.view_id}
    assert row["extra_info"]["tools_kwargs"]["neighbor_search"]["create_kwargs"] == {"graph_type": "cs"}  # not changed


def test_asking_for_a_hidden_relation_gets_no_information_not_a_looser_match():
    """A hidden relation is the one asked for: the view answers "No information", not the neighbours of another
    relation whose keyword the asked words contain; the complete graph's looser reading is unchanged."""
    from tasks.env.ikg import viewed_environment
    from tasks.env.tools import ToolEnvironment

    drove = Relation(domain="history", source="Dust Bowl", target="California", relation="drove migration to",
                     directed=True)
    portrays = Relation(domain="history", source="The Grapes of Wrath", target="Dust Bowl", relation="portrays",
                        keywords=["migration", "novel"], directed=True)
    graph = KnowledgeGraph.from_records("history", [], [drove, portrays], add_missing_entities=True)
    env = ToolEnvironment.from_graphs([graph], HashingEmbedder(), tools=["neighbor_search", "node_info"])
    ask = {"entity": "Dust Bowl", "relation": "drove migration to", "graph_type": "history"}
    assert "California" in env.call("neighbor_search", ask).text
    # The complete graph reads "migration" loosely as the keyword of "portrays".
    loose = env.call("neighbor_search", {**ask, "relation": "migration"})
    assert loose.ok and "The Grapes of Wrath" in loose.text
    qa = QA(qa_id="qa-dust", domain="history", seed="Dust Bowl", hop_class="1-2", path=["Dust Bowl", "California"],
            path_edges=path_edges(graph, ["Dust Bowl", "California"]), question="q?", answer="California")
    view = make_view(graph, qa.qa_id, qa.path_edges, 0.2)  # a 1-hop path: its one fact hidden
    seen = viewed_environment(env, view, "history")
    for relation in ("drove migration to", "drove migration"):
        obs = seen.call("neighbor_search", {**ask, "relation": relation})
        assert not obs.ok and obs.text.startswith("No information in the KG about Dust Bowl"), obs.text
        assert "The Grapes of Wrath" not in obs.text.split("Its closest relations")[0]
    # A relation (or keyword) the view still shows is answered as before.
    for relation in ("portrays", "migration"):
        shown = seen.call("neighbor_search", {**ask, "relation": relation})
        assert shown.ok and "The Grapes of Wrath" in shown.text
