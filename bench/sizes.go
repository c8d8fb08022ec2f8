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
	runRows        int64 // rows in job_runs, counted
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
	if err := e.db.Pool.QueryRow(ctx, "SELECT count(*) FROM job_runs").Scan(&h.runRows); err != nil {
		return h, fmt.Errorf("count job_runs: %w", err)
	}
	return h, nil
}
