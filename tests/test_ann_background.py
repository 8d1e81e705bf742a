"""A new snapshot's HNSW graph is built in the background (``tasks.env.index.AnnBuild``): the index answers by the
exact scan meanwhile, switches to the graph's file between requests once it is written (no restart), keeps the exact
scan when the build fails (and says so, in one line), and a cached graph serves from the first request.

Small graphs, the ANN path forced by a low threshold. No timing: the index's clock is injected (it looks for the
file only when the clock has moved on by ``ANN_POLL_S``), and the tests wait for the build process itself.
"""

from __future__ import annotations

import logging
import signal
import sys

import numpy as np
import pytest
from fastapi.testclient import TestClient

import tasks.env.index as index_module
from flows.tool_server import create_app
from schemas.graph import Entity
from tasks.env.index import ANN_POLL_S, GraphIndex, HashingEmbedder
from tasks.env.tools import ToolEnvironment
from tasks.graph.kg import KnowledgeGraph

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta", "lambda", "zeta", "rho", "tau"]


class Clock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def tick(self) -> None:
        self.now += ANN_POLL_S


def _graph(n: int = 600) -> KnowledgeGraph:
    rng = np.random.default_rng(0)
    names = sorted({" ".join(rng.choice(WORDS, 3)) + f" {i}" for i in range(n)})
    return KnowledgeGraph.from_records("cs", [Entity(domain="cs", name=x, description=f"about {x}") for x in names], [])


QUERIES = ["alpah beta 12", "gamma delt", "omega sigma kappa 7", "thta lambda", "zeta rho tau 99", "kapa 3",
           "sigma omega", "beta beta beta", "lambda 42", "tau gamma 500"]


@pytest.fixture
def low_threshold(monkeypatch):
    monkeypatch.setattr(index_module, "ANN_MIN_ROWS", 100)
    # one insertion thread: a graph built on several differs from build to build, and may miss a near tie of the
    # exact top k that another build finds (``AnnIndex``); one thread builds the same graph every time
    monkeypatch.setattr(index_module, "ANN_BUILD_THREADS", 1)


def _background(graph: KnowledgeGraph, cache, clock: Clock) -> GraphIndex:
    return GraphIndex(graph, HashingEmbedder(), cache_dir=cache, ann_background=True, clock=clock).warm()


def _exact(graph: KnowledgeGraph):
    return GraphIndex(graph, HashingEmbedder(), search="float32").match_many(QUERIES, 5)


def test_the_exact_scan_answers_until_the_graph_is_written_then_the_graph_without_a_restart(low_threshold, tmp_path):
    graph = _graph()
    clock = Clock()
    index = _background(graph, tmp_path, clock)
    build = index._ann_build
    assert build is not None and build.process is not None  # a process, not a thread
    assert index.index_status() == {"serving": "exact", "hnsw": "building"}
    assert index.prepare_search().startswith("exact float32 scan")
    exact = _exact(graph)
    assert index.match_many(QUERIES, 5) == exact  # the exact scan: the same answers as a float32 index
    build.wait(120)
    assert build.process.returncode == 0 and index.ann_path().exists()
    # the file is there, but the clock has not moved: no look for it, still the exact scan
    assert index.serving == "exact" and index.match_many(QUERIES, 5) == exact
    clock.tick()
    got = index.match_many(QUERIES, 5)
    assert index.index_status() == {"serving": "hnsw", "hnsw": "ready"}
    assert index.ann() is not None and index.ann().path == index.ann_path()
    # On 600 rows the graph's 2k candidates hold the exact top k: the same answers after the switch.
    assert got == exact
    # and the graph's own candidates against the exact ranking (where it is approximate): recall@10
    vecs = index.embed_queries(QUERIES)
    matrix = index.embeddings.astype(np.float64)
    want = [set(np.lexsort((np.arange(len(matrix)), -(matrix @ v)))[:10]) for v in vecs.astype(np.float64)]
    found = index.ann().candidates(vecs, 10)
    recall = np.mean([len(set(f.tolist()) & w) / 10 for f, w in zip(found, want)])
    assert recall >= 0.95, recall


def test_a_failed_build_leaves_the_exact_scan_serving_and_says_why_once(low_threshold, tmp_path, capfd):
    graph = _graph()
    clock = Clock()
    index = GraphIndex(graph, HashingEmbedder(), cache_dir=tmp_path, ann_background=True, clock=clock)
    _ = index.embeddings
    index.cache_path().unlink()  # the mapping stays readable here; the build process cannot open the file
    index.warm()
    index._ann_build.wait(120)
    assert index._ann_build.process.returncode == 1
    clock.tick()
    status = index.index_status()
    assert status["serving"] == "exact" and status["hnsw"] == "failed"
    assert "the background HNSW build" in status["error"] and "failed: FileNotFoundError" in status["error"]
    assert index.match_many(QUERIES, 5) == _exact(graph)  # still answering, exactly
    err = capfd.readouterr().err
    assert err.count("the background HNSW build of") == 1, err  # one clear line, from the build itself
    assert not index.ann_path().exists()


def test_a_build_that_dies_without_a_word_is_noticed_and_logged_once(low_threshold, tmp_path, monkeypatch, caplog):
    go = tmp_path / "go"
    # A build that holds its lock until told to go on, then dies by SIGKILL: no failure line of its own.
    script = (f"import os, signal, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.01)\n"
              "os.kill(os.getpid(), signal.SIGKILL)")
    monkeypatch.setattr(index_module, "_builder_argv", lambda *_a: [sys.executable, "-c", script])
    graph = _graph()
    clock = Clock()
    index = _background(graph, tmp_path / "cache", clock)
    # a second worker of the same server: the lock is held, so it joins the build instead of starting another
    other = _background(graph, tmp_path / "cache", clock)
    assert index._ann_build.process is not None and other._ann_build.process is None
    go.touch()
    index._ann_build.wait(120)
    assert index._ann_build.process.returncode == -signal.SIGKILL
    clock.tick()
    with caplog.at_level(logging.ERROR, logger="tasks.env.index"):
        states = [index.index_status(), other.index_status()]
    assert [s["hnsw"] for s in states] == ["failed", "failed"] and {s["serving"] for s in states} == {"exact"}
    assert "ended without writing it" in states[0]["error"] and states[0]["error"] == states[1]["error"]
    assert [r.getMessage() for r in caplog.records].count(states[0]["error"]) == 1  # logged by one of the two
    assert index.match_many(QUERIES, 5) == _exact(graph)


def test_a_cached_graph_serves_from_the_first_request(low_threshold, tmp_path, monkeypatch):
    graph = _graph()
    first = _background(graph, tmp_path, Clock())
    first._ann_build.wait(120)
    monkeypatch.setattr(index_module, "_builder_argv", lambda *_a: pytest.fail("the graph is cached: no build"))
    clock = Clock()
    index = _background(graph, tmp_path, clock)
    assert index._ann_build is None and index.index_status() == {"serving": "hnsw", "hnsw": "ready"}
    assert index.prepare_search().startswith("hnsw (usearch")
    assert index.match_many(QUERIES, 5) == _exact(graph)


def test_health_says_which_search_serves_and_changes_without_a_restart(low_threshold, tmp_path):
    graph = _graph()
    clock = Clock()
    index = GraphIndex(graph, HashingEmbedder(), cache_dir=tmp_path, ann_background=True, clock=clock)
    env = ToolEnvironment({"cs": index})
    env.warm()
    exact = ToolEnvironment({"cs": GraphIndex(graph, HashingEmbedder(), search="float32")})

    def expected(name: str) -> dict[str, str]:
        return {"rendered_content": exact.call("entity_matcher", {"node_name": name, "graph_type": "cs"}).text}

    with TestClient(create_app(env)) as client:
        assert client.post("/cs/get_precise_entity_names", json={"node_name": "alpah beta 12"}).json() == \
            expected("alpah beta 12")
        assert client.get("/health").json()["search"] == {"cs": {"serving": "exact", "hnsw": "building"}}
        index._ann_build.wait(120)
        clock.tick()
        health = client.get("/health").json()
        assert health["search"] == {"cs": {"serving": "hnsw", "hnsw": "ready"}} and isinstance(health["worker"], int)
        assert client.post("/cs/get_precise_entity_names", json={"node_name": "gamma delt"}).json() == \
            expected("gamma delt")


def test_below_the_threshold_nothing_is_built_and_the_scan_serves(tmp_path, monkeypatch):
    monkeypatch.setattr(index_module, "_builder_argv", lambda *_a: pytest.fail("exact below ANN_MIN_ROWS"))
    index = _background(_graph(200), tmp_path, Clock())
    assert index.index_status() == {"serving": "exact", "hnsw": "off"}


def test_text_search_answers_exactly_while_its_graph_is_built_then_reads_the_graph(tmp_path):
    import time

    from tasks.env.text_search import TextIndex
    from testing.text_corpus import synthetic_chunks

    chunks, facts = synthetic_chunks(600, seed=3)
    queries = [f.query for f in facts[::20]]
    exact = TextIndex(chunks, HashingEmbedder(), name="t", dense="exact").warm()
    index = TextIndex(chunks, HashingEmbedder(), name="t", cache_dir=tmp_path, dense="hnsw")
    index.ann_background = True
    index.warm()
    assert index.serving == "exact" and index._ann_build is not None and index._ann_build.process is not None
    want = exact.search_many(queries, 3)
    assert index.search_many(queries, 3) == want  # the exact scan meanwhile
    index._ann_build.wait(120)
    while index.serving != "hnsw":  # the index looks for the file once a second
        assert index._ann_build.error is None
        time.sleep(0.05)
    assert index.prepare_search().startswith("hnsw (usearch")
    got = index.search_many(queries, 3)
    same = np.mean([[h.chunk.chunk_id for h in g] == [h.chunk.chunk_id for h in w] for g, w in zip(got, want)])
    assert same >= 0.9, same  # the graph is approximate: nearly every fused top 3 as the exact one
