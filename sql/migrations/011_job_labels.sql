-- Search at 1,000,000 jobs: two narrow copies of what GET /v1/jobs filters
-- on, each readable in job id order, so a page is found by walking ids
-- rather than by sorting every match (see sql/jobsearch.go).
--
--   job_labels  one row per label: ?label=k=v is a range of its btree, in
--               job id order; several labels intersect in that order.
--   job_search  a job's name, and its name and description lower-cased as
--               ILIKE lower-cases them: ?q= and ?name_prefix= walk it in id
--               order, a few hundred bytes of copy per job instead of the
--               whole row.
--
-- Both are kept by triggers on jobs, in the transaction that writes the
-- job, so the code that writes jobs does not know they exist. Like every
-- trigger, they do not fire for a session with session_replication_role =
-- replica: a bulk load that sets it must fill them too.

-- No job is written while the copies are made and the triggers created.
LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE job_labels (
    key    text NOT NULL,
    value  text NOT NULL,
    job_id bigint NOT NULL
);
INSERT INTO job_labels (key, value, job_id)
SELECT l.key, l.value, j.id FROM jobs j, jsonb_each_text(j.labels) l ORDER BY 1, 2, 3;
-- Built after the copy: a sorted build, not a million inserts into it.
ALTER TABLE job_labels ADD PRIMARY KEY (key, value, job_id);
-- key and value are far from independent (a value belongs to its key):
-- without this, the planner multiplies their selectivities and misjudges
-- which label of several to walk.
CREATE STATISTICS job_labels_key_value (mcv, dependencies) ON key, value FROM job_labels;

CREATE TABLE job_search (
    job_id bigint NOT NULL,
    name   text NOT NULL,
    lname  text NOT NULL,
    ldesc  text NOT NULL
);
INSERT INTO job_search (job_id, name, lname, ldesc)
SELECT id, name, lower(name), lower(description) FROM jobs ORDER BY id;
ALTER TABLE job_search ADD PRIMARY KEY (job_id);

ANALYZE job_labels;
ANALYZE job_search;

-- New jobs, per statement: a bulk insert copies in two statements.
CREATE FUNCTION chronos_job_search_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_search (job_id, name, lname, ldesc)
    SELECT id, name, lower(name), lower(description) FROM new_jobs;
    INSERT INTO job_labels (key, value, job_id)
    SELECT l.key, l.value, n.id FROM new_jobs n, jsonb_each_text(n.labels) l;
    RETURN NULL;
END
$$;
CREATE TRIGGER jobs_search_insert AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION chronos_job_search_insert();

-- Changed jobs, per row (a trigger with transition tables cannot name
-- columns, and this one must stay silent for the materializer's updates
-- of next_run_at): only the copies of what changed are rewritten.
CREATE FUNCTION chronos_job_search_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.name IS DISTINCT FROM OLD.name OR NEW.description IS DISTINCT FROM OLD.description THEN
        UPDATE job_search SET name = NEW.name, lname = lower(NEW.name), ldesc = lower(NEW.description)
         WHERE job_id = NEW.id;
    END IF;
    IF NEW.labels IS DISTINCT FROM OLD.labels THEN
        DELETE FROM job_labels l USING jsonb_each_text(OLD.labels) o
         WHERE l.key = o.key AND l.value = o.value AND l.job_id = OLD.id;
        INSERT INTO job_labels (key, value, job_id)
        SELECT l.key, l.value, NEW.id FROM jsonb_each_text(NEW.labels) l;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER jobs_search_update AFTER UPDATE OF name, description, labels ON jobs
    FOR EACH ROW WHEN (NEW.name IS DISTINCT FROM OLD.name OR NEW.description IS DISTINCT FROM OLD.description
                       OR NEW.labels IS DISTINCT FROM OLD.labels)
    EXECUTE FUNCTION chronos_job_search_update();

-- Deleted jobs, per statement.
CREATE FUNCTION chronos_job_search_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM job_search WHERE job_id IN (SELECT id FROM old_jobs);
    DELETE FROM job_labels l USING old_jobs o, jsonb_each_text(o.labels) e
     WHERE l.key = e.key AND l.value = e.value AND l.job_id = o.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER jobs_search_delete AFTER DELETE ON jobs
    REFERENCING OLD TABLE AS old_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION chronos_job_search_delete();

CREATE FUNCTION chronos_job_search_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE job_search, job_labels;
    RETURN NULL;
END
$$;
CREATE TRIGGER jobs_search_truncate AFTER TRUNCATE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION chronos_job_search_truncate();
