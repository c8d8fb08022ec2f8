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
