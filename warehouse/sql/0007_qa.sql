-- The QA factory (schemas/qa.py: one table per record type, columns = record fields).
-- Lists and nested records are JSON, not VARCHAR[]: Warehouse.write_batch serialises them with json.dumps, and a
-- string cast to VARCHAR[] would lose quotes inside node names ("King's College"). Read them back with
-- from_json(path, '["VARCHAR"]') or path->>0.

-- Seeds sampled for one run: nodes whose depth-d ball (centre included) has an acceptable size.
CREATE TABLE seeds (
    run_id         VARCHAR NOT NULL,
    domain         VARCHAR NOT NULL,
    snapshot_id    VARCHAR,
    node           VARCHAR NOT NULL,
    ball_size      INTEGER NOT NULL,
    depth          INTEGER NOT NULL,
    sample_rank    INTEGER NOT NULL,     -- position in the seeded sample, 0 first
    sampling_seed  BIGINT,
    PRIMARY KEY (run_id, domain, node)
);

-- Every generation attempt, accepted or not; verdicts = [{check, ok, code, reason, blocking}, ...].
CREATE TABLE qa_attempts (
    attempt_id     VARCHAR PRIMARY KEY,
    run_id         VARCHAR,
    domain         VARCHAR NOT NULL,
    snapshot_id    VARCHAR,
    seed           VARCHAR NOT NULL,
    hop_class      VARCHAR NOT NULL,     -- 1-2 | 3+
    mode           VARCHAR NOT NULL,     -- free | candidates
    attempt        INTEGER NOT NULL,     -- 1 = first try
    candidate_id   VARCHAR,              -- P1..PC in candidates mode
    path           JSON NOT NULL,
    question       VARCHAR NOT NULL,
    answer         VARCHAR NOT NULL,
    verdicts       JSON NOT NULL,
    judge_valid    BOOLEAN,
    judge_reason   VARCHAR,
    status         VARCHAR NOT NULL,     -- checked | accepted | rejected
    reject_reason  VARCHAR,              -- a RejectReason code when rejected
    raw_text       VARCHAR
);

-- Accepted questions. qa_id is a content hash (schemas/qa.py: make_qa_id); split is set at export.
CREATE TABLE qa (
    qa_id            VARCHAR PRIMARY KEY,
    domain           VARCHAR NOT NULL,
    snapshot_id      VARCHAR,
    seed             VARCHAR NOT NULL,
    hop_class        VARCHAR NOT NULL,
    path             JSON NOT NULL,
    path_edges       JSON NOT NULL,       -- [{head, tail, relation, keywords, description, directed, forward, source_chunk_ids}]
    question         VARCHAR NOT NULL,
    answer           VARCHAR NOT NULL,
    split            VARCHAR,             -- train | validation | test
    run_id           VARCHAR,
    attempt_id       VARCHAR,
    source_chunk_ids JSON NOT NULL
);

-- Questions dropped after acceptance (dedup) or by a stage without an attempt row. duplicate_of names the kept
-- qa row for duplicate / near_duplicate.
CREATE TABLE qa_rejects (
    run_id        VARCHAR,
    domain        VARCHAR NOT NULL,
    stage         VARCHAR NOT NULL,
    reason        VARCHAR NOT NULL,
    qa_id         VARCHAR,
    attempt_id    VARCHAR,
    duplicate_of  VARCHAR,
    similarity    DOUBLE,
    question      VARCHAR NOT NULL,
    answer        VARCHAR NOT NULL,
    detail        VARCHAR NOT NULL
);

-- Candidate gold paths (bounded search start -> answer) and the verifier's verdict on each.
CREATE TABLE gold_paths (
    qa_id              VARCHAR NOT NULL,
    rank               INTEGER NOT NULL,  -- search order: shortest first, then by node names
    path               JSON NOT NULL,
    triples            JSON NOT NULL,     -- [[subject, relation, object], ...] in stored direction
    verdict            VARCHAR NOT NULL,  -- unverified | valid | invalid
    reason             VARCHAR NOT NULL,
    is_generator_path  BOOLEAN NOT NULL,
    run_id             VARCHAR,
    PRIMARY KEY (qa_id, rank)
);

-- Yields: counts per run, domain, hop class, mode, stage and reject reason ('' for totals).
CREATE TABLE qa_yields (
    run_id     VARCHAR NOT NULL,
    domain     VARCHAR NOT NULL,
    hop_class  VARCHAR NOT NULL,
    mode       VARCHAR NOT NULL,
    stage      VARCHAR NOT NULL,
    count      BIGINT NOT NULL,
    reason     VARCHAR NOT NULL
);
