"""Rebuild the THIRTY-SECOND held-out set of "foreign" graphs, docs/programs/graphs32/, from data in npm and Debian
packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of three packages ships:
the npm package caniuse-db's `package/data.json` (caniuse.com's browser support tables: each web platform feature
with its categories, specification status, parent feature and, per browser version, whether it is supported; each
browser with its versions and its platform type), the Debian package stellarium-data's
`usr/share/stellarium/skycultures/*/` files (the Stellarium planetarium's sky cultures: each culture's name,
classification and licence, its constellations and asterisms with their English names and the Hipparcos stars their
figures join, and the Western culture's proper star names) and the Debian package libgweather-4-common's
`usr/share/libgweather-4/Locations.xml` (the GNOME weather library's world locations: world regions, their
countries, the states of eleven countries, the cities of each country or state, and the time zone each country or
state gives as its hint). The script only renames fields to a vocabulary's property labels, samples
deterministically and writes the files; see docs/programs/graphs32/PROVENANCE.md. None of these datasets is one the
first thirty-one sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_31.py) used, and
none of the three packages was used by them.

By hand only: no test imports this module and it is not part of any flow. It needs three package files the project
does not depend on; download them (without installing them) into one folder and give that folder as --src. The
script checks each file's SHA-256 and reads the data files from inside the archives (the npm tarball with `tarfile`,
each Debian package's `ar` archive by its documented layout and its `data.tar.xz` with `tarfile`); nothing is
unpacked, installed, imported or run:

    mkdir -p /tmp/graphs32-src && cd /tmp/graphs32-src
    npm pack caniuse-db@1.0.30001813
    apt-get update && apt-get download stellarium-data=0.22.2-1 libgweather-4-common=4.2.0-2
    cd -  # back to the repository
    python3 bench/foreign_graphs_32.py --src /tmp/graphs32-src            # writes docs/programs/graphs32/*.jsonl
    python3 bench/foreign_graphs_32.py --src /tmp/graphs32-src --out DIR  # elsewhere

(These files were built with Python 3.11 and the standard library alone (`tarfile`, `json`, `configparser`, `re` and
`xml.etree`), so the version of Python does not change the output. The Debian packages are those of Debian 12
"bookworm".)

The output is deterministic for the same package files (rows sorted; files taken whole or sampled by a fixed rule).
It prints the source files with their versions, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a
constellation or asterism name that two sky cultures use is "<name> (<culture>)" ("Orion (Western)"); a city name
that two places of the weather locations bear is "<city> (<state or country>)" ("Springfield (Illinois)"); where that
still leaves two of one name, a second telling value follows, the file's own key: "<name> (<culture>, <the
constellation's abbreviation in its culture>)", "<city> (<state or country>, <its coordinates>)". A city the weather
file lists twice in one state or country (one name, coordinates within a tenth of a degree) is one node. A Western
star name that two stars list first is named apart by the rule of `star_naming`. The script stops if two caniuse
features, browsers or sky cultures ever share a name."""

from __future__ import annotations

import configparser
import json
import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, named_apart, npm_files, package_file, present, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs32"

# The three package files, as `npm pack` and `apt-get download` name them, with their SHA-256.
SOURCES = {
    "caniuse-db-1.0.30001813.tgz": "0ee89b98e61761d9559f0f3c05610fd36ba30cddff972e899c679ba4132aca0c",
    "stellarium-data_0.22.2-1_all.deb": "45aaebf39a814acbd6dcccea058c2f5651bcb5635599da03a215feeb51f4d5a5",
    "libgweather-4-common_4.2.0-2_all.deb": "a2576a67753b924d717598d041c393eb5c802ebd9d67261b1995aafe2bcbc9ce",
}


def source(src: Path, name: str) -> bytes:
    return package_file(src, name, SOURCES)


# -- 1. Web platform features and browsers, DBpedia camelCase (caniuse-db's data.json) ---------------------------------
def full(stat: str) -> bool:
    """A support cell ("y", "y #1", "a x #2", "n", "p", "u"): full support where its first flag is "y"."""
    return stat.split()[0] == "y" if stat.split() else False


def caniuse_dbpedia(src: Path) -> Graph:
    g = Graph("browserfeatures_dbpedia", "jsonl",
              priority=("Feature", "BrowserRelease", "Browser", "Category", "SpecificationStatus", "PlatformType"))
    data = json.loads(npm_files(source(src, "caniuse-db-1.0.30001813.tgz"), {"package/data.json"})
                      ["package/data.json"])
    features = dict(sorted(data["data"].items()))
    titles = unique(g, {key: text(f["title"]) for key, f in features.items()})
    agents = dict(sorted(data["agents"].items()))
    # a browser: its long name ("Google Chrome"), or its short name where the long one is empty ("IE Mobile")
    browsers = unique(g, {key: text(a["long_name"] or a["browser"]) for key, a in agents.items()})
    used: set[str] = set()
    for key, f in features.items():
        node = ("Feature", titles[key])
        for cat in f.get("categories") or []:
            if present(cat):
                g.add(node, "category", ("Category", text(cat)))
        if present(f.get("status")):
            g.add(node, "specificationStatus", ("SpecificationStatus", text(data["statuses"][f["status"]])))
        if present(f.get("parent")):
            if f["parent"] in titles:
                g.add(node, "parentFeature", ("Feature", titles[f["parent"]]))
            else:
                g.left_out["parent naming no feature of the file"] += 1
        for agent, cells in sorted((f.get("stats") or {}).items()):
            if agent not in agents:
                g.left_out["support cells of a browser the file does not describe"] += 1
                continue
            # the browser's versions in the file's order, oldest first (its list pads with nulls)
            first = next((v for v in agents[agent]["versions"] if v and full(cells.get(v, ""))), None)
            if first is None:
                g.left_out["feature-browser pair with no version of full support"] += 1
                continue
            release = ("BrowserRelease", f"{text(agents[agent]['browser'])} {text(first)}")
            g.add(node, "firstFullSupport", release)
            g.add(release, "browser", ("Browser", browsers[agent]))
            used.add(agent)
        g.left_out["feature's description, notes, links, keywords and usage shares (not used)"] += 1
    for agent in sorted(used):
        if present(agents[agent].get("type")):
            g.add(("Browser", browsers[agent]), "platformType", ("PlatformType", text(agents[agent]["type"])))
    g.left_out["browsers' abbreviations, usage shares and vendor prefixes (not used)"] = 1
    return g


# -- 2. Sky cultures, Wikidata English labels (stellarium-data's skycultures) ------------------------------------------
SKY = "usr/share/stellarium/skycultures/"
NAME_LINE = re.compile(r'^(\S+)\s+(?:"([^"]*)")?\s*(?:_\("([^"]*)")?')  # abbr "native name" _("English name"...)
STAR_LINE = re.compile(r'^\s*(\d+)\|_\("([^"]*)"\)')  # HIP|_("Name") references
SECTION_LINE = re.compile(r"^#\s*(.+?)\s*\(\w+\)\s*$")  # a heading of the star names file: "# Andromeda (And)"
WESTERN = "western"  # the culture whose star names name the stars (the proper names Stellarium shows by default)


def lines(raw: bytes) -> list[str]:
    return raw.decode("utf-8-sig").replace("\ufeff", "").splitlines()


def figure_stars(raw: bytes, g: Graph, skip: int) -> dict[str, list[int]]:
    """A constellationship file ("<abbr> <number of lines> <HIP> <HIP> ...", skip 2) or an asterism-lines file
    ("<abbr> <kind> <number of lines> <HIP> <HIP> ...", skip 3): the stars of each figure."""
    out: dict[str, list[int]] = {}
    for line in lines(raw):
        tokens = line.split()
        if not tokens or tokens[0].startswith("#"):
            continue
        stars = []
        for token in tokens[skip:]:
            if token.isdigit():
                stars.append(int(token))
            else:
                g.left_out["figure token that is not a Hipparcos number (not used)"] += 1
        out[tokens[0]] = stars
    return out


def figure_names(raw: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines(raw):
        match = NAME_LINE.match(line.strip())
        if match and not line.strip().startswith("#"):
            name = match.group(3) if match.group(3) is not None else match.group(2)
            if name is not None:
                out[match.group(1)] = text(name)
    return out


def skycultures_wikidata(src: Path) -> Graph:
    g = Graph("skycultures_wikidata", "jsonl",
              priority=("star", "constellation", "asterism", "sky culture", "classification", "license"))
    files = deb_files(source(src, "stellarium-data_0.22.2-1_all.deb"),
                      lambda p: p.startswith(SKY) and p.count("/") == 5 and p.endswith((".fab", ".ini")))
    cultures = sorted({p[len(SKY):].split("/")[0] for p in files})
    infos: dict[str, dict[str, str]] = {}
    for c in cultures:
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(files[f"{SKY}{c}/info.ini"].decode("utf-8-sig"))
        infos[c] = dict(parser["info"])
    culture_names = unique(g, {c: text(infos[c]["name"]) for c in cultures})
    listed: dict[str, list[str]] = defaultdict(list)  # HIP -> the star's proper names in the Western file's order
    section: dict[str, str] = {}  # HIP -> the constellation whose heading ("# Andromeda (And)") lists the star
    heading = ""
    for line in lines(files[f"{SKY}{WESTERN}/star_names.fab"]):
        match, head = STAR_LINE.match(line), SECTION_LINE.match(line)
        if head:
            heading = text(head.group(1))
        elif match:
            listed[match.group(1)].append(text(match.group(2)))
            section.setdefault(match.group(1), heading)
    star_names = {int(k): v for k, v in star_naming(g, listed, section).items()}
    figures: list[tuple[str, str, str, str, list[int]]] = []  # (type, culture, abbr, name, stars)
    for c in cultures:
        for etype, names_file, lines_file, skip in (
                ("constellation", "constellation_names.eng.fab", "constellationship.fab", 2),
                ("asterism", "asterism_names.eng.fab", "asterism_lines.fab", 3)):
            if f"{SKY}{c}/{names_file}" not in files:
                continue
            names = figure_names(files[f"{SKY}{c}/{names_file}"])
            stars = figure_stars(files.get(f"{SKY}{c}/{lines_file}", b""), g, skip)
            for abbr, name in sorted(names.items()):
                if "?" in name:  # a figure the culture's file names as unknown ("? (Egypt.)")
                    g.left_out["figure whose name is a question mark (not used)"] += 1
                elif present(name):
                    figures.append((etype, c, abbr, name, stars.get(abbr, [])))
    keyed = {f"{etype}\t{c}\t{abbr}": name for etype, c, abbr, name, _ in figures}
    by_type: dict[str, dict[str, str]] = defaultdict(dict)
    for key, name in keyed.items():
        by_type[key.split("\t")[0]][key] = name
    names: dict[str, str] = {}
    for etype, group in sorted(by_type.items()):
        names.update(named_apart_twice(g, group, {k: culture_names[k.split("\t")[1]] for k in group},
                                       {k: k.split("\t")[2] for k in group}))
    for etype, c, abbr, name, stars in figures:
        node = (etype, names[f"{etype}\t{c}\t{abbr}"])
        g.add(node, "culture", ("sky culture", culture_names[c]))  # P2596
        for hip in sorted(set(stars)):
            if hip in star_names:
                g.add(("star", star_names[hip]), "constellation" if etype == "constellation" else "part of",
                      node)  # P59 (the star's constellation), P361 (an asterism the star is part of)
            else:
                g.left_out["figure star with no Western proper name (not used)"] += 1
    for c in cultures:
        node = ("sky culture", culture_names[c])
        if present(infos[c].get("classification")):
            g.add(node, "has characteristic", ("classification", text(infos[c]["classification"])))  # P1552
        if present(infos[c].get("license")):
            g.add(node, "copyright license", ("license", text(infos[c]["license"])))  # P275
        g.left_out["culture's author, source, credit and boundaries (not used)"] += 1
    g.left_out["star names of the other cultures, descriptions and constellation art (not used)"] = 1
    return g


def star_naming(g: Graph, listed: dict[str, list[str]], section: dict[str, str]) -> dict[str, str]:
    """A star's name: its first proper name in the Western file; where two stars list one first name, each takes its
    first other listed name that no other star lists ("Marfak-East", "Marfak-West"), else "<name> (<the
    constellation heading it is listed under>)", and where that still leaves two, "<name> (HIP <number>)"."""
    firsts: dict[str, int] = defaultdict(int)
    everyone: dict[str, int] = defaultdict(int)
    for names in listed.values():
        firsts[names[0]] += 1
        for name in set(names):
            everyone[name] += 1
    chosen: dict[str, str] = {}
    for hip, names in sorted(listed.items(), key=lambda kv: int(kv[0])):
        if firsts[names[0]] == 1:
            chosen[hip] = names[0]
            continue
        other = next((n for n in names[1:] if everyone[n] == 1 and firsts[n] == 0), None)
        chosen[hip] = other if other is not None else f"{names[0]} ({section[hip]})"
        g.left_out["Western star whose first proper name another star also bears (named apart)"] += 1
    g.left_out["Western star's second or later proper name (not used)"] = sum(len(n) - 1 for n in listed.values())
    first = named_apart_soft(chosen, {hip: f"HIP {hip}" for hip in chosen})
    return unique(g, {hip: (first[hip] if first[hip] == chosen[hip] else f"{chosen[hip].split(' (')[0]} (HIP {hip})")
                      for hip in chosen})


def named_apart_soft(keyed: dict[str, str], tell: dict[str, str]) -> dict[str, str]:
    """The first naming apart: "name (tell)" where two records bear a name; any names still shared are left for a
    second pass (`named_apart_twice`)."""
    count: dict[str, int] = defaultdict(int)
    for name in keyed.values():
        count[name] += 1
    return {k: name if count[name] == 1 else f"{name} ({tell[k]})" for k, name in keyed.items()}


def named_apart_twice(g: Graph, keyed: dict[str, str], tell: dict[str, str], then: dict[str, str]) -> dict[str, str]:
    """Node names for records: the name where one record bears it, else "name (tell)", and where two records still
    share that, "name (tell, then)"; stops where two records still share a name."""
    first = named_apart_soft(keyed, tell)
    count: dict[str, int] = defaultdict(int)
    for name in first.values():
        count[name] += 1
    return unique(g, {k: name if count[name] == 1 else f"{keyed[k]} ({tell[k]}, {then[k]})"
                      for k, name in first.items()})


# -- 3. World weather locations, raw keys (libgweather-4-common's Locations.xml) -------------------------------------
LOCATIONS = "usr/share/libgweather-4/Locations.xml"


def name_of(element: ET.Element) -> str:
    return text(element.findtext("_name") or element.findtext("name") or "")


def near(a: str, b: str) -> bool:
    """Two "<latitude> <longitude>" coordinates within a tenth of a degree of each other in both."""
    try:
        return all(abs(float(x) - float(y)) <= 0.1 for x, y in zip(a.split(), b.split(), strict=True))
    except ValueError:
        return False


def weatherlocations_raw(src: Path) -> Graph:
    g = Graph("weatherlocations_raw", "jsonl", priority=("country", "state", "region", "city", "tz-hint"))
    files = deb_files(source(src, "libgweather-4-common_4.2.0-2_all.deb"), lambda p: p == LOCATIONS)
    root = ET.fromstring(files[LOCATIONS])
    cities: list[tuple[str, str, tuple[str, str], str]] = []  # (key, name, parent node, coordinates)
    countries: dict[str, str] = {}
    states: list[tuple[ET.Element, str]] = []  # (state, its country's name)
    places: list[tuple[ET.Element, tuple[str, str]]] = []  # (country or state, its node; a state by its index)
    for region in root.findall("region"):
        for country in region.findall("country"):
            cname = name_of(country)
            if cname in countries:
                raise SystemExit(f"{g.name}: two countries named {cname}")
            countries[cname] = cname
            cnode = ("country", cname)
            g.add(cnode, "region", ("region", name_of(region)))
            if present(country.findtext("tz-hint")):
                g.add(cnode, "tz-hint", ("tz-hint", text(country.findtext("tz-hint"))))
            places.append((country, cnode))
            for state in country.findall("state"):
                states.append((state, cname))
                places.append((state, ("state", f"{len(states) - 1:05d}")))
    # a state name two countries use ("Distrito Federal") is "<state> (<country>)"
    state_names = named_apart(g, {f"{i:05d}": name_of(s) for i, (s, _) in enumerate(states)},
                              {f"{i:05d}": c for i, (_, c) in enumerate(states)})
    for i, (state, cname) in enumerate(states):
        snode = ("state", state_names[f"{i:05d}"])
        g.add(snode, "country", ("country", cname))
        if present(state.findtext("tz-hint")):
            g.add(snode, "tz-hint", ("tz-hint", text(state.findtext("tz-hint"))))
    for place, pnode in places:
        if pnode[0] == "state":
            pnode = ("state", state_names[pnode[1]])
        for city in place.findall("city"):
            cities.append((f"{len(cities):05d}", name_of(city), pnode, text(city.findtext("coordinates"))))
        for _ in place.findall("location"):
            g.left_out["weather station (named by its ICAO code's place; not used)"] += 1
    # one city the file lists twice in one place (one name, coordinates within a tenth of a degree) is one node
    kept: list[tuple[str, str, tuple[str, str], str]] = []
    for key, name, pnode, coords in cities:
        if any(n == name and p == pnode and near(c, coords) for _, n, p, c in kept):
            g.left_out["city the file lists twice in one place (one node)"] += 1
        else:
            kept.append((key, name, pnode, coords))
    names = named_apart_twice(g, {k: n for k, n, _, _ in kept}, {k: p[1] for k, _, p, _ in kept},
                              {k: c for k, _, _, c in kept})
    for key, _, pnode, _ in kept:
        g.add(("city", names[key]), pnode[0], pnode)
    g.left_out["coordinates, ISO and FIPS codes, time zone lists, radars and zones (not used)"] = 1
    return g


def build_all(src: Path) -> list[Graph]:
    return [caniuse_dbpedia(src), skycultures_wikidata(src), weatherlocations_raw(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
