-- Evaluation of a policy model (eval/evaluate.py, flows/evaluate.py). One eval_runs row per (flow run, mode):
-- a run evaluates several modes (tools, no_tools baseline, gold_context upper bound) over the same questions, so
-- the key is (run_id, mode). eval_items holds one scored answer per (run, question, mode). Lists are JSON.
CREATE TABLE eval_runs (
    run_id        VARCHAR NOT NULL,      -- the evaluate-policy flow run (runs.run_id)
    mode          VARCHAR NOT NULL,      -- tools | no_tools | gold_context
    role          VARCHAR NOT NULL,      -- the gateway role evaluated (policy)
    model         VARCHAR,
    split         VARCHAR,               -- NULL: every split
    n_items       INTEGER NOT NULL,
    n_errors      INTEGER NOT NULL,      -- items whose endpoint gave no answer (end_reason = 'error')
    em            DOUBLE NOT NULL,
    f1            DOUBLE NOT NULL,
    hit1          DOUBLE NOT NULL,
    judge_acc     DOUBLE,                -- NULL: judge off (or it gave no verdict on any item)
    mean_rounds   DOUBLE NOT NULL,
    mean_repeats  DOUBLE NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (run_id, mode)
);

CREATE TABLE eval_items (
    run_id          VARCHAR NOT NULL,
    qa_id           VARCHAR NOT NULL,
    mode            VARCHAR NOT NULL,
    domain          VARCHAR NOT NULL,
    hop_class       VARCHAR NOT NULL,
    split           VARCHAR,
    question        VARCHAR NOT NULL,
    prediction      VARCHAR,             -- the <answer> content; NULL when the model gave none
    answers         JSON NOT NULL,       -- the gold answers
    em              BOOLEAN NOT NULL,
    f1              DOUBLE NOT NULL,
    hit1            BOOLEAN NOT NULL,
    judge_valid     BOOLEAN,             -- NULL: judge off, or it gave no verdict
    judge_reason    VARCHAR,
    n_rounds        INTEGER NOT NULL,
    repeated_calls  INTEGER NOT NULL,
    end_reason      VARCHAR NOT NULL,    -- answer | no_answer | round_limit | token_limit | no_tool_call | error
    error           VARCHAR,
    path_coverage   DOUBLE NOT NULL,     -- best share of a gold path's triples named in the model's reasoning
    prompt_tokens   BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    PRIMARY KEY (run_id, qa_id, mode)
);
