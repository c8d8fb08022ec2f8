package sql_test

import (
	"context"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// StartMany starts every lease it is given that still holds, in one
// statement, with each attempt's row, and leaves out the one that does
// not; a second start of the same leases changes nothing.
func TestStartManyFencesEachLease(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *")
	insertPending(t, db, j.ID, 4)
	claimed, err := db.Claim(ctx, "w", 4, time.Minute)
	if err != nil || len(claimed) != 4 {
		t.Fatalf("claim: %d runs, %v", len(claimed), err)
	}
	leases := make([]sql.Lease, 4)
	for i, c := range claimed {
		leases[i] = c.Lease()
	}
	stale := leases[2]
	leases[2].Attempt++ // a lease the run no longer has
	// Out of id order: StartMany orders them itself.
	leases[0], leases[3] = leases[3], leases[0]

	for round := range 2 {
		started, err := db.StartMany(ctx, leases)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range leases {
			if want := l.RunID != stale.RunID; started[l.RunID] != want {
				t.Fatalf("round %d: run %d started %v, want %v", round, l.RunID, started[l.RunID], want)
			}
		}
	}
	for _, c := range claimed {
		r := mustRun(t, db, c.Run.ID)
		var attempts int
		if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM run_attempts WHERE run_id = $1 AND attempt = 1", c.Run.ID).Scan(&attempts); err != nil {
			t.Fatal(err)
		}
		if c.Run.ID == stale.RunID {
			if r.Status != chronos.StatusLeased || r.StartedAt != nil || attempts != 0 {
				t.Fatalf("the run of the stale lease was written: %s, started %v, %d attempt rows", r.Status, r.StartedAt, attempts)
			}
			continue
		}
		if r.Status != chronos.StatusRunning || r.StartedAt == nil || attempts != 1 {
			t.Fatalf("run %d: %s, started %v, %d attempt rows; want running, started, 1", c.Run.ID, r.Status, r.StartedAt, attempts)
		}
	}
	if started, err := db.StartMany(ctx, nil); err != nil || len(started) != 0 {
		t.Fatalf("no leases: %v, %v", started, err)
	}
}

// A reaper whose transaction began before a worker's start, and reached
// the run after the start had committed, still reclaims it (running, its
// lease expired): the attempt's end and the run's are not put before the
// start. It was, by the reaper's now(), when it was the end.
func TestReclaimNeverEndsAnAttemptBeforeItsStart(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *", func(j *chronos.Job) { j.MaxRetries = 0 })
	insertPending(t, db, j.ID, 1)
	claimed, err := db.Claim(ctx, "w", 1, time.Millisecond)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %d runs, %v", len(claimed), err)
	}
	c := claimed[0]
	time.Sleep(5 * time.Millisecond) // the lease expires

	reaper, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reaper.Rollback(context.Background()) //nolint:errcheck // after the test
	var began time.Time
	if err := reaper.QueryRow(ctx, "SELECT now()").Scan(&began); err != nil {
		t.Fatal(err)
	}
	// The start begins after the reaper's transaction (the database's
	// clock moves on) and commits before the reaper looks.
	time.Sleep(20 * time.Millisecond)
	if err := db.Start(ctx, c.Lease()); err != nil {
		t.Fatal(err)
	}
	var reclaimed, dead int
	if err := reaper.QueryRow(ctx, sql.ReclaimSQLForTest, 10, chronos.LeaseExpiredError).Scan(&reclaimed, &dead); err != nil {
		t.Fatal(err)
	}
	if err := reaper.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if dead != 1 {
		t.Fatalf("the reaper took %d runs back and made %d dead, want the run dead", reclaimed, dead)
	}
	var runStart, runEnd, attStart, attEnd time.Time
	if err := db.Pool.QueryRow(ctx, `
		SELECT r.started_at, r.finished_at, a.started_at, a.finished_at
		  FROM job_runs r JOIN run_attempts a ON a.run_id = r.id AND a.attempt = 1
		 WHERE r.id = $1`, c.Run.ID).Scan(&runStart, &runEnd, &attStart, &attEnd); err != nil {
		t.Fatal(err)
	}
	if !attStart.After(began) {
		t.Fatalf("the start (%s) did not begin after the reaper's transaction (%s): the test set nothing up", attStart, began)
	}
	if runEnd.Before(runStart) || attEnd.Before(attStart) {
		t.Fatalf("an end before its start: run %s → %s, attempt %s → %s", runStart, runEnd, attStart, attEnd)
	}
}
