package sql

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// RefreshQueueStatsSQLForTest lets the external tests EXPLAIN the query.
const RefreshQueueStatsSQLForTest = refreshQueueStatsSQL

// ExplainJobs returns the plan (EXPLAIN ANALYZE) of the query Jobs runs
// for f's first page, for BenchmarkJobSearch.
func ExplainJobs(ctx context.Context, db *DB, f JobFilter) ([]string, error) {
	args := []any{int64(0), pageLimit(f.Limit) + 1}
	q := "SELECT " + jobColumns + " FROM jobs WHERE id > $1"
	q += f.where(&args)
	q += " ORDER BY id LIMIT $2"
	rows, err := db.Pool.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS OFF) "+q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ExplainClaim returns the plan (EXPLAIN, not run) of the claim of n runs.
func ExplainClaim(ctx context.Context, db *DB, n int) ([]string, error) {
	rows, err := db.Pool.Query(ctx, "EXPLAIN (COSTS OFF) "+claimSQL, "explain", n, int64(60_000_000), int64(20_000))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
