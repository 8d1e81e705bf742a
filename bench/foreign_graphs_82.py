"""Rebuild the EIGHTY-SECOND folder of held-out "foreign" graphs, docs/programs/graphs82/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
nmdc-schema (PyPI: the schema of the National Microbiome Data Collaborative, NMDC, a LinkML schema for the metadata
of microbiome studies, biosamples, sequencing and mass-spectrometry data and their analyses, with the MIxS fields of
the Genomic Standards Consortium it imports, shipped as one JSON file, `nmdc_materialized_patterns.json`): its
classes with their parent classes, mixins and slots; its slots with their ranges, parent slots, mixins, slot groups
and subsets; its enumerations with their permissible values; its types. The script only renames fields to property
labels, takes the tables whole but for the rules stated in the code, and writes the file; see
docs/programs/graphs82/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_80.py) used, and the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data file from inside the wheel (`zipfile`, the JSON with `json`); nothing is
unpacked, installed, imported or run:

    mkdir -p /tmp/graphs82-src && cd /tmp/graphs82-src
    pip download --no-deps --no-binary :none: nmdc-schema==11.25 -d .
    cd -  # back to the repository
    python3 bench/foreign_graphs_82.py --src /tmp/graphs82-src            # writes docs/programs/graphs82/*.jsonl
    python3 bench/foreign_graphs_82.py --src /tmp/graphs82-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a class or slot is its title where the schema gives one ("Field Research Site",
"broad-scale environmental context"), else its name ("Biosample", "env_package"); an enumeration, type or subset is
its name ("StatusEnum", "float", "biogeochemistry"); a permissible value is its title where it has one, else its text
("Illumina HiSeq 2500", "pass"). Records of one kind that show one name are named apart by their name (a permissible
value: by its enumeration's name) in parentheses, as the code says."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, string  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs82"

# The package file, as `pip download` names it, with its SHA-256.
NMDC_WHEEL = "nmdc_schema-11.25-py3-none-any.whl"
SOURCES = {
    NMDC_WHEEL: "1c0dc1fa3bc83d06a08a3a15643b343f18866bce90484cb4e6e69364d905dc78",
}

NMDC_JSON = "nmdc_schema/nmdc_materialized_patterns.json"
NMDC_PRIORITY = ("class", "slot", "enumeration", "type", "subset", "permissible value")


def nmdc_snake(src: Path) -> Graph:
    g = Graph("nmdc_snake", "jsonl", priority=NMDC_PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, NMDC_WHEEL, SOURCES))) as zf:
        schema = json.loads(zf.read(NMDC_JSON).decode("utf-8"))
    classes, slots = schema["classes"], schema["slots"]
    enums, types, subsets = schema["enums"], schema["types"], schema["subsets"]
    for table, records in (("class", classes), ("slot", slots), ("enumeration", enums), ("type", types),
                           ("subset", subsets)):
        for key, record in records.items():
            if record.get("name") != key:
                raise SystemExit(f"nmdc: the {table} {key!r} is not stored under its own name")

    def titled(table: str, records: dict) -> dict[str, str]:
        """A class's or slot's title where the schema gives one, else its name."""
        return {key: string(r.get("title") or key, f"{table} {key}") for key, r in records.items()}

    class_names = named_apart(g, titled("class", classes), {k: k for k in classes})
    slot_names = named_apart(g, titled("slot", slots), {k: k for k in slots})

    # a permissible value is one node per name (title, else text): values several enumerations list are one node
    value_name: dict[tuple[str, str], str] = {}
    for enum, record in enums.items():
        for key, value in record["permissible_values"].items():
            if value.get("text", key) != key:
                raise SystemExit(f"nmdc: the value {key!r} of {enum} is not stored under its own text")
            value_name[(enum, key)] = string(value.get("title") or key, f"value {key} of {enum}")

    def cls(key: str) -> tuple[str, str] | None:
        if key not in classes:
            g.left_out["link to a class the schema lacks"] += 1
            return None
        return ("class", class_names[key])

    def slot(key: str) -> tuple[str, str] | None:
        if key not in slots:
            g.left_out["link to a slot the schema lacks"] += 1
            return None
        return ("slot", slot_names[key])

    def subset(key: str) -> tuple[str, str] | None:
        if key not in subsets:
            g.left_out["link to a subset the schema lacks"] += 1
            return None
        return ("subset", key)

    def ranged(key: str) -> tuple[str, str] | None:
        """A slot's range: a class, an enumeration or a type of the schema."""
        if key in classes:
            return ("class", class_names[key])
        if key in enums:
            return ("enumeration", key)
        if key in types:
            return ("type", key)
        g.left_out["range the schema does not define"] += 1
        return None

    def link(head: tuple[str, str], relation: str, tail: tuple[str, str] | None) -> None:
        if tail is not None:
            g.add(head, relation, tail)

    # classes: is_a (the parent class), mixins, slots (the class's own slots, as the schema lists them; its
    # slot_usage refinements, rules, attributes and mappings are not taken)
    for key, record in classes.items():
        head = ("class", class_names[key])
        if record.get("is_a"):
            link(head, "is_a", cls(record["is_a"]))
        for mixin in record.get("mixins") or []:
            link(head, "mixin", cls(mixin))
        for own in record.get("slots") or []:
            link(head, "slot", slot(own))
        for sub in record.get("in_subset") or []:
            link(head, "in_subset", subset(sub))

    # slots: range, is_a (the parent slot), mixins, slot_group, in_subset
    for key, record in slots.items():
        head = ("slot", slot_names[key])
        if record.get("range"):
            link(head, "range", ranged(record["range"]))
        else:
            g.left_out["slot with no range of its own (not linked)"] += 1
        if record.get("is_a"):
            link(head, "is_a", slot(record["is_a"]))
        for mixin in record.get("mixins") or []:
            link(head, "mixin", slot(mixin))
        if record.get("slot_group"):
            link(head, "slot_group", slot(record["slot_group"]))
        for sub in record.get("in_subset") or []:
            link(head, "in_subset", subset(sub))

    # enumerations: permissible_values, and a value's is_a (another value of the same enumeration)
    values_of: dict[str, set[str]] = defaultdict(set)
    for enum, record in enums.items():
        head = ("enumeration", enum)
        for key, value in record["permissible_values"].items():
            values_of[enum].add(key)
            g.add(head, "permissible_value", ("permissible value", value_name[(enum, key)]))
        for key, value in record["permissible_values"].items():
            if value.get("is_a"):
                if (enum, value["is_a"]) not in value_name:
                    g.left_out["value is_a a value its enumeration lacks"] += 1
                    continue
                g.add(("permissible value", value_name[(enum, key)]), "is_a",
                      ("permissible value", value_name[(enum, value["is_a"])]))

    # types: typeof (the type a type narrows)
    for key, record in types.items():
        if record.get("typeof"):
            if record["typeof"] in types:
                g.add(("type", key), "typeof", ("type", record["typeof"]))
            else:
                g.left_out["typeof a type the schema lacks"] += 1

    # subsets: in_subset
    for key, record in subsets.items():
        for sub in record.get("in_subset") or []:
            link(("subset", key), "in_subset", subset(sub))
    return g


def build_all(src: Path) -> list[Graph]:
    return [nmdc_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
