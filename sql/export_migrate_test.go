package sql

import (
	"context"
	"io/fs"
)

// MigrateFSForTest applies the migrations in fsys, as MigrateWith does the
// embedded ones.
func MigrateFSForTest(ctx context.Context, dsn string, fsys fs.FS, opts MigrateOptions) error {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultMigrationLockTimeout
	}
	if opts.Attempts <= 0 {
		opts.Attempts = DefaultMigrationAttempts
	}
	return migrateFS(ctx, dsn, fsys, opts)
}
