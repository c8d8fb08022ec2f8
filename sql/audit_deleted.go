package sql

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos"
)

// maxDeletedJobs bounds one answer of DeletedJobs: a name reused and
// deleted more often than this within AUDIT_RETENTION is unusual.
const maxDeletedJobs = 100

// DeletedJobs returns the deleted jobs that were named name, newest
// deletion first (at most 100), as their delete entries in the audit
// history remember them; none once those entries are pruned.
func (db *DB) DeletedJobs(ctx context.Context, name string) ([]chronos.DeletedJob, error) {
	rows, err := db.Pool.Query(ctx, `
		SELECT job_id, changes -> 'name' ->> 'before', at, actor FROM job_audit
		WHERE action = 'delete' AND changes -> 'name' ->> 'before' = $1
		ORDER BY id DESC LIMIT $2`, name, maxDeletedJobs)
	if err != nil {
		return nil, mapErr(err, "deleted jobs")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (chronos.DeletedJob, error) {
		var d chronos.DeletedJob
		err := r.Scan(&d.ID, &d.Name, &d.DeletedAt, &d.DeletedBy)
		d.DeletedAt = d.DeletedAt.UTC()
		return d, err
	})
	if err != nil {
		return nil, mapErr(err, "deleted jobs")
	}
	if out == nil {
		out = []chronos.DeletedJob{}
	}
	return out, nil
}
