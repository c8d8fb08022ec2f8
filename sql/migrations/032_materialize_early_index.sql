-- chronos:online-indexes
-- The materializer's early pass (migration 031): the schedules whose next
-- run may be created ahead of the lookahead, in materialize_at order. Only
-- the rows that have one: frequent schedules, one-shots and paused jobs
-- have no entry.
CREATE INDEX job_schedules_early_idx ON job_schedules (materialize_at) WHERE enabled AND materialize_at IS NOT NULL;
