"""Rebuild the FIFTY-SECOND folder of held-out "foreign" graphs, docs/programs/graphs52/, from packages' data files.

Nobody on the project wrote these facts: every triple is converted from the data files that two Debian packages ship.
pci.ids (Debian: the PCI ID Repository's list of PCI vendors, the devices each vendor makes and the subsystems, cards
and boards built on each device, with the vendor of each subsystem) and cmor-tables (Debian: the MIP tables of the
Climate Model Output Rewriter for CMIP6, the sixth phase of the Coupled Model Intercomparison Project: its controlled
vocabulary of climate models, institutions, activities and experiments, and its tables of the variables the models
report, each with its modeling realm and CF standard name). The script only renames fields to property labels, takes
the tables whole but for the rules stated in the code, and writes the files; see docs/programs/graphs52/PROVENANCE.md.
No dataset is one the earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... up to the fifty-first)
used, and neither package was used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the archives (each Debian package's `ar` archive by
its documented layout and its `data.tar.xz` with `tarfile`; the PCI ID list as text, the CMIP6 tables with `json`);
nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs52-src && cd /tmp/graphs52-src
    apt-get update && apt-get download pci.ids=0.0~2023.04.11-1 cmor-tables=3.3-1.1
    cd -  # back to the repository
    python3 bench/foreign_graphs_52.py --src /tmp/graphs52-src            # writes docs/programs/graphs52/*.jsonl
    python3 bench/foreign_graphs_52.py --src /tmp/graphs52-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output. The packages are those of Debian 12 "bookworm"; both are architecture-independent.)

The output is deterministic for the same package files (rows sorted; the data taken whole but for the rules stated
in the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a PCI vendor, device or subsystem is its name in pci.ids ("Dell", "GeForce
820M"); a CMIP6 climate model, institution, activity, experiment or source type is its registered identifier in the
CMIP6 controlled vocabulary ("CESM2", "NCAR", "ScenarioMIP", "historical", "AOGCM": the vocabulary gives no other name
for a model, an experiment or a source type, only descriptions; an institution's entry is its name with its postal
address, and the entry for the activity CMIP is a description of its experiments), a realm is the name the vocabulary
gives for its identifier ("Sea Ice"), a variable is its `long_name` ("Near-Surface Air Temperature"), a MIP table its
`table_id` less the word "Table" ("Amon"), a standard name the CF standard name as written ("air_temperature").
Records of one kind that show one name are named apart by a telling value in parentheses (PCI IDs, CMOR variable
names), as the code says."""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs52"

# The package files, as `apt-get download` names them, with their SHA-256.
PCI_DEB = "pci.ids_0.0~2023.04.11-1_all.deb"
CMOR_DEB = "cmor-tables_3.3-1.1_all.deb"
SOURCES = {
    PCI_DEB: "eac5f889128f3f53100be7f16f9a7dd5aade7499fa9571f53a6c1cfa0bf4565d",
    CMOR_DEB: "586d7639f9075844c6c27c9eeecb73e3ff06174146e8664ea09afc0cab10f03e",
}


# ------------------------------------------------------------------------------------------------------- PCI
PCI_IDS = "usr/share/misc/pci.ids"
PCI_PRIORITY = ("vendor", "device", "subsystem")
# The sample, a fixed rule: the devices (and their subsystems) of the vendors whose 16-bit PCI vendor ID lies in
# 1000-10ff, the first block of IDs the PCI-SIG gave out in order. Every vendor a kept subsystem names as its maker is
# still a node, whatever its ID; its own devices are kept only when its ID is in the block.
VENDOR_FIRST, VENDOR_LAST = 0x1000, 0x10FF


def pci_records(raw: str) -> tuple[dict[str, str], list[tuple[str, str, str]], list[tuple[str, str, str, str, str]]]:
    """The vendor, device and subsystem lines of pci.ids, by its stated syntax ("vendor  vendor_name", a tab and
    "device  device_name", two tabs and "subvendor subdevice  subsystem_name"); comment lines start with "#" and the
    list of device classes, from the first line starting with "C ", is not read."""
    vendors: dict[str, str] = {}
    devices: list[tuple[str, str, str]] = []
    subsystems: list[tuple[str, str, str, str, str]] = []
    vendor = device = None
    for line in raw.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("C "):
            break
        if line.startswith("\t\t"):
            subvendor, subdevice, name = line[2:].split(None, 2)
            subsystems.append((vendor, device, subvendor, subdevice, text(name)))
        elif line.startswith("\t"):
            device, name = line[1:].split(None, 1)
            devices.append((vendor, device, text(name)))
        else:
            vendor, name = line.split(None, 1)
            vendors[vendor] = text(name)
    return vendors, devices, subsystems


def apart_twice(g: Graph, keyed: dict, first: dict, second: dict) -> dict:
    """Node names for records: the name where one record bears it, else "name (first[key])", and where that is still
    shared, "name (first[key], second[key])"; stops where two records still share a name."""
    by_name: dict[str, set] = defaultdict(set)
    for key, name in keyed.items():
        by_name[name].add(key)
    once = {key: name if len(by_name[name]) == 1 else f"{name} ({first[key]})" for key, name in keyed.items()}
    by_once: dict[str, set] = defaultdict(set)
    for key, name in once.items():
        by_once[name].add(key)
    out = {key: name if len(by_once[name]) == 1 else f"{keyed[key]} ({first[key]}, {second[key]})"
           for key, name in once.items()}
    if len(set(out.values())) != len(out):
        raise SystemExit(f"{g.name}: two records still share a name after naming them apart")
    return out


def pci_dbpedia(src: Path) -> Graph:
    g = Graph("pcidevices_dbpedia", "jsonl", priority=PCI_PRIORITY)
    files = deb_files(package_file(src, PCI_DEB, SOURCES), lambda p: p == PCI_IDS)
    vendors, devices, subsystems = pci_records(files[PCI_IDS].decode("utf-8"))
    kept = lambda vendor: VENDOR_FIRST <= int(vendor, 16) <= VENDOR_LAST  # noqa: E731
    g.left_out["device of a vendor outside the ID block (not taken)"] += sum(1 for d in devices if not kept(d[0]))
    g.left_out["subsystem of a vendor outside the ID block (not taken)"] += sum(1 for s in subsystems
                                                                               if not kept(s[0]))
    devices = [d for d in devices if kept(d[0])]
    subsystems = [s for s in subsystems if kept(s[0])]

    # vendor nodes: every vendor of a kept device or named as the maker of a kept subsystem, by its name (told apart
    # by its vendor ID where two vendors of the file share one)
    vendor_names = named_apart(g, vendors, {v: v for v in vendors})
    # device nodes, told apart by their "vendor:device" IDs; subsystem nodes by "subvendor:subdevice", then also by
    # the device they are built on
    device_names = named_apart(g, {(v, d): n for v, d, n in devices}, {(v, d): f"{v}:{d}" for v, d, _ in devices})
    sub_keyed = {(v, d, sv, sd): n for v, d, sv, sd, n in subsystems}
    if len(sub_keyed) != len(subsystems) or len(device_names) != len(devices):
        raise SystemExit("pcidevices_dbpedia: one ID listed twice under one vendor or device")
    sub_names = apart_twice(g, sub_keyed, {k: f"{k[2]}:{k[3]}" for k in sub_keyed},
                            {k: f"on {k[0]}:{k[1]}" for k in sub_keyed})

    for v, d, _ in devices:
        g.add(("vendor", vendor_names[v]), "product", ("device", device_names[(v, d)]))
    for key in sub_keyed:
        v, d, sv, _ = key
        node = ("subsystem", sub_names[key])
        g.add(("device", device_names[(v, d)]), "hasVariant", node)
        if sv in vendor_names:
            g.add(node, "manufacturer", ("vendor", vendor_names[sv]))
        else:
            g.left_out["subsystem whose vendor ID the list lacks"] += 1
    return g


# ------------------------------------------------------------------------------------------------------- CMIP6
CMIP6 = "usr/share/cmor/CMIP6/"
CMIP_CV = CMIP6 + "CMIP6_CV.json"
# The MIP tables: every CMIP6_*.json of the folder with a "variable_entry" (the controlled vocabulary, the coordinate,
# formula-term and grid tables have none and are read only for the vocabulary).
CMIP_PRIORITY = ("climate model", "institution", "activity", "experiment", "source type", "variable", "MIP table",
                 "realm", "standard name")


def split_ids(values: object) -> list[str]:
    """A vocabulary list's values, one identifier each (a value may hold several separated by spaces:
    "RFMIP AerChemMIP")."""
    if isinstance(values, str):
        values = [values]
    return [part for value in values for part in str(value).split()]


def cmip6_wikidata(src: Path) -> Graph:
    g = Graph("cmip6_wikidata", "jsonl", priority=CMIP_PRIORITY)
    files = deb_files(package_file(src, CMOR_DEB, SOURCES),
                      lambda p: p.startswith(CMIP6) and p.endswith(".json") and "/" not in p[len(CMIP6):])
    cv = json.loads(files[CMIP_CV])["CV"]
    activities = {k: text(k) for k in cv["activity_id"]}  # by identifier: CMIP's entry is a description
    realms = {k: text(v) for k, v in cv["realm"].items()}
    experiments = cv["experiment_id"]

    def activity(key: str) -> tuple[str, str] | None:
        if key not in activities:
            g.left_out["activity the vocabulary lacks"] += 1
            return None
        return ("activity", activities[key])

    # climate models (source_id): their institutions and the activities they take part in (the free-text `source`
    # entry, which describes each model's components, is not read)
    for model, entry in cv["source_id"].items():
        head = ("climate model", text(model))
        for inst in split_ids(entry["institution_id"]):
            if inst in cv["institution_id"]:
                g.add(head, "developer", ("institution", inst))
            else:
                g.left_out["institution the vocabulary lacks"] += 1
        for key in split_ids(entry["activity_participation"]):
            if (node := activity(key)) is not None:
                g.add(head, "participant in", node)

    # experiments: the activities they belong to, the experiment each branches from, the source types they need
    for exp, entry in experiments.items():
        node = ("experiment", text(exp))
        for key in split_ids(entry["activity_id"]):
            if (act := activity(key)) is not None:
                g.add(act, "has part(s)", node)
        for parent in entry["parent_experiment_id"]:
            if parent == "no parent":
                continue
            if parent in experiments:
                g.add(node, "based on", ("experiment", text(parent)))
            else:
                g.left_out["parent experiment the vocabulary lacks"] += 1
        for kind in split_ids(entry["required_model_components"]):
            if kind in cv["source_type"]:
                g.add(node, "uses", ("source type", kind))
            else:
                g.left_out["source type the vocabulary lacks"] += 1

    # the MIP tables and their variables: a variable is one CMOR variable name with one long name (a name that gives
    # several long names in different tables is that many variables), told apart by its CMOR name where two share a
    # long name
    tables = {}
    for path in sorted(files):
        data = json.loads(files[path])
        if "variable_entry" in data:
            tables[text(re.sub(r"^Table\s+", "", data["Header"]["table_id"]))] = data
    entries = [(table, key, entry) for table, data in sorted(tables.items())
               for key, entry in sorted(data["variable_entry"].items())]
    g.left_out["variable without a long name"] += sum(1 for _, _, e in entries if not text(e.get("long_name") or ""))
    entries = [(table, key, entry) for table, key, entry in entries if text(entry.get("long_name") or "")]
    keyed = {(key, text(entry["long_name"])): text(entry["long_name"]) for _, key, entry in entries}
    names = named_apart(g, keyed, {k: k[0] for k in keyed})
    by_cmor_name: dict[str, set[str]] = defaultdict(set)
    for (key, _), name in names.items():
        by_cmor_name[key].add(name)

    for table, data in sorted(tables.items()):
        for realm in split_ids(data["Header"].get("realm", "")):
            if realm in realms:
                g.add(("MIP table", table), "main subject", ("realm", realms[realm]))
            else:
                g.left_out["table realm the vocabulary lacks"] += 1
    for table, key, entry in entries:
        node = ("variable", names[(key, text(entry["long_name"]))])
        g.add(node, "part of", ("MIP table", table))
        for realm in split_ids(entry.get("modeling_realm") or ""):
            if realm in realms:
                g.add(node, "main subject", ("realm", realms[realm]))
            else:
                g.left_out["variable realm the vocabulary lacks"] += 1
        if text(entry.get("standard_name") or ""):
            g.add(node, "measured physical quantity", ("standard name", text(entry["standard_name"])))
        else:
            g.left_out["variable without a standard name"] += 1
        # cell_measures: "area: areacella volume: volcello" names the variables that hold the cells' areas and
        # volumes ("--OPT" and "--MODEL" say the model chooses; they name no variable)
        for measure in re.findall(r"(?:area|volume):\s*(\S+)", entry.get("cell_measures") or ""):
            targets = by_cmor_name.get(measure, set())
            if len(targets) == 1:
                g.add(node, "uses", ("variable", next(iter(targets))))
            else:
                g.left_out["cell measure not one variable of the tables"] += 1
    return g


def build_all(src: Path) -> list[Graph]:
    return [pci_dbpedia(src), cmip6_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
