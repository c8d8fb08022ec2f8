-- job_run_locks: the one active run of a job whose overlap policy allows
-- only one (skip, queue_one). A claim inserts the row with ON CONFLICT DO
-- NOTHING, which checks the unique index rather than the claimer's
-- snapshot, so two instances claiming runs of one job at the same moment
-- cannot both win. Completion, release and the reaper delete it.
CREATE TABLE job_run_locks (
    job_id bigint PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    run_id bigint NOT NULL UNIQUE
);
