-- Named limits (issue 24, section 1): per-key concurrency and rate limits,
-- shared by every job that names the key, enforced by the claim on every
-- instance (the database is the one place they all meet).
--
-- limits holds the declared keys and their state:
--   in_flight    runs of the key leased or running. The claim (the one
--                statement that leases runs) adds those it leases, under
--                the row's lock (FOR UPDATE), which it reads the count
--                under: two instances claiming at once take turns on a
--                key and never together grant more than max_concurrency.
--                The triggers below take off every run that leaves
--                leased/running, whatever statement makes it leave.
--   held         runs of the key held for it (see below), kept by the
--                same triggers: a key with none costs a completion no
--                look for runs to release.
--   tokens,      a token bucket for rate per per_seconds (capacity rate):
--   refilled_at  the bucket as of refilled_at; a lease takes one token.
--
-- jobs.limit_key names the job's limit; a key in use cannot be deleted
-- (ON DELETE RESTRICT: the API answers 409). job_runs.limit_key is the
-- job's key when the run was created (a BEFORE INSERT trigger copies it,
-- so every writer of runs, old or new, gets it right); a PATCH of the
-- job's key moves its pending runs to the new key (sql/limits.go).
--
-- Held runs. A due run whose key has no room when a claim reaches it is
-- held (held = true, the flag of migration 016, which keeps it out of
-- job_runs_claimable_idx, and limit_held = true, which says why): a claim
-- walks it once, not once per claim, so 10,000 runs waiting on one key
-- cost the claims of other keys nothing. When a run of the key leaves
-- leased/running the trigger below releases as many held runs as it
-- freed slots (oldest first); the leader's limit loop releases those a
-- refilled bucket allows (sql/limits.go). A released run that finds the
-- key full again (another instance took the slot) is simply held again.
-- Online: the locks first, job_runs then jobs, as chronos_migration_lock
-- of migration 019 took them (chronos_limits_lock, dropped at the end): waiting at most 200 ms for the first and not
-- at all for the second, retrying after a pause, so the migration never
-- holds one while waiting for the other behind a claim or a completion
-- (which take job_runs, then jobs), and never queues the workload behind
-- it for long. Then everything below is catalogue changes, two triggers,
-- and two partial indexes whose build scans job_runs under that lock (an
-- empty index: no run has a key yet; on a large job_runs, run the
-- migration at a quiet moment).
CREATE FUNCTION chronos_limits_lock() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    tries int := 0;
BEGIN
    PERFORM set_config('lock_timeout', '200ms', true);
    LOOP
        BEGIN
            LOCK TABLE job_runs IN ACCESS EXCLUSIVE MODE;
            LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE NOWAIT;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            tries := tries + 1;
            IF tries >= 50 THEN
                -- lock_not_available: the migration runner tries again later.
                RAISE EXCEPTION 'limits: no lock on job_runs and jobs after % tries', tries
                    USING ERRCODE = 'lock_not_available';
            END IF;
            PERFORM pg_sleep(0.1 + random() * 0.2);
        END;
    END LOOP;
END
$$;
SELECT chronos_limits_lock();

CREATE TABLE limits (
    key             text PRIMARY KEY CHECK (key ~ '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$'),
    max_concurrency integer CHECK (max_concurrency BETWEEN 1 AND 1000000),
    rate            integer CHECK (rate BETWEEN 1 AND 1000000),
    per_seconds     integer CHECK (per_seconds BETWEEN 1 AND 86400),
    in_flight       integer NOT NULL DEFAULT 0,
    held            integer NOT NULL DEFAULT 0,
    tokens          double precision NOT NULL DEFAULT 0,
    refilled_at     timestamptz NOT NULL DEFAULT now(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT limits_rate_per_check CHECK ((rate IS NULL) = (per_seconds IS NULL)),
    CONSTRAINT limits_some_check CHECK (max_concurrency IS NOT NULL OR rate IS NOT NULL)
) WITH (fillfactor = 10); -- a few rows a page: claims and completions that update
                          -- different keys seldom share a page, and each row has
                          -- room for its next version on its page (HOT)

ALTER TABLE jobs ADD COLUMN limit_key text
    CONSTRAINT jobs_limit_key_fkey REFERENCES limits (key) ON DELETE RESTRICT;
-- Its index (the foreign key's check when a limit is deleted, the jobs of
-- a key) is built online by migration 025.

ALTER TABLE job_runs ADD COLUMN limit_key text;
ALTER TABLE job_runs ADD COLUMN limit_held boolean NOT NULL DEFAULT false;
-- Their indexes (held runs of a key in release order; runs of a key
-- waiting and in flight) are built online by migration 025: built here,
-- in this transaction, they blocked every write of job_runs for the scan
-- (582 ms at 200,000 runs, seconds at millions).

-- chronos_limit_tokens is the bucket of l refilled to t: at most rate.
CREATE FUNCTION chronos_limit_tokens(l limits, t timestamptz) RETURNS double precision
    LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN l.rate IS NULL THEN NULL
                ELSE least(l.rate::double precision,
                           l.tokens + greatest(0, extract(epoch FROM t - l.refilled_at)) * l.rate / l.per_seconds)
           END
$$;

-- chronos_limit_room is how many runs of l may be leased now: the free
-- slots and whole tokens, whichever is fewer (a million when unbounded).
CREATE FUNCTION chronos_limit_room(l limits) RETURNS integer LANGUAGE sql VOLATILE AS $$
    SELECT greatest(0, least(coalesce(l.max_concurrency - l.in_flight, 1000000),
                             coalesce(floor(chronos_limit_tokens(l, clock_timestamp()))::integer, 1000000)))
$$;

-- chronos_limit_release releases up to want[i] held runs of keys[i] (no
-- more than the key has room for), oldest first. SKIP LOCKED: a run being
-- claimed or released by another statement is not waited for.
CREATE FUNCTION chronos_limit_release(p_keys text[], p_want integer[]) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    WITH r AS (
        UPDATE job_runs r SET held = false, limit_held = false
         WHERE r.id = ANY (ARRAY(
             SELECT h.id
               FROM unnest(p_keys, p_want) AS k(key, want)
               JOIN limits l ON l.key = k.key AND l.held > 0,
                    LATERAL (SELECT h.id FROM job_runs h
                              WHERE h.limit_key = k.key AND h.limit_held AND h.held AND h.status = 'pending'
                              ORDER BY h.available_at, h.id
                              LIMIT least(k.want, chronos_limit_room(l))
                                FOR UPDATE SKIP LOCKED) h))
           AND r.limit_held AND r.held AND r.status = 'pending'
        RETURNING 1)
    SELECT count(*) INTO n FROM r;
    RETURN n;
END
$$;

-- chronos_limit_account applies, per key, the runs of one statement that
-- left leased/running and that were held or unheld for their limit
-- (limit_held AND held AND pending) to the keys' rows, locked in key
-- order (as the claim locks them), then releases a held run for each slot
-- freed where the key holds any. (Runs enter leased only by the claim,
-- which counts them itself, under the locks it already holds.)
CREATE FUNCTION chronos_limit_account(p_keys text[], p_left integer[], p_held integer[])
    RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    freed_keys text[];
    freed      integer[];
BEGIN
    IF cardinality(p_keys) = 0 THEN
        RETURN;
    END IF;
    PERFORM 1 FROM limits WHERE key = ANY (p_keys) ORDER BY key FOR UPDATE;
    WITH u AS (
        UPDATE limits l
           SET in_flight = greatest(0, l.in_flight - d.gone), held = greatest(0, l.held + d.held)
          FROM unnest(p_keys, p_left, p_held) AS d(k, gone, held)
         WHERE l.key = d.k
        RETURNING l.key AS k, d.gone, l.held)
    SELECT array_agg(u.k), array_agg(u.gone) INTO freed_keys, freed FROM u WHERE u.gone > 0 AND u.held > 0;
    IF freed_keys IS NOT NULL THEN
        PERFORM chronos_limit_release(freed_keys, freed);
    END IF;
END
$$;

-- After any UPDATE of job_runs: count, per key, the runs that left
-- leased/running (a completion, a retry, a release, a reclaim) and those
-- held or unheld for their limit. A statement that did neither to a
-- keyed run (a claim that held nothing, a start, a renewal) returns at
-- the first check.
CREATE FUNCTION chronos_runs_limit_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_keys text[];
    v_left integer[];
    v_held integer[];
BEGIN
    IF NOT EXISTS (SELECT 1 FROM old_runs
                    WHERE limit_key IS NOT NULL AND (status IN ('leased', 'running') OR limit_held AND held))
       AND NOT EXISTS (SELECT 1 FROM new_runs WHERE limit_key IS NOT NULL AND limit_held AND held) THEN
        RETURN NULL;
    END IF;
    SELECT array_agg(key ORDER BY key), array_agg(l ORDER BY key), array_agg(h ORDER BY key)
      INTO v_keys, v_left, v_held
      FROM (SELECT key, sum(l)::integer AS l, sum(h)::integer AS h
              FROM (SELECT n.limit_key AS key, 0 AS l,
                           (n.limit_held AND n.held AND n.status = 'pending')::integer AS h
                      FROM new_runs n
                     WHERE n.limit_key IS NOT NULL AND n.limit_held AND n.held
                    UNION ALL
                    SELECT o.limit_key,
                           (o.status IN ('leased', 'running') AND n.status NOT IN ('leased', 'running'))::integer,
                           -(o.limit_held AND o.held AND o.status = 'pending')::integer
                      FROM new_runs n JOIN old_runs o ON o.id = n.id AND o.scheduled_at = n.scheduled_at
                     WHERE o.limit_key IS NOT NULL) c
             GROUP BY key) s
     WHERE l <> 0 OR h <> 0;
    PERFORM chronos_limit_account(coalesce(v_keys, '{}'), v_left, v_held);
    RETURN NULL;
END
$$;

CREATE FUNCTION chronos_runs_limit_delete() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_keys text[];
    v_left integer[];
    v_held integer[];
BEGIN
    SELECT array_agg(key ORDER BY key), array_agg(l ORDER BY key), array_agg(-h ORDER BY key) INTO v_keys, v_left, v_held
      FROM (SELECT o.limit_key AS key,
                   (count(*) FILTER (WHERE o.status IN ('leased', 'running')))::integer AS l,
                   (count(*) FILTER (WHERE o.limit_held AND o.held AND o.status = 'pending'))::integer AS h
              FROM old_runs o
             WHERE o.limit_key IS NOT NULL
             GROUP BY 1) c
     WHERE l > 0 OR h > 0;
    IF v_keys IS NOT NULL THEN
        PERFORM chronos_limit_account(v_keys, v_left, v_held);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER job_runs_limit_update AFTER UPDATE ON job_runs
    REFERENCING OLD TABLE AS old_runs NEW TABLE AS new_runs
    FOR EACH STATEMENT EXECUTE FUNCTION chronos_runs_limit_update();
CREATE TRIGGER job_runs_limit_delete AFTER DELETE ON job_runs
    REFERENCING OLD TABLE AS old_runs
    FOR EACH STATEMENT EXECUTE FUNCTION chronos_runs_limit_delete();

-- A new run takes its job's key (a primary-key probe; null for most).
CREATE FUNCTION chronos_runs_limit_key() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.limit_key := (SELECT j.limit_key FROM jobs j WHERE j.id = NEW.job_id);
    RETURN NEW;
END
$$;

CREATE TRIGGER job_runs_limit_key BEFORE INSERT ON job_runs
    FOR EACH ROW EXECUTE FUNCTION chronos_runs_limit_key();

DROP FUNCTION chronos_limits_lock();
