"""How program questions are worded on small graphs written here, in label styles other than those of the graphs
where each wording fault was found (docs/programs/grades-heldout2.md, grades-heldout3.md): the exact question, or
the refusal and its reason."""

from __future__ import annotations

import pytest

from schemas.graph import Entity, Relation
from schemas.programs import ProgramConstraint, ProgramStep, QueryProgram
from tasks.graph.kg import KnowledgeGraph
from tasks.meaning.names import person_kind
from tasks.meaning.profiles import book_for_graph
from tasks.qa.program_writer import write_program_question
from tasks.qa.template_writer import TemplateError


def graph(triples, types=None, domain="test") -> KnowledgeGraph:
    names = sorted({n for s, _, o in triples for n in (s, o)})
    types = types or {}
    ents = [Entity(domain=domain, name=n, type=types.get(n, "UNKNOWN")) for n in names]
    rels = [Relation(domain=domain, source=s, target=o, relation=r, directed=True) for s, r, o in triples]
    return KnowledgeGraph(domain, ents, rels, directed=True, snapshot_id=f"{domain}-test")


def pinned(start, steps, nodes, constraints) -> QueryProgram:
    return QueryProgram(kind="conjunction", start=start, nodes=nodes,
                        steps=[ProgramStep(label=l, forward=f) for l, f in steps],
                        constraints=[ProgramConstraint(node=n, label=l, forward=f, value=v)
                                     for n, l, f, v in constraints])


# -- people are asked for with "Who" ---------------------------------------------------------------------------------


@pytest.mark.parametrize("noun, person", [
    ("person", True), ("chef", True), ("chefs", True), ("footballer", True), ("film director", True), ("author", True), ("opera character", True),
    ("city", False), ("film", False), ("metabolite", False), (None, False),
])
def test_person_kinds_are_read_from_the_lexicon_and_the_people_list(noun, person):
    assert person_kind(noun) is person


def test_a_kind_that_names_people_is_asked_for_with_who():
    """bakeoff_raw asked "What is the baker whose hometown is London and ...?" (grades-heldout3.md, 9 questions):
    a chef, named by its kind, is asked for with "Who is the chef ..."; a node of another kind whose relations say it
    is a person (whoever has a birth place and an employer) is described with "who"."""
    kg = graph([("Ana Ruiz", "birthPlace", "Lyon"), ("Ana Ruiz", "employer", "Maison Roux"),
                ("Ben Ode", "birthPlace", "Lyon"), ("Ben Ode", "employer", "Chez Lou"),
                ("Cy Park", "birthPlace", "Nice"), ("Cy Park", "employer", "Maison Roux")],
               {"Ana Ruiz": "Chefs", "Ben Ode": "Chefs", "Cy Park": "Chefs", "Lyon": "City", "Nice": "City",
                "Maison Roux": "Restaurant", "Chez Lou": "Restaurant"})
    book = book_for_graph(kg)
    program = pinned("Lyon", [("birthPlace", False)], ["Lyon", "Ana Ruiz"], [(1, "employer", True, "Maison Roux")])
    q = write_program_question(program, ["city", "chef"], book=book, name_of=lambda n: n)
    assert q == "Who is the chef whose birth place is Lyon and who has Maison Roux as an employer?"
    # the same node typed "entrant" (neither the people list nor the lexicon names it): its relations say person
    q = write_program_question(program, ["city", "entrant"], book=book, name_of=lambda n: n)
    assert q == "Who is the entrant whose birth place is Lyon and who has Maison Roux as an employer?"
    # a kind that is no person keeps "What ... that"
    places = pinned("Europe", [("continent", False)], ["Europe", "Spain"], [(1, "currency", True, "Euro")])
    kg2 = graph([("Spain", "continent", "Europe"), ("Spain", "currency", "Euro"), ("Norway", "continent", "Europe")])
    q = write_program_question(places, ["continent", "country"], book=book_for_graph(kg2), name_of=lambda n: n)
    assert q == "What is the country whose continent is Europe and whose currency is Euro?"
