-- jobs_due_idx and jobs_unscheduled_idx give way: they index
-- jobs.next_run_at, which has been null since migration 018 moved each
-- job's next run to its row of job_schedules (whose own indexes the
-- materializer walks). Every job created still wrote an entry of each: an
-- enabled job's null next_run_at in the one, an enabled cron job's id in
-- the other, two of the eleven index entries a create paid for, and about
-- 40 bytes a job that nothing ever read. The column stays (expand, then
-- contract: a binary of a release before 018 still selects it, by primary
-- key, which needs neither index).
--
-- Online: DROP INDEX needs jobs exclusively, so the lock is taken first,
-- a try at most 200 ms (chronos_lock_table, migration 034): the API never
-- queues behind this migration for long. The rest is catalogue changes.
SELECT chronos_lock_table('jobs', 'ACCESS EXCLUSIVE');

DROP INDEX IF EXISTS jobs_due_idx;
DROP INDEX IF EXISTS jobs_unscheduled_idx;
