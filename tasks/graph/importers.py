"""Graph importers: LightRAG GraphML, flat triple files (TSV / JSONL) and RoG-style per-question subgraphs.

Every importer returns a ``GraphImport``: canonical records (``tasks.graph.store.check_records`` holds), the
graph's directedness, and every row it could not use as a ``RowError`` (file, line, reason code, message). One
bad row never stops an import; a file that yields no record at all raises ``GraphImportError`` naming the first
problems.

Decisions shared by the importers:

- **Directed unless said otherwise.** Triples (TSV, JSONL, RoG) are directed; a JSONL row may say
  ``"directed": false``. GraphML follows its ``edgedefault`` and per-edge ``directed`` attributes (LightRAG's
  files are undirected). The graph is directed when any relation is.
- **Parallel relations are kept.** Each distinct ``(head, relation, tail)`` is its own ``Relation`` record;
  ``KnowledgeGraph`` keeps all of them between a pair (``relations_between``). Only the *same* fact seen twice
  (same ``Relation.key()``) is folded, with ``merge_relation_group(weight="max")``: a repeated triple is one
  fact, not extra evidence. The fold is counted in ``duplicates_merged``.
- **Triple defaults.** The relation label also becomes the only keyword when a row gives no keywords; the
  description defaults to ``"head relation tail"``. Endpoints without an entity row become entities of type
  ``UNKNOWN`` with no description. Repeated entity rows merge (first real type wins, descriptions joined).
- **GraphML is streamed.** ``networkx.read_graphml`` builds the whole XML tree and a networkx graph before a
  single record exists (about 37 s and 3.7 GB for 100k nodes / 500k edges); the reader here walks the file with
  ``iterparse``, drops each element once read, and yields the same records as
  ``graph_store.records_from_networkx(nx.read_graphml(path))``.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import xml.parsers.expat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from schemas.errors import InputError
from schemas.graph import GRAPH_DOMAIN, UNKNOWN_TYPE, Entity, GraphSource, Relation
from tasks.graph.store import (
    LIGHTRAG_UNKNOWN,
    entity_from_attrs,
    gc_paused,
    join_descriptions,
    merge_relation_group,
    relation_from_attrs,
    split_keywords,
    split_sep,
)

if TYPE_CHECKING:
    from tasks.graph.kg import KnowledgeGraph

#: How many row errors a ``GraphImport`` keeps in full; the rest are only counted.
MAX_KEPT_ERRORS = 1000

ReasonCode = Literal[
    "not_utf8",  # the line's bytes are not UTF-8
    "bad_json",  # not JSON, or not a JSON object
    "missing_field",  # a required field is absent
    "wrong_type",  # a field has the wrong JSON type
    "empty_name",  # an entity name / head / tail is empty or whitespace
    "bad_weight",  # weight is not a finite, non-negative number
    "bad_columns",  # a TSV line without exactly three tab-separated fields
    "bad_triple",  # a RoG graph item that is not [head, relation, tail] strings
    "bad_element",  # a GraphML node or edge that cannot become a record
    "unknown_row",  # a JSONL object that is neither an entity row nor a relation row
    "bad_name",  # a name with a tab, newline or other control character (it would break TSV and tool output)
    "bad_quote",  # a TSV field that starts with a quote and has text after its closing quote
]


@dataclass(frozen=True)
class RowError:
    """One input row an importer could not use. Same shape as the ``ingest_skips`` table (source, line,
    reason_code, message), so a flow can store it there with its run id."""

    source: str
    line: int | None
    reason_code: ReasonCode
    message: str

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line is not None else self.source
        return f"{where}: {self.message} [{self.reason_code}]"


class GraphImportError(InputError):
    """A graph file that cannot be imported at all (missing, unreadable, or yielding no record)."""


@dataclass
class GraphImport:
    """The records one graph file yielded, and what it could not use."""

    domain: str
    path: str
    source: GraphSource
    directed: bool
    entities: list[Entity]
    relations: list[Relation]
    rows_read: int
    bad_rows: int = 0
    errors: list[RowError] = field(default_factory=list)
    duplicates_merged: int = 0

    def summary(self) -> str:
        kind = "directed" if self.directed else "undirected"
        text = (
            f"{self.path}: {len(self.entities)} entities, {len(self.relations)} relations ({kind}) from "
            f"{self.rows_read} rows; {self.bad_rows} bad rows; {self.duplicates_merged} duplicates merged"
        )
        if self.errors:
            text += "; first problems: " + " | ".join(str(e) for e in self.errors[:3])
        return text

    def to_graph(self, *, snapshot_id: str | None = None) -> KnowledgeGraph:
        from tasks.graph.kg import KnowledgeGraph

        return KnowledgeGraph(
            self.domain, self.entities, self.relations, directed=self.directed, snapshot_id=snapshot_id
        )


class _Builder:
    """Collects records from one file: folds repeated entities and facts, creates missing endpoints, keeps
    row errors."""

    def __init__(self, domain: str, path: Path) -> None:
        if not GRAPH_DOMAIN.match(domain):
            raise GraphImportError(
                f"cannot import {path}: domain {domain!r} must be lowercase letters, digits and underscores, "
                "starting with a letter"
            )
        self.domain = domain
        self.path = str(path)
        self.entities: dict[str, Entity] = {}
        self.implicit: set[str] = set()  # endpoints created before (or without) their own entity row
        self.relations: dict[tuple[str, str, str, bool], Relation] = {}
        self.rows_read = 0
        self.bad_rows = 0
        self.errors: list[RowError] = []
        self.duplicates_merged = 0

    def error(self, line: int | None, code: ReasonCode, message: str) -> None:
        self.bad_rows += 1
        if len(self.errors) < MAX_KEPT_ERRORS:
            self.errors.append(RowError(self.path, line, code, message))

    def add_entity(self, entity: Entity) -> None:
        old = self.entities.get(entity.name)
        if old is None or entity.name in self.implicit:
            self.entities[entity.name] = entity
            self.implicit.discard(entity.name)
            return
        self.duplicates_merged += 1
        self.entities[entity.name] = old.model_copy(
            update={
                "type": old.type if old.type != UNKNOWN_TYPE else entity.type,
                "description": join_descriptions([old.description, entity.description]),
                "source_chunk_ids": list(dict.fromkeys(old.source_chunk_ids + entity.source_chunk_ids)),
                "file_paths": list(dict.fromkeys(old.file_paths + entity.file_paths)),
            }
        )

    def add_relation(self, relation: Relation) -> None:
        for end in (relation.source, relation.target):
            if end not in self.entities:
                self.entities[end] = Entity(domain=self.domain, name=end)
                self.implicit.add(end)
        key = relation.key()
        old = self.relations.get(key)
        if old is None:
            self.relations[key] = relation
        else:
            self.duplicates_merged += 1
            self.relations[key] = merge_relation_group([old, relation], weight="max")

    def finish(self, source: GraphSource, *, directed: bool | None = None) -> GraphImport:
        if not self.entities and not self.relations:
            detail = "; ".join(str(e) for e in self.errors[:5]) or "no rows"
            raise GraphImportError(
                f"{self.path} yielded no entity or relation ({self.rows_read} rows read, {self.bad_rows} bad): {detail}"
            )
        relations = list(self.relations.values())
        if directed is None:
            directed = any(r.directed for r in relations)
        return GraphImport(
            domain=self.domain, path=self.path, source=source, directed=directed,
            entities=sorted(self.entities.values(), key=lambda e: e.name), relations=relations,
            rows_read=self.rows_read, bad_rows=self.bad_rows, errors=self.errors,
            duplicates_merged=self.duplicates_merged,
        )  # fmt: skip


def _check_file(path: str | Path) -> Path:
    p = Path(path)
    if not p.is_file():
        raise GraphImportError(f"no graph file at {p}")
    return p


def _open_binary(path: Path) -> IO[bytes]:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _decoded(path: Path, builder: _Builder) -> Iterator[tuple[int, str]]:
    """Every line as ``(1-based line number, text with its line end)``; a line that is not UTF-8 is a row error and
    is left out; a file that cannot be read is a ``GraphImportError``."""
    try:
        with _open_binary(path) as fh:
            for number, raw in enumerate(fh, start=1):
                try:
                    yield number, raw.decode("utf-8-sig" if number == 1 else "utf-8")
                except UnicodeDecodeError as exc:
                    builder.rows_read += 1
                    builder.error(number, "not_utf8", f"not UTF-8 at byte {exc.start} of the line")
    except (OSError, EOFError) as exc:
        raise GraphImportError(f"cannot read {path}: {exc}") from None


def _lines(path: Path, builder: _Builder) -> Iterator[tuple[int, str]]:
    """Non-blank lines as ``(1-based line number, text)``; lines that are not UTF-8 become row errors."""
    for number, text in _decoded(path, builder):
        text = text.rstrip("\r\n")
        if text.strip():
            builder.rows_read += 1
            yield number, text


def _first_validation_message(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    return f"{loc}: {err.get('msg')}" if loc else str(err.get("msg"))


# -- GraphML -------------------------------------------------------------------------------------------------------
_GRAPHML_TYPES = {"boolean", "int", "long", "float", "double", "string"}


def _convert(text: str, kind: str) -> Any:
    try:
        if kind == "boolean":
            return text.strip().lower() in ("true", "1")
        if kind in ("int", "long"):
            return int(text)
        if kind in ("float", "double"):
            return float(text)
    except ValueError:
        return text  # left as text; the record constructor reports it if it matters
    return text


class _GraphMLReader:
    """Expat callbacks that turn GraphML into records as the file streams by.

    Plain expat with small Python callbacks reads LightRAG's GraphML about four times faster than
    ``ElementTree.iterparse`` (which builds an element for every ``<data>``), and it knows the line of every
    element, so row errors carry line numbers like the other importers.
    """

    def __init__(self, builder: _Builder, domain: str) -> None:
        self.b = builder
        self.domain = domain
        self.keys: dict[str, tuple[str, str]] = {}  # key id -> (attribute name, GraphML type)
        self.defaults: dict[str, dict[str, Any]] = {"node": {}, "edge": {}}
        self.edgedefault_directed = False
        self.graphs_open = 0
        # Edges may come before the nodes they join (GraphML allows any order): kept, resolved at the end.
        self.edges: list[tuple[int, str, str, dict[str, Any], bool | None]] = []
        self.tags: dict[str, str] = {}
        self.kind: str | None = None  # "node" | "edge" while inside one
        self.item_id = self.item_src = self.item_tgt = ""
        self.item_directed: bool | None = None
        self.item_line = 0
        self.item_attrs: dict[str, Any] = {}
        self.text: list[str] | None = None  # collecting character data of a <data> or <default>
        self.data_key = ""
        self.key_spec: tuple[str, str, str] | None = None  # (id, name, for) of the <key> being read
        self.parser = xml.parsers.expat.ParserCreate()
        self.parser.buffer_text = True
        self.parser.StartElementHandler = self.start
        self.parser.EndElementHandler = self.end
        self.parser.CharacterDataHandler = self.chars

    def tag(self, name: str) -> str:
        # Names arrive unprocessed ("node", or "g:node" with a prefix): strip the prefix once per distinct name.
        t = self.tags.get(name)
        if t is None:
            t = self.tags[name] = name.rpartition(":")[2]
        return t

    def start(self, name: str, attrs: dict[str, str]) -> None:
        t = self.tags.get(name) or self.tag(name)
        if t == "data":
            self.data_key = attrs.get("key", "")
            self.text = []
        elif t == "node":
            self.kind = "node"
            self.item_id = attrs.get("id", "")
            self.item_line = self.parser.CurrentLineNumber
            self.item_attrs = dict(self.defaults["node"])
        elif t == "edge":
            self.kind = "edge"
            self.item_src = attrs.get("source", "")
            self.item_tgt = attrs.get("target", "")
            flag = attrs.get("directed")
            self.item_directed = None if flag is None else flag.strip().lower() == "true"
            self.item_line = self.parser.CurrentLineNumber
            self.item_attrs = dict(self.defaults["edge"])
        elif t == "key":
            kind = attrs.get("attr.type", "string")
            kid = attrs.get("id", "")
            self.keys[kid] = (attrs.get("attr.name") or kid, kind if kind in _GRAPHML_TYPES else "string")
            self.key_spec = (kid, self.keys[kid][0], attrs.get("for", "all"))
        elif t == "default":
            self.text = []
        elif t == "graph":
            self.graphs_open += 1
            if self.graphs_open > 1:
                raise GraphImportError(
                    f"{self.b.path}:{self.parser.CurrentLineNumber}: nested <graph> elements are not supported"
                )
            self.edgedefault_directed = attrs.get("edgedefault", "directed") == "directed"
        elif t == "hyperedge":
            self.b.rows_read += 1
            self.b.error(self.parser.CurrentLineNumber, "bad_element", "hyperedges are not supported; skipped")

    def chars(self, data: str) -> None:
        if self.text is not None:
            self.text.append(data)

    def end(self, name: str) -> None:
        t = self.tags.get(name) or self.tag(name)
        if t == "data":
            if self.kind is not None and self.text is not None:
                spec = self.keys.get(self.data_key)
                value = "".join(self.text)
                if spec is None:
                    self.item_attrs[self.data_key] = value
                else:
                    self.item_attrs[spec[0]] = value if spec[1] == "string" else _convert(value, spec[1])
            self.text = None
        elif t == "node":
            self.kind = None
            self.b.rows_read += 1
            if not self.item_id.strip():
                self.b.error(self.item_line, "bad_element", "node without an id")
                return
            try:
                self.b.add_entity(entity_from_attrs(self.item_id, self.item_attrs, self.domain))
            except ValidationError as exc:
                self.b.error(self.item_line, "bad_element", f"node {self.item_id!r}: {_first_validation_message(exc)}")
        elif t == "edge":
            self.kind = None
            self.b.rows_read += 1
            self.edges.append((self.item_line, self.item_src, self.item_tgt, self.item_attrs, self.item_directed))
        elif t == "default":
            if self.key_spec is not None and self.text is not None:
                kid, attr_name, scope = self.key_spec
                value = _convert("".join(self.text), self.keys[kid][1])
                for target in ("node", "edge") if scope == "all" else (scope,):
                    if target in self.defaults:
                        self.defaults[target][attr_name] = value
            self.text = None
        elif t == "key":
            self.key_spec = None
        elif t == "graph":
            self.graphs_open -= 1

    def finish_edges(self) -> None:
        declared = set(self.b.entities)
        for line, src, tgt, attrs, flag in self.edges:
            if not src.strip() or not tgt.strip():
                self.b.error(line, "bad_element", "edge without a source or target")
                continue
            directed = self.edgedefault_directed if flag is None else flag
            marked = attrs.get("directed")  # KnowledgeGraph.to_networkx marks each relation's own direction
            if isinstance(marked, bool):
                directed = marked
            elif isinstance(marked, str) and marked.strip().lower() in ("true", "false"):
                directed = marked.strip().lower() == "true"
            try:
                relation = relation_from_attrs(src, tgt, attrs, self.domain, directed)
                dangling = [n for n in (src, tgt) if n not in declared and n.strip() not in declared]
                if dangling:  # GraphML requires both ends to be declared nodes; a dangling edge is a broken row
                    self.b.error(line, "bad_element", f"edge {src!r} -> {tgt!r} names node {dangling[0]!r}, which "
                                 "the file does not declare; the edge was left out")
                    continue
                self.b.add_relation(relation)
            except (ValidationError, ValueError, TypeError) as exc:
                msg = _first_validation_message(exc) if isinstance(exc, ValidationError) else str(exc)
                self.b.error(line, "bad_element", f"edge {src!r} -> {tgt!r}: {msg}")
        self.edges = []


def read_lightrag_graphml(path: str | Path, domain: str, *, source: GraphSource = "lightrag") -> GraphImport:
    """Import a GraphML file in LightRAG's format (``graph_chunk_entity_relation.graphml``).

    Node id = entity name (LightRAG writes the same string as ``entity_id``); node attributes ``entity_type``,
    ``description``, ``source_id``, ``file_path``; edge attributes ``weight``, ``description``, ``keywords``,
    ``source_id`` (and ``relation``/``directed`` as ``KnowledgeGraph.to_networkx`` writes). ``<SEP>`` fields
    are split as ``tasks.graph.store`` documents. Every ``<edge>`` is its own relation, so multigraph files keep
    their parallel edges; an edge's ``directed`` attribute overrides the graph's ``edgedefault``. Row errors
    carry the line where the element starts.
    """
    p = _check_file(path)
    b = _Builder(domain, p)
    reader = _GraphMLReader(b, domain)
    with gc_paused():
        try:
            with _open_binary(p) as fh:
                reader.parser.ParseFile(fh)
        except xml.parsers.expat.ExpatError as exc:
            raise GraphImportError(
                f"{p}:{exc.lineno}: not well-formed GraphML (column {exc.offset}): "
                f"{xml.parsers.expat.errors.messages[exc.code]}"
            ) from None
        except (OSError, EOFError) as exc:
            raise GraphImportError(f"cannot read {p}: {exc}") from None
        reader.finish_edges()
        return b.finish(source, directed=reader.edgedefault_directed or None)


def read_graphml(path: str | Path, domain: str) -> GraphImport:
    """Import a GraphML file from another tool (source ``"graphml"``); same reader as LightRAG's."""
    return read_lightrag_graphml(path, domain, source="graphml")


# -- triples -------------------------------------------------------------------------------------------------------
_TSV_HEADERS = {
    ("head", "relation", "tail"),
    ("subject", "predicate", "object"),
    ("h", "r", "t"),
    ("source", "relation", "target"),
}


def _triple_relation(
    domain: str, head: str, label: str, tail: str, *, keywords: Any = None, description: Any = None,
    weight: Any = None, directed: bool = True, chunk_ids: Any = None,
) -> Relation:  # fmt: skip
    kw = [label] if keywords is None and label else split_keywords(keywords)
    desc = join_descriptions([description]) if description else (f"{head} {label} {tail}" if label else "")
    return Relation(
        domain=domain, source=head, target=tail, relation=label, keywords=kw, description=desc,
        weight=1.0 if weight is None else float(weight), directed=directed,
        source_chunk_ids=split_sep(chunk_ids, drop=frozenset({LIGHTRAG_UNKNOWN})),
    )  # fmt: skip


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _control_in(*names: str) -> str | None:
    """The first name holding a control character (tab, newline...), for a ``bad_name`` row error."""
    for name in names:
        if any(ch < " " or ch == "\x7f" for ch in name.strip()):
            return name
    return None


#: Longest quoted field a TSV row may hold; a quote left open would otherwise take in the rest of the file.
TSV_FIELD_LIMIT = 1 << 17


def _tsv_rows(path: Path, b: _Builder) -> Iterator[tuple[int, int, list[str]]]:
    """TSV rows in the stated dialect (``read_triples``) as ``(first line, last line, fields)``, blank rows and
    ``#`` comment lines skipped; lines that are not UTF-8 become row errors. A quote left open is a ``GraphImportError`` naming the
    line it opened on; a quoted field with text after its closing quote is a ``bad_quote`` row error."""
    fed: list[int] = []  # numbers of the lines the current row has read so far

    def lines() -> Iterator[str]:
        for number, text in _decoded(path, b):
            if not fed and text.lstrip().startswith("#"):
                continue  # a comment line, where a row would start (inside a quoted field it is text)
            fed.append(number)
            yield text

    limit = csv.field_size_limit()
    csv.field_size_limit(TSV_FIELD_LIMIT)
    try:
        reader = csv.reader(lines(), delimiter="\t", quotechar='"', doublequote=True, strict=True)
        while True:
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                first = fed[0] if fed else None
                if str(exc).endswith("expected after '\"'") and len(fed) == 1:
                    b.rows_read += 1
                    b.error(first, "bad_quote", 'text after the closing quote of a quoted field: a field that '
                            'starts with " ends at the next lone " (write "" for a quote inside it), or leave '
                            "the field unquoted (a quote inside an unquoted field is kept as written)")
                    fed.clear()
                    continue
                if "end of data" in str(exc):
                    why = "the file ends inside it"
                elif "field limit" in str(exc):
                    why = f"still open after {TSV_FIELD_LIMIT:,} characters"
                elif "expected after" in str(exc):
                    why = f"the next quote, on line {fed[-1]}, is followed by text"
                else:
                    why = repr(str(exc))
                raise GraphImportError(
                    f"{path}:{first}: the quoted field opened on line {first} is not closed ({why}): a field that "
                    'starts with " runs to the next lone ", across tabs and lines; close it, write "" for a quote '
                    "inside it, or leave the field unquoted") from None
            start, end = fed[0], fed[-1]
            fed.clear()
            if any(f.strip() for f in fields):
                b.rows_read += 1
                yield start, end, fields
    finally:
        csv.field_size_limit(limit)


def _read_tsv(path: Path, b: _Builder) -> None:
    first = True
    for number, last, raw_fields in _tsv_rows(path, b):
        fields = [f.strip() for f in raw_fields]
        if first:
            first = False
            if tuple(f.lower() for f in fields) in _TSV_HEADERS:
                b.rows_read -= 1
                continue
        if len(fields) != 3:
            b.error(number, "bad_columns", f"expected 3 tab-separated fields (head, relation, tail), got {len(fields)}")
            continue
        head, label, tail = fields
        if not head or not tail:
            b.error(number, "empty_name", "empty head or tail")
            continue
        bad = _control_in(head, tail, label)
        if bad is not None:
            over = f" (a quoted field carries the row over lines {number}-{last})" if last != number else ""
            b.error(number, "bad_name", f"name {bad!r} holds a tab, newline or control character{over}")
            continue
        try:
            b.add_relation(_triple_relation(b.domain, head, label, tail))
        except ValidationError as exc:
            b.error(number, "wrong_type", _first_validation_message(exc))


def _json_row(number: int, text: str, b: _Builder) -> dict[str, Any] | None:
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        b.error(number, "bad_json", f"not JSON: {exc.msg} at column {exc.colno}")
        return None
    if not isinstance(row, dict):
        b.error(number, "bad_json", f"expected a JSON object, got {type(row).__name__}")
        return None
    return row


def _check_weight(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"weight must be a number, got {type(value).__name__}"
    if not math.isfinite(value) or value < 0:
        return f"weight must be finite and non-negative, got {value}"
    return None


def _string_or_list(value: Any) -> bool:
    return (
        value is None or isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    )


def _read_triples_jsonl(path: Path, b: _Builder) -> None:
    for number, text in _lines(path, b):
        row = _json_row(number, text, b)
        if row is None:
            continue
        try:
            _triples_jsonl_row(b, number, row)
        except ValidationError as exc:  # a value the checks let through but the record refuses
            b.error(number, "wrong_type", _first_validation_message(exc))


def _triples_jsonl_row(b: _Builder, number: int, row: dict[str, Any]) -> None:
    """One JSONL object: an entity row or a relation row (see ``read_triples``)."""
    if "entity" in row and "head" not in row:
        name = row["entity"]
        if not _is_name(name):
            b.error(
                number, "empty_name" if isinstance(name, str) else "wrong_type", "entity must be a non-empty string"
            )
            return
        etype = row.get("type", row.get("entity_type"))
        desc = row.get("description")
        if not (etype is None or isinstance(etype, str)) or not (desc is None or isinstance(desc, str)):
            b.error(number, "wrong_type", "type and description must be strings")
            return
        chunks = row.get("source_chunk_ids", row.get("source_id"))
        files = row.get("file_paths", row.get("file_path"))
        if not _string_or_list(chunks) or not _string_or_list(files):
            b.error(number, "wrong_type", "source_chunk_ids / file_paths must be strings or lists of strings")
            return
        bad = _control_in(name)
        if bad is not None:
            b.error(number, "bad_name", f"entity name {bad!r} holds a tab, newline or control character")
            return
        attrs = {"entity_type": etype, "description": desc, "source_id": chunks, "file_path": files}
        b.add_entity(entity_from_attrs(name.strip(), attrs, b.domain))
        return
    if "head" not in row and "tail" not in row:
        b.error(
            number,
            "unknown_row",
            'neither an entity row ({"entity": ...}) nor a relation row ({"head", "relation", "tail"})',
        )
        return
    missing = [k for k in ("head", "relation", "tail") if k not in row]
    if missing:
        b.error(number, "missing_field", f"relation row without {', '.join(missing)}")
        return
    head, label, tail = row["head"], row["relation"], row["tail"]
    if not isinstance(head, str) or not isinstance(tail, str) or not isinstance(label, str):
        b.error(number, "wrong_type", "head, relation and tail must be strings")
        return
    if not head.strip() or not tail.strip():
        b.error(number, "empty_name", "empty head or tail")
        return
    bad = _control_in(head, tail, label)
    if bad is not None:
        b.error(number, "bad_name", f"name {bad!r} holds a tab, newline or control character")
        return
    weight_problem = _check_weight(row.get("weight"))
    if weight_problem:
        b.error(number, "bad_weight", weight_problem)
        return
    directed = row.get("directed", True)
    if not isinstance(directed, bool):
        b.error(number, "wrong_type", f"directed must be true or false, got {directed!r}")
        return
    keywords = row.get("keywords")
    desc = row.get("description")
    chunks = row.get("source_chunk_ids", row.get("source_id"))
    if not _string_or_list(keywords) or not (desc is None or isinstance(desc, str)) or not _string_or_list(chunks):
        b.error(
            number,
            "wrong_type",
            "keywords / source_chunk_ids must be strings or lists of strings, description a string",
        )
        return
    b.add_relation(
        _triple_relation(
            b.domain, head.strip(), label.strip(), tail.strip(), keywords=keywords, description=desc,
            weight=row.get("weight"), directed=directed, chunk_ids=chunks,
        )
    )  # fmt: skip


def _triples_format(path: Path) -> Literal["tsv", "jsonl"]:
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    last = suffixes[-1] if suffixes else ""
    if last in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if last in (".tsv", ".tab", ".txt"):
        return "tsv"
    with _open_binary(path) as fh:  # no telling suffix: look at the first non-blank byte
        head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return "jsonl" if head.startswith(b"{") else "tsv"


def read_triples(path: str | Path, domain: str, *, format: Literal["tsv", "jsonl"] | None = None) -> GraphImport:
    """Import flat triples (source ``"triples"``), optionally gzipped.

    - TSV: ``head<TAB>relation<TAB>tail`` per line; an optional header line (``head relation tail`` or
      ``subject predicate object``); ``#`` comment lines and blank lines are skipped. Quoting is CSV's (the
      ``csv`` module, tab-delimited, ``strict``): a field whose first character is ``"`` is quoted and runs to the
      next lone ``"``, across tabs and newlines, with ``""`` for one quote inside it; a ``"`` anywhere else in a
      field is kept as written (``12" ruler``, ``O"Neil``). A quoted field may not hold a tab or a newline in a
      name (a ``bad_name`` row error, as in JSONL), text after its closing quote is a ``bad_quote`` row error,
      and a quote never closed (or not closed within ``TSV_FIELD_LIMIT`` characters) stops the import with a
      ``GraphImportError`` naming the line it opened on: what follows it cannot be read as rows.
    - JSONL: relation rows ``{"head", "relation", "tail"}`` with optional ``keywords`` (string or list),
      ``description``, ``weight`` (finite, >= 0), ``directed`` (bool, default true), ``source_chunk_ids``; and
      entity rows ``{"entity": name}`` with optional ``type``, ``description``, ``source_chunk_ids``,
      ``file_paths``.

    The format comes from the suffix (``.tsv/.tab/.txt``, ``.jsonl/.json/.ndjson``) or the first byte.
    """
    p = _check_file(path)
    b = _Builder(domain, p)
    kind = format or _triples_format(p)
    with gc_paused():
        if kind == "jsonl":
            _read_triples_jsonl(p, b)
        else:
            _read_tsv(p, b)
        return b.finish("triples")


def read_rog_jsonl(path: str | Path, domain: str) -> GraphImport:
    """Import RoG-style per-question subgraphs (source ``"rog"``) merged into one domain graph.

    Each line is an object with a ``graph`` list of ``[head, relation, tail]`` string triples (other fields such
    as ``id``, ``question``, ``q_entity``, ``a_entity`` are ignored here). Triples are directed; a triple that
    several questions share is one relation (``duplicates_merged`` counts the repeats). A malformed triple is a
    row error naming its line and position in ``graph``; the rest of the line is still used.
    """
    p = _check_file(path)
    b = _Builder(domain, p)
    with gc_paused():
        _read_rog_rows(p, b)
        return b.finish("rog")


def _read_rog_rows(p: Path, b: _Builder) -> None:
    for number, text in _lines(p, b):
        row = _json_row(number, text, b)
        if row is None:
            continue
        graph = row.get("graph")
        if graph is None:
            b.error(number, "missing_field", f"row {row.get('id', '')!r} has no 'graph' field")
            continue
        if not isinstance(graph, list):
            b.error(
                number, "wrong_type", f"'graph' must be a list of [head, relation, tail], got {type(graph).__name__}"
            )
            continue
        for i, triple in enumerate(graph):
            if not isinstance(triple, (list, tuple)) or len(triple) != 3 or not all(isinstance(x, str) for x in triple):
                b.error(number, "bad_triple", f"graph[{i}] is not [head, relation, tail] strings: {str(triple)[:80]}")
                continue
            head, label, tail = (x.strip() for x in triple)
            if not head or not tail:
                b.error(number, "empty_name", f"graph[{i}] has an empty head or tail")
                continue
            try:
                b.add_relation(_triple_relation(b.domain, head, label, tail))
            except ValidationError as exc:
                b.error(number, "wrong_type", f"graph[{i}]: {_first_validation_message(exc)}")


def import_graph_file(
    path: str | Path, domain: str, *, kind: Literal["graphml", "lightrag", "triples", "rog"] | None = None
) -> GraphImport:
    """Import any supported graph file, by ``kind`` or by suffix: ``.graphml`` -> LightRAG GraphML; a
    ``.jsonl`` whose first row has a ``graph`` list -> RoG; other ``.tsv/.jsonl`` -> triples."""
    p = _check_file(path)
    if kind is None:
        suffixes = [s.lower() for s in p.suffixes if s.lower() != ".gz"]
        if suffixes and suffixes[-1] == ".graphml":
            kind = "lightrag"
        else:
            kind = "triples"
            if _triples_format(p) == "jsonl":
                with _open_binary(p) as fh:
                    for raw in fh:
                        if raw.strip():
                            try:
                                first: Mapping[str, Any] = json.loads(raw)
                            except ValueError:
                                first = {}
                            if isinstance(first, dict) and isinstance(first.get("graph"), list):
                                kind = "rog"
                            break
    if kind == "lightrag":
        return read_lightrag_graphml(p, domain)
    if kind == "graphml":
        return read_graphml(p, domain)
    if kind == "rog":
        return read_rog_jsonl(p, domain)
    return read_triples(p, domain)
