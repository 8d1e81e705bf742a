"""Rebuild the SEVENTY-SECOND folder of held-out "foreign" graphs, docs/programs/graphs72/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the SQLite database that one package ships.
@shabados/database (npm: the open Gurbani database of Shabad OS, the Sikh scriptures with their structure: the
sources, such as the Sri Guru Granth Sahib Ji and the Sri Dasam Granth, their sections and subsections, every shabad
with its writer, and the banis, the prayers compiled from lines of those shabads). The script only renames the
database's columns to labels, takes the tables whole but for the rules stated in the code, and writes the file; see
docs/programs/graphs72/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_71.py) used, and the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the database from inside the archive (the npm tarball with `tarfile`, the database with
`sqlite3` from memory, by `Connection.deserialize`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs72-src && cd /tmp/graphs72-src
    npm pack @shabados/database@4.8.3
    cd -  # back to the repository
    python3 bench/foreign_graphs_72.py --src /tmp/graphs72-src            # writes docs/programs/graphs72/*.jsonl
    python3 bench/foreign_graphs_72.py --src /tmp/graphs72-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone; `Connection.deserialize` needs Python 3.11 or
later.)

The output is deterministic for the same package file (rows sorted; the tables taken whole but for the rules stated
in the code). It prints the source file, then one line per graph with its counts. Check the file with
`tasks.graph.importers.import_graph_file` (the project venv): it must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the database gives: a source, section, subsection, writer and bani is its `name_english`
("Sri Guru Granth Sahib Ji", "Raag Aasaa", "Mahalaa 1", "Guru Nanak Dev Ji", "Japji Sahib"); a shabad, which has no
name column, is the English transliteration (`transliterations`, language "English") of its first line that is not
a title line (the first of its `lines` in `order_id` whose `type_id` is not that of the line types "Manglacharan" or
"Sirlekh"), as Shabad OS writes it ("jih simarat. gat paaeeai; tih bhaj re tai meet |"). Records of one kind that show
one name are named apart by a telling value in parentheses, as the code says."""

from __future__ import annotations

import io
import sqlite3
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs72"

# The package file, as `npm pack` names it, with its SHA-256.
SHABADOS_TGZ = "shabados-database-4.8.3.tgz"
SOURCES = {
    SHABADOS_TGZ: "2280880c6a66ff61d6d31d4b60c0b00db50d9f2bb2cb9c47734b8cc0e3f9e27f",
}

DATABASE = "package/build/database.sqlite"
GURBANI_PRIORITY = ("source", "section", "subsection", "bani", "writer", "shabad")
TITLE_LINE_TYPES = ("Manglacharan", "Sirlekh")  # line types that head a shabad rather than open its text


def database(src: Path) -> sqlite3.Connection:
    """The package's SQLite database, opened in memory from the bytes inside the npm tarball."""
    with tarfile.open(fileobj=io.BytesIO(package_file(src, SHABADOS_TGZ, SOURCES)), mode="r:gz") as tar:
        member = tar.extractfile(DATABASE)
        if member is None:
            raise SystemExit(f"{SHABADOS_TGZ} has no {DATABASE}")
        raw = member.read()
    con = sqlite3.connect(":memory:")
    con.deserialize(raw)
    return con


def gurbani_snake(src: Path) -> Graph:
    g = Graph("gurbani_snake", "jsonl", priority=GURBANI_PRIORITY)
    con = database(src)

    def table(sql: str) -> list[tuple]:
        return sorted(con.execute(sql).fetchall(), key=lambda r: tuple(str(v) for v in r))

    # sources, sections, subsections, writers, banis: their English names, told apart where one name is shared
    sources = dict(table("SELECT id, name_english FROM sources"))
    sources = named_apart(g, {k: text(v) for k, v in sources.items()}, {k: f"source {k}" for k in sources})
    section_rows = table("SELECT id, name_english, source_id FROM sections")
    sections = named_apart(g, {i: text(n) for i, n, _ in section_rows}, {i: sources[s] for i, _, s in section_rows})
    section_source = {i: s for i, _, s in section_rows}
    # a subsection is a heading within a section: the same heading repeated in one section (the database has 20 such
    # repeats, "Mahalaa 1" four times in Raag Basant) is one node, told apart from other sections' by the section
    sub_rows = table("SELECT id, name_english, section_id FROM subsections")
    heading = {i: (c, text(n)) for i, n, c in sub_rows}
    by_heading = named_apart(g, {h: h[1] for h in set(heading.values())}, {h: sections[h[0]] for h in heading.values()})
    subsections = {i: by_heading[h] for i, h in heading.items()}
    subsection_section = {i: c for i, _, c in sub_rows}
    g.left_out["subsection record repeating a heading of its section (one node)"] += len(heading) - len(by_heading)
    writers = dict(table("SELECT id, name_english FROM writers"))
    writers = named_apart(g, {k: text(v) for k, v in writers.items()}, {k: f"writer {k}" for k in writers})
    banis = dict(table("SELECT id, name_english FROM banis"))
    banis = named_apart(g, {k: text(v) for k, v in banis.items()}, {k: f"bani {k}" for k in banis})

    # shabads: named by the English transliteration of the first line that is not a title line
    title_types = {i for i, n in table("SELECT id, name_english FROM line_types") if n in TITLE_LINE_TYPES}
    if len(title_types) != len(TITLE_LINE_TYPES):
        raise SystemExit("gurbani_snake: the line types changed")
    first: dict[str, str] = {}
    rows = con.execute(
        "SELECT l.shabad_id, l.order_id, l.type_id, t.transliteration FROM lines l JOIN transliterations t "
        "ON t.line_id = l.id JOIN languages g ON g.id = t.language_id WHERE g.name_english = 'English' "
        "ORDER BY l.shabad_id, l.order_id").fetchall()
    for shabad, _, type_id, words in rows:
        if type_id not in title_types and text(words) and shabad not in first:
            first[shabad] = text(words)
    shabad_rows = table("SELECT id, source_id, writer_id, section_id, subsection_id FROM shabads")
    named = {s: first[s] for s, *_ in shabad_rows if s in first}
    g.left_out["shabad without a line of text"] += len(shabad_rows) - len(named)
    shabads = named_apart(g, named, {s: f"shabad {s}" for s in named})

    for sid, source_id, writer_id, section_id, subsection_id in shabad_rows:
        if sid not in shabads:
            continue
        head = ("shabad", shabads[sid])
        if section_source[section_id] != source_id:
            raise SystemExit(f"gurbani_snake: shabad {sid} in a section of another source")
        g.add(head, "writer", ("writer", writers[writer_id]))
        g.add(head, "section", ("section", sections[section_id]))
        if subsection_id is not None:
            if subsection_section[subsection_id] != section_id:
                raise SystemExit(f"gurbani_snake: shabad {sid} in a subsection of another section")
            g.add(head, "subsection", ("subsection", subsections[subsection_id]))
    for i, c in subsection_section.items():
        g.add(("subsection", subsections[i]), "section", ("section", sections[c]))
    for i, s in section_source.items():
        g.add(("section", sections[i]), "source", ("source", sources[s]))

    # banis: each bani to every shabad one of its lines is from
    for bani_id, shabad in table("SELECT DISTINCT b.bani_id, l.shabad_id FROM bani_lines b "
                                 "JOIN lines l ON l.id = b.line_id"):
        if shabad not in shabads:
            g.left_out["bani line of a shabad without a name"] += 1
            continue
        g.add(("bani", banis[bani_id]), "shabad", ("shabad", shabads[shabad]))
    return g


def build_all(src: Path) -> list[Graph]:
    return [gurbani_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
