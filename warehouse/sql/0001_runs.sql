CREATE TABLE runs (
    run_id        VARCHAR PRIMARY KEY,
    flow          VARCHAR NOT NULL,
    parameters    JSON,
    config        JSON,
    config_hash   VARCHAR,
    code_version  VARCHAR,
    started_at    TIMESTAMP NOT NULL,
    ended_at      TIMESTAMP,
    status        VARCHAR NOT NULL,
    error         VARCHAR,
    llm_calls     BIGINT DEFAULT 0,
    llm_cache_hits BIGINT DEFAULT 0,
    prompt_tokens BIGINT DEFAULT 0,
    completion_tokens BIGINT DEFAULT 0,
    llm_failures  BIGINT DEFAULT 0
);
