"""Rebuild the THIRTY-EIGHTH held-out set of "foreign" graphs, docs/programs/graphs38/, from data in a Debian package.

Nobody on the project wrote these facts: every triple is converted from the dictionary that one Debian package ships,
dict-foldoc (the Free On-line Dictionary of Computing, edited by Denis Howe, in the dictd format):
`usr/share/dictd/foldoc.index` (each headword with the place of its entry) and `usr/share/dictd/foldoc.dict.dz` (the
entries: a headword line, then the definition, which opens with the entry's subjects in angle brackets and marks
every cross-reference to another entry in curly braces). The script only maps the cross-references to property
labels, samples by a fixed rule and writes the file; see docs/programs/graphs38/PROVENANCE.md. The dataset is not
one the first thirty-seven sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_36.py,
and the parts graphs37 and graphs39 built with this one) used, and the package was not used by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into a folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the Debian package's `ar` archive by its
documented layout and its `data.tar.xz` with `tarfile`; the dictzip file with `gzip`, whose format it extends);
nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs38-src && cd /tmp/graphs38-src
    apt-get update && apt-get download dict-foldoc=20230119-1
    cd -  # back to the repository
    python3 bench/foreign_graphs_38.py --src /tmp/graphs38-src            # writes docs/programs/graphs38/*.jsonl
    python3 bench/foreign_graphs_38.py --src /tmp/graphs38-src --out DIR  # elsewhere

(These files were built with Python 3.11 and the standard library alone (`tarfile`, `lzma` and `gzip`), so the
version of Python does not change the output. The Debian package is that of Debian 12 "bookworm".)

The output is deterministic for the same package file (rows sorted; the sample is a fixed set of subjects). It
prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
An entry is named by its headword as the entry's first line writes it ("C++", "Bjarne Stroustrup", "AT&T"); two
kept entries of one headword (the dictionary's homonyms, one entry a sense) are named apart by their first subject
("Aegis (operating system)"), and a cross-reference to such a headword is left out (it cannot say which entry it
means). A name standing for an entry and a subject gets the writer's " (<type>)" on the kind of lower priority."""

from __future__ import annotations

import gzip
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs38"

# The package file, as `apt-get download` names it, with its SHA-256.
SOURCES = {
    "dict-foldoc_20230119-1_all.deb": "745cbedb55c2da609cc88ee0284e9d11a67a11ae3709daf7bad0e895ac3294c3",
}


def source(src: Path, name: str) -> bytes:
    return package_file(src, name, SOURCES)


# -- 1. The Free On-line Dictionary of Computing, DBpedia camelCase (dict-foldoc) --------------------------------------
INDEX = "usr/share/dictd/foldoc.index"
DICT = "usr/share/dictd/foldoc.dict.dz"
# The sample: the entries whose FIRST subject is one of these, the subjects under which the dictionary files named
# things (a language, a company, a person, a processor ...); subject -> entity type.
KINDS = {"language": "Language", "operating system": "OperatingSystem", "company": "Company",
         "body": "Organisation", "person": "Person", "processor": "Processor", "computer": "Computer",
         "tool": "Tool", "protocol": "Protocol", "standard": "Standard", "application": "Application",
         "software": "Software", "file format": "FileFormat", "publication": "Publication", "project": "Project",
         "library": "Library", "benchmark": "Benchmark"}
PRIORITY = ("Person", "Company", "Organisation", "Language", "OperatingSystem", "Processor", "Computer", "Software",
            "Application", "Tool", "Library", "Protocol", "Standard", "FileFormat", "Benchmark", "Publication",
            "Project", "Subject")
# dictd's numbers: base 64 with this alphabet, most significant digit first
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
SUBJECTS = re.compile(r"\s*<([^<>@]+)>")  # the subjects that open a definition: "<language, humour>"
REF = re.compile(r"\{([^{}]+)\}")  # a cross-reference: "{Bjarne Stroustrup}"
CITATION = re.compile(r"\[[^\[\]]*\]")  # a bracketed citation or note: "[{Jargon File}]"
EXTERNAL = re.compile(r"\([^()]*[/:.][^()]*\)\s*$|^[a-z]+:")  # "{text (http://...)}", "{news:comp.lang.c}"


def dictd_number(digits: str) -> int:
    n = 0
    for ch in digits:
        n = n * 64 + B64.index(ch)
    return n


class Entry:
    __slots__ = ("head", "subjects", "body")

    def __init__(self, head: str, subjects: list[str], body: str) -> None:
        self.head, self.subjects, self.body = head, subjects, body


def foldoc_entries(index: bytes, data: bytes) -> tuple[dict[tuple[int, int], Entry], dict[str, set[tuple[int, int]]]]:
    """The dictionary's entries by their place, and every headword (lower case, as the index writes it) with the
    places of its entries. The index's lines are "headword TAB offset TAB length" (dictd's base-64 numbers); several
    headwords may point to one entry (its other names). An entry opens with its headword lines (unindented, up to
    the first blank or indented line: the first is the headword as written, the rest other names), then the
    definition, whose first line may open with the entry's subjects in angle brackets."""
    places: dict[str, set[tuple[int, int]]] = defaultdict(set)
    for line in index.decode("utf-8").splitlines():
        headword, offset, length = line.split("\t")
        places[text(headword)].add((dictd_number(offset), dictd_number(length)))
    entries: dict[tuple[int, int], Entry] = {}
    for offset, length in sorted({place for found in places.values() for place in found}):
        lines = data[offset:offset + length].decode("utf-8").split("\n")
        n = 1
        while n < len(lines) and lines[n].strip() and not lines[n][0].isspace():
            n += 1
        body = "\n".join(lines[n:])
        match = SUBJECTS.match(body)
        subjects = [text(s) for s in match.group(1).split(",") if text(s)] if match else []
        entries[(offset, length)] = Entry(text(lines[0]), subjects, body)
    return entries, places


def references(body: str) -> list[tuple[str, str]]:
    """(label, target) for every cross-reference of a definition: `seeAlso` in a paragraph that opens "See also",
    `source` inside a bracketed citation ("[{Jargon File}]"), `mentions` elsewhere; links to web pages left out."""
    out: list[tuple[str, str]] = []
    for paragraph in re.split(r"\n\s*\n", body):
        flat = text(paragraph)
        cited = {m.start() + r.start() for m in CITATION.finditer(flat) for r in REF.finditer(m.group(0))}
        for m in REF.finditer(flat):
            target = text(m.group(1))
            if EXTERNAL.search(target):
                out.append(("", target))
            elif flat.startswith("See also"):
                out.append(("seeAlso", target))
            elif m.start() in cited:
                out.append(("source", target))
            else:
                out.append(("mentions", target))
    return out


def sampled(e: Entry) -> bool:
    """The sample: an entry whose first subject is one of KINDS and whose headword holds a capital letter (the
    dictionary writes names with capitals, "Pentium Pro", "HP-UX", "Donald Knuth", and the general terms filed under
    the same subjects in lower case, "accumulator", "boot disk")."""
    return bool(e.head and e.subjects and e.subjects[0] in KINDS and any(ch.isupper() for ch in e.head))


def foldoc_dbpedia(src: Path) -> Graph:
    g = Graph("foldoc_dbpedia", "jsonl", priority=PRIORITY)
    files = deb_files(source(src, "dict-foldoc_20230119-1_all.deb"), lambda p: p in (INDEX, DICT))
    entries, by_head = foldoc_entries(files[INDEX], gzip.decompress(files[DICT]))
    kept = {place: e for place, e in entries.items() if sampled(e)}
    for e in entries.values():
        if not sampled(e):
            g.left_out[f"entry {'with no subject' if not e.subjects else 'not sampled'}"] += 1
    names = named_apart(g, {str(p): e.head for p, e in kept.items()}, {str(p): e.subjects[0] for p, e in kept.items()})

    def node(place: tuple[int, int]) -> tuple[str, str]:
        return KINDS[kept[place].subjects[0]], names[str(place)]

    for place, e in sorted(kept.items()):
        for subject in e.subjects:
            g.add(node(place), "subject", ("Subject", subject))
        for label, target in references(e.body):
            hits = sorted(by_head.get(target.lower(), ()))
            if not label:
                g.left_out["link to a web page or newsgroup"] += 1
            elif not hits:
                g.left_out["cross-reference to no entry (the dictionary's wish list)"] += 1
            elif len(hits) > 1:
                g.left_out["cross-reference to a headword of several entries"] += 1
            elif hits[0] not in kept:
                g.left_out["cross-reference to an entry not sampled"] += 1
            elif hits[0] == place:
                g.left_out["cross-reference to the entry itself"] += 1
            else:
                g.add(node(place), label, node(hits[0]))
    return g


def build_all(src: Path) -> list[Graph]:
    return [foldoc_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
