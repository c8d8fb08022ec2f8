-- GET /v1/jobs?enabled=...: keyset pages of one kind of job stay an index
-- range scan however rare that kind is among a million jobs.
CREATE INDEX jobs_enabled_idx ON jobs (enabled, id);
