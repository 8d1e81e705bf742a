"""Rebuild the NINETY-FIFTH folder of held-out "foreign" graphs, docs/programs/graphs95/, from a package's data files.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
unicode-data (Debian: the Unicode Character Database of the Unicode Consortium, version 15.0.0, as plain-text files:
`UnicodeData.txt` (every assigned character with its name, general category, decomposition and case mappings),
`Scripts.txt` (each character's script), `Blocks.txt` (the blocks of the code space), `DerivedAge.txt` (the version
each character was added in) and `PropertyValueAliases.txt` (the long names of the categories and scripts, and the
scripts' ISO 15924 codes)). The script only renames fields to property labels, takes the characters of three scripts
by the rule stated in the code, and writes the file; see docs/programs/graphs95/PROVENANCE.md. No dataset is one the
earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_94.py) used, and the
package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the .deb's `data.tar.*` with `tarfile`, through
`foreign_sources.deb_files`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs95-src && cd /tmp/graphs95-src
    apt-get download unicode-data=15.0.0-1
    cd -  # back to the repository
    python3 bench/foreign_graphs_95.py --src /tmp/graphs95-src            # writes docs/programs/graphs95/*.jsonl
    python3 bench/foreign_graphs_95.py --src /tmp/graphs95-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the characters taken by a fixed rule). It prints
the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a character is its Unicode name ("LATIN SMALL LETTER A WITH GRAVE"), a script or
general category its long name with spaces for underscores ("Latin", "Old Italic"; "lowercase letter", lower-cased as
a type), a block its name ("Latin-1 Supplement"), a version and its date the words of DerivedAge.txt's heading
("Unicode 1.1.0", "June, 1993"), a script code its ISO 15924 code ("Latn"). Unicode names are unique, so no record
needs naming apart; the script stops if two records of one kind share a name."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, package_file, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs95"

# The package file, as `apt-get download` names it, with its SHA-256.
UCD_DEB = "unicode-data_15.0.0-1_all.deb"
SOURCES = {
    UCD_DEB: "5efef23bbb1c6a133ecbdd63a2cfa07159ccacf5466a49e2426101c5ecd691fc",
}
UCD = "usr/share/unicode/"
FILES = ("UnicodeData.txt", "Scripts.txt", "Blocks.txt", "DerivedAge.txt", "PropertyValueAliases.txt")

# The sample: every character whose script (Scripts.txt) is one of these (long names, as PropertyValueAliases gives
# them), with every link; the characters they link to come in with their own script, block, version and category,
# but not with their own links.
SCRIPTS = ("Latin", "Greek", "Cyrillic")
PRIORITY = ("script", "block", "unicode version", "date", "iso 15924 code")


def ranges(raw: str) -> list[tuple[int, int, str]]:
    """The `XXXX..YYYY ; value # comment` (or `XXXX ; value`) lines of a UCD property file: (first, last, value)."""
    out = []
    for line in raw.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        cps, value = (p.strip() for p in line.split(";")[:2])
        first, _, last = cps.partition("..")
        out.append((int(first, 16), int(last or first, 16), value))
    return out


def lookup(table: list[tuple[int, int, str]], cp: int) -> str | None:
    for first, last, value in table:
        if first <= cp <= last:
            return value
    return None


def words(name: str) -> str:
    return name.replace("_", " ")


def ucd_wikidata(src: Path) -> Graph:
    g = Graph("unicode_wikidata", "jsonl", priority=PRIORITY)
    files = deb_files(package_file(src, UCD_DEB, SOURCES), lambda p: p in {UCD + f for f in FILES})
    raw = {f: files[UCD + f].decode("utf-8") for f in FILES}

    # PropertyValueAliases.txt: `gc ; Ll ; Lowercase_Letter`, `sc ; Latn ; Latin`
    category: dict[str, str] = {}
    script_code: dict[str, str] = {}
    for line in raw["PropertyValueAliases.txt"].splitlines():
        fields = [f.strip() for f in line.split("#", 1)[0].split(";")]
        if fields[0] == "gc" and len(fields) >= 3:
            category[fields[1]] = words(fields[2]).lower()
        elif fields[0] == "sc" and len(fields) >= 3:
            script_code[words(fields[2])] = fields[1]  # long name -> ISO 15924 code

    # DerivedAge.txt: `# Age=V1_1`, then `# Assigned as of Unicode 1.1.0 (June, 1993)`, then the ranges
    version_of: dict[str, tuple[str, str]] = {}  # "1.1" -> ("Unicode 1.1.0", "June, 1993")
    for m in re.finditer(r"^# Age=V(\d+)_(\d+)\s+# (?:Assigned as of|Newly assigned in) (Unicode [0-9.]+) \(([^)]+)\)",
                         raw["DerivedAge.txt"], re.M):
        version_of[f"{m.group(1)}.{m.group(2)}"] = (m.group(3), text(m.group(4)))
    age = ranges(raw["DerivedAge.txt"])
    scripts = ranges(raw["Scripts.txt"])
    blocks = ranges(raw["Blocks.txt"])

    # UnicodeData.txt: code;name;gc;ccc;bidi;decomposition;dec;digit;num;mirrored;1.0 name;comment;upper;lower;title
    records: dict[int, list[str]] = {}
    for line in raw["UnicodeData.txt"].splitlines():
        f = line.split(";")
        if f[1].startswith("<"):  # ranges (<CJK Ideograph, First>) and unnamed code points (<control>)
            g.left_out["code point without a name of its own (not taken)"] += 1
            continue
        records[int(f[0], 16)] = f
    names = unique(g, {cp: text(f[1]) for cp, f in records.items()})

    def script(cp: int) -> str:
        return words(lookup(scripts, cp) or "Unknown")

    taken = sorted(cp for cp in records if script(cp) in SCRIPTS)
    if not taken:
        raise SystemExit("unicode: no character of the chosen scripts")

    def char(cp: int) -> tuple[str, str]:
        return (category[records[cp][2]], names[cp])

    def describe(cp: int) -> None:
        """A character's own script, block and version (every taken or linked character has them)."""
        head = char(cp)
        sc = script(cp)
        g.add(head, "writing system", ("script", sc))
        g.add(("script", sc), "ISO 15924 alpha-4 code", ("iso 15924 code", script_code[sc]))
        block = lookup(blocks, cp)
        if block:
            g.add(head, "part of", ("block", text(block)))
        version = lookup(age, cp)
        if version not in version_of:
            raise SystemExit(f"unicode: no version heading for U+{cp:04X}")
        name, date = version_of[version]
        g.add(head, "added in unicode version", ("unicode version", name))
        g.add(("unicode version", name), "publication date", ("date", date))

    def target(cp_hex: str) -> int | None:
        cp = int(cp_hex, 16)
        if cp not in records:
            g.left_out["link to a code point without a name of its own"] += 1
            return None
        return cp

    linked: set[int] = set()
    for cp in taken:
        f = records[cp]
        head = char(cp)
        describe(cp)
        decomposition = f[5].split()
        if decomposition:
            compat = decomposition[0].startswith("<")
            relation = "compatibility decomposition" if compat else "has part(s)"
            for part in decomposition[1 if compat else 0:]:
                t = target(part)
                if t is not None:
                    g.add(head, relation, char(t))
                    linked.add(t)
        upper, lower, title = f[12], f[13], f[14]
        for relation, value in (("uppercase form", upper), ("lowercase form", lower),
                                ("titlecase form", title if title != upper else "")):
            if value:
                t = target(value)
                if t is not None:
                    g.add(head, relation, char(t))
                    linked.add(t)
    for cp in sorted(linked - set(taken)):
        describe(cp)
    return g


def build_all(src: Path) -> list[Graph]:
    return [ucd_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
