-- Placeholder for migration 004 (owned by another change); dropped at merge.
-- tern refuses a migration without a statement, hence the no-op.
SELECT 1;
