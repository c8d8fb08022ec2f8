-- Placeholder for migration 006, which another branch adds; dropped at merge.
SELECT 1;
