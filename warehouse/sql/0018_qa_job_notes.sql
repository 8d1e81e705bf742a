-- Generation jobs that ended before any attempt (no candidate path of their hop class in the seed's rendered
-- subgraph). That outcome is final on the snapshot, as an accepted or used-up job is, so a rerun counts the job
-- as done without loading the graph to find out again.
CREATE TABLE qa_job_notes (
    domain VARCHAR NOT NULL,
    snapshot_id VARCHAR NOT NULL,
    seed VARCHAR NOT NULL,
    hop_class VARCHAR NOT NULL,
    mode VARCHAR NOT NULL,
    note VARCHAR,
    run_id VARCHAR,
    PRIMARY KEY (domain, snapshot_id, seed, hop_class, mode)
);
