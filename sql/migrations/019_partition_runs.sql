---- tern: disable-tx ----
-- Issue 21 (2): job_runs and run_attempts become range-partitioned, so the
-- leader drops history a partition at a time (sql/partitions.go) instead
-- of deleting it row by row.
--
--   job_runs      RANGE (scheduled_at). UNIQUE (job_id, scheduled_at) for
--                 scheduled runs stays enforceable (a unique index of a
--                 partitioned table must contain the key); the primary key
--                 becomes (id, scheduled_at), and the unique index on
--                 active redrives (redrive_of, scheduled_at): a redrive
--                 copies its run's scheduled_at, so it is the same rule.
--   run_attempts  RANGE (run_id). Run ids come from one identity and grow,
--                 so an attempts partition [a, b) may go once no run with
--                 an id in [a, b) is left: attempts live exactly as long as
--                 their runs, and no statement that writes attempts changes.
--   *_default     catch-alls: a run scheduled before the oldest partition
--                 or after the newest (a one-shot years away, a catch-up of
--                 a yearly job) still has a place, so no insert ever fails
--                 for want of a partition.
--
-- Online, on a database that holds data and is in use. The existing tables
-- become the oldest partitions (job_runs_legacy, run_attempts_legacy), each
-- attached with a bounding CHECK that was validated beforehand, so ATTACH
-- scans nothing; every index the parents need exists on them beforehand,
-- built CONCURRENTLY, so attaching builds none. Hence this file runs
-- outside a transaction (disable-tx), one short step at a time:
--
--   1. pick the bounds (a read: max(scheduled_at), the id sequence);
--   2. add the CHECKs NOT VALID               ACCESS EXCLUSIVE, catalog only;
--   3. VALIDATE them                          SHARE UPDATE EXCLUSIVE: reads
--                                             and writes go on during the scan;
--   4. build the unique indexes the parents   CONCURRENTLY;
--      need (those whose key lacks scheduled_at, rewritten to include it);
--   5. swap (the next migration, 020, in   ACCESS EXCLUSIVE, catalog only
--      one transaction): rename, create the   (measured: TestPartitionMigration).
--      parents from the tables' own
--      definitions, attach.
--
-- Every step that needs ACCESS EXCLUSIVE takes it with a 200 ms lock_timeout
-- and retries (up to 50 times), so a waiting migration never queues claims
-- behind it for long. Every step is idempotent: a migration interrupted
-- half way is simply run again.
--
-- The parents are built from the tables as they are at migration time
-- (LIKE, the indexes from pg_index, the triggers from pg_trigger, the
-- views from pg_depend), so columns, indexes, triggers and views added by
-- earlier migrations come along. Foreign keys that reference job_runs
-- (run_attempts.run_id until now) are dropped, each reported as a NOTICE:
-- a partitioned job_runs has no unique id to reference, and a reference
-- would forbid dropping partitions. Deleting a job still deletes its runs
-- (job_runs.job_id keeps its foreign key); the attempts of those runs stay
-- until their partition goes (no query shows an attempt without its run).
--
-- Run ids continue from attempts_bound (the sequence's value when the
-- migration started, plus a margin for the runs created while it ran), so
-- the legacy attempts partition holds the attempts of legacy runs only.

CREATE TABLE IF NOT EXISTS chronos_partitioning_migration (
    runs_bound     timestamptz NOT NULL,
    attempts_bound bigint NOT NULL
);

-- chronos_migration_lock takes ACCESS EXCLUSIVE on the tables in order,
-- waiting at most 200 ms for the first and not at all for the others
-- (holding the first while waiting for another would hold up the queries
-- of the first), retrying after a pause: a migration waiting for its lock
-- blocks the queries queued behind it, so it must never wait long.
CREATE OR REPLACE FUNCTION chronos_migration_lock(VARIADIC tables text[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    tries int := 0;
BEGIN
    PERFORM set_config('lock_timeout', '200ms', true);
    LOOP
        BEGIN
            EXECUTE format('LOCK TABLE %I IN ACCESS EXCLUSIVE MODE', tables[1]);
            FOR i IN 2 .. cardinality(tables) LOOP
                EXECUTE format('LOCK TABLE %I IN ACCESS EXCLUSIVE MODE NOWAIT', tables[i]);
            END LOOP;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            tries := tries + 1;
            IF tries >= 50 THEN
                -- lock_not_available: the migration runner tries again later.
                RAISE EXCEPTION 'partitioning job_runs: no lock on % after % tries', tables, tries
                    USING ERRCODE = 'lock_not_available';
            END IF;
            PERFORM pg_sleep(0.1 + random() * 0.2);
        END;
    END LOOP;
END
$$;

-- 1. The bounds. runs_bound lies past every scheduled_at there is, with a
-- margin (an hour or two) for the runs created while the migration runs:
-- the legacy partition takes every run before it. An empty table (a new
-- installation) gets a bound a minute ahead, so its first partitions are
-- the leader's, of the width its RUN_RETENTION asks for.
DO $$
DECLARE
    b timestamptz;
    last bigint;
    empty boolean;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'job_runs'::regclass) = 'p'
       OR EXISTS (SELECT 1 FROM chronos_partitioning_migration) THEN
        RETURN;
    END IF;
    empty := NOT EXISTS (SELECT 1 FROM job_runs);
    IF empty THEN
        b := date_trunc('minute', now()) + interval '1 minute';
    ELSE
        b := date_trunc('hour', greatest(now(), (SELECT max(scheduled_at) FROM job_runs))) + interval '2 hours';
    END IF;
    -- The last id handed out: a sequence never called (a new
    -- installation) reports its start as last_value, unused, so a new
    -- installation's first run is still run 1.
    EXECUTE 'SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM '
            || pg_get_serial_sequence('job_runs', 'id') INTO last;
    INSERT INTO chronos_partitioning_migration (runs_bound, attempts_bound)
    VALUES (b, last + CASE WHEN empty THEN 1 ELSE 10000000 END);
END
$$;

-- 2. The bounding CHECKs, NOT VALID: a catalog change, checked for new
-- rows at once and for the existing ones by step 3.
DO $$
DECLARE
    m record;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'job_runs'::regclass) = 'p' THEN
        RETURN;
    END IF;
    SELECT * INTO m FROM chronos_partitioning_migration;
    PERFORM chronos_migration_lock('job_runs', 'run_attempts');
    IF NOT EXISTS (SELECT 1 FROM pg_constraint
                    WHERE conrelid = 'job_runs'::regclass AND conname = 'job_runs_partition_bound') THEN
        EXECUTE format('ALTER TABLE job_runs ADD CONSTRAINT job_runs_partition_bound CHECK (scheduled_at < %L) NOT VALID',
                       m.runs_bound);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_constraint
                    WHERE conrelid = 'run_attempts'::regclass AND conname = 'run_attempts_partition_bound') THEN
        EXECUTE format('ALTER TABLE run_attempts ADD CONSTRAINT run_attempts_partition_bound CHECK (run_id < %s) NOT VALID',
                       m.attempts_bound);
    END IF;
END
$$;

-- 3. Validate: a scan under SHARE UPDATE EXCLUSIVE, which claims,
-- completions and inserts do not wait for.
DO $$
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'job_runs'::regclass) <> 'p' THEN
        ALTER TABLE job_runs VALIDATE CONSTRAINT job_runs_partition_bound;
    END IF;
END
$$;
DO $$
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'run_attempts'::regclass) <> 'p' THEN
        ALTER TABLE run_attempts VALIDATE CONSTRAINT run_attempts_partition_bound;
    END IF;
END
$$;

-- 4. The unique indexes the parent needs, built concurrently on the table
-- that becomes its first partition: the primary key (id) becomes
-- (id, scheduled_at), the active-redrive key (redrive_of) becomes
-- (redrive_of, scheduled_at). (run_attempts' key (run_id, attempt)
-- already contains its partition key.) A build interrupted earlier leaves
-- an invalid index: dropped first, so it is built again.
DO $$
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'job_runs'::regclass) = 'p' THEN
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_index WHERE NOT indisvalid AND indexrelid IN (
                   SELECT oid FROM pg_class WHERE relname IN ('job_runs_legacy_id_key', 'job_runs_legacy_redrive_key'))) THEN
        PERFORM chronos_migration_lock('job_runs');
        DROP INDEX IF EXISTS job_runs_legacy_id_key;
        DROP INDEX IF EXISTS job_runs_legacy_redrive_key;
    END IF;
END
$$;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS job_runs_legacy_id_key ON job_runs (id, scheduled_at);
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS job_runs_legacy_redrive_key ON job_runs (redrive_of, scheduled_at)
    WHERE redrive_of IS NOT NULL AND status IN ('pending', 'leased', 'running');

DROP FUNCTION IF EXISTS chronos_migration_lock(text[]);
