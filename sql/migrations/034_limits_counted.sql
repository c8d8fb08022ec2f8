-- Limits counted under the key's lock, without a write per claim (issue
-- 24, session 13).
--
-- Until now a claim wrote the row of every key it leased runs of: it
-- added its leases to in_flight, an upper bound of the key's runs leased
-- or running (migration 028). With each run naming its own key that is a
-- row lock and a row version per run claimed, and the versions pile up in
-- the small limits table between prunes: in the limits bench the claim's
-- UPDATE of limits was most of what a limited burst lost.
--
-- From here on the claim locks the rows of the keys it picked, in key
-- order, as before, and then counts each key's runs leased or running
-- with chronos_limit_counts below: a VOLATILE PL/pgSQL function, whose
-- query takes a snapshot of its own when it runs (READ COMMITTED), after
-- the locks were granted. Every claim that leases runs of a key holds the
-- key's lock until it commits, so that snapshot sees every lease that can
-- exist: the count is exact, and no bound needs keeping. The claim writes
-- a key's row only when it holds runs (the held hint) or the key has a
-- rate (its tokens). A completion, the leader's release and PUT of a
-- limit write no count either; the release's room is counted the same
-- way (chronos_limit_room below).
--
-- in_flight is no longer read or written by this release (it stays, for
-- the release before, and goes in a later one). A binary from before this
-- migration still writes it as it claims, trusting its bound, which this
-- release no longer keeps: such a write fails (limits_in_flight_guard),
-- loudly, with the message of migration 018, and the claim leases
-- nothing. So in a rolling upgrade an older instance delivers no run of a
-- limited key once this migration has run; the newer ones deliver them.
-- The leader's loop of an older binary writes it too, and an older binary
-- may no longer lead (chronos_compat, below).

-- chronos_limit_counts: each key of p_keys with its runs leased or
-- running, counted by a statement of its own (a fresh snapshot): one
-- range of job_runs_limit_in_flight_idx (migration 033) a partition.
-- ROWS: a claim's keys are a few; the default guess of a thousand made
-- the planner hash-join the runs a claim holds with a scan of job_runs.
CREATE FUNCTION chronos_limit_counts(p_keys text[]) RETURNS TABLE (key text, n integer)
    LANGUAGE plpgsql VOLATILE ROWS 10 AS $$
BEGIN
    RETURN QUERY
    SELECT k.key,
           (SELECT count(*) FROM job_runs r
             WHERE r.limit_key = k.key AND r.status IN ('leased', 'running'))::integer
      FROM unnest(p_keys) AS k(key);
END
$$;

-- chronos_limit_room: free slots (counted) and whole tokens, whichever are
-- fewer; a million when unbounded. The leader's release sizes what it
-- releases by it; the claim decides again under the key's lock.
CREATE OR REPLACE FUNCTION chronos_limit_room(l limits) RETURNS integer LANGUAGE sql VOLATILE AS $$
    SELECT greatest(0, least(coalesce(l.max_concurrency - (SELECT c.n FROM chronos_limit_counts(ARRAY[l.key]) c), 1000000),
                             coalesce(floor(chronos_limit_tokens(l, clock_timestamp()))::integer, 1000000)))
$$;

CREATE FUNCTION chronos_limits_in_flight_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'this database is migrated for a newer chronos; upgrade this instance'
        USING ERRCODE = 'object_not_in_prerequisite_state',
              HINT = 'limits are counted under the key''s lock since migration 034: in_flight is no longer kept';
END
$$;

-- chronos_lock_table takes p_table's lock in p_mode for the rest of the
-- migration's transaction, waiting at most 200 ms a try and retrying
-- after a pause, up to 50 tries: a migration queued for a lock makes
-- every statement after it wait too, so it never waits long (022 and 028
-- held their own copies of this loop; the migrations from here on share
-- it).
CREATE FUNCTION chronos_lock_table(p_table regclass, p_mode text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    tries int := 0;
BEGIN
    IF p_mode NOT IN ('SHARE ROW EXCLUSIVE', 'EXCLUSIVE', 'ACCESS EXCLUSIVE') THEN
        RAISE EXCEPTION 'chronos_lock_table: lock mode % is not one a migration takes', p_mode;
    END IF;
    PERFORM set_config('lock_timeout', '200ms', true);
    LOOP
        BEGIN
            EXECUTE format('LOCK TABLE %s IN %s MODE', p_table, p_mode);
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            tries := tries + 1;
            IF tries >= 50 THEN
                RAISE EXCEPTION 'no lock on % after % tries', p_table, tries
                    USING ERRCODE = 'lock_not_available';
            END IF;
            PERFORM pg_sleep(0.1 + random() * 0.2);
        END;
    END LOOP;
END
$$;

-- The trigger takes limits' SHARE ROW EXCLUSIVE lock, which waits for the
-- claims writing key rows at that moment and makes the next wait behind
-- it.
SELECT chronos_lock_table('limits', 'SHARE ROW EXCLUSIVE');

CREATE TRIGGER limits_in_flight_guard BEFORE UPDATE OF in_flight ON limits
    FOR EACH ROW WHEN (NEW.in_flight IS DISTINCT FROM OLD.in_flight)
    EXECUTE FUNCTION chronos_limits_in_flight_guard();

-- An older leader releases held runs by its bound and recounts it: it
-- steps down (migration 017).
UPDATE chronos_compat SET min_lead_level = (SELECT version + 1 FROM public.chronos_schema_version),
       reason = 'limits are counted under the key''s lock (migration 034)', updated_at = now();
