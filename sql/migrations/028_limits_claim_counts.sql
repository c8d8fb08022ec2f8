-- Limits without a write per completion (issue 24, session 9).
--
-- Until now every run leaving leased/running took itself off its key's
-- in_flight through the statement triggers of migration 022: with each
-- run naming its own key, a completion batch of 32 runs locked and wrote
-- 32 limits rows, as many as the claim before it (about 30 µs a run, what
-- the limits bench lost). From here on only the claim writes a key's row:
--
--   in_flight  is an upper bound of the key's runs leased or running, no
--              longer an exact count: the claim adds what it leases, and
--              nothing takes a run off. When the bound leaves a claim too
--              little room, the claim counts the runs in flight instead
--              (sql/limits_claim.go), under the row's lock, and stores
--              that count plus its leases: the count is of the claim's
--              snapshot, and is used only when the row is the version that
--              snapshot sees (no claim leased runs of the key since, as
--              every claim that leases one writes the row), so it is never
--              below what is in flight. The API and the metrics count the
--              runs themselves.
--   held       is a hint, at least the runs held for the key: the claim
--              adds those it holds; chronos_limit_release below lowers it.
--
-- A completion releases held runs of its keys (one per run it finished)
-- in its own statement (sql/complete.go), reading the key's held hint,
-- not writing the row. Runs that leave by other paths (a release at
-- shutdown, the reaper, a deferral, a deleted job) free their slot at
-- once for the claim's count, and the held runs behind them are released
-- by the leader's loop (every 50 ms), which recounts the keys with held
-- runs under their locks first.
--
-- Online: DROP TRIGGER needs job_runs (and its partitions) exclusively, so
-- the lock is taken first, waiting at most 200 ms a try and retrying
-- after a pause, as migration 022 took it: the workload never queues
-- behind this migration for long. The rest is catalogue changes.
CREATE FUNCTION chronos_limits_028_lock() RETURNS void LANGUAGE plpgsql AS $$
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
SELECT chronos_limits_028_lock();
DROP FUNCTION chronos_limits_028_lock();

DROP TRIGGER job_runs_limit_update ON job_runs;
DROP TRIGGER job_runs_limit_delete ON job_runs;
DROP FUNCTION chronos_runs_limit_update();
DROP FUNCTION chronos_runs_limit_delete();
DROP FUNCTION chronos_limit_account(text[], integer[], integer[]);

-- chronos_limit_release releases up to want[i] held runs of keys[i] (no
-- more than the key has room for by its row), oldest first, and returns
-- how many; then it lowers the held hint of each key by what it released
-- (never to 0 by inference: a claim that held a run this did not see yet
-- has added it to the hint; a hint left too high costs a count every
-- 50 ms until the leader's minute recount sets it). The
-- caller sets the rows' in_flight to a count first (the claim no longer
-- keeps it exact: see ReleaseLimitedRuns and PutLimit, sql/limits.go),
-- each in a transaction of its own. Locks go in the claim's order: the
-- runs first (SKIP LOCKED: a run being claimed or released by another
-- statement is not waited for), the keys' rows after, in key order, in a
-- statement of their own (after the runs' statement triggers ran), so
-- this never holds a key while waiting for a run a claim holds.
CREATE OR REPLACE FUNCTION chronos_limit_release(p_keys text[], p_want integer[]) RETURNS integer
    LANGUAGE plpgsql AS $$
DECLARE
    v_keys text[];
    v_caps integer[];
    v_got  integer[];
BEGIN
    WITH caps AS (
        SELECT k.key, least(k.want, chronos_limit_room(l)) AS cap
          FROM unnest(p_keys, p_want) AS k(key, want)
          JOIN limits l ON l.key = k.key AND l.held > 0
    ), picked AS (
        SELECT c.key, h.id, h.scheduled_at
          FROM caps c,
               LATERAL (SELECT h.id, h.scheduled_at FROM job_runs h
                         WHERE h.limit_key = c.key AND h.limit_held AND h.held AND h.status = 'pending'
                         ORDER BY h.available_at, h.id
                         LIMIT c.cap
                           FOR UPDATE SKIP LOCKED) h
    ), released AS (
        UPDATE job_runs r SET held = false, limit_held = false
          FROM picked p
         WHERE r.id = p.id AND r.scheduled_at = p.scheduled_at
           AND r.limit_held AND r.held AND r.status = 'pending'
        RETURNING p.key
    )
    SELECT array_agg(c.key ORDER BY c.key), array_agg(c.cap ORDER BY c.key),
           array_agg((SELECT count(*) FROM released r WHERE r.key = c.key)::integer ORDER BY c.key)
      INTO v_keys, v_caps, v_got
      FROM caps c;
    IF v_keys IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM 1 FROM limits WHERE key = ANY (v_keys) ORDER BY key FOR UPDATE;
    UPDATE limits l
       SET held = greatest(0, l.held - g.got)
      FROM unnest(v_keys, v_caps, v_got) AS g(key, cap, got)
     WHERE l.key = g.key;
    RETURN (SELECT coalesce(sum(x), 0) FROM unnest(v_got) AS x)::integer;
END
$$;
