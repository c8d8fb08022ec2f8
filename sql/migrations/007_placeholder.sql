-- Placeholder for migration 007, which another branch adds; dropped at merge.
SELECT 1;
