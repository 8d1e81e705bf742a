"""What an export holds, compared with a committed reference (``tests/fixtures/export_digest.json``), so a change of
the export's code that changes its content is caught (issue #36). The exports are those the export tests already
build, from the same fixtures: ``plain`` (``tests/test_export.py``: every config, an invalid row left out, a question
without a split) and ``ikg`` (``tests/test_ikg_export.py``: IKG-20%/40% variants, a domain without a corpus).
Contents, not bytes, are compared (``tasks.export.digest``): Parquet bytes depend on the pyarrow version.

When a change of an export is intended, regenerate the reference and commit it with the change:

    make export-digest        # these tests and the demo's with EXPORT_DIGEST_UPDATE=1: they write the entries

The demo's export is checked in ``tests/test_demo_programs.py`` (entry ``demo``, on the ``demo_run`` fixture that
module builds anyway); ``make export-digest`` writes that entry too.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import tests.test_export as export_tests
import tests.test_ikg_export as ikg_tests
from tasks.export.digest import compare, export_digest, main, read_reference, write_reference

# The export tests' fixtures, reused as they are (assigned, so pytest finds them in this module too).
records, settings, warehouse = export_tests.records, export_tests.settings, export_tests.warehouse
exported = ikg_tests.exported

REFERENCE = Path(__file__).resolve().parent / "fixtures" / "export_digest.json"
#: Set to 1 to write the reference instead of comparing with it (``make export-digest``).
UPDATE_ENV = "EXPORT_DIGEST_UPDATE"
REGENERATE = "make export-digest"
ABOUT = (f"Content digests of the test fixtures' exports (tasks.export.digest, tests/test_export_digest.py). "
         f"Regenerate after an intended change of the export: {REGENERATE}")


def check_reference(export_dir: str | Path, name: str) -> None:
    """Assert the export's digest equals entry ``name`` of the reference; with ``EXPORT_DIGEST_UPDATE=1``, write it."""
    digest = export_digest(export_dir)
    if os.environ.get(UPDATE_ENV) == "1":
        write_reference(REFERENCE, name, digest, about=ABOUT)
        return
    expected = read_reference(REFERENCE).get("exports", {}).get(name)
    assert expected is not None, f"{REFERENCE} has no entry {name!r}; make it with: {REGENERATE}"
    problems = compare(expected, digest)
    assert not problems, (
        f"the {name!r} export's content differs from {REFERENCE.name}:\n  " + "\n  ".join(problems)
        + f"\nIf the change is intended, regenerate the reference and commit it: {REGENERATE}")


def test_the_plain_fixture_export_matches_the_reference(warehouse):
    check_reference(export_tests.run_export(warehouse)["path"], "plain")


def test_the_ikg_fixture_export_matches_the_reference(exported):
    check_reference(exported["path"], "ikg")


# -- the digest itself ----------------------------------------------------------------------------------------------

_SCHEMA = pa.schema([("id", pa.string()), ("score", pa.float64()), ("tags", pa.list_(pa.string())),
                     ("n", pa.int64())])  # fmt: skip
_ROWS = [{"id": "a", "score": 0.1, "tags": ["x"], "n": 1}, {"id": "b", "score": None, "tags": [], "n": 2}]
_CARD = "# hopforge dataset v1\n\nThe policy (evaluation run `eval-20240101-000000-abc123`) on the complete graph.\n"


def _folder(root: Path, rows=_ROWS, schema=_SCHEMA, *, backup_id: str = "warehouse-20240101-000000-aaaaaa",
            run_id: str = "eval-20240101-000000-abc123", **parquet_options) -> Path:
    """A small export folder: one Parquet table, a manifest naming a backup, a card naming an evaluation run."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "qa").mkdir(exist_ok=True)
    data = root / "qa" / "train-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), data, **parquet_options)
    manifest = {
        "version": "v1", "rows": {"qa": {"train": len(rows)}},
        "files": {"qa/train-00000-of-00001.parquet": {"sha256": hashlib.sha256(data.read_bytes()).hexdigest(),
                                                      "rows": len(rows), "bytes": data.stat().st_size},
                  "README.md": {"sha256": "c" * 64, "bytes": 10}},
        "warehouse_backup": {"id": backup_id, "sha256": backup_id[::-1], "created_at": backup_id[10:], "migration": 7,
                             "tables": ["qa"]},
    }  # fmt: skip
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2))
    (root / "README.md").write_text(_CARD.replace("eval-20240101-000000-abc123", run_id))
    return root


def test_the_digest_ignores_what_is_masked_and_sees_a_changed_cell(tmp_path):
    base = export_digest(_folder(tmp_path / "base"))
    assert set(base["files"]) == {"README.md", "manifest.json", "qa/train-00000-of-00001.parquet"}
    # Other Parquet bytes (writer options, as another pyarrow writes other bytes), another backup and evaluation run:
    # the same content
    other = _folder(tmp_path / "other", compression="none", use_dictionary=False, row_group_size=1,
                    backup_id="warehouse-20250505-121212-bbbbbb", run_id="eval-20250505-121212-def456")
    assert (other / "qa" / "train-00000-of-00001.parquet").read_bytes() != (
        tmp_path / "base" / "qa" / "train-00000-of-00001.parquet").read_bytes()
    assert export_digest(other) == base
    # A changed cell, float, type, row order or unmasked field is a change, named by file
    changes = {
        "cell": _folder(tmp_path / "cell", [{**_ROWS[0], "id": "A"}, _ROWS[1]]),
        "float": _folder(tmp_path / "float", [{**_ROWS[0], "score": 0.1 + 1e-15}, _ROWS[1]]),
        "list": _folder(tmp_path / "list", [{**_ROWS[0], "tags": ["x", "y"]}, _ROWS[1]]),
        "type": _folder(tmp_path / "type", schema=_SCHEMA.set(3, pa.field("n", pa.int32()))),
        "order": _folder(tmp_path / "order", list(reversed(_ROWS))),
    }
    for what, folder in changes.items():
        digest = export_digest(folder)
        assert digest["total"] != base["total"], what
        assert compare(base, digest)[0] == "changed: qa/train-00000-of-00001.parquet", what
    card = _folder(tmp_path / "card")
    (card / "README.md").write_text(_CARD.replace("complete graph", "whole graph"))
    assert compare(base, export_digest(card)) == ["changed: README.md"]
    manifest = _folder(tmp_path / "manifest")
    doc = json.loads((manifest / "manifest.json").read_text())
    doc["warehouse_backup"]["migration"] = 8
    (manifest / "manifest.json").write_text(json.dumps(doc))
    assert compare(base, export_digest(manifest)) == ["changed: manifest.json"]
    (manifest / "extra.json").write_text("{}")
    (manifest / "README.md").unlink()
    assert compare(base, export_digest(manifest)) == [
        "changed: manifest.json", "missing: README.md (in the reference, not in the export)",
        "new: extra.json (in the export, not in the reference)"]  # fmt: skip


def test_the_command_writes_and_checks_a_reference(tmp_path, capsys):
    folder = _folder(tmp_path / "export")
    ref = tmp_path / "ref.json"
    assert main([str(folder), "--write", str(ref), "--name", "small"]) == 0
    assert read_reference(ref)["exports"]["small"] == export_digest(folder)
    assert main([str(folder), "--check", str(ref), "--name", "small"]) == 0
    (folder / "README.md").write_text("changed\n")
    assert main([str(folder), "--check", str(ref), "--name", "small"]) == 1
    assert "changed: README.md" in capsys.readouterr().out
    assert main([str(folder), "--check", str(ref), "--name", "other"]) == 1
