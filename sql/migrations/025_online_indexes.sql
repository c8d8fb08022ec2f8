-- chronos:online-indexes
-- The indexes of migrations 022 (limits) and 023 (hosts), built without
-- blocking writes (sql.OnlineIndexesHeader): CONCURRENTLY on jobs, and on
-- job_runs, which is partitioned, ON ONLY the parent, then CONCURRENTLY on
-- each partition and attached. Built inside those migrations' transactions
-- they blocked every write of job_runs for a scan of the whole table.

-- The foreign key's check when a limit is deleted, and the jobs of a key.
CREATE INDEX jobs_limit_key_idx ON jobs (limit_key) WHERE limit_key IS NOT NULL;

-- The jobs of an origin: a deferral or an opening breaker moves the
-- pending runs of exactly these jobs.
CREATE INDEX jobs_origin_idx ON jobs (chronos_origin(target_url));

-- Held runs of a key in release order. Only runs held for their limit.
CREATE INDEX job_runs_limit_held_idx ON job_runs (limit_key, available_at, id)
    WHERE limit_held AND held AND status = 'pending';

-- Runs of a key waiting (pending) and in flight: GET /v1/limits and the
-- in-flight recount. Runs without a key have no entry.
CREATE INDEX job_runs_limit_idx ON job_runs (limit_key, status, available_at)
    WHERE limit_key IS NOT NULL AND status IN ('pending', 'leased', 'running');
