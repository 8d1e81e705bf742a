-- Who wrote each question and each trajectory's thoughts (schemas/qa.py: Writer): the LLM, the deterministic
-- template writer, or the LLM paraphrasing a template question. Rows written before this migration were the LLM's.
ALTER TABLE qa_attempts ADD COLUMN writer VARCHAR DEFAULT 'llm';
ALTER TABLE qa ADD COLUMN writer VARCHAR DEFAULT 'llm';
ALTER TABLE trajectories ADD COLUMN writer VARCHAR DEFAULT 'llm';
