"""Rebuild the EIGHTY-EIGHTH folder of held-out "foreign" graphs, docs/programs/graphs88/, from a package's data files.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
r-cran-taxize (Debian 12: the R package taxize of rOpenSci, "taxonomic information from around the web", which ships
a few lookup tables as R data: `theplantlist`, "a randomly selected subset of the ~350K accepted species names" of The
Plant List, version 1.1, each with its family, genus and specific epithet; and `apg_families` / `apg_orders`, the
family and order names of the Angiosperm Phylogeny Website (APweb, Missouri Botanical Garden, version 14) with the
accepted name each synonym is replaced by and each family's order). The script only renames fields to property
labels, takes the tables whole but for the rules stated in the code, and writes the file; see
docs/programs/graphs88/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_87.py) used, and the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the .deb's `data.tar.xz` with `tarfile`, and in
it R's lazy-load database of the package's data sets, `usr/lib/R/site-library/taxize/data/Rdata.rdx` and
`Rdata.rdb`: an index and a run of zlib-compressed objects in R's XDR serialization, which a small reader below takes
apart); nothing is unpacked, installed, imported or run, and R is not needed:

    mkdir -p /tmp/graphs88-src && cd /tmp/graphs88-src
    apt-get download r-cran-taxize=0.9.100-1
    cd -  # back to the repository
    python3 bench/foreign_graphs_88.py --src /tmp/graphs88-src            # writes docs/programs/graphs88/*.jsonl
    python3 bench/foreign_graphs_88.py --src /tmp/graphs88-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a family, genus or order its name in its column ("Acanthaceae", "Acanthus",
"Lamiales"), a species its genus and specific epithet joined by a space, the binomial the table splits in two
("Acanthus caudatus"). Genera of one name in two families are named apart by their family in parentheses, as the code
says."""

from __future__ import annotations

import gzip
import struct
import sys
import zlib
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, named_apart, package_file, string  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs88"

# The package file, as `apt-get download` names it, with its SHA-256.
TAXIZE_DEB = "r-cran-taxize_0.9.100-1_all.deb"
SOURCES = {
    TAXIZE_DEB: "47551ac2602d6de60077a33fa7e01dc281c712e0b9a299624232ac5b8e83c267",
}
DATA_DIR = "usr/lib/R/site-library/taxize/data/"


# ---------------------------------------------------------------------- a reader of R's serialized data frames
class RObject:
    """An R vector: its SEXP type, its items and its attributes (name -> RObject)."""

    def __init__(self, sexptype: int, items: list, attributes: dict[str, object]) -> None:
        self.sexptype = sexptype
        self.items = items
        self.attributes = attributes


class Unserializer:
    """R's serialization, XDR ("X\\n") format, versions 2 and 3, for the types a data frame of strings, integers,
    logicals, doubles and factors uses (NULL, references, symbols, pairlists of attributes, CHARSXP, LGLSXP, INTSXP,
    REALSXP, STRSXP, VECSXP). Any other type stops the script."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.pos = 0
        self.refs: list[object] = []

    def int(self) -> int:
        (value,) = struct.unpack_from(">i", self.raw, self.pos)
        self.pos += 4
        return value

    def read(self) -> object:
        if self.raw[:2] != b"X\n":
            raise SystemExit("taxize: not R's XDR serialization")
        self.pos = 2
        version = self.int()
        self.int(), self.int()  # the R versions that wrote it and that can read it
        if version == 3:
            length = self.int()  # the native encoding's name, skipped
            self.pos += length
        elif version != 2:
            raise SystemExit(f"taxize: serialization version {version}")
        return self.item()

    def item(self) -> object:  # noqa: PLR0911, PLR0912  (one branch per SEXP type)
        flags = self.int()
        sexptype, has_attributes, has_tag, levels = flags & 0xFF, flags & (1 << 9), flags & (1 << 10), flags >> 12
        if sexptype == 254:  # NILVALUE_SXP
            return None
        if sexptype == 255:  # REFSXP
            index = flags >> 8 or self.int()
            return self.refs[index - 1]
        if sexptype == 1:  # SYMSXP
            symbol = ("symbol", self.item())
            self.refs.append(symbol)
            return symbol
        if sexptype == 9:  # CHARSXP
            length = self.int()
            if length == -1:
                return None  # NA_character_
            chunk = self.raw[self.pos:self.pos + length]
            self.pos += length
            return chunk.decode("latin-1" if levels & 4 else "utf-8")
        if sexptype == 2:  # LISTSXP: a pairlist, here the attributes; read as [(tag, value), ...]
            pairs: list[tuple[str | None, object]] = []
            while True:
                if has_attributes:
                    self.item()
                tag = self.item() if has_tag else None
                pairs.append((tag[1] if isinstance(tag, tuple) else None, self.item()))
                flags = self.int()
                if flags & 0xFF == 254:
                    return pairs
                if flags & 0xFF != 2:
                    raise SystemExit(f"taxize: a pairlist ends in SEXP type {flags & 0xFF}")
                has_attributes, has_tag = flags & (1 << 9), flags & (1 << 10)
        if sexptype in (10, 13):  # LGLSXP, INTSXP (NA as None)
            n = self.int()
            items = [None if v == -2147483648 else v for v in struct.unpack_from(f">{n}i", self.raw, self.pos)]
            self.pos += 4 * n
        elif sexptype == 14:  # REALSXP
            n = self.int()
            items = list(struct.unpack_from(f">{n}d", self.raw, self.pos))
            self.pos += 8 * n
        elif sexptype in (16, 19):  # STRSXP, VECSXP
            items = [self.item() for _ in range(self.int())]
        else:
            raise SystemExit(f"taxize: SEXP type {sexptype} is not read here")
        attributes = dict(self.item()) if has_attributes else {}
        return RObject(sexptype, items, attributes)


def data_frame(obj: object, name: str) -> list[dict[str, object]]:
    """The rows of a serialized data frame, each a dict of its columns' values (a factor's cells as its levels)."""
    if not isinstance(obj, RObject) or obj.sexptype != 19 or "names" not in obj.attributes:
        raise SystemExit(f"taxize: {name} is not a data frame")
    columns: dict[str, list[object]] = {}
    for column_name, column in zip(obj.attributes["names"].items, obj.items, strict=True):
        levels = column.attributes.get("levels")
        values = column.items
        if levels is not None:
            values = [None if v is None else levels.items[v - 1] for v in values]
        columns[column_name] = values
    lengths = {len(v) for v in columns.values()}
    if len(lengths) != 1:
        raise SystemExit(f"taxize: the columns of {name} differ in length")
    return [{c: v[i] for c, v in columns.items()} for i in range(lengths.pop())]


def lazy_load(index: bytes, database: bytes) -> dict[str, object]:
    """The objects of an R lazy-load database: the index (`Rdata.rdx`, a gzip-compressed serialized list whose
    `variables` map each name to its offset and length in the database) and the database (`Rdata.rdb`: per object,
    the 4-byte length of its serialization, then the serialization compressed with zlib)."""
    top = Unserializer(gzip.decompress(index)).read()
    parts = dict(zip(top.attributes["names"].items, top.items, strict=True))
    variables = parts["variables"]
    out: dict[str, object] = {}
    for name, where in zip(variables.attributes["names"].items, variables.items, strict=True):
        offset, length = where.items
        chunk = database[offset:offset + length]
        (size,) = struct.unpack_from(">i", chunk)
        raw = zlib.decompress(chunk[4:])
        if len(raw) != size:
            raise SystemExit(f"taxize: {name} does not decompress to its stated length")
        out[name] = Unserializer(raw).read()
    return out


# ---------------------------------------------------------------------------------------------------- plants
PLANTS_PRIORITY = ("species", "genus", "family", "order")


def cell(row: dict[str, object], column: str, where: str) -> str:
    return string(row[column], f"{where} {column}")


def plants_dbpedia(src: Path) -> Graph:
    g = Graph("plants_dbpedia", "jsonl", priority=PLANTS_PRIORITY)
    files = deb_files(package_file(src, TAXIZE_DEB, SOURCES),
                      lambda p: p in (DATA_DIR + "Rdata.rdx", DATA_DIR + "Rdata.rdb"))
    objects = lazy_load(files[DATA_DIR + "Rdata.rdx"], files[DATA_DIR + "Rdata.rdb"])
    plant_list = data_frame(objects["theplantlist"], "theplantlist")
    apg_families = data_frame(objects["apg_families"], "apg_families")
    apg_orders = data_frame(objects["apg_orders"], "apg_orders")
    g.left_out["data set of the package not taken (name lists, rank tables, Species Plantarum)"] += len(objects) - 3

    # The Plant List sample: (family, genus, epithet); the species is the binomial "genus epithet", the genus one per
    # (family, genus): a genus name the table gives under two families is told apart by its family
    rows = sorted({(cell(r, "family", "theplantlist"), cell(r, "genus", "theplantlist"),
                    cell(r, "species", "theplantlist")) for r in plant_list})
    if len(rows) != len(plant_list):
        raise SystemExit("theplantlist: a row is given twice")
    genus_keys = sorted({(family, genus) for family, genus, _ in rows})
    genera = named_apart(g, {k: k[1] for k in genus_keys}, {k: k[0] for k in genus_keys})
    binomials = [f"{genus} {epithet}" for _, genus, epithet in rows]
    if len(set(binomials)) != len(binomials):
        raise SystemExit("theplantlist: two species of one binomial")
    for (family, genus, _), binomial in zip(rows, binomials, strict=True):
        g.add(("species", binomial), "genus", ("genus", genera[(family, genus)]))
    for family, genus in genus_keys:
        g.add(("genus", genera[(family, genus)]), "family", ("family", family))

    # APweb's families: every row's family is in its order; a row that is not accepted names the accepted family it
    # is replaced by, written as that family's synonym (DBpedia's `synonym`, from the accepted taxon to the other name)
    families: dict[str, dict[str, object]] = {}
    for r in apg_families:
        family = cell(r, "family", "apg_families")
        if family in families:
            if families[family] != r:
                raise SystemExit(f"apg_families: family {family} listed twice, differently")
            g.left_out["row of apg_families given twice, the same (taken once)"] += 1
            continue
        families[family] = r
    for family, r in sorted(families.items()):
        g.add(("family", family), "order", ("order", cell(r, "order", "apg_families")))
        if r["accepted"] == 0:
            g.add(("family", cell(r, "synonym", "apg_families")), "synonym", ("family", family))
        elif r["accepted"] != 1:
            raise SystemExit(f"apg_families: family {family} is neither accepted nor not")

    # APweb's orders: a row that is not accepted names the accepted order it is replaced by
    orders: dict[str, dict[str, object]] = {}
    for r in apg_orders:
        order = cell(r, "order", "apg_orders")
        if order in orders:
            if orders[order] != r:
                raise SystemExit(f"apg_orders: order {order} listed twice, differently")
            g.left_out["row of apg_orders given twice, the same (taken once)"] += 1
            continue
        orders[order] = r
    for order, r in sorted(orders.items()):
        if r["accepted"] == 0:
            g.add(("order", cell(r, "synonym", "apg_orders")), "synonym", ("order", order))
        elif r["accepted"] != 1:
            raise SystemExit(f"apg_orders: order {order} is neither accepted nor not")
    plant_families = {family for family, _, _ in rows}
    g.left_out["family of The Plant List sample that APweb does not list (no order)"] += len(plant_families
                                                                                             - set(families))
    return g


def build_all(src: Path) -> list[Graph]:
    return [plants_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
