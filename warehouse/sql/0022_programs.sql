-- Questions as programs (schemas/programs.py): the start, the steps and the constraints a question was written
-- from, executed on the snapshot to the answer. NULL for questions written from a bare path (the LLM's).
ALTER TABLE qa_attempts ADD COLUMN program JSON;
ALTER TABLE qa ADD COLUMN program JSON;
