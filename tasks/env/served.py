"""``ServedGraph``: one domain graph held as flat arrays for the tool server, with its node_info replies.

A ``KnowledgeGraph`` keeps every entity and relation as Python objects (networkx dictionaries, pydantic
records, ``EdgeData`` views): about 8 KB per entity on the benchmark graph, and a server that pre-renders
node_info replies held as much again. The tools only read the graph, so the server holds it as arrays instead:

- every string (names, types, descriptions, labels, keywords, chunk ids) once, interned, in one UTF-8 blob with
  an offsets array;
- entities and relations as columns of string ids, weights and flags;
- each entity's neighbour relations as compressed sparse rows, already in ``KnowledgeGraph.neighbors`` order
  (neighbour, relation, direction as seen from the entity), so a relation list is a slice;
- the normalised-name index (``normalize_name`` key -> entity ids, best first) as sorted keys and rows;
- the node_info reply body (``{"rendered_content": ...}`` as JSON bytes) of every entity, rendered once.

The arrays are written once per snapshot, embedder and format to a directory of ``.npy`` files under the
data dir's index folder (``cache_dir(...)``) and memory-mapped read-only: a restarted server opens them in a
fraction of a second, the forked workers share the operating system's one copy of the pages, and a reply is
bytes sliced out of the mapping. Its ``meta.json`` records the snapshot it was built from (id and content hash,
checked against the warehouse's snapshot table on load: a cache of other content is rebuilt) and the hash of the
entity texts the entity matrix embeds (``text_fingerprint``), so a warm start finds the matrix's cache file
without making a million entity texts only to hash them. ``EdgeData`` and ``Entity`` objects are made on demand, only for the
entities a call touches (a bounded memo keeps the busiest ones), and carry the same values as the
``KnowledgeGraph`` the arrays were built from: every tool text is byte-identical
(``tests/test_served_graph.py``).

Contract: the read-only interface the tools and IKG views use (``nodes``, ``entity``, ``entities``,
``neighbors``, ``neighbor_names``, ``relations_between``, ``has_edge``, ``edge``, ``degree``, ``lookup``,
``lookup_all``, ``__contains__``, ``__len__``, ``domain``, ``directed``, ``snapshot_id``, ``n_nodes``,
``n_edges``), with the same results as ``KnowledgeGraph``. Graph algorithms (paths, balls, subgraphs) are not
offered: the factory's flows use ``KnowledgeGraph``.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator
from itertools import chain
from operator import attrgetter
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import orjson

from schemas.graph import Entity
from tasks.graph.kg import EdgeData, KnowledgeGraph, normalize_name
from tasks.graph.store import gc_paused

#: Bumped whenever the layout of the files or what they hold changes: caches of another format are rebuilt.
#: 2: ``meta.json`` holds the snapshot's content hash and the entity texts' hash.
SERVED_FORMAT_VERSION = 2

#: The ``max_text_chars`` of the entity texts whose hash a cache records (``GraphIndex``'s default).
FINGERPRINT_TEXT_CHARS = 1000

log = logging.getLogger(__name__)

#: Relation views the neighbour memo keeps worked out, over every entity it holds (least recently used out).
NEIGHBOR_MEMO_RELATIONS = 50_000
#: Only entities with at least this many relations are memoised: a small entity's views take microseconds to
#: make, a hub's milliseconds.
NEIGHBOR_MEMO_MIN = 64

_DIRECTIONS: tuple[str, ...] = ("out", "undirected", "in")
_DIRECTION_CODE = {d: i for i, d in enumerate(_DIRECTIONS)}

#: The arrays of one served graph (every file of the cache directory but ``meta.json``).
_ARRAYS = (
    "strings", "string_offsets",
    "entity_type", "entity_description", "entity_chunk_ptr", "entity_chunks", "entity_file_ptr", "entity_files",
    "degree",
    "rel_source", "rel_target", "rel_label", "rel_kw_ptr", "rel_kw", "rel_description", "rel_weight",
    "rel_directed", "rel_chunk_ptr", "rel_chunks",
    "nbr_ptr", "nbr_node", "nbr_rel", "nbr_dir",
    "norm_keys", "norm_ptr", "norm_ids",
    "reply_blob", "reply_offsets",
)  # fmt: skip


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "x"


def limits_key(limits: Any) -> str:
    """A short hash of the render limits the node_info replies were rendered with (part of the cache key)."""
    return hashlib.sha256(json.dumps(asdict(limits), sort_keys=True).encode()).hexdigest()[:12]


def cache_dir(root: str | Path, snapshot_id: str, embedder_name: str, dim: int, limits: Any) -> Path:
    """Where a snapshot's served arrays live: ``<root>/<snapshot>__<embedder>-<dim>__served-v<N>-<limits>``.

    Keyed by the snapshot (content-addressed: a changed graph is a new snapshot), the embedder the server
    pairs them with, the format version, and the render limits of the pre-rendered replies."""
    return Path(root) / (
        f"{_slug(snapshot_id)}__{_slug(embedder_name)}-{dim}__served-v{SERVED_FORMAT_VERSION}-{limits_key(limits)}"
    )


def _ragged(lengths: np.ndarray) -> np.ndarray:
    """The row pointer (int64, one more than rows) of rows of ``lengths``."""
    ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    return ptr


def _offsets_within(ptr: np.ndarray) -> np.ndarray:
    """For every item of rows ``ptr``, its position within its row."""
    total = int(ptr[-1])
    return np.arange(total, dtype=np.int64) - np.repeat(ptr[:-1], np.diff(ptr))


def _string_table(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The UTF-8 blob of ``strings`` one after another, and its offsets (int64, one more than strings)."""
    joined = "".join(strings)
    if joined.isascii():  # one byte per character: the lengths are the byte lengths
        lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
        data = joined.encode("ascii")
    else:
        encoded = [s.encode("utf-8") for s in strings]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        data = b"".join(encoded)
    return np.frombuffer(data, dtype=np.uint8), _ragged(lengths)  # read-only, as the cache is mapped


def _neighbor_order(graph_directed: bool, views: list[EdgeData], src: np.ndarray, tgt: np.ndarray,
                    directed_rel: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every relation at every entity in ``KnowledgeGraph.neighbors`` order, as arrays ``(entity, neighbour,
    direction code, relation)`` (relation: its position in ``views``), sorted by entity.

    A relation is listed at its source and, unless a self-loop, at its target: in a directed graph a directed one is
    ``"in"`` there (the reverse edge's relations, which ``relations_between`` lists after the forward ones), an
    undirected one ``"undirected"`` at both ends. Within an entity: by neighbour, then ``EdgeData._sort_key``
    (direction, label, description, source). The first three already tell any two relations at one entity apart:
    a graph's relation keys (source, target, label, direction; ends sorted when undirected) are unique
    (``check_records``), so two relations between the same pair with the same direction seen from one end carry
    different labels."""
    m = len(views)
    labels = [d.relation for d in views]
    label_rank = {label: i for i, label in enumerate(sorted(set(labels)))}
    lab = np.fromiter(map(label_rank.__getitem__, labels), dtype=np.int64, count=m)
    stored = np.where(directed_rel, _DIRECTION_CODE["out"], _DIRECTION_CODE["undirected"]).astype(np.int64)
    other = src != tgt
    if graph_directed:
        back_dir = np.where(directed_rel, _DIRECTION_CODE["in"], _DIRECTION_CODE["undirected"]).astype(np.int64)
    else:  # one edge holds a pair's relations, read the same from either end
        back_dir = stored
    view = np.arange(m, dtype=np.int64)
    ent = np.concatenate([src, tgt[other]])
    nb = np.concatenate([tgt, src[other]])
    dirs = np.concatenate([stored, back_dir[other]])
    rel = np.concatenate([view, view[other]])
    order = np.lexsort((lab[rel], dirs, nb, ent))
    return ent[order], nb[order], dirs[order], rel[order]


class GraphColumns:
    """A snapshot's records as columns: what ``build_arrays`` reads of a graph, and what a cold ``GraphIndex``
    build reads (``nodes``, ``entity_texts``), without a ``KnowledgeGraph`` (pydantic records, networkx
    adjacency) in between: the tool server's cold start makes it from the warehouse's Arrow tables
    (``from_tables``), which at a million entities saved the records' validation and the graph's build.

    Entities in name order (``names``, ``types``, ``descriptions``, ``chunk_ids``, ``file_paths``: one item per
    entity), and every relation once as stored (``views``, direction ``"out"`` or ``"undirected"``); their order
    does not change the arrays (``build_arrays`` sorts them). ``from_graph`` reads the same columns from a
    ``KnowledgeGraph``."""

    def __init__(self, domain: str, directed: bool, snapshot_id: str | None, names: list[str], types: list[str],
                 descriptions: list[str], chunk_ids: list[Any], file_paths: list[Any], views: list[EdgeData]) -> None:
        self.domain, self.directed, self.snapshot_id = domain, directed, snapshot_id
        self.names, self.types, self.descriptions = names, types, descriptions
        self.chunk_ids, self.file_paths, self.views = chunk_ids, file_paths, views
        self._ends: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @classmethod
    def from_graph(cls, graph: KnowledgeGraph) -> GraphColumns:
        with gc_paused():
            entities = graph.entities()  # sorted by name
            return cls(graph.domain, graph.directed, graph.snapshot_id, [e.name for e in entities],
                       [e.type for e in entities], [e.description for e in entities],
                       [e.source_chunk_ids for e in entities], [e.file_paths for e in entities],
                       graph.relation_views())  # fmt: skip

    @classmethod
    def from_tables(cls, domain: str, directed: bool, snapshot_id: str | None, entities: Any,
                    relations: Any) -> GraphColumns:
        """The columns of the warehouse's ``entities`` table (name, type, description, source_chunk_ids,
        file_paths) and ``relations`` table (source, target, relation, keywords, description, weight,
        source_chunk_ids, directed) as Arrow tables (``warehouse.graphs.read_snapshot(..., tables=True)``), checked
        as ``KnowledgeGraph`` checks its records (``check_columns``)."""
        with gc_paused():
            names, types, descs, chunks, files = (entities.column(i).to_pylist() for i in range(5))
            if any(b <= a for a, b in zip(names, names[1:])):  # not in Python's order (or repeated names)
                order = sorted(range(len(names)), key=names.__getitem__)
                names, types, descs, chunks, files = ([col[i] for i in order]
                                                      for col in (names, types, descs, chunks, files))
            cols = [relations.column(i).to_pylist() for i in range(8)]
            views = [EdgeData(s, t, lb, tuple(k), d, float(w), dr, tuple(c), "out" if dr else "undirected")
                     for s, t, lb, k, d, w, c, dr in zip(*cols, strict=True)]  # fmt: skip
            del cols
        found = cls(domain, directed, snapshot_id, names, types, descs, chunks, files, views)
        found._ends = _table_ends(names, relations)
        check_columns(found)
        return found

    def relation_ends(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each relation's (``views``) source and target as entity rows, -1 for a name that is no entity, and
        whether it is directed."""
        if self._ends is None:
            self._ends = _relation_ends(self.names, self.views)
        return self._ends

    @property
    def n_edges(self) -> int:
        return len(self.views)

    def __len__(self) -> int:
        return len(self.names)

    def nodes(self) -> list[str]:
        """Every entity name, sorted."""
        return list(self.names)

    def entity_texts(self, max_chars: int) -> list[str]:
        """Every entity's ``tasks.env.index.entity_text``, in name order (what a cold index embeds)."""
        from tasks.env.index import entity_text

        return [entity_text(name, desc, max_chars) for name, desc in zip(self.names, self.descriptions)]

    def text_fingerprint(self, max_chars: int) -> str | None:
        """None: no hash is recorded for these texts (``GraphIndex`` hashes them)."""
        return None


def check_columns(cols: GraphColumns) -> None:
    """``GraphRecordsError`` unless the columns form one graph, as ``tasks.graph.store.check_records`` has it: names
    unique, every relation end an entity, no two relations with one key (source, target, label, direction; ends
    sorted when undirected), no directed relation in an undirected graph. In array operations over the columns."""
    from tasks.graph.store import GraphRecordsError

    problems: list[str] = []
    names = cols.names
    dup = [a for a, b in zip(names, names[1:]) if a == b]  # the names are sorted
    if dup:
        problems.append(f"{len(dup)} duplicate entity name(s), e.g. {dup[:5]}")
    src, tgt, directed = cols.relation_ends()
    missing = np.flatnonzero((src < 0) | (tgt < 0))
    if len(missing):
        known = set(names)
        ends = [end for i in missing.tolist() for end in (cols.views[i].source, cols.views[i].target)
                if end not in known]
        problems.append(f"{len(ends)} relation endpoint(s) are not entities, e.g. {sorted(set(ends))[:5]}")
    elif cols.views:
        lo, hi = np.where(directed, src, np.minimum(src, tgt)), np.where(directed, tgt, np.maximum(src, tgt))
        labels = [d.relation for d in cols.views]
        rank = {label: i for i, label in enumerate(set(labels))}
        lab = np.fromiter(map(rank.__getitem__, labels), dtype=np.int64, count=len(labels))
        keys = np.stack([lo, hi, lab, directed.astype(np.int64)], axis=1)[np.lexsort((directed, lab, hi, lo))]
        repeated = int(np.count_nonzero((keys[1:] == keys[:-1]).all(axis=1)))
        if repeated:
            problems.append(f"{repeated} duplicate relation(s) (same source, target, label, direction)")
        if not cols.directed and directed.any():
            problems.append(f"{int(directed.sum())} directed relation(s) in an undirected graph")
    if problems:
        raise GraphRecordsError(f"graph records for domain {cols.domain!r} are not a valid graph: " + "; ".join(problems))


def build_arrays(graph: KnowledgeGraph | GraphColumns, limits: Any, content_hash: str | None = None,
                 processes: int = 1) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays and metadata of ``graph``'s served form, node_info replies rendered with ``limits``; ``graph`` a
    ``KnowledgeGraph`` or its ``GraphColumns`` (the same arrays either way).

    Built over all entities and relations at once (sorts and offsets, no per-entity lookups in the graph): the
    relations at each entity in ``graph.neighbors`` order, relation ids in the order an entity-by-entity walk of
    those lists first meets them, string ids in the order that walk first meets each string (the entity names
    first: string id i is entity i), each reply the text ``render_node_info`` gives (``node_info_text`` over the
    same ``relation_line`` parts). ``tests/test_served_build.py`` checks the arrays against such a walk.
    ``content_hash`` (the snapshot's, from the warehouse) is recorded in the metadata, with the hash of the entity
    texts an index embeds (``tasks.env.index.text_fingerprint``). ``processes`` 2: half the replies are rendered in a
    forked process (the tool server's cold start, in its arrays writer)."""
    from tasks.env.index import text_fingerprint
    from tasks.env.tools import node_info_text, relation_head, relation_tail

    cols = graph if isinstance(graph, GraphColumns) else GraphColumns.from_graph(graph)
    with gc_paused():
        names, views = cols.names, cols.views
        n = len(names)
        src, tgt, directed_rel = cols.relation_ends()
        ent, nb, dirs, rel = _neighbor_order(cols.directed, views, src, tgt, directed_rel)
        nbr_ptr, degree = _neighbor_rows(ent, nb, n)
        by_rid, nbr_rel, introduced_by = _relation_ids(ent, rel, len(views))
        rel_views = [views[j] for j in by_rid.tolist()]
        walk_list, layout = _walk(cols, rel_views, introduced_by)
        key_list, norm_ptr, norm_ids = _name_index(names, degree)
        arrays: dict[str, np.ndarray] = {}
        arrays["strings"], arrays["string_offsets"], codes, norm_keys = _intern(names, walk_list, key_list)
        del walk_list
        ent_codes, rel_codes = codes[layout.pos_ent], codes[layout.pos_rel]
        del codes
        arrays.update(_entity_columns(ent_codes, layout))
        arrays["degree"] = degree
        arrays.update(_relation_columns(rel_codes, layout, rel_views, src[by_rid], tgt[by_rid], directed_rel[by_rid]))
        del ent_codes, rel_codes
        arrays["nbr_ptr"] = nbr_ptr
        arrays["nbr_node"] = nb.astype(np.int32)
        arrays["nbr_rel"] = nbr_rel.astype(np.int32)
        arrays["nbr_dir"] = dirs.astype(np.int8)
        arrays["norm_keys"], arrays["norm_ptr"], arrays["norm_ids"] = norm_keys, norm_ptr, norm_ids
        arrays["reply_blob"], arrays["reply_offsets"] = _replies(
            cols, rel_views, arrays["rel_weight"], nbr_ptr, nb, nbr_rel, degree, limits, node_info_text,
            relation_head, relation_tail, processes)  # fmt: skip
        texts = cols.entity_texts(FINGERPRINT_TEXT_CHARS)
    meta = {
        "format": SERVED_FORMAT_VERSION, "domain": cols.domain, "directed": cols.directed,
        "snapshot_id": cols.snapshot_id, "entities": n, "relations": cols.n_edges,
        "limits": limits_key(limits), "content_hash": content_hash,
        "text_fingerprints": {_fingerprint_key(FINGERPRINT_TEXT_CHARS): text_fingerprint(texts)},
    }  # fmt: skip
    return arrays, meta


def _relation_ends(names: list[str], views: list[EdgeData]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each relation's source and target as entity rows (positions in ``names``; -1 for a name not there) and
    whether it is directed."""
    row = {name: i for i, name in enumerate(names)}
    m = len(views)
    src = np.fromiter((row.get(x, -1) for x in map(attrgetter("source"), views)), dtype=np.int64, count=m)
    tgt = np.fromiter((row.get(x, -1) for x in map(attrgetter("target"), views)), dtype=np.int64, count=m)
    directed_rel = np.fromiter(map(attrgetter("directed"), views), dtype=np.bool_, count=m)
    return src, tgt, directed_rel


def _table_ends(names: list[str], relations: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_relation_ends`` of the warehouse's relations table (``GraphColumns.from_tables``), by Arrow's hash lookup
    (``pyarrow.compute.index_in``) instead of a dictionary of a million names."""
    import pyarrow as pa
    import pyarrow.compute as pc

    m = relations.num_rows
    ends = pa.chunked_array([*relations.column(0).chunks, *relations.column(1).chunks], type=pa.string())
    rows = pc.index_in(ends, value_set=pa.array(names, type=pa.string())).fill_null(-1).to_numpy()
    rows = rows.astype(np.int64, copy=False)
    directed = relations.column(7).to_numpy().astype(np.bool_)
    return rows[:m], rows[m:], directed


def _neighbor_rows(ent: np.ndarray, nb: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The row pointer of each entity's relations in the neighbour order (``_neighbor_order``'s ``ent`` and
    ``nb``), and each entity's degree: the number of distinct neighbours it has."""
    nbr_ptr = _ragged(np.bincount(ent, minlength=n))
    new_pair = np.ones(len(ent), dtype=bool)
    if len(ent) > 1:
        new_pair[1:] = (ent[1:] != ent[:-1]) | (nb[1:] != nb[:-1])
    degree = np.bincount(ent[new_pair], minlength=n).astype(np.int32)
    return nbr_ptr, degree


def _relation_ids(ent: np.ndarray, rel: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Relation ids, in the order the walk of the neighbour order (``ent``, ``rel``) first meets each of the ``m``
    relations: ``(by_rid, nbr_rel, introduced_by)``, the relation (position in the views) of each id, the id of
    each listed relation, and the entity whose walk meets each id first (non-decreasing)."""
    first_seen = np.unique(rel, return_index=True)[1] if m else np.zeros(0, dtype=np.int64)
    by_rid = np.argsort(first_seen, kind="stable")  # rid -> position in views
    rid_of = np.empty(m, dtype=np.int64)
    rid_of[by_rid] = np.arange(m, dtype=np.int64)
    return by_rid, rid_of[rel], ent[first_seen[by_rid]]


class _WalkLayout(NamedTuple):
    """Where each entity's and each relation's strings lie in the walk (``_walk``): entity i's parts (type,
    description, chunk ids, file paths) are rows ``ent_ptr`` of its entity part, at walk positions ``pos_ent``;
    relation rid's (label, keywords, description, chunk ids) rows ``rel_ptr`` of its relation part, at ``pos_rel``."""

    ent_ptr: np.ndarray
    ent_len: np.ndarray
    ent_chunk_n: np.ndarray
    rel_ptr: np.ndarray
    rel_len: np.ndarray
    rel_kw_n: np.ndarray
    pos_ent: np.ndarray
    pos_rel: np.ndarray


def _walk(cols: GraphColumns, rel_views: list[EdgeData],
          introduced_by: np.ndarray) -> tuple[list[str], _WalkLayout]:
    """The strings in the walk's order, and where each entity's and relation's lie: per entity its type,
    description, chunk ids, file paths, then the label, keywords, description and chunk ids of each relation it
    meets first (``rel_views`` in relation id order, ``introduced_by`` from ``_relation_ids``)."""
    n, m = len(cols.names), len(rel_views)
    ent_parts = [(t, d, *c, *f) for t, d, c, f in zip(cols.types, cols.descriptions, cols.chunk_ids, cols.file_paths)]
    ent_chunk_n = np.fromiter(map(len, cols.chunk_ids), dtype=np.int64, count=n)
    ent_len = np.fromiter(map(len, ent_parts), dtype=np.int64, count=n)
    rel_parts = [(d.relation, *d.keywords, d.description, *d.source_chunk_ids) for d in rel_views]
    rel_kw_n = np.fromiter(map(len, map(attrgetter("keywords"), rel_views)), dtype=np.int64, count=m)
    rel_len = np.fromiter(map(len, rel_parts), dtype=np.int64, count=m)
    ent_ptr, rel_ptr = _ragged(ent_len), _ragged(rel_len)
    rids_before = _ragged(np.bincount(introduced_by, minlength=n))[:-1]  # rids met before entity i
    pos_ent = np.arange(int(ent_ptr[-1]), dtype=np.int64) + np.repeat(rel_ptr[rids_before], ent_len)
    pos_rel = np.arange(int(rel_ptr[-1]), dtype=np.int64) + np.repeat(ent_ptr[introduced_by + 1], rel_len)
    walk = np.empty(len(pos_ent) + len(pos_rel), dtype=object)
    walk[pos_ent] = list(chain.from_iterable(ent_parts))
    walk[pos_rel] = list(chain.from_iterable(rel_parts))
    del ent_parts, rel_parts
    layout = _WalkLayout(ent_ptr, ent_len, ent_chunk_n, rel_ptr, rel_len, rel_kw_n, pos_ent, pos_rel)
    return walk.tolist(), layout


def _name_index(names: list[str], degree: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The normalised-name index: its keys (sorted), and the rows of entity ids under each (``norm_ptr``,
    ``norm_ids``), most neighbours first, then name order. A name with no key is not in it."""
    n = len(names)
    keys = [normalize_name(name) for name in names]
    key_list = sorted(set(keys) - {""})
    key_rank = {k: i for i, k in enumerate(key_list)}
    key_rank[""] = -1  # no key: not in the index
    krank = np.fromiter(map(key_rank.__getitem__, keys), dtype=np.int64, count=n)
    key_rows = np.flatnonzero(krank >= 0)
    krank = krank[key_rows]
    norm_order = np.lexsort((key_rows, -degree[key_rows].astype(np.int64), krank))
    norm_ids = key_rows[norm_order].astype(np.int32)
    norm_ptr = _ragged(np.bincount(krank, minlength=len(key_list)))
    return key_list, norm_ptr, norm_ids


def _intern(names: list[str], walk_list: list[str],
            key_list: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The strings interned in first-seen order over the names, the walk, then the normalised keys, by Arrow's
    dictionary encoding (its dictionary holds each distinct string once, in the order first met): the UTF-8 blob
    and offsets of the strings (``_string_table``'s), the string id of each walk position, and of each key."""
    import pyarrow as pa

    n, w = len(names), len(walk_list)
    if not n + w + len(key_list):
        blob, offsets = _string_table([])
        return blob, offsets, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
    encoded = pa.array(names + walk_list + key_list, type=pa.large_string()).dictionary_encode()
    ids = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
    strings = encoded.dictionary
    _, offsets_buf, data_buf = strings.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[strings.offset : strings.offset + len(strings) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
    blob = data[int(offsets[0]) : int(offsets[-1])]
    return blob, offsets - offsets[0], ids[n : n + w], ids[n + w :]


def _entity_columns(ent_codes: np.ndarray, layout: _WalkLayout) -> dict[str, np.ndarray]:
    """The entity columns from the string ids of the entity parts of the walk (``ent_codes``)."""
    ent_ptr, ent_len, ent_chunk_n = layout.ent_ptr, layout.ent_len, layout.ent_chunk_n
    at = _offsets_within(ent_ptr)
    in_chunks = np.repeat(ent_chunk_n, ent_len)
    return {
        "entity_type": ent_codes[ent_ptr[:-1]],
        "entity_description": ent_codes[ent_ptr[:-1] + 1],
        "entity_chunk_ptr": _ragged(ent_chunk_n),
        "entity_chunks": ent_codes[(at >= 2) & (at < 2 + in_chunks)],
        "entity_file_ptr": _ragged(ent_len - 2 - ent_chunk_n),
        "entity_files": ent_codes[at >= 2 + in_chunks],
    }


def _relation_columns(rel_codes: np.ndarray, layout: _WalkLayout, rel_views: list[EdgeData], src: np.ndarray,
                      tgt: np.ndarray, directed: np.ndarray) -> dict[str, np.ndarray]:
    """The relation columns, in relation id order, from the string ids of the relation parts of the walk
    (``rel_codes``), the relations' views and their ends and directedness (``src``, ``tgt``, ``directed``)."""
    rel_ptr, rel_len, rel_kw_n = layout.rel_ptr, layout.rel_len, layout.rel_kw_n
    at = _offsets_within(rel_ptr)
    in_kw = np.repeat(rel_kw_n, rel_len)
    return {
        "rel_source": src.astype(np.int32),
        "rel_target": tgt.astype(np.int32),
        "rel_label": rel_codes[rel_ptr[:-1]],
        "rel_kw_ptr": _ragged(rel_kw_n),
        "rel_kw": rel_codes[(at >= 1) & (at <= in_kw)],
        "rel_description": rel_codes[rel_ptr[:-1] + 1 + rel_kw_n],
        "rel_weight": np.fromiter(map(attrgetter("weight"), rel_views), dtype=np.float64, count=len(rel_views)),
        "rel_directed": directed,
        "rel_chunk_ptr": _ragged(rel_len - 2 - rel_kw_n),
        "rel_chunks": rel_codes[at >= 2 + in_kw],
    }


def _replies(cols: GraphColumns, rel_views: list[EdgeData], weights: np.ndarray, nbr_ptr: np.ndarray,
             nbr_node: np.ndarray, nbr_rel: np.ndarray, degree: np.ndarray, limits: Any, node_info_text: Any,
             relation_head: Any, relation_tail: Any, processes: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Every entity's node_info reply body (``{"rendered_content": ...}`` as JSON bytes) and their offsets: the
    part of a relation line after its arrow made once per relation, the rest per listed relation. ``processes``
    2: the second half of the entities is rendered in a forked process at the same time (``_in_two``)."""
    cap = limits.neighbors
    tails = [relation_tail(d, limits) for d in rel_views]
    names, types, descriptions = cols.names, cols.types, cols.descriptions
    ptr, nodes, rels, degrees = nbr_ptr.tolist(), nbr_node.tolist(), nbr_rel.tolist(), degree.tolist()
    dumps = orjson.dumps

    def render(first: int, stop: int) -> tuple[bytes, np.ndarray]:
        replies: list[bytes] = []
        for i in range(first, stop):
            lo, hi = ptr[i], ptr[i + 1]
            count, left = hi - lo, 0
            shown: Any = range(lo, hi)
            if count > cap:  # ``_cap_relations``: the strongest stay (highest weight, then earliest), in list order
                keep = np.argsort(-weights[np.asarray(rels[lo:hi], dtype=np.int64)], kind="stable")[:cap]
                shown, left = (lo + np.sort(keep)).tolist(), count - cap
            lines = [relation_head(names[nodes[p]], rel_views[rels[p]]) + tails[rels[p]] for p in shown]
            text = node_info_text(names[i], types[i], descriptions[i], count, degrees[i], lines, left, limits)
            replies.append(dumps({"rendered_content": text}))
        return b"".join(replies), np.fromiter(map(len, replies), dtype=np.int64, count=len(replies))

    n = len(names)
    blob, lengths = _in_two(render, n) if processes > 1 and n > 1 else render(0, n)
    return np.frombuffer(blob, dtype=np.uint8), _ragged(lengths)


def _in_two(render: Any, n: int) -> tuple[bytes, np.ndarray]:
    """``render(0, n)`` (replies as one blob and their lengths) with ``render(n // 2, n)`` done in a forked process
    meanwhile, sent back through a pipe: the rendering is Python, one core per process. Where the child fails, its
    half is rendered here."""
    half = n // 2
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: render, send, and leave without running the parent's exit handlers
        status = 1
        try:
            os.close(read_end)
            blob, lengths = render(half, n)
            with os.fdopen(write_end, "wb") as out:
                out.write(lengths.tobytes())
                out.write(blob)
            status = 0
        except BaseException:
            log.exception("rendering node_info replies %d..%d in a forked process failed", half, n)
        finally:
            os._exit(status)
    os.close(write_end)
    first, first_lengths = render(0, half)
    with os.fdopen(read_end, "rb") as got:
        data = got.read()
    _, status = os.waitpid(pid, 0)
    head = 8 * (n - half)
    lengths = np.frombuffer(data[:head], dtype=np.int64) if len(data) >= head else None
    if status != 0 or lengths is None or head + int(lengths.sum()) != len(data):
        log.warning("node_info replies %d..%d: the forked process failed (status %d); rendering them here", half, n,
                    status)  # fmt: skip
        second, lengths = render(half, n)
    else:
        second = memoryview(data)[head:]
    return b"".join((first, second)), np.concatenate([first_lengths, lengths])


def _fingerprint_key(max_chars: int) -> str:
    from tasks.env.index import TEXT_FORMAT_VERSION

    return f"v{TEXT_FORMAT_VERSION}-{max_chars}"


def write_arrays(path: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any], *, replace: bool = False) -> None:
    """Write the served arrays to directory ``path`` atomically: a temporary sibling, then one rename (a
    crash leaves no half-written cache; a concurrent writer's complete copy wins). ``replace``: an unusable
    cache already at ``path`` (damaged, or stale) is moved aside and deleted first; a process still mapping its
    files keeps reading them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=path.name + ".tmp"))
    try:
        for name in _ARRAYS:
            np.save(tmp / f"{name}.npy", arrays[name], allow_pickle=False)
        (tmp / "meta.json").write_text(json.dumps(meta, sort_keys=True))
        if replace and path.exists():
            old = Path(tempfile.mkdtemp(dir=path.parent, prefix=path.name + ".old"))
            os.replace(path, old / "cache")
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.rename(tmp, path)
        except OSError:  # another process wrote it first: theirs is the same
            if not (path / "meta.json").exists():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def read_arrays(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
    """The arrays of a cache directory, memory-mapped read-only, or ``None`` when it is missing, of another
    format, incomplete, or with arrays whose lengths disagree with its metadata (a damaged cache)."""
    meta_file = path / "meta.json"
    try:
        meta = json.loads(meta_file.read_text())
        if meta.get("format") != SERVED_FORMAT_VERSION:
            return None
        arrays = {name: _load(path / f"{name}.npy") for name in _ARRAYS}
        n = int(meta["entities"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    rows = {"entity_type": n, "entity_description": n, "degree": n, "nbr_ptr": n + 1, "reply_offsets": n + 1,
            "entity_chunk_ptr": n + 1, "entity_file_ptr": n + 1}  # fmt: skip
    if any(arrays[name].shape != (size,) for name, size in rows.items()) or len(arrays["string_offsets"]) < n + 1:
        log.warning("ignoring the served graph cache %s: its arrays do not hold %d entities", path, n)
        return None
    return arrays, meta


def stale_reason(meta: dict[str, Any], snapshot: Any) -> str | None:
    """Why a cache's metadata does not describe ``snapshot`` (a ``GraphSnapshot`` row: its id, content hash
    and entity count), or ``None`` when it does."""
    for field, mine, theirs in (("snapshot id", meta.get("snapshot_id"), snapshot.snapshot_id),
                                ("content hash", meta.get("content_hash"), snapshot.content_hash),
                                ("entity count", meta.get("entities"), snapshot.n_nodes)):  # fmt: skip
        if mine != theirs:
            return f"its {field} is {mine!r}, the snapshot's {theirs!r}"
    return None


def _load(file: Path) -> np.ndarray:
    """One array, memory-mapped read-only as a plain ndarray; an empty one (which cannot be mapped) read."""
    try:
        return np.asarray(np.load(file, mmap_mode="r", allow_pickle=False))
    except ValueError:
        return np.load(file, allow_pickle=False)


class ServedGraph:
    """A read-only domain graph over flat (usually memory-mapped) arrays; see the module docstring.

    Thread-safe: the arrays are never written, and the neighbour memo is locked."""

    def __init__(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        self.domain: str = meta["domain"]
        self.directed: bool = bool(meta["directed"])
        self.snapshot_id: str | None = meta.get("snapshot_id")
        self.limits_key: str = meta["limits"]
        self._n_relations = int(meta["relations"])
        self._a = arrays
        self._blob = arrays["strings"]
        self._off = arrays["string_offsets"]
        self._meta = meta
        # String id i is entity i, and the names are sorted (``KnowledgeGraph.nodes``): a name's row is found by
        # bisection (a microsecond), and the normalised keys (sorted too) by bisection over the blob's bytes
        # (UTF-8 orders as code points do). No dictionary of a million names is made at start (0.7 s at 1M
        # entities) nor held (its pages would be each worker's own as soon as lookups touch their refcounts).
        self._names: tuple[str, ...] = tuple(self._decode_names(int(meta["entities"])))
        self._view = memoryview(self._blob)
        self._memo: OrderedDict[int, tuple[tuple[str, EdgeData], ...]] = OrderedDict()
        self._memo_size = 0
        self._memo_lock = threading.Lock()
        self.path: Path | None = None  # the cache directory it was loaded from (``load``)

    # -- construction ----------------------------------------------------------------------------------------------
    @classmethod
    def from_graph(cls, graph: KnowledgeGraph | GraphColumns, limits: Any) -> ServedGraph:
        """The served form of ``graph`` in memory (no cache)."""
        return cls(*build_arrays(graph, limits))

    @classmethod
    def load(cls, path: Path, snapshot: Any = None) -> ServedGraph | None:
        """The served graph cached in ``path``, memory-mapped, or ``None`` when there is no usable cache. With
        ``snapshot`` (the warehouse's ``GraphSnapshot`` row) a cache built from other content (``stale_reason``)
        is not usable either."""
        found = read_arrays(path)
        if found is None:
            return None
        if snapshot is not None:
            reason = stale_reason(found[1], snapshot)
            if reason is not None:
                log.warning("rebuilding the served graph cache %s: %s", path, reason)
                return None
        graph = cls(*found)
        graph.path = path
        return graph

    @classmethod
    def cached(cls, path: Path, graph: KnowledgeGraph | GraphColumns, limits: Any, snapshot: Any = None,
               processes: int = 1) -> ServedGraph:
        """The served graph cached in ``path``, written from ``graph`` first when missing or unusable (a damaged,
        other-format or, with ``snapshot``, stale cache is replaced); ``processes``: ``build_arrays``'."""
        found = cls.load(path, snapshot)
        if found is None:
            content_hash = snapshot.content_hash if snapshot is not None else None
            write_arrays(path, *build_arrays(graph, limits, content_hash, processes), replace=path.exists())
            found = cls.load(path, snapshot)
            if found is None:
                raise OSError(f"the served graph cache {path} was written but cannot be read back")
        return found

    def text_fingerprint(self, max_chars: int) -> str | None:
        """The hash of the entity texts (``tasks.env.index.text_fingerprint`` of ``entity_texts(max_chars)``)
        recorded in the cache, or ``None`` when it holds none for ``max_chars``."""
        found = self._meta.get("text_fingerprints") or {}
        return found.get(_fingerprint_key(max_chars))

    def entity_texts(self, max_chars: int) -> list[str]:
        """Every entity's ``tasks.env.index.entity_text``, in name order, made from the arrays directly (no
        ``Entity`` objects: the cold build of a million-entity index made them only to read two fields)."""
        from tasks.env.index import entity_text

        descriptions = self._decode(self._a["entity_description"])
        return [entity_text(name, desc, max_chars) for name, desc in zip(self._names, descriptions)]

    # -- strings -------------------------------------------------------------------------------------------------------
    def _string(self, sid: int) -> str:
        return self._blob[self._off[sid] : self._off[sid + 1]].tobytes().decode("utf-8")

    def _decode_names(self, n: int) -> list[str]:
        """Strings ``0 .. n-1`` (the entity names, laid out one after another): decoded at once and sliced where
        they are ASCII (byte offsets are then character offsets), else one at a time."""
        off = self._off[: n + 1].tolist()
        if n == 0:
            return []
        raw = self._blob[off[0] : off[-1]].tobytes()
        if not raw.isascii():
            return self._decode(np.arange(n))
        text, base = raw.decode("ascii"), off[0]
        return [text[a - base : b - base] for a, b in zip(off, off[1:])]

    def _find(self, name: object) -> int | None:
        """The row of the entity called exactly ``name``, else ``None``."""
        if type(name) is not str:
            return None
        i = bisect.bisect_left(self._names, name)
        return i if i < len(self._names) and self._names[i] == name else None

    def _norm_key_index(self, key: str) -> int | None:
        """The position of normalised key ``key`` in ``norm_keys`` (sorted), else ``None``."""
        target = key.encode("utf-8")
        keys, off, view = self._a["norm_keys"], self._off, self._view
        lo, hi = 0, len(keys)
        while lo < hi:
            mid = (lo + hi) // 2
            sid = int(keys[mid])
            if view[off[sid] : off[sid + 1]].tobytes() < target:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(keys):
            sid = int(keys[lo])
            if view[off[sid] : off[sid + 1]].tobytes() == target:
                return lo
        return None

    def _decode(self, ids: np.ndarray) -> list[str]:
        """The strings of many string ids at once: their offsets gathered in one NumPy step, each string then a
        slice of the blob (a million ``_string`` calls cost a second more)."""
        ids = np.asarray(ids, dtype=np.int64)
        starts, ends = self._off[ids].tolist(), self._off[ids + 1].tolist()
        blob = memoryview(self._blob) if len(self._blob) else memoryview(b"")
        return [str(blob[a:b], "utf-8") for a, b in zip(starts, ends)]

    def _strings(self, ptr: np.ndarray, flat: np.ndarray, i: int) -> tuple[str, ...]:
        return tuple(self._string(int(s)) for s in flat[ptr[i] : ptr[i + 1]])

    # -- size and membership -----------------------------------------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        return len(self._names)

    @property
    def n_edges(self) -> int:
        return self._n_relations

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return self._find(name) is not None

    def __repr__(self) -> str:
        kind = "directed" if self.directed else "undirected"
        return f"ServedGraph({self.domain!r}, {self.n_nodes} nodes, {self.n_edges} relations, {kind})"

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays (mapped from the cache file, or in memory)."""
        return sum(a.nbytes for a in self._a.values())

    def nodes(self) -> list[str]:
        """Every entity name, sorted (the same string objects every call)."""
        return list(self._names)

    def row(self, name: str) -> int | None:
        """The entity id of exactly ``name``, else ``None``."""
        return self._find(name)

    def _require(self, name: str) -> int:
        i = self._find(name)
        if i is None:
            hint = self.lookup(name)
            extra = f"; did you mean {hint!r}?" if hint else ""
            raise KeyError(f"no entity {name!r} in the {self.domain!r} graph{extra}")
        return i

    def _entity(self, i: int) -> Entity:
        a = self._a
        return Entity.model_construct(
            domain=self.domain, name=self._names[i], type=self._string(int(a["entity_type"][i])),
            description=self._string(int(a["entity_description"][i])),
            source_chunk_ids=list(self._strings(a["entity_chunk_ptr"], a["entity_chunks"], i)),
            file_paths=list(self._strings(a["entity_file_ptr"], a["entity_files"], i)),
        )  # fmt: skip

    def entity(self, name: str) -> Entity:
        """The entity called exactly ``name``; ``KeyError`` (with a lookup hint) when there is none."""
        return self._entity(self._require(name))

    def entities(self) -> Iterator[Entity]:
        """Every entity record, sorted by name, made one at a time (a million are never held at once)."""
        return (self._entity(i) for i in range(len(self._names)))

    # -- adjacency ---------------------------------------------------------------------------------------------------
    def _edge(self, rid: int, direction: int) -> EdgeData:
        a = self._a
        return EdgeData(
            self._names[int(a["rel_source"][rid])], self._names[int(a["rel_target"][rid])],
            self._string(int(a["rel_label"][rid])), self._strings(a["rel_kw_ptr"], a["rel_kw"], rid),
            self._string(int(a["rel_description"][rid])), float(a["rel_weight"][rid]), bool(a["rel_directed"][rid]),
            self._strings(a["rel_chunk_ptr"], a["rel_chunks"], rid), _DIRECTIONS[direction],  # type: ignore[arg-type]
        )  # fmt: skip

    def _neighbors(self, i: int) -> tuple[tuple[str, EdgeData], ...]:
        with self._memo_lock:
            found = self._memo.get(i)
            if found is not None:
                self._memo.move_to_end(i)
                return found
        a = self._a
        lo, hi = int(a["nbr_ptr"][i]), int(a["nbr_ptr"][i + 1])
        nodes, rels, dirs = a["nbr_node"][lo:hi].tolist(), a["nbr_rel"][lo:hi].tolist(), a["nbr_dir"][lo:hi].tolist()
        found = tuple((self._names[nb], self._edge(r, d)) for nb, r, d in zip(nodes, rels, dirs))
        with self._memo_lock:
            if i not in self._memo and NEIGHBOR_MEMO_MIN <= len(found) <= NEIGHBOR_MEMO_RELATIONS:
                self._memo[i] = found
                self._memo_size += len(found)
                while self._memo_size > NEIGHBOR_MEMO_RELATIONS:
                    _, old = self._memo.popitem(last=False)
                    self._memo_size -= len(old)
        return found

    def neighbors(self, name: str, *, undirected: bool = True) -> list[tuple[str, EdgeData]]:
        """``KnowledgeGraph.neighbors``: ``(neighbour, relation)`` per relation at ``name``, in its order."""
        found = self._neighbors(self._require(name))
        if undirected or not self.directed:
            return list(found)
        return [(nb, d) for nb, d in found if d.direction != "in"]

    def neighbor_names(self, name: str, *, undirected: bool = True) -> list[str]:
        """Distinct neighbours of ``name``, sorted."""
        out: list[str] = []
        for nb, _ in self.neighbors(name, undirected=undirected):
            if not out or out[-1] != nb:  # neighbours come in name order, a name's relations together
                out.append(nb)
        return out

    def relations_between(self, a: str, b: str, *, undirected: bool = True) -> list[EdgeData]:
        """Every relation joining ``a`` and ``b``, with ``direction`` relative to ``a``; sorted."""
        self._require(b)
        return [d for nb, d in self.neighbors(a, undirected=undirected) if nb == b]

    def has_edge(self, a: str, b: str, *, undirected: bool = True) -> bool:
        if self._find(a) is None or self._find(b) is None:
            return False
        return bool(self.relations_between(a, b, undirected=undirected))

    def edge(self, a: str, b: str, *, undirected: bool = True) -> EdgeData | None:
        """The strongest relation joining ``a`` and ``b`` (``KnowledgeGraph.edge``), or ``None``."""
        if self._find(a) is None or self._find(b) is None:
            return None
        rels = self.relations_between(a, b, undirected=undirected)
        if not rels:
            return None
        return min(rels, key=lambda d: (-d.weight, d._sort_key()))

    def degree(self, name: str) -> int:
        """Number of distinct neighbours, either direction."""
        return int(self._a["degree"][self._require(name)])

    # -- names -------------------------------------------------------------------------------------------------------
    def _norm_rows(self, name: str) -> np.ndarray:
        k = self._norm_key_index(normalize_name(name))
        if k is None:
            return self._a["norm_ids"][:0]
        ptr = self._a["norm_ptr"]
        return self._a["norm_ids"][ptr[k] : ptr[k + 1]]

    def lookup(self, name: str) -> str | None:
        """``KnowledgeGraph.lookup``: ``name`` itself, else the best entity with its normalised key, else None."""
        if self._find(name) is not None:
            return name
        rows = self._norm_rows(name)
        return self._names[int(rows[0])] if len(rows) else None

    def lookup_all(self, name: str) -> list[str]:
        """Every entity whose ``normalize_name`` key equals that of ``name``, best first."""
        return [self._names[int(i)] for i in self._norm_rows(name)]

    # -- node_info replies -------------------------------------------------------------------------------------------
    def node_info_reply(self, name: str) -> bytes | None:
        """The pre-rendered node_info reply body of exactly ``name`` (an entity), else ``None``."""
        i = self._find(name)
        if i is None:
            return None
        off = self._a["reply_offsets"]
        return self._a["reply_blob"][off[i] : off[i + 1]].tobytes()


__all__ = ["NEIGHBOR_MEMO_RELATIONS", "SERVED_FORMAT_VERSION", "GraphColumns", "ServedGraph", "build_arrays", "cache_dir",
           "check_columns",
           "limits_key", "read_arrays", "stale_reason", "write_arrays"]
