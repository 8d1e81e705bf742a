CREATE TABLE smoke_items (
    run_id     VARCHAR NOT NULL,
    item_id    VARCHAR NOT NULL,
    text       VARCHAR NOT NULL,
    ok         BOOLEAN NOT NULL,
    topic      VARCHAR,
    entities   JSON,
    failure    VARCHAR,
    cached     BOOLEAN,
    PRIMARY KEY (run_id, item_id)
);
