---- tern: disable-tx ----
-- The dead-letter queue across jobs (GET /v1/runs, POST /v1/runs/redrive).
--
-- Online (issue 23): outside a transaction, the indexes built
-- CONCURRENTLY, so claims and completions go on while they are built on a
-- big job_runs. Every step may run again (a retry starts over): an index
-- a failed build left invalid is dropped first.
--
SET client_min_messages = warning; -- not the IF EXISTS steps' "skipping"
-- Steps that take only SHARE UPDATE EXCLUSIVE (CONCURRENTLY, VALIDATE)
-- may wait long (a concurrent build waits for every older transaction)
-- without holding up a write: they wait up to 5 minutes, not the runner's
-- 1 s lock_timeout, so a long query elsewhere does not fail them.
SET lock_timeout = '5min';

-- Runs by status, newest first: a page of dead (or pending, ...) runs of
-- every job reads one index range, whatever the number of runs.
DROP INDEX CONCURRENTLY IF EXISTS job_runs_status_idx;
CREATE INDEX CONCURRENTLY job_runs_status_idx ON job_runs (status, id DESC);

-- Redrives of a run: the bulk redrive skips dead runs already redriven.
DROP INDEX CONCURRENTLY IF EXISTS job_runs_redrive_of_idx;
CREATE INDEX CONCURRENTLY job_runs_redrive_of_idx ON job_runs (redrive_of) WHERE redrive_of IS NOT NULL;

-- A version before this one could store two active redrives of one run
-- (two concurrent redrives each saw none): the unique index below would
-- fail on them. Keep the one furthest along (running, then leased, then
-- pending; the oldest among equals). The others still pending are
-- deleted: the kept one delivers the same request. One already leased or
-- running (its delivery in flight) is marked dead with the reason: its
-- worker's completion then finds its lease gone. Each is reported as a
-- NOTICE.
SET client_min_messages = notice; -- what the dedupe did is for the log
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT id, redrive_of, status
          FROM (SELECT id, redrive_of, status,
                       row_number() OVER (PARTITION BY redrive_of
                                          ORDER BY CASE status WHEN 'running' THEN 0 WHEN 'leased' THEN 1 ELSE 2 END, id) AS n
                  FROM job_runs
                 WHERE redrive_of IS NOT NULL AND status IN ('pending', 'leased', 'running')) a
         WHERE n > 1
    LOOP
        IF r.status = 'pending' THEN
            DELETE FROM job_runs WHERE id = r.id;
            RAISE NOTICE 'run % deleted: a second active redrive of run % (a run has one active redrive at most now)', r.id, r.redrive_of;
        ELSE
            UPDATE job_runs SET status = 'dead', leased_by = NULL, leased_until = NULL, finished_at = now(),
                                last_error = 'a second active redrive of run ' || r.redrive_of || ': stopped by migration 007'
             WHERE id = r.id;
            RAISE NOTICE 'run % marked dead: a second active redrive of run %, % when migrated', r.id, r.redrive_of, r.status;
        END IF;
    END LOOP;
END
$$;

SET client_min_messages = warning;

-- A run is never redriven twice while its redrive is active: the database
-- says so, whatever two concurrent redrives (single or bulk) see.
DROP INDEX CONCURRENTLY IF EXISTS job_runs_active_redrive_key;
CREATE UNIQUE INDEX CONCURRENTLY job_runs_active_redrive_key ON job_runs (redrive_of)
    WHERE redrive_of IS NOT NULL AND status IN ('pending', 'leased', 'running');
