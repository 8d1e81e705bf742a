"""Rebuild the THIRTY-THIRD held-out set of "foreign" graphs, docs/programs/graphs33/, from data in Debian packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of the Debian packages
ships: warzone2100-data's `usr/share/games/warzone2100/mp.wz` (the multiplayer data of the real-time strategy game
Warzone 2100, a zip archive whose `stats/*.json` files hold the research topics with the topics each requires and the
components and structures each yields, the structures with their weapons, the weapons with their class, subclass and
effect, the bodies, propulsions and turrets, and the droid designs that join a body, a propulsion and a turret) and
gramps' `usr/share/doc/gramps/example/gramps/example.gramps` (the example family tree of the genealogy program Gramps,
in its XML format: people with their names, sex, birth, death and burial places, the families that join fathers,
mothers and children, and the places, each inside its county, state and country). The script only renames fields
to a vocabulary's property labels, samples deterministically and writes the files; see
docs/programs/graphs33/PROVENANCE.md. None of these datasets is one the first thirty-two sets
(bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_32.py) used, and none of the packages
was used by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the archives (each Debian package's `ar` archive by
its documented layout and its `data.tar.xz` with `tarfile`, Warzone's `mp.wz` with `zipfile`); nothing is unpacked,
installed, imported or run:

    mkdir -p /tmp/graphs33-src && cd /tmp/graphs33-src
    apt-get update && apt-get download warzone2100-data=4.3.3-3 gramps=5.1.5-1
    cd -  # back to the repository
    python3 bench/foreign_graphs_33.py --src /tmp/graphs33-src            # writes docs/programs/graphs33/*.jsonl
    python3 bench/foreign_graphs_33.py --src /tmp/graphs33-src --out DIR  # elsewhere

(These files were built with Python 3.11 and the standard library alone (`tarfile`, `lzma`, `zipfile`, `json` and
`xml.etree`), so the version of Python does not change the output. The Debian packages are those of Debian 12
"bookworm".)

The output is deterministic for the same package files (rows sorted; files taken whole or sampled by a fixed rule).
It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
One thing the data lists several times under one name is one node: a Warzone droid design or structure the file
lists under two ids with one name ("Heavy Cannon Python Tracks", "Tank Traps"), a Gramps place the file lists twice
inside one state ("Philadelphia"). Two different things of one type that share a name are named apart (never folded
into one node): a person of the family tree is "<name> (born <year>)" where the name is shared, else (no birth year
known) "<name> (child of <the father's, else the mother's, name>)", else "<name> (<the person's Gramps id>)", and
where that still leaves two, "<name> (<the person's Gramps id>)"; a place is "<name> (<its state>)"
("Gainesville (FL)", "Lee (IA)" for a county). The script stops if two Warzone research topics, weapons or other
components ever share a name."""

from __future__ import annotations

import io
import json
import re
import sys
import xml.etree.ElementTree as ET
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, package_file, present, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs33"

# The package files, as `apt-get download` names them, with their SHA-256.
SOURCES = {
    "warzone2100-data_4.3.3-3_all.deb": "53ad292569e0bf9d16de1642d13629f29ed5dfb68896787e4c65ac60edc07d3d",
    "gramps_5.1.5-1_all.deb": "77875e0983e97498e91a14b4fd4033998146a582c7932a993cf268929a9fda6b",
}


def source(src: Path, name: str) -> bytes:
    return package_file(src, name, SOURCES)


# -- 1. Warzone 2100's technology, DBpedia camelCase (warzone2100-data's mp.wz, stats/*.json) --------------------------
MP_WZ = "usr/share/games/warzone2100/mp.wz"
# the component files (stats/<file>.json) and the node type of their records
COMPONENTS = {
    "weapons": "Weapon", "body": "Body", "propulsion": "Propulsion", "sensor": "Sensor", "ecm": "ECM",
    "repair": "RepairTurret", "construction": "ConstructionTurret", "brain": "CommandTurret",
}
# a droid design's component keys and the file each names a record of
TEMPLATE_PARTS = {"body": "body", "propulsion": "propulsion", "weapons": "weapons", "sensor": "sensor",
                  "repair": "repair", "construct": "construction", "brain": "brain"}


def internal(name: str) -> bool:
    """A record the game keeps out of sight, named by an internal word rather than a name: a name between asterisks
    ("*BaBa Cannon*", the scavengers' and the campaign's hidden parts), an engine placeholder ("ZNULLWEAPON", "Z NULL
    BODY"), or one word that is an id written as a name: all lower case ("scavengernexuslinkturret"), holding a digit
    ("Crane1") or a capital after a lower-case letter ("BaBaLegs")."""
    if name.startswith("*") and name.endswith("*"):
        return True
    if name.replace(" ", "").startswith("ZNULL"):
        return True
    if " " not in name and (name == name.lower() or re.search(r"\d", name) or re.search(r"[a-z][A-Z]", name)):
        return True
    return False


def enum(value: str) -> str:
    """One of the game's capitalised enum values as words: "MACHINE GUN" -> "machine gun", "LAS_SAT" -> "las sat"."""
    return text(value.replace("_", " ").lower())


def warzone_dbpedia(src: Path) -> Graph:
    g = Graph("warzone_dbpedia", "jsonl",
              priority=("Weapon", "Structure", "Body", "Propulsion", "Sensor", "ECM", "RepairTurret",
                        "ConstructionTurret", "CommandTurret", "DroidDesign", "ResearchTopic", "StructureType",
                        "WeaponSubClass", "WeaponClass", "WeaponEffect", "BodyClass", "BodySize", "PropulsionType"))
    files = deb_files(source(src, "warzone2100-data_4.3.3-3_all.deb"), lambda p: p == MP_WZ)
    with zipfile.ZipFile(io.BytesIO(files[MP_WZ])) as wz:
        stats = {name: json.loads(wz.read(f"stats/{name}.json"))
                 for name in ("research", "structure", "templates", *COMPONENTS)}
    # every record's node, by its id; a hidden record has none (its links are counted as left out)
    node: dict[str, tuple[str, str]] = {}
    for file, etype in COMPONENTS.items():
        shown = {}
        for key, rec in sorted(stats[file].items()):
            if internal(text(rec["name"])):
                g.left_out[f"{file} record with an internal name (not used)"] += 1
            else:
                shown[key] = text(rec["name"])
        for key, name in unique(g, shown).items():
            node[key] = (etype, name)
    research = {}
    for key, rec in sorted(stats["research"].items()):
        research[key] = text(rec["name"])
    for key, name in unique(g, research).items():
        node[key] = ("ResearchTopic", name)
    # structures and droid designs: a name the file gives two ids is one node (the same structure or design)
    for file, etype in (("structure", "Structure"), ("templates", "DroidDesign")):
        for key, rec in sorted(stats[file].items()):
            if internal(text(rec["name"])):
                g.left_out[f"{file} record with an internal name (not used)"] += 1
            else:
                node[key] = (etype, text(rec["name"]))
    names_of_ids: dict[tuple[str, str], int] = defaultdict(int)
    for file in ("structure", "templates"):
        for key in stats[file]:
            if key in node:
                names_of_ids[node[key]] += 1
    g.left_out["structure or design listed under a second id of one name (one node)"] = sum(
        n - 1 for n in names_of_ids.values())

    def link(head: str, relation: str, target: str) -> None:
        if head not in node:
            return
        if target in node:
            g.add(node[head], relation, node[target])
        else:
            g.left_out[f"{relation} naming a record with an internal name (not used)"] += 1

    for key, rec in sorted(stats["research"].items()):
        for relation in ("requiredResearch", "resultComponents", "resultStructures", "redComponents",
                         "redStructures", "requiredStructures"):
            for target in rec.get(relation) or []:
                link(key, relation, target)
        g.left_out["research topic's points, power, upgrade results and icons (not used)"] += 1
    for key, rec in sorted(stats["structure"].items()):
        for target in rec.get("weapons") or []:
            link(key, "weapons", target)
        for relation in ("sensorID", "ecmID"):
            if present(rec.get(relation)):
                link(key, relation, rec[relation])
        if key in node and present(rec.get("type")):
            g.add(node[key], "type", ("StructureType", enum(rec["type"])))
    for key, rec in sorted(stats["templates"].items()):
        for part, file in TEMPLATE_PARTS.items():
            value = rec.get(part)
            for target in (value if isinstance(value, list) else [value] if present(value) else []):
                if target in stats[file]:
                    link(key, part, target)
                else:
                    g.left_out[f"design's {part} naming no record of the file"] += 1
    for key, rec in sorted(stats["weapons"].items()):
        if key in node:
            for field, etype in (("weaponSubClass", "WeaponSubClass"), ("weaponClass", "WeaponClass"),
                                 ("weaponEffect", "WeaponEffect")):
                if present(rec.get(field)):
                    g.add(node[key], field, (etype, enum(rec[field])))
    for key, rec in sorted(stats["body"].items()):
        if key in node:
            if present(rec.get("class")):
                g.add(node[key], "class", ("BodyClass", text(rec["class"])))
            if present(rec.get("size")):
                g.add(node[key], "size", ("BodySize", enum(rec["size"])))
    for key, rec in sorted(stats["propulsion"].items()):
        if key in node and present(rec.get("type")):
            g.add(node[key], "type", ("PropulsionType", text(rec["type"])))
    g.left_out["hit points, costs, ranges, damage, models and sounds of every record (not used)"] = 1
    return g


# -- 2. The Gramps example family tree, Wikidata English labels (gramps' example.gramps) -----------------------------
EXAMPLE = "usr/share/doc/gramps/example/gramps/example.gramps"
NS = "{http://gramps-project.org/xml/1.7.1/}"
LATIN = re.compile(r"^[\u0000-\u024f\u1e00-\u1eff\u2018-\u201d]*$")  # Latin letters (with accents), digits, marks
PLACE_TYPES = {"City": "city", "County": "county", "Parish": "parish", "State": "state", "Country": "country"}
EVENTS = {"Birth": "place of birth", "Death": "place of death", "Burial": "place of burial"}  # P19, P20, P119
SEXES = {"M": "male", "F": "female"}  # P21's items for Gramps' gender codes; "U" (unknown) gives no triple


def person_name(person: ET.Element) -> str | None:
    """The person's birth name as written: given names, surname and suffix ("Sarah Suzanne Warner"); none where a
    part is unknown (no given name or surname, a "?" in it) or written in a script other than the Latin one."""
    name = person.find(f"{NS}name")
    if name is None:
        return None
    first, surname = text(name.findtext(f"{NS}first") or ""), text(name.findtext(f"{NS}surname") or "")
    if not first or not surname:
        return None
    full = text(" ".join(x for x in (first, surname, name.findtext(f"{NS}suffix") or "") if x))
    if "?" in full or not LATIN.match(full):
        return None
    return full


def familytree_wikidata(src: Path) -> Graph:
    g = Graph("familytree_wikidata", "jsonl",
              priority=("human", "city", "county", "parish", "state", "country", "family name", "sex or gender"))
    files = deb_files(source(src, "gramps_5.1.5-1_all.deb"), lambda p: p == EXAMPLE)
    raw = files[EXAMPLE]
    root = ET.fromstring(raw)
    # places: each its type, name and enclosing place; a place's state is the first State above it
    places = {p.get("handle"): p for p in root.iter(f"{NS}placeobj")}

    def pname(p: ET.Element) -> str:
        return text(p.find(f"{NS}pname").get("value"))

    def parent(p: ET.Element) -> ET.Element | None:
        ref = p.find(f"{NS}placeref")
        return None if ref is None else places[ref.get("hlink")]

    def state_of(p: ET.Element) -> str:
        up = parent(p)
        while up is not None and up.get("type") != "State":
            up = parent(up)
        return pname(up) if up is not None else pname(p)

    for p in places.values():
        if p.get("type") not in PLACE_TYPES:
            raise SystemExit(f"{g.name}: a place of type {p.get('type')}")
    # one name, one type and one state is one place ("Philadelphia" listed twice in PA); else named apart by state
    count: dict[tuple[str, str], set[str]] = defaultdict(set)
    for p in places.values():
        count[(p.get("type"), pname(p))].add(state_of(p))
    place_node: dict[str, tuple[str, str]] = {}
    seen: dict[tuple[str, str], int] = defaultdict(int)
    for handle, p in sorted(places.items()):
        key = (p.get("type"), pname(p))
        if not LATIN.match(key[1]):
            g.left_out["place whose name is not in Latin letters (not used)"] += 1
            continue
        name = key[1] if len(count[key]) == 1 else f"{key[1]} ({state_of(p)})"
        place_node[handle] = (PLACE_TYPES[key[0]], name)
        seen[place_node[handle]] += 1
        if name != key[1]:
            g.left_out["place named apart by its state"] += 1
    g.left_out["place the file lists twice in one state (one node)"] = sum(n - 1 for n in seen.values())
    for handle, p in sorted(places.items()):
        up = parent(p)
        if handle in place_node and up is not None and up.get("handle") in place_node:
            relation = "country" if up.get("type") == "Country" else "located in the administrative territorial entity"
            g.add(place_node[handle], relation, place_node[up.get("handle")])  # P17, P131
    # people: named as written, named apart by birth year, then by their Gramps id
    events = {e.get("handle"): e for e in root.iter(f"{NS}event")}
    persons = {p.get("handle"): p for p in root.iter(f"{NS}person")}
    named: dict[str, str] = {}
    born: dict[str, str] = {}
    for handle, p in sorted(persons.items()):
        name = person_name(p)
        if name is None:
            g.left_out["person whose name is unknown in part or not in Latin letters (not used)"] += 1
            continue
        named[handle] = name
        for ref in p.findall(f"{NS}eventref"):
            e = events[ref.get("hlink")]
            date = e.find(f"{NS}dateval")
            if ref.get("role") == "Primary" and e.findtext(f"{NS}type") == "Birth" and date is not None:
                year = (date.get("val") or "")[:4]
                if year.isdigit():
                    born[handle] = year
    # a parent's name as the file writes it: the father's, else the mother's, of the person's first family
    parent_name: dict[str, str] = {}
    for f in root.iter(f"{NS}family"):
        for ref in (f.find(f"{NS}father"), f.find(f"{NS}mother")):
            if ref is not None and ref.get("hlink") in named:
                for child in f.findall(f"{NS}childref"):
                    parent_name.setdefault(child.get("hlink"), named[ref.get("hlink")])

    def tell(h: str) -> str:
        if h in born:
            return f"born {born[h]}"
        return f"child of {parent_name[h]}" if h in parent_name else persons[h].get("id")

    shared: dict[str, int] = defaultdict(int)
    for name in named.values():
        shared[name] += 1
    first = {h: n if shared[n] == 1 else f"{n} ({tell(h)})" for h, n in named.items()}
    again: dict[str, int] = defaultdict(int)
    for name in first.values():
        again[name] += 1
    people = {h: n if again[n] == 1 else f"{named[h]} ({persons[h].get('id')})" for h, n in first.items()}
    people = unique(g, people)
    g.left_out["person named apart (born <year>, else child of <parent>, else the Gramps id)"] = sum(
        1 for h in people if people[h] != named[h])
    for handle, p in sorted(persons.items()):
        if handle not in people:
            continue
        node = ("human", people[handle])
        sex = p.findtext(f"{NS}gender")
        if sex in SEXES:
            g.add(node, "sex or gender", ("sex or gender", SEXES[sex]))  # P21
        g.add(node, "family name", ("family name", text(p.find(f"{NS}name").findtext(f"{NS}surname"))))  # P734
        for ref in p.findall(f"{NS}eventref"):
            e = events[ref.get("hlink")]
            kind, place = e.findtext(f"{NS}type"), e.find(f"{NS}place")
            if ref.get("role") == "Primary" and kind in EVENTS and place is not None:
                if place.get("hlink") in place_node:
                    g.add(node, EVENTS[kind], place_node[place.get("hlink")])
                else:
                    g.left_out["birth, death or burial place not in Latin letters (not used)"] += 1
            else:
                g.left_out["event that is no birth, death or burial of the person, or has no place (not used)"] += 1
    for f in root.iter(f"{NS}family"):
        father, mother = f.find(f"{NS}father"), f.find(f"{NS}mother")
        father = people.get(father.get("hlink")) if father is not None else None
        mother = people.get(mother.get("hlink")) if mother is not None else None
        rel = f.find(f"{NS}rel")
        if father and mother and rel is not None and rel.get("type") == "Married":
            g.add(("human", father), "spouse", ("human", mother))  # P26, both ways as Wikidata states it
            g.add(("human", mother), "spouse", ("human", father))
        for child in f.findall(f"{NS}childref"):
            kid = people.get(child.get("hlink"))
            if kid is None:
                g.left_out["child not used (name unknown in part)"] += 1
                continue
            if father:
                g.add(("human", kid), "father", ("human", father))  # P22
            if mother:
                g.add(("human", kid), "mother", ("human", mother))  # P25
        g.left_out["family's marriage events (not used)"] += len(f.findall(f"{NS}eventref"))
    g.left_out["dates, coordinates, sources, citations, notes, media and repositories (not used)"] = 1
    return g


def build_all(src: Path) -> list[Graph]:
    return [warzone_dbpedia(src), familytree_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
