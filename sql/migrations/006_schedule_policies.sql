-- Issue 14: scheduling policies. Start and end dates, misfire policy,
-- starting deadline, jitter and excluded dates of a job; the terminal run
-- status "missed" (an occurrence that could not start within its job's
-- starting deadline).
ALTER TABLE jobs
    ADD COLUMN starts_at                 timestamptz,
    ADD COLUMN ends_at                   timestamptz,
    ADD COLUMN misfire                   text NOT NULL DEFAULT 'one',
    ADD COLUMN starting_deadline_seconds integer,
    ADD COLUMN jitter_seconds            integer NOT NULL DEFAULT 0,
    -- [{"from": "2026-12-24", "to": "2026-12-26"}, ...], dates in the job's zone.
    ADD COLUMN exclude                   jsonb NOT NULL DEFAULT '[]',
    ADD CONSTRAINT jobs_misfire_check CHECK (misfire IN ('one', 'none', 'all')),
    ADD CONSTRAINT jobs_starting_deadline_seconds_check CHECK (starting_deadline_seconds BETWEEN 1 AND 604800),
    ADD CONSTRAINT jobs_jitter_seconds_check CHECK (jitter_seconds BETWEEN 0 AND 3600),
    ADD CONSTRAINT jobs_exclude_check CHECK (jsonb_typeof(exclude) = 'array'),
    ADD CONSTRAINT jobs_window_check CHECK (ends_at IS NULL OR starts_at IS NULL OR ends_at > starts_at);

-- fire_at: a scheduled run's occurrence plus its job's jitter, the instant
-- its first attempt was due (available_at moves on with retries).
ALTER TABLE job_runs ADD COLUMN fire_at timestamptz;

ALTER TABLE job_runs DROP CONSTRAINT job_runs_status_check;
ALTER TABLE job_runs ADD CONSTRAINT job_runs_status_check
    CHECK (status IN ('pending', 'leased', 'running', 'succeeded', 'dead', 'missed'));

-- The leader's sweep for runs past their starting deadline (expiredSQL)
-- starts from the few jobs that have one, when they are few.
CREATE INDEX jobs_deadline_idx ON jobs (id) WHERE starting_deadline_seconds IS NOT NULL;

-- The pruner: missed runs are terminal too.
DROP INDEX job_runs_prunable_idx;
CREATE INDEX job_runs_prunable_idx ON job_runs (finished_at) WHERE status IN ('succeeded', 'dead', 'missed');

-- A job past its ends_at has no next run for good: keep it out of the
-- materializer's sweep for unscheduled jobs.
DROP INDEX jobs_unscheduled_idx;
CREATE INDEX jobs_unscheduled_idx ON jobs (id)
    WHERE enabled AND next_run_at IS NULL AND cron_expr IS NOT NULL AND ends_at IS NULL;
