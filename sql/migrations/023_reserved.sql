-- Reserved for a migration on another branch.
SELECT 1; -- tern refuses a migration without SQL (ErrNoFwMigration)
