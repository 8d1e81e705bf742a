"""Rebuild the SEVENTY-SIXTH folder of held-out "foreign" graphs, docs/programs/graphs76/, from a package's data files.

Nobody on the project wrote these facts: every triple is converted from the fixture definitions that one package
ships. qlcplus-data (Debian: the data files of Q Light Controller Plus, QLC+, a program that drives stage lighting over
DMX; it ships one XML fixture definition per lighting product, each naming the product's manufacturer, its model, its
type, the DMX channels it has with the group each belongs to, its modes, each an ordered list of those channels, its
bulb, and the author of the definition). The script only renames the XML's element names to snake_case labels, takes
the moving-head fixtures whole (the fixed rule below) and writes the file; see docs/programs/graphs76/PROVENANCE.md.
No dataset is one the earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ...
bench/foreign_graphs_75.py) used, and the package was neither used nor set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into a folder and give that folder as --src. The script checks the
file's SHA-256 and reads the data files from inside the archive (the Debian package's `ar` archive by its documented
layout and its `data.tar.xz` with `tarfile`, the fixture definitions with `xml.etree`); nothing is unpacked,
installed, imported or run:

    mkdir -p /tmp/graphs76-src && cd /tmp/graphs76-src
    apt-get update && apt-get download qlcplus-data=4.12.6-1
    cd -  # back to the repository
    python3 bench/foreign_graphs_76.py --src /tmp/graphs76-src            # writes docs/programs/graphs76/*.jsonl
    python3 bench/foreign_graphs_76.py --src /tmp/graphs76-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output. The Debian package is that of Debian 12 "bookworm"; it is architecture-independent.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rule stated in
the code). It prints the source file, then one line with the graph's counts. Check the file with
`tasks.graph.importers.import_graph_file` (the project venv): it must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the definition gives: a fixture is its `Model` ("Robin 600E Spot"), a manufacturer its
`Manufacturer` ("Robe"), a mode its `Name` attribute with the fixture's name in parentheses ("Mode 1 (Robin 600E
Spot)": mode names such as "16 Channel" are shared by hundreds of fixtures, and each mode belongs to one), a channel its
`Name` attribute ("Pan Fine"; one node per name, however many fixtures define it), a channel group the `Group`
element's text ("Pan", "Colour"), a bulb type the `Bulb` element's `Type` ("MSD 250W"), an author the `Author`
element's text. Two fixtures of one model name are told apart by their manufacturer in parentheses, as the code
says."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs76"

# The package file, as `apt-get download` names it, with its SHA-256.
QLC_DEB = "qlcplus-data_4.12.6-1_all.deb"
SOURCES = {
    QLC_DEB: "a339e98cf4dd411abfe4066d58bc6182716c7d4d57f64d0382cbc186f107a22e",
}

# ------------------------------------------------------------------------------------------------- QLC+ fixtures
FIXTURES = "usr/share/qlcplus/fixtures/"
NS = "{http://www.qlcplus.org/FixtureDefinition}"
TAKEN_TYPE = "Moving Head"  # the fixed rule: the fixtures whose `Type` is this, whole; the others are counted
PRIORITY = ("fixture", "manufacturer", "mode", "channel group", "channel", "bulb type", "author")


def child_text(element: ET.Element, *path: str) -> str:
    """The text of the element at ``path`` below ``element`` (names without the namespace), as a name; "" if none."""
    found = element.find("/".join(NS + p for p in path))
    return text(found.text or "") if found is not None else ""


def fixtures_snake(src: Path) -> Graph:
    g = Graph("fixtures_snake", "jsonl", priority=PRIORITY)
    files = deb_files(package_file(src, QLC_DEB, SOURCES), lambda p: p.startswith(FIXTURES) and p.endswith(".qxf"))
    roots: dict[str, ET.Element] = {}
    for path in sorted(files):
        root = ET.fromstring(files[path])
        if root.tag != NS + "FixtureDefinition":
            raise SystemExit(f"fixtures_snake: {path} is not a fixture definition")
        if child_text(root, "Type") != TAKEN_TYPE:
            g.left_out[f"fixture definition of another type than {TAKEN_TYPE} (not taken)"] += 1
            continue
        roots[path] = root

    # fixture nodes: the model name, told apart by the manufacturer where two definitions share a model name
    makers = {path: child_text(root, "Manufacturer") for path, root in roots.items()}
    fixture_names = named_apart(g, {path: child_text(root, "Model") for path, root in roots.items()}, makers)

    for path, root in sorted(roots.items()):
        fixture = ("fixture", fixture_names[path])
        if not makers[path] or not fixture[1]:
            raise SystemExit(f"fixtures_snake: {path} without a manufacturer or a model")
        g.add(fixture, "manufacturer", ("manufacturer", makers[path]))
        author = child_text(root, "Creator", "Author")
        if author:
            g.add(fixture, "author", ("author", author))
        else:
            g.left_out["definition without an author"] += 1

        # the bulb types the definition gives (its own Physical element and its modes' ones), each once
        bulbs = {text(b.get("Type") or "") for b in root.iter(NS + "Bulb")}
        for bulb in sorted(bulbs - {"", "Other"}):
            g.add(fixture, "bulb_type", ("bulb type", bulb))
        if not bulbs - {"", "Other"}:
            g.left_out["fixture whose bulb type is empty or 'Other'"] += 1

        # channels the definition declares, with the group each belongs to
        declared: dict[str, str] = {}
        for channel in root.findall(NS + "Channel"):
            name = text(channel.get("Name") or "")
            if not name:
                g.left_out["channel without a name"] += 1
                continue
            declared[name] = child_text(channel, "Group")
        for name, group in sorted(declared.items()):
            if group:
                g.add(("channel", name), "group", ("channel group", group))
            else:
                g.left_out["channel declared without a Group element (a preset channel)"] += 1

        # modes: each mode of this fixture, and the channels it lists
        mode_names = [text(m.get("Name") or "") for m in root.findall(NS + "Mode")]
        if len(set(mode_names)) != len(mode_names) or "" in mode_names:
            raise SystemExit(f"fixtures_snake: {path} has two modes of one name or a nameless mode")
        for mode_element, mode_name in zip(root.findall(NS + "Mode"), mode_names):
            mode = ("mode", f"{mode_name} ({fixture[1]})")
            g.add(fixture, "mode", mode)
            for channel in mode_element.findall(NS + "Channel"):
                name = text(channel.text or "")
                if name not in declared:
                    g.left_out["mode channel the definition does not declare"] += 1
                    continue
                g.add(mode, "channel", ("channel", name))
    return g


def build_all(src: Path) -> list[Graph]:
    return [fixtures_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
