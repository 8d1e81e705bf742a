"""Which seeds a generation run samples, and which first: one rule for ``qa generate`` and the meaning report.

A seed is kept where a bare candidate path opens (``opens_a_path``) or, with the template writer, where a program
stands (``program_depth`` at least 1). Among the first ``window`` × n kept seeds in hash-rank order, those where the
longest program stands come first (``tasks.qa.seeds.sample_seeds``' ``prefer``): the sets this factory feeds are
mostly two hops or more, and a seed whose every program is one hop long gives only lookups. The depth of a seed is
computed once.

``arrange`` then orders the sampled seeds so that the slots ``assign_hop_classes`` gives the 3+ class (by position)
hold the seeds where a program of three steps stands, and the 1-2 slots the deepest of the rest: a seed is not spent
on a 3+ job it cannot do while a seed that can goes to a 1-2 job. The order is stored as ``sample_rank``, so a
resumed run plans the same jobs without loading the graph.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from schemas.programs import QueryProgram
from schemas.qa import Seed
from tasks.graph.kg import KnowledgeGraph
from tasks.meaning.profiles import ProfileBook
from tasks.qa.candidates import opens_a_path
from tasks.meaning.names import node_type_noun
from tasks.qa.generate import assign_hop_classes, written_name
from tasks.qa.program_writer import can_pin_with, write_program_question
from tasks.qa.template_writer import TemplateError
from tasks.qa.programs import program_depth

#: How far past the first n kept seeds (in rank order) the preference for deep seeds looks: n × this many.
PREFER_WINDOW = 5


class SeedRule:
    """``keep(node)`` and ``prefer(node)`` for ``sample_seeds`` over one graph (module docstring)."""

    def __init__(self, kg: KnowledgeGraph, book: ProfileBook, *, programs: bool, scoped: bool = False,
                 whole: bool = True) -> None:
        self.kg, self.book, self.programs, self.scoped, self.whole = kg, book, programs, scoped, whole
        self._depth: dict[str, int] = {}

    def depth(self, node: str) -> int:
        """The most steps of a program that stands from ``node`` and that the template writer can put into words
        (0: none; 0 without programs)."""
        if not self.programs:
            return 0
        if node not in self._depth:
            self._depth[node] = program_depth(self.kg, node, book=self.book, clause_ok=can_pin_with,
                                              writable=self._writable, scoped=self.scoped, whole=self.whole)
        return self._depth[node]

    def _writable(self, program: QueryProgram) -> bool:
        try:
            write_program_question(program, [node_type_noun(self.kg, n) for n in program.nodes], book=self.book,
                                   name_of=lambda n: written_name(self.kg, n))
        except TemplateError:
            return False
        return True

    def keep(self, node: str) -> bool:
        return opens_a_path(self.kg, node, book=self.book) or self.depth(node) > 0

    def prefer(self, node: str) -> int:
        return self.depth(node)


def arrange(seeds: Sequence[Seed], hop_mix: dict[str, float], depth: Callable[[str], int]) -> list[Seed]:
    """``seeds`` reordered for their hop classes (module docstring), ``sample_rank`` renumbered 0, 1, ..."""
    classes = assign_hop_classes(seeds, hop_mix)
    pool = sorted(seeds, key=lambda s: (-depth(s.node), s.sample_rank))
    slots: list[Seed | None] = [None] * len(seeds)
    for i, c in enumerate(classes):  # 3+ slots: seeds where three steps stand, deepest first
        if c == "3+" and pool and depth(pool[0].node) >= 3:
            slots[i] = pool.pop(0)
    for i, c in enumerate(classes):  # 1-2 slots: the deepest of the rest
        if c == "1-2" and pool:
            slots[i] = pool.pop(0)
    for i in range(len(slots)):  # 3+ slots no seed can fill: what is left
        if slots[i] is None:
            slots[i] = pool.pop(0)
    return [s.model_copy(update={"sample_rank": i}) for i, s in enumerate(slots) if s is not None]


__all__ = ["PREFER_WINDOW", "SeedRule", "arrange"]
