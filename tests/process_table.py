"""What a killed command left behind, read from the process table, for tests that kill hopforge commands.

    below = descendants(proc.pid)          # while the command runs: its children, their children...
    proc.send_signal(signal.SIGKILL); proc.wait()
    assert_none_alive(below)               # within a few seconds, none of them runs any more

A process counts as gone once it has ended (a zombie waiting to be reaped has ended), and a later process given
the same pid is not mistaken for it (the start time tells them apart).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from gateway.children import Proc, alive, descendants

__all__ = ["Proc", "alive", "assert_none_alive", "descendants", "wait_for_descendants"]


def assert_none_alive(procs: Sequence[Proc], within_s: float = 30.0) -> None:
    """Fail unless every process in ``procs`` has ended within ``within_s`` seconds, naming those that have not. The
    bound is generous on purpose: a process told to end on a loaded machine (Ray's agents under a busy test run)
    can take seconds to go, and what the tests require is that it goes; the wait ends as soon as all have ended."""
    deadline = time.monotonic() + within_s
    left = alive(procs)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = alive(left)
    assert not left, f"still running {within_s:g} s after the kill: " + "; ".join(
        f"pid {p.pid} (parent was {p.ppid}): {p.command[:160]}" for p in left)


def wait_for_descendants(pid: int, ready: Callable[[list[Proc]], bool], timeout_s: float = 60.0,
                         running: Callable[[], bool] = lambda: True) -> list[Proc]:
    """The descendants of ``pid`` once ``ready(them)`` holds (polled; ``running()`` false ends the wait early)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and running():
        below = descendants(pid)
        if ready(below):
            return below
        time.sleep(0.1)
    seen = [p.command[:80] for p in descendants(pid)]
    raise AssertionError(f"the processes below pid {pid} never became ready: {seen}")
