"""The template writer renders relation profiles: the right reading direction for `<noun>_of` and passive labels,
refusals that name the label (opaque codes, one of many, unknown counts), no centre-embedded clause, no two nodes
called "the entity", facts from the profile's statement, and step thoughts that pass the thought gates and never
name a node before a tool output shows it. The questions over the demo graphs pass the code checks and gates."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from schemas.qa import PathEdge
from tasks.distill.common import thought_gate_problem
from tasks.distill.template import ToolStep, thought_problems
from tasks.graph.importers import read_triples
from tasks.meaning.profiles import ProfileBook, book_for_graph
from tasks.qa.candidates import sample_candidate_paths
from tasks.qa.checks import reject_reason, run_checks
from tasks.qa.context import path_edges
from tasks.qa.generate import prompt_sources
from tasks.qa.seeds import eligible_seeds
from tasks.qa.template_writer import (
    TemplateError,
    fact_sentence,
    hop_reading,
    takes_article,
    type_noun,
    write_question,
    write_thoughts,
)
from tasks.qa.text_gates import question_gates

GRAPHS = Path(__file__).resolve().parent.parent / "flows" / "demo" / "graphs"


@pytest.fixture(scope="module")
def graphs():
    return {p.stem: read_triples(p, p.stem).to_graph() for p in sorted(GRAPHS.glob("*.jsonl"))}


def edge(head, tail, relation="", keywords=(), description="", forward=True):
    return PathEdge(head=head, tail=tail, relation=relation, keywords=list(keywords), description=description,
                    forward=forward)


def book(**counts: tuple[str, str]) -> ProfileBook:
    """A book where the user set the counts of some labels (forms still from the lexicon and morphology)."""
    return ProfileBook(user={k.replace("__", " "): {"objects_per_subject": o, "subjects_per_object": s}
                             for k, (o, s) in counts.items()})


# "the category that the person who worked in France classified": a relative clause whose subject holds another
CENTRE_EMBEDDED = re.compile(r"\b(?:that|who|which|whom) the \w+ (?:that|who|whom|which|whose)\b")


def test_a_noun_of_label_reads_from_its_subject():
    """`lipid ingredient_of clinical_drug`: lipid is the ingredient. Walked from lipid the question asks what lipid
    is an ingredient of; walked from the drug, what is an ingredient of it. Never "the ingredient of lipid"."""
    b = book(ingredient_of=("one", "one"))
    fwd = edge("lipid", "clinical drug", "ingredient_of")
    q = write_question(["lipid", "clinical drug"], [fwd], ["substance", "drug"], book=b)
    assert "lipid" in q and "ingredient" in q and "ingredient of lipid" not in q
    assert re.search(r"\blipid (?:is )?an ingredient of\?|has lipid as an ingredient", q), q
    back = edge("clinical drug", "lipid", "ingredient_of", forward=False)
    q2 = write_question(["clinical drug", "lipid"], [back], ["drug", "substance"], book=b)
    assert q2.endswith("an ingredient of clinical drug?"), q2
    assert fact_sentence(fwd, b) == fact_sentence(back, b) == "lipid is an ingredient of clinical drug"


def test_counts_in_the_world_decide_the_direction_a_hop_can_be_asked():
    """Many drugs have lipid as an ingredient and a drug has many ingredients: the lexicon says many both ways,
    so neither direction is a question, and the refusal names the label and its source."""
    with pytest.raises(TemplateError) as exc:
        write_question(["lipid", "clinical drug"], [edge("lipid", "clinical drug", "ingredient_of")],
                       ["substance", "drug"], book=ProfileBook())
    assert "'ingredient_of'" in str(exc.value) and "one of many" in str(exc.value)
    # "wrote": an author writes many works; a work has one author
    b = book(wrote=("many", "one"))
    with pytest.raises(TemplateError, match="one of many"):
        write_question(["Alan Turing", "On Computable Numbers"], [edge("Alan Turing", "On Computable Numbers", "wrote")],
                       ["person", "work"], book=b)
    q = write_question(["On Computable Numbers", "Alan Turing"],
                       [edge("On Computable Numbers", "Alan Turing", "wrote", forward=False)], ["work", "person"], book=b)
    assert q == "Who wrote On Computable Numbers?"


def test_a_passive_label_reads_in_the_active_voice():
    b = ProfileBook(user={"founded by": {"objects_per_subject": "one", "subjects_per_object": "many"}})
    e = edge("Microsoft", "Bill Gates", "founded_by".replace("_", " "))
    reading = hop_reading(e, b)
    assert reading.profile.forms.statement == "{o} founded {s}"
    q = write_question(["Microsoft", "Bill Gates"], [e], ["organization", "person"], book=b)
    assert q == "Who founded Microsoft?", q


def test_an_opaque_label_is_refused_by_name():
    with pytest.raises(TemplateError) as exc:
        write_question(["person103", "item7"], [edge("person103", "item7", "term0")], [None, None])
    assert "'term0'" in str(exc.value) and "not words" in str(exc.value)


def test_a_relation_with_nothing_to_read_is_refused():
    with pytest.raises(TemplateError, match="no label"):
        write_question(["X", "Y"], [edge("X", "Y")], [None, None])
    with pytest.raises(TemplateError, match="two or more nodes"):
        write_question(["X"], [], [None])


def test_a_nested_description_is_never_centre_embedded():
    """"born in" read from the person has only a clause with its slot inside ("the place that X was born in"):
    it may hold a name, never a description."""
    b = book(wrote=("one", "one"), was_born_in=("one", "many"))
    b = ProfileBook(user={"wrote": {"objects_per_subject": "one", "subjects_per_object": "one"},
                          "was born in": {"objects_per_subject": "one", "subjects_per_object": "many"}})
    path = ["On Computable Numbers", "Alan Turing", "London"]
    edges = [edge("On Computable Numbers", "Alan Turing", "wrote", forward=False),
             edge("Alan Turing", "London", "was born in")]
    try:
        q = write_question(path, edges, ["work", "person", "place"], book=b)
    except TemplateError as exc:
        assert "centre-embedded" in str(exc)
    else:
        assert not CENTRE_EMBEDDED.search(q) and q.endswith("?") and "On Computable Numbers" in q
    one = write_question(path[1:], edges[1:], ["person", "place"], book=b)
    assert one.startswith("Which place") and "Alan Turing" in one


def test_two_nodes_are_never_both_the_entity():
    # "inspired" says nothing of what either end is, so untyped nodes stay "the entity"
    b = ProfileBook(user={"inspired": {"objects_per_subject": "one", "subjects_per_object": "one"}})
    path = ["A", "B", "C"]
    edges = [edge("A", "B", "inspired"), edge("B", "C", "inspired")]
    with pytest.raises(TemplateError, match="more than one node 'the entity'"):
        write_question(path, edges, [None, None, None], book=b)


def test_questions_are_deterministic_and_vary_with_the_seed():
    b = ProfileBook(user={"was the capital of": {"objects_per_subject": "one", "subjects_per_object": "one"}})
    e = edge("Alexandria", "Ptolemaic Kingdom", "was the capital of")
    qs = {write_question(["Alexandria", "Ptolemaic Kingdom"], [e], ["place", "organization"], seed=s, book=b)
          for s in range(12)}
    assert qs == {write_question(["Alexandria", "Ptolemaic Kingdom"], [e], ["place", "organization"], seed=s, book=b)
                  for s in range(12)}
    assert all("Alexandria" in q and q.endswith("?") for q in qs)


def test_type_nouns():
    assert type_noun("Person") == "person" and type_noun("geo") == "place" and type_noun("content") == "work"
    assert type_noun(None) == "entity" and type_noun("Other") == "entity" and type_noun("natural object") == "natural object"


def test_names_take_the_article_the_graph_text_gives_them():
    assert takes_article("Great Plains", ["the Great Plains are dry", "Farms on the Great Plains."])
    assert not takes_article("Alan Turing", ["Alan Turing was born", "the Alan Turing Institute is"])


def test_an_undirected_label_reads_from_its_stored_source_whichever_end_the_walk_starts_at():
    """A graph may store a one-way label without a direction ("Romulus founded Rome", directed=false): walked from
    Rome, the hop is read backwards, never "Rome founded Romulus"."""
    from schemas.graph import Entity, Relation
    from tasks.graph.kg import KnowledgeGraph

    kg = KnowledgeGraph("history", [Entity(domain="history", name=n, type=t) for n, t in
                                    [("Romulus", "person"), ("Rome", "location"), ("Remus", "person")]],
                        [Relation(domain="history", source="Romulus", target="Rome", relation="founded"),
                         Relation(domain="history", source="Romulus", target="Remus", relation="was the twin of")],
                        directed=False)
    from_rome, from_romulus = path_edges(kg, ["Rome", "Romulus"])[0], path_edges(kg, ["Romulus", "Rome"])[0]
    assert fact_sentence(from_rome) == fact_sentence(from_romulus) == "Romulus founded Rome"
    b = ProfileBook(user={"founded": {"objects_per_subject": "one", "subjects_per_object": "one"}})
    assert write_question(["Rome", "Romulus"], [from_rome], ["location", "person"], book=b) == "Who founded Rome?"
    assert fact_sentence(path_edges(kg, ["Remus", "Romulus"])[0]) == "Romulus was the twin of Remus"


def test_template_questions_over_the_demo_graphs_pass_checks_and_gates(graphs, capsys):
    outcomes: Counter = Counter()
    for kg in graphs.values():
        b = book_for_graph(kg)
        for seed, _ in eligible_seeds(kg):
            for n_nodes in (2, 3, 4):
                for cand in sample_candidate_paths(kg, seed, n_nodes, count=2, seed=5, book=b):
                    path = list(cand.nodes)
                    try:
                        q = write_question(path, cand.edges, [kg.entity(n).type for n in path], seed=0, book=b)
                    except TemplateError as exc:
                        assert any(why in str(exc) for why in ("centre-embedded", "the entity", "common noun",
                                                               "garden path")), str(exc)
                        outcomes["not written"] += 1
                        continue
                    assert q == write_question(path, cand.edges, [kg.entity(n).type for n in path], seed=0, book=b)
                    assert not CENTRE_EMBEDDED.search(q), q
                    verdicts = run_checks(kg, path, q, path[-1], "1-2" if n_nodes <= 3 else "3+") + question_gates(
                        q, names=path, sources=prompt_sources(), descriptions=[e.description for e in cand.edges])
                    outcomes[reject_reason(verdicts) or "passed"] += 1
    total = sum(outcomes.values())
    with capsys.disabled():
        print(f"\ntemplate questions over the demo graphs: {dict(outcomes)} of {total}")
    # The sampler offers only paths whose every hop can be asked; what it offers the writer writes, and the checks
    # and gates pass nearly all of it (a relation label naming another path node is a leak, not junk).
    assert total >= 60 and outcomes["passed"] / total >= 0.85
    assert set(outcomes) <= {"passed", "not written", "leaks_intermediate_node", "leaks_answer", "leaks_partial_name",
                             "repetitive"}


def test_template_thoughts_pass_the_gates_and_never_look_ahead(graphs):
    checked = 0
    for kg in graphs.values():
        b = book_for_graph(kg)
        for seed, _ in eligible_seeds(kg):
            for cand in sample_candidate_paths(kg, seed, 3, count=2, seed=3, book=b):
                path = list(cand.nodes)
                types = [kg.entity(n).type for n in path]
                try:
                    question = write_question(path, cand.edges, types, book=b)
                except TemplateError:
                    continue
                edges = path_edges(kg, path)
                steps = [ToolStep("entity_matcher", {"node_name": path[0]}, f"1. {path[0]} [x]: found", True, path[0])]
                steps += [ToolStep("node_info", {"node_name": a}, f"Entity: {a}\n1. {c} | related", True, c)
                          for a, c in zip(path, path[1:])]
                thoughts = write_thoughts(question, path, edges, types, graph=kg.domain, book=b)
                assert len(thoughts) == len(steps) + 1
                assert thought_problems(thoughts, question, path, steps) is None
                assert thought_gate_problem(thoughts, language="en", names=path,
                                            observations=[s.observation for s in steps]) is None
                assert path[-1] in thoughts[-1]
                checked += 1
    assert checked >= 5


def test_a_start_named_by_a_bare_common_noun_is_refused_and_untyped_nodes_take_the_relations_noun():
    b = ProfileBook(user={"was born in": {"objects_per_subject": "one", "subjects_per_object": "many",
                                          "object_noun": "place", "subject_noun": "person"},
                          "legislature": {"objects_per_subject": "one", "subjects_per_object": "one"}})
    q = write_question(["Harry Kane", "Walthamstow"], [edge("Harry Kane", "Walthamstow", "was born in")], [None, None],
                       book=b)
    assert q.startswith("Which place was Harry Kane born in"), q
    with pytest.raises(TemplateError, match="common noun"):
        write_question(["Congress", "United States"], [edge("United States", "Congress", "legislature",
                                                            forward=False)], [None, "place"], book=b)


def test_a_description_ending_in_its_own_verb_only_ends_a_question():
    """"Which place had the person who pizza Margherita is named after as queen?" is a garden path: the clause
    that ends in "after" may close the question, not sit inside it."""
    b = ProfileBook(user={"is named after": {"objects_per_subject": "one", "subjects_per_object": "one"},
                          "was queen of": {"objects_per_subject": "one", "subjects_per_object": "one"}})
    path = ["pizza Margherita", "Margherita of Savoy", "Italy"]
    edges = [edge("pizza Margherita", "Margherita of Savoy", "is named after"),
             edge("Margherita of Savoy", "Italy", "was queen of")]
    try:
        q = write_question(path, edges, ["food", "person", "place"], book=b)
    except TemplateError as exc:
        assert "garden path" in str(exc) or "centre-embedded" in str(exc)
    else:
        assert not re.search(r"\b(?:after|of|in|at) (?:as|in|of)\b", q), q


@pytest.mark.parametrize("name, said", [
    ("the Faroe Islands", "the Faroe Islands'"), ("the Caribbean Netherlands", "the Caribbean Netherlands'"),
    ("the United States", "the United States'"), ("Rockford", "Rockford's"), ("Paris", "Paris's"),
    ("Coral Springs", "Coral Springs's"), ("the Bahamas", "the Bahamas'"), ("the Philippines", "the Philippines'"),
    ("the Bolshoi Theatre", "the Bolshoi Theatre's"),
])
def test_a_plural_name_in_s_takes_the_possessive_apostrophe_alone(name, said):
    """brands_dbpedia (reports/sampled38): "what is the Faroe Islands's country?"; a plural in "s" takes "'" alone,
    a singular name in "s" keeps "'s", and so does a town named by a plural, which is one place."""
    from tasks.qa.template_writer import possessive

    assert possessive(name) == said
