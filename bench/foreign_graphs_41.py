"""Rebuild the FORTY-FIRST folder of held-out "foreign" graphs, docs/programs/graphs41/, from a Debian package's data.

Nobody on the project wrote these facts: every triple is converted from the data files that one Debian package ships.
0ad-data (`usr/share/games/0ad/mods/public/public.zip`: the data of 0 A.D., a strategy game of ancient warfare: its
civilisations, the units and structures of each, which structure trains which unit and researches which technology,
which unit builds which structure, the classes a unit belongs to, and the technologies with the ones they require
and supersede). The script only renames fields to property labels, samples by a fixed rule and writes the file; see
docs/programs/graphs41/PROVENANCE.md. No dataset is one the first forty folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_40.py) used, and the package was used by none of them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into a folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the Debian package's `ar` archive by its
documented layout, its `data.tar.xz` with `tarfile`, the game's `public.zip` with `zipfile`, the templates with
`xml.etree` and the technologies with `json`); nothing is unpacked, installed, imported or run. Reading the 1.3 GB
package takes a minute or two:

    mkdir -p /tmp/graphs41-src && cd /tmp/graphs41-src
    apt-get update && apt-get download 0ad-data=0.0.26-1
    cd -  # back to the repository
    python3 bench/foreign_graphs_41.py --src /tmp/graphs41-src            # writes docs/programs/graphs41/*.jsonl
    python3 bench/foreign_graphs_41.py --src /tmp/graphs41-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output. The Debian package is that of Debian 12 "bookworm".)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the file with
`tasks.graph.importers.import_graph_file` (the project venv): it must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the game shows (a template's `Identity/GenericName`, a technology's `genericName`). A template
takes its parents' fields (its `parent` attribute, several joined by "|", the leftmost laid over the others) by the
game's rules for merging templates, as the code says. Two records of one kind that share a name are named apart by
their civilisation, else left out and counted."""

from __future__ import annotations

import io
import json
import sys
import xml.etree.ElementTree as ET
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs41"

# The package file, as `apt-get download` names it, with its SHA-256.
SOURCES = {
    "0ad-data_0.0.26-1_all.deb": "53745ae74d05bccf6783400fa98f3932b21729ab9d2e86151aa2c331c3455178",
}
OAD_DEB = "0ad-data_0.0.26-1_all.deb"
OAD_ZIP = "usr/share/games/0ad/mods/public/public.zip"
TEMPLATES = "simulation/templates/"
TECHS = "simulation/data/technologies/"
# Wikidata property labels (P-numbers in docs/programs/graphs41/PROVENANCE.md)
AFFILIATION, MANUFACTURER, CREATOR, DEVELOPER, FOLLOWS, REPLACES, INSTANCE_OF = (
    "affiliation", "manufacturer", "creator", "developer", "follows",
    "replaces", "instance of")


def merge(base: ET.Element, over: ET.Element) -> ET.Element:
    """`over` laid on a copy of `base` by the game's template rules: a child with `disable` removes the parent's
    child of that tag; one with `replace` takes its place whole; one with `merge` is kept only where the parent has
    that child; a `datatype="tokens"` list adds its tokens to the parent's and takes away those written "-token";
    any other child is merged the same way, its text (where it has any) replacing the parent's."""
    out = ET.Element(base.tag, dict(base.attrib))
    out.text = base.text
    children = {c.tag: c for c in base}
    order = [c.tag for c in base]
    for c in over:
        if c.get("disable") is not None:
            children.pop(c.tag, None)
            continue
        old = children.get(c.tag)
        if c.get("merge") is not None and old is None:
            continue
        if old is None or c.get("replace") is not None:
            new = merge(ET.Element(c.tag), c)
            if c.get("datatype") == "tokens":
                new.text = " ".join(tok for tok in (c.text or "").split() if not tok.startswith("-"))
        elif c.get("datatype") == "tokens":
            tokens = (old.text or "").split()
            for tok in (c.text or "").split():
                if tok.startswith("-"):
                    tokens = [t for t in tokens if t != tok[1:]]
                elif tok not in tokens:
                    tokens.append(tok)
            new = merge(old, c)
            new.text = " ".join(tokens)
        else:
            new = merge(old, c)
        new.attrib.update({k: v for k, v in c.attrib.items() if k not in ("merge", "replace", "disable")})
        if c.tag not in order:
            order.append(c.tag)
        children[c.tag] = new
    if over.text and over.text.strip() and over.get("datatype") != "tokens":
        out.text = over.text
    for tag in order:
        if tag in children:
            out.append(children[tag])
    return out


class Templates:
    """The game's entity templates, each with its parents' fields merged in (the template name is its path under
    simulation/templates/ without ".xml"; a parent name may also be a mixin under mixins/)."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.raw = {p[len(TEMPLATES):-4]: ET.fromstring(files[p]) for p in sorted(files)}
        self.cache: dict[str, ET.Element] = {}

    def get(self, name: str) -> ET.Element:
        if name in self.cache:
            return self.cache[name]
        own = self.raw[name]
        parents = own.get("parent", "").split("|") if own.get("parent") else []
        base = ET.Element("Entity")
        for parent in reversed(parents):
            key = parent if parent in self.raw else f"mixins/{parent}"
            base = merge(base, self.get(key))
        self.cache[name] = merge(base, own)
        return self.cache[name]


def field(e: ET.Element, path: str) -> str:
    found = e.find(path)
    return text(found.text) if found is not None and found.text else ""


def tokens(e: ET.Element, path: str) -> list[str]:
    found = e.find(path)
    return (found.text or "").split() if found is not None else []


def requirement_parts(req: object) -> list[dict]:
    """The simple requirements ({"tech": ...}, {"civ": ...}) of a technology's requirements, through "all"."""
    if isinstance(req, dict):
        if "all" in req:
            return [p for r in req["all"] for p in requirement_parts(r)]
        return [req]
    return []


def zeroad_wikidata(src: Path) -> Graph:
    g = Graph("zeroad_wikidata", "jsonl", priority=("civilisation", "structure", "unit", "technology", "class"))
    deb = deb_files(package_file(src, OAD_DEB, SOURCES), lambda p: p == OAD_ZIP)
    with zipfile.ZipFile(io.BytesIO(deb[OAD_ZIP])) as z:
        names = sorted(n for n in z.namelist() if not n.endswith(".xmb"))
        files = {n: z.read(n) for n in names if n.startswith(TEMPLATES) and n.endswith(".xml")}
        techs_raw = {n[len(TECHS):-5]: json.loads(z.read(n)) for n in names
                     if n.startswith(TECHS) and n.endswith(".json")}
    del deb
    t = Templates(files)
    # civilisations: the player templates (special/players/<civ>), with their shown name
    civs: dict[str, str] = {}
    for key in sorted(t.raw):
        if key.startswith("special/players/") and key.count("/") == 2:
            e = t.get(key)
            code, name = field(e, "Identity/Civ"), field(e, "Identity/GenericName")
            if code and name and code != "gaia":
                civs[code] = name
    # units and structures: the templates under units/<civ>/ and structures/<civ>/ of a civilisation, with a name;
    # a unit's advanced and elite ranks (Identity/Rank Advanced or Elite) are the basic unit promoted and left out
    records: dict[str, tuple[str, str, str]] = {}  # template -> (type, civ, shown name)
    for key in sorted(t.raw):
        parts = key.split("/")
        if len(parts) != 3 or parts[0] not in ("units", "structures") or parts[1] not in civs:
            continue
        e = t.get(key)
        name = field(e, "Identity/GenericName")
        if not name:
            g.left_out["template with no name (not used)"] += 1
            continue
        if field(e, "Identity/Rank") in ("Advanced", "Elite"):
            g.left_out["unit of advanced or elite rank (not used)"] += 1
            continue
        records[key] = ("unit" if parts[0] == "units" else "structure", parts[1], name)
    # two records of one civilisation and one name (a wall's pieces, a unit's variants) are left out
    count = Counter((r[1], r[2]) for r in records.values())
    for key in [k for k, r in records.items() if count[(r[1], r[2])] > 1]:
        g.left_out[f"{records[key][0]} whose name another of its civilisation bears (not used)"] += 1
        del records[key]
    shown = named_apart(g, {k: r[2] for k, r in records.items()}, {k: civs[r[1]] for k, r in records.items()})
    # technologies: a pair technology (one of two to choose) is its two halves; named by genericName, named apart by
    # the civilisation its requirements name, else left out
    techs: dict[str, dict] = {}
    for key in sorted(techs_raw):
        d = techs_raw[key]
        if "genericName" in d:
            techs[key] = d
        else:
            g.left_out["technology pair or template with no name of its own (not used)"] += 1
    tech_civ = {k: [p["civ"] for p in requirement_parts(d.get("requirements")) if "civ" in p] for k, d in techs.items()}
    tech_names = {k: text(d["genericName"]) for k, d in techs.items()}
    tell = {k: ", ".join(civs.get(c, c) for c in tech_civ[k]) for k in techs}
    told = {k: n if Counter(tech_names.values())[n] == 1 or not tell[k] else f"{n} ({tell[k]})"
            for k, n in tech_names.items()}
    count = Counter(told.values())
    tech_shown = {}
    for k, n in sorted(told.items()):
        if count[n] == 1:
            tech_shown[k] = n
        else:
            g.left_out["technology whose name another technology bears (not used)"] += 1
    pairs = {k: [techs_raw[k].get("top"), techs_raw[k].get("bottom")] for k in techs_raw
             if "top" in techs_raw[k]}

    def tech_node(key: str, civ: str | None) -> tuple[str, str] | None:
        if civ is not None and "{civ}" in key:
            key = key.replace("{civ}", civ) if key.replace("{civ}", civ) in techs_raw else key.replace(
                "{civ}", "generic")
        if key in tech_shown:
            return ("technology", tech_shown[key])
        g.left_out["link to a technology that is no named technology (not used)"] += 1
        return None

    def record_node(key: str, civ: str) -> tuple[str, str] | None:
        key = key.replace("{civ}", civ)
        if key in shown:
            return (records[key][0], shown[key])
        g.left_out["link to a unit or structure its civilisation has not, or outside the sample (not used)"] += 1
        return None

    for key in sorted(records):
        etype, civ, _ = records[key]
        e = t.get(key)
        head = (etype, shown[key])
        g.add(head, AFFILIATION, ("civilisation", civs[civ]))
        for cls in tokens(e, "Identity/VisibleClasses"):
            g.add(head, INSTANCE_OF, ("class", cls))
        for unit in tokens(e, "Trainer/Entities"):
            if (tail := record_node(unit, civ)) is not None:
                g.add(tail, MANUFACTURER, head)
        for building in tokens(e, "Builder/Entities"):
            if (tail := record_node(building, civ)) is not None:
                g.add(tail, CREATOR, head)
        for tech in tokens(e, "Researcher/Technologies"):
            for half in pairs.get(tech, [tech]):
                if isinstance(half, str) and (node := tech_node(half, civ)) is not None:
                    g.add(node, DEVELOPER, head)
    for key in sorted(tech_shown):
        d = techs[key]
        head = ("technology", tech_shown[key])
        for part in requirement_parts(d.get("requirements")):
            if "tech" in part and (node := tech_node(part["tech"], None)) is not None:
                g.add(head, FOLLOWS, node)
            if "civ" in part and part["civ"] in civs:
                g.add(head, AFFILIATION, ("civilisation", civs[part["civ"]]))
        if isinstance(d.get("supersedes"), str) and (node := tech_node(d["supersedes"], None)) is not None:
            g.add(head, REPLACES, node)
    return g


def build_all(src: Path) -> list[Graph]:
    return [zeroad_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
