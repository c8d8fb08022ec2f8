-- Idempotency keys and the audit history.

-- Idempotency-Key on POST /v1/jobs, /trigger and /redrive: the first
-- response to a key, per API key name, replayed for 24 hours. status 0
-- marks a request still in progress.
CREATE TABLE idempotency_keys (
    key_name     text NOT NULL,
    key          text NOT NULL,
    fingerprint  bytea NOT NULL,
    status       integer NOT NULL DEFAULT 0,
    content_type text NOT NULL DEFAULT '',
    location     text NOT NULL DEFAULT '',
    body         bytea NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (key_name, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

-- Who changed what, per job: kept after the job is deleted (no foreign
-- key), pruned after AUDIT_RETENTION. changes maps each changed field to
-- {"before": ..., "after": ...}, secrets masked as in job responses.
CREATE TABLE job_audit (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id  bigint NOT NULL,
    action  text NOT NULL,
    actor   text NOT NULL,
    at      timestamptz NOT NULL DEFAULT now(),
    run_id  bigint,
    changes jsonb NOT NULL DEFAULT '{}',
    CONSTRAINT job_audit_action_check CHECK (
        action IN ('create', 'update', 'delete', 'pause', 'resume', 'trigger', 'redrive'))
);
CREATE INDEX job_audit_job_idx ON job_audit (job_id, id DESC);
CREATE INDEX job_audit_at_idx ON job_audit (at);
