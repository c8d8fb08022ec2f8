-- A gap is seen for a cron job whose window has ended, too.
--
-- A job is behind (the cluster had no working leader for longer than the
-- lookahead) when its next_run_at, in job_schedules, is not after now: the
-- claim holds its scheduled runs back and the next leader folds them by
-- the job's misfire policy. A cron job whose window ends (ends_at) has no
-- next_run_at once its last run is created, up to a lookahead (or, for a
-- sparse job, 30 s) ahead of its instant: when the cluster was down over
-- that instant, nothing said the job was behind, and every run it had
-- created ahead went out late, one after another, instead of one catch-up.
--
-- valid_until is how long the leader's last materializer pass vouches for
-- the jobs it has looked at: its clock plus the lookahead, written by every
-- pass. Past it, no leader has materialized for a lookahead, which is
-- exactly when every other cron job is behind: the claim then holds back
-- the scheduled runs of enabled cron jobs without a next run as well, and
-- the next pass, seeing valid_until behind it, folds those with more than
-- one run due and not started (sql.Materialize).
--
-- It starts null, which vouches for nothing and accuses nothing (no hold,
-- no fold), so neither the upgrade itself nor a database cloned from a
-- template long ago reads as a gap. A binary of the release before would
-- not write it (and claims would hold runs of finished jobs back for good
-- once it fell behind), so this release is the oldest that may lead and
-- materialize; older ones keep delivering.
CREATE TABLE chronos_materializer (
    one         boolean PRIMARY KEY DEFAULT true CHECK (one),
    valid_until timestamptz
);

INSERT INTO chronos_materializer DEFAULT VALUES;

UPDATE chronos_compat
   SET min_lead_level = (SELECT version + 1 FROM public.chronos_schema_version),
       min_materialize_level = (SELECT version + 1 FROM public.chronos_schema_version),
       reason = 'the materializer vouches for finished cron jobs (migration 036)', updated_at = now();
