"""Small and dense graphs: a run says which seed bound left every node out, and a job without a candidate path says
which refusal did it, under its own reason in the notes and the yields."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schemas.config import load_settings
from schemas.qa import Seed
from tasks.graph.kg import KnowledgeGraph
from tasks.meaning.profiles import ProfileBook
from tasks.qa.candidates import NO_PATH_REASONS, explain_no_candidates, sample_candidate_paths
from warehouse.db import Warehouse

# 14 nodes: a hub with 7 leaves, a 5-hop chain to a second hub with one leaf; the largest depth-3 ball has 13 nodes.
CHAIN = ["Hub", "Link 1", "Link 2", "Link 3", "Link 4", "Second hub"]
TINY = [*zip(CHAIN, ["next"] * 5, CHAIN[1:]), *(("Hub", "has", f"Leaf {i}") for i in range(7)),
        ("Second hub", "has", "Last leaf")]  # fmt: skip
# Every reader likes every book: each relation out of a node also leads to two others.
LIKES = [(f"Reader {i}", "likes", f"Book {j}") for i in range(3) for j in range(3)]


def _tsv(path: Path, triples: list[tuple[str, str, str]]) -> str:
    path.write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in triples), encoding="utf-8")
    return str(path)


# -- why a start gives no candidate path ----------------------------------------------------------------------------


def test_every_path_ambiguous_is_its_own_reason():
    kg = KnowledgeGraph.from_triples("t", LIKES)
    assert sample_candidate_paths(kg, "Reader 0", 2) == []
    why = explain_no_candidates(kg, "Reader 0", 2)
    assert why.reason == "no_path_ambiguous" and why.counts == {"no_path_ambiguous": 3}
    assert why.note("1-2") == ("no 1-2-hop candidate path from 'Reader 0': every path's answer is ambiguous: in "
                               "Reader 0 -> Book 0, 'likes' from 'Reader 0' also leads to 'Book 1', 'Book 2' "
                               "(3 paths of 2 nodes)")


def test_too_shallow_and_shortcut_are_told_apart():
    star = KnowledgeGraph.from_triples("t", [("Hub", "has", f"Leaf {i}") for i in range(4)])
    shallow = explain_no_candidates(star, "Leaf 0", 4)
    assert shallow.reason == "no_path_too_short" and shallow.counts == {}
    assert shallow.detail == ("no path of 4 nodes starts there, the graph is too shallow (the longest path from it "
                              "has 3 node(s))")
    # a dense graph has paths of 4 nodes from every node, but each one ends next to the start
    clique = KnowledgeGraph.from_triples("t", [(f"c{i}", "knows", f"c{j}") for i in range(6) for j in range(i)])
    short = explain_no_candidates(clique, "c0", 4)
    assert short.reason == "no_path_shortcut" and short.counts["no_path_shortcut"] == 5 * 4 * 3
    assert short.detail.startswith("every path of 4 nodes from it is a shortcut: no node is more than 1 hop(s) from "
                                   "'c0'")


def test_paths_outside_the_rendered_subgraph_and_the_samplers_own_refusal(monkeypatch):
    import tasks.qa.candidates as candidates

    chain = KnowledgeGraph.from_triples("t", list(zip(CHAIN, ["next"] * 5, CHAIN[1:])))
    outside = explain_no_candidates(chain, "Hub", 4, allowed_nodes=["Hub", "Link 1", "Link 2"])
    assert outside.reason == "no_path_outside_context" and outside.counts == {"no_path_outside_context": 1}
    assert "leaves its rendered subgraph" in outside.detail
    # The sampler is asked about each path alone: what it refuses beyond the shortcut and ambiguity checks is its
    # hop refusal (whatever that check is made of); a path it takes was only missed by the walks.
    asked: list[dict] = []

    def refuses(*args, **kwargs):
        asked.append(kwargs)
        return []

    monkeypatch.setattr(candidates, "sample_candidate_paths", refuses)
    jobs_profiles = ProfileBook()
    refused = explain_no_candidates(chain, "Hub", 4, book=jobs_profiles)
    assert refused.reason == "no_path_one_of_many" and "names its node only as one of many" in refused.detail
    assert asked[0]["allowed_nodes"] == CHAIN[:4] and asked[0]["book"] is jobs_profiles
    monkeypatch.setattr(candidates, "sample_candidate_paths", lambda *a, **k: ["a path"])
    missed = explain_no_candidates(chain, "Hub", 4)
    assert missed.reason == "no_path_not_found" and "walks missed" in missed.detail
    assert set(NO_PATH_REASONS) >= {outside.reason, refused.reason, missed.reason}


def test_a_mix_of_refusals_counts_each_and_the_reason_is_the_most_common():
    # from Reader 0: three ambiguous 2-node paths (likes) and one that leaves the rendered subgraph
    kg = KnowledgeGraph.from_triples("t", [*LIKES, ("Reader 0", "owns", "Shelf")])
    allowed = {n for _, _, t in LIKES for n in (t,)} | {"Reader 0"}
    why = explain_no_candidates(kg, "Reader 0", 2, allowed_nodes=allowed)
    assert why.counts == {"no_path_ambiguous": 3, "no_path_outside_context": 1}
    assert why.reason == "no_path_ambiguous"
    assert why.detail.startswith("of 4 paths of 2 nodes, 1 leave its rendered subgraph; 3 have an ambiguous answer")


def test_a_job_without_candidates_is_noted_under_its_reason():
    from tasks.qa.generate import GenConfig, run_job

    kg = KnowledgeGraph.from_triples("t", LIKES)
    seed = Seed(domain="t", node="Reader 0", ball_size=6, depth=3, sample_rank=0, sampling_seed=0)
    result = asyncio.run(run_job(None, kg, seed, "1-2", "candidates", run_id="r", cfg=GenConfig()))  # type: ignore[arg-type]
    assert result.attempts == [] and result.note_reason == "no_path_ambiguous"
    assert "every path's answer is ambiguous" in result.note and "shortcut-free candidate path" not in result.note
    # 3+ hops: a path of 4 nodes from Reader 0 always ends next to it
    result = asyncio.run(run_job(None, kg, seed, "3+", "candidates", run_id="r", cfg=GenConfig()))  # type: ignore[arg-type]
    assert result.note_reason == "no_path_shortcut"


def test_the_yields_count_jobs_without_candidates_under_their_reason():
    from tasks.qa.yields import funnel, yield_table

    jobs = [("t", "1-2", "candidates")] * 3
    ended = Counter({("t", "1-2", "candidates", "no_path_ambiguous"): 2, ("t", "1-2", "candidates", "no_path_too_short"): 1})
    rows = funnel("r", jobs, [], Counter(), Counter(), ended)
    got = {(r.stage, r.reason): r.count for r in rows if r.count}
    assert got == {("seeds", ""): 3, ("seeds", "no_path_ambiguous"): 2, ("seeds", "no_path_too_short"): 1}
    assert yield_table(rows)[0]["top rejects"] == "no_path_ambiguous 2, no_path_too_short 1"


# -- through the flow and the command line -----------------------------------------------------------------------------


@pytest.fixture
def settings(fake_llm, tmp_path):
    roles = {r: {"base_url": fake_llm.base_url, "model": "fake-model", "max_retries": 1, "timeout_s": 10}
             for r in ("generator", "verifier")}
    # A fixed plan: these tests count the seeds and jobs a run plans; filling the mix is tests/test_refill.py's.
    return load_settings(data_dir=tmp_path / "hopforge-data", roles=roles, seeds={"refill": 0})


@pytest.fixture
def tiny_graph(prefect_harness, settings, tmp_path):
    from flows.graphs import import_graphs

    out = import_graphs(files={"tiny": _tsv(tmp_path / "tiny.tsv", TINY)}, settings=settings)
    assert out["imported"]["tiny"]["entities"] == 14
    return out


def _pick_first(body):
    import re

    prompt = "\n".join(str(m.get("content")) for m in body["messages"])
    pid = re.search(r"^(P\d+): ", prompt, re.M).group(1)
    seed = re.search(r"Candidate paths starting at (['\"])(.+?)\1;", prompt).group(2)
    return {"path_id": pid, "question": f"Starting from {seed}, which entity does this chain of relations lead to?"}


def test_a_graph_smaller_than_the_minimum_ball_says_so_and_a_lower_minimum_admits_seeds(tiny_graph, settings,
                                                                                           fake_llm, monkeypatch):
    import flows.qa
    from flows.qa import generate_qa

    # Which relations can start a question is the relation profiles' business, not this test's: every eligible
    # node may seed here.
    monkeypatch.setattr(flows.qa.SeedRule, "keep", lambda self, node: True)

    out = generate_qa(domains=["tiny"], n_seeds=3, settings=settings)
    assert out["seed_notes"] == [
        "0 of 14 nodes qualify as seeds in domain tiny: the largest depth-3 neighbourhood has 13 nodes, below the "
        "minimum of 20 (set --min-ball 13 or lower, or seeds.min_ball in the configuration)"]
    assert fake_llm.calls() == 0 and out["attempts"] == 0

    fake_llm.add(schema_name="qa_pick_path", reply=_pick_first)
    fake_llm.add(schema_name="qa_judgement", reply={"valid": True, "reason": "ok"})
    out = generate_qa(domains=["tiny"], n_seeds=3, min_ball=10, settings=settings)
    assert out["seed_notes"] == []
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        seeds = wh.query("SELECT node, ball_size FROM seeds WHERE run_id = ?", [out["run_id"]])
        params = wh.scalar("SELECT parameters FROM runs WHERE run_id = ?", [out["run_id"]])
    assert len(seeds) == 3 and all(s["ball_size"] >= 10 for s in seeds)
    assert '"min_ball": 10' in params and '"max_ball": 400' in params  # the run records the bounds it used

    # the configuration's bound, when no parameter is given
    config = load_settings(data_dir=settings.data_dir, roles=settings.roles.model_dump(),
                           seeds={"min_ball": 10, "refill": 0})
    assert generate_qa(domains=["tiny"], n_seeds=3, settings=config)["seed_notes"] == []


def test_a_run_whose_every_path_is_ambiguous_reports_that_reason(prefect_harness, settings, fake_llm, tmp_path,
                                                                  monkeypatch):
    import flows.qa
    from flows.graphs import import_graphs
    from flows.qa import generate_qa

    monkeypatch.setattr(flows.qa.SeedRule, "keep", lambda self, node: True)  # as above: every eligible node may seed

    import_graphs(files={"likes": _tsv(tmp_path / "likes.tsv", LIKES)}, settings=settings)
    out = generate_qa(domains=["likes"], n_seeds=2, min_ball=1, hop_mix={"1-2": 1.0, "3+": 0.0}, settings=settings)
    assert out["attempts"] == 0 and fake_llm.calls() == 0
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        notes = [r["note"] for r in wh.query("SELECT note FROM qa_job_notes")]
        yields = wh.query("SELECT stage, reason, count FROM qa_yields WHERE reason <> ''")
    assert len(notes) == 2 and all("every path's answer is ambiguous" in n for n in notes), notes
    assert not any("shortcut-free candidate path" in n for n in notes)
    assert [(y["stage"], y["reason"], y["count"]) for y in yields] == [("seeds", "no_path_ambiguous", 2)]
    assert "no_path_ambiguous 2" in out["yields"][0]["top rejects"]


def test_qa_generate_prints_why_no_node_qualifies_and_exits_non_zero(tiny_graph, settings, fake_llm, monkeypatch):
    from flows.cli import app

    for role in ("generator", "verifier"):
        monkeypatch.setenv(f"HOPFORGE_ROLES__{role.upper()}__BASE_URL", fake_llm.base_url)
        monkeypatch.setenv(f"HOPFORGE_ROLES__{role.upper()}__MODEL", "fake-model")
    monkeypatch.setenv("HOPFORGE_DATA_DIR", str(settings.data_dir))
    result = CliRunner().invoke(app, ["qa", "generate", "-d", "tiny", "--seeds", "3"])
    # the job could not be done for a stated reason: exit 2, a script does not count it done
    assert result.exit_code == 2, result.output
    flat = " ".join(result.output.split())
    assert ("0 of 14 nodes qualify as seeds in domain tiny: the largest depth-3 neighbourhood has 13 nodes, below "
            "the minimum of 20 (set --min-ball 13 or lower") in flat
    assert "no seed in domain(s) tiny: no question could be asked there; the lines above say why" in flat
