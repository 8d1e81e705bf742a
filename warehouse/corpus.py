"""Ingested corpora in the warehouse: documents, chunks and skips (the ingest itself is ``tasks.corpus.ingest``)."""

from __future__ import annotations

from schemas.corpus import IngestResult, IngestWriteSummary
from tasks.corpus.ingest import IngestError
from warehouse.db import Warehouse


def write_ingest(wh: Warehouse, result: IngestResult, run_id: str) -> IngestWriteSummary:
    """Write documents, chunks and skips of ``result`` in ONE transaction, tagged with ``run_id``.

    A document whose ``doc_id`` is already in the warehouse (an earlier run ingested the same text in the
    same domain) is not written again, nor are its chunks; ``already_present`` counts them. The result is
    checked first (unique doc ids, every chunk belongs to one of its documents); on any error nothing lands.
    """
    doc_ids = [d.doc_id for d in result.documents]
    if len(set(doc_ids)) != len(doc_ids):
        raise IngestError("the ingest result lists a document twice; merge results with IngestResult.merge")
    known = set(doc_ids)
    orphans = [c.chunk_id for c in result.chunks if c.doc_id not in known]
    if orphans:
        raise IngestError(f"{len(orphans)} chunk(s) belong to no document of the result, e.g. {orphans[0]}")
    with wh.transaction() as con:
        present: set[str] = set()
        if doc_ids:
            rows = con.execute(
                "SELECT doc_id FROM documents WHERE doc_id IN (SELECT unnest(?::VARCHAR[]))", [doc_ids]
            ).fetchall()
            present = {r[0] for r in rows}
        docs = [d.model_copy(update={"ingested_run_id": run_id}) for d in result.documents if d.doc_id not in present]
        chunks = [c for c in result.chunks if c.doc_id not in present]
        skips = [{"run_id": run_id, **s.model_dump()} for s in result.skipped]
        n_docs = wh.write_batch("documents", docs, con=con)
        n_chunks = wh.write_batch("chunks", chunks, con=con)
        n_skips = wh.write_batch("ingest_skips", skips, con=con)
    return IngestWriteSummary(
        run_id=run_id,
        documents_written=n_docs,
        chunks_written=n_chunks,
        skips_written=n_skips,
        already_present=len(present),
    )
