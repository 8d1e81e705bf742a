-- Ingested documents, keyed by a content hash scoped to the domain (schemas/corpus.py: make_doc_id).
CREATE TABLE documents (
    doc_id          VARCHAR PRIMARY KEY,
    domain          VARCHAR NOT NULL,
    source          VARCHAR NOT NULL,
    source_line     BIGINT,
    title           VARCHAR,
    text            VARCHAR NOT NULL,
    content_hash    VARCHAR NOT NULL,
    n_tokens        BIGINT NOT NULL,
    ingested_run_id VARCHAR,
    ingested_at     TIMESTAMP DEFAULT current_timestamp
);

-- Chunks as LightRAG's pipeline stores them: chunk_id = '<doc_id>-chunk-NNN' (the ids in LightRAG source_id).
CREATE TABLE chunks (
    chunk_id    VARCHAR PRIMARY KEY,
    doc_id      VARCHAR NOT NULL,
    domain      VARCHAR NOT NULL,
    chunk_index INTEGER NOT NULL,
    text        VARCHAR NOT NULL,
    n_tokens    INTEGER NOT NULL
);

-- Inputs an ingest run could not use, with the reason; several rows may share (run_id, source, line).
CREATE TABLE ingest_skips (
    run_id      VARCHAR NOT NULL,
    source      VARCHAR NOT NULL,
    line        BIGINT,
    reason_code VARCHAR NOT NULL,
    message     VARCHAR NOT NULL,
    skipped_at  TIMESTAMP DEFAULT current_timestamp
);
