"""Rebuild the THIRTY-SIXTH held-out set of "foreign" graphs, docs/programs/graphs36/, from data in a Debian package.

Nobody on the project wrote these facts: every triple is converted from two data files that one Debian package ships,
emboss-data (the data of the EMBOSS sequence analysis suite): `usr/share/EMBOSS/data/DRCAT.dat` (the Data Resource
Catalogue: the public bioinformatics databases, each with its title, the organisms it covers, its category and the
EDAM topics, types of data, types of identifier and data formats it serves) and `usr/share/EMBOSS/data/EDAM.obo`
(the EDAM ontology of bioinformatics topics, operations, types of data, identifiers and formats, with what each is a
kind of, what an operation takes and gives, what a format or identifier is a format or identifier of, and the topic
of a datum or operation). The script only renames fields to property labels, samples by a fixed rule and writes the
file; see docs/programs/graphs36/PROVENANCE.md. Neither dataset is one the first thirty-five sets
(bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_35.py) used, and the package was not
used by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into a folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the Debian package's `ar` archive by its
documented layout and its `data.tar.xz` with `tarfile`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs36-src && cd /tmp/graphs36-src
    apt-get update && apt-get download emboss-data=6.6.0+dfsg-12
    cd -  # back to the repository
    python3 bench/foreign_graphs_36.py --src /tmp/graphs36-src            # writes docs/programs/graphs36/*.jsonl
    python3 bench/foreign_graphs_36.py --src /tmp/graphs36-src --out DIR  # elsewhere

(These files were built with Python 3.11 and the standard library alone (`tarfile` and `lzma`), so the version of
Python does not change the output. The Debian package is that of Debian 12 "bookworm".)

The output is deterministic for the same package file (rows sorted; files taken whole). It prints the source file,
then one line per graph with its counts. Check the files with `tasks.graph.importers.import_graph_file` (the project
venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
A database is named by its catalogue title ("Universal protein resource"); two databases of one title would be
named apart by their catalogue id (none are). An EDAM concept is named by its EDAM name ("Protein sequence", "FASTA
format"); a name EDAM gives to concepts of two kinds (the topic and the type of data "Sequence alignment") gets the
writer's " (<type>)" on the kind of lower priority; the script stops if two concepts of one kind share a name."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, named_apart, package_file, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs36"

# The package file, as `apt-get download` names it, with its SHA-256.
SOURCES = {
    "emboss-data_6.6.0+dfsg-12_all.deb": "0197c365690535b2b419dad1663c0ae07082dfca99807622463647d91565b46a",
}


def source(src: Path, name: str) -> bytes:
    return package_file(src, name, SOURCES)


# -- 1. Bioinformatics databases and the EDAM ontology, DBpedia camelCase (emboss-data) -------------------------------
DRCAT = "usr/share/EMBOSS/data/DRCAT.dat"
EDAM = "usr/share/EMBOSS/data/EDAM.obo"
# EDAM namespace -> entity type
KINDS = {"topic": "Topic", "operation": "Operation", "data": "DataType", "identifier": "IdentifierType",
         "format": "Format"}
# DRCAT field -> (EDAM namespace of its concept, DBpedia-style label)
# (EDAM 1.2 writes an identifier's id with the prefix of data: "EDAM_data:3021", namespace identifier)
DRCAT_EDAM = {"EDAMtpc": ("topic", "topic", "topic"), "EDAMdat": ("data", "data", "dataType"),
              "EDAMid": ("data", "identifier", "identifierType"), "EDAMfmt": ("format", "format", "format")}
# EDAM relationship -> DBpedia-style label (the relation's own name in camel case)
EDAM_RELATIONS = {"has_input": "hasInput", "has_output": "hasOutput", "has_topic": "hasTopic",
                  "is_format_of": "isFormatOf", "is_identifier_of": "isIdentifierOf"}
NO_VALUE = ("all", "None", "Not available")  # the catalogue's own words for "no organism", "none", "no category"


class Term:
    __slots__ = ("id", "name", "namespace", "obsolete", "is_a", "relations")

    def __init__(self, term_id: str) -> None:
        self.id, self.name, self.namespace, self.obsolete = term_id, "", "", False
        self.is_a: list[str] = []
        self.relations: list[tuple[str, str]] = []


def edam_terms(raw: bytes) -> dict[str, Term]:
    """The [Term] stanzas of EDAM.obo (OBO 1.2: "tag: value" lines; "!" starts a comment; lines that start with "!"
    are commented out), keyed by id ("EDAM_topic:0182")."""
    terms: dict[str, Term] = {}
    cur: Term | None = None
    in_term = False
    for line in raw.decode("utf-8").splitlines():
        if line.startswith("["):
            in_term, cur = line.strip() == "[Term]", None
            continue
        if not in_term or line.startswith("!") or ": " not in line:
            continue
        tag, _, value = line.partition(": ")
        value = value.split(" ! ")[0].strip()
        if tag == "id":
            cur = terms.setdefault(value, Term(value))
        elif cur is None:
            continue
        elif tag == "name":
            cur.name = text(value)
        elif tag == "namespace":
            cur.namespace = value
        elif tag == "is_obsolete" and value == "true":
            cur.obsolete = True
        elif tag == "is_a":
            cur.is_a.append(value)
        elif tag == "relationship":
            rel, _, target = value.partition(" ")
            cur.relations.append((rel, target.strip()))
    return terms


def drcat_entries(raw: bytes) -> list[dict[str, list[str]]]:
    """The catalogue's entries in its order: each a dict of field -> its values (a field may repeat), from the blocks
    of "Field   value" lines that start with "ID" ("#" lines are comments)."""
    entries: list[dict[str, list[str]]] = []
    for line in raw.decode("utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        field, _, value = line.partition(" ")
        if field == "ID":
            entries.append({})
        if entries:
            entries[-1].setdefault(field, []).append(value.strip())
    return entries


def bioinformatics_dbpedia(src: Path) -> Graph:
    g = Graph("bioinformatics_dbpedia", "jsonl",
              priority=("Database", "Topic", "Operation", "DataType", "IdentifierType", "Format", "Category",
                        "Taxon"))
    files = deb_files(source(src, "emboss-data_6.6.0+dfsg-12_all.deb"), lambda p: p in (DRCAT, EDAM))
    terms = edam_terms(files[EDAM])
    live = {tid: t for tid, t in terms.items() if not t.obsolete and t.namespace in KINDS and t.name}
    g.left_out["obsolete EDAM concept (not used)"] = sum(t.obsolete for t in terms.values())
    by_kind: dict[str, dict[str, str]] = {}
    for tid, t in live.items():
        by_kind.setdefault(t.namespace, {})[tid] = t.name
    for names in by_kind.values():
        unique(g, names)

    def concept(tid: str) -> tuple[str, str]:
        t = live[tid]
        return KINDS[t.namespace], t.name

    for tid, t in sorted(live.items()):
        for parent in t.is_a:
            if parent in live:
                g.add(concept(tid), "subClassOf", concept(parent))
            else:
                g.left_out["is_a to an obsolete or missing EDAM concept"] += 1
        for rel, target in t.relations:
            if rel not in EDAM_RELATIONS:
                g.left_out[f"EDAM relationship '{rel}' (not used)"] += 1
            elif target in live:
                g.add(concept(tid), EDAM_RELATIONS[rel], concept(target))
            else:
                g.left_out["EDAM relationship to an obsolete or missing concept"] += 1

    entries = drcat_entries(files[DRCAT])
    titles = {e["ID"][0]: text(e["Name"][0]) for e in entries if e.get("Name")}
    g.left_out["catalogue entry with no title"] = len(entries) - len(titles)
    names = named_apart(g, titles, {key: key for key in titles})
    for e in entries:
        key = e["ID"][0]
        if key not in names:
            continue
        db = ("Database", names[key])
        for value in e.get("Taxon", []):
            organism = text(value.partition("|")[2]) if "|" in value else text(value)
            if organism and organism not in NO_VALUE:
                g.add(db, "taxon", ("Taxon", organism))
            else:
                g.left_out["taxon 'all' or 'None' (no organism)"] += 1
        for value in e.get("Cat", []):
            if text(value) not in NO_VALUE:
                g.add(db, "category", ("Category", text(value)))
        for field, (prefix, namespace, label) in DRCAT_EDAM.items():
            for value in e.get(field, []):
                number = value.partition("|")[0].strip()
                tid = f"EDAM_{prefix}:{number}"
                if tid in live and live[tid].namespace == namespace:
                    g.add(db, label, concept(tid))
                else:
                    g.left_out[f"{field} number that is no live EDAM {namespace} concept"] += 1
        for field in ("Query", "Example", "Xref", "URL", "Desc", "IDalt"):
            if field in e:
                g.left_out[f"catalogue field {field} (not used)"] += len(e[field])
    return g


def build_all(src: Path) -> list[Graph]:
    return [bioinformatics_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
