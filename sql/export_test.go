package sql

import (
	"context"
)

// RefreshQueueStatsSQLForTest lets the external tests EXPLAIN the query.
const RefreshQueueStatsSQLForTest = refreshQueueStatsSQL

// ExplainJobs returns the plans (EXPLAIN ANALYZE) of the queries Jobs
// runs for f's first page, each after its text, for BenchmarkJobSearch.
func ExplainJobs(ctx context.Context, db *DB, f JobFilter) ([]string, error) {
	p := &plans{}
	if _, _, err := db.Jobs(context.WithValue(ctx, planKey{}, p), f); err != nil {
		return nil, err
	}
	return p.lines, nil
}
