package bench

import (
	"context"
	"fmt"
)

// relSize is the on-disk size of a table, summed over its partitions when
// it is partitioned, in bytes.
type relSize struct {
	heap    float64 // pg_relation_size: the table itself
	indexes float64 // pg_indexes_size
	total   float64 // pg_total_relation_size: heap, indexes and TOAST
}

// historySizes are the sizes of the run history.
type historySizes struct {
	runs, attempts relSize
	runRows        int64 // live rows in job_runs, by the statistics
}

func (h historySizes) total() float64 { return h.runs.total + h.attempts.total }

// historySizes measures job_runs and run_attempts: the table and, when it
// is partitioned, every partition (pg_partition_tree lists those, and
// nothing for a plain table), so the figures hold either way.
func (e *env) historySizes(ctx context.Context) (historySizes, error) {
	var h historySizes
	for _, r := range []struct {
		name string
		into *relSize
	}{{"job_runs", &h.runs}, {"run_attempts", &h.attempts}} {
		err := e.db.Pool.QueryRow(ctx, `
			SELECT coalesce(sum(pg_relation_size(relid)), 0)::float8,
			       coalesce(sum(pg_indexes_size(relid)), 0)::float8,
			       coalesce(sum(pg_total_relation_size(relid)), 0)::float8
			  FROM (SELECT relid FROM pg_partition_tree($1::regclass) UNION SELECT $1::regclass) rels`, r.name).Scan(&r.into.heap, &r.into.indexes, &r.into.total)
		if err != nil {
			return h, fmt.Errorf("size of %s: %w", r.name, err)
		}
	}
	// The statistics' count, not count(*): counting a million runs took
	// 270–440 ms under the sustained load, holding a lock on every
	// partition, at the end of every window, which is when the leader's
	// minutely partition upkeep runs too (both start with the load). The
	// upkeep's exclusive locks queued behind the count, and every claim
	// behind them: the bench's own reading raised the lag it was reading.
	if err := e.db.Pool.QueryRow(ctx, `
		SELECT coalesce(sum(n_live_tup), 0) FROM pg_stat_user_tables
		 WHERE relid IN (SELECT relid FROM pg_partition_tree('job_runs'::regclass) UNION SELECT 'job_runs'::regclass)`).Scan(&h.runRows); err != nil {
		return h, fmt.Errorf("rows of job_runs: %w", err)
	}
	return h, nil
}
