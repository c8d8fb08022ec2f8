-- job_schedules: the narrow schedule row (issue 21, item 1).
--
-- Firing a cron job used to rewrite the wide jobs row (payload, headers,
-- labels; nine indexes, three of them GIN) just to advance next_run_at.
-- The materializer now advances one narrow row per job here, and jobs is
-- written only when the API changes a job. Gap detection (a job behind:
-- next_run_at not after now) and misfire "all" catch-up state live here
-- too, so they never touch the wide row.
--
-- Who writes what:
--   - jobs INSERT (any writer, one row or a batch): a statement-level
--     trigger over the transition table creates the schedule rows. A
--     writer may put next_run_at in the schedule row itself in the same
--     statement (CreateJob does, in a CTE); a writer that still puts it in
--     jobs.next_run_at (an older binary, a batch written against the old
--     shape) gets it moved here and jobs.next_run_at set back to null.
--   - jobs UPDATE of enabled or of the kind of schedule (cron or one-shot):
--     a row trigger copies them here (the materializer's index filters on
--     them). UpdateJob writes next_run_at here itself.
--   - jobs DELETE: the foreign key cascades.
--   - the materializer: next_run_at and catch_up_at, nothing in jobs.
--
-- Expand, then contract: jobs.next_run_at stays (an older binary still
-- selects it) but is null from now on, so an older binary's claim, which
-- holds a job's scheduled runs back while jobs.next_run_at <= now(), never
-- holds them. An older binary's materializer writes jobs.next_run_at
-- without touching updated_at: that raises "this database is migrated for
-- a newer chronos; upgrade this instance". An older binary's API writes
-- (PATCH, resume) change updated_at too: their next_run_at is moved here.
-- A later migration may drop jobs.next_run_at and its two indexes once no
-- older binary runs.

CREATE TABLE job_schedules (
    job_id      bigint PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    -- Copies of jobs.enabled and of "jobs.cron_expr IS NOT NULL", kept by
    -- the triggers below: the indexes' predicates.
    enabled     boolean NOT NULL,
    cron        boolean NOT NULL,
    -- The next occurrence not yet materialized (null: none, or paused).
    -- A paused one-shot keeps its run_at here, so resuming fires it.
    next_run_at timestamptz,
    -- misfire "all": the scheduled_at of the one catch-up run of the job
    -- that may run now; its later catch-up runs are held back by the claim
    -- until it has finished, so missed occurrences reach the target in
    -- order. Null when no catch-up is in progress.
    catch_up_at timestamptz
) WITH (fillfactor = 80); -- room on the page for the materializer's updates

-- The materializer's scan: due enabled schedules in next_run_at order. Its
-- cost grows with the jobs due, not with the jobs defined.
CREATE INDEX job_schedules_due_idx ON job_schedules (next_run_at) WHERE enabled;
-- Enabled cron jobs without a next occurrence (edited by hand, exhausted):
-- the materializer looks here so none is stuck forever.
CREATE INDEX job_schedules_unscheduled_idx ON job_schedules (job_id) WHERE enabled AND cron AND next_run_at IS NULL;
-- Jobs with a misfire "all" catch-up in progress (few, usually none).
CREATE INDEX job_schedules_catch_up_idx ON job_schedules (job_id) WHERE catch_up_at IS NOT NULL;

-- Fill from the jobs as they are: every job gets its row, paused ones and
-- finished one-shots included, with the next_run_at it had.
INSERT INTO job_schedules (job_id, enabled, cron, next_run_at)
SELECT id, enabled, cron_expr IS NOT NULL, next_run_at FROM jobs;

UPDATE jobs SET next_run_at = NULL WHERE next_run_at IS NOT NULL;

-- jobs INSERT: the schedule rows of a statement's new jobs.
CREATE FUNCTION chronos_jobs_schedules_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_schedules (job_id, enabled, cron, next_run_at)
    SELECT id, enabled, cron_expr IS NOT NULL, next_run_at FROM new_jobs
    ON CONFLICT (job_id) DO NOTHING;
    -- A writer of the old shape set jobs.next_run_at: moved above; clear it.
    IF EXISTS (SELECT 1 FROM new_jobs WHERE next_run_at IS NOT NULL) THEN
        UPDATE jobs SET next_run_at = NULL
          FROM new_jobs n
         WHERE jobs.id = n.id AND n.next_run_at IS NOT NULL;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_schedules_insert AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION chronos_jobs_schedules_insert();

-- jobs UPDATE of enabled or of the kind of schedule: copy them.
CREATE FUNCTION chronos_jobs_schedules_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE job_schedules SET enabled = NEW.enabled, cron = NEW.cron_expr IS NOT NULL
     WHERE job_id = NEW.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_schedules_sync AFTER UPDATE OF enabled, cron_expr ON jobs
    FOR EACH ROW
    WHEN (OLD.enabled IS DISTINCT FROM NEW.enabled OR (OLD.cron_expr IS NULL) <> (NEW.cron_expr IS NULL))
    EXECUTE FUNCTION chronos_jobs_schedules_sync();

-- jobs UPDATE of next_run_at, which only an older binary does.
CREATE FUNCTION chronos_jobs_next_run_at_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.next_run_at IS NULL THEN
        -- Clearing it is harmless. (An older binary's API write passes back
        -- the null it read, even for a job whose schedule goes on: the
        -- schedule row keeps the truth.)
        RETURN NEW;
    END IF;
    IF NEW.updated_at IS NOT DISTINCT FROM OLD.updated_at THEN
        -- An older binary's materializer advancing a schedule.
        RAISE EXCEPTION 'this database is migrated for a newer chronos; upgrade this instance'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'next_run_at lives in job_schedules since migration 018';
    END IF;
    -- An older binary's API write (PATCH, resume): keep its next_run_at in
    -- the schedule row.
    UPDATE job_schedules SET next_run_at = NEW.next_run_at WHERE job_id = NEW.id;
    NEW.next_run_at := NULL;
    RETURN NEW;
END
$$;

CREATE TRIGGER jobs_next_run_at_guard BEFORE UPDATE OF next_run_at ON jobs
    FOR EACH ROW EXECUTE FUNCTION chronos_jobs_next_run_at_guard();

-- The leader materializes from job_schedules now: a binary older than this
-- migration may still deliver, but never leads (see migration 017).
UPDATE chronos_compat
   SET min_lead_level = (SELECT version + 1 FROM public.chronos_schema_version),
       min_materialize_level = (SELECT version + 1 FROM public.chronos_schema_version),
       reason = 'schedules moved to job_schedules', updated_at = now();
