"""Rebuild the FIFTY-SIXTH folder of held-out "foreign" graphs, docs/programs/graphs56/, from packages' data files.

Nobody on the project wrote these facts: every triple is converted from the data files that two Debian packages ship.
libcifpp-data (the data files of libcifpp, the PDB-REDO project's mmCIF library, which ship the wwPDB's PDBx/mmCIF
dictionary, `mmcif_pdbx.dic`: the data dictionary of the Protein Data Bank's archive format, with every category of
data items, the category groups each category belongs to, each item's category, units and sub-category, and the
parent item each linked item points to) and kaptive-data (the reference database of Kaptive, the tool that types the
capsule (K) and lipopolysaccharide (O, OC) loci of Klebsiella and Acinetobacter baumannii genomes: GenBank records of
every locus of its four primary databases with the genes each holds, the gene products, the strain or isolate each
reference sequence came from and the K or O type the locus is known to make). The script only renames fields to property labels, takes the tables whole but for the rules
stated in the code, and writes the files; see docs/programs/graphs56/PROVENANCE.md. No dataset is one the earlier
folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_55.py) used, and neither package
was used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the archives (each Debian package's `ar` archive by
its documented layout and its `data.tar.xz` with `tarfile`; the dictionary with a small reader of the CIF/STAR syntax
below, the GenBank files with a small reader of GenBank's flat-file layout); nothing is unpacked, installed, imported
or run:

    mkdir -p /tmp/graphs56-src && cd /tmp/graphs56-src
    apt-get update && apt-get download libcifpp-data=5.0.7.1-1 kaptive-data=2.0.4-1
    cd -  # back to the repository
    python3 bench/foreign_graphs_56.py --src /tmp/graphs56-src            # writes docs/programs/graphs56/*.jsonl
    python3 bench/foreign_graphs_56.py --src /tmp/graphs56-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output. The Debian packages are those of Debian 12 "bookworm"; both are architecture-independent.)

The output is deterministic for the same package files (rows sorted; the data taken whole but for the rules stated
in the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a data item is its dictionary name ("_atom_site.label_comp_id"), a category,
category group, unit and sub-category its dictionary code ("atom_site", "atom_group", "angstroms",
"cartesian_coordinate"; the dictionary names them by these codes and by no other name); a locus is its Kaptive name
("KL1", "OL101"), a gene its `/gene` name ("wzi"), a product its `/product` text, a strain or isolate its `/strain`
or `/isolate` and an organism its `/organism`, a K or O type the type the record's note gives ("K1", "O4"). Records of
one kind that show one name are named apart by a telling value in parentheses (a locus, K type or gene both species'
databases use, by the species: "KL1 (Klebsiella)"), as the code says."""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs56"

# The package files, as `apt-get download` names them, with their SHA-256.
CIFPP_DEB = "libcifpp-data_5.0.7.1-1_all.deb"
KAPTIVE_DEB = "kaptive-data_2.0.4-1_all.deb"
SOURCES = {
    CIFPP_DEB: "40d915473ce8ba36d6823791878aa475e3e7a16437538a38c0e3cd2692733406",
    KAPTIVE_DEB: "b8ace1c9d84cf2ae687f1e8f1084f6e128ae2fe8c2ef10deca5b25703a36f77e",
}


# ------------------------------------------------------------------------------------------------------- mmCIF
PDBX_DIC = "usr/share/libcifpp/mmcif_pdbx.dic"
MMCIF_PRIORITY = ("data item", "category", "category group", "unit", "sub-category")
WORD = re.compile(r"\S+")


def cif_tokens(src: str):  # noqa: ANN201  (a generator of (kind, text))
    """The tokens of a CIF/STAR file: ("data" | "save" | "loop" | "tag" | "value", text). A value is a bare word, a
    word in single or double quotes (closed by the quote followed by white space or the line's end) or a text field
    (the lines between a line opening with ";" and the next line opening with ";"); "#" outside them starts a
    comment."""
    lines = src.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(";"):
            field = [line[1:]]
            i += 1
            while i < len(lines) and not lines[i].startswith(";"):
                field.append(lines[i])
                i += 1
            if i == len(lines):
                raise SystemExit("mmcif_pdbx.dic: a text field is not closed")
            yield "value", "\n".join(field)
            i += 1
            continue
        pos = 0
        while pos < len(line):
            ch = line[pos]
            if ch in " \t\r":
                pos += 1
                continue
            if ch == "#":
                break
            if ch in "'\"":
                end = pos + 1
                while True:
                    end = line.find(ch, end)
                    if end < 0:
                        raise SystemExit(f"mmcif_pdbx.dic: a quote is not closed on line {i + 1}")
                    if end + 1 >= len(line) or line[end + 1] in " \t\r":
                        break
                    end += 1
                yield "value", line[pos + 1:end]
                pos = end + 1
                continue
            match = WORD.match(line, pos)
            word, pos = match.group(0), match.end()
            low = word.lower()
            if low.startswith("data_"):
                yield "data", word[5:]
            elif low == "loop_":
                yield "loop", word
            elif low.startswith("save_"):
                yield "save", word[5:]
            elif word.startswith("_"):
                yield "tag", word
            else:
                yield "value", word
        i += 1


def cif_frames(src: str) -> list[tuple[str, dict[str, list[str]]]]:
    """The data block ("") and every save frame of a CIF dictionary, each as {tag: values}: a tag outside a loop has
    one value, a looped tag its column, in the file's order."""
    frames: list[tuple[str, dict[str, list[str]]]] = []
    name, frame = "", {}
    toks = list(cif_tokens(src))
    k = 0
    while k < len(toks):
        kind, value = toks[k]
        if kind == "data":
            k += 1
        elif kind == "save":
            frames.append((name, frame))
            name, frame = value, {}
            k += 1
        elif kind == "loop":
            tags: list[str] = []
            k += 1
            while k < len(toks) and toks[k][0] == "tag":
                tags.append(toks[k][1])
                k += 1
            values: list[str] = []
            while k < len(toks) and toks[k][0] == "value":
                values.append(toks[k][1])
                k += 1
            if not tags or len(values) % len(tags):
                raise SystemExit(f"mmcif_pdbx.dic: a loop in frame {name!r} does not fill its columns")
            for j, tag in enumerate(tags):
                frame.setdefault(tag, []).extend(values[j::len(tags)])
        elif kind == "tag":
            if k + 1 >= len(toks) or toks[k + 1][0] != "value":
                raise SystemExit(f"mmcif_pdbx.dic: tag {value} in frame {name!r} without a value")
            frame.setdefault(value, []).append(toks[k + 1][1])
            k += 2
        else:
            raise SystemExit(f"mmcif_pdbx.dic: stray {kind} {value!r} in frame {name!r}")
    frames.append((name, frame))
    return frames


def present(value: str) -> bool:
    """False for CIF's "." (inapplicable) and "?" (unknown) and for empty values."""
    return text(value) not in ("", ".", "?")


def rows(frame: dict[str, list[str]], *tags: str) -> list[tuple[str, ...]]:
    """The rows of a frame's columns `tags` (stops where the columns differ in length)."""
    columns = [frame.get(t, []) for t in tags]
    if len({len(c) for c in columns}) > 1:
        raise SystemExit(f"mmcif_pdbx.dic: columns {tags} of unequal length")
    return list(zip(*columns))


def mmcif_wikidata(src: Path) -> Graph:
    g = Graph("mmcif_wikidata", "jsonl", priority=MMCIF_PRIORITY)
    files = deb_files(package_file(src, CIFPP_DEB, SOURCES), lambda p: p == PDBX_DIC)
    frames = cif_frames(files[PDBX_DIC].decode("utf-8"))

    # categories (one save frame each) and the category groups they belong to
    categories: set[str] = set()
    for _, frame in frames:
        for (category,) in rows(frame, "_category.id"):
            categories.add(text(category))
            for (group,) in rows(frame, "_category_group.id"):
                g.add(("category", text(category)), "part of", ("category group", text(group)))
    if len(categories) != sum(len(f.get("_category.id", [])) for _, f in frames):
        raise SystemExit("mmcif_wikidata: a category is defined twice")

    # the category group list: each group's parent group ("." for the top group)
    for _, frame in frames:
        for group, parent in rows(frame, "_category_group_list.id", "_category_group_list.parent_id"):
            if present(parent):
                g.add(("category group", text(group)), "subclass of", ("category group", text(parent)))

    # data items: the category each belongs to (an item's frame, or the frame of the item its loop lists it with,
    # gives `_item.category_id`; an item no frame gives a category for is left out of this relation)
    item_category: dict[str, str] = {}
    named: set[str] = set()
    for _, frame in frames:
        names = frame.get("_item.name", [])
        named.update(text(n) for n in names)
        if "_item.category_id" not in frame:
            continue
        for item, category in rows(frame, "_item.name", "_item.category_id"):
            item, category = text(item), text(category)
            if item_category.setdefault(item, category) != category:
                raise SystemExit(f"mmcif_wikidata: item {item} of two categories")
    for item, category in sorted(item_category.items()):
        if category not in categories:
            g.left_out["item of a category the dictionary lacks"] += 1
            continue
        g.add(("data item", item), "part of", ("category", category))
    g.left_out["item no frame gives a category (not linked to one)"] += len(named - set(item_category))

    # the other attributes of an item, in the item's own save frame (the frame named after the item)
    for name, frame in frames:
        if not name.startswith("_"):
            continue
        item = ("data item", text(name))
        for (unit,) in rows(frame, "_item_units.code"):
            if present(unit):
                g.add(item, "units used for this property", ("unit", text(unit)))
        for (sub,) in rows(frame, "_item_sub_category.id"):
            if present(sub):
                g.add(item, "instance of", ("sub-category", text(sub)))

    # linked items: each child item points to its parent item (wherever the dictionary states the link)
    for _, frame in frames:
        for child, parent in rows(frame, "_item_linked.child_name", "_item_linked.parent_name"):
            if text(child) == text(parent):
                g.left_out["item linked to itself"] += 1
                continue
            g.add(("data item", text(child)), "related property", ("data item", text(parent)))
    return g


# ------------------------------------------------------------------------------------------------------- Kaptive
KAPTIVE_DB = "usr/share/kaptive/reference_database/"
# the four primary reference databases, each with the species it types (the words its file name opens with, used
# only to tell apart two records of one name: both species have a locus "KL1" and genes called "wza")
KAPTIVE_FILES = {
    KAPTIVE_DB + "Klebsiella_k_locus_primary_reference.gbk": "Klebsiella",
    KAPTIVE_DB + "Klebsiella_o_locus_primary_reference.gbk": "Klebsiella",
    KAPTIVE_DB + "Acinetobacter_baumannii_k_locus_primary_reference.gbk": "Acinetobacter baumannii",
    KAPTIVE_DB + "Acinetobacter_baumannii_OC_locus_primary_reference.gbk": "Acinetobacter baumannii",
}
KAPTIVE_PRIORITY = ("gene", "K locus", "O locus", "OC locus", "K type", "O type", "strain", "isolate", "organism",
                    "product", "EC number")
NOTE = re.compile(r"^(K|O|OC) ?(locus|type): (.+)$")
NO_TYPE = ("unknown", "special logic")  # the notes' words for a locus of no known type


def genbank_records(raw: str, where: str) -> list[tuple[list[tuple[str, str]], list[tuple[str, list[tuple[str, str]]]]]]:
    """The records of a GenBank flat file, each as (the `source` feature's qualifiers, the other features as (key,
    qualifiers)); qualifiers are (name, value) in the file's order, a value spread over several lines joined by
    single spaces. The layout: features start in column 6 with their key, qualifiers in column 22 with "/"."""
    records = []
    for chunk in raw.split("\n//"):
        if "FEATURES" not in chunk:
            if chunk.strip():
                raise SystemExit(f"{where}: a record without features")
            continue
        body = re.split(r"\n(?:BASE COUNT|ORIGIN)", chunk.split("\nFEATURES", 1)[1], maxsplit=1)[0].split("\n")[1:]
        features: list[tuple[str, list[tuple[str, str]]]] = []
        for line in body:
            if len(line) > 5 and line[:5] == "     " and line[5] != " ":
                features.append((line[5:21].strip(), []))
            elif line.startswith(" " * 21) and features:
                rest = line[21:]
                quals = features[-1][1]
                if rest.startswith("/"):
                    name, _, value = rest[1:].partition("=")
                    quals.append((name, value))
                elif quals:
                    quals[-1] = (quals[-1][0], quals[-1][1] + " " + rest.strip())
                else:
                    raise SystemExit(f"{where}: a continued qualifier without a qualifier")
            elif line.strip():
                raise SystemExit(f"{where}: cannot read feature line {line!r}")
        sources = [q for key, q in features if key == "source"]
        if len(sources) != 1:
            raise SystemExit(f"{where}: a record with {len(sources)} source features")
        records.append((sources[0], [(key, q) for key, q in features if key != "source"]))
    return records


def unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    return text(value)


def kaptive_snake(src: Path) -> Graph:
    g = Graph("kaptive_snake", "jsonl", priority=KAPTIVE_PRIORITY)
    files = deb_files(package_file(src, KAPTIVE_DEB, SOURCES), lambda p: p in KAPTIVE_FILES)
    loci = []  # (species, kind, locus name, locus type or "", source qualifiers, CDS qualifiers)
    for path, species in KAPTIVE_FILES.items():
        for source, features in genbank_records(files[path].decode("utf-8"), Path(path).name):
            notes: dict[tuple[str, str], str] = {}
            for name, value in source:
                match = NOTE.match(unquote(value)) if name == "note" else None
                if match:
                    notes[(match.group(1), match.group(2))] = text(match.group(3))
            kinds = {k for k, _ in notes}
            if len(kinds) != 1 or (next(iter(kinds)), "locus") not in notes:
                g.left_out["record without a K, O or OC locus note (an extra gene cluster)"] += 1
                continue
            kind = next(iter(kinds))
            qualifiers: dict[str, list[str]] = defaultdict(list)
            for name, value in source:
                qualifiers[name].append(unquote(value))
            cds = []
            for key, quals in features:
                if key == "CDS":
                    cds.append(defaultdict(list))
                    for name, value in quals:
                        cds[-1][name].append(unquote(value))
            loci.append((species, kind, notes[(kind, "locus")], notes.get((kind, "type"), ""), qualifiers, cds))

    # names: a locus, a K or O type and a gene by the name the data gives, told apart by the species where the two
    # species' databases both use the name
    def apart_by_species(keys: set[tuple[str, str, str]]) -> dict[tuple[str, str, str], str]:
        return named_apart(g, {k: k[2] for k in keys}, {k: k[0] for k in keys})

    locus_names = apart_by_species({(sp, kind, name) for sp, kind, name, *_ in loci})
    if len(locus_names) != len(loci):
        raise SystemExit("kaptive_snake: two records of one locus")
    type_names = apart_by_species({(sp, kind, t) for sp, kind, _, t, *_ in loci if t and t not in NO_TYPE})
    genes = set()
    for sp, kind, _, _, _, cds in loci:
        for c in cds:
            names = [x for x in c.get("gene", []) if x]
            if len(names) == 1:
                genes.add((sp, "gene", names[0]))
    gene_names = apart_by_species(genes)

    for sp, kind, name, locus_kind, qualifiers, cds in loci:
        locus = (f"{kind} locus", locus_names[(sp, kind, name)])
        # the locus's type: `K type` / `O type` (none where the note says the type is unknown)
        if locus_kind and locus_kind not in NO_TYPE:
            g.add(locus, f"{kind.lower()}_type", (f"{kind} type", type_names[(sp, kind, locus_kind)]))
        elif locus_kind:
            g.left_out[f"{kind} locus whose type is '{locus_kind}'"] += 1
        # the strain or isolate the reference sequence came from, and its organism
        organisms = [o for o in qualifiers.get("organism", []) if o]
        source_of = [(field, x) for field in ("strain", "isolate") for x in qualifiers.get(field, [])
                     if x and x != field]
        if len(source_of) == 1:
            field, value = source_of[0]
            node = (field, value)
            g.add(locus, field, node)
            for organism in organisms:
                g.add(node, "organism", ("organism", organism))
        elif qualifiers.get("strain") or qualifiers.get("isolate"):
            g.left_out["strain given only as the word 'strain'"] += 1
        else:
            g.left_out["locus without a strain or isolate"] += 1
        # the genes of the locus (its CDS features' `/gene`), each gene's products and EC numbers
        for c in cds:
            names = [x for x in c.get("gene", []) if x]
            if len(names) != 1:
                g.left_out["CDS without a gene name"] += 1
                continue
            gene = ("gene", gene_names[(sp, "gene", names[0])])
            g.add(gene, f"{kind.lower()}_locus", locus)
            for product in c.get("product", []):
                if product:
                    g.add(gene, "product", ("product", product))
            for number in c.get("EC_number", []):
                if number:
                    g.add(gene, "ec_number", ("EC number", number))
    return g


def build_all(src: Path) -> list[Graph]:
    return [mmcif_wikidata(src), kaptive_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
