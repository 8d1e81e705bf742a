"""Knowledge-graph records: entities, relations, snapshots, and the entity-resolution logs.

Field conventions (shared by every importer and by the warehouse tables in ``0005_graph.sql``):

- ``name`` is the entity's canonical name, unique within one graph (one domain, one snapshot).
- ``description`` is one string. Sources that merge several descriptions with LightRAG's ``<SEP>`` are split
  on it, blank and repeated parts dropped, and the rest joined with ``"\\n"`` in their original order, so a
  description renders directly into a prompt or a tool result.
- ``source_chunk_ids`` are the ids of the chunks that support a record (LightRAG's ``source_id`` split on
  ``<SEP>``), first-seen order, no repeats. LightRAG's placeholder ``"UNKNOWN"`` is not a chunk id and is
  dropped.
- ``keywords`` of a relation are a list (LightRAG stores a comma-separated string), first-seen order, no
  repeats, compared case-sensitively after stripping.
- ``relation`` is a relation label (``"born_in"``, ``"people.person.nationality"``). LightRAG has none: a
  LightRAG relation is its keywords plus its description, and its label is ``""``.
- ``directed``: ``True`` when the relation reads from ``source`` to ``target``. LightRAG graphs are undirected;
  triple files are directed unless a row says otherwise.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from schemas.corpus import DOMAIN_NAME

#: What a domain name must look like: the corpus records' rule (it becomes a graph_type, a directory name and a
#: tool argument), shared so a domain that ingests can always hold a graph.
GRAPH_DOMAIN = DOMAIN_NAME

#: Where a snapshot's records came from.
GraphSource = Literal["lightrag", "graphml", "triples", "rog"]

#: The entity type given to an entity that its source does not type.
UNKNOWN_TYPE = "UNKNOWN"


def _check_domain(value: str) -> str:
    if not GRAPH_DOMAIN.match(value):
        raise ValueError(
            f"domain {value!r} must be lowercase letters, digits and underscores, starting with a letter "
            "(at most 40 characters)"
        )
    return value


def _check_name(value: str) -> str:
    if not value or not value.strip():
        raise ValueError("an entity name cannot be empty or whitespace")
    return value


Domain = Annotated[str, AfterValidator(_check_domain)]
EntityName = Annotated[str, AfterValidator(_check_name)]


class Entity(BaseModel):
    """One node of a domain graph."""

    model_config = ConfigDict(extra="forbid")

    domain: Domain
    name: EntityName
    type: str = UNKNOWN_TYPE
    description: str = ""
    source_chunk_ids: list[str] = Field(default_factory=list)
    file_paths: list[str] = Field(default_factory=list)


class Relation(BaseModel):
    """One relation (edge) between two entities of a domain graph.

    Two relations are the same fact when they share ``(source, target, relation, directed)``, with source and
    target taken in either order when ``directed`` is false (see ``Relation.key``). Different labels between
    the same pair are different relations and are all kept.
    """

    model_config = ConfigDict(extra="forbid")

    domain: Domain
    source: EntityName
    target: EntityName
    relation: str = ""
    keywords: list[str] = Field(default_factory=list)
    description: str = ""
    weight: float = Field(1.0, allow_inf_nan=False)
    source_chunk_ids: list[str] = Field(default_factory=list)
    directed: bool = False

    def key(self) -> tuple[str, str, str, bool]:
        """Identity of the fact: ``(source, target, relation, directed)``, ends sorted when undirected."""
        a, b = self.source, self.target
        if not self.directed and b < a:
            a, b = b, a
        return (a, b, self.relation, self.directed)


class GraphSnapshot(BaseModel):
    """One immutable version of a domain graph in the warehouse.

    ``snapshot_id`` is ``f"{domain}-{content_hash[:16]}"``: the same content gives the same id, so rebuilding a
    graph from the same inputs names the same snapshot and exports stay byte-identical. ``created_at`` is when
    the content was first written; ``written_at`` is the last time a build produced it. The domain's current
    snapshot is the one written last (view ``current_graph_snapshots``), which makes a graph that returns to an
    earlier content current again without duplicating its rows.
    """

    model_config = ConfigDict(extra="forbid")

    snapshot_id: str
    domain: Domain
    content_hash: str
    n_nodes: int = Field(ge=0)
    n_edges: int = Field(ge=0)
    directed: bool
    source: GraphSource
    build_run_id: str | None = None
    created_at: datetime
    written_at: datetime | None = None


class EntityMerge(BaseModel):
    """One entity-resolution merge: ``merged_name`` was folded into ``kept_name``.

    ``rule`` is the weakest normalisation under which the two names are equal: ``case``, ``whitespace``,
    ``punctuation`` (quotes, dashes, hyphens, punctuation at the ends or between words) or ``plural`` (a
    trailing plural on the last word). ``from_snapshot_id`` is the pre-merge snapshot, which stays in the
    warehouse untouched: re-applying the log to it minus some merges undoes those merges
    (``tasks.graph.entity_resolution.undo_merges``).
    """

    model_config = ConfigDict(extra="forbid")

    domain: Domain
    kept_name: str
    merged_name: str
    rule: Literal["case", "whitespace", "punctuation", "plural"]
    run_id: str | None = None
    from_snapshot_id: str | None = None
    to_snapshot_id: str | None = None


class NearDuplicate(BaseModel):
    """Two entity names whose embeddings are close: reported for review, never merged automatically.

    ``a < b`` (code-point order); ``cosine`` is rounded to 6 decimals so reports are stable across BLAS builds.
    """

    model_config = ConfigDict(extra="forbid")

    domain: Domain
    a: str
    b: str
    cosine: float
    snapshot_id: str | None = None
    run_id: str | None = None
