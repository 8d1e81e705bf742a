-- Domain knowledge graphs (schemas/graph.py). A snapshot is immutable; its id is '<domain>-<content_hash[:16]>',
-- so writing the same content again names the same rows. Lists are VARCHAR[] (chunk ids, keywords, file paths).
CREATE TABLE graph_snapshots (
    snapshot_id   VARCHAR PRIMARY KEY,
    domain        VARCHAR NOT NULL,
    content_hash  VARCHAR NOT NULL,
    n_nodes       BIGINT NOT NULL,
    n_edges       BIGINT NOT NULL,
    directed      BOOLEAN NOT NULL,
    source        VARCHAR NOT NULL,       -- lightrag | graphml | triples | rog
    build_run_id  VARCHAR,
    created_at    TIMESTAMP NOT NULL,     -- first write of this content
    written_at    TIMESTAMP NOT NULL,     -- last build that produced it; the latest one is the domain's current graph
    UNIQUE (domain, content_hash)
);

CREATE TABLE entities (
    snapshot_id      VARCHAR NOT NULL,
    domain           VARCHAR NOT NULL,
    name             VARCHAR NOT NULL,
    type             VARCHAR NOT NULL,
    description      VARCHAR NOT NULL,
    source_chunk_ids VARCHAR[] NOT NULL,
    file_paths       VARCHAR[] NOT NULL,
    PRIMARY KEY (snapshot_id, name)
);

-- One row per relation; several rows may join the same pair (different labels or directions).
CREATE TABLE relations (
    snapshot_id      VARCHAR NOT NULL,
    domain           VARCHAR NOT NULL,
    source           VARCHAR NOT NULL,
    target           VARCHAR NOT NULL,
    relation         VARCHAR NOT NULL,    -- '' for LightRAG relations (no label: keywords + description)
    keywords         VARCHAR[] NOT NULL,
    description      VARCHAR NOT NULL,
    weight           DOUBLE NOT NULL,
    source_chunk_ids VARCHAR[] NOT NULL,
    directed         BOOLEAN NOT NULL
);

-- The domain's current graph: the snapshot written last (ties broken by snapshot_id for determinism).
CREATE VIEW current_graph_snapshots AS
SELECT * EXCLUDE (rn) FROM (
    SELECT *, row_number() OVER (PARTITION BY domain ORDER BY written_at DESC, created_at DESC, snapshot_id DESC) AS rn
    FROM graph_snapshots
) WHERE rn = 1;

-- Entity-resolution merges: merged_name was folded into kept_name. from_snapshot_id keeps the pre-merge graph.
CREATE TABLE entity_merges (
    domain           VARCHAR NOT NULL,
    run_id           VARCHAR,
    from_snapshot_id VARCHAR,
    to_snapshot_id   VARCHAR,
    kept_name        VARCHAR NOT NULL,
    merged_name      VARCHAR NOT NULL,
    rule             VARCHAR NOT NULL,    -- case | whitespace | punctuation | plural
    logged_at        TIMESTAMP DEFAULT current_timestamp
);

-- Near-duplicate entity names by embedding cosine: a report for review, never merged automatically.
CREATE TABLE entity_near_duplicates (
    domain      VARCHAR NOT NULL,
    snapshot_id VARCHAR,
    run_id      VARCHAR,
    a           VARCHAR NOT NULL,
    b           VARCHAR NOT NULL,
    cosine      DOUBLE NOT NULL,
    logged_at   TIMESTAMP DEFAULT current_timestamp
);
