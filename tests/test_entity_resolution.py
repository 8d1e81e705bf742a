"""Entity resolution (tasks/graph/entity_resolution.py): spelling-variant merges, the merge log, undo, near duplicates."""

from __future__ import annotations

import hashlib
import random
import tracemalloc

import numpy as np
import pytest

from schemas.graph import Entity, Relation
from tasks.graph.entity_resolution import (
    apply_merges,
    merge_rule,
    near_duplicates,
    resolution_key,
    resolve_entities,
    undo_merges,
)
from warehouse.graphs import write_snapshot
from tasks.graph.kg import KnowledgeGraph
from warehouse.db import Warehouse
from warehouse.graphs import load_graph


def ent(name: str, **kw) -> Entity:
    return Entity(domain="cs", name=name, **kw)


def rel(s: str, t: str, label: str = "", **kw) -> Relation:
    return Relation(domain="cs", source=s, target=t, relation=label, **kw)


@pytest.fixture
def variants() -> tuple[list[Entity], list[Relation]]:
    entities = [
        ent("Neural network", type="concept", description="A layered model.", source_chunk_ids=["c1", "c2"]),
        ent("neural networks", description="Plural mention.", source_chunk_ids=["c3"], file_paths=["b.txt"]),
        ent("Neural-Network", description="Hyphenated mention."),
        ent("Deep learning", type="field"),
        ent("Backpropagation", type="algorithm"),
    ]
    relations = [
        rel("Neural network", "Deep learning", weight=2.0, keywords=["basis"], source_chunk_ids=["c1"]),
        rel("neural networks", "Deep learning", weight=1.0, keywords=["core"], source_chunk_ids=["c3"]),
        rel("Backpropagation", "Neural-Network", description="Trains networks."),
        rel("Neural-Network", "neural networks", description="Same thing."),
    ]
    return entities, relations


@pytest.mark.parametrize(
    ("a", "b", "rule"),
    [
        ("Neural network", "neural network", "case"),
        ("Neural network", "Neural   network", "whitespace"),
        ("Neural network", "NEURAL  NETWORK", "whitespace"),
        ("Neural network", "Neural-Network", "punctuation"),
        ("Neural network", "“Neural network”.", "punctuation"),
        ("Neural network", "neural_network", "punctuation"),
        ("Neural network", "neural networks", "plural"),
        ("Policy", "Policies", "plural"),
        ("Box", "Boxes", "plural"),
        ("GPU", "GPUs", "plural"),
        ("Neural network", "Neural net", None),
        ("Analysis", "Analysi", None),
        ("Class", "Clas", None),
        ("Status", "Statu", None),
        ("News", "New", None),
    ],
)
def test_merge_rule(a: str, b: str, rule: str | None) -> None:
    assert merge_rule(a, b) == rule
    assert (resolution_key(a) == resolution_key(b)) == (rule is not None)


def test_resolution_merges_rewires_and_logs(variants) -> None:
    entities, relations = variants
    result = resolve_entities(entities, relations, run_id="run-7", from_snapshot_id="cs-aaaa")
    names = [e.name for e in result.entities]
    assert names == ["Backpropagation", "Deep learning", "Neural network"]
    kept = result.entities[2]
    # Kept: most chunk mentions. Type: first real type by rank. Descriptions and chunk ids united in rank order.
    assert kept.type == "concept"
    assert kept.description == "A layered model.\nPlural mention.\nHyphenated mention."
    assert kept.source_chunk_ids == ["c1", "c2", "c3"] and kept.file_paths == ["b.txt"]
    assert [(m.kept_name, m.merged_name, m.rule, m.run_id, m.from_snapshot_id) for m in result.merges] == [
        ("Neural network", "neural networks", "plural", "run-7", "cs-aaaa"),
        ("Neural network", "Neural-Network", "punctuation", "run-7", "cs-aaaa"),
    ]
    # The two relations to Deep learning became one fact: weights summed, keywords and chunks united.
    to_dl = [r for r in result.relations if "Deep learning" in (r.source, r.target)]
    assert len(to_dl) == 1
    assert (
        to_dl[0].weight == 3.0 and to_dl[0].keywords == ["basis", "core"] and to_dl[0].source_chunk_ids == ["c1", "c3"]
    )
    assert result.relations_folded == 1
    # A relation between two spellings of the same entity is dropped, and shown.
    assert [(r.source, r.target) for r in result.dropped_self_loops] == [("Neural-Network", "neural networks")]
    backprop = next(r for r in result.relations if r.source == "Backpropagation")
    assert backprop.target == "Neural network"
    kg = KnowledgeGraph("cs", result.entities, result.relations, directed=False)
    assert kg.neighbor_names("Neural network") == ["Backpropagation", "Deep learning"]


def test_kept_name_rule_order() -> None:
    # 1. chunk mentions decide.
    r = resolve_entities([ent("ab", source_chunk_ids=["x"]), ent("AB", source_chunk_ids=["x", "y"])], [])
    assert [e.name for e in r.entities] == ["AB"]
    # 2. then degree.
    r = resolve_entities([ent("ab"), ent("AB"), ent("z")], [rel("ab", "z")])
    assert [e.name for e in r.entities] == ["ab", "z"]
    # 3. then description length.
    r = resolve_entities([ent("ab", description="short"), ent("AB", description="a longer one")], [])
    assert [e.name for e in r.entities] == ["AB"]
    # 4. then code-point order.
    r = resolve_entities([ent("ab"), ent("AB")], [])
    assert [e.name for e in r.entities] == ["AB"] and r.merges[0].rule == "case"


def test_resolution_does_not_depend_on_input_order(variants) -> None:
    entities, relations = variants
    base = resolve_entities(entities, relations)
    rng = random.Random(3)
    for _ in range(5):
        es, rs = entities[:], relations[:]
        rng.shuffle(es)
        rng.shuffle(rs)
        again = resolve_entities(es, rs)
        assert again.entities == base.entities
        assert sorted(r.key() for r in again.relations) == sorted(r.key() for r in base.relations)
        assert {(m.kept_name, m.merged_name) for m in again.merges} == {
            (m.kept_name, m.merged_name) for m in base.merges
        }


def test_same_type_only_and_keep_apart() -> None:
    es = [
        ent("Apple", type="organization", source_chunk_ids=["1", "2"]),
        ent("apple", type="food"),
        ent("APPLE", type="food"),
    ]
    assert len(resolve_entities(es, []).entities) == 1
    typed = resolve_entities(es, [], same_type_only=True)
    assert [e.name for e in typed.entities] == ["APPLE", "Apple"]
    apart = resolve_entities(es, [], keep_apart=[("Apple", "apple")])
    assert [e.name for e in apart.entities] == ["Apple", "apple"]
    assert [(m.kept_name, m.merged_name) for m in apart.merges] == [("Apple", "APPLE")]


def test_undo_merges_replays_the_rest_of_the_log(variants) -> None:
    entities, relations = variants
    result = resolve_entities(entities, relations)
    undone = undo_merges(entities, relations, result.merges, undo=[("Neural network", "Neural-Network")])
    assert [e.name for e in undone.entities] == ["Backpropagation", "Deep learning", "Neural network", "Neural-Network"]
    assert [(m.kept_name, m.merged_name) for m in undone.merges] == [("Neural network", "neural networks")]
    assert any(r.source == "Backpropagation" and r.target == "Neural-Network" for r in undone.relations)
    everything = undo_merges(entities, relations, result.merges)
    assert everything.entities == entities and everything.relations == relations
    replay = apply_merges(entities, relations, result.merges)
    assert replay.entities == result.entities and replay.relations == result.relations
    with pytest.raises(ValueError, match="not in the merge log"):
        undo_merges(entities, relations, result.merges, undo=[("a", "b")])


def test_apply_merges_chains_and_cycles() -> None:
    from schemas.graph import EntityMerge

    es = [ent("a"), ent("b"), ent("c")]
    chain = [
        EntityMerge(domain="cs", kept_name="b", merged_name="a", rule="case"),
        EntityMerge(domain="cs", kept_name="c", merged_name="b", rule="case"),
    ]
    assert [e.name for e in apply_merges(es, [], chain).entities] == ["c"]
    cycle = chain + [EntityMerge(domain="cs", kept_name="a", merged_name="c", rule="case")]
    with pytest.raises(ValueError, match="cycle"):
        apply_merges(es, [], cycle)
    with pytest.raises(ValueError, match="not an entity"):
        apply_merges(es, [], [EntityMerge(domain="cs", kept_name="zz", merged_name="a", rule="case")])


def test_merged_snapshot_and_log_land_together(variants) -> None:
    entities, relations = variants
    wh = Warehouse()
    before = write_snapshot(wh, "cs", entities, relations, source="lightrag", build_run_id="build", directed=False)
    result = resolve_entities(entities, relations, run_id="er-1", from_snapshot_id=before.snapshot_id)
    after = write_snapshot(
        wh, "cs", result.entities, result.relations, source="lightrag", build_run_id="er-1", directed=False,
        merges=result.merges,
    )  # fmt: skip
    assert after.snapshot_id != before.snapshot_id
    rows = wh.query("SELECT merged_name, from_snapshot_id, to_snapshot_id FROM entity_merges ORDER BY merged_name")
    assert rows == [
        {"merged_name": "Neural-Network", "from_snapshot_id": before.snapshot_id, "to_snapshot_id": after.snapshot_id},
        {"merged_name": "neural networks", "from_snapshot_id": before.snapshot_id, "to_snapshot_id": after.snapshot_id},
    ]
    assert load_graph(wh, "cs").n_nodes == 3
    # The pre-merge snapshot is intact: undoing is a replay on it.
    pre = load_graph(wh, "cs", before.snapshot_id)
    assert pre.n_nodes == 5


# -- near duplicates -----------------------------------------------------------------------------------------------
def fake_embed(texts: list[str]) -> np.ndarray:
    """Deterministic: names equal after dropping spaces and case share a base vector, plus a tiny per-name offset."""
    out = np.zeros((len(texts), 16), dtype=np.float64)
    for i, t in enumerate(texts):
        base = hashlib.sha256(t.replace(" ", "").lower().encode()).digest()
        jitter = hashlib.sha256(t.encode()).digest()
        out[i] = (
            np.frombuffer(base[:16], dtype=np.uint8) / 255.0
            - 0.5
            + (np.frombuffer(jitter[:16], dtype=np.uint8) / 255.0 - 0.5) * 0.01
        )
    return out


def test_near_duplicates_report() -> None:
    names = ["Neural Network", "neuralnetwork", "Deep learning", "DeepLearning", "Backpropagation", "Graph"]
    pairs = near_duplicates(names, fake_embed, domain="cs", threshold=0.95, snapshot_id="cs-1", run_id="r")
    assert {(p.a, p.b) for p in pairs} == {("Neural Network", "neuralnetwork"), ("Deep learning", "DeepLearning")}
    assert all(p.a < p.b and 0.95 <= p.cosine <= 1.0 and p.snapshot_id == "cs-1" for p in pairs)
    assert [p.cosine for p in pairs] == sorted((p.cosine for p in pairs), reverse=True)
    # Same answer whatever the block and batch sizes, and whatever the input order.
    assert near_duplicates(names[::-1], fake_embed, domain="cs", block_size=1, embed_batch=2) == [
        p.model_copy(update={"snapshot_id": None, "run_id": None}) for p in pairs
    ]


def test_near_duplicates_top_k_zero_rows_and_bad_embeddings() -> None:
    same = lambda texts: np.ones((len(texts), 4))  # noqa: E731 - every name identical
    pairs = near_duplicates([f"n{i}" for i in range(6)], same, domain="cs", top_k=1)
    assert 3 <= len(pairs) <= 6  # each name keeps one best partner
    zeros = lambda texts: np.array([[0.0, 0.0] if t == "z" else [1.0, 0.0] for t in texts])  # noqa: E731
    assert [(p.a, p.b) for p in near_duplicates(["a", "b", "z"], zeros, domain="cs")] == [("a", "b")]
    with pytest.raises(ValueError, match="shape"):
        near_duplicates(["a", "b"], lambda t: np.ones(3), domain="cs")
    with pytest.raises(ValueError, match="NaN"):
        near_duplicates(["a", "b"], lambda t: np.full((len(t), 2), np.nan), domain="cs")
    with pytest.raises(ValueError, match="threshold"):
        near_duplicates(["a", "b"], same, domain="cs", threshold=0)
    assert near_duplicates(["only"], same, domain="cs") == []


def test_near_duplicates_scale_10k() -> None:
    rng = np.random.default_rng(0)
    n, dim = 10_000, 64
    base = rng.normal(size=(n, dim)).astype(np.float32)
    base[1] = base[0] + 0.01  # one planted near-duplicate pair
    lookup = {f"name{i:05d}": base[i] for i in range(n)}
    batches: list[int] = []

    def embed(texts: list[str]) -> np.ndarray:
        batches.append(len(texts))
        return np.stack([lookup[t] for t in texts])

    tracemalloc.start()
    try:
        pairs = near_duplicates(list(lookup), embed, domain="cs")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(p.a, p.b) for p in pairs] == [("name00000", "name00001")]
    assert batches == [4096, 4096, n - 2 * 4096]  # embedded in batches, each name once
    # Compared block by block (1024 rows against all, ~250 MiB with the partition's indexes): less than the whole
    # n x n similarity matrix alone would take in float32 (381 MiB), which is never held.
    assert peak < n * n * 4, f"peak traced memory {peak / 2**20:.0f} MiB"
