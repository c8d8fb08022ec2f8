-- Placeholder for migration 003 (owned by another change); dropped at merge.
-- tern refuses a migration without a statement, hence the no-op.
SELECT 1;
