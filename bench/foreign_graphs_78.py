"""Rebuild the SEVENTY-EIGHTH folder of held-out "foreign" graphs, docs/programs/graphs78/, from one package's data files.

Nobody on the project wrote these facts: every triple is converted from the data files that one package ships.
skygame-data (npm: the data repository of SkyGame-Planner, a planner for the game Sky: Children of the Light, which
ships the game's realms, areas, spirits, seasons, events, spirit trees and cosmetic items as JSON files, compiled from
the game and its community wiki). The script only renames fields to property labels, takes the tables whole but for
the rules stated in the code, and writes the file; see docs/programs/graphs78/PROVENANCE.md. No dataset is one the
earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_77.py) used, and the
package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the npm tarball with `tarfile`, its JSON files
with `json`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs78-src && cd /tmp/graphs78-src
    npm pack skygame-data@1.3.16
    cd -  # back to the repository
    python3 bench/foreign_graphs_78.py --src /tmp/graphs78-src            # writes docs/programs/graphs78/*.jsonl
    python3 bench/foreign_graphs_78.py --src /tmp/graphs78-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the file with
`tasks.graph.importers.import_graph_file` (the project venv): it must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives (its `name` field): a realm ("Daylight Prairie"), an area ("Butterfly Fields"), a
spirit ("Butterfly Charmer"), a season ("Season of Gratitude"), an event ("Days of Bloom"), an item ("Stretching
Guru Cape"); an item type and a spirit type are the data's `type` values ("Cape", "Emote"; "Regular", "Season"). Records
of one kind that show one name are named apart by a telling value in parentheses (an emote by its level, an item by
its type, a spirit by the first date of the event it came with), as the code says."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import npm_files, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs78"

# The package file, as `npm pack` names it, with its SHA-256.
SKY_TGZ = "skygame-data-1.3.16.tgz"
SOURCES = {
    SKY_TGZ: "9a81e4d7f76fb5fd261cf86ac617bf3717026dd2c0db179ca90a33f1edae9b8e",
}

# ------------------------------------------------------------------------------------------------------- Sky
ASSETS = "package/assets/"
TABLES = ("realms", "areas", "spirits", "seasons", "events", "event-instances", "event-instance-spirits",
          "traveling-spirits", "special-visit-spirits", "spirit-trees", "spirit-tree-tiers", "nodes", "items")
SKY_PRIORITY = ("spirit", "item", "area", "realm", "season", "event", "item type", "spirit type")
# Item types left out, by a fixed rule: rewards and consumables whose records share a handful of generic names
# ("Heart", "Blessing", "Wing Buff", "Quest 1", "Small Birthday Cake"), not things of their own.
LEFT_OUT_ITEM_TYPES = ("Special", "Quest", "WingBuff", "Spell")


def tables(src: Path) -> dict[str, list[dict]]:
    names = {ASSETS + t + ".json" for t in TABLES}
    files = npm_files(package_file(src, SKY_TGZ, SOURCES), names)
    missing = names - set(files)
    if missing:
        raise SystemExit(f"sky_dbpedia: the package lacks {sorted(missing)}")
    return {t: json.loads(files[ASSETS + t + ".json"].decode("utf-8"))["items"] for t in TABLES}


def apart_by(g: Graph, keyed: dict[str, str], tellers: list[dict[str, str]]) -> dict[str, str]:
    """Node names for records (key -> name): the name where one record bears it; else the name with the first teller
    (in order) that tells every record of that name apart, in parentheses; stops where none does."""
    groups: dict[str, list[str]] = defaultdict(list)
    for key, name in keyed.items():
        groups[name].append(key)
    out: dict[str, str] = {}
    for name, keys in groups.items():
        if len(keys) == 1:
            out[keys[0]] = name
            continue
        for tell in tellers:
            values = [tell.get(k, "") for k in keys]
            if all(values) and len(set(values)) == len(values):
                out.update({k: f"{name} ({v})" for k, v in zip(keys, values)})
                break
        else:
            raise SystemExit(f"{g.name}: records named {name!r} cannot be told apart")
    if len(set(out.values())) != len(out):
        raise SystemExit(f"{g.name}: two records still share a name after naming them apart")
    return out


def sky_dbpedia(src: Path) -> Graph:
    g = Graph("sky_dbpedia", "jsonl", priority=SKY_PRIORITY)
    t = tables(src)
    by = {name: {r["guid"]: r for r in rows} for name, rows in t.items()}

    # events: each spirit an event instance brought, and the event of that instance; its first date tells apart
    event_of_spirit: dict[str, set[str]] = defaultdict(set)
    first_date: dict[str, str] = {}
    trees: dict[str, set[str]] = defaultdict(set)  # spirit guid -> the spirit trees that offer its items
    for event in t["events"]:
        for instance_id in event.get("instances", []):
            instance = by["event-instances"][instance_id]
            for eis_id in instance.get("spirits", []):
                eis = by["event-instance-spirits"][eis_id]
                event_of_spirit[eis["spirit"]].add(event["guid"])
                if eis["spirit"] not in first_date or instance.get("date", "") < first_date[eis["spirit"]]:
                    first_date[eis["spirit"]] = instance.get("date", "")
    for row in t["event-instance-spirits"] + t["traveling-spirits"] + t["special-visit-spirits"]:
        if row.get("tree"):
            trees[row["spirit"]].add(row["tree"])
    for s in t["spirits"]:
        for tree in ([s["tree"]] if s.get("tree") else []) + s.get("treeRevisions", []):
            trees[s["guid"]].add(tree)

    # spirits: named apart (the "Anniversary Guide" of each year) by the first date of the event they came with
    season_of: dict[str, str] = {}
    for season in t["seasons"]:
        for sid in season.get("spirits", []):
            season_of[sid] = season["guid"]
    # a spirit record that shares its name with another and belongs to no season, event or area (two such records,
    # each a second copy of an event spirit) is left out, with the links to it
    in_area = {sid for a in t["areas"] for sid in a.get("spirits", [])}
    shared = defaultdict(int)
    for s in t["spirits"]:
        shared[text(s["name"])] += 1
    spirits = [s for s in t["spirits"] if shared[text(s["name"])] == 1
               or s["guid"] in season_of or s["guid"] in event_of_spirit or s["guid"] in in_area]
    g.left_out["second spirit record of one name, in no season, event or area"] += len(t["spirits"]) - len(spirits)
    kept = {s["guid"] for s in spirits}
    spirit_names = apart_by(g, {s["guid"]: text(s["name"]) for s in spirits},
                            [{k: v for k, v in first_date.items() if v},
                             {k: text(by["seasons"][v]["name"]) for k, v in season_of.items()}])

    def spirit(sid: str) -> tuple[str, str]:
        return ("spirit", spirit_names[sid])

    for s in spirits:
        g.add(spirit(s["guid"]), "spiritType", ("spirit type", text(s["type"])))
        if s["guid"] in season_of:
            g.add(spirit(s["guid"]), "season", ("season", text(by["seasons"][season_of[s["guid"]]]["name"])))
        for eid in sorted(event_of_spirit.get(s["guid"], ())):
            g.add(spirit(s["guid"]), "event", ("event", text(by["events"][eid]["name"])))

    # realms and areas: an area that holds spirits is their location, and lies in the realm that lists it
    realm_of: dict[str, str] = {}
    for realm in t["realms"]:
        for aid in realm.get("areas", []):
            realm_of[aid] = realm["guid"]
    held = [a for a in t["areas"] if a.get("spirits")]
    g.left_out["area holding no spirit (not taken)"] += len(t["areas"]) - len(held)
    area_names = apart_by(g, {a["guid"]: text(a["name"]) for a in held},
                          [{k: text(by["realms"][v]["name"]) for k, v in realm_of.items()}])
    for a in held:
        node = ("area", area_names[a["guid"]])
        if a["guid"] in realm_of:
            g.add(node, "realm", ("realm", text(by["realms"][realm_of[a["guid"]]]["name"])))
        else:
            g.left_out["area in no realm"] += 1
        for sid in a["spirits"]:
            if sid in kept:
                g.add(spirit(sid), "location", node)

    # spirit trees: every node of a tree (its root node and the nodes above it, or the rows of its tiers) offers
    # one item; the item is linked to the spirit whose tree offers it
    def tree_items(tree_id: str) -> list[str]:
        tree = by["spirit-trees"][tree_id]
        stack = [tree["node"]] if tree.get("node") else []
        tier = tree.get("tier")
        while tier:
            stack += [n for row in by["spirit-tree-tiers"][tier]["rows"] for n in row if n]
            tier = by["spirit-tree-tiers"][tier].get("next")
        seen: set[str] = set()
        out: list[str] = []
        while stack:
            nid = stack.pop()
            if nid in seen:
                continue
            seen.add(nid)
            node = by["nodes"][nid]
            out.append(node["item"])
            stack += [node[k] for k in ("nw", "n", "ne") if node.get(k)]
        return out

    spirits_of_item: dict[str, set[str]] = defaultdict(set)
    for sid, tree_ids in trees.items():
        if sid not in kept:
            continue
        for tree_id in tree_ids:
            for iid in tree_items(tree_id):
                spirits_of_item[iid].add(sid)

    items = [i for i in t["items"] if i["type"] not in LEFT_OUT_ITEM_TYPES]
    g.left_out["reward or consumable item (not taken)"] += len(t["items"]) - len(items)
    item_names = apart_by(g, {i["guid"]: text(i["name"]) for i in items},
                          [{i["guid"]: f"level {i['level']}" for i in items if i.get("level")},
                           {i["guid"]: text(i["type"]) for i in items}])
    for i in items:
        node = ("item", item_names[i["guid"]])
        g.add(node, "itemType", ("item type", text(i["type"])))
        for sid in sorted(spirits_of_item.get(i["guid"], ())):
            g.add(node, "spirit", spirit(sid))
    return g


def build_all(src: Path) -> list[Graph]:
    return [sky_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
