package tests

import (
	nethttp "net/http"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql"
)

// Ticket 06: with max_retries = N, a run is attempted exactly N+1 times:
// N failures send it back to pending, the next one dead-letters it, and
// every attempt has its row.
func TestTicket06ExactlyMaxRetriesRetries(t *testing.T) {
	const n = 3
	db, ctx, run := smTriggered(t, n)
	for attempt := 1; attempt <= n+1; attempt++ {
		c := smClaim(t, db, "worker", time.Minute)
		if c.Run.AttemptCount != attempt {
			t.Fatalf("claim %d: attempt_count %d", attempt, c.Run.AttemptCount)
		}
		if err := db.Start(ctx, c.Lease()); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		res, err := db.Complete(ctx, []sql.Outcome{{Lease: c.Lease(), StatusCode: 500, Error: "HTTP 500",
			StartedAt: now, FinishedAt: now}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("complete attempt %d: %+v %v", attempt, res, err)
		}
		want := chronos.StatusPending
		if attempt == n+1 {
			want = chronos.StatusDead
		}
		if res[0].Status != want {
			t.Fatalf("after failed attempt %d of max_retries=%d: %s, want %s", attempt, n, res[0].Status, want)
		}
	}
	if more, err := db.Claim(ctx, "worker", 10, time.Minute); err != nil || len(more) != 0 {
		t.Fatalf("a dead run was claimed again: %d %v", len(more), err)
	}
	r := smRun(t, db, run.ID)
	if r.Status != chronos.StatusDead || r.AttemptCount != n+1 || len(r.Attempts) != n+1 || r.FinishedAt == nil {
		t.Fatalf("dead run: status %s, attempt_count %d, %d attempt rows; want dead, %d, %d",
			r.Status, r.AttemptCount, len(r.Attempts), n+1, n+1)
	}
	for i, a := range r.Attempts {
		if a.Attempt != i+1 || a.StatusCode == nil || *a.StatusCode != 500 || a.FinishedAt == nil {
			t.Errorf("attempt row %d: %+v", i+1, a)
		}
	}
}

// Ticket 06 end to end: through the reactor, an always-500 target of a job
// with max_retries = 2 receives exactly 3 requests, then the run is dead.
func TestTicket06EndToEnd(t *testing.T) {
	dsn := parallelDSN(t)
	tg := rxNewTarget(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.WriteHeader(nethttp.StatusInternalServerError)
	})
	in := rxStart(t, dsn, "t06", rxOptions{Reactor: true, Listener: true})
	job := rxJob(t, in.DB, &chronos.Job{TargetURL: tg.URL, MaxRetries: 2,
		Backoff: chronos.BackoffExponential, BackoffBaseSeconds: 0.05, BackoffMaxSeconds: 0.2})
	run := in.Trigger(t, job.ID)
	r := reactortest.WaitStatus(t, in.DB, run.ID, chronos.StatusDead, 30*time.Second)
	// Anything more would come after the backoff cap; wait past it once.
	time.Sleep(500 * time.Millisecond)
	if n := tg.Hits.Load(); n != 3 {
		t.Errorf("the target received %d requests, want exactly 3 (1 + max_retries)", n)
	}
	if r.AttemptCount != 3 || len(r.Attempts) != 3 {
		t.Errorf("attempt_count %d with %d attempt rows, want 3 and 3", r.AttemptCount, len(r.Attempts))
	}
	if r.LastStatusCode == nil || *r.LastStatusCode != 500 {
		t.Errorf("last_status_code %v, want 500", r.LastStatusCode)
	}
}
