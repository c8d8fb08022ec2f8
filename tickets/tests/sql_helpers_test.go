package tests

// Helpers of the state-machine ticket tests (06, 10, 11, 12, 20), which
// drive package sql directly. Prefix: sm.

import (
	"context"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// smJob creates an enabled job on a schedule that will not fire during
// the test (unless the test moves next_run_at).
func smJob(t *testing.T, db *sql.DB, expr string, maxRetries int, overlap chronos.OverlapPolicy) *chronos.Job {
	t.Helper()
	j := &chronos.Job{Name: "ticket", CronExpr: &expr, TargetURL: "http://127.0.0.1:9/hook", Enabled: true,
		MaxRetries: maxRetries, Overlap: overlap}
	if err := db.CreateJob(context.Background(), j); err != nil {
		t.Fatalf("create job: %v", err)
	}
	return j
}

// smTriggered opens a state-machine ticket whose subject is one run: a
// job with maxRetries that never fires by itself (overlap allowed), and
// that job's run, triggered now.
func smTriggered(t *testing.T, maxRetries int) (*sql.DB, context.Context, *chronos.Run) {
	t.Helper()
	db, ctx := smOpen(t)
	j := smJob(t, db, "0 0 1 1 *", maxRetries, chronos.OverlapAllow)
	return db, ctx, smTrigger(t, db, j.ID)
}

// smMust is what a call of the data layer that must work returns; the
// failure names the call as format and args say.
func smMust[T any](t *testing.T, call func(context.Context) (T, error), format string, args ...any) T {
	t.Helper()
	v, err := call(context.Background())
	if err != nil {
		t.Fatalf(format+": %v", append(args, err)...)
	}
	return v
}

// smTrigger creates a run of the job now (as POST /v1/jobs/{id}/trigger).
func smTrigger(t *testing.T, db *sql.DB, jobID int64) *chronos.Run {
	t.Helper()
	return smMust(t, func(ctx context.Context) (*chronos.Run, error) { return db.Trigger(ctx, jobID) }, "trigger job %d", jobID)
}

func smRun(t *testing.T, db *sql.DB, id int64) *chronos.Run {
	t.Helper()
	return smMust(t, func(ctx context.Context) (*chronos.Run, error) { return db.Run(ctx, id) }, "get run %d", id)
}

func smClaim(t *testing.T, db *sql.DB, worker string, lease time.Duration) sql.Claimed {
	t.Helper()
	c, err := db.Claim(context.Background(), worker, 1, lease)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if len(c) != 1 {
		t.Fatalf("%s claimed %d runs, want 1", worker, len(c))
	}
	return c[0]
}

// smWaitExpired polls until the run's lease has passed by the database's
// clock (the one the reaper compares with).
func smWaitExpired(t *testing.T, db *sql.DB, runID int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var expired bool
		err := db.Pool.QueryRow(context.Background(),
			"SELECT leased_until < now() FROM job_runs WHERE id = $1", runID).Scan(&expired)
		if err != nil {
			t.Fatalf("lease of run %d: %v", runID, err)
		}
		if expired {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease of run %d never expired", runID)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
