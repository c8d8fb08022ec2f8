package tests

import (
	"context"
	nethttp "net/http"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor"
	"github.com/chronoshq/chronos/sql"
)

// Ticket 10: HasActiveRun is true while a run is pending, leased or
// running and false once it is terminal; with overlap = skip a job never
// gets a second run while one is active, and each skipped occurrence is
// counted.
func TestTicket10OverlapSkip(t *testing.T) {
	db, ctx := smOpen(t)
	j := smJob(t, db, "* * * * * *", 0, chronos.OverlapSkip)
	active := func() bool {
		t.Helper()
		a, err := db.HasActiveRun(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	if active() {
		t.Fatal("a new job has an active run")
	}

	now := time.Now().UTC().Truncate(time.Second).Add(time.Hour)
	if _, err := db.Pool.Exec(ctx, "UPDATE job_schedules SET next_run_at = $2 WHERE job_id = $1", j.ID, now); err != nil {
		t.Fatal(err)
	}
	res, err := db.Materialize(ctx, now, 0, 10)
	if err != nil || res.Created != 1 || res.Skipped != 0 {
		t.Fatalf("first occurrence: %+v %v", res, err)
	}
	runID := res.Runs[0].ID
	if !active() {
		t.Fatal("pending run is not active")
	}
	// The run is not yet available (scheduled an hour ahead): make it so.
	if _, err := db.Pool.Exec(ctx, "UPDATE job_runs SET available_at = now() WHERE id = $1", runID); err != nil {
		t.Fatal(err)
	}
	c := smClaim(t, db, "slow-worker", time.Hour)
	if !active() {
		t.Fatal("leased run is not active")
	}
	if err := db.Start(ctx, c.Lease()); err != nil {
		t.Fatal(err)
	}
	if !active() {
		t.Fatal("running run is not active")
	}

	// Three more occurrences come due while it runs: all skipped, counted.
	skipped := 0
	for i := 1; i <= 3; i++ {
		res, err := db.Materialize(ctx, now.Add(time.Duration(i)*time.Second), 2*time.Second, 10)
		if err != nil {
			t.Fatal(err)
		}
		if res.Created != 0 {
			t.Fatalf("tick %d: a second run was materialized while one is active: %+v", i, res.Runs)
		}
		skipped += res.Skipped
	}
	if skipped != 3 {
		t.Fatalf("%d skipped occurrences counted, want 3", skipped)
	}
	var runs int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM job_runs WHERE job_id = $1", j.ID).Scan(&runs); err != nil || runs != 1 {
		t.Fatalf("%d runs exist, want 1 (%v)", runs, err)
	}

	// Done: no longer active, and the next occurrence materializes.
	out, err := db.Complete(ctx, []sql.Outcome{{Lease: c.Lease(), Success: true, StatusCode: 200}})
	if err != nil || out[0].Status != chronos.StatusSucceeded {
		t.Fatalf("complete: %+v %v", out, err)
	}
	if active() {
		t.Fatal("succeeded run is still active")
	}
	res, err = db.Materialize(ctx, now.Add(4*time.Second), 0, 10)
	if err != nil || res.Created != 1 {
		t.Fatalf("after the active run ended: %+v %v", res, err)
	}
	// A dead run is not active either.
	c = func() sql.Claimed {
		if _, err := db.Pool.Exec(ctx, "UPDATE job_runs SET available_at = now() WHERE id = $1", res.Runs[0].ID); err != nil {
			t.Fatal(err)
		}
		return smClaim(t, db, "w", time.Minute)
	}()
	if out, err := db.Complete(ctx, []sql.Outcome{{Lease: c.Lease(), StatusCode: 500}}); err != nil || out[0].Status != chronos.StatusDead {
		t.Fatalf("dead-letter: %+v %v", out, err)
	}
	if active() {
		t.Fatal("dead run is still active")
	}
}

// Ticket 10, queue_one: a per-second job whose target takes 2.5 s, two
// instances claiming. At most one run of the job is ever active (leased or
// running) and at most one waits behind it: the target never sees two of
// its requests in flight. The limit holds where runs are claimed, so it
// holds whichever instance claims.
func TestTicket10OverlapQueueOne(t *testing.T) {
	dsn := parallelDSN(t)
	tg := rxNewTarget(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		select {
		case <-time.After(2500 * time.Millisecond):
		case <-r.Context().Done():
		}
	})
	opts := rxOptions{Reactor: true, Listener: true, Config: reactor.Config{WorkerConcurrency: 4}}
	a := rxStart(t, dsn, "queue-one-a", opts)
	rxStart(t, dsn, "queue-one-b", opts)
	expr := "* * * * * *"
	j := rxJob(t, a.DB, &chronos.Job{CronExpr: &expr, TargetURL: tg.URL, Overlap: chronos.OverlapQueueOne})
	ctx := context.Background()
	maxActive, maxWaiting := 0, 0
	rxEventually(t, 30*time.Second, "three deliveries", func() bool {
		var active, waiting int
		if err := a.DB.Pool.QueryRow(ctx, `
			SELECT count(*) FILTER (WHERE status IN ('leased', 'running')),
			       count(*) FILTER (WHERE status = 'pending')
			  FROM job_runs WHERE job_id = $1`, j.ID).Scan(&active, &waiting); err != nil {
			t.Fatal(err)
		}
		maxActive, maxWaiting = max(maxActive, active), max(maxWaiting, waiting)
		return tg.Hits.Load() >= 3
	})
	if m := tg.MaxSeen.Load(); m > 1 {
		t.Errorf("%d requests of a queue_one job in flight at once, want 1", m)
	}
	if maxActive > 1 || maxWaiting > 1 {
		t.Errorf("saw %d runs active and %d waiting at once, want at most 1 and 1", maxActive, maxWaiting)
	}
}
