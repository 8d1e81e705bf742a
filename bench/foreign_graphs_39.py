"""Rebuild the first half of the THIRTY-FIFTH held-out set of "foreign" graphs, docs/programs/graphs39/, from data in
a Debian package.

Nobody on the project wrote these facts: every triple is converted from the game data that one Debian package
ships, angband (the dungeon role-playing game Angband 3.5.1): its "edit" files under `etc/angband/edit/`, plain text
records of colon-separated fields (`monster.txt`, `monster_base.txt`, `object.txt`, `object_base.txt`,
`artifact.txt`, `spell.txt`, `store.txt`, `p_class.txt`, `p_race.txt`). The script only maps the records' fields to
property labels, samples by a fixed rule and writes the file; see docs/programs/graphs39/PROVENANCE.md. The dataset
is not one the first thirty-four sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_38.py)
used, and the package was not used by them (nor by graphs40, the other half of this set).

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into a folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the Debian package's `ar` archive by its
documented layout and its `data.tar.xz` with `tarfile`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs39-src && cd /tmp/graphs39-src
    apt-get update && apt-get download angband=1:3.5.1-2.5
    cd -  # back to the repository
    python3 bench/foreign_graphs_39.py --src /tmp/graphs39-src            # writes docs/programs/graphs39/*.jsonl
    python3 bench/foreign_graphs_39.py --src /tmp/graphs39-src --out DIR  # elsewhere

(These files were built with Python 3.11 and the standard library alone, so the version of Python does not change
the output. The Debian package is that of Debian 12 "bookworm", architecture amd64; only its data files are read.)

The output is deterministic for the same package file (rows sorted; the sample is the whole of the chosen files).
It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
A thing is named as the game writes it: a monster, monster kind, class, race or store by its `N:` (or `store:`)
name; an object kind by its name without the article and plural marks ("& Flask~ of oil" is "Flask of oil"), and,
where the name has neither mark (the flavoured kinds: rings, potions, scrolls ...), after its base's name, as the
game shows it ("Ring of Strength", "Potion of Cure Light Wounds"); a spell book without its brackets; an artifact by
its quoted name ("'Ringil'" is "Ringil") or, where its name is "of ...", after its object kind ("Phial of
Galadriel"); a shopkeeper by the name before the race in parentheses ("Bilbo the Friendly")."""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, named_apart, package_file, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs39"

# The package file, as `apt-get download` names it, with its SHA-256.
SOURCES = {
    "angband_1%3a3.5.1-2.5_amd64.deb": "438ec26ec2907338cb15a9c4d6b165ed0537441c1c304cf053d8d8db463be2ee",
}


def source(src: Path, name: str) -> bytes:
    return package_file(src, name, SOURCES)


# -- 1. Angband's monsters, objects, artifacts, spells, stores, classes and races, DBpedia camelCase (angband) --------
EDIT = "etc/angband/edit/"
FILES = ("monster.txt", "monster_base.txt", "object.txt", "object_base.txt", "artifact.txt", "spell.txt",
         "store.txt", "p_class.txt", "p_race.txt")
PRIORITY = ("Monster", "Artifact", "Item", "Spell", "CharacterClass", "Race", "Shopkeeper", "Store", "MonsterType",
            "ItemType")


def records(raw: bytes, opener: str) -> list[list[tuple[str, list[str]]]]:
    """The records of an edit file: each a list of (field, values) lines, a record opening at each `opener` line;
    comments (#) and blank lines dropped. A line "F:a:b" is ("F", ["a", "b"])."""
    out: list[list[tuple[str, list[str]]]] = []
    for line in raw.decode("utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        field, _, rest = line.partition(":")
        if field == opener:
            out.append([])
        if out:
            out[-1].append((field, rest.split(":")))
    return out


def first(rec: list[tuple[str, list[str]]], field: str) -> list[str] | None:
    return next((values for f, values in rec if f == field), None)


def plain(name: str) -> str:
    """An object name without the game's article and plural marks: "& Flask~ of oil" -> "Flask of oil"; the
    "|singular|plural|" form keeps the singular; a book's brackets dropped."""
    name = re.sub(r"\|([^|]*)\|[^|]*\|", r"\1", name)
    return text(name.replace("&", "").replace("~", "").strip("[] ").replace("[", "").replace("]", ""))


def tval_key(name: str) -> str:
    """A base's tval name as the files write it in several spellings ("soft armour", "soft armor")."""
    return text(name).lower().replace("armour", "armor")


def angband_dbpedia(src: Path) -> Graph:
    g = Graph("angband_dbpedia", "jsonl", priority=PRIORITY)
    files = deb_files(source(src, "angband_1%3a3.5.1-2.5_amd64.deb"), lambda p: p.startswith(EDIT)
                      and p[len(EDIT):] in FILES)
    edit = {name: files[EDIT + name] for name in FILES}

    # Object bases: "N:tval name:Display name~". Their tval numbers are not in the file: the bases are listed in the
    # order of their numbers, so the n-th base is the n-th distinct tval of object.txt (0, the game's placeholders,
    # left out; the one tval after the last base is the treasure's, copper, silver, gold, which no base names);
    # checked below against every (tval name, object name) pair store.txt and p_class.txt give.
    bases = [(tval_key(r[0][1][0]), r[0][1][1]) for r in records(edit["object_base.txt"], "N")]
    objects = records(edit["object.txt"], "N")
    numbers = sorted({int(first(r, "I")[0]) for r in objects if first(r, "I") and int(first(r, "I")[0]) != 0})
    if len(numbers) != len(bases) + 1:
        raise SystemExit(f"{g.name}: {len(bases)} object bases but {len(numbers)} tvals in object.txt")
    treasure = numbers[-1]
    tval = {key: number for (key, _), number in zip(bases, numbers)}
    base_name = {number: plain(display) for (_, display), number in zip(bases, numbers)}
    countable = {number: "~" in display for (_, display), number in zip(bases, numbers)}

    # Object kinds, by (tval, sval) and by (tval, plain name in lower case).
    kinds: dict[tuple[int, int], str] = {}
    by_name: dict[tuple[int, str], tuple[int, int]] = {}
    for r in objects:
        info, raw_name = first(r, "I"), r[0][1][1]
        tv, sv = int(info[0]), int(info[1])
        if tv == 0:
            g.left_out["object kind of tval 0 (the game's placeholders)"] += 1
            continue
        if tv == treasure:
            g.left_out["object kind of gold (treasure)"] += 1
            continue
        name = plain(raw_name)
        titled = raw_name.startswith("[") or "&" in raw_name or "~" in raw_name or not countable[tv]
        shown = name if titled else f"{base_name[tv]} of {name}"
        kinds[(tv, sv)] = shown
        by_name[(tv, name.lower())] = (tv, sv)
    # Kinds of one tval that share a name are one thing (the four "& Ring~ of Power" of the rings of power); kinds
    # of two tvals sharing a name are named apart by their base.
    shared = {f"{k[0]}:{v}": v for k, v in kinds.items()}
    kind_names = named_apart(g, shared, {key: base_name[int(key.split(":")[0])] for key in shared})

    def item(key: tuple[int, int]) -> tuple[str, str]:
        return "Item", kind_names[f"{key[0]}:{kinds[key]}"]

    def named_item(tval_name: str, name: str, what: str) -> tuple[int, int] | None:
        tv = tval.get(tval_key(tval_name))
        key = by_name.get((tv, plain(name).lower())) if tv is not None else None
        if key is None:
            g.left_out[f"{what} naming no object kind"] += 1
        return key

    for key, name in sorted(kinds.items()):
        g.add(item(key), "itemType", ("ItemType", base_name[key[0]]))

    # Monster kinds (monster_base.txt) and monsters (monster.txt).
    monster_types = {r[0][1][0] for r in records(edit["monster_base.txt"], "N")}
    monsters = [r for r in records(edit["monster.txt"], "N") if r[0][1][1] != "<player>"]
    g.left_out["the player's record in monster.txt"] += 1
    monster_names = unique(g, {r[0][1][0]: text(r[0][1][1]) for r in monsters})
    # A friend is named as written, matched without regard to case ("Ranger chieftain" is "Ranger Chieftain").
    known = {name.lower(): name for name in monster_names.values()}
    if len(known) != len(monster_names):
        raise SystemExit(f"{g.name}: two monsters of one name in different case")

    # Artifacts: "N:serial:name", "I:tval name:sval or object name".
    artifacts: dict[str, str] = {}
    artifact_base: dict[str, tuple[int, int]] = {}
    for r in records(edit["artifact.txt"], "N"):
        raw_name, info = r[0][1][1], first(r, "I")
        tv = tval[tval_key(info[0])]
        key = (tv, int(info[1])) if info[1].isdigit() else by_name.get((tv, plain(info[1]).lower()))
        if key not in kinds:
            g.left_out["artifact of no object kind"] += 1
            continue
        if raw_name.startswith("'") and raw_name.endswith("'"):
            shown = raw_name.strip("'")
        else:
            shown = f"{kinds[key]} {raw_name}"
        artifacts[raw_name] = text(shown)
        artifact_base[raw_name] = key
    unique(g, artifacts)
    for raw_name, shown in sorted(artifacts.items()):
        g.add(("Artifact", shown), "baseItem", item(artifact_base[raw_name]))

    for r in monsters:
        me = ("Monster", monster_names[r[0][1][0]])
        template = first(r, "T")
        if template and template[0] in monster_types:
            g.add(me, "monsterType", ("MonsterType", template[0]))
        for field, values in r:
            if field == "friends":
                friend = text(values[2])
                if friend == "Same":
                    g.left_out["friends: Same (the monster itself)"] += 1
                elif friend.lower() in known:
                    g.add(me, "companion", ("Monster", known[friend.lower()]))
                else:
                    g.left_out["friends naming no monster"] += 1
            elif field == "friends-base":
                g.add(me, "companionType", ("MonsterType", text(values[2])))
            elif field in ("drop", "mimic"):
                if values[0].isdigit() or values[1].isdigit():  # "tval:sval", "tval name:sval" or "tval name:name"
                    key = (int(values[0]) if values[0].isdigit() else tval.get(tval_key(values[0])), int(values[1]))
                    key = key if key in kinds else None
                    if key is None:
                        g.left_out[f"{field} naming no object kind"] += 1
                else:
                    key = named_item(values[0], values[1], field)
                if key is not None:
                    g.add(me, "drops" if field == "drop" else "mimics", item(key))
            elif field == "drop-artifact":
                name = values[0]
                if name in artifacts:
                    g.add(me, "dropsArtifact", ("Artifact", artifacts[name]))
                else:
                    g.left_out["drop-artifact naming no artifact"] += 1

    # Spells: "N:serial:name", "I:tval:sval:position" (the book that holds it). One name in one realm (tval) is one
    # spell, in each book that holds it; a name of both realms is named apart by the realm's book base.
    spells = records(edit["spell.txt"], "N")
    realm_spells = {f"{first(r, 'I')[0]}:{text(r[0][1][1])}": text(r[0][1][1]) for r in spells}
    spell_names = named_apart(g, realm_spells, {k: base_name[int(k.split(":")[0])] for k in realm_spells})
    for r in spells:
        info = first(r, "I")
        key = (int(info[0]), int(info[1]))
        if key in kinds:
            g.add(("Spell", spell_names[f"{info[0]}:{text(r[0][1][1])}"]), "book", item(key))
        else:
            g.left_out["spell in no object kind"] += 1

    # Classes: "M:spellbook tval:...", "E:tval name:object name:min:max" (starting equipment).
    class_by_number: dict[str, str] = {}
    for r in records(edit["p_class.txt"], "N"):
        me = ("CharacterClass", text(r[0][1][1]))
        class_by_number[r[0][1][0]] = me[1]
        magic = first(r, "M")
        if magic and int(magic[0]):
            for key in sorted(k for k in kinds if k[0] == int(magic[0])):
                g.add(me, "spellBook", item(key))
        for field, values in r:
            if field == "E":
                key = named_item(values[0], values[1], "class starting item")
                if key is not None and tval_key(values[0]) in tval and key[0] != tval[tval_key(values[0])]:
                    raise SystemExit(f"{g.name}: tval order does not match p_class.txt")
                if key is not None:
                    g.add(me, "startingItem", item(key))

    # Races: "C:0|1|2" the classes a character of the race may take.
    races = set()
    for r in records(edit["p_race.txt"], "N"):
        me = ("Race", text(r[0][1][1]))
        races.add(me[1])
        for number in (first(r, "C") or [""])[0].split("|"):
            if number.strip() in class_by_number:
                g.add(me, "playableClass", ("CharacterClass", class_by_number[number.strip()]))

    # Stores: "store:n:name", "owner:purse:Name (Race)", "always|normal:tval name:object name".
    for r in records(edit["store.txt"], "store"):
        store = ("Store", text(r[0][1][1]))
        for field, values in r:
            if field == "owner":
                m = re.fullmatch(r"(.+?)\s*\(([^()]+)\)", text(values[1]))
                if m and m.group(2) in races:
                    owner = ("Shopkeeper", m.group(1))
                    g.add(store, "shopkeeper", owner)
                    g.add(owner, "race", ("Race", m.group(2)))
                else:
                    g.left_out["owner with no race (the Home's)"] += 1
            elif field in ("always", "normal"):
                key = named_item(values[0], values[1], "store stock")
                if key is not None and key[0] != tval[tval_key(values[0])]:
                    raise SystemExit(f"{g.name}: tval order does not match store.txt")
                if key is not None:
                    g.add(item(key), "soldAt", store)
    return g


def build_all(src: Path) -> list[Graph]:
    return [angband_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
