-- Reserved for a migration on another branch (session 9); drop this file when that one merges.
SELECT 1; -- tern refuses a migration without SQL (ErrNoFwMigration)
