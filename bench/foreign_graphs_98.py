"""Rebuild the NINETY-EIGHTH folder of held-out "foreign" graphs, docs/programs/graphs98/, from a package's data files.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
species-names-dataset (npm: "Species names dataset", by Ivo Bathke, "a json format dataset for scientific and common
species names", harvested mainly from Wikispecies, which ships one JSON file per genus in the folders
`data/Vertebrata/<class>/`: each file lists the genus's species by scientific name, with their common names in many
languages). The script only renames fields to property labels, takes the mammals and reptiles whole but for the
rules stated in the code, and writes the file; see docs/programs/graphs98/PROVENANCE.md. No dataset is one the
earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_96.py) used, and the
package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the npm tarball with `tarfile`, its JSON files
read with `json`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs98-src && cd /tmp/graphs98-src
    npm pack species-names-dataset@0.0.13
    cd -  # back to the repository
    python3 bench/foreign_graphs_98.py --src /tmp/graphs98-src            # writes docs/programs/graphs98/*.jsonl
    python3 bench/foreign_graphs_98.py --src /tmp/graphs98-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the fixed rules
stated in the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a species is its `scientific_name` ("Acinonyx jubatus"), a genus the name of its
file ("Acinonyx"), a class and the group above it the names of the folders ("Mammalia", "Reptilia", "Vertebrata"),
a common name the English (`"lang": "en"`) entry of a species' `common_names` ("Cheetah"), cleaned of wiki markup by
the rules in the code. The package keeps one file per genus and tests that no species is listed twice; the script
stops if two genera or two species share a name."""

from __future__ import annotations

import html
import io
import json
import re
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import package_file, string  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs98"

# The package file, as `npm pack` names it, with its SHA-256.
SPECIES_TGZ = "species-names-dataset-0.0.13.tgz"
SOURCES = {
    SPECIES_TGZ: "312e522ec49a57bf3174e6c306eddf7edf3be8688c953ba7ba5e57fb02fc0381",
}

# The classes taken: the package's third folder, `Aves`, is not taken (the world's birds and their classification
# are the catalogue of an earlier set, graphs50/).
TAKEN = ("Mammalia", "Reptilia")
LEFT = ("Aves",)
GROUP = "Vertebrata"
FILE = re.compile(r"package/data/([^/]+)/([^/]+)/([^/]+)\.json")
SPECIES_PRIORITY = ("subphylum", "class", "genus", "species", "common name")
MARKUP = re.compile(r"[<>{}\[\]|&]")


def genus_files(src: Path) -> dict[tuple[str, str], list[dict]]:
    """(class, genus) -> the rows of the file `package/data/Vertebrata/<class>/<genus>.json`, for the classes taken;
    stops on a file outside that layout or on a genus named in two files."""
    out: dict[tuple[str, str], list[dict]] = {}
    with tarfile.open(fileobj=io.BytesIO(package_file(src, SPECIES_TGZ, SOURCES)), mode="r:gz") as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if not (member.isfile() and member.name.startswith("package/data/")):
                continue
            match = FILE.fullmatch(member.name)
            if match is None or match.group(1) != GROUP or match.group(2) not in TAKEN + LEFT:
                raise SystemExit(f"species: {member.name} is not a genus file of the known layout")
            if match.group(2) in LEFT:
                continue
            genus = match.group(3)
            if any(g == genus for _, g in out):
                raise SystemExit(f"species: the genus {genus} has two files")
            rows = json.loads(tar.extractfile(member).read().decode("utf-8"))
            if not isinstance(rows, list):
                raise SystemExit(f"species: {member.name} is not a list of species")
            out[(match.group(2), genus)] = rows
    return out


def common_names(value: str) -> list[str]:
    """An English common name as names people say, by fixed rules: HTML entities decoded ("&nbsp;" a space), wiki
    comments ("<!--Farsi: ...-->", closed or not) and what follows a template's opening "{{" cut off, the wiki
    italics marks "''" dropped ("''fierce dog''" is "fierce dog"), a value that
    lists several names with ";" split into them, and a closing full stop dropped. A name still holding markup is
    not taken (an empty list)."""
    value = html.unescape(value)
    value = re.sub(r"<!--.*?(-->|$)", "", value)
    value = value.split("{{")[0].replace("''", "")
    out = []
    for part in value.split(";"):
        name = " ".join(part.split()).rstrip(".").strip()
        if name and not MARKUP.search(name):
            out.append(name)
    return out


def species_wikidata(src: Path) -> Graph:
    g = Graph("species_wikidata", "jsonl", priority=SPECIES_PRIORITY)
    seen: set[str] = set()
    for (cls, genus), rows in sorted(genus_files(src).items()):
        # genus -> its class (the folder that holds its file); class -> the group above it (the folder above)
        g.add(("genus", genus), "parent taxon", ("class", cls))
        g.add(("class", cls), "parent taxon", ("subphylum", GROUP))
        for row in rows:
            name = string(row["scientific_name"], f"{genus} scientific_name")
            words = name.split()
            # the rules: a row whose name is the genus and a subgenus in parentheses ("Bos (Bibos)", 31 rows) is a
            # heading, not a species, and a row of three words ("Panthera pardus pardus", 6 rows) a subspecies:
            # neither is taken; every other row is a binomial whose first word is its file's genus
            if "(" in name or ")" in name:
                g.left_out["subgenus heading (not a species)"] += 1
                continue
            if len(words) == 3:
                g.left_out["subspecies (not taken)"] += 1
                continue
            if len(words) != 2 or words[0] != genus:
                raise SystemExit(f"species: {name!r} in the file of {genus} is not one of its binomials")
            if name in seen:
                raise SystemExit(f"species: {name} is listed twice")
            seen.add(name)
            species = ("species", name)
            g.add(species, "parent taxon", ("genus", genus))
            english = [c for c in row["common_names"] if c.get("lang") == "en"]
            if len(english) > 1:
                raise SystemExit(f"species: {name} has two English common names")
            for entry in english:
                names = common_names(string(entry["name"], f"{name} common name"))
                if not names:
                    g.left_out["English common name empty or markup only (not taken)"] += 1
                for common in names:
                    g.add(species, "taxon common name", ("common name", common))
    return g


def build_all(src: Path) -> list[Graph]:
    return [species_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
