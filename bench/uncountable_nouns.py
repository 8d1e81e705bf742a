"""Build tasks/meaning/uncountable_nouns.txt: the one-word abstract nouns English uses without "a", measured.

A machine label such as ``confers_resistance_to`` or ``encodes_enzyme_for`` drops the article before its noun; the
label reader puts "a" back before a countable noun ("encodes an enzyme for") and leaves a noun English uses bare as
it is ("confers resistance to", not "confers a resistance to"). ``tasks/meaning/mass_nouns.txt`` lists the common
uncountable nouns by hand; this script measures the rest. A noun is kept when

- its first WordNet sense names an idea, an act or a quality (``tasks/meaning/abstract_nouns.txt``, built by
  ``bench/wordnet_tables.py``: the concrete nouns whose plural is rare for other reasons, "chairman", "aircraft",
  "anniversary", stay out);
- it is alphabetic, at least four letters, and its own noun lemma in lemminflect's word list (not a plural such as
  "tactics" or "legs");
- it is common: a Zipf frequency of at least ``MIN_ZIPF`` in wordfreq's English list (a word met about once in a
  million words or more);
- its plural is rare beside it: the plural lemminflect gives is at most ``10 ** MAX_PLURAL_LOG`` times as frequent as
  the singular (about 3%), or below wordfreq's list, or the same word ("research"). On the hand list this rule keeps
  every noun that wordfreq has; "resistance" (plural 1.4% as frequent), "evidence" and "equipment" are kept,
  "tolerance" (5.5%), "capital" (3.9%), "role" and "chapter" are not.

By hand only: no test imports this module. wordfreq's word lists ship in its wheel (wordfreq 3.1.1,
``wordfreq/data/large_en.msgpack.gz``); nothing is imported from wordfreq (the file is read with ``zipfile``, ``gzip``
and ``msgpack``, the format wordfreq documents: a header, then buckets of words, bucket ``i`` holding the words of
frequency ``10 ** (-i / 100)``):

    pip download --no-deps -d /tmp/wheels wordfreq==3.1.1
    python bench/uncountable_nouns.py /tmp/wheels/wordfreq-3.1.1-py3-none-any.whl

The script checks the wheel's SHA-256 and stops on any other file. The output is deterministic (words sorted).
wordfreq's data is Robyn Speer's, CC BY-SA 4.0 (the wheel's README: built from Wikipedia, subtitles, news, books,
web text, Twitter and Reddit); the list records which words pass the measure above, with that credit in its header.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import sys
import zipfile
from pathlib import Path

import msgpack
from lemminflect import getAllLemmas, getInflection

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tasks" / "meaning" / "uncountable_nouns.txt"
ABSTRACT = ROOT / "tasks" / "meaning" / "abstract_nouns.txt"
WHEEL_SHA256 = "4b1c6ecffc6198be3396d5cf871c4423ca71c907c231348d352dd54d62b97473"
MEMBER = "wordfreq/data/large_en.msgpack.gz"
#: The least Zipf frequency (log10 of a word's count per billion words) a kept noun has.
MIN_ZIPF = 3.0
#: The most log10(plural frequency / singular frequency) a kept noun has.
MAX_PLURAL_LOG = -1.5


def buckets(wheel: Path) -> dict[str, int]:
    """Each English word's bucket (its frequency is ``10 ** (-bucket / 100)``)."""
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        raise SystemExit(f"{wheel}: SHA-256 {digest}, expected {WHEEL_SHA256} (wordfreq 3.1.1's wheel)")
    with zipfile.ZipFile(wheel) as z:
        header, *rest = msgpack.loads(gzip.decompress(z.read(MEMBER)), raw=False)
    if header != {"format": "cB", "version": 1}:
        raise SystemExit(f"{MEMBER}: unknown header {header!r}")
    out: dict[str, int] = {}
    for i, words in enumerate(rest):
        for w in words:
            out.setdefault(w, i)
    return out


def uncountable(freq: dict[str, int], candidates: set[str]) -> list[str]:
    kept = []
    for word in sorted(candidates):
        if not (word.isalpha() and word.islower() and len(word) >= 4) or word not in freq:
            continue
        if 9 - freq[word] / 100 < MIN_ZIPF:
            continue
        lemmas = getAllLemmas(word).get("NOUN")
        if not lemmas or lemmas[0] != word:
            continue
        plural = getInflection(word, "NNS")
        if plural and plural[0] != word and plural[0] in freq and \
                (freq[word] - freq[plural[0]]) / 100 >= MAX_PLURAL_LOG:
            continue
        kept.append(word)
    return kept


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel", type=Path, help="wordfreq-3.1.1-py3-none-any.whl")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    abstract = {w.strip() for w in ABSTRACT.read_text(encoding="utf-8").splitlines()
                if w.strip() and not w.startswith("#")}
    words = uncountable(buckets(args.wheel), abstract)
    args.out.write_text("\n".join([
        "# one-word abstract nouns English uses without \"a\": first WordNet sense an idea, an act or a quality",
        f"# (abstract_nouns.txt), Zipf frequency >= {MIN_ZIPF}, plural at most 10^{MAX_PLURAL_LOG} times as frequent "
        "as the singular",
        "# by bench/uncountable_nouns.py from wordfreq 3.1.1's English list (Robyn Speer, CC BY-SA 4.0) and "
        "lemminflect",
        *words]) + "\n", encoding="utf-8")
    print(f"{len(words)} words written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
