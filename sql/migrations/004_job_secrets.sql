-- Secrets of a job, write-only on the API:
--   secret_headers   names of headers the user marked secret; their values
--                    (and those of Authorization, Proxy-Authorization and
--                    Cookie) are masked in every response.
--   signing_secrets  the job's own Standard Webhooks secrets, newest last:
--                    [{"secret": "whsec_...", "created_at": ts, "expires_at": ts|null}].
--                    Every unexpired one signs a delivery (rotation with a
--                    grace period); an empty list means the cluster's
--                    SIGNING_SECRET.
ALTER TABLE jobs
    ADD COLUMN secret_headers text[] NOT NULL DEFAULT '{}',
    ADD COLUMN signing_secrets jsonb NOT NULL DEFAULT '[]',
    ADD CONSTRAINT jobs_secret_headers_check CHECK (cardinality(secret_headers) <= 50),
    ADD CONSTRAINT jobs_signing_secrets_check CHECK (
        jsonb_typeof(signing_secrets) = 'array' AND jsonb_array_length(signing_secrets) <= 8);

-- Changing either is a user-visible change of the job. A trigger of its
-- own, so the column list of jobs_notify_update stays another migration's
-- business; an UPDATE that fires both sends one notification, since
-- Postgres folds identical NOTIFYs of one transaction.
CREATE TRIGGER jobs_notify_secrets AFTER UPDATE OF secret_headers, signing_secrets
    ON jobs FOR EACH ROW EXECUTE FUNCTION chronos_notify_jobs();
