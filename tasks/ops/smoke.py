"""The smoke stage: a minimal LLM step in the shape every stage follows (build messages, call, parse to a record).

It labels a few short texts with a topic (restricted per request to an ``enum``) and the entities they name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pydantic import BaseModel, Field

from gateway.client import LLMGateway

TOPICS = ["science", "history", "cooking", "technology", "nature"]

SMOKE_TEXTS = [
    "Marie Curie shared the 1903 Nobel Prize in Physics with Pierre Curie and Henri Becquerel.",
    "The Rosetta Stone, found near Rashid in 1799, helped Jean-Francois Champollion read hieroglyphs.",
    "A roux of butter and flour thickens the bechamel sauce used in lasagne.",
    "Linus Torvalds released the first Linux kernel in 1991 while studying in Helsinki.",
    "Monarch butterflies migrate from Canada to the oyamel forests of central Mexico each autumn.",
    "Ada Lovelace wrote notes on Charles Babbage's Analytical Engine in 1843.",
]


class SmokeAnnotation(BaseModel):
    """What the model returns for one text."""

    topic: str = Field(description="the topic of the text")
    entities: list[str] = Field(default_factory=list, description="named entities in the text")


class SmokeItem(BaseModel):
    """One row of the `smoke_items` table."""

    run_id: str
    item_id: str
    text: str
    ok: bool
    topic: str | None = None
    entities: list[str] = Field(default_factory=list)
    failure: str | None = None
    cached: bool = False


def item_id(text: str) -> str:
    return "smoke-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def build_messages(text: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You label short texts. Answer in JSON."},
        {"role": "user", "content": f"Text: {text}\nGive its topic (one of: {', '.join(TOPICS)}) and the named entities it mentions."},
    ]


async def annotate(gateway: LLMGateway, texts: Sequence[str], run_id: str, role: str = "generator") -> list[SmokeItem]:
    """Label every text; a failure becomes a row with ``ok=False`` and the reason, never an exception."""
    results = await gateway.gather(
        gateway.structured(role, build_messages(t), SmokeAnnotation, enums={"topic": TOPICS}, params={"max_tokens": 160})
        for t in texts
    )
    items = []
    for text, res in zip(texts, results):
        if res.ok:
            items.append(SmokeItem(run_id=run_id, item_id=item_id(text), text=text, ok=True, topic=res.value.topic,
                                   entities=res.value.entities, cached=res.cached))
        else:
            items.append(SmokeItem(run_id=run_id, item_id=item_id(text), text=text, ok=False, failure=str(res.failure)))
    return items
