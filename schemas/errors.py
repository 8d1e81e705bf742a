"""The expected failures of hopforge: one family, so the CLI can tell them from bugs.

An expected failure is something a person can fix (a bad parameter or input file, a configuration mistake, a
locked warehouse, an endpoint that is down); it is raised as a ``HopforgeError`` subclass with a message that says
what to do, and the CLI prints that one line and exits with the class's ``exit_code``. Anything else is a bug and
keeps its traceback.

This module sits in ``schemas`` because every other package already imports ``schemas`` and nothing below it, so
any package can raise these without importing upward.

Exit statuses of the ``hopforge`` command (the README's "Exit statuses" lists them too; the bad-input suite in
``tests/reliability`` checks every case against them):

====== =====================================================================================================
status meaning
====== =====================================================================================================
0      done; inputs skipped on the way (a bad corpus row, a bad graph row) are listed with file:line and reason
1      a bug: Python's traceback is printed. Also ``doctor`` with a failed check and ``graph build`` when every
       domain failed (each failure is printed)
2      something the person can fix, one paragraph naming the input and the fix: ``InputError`` (a parameter,
       an input file, a missing prerequisite), ``ConfigError``, ``WarehouseError`` (locked, damaged, not a
       DuckDB file, a query that is not one SELECT), ``TrainingError``; also the command line's own usage
       errors (an unknown option, ``--seeds abc``)
3      ``EndpointError``: a model endpoint cannot be reached or started; the same command may work later
130    interrupted (Ctrl-C)
====== =====================================================================================================

Errors about bad input also derive from ``ValueError`` (and the warehouse's from ``RuntimeError``) because that is
what they were before the family existed; callers that caught those keep working.
"""

from __future__ import annotations


class HopforgeError(Exception):
    """An expected failure, worded for a person."""

    exit_code = 2  # the person can fix it; 1 stays Python's own status for a bug's traceback
    label = "error"


class InputError(HopforgeError, ValueError):
    """A parameter, input file or missing prerequisite (no graphs yet, no questions yet...)."""

    exit_code = 2


class ConfigError(InputError):
    """The configuration (file, environment, overrides) is not valid."""

    label = "configuration error"


class WarehouseError(HopforgeError, RuntimeError):
    """The warehouse cannot be opened or used as asked."""

    exit_code = 2
    label = "warehouse error"


class EndpointError(HopforgeError, RuntimeError):
    """A model endpoint (LLM or embedder) cannot be reached or started."""

    exit_code = 3  # not the caller's mistake: the same command may work once the endpoint is back
    label = "endpoint error"


class TrainingError(HopforgeError):
    """A training run cannot be planned or launched as asked."""

    exit_code = 2
    label = "training error"


__all__ = ["ConfigError", "EndpointError", "HopforgeError", "InputError", "TrainingError", "WarehouseError"]
