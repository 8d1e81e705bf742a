"""Graph records: the conversions every graph source shares, the snapshot invariants and the content hash.

Pure functions over records; storing and reading snapshots is ``warehouse.graphs``.

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
"""

from __future__ import annotations

import gc
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Literal

import networkx as nx

from schemas.errors import InputError
from schemas.graph import UNKNOWN_TYPE, Entity, Relation

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
