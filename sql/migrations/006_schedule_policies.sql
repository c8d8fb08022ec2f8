---- tern: disable-tx ----
-- Issue 14: scheduling policies. Start and end dates, misfire policy,
-- starting deadline, jitter and excluded dates of a job; the terminal run
-- status "missed" (an occurrence that could not start within its job's
-- starting deadline).
--
-- Online (issue 23): outside a transaction, one short step at a time, so
-- claims and completions never wait behind it for long on a big job_runs.
-- Columns are added with constant defaults (catalog only); constraints are
-- added NOT VALID (catalog only) and validated apart (SHARE UPDATE
-- EXCLUSIVE: reads and writes go on during the scan); indexes are built
-- CONCURRENTLY, a replaced index under a new name first, then swapped.
-- Every step may run again (the runner retries a migration from its start);
-- "does not exist, skipping" notices of the IF EXISTS steps stay out of
-- the log.
SET client_min_messages = warning;
-- Steps that take only SHARE UPDATE EXCLUSIVE (CONCURRENTLY, VALIDATE)
-- may wait long (a concurrent build waits for every older transaction)
-- without holding up a write: they wait up to 5 minutes, not the runner's
-- 1 s lock_timeout, so a long query elsewhere does not fail them; every
-- step that blocks writes keeps the 1 s.

ALTER TABLE jobs
    ADD COLUMN IF NOT EXISTS starts_at                 timestamptz,
    ADD COLUMN IF NOT EXISTS ends_at                   timestamptz,
    ADD COLUMN IF NOT EXISTS misfire                   text NOT NULL DEFAULT 'one',
    ADD COLUMN IF NOT EXISTS starting_deadline_seconds integer,
    ADD COLUMN IF NOT EXISTS jitter_seconds            integer NOT NULL DEFAULT 0,
    -- [{"from": "2026-12-24", "to": "2026-12-26"}, ...], dates in the job's zone.
    ADD COLUMN IF NOT EXISTS exclude                   jsonb NOT NULL DEFAULT '[]';

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'jobs'::regclass AND conname = 'jobs_misfire_check') THEN
        ALTER TABLE jobs
            ADD CONSTRAINT jobs_misfire_check CHECK (misfire IN ('one', 'none', 'all')) NOT VALID,
            ADD CONSTRAINT jobs_starting_deadline_seconds_check CHECK (starting_deadline_seconds BETWEEN 1 AND 604800) NOT VALID,
            ADD CONSTRAINT jobs_jitter_seconds_check CHECK (jitter_seconds BETWEEN 0 AND 3600) NOT VALID,
            ADD CONSTRAINT jobs_exclude_check CHECK (jsonb_typeof(exclude) = 'array') NOT VALID,
            ADD CONSTRAINT jobs_window_check CHECK (ends_at IS NULL OR starts_at IS NULL OR ends_at > starts_at) NOT VALID;
    END IF;
END
$$;
SET lock_timeout = '5min';
ALTER TABLE jobs VALIDATE CONSTRAINT jobs_misfire_check;
ALTER TABLE jobs VALIDATE CONSTRAINT jobs_starting_deadline_seconds_check;
ALTER TABLE jobs VALIDATE CONSTRAINT jobs_jitter_seconds_check;
ALTER TABLE jobs VALIDATE CONSTRAINT jobs_exclude_check;
ALTER TABLE jobs VALIDATE CONSTRAINT jobs_window_check;
RESET lock_timeout;

-- fire_at: a scheduled run's occurrence plus its job's jitter, the instant
-- its first attempt was due (available_at moves on with retries).
ALTER TABLE job_runs ADD COLUMN IF NOT EXISTS fire_at timestamptz;

-- The status check admits 'missed': swapped in one statement (catalog
-- only), then validated without blocking writes. Run again after the
-- swap, the check is already the new one (it admits 'missed').
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'job_runs'::regclass AND conname = 'job_runs_status_check'
                      AND pg_get_constraintdef(oid) LIKE '%missed%') THEN
        ALTER TABLE job_runs DROP CONSTRAINT job_runs_status_check,
            ADD CONSTRAINT job_runs_status_check
                CHECK (status IN ('pending', 'leased', 'running', 'succeeded', 'dead', 'missed')) NOT VALID;
    END IF;
END
$$;
SET lock_timeout = '5min';
ALTER TABLE job_runs VALIDATE CONSTRAINT job_runs_status_check;

-- The leader's sweep for runs past their starting deadline (expiredSQL)
-- starts from the few jobs that have one, when they are few.
DROP INDEX CONCURRENTLY IF EXISTS jobs_deadline_idx;
CREATE INDEX CONCURRENTLY jobs_deadline_idx ON jobs (id) WHERE starting_deadline_seconds IS NOT NULL;

-- The pruner: missed runs are terminal too. (Built under a new name, then
-- swapped: the pruner keeps an index meanwhile.)
DROP INDEX CONCURRENTLY IF EXISTS job_runs_prunable_idx_new;
CREATE INDEX CONCURRENTLY job_runs_prunable_idx_new ON job_runs (finished_at) WHERE status IN ('succeeded', 'dead', 'missed');
DROP INDEX CONCURRENTLY IF EXISTS job_runs_prunable_idx;
ALTER INDEX job_runs_prunable_idx_new RENAME TO job_runs_prunable_idx;

-- A job past its ends_at has no next run for good: keep it out of the
-- materializer's sweep for unscheduled jobs.
DROP INDEX CONCURRENTLY IF EXISTS jobs_unscheduled_idx_new;
CREATE INDEX CONCURRENTLY jobs_unscheduled_idx_new ON jobs (id)
    WHERE enabled AND next_run_at IS NULL AND cron_expr IS NOT NULL AND ends_at IS NULL;
DROP INDEX CONCURRENTLY IF EXISTS jobs_unscheduled_idx;
ALTER INDEX jobs_unscheduled_idx_new RENAME TO jobs_unscheduled_idx;
