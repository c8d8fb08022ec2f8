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
-- Under a hold, the held origins' jobs are found by jobs_origin_idx (a
-- handful of origins), not by the origin of each new run, and only their
-- new runs are written again. A deferral's are moved as a deferral moves
-- runs: to a second (sql.holdLead) after its end, in their order, a
-- millisecond apart (at most 5 s for the lot). An open breaker's go where it moved the last of its runs
-- already (pushed_until; its probe's instant at least), so that closing
-- the breaker brings them back with the others. The statement's RETURNING still shows the
-- instant it inserted (the AFTER trigger runs later): what a dispatcher
-- woken by it finds is that the run is not due yet.
CREATE FUNCTION chronos_runs_host_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM hosts WHERE held_until > now()) THEN
        RETURN NULL;
    END IF;
    UPDATE job_runs r
       SET available_at = m.until + CASE WHEN m.deferral THEN 1000000 + m.n * least(1000, 5000000 / m.total) ELSE 0 END
                                    * interval '1 microsecond'
      FROM (SELECT n.id, n.scheduled_at, h.until, h.deferral,
                   row_number() OVER (PARTITION BY h.origin ORDER BY n.available_at, n.id) AS n,
                   count(*) OVER (PARTITION BY h.origin) AS total
              FROM (SELECT origin, isfinite(held_until) AS deferral,
                           CASE WHEN isfinite(held_until) THEN held_until
                                ELSE greatest(open_until, pushed_until) END AS until
                      FROM hosts WHERE held_until > now()) h
              JOIN jobs j ON chronos_origin(j.target_url) = h.origin
              JOIN new_runs n ON n.job_id = j.id
             WHERE n.status = 'pending' AND n.available_at < h.until) m
     WHERE r.id = m.id AND r.scheduled_at = m.scheduled_at;
    RETURN NULL;
END
$$;

CREATE TRIGGER job_runs_host_insert AFTER INSERT ON job_runs
    REFERENCING NEW TABLE AS new_runs
    FOR EACH STATEMENT EXECUTE FUNCTION chronos_runs_host_insert();
