"""Rebuild the NINETIETH folder of held-out "foreign" graphs, docs/programs/graphs90/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data file that one package ships.
quickfix (PyPI: QuickFIX, the open-source engine of the FIX protocol, Financial Information eXchange, the messaging
standard of securities trading; its source distribution ships the data dictionaries the engine validates messages
with, one XML file per FIX version). The graph is FIX 5.0 Service Pack 2's dictionary, `spec/FIX50SP2.xml`: every
application message with the components and fields it is made of, every component with its own parts, every field
with its data type and its enumerated values. The script only renames the XML's structure to property labels, takes
the dictionary whole but for the rules stated in the code, and writes the file; see docs/programs/graphs90/PROVENANCE.md.
No dataset is one the earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_89.py)
used, and the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing or building it) into one folder and give that folder as --src. The
script checks the file's SHA-256 and reads the data file from inside the archive (the source distribution with
`tarfile`, its XML file with `xml.etree.ElementTree`); nothing is unpacked, installed, built, imported or run:

    mkdir -p /tmp/graphs90-src && cd /tmp/graphs90-src
    pip download --no-deps --no-binary :none: quickfix==1.16.0 -d /tmp/graphs90-src
    cd -  # back to the repository
    python3 bench/foreign_graphs_90.py --src /tmp/graphs90-src            # writes docs/programs/graphs90/*.jsonl
    python3 bench/foreign_graphs_90.py --src /tmp/graphs90-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a message, component or field is its `name` attribute ("NewOrderSingle",
"Instrument", "ClOrdID"), a data type the field's `type` attribute ("PRICE", "NUMINGROUP"), an enumerated value its
`description` attribute ("BUY", "LIMIT"). Enumerated values of one name are named apart by their field in parentheses
("BUY (AdvSide)", "BUY (Side)"), and by their field and code where one field gives one name twice, as the code says."""

from __future__ import annotations

import io
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, string, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs90"

# The package file, as `pip download` names it, with its SHA-256.
QUICKFIX_SDIST = "quickfix-1.16.0.tar.gz"
SOURCES = {
    QUICKFIX_SDIST: "825aceb72cfd69c30fbbf5b380b66f464abe1fe3188374f13d8c9987dd8eb4e9",
}

# ------------------------------------------------------------------------------------------------------- FIX 5.0 SP2
FIX_XML = "quickfix-1.16.0/spec/FIX50SP2.xml"
FIX_PRIORITY = ("message", "component", "field", "data type", "enumerated value")
P527 = "has part(s)"  # Wikidata P527
DATA_TYPE = "data type"  # lower-case prose: the field's `type` attribute (no Wikidata property says it of a field)
ALLOWED_VALUE = "allowed value"  # lower-case prose: a field's enumerated value (the `value` element)


def attr(el: ET.Element, key: str) -> str:
    value = el.get(key)
    if value is None:
        raise SystemExit(f"fix: a <{el.tag}> has no {key} attribute")
    return string(value, f"fix <{el.tag}> {key}")


def fix_wikidata(src: Path) -> Graph:
    g = Graph("fix_wikidata", "jsonl", priority=FIX_PRIORITY)
    with tarfile.open(fileobj=io.BytesIO(package_file(src, QUICKFIX_SDIST, SOURCES)), mode="r:gz") as tar:
        raw = tar.extractfile(FIX_XML).read()
    root = ET.fromstring(raw.decode("utf-8"))
    if (root.get("type"), root.get("major"), root.get("minor"), root.get("servicepack")) != ("FIX", "5", "0", "2"):
        raise SystemExit("fix: the file is not the FIX 5.0 SP2 dictionary")
    for section in ("header", "trailer"):  # FIX 5.0's header and trailer are FIXT 1.1's, in another file
        if root.find(section) is not None and len(root.find(section)):
            raise SystemExit(f"fix: the {section} is not empty")
    messages = list(root.find("messages"))
    components = list(root.find("components"))
    fields = list(root.find("fields"))
    unique(g, {attr(m, "name"): attr(m, "name") for m in messages})
    component_names = set(unique(g, {attr(c, "name"): attr(c, "name") for c in components}))
    field_names = set(unique(g, {attr(f, "name"): attr(f, "name") for f in fields}))

    def parts(head: tuple[str, str], el: ET.Element) -> None:
        """The fields and components of a message or component, linked by `has part(s)`. A repeating group (which in
        this file is always the only child of a component) is read as its counter field (the group's name, a field
        of type NUMINGROUP) and its members, all parts of the component that holds it; its nesting is left out."""
        for child in el:
            name = attr(child, "name")
            if child.tag == "component":
                if name not in component_names:
                    raise SystemExit(f"fix: {head[1]} names a component {name} the file lacks")
                g.add(head, P527, ("component", name))
            elif child.tag in ("field", "group"):
                if name not in field_names:
                    raise SystemExit(f"fix: {head[1]} names a field {name} the file lacks")
                g.add(head, P527, ("field", name))
                if child.tag == "group":
                    g.left_out["repeating group read as its counter field and members"] += 1
                    parts(head, child)
            else:
                raise SystemExit(f"fix: unknown element <{child.tag}> in {head[1]}")

    # messages: <message name msgtype msgcat> with <field>, <component> and <group> children (msgtype, the code of
    # the message, and msgcat, "app" for every message of this file, are not taken; nor is `required`)
    for m in messages:
        parts(("message", attr(m, "name")), m)
    for c in components:
        parts(("component", attr(c, "name")), c)

    # fields: <field number name type> with <value enum description> children
    values: dict[tuple[str, str], str] = {}
    for f in fields:
        head = ("field", attr(f, "name"))
        g.add(head, DATA_TYPE, ("data type", attr(f, "type")))
        for v in f:
            if v.tag != "value":
                raise SystemExit(f"fix: unknown element <{v.tag}> in field {head[1]}")
            key = (head[1], attr(v, "enum"))
            if key in values:
                raise SystemExit(f"fix: field {head[1]} gives the code {key[1]} twice")
            values[key] = attr(v, "description")
    # an enumerated value is its description, named apart by its field where several share it, and by its field
    # and code where one field gives one description to two codes ("EURIBOR (BenchmarkCurveName Euribor)")
    twice = _repeated_in_field(values)
    tell = {k: (f"{k[0]} {k[1]}" if (k[0], d) in twice else k[0]) for k, d in values.items()}
    names = named_apart(g, values, tell)
    for key, name in sorted(names.items()):
        g.add(("field", key[0]), ALLOWED_VALUE, ("enumerated value", name))
    return g


def _repeated_in_field(values: dict[tuple[str, str], str]) -> set[tuple[str, str]]:
    """(field, description) pairs that one field gives to more than one code."""
    seen: dict[tuple[str, str], int] = {}
    for (field, _), description in values.items():
        seen[(field, description)] = seen.get((field, description), 0) + 1
    return {k for k, n in seen.items() if n > 1}


def build_all(src: Path) -> list[Graph]:
    return [fix_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
