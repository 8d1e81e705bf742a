-- LightRAG graph builds (tasks/graph_build.py, schemas/graph_build.py): one row per (run, domain), written in the
-- same transaction as that build's failures. snapshot_id names the graph_snapshots row the flow wrote for the
-- build (NULL when nothing was written, e.g. every document failed). LLM figures are the build's own extractor
-- calls: llm_calls reached the endpoint, cache_hits were answered by the gateway cache.
CREATE TABLE graph_builds (
    run_id            VARCHAR NOT NULL,
    domain            VARCHAR NOT NULL,
    docs_total        BIGINT NOT NULL,
    docs_processed    BIGINT NOT NULL,
    docs_failed       BIGINT NOT NULL,
    chunks            BIGINT NOT NULL,
    entities          BIGINT NOT NULL,
    relations         BIGINT NOT NULL,
    snapshot_id       VARCHAR,
    seconds           DOUBLE NOT NULL,
    llm_calls         BIGINT NOT NULL,
    cache_hits        BIGINT NOT NULL,
    prompt_tokens     BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    written_at        TIMESTAMP DEFAULT current_timestamp,
    PRIMARY KEY (run_id, domain)
);

-- Documents a build could not turn into graph records, with LightRAG's reason (doc_status error_msg).
CREATE TABLE graph_build_failures (
    run_id    VARCHAR NOT NULL,
    domain    VARCHAR NOT NULL,
    doc_id    VARCHAR NOT NULL,
    reason    VARCHAR NOT NULL,
    file_path VARCHAR,
    PRIMARY KEY (run_id, domain, doc_id)
);
