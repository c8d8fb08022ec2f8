-- The dead-letter queue across jobs (GET /v1/runs, POST /v1/runs/redrive).
--
-- Runs by status, newest first: a page of dead (or pending, ...) runs of
-- every job reads one index range, whatever the number of runs.
CREATE INDEX job_runs_status_idx ON job_runs (status, id DESC);

-- Redrives of a run: the bulk redrive skips dead runs already redriven.
CREATE INDEX job_runs_redrive_of_idx ON job_runs (redrive_of) WHERE redrive_of IS NOT NULL;

-- A run is never redriven twice while its redrive is active: the database
-- says so, whatever two concurrent redrives (single or bulk) see.
CREATE UNIQUE INDEX job_runs_active_redrive_key ON job_runs (redrive_of)
    WHERE redrive_of IS NOT NULL AND status IN ('pending', 'leased', 'running');
