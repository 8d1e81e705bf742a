"""Rebuild the SIXTY-SEVENTH folder of held-out "foreign" graphs, docs/programs/graphs67/, from a package's data files.

Nobody on the project wrote these facts: every triple is converted from the data files that one package ships.
bibledit-data (Debian: the data of Bibledit, a Bible translation editor, which ships the sources of its lexicon
resources: OpenScriptures' XML edition of Strong's Hebrew and Chaldee dictionary of the Old Testament, `HebrewStrong.xml`,
with its key of part-of-speech codes, `PartsOfSpeech.xml`, and Ulrik Sandborg-Petersen's XML edition of Strong's
Greek dictionary of the New Testament, `strongsgreek.xml`; James Strong's dictionaries of 1890). The script only
renames fields to property labels, takes the dictionaries whole but for the rules stated in the code, and writes the
files; see docs/programs/graphs67/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_66.py) used, and the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the Debian package's `ar` archive by its
documented layout and its `data.tar.xz` with `tarfile`, its XML files with `xml.etree`); nothing is unpacked,
installed, imported or run:

    mkdir -p /tmp/graphs67-src && cd /tmp/graphs67-src
    apt-get update && apt-get download bibledit-data=5.0.994-3
    cd -  # back to the repository
    python3 bench/foreign_graphs_67.py --src /tmp/graphs67-src            # writes docs/programs/graphs67/*.jsonl
    python3 bench/foreign_graphs_67.py --src /tmp/graphs67-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output. The Debian package is that of Debian 12 "bookworm", architecture "all".)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a Hebrew, Aramaic or Greek word, and a proper name, is its entry's
transliteration (`xlit` in the Hebrew file: "ʼâb"; `translit` in the Greek file: "abarḗs"), a part of speech is the
name `PartsOfSpeech.xml` gives its code ("n-m" is "Noun Masculine"). Entries that show one transliteration are named
apart by their Strong's number in parentheses ("ʼêb (H3)", "ʼêb (H4)"), as the code says."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs67"

# The package file, as `apt-get download` names it, with its SHA-256.
BIBLEDIT_DEB = "bibledit-data_5.0.994-3_all.deb"
SOURCES = {
    BIBLEDIT_DEB: "1eb4d47e7e91d7755e4b0fe34a6ad053ccdb4597bdc5b81cb6f493d5d35a6be0",
}

DATA = "usr/share/bibledit/sources/"
HEBREW = DATA + "hebrewlexicon/HebrewStrong.xml"
PARTS = DATA + "hebrewlexicon/PartsOfSpeech.xml"
GREEK = DATA + "sblgnt/strongsgreek.xml"
NS = "{http://openscriptures.github.com/morphhb/namespace}"

# the Hebrew file's `xml:lang` of an entry's word, as the entry's type
LANG_TYPE = {"heb": "Hebrew word", "arc": "Aramaic word", "x-pn": "proper name"}
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
PRIORITY = ("Greek word", "Hebrew word", "Aramaic word", "proper name", "part of speech")
# a reference in an entry's `source` that follows the word "compare" points to a related word, not to the word's
# origin: such references are left out (counted)
COMPARE = re.compile(r"\bcompare\s*$", re.I)


def files(src: Path) -> dict[str, bytes]:
    return deb_files(package_file(src, BIBLEDIT_DEB, SOURCES), lambda p: p in (HEBREW, PARTS, GREEK))


class Hebrew:
    """Strong's Hebrew dictionary as the OpenScriptures file gives it: per entry id ("H1"), its type (by the word's
    `xml:lang`), transliteration, part-of-speech codes and the ids its `source` refers to (but "compare" ones)."""

    def __init__(self, raw: dict[str, bytes], g: Graph) -> None:
        self.parts = {text(p.findtext("Code") or ""): text(p.findtext("Name") or "")
                      for p in ET.fromstring(raw[PARTS]).iter("POS")}
        self.kind: dict[str, str] = {}
        self.xlit: dict[str, str] = {}
        self.pos: dict[str, list[str]] = {}
        self.refs: dict[str, list[str]] = {}
        for entry in ET.fromstring(raw[HEBREW]).iter(NS + "entry"):
            key = entry.get("id") or ""
            word = entry.find(NS + "w")
            if not key or word is None or word.get(XML_LANG) not in LANG_TYPE or not text(word.get("xlit") or ""):
                g.left_out["Hebrew entry without id, language or transliteration"] += 1
                continue
            self.kind[key] = LANG_TYPE[word.get(XML_LANG)]
            self.xlit[key] = text(word.get("xlit"))
            self.pos[key] = (word.get("pos") or "").split()
            refs: list[str] = []
            source = entry.find(NS + "source")
            if source is not None:
                before = source.text or ""
                for child in source:
                    if child.tag == NS + "w" and child.get("src"):
                        if COMPARE.search(" ".join(before.split())):
                            g.left_out["source reference after 'compare' (not taken)"] += 1
                        else:
                            refs.append(child.get("src"))
                    before = child.tail or ""
            self.refs[key] = refs
        self.names = named_apart(g, self.xlit, {k: k for k in self.xlit})

    def node(self, key: str) -> tuple[str, str]:
        return (self.kind[key], self.names[key])

    def add(self, g: Graph, key: str, derived: str, category: str) -> None:
        """One entry's triples: its origins (`derived`) and its parts of speech (`category`)."""
        for ref in self.refs[key]:
            if ref not in self.kind:
                g.left_out["source reference to an entry the file lacks"] += 1
            elif ref == key:
                g.left_out["source reference to the entry itself"] += 1
            else:
                g.add(self.node(key), derived, self.node(ref))
        if not self.pos[key]:
            g.left_out["Hebrew entry without a part of speech"] += 1
        for code in self.pos[key]:
            if code in self.parts:
                g.add(self.node(key), category, ("part of speech", self.parts[code]))
            else:
                g.left_out["part-of-speech code PartsOfSpeech.xml lacks"] += 1


def hebrew_wikidata(src: Path) -> Graph:
    g = Graph("hebrew_wikidata", "jsonl", priority=PRIORITY)
    hebrew = Hebrew(files(src), g)
    for key in sorted(hebrew.kind):
        hebrew.add(g, key, "derived from lexeme", "lexical category")
    return g


def greek_dbpedia(src: Path) -> Graph:
    g = Graph("greek_dbpedia", "jsonl", priority=PRIORITY)
    raw = files(src)
    hebrew = Hebrew(raw, Graph("hebrew (read only)", "jsonl"))
    root = ET.fromstring(raw[GREEK])
    entries: dict[str, ET.Element] = {}
    translit: dict[str, str] = {}
    for entry in root.iter("entry"):
        number, greek = entry.get("strongs") or "", entry.find("greek")
        if not number.isdigit() or greek is None or not text(greek.get("translit") or ""):
            # the 101 numbers Strong left unused: the file's entry says "Not Used" and has no word
            g.left_out["Greek number without a word (the file says 'Not Used')"] += 1
            continue
        key = f"G{int(number)}"
        entries[key] = entry
        translit[key] = text(greek.get("translit"))
    names = named_apart(g, translit, {k: k for k in translit})

    # each Greek entry: the Greek and Hebrew entries its derivation refers to; the Hebrew entries so reached, and all
    # those their own `source` refers to in turn, come with their origins and parts of speech
    reached: set[str] = set()
    for key in sorted(entries):
        derivation = entries[key].find("strongs_derivation")
        if derivation is None:
            g.left_out["Greek entry without a derivation"] += 1
            continue
        for ref in derivation.iter("strongsref"):
            language, number = ref.get("language"), (ref.get("strongs") or "").strip()
            if not number.isdigit() or language not in ("GREEK", "HEBREW"):
                g.left_out["derivation reference without number or language"] += 1
                continue
            target = f"{language[0]}{int(number)}"
            if language == "GREEK":
                if target not in entries:
                    g.left_out["derivation reference to a Greek entry the file lacks"] += 1
                elif target == key:
                    g.left_out["derivation reference to the entry itself"] += 1
                else:
                    g.add(("Greek word", names[key]), "derivedFrom", ("Greek word", names[target]))
            elif target not in hebrew.kind:
                g.left_out["derivation reference to a Hebrew entry the file lacks"] += 1
            else:
                g.add(("Greek word", names[key]), "derivedFrom", hebrew.node(target))
                reached.add(target)
    todo = sorted(reached)
    while todo:
        key = todo.pop()
        for ref in hebrew.refs[key]:
            if ref in hebrew.kind and ref not in reached:
                reached.add(ref)
                todo.append(ref)
    for key in sorted(reached):
        hebrew.add(g, key, "derivedFrom", "partOfSpeech")
    return g


def build_all(src: Path) -> list[Graph]:
    return [hebrew_wikidata(src), greek_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
