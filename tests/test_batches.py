"""The batch loop's sizing: batches kept in flight from the endpoint's concurrency."""

from __future__ import annotations

import pytest

from flows.batches import _Runner, chunks, typical_size
from schemas.config import RunnerConfig


def runner(**cfg) -> _Runner:
    return _Runner(runner=None, cfg=RunnerConfig(**cfg), gateway=None, resubmits=0)


def test_in_flight_holds_twice_the_concurrency_plus_one_batch():
    assert runner().in_flight(batch_size=64, concurrency=64) == 3  # 128 jobs in two batches, one more to come
    assert runner().in_flight(batch_size=16, concurrency=8) == 2
    assert runner(max_workers=8).in_flight(batch_size=16, concurrency=64) == 8  # the thread pool runs 8 at once
    assert runner().in_flight(batch_size=16, concurrency=64) == 4  # capped by max_workers (4)


def test_the_typical_batch_of_jobs_not_cut_yet():
    def mean(n, size):
        return typical_size(chunks(range(n), size), size)

    assert mean(75, 64) == 38  # a batch of 64 and one of 11: a window of 64-job batches would hold too few
    assert mean(40, 64) == 40 and mean(128, 64) == 64 and mean(129, 64) == 43
    for n in range(1, 300):
        for size in (1, 7, 16, 64):
            lengths = [len(b) for b in chunks(range(n), size)]
            assert abs(mean(n, size) - sum(lengths) / len(lengths)) <= 0.5
    assert mean(0, 64) == 64  # nothing to cut: the batch size itself


def test_a_small_batch_takes_its_share_of_a_window_place():
    """On the thread pool a domain's refill (a few jobs) beside full batches takes the share of a place its jobs are
    of the largest batch's, up to twice ``max_workers`` batches; elsewhere every batch takes a whole place."""
    from collections import deque
    from concurrent.futures import Future

    from flows.batches import _places
    from flows.steps import Unit

    class Running:  # a task runner's future over a batch still running
        wrapped_future = Future()

    def unit(n: int) -> Unit:
        return Unit("d", "s", list(range(n)))

    pending = deque((unit(n), Running(), 0) for n in (60, 60, 6, 12))
    assert _places(pending, [1], max_workers=4) == pytest.approx(2.3)  # 1 + 1 + 0.1 + 0.2
    assert _places(pending, None, max_workers=4) == 4  # whole places (Ray, or one batch a process)
    assert _places(deque((unit(1), Running(), 0) for _ in range(8)), [60], max_workers=4) == 8  # every thread busy
    assert _places(deque([("a batch", Running(), 0)]), [60], max_workers=4) == 1  # no items said: a whole place


def test_a_configured_window_wins():
    assert runner(in_flight=1).in_flight(batch_size=1, concurrency=64) == 1
    assert runner(kind="ray", max_workers=2).in_flight(batch_size=64, concurrency=64) == 4  # Ray's own window: 2 x 2


def test_a_slow_batch_does_not_hold_back_the_next_ones_and_results_stay_in_order(prefect_harness):
    """With two batches in flight, batch 0 takes long; the batches after it start as soon as a place frees (their
    results wait, in order, behind batch 0), instead of after batch 0 is done."""
    import threading
    import time

    from prefect import flow, task

    from flows.batches import batch_runner, run_batches

    started: dict[int, float] = {}
    release = threading.Event()

    @task
    def work(i: int) -> int:
        started[i] = time.monotonic()
        if i == 0:
            release.wait(10)
        return i * 10

    @flow
    def go() -> tuple[list[int], list[int]]:
        with batch_runner(RunnerConfig(max_workers=4)) as r:
            out: list[int] = []
            begun_before_0_ended: list[int] = []
            results = run_batches(work, list(range(6)), lambda i: {"i": i}, runner=r, in_flight=2)

            def let_go() -> None:  # batch 0 ends once batches 1-3 have started
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and not {1, 2, 3} <= set(started):
                    time.sleep(0.01)
                begun_before_0_ended.extend(sorted(started))
                release.set()

            threading.Thread(target=let_go, daemon=True).start()
            for i, res in results:
                out.append(res)
            return out, begun_before_0_ended

    out, begun = go()
    assert out == [0, 10, 20, 30, 40, 50]
    assert {0, 1, 2, 3} <= set(begun)  # three batches ran past the slow one while it was still running

