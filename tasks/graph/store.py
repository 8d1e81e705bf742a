"""Graph records in and out of the warehouse, and the conversions every graph source shares.

Record conventions are those of ``schemas/graph.py``. The decisions that live here:

- **LightRAG's ``<SEP>`` fields are split.** ``source_id`` becomes ``source_chunk_ids`` (the placeholder
  ``"UNKNOWN"`` dropped), ``file_path`` becomes ``file_paths``, ``keywords`` are split on ``<SEP>`` and commas,
  and a ``description`` made of several ``<SEP>`` parts becomes one string with the parts joined by ``"\\n"``
  (blank and repeated parts dropped, first-seen order). A string, not a list, because every consumer renders
  descriptions into prompts and tool results; the newline keeps the parts readable there. LightRAG writes the
  description ``"UNKNOWN"`` on nodes it creates for a relation endpoint nobody described: that is read as ``""``.
- **A snapshot's records are canonical:** entity names unique, every relation endpoint an entity, one domain,
  no two relations with the same ``Relation.key()``, and no directed relation in an undirected graph.
  ``check_records`` enforces it before anything is written; ``merge_duplicate_relations`` is how a caller
  folds duplicates first.
- **Snapshots are content-addressed and written in one transaction.** ``snapshot_content_hash`` does not depend
  on record order (nor on the stored orientation of an undirected relation); ``snapshot_id`` is
  ``f"{domain}-{hash[:16]}"``. Writing content that is already stored adds no rows: it marks that snapshot as
  written now, which makes it the domain's current one again (view ``current_graph_snapshots``).
- **Bulk writes go through Arrow.** Records become ``pyarrow`` tables registered in DuckDB and copied with one
  ``INSERT ... SELECT`` per table: row-by-row ``executemany`` takes minutes for a 500k-edge graph.
"""

from __future__ import annotations

import gc
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Literal

import networkx as nx
import pyarrow as pa

from schemas.errors import InputError
from schemas.graph import UNKNOWN_TYPE, Entity, EntityMerge, GraphSnapshot, GraphSource, NearDuplicate, Relation
from warehouse.db import Warehouse

#: LightRAG's separator between merged values of one field.
SEP = "<SEP>"
#: LightRAG's placeholder for an unknown chunk id / description.
LIGHTRAG_UNKNOWN = "UNKNOWN"

#: Bumped whenever the canonical form hashed by ``snapshot_content_hash`` changes.
_HASH_VERSION = "hopforge-graph-v1"


class GraphRecordsError(InputError):
    """Graph records that break a snapshot invariant; the message names the offending records."""


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small objects.

    Records hold no reference cycles, yet every few hundred allocations the collector walks the growing heap:
    on a 500k-edge graph that is a third of the import time. Reference counting still frees everything; the
    previous state is restored on exit.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# -- field conversions ----------------------------------------------------------------------------------------
def split_sep(value: Any, *, drop: frozenset[str] = frozenset()) -> list[str]:
    """Split a ``<SEP>``-joined field into stripped, non-empty, unique parts in first-seen order.

    ``None`` gives ``[]``; a list is taken part by part (each part may itself hold ``<SEP>``); values in
    ``drop`` are left out.
    """
    if value is None:
        return []
    raw = value if isinstance(value, (list, tuple)) else [value]
    out: list[str] = []
    seen: set[str] = set()
    for item in raw:
        for part in str(item).split(SEP):
            part = part.strip()
            if part and part not in seen and part not in drop:
                seen.add(part)
                out.append(part)
    return out


def split_keywords(value: Any) -> list[str]:
    """Keywords from LightRAG's comma-separated (and possibly ``<SEP>``-merged) string, or from a list."""
    return _unique(p.strip() for part in split_sep(value) for p in part.split(",") if p.strip())


def join_descriptions(parts: Iterable[str | None]) -> str:
    """One description from several: each split on ``<SEP>`` and newlines, blanks and repeats dropped, joined
    with ``"\\n"`` in first-seen order. LightRAG's ``"UNKNOWN"`` placeholder counts as blank."""
    out: list[str] = []
    seen: set[str] = set()
    for text in parts:
        if not text:
            continue
        for piece in str(text).split(SEP):
            for line in piece.split("\n"):
                line = line.strip()
                if line and line != LIGHTRAG_UNKNOWN and line not in seen:
                    seen.add(line)
                    out.append(line)
    return "\n".join(out)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def entity_from_attrs(name: str, attrs: Mapping[str, Any], domain: str) -> Entity:
    """An ``Entity`` from a node's LightRAG-style attributes (``entity_type``, ``description``, ``source_id``,
    ``file_path``; ``type`` and ``source_chunk_ids`` are accepted too, as this module writes them)."""
    etype = attrs.get("entity_type", attrs.get("type"))
    etype = str(etype).strip() if etype is not None else ""
    chunk_field = attrs.get("source_id", attrs.get("source_chunk_ids"))
    return Entity(
        domain=domain,
        name=name,
        type=etype or UNKNOWN_TYPE,
        description=join_descriptions([attrs.get("description")]),
        source_chunk_ids=split_sep(chunk_field, drop=frozenset({LIGHTRAG_UNKNOWN})),
        file_paths=split_sep(attrs.get("file_path", attrs.get("file_paths"))),
    )


def relation_from_attrs(source: str, target: str, attrs: Mapping[str, Any], domain: str, directed: bool) -> Relation:
    """A ``Relation`` from an edge's LightRAG-style attributes (``weight``, ``description``, ``keywords``,
    ``source_id``, and the optional ``relation`` label this module writes on export)."""
    weight = attrs.get("weight")
    if weight in (None, ""):
        weight = 1.0
    try:
        weight = float(weight)
    except (TypeError, ValueError):
        raise ValueError(f"weight {weight!r} is not a number") from None
    label = attrs.get("relation")
    return Relation(
        domain=domain,
        source=source,
        target=target,
        relation=str(label).strip() if label is not None else "",
        keywords=split_keywords(attrs.get("keywords")),
        description=join_descriptions([attrs.get("description")]),
        weight=weight,
        source_chunk_ids=split_sep(
            attrs.get("source_id", attrs.get("source_chunk_ids")), drop=frozenset({LIGHTRAG_UNKNOWN})
        ),
        directed=directed,
    )


def records_from_networkx(G: nx.Graph, domain: str) -> tuple[list[Entity], list[Relation]]:
    """Split a networkx graph in LightRAG's attribute format into records.

    Node keys are entity names (an ``entity_id`` attribute, as LightRAG writes, is the same string). Every edge
    of a multigraph becomes its own relation, so parallel relations survive. Relations are directed exactly
    when ``G`` is; a per-edge ``directed`` attribute (as ``KnowledgeGraph.to_networkx`` writes) overrides that.
    Identical facts (same ``Relation.key()``) are folded with ``merge_duplicate_relations(weight="max")``.
    Entities come sorted by name; relations in edge order.
    """
    graph_directed = G.is_directed()
    entities = [entity_from_attrs(str(n), attrs, domain) for n, attrs in G.nodes(data=True)]
    entities.sort(key=lambda e: e.name)
    edges = G.edges(keys=False, data=True) if G.is_multigraph() else G.edges(data=True)
    relations = []
    for u, v, attrs in edges:
        directed = attrs.get("directed", graph_directed)
        if isinstance(directed, str):
            directed = directed.strip().lower() == "true"
        relations.append(relation_from_attrs(str(u), str(v), attrs, domain, bool(directed)))
    return entities, merge_duplicate_relations(relations, weight="max")


# -- merging ----------------------------------------------------------------------------------------------------
def merge_relation_group(group: Sequence[Relation], *, weight: Literal["sum", "max"]) -> Relation:
    """Fold relations that are one fact (same ``key()``) into the first: keywords, descriptions and chunk ids
    united in order, weights summed (independent evidence, as LightRAG does) or maxed (the same fact seen again,
    as when a triple file repeats a row)."""
    if not group:
        raise ValueError("merge_relation_group needs at least one relation")
    first = group[0]
    if len(group) == 1:
        return first
    total = sum(r.weight for r in group) if weight == "sum" else max(r.weight for r in group)
    return first.model_copy(
        update={
            "keywords": _unique(k for r in group for k in r.keywords),
            "description": join_descriptions(r.description for r in group),
            "weight": total,
            "source_chunk_ids": _unique(c for r in group for c in r.source_chunk_ids),
        }
    )


def merge_duplicate_relations(
    relations: Iterable[Relation], *, weight: Literal["sum", "max"] = "sum"
) -> list[Relation]:
    """Relations with duplicates (same ``Relation.key()``) folded by ``merge_relation_group``; order of first
    occurrence is kept."""
    groups: dict[tuple[str, str, str, bool], list[Relation]] = {}
    for r in relations:
        groups.setdefault(r.key(), []).append(r)
    return [merge_relation_group(g, weight=weight) for g in groups.values()]


# -- invariants and hashing --------------------------------------------------------------------------------------
def check_records(domain: str, entities: Sequence[Entity], relations: Sequence[Relation], *, directed: bool) -> None:
    """Raise ``GraphRecordsError`` unless the records form one canonical graph of ``domain`` (see module doc)."""
    problems: list[str] = []
    names: set[str] = set()
    dup_names: list[str] = []
    for e in entities:
        if e.domain != domain:
            problems.append(f"entity {e.name!r} belongs to domain {e.domain!r}, not {domain!r}")
            break
        if e.name in names:
            dup_names.append(e.name)
        names.add(e.name)
    if dup_names:
        problems.append(f"{len(dup_names)} duplicate entity name(s), e.g. {dup_names[:5]}")
    missing: list[str] = []
    keys: set[tuple[str, str, str, bool]] = set()
    dup_keys: list[tuple[str, str, str, bool]] = []
    wrong_dir: list[tuple[str, str]] = []
    for r in relations:
        if r.domain != domain:
            problems.append(f"relation {r.source!r}->{r.target!r} belongs to domain {r.domain!r}, not {domain!r}")
            break
        for end in (r.source, r.target):
            if end not in names:
                missing.append(end)
        k = r.key()
        if k in keys:
            dup_keys.append(k)
        keys.add(k)
        if r.directed and not directed:
            wrong_dir.append((r.source, r.target))
    if missing:
        problems.append(f"{len(missing)} relation endpoint(s) are not entities, e.g. {sorted(set(missing))[:5]}")
    if dup_keys:
        problems.append(
            f"{len(dup_keys)} duplicate relation(s) (same source, target, label, direction), e.g. {dup_keys[:3]}; "
            "fold them with merge_duplicate_relations"
        )
    if wrong_dir:
        problems.append(f"{len(wrong_dir)} directed relation(s) in an undirected graph, e.g. {wrong_dir[:3]}")
    if problems:
        raise GraphRecordsError(f"graph records for domain {domain!r} are not a valid graph: " + "; ".join(problems))


def _canonical(fields: Sequence[str | list[str]]) -> bytes:
    """An unambiguous byte string for a record's fields.

    Fast path: fields joined by U+001F, list items by U+001E after their count. Text holding either control
    character (practically never) takes the JSON form instead; the leading "F"/"J" keeps the two forms apart.
    Four times faster than ``json.dumps`` per record, which matters at 600k records per snapshot.
    """
    parts: list[str] = []
    list_seps = 0  # U+001E the fast form itself puts in; any more come from the values
    for x in fields:
        if isinstance(x, str):
            parts.append(x)
        else:
            parts.append(f"{len(x)}\x1e" + "\x1e".join(x))
            list_seps += max(len(x), 1)
    text = "\x1f".join(parts)
    if text.count("\x1f") != len(fields) - 1 or text.count("\x1e") != list_seps:
        return b"J" + json.dumps(list(fields), ensure_ascii=False).encode("utf-8", "surrogatepass")
    return b"F" + text.encode("utf-8", "surrogatepass")


def _digest(fields: Sequence[str | list[str]]) -> bytes:
    return hashlib.blake2b(_canonical(fields), digest_size=16).digest()


def snapshot_content_hash(
    entities: Iterable[Entity], relations: Iterable[Relation], *, directed: bool | None = None
) -> str:
    """sha256 hex digest of the graph content, independent of record order.

    Each record is hashed on its content fields (not its domain); an undirected relation is hashed with its
    ends sorted, so the stored orientation does not matter. The per-record digests are sorted and hashed
    together with ``directed`` (when given), so the same graph read in another order hashes the same.
    """
    with gc_paused():
        digests = [_digest(["e", e.name, e.type, e.description, e.source_chunk_ids, e.file_paths]) for e in entities]
        for r in relations:
            a, b = (r.source, r.target) if r.directed or r.source <= r.target else (r.target, r.source)
            digests.append(
                _digest(
                    ["r", a, b, r.relation, r.keywords, r.description, repr(float(r.weight)), r.source_chunk_ids,
                     "1" if r.directed else "0"]
                )
            )  # fmt: skip
        digests.sort()
    h = hashlib.sha256(f"{_HASH_VERSION}\ndirected={directed}\n".encode())
    for d in digests:
        h.update(d)
    return h.hexdigest()


def make_snapshot_id(domain: str, content_hash: str) -> str:
    """The id of the snapshot holding ``content_hash`` in ``domain``."""
    return f"{domain}-{content_hash[:16]}"


# -- warehouse writes ----------------------------------------------------------------------------------------------
_LIST = pa.list_(pa.string())


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
) -> GraphSnapshot:
    """Store one graph snapshot of ``domain`` in a single transaction and return it.

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
    with wh.transaction() as con:
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
                con.unregister("_hf_entities")
                con.unregister("_hf_relations")
        if merges:
            log = [m.model_copy(update={"to_snapshot_id": snapshot.snapshot_id}) for m in merges]
            wh.write_batch("entity_merges", log, con=con)
    return snapshot


def write_entity_merges(wh: Warehouse, merges: Sequence[EntityMerge]) -> int:
    """Append entity-resolution log records (one transaction); return how many."""
    return wh.write_batch("entity_merges", merges)


def write_near_duplicates(wh: Warehouse, pairs: Sequence[NearDuplicate]) -> int:
    """Append a near-duplicate report (one transaction); return how many rows."""
    return wh.write_batch("entity_near_duplicates", pairs)


# -- warehouse reads -----------------------------------------------------------------------------------------------
def _snapshot_from_row(row: Mapping[str, Any]) -> GraphSnapshot:
    return GraphSnapshot(**{c: row[c] for c in _SNAPSHOT_COLS.split(", ")})


def current_snapshot(wh: Warehouse, domain: str) -> GraphSnapshot | None:
    """The domain's current snapshot (written last), or ``None`` when it has none."""
    rows = wh.query(f"SELECT {_SNAPSHOT_COLS} FROM current_graph_snapshots WHERE domain = ?", [domain])
    return _snapshot_from_row(rows[0]) if rows else None


def list_snapshots(wh: Warehouse, domain: str) -> list[GraphSnapshot]:
    """Every snapshot of ``domain``, most recently written first."""
    rows = wh.query(
        f"SELECT {_SNAPSHOT_COLS} FROM graph_snapshots WHERE domain = ? "
        "ORDER BY written_at DESC, created_at DESC, snapshot_id DESC",
        [domain],
    )
    return [_snapshot_from_row(r) for r in rows]


def get_snapshot(wh: Warehouse, domain: str, snapshot_id: str | None = None) -> GraphSnapshot:
    """The named snapshot of ``domain`` (the current one when ``snapshot_id`` is None); ``LookupError`` if none."""
    if snapshot_id is None:
        snap = current_snapshot(wh, domain)
        if snap is None:
            raise LookupError(f"domain {domain!r} has no graph snapshot in the warehouse: build or import one first")
        return snap
    rows = wh.query(f"SELECT {_SNAPSHOT_COLS} FROM graph_snapshots WHERE snapshot_id = ?", [snapshot_id])
    if not rows or rows[0]["domain"] != domain:
        raise LookupError(f"no graph snapshot {snapshot_id!r} for domain {domain!r}")
    return _snapshot_from_row(rows[0])


def read_snapshot(
    wh: Warehouse, domain: str, snapshot_id: str | None = None
) -> tuple[GraphSnapshot, list[Entity], list[Relation]]:
    """A snapshot and its records: entities sorted by name, relations by (source, target, relation, directed).

    Records are rebuilt with their validating constructors: pydantic's ``model_construct`` skips validation but
    is slower than validating these flat models.
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
            "FROM relations WHERE snapshot_id = ? ORDER BY source, target, relation, directed",
            params=[snap.snapshot_id],
        ).to_arrow_table()
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
