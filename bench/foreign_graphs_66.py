"""Rebuild the SIXTY-SIXTH folder of held-out "foreign" graphs, docs/programs/graphs66/, from a package's data files.

Nobody on the project wrote these facts: every triple is converted from the data files that one package ships.
pokemon-tcg-pocket-database (npm: a JSON database of the cards and sets of the card game Pokémon Trading Card Game
Pocket, scraped by its author from the game's public card lists: every printing of every card with its set, number,
rarity and the booster packs it is pulled from, the game details of each card of the older sets (element, card type,
weakness and the card it evolves from), every set with its English name and
packs, and the rarities with their groups). The script only renames fields to property labels, takes the tables whole
but for the rules stated in the code, and writes the file; see docs/programs/graphs66/PROVENANCE.md. No dataset is one
the earlier folders (bench/foreign_graphs.py, bench/foreign_graphs_2.py ... bench/foreign_graphs_63.py) used, and the
package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data files from inside the archive (the npm tarball with `tarfile`, its JSON files
with `json`); nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs66-src && cd /tmp/graphs66-src
    npm pack pokemon-tcg-pocket-database@2.6.1
    cd -  # back to the repository
    python3 bench/foreign_graphs_66.py --src /tmp/graphs66-src            # writes docs/programs/graphs66/*.jsonl
    python3 bench/foreign_graphs_66.py --src /tmp/graphs66-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the rules stated in
the code). It prints the source file, then one line per graph with its counts. Check the file with
`tasks.graph.importers.import_graph_file` (the project venv): it must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
The labels are the JSON files' own field names, kept as they are ("raw"): `set`, `packs`, `rarity`, `group`,
`element`, `type`, `weakness`, `evolvesFrom`. Every name is the one the data gives: a card is its `name`
("Bulbasaur", "Pikachu ex"), one node for all printings of that name (the game counts cards of one name as one card
in a deck), a set its English name ("Genetic Apex"), a pack its name ("Mewtwo"), a rarity its `label` ("Common"), a
rarity group, element and card type the value as shipped ("Diamond", "grass", "supporter"). Records of one kind that
show one name are named apart by a telling value in parentheses (none needed it), as the code says."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import named_apart, npm_files, package_file, string, text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs66"

# The package file, as `npm pack` names it, with its SHA-256.
TCGP_TGZ = "pokemon-tcg-pocket-database-2.6.1.tgz"
SOURCES = {
    TCGP_TGZ: "8cf1f949e00654ff33b0a91ef790667e6b169ba2a4e6db09a4ee56045463f233",
}

# ------------------------------------------------------------------------------------------------------- cards
CARDS, EXTRA = "package/dist/cards.json", "package/dist/cards.extra.json"
SETS, RARITIES = "package/dist/sets.json", "package/dist/rarities.json"
TCGP_PRIORITY = ("card", "set", "pack", "rarity", "rarity group", "card type", "element")
# the game details read from a card's first record in cards.extra.json (file order), label -> type of the value
DETAILS = {"element": "element", "type": "card type", "weakness": "element", "evolvesFrom": "card"}


def tcgp_raw(src: Path) -> Graph:
    g = Graph("tcgp_raw", "jsonl", priority=TCGP_PRIORITY)
    files = npm_files(package_file(src, TCGP_TGZ, SOURCES), {CARDS, EXTRA, SETS, RARITIES})
    cards, extra = json.loads(files[CARDS]), json.loads(files[EXTRA])
    sets, rarities = json.loads(files[SETS]), json.loads(files[RARITIES])

    # sets: every set of every series, named by its English name (told apart by its code if need be), with its packs
    set_rows = {string(s["code"], "set code"): s for series in sorted(sets) for s in sets[series]}
    set_names = named_apart(g, {code: string(s["name"]["en"], f"set {code}") for code, s in set_rows.items()},
                            {code: code for code in set_rows})
    # packs: one node per (set, pack name), named by the pack's name (told apart by its set's name if need be)
    pack_keys = {(code, string(p, f"pack of {code}")) for code, s in set_rows.items() for p in s.get("packs", [])}
    pack_names = named_apart(g, {k: k[1] for k in pack_keys}, {k: set_names[k[0]] for k in pack_keys})
    for code, s in set_rows.items():
        for p in s.get("packs", []):
            g.add(("set", set_names[code]), "packs", ("pack", pack_names[(code, text(p))]))

    # rarities: by code, named by their label, each with its group
    rarity_names = named_apart(g, {code: string(r["label"], f"rarity {code}") for code, r in rarities.items()},
                               {code: code for code in rarities})
    for code, r in rarities.items():
        if r.get("group"):
            g.add(("rarity", rarity_names[code]), "group", ("rarity group", string(r["group"], f"group of {code}")))

    # cards: one node per card name; every printing (cards.json) adds its set, packs and rarity
    card_names = {string(c["name"], f"card {c.get('set')} {c.get('number')}") for c in cards}
    for c in cards:
        head = ("card", text(c["name"]))
        code = c["set"]
        if code not in set_rows:
            g.left_out["printing of a set sets.json lacks (its set and packs not linked)"] += 1
        else:
            g.add(head, "set", ("set", set_names[code]))
            for p in c.get("packs", []):
                key = (code, text(p))
                if key in pack_names:
                    g.add(head, "packs", ("pack", pack_names[key]))
                else:
                    g.left_out["pack a set's record in sets.json lacks"] += 1
        if c.get("rarity") in rarity_names:
            g.add(head, "rarity", ("rarity", rarity_names[c["rarity"]]))
        else:
            g.left_out["printing without a known rarity"] += 1

    # game details: from the first record of each card name in cards.extra.json (later printings are reprints)
    first: dict[str, dict] = {}
    for c in extra:
        first.setdefault(text(c["name"]), c)
    unknown = set(first) - card_names
    if unknown:
        raise SystemExit(f"tcgp_raw: cards.extra.json names cards cards.json lacks: {sorted(unknown)[:5]}")
    for name, c in sorted(first.items()):
        head = ("card", name)
        for label, kind in DETAILS.items():
            value = c.get(label)
            if value is None or value == "":
                continue
            value = string(value, f"{label} of {name}")
            if kind == "card" and value not in card_names:
                g.left_out["evolvesFrom a card the files lack"] += 1
                continue
            g.add(head, label, (kind, value))
        # `goodWith` (on 285 records) is not taken: its values mix elements, card names (some of cards the files
        # lack) and tags of the game's own ("Stage1", "UltraBeast", "Retreat3Plus", "All"), no one kind of thing
    g.left_out["card names without game details (later sets)"] += len(card_names - set(first))
    return g


def build_all(src: Path) -> list[Graph]:
    return [tcgp_raw(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
