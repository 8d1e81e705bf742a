"""Rebuild the EIGHTY-FIRST folder of held-out "foreign" graphs, docs/programs/graphs81/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
iconclass (PyPI: the Python interface to ICONCLASS, "a multilingual subject classification system for cultural
content" (the wheel's METADATA; made by Hans Brandhorst and Etienne Posthumus), the notation system for the subjects
of works of art, which ships the whole classification as one zip file of text files: every notation with its
children and cross-references, its text in six languages and its keywords). The script only renames
fields to property labels, takes the divisions named below whole but for the rules stated in the code, and writes the
file; see docs/programs/graphs81/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_80.py) used, and the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the wheel with `zipfile`, in it the zip file
`iconclass/data.zip` with `zipfile` again, and in that `notations.txt`, `txt_en.txt` and `kw_en.txt` as text);
nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs81-src && cd /tmp/graphs81-src
    pip download --no-deps iconclass==0.29
    cd -  # back to the repository
    python3 bench/foreign_graphs_81.py --src /tmp/graphs81-src            # writes docs/programs/graphs81/*.jsonl
    python3 bench/foreign_graphs_81.py --src /tmp/graphs81-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the divisions taken whole but for the rules
stated in the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a notation is its English text ("Aeneas, guided by the Sibyl, enters the
underworld through the cave of Avernus", "Aminta"), a keyword the English keyword as the file writes it ("Aeneas",
"underworld"). Notations of one division that show one text are named apart by their notation in parentheses, as the
code says. A notation's type is its main division, in lower case ("literature", "classical mythology and ancient
history"), as ICONCLASS's first digit places it."""

from __future__ import annotations

import io
import re
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs81"

# The package file, as `pip download` names it, with its SHA-256.
ICONCLASS_WHEEL = "iconclass-0.29-py3-none-any.whl"
SOURCES = {
    ICONCLASS_WHEEL: "c46a05f03486043202a5c5eaee95de07881393072293b2a291cc94724e5fb7ae",
}

DATA_ZIP = "iconclass/data.zip"
# The sample, a fixed rule: the notations of these main divisions of ICONCLASS (a notation's first character), whole
# but for the rules below; the other divisions (0 abstract art, 1 religion and magic, 2 nature, 3 human being,
# 4 society, 5 abstract ideas, 6 history, 7 Bible) are not taken, nor any link to them.
DIVISIONS = ("8", "9")
KEYWORD = "keyword"
P4900 = "broader concept"
SEE_ALSO = "see also"
# A notation whose English text only sends the reader to another notation ("Arthurian legend : Use 81(ARTHURIAN
# LEGEND)"): a pointer, not a subject, left out with every link to it.
USE = re.compile(r" : Use \S")


def records(raw: str) -> dict[str, dict[str, list[str]]]:
    """The records of notations.txt: each "$"-separated block of lines "<field> <value>", where a line "; <value>"
    adds another value to the field before it. Notation (N) -> {field: [values]}."""
    out: dict[str, dict[str, list[str]]] = {}
    for block in raw.split("\n$"):
        rec: dict[str, list[str]] = {}
        last = None
        for line in block.split("\n"):
            field, _, value = line.partition(" ")
            value = value.strip(" \t\r")
            if not field or not value:
                continue
            if field == ";":
                if last is None:
                    raise SystemExit(f"iconclass: a continued value with no field before it: {line!r}")
                rec[last].append(value)
            else:
                rec.setdefault(field, []).append(value)
                last = field
        if not rec:
            continue
        if len(rec.get("N", [])) != 1:
            raise SystemExit(f"iconclass: a record without one notation: {rec}")
        notation = rec["N"][0]
        if notation in out:
            raise SystemExit(f"iconclass: notation {notation} listed twice")
        out[notation] = rec
    return out


def pairs(raw: str, what: str) -> list[tuple[str, str]]:
    """The "<notation>|<value>" lines of a txt_ or kw_ file (blank lines skipped)."""
    out = []
    for line in raw.split("\n"):
        if not line.strip():
            continue
        notation, bar, value = line.partition("|")
        if not bar:
            raise SystemExit(f"iconclass: a {what} line without '|': {line!r}")
        out.append((notation.strip(), text(value)))
    return out


def iconclass_wikidata(src: Path) -> Graph:
    with zipfile.ZipFile(io.BytesIO(package_file(src, ICONCLASS_WHEEL, SOURCES))) as wheel:
        inner = wheel.read(DATA_ZIP)
    with zipfile.ZipFile(io.BytesIO(inner)) as data:
        recs = records(data.read("notations.txt").decode("utf-8"))
        texts_en = pairs(data.read("txt_en.txt").decode("utf-8"), "text")
        keywords_en = pairs(data.read("kw_en.txt").decode("utf-8"), "keyword")

    texts: dict[str, str] = {}
    for notation, value in texts_en:
        if notation in texts and texts[notation] != value:
            raise SystemExit(f"iconclass: two English texts for {notation}")
        texts[notation] = value
    division_name = {d: texts[d].lower() for d in DIVISIONS}
    g = Graph("iconclass_wikidata", "jsonl", priority=tuple(division_name[d] for d in DIVISIONS) + (KEYWORD,))

    sampled = {n for n in recs if n[:1] in DIVISIONS}
    g.left_out["notation of another division (not taken)"] += len(recs) - len(sampled)
    kept: set[str] = set()
    for n in sorted(sampled):
        if not texts.get(n):
            g.left_out["notation without an English text"] += 1
        elif USE.search(texts[n]):
            g.left_out["notation that only points to another ('Use ...')"] += 1
        else:
            kept.add(n)

    # names: the English text; two notations of one division with one text are told apart by their notation
    names: dict[str, str] = {}
    for d in DIVISIONS:
        mine = {n for n in kept if n[:1] == d}
        names.update(named_apart(g, {n: texts[n] for n in mine}, {n: n for n in mine}))

    def node(n: str) -> tuple[str, str]:
        return (division_name[n[:1]], names[n])

    def link(head: str, relation: str, tail: str) -> None:
        if tail in kept:
            g.add(node(head), relation, node(tail))
        elif tail in recs and tail[:1] not in DIVISIONS:
            g.left_out[f"{relation} to a notation of another division"] += 1
        elif tail in recs:
            g.left_out[f"{relation} to a pointer notation or one without text"] += 1
        else:
            g.left_out[f"{relation} to a notation the file lacks"] += 1

    # C: a notation's children; each child's broader concept is the notation (a child of a left-out notation has
    # no broader concept here). R: a notation's cross-references ("see also"), as listed, one way.
    parents: dict[str, set[str]] = defaultdict(set)
    for n in sorted(kept):
        for child in recs[n].get("C", []):
            parents[child].add(n)
        for other in recs[n].get("R", []):
            link(n, SEE_ALSO, other)
    for child in sorted(parents):
        if child not in kept:
            continue
        for parent in sorted(parents[child]):
            link(child, P4900, parent)

    # keywords: each English keyword of a kept notation, one node per keyword however many notations carry it
    for n, keyword in keywords_en:
        if n in kept and keyword:
            g.add(node(n), KEYWORD, (KEYWORD, keyword))
    return g


def build_all(src: Path) -> list[Graph]:
    return [iconclass_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
