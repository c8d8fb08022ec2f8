package sql

import (
	"context"
	"encoding/json"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
)

// MaxBulkJobs is the most jobs one bulk pause or resume changes.
const MaxBulkJobs = 1000

// SetEnabledByLabels pauses (enabled false) or resumes (true) up to
// MaxBulkJobs jobs that carry every label of sel and are not already so,
// in id order, each exactly as a PATCH of enabled would (runs created
// ahead dropped on pause, next_run_at from now on resume, an audit entry
// each). It returns the ids it changed and whether more remain.
func (db *DB) SetEnabledByLabels(ctx context.Context, sel map[string]string, enabled bool) ([]int64, bool, error) {
	if len(sel) == 0 {
		return nil, false, chronos.InvalidFields(map[string]string{"label": "at least one label=value is required"})
	}
	b, _ := json.Marshal(sel) // a map of strings always marshals
	rows, err := db.Pool.Query(ctx, `
		SELECT id FROM jobs WHERE labels @> $1::jsonb AND enabled <> $2 ORDER BY id LIMIT $3`,
		pgx.QueryExecModeExec, string(b), enabled, MaxBulkJobs+1)
	ids, err := collect(rows, err, "select jobs by label", scanOne[int64])
	if err != nil {
		return nil, false, err
	}
	more := len(ids) > MaxBulkJobs
	if more {
		ids = ids[:MaxBulkJobs]
	}
	u := &chronos.JobUpdate{Enabled: chronos.Some(enabled)}
	changed := make([]int64, 0, len(ids))
	for _, id := range ids {
		if _, err := db.UpdateJob(ctx, id, u); err != nil {
			if chronos.ErrorCode(err) == chronos.ENOTFOUND {
				continue // deleted in the meantime
			}
			return changed, false, err
		}
		changed = append(changed, id)
	}
	return changed, more, nil
}
