-- job_runs_limit_idx (migration 025) gives way to the two indexes of
-- migration 033: a limited run no longer writes an entry of it for each
-- version while leased or running (two more a run, what the claim and the
-- start paid for nothing now that the in-flight count has its own index).
-- A binary of the release before reads the same runs through the new
-- indexes (Postgres plans again a prepared statement whose index is
-- dropped).
--
-- Online: DROP INDEX needs job_runs (and its partitions) exclusively, so
-- the lock is taken first, waiting at most 200 ms a try and retrying
-- after a pause, as migration 028 took it: the workload never queues
-- behind this migration for long. The rest is catalogue changes.
CREATE FUNCTION chronos_limits_035_lock() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    tries int := 0;
BEGIN
    PERFORM set_config('lock_timeout', '200ms', true);
    LOOP
        BEGIN
            LOCK TABLE job_runs IN ACCESS EXCLUSIVE MODE;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            tries := tries + 1;
            IF tries >= 50 THEN
                RAISE EXCEPTION 'limits: no lock on job_runs after % tries', tries
                    USING ERRCODE = 'lock_not_available';
            END IF;
            PERFORM pg_sleep(0.1 + random() * 0.2);
        END;
    END LOOP;
END
$$;
SELECT chronos_limits_035_lock();
DROP FUNCTION chronos_limits_035_lock();

DROP INDEX job_runs_limit_idx;
