-- Evaluation in Graph-RFT's graph settings (eval/ikg.py, flows/evaluate.py): an item runs on the complete graph
-- or in an IKG view of it (tasks/env/ikg.py), so one question is scored once per setting and the view joins the
-- row key. view_id is '' on the complete graph (a key column cannot be NULL). n_text_calls counts the item's
-- web_search / text_search calls. DuckDB cannot change a table's primary key in place: the table is rebuilt.
CREATE TABLE eval_items_v2 (
    run_id          VARCHAR NOT NULL,
    qa_id           VARCHAR NOT NULL,
    mode            VARCHAR NOT NULL,
    domain          VARCHAR NOT NULL,
    hop_class       VARCHAR NOT NULL,
    split           VARCHAR,
    question        VARCHAR NOT NULL,
    prediction      VARCHAR,
    answers         JSON NOT NULL,
    em              BOOLEAN NOT NULL,
    f1              DOUBLE NOT NULL,
    hit1            BOOLEAN NOT NULL,
    judge_valid     BOOLEAN,
    judge_reason    VARCHAR,
    n_rounds        INTEGER NOT NULL,
    repeated_calls  INTEGER NOT NULL,
    end_reason      VARCHAR NOT NULL,
    error           VARCHAR,
    path_coverage   DOUBLE NOT NULL,
    prompt_tokens   BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    em_strict       BOOLEAN DEFAULT FALSE,
    f1_strict       DOUBLE DEFAULT 0.0,
    hit1_first      BOOLEAN DEFAULT FALSE,
    hit1_any        BOOLEAN DEFAULT FALSE,
    n_tool_calls    INTEGER DEFAULT 0,
    n_explored      INTEGER DEFAULT 0,
    triple_coverage DOUBLE DEFAULT 0.0,
    exploration_efficiency DOUBLE,
    item_key        VARCHAR,
    kg_setting      VARCHAR NOT NULL DEFAULT 'complete',  -- complete | incomplete
    ikg_level       DOUBLE,                               -- the IKG level (0.4 for IKG-40%); NULL when complete
    view_id         VARCHAR NOT NULL DEFAULT '',          -- '<qa_id>@ikg-40'; '' on the complete graph
    n_text_calls    INTEGER NOT NULL DEFAULT 0,           -- web_search / text_search calls of the tool loop
    PRIMARY KEY (run_id, qa_id, mode, view_id)
);
INSERT INTO eval_items_v2 (run_id, qa_id, mode, domain, hop_class, split, question, prediction, answers, em, f1, hit1,
                           judge_valid, judge_reason, n_rounds, repeated_calls, end_reason, error, path_coverage,
                           prompt_tokens, completion_tokens, em_strict, f1_strict, hit1_first, hit1_any, n_tool_calls,
                           n_explored, triple_coverage, exploration_efficiency, item_key)
SELECT run_id, qa_id, mode, domain, hop_class, split, question, prediction, answers, em, f1, hit1, judge_valid,
       judge_reason, n_rounds, repeated_calls, end_reason, error, path_coverage, prompt_tokens, completion_tokens,
       em_strict, f1_strict, hit1_first, hit1_any, n_tool_calls, n_explored, triple_coverage, exploration_efficiency,
       item_key
FROM eval_items;
DROP TABLE eval_items;
ALTER TABLE eval_items_v2 RENAME TO eval_items;
