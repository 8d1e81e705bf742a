"""Question de-duplication: exact on normalised (question, answer), near by character n-gram MinHash."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.qa import QA, PathEdge, make_qa_id
import numpy as np

from tasks.qa.dedup import char_ngrams, dedup_questions, edge_key, jaccard, normalize_question


def qa(question: str, answer: str = "Alan Turing", domain: str = "cs", seed: str = "Bletchley Park",
       path: list[str] | None = None) -> QA:
    # Each question its own middle node unless a path is given: the same path is a duplicate on its own.
    path = path or [seed, f"via {normalize_question(question)}", answer]
    return QA(
        qa_id=make_qa_id(domain, "snap", question, answer, path), domain=domain, snapshot_id="snap", seed=path[0],
        hop_class="1-2", path=path, path_edges=[PathEdge(head=a, tail=b) for a, b in zip(path, path[1:])],
        question=question, answer=answer,
    )  # fmt: skip


LONG = ("Which mathematician, who worked at the wartime codebreaking centre in Buckinghamshire, later wrote the paper "
        "that introduced an abstract machine reading symbols from an unbounded tape?")  # fmt: skip


def test_normalize_question():
    assert normalize_question("  Who WROTE “it”?! ") == "who wrote it"
    assert normalize_question("Who-wrote it") == "who wrote it"


def test_exact_duplicates_ignore_case_punctuation_and_spacing():
    items = [qa("Who broke Enigma?"), qa("who broke   enigma"), qa("WHO BROKE ENIGMA?!"), qa("Who built Colossus?")]
    res = dedup_questions(items)
    assert len(res.kept) == 2
    assert len(res.rejects) == 2 and all(r.reason == "duplicate" and r.similarity == 1.0 for r in res.rejects)
    kept_ids = {k.qa_id for k in res.kept}
    assert all(r.duplicate_of in kept_ids for r in res.rejects)


def test_same_question_different_answer_is_kept():
    res = dedup_questions([qa("Who broke Enigma?", "Alan Turing"), qa("Who broke Enigma?", "Gordon Welchman")])
    assert len(res.kept) == 2 and not res.rejects


def test_near_duplicates_share_the_answer_and_most_ngrams():
    a = qa(LONG)
    b = qa(LONG.replace("later wrote", "subsequently wrote"))
    c = qa(LONG.replace("later wrote", "subsequently wrote"), answer="Gordon Welchman")
    d = qa("Which machine did the Government Code and Cypher School build to read teleprinter traffic?")
    assert jaccard(char_ngrams(normalize_question(a.question), 5), char_ngrams(normalize_question(b.question), 5)) > 0.8
    res = dedup_questions([a, b, c, d])
    first = min(a, b, key=lambda x: x.qa_id)
    second = b if first is a else a
    assert {k.qa_id for k in res.kept} == {first.qa_id, c.qa_id, d.qa_id}
    (rej,) = res.rejects
    assert rej.item is second and rej.reason == "near_duplicate" and rej.duplicate_of == first.qa_id
    assert 0.8 <= rej.similarity < 1.0
    # Without the answer rule, c joins the group too.
    loose = dedup_questions([a, b, c, d], same_answer=False)
    assert len(loose.kept) == 2


def test_domains_are_deduplicated_separately():
    res = dedup_questions([qa("Who broke Enigma?", domain="cs"), qa("Who broke Enigma?", domain="history")])
    assert len(res.kept) == 2


def test_first_by_stable_order_wins_and_input_order_does_not_matter():
    items = [qa("Who broke Enigma?"), qa("who broke enigma"), qa(LONG), qa(LONG + " ")]
    a = dedup_questions(items)
    b = dedup_questions(list(reversed(items)))
    assert [k.qa_id for k in a.kept] == [k.qa_id for k in b.kept]
    assert [(r.item.qa_id, r.duplicate_of) for r in a.rejects] == [(r.item.qa_id, r.duplicate_of) for r in b.rejects]
    kept_in_input_order = dedup_questions(list(reversed(items)), sort_key=None)
    assert kept_in_input_order.kept[0].qa_id == items[-1].qa_id


def test_threshold_and_parameters_are_checked():
    with pytest.raises(ValueError, match="threshold"):
        dedup_questions([], threshold=0)
    with pytest.raises(ValueError, match="ngram"):
        dedup_questions([], ngram=0)
    assert dedup_questions([]).kept == []


def test_lower_threshold_catches_looser_paraphrases():
    a = qa("Which university did the author of On Computable Numbers attend?")
    b = qa("Which university was attended by the author of On Computable Numbers?")
    assert len(dedup_questions([a, b]).kept) == 2
    assert len(dedup_questions([a, b], threshold=0.4).kept) == 1


def test_qa_rejects_rows():
    items = [qa("Who broke Enigma?"), qa("who broke enigma")]
    res = dedup_questions(items)
    (row,) = res.qa_rejects(run_id="run-1")
    assert row.stage == "dedup" and row.reason == "duplicate" and row.run_id == "run-1"
    assert row.duplicate_of == res.kept[0].qa_id and row.qa_id == res.rejects[0].item.qa_id
    assert row.question == res.rejects[0].item.question


def test_generic_items_with_accessors():
    rows = [("1", "Who broke Enigma?", "Turing"), ("2", "who broke enigma", "turing")]
    res = dedup_questions(
        rows, id_of=lambda r: r[0], question_of=lambda r: r[1], answer_of=lambda r: r[2], domain_of=lambda r: "x",
        sort_key=lambda r: r[0],
    )  # fmt: skip
    assert res.kept == [rows[0]] and res.rejects[0].duplicate_of == "1"


VOCAB = ["who", "which", "wrote", "built", "the", "machine", "paper", "engine", "founded", "society", "tape", "code"]


@settings(max_examples=60, deadline=None)
@given(
    questions=st.lists(st.lists(st.sampled_from(VOCAB), min_size=3, max_size=12).map(" ".join), min_size=1, max_size=25),
    answers=st.lists(st.sampled_from(["A", "B"]), min_size=25, max_size=25),
    threshold=st.sampled_from([0.5, 0.8, 0.95]),
)
def test_dedup_invariants(questions, answers, threshold):
    items = [qa(q, answers[i]) for i, q in enumerate(questions)]
    unique = list({i.qa_id: i for i in items}.values())
    res = dedup_questions(unique, threshold=threshold)
    kept = {k.qa_id for k in res.kept}
    assert len(kept) == len(res.kept)
    assert len(res.kept) + len(res.rejects) == len(unique)
    for r in res.rejects:
        assert r.duplicate_of in kept and r.item.qa_id not in kept
        assert r.similarity >= threshold
        twin = next(k for k in res.kept if k.qa_id == r.duplicate_of)
        assert twin.answer == r.item.answer
    # No two kept questions are exact duplicates.
    keys = [(normalize_question(k.question), k.answer) for k in res.kept]
    assert len(set(keys)) == len(keys)
    assert dedup_questions(list(reversed(unique)), threshold=threshold).kept == res.kept


PATH = ["Alan Turing", "Bombe", "Enigma machine"]


def test_same_answer_over_the_same_edges_is_a_duplicate_whatever_the_wording():
    a = qa("Which cipher machine did the device designed by Alan Turing attack?", "Enigma machine", path=PATH)
    b = qa("The codebreaking apparatus Alan Turing built was aimed at what?", "enigma  machine", path=PATH)
    other_answer = qa("Which device did Alan Turing design?", "Bombe", path=PATH[:2])
    res = dedup_questions([a, b, other_answer])
    (rej,) = res.rejects
    first, second = sorted([a, b], key=lambda x: x.qa_id)
    assert rej.item is second and rej.reason == "duplicate_path" and rej.duplicate_of == first.qa_id
    assert rej.similarity == 1.0 and "same answer over the same path edges" in res.qa_rejects()[0].detail
    assert edge_key(["A", "B", "C"]) == edge_key(["c", "b", "a"]) != edge_key(["A", "C", "B"])
    assert edge_key(["A"]) is None and dedup_questions([a, b], path_of=None).rejects == []


class TableEmbedder:
    """Vectors from a table of texts (unknown texts get their own axis): a fake of the configured embedder."""

    name, dim = "table", 8

    def __init__(self, table: dict[str, list[float]]):
        self.table, self.calls = table, 0

    def embed(self, texts):
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = self.table.get(t, np.eye(self.dim)[(i % 3) + 5])
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_paraphrases_on_different_paths_are_caught_by_embedding_similarity():
    a = qa("Which university did the author of On Computable Numbers attend?", "Princeton University")
    b = qa("At what school was the writer of On Computable Numbers educated?", "Princeton University")
    c = qa("At what school was the writer of the Entscheidungsproblem paper educated?", "King's College")
    d = qa("Where did Alonzo Church teach?", "Princeton University")
    emb = TableEmbedder({a.question: [1, 0.1, 0, 0, 0, 0, 0, 0], b.question: [1, 0.12, 0, 0, 0, 0, 0, 0],
                         c.question: [1, 0.11, 0, 0, 0, 0, 0, 0], d.question: [0, 1, 0, 0, 0, 0, 0, 0]})
    assert len(dedup_questions([a, b, c, d]).kept) == 4  # n-grams alone keep all four
    res = dedup_questions([a, b, c, d], embedder=emb, embed_threshold=0.95)
    first, second = sorted([a, b], key=lambda x: x.qa_id)
    assert [(r.item.qa_id, r.reason, r.duplicate_of) for r in res.rejects] == [(second.qa_id, "paraphrase", first.qa_id)]
    assert 0.95 <= res.rejects[0].similarity < 1.0 and emb.calls == 1
    assert "embedding cosine" in res.qa_rejects()[0].detail
    # c is as close, but has another answer; without the answer rule it goes too
    assert len(dedup_questions([a, b, c, d], embedder=emb, embed_threshold=0.95, same_answer=False).rejects) == 2
    with pytest.raises(ValueError, match="embed_threshold"):
        dedup_questions([a], embedder=emb, embed_threshold=1.5)


def test_fixed_items_are_kept_and_later_ones_compared_with_them():
    old = [qa("Who broke Enigma?"), qa("who broke enigma")]  # published before the same-path rule, say
    new = qa("WHO BROKE ENIGMA?!")
    res = dedup_questions([*old, new], fixed=lambda q: q.qa_id != new.qa_id)
    assert {k.qa_id for k in res.kept} == {o.qa_id for o in old}
    assert [r.item.qa_id for r in res.rejects] == [new.qa_id] and res.rejects[0].reason == "duplicate"


def test_hashing_embedder_as_configured_in_tests_catches_a_light_rewording():
    from tasks.env.index import HashingEmbedder

    a = qa("Which university did the doctoral supervisor of Alan Turing teach at?", "Princeton University")
    b = qa("Which university did Alan Turing's doctoral supervisor teach at?", "Princeton University")
    res = dedup_questions([a, b], threshold=0.95, embedder=HashingEmbedder(), embed_threshold=0.8)
    assert [r.reason for r in res.rejects] == ["paraphrase"]
