-- Calendars and backfill (issue 24, sections 3 and 4).
--
-- calendars: named sets of dates (holidays). dates is the effective set,
-- sorted: given as a list, or expanded from ical (kept as given, for GET
-- and apply). digest identifies the dates' content: instances cache a
-- calendar compiled for lookups under it, so the materializer reads the
-- dates of a calendar only when they changed.
--
-- job_calendars: the calendars a cron job names, in order, with the job's
-- calendar_policy on each row (the same on every row of a job). A table,
-- not a column of jobs, so that the database keeps the references:
-- deleting a calendar a job names fails on the foreign key (the API's
-- 409), and a job naming a calendar being deleted waits for it (the key
-- share lock the foreign key check takes). A job without calendars has no
-- row and policy "skip".
CREATE TABLE calendars (
    name        text PRIMARY KEY,
    description text NOT NULL DEFAULT '',
    dates       date[] NOT NULL DEFAULT '{}',
    ical        text,
    digest      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT calendars_name_check CHECK (name ~ '^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$' AND length(name) <= 63),
    CONSTRAINT calendars_dates_check CHECK (cardinality(dates) <= 10000)
);

CREATE TABLE job_calendars (
    job_id   bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    position int NOT NULL,
    calendar text NOT NULL REFERENCES calendars (name) ON DELETE RESTRICT,
    policy   text NOT NULL DEFAULT 'skip',
    PRIMARY KEY (job_id, position),
    CONSTRAINT job_calendars_job_calendar_key UNIQUE (job_id, calendar),
    CONSTRAINT job_calendars_policy_check CHECK (policy IN ('skip', 'next_business_day'))
);
CREATE INDEX job_calendars_calendar_idx ON job_calendars (calendar);

-- Backfill runs: trigger "backfill"; a backfill is audited. NOT VALID:
-- every existing row satisfies the wider checks, so there is nothing to
-- scan (job_runs is large and partitioned); new writes are checked.
ALTER TABLE job_runs
    DROP CONSTRAINT job_runs_trigger_check,
    ADD CONSTRAINT job_runs_trigger_check CHECK (trigger IN ('schedule', 'manual', 'redrive', 'backfill')) NOT VALID;
ALTER TABLE job_audit
    DROP CONSTRAINT job_audit_action_check,
    ADD CONSTRAINT job_audit_action_check CHECK (
        action IN ('create', 'update', 'delete', 'pause', 'resume', 'trigger', 'redrive', 'backfill')) NOT VALID;
