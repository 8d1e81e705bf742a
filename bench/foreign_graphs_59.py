"""Rebuild the FIFTY-NINTH folder of held-out "foreign" graphs, docs/programs/graphs59/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data file that one package ships.
@lhncbc/ucum-lhc (npm: the US National Library of Medicine's Lister Hill Center's JavaScript implementation of UCUM,
the Unified Code for Units of Measure) ships `data/ucumDefs.min.json`, generated, its licence line says, "by the UCUM
LHC code from the UCUM data and selected LOINC combinations of UCUM units": the UCUM prefixes and 772 units, each with
its name, its case-sensitive code, the property (kind of quantity) it measures, its UCUM class, its LOINC property,
its category, its source (UCUM or LOINC) and the unit string it is defined by. The script only renames fields to
property labels (the data's own field names, kept as they are), takes the table whole and writes the file; see
docs/programs/graphs59/PROVENANCE.md. Neither the package nor its dataset was used or set aside by the earlier
folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_57.py).

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data file from inside the archive (the npm tarball with `tarfile`, the JSON file
with `json`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs59-src && cd /tmp/graphs59-src
    npm pack @lhncbc/ucum-lhc@7.1.10
    cd -  # back to the repository
    python3 bench/foreign_graphs_59.py --src /tmp/graphs59-src            # writes docs/programs/graphs59/*.jsonl
    python3 bench/foreign_graphs_59.py --src /tmp/graphs59-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the table taken whole). It prints the source
file, then one line per graph with its counts. Check the files with `tasks.graph.importers.import_graph_file` (the
project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a unit is its `name_` ("meter", "square inch", "second - time"), a property,
class, LOINC property, category and source the value as written ("length", "us-lengths", "Len", "Clinical",
"UCUM"). A unit's `csUnitString_` (the unit expression that defines it, "dyn.s/cm2") links it to each unit the
expression names, found by the fixed rules of `unit_terms` and `unit_code` (exponents and leading prefixes dropped
where the term is no code of the table; numbers and annotations dropped). Two units of one name are named apart by
their case-sensitive code (`csCode_`) in parentheses ("Liters (L)", "Liters (l)"), as the code says."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, npm_files, package_file, string, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs59"

# The package file, as `npm pack` names it, with its SHA-256.
UCUM_TGZ = "lhncbc-ucum-lhc-7.1.10.tgz"
SOURCES = {
    UCUM_TGZ: "80c117aa3bbfa5f000ec323de99038cb90e1b35cf0468fb8e9683f50654dad0f",
}


# ------------------------------------------------------------------------------------------------------- UCUM
UCUM_DEFS = "package/data/ucumDefs.min.json"
UCUM_PRIORITY = ("base unit", "unit", "property", "class", "category", "source")
# the unit's value columns taken, each to the kind of its values (the labels are the columns' own names); not taken:
# loincProperty_ (LOINC's abbreviations, "MCnc", "SRat", which the file names nowhere)
UCUM_VALUES = (("property_", "property"), ("class_", "class"), ("category_", "category"), ("source_", "source"))
NUMBER = re.compile(r"[0-9.]+")
EXPONENT = re.compile(r"(.+?)([+-]?[0-9]+)")


def unit_terms(expression: str) -> list[str]:
    """The terms of a UCUM unit expression: split at ".", "/", "(" and ")" outside brackets and braces, annotations
    ("{...}") cut, plain numbers dropped."""
    terms, current, depth = [], "", 0
    for ch in expression:
        depth += ch in "[{"
        depth -= ch in "]}"
        if depth == 0 and ch in "./()":
            terms.append(current)
            current = ""
        else:
            current += ch
    terms.append(current)
    terms = [re.sub(r"\{[^}]*\}", "", t) for t in terms]
    return [t for t in terms if t and not NUMBER.fullmatch(t)]


def unit_code(term: str, codes: set[str], prefixes: list[str]) -> str | None:
    """The unit code a term names: the term itself if it is a code; else the term less a closing exponent ("s2",
    "cm-1"); else that less a leading prefix ("kJ" -> "J" where "kJ" is no code of the table); else None."""
    if term in codes:
        return term
    m = EXPONENT.fullmatch(term)
    atom = m.group(1) if m else term
    if atom in codes:
        return atom
    for p in prefixes:  # longest first
        if atom.startswith(p) and atom[len(p):] in codes:
            return atom[len(p):]
    return None


def ucum_raw(src: Path) -> Graph:
    g = Graph("ucum_raw", "jsonl", priority=UCUM_PRIORITY)
    defs = json.loads(npm_files(package_file(src, UCUM_TGZ, SOURCES), {UCUM_DEFS})[UCUM_DEFS])
    columns = [c if isinstance(c, str) else c[0] for c in defs["units"]["config"]]
    units = [dict(zip(columns, row)) for row in defs["units"]["data"]]
    prefixes = sorted((row[0] for row in defs["prefixes"]["data"]), key=lambda p: (-len(p), p))
    for u in units:
        u["csCode_"] = string(u["csCode_"], "csCode_")
    codes = {u["csCode_"] for u in units}
    if len(codes) != len(units):
        raise SystemExit("ucum_raw: two units of one code")
    # a unit is its name_; the one unit without a name_ ("%") is its csCode_
    names = named_apart(g, {u["csCode_"]: string(u["name_"], "name_") or u["csCode_"] for u in units},
                        {c: c for c in codes})
    kind = {u["csCode_"]: "base unit" if u["isBase_"] is True else "unit" for u in units}

    def node(code: str) -> tuple[str, str]:
        return (kind[code], names[code])

    for u in units:
        head = node(u["csCode_"])
        for column, value_kind in UCUM_VALUES:
            if u[column] is None or not text(u[column]):
                g.left_out[f"unit without {column}"] += 1
                continue
            g.add(head, column, (value_kind, string(u[column], column)))
        # csCode_: the unit's own code, an expression in the same syntax; it links to each other unit its terms name
        # ("mg/dL" -> "mg", "dL"; "cm" -> "m" as the code is no other unit's)
        for term in unit_terms(u["csCode_"]):
            code = unit_code(term, codes - {u["csCode_"]}, prefixes)
            if code is None:
                g.left_out["csCode_ term naming no other unit of the table"] += 1
                continue
            g.add(head, "csCode_", node(code))
        if u["csUnitString_"] is None or not text(u["csUnitString_"]):
            g.left_out["unit without csUnitString_"] += 1
            continue
        for term in unit_terms(string(u["csUnitString_"], "csUnitString_")):
            code = unit_code(term, codes, prefixes)
            if code is None:
                g.left_out["csUnitString_ term naming no unit of the table"] += 1
                continue
            g.add(head, "csUnitString_", node(code))
    return g


def build_all(src: Path) -> list[Graph]:
    return [ucum_raw(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
