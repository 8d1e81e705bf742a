"""KnowledgeGraph (tasks/graph/kg.py) and the snapshot store (tasks/graph/store.py)."""

from __future__ import annotations

import random

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.graph import Entity, EntityMerge, NearDuplicate, Relation
from tasks.graph.store import (
    GraphRecordsError,
    merge_duplicate_relations,
    records_from_networkx,
    snapshot_content_hash,
    split_keywords,
    split_sep,
)
from tasks.graph.kg import Ball, KnowledgeGraph, normalize_name
from warehouse.db import Warehouse
from warehouse import graphs as graph_store
from warehouse.graphs import (
    SnapshotNotFoundError,
    current_snapshot,
    list_snapshots,
    load_graph,
    read_snapshot,
    write_near_duplicates,
    write_snapshot,
)


def rel(s: str, t: str, label: str = "", *, directed: bool = False, weight: float = 1.0, **kw) -> Relation:
    return Relation(domain="cs", source=s, target=t, relation=label, directed=directed, weight=weight, **kw)


def ent(name: str, **kw) -> Entity:
    return Entity(domain="cs", name=name, **kw)


@pytest.fixture
def mixed() -> KnowledgeGraph:
    """Directed graph with parallel relations both ways between A and B and one undirected relation C - D."""
    relations = [
        rel("A", "B", "advises", directed=True),
        rel("A", "B", "cites", directed=True, weight=3.0),
        rel("B", "A", "funds", directed=True),
        rel("B", "C", "employs", directed=True),
        rel("C", "D", "", directed=False, description="C and D share a lab"),
    ]
    return KnowledgeGraph.from_records("cs", [], relations, add_missing_entities=True)


# -- names --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("Neural Network", "neural network"),
        ("  neural\t\nnetwork  ", "neural network"),
        ("“Neural Network”.", "neural network"),
        ("Kant’s Critique", "kant's critique"),
        ("GPT—4", "gpt-4"),
        ("C#", "c#"),
        ("C++", "c++"),
        ("Queen (band)", "queen (band)"),
        ("**Alice**", "alice"),
        ("Straße", "strasse"),
        ("ＡＢＣ", "abc"),
        ("...", ""),
    ],
)
def test_normalize_name_examples(raw: str, key: str) -> None:
    assert normalize_name(raw) == key


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=40))
def test_normalize_name_is_idempotent(s: str) -> None:
    once = normalize_name(s)
    assert normalize_name(once) == once
    assert once == once.strip()
    assert "  " not in once


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(["Alan Turing", "Turing machine", "On Computable Numbers"]),
    st.sampled_from(["upper", "lower", "quote", "space", "dot"]),
)
def test_lookup_finds_variants(name: str, how: str) -> None:
    kg = KnowledgeGraph.from_triples(
        "cs", [("Alan Turing", "proposed", "Turing machine"), ("Alan Turing", "wrote", "On Computable Numbers")]
    )
    variant = {
        "upper": name.upper(),
        "lower": name.lower(),
        "quote": f"“{name}”",
        "space": "  " + name.replace(" ", "   ") + "\n",
        "dot": name + ".",
    }[how]
    assert kg.lookup(variant) == name


def test_lookup_prefers_exact_then_best_connected() -> None:
    kg = KnowledgeGraph.from_triples("cs", [("apple", "r", "x"), ("Apple", "r", "y"), ("Apple", "r", "z")])
    assert kg.lookup("apple") == "apple"  # exact name wins
    assert kg.lookup("APPLE") == "Apple"  # else the one with more neighbours
    assert kg.lookup_all("aPPle") == ["Apple", "apple"]
    assert kg.lookup("pear") is None


# -- invariants ----------------------------------------------------------------------------------------------------
def test_invariants_are_enforced() -> None:
    with pytest.raises(GraphRecordsError, match="duplicate entity"):
        KnowledgeGraph("cs", [ent("A"), ent("A")], [], directed=False)
    with pytest.raises(GraphRecordsError, match="not entities"):
        KnowledgeGraph("cs", [ent("A")], [rel("A", "B")], directed=False)
    with pytest.raises(GraphRecordsError, match="directed relation"):
        KnowledgeGraph("cs", [ent("A"), ent("B")], [rel("A", "B", directed=True)], directed=False)
    with pytest.raises(GraphRecordsError, match="domain"):
        KnowledgeGraph("bio", [ent("A")], [], directed=False)
    with pytest.raises(GraphRecordsError, match="duplicate relation"):
        KnowledgeGraph("cs", [ent("A"), ent("B")], [rel("A", "B", "x"), rel("B", "A", "x")], directed=False)


def test_entity_error_suggests_lookup() -> None:
    kg = KnowledgeGraph.from_triples("cs", [("Alan Turing", "wrote", "Paper")])
    assert kg.entity("Alan Turing").type == "UNKNOWN"
    with pytest.raises(KeyError, match="did you mean 'Alan Turing'"):
        kg.entity("alan turing")


# -- edges and neighbours ------------------------------------------------------------------------------------------
def test_parallel_relations_and_directions(mixed: KnowledgeGraph) -> None:
    assert mixed.n_nodes == 4 and mixed.n_edges == 5 and mixed.directed
    between = mixed.relations_between("A", "B")
    assert [(d.relation, d.direction) for d in between] == [("advises", "out"), ("cites", "out"), ("funds", "in")]
    assert [d.relation for d in mixed.relations_between("A", "B", undirected=False)] == ["advises", "cites"]
    assert [(d.relation, d.direction) for d in mixed.relations_between("B", "A")] == [
        ("funds", "out"), ("advises", "in"), ("cites", "in"),
    ]  # fmt: skip
    assert mixed.edge("A", "B").relation == "cites"  # highest weight
    assert mixed.edge("B", "A").relation == "cites"  # weight first, even when it points the other way
    assert mixed.edge("A", "D") is None


def test_has_edge_respects_direction(mixed: KnowledgeGraph) -> None:
    assert mixed.has_edge("B", "C") and mixed.has_edge("C", "B")
    assert mixed.has_edge("B", "C", undirected=False)
    assert not mixed.has_edge("C", "B", undirected=False)
    assert mixed.has_edge("C", "D", undirected=False) and mixed.has_edge("D", "C", undirected=False)
    assert not mixed.has_edge("A", "nobody")


def test_neighbors_are_sorted_and_complete(mixed: KnowledgeGraph) -> None:
    nbrs = mixed.neighbors("B")
    assert [(n, d.relation, d.direction) for n, d in nbrs] == [
        ("A", "funds", "out"), ("A", "advises", "in"), ("A", "cites", "in"), ("C", "employs", "out"),
    ]  # fmt: skip
    assert [n for n, _ in mixed.neighbors("B", undirected=False)] == ["A", "C"]
    assert [n for n, _ in mixed.neighbors("C", undirected=False)] == ["D"]
    assert mixed.neighbor_names("C") == ["B", "D"]
    assert mixed.degree("B") == 2
    assert mixed.neighbors("D")[0][1].description == "C and D share a lab"


def test_undirected_graph_neighbors() -> None:
    kg = KnowledgeGraph.from_records(
        "cs", [], [rel("b", "a"), rel("a", "c"), rel("c", "b", "x")], add_missing_entities=True
    )
    assert not kg.directed
    assert kg.neighbor_names("a") == ["b", "c"]
    assert all(d.direction == "undirected" for _, d in kg.neighbors("c"))
    assert kg.neighbors("a", undirected=False) == kg.neighbors("a")


# -- balls, distances, paths ---------------------------------------------------------------------------------------
def test_bfs_ball_exact_and_early_stop() -> None:
    path = KnowledgeGraph.from_triples("cs", [(f"n{i}", "next", f"n{i + 1}") for i in range(10)])
    assert path.bfs_ball("n5", 2) == {"n3", "n4", "n5", "n6", "n7"}
    assert path.bfs_ball("n5", 2, undirected=False) == {"n5", "n6", "n7"}
    assert path.bfs_ball("n0", 0) == {"n0"}
    ball = path.bfs_ball("n5", 5, limit=4)
    assert isinstance(ball, Ball) and ball.overflow and len(ball) == 5
    assert ball == path.bfs_ball("n5", 5, limit=4)  # deterministic choice
    full = path.bfs_ball("n5", 2, limit=5)
    assert not full.overflow and len(full) == 5
    assert path.ball_size("n5", 2, cap=5) == 5
    assert path.ball_size("n5", 3, cap=5) == 6  # cap + 1 = "more than cap"


def test_bfs_ball_stops_early_on_hubs() -> None:
    """A star with 50k leaves: every leaf's 2-hop ball is the whole graph; with a cap the search stays small."""
    n = 50_000
    kg = KnowledgeGraph.from_records(
        "cs", [], [rel("hub", f"leaf{i:05d}") for i in range(n)], add_missing_entities=True
    )
    # Count the neighbours each search steps over (work, not seconds: a loaded machine cannot change it).
    steps = [0]

    class Counted(tuple):
        def __iter__(self):
            for v in tuple.__iter__(self):
                steps[0] += 1
                yield v

    counted = {u: Counted(vs) for u, vs in kg._adjacency(True).items()}
    kg._adjacency = lambda undirected: counted  # type: ignore[method-assign]
    sizes, work = [], []
    for i in range(0, n, 50):
        steps[0] = 0
        sizes.append(kg.ball_size(f"leaf{i:05d}", 3, cap=400))
        work.append(steps[0])
    del kg._adjacency
    assert sizes == [401] * len(sizes)
    # 1000 searches that each stop after ~400 nodes (the leaf's hub, then the hub's leaves until 401 are seen);
    # without the early stop each would step over the hub's 50k leaves and each leaf's way back.
    assert all(400 <= w <= 400 + 2 for w in work), (min(work), max(work))
    assert kg.bfs_ball("leaf00007", 2).overflow is False
    assert len(kg.bfs_ball("leaf00007", 2)) == n + 1


def _random_graph(seed: int, directed: bool) -> tuple[KnowledgeGraph, nx.Graph]:
    rng = random.Random(seed)
    G = nx.gnm_random_graph(25, 45, seed=seed, directed=directed)
    relations = [rel(f"v{u:02d}", f"v{v:02d}", "r", directed=directed) for u, v in G.edges()]
    kg = KnowledgeGraph.from_records("cs", [ent(f"v{i:02d}") for i in range(25)], relations, directed=directed)
    H = nx.relabel_nodes(G, {i: f"v{i:02d}" for i in G.nodes})
    rng.random()
    return kg, H


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_shortest_path_length_matches_networkx(seed: int, directed: bool) -> None:
    kg, H = _random_graph(seed, directed)
    U = H.to_undirected() if directed else H
    for a in ["v00", "v03", "v11"]:
        for b in kg.nodes():
            for undirected, graph in [(True, U), (False, H)]:
                try:
                    expected = nx.shortest_path_length(graph, a, b)
                except nx.NetworkXNoPath:
                    expected = None
                assert kg.shortest_path_length(a, b, undirected=undirected) == expected
                if expected is not None and expected > 1:
                    assert kg.shortest_path_length(a, b, cutoff=expected - 1, undirected=undirected) is None
                    assert kg.shortest_path_length(a, b, cutoff=expected, undirected=undirected) == expected


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("seed", [4, 5])
def test_simple_paths_match_networkx(seed: int, directed: bool) -> None:
    kg, H = _random_graph(seed, directed)
    U = H.to_undirected() if directed else H
    for a, b in [("v00", "v07"), ("v02", "v19"), ("v05", "v05")]:
        for undirected, graph in [(True, U), (False, H)]:
            got = kg.simple_paths(a, b, 4, max_paths=10_000, time_budget_s=10, undirected=undirected)
            assert got.complete
            expected = {tuple(p) for p in nx.all_simple_paths(graph, a, b, cutoff=4)} if a != b else set()
            assert set(got) == expected
            assert len(got) == len(expected)
            lengths = [len(p) for p in got]
            assert lengths == sorted(lengths)  # shortest first
            for length in set(lengths):
                same = [p for p in got if len(p) == length]
                assert same == sorted(same)  # then by names


def test_simple_paths_bounded_by_count_and_time() -> None:
    names = [f"k{i:02d}" for i in range(14)]
    clique = KnowledgeGraph.from_records(
        "cs", [], [rel(a, b) for i, a in enumerate(names) for b in names[i + 1 :]], add_missing_entities=True
    )
    few = clique.simple_paths("k00", "k01", 5, max_paths=7, time_budget_s=10)
    assert few.stopped == "max_paths" and len(few) == 7
    assert few[0] == ("k00", "k01")
    ticks = iter(range(10**9))  # a clock that advances 1 ms a reading, whatever the machine's load

    def clock() -> float:
        return next(ticks) / 1000

    slow = clique.simple_paths("k00", "k01", 12, max_paths=10**9, time_budget_s=0.2, clock=clock)
    assert slow.stopped == "time_budget"
    assert 0.2 < slow.elapsed_s <= 0.21  # it stopped at the first reading past the budget
    assert len(slow) > 0 and all(p[0] == "k00" and p[-1] == "k01" for p in slow)
    assert all(len(set(p)) == len(p) for p in slow)


def test_paths_and_lengths_on_unreachable() -> None:
    kg = KnowledgeGraph.from_triples("cs", [("a", "r", "b"), ("c", "r", "d")])
    assert kg.shortest_path_length("a", "d") is None
    assert list(kg.simple_paths("a", "d", 5)) == []
    assert kg.simple_paths("b", "a", 2, undirected=False).complete
    assert kg.components() == [["a", "b"], ["c", "d"]]


def test_bad_arguments() -> None:
    kg = KnowledgeGraph.from_triples("cs", [("a", "r", "b")])
    with pytest.raises(ValueError):
        kg.bfs_ball("a", -1)
    with pytest.raises(ValueError):
        kg.simple_paths("a", "b", 0)
    with pytest.raises(KeyError):
        kg.neighbors("zzz")


# -- derived graphs ------------------------------------------------------------------------------------------------
def test_subgraph_components_histogram(mixed: KnowledgeGraph) -> None:
    sub = mixed.subgraph(["A", "B", "D"])
    assert sub.nodes() == ["A", "B", "D"] and sub.n_edges == 3 and sub.directed
    assert sub.components() == [["A", "B"], ["D"]]
    assert mixed.degree_histogram() == [0, 2, 2]
    with pytest.raises(KeyError):
        mixed.subgraph(["A", "nobody"])


def test_networkx_round_trip_keeps_parallel_relations(mixed: KnowledgeGraph) -> None:
    G = mixed.to_networkx()
    assert G.is_multigraph() and G.number_of_edges() == 5
    back = KnowledgeGraph.from_networkx(G, "cs")
    assert back.relations() == mixed.relations()
    assert back.entities() == mixed.entities()


# -- graph_store helpers -------------------------------------------------------------------------------------------
def test_sep_and_keyword_splitting() -> None:
    assert split_sep("c1<SEP>c2<SEP> c1 <SEP><SEP>UNKNOWN", drop=frozenset({"UNKNOWN"})) == ["c1", "c2"]
    assert split_keywords("team, collaboration<SEP>team,lead") == ["team", "collaboration", "lead"]
    assert split_sep(None) == [] and split_keywords(["a, b", "b"]) == ["a", "b"]


def test_records_from_networkx_splits_lightrag_fields() -> None:
    G = nx.Graph()
    G.add_node("Alice", entity_id="Alice", entity_type="person",
               description="An engineer.<SEP>Likes graphs.<SEP>An engineer.",
               source_id="chunk-1<SEP>chunk-2", file_path="a.txt<SEP>b.txt")  # fmt: skip
    G.add_node("Dana", entity_id="Dana", entity_type="UNKNOWN", description="UNKNOWN", source_id="UNKNOWN")
    G.add_edge(
        "Alice",
        "Dana",
        weight=2.0,
        description="Met at work.<SEP>Colleagues.",
        keywords="work, team<SEP>team",
        source_id="chunk-2",
    )
    entities, relations = records_from_networkx(G, "cs")
    alice, dana = entities
    assert alice.description == "An engineer.\nLikes graphs." and alice.source_chunk_ids == ["chunk-1", "chunk-2"]
    assert alice.file_paths == ["a.txt", "b.txt"] and alice.type == "person"
    assert dana.description == "" and dana.source_chunk_ids == []
    (r,) = relations
    assert r.keywords == ["work", "team"] and r.description == "Met at work.\nColleagues." and r.weight == 2.0
    assert r.relation == "" and not r.directed


def test_content_hash_ignores_order_and_orientation() -> None:
    es = [ent("a"), ent("b"), ent("c")]
    rs = [rel("a", "b", "x"), rel("b", "c", "y")]
    h = snapshot_content_hash(es, rs)
    assert snapshot_content_hash(es[::-1], rs[::-1]) == h
    assert snapshot_content_hash(es, [rel("b", "a", "x"), rel("b", "c", "y")]) == h  # undirected: either way
    assert snapshot_content_hash(es, [rel("a", "b", "x"), rel("b", "c", "y", weight=2)]) != h
    assert snapshot_content_hash(es, rs, directed=True) != snapshot_content_hash(es, rs, directed=False)
    weird = [ent("a\x1fb"), ent("c")]  # separator characters in values take the JSON form, still distinct
    assert snapshot_content_hash(weird, []) != snapshot_content_hash([ent("a"), ent("b\x1fc")], [])


def test_merge_duplicate_relations() -> None:
    rs = [
        rel("a", "b", "x", weight=1, keywords=["k1"]),
        rel("b", "a", "x", weight=2, keywords=["k2"]),
        rel("a", "b", "y"),
    ]
    summed = merge_duplicate_relations(rs, weight="sum")
    assert [(r.relation, r.weight, r.keywords) for r in summed] == [("x", 3.0, ["k1", "k2"]), ("y", 1.0, [])]
    assert merge_duplicate_relations(rs, weight="max")[0].weight == 2.0


# -- snapshots in the warehouse ------------------------------------------------------------------------------------
def _write(wh: Warehouse, es: list[Entity], rs: list[Relation], **kw) -> graph_store.GraphSnapshot:
    kw.setdefault("directed", False)
    return write_snapshot(wh, "cs", es, rs, source="triples", build_run_id="run-1", **kw)


def test_snapshot_round_trip_and_load() -> None:
    wh = Warehouse()
    kg = KnowledgeGraph.from_records(
        "cs",
        [ent("a", type="person", description="first\nsecond", source_chunk_ids=["c1", "c2"], file_paths=["f"])],
        [rel("a", "b", "x", keywords=["k"], source_chunk_ids=["c1"]), rel("a", "b", "y"), rel("b", "c")],
        add_missing_entities=True,
    )
    snap = _write(wh, kg.entities(), kg.relations())
    assert snap.snapshot_id == f"cs-{snap.content_hash[:16]}"
    assert (snap.n_nodes, snap.n_edges, snap.source, snap.build_run_id) == (3, 3, "triples", "run-1")
    loaded = load_graph(wh, "cs")
    assert loaded.snapshot_id == snap.snapshot_id
    assert loaded.entities() == kg.entities() and loaded.relations() == kg.relations()
    assert wh.scalar("SELECT count(*) FROM relations WHERE snapshot_id = ?", [snap.snapshot_id]) == 3
    row = wh.query("SELECT source_chunk_ids, keywords FROM relations WHERE relation = 'x'")[0]
    assert row == {"source_chunk_ids": ["c1"], "keywords": ["k"]}


def test_snapshot_writes_are_idempotent_and_track_current() -> None:
    wh = Warehouse()
    es_a, rs_a = [ent("a"), ent("b")], [rel("a", "b", "x")]
    es_b, rs_b = [ent("a"), ent("b"), ent("c")], [rel("a", "b", "x"), rel("b", "c", "y")]
    first = _write(wh, es_a, rs_a)
    again = _write(
        wh,
        es_a[::-1],
        [rel("b", "a", "x")],
    )
    assert again.snapshot_id == first.snapshot_id and again.created_at == first.created_at
    assert wh.scalar("SELECT count(*) FROM graph_snapshots") == 1
    assert wh.scalar("SELECT count(*) FROM entities") == 2 and wh.scalar("SELECT count(*) FROM relations") == 1

    second = _write(wh, es_b, rs_b)
    assert current_snapshot(wh, "cs").snapshot_id == second.snapshot_id
    assert load_graph(wh, "cs").n_nodes == 3
    assert load_graph(wh, "cs", first.snapshot_id).n_nodes == 2

    back = _write(wh, es_a, rs_a)  # the content returns to the first version: that snapshot is current again
    assert back.snapshot_id == first.snapshot_id
    assert current_snapshot(wh, "cs").snapshot_id == first.snapshot_id
    assert [s.snapshot_id for s in list_snapshots(wh, "cs")] == [first.snapshot_id, second.snapshot_id]
    assert wh.scalar("SELECT count(*) FROM graph_snapshots") == 2
    assert wh.scalar("SELECT count(*) FROM entities") == 5


def test_bad_records_write_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    wh = Warehouse()
    with pytest.raises(GraphRecordsError):
        _write(wh, [ent("a")], [rel("a", "zz")])
    assert wh.scalar("SELECT count(*) FROM graph_snapshots") == 0

    def boom(relations):
        raise RuntimeError("disk full")

    monkeypatch.setattr(graph_store, "_relation_table", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        _write(wh, [ent("a"), ent("b")], [rel("a", "b")])
    assert wh.scalar("SELECT count(*) FROM graph_snapshots") == 0
    assert wh.scalar("SELECT count(*) FROM entities") == 0


def test_load_errors_are_clear() -> None:
    wh = Warehouse()
    with pytest.raises(SnapshotNotFoundError, match="no graph snapshot"):
        load_graph(wh, "cs")
    _write(wh, [ent("a")], [])
    with pytest.raises(LookupError, match="nope"):
        read_snapshot(wh, "cs", "nope")


def test_merge_log_and_near_duplicates_are_stored() -> None:
    wh = Warehouse()
    merge = EntityMerge(domain="cs", kept_name="a", merged_name="A", rule="case", run_id="r", from_snapshot_id="cs-0")
    snap = _write(wh, [ent("a")], [], merges=[merge])
    assert wh.query("SELECT kept_name, merged_name, rule, from_snapshot_id, to_snapshot_id FROM entity_merges") == [
        {
            "kept_name": "a",
            "merged_name": "A",
            "rule": "case",
            "from_snapshot_id": "cs-0",
            "to_snapshot_id": snap.snapshot_id,
        }
    ]
    assert write_near_duplicates(wh, [NearDuplicate(domain="cs", a="a", b="b", cosine=0.97)]) == 1
    assert wh.scalar("SELECT cosine FROM entity_near_duplicates") == pytest.approx(0.97)


def test_neighbors_are_worked_out_once_and_handed_out_as_fresh_lists(monkeypatch):
    import tasks.graph.kg as kg_module

    ents = [Entity(domain="d", name=n) for n in "abcde"]
    rels = [Relation(domain="d", source="a", target=t, relation="r", directed=True) for t in "bcd"]
    rels.append(Relation(domain="d", source="e", target="a", relation="s", directed=True))
    g = KnowledgeGraph.from_records("d", ents, rels)
    first = g.neighbors("a")
    assert [(n, d.direction) for n, d in first] == [("b", "out"), ("c", "out"), ("d", "out"), ("e", "in")]
    first.clear()  # the caller's list, not the graph's
    assert len(g.neighbors("a")) == 4 and len(g.neighbors("a", undirected=False)) == 3
    calls = []
    original = KnowledgeGraph.relations_between
    monkeypatch.setattr(KnowledgeGraph, "relations_between", lambda self, *a, **k: calls.append(a) or original(self, *a, **k))
    g.neighbors("a")
    assert calls == []  # answered from the memo
    monkeypatch.setattr(kg_module, "NEIGHBOR_MEMO_SIZE", 2)
    for n in "bcde":
        g.neighbors(n)
    assert len(g._neighbor_memo) <= 2  # bounded: cleared whole when full
    assert [(n, d.direction) for n, d in g.neighbors("a")] == [("b", "out"), ("c", "out"), ("d", "out"), ("e", "in")]
    with pytest.raises(KeyError):
        g.neighbors("zz")


def test_graph_cache_holds_every_domain_of_a_run_and_drops_by_size(monkeypatch):
    """The per-process graph cache is bounded by graph size, not count: twenty small domains asked for in turn
    (what each flow of a factory run does) are built once; past the budget the least recently used go first,
    and the newest graph is kept whatever its size."""
    import tasks.graph.kg as kgmod

    monkeypatch.setattr(kgmod, "_GRAPHS", type(kgmod._GRAPHS)())
    builds: list[str] = []

    def build(i: int) -> KnowledgeGraph:
        builds.append(f"s{i}")
        return KnowledgeGraph.from_triples(f"d{i}", [(f"a{i}", "r", f"b{i}"), (f"b{i}", "r", f"c{i}")])

    for _ in range(2):  # two flows over the same twenty domains
        for i in range(20):
            kgmod.cached_graph(f"s{i}", lambda i=i: build(i))
    assert builds == [f"s{i}" for i in range(20)]  # 5 elements each: all held

    monkeypatch.setattr(kgmod, "GRAPH_CACHE_ELEMENTS", 12)  # room for two of them
    kgmod.cached_graph("s0", lambda: build(0))  # a hit: now the most recent
    kgmod.cached_graph("new", lambda: build(99))
    assert list(kgmod._GRAPHS) == ["s0", "new"]
    monkeypatch.setattr(kgmod, "GRAPH_CACHE_ELEMENTS", 1)
    kgmod.cached_graph("newest", lambda: build(98))
    assert list(kgmod._GRAPHS) == ["newest"]


def test_a_large_cached_graph_is_frozen_out_of_the_collector_and_handed_back_when_dropped(monkeypatch):
    import gc

    import tasks.graph.kg as kgmod

    monkeypatch.setattr(kgmod, "_GRAPHS", type(kgmod._GRAPHS)())
    monkeypatch.setattr(kgmod, "GRAPH_CACHE_ELEMENTS", 6)
    gc.unfreeze()
    try:
        monkeypatch.setattr(kgmod, "FREEZE_MIN_ELEMENTS", 10)
        kgmod.cached_graph("small", lambda: KnowledgeGraph.from_triples("d", [("a", "r", "b"), ("b", "r", "c")]))
        assert gc.get_freeze_count() == 0  # 5 elements: not worth a freeze
        monkeypatch.setattr(kgmod, "FREEZE_MIN_ELEMENTS", 5)
        kgmod.cached_graph("big", lambda: KnowledgeGraph.from_triples("d", [("x", "r", "y"), ("y", "r", "z")]))
        assert list(kgmod._GRAPHS) == ["big"] and gc.get_freeze_count() > 0
        monkeypatch.setattr(kgmod, "FREEZE_MIN_ELEMENTS", 10**9)
        kgmod.cached_graph("next", lambda: KnowledgeGraph.from_triples("d", [("p", "r", "q"), ("q", "r", "s")]))
        assert list(kgmod._GRAPHS) == ["next"] and gc.get_freeze_count() == 0  # "big" dropped: all handed back
    finally:
        gc.unfreeze()
