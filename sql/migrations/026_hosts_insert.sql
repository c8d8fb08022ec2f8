-- A run created for a host that holds its runs back (issue 24, section 2:
-- a deferral, an open breaker; see sql/hosts.go) is due at the hold's end
-- from the start. Until now such a run waited, due, for the host sweep
-- (once a second) to move it, and every claim meanwhile walked past it,
-- checking its host with a subquery and a regular expression: under a
-- deferral the claim's cost grew with the held host's new runs.
--
-- One trigger per statement, not per row: while no host holds anything
-- (nearly always) it costs one probe of the hosts_held_idx, whatever the
-- statement inserted (the materializer inserts thousands of runs in one).
-- Under a hold, the origin of each job the statement inserted runs for is
-- computed once (a primary-key probe and a regular expression: the cost
-- follows the statement, not the held host's jobs, which may be many),
-- and only the held origins' new runs are written again. A deferral's are moved as a deferral moves
-- runs: to a second (sql.holdLead) after its end, in their order, a
-- millisecond apart (at most 5 s for the lot). An open breaker's go where it moved the last of its runs
-- already (pushed_until; its probe's instant at least), so that closing
-- the breaker brings them back with the others. The statement's RETURNING still shows the
-- instant it inserted (the AFTER trigger runs later): what a dispatcher
-- woken by it finds is that the run is not due yet.
CREATE FUNCTION chronos_runs_host_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ids    bigint[];
    scheds timestamptz[];
    ats    timestamptz[];
BEGIN
    IF NOT EXISTS (SELECT 1 FROM hosts WHERE held_until > now()) THEN
        RETURN NULL;
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
             WHERE n.status = 'pending' AND n.available_at < h.until) m;
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

CREATE TRIGGER job_runs_host_insert AFTER INSERT ON job_runs
    REFERENCING NEW TABLE AS new_runs
    FOR EACH STATEMENT EXECUTE FUNCTION chronos_runs_host_insert();
