package sql_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

func ptr[T any](v T) *T { return &v }

// jobSeq numbers test jobs: names are unique.
var jobSeq atomic.Int64

// cronJob returns a valid job on expr (a one-shot when expr is "").
func cronJob(expr string) *chronos.Job {
	j := &chronos.Job{Name: fmt.Sprintf("job-%d", jobSeq.Add(1)), TargetURL: "http://127.0.0.1:9/hook", Enabled: true}
	if expr != "" {
		j.CronExpr = ptr(expr)
	}
	j.ApplyDefaults()
	return j
}

func mustCreate(t testing.TB, db *sql.DB, j *chronos.Job) *chronos.Job {
	t.Helper()
	if err := db.CreateJob(context.Background(), j); err != nil {
		t.Fatalf("create job: %v", err)
	}
	return j
}

// jobWithPartitions is a job that fires at 03:00 only, and run partitions
// an hour wide for the next four hours (EnsureRunPartitions), as the
// leader's upkeep keeps them: for tests that insert many runs of their own.
func jobWithPartitions(t testing.TB, db *sql.DB) *chronos.Job {
	t.Helper()
	j := mustCreate(t, db, cronJob("0 3 * * *"))
	if _, err := db.EnsureRunPartitions(context.Background(), time.Hour, 4*time.Hour); err != nil {
		t.Fatal(err)
	}
	return j
}

// setNextRunAt moves a job's schedule by hand (as an outage would).
func setNextRunAt(t testing.TB, db *sql.DB, id int64, at *time.Time) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), "UPDATE job_schedules SET next_run_at = $2 WHERE job_id = $1", id, at); err != nil {
		t.Fatal(err)
	}
}

// insertPending bulk-inserts n manual pending runs of job, available now.
func insertPending(t testing.TB, db *sql.DB, jobID int64, n int) {
	t.Helper()
	_, err := db.Pool.Exec(context.Background(), `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		SELECT $1, now(), 'manual', now() - interval '1 second' FROM generate_series(1, $2)`, jobID, n)
	if err != nil {
		t.Fatal(err)
	}
}

func mustRun(t testing.TB, db *sql.DB, id int64) *chronos.Run {
	t.Helper()
	r, err := db.Run(context.Background(), id)
	if err != nil {
		t.Fatalf("get run %d: %v", id, err)
	}
	return r
}

func claimOne(t testing.TB, db *sql.DB, worker string, lease time.Duration) sql.Claimed {
	t.Helper()
	c, err := db.Claim(context.Background(), worker, 1, lease)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if len(c) != 1 {
		t.Fatalf("claimed %d runs, want 1", len(c))
	}
	return c[0]
}

func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := chronos.ErrorCode(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}
