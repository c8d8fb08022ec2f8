package sql

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chronoshq/chronos"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// versionTable is tern's bookkeeping table.
const versionTable = "public.chronos_schema_version"

// MigrateOptions configures MigrateWith.
type MigrateOptions struct {
	// Log receives the migrations' progress and notices (nil:
	// slog.Default()).
	Log *slog.Logger
	// LockTimeout bounds every wait for a lock (default
	// DefaultMigrationLockTimeout): a migration that would queue behind a
	// long transaction, and make every claim and completion queue behind
	// itself, gives up instead and is retried.
	LockTimeout time.Duration
	// Attempts bounds how often a migration that timed out waiting for a
	// lock (or lost a deadlock) is tried (default DefaultMigrationAttempts).
	Attempts int
}

// Defaults of MigrateOptions.
const (
	DefaultMigrationLockTimeout = time.Second
	DefaultMigrationAttempts    = 30
	// migrationMaxBackoff caps the wait between attempts.
	migrationMaxBackoff = 5 * time.Second
)

// NoTransactionHeader, on a line of its own in a migration, runs that
// migration outside a transaction, one statement at a time, as CREATE
// INDEX CONCURRENTLY needs. Such a migration must be safe to run again
// from the start: a retry after a lock timeout, or after a crash midway,
// does. (Drop an index that a failed CONCURRENTLY build left invalid
// before building it again.)
const NoTransactionHeader = "-- chronos:no-transaction"

// ternDisableTx is tern's own marker for the same.
const ternDisableTx = "---- tern: disable-tx ----"

// Migrate applies the embedded migrations to dsn with the default options.
func Migrate(ctx context.Context, dsn string) error {
	return MigrateWith(ctx, dsn, MigrateOptions{})
}

// MigrateWith applies the embedded migrations to dsn. It is safe when
// several instances start at once (an advisory lock serialises them), and
// while instances run: every statement runs under a short lock_timeout,
// and a migration that times out (or deadlocks) is rolled back and tried
// again after a growing pause, so it never holds a lock queue up for long.
//
// tern takes a session advisory lock (per database) around creating its
// version table and around applying migrations, and reads the current
// version under that lock, so the second of two concurrent instances waits
// and then finds nothing left to do. dsn must reach a real session (not a
// transaction pooler): DATABASE_DIRECT_URL.
func MigrateWith(ctx context.Context, dsn string, opts MigrateOptions) error {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultMigrationLockTimeout
	}
	if opts.Attempts <= 0 {
		opts.Attempts = DefaultMigrationAttempts
	}
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return migrateFS(ctx, dsn, sub, opts)
}

// migrateFS applies the migrations in fsys (a test hands in its own).
func migrateFS(ctx context.Context, dsn string, fsys fs.FS, opts MigrateOptions) error {
	for attempt := 1; ; attempt++ {
		err := migrateOnce(ctx, dsn, fsys, opts)
		if err == nil || !retryableMigrationError(err) || attempt >= opts.Attempts {
			if err != nil && retryableMigrationError(err) {
				return fmt.Errorf("migrate: gave up after %d attempts: %w", attempt, err)
			}
			return err
		}
		wait := chronos.BackoffDelay(chronos.BackoffExponential, 100*time.Millisecond, migrationMaxBackoff, attempt)
		opts.Log.Warn("migration waited too long for a lock; retrying", "attempt", attempt, "retry_in", wait.String(), "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("migrate: %w (after: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// retryableMigrationError tells a lock timeout or a deadlock (the
// migration lost to running transactions) from a real failure.
func retryableMigrationError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "55P03" || pgErr.Code == "40P01") // lock_not_available, deadlock_detected
}

// migrateOnce connects and applies what is left. Each migration commits
// by itself (tern), so a retry picks up at the one that failed.
func migrateOnce(ctx context.Context, dsn string, fsys fs.FS, opts MigrateOptions) error {
	cfg, err := connConfig(dsn)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	// A startup parameter, not a SET: tern runs RESET ALL after every
	// migration, which returns to the session's startup values.
	cfg.RuntimeParams["lock_timeout"] = strconv.FormatInt(opts.LockTimeout.Milliseconds(), 10)
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "chronos-migrate"
	}
	// A migration reports what it changed in users' data (e.g. jobs
	// renamed to make names unique) with RAISE NOTICE: log it.
	log := opts.Log
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		log.Info("migration notice", slog.String("message", n.Message))
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("migrate: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := waitMigrationLock(ctx, conn); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	m, err := migrate.NewMigrator(ctx, conn, versionTable)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := m.LoadMigrations(fsys); err != nil {
		return fmt.Errorf("migrate: load migrations: %w", err)
	}
	if err := onlineIndexMigrations(m.Migrations); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, mig := range m.Migrations {
		if noTransaction(mig.UpSQL) && !strings.Contains(mig.UpSQL, ternDisableTx) {
			mig.UpSQL = ternDisableTx + "\n" + mig.UpSQL
		}
	}
	m.OnStart = func(seq int32, name, direction, _ string) {
		log.Info("applying migration", "version", seq, "name", name, "direction", direction)
	}
	// tern's advisory lock is already ours (waitMigrationLock), so its
	// own request for it returns at once.
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// noTransaction tells whether a migration carries NoTransactionHeader.
func noTransaction(sql string) bool {
	for _, line := range strings.Split(sql, "\n") {
		if strings.TrimSpace(line) == NoTransactionHeader {
			return true
		}
	}
	return false
}

// ternLockNum is the key of tern's advisory lock (migrate.lockNum, not
// exported).
const ternLockNum = int64(9628173550095224)

// waitMigrationLock takes tern's advisory lock by polling, before tern
// asks for it: a session advisory lock stacks, so tern's own request then
// succeeds at once, and its unlock leaves this one held until the
// connection closes. Polling, because a session blocked in
// pg_advisory_lock runs a statement, and so holds a snapshot, the whole
// time it waits: CREATE INDEX CONCURRENTLY (migration 019) waits for
// every older snapshot, so a second instance waiting for the first one's
// migrations would deadlock with them.
func waitMigrationLock(ctx context.Context, conn *pgx.Conn) error {
	for {
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", ternLockNum).Scan(&ok); err != nil {
			return fmt.Errorf("migration lock: %w", err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("migration lock: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// SchemaHash identifies the embedded migrations (a hash of their names and
// contents). sqltest names its template database by it, so a changed
// migration gets a fresh template.
func SchemaHash() string {
	h := sha256.New()
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		panic(fmt.Sprintf("read embedded migrations: %v", err)) // cannot happen: embedded
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := migrationFiles.ReadFile("migrations/" + n)
		if err != nil {
			panic(fmt.Sprintf("read embedded migration %s: %v", n, err))
		}
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Migrations returns the embedded migrations, for tests that step through
// them one version at a time (tern's Migrator.MigrateTo).
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded: it is there
	}
	return sub
}
