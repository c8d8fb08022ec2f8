-- Job names become unique; jobs get a description and Kubernetes-style
-- labels; the job list filters by name prefix, by substring of name or
-- description, and by labels, each through an index of its own.

-- Existing duplicates keep the name on their oldest job; each later one is
-- renamed <name>-<id> (cut to fit 200 bytes; a random tail if even that is
-- taken), and every rename is reported as a NOTICE, which chronos migrate
-- logs.
DO $$
DECLARE
    r record;
    renamed text;
    n integer := 0;
BEGIN
    FOR r IN
        SELECT id, name FROM (
            SELECT id, name, row_number() OVER (PARTITION BY name ORDER BY id) AS rn FROM jobs) d
         WHERE rn > 1 ORDER BY id
    LOOP
        renamed := left(r.name, 200 - length('-' || r.id)) || '-' || r.id;
        WHILE EXISTS (SELECT 1 FROM jobs WHERE name = renamed) LOOP
            renamed := left(r.name, 170) || '-' || r.id || '-' || substr(md5(random()::text), 1, 8);
        END LOOP;
        UPDATE jobs SET name = renamed WHERE id = r.id;
        RAISE NOTICE 'job % renamed from % to %: job names are unique now', r.id, quote_literal(r.name), quote_literal(renamed);
        n := n + 1;
    END LOOP;
    IF n > 0 THEN
        RAISE NOTICE '% jobs with duplicate names renamed', n;
    END IF;
END
$$;

-- Unique, and (bytewise order) the index of ?name_prefix=.
CREATE UNIQUE INDEX jobs_name_key ON jobs (name text_pattern_ops);

ALTER TABLE jobs
    ADD COLUMN description text NOT NULL DEFAULT '',
    ADD COLUMN labels jsonb NOT NULL DEFAULT '{}',
    ADD CONSTRAINT jobs_description_check CHECK (length(description) <= 2000),
    ADD CONSTRAINT jobs_labels_check CHECK (jsonb_typeof(labels) = 'object');

-- ?label=k=v (all must match): containment through a GIN index.
CREATE INDEX jobs_labels_idx ON jobs USING gin (labels jsonb_path_ops);

-- ?q= (case-insensitive substring of name or description): trigram indexes.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX jobs_name_trgm_idx ON jobs USING gin (name gin_trgm_ops);
CREATE INDEX jobs_description_trgm_idx ON jobs USING gin (description gin_trgm_ops);

-- Both are user-visible changes of the job (see 004 for why a trigger of its own).
CREATE TRIGGER jobs_notify_descr_labels AFTER UPDATE OF description, labels
    ON jobs FOR EACH ROW EXECUTE FUNCTION chronos_notify_jobs();
