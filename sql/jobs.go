package sql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
)

// CreateJob stores a new, validated job, computing next_run_at, and fills
// j's id, next_run_at and timestamps. Constraint violations come back as
// EINVALID.
//
// It applies the defaults (ApplyDefaults) and validates first, so a caller
// that forgot gets a 400, never a constraint's 500. next_run_at is computed
// even for a disabled job, so re-enabling it has a schedule to start from.
func (db *DB) CreateJob(ctx context.Context, j *chronos.Job) error {
	j.ApplyDefaults()
	if err := j.Validate(); err != nil {
		return err
	}
	if err := j.ValidateSchedule(time.Now()); err != nil {
		return err
	}
	if j.RunAt != nil {
		t := j.RunAt.UTC()
		j.RunAt = &t
	}
	next, err := j.NextRun(time.Now())
	if err != nil {
		return chronos.InvalidFields(map[string]string{"cron_expr": err.Error()})
	}
	err = db.Pool.QueryRow(ctx, `
		INSERT INTO jobs (name, cron_expr, run_at, timezone, target_url, method, headers, payload,
		                  timeout_seconds, max_retries, backoff, backoff_base_seconds, backoff_max_seconds,
		                  overlap, enabled, next_run_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
		RETURNING id, next_run_at, created_at, updated_at`,
		jobArgs(j, next)...,
	).Scan(&j.ID, &j.NextRunAt, &j.CreatedAt, &j.UpdatedAt)
	if err != nil {
		return mapErr(err, "create job")
	}
	utcPtr(&j.NextRunAt)
	j.CreatedAt, j.UpdatedAt = j.CreatedAt.UTC(), j.UpdatedAt.UTC()
	return nil
}

// jobArgs are the user-settable columns of j, then next_run_at, in the
// order of CreateJob's INSERT and UpdateJob's UPDATE.
func jobArgs(j *chronos.Job, next *time.Time) []any {
	return []any{j.Name, j.CronExpr, j.RunAt, j.Timezone, j.TargetURL, j.Method, j.Headers,
		payloadArg(j.Payload), j.TimeoutSeconds, j.MaxRetries, string(j.Backoff), j.BackoffBaseSeconds,
		j.BackoffMaxSeconds, string(j.Overlap), j.Enabled, next}
}

// payloadArg sends a payload byte for byte (the column is json, not jsonb),
// and an absent one as NULL.
func payloadArg(p json.RawMessage) any {
	if len(p) == 0 {
		return nil
	}
	return string(p)
}

// Job returns one job, or ENOTFOUND.
func (db *DB) Job(ctx context.Context, id int64) (*chronos.Job, error) {
	j, err := scanJob(db.Pool.QueryRow(ctx, "SELECT "+jobColumns+" FROM jobs WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobNotFound(id)
	}
	if err != nil {
		return nil, mapErr(err, "get job")
	}
	return j, nil
}

func jobNotFound(id int64) error { return chronos.Errorf(chronos.ENOTFOUND, "job %d not found", id) }

// JobFilter selects a page of jobs.
type JobFilter struct {
	Enabled *bool  // nil: all
	Cursor  string // opaque, from a previous page; "" starts at the beginning
	Limit   int    // default 50, capped at 500
}

// Jobs returns a page of jobs in id order and the cursor of the next page
// ("" on the last). A malformed cursor is EINVALID.
func (db *DB) Jobs(ctx context.Context, f JobFilter) ([]*chronos.Job, string, error) {
	after, err := decodeCursor(f.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := pageLimit(f.Limit)
	q := "SELECT " + jobColumns + " FROM jobs WHERE id > $1"
	args := []any{after, limit + 1}
	if f.Enabled != nil {
		q += " AND enabled = $3"
		args = append(args, *f.Enabled)
	}
	q += " ORDER BY id LIMIT $2"
	rows, err := db.Pool.Query(ctx, q, args...)
	if err != nil {
		return nil, "", mapErr(err, "list jobs")
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*chronos.Job, error) { return scanJob(r) })
	if err != nil {
		return nil, "", mapErr(err, "list jobs")
	}
	// One row more than the page says whether there is a next one, so the
	// last page never hands out a cursor to an empty page.
	next := ""
	if len(jobs) > limit {
		jobs = jobs[:limit]
		next = encodeCursor(jobs[limit-1].ID)
	}
	return jobs, next, nil
}

// UpdateJob applies a partial update in one transaction (absent fields
// untouched, validation of the result, next_run_at recomputed when the
// schedule changed) and returns the job as stored. ENOTFOUND, EINVALID.
//
// When the schedule changes or the job is disabled, the runs the
// materializer pre-created for the old schedule (pending, never attempted,
// due in the future) are deleted: a paused job does not fire a lookahead's
// worth of occurrences afterwards.
func (db *DB) UpdateJob(ctx context.Context, id int64, u *chronos.JobUpdate) (*chronos.Job, error) {
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("update job: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit

	j, err := scanJob(tx.QueryRow(ctx, "SELECT "+jobColumns+" FROM jobs WHERE id = $1 FOR UPDATE", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobNotFound(id)
	}
	if err != nil {
		return nil, mapErr(err, "update job")
	}
	wasEnabled, oldRunAt, oldNext, oldCron := j.Enabled, j.RunAt, j.NextRunAt, j.CronExpr
	rescheduled, err := u.Apply(j)
	if err != nil {
		return nil, err
	}
	if err := j.Validate(); err != nil {
		return nil, err
	}
	if chronos.CronExprChanged(oldCron, j.CronExpr) {
		if err := j.ValidateSchedule(time.Now()); err != nil {
			return nil, err
		}
	}
	next := j.NextRunAt
	if rescheduled {
		next, err = j.NextRun(time.Now())
		if err != nil {
			return nil, chronos.InvalidFields(map[string]string{"cron_expr": err.Error()})
		}
		// A one-shot already materialized stays done when only re-enabled
		// (its run_at untouched): it must not fire a second time.
		if j.RunAt != nil && oldNext == nil && oldRunAt != nil && oldRunAt.Equal(*j.RunAt) {
			next = nil
		}
	}
	args := append([]any{id}, jobArgs(j, next)...)
	var stored jobScan
	err = tx.QueryRow(ctx, `
		UPDATE jobs SET name = $2, cron_expr = $3, run_at = $4, timezone = $5, target_url = $6, method = $7,
		       headers = $8, payload = $9, timeout_seconds = $10, max_retries = $11, backoff = $12,
		       backoff_base_seconds = $13, backoff_max_seconds = $14, overlap = $15, enabled = $16,
		       next_run_at = $17, updated_at = now()
		 WHERE id = $1
		RETURNING `+jobColumns, args...).Scan(stored.dest()...)
	if err != nil {
		return nil, mapErr(err, "update job")
	}
	j = stored.job()
	if rescheduled || (wasEnabled && !j.Enabled) {
		_, err = tx.Exec(ctx, `
			DELETE FROM job_runs
			 WHERE job_id = $1 AND status = 'pending' AND trigger = 'schedule'
			   AND attempt_count = 0 AND available_at > now()`, id)
		if err != nil {
			return nil, mapErr(err, "update job: drop pre-created runs")
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, mapErr(err, "update job")
	}
	return j, nil
}

// DeleteJob deletes a job and its runs. ENOTFOUND.
func (db *DB) DeleteJob(ctx context.Context, id int64) error {
	tag, err := db.Pool.Exec(ctx, "DELETE FROM jobs WHERE id = $1", id)
	if err != nil {
		return mapErr(err, "delete job")
	}
	if tag.RowsAffected() == 0 {
		return jobNotFound(id)
	}
	return nil
}
