-- Placeholder for migration 004 (security), which lives on another branch. Drop at merge.
-- tern refuses a step without SQL, hence the no-op statement.
SELECT 1;
