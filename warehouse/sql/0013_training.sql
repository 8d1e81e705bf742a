-- Training runs (training/runs.py, flows/train.py). One training_runs row per launched (or dry-run) trainer:
-- the plan's whole configuration, the export it read (version and manifest sha256), the trainer and its version,
-- where the checkpoint went and how it ended. training_metrics holds every logged step's numbers.
CREATE TABLE training_runs (
    train_id         VARCHAR PRIMARY KEY,
    run_id           VARCHAR NOT NULL,      -- the flow run that launched it (runs.run_id)
    kind             VARCHAR NOT NULL,      -- sft | rl | merge (a LoRA adapter merged into its base)
    trainer          VARCHAR NOT NULL,      -- llamafactory | verl | trl
    trainer_version  VARCHAR,               -- NULL for a dry run that never looked at the environment
    export_version   VARCHAR NOT NULL,
    manifest_sha256  VARCHAR NOT NULL,
    base_model       VARCHAR,
    config           JSON NOT NULL,         -- the plan summary: trainer config, files, command
    command          VARCHAR NOT NULL,
    run_dir          VARCHAR NOT NULL,
    output_dir       VARCHAR NOT NULL,
    checkpoint       VARCHAR,               -- set when the trainer finished and saved
    status           VARCHAR NOT NULL,      -- dry_run | running | completed | failed
    error            VARCHAR,
    started_at       TIMESTAMP NOT NULL,
    ended_at         TIMESTAMP,
    final_metrics    JSON                   -- the last logged value of each metric
);

CREATE TABLE training_metrics (
    train_id   VARCHAR NOT NULL,
    step       INTEGER NOT NULL,
    name       VARCHAR NOT NULL,
    value      DOUBLE NOT NULL,
    PRIMARY KEY (train_id, step, name)
);
