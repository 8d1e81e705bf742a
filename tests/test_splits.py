"""Leak-safe splits: no linking entity in two splits, proportions close to the targets, deterministic by seed."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.qa import QA, PathEdge, make_qa_id
from tasks.qa.splits import (
    apply_splits,
    assign_splits,
    check_proportions,
    describe_leaks,
    link_entities,
    shared_entities,
    split_leaks,
    stable_splits,
)


def qa(seed: str, middle: str, answer: str, domain: str = "cs", n: int = 0) -> QA:
    path = [seed, middle, answer]
    question = f"q{n}: from {seed}?"
    return QA(
        qa_id=make_qa_id(domain, None, question, answer, path), domain=domain, seed=seed, hop_class="1-2",
        path=path, path_edges=[PathEdge(head=seed, tail=middle), PathEdge(head=middle, tail=answer)],
        question=question, answer=answer,
    )  # fmt: skip


def independent(n: int) -> list[QA]:
    """n questions sharing nothing: every group is a single question."""
    return [qa(f"s{i}", f"m{i}", f"a{i}", n=i) for i in range(n)]


def test_proportions_on_independent_questions():
    res = assign_splits(independent(1000), seed=1)
    assert res.groups == 1000 and res.largest_group == 1
    assert res.counts == {"train": 800, "validation": 100, "test": 100}
    assert res.max_deviation < 1e-9
    assert "1000 questions in 1000 groups" in res.summary()


def test_linked_questions_stay_together():
    items = [
        qa("Alan Turing", "Bombe", "Enigma machine", n=1),
        qa("Gordon Welchman", "Bombe", "Enigma machine", n=2),  # same answer as 1
        qa("Enigma machine", "Rotor", "Arthur Scherbius", n=3),  # seed = answer of 1 and 2
        qa("Alan Turing", "Princeton University", "Alonzo Church", n=4),  # same seed as 1
        qa("Konrad Zuse", "Z3", "Berlin", n=5),
    ]
    res = assign_splits(items, proportions={"train": 0.5, "test": 0.5})
    group = {res.assignment[q.qa_id] for q in items[:4]}
    assert len(group) == 1 and res.groups == 2 and res.largest_group == 4
    assert not shared_entities(items, res.assignment, "answer+seed")


def test_intermediate_nodes_link_only_in_strict_mode():
    a = qa("s1", "Shared Middle", "a1", n=1)
    b = qa("s2", "Shared Middle", "a2", n=2)
    assert assign_splits([a, b], proportions={"train": 0.5, "test": 0.5}).groups == 2
    strict = assign_splits([a, b], proportions={"train": 0.5, "test": 0.5}, link="all_path_entities")
    assert strict.groups == 1 and len(set(strict.assignment.values())) == 1


def test_names_link_after_normalisation_within_a_domain_only():
    a = qa("s1", "m1", "Alan Turing", n=1)
    b = qa("s2", "m2", "alan  TURING", n=2)
    c = qa("s3", "m3", "Alan Turing", domain="history", n=3)
    assert link_entities(a, "answer+seed") & link_entities(b, "answer+seed")
    res = assign_splits([a, b, c], proportions={"train": 0.5, "test": 0.5})
    assert res.groups == 2


def test_deterministic_order_free_and_seeded():
    items = independent(40) + [qa("hub", f"m{i}", f"x{i}", n=100 + i) for i in range(6)]
    a = assign_splits(items, seed=3)
    assert a.assignment == assign_splits(list(reversed(items)), seed=3).assignment
    assert any(assign_splits(items, seed=s).assignment != a.assignment for s in range(4, 10))


def test_giant_group_is_reported():
    items = [qa("hub", f"hm{i}", f"ha{i}", n=1000 + i) for i in range(70)] + independent(10)
    res = assign_splits(items, seed=0)
    assert res.largest_group == 70 and res.counts["train"] >= 70
    assert res.max_deviation > 0.05  # unreachable targets show up in the report


def test_bad_proportions():
    with pytest.raises(ValueError, match="sum to 1"):
        check_proportions({"train": 0.8, "test": 0.1})
    with pytest.raises(ValueError, match="unknown split"):
        check_proportions({"train": 0.9, "dev": 0.1})
    with pytest.raises(ValueError, match=">= 0"):
        check_proportions({"train": 1.2, "test": -0.2})
    with pytest.raises(ValueError, match="link must be"):
        assign_splits(independent(2), link="answers")  # type: ignore[arg-type]
    dup = independent(1)
    with pytest.raises(ValueError, match="more than once"):
        assign_splits(dup + dup)


def test_apply_splits():
    items = independent(10)
    res = assign_splits(items)
    out = apply_splits(items, res)
    assert [q.split for q in out] == [res.assignment[q.qa_id] for q in items]
    assert all(q.split is None for q in items)


names = st.sampled_from([f"e{i}" for i in range(30)])


@settings(max_examples=120, deadline=None)
@given(
    triples=st.lists(st.tuples(names, names, names), min_size=1, max_size=60),
    link=st.sampled_from(["answer+seed", "all_path_entities"]),
    seed=st.integers(0, 5),
    shares=st.sampled_from([(0.8, 0.1, 0.1), (0.6, 0.2, 0.2), (1.0, 0.0, 0.0), (0.5, 0.5, 0.0)]),
)
def test_no_linking_entity_crosses_splits(triples, link, seed, shares):
    items = list({q.qa_id: q for i, (s, m, a) in enumerate(triples) for q in [qa(s, m, a, n=i)]}.values())
    props = dict(zip(("train", "validation", "test"), shares))
    res = assign_splits(items, proportions=props, link=link, seed=seed)
    assert set(res.assignment) == {q.qa_id for q in items}
    assert not shared_entities(items, res.assignment, link)
    assert sum(res.counts.values()) == len(items)
    assert all(res.counts[s] == 0 for s, share in props.items() if share == 0.0)


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 4), min_size=200, max_size=400),
    seed=st.integers(0, 100),
)
def test_proportions_within_a_few_percent_when_groups_are_small(sizes, seed):
    items: list[QA] = []
    for g, size in enumerate(sizes):  # group g: `size` questions sharing the seed "g<g>"
        items.extend(qa(f"g{g}", f"m{g}-{k}", f"a{g}-{k}", n=len(items)) for k in range(size))
    res = assign_splits(items, seed=seed)
    assert res.groups == len(sizes)
    assert res.max_deviation <= 0.03


def _q(i: int, seed: str, answer: str, split: str | None = None, domain: str = "cs") -> QA:
    return QA(qa_id=f"qa-{i:05d}", domain=domain, seed=seed, hop_class="1-2", path=[seed, answer], path_edges=[],
              question=f"q{i}", answer=answer, split=split)  # type: ignore[arg-type]


TARGETS = {"train": 0.8, "validation": 0.1, "test": 0.1}


def test_refresh_keeps_old_splits_and_places_linked_new_questions_with_their_group():
    old = [_q(i, f"S{i}", f"A{i}", split) for i, split in enumerate(["train"] * 8 + ["validation", "test"])]
    linked = _q(100, "S9", "Z")  # shares its seed with a test question
    fresh = [_q(200 + i, f"N{i}", f"M{i}") for i in range(20)]
    res = stable_splits(old + [linked] + fresh, seed=0, proportions=TARGETS)
    assert res.conflicts == [] and res.legacy_leaks == {} and res.joined == 1
    assert set(res.assignment) == {linked.qa_id, *(f.qa_id for f in fresh)}  # old questions are not reassigned
    assert res.assignment[linked.qa_id] == "test"
    # targets count the old questions too: 31 in all, so the fresh ones fill train and validation first
    assert res.counts == {"train": 25, "validation": 3, "test": 3}
    assert res.max_deviation < 0.01


def test_a_new_question_bridging_two_splits_is_a_conflict_not_a_tie_break():
    old = [_q(1, "Tamsin", "Exeter", "train"), _q(2, "Dart", "Dartmoor", "test")]
    bridge = _q(3, "Exeter", "Dartmoor")  # seed = a train answer, answer = a test answer
    follower = _q(4, "Exeter", "Plymouth")  # linked only to the train side
    res = stable_splits(old + [bridge, follower], proportions=TARGETS)
    assert [c.qa_id for c in res.conflicts] == [bridge.qa_id]
    c = res.conflicts[0]
    assert c.reason == "split_conflict" and c.splits == ("test", "train")
    assert {n for _, n in c.entities} == {"exeter", "dartmoor"} and "different splits" in c.detail
    assert res.assignment == {follower.qa_id: "train"}
    placed = [q.model_copy(update={"split": res.assignment.get(q.qa_id, q.split)}) for q in old + [follower]]
    assert split_leaks(placed) == {}


def test_a_conflict_does_not_pull_later_questions_across():
    old = [_q(1, "A", "B", "train"), _q(2, "C", "D", "test")]
    bridge = _q(3, "B", "D")  # rejected: joins train and test
    after = _q(4, "D", "X")  # would reach train only through the rejected bridge
    res = stable_splits(old + [bridge, after], proportions=TARGETS)
    assert [c.qa_id for c in res.conflicts] == [bridge.qa_id] and res.assignment == {after.qa_id: "test"}


def test_new_questions_that_link_only_each_other_form_a_fresh_group():
    old = [_q(i, f"S{i}", f"A{i}", "train") for i in range(8)]
    chain = [_q(10, "N1", "N2"), _q(11, "N2", "N3"), _q(12, "N3", "N4")]
    res = stable_splits(old + chain, proportions=TARGETS)
    assert res.joined == 0 and len({res.assignment[q.qa_id] for q in chain}) == 1


def test_legacy_leaks_are_reported_and_every_question_touching_them_conflicts():
    old = [_q(1, "A", "B", "train"), _q(2, "A", "C", "test")]  # written before the rule: A is in two splits
    res = stable_splits(old + [_q(3, "A", "E")], proportions=TARGETS)
    assert res.legacy_leaks == {("cs", "a"): {"train", "test"}} and len(res.conflicts) == 1
    assert "1 entity in more than one split: cs/'a' in test, train" == describe_leaks(split_leaks(old))


def test_refresh_is_order_free_and_rejects_repeated_ids():
    items = [_q(i, f"S{i % 7}", f"A{i % 11}", "train" if i < 5 else None) for i in range(40)]
    a = stable_splits(items, seed=2)
    b = stable_splits(list(reversed(items)), seed=2)
    assert a.assignment == b.assignment and a.conflicts == b.conflicts
    with pytest.raises(ValueError, match="more than once"):
        stable_splits(items + items[:1])


def _run_questions(run: int, n: int, rng: random.Random, pool: list[str]) -> list[QA]:
    """One generation run: seeds and answers drawn from a shared entity pool with a few hubs, as a refresh of
    the same graphs gives (later runs reuse entities that earlier runs already placed)."""
    weights = [1.0 / (1 + k) ** 0.6 for k in range(len(pool))]
    out = []
    for k in range(n):
        seed, answer = rng.choices(pool, weights, k=2)
        if seed != answer:
            out.append(_q(run * 10_000 + k, seed, answer))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_five_refreshes_stay_leak_safe_never_move_and_meet_the_shares(seed):
    rng = random.Random(seed)
    pool = [f"E{k}" for k in range(600)]  # dense: 750 questions over 600 entities, so refreshes keep meeting old groups
    warehouse: dict[str, QA] = {}
    moved = 0
    conflicts: list[QA] = []
    for run in range(5):
        for q in _run_questions(run, 150, rng, pool):
            warehouse.setdefault(q.qa_id, q)
        before = {i: q.split for i, q in warehouse.items() if q.split}
        res = stable_splits(list(warehouse.values()), proportions=TARGETS, seed=seed)
        for c in res.conflicts:  # the flow moves these to qa_rejects
            conflicts.append(warehouse.pop(c.qa_id))
        for qa_id, split in res.assignment.items():
            warehouse[qa_id] = warehouse[qa_id].model_copy(update={"split": split})
        moved += sum(warehouse[i].split != s for i, s in before.items())
        qs = list(warehouse.values())
        assert all(q.split for q in qs)
        assert split_leaks(qs) == {}
        # the stated tolerance: every split within 3 points of its share after every refresh
        assert res.max_deviation <= 0.03, res.summary()
    assert moved == 0
    final = list(warehouse.values())
    assert conflicts and len(conflicts) < len(final) / 4
    for c in conflicts:  # each one was a real bridge: in any split it would leak
        assert all(split_leaks([*final, c.model_copy(update={"split": s})]) for s in TARGETS)

