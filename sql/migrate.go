package sql

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// versionTable is tern's bookkeeping table.
const versionTable = "public.chronos_schema_version"

// Migrate applies the embedded migrations to dsn. It is safe when several
// instances start at once (an advisory lock serialises them).
//
// tern takes a session advisory lock (per database) around creating its
// version table and around applying migrations, and reads the current
// version under that lock, so the second of two concurrent instances waits
// and then finds nothing left to do.
func Migrate(ctx context.Context, dsn string) error {
	cfg, err := connConfig(dsn)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	// A migration reports what it changed in users' data (e.g. jobs
	// renamed to make names unique) with RAISE NOTICE: log it.
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		slog.Info("migration notice", slog.String("message", n.Message))
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
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := m.LoadMigrations(sub); err != nil {
		return fmt.Errorf("migrate: load migrations: %w", err)
	}
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// ternLockNum is the key of tern's advisory lock (migrate.lockNum, not
// exported).
const ternLockNum = int64(9628173550095224)

// waitMigrationLock takes tern's advisory lock by polling, before tern
// asks for it: a session advisory lock stacks, so tern's own request then
// succeeds at once, and its unlock leaves this one held until the
// connection closes. Polling, because a session blocked in
// pg_advisory_lock runs a statement, and so holds a snapshot, the whole
// time it waits: CREATE INDEX CONCURRENTLY (migration 014) waits for
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
