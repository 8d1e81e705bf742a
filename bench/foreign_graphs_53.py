"""Rebuild the FIFTY-THIRD folder of held-out "foreign" graphs, docs/programs/graphs53/, from packages' data files.

Nobody on the project wrote these facts: every triple is converted from the data files that two packages ship.
megaglest-data (Debian: the data of MegaGlest, a free real-time strategy game, which ships the game's "megapack" tech
tree as XML: seven factions, each with its units and upgrades, every unit with the units and upgrades it requires,
the resources it costs, the units and upgrades it produces or morphs into, the buildings it builds, its armour and
attack types; every upgrade with what it requires and costs and the units it affects; and the tech tree's English
names for all of them) and warframe-items (npm: the Warframe Community Developers' JSON export of the items of the
game Warframe: its warframes, weapons and companions with the components each is built from, its resources and
other materials with theirs, and its Void relics with the prime parts each holds). The script only renames fields to
property labels, takes the tables whole but for the rules stated in the code, and writes the files; see
docs/programs/graphs53/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_50.py) used, and neither package was used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the archives (the Debian package's `ar` archive by
its documented layout and its `data.tar.xz` with `tarfile`, its XML files with `xml.etree` and its language file as
`key=value` lines; the npm tarball with `tarfile` and its JSON files with `json`); nothing is unpacked, installed,
imported or run:

    mkdir -p /tmp/graphs53-src && cd /tmp/graphs53-src
    apt-get update && apt-get download megaglest-data=3.13.0-3
    npm pack warframe-items@1.1269.87
    cd -  # back to the repository
    python3 bench/foreign_graphs_53.py --src /tmp/graphs53-src            # writes docs/programs/graphs53/*.jsonl
    python3 bench/foreign_graphs_53.py --src /tmp/graphs53-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output. The Debian package is that of Debian 12 "bookworm"; it is architecture-independent. Reading it decompresses
its 242 MB archive, which takes half a minute or so.)

The output is deterministic for the same package files (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a faction, unit, upgrade, resource, armour type and attack type is the English
name the tech tree's default language file gives it (`UnitTypeName_training_camp=training camp`), written as the
file writes it (lower case). Units or upgrades of one name in two factions (the "archer" of the Romans and of the
Norsemen) are named apart by their faction's name in parentheses ("archer (romans)"), as the code says. Labels are
the XML files' own element names with "-" written "_" (`unit-requirements` -> `unit_requirements`). A Warframe item,
material or relic is its record's `name` ("Braton Prime", "Orokin Cell", "Axi A1 Intact"), typed by its own `type`
in lower case ("rifle", "resource", "relic"); a prime part is the name the relic's reward row gives it ("Braton Prime
Stock"). Labels are Wikidata's: `made from material` (P186), `has part(s)` (P527), `part of` (P361)."""

from __future__ import annotations

import io
import json
import posixpath
import re
import sys
import tarfile
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, npm_files, package_file, string, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs53"

# The package files, as `apt-get download` names them, with their SHA-256.
MEGAGLEST_DEB = "megaglest-data_3.13.0-3_all.deb"
WARFRAME_TGZ = "warframe-items-1.1269.87.tgz"
SOURCES = {
    MEGAGLEST_DEB: "ed4783d9fc78e201a548b266f7c30325eb16cfd58a20bf4597dd6e622f84a07e",
    WARFRAME_TGZ: "dd455714a8b1556f509444fad2cd3c9f236c621a34491ae642fff131d7a7262c",
}


# ------------------------------------------------------------------------------------------------------- MegaGlest
TECH = "usr/share/games/megaglest/techs/megapack/"
LANG = TECH + "lang/megapack_default.lng"
TECH_PRIORITY = ("unit", "upgrade", "faction", "resource", "resource type", "armor type", "attack type", "field")
# factions/<faction>/<units|upgrades>/<name>/<name>.xml, resources/<name>/<name>.xml, factions/<faction>/<faction>.xml
UNIT_FILE = re.compile(r"factions/([^/]+)/(units|upgrades)/([^/]+)/\3\.xml")
FACTION_FILE = re.compile(r"factions/([^/]+)/\1\.xml")
RESOURCE_FILE = re.compile(r"resources/([^/]+)/\1\.xml")


def wanted(path: str) -> bool:
    if not path.startswith(TECH):
        return False
    rest = path[len(TECH):]
    return path == LANG or any(p.fullmatch(rest) for p in (UNIT_FILE, FACTION_FILE, RESOURCE_FILE))


def deb_tree(raw: bytes, wanted: Callable[[str], bool]) -> dict[str, bytes]:
    """The files of a Debian package whose path (without the leading "./") ``wanted`` accepts, symbolic links
    followed inside the package (Debian's packaging links files that two tech trees or two factions share, such as
    the Tech faction's cow to the Norsemen's, instead of shipping them twice). A .deb is an `ar` archive (the magic
    "!<arch>\\n", then per member a 60-byte header whose bytes 48-58 give its size, the member, padded to an even
    length); the files are in its member ``data.tar.*``, read with `tarfile`, as foreign_sources.deb_files does."""
    if raw[:8] != b"!<arch>\n":
        raise SystemExit("not a Debian package")
    pos, data = 8, None
    while pos + 60 <= len(raw):
        header = raw[pos:pos + 60]
        size = int(header[48:58].decode("ascii").strip())
        if header[:16].decode("ascii").strip().rstrip("/").startswith("data.tar"):
            data = raw[pos + 60:pos + 60 + size]
            break
        pos += 60 + size + (size % 2)
    if data is None:
        raise SystemExit("no data archive in the Debian package")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        members = {(m.name[2:] if m.name.startswith("./") else m.name): m for m in tar.getmembers()}
        out: dict[str, bytes] = {}
        for path in sorted(members):
            if not wanted(path):
                continue
            target, seen = path, set()
            while members[target].issym() and target not in seen:
                seen.add(target)
                target = posixpath.normpath(posixpath.join(posixpath.dirname(target), members[target].linkname))
                if target not in members:
                    raise SystemExit(f"{path}: a link to {target}, which the package lacks")
            if members[target].isfile():
                out[path] = tar.extractfile(members[target]).read()
    return out


def language(raw: bytes) -> dict[str, str]:
    """The `key=value` lines of a MegaGlest language file (";" starts a comment line)."""
    out: dict[str, str] = {}
    for line in raw.decode("utf-8").splitlines():
        if line.startswith(";") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        out.setdefault(key.strip(), text(value))
    return out


def names_in(element: ET.Element | None, child: str) -> list[str]:
    """The `name` attributes of an element's children of one tag (an absent element has none)."""
    if element is None:
        return []
    return [e.get("name", "") for e in element.findall(child) if e.get("name")]


def megaglest_snake(src: Path) -> Graph:
    g = Graph("megaglest_snake", "jsonl", priority=TECH_PRIORITY)
    files = deb_tree(package_file(src, MEGAGLEST_DEB, SOURCES), wanted)
    lang = language(files[LANG])

    def english(kind: str, key: str) -> str:
        name = lang.get(f"{kind}Name_{key}")
        if not name:
            raise SystemExit(f"megaglest_snake: the language file names no {kind} {key}")
        return name

    faction_files: dict[str, ET.Element] = {}
    resource_files: dict[str, ET.Element] = {}
    records: dict[tuple[str, str, str], ET.Element] = {}  # (faction, "units"|"upgrades", id) -> root
    for path, raw in files.items():
        rest = path[len(TECH):]
        if match := UNIT_FILE.fullmatch(rest):
            records[(match.group(1), match.group(2), match.group(3))] = ET.fromstring(raw)
        elif match := FACTION_FILE.fullmatch(rest):
            faction_files[match.group(1)] = ET.fromstring(raw)
        elif match := RESOURCE_FILE.fullmatch(rest):
            resource_files[match.group(1)] = ET.fromstring(raw)
    factions = {f: english("Faction", f) for f in sorted(faction_files)}

    # unit and upgrade nodes: one per folder, named by the language file, told apart by their faction's name
    units = named_apart(g, {(f, i): english("UnitType", i) for f, kind, i in records if kind == "units"},
                        {(f, i): factions[f] for f, kind, i in records if kind == "units"})
    upgrades = named_apart(g, {(f, i): english("UpgradeType", i) for f, kind, i in records if kind == "upgrades"},
                           {(f, i): factions[f] for f, kind, i in records if kind == "upgrades"})

    def unit(faction: str, key: str) -> tuple[str, str] | None:
        return ("unit", units[(faction, key)]) if (faction, key) in units else None

    def upgrade(faction: str, key: str) -> tuple[str, str] | None:
        return ("upgrade", upgrades[(faction, key)]) if (faction, key) in upgrades else None

    def resource(key: str) -> tuple[str, str] | None:
        return ("resource", english("ResourceType", key)) if key in resource_files else None

    def link(head: tuple[str, str], label: str, tail: tuple[str, str] | None, what: str) -> None:
        if tail is None:
            g.left_out[f"{what} that the tech tree lacks"] += 1
        else:
            g.add(head, label, tail)

    def requirements(head: tuple[str, str], faction: str, holder: ET.Element) -> None:
        """`unit-requirements`, `upgrade-requirements` and `resource-requirements` of a unit or an upgrade (the
        record's own, not those of its commands); a negative amount is a resource the unit gives, not a cost."""
        for element in holder.findall("unit-requirements"):
            for key in names_in(element, "unit"):
                link(head, "unit_requirements", unit(faction, key), "required unit")
        for element in holder.findall("upgrade-requirements"):
            for key in names_in(element, "upgrade"):
                link(head, "upgrade_requirements", upgrade(faction, key), "required upgrade")
        for element in holder.findall("resource-requirements"):
            for r in element.findall("resource"):
                if int(r.get("amount", "0")) > 0:
                    link(head, "resource_requirements", resource(r.get("name", "")), "required resource")
                else:
                    g.left_out["resource row of an amount not above 0 (a resource given, not a cost)"] += 1

    for key, root in sorted(resource_files.items()):
        kind = root.find("type")
        if kind is not None and kind.get("value"):
            g.add(("resource", english("ResourceType", key)), "type", ("resource type", text(kind.get("value"))))

    for faction, root in sorted(faction_files.items()):
        head = ("faction", factions[faction])
        for key in names_in(root.find("starting-units"), "unit"):
            link(head, "starting_units", unit(faction, key), "starting unit")
        for key in names_in(root.find("starting-resources"), "resource"):
            link(head, "starting_resources", resource(key), "starting resource")

    for (faction, kind, key), root in sorted(records.items(), key=lambda item: item[0]):
        if kind == "upgrades":
            head = ("upgrade", upgrades[(faction, key)])
            g.add(head, "faction", ("faction", factions[faction]))
            requirements(head, faction, root)
            for other in names_in(root.find("effects"), "unit"):
                link(head, "effects", unit(faction, other), "affected unit")
            continue
        head = ("unit", units[(faction, key)])
        g.add(head, "faction", ("faction", factions[faction]))
        parameters = root.find("parameters")
        requirements(head, faction, parameters)
        for key_ in names_in(parameters.find("resources-stored"), "resource"):
            link(head, "resources_stored", resource(key_), "stored resource")
        armor = parameters.find("armor-type")
        if armor is not None and armor.get("value"):
            g.add(head, "armor_type", ("armor type", english("ArmorType", armor.get("value"))))
        for field in parameters.iter("field"):  # <fields><field value="land"/></fields>
            if field.get("value"):
                g.add(head, "fields", ("field", text(field.get("value"))))
        for skill in root.iter("skill"):
            attack = skill.find("attack-type")
            if attack is not None and attack.get("value"):
                g.add(head, "attack_type", ("attack type", english("AttackType", attack.get("value"))))
        for command in root.iter("command"):
            for element in command.findall("produced-unit"):
                link(head, "produced_unit", unit(faction, element.get("name", "")), "produced unit")
            for element in command.findall("morph-unit"):
                link(head, "morph_unit", unit(faction, element.get("name", "")), "morph unit")
            for element in command.findall("produced-upgrade"):
                link(head, "produced_upgrade", upgrade(faction, element.get("name", "")), "produced upgrade")
            for other in names_in(command.find("buildings"), "building"):
                link(head, "buildings", unit(faction, other), "building")
            for other in names_in(command.find("repaired-units"), "unit"):
                link(head, "repaired_units", unit(faction, other), "repaired unit")
            for other in names_in(command.find("harvested-resources"), "resource"):
                link(head, "harvested_resources", resource(other), "harvested resource")
    return g


# ------------------------------------------------------------------------------------------------------- Warframe
WF_JSON = "package/data/json/"
EQUIPMENT = ("Warframes", "Primary", "Secondary", "Melee", "Archwing", "Arch-Gun", "Arch-Melee", "Sentinels",
             "SentinelWeapons")
MATERIALS = ("Resources", "Misc")
RELICS = "Relics"
REFINEMENT = " Intact"  # every relic is listed four times, once per refinement, with the same rewards: take one
WF_PRIORITY = ("relic", "warframe", "rifle", "shotgun", "pistol", "dual pistols", "throwing", "melee",
               "zaw component", "archwing", "arch-gun", "arch-melee", "sentinel", "companion weapon", "resource",
               "component")


def warframe_wikidata(src: Path) -> Graph:
    g = Graph("warframe_wikidata", "jsonl", priority=WF_PRIORITY)
    paths = {f"{WF_JSON}{name}.json": name for name in (*EQUIPMENT, *MATERIALS, RELICS)}
    files = npm_files(package_file(src, WARFRAME_TGZ, SOURCES), set(paths))
    tables = {paths[p]: json.loads(raw) for p, raw in files.items()}
    if set(tables) != set(paths.values()):
        raise SystemExit(f"warframe_wikidata: missing {sorted(set(paths.values()) - set(tables))}")

    # records by uniqueName: the equipment and the materials; each a node (its own `type`, lower case; its name),
    # so records of one name and type (a store, bundle or PvP variant of a resource or part) are one node
    records: dict[str, dict] = {}
    for table in (*EQUIPMENT, *MATERIALS):
        for r in tables[table]:
            records.setdefault(string(r["uniqueName"], table), r)

    def node(u: str) -> tuple[str, str]:
        r = records[u]
        return (string(r["type"], u).lower(), string(r["name"], u))

    # equipment and materials: made from the components that are records themselves (a resource, another weapon);
    # an item's own parts (its blueprint, chassis, barrel ...) are named for the relic rewards below
    parts: dict[str, set[str]] = {}
    for table in (*EQUIPMENT, *MATERIALS):
        for r in tables[table]:
            head = node(r["uniqueName"])
            for c in r.get("components") or []:
                u = string(c["uniqueName"], r["uniqueName"])
                if u in records:
                    g.add(head, "made from material", node(u))
                elif table in EQUIPMENT:
                    part = string(c["name"], u)
                    for name in (f"{r['name']} {part}", f"{r['name']} {part} Blueprint"):
                        parts.setdefault(text(name), set()).add(r["uniqueName"])
                else:
                    g.left_out["material's own part (not a record)"] += 1

    # relics (one refinement of each): the rewards they hold, each reward a part of the item it is named for
    record_by_name: dict[str, set[str]] = {}
    for u, r in records.items():
        record_by_name.setdefault(text(r["name"]), set()).add(u)
    for r in tables[RELICS]:
        name = string(r["name"], "relic")
        if not name.endswith(REFINEMENT):
            g.left_out["relic record of another refinement, or none"] += 1
            continue
        head = ("relic", name)
        for reward in r.get("rewards") or []:
            item = text(string(reward["item"]["name"], name))
            if len(parts.get(item, ())) == 1:
                component = ("component", item)
                g.add(head, "has part(s)", component)
                g.add(component, "part of", node(next(iter(parts[item]))))
            elif len(record_by_name.get(item, ())) == 1:
                g.add(head, "has part(s)", node(next(iter(record_by_name[item]))))
            else:
                g.left_out["relic reward that names no one part or record"] += 1
    return g


def build_all(src: Path) -> list[Graph]:
    return [megaglest_snake(src), warframe_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
