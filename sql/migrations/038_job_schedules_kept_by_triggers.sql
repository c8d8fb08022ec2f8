-- job_schedules is kept by triggers on jobs, as job_search and job_labels
-- are (migration 011), instead of by a foreign key; and the labels' copy
-- skips the jobs that have none.
--
-- Why: every job created paid for two things it did not need. Each
-- schedule row's insert ran the key's check, a lookup of the job that also
-- locks it (SELECT ... FOR KEY SHARE: the job's heap page written again,
-- and a WAL record); and the labels' copy called jsonb_each_text on every
-- new job's '{}'. On a data-layer run of the batch route (1,000 jobs a
-- statement) the two were about a tenth of Postgres's CPU a job
-- (docs/performance.md, session 27).
--
-- What the key did is kept:
--   - a job's schedule row goes with it: the statement trigger below
--     deletes the rows of the jobs a DELETE removed, in that statement,
--     where ON DELETE CASCADE did (both run at the statement's end, after
--     the jobs' rows are locked, so the lock order does not change);
--   - TRUNCATE jobs (which must cascade to job_runs anyway) empties it,
--     with job_search and job_labels;
--   - no schedule row is written for a job that does not exist: the rows
--     come from the statement that inserts the job (insertJobsSQL, or the
--     insert trigger for a writer of the old shape), or from an update of
--     a job whose row the same transaction holds locked (UpdateJob,
--     bulk enable), which no DELETE can remove under it.
--
-- Online: creating the triggers and dropping the key take SHARE ROW
-- EXCLUSIVE on jobs and ACCESS EXCLUSIVE on job_schedules (the key's own
-- triggers live on both), each tried for at most 200 ms at a time
-- (chronos_lock_table, migration 034); the rest is catalogue changes.
SELECT chronos_lock_table('jobs', 'SHARE ROW EXCLUSIVE');
SELECT chronos_lock_table('job_schedules', 'ACCESS EXCLUSIVE');

CREATE OR REPLACE FUNCTION chronos_job_search_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_search (job_id, name, lname, ldesc)
    SELECT id, name, lower(name), lower(description) FROM new_jobs;
    INSERT INTO job_labels (key, value, job_id)
    SELECT l.key, l.value, n.id FROM new_jobs n, jsonb_each_text(n.labels) l
     WHERE n.labels <> '{}';
    RETURN NULL;
END
$$;

-- jobs DELETE: the schedule rows of the jobs deleted.
CREATE FUNCTION chronos_job_schedules_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM job_schedules WHERE job_id IN (SELECT id FROM old_jobs);
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_schedules_delete AFTER DELETE ON jobs
    REFERENCING OLD TABLE AS old_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION chronos_job_schedules_delete();

CREATE OR REPLACE FUNCTION chronos_job_search_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE job_search, job_labels, job_schedules;
    RETURN NULL;
END
$$;

ALTER TABLE job_schedules DROP CONSTRAINT job_schedules_job_id_fkey;
