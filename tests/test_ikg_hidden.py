"""A hidden fact is hidden: in an IKG view, no graph tool states it. On the demo graphs and on two graphs built from
real data, every question a program gives is hidden at IKG-20% and IKG-40% (its pins are facts a view may hide,
as its hops are), and every graph tool is asked about
every node of its chain and every hidden fact. No reply may state a hidden fact: no line of a reply names both of
its ends, and the description of one end names not the other ("Tenochtitlan: Capital of the Aztec empire" in a view
without the capital fact). "Readable in text" means a passage names both ends whole: "Mexico" inside "Mexico City"
does not count."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.meaning_report import import_graph
from tasks.env.ikg import (HiddenFact, _names, critical_edges, fact_found, make_view, names_both, states_fact,
                           viewed_environment)
from tasks.env.index import HashingEmbedder
from tasks.env.text_search import TextChunk, TextHit
from tasks.env.tools import ToolEnvironment
from tasks.meaning.profiles import book_for_graph
from tasks.qa.program_writer import can_pin_with
from tasks.qa.programs import program_edges, sample_programs

ROOT = Path(__file__).resolve().parent.parent
GRAPHS = [ROOT / "flows" / "demo" / "graphs" / f"{d}.jsonl" for d in ("agriculture", "cs", "history")] + [
    ROOT / "docs" / "programs" / "graphs" / "geo_wikidata.jsonl",
    ROOT / "docs" / "programs" / "graphs2" / "films_wikidata.jsonl"]
TOOLS = ("entity_matcher", "node_info", "relation_search", "neighbor_search", "search")


def _states(reply: str, fact: HiddenFact) -> str | None:
    """The line of ``reply`` that states ``fact``, if any."""
    for line in reply.splitlines():
        if names_both(line, fact.head, fact.tail):
            return line
    return None


def _calls(node: str, relation: str, domain: str) -> list[tuple[str, dict]]:
    return [("entity_matcher", {"node_name": node, "graph_type": domain}),
            ("node_info", {"node_name": node, "graph_type": domain}),
            ("relation_search", {"entity": node, "relation": relation, "graph_type": domain}),
            ("neighbor_search", {"entity": node, "relation": relation, "graph_type": domain}),
            ("search", {"entity": node, "graph_type": domain})]


@pytest.mark.parametrize("path", GRAPHS, ids=lambda p: p.stem)
def test_no_graph_tool_states_a_hidden_fact(path):
    kg = import_graph(path)[1]
    book = book_for_graph(kg)
    env = ToolEnvironment.from_graphs([kg], HashingEmbedder(), tools=TOOLS)
    nodes = sorted(kg.nodes())
    views = asked = 0
    programs = [p for start in nodes[::max(1, len(nodes) // 30)] for hops in (1, 2)
                for p in sample_programs(kg, start, hops, count=1, book=book, max_walks=10,
                                         clause_ok=can_pin_with).programs]
    for start, p in ((p.start, p) for p in programs):
            edges = critical_edges(kg, program_edges(kg, p, book), p)  # a pin may be hidden like a hop
            for level in (0.2, 0.4):
                view = make_view(kg, f"q-{start}-{len(edges)}-{p.answer}", edges, level)
                viewed = viewed_environment(env, view, kg.domain)
                views += 1
                for fact in view.facts:
                    for node in dict.fromkeys([*p.nodes, fact.head, fact.tail]):
                        for tool, args in _calls(node, fact.relation, kg.domain):
                            # the reply's echo of the caller's own query ("closest to "gave the title Augustus
                            # to"") is what the caller wrote, not what the graph says
                            reply = viewed.call(tool, args).text.replace(f'"{fact.relation}"', '""')
                            asked += 1
                            line = _states(reply, fact)
                            assert line is None, (view.view_id, fact.triple, tool, node, line)
                            if tool == "node_info" and node in (fact.head, fact.tail):
                                other = fact.tail if node == fact.head else fact.head
                                desc = next((x for x in reply.splitlines() if x.startswith("Description:")), "")
                                assert not names_both(desc.replace("Description:", node, 1), node, other), (
                                    view.view_id, fact.triple, desc)
    assert views >= 10 and asked >= 200
    pinned = sum(1 for p in programs if p.constraints)
    assert pinned >= 1 or path.stem in ("agriculture", "cs", "history")  # the real-data graphs' pins are asked too


def test_the_complete_graph_does_state_what_a_view_hides():
    """The check above can fail: the same replies in the complete graph name both ends of the fact."""
    kg = import_graph(GRAPHS[3])[1]
    book = book_for_graph(kg)
    env = ToolEnvironment.from_graphs([kg], HashingEmbedder(), tools=TOOLS)
    stated = 0
    for start in sorted(kg.nodes())[:200]:
        for p in sample_programs(kg, start, 1, count=1, book=book, max_walks=5, clause_ok=can_pin_with).programs:
            view = make_view(kg, f"q-{start}", program_edges(kg, p, book), 0.2)
            fact = view.facts[0]
            reply = env.call("node_info", {"node_name": fact.head, "graph_type": kg.domain}).text
            stated += _states(reply, fact) is not None
    assert stated >= 5


def test_readable_in_text_needs_both_names_whole():
    fact = HiddenFact("maize", "was domesticated in", "Mexico", ("maize", "was domesticated in", "Mexico"))
    city = TextHit(chunk=TextChunk(chunk_id="c1", text="maize was domesticated long before Mexico City grew.",
                                   title="t"), score=1.0, lexical_rank=1, dense_rank=1)
    country = TextHit(chunk=TextChunk(chunk_id="c2", text="maize was domesticated in Mexico about 9000 years ago.",
                                      title="t"), score=1.0, lexical_rank=1, dense_rank=1)
    assert fact_found(fact, [city]) is None
    assert fact_found(fact, [city, country]) == "c2"


def fact(head: str, relation: str, tail: str) -> HiddenFact:
    return HiddenFact(head, relation, tail, (head, relation, tail))


#: Sentences that state their fact: a word of the relation links the ends (any inflection or part of speech), or
#: nothing but a preposition, an apposition or a possessive stands between them, or a place opens the sentence and
#: the other end is its subject, or two people are one joint subject of a relation done together.
STATED = [
    ("In 1906 Marie Curie, working at the University of Paris, took over her husband's chair.",
     fact("Marie Curie", "worked at", "University of Paris")),
    ("The railway was built with funding from the Imperial Treasury.", fact("Imperial Treasury", "funded", "railway")),
    ("After defeating Carthage at the Battle of Zama, Rome ruled the western Mediterranean.",
     fact("Carthage", "was defeated at", "Battle of Zama")),
    ("Wilhelm Maybach of the engine maker Daimler refined the carburettor.", fact("Wilhelm Maybach", "worked at", "Daimler")),
    ("Johannes Kepler, a mathematician in Prague, published his laws in 1609.", fact("Johannes Kepler", "lived in", "Prague")),
    ("Emmy Noether, then at the University of Göttingen, proved her theorem in 1915.",
     fact("Emmy Noether", "worked at", "University of Göttingen")),
    ("The vineyards of the Douro valley in northern Portugal are terraced.", fact("Douro valley", "is located in", "Portugal")),
    ("At Bell Labs, Claude Shannon wrote a theory of communication.", fact("Claude Shannon", "worked at", "Bell Labs")),
    ("Walter Brattain and John Bardeen at Bell Labs built the first transistor.",
     fact("Walter Brattain", "worked at", "Bell Labs")),
    ("In 1947 Walter Brattain and John Bardeen built the first transistor.",
     fact("Walter Brattain", "collaborated with", "John Bardeen")),
    ("Frederick Banting of the University of Toronto and the student Charles Best isolated insulin in 1921.",
     fact("Frederick Banting", "collaborated with", "Charles Best")),
    ("The noble gases of the periodic table: helium, neon, argon and krypton.", fact("argon", "is one of the", "noble gases")),
    ("Niels Bohr founded an institute in Copenhagen. His student Werner Heisenberg worked there in 1926.",
     fact("Werner Heisenberg", "studied under", "Niels Bohr")),
    ("Ida Tarbell grew up in the oil region of Pennsylvania. She later wrote for The American Magazine.",
     fact("Ida Tarbell", "wrote for", "The American Magazine")),
]

#: Sentences that name both ends and do not state the fact: a list, another relation's verb (the relation's word
#: inside an end's own name does not count), two clauses, a pointing word that cannot point at the end, two names
#: governed by a preposition, a joint subject for a relation not done together.
NOT_STATED = [
    ("The harvest brought oats, wild rice, rice and millet.", fact("wild rice", "is a species of", "rice")),
    ("The new Food Standards Agency banned the dye in Ireland in 2004.",
     fact("Food Standards Agency", "is an agency of", "Ireland")),
    ("After beating Prussia at Jena he entered Berlin, and in 1810 Louis Bonaparte gave up his throne.",
     fact("Louis Bonaparte", "ruled", "Prussia")),
    ("After the war Jean Bartik moved to the University of Pennsylvania, where she wrote programs for the BINAC.",
     fact("BINAC", "was built at", "University of Pennsylvania")),
    ("From Peru the potato spread north and south across the Andes.", fact("Peru", "is part of", "Andes")),
    ("Rosalind Gray argued that chloroplasts descend from cyanobacteria. Her theory was confirmed once their genes "
     "were found to resemble those of bacteria.", fact("cyanobacteria", "are a group of", "bacteria")),
    ("The talks between Sparta and Athens failed.", fact("Sparta", "cooperated with", "Athens")),
    ("Spain and Portugal signed the treaty in 1494.", fact("Spain", "borders", "Portugal")),
    ("Farming in Britain changed rapidly. In 1701 Jethro Tull, a farmer in Berkshire, built a drill.",
     fact("Berkshire", "is a county of", "Britain")),
]


@pytest.mark.parametrize("text,hidden", STATED, ids=[f.relation + " " + f.tail for _, f in STATED])
def test_a_passage_states_a_fact_when_the_sentence_links_its_ends(text, hidden):
    assert states_fact(text, hidden)


@pytest.mark.parametrize("text,hidden", NOT_STATED, ids=[f.relation + " " + f.tail for _, f in NOT_STATED])
def test_naming_both_ends_without_linking_them_does_not_state_a_fact(text, hidden):
    assert names_both(text, hidden.head, hidden.tail)  # the names rule alone would keep it
    assert not states_fact(text, hidden)
