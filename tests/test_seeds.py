"""Seed eligibility (capped ball sizes), seeded sampling, per-domain quotas, and the rendered seed context."""

from __future__ import annotations

import random
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from schemas.graph import Relation
from tasks.qa.context import ball_distances, render_subgraph, truncate_text
from tasks.graph.importers import read_triples
from tasks.graph.kg import KnowledgeGraph
from tasks.qa.seeds import BallScanner, SeedConfig, domain_quotas, eligible_seeds, no_seed_reason, sample_seeds
from tasks.corpus.text import count_tokens

DEMO = Path(__file__).resolve().parent.parent / "flows" / "demo" / "graphs"


@pytest.fixture(scope="module")
def cs() -> KnowledgeGraph:
    return read_triples(DEMO / "cs.jsonl", "cs").to_graph()


def undirected_kg(edges: list[tuple[int, int]]) -> KnowledgeGraph:
    pairs = sorted({(min(a, b), max(a, b)) for a, b in edges if a != b})
    rels = [Relation(domain="t", source=f"v{a}", target=f"v{b}", keywords=["k"]) for a, b in pairs]
    return KnowledgeGraph.from_records("t", [], rels, directed=False, add_missing_entities=True)


def star(leaves: int) -> KnowledgeGraph:
    return KnowledgeGraph.from_triples("t", [("hub", "has", f"leaf{i:05d}") for i in range(leaves)])


# -- capped balls -------------------------------------------------------------------------------------------------------
edge_lists = st.lists(st.tuples(st.integers(0, 24), st.integers(0, 24)), min_size=1, max_size=60)


@settings(max_examples=80, deadline=None)
@given(edges=edge_lists, depth=st.integers(0, 4), cap=st.integers(1, 30))
def test_scanner_equals_full_bfs_under_the_cap(edges, depth, cap):
    g = nx.Graph()
    g.add_edges_from((f"v{a}", f"v{b}") for a, b in edges if a != b)
    if g.number_of_nodes() == 0:
        return
    kg = undirected_kg(edges)
    scanner = BallScanner.from_graph(kg)
    for node in kg.nodes():
        full = len(nx.single_source_shortest_path_length(g, node, cutoff=depth))
        got = scanner.size(node, depth, cap)
        assert got == (full if full <= cap else cap + 1)
        assert got == kg.ball_size(node, depth, cap)


def test_directed_graph_balls_are_undirected_by_default():
    kg = KnowledgeGraph.from_triples("t", [("a", "r", "b"), ("c", "r", "b"), ("c", "r", "d")])
    sc = BallScanner.from_graph(kg)
    assert sc.size("a", 3, 100) == 4  # a -> b <- c -> d, walked either way
    directed = BallScanner.from_graph(kg, undirected=False)
    assert directed.size("a", 3, 100) == 2  # only a -> b


class _Exploding(tuple):
    """An adjacency entry that must never be read: the hub test proves the search stops on its length."""

    def __iter__(self):
        raise AssertionError("the hub's neighbour list was read")


def test_hub_stops_the_search_without_reading_its_neighbours():
    kg = star(1000)
    sc = BallScanner.from_graph(kg)
    hub = sc.index["hub"]
    sc.adj[hub] = _Exploding(sc.adj[hub])
    assert sc.size("leaf00001", 3, 400) == 401
    assert sc.size("hub", 3, 400) == 401
    assert sc.size("leaf00001", 0, 400) == 1


def test_overflow_is_cap_plus_one_and_bounded_by_the_cap():
    kg = star(50)
    sc = BallScanner.from_graph(kg)
    assert sc.size("leaf00000", 2, 10) == 11
    assert sc.size("leaf00000", 2, 51) == 51
    assert sc.size("leaf00000", 1, 10) == 2


def test_scanner_rejects_bad_input():
    with pytest.raises(ValueError, match="not a key"):
        BallScanner({"a": ["b"]})
    repeated = BallScanner({"a": ["b", "b", "b"], "b": ["a"]})
    assert repeated.size("a", 1, 2) == 2  # repeats neither count towards the ball nor trip the hub test
    sc = BallScanner({"a": ["b"], "b": ["a"]})
    with pytest.raises(ValueError, match="cap"):
        sc.scan(3, 0)
    with pytest.raises(ValueError, match="depth"):
        sc.scan(-1, 5)


# -- the array scan against a plain breadth-first search ------------------------------------------------------------
def reference_size(adjacency: dict, node, depth: int, cap: int) -> int:
    """Level-by-level BFS, then the cap: what every scan must return. (It stops after a level that passed the
    cap, since a ball only grows.)"""
    seen = {node}
    frontier = [node]
    for _ in range(depth):
        if len(seen) > cap:
            break
        frontier = [v for u in frontier for v in adjacency[u] if v not in seen and not seen.add(v)]
    return len(seen) if len(seen) <= cap else cap + 1


def random_adjacency(seed: int, n: int, *, directed: bool, hubs: int = 2, hub_edges: int | None = None,
                     loops: int = 3, isolated: int = 3, extra: float = 0.6) -> dict[int, list[int]]:
    """A random tree (preferential, so hubs appear) plus random edges, a few hubs joined to many nodes,
    self-loops, repeated neighbours and isolated nodes; symmetric unless ``directed``."""
    rng = random.Random(seed)
    adjacency: dict[int, list[int]] = {v: [] for v in range(n + isolated)}
    ends = [0]
    edges = []
    for v in range(1, n):
        u = rng.choice(ends)
        edges.append((u, v))
        ends += (u, v)
    edges += [(rng.randrange(n), rng.randrange(n)) for _ in range(int(extra * n))]
    for h in rng.sample(range(n), min(hubs, n)):
        edges += [(h, rng.randrange(n)) for _ in range(rng.randrange((hub_edges or n // 2) + 1))]
    edges += [(v, v) for v in rng.sample(range(n), min(loops, n))]
    edges += edges[: n // 10]  # repeats
    for a, b in edges:
        if directed and rng.random() < 0.5:
            a, b = b, a
        adjacency[a].append(b)
        if not directed:
            adjacency[b].append(a)
    names = list(adjacency)
    rng.shuffle(names)  # ids follow the mapping's order, not the node values
    return {v: adjacency[v] for v in names}


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("n", [1, 2, 7, 60, 400])
def test_scan_equals_reference_bfs_on_random_graphs(n, directed):
    adjacency = random_adjacency(n * 7 + directed, n, directed=directed)
    scanner = BallScanner(adjacency)
    nodes = list(adjacency)
    for depth in range(5):
        for cap in (1, 2, 3, 5, 17, 64, 400):
            want = [(v, reference_size(adjacency, v, depth, cap)) for v in nodes]
            assert scanner.scan(depth, cap) == want, (depth, cap)
            assert [scanner.size(v, depth, cap) for v in nodes] == [s for _, s in want]


@pytest.mark.parametrize("directed", [False, True])
def test_scan_over_many_batches_equals_reference_bfs(directed):
    # Thousands of starts: several batches of 16 words of 64 starts, with capped starts cut mid-search.
    adjacency = random_adjacency(11 + directed, 4000, directed=directed, hubs=8, hub_edges=200, extra=0.3)
    scanner = BallScanner(adjacency)
    for depth, cap in ((3, 400), (3, 40), (2, 400), (4, 150)):
        sizes = scanner.sizes(depth, cap)
        want = [reference_size(adjacency, v, depth, cap) for v in scanner.names]
        assert sizes.tolist() == want, (depth, cap)
        assert {s for s in want} & {1, cap + 1}  # both isolated nodes and capped balls occur


def test_scan_of_a_subset_keeps_order_and_repeats():
    adjacency = random_adjacency(5, 500, directed=False)
    scanner = BallScanner(adjacency)
    rng = random.Random(3)
    subset = rng.sample(list(adjacency), 80)
    subset += subset[:10]  # repeats come back once per mention
    got = scanner.scan(3, 50, subset)
    assert got == [(v, reference_size(adjacency, v, 3, 50)) for v in subset]
    assert scanner.scan(3, 50, []) == []
    assert scanner.sizes(3, 50, np.array([], dtype=np.int64)).tolist() == []
    with pytest.raises(KeyError):
        scanner.scan(3, 50, [subset[0], "no such node"])
    assert BallScanner({}).scan(3, 50) == []


@settings(max_examples=60, deadline=None)
@given(
    edges=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=120),
    extra_nodes=st.integers(0, 3),
    directed=st.booleans(),
    depth=st.integers(0, 4),
    cap=st.integers(1, 45),
)
def test_scan_equals_reference_bfs_property(edges, extra_nodes, directed, depth, cap):
    adjacency: dict[int, list[int]] = {v: [] for v in range(41 + extra_nodes)}
    for a, b in edges:
        adjacency[a].append(b)
        if not directed:
            adjacency[b].append(a)
    scanner = BallScanner(adjacency)
    assert scanner.scan(depth, cap) == [(v, reference_size(adjacency, v, depth, cap)) for v in adjacency]


def test_adjacency_csr_is_neighbor_names_as_ids():
    rels = [
        Relation(domain="t", source=a, target=b, keywords=["k"], relation=r, directed=d)
        for a, b, r, d in [("a", "b", "x", True), ("b", "a", "x", True), ("a", "a", "loop", True),
                           ("c", "b", "y", False), ("d", "c", "z", True), ("c", "d", "w", True)]
    ]  # fmt: skip
    directed = KnowledgeGraph.from_records("t", [], rels, directed=True, add_missing_entities=True)
    plain = undirected_kg([(0, 1), (1, 2), (2, 2), (3, 1), (1, 0)])
    for kg in (directed, plain, star(5)):
        for undirected in (True, False):
            names, indptr, indices = kg.adjacency_csr(undirected=undirected)
            assert names == kg.nodes()
            for i, name in enumerate(names):
                ids = indices[indptr[i] : indptr[i + 1]].tolist()
                assert [names[j] for j in ids] == kg.neighbor_names(name, undirected=undirected)


def test_eligible_seeds_on_directed_graph_match_reference():
    adjacency = random_adjacency(21, 600, directed=True)
    rels = [Relation(domain="t", source=f"v{a}", target=f"v{b}", keywords=["k"], directed=True)
            for a, nbrs in adjacency.items() for b in set(nbrs)]  # fmt: skip
    kg = KnowledgeGraph.from_records("t", [], rels, directed=True, add_missing_entities=True)
    for undirected in (True, False):
        walk = {n: kg.neighbor_names(n, undirected=undirected) for n in kg.nodes()}
        for depth, lo, hi in ((3, 20, 400), (2, 3, 30), (1, 1, 2)):
            want = [(n, s) for n in kg.nodes() if lo <= (s := reference_size(walk, n, depth, hi)) <= hi]
            got = eligible_seeds(kg, depth=depth, min_ball=lo, max_ball=hi, undirected=undirected)
            assert got == want, (undirected, depth)
            some = kg.nodes()[::7]
            assert eligible_seeds(kg, depth=depth, min_ball=lo, max_ball=hi, undirected=undirected, nodes=some) == [
                t for t in want if t[0] in set(some)
            ]


# -- eligibility ----------------------------------------------------------------------------------------------------------
def test_eligible_seeds_match_a_brute_force_scan(cs):
    got = eligible_seeds(cs, depth=3, min_ball=20, max_ball=60)
    g = nx.Graph()
    for r in cs.relations():
        g.add_edge(r.source, r.target)
    want = []
    for n in cs.nodes():
        size = len(nx.single_source_shortest_path_length(g, n, cutoff=3)) if n in g else 1
        if 20 <= size <= 60:
            want.append((n, size))
    assert got == want
    assert got == sorted(got)


def test_eligible_seeds_keep_large_keeps_balls_past_the_bound(cs):
    """keep_large: a node whose ball passes max_ball is kept, its size given as max_ball + 1 (networkx's ball is the
    reference); below min_ball stays out either way."""
    g = nx.Graph()
    for r in cs.relations():
        g.add_edge(r.source, r.target)
    sizes = {n: len(nx.single_source_shortest_path_length(g, n, cutoff=3)) if n in g else 1 for n in cs.nodes()}
    got = eligible_seeds(cs, depth=3, min_ball=20, max_ball=60, keep_large=True)
    assert got == [(n, s if s <= 60 else 61) for n, s in sorted(sizes.items()) if s >= 20]
    assert any(s == 61 for _, s in got) and any(s <= 60 for _, s in got)  # both kinds occur on this graph
    some = cs.nodes()[::5]
    assert eligible_seeds(cs, depth=3, min_ball=20, max_ball=60, keep_large=True, nodes=some) == [
        t for t in got if t[0] in set(some)]


def test_eligible_seeds_defaults_on_demo_graph(cs):
    el = eligible_seeds(cs)
    assert el and all(20 <= s <= 400 for _, s in el)
    assert eligible_seeds(cs, nodes=[el[0][0], el[0][0]]) == [el[0]]
    with pytest.raises(KeyError, match="no entity"):
        eligible_seeds(cs, nodes=["No Such Node"])


def test_seed_config_checks_its_bounds():
    with pytest.raises(ValidationError, match="min_ball"):
        SeedConfig(min_ball=500, max_ball=400)
    with pytest.raises(ValidationError):
        SeedConfig(depth=0)
    with pytest.raises(ValueError, match="must not exceed"):
        eligible_seeds(star(3), min_ball=10, max_ball=5)


def fourteen_nodes() -> KnowledgeGraph:
    """14 nodes: a hub with 7 leaves, a 5-hop chain to a second hub with one leaf. Its largest depth-3 ball has 13."""
    chain = ["Hub", "Link 1", "Link 2", "Link 3", "Link 4", "Second hub"]
    return KnowledgeGraph.from_triples("tiny", [*zip(chain, ["next"] * 5, chain[1:]),
                                               *(("Hub", "has", f"Leaf {i}") for i in range(7)),
                                               ("Second hub", "has", "Last leaf")])  # fmt: skip


def test_no_seed_reason_names_the_minimum_and_the_largest_ball():
    kg = fourteen_nodes()
    assert kg.n_nodes == 14 and eligible_seeds(kg) == []
    assert no_seed_reason(kg, domain="tiny") == (
        "0 of 14 nodes qualify as seeds in domain tiny: the largest depth-3 neighbourhood has 13 nodes, below the "
        "minimum of 20 (set --min-ball 13 or lower, or seeds.min_ball in the configuration)")
    # the bound it names admits seeds
    assert [s for _, s in eligible_seeds(kg, min_ball=13)] == [13]
    assert no_seed_reason(kg, min_ball=13) is None


def test_no_seed_reason_names_the_maximum_when_every_ball_overflows():
    clique = KnowledgeGraph.from_triples("dense", [(f"c{i}", "knows", f"c{j}") for i in range(30) for j in range(i)])
    assert eligible_seeds(clique, min_ball=2, max_ball=10) == []
    assert no_seed_reason(clique, domain="dense", min_ball=2, max_ball=10) == (
        "0 of 30 nodes qualify as seeds in domain dense: every depth-3 neighbourhood has more than the maximum of 10 "
        "nodes, the smallest has 30 (set --max-ball 30 or higher, or seeds.max_ball in the configuration)")
    assert eligible_seeds(clique, min_ball=2, max_ball=30)
    # past 64 x max_ball the smallest ball is not measured: the sentence says "more than"
    big = star(700)
    assert no_seed_reason(big, min_ball=1, max_ball=10).endswith(
        "every depth-3 neighbourhood has more than the maximum of 10 nodes, the smallest has more than 640 "
        "(set --max-ball above 640, or seeds.max_ball in the configuration)")


def test_no_seed_reason_names_both_limits_when_balls_fall_on_either_side():
    kg = KnowledgeGraph.from_triples("mix", [*(("hub", "has", f"leaf{i}") for i in range(50)), ("a", "b", "c")])
    why = no_seed_reason(kg, domain="mix", min_ball=5, max_ball=20)
    assert why == ("0 of 53 nodes qualify as seeds in domain mix: 2 depth-3 neighbourhoods are below the minimum of 5 "
                   "nodes (the largest of them has 2) and 51 above the maximum of 20 (the smallest of them has 51) "
                   "(set --min-ball 2 or lower or --max-ball 51 or higher, or seeds.min_ball / seeds.max_ball in the "
                   "configuration)")
    assert no_seed_reason(KnowledgeGraph.from_triples("e", []), domain="e") == (
        "0 nodes qualify as seeds in domain e: the graph is empty")


def test_the_configured_ball_bounds_are_the_seed_defaults():
    from schemas.config import load_settings

    defaults = load_settings().seeds
    assert (defaults.min_ball, defaults.max_ball) == (SeedConfig().min_ball, SeedConfig().max_ball) == (20, 400)


# -- sampling ------------------------------------------------------------------------------------------------------------
ELIGIBLE = [(f"node{i:03d}", 20 + i) for i in range(100)]


def test_sample_seeds_is_deterministic_and_order_free():
    a = sample_seeds(ELIGIBLE, 10, seed=3, domain="cs", snapshot_id="cs-1")
    b = sample_seeds(list(reversed(ELIGIBLE)), 10, seed=3, domain="cs", snapshot_id="cs-1")
    assert a == b
    assert [s.sample_rank for s in a] == list(range(10))
    assert {s.node for s in a} != {s.node for s in sample_seeds(ELIGIBLE, 10, seed=4, domain="cs")}
    assert all(s.ball_size == 20 + int(s.node[4:]) and s.depth == 3 and s.sampling_seed == 3 for s in a)


def test_sample_seeds_rank_of_a_node_ignores_the_others():
    full = [s.node for s in sample_seeds(ELIGIBLE, 100, seed=9, domain="cs")]
    half = ELIGIBLE[::2]
    sub = [s.node for s in sample_seeds(half, 100, seed=9, domain="cs")]
    assert sub == [n for n in full if n in {h for h, _ in half}]


def test_sample_seeds_exclude_and_bounds():
    first = sample_seeds(ELIGIBLE, 5, seed=1, domain="cs")
    later = sample_seeds(ELIGIBLE, 5, seed=1, domain="cs", exclude=[s.node for s in first])
    assert not {s.node for s in first} & {s.node for s in later}
    assert len(sample_seeds(ELIGIBLE[:3], 10, seed=1, domain="cs")) == 3
    assert sample_seeds(ELIGIBLE, 0, seed=1, domain="cs") == []
    with pytest.raises(ValueError):
        sample_seeds(ELIGIBLE, -1, seed=1, domain="cs")


# -- quotas ----------------------------------------------------------------------------------------------------------------
def test_domain_quotas_examples():
    assert domain_quotas(90, {"a": 100, "b": 100, "c": 100}) == {"a": 30, "b": 30, "c": 30}
    assert domain_quotas(100, {"a": 10, "b": 500, "c": 60}) == {"a": 10, "b": 45, "c": 45}
    assert domain_quotas(1000, {"a": 10, "b": 20}) == {"a": 10, "b": 20}
    assert domain_quotas(10, {"a": 100, "b": 100}, weights={"a": 3, "b": 1}) == {"a": 8, "b": 2}
    assert domain_quotas(4, {"a": 5, "b": 5, "c": 5}, min_per_domain=2) == {"a": 2, "b": 2, "c": 0}
    with pytest.raises(ValueError):
        domain_quotas(-1, {"a": 1})


@settings(max_examples=150, deadline=None)
@given(
    total=st.integers(0, 500),
    available=st.dictionaries(st.sampled_from("abcdefgh"), st.integers(0, 200), min_size=1),
    minimum=st.integers(0, 20),
    weighted=st.booleans(),
)
def test_domain_quotas_properties(total, available, minimum, weighted):
    weights = {d: (i % 3) + 0.5 for i, d in enumerate(sorted(available))} if weighted else None
    q = domain_quotas(total, available, weights=weights, min_per_domain=minimum)
    assert set(q) == set(available)
    assert sum(q.values()) == min(total, sum(available.values()))
    assert all(0 <= q[d] <= available[d] for d in q)
    assert q == domain_quotas(total, dict(reversed(list(available.items()))), weights=weights, min_per_domain=minimum)


# -- rendered context ------------------------------------------------------------------------------------------------------
def test_render_subgraph_lines_nodes_and_order(cs):
    seed = "Alan Turing"
    ctx = render_subgraph(cs, seed, depth=2, token_budget=100_000, max_description_chars=60)
    lines = ctx.text.split("\n")
    assert not ctx.truncated and ctx.n_relations == ctx.n_relations_total == len(lines)
    assert ctx.nodes[0] == seed
    dist = ball_distances(cs, seed, 2)
    assert set(ctx.nodes) == set(dist)  # every ball node has some relation inside the ball here
    assert [ctx.distances[n] for n in ctx.nodes] == sorted(ctx.distances[n] for n in ctx.nodes)
    assert "Alan Turing - King's College, Cambridge: studied at, education, mathematics, Cambridge; " in ctx.text
    for line in lines:
        head, _, body = line.partition(": ")
        a, _, b = head.partition(" - ")
        assert a in dist and b in dist
        assert len(body.partition("; ")[2]) <= 60
    nears = []
    for line in lines:
        a, _, b = line.partition(": ")[0].partition(" - ")
        nears.append(min(dist[a], dist[b]))
    assert nears == sorted(nears)
    assert render_subgraph(cs, seed, depth=2, token_budget=100_000, max_description_chars=60) == ctx


def test_render_subgraph_budget(cs):
    full = render_subgraph(cs, "Alan Turing", depth=3, token_budget=1_000_000)
    small = render_subgraph(cs, "Alan Turing", depth=3, token_budget=300)
    assert small.truncated and small.tokens <= 300 and small.tokens == count_tokens(small.text)
    assert full.text.startswith(small.text)
    rendered = {n for line in small.text.split("\n") for n in line.partition(": ")[0].split(" - ")}
    assert set(small.nodes) == rendered | {"Alan Turing"}
    empty = render_subgraph(cs, "Alan Turing", token_budget=0)
    assert empty.text == "" and empty.nodes == ("Alan Turing",) and empty.truncated
    with pytest.raises(KeyError):
        render_subgraph(cs, "Nobody")


def test_render_uses_source_first_for_directed_and_nearer_end_for_undirected():
    directed = KnowledgeGraph.from_triples("t", [("b", "likes", "a")])
    assert render_subgraph(directed, "a").text == "b - a: likes; b likes a"
    undirected = KnowledgeGraph.from_triples("t", [("b", "likes", "a")], directed=False)
    assert render_subgraph(undirected, "b").text == "b - a: likes; b likes a"
    assert render_subgraph(undirected, "a").text == "a - b: likes; b likes a"


def test_truncate_text():
    assert truncate_text("short\n text", 50) == "short text"
    cut = truncate_text("one two three four five six seven", 16)
    assert len(cut) <= 16 and cut.endswith("…") and cut.startswith("one two")
    assert truncate_text("abcdefghij", 5) == "abcd…"
    assert truncate_text("anything", 0) == ""
