"""Prints the reliability suite's figures (bad input, kill -9 and resume) as tables at the end of the session."""

from __future__ import annotations

from tests.reliability.harness import figures_table, kill_table


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001 - pytest's hook signature
    lines = figures_table() + kill_table()
    if not lines:
        return
    terminalreporter.section("hopforge reliability figures")
    for line in lines:
        terminalreporter.write_line(line)
