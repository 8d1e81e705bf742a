"""A content digest of an export folder: what the export holds, not the bytes its writer happened to produce.

``tasks.export.datasets`` writes byte-identical files for the same inputs *with the same libraries*, but Parquet bytes
change with the pyarrow that writes them (its version string, page layout, compression), and pyarrow is not pinned.
``export_digest`` therefore hashes every file of an export by its content:

- Parquet (``<config>/<split>-00000-of-00001.parquet``): the column names, their types (rendered without the
  list item names a pyarrow version chooses) and nullability, then every row in written order (the writer sorts by
  id, so the order is the export's own and a change of it is a change of the export) as JSON with sorted keys and
  floats by ``repr``. File-level metadata (the writer's version, the serialised Arrow schema) is left out.
- JSON (``manifest.json``, ``dataset_info.json``) and JSONL: parsed, masked (below) and re-serialised canonically.
- Any other file (the ``README.md`` card, pictures): its bytes, the card's masked fields replaced first.

What is masked, and why; nothing else is, so any other change of content changes the digest:

- ``manifest.json`` ``files[<*.parquet>].sha256`` and ``.bytes``: the hash and size of the Parquet bytes, which
  depend on the pyarrow version (the files' content is digested on its own, row by row).
- ``manifest.json`` ``warehouse_backup.id``, ``.sha256``, ``.created_at`` (only when a backup is named): the id is
  the time of the backup and a random suffix, ``created_at`` that time, and ``sha256`` the DuckDB file's bytes;
  two runs of the same export over the same rows name different backups. ``reason``, ``tables`` and
  ``migration`` are kept.
- ``README.md`` ``evaluation run `<run id>``` (the card section of an evaluation by graph setting): a run id is the
  flow, the time and a random suffix.

Two exports of the same inputs have the same digest in two processes and under two pyarrow versions; the tests keep
a reference of the fixture exports (``tests/fixtures/export_digest.json``, ``tests/test_export_digest.py``).

Command line::

    python -m tasks.export.digest EXPORT_DIR                              # print the digest (JSON)
    python -m tasks.export.digest EXPORT_DIR --check REF.json --name NAME  # compare with entry NAME; exit 1 on change
    python -m tasks.export.digest EXPORT_DIR --write REF.json --name NAME  # set entry NAME of REF.json
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import decimal
import hashlib
import json
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

#: Bump when what the digest covers changes (a reference made under another format cannot be compared).
DIGEST_FORMAT = 1

#: The placeholder a masked value is replaced by.
MASK = "<masked>"

#: ``manifest.json``'s ``warehouse_backup`` fields that name one backup taken at one time (module docstring).
BACKUP_RUN_FIELDS = ("id", "sha256", "created_at")

#: The card's evaluation section names the evaluation's run id (flow, time, random suffix): ``tasks.export.card``.
_CARD_RUN_ID = re.compile(r"(evaluation run `)[^`]*(`)")


# -- canonical forms ----------------------------------------------------------------------------------------------


def type_name(t: pa.DataType) -> str:
    """An Arrow type as a string that does not depend on the pyarrow version: list item names (``item`` or
    ``element``, chosen by the Parquet writer) are left out; struct fields keep their names, order and nullability."""
    if pa.types.is_fixed_size_list(t):
        return f"fixed_size_list<{_field_name(t.value_field, named=False)}, {t.list_size}>"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"list<{_field_name(t.value_field, named=False)}>"
    if pa.types.is_struct(t):
        return "struct<" + ", ".join(_field_name(t.field(i)) for i in range(t.num_fields)) + ">"
    if pa.types.is_map(t):
        return f"map<{type_name(t.key_type)}, {_field_name(t.item_field, named=False)}>"
    if pa.types.is_dictionary(t):
        return type_name(t.value_type)  # dictionary encoding is storage, not content
    return str(t)


def _field_name(f: pa.Field, *, named: bool = True) -> str:
    body = type_name(f.type) + ("" if f.nullable else " not null")
    return f"{f.name}: {body}" if named else body


def _default(value: Any) -> Any:
    """JSON for the values ``to_pylist`` gives that JSON has no type for."""
    if isinstance(value, bytes):
        return {"bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return {"seconds": value.total_seconds()}
    if isinstance(value, decimal.Decimal):
        return str(value)
    raise TypeError(f"no canonical JSON for {type(value).__name__}")


def canonical_json(value: Any) -> bytes:
    """Compact JSON with sorted keys and non-ASCII kept; floats by ``repr`` (``json``'s own)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_default).encode()


def parquet_lines(path: Path) -> Iterator[bytes]:
    """A Parquet file's content as lines: its schema, then each row in written order."""
    table = pq.read_table(path)
    schema = [[f.name, type_name(f.type), f.nullable] for f in table.schema]
    yield b"schema:" + canonical_json(schema)
    yield b"rows:" + str(table.num_rows).encode()
    for batch in table.to_batches(max_chunksize=1024):
        for row in batch.to_pylist():
            yield canonical_json(row)


def mask_manifest(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """``manifest.json`` with its run- and library-specific fields masked (module docstring)."""
    out = json.loads(json.dumps(manifest))
    for name, meta in (out.get("files") or {}).items():
        if name.endswith(".parquet") and isinstance(meta, dict):
            for key in ("sha256", "bytes"):
                if key in meta:
                    meta[key] = MASK
    backup = out.get("warehouse_backup")
    if isinstance(backup, dict) and backup.get("id") is not None:
        for key in BACKUP_RUN_FIELDS:
            if key in backup:
                backup[key] = MASK
    return out


def mask_card(text: str) -> str:
    """The dataset card with the evaluation's run id masked (module docstring)."""
    return _CARD_RUN_ID.sub(rf"\g<1>{MASK}\g<2>", text)


# -- digests --------------------------------------------------------------------------------------------------------


def file_digest(path: Path, rel: str) -> str:
    """The sha256 of one export file's canonical content (``rel``: its path inside the export)."""
    h = hashlib.sha256()
    if rel.endswith(".parquet"):
        for line in parquet_lines(path):
            h.update(line + b"\n")
    elif rel.endswith(".json"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        h.update(canonical_json(mask_manifest(doc) if rel == "manifest.json" else doc))
    elif rel.endswith(".jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                h.update(canonical_json(json.loads(line)) + b"\n")
    elif rel == "README.md":
        h.update(mask_card(path.read_text(encoding="utf-8")).encode("utf-8"))
    else:
        h.update(path.read_bytes())
    return h.hexdigest()


def export_digest(export_dir: str | Path) -> dict[str, Any]:
    """``{"format": DIGEST_FORMAT, "files": {relative path: sha256}, "total": sha256}`` of an export folder; hidden
    paths (a writer's temporary folders) are left out, as ``verify_export`` leaves them."""
    root = Path(export_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"no export folder at {root}")
    files = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and not any(part.startswith(".") for part in rel.split("/")):
            files[rel] = file_digest(p, rel)
    total = hashlib.sha256("".join(f"{k}\t{v}\n" for k, v in sorted(files.items())).encode()).hexdigest()
    return {"format": DIGEST_FORMAT, "files": files, "total": total}


def compare(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
    """What differs between two digests, one line per file (``changed``, ``missing``, ``new``); ``[]`` when equal."""
    if expected.get("format") != actual.get("format"):
        return [f"digest format {expected.get('format')} in the reference, {actual.get('format')} now"]
    exp, act = expected.get("files", {}), actual.get("files", {})
    lines = [f"changed: {k}" for k in sorted(set(exp) & set(act)) if exp[k] != act[k]]
    lines += [f"missing: {k} (in the reference, not in the export)" for k in sorted(set(exp) - set(act))]
    lines += [f"new: {k} (in the export, not in the reference)" for k in sorted(set(act) - set(exp))]
    if not lines and expected.get("total") != actual.get("total"):
        lines.append("total differs")
    return lines


def read_reference(path: str | Path) -> dict[str, Any]:
    """A reference file (``{"exports": {name: digest}}``); an empty one when the file does not exist."""
    p = Path(path)
    return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else {"exports": {}}


def write_reference(path: str | Path, name: str, digest: Mapping[str, Any], about: str | None = None) -> None:
    """Set entry ``name`` of the reference file at ``path`` (other entries kept), written with sorted keys."""
    ref = read_reference(path)
    ref.setdefault("exports", {})[name] = dict(digest)
    if about:
        ref["about"] = about
    Path(path).write_text(json.dumps(ref, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tasks.export.digest",
                                     description="Content digest of an export folder (tasks.export.digest).")
    parser.add_argument("export_dir")
    parser.add_argument("--name", default="export", help="the entry of the reference file (default: export)")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--check", metavar="REF", help="compare with entry --name of this reference file")
    action.add_argument("--write", metavar="REF", help="set entry --name of this reference file")
    args = parser.parse_args(argv)
    digest = export_digest(args.export_dir)
    if args.write:
        write_reference(args.write, args.name, digest)
        print(f"{args.write}: {args.name} = {digest['total']} ({len(digest['files'])} files)")
        return 0
    if args.check:
        expected = read_reference(args.check).get("exports", {}).get(args.name)
        if expected is None:
            print(f"{args.check} has no entry {args.name!r}", file=sys.stderr)
            return 1
        problems = compare(expected, digest)
        for line in problems:
            print(line)
        print(f"{args.name}: " + ("differs from the reference" if problems else "matches the reference"))
        return 1 if problems else 0
    print(json.dumps(digest, indent=2, sort_keys=True))
    return 0


__all__ = [
    "DIGEST_FORMAT",
    "MASK",
    "compare",
    "export_digest",
    "file_digest",
    "mask_card",
    "mask_manifest",
    "parquet_lines",
    "read_reference",
    "type_name",
    "write_reference",
]


if __name__ == "__main__":
    sys.exit(main())
