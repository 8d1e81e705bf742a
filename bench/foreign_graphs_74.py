"""Rebuild the SEVENTY-FOURTH folder of held-out "foreign" graphs, docs/programs/graphs74/, from packages' data files.

Nobody on the project wrote these facts: every triple is converted from the data files that two Debian packages ship.
kicad-symbols (the KiCad project's official schematic symbol libraries, one `.kicad_sym` file per library: each symbol
with its properties, among them its default footprint, and the symbol it is derived from, `extends`) and
libgutenprint-common (the architecture-independent data of Gutenprint, the printer drivers: the XML list of the
printers it knows, each with its manufacturer, driver family, model number and parameter set, and the Epson (escp2)
model descriptions with the base description, ink groups, media, input slots, quality presets, media sizes,
resolutions and weaves each one uses). The script only renames fields to property labels, takes the files whole but
for the rules stated in the code, and writes the files; see docs/programs/graphs74/PROVENANCE.md. No dataset is one
the earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_72.py) used, and
neither package was used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the archives (each Debian package's `ar` archive by
its documented layout and its `data.tar.*` with `tarfile`; the KiCad files as text, line by line, the Gutenprint
files with `xml.etree`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs74-src && cd /tmp/graphs74-src
    apt-get update && apt-get download kicad-symbols=6.0.10-1 libgutenprint-common=5.3.4.20220624T01008808d602-1
    cd -  # back to the repository
    python3 bench/foreign_graphs_74.py --src /tmp/graphs74-src            # writes docs/programs/graphs74/*.jsonl
    python3 bench/foreign_graphs_74.py --src /tmp/graphs74-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output. The packages are those of Debian 12 "bookworm"; both are "Architecture: all".)

The output is deterministic for the same package files (rows sorted; the data taken whole but for the rules stated
in the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a KiCad symbol is its name in its library ("ATmega328P-PU"), a library its file
name less ".kicad_sym" ("MCU_Microchip_ATmega"), a footprint the part of the `Footprint` property after the library
nickname ("TQFP-32_7x7mm_P0.8mm"), a footprint library that nickname ("Package_QFP"); a Gutenprint printer is its
`name` ("Epson Stylus C80"), a manufacturer, family and parameter set the printer's attribute as written, an escp2
model its `id` (the data gives it no other name: "96"), a base description or a referenced file its file name less
".xml" ("baseline_360", "artisan"), an ink list its `text` ("EPSON Standard Inks"). Records of one kind that show one
name are named apart by a telling value in parentheses, as the code says."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path, PurePosixPath

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs74"

# The package files, as `apt-get download` names them, with their SHA-256.
KICAD_DEB = "kicad-symbols_6.0.10-1_all.deb"
GUTENPRINT_DEB = "libgutenprint-common_5.3.4.20220624T01008808d602-1_all.deb"
SOURCES = {
    KICAD_DEB: "173f87b977361e65518ca4726b1f435b085e0d5c748bc44a043d334e6a5de164",
    GUTENPRINT_DEB: "9da925a90e066ab36755f9828dfdd4359582e6b0d73bf8858f64f21564843bc7",
}


# ------------------------------------------------------------------------------------------------------- KiCad
KICAD_DIR = "usr/share/kicad/symbols/"
# The sample, a fixed rule: the libraries of microcontrollers, those whose file name begins with "MCU_" (the
# KiCad libraries' own naming: MCU_<maker>_<family>). Every symbol of those files is taken.
KICAD_LIBRARY_PREFIX = "MCU_"
KICAD_PRIORITY = ("symbol", "footprint", "symbol library", "footprint library")
STRING = r'"((?:[^"\\]|\\.)*)"'
TOP_SYMBOL = re.compile(r"^  \(symbol " + STRING + r"(.*)$")  # a library's symbols are the top level, two spaces in
EXTENDS = re.compile(r"\(extends " + STRING + r"\)")
PROPERTY = re.compile(r"^    \(property " + STRING + " " + STRING)


def unquote(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def kicad_symbols(raw: bytes) -> list[dict[str, str]]:
    """The top-level symbols of one `.kicad_sym` file (KiCad 6's s-expression format, as its editor writes it: one
    symbol per `(symbol "…"` line two spaces in, its properties four spaces in), each as {"name", "extends", and
    its properties by name}."""
    out: list[dict[str, str]] = []
    for line in raw.decode("utf-8").splitlines():
        m = TOP_SYMBOL.match(line)
        if m:
            out.append({"name": unquote(m.group(1))})
            ext = EXTENDS.search(m.group(2))
            if ext:
                out[-1]["extends"] = unquote(ext.group(1))
            continue
        m = PROPERTY.match(line)
        if m and out:
            out[-1].setdefault(unquote(m.group(1)), unquote(m.group(2)))
    return out


def kicad_wikidata(src: Path) -> Graph:
    g = Graph("kicad_mcu_wikidata", "jsonl", priority=KICAD_PRIORITY)
    files = deb_files(package_file(src, KICAD_DEB, SOURCES),
                      lambda p: p.startswith(KICAD_DIR) and p.endswith(".kicad_sym"))
    records: dict[tuple[str, str], dict[str, str]] = {}
    for path in sorted(files):
        library = PurePosixPath(path).name[: -len(".kicad_sym")]
        if not library.startswith(KICAD_LIBRARY_PREFIX):
            g.left_out["symbol of a library not of microcontrollers (not taken)"] += len(kicad_symbols(files[path]))
            continue
        for sym in kicad_symbols(files[path]):
            key = (library, sym["name"])
            if key in records:
                raise SystemExit(f"kicad: two symbols {key}")
            records[key] = sym
    # symbol nodes, told apart by their library where two libraries hold one name
    names = named_apart(g, {k: text(k[1]) for k in records}, {k: k[0] for k in records})
    # footprint nodes: "Library:Footprint"; one footprint name in two footprint libraries told apart by the library
    fps = sorted({text(r["Footprint"]) for r in records.values() if ":" in text(r.get("Footprint", ""))})
    fp_names = named_apart(g, {f: f.split(":", 1)[1] for f in fps}, {f: f.split(":", 1)[0] for f in fps})
    for key, sym in sorted(records.items()):
        library, _ = key
        head = ("symbol", names[key])
        g.add(head, "part of", ("symbol library", library))
        if "extends" in sym:
            base = (library, sym["extends"])  # KiCad 6: a symbol extends a symbol of its own library
            if base in records:
                g.add(head, "based on", ("symbol", names[base]))
            else:
                g.left_out["extends a symbol its library lacks"] += 1
        fp = text(sym.get("Footprint", ""))
        if not fp:
            g.left_out["symbol without a default footprint"] += 1
        elif ":" not in fp:
            g.left_out["footprint without a library nickname"] += 1
        else:
            g.add(head, "uses", ("footprint", fp_names[fp]))
            g.add(("footprint", fp_names[fp]), "part of", ("footprint library", fp.split(":", 1)[0]))
    return g


# -------------------------------------------------------------------------------------------------- Gutenprint
GP_DIR = "usr/share/gutenprint/5.3/xml/"
GP_PRIORITY = ("printer", "manufacturer", "family", "escp2Model", "base", "inkGroup", "InkList", "media",
               "inputSlots", "qualityPresets", "mediaSizes", "resolutions", "printerWeaves", "parameters")


def local(tag: str) -> str:
    """An element's name less its XML namespace."""
    return tag.rsplit("}", 1)[-1]


def stem(path: str) -> str:
    return PurePosixPath(path).name.removesuffix(".xml")


def gutenprint_raw(src: Path) -> Graph:
    g = Graph("gutenprint_raw", "jsonl", priority=GP_PRIORITY)
    files = deb_files(package_file(src, GUTENPRINT_DEB, SOURCES),
                      lambda p: p.startswith(GP_DIR) and p.endswith(".xml"))
    xml = {p[len(GP_DIR):]: ET.fromstring(files[p]) for p in sorted(files)}

    # the printers: every <printer> of every file of printers/, under its <family>
    printers: list[tuple[str, dict[str, str]]] = []
    for path in sorted(p for p in xml if p.startswith("printers/")):
        for family in xml[path].iter():
            if local(family.tag) != "family":
                continue
            for p in family:
                if local(p.tag) == "printer":
                    printers.append((text(family.get("name", "")), {k: text(v) for k, v in p.attrib.items()}))
    names = named_apart(g, {p["driver"]: p["name"] for _, p in printers}, {p["driver"]: p["driver"] for _, p in printers})
    if len(names) != len(printers):
        raise SystemExit("gutenprint: two printers of one driver name")

    # the escp2 model descriptions (model/model_<id>.xml) and the base descriptions they build on (model/base/)
    def model_node(path: str) -> tuple[str, str] | None:
        root = xml.get(path)
        if root is None:
            return None
        model = next((e for e in root.iter() if local(e.tag) == "escp2Model"), None)
        if model is None:
            return None
        return ("base", stem(path)) if path.startswith("escp2/model/base/") else ("escp2Model", text(model.get("id")))

    for family, p in printers:
        head = ("printer", names[p["driver"]])
        g.add(head, "family", ("family", family))
        g.add(head, "manufacturer", ("manufacturer", p.get("manufacturer", "")))
        if p.get("parameters"):
            g.add(head, "parameters", ("parameters", p["parameters"]))
        model = model_node(f"escp2/model/model_{p.get('model')}.xml") if family == "escp2" else None
        if model is not None:
            g.add(head, "model", model)
        else:
            g.left_out["printer whose model number has no description file (drivers other than escp2)"] += 1

    refs: Counter[str] = Counter()
    for path in sorted(p for p in xml if p.startswith("escp2/model/")):
        node = model_node(path)
        if node is None:
            g.left_out["model file without an escp2Model"] += 1
            continue
        model = next(e for e in xml[path].iter() if local(e.tag) == "escp2Model")
        if model.get("base"):
            base = model_node(model.get("base"))
            if base is None:
                raise SystemExit(f"gutenprint: {path} builds on a file the package lacks")
            g.add(node, "base", base)
        for child in model:
            if child.get("src"):
                kind = local(child.tag)
                if child.get("src") not in xml:
                    g.left_out["reference to a file the package lacks"] += 1
                    continue
                g.add(node, kind, (kind, stem(child.get("src"))))
                refs[child.get("src")] = 1

    # the ink groups: the ink lists (their display text) each one offers
    for path in sorted(p for p in xml if p.startswith("escp2/inks/")):
        for e in xml[path].iter():
            if local(e.tag) == "InkList" and text(e.get("text", "")):
                g.add(("inkGroup", stem(path)), "InkList", ("InkList", text(e.get("text"))))
    return g


def build_all(src: Path) -> list[Graph]:
    return [kicad_wikidata(src), gutenprint_raw(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
