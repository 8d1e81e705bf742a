-- Why an attempt got no usable LLM answer, as the gateway's failure kind (gateway/client.py: FailureKind), so that
-- resuming decides on a code instead of the wording of judge_reason. NULL for attempts that are not llm_error.
-- Rows written before this migration: those the old rule retried (no raw text, or "judge unavailable") become
-- endpoint_unavailable (retried again), the other llm_error rows validation (a final verdict), as before.
ALTER TABLE qa_attempts ADD COLUMN failure_kind VARCHAR;
UPDATE qa_attempts SET failure_kind = CASE
        WHEN raw_text IS NULL OR coalesce(judge_reason, '') LIKE 'judge unavailable%' THEN 'endpoint_unavailable'
        ELSE 'validation' END
    WHERE reject_reason = 'llm_error';
