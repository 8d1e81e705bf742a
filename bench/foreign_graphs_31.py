"""Rebuild the THIRTY-FIRST held-out set of "foreign" graphs, docs/programs/graphs31/, from data in Debian packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of three Debian packages
ships: brewtarget's `usr/share/brewtarget/default_db.sqlite` (the beer-brewing program's default database: the BJCP
beer styles with their categories and the commercial beers each style names as examples, the hops with their origin,
the malts and other fermentables with their origin and maltster, the yeasts with their laboratory, and the program's
sample recipes with their style and ingredients), freeciv-data's `usr/share/games/freeciv/nation/*.ruleset` as its
`default/nationlist.ruleset` includes them (the nations of the game Freeciv: each nation's historical leaders, the
groups it belongs to, the nations that may split from it in a civil war, the nations it conflicts with and its city
style) and wesnoth-1.16-data's `usr/share/games/wesnoth/1.16/data/core/units/**.cfg`, `core/units.cfg` and
`multiplayer/` (the unit types of the game The Battle for Wesnoth: each unit's race, alignment, attacks and the units
it advances to; the multiplayer eras, their factions and the units each faction recruits or is led by). The script
only renames fields to a vocabulary's property labels, samples deterministically and writes the files; see
docs/programs/graphs31/PROVENANCE.md. None of these datasets is one the first thirty sets (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_30.py) used, and none of the three packages was used by them.

By hand only: no test imports this module and it is not part of any flow. It needs no Python package: download the
three Debian packages (the versions below, from Debian 12 "bookworm") into one folder, and the script reads each
`.deb` as an archive (an `ar` archive holding `data.tar.xz`) after checking its SHA-256; nothing is installed,
unpacked onto the system or run:

    mkdir -p /tmp/graphs31-debs && cd /tmp/graphs31-debs
    apt-get download brewtarget=3.0.6-1 freeciv-data=3.0.6-1+deb12u1 wesnoth-1.16-data=1:1.16.9-1
    cd -  # back to the repository
    python3 bench/foreign_graphs_31.py --debs /tmp/graphs31-debs            # writes docs/programs/graphs31/*.jsonl
    python3 bench/foreign_graphs_31.py --debs /tmp/graphs31-debs --out DIR  # elsewhere

(These files were built with Python 3.11; the archives are read with `tarfile` and the data files with the standard
library alone (`sqlite3` for brewtarget's database, copied to a temporary file first; plain text parsing for the
Freeciv ruleset and Wesnoth WML files), so the version of Python does not change the output.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
One name is one thing within a type: the brewing database lists each hop, malt, yeast and style it uses in a recipe
again as a hidden copy of the same name, and those copies are the same node; a Freeciv leader listed by two nations
is one person with an edge to each. Two Wesnoth factions of one name in two eras ("Rebels" of the Default era and of
the Age of Heroes, whose recruits differ) are named apart with their era: "Rebels (Age of Heroes)". The script stops
if two nations, two unit types or two catalogue rows of one table ever share a name."""

from __future__ import annotations

import re
import sqlite3
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files as read_deb  # noqa: E402
from foreign_sources import named_apart, package_file, present, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs31"

# the three Debian packages (Debian 12 "bookworm"): file name and the SHA-256 of the .deb as downloaded
DEBS = {
    "brewtarget": ("brewtarget_3.0.6-1_amd64.deb",
                   "e53dd2b2d73f2baf81903a7a341fb412db85ace5574cea551c81fc05e768b601"),
    "freeciv-data": ("freeciv-data_3.0.6-1+deb12u1_all.deb",
                     "278bed022b87408ca9923aa727bef3d6c97875c811723e93ff95dded1b9b76b2"),
    "wesnoth-1.16-data": ("wesnoth-1.16-data_1%3a1.16.9-1_all.deb",
                          "1012b964bd412a6770685e3324ae3b61e176caff7846192d1ee63d55cd621e26"),
}
DEBS_DIR = Path(tempfile.gettempdir()) / "graphs31-debs"  # set by --debs


def deb_files(package: str, wanted) -> dict[str, bytes]:  # noqa: ANN001  (a predicate on member paths)
    """The files of one of ``DEBS``' packages whose paths (without the leading "./") `wanted` accepts."""
    name, sha = DEBS[package]
    return read_deb(package_file(DEBS_DIR, name, {name: sha}), wanted)


# -- 1. Beer brewing, Wikidata English labels (brewtarget's default database) ----------------------------------------
EXAMPLE_SPLIT = re.compile(r"\s*[,;]\s*|\s+and\s+")  # a style's "examples": beers listed with commas, ";" and "and"
SENTENCE = re.compile(r"\. |\.$|:")  # a piece of prose, not a name ("There are no known commercial examples ...")
TRAILING_NOTE = re.compile(r"\s*\([^()]*\)$")  # a note after a beer's name: "(WI)", "(blue cap)", "(Finland)"


def example_beers(examples: str) -> list[str]:
    """The commercial beers a style's `examples` field lists, by a fixed rule: split at commas, semicolons and the word
    "and"; a trailing note in brackets is dropped ("Rochefort 10 (blue cap)" -> "Rochefort 10"), as is a leading
    "[US] " region mark; a piece that then starts with a lower-case letter, is shorter than three characters, holds a
    colon, a full stop ending a sentence or an unclosed bracket is not a beer's name (a fragment of prose) and is left
    out."""
    out = []
    for piece in EXAMPLE_SPLIT.split(examples or ""):
        piece = text(TRAILING_NOTE.sub("", text(piece)))
        piece = re.sub(r"^\[[A-Z]+\]\s*", "", piece)
        balanced = piece.count("(") == piece.count(")")
        if len(piece) >= 3 and piece[0].isupper() and not SENTENCE.search(piece) and balanced:
            out.append(piece)
    return out


def brewing_wikidata() -> Graph:
    g = Graph("brewing_wikidata", "jsonl",
              priority=("beer style", "beer", "recipe", "hop", "fermentable", "yeast", "style category", "country",
                        "company", "beer type", "fermentable type", "hop use", "style guide"))
    files = deb_files("brewtarget", lambda p: p == "usr/share/brewtarget/default_db.sqlite")
    with tempfile.TemporaryDirectory() as tmp:
        db_path = Path(tmp) / "default_db.sqlite"
        db_path.write_bytes(files["usr/share/brewtarget/default_db.sqlite"])
        db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        styles = db.execute("SELECT id, name, s_type, category, style_guide, examples, display FROM style "
                            "WHERE deleted = 0 ORDER BY id").fetchall()
        hops = db.execute("SELECT id, name, origin, htype, substitutes, display FROM hop WHERE deleted = 0 "
                          "ORDER BY id").fetchall()
        ferms = db.execute("SELECT id, name, ftype, origin, supplier, display FROM fermentable WHERE deleted = 0 "
                           "ORDER BY id").fetchall()
        yeasts = db.execute("SELECT id, name, laboratory, ytype, display FROM yeast WHERE deleted = 0 "
                            "ORDER BY id").fetchall()
        recipes = db.execute("SELECT id, name, style_id FROM recipe WHERE deleted = 0 ORDER BY id").fetchall()
        uses = {table: db.execute(f"SELECT {table}_id, recipe_id FROM {table}_in_recipe ORDER BY id").fetchall()
                for table in ("hop", "fermentable", "yeast", "misc")}
        misc_count = db.execute("SELECT count(*) FROM misc").fetchone()[0]
        db.close()
    # the catalogue rows (display = 1) must be of distinct names; hidden rows are the recipes' copies of them
    for rows in (styles, hops, ferms, yeasts):
        unique(g, {str(r[0]): text(r[1]) for r in rows if r[-1] == 1})
    style_name = {r[0]: text(r[1]) for r in styles}
    for _, name, s_type, category, guide, examples, display in styles:
        if display != 1:
            g.left_out["hidden copy of a style (the same node as its catalogue row)"] += 1
            continue
        node = ("beer style", text(name))
        if present(category):
            g.add(node, "part of", ("style category", text(category)))  # P361
            if present(guide):
                g.add(("style category", text(category)), "published in", ("style guide", text(guide)))  # P1433
        if present(s_type):
            g.add(node, "subclass of", ("beer type", text(s_type)))  # P279
        for beer in example_beers(examples):
            g.add(("beer", beer), "instance of", node)  # P31
        g.left_out["style's vital statistics, notes, profile and ingredients text (not used)"] += 1
    for _, name, origin, htype, substitutes, display in hops:
        if display != 1:
            g.left_out["hidden copy of a hop (the same node as its catalogue row)"] += 1
            continue
        node = ("hop", text(name))
        if present(origin):
            g.add(node, "country of origin", ("country", text(origin)))  # P495
        if present(htype):
            g.add(node, "has use", ("hop use", text(htype)))  # P366
        if present(substitutes):
            g.left_out["hop's substitutes (free text, not used)"] += 1
    for _, name, ftype, origin, supplier, display in ferms:
        if display != 1:
            g.left_out["hidden copy of a fermentable (the same node as its catalogue row)"] += 1
            continue
        node = ("fermentable", text(name))
        if present(ftype):
            g.add(node, "instance of", ("fermentable type", text(ftype)))  # P31
        if present(origin):
            g.add(node, "country of origin", ("country", text(origin)))  # P495
        if present(supplier):
            g.add(node, "manufacturer", ("company", text(supplier)))  # P176
    for _, name, lab, ytype, display in yeasts:
        if display != 1:
            g.left_out["hidden copy of a yeast (the same node as its catalogue row)"] += 1
            continue
        if present(lab):
            g.add(("yeast", text(name)), "manufacturer", ("company", text(lab)))  # P176
        else:
            g.left_out["yeast with no laboratory"] += 1
        if present(ytype):
            g.left_out["yeast's type, form, temperatures and attenuation (not used)"] += 1
    names = {"hop": {r[0]: text(r[1]) for r in hops}, "fermentable": {r[0]: text(r[1]) for r in ferms},
             "yeast": {r[0]: text(r[1]) for r in yeasts}}
    recipe_names = unique(g, {str(r[0]): text(r[1]) for r in recipes})
    for rid, _, style_id in recipes:
        node = ("recipe", recipe_names[str(rid)])
        if style_id in style_name:
            g.add(node, "instance of", ("beer style", style_name[style_id]))  # P31
    for table in ("hop", "fermentable", "yeast"):
        for item, rid in uses[table]:
            if str(rid) in recipe_names and item in names[table]:
                g.add(("recipe", recipe_names[str(rid)]), "made from material", (table, names[table][item]))  # P186
            else:
                g.left_out[f"{table} use naming no recipe or {table}"] += 1
    g.left_out["miscellaneous ingredients (no recipe uses one), waters, equipment and mashes (not used)"] = misc_count
    return g


# -- 2. Nations and their leaders, DBpedia camelCase (freeciv-data's nation rulesets) --------------------------------
NATION_DIR = "usr/share/games/freeciv/nation/"
NATION_LIST = "usr/share/games/freeciv/default/nationlist.ruleset"  # the nations the default rulesets include
SECTION = re.compile(r"^\[nation_([\w-]+)\]", re.M)


def ruleset_value(body: str, key: str) -> str | None:
    """The value of `key = ...` at the start of a line, up to the next line that starts a new key or section."""
    m = re.search(rf"^{key}\s*=(.*?)(?=^\w+\s*=|^\[|\Z)", body, re.M | re.S)
    return m.group(1) if m else None


def quoted(value: str | None) -> list[str]:
    """The strings of a ruleset value, the translation markers removed: _("?plural:Americans") -> Americans."""
    out = []
    for s in re.findall(r'"((?:[^"\\]|\\.)*)"', value or ""):
        out.append(text(re.sub(r"^\?[\w]+:", "", s)))
    return out


def capitalised(value: str) -> str:
    """A group or a sex as most nations write it: the game reads them without case ("core" and "Core", "male" and
    "Male" are one), so the first letter is made upper case."""
    return value[:1].upper() + value[1:]


def nations_dbpedia() -> Graph:
    g = Graph("nations_dbpedia", "jsonl", priority=("Nation", "Person", "NationGroup", "CityStyle", "Gender"))
    files = deb_files("freeciv-data", lambda p: (p.startswith(NATION_DIR) and p.endswith(".ruleset"))
                      or p == NATION_LIST)
    # the nations the default nation list includes (the sandbox ruleset's alternative "Barbarian" file is not there)
    listed = re.findall(r'^\*include "nation/([\w-]+\.ruleset)"', files[NATION_LIST].decode("utf-8"), re.M)
    for path in sorted(p for p in files if p.startswith(NATION_DIR) and Path(p).name not in listed):
        g.left_out[f"nation file the default nation list does not include ({Path(path).name})"] += 1
    nations: dict[str, str] = {}  # the section's id ("american") -> the ruleset text
    for path in sorted(NATION_DIR + name for name in listed):
        body = files[path].decode("utf-8")
        sections = SECTION.findall(body)
        if len(sections) != 1:
            raise SystemExit(f"{path}: {len(sections)} nation sections")
        if sections[0] in nations:
            raise SystemExit(f"{path}: nation {sections[0]} defined twice")
        nations[sections[0]] = body
    names = unique(g, {key: quoted(ruleset_value(body, "name"))[0] for key, body in sorted(nations.items())})
    # the game finds a nation another names by its rule name, without case: its `rule_name`, else its `name`
    by_rule = {}
    for key, body in sorted(nations.items()):
        by_rule[names[key].lower()] = names[key]
        for rule in quoted(ruleset_value(body, "rule_name")):
            by_rule[rule.lower()] = names[key]
    for key, body in sorted(nations.items()):
        node = ("Nation", names[key])
        for group in quoted(ruleset_value(body, "groups")):
            g.add(node, "group", ("NationGroup", capitalised(group)))
        leaders = ruleset_value(body, "leaders") or ""
        rows = re.findall(r'"([^"]*)"\s*,\s*"([^"]*)"', leaders)
        for leader, sex in rows[1:]:  # the first row is the table's header: "name", "sex"
            g.add(("Person", text(leader)), "leaderOf", node)
            if present(sex):
                g.add(("Person", text(leader)), "gender", ("Gender", capitalised(text(sex))))
        for label, field in (("civilWarNation", "civilwar_nations"), ("conflictsWith", "conflicts_with")):
            for other in quoted(ruleset_value(body, field)):
                if other.lower() in by_rule:
                    g.add(node, label, ("Nation", by_rule[other.lower()]))
                else:
                    g.left_out[f"{field} entry naming no nation of the package"] += 1
        for style in quoted(ruleset_value(body, "style")):
            g.add(node, "cityStyle", ("CityStyle", style))
        if ruleset_value(body, "cities"):
            g.left_out["nation's city names (not used)"] += 1
        g.left_out["nation's legend, flag, ruler titles and starting techs, buildings and units (not used)"] += 1
    g.left_out["the rulesets' units, techs, buildings and governments (not used)"] = 1
    return g


# -- 3. The Battle for Wesnoth's units, snake_case WML keys (wesnoth-1.16-data) -------------------------------------
WESNOTH = "usr/share/games/wesnoth/1.16/data/"
ERA_FACTIONS = re.compile(r"\{multiplayer/factions/([\w-]+)\.cfg\}")


def wml_value(raw: str) -> str:
    """A WML value as a name: the translation mark and the quotes removed ( _ "Elvish Fighter" -> Elvish Fighter)."""
    raw = raw.strip()
    quoted_part = re.match(r'^(_?\s*"(?:[^"]|"")*")\s*#', raw)
    if quoted_part:  # a comment after a quoted value: "baneblade" # wmllint: no spellcheck
        raw = quoted_part.group(1)
    elif not raw.startswith(("_", '"')) and " #" in raw:
        raw = raw.split(" #", 1)[0]
    if raw.startswith("_"):
        raw = raw[1:].strip()
    if len(raw) >= 2 and raw[0] == '"' and raw[-1] == '"':
        raw = raw[1:-1].replace('""', '"')
    return text(raw)


def wml_blocks(source: str, tag: str) -> list[tuple[dict[str, str], list[dict[str, str]]]]:
    """Each [tag] block at the top of a WML file: its own keys, and the keys of each [attack] directly inside it.
    Quoted values that run over several lines are read whole; comments, macros and other nested tags are skipped."""
    out: list[tuple[dict[str, str], list[dict[str, str]]]] = []
    stack: list[str] = []
    keys: dict[str, str] = {}
    attacks: list[dict[str, str]] = []
    pending = ""  # a quoted value still open at the end of a line
    for line in source.splitlines():
        if pending:
            pending += "\n" + line
            if pending.count('"') % 2 == 0:
                pending = ""
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped.startswith("{"):
            continue
        m = re.match(r"^\[(/?)([\w+]+)\]", stripped)
        if m:
            if m.group(1):
                if stack and stack[-1] == m.group(2):
                    stack.pop()
                if m.group(2) == tag and not stack:
                    out.append((keys, attacks))
                    keys, attacks = {}, []
            else:
                stack.append(m.group(2))
                if stack == [tag, "attack"]:
                    attacks.append({})
            continue
        m = re.match(r"^([\w,]+)\s*=(.*)$", stripped)
        if not m:
            continue
        value = m.group(2)
        if value.count('"') % 2 == 1:
            pending = value
            continue
        if stack == [tag]:
            keys[m.group(1)] = value
        elif stack == [tag, "attack"]:
            attacks[-1][m.group(1)] = value
    return out


def wesnoth_snake() -> Graph:
    g = Graph("wesnoth_snake", "jsonl",
              priority=("unit", "faction", "era", "race", "attack", "damage_type", "range",
                        "alignment"))
    files = deb_files("wesnoth-1.16-data", lambda p: p.startswith(WESNOTH) and p.endswith(".cfg") and (
        p.startswith(WESNOTH + "core/units/") or p == WESNOTH + "core/units.cfg"
        or p.startswith(WESNOTH + "multiplayer/factions/") or p == WESNOTH + "multiplayer/eras.cfg"))
    races = {}
    for block in re.findall(r"\[race\](.*?)\[/race\]", files[WESNOTH + "core/units.cfg"].decode("utf-8"), re.S):
        rid = re.search(r"^\s*id=(\S+)", block, re.M)
        name = re.search(r'^\s*(?:male_)?name=\s*_\s*"(?:[^"^]*\^)?([^"]*)"', block, re.M)
        if rid and name:
            races[rid.group(1)] = text(name.group(1))  # its male_name, else its name: "race^Elf" -> Elf
    units: dict[str, tuple[dict[str, str], list[dict[str, str]]]] = {}
    for path in sorted(p for p in files if p.startswith(WESNOTH + "core/units/")):
        if "/units/fake/" in path:
            g.left_out["the engine's fake unit (Fog Clearer; not a unit of the game)"] += 1
            continue
        for keys, attacks in wml_blocks(files[path].decode("utf-8"), "unit_type"):
            if "id" not in keys:
                g.left_out["unit type block with no id"] += 1
                continue
            if wml_value(keys["id"]) in units:
                raise SystemExit(f"wesnoth_snake: unit type {keys['id']} defined twice")
            units[wml_value(keys["id"])] = (keys, attacks)
    unit_names = unique(g, {uid: wml_value(k.get("name", uid)) for uid, (k, _) in sorted(units.items())})
    for uid, (keys, attacks) in sorted(units.items()):
        node = ("unit", unit_names[uid])
        race = wml_value(keys.get("race", ""))
        if present(race):
            g.add(node, "race", ("race", races.get(race, race)))
            if race not in races:
                g.left_out["unit race with no [race] entry (kept as written)"] += 1
        if present(keys.get("movement_type")):  # an internal key ("drakeglide2", "smallfoot"), not a name
            g.left_out["unit's movement type (an internal key, not used)"] += 1
        if present(keys.get("alignment")):
            g.add(node, "alignment", ("alignment", wml_value(keys["alignment"])))
        for target in wml_value(keys.get("advances_to", "")).split(","):
            target = text(target)
            if target in unit_names:
                g.add(node, "advances_to", ("unit", unit_names[target]))
            elif present(target) and target != "null":
                g.left_out["advances_to naming no core unit type"] += 1
        for attack in attacks:
            name = wml_value(attack.get("description", attack.get("name", "")))
            if not present(name):
                continue
            g.add(node, "attack", ("attack", name))
            if present(attack.get("type")):
                g.add(("attack", name), "type", ("damage_type", wml_value(attack["type"])))
            if present(attack.get("range")):
                g.add(("attack", name), "range", ("range", wml_value(attack["range"])))
        g.left_out["unit's hit points, cost, level, animations and descriptions (not used)"] += 1
    # eras: the factions each era's macro or body includes
    eras_cfg = files[WESNOTH + "multiplayer/eras.cfg"].decode("utf-8")
    macros = {m.group(1): ERA_FACTIONS.findall(m.group(2))
              for m in re.finditer(r"#define (\w+)\n(.*?)#enddef", eras_cfg, re.S)}
    era_factions: dict[str, list[str]] = {}
    for body in re.findall(r"\[era\](.*?)\[/era\]", eras_cfg, re.S):
        name = re.search(r'^\s*name=\s*_\s*"([^"]*)"', body, re.M)
        if not name:
            continue
        found = [f for macro in re.findall(r"\{(\w+)\}", body) for f in macros.get(macro, [])]
        found += ERA_FACTIONS.findall(body)
        if found:
            era_factions[text(name.group(1))] = found
        else:
            g.left_out["era of no faction file (a random era)"] += 1
    faction_files: dict[str, dict[str, str]] = {}
    for path in sorted(p for p in files if p.startswith(WESNOTH + "multiplayer/factions/")):
        blocks = wml_blocks(files[path].decode("utf-8"), "multiplayer_side")
        if len(blocks) != 1:
            raise SystemExit(f"{path}: {len(blocks)} factions")
        faction_files[Path(path).stem] = blocks[0][0]
    # a faction file's era: the first era (in the file's order) that includes it; one file is one faction
    file_era: dict[str, str] = {}
    for era, found in era_factions.items():
        for f in found:
            file_era.setdefault(f, era)
    faction_names = named_apart(g, {f: wml_value(k["name"]) for f, k in sorted(faction_files.items())},
                                {f: file_era.get(f, f) for f in faction_files})
    for era, found in sorted(era_factions.items()):
        for f in found:
            g.add(("era", era), "multiplayer_side", ("faction", faction_names[f]))
    for f, keys in sorted(faction_files.items()):
        node = ("faction", faction_names[f])
        for key in ("recruit", "leader"):
            for uid in wml_value(keys.get(key, "")).split(","):
                uid = text(uid)
                if uid in unit_names:
                    g.add(node, key, ("unit", unit_names[uid]))
                elif present(uid):
                    g.left_out[f"faction's {key} naming no core unit type"] += 1
        g.left_out["faction's random leaders, liked terrain and description (not used)"] += 1
    g.left_out["campaigns' units, unit variations, female forms, abilities and special attacks (not used)"] = 1
    return g


def build_all() -> list[Graph]:
    return [brewing_wikidata(), nations_dbpedia(), wesnoth_snake()]


def main(argv: list[str] | None = None) -> int:
    global DEBS_DIR
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--debs" in argv:
        i = argv.index("--debs")
        DEBS_DIR = Path(argv[i + 1])
        del argv[i:i + 2]
    print("debian packages: " + ", ".join(f"{p} {n.split('_')[1].replace('%3a', ':')}" for p, (n, _) in DEBS.items()))
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=(),
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
