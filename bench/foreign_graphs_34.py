"""Rebuild the THIRTY-FOURTH held-out set of "foreign" graphs, docs/programs/graphs34/, from data in Debian packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of two Debian packages
ships: nmap-common's `usr/share/nmap/nmap-os-db` (the Nmap network scanner's operating system detection database:
each fingerprinted system or device with its classes, that is its vendor, operating system family, operating system
generation and device type) and wordnet-base's `usr/share/wordnet/data.noun` (Princeton WordNet 3.0's nouns: each
synset with its words, its lexicographer file and its pointers to other synsets; here the proper nouns, the synsets
WordNet makes instances of a class, with what they are instances of, what they are part of or members of and the
region whose domain they are in). The script only renames fields to a vocabulary's property labels, samples by a
fixed rule and writes the files; see docs/programs/graphs34/PROVENANCE.md. None of these datasets is one the first
thirty-three sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_33.py) used, and
neither package was used by them.

By hand only: no test imports this module and it is not part of any flow. It needs two package files the project
does not depend on; download them (without installing them) into one folder and give that folder as --src. The
script checks each file's SHA-256 and reads the data files from inside the archives (each Debian package's `ar`
archive by its documented layout and its `data.tar.xz` with `tarfile`); nothing is unpacked, installed, imported or
run:

    mkdir -p /tmp/graphs34-src && cd /tmp/graphs34-src
    apt-get update && apt-get download nmap-common=7.93+dfsg1-1 wordnet-base=1:3.0-37
    cd -  # back to the repository
    python3 bench/foreign_graphs_34.py --src /tmp/graphs34-src            # writes docs/programs/graphs34/*.jsonl
    python3 bench/foreign_graphs_34.py --src /tmp/graphs34-src --out DIR  # elsewhere

(These files were built with Python 3.11 and the standard library alone (`tarfile` and `lzma`), so the version of
Python does not change the output. The Debian packages are those of Debian 12 "bookworm".)

The output is deterministic for the same package files (rows sorted; files taken whole or sampled by a fixed rule).
It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
A system the operating system database fingerprints several times under one name is one node. An operating system
generation is named "<family> <generation>" ("Windows 10", "Linux 2.6.X"), the way the database's classes pair them.
Two WordNet synsets of one type that share their first word are named apart here (never folded into one node) by the
rule of `wordnet_names`."""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, package_file, present, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs34"

# The two package files, as `apt-get download` names them, with their SHA-256.
SOURCES = {
    "nmap-common_7.93+dfsg1-1_all.deb": "81273be68b5857e570cc929f95a6261a61ab7c6a534191fcf5e7a9624d745b68",
    "wordnet-base_1%3a3.0-37_all.deb": "61060d960f9ada8fa120872312eccd3ecebfbab8c4579e4f5a74e1cf67620752",
}


def source(src: Path, name: str) -> bytes:
    return package_file(src, name, SOURCES)


# -- 1. Operating system fingerprints, DBpedia camelCase (nmap-common's nmap-os-db) -----------------------------------
OS_DB = "usr/share/nmap/nmap-os-db"
EMBEDDED = "embedded"  # the family field of a device whose operating system the database does not name


def os_fingerprints(raw: bytes, g: Graph) -> list[tuple[str, list[list[str]]]]:
    """The database's entries in its order: (the `Fingerprint` line's name, its `Class` lines split at "|": vendor,
    operating system family, operating system generation, device type). The test lines (SEQ, OPS, WIN, ECN, T1 ...)
    and the `CPE` lines are not read."""
    entries: list[tuple[str, list[list[str]]]] = []
    for line in raw.decode("utf-8").splitlines():
        if line.startswith("Fingerprint "):
            entries.append((text(line[len("Fingerprint "):]), []))
        elif line.startswith("Class ") and entries:
            fields = [text(f) for f in line[len("Class "):].split("|")]
            if len(fields) != 4:
                raise SystemExit(f"nmap-os-db: a Class line of {len(fields)} fields: {line!r}")
            entries[-1][1].append(fields)
        elif line.startswith("CPE ") and entries:
            g.left_out["CPE name of a class (not used)"] += 1
    return entries


def osfingerprints_dbpedia(src: Path) -> Graph:
    g = Graph("osfingerprints_dbpedia", "jsonl",
              priority=("System", "OperatingSystemVersion", "OperatingSystem", "Company", "DeviceType"))
    files = deb_files(source(src, "nmap-common_7.93+dfsg1-1_all.deb"), lambda p: p == OS_DB)
    entries = os_fingerprints(files[OS_DB], g)
    seen: set[str] = set()
    for name, classes in entries:
        if name in seen:
            g.left_out["fingerprint of a system the database fingerprints again under one name (one node)"] += 1
        seen.add(name)
        node = ("System", name)
        if not classes:
            g.left_out["fingerprint with no class"] += 1
        for vendor, family, generation, device in classes:
            if present(device):
                g.add(node, "deviceType", ("DeviceType", device))
            if family == EMBEDDED or not present(family):
                # an embedded device: the vendor is the device's maker; the database names no operating system
                if present(vendor):
                    g.add(node, "manufacturer", ("Company", vendor))
                if present(generation):
                    g.left_out["generation of an embedded device's system (not used)"] += 1
                continue
            system = ("OperatingSystem", family)
            if present(generation):
                version = ("OperatingSystemVersion", f"{family} {generation}")
                g.add(node, "operatingSystem", version)
                g.add(version, "versionOf", system)
            else:
                g.add(node, "operatingSystem", system)
            if present(vendor):
                g.add(system, "developer", ("Company", vendor))
    g.left_out["test lines of each fingerprint (SEQ, OPS, WIN, ECN, T1-T7, U1, IE; not used)"] = len(entries)
    return g


# -- 2. WordNet's proper nouns, Wikidata English labels (wordnet-base's data.noun) ----------------------------------
DATA_NOUN = "usr/share/wordnet/data.noun"
# The lexicographer files in their number order (lexnames(5WN)): noun files are 03 to 28.
LEXNAMES = ("adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
            "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling",
            "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object", "noun.person",
            "noun.phenomenon", "noun.plant", "noun.possession", "noun.process", "noun.quantity", "noun.relation",
            "noun.shape", "noun.state", "noun.substance", "noun.time")
LEFT_OUT_LEXNAME = "noun.person"  # the people, whose only link is the class they are instances of (not used)
CLASS = "class"  # the type of a synset that the kept proper nouns are instances of
# pointer symbol (wndb(5WN)) -> Wikidata property label, between two kept proper nouns
POINTERS = {"#p": "part of", "#m": "member of", ";r": "location"}  # P361, P463, P276


def lexname_type(lexname: str) -> str:
    """A proper noun's type: its lexicographer file without "noun." ("location", "act", "group"), "natural object"
    for noun.object (lexnames(5WN): "nouns denoting natural objects (not man-made)")."""
    kind = lexname.split(".", 1)[1]
    return "natural object" if kind == "object" else kind


class Synset:
    __slots__ = ("offset", "lexname", "words", "pointers")

    def __init__(self, offset: str, lexname: str, words: list[str], pointers: list[tuple[str, str, str]]) -> None:
        self.offset, self.lexname, self.words, self.pointers = offset, lexname, words, pointers


def synsets(raw: bytes) -> dict[str, Synset]:
    """The synsets of a WordNet data file (wndb(5WN): "offset lex_filenum ss_type w_cnt word lex_id ... p_cnt
    pointer_symbol offset pos source/target ... | gloss"; w_cnt is two hexadecimal digits; the licence lines at the
    top start with two spaces). A word's underscores are spaces."""
    out: dict[str, Synset] = {}
    for line in raw.decode("utf-8").splitlines():
        if line.startswith("  ") or not line.strip():
            continue
        tokens = line.partition(" | ")[0].split()
        count = int(tokens[3], 16)
        words = [text(tokens[4 + 2 * i].replace("_", " ")) for i in range(count)]
        at = 4 + 2 * count
        pointers = []
        for k in range(int(tokens[at])):
            symbol, offset, pos = tokens[at + 1 + 4 * k:at + 4 + 4 * k]
            pointers.append((symbol, offset, pos))
        out[tokens[0]] = Synset(tokens[0], LEXNAMES[int(tokens[1])], words, pointers)
    return out


def wordnet_names(g: Graph, nodes: dict[str, tuple[str, Synset]], classes: dict[str, str]) -> dict[str, str]:
    """A synset's node name: its first word. Where two synsets of one type share that word, each takes "<word>
    (<its class>)" ("Paris (national capital)", "Paris (town)"; a proper noun's class is the first synset it is an
    instance of, a class's the first synset it is a kind of), and where two still share that, "<word> (<its class>,
    <the first synset of the graph it is part of, else whose region it is in, else whose member it is>)" ("Somme
    (pitched battle, World War I)"), then its first other
    word that no synset of its type bears, then "<word> (WordNet <its offset>)"; stops if two synsets of one type
    still share a name."""
    bears: dict[tuple[str, str], int] = defaultdict(int)  # (type, word) -> synsets of the type bearing the word
    firsts: dict[tuple[str, str], int] = defaultdict(int)
    for etype, s in nodes.values():
        firsts[(etype, s.words[0])] += 1
        for word in set(s.words):
            bears[(etype, word)] += 1
    names: dict[str, str] = {}
    rest: dict[str, list[str]] = {}  # a synset still to name -> its tells, in order
    for off, (etype, s) in sorted(nodes.items()):
        if firsts[(etype, s.words[0])] == 1:
            names[off] = s.words[0]
            continue
        g.left_out["synset whose first word another synset of its type bears (named apart)"] += 1
        word, cls = s.words[0], classes.get(off)
        holonym = next((p[1] for symbol in ("#p", ";r", "#m") for p in s.pointers
                        if p[0] == symbol and p[1] in nodes), None)
        other = next((w for w in s.words[1:] if bears[(etype, w)] == 1), None)
        tells = [f"{word} ({cls})"] if cls else []
        if cls and holonym:
            tells.append(f"{word} ({cls}, {nodes[holonym][1].words[0]})")
        if other is not None:
            tells.append(other)
        tells.append(f"{word} (WordNet {off})")
        rest[off] = tells
    for level in range(4):
        count: dict[tuple[str, str], int] = defaultdict(int)
        for off, tells in rest.items():
            count[(nodes[off][0], tells[min(level, len(tells) - 1)])] += 1
        for off, tells in list(rest.items()):
            tell = tells[min(level, len(tells) - 1)]
            if count[(nodes[off][0], tell)] == 1 or level == 3:
                names[off] = tell
                del rest[off]
    by_type: dict[str, dict[str, str]] = defaultdict(dict)
    for off, (etype, _) in nodes.items():
        by_type[etype][off] = names[off]
    for group in by_type.values():
        unique(g, group)
    return names


def wordnet_wikidata(src: Path) -> Graph:
    g = Graph("wordnet_wikidata", "jsonl",
              priority=("location", "natural object", "group", "act", "artifact", "communication", "event", "time",
                        "animal", "cognition", "state", "possession", CLASS))
    files = deb_files(source(src, "wordnet-base_1%3a3.0-37_all.deb"), lambda p: p == DATA_NOUN)
    all_synsets = synsets(files[DATA_NOUN])
    instances = {off: s for off, s in all_synsets.items() if any(p[0] == "@i" for p in s.pointers)}
    kept = {off: s for off, s in instances.items() if s.lexname != LEFT_OUT_LEXNAME}
    g.left_out["proper noun of noun.person (a person; not used)"] = len(instances) - len(kept)
    # the classes the kept proper nouns are instances of (a class that is itself a kept proper noun stays one)
    class_offsets = sorted({p[1] for s in kept.values() for p in s.pointers
                            if p[0] == "@i" and p[1] not in kept and p[1] not in instances})
    nodes: dict[str, tuple[str, Synset]] = {off: (lexname_type(s.lexname), s) for off, s in kept.items()}
    nodes.update({off: (CLASS, all_synsets[off]) for off in class_offsets})
    first_class = {off: all_synsets[next(p[1] for p in s.pointers if p[0] == "@i")].words[0]
                   for off, s in kept.items()}
    first_class.update({off: all_synsets[p[1]].words[0] for off in class_offsets
                        for p in all_synsets[off].pointers[::-1] if p[0] in ("@", "@i")})  # the first: last written
    names = wordnet_names(g, nodes, first_class)

    def node(off: str) -> tuple[str, str]:
        return nodes[off][0], names[off]

    for off, s in sorted(kept.items()):
        for symbol, target, pos in s.pointers:
            if pos != "n":
                continue
            if symbol == "@i":
                if target in nodes:
                    g.add(node(off), "instance of", node(target))  # P31
                else:
                    g.left_out["instance of a proper noun left out (a person)"] += 1
            elif symbol in POINTERS:
                if target in kept:
                    g.add(node(off), POINTERS[symbol], node(target))
                else:
                    g.left_out[f"'{symbol}' pointer to a synset that is no kept proper noun (not used)"] += 1
            else:
                g.left_out["other pointers of a proper noun (meronyms, domain members, derivations; not used)"] += 1
    for off in class_offsets:
        for symbol, target, pos in all_synsets[off].pointers:
            if symbol == "@" and target in nodes and nodes[target][0] == CLASS:
                g.add(node(off), "subclass of", node(target))  # P279, between two classes of the graph
    g.left_out["glosses, lexical ids, verb frames and other parts of speech (not used)"] = 1
    return g


def build_all(src: Path) -> list[Graph]:
    return [osfingerprints_dbpedia(src), wordnet_wikidata(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
