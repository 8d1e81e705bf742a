"""Rebuild the FORTY-SEVENTH folder of held-out "foreign" graphs, docs/programs/graphs47/, from packages' data files.

Nobody on the project wrote these facts: every triple is converted from data files that npm and PyPI packages ship:
name-suggestion-index (npm: OpenStreetMap's index of the brands of shops, restaurants, banks, fuel stations and other
businesses, each with the countries or regions it trades in, its kind of business, its cuisine and its operating
company, and the English Wikidata labels of those brands and companies) with @rapideditor/country-coder (npm: the
countries and territories of the world, the sovereign country of each territory and the UN M49 regions each lies in),
and easybuild-easyconfigs (PyPI: EasyBuild's build recipes for scientific software, each naming its dependencies, its
compiler toolchain and its module class) with easybuild-framework (PyPI: the module classes' English descriptions).
The script only maps the files' fields to labels, samples by fixed rules and writes the files; see
docs/programs/graphs47/PROVENANCE.md. The datasets are not ones the first forty-four folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_44.py) used, and the packages were not used by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the archives with `tarfile` (the npm tarballs and the
PyPI source archives), `json` and `ast` (an easyconfig is Python syntax: it is parsed, never run, and only literal
values are read); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs47-src && cd /tmp/graphs47-src
    npm pack name-suggestion-index@8.0.20260918 @rapideditor/country-coder@5.6.1
    pip download --no-deps easybuild-easyconfigs==5.4.1 easybuild-framework==5.4.1
    cd -  # back to the repository
    python3 bench/foreign_graphs_47.py --src /tmp/graphs47-src            # writes docs/programs/graphs47/*.jsonl
    python3 bench/foreign_graphs_47.py --src /tmp/graphs47-src --out DIR  # elsewhere

(These files were built with Python 3.11 and the standard library alone, so the version of Python does not change
the output. PyPI serves both EasyBuild packages as source archives only.)

The output is deterministic for the same package files (rows sorted; sampling by fixed rules). It prints the source
files, then one line per graph with its counts. Check the files with `tasks.graph.importers.import_graph_file` (the
project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
A brand and a company are named by their English Wikidata label as the index ships it ("McDonald's"), a country, a
territory and a region by country-coder's `nameEn`, a kind of business and a cuisine by the OpenStreetMap tag value
with its underscores as spaces ("fast food"); a piece of software and a toolchain by the easyconfig's `name`
("GROMACS", "foss"), a module class by its description in easybuild-framework up to its first parenthesis. Two
brands of one label are told apart by their Wikidata description in parentheses; a name standing for two types gets
the writer's " (<type>)" on the type of lower priority."""

from __future__ import annotations

import ast
import io
import json
import sys
import tarfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs47"

# The package files, as `npm pack` and `pip download` name them, with their SHA-256.
NSI_TGZ = "name-suggestion-index-8.0.20260918.tgz"
COUNTRY_CODER_TGZ = "rapideditor-country-coder-5.6.1.tgz"
EASYCONFIGS_SDIST = "easybuild_easyconfigs-5.4.1.tar.gz"
FRAMEWORK_SDIST = "easybuild_framework-5.4.1.tar.gz"
SOURCES = {
    NSI_TGZ: "3ee22f0f0a99528ac9c65a57211575defd968e21fd6374e746bfd02e94422121",
    COUNTRY_CODER_TGZ: "6b13dfc427ed42a6d78da66eab6a0faf5969c0ccc23e59c1eb4d659592b4b6a6",
    EASYCONFIGS_SDIST: "9b0407a0dd19d4c1ccfd2735392df0d22a09738254b10fc3ed7cf826d44c47c2",
    FRAMEWORK_SDIST: "18c7cb3cdb448a2ec9b4f9cdc38517b5f9ca1b63b5691f1589f67f114958c2c9",
}


def tar_members(src: Path, archive: str, wanted) -> dict[str, bytes]:  # noqa: ANN001  (a predicate on the path)
    """The files of a gzipped tar archive (an npm tarball, a PyPI source archive) whose paths `wanted` accepts, the
    archive checked by its SHA-256."""
    out: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(package_file(src, archive, SOURCES)), mode="r:gz") as tar:
        for m in tar.getmembers():
            if m.isfile() and wanted(m.name):
                out[m.name] = tar.extractfile(m).read()
    return out


def tar_json(src: Path, archive: str, member: str) -> dict:
    files = tar_members(src, archive, lambda name: name == member)
    if member not in files:
        raise SystemExit(f"{archive} has no {member}")
    return json.loads(files[member].decode("utf-8"))


# -- 1. International brands and where they trade, DBpedia labels (name-suggestion-index + country-coder) -----------
NSI_JSON = "package/dist/json/nsi.json"
NSI_WIKIDATA = "package/dist/wikidata/wikidata.json"
BORDERS = "package/src/data/borders.json"
BRAND_PRIORITY = ("Brand", "Company", "Country", "Territory", "Region", "Industry", "Cuisine")
# country-coder's levels of the UN M49 groups a country lies in (its `groups`); other groups (the EU, the UN, shared
# landforms such as "Great Britain", groups of a country's parts) are not regions here
M49_LEVELS = ("world", "region", "subregion", "intermediateRegion")
# country-coder's levels of a country's own parts and dependencies; a feature without a level is a country or territory
TERRITORY_LEVELS = ("territory", "subterritory")
# the index's brand categories whose OpenStreetMap key names a kind of business (not "advertising" totems,
# "man_made" charge points, "landuse" estates, "highway" service areas, "emergency", "club" or "waterway" features)
BUSINESS_KEYS = ("amenity", "shop", "office", "tourism", "leisure", "craft", "healthcare")


def words(tag_value: str) -> str:
    """An OpenStreetMap tag value as words: "fast_food" -> "fast food"."""
    return text(tag_value.replace("_", " "))


def brands_dbpedia(src: Path) -> Graph:
    g = Graph("brands_dbpedia", "jsonl", priority=BRAND_PRIORITY)
    nsi = tar_json(src, NSI_TGZ, NSI_JSON)["nsi"]
    wikidata = tar_json(src, NSI_TGZ, NSI_WIKIDATA)["wikidata"]
    features = [f["properties"] for f in tar_json(src, COUNTRY_CODER_TGZ, BORDERS)["features"]]

    # country-coder: every identifier a location set may use (ISO 3166-1 alpha-2, alpha-3 and numeric codes, M49
    # codes, aliases, Wikidata QIDs and English names, as country-coder's own look-up accepts them, in any case)
    by_code: dict[str, dict] = {}
    for p in features:
        for code in [p.get("iso1A2"), p.get("iso1A3"), p.get("iso1N3"), p.get("m49"), p["wikidata"], p["nameEn"],
                     *p.get("aliases", [])]:
            if code:
                by_code[code.lower()] = p
    by_iso2 = {p["iso1A2"]: p for p in features if p.get("iso1A2")}

    def place_type(p: dict) -> str:
        level = p.get("level")
        if level in M49_LEVELS:
            return "Region"
        if level is None or level in TERRITORY_LEVELS:
            return "Territory" if p.get("country") else "Country"
        return ""  # a shared landform, a group of a country's parts, a union: not a place node here

    def place(p: dict) -> tuple[str, str]:
        return (place_type(p), text(p["nameEn"]))

    # the sample: every brand (an item under "brands/" with a `brand:wikidata` the index gives an English label for)
    # whose location set includes at least two countries, territories or regions, or one region
    served: dict[str, set[str]] = defaultdict(set)  # brand QID -> country-coder QIDs
    kinds: dict[str, set[str]] = defaultdict(set)
    cuisines: dict[str, set[str]] = defaultdict(set)
    operators: dict[str, set[str]] = defaultdict(set)
    for path in sorted(nsi):
        if not path.startswith("brands/"):
            continue
        if path.split("/")[1] not in BUSINESS_KEYS:
            g.left_out["brand item of a category that is no kind of business"] += len(nsi[path]["items"])
            continue
        kind = words(path.rsplit("/", 1)[-1])
        for item in nsi[path]["items"]:
            tags = item["tags"]
            qid = tags.get("brand:wikidata", "")
            if not qid:
                g.left_out["brand item with no brand:wikidata"] += 1
                continue
            if not text(wikidata.get(qid, {}).get("label", "")):
                g.left_out["brand with no Wikidata label in the index"] += 1
                continue
            for code in item.get("locationSet", {}).get("include", []):
                p = by_code.get(str(code).lower()) if isinstance(code, str) else None
                if p is None:
                    g.left_out["location that is no country-coder feature (a custom area or a circle)"] += 1
                elif not place_type(p):
                    g.left_out["location that is a landform, union or group of a country's parts"] += 1
                else:
                    served[qid].add(p["wikidata"])
            kinds[qid].add(kind)
            for c in (tags.get("cuisine") or "").split(";"):
                if words(c):
                    cuisines[qid].add(words(c))
            op = tags.get("operator:wikidata", "")
            if op and op != qid:
                operators[qid].add(op)
    by_qid = {p["wikidata"]: p for p in features}
    sample = sorted(q for q, places in served.items()
                    if len(places) >= 2 or any(place_type(by_qid[p]) == "Region" for p in places))
    g.left_out["brand trading in one country or territory only (or in custom areas only)"] += len(kinds) - len(sample)

    def label(qid: str) -> str:
        return text(wikidata[qid]["label"])

    in_sample = set(sample)
    companies = sorted({op for q in sample for op in operators[q]
                        if op not in in_sample and text(wikidata.get(op, {}).get("label", ""))})
    orgs = sample + companies
    names = named_apart(g, {q: label(q) for q in orgs},
                        {q: text(wikidata[q].get("description", "")) or q for q in orgs})

    def org(qid: str) -> tuple[str, str]:
        return ("Brand" if qid in in_sample else "Company", names[qid])

    used_places: set[str] = set()
    for q in sample:
        head = org(q)
        for p in sorted(served[q]):
            g.add(head, "regionServed", place(by_qid[p]))
            used_places.add(p)
        for kind in sorted(kinds[q]):
            g.add(head, "industry", ("Industry", kind))
        for c in sorted(cuisines[q]):
            g.add(head, "cuisine", ("Cuisine", c))
        for op in sorted(operators[q]):
            if op in names:
                g.add(head, "operator", org(op))
            else:
                g.left_out["operator with no Wikidata label in the index"] += 1

    # the places' own links: a territory's sovereign country, and each place's smallest M49 regions; region A lies in
    # region B where every country-coder feature listing A among its groups also lists B (B's set the larger), and B
    # is a smallest such region
    listing: dict[str, set[str]] = defaultdict(set)  # M49 region QID -> QIDs of the features listing it
    for p in features:
        for code in p.get("groups", []):
            r = by_code.get(code.lower())
            if r is not None and r.get("level") in M49_LEVELS:
                listing[r["wikidata"]].add(p["wikidata"])
    members = dict(listing)

    def smallest(regions: set[str]) -> list[str]:
        return sorted(r for r in regions
                      if not any(o != r and members[o] < members[r] for o in regions))

    def region_groups(p: dict) -> set[str]:
        found = {by_code[c.lower()]["wikidata"] for c in p.get("groups", []) if c.lower() in by_code}
        return {r for r in found if by_qid[r].get("level") in M49_LEVELS}

    todo, done = sorted(used_places), set()
    while todo:
        qid = todo.pop()
        if qid in done:
            continue
        done.add(qid)
        p = by_qid[qid]
        head = place(p)
        if place_type(p) == "Territory":
            sovereign = by_iso2.get(p["country"])
            if sovereign is None or not place_type(sovereign):
                g.left_out["territory whose sovereign country is no country node"] += 1
            else:
                g.add(head, "country", place(sovereign))
                todo.append(sovereign["wikidata"])
        if place_type(p) == "Region":  # a region no feature lists (the world) lies in none
            wider = {r for r in members if qid in members and r != qid and members[qid] < members[r]}
        else:
            wider = region_groups(p)
        for r in smallest(wider):
            g.add(head, "isPartOf", place(by_qid[r]))
            todo.append(r)
    return g


# -- 2. Scientific software of EasyBuild's 2023a toolchains, snake_case labels (easybuild-easyconfigs) --------------
EASYCONFIGS = "easybuild_easyconfigs-5.4.1/easybuild/easyconfigs/"
FRAMEWORK_CONFIG = "easybuild_framework-5.4.1/easybuild/tools/config.py"
GENERATION = "2023a"  # the sample: the toolchains of this version, and the GCC they are built on
GENERATION_TOOLCHAIN = "foss"  # whose easyconfig of that version names the generation's GCC
SOFTWARE_PRIORITY = ("toolchain", "software", "module class")


def _assignments(tree: ast.Module) -> dict[str, ast.expr]:
    """An easyconfig's top-level assignments `name = value`, by name (a later one replacing an earlier one)."""
    return {node.targets[0].id: node.value for node in tree.body
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)}


def _literal(node: ast.expr | None) -> object:
    """A literal value (a string, a number, a dict or list of them); None where the value is not a literal."""
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        return None


def _string(node: ast.expr, strings: dict[str, str]) -> str | None:
    """A string literal, or a variable the file assigned a string literal to (`local_gccver`); else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return strings.get(node.id)
    return None


def _first_names(node: ast.expr | None, strings: dict[str, str]) -> tuple[list[str], int]:
    """The names in a dependency list: the first item of each tuple, a string or a variable the file assigned a
    string to (`local_name`); returns them and the number of entries read no name from."""
    if node is None:
        return [], 0
    if not isinstance(node, (ast.List, ast.Tuple)):
        return [], 1
    names, unread = [], 0
    for e in node.elts:
        name = _string(e.elts[0] if isinstance(e, ast.Tuple) and e.elts else e, strings)
        if name is None:
            unread += 1
        else:
            names.append(name)
    return names, unread


def module_classes(src: Path) -> dict[str, str]:
    """easybuild-framework's DEFAULT_MODULECLASSES (a list literal of (class, description) pairs in
    easybuild/tools/config.py; the first pair's class is a variable), each description up to its first parenthesis."""
    raw = tar_members(src, FRAMEWORK_SDIST, lambda name: name == FRAMEWORK_CONFIG)[FRAMEWORK_CONFIG]
    value = _assignments(ast.parse(raw.decode("utf-8"))).get("DEFAULT_MODULECLASSES")
    if not isinstance(value, ast.List):
        raise SystemExit("easybuild-framework: no DEFAULT_MODULECLASSES list")
    out: dict[str, str] = {}
    for pair in value.elts:
        if isinstance(pair, ast.Tuple) and len(pair.elts) == 2 and all(isinstance(e, ast.Constant) for e in pair.elts):
            out[pair.elts[0].value] = text(pair.elts[1].value.split("(")[0])
    return out


def hpc_software_snake(src: Path) -> Graph:
    g = Graph("hpc_software_snake", "jsonl", priority=SOFTWARE_PRIORITY)
    classes = module_classes(src)
    files = tar_members(src, EASYCONFIGS_SDIST, lambda name: name.startswith(EASYCONFIGS) and name.endswith(".eb"))
    records = []
    for path in sorted(files):
        tree = ast.parse(files[path].decode("utf-8"), filename=path)
        env = _assignments(tree)
        strings = {k: v.value for k, v in env.items() if isinstance(v, ast.Constant) and isinstance(v.value, str)}
        toolchain = env.get("toolchain")
        if isinstance(toolchain, ast.Name) and toolchain.id == "SYSTEM":
            tc = ("system", "system")
        else:
            value = _literal(toolchain)
            tc = (value.get("name"), value.get("version")) if isinstance(value, dict) else (None, None)
        deps, unread = _first_names(env.get("dependencies"), strings)
        records.append({"path": path, "name": _literal(env.get("name")),
                        "version": _literal(env.get("version")), "toolchain": tc,
                        "moduleclass": _literal(env.get("moduleclass")), "deps": deps, "unread": unread})
    # the generation: every easyconfig built with a toolchain of version GENERATION, or with the GCC or GCCcore of
    # the version that foss-GENERATION names, and those toolchains' own easyconfigs
    leader = [r for r in records if r["name"] == GENERATION_TOOLCHAIN and r["version"] == GENERATION]
    if len(leader) != 1:
        raise SystemExit(f"hpc_software_snake: no single {GENERATION_TOOLCHAIN}-{GENERATION} easyconfig")
    leader_env = _assignments(ast.parse(files[leader[0]["path"]].decode("utf-8")))
    leader_strings = {k: v.value for k, v in leader_env.items()
                      if isinstance(v, ast.Constant) and isinstance(v.value, str)}
    gcc = {_string(e.elts[1], leader_strings) for e in leader_env["dependencies"].elts
           if isinstance(e, ast.Tuple) and len(e.elts) > 1 and _string(e.elts[0], leader_strings) == "GCC"}
    if len(gcc) != 1:
        raise SystemExit(f"hpc_software_snake: {GENERATION_TOOLCHAIN}-{GENERATION} names no single GCC")
    gcc_version = gcc.pop()

    def in_generation(tc: tuple) -> bool:
        return tc[1] == GENERATION or (tc[0] in ("GCC", "GCCcore") and tc[1] == gcc_version)

    toolchains = {r["toolchain"] for r in records if in_generation(r["toolchain"])}
    sample = [r for r in records if in_generation(r["toolchain"])
              or (r["toolchain"][0] == "system" and (r["name"], r["version"]) in toolchains)]
    g.left_out["easyconfig of another toolchain generation"] += len(records) - len(sample)
    toolchain_names = {r["name"] for r in sample if (r["name"], r["version"]) in toolchains}

    def node(name: str) -> tuple[str, str]:
        return ("toolchain" if name in toolchain_names else "software", text(name))

    for r in sample:
        if not isinstance(r["name"], str):
            g.left_out["easyconfig with no literal name"] += 1
            continue
        head = node(r["name"])
        if r["toolchain"][0] != "system":
            g.add(head, "toolchain", node(r["toolchain"][0]))
        for dep in r["deps"]:
            g.add(head, "dependency", node(dep))
        g.left_out["dependency entry with no literal name"] += r["unread"]
        if r["moduleclass"] in classes:
            g.add(head, "module_class", ("module class", classes[r["moduleclass"]]))
        else:
            g.left_out["easyconfig with no known module class"] += 1
    return g


def build_all(src: Path) -> list[Graph]:
    return [brands_dbpedia(src), hpc_software_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
