-- chronos:online-indexes
-- The runs of a key by status, in two indexes that hold only what is read
-- (migrations 034 and 035), built online (sql.OnlineIndexesHeader).
-- job_runs_limit_idx (limit_key, status, available_at) held a limited
-- run's every version while pending, leased or running, and its status
-- column made the count of a key's runs in flight two ranges.

-- The runs of a key in flight (leased or running): the claim's count
-- under the key's lock (chronos_limit_counts, migration 034), one range
-- a partition and key.
CREATE INDEX job_runs_limit_in_flight_idx ON job_runs (limit_key)
    WHERE limit_key IS NOT NULL AND status IN ('leased', 'running');

-- The runs of a key waiting: GET /v1/limits and chronos_limit_waiting.
CREATE INDEX job_runs_limit_pending_idx ON job_runs (limit_key, available_at)
    WHERE limit_key IS NOT NULL AND status = 'pending';
