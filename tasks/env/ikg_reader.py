"""The IKG reader check: does the passage the text tool shows state the hidden fact?

``tasks.env.ikg.states_fact`` decides by names (one sentence names both ends whole, or points back to the one
before); it cannot tell a sentence that states the fact from one that names both ends for another reason ("Haber
worked with Bosch" for "Haber | worked at | BASF"), nor a fact that is only implied. Where an endpoint reads (the
verifier role, not the embedded model), each passage the names rule keeps is also put to it: the fact as a sentence,
the passage as the agent would see it, and the question whether a reader of that passage alone learns that the fact
holds. The answer must quote the sentence that states it; a quote that is not in the passage counts as "no".

A failed call (the endpoint down, no parsable answer after the re-asks) is "no" too: a variant is then not kept,
and the run's line counts the failures, so nothing is lost without a word.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from gateway.client import LLMGateway
from tasks.env.ikg import HiddenFact, PassageReader

#: The schema name of the reader's answer (a test endpoint scripts its replies by it).
READER_SCHEMA = "PassageReading"

SYSTEM = ("You check reading-comprehension evidence. Given a passage and a fact, say whether a careful reader of "
          "the passage alone, with no outside knowledge, learns that the fact holds. The passage may word the "
          "relation differently; naming both things without saying how they relate is not stating the fact.")


class PassageReading(BaseModel):
    """The reader's answer: whether the passage states the fact, and the sentence of the passage that does."""

    model_config = ConfigDict(extra="forbid")

    states: bool
    quote: str = Field("", max_length=1000, description="The passage's sentence that states the fact, copied "
                       "exactly; empty when it does not state it.")


def fact_sentence(fact: HiddenFact) -> str:
    """The fact as the reader is shown it: ``head | relation | tail`` in words."""
    return f"{fact.head} — {fact.relation} — {fact.tail}"


def reader_messages(passage: str, fact: HiddenFact) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": (
            f"Fact: {fact_sentence(fact)}\n\nPassage:\n{passage}\n\n"
            "Does the passage state this fact? Reply as JSON: "
            '{"states": true or false, "quote": "the sentence that states it, copied exactly, or empty"}'
        )},
    ]


def _squash(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.casefold()).split())


def quote_in(passage: str, quote: str) -> bool:
    """Whether ``quote`` is a stretch of ``passage`` (case, spacing and punctuation aside), and not empty."""
    q = _squash(quote)
    return bool(q) and q in _squash(passage)


@dataclass
class ReaderVerdicts:
    """Verdicts of one reading round, by (passage, fact): ``True`` when the reader said the passage states the fact
    and quoted it from the passage; counts for the run's line."""

    verdicts: dict[tuple[str, tuple[str, str, str]], bool] = field(default_factory=dict)
    stated: int = 0
    not_stated: int = 0
    failed: int = 0

    def reads(self, passage: str, fact: HiddenFact) -> bool:
        """The ``PassageReader`` of these verdicts: a passage nobody read is not confirmed."""
        return self.verdicts.get((passage, fact.triple), False)

    def line(self, domain: str) -> str:
        return (f"IKG {domain}: the verifier read {self.stated + self.not_stated + self.failed} passages kept by "
                f"names: {self.stated} state their fact, {self.not_stated} do not, {self.failed} could not be read "
                "(those variants are not kept)")


async def read_passages(gateway: LLMGateway, pairs: Sequence[tuple[str, HiddenFact]], *,
                        role: str = "verifier") -> ReaderVerdicts:
    """Ask ``role`` about each distinct (passage, fact) of ``pairs`` (module docstring)."""
    distinct = list(dict.fromkeys((p, f) for p, f in pairs))
    results = await gateway.gather(gateway.structured(role, reader_messages(p, f), PassageReading,
                                                      name=READER_SCHEMA) for p, f in distinct)
    out = ReaderVerdicts()
    for (passage, fact), res in zip(distinct, results):
        if res.value is None:
            out.failed += 1
            ok = False
        else:
            ok = res.value.states and quote_in(passage, res.value.quote)
            out.stated += ok
            out.not_stated += not ok
        out.verdicts[(passage, fact.triple)] = ok
    return out


def recording_reader(into: list[tuple[str, HiddenFact]]) -> PassageReader:
    """A reader that says yes to every passage and remembers it: a first pass collects what the verifier must read."""

    def reads(passage: str, fact: HiddenFact) -> bool:
        into.append((passage, fact))
        return True

    return reads


__all__ = ["READER_SCHEMA", "PassageReading", "ReaderVerdicts", "fact_sentence", "quote_in", "read_passages",
           "reader_messages", "recording_reader"]
