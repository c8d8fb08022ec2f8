package sql

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
)

// MaxBulkJobs is the most jobs one bulk pause or resume changes.
const MaxBulkJobs = 1000

// bulkChunk is how many jobs of a bulk pause or resume share a
// transaction. One commit per job made a page of 1,000 take seconds on a
// loaded server (a caller's deadline cut it, again and again); one
// transaction for the page would make a page that cannot finish within a
// caller's deadline never make progress at all.
const bulkChunk = 100

// SetEnabledByLabels pauses (enabled false) or resumes (true) up to
// MaxBulkJobs jobs that carry every label of sel and are not already so,
// in id order, each exactly as a PATCH of enabled would (runs created
// ahead dropped on pause, next_run_at from now on resume, an audit entry
// each). It returns the ids it changed and whether more remain. The jobs
// change bulkChunk at a time, each chunk all or nothing: a call cut short
// returns the error with the chunks it committed.
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
	changed := make([]int64, 0, len(ids))
	for chunk := range slices.Chunk(ids, bulkChunk) {
		done, err := retryTx(ctx, func() ([]int64, error) { return db.setEnabled(ctx, chunk, enabled) })
		if err != nil {
			return changed, false, err
		}
		changed = append(changed, done...)
	}
	return changed, more, nil
}

// setEnabled is one attempt at one chunk of SetEnabledByLabels: the jobs
// ids in one transaction. It returns the ids it changed (a job deleted in
// the meantime is passed over).
func (db *DB) setEnabled(ctx context.Context, ids []int64, enabled bool) ([]int64, error) {
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("bulk enable: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	u := &chronos.JobUpdate{Enabled: chronos.Some(enabled)}
	changed := make([]int64, 0, len(ids))
	for _, id := range ids {
		if _, err := updateJobIn(ctx, tx, id, u); err != nil {
			if chronos.ErrorCode(err) == chronos.ENOTFOUND {
				continue // deleted in the meantime
			}
			return nil, fmt.Errorf("job %d: %w", id, err)
		}
		changed = append(changed, id)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, mapErr(err, "bulk enable")
	}
	return changed, nil
}
