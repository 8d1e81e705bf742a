-- Relation profiles that do not come from the shipped lexicon or the graph statistics (those are derived again
-- whenever they are needed): the user's corrections (`hopforge graph profiles import`, source 'user') and the
-- profiler role's answers (source 'profiler'; a reply that was malformed or contradicted the graph's statistics is
-- kept with status 'rejected' and its reason, and the label falls back to the next source). Keyed by the
-- normalised label; `fields` is the JSON of the fields that source sets.
CREATE TABLE relation_profiles (
    key VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    label VARCHAR NOT NULL,
    fields VARCHAR NOT NULL,
    status VARCHAR NOT NULL DEFAULT 'ok',
    note VARCHAR,
    run_id VARCHAR,
    updated_at TIMESTAMP,
    PRIMARY KEY (key, source)
);
