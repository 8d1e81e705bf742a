-- Distilled trajectories (schemas/trajectories.py: one row per (qa_id, kind, sample), accepted or rejected).
-- messages are OpenAI chat messages (assistant tool_calls, tool observations); reasoning[i] is the thought of the
-- i-th assistant message. Lists and objects are JSON, as in 0007_qa.sql.
CREATE TABLE trajectories (
    trajectory_id      VARCHAR PRIMARY KEY,  -- "traj-" + sha256(qa_id, kind, sample)[:24]
    qa_id              VARCHAR NOT NULL,
    kind               VARCHAR NOT NULL,     -- template | rollouts | cot
    sample             INTEGER NOT NULL,     -- 0 for template and cot; the draw number for rollouts
    domain             VARCHAR NOT NULL,
    snapshot_id        VARCHAR,
    split              VARCHAR,              -- the question's split when distilled (exports read qa.split)
    status             VARCHAR NOT NULL,     -- accepted | rejected
    reject_reason      VARCHAR,              -- a TrajectoryRejectReason code when rejected
    detail             VARCHAR NOT NULL,
    question           VARCHAR NOT NULL,
    golden_answer      VARCHAR NOT NULL,
    messages           JSON NOT NULL,
    reasoning          JSON NOT NULL,
    final_answer       VARCHAR,
    n_rounds           INTEGER NOT NULL,
    repeated_calls     INTEGER NOT NULL,
    end_reason         VARCHAR,
    tools              JSON NOT NULL,
    gold_path          JSON NOT NULL,
    gold_source        VARCHAR,              -- generator_confirmed | verified_alternative | question_path
    path_coverage      DOUBLE,
    params             JSON NOT NULL,
    run_id             VARCHAR,
    model              VARCHAR,
    prompt_tokens      BIGINT NOT NULL,
    completion_tokens  BIGINT NOT NULL
);
-- No separate UNIQUE (qa_id, kind, sample): the key is a hash of exactly those, and a second unique constraint
-- would make INSERT OR REPLACE (the upsert write_batch uses) ambiguous in DuckDB.
