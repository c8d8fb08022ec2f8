package sql

import (
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

// MigrateTo applies the embedded migrations to dsn up to version only:
// for testing an upgrade from an older schema with data in it.
func MigrateTo(ctx context.Context, dsn string, version int32) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	m, err := migrate.NewMigrator(ctx, conn, versionTable)
	if err != nil {
		return err
	}
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	if err := m.LoadMigrations(sub); err != nil {
		return err
	}
	return m.MigrateTo(ctx, version)
}

var claimIndexRows = regexp.MustCompile(`(?s)Index Scan using job_runs_claimable_idx on job_runs r \(actual rows=(\d+) loops=1\)(?:\s+Index Cond:[^\n]*)?(?:\s+Filter:.*?Rows Removed by Filter: (\d+))?`)

// ClaimIndexReads runs a claim of n runs under EXPLAIN ANALYZE, rolled
// back, and returns how many entries of job_runs_claimable_idx it read
// (returned plus removed by the filter).
func ClaimIndexReads(ctx context.Context, db *DB, n int) (int, error) {
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // always rolled back
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "+claimSQL,
		"explain", n, int64(60_000_000), int64(0))
	if err != nil {
		return 0, err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	text := ""
	for _, l := range lines {
		text += l + "\n"
	}
	m := claimIndexRows.FindStringSubmatch(text)
	if m == nil {
		return 0, fmt.Errorf("no scan of job_runs_claimable_idx in the claim's plan:\n%s", text)
	}
	got, _ := strconv.Atoi(m[1])
	removed, _ := strconv.Atoi(m[2])
	return got + removed, nil
}
