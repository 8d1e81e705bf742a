"""Rebuild the SEVENTY-THIRD folder of held-out "foreign" graphs, docs/programs/graphs73/, from a package's data files.

Nobody on the project wrote these facts: every triple is converted from the data files that one package ships.
xwing-data (npm: "an easy-to-use collection of data and images from X-Wing: The Miniatures Game by Fantasy Flight
Games", the first edition of the game, as JSON: its 56 ships with their factions, actions, sizes and firing arcs, its
297 pilot cards with their ship, faction and upgrade slots, its 367 upgrade cards with their slot and the ships,
factions and sizes they are restricted to, its 10 condition cards, and its 63 products, core sets and expansion packs,
with their wave and the ships, pilots and upgrades each contains). The script only renames fields to property labels,
takes the tables whole and writes the file; see docs/programs/graphs73/PROVENANCE.md. No dataset is one the earlier
folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_72.py) used, and the package was
neither used nor set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the tarball (with `tarfile`, each file with `json`); nothing
is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs73-src && cd /tmp/graphs73-src
    npm pack xwing-data@1.0.1
    cd -  # back to the repository
    python3 bench/foreign_graphs_73.py --src /tmp/graphs73-src            # writes docs/programs/graphs73/*.jsonl
    python3 bench/foreign_graphs_73.py --src /tmp/graphs73-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output. The files under `package/data/` are named `.js` but each holds one JSON array.)

The output is deterministic for the same package file (rows sorted; the data taken whole). It prints the source file,
then one line per graph with its counts. Check the file with `tasks.graph.importers.import_graph_file` (the project
venv): it must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a ship, pilot, upgrade, condition or product its `name` ("X-wing", "Wedge
Antilles", "Proton Torpedoes", "Core Set"), a faction, action, slot, size or firing arc the value as the file writes
it ("Rebel Alliance", "Target Lock", "Astromech", "small", "Front"); a wave is the file's `wave` value after the word
"Wave" where the value is a number ("Wave 1"), else the value itself ("Iconic Starships"). Records of one kind that
show one name are named apart by telling values in parentheses, as the code says."""

from __future__ import annotations

import io
import json
import sys
import tarfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import package_file, string, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs73"

# The package file, as `npm pack` names it, with its SHA-256.
XWING_TGZ = "xwing-data-1.0.1.tgz"
SOURCES = {
    XWING_TGZ: "a92b178242eb1f85071a8557a38a97f323add2fdacc6bc4a78019bc2297b9048",
}

# ------------------------------------------------------------------------------------------------------- X-Wing
DATA = "package/data/"
TABLES = ("ships", "pilots", "upgrades", "conditions", "sources")
XWING_PRIORITY = ("pilot", "ship", "upgrade", "condition", "product", "faction", "upgrade slot", "action",
                  "ship size", "firing arc", "wave")


def tables(raw: bytes) -> dict[str, list[dict]]:
    """The JSON arrays of the tarball's data files, by table name."""
    wanted = {DATA + name + ".js": name for name in TABLES}
    out: dict[str, list[dict]] = {}
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as tar:
        for m in tar.getmembers():
            if m.name in wanted and m.isfile():
                out[wanted[m.name]] = json.loads(tar.extractfile(m).read().decode("utf-8"))
    if set(out) != set(TABLES):
        raise SystemExit(f"xwing: missing data files {sorted(set(TABLES) - set(out))}")
    return out


def apart_by(g: Graph, records: list[dict], tells: list) -> dict[int, str]:  # noqa: ANN001  (tells: functions)
    """Node names for records (by `id`): the record's `name` where one record bears it, else "name (tell)" with the
    first of `tells` (functions of the record giving a telling value), or the first several of them joined by ", ",
    that tells apart every record of that name. Stops where none does."""
    by_name: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_name[string(r["name"], f"{g.name}: name of {r['id']}")].append(r)
    out: dict[int, str] = {}
    for name, group in by_name.items():
        if len(group) == 1:
            out[group[0]["id"]] = name
            continue
        for n in range(1, len(tells) + 1):
            told = {r["id"]: ", ".join(text(t(r)) for t in tells[:n]) for r in group}
            if len(set(told.values())) == len(group):
                for r in group:
                    out[r["id"]] = f"{name} ({told[r['id']]})"
                break
        else:
            raise SystemExit(f"{g.name}: records named {name!r} cannot be told apart")
    if len(set(out.values())) != len(out):
        raise SystemExit(f"{g.name}: two records still share a name after naming them apart")
    return out


def wave_name(value: object) -> str:
    """A product's wave: "Wave <n>" where the file gives a number, else the file's words ("Iconic Starships")."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"Wave {value}"
    return string(value, "xwing: a wave")


def xwing_dbpedia(src: Path) -> Graph:
    g = Graph("xwing_dbpedia", "jsonl", priority=XWING_PRIORITY)
    data = tables(package_file(src, XWING_TGZ, SOURCES))

    # ships: every ship is named once in the file (the script stops otherwise)
    ships = apart_by(g, data["ships"], [])
    ship_by_name = {string(r["name"], "xwing: ship name"): ships[r["id"]] for r in data["ships"]}
    for r in data["ships"]:
        head = ("ship", ships[r["id"]])
        for faction in r.get("faction") or []:
            g.add(head, "faction", ("faction", string(faction, "xwing: ship faction")))
        for action in r.get("actions") or []:
            g.add(head, "action", ("action", string(action, "xwing: ship action")))
        if r.get("size"):
            g.add(head, "shipSize", ("ship size", string(r["size"], "xwing: ship size")))
        for arc in r.get("firing_arcs") or []:
            g.add(head, "firingArc", ("firing arc", string(arc, "xwing: firing arc")))

    def ship_node(name: object, where: str) -> tuple[str, str] | None:
        ship = ship_by_name.get(string(name, where))
        if ship is None:
            g.left_out[f"{where} naming no ship of the file"] += 1
            return None
        return ("ship", ship)

    conditions = apart_by(g, data["conditions"], [])
    condition_by_name = {string(r["name"], "xwing: condition name"): conditions[r["id"]] for r in data["conditions"]}

    def add_conditions(head: tuple[str, str], r: dict) -> None:
        for name in r.get("conditions") or []:
            condition = condition_by_name.get(string(name, "xwing: condition"))
            if condition is None:
                g.left_out["condition the file lacks"] += 1
                continue
            g.add(head, "condition", ("condition", condition))

    # pilots: a pilot card named like another is told apart by its ship, then its faction, then its pilot skill
    pilots = apart_by(g, data["pilots"], [lambda r: r["ship"], lambda r: r["faction"],
                                          lambda r: f"pilot skill {r['skill']}"])
    for r in data["pilots"]:
        head = ("pilot", pilots[r["id"]])
        ship = ship_node(r["ship"], "pilot's ship")
        if ship is not None:
            g.add(head, "ship", ship)
        g.add(head, "faction", ("faction", string(r["faction"], "xwing: pilot faction")))
        for slot in r.get("slots") or []:
            g.add(head, "upgradeSlot", ("upgrade slot", string(slot, "xwing: pilot slot")))
        add_conditions(head, r)

    # upgrades: an upgrade card named like another is told apart by its slot, then by the file's card key (`xws`:
    # two printings of one title card, "millenniumfalcon" and "millenniumfalcon-swx57")
    upgrades = apart_by(g, data["upgrades"], [lambda r: r["slot"], lambda r: r["xws"]])
    for r in data["upgrades"]:
        head = ("upgrade", upgrades[r["id"]])
        g.add(head, "slot", ("upgrade slot", string(r["slot"], "xwing: upgrade slot")))
        if r.get("faction"):
            g.add(head, "requiredFaction", ("faction", string(r["faction"], "xwing: upgrade faction")))
        for name in r.get("ship") or []:
            ship = ship_node(name, "upgrade's ship restriction")
            if ship is not None:
                g.add(head, "requiredShip", ship)
        for size in r.get("size") or []:
            g.add(head, "requiredShipSize", ("ship size", string(size, "xwing: upgrade size")))
        add_conditions(head, r)

    # products (the file's "sources": core sets and expansion packs): their wave and what each contains
    products = apart_by(g, data["sources"], [lambda r: r.get("sku") or r["id"]])
    # (a ship, pilot or upgrade → `includedIn` → each product whose `contents` list its id)
    by_id = {"ships": ("ship", ships), "pilots": ("pilot", pilots), "upgrades": ("upgrade", upgrades)}
    for r in data["sources"]:
        product = ("product", products[r["id"]])
        g.add(product, "wave", ("wave", wave_name(r["wave"])))
        contents = r.get("contents") or {}
        for table, (etype, names) in sorted(by_id.items()):
            for key in sorted(contents.get(table) or {}, key=int):
                name = names.get(int(key))
                if name is None:
                    g.left_out[f"product content of an id the {table} file lacks"] += 1
                    continue
                g.add((etype, name), "includedIn", product)
    return g


def build_all(src: Path) -> list[Graph]:
    return [xwing_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
