-- A job's creation entry keeps its fields as json, in a column of its own,
-- instead of as jsonb in changes.
--
-- Why: a creation entry holds every field of the job ({"field": {"after":
-- value}}, about 900 bytes), and parsing that into jsonb was the largest
-- single piece of what a created job cost Postgres: on a data-layer run of
-- the batch route (1,000 jobs a statement) the creating backend spent 38
-- µs a job with it and 32 µs with json, which Postgres only checks and
-- stores as written, and wrote 12 % less WAL (docs/performance.md, session
-- 27). Nothing queries inside a creation entry: the only index into
-- changes is the deleted names' (migration 015), over delete entries.
--
-- creation is null for every other entry, and for the creation entries
-- written before this migration (and by the release before, during a
-- rolling update), whose fields stay in changes: History reads
-- COALESCE(creation::jsonb, changes). An instance of the release before
-- shows the creation entries the new release wrote with no fields, until
-- it is replaced; nothing is lost (docs/upgrading.md).
--
-- Online: adding a nullable column without a default is a catalogue
-- change; its lock on job_audit is tried for at most 200 ms at a time
-- (chronos_lock_table, migration 034).
SELECT chronos_lock_table('job_audit', 'ACCESS EXCLUSIVE');

ALTER TABLE job_audit ADD COLUMN creation json;
