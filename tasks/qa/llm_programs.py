"""Programs for the LLM writer.

The template writer words programs sampled in code (``tasks.qa.programs``); the generator LLM gets them too:

- **candidates mode**: each candidate program is shown with its chain and its *pins*, the facts that single out a
  node its step alone leaves open (``render_program_candidates``). The question must state every pin, naming its
  value; the checks execute the program (``tasks.qa.checks.check_program_unique``) and look for each pin's value in
  the question (``check_pins_named``).
- **free mode**: the model chooses a path through the rendered subgraph and may name pins for its nodes, as
  ``(node, value)`` pairs. ``program_for_path`` reads them back as a program over the graph's own relations and
  executes it; a program that does not stand is refused with the reason and the facts that would single out the
  node it failed at, so the retry can add them.

A pin is held to the same rules as the sampler's (``tasks.qa.programs`` module docstring): its value is off the
chain, and no nearer the answer than the node it pins.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from schemas.programs import MAX_CONSTRAINTS_PER_NODE, ProgramConstraint, ProgramStep, QueryProgram
from schemas.qa import CandidatePath
from tasks.graph.kg import KnowledgeGraph
from tasks.meaning.profiles import ProfileBook, edge_label
from tasks.qa.programs import (
    MAX_PINS,
    PinRefusal,
    RelationIndex,
    count_in_world,
    ends_refusal,
    phrasable,
    pin_node,
    constraint_edges,
    program_edges,
    relation_index,
    stands,
)
from tasks.qa.context import keyword_text, truncate_text

#: Facts offered as a suggestion when a free-mode program leaves a node open.
SUGGESTED_PINS = 3


@dataclass(frozen=True)
class Pin:
    """A free-mode pin as the model names it: chain node ``node`` holds a fact whose other end is ``value``."""

    node: str
    value: str


def _relation(kg: KnowledgeGraph, a: str, b: str, book: ProfileBook) -> tuple[str, bool] | None:
    """``(label, read from a)`` of the first phrasable relation between ``a`` and ``b`` (name order of the graph's
    own records), or None."""
    for d in kg.relations_between(a, b):
        text, subject = edge_label(d, d.source, d.target)
        if text and phrasable(book.profile(text)):
            return text, subject == a
    return None


def _fact_text(node: str, label: str, forward: bool, value: str) -> str:
    return f"{node} -{label}-> {value}" if forward else f"{value} -{label}-> {node}"


def _suggest(kg: KnowledgeGraph, node: str, among: set[str], *, book: ProfileBook, index: RelationIndex,
             path: Sequence[str], hops_to_answer: int, need_one: bool) -> str:
    """The facts ``pin_node`` would pin ``node`` with, as a sentence for the retry, or that there are none."""
    found = pin_node(kg, node, among, book=book, index=index, exclude=path, answer=path[-1],
                     hops_to_answer=hops_to_answer, need_one=need_one, rng=random.Random(f"suggest\x00{node}"))
    if isinstance(found, PinRefusal) or not found:
        return f"no fact of {node!r} singles it out: choose another path"
    shown = "; ".join(_fact_text(node, f.label, f.forward, f.value) for f in found[:SUGGESTED_PINS])
    return f"pin {node!r} with {'this fact' if len(found) == 1 else 'these facts'}: {shown}"


def program_for_path(kg: KnowledgeGraph, path: Sequence[str], pins: Sequence[Pin], *,
                     book: ProfileBook) -> QueryProgram | PinRefusal:
    """The program a free-mode answer stands for: one step per hop over the graph's phrasable relation between the
    two nodes, each pin read as the relation between its node and its value; executed (``stands``). A refusal says
    what failed and, where a node is left open, which facts would single it out."""
    path = list(path)
    index = relation_index(kg)
    if len(path) < 2:
        return PinRefusal("no_walk", "a program needs at least one hop")
    ends = ends_refusal(index, path[0], path[-1])
    if ends is not None:
        return ends
    steps: list[ProgramStep] = []
    for i, (a, b) in enumerate(zip(path, path[1:]), start=1):
        rel = _relation(kg, a, b, book)
        if rel is None:
            return PinRefusal("unphrasable_hop", f"hop {i} ({a!r} to {b!r}) has no relation that can be put into "
                                                 "words")
        label, forward = rel
        steps.append(ProgramStep(label=label, forward=forward, kind=index.kind(b),
                                 symmetric=book.profile(label).symmetric))
    position = {n: i for i, n in enumerate(path)}
    constraints: list[ProgramConstraint] = []
    hops = len(steps)
    for pin in pins:
        at = position.get(pin.node)
        if at is None or at == 0:
            return PinRefusal("no_pin", f"the pin on {pin.node!r} is on no node after the start of the path; pin "
                                        "a node the path reaches")
        if pin.value in position:
            return PinRefusal("no_pin", f"the pin value {pin.value!r} is on the path: a pin names an entity off it")
        rel = _relation(kg, pin.node, pin.value, book)
        if rel is None:
            return PinRefusal("no_pin", f"{pin.node!r} and {pin.value!r} share no relation that can be put into "
                                        "words: a pin must be a fact of the graph")
        if at < hops:
            d = kg.shortest_path_length(pin.value, path[-1], cutoff=hops - at)
            if d is not None and d < hops - at:
                return PinRefusal("no_pin", f"the pin value {pin.value!r} is {d} hop(s) from the answer, nearer than "
                                            f"{pin.node!r}: it would be a shortcut")
        label, forward = rel
        sym = book.profile(label).symmetric
        constraints.append(ProgramConstraint(node=at, label=label, forward=forward or sym, value=pin.value,
                                             symmetric=sym))
    per_node: dict[int, int] = {}
    for c in constraints:
        per_node[c.node] = per_node.get(c.node, 0) + 1
    if any(k > MAX_CONSTRAINTS_PER_NODE for k in per_node.values()) or len(constraints) > MAX_PINS:
        return PinRefusal("two_pinned", f"{len(constraints)} pins; at most {MAX_PINS} in all and "
                                        f"{MAX_CONSTRAINTS_PER_NODE} a node")
    # Where the world has many for a step, the question must pin it even if the graph shows one (module docstring
    # of tasks.qa.programs).
    pinned = set(per_node)
    for i, step in enumerate(steps, start=1):
        profile = book.profile(step.label)
        if count_in_world(profile, step.forward) != "one" and i not in pinned:
            among = index.reach(path[i - 1], step.label, step.forward, profile.symmetric)
            return PinRefusal("no_pin", f"step {i} ({step.label!r}) names one of many in the world, so the question "
                                        "must pin " + repr(path[i]) + "; "
                              + _suggest(kg, path[i], among, book=book, index=index, path=path,
                                         hops_to_answer=hops - i, need_one=True))
    program = QueryProgram(kind="conjunction" if constraints else "chain", start=path[0], steps=steps,
                           constraints=constraints, nodes=path)
    sets = [_reached(program, index, book, i) for i in range(1, hops + 1)]
    why = stands(program, index, book)
    if why is not None:
        open_at = next((i for i, s in enumerate(sets, start=1) if len(s) != 1), None)
        hint = ""
        if open_at is not None and path[open_at] in sets[open_at - 1]:
            hint = "; " + _suggest(kg, path[open_at], sets[open_at - 1], book=book, index=index, path=path,
                                   hops_to_answer=hops - open_at, need_one=False)
        return PinRefusal("not_unique", why + hint)
    return program


def _reached(program: QueryProgram, index: RelationIndex, book: ProfileBook, i: int) -> set[str]:
    """The set step ``i`` reaches from the path's node before it (not from the whole earlier set), after its
    constraints: the nodes a pin on node ``i`` has to tell apart."""
    step = program.steps[i - 1]
    reached = index.reach(program.nodes[i - 1], step.label, step.forward, book.profile(step.label).symmetric)
    if step.kind is not None:
        reached = {x for x in reached if index.fits(x, step.kind)}
    for c in program.constraints_on(i):
        reached &= index.holders(c.label, c.forward, c.value, book.profile(c.label).symmetric)
    return reached


def render_program_candidates(kg: KnowledgeGraph, candidates: Sequence[CandidatePath], *, book: ProfileBook,
                              max_description_chars: int = 160) -> str:
    """Candidates as prompt text, one block per candidate: ``P1: A -> B -> C``, one line per hop (its label and the
    relation's description), then for a program each pin as a fact the question must state::

        P1: Ada Lovelace -> Analytical Engine -> Charles Babbage
          Ada Lovelace - Analytical Engine: wrote programs for; ...
          Analytical Engine - Charles Babbage: designed by; ...
          pin (state it, naming Royal Society): Charles Babbage -member of-> Royal Society
    """
    blocks: list[str] = []
    for c in candidates:
        edges = program_edges(kg, c.program, book) if c.program is not None else c.edges
        lines = [f"{c.id}: " + " -> ".join(c.nodes)]
        for e in edges:
            subject, _, obj = e.triple()
            kw = keyword_text(e.relation, e.keywords)
            desc = truncate_text(e.description, max_description_chars)
            lines.append(f"  {subject} - {obj}: {kw}; {desc}" if kw and desc else f"  {subject} - {obj}: {kw or desc}")
        if c.program is not None:
            for con, e in zip(c.program.constraints, constraint_edges(kg, c.program, book)):
                node = c.program.nodes[con.node]
                lines.append(f"  pin (state it, naming {con.value}): "
                             + _fact_text(node, e.relation_text() or con.label, con.forward, con.value))
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


__all__ = ["Pin", "SUGGESTED_PINS", "program_for_path", "render_program_candidates"]
