package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/chronoshq/chronos"
)

// benchJob is a one-shot job whose run_at never comes during a bench: it
// exists to be triggered, or to own the runs the bench inserts.
func benchJob(name, url string) *chronos.Job {
	at := time.Now().AddDate(10, 0, 0)
	j := &chronos.Job{Name: name, TargetURL: url, RunAt: &at, Enabled: true}
	j.ApplyDefaults()
	j.MaxRetries = 0
	return j
}

// insertRuns inserts n pending manual runs of job, available at at, in one
// statement (one NOTIFY for all of them).
func (e *env) insertRuns(ctx context.Context, jobID int64, n int, at time.Time) error {
	_, err := e.db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		SELECT $1, $2, 'manual', $2 FROM generate_series(1, $3)`, jobID, at, n)
	if err != nil {
		return fmt.Errorf("insert %d runs: %w", n, err)
	}
	return nil
}

// cronJobs describes jobs for insertCronJobs.
type cronJobs struct {
	n    int
	name string    // each name is this plus a number unique in the table
	expr string    // the cron expression, evaluated in UTC
	next time.Time // next_run_at: the first occurrence
	// early, when set, is each job's materialize_at: when its first run
	// may be created ahead of the lookahead (sql.EarlyLookahead), as
	// CreateJob sets it for a sparse cron job.
	early  *time.Time
	url    string // the target URL
	perJob bool   // each job's target URL is url + "/" + its number, 1..n
}

// insertCronJobs adds the jobs in one INSERT ... SELECT, as fast as
// Postgres can. It skips the per-row NOTIFY trigger when it may
// (superuser: session_replication_role), since a job defined long before
// would not notify anybody either, and a hundred thousand notifications
// only cost time.
func (e *env) insertCronJobs(ctx context.Context, j cronJobs) (bypassed bool, err error) {
	if j.n <= 0 {
		return false, nil
	}
	tx, err := e.db.Pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if _, err := tx.Exec(ctx, "SAVEPOINT s"); err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err == nil {
		bypassed = true
	} else if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT s"); err != nil {
		return false, err
	}
	// The schedule rows in the same statement: the insert trigger that
	// would make them does not fire as a replica.
	_, err = tx.Exec(ctx, `
		WITH ins AS (
			INSERT INTO jobs (name, cron_expr, timezone, target_url, max_retries)
			SELECT $1::text || ((SELECT coalesce(max(id), 0) FROM jobs) + g), $2, 'UTC',
			       CASE WHEN $3 THEN $4::text || '/' || g ELSE $4::text END, 0
			  FROM generate_series(1, $6::int) g
			RETURNING id)
		INSERT INTO job_schedules (job_id, enabled, cron, next_run_at, materialize_at) SELECT id, true, true, $5, $7 FROM ins`,
		j.name, j.expr, j.perJob, j.url, j.next, j.n, j.early)
	if err != nil {
		return false, fmt.Errorf("insert %d jobs: %w", j.n, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("insert %d jobs: %w", j.n, err)
	}
	return bypassed, nil
}
