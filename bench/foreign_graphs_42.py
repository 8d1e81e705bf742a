"""Rebuild the FORTY-SECOND folder of held-out "foreign" graphs, docs/programs/graphs42/, from data in an npm package.

Nobody on the project wrote these facts: every triple is converted from the data file that one npm package ships,
web-specs (`package/index.json`: the W3C's curated list of the technical specifications of the Web platform, from
the browser-specs project: each specification with its title, the organization and working groups that publish it,
the series of levels or versions it belongs to with that series' current specification, the previous and next
specification of its series, the specifications that obsolete it or that it forks, its maturity status and its
standing). The script only maps the file's keys to snake_case labels, samples by a fixed rule and writes the file;
see docs/programs/graphs42/PROVENANCE.md. The dataset is not one the first forty-one sets (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_41.py) used, and the package was not used by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into a folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data file from inside the tarball with `tarfile` and `json`; nothing is unpacked,
installed, imported or run:

    mkdir -p /tmp/graphs42-src && cd /tmp/graphs42-src
    npm pack web-specs@4.16.0
    cd -  # back to the repository
    python3 bench/foreign_graphs_42.py --src /tmp/graphs42-src            # writes docs/programs/graphs42/*.jsonl
    python3 bench/foreign_graphs_42.py --src /tmp/graphs42-src --out DIR  # elsewhere

(These files were built with Python 3.11 and the standard library alone, so the version of Python does not change
the output.)

The output is deterministic for the same package file (rows sorted; the file is taken whole). It prints the source
file, then one line per graph with its counts. Check the files with `tasks.graph.importers.import_graph_file` (the
project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
A specification is named by its `title` as the file writes it ("CSS Grid Layout Module Level 2"), a series by its
series `title`, a group by its `name`, an organization, status and standing by the file's string. Two specifications
of one title are told apart by their organization where those differ, else by their series version ("Pointer
Events (3)"), else by their shortname; a series is a node only where the file lists two or more of its
specifications; a name standing for two types gets the writer's " (<type>)" on the type of lower priority (a series
named like one of its specifications: "Web Animations (series)")."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, npm_files, package_file, string, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs42"

# The package file, as `npm pack` names it, with its SHA-256.
SOURCES = {
    "web-specs-4.16.0.tgz": "e6a4b4636d678f1950745f071342dca3bf79c1eda99856b12ab37218f43ee7f9",
}


def source(src: Path, name: str) -> bytes:
    return package_file(src, name, SOURCES)


# -- 1. The Web platform's specifications, snake_case labels (web-specs' index.json) ----------------------------------
INDEX = "package/index.json"
PRIORITY = ("specification", "series", "group", "organization", "status", "standing")


def webspecs_snake(src: Path) -> Graph:
    g = Graph("webspecs_snake", "jsonl", priority=PRIORITY)
    specs = json.loads(npm_files(source(src, "web-specs-4.16.0.tgz"), {INDEX})[INDEX].decode("utf-8"))
    by_short = {string(s["shortname"], "shortname"): s for s in specs}
    if len(by_short) != len(specs):
        raise SystemExit("webspecs_snake: two specifications of one shortname")
    titles = {k: string(s["title"], k) for k, s in by_short.items()}
    orgs = {k: string(s["organization"], k) for k, s in by_short.items()}
    # two specifications of one title: told apart by organization where those differ, else by series version, else by
    # shortname
    by_title: dict[str, set[str]] = defaultdict(set)
    for k, t in titles.items():
        by_title[t].add(k)
    versions = {k: text(s.get("seriesVersion") or "") for k, s in by_short.items()}

    def teller(k: str) -> str:
        same = by_title[titles[k]]
        if len({orgs[o] for o in same}) == len(same):
            return orgs[k]
        if all(versions[o] for o in same) and len({versions[o] for o in same}) == len(same):
            return versions[k]
        return k

    tell = {k: teller(k) for k in titles}
    names = named_apart(g, titles, tell)
    # a series is a node only where the file has two or more of its specifications (one alone is the series)
    members: dict[str, list[str]] = defaultdict(list)
    for k, s in by_short.items():
        members[string(s["series"]["shortname"], k)].append(k)
    series_titles = {string(s["series"]["shortname"], k): string(s["series"]["title"], k) for k, s in by_short.items()
                     if len(members[s["series"]["shortname"]]) > 1}
    series_names = named_apart(g, series_titles, {k: k for k in series_titles})

    def spec(key: object) -> tuple[str, str] | None:
        if isinstance(key, str) and key in names:
            return ("specification", names[key])
        g.left_out["link to a shortname no specification has"] += 1
        return None

    def link(head: tuple[str, str] | None, label: str, tail: tuple[str, str] | None) -> None:
        if head is not None and tail is not None:
            g.add(head, label, tail)

    group_orgs: dict[str, set[str]] = defaultdict(set)
    for key, s in sorted(by_short.items()):
        head = ("specification", names[key])
        g.add(head, "organization", ("organization", orgs[key]))
        for group in s.get("groups", []):
            name = string(group["name"], key)
            g.add(head, "group", ("group", name))
            group_orgs[name].add(orgs[key])
        series = s["series"]
        if series["shortname"] in series_names:
            series_node = ("series", series_names[series["shortname"]])
            g.add(head, "series", series_node)
            link(series_node, "current_specification", spec(series.get("currentSpecification")))
        else:
            g.left_out["series of one specification (no series node)"] += 1
        for field, label in (("seriesPrevious", "series_previous"), ("seriesNext", "series_next"),
                             ("forkOf", "fork_of")):
            if field in s:
                link(head, label, spec(s[field]))
        for other in s.get("obsoletedBy", []):
            link(head, "obsoleted_by", spec(other))
        for part, label in (("release", "release_status"), ("nightly", "nightly_status")):
            status = (s.get(part) or {}).get("status")
            if status:
                g.add(head, label, ("status", text(status)))
        g.add(head, "standing", ("standing", string(s["standing"], key)))
    # a group's organization: the one organization of all the specifications that list the group
    for name, found in sorted(group_orgs.items()):
        if len(found) == 1:
            g.add(("group", name), "organization", ("organization", next(iter(found))))
        else:
            g.left_out["group whose specifications name several organizations (no organization)"] += 1
    return g


def build_all(src: Path) -> list[Graph]:
    return [webspecs_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
