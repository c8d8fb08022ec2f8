-- Placeholder for migration 005 (queue stats), which lives on another branch. Drop at merge.
-- tern refuses a step without SQL, hence the no-op statement.
SELECT 1;
