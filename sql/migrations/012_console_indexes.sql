---- tern: disable-tx ----
-- The dead letters by trigger and by creation time (the console's dead
-- letters page and GET /v1/runs?status=dead; POST /v1/runs/redrive with the
-- same filters).
--
-- Without them, status=dead&trigger=... and status=dead&since=...&until=...
-- walk job_runs_status_idx from the newest dead run and test each one: at
-- 10,000,000 runs (200,000 dead) a window of an hour three days back read
-- 100,000 dead runs (~200 ms), a trigger no dead run has read them all
-- (~450 ms). With them each reads its page and little more (~1-2 ms).
--
-- Both are partial: only dead runs are in them, so they weigh a few MB at
-- that size, and a run enters them once, when it dies; the writes of the
-- run life cycle (claim, start, retry, success) never touch them.
--
-- Online (issue 23): built CONCURRENTLY, outside a transaction, so claims
-- and completions go on meanwhile; an index a failed build left invalid is
-- dropped before the next try.
SET client_min_messages = warning; -- not the IF EXISTS steps' "skipping"
-- Steps that take only SHARE UPDATE EXCLUSIVE (CONCURRENTLY, VALIDATE)
-- may wait long (a concurrent build waits for every older transaction)
-- without holding up a write: they wait up to 5 minutes, not the runner's
-- 1 s lock_timeout, so a long query elsewhere does not fail them.
SET lock_timeout = '5min';
DROP INDEX CONCURRENTLY IF EXISTS job_runs_dead_trigger_idx;
CREATE INDEX CONCURRENTLY job_runs_dead_trigger_idx ON job_runs (trigger, id DESC) WHERE status = 'dead';
DROP INDEX CONCURRENTLY IF EXISTS job_runs_dead_created_idx;
CREATE INDEX CONCURRENTLY job_runs_dead_created_idx ON job_runs (created_at) WHERE status = 'dead';
