"""Where a question's program goes after generation: its pins are facts an IKG view may hide (and every graph tool
then hides them), the gold facts of evaluation include them, and the gold-path verifier reads them."""

from __future__ import annotations

import json

from eval.evaluate import gold_context_messages, gold_triples, pin_triples
from schemas.programs import QueryProgram
from schemas.qa import QA, GoldPath
from tasks.env.ikg import ViewedGraph, critical_edges, make_view, pin_edges, view_for_qa
from tasks.graph.kg import KnowledgeGraph
from tasks.meaning.profiles import book_for_graph
from tasks.qa.gold_verify import verify_messages
from tasks.qa.llm_programs import Pin, program_for_path
from tasks.qa.programs import program_edges
from tests.test_programs import graph

EUROPE = [
    ("France", "capital", "Paris"), ("Germany", "capital", "Berlin"), ("Spain", "capital", "Madrid"),
    ("France", "continent", "Europe"), ("Germany", "continent", "Europe"), ("Spain", "continent", "Europe"),
    ("France", "borders", "Spain"), ("France", "borders", "Germany"),
    ("Germany", "borders", "Austria"), ("Italy", "borders", "Austria"),
]
TYPES = {"France": "country", "Germany": "country", "Spain": "country", "Italy": "country", "Austria": "country",
         "Paris": "city", "Berlin": "city", "Madrid": "city", "Europe": "continent"}


def _graph() -> KnowledgeGraph:
    return graph(EUROPE, TYPES)


def _pinned_qa(kg: KnowledgeGraph) -> QA:
    book = book_for_graph(kg)
    program = program_for_path(kg, ["Spain", "Europe", "Germany"], [Pin("Germany", "Austria")], book=book)
    assert isinstance(program, QueryProgram) and program.constraints
    return QA(qa_id="qa-pinned", domain="geo", seed="Spain", hop_class="1-2", path=program.nodes,
              path_edges=program_edges(kg, program, book), answer="Germany", program=program,
              question="Which country shares a continent with Spain and borders Austria?")


def test_a_pin_is_a_fact_the_view_may_hide_and_then_no_walk_reads_it():
    kg = _graph()
    qa = _pinned_qa(kg)
    pins = pin_edges(kg, qa.program)
    assert [e.triple() for e in pins] == [("Germany", "borders", "Austria")]
    facts = critical_edges(kg, qa.path_edges, qa.program)
    assert len(facts) == 3 and facts[-1] == pins[0]
    # the highest level hides every fact of three (0.9 * 3 rounds to 3), the pin too
    view = view_for_qa(kg, qa, 0.9)
    assert ["Germany", "borders", "Austria"] in view.hidden_triples()
    viewed = ViewedGraph(kg, view)
    assert "Austria" not in viewed.neighbor_names("Germany") and "Germany" not in viewed.neighbor_names("Austria")
    assert "Austria" in kg.neighbor_names("Germany")  # the complete graph shows it: the check above can fail
    # a path fact alone cannot be the only kind hidden: at a level that hides one fact, the three are the choices
    hidden = {tuple(t) for lv in (0.2, 0.3, 0.1) for t in view_for_qa(kg, qa, lv).hidden_triples()}
    assert hidden <= {tuple(e.triple()) for e in facts}


def test_views_made_from_the_path_alone_never_hide_a_pin():
    kg = _graph()
    qa = _pinned_qa(kg)
    view = make_view(kg, qa.qa_id, qa.path_edges, 0.9)
    assert ["Germany", "borders", "Austria"] not in view.hidden_triples()


def test_evaluation_gives_the_pins_with_the_gold_facts():
    kg = _graph()
    qa = _pinned_qa(kg)
    assert pin_triples(qa) == [("Germany", "borders", "Austria")]
    paths = gold_triples(qa)
    assert paths == [[("Spain", "continent", "Europe"), ("Germany", "continent", "Europe"),
                      ("Germany", "borders", "Austria")]]
    # a stored gold path gets them too, once
    gp = GoldPath(qa_id=qa.qa_id, rank=0, path=qa.path, triples=[tuple(t) for t in paths[0][:2]],
                  verdict="valid")
    assert gold_triples(qa, [gp]) == paths
    prompt = gold_context_messages(qa, paths[0])[1]["content"]
    assert "- Germany | borders | Austria" in prompt
    chain = qa.model_copy(update={"program": None})
    assert pin_triples(chain) == [] and gold_triples(chain) == [paths[0][:2]]


def test_the_gold_path_verifier_reads_the_pins():
    kg = _graph()
    qa = _pinned_qa(kg)
    gp = GoldPath(qa_id=qa.qa_id, rank=0, path=qa.path,
                  triples=[e.triple() for e in qa.path_edges], verdict="unverified")
    text = verify_messages(qa, [("G1", gp)])[1]["content"]
    assert "single out a node of its chain" in text and "    Germany -> Austria: borders" in text
    plain = verify_messages(qa.model_copy(update={"program": None}), [("G1", gp)])[1]["content"]
    assert "single out" not in plain


def _ikg_env(kg: KnowledgeGraph, texts: list[str]):
    from tasks.distill.ikg_template import IKG_TEMPLATE_TOOLS
    from tasks.env.index import HashingEmbedder
    from tasks.env.text_search import TextChunk, TextIndex
    from tasks.env.tools import ToolEnvironment

    chunks = [TextChunk(f"geo-{i}", t, t.split()[0]) for i, t in enumerate(texts)]
    return ToolEnvironment.from_graphs([kg], HashingEmbedder(), tools=IKG_TEMPLATE_TOOLS,
                                       texts={"geo": TextIndex(chunks, None)})


TEXTS = ["Spain is a country on the continent of Europe.", "Germany is a country of Europe, the continent.",
         "Germany borders Austria in the south.", "Madrid is the capital of Spain."]


def test_the_ikg_template_walk_checks_a_hidden_pin_in_the_text_and_a_shown_one_in_the_graph():
    from tasks.distill.ikg_template import ikg_template_trajectory
    from tasks.distill.template import ToolStep, thought_problems
    from tasks.env.ikg import viewed_environment

    kg = _graph()
    qa = _pinned_qa(kg)
    env = _ikg_env(kg, TEXTS)
    pin_only = make_view(kg, qa.qa_id, pin_edges(kg, qa.program), 0.5)  # the pin hidden, the hops shown
    assert pin_only.hidden_triples() == [["Germany", "borders", "Austria"]]
    traj = ikg_template_trajectory(qa, pin_only, viewed_environment(env, pin_only, "geo"))
    assert traj.status == "accepted", traj.detail
    calls = [(c["function"]["name"], json.loads(c["function"]["arguments"]).get("entity"))
             for m in traj.messages for c in (m.get("tool_calls") or [])]
    assert calls == [("entity_matcher", None), ("node_info", None), ("node_info", None),
                     ("neighbor_search", "Germany"), ("web_search", None)]
    # the graph still shows France among Germany's neighbours by that label, never Austria
    tool_replies = [m["content"] for m in traj.messages if m["role"] == "tool"]
    assert "Austria" not in tool_replies[3] and "Austria" in tool_replies[4]
    steps = [ToolStep(m["name"], {}, m["content"], True, "") for m in traj.messages if m["role"] == "tool"]
    assert thought_problems(traj.reasoning, qa.question, qa.path, steps) is None
    # a text that never states the pin: the walk reaches Germany but cannot check it
    blind = _ikg_env(kg, TEXTS[:2] + TEXTS[3:])
    missed = ikg_template_trajectory(qa, pin_only, viewed_environment(blind, pin_only, "geo"))
    assert missed.status == "rejected" and missed.reject_reason == "pin_missing" and "'Austria'" in missed.detail
    # a view that shows the pin: the graph's own reply about Germany lists it
    hop_only = make_view(kg, qa.qa_id, qa.path_edges[:1], 0.5)
    shown = ikg_template_trajectory(qa, hop_only, viewed_environment(env, hop_only, "geo"))
    assert shown.status == "accepted", shown.detail
    names = [c["function"]["name"] for m in shown.messages for c in (m.get("tool_calls") or [])]
    assert names == ["entity_matcher", "neighbor_search", "web_search", "node_info", "node_info"]
    assert "Austria" in [m["content"] for m in shown.messages if m["role"] == "tool"][-1]
