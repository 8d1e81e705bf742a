"""The throughput and scale benchmarks measure what they name: their jobs reach the model and their walks find
paths (relation profiles once refused most hops of their graphs, and the figures silently measured refusals)."""

from __future__ import annotations

import asyncio

from bench.bench_generation import CALL_FLOOR, add_replies, bench_config, demo_jobs, run_jobs, too_few
from bench.bench_scale import WALK_FLOOR, measure_size, walks_too_few, write_triples
from gateway.client import LLMGateway
from testing.fake import FakeOpenAI
from schemas.config import load_settings


def test_scale_walks_find_paths_on_a_small_graph(tmp_path):
    path = tmp_path / "g.jsonl"
    write_triples(path, 300, 0.5, 0)
    row = measure_size(str(path), 20, 0)
    assert row["walk_seeds"] == 20
    assert row["walk_paths"] >= WALK_FLOOR * row["walk_seeds"]
    assert walks_too_few(row) is None


def test_scale_refuses_walks_that_found_nothing():
    why = walks_too_few({"nodes": 1000, "walk_seeds": 200, "walk_paths": 0})
    assert why is not None and "0 paths from 200 seeds" in why


def test_generation_jobs_reach_the_model_and_are_accepted(tmp_path):
    jobs = demo_jobs(16)
    cfg = bench_config(list({id(kg): kg for kg, _, _ in jobs}.values()))
    with FakeOpenAI() as fake:
        add_replies(fake)
        ep = {"base_url": fake.base_url, "model": "fake-model", "max_concurrency": 8}
        settings = load_settings(data_dir=tmp_path, roles={"generator": ep, "verifier": ep}, cache={"mode": "off"})
        _, results = asyncio.run(run_jobs(LLMGateway(settings), jobs, cfg, 8))
        calls = fake.calls()
    accepted = sum(r.qa is not None for r in results)
    assert calls >= CALL_FLOOR * len(jobs)
    assert too_few(len(jobs), calls, accepted) is None


def test_generation_refuses_a_run_of_refused_jobs():
    assert "231 endpoint calls" in too_few(400, 231, 5)
    assert "5 of 400 jobs accepted" in too_few(400, 800, 5)
