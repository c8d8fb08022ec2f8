package sql

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Planner statistics of the hot tables, kept fresh by the leader.
//
// Autovacuum analyzes a table once its changes pass a threshold, but it
// looks only every autovacuum_naptime (a minute by default, a server
// setting that managed Postgres may not let an operator lower). A burst
// changes a partition of job_runs from a few runs to tens of thousands in
// a second; until the next analyze the planner believes the old counts,
// and the claim and the workers' writes were planned as scans of a few
// rows that in fact walked every run of the burst. The leader analyzes a
// table as soon as enough of it changed (AnalyzeChangedTables), which
// costs one sampling of it, a few tens of milliseconds, and takes a lock
// that does not block reads or writes.

// analyzeMinChanges and analyzeFraction: a table is analyzed when more
// than max(analyzeMinChanges, analyzeFraction × its rows) of its rows
// changed since its last analyze.
const (
	analyzeMinChanges = 5000
	analyzeFraction   = 0.2
)

// changedTablesSQL lists the hot tables (the partitions of job_runs and
// run_attempts, and the schedules) changed enough to be analyzed, by
// this database's cumulative statistics.
const changedTablesSQL = `
	SELECT s.relid::regclass::text
	  FROM pg_stat_user_tables s
	  JOIN pg_class c ON c.oid = s.relid
	 WHERE (s.relid IN (SELECT inhrelid FROM pg_inherits
	                     WHERE inhparent IN ('job_runs'::regclass, 'run_attempts'::regclass))
	        OR s.relid = 'job_schedules'::regclass)
	   AND s.n_mod_since_analyze > greatest($1::bigint, $2::float8 * greatest(c.reltuples, 0))
	 ORDER BY s.n_mod_since_analyze DESC`

// AnalyzeChangedTables analyzes each hot table that changed enough since
// its last analyze, and returns their names. A table dropped meanwhile
// (a pruned partition) is skipped.
func (db *DB) AnalyzeChangedTables(ctx context.Context) ([]string, error) {
	rows, err := db.Pool.Query(ctx, changedTablesSQL, int64(analyzeMinChanges), analyzeFraction)
	if err != nil {
		return nil, fmt.Errorf("list tables to analyze: %w", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list tables to analyze: %w", err)
	}
	var done []string
	for _, t := range tables {
		// The name comes from regclass's output: quoted where it must be.
		if _, err := db.Pool.Exec(ctx, "ANALYZE "+t); err != nil {
			if isUndefinedTable(err) {
				continue
			}
			return done, fmt.Errorf("analyze %s: %w", t, err)
		}
		done = append(done, t)
	}
	return done, nil
}

// isUndefinedTable tells whether err is Postgres's undefined_table.
func isUndefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}
