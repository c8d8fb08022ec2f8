package bench

import (
	"context"
	"fmt"
)

// relSize is the on-disk size of a table, summed over its partitions when
// it is partitioned, in bytes, and its live rows.
type relSize struct {
	heap    float64 // pg_relation_size: the table itself
	indexes float64 // pg_indexes_size
	total   float64 // pg_total_relation_size: heap, indexes and TOAST
	rows    int64   // live rows, by the statistics
}

// historySizes are the sizes of the run history.
type historySizes struct {
	runs, attempts relSize
}

func (h historySizes) total() float64 { return h.runs.total + h.attempts.total }

// historySizes measures job_runs and run_attempts: the table and, when it
// is partitioned, every partition (pg_partition_tree lists those, and
// nothing for a plain table), so the figures hold either way.
//
// The rows are the statistics' count, not count(*): counting a million
// runs took 270–440 ms under the sustained load, holding a lock on every
// partition, at the end of every window, which is when the leader's
// minutely partition upkeep runs too (both start with the load). The
// upkeep's exclusive locks queued behind the count, and every claim behind
// them: the bench's own reading raised the lag it was reading.
func (e *env) historySizes(ctx context.Context) (historySizes, error) {
	var h historySizes
	for _, r := range []struct {
		name string
		into *relSize
	}{{"job_runs", &h.runs}, {"run_attempts", &h.attempts}} {
		err := e.db.Pool.QueryRow(ctx, `
			SELECT coalesce(sum(pg_relation_size(rels.relid)), 0)::float8,
			       coalesce(sum(pg_indexes_size(rels.relid)), 0)::float8,
			       coalesce(sum(pg_total_relation_size(rels.relid)), 0)::float8,
			       coalesce(sum(s.n_live_tup), 0)::bigint
			  FROM (SELECT relid FROM pg_partition_tree($1::regclass) UNION SELECT $1::regclass) rels
			  LEFT JOIN pg_stat_user_tables s ON s.relid = rels.relid`, r.name).
			Scan(&r.into.heap, &r.into.indexes, &r.into.total, &r.into.rows)
		if err != nil {
			return h, fmt.Errorf("size of %s: %w", r.name, err)
		}
	}
	return h, nil
}
