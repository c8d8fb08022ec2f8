package sql

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
)

// MaxBulkJobs is the most jobs one bulk pause or resume changes.
const MaxBulkJobs = 1000

// bulkChunk is how many jobs of a bulk pause or resume change in one
// transaction, a few statements for all of them (setEnabled). One
// transaction per job, each a PATCH's half-dozen statements, made a page
// of 1,000 take seconds on a quiet server and minutes on a loaded one,
// long enough for callers' deadlines to cut it again and again.
const bulkChunk = 100

// SetEnabledByLabels pauses (enabled false) or resumes (true) up to
// MaxBulkJobs jobs that carry every label of sel and are not already so,
// in id order, each exactly as a PATCH of enabled would (runs created
// ahead dropped on pause, next_run_at from now on resume, an audit entry
// each). It returns the ids it changed and whether more remain. The jobs
// change in chunks (bulkChunk), each all or nothing: a call cut short
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
// ids in one transaction, each changed as UpdateJob would change its
// enabled alone, in a few statements for the whole chunk. It returns the
// ids it changed: a job deleted in the meantime, or set so by another
// writer, is passed over.
//
// What an update of enabled alone does (see UpdateJob): the job's row
// and its schedule row locked, in that order (here every job's, then
// every schedule's, in id order: the order a PATCH of any of them takes);
// on a pause, its runs created ahead deleted; next_run_at from
// nextAfterUpdate; enabled set in both rows; one audit entry. Nothing
// else changes (overlap, limit, calendars and search rows stay).
func (db *DB) setEnabled(ctx context.Context, ids []int64, enabled bool) ([]int64, error) {
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("bulk enable: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit

	var now time.Time
	rows, err := tx.Query(ctx, "SELECT "+jobColumns+", now() FROM jobs WHERE id = ANY($1) AND enabled <> $2 ORDER BY id FOR NO KEY UPDATE",
		ids, enabled)
	jobs, err := collect(rows, err, "bulk enable: lock the jobs", func(r scanner) (*chronos.Job, error) {
		var s jobScan
		err := r.Scan(append(s.dest(), &now)...)
		return s.job(), err
	})
	if err != nil || len(jobs) == 0 {
		return nil, err
	}
	locked := make([]int64, len(jobs))
	for i, j := range jobs {
		locked[i] = j.ID
	}
	rawNext := make(map[int64]*time.Time, len(jobs))
	rows, err = tx.Query(ctx, "SELECT job_id, next_run_at FROM job_schedules WHERE job_id = ANY($1) ORDER BY job_id FOR UPDATE", locked)
	if err != nil {
		return nil, mapErr(err, "bulk enable: lock the schedules")
	}
	var (
		id   int64
		next *time.Time
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &next}, func() error { rawNext[id] = next; return nil }); err != nil {
		return nil, mapErr(err, "bulk enable: lock the schedules")
	}
	if err := attachCalendars(ctx, tx, jobs, nil); err != nil {
		return nil, err
	}

	dropped := map[int64][]time.Time{}
	if !enabled {
		// A pause deletes every run created ahead (as dropRunsAhead does,
		// one job at a time).
		rows, err := tx.Query(ctx, "DELETE FROM job_runs WHERE job_id = ANY($1) AND "+runsAheadSQL+" RETURNING job_id, scheduled_at", locked)
		if err != nil {
			return nil, mapErr(err, "bulk enable: drop runs created ahead")
		}
		var at time.Time
		if _, err := pgx.ForEachRow(rows, []any{&id, &at}, func() error {
			dropped[id] = append(dropped[id], at)
			return nil
		}); err != nil {
			return nil, mapErr(err, "bulk enable: drop runs created ahead")
		}
	}

	var (
		nexts   = make([]*time.Time, len(jobs))
		crons   = make([]bool, len(jobs))
		changes = make([]string, len(jobs))
		action  chronos.AuditAction
	)
	for i, j := range jobs {
		old := *j
		j.Enabled = enabled
		n, err := nextAfterUpdate(&old, j, scheduleChangeOf(&old, j), rawNext[j.ID], dropped[j.ID], now)
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", j.ID, err)
		}
		nexts[i], crons[i] = n, j.CronExpr != nil
		j.NextRunAt = n
		c := chronos.JobChanges(&old, j)
		changes[i], action = changesArg(c), auditAction(c)
	}
	if _, err := tx.Exec(ctx, `
		WITH sched AS (
			INSERT INTO job_schedules (job_id, enabled, cron, next_run_at)
			SELECT id, $2, cron, next FROM unnest($1::bigint[], $3::boolean[], $4::timestamptz[]) AS t(id, cron, next)
			ON CONFLICT (job_id) DO UPDATE
			   SET enabled = excluded.enabled, cron = excluded.cron, next_run_at = excluded.next_run_at
		)
		UPDATE jobs SET enabled = $2, updated_at = now() WHERE id = ANY($1)`,
		locked, enabled, crons, nexts); err != nil {
		return nil, mapErr(err, "bulk enable")
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO job_audit (job_id, action, actor, changes)
		SELECT id, $2, $3, c::jsonb FROM unnest($1::bigint[], $4::text[]) AS t(id, c)`,
		locked, string(action), chronos.ActorFrom(ctx), changes); err != nil {
		return nil, mapErr(err, "bulk enable: record audit")
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, mapErr(err, "bulk enable")
	}
	return locked, nil
}
