-- Placeholder for migration 003, which another branch adds; drop this file at merge.
-- tern refuses a migration without SQL, hence the no-op statement.
SELECT 1;
