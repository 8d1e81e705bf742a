"""Rebuild the EIGHTY-THIRD folder of held-out "foreign" graphs, docs/programs/graphs83/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
ifcopenshell (PyPI: IfcOpenShell, the open-source toolkit for buildingSMART's Industry Foundation Classes, IFC, the
ISO 16739 data model of buildings and infrastructure) ships in its wheel the property set templates of IFC 4.3
(schema IFC4X3_ADD2) as one IFC file, `ifcopenshell/util/schema/Pset_IFC4X3.ifc`: every property set and quantity set
the standard defines, the entities (and entity/predefined-type pairs) each applies to, its properties and quantities,
each property's measure types and, for an enumerated property, its enumeration with the values it allows. The script
only renames fields to property labels, takes the file whole but for the rules stated in the code, and writes the
file; see docs/programs/graphs83/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_82.py, bench/foreign_graphs_84.py) used, and the package was not
used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the wheel with `zipfile`; in it the IFC file
`ifcopenshell/util/schema/Pset_IFC4X3.ifc`, an ISO 10303-21 "STEP" text file that a small reader below takes apart,
and the schema summaries `ifcopenshell/util/schema/ifc4x3_entities.json` and `ifc4x3_types.json`, read with `json`
only to tell an entity from a defined type); nothing is unpacked, installed, imported or run (the wheel's data file is
the same on every platform; the pinned wheel is the one for CPython 3.11 on x86-64 Linux):

    mkdir -p /tmp/graphs83-src && cd /tmp/graphs83-src
    pip download --no-deps --only-binary :all: --python-version 3.11 --platform manylinux_2_31_x86_64 \\
        ifcopenshell==0.9.0.post1
    cd -  # back to the repository
    python3 bench/foreign_graphs_83.py --src /tmp/graphs83-src            # writes docs/programs/graphs83/*.jsonl
    python3 bench/foreign_graphs_83.py --src /tmp/graphs83-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a property set or quantity set its name ("Pset_WallCommon",
"Qto_WallBaseQuantities"), a property or quantity its name ("IsExternal", "GrossVolume"), an entity or defined type
its IFC name ("IfcWall", "IfcLabel"), an entity restricted to one predefined type the file's own "Entity/TYPE" string
("IfcActuator/ELECTRICACTUATOR"), a property enumeration its name ("PEnum_ElementStatus") and an enumeration value
its label ("DEMOLISH"). Properties of one name in several sets are named apart by their set in parentheses, as the
code says."""

from __future__ import annotations

import io
import json
import re
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs83"

# The package file, as `pip download` names it, with its SHA-256.
IFC_WHEEL = "ifcopenshell-0.9.0.post1-py311-none-manylinux_2_31_x86_64.whl"
SOURCES = {
    IFC_WHEEL: "8f6590e44748b4152f7d1618c16beb80f5ad768a6ec536c446b17b623dc14f9d",
}
PSET_IFC = "ifcopenshell/util/schema/Pset_IFC4X3.ifc"
ENTITIES_JSON = "ifcopenshell/util/schema/ifc4x3_entities.json"
TYPES_JSON = "ifcopenshell/util/schema/ifc4x3_types.json"


# --------------------------------------------------------------------------------- a reader of ISO 10303-21 files
class Typed(tuple):
    """A typed parameter, `IFCLABEL('x')`: (type name, [arguments])."""


class Ref(str):
    """An instance reference, `#12`."""


class Enum(str):
    """An enumeration literal, `.P_SINGLEVALUE.`."""


_INSTANCE = re.compile(r"#(\d+)=([A-Z0-9_]+)\((.*)\);")
_STRING = re.compile(r"'((?:[^']|'')*)'")
_TOKEN = re.compile(r"#\d+|\.[A-Z0-9_]+\.|[-+]?[0-9][0-9.Ee+-]*|[A-Z][A-Z0-9_]*(?=\()|\$|\*")


def step_string(raw: str) -> str:
    """A STEP string's text: '' is one quote, \\X2\\hhhh...\\X0\\ UTF-16 code units, \\X\\hh one ISO 8859-1 byte,
    \\\\ one backslash. Any other escape stops the script."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        if raw.startswith("''", i):
            out.append("'")
            i += 2
        elif raw.startswith("\\X2\\", i):
            end = raw.index("\\X0\\", i)
            hexes = raw[i + 4:end]
            out.append(bytes.fromhex(hexes).decode("utf-16-be"))
            i = end + 4
        elif raw.startswith("\\X\\", i):
            out.append(bytes.fromhex(raw[i + 3:i + 5]).decode("latin-1"))
            i += 5
        elif raw.startswith("\\\\", i):
            out.append("\\")
            i += 2
        elif raw[i] == "\\":
            raise SystemExit(f"ifc: an escape the reader does not know in {raw[i:i + 20]!r}")
        else:
            out.append(raw[i])
            i += 1
    return "".join(out)


def parameters(s: str, i: int, close: str) -> tuple[list[object], int]:
    """The comma-separated parameters from s[i:] up to the closing bracket, and the position after it."""
    items: list[object] = []
    while s[i] != close:
        if s[i] == "'":
            m = _STRING.match(s, i)
            items.append(step_string(m.group(1)))
            i = m.end()
        elif s[i] == "(":
            value, i = parameters(s, i + 1, ")")
            items.append(value)
        else:
            m = _TOKEN.match(s, i)
            if m is None:
                raise SystemExit(f"ifc: cannot read the file at {s[i:i + 60]!r}")
            token, i = m.group(0), m.end()
            if token.startswith("#"):
                items.append(Ref(token))
            elif token.startswith("."):
                items.append(Enum(token[1:-1]))
            elif token in ("$", "*"):
                items.append(None)
            elif s[i:i + 1] == "(":
                args, i = parameters(s, i + 1, ")")
                items.append(Typed((token, args)))
            else:
                items.append(token)
        if s[i] == ",":
            i += 1
    return items, i + 1


def instances(s: str) -> dict[str, tuple[str, list[object]]]:
    """The DATA section's instances, one a line as IfcOpenShell writes them: "#n" -> (entity name, parameters)."""
    data = s[s.index("\nDATA;\n") + 7:s.index("\nENDSEC;", s.index("\nDATA;\n"))]
    out: dict[str, tuple[str, list[object]]] = {}
    for line in data.splitlines():
        m = _INSTANCE.fullmatch(line)
        if m is None:
            raise SystemExit(f"ifc: not one instance a line: {line[:60]!r}")
        args, end = parameters(line, m.start(3), ")")
        if end != m.end(3) + 1:
            raise SystemExit(f"ifc: instance #{m.group(1)} not read to its end")
        out["#" + m.group(1)] = (m.group(2), args)
    return out


# ------------------------------------------------------------------------------------------------------- IFC 4.3
# IfcPropertySetTemplateTypeEnum: a set's kind by its template type; IfcSimplePropertyTemplateTypeEnum: a property's.
SET_KINDS = {"PSET": "property set", "QTO": "quantity set"}
PROPERTY_KINDS = {
    "P_SINGLEVALUE": "single value property", "P_ENUMERATEDVALUE": "enumerated value property",
    "P_BOUNDEDVALUE": "bounded value property", "P_LISTVALUE": "list value property",
    "P_TABLEVALUE": "table value property", "P_REFERENCEVALUE": "reference value property",
    "Q_LENGTH": "length quantity", "Q_AREA": "area quantity", "Q_VOLUME": "volume quantity",
    "Q_WEIGHT": "weight quantity", "Q_COUNT": "count quantity", "Q_TIME": "time quantity",
}
IFC_PRIORITY = ("property set", "quantity set", *PROPERTY_KINDS.values(), "entity", "predefined type", "defined type",
                "property enumeration", "enumeration value")


def ifc_dbpedia(src: Path) -> Graph:
    g = Graph("ifc_dbpedia", "jsonl", priority=IFC_PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, IFC_WHEEL, SOURCES))) as zf:
        s = zf.read(PSET_IFC).decode("utf-8")
        entity_names = set(json.loads(zf.read(ENTITIES_JSON).decode("utf-8")))
        type_names = set(json.loads(zf.read(TYPES_JSON).decode("utf-8")))
    rows = instances(s)

    def measure(name: str) -> tuple[str, str]:
        """A measure type as the schema classes it: an entity (a reference value's class) or a defined type."""
        if name in entity_names:
            return ("entity", name)
        if name in type_names:
            return ("defined type", name)
        raise SystemExit(f"ifc: measure type {name} is in neither schema summary")

    # IfcPropertySetTemplate(GlobalId, OwnerHistory, Name, Description, TemplateType, ApplicableEntity,
    # HasPropertyTemplates)
    sets = {ref: args for ref, (kind, args) in rows.items() if kind == "IFCPROPERTYSETTEMPLATE"}
    set_names: dict[str, str] = {}
    set_kind: dict[str, str] = {}
    member_of: dict[str, str] = {}
    for ref, args in sets.items():
        set_names[ref] = text(args[2])
        set_kind[ref] = SET_KINDS[args[4].split("_", 1)[0]]
        for prop in args[6]:
            if prop in member_of:
                raise SystemExit(f"ifc: property {prop} is in two sets")
            member_of[prop] = ref
    if len(set(set_names.values())) != len(set_names):
        raise SystemExit("ifc: two sets of one name")

    # IfcSimplePropertyTemplate(GlobalId, OwnerHistory, Name, Description, TemplateType, PrimaryMeasureType,
    # SecondaryMeasureType, Enumerators, PrimaryUnit, SecondaryUnit, Expression, AccessState)
    props = {ref: args for ref, (kind, args) in rows.items() if kind == "IFCSIMPLEPROPERTYTEMPLATE"}
    if set(props) != set(member_of):
        raise SystemExit("ifc: a property template outside every set, or a set member that is not one")
    prop_names = named_apart(g, {ref: text(args[2]) for ref, args in props.items()},
                             {ref: set_names[member_of[ref]] for ref in props})

    for ref, args in sets.items():
        head = (set_kind[ref], set_names[ref])
        # ApplicableEntity: comma-separated entities, each maybe narrowed to a predefined type ("IfcWall/SHEAR")
        for applicable in args[5].split(","):
            entity, _, predefined = applicable.partition("/")
            if entity not in entity_names:
                raise SystemExit(f"ifc: {set_names[ref]} applies to {entity}, not an entity of the schema")
            if predefined:
                g.add(head, "applicableEntity", ("predefined type", applicable))
                g.add(("predefined type", applicable), "predefinedTypeOf", ("entity", entity))
            else:
                g.add(head, "applicableEntity", ("entity", entity))

    for ref, args in props.items():
        head = (PROPERTY_KINDS[args[4]], prop_names[ref])
        g.add(head, "isPartOf", (set_kind[member_of[ref]], set_names[member_of[ref]]))
        if args[5]:
            g.add(head, "primaryMeasureType", measure(args[5]))
        if args[6]:
            g.add(head, "secondaryMeasureType", measure(args[6]))
        if args[7]:
            # IfcPropertyEnumeration(Name, EnumerationValues, Unit): one enumeration of one name holds the same
            # values wherever the file repeats it (checked below), so it is one node
            kind, enum = rows[args[7]]
            if kind != "IFCPROPERTYENUMERATION":
                raise SystemExit(f"ifc: {prop_names[ref]}'s enumerators are not an enumeration")
            g.add(head, "enumeration", ("property enumeration", text(enum[0])))
    enumerations: dict[str, list[str]] = {}
    for kind, args in rows.values():
        if kind != "IFCPROPERTYENUMERATION":
            continue
        values = [text(v[1][0]) for v in args[1]]
        if enumerations.setdefault(text(args[0]), values) != values:
            raise SystemExit(f"ifc: enumeration {args[0]} holds different values where it repeats")
    for name, values in enumerations.items():
        for value in values:
            g.add(("property enumeration", name), "enumerationValue", ("enumeration value", value))
    if any(kind not in ("IFCPROJECT", "IFCRELDECLARES", "IFCPROPERTYSETTEMPLATE", "IFCSIMPLEPROPERTYTEMPLATE",
                        "IFCPROPERTYENUMERATION") for kind, _ in rows.values()):
        raise SystemExit("ifc: an instance of a kind the script does not read")
    return g


def build_all(src: Path) -> list[Graph]:
    return [ifc_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
