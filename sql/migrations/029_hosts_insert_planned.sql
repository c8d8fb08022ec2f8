-- The host insert trigger of migration 026 plans its hold branch ahead of
-- the first hold (issue 24, section 2: a bad host must not slow the others).
--
-- Why: PL/pgSQL prepares each statement of a function the first time the
-- session executes it. The hold branch (which new runs are for a held
-- host, and when they are due) ran only under a hold, so the first
-- deferral after a calm period made every pooled connection that created
-- a run plan it at the same moment: about 40 to 170 ms of planning per
-- connection on the shared 2-core machine (its first create under the
-- hold took 32 to 60 ms against 10 to 20 after this change), all in the
-- half second after the deferral, while the other hosts' runs were being
-- created on the same connections and cores. Traced in `chronos bench
-- hosts` (docs/performance.md, "Session 9: hosts"): every phase with a
-- 429 showed that burst of CPU-bound creates right after its first
-- deferral, and no healthy phase did.
--
-- Now the first run a session creates while nothing is held goes through
-- the hold branch once (nothing is held, so it finds nothing: the gating
-- EXISTS is an InitPlan, a one-time filter, and nothing below it runs),
-- and a session setting remembers that it did. After that the fast path
-- is as before: one probe of the held hosts and a setting read. The
-- result is the same as migration 026's for every insert.
CREATE OR REPLACE FUNCTION chronos_runs_host_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ids    bigint[];
    scheds timestamptz[];
    ats    timestamptz[];
BEGIN
    IF NOT EXISTS (SELECT 1 FROM hosts WHERE held_until > now()) THEN
        IF current_setting('chronos.host_insert_planned', true) = 'on' THEN
            RETURN NULL;
        END IF;
        -- Once per session (again after a rollback, harmlessly): on
        -- through the statement below so that it is planned now, not at
        -- the first hold. It finds nothing: nothing is held.
        PERFORM set_config('chronos.host_insert_planned', 'on', false);
    END IF;
    SELECT array_agg(m.id), array_agg(m.scheduled_at),
           array_agg(m.until + CASE WHEN m.deferral THEN 1000000 + m.n * least(1000, 5000000 / m.total) ELSE 0 END
                               * interval '1 microsecond')
      INTO ids, scheds, ats
      FROM (SELECT n.id, n.scheduled_at, h.until, h.deferral,
                   row_number() OVER (PARTITION BY h.origin ORDER BY n.available_at, n.id) AS n,
                   count(*) OVER (PARTITION BY h.origin) AS total
              FROM (SELECT origin, isfinite(held_until) AS deferral,
                           CASE WHEN isfinite(held_until) THEN held_until
                                ELSE greatest(open_until, pushed_until) END AS until
                      FROM hosts WHERE held_until > now()) h
              JOIN (SELECT d.job_id,
                           (SELECT chronos_origin(j.target_url) FROM jobs j WHERE j.id = d.job_id) AS origin
                      FROM (SELECT DISTINCT job_id FROM new_runs WHERE status = 'pending') d) o
                ON o.origin = h.origin
              JOIN new_runs n ON n.job_id = o.job_id
             WHERE n.status = 'pending' AND n.available_at < h.until
               -- Uncorrelated: a one-time filter, so the pass that only
               -- plans the statement reads nothing else.
               AND EXISTS (SELECT 1 FROM hosts WHERE held_until > now())) m;
    IF ids IS NULL THEN
        RETURN NULL;
    END IF;
    -- By key, from arrays: a probe of each run's partition, never a join
    -- the planner might turn into a scan of job_runs.
    UPDATE job_runs r SET available_at = v.at
      FROM unnest(ids, scheds, ats) AS v(id, scheduled_at, at)
     WHERE r.id = v.id AND r.scheduled_at = v.scheduled_at;
    RETURN NULL;
END
$$;
