"""Rebuild the THIRTY-FIFTH folder of held-out "foreign" graphs, docs/programs/graphs35/, from data in a Debian package.

Nobody on the project wrote these facts: every triple is converted from the data files that naev-data ships
(`usr/share/naev/dat/`: the galaxy of Naev, a space trading and combat game: its star systems and the jumps between
them (`ssys/*.xml`), its planets and space stations with the faction that holds each and the tech groups each sells
(`assets/*.xml`), its factions with their allies and enemies (`faction.xml`), its tech groups (`tech.xml`) and its
ships with their maker, class, licence and the ship each is a variant of (`ships/*.xml`)). The script only renames
fields to a vocabulary's property labels and writes the file; see docs/programs/graphs35/PROVENANCE.md. The dataset
is not one the first thirty-four folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ...
bench/foreign_graphs_34.py) used, and the package was not used by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into a folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the Debian package's `ar` archive by its
documented layout and its `data.tar.xz` with `tarfile`, the XML files with `xml.etree.ElementTree`); nothing is
unpacked, installed, imported or run:

    mkdir -p /tmp/graphs35-src && cd /tmp/graphs35-src
    apt-get update && apt-get download naev-data=0.8.2-1
    cd -  # back to the repository
    python3 bench/foreign_graphs_35.py --src /tmp/graphs35-src            # writes docs/programs/graphs35/*.jsonl
    python3 bench/foreign_graphs_35.py --src /tmp/graphs35-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone (`tarfile`, `lzma`, `xml.etree`), so the version
of Python does not change the output. The Debian package is that of Debian 12 "bookworm".)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated
in the code). It prints the source file, then one line per graph with its counts. Check the file with
`tasks.graph.importers.import_graph_file` (the project venv): it must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the game's files give (an asset's, a system's and a ship's `name` attribute, a faction's
`<name>`, a ship's `<fabricator>`, `<class>` and `<license>`); each file names one thing, and no two files of one
folder share a name. A tech group is resolved to the ships it sells (its nested groups too) and is no node itself."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, package_file, present, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs35"

# The package files, as `apt-get download` names them, with their SHA-256.
SOURCES = {
    "naev-data_0.8.2-1_all.deb": "a98849cacdfc72779e03ceb68f32af03cb3c3f382ba8b82e3299ef87254b454d",
}


def source(src: Path, name: str) -> bytes:
    return package_file(src, name, SOURCES)


# -- 1. Naev's galaxy, DBpedia camelCase (naev-data's dat/ XML files) ------------------------------------------------
NAEV_DEB = "naev-data_0.8.2-1_all.deb"
NAEV_DAT = "usr/share/naev/dat/"
NAEV_FILES = ("faction.xml", "tech.xml")  # and every file of dat/assets/, dat/ssys/ and dat/ships/


def naev_wanted(path: str) -> bool:
    if not path.startswith(NAEV_DAT):
        return False
    rest = path[len(NAEV_DAT):]
    return rest in NAEV_FILES or (rest.count("/") == 1 and rest.split("/")[0] in ("assets", "ssys", "ships")
                                  and rest.endswith(".xml"))


def xml_root(raw: bytes, where: str) -> ET.Element:
    try:
        return ET.fromstring(raw)
    except ET.ParseError as exc:
        raise SystemExit(f"{where}: not well-formed XML ({exc})") from exc


def tech_items(techs: dict[str, list[str]], name: str, seen: frozenset[str] = frozenset()) -> list[str]:
    """The items of a tech group (tech.xml), a group named among them replaced by its own items, in order."""
    out: list[str] = []
    for item in techs.get(name, []):
        if item in techs:
            if item not in seen:
                out += tech_items(techs, item, seen | {name})
        else:
            out.append(item)
    return out


def naev_dbpedia(src: Path) -> Graph:
    g = Graph("naev_dbpedia", "jsonl",
              priority=("StarSystem", "Planet", "SpaceStation", "Faction", "Ship", "Company", "ShipClass", "License"))
    files = deb_files(source(src, NAEV_DEB), naev_wanted)
    folder = lambda sub: sorted(p for p in files if p.startswith(NAEV_DAT + sub + "/"))  # noqa: E731

    # factions: those the game marks <known/> (shown to the player) and whose name is no internal key; allies and
    # enemies between two of them
    factions: dict[str, ET.Element] = {}
    for f in xml_root(files[NAEV_DAT + "faction.xml"], "faction.xml").findall("faction"):
        name = text(f.findtext("name", ""))
        if f.find("known") is None:
            g.left_out["faction the game does not show (no <known/>; not used)"] += 1
            continue
        if "_" in name:
            g.left_out["faction named by a mission's internal key (an underscore in its name; not used)"] += 1
            continue
        factions[name] = f
    for name, f in sorted(factions.items()):
        for tag, relation in (("allies/ally", "ally"), ("enemies/enemy", "enemy")):
            for other in f.findall(tag):
                other_name = text(other.text or "")
                if other_name in factions:
                    g.add(("Faction", name), relation, ("Faction", other_name))
                else:
                    g.left_out[f"{relation} that is no shown faction (not used)"] += 1

    # tech groups (nested groups resolved) and the ships
    techs: dict[str, list[str]] = {}
    for t in xml_root(files[NAEV_DAT + "tech.xml"], "tech.xml").findall("tech"):
        techs[text(t.get("name", ""))] = [text(i.text or "") for i in t.findall("item")]
    ships: dict[str, ET.Element] = {}
    for path in folder("ships"):
        s = xml_root(files[path], path)
        ships[text(s.get("name", ""))] = s
    for name, s in sorted(ships.items()):
        node = ("Ship", name)
        base = text(s.findtext("base_type", ""))
        if present(base) and base != name:
            if base in ships:
                g.add(node, "variantOf", ("Ship", base))
            else:
                g.left_out["base type that is no ship of the files (not used)"] += 1
        maker = text(s.findtext("fabricator", ""))
        if present(maker) and maker != "N/A":
            g.add(node, "manufacturer", ("Company", maker))
        elif maker == "N/A":
            g.left_out["ship whose fabricator is 'N/A' (no manufacturer)"] += 1
        if present(s.findtext("class", "")):
            g.add(node, "shipClass", ("ShipClass", text(s.findtext("class", ""))))
        if present(s.findtext("license", "")):
            g.add(node, "requiredLicense", ("License", text(s.findtext("license", ""))))

    # star systems: their jumps and the assets they hold
    system_of: dict[str, list[str]] = defaultdict(list)
    for path in folder("ssys"):
        ss = xml_root(files[path], path)
        name = text(ss.get("name", ""))
        for jump in ss.findall("jumps/jump"):
            g.add(("StarSystem", name), "connectsTo", ("StarSystem", text(jump.get("target", ""))))
        for asset in ss.findall("assets/asset"):
            system_of[text(asset.text or "")].append(name)

    # assets: planets (class a letter) and space stations (class a digit), those with a place in space
    for path in folder("assets"):
        a = xml_root(files[path], path)
        name = text(a.get("name", ""))
        if a.find("pos") is None:
            g.left_out["virtual asset (no position; the game's presence markers; not used)"] += 1
            continue
        cls = text(a.findtext("general/class", ""))
        node = ("SpaceStation" if cls.isdigit() else "Planet", name)
        if not system_of.get(name):
            g.left_out["asset no star system holds (not used)"] += 1
            continue
        for system in system_of[name]:  # the system holds the asset: "<system> planet <asset>"
            g.add(("StarSystem", system), "planet" if node[0] == "Planet" else "spaceStation", node)
        owner = text(a.findtext("presence/faction", ""))
        if present(owner):
            if owner in factions:
                g.add(node, "owner", ("Faction", owner))
            else:
                g.left_out["asset whose faction the game does not show (owner not used)"] += 1
        for item in a.findall("tech/item"):
            group = text(item.text or "")
            if group not in techs:
                g.left_out["tech item of an asset that is no tech group (not used)"] += 1
                continue
            for thing in tech_items(techs, group):
                if thing in ships:
                    g.add(node, "shipyard", ("Ship", thing))
        if a.find("tech") is not None:
            g.left_out["asset with tech groups: the outfits they sell (not used)"] += 1
    g.left_out["outfits, missions, events, fleets and graphics (not read)"] = 1
    return g


def build_all(src: Path) -> list[Graph]:
    return [naev_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
