-- Hosts: back-pressure and a circuit breaker per origin (issue 24, section 2).
--
-- An origin is "scheme://host:port" of a job's target_url (scheme and host
-- lower-cased, the default port written out): chronos_origin below, which
-- agrees with the Go chronos.Origin on every case of testdata/origins.json.
-- It is IMMUTABLE so that jobs can be indexed by it without a column of
-- their own (no rewrite of jobs, nothing for writers of jobs to fill in).
CREATE FUNCTION chronos_origin(url text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN m IS NULL OR m[2] = '' THEN NULL
                ELSE lower(m[1]) || '://' || lower(m[2]) || ':' ||
                     coalesce(nullif(m[3], ''), CASE lower(m[1]) WHEN 'https' THEN '443' ELSE '80' END)
           END
      FROM (SELECT regexp_match(url,
                '^([A-Za-z][A-Za-z0-9+.-]*)://(?:[^@/?#]*@)?(\[[^]/?#]*\]|[^:/?#]*)(?::([0-9]*))?') AS m) s
$$;

-- The jobs of an origin (a deferral or an opening breaker moves the
-- pending runs of exactly these jobs) have an index built online by
-- migration 025.

-- How often a run was deferred by its host (429/503 with Retry-After)
-- without the attempt counting: past a bound the answer counts as an
-- attempt again, so a host that always says "later" cannot keep a run
-- pending for ever. A constant default: no rewrite of job_runs.
ALTER TABLE job_runs ADD COLUMN deferrals integer NOT NULL DEFAULT 0;

-- One row per origin that ever deferred runs or failed: a handful, so the
-- claim's check against it is a probe of a tiny table (and skipped
-- altogether while no row holds runs back).
CREATE TABLE hosts (
    origin               text PRIMARY KEY,
    -- The latest Retry-After deferral's end.
    deferred_until       timestamptz,
    -- Connection failures and 5xx answers since the last other answer.
    consecutive_failures integer NOT NULL DEFAULT 0,
    -- The breaker: open since opened_at (NULL: closed); its probe goes at
    -- open_until (the cooldown's end). probe_run_id is the one run that
    -- may be claimed while it is open: the lease on the probe.
    opened_at            timestamptz,
    open_until           timestamptz,
    probe_run_id         bigint,
    -- No run of the origin but the probe is claimed before held_until
    -- ('infinity' while the breaker is open). pushed_until is the latest
    -- available_at runs were moved to, so closing the breaker can bring
    -- them back.
    held_until           timestamptz,
    pushed_until         timestamptz,
    -- Totals, for the API and the console.
    deferrals            bigint NOT NULL DEFAULT 0,
    breaker_opens        bigint NOT NULL DEFAULT 0,
    last_status_code     integer,
    last_error           text,
    updated_at           timestamptz NOT NULL DEFAULT now()
);

-- The rows holding runs back: the claim's "is anything held" check and the
-- sweep read only these.
CREATE INDEX hosts_held_idx ON hosts (held_until) WHERE held_until IS NOT NULL;
