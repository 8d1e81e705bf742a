-- Scheduled refreshes (flows/refresh.py). qa_difficulty: a question's difficulty measured by a solver model's
-- pass rate over k attempts, with KG tools and without (tasks/qa/difficulty.py); keyed by the solver model and k,
-- so a new solver or a new k measures again while a re-run measures nothing twice. dataset_versions: every
-- version a refresh exported, what it holds, its diff against the previous one, and where it was published.
CREATE TABLE qa_difficulty (
    qa_id              VARCHAR NOT NULL,
    solver_model       VARCHAR NOT NULL,
    k                  INTEGER NOT NULL,      -- attempts per mode
    solver_role        VARCHAR NOT NULL,      -- the gateway role that answered (policy by default)
    temperature        DOUBLE NOT NULL,
    domain             VARCHAR NOT NULL,
    hop_class          VARCHAR NOT NULL,
    tools_passes       INTEGER,               -- NULL: the mode was not run
    no_tools_passes    INTEGER,
    tools_pass_rate    DOUBLE,
    no_tools_pass_rate DOUBLE,
    label              VARCHAR NOT NULL,      -- trivial | easy | medium | hard | unsolved
    run_id             VARCHAR NOT NULL,
    created_at         TIMESTAMP NOT NULL,
    PRIMARY KEY (qa_id, solver_model, k)
);

CREATE TABLE dataset_versions (
    version          VARCHAR PRIMARY KEY,
    run_id           VARCHAR NOT NULL,        -- the refresh run that exported it
    previous_version VARCHAR,
    inputs_sha256    VARCHAR NOT NULL,        -- questions, paths, trajectories, difficulty labels and filter
    path             VARCHAR NOT NULL,        -- the export directory
    summary          JSON NOT NULL,           -- rows per config/split and per domain/hop class (diffs need no old files)
    diff             JSON NOT NULL,
    repo_id          VARCHAR,                 -- NULL: not published
    revision         VARCHAR,                 -- the Hub tag of this version
    commit_url       VARCHAR,
    status           VARCHAR NOT NULL,        -- exported | published
    created_at       TIMESTAMP NOT NULL,
    published_at     TIMESTAMP
);
