-- Issue 21 (2), second half: the swap that makes job_runs and run_attempts
-- partitioned tables, with the existing tables as their oldest partitions.
-- Migration 019 prepared it (bounds, validated CHECKs, unique indexes built
-- concurrently; its header says why and how); this one runs in a single
-- transaction that changes the catalog only: it scans no table and builds
-- no index, so it holds its ACCESS EXCLUSIVE locks for milliseconds (see
-- TestPartitionMigration for the measured figure).

-- chronos_swap_lock takes, before the swap changes anything, every lock
-- the swap needs: ACCESS EXCLUSIVE on the tables (the run tables, the
-- views that read them) in order, waiting at most 200 ms for the first and
-- not at all for the others (holding the first while waiting for another
-- would hold up the queries of the first), and SHARE ROW EXCLUSIVE on the
-- tables in shared (jobs: the foreign key job_runs.job_id is created again
-- on the parent and on the default partition, which takes that lock on
-- the table it references), also without waiting; it retries after a
-- pause. A migration waiting for its lock blocks the queries queued
-- behind it, so it must never wait long; and a lock the swap waited for
-- only midway (jobs, under autovacuum or a writer that then waits for
-- job_runs) failed the whole migration with a lock timeout. After 50
-- tries it gives up with lock_not_available, which the migration runner
-- retries (sql.MigrateWith).
CREATE OR REPLACE FUNCTION chronos_swap_lock(shared text[], VARIADIC tables text[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    tries int := 0;
BEGIN
    PERFORM set_config('lock_timeout', '200ms', true);
    LOOP
        BEGIN
            EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tables[1]);
            FOR i IN 2 .. cardinality(tables) LOOP
                EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE NOWAIT', tables[i]);
            END LOOP;
            FOR i IN 1 .. coalesce(cardinality(shared), 0) LOOP
                EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE NOWAIT', shared[i]);
            END LOOP;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            tries := tries + 1;
            IF tries >= 50 THEN
                RAISE EXCEPTION 'partitioning job_runs: no lock on % and % after % tries', tables, shared, tries
                    USING ERRCODE = 'lock_not_available';
            END IF;
            PERFORM pg_sleep(0.1 + random() * 0.2);
        END;
    END LOOP;
END
$$;

-- chronos_partition_swap turns table (say job_runs) into a table
-- partitioned by RANGE (key): the table becomes <table>_legacy, the
-- partition FROM (MINVALUE) TO (bound), next to <table>_default. Called
-- under ACCESS EXCLUSIVE on both tables. The table's triggers go into
-- chronos_swap_todo, created again on the parent once both are swapped.
CREATE OR REPLACE FUNCTION chronos_partition_swap(tbl text, key text, bound text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    legacy text := tbl || '_legacy';
    r record;
    def text;
    defs text[] := '{}';
    superseded text[] := '{}';
    renamed text;
    opts text;
    i int;
    depth int;
BEGIN
    -- Triggers move to the parent: captured (they name the table, which
    -- is the parent's name once it exists) and dropped from the table.
    FOR r IN SELECT oid, tgname FROM pg_trigger WHERE tgrelid = tbl::regclass AND NOT tgisinternal LOOP
        INSERT INTO pg_temp.chronos_swap_todo (step, sql) VALUES (3, pg_get_triggerdef(r.oid));
        EXECUTE format('DROP TRIGGER %I ON %I', r.tgname, tbl);
    END LOOP;
    -- Foreign keys that reference the table cannot stay (see the header).
    FOR r IN SELECT conname, conrelid::regclass AS rel FROM pg_constraint
              WHERE confrelid = tbl::regclass AND contype = 'f' LOOP
        RAISE NOTICE 'partitioning %: dropping foreign key % of %', tbl, r.conname, r.rel;
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.rel, r.conname);
    END LOOP;

    EXECUTE format('ALTER TABLE %I RENAME TO %I', tbl, legacy);

    -- The parent's indexes: each index of the table under its own name
    -- (the table's copy is renamed <legacy>_...), unique ones rewritten to
    -- include the key. The rewritten ones were built in step 4 (CREATE
    -- INDEX on the parent attaches an equal index of a partition instead
    -- of building one); the originals are dropped.
    FOR r IN SELECT i.indexrelid, c.relname, i.indisunique, i.indisprimary,
                    EXISTS (SELECT 1 FROM unnest(i.indkey) k
                             WHERE k = (SELECT attnum FROM pg_attribute WHERE attrelid = i.indrelid AND attname = key)) AS has_key
               FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
              WHERE i.indrelid = legacy::regclass AND c.relname NOT LIKE '%legacy%' LOOP
        IF r.indisprimary THEN
            CONTINUE; -- below
        END IF;
        def := pg_get_indexdef(r.indexrelid);
        def := replace(def, ' ON public.' || legacy || ' ', ' ON public.' || tbl || ' ');
        def := replace(def, ' ON ' || legacy || ' ', ' ON ' || tbl || ' ');
        IF r.indisunique AND NOT r.has_key THEN
            -- Insert ", key" before the parenthesis that closes the key list.
            i := position(' USING ' IN def);
            i := i + position('(' IN substr(def, i + 1));
            depth := 0;
            LOOP
                IF substr(def, i, 1) = '(' THEN depth := depth + 1;
                ELSIF substr(def, i, 1) = ')' THEN depth := depth - 1;
                END IF;
                EXIT WHEN depth = 0;
                i := i + 1;
            END LOOP;
            def := substr(def, 1, i - 1) || ', ' || quote_ident(key) || substr(def, i);
        END IF;
        renamed := left(regexp_replace(r.relname, '^' || tbl || '_', legacy || '_'), 63);
        IF renamed = r.relname THEN
            renamed := left(legacy || '_' || r.relname, 63);
        END IF;
        EXECUTE format('ALTER INDEX %I RENAME TO %I', r.relname, renamed);
        IF r.indisunique AND NOT r.has_key THEN
            superseded := superseded || renamed;
        END IF;
        defs := defs || def;
    END LOOP;

    -- The parent, from the table's own definition: columns, defaults,
    -- NOT NULL and CHECK constraints (the bounding CHECK aside).
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED
                    INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING COMMENTS) PARTITION BY RANGE (%I)',
                   tbl, legacy, key);
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT IF EXISTS %I', tbl, tbl || '_partition_bound');

    -- The identity moves to the parent, continuing after bound for
    -- job_runs (see the header).
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = legacy::regclass AND attname = 'id' AND attidentity <> '') THEN
        EXECUTE format('ALTER TABLE %I ALTER COLUMN id DROP IDENTITY', legacy);
        EXECUTE format('ALTER TABLE %I ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (START WITH %s)',
                       tbl, (SELECT attempts_bound FROM chronos_partitioning_migration));
    END IF;

    -- The primary key: the table's becomes (its columns, key), over the
    -- index built in step 4 (job_runs), or stays as it is when it already
    -- contains the key (run_attempts).
    FOR r IN SELECT c.conname, pg_get_constraintdef(c.oid) AS def,
                    EXISTS (SELECT 1 FROM unnest(c.conkey) k
                             WHERE k = (SELECT attnum FROM pg_attribute WHERE attrelid = c.conrelid AND attname = key)) AS has_key
               FROM pg_constraint c WHERE c.conrelid = legacy::regclass AND c.contype = 'p' LOOP
        IF r.has_key THEN
            EXECUTE format('ALTER INDEX %I RENAME TO %I', r.conname, legacy || '_pkey');
            defs := defs || format('ALTER TABLE %I ADD CONSTRAINT %I %s', tbl, r.conname, r.def);
        ELSE
            EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', legacy, r.conname);
            EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY USING INDEX %I', legacy, legacy || '_id_key', legacy || '_id_key');
            defs := defs || format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (id, %I)', tbl, r.conname, key);
        END IF;
    END LOOP;

    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', tbl, legacy, bound);

    -- Foreign keys of the table (job_runs.job_id): the parent's copy finds
    -- the partition's own and adopts it, without validating again.
    FOR r IN SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
              WHERE conrelid = legacy::regclass AND contype = 'f' LOOP
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I %s', tbl, r.conname, r.def);
    END LOOP;
    FOREACH def IN ARRAY defs LOOP
        EXECUTE def;
    END LOOP;
    FOREACH def IN ARRAY superseded LOOP
        EXECUTE format('DROP INDEX %I', def);
    END LOOP;

    -- The catch-all, with the table's storage parameters (autovacuum).
    SELECT coalesce(' WITH (' || array_to_string(reloptions, ', ') || ')', '') INTO opts
      FROM pg_class WHERE oid = legacy::regclass;
    EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT%s', tbl || '_default', tbl, opts);
END
$$;

-- 5. The swap, one transaction, catalog changes only.
DO $$
DECLARE
    m record;
    r record;
    locked timestamptz;
    views text[] := '{}';
    referenced text[];
    v text;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'job_runs'::regclass) = 'p' THEN
        RETURN;
    END IF;
    SELECT * INTO m FROM chronos_partitioning_migration;
    CREATE TEMP TABLE chronos_swap_todo (step int, sql text) ON COMMIT DROP;
    -- Views that read the tables are recreated on the parents, from their
    -- definitions as they read before the renames: locked with the
    -- tables, so no reader of a view holds up the swap midway.
    FOR r IN SELECT DISTINCT c.oid FROM pg_depend d
               JOIN pg_rewrite w ON w.oid = d.objid
               JOIN pg_class c ON c.oid = w.ev_class
              WHERE d.classid = 'pg_rewrite'::regclass
                AND d.refobjid IN ('job_runs'::regclass, 'run_attempts'::regclass)
                AND c.oid NOT IN ('job_runs'::regclass, 'run_attempts'::regclass) LOOP
        views := views || r.oid::regclass::text;
    END LOOP;
    -- The tables the foreign keys of job_runs and run_attempts reference
    -- (jobs): their constraints are created again on the parents.
    SELECT coalesce(array_agg(DISTINCT confrelid::regclass::text), '{}') INTO referenced
      FROM pg_constraint
     WHERE contype = 'f' AND conrelid IN ('job_runs'::regclass, 'run_attempts'::regclass)
       AND confrelid NOT IN ('job_runs'::regclass, 'run_attempts'::regclass);
    PERFORM chronos_swap_lock(referenced, VARIADIC ARRAY['job_runs', 'run_attempts'] || views);
    locked := clock_timestamp();
    FOREACH v IN ARRAY views LOOP
        INSERT INTO chronos_swap_todo (step, sql)
        VALUES (4, format('CREATE OR REPLACE VIEW %s AS %s', v, pg_get_viewdef(v::regclass)));
    END LOOP;
    PERFORM chronos_partition_swap('job_runs', 'scheduled_at', m.runs_bound::text);
    PERFORM chronos_partition_swap('run_attempts', 'run_id', m.attempts_bound::text);
    FOR r IN SELECT sql FROM chronos_swap_todo ORDER BY step LOOP
        EXECUTE r.sql;
    END LOOP;
    DROP TABLE chronos_partitioning_migration;
    RAISE NOTICE 'job_runs and run_attempts partitioned: tables locked for % ms (and until the commit)',
        round(extract(epoch FROM clock_timestamp() - locked) * 1000, 1);
END
$$;

DROP FUNCTION IF EXISTS chronos_partition_swap(text, text, text);
DROP FUNCTION IF EXISTS chronos_swap_lock(text[], text[]);
