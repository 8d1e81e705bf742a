-- What an evaluation item's result depends on (the question and its gold paths, the mode, the evaluation settings,
-- the policy and judge endpoints as configured, the embedder, the evaluation code): a later evaluate-policy run
-- copies a finished item with the same key instead of asking the endpoint again through the cache. NULL for items
-- written before the key existed: they are never reused.
ALTER TABLE eval_items ADD COLUMN item_key VARCHAR;
