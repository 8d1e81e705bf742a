"""KG tools and the graph index: exact rendered text on a hand-built graph, name lookup, embedding search,
the on-disk embedding cache, and every way a call can go wrong."""

from __future__ import annotations

import inspect
from typing import Literal

import numpy as np
import pytest
from pydantic import Field

from schemas.graph import Entity, Relation
from schemas.tools import TOOL_SPECS, ToolContractError, ToolSpec, _Args, tool_function, tool_schema
from tasks.graph.kg import KnowledgeGraph
from tasks.env.index import GraphIndex, HashingEmbedder, entity_text
from tasks.env.tools import RenderLimits, ToolEnvironment, clip

LONG = (
    "Ada Lovelace's notes on the Analytical Engine, published in 1843, which contain what is often called the "
    "first computer program: a method for calculating Bernoulli numbers. " * 4
).strip()


def cs_graph() -> KnowledgeGraph:
    def ent(n: str, t: str, d: str) -> Entity:
        return Entity(domain="cs", name=n, type=t, description=d)

    def rel(s: str, r: str, t: str, kw: list[str], d: str) -> Relation:
        return Relation(domain="cs", source=s, target=t, relation=r, keywords=kw, description=d, directed=True)

    return KnowledgeGraph.from_records(
        "cs",
        [
            ent("Ada Lovelace", "person", "English mathematician who wrote the first published algorithm for a machine."),
            ent("Charles Babbage", "person", "English polymath who designed the Analytical Engine."),
            ent("Analytical Engine", "machine", "A proposed mechanical general-purpose computer."),
            ent("Note G", "artifact", LONG),
            ent("London", "place", "Capital of England."),
        ],
        [
            rel("Ada Lovelace", "collaborated with", "Charles Babbage", ["collaboration", "computing"],
                "Ada Lovelace worked with Charles Babbage on the Analytical Engine."),
            rel("Charles Babbage", "designed", "Analytical Engine", ["design"], "Charles Babbage designed the Analytical Engine."),
            rel("Ada Lovelace", "wrote", "Note G", ["algorithm", "publication"], "Ada Lovelace wrote Note G."),
            rel("Note G", "describes", "Analytical Engine", [], "Note G describes a program for the Analytical Engine."),
            rel("Ada Lovelace", "born in", "London", ["birthplace"], ""),
            rel("Charles Babbage", "born in", "London", ["birthplace"], ""),
        ],
    )  # fmt: skip


def farm_graph() -> KnowledgeGraph:
    """LightRAG-shaped: undirected, no relation labels, keywords and descriptions only."""

    def ent(n: str, d: str) -> Entity:
        return Entity(domain="agriculture", name=n, description=d)

    def rel(s: str, t: str, kw: list[str], d: str) -> Relation:
        return Relation(domain="agriculture", source=s, target=t, keywords=kw, description=d)

    return KnowledgeGraph.from_records(
        "agriculture",
        [
            ent("Rational Grazing", "A systematic approach to pasture and livestock management.\nDeveloped by André Voisin."),
            ent("André Voisin", "French farmer and scientist."),
            ent("Pays de Caux", "Region of Normandy in north-west France."),
            ent("Continuous Grazing", "Traditional practice of leaving livestock on one pasture all season."),
        ],
        [
            rel("Rational Grazing", "André Voisin", ["developer", "grazing method"], "André Voisin developed Rational Grazing."),
            rel("Rational Grazing", "Pays de Caux", ["region", "application"], "Rational Grazing was tried in the Pays de Caux."),
            rel("Pays de Caux", "Continuous Grazing", ["traditional practice", "region"],
                "Continuous Grazing is the traditional practice in the Pays de Caux."),
        ],
    )  # fmt: skip


class CountingEmbedder:
    """HashingEmbedder that counts the texts it embeds (to prove the caches work)."""

    def __init__(self, dim: int = 64) -> None:
        self._inner = HashingEmbedder(dim)
        self.dim = dim
        self.name = "counting/test embedder"
        self.texts = 0

    def embed(self, texts):
        self.texts += len(texts)
        return self._inner.embed(texts)

    async def aembed(self, texts):
        return self.embed(texts)


def make_env(**kw) -> ToolEnvironment:
    emb = HashingEmbedder()
    return ToolEnvironment({"cs": GraphIndex(cs_graph(), emb), "agriculture": GraphIndex(farm_graph(), emb)}, **kw)


@pytest.fixture(scope="module")
def env() -> ToolEnvironment:
    return make_env()


def call_text(env: ToolEnvironment, name: str, **args) -> str:
    obs = env.call(name, args)
    assert obs.ok, obs
    return obs.text


# -- rendering snapshots ------------------------------------------------------------------------------------------


def test_entity_matcher_snapshot_exact_name_first(env):
    assert call_text(env, "entity_matcher", node_name="ada lovelace", graph_type="cs") == (
        'Entities matching "ada lovelace" in the cs graph, best first:\n'
        "1. Ada Lovelace [person]: English mathematician who wrote the first published algorithm for a machine.\n"
        "2. Note G [artifact]: Ada Lovelace's notes on the Analytical Engine, published in 1843, which contain what is "
        "often called the first computer program: a method for calculating...\n"
        "3. Charles Babbage [person]: English polymath who designed the Analytical Engine.\n"
        "4. London [place]: Capital of England.\n"
        "5. Analytical Engine [machine]: A proposed mechanical general-purpose computer."
    )


def test_node_info_snapshot_directed_labelled(env):
    assert call_text(env, "node_info", node_name="Ada Lovelace", graph_type="cs") == (
        "Entity: Ada Lovelace\n"
        "Type: person\n"
        "Description: English mathematician who wrote the first published algorithm for a machine.\n"
        "Neighbours (3 relations with 3 entities):\n"
        "1. Charles Babbage | Ada Lovelace -[collaborated with]-> Charles Babbage | keywords: collaboration, computing"
        " | Ada Lovelace worked with Charles Babbage on the Analytical Engine.\n"
        "2. London | Ada Lovelace -[born in]-> London | keywords: birthplace\n"
        "3. Note G | Ada Lovelace -[wrote]-> Note G | keywords: algorithm, publication | Ada Lovelace wrote Note G."
    )


def test_node_info_snapshot_lightrag_shape(env):
    # Untyped entity: no Type line; unlabelled undirected relations: no arrow; multi-line description flattened.
    assert call_text(env, "node_info", node_name="Rational Grazing", graph_type="agriculture") == (
        "Entity: Rational Grazing\n"
        "Description: A systematic approach to pasture and livestock management. Developed by André Voisin.\n"
        "Neighbours (2 relations with 2 entities):\n"
        "1. André Voisin | keywords: developer, grazing method | André Voisin developed Rational Grazing.\n"
        "2. Pays de Caux | keywords: region, application | Rational Grazing was tried in the Pays de Caux."
    )
    assert "Neighbours (1 relation with 1 entity):" in call_text(
        env, "node_info", node_name="Continuous Grazing", graph_type="agriculture"
    )


def test_node_info_caps_neighbours_and_truncates_descriptions():
    small = make_env(limits=RenderLimits(neighbors=2, description_chars=80))
    text = call_text(small, "node_info", node_name="Ada Lovelace", graph_type="cs")
    assert text.endswith("2. London | Ada Lovelace -[born in]-> London | keywords: birthplace\n... and 1 more")
    assert call_text(small, "node_info", node_name="Note G", graph_type="cs").splitlines()[2] == (
        "Description: Ada Lovelace's notes on the Analytical Engine, published in 1843, which..."
    )


def test_relation_and_neighbor_search_snapshots(env):
    assert call_text(env, "relation_search", entity="Ada Lovelace", relation="born in", graph_type="cs") == (
        'Relations of Ada Lovelace closest to "born in", best first (3 of 3):\n'
        "1. born in (1 neighbour)\n"
        "2. collaborated with (1 neighbour)\n"
        "3. wrote (1 neighbour)"
    )
    # Unlabelled relations are named by their keywords; "region" reaches two neighbours.
    assert call_text(env, "relation_search", entity="Pays de Caux", relation="region", graph_type="agriculture").splitlines()[:2] == [
        'Relations of Pays de Caux closest to "region", best first (3 of 3):',
        "1. region (2 neighbours)",
    ]
    assert call_text(env, "neighbor_search", entity="Ada Lovelace", relation="born in", graph_type="cs") == (
        'Neighbours of Ada Lovelace by "born in" (1):\n1. London | Ada Lovelace -[born in]-> London | keywords: birthplace'
    )
    # A keyword names a relation too, and a partial phrase still finds it.
    assert "1. Note G |" in call_text(env, "neighbor_search", entity="Ada Lovelace", relation="algorithm", graph_type="cs")
    assert "1. London |" in call_text(env, "neighbor_search", entity="Ada Lovelace", relation="born", graph_type="cs")


def test_relation_search_embeds_only_the_most_connected_names(monkeypatch):
    from tasks.env import tools as kg_tools

    monkeypatch.setattr(kg_tools, "MAX_RANKED_RELATIONS", 1)
    env = make_env()
    lines = call_text(env, "relation_search", entity="Ada Lovelace", relation="wrote", graph_type="cs").splitlines()
    # The exact match still leads; the names left unembedded follow by reach, then name; none is lost.
    assert lines == [
        'Relations of Ada Lovelace closest to "wrote", best first (3 of 3):',
        "1. wrote (1 neighbour)",
        "2. born in (1 neighbour)",
        "3. collaborated with (1 neighbour)",
    ]


def test_neighbor_search_without_match_lists_relations(env):
    obs = env.call("neighbor_search", {"entity": "Ada Lovelace", "relation": "married to", "graph_type": "cs"})
    assert not obs.ok and obs.error_kind == "no_match"
    assert obs.text.startswith('No relation of Ada Lovelace matches "married to". Its closest relations: ')
    assert all(r in obs.text for r in ("collaborated with", "born in", "wrote"))


def test_search_triples_snapshot(env):
    assert call_text(env, "search", entity="Ada Lovelace", graph_type="cs") == (
        "Triples about Ada Lovelace (3):\n"
        "(Ada Lovelace, collaborated with, Charles Babbage)\n"
        "(Ada Lovelace, born in, London)\n"
        "(Ada Lovelace, wrote, Note G)"
    )
    # Directed relations keep their direction; undirected ones put the asked entity first.
    assert "(Note G, describes, Analytical Engine)" in call_text(env, "search", entity="Analytical Engine", graph_type="cs")
    assert call_text(env, "search", entity="Pays de Caux", graph_type="agriculture") == (
        "Triples about Pays de Caux (2):\n"
        "(Pays de Caux, traditional practice / region, Continuous Grazing)\n"
        "(Pays de Caux, region / application, Rational Grazing)"
    )
    capped = make_env(limits=RenderLimits(triples=1))
    assert call_text(capped, "search", entity="Ada Lovelace", graph_type="cs").endswith("\n... and 2 more")


def test_rendering_is_stable_across_environments(env):
    again = make_env()
    for name, args in [
        ("entity_matcher", {"node_name": "Babbage", "graph_type": "cs"}),
        ("node_info", {"node_name": "Pays de Caux", "graph_type": "agriculture"}),
        ("relation_search", {"entity": "Charles Babbage", "relation": "built", "graph_type": "cs"}),
    ]:
        assert env.call(name, args) == again.call(name, args)


# -- names, misspellings, and errors --------------------------------------------------------------------------------


def test_normalised_names_resolve_to_the_entity(env):
    text = call_text(env, "node_info", node_name="  ADA   LOVELACE ", graph_type="cs")
    assert text.startswith("Entity: Ada Lovelace\n")
    assert call_text(env, "node_info", node_name="andré VOISIN", graph_type="agriculture").startswith("Entity: André Voisin\n")


def test_misspelled_name_shows_closest_matches(env):
    obs = env.call("node_info", {"node_name": "Charls Babage", "graph_type": "cs"})
    assert not obs.ok and obs.error_kind == "unknown_entity"
    assert obs.text.startswith('No entity named "Charls Babage" in the cs graph. Closest entities: Charles Babbage; ')
    assert obs.text.endswith("Call again with one of these exact names.")
    matched = call_text(env, "entity_matcher", node_name="Charls Babage", graph_type="cs")
    assert matched.splitlines()[1].startswith("1. Charles Babbage [person]")
    for tool in ("relation_search", "neighbor_search"):
        obs = env.call(tool, {"entity": "Ada Lovelance", "relation": "wrote", "graph_type": "cs"})
        assert obs.error_kind == "unknown_entity" and "Closest entities: Ada Lovelace;" in obs.text


@pytest.mark.parametrize(
    ("name", "args", "kind", "fragment"),
    [
        ("node_info", {"node_name": "Ada Lovelace", "graph_type": "bio"}, "unknown_graph",
         'Unknown graph_type "bio". Available graph types: agriculture, cs.'),
        ("node_info", {"node": "Ada Lovelace", "graph_type": "cs"}, "bad_arguments",
         "Expected node_info(node_name, graph_type)."),
        ("node_info", {"node_name": "   ", "graph_type": "cs"}, "bad_arguments", "node_name"),
        ("node_info", {"node_name": 42, "graph_type": "cs"}, "bad_arguments", "node_name"),
        ("search", {"entity": "Ada Lovelace"}, "bad_arguments", "search needs graph_type here"),
        ("fly", {}, "unknown_tool", 'Unknown tool "fly". Available tools: entity_matcher, node_info,'),
    ],
)  # fmt: skip
def test_bad_calls_become_observations(env, name, args, kind, fragment):
    obs = env.call(name, args)
    assert not obs.ok and obs.error_kind == kind
    assert fragment in obs.text


def test_non_mapping_arguments_are_an_observation(env):
    obs = env.call("node_info", ["Ada Lovelace", "cs"])  # type: ignore[arg-type]
    assert obs.error_kind == "bad_arguments"


def test_single_domain_fills_optional_graph_type():
    single = ToolEnvironment({"cs": GraphIndex(cs_graph(), HashingEmbedder())})
    assert single.default_domain == "cs"
    assert call_text(single, "search", entity="London").startswith("Triples about London (2):")
    # Omne-R1 tools still require it: their schema says so.
    assert single.call("node_info", {"node_name": "London"}).error_kind == "bad_arguments"


def test_tool_subset_and_constructor_checks():
    idx = GraphIndex(cs_graph(), HashingEmbedder())
    sub = ToolEnvironment({"cs": idx}, tools=["entity_matcher", "node_info"])
    assert sub.call("search", {"entity": "London"}).error_kind == "unknown_tool"
    assert [s["function"]["name"] for s in sub.schemas()] == ["entity_matcher", "node_info"]
    with pytest.raises(ValueError, match="unknown tools"):
        ToolEnvironment({"cs": idx}, tools=["teleport"])
    with pytest.raises(ValueError, match="registered under"):
        ToolEnvironment({"bio": idx})
    with pytest.raises(ValueError, match="default_domain"):
        ToolEnvironment({"cs": idx}, default_domain="bio")


def test_internal_errors_are_observations_not_exceptions(env, monkeypatch):
    def boom(_args):
        raise RuntimeError("bug")

    broken = make_env()
    monkeypatch.setitem(broken._handlers, "search", boom)
    obs = broken.call("search", {"entity": "London", "graph_type": "cs"})
    assert obs.error_kind == "internal" and not obs.ok


def test_call_many_matches_call(env):
    calls = [
        ("entity_matcher", {"node_name": "babbage", "graph_type": "cs"}),
        ("entity_matcher", {"node_name": "grazing", "graph_type": "agriculture"}),
        ("node_info", {"node_name": "London", "graph_type": "cs"}),
        ("entity_matcher", {"node_name": "Note G", "graph_type": "cs"}),
        ("entity_matcher", {"node_name": "x", "graph_type": "nope"}),
        ("teleport", {}),
    ]
    assert env.call_many(calls) == [env.call(n, a) for n, a in calls]


# -- schemas ----------------------------------------------------------------------------------------------------------


def test_tool_schemas_are_the_tool_contract():
    s = tool_schema("entity_matcher")
    assert s["type"] == "function" and s["function"]["name"] == "entity_matcher"
    assert s["function"]["description"] == TOOL_SPECS["entity_matcher"].description
    params = s["function"]["parameters"]
    # The shape every path keeps as written: verl's property model (type, description, enum) and transformers'
    # get_json_schema (type, then description), in that key order; no minLength or additionalProperties.
    assert list(params) == ["type", "properties", "required"] and params["required"] == ["node_name", "graph_type"]
    assert all(list(p) == ["type", "description"] for p in params["properties"].values())
    rel = tool_schema("relation_search")["function"]["parameters"]
    assert rel["required"] == ["entity", "relation"]
    assert rel["properties"]["graph_type"] == {
        "type": "string",
        "description": "Which knowledge graph to query (the domain named in the instructions).",
    }
    # Fresh dicts each time: a caller's edits never leak into the next schema.
    s["function"]["name"] = "changed"
    assert tool_schema("entity_matcher")["function"]["name"] == "entity_matcher"
    assert TOOL_SPECS["neighbor_search"].signature() == "neighbor_search(entity, relation, graph_type=None)"


def test_tool_function_is_written_from_the_contract():
    calls = []
    fn = tool_function("relation_search", lambda name, args: calls.append((name, args)) or "seen")
    sig = inspect.signature(fn)
    assert [(p.name, p.kind, p.annotation, p.default) for p in sig.parameters.values()] == [
        ("entity", inspect.Parameter.KEYWORD_ONLY, str, inspect.Parameter.empty),
        ("relation", inspect.Parameter.KEYWORD_ONLY, str, inspect.Parameter.empty),
        ("graph_type", inspect.Parameter.KEYWORD_ONLY, str, None),
    ]
    assert sig.return_annotation is inspect.Signature.empty and "return" not in fn.__annotations__
    assert fn.__name__ == "relation_search" and "Returns:" not in (fn.__doc__ or "")
    assert inspect.getdoc(fn).splitlines()[0] == TOOL_SPECS["relation_search"].description
    assert "    relation: The relation you are looking for, in your own words, e.g. 'born in'." in fn.__doc__
    assert fn(entity="Alan Turing", relation="born in", graph_type=None) == "seen"
    assert calls == [("relation_search", {"entity": "Alan Turing", "relation": "born in"})]


def test_the_contract_refuses_an_argument_other_paths_would_render_differently():
    class Choice(_Args):
        mode: Literal["a", "b"] = Field(description="Pick one.")

    spec = ToolSpec(name="pick", family="omne", args=Choice, description="Pick.")
    TOOL_SPECS["pick"] = spec
    try:
        with pytest.raises(ToolContractError, match="'pick' argument 'mode' must be a described plain"):
            tool_schema("pick")
    finally:
        del TOOL_SPECS["pick"]


def test_clip():
    assert clip("a  b\n c", 10) == "a b c"
    assert clip("one two three four", 12) == "one two..."
    assert len(clip("x" * 500, 50)) == 50


# -- the index --------------------------------------------------------------------------------------------------------


def test_name_matches_come_first_then_embedding():
    idx = GraphIndex(cs_graph(), HashingEmbedder())
    matches = idx.match("note g", 3)
    assert [(m.name, m.how) for m in matches][0] == ("Note G", "normalized")
    assert matches[1].how == "embedding" and len(matches) == 3
    assert idx.match("Note G", 1)[0].how == "exact"
    assert [m.name for m in idx.match("London", 10)][0] == "London" and len(idx.match("London", 10)) == 5
    assert idx.match("London", 0) == []


def test_match_many_equals_match():
    idx = GraphIndex(cs_graph(), HashingEmbedder(), chunk_size=2)
    queries = ["Babbage", "ada lovelace", "engine", "Note G", "capital city", "Babbage"]
    assert idx.match_many(queries, 3) == [idx.match(q, 3) for q in queries]


def test_top_k_matches_brute_force():
    rng = np.random.default_rng(7)
    names = [f"e{i:03d}" for i in range(300)]
    g = KnowledgeGraph.from_records("cs", [Entity(domain="cs", name=n) for n in names], [])
    idx = GraphIndex(g, HashingEmbedder(32), chunk_size=16)
    queries = rng.standard_normal((40, 32)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    got_idx, got_scores = idx.top_k(queries, 7)
    scores = queries @ idx.embeddings.T
    for q in range(40):
        want = sorted(range(300), key=lambda j: (-scores[q, j], j))[:7]
        assert list(got_idx[q]) == want
        assert np.allclose(got_scores[q], scores[q, want])
    all_idx, _ = idx.top_k(queries[:1], 1000)  # k beyond the graph: every row, sorted
    assert sorted(all_idx[0]) == list(range(300))


def test_empty_graph_matches_nothing():
    idx = GraphIndex(KnowledgeGraph.from_records("cs", [], []), HashingEmbedder())
    assert idx.match("anything", 5) == []
    assert idx.embeddings.shape == (0, 384)


def test_embeddings_cached_on_disk_per_snapshot_and_embedder(tmp_path):
    emb = CountingEmbedder()
    first = GraphIndex(cs_graph(), emb, cache_dir=tmp_path)
    matrix = first.embeddings
    assert emb.texts == 5
    path = first.cache_path()
    assert path is not None and path.exists()
    assert path.name.startswith("cs-adhoc__counting-test-embedder-64__")

    second = GraphIndex(cs_graph(), emb, cache_dir=tmp_path)
    assert np.array_equal(second.embeddings, matrix) and emb.texts == 5  # loaded, not recomputed

    # A content-addressed snapshot id names the file; another embedder gets its own file.
    g = cs_graph()
    snap = KnowledgeGraph.from_records("cs", g.entities(), g.relations(), directed=True, snapshot_id="cs-0123456789abcdef")
    assert GraphIndex(snap, emb, cache_dir=tmp_path).cache_path().name.startswith("cs-0123456789abcdef__")
    other = GraphIndex(cs_graph(), HashingEmbedder(), cache_dir=tmp_path)
    assert other.cache_path() != path and other.embeddings.shape == (5, 384)


def test_wrong_shape_cache_file_is_rebuilt(tmp_path):
    emb = CountingEmbedder()
    idx = GraphIndex(cs_graph(), emb, cache_dir=tmp_path)
    path = idx.cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, np.zeros((2, 64), dtype=np.float32))
    assert idx.embeddings.shape == (5, 64) and emb.texts == 5
    assert np.load(path).shape == (5, 64)  # the bad file was replaced
    path.write_bytes(b"not a numpy file")
    fresh = GraphIndex(cs_graph(), emb, cache_dir=tmp_path)
    assert fresh.embeddings.shape == (5, 64)


def test_query_embeddings_are_cached():
    emb = CountingEmbedder()
    idx = GraphIndex(cs_graph(), emb, query_cache_size=2)
    idx.warm()
    base = emb.texts
    idx.match("babbage")
    idx.match("babbage")
    assert emb.texts == base + 1
    idx.match_many(["a", "b", "a"])
    assert emb.texts == base + 3  # "a" embedded once within the batch
    idx.match("babbage")  # evicted by the size-2 cache
    assert emb.texts == base + 4


def test_hashing_embedder_is_deterministic_and_unit_norm():
    a = HashingEmbedder(128).embed(["Alan Turing", "", "Ünïcödé ‘quotes’"])
    b = HashingEmbedder(128).embed(["Alan Turing", "", "Ünïcödé ‘quotes’"])
    assert a.dtype == np.float32 and np.array_equal(a, b)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0)
    vecs = HashingEmbedder().embed(["Alan Turing", "alan turnig", "Bernoulli numbers"])
    assert vecs[0] @ vecs[1] > 0.5 > vecs[0] @ vecs[2]
    with pytest.raises(ValueError):
        HashingEmbedder(4)


def test_entity_text():
    assert entity_text("X", "") == "X"
    assert entity_text("X", "a\n  b") == "X: a b"
    assert entity_text("X", "abcdef", max_chars=3) == "X: abc"
