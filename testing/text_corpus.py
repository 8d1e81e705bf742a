"""A deterministic synthetic text corpus for the text-search benchmarks (``bench/bench_text_search.py``,
``bench/bench_bm25_libs.py``).

Each chunk is about 120 words: sentences of the demo corpus (``flows/demo/corpus``) with a share of their words
swapped for words drawn from the demo corpus's own vocabulary by its frequency (Zipf-like, as real text is), plus
one fact sentence naming two generated entities and a relation ("Velmora Quist founded the Tarn Halvik
Institute in 1874."). The fact sentences give every chunk a query with a known answer: the head entity and the
relation, as an agent asks ``web_search`` when the graph lacks the fact.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tasks.env.text_search import TextChunk

DEMO_CORPUS = Path(__file__).resolve().parent.parent / "flows" / "demo" / "corpus"
RELATIONS = ("founded", "was born in", "studied at", "married", "discovered", "invented", "worked with",
             "was named after", "succeeded", "wrote", "designed", "led", "grew up in", "taught at")  # fmt: skip
_SYLLABLES = ("ka ri mo ve la th or en quis hal vik tar dun bel sor mi ra no el ash fen gor lu pa dri "
              "wen cas tor bri ol un ys").split()
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


@dataclass(frozen=True)
class Fact:
    """The query an agent would write for a chunk's fact, and the chunk (its index) that states it."""

    query: str
    head: str
    relation: str
    tail: str
    chunk: int


def _demo_sentences() -> tuple[list[str], list[str], list[int]]:
    """The demo corpus's sentences, and its vocabulary with each word's count."""
    sentences: list[str] = []
    words: Counter[str] = Counter()
    for path in sorted(DEMO_CORPUS.rglob("*.md")):
        for para in path.read_text(encoding="utf-8").split("\n"):
            if para.startswith("#") or not para.strip():
                continue
            for s in re.split(r"(?<=[.!?])\s+", para.strip()):
                if len(s.split()) >= 6:
                    sentences.append(s)
                    words.update(_WORD.findall(s))
    vocab = sorted(words)
    return sentences, vocab, [words[w] for w in vocab]


def _name(rng: random.Random, parts: int) -> str:
    return " ".join("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))).title() for _ in range(parts))


def synthetic_chunks(n: int, seed: int = 0, *, words: int = 120, swap: float = 0.3) -> tuple[list[TextChunk], list[Fact]]:
    """``n`` chunks of about ``words`` words (ids ``syn-<i>``) and one fact per chunk; the same for the same
    ``n`` and ``seed``. ``swap`` is the share of words replaced by vocabulary words drawn by frequency."""
    rng = random.Random(seed)
    sentences, vocab, weights = _demo_sentences()
    chunks: list[TextChunk] = []
    facts: list[Fact] = []
    pool = rng.choices(vocab, weights=weights, k=200_000)  # frequency-weighted draws, reused cyclically
    at = 0
    for i in range(n):
        head, tail = _name(rng, 2), _name(rng, rng.randint(1, 3))
        relation = rng.choice(RELATIONS)
        body: list[str] = []
        while sum(len(s.split()) for s in body) < words:
            toks = rng.choice(sentences).split()
            for j in range(len(toks)):
                if rng.random() < swap:
                    toks[j] = pool[at % len(pool)]
                    at += 1
            body.append(" ".join(toks))
        body.insert(rng.randrange(len(body) + 1), f"{head} {relation} {tail} in {1500 + rng.randrange(500)}.")
        chunks.append(TextChunk(f"syn-{i:06d}", " ".join(body), f"{rng.choice(vocab).title()} {i}", "bench"))
        facts.append(Fact(f"{head} {relation}", head, relation, tail, i))
    return chunks, facts


__all__ = ["Fact", "RELATIONS", "synthetic_chunks"]
