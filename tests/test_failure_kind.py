"""Resuming generation decides on ``qa_attempts.failure_kind``, not on the wording of ``judge_reason``."""

from __future__ import annotations

from types import SimpleNamespace

from tasks.qa.generate import _failure_kind
from warehouse.db import Warehouse
from warehouse.migrations import MIGRATIONS


def _row(attempt_id: str, **kw):
    return {"attempt_id": attempt_id, "domain": "cs", "seed": "a", "hop_class": "1-2", "mode": "free", "attempt": 1,
            "path": [], "question": "", "answer": "", "verdicts": [], "status": "rejected", **kw}


def test_migration_backfills_the_kind_the_old_text_rule_meant():
    wh = Warehouse(migrate=False)
    before = [m for m in MIGRATIONS if m.name != "failure_kind"]
    wh.migrate([m for m in before if m.number < 17])
    wh.write("qa_attempts", [
        _row("lost-generator", reject_reason="llm_error", raw_text=None, judge_reason="role generator: cannot connect"),
        _row("lost-judge", reject_reason="llm_error", raw_text="{}", judge_reason="judge unavailable: timeout"),
        _row("bad-output", reject_reason="llm_error", raw_text="not json", judge_reason="no valid qa_generation"),
        _row("judged", reject_reason="judge_invalid", raw_text="{}", judge_reason="two questions"),
    ])
    wh.migrate()
    kinds = {r["attempt_id"]: r["failure_kind"] for r in wh.query("SELECT attempt_id, failure_kind FROM qa_attempts")}
    assert kinds == {"lost-generator": "endpoint_unavailable", "lost-judge": "endpoint_unavailable",
                     "bad-output": "validation", "judged": None}


def test_failure_kind_of_a_generator_reply():
    failure = lambda kind: SimpleNamespace(kind=kind)  # noqa: E731
    assert _failure_kind(SimpleNamespace(failure=failure("connection"), raw="")) == "connection"
    assert _failure_kind(SimpleNamespace(failure=failure("validation"), raw="{bad")) == "validation"
    # no text at all is treated as lost to the endpoint: a re-run tries the job again
    assert _failure_kind(SimpleNamespace(failure=failure("empty"), raw="")) == "endpoint_unavailable"
    # parsed fine but picked a path id the job did not offer
    assert _failure_kind(SimpleNamespace(failure=None, raw='{"path_id": "P9"}')) == "validation"
