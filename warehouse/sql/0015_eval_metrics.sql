-- Evaluation comparable with the papers (eval/metrics.py): EM and F1 under the strict normaliser too, Hit@1 in
-- both meanings (hit1 stays as the old name of hit1_first), and Explore-on-Graph's exploration metrics (App. P).
ALTER TABLE eval_items ADD COLUMN em_strict BOOLEAN DEFAULT FALSE;
ALTER TABLE eval_items ADD COLUMN f1_strict DOUBLE DEFAULT 0.0;
ALTER TABLE eval_items ADD COLUMN hit1_first BOOLEAN DEFAULT FALSE;
ALTER TABLE eval_items ADD COLUMN hit1_any BOOLEAN DEFAULT FALSE;
ALTER TABLE eval_items ADD COLUMN n_tool_calls INTEGER DEFAULT 0;
ALTER TABLE eval_items ADD COLUMN n_explored INTEGER DEFAULT 0;             -- |T_pred|: relations the tools showed
ALTER TABLE eval_items ADD COLUMN triple_coverage DOUBLE DEFAULT 0.0;       -- |T_pred ∩ T_gold| / |T_gold|
ALTER TABLE eval_items ADD COLUMN exploration_efficiency DOUBLE;            -- |T_pred| / |T_pred ∩ T_gold|; NULL: none touched
