"""The batch loop's sizing: batches kept in flight from the endpoint's concurrency."""

from __future__ import annotations

from flows.batches import _Runner
from schemas.config import RunnerConfig


def runner(**cfg) -> _Runner:
    return _Runner(runner=None, cfg=RunnerConfig(**cfg), gateway=None, resubmits=0)


def test_in_flight_holds_twice_the_concurrency_plus_one_batch():
    assert runner().in_flight(batch_size=64, concurrency=64) == 3  # 128 jobs in two batches, one more to come
    assert runner().in_flight(batch_size=16, concurrency=8) == 2
    assert runner(max_workers=8).in_flight(batch_size=16, concurrency=64) == 8  # the thread pool runs 8 at once
    assert runner().in_flight(batch_size=16, concurrency=64) == 4  # capped by max_workers (4)


def test_a_configured_window_wins():
    assert runner(in_flight=1).in_flight(batch_size=1, concurrency=64) == 1
    assert runner(kind="ray", max_workers=2).in_flight(batch_size=64, concurrency=64) == 4  # Ray's own window: 2 x 2
