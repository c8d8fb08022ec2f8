-- Chronos schema: jobs, their runs, and the attempts of each run, with the
-- NOTIFY triggers the listeners fan onto the bus (payloads: see sql/doc.go).

CREATE TABLE jobs (
    id                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name                 text NOT NULL,
    cron_expr            text,
    run_at               timestamptz,
    timezone             text NOT NULL DEFAULT 'UTC',
    target_url           text NOT NULL,
    method               text NOT NULL DEFAULT 'POST',
    headers              jsonb NOT NULL DEFAULT '{}',
    -- json, not jsonb: the payload is sent byte for byte as the user gave it.
    payload              json,
    timeout_seconds      integer NOT NULL DEFAULT 30,
    max_retries          integer NOT NULL DEFAULT 3,
    backoff              text NOT NULL DEFAULT 'exponential',
    backoff_base_seconds double precision NOT NULL DEFAULT 2,
    backoff_max_seconds  double precision NOT NULL DEFAULT 600,
    overlap              text NOT NULL DEFAULT 'allow',
    enabled              boolean NOT NULL DEFAULT true,
    next_run_at          timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT jobs_name_check CHECK (length(btrim(name)) BETWEEN 1 AND 200),
    CONSTRAINT jobs_schedule_check CHECK ((cron_expr IS NULL) <> (run_at IS NULL)),
    CONSTRAINT jobs_cron_expr_check CHECK (length(cron_expr) <= 256),
    CONSTRAINT jobs_timezone_check CHECK (length(timezone) BETWEEN 1 AND 64),
    CONSTRAINT jobs_target_url_check CHECK (length(target_url) BETWEEN 1 AND 2048),
    CONSTRAINT jobs_method_check CHECK (method IN ('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD')),
    CONSTRAINT jobs_headers_check CHECK (jsonb_typeof(headers) = 'object'),
    CONSTRAINT jobs_timeout_seconds_check CHECK (timeout_seconds BETWEEN 1 AND 3600),
    CONSTRAINT jobs_max_retries_check CHECK (max_retries BETWEEN 0 AND 100),
    CONSTRAINT jobs_backoff_check CHECK (backoff IN ('exponential', 'linear')),
    CONSTRAINT jobs_backoff_base_seconds_check CHECK (backoff_base_seconds > 0 AND backoff_base_seconds <= 604800),
    CONSTRAINT jobs_backoff_max_seconds_check CHECK (backoff_max_seconds >= backoff_base_seconds AND backoff_max_seconds <= 604800),
    CONSTRAINT jobs_overlap_check CHECK (overlap IN ('allow', 'skip', 'queue_one'))
);

-- The materializer's scan: due enabled jobs in next_run_at order. Its cost
-- grows with the jobs due, not with the jobs defined.
CREATE INDEX jobs_due_idx ON jobs (next_run_at) WHERE enabled;

-- Enabled cron jobs without a next occurrence (schedule exhausted, or
-- edited by hand): the materializer looks here so none is stuck forever.
CREATE INDEX jobs_unscheduled_idx ON jobs (id) WHERE enabled AND next_run_at IS NULL AND cron_expr IS NOT NULL;

CREATE TABLE job_runs (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id           bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    scheduled_at     timestamptz NOT NULL,
    trigger          text NOT NULL,
    catch_up         boolean NOT NULL DEFAULT false,
    -- No foreign key: the redriven run may be pruned before its redrive.
    redrive_of       bigint,
    status           text NOT NULL DEFAULT 'pending',
    attempt_count    integer NOT NULL DEFAULT 0,
    available_at     timestamptz NOT NULL DEFAULT now(),
    leased_by        text,
    leased_until     timestamptz,
    started_at       timestamptz,
    finished_at      timestamptz,
    last_error       text,
    last_status_code integer,
    created_at       timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT job_runs_trigger_check CHECK (trigger IN ('schedule', 'manual', 'redrive')),
    CONSTRAINT job_runs_status_check CHECK (status IN ('pending', 'leased', 'running', 'succeeded', 'dead')),
    CONSTRAINT job_runs_attempt_count_check CHECK (attempt_count >= 0),
    -- A lease exists exactly while a worker holds the run.
    CONSTRAINT job_runs_lease_check CHECK (
        (status IN ('leased', 'running')) = (leased_by IS NOT NULL AND leased_until IS NOT NULL))
);

-- One run per occurrence: two leaders, or a retried tick, can never create
-- a second run for the same scheduled instant.
CREATE UNIQUE INDEX job_runs_occurrence_key ON job_runs (job_id, scheduled_at) WHERE trigger = 'schedule';
-- Claims: pending runs in available_at order.
CREATE INDEX job_runs_claimable_idx ON job_runs (available_at, id) WHERE status = 'pending';
-- The reaper: held leases by expiry.
CREATE INDEX job_runs_leases_idx ON job_runs (leased_until) WHERE status IN ('leased', 'running');
-- A job's runs, newest first; and filtered by status (also HasActiveRun).
CREATE INDEX job_runs_job_idx ON job_runs (job_id, id DESC);
CREATE INDEX job_runs_job_status_idx ON job_runs (job_id, status, id DESC);
-- The pruner: terminal runs by age.
CREATE INDEX job_runs_prunable_idx ON job_runs (finished_at) WHERE status IN ('succeeded', 'dead');

CREATE TABLE run_attempts (
    run_id        bigint NOT NULL REFERENCES job_runs (id) ON DELETE CASCADE,
    attempt       integer NOT NULL,
    worker_id     text NOT NULL,
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz,
    status_code   integer,
    error         text,
    response_body text,
    duration_ms   bigint,
    PRIMARY KEY (run_id, attempt),
    CONSTRAINT run_attempts_attempt_check CHECK (attempt >= 1)
);

-- chronos_jobs: one notification per created, updated or deleted job. The
-- UPDATE trigger lists the user-visible columns only, so the materializer
-- advancing next_run_at stays silent.
CREATE FUNCTION chronos_notify_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    job_id bigint;
    op text;
BEGIN
    IF TG_OP = 'DELETE' THEN
        job_id := OLD.id;
        op := 'deleted';
    ELSIF TG_OP = 'INSERT' THEN
        job_id := NEW.id;
        op := 'created';
    ELSE
        job_id := NEW.id;
        op := 'updated';
    END IF;
    PERFORM pg_notify('chronos_jobs', json_build_object('op', op, 'job_id', job_id)::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_notify_insert_delete AFTER INSERT OR DELETE ON jobs
    FOR EACH ROW EXECUTE FUNCTION chronos_notify_jobs();
CREATE TRIGGER jobs_notify_update AFTER UPDATE OF
    name, cron_expr, run_at, timezone, target_url, method, headers, payload, timeout_seconds,
    max_retries, backoff, backoff_base_seconds, backoff_max_seconds, overlap, enabled
    ON jobs FOR EACH ROW EXECUTE FUNCTION chronos_notify_jobs();

-- chronos_runs: one notification per statement, over its transition table,
-- counting the rows it left pending, succeeded or dead. Claims (leased),
-- starts (running) and lease renewals leave none, so they stay silent and
-- never take the commit-serialising NOTIFY lock.
CREATE FUNCTION chronos_notify_runs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    payload json;
BEGIN
    SELECT CASE WHEN count(*) > 0 THEN json_strip_nulls(json_build_object(
               'count', count(*),
               'run_id', CASE WHEN min(id) = max(id) THEN min(id) END,
               'job_id', CASE WHEN min(job_id) = max(job_id) THEN min(job_id) END,
               'status', CASE WHEN min(status) = max(status) THEN min(status) END,
               'available_at', min(available_at) FILTER (WHERE status = 'pending')))
           END
      INTO payload
      FROM changed_runs
     WHERE status IN ('pending', 'succeeded', 'dead');
    IF payload IS NOT NULL THEN
        PERFORM pg_notify('chronos_runs', payload::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER job_runs_notify_insert AFTER INSERT ON job_runs
    REFERENCING NEW TABLE AS changed_runs
    FOR EACH STATEMENT EXECUTE FUNCTION chronos_notify_runs();
CREATE TRIGGER job_runs_notify_update AFTER UPDATE ON job_runs
    REFERENCING NEW TABLE AS changed_runs
    FOR EACH STATEMENT EXECUTE FUNCTION chronos_notify_runs();
