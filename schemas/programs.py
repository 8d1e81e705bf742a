"""Questions as small query programs over one graph snapshot.

A program is a start entity, a chain of steps and constraints on the nodes the chain reaches:

- a **step** follows one relation label (the text its profile is keyed under, ``tasks.meaning.profiles.edge_label``)
  from the node reached so far, ``forward`` from the profile's subject to its object, or inverse (``forward=False``)
  from its object to its subject, to nodes of its ``kind`` (the type noun the question calls them by, when it
  names one: "Which city ...");
- a **constraint** keeps, at chain node ``node`` (1 for the node the first step reaches, ..., ``len(steps)`` for the
  answer), only the nodes that have one more fact: the relation ``label`` to the fixed ``value``, the constrained node
  being the profile's subject (``forward``) or its object. At most two constraints a node.

``kind`` is ``chain`` for a plain composition and ``conjunction`` when some node is pinned by a constraint. The
program is executed in code (``tasks.qa.programs.execute``): it stands only when every step's set, after its
constraints, holds exactly one node, and ``nodes`` records the chain it reached (start first, answer last).
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ProgramKind = Literal["chain", "conjunction"]
PROGRAM_KINDS: tuple[str, ...] = ("chain", "conjunction")
#: Most constraints on one node of a program.
MAX_CONSTRAINTS_PER_NODE = 2


class ProgramStep(BaseModel):
    """One hop: the relation ``label`` walked from its subject to its object (``forward``) or back."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str = Field(min_length=1)
    forward: bool = True
    kind: str | None = Field(None, description="The type noun the question calls the node reached ('city'), "
                             "which keeps only nodes of that kind; None when it names no kind.")
    symmetric: bool = Field(False, description="The label reads the same both ways ('shares border with'): the "
                            "step follows it either way.")


class ProgramConstraint(BaseModel):
    """A fact that pins chain node ``node``: ``(node, label, value)`` when ``forward``, ``(value, label, node)``
    otherwise."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    node: int = Field(ge=1)
    label: str = Field(min_length=1)
    forward: bool = True
    value: str = Field(min_length=1)
    symmetric: bool = False


class QueryProgram(BaseModel):
    """A question's program (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ProgramKind = "chain"
    start: str = Field(min_length=1)
    steps: list[ProgramStep] = Field(min_length=1)
    constraints: list[ProgramConstraint] = Field(default_factory=list)
    nodes: list[str] = Field(default_factory=list, description="The chain the program reached, start to answer.")

    @model_validator(mode="after")
    def _consistent(self) -> QueryProgram:
        hops = len(self.steps)
        for c in self.constraints:
            if c.node > hops:
                raise ValueError(f"a constraint on node {c.node} of a {hops}-step program: nodes are 1..{hops}")
        per_node = Counter(c.node for c in self.constraints)
        crowded = sorted(n for n, k in per_node.items() if k > MAX_CONSTRAINTS_PER_NODE)
        if crowded:
            raise ValueError(f"at most {MAX_CONSTRAINTS_PER_NODE} constraints a node; node(s) {crowded} have more")
        want = "conjunction" if self.constraints else "chain"
        if self.kind != want:
            raise ValueError(f"a program {'with' if self.constraints else 'without'} constraints is a {want}, "
                             f"not a {self.kind}")
        if self.nodes and (len(self.nodes) != hops + 1 or self.nodes[0] != self.start):
            raise ValueError(f"nodes must be the start and one node per step ({hops + 1}), got {self.nodes}")
        return self

    @property
    def hops(self) -> int:
        return len(self.steps)

    @property
    def answer(self) -> str:
        return self.nodes[-1] if self.nodes else ""

    def constraints_on(self, node: int) -> list[ProgramConstraint]:
        return [c for c in self.constraints if c.node == node]

    def facts(self) -> list[tuple[str, str, str]]:
        """Every fact the program touched, ``(subject, label, object)`` as its profile reads it: the chain's, then
        the constraints'. Needs ``nodes``."""
        out: list[tuple[str, str, str]] = []
        for i, s in enumerate(self.steps):
            a, b = self.nodes[i], self.nodes[i + 1]
            out.append((a, s.label, b) if s.forward else (b, s.label, a))
        for c in self.constraints:
            x = self.nodes[c.node]
            out.append((x, c.label, c.value) if c.forward else (c.value, c.label, x))
        return out


__all__ = ["MAX_CONSTRAINTS_PER_NODE", "PROGRAM_KINDS", "ProgramConstraint", "ProgramKind", "ProgramStep",
           "QueryProgram"]
