CREATE TABLE llm_usage (
    run_id            VARCHAR NOT NULL,
    role              VARCHAR NOT NULL,
    model             VARCHAR,
    calls             BIGINT NOT NULL,
    cache_hits        BIGINT NOT NULL,
    prompt_tokens     BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    latency_s_total   DOUBLE NOT NULL,
    latency_s_max     DOUBLE NOT NULL,
    retries           BIGINT NOT NULL,
    reasks            BIGINT NOT NULL,
    failures          JSON,
    PRIMARY KEY (run_id, role)
);
