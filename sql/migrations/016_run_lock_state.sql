---- tern: disable-tx ----
-- The overlap lock kept by the database itself, and runs waiting behind it
-- kept out of the claim's way (issue 22, items 1, 2, 8 and 9).
--
-- 1. job_run_locks (migration 003) holds the one active run of a job whose
-- overlap policy allows one (skip, queue_one). Until now only the claim's
-- own completion, release and reclaim statements deleted a lock row, so a
-- run taken back by any other statement (a hand-written UPDATE, another
-- version's reaper) left an orphan that blocked its job forever. Triggers
-- on job_runs now delete a run's lock row in the same statement as any
-- change that takes the run out of leased/running, and any DELETE of the
-- run; if another run of the job is still active (a job switched from
-- allow while two ran) the lock passes to it. The leader's lock check
-- (SweepRunLocks) repairs whatever else may happen, e.g. a hand-edited
-- job_run_locks.
--
-- 2. Runs leased or running when this migration runs get their lock row
-- now: migration 003 created the table empty.
--
-- 3. Held runs. A pending run of a skip/queue_one job that waits behind
-- another run of its job (active, or pending and due earlier) is "held":
-- job_runs.held is true and it is not in job_runs_claimable_idx, so
-- 20,000 runs queued behind one active run cost a claim for an unrelated
-- job nothing (it used to walk all of them: 80 ms per claim). When the
-- run at the head leaves (its lock is released, or it is missed or
-- deleted), the earliest held run of the job is promoted (held = false):
-- one row per completion, where the completion used to rewrite every
-- waiting run of the job to wake the dispatchers (O(N^2) to drain a
-- queue). The promotion's UPDATE is what NOTIFYs the dispatchers. A held
-- run is still status 'pending' to the API. held is an optimisation of
-- the claim only: the lock row alone decides whether a run may start.
--
-- Online (issue 23): outside a transaction, one short step at a time. In
-- one transaction, the new column's ACCESS EXCLUSIVE lock on job_runs
-- was held through the backfill and the index builds: every claim and
-- completion waited for all of it. Now the column (catalog only), the
-- functions and triggers, then the backfill (row locks only), then the
-- indexes, CONCURRENTLY (the claim's under a new name, then swapped).
-- Every step may run again (a retry starts over).
SET client_min_messages = warning; -- not the IF EXISTS steps' "skipping"
-- Steps that take only SHARE UPDATE EXCLUSIVE (CONCURRENTLY, VALIDATE)
-- may wait long (a concurrent build waits for every older transaction)
-- without holding up a write: they wait up to 5 minutes, not the runner's
-- 1 s lock_timeout, so a long query elsewhere does not fail them; every
-- step that blocks writes keeps the 1 s.

ALTER TABLE job_runs ADD COLUMN IF NOT EXISTS held boolean NOT NULL DEFAULT false;

-- chronos_promote_runs promotes the earliest held run of each of jobs
-- whose lock is free. With touch, a job that had none to promote gets its
-- earliest pending run rewritten unchanged instead: that run may have
-- waited behind the lock just released, and the UPDATE's NOTIFY wakes the
-- dispatchers for it. SKIP LOCKED: two promoters of one job take two
-- runs rather than one waiting for, then losing, the other's.
CREATE OR REPLACE FUNCTION chronos_promote_runs(jobs bigint[], touch boolean) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    promoted bigint[];
BEGIN
    WITH p AS (
        UPDATE job_runs r SET held = false
         WHERE r.id = ANY (ARRAY(
             SELECT h.id
               FROM unnest(jobs) AS f(job_id),
                    LATERAL (SELECT h.id FROM job_runs h
                              WHERE h.job_id = f.job_id AND h.held AND h.status = 'pending'
                              ORDER BY h.available_at, h.id LIMIT 1
                                FOR UPDATE SKIP LOCKED) h
              WHERE NOT EXISTS (SELECT 1 FROM job_run_locks l WHERE l.job_id = f.job_id)))
        RETURNING r.job_id)
    SELECT array_agg(job_id) INTO promoted FROM p;
    IF touch THEN
        UPDATE job_runs r SET available_at = r.available_at
         WHERE r.id = ANY (ARRAY(
             SELECT w.id
               FROM unnest(jobs) AS f(job_id),
                    LATERAL (SELECT w.id FROM job_runs w
                              WHERE w.job_id = f.job_id AND w.status = 'pending' AND NOT w.held
                              ORDER BY w.available_at, w.id LIMIT 1
                                FOR UPDATE SKIP LOCKED) w
              WHERE f.job_id <> ALL (coalesce(promoted, '{}'))
                AND NOT EXISTS (SELECT 1 FROM job_run_locks l WHERE l.job_id = f.job_id)));
    END IF;
END
$$;

-- chronos_release_locks drops the lock rows of runs (ids) that are no
-- longer active, passes each job's lock to another active run of the job
-- if there is one, and promotes behind the rest. missed are the jobs of
-- runs that left the queue without ever holding the lock (missed, or
-- deleted while pending and not held): the next run in line moves up.
CREATE OR REPLACE FUNCTION chronos_release_locks(ids bigint[], missed bigint[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    freed bigint[];
BEGIN
    IF cardinality(ids) > 0 THEN
        WITH d AS (
            DELETE FROM job_run_locks l WHERE l.run_id = ANY (ids) RETURNING l.job_id)
        SELECT array_agg(DISTINCT job_id) INTO freed FROM d;
    END IF;
    IF freed IS NOT NULL THEN
        INSERT INTO job_run_locks (job_id, run_id)
        SELECT f.job_id, a.id
          FROM unnest(freed) AS f(job_id),
               LATERAL (SELECT a.id FROM job_runs a
                         WHERE a.job_id = f.job_id AND a.status IN ('leased', 'running')
                         ORDER BY a.id LIMIT 1) a
         WHERE (SELECT j.overlap FROM jobs j WHERE j.id = f.job_id) <> 'allow'
        ON CONFLICT DO NOTHING;
        PERFORM chronos_promote_runs(freed, true);
    END IF;
    IF cardinality(missed) > 0 THEN
        PERFORM chronos_promote_runs(missed, false);
    END IF;
END
$$;

-- After any UPDATE of job_runs: the runs it left neither leased nor
-- running give up their lock (a no-op for the runs that had none). A
-- statement-level trigger over the transition table: one call per
-- statement, whatever the batch, and a statement that leaves every run
-- active (a claim, a start, a renewal) finds nothing to do.
CREATE OR REPLACE FUNCTION chronos_runs_unlock_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM chronos_release_locks(
        ARRAY(SELECT n.id FROM changed_runs n WHERE n.status NOT IN ('leased', 'running')),
        ARRAY(SELECT DISTINCT n.job_id FROM changed_runs n WHERE n.status = 'missed' AND NOT n.held));
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION chronos_runs_unlock_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM chronos_release_locks(
        ARRAY(SELECT o.id FROM changed_runs o WHERE o.status IN ('leased', 'running')),
        ARRAY(SELECT DISTINCT o.job_id FROM changed_runs o WHERE o.status = 'pending' AND NOT o.held));
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS job_runs_unlock_update ON job_runs;
CREATE TRIGGER job_runs_unlock_update AFTER UPDATE ON job_runs
    REFERENCING NEW TABLE AS changed_runs
    FOR EACH STATEMENT EXECUTE FUNCTION chronos_runs_unlock_update();
DROP TRIGGER IF EXISTS job_runs_unlock_delete ON job_runs;
CREATE TRIGGER job_runs_unlock_delete AFTER DELETE ON job_runs
    REFERENCING OLD TABLE AS changed_runs
    FOR EACH STATEMENT EXECUTE FUNCTION chronos_runs_unlock_delete();

-- After an INSERT: a new pending run of a skip/queue_one job is held when
-- its job is locked or has a pending run due no later. The job's overlap
-- is a scalar subquery (a primary-key probe per row, whatever the planner
-- guesses of the transition table), and job_runs is reached by id.
CREATE OR REPLACE FUNCTION chronos_runs_hold_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE job_runs r SET held = true
     WHERE r.id = ANY (ARRAY(
         SELECT n.id FROM changed_runs n
          WHERE n.status = 'pending' AND NOT n.held
            AND (SELECT j.overlap FROM jobs j WHERE j.id = n.job_id) <> 'allow'
            AND (EXISTS (SELECT 1 FROM job_run_locks l WHERE l.job_id = n.job_id)
                 OR EXISTS (SELECT 1 FROM job_runs o
                             WHERE o.job_id = n.job_id AND o.status = 'pending' AND o.id <> n.id
                               AND (o.available_at < n.available_at
                                    OR o.available_at = n.available_at AND o.id < n.id)))));
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS job_runs_hold_insert ON job_runs;
CREATE TRIGGER job_runs_hold_insert AFTER INSERT ON job_runs
    REFERENCING NEW TABLE AS changed_runs
    FOR EACH STATEMENT EXECUTE FUNCTION chronos_runs_hold_insert();

-- chronos_runs NOTIFYs leave held runs out: holding a run is no news to a
-- dispatcher, and its promotion (held = false) is.
CREATE OR REPLACE FUNCTION chronos_notify_runs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    payload json;
BEGIN
    SELECT CASE WHEN count(*) > 0 THEN json_strip_nulls(json_build_object(
               'count', count(*),
               'run_id', CASE WHEN min(id) = max(id) THEN min(id) END,
               'job_id', CASE WHEN min(job_id) = max(job_id) THEN min(job_id) END,
               'status', CASE WHEN min(status) = max(status) THEN min(status) END,
               'available_at', min(available_at) FILTER (WHERE status = 'pending')))
           END
      INTO payload
      FROM changed_runs
     WHERE status IN ('pending', 'succeeded', 'dead') AND NOT held;
    IF payload IS NOT NULL THEN
        PERFORM pg_notify('chronos_runs', payload::text);
    END IF;
    RETURN NULL;
END
$$;

-- The state of the runs there now, with the triggers above already
-- keeping it for every change from here on.
-- Locks for the runs in flight now (item 2): the oldest active run of
-- each skip/queue_one job takes it.
INSERT INTO job_run_locks (job_id, run_id)
SELECT DISTINCT ON (r.job_id) r.job_id, r.id
  FROM job_runs r JOIN jobs j ON j.id = r.job_id
 WHERE r.status IN ('leased', 'running') AND j.overlap <> 'allow'
 ORDER BY r.job_id, r.id
ON CONFLICT DO NOTHING;

-- Hold what waits: every pending run of a locked job, and every pending
-- run but the earliest of an unlocked one. The runs are picked first (a
-- read), then updated by id 500 at a time, each batch committed: a run's
-- row stays locked for one batch, not for the whole backfill (measured
-- at 2,000,000 runs, one statement made a write of a held run wait 1.3 to
-- 4.7 s). A run claimed meanwhile is left alone (status).
DO $$
DECLARE
    ids bigint[];
    i   int := 1;
BEGIN
    ids := ARRAY(
        SELECT w.id
          FROM (SELECT p.id, row_number() OVER (PARTITION BY p.job_id ORDER BY p.available_at, p.id) AS n,
                       EXISTS (SELECT 1 FROM job_run_locks l WHERE l.job_id = p.job_id) AS locked
                  FROM job_runs p JOIN jobs j ON j.id = p.job_id
                 WHERE p.status = 'pending' AND j.overlap <> 'allow') w
         WHERE w.locked OR w.n > 1
         ORDER BY w.id);
    WHILE i <= coalesce(cardinality(ids), 0) LOOP
        UPDATE job_runs r SET held = true
         WHERE r.id = ANY (ids[i:i + 499]) AND r.status = 'pending' AND NOT r.held;
        COMMIT;
        i := i + 500;
    END LOOP;
END
$$;

-- The claim's walk: pending runs that are not held, in claim order.
SET lock_timeout = '5min';
DROP INDEX CONCURRENTLY IF EXISTS job_runs_claimable_idx_new;
CREATE INDEX CONCURRENTLY job_runs_claimable_idx_new ON job_runs (available_at, id) WHERE status = 'pending' AND NOT held;
DROP INDEX CONCURRENTLY IF EXISTS job_runs_claimable_idx;
ALTER INDEX job_runs_claimable_idx_new RENAME TO job_runs_claimable_idx;
-- A job's held runs in promotion order. Only held runs have an entry.
DROP INDEX CONCURRENTLY IF EXISTS job_runs_held_idx;
CREATE INDEX CONCURRENTLY job_runs_held_idx ON job_runs (job_id, available_at, id) WHERE held AND status = 'pending';
