---- tern: disable-tx ----
-- The fast path (issue 13): less work per job created and per run
-- delivered, with the same guarantees.
--
-- Online (issue 23): outside a transaction, one short step at a time;
-- indexes built CONCURRENTLY (a replaced one under a new name, then
-- swapped), so claims and completions go on meanwhile on a big job_runs.
-- Every step may run again (a retry starts over).
SET client_min_messages = warning; -- not the IF EXISTS steps' "skipping"
-- Steps that take only SHARE UPDATE EXCLUSIVE (CONCURRENTLY, VALIDATE)
-- may wait long (a concurrent build waits for every older transaction)
-- without holding up a write: they wait up to 5 minutes, not the runner's
-- 1 s lock_timeout, so a long query elsewhere does not fail them; every
-- step that blocks writes keeps the 1 s.

-- 1. Creating a job no longer NOTIFYs inside its own transaction. A NOTIFY
-- holds the cluster's notify lock from before the commit until after its
-- WAL flush, so every notifying commit waited for the previous one's
-- flush: creates ran one fsync at a time. CreateJob now sends the
-- notification after its commit, in a statement of its own that writes no
-- WAL (see sql/notify.go). Updates and deletes keep their triggers: they
-- are rare next to creates.
-- (The new trigger first: a delete meanwhile notifies twice, never not.)
DROP TRIGGER IF EXISTS jobs_notify_delete ON jobs;
CREATE TRIGGER jobs_notify_delete AFTER DELETE ON jobs
    FOR EACH ROW EXECUTE FUNCTION chronos_notify_jobs();
DROP TRIGGER IF EXISTS jobs_notify_insert_delete ON jobs;

-- 2. Fewer index entries per run. Every status change is a non-HOT update
-- that adds an entry to each index whose predicate the new row matches, so
-- an index over all statuses costs one entry per insert, claim and
-- completion. The runs list across jobs by status needs an index of its
-- own only for the statuses that pile up rarely among millions of
-- successes (dead, missed); pending runs have job_runs_claimable_idx,
-- leased and running ones job_runs_leases_idx, and succeeded runs are most
-- of the table, found by walking the primary key.
SET lock_timeout = '5min';
DROP INDEX CONCURRENTLY IF EXISTS job_runs_failed_idx;
CREATE INDEX CONCURRENTLY job_runs_failed_idx ON job_runs (status, id DESC) WHERE status IN ('dead', 'missed');
DROP INDEX CONCURRENTLY IF EXISTS job_runs_status_idx;
-- A job's runs by status: succeeded runs are most of a job's runs, so
-- job_runs_job_idx with a filter finds them; the others (active runs, the
-- failed ones) keep a precise index.
DROP INDEX CONCURRENTLY IF EXISTS job_runs_job_status_idx_new;
CREATE INDEX CONCURRENTLY job_runs_job_status_idx_new ON job_runs (job_id, status, id DESC) WHERE status <> 'succeeded';
DROP INDEX CONCURRENTLY IF EXISTS job_runs_job_status_idx;
ALTER INDEX job_runs_job_status_idx_new RENAME TO job_runs_job_status_idx;
RESET lock_timeout;

-- 3. A first attempt that succeeds before it was marked running (the
-- common case: a target answering within startRecordDelay) is recorded on
-- the run itself instead of a run_attempts row: one heap row, one index
-- entry and one foreign-key check fewer per run. run_attempts_all shows
-- every attempt, wherever it is kept.
ALTER TABLE job_runs
    ADD COLUMN IF NOT EXISTS first_attempt_worker text,
    ADD COLUMN IF NOT EXISTS first_attempt_body   text,
    ADD COLUMN IF NOT EXISTS first_attempt_ms     bigint;

CREATE OR REPLACE VIEW run_attempts_all AS
    SELECT run_id, attempt, worker_id, started_at, finished_at, status_code, error, response_body, duration_ms
      FROM run_attempts
    UNION ALL
    SELECT id, 1, first_attempt_worker, started_at, finished_at, last_status_code, NULL::text,
           first_attempt_body, first_attempt_ms
      FROM job_runs
     WHERE first_attempt_worker IS NOT NULL;

-- 4. Vacuum job_runs often. Every run is inserted, updated twice and,
-- after RUN_RETENTION, deleted: at thousands of runs a second the default
-- autovacuum trigger (20% of the table dead) lets the table and its
-- indexes grow for many minutes between passes. At 2% a pass comes about
-- once per autovacuum_naptime under load, and its space is reused.
-- (Where autovacuum is off altogether, nothing reclaims it: the README's
-- production notes say to keep it on.)
ALTER TABLE job_runs SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02,
                          autovacuum_analyze_scale_factor = 0.02);
