"""Rebuild the EIGHTY-SIXTH folder of held-out "foreign" graphs, docs/programs/graphs86/, from a package's data files.

Nobody on the project wrote these facts: every triple is converted from the data tables that one package ships.
pypgx (PyPI: PyPGx, "a Python package for pharmacogenomics (PGx) research", which calls star alleles and predicts
drug-response phenotypes from genomic data) ships its reference tables as CSV files inside its wheel: the star alleles
of the 88 pharmacogenes it genotypes with their function and defining variants, those variants with their genes and
chromosomes, the genes with their regions and reference alleles, the genes' phenotypes as CPIC and PharmGKB define
them, and CPIC's table of gene-drug pairs. The script only renames fields to property labels, takes the tables whole
but for the rules stated in the code, and writes the file; see docs/programs/graphs86/PROVENANCE.md. No dataset is one
the earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_84.py) used, and the
package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the wheel with `zipfile`, its CSV files with
`csv`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs86-src && cd /tmp/graphs86-src
    pip download --no-deps pypgx==0.27.0
    cd -  # back to the repository
    python3 bench/foreign_graphs_86.py --src /tmp/graphs86-src            # writes docs/programs/graphs86/*.jsonl
    python3 bench/foreign_graphs_86.py --src /tmp/graphs86-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the tables give: a gene its symbol ("CYP2D6"), a drug its name in CPIC's table ("abacavir"), a
star allele its name in the allele table ("*4", "Reference", "F508del"), a variant its dbSNP rsID ("rs3892097") or,
where the table gives none, its GRCh38 name ("19-40844101-A-T"), a chromosome its name in the variant table ("22",
"X", "M"), an allele function or phenotype its words ("No Function", "Poor Metabolizer"). Records of one kind that
show one name are named apart by a telling value in parentheses (a star allele by its gene, a variant by its GRCh38
name), as the code says."""

from __future__ import annotations

import csv
import io
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs86"

# The package file, as `pip download` names it, with its SHA-256.
PYPGX_WHEEL = "pypgx-0.27.0-py3-none-any.whl"
SOURCES = {
    PYPGX_WHEEL: "95303696c51a5d21f44f0f3771ecd142ac30f9c6c1025dcd642352fdd4544d40",
}

DATA = "pypgx/api/data/"
TABLES = ("allele-table", "variant-table", "gene-table", "phenotype-table", "cpic-table")
# The type first in this list keeps a name two types share (the writer's rule): an allele function keeps "Normal
# Function", and the phenotype of that name becomes "Normal Function (phenotype)".
PRIORITY = ("gene", "drug", "variant", "star allele", "allele function", "phenotype", "chromosome")
MISSING = "N/A"  # the tables' word for an empty cell

# Wikidata property labels (P3433, P527, P1057), and lower-case prose of the same kind where Wikidata has none
VARIANT_OF = "biological variant of"
HAS_PART = "has part(s)"
CHROMOSOME = "chromosome"
ALLELE_FUNCTION = "allele function"
REFERENCE_ALLELE = "reference allele"
PARALOG = "paralog"
PHENOTYPE = "phenotype"
PGX_ASSOCIATION = "pharmacogenomic association"


def tables(src: Path) -> dict[str, list[dict[str, str]]]:
    """The five CSV tables of the wheel, each row a dict of its cells as names (``text``)."""
    with zipfile.ZipFile(io.BytesIO(package_file(src, PYPGX_WHEEL, SOURCES))) as zf:
        out = {}
        for name in TABLES:
            raw = zf.read(f"{DATA}{name}.csv").decode("utf-8")
            out[name] = [{k: text(v) for k, v in row.items()} for row in csv.DictReader(io.StringIO(raw, newline=""))]
    return out


def cells(value: str) -> list[str]:
    """A cell holding a comma-separated list ("7-87138645-A-G,7-87160618-A-C"), or none ("N/A")."""
    return [] if value in (MISSING, "") else [v.strip() for v in value.split(",") if v.strip()]


def pgx_wikidata(src: Path) -> Graph:
    g = Graph("pgx_wikidata", "jsonl", priority=PRIORITY)
    t = tables(src)

    # variants: one per GRCh38 name (a variant the table lists under two genes, the same position and change, is one
    # node linked to both); named by its rsID, else its GRCh38 name; an rsID two variants share (two changes at one
    # position) is told apart by the GRCh38 name
    variant_rows: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in t["variant-table"]:
        variant_rows[row["GRCh38Name"]].append(row)
    for key, rows in variant_rows.items():
        if len({(r["rsID"], r["Chromosome"]) for r in rows}) != 1:
            raise SystemExit(f"pgx_wikidata: variant {key} listed with two rsIDs or chromosomes")
    rsid = {key: rows[0]["rsID"] for key, rows in variant_rows.items()}
    variants = named_apart(g, {k: (rsid[k] if rsid[k] != MISSING else k) for k in variant_rows},
                           {k: k for k in variant_rows})
    for key, rows in sorted(variant_rows.items()):
        head = ("variant", variants[key])
        for r in rows:
            g.add(head, VARIANT_OF, ("gene", r["Gene"]))
        g.add(head, CHROMOSOME, ("chromosome", rows[0]["Chromosome"]))
    genes_of_variant = {(r["Gene"], r["GRCh38Name"]) for r in t["variant-table"]}

    # star alleles: one per (gene, allele name), told apart by the gene
    allele_keys = [(r["Gene"], r["StarAllele"]) for r in t["allele-table"]]
    if len(set(allele_keys)) != len(allele_keys):
        raise SystemExit("pgx_wikidata: a star allele listed twice for one gene")
    alleles = named_apart(g, {k: k[1] for k in allele_keys}, {k: k[0] for k in allele_keys})
    for r in t["allele-table"]:
        head = ("star allele", alleles[(r["Gene"], r["StarAllele"])])
        g.add(head, VARIANT_OF, ("gene", r["Gene"]))
        if r["Function"] != MISSING:
            g.add(head, ALLELE_FUNCTION, ("allele function", r["Function"]))
        else:
            g.left_out["star allele without a function"] += 1
        # the allele's core (defining) variants on GRCh38, each one of the variant table's rows for the same gene
        for name in cells(r["GRCh38Core"]):
            if (r["Gene"], name) not in genes_of_variant:
                raise SystemExit(f"pgx_wikidata: core variant {name} of {head[1]} not in the variant table")
            g.add(head, HAS_PART, ("variant", variants[name]))

    # genes of the gene table: the chromosome of their GRCh38 region, their reference allele, their paralog
    allele_set = set(allele_keys)
    for r in t["gene-table"]:
        head = ("gene", r["Gene"])
        contig = r["GRCh38Region"].split(":", 1)[0]
        if "_" in contig:  # an alternate contig ("22_KI270879v1_alt"), not a chromosome's own name
            g.left_out["gene region on an alternate contig (no chromosome)"] += 1
        else:
            g.add(head, CHROMOSOME, ("chromosome", contig))
        if r["RefAllele"] != MISSING:
            if (r["Gene"], r["RefAllele"]) not in allele_set:
                raise SystemExit(f"pgx_wikidata: reference allele {r['RefAllele']} of {r['Gene']} not listed")
            g.add(head, REFERENCE_ALLELE, ("star allele", alleles[(r["Gene"], r["RefAllele"])]))
        for other in cells(r["Paralog"]):
            g.add(head, PARALOG, ("gene", other))

    # phenotypes each gene's results can have (CPIC's or PharmGKB's words, shared across genes)
    for r in t["phenotype-table"]:
        g.add(("gene", r["Gene"]), PHENOTYPE, ("phenotype", r["Phenotype"]))

    # CPIC's gene-drug pairs: the drug linked to the gene
    for r in t["cpic-table"]:
        g.add(("drug", r["Drug"]), PGX_ASSOCIATION, ("gene", r["Gene"]))
    return g


def build_all(src: Path) -> list[Graph]:
    return [pgx_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
