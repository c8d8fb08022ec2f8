-- Versions that know each other (issue 23).
--
-- 1. chronos_compat records the oldest binary allowed to lead and to
-- materialize, as a schema level: the number of the newest migration a
-- binary embeds (sql.SchemaLevel). A binary below min_lead_level never
-- takes the leader's lock (and so never materializes, reaps or prunes);
-- a leader whose level falls below it (a migration landed while it led)
-- steps down at its next ping. Below either minimum an instance still
-- claims and delivers runs. A later migration that changes what the
-- leader must honour (a new policy column, a new way to materialize)
-- raises the minimum to its own level, in its own transaction:
--
--     UPDATE chronos_compat SET min_lead_level = <its number>,
--            min_materialize_level = <its number>, reason = '<why>';
--
-- written as (SELECT version + 1 FROM public.chronos_schema_version) so
-- that renumbering the file keeps it right (tern bumps that row after the
-- migration's SQL, in the same transaction). Binaries older than this
-- migration do not read the table; they are kept from ignoring newer
-- rules by triggers of the migrations that add those rules.
--
-- This migration sets the minimum to its own level: every binary that
-- checks it is at least that new, so nothing is kept out by it.
CREATE TABLE chronos_compat (
    singleton             boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    min_lead_level        integer NOT NULL,
    min_materialize_level integer NOT NULL,
    reason                text NOT NULL DEFAULT '',
    updated_at            timestamptz NOT NULL DEFAULT now()
);
INSERT INTO chronos_compat (min_lead_level, min_materialize_level, reason)
SELECT version + 1, version + 1, 'the first schema that records a minimum'
  FROM public.chronos_schema_version;

-- 2. chronos_instances: each instance's version, registered at start and
-- refreshed every minute, so /readyz and the console show what runs. Who
-- is up comes from the LISTEN connections in pg_stat_activity; this table
-- only adds the version. Rows not seen for a day are deleted on the way.
CREATE TABLE chronos_instances (
    instance     text PRIMARY KEY,
    version      text NOT NULL,
    schema_level integer NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    seen_at      timestamptz NOT NULL DEFAULT now()
);
