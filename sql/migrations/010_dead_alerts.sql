---- tern: disable-tx ----
-- Dead-run alerts: a job's on_dead_url, and an outbox of alerts to send.
--
-- When a run goes dead, a trigger on job_runs writes its alerts into
-- dead_alerts in the transaction that made it dead, whichever path that
-- was (a worker's completion, the reaper, a hand-written UPDATE): an alert
-- is as durable as the death it reports. Any instance then claims and
-- sends them (sql/alerts.go, reactor/alerter.go).

--
-- Online (issue 23): outside a transaction, one short step at a time. In
-- one transaction it held jobs (ACCESS EXCLUSIVE, the column) while it
-- waited for job_runs (the trigger), and a run inserted meanwhile held
-- job_runs while its foreign-key check waited for jobs: a deadlock, or a
-- lock_timeout, with every write of runs queued behind. Every step may
-- run again (a retry starts over); "does not exist, skipping" notices of
-- the IF EXISTS steps are kept out of the log.
SET client_min_messages = warning;
-- Steps that take only SHARE UPDATE EXCLUSIVE (CONCURRENTLY, VALIDATE)
-- may wait long (a concurrent build waits for every older transaction)
-- without holding up a write: they wait up to 5 minutes, not the runner's
-- 1 s lock_timeout, so a long query elsewhere does not fail them; every
-- step that blocks writes keeps the 1 s.

ALTER TABLE jobs ADD COLUMN IF NOT EXISTS on_dead_url text;
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'jobs'::regclass AND conname = 'jobs_on_dead_url_check') THEN
        ALTER TABLE jobs ADD CONSTRAINT jobs_on_dead_url_check CHECK (length(on_dead_url) BETWEEN 1 AND 2048) NOT VALID;
    END IF;
END
$$;
SET lock_timeout = '5min';
ALTER TABLE jobs VALIDATE CONSTRAINT jobs_on_dead_url_check;
RESET lock_timeout;

-- A user-visible change of the job (see 004 for why a trigger of its own).
DROP TRIGGER IF EXISTS jobs_notify_on_dead_url ON jobs;
CREATE TRIGGER jobs_notify_on_dead_url AFTER UPDATE OF on_dead_url
    ON jobs FOR EACH ROW EXECUTE FUNCTION chronos_notify_jobs();

-- One row per alert and destination: url is the job's on_dead_url at the
-- moment the run died, or NULL for the cluster's DEAD_LETTER_WEBHOOK (an
-- instance setting, so the instance that sends it supplies the URL). The
-- job and the run travel as they were then (event), so no foreign keys:
-- neither deleting the job nor pruning the run takes an alert away.
--
-- available_at is when the row may be claimed: now for a new alert, the
-- end of the lease while an instance sends it, the next retry after a
-- failed attempt. attempts counts claims, so an attempt of an instance
-- that died counts too. Sent (or given up) rows are deleted.
CREATE TABLE IF NOT EXISTS dead_alerts (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id           bigint NOT NULL,
    job_id           bigint NOT NULL,
    url              text,
    event            jsonb NOT NULL,
    attempts         integer NOT NULL DEFAULT 0,
    available_at     timestamptz NOT NULL DEFAULT now(),
    leased_by        text,
    last_error       text,
    last_status_code integer,
    created_at       timestamptz NOT NULL DEFAULT now()
);
-- Claims, per kind: an instance without DEAD_LETTER_WEBHOOK never reads
-- the cluster's rows, however many wait for one that has it.
CREATE INDEX IF NOT EXISTS dead_alerts_job_idx ON dead_alerts (available_at, id) WHERE url IS NOT NULL;
CREATE INDEX IF NOT EXISTS dead_alerts_cluster_idx ON dead_alerts (available_at, id) WHERE url IS NULL;
-- Expiry of alerts nobody could send.
CREATE INDEX IF NOT EXISTS dead_alerts_created_idx ON dead_alerts (created_at);

-- The instances that send the cluster's alerts (those with
-- DEAD_LETTER_WEBHOOK), each refreshing its row every minute while it
-- runs. A run that dies gets a cluster alert only while such an instance
-- has been seen in the last five minutes: a cluster without the setting
-- stores no cluster alerts, and setting it later does not bring a flood
-- of old ones; a restart or a short outage of those instances loses none.
CREATE TABLE IF NOT EXISTS dead_alert_senders (
    instance text PRIMARY KEY,
    seen_at  timestamptz NOT NULL DEFAULT now()
);

-- The alerts of one run that just went dead: one for the cluster's
-- webhook while an instance sends those, and one for the job's
-- on_dead_url when it has one.
CREATE OR REPLACE FUNCTION chronos_dead_alert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    j record;
    event jsonb;
BEGIN
    SELECT name, labels, on_dead_url INTO j FROM jobs WHERE id = NEW.job_id;
    event := jsonb_build_object(
        'job', jsonb_build_object('id', NEW.job_id, 'name', COALESCE(j.name, ''), 'labels', COALESCE(j.labels, '{}')),
        'run', jsonb_build_object(
            'id', NEW.id, 'scheduled_at', NEW.scheduled_at, 'trigger', NEW.trigger,
            'attempt_count', NEW.attempt_count, 'status', NEW.status,
            'last_error', NEW.last_error, 'last_status_code', NEW.last_status_code,
            'redrive_of', NEW.redrive_of, 'finished_at', COALESCE(NEW.finished_at, now())));
    IF EXISTS (SELECT 1 FROM dead_alert_senders WHERE seen_at > now() - interval '5 minutes') THEN
        INSERT INTO dead_alerts (run_id, job_id, url, event) VALUES (NEW.id, NEW.job_id, NULL, event);
    END IF;
    IF j.on_dead_url IS NOT NULL THEN
        INSERT INTO dead_alerts (run_id, job_id, url, event) VALUES (NEW.id, NEW.job_id, j.on_dead_url, event);
    END IF;
    RETURN NULL;
END
$$;

-- Per row, but only for the rows that become dead: the WHEN clause is
-- checked in the updating statement and, false, queues nothing, so the
-- claims, completions and retries of every other run pay nothing for it.
-- A dead run is never updated to dead again (redrive makes a new run), so
-- each death alerts once.
DROP TRIGGER IF EXISTS job_runs_dead_alert ON job_runs;
CREATE TRIGGER job_runs_dead_alert AFTER UPDATE OF status ON job_runs
    FOR EACH ROW WHEN (NEW.status = 'dead' AND OLD.status IS DISTINCT FROM 'dead')
    EXECUTE FUNCTION chronos_dead_alert();
