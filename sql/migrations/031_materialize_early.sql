-- Early materialization of sparse cron jobs (issue 21, the herd).
--
-- The materializer creates a job's runs a lookahead (2 s) before their
-- instant. At the top of an hour that is too late for a herd: 100,000 jobs
-- due at one instant leave it 2 s to create 100,000 runs, and the rest are
-- created while the first are being delivered, both on the same cores. A
-- sparse job (the next occurrence more than the lookahead after the one
-- before it) may have its next run created earlier, as soon as the one
-- before it is due, up to sql.EarlyLookahead (30 s) ahead: then the runs of
-- a herd exist before its instant and the instant is a burst of delivery
-- only. At most one run of a job is created ahead beyond the lookahead.
--
-- materialize_at is when the materializer may create the run of the job's
-- next_run_at ahead of the lookahead; null means only within it (frequent
-- schedules, one-shots, paused jobs, and any row whose next_run_at a writer
-- set without it). The materializer sets both; any other write that moves
-- next_run_at without setting materialize_at clears it (the trigger below),
-- so an edit, a resume or a calendar change never leaves it pointing at an
-- occurrence that is no longer the next. A null costs nothing: the column
-- is added without a default (no table rewrite), and the index (migration
-- 032, built without blocking writes) holds only the non-null rows.
ALTER TABLE job_schedules ADD COLUMN materialize_at timestamptz;

CREATE FUNCTION chronos_schedules_clear_early() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.materialize_at := NULL;
    RETURN NEW;
END
$$;

-- Row-level with a WHEN: the condition is checked without calling the
-- function, so the materializer's own updates (which set materialize_at)
-- and every write that leaves next_run_at alone cost nothing more.
CREATE TRIGGER job_schedules_clear_early
    BEFORE UPDATE OF next_run_at ON job_schedules
    FOR EACH ROW
    WHEN (OLD.next_run_at IS DISTINCT FROM NEW.next_run_at
          AND NEW.materialize_at IS NOT NULL
          AND OLD.materialize_at IS NOT DISTINCT FROM NEW.materialize_at)
    EXECUTE FUNCTION chronos_schedules_clear_early();
