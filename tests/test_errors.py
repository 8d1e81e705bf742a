"""The HopforgeError family: expected failures become one line and an exit status; anything else is a bug."""

from __future__ import annotations

import pytest
import typer

from flows import cli
from gateway.embeddings import EmbeddingError
from gateway.endpoints import EndpointUnavailable
from schemas.config import ConfigError
from schemas.errors import HopforgeError, InputError, TrainingError, WarehouseError
from tasks.corpus.ingest import IngestError
from tasks.export.datasets import ExportError
from tasks.graph.importers import GraphImportError
from training.plan import TrainingError as PlanTrainingError
from warehouse.db import WarehouseError as DbWarehouseError, WarehouseLockedError


def test_the_project_errors_are_one_family():
    for cls in (ConfigError, IngestError, GraphImportError, ExportError, DbWarehouseError, WarehouseLockedError,
                PlanTrainingError, EndpointUnavailable, EmbeddingError):
        assert issubclass(cls, HopforgeError), cls
    # Re-exports are the same classes, so `except` clauses written against either module agree.
    assert PlanTrainingError is TrainingError and DbWarehouseError is WarehouseError
    # Bad input stays a ValueError for callers that caught that before the family existed.
    assert issubclass(IngestError, ValueError) and issubclass(ConfigError, InputError)


@pytest.mark.parametrize(("error", "status", "label"), [
    (InputError("no graphs in the warehouse"), 2, "error"),
    (ConfigError("roles.generator.max_concurrency: must be at least 1"), 2, "configuration error"),
    (WarehouseLockedError("the warehouse x is locked by process 12"), 2, "warehouse error"),
    (EndpointUnavailable("the embedded model did not start"), 3, "endpoint error"),
    (TrainingError("no export under exports/"), 2, "training error"),
])
def test_cli_maps_each_expected_failure_to_its_line_and_status(capsys, error, status, label):
    def body():
        raise error

    with pytest.raises(typer.Exit) as exit_info:
        cli._run(body)
    assert exit_info.value.exit_code == status
    printed = capsys.readouterr().err
    assert f"{label}: {error}" in " ".join(printed.split())


def test_cli_lets_a_bug_keep_its_traceback():
    # A plain ValueError is a bug, not bad input: it must not be turned into a clean-looking exit status.
    def body():
        raise ValueError("a bug in a stage")

    with pytest.raises(ValueError, match="a bug in a stage"):
        cli._run(body)
