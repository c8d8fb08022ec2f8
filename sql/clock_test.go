package sql_test

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// TestCompleteOnDatabaseClock: an attempt's and a run's started_at and
// finished_at are the database's instants, whatever the worker's wall
// clock says (issue 22, item 7). Workers two hours ahead and two hours
// behind complete attempts on every path (first attempt inline, attempt
// recorded by Start, a retryable failure, the last failure): every stored
// instant lies between two readings of the database's clock taken around
// the attempt, and no attempt or run finishes before it started. Only the
// worker's measured duration is kept.
func TestCompleteOnDatabaseClock(t *testing.T) {
	db, ctx := parallelDB(t)
	dbNow := func() time.Time {
		t.Helper()
		var n time.Time
		if err := db.Pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// skewed is an outcome from a worker whose clock is off by skew, for
	// an attempt that took 30 ms.
	skewed := func(c sql.Claimed, skew time.Duration, success bool) sql.Outcome {
		end := time.Now().Add(skew)
		o := sql.Outcome{Lease: c.Lease(), Success: success, StartedAt: end.Add(-30 * time.Millisecond), FinishedAt: end}
		if success {
			o.StatusCode = 200
		} else {
			o.StatusCode, o.Error = 503, "HTTP 503"
		}
		return o
	}
	within := func(what string, at time.Time, lo, hi time.Time) {
		t.Helper()
		if at.Before(lo) || at.After(hi) {
			t.Errorf("%s = %s, not on the database's clock (between %s and %s)", what, at, lo, hi)
		}
	}
	check := func(name string, runID int64, lo, hi time.Time) {
		t.Helper()
		r := mustRun(t, db, runID)
		if r.StartedAt == nil {
			t.Fatalf("%s: run without started_at: %+v", name, r)
		}
		within(name+": run started_at", *r.StartedAt, lo, hi)
		if r.FinishedAt != nil {
			within(name+": run finished_at", *r.FinishedAt, lo, hi)
			if r.FinishedAt.Before(*r.StartedAt) {
				t.Errorf("%s: run finished at %s, before it started at %s", name, r.FinishedAt, r.StartedAt)
			}
		}
		if len(r.Attempts) == 0 {
			t.Fatalf("%s: no attempt recorded", name)
		}
		for _, a := range r.Attempts {
			within(name+": attempt started_at", a.StartedAt, lo, hi)
			if a.FinishedAt == nil {
				t.Errorf("%s: attempt %d not finished", name, a.Attempt)
				continue
			}
			within(name+": attempt finished_at", *a.FinishedAt, lo, hi)
			if a.FinishedAt.Before(a.StartedAt) {
				t.Errorf("%s: attempt %d finished at %s, before it started at %s", name, a.Attempt, a.FinishedAt, a.StartedAt)
			}
			if a.DurationMS == nil || *a.DurationMS != 30 {
				t.Errorf("%s: attempt %d duration %v ms, want the worker's 30", name, a.Attempt, a.DurationMS)
			}
		}
	}
	complete := func(o sql.Outcome, want chronos.RunStatus) {
		t.Helper()
		res, err := db.Complete(ctx, []sql.Outcome{o})
		if err != nil || res[0].Err != nil || res[0].Status != want {
			t.Fatalf("complete: %+v %v, want %s", res, err, want)
		}
	}
	for _, skew := range []time.Duration{2 * time.Hour, -2 * time.Hour} {
		name := "skew " + skew.String()
		// The first attempt succeeds before Start: recorded inline.
		j := mustCreate(t, db, cronJob("0 0 1 1 *"))
		insertPending(t, db, j.ID, 1)
		lo := dbNow()
		c := claimOne(t, db, "w", time.Minute)
		time.Sleep(30 * time.Millisecond) // the attempt takes its 30 ms: the start may not come out before the claim
		complete(skewed(c, skew, true), chronos.StatusSucceeded)
		check(name+", inline first attempt", c.Run.ID, lo, dbNow())

		// Start records the attempt, then it succeeds.
		j = mustCreate(t, db, cronJob("0 0 1 1 *"))
		insertPending(t, db, j.ID, 1)
		lo = dbNow()
		c = claimOne(t, db, "w", time.Minute)
		if err := db.Start(ctx, c.Lease()); err != nil {
			t.Fatal(err)
		}
		o := skewed(c, skew, true)
		o.StartRecorded = true
		complete(o, chronos.StatusSucceeded)
		check(name+", started attempt", c.Run.ID, lo, dbNow())

		// A failure with a retry left, then the last failure: dead.
		j = cronJob("0 0 1 1 *")
		j.MaxRetries = 1
		mustCreate(t, db, j)
		insertPending(t, db, j.ID, 1)
		lo = dbNow()
		c = claimOne(t, db, "w", time.Minute)
		time.Sleep(30 * time.Millisecond)
		complete(skewed(c, skew, false), chronos.StatusPending)
		if _, err := db.Pool.Exec(ctx, "UPDATE job_runs SET available_at = now() WHERE id = $1", c.Run.ID); err != nil {
			t.Fatal(err)
		}
		c = claimOne(t, db, "w", time.Minute)
		if err := db.Start(ctx, c.Lease()); err != nil {
			t.Fatal(err)
		}
		o = skewed(c, skew, false)
		o.StartRecorded = true
		complete(o, chronos.StatusDead)
		check(name+", dead after a retry", c.Run.ID, lo, dbNow())
	}
}
