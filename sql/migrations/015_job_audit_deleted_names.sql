-- Deleted jobs by name: `chronos jobs history NAME` (GET /v1/jobs/deleted
-- ?name=) finds the history of a job that is gone by the name it had, from
-- its delete entry (whose changes hold every field before). Without this
-- index the lookup reads the whole audit table, which keeps every trigger
-- and redrive for AUDIT_RETENTION. Partial: deletes are a small share.
CREATE INDEX job_audit_deleted_name_idx ON job_audit ((changes -> 'name' ->> 'before'), id DESC)
    WHERE action = 'delete';
