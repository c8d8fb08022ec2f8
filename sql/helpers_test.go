package sql_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

func ptr[T any](v T) *T { return &v }

// parallelDB marks t parallel and returns a fresh database of its own and
// the test's context: the opening of almost every test here.
func parallelDB(t *testing.T) (*sql.DB, context.Context) {
	t.Helper()
	t.Parallel()
	return sqltest.New(t), t.Context()
}

// parallelOpen is parallelDB for a test that also needs the database's
// DSN (for connections of its own): sql.Open as instance, closed at
// cleanup.
func parallelOpen(t *testing.T, instance string) (*sql.DB, context.Context, string) {
	t.Helper()
	ctx, dsn := parallelURL(t, sqltest.NewURL)
	return sqltest.Open(t, dsn, instance), ctx, dsn
}

// parallelURL marks t parallel and returns its context and the DSN of a
// fresh database of its own: newURL is sqltest.NewURL (migrated) or
// sqltest.NewEmptyURL (for the tests of migrations).
func parallelURL(t *testing.T, newURL func(testing.TB) string) (context.Context, string) {
	t.Helper()
	t.Parallel()
	return t.Context(), newURL(t)
}

// parallelJob is parallelDB with one job on expr created in it (cronJob),
// after set has changed it.
func parallelJob(t *testing.T, expr string, set ...func(*chronos.Job)) (*sql.DB, context.Context, *chronos.Job) {
	t.Helper()
	db, ctx := parallelDB(t)
	j := cronJob(expr)
	for _, f := range set {
		f(j)
	}
	return db, ctx, mustCreate(t, db, j)
}

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

// dbNow reads the database's clock (sqltest.Now).
func dbNow(t testing.TB, db *sql.DB) time.Time {
	t.Helper()
	return sqltest.Now(t, db)
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

// insertScheduled inserts the scheduled run of job's occurrence at, due
// at it, as the materializer would have.
func insertScheduled(t testing.TB, db *sql.DB, jobID int64, at time.Time) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), `INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		VALUES ($1, $2, 'schedule', $2)`, jobID, at); err != nil {
		t.Fatal(err)
	}
}

// mustRun reads a run with its attempts.
var mustRun = sqltest.Run

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

// explain returns the plan (EXPLAIN, not run) of stmt as query plans it:
// db.Pool.Query, or db.Pool.QueryIndexWalk with the claim's settings.
func explain(t testing.TB, query func(context.Context, string, ...any) (pgx.Rows, error), stmt string, args ...any) string {
	t.Helper()
	rows, err := query(t.Context(), "EXPLAIN "+stmt, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	if got := chronos.ErrorCode(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}
