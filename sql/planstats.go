package sql

import (
	"context"
	"errors"
	"fmt"
	"time"

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
// changed since its last analyze; a partition at most once per
// analyzeMinGap unless its row count changed by analyzeJump times or more.
//
// The gap is for a partition that fills steadily (at 5,000 runs/s a
// minute-wide partition grows by 300,000 rows): each fifth more was an
// analyze, eight to eleven a minute, each a sampling of 30,000 rows of a
// wide table (about 200 ms of a core) and a snapshot held meanwhile,
// about 8 % of Postgres's time at that rate. A burst into a partition
// that held few runs is a jump, analyzed as soon as it is seen, as
// before; the planner scales a table's stale row count by its current
// size in pages, so growth between analyzes costs a plan little.
const (
	analyzeMinChanges = 5000
	analyzeFraction   = 0.2
	analyzeMinGap     = 30 * time.Second
	analyzeJump       = 4
)

// changedTablesSQL lists the hot tables changed enough to be analyzed,
// by this database's cumulative statistics: a partition of job_runs or
// run_attempts whose live rows grew or shrank past the threshold ($1,
// $2) since its last analyze (a burst arrived, or a partition filled),
// and the schedules once that many of their rows changed (a herd moves
// every next_run_at). A partition is left alone within $3 seconds of its
// last analyze unless its live rows are $4 times what that analyze
// counted, or a $4th of it; the schedules, whose row count a herd does
// not change, are analyzed whenever that many rows changed, as before.
//
// A partition's updates do not count. Draining a burst updates each run
// twice (claimed, completed) without changing how many there are or
// where they sit in the claim's index; counting those analyzed a 20,000
// run partition every 5,000 updates, each analyze a few hundred
// milliseconds of a core and a snapshot that kept the claim's index
// walk from marking the runs it had already claimed as dead: the burst
// measured 0.6× River with it and 1.4× without.
const changedTablesSQL = `
	SELECT s.relid::regclass::text
	  FROM pg_stat_user_tables s
	  JOIN pg_class c ON c.oid = s.relid
	 WHERE CASE WHEN s.relid = 'job_schedules'::regclass
	            THEN s.n_mod_since_analyze
	            ELSE abs(s.n_live_tup - greatest(c.reltuples, 0)) END
	       > greatest($1::bigint, $2::float8 * greatest(c.reltuples, 0))
	   AND (s.relid = 'job_schedules'::regclass
	        OR s.relid IN (SELECT inhrelid FROM pg_inherits
	                        WHERE inhparent IN ('job_runs'::regclass, 'run_attempts'::regclass)))
	   AND (s.relid = 'job_schedules'::regclass
	        OR coalesce(greatest(s.last_analyze, s.last_autoanalyze) < now() - $3::float8 * interval '1 second', true)
	        OR s.n_live_tup > $4::float8 * greatest(c.reltuples, 0)
	        OR $4::float8 * s.n_live_tup < c.reltuples)
	 ORDER BY s.n_mod_since_analyze DESC`

// AnalyzeChangedTables analyzes each hot table that changed enough since
// its last analyze (a partition, unless its row count jumped, not within
// analyzeMinGap), and returns their names. A table dropped meanwhile
// (a pruned partition) is skipped.
func (db *DB) AnalyzeChangedTables(ctx context.Context) ([]string, error) {
	return db.analyzeChangedTables(ctx, analyzeMinGap)
}

// analyzeChangedTables is AnalyzeChangedTables with gap for analyzeMinGap.
func (db *DB) analyzeChangedTables(ctx context.Context, gap time.Duration) ([]string, error) {
	rows, err := db.Pool.Query(ctx, changedTablesSQL, int64(analyzeMinChanges), analyzeFraction,
		gap.Seconds(), float64(analyzeJump))
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
