"""The corpus chunks of a domain, read for the text-search tool (``tasks.env.text_search``)."""

from __future__ import annotations

from tasks.env.text_search import TextChunk
from warehouse.db import Warehouse


def domain_chunks(wh: Warehouse, domain: str) -> list[TextChunk]:
    """The warehouse's corpus chunks of ``domain``, in (document, chunk index) order, titled by their document:
    the chunks the domain's graph facts name in ``source_chunk_ids``. Empty for a domain with no corpus (an
    imported graph), which then gets no IKG variants unless a text collection is added."""
    rows = wh.query(
        "SELECT c.chunk_id, c.text, coalesce(d.title, '') AS title FROM chunks c LEFT JOIN documents d USING (doc_id) "
        "WHERE c.domain = ? ORDER BY c.doc_id, c.chunk_index",
        [domain],
    )
    return [TextChunk(r["chunk_id"], r["text"], r["title"], domain) for r in rows]


__all__ = ["domain_chunks"]
