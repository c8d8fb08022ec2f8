-- Placeholder for migration 005, which another branch adds; dropped at merge.
SELECT 1;
