-- Cluster secrets (issue 22, item 10): random keys that every instance of
-- a cluster shares through the database, and that the environment never
-- holds.
--
-- Why: the console signed its session cookies under a key derived from
-- the sha256: digest of an API key (and CONSOLE_SESSION_SECRET, unset by
-- default). The digest form of API_KEYS exists so that the environment
-- holds no secret, yet anyone who read the environment could mint a
-- write session from it. Session keys are now derived from a random
-- per-cluster secret stored here, so the digest alone cannot sign.
--
-- A row is created on first use by sql.ClusterSecret (INSERT ... ON
-- CONFLICT DO NOTHING, then read back), so two instances starting at once
-- agree on one value. Nothing but the console reads it today; the name
-- column leaves room for other purposes. Only the role chronos connects
-- as may read it: whoever reads this table can sign console sessions.
CREATE TABLE IF NOT EXISTS cluster_secrets (
    name       text PRIMARY KEY,
    secret     bytea NOT NULL CHECK (octet_length(secret) >= 32),
    created_at timestamptz NOT NULL DEFAULT now()
);
