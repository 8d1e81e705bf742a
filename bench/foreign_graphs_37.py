"""Rebuild the THIRTY-SEVENTH folder of held-out "foreign" graphs, docs/programs/graphs37/, from Debian packages' data.

Nobody on the project wrote these facts: every triple is converted from the data files that two Debian packages ship.
cataclysm-dda-data (`usr/share/games/cataclysm-dda/json/`: the JSON data of Cataclysm: Dark Days Ahead, a survival
game: its items with their materials and the qualities they give as tools, the recipes that craft them from other
items with a skill, proficiencies and the books that teach them, the vehicles and the vehicle parts they are built
of, the starting professions, the monsters with their materials, harvests and the monsters they grow into, and the
character traits (mutations) with their prerequisites and categories) and widelands-data
(`usr/share/games/widelands/data/tribes/`: the Lua description files of Widelands, an economy and settlement game: the
wares, workers and buildings of its five tribes, what each building is built from, takes in, produces and is worked
by, what a worker is made from and becomes with experience, and the building each is enhanced to). The script only
renames fields to property labels, samples by a fixed rule and writes the files; see
docs/programs/graphs37/PROVENANCE.md. No dataset is one the first thirty-six folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_36.py) used, and neither package was used by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into a folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the archive (the Debian package's `ar` archive by
its documented layout and its `data.tar.xz` with `tarfile`, the JSON files with `json`, the Lua files as text with
regular expressions); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs37-src && cd /tmp/graphs37-src
    apt-get update && apt-get download cataclysm-dda-data=0.F-3-9 widelands-data=2:1.1-3
    cd -  # back to the repository
    python3 bench/foreign_graphs_37.py --src /tmp/graphs37-src            # writes docs/programs/graphs37/*.jsonl
    python3 bench/foreign_graphs_37.py --src /tmp/graphs37-src --out DIR  # elsewhere

(These files were built with Python 3.11 and the standard library alone (`tarfile`, `lzma`, `json`), so the version
of Python does not change the output. The Debian packages are those of Debian 12 "bookworm".)

The output is deterministic for the same package files (rows sorted; the data taken whole but for the rules stated
in the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the game shows (an object's `name`, or its `str` where the name is given with its plural). An
object that inherits (`copy-from`) takes its parent's fields where it gives none of its own, with the game's
`extend` and `delete` applied. Two records of one kind that share a name are named apart where the script says how,
else left out and counted."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs37"

# The package files, as `apt-get download` names them, with their SHA-256.
SOURCES = {
    "cataclysm-dda-data_0.F-3-9_all.deb": "cd0c097169fe364fdb6bcdab77663d24920a063387ce2fbf1b5d3be01c141105",
    "widelands-data_2%3a1.1-3_all.deb": "0e23d645b15bcfb9e3bcae0de9bc1bdfa75a6ecb36b2e449759d6eb0b4bbd8fb",
}


def source(src: Path, name: str) -> bytes:
    return package_file(src, name, SOURCES)


# -- 1. Cataclysm: Dark Days Ahead, raw keys (cataclysm-dda-data's json/ files) -------------------------------------
CDDA_DEB = "cataclysm-dda-data_0.F-3-9_all.deb"
CDDA_JSON = "usr/share/games/cataclysm-dda/json/"
# the game's item types (each object of one of these types is an item)
ITEM_TYPES = ("GENERIC", "TOOL", "AMMO", "ARMOR", "TOOL_ARMOR", "PET_ARMOR", "COMESTIBLE", "BATTERY", "MAGAZINE",
              "BIONIC_ITEM", "BOOK", "GUN", "GUNMOD", "TOOLMOD", "WHEEL", "ENGINE")


RECIPE_CATEGORIES = ("CC_WEAPON", "CC_AMMO", "CC_ELECTRONIC", "CC_CHEM", "CC_ARMOR")


def cdda_objects(files: dict[str, bytes]) -> list[dict]:
    """Every JSON object of the json/ folder, files in path order, objects in file order."""
    out: list[dict] = []
    for path in sorted(files):
        try:
            data = json.loads(files[path].decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SystemExit(f"{path}: not JSON ({exc})") from exc
        out += [o for o in (data if isinstance(data, list) else [data]) if isinstance(o, dict)]
    return out


def as_list(value: object) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def shown_name(value: object) -> str:
    """An object's name as the game shows it: the string, or the singular `str` (`str_sp` where singular and plural
    are one) of a name given with its plural."""
    if isinstance(value, dict):
        value = value.get("str") or value.get("str_sp") or ""
    return text(value) if isinstance(value, str) else ""


class Table:
    """The objects of some types by id (an `abstract` object is a template: it is inherited from, never a thing),
    each resolved through `copy-from`."""

    def __init__(self, objects: list[dict], types: tuple[str, ...]) -> None:
        self.raw: dict[str, dict] = {}
        for o in objects:
            if o.get("type") not in types:
                continue
            key = o.get("id", o.get("abstract"))
            for k in as_list(key):
                if isinstance(k, str):
                    self.raw[k] = o  # a later object of one id replaces the earlier, as the game loads them
        self.cache: dict[str, dict] = {}

    def get(self, key: str, depth: int = 0) -> dict:
        if key in self.cache:
            return self.cache[key]
        o = self.raw[key]
        parent = o.get("copy-from")
        fields = dict(self.get(parent, depth + 1)) if parent in self.raw and parent != key and depth < 30 else {}
        fields.update({k: v for k, v in o.items() if k not in ("copy-from", "extend", "delete", "abstract", "id")})
        for k, v in (o.get("extend") or {}).items():
            fields[k] = as_list(fields.get(k)) + as_list(v)
        for k, v in (o.get("delete") or {}).items():
            gone = as_list(v)
            fields[k] = [x for x in as_list(fields.get(k)) if x not in gone]
        fields["_template"] = "id" not in o
        self.cache[key] = fields
        return fields

    def things(self) -> dict[str, dict]:
        return {k: f for k in sorted(self.raw) if not (f := self.get(k))["_template"]}


def part_id(parts: Table, key: object) -> object:
    """A vehicle's part as the game reads it: the id itself, else (a part named with its shape, "frame_cross",
    "windshield_horizontal_front") the longest leading run of its underscore-joined words that is a part's id."""
    if not isinstance(key, str) or key in parts.raw:
        return key
    words = key.split("_")
    for n in range(len(words) - 1, 0, -1):
        if "_".join(words[:n]) in parts.raw:
            return "_".join(words[:n])
    return key


def named_once(g: Graph, kind: str, things: dict[str, dict]) -> dict[str, str]:
    """id -> shown name, for the things of one kind whose shown name no other thing of that kind bears; the others
    (several things of one name, or none) are left out and counted."""
    names = {k: shown_name(f.get("name")) for k, f in things.items()}
    count = Counter(names.values())
    out = {k: n for k, n in names.items() if n and count[n] == 1}
    if len(out) < len(names):
        g.left_out[f"{kind} whose name another {kind} bears, or none (not used)"] += len(names) - len(out)
    return out


def cataclysm_raw(src: Path) -> Graph:
    g = Graph("cataclysm_raw", "jsonl",
              priority=("item", "vehicle", "vehicle_part", "monster", "profession", "mutation", "mutation_category",
                        "material", "skill", "proficiency", "tool_quality"))
    files = deb_files(source(src, CDDA_DEB),
                      lambda p: p.startswith(CDDA_JSON) and p.endswith(".json")
                      and "/obsolete" not in p[len(CDDA_JSON) - 1:])
    objects = [o for o in cdda_objects(files) if not o.get("obsolete")]
    items = named_once(g, "item", Table(objects, ITEM_TYPES).things())
    item_f = Table(objects, ITEM_TYPES)
    tables = {kind: Table(objects, (kind,)) for kind in
              ("material", "skill", "proficiency", "tool_quality", "vehicle_part", "vehicle", "MONSTER", "profession",
               "mutation", "mutation_category", "harvest")}
    names = {kind: named_once(g, kind, t.things()) for kind, t in tables.items() if kind != "harvest"}

    def node(kind: str, key: object) -> tuple[str, str] | None:
        table = items if kind == "item" else names[kind]
        if isinstance(key, str) and key in table:
            return ("monster" if kind == "MONSTER" else kind, table[key])
        g.left_out[f"link to a {kind} that is no named {kind} (not used)"] += 1
        return None

    def link(head: tuple[str, str] | None, label: str, kind: str, key: object) -> None:
        tail = node(kind, key)
        if head is not None and tail is not None:
            g.add(head, label, tail)

    # the items kept: those the vehicle parts, professions, monsters' harvests and materials name, the results of
    # the recipes of RECIPE_CATEGORIES, and the items those recipes take or are learnt from
    links: list[tuple[tuple[str, str], str, str, object]] = []
    for key, name in sorted(names["vehicle"].items()):
        for part in tables["vehicle"].get(key).get("parts", []):
            for p in as_list(part.get("parts", part.get("part"))) if isinstance(part, dict) else []:
                links.append((("vehicle", name), "parts", "vehicle_part",
                              part_id(tables["vehicle_part"], p.get("part") if isinstance(p, dict) else p)))
    for key, name in sorted(names["vehicle_part"].items()):
        links.append((("vehicle_part", name), "item", "item", tables["vehicle_part"].get(key).get("item")))
    for key, name in sorted(names["profession"].items()):
        f = tables["profession"].get(key)
        for s in as_list(f.get("skills")):
            links.append((("profession", name), "skills", "skill", s.get("name") if isinstance(s, dict) else None))
        for t in as_list(f.get("traits")):
            links.append((("profession", name), "traits", "mutation", t))
        carried = f.get("items") or {}
        for part in ("both", "male", "female"):
            value = carried.get(part) if isinstance(carried, dict) else None
            for i in (value.get("items", []) if isinstance(value, dict) else as_list(value)):
                links.append((("profession", name), "items", "item", i.get("item") if isinstance(i, dict) else i))
    harvests = {k: tables["harvest"].get(k) for k in tables["harvest"].raw}
    for key, name in sorted(names["MONSTER"].items()):
        f = tables["MONSTER"].get(key)
        for m in as_list(f.get("material")):
            links.append((("monster", name), "material", "material", m))
        up = f.get("upgrades")
        if isinstance(up, dict) and up.get("into"):
            links.append((("monster", name), "upgrades", "MONSTER", up["into"]))
        for e in harvests.get(f.get("harvest"), {}).get("entries", []):
            if e.get("type") in (None, "flesh", "bone", "skin", "offal", "blood", "bionic", "bionic_group"):
                links.append((("monster", name), "harvest", "item", e.get("drop")))
    for key, name in sorted(names["material"].items()):
        f = tables["material"].get(key)
        for field in ("repaired_with", "salvaged_into"):
            if f.get(field):
                links.append((("material", name), field, "item", f[field]))
    for key, name in sorted(names["mutation"].items()):
        f = tables["mutation"].get(key)
        for c in as_list(f.get("category")):
            links.append((("mutation", name), "category", "mutation_category", c))
        for field in ("prereqs", "prereqs2", "threshreq", "changes_to", "leads_to"):
            for t in as_list(f.get(field)):
                links.append((("mutation", name), field, "mutation", t))
    recipes = [o for o in objects if o.get("type") == "recipe" and o.get("result") in items]
    for r in recipes:
        if r.get("category") not in RECIPE_CATEGORIES:
            g.left_out["recipe of another category (not used)"] += 1
            continue
        head = ("item", items[r["result"]])
        if r.get("skill_used"):
            links.append((head, "skill_used", "skill", r["skill_used"]))
        for p in as_list(r.get("proficiencies")):
            links.append((head, "proficiencies", "proficiency", p.get("proficiency") if isinstance(p, dict) else p))
        for b in as_list(r.get("book_learn")):
            links.append((head, "book_learn", "item", b[0] if isinstance(b, list) and b else b))
        for group in as_list(r.get("components")):
            for alt in as_list(group):
                if isinstance(alt, list) and alt and alt[-1] != "LIST":
                    links.append((head, "components", "item", alt[0]))
                else:
                    g.left_out["recipe component given as a requirement list (not used)"] += 1
    kept = {items[key] for _, _, kind, key in links if kind == "item" and isinstance(key, str) and key in items} | {
        h[1] for h, *_ in links if h[0] == "item"}
    # items: materials and the tool qualities they give
    for key in sorted(items):
        if items[key] not in kept:
            continue
        f = item_f.get(key)
        head = ("item", items[key])
        for m in as_list(f.get("material")):
            material = m if isinstance(m, str) else m.get("type") if isinstance(m, dict) else None
            links.append((head, "material", "material", material))
        for q in as_list(f.get("qualities")):
            if isinstance(q, list) and q:
                links.append((head, "qualities", "tool_quality", q[0]))
    for head, label, kind, key in links:
        link(head, label, kind, key)
    return g


# -- 2. Widelands' tribes, Wikidata labels (widelands-data's data/tribes/ Lua files) ---------------------------------
WL_DEB = "widelands-data_2%3a1.1-3_all.deb"
WL_TRIBES = "usr/share/games/widelands/data/tribes/"
# the kinds of description kept (wl.Descriptions():new_<kind>_type) -> entity type
WL_KINDS = {"ware": "ware", "worker": "worker", "carrier": "worker", "productionsite": "building",
            "militarysite": "building", "trainingsite": "building", "warehouse": "building"}
# Wikidata property labels (P-numbers in docs/programs/graphs37/PROVENANCE.md)
AFFILIATION, MADE_FROM, USES, PRODUCES, OCCUPANT, FOLLOWED_BY, BASED_ON = (
    "affiliation", "made from material", "uses", "product or material produced or service provided", "occupant",
    "followed by", "based on")
LUA_STRING = r'"((?:[^"\\]|\\.)*)"'
WL_TYPE = re.compile(r"new_(\w+)_type\s*\{")
WL_NAME = re.compile(r"^\s*name\s*=\s*" + LUA_STRING, re.M)
WL_DESCNAME = re.compile(r"^\s*descname\s*=\s*(?:pgettext\s*\(\s*" + LUA_STRING + r"\s*,\s*|_\s*\(?\s*)" + LUA_STRING,
                         re.M)
WL_BECOMES = re.compile(r"^\s*becomes\s*=\s*" + LUA_STRING, re.M)
WL_ACTION = re.compile(r'"(produce|createware|recruit)=([^"]*)"')


def lua_code(raw: bytes) -> str:
    """A Lua file without its comments ("--" to the end of the line, outside strings)."""
    out = []
    for line in raw.decode("utf-8").splitlines():
        in_string, cut = False, len(line)
        for i, ch in enumerate(line):
            if ch == '"' and (i == 0 or line[i - 1] != "\\"):
                in_string = not in_string
            elif not in_string and line.startswith("--", i):
                cut = i
                break
        out.append(line[:cut])
    return "\n".join(out)


def lua_table(code: str, key: str) -> str:
    """The text inside the braces of the first top-level `key = { ... }` of a description (braces balanced)."""
    m = re.search(r"(?m)^\s*" + key + r"\s*=\s*\{", code)
    if m is None:
        return ""
    depth, start = 1, m.end()
    for i in range(start, len(code)):
        depth += {"{": 1, "}": -1}.get(code[i], 0)
        if depth == 0:
            return code[start:i]
    raise SystemExit(f"unbalanced braces after {key}")


def lua_keys(body: str) -> list[str]:
    """The keys of a table of `key = number` pairs, in order ({ log = 3, granite = 1 })."""
    return re.findall(r"(\w+)\s*=\s*\d+", body)


def widelands_wikidata(src: Path) -> Graph:
    g = Graph("widelands_wikidata", "jsonl", priority=("tribe", "building", "worker", "ware"))
    files = deb_files(source(src, WL_DEB), lambda p: p.startswith(WL_TRIBES) and p.endswith(".lua"))
    descs: dict[str, tuple[str, str, str]] = {}  # name -> (entity type, shown name, code)
    for path in sorted(files):
        code = lua_code(files[path])
        kind = WL_TYPE.search(code)
        if kind is None or path.startswith(WL_TRIBES + "initialization/"):
            continue
        if kind.group(1) not in WL_KINDS:
            g.left_out[f"{kind.group(1)} description (not used)"] += 1
            continue
        name, descname = WL_NAME.search(code), WL_DESCNAME.search(code)
        if name is None or descname is None:
            raise SystemExit(f"{path}: no name or descname")
        descs[name.group(1)] = (WL_KINDS[kind.group(1)], text(descname.group(2)), code)
    # tribes: their shown name (init.lua) and the wares, workers and buildings their units.lua lists
    tribes: dict[str, str] = {}
    tribe_of: dict[str, list[str]] = defaultdict(list)
    for path in sorted(files):
        rest = path[len(WL_TRIBES + "initialization/"):]
        if not path.startswith(WL_TRIBES + "initialization/") or rest.count("/") != 1:
            continue
        tribe, file = rest.split("/")
        code = lua_code(files[path])
        if file == "init.lua":
            m = WL_DESCNAME.search(code)
            if m is None:
                raise SystemExit(f"{path}: no descname")
            tribes[tribe] = text(m.group(2))
        elif file == "units.lua":
            for listed in re.findall(r"name\s*=\s*" + LUA_STRING, code):
                if listed in descs and tribe not in tribe_of[listed]:
                    tribe_of[listed].append(tribe)
    # names: the shown name, told apart by its tribes' names where two share one; left out where one tribe has two
    shown: dict[str, str] = {}
    for etype in ("ware", "worker", "building"):
        keyed = {k: d[1] for k, d in descs.items() if d[0] == etype and k in tribe_of}
        tell = {k: ", ".join(tribes[t] for t in tribe_of[k]) for k in keyed}
        count = Counter(keyed.values())
        told = {k: n if count[n] == 1 else f"{n} ({tell[k]})" for k, n in keyed.items()}
        count = Counter(told.values())
        for k, n in sorted(told.items()):
            if count[n] == 1:
                shown[k] = n
            else:
                g.left_out[f"{etype} whose name another {etype} of its tribe bears (not used)"] += 1
    g.left_out["description no tribe lists (not used)"] = sum(1 for k in descs if k not in tribe_of)

    def node(key: str) -> tuple[str, str] | None:
        if key in shown:
            return (descs[key][0], shown[key])
        g.left_out["link to a ware, worker or building no tribe lists (not used)"] += 1
        return None

    def link(head: str, label: str, tail: str) -> None:
        h, t = node(head), node(tail)
        if h is not None and t is not None:
            g.add(h, label, t)

    for key in sorted(shown):
        etype, _, code = descs[key]
        for tribe in tribe_of[key]:
            g.add((etype, shown[key]), AFFILIATION, ("tribe", tribes[tribe]))
        for cost in lua_keys(lua_table(code, "buildcost")):  # what it is built or made from
            tail_type = descs.get(cost, ("",))[0]
            link(key, MADE_FROM if tail_type == "ware" or etype == "building" else BASED_ON, cost)
        if etype == "building":
            for ware in re.findall(r"name\s*=\s*" + LUA_STRING, lua_table(code, "inputs")):
                link(key, USES, ware)
            for worker in lua_keys(lua_table(code, "working_positions")):
                link(key, OCCUPANT, worker)
            enhancement = re.search(r"name\s*=\s*" + LUA_STRING, lua_table(code, "enhancement"))
            if enhancement:
                link(key, FOLLOWED_BY, enhancement.group(1))
        if etype == "worker":
            becomes = WL_BECOMES.search(code)
            if becomes:
                link(key, FOLLOWED_BY, becomes.group(1))
        for action, args in WL_ACTION.findall(code):
            for arg in args.split():
                made = arg.split(":")[0]
                if made in descs:
                    link(key, PRODUCES, made)
    return g


def build_all(src: Path) -> list[Graph]:
    return [cataclysm_raw(src), widelands_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
