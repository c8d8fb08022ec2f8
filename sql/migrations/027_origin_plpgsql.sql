-- chronos_origin (migration 023) in PL/pgSQL, with the same result for
-- every url, so jobs_origin_idx stays valid as it is (no rebuild).
--
-- Why: the SQL function's body has a FROM (to run its regexp once), so the
-- planner cannot inline it, and every call of a non-inlined SQL function
-- sets up an executor of its own. The index evaluates it for every row
-- inserted into jobs: about 70 µs a row, the largest single cost of a
-- create. PL/pgSQL keeps its compiled function for the session and
-- evaluates these lines as simple expressions: about 5 µs a row.
-- TestChronosOriginAgreesWithGo checks the cases of testdata/origins.json.
CREATE OR REPLACE FUNCTION chronos_origin(url text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    m text[] := regexp_match(url,
        '^([A-Za-z][A-Za-z0-9+.-]*)://(?:[^@/?#]*@)?(\[[^]/?#]*\]|[^:/?#]*)(?::([0-9]*))?');
BEGIN
    IF m IS NULL OR m[2] = '' THEN
        RETURN NULL;
    END IF;
    RETURN lower(m[1]) || '://' || lower(m[2]) || ':' ||
           coalesce(nullif(m[3], ''), CASE lower(m[1]) WHEN 'https' THEN '443' ELSE '80' END);
END
$$;
