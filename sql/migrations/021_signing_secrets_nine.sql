-- Signing secrets: room for the current one and eight in their grace period.
--
-- The API documents that at most 8 secrets may be in a rotation's grace
-- period at once, beside the job's current secret: 9 entries in all.
-- Migration 004 capped the list at 8, so the 8th rotation with a grace
-- was refused (issue 22, item 6). The new cap is 9.
--
-- NOT VALID: every existing row has at most 8 entries, which satisfies
-- the wider check, so there is nothing to scan; new writes are checked.
-- Adding the constraint this way takes the table's lock only for the
-- catalogue change, never for a scan of every job.
ALTER TABLE jobs
    DROP CONSTRAINT jobs_signing_secrets_check,
    ADD CONSTRAINT jobs_signing_secrets_check CHECK (
        jsonb_typeof(signing_secrets) = 'array' AND jsonb_array_length(signing_secrets) <= 9) NOT VALID;
