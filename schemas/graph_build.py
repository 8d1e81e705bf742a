"""Records of a LightRAG graph build over one domain (``tasks.graph.build``; tables in ``0006_graph_builds.sql``).

A build returns a ``DomainBuildResult``: the graph's records, ready for ``warehouse.graphs.write_snapshot``, the
document counts, every document LightRAG could not process with its reason, and the build's own LLM usage. The
build never touches the warehouse; the flow writes the snapshot and then ``warehouse.graphs.write_build``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from schemas.graph import Entity, Relation


class DocumentFailure(BaseModel):
    """A document LightRAG did not turn into graph records.

    ``reason`` is LightRAG's own ``doc_status.error_msg`` (it names the chunk and carries the LLM gateway's
    one-line message, e.g. ``"C[2/3]: doc-…-chunk-001: server_error: role extractor at http://…: server error
    500"``), or a sentence saying which state LightRAG left the document in when it recorded no error.
    """

    model_config = ConfigDict(extra="forbid")

    doc_id: str
    reason: str
    file_path: str | None = None
    status: str = Field("failed", description="LightRAG doc_status at the end of the build (normally 'failed').")


class BuildUsage(BaseModel):
    """The extractor LLM calls one build made through the gateway.

    ``llm_calls`` counts calls the endpoint answered or failed (after the gateway's own retries, which the
    run-level ``llm_usage`` table counts separately); ``cache_hits`` counts calls the gateway cache answered.
    Counted by the build itself, so builds of several domains sharing one gateway keep separate figures.
    """

    model_config = ConfigDict(extra="forbid")

    llm_calls: int = 0
    cache_hits: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class DomainBuildResult(BaseModel):
    """What ``build_domain_graph`` produced for one domain.

    Counts are over the documents passed to the build (deduplicated by ``doc_id``):
    ``docs_processed + docs_failed == docs_total``, and ``docs_already_processed`` of the processed ones were
    finished by an earlier run (LightRAG skipped them). ``chunks`` is the number of chunks of the processed
    documents. ``entities``/``relations`` are the whole graph in the working directory, which also holds
    documents inserted by earlier builds of the same directory. ``graphml_path`` is LightRAG's GraphML file the
    records were read from.
    """

    model_config = ConfigDict(extra="forbid")

    domain: str
    working_dir: str
    workspace: str
    graphml_path: str
    directed: bool = False
    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    docs_total: int = Field(0, ge=0)
    docs_processed: int = Field(0, ge=0)
    docs_failed: int = Field(0, ge=0)
    docs_already_processed: int = Field(0, ge=0)
    docs_retried: int = Field(0, ge=0, description="Documents that had failed in an earlier run and were retried.")
    failures: list[DocumentFailure] = Field(default_factory=list)
    chunks: int = Field(0, ge=0)
    seconds: float = Field(0.0, ge=0)
    usage: BuildUsage = Field(default_factory=BuildUsage)

    def summary(self) -> str:
        """One line for logs and artifacts."""
        text = (
            f"{self.domain}: {self.docs_processed}/{self.docs_total} documents processed "
            f"({self.docs_already_processed} earlier), {self.docs_failed} failed; {self.chunks} chunks; "
            f"{len(self.entities)} entities, {len(self.relations)} relations; {self.seconds:.1f} s; "
            f"{self.usage.llm_calls} LLM calls, {self.usage.cache_hits} cache hits"
        )
        if self.failures:
            first = self.failures[0]
            text += f"; first failure {first.doc_id}: {first.reason[:200]}"
        return text
