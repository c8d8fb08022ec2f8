-- chronos:online-indexes
-- The runs of a key in flight (leased or running), for the claim's count
-- under the key's lock (migration 034): one range a partition and key,
-- holding only what is in flight (job_runs_limit_idx also holds the
-- key's pending runs, and its status column makes two ranges of one
-- count). Built online (sql.OnlineIndexesHeader).
CREATE INDEX job_runs_limit_in_flight_idx ON job_runs (limit_key)
    WHERE limit_key IS NOT NULL AND status IN ('leased', 'running');
