"""Graph snapshots in and out of the warehouse (the records are checked and hashed by ``tasks.graph.store``).

- **Snapshots are content-addressed and written in one transaction.** Writing content that is already stored
  adds no rows: it marks that snapshot as written now, which makes it the domain's current one again (view
  ``current_graph_snapshots``).
- **Bulk writes go through Arrow.** Records become ``pyarrow`` tables registered in DuckDB and copied with one
  ``INSERT ... SELECT`` per table: row-by-row ``executemany`` takes minutes for a 500k-edge graph.
- **A graph is read once per snapshot per process** (``load_graph``): a snapshot id is a hash of its content,
  so a cached graph never goes stale.
- **A writer can join the caller's transaction** (``con``): a graph build lands its snapshots, merge log,
  near-duplicate report and build row together, or none of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, overload

import duckdb
import pyarrow as pa

from schemas.errors import InputError
from schemas.graph import Entity, EntityMerge, GraphSnapshot, GraphSource, NearDuplicate, Relation
from schemas.graph_build import BuildUsage, DomainBuildResult
from tasks.graph.importers import GraphImport
from tasks.graph.kg import KnowledgeGraph, cached_graph
from tasks.graph.store import check_records, gc_paused, make_snapshot_id, snapshot_content_hash
from warehouse.db import Warehouse

if TYPE_CHECKING:
    from gateway.usage import RoleUsage


class SnapshotNotFoundError(InputError, LookupError):
    """The domain has no graph snapshot, or not the one named: a prerequisite to build or import first."""


# -- warehouse writes ----------------------------------------------------------------------------------------------
_LIST = pa.list_(pa.string())


@contextmanager
def _transaction(wh: Warehouse, con: duckdb.DuckDBPyConnection | None) -> Iterator[duckdb.DuckDBPyConnection]:
    """The caller's open transaction ``con``, or a transaction of its own."""
    if con is not None:
        yield con
        return
    with wh.transaction() as own:
        yield own


def _entity_table(entities: Sequence[Entity]) -> pa.Table:
    return pa.table(
        {
            "name": pa.array([e.name for e in entities], pa.string()),
            "type": pa.array([e.type for e in entities], pa.string()),
            "description": pa.array([e.description for e in entities], pa.string()),
            "source_chunk_ids": pa.array([e.source_chunk_ids for e in entities], _LIST),
            "file_paths": pa.array([e.file_paths for e in entities], _LIST),
        }
    )


def _relation_table(relations: Sequence[Relation]) -> pa.Table:
    return pa.table(
        {
            "source": pa.array([r.source for r in relations], pa.string()),
            "target": pa.array([r.target for r in relations], pa.string()),
            "relation": pa.array([r.relation for r in relations], pa.string()),
            "keywords": pa.array([r.keywords for r in relations], _LIST),
            "description": pa.array([r.description for r in relations], pa.string()),
            "weight": pa.array([float(r.weight) for r in relations], pa.float64()),
            "source_chunk_ids": pa.array([r.source_chunk_ids for r in relations], _LIST),
            "directed": pa.array([bool(r.directed) for r in relations], pa.bool_()),
        }
    )


_SNAPSHOT_COLS = (
    "snapshot_id, domain, content_hash, n_nodes, n_edges, directed, source, build_run_id, created_at, written_at"
)


def write_snapshot(
    wh: Warehouse,
    domain: str,
    entities: Sequence[Entity],
    relations: Sequence[Relation],
    *,
    source: GraphSource,
    build_run_id: str | None,
    directed: bool,
    merges: Sequence[EntityMerge] = (),
    con: duckdb.DuckDBPyConnection | None = None,
) -> GraphSnapshot:
    """Store one graph snapshot of ``domain`` in a single transaction (``con``: the caller's) and return it.

    The records must pass ``check_records`` (nothing is written otherwise). When the domain already holds this
    content (same ``snapshot_content_hash``), no rows are added: the existing snapshot is marked as written now
    (so it is the current one) and returned; its ``source`` and ``build_run_id`` stay those of its first write.
    ``merges`` (entity-resolution log records that produced these records) are stored in the same transaction
    with ``to_snapshot_id`` set to this snapshot.
    """
    entities = list(entities)
    relations = list(relations)
    with gc_paused():
        check_records(domain, entities, relations, directed=directed)
        content_hash = snapshot_content_hash(entities, relations, directed=directed)
    snapshot_id = make_snapshot_id(domain, content_hash)
    now = datetime.now()
    with _transaction(wh, con) as con:
        found = con.execute(
            f"SELECT {_SNAPSHOT_COLS} FROM graph_snapshots WHERE domain = ? AND content_hash = ?",
            [domain, content_hash],
        ).fetchone()
        if found is not None:
            con.execute("UPDATE graph_snapshots SET written_at = ? WHERE snapshot_id = ?", [now, found[0]])
            snapshot = GraphSnapshot(**dict(zip(_SNAPSHOT_COLS.split(", "), found, strict=True)))
            snapshot = snapshot.model_copy(update={"written_at": now})
        else:
            snapshot = GraphSnapshot(
                snapshot_id=snapshot_id,
                domain=domain,
                content_hash=content_hash,
                n_nodes=len(entities),
                n_edges=len(relations),
                directed=directed,
                source=source,
                build_run_id=build_run_id,
                created_at=now,
                written_at=now,
            )
            con.execute(
                f"INSERT INTO graph_snapshots ({_SNAPSHOT_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [getattr(snapshot, c) for c in _SNAPSHOT_COLS.split(", ")],
            )
            # Registered Arrow tables are scanned by DuckDB in bulk; the names are private to this connection and
            # unregistered before the transaction ends.
            with gc_paused():
                entity_table, relation_table = _entity_table(entities), _relation_table(relations)
            con.register("_hf_entities", entity_table)
            con.register("_hf_relations", relation_table)
            try:
                con.execute(
                    "INSERT INTO entities SELECT ?, ?, name, type, description, source_chunk_ids, file_paths "
                    "FROM _hf_entities",
                    [snapshot_id, domain],
                )
                con.execute(
                    "INSERT INTO relations SELECT ?, ?, source, target, relation, keywords, description, weight, "
                    "source_chunk_ids, directed FROM _hf_relations",
                    [snapshot_id, domain],
                )
            finally:
                for view in ("_hf_entities", "_hf_relations"):
                    try:
                        con.unregister(view)
                    except duckdb.TransactionException:  # a failed insert aborted the transaction: the rollback
                        pass  # ends it, and the next register replaces the view; the insert's own error goes on
        if merges:
            log = [m.model_copy(update={"to_snapshot_id": snapshot.snapshot_id}) for m in merges]
            wh.write_batch("entity_merges", log, con=con)
    return snapshot


def write_near_duplicates(wh: Warehouse, pairs: Sequence[NearDuplicate],
                          con: duckdb.DuckDBPyConnection | None = None) -> int:
    """Append a near-duplicate report (one transaction, ``con``: the caller's); return how many rows."""
    return wh.write_batch("entity_near_duplicates", pairs, con=con)


# -- warehouse reads -----------------------------------------------------------------------------------------------
def _snapshot_from_row(row: Mapping[str, Any]) -> GraphSnapshot:
    return GraphSnapshot(**{c: row[c] for c in _SNAPSHOT_COLS.split(", ")})


def current_snapshot(wh: Warehouse, domain: str) -> GraphSnapshot | None:
    """The domain's current snapshot (written last), or ``None`` when it has none."""
    rows = wh.query(f"SELECT {_SNAPSHOT_COLS} FROM current_graph_snapshots WHERE domain = ?", [domain])
    return _snapshot_from_row(rows[0]) if rows else None


def current_snapshots(wh: Warehouse, domains: Sequence[str] | None = None) -> list[GraphSnapshot]:
    """The current snapshot of every domain that has a graph (or of each of ``domains``: ``InputError`` naming
    those without one), by domain."""
    rows = wh.query(f"SELECT {_SNAPSHOT_COLS} FROM current_graph_snapshots ORDER BY domain")
    snaps = [_snapshot_from_row(r) for r in rows]
    if not domains:
        return snaps
    missing = set(domains) - {s.domain for s in snaps}
    if missing:
        raise InputError(f"no graph for domain(s) {sorted(missing)}: build or import them first")
    return [s for s in snaps if s.domain in set(domains)]


def list_snapshots(wh: Warehouse, domain: str) -> list[GraphSnapshot]:
    """Every snapshot of ``domain``, most recently written first."""
    rows = wh.query(
        f"SELECT {_SNAPSHOT_COLS} FROM graph_snapshots WHERE domain = ? "
        "ORDER BY written_at DESC, created_at DESC, snapshot_id DESC",
        [domain],
    )
    return [_snapshot_from_row(r) for r in rows]


def get_snapshot(wh: Warehouse, domain: str, snapshot_id: str | None = None) -> GraphSnapshot:
    """The named snapshot of ``domain`` (the current one when ``snapshot_id`` is None); ``SnapshotNotFoundError`` if none."""
    if snapshot_id is None:
        snap = current_snapshot(wh, domain)
        if snap is None:
            raise SnapshotNotFoundError(f"domain {domain!r} has no graph snapshot in the warehouse: build or import one "
                                        "first (`hopforge graph build` or `hopforge graph import`)")
        return snap
    rows = wh.query(f"SELECT {_SNAPSHOT_COLS} FROM graph_snapshots WHERE snapshot_id = ?", [snapshot_id])
    if not rows or rows[0]["domain"] != domain:
        raise SnapshotNotFoundError(f"no graph snapshot {snapshot_id!r} for domain {domain!r}")
    return _snapshot_from_row(rows[0])


@overload
def read_snapshot(
    wh: Warehouse, domain: str, snapshot_id: str | None = None, *, tables: Literal[False] = False
) -> tuple[GraphSnapshot, list[Entity], list[Relation]]: ...


@overload
def read_snapshot(
    wh: Warehouse, domain: str, snapshot_id: str | None = None, *, tables: Literal[True]
) -> tuple[GraphSnapshot, pa.Table, pa.Table]: ...


def read_snapshot(
    wh: Warehouse, domain: str, snapshot_id: str | None = None, *, tables: bool = False
) -> tuple[GraphSnapshot, Any, Any]:
    """A snapshot and its records: entities sorted by name, relations by (source, target, relation, directed).

    Records are rebuilt with their validating constructors: pydantic's ``model_construct`` skips validation but
    is slower than validating these flat models. ``tables``: the records as the two Arrow tables DuckDB reads
    (columns in ``Entity``'s and ``Relation``'s field order, less the domain; relations in no set order), no
    record made (the tool server's cold start reads them as columns: ``tasks.env.served.GraphColumns.from_tables``).
    """
    snap = get_snapshot(wh, domain, snapshot_id)
    with wh._lock:  # the connection is shared; hold the warehouse's lock like its own readers do
        ent = wh.con.sql(
            "SELECT name, type, description, source_chunk_ids, file_paths FROM entities WHERE snapshot_id = ? "
            "ORDER BY name",
            params=[snap.snapshot_id],
        ).to_arrow_table()
        rel = wh.con.sql(
            "SELECT source, target, relation, keywords, description, weight, source_chunk_ids, directed "
            "FROM relations WHERE snapshot_id = ?" + ("" if tables else " ORDER BY source, target, relation, directed"),
            params=[snap.snapshot_id],
        ).to_arrow_table()
    if tables:
        return snap, ent, rel
    with gc_paused():
        return snap, *_records_from_tables(domain, ent, rel)


def _records_from_tables(domain: str, ent: pa.Table, rel: pa.Table) -> tuple[list[Entity], list[Relation]]:
    make_entity = Entity
    entities = [
        make_entity(domain=domain, name=n, type=t, description=d, source_chunk_ids=c, file_paths=f)
        for n, t, d, c, f in zip(*(ent.column(i).to_pylist() for i in range(ent.num_columns)), strict=True)
    ]
    make_relation = Relation
    relations = [
        make_relation(
            domain=domain, source=s, target=t, relation=lb, keywords=k, description=d, weight=w,
            source_chunk_ids=c, directed=dr,
        )
        for s, t, lb, k, d, w, c, dr in zip(*(rel.column(i).to_pylist() for i in range(rel.num_columns)), strict=True)
    ]  # fmt: skip
    return entities, relations


def load_graph(wh: Warehouse, domain: str, snapshot_id: str | None = None) -> KnowledgeGraph:
    """The domain's graph: the current snapshot, or the one named. Read and built once per snapshot per process
    (``tasks.graph.kg.cached_graph``)."""
    snap = get_snapshot(wh, domain, snapshot_id)

    def build() -> KnowledgeGraph:
        found, entities, relations = read_snapshot(wh, domain, snap.snapshot_id)
        return KnowledgeGraph(domain, entities, relations, directed=found.directed, snapshot_id=found.snapshot_id)

    return cached_graph(snap.snapshot_id, build)


def write_import(wh: Warehouse, imported: GraphImport, *, build_run_id: str | None) -> GraphSnapshot:
    """Store an imported file's records as a snapshot of its domain (``write_snapshot``)."""
    return write_snapshot(
        wh, imported.domain, imported.entities, imported.relations, source=imported.source,
        build_run_id=build_run_id, directed=imported.directed,
    )  # fmt: skip


# -- graph builds -----------------------------------------------------------------------------------------------
def write_build(
    wh: Warehouse,
    result: DomainBuildResult,
    run_id: str,
    snapshot_id: str | None,
    usage: BuildUsage | RoleUsage | Mapping[str, Any] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> None:
    """Store one build's row in ``graph_builds`` and its failures in ``graph_build_failures``, in one transaction
    (``con``: the caller's).

    ``usage`` defaults to the build's own count (``result.usage``); a gateway ``RoleUsage`` or a mapping with
    ``calls``/``llm_calls``, ``cache_hits``, ``prompt_tokens``, ``completion_tokens`` is accepted too. Writing the
    same (run, domain) again replaces its rows.
    """
    u = _usage_fields(result.usage if usage is None else usage)
    row = {
        "run_id": run_id,
        "domain": result.domain,
        "docs_total": result.docs_total,
        "docs_processed": result.docs_processed,
        "docs_failed": result.docs_failed,
        "chunks": result.chunks,
        "entities": len(result.entities),
        "relations": len(result.relations),
        "snapshot_id": snapshot_id,
        "seconds": result.seconds,
        **u,
    }
    failures = [
        {"run_id": run_id, "domain": result.domain, "doc_id": f.doc_id, "reason": f.reason, "file_path": f.file_path}
        for f in result.failures
    ]
    with _transaction(wh, con) as con:
        con.execute("DELETE FROM graph_build_failures WHERE run_id = ? AND domain = ?", [run_id, result.domain])
        con.execute("DELETE FROM graph_builds WHERE run_id = ? AND domain = ?", [run_id, result.domain])
        wh.write_batch("graph_builds", [row], con=con)
        wh.write_batch("graph_build_failures", failures, con=con)


def _usage_fields(usage: BuildUsage | RoleUsage | Mapping[str, Any]) -> dict[str, int]:
    if isinstance(usage, BuildUsage):
        data: Mapping[str, Any] = usage.model_dump()
    elif isinstance(usage, Mapping):
        data = usage
    else:  # gateway.usage.RoleUsage
        data = {k: getattr(usage, k) for k in ("calls", "cache_hits", "prompt_tokens", "completion_tokens")}
    calls = data.get("llm_calls", data.get("calls", 0))
    return {
        "llm_calls": int(calls or 0),
        "cache_hits": int(data.get("cache_hits") or 0),
        "prompt_tokens": int(data.get("prompt_tokens") or 0),
        "completion_tokens": int(data.get("completion_tokens") or 0),
    }
