"""The template writer: deterministic questions over every demo graph that pass the code checks and text gates,
relation phrasing for labelled, unlabelled and machine-style relations, the unphrasable case, and step thoughts
that pass the thought gates and never name a node before a tool output shows it."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from schemas.qa import PathEdge
from tasks.distill.trajectories import ToolStep, thought_gate_problem, thought_problems
from tasks.graph.importers import read_triples
from tasks.qa.candidates import sample_candidate_paths
from tasks.qa.checks import reject_reason, run_checks
from tasks.qa.context import path_edges
from tasks.qa.generate import prompt_sources
from tasks.qa.seeds import eligible_seeds
from tasks.qa.template_writer import (
    TemplateError,
    description_phrase,
    hop_phrase,
    takes_article,
    write_question,
    write_thoughts,
)
from tasks.qa.text_gates import question_gates

GRAPHS = Path(__file__).resolve().parent.parent / "flows" / "demo" / "graphs"


@pytest.fixture(scope="module")
def graphs():
    return {p.stem: read_triples(p, p.stem).to_graph() for p in sorted(GRAPHS.glob("*.jsonl"))}


def _types(kg, path):
    return [kg.entity(n).type for n in path]


def test_template_questions_over_the_demo_graphs_pass_checks_and_gates(graphs, capsys):
    outcomes: Counter = Counter()
    per_hops: Counter = Counter()
    for kg in graphs.values():
        for seed, _ in eligible_seeds(kg)[:12]:
            for n_nodes in (2, 3, 4):
                for cand in sample_candidate_paths(kg, seed, n_nodes, count=2, seed=5):
                    path = list(cand.nodes)
                    try:
                        q = write_question(path, cand.edges, _types(kg, path), seed=0)
                    except TemplateError as exc:  # a clause that would have to be centre-embedded, or a vague hop
                        if "no single answer" in str(exc):
                            outcomes["one of many (in, at or of a place, event or group)"] += 1
                            continue
                        if "twice" in str(exc):  # "the species that has Bacillus anthracis as a species"
                            outcomes["names its type twice"] += 1
                            continue
                        assert "centre-embedded" in str(exc) and n_nodes >= 3
                        outcomes["unphrasable without centre-embedding"] += 1
                        continue
                    assert q == write_question(path, cand.edges, _types(kg, path), seed=0)  # deterministic
                    assert not CENTRE_EMBEDDED.search(q), q
                    assert " is the one " not in q, q
                    verdicts = run_checks(kg, path, q, path[-1], "1-2" if n_nodes <= 3 else "3+") + question_gates(
                        q, names=path, sources=prompt_sources(), descriptions=[e.description for e in cand.edges])
                    code = reject_reason(verdicts)
                    outcomes[code or "passed"] += 1
                    per_hops[(n_nodes, code is None)] += 1
    total = sum(outcomes.values())
    with capsys.disabled():
        print(f"\ntemplate questions over the demo graphs: {dict(outcomes)} of {total}")
    # The sampler no longer offers paths with a hop read from the place, event or group a node is in, at or of
    # ("the person who worked at IBM"), nor an untyped container ("is part of"), nor a whole read from a part
    # ("the concept that includes dashi"), nor a member read from its class, a workplace from its worker, what an
    # organization makes, neighbours, crops, topics, honours, partners, practitioners, office holders or whoever did
    # something for, over or under a place or a person ("the person who sailed for Spain"), followers of someone's work
    # ("the person who built on the work of Carême"): 196 paths are sampled, 153 of them pass (201 and 156 before
    # the last rule, 255 and 183 before the ones of the same week, 350 and 235 before any).
    assert outcomes["passed"] / total >= 0.65
    # Every failure is a path the writer will not nest without a centre-embedded clause, or a relation label naming
    # another path node (an intermediate or the answer: "gave the title Augustus to"), never junk.
    assert set(outcomes) <= {"passed", "unphrasable without centre-embedding", "one of many (in, at or of a place, event or group)",
                             "names its type twice",
                             "repetitive", "leaks_intermediate_node",
                             "leaks_answer", "leaks_partial_name", "shortcut"}


# "the category that the person who worked in France classified": a relative clause whose subject holds another
CENTRE_EMBEDDED = re.compile(r"\b(?:that|who|which|whom) the \w+ (?:that|who|whom|which|whose)\b")


def edge(head, tail, relation="", keywords=(), description="", forward=True):
    return PathEdge(head=head, tail=tail, relation=relation, keywords=list(keywords), description=description,
                    forward=forward)


def test_phrases_of_labelled_unlabelled_and_machine_relations():
    assert hop_phrase(edge("A", "B", "wrote")).kind == "verb"
    noun = hop_phrase(edge("France", "Paris", "location.country.capital"))
    assert (noun.kind, noun.label) == ("noun", "capital")
    assert hop_phrase(edge("Barack Obama", "Honolulu", "place_of_birth")).label == "place of birth"
    assert description_phrase("Alan Turing studied mathematics at King's College, Cambridge.", "Alan Turing",
                              "King's College, Cambridge") == ("studied mathematics at", True)
    unlabelled = edge("Entscheidungsproblem", "David Hilbert", keywords=["decision problem"],
                      description="The German mathematician David Hilbert posed the Entscheidungsproblem.")
    ph = hop_phrase(unlabelled)
    assert (ph.label, ph.subject_is_head) == ("posed", False)
    assert hop_phrase(edge("A", "B", keywords=["education"])).kind == "keyword"


def test_questions_of_each_form():
    person, org, place = "person", "organization", "location"
    q = write_question(["David Hilbert", "Entscheidungsproblem"], [edge("David Hilbert", "Entscheidungsproblem", "posed")],
                       [person, "concept"])
    assert q.endswith("?") and "David Hilbert" in q and "Entscheidungsproblem" not in q
    q = write_question(["Entscheidungsproblem", "David Hilbert"],
                       [edge("Entscheidungsproblem", "David Hilbert", "posed", forward=False)], ["concept", person])
    assert q in ("Which person posed Entscheidungsproblem?", "Who posed Entscheidungsproblem?")
    q = write_question(["France", "Paris"], [edge("France", "Paris", "capital_city")], [place, place])
    assert q == "What is the capital city of France?"
    # comparison: A -L-> B <-L- C, for some seed
    path = ["Steve Jobs", "Apple", "Steve Wozniak"]
    edges = [edge("Steve Jobs", "Apple", "founded"), edge("Apple", "Steve Wozniak", "founded", forward=False)]
    forms = {write_question(path, edges, [person, org, person], seed=s) for s in range(12)}
    assert "Who founded the same organization as Steve Jobs?" in forms
    assert all("Apple" not in f and "Wozniak" not in f for f in forms)
    # "Who worked at the same organization as Alan Turing?" names one of the many people who worked there
    with pytest.raises(TemplateError, match="no single answer"):
        write_question(["Alan Turing", "Bletchley Park", "Gordon Welchman"],
                       [edge("Alan Turing", "Bletchley Park", "worked at"),
                        edge("Bletchley Park", "Gordon Welchman", "worked at", forward=False)], [person, org, person])


def test_an_unphrasable_relation_is_a_template_error_not_half_a_question():
    bare = edge("X", "Y", description="Some text that names neither end.")
    with pytest.raises(TemplateError, match="cannot phrase the relation between 'X' and 'Y'"):
        write_question(["X", "Y"], [bare], [None, None])
    with pytest.raises(TemplateError):
        write_thoughts("Q?", ["X", "Y"], [bare], [None, None], graph="g")
    with pytest.raises(TemplateError, match="two or more nodes"):
        write_question(["X"], [], [None])


def test_template_thoughts_pass_the_gates_and_never_look_ahead(graphs):
    kg = graphs["cs"]
    checked = 0
    for seed, _ in eligible_seeds(kg)[:20]:
        for cand in sample_candidate_paths(kg, seed, 4, count=3, seed=3):
            path = list(cand.nodes)
            try:
                question = write_question(path, cand.edges, _types(kg, path))
            except TemplateError:  # the factory offers the job's next candidate
                continue
            edges = path_edges(kg, path)
            # what the tools show: the matcher lists the start, node_info(n_i) lists n_(i+1)
            steps = [ToolStep("entity_matcher", {"node_name": path[0]}, f"1. {path[0]} [x]: found", True, path[0])]
            steps += [ToolStep("node_info", {"node_name": a}, f"Entity: {a}\n1. {b} | related", True, b)
                      for a, b in zip(path, path[1:])]
            thoughts = write_thoughts(question, path, edges, _types(kg, path), graph="cs")
            assert len(thoughts) == len(steps) + 1
            assert thought_problems(thoughts, question, path, steps) is None
            assert thought_gate_problem(thoughts, language="en", names=path,
                                        observations=[s.observation for s in steps]) is None
            assert path[-1] in thoughts[-1]
            checked += 1
    assert checked >= 5


def test_dataset_card_counts_questions_by_writer():
    from tasks.export.datasets import dataset_card

    rows = [{"writer": "template"}, {"writer": "template"}, {"writer": "llm"}]
    card = dataset_card("v1", {"qa": {"train": rows[:2], "test": rows[2:]}})
    assert "| template | 2 |" in card and "| llm | 1 |" in card


def test_past_passive_labels_read_in_the_active_voice():
    q = write_question(["Apple", "Steve Jobs"], [edge("Apple", "Steve Jobs", "was founded by")],
                       ["organization", "person"])
    assert q in ("Who founded Apple?", "Which person founded Apple?")
    assert hop_phrase(edge("A", "B", "were spread by")).label == "spread"
    assert hop_phrase(edge("A", "B", "was written by")).label == "wrote"
    assert hop_phrase(edge("A", "B", "is supported by")).label == "is supported by"  # present: tense unknown


def test_a_nested_subject_is_never_centre_embedded():
    # L'Art -[wrote]<- Carême -[first classified]-> mother sauces -[prepares]<- saucier
    path = ["L'Art de la cuisine française", "Marie-Antoine Carême", "mother sauces", "saucier"]
    edges = [edge(path[0], "Marie-Antoine Carême", "wrote", forward=False),
             edge("Marie-Antoine Carême", "mother sauces", "first classified"),
             edge("mother sauces", "saucier", "prepares", forward=False)]
    forms = {write_question(path, edges, ["work", "person", "category", "role"], seed=s) for s in range(20)}
    assert forms == {
        "Which role prepares the category first classified by the person who wrote L'Art de la cuisine française?",
        "What role prepares the category first classified by the person who wrote L'Art de la cuisine française?"}
    # "wrote letters to" has no passive: through a described subject it cannot be said without centre-embedding
    path = ["Micrographia", "Robert Hooke", "Royal Society"]
    edges = [edge("Micrographia", "Robert Hooke", "wrote", forward=False),
             edge("Robert Hooke", "Royal Society", "wrote letters to")]
    with pytest.raises(TemplateError, match="centre-embedded"):
        write_question(path, edges, ["work", "person", "organization"])


def test_copular_labels_become_questions_that_branch_right():
    q = {write_question(["Pharsalus", "Pompey", "Egypt"],
                        [edge("Pharsalus", "Pompey", "lost", forward=False),
                         edge("Pompey", "Egypt", "was murdered in")], ["event", "person", "location"], seed=s)
         for s in range(10)}
    assert q == {"In which place was the person who lost Pharsalus murdered?"}
    q = {write_question(["California", "United States"], [edge("California", "United States", "is a state of")],
                        ["location", "location"], seed=s) for s in range(10)}
    assert "Which place has California as a state?" in q
    q = write_question(["Hernán Cortés", "Tenochtitlan", "Aztec"],
                       [edge("Hernán Cortés", "Tenochtitlan", "conquered"),
                        edge("Tenochtitlan", "Aztec", "was the capital of")], ["person", "location", "civilization"])
    assert q == "What is the civilization whose capital was the place conquered by Hernán Cortés?"


def test_names_take_the_article_the_graph_text_gives_them():
    texts = ["The Dust Bowl struck the Great Plains in the 1930s.", "Drought on the Great Plains caused it.",
             "Farmers left the Great Plains, and Alan Turing stayed.", "Alan Turing wrote On Computable Numbers."]
    assert takes_article("Great Plains", texts)
    assert not takes_article("Alan Turing", texts)
    assert not takes_article("TeX", ["the TeX typesetting system", "the TeX program", "TeX is fast"])
    assert not takes_article("Texas", ["Texas lies south of the Great Plains."])  # one mention is too few
    q = write_question(["Great Plains", "Dust Bowl"], [edge("Great Plains", "Dust Bowl", "struck", forward=False)],
                       ["location", "event"], start_article=True)
    assert q in ("Which event struck the Great Plains?", "What event struck the Great Plains?")
    q = {write_question(["Battle of Austerlitz", "Holy Roman Empire"],
                        [edge("Battle of Austerlitz", "Holy Roman Empire", "led to the end of")],
                        ["event", "organization"], start_article=True, seed=s) for s in range(12)}
    assert "The Battle of Austerlitz led to the end of which organization?" in q


def test_type_nouns_cover_lightrag_default_types():
    from tasks.qa.template_writer import type_noun

    assert [type_noun(t) for t in ("Person", "Content", "Artifact", "NaturalObject", "Other", "geo", "", None)] == [
        "person", "work", "artifact", "natural object", "entity", "place", "entity", "entity"]


def test_a_hop_into_a_container_or_setting_is_not_a_question():
    """"The place that lies in Sonora" names one of many places, however few the graph holds: no question."""
    path = ["Sonora", "Yaqui Valley", "Norman Borlaug"]
    edges = [edge("Sonora", "Yaqui Valley", "lies in", forward=False),
             edge("Yaqui Valley", "Norman Borlaug", "bred wheat in", forward=False)]
    with pytest.raises(TemplateError, match="only says that 'Yaqui Valley' is one of the things that lies in 'Sonora'"):
        write_question(path, edges, ["location", "location", "person"])
    # the same for what happens, works or lives in, at or of a place, an event or a group, read from that side
    for label in ("worked at", "took place in", "was domesticated in", "was a citizen of", "reached", "lived on",
                  "was executed during", "survived", "were brought to", "studied  at", "was a chemist from",
                  "was ruled from", "besieged"):
        with pytest.raises(TemplateError, match="no single answer"):
            write_question(["Berlin", "X"], [edge("Berlin", "X", label, forward=False)], ["location", "person"])
    # relations that pair one thing with one other keep their question
    for label in ("was married to", "gave birth to", "is the capital of", "wrote", "founded"):
        assert write_question(["A", "B"], [edge("A", "B", label, forward=False)], ["person", "person"]).endswith("?")
    for label in ("is located in", "is a state of", "is part of", "belongs to"):
        with pytest.raises(TemplateError, match="no single answer"):
            write_question(["United States", "X"], [edge("United States", "X", label, forward=False)],
                           ["location", "location"])
    # read from the inside out a typed container singles one thing out: "the place that has California as a state"
    q = write_question(["California", "United States"], [edge("California", "United States", "is a state of")],
                       ["location", "location"])
    assert "California" in q and q.endswith("?")
    # an untyped one does not: places nest ("Mexico is part of which place?": North America, the Americas, ...)
    for label in ("is part of", "lies in", "is located in"):
        with pytest.raises(TemplateError, match="no single answer"):
            write_question(["Mexico", "Americas"], [edge("Mexico", "Americas", label)], ["location", "location"])
    # wholes and parts, read either way: "the concept that includes dashi" is one of many dishes with dashi in them
    for label in ("includes", "contains", "consists of", "is made of", "is composed of", "is made from"):
        for forward in (True, False):
            with pytest.raises(TemplateError, match="no single answer"):
                write_question(["dashi", "washoku"], [edge("dashi", "washoku", label, forward=forward)],
                               ["concept", "concept"])


def test_a_described_subject_takes_a_singular_verb():
    """The graph's label follows its own subject ("Ifugao rice terraces are used to grow rice"); a question that
    describes that subject names it with a singular noun, so the verb agrees with the noun."""
    to_rice = edge("rice", "Ifugao rice terraces", "are the home of", forward=False)
    assert write_question(["rice", "Ifugao rice terraces"], [to_rice], ["species", "place"]) in (
        "What place is the home of rice?", "Which place is the home of rice?")
    q = write_question(["rice", "Ifugao rice terraces", "Ifugao"],
                       [to_rice, edge("Ifugao rice terraces", "Ifugao", "carved", forward=False)],
                       ["species", "place", "organization"])
    assert "the place that is the home of rice" in q and " are " not in q
    # named, the subject keeps the graph's own number
    assert write_question(["Ifugao rice terraces", "rice"], [edge("Ifugao rice terraces", "rice", "are used to grow")],
                          ["place", "species"]) == "Ifugao rice terraces are used to grow which species?"



def test_a_member_read_from_its_class_or_a_workplace_from_its_worker_is_not_a_question():
    """"The species that is a genus of bacteria", "the image that is an image of DNA", "Grace Hopper worked at which
    organization?": each names one of many; read the other way the same labels keep their single answer."""
    for label in ("is a genus of", "is an X-ray image of", "are a variety of", "is one of the", "is one of the five",
                  "is a founder of", "is used to grow", "was used for", "is found in the nuclei of", "served"):
        with pytest.raises(TemplateError, match="no single answer"):
            write_question(["bacteria", "X"], [edge("bacteria", "X", label, forward=False)], ["species", "concept"])
    for label in ("is a genus of", "is one of the", "is the capital of", "was born in", "died in"):
        q = write_question(["X", "bacteria"], [edge("X", "bacteria", label)], ["concept", "category"])
        assert "X" in q and q.endswith("?")
    for label in ("worked at", "studied mathematics at", "taught at", "lived in", "played for", "served as",
                  "visited", "joined", "attended", "studied"):
        with pytest.raises(TemplateError, match="no single answer"):
            write_question(["Grace Hopper", "X"], [edge("Grace Hopper", "X", label)], ["person", "organization"])
    # the sampler offers none of them either, whoever writes the question
    from tasks.qa.template_writer import one_of_many_hop

    assert one_of_many_hop([edge("Grace Hopper", "Harvard", "worked at")]) == 0
    assert one_of_many_hop([edge("rice", "IR8", "is a variety of", forward=False)]) == 0
    assert one_of_many_hop([edge("IR8", "rice", "is a variety of"), edge("rice", "Asia", "was domesticated in")]) is None


def test_a_hop_that_names_its_node_by_its_own_type_is_not_a_question():
    """"The species that has Streptococcus pneumoniae as a species": the graph types bacteria as a species, and the
    label calls it one again; the description says nothing. Words that only look like the type ("took place in")
    do not count."""
    with pytest.raises(TemplateError, match="a species twice"):
        write_question(["Streptococcus pneumoniae", "bacteria", "penicillin"],
                       [edge("Streptococcus pneumoniae", "bacteria", "is a species of"),
                        edge("bacteria", "penicillin", "kills", forward=False)], ["species", "species", "concept"])
    with pytest.raises(TemplateError, match="a category twice"):
        write_question(["X", "Y"], [edge("X", "Y", "is a category of")], ["concept", "category"])
    with pytest.raises(TemplateError, match="a city twice"):  # a noun label read backward: "the city whose city is"
        write_question(["X", "Y", "Z"], [edge("X", "Y", "city_of", forward=False), edge("Y", "Z", "wrote")],
                       ["person", "city", "work"])
    q = write_question(["Streptococcus pneumoniae", "bacteria"], [edge("Streptococcus pneumoniae", "bacteria",
                                                                       "is a species of")], ["species", "category"])
    assert q == "Which category has Streptococcus pneumoniae as a species?"
    q = write_question(["Glorious Revolution", "England"], [edge("Glorious Revolution", "England", "took place in")],
                       ["event", "location"])
    assert "Glorious Revolution" in q and q.endswith("?")


def test_what_an_organization_or_a_place_makes_is_one_of_many():
    """"Who programmed the machine built by IBM?": IBM built thousands. Read from an organization or a place, what
    it builds, sells, imports or funds is one of many; read from the thing made, the maker is one; a person's
    works and an organization's own seat keep their question."""
    for label in ("built", "released", "funded", "imported", "developed", "helped set up", "first introduced",
                  "presents", "established"):
        for typ in ("organization", "location", "geo"):
            with pytest.raises(TemplateError, match="no single answer"):
                write_question(["IBM", "X"], [edge("IBM", "X", label)], [typ, "artifact"])
    assert write_question(["X", "IBM"], [edge("IBM", "X", "built", forward=False)], ["artifact", "organization"]) in (
        "Which organization built X?", "What organization built X?")
    assert write_question(["IBM", "X"], [edge("IBM", "X", "is headquartered in")], ["organization", "location"])
    assert write_question(["Alan Turing", "X"], [edge("Alan Turing", "X", "built")], ["person", "artifact"])
    from tasks.qa.template_writer import one_of_many_hop

    assert one_of_many_hop([edge("IBM", "Harvard Mark I", "built")], ["organization", "artifact"]) == 0
    assert one_of_many_hop([edge("IBM", "Harvard Mark I", "built")], ["person", "artifact"]) is None
    assert one_of_many_hop([edge("IBM", "Harvard Mark I", "built")]) is None  # no types: not judged


def test_neighbours_rivers_crops_topics_honours_and_collaborators_name_one_of_many():
    """Read from the demo's accepted questions: "What place borders Mesopotamia?", "the place that the Rhine flows
    through", "the event that grows wheat", "What concept concerns cell?", "the work that explains the Maillard
    reaction", "the award received by Edsger Dijkstra", "the person who Bob Kahn collaborated with", "the event
    convened by the Catholic Church": each names one of many."""
    for label, forward in [("border", False), ("borders", True), ("flows through", True), ("flows through", False),
                           ("is adjacent to", True)]:
        with pytest.raises(TemplateError, match="no single answer"):
            write_question(["Mesopotamia", "X"], [edge("Mesopotamia", "X", label, forward=forward)],
                           ["location", "location"])
    for label in ("grows", "imports", "concerns", "explains", "involves", "describes", "is about", "deals with"):
        with pytest.raises(TemplateError, match="no single answer"):
            write_question(["wheat", "X"], [edge("wheat", "X", label, forward=False)], ["species", "work"])
    for label in ("received", "won", "was awarded", "collaborated with", "campaigned in", "cooked for", "fought in"):
        with pytest.raises(TemplateError, match="no single answer"):
            write_question(["Edsger Dijkstra", "X"], [edge("Edsger Dijkstra", "X", label)], ["person", "award"])
    with pytest.raises(TemplateError, match="no single answer"):
        write_question(["Catholic Church", "X"], [edge("Catholic Church", "X", "convened")], ["organization", "event"])
    # read the other way each keeps its answer; an award's winners are many too
    assert write_question(["X", "Y"], [edge("X", "Y", "explains")], ["work", "concept"]).endswith("?")
    for label, types in [("won", ["event", "person"]), ("convened", ["event", "organization"])]:
        assert write_question(["X", "Y"], [edge("X", "Y", label, forward=False)], types).endswith("?"), label
    # an award's winners and a person's partners are many both ways
    for label, types in [("received", ["award", "person"]), ("collaborated with", ["person", "person"])]:
        with pytest.raises(TemplateError, match="no single answer"):
            write_question(["X", "Y"], [edge("X", "Y", label, forward=False)], types)


def test_a_membership_question_asks_for_the_class_and_a_base_verb_agrees_with_its_noun():
    forms = {write_question(["béchamel", "mother sauces"], [edge("béchamel", "mother sauces", "is one of the")],
                            ["food", "category"], seed=s) for s in range(8)}
    assert forms == {"Which category is béchamel one of?"}
    assert write_question(["Olympic Games", "Paris"], [edge("Olympic Games", "Paris", "host", forward=False)],
                          ["event", "location"]) in ("Which place hosts Olympic Games?", "What place hosts Olympic Games?")


def test_practitioners_and_office_holders_read_from_their_field_or_realm_name_one_of_many():
    for label in ("practises", "was queen of", "was the king of", "is president of", "was a consul of", "sailed for",
                  "cooked for", "runs over", "ruled over"):
        with pytest.raises(TemplateError, match="no single answer"):
            write_question(["Italy", "X"], [edge("Italy", "X", label, forward=False)], ["location", "person"])
    # the first of them is one, and so is the realm of a queen
    assert write_question(["Rome", "Augustus"], [edge("Rome", "Augustus", "was the first emperor of", forward=False)],
                          ["location", "person"]).endswith("?")
    assert write_question(["Margherita", "Italy"], [edge("Margherita", "Italy", "was queen of")],
                          ["person", "location"]).endswith("?")


def test_followers_of_a_work_and_what_drew_on_it_name_one_of_many():
    """"The person who built on the work of Marie-Antoine Carême" (a demo question): many did. So for whoever
    rediscovered, championed or continued someone's work, and whatever was inspired, influenced or taught by them.
    Read the other way each names one: "Whose work did Escoffier build on?"."""
    for label in ("built on the work of", "rediscovered the work of", "championed the work of",
                  "continues the work of", "is the work of", "was inspired by", "was influenced by", "were taught by"):
        with pytest.raises(TemplateError, match="no single answer"):
            write_question(["Marie-Antoine Carême", "X"], [edge("Marie-Antoine Carême", "X", label, forward=False)],
                           ["person", "person"])
    for label in ("built on the work of", "rediscovered the work of", "was inspired by", "was taught by"):
        q = write_question(["Auguste Escoffier", "Y"], [edge("Auguste Escoffier", "Y", label)], ["person", "person"])
        assert q.endswith("?") and "Auguste Escoffier" in q, (label, q)
    # a label ending in "of" is not refused for that: a country has one capital
    assert write_question(["France", "Paris"], [edge("France", "Paris", "is the capital of", forward=False)],
                          ["location", "location"]).endswith("?")


def test_an_undirected_label_reads_from_its_stored_source_whichever_end_the_walk_starts_at():
    """A graph may store a one-way label without a direction ("Romulus founded Rome", directed=false): walked from
    Rome, the hop is read backwards ("Which person founded Rome?"), never "Rome founded Romulus"."""
    from schemas.graph import Entity, Relation
    from tasks.graph.kg import KnowledgeGraph
    from tasks.qa.context import path_edges
    from tasks.qa.template_writer import fact_sentence

    kg = KnowledgeGraph("history", [Entity(domain="history", name=n, type=t) for n, t in
                                    [("Romulus", "person"), ("Rome", "location"), ("Remus", "person")]],
                        [Relation(domain="history", source="Romulus", target="Rome", relation="founded"),
                         Relation(domain="history", source="Romulus", target="Remus", relation="was the twin of")],
                        directed=False)
    from_rome, from_romulus = path_edges(kg, ["Rome", "Romulus"])[0], path_edges(kg, ["Romulus", "Rome"])[0]
    assert (from_rome.forward, from_romulus.forward) == (False, True)
    assert from_rome.triple() == from_romulus.triple() == ("Romulus", "founded", "Rome")
    assert fact_sentence(from_rome) == fact_sentence(from_romulus) == "Romulus founded Rome"
    assert write_question(["Rome", "Romulus"], [from_rome], ["location", "person"]).endswith(" founded Rome?")
    q = write_question(["Romulus", "Rome"], [from_romulus], ["person", "location"])
    assert "Romulus" in q and "Rome" not in q and q.endswith("?")
    # a symmetric label reads the same from either end
    assert fact_sentence(path_edges(kg, ["Remus", "Romulus"])[0]) == "Romulus was the twin of Remus"
