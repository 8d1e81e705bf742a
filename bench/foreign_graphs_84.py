"""Rebuild the EIGHTY-FOURTH folder of held-out "foreign" graphs, docs/programs/graphs84/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
metamath-databases (Debian 12: the Metamath project's proof databases, snapshot of 1 January 2021), whose file
`iset.mm` is the Intuitionistic Logic Explorer: intuitionistic logic and set theory built up from axioms and
definitions, every theorem with its full machine-checked proof and a comment saying who contributed it. The script
only reads the statements, their proofs and their comments' contribution tags, takes the file whole but for the
rules stated in the code, and writes the file; see docs/programs/graphs84/PROVENANCE.md. No dataset is one the
earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_80.py) used, and the
package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data file from inside the archive (the .deb's data tarball with `tarfile`, its file
`usr/share/metamath/databases/iset.mm` read as text and split into Metamath's tokens); nothing is unpacked,
installed, imported or run:

    mkdir -p /tmp/graphs84-src && cd /tmp/graphs84-src
    apt-get download metamath-databases=0.0.0~20210101.git55fe226-2
    cd -  # back to the repository
    python3 bench/foreign_graphs_84.py --src /tmp/graphs84-src            # writes docs/programs/graphs84/*.jsonl
    python3 bench/foreign_graphs_84.py --src /tmp/graphs84-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a theorem, axiom or definition is its label in the file ("syl", "ax-mp",
"df-ss"; Metamath labels are unique within a file, and the script stops if two statements share one); a contributor
is the name in a comment's tag ("Jim Kingdon"), or, where the tag gives initials, the name the file's own contributor
list gives for them ("NM" -> "Norman Megill"). Labels are raw: the file's own keyword `$=` (a theorem's proof, which
refers to the statements it uses) and its comments' tag words ("Contributed by", "Revised by", "Proof shortened by",
"Proof rewritten by")."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import deb_files, package_file, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs84"

# The package file, as `apt-get download` names it, with its SHA-256.
METAMATH_DEB = "metamath-databases_0.0.0~20210101.git55fe226-2_all.deb"
SOURCES = {
    METAMATH_DEB: "c72523c221db6c1039fa909150f9c53fb9175809792f2e80e55e1baa965445a1",
}

ISET_MM = "usr/share/metamath/databases/iset.mm"
ISET_PRIORITY = ("theorem", "axiom", "definition", "contributor")
# The comment tags taken, each the label of its triples (statement -> contributor); the file's other tags (a handful
# of one-off wordings, misspelt ones among them) are left out and counted.
TAGS = ("Contributed by", "Revised by", "Proof shortened by", "Proof rewritten by")
_TAG = re.compile(r"\(([A-Z][a-z]+(?: [a-z]+)*) by ([^,()]+?), ([0-9]{1,2}-[A-Za-z]{3}-[0-9]{4})\.?\)")
# The header's contributor list: lines of "INITIALS  Full Name" pairs, two or three to a line.
_PERSON = re.compile(r"(?:^|\s{2,})([A-Z]{2,3})\s+([A-Z][^\s].*?)(?=\s{2,}[A-Z]{2,3}\s|\s*$)")


def tokens(s: str) -> list[str]:
    return s.split()


def contributor_list(s: str) -> dict[str, str]:
    """The initials -> name pairs of the file's header ("Maintainer and default contributor:" and "Contributor
    list:", up to the header's next rule of `=-=-`)."""
    start = s.index("Maintainer and default contributor:")
    end = s.index("=-=-", start)
    out: dict[str, str] = {}
    for line in s[start:end].splitlines():
        for m in _PERSON.finditer(line):
            name = m.group(2).split(" - ")[0].strip()  # "Norman Megill - <address>" -> the name
            if out.get(m.group(1), name) != name:
                raise SystemExit(f"iset: initials {m.group(1)} given two names")
            out[m.group(1)] = name
    return out


def statements(s: str) -> list[tuple[str, str, list[str], list[str], str]]:
    """The file's $a and $p statements in order: (label, keyword, math symbols, proof tokens, the comment just before
    it, with no other statement between). Comments ($( ... $)) are skipped wherever they stand; $c, $v, $d, $f and
    $e statements are read past; ${ and $} (scopes) are ignored. Anything else the reader does not know stops it."""
    toks = tokens(s)
    out: list[tuple[str, str, list[str], list[str], str]] = []
    comment, label, i = "", None, 0

    def skip_comment(j: int) -> tuple[str, int]:
        k = toks.index("$)", j + 1)
        return " ".join(toks[j + 1:k]), k + 1

    while i < len(toks):
        t = toks[i]
        if t == "$(":
            comment, i = skip_comment(i)
        elif t in ("${", "$}"):
            i += 1
        elif t in ("$c", "$v", "$d", "$f", "$e"):
            i = toks.index("$.", i) + 1
            comment, label = "", None
        elif t in ("$a", "$p"):
            if label is None:
                raise SystemExit(f"iset: a {t} statement without a label (token {i})")
            math: list[str] = []
            proof: list[str] = []
            i += 1
            part = math
            while toks[i] != "$.":
                if toks[i] == "$(":
                    _, i = skip_comment(i)
                    continue
                if toks[i] == "$=":
                    part = proof
                elif toks[i].startswith("$"):
                    raise SystemExit(f"iset: {toks[i]} inside statement {label}")
                else:
                    part.append(toks[i])
                i += 1
            out.append((label, t, math, proof, comment))
            comment, label, i = "", None, i + 1
        elif t.startswith("$"):
            raise SystemExit(f"iset: keyword {t} not read (token {i})")
        else:
            label = t
            i += 1
    return out


def proof_labels(proof: list[str]) -> list[str]:
    """The labels a proof refers to: in a compressed proof, the list in parentheses before the letters; in a normal
    proof, every token ('?', an unknown step, left out)."""
    if proof and proof[0] == "(":
        return proof[1:proof.index(")")]
    return [t for t in proof if t != "?"]


def iset_raw(src: Path) -> Graph:
    g = Graph("iset_raw", "jsonl", priority=ISET_PRIORITY)
    raw = deb_files(package_file(src, METAMATH_DEB, SOURCES), lambda p: p == ISET_MM)[ISET_MM]
    s = raw.decode("utf-8")
    people = contributor_list(s)
    stmts = statements(s)

    # kinds: a $p statement is a theorem; a $a statement whose typecode is "|-" is an axiom, or a definition where
    # its label starts "df-" (the file's naming rule); other $a statements (typecodes wff, class, setvar) are the
    # syntax of the language, not taken, nor are the proofs' references to them or to hypotheses ($e, $f)
    kinds: dict[str, str] = {}
    for label, keyword, math, _, _ in stmts:
        if label in kinds:
            raise SystemExit(f"iset: two statements labelled {label}")
        if keyword == "$p":
            kinds[label] = "theorem"
        elif math[:1] == ["|-"]:
            kinds[label] = "definition" if label.startswith("df-") else "axiom"
        else:
            kinds[label] = ""  # syntax
    g.left_out["syntax statement (typecode other than |-, not taken)"] += sum(1 for k in kinds.values() if not k)

    for label, _, _, proof, comment in stmts:
        kind = kinds[label]
        if not kind:
            continue
        head = (kind, label)
        for used in sorted(set(proof_labels(proof))):
            if used == label:
                continue
            if kinds.get(used):
                g.add(head, "$=", (kinds[used], used))
            elif used in kinds:
                g.left_out["proof step by a syntax statement (not taken)"] += 1
            else:
                g.left_out["proof step by a hypothesis (not taken)"] += 1
        for m in _TAG.finditer(html.unescape(comment)):
            tag = m.group(1) + " by"
            if tag not in TAGS:
                g.left_out[f"comment tag {tag!r} (not taken)"] += 1
                continue
            for who in m.group(2).split(" and "):
                who = text(who)
                g.add(head, tag, ("contributor", people.get(who, who)))
    return g


def build_all(src: Path) -> list[Graph]:
    return [iset_raw(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
