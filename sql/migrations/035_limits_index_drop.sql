-- job_runs_limit_idx (migration 025) gives way to the two indexes of
-- migration 033: a limited run no longer writes an entry of it for each
-- version while leased or running (two more a run, what the claim and the
-- start paid for nothing now that the in-flight count has its own index).
-- A binary of the release before reads the same runs through the new
-- indexes (Postgres plans again a prepared statement whose index is
-- dropped).
--
-- Online: DROP INDEX needs job_runs (and its partitions) exclusively, so
-- the lock is taken first, a try at most 200 ms (chronos_lock_table,
-- migration 034): the workload never queues behind this migration for
-- long. The rest is catalogue changes.
SELECT chronos_lock_table('job_runs', 'ACCESS EXCLUSIVE');

DROP INDEX job_runs_limit_idx;
