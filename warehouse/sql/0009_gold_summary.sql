-- Per question: what the bounded gold-path search found and what the verifier confirmed.
CREATE TABLE gold_path_summary (
    qa_id                VARCHAR PRIMARY KEY,
    run_id               VARCHAR,
    domain               VARCHAR NOT NULL,
    n_candidates         INTEGER NOT NULL,
    n_valid              INTEGER NOT NULL,
    generator_confirmed  BOOLEAN,            -- NULL: the verifier gave no verdict on the generator's path
    search_stopped       VARCHAR,            -- max_paths | time_budget | NULL (complete)
    shortest_hops        INTEGER,
    question_hops        INTEGER NOT NULL,
    llm_failures         INTEGER NOT NULL
);
